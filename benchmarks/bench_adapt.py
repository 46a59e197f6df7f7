"""ADAPT-GBRT / ADAPT-LIN benchmark: accuracy vs feature cost of gated models, vs Greedy
Miser, CEGB and BudgetRF.

cbudget's adaptive models (``algorithm`` "adapt_gbrt", "adapt_lin"; Nan and Saligrama,
"Adaptive Classification for Prediction Under a Budget", NIPS 2017): a low-cost gate g
and a low-cost predictor f1 in front of an expensive model f0; the gate sends the inputs
it finds hard to f0 (at most ``p_full`` of the training inputs). Swept over ``p_full`` x
``cost_tradeoff`` (the paper's gamma) on three binary tasks built from
benchmarks/datasets.py, against cbudget's Greedy Miser, CEGB and BudgetRF on the same
splits:

* ``letters`` -- UCI Letters (``load_letters``: 12,000 / 4,000 / 4,000 rows, 16 features
  of cost 1), letters A-M -> 0, N-Z -> 1 (balanced: 49.4% / 50.6% of the training rows).
* ``mnist38`` -- the multi-resolution MNIST of the CSTC paper (``load_mnist_multires``,
  1,120 pixels of the 4x4, 8x8, 16x16 and 28x28 images, cost 1 each), digits 3 vs 8
  (8 -> 1), ``bench_cstc.load_task("mnist38")``: 9,976 / 2,006 / 1,984 rows.
* ``synthetic_costly`` -- ``make_synthetic_costly`` (32 features, costs 1 ... 200, four
  per level; 15.9% "hard" inputs that need the costliest features), ``SYNTHETIC_ROWS``
  rows in all (60 / 20 / 20 train / valid / test).

Methods (one child process per (task, method, trade-off value); 2 threads)
---------------------------------------------------------------------------
* **f0**: cbudget gbdt (learning rate 0.1, the matched settings of
  ``_common.library_params``: best-first trees, L2 1, 255 bins), ``num_leaves`` in
  ``F0_LEAVES`` for up to ``F0_ROUNDS`` rounds; the (leaves, round) of best validation
  accuracy is kept, saved as JSON, and every gated model of the task uses it. On Letters
  also a LightGBM f0 (``lightgbm.LGBMClassifier``, 31 leaves, learning rate 0.1, early
  stopping on the validation error) as ``cbudget.ExternalModel(..., features="all")``.
* **ADAPT-GBRT** (``acquisition="model"``, the paper's u_alpha): Greedy Miser's trees
  (depth 4, level by level, at least 20 rows per leaf, leaves = mean residual, step 0.1),
  one tree for f1 and one for g per round, a q-step every 10 rounds, ``ADAPT_ROUNDS``
  rounds at most with early stopping on the validation error of the gated model (patience
  ``PATIENCE``; the model is cut at the best round), over ``P_FULL`` x ``ADAPT_GAMMAS``.
* **ADAPT-GBRT, per-input acquisition** (``acquisition="input"``): the same grid with
  ``cost_tradeoff = gamma / n_train`` (its penalty is per input lacking the feature).
* **ADAPT-LIN** (Letters): linear g and f1, ``LIN_ALTERNATIONS`` alternations at most
  from ``LIN_RESTARTS`` starts, the alternation of best validation error kept, over
  ``LIN_P_FULL`` x ``LIN_GAMMAS``.
* **Greedy Miser** (``algorithm="greedy_miser"``, ``bench_greedy_miser``'s settings: the
  same trees as ADAPT-GBRT's f1), the rounds and early stopping of ADAPT-GBRT, lambdas
  ``GM_LAMBDAS``.
* **CEGB** (``bench_cegb``'s settings: best-first trees of 31 leaves, learning rate 0.1,
  L2 1, per-input feature costs), ``CEGB_ROUNDS`` rounds at most with early stopping on the
  validation error, lambdas ``CEGB_LAMBDAS``.
* **BudgetRF** (``bench_budget_rf``'s settings, cbudget's defaults: threshold-Pairs
  impurity, 80 / 40 / 20 random stumps, ``path_free`` False), ``RF_TREES`` trees per
  alpha in ``RF_ALPHAS``; a budget B gives the longest prefix whose mean validation cost
  is <= B, so the points are the prefixes of ``RF_PREFIXES`` trees (checked once per task
  by training with ``"budget": B``).

Measurements
------------
Per point: validation and test accuracy (threshold 0.5), test AUC, mean validation and
test prediction cost per input (``predict_cost``: the gate's features plus those of the
model the input is sent to, each once; ARCHITECTURE section 2), the share of test inputs
sent to f0, training time (Dataset construction excluded), the selected round. Checks on
every gated point: the route is ``gate margin > gate_threshold``, the prediction is f0's
probability or ``sigmoid(f1)`` accordingly, and the per-input cost equals an independent
computation from the leaf paths (``_common.cbudget_leaf_paths``) of g, f1 and f0 (linear
parts: the non-zero weights); for Greedy Miser / CEGB ``predict_cost`` equals
``_common.prediction_costs``. Once per task: ADAPT-GBRT with ``p_full=0`` must grow Greedy
Miser's trees (identical trees, predictions and costs).

**Headline** per task: among the ADAPT-GBRT points whose *validation* accuracy is within
1 percentage point of f0's validation accuracy, the one of lowest mean validation cost;
its test accuracy, mean test cost and cost reduction ``1 - cost / f0's test cost``.
Equal-cost comparisons use ``_common.dominance`` / ``interpolated_accuracy`` on the test
points.

Usage::

    PYTHONPATH=. python benchmarks/bench_adapt.py --time-budget 40   # full run (32 min on 2 cores)
    PYTHONPATH=. python benchmarks/bench_adapt.py --quick            # smoke run (~1 min)
    PYTHONPATH=. python benchmarks/bench_adapt.py --tasks letters --methods adapt_gbrt,greedy_miser
"""
import json
import os
import pickle
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))

import datasets  # noqa: E402  (benchmarks/datasets.py)
from _common import (  # noqa: E402  (benchmarks/_common.py)
    SMOKE_BANNER, PathTables, parse_run_args, benchmark_parser,
    bits_matrix, cbudget_leaf_paths, command_line, cpu_jiffies, cpu_seconds, dominance,
    finish_run, fmt, interpolated_accuracy, library_params, library_version, loadavg,
    machine_info, maxrss_bytes, other_cores, parse_choices, prediction_costs, pyplot,
    results_header, run_child_command, run_jobs, spread, write_json,
    write_rerendered)
from bench_budget_rf import budget_rf_params  # noqa: E402  (BudgetRF's settings)
from bench_cegb import cegb_params  # noqa: E402  (CEGB's settings)
from bench_cstc import load_task as cstc_load_task  # noqa: E402  (MNIST 3 vs 8)
from bench_greedy_miser import method_params as gm_method_params  # noqa: E402

TASKS = ("letters", "mnist38", "synthetic_costly")
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
SETUP_METHODS = ("f0", "f0_lightgbm")
METHOD_LABELS = {"adapt_gbrt": "ADAPT-GBRT", "adapt_gbrt_input": "ADAPT-GBRT (input acq.)",
                 "adapt_gbrt_lgbm": "ADAPT-GBRT (LightGBM f0)", "adapt_lin": "ADAPT-LIN",
                 "greedy_miser": "Greedy Miser", "cegb": "CEGB", "budget_rf": "BudgetRF",
                 "f0": "f0 (cbudget gbdt)", "f0_lightgbm": "f0 (LightGBM)"}
GATED = ("adapt_gbrt", "adapt_gbrt_input", "adapt_gbrt_lgbm", "adapt_lin")
VALUE_NAME = {"adapt_gbrt": "gamma", "adapt_gbrt_input": "gamma", "adapt_gbrt_lgbm": "gamma",
              "adapt_lin": "gamma", "greedy_miser": "lambda", "cegb": "lambda",
              "budget_rf": "alpha"}

# --- settings of the full run (chosen from short probes; see the results file)
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
         "cegb_rounds": 40, "rf_alphas": {t: (0.0,) for t in TASKS}, "rf_trees": 5,
         "p0_check_rounds": 20}
COST_TOL = 1e-9
PROBA_TOL = 1e-9


# ----------------------------------------------------------------------------- data
def load_task(task, n_rows=None, train_rows=None, valid_rows=None, test_rows=None):
    """The binary task ``task`` (module docstring) as a dict: ``X_{train,valid,test}``
    float32, ``y_*`` int32 0/1, ``feature_costs``, ``feature_names`` (the synthetic set
    also its references, ``hard_test``)."""
    if task == "mnist38":
        return cstc_load_task("mnist38", train_rows, valid_rows, test_rows)
    if task == "letters":
        d = datasets.load_letters(seed=0)
        for part in ("train", "valid", "test"):
            d[f"y_{part}"] = (d[f"y_{part}"] >= LETTERS_SPLIT).astype(np.int32)
    elif task == "synthetic_costly":
        d = datasets.make_synthetic_costly(n_samples=n_rows or SYNTHETIC_ROWS, seed=0)
    else:
        raise ValueError(f"unknown task {task!r}; valid: {', '.join(TASKS)}")
    for part, rows in (("train", train_rows), ("valid", valid_rows), ("test", test_rows)):
        for key in (f"X_{part}", f"y_{part}", f"p_{part}", f"hard_{part}"):
            if key in d:
                d[key] = np.ascontiguousarray(d[key][:rows])
    if test_rows and "bayes_accuracy_test" in d:
        hard, p, y = d["hard_test"], d["p_test"], d["y_test"]
        d["bayes_accuracy_test"] = float(np.mean((p > 0.5) == (y == 1)))
        d["hard_fraction_test"] = float(hard.mean())
    return d


