"""ADAPT-GBRT / ADAPT-LIN benchmark: gated models vs Greedy Miser, CEGB and BudgetRF.

A low-cost gate g and predictor f1 in front of an expensive f0 (the gate sends at most
``p_full`` of the training inputs to f0), swept over ``p_full`` x gamma on ``letters``
(A-M vs N-Z), ``mnist38`` (``bench_cstc.load_task``) and ``synthetic_costly``, against
Greedy Miser, CEGB and BudgetRF on the same splits. f0: the cbudget gbdt of best
validation accuracy over ``F0_LEAVES`` (Letters: also a LightGBM f0 as
``cbudget.ExternalModel``); ADAPT-GBRT with model (the paper's) and per-input
acquisition, early stopping on the validation error; ADAPT-LIN on Letters; BudgetRF's
points are the prefixes of ``RF_PREFIXES`` trees. Checks: every gated point's route,
predictions and costs from its parts' leaf paths, the leaf-path cost check, and once per
task ADAPT-GBRT with ``p_full=0`` growing Greedy Miser's trees. Headline: the ADAPT-GBRT
point of lowest validation cost within 1 point of f0's validation accuracy. The
constants below are the full run's grids; benchmarks/README.md has the rest.
"""
import atexit
import os
import pickle
import shutil
import sys
import tempfile
from pathlib import Path

import datasets
import harness as h
import numpy as np
from bench_budget_rf import budget_rf_params
from bench_cegb import cegb_params
from bench_cstc import load_task as cstc_load_task
from bench_greedy_miser import method_params as gm_method_params

NAME = "adapt"
TITLE = "ADAPT-GBRT / ADAPT-LIN benchmark: gated models vs Greedy Miser, CEGB and BudgetRF"
DATASETS = ("letters", "mnist38", "synthetic_costly")
INFO_LIBRARIES = ("lightgbm",)
TIME_BUDGET = 45.0   # default --time-budget (minutes)
SUBSET_OPTION = "methods"
IDENT = ("task", "method", "value")
QUICK_OUTPUT = "/tmp/adapt_quick.md"
TASK_TITLES = {
    "letters": "Letters A-M (0) vs N-Z (1) (UCI, 16 features, cost 1 each)",
    "mnist38": "Multi-resolution MNIST, 3 (0) vs 8 (1) (1,120 pixels at 4x4 / 8x8 / 16x16 / "
               "28x28, cost 1 each)",
    "synthetic_costly": "Synthetic costly binary (make_synthetic_costly, seed 0; 32 features, "
                        "costs 1 ... 200)",
}
TASK_SHORT = {"letters": "Letters A-M vs N-Z", "mnist38": "MNIST 3 vs 8",
              "synthetic_costly": "Synthetic costly"}
METHODS = ("adapt_gbrt", "adapt_gbrt_input", "adapt_gbrt_lgbm", "adapt_lin", "greedy_miser",
           "cegb", "budget_rf")
METHOD_LABELS = {"adapt_gbrt": "ADAPT-GBRT", "adapt_gbrt_input": "ADAPT-GBRT (input acq.)",
                 "adapt_gbrt_lgbm": "ADAPT-GBRT (LightGBM f0)", "adapt_lin": "ADAPT-LIN",
                 "greedy_miser": "Greedy Miser", "cegb": "CEGB", "budget_rf": "BudgetRF",
                 "f0": "f0 (cbudget gbdt)", "f0_lightgbm": "f0 (LightGBM)"}
GATED = ("adapt_gbrt", "adapt_gbrt_input", "adapt_gbrt_lgbm", "adapt_lin")
VALUE_NAME = {"adapt_gbrt": "gamma", "adapt_gbrt_input": "gamma", "adapt_gbrt_lgbm": "gamma",
              "adapt_lin": "gamma", "greedy_miser": "lambda", "cegb": "lambda",
              "budget_rf": "alpha"}
# settings of the full run (chosen from short probes; see the results file)
SYNTHETIC_ROWS = 100_000
LETTERS_SPLIT = 13            # letters 0..12 (A-M) -> 0, 13..25 (N-Z) -> 1
F0_LEAVES = {"letters": (15, 31, 63), "mnist38": (15, 31), "synthetic_costly": (15, 31, 63)}
F0_ROUNDS = {"letters": 1000, "mnist38": 300, "synthetic_costly": 300}
P_FULL = (0.05, 0.1, 0.2, 0.3, 0.5)
ADAPT_GAMMAS = {"letters": (1.0, 3.0, 10.0, 30.0), "mnist38": (0.3, 3.0, 30.0),
                "synthetic_costly": (0.1, 1.0, 10.0)}
ADAPT_ROUNDS = {"letters": 2000, "mnist38": 200, "synthetic_costly": 600}
PATIENCE = {"letters": 300, "mnist38": 50, "synthetic_costly": 100}
Q_UPDATE_PERIOD = 10
LGBM_GAMMAS = {"letters": (3.0,)}       # ADAPT-GBRT with the LightGBM f0
LIN_P_FULL = (0.1, 0.2, 0.3, 0.5)
LIN_GAMMAS = {"letters": (1e-3, 1e-2, 3e-2, 1e-1)}
LIN_ALTERNATIONS = 20
LIN_RESTARTS = 4
GM_LAMBDAS = {"letters": (0.0, 3.0, 10.0, 30.0, 100.0), "mnist38": (0.0, 3.0, 10.0, 30.0, 100.0),
              "synthetic_costly": (0.0, 0.3, 1.0, 3.0, 10.0, 100.0)}
