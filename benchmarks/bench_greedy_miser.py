"""Greedy Miser benchmark: accuracy vs feature cost (vs CEGB and plain boosting).

Every run is evaluated round by round (leaf values and ``harness.CostTrace``) and reported
at its best validation round. Protocol: benchmarks/README.md.
"""
import sys
from types import SimpleNamespace

import bench_cegb
import datasets
import harness as h
import numpy as np

DATASETS = h.COST_DATASETS
IDENT = ("method", "dataset", "lambda", "rounds")
ROWS, SYNTHETIC_ROWS = ("train", "valid", "test"), h.SYNTHETIC_ROWS
METHODS = ("greedy_miser", "cegb", "gbdt", "lightgbm")
SWEPT = ("greedy_miser", "cegb")  # methods with a lambda sweep
METHOD_LABELS = {"greedy_miser": "Greedy Miser", "cegb": "CEGB", "gbdt": "cbudget gbdt",
                 "lightgbm": "LightGBM"}
OPTION_PREFIX = {"greedy_miser": "gm", "cegb": "cegb", "gbdt": "plain", "lightgbm": "plain"}
# the full run (the README says how Greedy Miser's grid was chosen); CEGB's is bench_cegb's,
# plain boosting (cbudget gbdt, LightGBM) runs CEGB's rounds (the same trees)
FULL = {"gm_rounds": {"letters": 2000, "mnist_multires": 100, "synthetic_costly": 2000},
        "gm_lambdas": {"letters": (0.0, 3.0, 10.0, 20.0, 30.0, 45.0, 60.0, 80.0),
                       "mnist_multires": (0.0, 3.0, 10.0, 30.0, 100.0, 300.0),
                       "synthetic_costly": (0.0, 0.1, 0.3, 1.0, 3.0, 10.0, 30.0)},
        "cegb_rounds": bench_cegb.FULL["rounds"], "cegb_lambdas": bench_cegb.FULL["lambdas"],
        "plain_rounds": bench_cegb.FULL["rounds"]}
QUICK = {"gm_rounds": {"letters": 40, "mnist_multires": 6, "synthetic_costly": 40},
         "gm_lambdas": {"letters": (0.0, 10.0), "mnist_multires": (0.0, 10.0),
                        "synthetic_costly": (0.0, 0.1)},
         "cegb_lambdas": {"letters": (0.0, 0.1), "mnist_multires": (0.0, 0.01),
                          "synthetic_costly": (0.0, 1e-3)},
         "cegb_rounds": bench_cegb.QUICK["rounds"], "plain_rounds": bench_cegb.QUICK["rounds"],
         "train_rows": 2000, "valid_rows": 1000, "test_rows": 1000, "n_rows": 20_000}
MARGIN_CHECK_TOL = 1e-6
TRACE_POINTS = 100  # about twice this many rounds of each trace are kept in the JSON
BLOCK_ENTRIES = 4_000_000  # leaf indices per pred_leaf call of the staged evaluation


def method_params(method, dataset, n_classes, lam, feature_costs, n_threads=2):
    """Parameters of ``method`` for trade-off ``lam``."""
    if method == "greedy_miser":
        base = h.library_params("cbudget", n_classes, n_threads)
        p = {"algorithm": "greedy_miser", "objective": base["objective"],
             "learning_rate": 0.1, "grow_policy": "depthwise", "max_depth": 4,
             "reg_lambda": 0.0, "min_data_in_leaf": 20, "n_jobs": n_threads, "seed": 0,
             "cost_tradeoff": float(lam)}
        if "num_class" in base:
            p["num_class"] = base["num_class"]
        return p
    if method == "cegb":
        return bench_cegb.cegb_params("cbudget", dataset, n_classes, lam, feature_costs,
                                      n_threads=n_threads)
    if method == "gbdt":
        return dict(h.library_params("cbudget", n_classes, n_threads), algorithm="gbdt")
    if method == "lightgbm":
        return dict(h.library_params("lightgbm", n_classes, n_threads), deterministic=True,
                    **{bench_cegb.LIGHTGBM_LAYOUT[dataset]: True})
    raise ValueError(f"unknown method {method!r}")


