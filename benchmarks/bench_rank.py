"""Ranking benchmark: NDCG@5 and precision@5 vs feature cost (cbudget vs LightGBM lambdarank).

cbudget CEGB, Greedy Miser (``rank:ndcg``) and CSTC / CSCC (regression on the relevance
labels) over lambda sweeps, against LightGBM ``lambdarank`` with and without its CEGB
penalties (``cegb_tradeoff = 2 * lambda``), on the LightGBM LTR sample and a synthetic
ranking set with Yahoo-like costs; plus the equal-trees check of cbudget ``gbdt``
``rank:ndcg`` against LightGBM ``lambdarank``. One metric routine and one cost routine
for every model. Protocol: benchmarks/README.md.
"""
import inspect
import sys
import time

import datasets
import harness as h
import numpy as np

DATASETS = ("ltr_sample", "synthetic_rank")
IDENT = ("dataset", "protocol", "method", "lambda", "fold")
ROWS = ()
TIME_BUDGET = 40.0  # default --time-budget (minutes)
METHODS = ("lightgbm", "gbdt", "lightgbm_cegb", "cegb", "greedy_miser", "cstc", "cscc")
SWEPT = ("lightgbm_cegb", "cegb", "greedy_miser", "cstc", "cscc")
METHOD_LABELS = {"lightgbm": "LightGBM lambdarank", "gbdt": "cbudget gbdt rank:ndcg",
                 "lightgbm_cegb": "LightGBM lambdarank + CEGB", "cegb": "cbudget CEGB",
                 "greedy_miser": "cbudget Greedy Miser", "cstc": "cbudget CSTC",
                 "cscc": "cbudget CSCC"}
LIBRARY = {m: "lightgbm" if m.startswith("lightgbm") else "cbudget" for m in METHODS}
TITLES = {"ltr_sample": "LightGBM LTR sample (201 training queries, 40 of them held out for "
                        "validation; 300 features with synthetic Yahoo-like costs)",
          "synthetic_rank": "Synthetic ranking set (make_synthetic_ranking, seed 0; 32 "
                            "features with costs 1 ... 200)"}
# the full run (the README says how the lambdas were chosen); the lambdas of
# "lightgbm_cegb" are cbudget CEGB's (LightGBM gets cegb_tradeoff = 2 * lambda)
FULL = {
    "rounds": {"ltr_sample": 300, "synthetic_rank": 500},   # cap of the boosted models
    "patience": 30,                                          # early stopping, valid NDCG@5
    "equal_rounds": 100,                                     # the equal-trees check
    "folds": 5,                                              # ... cross-validated
    "sweeps": 10,                                            # cap of CSTC / CSCC sweeps
    "n_queries": 10_000,                                     # of make_synthetic_ranking
    "lambdas": {
        ("ltr_sample", "cegb"): (0.0, 1e-5, 3e-5, 1e-4, 3e-4, 1e-3, 3e-3, 5e-3),
        ("synthetic_rank", "cegb"): (0.0, 1e-5, 3e-5, 1e-4, 2e-4, 3e-4, 6e-4, 1e-3, 2e-3,
                                     3e-3),
        ("ltr_sample", "greedy_miser"): (0.0, 0.01, 0.1, 0.3, 1.0, 1.5, 2.0),
        ("synthetic_rank", "greedy_miser"): (0.0, 0.01, 0.03, 0.1, 0.3, 1.0, 3.0, 7.0, 13.0,
                                             16.0),
        **{(d, m): (0.3, 0.1, 0.03, 0.01, 0.003, 0.001) for d in ("ltr_sample", "synthetic_rank")
           for m in ("cstc", "cscc")}}}
QUICK = {"rounds": {"ltr_sample": 20, "synthetic_rank": 20}, "patience": 5,
         "equal_rounds": 10, "folds": 2, "sweeps": 2, "n_queries": 300,
         "lambdas": {**{(d, "cegb"): (0.0, 1e-3) for d in DATASETS},
                     **{(d, "greedy_miser"): (0.0, 0.1) for d in DATASETS},
                     **{(d, m): (0.1,) for d in DATASETS for m in ("cstc", "cscc")}}}
K, RELEVANT = 5, 3          # NDCG@5 and precision@5 with relevance label >= 3
PRECISION = f"precision@{K}>={RELEVANT}"
TRUNCATION = 30             # lambdarank_truncation_level of both libraries
CSTC_RHO, CSTC_PATIENCE = 0.01, 2
DEPTH = {"cstc": 3, "cscc": 4}


