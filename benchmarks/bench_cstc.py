"""CSTC / CSCC / Cronus benchmark: error and precision against feature cost, vs CEGB.

cbudget's trees and cascades of linear classifiers (``algorithm`` "cstc", "cscc",
"cronus"; Xu, Kusner, Weinberger, Chen, Chapelle, "Classifier cascades and trees for
minimizing feature evaluation cost", JMLR 2014) over sweeps of their trade-off lambda
(``cost_tradeoff``), against cbudget's CEGB (``algorithm="cegb"``) over its own lambda
sweep, on two binary tasks built from benchmarks/datasets.py:

* ``mnist38`` -- the paper's cost-sensitive MNIST (section 6.7): the digits 3 and 8 of
  ``load_mnist_multires`` (1,120 features: the image at 4x4, 8x8, 16x16 and 28x28, each
  pixel costs 1), its train / valid / test split restricted to those digits (9,976 /
  2,006 / 1,984 rows), label 8 -> 1, 3 -> 0.
* ``letters_skewed`` -- a heavily imbalanced task in the style of the paper's LTR-Skewed
  (section 6.3): UCI Letters (``load_letters``, 16 features of cost 1 each), the letter
  ``A`` against the 25 others; in the *training* set every negative is replicated 10
  times (12,000 -> 115,779 rows, positives 3.9% -> 0.40%, the paper's 1:100 skew).
  Validation and test sets keep their natural distribution (4,000 rows each, 3.5-3.9%
  positives): copies of an input would only add exact ties, AUC does not change under
  replication, and the ranking metric below draws its pseudo-queries with the training
  skew.

Methods and settings (``method_params``)
----------------------------------------
All classifier trees / cascades: the paper's squared loss on +-1 targets (``loss=
"squared"``), block coordinate descent capped at ``SWEEPS[task]`` sweeps (training also
stops when the objective changes by less than ``tol`` = 1e-4 times max(1, |objective|)),
early stopping on the validation RMSE of the predicted probability (patience
``PATIENCE`` sweeps; the
model of the best sweep is kept), fine-tuning of the leaves without the cost term (3.5,
cbudget's default), 2 threads.

* MNIST, CSTC (pruned): ``max_depth=3`` (7 nodes before pruning),
  ``tree_structure="prune"``: bottom-up pruning of the initialised tree on the validation
  error (3.6.1, what the paper used for all its experiments), rho (``reg_alpha``) =
  ``RHO["mnist38"]`` (small, so that lambda and not the l1 term decides the features; the
  ablation rows run the default 0.01 at one lambda).
* CSTC (full tree): the same with ``tree_structure="full"`` (all 7 nodes kept), on both
  tasks: whether the structure choice decides if inputs are routed apart.
* Letters, CSCC and Cronus: cascades of ``max_depth=4`` stages, ``tree_structure="full"``
  (the stage count is the structure), ``class_weight="balanced"`` (CSCC's w_y; the
  ablation rows run without it), rho = ``RHO["letters_skewed"]``.
* Letters, CSTC: ``max_depth=3`` pruned on the validation AUC (and the full tree), the
  same rho and ``class_weight="balanced"``; the ablation rows run it without class
  weights and with balanced *sample weights* on the Dataset instead (positives weighted
  n_neg / n_pos of the replicated training set; unlike the class weight, sample weights
  also weigh the expected cost).
* CEGB: the settings of ``bench_cegb.py`` (best-first trees of 31 leaves, learning rate
  0.1, L2 1, at least 20 rows and 1e-3 hessian per leaf, per-input "lazy" feature costs
  times lambda in the split gain), at most ``CEGB_ROUNDS[task]`` rounds with early
  stopping on the validation log-loss (patience ``CEGB_PATIENCE``); the model is cut at
  the best round.

Measurements
------------
Per run (one child process per (task, method, lambda)): test error and AUC (MNIST);
mean precision@5 over pseudo-queries, global precision@k and AUC (Letters); mean test
prediction cost per input (ARCHITECTURE section 2: every feature with a non-zero weight
in a node on the input's own path is paid once; for CEGB every feature on its paths
through the trees; costs are 1, so the cost is the number of features acquired), its
quantiles, nodes, features used, exit distribution, sweeps / rounds, fit time (from just
before the training Dataset is built to the return of ``train()``, minus the time of
the benchmark's own per-sweep bookkeeping, which is reported apart).

Ranking metrics use the raw score (``output_margin=True``): with the squared loss,
``predict`` returns ``(f + 1) / 2`` clipped to [0, 1], which ties every input beyond
+-1; the AUC of the clipped probabilities is reported beside it.
*Pseudo-queries* (``pseudo_queries``): ``N_QUERIES`` groups of ``QUERY_SIZE`` test
inputs drawn with seed 0, the same for every run: the number of positives of a group is
drawn from Binomial(``QUERY_SIZE``, p) with p the positive share of the test set with its
negatives counted 10 times (the training skew), groups without a positive are redrawn,
the positives and negatives are drawn without replacement from the test set.
Precision@k counts ties at the k-th score by their expected share (random tie-breaking),
so a constant model scores the base rate.

Comparisons at equal cost use ``_common.dominance`` (for each reference point, the best
point of the other method at no more mean test cost) and ``_common.interpolated_accuracy``
(the other method's curve, linear in log(1 + cost), at the reference's cost).

Checks (every run, recorded in the JSON and the notes): for a tree / cascade, an
independent walk of every test input from the root (scores ``X @ weights[k] + bias[k]``,
upper child when the score is above ``thresholds[k]``) must reach the node of
``predict(pred_exit=True)`` (a mismatch is only allowed within 1e-9 of a threshold) with
the same score as ``output_margin``; its cost, the features with a non-zero weight on
``path(exit)`` each once, must equal ``predict_cost``; the per-feature acquisition
rates must equal ``cost_report``'s and ``used_features`` the union of the non-zero
weights. For CEGB the per-input cost of ``_common.prediction_costs`` (leaf paths) must
equal ``predict_cost``.

Writes ``<output>.md``, ``<output>.json`` (raw, one object per child) and ``<output>.png``
(test error / precision / AUC against mean test cost).

Usage::

    PYTHONPATH=. python benchmarks/bench_cstc.py --wait-idle 120 --time-budget 45  # full run
    PYTHONPATH=. python benchmarks/bench_cstc.py --quick            # smoke run, ~2 min
    PYTHONPATH=. python benchmarks/bench_cstc.py --tasks mnist38 --methods cstc \\
        --lambdas 0.1,0.01 --sweeps 3
"""
import json
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))

import datasets  # noqa: E402  (benchmarks/datasets.py)
from _common import (  # noqa: E402  (benchmarks/_common.py)
    SMOKE_BANNER, Clock, PathTables, parse_run_args, attempts_text, benchmark_parser,
    cbudget_leaf_paths, command_line, cost_fields, cpu_jiffies, cpu_seconds, dominance,
    finish_run, fmt, interpolated_accuracy, library_version, loadavg, machine_info,
    maxrss_bytes, other_cores, parse_choices, parse_lambdas, prediction_costs, pyplot,
    write_rerendered, results_header, rss_bytes, run_child_command, run_jobs,
    spread, write_json)
from bench_cegb import cegb_params  # noqa: E402  (CEGB's settings)

TASKS = ("mnist38", "letters_skewed")
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
ALGORITHM = {"cstc": "cstc", "cstc_full": "cstc", "cscc": "cscc", "cronus": "cronus",
             "cegb": "cegb"}
TREE_METHODS = ("cstc", "cstc_full", "cscc", "cronus")
LETTERS_METHODS = ("cscc", "cronus", "cstc", "cstc_full", "cegb")

# --- task construction
MNIST_DIGITS = (3, 8)          # the second is the positive class
LETTER = "A"                   # the positive class of letters_skewed
NEG_REPLICATION = 10           # copies of every training negative (section 6.3)

