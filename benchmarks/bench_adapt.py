"""ADAPT-GBRT / ADAPT-LIN benchmark: gated models vs Greedy Miser, CEGB and BudgetRF.

Gate + f1 in front of an f0, over p_full x gamma; every gated point checked against its
parts. Protocol: benchmarks/README.md.
"""
import atexit
import functools
import os
import pickle
import shutil
import sys
import tempfile
from pathlib import Path

import harness as h
import numpy as np
from bench_budget_rf import budget_rf_params
from bench_cegb import cegb_params
from bench_greedy_miser import method_params as gm_method_params

DATASETS = ("letters", "mnist38", "synthetic_costly")
TIME_BUDGET = 45.0   # default --time-budget (minutes)
IDENT = ("task", "method", "value")
ROWS = ("train", "valid", "test")
METHODS = ("adapt_gbrt", "adapt_gbrt_input", "adapt_gbrt_lgbm", "adapt_lin", "greedy_miser",
           "cegb", "budget_rf")
METHOD_LABELS = {"adapt_gbrt": "ADAPT-GBRT", "adapt_gbrt_input": "ADAPT-GBRT (input acq.)",
                 "adapt_gbrt_lgbm": "ADAPT-GBRT (LightGBM f0)", "adapt_lin": "ADAPT-LIN",
                 "greedy_miser": "Greedy Miser", "cegb": "CEGB", "budget_rf": "BudgetRF",
                 "f0": "f0 (cbudget gbdt)", "f0_lightgbm": "f0 (LightGBM)"}
GATED = ("adapt_gbrt", "adapt_gbrt_input", "adapt_gbrt_lgbm", "adapt_lin")
SYNTHETIC_ROWS = 100_000
DATASET_OF = {"letters": "letters_am"}  # harness.load_dataset's name of a task
# the full run's grids (chosen from short probes; see the results file); a dict is per task
FULL = {
    "f0_leaves": {"letters": (15, 31, 63), "mnist38": (15, 31), "synthetic_costly": (15, 31, 63)},
    "f0_rounds": {"letters": 1000, "mnist38": 300, "synthetic_costly": 300},
    "lgbm_rounds": 1000, "lgbm_patience": 100,   # the LightGBM f0
    "p_full": (0.05, 0.1, 0.2, 0.3, 0.5),
    "adapt_gammas": {"letters": (1.0, 3.0, 10.0, 30.0), "mnist38": (0.3, 3.0, 30.0),
                     "synthetic_costly": (0.1, 1.0, 10.0)},
    "adapt_rounds": {"letters": 2000, "mnist38": 200, "synthetic_costly": 600},
    "patience": {"letters": 300, "mnist38": 50, "synthetic_costly": 100},
    "lgbm_gammas": {"letters": (3.0,)},          # ADAPT-GBRT with the LightGBM f0
    "lin_p_full": (0.1, 0.2, 0.3, 0.5), "lin_gammas": {"letters": (1e-3, 3e-3, 1e-2, 3e-2)},
    "lin_alternations": 20, "lin_restarts": 4,
    "gm_lambdas": {"letters": (0.0, 3.0, 10.0, 30.0, 100.0),
                   "mnist38": (0.0, 3.0, 10.0, 30.0, 100.0),
                   "synthetic_costly": (0.0, 0.3, 1.0, 3.0, 10.0, 100.0)},
    "cegb_lambdas": {"letters": (0.0, 0.003, 0.01, 0.02, 0.03, 0.05),
                     "mnist38": (0.0, 3e-4, 1e-3, 3e-3, 0.01, 0.03, 0.1),
                     "synthetic_costly": (0.0, 1e-5, 3e-5, 1e-4, 3e-4, 1e-3, 1e-2)},
    "cegb_rounds": {"letters": 500, "mnist38": 200, "synthetic_costly": 300},
    "cegb_patience": 50,
    "rf_alphas": (0.0, 10.0), "rf_trees": {"letters": 40, "mnist38": 20, "synthetic_costly": 40},
    "p0_check_rounds": 100,                      # rounds of the p_full = 0 vs Greedy Miser check
}
QUICK = {"train_rows": 1500, "valid_rows": 500, "test_rows": 500, "n_rows": 10_000,
         "f0_leaves": (15, 31), "f0_rounds": 60, "lgbm_rounds": 60, "lgbm_patience": 20,
         "p_full": (0.1, 0.3),
         "adapt_gammas": {"letters": (3.0, 30.0), "mnist38": (3.0, 30.0),
                          "synthetic_costly": (1.0, 10.0)},
         "adapt_rounds": 60, "patience": 20, "lgbm_gammas": {"letters": (3.0,)},
         "lin_p_full": (0.2, 0.5), "lin_gammas": {"letters": (1e-2,)}, "lin_alternations": 4,
         "lin_restarts": 2,
         "gm_lambdas": {"letters": (0.0, 10.0), "mnist38": (0.0, 10.0),
                        "synthetic_costly": (0.0, 1.0)},
         "cegb_lambdas": {"letters": (0.0, 0.01), "mnist38": (0.0, 0.01),
                          "synthetic_costly": (0.0, 1e-4)},
         "cegb_rounds": 40, "cegb_patience": 20, "rf_alphas": (0.0,), "rf_trees": 5,
         "p0_check_rounds": 20}
