"""CSTC / CSCC / Cronus benchmark: error and precision against feature cost, vs CEGB.

Trees and cascades of linear classifiers (cbudget ``cstc``, ``cscc``, ``cronus``) over
lambda sweeps against CEGB on ``mnist38`` (3 vs 8 of ``load_mnist_multires``) and
``letters_skewed`` (A vs rest, training negatives x ``NEG_REPLICATION``; precision@5 over
pseudo-queries). Every run checks an independent walk of the test inputs (exit, score,
cost of the non-zero weights on the path) against ``predict``, ``predict_cost``,
``cost_report`` and ``used_features`` (CEGB: the leaf-path cost check). Protocol and
options: benchmarks/README.md.
"""
import json
import sys
import time

import datasets
import harness as h
import numpy as np
from bench_cegb import cegb_params

NAME = "cstc"
TITLE = "CSTC / CSCC / Cronus benchmark: error and precision vs feature cost (vs CEGB)"
DATASETS = ("mnist38", "letters_skewed")
INFO_LIBRARIES = ("scipy",)
TIME_BUDGET = 45.0   # default --time-budget (minutes)
SUBSET_OPTION = "methods"
IDENT = ("task", "method", "lambda", "ablation")
QUICK_OUTPUT = "/tmp/cstc_quick.md"
TASK_TITLES = {
    "mnist38": "Cost-sensitive MNIST, 3 vs 8 (paper section 6.7; 1,120 multi-resolution "
               "pixels, cost 1 each)",
    "letters_skewed": "Letters, 'A' vs rest, negatives x10 in training (paper section 6.3 "
                      "style; 16 features, cost 1 each)",
}
TASK_SHORT = {"mnist38": "MNIST 3 vs 8", "letters_skewed": "Letters A vs rest (skewed)"}
METHODS = ("cstc", "cstc_full", "cscc", "cronus", "cegb")
TASK_METHODS = {"mnist38": ("cstc", "cstc_full", "cegb"),
                "letters_skewed": ("cscc", "cronus", "cstc", "cstc_full", "cegb")}
METHOD_LABELS = {"cstc": "CSTC (pruned)", "cstc_full": "CSTC (full tree)", "cscc": "CSCC",
                 "cronus": "Cronus", "cegb": "CEGB"}
TREE_METHODS = ("cstc", "cstc_full", "cscc", "cronus")
MNIST_DIGITS = (3, 8)          # the second is the positive class
LETTER = "A"                   # the positive class of letters_skewed
NEG_REPLICATION = 10           # copies of every training negative (section 6.3)
# settings of the full run (the README says how they were chosen)
_TREE_MNIST = (0.5, 0.3, 0.1, 0.03, 0.01, 0.003, 0.001)
_TREE_LETTERS = (1.5, 1.0, 0.5, 0.3, 0.1, 0.03, 0.01, 0.003)
LAMBDAS = {
    ("mnist38", "cstc"): _TREE_MNIST, ("mnist38", "cstc_full"): _TREE_MNIST,
    ("mnist38", "cegb"): (0.1, 0.03, 0.01, 3e-3, 1e-3, 3e-4, 0.0),
    ("letters_skewed", "cscc"): _TREE_LETTERS, ("letters_skewed", "cronus"): _TREE_LETTERS,
    ("letters_skewed", "cstc"): _TREE_LETTERS, ("letters_skewed", "cstc_full"): _TREE_LETTERS,
    ("letters_skewed", "cegb"): (0.01, 1e-3, 3e-4, 1e-4, 3e-5, 0.0),
}
RHO = {"mnist38": 1e-3, "letters_skewed": 1e-2}
SWEEPS = {"mnist38": 10, "letters_skewed": 10}
PATIENCE = 2
CEGB_ROUNDS = {"mnist38": 200, "letters_skewed": 200}
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
QUICK = {"train_rows": 1500, "valid_rows": 500, "test_rows": 500, "sweeps": 2,
         "cegb_rounds": 20,
         "lambdas": {("mnist38", "cstc"): (0.3, 0.03), ("mnist38", "cegb"): (1.0, 0.03),
                     ("letters_skewed", "cscc"): (1.0, 0.1),
                     ("letters_skewed", "cronus"): (1.0, 0.1),
                     ("letters_skewed", "cstc"): (1.0, 0.1),
                     ("letters_skewed", "cstc_full"): (1.0, 0.1),
                     ("mnist38", "cstc_full"): (0.3, 0.03),
                     ("letters_skewed", "cegb"): (0.01, 1e-3)}}
