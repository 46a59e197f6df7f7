"""CSTC / CSCC / Cronus benchmark: error and precision vs feature cost (vs CEGB).

Every tree / cascade is checked by an independent walk of the test inputs. Protocol:
benchmarks/README.md.
"""
import json
import sys
import time

import datasets
import harness as h
import numpy as np
from bench_cegb import cegb_params

DATASETS = ("mnist38", "letters_skewed")
TIME_BUDGET = 45.0   # default --time-budget (minutes)
IDENT = ("task", "method", "lambda", "ablation")
ROWS = ("train", "valid", "test")
METHODS = ("cstc", "cstc_full", "cscc", "cronus", "cegb")
TASK_METHODS = {"mnist38": ("cstc", "cstc_full", "cegb"),
                "letters_skewed": ("cscc", "cronus", "cstc", "cstc_full", "cegb")}
METHOD_LABELS = {"cstc": "CSTC (pruned)", "cstc_full": "CSTC (full tree)", "cscc": "CSCC",
                 "cronus": "Cronus", "cegb": "CEGB"}
TREE_METHODS = ("cstc", "cstc_full", "cscc", "cronus")
# settings of the full run (the README says how they were chosen); lambdas per (task,
# method), sweeps of CSTC / CSCC / Cronus and CEGB's rounds (caps) per task
FULL = {"lambdas": {
    **{("mnist38", m): (0.5, 0.3, 0.1, 0.03, 0.01, 0.003, 0.001) for m in ("cstc", "cstc_full")},
    **{("letters_skewed", m): (1.5, 1.0, 0.5, 0.3, 0.1, 0.03, 0.01, 0.003) for m in TREE_METHODS},
    ("mnist38", "cegb"): (0.1, 0.03, 0.01, 3e-3, 1e-3, 3e-4, 0.0),
    ("letters_skewed", "cegb"): (0.01, 1e-3, 3e-4, 1e-4, 3e-5, 0.0)},
    "sweeps": {"mnist38": 10, "letters_skewed": 10},
    "cegb_rounds": {"mnist38": 200, "letters_skewed": 200}}
RHO = {"mnist38": 1e-3, "letters_skewed": 1e-2}
PATIENCE = 2
CEGB_PATIENCE = 20
PRUNE_METRIC = {"mnist38": "error", "letters_skewed": "auc"}
DEPTH = {"cstc": 3, "cstc_full": 3, "cscc": 4, "cronus": 4}
# ablation rows (run last): class weights on Letters, rho on MNIST
ABLATIONS = (
    ("letters_skewed", "cscc", 0.01, {"class_weight": None}),
    ("letters_skewed", "cronus", 0.01, {"class_weight": None}),
    ("letters_skewed", "cstc", 0.01, {"class_weight": None}),
    ("letters_skewed", "cstc", 0.01, {"class_weight": None, "sample_weight": "balanced"}),
    ("mnist38", "cstc", 0.01, {"reg_alpha": 1e-2}),
)
N_QUERIES, QUERY_SIZE, QUERY_SEED, QUERY_K = 2000, 100, 0, 5
PRECISION_KS = (10, 50, 100)
QUICK = {"train_rows": 1500, "valid_rows": 500, "test_rows": 500, "sweeps": 2, "cegb_rounds": 20,
         "lambdas": {**{("mnist38", m): (0.3, 0.03) for m in ("cstc", "cstc_full")},
                     **{("letters_skewed", m): (1.0, 0.1) for m in TREE_METHODS},
                     ("mnist38", "cegb"): (1.0, 0.03), ("letters_skewed", "cegb"): (0.01, 1e-3)}}
TIE_TOL = 1e-9         # route mismatches allowed this close to a threshold (relative)


# ----------------------------------------------------------------------- metrics
def pseudo_queries(y, n_queries=N_QUERIES, size=QUERY_SIZE, replication=h.NEG_REPLICATION,
                   seed=QUERY_SEED):
    """Row indices (n_queries, size): k ~ Binomial(size, n_pos / (n_pos + replication *
    n_neg)) positives (redrawn while 0) and size - k negatives, without replacement."""
    y = np.asarray(y)
    pos, neg = np.flatnonzero(y == 1), np.flatnonzero(y == 0)
    if pos.size == 0 or neg.size < size:
        raise ValueError(f"pseudo-queries need a positive and {size} negatives")
    rng = np.random.default_rng(seed)
    p = pos.size / (pos.size + replication * neg.size)
    out = np.empty((n_queries, size), dtype=np.int64)
    for q in range(n_queries):
        k = 0
        while k == 0:
            k = int(rng.binomial(size, p))
        k = min(k, pos.size)
        out[q, :k] = rng.choice(pos, k, replace=False)
        out[q, k:] = rng.choice(neg, size - k, replace=False)
    return out