def add_arguments(parser):
    parser.add_argument("--no-equal-trees", action="store_true",
                        help="skip the equal-trees check (cbudget gbdt vs LightGBM "
                             "lambdarank on the whole LTR sample)")


# ---------------------------------------------------------------------- settings
def params(method, lam, n_threads, costs=None):
    """Training parameters of ``method`` at trade-off ``lam`` (cbudget's cost_tradeoff)."""
    if LIBRARY[method] == "lightgbm":
        p = dict(h.library_params("lightgbm", 2, n_threads), objective="lambdarank",
                 metric="ndcg", eval_at=[K], lambdarank_truncation_level=TRUNCATION,
                 lambdarank_norm=True, deterministic=True, force_col_wise=True)
        if method == "lightgbm_cegb":
            p.update(cegb_tradeoff=2.0 * float(lam),
                     cegb_penalty_feature_lazy=[float(c) for c in costs],
                     cegb_penalty_split=0.0)
        return p
    if method in ("cstc", "cscc"):  # the paper's regression on the relevance labels
        return {"algorithm": method, "objective": "reg:squarederror", "loss": "squared",
                "cost_tradeoff": float(lam), "reg_alpha": CSTC_RHO,
                "max_depth": DEPTH[method], "tree_structure": "prune" if method == "cstc"
                else "full", "eval_metric": ["rmse", f"ndcg@{K}"], "tol": 1e-4,
                "n_jobs": n_threads, "seed": 0}
    base = h.library_params("cbudget", 2, n_threads)
    rank = {"objective": "rank:ndcg", "lambdarank_truncation_level": TRUNCATION,
            "lambdarank_norm": True, "eval_metric": [f"ndcg@{K}"]}
    if method == "greedy_miser":  # bench_greedy_miser.py's: the paper's settings
        return {"algorithm": "greedy_miser", **rank, "learning_rate": 0.1,
                "grow_policy": "depthwise", "max_depth": 4, "reg_lambda": 0.0,
                "min_data_in_leaf": 20, "n_jobs": n_threads, "seed": 0,
                "cost_tradeoff": float(lam)}
    p = dict(base, **rank, algorithm=method)
    if method == "cegb":
        p["cost_tradeoff"] = float(lam)
    return p


def plan(args, names):
    """The equal-trees check first, then per data set the plain models and the sweeps
    round-robin, each in ``harness.spread`` order (a run cut by the time budget keeps
    whole curves)."""
    methods = h.parse_choices(args.methods, METHODS, "method")
    spec = {"threads": args.threads, "patience": h.setting(args, "patience"),
            "sweeps": h.setting(args, "sweeps"), "n_queries": h.setting(args, "n_queries")}
    jobs = []
    if "ltr_sample" in names and not args.no_equal_trees:
        rounds = h.setting(args, "equal_rounds")
        jobs += [("equal_trees", f"equal trees / {METHOD_LABELS[m]} / {rounds} rounds",
                  dict(spec, dataset="ltr_sample", protocol="equal_trees", method=m,
                       rounds=rounds, **{"lambda": None}))
                 for m in ("lightgbm", "gbdt") if m in methods]
        jobs += [("equal_trees_cv", f"equal trees, fold {f} / {METHOD_LABELS[m]} / {rounds} "
                  "rounds", dict(spec, dataset="ltr_sample", protocol="equal_trees_cv",
                                 method=m, rounds=rounds, fold=f, **{"lambda": None}))
                 for f in range(h.setting(args, "folds")) for m in ("lightgbm", "gbdt")
                 if m in methods]
    lambdas = {}
    for d in names:
        rounds = h.setting(args, "rounds", d)
        jobs += [(d, f"{d} / {METHOD_LABELS[m]}", dict(spec, dataset=d, protocol="sweep",
                                                       method=m, rounds=rounds,
                                                       **{"lambda": None}))
                 for m in ("lightgbm", "gbdt") if m in methods]
        queues = []
        for m in (m for m in SWEPT if m in methods):
            key = "cegb" if m == "lightgbm_cegb" else m
            lambdas[f"{d}/{m}"] = sorted(h.setting(args, "lambdas", (d, key)), reverse=True)
            cap = spec["sweeps"] if m in ("cstc", "cscc") else rounds
            queues.append([(d, f"{d} / {METHOD_LABELS[m]} / lambda={lam:g}",
                            dict(spec, dataset=d, protocol="sweep", method=m, rounds=cap,
                                 **{"lambda": lam}))
                           for lam in h.spread(lambdas[f"{d}/{m}"])])
        jobs += h.round_robin(queues)
    return jobs, {"threads": args.threads, "settings": {
        "rounds": {d: h.setting(args, "rounds", d) for d in names},
        "equal_rounds": h.setting(args, "equal_rounds"), **spec, "lambdas": lambdas,
        "time_budget_min": args.time_budget}}


