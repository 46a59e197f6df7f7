"""BudgetRF benchmark: the paper's Table 1 and accuracy-vs-budget curves against RF.

BudgetRF (cbudget's defaults, the paper's settings; ``path_free`` False and True) against
scikit-learn random forests (Gini, entropy; sqrt and all features per split). Every run
trains 40 trees once: fewer trees are its prefixes, a budget B the longest prefix within
B on validation (checked once per data set by training with ``"budget": B``). The
leaf-path costs must equal ``predict_cost``, ``cost_report`` and ``acquisitions``.
Protocol, sizes, options: benchmarks/README.md.
"""
import sys
import time

import harness as h
import numpy as np

NAME = "budget_rf"
TITLE = ("BudgetRF benchmark: Table 1 and accuracy vs budget (vs scikit-learn random "
         "forests)")
DATASETS = h.COST_DATASETS
INFO_LIBRARIES = ("sklearn",)
IDENT = ("method", "dataset", "alpha", "path_free", "seed")
QUICK_OUTPUT = "/tmp/budget_rf_quick.md"
METHODS = ("budget_rf", "rf_gini", "rf_entropy", "rf_gini_all")
METHOD_LABELS = {"budget_rf": "BudgetRF", "rf_gini": "RF(Gini)", "rf_entropy": "RF(entropy)",
                 "rf_gini_all": "RF(Gini, all features)"}
ALPHAS = (0.0, 2.0, 4.0, 6.0, 8.0, 10.0, 15.0, 25.0, 35.0, 45.0)  # the paper's grid
N_TREES = 40
TABLE_TREES = (1, 10, 20, 40)
N_BUDGETS = 30  # budgets of the accuracy-vs-budget grid
VERIFY_TREES = 10  # the budget check: a budget between the costs of 10 and 11 trees
RF_K = (1, 2, 3, 5, 10, 20, 40)  # RF points of the equal-cost table
# the full run's sizes (see benchmarks/README.md)
FULL = {"seeds": {"letters": (0, 1, 2, 3, 4), "mnist_multires": (0, 1),
                  "synthetic_costly": (0, 1, 2)}, "n_rows": 100_000,
        "train_rows": {"letters": None, "mnist_multires": 10_000, "synthetic_costly": None}}
QUICK = {"seeds": (0,), "n_rows": 10_000, "train_rows": 1500, "valid_rows": 500,
         "test_rows": 500, "alphas": (0.0, 10.0, 45.0), "trees": 12}
QUICK_HELP = ("1,500 / 500 / 500 rows, 10,000 synthetic rows, 12 trees, alphas 0,10,45, "
              "seed 0")


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
    """scikit-learn RandomForestClassifier arguments (Matlab TreeBagger's defaults)."""
    return {"n_estimators": int(n_trees), "criterion": criterion, "max_features": max_features,
            "bootstrap": True, "min_samples_leaf": 1, "n_jobs": n_threads,
            "random_state": int(seed)}


def add_arguments(parser):
    parser.add_argument("--alphas", default=None,
                        help="BudgetRF alpha grid (default the paper's "
                             + ",".join(f"{a:g}" for a in ALPHAS) + ")")
    parser.add_argument("--seeds", default=None,
                        help="seeds of Table 1 and the timing (default per data set: "
                             + "; ".join(f"{d} " + ",".join(map(str, v))
                                         for d, v in FULL["seeds"].items())
                             + "); the curves use the first")
    parser.add_argument("--trees", type=int, default=None,
                        help=f"trees per run (default {N_TREES})")
    h.add_row_arguments(parser, ("train", "valid", "test"), FULL["n_rows"])