CEGB_LAMBDAS = {"letters": (0.0, 0.003, 0.01, 0.02, 0.03, 0.05),
                "mnist38": (0.0, 3e-4, 1e-3, 3e-3, 0.01, 0.03, 0.1),
                "synthetic_costly": (0.0, 1e-5, 3e-5, 1e-4, 3e-4, 1e-3, 1e-2)}
CEGB_ROUNDS = {"letters": 500, "mnist38": 200, "synthetic_costly": 300}
CEGB_PATIENCE = 50
RF_ALPHAS = {"letters": (0.0, 10.0), "mnist38": (0.0, 10.0), "synthetic_costly": (0.0, 10.0)}
RF_TREES = {"letters": 40, "mnist38": 20, "synthetic_costly": 40}
RF_PREFIXES = (1, 2, 3, 5, 7, 10, 15, 20, 30, 40)
RF_CHECK_TREES = 3            # the budget check: "budget" between the costs of 3 and 4 trees
P0_CHECK_ROUNDS = 100         # rounds of the p_full = 0 vs Greedy Miser check
WITHIN = 0.01                 # the headline: within 1 percentage point of f0's accuracy
QUICK = {"train_rows": 1500, "valid_rows": 500, "test_rows": 500, "n_rows": 10_000,
         "f0_leaves": (15, 31), "f0_rounds": 60, "p_full": (0.1, 0.3),
         "adapt_gammas": {"letters": (3.0, 30.0), "mnist38": (3.0, 30.0),
                          "synthetic_costly": (1.0, 10.0)},
         "adapt_rounds": 60, "patience": 20, "lin_p_full": (0.2, 0.5),
         "lin_gammas": {"letters": (1e-2,)}, "lin_alternations": 4, "lin_restarts": 2,
         "gm_lambdas": {"letters": (0.0, 10.0), "mnist38": (0.0, 10.0),
                        "synthetic_costly": (0.0, 1.0)},
         "cegb_lambdas": {"letters": (0.0, 0.01), "mnist38": (0.0, 0.01),
                          "synthetic_costly": (0.0, 1e-4)},
         "cegb_rounds": 40, "rf_alphas": dict.fromkeys(DATASETS, (0.0,)), "rf_trees": 5,
         "p0_check_rounds": 20}
QUICK_HELP = "1,500 / 500 / 500 rows, 10,000 synthetic rows, few rounds, 2 values per grid"
PROBA_TOL = 1e-9


def add_arguments(parser):
    parser.add_argument("--p-full", default=None, help="p_full grid of ADAPT-GBRT (default "
                        + ", ".join(f"{v:g}" for v in P_FULL) + ")")
    parser.add_argument("--adapt-rounds", type=int, default=None,
                        help="rounds of ADAPT-GBRT and Greedy Miser (default ADAPT_ROUNDS)")
    h.add_row_arguments(parser, ("train", "valid", "test"), SYNTHETIC_ROWS)
    parser.add_argument("--omp-wait-policy", default="passive",
                        help="OMP_WAIT_POLICY of the children (default passive; '' leaves it)")
    parser.add_argument("--blas-threads", default="1",
                        help="OPENBLAS_NUM_THREADS of the children (default 1; '' leaves it)")
    parser.add_argument("--workdir", default=None,
                        help="directory for the f0 models (default a temporary one)")


def build_plan(args, tasks, methods):
    """``{task: {method: {"values": [...], "rounds": N, ...}}}``."""
    q = QUICK if args.quick else None
    out = {}
    for task in tasks:
        p = {"f0": {"values": [None], "rounds": q["f0_rounds"] if q else F0_ROUNDS[task],
                    "f0_leaves": list(q["f0_leaves"] if q else F0_LEAVES[task])}}
        if "adapt_gbrt_lgbm" in methods and task in LGBM_GAMMAS:
            p["f0_lightgbm"] = {"values": [None], "rounds": q["f0_rounds"] if q else 1000,
                                "patience": q["patience"] if q else 100}
        a_rounds = args.adapt_rounds or (q["adapt_rounds"] if q else ADAPT_ROUNDS[task])
        patience = q["patience"] if q else PATIENCE[task]
        p_full = ([float(v) for v in args.p_full.split(",")] if args.p_full
                  else list(q["p_full"] if q else P_FULL))
        gated = {"rounds": a_rounds, "patience": patience, "p_full": p_full}
        for m in ("adapt_gbrt", "adapt_gbrt_input"):
            if m in methods:
                p[m] = {"values": list(q["adapt_gammas"][task] if q else ADAPT_GAMMAS[task]),
                        **gated}
        if "adapt_gbrt_lgbm" in methods and task in LGBM_GAMMAS:
            p["adapt_gbrt_lgbm"] = {"values": list(q["adapt_gammas"][task][:1] if q
                                                   else LGBM_GAMMAS[task]), **gated}
        if "adapt_lin" in methods and task in LIN_GAMMAS:
            alternations = q["lin_alternations"] if q else LIN_ALTERNATIONS
            p["adapt_lin"] = {"values": list(q["lin_gammas"][task] if q else LIN_GAMMAS[task]),
                              "rounds": alternations, "patience": alternations,
                              "p_full": list(q["lin_p_full"] if q else LIN_P_FULL),
                              "lin_restarts": q["lin_restarts"] if q else LIN_RESTARTS}
        if "greedy_miser" in methods:
            lams = list(q["gm_lambdas"][task] if q else GM_LAMBDAS[task])
            p["greedy_miser"] = {"values": lams, "rounds": a_rounds, "patience": patience,
                                 "p0_check_value": lams[1] if len(lams) > 1 else lams[0],
                                 "p0_check_rounds": q["p0_check_rounds"] if q
                                 else min(P0_CHECK_ROUNDS, a_rounds)}
        if "cegb" in methods:
            p["cegb"] = {"values": list(q["cegb_lambdas"][task] if q else CEGB_LAMBDAS[task]),
                         "rounds": q["cegb_rounds"] if q else CEGB_ROUNDS[task],
                         "patience": q["patience"] if q else CEGB_PATIENCE}
        if "budget_rf" in methods:
            p["budget_rf"] = {"values": list(q["rf_alphas"][task] if q else RF_ALPHAS[task]),
                              "rounds": q["rf_trees"] if q else RF_TREES[task],
                              "prefixes": list(RF_PREFIXES)}
        out[task] = p
    return out