# ----------------------------------------------------------------------- metrics
def cbudget_ranking_metrics():
    """cbudget.metrics.evaluate_metric if it takes query groups, else None."""
    try:
        from cbudget.metrics import evaluate_metric
    except ImportError:
        return None
    return evaluate_metric if "group" in inspect.signature(evaluate_metric).parameters else None


def local_metric(name, y, score, group):
    """The benchmark's own NDCG@k / precision@k>=t (datasets.py), the routine's check."""
    kind, k = name.split("@")
    if kind == "ndcg":
        return datasets.ndcg_at_k(y, score, group, int(k), per_query=True)
    k, _, t = k.partition(">=")
    return datasets.precision_at_k(y, score, group, int(k), int(t or 1), per_query=True)


def scores(y, score, group):
    """NDCG@5 (mean and standard error over queries) and precision@5>=3 from ONE routine
    (cbudget.metrics.evaluate_metric when it has ranking metrics), with the local
    routine's per-query values as a check."""
    routine = cbudget_ranking_metrics()
    out = {"metric_routine": "cbudget.metrics.evaluate_metric" if routine else LOCAL}
    score = np.asarray(score, dtype=np.float64)
    for name, key in ((f"ndcg@{K}", "ndcg5"), (PRECISION, "p5")):
        per_query = local_metric(name, y, score, group)
        value = (float(routine(name, y, score, weight=None, group=group)) if routine
                 else float(per_query.mean()))
        out[key] = value
        out[f"{key}_se"] = float(per_query.std(ddof=1) / np.sqrt(per_query.size))
        out[f"{key}_local_diff"] = value - float(per_query.mean())
    return out


# ------------------------------------------------------------------------- data
def load(spec):
    """The data set of ``spec`` (the equal-trees check: all 201 LTR training queries)."""
    if spec["protocol"] == "equal_trees_cv":
        # the first fold of 5 is fold 0 of a 5-fold split whatever --quick asks
        return datasets.load_ltr_sample_fold(spec["fold"], n_folds=FULL["folds"])
    if spec["dataset"] == "ltr_sample":
        return datasets.load_ltr_sample(
            seed=0, valid_fraction=0.0 if spec["protocol"] == "equal_trees" else 0.2)
    return datasets.make_synthetic_ranking(n_queries=spec["n_queries"], seed=0)


def start(spec):
    library = LIBRARY[spec["method"]]
    version, location = h.library_version(library)
    t = time.perf_counter()
    data = load(spec)
    fields = {"library": library, "version": version, "location": location,
              "dataset": spec["dataset"], "protocol": spec["protocol"],
              "method": spec["method"], "lambda": spec["lambda"], "fold": spec.get("fold"),
              "n_features": int(data["X_test"].shape[1]), "n_threads": spec["threads"],
              "load_s": time.perf_counter() - t, "rss_after_load_mb": h.rss_bytes() / 2**20}
    for part in ("train", "valid", "test"):
        if data.get(f"X_{part}") is not None:
            fields[f"n_{part}"] = int(data[f"X_{part}"].shape[0])
            fields[f"queries_{part}"] = int(data[f"group_{part}"].size)
    for key in ("oracle_ndcg5_test", "cheap_ndcg5_test"):
        if key in data:
            fields[key] = data[key]
    return data, fields