def plan(args, names):
    """Per data set: for each seed RF(Gini), RF(entropy), BudgetRF alpha 0 with both
    path_free (Table 1, timing; RF(Gini, all features) with the first seed), then the
    rest of the alpha grid with the first seed; the budget check runs in the first
    BudgetRF child of a data set."""
    trees = args.trees or (QUICK["trees"] if args.quick else N_TREES)
    if trees < 1:
        raise ValueError("--trees must be >= 1")
    if args.seeds:
        seeds = {d: [int(v) for v in args.seeds.split(",") if v.strip()] for d in names}
    else:
        seeds = {d: list(QUICK["seeds"] if args.quick else FULL["seeds"][d]) for d in names}
    if not all(seeds.values()):
        raise ValueError("--seeds needs at least one seed")
    alphas = {d: (h.parse_values(args.alphas) if args.alphas
                  else list(QUICK["alphas"] if args.quick else ALPHAS)) for d in names}
    jobs = []
    for d in names:
        common = {"dataset": d, "trees": trees, "threads": args.threads,
                  "n_rows": args.n_rows or (FULL["n_rows"] if d == "synthetic_costly" else None),
                  "train_rows": args.train_rows or FULL["train_rows"].get(d),
                  "valid_rows": args.valid_rows, "test_rows": args.test_rows}
        todo = []
        for seed in seeds[d]:
            todo += [("rf_gini", None, None, seed), ("rf_entropy", None, None, seed),
                     ("budget_rf", 0.0, False, seed), ("budget_rf", 0.0, True, seed)]
            if seed == seeds[d][0]:
                todo.append(("rf_gini_all", None, None, seed))
        todo += [("budget_rf", a, pf, seeds[d][0]) for a in alphas[d] if a != 0.0
                 for pf in (False, True)]
        first = True
        for method, alpha, pf, seed in todo:
            spec = dict(common, method=method, alpha=alpha, path_free=pf, seed=seed,
                        verify_budget=method == "budget_rf" and first and not pf)
            first = first and not spec["verify_budget"]
            jobs.append((d, f"{d} / {point_label(spec)} / {trees} trees", spec))
    return jobs, {"threads": args.threads, "trees": trees, "seeds": seeds, "alphas": alphas}


# ------------------------------------------------------------------------- child
def staged_costs(leaf_paths, leaves, costs):
    """Per tree count k: mean cost and features acquired per input; the CostTrace states
    (per-input cost, acquired bits) after the trees of ``TABLE_TREES`` and the last."""
    tables = h.PathTables(leaf_paths, costs.shape[0])
    trace = h.CostTrace(tables, costs, leaves.shape[0])
    mean_cost, mean_feat, kept = [], [], {}
    for t in range(leaves.shape[1]):
        trace.add_trees(leaves[:, t:t + 1], t)
        mean_cost.append(float(trace.cost.mean()))
        mean_feat.append(float(trace.n_acquired.mean()))
        if t + 1 in TABLE_TREES or t + 1 == leaves.shape[1]:
            kept[t + 1] = (trace.cost.copy(), trace.acquired.copy())
    return mean_cost, mean_feat, kept, tables


def cbudget_curves(forest, X, y, costs):
    """Staged majority vote (ties to the lower class), checked against ``predict`` after
    the trees of ``TABLE_TREES``, and the staged costs."""
    leaves = np.asarray(forest.predict(X, pred_leaf=True), dtype=np.int64)
    votes = np.zeros((X.shape[0], forest.num_class))
    rows, err = np.arange(X.shape[0]), []
    for t in range(forest.num_trees()):
        votes[rows, forest.trees[t]["value"][leaves[:, t]].astype(np.int64)] += 1
        pred = np.argmax(votes, axis=1)
        err.append(float(np.mean(pred != y)))
        if (t + 1 in TABLE_TREES or t + 1 == forest.num_trees()) and not np.array_equal(
                pred, forest.predict(X, iteration_range=(0, t + 1))):
            raise AssertionError(f"staged vote after {t + 1} trees differs from predict")
    paths = [h.cbudget_leaf_paths(tree) for tree in forest.trees]
    return (err, *staged_costs(paths, leaves, costs))


def sklearn_curves(rf, X, y, costs):
    """Staged soft vote (scikit-learn averages the trees' probabilities) and costs."""
    proba, err = np.zeros((X.shape[0], rf.n_classes_)), []
    for est in rf.estimators_:
        proba += est.predict_proba(X)
        err.append(float(np.mean(rf.classes_[np.argmax(proba, axis=1)] != y)))
    if not np.array_equal(rf.classes_[np.argmax(proba, axis=1)], rf.predict(X)):
        raise AssertionError("the staged vote of all trees differs from rf.predict")
    leaves = np.column_stack([est.apply(X) for est in rf.estimators_]).astype(np.int64)
    paths = [h.sklearn_leaf_paths(est.tree_) for est in rf.estimators_]
    return (err, *staged_costs(paths, leaves, costs))