# --- settings of the full run (the README says how they were chosen)
_TREE_MNIST = (0.5, 0.3, 0.1, 0.03, 0.01, 0.003, 0.001)
_TREE_LETTERS = (1.5, 1.0, 0.5, 0.3, 0.1, 0.03, 0.01, 0.003)
LAMBDAS = {
    ("mnist38", "cstc"): _TREE_MNIST,
    ("mnist38", "cstc_full"): _TREE_MNIST,
    ("mnist38", "cegb"): (0.1, 0.03, 0.01, 3e-3, 1e-3, 3e-4, 0.0),
    ("letters_skewed", "cscc"): _TREE_LETTERS,
    ("letters_skewed", "cronus"): _TREE_LETTERS,
    ("letters_skewed", "cstc"): _TREE_LETTERS,
    ("letters_skewed", "cstc_full"): _TREE_LETTERS,
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

# --- metrics
N_QUERIES = 2000
QUERY_SIZE = 100
QUERY_SEED = 0
PRECISION_KS = (10, 50, 100)
QUERY_K = 5

QUICK = {"train_rows": 1500, "valid_rows": 500, "test_rows": 500,
         "sweeps": 2, "cegb_rounds": 20,
         "lambdas": {("mnist38", "cstc"): (0.3, 0.03), ("mnist38", "cegb"): (1.0, 0.03),
                     ("letters_skewed", "cscc"): (1.0, 0.1),
                     ("letters_skewed", "cronus"): (1.0, 0.1),
                     ("letters_skewed", "cstc"): (1.0, 0.1),
                     ("letters_skewed", "cstc_full"): (1.0, 0.1),
                     ("mnist38", "cstc_full"): (0.3, 0.03),
                     ("letters_skewed", "cegb"): (0.01, 1e-3)}}
TIE_TOL = 1e-9         # route mismatches allowed this close to a threshold (relative)
COST_CHECK_TOL = 1e-9


# ----------------------------------------------------------------------------- data
def load_task(task, train_rows=None, valid_rows=None, test_rows=None):
    """The binary task ``task`` (see the module docstring) as a dict of arrays:
    ``X_{train,valid,test}`` float32 C-contiguous, ``y_*`` int32 0/1, ``feature_costs``,
    ``feature_names``; ``*_rows`` keep the first rows of each part (smoke runs; the
    Letters training cut is taken before the replication). Letters adds
    ``n_train_original`` and ``train_source`` (row of the original training set of each
    replicated row); MNIST adds ``resolution_slices``."""
    if task == "mnist38":
        d = datasets.load_mnist_multires(seed=0, n_valid=10000)
        out = {"feature_costs": d["feature_costs"], "feature_names": d["feature_names"],
               "resolution_slices": d["resolution_slices"]}
        for part, rows in (("train", train_rows), ("valid", valid_rows), ("test", test_rows)):
            X, y = d[f"X_{part}"], d[f"y_{part}"]
            keep = np.flatnonzero(np.isin(y, MNIST_DIGITS))[:rows]
            out[f"X_{part}"] = np.ascontiguousarray(X[keep])
            out[f"y_{part}"] = (y[keep] == MNIST_DIGITS[1]).astype(np.int32)
        return out
    if task == "letters_skewed":
        d = datasets.load_letters(seed=0)
        label = ord(LETTER) - ord("A")
        out = {"feature_costs": d["feature_costs"], "feature_names": d["feature_names"]}
        for part, rows in (("train", train_rows), ("valid", valid_rows), ("test", test_rows)):
            out[f"X_{part}"] = np.ascontiguousarray(d[f"X_{part}"][:rows])
            out[f"y_{part}"] = (d[f"y_{part}"][:rows] == label).astype(np.int32)
        y = out["y_train"]
        out["n_train_original"] = int(y.shape[0])
        # every negative NEG_REPLICATION times (its copies next to it), positives once
        copies = np.where(y == 0, NEG_REPLICATION, 1)
        source = np.repeat(np.arange(y.shape[0]), copies)
        out["train_source"] = source
        out["X_train"] = np.ascontiguousarray(out["X_train"][source])
        out["y_train"] = y[source]
        return out
    raise ValueError(f"unknown task {task!r}; valid: {', '.join(TASKS)}")


def balanced_sample_weight(y):
    """Sample weights giving both classes the same total weight (positives
    n_neg / n_pos, negatives 1)."""
    n_pos = int(np.count_nonzero(y == 1))
    return np.where(y == 1, (y.shape[0] - n_pos) / max(n_pos, 1), 1.0)


# -------------------------------------------------------------------------- metrics
def pseudo_queries(y, n_queries=N_QUERIES, size=QUERY_SIZE, replication=NEG_REPLICATION,
                   seed=QUERY_SEED):
    """Row indices (n_queries, size) of the pseudo-queries (see the module docstring):
    per group, the number of positives k ~ Binomial(size, p) with p = n_pos / (n_pos +
    replication * n_neg), redrawn while k = 0 (and capped by n_pos); k positives and
    size - k negatives drawn without replacement."""
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
    """Precision@k of each row of ``scores`` (n_groups, group size) with 0/1 ``labels``
    of the same shape: the positives among the k highest scores / k, inputs tied with
    the k-th score counted by their expected share (random tie-breaking)."""
    scores = np.atleast_2d(np.asarray(scores, dtype=np.float64))
    labels = np.atleast_2d(np.asarray(labels, dtype=np.float64))
    k = min(int(k), scores.shape[1])
    kth = -np.partition(-scores, k - 1, axis=1)[:, k - 1:k]
    above, tied = scores > kth, scores == kth
    n_above = above.sum(axis=1)
    pos_tied = (labels * tied).sum(axis=1)
    return ((labels * above).sum(axis=1) + (k - n_above) * pos_tied / tied.sum(axis=1)) / k


def ranking_metrics(score, y, queries):
    """Mean precision@QUERY_K over the pseudo-queries (and its standard error), the
    oracle's mean, global precision@k for PRECISION_KS, AUC."""
    p_q = precision_at_k(score[queries], y[queries], QUERY_K)
    oracle = precision_at_k(y[queries].astype(np.float64), y[queries], QUERY_K)
    out = {"p_at_5": float(p_q.mean()),
           "p_at_5_se": float(p_q.std(ddof=1) / np.sqrt(p_q.size)),
           "p_at_5_oracle": float(oracle.mean()),
           "auc": datasets._auc(y, score)}
    for k in PRECISION_KS:
        out[f"precision_at_{k}"] = float(precision_at_k(score[None, :], y[None, :], k)[0])
    return out


# ------------------------------------------------------------------------- settings
def method_params(task, method, lam, n_threads, overrides=None):
    """cbudget training parameters of ``method`` on ``task`` with trade-off ``lam`` (see
    the module docstring); ``overrides`` (ablations) replace entries (``sample_weight``
    is not a parameter: it is handled by the caller)."""
    overrides = {k: v for k, v in (overrides or {}).items() if k != "sample_weight"}
    if method == "cegb":
        p = cegb_params("cbudget", "mnist_multires" if task == "mnist38" else "letters", 2,
                        lam, None, n_threads=n_threads)
    else:
        p = {"algorithm": ALGORITHM[method], "objective": "binary:logistic", "loss": "squared",
             "cost_tradeoff": float(lam), "reg_alpha": RHO[task], "max_depth": DEPTH[method],
             "tree_structure": "prune" if method == "cstc" else "full",
             "class_weight": "balanced" if task == "letters_skewed" else None,
             "eval_metric": ["rmse", PRUNE_METRIC[task]], "tol": 1e-4,
             "n_jobs": n_threads}
    p.update(overrides)
    return p


def uses_sample_weight(task, method, overrides=None):
    """Whether the run balances the classes with Dataset sample weights (an ablation)."""
    return bool(overrides) and overrides.get("sample_weight") == "balanced"


# -------------------------------------------------------------------------- checks
def check_classifier_tree(model, X, costs):
    """Independent routing and cost accounting of a ClassifierTree / Cascade on ``X``
    (see the module docstring). Raises AssertionError on a disagreement; returns the
    figures of the comparison."""
    if model.basis is not None:
        raise AssertionError("the check covers models without the boosting trick")
    n = X.shape[0]
    F = np.asarray(X, dtype=np.float64) @ model.weights.T + model.bias
    node = np.zeros(n, dtype=np.int64)
    active = np.ones(n, dtype=bool)
    rows = np.arange(n)
    closest = np.full(n, np.inf)   # distance to a threshold on the way
    for _ in range(model.num_nodes()):
        k = node[active]
        f = F[rows[active], k]
        gap = np.abs(f - model.thresholds[k]) / (1.0 + np.abs(model.thresholds[k]))
        routing = (model.upper[k] != -1) | (model.lower[k] != -1)
        closest[rows[active][routing]] = np.minimum(closest[rows[active][routing]],
                                                    gap[routing])
        child = np.where(f > model.thresholds[k], model.upper[k], model.lower[k])
        stop = child == -1
        idx = rows[active]
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
    n_features = costs.shape[0]
    path_mask = np.zeros((model.num_nodes(), n_features), dtype=bool)
    for k in range(model.num_nodes()):
        for j in model.path(k):
            path_mask[k] |= model.weights[j] != 0
    split_cost = float(model.cost_model.split_cost)
    n_routing = np.array([len(model.path(k)) - 1 + int(not model.is_leaf(k))
                          for k in range(model.num_nodes())])
    own_cost = (path_mask.astype(np.float64) @ costs + split_cost * n_routing)[exit_node]
    lib_cost = np.asarray(model.predict_cost(X))
    cost_diff = float(np.max(np.abs(own_cost - lib_cost))) if n else 0.0
    if not np.allclose(own_cost, lib_cost, rtol=COST_CHECK_TOL, atol=COST_CHECK_TOL):
        raise AssertionError(f"independent per-input cost differs from predict_cost (max "
                             f"|diff| {cost_diff}; means {own_cost.mean()} vs "
                             f"{lib_cost.mean()})")
    acquired = path_mask[exit_node]
    rate = np.asarray(model.cost_report(X).acquisition_rate)
    rate_diff = float(np.max(np.abs(rate - acquired.mean(axis=0)))) if n else 0.0
    if rate_diff > 1e-12:
        raise AssertionError(f"acquisition rates differ from cost_report ({rate_diff})")
    used = np.flatnonzero(path_mask.any(axis=0))
    if not np.array_equal(np.sort(np.asarray(model.used_features())), used):
        raise AssertionError("used_features differs from the union of non-zero weights")
    return {"max_abs_cost_diff": cost_diff, "max_abs_margin_diff": margin_diff,
            "max_abs_rate_diff": rate_diff, "route_mismatches": int(mismatch.sum()),
            "split_cost": split_cost, "n_checked": int(n)}, own_cost, acquired


def check_booster(booster, X, costs):
    """CEGB: ``_common.prediction_costs`` from the leaf paths against ``predict_cost``
    and the acquisition rates of ``cost_report``."""
    leaves = np.asarray(booster.predict(X, pred_leaf=True), dtype=np.int64)
    tables = PathTables([cbudget_leaf_paths(t) for t in booster.trees], X.shape[1])
    split_cost = float(booster.cost_model.split_cost)
    cost, n_acquired = prediction_costs(leaves, tables, costs, split_cost)
    lib_cost = np.asarray(booster.predict_cost(X))
    diff = float(np.max(np.abs(cost - lib_cost))) if cost.size else 0.0
    if not np.allclose(cost, lib_cost, rtol=COST_CHECK_TOL, atol=COST_CHECK_TOL):
        raise AssertionError(f"leaf-path cost differs from predict_cost (max |diff| {diff})")
    return ({"max_abs_cost_diff": diff, "split_cost": split_cost, "n_checked": int(X.shape[0])},
            cost, n_acquired, tables.used_features())


# --------------------------------------------------------------------------- child
def run_child(args):
    """Train and measure one (task, method, lambda[, ablation])."""
    import cbudget
    task, method, lam = args.task, args.method, float(args.lam)
    overrides = json.loads(args.overrides) if args.overrides else {}
    version, location = library_version("cbudget")
    t = time.perf_counter()
    data = load_task(task, args.train_rows, args.valid_rows, args.test_rows)
    t_load = time.perf_counter() - t
    rss_after_load = rss_bytes()
    costs = np.asarray(data["feature_costs"], dtype=np.float64)
    params = method_params(task, method, lam, args.threads, overrides)
    tree = method in TREE_METHODS
    rounds = int(args.rounds)
    weighted = uses_sample_weight(task, method, overrides)
    X_valid, y_valid = data["X_valid"], data["y_valid"]

    trace = {"init_s": None, "sweeps": [], "bookkeeping_s": 0.0, "init_nodes": None}
    clock = Clock()

    class SweepLog(cbudget.TrainingCallback):
        """Elapsed time after the structure / initialisation and after every sweep; per
        sweep the validation cost and size of the model (its time is not fit time)."""

        def before_training(self, model):
            trace["init_s"] = clock.since_start()
            if tree:
                trace["init_nodes"] = int(model.num_nodes())
            return model

        def after_iteration(self, model, epoch, evals_log):
            elapsed = clock.since_start()
            if tree:
                t0 = time.perf_counter()
                valid = {k: float(v[-1]) for k, v in evals_log.get("valid", {}).items()}
                trace["sweeps"].append({
                    "elapsed_s": elapsed - trace["bookkeeping_s"],
                    "nodes": int(model.num_nodes()),
                    "features_used": int(len(model.used_features())),
                    "valid_mean_cost": float(model.predict_cost(X_valid).mean()),
                    **{f"valid_{k}": v for k, v in valid.items()}})
                trace["bookkeeping_s"] += time.perf_counter() - t0
            return False

    if tree:
        stopper = cbudget.EarlyStopping(PATIENCE, metric_name="rmse", data_name="valid")
    else:
        stopper = cbudget.EarlyStopping(CEGB_PATIENCE, metric_name="logloss",
                                        data_name="valid")
    evals_result = {}
    load_before = loadavg()
    cpu0, busy0 = cpu_seconds(), cpu_jiffies()[0]
    clock.start()
    dtrain = cbudget.Dataset(
        data["X_train"], data["y_train"], feature_costs=costs,
        feature_names=data["feature_names"],
        weight=balanced_sample_weight(data["y_train"]) if weighted else None)
    dvalid = cbudget.Dataset(X_valid, y_valid, reference=dtrain)
    t_dataset = clock.since_start()
    model = cbudget.train(params, dtrain, rounds, evals=[(dvalid, "valid")],
                          evals_result=evals_result, verbose_eval=False,
                          callbacks=[SweepLog(), stopper])
    t_total = clock.since_start()
    cpu_train = cpu_seconds() - cpu0
    busy1 = cpu_jiffies()[0]
    train_s = t_total - trace["bookkeeping_s"]
    best = model.best_iteration
    if tree:
        n_done = len(model.summary.get("objective_per_sweep", []))
        if best is not None and n_done - 1 - best >= PATIENCE:
            stop = "early stopping"
        elif n_done >= rounds:
            stop = "sweep cap"
        else:
            stop = "converged (tol)"
    else:
        n_done = model.num_boosted_rounds()
        stop = ("early stopping" if n_done < rounds else "round cap")
        if best is not None:
            model = model[:best + 1]

    # ---- evaluation
    t = time.perf_counter()
    X_test, y_test = data["X_test"], data["y_test"]
    margin = np.asarray(model.predict(X_test, output_margin=True), dtype=np.float64)
    proba = np.asarray(model.predict(X_test), dtype=np.float64)
    margin_valid = np.asarray(model.predict(X_valid, output_margin=True), dtype=np.float64)
    proba_valid = np.asarray(model.predict(X_valid), dtype=np.float64)
    if tree:
        checks, cost, acquired = check_classifier_tree(model, X_test, costs)
        n_acquired = acquired.sum(axis=1)
        used = np.asarray(model.used_features())
        exits = np.bincount(np.asarray(model.predict(X_test, pred_exit=True)),
                            minlength=model.num_nodes())
        reached = sorted({j for k in np.flatnonzero(exits) for j in model.path(int(k))})
        structure = {"upper": model.upper.tolist(), "lower": model.lower.tolist(),
                     "node_features": [int(np.count_nonzero(w)) for w in model.weights],
                     "thresholds": model.thresholds.tolist(),
                     "train_exits": model.n_exits.tolist(),
                     "train_reach": model.n_samples.tolist(), "reached_test": reached}
        n_nodes = int(model.num_nodes())
    else:
        checks, cost, n_acquired, used = check_booster(model, X_test, costs)
        acquired = None
        exits, structure, n_nodes = None, None, int(sum(len(t) for t in model.trees))
    valid_cost = np.asarray(model.predict_cost(X_valid))
    result = {
        "task": task, "method": method, "lambda": lam, "ablation": overrides or None,
        "version": version, "location": location, "params": params,
        "sample_weight": "balanced" if weighted else None,
        "n_train": int(data["X_train"].shape[0]),
        "n_train_original": int(data.get("n_train_original", data["X_train"].shape[0])),
        "pos_rate_train": float(np.mean(data["y_train"])),
        "n_valid": int(X_valid.shape[0]), "pos_rate_valid": float(np.mean(y_valid)),
        "n_test": int(X_test.shape[0]), "pos_rate_test": float(np.mean(y_test)),
        "n_features": int(costs.shape[0]), "rounds_cap": rounds, "n_threads": args.threads,
        "load_s": t_load, "dataset_build_s": t_dataset, "train_s": train_s,
        "train_total_s": train_s, "train_cpu_s": cpu_train,
        "other_cores_during_train": other_cores(busy0, busy1, cpu_train, t_total),
        "loadavg_before": load_before, "loadavg_after": loadavg(),
        "init_s": trace["init_s"], "bookkeeping_s": trace["bookkeeping_s"],
        "sweep_trace": trace["sweeps"], "init_nodes": trace["init_nodes"],
        "iterations": int(n_done), "best_iteration": best, "stop": stop,
        "objective_per_sweep": (model.summary.get("objective_per_sweep") if tree else None),
        "valid_log": {k: [float(x) for x in v] for k, v in evals_result.get("valid", {}).items()}
        if tree else None,
        "nodes": n_nodes, "features_used": int(len(used)),
        "exits_test": exits.tolist() if exits is not None else None, "structure": structure,
        "mean_cost": float(cost.mean()), "valid_mean_cost": float(valid_cost.mean()),
        **cost_fields(cost, n_acquired, costs, data),
        "checks": checks,
        "test_error": float(np.mean((proba > 0.5) != (y_test == 1))),
        "valid_error": float(np.mean((proba_valid > 0.5) != (y_valid == 1))),
        "auc_proba": datasets._auc(y_test, proba),
        "valid_auc": datasets._auc(y_valid, margin_valid),
    }
    result["accuracy"] = 1.0 - result["test_error"]
    if task == "mnist38":
        result["auc"] = datasets._auc(y_test, margin)
        # features used / acquired per input by resolution (the paper's Fig. 13)
        by_res = {}
        for res, sl in data["resolution_slices"].items():
            cols = np.arange(costs.shape[0])[sl]
            entry = {"used": int(np.isin(used, cols).sum())}
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
    result["peak_rss_mb"] = maxrss_bytes() / 2**20
    return result


# -------------------------------------------------------------------------- parent
def launch_child(job, args, log, deadline):
    """Run one job in a child process, or record it as skipped once the time budget is
    spent (the child's timeout is the time left)."""
    ident = {k: job[k] for k in ("task", "method", "lambda", "ablation")}
    left = deadline - time.perf_counter() if deadline else args.child_timeout
    if left < 1.0:
        print(f"  {job['label']}: skipped (time budget spent)", file=log, flush=True)
        return dict(ident, error="skipped: time budget spent", skipped=True, child_wall_s=0.0)
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", "--task", job["task"],
           "--method", job["method"], "--lam", repr(float(job["lambda"])),
           "--rounds", str(job["rounds"]), "--threads", str(args.threads)]
    if job["ablation"]:
        cmd += ["--overrides", json.dumps(job["ablation"])]
    for option, value in (("--train-rows", args.train_rows), ("--valid-rows", args.valid_rows),
                          ("--test-rows", args.test_rows)):
        if value:
            cmd += [option, str(value)]
    return run_child_command(cmd, min(args.child_timeout, left), log, job["label"], ident)


