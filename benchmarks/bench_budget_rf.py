"""BudgetRF benchmark: the paper's Table 1 and accuracy-vs-budget curves against RF.

cbudget's BudgetRF (``algorithm="budget_rf"``; Nan, Wang, Saligrama, "Feature-Budgeted
Random Forest", ICML 2015) against scikit-learn's ``RandomForestClassifier`` with the
Gini and the entropy criterion, on the three data sets with feature costs of
benchmarks/datasets.py: ``letters`` (16 features, cost 1 each, 26 classes),
``mnist_multires`` (1120 pixels of MNIST at 4x4, 8x8, 16x16 and 28x28, cost 1 each, 10
classes) and ``synthetic_costly`` (binary, 32 features with costs 1..200).

Methods and settings
--------------------
* BudgetRF: the paper's settings, which are cbudget's defaults: GREEDYTREEs grown on
  bootstrap samples (as many rows as the training set), threshold-Pairs impurity (paper
  eq. 11) with ``alpha``, minimax cost-weighted splits over random stumps (80 / 40 / 20
  per feature for nodes of more than 2000 / more than 500 / fewer examples), no depth
  limit, majority vote; ``path_free`` False (the paper's rule: a feature costs its cost
  at every node) and True (a feature already tested on the root-to-node path costs 0 at
  training). 40 trees (``n_estimators``), 2 threads.
* RF(Gini), RF(entropy): ``RandomForestClassifier(n_estimators=40, criterion=...,
  max_features="sqrt", bootstrap=True, min_samples_leaf=1, n_jobs=2, random_state=seed)``,
  the paper's Matlab TreeBagger defaults. Its prediction averages the trees'
  class probabilities (scikit-learn's rule).
* RF(Gini, all features): the same with ``max_features=None`` (every feature at every
  split, as BudgetRF), first seed only: the like-for-like training time (BudgetRF scans
  every feature at every node; the sqrt forests scan sqrt(n_features)).

Protocol
--------
Every run trains 40 trees once; the forests of k < 40 trees are its prefixes (cbudget:
tree t depends only on (seed, t); scikit-learn: the trees' random states are drawn in
order from ``random_state``), so one run gives every number of trees and, for BudgetRF,
every budget: a run with budget B is the longest prefix whose mean validation cost stays
<= B. The script checks this for one budget per data set by training with
``"budget": B`` (identical trees and predictions).

1. **Table 1** (the paper's): for 1, 10, 20 and 40 trees, the percentage of the
   features used per test input (100 x mean over test inputs of the number of distinct
   features on the input's paths through the first k trees / number of features) and
   the test error, mean and standard deviation over the seeds; BudgetRF with alpha 0.
   On the heterogeneous-cost set also the mean cost per input as a percentage of the
   sum of all feature costs.
2. **Accuracy vs budget**: BudgetRF over the alpha grid (seed 0), both ``path_free``
   settings; for each budget B of a grid (geometric, over the validation costs of all
   runs), the prefix within B on validation gives a test error and a test mean cost;
   the "alpha chosen on validation" curve takes, for each B, the alpha with the best
   validation accuracy (ties: lower validation cost, then smaller alpha). RF's curves
   are by number of trees (the paper's way of giving RF a budget). Comparison at equal
   cost (``_common.dominance`` / ``interpolated_accuracy``): BudgetRF's test error at
   RF's cost points and the cheapest BudgetRF point reaching RF's error.
3. **path_free False vs True**: both alpha-selected curves at the same budgets, and
   each read at the other's cost.
4. **Training time**: wall seconds of the 40-tree runs (cbudget: Dataset construction,
   binning included, to the return of ``train()``; scikit-learn: ``fit``), 2 threads, in
   child processes (idle waiting and retries as in the other benchmarks), and the ratio
   cbudget / scikit-learn.

Per-input cost is one routine for both libraries (ARCHITECTURE section 2, the same as
``bench_cegb.py``): the leaf each input reaches in each tree (cbudget ``pred_leaf``,
scikit-learn ``estimator.apply``), a bit mask of the features on each root-to-leaf path
(``_common.cbudget_leaf_paths`` / ``sklearn_leaf_paths``), OR-ed per input tree after
tree (``_common.CostTrace``). For every cbudget run the script asserts that this equals
``forest.predict_cost`` on the test set (after 1, 10, 20 and 40 trees) and that the
per-feature acquisition rates equal ``forest.cost_report``'s; for scikit-learn it checks
that the staged vote of all trees equals ``predict``.

Sizes of the full run (``FULL`` in the script): Letters 12,000 / 4,000 / 4,000 train /
valid / test rows; multi-resolution MNIST capped to the first 10,000 training rows
(10,000 valid / 10,000 test), as BudgetRF scans all 1,120 features with up to 80 stumps
each at every node (about 1.1 s per tree with path_free False, 2.2 s with True, on
10,000 rows and 2 threads); the synthetic set with 100,000 rows in all (60,000 / 20,000 /
20,000). Seeds for Table 1 and training time: Letters 0-4, MNIST 0-1, synthetic
0-2; the alpha grid [0, 2, 4, 6, 8, 10, 15, 25, 35, 45] with seed 0 on every data set. Estimated time: see
benchmarks/README.md.

Writes ``<output>.md``, ``<output>.json`` (raw, one object per child) and ``<output>.png``
(test error vs mean test cost per data set).

Usage::

    PYTHONPATH=. python benchmarks/bench_budget_rf.py --wait-idle 300 --retries 1  # full run
    PYTHONPATH=. python benchmarks/bench_budget_rf.py --quick --output /tmp/budget_rf_quick.md
    PYTHONPATH=. python benchmarks/bench_budget_rf.py --datasets letters --alphas 0,10 \\
        --seeds 0
"""
import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))

from _common import (  # noqa: E402  (benchmarks/_common.py)
    benchmark_parser,
    COST_DATASETS, DATASET_TITLES, SMOKE_BANNER, CostTrace, PathTables, add_data_arguments,
    add_run_arguments, attempts_text, bits_matrix, cbudget_leaf_paths, command_line,
    dominance, finish_run, interpolated_accuracy, library_version, load_for_child,
    machine_info, maxrss_bytes, parse_choices, parse_lambdas, write_rerendered,
    results_header, run_child_command, run_jobs, sklearn_leaf_paths, special_mode,
    subplot_grid, timed_training, train_cbudget_timed, write_json)