def check_cbudget(forest, X, kept, costs):
    """The leaf-path accounting against cbudget's after the kept tree counts: per-input
    costs (``predict_cost``), acquisition rates (``cost_report``) and acquired-feature
    sets (``acquisitions``); AssertionError on a difference."""
    out = {"trees_checked": sorted(kept), "max_abs_cost_diff": 0.0,
           "max_abs_rate_diff": 0.0, "per_input_sets": True}
    for k, (cost, acquired) in sorted(kept.items()):
        own = forest.predict_cost(X, iteration_range=(0, k))
        diff = float(np.max(np.abs(own - cost))) if cost.size else 0.0
        out["max_abs_cost_diff"] = max(out["max_abs_cost_diff"], diff)
        if not np.allclose(own, cost, rtol=h.COST_CHECK_TOL, atol=h.COST_CHECK_TOL):
            raise AssertionError(f"per-input costs after {k} trees differ from "
                                 f"predict_cost (max |diff| {diff})")
        bits = h.bits_matrix(acquired, costs.shape[0])
        rate = np.asarray(forest.cost_report(X, iteration_range=(0, k)).acquisition_rate)
        rdiff = float(np.max(np.abs(rate - bits.mean(axis=0))))
        out["max_abs_rate_diff"] = max(out["max_abs_rate_diff"], rdiff)
        if rdiff > 1e-12:
            raise AssertionError(f"acquisition rates after {k} trees differ from "
                                 f"cost_report (max |diff| {rdiff})")
        if not np.array_equal(forest.acquisitions(X, iteration_range=(0, k)), bits):
            raise AssertionError(f"acquired feature sets after {k} trees differ")
    return out


def verify_budget(forest, dtrain, data, params, valid_cost):
    """Train again with a budget between the validation costs of about VERIFY_TREES and
    one more tree and compare with that prefix of the forest."""
    import cbudget
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
    X, prefix = data["X_test"], forest[:k0]
    same_size = budgeted.num_trees() == k0
    same_trees = same_size and all(
        np.array_equal(a[f], b[f]) for a, b in zip(budgeted.trees, prefix.trees, strict=True)
        for f in ("left", "right", "feature", "threshold"))
    same_pred = (same_size and np.array_equal(budgeted.predict(X), prefix.predict(X))
                 and np.array_equal(budgeted.predict_proba(X), prefix.predict_proba(X)))
    return {"budget": budget, "expected_trees": k0, "trees": budgeted.num_trees(),
            "same_trees": bool(same_trees), "same_predictions": bool(same_pred),
            "train_s": t}


def run_point(spec):
    """Train and measure one (method, data set, alpha, path_free, seed)."""
    from sklearn.ensemble import RandomForestClassifier
    method, name = spec["method"], spec["dataset"]
    library = "cbudget" if method == "budget_rf" else "sklearn"
    version, location = h.library_version(library)
    data, t_load, rss_after_load = h.load_for_child(name, spec, keep_valid=True)
    costs = np.asarray(data["feature_costs"], dtype=np.float64)
    n_classes, n_trees, seed = int(data["n_classes"]), int(spec["trees"]), int(spec["seed"])
    if library == "cbudget":
        params = budget_rf_params(n_classes, spec["alpha"], spec["path_free"], seed, n_trees,
                                  spec["threads"])
        (model, _, _, dtrain), timing = h.timed_training(
            h.train_cbudget_timed, data, params, n_trees, feature_names=data["feature_names"],
            feature_costs=data["feature_costs"])
        curves, n_nodes = cbudget_curves, [len(tree) for tree in model.trees]
    else:
        params = rf_params(method.split("_")[1], seed, n_trees, spec["threads"],
                           None if method.endswith("_all") else "sqrt")

        def trainer(data, params, n_rounds, clock):  # the whole fit is one "round"
            clock.start()
            rf = RandomForestClassifier(**params).fit(data["X_train"], data["y_train"])
            clock.tick()
            return rf, 0.0, clock.since_start()

        (model, _, _), timing = h.timed_training(trainer, data, params, 1)
        curves = sklearn_curves
        n_nodes = [int(est.tree_.node_count) for est in model.estimators_]
    with h.Timer() as t_eval:
        majority = int(np.bincount(np.asarray(data["y_train"])).argmax())
        out = {}
        for part in ("valid", "test"):
            X, y = data[f"X_{part}"], np.asarray(data[f"y_{part}"])
            err, mean_cost, mean_feat, kept, tables = curves(model, X, y, costs)
            out[part] = {"error": err, "mean_cost": mean_cost, "mean_features": mean_feat,
                         "prior_error": float(np.mean(y != majority))}
    cbudget_run = library == "cbudget"
    result = {
        "method": method, "library": library, "version": version, "location": location,
        "dataset": name, "alpha": float(spec["alpha"]) if cbudget_run else None,
        "path_free": bool(spec["path_free"]) if cbudget_run else None, "seed": seed,
        "n_train": int(data["X_train"].shape[0]), "n_valid": int(data["X_valid"].shape[0]),
        "n_test": int(data["X_test"].shape[0]), "n_features": int(costs.shape[0]),
        "n_classes": n_classes, "n_trees": n_trees,
        "params": {k: (list(v) if isinstance(v, tuple) else v) for k, v in params.items()},
        "load_s": t_load, **timing, "train_total_s": timing["train_s"],
        "n_threads": spec["threads"], "full_cost": float(costs.sum()),
        "heterogeneous_costs": bool(np.unique(costs).size > 1),
        "mean_nodes": float(np.mean(n_nodes)), "max_depth": int(tables.depths.max()),
        "curves": out, "eval_s": t_eval.wall, "rss_after_load_mb": rss_after_load / 2**20}
    if cbudget_run:
        result["checks"] = check_cbudget(model, data["X_test"], kept, costs)
        if spec["verify_budget"]:
            result["budget_check"] = verify_budget(model, dtrain, data, params,
                                                   out["valid"]["mean_cost"])
    result["peak_rss_mb"] = h.maxrss_bytes() / 2**20
    return result


