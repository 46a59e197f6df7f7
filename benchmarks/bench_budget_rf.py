"""BudgetRF benchmark: Table 1 and accuracy vs budget (vs scikit-learn random forests).

Every run trains all trees once: fewer trees are its prefixes, a budget B the longest
prefix within B on validation. Protocol: benchmarks/README.md.
"""
import sys

import harness as h
import numpy as np

DATASETS = h.COST_DATASETS
IDENT = ("method", "dataset", "alpha", "path_free", "seed")
METHOD_LABELS = {"budget_rf": "BudgetRF", "rf_gini": "RF(Gini)", "rf_entropy": "RF(entropy)",
                 "rf_gini_all": "RF(Gini, all features)"}
TABLE_TREES = (1, 10, 20, 40)
N_BUDGETS = 30  # budgets of the accuracy-vs-budget grid
VERIFY_TREES = 10  # the budget check: a budget between the costs of 10 and 11 trees
RF_K = (1, 2, 3, 5, 10, 20, 40)  # RF points of the equal-cost table
ROWS, SYNTHETIC_ROWS = ("train", "valid", "test"), 100_000
# the full run (see benchmarks/README.md); alphas: the paper's grid; seeds: of Table 1 and
# the timing (the curves use the first)
FULL = {"alphas": (0.0, 2.0, 4.0, 6.0, 8.0, 10.0, 15.0, 25.0, 35.0, 45.0), "trees": 40,
        "seeds": {"letters": (0, 1, 2, 3, 4), "mnist_multires": (0, 1),
                  "synthetic_costly": (0, 1, 2)},
        "train_rows": {"letters": None, "mnist_multires": 10_000, "synthetic_costly": None}}
QUICK = {"seeds": (0,), "n_rows": 10_000, "train_rows": 1500, "valid_rows": 500,
         "test_rows": 500, "alphas": (0.0, 10.0, 45.0), "trees": 12}


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