# ---------------------------------------------------------------------- measurements
class Timer:
    """Wall and CPU time of a block, and the cores other processes kept busy."""

    def __enter__(self):
        self.cpu0, self.busy0 = cpu_seconds(), cpu_jiffies()[0]
        self.t0 = time.perf_counter()
        return self

    def __exit__(self, *exc):
        self.wall = time.perf_counter() - self.t0
        self.cpu = cpu_seconds() - self.cpu0
        self.other = other_cores(self.busy0, cpu_jiffies()[0], self.cpu, self.wall)
        return False

    def fields(self):
        return {"train_s": self.wall, "train_cpu_s": self.cpu, "other_cores": self.other}


def _accuracy(proba, y):
    return float(np.mean((np.asarray(proba) > 0.5) == (y == 1)))


def part_bits(part, X, n_features):
    """bool (n, n_features): the features a part (Booster, LinearClassifier, or the
    declared features of an external f0: ``"all"``) reads for each input, from the leaf
    paths of its trees (independent of cbudget's cost routine)."""
    if isinstance(part, str):   # "all"
        return np.ones((X.shape[0], n_features), dtype=bool)
    if hasattr(part, "weights"):   # LinearClassifier
        used = np.asarray(part.weights) != 0
        return np.broadcast_to(used, (X.shape[0], n_features)).copy()
    if not part.trees:
        return np.zeros((X.shape[0], n_features), dtype=bool)
    tables = PathTables([cbudget_leaf_paths(t) for t in part.trees], n_features)
    leaves = np.asarray(part.predict(X, pred_leaf=True), dtype=np.int64).reshape(X.shape[0], -1)
    rows = leaves.T + tables.offsets[:, None]
    acquired = np.zeros((X.shape[0], tables.n_words), dtype=np.uint64)
    for t in range(rows.shape[0]):
        acquired |= tables.masks[rows[t]]
    return bits_matrix(acquired, n_features)


def check_gated(model, f0_part, X, proba, route, cost, costs):
    """The gated model's route, predictions and per-input costs recomputed from its parts
    (AssertionError on a difference); returns the comparison."""
    from scipy.special import expit
    gate_margin = np.asarray(model.gate.predict(X, output_margin=True), dtype=np.float64).ravel()
    f1_margin = np.asarray(model.predictor.predict(X, output_margin=True),
                           dtype=np.float64).ravel()
    own_route = np.where(gate_margin > model.gate_threshold, 0, 1)
    if not np.array_equal(own_route, route):
        raise AssertionError(f"route differs from gate margin > threshold at "
                             f"{int(np.sum(own_route != route))} inputs")
    f0 = model.expensive
    p0 = f0.positive_proba(X) if hasattr(f0, "positive_proba") else f0.predict(X)
    p0 = np.clip(np.asarray(p0, dtype=np.float64), 1e-12, 1 - 1e-12)
    expected = np.where(route == 0, p0, expit(f1_margin))
    proba_diff = float(np.max(np.abs(expected - proba))) if proba.size else 0.0
    if proba_diff > PROBA_TOL:
        raise AssertionError(f"predictions differ from the parts' by {proba_diff}")
    n = costs.shape[0]
    gate_b = part_bits(model.gate, X, n)
    f1_b = part_bits(model.predictor, X, n)
    f0_b = part_bits(f0_part, X, n)
    acquired = gate_b | np.where(route[:, None] == 1, f1_b, f0_b)
    own_cost = acquired @ costs
    cost_diff = float(np.max(np.abs(own_cost - cost))) if cost.size else 0.0
    if cost_diff > COST_TOL * max(1.0, float(costs.sum())):
        raise AssertionError(f"per-input costs differ from the leaf paths by {cost_diff}")
    return {"route_ok": True, "proba_max_abs_diff": proba_diff,
            "cost_max_abs_diff": cost_diff,
            "mean_features_acquired": float(acquired.sum(axis=1).mean())}


def check_booster_cost(booster, X, costs):
    """``predict_cost`` against ``_common.prediction_costs`` from the leaf paths."""
    own = np.asarray(booster.predict_cost(X), dtype=np.float64)
    tables = PathTables([cbudget_leaf_paths(t) for t in booster.trees], costs.shape[0])
    leaves = np.asarray(booster.predict(X, pred_leaf=True), dtype=np.int64).reshape(X.shape[0], -1)
    cost, n_acq = prediction_costs(leaves, tables, costs)
    diff = float(np.max(np.abs(own - cost))) if cost.size else 0.0
    if diff > COST_TOL * max(1.0, float(costs.sum())):
        raise AssertionError(f"predict_cost differs from the leaf paths by {diff}")
    return own, {"cost_max_abs_diff": diff, "mean_features_acquired": float(n_acq.mean())}


def cost_summary(cost):
    return {"cost_q10": float(np.quantile(cost, 0.1)), "cost_q50": float(np.quantile(cost, 0.5)),
            "cost_q90": float(np.quantile(cost, 0.9)), "max_cost": float(cost.max())}


def thin(values, n=60):
    """About ``n`` (round, value) pairs of a per-round list."""
    values = list(values)
    if len(values) <= n:
        return [[i, float(v)] for i, v in enumerate(values)]
    idx = np.unique(np.round(np.linspace(0, len(values) - 1, n)).astype(int))
    return [[int(i), float(values[i])] for i in idx]


# ---------------------------------------------------------------------- child runs
def _datasets(cbudget, data):
    costs = np.asarray(data["feature_costs"], dtype=np.float64)
    dtrain = cbudget.Dataset(data["X_train"], data["y_train"], feature_costs=costs,
                             feature_names=data["feature_names"])
    dvalid = cbudget.Dataset(data["X_valid"], data["y_valid"], reference=dtrain)
    return costs, dtrain, dvalid


def f0_path(spec, task, kind="f0"):
    return Path(spec["workdir"]) / (f"{task}_{kind}.json" if kind == "f0" else f"{task}_{kind}.pkl")


def run_f0(spec, data, cbudget):
    """Train the f0 candidates, keep the best (leaves, round) on validation accuracy, save
    it; return the candidates and the chosen model's figures."""
    costs, dtrain, dvalid = _datasets(cbudget, data)
    candidates, best = [], None
    for leaves in spec["f0_leaves"]:
        params = dict(library_params("cbudget", 2, spec["threads"]), num_leaves=int(leaves),
                      eval_metric="error")
        log = {}
        with Timer() as t:
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
    f0.save_model(f0_path(spec, spec["task"]))
    loaded = cbudget.load_model(f0_path(spec, spec["task"]))
    same = bool(np.array_equal(loaded.predict(data["X_test"]), f0.predict(data["X_test"])))
    test_cost, checks = check_booster_cost(f0, data["X_test"], costs)
    proba = f0.predict(data["X_test"])
    valid_cost = np.asarray(f0.predict_cost(data["X_valid"]))
    point = {"method": "f0", "value": None, "num_leaves": cand["num_leaves"],
             "selected_round": cand["best_round"], "params": params,
             "valid_accuracy": _accuracy(f0.predict(data["X_valid"]), data["y_valid"]),
             "accuracy": _accuracy(proba, data["y_test"]),
             "auc": datasets._auc(data["y_test"], proba),
             "mean_cost": float(test_cost.mean()), "valid_mean_cost": float(valid_cost.mean()),
             "features_used": int(len(f0.used_features())), **cost_summary(test_cost),
             "train_s": cand["train_s"], "other_cores": cand["other_cores"],
             "checks": dict(checks, reloaded_predictions_identical=same)}
    if not same:
        raise AssertionError("the reloaded f0 predicts differently")
    return {"points": [point], "candidates": candidates}


def run_f0_lightgbm(spec, data, cbudget):
    """LightGBM f0 (Letters): early stopping on the validation error, pickled."""
    import lightgbm as lgb
    costs = np.asarray(data["feature_costs"], dtype=np.float64)
    model = lgb.LGBMClassifier(n_estimators=spec["rounds"], num_leaves=31, learning_rate=0.1,
                               min_child_samples=20, reg_lambda=1.0, n_jobs=spec["threads"],
                               random_state=0, deterministic=True, metric="binary_error",
                               verbose=-1)
    with Timer() as t:
        model.fit(data["X_train"], data["y_train"],
                  eval_set=[(data["X_valid"], data["y_valid"])],
                  callbacks=[lgb.early_stopping(spec["patience"], verbose=False)])
    with open(f0_path(spec, spec["task"], "lightgbm"), "wb") as f:
        pickle.dump(model, f)
    proba = model.predict_proba(data["X_test"])[:, 1]
    point = {"method": "f0_lightgbm", "value": None,
             "selected_round": int(model.best_iteration_ or spec["rounds"]),
             "valid_accuracy": _accuracy(model.predict_proba(data["X_valid"])[:, 1],
                                         data["y_valid"]),
             "accuracy": _accuracy(proba, data["y_test"]),
             "auc": datasets._auc(data["y_test"], proba),
             "mean_cost": float(costs.sum()), "valid_mean_cost": float(costs.sum()),
             "features_used": int(costs.shape[0]), **t.fields()}
    return {"points": [point]}


def adapt_params(spec, p_full, gamma, n_train):
    """ADAPT-GBRT's parameters: Greedy Miser's (bench_greedy_miser) plus the gate's."""
    method = spec["method"]
    if method == "adapt_lin":
        return {"algorithm": "adapt_lin", "p_full": float(p_full), "cost_tradeoff": float(gamma),
                "n_restarts": spec["lin_restarts"], "n_jobs": spec["threads"], "seed": 0,
                "eval_metric": "error"}
    p = gm_method_params("greedy_miser", spec["task"], 2, 0.0, None, spec["threads"])
    p.pop("cost_tradeoff")
    p.update(algorithm="adapt_gbrt", p_full=float(p_full),
             acquisition="input" if method == "adapt_gbrt_input" else "model",
             cost_tradeoff=float(gamma) / n_train if method == "adapt_gbrt_input"
             else float(gamma),
             q_update_period=Q_UPDATE_PERIOD, eval_metric="error")
    return p


