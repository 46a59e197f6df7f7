"""How the budget search scores exit copies (issue 43): time and honesty of
``cost_path(exit_scoring="cross_fitted")`` against ``"in_sample"``.

On one member of ``bench_cascade``'s family (its train / valid / test splits, smaller by
default), the cost path with cascades (the estimators' budget search: ``n_points``
trade-offs, 4 cascades, each cascade's 11 default exit epsilons) is run in both modes,
interleaved, ``--repeat`` times; the wall time of each is reported (median, min-max).
For the exit copies, the validation accuracy each mode records is compared with the
copy's test accuracy: the in-sample one is calibrated and scored on the same rows.
Then, on one cascade of the path, ``Booster.exit_rules_for`` (one pass for all
epsilons) against one ``calibrate_exits`` per epsilon, interleaved.

    PYTHONPATH=.. python bench_exit_scoring.py [--member bin_s35_r10] [--repeat 3]
        [--rows 4000,2000,20000] [--points 8] [--rounds 100]
"""
import argparse
import time

import bench_cascade as b
import numpy as np

import cbudget
from cbudget.cost_path import CASCADE_EPSILONS

MODES = ("in_sample", "cross_fitted")


def spans(times):
    return f"{np.median(times):.2f} s ({min(times):.2f}-{max(times):.2f})"


def accuracy(model, X, y):
    proba = model.predict(X)
    guess = (proba > 0.5).astype(int) if proba.ndim == 1 else proba.argmax(axis=1)
    return float(np.mean(guess == y))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--member", default="bin_s35_r10")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--rows", default="4000,2000,20000", help="train,valid,test rows")
    parser.add_argument("--points", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=100)
    args = parser.parse_args()
    rows = dict(zip(b.ROWS, (int(r) for r in args.rows.split(",")), strict=True))
    data = b.load_member(args.member, rows)
    dtrain, dvalid = b.cbudget_sets(data)
    params = b.cegb_base({"threads": 2}, data)
    X, y = data["X_test"], data["y_test"]
    print(f"member {args.member}, rows {rows}, {args.points} points + 4 cascades, "
          f"{args.rounds} rounds")
    times = {mode: [] for mode in MODES}
    paths = {}
    for _ in range(args.repeat):
        for mode in MODES:
            start = time.perf_counter()
            paths[mode] = cbudget.cost_path(params, dtrain, dvalid, n_points=args.points,
                                            num_boost_round=args.rounds, cascades=True,
                                            exit_scoring=mode)
            times[mode].append(time.perf_counter() - start)
    print("\n| exit_scoring | cost_path wall time, median (min-max) |\n|---|---:|")
    for mode in MODES:
        print(f"| {mode} | {spans(times[mode])} |")
    # the same models in both modes: only the exit copies' scores differ
    gaps = {mode: [] for mode in MODES}
    for i, model in enumerate(paths["cross_fitted"].models):
        if np.isnan(paths["cross_fitted"].epsilons[i]):
            continue
        test = accuracy(model, X, y)
        for mode in MODES:
            gaps[mode].append((1.0 - paths[mode].scores[i]) - test)
    print(f"\nValidation accuracy recorded minus test accuracy, over the "
          f"{len(gaps['in_sample'])} exit copies (positive: optimistic):\n"
          "\n| exit_scoring | mean | median | max |\n|---|---:|---:|---:|")
    for mode in MODES:
        g = np.array(gaps[mode])
        print(f"| {mode} | {g.mean():+.4f} | {np.median(g):+.4f} | {g.max():+.4f} |")
    path = paths["cross_fitted"]
    cascade = next(m for m, s, e in zip(path.models, path.stages, path.epsilons, strict=True)
                   if s is not None and np.isnan(e))
    every = max(1, args.rounds // 20)
    batch, single = [], []
    for _ in range(args.repeat):
        start = time.perf_counter()
        cascade.exit_rules_for(dvalid, CASCADE_EPSILONS, every=every)
        batch.append(time.perf_counter() - start)
        start = time.perf_counter()
        for epsilon in CASCADE_EPSILONS:
            cascade.copy().calibrate_exits(dvalid, epsilon, every=every)
        single.append(time.perf_counter() - start)
    print(f"\nThe exit rules of one cascade at the {len(CASCADE_EPSILONS)} default epsilons "
          f"(every {every}): exit_rules_for {spans(batch)}, one calibrate_exits per "
          f"epsilon {spans(single)}")


if __name__ == "__main__":
    main()