Q_UPDATE_PERIOD = 10
RF_PREFIXES = (1, 2, 3, 5, 7, 10, 15, 20, 30, 40)
RF_CHECK_TREES = 3            # the budget check: "budget" between the costs of 3 and 4 trees
WITHIN = 0.01                 # the headline: within 1 percentage point of f0's accuracy
PROBA_TOL = 1e-9
# the children's environment unless set: OpenMP threads do not spin, numpy's BLAS is serial
CHILD_ENV = {"OMP_WAIT_POLICY": "passive", "OPENBLAS_NUM_THREADS": "1"}


def build_plan(args, tasks, methods):
    """``{task: {method: {"values": [...], "rounds": N, ...}}}``."""
    out = {}
    for task in tasks:
        s = functools.partial(h.setting, args, name=task)  # s(key): the task's setting
        rounds, lams = s("adapt_rounds"), s("gm_lambdas")
        gated = {"rounds": rounds, "patience": s("patience"), "p_full": s("p_full")}
        settings = {  # method: (values, settings)
            "adapt_gbrt": (s("adapt_gammas"), gated),
            "adapt_gbrt_input": (s("adapt_gammas"), gated),
            "adapt_gbrt_lgbm": (s("lgbm_gammas"), gated),
            "adapt_lin": (s("lin_gammas"), {
                "rounds": s("lin_alternations"), "patience": s("lin_alternations"),
                "p_full": s("lin_p_full"), "lin_restarts": s("lin_restarts")}),
            "greedy_miser": (lams, {"rounds": rounds, "patience": s("patience"),
                                    "p0_check_value": lams[1] if len(lams) > 1 else lams[0],
                                    "p0_check_rounds": min(s("p0_check_rounds"), rounds)}),
            "cegb": (s("cegb_lambdas"), {"rounds": s("cegb_rounds"),
                                         "patience": s("cegb_patience")}),
            "budget_rf": (s("rf_alphas"), {"rounds": s("rf_trees"),
                                           "prefixes": list(RF_PREFIXES)})}
        p = {"f0": {"values": [None], "rounds": s("f0_rounds"), "f0_leaves": s("f0_leaves")}}
        if "adapt_gbrt_lgbm" in methods and s("lgbm_gammas"):
            p["f0_lightgbm"] = {"values": [None], "rounds": s("lgbm_rounds"),
                                "patience": s("lgbm_patience")}
        for m, (values, setting) in settings.items():
            if m in methods and values:
                p[m] = {"values": list(values), **setting}
        out[task] = p
    return out


# priority of the methods in the round-robin (a run cut by the time budget keeps these)
ORDER = ("adapt_gbrt", "greedy_miser", "cegb", "budget_rf", "adapt_gbrt_input", "adapt_lin",
         "adapt_gbrt_lgbm")


def plan(args, tasks):
    """The f0s first, then round-robin over the (task, method) sweeps, each in
    ``harness.spread`` order; the children's environment and the f0 directory."""
    grid = build_plan(args, tasks, h.parse_choices(args.methods, METHODS, "method"))
    for var, value in CHILD_ENV.items():
        os.environ.setdefault(var, value)
    workdir = tempfile.mkdtemp(prefix="bench_adapt_")
    atexit.register(shutil.rmtree, workdir, ignore_errors=True)
    todo = [(t, m, None, p[m]) for t, p in grid.items() for m in ("f0", "f0_lightgbm") if m in p]
    todo += h.round_robin([[(t, m, v, p[m]) for v in h.spread(p[m]["values"])]
                           for m in ORDER for t, p in grid.items() if m in p])
    common = {"threads": args.threads, "workdir": workdir,
              **{k: getattr(args, k) for k in h.ROW_OPTIONS},
              "n_rows": args.n_rows or SYNTHETIC_ROWS}
    jobs = []
    for task, m, value, settings in todo:
        spec = dict(common, task=task, dataset=DATASET_OF.get(task, task), method=m, value=value,
                    **{k: v for k, v in settings.items() if k not in ("values", "p0_check_value")})
        if m == "greedy_miser":
            spec["p0_check"] = value == settings["p0_check_value"]
        if m == "budget_rf":
            spec["budget_check"] = value == settings["values"][0]
        name = "gamma" if m in GATED else "alpha" if m == "budget_rf" else "lambda"
        jobs.append((task, f"{task_title(task, True)} / {METHOD_LABELS[m]}"
                     + ("" if value is None else f" / {name}={value:g}"), spec))
    return jobs, {"threads": args.threads, "plan": grid,
                  "env": {k: os.environ.get(k) for k in CHILD_ENV},
                  "n_rows": args.n_rows or SYNTHETIC_ROWS, "time_budget_min": args.time_budget}