def precision_at_k(scores, labels, k):
    """Precision@k of each row of ``scores`` (groups) with 0/1 ``labels``; inputs tied
    with the k-th score count by their expected share (random tie-breaking)."""
    scores = np.atleast_2d(np.asarray(scores, dtype=np.float64))
    labels = np.atleast_2d(np.asarray(labels, dtype=np.float64))
    k = min(int(k), scores.shape[1])
    kth = -np.partition(-scores, k - 1, axis=1)[:, k - 1:k]
    above, tied = scores > kth, scores == kth
    pos_tied = (labels * tied).sum(axis=1)
    return ((labels * above).sum(axis=1)
            + (k - above.sum(axis=1)) * pos_tied / tied.sum(axis=1)) / k


def ranking_metrics(score, y, queries):
    """Mean precision@QUERY_K over the pseudo-queries (its standard error, the oracle's
    mean), global precision@k for PRECISION_KS, AUC."""
    p_q = precision_at_k(score[queries], y[queries], QUERY_K)
    oracle = precision_at_k(y[queries].astype(np.float64), y[queries], QUERY_K)
    out = {"p_at_5": float(p_q.mean()), "p_at_5_se": float(p_q.std(ddof=1) / np.sqrt(p_q.size)),
           "p_at_5_oracle": float(oracle.mean()), "auc": datasets.auc(y, score)}
    for k in PRECISION_KS:
        out[f"precision_at_{k}"] = float(precision_at_k(score[None, :], y[None, :], k)[0])
    return out


# ---------------------------------------------------------------------- settings
def method_params(task, method, lam, n_threads, overrides=None):
    """cbudget parameters of ``method`` on ``task``; ``overrides`` (ablations) replace
    entries (``sample_weight`` goes on the Dataset)."""
    overrides = {k: v for k, v in (overrides or {}).items() if k != "sample_weight"}
    if method == "cegb":
        p = cegb_params("cbudget", "mnist_multires" if task == "mnist38" else "letters", 2,
                        lam, None, n_threads=n_threads)
    else:
        p = {"algorithm": method.split("_")[0], "objective": "binary:logistic",
             "loss": "squared", "cost_tradeoff": float(lam), "reg_alpha": RHO[task],
             "max_depth": DEPTH[method],
             "tree_structure": "prune" if method == "cstc" else "full",
             "class_weight": "balanced" if task == "letters_skewed" else None,
             "eval_metric": ["rmse", PRUNE_METRIC[task]], "tol": 1e-4, "n_jobs": n_threads}
    p.update(overrides)
    return p


def add_arguments(parser):
    parser.add_argument("--no-ablations", action="store_true",
                        help="skip the ablation rows (class weights, rho)")


def plan(args, names):
    """Round-robin over the (task, method) sweeps, each in ``harness.spread`` order
    (a run cut by the time budget keeps whole curves), then the ablation rows."""
    methods = h.parse_choices(args.methods, METHODS, "method")
    lambdas = {key: sorted(h.setting(args, "lambdas", key), reverse=True)
               for key in args.grid["lambdas"]}
    sweeps = {t: h.setting(args, "sweeps", t) for t in DATASETS}
    cegb_rounds = {t: h.setting(args, "cegb_rounds", t) for t in DATASETS}
    todo = h.round_robin([[(t, m, lam, None) for lam in h.spread(lambdas[(t, m)])]
                          for t in names for m in TASK_METHODS[t] if m in methods])
    if not (args.no_ablations or args.quick or args.lambdas):
        todo += [a for a in ABLATIONS if a[0] in names and a[1] in methods]
    spec = {"threads": args.threads, **{k: getattr(args, k) for k in h.ROW_OPTIONS[1:]}}
    jobs = [(t, f"{h.title(t, short=True)} / {METHOD_LABELS[m]} / lambda={lam:g}"
             + (f" / ablation {json.dumps(o)}" if o else ""),
             dict(spec, task=t, method=m, ablation=o, **{"lambda": lam},
                  rounds=cegb_rounds[t] if m == "cegb" else sweeps[t]))
            for t, m, lam, o in todo]
    return jobs, {"threads": args.threads, "settings": {
        "sweeps": sweeps, "cegb_rounds": cegb_rounds,
        "lambdas": {f"{t}/{m}": v for (t, m), v in lambdas.items()},
        "time_budget_min": args.time_budget}}