def run_gated(spec, data, cbudget):
    """One gamma of ADAPT-GBRT / ADAPT-LIN over the p_full grid."""
    costs, dtrain, dvalid = _datasets(cbudget, data)
    task, method, gamma = spec["task"], spec["method"], float(spec["value"])
    if method == "adapt_gbrt_lgbm":
        with open(f0_path(spec, task, "lightgbm"), "rb") as f:
            f0 = cbudget.ExternalModel(pickle.load(f), features="all")
        f0_part = "all"
    else:
        f0 = f0_part = cbudget.load_model(f0_path(spec, task))
    n_train = int(data["y_train"].shape[0])
    points = []
    for p_full in spec["p_full"]:
        params = adapt_params(spec, p_full, gamma, n_train)
        log = {}
        stopper = cbudget.EarlyStopping(spec["patience"], metric_name="error", data_name="valid")
        with Timer() as t:
            model = cbudget.train(params, dtrain, spec["rounds"], expensive_model=f0,
                                  evals=[(dvalid, "valid")], evals_result=log,
                                  verbose_eval=False, callbacks=[stopper])
        err = np.asarray(log["valid"]["error"])
        X_test, y_test = data["X_test"], data["y_test"]
        proba, route = model.predict(X_test, return_route=True)
        proba, route = np.asarray(proba, dtype=np.float64), np.asarray(route)
        cost = np.asarray(model.predict_cost(X_test), dtype=np.float64)
        checks = check_gated(model, f0_part, X_test, proba, route, cost, costs)
        vproba, vroute = model.predict(data["X_valid"], return_route=True)
        vcost = np.asarray(model.predict_cost(data["X_valid"]), dtype=np.float64)
        gate_used = np.asarray(model.gate.used_features())
        f1_used = np.asarray(model.predictor.used_features())
        used = np.union1d(gate_used, f1_used).astype(np.int64)
        low = route == 1
        point = {
            "method": method, "value": gamma, "p_full": float(p_full),
            "cost_tradeoff": params["cost_tradeoff"], "rounds": spec["rounds"],
            "iterations": int(err.shape[0]),
            "selected_round": int(model.best_iteration) + 1 if model.best_iteration is not None
            else int(err.shape[0]),
            "valid_accuracy": _accuracy(vproba, data["y_valid"]),
            "valid_error_logged": float(err[model.best_iteration]) if model.best_iteration
            is not None else float(err[-1]),
            "accuracy": _accuracy(proba, y_test), "auc": datasets._auc(y_test, proba),
            "mean_cost": float(cost.mean()), "valid_mean_cost": float(vcost.mean()),
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
            "gate_threshold": float(model.gate_threshold),
            **cost_summary(cost), **t.fields(), "checks": checks,
            "valid_trace": thin(1 - err, 40)}
        if method == "adapt_lin":
            point["objective_per_alternation"] = [float(v) for v in
                                                  getattr(model, "objective_per_alternation", [])]
        if "hard_test" in data:
            hard = data["hard_test"]
            point["hard_to_f0"] = float(np.mean(route[hard] == 0)) if hard.any() else None
            point["f0_inputs_hard"] = float(np.mean(hard[route == 0])) if (route == 0).any() else None
        points.append(point)
    return {"points": points}


def _staged_booster_point(spec, data, booster, log, costs, value, t):
    err = np.asarray(log["valid"]["error"])
    best = booster.best_iteration if booster.best_iteration is not None else err.shape[0] - 1
    cut = booster[:best + 1]
    proba = np.asarray(cut.predict(data["X_test"]), dtype=np.float64)
    cost, checks = check_booster_cost(cut, data["X_test"], costs)
    vcost = np.asarray(cut.predict_cost(data["X_valid"]), dtype=np.float64)
    used = np.asarray(cut.used_features(), dtype=np.int64)
    return {"method": spec["method"], "value": value, "rounds": spec["rounds"],
            "iterations": int(err.shape[0]), "selected_round": int(best) + 1,
            "valid_accuracy": _accuracy(cut.predict(data["X_valid"]), data["y_valid"]),
            "accuracy": _accuracy(proba, data["y_test"]), "auc": datasets._auc(data["y_test"], proba),
            "mean_cost": float(cost.mean()), "valid_mean_cost": float(vcost.mean()),
            "features_used": int(used.size), "model_cost": float(costs[used].sum()),
            **cost_summary(cost), **t.fields(), "checks": checks,
            "valid_trace": thin(1 - err, 40)}


def run_boosting(spec, data, cbudget):
    """Greedy Miser or CEGB at one lambda, early stopping on the validation error; for
    Greedy Miser at the check lambda also the p_full = 0 check."""
    costs, dtrain, dvalid = _datasets(cbudget, data)
    lam = float(spec["value"])
    if spec["method"] == "greedy_miser":
        params = gm_method_params("greedy_miser", spec["task"], 2, lam, costs, spec["threads"])
    else:
        params = cegb_params("cbudget", "letters", 2, lam, costs, n_threads=spec["threads"])
    params["eval_metric"] = "error"
    log = {}
    stopper = cbudget.EarlyStopping(spec["patience"], metric_name="error", data_name="valid")
    with Timer() as t:
        booster = cbudget.train(params, dtrain, spec["rounds"], evals=[(dvalid, "valid")],
                                evals_result=log, verbose_eval=False, callbacks=[stopper])
    point = _staged_booster_point(spec, data, booster, log, costs, lam, t)
    point["params"] = params
    out = {"points": [point]}
    if spec.get("p0_check"):
        out["p0_check"] = p0_check(spec, data, cbudget, dtrain, params, costs)
    return out


def p0_check(spec, data, cbudget, dtrain, gm_params, costs):
    """ADAPT-GBRT with p_full = 0 against Greedy Miser at the same lambda and rounds: the
    same trees for f1, no input routed to f0, the same predictions and costs."""
    rounds = spec["p0_check_rounds"]
    f0 = cbudget.load_model(f0_path(spec, spec["task"]))
    gm_p = {k: v for k, v in gm_params.items() if k != "eval_metric"}
    with Timer() as t_gm:
        gm = cbudget.train(gm_p, dtrain, rounds, verbose_eval=False)
    ad_p = {k: v for k, v in gm_p.items() if k != "algorithm"}
    ad_p.update(algorithm="adapt_gbrt", p_full=0.0, q_update_period=Q_UPDATE_PERIOD)
    with Timer() as t_ad:
        ad = cbudget.train(ad_p, dtrain, rounds, expensive_model=f0, verbose_eval=False)
    X = data["X_test"]
    trees_equal = len(gm.trees) == len(ad.predictor.trees) and all(
        np.array_equal(a, b) for a, b in zip(gm.trees, ad.predictor.trees))
    proba_ad, route = ad.predict(X, return_route=True)
    margin_diff = float(np.max(np.abs(
        np.asarray(gm.predict(X, output_margin=True)).ravel()
        - np.asarray(ad.predictor.predict(X, output_margin=True)).ravel())))
    proba_diff = float(np.max(np.abs(np.asarray(gm.predict(X)) - np.asarray(proba_ad))))
    cost_diff = float(np.max(np.abs(np.asarray(gm.predict_cost(X))
                                    - np.asarray(ad.predict_cost(X)))))
    return {"lambda": gm_p["cost_tradeoff"], "rounds": rounds, "trees_identical": bool(trees_equal),
            "f1_margin_max_abs_diff": margin_diff, "proba_max_abs_diff": proba_diff,
            "cost_max_abs_diff": cost_diff, "routed_to_f0": int(np.sum(np.asarray(route) == 0)),
            "gate_features": int(len(ad.gate.used_features())),
            "gm_train_s": t_gm.wall, "adapt_train_s": t_ad.wall,
            "ok": bool(trees_equal and proba_diff == 0.0 and cost_diff == 0.0
                       and int(np.sum(np.asarray(route) == 0)) == 0)}


def run_budget_rf(spec, data, cbudget):
    """BudgetRF at one alpha: ``trees`` trees once, the prefixes as budget points; the
    first alpha of a task also checks one budget against training with it."""
    costs, dtrain, dvalid = _datasets(cbudget, data)
    alpha = float(spec["value"])
    n_trees = spec["rounds"]
    params = budget_rf_params(2, alpha, False, 0, n_trees, spec["threads"])
    params.pop("budget")
    with Timer() as t:
        forest = cbudget.train(params, dtrain, n_trees, verbose_eval=False)
    points = []
    prefixes = [k for k in spec["prefixes"] if k <= n_trees]
    valid_costs = {}
    for k in prefixes:
        rng = (0, k)
        vcost = np.asarray(forest.predict_cost(data["X_valid"], iteration_range=rng))
        cost = np.asarray(forest.predict_cost(data["X_test"], iteration_range=rng))
        valid_costs[k] = float(vcost.mean())
        points.append({
            "method": "budget_rf", "value": alpha, "trees": k, "budget": float(vcost.mean()),
            "valid_accuracy": float(np.mean(forest.predict(data["X_valid"], iteration_range=rng)
                                            == data["y_valid"])),
            "accuracy": float(np.mean(forest.predict(data["X_test"], iteration_range=rng)
                                      == data["y_test"])),
            "mean_cost": float(cost.mean()), "valid_mean_cost": float(vcost.mean()),
            "features_used": int(len(forest.used_features(rng))), **cost_summary(cost),
            "train_s": t.wall * k / n_trees, "other_cores": t.other})
    out = {"points": points, "train_all_s": t.wall, "params": params}
    if spec.get("budget_check") and RF_CHECK_TREES < n_trees:
        k = RF_CHECK_TREES
        c_k = float(np.asarray(forest.predict_cost(data["X_valid"], iteration_range=(0, k))).mean())
        c_k1 = float(np.asarray(forest.predict_cost(data["X_valid"],
                                                    iteration_range=(0, k + 1))).mean())
        budget = 0.5 * (c_k + c_k1)
        bp = dict(params, budget=budget)
        budgeted = cbudget.train(bp, dtrain, n_trees, evals=[(dvalid, "valid")],
                                 verbose_eval=False)
        same = (budgeted.num_trees() == k and all(np.array_equal(a, b) for a, b in zip(
            budgeted.trees, forest.trees[:k])) and np.array_equal(
            budgeted.predict(data["X_test"]), forest.predict(data["X_test"],
                                                             iteration_range=(0, k))))
        out["budget_check"] = {"budget": budget, "trees": int(budgeted.num_trees()),
                               "expected_trees": k, "identical": bool(same),
                               "valid_costs": [c_k, c_k1]}
    return out