# priority of the methods in the round-robin (a run cut by the time budget keeps these)
ORDER = ("adapt_gbrt", "greedy_miser", "cegb", "budget_rf", "adapt_gbrt_input", "adapt_lin",
         "adapt_gbrt_lgbm")


def plan(args, tasks):
    """The f0s first, then round-robin over the (task, method) sweeps, each in
    ``harness.spread`` order; the children's environment and the f0 directory."""
    grid = build_plan(args, tasks, h.parse_choices(args.methods, METHODS, "method"))
    for var, value in (("OMP_WAIT_POLICY", args.omp_wait_policy),
                       ("OPENBLAS_NUM_THREADS", args.blas_threads)):
        if value:
            os.environ[var] = value
    workdir = Path(args.workdir or tempfile.mkdtemp(prefix="bench_adapt_"))
    workdir.mkdir(parents=True, exist_ok=True)
    if not args.workdir:
        atexit.register(shutil.rmtree, workdir, ignore_errors=True)
    todo = [(t, m, None, p[m]) for t, p in grid.items() for m in ("f0", "f0_lightgbm") if m in p]
    queues = [[(t, m, v, p[m]) for v in h.spread(p[m]["values"])]
              for m in ORDER for t, p in grid.items() if m in p]
    todo += [q.pop(0) for _ in range(max(map(len, queues), default=0)) for q in queues if q]
    common = {"threads": args.threads, "workdir": str(workdir),
              **{k: getattr(args, k) for k in h.ROW_OPTIONS}}
    jobs = []
    for task, m, value, settings in todo:
        spec = dict(common, task=task, method=m, value=value,
                    **{k: v for k, v in settings.items() if k not in ("values", "p0_check_value")})
        if m == "greedy_miser":
            spec["p0_check"] = value == settings["p0_check_value"]
        if m == "budget_rf":
            spec["budget_check"] = value == settings["values"][0]
        jobs.append((task, f"{TASK_SHORT[task]} / {METHOD_LABELS[m]}"
                     + ("" if value is None else f" / {VALUE_NAME[m]}={value:g}"), spec))
    env = {k: os.environ.get(k) for k in ("OMP_WAIT_POLICY", "OPENBLAS_NUM_THREADS")}
    return jobs, {"threads": args.threads, "plan": grid, "env": env,
                  "n_rows": args.n_rows or SYNTHETIC_ROWS, "time_budget_min": args.time_budget}


# ------------------------------------------------------------------------- child
def load_task(task, n_rows=None, train_rows=None, valid_rows=None, test_rows=None):
    """The binary task: ``X_*`` float32, ``y_*`` 0/1, ``feature_costs``, ``feature_names``
    (the synthetic set also its references, recomputed on a cut test set, ``hard_test``)."""
    if task == "mnist38":
        return cstc_load_task("mnist38", train_rows, valid_rows, test_rows)
    d = h.load_dataset(task, n_rows or SYNTHETIC_ROWS, train_rows, valid_rows, test_rows,
                       keep_valid=True)
    if task == "letters":
        for part in ("train", "valid", "test"):
            d[f"y_{part}"] = (d[f"y_{part}"] >= LETTERS_SPLIT).astype(np.int32)
    if test_rows and "bayes_accuracy_test" in d:
        d["bayes_accuracy_test"] = float(np.mean((d["p_test"] > 0.5) == (d["y_test"] == 1)))
        d["hard_fraction_test"] = float(d["hard_test"].mean())
    return d


def _accuracy(proba, y):
    return float(np.mean((np.asarray(proba) > 0.5) == (y == 1)))


def cost_summary(cost):
    return {"cost_q10": float(np.quantile(cost, 0.1)), "cost_q50": float(np.quantile(cost, 0.5)),
            "cost_q90": float(np.quantile(cost, 0.9)), "max_cost": float(cost.max())}