# ------------------------------------------------------------------------ checks
def check_classifier_tree(model, X, costs):
    """Independent routing and cost accounting of a ClassifierTree / Cascade on ``X``
    (AssertionError on a disagreement): the check figures, per-input cost, acquired."""
    if model.basis is not None:
        raise AssertionError("the check covers models without the boosting trick")
    n = X.shape[0]
    F = np.asarray(X, dtype=np.float64) @ model.weights.T + model.bias
    node, active, rows = np.zeros(n, dtype=np.int64), np.ones(n, dtype=bool), np.arange(n)
    closest = np.full(n, np.inf)   # distance to a threshold on the way
    for _ in range(model.num_nodes()):
        k = node[active]
        f = F[rows[active], k]
        gap = np.abs(f - model.thresholds[k]) / (1.0 + np.abs(model.thresholds[k]))
        routing = (model.upper[k] != -1) | (model.lower[k] != -1)
        closest[rows[active][routing]] = np.minimum(closest[rows[active][routing]], gap[routing])
        child = np.where(f > model.thresholds[k], model.upper[k], model.lower[k])
        stop, idx = child == -1, rows[active]
        node[idx[~stop]] = child[~stop]
        active[idx[stop]] = False
        if not active.any():
            break
    exit_node = np.asarray(model.predict(X, pred_exit=True), dtype=np.int64)
    mismatch = exit_node != node
    if np.any(closest[mismatch] > TIE_TOL):
        raise AssertionError(f"{int(mismatch.sum())} test inputs exit at another node than "
                             "the independent walk, not at a threshold tie")
    margin = np.asarray(model.predict(X, output_margin=True))
    own_margin = F[rows, exit_node]
    margin_diff = float(np.max(np.abs(margin - own_margin))) if n else 0.0
    if not np.allclose(margin, own_margin, rtol=1e-9, atol=1e-9):
        raise AssertionError(f"exit scores differ from output_margin (max |diff| {margin_diff})")
    # per node: the features with a non-zero weight on its path, each once
    path_mask = np.zeros((model.num_nodes(), costs.shape[0]), dtype=bool)
    for k in range(model.num_nodes()):
        for j in model.path(k):
            path_mask[k] |= model.weights[j] != 0
    split_cost = float(model.cost_model.split_cost)
    n_routing = np.array([len(model.path(k)) - 1 + int(not model.is_leaf(k))
                          for k in range(model.num_nodes())])
    own_cost = (path_mask.astype(np.float64) @ costs + split_cost * n_routing)[exit_node]
    checks = h.check_costs(model, X, own_cost, path_mask[exit_node])
    if not np.array_equal(np.sort(np.asarray(model.used_features())),
                          np.flatnonzero(path_mask.any(axis=0))):
        raise AssertionError("used_features differs from the union of non-zero weights")
    return dict(checks, max_abs_margin_diff=margin_diff, route_mismatches=int(mismatch.sum()),
                split_cost=split_cost, n_checked=int(n)), own_cost, path_mask[exit_node]