def build_jobs(tasks, methods, lambdas, rounds, ablations):
    """Round-robin over the (task, method) sweeps, each in :func:`spread` order, then the
    ablation rows."""
    queues = []
    for task in tasks:
        for method in TASK_METHODS[task]:
            if method in methods:
                queues.append([(task, method, lam, None) for lam in
                               spread(lambdas[(task, method)])])
    jobs = []
    while any(queues):
        for q in queues:
            if q:
                jobs.append(q.pop(0))
    if ablations:
        jobs += [(t, m, lam, o) for t, m, lam, o in ABLATIONS
                 if t in tasks and m in methods]
    out = []
    for task, method, lam, overrides in jobs:
        label = (f"{TASK_SHORT[task]} / {METHOD_LABELS[method]} / lambda={lam:g}"
                 + (f" / ablation {json.dumps(overrides)}" if overrides else ""))
        out.append((task, {"task": task, "method": method, "lambda": lam,
                           "ablation": overrides, "rounds": rounds[(task, method)],
                           "label": label}))
    return out


# ---------------------------------------------------------------------- aggregation
def _ok(results):
    return [r for r in results if "error" not in r]


def main_points(results, method):
    """Successful main-sweep runs of ``method``, by decreasing lambda."""
    return sorted((r for r in _ok(results) if r["method"] == method and not r["ablation"]),
                  key=lambda r: -r["lambda"])