# ------------------------------------------------------------------------- child
def part_bits(part, X, n_features):
    """bool (n, n_features): the features a part (Booster, LinearClassifier, or ``"all"``
    for an external f0) reads for each input, from its leaf paths / non-zero weights."""
    if isinstance(part, str):
        return np.ones((X.shape[0], n_features), dtype=bool)
    if hasattr(part, "weights"):
        return np.broadcast_to(np.asarray(part.weights) != 0, (X.shape[0], n_features)).copy()
    if not part.trees:
        return np.zeros((X.shape[0], n_features), dtype=bool)
    tables = h.PathTables([h.cbudget_leaf_paths(t) for t in part.trees], n_features)
    leaves = np.asarray(part.predict(X, pred_leaf=True)).reshape(X.shape[0], -1)
    return h.prediction_costs(leaves, tables, np.zeros(n_features))[2]


def check_gated(model, f0_part, X, proba, route, cost, costs):
    """The gated model's route, predictions and per-input costs recomputed from its parts
    (AssertionError on a difference)."""
    from scipy.special import expit
    gate_margin = np.asarray(model.gate.predict(X, output_margin=True), dtype=np.float64).ravel()
    if not np.array_equal(np.where(gate_margin > model.gate_threshold, 0, 1), route):
        raise AssertionError("route differs from gate margin > threshold")
    f0 = model.expensive
    p0 = f0.positive_proba(X) if hasattr(f0, "positive_proba") else f0.predict(X)
    p0 = np.clip(np.asarray(p0, dtype=np.float64), 1e-12, 1 - 1e-12)
    f1 = np.asarray(model.predictor.predict(X, output_margin=True), dtype=np.float64).ravel()
    proba_diff = (float(np.max(np.abs(np.where(route == 0, p0, expit(f1)) - proba)))
                  if proba.size else 0.0)
    if proba_diff > PROBA_TOL:
        raise AssertionError(f"predictions differ from the parts' by {proba_diff}")
    n = costs.shape[0]
    acquired = part_bits(model.gate, X, n) | np.where(
        route[:, None] == 1, part_bits(model.predictor, X, n), part_bits(f0_part, X, n))
    cost_diff = float(np.max(np.abs(acquired @ costs - cost))) if cost.size else 0.0
    if cost_diff > h.COST_CHECK_TOL * max(1.0, float(costs.sum())):
        raise AssertionError(f"per-input costs differ from the leaf paths by {cost_diff}")
    return {"route_ok": True, "proba_max_abs_diff": proba_diff, "cost_max_abs_diff": cost_diff,
            "mean_features_acquired": float(acquired.sum(axis=1).mean())}


def _datasets(cbudget, data):
    costs = np.asarray(data["feature_costs"], dtype=np.float64)
    dtrain = cbudget.Dataset(data["X_train"], data["y_train"], feature_costs=costs,
                             feature_names=data["feature_names"])
    return costs, dtrain, cbudget.Dataset(data["X_valid"], data["y_valid"], reference=dtrain)


def f0_path(spec, kind="f0"):
    return Path(spec["workdir"]) / f"{spec['task']}_{kind}.{'json' if kind == 'f0' else 'pkl'}"