# ------------------------------------------------------------------------ train
def train_lightgbm(data, p, rounds, patience, test_as_valid):
    """LightGBM (Dataset construction in the time), early stopping on the validation
    NDCG@5 or, for the equal-trees check, all rounds with the test set evaluated."""
    import lightgbm as lgb
    log = {}
    with h.Timer() as timer:
        dtrain = lgb.Dataset(data["X_train"], data["y_train"], group=data["group_train"],
                             params=p, free_raw_data=True)
        part = "test" if test_as_valid else "valid"
        dvalid = lgb.Dataset(data[f"X_{part}"], data[f"y_{part}"], group=data[f"group_{part}"],
                             reference=dtrain)
        callbacks = [lgb.record_evaluation(log)]
        if not test_as_valid:
            callbacks.append(lgb.early_stopping(patience, first_metric_only=True, verbose=False))
        booster = lgb.train(p, dtrain, num_boost_round=rounds, valid_sets=[dvalid],
                            valid_names=[part], callbacks=callbacks)
    trained = len(log[part][f"ndcg@{K}"])  # train() keeps the trees up to the best round
    best = booster.best_iteration if not test_as_valid and booster.best_iteration else trained
    return booster, {**timer.fields(), "other_cores_during_train": timer.other,
                     "rounds_trained": int(trained), "best_rounds": int(best),
                     "own_log": [float(v) for v in log[part][f"ndcg@{K}"]]}


def train_cbudget(data, p, rounds, patience, test_as_valid, tree):
    """cbudget, the same way (CSTC / CSCC: early stopping on the validation NDCG@5 after
    ``CSTC_PATIENCE`` sweeps)."""
    import cbudget
    log = {}
    part = "test" if test_as_valid else "valid"
    metric = f"ndcg@{K}"
    with h.Timer() as timer:
        dtrain = cbudget.Dataset(data["X_train"], data["y_train"], group=data["group_train"],
                                 feature_costs=data["feature_costs"],
                                 feature_names=data["feature_names"], max_bin=255)
        dvalid = cbudget.Dataset(data[f"X_{part}"], data[f"y_{part}"],
                                 group=data[f"group_{part}"], reference=dtrain)
        stopper = ([] if test_as_valid else [cbudget.EarlyStopping(
            CSTC_PATIENCE if tree else patience, metric_name=metric, data_name=part)])
        model = cbudget.train(p, dtrain, rounds, evals=[(dvalid, part)], evals_result=log,
                              verbose_eval=False, callbacks=stopper)
    best = model.best_iteration
    if tree:
        trained = len(model.summary.get("objective_per_sweep", []))
    else:
        trained = model.num_boosted_rounds()
        if best is not None and not test_as_valid:
            model = model[:best + 1]
    return model, {**timer.fields(), "other_cores_during_train": timer.other,
                   "rounds_trained": int(trained),
                   "best_rounds": int(best + 1) if best is not None and not test_as_valid
                   else int(trained),
                   "own_log": [float(v) for v in log.get(part, {}).get(metric, [])]}


# -------------------------------------------------------------------------- cost
def per_query_mean(cost, group):
    """Mean over queries of the summed per-document cost."""
    return float(np.add.reduceat(cost, np.concatenate(([0], np.cumsum(group)[:-1]))).mean())


def tree_costs(model, library, X, costs, n_rounds=None):
    """Per-document cost from the leaf paths (harness.prediction_costs), the one routine
    of every tree model; for cbudget also checked against ``predict_cost``."""
    if library == "lightgbm":
        trees = model.dump_model(num_iteration=n_rounds)["tree_info"]
        tables = h.PathTables([h.lightgbm_leaf_paths(t["tree_structure"]) for t in trees],
                              X.shape[1])
        leaves = model.predict(X, pred_leaf=True, num_iteration=n_rounds)
        cost, n_acquired, _ = h.prediction_costs(np.asarray(leaves).reshape(X.shape[0], -1),
                                                 tables, costs)
        return cost, n_acquired, tables.used_features(), {}
    cost, n_acquired, tables, diff = h.check_leaf_path_costs(model, X, costs)
    return cost, n_acquired, tables.used_features(), {"predict_cost_max_abs_diff": diff}


