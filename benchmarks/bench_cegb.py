"""CEGB benchmark: cbudget's cost-efficient gradient boosting vs LightGBM's built-in CEGB.

Both libraries train the same boosted models with per-input ("lazy") feature costs
(ARCHITECTURE section 2; Peter et al., NIPS 2017) over a sweep of trade-off values
lambda, on three data sets with feature costs (benchmarks/datasets.py):
``letters`` (16 features, cost 1 each, 26 classes), ``mnist_multires`` (1120 pixels of
MNIST at 4x4, 8x8, 16x16 and 28x28, cost 1 each, 10 classes) and ``synthetic_costly``
(binary, 32 features with costs 1..200, cheap features suffice for most inputs).

Settings (both libraries, see ``cegb_params``): best-first trees of 31 leaves, learning
rate 0.1, L2 lambda 1, at least 20 rows and 1e-3 hessian per leaf, 255 bins, no row or
column subsampling, 2 threads, seed 0, deterministic (LightGBM ``deterministic=True``
with the histogram layout its automatic test picks for the data set on this machine,
fixed in ``LIGHTGBM_LAYOUT``), the same number of rounds, no validation set during
training.

Parameter mapping (checked against LightGBM's source, src/treelearner/
cost_effective_gradient_boosting.hpp, ``DetlaGain``, and feature_histogram.hpp)
-------------------------------------------------------------------------------
cbudget scores a candidate split of leaf p on feature m with eq. (12) of the paper::

    0.5 * (G_L^2/(H_L+l2) + G_R^2/(H_R+l2) - G_p^2/(H_p+l2))
        - cost_tradeoff * (split_cost * |I_p| + coupled[m] * [m unused by the model]
                           + feature_costs[m] * #(inputs in p that have not acquired m))

LightGBM's split gain is ``G_L^2/(H_L+l2) + G_R^2/(H_R+l2) - G_p^2/(H_p+l2)``
(``GetLeafGain`` = G^2/(H+l2), no factor 1/2; SplitInfo.gain = best_gain -
min_gain_shift) and ``SerialTreeLearner`` subtracts ``DetlaGain`` =
``cegb_tradeoff * cegb_penalty_split * num_data_in_leaf``
``+ cegb_tradeoff * cegb_penalty_feature_coupled[m]`` (while m is unused by the model)
``+ cegb_tradeoff * sum over the leaf's rows whose bit (m, row) is not set of
cegb_penalty_feature_lazy[m]``; after a split on m, every row of the split leaf gets
bit (m, row); the bits and the used-feature flags live for the whole training (all
trees, all classes). So LightGBM's criterion is exactly twice cbudget's when

    cegb_tradeoff = 2 * cost_tradeoff, cegb_penalty_feature_lazy = feature_costs,
    cegb_penalty_split = split_cost, cegb_penalty_feature_coupled = coupled_costs

and both pick the same splits (ties and float rounding aside; checked on the synthetic
set: LightGBM's dumped ``split_gain``, which is net of ``DetlaGain``, is twice cbudget's
gain minus penalty to 0.1%). A lambda in the tables is cbudget's ``cost_tradeoff``;
LightGBM runs with twice that value.

Caveat (the objectives, not CEGB): for multiclass, LightGBM's softmax hessian is
``K/(K-1) * p * (1-p)`` (multiclass_objective.hpp, ``factor_``), cbudget's ``p * (1-p)``,
so LightGBM's gains are up to K/(K-1) smaller (1.04 for Letters, 1.11 for MNIST; on 500
Letters rows its root gains were 0.975 x twice cbudget's) and the same lambda penalises
its splits a little more. The comparison at equal cost (the dominance table) does not
depend on the lambda mapping.

lambda = 0 still runs both CEGB code paths (cbudget ``algorithm="cegb"``, LightGBM with
the lazy penalty vector and ``cegb_tradeoff=0``, which keeps its CEGB learner on): the
models are plain boosting, the time includes the bookkeeping. Coupled costs are not
used here (all zero) and ``--split-cost`` defaults to 0.

Measurements (one child process per (library, data set, lambda)):

* training time: wall time from just before the library's data set object is built from
  the numpy arrays (binning included) to the return of ``train()`` (cbudget's
  training-cost summary and LightGBM's model round trip included); per-round times;
* test accuracy (and AUC for the binary set) with all rounds;
* prediction cost per test input, ARCHITECTURE section 2, computed by ONE routine for
  both libraries (``_common.prediction_costs``): each library's ``pred_leaf`` matrix
  plus, per tree, a table leaf -> bit mask of the features on its root-to-leaf path
  (cbudget ``booster.trees``, LightGBM ``booster.dump_model()``); the masks of the
  leaves an input reaches are OR-ed over all trees and the costs of the set bits summed
  (plus split_cost per split node visited). For cbudget the script asserts that this
  equals ``booster.predict_cost(X_test)``. Reported: mean cost, features acquired per
  input, features used by the model.

The parent writes ``<output>.md`` (tables per data set: accuracy and cost per lambda;
for every LightGBM point (cost c, accuracy a), cbudget's best accuracy among its points
with cost <= c; training time ratio cbudget / LightGBM per lambda), ``<output>.json``
(raw) and ``<output>.png`` (accuracy vs mean cost) if matplotlib is installed.

Usage::

    PYTHONPATH=. python benchmarks/bench_cegb.py                     # full run (~35-40 min)
    PYTHONPATH=. python benchmarks/bench_cegb.py --quick             # smoke run, < 1 min
    PYTHONPATH=. python benchmarks/bench_cegb.py --datasets letters --lambdas 0,0.01,0.1
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
    COST_DATASETS, DATASET_TITLES, LIBRARY_LABELS, SMOKE_BANNER, SYNTHETIC_ROWS,
    PathTables, add_data_arguments, parse_run_args, attempts_text, cbudget_leaf_paths,
    cost_fields, dominance, finish_run, fmt, interpolated_accuracy, library_params,
    library_version, lightgbm_leaf_paths, load_for_child, loadavg, maxrss_bytes,
    parse_lambdas, prediction_costs, ratio, reference_notes, write_rerendered,
    results_header, run_child_command, run_jobs, start_run, subplot_grid,
    timed_training, train_cbudget_timed, train_lightgbm_timed, write_json, parse_choices)

LIBRARIES = ("cbudget", "lightgbm")
DATASETS = COST_DATASETS

# Rounds and lambdas (cbudget cost_tradeoff; LightGBM gets twice) of the full run. The
# README ("CEGB benchmark") says how they were chosen.
DEFAULT_ROUNDS = {"letters": 200, "mnist_multires": 60, "synthetic_costly": 200}
DEFAULT_LAMBDAS = {
    "letters": (0.0, 0.01, 0.03, 0.06, 0.1, 0.15, 0.2),
    "mnist_multires": (0.0, 0.001, 0.003, 0.01, 0.03, 0.1),
    "synthetic_costly": (0.0, 1e-6, 1e-5, 1e-4, 3e-4, 1e-3, 3e-3, 1e-2),
}
QUICK = {"rounds": {"letters": 10, "mnist_multires": 3, "synthetic_costly": 10},
         "lambdas": {"letters": (0.0, 0.01, 0.1), "mnist_multires": (0.0, 0.01),
                     "synthetic_costly": (0.0, 1e-4, 1e-3)},
         "train_rows": 2000, "test_rows": 1000, "n_rows": 20_000}
# LightGBM's histogram layout per data set: what its automatic test (which costs time and
# may pick differently from run to run) chose on the benchmark machine; fixed here
# because deterministic=True asks for a forced layout.
LIGHTGBM_LAYOUT = {"letters": "force_row_wise", "mnist_multires": "force_row_wise",
                   "synthetic_costly": "force_col_wise"}
COST_CHECK_RTOL = 1e-9


# ----------------------------------------------------------------------- settings
def cegb_params(library, dataset, n_classes, lam, feature_costs, split_cost=0.0,
                n_threads=2, cbudget_algorithm="cegb"):
    """Training parameters of ``library`` for trade-off ``lam`` (cbudget's
    cost_tradeoff): the matched settings of ``_common.library_params`` plus the cost
    penalty, mapped as in the module docstring."""
    p = library_params(library, n_classes, n_threads)
    if library == "cbudget":
        p["algorithm"] = cbudget_algorithm
        if cbudget_algorithm == "cegb":
            p["cost_tradeoff"] = float(lam)
        return p  # feature costs and split_cost go on the cbudget.Dataset
    p.update({
        "deterministic": True, LIGHTGBM_LAYOUT[dataset]: True,
        "cegb_tradeoff": 2.0 * float(lam),
        "cegb_penalty_feature_lazy": [float(c) for c in feature_costs],
        "cegb_penalty_split": float(split_cost),
    })
    return p


# ---------------------------------------------------------------------- children
def _train_cbudget(data, params, n_rounds, clock, split_cost):
    return train_cbudget_timed(data, params, n_rounds, clock,
                               feature_names=data["feature_names"],
                               feature_costs=data["feature_costs"],
                               split_cost=split_cost)[:3]


def _train_lightgbm(data, params, n_rounds, clock, split_cost):
    return train_lightgbm_timed(data, params, n_rounds, clock)[:3]


def _cbudget_model(booster, X):
    """(probabilities, pred_leaf matrix, per-tree leaf paths) of a cbudget booster."""
    return (booster.predict(X), booster.predict(X, pred_leaf=True),
            [cbudget_leaf_paths(tree) for tree in booster.trees])


def _lightgbm_model(booster, X):
    trees = booster.dump_model()["tree_info"]
    return (booster.predict(X), booster.predict(X, pred_leaf=True),
            [lightgbm_leaf_paths(t["tree_structure"]) for t in trees])


def run_child(args):
    """Train and measure one (library, data set, lambda); return the result dict."""
    library, name, lam = args.library, args.dataset, float(args.lam)
    version, location = library_version(library)
    data, t_load, rss_after_load = load_for_child(name, args)
    costs = np.asarray(data["feature_costs"], dtype=np.float64)
    params = cegb_params(library, name, data["n_classes"], lam, costs, args.split_cost,
                         args.threads, args.cbudget_algorithm)
    n_rounds = int(args.rounds)
    trainer = _train_cbudget if library == "cbudget" else _train_lightgbm
    (booster, _, _), timing = timed_training(trainer, data, params, n_rounds,
                                             args.split_cost)

    X_test, y_test = data["X_test"], data["y_test"]
    binary = data["n_classes"] == 2
    model = _cbudget_model if library == "cbudget" else _lightgbm_model
    proba, leaves, leaf_paths = model(booster, X_test)
    proba = np.asarray(proba)
    if binary:
        proba = proba.reshape(-1)
        accuracy = float(np.mean((proba > 0.5) == (y_test == 1)))
    else:
        accuracy = float(np.mean(np.argmax(proba, axis=1) == y_test))
    t = time.perf_counter()
    tables = PathTables(leaf_paths, X_test.shape[1])
    cost, n_acquired = prediction_costs(leaves, tables, costs, args.split_cost)
    t_cost = time.perf_counter() - t
    used = tables.used_features()
    result = {
        "library": library, "version": version, "location": location, "dataset": name,
        "lambda": lam, "n_train": int(data["X_train"].shape[0]),
        "n_test": int(X_test.shape[0]), "n_features": int(X_test.shape[1]),
        "n_classes": int(data["n_classes"]), "rounds": n_rounds,
        "n_trees": int(tables.n_trees), "params": params, "split_cost": args.split_cost,
        "load_s": t_load, **timing, "n_threads": args.threads, "loadavg_after": loadavg(),
        "accuracy": accuracy,
        "mean_cost": float(cost.mean()),
        **cost_fields(cost, n_acquired, costs, data, cut_test=bool(args.test_rows)),
        "features_used": int(used.shape[0]),
        "used_features_cost": float(costs[used].sum()),
        "cost_measure_s": t_cost,
        "rss_after_load_mb": rss_after_load / 2**20,
    }
    if library == "cbudget":
        own = booster.predict_cost(X_test)
        diff = float(np.max(np.abs(own - cost))) if cost.size else 0.0
        result["cost_check_max_abs_diff"] = diff
        if not np.allclose(own, cost, rtol=COST_CHECK_RTOL, atol=COST_CHECK_RTOL):
            raise AssertionError(
                f"prediction cost routine disagrees with cbudget's predict_cost: max "
                f"|diff| {diff} (means {cost.mean()} vs {own.mean()})")
    if binary:
        result["auc"] = datasets._auc(y_test, proba)
    result["peak_rss_mb"] = maxrss_bytes() / 2**20
    return result


# ------------------------------------------------------------------------ parent
def launch_child(library, name, lam, rounds, args, log):
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", "--library", library,
           "--dataset", name, "--lam", repr(float(lam)), "--rounds", str(rounds),
           "--threads", str(args.threads), "--split-cost", repr(args.split_cost),
           "--cbudget-algorithm", args.cbudget_algorithm]
    for option, value in (("--n-rows", args.n_rows), ("--train-rows", args.train_rows),
                          ("--test-rows", args.test_rows)):
        if value:
            cmd += [option, str(value)]
    return run_child_command(cmd, args.child_timeout, log, f"{library}/{name}/lambda={lam:g}",
                             {"library": library, "dataset": name, "lambda": float(lam)})


def _point_label(r):
    return f"{r['lambda']:g}"


def dataset_section(name, results):
    """Markdown section for one data set."""
    ok = [r for r in results if "error" not in r]
    first = ok[0] if ok else None
    lines = []
    size = (f"{first['n_train']:,} train / {first['n_test']:,} test rows, "
            f"{first['n_features']} features, {first['rounds']} rounds "
            f"({first['n_trees'] // max(first['rounds'], 1)} tree(s) per round)"
            if first else "")
    lines += [f"### {DATASET_TITLES.get(name, name)}: {size}", ""]
    binary = bool(first) and first["n_classes"] == 2
    by = {(r["library"], r["lambda"]): r for r in ok}
    lambdas = sorted({r["lambda"] for r in results})
    head = ["lambda", "LightGBM cegb_tradeoff", "cbudget accuracy", "LightGBM accuracy"]
    if binary:
        head += ["cbudget AUC", "LightGBM AUC"]
    head += ["cbudget mean cost", "LightGBM mean cost", "cbudget features used",
             "LightGBM features used", "cbudget train s", "LightGBM train s",
             "train ratio cbudget / LightGBM"]
    lines.append("| " + " | ".join(head) + " |")
    lines.append("|" + "|".join("---:" for _ in head) + "|")
    for lam in lambdas:
        c, g = by.get(("cbudget", lam)), by.get(("lightgbm", lam))

        def v(r, key, spec):
            return fmt(r.get(key), spec) if r else "failed"

        row = [f"{lam:g}", f"{2 * lam:g}", v(c, "accuracy", ".4f"), v(g, "accuracy", ".4f")]
        if binary:
            row += [v(c, "auc", ".4f"), v(g, "auc", ".4f")]
        row += [v(c, "mean_cost", ",.2f"), v(g, "mean_cost", ",.2f"),
                v(c, "features_used", "d"), v(g, "features_used", "d"),
                v(c, "train_s", ".2f"), v(g, "train_s", ".2f"),
                fmt(ratio(c["train_s"], g["train_s"]) if c and g else None, ".2f")]
        lines.append("| " + " | ".join(row) + " |")
    lines.append("")
    failed = [r for r in results if "error" in r]
    for r in failed:
        lines.append(f"- {LIBRARY_LABELS[r['library']]} lambda={r['lambda']:g} failed: "
                     f"{r['error']}")
    if failed:
        lines.append("")

    cb = [r for r in ok if r["library"] == "cbudget"]
    lg = [r for r in ok if r["library"] == "lightgbm"]
    if cb and lg:
        lines += ["Accuracy at equal or lower cost: for each LightGBM point, cbudget's best "
                  "test accuracy among its points whose mean cost is at most LightGBM's.", ""]
        lines[-2] += (" The last two columns read cbudget's curve at exactly LightGBM's "
                      "cost instead: linear between its two neighbouring points in "
                      "log(1 + cost) (empty outside cbudget's cost range).")
        lines.append("| LightGBM lambda | LightGBM mean cost | LightGBM accuracy | cbudget "
                     "best accuracy at cost <= | its lambda / mean cost | difference | "
                     "cbudget >= LightGBM | cbudget curve at this cost | difference |")
        lines.append("|---:|---:|---:|---:|---:|---:|:---:|---:|---:|")
        dom = dominance(cb, lg)
        n_curve = n_curve_ok = 0
        for d in dom:
            g, c = d["reference"], d["best"]
            curve = interpolated_accuracy(cb, g["mean_cost"])
            if curve is not None:
                n_curve += 1
                n_curve_ok += curve >= g["accuracy"]
            lines.append(
                f"| {_point_label(g)} | {g['mean_cost']:,.2f} | {g['accuracy']:.4f} | "
                + (f"{c['accuracy']:.4f} | {_point_label(c)} / {c['mean_cost']:,.2f} | "
                   f"{c['accuracy'] - g['accuracy']:+.4f} | "
                   if c else "no cbudget point this cheap | | | ")
                + ("yes" if d["ok"] else "no") + " | "
                + (f"{curve:.4f} | {curve - g['accuracy']:+.4f} |" if curve is not None
                   else " | |"))
        lines.append("")
        n_ok = sum(d["ok"] for d in dom)
        ratios = [ratio(by[("cbudget", lam)]["train_s"], by[("lightgbm", lam)]["train_s"])
                  for lam in lambdas if ("cbudget", lam) in by and ("lightgbm", lam) in by]
        n_fast = sum(x <= 0.5 for x in ratios)
        lines.append(f"- cbudget accuracy >= LightGBM's at {n_ok} of {len(dom)} LightGBM "
                     f"cost levels (best point at cost <=); on cbudget's curve at "
                     f"LightGBM's cost: {n_curve_ok} of {n_curve} (within cbudget's cost "
                     "range).")
        if ratios:
            lines.append(f"- Training time ratio cbudget / LightGBM: "
                         f"{min(ratios):.2f} to {max(ratios):.2f} (median "
                         f"{float(np.median(ratios)):.2f}); <= 0.5 (cbudget at least 2x "
                         f"faster) at {n_fast} of {len(ratios)} lambdas.")
    notes = []
    checks = [r["cost_check_max_abs_diff"] for r in cb if "cost_check_max_abs_diff" in r]
    if checks:
        notes.append(f"The cost routine equals cbudget's `predict_cost` on every test input "
                     f"of every cbudget run (max |difference| {max(checks):.3g}).")
    if first:
        notes.append(f"Full cost (every feature for every input): {first['full_cost']:,.0f}.")
    notes += reference_notes(sorted(ok, key=lambda r: (r["library"], r["lambda"])),
                             lambda r: f"{LIBRARY_LABELS[r['library']]} lambda={r['lambda']:g}")
    for r in sorted(ok, key=lambda r: (r["library"], r["lambda"])):
        notes.append(
            f"{LIBRARY_LABELS[r['library']]} lambda={r['lambda']:g}: data set build "
            f"{r['dataset_build_s']:.2f} s, after the last round {r['after_last_round_s']:.2f}"
            f" s, CPU/wall {r['train_cpu_s'] / max(r['train_s'], 1e-9):.2f}, other "
            f"processes {r['other_cores_during_train']:.2f} cores{attempts_text(r)}, "
            f"features acquired per input {r['mean_features_acquired']:.1f}, cost "
            f"quantiles 10/50/90% {r['cost_quantiles']['0.1']:,.1f} / "
            f"{r['cost_quantiles']['0.5']:,.1f} / {r['cost_quantiles']['0.9']:,.1f}, peak "
            f"RSS {r['peak_rss_mb']:.0f} MB")
    lines += [f"- {n}" for n in notes]
    lines.append("")
    return "\n".join(lines)


SETTINGS_TEXT = """\
Settings (both libraries): best-first trees with at most 31 leaves, learning rate 0.1,
L2 regularisation 1.0, at least 20 rows and 1e-3 hessian per leaf, 255 bins, no row or
column subsampling, {threads} thread(s), seed 0, the same number of rounds, no validation
set during training; LightGBM `deterministic=True` with a forced histogram layout
(row-wise for Letters and MNIST, column-wise for the synthetic set: what its automatic
test picks there). Feature costs are per-input ("lazy") costs; no coupled costs; split
cost {split_cost:g}.