# ------------------------------------------------------------------- aggregation
def point_label(r):
    """``BudgetRF alpha=0 path_free=False seed 0`` / ``RF(Gini) seed 0``."""
    if r["method"] == "budget_rf":
        return f"BudgetRF alpha={r['alpha']:g} path_free={r['path_free']} seed {r['seed']}"
    return f"{METHOD_LABELS[r['method']]} seed {r['seed']}"


def _ms(values, spec):
    """mean ± std (ddof 1; the mean alone for one value)."""
    v = np.asarray(values, dtype=np.float64)
    return format(float(v.mean()), spec) + (" ± " + format(float(v.std(ddof=1)), spec)
                                            if v.size > 1 else "")


TABLE1_ROWS = (("rf_gini", None, "RF(Gini)"), ("rf_entropy", None, "RF(entropy)"),
               ("rf_gini_all", None, "RF(Gini, all features per split)"),
               ("budget_rf", False, "BudgetRF (alpha 0, path_free False: the paper's)"),
               ("budget_rf", True, "BudgetRF (alpha 0, path_free True)"))


def _table1_runs(ok, method, pf):
    return [r for r in ok if r["method"] == method
            and (method != "budget_rf" or (r["alpha"] == 0.0 and r["path_free"] == pf))]


def table1(ok, cost_pct=False):
    """The paper's Table 1: % of the features used per test input (test error) after k
    trees, mean ± std over the seeds; ``cost_pct``: mean cost as % of all costs."""
    cols = [k for k in TABLE_TREES if k <= ok[0]["n_trees"]] or [ok[0]["n_trees"]]
    what = ("mean cost per test input, % of the sum of all feature costs" if cost_pct
            else "% of the features used per test input")
    rows = []
    for method, pf, label in TABLE1_ROWS:
        runs = _table1_runs(ok, method, pf)
        if runs:
            rows.append([label, len(runs)] + [
                _ms([100 * (r["curves"]["test"]["mean_cost"][k - 1] / r["full_cost"]
                            if cost_pct else
                            r["curves"]["test"]["mean_features"][k - 1] / r["n_features"])
                     for r in runs], ".2f")
                + f" ({_ms([r['curves']['test']['error'][k - 1] for r in runs], '.4f')})"
                for k in cols])
    return h.table([f"method ({what}; test error)", "seeds"]
                   + [f"{k} tree{'s' if k > 1 else ''}" for k in cols], rows,
                   "l" + "r" * (1 + len(cols)))


def prefix_point(r, budget):
    """The longest prefix of run ``r`` whose validation mean cost is <= ``budget`` (k = 0:
    no tree, the training prior, cost 0)."""
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