def smoothness(points, score_key, higher=True):
    """How the score moves along the curve sorted by mean cost: the number of steps that
    go the wrong way (and the largest such step), whether the cost grows as lambda
    falls, and the score at the cheapest and the dearest point."""
    pts = sorted(points, key=lambda r: (r["mean_cost"], -r["lambda"]))
    sign = 1.0 if higher else -1.0
    steps = [sign * (b[score_key] - a[score_key]) for a, b in zip(pts, pts[1:])]
    wrong = [-s for s in steps if s < 0]
    by_lam = sorted(points, key=lambda r: -r["lambda"])
    cost_monotone = all(b["mean_cost"] >= a["mean_cost"] for a, b in zip(by_lam, by_lam[1:]))
    def brief(r):
        return {k: r[k] for k in ("lambda", "mean_cost", score_key)} if r else None

    return {"n": len(pts), "wrong_steps": len(wrong), "largest_wrong_step": max(wrong, default=0.0),
            "cost_monotone_in_lambda": cost_monotone,
            "first": brief(pts[0] if pts else None), "last": brief(pts[-1] if pts else None)}


def comparison(a_pts, b_pts, score_key):
    """``a`` against ``b`` at equal cost: for each ``b`` point, ``a``'s best point at no
    more cost (``_common.dominance``) and ``a``'s curve interpolated at its cost."""
    rows = dominance(a_pts, b_pts, cost_key="mean_cost", score_key=score_key)
    for row in rows:
        row["interpolated"] = interpolated_accuracy(a_pts, row["reference"]["mean_cost"],
                                                    cost_key="mean_cost", score_key=score_key)
    return rows


def comparison_summary(rows, score_key):
    n = len(rows)
    ok = sum(r["ok"] for r in rows)
    cheaper = sum(r["best"] is None for r in rows)
    inter = [r for r in rows if r["interpolated"] is not None]
    inter_ok = sum(r["interpolated"] >= r["reference"][score_key] for r in inter)
    return {"n": n, "ok": ok, "no_cheaper_point": cheaper, "n_interpolated": len(inter),
            "interpolated_ok": inter_ok}


# ------------------------------------------------------------------------ rendering
def _lam(r):
    return f"{r['lambda']:g}"


def _fit(r):
    return f"{r['train_s']:.1f}"


def _iters(r):
    best = r["best_iteration"]
    text = f"{r['iterations']}"
    if best is not None and best + 1 != r["iterations"]:
        text += f" (best {best + 1})"
    return text + {"early stopping": " es", "sweep cap": " cap", "round cap": " cap",
                   "converged (tol)": " tol"}.get(r["stop"], "")


def _exits(r):
    e = r.get("exits_test")
    if not e:
        return ""
    n = sum(e)
    return " / ".join(f"{100 * c / n:.0f}" for c in e)


def _nodes(r):
    """``nodes / nodes reached by test inputs`` for a tree, the node count else."""
    st = r.get("structure")
    if not st:
        return f"{r['nodes']:,}"
    return f"{r['nodes']} / {len(st['reached_test'])}"


def _q(r):
    q = r["cost_quantiles"]
    return f"{q['0.1']:.0f} / {q['0.5']:.0f} / {q['0.9']:.0f}"


def mnist_cstc_table(pts):
    head = ("| lambda | test error | mean test cost | cost q10 / q50 / q90 | nodes / reached | "
            "features used (4x4 / 8x8 / 16x16 / 28x28) | exits % by node | sweeps | fit s | "
            "valid error | test AUC |")
    lines = [head, "|---:|---:|---:|---:|---:|---|---|---|---:|---:|---:|"]
    for r in pts:
        res = r.get("by_resolution", {})
        by = " / ".join(str(res.get(k, {}).get("used", "?")) for k in ("4", "8", "16", "28"))
        lines.append(
            f"| {_lam(r)} | {r['test_error']:.4f} | {r['mean_cost']:,.1f} | {_q(r)} | "
            f"{_nodes(r)} | {r['features_used']} ({by}) | {_exits(r)} | "
            f"{_iters(r)} | {_fit(r)} | {r['valid_error']:.4f} | {r['auc']:.4f} |")
    return lines


def cegb_table(pts, task):
    if task == "mnist38":
        head = ("| lambda | test error | mean test cost | cost q10 / q50 / q90 | features used | "
                "rounds | fit s | test AUC |")
        lines = [head, "|---:|---:|---:|---:|---:|---|---:|---:|"]
        for r in pts:
            lines.append(f"| {_lam(r)} | {r['test_error']:.4f} | {r['mean_cost']:,.1f} | "
                         f"{_q(r)} | {r['features_used']} | {_iters(r)} | {_fit(r)} | "
                         f"{r['auc']:.4f} |")
        return lines
    return letters_table(pts)


