"""Greedy Miser benchmark: accuracy vs feature cost against CEGB and plain boosting.

Greedy Miser (cbudget's defaults: the paper's settings) over its lambda sweep, CEGB over
``bench_cegb.py``'s, cbudget gbdt and LightGBM, on the data sets with costs. Every run is
evaluated round by round on the validation split (one routine for both libraries: leaf
values and ``harness.CostTrace``) and reported at its best validation round; for cbudget
the costs and features used there must equal ``predict_cost`` / ``used_features``.
Grids and options: benchmarks/README.md.
"""
import sys

import datasets
import harness as h
import numpy as np
from bench_cegb import DEFAULT_LAMBDAS as CEGB_LAMBDAS
from bench_cegb import DEFAULT_ROUNDS as CEGB_ROUNDS
from bench_cegb import LIGHTGBM_LAYOUT, cegb_params
from bench_cegb import QUICK as CEGB_QUICK

NAME = "greedy_miser"
TITLE = "Greedy Miser benchmark: accuracy vs feature cost (vs CEGB and plain boosting)"
DATASETS = h.COST_DATASETS
INFO_LIBRARIES = ("lightgbm",)
SUBSET_OPTION = "methods"
IDENT = ("method", "dataset", "lambda", "rounds")
METHODS = ("greedy_miser", "cegb", "gbdt", "lightgbm")
SWEPT = ("greedy_miser", "cegb")  # methods with a lambda sweep
METHOD_LABELS = {"greedy_miser": "Greedy Miser", "cegb": "CEGB", "gbdt": "cbudget gbdt",
                 "lightgbm": "LightGBM"}
# Rounds and lambdas of Greedy Miser in the full run (the README says how they were chosen)
GM_ROUNDS = {"letters": 2000, "mnist_multires": 100, "synthetic_costly": 2000}
GM_LAMBDAS = {
    "letters": (0.0, 3.0, 10.0, 20.0, 30.0, 45.0, 60.0, 80.0),
    "mnist_multires": (0.0, 3.0, 10.0, 30.0, 100.0, 300.0),
    "synthetic_costly": (0.0, 0.1, 0.3, 1.0, 3.0, 10.0, 30.0),
}
QUICK = {"gm_rounds": {"letters": 40, "mnist_multires": 6, "synthetic_costly": 40},
         "gm_lambdas": {"letters": (0.0, 10.0), "mnist_multires": (0.0, 10.0),
                        "synthetic_costly": (0.0, 0.1)},
         "cegb_lambdas": {"letters": (0.0, 0.1), "mnist_multires": (0.0, 0.01),
                          "synthetic_costly": (0.0, 1e-3)},
         "train_rows": 2000, "valid_rows": 1000, "test_rows": 1000, "n_rows": 20_000}
QUICK_HELP = ("2,000 / 1,000 / 1,000 rows, 20,000 synthetic rows, few rounds, 2 lambdas "
              "per method")
MARGIN_CHECK_TOL = 1e-6
TRACE_POINTS = 100  # about twice this many rounds of each trace are kept in the JSON
BLOCK_ENTRIES = 4_000_000  # leaf indices per pred_leaf call of the staged evaluation


def method_params(method, dataset, n_classes, lam, feature_costs, n_threads=2,
                  gm_algorithm="greedy_miser"):
    """Parameters of ``method`` for trade-off ``lam``; ``gm_algorithm="gbdt"``: the
    development stand-in for Greedy Miser (its tree shape, lambda ignored)."""
    if method == "greedy_miser":
        base = h.library_params("cbudget", n_classes, n_threads)
        p = {"algorithm": gm_algorithm, "objective": base["objective"],
             "learning_rate": 0.1, "grow_policy": "depthwise", "max_depth": 4,
             "reg_lambda": 0.0, "min_data_in_leaf": 20, "n_jobs": n_threads, "seed": 0}
        if "num_class" in base:
            p["num_class"] = base["num_class"]
        if gm_algorithm == "greedy_miser":
            p["cost_tradeoff"] = float(lam)
        return p
    if method == "cegb":
        return cegb_params("cbudget", dataset, n_classes, lam, feature_costs,
                           n_threads=n_threads)
    if method == "gbdt":
        return dict(h.library_params("cbudget", n_classes, n_threads), algorithm="gbdt")
    if method == "lightgbm":
        return dict(h.library_params("lightgbm", n_classes, n_threads), deterministic=True,
                    **{LIGHTGBM_LAYOUT[dataset]: True})
    raise ValueError(f"unknown method {method!r}")


