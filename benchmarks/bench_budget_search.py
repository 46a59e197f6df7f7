"""The estimators' budget search on bench_cascade's member bin_s35_r10 (issue 43, "Budget
search for users"): ``CEGBClassifier(cost_tradeoff="path", cost_budget=B)`` (without and
with exit epsilons, selected on the default logloss and on the error) for B = 60, 100,
150 (and 108, 1.2x the ideal policy's mean cost), and the default ``CEGBClassifier()``,
each with its test accuracy, mean test cost and fit time, next to the ideal policy. Runs
on whichever cbudget is on PYTHONPATH (the "before" and "after" columns of
results/budget_search.md are two runs).

    PYTHONPATH=.. python bench_budget_search.py [--json out.json]
    python bench_budget_search.py --render before.json after.json
"""
import argparse
import json
import time
import warnings

import bench_cascade as bc
import numpy as np

MEMBER = "bin_s35_r10"
BUDGETS = (60.0, 100.0, 108.0, 150.0)    # the three, and 1.2x the ideal's 90
EPSILONS = [0.0, 0.005, 0.01, 0.02, 0.05]      # the exit epsilons given by hand
ROUNDS = 200          # bench_cascade's full run


def run(name, make, data):
    """Fit ``make()`` on the training split (the validation split as eval_set unless
    ``name`` says holdout) and measure it on the test split."""
    estimator = make()
    fit = {} if "holdout" in name else {"eval_set": [(data["X_valid"], data["y_valid"])]}
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        estimator.fit(data["X_train"], data["y_train"], **fit)
    seconds = time.perf_counter() - start
    X, y = data["X_test"], data["y_test"]
    model = estimator.model_
    rules = getattr(model, "exit_rules", None)
    return {"name": name, "accuracy": float(estimator.score(X, y)),
            "mean_cost": float(estimator.predict_cost(X).mean()),
            "constant": bool(np.unique(estimator.predict_proba(X)[:, 1]).size == 1),
            "cost_tradeoff": getattr(estimator, "cost_tradeoff_", None),
            "stages": getattr(estimator, "cost_stages_", None),
            "epsilon": None if rules is None else rules.calibration.get("epsilon"),
            "fit_s": seconds}


def describe(r):
    """(test accuracy @ cost, the model chosen, fit seconds) of a row."""
    if r["stages"]:
        (r1, l1), (r2, l2) = r["stages"]
        what = f"cascade {r1}@{l1:.3g} + {r2}@{l2:.3g}"
    elif r["cost_tradeoff"] is not None:
        what = f"lambda {r['cost_tradeoff']:.3g}"
    else:
        what = "constant" if r["constant"] else "-"
    if r["epsilon"] is not None:
        what += f", exits eps {r['epsilon']:g}"
    return f"{r['accuracy']:.4f} @ {r['mean_cost']:.1f}", what, f"{r['fit_s']:.1f}"


def render(before_json, after_json):
    """The before / after table of two runs' JSON files (markdown)."""
    with open(before_json) as f:
        before = {r["name"]: r for r in json.load(f)["runs"]}
    with open(after_json) as f:
        after = json.load(f)
    lines = [f"| estimator on {after['member']} | before: test acc @ cost | before: model "
             "chosen | before: fit s | after: test acc @ cost | after: model chosen | "
             "after: fit s |", "|---|---:|---|---:|---:|---|---:|"]
    for r in after["runs"]:
        cells = describe(before[r["name"]]) + describe(r)
        lines.append(f"| {r['name']} | " + " | ".join(cells) + " |")
    ideal = after["ideal"]
    lines += ["", f"Ideal policy: {ideal['accuracy']:.4f} at {ideal['mean_cost']:.1f}; its "
              f"front at 1.2x that cost: {after['ideal_front_1.2x']:.4f}; at 60: "
              f"{after['ideal_front_60']:.4f}."]
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--json", help="write the rows here")
    parser.add_argument("--render", nargs=2, metavar=("BEFORE_JSON", "AFTER_JSON"),
                        help="print the before / after table of two runs instead")
    args = parser.parse_args()
    if args.render:
        print(render(*args.render))
        return
    from cbudget.sklearn import CEGBClassifier
    rows = {"train": bc.FULL["train_rows"], "valid": bc.FULL["valid_rows"],
            "test": bc.FULL["test_rows"]}
    data = bc.load_member(MEMBER, rows)
    costs = data["feature_costs"]

    def estimator(**kwargs):
        return lambda: CEGBClassifier(feature_costs=costs, random_state=0, **kwargs)

    runs = []
    for budget in BUDGETS:
        for metric in ("logloss", "error"):
            params = None if metric == "logloss" else {"eval_metric": "error"}
            for epsilons in (None, EPSILONS):
                label = (f"path, cost_budget={budget:g}, {metric}"
                         + (", exit_epsilons" if epsilons else ""))
                runs.append(run(label, estimator(
                    n_estimators=ROUNDS, cost_tradeoff="path", cost_budget=budget,
                    exit_epsilons=epsilons, params=params), data))
                print(runs[-1], flush=True)
    runs.append(run("CEGBClassifier() default, holdout", estimator(), data))
    print(runs[-1], flush=True)
    ideal = bc.ideal_policy(MEMBER, bc.FULL["ideal_samples"])

    def front_at(cost):
        return float(np.interp(cost, [p["mean_cost"] for p in ideal["front"]],
                               [p["accuracy"] for p in ideal["front"]]))

    out = {"member": MEMBER, "rows": rows, "runs": runs,
           "ideal": {k: ideal[k] for k in ("accuracy", "mean_cost")},
           "ideal_front_1.2x": front_at(1.2 * ideal["mean_cost"]),
           "ideal_front_60": front_at(60.0)}
    print(json.dumps(out["ideal"]), out["ideal_front_1.2x"])
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1, default=str)


if __name__ == "__main__":
    main()