# ------------------------------------------------------------------------- child
def run_point(spec):
    """Train and measure one (task, method, lambda[, ablation])."""
    import cbudget
    task, method, lam = spec["task"], spec["method"], float(spec["lambda"])
    overrides = spec["ablation"] or {}
    data, fields = h.start_child(dict(spec, dataset=task), "cbudget", keep_valid=True)
    costs = np.asarray(data["feature_costs"], dtype=np.float64)
    params = method_params(task, method, lam, spec["threads"], overrides)
    tree, rounds = method in TREE_METHODS, int(spec["rounds"])
    weighted = overrides.get("sample_weight") == "balanced"
    X_valid, y_valid, X_test, y_test = (data[k] for k in ("X_valid", "y_valid", "X_test", "y_test"))
    trace = {"init_s": None, "sweeps": [], "bookkeeping_s": 0.0, "init_nodes": None}

    class SweepLog(cbudget.TrainingCallback):
        """Elapsed time after the initialisation and after every sweep; per sweep the size
        and validation cost of the model (this bookkeeping's time is not fit time)."""

        def before_training(self, model):
            trace.update(init_s=time.perf_counter() - timer.t0,
                         init_nodes=int(model.num_nodes()) if tree else None)
            return model

        def after_iteration(self, model, epoch, evals_log):
            t0 = time.perf_counter()
            if tree:
                trace["sweeps"].append({
                    "elapsed_s": t0 - timer.t0 - trace["bookkeeping_s"],
                    "nodes": int(model.num_nodes()), "features_used": len(model.used_features()),
                    "valid_mean_cost": float(model.predict_cost(X_valid).mean()),
                    **{f"valid_{k}": float(v[-1]) for k, v in evals_log.get("valid", {}).items()}})
                trace["bookkeeping_s"] += time.perf_counter() - t0
            return False

    stopper = (cbudget.EarlyStopping(PATIENCE, metric_name="rmse", data_name="valid") if tree
               else cbudget.EarlyStopping(CEGB_PATIENCE, metric_name="logloss",
                                          data_name="valid"))
    evals_result = {}
    y = data["y_train"]  # balanced weights: both classes the same total weight
    weight = np.where(y == 1, (y.size - np.count_nonzero(y)) / max(np.count_nonzero(y), 1), 1.0)
    with h.Timer() as timer:
        dtrain = cbudget.Dataset(data["X_train"], y, feature_costs=costs,
                                 feature_names=data["feature_names"],
                                 weight=weight if weighted else None)
        dvalid = cbudget.Dataset(X_valid, y_valid, reference=dtrain)
        t_dataset = time.perf_counter() - timer.t0
        model = cbudget.train(params, dtrain, rounds, evals=[(dvalid, "valid")],
                              evals_result=evals_result, verbose_eval=False,
                              callbacks=[SweepLog(), stopper])
    train_s = timer.wall - trace["bookkeeping_s"]
    best = model.best_iteration
    if tree:
        n_done = len(model.summary.get("objective_per_sweep", []))
        stop = ("early stopping" if best is not None and n_done - 1 - best >= PATIENCE
                else "sweep cap" if n_done >= rounds else "converged (tol)")
    else:
        n_done = model.num_boosted_rounds()
        stop = "early stopping" if n_done < rounds else "round cap"
        if best is not None:
            model = model[:best + 1]

    t = time.perf_counter()
    margin = np.asarray(model.predict(X_test, output_margin=True), dtype=np.float64)
    proba = np.asarray(model.predict(X_test), dtype=np.float64)
    proba_valid = np.asarray(model.predict(X_valid), dtype=np.float64)
    result = {
        **fields, "task": task, "method": method, "lambda": lam, "ablation": overrides or None,
        "params": params, "sample_weight": "balanced" if weighted else None,
        "n_train_original": int(data.get("n_train_original", data["X_train"].shape[0])),
        **{f"pos_rate_{part}": float(np.mean(data[f"y_{part}"]))
           for part in ("train", "valid", "test")},
        "rounds_cap": rounds, "dataset_build_s": t_dataset, "train_s": train_s,
        "train_total_s": train_s, "train_cpu_s": timer.cpu,
        "other_cores_during_train": timer.other,
        "init_s": trace["init_s"], "bookkeeping_s": trace["bookkeeping_s"],
        "sweep_trace": trace["sweeps"], "init_nodes": trace["init_nodes"],
        "iterations": int(n_done), "best_iteration": best, "stop": stop,
        "objective_per_sweep": model.summary.get("objective_per_sweep") if tree else None,
        "valid_log": {k: [float(x) for x in v] for k, v in evals_result.get("valid", {}).items()}
        if tree else None,
        "valid_mean_cost": float(np.asarray(model.predict_cost(X_valid)).mean()),
        "test_error": float(np.mean((proba > 0.5) != (y_test == 1))),
        "valid_error": float(np.mean((proba_valid > 0.5) != (y_valid == 1))),
        "auc_proba": datasets.auc(y_test, proba),
        "valid_auc": datasets.auc(y_valid, np.asarray(model.predict(X_valid, output_margin=True),
                                                      dtype=np.float64))}
    result["accuracy"] = 1.0 - result["test_error"]
    acquired = None
    if tree:
        checks, cost, acquired = check_classifier_tree(model, X_test, costs)
        n_acquired, used = acquired.sum(axis=1), np.asarray(model.used_features())
        exits = np.bincount(np.asarray(model.predict(X_test, pred_exit=True)),
                            minlength=model.num_nodes())
        result.update(nodes=int(model.num_nodes()), exits_test=exits.tolist(), structure={
            "upper": model.upper.tolist(), "lower": model.lower.tolist(),
            "node_features": [int(np.count_nonzero(w)) for w in model.weights],
            "thresholds": model.thresholds.tolist(), "train_exits": model.n_exits.tolist(),
            "train_reach": model.n_samples.tolist(),
            "reached_test": sorted({j for k in np.flatnonzero(exits) for j in model.path(int(k))})})
    else:
        cost, n_acquired, tables, diff = h.check_leaf_path_costs(
            model, X_test, costs, float(model.cost_model.split_cost))
        checks = {"max_abs_cost_diff": diff, "split_cost": float(model.cost_model.split_cost),
                  "n_checked": int(X_test.shape[0])}
        used = tables.used_features()
        result.update(nodes=int(sum(len(t) for t in model.trees)), exits_test=None, structure=None)
    result.update({"features_used": len(used), "mean_cost": float(cost.mean()),
                   **h.cost_fields(cost, n_acquired, costs, data), "checks": checks})
    if task == "mnist38":
        result["auc"] = datasets.auc(y_test, margin)
        by_res = {}  # features used / acquired per input by resolution (the paper's Fig. 13)
        for res, sl in data["resolution_slices"].items():
            entry = {"used": int(np.isin(used, np.arange(costs.shape[0])[sl]).sum())}
            if acquired is not None:
                entry["mean_acquired"] = float(acquired[:, sl].sum(axis=1).mean())
            by_res[str(res)] = entry
        result["by_resolution"] = by_res
    else:
        queries = pseudo_queries(y_test)
        result.update(ranking_metrics(margin, y_test, queries))
        result["queries"] = {"n": int(queries.shape[0]), "size": int(queries.shape[1]),
                             "mean_positives": float(y_test[queries].sum(axis=1).mean())}
    result["eval_s"] = time.perf_counter() - t
    return result