def add_arguments(parser):
    parser.add_argument("--gm-lambdas", default=None,
                        help="Greedy Miser trade-offs for every data set (default GM_LAMBDAS)")
    parser.add_argument("--gm-rounds", type=int, default=None,
                        help="Greedy Miser rounds for every data set (default GM_ROUNDS)")
    parser.add_argument("--cegb-lambdas", default=None,
                        help="CEGB trade-offs (default bench_cegb.DEFAULT_LAMBDAS)")
    parser.add_argument("--cegb-rounds", type=int, default=None,
                        help="CEGB rounds (default bench_cegb.DEFAULT_ROUNDS)")
    parser.add_argument("--plain-rounds", type=int, default=None,
                        help="rounds of plain boosting (default: CEGB's)")
    h.add_row_arguments(parser, ("train", "valid", "test"), h.SYNTHETIC_ROWS)
    parser.add_argument("--gm-algorithm", default="greedy_miser",
                        choices=("greedy_miser", "gbdt"),
                        help="gbdt: development stand-in with Greedy Miser's tree shape")


def plan(args, names):
    methods = h.parse_choices(args.methods, METHODS, "method")
    for option in ("gm_rounds", "cegb_rounds", "plain_rounds"):
        if getattr(args, option) is not None and getattr(args, option) < 1:
            raise ValueError(f"--{option.replace('_', '-')} must be >= 1")
    q = args.quick
    grids = {}
    for d in names:
        grids[d] = {}
        for m in methods:
            if m == "greedy_miser":
                rounds = args.gm_rounds or (QUICK["gm_rounds"] if q else GM_ROUNDS)[d]
                lambdas = (h.parse_values(args.gm_lambdas) if args.gm_lambdas else
                           list((QUICK["gm_lambdas"] if q else GM_LAMBDAS)[d]))
            elif m == "cegb":
                rounds = args.cegb_rounds or (CEGB_QUICK["rounds"] if q else CEGB_ROUNDS)[d]
                lambdas = (h.parse_values(args.cegb_lambdas) if args.cegb_lambdas else
                           list((QUICK["cegb_lambdas"] if q else CEGB_LAMBDAS)[d]))
            else:  # plain boosting: the rounds of CEGB, the same trees
                rounds = args.plain_rounds or (CEGB_QUICK["rounds"] if q else CEGB_ROUNDS)[d]
                lambdas = [None]
            grids[d][m] = (rounds, lambdas)
    spec = {"threads": args.threads, "gm_algorithm": args.gm_algorithm,
            **{k: getattr(args, k) for k in h.ROW_OPTIONS}}
    jobs = []
    for d in names:  # plain boosting first, then the Greedy Miser and the CEGB sweeps
        for m in (m for m in ("gbdt", "lightgbm", "greedy_miser", "cegb") if m in methods):
            rounds, lambdas = grids[d][m]
            jobs += [(d, f"{d} / {METHOD_LABELS[m]}" + ("" if lam is None else
                                                      f" / lambda={lam:g}")
                      + f" / {rounds} rounds",
                      dict(spec, method=m, dataset=d, rounds=rounds, **{"lambda": lam}))
                     for lam in lambdas]
    return jobs, {"plan": {d: {m: {"rounds": r, "lambdas": ls} for m, (r, ls) in p.items()}
                           for d, p in grids.items()},
                  "threads": args.threads, "gm_algorithm": args.gm_algorithm}