def run_f0(spec, data, cbudget):
    """The f0 candidates; the best (leaves, round) on validation accuracy, saved."""
    costs, dtrain, dvalid = _datasets(cbudget, data)
    candidates, best = [], None
    for leaves in spec["f0_leaves"]:
        params = dict(h.library_params("cbudget", 2, spec["threads"]), num_leaves=int(leaves),
                      eval_metric="error")
        booster, err, t = h.train_logged(cbudget, params, dtrain, dvalid, spec["rounds"])
        r = int(np.argmin(err))
        candidates.append({"num_leaves": int(leaves), "rounds": spec["rounds"],
                           "best_round": r + 1, "valid_accuracy": float(1 - err[r]),
                           **t.fields(), "valid_trace": h.thin(1 - err, 30)})
        if best is None or candidates[-1]["valid_accuracy"] > best[0]["valid_accuracy"]:
            best = (candidates[-1], booster[:r + 1], params)
    cand, f0, params = best
    f0.save_model(f0_path(spec))
    X = data["X_test"]
    if not np.array_equal(cbudget.load_model(f0_path(spec)).predict(X), f0.predict(X)):
        raise AssertionError("the reloaded f0 predicts differently")
    point = {"method": "f0", "value": None, "num_leaves": cand["num_leaves"],
             "selected_round": cand["best_round"], "params": params,
             **h.booster_point(f0, data, costs), "train_s": cand["train_s"],
             "other_cores": cand["other_cores"]}
    point["checks"]["reloaded_predictions_identical"] = True
    return {"points": [point], "candidates": candidates}


def run_f0_lightgbm(spec, data, cbudget):
    """LightGBM f0 (Letters): early stopping on the validation error, pickled."""
    import datasets
    import lightgbm as lgb
    costs = np.asarray(data["feature_costs"], dtype=np.float64)
    model = lgb.LGBMClassifier(n_estimators=spec["rounds"], num_leaves=31, learning_rate=0.1,
                               min_child_samples=20, reg_lambda=1.0, n_jobs=spec["threads"],
                               random_state=0, deterministic=True, metric="binary_error",
                               verbose=-1)
    with h.Timer() as t:
        model.fit(data["X_train"], data["y_train"], eval_set=[(data["X_valid"], data["y_valid"])],
                  callbacks=[lgb.early_stopping(spec["patience"], verbose=False)])
    with open(f0_path(spec, "lightgbm"), "wb") as f:
        pickle.dump(model, f)
    proba = model.predict_proba(data["X_test"])[:, 1]
    return {"points": [{
        "method": "f0_lightgbm", "value": None,
        "selected_round": int(model.best_iteration_ or spec["rounds"]),
        "valid_accuracy": h.accuracy(model.predict_proba(data["X_valid"])[:, 1],
                                     data["y_valid"]),
        "accuracy": h.accuracy(proba, data["y_test"]), "auc": datasets.auc(data["y_test"], proba),
        "mean_cost": float(costs.sum()), "valid_mean_cost": float(costs.sum()),
        "features_used": int(costs.shape[0]), **t.fields()}]}


def adapt_params(spec, p_full, gamma, n_train):
    """ADAPT-GBRT's parameters (Greedy Miser's plus the gate's) or ADAPT-LIN's."""
    if spec["method"] == "adapt_lin":
        return {"algorithm": "adapt_lin", "p_full": float(p_full), "cost_tradeoff": float(gamma),
                "n_restarts": spec["lin_restarts"], "n_jobs": spec["threads"], "seed": 0,
                "eval_metric": "error"}
    p = gm_method_params("greedy_miser", spec["task"], 2, 0.0, None, spec["threads"])
    per_input = spec["method"] == "adapt_gbrt_input"
    p.update(algorithm="adapt_gbrt", p_full=float(p_full),
             acquisition="input" if per_input else "model",
             cost_tradeoff=float(gamma) / n_train if per_input else float(gamma),
             q_update_period=Q_UPDATE_PERIOD, eval_metric="error")
    return p