def curve_data(ok):
    """The first seed's curves of one data set: budgets (0 and a geometric grid over the
    validation costs), per path_free the alpha-selected curve (best validation accuracy
    per budget; ties: lower validation cost, smaller alpha), RF points by trees."""
    seed = min(r["seed"] for r in ok)
    brf = [r for r in ok if r["method"] == "budget_rf" and r["seed"] == seed]
    if not brf:
        return None
    positive = ([c for r in brf if (c := r["curves"]["valid"]["mean_cost"][0]) > 0]
                or [c for r in brf for c in r["curves"]["valid"]["mean_cost"] if c > 0]
                or [1.0])
    low, high = min(positive), max(r["curves"]["valid"]["mean_cost"][-1] for r in brf)
    budgets = [0.0] + np.unique(np.geomspace(low, max(high, low), N_BUDGETS)).tolist()
    out = {"seed": seed, "budgets": budgets, "selected": {}, "alphas": {}, "rf": {}}
    for pf in (False, True):
        runs = sorted((r for r in brf if r["path_free"] == pf), key=lambda r: r["alpha"])
        if runs:
            out["alphas"][pf] = [r["alpha"] for r in runs]
            out["selected"][pf] = [dict(min((prefix_point(r, b) for r in runs), key=lambda p: (
                p["valid_error"], p["valid_cost"], p["alpha"])), budget=b) for b in budgets]
    for m in ("rf_gini", "rf_entropy", "rf_gini_all"):
        r = next((r for r in ok if r["method"] == m and r["seed"] == seed), None)
        if r:
            t = r["curves"]["test"]
            out["rf"][m] = [{"k": k + 1, "error": e, "accuracy": 1 - e, "mean_cost": c,
                             "mean_features": f} for k, (e, c, f) in enumerate(
                                 zip(t["error"], t["mean_cost"], t["mean_features"],
                                     strict=True))]
    return out


def equal_cost_tables(cd, cost_name):
    """BudgetRF (alpha-selected, each path_free) at RF's points of ``RF_K`` trees, and
    its cheapest point with an error at most RF's."""
    def cheapest(sel, g):
        ok = [p for p in sel if p["error"] <= g["error"] + 1e-12]
        c = min(ok, key=lambda p: p["mean_cost"]) if ok else None
        return (f"{c['mean_cost']:,.2f} ({100 * c['mean_cost'] / max(g['mean_cost'], 1e-12):.3g}%)"
                if c else "none")
    lines = []
    for m, rf in cd["rf"].items():
        for pf, sel in cd["selected"].items():
            lines += [f"{METHOD_LABELS[m]} vs BudgetRF path_free={pf}:", ""]
            lines += h.comparison_table(
                sel, [p for p in rf if p["k"] in RF_K], (METHOD_LABELS[m], "BudgetRF",
                                                         cost_name, "test error"),
                lambda p: f"alpha={p['alpha']:g} / {p['k']} trees" if "alpha" in p
                else f"{p['k']} trees", shown="error",
                extra=[(f"cheapest BudgetRF with error <= RF's: {cost_name} (% of RF's)", "l",
                        lambda d, sel=sel: cheapest(sel, d["reference"]))]) + [""]
    return lines