RUNNERS = {"f0": run_f0, "f0_lightgbm": run_f0_lightgbm, "adapt_gbrt": run_gated,
           "adapt_gbrt_input": run_gated, "adapt_gbrt_lgbm": run_gated,
           "adapt_lin": run_gated, "greedy_miser": run_boosting, "cegb": run_boosting,
           "budget_rf": run_budget_rf}


def run_child(args):
    """Train and measure one job (``--spec``: its JSON); return the result dict."""
    import cbudget
    spec = json.loads(args.spec)
    version, location = library_version("cbudget")
    t = time.perf_counter()
    data = load_task(spec["task"], spec.get("n_rows"), spec.get("train_rows"),
                     spec.get("valid_rows"), spec.get("test_rows"))
    t_load = time.perf_counter() - t
    load_before = loadavg()
    out = RUNNERS[spec["method"]](spec, data, cbudget)
    points = out["points"]
    for p in points:
        p["task"] = spec["task"]
    trained = [p for p in points if "train_s" in p]
    others = [p["other_cores"] for p in trained if p.get("other_cores") is not None]
    out.update({
        "task": spec["task"], "method": spec["method"], "value": spec.get("value"),
        "version": version, "location": location, "threads": spec["threads"],
        "n_train": int(data["X_train"].shape[0]), "n_valid": int(data["X_valid"].shape[0]),
        "n_test": int(data["X_test"].shape[0]), "n_features": int(len(data["feature_costs"])),
        "full_cost": float(np.sum(data["feature_costs"])),
        "pos_rate_train": float(np.mean(data["y_train"])), "load_s": t_load,
        "train_total_s": float(out["train_all_s"]) if "train_all_s" in out
        else float(sum(p["train_s"] for p in trained)),
        "other_cores_during_train": float(np.mean(others)) if others else 0.0,
        "loadavg_before": load_before, "loadavg_after": loadavg(),
        "peak_rss_mb": maxrss_bytes() / 2**20,
        "env": {k: os.environ.get(k) for k in ("OMP_WAIT_POLICY", "OPENBLAS_NUM_THREADS")}})
    for key in ("bayes_accuracy_test", "cheap_rule_accuracy_test", "hard_fraction_test"):
        if key in data:
            out[key] = data[key]
    return out


# ---------------------------------------------------------------------- parent: jobs
def build_plan(args, tasks, methods):
    """``{task: {method: {"values": [...], "rounds": N, ...}}}`` for the run."""
    q = QUICK if args.quick else None
    plan = {}
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
        gammas = list(q["adapt_gammas"][task] if q else ADAPT_GAMMAS[task])
        for m in ("adapt_gbrt", "adapt_gbrt_input"):
            if m in methods:
                p[m] = {"values": gammas, "rounds": a_rounds, "patience": patience,
                        "p_full": p_full}
        if "adapt_gbrt_lgbm" in methods and task in LGBM_GAMMAS:
            p["adapt_gbrt_lgbm"] = {"values": list(q["adapt_gammas"][task][:1] if q
                                                   else LGBM_GAMMAS[task]),
                                    "rounds": a_rounds, "patience": patience, "p_full": p_full}
        if "adapt_lin" in methods and task in LIN_GAMMAS:
            p["adapt_lin"] = {"values": list(q["lin_gammas"][task] if q else LIN_GAMMAS[task]),
                              "rounds": q["lin_alternations"] if q else LIN_ALTERNATIONS,
                              "patience": q["lin_alternations"] if q else LIN_ALTERNATIONS,
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
        plan[task] = p
    return plan


# priority of the methods in the round-robin (a run cut by the time budget keeps these)
ORDER = ("adapt_gbrt", "greedy_miser", "cegb", "budget_rf", "adapt_gbrt_input", "adapt_lin",
         "adapt_gbrt_lgbm")


def build_jobs(plan, args, workdir):
    """Setup jobs (the f0s) first, then round-robin over the (task, method) sweeps, each
    in :func:`spread` order."""
    common = {"threads": args.threads, "workdir": str(workdir), "n_rows": args.n_rows,
              "train_rows": args.train_rows, "valid_rows": args.valid_rows,
              "test_rows": args.test_rows}
    jobs = []
    for task, p in plan.items():
        for m in SETUP_METHODS:
            if m in p:
                jobs.append((task, m, None, p[m]))
    queues = []
    for m in ORDER:
        for task, p in plan.items():
            if m in p:
                queues.append([(task, m, v, p[m]) for v in spread(p[m]["values"])])
    while any(queues):
        for queue in queues:
            if queue:
                jobs.append(queue.pop(0))
    out = []
    for task, m, value, settings in jobs:
        spec = dict(common, task=task, method=m, value=value,
                    **{k: v for k, v in settings.items() if k not in ("values", "p0_check_value")})
        if m == "greedy_miser":
            spec["p0_check"] = value == settings["p0_check_value"]
        if m == "budget_rf":
            spec["budget_check"] = value == settings["values"][0]
        label = f"{TASK_SHORT[task]} / {METHOD_LABELS[m]}" + (
            "" if value is None else f" / {VALUE_NAME[m]}={value:g}")
        out.append((task, {"spec": spec, "label": label, "task": task, "method": m,
                           "value": value}))
    return out


def launch_child(job, args, log, deadline):
    ident = {k: job[k] for k in ("task", "method", "value")}
    left = deadline - time.perf_counter() if deadline else args.child_timeout
    if left < 1.0:
        print(f"  {job['label']}: skipped (time budget spent)", file=log, flush=True)
        return dict(ident, error="skipped: time budget spent", skipped=True, child_wall_s=0.0)
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", "--spec",
           json.dumps(job["spec"])]
    return run_child_command(cmd, min(args.child_timeout, left), log, job["label"], ident)


def describe(r):
    pts = r["points"]
    if r["method"] in GATED:
        return "; ".join(f"p_full={p['p_full']:g}: acc {p['accuracy']:.4f} cost "
                         f"{p['mean_cost']:,.1f} ({p['train_s']:.1f} s, round "
                         f"{p['selected_round']})" for p in pts)
    if r["method"] == "budget_rf":
        return (f"{len(pts)} prefixes, {r['train_all_s']:.1f} s; all trees: acc "
                f"{pts[-1]['accuracy']:.4f} cost {pts[-1]['mean_cost']:,.1f}")
    p = pts[0]
    return (f"acc {p['accuracy']:.4f} (valid {p['valid_accuracy']:.4f}), cost "
            f"{p['mean_cost']:,.1f}, {p['train_s']:.1f} s"
            + (f", round {p['selected_round']}" if "selected_round" in p else ""))


# ------------------------------------------------------------------- analysis
def _ok(results):
    return [r for r in results if "error" not in r]


def task_points(results):
    """All points of a task, ``{method: [points]}``."""
    out = {}
    for r in _ok(results):
        for p in r["points"]:
            out.setdefault(p["method"], []).append(p)
    return out


def pareto(points, cost_key="mean_cost", score_key="accuracy"):
    """The points no other point beats (at most the cost and a higher score, or less cost
    at the same score), sorted by cost."""
    front, best = [], -1.0
    for p in sorted(points, key=lambda p: (p[cost_key], -p[score_key])):
        if p[score_key] > best:
            front.append(p)
            best = p[score_key]
    return front


def headline(points, f0, within=WITHIN):
    """The ADAPT point of lowest validation cost among those within ``within`` of f0's
    validation accuracy (ties: higher validation accuracy), and the test-side reference
    (lowest test cost among points within ``within`` of f0's test accuracy)."""
    ok = [p for p in points if p["valid_accuracy"] >= f0["valid_accuracy"] - within - 1e-12]
    chosen = min(ok, key=lambda p: (p["valid_mean_cost"], -p["valid_accuracy"])) if ok else None
    ok_t = [p for p in points if p["accuracy"] >= f0["accuracy"] - within - 1e-12]
    oracle = min(ok_t, key=lambda p: (p["mean_cost"], -p["accuracy"])) if ok_t else None
    return {"chosen": chosen, "n_qualifying": len(ok), "test_oracle": oracle,
            "reduction": (1 - chosen["mean_cost"] / f0["mean_cost"]) if chosen else None,
            "test_within": (chosen["accuracy"] >= f0["accuracy"] - within - 1e-12)
            if chosen else None,
            "oracle_reduction": (1 - oracle["mean_cost"] / f0["mean_cost"]) if oracle else None}