def plan(args, names):
    """Per data set and seed RF(Gini), RF(entropy), BudgetRF alpha 0 (both path_free), then
    with the first seed RF(Gini, all features) and the alpha grid (and the budget check)."""
    trees = h.setting(args, "trees")
    seeds = {d: h.setting(args, "seeds", d) for d in names}
    alphas = {d: h.setting(args, "alphas", d) for d in names}
    jobs = []
    for d in names:
        common = {"dataset": d, "trees": trees, "threads": args.threads,
                  "n_rows": args.n_rows or (SYNTHETIC_ROWS if d == "synthetic_costly" else None),
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
            label = (f"BudgetRF alpha={alpha:g} path_free={pf}" if method == "budget_rf"
                     else METHOD_LABELS[method])
            jobs.append((d, f"{d} / {label} seed {seed} / {trees} trees", spec))
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
    """The leaf-path accounting after the kept tree counts against ``harness.check_costs``
    and ``acquisitions``; AssertionError on a difference."""
    out = {"trees_checked": sorted(kept), "max_abs_cost_diff": 0.0,
           "max_abs_rate_diff": 0.0, "per_input_sets": True}
    for k, (cost, acquired) in sorted(kept.items()):
        bits = h.bits_matrix(acquired, costs.shape[0])
        for key, diff in h.check_costs(forest, X, cost, bits, iteration_range=(0, k)).items():
            out[key] = max(out[key], diff)
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
    with h.Timer() as t:
        budgeted = cbudget.train(dict(params, budget=budget), dtrain, evals=[(dvalid, "valid")],
                                 verbose_eval=False)
    X, prefix = data["X_test"], forest[:k0]
    same_size = budgeted.num_trees() == k0
    same_trees = same_size and all(
        np.array_equal(a[f], b[f]) for a, b in zip(budgeted.trees, prefix.trees, strict=True)
        for f in ("left", "right", "feature", "threshold"))
    same_pred = (same_size and np.array_equal(budgeted.predict(X), prefix.predict(X))
                 and np.array_equal(budgeted.predict_proba(X), prefix.predict_proba(X)))
    return {"budget": budget, "expected_trees": k0, "trees": budgeted.num_trees(),
            "same_trees": bool(same_trees), "same_predictions": bool(same_pred), "train_s": t.wall}


def run_point(spec):
    """Train and measure one (method, data set, alpha, path_free, seed)."""
    from sklearn.ensemble import RandomForestClassifier
    method = spec["method"]
    library = "cbudget" if method == "budget_rf" else "sklearn"
    data, result = h.start_child(spec, library, keep_valid=True)
    costs = data["feature_costs"]
    n_classes, n_trees, seed = int(data["n_classes"]), int(spec["trees"]), int(spec["seed"])
    if library == "cbudget":
        params = budget_rf_params(n_classes, spec["alpha"], spec["path_free"], seed, n_trees,
                                  spec["threads"])
        (model, _, _, dtrain), timing = h.timed_training(
            h.train_cbudget_timed, data, params, n_trees, feature_names=data["feature_names"],
            feature_costs=costs)
        curves, n_nodes = cbudget_curves, [len(tree) for tree in model.trees]
    else:
        params = {"n_estimators": n_trees, "criterion": method.split("_")[1],  # TreeBagger's
                  "max_features": None if method.endswith("_all") else "sqrt",  # defaults
                  "bootstrap": True, "min_samples_leaf": 1, "n_jobs": spec["threads"],
                  "random_state": seed}

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
    result.update({
        "method": method, "alpha": float(spec["alpha"]) if cbudget_run else None,
        "path_free": bool(spec["path_free"]) if cbudget_run else None, "seed": seed,
        "n_trees": n_trees,
        "params": {k: (list(v) if isinstance(v, tuple) else v) for k, v in params.items()},
        **timing, "train_total_s": timing["train_s"], "full_cost": float(costs.sum()),
        "heterogeneous_costs": bool(np.unique(costs).size > 1),
        "mean_nodes": float(np.mean(n_nodes)), "max_depth": int(tables.depths.max()),
        "curves": out, "eval_s": t_eval.wall})
    if cbudget_run:
        result["checks"] = check_cbudget(model, data["X_test"], kept, costs)
        if spec["verify_budget"]:
            result["budget_check"] = verify_budget(model, dtrain, data, params,
                                                   out["valid"]["mean_cost"])
    return result


# ------------------------------------------------------------------- aggregation
def _ms(values, spec):
    """mean ± std (ddof 1; the mean alone for one value)."""
    v = np.asarray(values, dtype=np.float64)
    return format(float(v.mean()), spec) + (" ± " + format(float(v.std(ddof=1)), spec)
                                            if v.size > 1 else "")


TABLE1_ROWS = (("rf_gini", None, "RF(Gini)"), ("rf_entropy", None, "RF(entropy)"),
               ("rf_gini_all", None, "RF(Gini, all features per split)"),
               ("budget_rf", False, "BudgetRF (alpha 0, path_free False: the paper's)"),
               ("budget_rf", True, "BudgetRF (alpha 0, path_free True)"))


def table1(ok, cost_pct=False):
    """The paper's Table 1 (``cost_pct``: mean cost as % of all costs instead of features)
    and the training seconds, mean ± std over the seeds."""
    cols = [k for k in TABLE_TREES if k <= ok[0]["n_trees"]] or [ok[0]["n_trees"]]
    what = ("mean cost per test input, % of the sum of all feature costs" if cost_pct
            else "% of the features used per test input")
    rows = []
    for method, pf, label in TABLE1_ROWS:
        runs = [r for r in ok if r["method"] == method
                and (method != "budget_rf" or (r["alpha"] == 0.0 and r["path_free"] == pf))]
        if runs:
            rows.append([label, len(runs)] + [
                _ms([100 * (r["curves"]["test"]["mean_cost"][k - 1] / r["full_cost"]
                            if cost_pct else
                            r["curves"]["test"]["mean_features"][k - 1] / r["n_features"])
                     for r in runs], ".2f")
                + f" ({_ms([r['curves']['test']['error'][k - 1] for r in runs], '.4f')})"
                for k in cols] + [_ms([r["train_s"] for r in runs], ".2f")])
    return h.table([f"method ({what}; test error)", "seeds"]
                   + [f"{k} tree{'s' if k > 1 else ''}" for k in cols]
                   + [f"train s ({ok[0]['n_trees']} trees, {ok[0]['n_threads']} threads)"], rows,
                   "l" + "r" * (2 + len(cols)))


def prefix_point(r, budget):
    """The longest prefix of run ``r`` whose validation mean cost is <= ``budget`` (k = 0:
    no tree, the training prior, cost 0)."""
    vc = r["curves"]["valid"]["mean_cost"]
    k = 0
    while k < len(vc) and vc[k] <= budget * (1 + 1e-12):
        k += 1
    v, t = r["curves"]["valid"], r["curves"]["test"]
    error = ([t["prior_error"]] + t["error"])[k]
    return {"k": k, "alpha": r["alpha"], "valid_error": ([v["prior_error"]] + v["error"])[k],
            "valid_cost": ([0.0] + vc)[k], "error": error,
            "mean_cost": ([0.0] + t["mean_cost"])[k],
            "mean_features": ([0.0] + t["mean_features"])[k], "accuracy": 1 - error}


def curve_data(ok):
    """The first seed's budgets, per path_free the alpha-selected curve (best validation
    accuracy per budget; ties: lower validation cost, smaller alpha), RF by trees."""
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
                extra=[(f"cheapest BudgetRF with error <= RF's: {cost_name} (% of RF's)",
                        lambda g, sel=sel: cheapest(sel, g))]) + [""]
    return lines


def render(doc):
    lines = []
    for name, results in doc["results"].items():
        ok = h.ok_results(results)
        if not ok:
            lines += [f"### {h.title(name)}", ""]
            continue
        first = ok[0]
        lines += [(f"### {h.title(name)}: {h.sizes_text(first)} (sum of "
                   f"costs {first['full_cost']:,.0f})"), "",
                  "Table 1 (the paper's), mean ± std over the seeds:", ""]
        lines += table1(ok) + [""]
        if first["heterogeneous_costs"]:
            lines += table1(ok, cost_pct=True) + [""]
        cd = curve_data(ok)
        cost_name = "mean cost" if first["heterogeneous_costs"] else "mean features"
        if cd:
            lines += [f"Accuracy vs budget (seed {cd['seed']}; alphas "
                      + h.values_text(cd["alphas"].get(False, []))
                      + "): the alpha-selected BudgetRF curves at RF's points:", ""]
            lines += equal_cost_tables(cd, cost_name)
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
                      "test error", h.title(name, short=True), xscale="log", legend_size=7,
                      legend_loc="upper right")
    return h.plot_panels(path, doc, [n for n, rs in doc["results"].items()
                                     if h.ok_results(rs) and curve_data(h.ok_results(rs))],
                         draw, "BudgetRF vs random forests: test error vs mean test cost",
                         "test error vs mean test cost, log axis; BudgetRF alpha-selected "
                         "curves, RF by number of trees", (5.6, 4.4))


if __name__ == "__main__":
    sys.exit(h.main(sys.modules[__name__]))