def thin(values, n=60):
    """About ``n`` (round, value) pairs of a per-round list."""
    values = list(values)
    idx = (range(len(values)) if len(values) <= n else
           np.unique(np.round(np.linspace(0, len(values) - 1, n)).astype(int)))
    return [[int(i), float(values[i])] for i in idx]


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
    rows = np.asarray(part.predict(X, pred_leaf=True), dtype=np.int64).reshape(
        X.shape[0], -1).T + tables.offsets[:, None]
    acquired = np.zeros((X.shape[0], tables.n_words), dtype=np.uint64)
    for t in range(rows.shape[0]):
        acquired |= tables.masks[rows[t]]
    return h.bits_matrix(acquired, n_features)


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
        log = {}
        with h.Timer() as t:
            booster = cbudget.train(params, dtrain, spec["rounds"], evals=[(dvalid, "valid")],
                                    evals_result=log, verbose_eval=False)
        err = np.asarray(log["valid"]["error"])
        r = int(np.argmin(err))
        cand = {"num_leaves": int(leaves), "rounds": spec["rounds"], "best_round": r + 1,
                "valid_accuracy": float(1 - err[r]), **t.fields(),
                "valid_trace": thin(1 - err, 30)}
        candidates.append(cand)
        if best is None or cand["valid_accuracy"] > best[0]["valid_accuracy"]:
            best = (cand, booster[:r + 1], params)
    cand, f0, params = best
    f0.save_model(f0_path(spec))
    same = bool(np.array_equal(cbudget.load_model(f0_path(spec)).predict(data["X_test"]),
                               f0.predict(data["X_test"])))
    if not same:
        raise AssertionError("the reloaded f0 predicts differently")
    test_cost, n_acq, _, diff = h.check_leaf_path_costs(f0, data["X_test"], costs)
    proba = f0.predict(data["X_test"])
    point = {"method": "f0", "value": None, "num_leaves": cand["num_leaves"],
             "selected_round": cand["best_round"], "params": params,
             "valid_accuracy": _accuracy(f0.predict(data["X_valid"]), data["y_valid"]),
             "accuracy": _accuracy(proba, data["y_test"]),
             "auc": datasets.auc(data["y_test"], proba), "mean_cost": float(test_cost.mean()),
             "valid_mean_cost": float(np.asarray(f0.predict_cost(data["X_valid"])).mean()),
             "features_used": len(f0.used_features()), **cost_summary(test_cost),
             "train_s": cand["train_s"], "other_cores": cand["other_cores"],
             "checks": {"cost_max_abs_diff": diff, "mean_features_acquired": float(n_acq.mean()),
                        "reloaded_predictions_identical": same}}
    return {"points": [point], "candidates": candidates}