def dominance_summary(points, references):
    """Whether ``points`` dominate ``references`` at equal cost (test accuracy vs mean
    test cost): counts of reference points with a point at most as costly and at least as
    accurate, of those without any point that cheap, and the interpolated comparison."""
    dom = dominance(points, references)
    n_ok = sum(d["ok"] for d in dom)
    n_none = sum(d["best"] is None for d in dom)
    n_curve = n_curve_ok = 0
    worst = None
    for d in dom:
        g = d["reference"]
        curve = interpolated_accuracy(points, g["mean_cost"])
        if curve is not None:
            n_curve += 1
            n_curve_ok += curve >= g["accuracy"]
        if d["best"] is not None and not d["ok"]:
            gap = g["accuracy"] - d["best"]["accuracy"]
            if worst is None or gap > worst[0]:
                worst = (gap, g)
    verdict = ("yes" if n_ok == len(dom) else
               "yes where it has points" if n_ok + n_none == len(dom) and n_ok else
               "no comparable points" if n_none == len(dom) else "no")
    return {"rows": dom, "n": len(dom), "n_ok": n_ok, "n_none": n_none, "n_curve": n_curve,
            "n_curve_ok": n_curve_ok, "verdict": verdict,
            "worst": (worst[0], worst[1]) if worst else None}


def _value_label(p):
    m = p["method"]
    if m == "budget_rf":
        return f"alpha={p['value']:g}, {p['trees']} trees"
    if m in GATED:
        return f"p_full={p['p_full']:g}, gamma={p['value']:g}"
    if m in ("f0", "f0_lightgbm"):
        return "-"
    return f"lambda={p['value']:g}"


def _pt(p):
    return f"{METHOD_LABELS[p['method']]} {_value_label(p)}"


def analyse(results_by_task):
    """Per task: f0, the headline of each gated method, the dominance summaries."""
    out = {}
    for task, results in results_by_task.items():
        pts = task_points(results)
        f0 = (pts.get("f0") or [None])[0]
        a = {"f0": f0, "headline": {}, "dominance": {}, "input_vs_model": None}
        if f0:
            for m in GATED:
                if pts.get(m):
                    ref = f0
                    if m == "adapt_gbrt_lgbm" and pts.get("f0_lightgbm"):
                        ref = pts["f0_lightgbm"][0]
                    a["headline"][m] = dict(headline(pts[m], ref), reference=ref["method"])
        if pts.get("adapt_gbrt"):
            for base in ("greedy_miser", "cegb", "budget_rf", "adapt_lin"):
                if pts.get(base):
                    a["dominance"][base] = {
                        "adapt_over_base": dominance_summary(pts["adapt_gbrt"], pts[base]),
                        "base_over_adapt": dominance_summary(pts[base],
                                                             pareto(pts["adapt_gbrt"]))}
            if pts.get("adapt_gbrt_input"):
                a["input_vs_model"] = {
                    "input_over_model": dominance_summary(pts["adapt_gbrt_input"],
                                                          pareto(pts["adapt_gbrt"])),
                    "model_over_input": dominance_summary(pts["adapt_gbrt"],
                                                          pareto(pts["adapt_gbrt_input"]))}
        out[task] = a
    return out


# ------------------------------------------------------------------- rendering
SETTINGS_TEXT = """\
Tasks (binary; feature costs as the loaders give them):

* **Letters A-M vs N-Z**: `load_letters` (12,000 / 4,000 / 4,000 rows, seed 0), letters
  A-M -> 0 and N-Z -> 1 (a balanced split of the 26 classes: 50.6% positives in training);
  16 features of cost 1.
* **MNIST 3 vs 8**: `load_mnist_multires` restricted to the digits 3 and 8 (8 -> 1), as in
  `bench_cstc.py` (the CSTC paper's task): 1,120 pixels of cost 1 (4x4, 8x8, 16x16, 28x28).
* **Synthetic costly**: `make_synthetic_costly(n_samples={n_rows:,}, seed=0)`, 60 / 20 / 20
  train / valid / test; 32 features of cost 1 ... 200 (2,144 in all).

Methods ({threads} threads, seed 0; one child process per (task, method, trade-off value);
grids and rounds per task in the table below):

* **f0**: cbudget gbdt (`_common.library_params`: best-first trees, learning rate 0.1, L2
  1, at least 20 rows per leaf, 255 bins) for each num_leaves of the table; the (num_leaves,
  round) of best validation accuracy is kept, saved as JSON and shared by every gated model
  of the task.
* **ADAPT-GBRT** (`algorithm="adapt_gbrt"`, `acquisition="model"`: a feature is paid once
  per model, the paper's u_alpha): Greedy Miser's trees for g and f1 (depth 4 level by
  level, at least 20 rows per leaf, leaves = mean residual; the gate's leaves are Newton
  steps), learning rate 0.1, a q-step every {q} rounds, gate threshold calibrated so that
  the p_full share of the training inputs goes to f0; early stopping on the validation
  error of the gated model (the model is cut at the best round). Grid: p_full x gamma.
* **ADAPT-GBRT (input acq.)**: the same grid with `acquisition="input"` (CEGB-style
  per-input state: the penalty is gamma' x cost x inputs of the leaf lacking the feature)
  and `cost_tradeoff` gamma' = gamma / n_train; the tables show gamma.
{lgbm_text}{lin_text}* **Greedy Miser** (`algorithm="greedy_miser"`): the tree settings of ADAPT-GBRT's f1 (its
  p_full = 0 case), the same rounds and early stopping.
* **CEGB** (`algorithm="cegb"`, `bench_cegb.py`'s settings: best-first trees of 31 leaves,
  learning rate 0.1, L2 1, per-input feature costs), early stopping on the validation error.
* **BudgetRF** (`algorithm="budget_rf"`, cbudget's defaults as in `bench_budget_rf.py`:
  threshold-Pairs impurity, 80 / 40 / 20 random stumps, path_free False, majority vote); a
  budget B is the longest prefix whose mean validation cost is <= B, so the points are the
  prefixes of {rf_prefixes} trees (one budget per task is checked by training with
  `"budget": B`).

{table}

*accuracy*: test accuracy (threshold 0.5) at the selected round; *cost*: mean test
prediction cost per input (`predict_cost`: the gate's features plus those of the model
the input is sent to, each once; Greedy Miser / CEGB / BudgetRF: the features on the
input's paths). *to f0*: share of the test inputs the gate sends to f0. *train s*: wall
time of `train()` (Dataset construction excluded). Child processes run with
`OMP_WAIT_POLICY={omp}` and `OPENBLAS_NUM_THREADS={blas}` (see the notes at the end).
"""


def _grid_text(values):
    return ", ".join(f"{v:g}" for v in values)


def settings_table(plan):
    head = ["task", "f0 num_leaves / rounds", "ADAPT-GBRT and GM rounds (patience)",
            "p_full", "gamma", "Greedy Miser lambda", "CEGB lambda (rounds, patience)",
            "BudgetRF alpha (trees)"]
    lines = ["| " + " | ".join(head) + " |", "|---" * len(head) + "|"]
    for task, p in plan.items():
        a = p.get("adapt_gbrt") or p.get("adapt_gbrt_input") or p.get("greedy_miser")
        cells = [TASK_SHORT[task],
                 f"{_grid_text(p['f0']['f0_leaves'])} / {p['f0']['rounds']}",
                 f"{a['rounds']} ({a['patience']})" if a else "-",
                 _grid_text(a["p_full"]) if a and "p_full" in a else "-",
                 _grid_text(p["adapt_gbrt"]["values"]) if "adapt_gbrt" in p else "-",
                 _grid_text(p["greedy_miser"]["values"]) if "greedy_miser" in p else "-",
                 (f"{_grid_text(p['cegb']['values'])} ({p['cegb']['rounds']}, "
                  f"{p['cegb']['patience']})") if "cegb" in p else "-",
                 (f"{_grid_text(p['budget_rf']['values'])} ({p['budget_rf']['rounds']})")
                 if "budget_rf" in p else "-"]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def settings_text(plan, env, threads, n_rows):
    lgbm = ""
    for task, p in plan.items():
        if "adapt_gbrt_lgbm" in p:
            lgbm = ("* **ADAPT-GBRT (LightGBM f0)**, " + TASK_SHORT[task] + ": ADAPT-GBRT "
                    "(model acquisition) with an external f0, `lightgbm.LGBMClassifier` (31 "
                    "leaves, learning rate 0.1, L2 1, early stopping on the validation error, "
                    f"patience {p['f0_lightgbm']['patience']}) wrapped as\n  "
                    "`cbudget.ExternalModel(model, features=\"all\")` (an input sent to it pays "
                    "every feature); gamma " + _grid_text(p["adapt_gbrt_lgbm"]["values"])
                    + ", the p_full grid of ADAPT-GBRT.\n")
    lin = ""
    for task, p in plan.items():
        if "adapt_lin" in p:
            lp = p["adapt_lin"]
            lin = ("* **ADAPT-LIN**, " + TASK_SHORT[task] + " (`algorithm=\"adapt_lin\"`): "
                   "linear g and f1 on the centred raw features, group penalty gamma x sum_a "
                   "c_a ||(g_a, f1_a)||, ridge 1e-4, L-BFGS; at most\n  "
                   f"{lp['rounds']} alternations from {lp['lin_restarts']} starts, the "
                   "alternation of best validation error kept. Grid: p_full "
                   f"{_grid_text(lp['p_full'])} x gamma {_grid_text(lp['values'])}.\n")
    return SETTINGS_TEXT.format(
        n_rows=n_rows, threads=threads, q=Q_UPDATE_PERIOD, lgbm_text=lgbm, lin_text=lin,
        rf_prefixes=_grid_text(RF_PREFIXES), table=settings_table(plan),
        omp=env.get("OMP_WAIT_POLICY"), blas=env.get("OPENBLAS_NUM_THREADS"))