QUICK_HELP = "1,500 / 500 / 500 rows, 2 sweeps, 20 CEGB rounds, 2 lambdas per method"
TIE_TOL = 1e-9         # route mismatches allowed this close to a threshold (relative)


# -------------------------------------------------------------------------- data
def load_task(task, train_rows=None, valid_rows=None, test_rows=None):
    """The binary task ``task``: ``X_{train,valid,test}`` float32 C-contiguous, ``y_*``
    0/1, ``feature_costs``, ``feature_names``; ``*_rows`` keep the first rows (Letters:
    before the replication; it adds ``n_train_original``, ``train_source``); MNIST adds
    ``resolution_slices``."""
    parts = (("train", train_rows), ("valid", valid_rows), ("test", test_rows))
    if task == "mnist38":
        d = datasets.load_mnist_multires(seed=0, n_valid=10000)
        out = {k: d[k] for k in ("feature_costs", "feature_names", "resolution_slices")}
        for part, rows in parts:
            keep = np.flatnonzero(np.isin(d[f"y_{part}"], MNIST_DIGITS))[:rows]
            out[f"X_{part}"] = np.ascontiguousarray(d[f"X_{part}"][keep])
            out[f"y_{part}"] = (d[f"y_{part}"][keep] == MNIST_DIGITS[1]).astype(np.int32)
        return out
    if task != "letters_skewed":
        raise ValueError(f"unknown task {task!r}; valid: {', '.join(DATASETS)}")
    d = datasets.load_letters(seed=0)
    out = {"feature_costs": d["feature_costs"], "feature_names": d["feature_names"]}
    for part, rows in parts:
        out[f"X_{part}"] = np.ascontiguousarray(d[f"X_{part}"][:rows])
        out[f"y_{part}"] = (d[f"y_{part}"][:rows] == ord(LETTER) - ord("A")).astype(np.int32)
    y = out["y_train"]
    out["n_train_original"] = int(y.shape[0])
    # every negative NEG_REPLICATION times (its copies next to it), positives once
    source = np.repeat(np.arange(y.shape[0]), np.where(y == 0, NEG_REPLICATION, 1))
    out["train_source"] = source
    out["X_train"] = np.ascontiguousarray(out["X_train"][source])
    out["y_train"] = y[source]
    return out


def balanced_weight(y):
    """Sample weights giving both classes the same total weight (positives n_neg / n_pos)."""
    n_pos = int(np.count_nonzero(y == 1))
    return np.where(y == 1, (y.shape[0] - n_pos) / max(n_pos, 1), 1.0)


# ----------------------------------------------------------------------- metrics
def pseudo_queries(y, n_queries=N_QUERIES, size=QUERY_SIZE, replication=NEG_REPLICATION,
                   seed=QUERY_SEED):
    """Row indices (n_queries, size): per group k ~ Binomial(size, p) positives with p =
    n_pos / (n_pos + replication * n_neg), redrawn while k = 0 (capped by n_pos), and
    size - k negatives, drawn without replacement."""
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
    parser.add_argument("--lambdas", default=None,
                        help="trade-offs for every (task, method) (default LAMBDAS)")
    parser.add_argument("--sweeps", type=int, default=None,
                        help="cap on the sweeps of CSTC / CSCC / Cronus (default 10)")
    parser.add_argument("--cegb-rounds", type=int, default=None,
                        help="cap on CEGB's rounds (default 200)")
    parser.add_argument("--no-ablations", action="store_true",
                        help="skip the ablation rows (class weights, rho)")
    h.add_row_arguments(parser, ("train", "valid", "test"))