def plan(args, names):
    """Per data set plain boosting first, then the Greedy Miser and the CEGB sweeps."""
    methods = h.parse_choices(args.methods, METHODS, "method")
    grids = {d: {} for d in names}
    for d, m in ((d, m) for d in names for m in ("gbdt", "lightgbm", "greedy_miser", "cegb")
                 if m in methods):
        prefix = OPTION_PREFIX[m]
        grids[d][m] = (h.setting(args, f"{prefix}_rounds", d),
                       h.setting(args, f"{prefix}_lambdas", d) if m in SWEPT else [None])
    spec = {"threads": args.threads, **{k: getattr(args, k) for k in h.ROW_OPTIONS}}
    jobs = [(d, f"{d} / {METHOD_LABELS[m]}" + ("" if lam is None else f" / lambda={lam:g}")
             + f" / {rounds} rounds", dict(spec, method=m, dataset=d, rounds=rounds,
                                          **{"lambda": lam}))
            for d, grid in grids.items() for m, (rounds, lambdas) in grid.items()
            for lam in lambdas]
    return jobs, {"plan": {d: {m: {"rounds": r, "lambdas": ls} for m, (r, ls) in p.items()}
                           for d, p in grids.items()},
                  "threads": args.threads}


# ------------------------------------------------------------- staged evaluation
def cbudget_view(booster):
    """What the staged evaluation needs from a cbudget Booster: one tree per output and
    round (checked), the leaf paths and values, leaf ids of a range of rounds, raw scores."""
    n_out, n_rounds = np.asarray(booster.base_score).size, booster.num_boosted_rounds()
    if not (np.array_equal(booster.iteration_indptr, np.arange(n_rounds + 1) * n_out)
            and np.array_equal(booster.tree_outputs, np.arange(n_rounds * n_out) % n_out)):
        raise ValueError("the staged evaluation needs one tree per output and round")
    paths = [h.cbudget_leaf_paths(tree) for tree in booster.trees]
    return SimpleNamespace(
        n_rounds=n_rounds, base_margin=np.asarray(booster.base_score, dtype=np.float64).ravel(),
        leaf_paths=paths, leaf_values=[{leaf: float(tree["value"][leaf]) for leaf in p}
                                       for tree, p in zip(booster.trees, paths, strict=True)],
        pred_leaf=lambda X, r0, r1: booster.predict(X, pred_leaf=True, iteration_range=(r0, r1)),
        margin=lambda X: np.asarray(booster.predict(X, output_margin=True)))


def lightgbm_view(booster):
    """The same for a LightGBM Booster (its initial score is in the first trees' leaves)."""
    n_out, trees = booster.num_model_per_iteration(), booster.dump_model()["tree_info"]
    values = [{} for _ in trees]
    return SimpleNamespace(
        n_rounds=len(trees) // n_out, base_margin=np.zeros(n_out), leaf_values=values,
        leaf_paths=[h.lightgbm_leaf_paths(t["tree_structure"], v)
                    for t, v in zip(trees, values, strict=True)],
        pred_leaf=lambda X, r0, r1: booster.predict(X, pred_leaf=True, start_iteration=r0,
                                                    num_iteration=r1 - r0),
        margin=lambda X: np.asarray(booster.predict(X, raw_score=True)))


def _correct(margin, y):
    """Whether each input is classified right from raw scores (n[, rounds], n_outputs)."""
    y = y.reshape((-1,) + (1,) * (margin.ndim - 2))
    if margin.shape[-1] == 1:
        return (margin[..., 0] > 0) == (y == 1)
    return np.argmax(margin, axis=-1) == y