def headline_table(analysis):
    lines = ["| task | f0: test accuracy / mean cost | ADAPT-GBRT point (selected on validation) "
             "| its test accuracy (f0 - it) | its mean test cost | **cost reduction** | test "
             "accuracy within 1 pt of f0 | best test-side point (reduction) | paper |",
             "|---|---|---|---|---:|---:|:---:|---|---|"]
    paper = {"letters": "~31% (its Letters)", "mnist38": "- (31-63% on its data sets)",
             "synthetic_costly": "- (31-63% on its data sets)"}
    for task, a in analysis.items():
        f0, h = a["f0"], a["headline"].get("adapt_gbrt")
        if not f0:
            lines.append(f"| {TASK_SHORT[task]} | f0 failed | | | | | | | |")
            continue
        f0_text = f"{f0['accuracy']:.4f} / {f0['mean_cost']:,.2f}"
        if not h:
            lines.append(f"| {TASK_SHORT[task]} | {f0_text} | not run | | | | | | |")
            continue
        c, o = h["chosen"], h["test_oracle"]
        oracle = (f"{_value_label(o)}: {o['accuracy']:.4f} at {o['mean_cost']:,.2f} "
                  f"({h['oracle_reduction']:.1%})" if o else "none")
        if c is None:
            lines.append(f"| {TASK_SHORT[task]} | {f0_text} | no point within 1 pt on "
                         f"validation | | | **none** | | {oracle} | {paper[task]} |")
            continue
        lines.append(
            f"| {TASK_SHORT[task]} | {f0_text} | {_value_label(c)} (valid {c['valid_accuracy']:.4f}"
            f" vs f0 {f0['valid_accuracy']:.4f}; {c['selected_round']} rounds; "
            f"{c['expensive_fraction']:.1%} to f0) | {c['accuracy']:.4f} "
            f"({f0['accuracy'] - c['accuracy']:+.4f}) | {c['mean_cost']:,.2f} | "
            f"**{h['reduction']:.1%}** | {'yes' if h['test_within'] else 'no'} | {oracle} | "
            f"{paper[task]} |")
    return lines


def other_headlines(analysis):
    lines = ["| task | method | point selected on validation | test accuracy | mean test cost "
             "| cost reduction vs its f0 | within 1 pt on test |",
             "|---|---|---|---:|---:|---:|:---:|"]
    for task, a in analysis.items():
        for m, h in a["headline"].items():
            c = h["chosen"]
            if c is None:
                lines.append(f"| {TASK_SHORT[task]} | {METHOD_LABELS[m]} | none within 1 pt on "
                             f"validation | | | | |")
                continue
            lines.append(f"| {TASK_SHORT[task]} | {METHOD_LABELS[m]} | {_value_label(c)} | "
                         f"{c['accuracy']:.4f} | {c['mean_cost']:,.2f} | {h['reduction']:.1%} "
                         f"(vs {METHOD_LABELS[h['reference']]}) | "
                         f"{'yes' if h['test_within'] else 'no'} |")
    return lines


def dominance_lines(analysis):
    lines = []
    for task, a in analysis.items():
        for base, d in a["dominance"].items():
            ab, ba = d["adapt_over_base"], d["base_over_adapt"]
            text = (f"- {TASK_SHORT[task]}: ADAPT-GBRT dominates {METHOD_LABELS[base]} at equal "
                    f"cost: **{ab['verdict']}** (at {ab['n_ok']} of {ab['n']} "
                    f"{METHOD_LABELS[base]} points ADAPT-GBRT has a point at most as costly and "
                    f"at least as accurate; {ab['n_none']} are cheaper than every ADAPT-GBRT "
                    f"point")
            if ab["worst"]:
                text += (f"; largest shortfall {ab['worst'][0]:.4f} at {_pt(ab['worst'][1])}, "
                         f"cost {ab['worst'][1]['mean_cost']:,.2f}")
            text += (f"). Conversely {METHOD_LABELS[base]} matches or beats "
                     f"{ba['n_ok']} of the {ba['n']} ADAPT-GBRT Pareto points at no more cost.")
            lines.append(text)
    return lines


def input_vs_model_lines(analysis):
    lines = []
    for task, a in analysis.items():
        d = a["input_vs_model"]
        if not d:
            continue
        im, mi = d["input_over_model"], d["model_over_input"]
        hm, hi = a["headline"].get("adapt_gbrt"), a["headline"].get("adapt_gbrt_input")

        def red(h):
            return f"{h['reduction']:.1%}" if h and h["reduction"] is not None else "none"
        lines.append(
            f"- {TASK_SHORT[task]}: per-input acquisition matches or beats {im['n_ok']} of the "
            f"{im['n']} Pareto points of model acquisition at no more cost (interpolated curve "
            f"at least as accurate at {im['n_curve_ok']} of {im['n_curve']} within its range); "
            f"model acquisition matches or beats {mi['n_ok']} of the {mi['n']} Pareto points of "
            f"per-input acquisition. Headline cost reduction: model {red(hm)}, input "
            f"{red(hi)}.")
    return lines


