"""Held exits (issue 43): prediction time and the accuracy / cost of a cascade's exits
with and without ``hold``, on one member of the cascade family.

A two-stage cegb cascade (``cost_stages``, by default the one the budget search chose
on bin_s20_r100 in results/cascade.md: 50 rounds at 2.11e-4, 150 at 4.79e-5) on
``bench_cascade``'s member; exits calibrated on its validation split
every 10 iterations at each epsilon, once with any input free to exit and once held by
the features stage 2 adds (``cost_path.dear_stage_features``). Prediction time: the
test split predicted with each set of rules, interleaved, ``--repeat`` times (median,
min-max). The held rules evaluate more trees for the inputs they hold (by design); the
machinery's own overhead is measured with rules held by a feature no tree reads (the
same exits, checked equal).

    PYTHONPATH=.. python bench_exit_hold.py [--member bin_s20_r100] [--repeat 7]
        [--stages 50:2.11e-4,150:4.79e-5]
"""
import argparse
import dataclasses
import time

import bench_cascade as b
import numpy as np

import cbudget
from cbudget.cost_path import dear_stage_features


def interleaved_predict_times(models, X, repeat):
    """Per model, the seconds of ``repeat`` predictions of ``X``, the models interleaved."""
    times = [[] for _ in models]
    for _ in range(repeat):
        for spent, m in zip(times, models):
            start = time.perf_counter()
            m.predict(X)
            spent.append(time.perf_counter() - start)
    return times


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--member", default="bin_s20_r100")
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--stages", default="50:2.11e-4,150:4.79e-5",
                        help="rounds:cost_tradeoff of each stage, comma-separated")
    args = parser.parse_args()
    data = b.load_member(args.member, {part: b.FULL[f"{part}_rows"] for part in b.ROWS})
    dtrain, dvalid = b.cbudget_sets(data)
    params = b.cegb_base({"threads": 2}, data)
    stages = [[int(r), float(t)] for r, t in (s.split(":") for s in args.stages.split(","))]
    model = cbudget.train({**params, "cost_stages": stages}, dtrain,
                          sum(r for r, _ in stages), verbose_eval=False)
    hold = dear_stage_features(model, stages[0][0]).tolist()
    X, y = data["X_test"], data["y_test"]
    print(f"member {args.member}; hold = features {hold}; full model: accuracy "
          f"{np.mean((model.predict(X) > 0.5) == y):.4f} at {model.predict_cost(X).mean():.1f}")
    print("| epsilon | free: test acc @ cost | held: test acc @ cost | free predict s | "
          "held predict s |")
    print("|---:|---:|---:|---:|---:|")
    for eps in (0.0, 0.01, 0.02, 0.03, 0.05):
        free, held = model.copy(), model.copy()
        free.calibrate_exits(dvalid, eps, every=10)
        held.calibrate_exits(dvalid, eps, every=10, hold=hold)
        times = interleaved_predict_times((free, held), X, args.repeat)
        cells = [f"{np.mean((m.predict(X) > 0.5) == y):.4f} @ {m.predict_cost(X).mean():.1f}"
                 for m in (free, held)]
        spans = [f"{np.median(t):.4f} ({min(t):.4f}-{max(t):.4f})" for t in times]
        print(f"| {eps} | {cells[0]} | {cells[1]} | {spans[0]} | {spans[1]} |")
    unused = sorted(set(range(X.shape[1])) - set(model.used_features().tolist()))
    if unused:
        free = model.copy()
        free.calibrate_exits(dvalid, 0.02, every=10)
        noop = model.copy()
        noop.exit_rules = dataclasses.replace(free.exit_rules, hold=np.array(unused[:1]))
        assert np.array_equal(noop.predict(X), free.predict(X))
        times = interleaved_predict_times((free, noop), X, args.repeat)
        print(f"\nOverhead (epsilon 0.02, held by unused feature {unused[0]}): free "
              + ", held by nothing read ".join(
                  f"{np.median(t):.4f} s ({min(t):.4f}-{max(t):.4f})" for t in times))


if __name__ == "__main__":
    main()