# ------------------------------------------------------------------------ report
def main_points(results, method):
    """Successful main-sweep runs of ``method``, by decreasing lambda."""
    return sorted((r for r in h.ok_results(results) if r["method"] == method
                   and not r["ablation"]), key=lambda r: -r["lambda"])


# the equal-cost comparisons per task: (compared, reference), and the score compared
COMPARED = {"mnist38": (("cstc", "cegb"), ("cegb", "cstc"), ("cstc_full", "cegb"),
                        ("cegb", "cstc_full")),
            "letters_skewed": (("cscc", "cronus"), ("cscc", "cstc"), ("cscc", "cstc_full"),
                               ("cronus", "cstc"), ("cstc", "cegb"), ("cegb", "cstc"),
                               ("cstc_full", "cegb"), ("cegb", "cstc_full"), ("cscc", "cegb"),
                               ("cegb", "cscc"))}
SCORE = {"mnist38": ("accuracy", "test accuracy"), "letters_skewed": ("p_at_5", "mean P@5")}


def _iters(r):
    best, text = r["best_iteration"], f"{r['iterations']}"
    if best is not None and best + 1 != r["iterations"]:
        text += f" (best {best + 1})"
    return text + {"early stopping": " es", "sweep cap": " cap", "round cap": " cap",
                   "converged (tol)": " tol"}.get(r["stop"], "")


def _features(r):
    res = r.get("by_resolution")
    return f"{r['features_used']}" + (" (" + " / ".join(
        str(res[k]["used"]) for k in ("4", "8", "16", "28")) + ")" if res else "")


SCORE_COLUMNS = {
    "mnist38": [("test error", h.col("test_error", ".4f")),
                ("valid error", h.col("valid_error", ".4f")), ("test AUC", h.col("auc", ".4f"))],
    "letters_skewed": [
        ("mean P@5 (queries)", lambda r: f"{r['p_at_5']:.4f} ± {r['p_at_5_se']:.4f}"),
        *[(f"P@{k}", h.col(f"precision_at_{k}", ".3f")) for k in PRECISION_KS],
        ("AUC", h.col("auc", ".4f")), ("AUC (clipped prob.)", h.col("auc_proba", ".4f"))]}