def points_table(points, f0, gated):
    if gated:
        head = ("| p_full | gamma | rounds (selected) | valid accuracy | test accuracy | test AUC "
                "| mean test cost | reduction vs f0 | to f0 (test / train) | gate / f1 features "
                "| acc. on f1 / f0 inputs | cost q10 / q50 / q90 | train s |")
        lines = [head, "|" + "---:|" * 13]
        for p in sorted(points, key=lambda p: (p["value"], p["p_full"])):
            red = 1 - p["mean_cost"] / f0["mean_cost"] if f0 else None
            lines.append(
                f"| {p['p_full']:g} | {p['value']:g} | {p['iterations']} ({p['selected_round']}) "
                f"| {p['valid_accuracy']:.4f} | {p['accuracy']:.4f} | {fmt(p.get('auc'), '.4f')} | "
                f"{p['mean_cost']:,.2f} | {fmt(red, '.1%')} | {p['expensive_fraction']:.3f} / "
                f"{fmt(p.get('train_expensive_fraction'), '.3f')} | {p['gate_features']} / "
                f"{p['f1_features']} | {fmt(p.get('accuracy_f1_inputs'), '.4f')} / "
                f"{fmt(p.get('accuracy_f0_inputs'), '.4f')} | {p['cost_q10']:,.0f} / "
                f"{p['cost_q50']:,.0f} / {p['cost_q90']:,.0f} | {p['train_s']:.1f} |")
        return lines
    head = ("| method | setting | rounds (selected) | valid accuracy | test accuracy | mean test "
            "cost | reduction vs f0 | features used | train s |")
    lines = [head, "|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    order = {m: i for i, m in enumerate(METHODS)}
    for p in sorted(points, key=lambda p: (order.get(p["method"], -1), p["value"] or 0.0,
                                           p.get("trees", 0))):
        red = 1 - p["mean_cost"] / f0["mean_cost"] if f0 else None
        rounds = (f"{p['iterations']} ({p['selected_round']})" if "iterations" in p else
                  f"{p['trees']} trees" if "trees" in p else "")
        lines.append(f"| {METHOD_LABELS[p['method']]} | {_value_label(p)} | {rounds} | "
                     f"{p['valid_accuracy']:.4f} | {p['accuracy']:.4f} | {p['mean_cost']:,.2f} | "
                     f"{fmt(red, '.1%')} | {p['features_used']} | {p['train_s']:.1f} |")
    return lines


def task_section(task, results, a):
    ok = _ok(results)
    pts = task_points(results)
    first = ok[0] if ok else None
    lines = [f"## {TASK_TITLES[task]}", ""]
    if first:
        lines += [f"{first['n_train']:,} train / {first['n_valid']:,} valid / "
                  f"{first['n_test']:,} test rows, {first['n_features']} features (all features "
                  f"cost {first['full_cost']:,.0f}); positives in training "
                  f"{first['pos_rate_train']:.1%}.", ""]
    f0 = a["f0"]
    f0r = next((r for r in ok if r["method"] == "f0"), None)
    if f0r:
        lines += ["**f0 candidates** (cbudget gbdt; the best validation round of each):", "",
                  "| num_leaves | best round | valid accuracy | train s |",
                  "|---:|---:|---:|---:|"]
        for c in f0r["candidates"]:
            lines.append(f"| {c['num_leaves']} | {c['best_round']} of {c['rounds']} | "
                         f"{c['valid_accuracy']:.4f} | {c['train_s']:.1f} |")
        lines += ["", f"Chosen f0: {f0['num_leaves']} leaves, {f0['selected_round']} rounds: "
                  f"valid accuracy {f0['valid_accuracy']:.4f}, **test accuracy "
                  f"{f0['accuracy']:.4f}, mean test cost {f0['mean_cost']:,.2f}** (AUC "
                  f"{f0['auc']:.4f}, {f0['features_used']} features used).", ""]
    if pts.get("f0_lightgbm"):
        g = pts["f0_lightgbm"][0]
        lines += [f"LightGBM f0: {g['selected_round']} rounds, valid accuracy "
                  f"{g['valid_accuracy']:.4f}, test accuracy {g['accuracy']:.4f}, cost "
                  f"{g['mean_cost']:,.0f} (every feature).", ""]
    for m in GATED:
        if pts.get(m):
            ref = f0
            if m == "adapt_gbrt_lgbm" and pts.get("f0_lightgbm"):
                ref = pts["f0_lightgbm"][0]
            lines += [f"**{METHOD_LABELS[m]}** (reduction vs "
                      f"{METHOD_LABELS[ref['method']] if ref else 'f0'}):", ""]
            lines += points_table(pts[m], ref, True) + [""]
    base_pts = [p for m in ("greedy_miser", "cegb", "budget_rf") for p in pts.get(m, [])]
    if base_pts:
        lines += ["**Baselines**:", ""] + points_table(base_pts, f0, False) + [""]
    for r in results:
        if "error" in r:
            lines.append(f"- {METHOD_LABELS.get(r['method'], r['method'])} "
                         f"{'' if r.get('value') is None else r['value']} failed: {r['error']}")
    if any("error" in r for r in results):
        lines.append("")
    if a["dominance"]:
        lines += ["**Equal-cost comparison** (test accuracy vs mean test cost): for each "
                  "baseline point, ADAPT-GBRT's best accuracy among its points at most as "
                  "costly, and its Pareto curve (linear in log(1 + cost)) at that cost:", ""]
        for base, d in a["dominance"].items():
            lines += [f"vs {METHOD_LABELS[base]}:", "",
                      "| baseline point | its cost | its accuracy | ADAPT-GBRT best at <= cost "
                      "(point, cost) | difference | ADAPT-GBRT curve at this cost |",
                      "|---|---:|---:|---|---:|---:|"]
            adapt_front = pareto(pts["adapt_gbrt"])
            for row in d["adapt_over_base"]["rows"]:
                g, b = row["reference"], row["best"]
                curve = interpolated_accuracy(adapt_front, g["mean_cost"])
                lines.append(
                    f"| {_value_label(g)} | {g['mean_cost']:,.2f} | {g['accuracy']:.4f} | "
                    + (f"{b['accuracy']:.4f} ({_value_label(b)}, {b['mean_cost']:,.2f}) | "
                       f"{b['accuracy'] - g['accuracy']:+.4f} | " if b else "none this cheap | | ")
                    + (f"{curve:.4f} |" if curve is not None else " |"))
            lines.append("")
    notes = task_notes(ok, pts, a)
    lines += [f"- {n}" for n in notes] + ([""] if notes else [])
    return lines


def _listed(points, n=8):
    names = [_pt(p) for p in points]
    return ", ".join(names[:n]) + (f" and {len(names) - n} more." if len(names) > n else ".")


def task_notes(ok, pts, a):
    notes = []
    for r in ok:
        if r.get("p0_check"):
            c = r["p0_check"]
            notes.append(
                f"p_full = 0 check (lambda = gamma = {c['lambda']:g}, {c['rounds']} rounds): "
                f"ADAPT-GBRT's f1 trees {'are' if c['trees_identical'] else 'are NOT'} "
                f"identical to Greedy Miser's; max |difference| of f1 margins "
                f"{c['f1_margin_max_abs_diff']:.3g}, of probabilities "
                f"{c['proba_max_abs_diff']:.3g}, of per-input costs {c['cost_max_abs_diff']:.3g}; "
                f"{c['routed_to_f0']} test inputs routed to f0, gate features "
                f"{c['gate_features']}: **{'passed' if c['ok'] else 'FAILED'}**.")
        if r.get("budget_check"):
            c = r["budget_check"]
            notes.append(f"BudgetRF budget check: `\"budget\": {c['budget']:.3f}` (between the "
                         f"validation costs of {c['expected_trees']} and "
                         f"{c['expected_trees'] + 1} trees) gave {c['trees']} trees, "
                         f"{'identical to' if c['identical'] else 'DIFFERENT from'} the prefix.")
    gated = [p for m in GATED for p in pts.get(m, [])]
    if gated:
        notes.append(
            "Checks on every gated point: route = gate margin > threshold, predictions from the "
            "parts (max |difference| "
            f"{max(p['checks']['proba_max_abs_diff'] for p in gated):.3g}) and per-input test "
            "costs from the leaf paths of g, f1 and f0 (max |difference| "
            f"{max(p['checks']['cost_max_abs_diff'] for p in gated):.3g}): all passed.")
        over = [p for p in gated if p.get("train_expensive_fraction") is not None
                and p["train_expensive_fraction"] > p["p_full"] + 1e-9]
        notes.append("Share of the training inputs sent to f0 <= p_full at every point"
                     + ("." if not over else f" except {len(over)}: "
                        + ", ".join(f"{_pt(p)} ({p['train_expensive_fraction']:.3f})"
                                    for p in over) + "."))
        late = [p for p in gated if p["selected_round"] > 0.95 * p["rounds"]
                and p["method"] != "adapt_lin"]
        if late:
            notes.append(f"{len(late)} of {len(gated)} gated points selected in the last 5% of "
                         "their rounds (validation accuracy still rising): " + _listed(late))
    boost = [p for m in ("greedy_miser", "cegb") for p in pts.get(m, [])]
    if boost:
        notes.append("Greedy Miser / CEGB: `predict_cost` equals the leaf-path costs "
                     f"(max |difference| {max(p['checks']['cost_max_abs_diff'] for p in boost):.3g}).")
        late = [p for p in boost if p["selected_round"] > 0.95 * p["rounds"]]
        if late:
            notes.append("Baselines selected in the last 5% of their rounds: " + _listed(late))
    syn = next((r for r in ok if r.get("bayes_accuracy_test") is not None), None)
    if syn:
        notes.append(f"Synthetic references on this test set: Bayes accuracy "
                     f"{syn['bayes_accuracy_test']:.4f}, best cost-1 rule "
                     f"{syn['cheap_rule_accuracy_test']:.4f}; {syn['hard_fraction_test']:.1%} "
                     "of the inputs are hard.")
        hard = [p for p in pts.get("adapt_gbrt", []) if p.get("hard_to_f0") is not None]
        if hard:
            notes.append("ADAPT-GBRT gate on the synthetic set (share of the hard test inputs "
                         "sent to f0 / share of hard inputs among those sent): " + "; ".join(
                             f"{_value_label(p)}: {p['hard_to_f0']:.2f} / "
                             f"{fmt(p.get('f0_inputs_hard'), '.2f')}"
                             for p in sorted(hard, key=lambda p: (p["value"], p["p_full"]))) + ".")
    busy = [(f"{METHOD_LABELS[r['method']]} {'' if r.get('value') is None else r['value']}",
             r["other_cores_during_train"]) for r in ok if r["other_cores_during_train"] > 0.3]
    if busy:
        notes.append("Children during whose training other processes kept > 0.3 cores busy "
                     "(their times are inflated): " + ", ".join(f"{w.strip()} ({c:.2f})"
                                                               for w, c in busy) + ".")
    return notes


def render(results, info, command, wall_s, quick, threads, plan, env, n_rows, time_budget):
    analysis = analyse(results)
    banners = [SMOKE_BANNER] if quick else []
    skipped = [r for rs in results.values() for r in rs if r.get("skipped")]
    if skipped:
        banners.append(f"**{len(skipped)} job(s) skipped by the time budget "
                       f"({time_budget:g} min)**: " + ", ".join(
                           f"{TASK_SHORT[r['task']]} / {METHOD_LABELS[r['method']]} "
                           f"{'' if r.get('value') is None else r['value']}" for r in skipped))
    loads = [r["other_cores_during_train"] for rs in results.values() for r in _ok(rs)]
    loaded = [c for c in loads if c > 0.3]
    busy = ([(f"the training of {len(loaded)} of the {len(loads)} children (their mean; "
              f"largest {max(loaded):.2f}; per child in the notes of each task)",
              float(np.mean(loaded)))] if loaded else [])
    out = results_header("ADAPT-GBRT / ADAPT-LIN benchmark: gated models vs Greedy Miser, "
                         "CEGB and BudgetRF", command, info, wall_s, busy, banners)
    out.append(settings_text(plan, env, threads, n_rows))
    out += ["## Headline: cost reduction within 1% of f0's accuracy", "",
            "Among the ADAPT-GBRT points (model acquisition, cbudget f0) whose **validation** "
            "accuracy is at least f0's validation accuracy - 0.01, the one of lowest mean "
            "validation cost; its test figures, and the cost reduction 1 - (its mean test "
            "cost) / (f0's mean test cost). The last columns give the cheapest point among "
            "those within 1 point of f0 on the *test* set (selection on test: optimistic), "
            "and the paper's figure.", ""]
    out += headline_table(analysis) + [""]
    out += ["The same selection for the other gated models:", ""]
    out += other_headlines(analysis) + [""]
    dl = dominance_lines(analysis)
    if dl:
        out += ["**Does ADAPT-GBRT dominate the baselines at equal cost?** (test accuracy vs "
                "mean test cost; `_common.dominance`)", ""] + dl + [""]
    il = input_vs_model_lines(analysis)
    if il:
        out += ["**Per-input vs model acquisition** (ADAPT-GBRT, the same p_full x gamma grid):",
                ""] + il + [""]
    for task, rs in results.items():
        out += task_section(task, rs, analysis[task])
    out.append(ENV_NOTE)
    return "\n".join(out), analysis


ENV_NOTE = """\
**Environment notes.** The machine is shared (another user's tests kept about one of the
two cores busy during most of the run: see the shared-machine line at the top). Two
settings make 2-thread runs robust to that and are applied to every child; they change
timings, not results: `OMP_WAIT_POLICY=passive` (with libgomp's default spin-waiting, 200
rounds of ADAPT-GBRT on Letters took 2-39 s instead of about 1 s while one core was busy)
and `OPENBLAS_NUM_THREADS=1` (numpy's threaded OpenBLAS made ADAPT-LIN's L-BFGS steps and
the q-step's dot products about 10x slower on the busy machine; since commit 3dbf7a7
ADAPT-LIN computes its products with cbudget's own kernels, without BLAS).
"""


PLOT_STYLE = {
    "adapt_gbrt": dict(marker="o", color="tab:red", linestyle="none", markersize=5),
    "adapt_gbrt_input": dict(marker="s", color="tab:orange", linestyle="none", markersize=5,
                             markerfacecolor="none"),
    "adapt_gbrt_lgbm": dict(marker="x", color="tab:brown", linestyle="none", markersize=6),
    "adapt_lin": dict(marker="^", color="tab:purple", linestyle="none", markersize=5),
    "greedy_miser": dict(marker="v", color="tab:blue", linestyle="-", markersize=5),
    "cegb": dict(marker="D", color="tab:green", linestyle="-", markersize=4),
    "budget_rf": dict(marker=".", color="tab:gray", linestyle="none", markersize=6),
}


def plot(results, path, suffix=""):
    plt = pyplot()
    if plt is None:
        return None
    tasks = [t for t, rs in results.items() if task_points(rs).get("f0")]
    if not tasks:
        return None
    fig, axes = plt.subplots(1, len(tasks), squeeze=False, figsize=(6.0 * len(tasks), 4.8))
    for ax, task in zip(axes[0], tasks):
        pts = task_points(results[task])
        f0 = pts["f0"][0]
        for m, style in PLOT_STYLE.items():
            ps = sorted(pts.get(m, []), key=lambda p: p["mean_cost"])
            if m in ("greedy_miser", "cegb"):
                ps = sorted(ps, key=lambda p: p["mean_cost"])
            if not ps:
                continue
            ax.plot([p["mean_cost"] for p in ps], [p["accuracy"] for p in ps],
                    label=METHOD_LABELS[m], **style)
        if pts.get("adapt_gbrt"):
            front = pareto(pts["adapt_gbrt"])
            ax.plot([p["mean_cost"] for p in front], [p["accuracy"] for p in front], "-",
                    color="tab:red", linewidth=1.2, alpha=0.7)
        if pts.get("adapt_gbrt_input"):
            front = pareto(pts["adapt_gbrt_input"])
            ax.plot([p["mean_cost"] for p in front], [p["accuracy"] for p in front], "--",
                    color="tab:orange", linewidth=1.0, alpha=0.7)
        ax.plot([f0["mean_cost"]], [f0["accuracy"]], "*", color="black", markersize=12,
                label="f0 (cbudget gbdt)")
        if pts.get("f0_lightgbm"):
            g = pts["f0_lightgbm"][0]
            ax.plot([g["mean_cost"]], [g["accuracy"]], "P", color="tab:brown", markersize=8,
                    label="f0 (LightGBM)")
        ax.axhline(f0["accuracy"] - WITHIN, color="black", linestyle=":", linewidth=0.8,
                   label="f0 accuracy - 0.01")
        h = analyse({task: results[task]})[task]["headline"].get("adapt_gbrt")
        if h and h["chosen"]:
            c = h["chosen"]
            ax.plot([c["mean_cost"]], [c["accuracy"]], "o", markersize=12,
                    markerfacecolor="none", markeredgecolor="black",
                    label=f"headline ({h['reduction']:.0%} cheaper)")
        ax.set_xscale("symlog", linthresh=1.0)
        ax.set_ylim(f0["accuracy"] - 0.15, min(1.0, f0["accuracy"] + 0.02))
        ax.set_xlabel("mean test cost per input (symlog)")
        ax.set_ylabel("test accuracy")
        ax.set_title(TASK_SHORT[task], fontsize=10)
        ax.grid(True, alpha=0.3, which="both")
        ax.legend(fontsize=6.5, loc="lower right")
    fig.suptitle("ADAPT-GBRT / ADAPT-LIN vs Greedy Miser, CEGB, BudgetRF: test accuracy vs mean "
                 "test cost (lines: Pareto fronts of ADAPT-GBRT; points below the axis not shown)"
                 + suffix, fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


PLOT_CAPTION = ("test accuracy vs mean test cost per input, one panel per task; red line: "
                "Pareto front of ADAPT-GBRT (model acquisition), dashed orange: per-input "
                "acquisition; the dotted line is f0's accuracy - 0.01")


def _finish(text, results, output, quick):
    png = plot(results, output.with_suffix(".png"), " - smoke run (--quick)" if quick else "")
    if png:
        text += f"\nPlot: `{png.name}` ({PLOT_CAPTION}).\n"
    print(text)
    output.write_text(text)
    return png


def compact(analysis):
    """The analysis without the per-row dominance tables and the points' traces (the JSON
    keeps the points themselves under ``results``)."""
    def strip(value):
        if isinstance(value, dict):
            return {k: strip(v) for k, v in value.items() if k not in ("rows", "valid_trace")}
        if isinstance(value, (list, tuple)):
            return [strip(v) for v in value]
        return value
    return strip(analysis)


def _jsonable(value):
    if isinstance(value, (np.integer, np.floating)):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    return str(value)


def main(argv=None):
    parser = benchmark_parser(__doc__, TASKS, "--spec")
    parser.add_argument("--tasks", default=None, help="comma-separated subset of "
                        + ",".join(TASKS) + " (alias of --datasets)")
    parser.add_argument("--methods", default=",".join(METHODS),
                        help="comma-separated subset of " + ",".join(METHODS)
                        + " (f0 always runs)")
    parser.add_argument("--p-full", default=None,
                        help="p_full grid of ADAPT-GBRT (default " + _grid_text(P_FULL) + ")")
    parser.add_argument("--adapt-rounds", type=int, default=None,
                        help="rounds of ADAPT-GBRT and Greedy Miser for every task (default per "
                             "task: " + ", ".join(f"{k} {v}" for k, v in ADAPT_ROUNDS.items())
                             + ")")
    parser.add_argument("--n-rows", type=int, default=None,
                        help=f"total rows of the synthetic set (default {SYNTHETIC_ROWS:,})")
    for option, part in (("--train-rows", "training"), ("--valid-rows", "validation"),
                         ("--test-rows", "test")):
        parser.add_argument(option, type=int, default=None,
                            help=f"keep only the first N {part} rows of every task")
    parser.add_argument("--time-budget", type=float, default=45.0,
                        help="minutes of wall time for the whole run: jobs not started by then "
                             "are skipped, a running child is stopped; 0: no limit")
    parser.add_argument("--omp-wait-policy", default="passive",
                        help="OMP_WAIT_POLICY of the children (default passive; '' leaves it)")
    parser.add_argument("--blas-threads", default="1",
                        help="OPENBLAS_NUM_THREADS of the children (default 1; '' leaves it)")
    parser.add_argument("--workdir", default=None,
                        help="directory for the f0 models (default a new temporary one, "
                             "removed at the end)")
    parser.add_argument("--output", default=None,
                        help="Markdown output (default benchmarks/results/adapt.md; with "
                             "--quick /tmp/adapt_quick.md); .json and .png go next to it")
    parser.add_argument("--quick", action="store_true",
                        help=f"smoke run: {QUICK['train_rows']:,} / {QUICK['valid_rows']:,} / "
                             f"{QUICK['test_rows']:,} rows, {QUICK['n_rows']:,} synthetic rows, "
                             "few rounds, 2 values per grid")
    args, mode = parse_run_args(parser, argv, run_child, render_from, QUICK,
                                ("n_rows", "train_rows", "valid_rows", "test_rows"))
    if mode is not None:
        return mode
    tasks = parse_choices(parser, args.tasks or args.datasets, TASKS, "task")
    methods = parse_choices(parser, args.methods, METHODS, "method")
    for var, value in (("OMP_WAIT_POLICY", args.omp_wait_policy),
                       ("OPENBLAS_NUM_THREADS", args.blas_threads)):
        if value:
            os.environ[var] = value
    env = {k: os.environ.get(k) for k in ("OMP_WAIT_POLICY", "OPENBLAS_NUM_THREADS")}
    plan = build_plan(args, tasks, methods)
    output = Path(args.output) if args.output else (
        Path("/tmp/adapt_quick.md") if args.quick else REPO / "benchmarks" / "results" / "adapt.md")
    output.parent.mkdir(parents=True, exist_ok=True)
    own_workdir = args.workdir is None
    workdir = Path(tempfile.mkdtemp(prefix="bench_adapt_")) if own_workdir else Path(args.workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    command = command_line()
    info = machine_info(libraries=("lightgbm",))
    log = sys.stderr
    print(f"# {command}", file=log, flush=True)
    jobs = build_jobs(plan, args, workdir)
    n_rows = args.n_rows or SYNTHETIC_ROWS
    extra = {"threads": args.threads, "plan": plan, "env": env, "n_rows": n_rows,
             "time_budget_min": args.time_budget}
    t_start = time.perf_counter()
    deadline = t_start + 60.0 * args.time_budget if args.time_budget > 0 else None
    try:
        results = run_jobs(
            jobs, lambda job: launch_child(job, args, log, deadline), args, log,
            lambda res: write_json(output, command, info, res, time.perf_counter() - t_start,
                                   args.quick, **extra),
            describe)
    finally:
        if own_workdir:
            shutil.rmtree(workdir, ignore_errors=True)
    wall = time.perf_counter() - t_start
    write_json(output, command, info, results, wall, args.quick, **extra)
    text, analysis = render(results, info, command, wall, args.quick, args.threads, plan, env,
                            n_rows, args.time_budget)
    png = _finish(text, results, output, args.quick)
    doc = json.loads(output.with_suffix(".json").read_text())
    doc["analysis"] = json.loads(json.dumps(compact(analysis), default=_jsonable))
    output.with_suffix(".json").write_text(json.dumps(doc, indent=1))
    code = finish_run(output, png, wall, log, results)
    if code and all(r.get("skipped") for rs in results.values() for r in rs if "error" in r):
        code = 0
    return code


def render_from(path, output=None):
    """Re-render the Markdown (and the plot) of an earlier run from its raw JSON."""
    doc = json.loads(path.read_text())
    output = Path(output) if output else path.with_suffix(".md")
    text, _ = render(doc["results"], doc["machine"], doc["command"], doc["wall_s"],
                     doc.get("quick"), doc.get("threads", 2), doc["plan"], doc["env"],
                     doc["n_rows"], doc.get("time_budget_min", 0))
    png = plot(doc["results"], output.with_suffix(".png"),
               " - smoke run (--quick)" if doc.get("quick") else "")
    return write_rerendered(text, path, output, png, PLOT_CAPTION)


if __name__ == "__main__":
    sys.exit(main())