def run_gated(spec, data, cbudget):
    """One gamma of ADAPT-GBRT / ADAPT-LIN over the p_full grid."""
    costs, dtrain, dvalid = _datasets(cbudget, data)
    gamma = float(spec["value"])
    if spec["method"] == "adapt_gbrt_lgbm":
        with open(f0_path(spec, "lightgbm"), "rb") as f:
            f0 = cbudget.ExternalModel(pickle.load(f), features="all")
        f0_part = "all"
    else:
        f0 = f0_part = cbudget.load_model(f0_path(spec))
    X_test, y_test, points = data["X_test"], data["y_test"], []
    for p_full in spec["p_full"]:
        params = adapt_params(spec, p_full, gamma, int(data["y_train"].shape[0]))
        model, err, t = h.train_logged(cbudget, params, dtrain, dvalid, spec["rounds"],
                                       spec["patience"], expensive_model=f0)
        best = model.best_iteration if model.best_iteration is not None else err.shape[0] - 1
        proba, route = model.predict(X_test, return_route=True)
        proba, route = np.asarray(proba, dtype=np.float64), np.asarray(route)
        cost = np.asarray(model.predict_cost(X_test), dtype=np.float64)
        vroute = np.asarray(model.predict(data["X_valid"], return_route=True)[1])
        gate_used = np.asarray(model.gate.used_features())
        f1_used = np.asarray(model.predictor.used_features())
        used = np.union1d(gate_used, f1_used).astype(np.int64)
        point = {
            "method": spec["method"], "value": gamma, "p_full": float(p_full),
            "cost_tradeoff": params["cost_tradeoff"], "rounds": spec["rounds"],
            "iterations": int(err.shape[0]), "selected_round": int(best) + 1,
            "valid_error_logged": float(err[best]), **h.binary_point(model, data, cost, proba),
            "expensive_fraction": float(np.mean(route == 0)),
            "valid_expensive_fraction": float(np.mean(vroute == 0)),
            "train_expensive_fraction": model.summary.get("train_expensive_fraction"),
            "train_mean_q": model.summary.get("train_mean_q"),
            "gate_features": int(gate_used.size), "f1_features": int(f1_used.size),
            "features_used": int(used.size), "model_cost": float(costs[used].sum()),
            "gate_threshold": float(model.gate_threshold), **t.fields(),
            "checks": check_gated(model, f0_part, X_test, proba, route, cost, costs),
            "valid_trace": h.thin(1 - err, 40)}
        low = route == 1
        for part, rows in (("f1", low), ("f0", ~low)):
            point[f"accuracy_{part}_inputs"] = (h.accuracy(proba[rows], y_test[rows])
                                                if rows.any() else None)
            point[f"mean_cost_{part}_inputs"] = float(cost[rows].mean()) if rows.any() else None
        if spec["method"] == "adapt_lin":
            point["objective_per_alternation"] = [
                float(v) for v in getattr(model, "objective_per_alternation", [])]
        if "hard_test" in data:
            hard = data["hard_test"]
            point["hard_to_f0"] = float(np.mean(route[hard] == 0)) if hard.any() else None
            point["f0_inputs_hard"] = float(np.mean(hard[~low])) if (~low).any() else None
        points.append(point)
    return {"points": points}


def run_boosting(spec, data, cbudget):
    """Greedy Miser or CEGB at one lambda, cut at the best validation round; for Greedy
    Miser at the check lambda the p_full = 0 check."""
    costs, dtrain, dvalid = _datasets(cbudget, data)
    lam = float(spec["value"])
    if spec["method"] == "greedy_miser":
        params = gm_method_params("greedy_miser", spec["task"], 2, lam, costs, spec["threads"])
    else:
        params = cegb_params("cbudget", "letters", 2, lam, costs, n_threads=spec["threads"])
    params["eval_metric"] = "error"
    booster, err, t = h.train_logged(cbudget, params, dtrain, dvalid, spec["rounds"],
                                     spec["patience"])
    best = booster.best_iteration if booster.best_iteration is not None else err.shape[0] - 1
    point = {"method": spec["method"], "value": lam, "rounds": spec["rounds"],
             "iterations": int(err.shape[0]), "selected_round": int(best) + 1,
             **h.booster_point(booster[:best + 1], data, costs), **t.fields(),
             "valid_trace": h.thin(1 - err, 40), "params": params}
    out = {"points": [point]}
    if spec.get("p0_check"):
        out["p0_check"] = p0_check(spec, params, dtrain, data["X_test"], cbudget)
    return out


def p0_check(spec, params, dtrain, X, cbudget):
    """ADAPT-GBRT with p_full = 0 must grow Greedy Miser's trees for f1 and route nothing
    to f0."""
    rounds = spec["p0_check_rounds"]
    gm_p = {k: v for k, v in params.items() if k != "eval_metric"}
    ad_p = dict({k: v for k, v in gm_p.items() if k != "algorithm"}, algorithm="adapt_gbrt",
                p_full=0.0, q_update_period=Q_UPDATE_PERIOD)
    f0 = cbudget.load_model(f0_path(spec))
    with h.Timer() as t_gm:
        gm = cbudget.train(gm_p, dtrain, rounds, verbose_eval=False)
    with h.Timer() as t_ad:
        ad = cbudget.train(ad_p, dtrain, rounds, expensive_model=f0, verbose_eval=False)
    trees_equal = len(gm.trees) == len(ad.predictor.trees) and all(
        np.array_equal(a, b) for a, b in zip(gm.trees, ad.predictor.trees, strict=True))
    proba_ad, route = ad.predict(X, return_route=True)
    diffs = [float(np.max(np.abs(np.asarray(a).ravel() - np.asarray(b).ravel()))) for a, b in (
        (gm.predict(X, output_margin=True), ad.predictor.predict(X, output_margin=True)),
        (gm.predict(X), proba_ad), (gm.predict_cost(X), ad.predict_cost(X)))]
    routed = int(np.sum(np.asarray(route) == 0))
    return {"lambda": gm_p["cost_tradeoff"], "rounds": rounds, "trees_identical": trees_equal,
            "f1_margin_max_abs_diff": diffs[0], "proba_max_abs_diff": diffs[1],
            "cost_max_abs_diff": diffs[2], "routed_to_f0": routed,
            "gate_features": len(ad.gate.used_features()), "gm_train_s": t_gm.wall,
            "adapt_train_s": t_ad.wall,
            "ok": bool(trees_equal and diffs[1] == 0.0 and diffs[2] == 0.0 and routed == 0)}