def run_f0_lightgbm(spec, data, cbudget):
    """LightGBM f0 (Letters): early stopping on the validation error, pickled."""
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
        "valid_accuracy": _accuracy(model.predict_proba(data["X_valid"])[:, 1], data["y_valid"]),
        "accuracy": _accuracy(proba, data["y_test"]), "auc": datasets.auc(data["y_test"], proba),
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
        log = {}
        stopper = cbudget.EarlyStopping(spec["patience"], metric_name="error", data_name="valid")
        with h.Timer() as t:
            model = cbudget.train(params, dtrain, spec["rounds"], expensive_model=f0,
                                  evals=[(dvalid, "valid")], evals_result=log,
                                  verbose_eval=False, callbacks=[stopper])
        err, best = np.asarray(log["valid"]["error"]), model.best_iteration
        proba, route = model.predict(X_test, return_route=True)
        proba, route = np.asarray(proba, dtype=np.float64), np.asarray(route)
        cost = np.asarray(model.predict_cost(X_test), dtype=np.float64)
        checks = check_gated(model, f0_part, X_test, proba, route, cost, costs)
        vproba, vroute = model.predict(data["X_valid"], return_route=True)
        gate_used = np.asarray(model.gate.used_features())
        f1_used = np.asarray(model.predictor.used_features())
        used = np.union1d(gate_used, f1_used).astype(np.int64)
        low = route == 1
        point = {
            "method": spec["method"], "value": gamma, "p_full": float(p_full),
            "cost_tradeoff": params["cost_tradeoff"], "rounds": spec["rounds"],
            "iterations": int(err.shape[0]),
            "selected_round": int(best) + 1 if best is not None else int(err.shape[0]),
            "valid_accuracy": _accuracy(vproba, data["y_valid"]),
            "valid_error_logged": float(err[best]) if best is not None else float(err[-1]),
            "accuracy": _accuracy(proba, y_test), "auc": datasets.auc(y_test, proba),
            "mean_cost": float(cost.mean()),
            "valid_mean_cost": float(np.asarray(model.predict_cost(data["X_valid"])).mean()),
            "expensive_fraction": float(np.mean(route == 0)),
            "valid_expensive_fraction": float(np.mean(np.asarray(vroute) == 0)),
            "train_expensive_fraction": model.summary.get("train_expensive_fraction"),
            "train_mean_q": model.summary.get("train_mean_q"),
            "accuracy_f1_inputs": _accuracy(proba[low], y_test[low]) if low.any() else None,
            "accuracy_f0_inputs": _accuracy(proba[~low], y_test[~low]) if (~low).any() else None,
            "mean_cost_f1_inputs": float(cost[low].mean()) if low.any() else None,
            "mean_cost_f0_inputs": float(cost[~low].mean()) if (~low).any() else None,
            "gate_features": int(gate_used.size), "f1_features": int(f1_used.size),
            "features_used": int(used.size), "model_cost": float(costs[used].sum()),
            "gate_threshold": float(model.gate_threshold), **cost_summary(cost), **t.fields(),
            "checks": checks, "valid_trace": thin(1 - err, 40)}
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
    """Greedy Miser or CEGB at one lambda, early stopping on the validation error, the
    model cut at the best round; for Greedy Miser at the check lambda the p_full = 0
    check (ADAPT-GBRT must grow the same trees for f1, route nothing to f0)."""
    costs, dtrain, dvalid = _datasets(cbudget, data)
    lam = float(spec["value"])
    if spec["method"] == "greedy_miser":
        params = gm_method_params("greedy_miser", spec["task"], 2, lam, costs, spec["threads"])
    else:
        params = cegb_params("cbudget", "letters", 2, lam, costs, n_threads=spec["threads"])
    params["eval_metric"] = "error"
    log = {}
    stopper = cbudget.EarlyStopping(spec["patience"], metric_name="error", data_name="valid")
    with h.Timer() as t:
        booster = cbudget.train(params, dtrain, spec["rounds"], evals=[(dvalid, "valid")],
                                evals_result=log, verbose_eval=False, callbacks=[stopper])
    err = np.asarray(log["valid"]["error"])
    best = booster.best_iteration if booster.best_iteration is not None else err.shape[0] - 1
    cut = booster[:best + 1]
    proba = np.asarray(cut.predict(data["X_test"]), dtype=np.float64)
    cost, n_acq, _, diff = h.check_leaf_path_costs(cut, data["X_test"], costs)
    used = np.asarray(cut.used_features(), dtype=np.int64)
    point = {"method": spec["method"], "value": lam, "rounds": spec["rounds"],
             "iterations": int(err.shape[0]), "selected_round": int(best) + 1,
             "valid_accuracy": _accuracy(cut.predict(data["X_valid"]), data["y_valid"]),
             "accuracy": _accuracy(proba, data["y_test"]),
             "auc": datasets.auc(data["y_test"], proba), "mean_cost": float(cost.mean()),
             "valid_mean_cost": float(np.asarray(cut.predict_cost(data["X_valid"])).mean()),
             "features_used": int(used.size), "model_cost": float(costs[used].sum()),
             **cost_summary(cost), **t.fields(),
             "checks": {"cost_max_abs_diff": diff, "mean_features_acquired": float(n_acq.mean())},
             "valid_trace": thin(1 - err, 40), "params": params}
    out = {"points": [point]}
    if not spec.get("p0_check"):
        return out
    rounds, X = spec["p0_check_rounds"], data["X_test"]
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
    out["p0_check"] = {
        "lambda": gm_p["cost_tradeoff"], "rounds": rounds, "trees_identical": bool(trees_equal),
        "f1_margin_max_abs_diff": diffs[0], "proba_max_abs_diff": diffs[1],
        "cost_max_abs_diff": diffs[2], "routed_to_f0": routed,
        "gate_features": len(ad.gate.used_features()), "gm_train_s": t_gm.wall,
        "adapt_train_s": t_ad.wall,
        "ok": bool(trees_equal and diffs[1] == 0.0 and diffs[2] == 0.0 and routed == 0)}
    return out


def run_budget_rf(spec, data, cbudget):
    """BudgetRF at one alpha: ``rounds`` trees once, the prefixes as budget points; the
    first alpha of a task also checks one budget against training with it."""
    _, dtrain, dvalid = _datasets(cbudget, data)
    alpha, n_trees = float(spec["value"]), spec["rounds"]
    params = budget_rf_params(2, alpha, False, 0, n_trees, spec["threads"])
    params.pop("budget")
    with h.Timer() as t:
        forest = cbudget.train(params, dtrain, n_trees, verbose_eval=False)
    points = []
    for k in (k for k in spec["prefixes"] if k <= n_trees):
        rng = (0, k)
        vcost = np.asarray(forest.predict_cost(data["X_valid"], iteration_range=rng))
        cost = np.asarray(forest.predict_cost(data["X_test"], iteration_range=rng))
        points.append({
            "method": "budget_rf", "value": alpha, "trees": k, "budget": float(vcost.mean()),
            "valid_accuracy": float(np.mean(forest.predict(data["X_valid"], iteration_range=rng)
                                            == data["y_valid"])),
            "accuracy": float(np.mean(forest.predict(data["X_test"], iteration_range=rng)
                                      == data["y_test"])),
            "mean_cost": float(cost.mean()), "valid_mean_cost": float(vcost.mean()),
            "features_used": len(forest.used_features(rng)), **cost_summary(cost),
            "train_s": t.wall * k / n_trees, "other_cores": t.other})
    out = {"points": points, "train_all_s": t.wall, "params": params}
    if spec.get("budget_check") and RF_CHECK_TREES < n_trees:
        k = RF_CHECK_TREES
        c = [float(np.asarray(forest.predict_cost(data["X_valid"], iteration_range=(0, j))).mean())
             for j in (k, k + 1)]
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
    version, location = h.library_version("cbudget")
    with h.Timer() as t_load:
        data = load_task(spec["task"], *(spec.get(k) for k in h.ROW_OPTIONS))
    out = RUNNERS[spec["method"]](spec, data, cbudget)
    for p in out["points"]:
        p["task"] = spec["task"]
    trained = [p for p in out["points"] if "train_s" in p]
    others = [p["other_cores"] for p in trained if p.get("other_cores") is not None]
    out.update({
        "task": spec["task"], "method": spec["method"], "value": spec.get("value"),
        "version": version, "location": location, "threads": spec["threads"],
        "n_train": int(data["X_train"].shape[0]), "n_valid": int(data["X_valid"].shape[0]),
        "n_test": int(data["X_test"].shape[0]), "n_features": len(data["feature_costs"]),
        "full_cost": float(np.sum(data["feature_costs"])),
        "pos_rate_train": float(np.mean(data["y_train"])), "load_s": t_load.wall,
        "train_total_s": float(out.get("train_all_s", sum(p["train_s"] for p in trained))),
        "other_cores_during_train": float(np.mean(others)) if others else 0.0,
        "loadavg_before": t_load.load_before, "loadavg_after": h.loadavg(),
        "peak_rss_mb": h.maxrss_bytes() / 2**20,
        "env": {k: os.environ.get(k) for k in ("OMP_WAIT_POLICY", "OPENBLAS_NUM_THREADS")}})
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