def letters_table(pts):
    ks = " | ".join(f"P@{k}" for k in PRECISION_KS)
    head = (f"| method | lambda | mean P@5 (queries) | {ks} | AUC | AUC (clipped prob.) | "
            "mean test cost | features used | nodes / reached | exits % by node | "
            "iterations | fit s |")
    lines = [head, "|---|---:|---:|" + "---:|" * len(PRECISION_KS) + "---:|---:|---:|---:|"
             "---:|---|---|---:|"]
    for r in pts:
        pk = " | ".join(f"{r[f'precision_at_{k}']:.3f}" for k in PRECISION_KS)
        lines.append(
            f"| {METHOD_LABELS[r['method']]} | {_lam(r)} | {r['p_at_5']:.4f} ± "
            f"{r['p_at_5_se']:.4f} | {pk} | {r['auc']:.4f} | {r['auc_proba']:.4f} | "
            f"{r['mean_cost']:.2f} | {r['features_used']} | {_nodes(r)} | {_exits(r)} | "
            f"{_iters(r)} | {_fit(r)} |")
    return lines


def comparison_table(rows, a_label, score_key, score_name, fmt_spec=".4f"):
    head = (f"| reference lambda | its mean cost | its {score_name} | {a_label}: best at no "
            f"more cost (lambda, cost, {score_name}) | {a_label} interpolated | "
            f"{a_label} at least as good |")
    lines = [head, "|---:|---:|---:|---|---:|---|"]
    for row in rows:
        g, b = row["reference"], row["best"]
        best = (f"{b['lambda']:g}, {b['mean_cost']:,.1f}, {format(b[score_key], fmt_spec)}"
                if b else "none that cheap")
        lines.append(f"| {g['lambda']:g} | {g['mean_cost']:,.1f} | "
                     f"{format(g[score_key], fmt_spec)} | {best} | "
                     f"{fmt(row['interpolated'], fmt_spec)} | "
                     f"{'yes' if row['ok'] else 'no'} |")
    return lines


def verdict(a_label, b_label, rows, score_key, score_name):
    s = comparison_summary(rows, score_key)
    text = (f"{a_label} at least as good ({score_name}) as {b_label} at no more cost at "
            f"{s['ok']} of {s['n']} {b_label} points")
    if s["no_cheaper_point"]:
        text += f" ({s['no_cheaper_point']} {b_label} point(s) cheaper than every {a_label} point)"
    text += (f"; {a_label}'s interpolated curve at least as good at {s['interpolated_ok']} of "
             f"{s['n_interpolated']} {b_label} points within its cost range.")
    return text, s


def where_text(rows, score_key, a_label, b_label):
    """Cost ranges of the reference (``b``) where ``a`` is ahead / behind by its
    interpolated curve."""
    ahead = [r["reference"]["mean_cost"] for r in rows if r["interpolated"] is not None
             and r["interpolated"] >= r["reference"][score_key]]
    behind = [r["reference"]["mean_cost"] for r in rows if r["interpolated"] is not None
              and r["interpolated"] < r["reference"][score_key]]
    parts = []
    if ahead:
        parts.append(f"{a_label} ahead at {b_label}'s costs "
                     + ", ".join(f"{c:,.1f}" for c in sorted(ahead)))
    if behind:
        parts.append(f"{b_label} ahead at its costs "
                     + ", ".join(f"{c:,.1f}" for c in sorted(behind)))
    outside = [r["reference"]["mean_cost"] for r in rows if r["interpolated"] is None]
    if outside:
        parts.append(f"outside {a_label}'s cost range: " + ", ".join(f"{c:,.1f}"
                                                                    for c in sorted(outside)))
    return "; ".join(parts) + "." if parts else ""


def adaptivity_text(points):
    """Whether the trees / cascades route test inputs to different exits: the runs in
    which every test input leaves at the same node (one cost for everybody)."""
    single = [r for r in points if sum(1 for c in r["exits_test"] if c) <= 1]
    text = (f"in {len(single)} of {len(points)} runs every test input leaves at the same "
            "node (all pay the same cost)")
    spread = [r for r in points if r not in single]
    if spread:
        text += ("; inputs are split at lambda " + ", ".join(
            f"{r['lambda']:g} (q10 / q90 cost {r['cost_quantiles']['0.1']:.0f} / "
            f"{r['cost_quantiles']['0.9']:.0f})" for r in spread))
    extreme = [r for r in single if r["structure"] and len(r["structure"]["thresholds"]) > 1]
    if extreme:
        text += ("; the first node's threshold in those runs: " + ", ".join(
            f"{r['structure']['thresholds'][0]:.2f}" for r in extreme)
                 + " (scores are fits of +-1 targets)")
    return text + "."


def smooth_text(s, score_name, higher):
    if not s["n"]:
        return "no points."
    first, last = s["first"], s["last"]
    key = "test_error" if score_name == "test error" else "p_at_5"
    trend = (f"{score_name} {first[key]:.4f} at mean cost {first['mean_cost']:,.1f} "
             f"(lambda {first['lambda']:g}) to {last[key]:.4f} at {last['mean_cost']:,.1f} "
             f"(lambda {last['lambda']:g})")
    mono = ("monotone in cost (every step to a dearer point is at least as good)"
            if s["wrong_steps"] == 0 else
            f"not monotone: {s['wrong_steps']} of {s['n'] - 1} steps to a dearer point are "
            f"worse (largest by {s['largest_wrong_step']:.4f})")
    cost = ("the mean cost grows as lambda falls" if s["cost_monotone_in_lambda"]
            else "the mean cost does NOT grow monotonically as lambda falls")
    return f"{trend}; {mono}; {cost}."


def notes_section(results):
    notes = []
    ok = [r for rs in results.values() for r in _ok(rs)]
    trees = [r for r in ok if r["method"] in TREE_METHODS]
    boosters = [r for r in ok if r["method"] == "cegb"]
    if trees:
        notes.append(
            f"Checks on all {len(trees)} tree / cascade runs (test set): an independent walk "
            "from the root reaches the node of `predict(pred_exit=True)` for every input "
            f"(mismatches at threshold ties: {sum(r['checks']['route_mismatches'] for r in trees)}) "
            "with the score of `output_margin` (max |difference| "
            f"{max(r['checks']['max_abs_margin_diff'] for r in trees):.3g}); the cost of the "
            "features with a non-zero weight on `path(exit)`, each once, equals `predict_cost` "
            f"(max |difference| {max(r['checks']['max_abs_cost_diff'] for r in trees):.3g}); "
            "acquisition rates equal `cost_report`'s (max |difference| "
            f"{max(r['checks']['max_abs_rate_diff'] for r in trees):.3g}); `used_features` is "
            "the union of the non-zero weights. Split cost "
            f"{max(r['checks']['split_cost'] for r in trees):g} (not set).")
    if boosters:
        notes.append(
            f"Checks on all {len(boosters)} CEGB runs: the leaf-path cost of "
            "`_common.prediction_costs` equals `predict_cost` (max |difference| "
            f"{max(r['checks']['max_abs_cost_diff'] for r in boosters):.3g}).")
    failed = [r for rs in results.values() for r in rs if "error" in r]
    for r in failed:
        notes.append(f"FAILED / SKIPPED: {TASK_SHORT[r['task']]} / {METHOD_LABELS[r['method']]}"
                     f" / lambda={r['lambda']:g}"
                     + (f" / ablation {json.dumps(r['ablation'])}" if r.get("ablation") else "")
                     + f": {r['error']}")
    for r in sorted(ok, key=lambda r: (r["task"], r["method"], bool(r["ablation"]),
                                       -r["lambda"])):
        per_sweep = ""
        sw = r["sweep_trace"]
        if sw:
            per_sweep = ("; per sweep (elapsed s / features used / valid mean cost / valid "
                         f"{PRUNE_METRIC[r['task']]}): " + ", ".join(
                             f"{s['elapsed_s']:.0f}/{s['features_used']}/"
                             f"{s['valid_mean_cost']:.1f}/"
                             f"{s.get('valid_' + PRUNE_METRIC[r['task']], float('nan')):.4f}"
                             for s in sw))
        st = r.get("structure")
        if st:
            per_sweep += ("; nodes (level order): non-zero weights " + str(st["node_features"])
                          + ", thresholds " + str([round(t, 3) for t in st["thresholds"]])
                          + ", training inputs exiting " + str(st["train_exits"]))
        init = (f", structure + initialisation {r['init_s'] - r['dataset_build_s']:.1f} s"
                if r["method"] in TREE_METHODS and r["init_s"] is not None else "")
        notes.append(
            f"{TASK_SHORT[r['task']]} / {METHOD_LABELS[r['method']]} lambda={r['lambda']:g}"
            + (f" (ablation {json.dumps(r['ablation'])})" if r["ablation"] else "")
            + f": fit {r['train_s']:.1f} s (Dataset {r['dataset_build_s']:.1f} s{init}, "
            f"CPU/wall {r['train_cpu_s'] / max(r['train_s'] + r['bookkeeping_s'], 1e-9):.2f}, "
            f"other processes {r['other_cores_during_train']:.2f} cores{attempts_text(r)}), "
            f"{r['iterations']} {'sweeps' if r['method'] in TREE_METHODS else 'rounds'} "
            f"({r['stop']}), eval {r['eval_s']:.1f} s, peak RSS {r['peak_rss_mb']:.0f} MB"
            + per_sweep)
    return ["<details><summary>Checks and per-run notes</summary>", ""] + \
        [f"- {n}" for n in notes] + ["", "</details>", ""]