# ------------------------------------------------------------- staged evaluation
class CbudgetView:
    """What the staged evaluation needs from a cbudget Booster."""

    def __init__(self, booster):
        self.booster = booster
        self.indptr = np.asarray(booster.iteration_indptr, dtype=np.int64)
        self.outputs = np.asarray(booster.tree_outputs, dtype=np.int64)
        self.base_margin = np.asarray(booster.base_score, dtype=np.float64).reshape(-1)
        self.leaf_paths = [h.cbudget_leaf_paths(tree) for tree in booster.trees]
        self.leaf_values = [{leaf: float(tree["value"][leaf]) for leaf in paths}
                            for tree, paths in zip(booster.trees, self.leaf_paths, strict=True)]

    def pred_leaf(self, X, r0, r1):
        return self.booster.predict(X, pred_leaf=True, iteration_range=(r0, r1))

    def margin(self, X):
        return np.asarray(self.booster.predict(X, output_margin=True)).reshape(X.shape[0], -1)


class LightGBMView:
    """The same for a LightGBM Booster (its initial score is in the first trees' leaves)."""

    def __init__(self, booster):
        self.booster = booster
        k = booster.num_model_per_iteration()
        trees = booster.dump_model()["tree_info"]
        self.indptr = np.arange(len(trees) // k + 1, dtype=np.int64) * k
        self.outputs = np.arange(len(trees), dtype=np.int64) % k
        self.base_margin = np.zeros(k)
        self.leaf_values = [{} for _ in trees]
        self.leaf_paths = [h.lightgbm_leaf_paths(t["tree_structure"], values)
                           for t, values in zip(trees, self.leaf_values, strict=True)]

    def pred_leaf(self, X, r0, r1):
        return self.booster.predict(X, pred_leaf=True, start_iteration=r0,
                                    num_iteration=r1 - r0).reshape(X.shape[0], -1)

    def margin(self, X):
        return np.asarray(self.booster.predict(X, raw_score=True)).reshape(X.shape[0], -1)


def _correct(margin, y):
    """Whether each input is classified right from raw scores (n[, rounds], n_outputs)."""
    y = y.reshape((-1,) + (1,) * (margin.ndim - 2))
    if margin.shape[-1] == 1:
        return (margin[..., 0] > 0) == (y == 1)
    return np.argmax(margin, axis=-1) == y


def staged_evaluation(view, tables, values, X, y, feature_costs=None, keep=None):
    """Accuracy after every round (and with ``feature_costs`` the mean per-input cost);
    with ``keep`` the raw scores, costs and features acquired after round ``keep``. The
    scores add the leaf values tree after tree in the library's order; AssertionError if
    the final ones differ from the library's. Returns (accuracy, mean cost, kept)."""
    n, indptr = X.shape[0], view.indptr
    n_rounds = indptr.shape[0] - 1
    margin = np.tile(view.base_margin, (n, 1))
    n_out = margin.shape[1]
    accuracy = np.zeros(n_rounds)
    trace = h.CostTrace(tables, feature_costs, n) if feature_costs is not None else None
    mean_cost = np.zeros(n_rounds) if trace else None
    kept = None
    uniform = (indptr[-1] == n_rounds * n_out
               and np.array_equal(view.outputs, np.arange(indptr[-1]) % n_out))
    block = max(1, BLOCK_ENTRIES // max(1, n * max(1, int(indptr[-1]) // max(1, n_rounds))))
    for r0 in range(0, n_rounds, block):
        r1 = min(n_rounds, r0 + block)
        t0, t1 = int(indptr[r0]), int(indptr[r1])
        leaves = np.asarray(view.pred_leaf(X, r0, r1), dtype=np.int64)
        contrib = values[leaves + tables.offsets[t0:t1]]
        if uniform:  # the scores after each round of the block at once
            scores = np.cumsum(np.concatenate(
                [margin[:, None, :], contrib.reshape(n, r1 - r0, n_out)], axis=1),
                axis=1)[:, 1:, :]
            accuracy[r0:r1] = _correct(scores, y).mean(axis=0)
        for r in range(r0, r1):
            a, b = int(indptr[r]) - t0, int(indptr[r + 1]) - t0
            if uniform:
                margin = scores[:, r - r0, :]
            else:
                for j in range(a, b):
                    margin[:, view.outputs[t0 + j]] += contrib[:, j]
                accuracy[r] = _correct(margin, y).mean()
            if trace:
                trace.add_trees(leaves[:, a:b], t0 + a)
                mean_cost[r] = trace.cost.mean()
            if r == keep:
                kept = {"margin": margin.copy()}
                if trace:
                    kept.update(cost=trace.cost.copy(), n_acquired=trace.n_acquired.copy())
        margin = np.array(margin)
    own = view.margin(X)
    if not np.allclose(margin, own, rtol=MARGIN_CHECK_TOL, atol=MARGIN_CHECK_TOL):
        raise AssertionError(f"staged raw scores differ from the library's: max |diff| "
                             f"{float(np.max(np.abs(margin - own)))}")
    return accuracy, mean_cost, kept


def model_cost_trace(view, tables, feature_costs):
    """Per round: (features used by rounds 0..r, the sum of their costs)."""
    used, n_used, cost, total, count = 0, [], [], 0.0, 0
    for r in range(view.indptr.shape[0] - 1):
        before = used
        for t in range(int(view.indptr[r]), int(view.indptr[r + 1])):
            used |= tables.tree_masks[t]
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
    version, location = h.library_version(library)
    data, t_load, rss_after_load = h.load_for_child(name, spec, keep_valid=True)
    costs = np.asarray(data["feature_costs"], dtype=np.float64)
    n_classes, n_rounds = int(data["n_classes"]), int(spec["rounds"])
    params = method_params(method, name, n_classes, lam or 0.0, costs, spec["threads"],
                           spec["gm_algorithm"])
    kwargs = ({} if library == "lightgbm" else {"feature_names": data["feature_names"],
                                                 "feature_costs": data["feature_costs"]})
    (booster, _, _, dtrain), timing = h.timed_training(
        h.train_lightgbm_timed if library == "lightgbm" else h.train_cbudget_timed, data,
        params, n_rounds, **kwargs)
    with h.Timer() as t_eval:
        view = CbudgetView(booster) if library == "cbudget" else LightGBMView(booster)
        if view.indptr.shape[0] - 1 != n_rounds:
            raise RuntimeError(f"the model has {view.indptr.shape[0] - 1} rounds, expected "
                               f"{n_rounds}")
        tables = h.PathTables(view.leaf_paths, costs.shape[0])
        values = np.zeros(tables.depths.shape[0])  # leaf values in the rows of tables
        for offset, leaves in zip(tables.offsets.tolist(), view.leaf_values, strict=True):
            for leaf, value in leaves.items():
                values[offset + leaf] = value
        valid_acc, _, _ = staged_evaluation(view, tables, values, data["X_valid"],
                                            data["y_valid"])
        sel = int(np.argmax(valid_acc))  # the first round of best validation accuracy
        test_acc, test_cost, kept = staged_evaluation(view, tables, values, data["X_test"],
                                                      data["y_test"], costs, keep=sel)
        n_used, model_cost = model_cost_trace(view, tables, costs)
        used_mask = 0
        for mask in tables.tree_masks[:int(view.indptr[sel + 1])]:
            used_mask |= mask
        used = np.array([m for m in range(costs.shape[0]) if used_mask >> m & 1],
                        dtype=np.int64)
    # features used per cost level (per resolution on MNIST): the paper's Fig. 2
    groups = ([f.split("_")[0] for f in data["feature_names"]] if name == "mnist_multires"
              else [f"{c:g}" for c in data["feature_costs"]])
    group_sizes = {g: groups.count(g) for g in dict.fromkeys(groups)}
    used_by_group = {g: sum(groups[m] == g for m in used.tolist()) for g in group_sizes}
    keep = trace_rounds(n_rounds, sel)
    result = {
        "method": method, "library": library, "version": version, "location": location,
        "dataset": name, "lambda": lam, "n_train": int(data["X_train"].shape[0]),
        "n_valid": int(data["X_valid"].shape[0]), "n_test": int(data["X_test"].shape[0]),
        "n_features": int(costs.shape[0]), "n_classes": n_classes, "rounds": n_rounds,
        "n_trees": int(tables.n_trees), "params": params, "load_s": t_load, **timing,
        "n_threads": spec["threads"], "selected_iteration": sel,
        "valid_accuracy": float(valid_acc[sel]), "accuracy": float(test_acc[sel]),
        "mean_cost": float(test_cost[sel]), "model_cost": float(costs[used].sum()),
        "features_used": int(used.shape[0]),
        "final_accuracy": float(test_acc[-1]), "final_mean_cost": float(test_cost[-1]),
        "final_model_cost": float(model_cost[-1]), "final_features_used": int(n_used[-1]),
        **h.cost_fields(kept["cost"], kept["n_acquired"], costs, data,
                        cut_test=bool(spec["test_rows"])),
        "used_by_group": used_by_group, "group_sizes": group_sizes,
        "trace": {"round": keep.tolist(), "valid_accuracy": valid_acc[keep].tolist(),
                  "test_accuracy": test_acc[keep].tolist(),
                  "test_mean_cost": test_cost[keep].tolist(),
                  "model_cost": model_cost[keep].tolist(),
                  "features_used": n_used[keep].tolist()},
        "eval_s": t_eval.wall, "rss_after_load_mb": rss_after_load / 2**20}
    if costs.shape[0] <= 64:
        result["used_features"] = used.tolist()
    if library == "cbudget":
        result["checks"] = check_cbudget(booster, dtrain, data, sel, kept["cost"], used)
    if n_classes == 2:
        result["auc"] = datasets.auc(data["y_test"], kept["margin"][:, 0])
    result["peak_rss_mb"] = h.maxrss_bytes() / 2**20
    return result


def check_cbudget(booster, dtrain, data, sel, cost, used):
    """The staged evaluation against cbudget's own routines: per-input costs and features
    used at the selected round (AssertionError on a difference), and whether cbudget's
    ``best_iteration_within_budget(dvalid, inf)`` selects the same round (reported)."""
    import cbudget
    dvalid = cbudget.Dataset(data["X_valid"], data["y_valid"], reference=dtrain)
    choice = booster.best_iteration_within_budget(
        dvalid, float("inf"), metric="merror" if data["n_classes"] > 2 else "error")
    own = booster.predict_cost(data["X_test"], iteration_range=(0, sel + 1))
    own_used = np.asarray(booster.used_features((0, sel + 1)))
    checks = {"best_iteration_within_budget": choice.iteration,
              "same_selection": choice.iteration == sel,
              "predict_cost_max_abs_diff": float(np.max(np.abs(own - cost)))}
    if not np.allclose(own, cost, rtol=h.COST_CHECK_TOL, atol=h.COST_CHECK_TOL):
        raise AssertionError(f"per-input test costs differ from predict_cost: {checks}")
    if not np.array_equal(own_used, used):
        raise AssertionError(f"features used {used.tolist()} vs cbudget's "
                             f"{own_used.tolist()}")
    return checks


# ------------------------------------------------------------------------ report
def point_label(r):
    """``Greedy Miser lambda=10`` / ``LightGBM``."""
    return METHOD_LABELS[r["method"]] + ("" if r["lambda"] is None else f" lambda={r['lambda']:g}")


def _sorted_runs(results):
    return sorted(results, key=lambda r: (METHODS.index(r["method"]), r.get("lambda") or 0.0))


def render(doc):
    lines = []
    if doc["gm_algorithm"] != "greedy_miser":
        lines += [(f"**Greedy Miser ran as `algorithm=\"{doc['gm_algorithm']}\"` (development "
                  "stand-in with its tree shape): its lambda has no effect.**"), ""]
    for name, results in doc["results"].items():
        ok = _sorted_runs(h.ok_results(results))
        first = ok[0] if ok else None
        lines += [f"### {h.DATASET_TITLES.get(name, name)}: " + (
            f"{first['n_train']:,} train / {first['n_valid']:,} valid / "
            f"{first['n_test']:,} test rows, {first['n_features']} features" if first else ""),
            ""]
        binary = bool(first) and first["n_classes"] == 2
        head = (["method", "lambda", "rounds", "selected round", "valid accuracy",
                 "test accuracy"] + (["test AUC"] if binary else [])
                + ["mean test cost", "model cost", "features used", "train s",
                   "all rounds: test accuracy / mean cost"])
        rows = [[METHOD_LABELS[r["method"]], "-" if r["lambda"] is None else f"{r['lambda']:g}",
                 str(r["rounds"]), str(r["selected_iteration"] + 1),
                 f"{r['valid_accuracy']:.4f}", f"{r['accuracy']:.4f}"]
                + ([h.fmt(r.get("auc"), ".4f")] if binary else [])
                + [f"{r['mean_cost']:,.2f}", f"{r['model_cost']:,.0f}",
                   str(r["features_used"]), f"{r['train_s']:.1f}",
                   f"{r['final_accuracy']:.4f} / {r['final_mean_cost']:,.2f}"] for r in ok]
        lines += h.table(head, rows, "l" + "r" * (len(head) - 1)) + [""]
        gm = [r for r in ok if r["method"] == "greedy_miser"]
        cegb = [r for r in ok if r["method"] == "cegb"]
        for key, cost_name in (("mean_cost", "mean cost"), ("model_cost", "model cost")):
            if gm and cegb:
                lines += [f"CEGB against Greedy Miser (GM) at equal or lower {cost_name}:", ""]
                lines += h.comparison_table(cegb, gm, ("GM", "CEGB", cost_name, "accuracy"),
                                            lambda r: f"lambda={r['lambda']:g}",
                                            cost_key=key) + [""]
        if ok:  # the paper's Fig. 2: the fraction of each cost level's features used
            groups = list(first["group_sizes"])
            if name != "mnist_multires":
                groups.sort(key=float)
            what = "resolution (pixels)" if name == "mnist_multires" else "cost level (features)"
            lines += [f"Fraction of the features of each {what} used by the selected model:",
                      ""]
            lines += h.table(
                ["run", "test accuracy", "mean cost", "model cost"]
                + [f"{g} ({first['group_sizes'][g]})" for g in groups],
                [[point_label(r), f"{r['accuracy']:.4f}",
                  f"{r['mean_cost']:,.2f}", f"{r['model_cost']:,.0f}"]
                 + [f"{r['used_by_group'][g] / r['group_sizes'][g]:.2f}" for g in groups]
                 for r in ok], "l" + "r" * (3 + len(groups))) + [""]
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
            h.finish_axis(ax, xlabel, "test accuracy",
                          h.DATASET_TITLES.get(name, name).split(" (")[0], legend_size=7,
                          legend_loc="lower right")
    stand_in = doc["gm_algorithm"] != "greedy_miser"
    return h.plot_panels(path, doc, [n for n, rs in doc["results"].items() if h.ok_results(rs)],
                         draw, "Greedy Miser vs CEGB: test accuracy at the best validation "
                         "round\n(labels: lambda; dashed: Greedy Miser round by round)"
                         + (f" - GM {doc['gm_algorithm']} stand-in" if stand_in else ""),
                         "test accuracy vs mean test cost, top, and vs model cost, bottom; "
                         "symlog cost axes", (5.4, 4.2), n_rows=2)


if __name__ == "__main__":
    sys.exit(h.main(sys.modules[__name__]))