def path_free_table(cd, cost_name):
    """The two alpha-selected curves at the same validation budgets (one in
    len / 12 shown), True's curve read at False's test cost."""
    sf, st = cd["selected"].get(False), cd["selected"].get(True)
    if not (sf and st):
        return []
    step, rows = max(1, len(sf) // 12), []
    for i, (a, b) in enumerate(zip(sf, st, strict=True)):
        if i % step and i != len(sf) - 1:
            continue
        curve = h.interpolated_accuracy(st, a["mean_cost"])
        rows.append([f"{a['budget']:,.3g}",
                     f"{a['alpha']:g} / {a['k']} / {a['mean_cost']:,.2f} / {a['error']:.4f}",
                     f"{b['alpha']:g} / {b['k']} / {b['mean_cost']:,.2f} / {b['error']:.4f}"]
                    + ([f"{1 - curve:.4f}", f"{(1 - curve) - a['error']:+.4f}"]
                       if curve is not None else ["", ""]))
    return h.table(["budget B (valid)",
                    f"path_free False: alpha / trees / test {cost_name} / test error",
                    f"path_free True: alpha / trees / test {cost_name} / test error",
                    "True's curve at False's cost", "difference True - False"],
                   rows, "rllrr")


def timing_table(doc):
    rows = []
    for name, results in doc["results"].items():
        ok = h.ok_results(results)
        if not ok:
            continue
        t = {key: [r["train_s"] for r in _table1_runs(ok, method, pf)] for key, method, pf in (
            ("bf", "budget_rf", False), ("bt", "budget_rf", True), ("g", "rf_gini", None),
            ("e", "rf_entropy", None), ("a", "rf_gini_all", None))}
        rows.append([h.DATASET_TITLES.get(name, name).split(" (")[0], f"{ok[0]['n_train']:,}"]
                    + [_ms(t[k], ".2f") if t[k] else "n/a" for k in ("bf", "bt", "g", "e", "a")]
                    + [f"{np.mean(t['bf']) / np.mean(t[k]):.2f}" if t["bf"] and t[k] else "n/a"
                       for k in ("g", "e", "a")]
                    + [f"{np.mean(t['bf']) / ok[0]['n_trees']:.3f}" if t["bf"] else "n/a"])
    return h.table(["data set", "train rows", "BudgetRF path_free False s",
                    "BudgetRF path_free True s", "RF(Gini) s", "RF(entropy) s",
                    "RF(Gini, all features) s", "BudgetRF / RF(Gini)", "BudgetRF / RF(entropy)",
                    "BudgetRF / RF(Gini, all features)", "BudgetRF s per tree (2 threads)"],
                   rows, "l" + "r" * 10)


def render(doc):
    lines = ["## Training time", "",
             f"{doc['trees']} trees, {doc['threads']} threads, mean ± std over the seeds:", ""]
    lines += timing_table(doc) + [""]
    for name, results in doc["results"].items():
        ok = h.ok_results(results)
        if not ok:
            lines += [f"### {h.DATASET_TITLES.get(name, name)}", ""]
            continue
        first = ok[0]
        lines += [(f"### {h.DATASET_TITLES.get(name, name)}: {first['n_train']:,} train / "
                  f"{first['n_valid']:,} valid / {first['n_test']:,} test rows, "
                  f"{first['n_features']} features (sum of costs {first['full_cost']:,.0f})"),
                  "", "Table 1 (the paper's), mean ± std over the seeds:", ""]
        lines += table1(ok) + [""]
        if first["heterogeneous_costs"]:
            lines += table1(ok, cost_pct=True) + [""]
        cd = curve_data(ok)
        cost_name = "mean cost" if first["heterogeneous_costs"] else "mean features"
        if cd:
            lines += [f"Accuracy vs budget (seed {cd['seed']}; alphas "
                      + ", ".join(f"{a:g}" for a in cd["alphas"].get(False, []))
                      + "): the alpha-selected BudgetRF curves at RF's points:", ""]
            lines += equal_cost_tables(cd, cost_name)
            pft = path_free_table(cd, cost_name)
            if pft:
                lines += ["path_free False vs True (alpha chosen on validation per budget):",
                          ""] + pft + [""]
    return lines


PLOT_STYLE = {False: ("o-", "tab:red", "BudgetRF path_free=False (alpha on valid)"),
              True: ("s-", "tab:orange", "BudgetRF path_free=True (alpha on valid)"),
              "rf_gini": ("^-", "tab:blue", "RF(Gini), 1..40 trees"),
              "rf_entropy": ("v-", "tab:green", "RF(entropy), 1..40 trees"),
              "rf_gini_all": ("x:", "tab:gray", "RF(Gini, all features), 1..40 trees")}


def plot(doc, path):
    def draw(ax, name, plt):
        cd = curve_data(h.ok_results(doc["results"][name]))
        lines = [(pf, [p for p in sel if p["k"] > 0]) for pf, sel in cd["selected"].items()]
        for key, pts in lines + list(cd["rf"].items()):
            style, color, label = PLOT_STYLE[key]
            pts = [dict(zip(("mean_cost", "error"), c, strict=True))
                   for c in sorted({(p["mean_cost"], p["error"]) for p in pts})]
            h.curve(ax, pts, "mean_cost", "error", style, color=color, label=label, markersize=3)
        h.finish_axis(ax, "mean test cost per input (= features acquired when costs are 1)",
                      "test error", h.DATASET_TITLES.get(name, name).split(" (")[0],
                      xscale="log", legend_size=7, legend_loc="upper right")
    return h.plot_panels(path, doc, [n for n, rs in doc["results"].items()
                                     if h.ok_results(rs) and curve_data(h.ok_results(rs))],
                         draw, "BudgetRF vs random forests: test error vs mean test cost",
                         "test error vs mean test cost, log axis; BudgetRF alpha-selected "
                         "curves, RF by number of trees", (5.6, 4.4))


if __name__ == "__main__":
    sys.exit(h.main(sys.modules[__name__]))
