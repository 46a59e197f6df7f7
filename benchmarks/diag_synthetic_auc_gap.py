"""Issue 43, synthetic costly set, AUC front (results/fronts_synthetic_costly.md): is the
-0.53 point shortfall at LightGBM's 0.8874 @ 2.55 a gap of the path's grid or a limit of
CEGB? Trains CEGB (bench_fronts' data, parameters and 200 rounds) at 9 trade-offs spread
geometrically between the path's two models around that cost (lambda 0.0412 at 2.38 and
0.0346 at 2.64, 10-point path) and reports each one's validation and test AUC and mean
cost.  From benchmarks/:
CBUDGET_DATA_DIR=... PYTHONPATH=.. python diag_synthetic_auc_gap.py [--output FILE]
"""
import argparse

import bench_cascade as bc
import datasets
import harness as h
import numpy as np

import cbudget

LOW, HIGH, N = 0.0346, 0.0412, 9
LIGHTGBM = "LightGBM's CEGB at that cost: test 0.8874 @ 2.55, validation 0.8849 @ 2.55"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--output", default=None)
    args = parser.parse_args()
    data = h.load_dataset("synthetic_costly", n_rows=200_000, keep_valid=True)
    dtrain, dvalid = bc.cbudget_sets(data)
    params = bc.cegb_base({"threads": 1}, data)
    lines = ["| cost_tradeoff | validation AUC @ cost | test AUC @ cost |", "|---:|---:|---:|"]
    for lam in np.geomspace(LOW, HIGH, N):
        model = cbudget.train(dict(params, cost_tradeoff=float(lam)), dtrain, 200,
                              verbose_eval=False)
        cells = []
        for part in ("valid", "test"):
            X, y = data[f"X_{part}"], data[f"y_{part}"]
            cells.append(f"{datasets.auc(y, model.predict(X).reshape(-1)):.4f} @ "
                         f"{model.predict_cost(X).mean():.2f}")
        lines.append(f"| {lam:.5f} | " + " | ".join(cells) + " |")
        print(lines[-1], flush=True)
    text = "\n".join([LIGHTGBM, "", *lines]) + "\n"
    if args.output:
        with open(args.output, "w") as f:
            f.write(text)
    print(text)


if __name__ == "__main__":
    main()