METHODS = ("budget_rf", "rf_gini", "rf_entropy", "rf_gini_all")
METHOD_LABELS = {"budget_rf": "BudgetRF", "rf_gini": "RF(Gini)", "rf_entropy": "RF(entropy)",
                 "rf_gini_all": "RF(Gini, all features)"}
ALPHAS = (0.0, 2.0, 4.0, 6.0, 8.0, 10.0, 15.0, 25.0, 35.0, 45.0)  # the paper's grid
N_TREES = 40
TABLE_TREES = (1, 10, 20, 40)
N_BUDGETS = 30  # budgets of the accuracy-vs-budget grid
VERIFY_TREES = 10  # the budget check: a budget between the costs of 10 and 11 trees
# the full run's sizes (see the module docstring and benchmarks/README.md)
FULL = {"seeds": {"letters": (0, 1, 2, 3, 4), "mnist_multires": (0, 1),
                  "synthetic_costly": (0, 1, 2)}, "n_rows": 100_000,
        "train_rows": {"letters": None, "mnist_multires": 10_000, "synthetic_costly": None},
        "alphas": {d: ALPHAS for d in COST_DATASETS}}
QUICK = {"seeds": (0,), "n_rows": 10_000, "train_rows": 1500, "valid_rows": 500,
         "test_rows": 500, "alphas": (0.0, 10.0, 45.0), "trees": 12}
COST_CHECK_TOL = 1e-9


# ----------------------------------------------------------------------- settings
def budget_rf_params(n_classes, alpha, path_free, seed, n_trees, n_threads, budget=None):
    """cbudget parameters of one BudgetRF run (the paper's settings)."""
    p = {"algorithm": "budget_rf", "alpha": float(alpha), "impurity": "threshold_pairs",
         "path_free": bool(path_free), "n_stumps": (80, 40, 20), "budget": budget,
         "n_estimators": int(n_trees), "seed": int(seed), "n_jobs": n_threads}
    if n_classes == 2:
        p["objective"] = "binary:logistic"
    else:
        p.update(objective="multi:softprob", num_class=int(n_classes))
    return p


def rf_params(criterion, seed, n_trees, n_threads, max_features="sqrt"):
    """scikit-learn RandomForestClassifier arguments (Matlab TreeBagger's defaults;
    ``max_features=None``: every feature at every split, BudgetRF's amount of work)."""
    return {"n_estimators": int(n_trees), "criterion": criterion, "max_features": max_features,
            "bootstrap": True, "min_samples_leaf": 1, "n_jobs": n_threads,
            "random_state": int(seed)}


# ---------------------------------------------------------------------- children
def _train_cbudget(data, params, n_rounds, clock):
    return train_cbudget_timed(data, params, n_rounds, clock,
                               feature_names=data["feature_names"],
                               feature_costs=data["feature_costs"])


def _train_sklearn(data, params, n_rounds, clock):
    """Fit the forest; one "round" (the whole fit) for ``timed_training``."""
    from sklearn.ensemble import RandomForestClassifier
    clock.start()
    rf = RandomForestClassifier(**params)
    rf.fit(data["X_train"], data["y_train"])
    clock.tick()
    t = clock.since_start()
    return rf, 0.0, t, None


def staged_costs(leaf_paths, leaves, costs):
    """Per tree count k = 1..n_trees: mean cost and mean number of features acquired per
    input; and the CostTrace states after the trees of ``TABLE_TREES`` (per-input cost
    and acquired bits) for the checks."""
    tables = PathTables(leaf_paths, costs.shape[0])
    trace = CostTrace(tables, costs, leaves.shape[0])
    mean_cost, mean_feat, kept = [], [], {}
    for t in range(leaves.shape[1]):
        trace.add_trees(leaves[:, t:t + 1], t)
        mean_cost.append(float(trace.cost.mean()))
        mean_feat.append(float(trace.n_acquired.mean()))
        if t + 1 in TABLE_TREES or t + 1 == leaves.shape[1]:
            kept[t + 1] = (trace.cost.copy(), trace.acquired.copy())
    return mean_cost, mean_feat, kept, tables


def _cbudget_curves(forest, X, y, costs):
    """Staged majority vote (each tree votes for its leaf's majority class, the tree's
    ``value`` at leaves; ties to the lower class), checked against ``forest.predict``
    after the trees of ``TABLE_TREES``, and costs."""
    n_trees = forest.num_trees()
    leaves = np.asarray(forest.predict(X, pred_leaf=True), dtype=np.int64)
    votes = np.zeros((X.shape[0], forest.num_class))
    rows = np.arange(X.shape[0])
    err = []
    for t in range(n_trees):
        votes[rows, forest.trees[t]["value"][leaves[:, t]].astype(np.int64)] += 1
        pred = np.argmax(votes, axis=1)
        err.append(float(np.mean(pred != y)))
        if (t + 1 in TABLE_TREES or t + 1 == n_trees) and not np.array_equal(
                pred, forest.predict(X, iteration_range=(0, t + 1))):
            raise AssertionError(f"staged vote after {t + 1} trees differs from predict")
    paths = [cbudget_leaf_paths(tree) for tree in forest.trees]
    mean_cost, mean_feat, kept, tables = staged_costs(paths, leaves, costs)
    return err, mean_cost, mean_feat, kept, tables


def _sklearn_curves(rf, X, y, costs):
    """Staged soft vote (scikit-learn averages the trees' probabilities) and costs."""
    proba = np.zeros((X.shape[0], rf.n_classes_))
    err = []
    for est in rf.estimators_:
        proba += est.predict_proba(X)
        err.append(float(np.mean(rf.classes_[np.argmax(proba, axis=1)] != y)))
    if not np.array_equal(rf.classes_[np.argmax(proba, axis=1)], rf.predict(X)):
        raise AssertionError("the staged vote of all trees differs from rf.predict")
    leaves = np.column_stack([est.apply(X) for est in rf.estimators_]).astype(np.int64)
    paths = [sklearn_leaf_paths(est.tree_) for est in rf.estimators_]
    mean_cost, mean_feat, kept, tables = staged_costs(paths, leaves, costs)
    return err, mean_cost, mean_feat, kept, tables