SETTINGS_TEXT = """\
Tasks (benchmarks/datasets.py; one child process per (task, method, lambda), {threads}
thread(s)):

* **{mnist}**: the digits 3 and 8 of `load_mnist_multires` (its train / valid / test
  split restricted to them; 8 -> 1); every one of the 1,120 pixels (4x4, 8x8, 16x16 and
  28x28 versions of the image) costs 1, so the cost is the number of pixels acquired.
* **{letters}**: `load_letters`, the letter {letter} (positive) against the 25 others; each
  training negative replicated {rep} times (positives {pos_train:.2%} of the training rows,
  the paper's 1:100 skew); validation and test sets unreplicated ({pos_test:.2%} positives
  in the test set); 16 features of cost 1 each (cost = features acquired, 0..16: the
  trade-off is how many of the 16 an input needs, not which price class).

Methods (cbudget; details in the docstring of `benchmarks/bench_cstc.py`):

* **CSTC / CSCC / Cronus**: squared loss on +-1 targets (the paper's), block coordinate
  descent of at most {sweeps_m} (MNIST) / {sweeps_l} (Letters) sweeps (also stopping when
  the objective changes less than tol = 1e-4 x max(1, objective)), early stopping on the
  validation RMSE of the probability with patience {patience} (the best sweep's model is
  kept), leaves fine-tuned without the cost term.
  MNIST CSTC: depth 3 (7 nodes), pruned bottom-up on the validation error (the paper's
  choice; *CSTC (pruned)*) and the full 7-node tree (*CSTC (full tree)*), rho = {rho_m:g}.
  Letters CSCC / Cronus: 4-stage cascades (full); Letters CSTC: depth 3, pruned on the
  validation AUC and full; all with `class_weight="balanced"` (see the ablations) and
  rho = {rho_l:g}.
* **CEGB**: `bench_cegb.py`'s settings (31-leaf best-first trees, learning rate 0.1, L2
  1, per-input feature costs times lambda in the split gain), at most {cegb_m} (MNIST) /
  {cegb_l} (Letters) rounds, early stopping on the validation log-loss (patience
  {cegb_pat}), the model cut at its best round.

Columns: *mean test cost*: mean over the test inputs of the prediction cost
(ARCHITECTURE section 2; for a tree / cascade the features with a non-zero weight in the
nodes on the input's own path, each once; checked against an independent walk, see the
notes); *cost q10 / q50 / q90*: quantiles of the per-input cost; *features used*: by the
whole model (nodes no input reaches included); *nodes / reached*: nodes of the trained
model (7 before pruning for CSTC) / nodes on the path of some test input (boosting: all
nodes of the kept trees); *exits % by node*: share of the test inputs leaving at each node (level order; for a cascade, by stage);
*sweeps / rounds*: iterations run (best kept), `es` early stopping, `cap` the cap,
`tol` converged; *fit s*: wall seconds from just before the training Dataset is built to
the return of `train()`, without the benchmark's own per-sweep bookkeeping (the
validation cost of every sweep).
"""