# ------------------------------------------------------------------------- child
def run_point(spec):
    """Train and measure one (data set, protocol, method, lambda)."""
    method, lam = spec["method"], spec["lambda"]
    library, tree = LIBRARY[method], method in ("cstc", "cscc")
    equal = spec["protocol"] in ("equal_trees", "equal_trees_cv")
    data, result = start(spec)
    costs = np.asarray(data["feature_costs"], dtype=np.float64)
    p = params(method, lam or 0.0, spec["threads"], costs)
    rounds, patience = int(spec["rounds"]), int(spec["patience"])
    if library == "lightgbm":
        model, timing = train_lightgbm(data, p, rounds, patience, equal)
        n_rounds = timing["best_rounds"]
        predict = lambda X: np.asarray(model.predict(X, raw_score=True,  # noqa: E731
                                                     num_iteration=n_rounds))
    else:
        model, timing = train_cbudget(data, p, rounds, patience, equal, tree)
        predict = lambda X: np.asarray(model.predict(X, output_margin=True))  # noqa: E731
    t = time.perf_counter()
    X_test, y_test, g_test = data["X_test"], data["y_test"], data["group_test"]
    score = predict(X_test)
    result.update({"params": p, "rounds_cap": rounds, **timing,
                   **scores(y_test, score, g_test)})
    result["train_ndcg5"] = scores(data["y_train"], predict(data["X_train"]),
                                   data["group_train"])["ndcg5"]
    checks = {}
    if not equal:
        valid = scores(data["y_valid"], predict(data["X_valid"]), data["group_valid"])
        result.update(valid_ndcg5=valid["ndcg5"], valid_p5=valid["p5"])
    # the library's own NDCG@5 (at the selected round) against the routine's
    own_part = "test" if equal else "valid"
    own = timing["own_log"][timing["best_rounds"] - 1] if timing["own_log"] else None
    if own is not None and not tree:  # CSTC / CSCC: the leaves are re-fit after the sweeps
        checks["own_ndcg5_" + own_part] = own
        checks["own_ndcg5_diff"] = own - result["ndcg5" if equal else "valid_ndcg5"]
    if tree:
        cost = np.asarray(model.predict_cost(X_test), dtype=np.float64)
        used = np.asarray(model.used_features())
        result["nodes"] = int(model.num_nodes())
        result["exits_test"] = np.bincount(np.asarray(model.predict(X_test, pred_exit=True)),
                                           minlength=model.num_nodes()).tolist()
        n_acquired = None
    else:
        cost, n_acquired, used, cost_checks = tree_costs(
            model, library, X_test, costs, timing["best_rounds"] if library == "lightgbm"
            else None)
        checks.update(cost_checks)
    if library == "cbudget":
        import cbudget
        report = model.cost_report(cbudget.Dataset(X_test, y_test, group=g_test,
                                                   feature_names=data["feature_names"]))
        own_q = getattr(report, "mean_cost_per_query", None)
        if own_q is not None:
            checks["cost_report_per_query"] = float(own_q)
            checks["cost_report_per_query_diff"] = float(own_q) - per_query_mean(cost, g_test)
    result.update({
        "mean_cost": float(cost.mean()), "mean_cost_per_query": per_query_mean(cost, g_test),
        "full_cost": float(costs.sum()), "features_used": int(np.asarray(used).size),
        "used_features_cost": float(costs[np.asarray(used, dtype=np.int64)].sum()),
        **h.cost_summary(cost), "checks": checks, "eval_s": time.perf_counter() - t})
    if n_acquired is not None:
        result["mean_features_acquired"] = float(np.mean(n_acquired))
    levels = np.unique(costs)
    result["used_by_cost"] = {f"{c:g}": int(np.sum(costs[np.asarray(used, dtype=np.int64)] == c))
                              for c in levels}
    if equal:  # per query: the paired comparison
        result["test_ndcg5_per_query"] = local_metric(f"ndcg@{K}", y_test, score,
                                                      g_test).tolist()
    if spec["protocol"] == "equal_trees":  # where the two part, and the NDCG per round
        # the training scores after 1 and 10 rounds (compared across the two libraries)
        # and the leaves with fewer documents than min_data_in_leaf
        result["train_scores"] = {str(r): staged(model, library, data["X_train"], r).tolist()
                                  for r in (1, 10) if r <= rounds}
        result["leaf_sizes"] = leaf_sizes(model, library)
        result["test_ndcg5_by_round"] = {
            str(r): scores(y_test, staged(model, library, X_test, r), g_test)["ndcg5"]
            for r in sorted({10, 25, 50, rounds}) if r <= rounds}
    return result


def leaf_sizes(model, library):
    """The number of training documents of every leaf of every tree."""
    if library == "lightgbm":
        sizes, stack = [], [t["tree_structure"] for t in model.dump_model()["tree_info"]]
        while stack:
            node = stack.pop()
            if "split_feature" in node:
                stack += [node["left_child"], node["right_child"]]
            else:
                sizes.append(int(node["leaf_count"]))
        return sizes
    return [int(n) for tree in model.trees for n in tree["n_samples"][tree["left"] == -1]]