def _check_cbudget(forest, X, kept, costs):
    """Our per-input accounting against cbudget's: costs (``predict_cost``) and the
    per-feature acquisition rates (``cost_report``); per input the acquired-feature sets
    when cbudget exposes its bit sets. Raises AssertionError on a difference."""
    if np.any(costs < 0):
        raise AssertionError("negative feature costs")
    out = {"trees_checked": sorted(kept), "max_abs_cost_diff": 0.0,
           "max_abs_rate_diff": 0.0, "per_input_sets": None}
    for k, (cost, acquired) in sorted(kept.items()):
        own = forest.predict_cost(X, iteration_range=(0, k))
        diff = float(np.max(np.abs(own - cost))) if cost.size else 0.0
        out["max_abs_cost_diff"] = max(out["max_abs_cost_diff"], diff)
        if not np.allclose(own, cost, rtol=COST_CHECK_TOL, atol=COST_CHECK_TOL):
            raise AssertionError(f"per-input costs after {k} trees differ from "
                                 f"predict_cost (max |diff| {diff})")
        bits = bits_matrix(acquired, costs.shape[0])
        rate = np.asarray(forest.cost_report(X, iteration_range=(0, k)).acquisition_rate)
        rdiff = float(np.max(np.abs(rate - bits.mean(axis=0))))
        out["max_abs_rate_diff"] = max(out["max_abs_rate_diff"], rdiff)
        if rdiff > 1e-12:
            raise AssertionError(f"acquisition rates after {k} trees differ from "
                                 f"cost_report (max |diff| {rdiff})")
        try:  # private API: cbudget's per-input bit sets
            Xp = forest._prepare(X)
            theirs = forest.cost_model.acquired_matrix(
                forest._costs(Xp, (0, k))[1]).astype(bool)
        except Exception:  # noqa: BLE001 - the rate check above still holds
            continue
        same = bool(np.array_equal(theirs[:, :costs.shape[0]], bits))
        out["per_input_sets"] = same if out["per_input_sets"] in (None, True) else False
        if not same:
            raise AssertionError(f"acquired feature sets after {k} trees differ")
    return out


def _verify_budget(forest, dtrain, data, params, valid_cost, n_threads):
    """Train again with a budget between the validation costs of VERIFY_TREES and
    VERIFY_TREES + 1 trees (the first strict increase from there on) and compare with
    the prefix of the 40-tree forest."""
    import cbudget
    # k0: the tree count nearest VERIFY_TREES after which the next tree adds cost
    rises = [k for k in range(1, len(valid_cost)) if valid_cost[k] > valid_cost[k - 1]]
    if rises:
        k0 = min(rises, key=lambda k: (abs(k - VERIFY_TREES), k))
        budget = 0.5 * (valid_cost[k0 - 1] + valid_cost[k0])  # k0 trees fit, k0 + 1 not
    elif valid_cost[0] > 0:  # flat curve: a budget below the first tree's cost
        k0, budget = 0, 0.5 * valid_cost[0]
    else:
        return {"skipped": "every tree costs 0 on the validation set"}
    dvalid = cbudget.Dataset(data["X_valid"], data["y_valid"], reference=dtrain)
    t = time.perf_counter()
    budgeted = cbudget.train(dict(params, budget=budget), dtrain,
                             evals=[(dvalid, "valid")], verbose_eval=False)
    t = time.perf_counter() - t
    X = data["X_test"]
    prefix = forest[:k0]
    same_trees = budgeted.num_trees() == k0 and all(
        np.array_equal(a[f], b[f]) for a, b in zip(budgeted.trees, prefix.trees)
        for f in ("left", "right", "feature", "threshold"))
    same_pred = (budgeted.num_trees() == k0
                 and np.array_equal(budgeted.predict(X), prefix.predict(X))
                 and np.array_equal(budgeted.predict_proba(X), prefix.predict_proba(X)))
    return {"budget": budget, "expected_trees": k0, "trees": budgeted.num_trees(),
            "same_trees": bool(same_trees), "same_predictions": bool(same_pred),
            "train_s": t}


def run_child(args):
    """Train and measure one (method, data set, alpha, path_free, seed)."""
    method, name = args.method, args.dataset
    library = "cbudget" if method == "budget_rf" else "sklearn"
    version, location = library_version(library)
    data, t_load, rss_after_load = load_for_child(name, args, keep_valid=True)
    costs = np.asarray(data["feature_costs"], dtype=np.float64)
    n_classes = int(data["n_classes"])
    n_trees, seed = int(args.trees), int(args.seed)
    alpha, path_free = float(args.alpha), args.path_free == "1"
    if library == "cbudget":
        params = budget_rf_params(n_classes, alpha, path_free, seed, n_trees, args.threads)
        (model, _, _, dtrain), timing = timed_training(_train_cbudget, data, params, n_trees)
        curves = _cbudget_curves
        n_nodes = [int(len(tree)) for tree in model.trees]
    else:
        params = rf_params(method.split("_")[1], seed, n_trees, args.threads,
                           None if method.endswith("_all") else "sqrt")
        (model, _, _, _), timing = timed_training(_train_sklearn, data, params, 1)
        curves = _sklearn_curves
        n_nodes = [int(est.tree_.node_count) for est in model.estimators_]
    t = time.perf_counter()
    y_train = np.asarray(data["y_train"])
    majority = int(np.bincount(y_train).argmax())
    out = {}
    for part in ("valid", "test"):
        X, y = data[f"X_{part}"], np.asarray(data[f"y_{part}"])
        err, mean_cost, mean_feat, kept, tables = curves(model, X, y, costs)
        out[part] = {"error": err, "mean_cost": mean_cost, "mean_features": mean_feat,
                     "prior_error": float(np.mean(y != majority))}
        if part == "test":
            test_kept, depth = kept, int(tables.depths.max())
    t_eval = time.perf_counter() - t
    result = {
        "method": method, "library": library, "version": version, "location": location,
        "dataset": name, "alpha": alpha if library == "cbudget" else None,
        "path_free": path_free if library == "cbudget" else None, "seed": seed,
        "n_train": int(data["X_train"].shape[0]), "n_valid": int(data["X_valid"].shape[0]),
        "n_test": int(data["X_test"].shape[0]), "n_features": int(costs.shape[0]),
        "n_classes": n_classes, "n_trees": n_trees,
        "params": {k: (list(v) if isinstance(v, tuple) else v) for k, v in params.items()},
        "load_s": t_load, **timing, "train_total_s": timing["train_s"],
        "n_threads": args.threads, "full_cost": float(costs.sum()),
        "heterogeneous_costs": bool(np.unique(costs).size > 1),
        "mean_nodes": float(np.mean(n_nodes)), "max_depth": depth,
        "curves": out, "eval_s": t_eval, "rss_after_load_mb": rss_after_load / 2**20}
    if library == "cbudget":
        result["checks"] = _check_cbudget(model, data["X_test"], test_kept, costs)
        if args.verify_budget:
            result["budget_check"] = _verify_budget(model, dtrain, data, params,
                                                    out["valid"]["mean_cost"], args.threads)
    result["peak_rss_mb"] = maxrss_bytes() / 2**20
    return result