def pareto(points):
    """The points no other point beats (no more cost, a higher score), by cost."""
    front, best = [], -1.0
    for p in sorted(points, key=lambda p: (p["mean_cost"], -p["accuracy"])):
        if p["accuracy"] > best:
            front.append(p)
            best = p["accuracy"]
    return front


def headline(points, f0):
    """The point of lowest validation cost within ``WITHIN`` of f0's validation accuracy
    (ties: higher validation accuracy), and the same selection on the test set."""
    ok = [p for p in points if p["valid_accuracy"] >= f0["valid_accuracy"] - WITHIN - 1e-12]
    chosen = min(ok, key=lambda p: (p["valid_mean_cost"], -p["valid_accuracy"])) if ok else None
    ok_t = [p for p in points if p["accuracy"] >= f0["accuracy"] - WITHIN - 1e-12]
    oracle = min(ok_t, key=lambda p: (p["mean_cost"], -p["accuracy"])) if ok_t else None
    return {"chosen": chosen, "n_qualifying": len(ok), "test_oracle": oracle,
            "reduction": (1 - chosen["mean_cost"] / f0["mean_cost"]) if chosen else None,
            "test_within": (chosen["accuracy"] >= f0["accuracy"] - WITHIN - 1e-12)
            if chosen else None,
            "oracle_reduction": (1 - oracle["mean_cost"] / f0["mean_cost"]) if oracle else None}


def analysis(results_by_task):
    """Per task: f0 and the headline of each gated method."""
    out = {}
    for task, results in results_by_task.items():
        pts = task_points(results)
        f0 = (pts.get("f0") or [None])[0]
        a = {"f0": f0, "headline": {}}
        for m in GATED if f0 else ():
            if pts.get(m):
                ref = (pts["f0_lightgbm"][0] if m == "adapt_gbrt_lgbm" and pts.get("f0_lightgbm")
                       else f0)
                a["headline"][m] = dict(headline(pts[m], ref), reference=ref["method"])
        out[task] = a
    return out


# ------------------------------------------------------------------------ report
def _value_label(p):
    if p["method"] == "budget_rf":
        return f"alpha={p['value']:g}, {p['trees']} trees"
    if p["method"] in GATED:
        return f"p_full={p['p_full']:g}, gamma={p['value']:g}"
    return "-" if p["method"] in ("f0", "f0_lightgbm") else f"lambda={p['value']:g}"


def _grid(values):
    return ", ".join(f"{v:g}" for v in values)


def settings_table(grid):
    rows = []
    for task, p in grid.items():
        a = p.get("adapt_gbrt") or p.get("adapt_gbrt_input") or p.get("greedy_miser")
        rows.append([TASK_SHORT[task], f"{_grid(p['f0']['f0_leaves'])} / {p['f0']['rounds']}",
                     f"{a['rounds']} ({a['patience']})" if a else "-",
                     _grid(a["p_full"]) if a and "p_full" in a else "-",
                     _grid(p["adapt_gbrt"]["values"]) if "adapt_gbrt" in p else "-",
                     _grid(p["greedy_miser"]["values"]) if "greedy_miser" in p else "-",
                     f"{_grid(p['cegb']['values'])} ({p['cegb']['rounds']}, "
                     f"{p['cegb']['patience']})" if "cegb" in p else "-",
                     f"{_grid(p['budget_rf']['values'])} ({p['budget_rf']['rounds']})"
                     if "budget_rf" in p else "-"])
    return h.table(["task", "f0 num_leaves / rounds", "ADAPT-GBRT and GM rounds (patience)",
                    "p_full", "gamma", "Greedy Miser lambda", "CEGB lambda (rounds, patience)",
                    "BudgetRF alpha (trees)"], rows, "l")


PAPER = {"letters": "~31% (its Letters)", "mnist38": "- (31-63% on its data sets)",
         "synthetic_costly": "- (31-63% on its data sets)"}


