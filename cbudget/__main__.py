"""``python -m cbudget demo`` / ``python -m cbudget --version``."""
import argparse
import sys
import time

import numpy as np

import cbudget
from cbudget.datasets import load_letters, train_valid_test_split

# the demo's split of the 20,000 Letters rows and the boosted trees CSTC's nodes weigh;
# --quick: the same steps on less data and fewer basis trees (a smoke test of the CLI)
FULL = {"split": (12000, 4000, 4000), "basis_trees": 100}
QUICK = {"split": (2000, 1000, 1000), "basis_trees": 10}


def demo(rounds, quick=False):
    """Train plain boosting, CEGB, Greedy Miser and BudgetRF on the shipped UCI Letters
    data (12,000 / 4,000 / 4,000 split, every feature costs 1) and report accuracy and
    prediction cost per input (a forest's "rounds" are its trees); then CSTC trees
    (linear nodes, and nodes on 100 boosted trees), a CSCC cascade and ADAPT-GBRT (a gate
    and a cheap predictor in front of plain boosting) on the binary task A-M against
    N-Z. ``quick``: a 2,000 / 1,000 / 1,000 split and 10 boosted trees for CSTC's
    nodes."""
    setup = QUICK if quick else FULL
    X, y, names = load_letters()
    train_idx, valid_idx, test_idx = train_valid_test_split(len(y), setup["split"])
    costs = np.ones(X.shape[1])
    dtrain = cbudget.Dataset(X[train_idx], y[train_idx], feature_names=names,
                             feature_costs=costs)
    dvalid = cbudget.Dataset(X[valid_idx], y[valid_idx], reference=dtrain)
    print(f"UCI Letters: {len(train_idx)} train / {len(valid_idx)} valid / "
          f"{len(test_idx)} test, {X.shape[1]} features, 26 classes, each feature costs 1")
    rows = []
    # Greedy Miser's depth-4 trees and small steps need more rounds than best-first trees.
    for algorithm, params, n_rounds in [
            ("gbdt", {}, rounds),
            ("cegb", {"cost_tradeoff": 0.1}, rounds),
            ("greedy_miser", {"cost_tradeoff": 10.0}, 5 * rounds)]:
        params = dict(params, algorithm=algorithm, objective="multi:softprob", num_class=26,
                      learning_rate=0.1, eval_metric="merror")
        print(f"\n{algorithm} {params.get('cost_tradeoff', '')}".rstrip())
        start = time.perf_counter()
        booster = cbudget.train(params, dtrain, n_rounds, evals=[(dvalid, "valid")],
                                early_stopping_rounds=max(20, n_rounds // 10),
                                verbose_eval=n_rounds // 8 or 1)
        seconds = time.perf_counter() - start
        best = booster[: booster.best_iteration + 1]
        accuracy = float(np.mean(best.predict(X[test_idx]).argmax(axis=1) == y[test_idx]))
        report = best.cost_report(X[test_idx])
        rows.append((algorithm, best.num_boosted_rounds(), accuracy, report.mean_cost,
                     len(report.features_used), seconds))
    # BudgetRF: trees are added until the mean validation cost would exceed the budget
    budget = 14.0
    print(f"\nbudget_rf (budget {budget:g} per input)")
    start = time.perf_counter()
    forest = cbudget.train({"algorithm": "budget_rf", "num_class": 26, "budget": budget},
                           dtrain, 40, evals=[(dvalid, "valid")], verbose_eval=5)
    seconds = time.perf_counter() - start
    report = forest.cost_report(X[test_idx])
    rows.append(("budget_rf", forest.num_trees(),
                 float(np.mean(forest.predict(X[test_idx]) == y[test_idx])),
                 report.mean_cost, len(report.features_used), seconds))
    _print_table(rows, "rounds", X.shape[1])

    # trees / cascades of linear classifiers are binary: letters A-M against N-Z
    print("\nBinary task: letters A-M (0) against N-Z (1)")
    binary = (y >= 13).astype(np.float64)
    dtrain_b = cbudget.Dataset(X[train_idx], binary[train_idx], feature_names=names,
                               feature_costs=costs)
    dvalid_b = cbudget.Dataset(X[valid_idx], binary[valid_idx], reference=dtrain_b)
    rows = []
    # linear nodes, then the boosting trick (nodes weigh 100 boosted depth-3 trees; 10 quick)
    n_basis = setup["basis_trees"]
    for algorithm, basis_trees in (("cstc", 0), ("cstc", n_basis), ("cscc", n_basis)):
        name = f"{algorithm}{'+trees' if basis_trees else ''}"
        print(f"\n{name}")
        start = time.perf_counter()
        model = cbudget.train({"algorithm": algorithm, "objective": "binary:logistic",
                               "cost_tradeoff": 0.01, "eval_metric": "error",
                               "basis_trees": basis_trees, "basis_max_depth": 3},
                              dtrain_b, 20, evals=[(dvalid_b, "valid")],
                              early_stopping_rounds=3, verbose_eval=5)
        rows.append(_binary_row(name, model, model.num_nodes(), X[test_idx],
                                binary[test_idx], time.perf_counter() - start))
    _print_table(rows, "nodes", X.shape[1])

    # ADAPT-GBRT: a gate and a cheap predictor in front of plain boosting (f0)
    rows = []
    print("\ngbdt (the expensive model f0)")
    start = time.perf_counter()
    f0 = cbudget.train({"objective": "binary:logistic", "eval_metric": "error"}, dtrain_b,
                       rounds, evals=[(dvalid_b, "valid")], early_stopping_rounds=20,
                       verbose_eval=rounds // 4 or 1)
    f0 = f0[: f0.best_iteration + 1]
    rows.append(_binary_row("f0=gbdt", f0, f0.num_boosted_rounds(), X[test_idx],
                            binary[test_idx], time.perf_counter() - start))
    print("\nadapt_gbrt (p_full 0.3: at most 30% of the inputs go to f0)")
    start = time.perf_counter()
    gated = cbudget.train({"algorithm": "adapt_gbrt", "p_full": 0.3, "cost_tradeoff": 3.0,
                           "learning_rate": 0.5, "eval_metric": "error"}, dtrain_b,
                          rounds, evals=[(dvalid_b, "valid")], early_stopping_rounds=20,
                          verbose_eval=rounds // 4 or 1, expensive_model=f0)
    rows.append(_binary_row("adapt_gbrt", gated, gated.predictor.num_boosted_rounds(),
                            X[test_idx], binary[test_idx], time.perf_counter() - start))
    _print_table(rows, "rounds", X.shape[1])
    route = gated.route(X[test_idx])
    print(f"adapt_gbrt sends {100 * np.mean(route == 0):.1f}% of the test inputs to f0")


def _binary_row(name, model, count, X, y, seconds):
    accuracy = float(np.mean((model.predict(X) > 0.5) == y))
    report = model.cost_report(X)
    return name, count, accuracy, report.mean_cost, len(report.features_used), seconds


def _print_table(rows, count_name, n_features):
    print()
    print(f"{'algorithm':<13} {count_name:>6} {'test accuracy':>14} {'cost/input':>11} "
          f"{'features used':>14} {'train s':>8}")
    for algorithm, count, accuracy, cost, n_used, seconds in rows:
        print(f"{algorithm:<13} {count:>6} {accuracy:>14.4f} {cost:>11.3f} "
              f"{n_used:>11} / {n_features:<2} {seconds:>6.1f}")


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m cbudget", description=cbudget.__doc__
                                     .splitlines()[0])
    parser.add_argument("--version", action="version", version=f"cbudget {cbudget.__version__}")
    sub = parser.add_subparsers(dest="command")
    demo_parser = sub.add_parser("demo", help="train on the shipped Letters data and report "
                                              "accuracy and prediction cost")
    demo_parser.add_argument("--rounds", type=int, default=200,
                             help="boosting rounds (Greedy Miser: 5x)")
    demo_parser.add_argument("--quick", action="store_true",
                             help="the same steps on a 2,000 / 1,000 / 1,000 split with 10 "
                                  "boosted trees for CSTC's nodes (a quick check)")
    args = parser.parse_args(argv)
    if args.command == "demo":
        demo(args.rounds, quick=args.quick)
        return 0
    parser.print_help()
    return 2


if __name__ == "__main__":
    sys.exit(main())