# ------------------------------------------------------------------------ parent
def launch_child(job, args, log):
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", "--method",
           job["method"], "--dataset", job["dataset"], "--alpha", repr(float(job["alpha"] or 0.0)),
           "--path-free", "1" if job["path_free"] else "0", "--seed", str(job["seed"]),
           "--trees", str(job["trees"]), "--threads", str(args.threads)]
    if job.get("verify_budget"):
        cmd.append("--verify-budget")
    for option, value in (("--n-rows", job["n_rows"]), ("--train-rows", job["train_rows"]),
                          ("--valid-rows", args.valid_rows),
                          ("--test-rows", args.test_rows)):
        if value:
            cmd += [option, str(value)]
    ident = {k: job[k] for k in ("method", "dataset", "alpha", "path_free", "seed")}
    return run_child_command(cmd, args.child_timeout, log, job["label"], ident)


def run_label(r):
    """``BudgetRF alpha=0 path_free=False seed 0`` / ``RF(Gini) seed 0``."""
    if r["method"] == "budget_rf":
        return (f"BudgetRF alpha={r['alpha']:g} path_free={r['path_free']} "
                f"seed {r['seed']}")
    return f"{METHOD_LABELS[r['method']]} seed {r['seed']}"


def build_jobs(names, alphas_by_dataset, seeds, trees, args):
    """Per data set: for each seed RF(Gini), RF(entropy), BudgetRF alpha 0 with both
    path_free settings (Table 1, training time); then with the first seed the rest of
    the alpha grid. The budget check runs in the first BudgetRF child of a data set."""
    jobs = []
    for d in names:
        n_rows = args.n_rows or (FULL["n_rows"] if d == "synthetic_costly" else None)
        train_rows = args.train_rows or FULL["train_rows"].get(d)
        common = {"dataset": d, "trees": trees, "n_rows": n_rows, "train_rows": train_rows}
        todo = []
        for seed in seeds[d]:
            todo += [("rf_gini", None, None, seed), ("rf_entropy", None, None, seed),
                     ("budget_rf", 0.0, False, seed), ("budget_rf", 0.0, True, seed)]
            if seed == seeds[d][0]:   # the like-for-like training time (one seed)
                todo.append(("rf_gini_all", None, None, seed))
        for alpha in alphas_by_dataset[d]:
            if alpha != 0.0:
                todo += [("budget_rf", alpha, False, seeds[d][0]),
                         ("budget_rf", alpha, True, seeds[d][0])]
        first = True
        for method, alpha, pf, seed in todo:
            job = dict(common, method=method, alpha=alpha, path_free=pf, seed=seed)
            if method == "budget_rf" and first and not pf:
                job["verify_budget"], first = True, False
            job["label"] = f"{d} / {run_label(job)} / {trees} trees"
            jobs.append((d, job))
    return jobs


# ------------------------------------------------------------------- aggregation
def _ok(results):
    return [r for r in results if "error" not in r]


def _mean_std(values):
    v = np.asarray(values, dtype=np.float64)
    return float(v.mean()), (float(v.std(ddof=1)) if v.size > 1 else None)


def _ms(values, spec, scale=1.0):
    m, s = _mean_std(np.asarray(values) * scale)
    return format(m, spec) + ("" if s is None else " ± " + format(s, spec))


TABLE1_ROWS = (("rf_gini", None, "RF(Gini)"), ("rf_entropy", None, "RF(entropy)"),
               ("rf_gini_all", None, "RF(Gini, all features per split)"),
               ("budget_rf", False, "BudgetRF (alpha 0, path_free False: the paper's)"),
               ("budget_rf", True, "BudgetRF (alpha 0, path_free True)"))


def _table1_runs(ok, method, pf):
    return [r for r in ok if r["method"] == method
            and (method != "budget_rf" or (r["alpha"] == 0.0 and r["path_free"] == pf))]


def table1(ok, cost_pct=False):
    """The paper's Table 1: % of features used per test input (test error), mean ± std
    over the seeds; with ``cost_pct`` the mean cost as % of the sum of all costs."""
    n_trees = ok[0]["n_trees"]
    cols = [k for k in TABLE_TREES if k <= n_trees] or [n_trees]
    what = "mean cost per test input, % of the sum of all feature costs" if cost_pct else \
        "% of the features used per test input"
    lines = [f"| method ({what}; test error) | seeds | "
             + " | ".join(f"{k} tree{'s' if k > 1 else ''}" for k in cols) + " |",
             "|---|---:|" + "---:|" * len(cols)]
    for method, pf, label in TABLE1_ROWS:
        runs = _table1_runs(ok, method, pf)
        if not runs:
            continue
        cells = []
        for k in cols:
            if cost_pct:
                pct = [100 * r["curves"]["test"]["mean_cost"][k - 1] / r["full_cost"]
                       for r in runs]
            else:
                pct = [100 * r["curves"]["test"]["mean_features"][k - 1] / r["n_features"]
                       for r in runs]
            err = [r["curves"]["test"]["error"][k - 1] for r in runs]
            cells.append(f"{_ms(pct, '.2f')} ({_ms(err, '.4f')})")
        lines.append(f"| {label} | {len(runs)} | " + " | ".join(cells) + " |")
    return lines


