"""Greedy Miser benchmark: accuracy vs feature cost against CEGB and plain boosting.

cbudget's Greedy Miser (``algorithm="greedy_miser"``; Xu et al., ICML 2012) over a sweep
of its trade-off lambda (``cost_tradeoff``), against cbudget's CEGB (``algorithm="cegb"``,
Peter et al., NIPS 2017) over its own lambda sweep and against plain gradient boosting
(cbudget ``algorithm="gbdt"`` and LightGBM), on the three data sets with feature costs of
benchmarks/datasets.py: ``letters`` (16 features, cost 1 each, 26 classes),
``mnist_multires`` (1120 pixels of MNIST at 4x4, 8x8, 16x16 and 28x28, cost 1 each, 10
classes) and ``synthetic_costly`` (binary, 32 features with costs 1..200, four per cost
level, cheap features suffice for most inputs; the Yahoo!-like cost problem of the CEGB
issue).

Methods and settings (``method_params``)
---------------------------------------
* Greedy Miser: stage-wise regression with the paper's settings, which are cbudget's
  defaults for ``greedy_miser``: depth-limited CART regression trees (depth 4,
  level by level, at least 20 rows per leaf, leaves = mean residual, no L2), first-order
  steps of size 0.1 on the residuals (negative gradients) of the log-loss (softmax
  for the multi-class sets: one tree per class and round, the paper's multi-class
  log-loss; logistic for the binary set); a tree's impurity is
  ``1/2 sum_i (r_i - h(x_i))^2 + lambda * sum of the costs of the features it uses for
  the first time in the model`` (a feature is paid once per model). ``GM_ROUNDS`` rounds,
  lambdas ``GM_LAMBDAS`` (a different scale from CEGB's: the penalty is paid once per
  model against a loss decrease summed over all training rows).
* CEGB: the settings and the lambda sweep of ``bench_cegb.py`` (best-first trees of 31
  leaves, learning rate 0.1, L2 1, per-input "lazy" feature costs, its
  ``DEFAULT_ROUNDS`` / ``DEFAULT_LAMBDAS``).
* Plain boosting: cbudget ``gbdt`` and LightGBM with the matched settings of
  ``_common.library_params`` (best-first trees of 31 leaves, learning rate 0.1, L2 1,
  255 bins; LightGBM ``deterministic=True`` with ``bench_cegb.LIGHTGBM_LAYOUT``), the
  rounds of CEGB.

All runs: 2 threads, seed 0, no subsampling, one child process per (method, data set,
lambda), training on the training split without evaluation sets.

Selection and measurements
--------------------------
As in the paper, every run is evaluated after each round on the validation split and the
round with the best validation accuracy is selected (ties: the earliest, cheapest one);
test figures are reported at that round. The staged evaluation is one routine for both
libraries: each library's leaf indices (``pred_leaf``) and leaf values give the raw
scores round by round (checked against the library's own raw prediction with all
rounds), and ``_common.CostTrace`` gives the per-input prediction cost round by round
(ARCHITECTURE section 2: each feature paid once per input, the first time any node on the
input's paths through the trees so far tests it; the same definition as
``_common.prediction_costs`` in ``bench_cegb.py``). For every cbudget run the script
asserts that the per-input test costs at the selected round equal
``booster.predict_cost`` and the features used equal ``booster.used_features``, and
reports whether the selected round is cbudget's ``best_iteration_within_budget(dvalid,
inf, metric="merror"/"error")``.

Reported per run at the selected round: validation and test accuracy (AUC on the binary
set), mean test prediction cost per input (adaptive: an input pays only for the features
on its own paths), the model-level cost (sum of the costs of the features the model uses:
what the paper's evaluation charges, every input pays it), features used and their
fractions per cost level (per resolution on MNIST: the paper's Fig. 2), the selected
round, training time (data set construction included, to the return of ``train()``).
Per round (thinned to about 200 rounds): validation and test accuracy, mean test
cost, model-level cost: the paper's dashed traces. Per data set: for every Greedy Miser
point, CEGB's best test accuracy among its points whose mean cost is at most Greedy
Miser's, CEGB's interpolated curve at that cost, and whether CEGB dominates (the CEGB
paper reports it does); the same on the model-level cost.

Writes ``<output>.md``, ``<output>.json`` (raw, one object per child) and ``<output>.png``
(test accuracy vs mean cost and vs model-level cost) when matplotlib is installed.

Usage::

    PYTHONPATH=. python benchmarks/bench_greedy_miser.py --output /tmp/gm.md   # full run
    PYTHONPATH=. python benchmarks/bench_greedy_miser.py --quick               # < 2 min
    PYTHONPATH=. python benchmarks/bench_greedy_miser.py --datasets letters \\
        --methods greedy_miser,cegb --gm-lambdas 0,10,100 --gm-rounds 300
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
    benchmark_parser,
    COST_DATASETS, DATASET_TITLES, SMOKE_BANNER, SYNTHETIC_ROWS, CostTrace, PathTables,
    add_data_arguments, parse_run_args, attempts_text, cbudget_leaf_paths, cost_fields,
    dominance, finish_run, fmt, interpolated_accuracy, library_params, library_version,
    lightgbm_leaf_paths, load_for_child, maxrss_bytes, parse_lambdas, reference_notes,
    rendered_from_note, results_header, run_child_command, run_jobs,
    start_run, subplot_grid, timed_training, train_cbudget_timed, train_lightgbm_timed,
    write_json, parse_choices)
from bench_cegb import (  # noqa: E402  (CEGB's settings, rounds and lambdas)
    DEFAULT_LAMBDAS as CEGB_LAMBDAS, DEFAULT_ROUNDS as CEGB_ROUNDS, LIGHTGBM_LAYOUT,
    QUICK as CEGB_QUICK, cegb_params)

METHODS = ("greedy_miser", "cegb", "gbdt", "lightgbm")
SWEPT = ("greedy_miser", "cegb")  # methods with a lambda sweep
METHOD_LABELS = {"greedy_miser": "Greedy Miser", "cegb": "CEGB", "gbdt": "cbudget gbdt",
                 "lightgbm": "LightGBM"}
LIBRARY = {"greedy_miser": "cbudget", "cegb": "cbudget", "gbdt": "cbudget",
           "lightgbm": "lightgbm"}

# Rounds and lambdas of Greedy Miser in the full run; the README ("Greedy Miser
# benchmark") says how they were chosen.
GM_ROUNDS = {"letters": 2000, "mnist_multires": 100, "synthetic_costly": 2000}
GM_LAMBDAS = {
    "letters": (0.0, 3.0, 10.0, 20.0, 30.0, 45.0, 60.0, 80.0),
    "mnist_multires": (0.0, 3.0, 10.0, 30.0, 100.0, 300.0),
    "synthetic_costly": (0.0, 0.1, 0.3, 1.0, 3.0, 10.0, 30.0),
}
PLAIN_ROUNDS = CEGB_ROUNDS  # plain boosting: the rounds of CEGB, the same trees
QUICK = {"gm_rounds": {"letters": 40, "mnist_multires": 6, "synthetic_costly": 40},
         "gm_lambdas": {"letters": (0.0, 10.0), "mnist_multires": (0.0, 10.0),
                        "synthetic_costly": (0.0, 0.1)},
         "cegb_rounds": CEGB_QUICK["rounds"],
         "cegb_lambdas": {"letters": (0.0, 0.1), "mnist_multires": (0.0, 0.01),
                          "synthetic_costly": (0.0, 1e-3)},
         "plain_rounds": CEGB_QUICK["rounds"],
         "train_rows": 2000, "valid_rows": 1000, "test_rows": 1000, "n_rows": 20_000}
COST_CHECK_RTOL = 1e-9
MARGIN_CHECK_TOL = 1e-6
TRACE_POINTS = 100  # about twice this many rounds of each trace are kept in the JSON
BLOCK_ENTRIES = 4_000_000  # leaf indices per pred_leaf call of the staged evaluation


# ----------------------------------------------------------------------- settings
def method_params(method, dataset, n_classes, lam, feature_costs, n_threads=2,
                  gm_algorithm="greedy_miser"):
    """Training parameters of ``method`` (see the module docstring) for trade-off
    ``lam``; ``gm_algorithm="gbdt"`` is the development stand-in for Greedy Miser
    (plain boosting with its tree shape; lambda ignored)."""
    if method == "greedy_miser":
        base = library_params("cbudget", n_classes, n_threads)
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
        return dict(library_params("cbudget", n_classes, n_threads), algorithm="gbdt")
    if method == "lightgbm":
        return dict(library_params("lightgbm", n_classes, n_threads), deterministic=True,
                    **{LIGHTGBM_LAYOUT[dataset]: True})
    raise ValueError(f"unknown method {method!r}")


# ------------------------------------------------------------- model views
class CbudgetView:
    """What the staged evaluation needs from a cbudget Booster."""

    def __init__(self, booster):
        self.booster = booster
        self.indptr = np.asarray(booster.iteration_indptr, dtype=np.int64)
        self.outputs = np.asarray(booster.tree_outputs, dtype=np.int64)
        self.base_margin = np.asarray(booster.base_score, dtype=np.float64).reshape(-1)
        self.leaf_paths = [cbudget_leaf_paths(tree) for tree in booster.trees]
        self.leaf_values = [{leaf: float(tree["value"][leaf]) for leaf in paths}
                            for tree, paths in zip(booster.trees, self.leaf_paths)]

    def pred_leaf(self, X, r0, r1):
        return self.booster.predict(X, pred_leaf=True, iteration_range=(r0, r1))

    def margin(self, X):
        return np.asarray(self.booster.predict(X, output_margin=True)).reshape(X.shape[0], -1)


class LightGBMView:
    """What the staged evaluation needs from a LightGBM Booster (its initial score is
    folded into the first trees' leaf values)."""

    def __init__(self, booster):
        self.booster = booster
        k = booster.num_model_per_iteration()
        trees = booster.dump_model()["tree_info"]
        n_rounds = len(trees) // k
        self.indptr = np.arange(n_rounds + 1, dtype=np.int64) * k
        self.outputs = np.arange(len(trees), dtype=np.int64) % k
        self.base_margin = np.zeros(k)
        self.leaf_values = [{} for _ in trees]
        self.leaf_paths = [lightgbm_leaf_paths(t["tree_structure"], values)
                           for t, values in zip(trees, self.leaf_values)]

    def pred_leaf(self, X, r0, r1):
        return self.booster.predict(X, pred_leaf=True, start_iteration=r0,
                                    num_iteration=r1 - r0).reshape(X.shape[0], -1)

    def margin(self, X):
        return np.asarray(self.booster.predict(X, raw_score=True)).reshape(X.shape[0], -1)


def packed_leaf_values(view, tables):
    """Leaf values in the row layout of ``tables`` (row ``offsets[t] + leaf id``)."""
    values = np.zeros(tables.depths.shape[0])
    for offset, leaves in zip(tables.offsets.tolist(), view.leaf_values):
        for leaf, value in leaves.items():
            values[offset + leaf] = value
    return values


def _correct(margin, y):
    """Whether each input is classified right, for raw scores (n, n_outputs) or a stack
    of them (n, rounds, n_outputs): argmax, or score > 0 for one output (binary)."""
    y = y.reshape((-1,) + (1,) * (margin.ndim - 2))
    if margin.shape[-1] == 1:
        return (margin[..., 0] > 0) == (y == 1)
    return np.argmax(margin, axis=-1) == y


def staged_evaluation(view, tables, values, X, y, feature_costs=None, keep=None):
    """Accuracy of rounds ``0..r`` for every round ``r`` (and, with ``feature_costs``,
    the mean per-input prediction cost); with ``keep``, the raw scores, per-input costs
    and features acquired per input after round ``keep``.

    The raw scores add the leaf values tree after tree in the library's order (a
    cumulative sum over the rounds of a block when every round has one tree per output
    in output order, as for both libraries here), so they match the library's own
    prediction bit for bit or nearly.

    Returns (accuracy (n_rounds,), mean cost (n_rounds,) or None, kept dict or None).
    Raises AssertionError if the raw scores after the last round differ from the
    library's own."""
    n = X.shape[0]
    indptr = view.indptr
    n_rounds = indptr.shape[0] - 1
    margin = np.tile(view.base_margin, (n, 1))
    n_out = margin.shape[1]
    accuracy = np.zeros(n_rounds)
    trace = CostTrace(tables, feature_costs, n) if feature_costs is not None else None
    mean_cost = np.zeros(n_rounds) if trace else None
    kept = None
    uniform = (indptr[-1] == n_rounds * n_out
               and np.array_equal(view.outputs, np.arange(indptr[-1]) % n_out))
    per_round = max(1, int(indptr[-1]) // max(1, n_rounds))
    block = max(1, BLOCK_ENTRIES // max(1, n * per_round))
    for r0 in range(0, n_rounds, block):
        r1 = min(n_rounds, r0 + block)
        t0, t1 = int(indptr[r0]), int(indptr[r1])
        leaves = np.asarray(view.pred_leaf(X, r0, r1), dtype=np.int64)
        contrib = values[leaves + tables.offsets[t0:t1]]
        if uniform:  # scores after each round of the block at once
            stacked = np.concatenate(
                [margin[:, None, :], contrib.reshape(n, r1 - r0, n_out)], axis=1)
            scores = np.cumsum(stacked, axis=1)[:, 1:, :]
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
    used, n_used, cost = 0, [], []
    total = count = 0
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


def feature_groups(name, data):
    """Group label of every feature for the Fig. 2 table: the resolution prefix on MNIST
    (``r4``, ``r8``, ``r16``, ``r28``), else the cost level."""
    if name == "mnist_multires":
        return [f.split("_")[0] for f in data["feature_names"]]
    return [f"{c:g}" for c in data["feature_costs"]]


# ---------------------------------------------------------------------- children
def _train_cbudget(data, params, n_rounds, clock):
    return train_cbudget_timed(data, params, n_rounds, clock,
                               feature_names=data["feature_names"],
                               feature_costs=data["feature_costs"])


def run_child(args):
    """Train and measure one (method, data set, lambda); return the result dict."""
    method, name = args.method, args.dataset
    lam = None if args.lam == "none" else float(args.lam)
    library = LIBRARY[method]
    version, location = library_version(library)
    data, t_load, rss_after_load = load_for_child(name, args, keep_valid=True)
    costs = np.asarray(data["feature_costs"], dtype=np.float64)
    n_classes = int(data["n_classes"])
    params = method_params(method, name, n_classes, lam or 0.0, costs, args.threads,
                           args.gm_algorithm)
    n_rounds = int(args.rounds)
    trainer = _train_cbudget if library == "cbudget" else train_lightgbm_timed
    (booster, _, _, dtrain), timing = timed_training(trainer, data, params, n_rounds)

    t = time.perf_counter()
    view = CbudgetView(booster) if library == "cbudget" else LightGBMView(booster)
    if view.indptr.shape[0] - 1 != n_rounds:
        raise RuntimeError(f"the model has {view.indptr.shape[0] - 1} rounds, expected "
                           f"{n_rounds}")
    tables = PathTables(view.leaf_paths, costs.shape[0])
    values = packed_leaf_values(view, tables)
    X_valid, y_valid, X_test, y_test = (data["X_valid"], data["y_valid"], data["X_test"],
                                        data["y_test"])
    valid_acc, _, _ = staged_evaluation(view, tables, values, X_valid, y_valid)
    sel = int(np.argmax(valid_acc))  # the first round with the best validation accuracy
    test_acc, test_cost, kept = staged_evaluation(view, tables, values, X_test, y_test,
                                                  costs, keep=sel)
    n_used, model_cost = model_cost_trace(view, tables, costs)
    used_mask = 0
    for mask in tables.tree_masks[:int(view.indptr[sel + 1])]:
        used_mask |= mask
    used = np.array([m for m in range(costs.shape[0]) if used_mask >> m & 1], dtype=np.int64)
    cost, n_acquired = kept["cost"], kept["n_acquired"]
    t_eval = time.perf_counter() - t

    groups = feature_groups(name, data)
    group_sizes, used_by_group = {}, {}
    for g in groups:
        group_sizes[g] = group_sizes.get(g, 0) + 1
        used_by_group.setdefault(g, 0)
    for m in used.tolist():
        used_by_group[groups[m]] += 1
    keep_rounds = trace_rounds(n_rounds, sel)
    result = {
        "method": method, "library": library, "version": version, "location": location,
        "dataset": name, "lambda": lam, "n_train": int(data["X_train"].shape[0]),
        "n_valid": int(X_valid.shape[0]), "n_test": int(X_test.shape[0]),
        "n_features": int(costs.shape[0]), "n_classes": n_classes, "rounds": n_rounds,
        "n_trees": int(tables.n_trees), "params": params,
        "load_s": t_load, **timing, "n_threads": args.threads,
        "selected_iteration": sel,
        "valid_accuracy": float(valid_acc[sel]),
        "accuracy": float(test_acc[sel]),
        "mean_cost": float(test_cost[sel]),
        "model_cost": float(costs[used].sum()),
        "features_used": int(used.shape[0]),
        "final_accuracy": float(test_acc[-1]), "final_mean_cost": float(test_cost[-1]),
        "final_model_cost": float(model_cost[-1]), "final_features_used": int(n_used[-1]),
        **cost_fields(cost, n_acquired, costs, data, cut_test=bool(args.test_rows)),
        "used_by_group": used_by_group, "group_sizes": group_sizes,
        "trace": {"round": keep_rounds.tolist(),
                  "valid_accuracy": valid_acc[keep_rounds].tolist(),
                  "test_accuracy": test_acc[keep_rounds].tolist(),
                  "test_mean_cost": test_cost[keep_rounds].tolist(),
                  "model_cost": model_cost[keep_rounds].tolist(),
                  "features_used": n_used[keep_rounds].tolist()},
        "eval_s": t_eval,
        "rss_after_load_mb": rss_after_load / 2**20,
    }
    if costs.shape[0] <= 64:
        result["used_features"] = used.tolist()
    if library == "cbudget":
        result["checks"] = _check_cbudget(booster, dtrain, data, sel, cost, used, n_classes)
    if n_classes == 2:
        result["auc"] = datasets._auc(y_test, kept["margin"][:, 0])
    result["peak_rss_mb"] = maxrss_bytes() / 2**20
    return result


def _check_cbudget(booster, dtrain, data, sel, cost, used, n_classes):
    """The staged evaluation against cbudget's own selection and cost routines. Raises
    AssertionError if the per-input costs or the features used at the selected round
    differ; returns the comparison (a different best round, possible on exact ties of
    the accuracy only through rounding, is reported, not raised)."""
    import cbudget
    dvalid = cbudget.Dataset(data["X_valid"], data["y_valid"], reference=dtrain)
    choice = booster.best_iteration_within_budget(
        dvalid, float("inf"), metric="merror" if n_classes > 2 else "error")
    own = booster.predict_cost(data["X_test"], iteration_range=(0, sel + 1))
    own_used = np.asarray(booster.used_features((0, sel + 1)))
    checks = {"best_iteration_within_budget": choice.iteration,
              "same_selection": choice.iteration == sel,
              "predict_cost_max_abs_diff": float(np.max(np.abs(own - cost)))}
    if not np.allclose(own, cost, rtol=COST_CHECK_RTOL, atol=COST_CHECK_RTOL):
        raise AssertionError(f"per-input test costs differ from predict_cost: {checks}")
    if not np.array_equal(own_used, used):
        raise AssertionError(f"features used {used.tolist()} vs cbudget's "
                             f"{own_used.tolist()}")
    return checks


# ------------------------------------------------------------------------ parent
def launch_child(job, args, log):
    lam = job["lambda"]
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", "--method",
           job["method"], "--dataset", job["dataset"],
           "--lam", "none" if lam is None else repr(float(lam)),
           "--rounds", str(job["rounds"]), "--threads", str(args.threads),
           "--gm-algorithm", args.gm_algorithm]
    for option, value in (("--n-rows", args.n_rows), ("--train-rows", args.train_rows),
                          ("--valid-rows", args.valid_rows),
                          ("--test-rows", args.test_rows)):
        if value:
            cmd += [option, str(value)]
    ident = {k: job[k] for k in ("method", "dataset", "lambda", "rounds")}
    return run_child_command(cmd, args.child_timeout, log, job["label"], ident)


def point_label(r):
    """``Greedy Miser lambda=10`` / ``LightGBM``."""
    lam = r.get("lambda")
    return METHOD_LABELS[r["method"]] + ("" if lam is None else f" lambda={lam:g}")


def _sorted_runs(results):
    order = {m: i for i, m in enumerate(METHODS)}
    return sorted(results, key=lambda r: (order[r["method"]], r.get("lambda") or 0.0))


COST_KEYS = (("mean_cost", "mean cost"), ("model_cost", "model cost"))


def _dominance_table(gm, cegb, cost_key, cost_name):
    """(Markdown lines, verdict): for each Greedy Miser point, CEGB's best accuracy at
    cost <= and its interpolated curve; then the verdict line."""
    lines = [f"| GM lambda | GM {cost_name} | GM accuracy | CEGB best accuracy at "
             f"{cost_name} <= | its lambda / {cost_name} | difference CEGB - GM | CEGB >= GM "
             f"| CEGB curve at this cost | difference |",
             "|---:|---:|---:|---:|---:|---:|:---:|---:|---:|"]
    dom = dominance(cegb, gm, cost_key=cost_key)
    n_curve = n_curve_ok = 0
    worst = None
    for d in dom:
        g, c = d["reference"], d["best"]
        curve = interpolated_accuracy(cegb, g[cost_key], cost_key=cost_key)
        if curve is not None:
            n_curve += 1
            n_curve_ok += curve >= g["accuracy"]
        if c is not None and not d["ok"]:
            gap = g["accuracy"] - c["accuracy"]
            if worst is None or gap > worst[0]:
                worst = (gap, g)
        lines.append(
            f"| {g['lambda']:g} | {g[cost_key]:,.2f} | {g['accuracy']:.4f} | "
            + (f"{c['accuracy']:.4f} | {c['lambda']:g} / {c[cost_key]:,.2f} | "
               f"{c['accuracy'] - g['accuracy']:+.4f} | " if c
               else "no CEGB point this cheap | | | ")
            + ("yes" if d["ok"] else "no") + " | "
            + (f"{curve:.4f} | {curve - g['accuracy']:+.4f} |" if curve is not None
               else " | |"))
    n_ok = sum(d["ok"] for d in dom)
    n_none = sum(d["best"] is None for d in dom)
    verdict = ("**yes**" if n_ok == len(dom) else
               "**yes where CEGB has points**" if n_ok + n_none == len(dom) else "**no**")
    if len(dom) - n_ok - n_none:
        verdict += (f": at {len(dom) - n_ok - n_none} of {len(dom)} GM points every CEGB "
                    f"point at most as expensive is less accurate (largest margin "
                    f"{worst[0]:+.4f} for GM, at lambda={worst[1]['lambda']:g}, {cost_name} "
                    f"{worst[1][cost_key]:,.2f})")
    if n_none:
        verdict += (";" if len(dom) - n_ok - n_none else ":") + (
            f" {n_none} GM point(s) cheaper than every CEGB point")
    verdict = (f"CEGB dominates Greedy Miser on the {cost_name}: {verdict}. CEGB's best "
               f"point at {cost_name} <= GM's is at least as accurate at {n_ok} of "
               f"{len(dom)} GM points; CEGB's interpolated curve is at least as accurate at "
               f"{n_curve_ok} of {n_curve} GM points within its cost range.")
    return lines + ["", f"- {verdict}"], verdict


def verdicts(results):
    """The dominance verdicts of one data set (mean cost, model cost); [] without both
    Greedy Miser and CEGB runs."""
    ok = [r for r in results if "error" not in r]
    gm = [r for r in ok if r["method"] == "greedy_miser"]
    cegb = [r for r in ok if r["method"] == "cegb"]
    if not (gm and cegb):
        return []
    return [_dominance_table(gm, cegb, key, cost_name)[1] for key, cost_name in COST_KEYS]


def _groups_table(ok, name):
    """The paper's Fig. 2: per run, the fraction of the features of each cost level
    (resolution on MNIST) that the selected model uses."""
    first = ok[0]
    groups = list(first["group_sizes"])
    if name != "mnist_multires":
        groups.sort(key=float)
    head = "cost level (features)" if name != "mnist_multires" else "resolution (pixels)"
    lines = [f"Features used by the selected model, as a fraction of the features of each "
             f"{head.split(' (')[0]} (the paper's Fig. 2; column headers: "
             f"{head}):", "",
             "| run | test accuracy | mean cost | model cost | "
             + " | ".join(f"{g} ({first['group_sizes'][g]})" for g in groups) + " |",
             "|---|---:|---:|---:|" + "---:|" * len(groups)]
    for r in _sorted_runs(ok):
        lines.append(f"| {point_label(r)} | {r['accuracy']:.4f} | {r['mean_cost']:,.2f} | "
                     f"{r['model_cost']:,.0f} | "
                     + " | ".join(f"{r['used_by_group'][g] / r['group_sizes'][g]:.2f}"
                                  for g in groups) + " |")
    return lines + [""]


def dataset_section(name, results):
    """Markdown section for one data set."""
    ok = [r for r in results if "error" not in r]
    lines = []
    first = ok[0] if ok else None
    size = (f"{first['n_train']:,} train / {first['n_valid']:,} valid / "
            f"{first['n_test']:,} test rows, {first['n_features']} features"
            if first else "")
    lines += [f"### {DATASET_TITLES.get(name, name)}: {size}", ""]
    binary = bool(first) and first["n_classes"] == 2
    head = ["method", "lambda", "rounds", "selected round", "valid accuracy",
            "test accuracy"] + (["test AUC"] if binary else []) + [
        "mean test cost", "model cost", "features used", "train s",
        "all rounds: test accuracy / mean cost"]
    lines += ["| " + " | ".join(head) + " |", "|---|" + "---:|" * (len(head) - 1)]
    for r in _sorted_runs(ok):
        lam = r.get("lambda")
        row = [METHOD_LABELS[r["method"]], "-" if lam is None else f"{lam:g}",
               str(r["rounds"]), str(r["selected_iteration"] + 1),
               f"{r['valid_accuracy']:.4f}", f"{r['accuracy']:.4f}"]
        if binary:
            row.append(fmt(r.get("auc"), ".4f"))
        row += [f"{r['mean_cost']:,.2f}", f"{r['model_cost']:,.0f}", str(r["features_used"]),
                f"{r['train_s']:.1f}",
                f"{r['final_accuracy']:.4f} / {r['final_mean_cost']:,.2f}"]
        lines.append("| " + " | ".join(row) + " |")
    lines.append("")
    for r in results:
        if "error" in r:
            lines.append(f"- {point_label(r)} failed: {r['error']}")
    if any("error" in r for r in results):
        lines.append("")

    gm = [r for r in ok if r["method"] == "greedy_miser"]
    cegb = [r for r in ok if r["method"] == "cegb"]
    if gm and cegb:
        lines += ["Accuracy at equal or lower cost: for each Greedy Miser (GM) point, CEGB's "
                  "best test accuracy among its points whose mean test cost per input is at "
                  "most GM's, and CEGB's curve read at exactly GM's cost (linear between its "
                  "two neighbouring points in log(1 + cost); empty outside its range).", ""]
        lines += _dominance_table(gm, cegb, *COST_KEYS[0])[0]
        lines += ["", "The same on the model-level cost (sum of the costs of the features "
                  "the model uses; what a non-adaptive evaluation pays per input, Greedy "
                  "Miser's own budget):", ""]
        lines += _dominance_table(gm, cegb, *COST_KEYS[1])[0]
        lines.append("")
    notes = _notes(ok, gm)
    lines += [f"- {n}" for n in notes]
    if notes:
        lines.append("")
    if ok:
        lines += _groups_table(ok, name)
    return "\n".join(lines)


def _notes(ok, gm):
    notes = []
    plain = {r["method"]: r for r in ok if r["method"] in ("gbdt", "lightgbm")}
    gm0 = next((r for r in gm if r["lambda"] == 0), None)
    if gm0 and plain:
        notes.append("Greedy Miser lambda=0 (stage-wise regression, no cost penalty) vs plain "
                     "boosting: " + "; ".join(
                         f"{METHOD_LABELS[m]} {r['accuracy']:.4f} (difference "
                         f"{gm0['accuracy'] - r['accuracy']:+.4f}), mean cost "
                         f"{r['mean_cost']:,.2f} vs {gm0['mean_cost']:,.2f}"
                         for m, r in plain.items()) + ".")
    late = [r for r in ok if r["selected_iteration"] + 1 > 0.95 * r["rounds"]]
    if late:
        notes.append("Selected in the last 5% of the rounds (validation accuracy still "
                     "rising; more rounds may help): " + ", ".join(
                         f"{point_label(r)} ({r['selected_iteration'] + 1} of {r['rounds']})"
                         for r in _sorted_runs(late)) + ".")
    checks = [r for r in ok if "checks" in r]
    if checks:
        differ = [r for r in checks if not r["checks"]["same_selection"]]
        notes.append(
            "Checks on every cbudget run: per-input test costs at the selected round equal "
            "`predict_cost` (max |difference| "
            f"{max(r['checks']['predict_cost_max_abs_diff'] for r in checks):.3g}) and the "
            "features used equal `used_features`; the selected round is cbudget's "
            "`best_iteration_within_budget(dvalid, inf)` "
            + ("in every run." if not differ else "except for " + ", ".join(
                f"{point_label(r)} (round {r['checks']['best_iteration_within_budget'] + 1} "
                f"there, an exact tie)" for r in differ) + "."))
    if ok:
        notes.append(f"Full cost (every feature for every input): {ok[0]['full_cost']:,.0f}.")
    notes += reference_notes(_sorted_runs(ok), point_label)
    for r in _sorted_runs(ok):
        notes.append(
            f"{point_label(r)}: data set build {r['dataset_build_s']:.2f} s, CPU/wall "
            f"{r['train_cpu_s'] / max(r['train_s'], 1e-9):.2f}, other processes "
            f"{r['other_cores_during_train']:.2f} cores{attempts_text(r)}, staged "
            f"evaluation {r['eval_s']:.1f} s, features acquired per input "
            f"{r['mean_features_acquired']:.1f}, cost quantiles 10/50/90% "
            f"{r['cost_quantiles']['0.1']:,.1f} / {r['cost_quantiles']['0.5']:,.1f} / "
            f"{r['cost_quantiles']['0.9']:,.1f}, peak RSS {r['peak_rss_mb']:.0f} MB")
    return notes


SETTINGS_TEXT = """\
Methods ({threads} thread(s), seed 0, no subsampling, 255 bins, no evaluation set during
training; one child process per run):

* **Greedy Miser** (cbudget `algorithm="{gm_algorithm}"`): stage-wise regression on the
  log-loss residuals (softmax, one tree per class and round, for the multi-class sets),
  depth-4 CART trees grown level by level (leaves = mean residual, no L2, at least 20
  rows per leaf), step 0.1; a tree's impurity is 1/2 sum (r_i - h(x_i))^2 + lambda *
  (costs of the features it uses for the first time in the model): each feature is paid
  once per model. Rounds: {gm_rounds}.
* **CEGB** (cbudget `algorithm="cegb"`): the settings of `bench_cegb.py`: best-first trees
  of at most 31 leaves, learning rate 0.1, L2 1, at least 20 rows and 1e-3 hessian per
  leaf; per-input ("lazy") feature costs times lambda in the split gain. Rounds:
  {cegb_rounds}.
* **Plain boosting**: cbudget `algorithm="gbdt"` and LightGBM {lightgbm_version} with the
  same tree settings as CEGB and no cost penalty (LightGBM `deterministic=True` with a
  forced histogram layout). Rounds: {plain_rounds}.

Every run is evaluated after each round on the validation split; the round with the best
validation accuracy is selected (the earliest on ties) and the tables give test figures
at that round, as in the paper ("for each setting we choose the iteration that has the
best validation accuracy"). *mean test cost*: mean over the test inputs of the
prediction cost per input (each feature paid once per input, the first time any node on
the input's paths through the selected trees tests it; one routine for both libraries,
checked against cbudget's `predict_cost`). *model cost*: the sum of the costs of the
features the selected model uses (what every input pays when all used features are
computed up front, the paper's own accounting). *train s*: wall time from just before
the library's data set is built (binning included) to the return of `train()`.

**How to read.** Each lambda gives one point (accuracy, cost) per method: the two
curves of the plot join the Greedy Miser and the CEGB points, the dashed lines are the
round-by-round traces of each Greedy Miser run (test accuracy vs cost after every
round, the paper's Fig. 1 left) and single markers are plain boosting. A method
*dominates* another when, at every cost level of the other, one of its points is at
least as accurate at no more cost; the tables below check this for CEGB against Greedy
Miser, first on the mean test cost per input (CEGB's criterion, which Greedy Miser does
not optimise: its penalty is per model) and then on the model-level cost (Greedy Miser's
criterion). The last table of each data set is the paper's Fig. 2: as lambda grows,
Greedy Miser should use fewer and cheaper features.
"""


def _describe_rounds(plan, method):
    parts = [f"{DATASET_TITLES.get(d, d).split(' (')[0]} {p[method][0]}"
             for d, p in plan.items() if method in p]
    return ", ".join(parts) if parts else "not run"


def render(results_by_dataset, info, command, wall_s, quick, threads, gm_algorithm, plan):
    banners = []
    if quick:
        banners.append(SMOKE_BANNER)
    if gm_algorithm != "greedy_miser":
        banners.append(f"**Greedy Miser ran as `algorithm=\"{gm_algorithm}\"` (development "
                       "stand-in with its tree shape): its lambda has no effect.**")
    busy = [(f"{point_label(r)} / {r['dataset']}", r["other_cores_during_train"])
            for rs in results_by_dataset.values() for r in rs if "error" not in r]
    out = results_header("Greedy Miser benchmark: accuracy vs feature cost (vs CEGB and "
                         "plain boosting)", command, info, wall_s, busy, banners)
    out.append(SETTINGS_TEXT.format(
        threads=threads, gm_algorithm=gm_algorithm,
        gm_rounds=_describe_rounds(plan, "greedy_miser"),
        cegb_rounds=_describe_rounds(plan, "cegb"),
        plain_rounds=_describe_rounds(plan, "gbdt"),
        lightgbm_version=info.get("lightgbm", "")))
    summary = [f"- {DATASET_TITLES.get(name, name).split(' (')[0]}: {v}"
               for name, results in results_by_dataset.items() for v in verdicts(results)]
    if summary:
        out += ["**Summary** (details and the other comparisons under each data set):", ""]
        out += summary + [""]
    for name, results in results_by_dataset.items():
        out.append(dataset_section(name, results))
    return "\n".join(out)


PLOT_STYLE = {"greedy_miser": ("o-", "tab:red"), "cegb": ("s-", "tab:blue"),
              "gbdt": ("^", "black"), "lightgbm": ("D", "tab:green")}


def plot(results_by_dataset, path, title_suffix=""):
    """Test accuracy vs mean test cost (top row) and vs model-level cost (bottom row),
    one column per data set; returns the path or None when matplotlib is missing."""
    grid = subplot_grid(results_by_dataset, n_rows=2, panel=(5.4, 4.2))
    if grid is None:
        return None
    plt, fig, axes, names = grid
    for col, name in enumerate(names):
        ok = [r for r in results_by_dataset[name] if "error" not in r]
        low = min(r["accuracy"] for r in ok)
        high = max(max(r["accuracy"], max(r["trace"]["test_accuracy"])) for r in ok)
        for row, (key, trace_key, xlabel) in enumerate((
                ("mean_cost", "test_mean_cost", "mean prediction cost per test input"),
                ("model_cost", "model_cost", "model cost (sum of costs of features used)"))):
            ax = axes[row][col]
            gm = sorted((r for r in ok if r["method"] == "greedy_miser"),
                        key=lambda r: r["lambda"])
            colors = plt.cm.autumn(np.linspace(0, 0.8, max(1, len(gm))))
            for r, color in zip(gm, colors):
                ax.plot(r["trace"][trace_key], r["trace"]["test_accuracy"], "--",
                        color=color, linewidth=0.8, alpha=0.7)
            for method in METHODS:
                rs = sorted((r for r in ok if r["method"] == method), key=lambda r: r[key])
                if not rs:
                    continue
                style, color = PLOT_STYLE[method]
                ax.plot([r[key] for r in rs], [r["accuracy"] for r in rs], style,
                        color=color, label=METHOD_LABELS[method], markersize=5)
                if method in SWEPT:
                    for r in rs:
                        ax.annotate(f"{r['lambda']:g}", (r[key], r["accuracy"]),
                                    textcoords="offset points", xytext=(3, 3), fontsize=6,
                                    color=color)
            ax.set_xscale("symlog", linthresh=1.0)
            ax.set_ylim(max(0.0, low - 0.05 * max(high - low, 0.02)),
                        min(1.0, high + 0.05 * max(high - low, 0.02)))
            ax.set_xlabel(xlabel)
            ax.set_ylabel("test accuracy")
            ax.set_title(DATASET_TITLES.get(name, name).split(" (")[0], fontsize=10)
            ax.grid(True, alpha=0.3)
            ax.legend(fontsize=7, loc="lower right")
    fig.suptitle("Greedy Miser vs CEGB: test accuracy at the best validation round\n(labels: "
                 "lambda; dashed: Greedy Miser round by round)" + title_suffix, fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _plot_suffix(quick, gm_algorithm):
    return ((" - smoke run (--quick)" if quick else "")
            + (f" - GM {gm_algorithm} stand-in" if gm_algorithm != "greedy_miser" else ""))


def _finish(text, results, output, quick, gm_algorithm):
    png = plot(results, output.with_suffix(".png"), _plot_suffix(quick, gm_algorithm))
    if png:
        text += (f"\nPlot: `{png.name}` (test accuracy vs mean test cost, top, and vs model "
                 "cost, bottom; symlog cost axes).\n")
    print(text)
    output.write_text(text)
    return png


def build_plan(args, names, methods):
    """``{data set: {method: (rounds, [lambda, ...] or [None])}}``."""
    quick = args.quick
    plan = {}
    for d in names:
        plan[d] = {}
        for method in methods:
            if method == "greedy_miser":
                rounds = args.gm_rounds or (QUICK["gm_rounds"] if quick else GM_ROUNDS)[d]
                lambdas = (parse_lambdas(args.gm_lambdas) if args.gm_lambdas else
                           list((QUICK["gm_lambdas"] if quick else GM_LAMBDAS)[d]))
            elif method == "cegb":
                rounds = args.cegb_rounds or (QUICK["cegb_rounds"] if quick else CEGB_ROUNDS)[d]
                lambdas = (parse_lambdas(args.cegb_lambdas) if args.cegb_lambdas else
                           list((QUICK["cegb_lambdas"] if quick else CEGB_LAMBDAS)[d]))
            else:
                rounds = args.plain_rounds or (QUICK["plain_rounds"] if quick
                                               else PLAIN_ROUNDS)[d]
                lambdas = [None]
            plan[d][method] = (rounds, lambdas)
    return plan


def main(argv=None):
    parser = benchmark_parser(__doc__, COST_DATASETS, "--method", "--dataset", "--lam", "--rounds")
    parser.add_argument("--methods", default=",".join(METHODS),
                        help="comma-separated subset of " + ",".join(METHODS))
    parser.add_argument("--gm-lambdas", default=None,
                        help="Greedy Miser trade-off values for every data set (default "
                             "per data set, GM_LAMBDAS)")
    parser.add_argument("--gm-rounds", type=int, default=None,
                        help="Greedy Miser rounds for every data set (default per data "
                             "set: " + ", ".join(f"{k} {v}" for k, v in GM_ROUNDS.items())
                             + ")")
    parser.add_argument("--cegb-lambdas", default=None,
                        help="CEGB trade-off values for every data set (default: "
                             "bench_cegb.DEFAULT_LAMBDAS)")
    parser.add_argument("--cegb-rounds", type=int, default=None,
                        help="CEGB rounds (default: bench_cegb.DEFAULT_ROUNDS)")
    parser.add_argument("--plain-rounds", type=int, default=None,
                        help="rounds of plain boosting (default: CEGB's)")
    add_data_arguments(parser, SYNTHETIC_ROWS, valid=True)
    parser.add_argument("--gm-algorithm", default="greedy_miser",
                        choices=("greedy_miser", "gbdt"),
                        help="cbudget algorithm of the Greedy Miser runs (gbdt: development "
                             "stand-in with its tree shape, lambda ignored)")
    parser.add_argument("--output", default=None,
                        help="Markdown output (default benchmarks/results/greedy_miser.md, "
                             "greedy_miser_quick.md with --quick); .json and .png go next "
                             "to it")
    parser.add_argument("--quick", action="store_true",
                        help=f"smoke run: {QUICK['train_rows']:,} training, "
                             f"{QUICK['valid_rows']:,} validation and {QUICK['test_rows']:,} "
                             f"test rows, {QUICK['n_rows']:,} synthetic rows, few rounds, "
                             "2 lambdas per method")
    args, mode = parse_run_args(parser, argv, run_child, render_from, QUICK,
                                ("n_rows", "train_rows", "valid_rows", "test_rows"))
    if mode is not None:
        return mode
    names = parse_choices(parser, args.datasets, COST_DATASETS, "data set")
    methods = parse_choices(parser, args.methods, METHODS, "method")
    for option in ("gm_rounds", "cegb_rounds", "plain_rounds"):
        if getattr(args, option) is not None and getattr(args, option) < 1:
            parser.error(f"--{option.replace('_', '-')} must be >= 1")
    plan = build_plan(args, names, methods)

    output = Path(args.output) if args.output else (
        REPO / "benchmarks" / "results" / ("greedy_miser_quick.md" if args.quick
                                           else "greedy_miser.md"))
    command, info, log = start_run(output)
    extra = {"plan": {d: {m: {"rounds": r, "lambdas": ls} for m, (r, ls) in p.items()}
                      for d, p in plan.items()},
             "threads": args.threads, "gm_algorithm": args.gm_algorithm}
    # per data set: plain boosting first, then the Greedy Miser and the CEGB sweeps
    order = [m for m in ("gbdt", "lightgbm", "greedy_miser", "cegb") if m in methods]
    jobs = []
    for d in names:
        for m in order:
            rounds, lambdas = plan[d][m]
            for lam in lambdas:
                label = (f"{d} / {METHOD_LABELS[m]}" + ("" if lam is None else
                                                         f" / lambda={lam:g}")
                         + f" / {rounds} rounds")
                jobs.append((d, {"method": m, "dataset": d, "lambda": lam,
                                 "rounds": rounds, "label": label}))
    t_start = time.perf_counter()
    results = run_jobs(
        jobs, lambda job: launch_child(job, args, log), args, log,
        lambda res: write_json(output, command, info, res, time.perf_counter() - t_start,
                               args.quick, **extra),
        lambda r: (f"train {r['train_s']:.2f} s, eval {r['eval_s']:.1f} s, selected round "
                   f"{r['selected_iteration'] + 1}, accuracy {r['accuracy']:.4f}, mean cost "
                   f"{r['mean_cost']:,.2f}, model cost {r['model_cost']:,.0f}, features "
                   f"used {r['features_used']}"))
    wall = time.perf_counter() - t_start
    write_json(output, command, info, results, wall, args.quick, **extra)
    text = render(results, info, command, wall, args.quick, args.threads, args.gm_algorithm,
                  plan)
    png = _finish(text, results, output, args.quick, args.gm_algorithm)
    return finish_run(output, png, wall, log, results)


def render_from(path, output=None):
    """Re-render the Markdown (and the plot) of an earlier run from its raw JSON."""
    doc = json.loads(path.read_text())
    plan = {d: {m: (v["rounds"], v["lambdas"]) for m, v in p.items()}
            for d, p in doc["plan"].items()}
    text = render(doc["results"], doc["machine"], doc["command"], doc["wall_s"],
                  doc.get("quick"), doc.get("threads", 2), doc["gm_algorithm"], plan)
    text = rendered_from_note(text, path)
    output = Path(output) if output else path.with_suffix(".md")
    _finish(text, doc["results"], output, doc.get("quick"), doc["gm_algorithm"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