def headline_table(analysis):
    rows = []
    for task, a in analysis.items():
        f0, hl = a["f0"], a["headline"].get("adapt_gbrt")
        f0_text = f"{f0['accuracy']:.4f} / {f0['mean_cost']:,.2f}" if f0 else "f0 failed"
        c = hl and hl["chosen"]
        o = hl and hl["test_oracle"]
        oracle = (f"{_value_label(o)}: {o['accuracy']:.4f} at {o['mean_cost']:,.2f} "
                  f"({hl['oracle_reduction']:.1%})" if o else "none")
        if not (f0 and hl):
            rows.append([TASK_SHORT[task], f0_text] + (["not run"] if f0 else [""]) + [""] * 6)
        elif c is None:
            rows.append([TASK_SHORT[task], f0_text, "no point within 1 pt on validation", "",
                         "", "**none**", "", oracle, PAPER[task]])
        else:
            rows.append([
                TASK_SHORT[task], f0_text,
                (f"{_value_label(c)} (valid {c['valid_accuracy']:.4f} vs f0 "
                f"{f0['valid_accuracy']:.4f}; {c['selected_round']} rounds; "
                f"{c['expensive_fraction']:.1%} to f0)"),
                f"{c['accuracy']:.4f} ({f0['accuracy'] - c['accuracy']:+.4f})",
                f"{c['mean_cost']:,.2f}", f"**{hl['reduction']:.1%}**",
                "yes" if hl["test_within"] else "no", oracle, PAPER[task]])
    return h.table(["task", "f0: test accuracy / mean cost",
                    "ADAPT-GBRT point (selected on validation)", "its test accuracy (f0 - it)",
                    "its mean test cost", "**cost reduction**", "test accuracy within 1 pt of f0",
                    "best test-side point (reduction)", "paper"], rows, "llllrrcll")


def other_headlines(analysis):
    rows = []
    for task, a in analysis.items():
        for m, hl in a["headline"].items():
            c = hl["chosen"]
            rows.append([TASK_SHORT[task], METHOD_LABELS[m]] + (
                ["none within 1 pt on validation", "", "", "", ""] if c is None else
                [_value_label(c), f"{c['accuracy']:.4f}", f"{c['mean_cost']:,.2f}",
                 f"{hl['reduction']:.1%} (vs {METHOD_LABELS[hl['reference']]})",
                 "yes" if hl["test_within"] else "no"]))
    return h.table(["task", "method", "point selected on validation", "test accuracy",
                    "mean test cost", "cost reduction vs its f0", "within 1 pt on test"],
                   rows, "lllrrrc")


def points_table(points, f0, gated):
    def red(p):
        return h.fmt(1 - p["mean_cost"] / f0["mean_cost"] if f0 else None, ".1%")
    if gated:
        return h.table(
            ["p_full", "gamma", "rounds (selected)", "valid accuracy", "test accuracy",
             "test AUC", "mean test cost", "reduction vs f0", "to f0 (test / train)",
             "gate / f1 features", "acc. on f1 / f0 inputs", "cost q10 / q50 / q90", "train s"],
            [[f"{p['p_full']:g}", f"{p['value']:g}", f"{p['iterations']} ({p['selected_round']})",
              f"{p['valid_accuracy']:.4f}", f"{p['accuracy']:.4f}", h.fmt(p.get("auc"), ".4f"),
              f"{p['mean_cost']:,.2f}", red(p), (f"{p['expensive_fraction']:.3f} / "
              f"{h.fmt(p.get('train_expensive_fraction'), '.3f')}"),
              f"{p['gate_features']} / {p['f1_features']}",
              (f"{h.fmt(p.get('accuracy_f1_inputs'), '.4f')} / "
              f"{h.fmt(p.get('accuracy_f0_inputs'), '.4f')}"),
              f"{p['cost_q10']:,.0f} / {p['cost_q50']:,.0f} / {p['cost_q90']:,.0f}",
              f"{p['train_s']:.1f}"]
             for p in sorted(points, key=lambda p: (p["value"], p["p_full"]))], "r")
    return h.table(
        ["method", "setting", "rounds (selected)", "valid accuracy", "test accuracy",
         "mean test cost", "reduction vs f0", "features used", "train s"],
        [[METHOD_LABELS[p["method"]], _value_label(p),
          f"{p['iterations']} ({p['selected_round']})" if "iterations" in p else
          f"{p['trees']} trees" if "trees" in p else "", f"{p['valid_accuracy']:.4f}",
          f"{p['accuracy']:.4f}", f"{p['mean_cost']:,.2f}", red(p), p["features_used"],
          f"{p['train_s']:.1f}"]
         for p in sorted(points, key=lambda p: (METHODS.index(p["method"]), p["value"] or 0.0,
                                                p.get("trees", 0)))], "llrrrrrrr")