def run_budget_rf(spec, data, cbudget):
    """BudgetRF at one alpha: ``rounds`` trees once, the prefixes as budget points; the
    first alpha of a task also checks one budget against training with it."""
    _, dtrain, dvalid = _datasets(cbudget, data)
    alpha, n_trees = float(spec["value"]), spec["rounds"]
    params = budget_rf_params(2, alpha, False, 0, n_trees, spec["threads"])
    params.pop("budget")
    with h.Timer() as t:
        forest = cbudget.train(params, dtrain, n_trees, verbose_eval=False)

    def valid_cost(k):
        return float(np.mean(forest.predict_cost(data["X_valid"], iteration_range=(0, k))))
    points = []
    for k in (k for k in spec["prefixes"] if k <= n_trees):
        rng = (0, k)
        cost = np.asarray(forest.predict_cost(data["X_test"], iteration_range=rng))
        points.append({
            "method": "budget_rf", "value": alpha, "trees": k, "budget": valid_cost(k),
            "valid_accuracy": float(np.mean(forest.predict(data["X_valid"], iteration_range=rng)
                                            == data["y_valid"])),
            "accuracy": float(np.mean(forest.predict(data["X_test"], iteration_range=rng)
                                      == data["y_test"])),
            "mean_cost": float(cost.mean()), "valid_mean_cost": valid_cost(k),
            "features_used": len(forest.used_features(rng)), **h.cost_summary(cost),
            "train_s": t.wall * k / n_trees, "other_cores": t.other})
    out = {"points": points, "train_all_s": t.wall, "params": params}
    if spec.get("budget_check") and RF_CHECK_TREES < n_trees:
        k = RF_CHECK_TREES
        c = [valid_cost(k), valid_cost(k + 1)]
        budgeted = cbudget.train(dict(params, budget=0.5 * (c[0] + c[1])), dtrain, n_trees,
                                 evals=[(dvalid, "valid")], verbose_eval=False)
        same = (budgeted.num_trees() == k and all(np.array_equal(a, b) for a, b in zip(
            budgeted.trees, forest.trees[:k], strict=True)) and np.array_equal(
            budgeted.predict(data["X_test"]), forest.predict(data["X_test"],
                                                             iteration_range=(0, k))))
        out["budget_check"] = {"budget": 0.5 * (c[0] + c[1]), "trees": int(budgeted.num_trees()),
                               "expected_trees": k, "identical": bool(same), "valid_costs": c}
    return out


RUNNERS = {"f0": run_f0, "f0_lightgbm": run_f0_lightgbm, "adapt_gbrt": run_gated,
           "adapt_gbrt_input": run_gated, "adapt_gbrt_lgbm": run_gated, "adapt_lin": run_gated,
           "greedy_miser": run_boosting, "cegb": run_boosting, "budget_rf": run_budget_rf}


def run_point(spec):
    """Train and measure one job."""
    import cbudget
    data, result = h.start_child(spec, "cbudget", keep_valid=True)
    out = RUNNERS[spec["method"]](spec, data, cbudget)
    for p in out["points"]:
        p["task"] = spec["task"]
    trained = [p for p in out["points"] if "train_s" in p]
    others = [p["other_cores"] for p in trained if p.get("other_cores") is not None]
    out.update(result, task=spec["task"], method=spec["method"], value=spec.get("value"),
               threads=spec["threads"], full_cost=float(np.sum(data["feature_costs"])),
               pos_rate_train=float(np.mean(data["y_train"])),
               train_total_s=float(out.get("train_all_s", sum(p["train_s"] for p in trained))),
               other_cores_during_train=float(np.mean(others)) if others else 0.0,
               env={k: os.environ.get(k) for k in CHILD_ENV})
    for key in ("bayes_accuracy_test", "cheap_rule_accuracy_test", "hard_fraction_test"):
        if key in data:
            out[key] = data[key]
    return out


