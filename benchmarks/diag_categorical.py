"""Categorical splits against LightGBM's (issue 44, the engine part): training time
(Dataset construction included) and held-out AUC of cbudget's gbdt and LightGBM with
``categorical_feature``, the same rounds, leaves and categorical parameters (their
defaults), interleaved repeats; and, with ``--numeric``, the same on the codes taken as
numbers (what categorical splits buy).

A synthetic binary set: ``n_numeric`` normal columns and one categorical column per level
count (codes 0..k-1, 3% missing); the logit adds a random effect per level, an
interaction of two categorical columns' random level sets, and a linear numeric part.

    python diag_categorical.py [--rows 200000] [--rounds 100] [--repeats 3] [--threads 2]
"""
import argparse
import json

import harness as h
import numpy as np

import cbudget


def synthetic(n_rows, n_numeric, levels, seed=0):
    rng = np.random.default_rng(seed)
    numeric = rng.normal(size=(n_rows, n_numeric))
    codes = np.column_stack([rng.integers(0, k, n_rows) for k in levels]).astype(float)
    logit = numeric[:, :3] @ np.array([0.8, -0.5, 0.3])[:min(3, n_numeric)]
    for j, k in enumerate(levels):
        logit += 0.7 * rng.normal(size=k)[codes[:, j].astype(int)]
    sets = [rng.permutation(k)[:k // 2] for k in levels[-2:]]
    logit += 1.2 * (np.isin(codes[:, -1], sets[0]) ^ np.isin(codes[:, -2], sets[1]))
    y = (rng.random(n_rows) < 1 / (1 + np.exp(-(logit - logit.mean())))).astype(float)
    codes[rng.random(codes.shape) < 0.03] = np.nan
    X = np.column_stack([numeric, codes])
    return X, y, list(range(n_numeric, n_numeric + len(levels)))


def auc(y, score):
    order = np.argsort(score, kind="stable")
    ranks = np.empty(len(score))
    ranks[order] = np.arange(1, len(score) + 1)
    pos = y == 1
    return float((ranks[pos].sum() - pos.sum() * (pos.sum() + 1) / 2)
                 / (pos.sum() * (~pos).sum()))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--numeric-columns", type=int, default=10)
    parser.add_argument("--levels", default="5,20,50,100,200")
    parser.add_argument("--rounds", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--numeric", action="store_true",
                        help="also train both on the codes as numbers")
    args = parser.parse_args()
    import lightgbm as lgb

    levels = [int(k) for k in args.levels.split(",")]
    X, y, cat = synthetic(args.rows + 50_000, args.numeric_columns, levels)
    X_train, y_train, X_test, y_test = X[:args.rows], y[:args.rows], X[args.rows:], y[args.rows:]
    cb_params = h.library_params("cbudget", 2, args.threads)
    lgb_params = h.library_params("lightgbm", 2, args.threads)

    def run_cbudget(categorical):
        def run():
            d = cbudget.Dataset(X_train, y_train, max_bin=255,
                                categorical_feature=cat if categorical else None)
            model = cbudget.train(cb_params, d, args.rounds, verbose_eval=False)
            return auc(y_test, model.predict(X_test))
        return run

    def run_lightgbm(categorical):
        def run():
            d = lgb.Dataset(X_train, y_train, params=lgb_params,
                            categorical_feature=cat if categorical else [],
                            free_raw_data=True)
            model = lgb.train(lgb_params, d, num_boost_round=args.rounds)
            return auc(y_test, model.predict(X_test))
        return run

    ways = {"cbudget categorical": run_cbudget(True),
            "lightgbm categorical": run_lightgbm(True)}
    if args.numeric:
        ways.update({"cbudget codes as numbers": run_cbudget(False),
                     "lightgbm codes as numbers": run_lightgbm(False)})
    results = h.interleaved(args.repeats, **ways)
    rows = {name: {**h.wall_spread(times), "test_auc": score}
            for name, (times, score) in results.items()}
    print(json.dumps({"rows": args.rows, "rounds": args.rounds, "threads": args.threads,
                      "levels": levels, "lightgbm": lgb.__version__, "results": rows},
                     indent=1))
    base = rows["lightgbm categorical"]["median_s"]
    for name, r in rows.items():
        print(f"{name:28s} median {r['median_s']:7.2f} s  ({r['median_s'] / base:4.2f}x "
              f"LightGBM)  AUC {r['test_auc']:.4f}")


if __name__ == "__main__":
    main()