def task_section(task, results, a):
    ok, pts = h.ok_results(results), task_points(results)
    lines = [f"## {TASK_TITLES[task]}", ""]
    if ok:
        r = ok[0]
        lines += [(f"{r['n_train']:,} train / {r['n_valid']:,} valid / {r['n_test']:,} test "
                  f"rows, {r['n_features']} features (all features cost {r['full_cost']:,.0f}); "
                  f"positives in training {r['pos_rate_train']:.1%}."), ""]
    f0r = next((r for r in ok if r["method"] == "f0"), None)
    if f0r:
        lines += ["**f0 candidates** (cbudget gbdt; the best validation round of each):", ""]
        lines += h.table(["num_leaves", "best round", "valid accuracy", "train s"],
                         [[c["num_leaves"], f"{c['best_round']} of {c['rounds']}",
                           f"{c['valid_accuracy']:.4f}", f"{c['train_s']:.1f}"]
                          for c in f0r["candidates"]], "r") + [""]
    for m in GATED:
        if pts.get(m):
            ref = (pts["f0_lightgbm"][0] if m == "adapt_gbrt_lgbm" and pts.get("f0_lightgbm")
                   else a["f0"])
            lines += [(f"**{METHOD_LABELS[m]}** (reduction vs "
                      f"{METHOD_LABELS[ref['method']] if ref else 'f0'}):"), ""]
            lines += points_table(pts[m], ref, True) + [""]
    base = [p for m in ("greedy_miser", "cegb", "budget_rf") for p in pts.get(m, [])]
    if base:
        lines += ["**Baselines**:", ""] + points_table(base, a["f0"], False) + [""]
    for b in ("greedy_miser", "cegb", "budget_rf", "adapt_lin") if pts.get("adapt_gbrt") else ():
        if pts.get(b):
            lines += [(f"ADAPT-GBRT at equal cost vs {METHOD_LABELS[b]} (curve: ADAPT-GBRT's "
                      "Pareto front):"), ""]
            lines += h.comparison_table(pts["adapt_gbrt"], pts[b], (
                METHOD_LABELS[b], "ADAPT-GBRT", "mean cost", "accuracy"), _value_label,
                curve_points=pareto(pts["adapt_gbrt"])) + [""]
    return lines


def render(doc):
    a = analysis(doc["results"])
    lines = ["Grids and rounds per task:", "", *settings_table(doc["plan"]), "",
             "## Headline: cost reduction within 1% of f0's accuracy", ""]
    lines += headline_table(a) + ["", "The same selection for the other gated models:", ""]
    lines += other_headlines(a) + [""]
    for task, results in doc["results"].items():
        lines += task_section(task, results, a[task])
    return lines


PLOT_STYLE = {
    "adapt_gbrt": {"marker": "o", "color": "tab:red", "linestyle": "none", "markersize": 5},
    "adapt_gbrt_input": {"marker": "s", "color": "tab:orange", "linestyle": "none",
                         "markersize": 5, "markerfacecolor": "none"},
    "adapt_gbrt_lgbm": {"marker": "x", "color": "tab:brown", "linestyle": "none", "markersize": 6},
    "adapt_lin": {"marker": "^", "color": "tab:purple", "linestyle": "none", "markersize": 5},
    "greedy_miser": {"marker": "v", "color": "tab:blue", "linestyle": "-", "markersize": 5},
    "cegb": {"marker": "D", "color": "tab:green", "linestyle": "-", "markersize": 4},
    "budget_rf": {"marker": ".", "color": "tab:gray", "linestyle": "none", "markersize": 6},
}


def plot(doc, path):
    tasks = [t for t, rs in doc["results"].items() if task_points(rs).get("f0")]
    a = analysis({t: doc["results"][t] for t in tasks})

    def draw(ax, task, plt):
        pts = task_points(doc["results"][task])
        f0 = pts["f0"][0]
        for m, style in PLOT_STYLE.items():
            h.curve(ax, pts.get(m, []), "mean_cost", "accuracy", "", label=METHOD_LABELS[m],
                    **style)
        for m, line, color, width in (("adapt_gbrt", "-", "tab:red", 1.2),
                                      ("adapt_gbrt_input", "--", "tab:orange", 1.0)):
            h.curve(ax, pareto(pts.get(m, [])), "mean_cost", "accuracy", line, color=color,
                    linewidth=width, alpha=0.7)
        ax.plot([f0["mean_cost"]], [f0["accuracy"]], "*", color="black", markersize=12,
                label="f0 (cbudget gbdt)")
        if pts.get("f0_lightgbm"):
            g = pts["f0_lightgbm"][0]
            ax.plot([g["mean_cost"]], [g["accuracy"]], "P", color="tab:brown", markersize=8,
                    label="f0 (LightGBM)")
        ax.axhline(f0["accuracy"] - WITHIN, color="black", linestyle=":", linewidth=0.8,
                   label="f0 accuracy - 0.01")
        hl = a[task]["headline"].get("adapt_gbrt")
        if hl and hl["chosen"]:
            c = hl["chosen"]
            ax.plot([c["mean_cost"]], [c["accuracy"]], "o", markersize=12, markerfacecolor="none",
                    markeredgecolor="black", label=f"headline ({hl['reduction']:.0%} cheaper)")
        ax.set_ylim(f0["accuracy"] - 0.15, min(1.0, f0["accuracy"] + 0.02))
        h.finish_axis(ax, "mean test cost per input (symlog)", "test accuracy",
                      TASK_SHORT[task], legend_size=6.5, legend_loc="lower right")
        ax.grid(True, alpha=0.3, which="both")
    return h.plot_panels(
        path, doc, tasks, draw, "ADAPT-GBRT / ADAPT-LIN vs Greedy Miser, CEGB, BudgetRF: test "
        "accuracy vs mean test cost (lines: Pareto fronts of ADAPT-GBRT; points below the axis "
        "not shown)", "test accuracy vs mean test cost per input, one panel per task; red line: "
        "Pareto front of ADAPT-GBRT (model acquisition), dashed orange: per-input acquisition; "
        "the dotted line is f0's accuracy - 0.01", (6.0, 4.8))


if __name__ == "__main__":
    sys.exit(h.main(sys.modules[__name__]))