def staged_evaluation(view, tables, values, X, y, feature_costs=None, keep=None):
    """(accuracy after every round, with ``feature_costs`` the mean cost, the scores and
    costs after round ``keep``) from the leaf values; AssertionError on other final scores."""
    n, n_rounds, n_out = X.shape[0], view.n_rounds, view.base_margin.shape[0]
    margin = np.tile(view.base_margin, (n, 1))
    accuracy, mean_cost, kept = np.zeros(n_rounds), np.zeros(n_rounds), None
    trace = h.CostTrace(tables, feature_costs, n) if feature_costs is not None else None
    block = max(1, BLOCK_ENTRIES // max(1, n * n_out))
    for r0 in range(0, n_rounds, block):
        r1 = min(n_rounds, r0 + block)
        leaves = np.asarray(view.pred_leaf(X, r0, r1), dtype=np.int64).reshape(n, -1)
        contrib = values[leaves + tables.offsets[r0 * n_out:r1 * n_out]]
        scores = np.cumsum(np.concatenate(  # the scores after each round of the block
            [margin[:, None, :], contrib.reshape(n, r1 - r0, n_out)], axis=1), axis=1)[:, 1:]
        accuracy[r0:r1] = _correct(scores, y).mean(axis=0)
        margin = np.array(scores[:, -1, :])
        for r in range(r0, r1):
            if trace:
                a = (r - r0) * n_out
                trace.add_trees(leaves[:, a:a + n_out], r * n_out)
                mean_cost[r] = trace.cost.mean()
            if r == keep:
                kept = {"margin": scores[:, r - r0, :].copy()}
                if trace:
                    kept.update(cost=trace.cost.copy(), n_acquired=trace.n_acquired.copy())
    own = np.asarray(view.margin(X)).reshape(n, -1)
    if not np.allclose(margin, own, rtol=MARGIN_CHECK_TOL, atol=MARGIN_CHECK_TOL):
        raise AssertionError(f"staged raw scores differ from the library's: max |diff| "
                             f"{float(np.max(np.abs(margin - own)))}")
    return accuracy, mean_cost, kept


def model_cost_trace(tables, feature_costs, n_out):
    """Per round: (features used by rounds 0..r, the sum of their costs)."""
    used, n_used, cost, total, count = 0, [], [], 0.0, 0
    for t0 in range(0, tables.n_trees, n_out):
        before = used
        for mask in tables.tree_masks[t0:t0 + n_out]:
            used |= mask
        if used != before:
            idx = [m for m in range(tables.n_features) if used >> m & 1]
            total, count = float(np.sum(feature_costs[idx])), len(idx)
        n_used.append(count)
        cost.append(total)
    return np.array(n_used, dtype=np.int64), np.array(cost)


def trace_rounds(n_rounds, keep):
    """Rounds kept in the JSON trace: all if few, else about 2 * TRACE_POINTS spread
    linearly and geometrically, plus ``keep`` and the last."""
    if n_rounds <= 2 * TRACE_POINTS:
        return np.arange(n_rounds)
    rounds = np.concatenate([np.linspace(0, n_rounds - 1, TRACE_POINTS),
                             np.geomspace(1, n_rounds, TRACE_POINTS) - 1, [keep]])
    return np.unique(np.round(rounds).astype(np.int64))


# ------------------------------------------------------------------------- child
def run_point(spec):
    """Train and measure one (method, data set, lambda)."""
    method, name, lam = spec["method"], spec["dataset"], spec["lambda"]
    library = "lightgbm" if method == "lightgbm" else "cbudget"
    data, result = h.start_child(spec, library, keep_valid=True)
    costs, n_rounds = data["feature_costs"], int(spec["rounds"])
    params = method_params(method, name, data["n_classes"], lam or 0.0, costs, spec["threads"])
    kwargs = ({} if library == "lightgbm" else {"feature_names": data["feature_names"],
                                                 "feature_costs": costs})
    (booster, _, _, dtrain), timing = h.timed_training(
        h.train_lightgbm_timed if library == "lightgbm" else h.train_cbudget_timed, data,
        params, n_rounds, **kwargs)
    with h.Timer() as t_eval:
        view = cbudget_view(booster) if library == "cbudget" else lightgbm_view(booster)
        if view.n_rounds != n_rounds:
            raise RuntimeError(f"the model has {view.n_rounds} rounds, expected {n_rounds}")
        tables = h.PathTables(view.leaf_paths, costs.shape[0])
        values = np.zeros(tables.depths.shape[0])  # leaf values in the rows of tables
        for offset, leaves in zip(tables.offsets.tolist(), view.leaf_values, strict=True):
            for leaf, value in leaves.items():
                values[offset + leaf] = value
        valid_acc, _, _ = staged_evaluation(view, tables, values, data["X_valid"], data["y_valid"])
        sel = int(np.argmax(valid_acc))  # the first round of best validation accuracy
        test_acc, test_cost, kept = staged_evaluation(view, tables, values, data["X_test"],
                                                      data["y_test"], costs, keep=sel)
        n_out = view.base_margin.shape[0]
        n_used, model_cost = model_cost_trace(tables, costs, n_out)
        used = tables.used_features((sel + 1) * n_out)
    # features used per cost level (per resolution on MNIST): the paper's Fig. 2
    groups = ([f.split("_")[0] for f in data["feature_names"]] if name == "mnist_multires"
              else [f"{c:g}" for c in costs])
    group_sizes = {g: groups.count(g) for g in dict.fromkeys(groups)}
    keep = trace_rounds(n_rounds, sel)
    result.update({
        "method": method, "lambda": lam, "rounds": n_rounds, "n_trees": int(tables.n_trees),
        "params": params, **timing, "selected_iteration": sel,
        "valid_accuracy": float(valid_acc[sel]), "accuracy": float(test_acc[sel]),
        "mean_cost": float(test_cost[sel]), "model_cost": float(costs[used].sum()),
        "features_used": int(used.shape[0]),
        "final_accuracy": float(test_acc[-1]), "final_mean_cost": float(test_cost[-1]),
        "final_model_cost": float(model_cost[-1]), "final_features_used": int(n_used[-1]),
        **h.cost_fields(kept["cost"], kept["n_acquired"], costs, data,
                        cut_test=bool(spec["test_rows"])),
        "used_by_group": {g: sum(groups[m] == g for m in used.tolist()) for g in group_sizes},
        "group_sizes": group_sizes, "eval_s": t_eval.wall,
        "trace": {"round": keep.tolist(), "valid_accuracy": valid_acc[keep].tolist(),
                  "test_accuracy": test_acc[keep].tolist(),
                  "test_mean_cost": test_cost[keep].tolist(),
                  "model_cost": model_cost[keep].tolist(),
                  "features_used": n_used[keep].tolist()}})
    if costs.shape[0] <= 64:
        result["used_features"] = used.tolist()
    if library == "cbudget":
        result["checks"] = check_cbudget(booster, dtrain, data, sel, kept["cost"], used)
    if data["n_classes"] == 2:
        result["auc"] = datasets.auc(data["y_test"], kept["margin"][:, 0])
    return result


def check_cbudget(booster, dtrain, data, sel, cost, used):
    """The selected round's costs and features used against cbudget's (AssertionError),
    and whether ``best_iteration_within_budget(dvalid, inf)`` selects the same round."""
    import cbudget
    dvalid = cbudget.Dataset(data["X_valid"], data["y_valid"], reference=dtrain)
    choice = booster.best_iteration_within_budget(
        dvalid, float("inf"), metric="merror" if data["n_classes"] > 2 else "error")
    diff = h.check_costs(booster, data["X_test"], cost, iteration_range=(0, sel + 1))
    own_used = np.asarray(booster.used_features((0, sel + 1)))
    if not np.array_equal(own_used, used):
        raise AssertionError(f"features used {used.tolist()} vs cbudget's "
                             f"{own_used.tolist()}")
    return {"best_iteration_within_budget": choice.iteration,
            "same_selection": choice.iteration == sel,
            "predict_cost_max_abs_diff": diff["max_abs_cost_diff"]}


# ------------------------------------------------------------------------ report
def render(doc):
    lines = []
    for name, results in doc["results"].items():
        ok = sorted(h.ok_results(results),
                    key=lambda r: (METHODS.index(r["method"]), r.get("lambda") or 0.0))
        lines += [f"### {h.title(name)}: "
                  + (h.sizes_text(ok[0]) if ok else ""), ""]
        if not ok:
            continue
        auc = [("test AUC", h.col("auc", ".4f"))] if ok[0]["n_classes"] == 2 else []
        lines += h.points_table(ok, [
            ("method", lambda r: METHOD_LABELS[r["method"]]),
            ("lambda", lambda r: "-" if r["lambda"] is None else f"{r['lambda']:g}"),
            ("rounds", h.col("rounds", "d")),
            ("selected round", lambda r: str(r["selected_iteration"] + 1)),
            ("valid accuracy", h.col("valid_accuracy", ".4f")),
            ("test accuracy", h.col("accuracy", ".4f")), *auc,
            ("mean test cost", h.col("mean_cost", ",.2f")),
            ("model cost", h.col("model_cost", ",.0f")),
            ("features used", h.col("features_used", "d")), ("train s", h.col("train_s", ".1f")),
            ("all rounds: test accuracy / mean cost",
             lambda r: f"{r['final_accuracy']:.4f} / {r['final_mean_cost']:,.2f}")]) + [""]
        gm = [r for r in ok if r["method"] == "greedy_miser"]
        cegb = [r for r in ok if r["method"] == "cegb"]
        for key, cost_name in (("mean_cost", "mean cost"), ("model_cost", "model cost")):
            if gm and cegb:
                lines += [f"CEGB against Greedy Miser (GM) at equal or lower {cost_name}:", ""]
                lines += h.comparison_table(cegb, gm, ("GM", "CEGB", cost_name, "accuracy"),
                                            lambda r: f"lambda={r['lambda']:g}",
                                            cost_key=key) + [""]
    return lines


PLOT_STYLE = {"greedy_miser": ("o-", "tab:red"), "cegb": ("s-", "tab:blue"),
              "gbdt": ("^", "black"), "lightgbm": ("D", "tab:green")}


def plot(doc, path):
    def draw(axes, name, plt):
        ok = h.ok_results(doc["results"][name])
        low = min(r["accuracy"] for r in ok)
        high = max(max(r["accuracy"], max(r["trace"]["test_accuracy"])) for r in ok)
        margin = 0.05 * max(high - low, 0.02)
        gm = sorted((r for r in ok if r["method"] == "greedy_miser"), key=lambda r: r["lambda"])
        colors = plt.cm.autumn(np.linspace(0, 0.8, max(1, len(gm))))
        for ax, (key, trace_key, xlabel) in zip(axes, (
                ("mean_cost", "test_mean_cost", "mean prediction cost per test input"),
                ("model_cost", "model_cost", "model cost (sum of costs of features used)")),
                strict=True):
            for r, color in zip(gm, colors, strict=False):
                ax.plot(r["trace"][trace_key], r["trace"]["test_accuracy"], "--",
                        color=color, linewidth=0.8, alpha=0.7)
            for method in METHODS:
                h.curve(ax, [r for r in ok if r["method"] == method], key, "accuracy",
                        PLOT_STYLE[method][0], color=PLOT_STYLE[method][1],
                        label=METHOD_LABELS[method], markersize=5,
                        annotate=(lambda r: f"{r['lambda']:g}") if method in SWEPT else None)
            ax.set_ylim(max(0.0, low - margin), min(1.0, high + margin))
            h.finish_axis(ax, xlabel, "test accuracy", h.title(name, short=True), legend_size=7,
                          legend_loc="lower right")
    return h.plot_panels(path, doc, [n for n, rs in doc["results"].items() if h.ok_results(rs)],
                         draw, "Greedy Miser vs CEGB: test accuracy at the best validation "
                         "round\n(labels: lambda; dashed: Greedy Miser round by round)",
                         "test accuracy vs mean test cost, top, and vs model cost, bottom; "
                         "symlog cost axes", (5.4, 4.2), n_rows=2)


if __name__ == "__main__":
    sys.exit(h.main(sys.modules[__name__]))