def staged(model, library, X, n_rounds):
    """Raw scores of the first ``n_rounds`` rounds."""
    if library == "lightgbm":
        return np.asarray(model.predict(X, raw_score=True, num_iteration=n_rounds))
    return np.asarray(model.predict(X, output_margin=True, iteration_range=(0, n_rounds)))


# ------------------------------------------------------------------------ report
def _lam(r):
    return "-" if r["lambda"] is None else f"{r['lambda']:g}"


def _rounds(r):
    if r["method"] in ("cstc", "cscc"):
        return f"{r['rounds_trained']} sweeps"
    return (f"{r['best_rounds']} / {r['rounds_trained']}"
            if r["best_rounds"] != r["rounds_trained"] else f"{r['rounds_trained']}")


def sweep_points(ok, method):
    return sorted((r for r in ok if r["method"] == method), key=lambda r: -(r["lambda"] or 0))


COLUMNS = [("method", lambda r: METHOD_LABELS[r["method"]]), ("lambda", _lam),
           (f"NDCG@{K} (± s.e. over queries)", lambda r: f"{r['ndcg5']:.4f} ± {r['ndcg5_se']:.4f}"),
           (f"P@{K} (label >= {RELEVANT})", h.col("p5", ".4f")),
           ("valid NDCG@5", h.col("valid_ndcg5", ".4f")),
           ("mean cost / document", h.col("mean_cost", ",.1f")),
           ("mean cost / query", h.col("mean_cost_per_query", ",.0f")),
           ("features used", h.col("features_used", "d")),
           ("rounds (best / trained)", _rounds), ("train s", h.col("train_s", ".2f")),
           ("ms per round / sweep", lambda r: f"{1000 * r['train_s'] / r['rounds_trained']:.0f}")]


def render_equal(results):
    ok = {r["method"]: r for r in h.ok_results(results)}
    c, g = ok.get("gbdt"), ok.get("lightgbm")
    out = ["## Equal-trees check: cbudget gbdt `rank:ndcg` vs LightGBM `lambdarank`", ""]
    r0 = c or g
    if r0:
        out += [f"The whole LTR sample's training set ({r0['n_train']:,} documents, "
                f"{r0['queries_train']} queries), {r0['rounds_cap']} rounds, 31 leaves, learning "
                "rate 0.1, at least 20 documents per leaf, L2 1, 255 bins, truncation level "
                f"{TRUNCATION}, normalised lambdas; test set {r0['n_test']} documents, "
                f"{r0['queries_test']} queries; NDCG@{K} from the one metric routine "
                f"({r0['metric_routine']}).", ""]
    if c and g:
        diff = c["ndcg5"] - g["ndcg5"]
        paired = np.subtract(c["test_ndcg5_per_query"], g["test_ndcg5_per_query"])
        out += [f"**Test NDCG@{K}: cbudget {c['ndcg5']:.4f}, LightGBM {g['ndcg5']:.4f}, "
                f"difference {diff:+.4f}: {'within' if abs(diff) <= 0.01 else 'NOT within'} "
                f"0.01** (standard error of the paired difference over the "
                f"{paired.size} test queries: {paired.std(ddof=1) / np.sqrt(paired.size):.4f}; "
                f"queries where the two differ: {int(np.sum(np.abs(paired) > 1e-12))}).", ""]
        diffs = [(r, np.abs(np.subtract(c["train_scores"][r], g["train_scores"][r])))
                 for r in c["train_scores"] if r in g["train_scores"]]
        min_leaf = c["params"]["min_data_in_leaf"]
        out += ["Where the models part: " + "; ".join(
            f"after {r} round(s) the training documents' scores differ by at most {d.max():.3g} "
            f"(median {np.median(d):.3g})" for r, d in diffs)
            + "; leaves with fewer than " + f"{min_leaf} training documents: " + ", ".join(
                f"{lib} {sum(n < min_leaf for n in r['leaf_sizes'])} of {len(r['leaf_sizes'])}"
                for lib, r in (("cbudget", c), ("LightGBM", g))) + ".", ""]
    rows = []
    for m in ("gbdt", "lightgbm"):
        r = ok.get(m)
        if r is None:
            error = next((r["error"] for r in results if r["method"] == m), None)
            rows.append([METHOD_LABELS[m], f"failed: {error}" if error else "not run"]
                        + [""] * 6)
            continue
        own = r["checks"].get("own_ndcg5_test")
        rows.append([METHOD_LABELS[m], f"{r['ndcg5']:.4f} ± {r['ndcg5_se']:.4f}",
                     " / ".join(f"{v:.4f}" for v in r["test_ndcg5_by_round"].values()),
                     h.fmt(own, ".4f"), f"{r['p5']:.4f}", f"{r['train_ndcg5']:.4f}",
                     f"{r['mean_cost']:,.1f}", f"{r['train_s']:.2f}"])
    rounds = " / ".join((c or g)["test_ndcg5_by_round"]) if (c or g) else ""
    out += h.table(["model", f"test NDCG@{K}", f"test NDCG@{K} after {rounds} rounds",
                    f"library's own test ndcg@{K}", f"test P@{K} (>= {RELEVANT})",
                    f"train NDCG@{K}", "mean cost / document", "train s"], rows, "lrrrrrrr")
    return out + [""]