def runs_table(task, runs, ablation=False):
    q = ("0.1", "0.5", "0.9")
    return h.points_table(runs, [
        ("method", lambda r: METHOD_LABELS[r["method"]]), ("lambda", lambda r: f"{r['lambda']:g}"),
        *([("ablation", lambda r: json.dumps(r["ablation"]))] if ablation else []),
        *SCORE_COLUMNS[task], ("mean test cost", h.col("mean_cost", ",.2f")),
        ("cost q10 / q50 / q90", lambda r: " / ".join(f"{r['cost_quantiles'][k]:.0f}" for k in q)),
        ("features used" + (" (4x4 / 8x8 / 16x16 / 28x28)" if task == "mnist38" else ""),
         _features),
        ("nodes / reached", lambda r: f"{r['nodes']} / {len(r['structure']['reached_test'])}"
         if r["structure"] else f"{r['nodes']:,}"),
        ("exits % by node", lambda r: " / ".join(f"{100 * c / sum(r['exits_test']):.0f}"
                                                 for c in r["exits_test"] or ())),
        ("iterations", _iters), ("fit s", h.col("train_s", ".1f"))])


def render(doc):
    out = []
    for task, results in doc["results"].items():
        ok = h.ok_results(results)
        if not ok:
            continue
        r0, (key, name) = ok[0], SCORE[task]
        pts = {m: main_points(results, m) for m in TASK_METHODS[task]}
        out += [f"## {h.title(task)}", "",
                h.sizes_text(r0) + (f" ({r0['n_train_original']:,} training rows before "
                                    "replication)" if r0["n_train_original"] != r0["n_train"]
                                    else "")
                + (f"; positives {r0['pos_rate_train']:.2%} in training, "
                   f"{r0['pos_rate_valid']:.2%} in validation, {r0['pos_rate_test']:.2%} in test."),
                ""] + runs_table(task, [r for m in TASK_METHODS[task] for r in pts[m]]) + [""]
        ablations = [r for r in ok if r["ablation"]]
        if ablations:
            out += ["Ablations:", ""] + runs_table(task, ablations, ablation=True) + [""]
        for a, b in COMPARED[task]:
            if pts[a] and pts[b]:
                out += [f"**{METHOD_LABELS[a]} vs {METHOD_LABELS[b]}** (reference "
                        f"{METHOD_LABELS[b]}):", ""]
                out += h.comparison_table(pts[a], pts[b], (METHOD_LABELS[b], METHOD_LABELS[a],
                                                           "mean cost", name),
                                          lambda r: f"lambda={r['lambda']:g}", score_key=key,
                                          cost_fmt=",.1f") + [""]
    return out


PLOT_STYLE = {"cstc": ("o-", "tab:red"), "cstc_full": ("v-", "tab:orange"),
              "cscc": ("s-", "tab:blue"), "cronus": ("^-", "tab:green"),
              "cegb": ("D--", "tab:gray")}


def plot(doc, path):
    results, panels = doc["results"], []
    if h.ok_results(results.get("mnist38", [])):
        panels.append(("mnist38", "test_error", "test error"))
    if h.ok_results(results.get("letters_skewed", [])):
        panels += [("letters_skewed", "p_at_5", "mean precision@5 (pseudo-queries)"),
                   ("letters_skewed", "auc", "test AUC")]

    def draw(ax, panel, plt):
        task, key, ylabel = panel
        for m in TASK_METHODS[task]:
            h.curve(ax, main_points(results[task], m), "mean_cost", key, PLOT_STYLE[m][0],
                    color=PLOT_STYLE[m][1], label=METHOD_LABELS[m],
                    annotate=lambda r: f"{r['lambda']:g}", markersize=4)
        oracle = key == "p_at_5" and h.ok_results(results[task])[0]["p_at_5_oracle"]
        if oracle:
            ax.axhline(oracle, color="k", linestyle=":", linewidth=0.8, label="perfect ranking")
        mnist = task == "mnist38"  # CEGB's points sit below 60, the trees' up to 600
        h.finish_axis(ax, "mean test cost per input (features acquired; each costs 1)"
                      + (", symlog" if mnist else ""), ylabel, h.title(task, short=True),
                      xscale="symlog" if mnist else None, linthresh=10.0, legend_size=7)
    return h.plot_panels(path, doc, panels, draw, "CSTC / CSCC / Cronus vs CEGB: test score vs "
                         "mean test cost (labels: lambda)", "left: MNIST test error vs mean test "
                         "cost; middle / right: Letters mean P@5 and AUC vs mean test cost; "
                         "labels are lambdas", (5.6, 4.4))


if __name__ == "__main__":
    sys.exit(h.main(sys.modules[__name__]))
