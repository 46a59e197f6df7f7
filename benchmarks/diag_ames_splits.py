"""Issue 44: is cbudget's Ames RMSE gap to LightGBM (+2.3 % native on bench_categorical's
split, results/categorical_merged.md) systematic? The same settings (100 rounds, 31
leaves, learning rate 0.1, min_data_in_leaf 20, L2 1.0, 2 threads) on 8 splits of
``datasets.load_ames(seed=0..7)``, with native categorical splits and with ordinal codes;
test RMSE of log price. From benchmarks/:
CBUDGET_DATA_DIR=... PYTHONPATH=.. python diag_ames_splits.py
"""
import datasets
import lightgbm as lgb
import numpy as np

import cbudget

COMMON = {"learning_rate": 0.1, "num_leaves": 31, "min_data_in_leaf": 20}
LIGHTGBM = dict(COMMON, objective="regression", lambda_l2=1.0, min_sum_hessian_in_leaf=1e-3,
                max_bin=255, num_threads=2, seed=0, verbose=-1)
CBUDGET = dict(COMMON, objective="reg:squarederror", grow_policy="lossguide", reg_lambda=1.0,
               min_child_weight=1e-3, n_jobs=2)
ROUNDS, SEEDS = 100, range(8)


def rmse(prediction, y):
    return float(np.sqrt(np.mean((prediction - y) ** 2)))


def ordinal(frame, columns):
    """``frame`` with its category ``columns`` as their pandas codes (floats)."""
    frame = frame.copy()
    for column in columns:
        frame[column] = frame[column].cat.codes.astype(float)
    return frame


def main():
    gaps = {"native": [], "ordinal": []}
    for seed in SEEDS:
        d = datasets.load_ames(seed=seed)
        cells = []
        for way in gaps:
            X, Xt = d["X_train"], d["X_test"]
            if way == "ordinal":
                X, Xt = ordinal(X, d["categorical"]), ordinal(Xt, d["categorical"])
            light = rmse(lgb.train(LIGHTGBM, lgb.Dataset(X, d["y_train"]), ROUNDS)
                         .predict(Xt), d["y_test"])
            ours = rmse(cbudget.train(CBUDGET, cbudget.Dataset(X, d["y_train"]), ROUNDS,
                                      verbose_eval=False).predict(Xt), d["y_test"])
            gaps[way].append(100 * (ours / light - 1))
            cells.append(f"{way}: LightGBM {light:.4f}, cbudget {ours:.4f} "
                         f"({gaps[way][-1]:+.1f} %)")
        print(f"split {seed}: " + "; ".join(cells), flush=True)
    for way, values in gaps.items():
        v = np.array(values)
        print(f"{way}: cbudget's RMSE over LightGBM's, mean {v.mean():+.2f} % +- "
              f"{v.std(ddof=1) / np.sqrt(v.size):.2f} (SE over {v.size} splits)")


if __name__ == "__main__":
    main()
