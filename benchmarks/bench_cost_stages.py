"""Cost-staged boosting (``cost_stages``) against the manual continuation of issue 43.

On a member of bench_cascade's family (default ``bin_s35_r10``: 4,000 / 2,000 / 20,000
rows), the issue's recipe: CEGB at trade-off ``--lambda1`` (1e-3) for ``--rounds1`` (150)
rounds, then ``--lambda2`` (3e-4) for ``--rounds2`` (150) more, trained

* in stages: ``cbudget.train({..., "cost_stages": [[150, 1e-3], [150, 3e-4]]}, ...)``;
* by hand: ``train(cost_tradeoff=1e-3, 150)``, then ``train(cost_tradeoff=3e-4, 150,
  xgb_model=first)``.

Reports test accuracy and mean cost of both (all trees; exits calibrated on validation
at each epsilon, checked at the stage boundary (``checks="stages"``) and every 10
iterations), the largest difference of their test margins, and the training time of
each, ``--repeats`` times interleaved (min / median / max).

    PYTHONPATH=$PWD python benchmarks/bench_cost_stages.py [--dataset bin_s35_r10]
        [--threads 1] [--repeats 3] [--out benchmarks/results/cost_stages.md]
"""
import argparse
import platform
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_cascade as bc  # noqa: E402

import cbudget  # noqa: E402

EPSILONS = (0.0, 0.005, 0.01, 0.02, 0.05)


def train_staged(base, dtrain, stages):
    return cbudget.train(dict(base, cost_stages=stages), dtrain,
                         sum(rounds for rounds, _ in stages), verbose_eval=False)


def train_manual(base, dtrain, stages):
    model = None
    for rounds, tradeoff in stages:
        model = cbudget.train(dict(base, cost_tradeoff=tradeoff), dtrain, rounds,
                              xgb_model=model, verbose_eval=False)
    return model


def points(model, dvalid, data, label):
    """(label, exits, epsilon, test accuracy, mean test cost, validation ditto)."""
    rows = []
    copy = model.copy()
    for checks, every in ((None, None), ("stages", None), (None, 10)):
        for eps in (EPSILONS if (checks or every) else (None,)):
            if checks or every:
                copy.calibrate_exits(dvalid, eps, **({"checks": checks} if checks
                                                     else {"every": every}))
            else:
                copy.exit_rules = None
            p = bc.model_point(copy, data, label)
            how = "all trees" if eps is None else (
                "exits at the stage end" if checks else f"exits every {every}")
            rows.append((label, how, eps, p["accuracy"], p["mean_cost"],
                         p["valid_accuracy"], p["valid_mean_cost"]))
    return rows


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dataset", default="bin_s35_r10", choices=bc.DATASETS)
    parser.add_argument("--lambda1", type=float, default=1e-3)
    parser.add_argument("--lambda2", type=float, default=3e-4)
    parser.add_argument("--rounds1", type=int, default=150)
    parser.add_argument("--rounds2", type=int, default=150)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", default=None)
    args = parser.parse_args(argv)
    rows = {p: bc.FULL[f"{p}_rows"] for p in bc.ROWS}
    data = bc.load_member(args.dataset, rows)
    dtrain, dvalid = bc.cbudget_sets(data)
    base = dict(bc.cegb_base({"threads": args.threads}, data), verbosity=0)
    stages = [[args.rounds1, args.lambda1], [args.rounds2, args.lambda2]]
    lam_max = cbudget.lambda_max(dict(base, cost_tradeoff=args.lambda1), dtrain)

    times = {"staged": [], "manual": []}
    models = {}
    for _ in range(args.repeats):      # interleaved: the machine's load hits both alike
        for name, fit in (("staged", train_staged), ("manual", train_manual)):
            start = time.perf_counter()
            models[name] = fit(base, dtrain, stages)
            times[name].append(time.perf_counter() - start)
    staged, manual = models["staged"], models["manual"]
    X = data["X_test"]
    margin_gap = float(np.max(np.abs(staged.predict(X, output_margin=True)
                                     - manual.predict(X, output_margin=True))))
    same_trees = all(a[f].tobytes() == b[f].tobytes() for a, b in zip(staged.trees, manual.trees)
                     for f in a.dtype.names)     # field by field: not the struct padding
    table = points(staged, dvalid, data, "staged") + points(manual, dvalid, data, "manual")

    given = list(argv if argv is not None else sys.argv[1:])
    if "--out" in given:      # where the text goes is not how it was made
        del given[given.index("--out"):given.index("--out") + 2]
    command = "PYTHONPATH=$PWD python benchmarks/bench_cost_stages.py " + " ".join(given)
    lines = [
        "# Cost-staged boosting against the manual continuation (issue 43)", "",
        f"Command: `{command.strip()}` (from the repository root)", "",
        f"Data: bench_cascade member `{args.dataset}` ({rows['train']:,} / "
        f"{rows['valid']:,} / {rows['test']:,} rows; lambda_max {lam_max:.4g}). CEGB "
        f"(harness parameters, {args.threads} thread(s)) at {args.lambda1:g} for "
        f"{args.rounds1} rounds then {args.lambda2:g} for {args.rounds2}: "
        f"`cost_stages={stages}` against `train(cost_tradeoff={args.lambda1:g})` continued "
        f"with `xgb_model=` at {args.lambda2:g}. Exits calibrated on the validation rows.",
        "",
        f"Staged and manual models: trees bit-identical: {same_trees}; largest |test "
        f"margin difference| {margin_gap:.3g}; stages {list(staged.cost_stages)}.", "",
        "| model | prediction | epsilon | test accuracy | test mean cost | valid accuracy "
        "| valid mean cost |", "|---|---|---|---|---|---|---|"]
    for label, how, eps, acc, cost, vacc, vcost in table:
        lines.append(f"| {label} | {how} | {'' if eps is None else eps} | {acc:.4f} | "
                     f"{cost:.1f} | {vacc:.4f} | {vcost:.1f} |")
    lines += ["", f"Training time, {args.repeats} repeats interleaved (seconds: min / "
              "median / max; wall clock, on a shared 2-core machine):", "",
              "| training | min | median | max |", "|---|---|---|---|"]
    for name, values in times.items():
        v = np.sort(values)
        lines.append(f"| {name} | {v[0]:.2f} | {np.median(v):.2f} | {v[-1]:.2f} |")
    lines += ["", f"Python {platform.python_version()}, numpy {np.__version__}, cbudget "
              f"{cbudget.__version__}."]
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        Path(args.out).write_text(text)


if __name__ == "__main__":
    main()