def render(results, info, command, wall_s, quick, threads, settings):
    banners = [SMOKE_BANNER] if quick else []
    busy = [(f"{METHOD_LABELS[r['method']]} lambda={r['lambda']:g} ({TASK_SHORT[r['task']]})",
             r["other_cores_during_train"]) for rs in results.values() for r in _ok(rs)]
    out = results_header("CSTC / CSCC / Cronus benchmark: error and precision vs feature "
                         "cost (vs CEGB)", command, info, wall_s, busy, banners)
    if info.get("scipy"):
        i = next(i for i, line in enumerate(out) if line.startswith("Machine:"))
        out[i] += f" scipy {info['scipy']} (the CSTC solver's L-BFGS-B and linear algebra)."
    letters_ok = _ok(results.get("letters_skewed", []))
    first_l = letters_ok[0] if letters_ok else {"pos_rate_train": float("nan"),
                                                "pos_rate_test": float("nan")}
    out.append(SETTINGS_TEXT.format(
        threads=threads, mnist=TASK_SHORT["mnist38"], letters=TASK_SHORT["letters_skewed"],
        letter=LETTER, rep=NEG_REPLICATION, pos_train=first_l["pos_rate_train"],
        pos_test=first_l["pos_rate_test"], sweeps_m=settings["sweeps"]["mnist38"],
        sweeps_l=settings["sweeps"]["letters_skewed"], patience=PATIENCE,
        rho_m=RHO["mnist38"], rho_l=RHO["letters_skewed"],
        cegb_m=settings["cegb_rounds"]["mnist38"],
        cegb_l=settings["cegb_rounds"]["letters_skewed"], cegb_pat=CEGB_PATIENCE))
    summary = []
    body = []
    analysis = {}

    # ---- 1. MNIST CSTC
    mn = results.get("mnist38", [])
    trees_m = {m: main_points(mn, m) for m in ("cstc", "cstc_full")}
    cegb_m = main_points(mn, "cegb")
    if any(trees_m.values()):
        body += [f"## 1. CSTC on {TASK_TITLES['mnist38']}", ""]
        r0 = next(r for pts in trees_m.values() for r in pts)
        body += [f"{r0['n_train']:,} training / {r0['n_valid']:,} validation / "
                 f"{r0['n_test']:,} test rows ({r0['pos_rate_test']:.1%} eights in the test "
                 "set). CSTC over its lambda sweep (decreasing lambda = more cost allowed), "
                 "depth 3, pruned on the validation error as in the paper, and the full "
                 "7-node tree:", ""]
        for m, pts in trees_m.items():
            if not pts:
                continue
            body += [f"**{METHOD_LABELS[m]}**", ""] + mnist_cstc_table(pts) + [""]
            s_ = smoothness(pts, "test_error", higher=False)
            analysis[f"mnist_smooth_{m}"] = s_
            text = smooth_text(s_, "test error", False)
            body += [f"Curve: {text}", ""]
            summary.append(f"MNIST 3 vs 8, {METHOD_LABELS[m]}: {text}")
            a = adaptivity_text(pts)
            body += [f"Routing: {a}", ""]
            summary.append(f"MNIST 3 vs 8, {METHOD_LABELS[m]}: {a}")
        body += ["The paper's Fig. 12 (CSTC, lambda 1e-1 .. 1e-3): test error about 0.12 at "
                 "the lowest cost falling smoothly to about 0.03 at cost ~450; its Fig. 13 "
                 "shows 3s and 8s taking different paths.", ""]
        abl = [r for r in _ok(mn) if r["method"] in ("cstc", "cstc_full") and r["ablation"]]
        if abl:
            body += ["rho check (ablation, same settings otherwise):", ""]
            body += mnist_cstc_table(abl) + [""]
            for r in abl:
                same = next((p for p in trees_m[r["method"]] if p["lambda"] == r["lambda"]),
                            None)
                if same:
                    body += [f"- {METHOD_LABELS[r['method']]} lambda {r['lambda']:g}: rho "
                             f"{r['params']['reg_alpha']:g} gives test error "
                             f"{r['test_error']:.4f} at mean cost {r['mean_cost']:,.1f}; rho "
                             f"{same['params']['reg_alpha']:g} gives {same['test_error']:.4f} "
                             f"at {same['mean_cost']:,.1f}.", ""]
    # ---- 2. Letters
    lt = results.get("letters_skewed", [])
    by_m = {m: main_points(lt, m) for m in LETTERS_METHODS}
    if any(by_m.values()):
        body += [f"## 2. CSCC vs Cronus vs CSTC on {TASK_TITLES['letters_skewed']}", ""]
        any_r = next(r for m in by_m for r in by_m[m])
        q = any_r["queries"]
        body += [
            f"{any_r['n_train_original']:,} training rows before replication, "
            f"{any_r['n_train']:,} after ({any_r['pos_rate_train']:.2%} positives); "
            f"{any_r['n_valid']:,} validation ({any_r['pos_rate_valid']:.2%}) and "
            f"{any_r['n_test']:,} test rows ({any_r['pos_rate_test']:.2%}), unreplicated.",
            "",
            f"*mean P@5 (queries)*: precision@5 averaged over {q['n']:,} pseudo-queries of "
            f"{q['size']} test inputs each (seed {QUERY_SEED}; per query the number of "
            f"positives ~ Binomial({q['size']}, p) with p the test positive share when every "
            f"negative counts {NEG_REPLICATION} times, redrawn when 0; mean "
            f"{q['mean_positives']:.2f} positives per query), ± its standard error; a perfect "
            f"ranking scores {any_r['p_at_5_oracle']:.4f} (most queries have fewer than 5 "
            "positives), a constant score the base rate. *P@k*: precision of the k highest "
            "scores over the whole test set. Ties count by their expected share. *AUC* ranks "
            "by the raw score; *AUC (clipped prob.)* by `predict()`, which for the squared "
            "loss clips (f + 1) / 2 to [0, 1].",
            ""]
        rows = [r for m in LETTERS_METHODS for r in by_m[m]]
        body += letters_table(rows) + [""]
        for m in LETTERS_METHODS:
            if by_m[m]:
                s_ = smoothness(by_m[m], "p_at_5")
                line = f"- {METHOD_LABELS[m]}: {smooth_text(s_, 'P@5', True)}"
                if m in TREE_METHODS:
                    a = adaptivity_text(by_m[m])
                    line += f" Routing: {a}"
                    summary.append(f"Letters, {METHOD_LABELS[m]}: {a}")
                body.append(line)
        body.append("")
        body += ["Equal-cost comparisons on the mean P@5 (rows: the reference method's "
                 "points):", ""]
        for a, b in (("cscc", "cronus"), ("cscc", "cstc"), ("cscc", "cstc_full"),
                     ("cronus", "cstc")):
            if by_m[a] and by_m[b]:
                rows_ab = comparison(by_m[a], by_m[b], "p_at_5")
                v, s_ = verdict(METHOD_LABELS[a], METHOD_LABELS[b], rows_ab, "p_at_5",
                                "mean P@5")
                analysis[f"letters_{a}_vs_{b}"] = s_
                body += [f"**{METHOD_LABELS[a]} vs {METHOD_LABELS[b]}** (reference "
                         f"{METHOD_LABELS[b]}): {v} "
                         + where_text(rows_ab, "p_at_5", METHOD_LABELS[a], METHOD_LABELS[b]),
                         ""]
                body += comparison_table(rows_ab, METHOD_LABELS[a], "p_at_5", "P@5") + [""]
                summary.append(f"Letters: {v}")
        abl = [r for r in _ok(lt) if r["ablation"]]
        if abl:
            body += ["Ablations (class weighting; same lambda as the matching main-sweep row):",
                     ""]
            body += letters_table(abl) + [""]
            for r in abl:
                main = next((p for p in by_m[r["method"]] if p["lambda"] == r["lambda"]), None)
                desc = (f"class_weight={r['params'].get('class_weight')!r}, sample weights "
                        f"{r['sample_weight'] or 'none'}")
                if main:
                    body.append(
                        f"- {METHOD_LABELS[r['method']]} lambda {r['lambda']:g} with {desc}: "
                        f"P@5 {r['p_at_5']:.4f}, AUC {r['auc']:.4f}, cost {r['mean_cost']:.2f} "
                        f"(main row: class_weight={main['params'].get('class_weight')!r}, sample "
                        f"weights {main['sample_weight'] or 'none'}: P@5 {main['p_at_5']:.4f}, "
                        f"AUC {main['auc']:.4f}, cost {main['mean_cost']:.2f}).")
                    same = (r["mean_cost"] == main["mean_cost"] and r["auc"] == main["auc"]
                            and r["p_at_5"] == main["p_at_5"]
                            and r["structure"]["thresholds"] == main["structure"]["thresholds"])
                    if same:
                        body.append("  **Identical** model (thresholds, P@5, AUC, cost): the "
                                    "change had no effect.")
                    summary.append(
                        f"Letters ablation, {METHOD_LABELS[r['method']]} lambda {r['lambda']:g}: "
                        f"{desc}: P@5 {r['p_at_5']:.4f} / AUC {r['auc']:.4f} / cost "
                        f"{r['mean_cost']:.2f} against {main['p_at_5']:.4f} / {main['auc']:.4f} / "
                        f"{main['mean_cost']:.2f} with class_weight='balanced'"
                        + (" (identical model)" if same else "") + ".")
            body.append("")
    # ---- 3. CSTC vs CEGB
    pairs = []
    for m in ("cstc", "cstc_full"):
        if trees_m.get(m) and cegb_m:
            pairs.append(("mnist38", m, trees_m[m], cegb_m, "accuracy", "test accuracy"))
    for m in ("cstc", "cstc_full", "cscc"):
        if by_m.get(m) and by_m.get("cegb"):
            pairs.append(("letters_skewed", m, by_m[m], by_m["cegb"], "p_at_5", "mean P@5"))
    if pairs or cegb_m or by_m.get("cegb"):
        body += ["## 3. CSTC (and CSCC) vs CEGB", ""]
        if cegb_m:
            body += [f"CEGB on {TASK_SHORT['mnist38']}:", ""] + cegb_table(cegb_m, "mnist38") + [""]
        if by_m.get("cegb"):
            body += [f"CEGB on {TASK_SHORT['letters_skewed']}: the CEGB rows of the table in "
                     "section 2.", ""]
        for task, a, a_pts, b_pts, key, name in pairs:
            for x, y, xp, yp in ((a, "cegb", a_pts, b_pts), ("cegb", a, b_pts, a_pts)):
                rows = comparison(xp, yp, key)
                v, s_ = verdict(METHOD_LABELS[x], METHOD_LABELS[y], rows, key, name)
                analysis[f"{task}_{x}_vs_{y}"] = s_
                body += [f"**{TASK_SHORT[task]}: {METHOD_LABELS[x]} vs {METHOD_LABELS[y]}** "
                         f"(reference {METHOD_LABELS[y]}): {v} "
                         + where_text(rows, key, METHOD_LABELS[x], METHOD_LABELS[y]), ""]
                body += comparison_table(rows, METHOD_LABELS[x], key, name) + [""]
                summary.append(f"{TASK_SHORT[task]}: {v}")
        if cegb_m:
            for m, pts in list(trees_m.items()) + [("cegb", cegb_m)]:
                if pts:
                    best = min(pts, key=lambda r: (r["test_error"], r["mean_cost"]))
                    body.append(f"- MNIST 3 vs 8, {METHOD_LABELS[m]}'s lowest test error: "
                                f"{best['test_error']:.4f} at mean cost "
                                f"{best['mean_cost']:,.1f} (lambda {best['lambda']:g}).")
            body.append("")
    # ---- timing
    ok = [r for rs in results.values() for r in _ok(rs)]
    if ok:
        body += ["## Fit time", "", "Main-sweep runs (ablations excluded):", "",
                 "| task | method | runs | fit s: min / median / max | s per sweep or round "
                 "(median) | structure + initialisation s (median) | after the last sweep s "
                 "(median: best sweep restored, leaves fine-tuned, training costs recorded) |",
                 "|---|---|---:|---|---:|---:|---:|"]
        for task in TASKS:
            for m in TASK_METHODS[task]:
                rs = [r for r in ok if r["task"] == task and r["method"] == m
                      and not r["ablation"]]
                if not rs:
                    continue
                fits = [r["train_s"] for r in rs]
                per = []
                inits = []
                after = []
                for r in rs:
                    if m in TREE_METHODS and r["init_s"] is not None and r["iterations"]:
                        end = r["sweep_trace"][-1]["elapsed_s"] if r["sweep_trace"] else r["init_s"]
                        per.append((end - r["init_s"]) / max(1, len(r["sweep_trace"])))
                        inits.append(r["init_s"] - r["dataset_build_s"])
                        after.append(r["train_s"] - end)
                    elif m == "cegb" and r["iterations"]:
                        per.append((r["train_s"] - r["dataset_build_s"]) / r["iterations"])
                body.append(
                    f"| {TASK_SHORT[task]} | {METHOD_LABELS[m]} | {len(rs)} | "
                    f"{min(fits):.1f} / {float(np.median(fits)):.1f} / {max(fits):.1f} | "
                    f"{fmt(float(np.median(per)) if per else None, '.2f')} | "
                    f"{fmt(float(np.median(inits)) if inits else None, '.1f')} | "
                    f"{fmt(float(np.median(after)) if after else None, '.1f')} |")
        body.append("")
    out += ["**Summary**", ""] + [f"- {s}" for s in summary] + [""] + body
    out += notes_section(results)
    return "\n".join(out), analysis


PLOT_STYLE = {"cstc": ("o-", "tab:red"), "cstc_full": ("v-", "tab:orange"),
              "cscc": ("s-", "tab:blue"),
              "cronus": ("^-", "tab:green"), "cegb": ("D--", "tab:gray")}