def plan(args, names):
    """Round-robin over the (task, method) sweeps, each in ``harness.spread`` order
    (a run cut by the time budget keeps whole curves), then the ablation rows."""
    methods = h.parse_choices(args.methods, METHODS, "method")
    if args.lambdas:
        lambdas = dict.fromkeys(LAMBDAS, h.parse_values(args.lambdas)[::-1])
    else:
        lambdas = dict(QUICK["lambdas"] if args.quick else LAMBDAS)
    sweeps = {t: args.sweeps or (QUICK["sweeps"] if args.quick else SWEEPS[t])
              for t in DATASETS}
    cegb_rounds = {t: args.cegb_rounds or (QUICK["cegb_rounds"] if args.quick
                                           else CEGB_ROUNDS[t]) for t in DATASETS}
    queues = [[(t, m, lam, None) for lam in h.spread(lambdas[(t, m)])]
              for t in names for m in TASK_METHODS[t] if m in methods]
    todo = [q.pop(0) for _ in range(max(map(len, queues), default=0)) for q in queues if q]
    if not (args.no_ablations or args.quick or args.lambdas):
        todo += [a for a in ABLATIONS if a[0] in names and a[1] in methods]
    spec = {"threads": args.threads, **{k: getattr(args, k) for k in h.ROW_OPTIONS[1:]}}
    jobs = [(t, f"{TASK_SHORT[t]} / {METHOD_LABELS[m]} / lambda={lam:g}"
             + (f" / ablation {json.dumps(o)}" if o else ""),
             dict(spec, task=t, method=m, ablation=o, **{"lambda": lam},
                  rounds=cegb_rounds[t] if m == "cegb" else sweeps[t]))
            for t, m, lam, o in todo]
    return jobs, {"threads": args.threads, "settings": {
        "sweeps": sweeps, "cegb_rounds": cegb_rounds,
        "lambdas": {f"{t}/{m}": list(v) for (t, m), v in lambdas.items()},
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
        closest[rows[active][routing]] = np.minimum(closest[rows[active][routing]],
                                                    gap[routing])
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
    lib_cost = np.asarray(model.predict_cost(X))
    cost_diff = float(np.max(np.abs(own_cost - lib_cost))) if n else 0.0
    if not np.allclose(own_cost, lib_cost, rtol=h.COST_CHECK_TOL, atol=h.COST_CHECK_TOL):
        raise AssertionError(f"independent per-input cost differs from predict_cost (max "
                             f"|diff| {cost_diff}; means {own_cost.mean()} vs "
                             f"{lib_cost.mean()})")
    acquired = path_mask[exit_node]
    rate = np.asarray(model.cost_report(X).acquisition_rate)
    rate_diff = float(np.max(np.abs(rate - acquired.mean(axis=0)))) if n else 0.0
    if rate_diff > 1e-12:
        raise AssertionError(f"acquisition rates differ from cost_report ({rate_diff})")
    if not np.array_equal(np.sort(np.asarray(model.used_features())),
                          np.flatnonzero(path_mask.any(axis=0))):
        raise AssertionError("used_features differs from the union of non-zero weights")
    return {"max_abs_cost_diff": cost_diff, "max_abs_margin_diff": margin_diff,
            "max_abs_rate_diff": rate_diff, "route_mismatches": int(mismatch.sum()),
            "split_cost": split_cost, "n_checked": int(n)}, own_cost, acquired


# ------------------------------------------------------------------------- child
def run_point(spec):
    """Train and measure one (task, method, lambda[, ablation])."""
    import cbudget
    task, method, lam = spec["task"], spec["method"], float(spec["lambda"])
    overrides = spec["ablation"] or {}
    version, location = h.library_version("cbudget")
    t = time.perf_counter()
    data = load_task(task, spec["train_rows"], spec["valid_rows"], spec["test_rows"])
    t_load = time.perf_counter() - t
    rss_after_load = h.rss_bytes()
    costs = np.asarray(data["feature_costs"], dtype=np.float64)
    params = method_params(task, method, lam, spec["threads"], overrides)
    tree, rounds = method in TREE_METHODS, int(spec["rounds"])
    weighted = overrides.get("sample_weight") == "balanced"
    X_valid, y_valid = data["X_valid"], data["y_valid"]
    trace = {"init_s": None, "sweeps": [], "bookkeeping_s": 0.0, "init_nodes": None}

    class SweepLog(cbudget.TrainingCallback):
        """Elapsed time after the initialisation and after every sweep; per sweep the
        validation cost and size of the model (its time is not fit time)."""

        def before_training(self, model):
            trace["init_s"] = time.perf_counter() - timer.t0
            if tree:
                trace["init_nodes"] = int(model.num_nodes())
            return model

        def after_iteration(self, model, epoch, evals_log):
            elapsed = time.perf_counter() - timer.t0
            if tree:
                t0 = time.perf_counter()
                valid = {k: float(v[-1]) for k, v in evals_log.get("valid", {}).items()}
                trace["sweeps"].append({
                    "elapsed_s": elapsed - trace["bookkeeping_s"],
                    "nodes": int(model.num_nodes()),
                    "features_used": len(model.used_features()),
                    "valid_mean_cost": float(model.predict_cost(X_valid).mean()),
                    **{f"valid_{k}": v for k, v in valid.items()}})
                trace["bookkeeping_s"] += time.perf_counter() - t0
            return False

    stopper = (cbudget.EarlyStopping(PATIENCE, metric_name="rmse", data_name="valid") if tree
               else cbudget.EarlyStopping(CEGB_PATIENCE, metric_name="logloss",
                                          data_name="valid"))
    evals_result = {}
    with h.Timer() as timer:
        dtrain = cbudget.Dataset(
            data["X_train"], data["y_train"], feature_costs=costs,
            feature_names=data["feature_names"],
            weight=balanced_weight(data["y_train"]) if weighted else None)
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
    X_test, y_test = data["X_test"], data["y_test"]
    margin = np.asarray(model.predict(X_test, output_margin=True), dtype=np.float64)
    proba = np.asarray(model.predict(X_test), dtype=np.float64)
    margin_valid = np.asarray(model.predict(X_valid, output_margin=True), dtype=np.float64)
    proba_valid = np.asarray(model.predict(X_valid), dtype=np.float64)
    exits = structure = acquired = None
    if tree:
        checks, cost, acquired = check_classifier_tree(model, X_test, costs)
        n_acquired, used = acquired.sum(axis=1), np.asarray(model.used_features())
        exits = np.bincount(np.asarray(model.predict(X_test, pred_exit=True)),
                            minlength=model.num_nodes())
        structure = {"upper": model.upper.tolist(), "lower": model.lower.tolist(),
                     "node_features": [int(np.count_nonzero(w)) for w in model.weights],
                     "thresholds": model.thresholds.tolist(),
                     "train_exits": model.n_exits.tolist(),
                     "train_reach": model.n_samples.tolist(),
                     "reached_test": sorted({j for k in np.flatnonzero(exits)
                                             for j in model.path(int(k))})}
        n_nodes = int(model.num_nodes())
    else:
        cost, n_acquired, tables, diff = h.check_leaf_path_costs(
            model, X_test, costs, float(model.cost_model.split_cost))
        checks = {"max_abs_cost_diff": diff, "split_cost": float(model.cost_model.split_cost),
                  "n_checked": int(X_test.shape[0])}
        used, n_nodes = tables.used_features(), int(sum(len(t) for t in model.trees))
    result = {
        "task": task, "method": method, "lambda": lam, "ablation": overrides or None,
        "version": version, "location": location, "params": params,
        "sample_weight": "balanced" if weighted else None,
        "n_train": int(data["X_train"].shape[0]),
        "n_train_original": int(data.get("n_train_original", data["X_train"].shape[0])),
        "pos_rate_train": float(np.mean(data["y_train"])),
        "n_valid": int(X_valid.shape[0]), "pos_rate_valid": float(np.mean(y_valid)),
        "n_test": int(X_test.shape[0]), "pos_rate_test": float(np.mean(y_test)),
        "n_features": int(costs.shape[0]), "rounds_cap": rounds, "n_threads": spec["threads"],
        "load_s": t_load, "dataset_build_s": t_dataset, "train_s": train_s,
        "train_total_s": train_s, "train_cpu_s": timer.cpu,
        "other_cores_during_train": timer.other, "loadavg_before": timer.load_before,
        "loadavg_after": h.loadavg(), "init_s": trace["init_s"],
        "bookkeeping_s": trace["bookkeeping_s"], "sweep_trace": trace["sweeps"],
        "init_nodes": trace["init_nodes"], "iterations": int(n_done), "best_iteration": best,
        "stop": stop,
        "objective_per_sweep": model.summary.get("objective_per_sweep") if tree else None,
        "valid_log": {k: [float(x) for x in v] for k, v in evals_result.get("valid", {}).items()}
        if tree else None,
        "nodes": n_nodes, "features_used": len(used),
        "exits_test": exits.tolist() if exits is not None else None, "structure": structure,
        "mean_cost": float(cost.mean()),
        "valid_mean_cost": float(np.asarray(model.predict_cost(X_valid)).mean()),
        **h.cost_fields(cost, n_acquired, costs, data), "checks": checks,
        "test_error": float(np.mean((proba > 0.5) != (y_test == 1))),
        "valid_error": float(np.mean((proba_valid > 0.5) != (y_valid == 1))),
        "auc_proba": datasets.auc(y_test, proba), "valid_auc": datasets.auc(y_valid, margin_valid),
    }
    result["accuracy"] = 1.0 - result["test_error"]
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
    result["rss_after_load_mb"] = rss_after_load / 2**20
    result["peak_rss_mb"] = h.maxrss_bytes() / 2**20
    return result


# ---------------------------------------------------------------------- analysis
def main_points(results, method):
    """Successful main-sweep runs of ``method``, by decreasing lambda."""
    return sorted((r for r in h.ok_results(results) if r["method"] == method
                   and not r["ablation"]), key=lambda r: -r["lambda"])


def comparisons(results):
    """The equal-cost comparisons: (section (2: on Letters, 3: against CEGB), title,
    table lines)."""
    pts = {(t, m): main_points(results.get(t, []), m) for t in DATASETS
           for m in TASK_METHODS[t]}
    pairs = [(2, "letters_skewed", a, b, "p_at_5", "P@5") for a, b in (
        ("cscc", "cronus"), ("cscc", "cstc"), ("cscc", "cstc_full"), ("cronus", "cstc"))]
    pairs += [(3, t, x, y, key, name)
              for t, m, key, name in ([("mnist38", m, "accuracy", "test accuracy")
                                       for m in ("cstc", "cstc_full")]
                                      + [("letters_skewed", m, "p_at_5", "mean P@5")
                                         for m in ("cstc", "cstc_full", "cscc")])
              if pts[(t, m)] and pts[(t, "cegb")] for x, y in ((m, "cegb"), ("cegb", m))]
    return [(sec, (f"**{TASK_SHORT[t] + ': ' if sec == 3 else ''}{METHOD_LABELS[a]} vs "
                   f"{METHOD_LABELS[b]}** (reference {METHOD_LABELS[b]})"),
             h.comparison_table(pts[(t, a)], pts[(t, b)], (METHOD_LABELS[b], METHOD_LABELS[a],
                                                          "mean cost", name),
                                lambda r: f"lambda={r['lambda']:g}", score_key=key,
                                cost_fmt=",.1f"))
            for sec, t, a, b, key, name in pairs if pts[(t, a)] and pts[(t, b)]]


# ------------------------------------------------------------------------ report
def _iters(r):
    best, text = r["best_iteration"], f"{r['iterations']}"
    if best is not None and best + 1 != r["iterations"]:
        text += f" (best {best + 1})"
    return text + {"early stopping": " es", "sweep cap": " cap", "round cap": " cap",
                   "converged (tol)": " tol"}.get(r["stop"], "")


def _cells(r):
    """The cells the tables share: exits % by node, nodes / reached, cost quantiles."""
    e, st, q = r.get("exits_test"), r.get("structure"), r["cost_quantiles"]
    return {"exits": " / ".join(f"{100 * c / sum(e):.0f}" for c in e) if e else "",
            "nodes": f"{r['nodes']} / {len(st['reached_test'])}" if st else f"{r['nodes']:,}",
            "q": f"{q['0.1']:.0f} / {q['0.5']:.0f} / {q['0.9']:.0f}"}


def mnist_table(pts):
    rows = []
    for r in pts:
        c, res = _cells(r), r.get("by_resolution", {})
        by = " / ".join(str(res.get(k, {}).get("used", "?")) for k in ("4", "8", "16", "28"))
        rows.append([f"{r['lambda']:g}", f"{r['test_error']:.4f}", f"{r['mean_cost']:,.1f}",
                     c["q"], c["nodes"], f"{r['features_used']} ({by})", c["exits"], _iters(r),
                     f"{r['train_s']:.1f}", f"{r['valid_error']:.4f}", f"{r['auc']:.4f}"])
    return h.table(["lambda", "test error", "mean test cost", "cost q10 / q50 / q90",
                    "nodes / reached", "features used (4x4 / 8x8 / 16x16 / 28x28)",
                    "exits % by node", "sweeps", "fit s", "valid error", "test AUC"],
                   rows, "rrrrrlllrrr")


def cegb_mnist_table(pts):
    return h.table(["lambda", "test error", "mean test cost", "cost q10 / q50 / q90",
                    "features used", "rounds", "fit s", "test AUC"],
                   [[f"{r['lambda']:g}", f"{r['test_error']:.4f}", f"{r['mean_cost']:,.1f}",
                     _cells(r)["q"], r["features_used"], _iters(r), f"{r['train_s']:.1f}",
                     f"{r['auc']:.4f}"] for r in pts], "rrrrrlrr")


def letters_table(pts):
    rows = [[METHOD_LABELS[r["method"]], f"{r['lambda']:g}",
             f"{r['p_at_5']:.4f} ± {r['p_at_5_se']:.4f}"]
            + [f"{r[f'precision_at_{k}']:.3f}" for k in PRECISION_KS]
            + [f"{r['auc']:.4f}", f"{r['auc_proba']:.4f}", f"{r['mean_cost']:.2f}",
               r["features_used"], _cells(r)["nodes"], _cells(r)["exits"], _iters(r),
               f"{r['train_s']:.1f}"] for r in pts]
    return h.table(["method", "lambda", "mean P@5 (queries)"]
                   + [f"P@{k}" for k in PRECISION_KS]
                   + ["AUC", "AUC (clipped prob.)", "mean test cost", "features used",
                      "nodes / reached", "exits % by node", "iterations", "fit s"],
                   rows, "lrr" + "r" * len(PRECISION_KS) + "rrrrllr")


def fit_time_table(results):
    rows = []
    for task in DATASETS:
        for m in TASK_METHODS[task]:
            rs = main_points(results.get(task, []), m)
            if not rs:
                continue
            fits, per, inits, after = [r["train_s"] for r in rs], [], [], []
            for r in rs:
                if m in TREE_METHODS and r["init_s"] is not None and r["iterations"]:
                    end = r["sweep_trace"][-1]["elapsed_s"] if r["sweep_trace"] else r["init_s"]
                    per.append((end - r["init_s"]) / max(1, len(r["sweep_trace"])))
                    inits.append(r["init_s"] - r["dataset_build_s"])
                    after.append(r["train_s"] - end)
                elif m == "cegb" and r["iterations"]:
                    per.append((r["train_s"] - r["dataset_build_s"]) / r["iterations"])
            rows.append([TASK_SHORT[task], METHOD_LABELS[m], len(rs),
                         f"{min(fits):.1f} / {float(np.median(fits)):.1f} / {max(fits):.1f}"]
                        + [h.fmt(float(np.median(v)) if v else None, spec)
                           for v, spec in ((per, ".2f"), (inits, ".1f"), (after, ".1f"))])
    return h.table(["task", "method", "runs", "fit s: min / median / max",
                    "s per sweep or round (median)", "structure + initialisation s (median)",
                    ("after the last sweep s (median: best sweep restored, leaves fine-tuned, "
                    "training costs recorded)")], rows, "llrlrrr")


def render(doc):
    results, out = doc["results"], []
    mn = results.get("mnist38", [])
    lt = results.get("letters_skewed", [])
    comps = comparisons(results)
    if any(main_points(mn, m) for m in ("cstc", "cstc_full")):
        r0 = h.ok_results(mn)[0]
        out += [f"## 1. CSTC on {TASK_TITLES['mnist38']}", "",
                (f"{r0['n_train']:,} training / {r0['n_valid']:,} validation / "
                f"{r0['n_test']:,} test rows ({r0['pos_rate_test']:.1%} eights in the test "
                "set)."), ""]
        for m in ("cstc", "cstc_full"):
            if main_points(mn, m):
                out += [f"**{METHOD_LABELS[m]}**", ""] + mnist_table(main_points(mn, m)) + [""]
        abl = [r for r in h.ok_results(mn) if r["method"] in ("cstc", "cstc_full")
               and r["ablation"]]
        if abl:
            out += ["rho check (ablation, same settings otherwise):", ""]
            out += mnist_table(abl) + [""]
    if any(main_points(lt, m) for m in TASK_METHODS["letters_skewed"]):
        r0 = next(r for m in TASK_METHODS["letters_skewed"] for r in main_points(lt, m))
        out += [f"## 2. CSCC vs Cronus vs CSTC on {TASK_TITLES['letters_skewed']}", "",
                (f"{r0['n_train_original']:,} training rows before replication, "
                f"{r0['n_train']:,} after ({r0['pos_rate_train']:.2%} positives); "
                f"{r0['n_valid']:,} validation ({r0['pos_rate_valid']:.2%}) and "
                f"{r0['n_test']:,} test rows ({r0['pos_rate_test']:.2%}), unreplicated."), ""]
        out += letters_table([r for m in TASK_METHODS["letters_skewed"]
                              for r in main_points(lt, m)]) + [""]
        for _, title, lines in (c for c in comps if c[0] == 2):
            out += [title, ""] + lines + [""]
        abl = [r for r in h.ok_results(lt) if r["ablation"]]
        if abl:
            out += ["Ablations (class weighting; the lambda of the matching main row):", ""]
            out += letters_table(abl) + [""]
    cegb_m = main_points(mn, "cegb")
    if cegb_m or any(c[0] == 3 for c in comps):
        out += ["## 3. CSTC (and CSCC) vs CEGB", ""]
        if cegb_m:
            out += [f"CEGB on {TASK_SHORT['mnist38']}:", ""] + cegb_mnist_table(cegb_m) + [""]
        for _, title, lines in (c for c in comps if c[0] == 3):
            out += [title, ""] + lines + [""]
    if any(h.ok_results(rs) for rs in results.values()):
        out += ["## Fit time", "", "Main-sweep runs (ablations excluded):", ""]
        out += fit_time_table(results) + [""]
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
                      + (", symlog" if mnist else ""), ylabel, TASK_SHORT[task],
                      xscale="symlog" if mnist else None, linthresh=10.0, legend_size=7)
    return h.plot_panels(path, doc, panels, draw, "CSTC / CSCC / Cronus vs CEGB: test score vs "
                         "mean test cost (labels: lambda)", "left: MNIST test error vs mean test "
                         "cost; middle / right: Letters mean P@5 and AUC vs mean test cost; "
                         "labels are lambdas", (5.6, 4.4))


if __name__ == "__main__":
    sys.exit(h.main(sys.modules[__name__]))