def budget_grid(runs, n=N_BUDGETS):
    """Budget 0 (trees without splits only) and a geometric grid from the cheapest
    positive one-tree validation cost to the largest validation cost of ``runs``."""
    first = [r["curves"]["valid"]["mean_cost"][0] for r in runs]
    positive = [c for c in first if c > 0] or [
        c for r in runs for c in r["curves"]["valid"]["mean_cost"] if c > 0] or [1.0]
    low = min(positive)
    high = max(r["curves"]["valid"]["mean_cost"][-1] for r in runs)
    return [0.0] + np.unique(np.geomspace(low, max(high, low), n)).tolist()


def prefix_point(r, budget):
    """The longest prefix of run ``r`` whose validation mean cost is <= ``budget``: a
    point dict (k = 0: no tree, the training prior, cost 0)."""
    vc = r["curves"]["valid"]["mean_cost"]
    k = 0
    while k < len(vc) and vc[k] <= budget * (1 + 1e-12):
        k += 1
    v, t = r["curves"]["valid"], r["curves"]["test"]
    if k == 0:
        return {"k": 0, "alpha": r["alpha"], "valid_error": v["prior_error"],
                "valid_cost": 0.0, "error": t["prior_error"], "mean_cost": 0.0,
                "mean_features": 0.0, "accuracy": 1 - t["prior_error"]}
    return {"k": k, "alpha": r["alpha"], "valid_error": v["error"][k - 1],
            "valid_cost": vc[k - 1], "error": t["error"][k - 1],
            "mean_cost": t["mean_cost"][k - 1], "mean_features": t["mean_features"][k - 1],
            "accuracy": 1 - t["error"][k - 1]}


def selected_curve(runs, budgets):
    """Per budget: the prefix of the alpha with the best validation accuracy (ties:
    lower validation cost, then smaller alpha)."""
    pts = []
    for b in budgets:
        cands = [prefix_point(r, b) for r in runs]
        best = min(cands, key=lambda p: (p["valid_error"], p["valid_cost"], p["alpha"]))
        pts.append(dict(best, budget=b))
    return pts


def rf_points(r):
    t = r["curves"]["test"]
    return [{"k": k + 1, "error": e, "accuracy": 1 - e, "mean_cost": c,
             "mean_features": f}
            for k, (e, c, f) in enumerate(zip(t["error"], t["mean_cost"], t["mean_features"]))]


def curve_data(ok):
    """The seed-0 (first seed) curves of one data set: budgets, per path_free the
    per-alpha runs and the alpha-selected curve, RF points by number of trees."""
    seed = min(r["seed"] for r in ok)
    brf = [r for r in ok if r["method"] == "budget_rf" and r["seed"] == seed]
    if not brf:
        return None
    budgets = budget_grid(brf)
    out = {"seed": seed, "budgets": budgets, "selected": {}, "alphas": {}, "rf": {}}
    for pf in (False, True):
        runs = sorted((r for r in brf if r["path_free"] == pf), key=lambda r: r["alpha"])
        if runs:
            out["alphas"][pf] = [r["alpha"] for r in runs]
            out["selected"][pf] = selected_curve(runs, budgets)
    for m in ("rf_gini", "rf_entropy", "rf_gini_all"):
        r = next((r for r in ok if r["method"] == m and r["seed"] == seed), None)
        if r:
            out["rf"][m] = rf_points(r)
    return out


RF_K = (1, 2, 3, 5, 10, 20, 40)


def _cheapest_reaching(points, error):
    ok = [p for p in points if p["error"] <= error + 1e-12]
    return min(ok, key=lambda p: p["mean_cost"]) if ok else None


def equal_cost_table(cd, cost_name):
    """BudgetRF (alpha-selected, each path_free) at RF's cost points."""
    lines = [f"| RF | trees | RF {cost_name} | RF test error | path_free | BudgetRF best "
             f"error at {cost_name} <= RF's (its alpha / trees / {cost_name}) | BudgetRF "
             "<= RF error | BudgetRF curve at RF's cost | cheapest BudgetRF point with "
             f"error <= RF's: {cost_name} (% of RF's) |",
             "|---|---:|---:|---:|---|---|:---:|---:|---|"]
    verdicts = []
    for m, rf in cd["rf"].items():
        refs = [p for p in rf if p["k"] in RF_K]
        for pf, sel in cd["selected"].items():
            dom = dominance(sel, refs)
            n_ok = 0
            for d in dom:
                g, b = d["reference"], d["best"]
                n_ok += d["ok"]
                curve = interpolated_accuracy(sel, g["mean_cost"])
                cheap = _cheapest_reaching(sel, g["error"])
                lines.append(
                    f"| {METHOD_LABELS[m]} | {g['k']} | {g['mean_cost']:,.2f} | "
                    f"{g['error']:.4f} | {pf} | "
                    + (f"{b['error']:.4f} ({b['alpha']:g} / {b['k']} / "
                       f"{b['mean_cost']:,.2f})" if b else "no point this cheap")
                    + f" | {'yes' if d['ok'] else 'no'} | "
                    + (f"{1 - curve:.4f}" if curve is not None else "")
                    + " | " + (f"{cheap['mean_cost']:,.2f} "
                               f"({100 * cheap['mean_cost'] / max(g['mean_cost'], 1e-12):.3g}%)"
                               if cheap else "none") + " |")
            verdicts.append((m, pf, n_ok, len(dom)))
    return lines, verdicts


