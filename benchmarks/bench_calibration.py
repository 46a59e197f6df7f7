"""Exit calibration time (``Booster.calibrate_exits``, ``best_exit_within_budget``) of
two source trees side by side: each round runs one worker process per tree, in turn,
``--rounds`` times (interleaved, so load on the machine hits both alike); a worker
trains the models (not timed), times each workload ``--repeat`` times and reports its
median and a digest of the rules it made (thresholds and output maps, bit for bit).
Reported: per workload and tree, the median over rounds of the workers' medians, the
spread (min-max over rounds) and whether the two trees made identical rules.

Workloads: README's early-exit example (binary, 98 iterations, a check after each;
``calibrate_exits(dvalid, 0.01)`` and ``best_exit_within_budget(dvalid, 22.0)``, 32
models of 8 epsilons each), and the same with a probability tolerance of 0.05, a
3-class model (its temperature maps, :func:`cbudget.exits.fit_scale`) and a regression
model, each calibrated at the 8 epsilons of ``max_metric_drop``.

    PYTHONPATH=.. python bench_calibration.py --old /path/to/old/tree --new .. \
        [--rounds 5] [--repeat 3]

A tree is a directory holding the ``cbudget`` package, with its extensions built
(``python setup.py build_ext --inplace``).
"""
import argparse
import hashlib
import json
import os
import subprocess
import sys
import time

import numpy as np

import cbudget

WORKLOADS = ("binary_calibrate", "binary_best_exit", "binary_tolerance_by_metric",
             "multiclass_by_metric", "regression_by_metric")


def readme_data(kind):
    """README's example data (binary), or the same inputs with 3 classes / a real target."""
    rng = np.random.default_rng(0)
    X = rng.standard_normal((5000, 4))
    if kind == "multiclass":
        y = np.digitize(X[:, 0] + 0.3 * X[:, 3], [-0.5, 0.5]).astype(float)
    elif kind == "regression":
        y = X[:, 0] + 0.3 * X[:, 3] + 0.1 * rng.standard_normal(5000)
    else:
        y = (X[:, 0] + 0.3 * X[:, 3] > 0).astype(float)
    return X, y


def train(kind):
    X, y = readme_data(kind)
    costs = {"f0": 1.0, "f1": 1.0, "f2": 5.0, "f3": 20.0}
    dtrain = cbudget.Dataset(X[:3000], y[:3000], feature_costs=costs)
    dvalid = cbudget.Dataset(X[3000:4000], y[3000:4000], reference=dtrain)
    params = {"objective": {"binary": "binary:logistic", "multiclass": "multi:softprob",
                            "regression": "reg:squarederror"}[kind], "num_leaves": 15}
    if kind == "multiclass":
        params["num_class"] = 3
    booster = cbudget.train(params, dtrain, 200, evals=[(dvalid, "valid")],
                            early_stopping_rounds=20, verbose_eval=False)
    return booster, dvalid


def digest(rules):
    return hashlib.sha256(json.dumps(rules.to_dict(), sort_keys=True).encode()).hexdigest()[:16]


def worker(repeat):
    """Time every workload in this process (the ``cbudget`` on PYTHONPATH); print JSON."""
    models = {kind: train(kind) for kind in ("binary", "multiclass", "regression")}
    runs = {
        "binary_calibrate": lambda: models["binary"][0].copy().calibrate_exits(
            models["binary"][1], 0.01),
        "binary_best_exit": lambda: models["binary"][0].best_exit_within_budget(
            models["binary"][1], budget=22.0, metric="error").model.exit_rules,
        "binary_tolerance_by_metric": lambda: models["binary"][0].copy().calibrate_exits(
            models["binary"][1], tolerance=0.05, max_metric_drop=0.01, metric="logloss"),
        "multiclass_by_metric": lambda: models["multiclass"][0].copy().calibrate_exits(
            models["multiclass"][1], max_metric_drop=0.01),
        "regression_by_metric": lambda: models["regression"][0].copy().calibrate_exits(
            models["regression"][1], tolerance=0.1, max_metric_drop=0.01),
    }
    out = {}
    for name in WORKLOADS:
        spent = []
        for _ in range(repeat):
            start = time.perf_counter()
            rules = runs[name]()
            spent.append(time.perf_counter() - start)
        out[name] = {"seconds": float(np.median(spent)), "digest": digest(rules)}
    print(json.dumps(out))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--old", required=True, help="the tree before (holds cbudget/)")
    parser.add_argument("--new", required=True, help="the tree after")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args.repeat)
        return
    trees = {"old": os.path.abspath(args.old), "new": os.path.abspath(args.new)}
    results = {label: [] for label in trees}
    for r in range(args.rounds):
        for label, tree in trees.items():
            env = {**os.environ, "PYTHONPATH": tree}
            done = subprocess.run([sys.executable, os.path.abspath(__file__), "--worker",
                                   "--old", "-", "--new", "-", "--repeat", str(args.repeat)],
                                  env=env, cwd="/", capture_output=True, text=True, check=True)
            results[label].append(json.loads(done.stdout.strip().splitlines()[-1]))
        print(f"round {r + 1} of {args.rounds} done", file=sys.stderr)
    print(f"old: {trees['old']}\nnew: {trees['new']}\n")
    print("| workload | old s: median (min-max) | new s: median (min-max) | speed-up | "
          "same rules |")
    print("|---|---:|---:|---:|:---:|")
    for name in WORKLOADS:
        cells, medians = [], {}
        for label in trees:
            s = [run[name]["seconds"] for run in results[label]]
            medians[label] = float(np.median(s))
            cells.append(f"{medians[label]:.3f} ({min(s):.3f}-{max(s):.3f})")
        same = {run[name]["digest"] for label in trees for run in results[label]}
        print(f"| {name} | {cells[0]} | {cells[1]} | "
              f"{medians['old'] / medians['new']:.2f}x | {'yes' if len(same) == 1 else 'NO'} |")


if __name__ == "__main__":
    main()