*lambda* is cbudget's `cost_tradeoff`; LightGBM runs with `cegb_tradeoff = 2 * lambda`,
`cegb_penalty_feature_lazy = feature costs`, `cegb_penalty_split = split cost`: LightGBM's
split gain has no factor 1/2, so its split criterion is then exactly twice cbudget's
(paper eq. (12); see the docstring of benchmarks/bench_cegb.py). For multiclass,
LightGBM's softmax hessian carries an extra factor K/(K-1), which makes its gains up to
4% (Letters) / 11% (MNIST) smaller, so the same lambda is slightly stronger there; the
accuracy-at-equal-cost table does not depend on the mapping. lambda = 0 runs the CEGB
code of both libraries with a zero trade-off (plain boosting models).

Columns: *accuracy* (and *AUC*) on the test set with all rounds; *mean cost*: mean over
the test inputs of the prediction cost (each feature paid once per input the first time
any node on the input's paths through all trees tests it, plus the split cost per split
node visited), computed by one routine from each library's leaf indices and tree
structures; *features used*: distinct features the model splits on; *train s*: wall time
from just before the library's data set object is built (binning included) to the
return of `train()`, one child process per (library, data set, lambda); *train ratio*
= cbudget time / LightGBM time (< 1: cbudget faster).
"""


def render(results_by_dataset, info, command, wall_s, quick, threads, split_cost,
           cbudget_algorithm):
    banners = []
    if quick:
        banners.append(SMOKE_BANNER)
    if cbudget_algorithm != "cegb":
        banners.append(f"**cbudget ran `algorithm=\"{cbudget_algorithm}\"` (development "
                       "stand-in): its lambda has no effect.**")
    busy = [(f"{LIBRARY_LABELS[r['library']]} / {r['dataset']} / lambda={r['lambda']:g}",
             r["other_cores_during_train"])
            for rs in results_by_dataset.values() for r in rs if "error" not in r]
    out = results_header("CEGB benchmark: cbudget vs LightGBM (cost-efficient gradient "
                         "boosting)", command, info, wall_s, busy, banners)
    out.append(SETTINGS_TEXT.format(threads=threads, split_cost=split_cost))
    for name, results in results_by_dataset.items():
        out.append(dataset_section(name, results))
    return "\n".join(out)


def _plot_suffix(quick, cbudget_algorithm):
    return ((" - smoke run (--quick)" if quick else "")
            + (f" - cbudget {cbudget_algorithm} stand-in" if cbudget_algorithm != "cegb" else ""))


def plot(results_by_dataset, path, title_suffix=""):
    """Accuracy vs mean test cost, one subplot per data set; returns the path or None
    when matplotlib is missing."""
    grid = subplot_grid(results_by_dataset)
    if grid is None:
        return None
    plt, fig, axes, names = grid
    for ax, name in zip(axes[0], names):
        for library, style in (("cbudget", "o-"), ("lightgbm", "s--")):
            rs = sorted((r for r in results_by_dataset[name]
                         if "error" not in r and r["library"] == library),
                        key=lambda r: r["mean_cost"])
            if not rs:
                continue
            x = [r["mean_cost"] for r in rs]
            y = [r["accuracy"] for r in rs]
            ax.plot(x, y, style, label=LIBRARY_LABELS[library], markersize=5)
            for r in rs:
                ax.annotate(f"{r['lambda']:g}", (r["mean_cost"], r["accuracy"]),
                            textcoords="offset points", xytext=(3, 3), fontsize=7)
        ax.set_xscale("symlog", linthresh=1.0)
        ax.set_xlabel("mean prediction cost per test input")
        ax.set_ylabel("test accuracy")
        ax.set_title(DATASET_TITLES.get(name, name).split(" (")[0], fontsize=10)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle("CEGB: accuracy vs cost (labels: lambda)" + title_suffix, fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def main(argv=None):
    parser = benchmark_parser(__doc__, DATASETS, "--library", "--dataset", "--lam")
    parser.add_argument("--libraries", default=",".join(LIBRARIES),
                        help="comma-separated subset of cbudget,lightgbm")
    parser.add_argument("--lambdas", default=None,
                        help="comma-separated trade-off values (cbudget cost_tradeoff; "
                             "LightGBM gets twice) for every data set; default: "
                             "per data set, see DEFAULT_LAMBDAS")
    parser.add_argument("--rounds", type=int, default=None,
                        help="boosting rounds for every data set (default per data set: "
                             + ", ".join(f"{k} {v}" for k, v in DEFAULT_ROUNDS.items()) + ")")
    add_data_arguments(parser, SYNTHETIC_ROWS)
    parser.add_argument("--split-cost", type=float, default=0.0,
                        help="cost of one split node per input (cbudget Dataset split_cost, "
                             "LightGBM cegb_penalty_split); default 0")
    parser.add_argument("--cbudget-algorithm", default="cegb", choices=("cegb", "gbdt"),
                        help="cbudget algorithm (gbdt: development stand-in that ignores "
                             "lambda; default cegb)")
    parser.add_argument("--output", default=None,
                        help="Markdown output (default benchmarks/results/cegb.md, "
                             "cegb_quick.md with --quick); .json and .png go next to it")
    parser.add_argument("--quick", action="store_true",
                        help=f"smoke run: {QUICK['train_rows']:,} training and "
                             f"{QUICK['test_rows']:,} test rows, {QUICK['n_rows']:,} "
                             "synthetic rows, 3-10 rounds, 2-3 lambdas")
    args, mode = parse_run_args(parser, argv, run_child, render_from, QUICK,
                                ("n_rows", "train_rows"))
    if mode is not None:
        return mode
        args.test_rows = args.test_rows or QUICK["test_rows"]
    names = parse_choices(parser, args.datasets, DATASETS, "data set")
    libraries = parse_choices(parser, args.libraries, LIBRARIES, "library")
    if args.rounds is not None and args.rounds < 1:
        parser.error("--rounds must be >= 1")
    plan = {}
    for d in names:
        lambdas = (parse_lambdas(args.lambdas) if args.lambdas else
                   list((QUICK["lambdas"] if args.quick else DEFAULT_LAMBDAS)[d]))
        rounds = args.rounds or (QUICK["rounds"] if args.quick else DEFAULT_ROUNDS)[d]
        plan[d] = (rounds, lambdas)

    output = Path(args.output) if args.output else (
        REPO / "benchmarks" / "results" / ("cegb_quick.md" if args.quick else "cegb.md"))
    command, info, log = start_run(output)
    extra = {"plan": {d: {"rounds": r, "lambdas": ls} for d, (r, ls) in plan.items()},
             "threads": args.threads, "split_cost": args.split_cost,
             "cbudget_algorithm": args.cbudget_algorithm}
    t_start = time.perf_counter()
    jobs = [(name, {"library": library, "dataset": name, "lambda": lam,
                    "rounds": plan[name][0],
                    "label": f"{name} / {library} / lambda={lam:g} / {plan[name][0]} rounds"})
            for name in names for lam in plan[name][1] for library in libraries]
    results = run_jobs(
        jobs, lambda job: launch_child(job["library"], job["dataset"], job["lambda"],
                                       job["rounds"], args, log),
        args, log,
        lambda res: write_json(output, command, info, res, time.perf_counter() - t_start,
                               args.quick, **extra),
        lambda r: (f"train {r['train_s']:.2f} s, accuracy {r['accuracy']:.4f}, mean cost "
                   f"{r['mean_cost']:,.2f}, features used {r['features_used']}"))
    wall = time.perf_counter() - t_start
    write_json(output, command, info, results, wall, args.quick, **extra)
    text = render(results, info, command, wall, args.quick, args.threads, args.split_cost,
                  args.cbudget_algorithm)
    png = plot(results, output.with_suffix(".png"),
               _plot_suffix(args.quick, args.cbudget_algorithm))
    if png:
        text += f"\nPlot: `{png.name}` (accuracy vs mean test cost, symlog cost axis).\n"
    print(text)
    output.write_text(text)
    return finish_run(output, png, wall, log, results)


def render_from(path, output=None):
    """Re-render the Markdown (and the plot) of an earlier run from its raw JSON."""
    doc = json.loads(path.read_text())
    results = doc["results"]
    text = render(results, doc["machine"], doc["command"], doc["wall_s"], doc.get("quick"),
                  doc.get("threads", 2), doc.get("split_cost", 0.0),
                  doc.get("cbudget_algorithm", "cegb"))
    output = Path(output) if output else path.with_suffix(".md")
    png = plot(results, output.with_suffix(".png"),
               _plot_suffix(doc.get("quick"), doc.get("cbudget_algorithm", "cegb")))
    return write_rerendered(text, path, output, png,
                            "accuracy vs mean test cost, symlog cost axis")


if __name__ == "__main__":
    sys.exit(main())