def path_free_table(cd, cost_name):
    """The two alpha-selected curves at the same validation budgets, and each read at
    the other's test cost."""
    sf, st = cd["selected"].get(False), cd["selected"].get(True)
    if not (sf and st):
        return [], None
    lines = [f"| budget B (valid) | path_free False: alpha / trees / test {cost_name} / "
             f"test error | path_free True: alpha / trees / test {cost_name} / test error | "
             "True's curve at False's cost | difference True - False |",
             "|---:|---|---|---:|---:|"]
    step = max(1, len(sf) // 12)
    diffs = []
    for i, (a, b) in enumerate(zip(sf, st)):
        curve = interpolated_accuracy(st, a["mean_cost"])
        if curve is not None:
            diffs.append((1 - curve) - a["error"])
        if i % step and i != len(sf) - 1:
            continue
        lines.append(
            f"| {a['budget']:,.3g} | {a['alpha']:g} / {a['k']} / {a['mean_cost']:,.2f} / "
            f"{a['error']:.4f} | {b['alpha']:g} / {b['k']} / {b['mean_cost']:,.2f} / "
            f"{b['error']:.4f} | " + (f"{1 - curve:.4f} | {(1 - curve) - a['error']:+.4f}"
                                      if curve is not None else " | ") + " |")
    best_f = min(sf, key=lambda p: (p["error"], p["mean_cost"]))
    best_t = min(st, key=lambda p: (p["error"], p["mean_cost"]))
    summary = {"best_false": best_f, "best_true": best_t,
               "n_compared": len(diffs),
               "true_better": sum(d < -1e-12 for d in diffs),
               "mean_diff": float(np.mean(diffs)) if diffs else None}
    return lines, summary


def timing_table(results_by_dataset):
    lines = ["| data set | train rows | BudgetRF path_free False s | BudgetRF path_free "
             "True s | RF(Gini) s | RF(entropy) s | RF(Gini, all features) s | BudgetRF / "
             "RF(Gini) | BudgetRF / RF(entropy) | BudgetRF / RF(Gini, all features) | "
             "BudgetRF s per tree (2 threads) |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for name, results in results_by_dataset.items():
        ok = _ok(results)
        if not ok:
            continue
        t = {}
        for key, method, pf in (("bf", "budget_rf", False), ("bt", "budget_rf", True),
                                ("g", "rf_gini", None), ("e", "rf_entropy", None),
                                ("a", "rf_gini_all", None)):
            runs = _table1_runs(ok, method, pf)
            t[key] = [r["train_s"] for r in runs]

        def cell(key):
            return _ms(t[key], ".2f") if t[key] else "n/a"

        def rat(key):
            return (f"{np.mean(t['bf']) / np.mean(t[key]):.2f}" if t["bf"] and t[key]
                    else "n/a")
        per_tree = (f"{np.mean(t['bf']) / ok[0]['n_trees']:.3f}" if t["bf"] else "n/a")
        lines.append(f"| {DATASET_TITLES.get(name, name).split(' (')[0]} | "
                     f"{ok[0]['n_train']:,} | {cell('bf')} | {cell('bt')} | {cell('g')} | "
                     f"{cell('e')} | {cell('a')} | {rat('g')} | {rat('e')} | {rat('a')} | "
                     f"{per_tree} |")
    return lines


def dataset_section(name, results, curves):
    ok = _ok(results)
    lines = []
    if not ok:
        return "\n".join([f"### {DATASET_TITLES.get(name, name)}", ""]
                         + [f"- {run_label(r)} failed: {r['error']}" for r in results]
                         + [""])
    first = ok[0]
    heterogeneous = first["heterogeneous_costs"]
    lines += [f"### {DATASET_TITLES.get(name, name)}: {first['n_train']:,} train / "
              f"{first['n_valid']:,} valid / {first['n_test']:,} test rows, "
              f"{first['n_features']} features (sum of costs {first['full_cost']:,.0f})", ""]
    lines += ["Table 1 (the paper's): % of the features used per test input (test "
              "error) after k trees, mean ± std over the seeds:", ""]
    lines += table1(ok) + [""]
    if heterogeneous:
        lines += ["Mean cost per test input as % of the sum of all feature costs (test "
                  "error):", ""]
        lines += table1(ok, cost_pct=True) + [""]
    for r in results:
        if "error" in r:
            lines.append(f"- {run_label(r)} failed: {r['error']}")
    cd = curves.get(name)
    cost_name = "mean cost" if heterogeneous else "mean features"
    if cd:
        lines += [f"Accuracy vs budget (seed {cd['seed']}; alphas "
                  + ", ".join(f"{a:g}" for a in cd["alphas"].get(False, [])) + "): for "
                  "each RF point (k trees), the alpha-selected BudgetRF curves at equal or "
                  f"lower test {cost_name} per input (ARCHITECTURE section 2"
                  + ("" if heterogeneous else "; features cost 1, so the mean cost is the "
                     "mean number of features acquired") + ").", ""]
        eq, verdicts = equal_cost_table(cd, cost_name)
        lines += eq + [""]
        for m, pf, n_ok, n in verdicts:
            lines.append(f"- BudgetRF path_free={pf} at least as accurate as "
                         f"{METHOD_LABELS[m]} at no more cost at {n_ok} of {n} RF points.")
        lines.append("")
        pft, summary = path_free_table(cd, cost_name)
        if pft:
            lines += ["path_free False vs True, both with alpha chosen on validation for "
                      "each budget B (one budget in "
                      f"{max(1, len(cd['budgets']) // 12)} of the grid shown; the last "
                      "columns read True's curve at False's test cost):", ""]
            lines += pft + [""]
            bf, bt = summary["best_false"], summary["best_true"]
            lines.append(
                f"- Best test error: path_free False {bf['error']:.4f} (alpha "
                f"{bf['alpha']:g}, {bf['k']} trees, {cost_name} {bf['mean_cost']:,.2f}); "
                f"path_free True {bt['error']:.4f} (alpha {bt['alpha']:g}, {bt['k']} trees, "
                f"{cost_name} {bt['mean_cost']:,.2f}). At the {summary['n_compared']} "
                "budgets where True's curve covers False's cost, True is more accurate at "
                f"{summary['true_better']}; mean error difference True - False "
                + (f"{summary['mean_diff']:+.4f}." if summary["mean_diff"] is not None
                   else "n/a."))
            lines.append("")
    lines += _notes(ok)
    return "\n".join(lines)


def _notes(ok):
    notes = []
    checks = [r for r in ok if "checks" in r]
    if checks:
        sets = [r["checks"]["per_input_sets"] for r in checks]
        notes.append(
            f"Checks on all {len(checks)} BudgetRF runs: per-input test costs after "
            + "/".join(map(str, checks[0]["checks"]["trees_checked"]))
            + " trees equal `predict_cost` (max |difference| "
            f"{max(r['checks']['max_abs_cost_diff'] for r in checks):.3g}), per-feature "
            "acquisition rates equal `cost_report` (max |difference| "
            f"{max(r['checks']['max_abs_rate_diff'] for r in checks):.3g}); per-input "
            "acquired-feature sets " + (
                "equal cbudget's bit sets in every run" if all(s is True for s in sets)
                else "not compared (private API unavailable) in some runs"
                if all(s is not False for s in sets) else "DIFFER") + ".")
    for r in ok:
        b = r.get("budget_check")
        if b and "skipped" not in b:
            notes.append(
                f"Budget check ({run_label(r)}): training with budget B = "
                f"{b['budget']:,.4g} (between the validation costs of "
                f"{b['expected_trees']} and {b['expected_trees'] + 1} trees) gave "
                f"{b['trees']} trees; identical trees: {b['same_trees']}; identical "
                f"test predictions and probabilities: {b['same_predictions']} "
                f"({b['train_s']:.1f} s).")
        elif b:
            notes.append(f"Budget check ({run_label(r)}) skipped: {b['skipped']}.")
    for r in sorted(ok, key=lambda r: (r["method"], r.get("alpha") or 0,
                                       bool(r.get("path_free")), r["seed"])):
        notes.append(
            f"{run_label(r)}: train {r['train_s']:.2f} s (CPU/wall "
            f"{r['train_cpu_s'] / max(r['train_s'], 1e-9):.2f}, other processes "
            f"{r['other_cores_during_train']:.2f} cores{attempts_text(r)}), "
            f"{r['mean_nodes']:,.0f} nodes per tree, deepest leaf {r['max_depth']}, "
            f"evaluation {r['eval_s']:.1f} s, peak RSS {r['peak_rss_mb']:.0f} MB")
    return ["<details><summary>Checks and per-run notes</summary>", ""] + \
        [f"- {n}" for n in notes] + ["", "</details>", ""]


SETTINGS_TEXT = """\
Methods ({threads} thread(s), {trees} trees; one child process per run):

* **BudgetRF** (cbudget `algorithm="budget_rf"`, the paper's settings = cbudget's
  defaults): GREEDYTREEs on bootstrap samples, threshold-Pairs impurity with alpha,
  minimax cost-weighted splits over 80 / 40 / 20 random stumps per feature (nodes of more
  than 2000 / more than 500 / fewer examples), no depth limit, majority vote.
  `path_free` False: a feature costs its cost at every node (the paper's rule); True: a
  feature already tested on the root-to-node path costs 0 at training.
* **RF(Gini)**, **RF(entropy)**: scikit-learn {sklearn} `RandomForestClassifier(
  n_estimators={trees}, criterion=..., max_features="sqrt", bootstrap=True,
  min_samples_leaf=1, n_jobs={threads}, random_state=seed)` (Matlab TreeBagger's
  defaults, as in the paper); its prediction averages the trees' class probabilities.
* **RF(Gini, all features)**: the same with `max_features=None` (every feature at every
  split, BudgetRF's amount of split search), first seed only: the like-for-like
  training time.

Every run trains {trees} trees once; the forests of fewer trees are its prefixes (for
BudgetRF a run with budget B is the longest prefix whose mean validation cost is <= B,
checked once per data set below). *% of the features used per test input*: 100 x mean
over the test inputs of the number of distinct features on the input's paths through
the first k trees / number of features (one routine for both libraries, checked
against cbudget's `predict_cost`). Table 1 uses BudgetRF with alpha 0 and the seeds
{seeds}; the accuracy-vs-budget curves use the first seed. *train s*: wall time of the
{trees}-tree training (cbudget: Dataset construction and binning included, to the
return of `train()`; scikit-learn: `fit`).
"""


def _describe_seeds(seeds):
    """``{data set: [seed, ...]}`` -> "Letters 0, 1, 2; ..."."""
    return "; ".join(f"{DATASET_TITLES.get(d, d).split(' (')[0]} "
                     + ", ".join(map(str, ss)) for d, ss in seeds.items())


def render(results_by_dataset, info, command, wall_s, quick, threads, trees, seeds):
    banners = [SMOKE_BANNER] if quick else []
    busy = [(f"{run_label(r)} / {r['dataset']}", r["other_cores_during_train"])
            for rs in results_by_dataset.values() for r in _ok(rs)]
    out = results_header("BudgetRF benchmark: Table 1 and accuracy vs budget (vs "
                         "scikit-learn random forests)", command, info, wall_s, busy,
                         banners)
    out.append(SETTINGS_TEXT.format(threads=threads, trees=trees,
                                    seeds=_describe_seeds(seeds),
                                    sklearn=info.get("sklearn", "")))
    curves = {n: curve_data(_ok(rs)) for n, rs in results_by_dataset.items() if _ok(rs)}
    out += ["## Training time", "",
            f"{trees} trees, {threads} threads, mean ± std over the seeds:", ""]
    out += timing_table(results_by_dataset) + [""]
    for name, results in results_by_dataset.items():
        out.append(dataset_section(name, results, curves))
    return "\n".join(out), curves


PLOT_STYLE = {("budget_rf", False): ("o-", "tab:red", "BudgetRF path_free=False (alpha on valid)"),
              ("budget_rf", True): ("s-", "tab:orange", "BudgetRF path_free=True (alpha on valid)"),
              "rf_gini": ("^-", "tab:blue", "RF(Gini), 1..40 trees"),
              "rf_entropy": ("v-", "tab:green", "RF(entropy), 1..40 trees"),
              "rf_gini_all": ("x:", "tab:gray", "RF(Gini, all features), 1..40 trees")}


def plot(results_by_dataset, curves, path, suffix=""):
    grid = subplot_grid(results_by_dataset, n_rows=1, panel=(5.6, 4.4))
    if grid is None:
        return None
    plt, fig, axes, names = grid
    for col, name in enumerate(names):
        ax = axes[0][col]
        cd = curves.get(name)
        if not cd:
            continue
        for pf, sel in cd["selected"].items():
            style, color, label = PLOT_STYLE[("budget_rf", pf)]
            pts = sorted({(p["mean_cost"], p["error"]) for p in sel if p["k"] > 0})
            ax.plot([p[0] for p in pts], [p[1] for p in pts], style, color=color,
                    label=label, markersize=3)
        for m, pts in cd["rf"].items():
            style, color, label = PLOT_STYLE[m]
            ax.plot([p["mean_cost"] for p in pts], [p["error"] for p in pts], style,
                    color=color, label=label, markersize=3)
        ax.set_xscale("log")
        ax.set_xlabel("mean test cost per input (= features acquired when costs are 1)")
        ax.set_ylabel("test error")
        ax.set_title(DATASET_TITLES.get(name, name).split(" (")[0], fontsize=10)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=7, loc="upper right")
    fig.suptitle("BudgetRF vs random forests: test error vs mean test cost" + suffix,
                 fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _finish(results, output, info, command, wall, quick, threads, trees, seeds):
    text, curves = render(results, info, command, wall, quick, threads, trees, seeds)
    png = plot(results, curves, output.with_suffix(".png"),
               " - smoke run (--quick)" if quick else "")
    if png:
        text += (f"\nPlot: `{png.name}` (test error vs mean test cost, log axis; BudgetRF "
                 "alpha-selected curves, RF by number of trees).\n")
    print(text)
    output.write_text(text)
    return png


def main(argv=None):
    parser = benchmark_parser(__doc__, COST_DATASETS, "--method", "--dataset")
    parser.add_argument("--alphas", default=None,
                        help="BudgetRF alpha grid for every data set (default the paper's "
                             + ",".join(f"{a:g}" for a in ALPHAS) + ")")
    parser.add_argument("--seeds", default=None,
                        help="seeds of Table 1 and the timing for every data set "
                             "(default per data set: " + "; ".join(
                                 f"{d} " + ",".join(map(str, v))
                                 for d, v in FULL["seeds"].items())
                             + "); the curves use the first")
    parser.add_argument("--trees", type=int, default=None,
                        help=f"trees per run (default {N_TREES})")
    add_data_arguments(parser, FULL["n_rows"], valid=True)
    parser.add_argument("--output", default=None,
                        help="Markdown output (default benchmarks/results/budget_rf.md; "
                             "with --quick /tmp/budget_rf_quick.md); .json and .png go "
                             "next to it")
    parser.add_argument("--quick", action="store_true",
                        help=f"smoke run: {QUICK['train_rows']:,} / {QUICK['valid_rows']:,} "
                             f"/ {QUICK['test_rows']:,} rows, {QUICK['n_rows']:,} synthetic "
                             f"rows, {QUICK['trees']} trees, alphas "
                             + ",".join(f"{a:g}" for a in QUICK["alphas"]) + ", seed 0")
    add_run_arguments(parser)
    parser.add_argument("--alpha", default="0", help=argparse.SUPPRESS)
    parser.add_argument("--path-free", default="0", help=argparse.SUPPRESS)
    parser.add_argument("--seed", default="0", help=argparse.SUPPRESS)
    parser.add_argument("--verify-budget", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child and args.trees is None:
        args.trees = N_TREES
    mode = special_mode(args, run_child, render_from)
    if mode is not None:
        return mode

    if args.quick:
        for key in ("n_rows", "train_rows", "valid_rows", "test_rows"):
            setattr(args, key, getattr(args, key) or QUICK[key])
    names = parse_choices(parser, args.datasets, COST_DATASETS, "data set")
    trees = args.trees or (QUICK["trees"] if args.quick else N_TREES)
    if trees < 1:
        parser.error("--trees must be >= 1")
    if args.seeds:
        given = [int(v) for v in args.seeds.split(",") if v.strip()]
        seeds = {d: given for d in names}
    else:
        seeds = {d: list(QUICK["seeds"] if args.quick else FULL["seeds"][d]) for d in names}
    if not all(seeds.values()):
        parser.error("--seeds needs at least one seed")
    if args.alphas:
        grid = parse_lambdas(args.alphas)
        alphas = {d: grid for d in names}
    else:
        alphas = {d: list(QUICK["alphas"] if args.quick else FULL["alphas"][d])
                  for d in names}
    output = Path(args.output) if args.output else (
        Path("/tmp/budget_rf_quick.md") if args.quick
        else REPO / "benchmarks" / "results" / "budget_rf.md")
    output.parent.mkdir(parents=True, exist_ok=True)
    command = command_line()
    info = machine_info(libraries=("sklearn",))
    log = sys.stderr
    print(f"# {command}", file=log, flush=True)
    jobs = build_jobs(names, alphas, seeds, trees, args)
    extra = {"threads": args.threads, "trees": trees, "seeds": seeds,
             "alphas": alphas}
    t_start = time.perf_counter()
    results = run_jobs(
        jobs, lambda job: launch_child(job, args, log), args, log,
        lambda res: write_json(output, command, info, res, time.perf_counter() - t_start,
                               args.quick, **extra),
        lambda r: (f"train {r['train_s']:.2f} s, eval {r['eval_s']:.1f} s, "
                   f"{r['mean_nodes']:,.0f} nodes/tree, test error after {r['n_trees']} "
                   f"trees {r['curves']['test']['error'][-1]:.4f}, features per input "
                   f"{r['curves']['test']['mean_features'][-1]:.1f}, mean cost "
                   f"{r['curves']['test']['mean_cost'][-1]:,.1f}"))
    wall = time.perf_counter() - t_start
    write_json(output, command, info, results, wall, args.quick, **extra)
    png = _finish(results, output, info, command, wall, args.quick, args.threads, trees,
                  seeds)
    return finish_run(output, png, wall, log, results)


def render_from(path, output=None):
    """Re-render the Markdown (and the plot) of an earlier run from its raw JSON."""
    doc = json.loads(path.read_text())
    output = Path(output) if output else path.with_suffix(".md")
    text, curves = render(doc["results"], doc["machine"], doc["command"], doc["wall_s"],
                          doc.get("quick"), doc.get("threads", 2), doc["trees"],
                          doc["seeds"])
    png = plot(doc["results"], curves, output.with_suffix(".png"),
               " - smoke run (--quick)" if doc.get("quick") else "")
    return write_rerendered(text, path, output, png,
                            "test error vs mean test cost, log axis; BudgetRF alpha-selected "
                            "curves, RF by number of trees")


if __name__ == "__main__":
    sys.exit(main())