# ---------------------------------------------------------------------- analysis
def task_points(results):
    """All points of a task, ``{method: [points]}``."""
    out = {}
    for r in h.ok_results(results):
        for p in r["points"]:
            out.setdefault(p["method"], []).append(p)
    return out


def headline(points, f0):
    """The point of lowest validation cost within ``WITHIN`` of f0's validation accuracy
    (ties: higher validation accuracy); None if there is none."""
    ok = [p for p in points if p["valid_accuracy"] >= f0["valid_accuracy"] - WITHIN - 1e-12]
    return min(ok, key=lambda p: (p["valid_mean_cost"], -p["valid_accuracy"])) if ok else None


def task_title(task, short=False):
    return h.title(DATASET_OF.get(task, task), short)


def reference(pts, method):
    """The f0 point a method's cost reduction is measured against."""
    if method == "adapt_gbrt_lgbm" and pts.get("f0_lightgbm"):
        return pts["f0_lightgbm"][0]
    return (pts.get("f0") or [None])[0]


# ------------------------------------------------------------------------ report
def _value_label(p):
    if p["method"] == "budget_rf":
        return f"alpha={p['value']:g}, {p['trees']} trees"
    if p["method"] in GATED:
        return f"p_full={p['p_full']:g}, gamma={p['value']:g}"
    return "-" if p["method"] in ("f0", "f0_lightgbm") else f"lambda={p['value']:g}"


def headline_table(results):
    """Per task and gated method, the :func:`headline` point and its cost reduction."""
    rows = []
    for task, task_results in results.items():
        pts = task_points(task_results)
        for m in (m for m in GATED if pts.get(m) and pts.get("f0")):
            ref = reference(pts, m)
            c = headline(pts[m], ref)
            rows.append([task_title(task, True), METHOD_LABELS[m], METHOD_LABELS[ref["method"]],
                         f"{ref['accuracy']:.4f} / {ref['mean_cost']:,.2f}"] + ([
                "none within 1 pt on validation", "", "", "**none**", ""] if c is None else [
                (f"{_value_label(c)} (valid {c['valid_accuracy']:.4f} vs "
                 f"{ref['valid_accuracy']:.4f}; {c['selected_round']} rounds; "
                 f"{c['expensive_fraction']:.1%} to f0)"),
                f"{c['accuracy']:.4f} ({ref['accuracy'] - c['accuracy']:+.4f})",
                f"{c['mean_cost']:,.2f}", f"**{1 - c['mean_cost'] / ref['mean_cost']:.1%}**",
                "yes" if c["accuracy"] >= ref["accuracy"] - WITHIN - 1e-12 else "no"]))
    return h.table(["task", "method", "f0", "f0: test accuracy / mean cost",
                    "point selected on validation", "its test accuracy (f0 - it)",
                    "its mean test cost", "**cost reduction**", "test accuracy within 1 pt"],
                   rows, "lllllrrrc")


ROUNDS_COLUMN = ("rounds (selected)", lambda p: f"{p['iterations']} ({p['selected_round']})"
                 if "iterations" in p else f"{p['trees']} trees")
SCORE_COLUMNS = [("valid accuracy", h.col("valid_accuracy", ".4f")),
                 ("test accuracy", h.col("accuracy", ".4f"))]


def gated_table(points, f0):
    def share(a, b, spec):
        return lambda p: f"{h.fmt(p.get(a), spec)} / {h.fmt(p.get(b), spec)}"
    return h.points_table(sorted(points, key=lambda p: (p["value"], p["p_full"])), [
        ("p_full", lambda p: f"{p['p_full']:g}"), ("gamma", lambda p: f"{p['value']:g}"),
        ROUNDS_COLUMN, *SCORE_COLUMNS, ("test AUC", h.col("auc", ".4f")),
        ("mean test cost", h.col("mean_cost", ",.2f")), reduction_column(f0),
        ("to f0 (test / train)", share("expensive_fraction", "train_expensive_fraction", ".3f")),
        ("gate / f1 features", share("gate_features", "f1_features", "d")),
        ("acc. on f1 / f0 inputs", share("accuracy_f1_inputs", "accuracy_f0_inputs", ".4f")),
        ("cost q10 / q50 / q90",
         lambda p: f"{p['cost_q10']:,.0f} / {p['cost_q50']:,.0f} / {p['cost_q90']:,.0f}"),
        ("train s", h.col("train_s", ".1f"))], "r")


def reduction_column(f0):
    return ("reduction vs f0",
            lambda p: h.fmt(1 - p["mean_cost"] / f0["mean_cost"] if f0 else None, ".1%"))