def render_equal_cv(results):
    """The equal-trees check cross-validated: per fold, both libraries' test NDCG@5."""
    ok = {(r["fold"], r["method"]): r for r in h.ok_results(results)}
    folds = sorted({r["fold"] for r in results})
    out = [f"### Cross-validated: {len(folds)} of the {FULL['folds']} folds of the whole LTR "
           "sample", "",
           "The 50 test queries cannot settle a difference of 0.01 (see the standard error "
           "above), so the same comparison runs on every fold of a cross-validation over "
           "the 251 queries of the training and test files pooled "
           "(`datasets.load_ltr_sample_fold`: about 50 test and 200 training queries per "
           "fold), same settings and rounds.", ""]
    rows, diffs = [], []
    for f in folds:
        c, g = ok.get((f, "gbdt")), ok.get((f, "lightgbm"))
        if c is None or g is None:
            rows.append([str(f), "failed or not run", "", "", ""])
            continue
        diffs.append(c["ndcg5"] - g["ndcg5"])
        paired = np.subtract(c["test_ndcg5_per_query"], g["test_ndcg5_per_query"])
        rows.append([str(f), f"{c['ndcg5']:.4f}", f"{g['ndcg5']:.4f}", f"{diffs[-1]:+.4f}",
                     f"{paired.std(ddof=1) / np.sqrt(paired.size):.4f}"])
    out += h.table(["fold", f"cbudget test NDCG@{K}", f"LightGBM test NDCG@{K}",
                    "difference", "s.e. of the paired difference"], rows, "lrrrr")
    if diffs:
        d = np.array(diffs)
        spread = d.std(ddof=1) / np.sqrt(d.size) if d.size > 1 else float("nan")
        out += ["", f"**Mean difference over the {d.size} folds: {d.mean():+.4f} (s.e. "
                f"{spread:.4f}; folds from {d.min():+.4f} to {d.max():+.4f}): "
                f"{'within' if abs(d.mean()) <= 0.01 else 'NOT within'} 0.01.**"]
    return out + [""]