def plot(results, path, suffix=""):
    plt = pyplot()
    if plt is None:
        return None
    panels = []
    mn = results.get("mnist38", [])
    lt = results.get("letters_skewed", [])
    if _ok(mn):
        panels.append(("mnist38", "test_error", "test error", ("cstc", "cstc_full", "cegb")))
    if _ok(lt):
        panels.append(("letters_skewed", "p_at_5", "mean precision@5 (pseudo-queries)",
                       LETTERS_METHODS))
        panels.append(("letters_skewed", "auc", "test AUC", LETTERS_METHODS))
    if not panels:
        return None
    fig, axes = plt.subplots(1, len(panels), squeeze=False, figsize=(5.6 * len(panels), 4.4))
    for ax, (task, key, ylabel, methods) in zip(axes[0], panels):
        res = results[task]
        for m in methods:
            pts = sorted(main_points(res, m), key=lambda r: r["mean_cost"])
            if not pts:
                continue
            style, color = PLOT_STYLE[m]
            ax.plot([r["mean_cost"] for r in pts], [r[key] for r in pts], style, color=color,
                    label=METHOD_LABELS[m], markersize=4)
            for r in pts:
                ax.annotate(f"{r['lambda']:g}", (r["mean_cost"], r[key]),
                            textcoords="offset points", xytext=(3, 3), fontsize=6, color=color)
        if key == "p_at_5":
            oracle = next((r["p_at_5_oracle"] for r in _ok(res)), None)
            if oracle:
                ax.axhline(oracle, color="k", linestyle=":", linewidth=0.8,
                           label="perfect ranking")
        if task == "mnist38":   # CEGB's points sit below 60, the trees' up to 600
            ax.set_xscale("symlog", linthresh=10.0)
        ax.set_xlabel("mean test cost per input (features acquired; each costs 1)"
                      + (", symlog" if task == "mnist38" else ""))
        ax.set_ylabel(ylabel)
        ax.set_title(TASK_SHORT[task], fontsize=10)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=7)
    fig.suptitle("CSTC / CSCC / Cronus vs CEGB: test score vs mean test cost (labels: lambda)"
                 + suffix, fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _finish(results, output, info, command, wall, quick, threads, settings):
    text, analysis = render(results, info, command, wall, quick, threads, settings)
    png = plot(results, output.with_suffix(".png"), " - smoke run (--quick)" if quick else "")
    if png:
        text += (f"\nPlot: `{png.name}` (left: MNIST test error vs mean test cost; middle / "
                 "right: Letters mean P@5 and AUC vs mean test cost; labels are lambdas).\n")
    print(text)
    output.write_text(text)
    return png, analysis


def main(argv=None):
    parser = benchmark_parser(__doc__, TASKS, "--task", "--method", "--lam", "--rounds",
                              "--overrides")
    parser.add_argument("--tasks", default=None,
                        help="comma-separated subset of " + ",".join(TASKS)
                             + " (alias of --datasets)")
    parser.add_argument("--methods", default=",".join(METHODS),
                        help="comma-separated subset of " + ",".join(METHODS))
    parser.add_argument("--lambdas", default=None,
                        help="trade-off values for every (task, method) (default: LAMBDAS "
                             "in the script, per task and method)")
    parser.add_argument("--sweeps", type=int, default=None,
                        help="cap on the sweeps of CSTC / CSCC / Cronus (default per task: "
                             + ", ".join(f"{k} {v}" for k, v in SWEEPS.items()) + ")")
    parser.add_argument("--cegb-rounds", type=int, default=None,
                        help="cap on CEGB's rounds (default per task: "
                             + ", ".join(f"{k} {v}" for k, v in CEGB_ROUNDS.items()) + ")")
    parser.add_argument("--no-ablations", action="store_true",
                        help="skip the ablation rows (class weights, rho)")
    parser.add_argument("--time-budget", type=float, default=45.0,
                        help="minutes of wall time for the whole run (waiting for idle "
                             "CPUs included): jobs not started by then are skipped and the "
                             "running child is stopped at the limit; 0: no limit")
    for option, part in (("--train-rows", "training"), ("--valid-rows", "validation"),
                         ("--test-rows", "test")):
        parser.add_argument(option, type=int, default=None,
                            help=f"keep only the first N {part} rows of every task (Letters: "
                                 "before the replication)")
    parser.add_argument("--output", default=None,
                        help="Markdown output (default benchmarks/results/cstc.md; with "
                             "--quick /tmp/cstc_quick.md); .json and .png go next to it")
    parser.add_argument("--quick", action="store_true",
                        help=f"smoke run: {QUICK['train_rows']:,} / {QUICK['valid_rows']:,} / "
                             f"{QUICK['test_rows']:,} rows, {QUICK['sweeps']} sweeps, "
                             f"{QUICK['cegb_rounds']} CEGB rounds, 2 lambdas per method")
    args, mode = parse_run_args(parser, argv, run_child, render_from, QUICK,
                                ("train_rows", "valid_rows", "test_rows"))
    if mode is not None:
        return mode
    tasks = parse_choices(parser, args.tasks or args.datasets, TASKS, "task")
    methods = parse_choices(parser, args.methods, METHODS, "method")
    if args.lambdas:
        grid = parse_lambdas(args.lambdas)[::-1]
        lambdas = {key: grid for key in LAMBDAS}
    else:
        lambdas = dict(QUICK["lambdas"] if args.quick else LAMBDAS)
    sweeps = {t: args.sweeps or (QUICK["sweeps"] if args.quick else SWEEPS[t]) for t in TASKS}
    cegb_rounds = {t: args.cegb_rounds or (QUICK["cegb_rounds"] if args.quick
                                           else CEGB_ROUNDS[t]) for t in TASKS}
    rounds = {(t, m): (cegb_rounds[t] if m == "cegb" else sweeps[t])
              for t in TASKS for m in TASK_METHODS[t]}
    output = Path(args.output) if args.output else (
        Path("/tmp/cstc_quick.md") if args.quick
        else REPO / "benchmarks" / "results" / "cstc.md")
    output.parent.mkdir(parents=True, exist_ok=True)
    command = command_line()
    info = machine_info(libraries=("scipy",))
    log = sys.stderr
    print(f"# {command}", file=log, flush=True)
    jobs = build_jobs(tasks, methods, lambdas, rounds,
                      ablations=not (args.no_ablations or args.quick or args.lambdas))
    settings = {"sweeps": sweeps, "cegb_rounds": cegb_rounds,
                "lambdas": {f"{t}/{m}": list(v) for (t, m), v in lambdas.items()},
                "time_budget_min": args.time_budget}
    extra = {"threads": args.threads, "settings": settings}
    t_start = time.perf_counter()
    deadline = t_start + 60.0 * args.time_budget if args.time_budget > 0 else None
    results = run_jobs(
        jobs, lambda job: launch_child(job, args, log, deadline), args, log,
        lambda res: write_json(output, command, info, res, time.perf_counter() - t_start,
                               args.quick, **extra),
        lambda r: (f"fit {r['train_s']:.1f} s, {r['iterations']} iterations ({r['stop']}), "
                   f"mean cost {r['mean_cost']:,.2f}, features used {r['features_used']}, "
                   + (f"test error {r['test_error']:.4f}" if r["task"] == "mnist38" else
                      f"P@5 {r['p_at_5']:.4f}, AUC {r['auc']:.4f}")
                   + f", nodes {r['nodes']}"))
    wall = time.perf_counter() - t_start
    write_json(output, command, info, results, wall, args.quick, **extra)
    png, analysis = _finish(results, output, info, command, wall, args.quick, args.threads,
                            settings)
    doc = json.loads(output.with_suffix(".json").read_text())
    doc["analysis"] = json.loads(json.dumps(analysis, default=_jsonable))
    output.with_suffix(".json").write_text(json.dumps(doc, indent=1))
    code = finish_run(output, png, wall, log, results)
    skipped = [r for rs in results.values() for r in rs if r.get("skipped")]
    # jobs skipped by the time budget are reported in the Markdown, not a failure
    if code and all(r.get("skipped") for rs in results.values() for r in rs if "error" in r):
        code = 0
    if skipped:
        print(f"# {len(skipped)} job(s) skipped by the time budget", file=log, flush=True)
    return code


def _jsonable(value):
    if isinstance(value, (np.integer, np.floating)):
        return value.item()
    return str(value)


def render_from(path, output=None):
    """Re-render the Markdown (and the plot) of an earlier run from its raw JSON."""
    doc = json.loads(path.read_text())
    output = Path(output) if output else path.with_suffix(".md")
    text, _ = render(doc["results"], doc["machine"], doc["command"], doc["wall_s"],
                     doc.get("quick"), doc.get("threads", 2), doc["settings"])
    png = plot(doc["results"], output.with_suffix(".png"),
               " - smoke run (--quick)" if doc.get("quick") else "")
    return write_rerendered(text, path, output, png,
                            "left: MNIST test error vs mean test cost; middle / right: Letters "
                            "mean P@5 and AUC vs mean test cost; labels are lambdas")


if __name__ == "__main__":
    sys.exit(main())