def task_section(task, results):
    ok, pts = h.ok_results(results), task_points(results)
    lines = [f"## {task_title(task)}", ""]
    if ok:
        r = ok[0]
        lines += [(f"{h.sizes_text(r)} (all features cost {r['full_cost']:,.0f}); positives "
                   f"in training {r['pos_rate_train']:.1%}."), ""]
    for m in GATED:
        if pts.get(m):
            ref = reference(pts, m)
            lines += [(f"**{METHOD_LABELS[m]}** (reduction vs "
                      f"{METHOD_LABELS[ref['method']] if ref else 'f0'}):"), ""]
            lines += gated_table(pts[m], ref) + [""]
    base = sorted((p for m in ("greedy_miser", "cegb", "budget_rf") for p in pts.get(m, [])),
                  key=lambda p: (METHODS.index(p["method"]), p["value"] or 0.0,
                                 p.get("trees", 0)))
    if base:
        lines += ["**Baselines**:", ""] + h.points_table(base, [
            ("method", lambda p: METHOD_LABELS[p["method"]]), ("setting", _value_label),
            ROUNDS_COLUMN, *SCORE_COLUMNS, ("mean test cost", h.col("mean_cost", ",.2f")),
            reduction_column(reference(pts, "f0")), ("features used", h.col("features_used", "d")),
            ("train s", h.col("train_s", ".1f"))], "llrrrrrrr") + [""]
    for b in ("greedy_miser", "cegb", "budget_rf", "adapt_lin") if pts.get("adapt_gbrt") else ():
        if pts.get(b):
            lines += [(f"ADAPT-GBRT at equal cost vs {METHOD_LABELS[b]} (curve: ADAPT-GBRT's "
                      "Pareto front):"), ""]
            lines += h.comparison_table(pts["adapt_gbrt"], pts[b], (
                METHOD_LABELS[b], "ADAPT-GBRT", "mean cost", "accuracy"), _value_label,
                curve_points=h.pareto(pts["adapt_gbrt"])) + [""]
    return lines


def render(doc):
    lines = ["## Headline: cost reduction within 1% of f0's accuracy", ""]
    lines += headline_table(doc["results"]) + [""]
    for task, results in doc["results"].items():
        lines += task_section(task, results)
    return lines


PLOT_STYLE = {"adapt_gbrt": ("o", "tab:red"), "adapt_gbrt_input": ("s", "tab:orange"),
              "adapt_gbrt_lgbm": ("x", "tab:brown"), "adapt_lin": ("^", "tab:purple"),
              "greedy_miser": ("v-", "tab:blue"), "cegb": ("D-", "tab:green"),
              "budget_rf": (".", "tab:gray")}


def plot(doc, path):
    def draw(ax, task, plt):
        pts = task_points(doc["results"][task])
        f0 = pts["f0"][0]
        for m, (style, color) in PLOT_STYLE.items():
            h.curve(ax, pts.get(m, []), "mean_cost", "accuracy", style, color=color,
                    label=METHOD_LABELS[m], markersize=5)
        h.curve(ax, h.pareto(pts.get("adapt_gbrt", [])), "mean_cost", "accuracy", "-",
                color="tab:red", alpha=0.7)
        for g, style in ((f0, "k*"), *[(g, "P") for g in pts.get("f0_lightgbm", [])]):
            ax.plot([g["mean_cost"]], [g["accuracy"]], style, markersize=10,
                    label=METHOD_LABELS[g["method"]])
        ax.axhline(f0["accuracy"] - WITHIN, color="black", linestyle=":", linewidth=0.8,
                   label="f0 accuracy - 0.01")
        c = headline(pts["adapt_gbrt"], f0) if pts.get("adapt_gbrt") else None
        if c:
            ax.plot([c["mean_cost"]], [c["accuracy"]], "ko", markersize=12, fillstyle="none",
                    label=f"headline ({1 - c['mean_cost'] / f0['mean_cost']:.0%} cheaper)")
        ax.set_ylim(f0["accuracy"] - 0.15, min(1.0, f0["accuracy"] + 0.02))
        h.finish_axis(ax, "mean test cost per input (symlog)", "test accuracy",
                      task_title(task, True), legend_size=6.5, legend_loc="lower right")
    return h.plot_panels(
        path, doc, [t for t, rs in doc["results"].items() if task_points(rs).get("f0")], draw,
        "ADAPT-GBRT / ADAPT-LIN vs Greedy Miser, CEGB, BudgetRF (points below the axis not "
        "shown)", "test accuracy vs mean test cost per input, one panel per task; red line: "
        "Pareto front of ADAPT-GBRT; dotted: f0's accuracy - 0.01", (6.0, 4.8))


if __name__ == "__main__":
    sys.exit(h.main(sys.modules[__name__]))