def render(doc):
    out = []
    if h.ok_results(doc["results"].get("equal_trees", [])) or doc["results"].get("equal_trees"):
        out += render_equal(doc["results"]["equal_trees"])
    if doc["results"].get("equal_trees_cv"):
        out += render_equal_cv(doc["results"]["equal_trees_cv"])
    for name, results in doc["results"].items():
        if name in ("equal_trees", "equal_trees_cv"):
            continue
        ok = sorted(h.ok_results(results), key=lambda r: (METHODS.index(r["method"]),
                                                          -(r["lambda"] or 0)))
        out += [f"## {TITLES[name]}", ""]
        if not ok:
            continue
        r0 = ok[0]
        out += [" / ".join(f"{r0[f'n_{p}']:,} documents ({r0[f'queries_{p}']:,} queries) {p}"
                           for p in ("train", "valid", "test"))
                + f"; {r0['n_features']} features, all together cost {r0['full_cost']:,.0f} "
                  f"per document. Metric routine: {r0['metric_routine']}."
                + (f" Test references: NDCG@5 {r0['oracle_ndcg5_test']:.4f} ranking by the "
                   f"latent relevance, {r0['cheap_ndcg5_test']:.4f} by the two cost-1 views."
                   if "oracle_ndcg5_test" in r0 else ""), ""]
        out += h.points_table(ok, COLUMNS) + [""]
        pts = {m: sweep_points(ok, m) for m in METHODS}
        for a, b in (("cegb", "lightgbm_cegb"), ("greedy_miser", "cegb"), ("cstc", "cegb"),
                     ("cscc", "cegb")):
            if pts[a] and pts[b]:
                out += [f"**{METHOD_LABELS[a]} vs {METHOD_LABELS[b]}** (reference "
                        f"{METHOD_LABELS[b]}; test NDCG@{K} at equal or lower mean cost per "
                        "document):", ""]
                out += h.comparison_table(pts[a], pts[b], (METHOD_LABELS[b], METHOD_LABELS[a],
                                                           "mean cost", f"NDCG@{K}"),
                                          lambda r: f"lambda={r['lambda']:g}", score_key="ndcg5",
                                          cost_fmt=",.1f") + [""]
    runs = [r for rs in doc["results"].values() for r in h.ok_results(rs)]
    found = [(text, [abs(r["checks"][key]) for r in runs if key in r["checks"]])
             for key, text in CHECKS] + [
        (text, [abs(r[key]) for r in runs if r["metric_routine"] != LOCAL])
        for key, text in (("ndcg5_local_diff", f"the routine's NDCG@{K} vs the local one"),
                          ("p5_local_diff", f"the routine's P@{K} vs the local one"))]
    if runs:
        out += ["Checks, largest absolute difference (runs checked): " + "; ".join(
            f"{text} {max(v):.2g} ({len(v)})" for text, v in found if v) + ".", ""]
    return out


LOCAL = "datasets.ndcg_at_k / precision_at_k (local)"
CHECKS = (("predict_cost_max_abs_diff", "leaf-path cost vs cbudget predict_cost"),
          ("cost_report_per_query_diff", "mean cost per query vs cbudget cost_report"),
          ("own_ndcg5_diff", f"the library's own ndcg@{K} (valid; equal trees: test) vs the "
                             "routine"))


PLOT_STYLE = {"lightgbm": ("D", "tab:green"), "gbdt": ("^", "black"),
              "lightgbm_cegb": ("s--", "tab:green"), "cegb": ("o-", "tab:blue"),
              "greedy_miser": ("v-", "tab:red"), "cstc": ("P-", "tab:purple"),
              "cscc": ("X-", "tab:orange")}


def plot(doc, path):
    panels = [n for n, rs in doc["results"].items()
              if not n.startswith("equal_trees") and h.ok_results(rs)]

    def draw(axes, name, plt):
        ok = h.ok_results(doc["results"][name])
        best = max(r["ndcg5"] for r in ok)
        for row, ax in enumerate(axes):
            for m in METHODS:
                h.curve(ax, [r for r in ok if r["method"] == m], "mean_cost", "ndcg5",
                        PLOT_STYLE[m][0], color=PLOT_STYLE[m][1], label=METHOD_LABELS[m],
                        annotate=(lambda r: f"{r['lambda']:g}") if m in SWEPT else None,
                        **({"markersize": 5} if m in SWEPT else {"markersize": 10,
                                                                 "fillstyle": "none"}))
            if row:  # the top of the curves
                costs = [r["mean_cost"] for r in ok if r["ndcg5"] >= best - ZOOM]
                ax.set_ylim(best - ZOOM, best + 0.1 * ZOOM)
                ax.set_xlim(0.5 * min(costs), 2.0 * max(costs))
            h.finish_axis(ax, "mean test cost per document (symlog)", f"test NDCG@{K}",
                          TITLES[name].split(" (")[0] + (f" (NDCG@{K} within {ZOOM} of the "
                                                         "best)" if row else ""),
                          linthresh=1.0, legend_size=7)
    return h.plot_panels(path, doc, panels, draw, f"Ranking: test NDCG@{K} vs mean cost per "
                         "document (labels: lambda)", f"test NDCG@{K} vs mean test cost per "
                         "document, one column per data set, the bottom row zoomed on the "
                         "best NDCG@5; symlog cost axes; labels are lambdas", (6.4, 4.6),
                         n_rows=2)


ZOOM = 0.06


if __name__ == "__main__":
    sys.exit(h.main(sys.modules[__name__]))
