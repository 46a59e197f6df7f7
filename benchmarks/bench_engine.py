"""Engine benchmark: plain gradient boosting, cbudget vs LightGBM vs XGBoost.

All three libraries grow 31-leaf best-first trees with the same settings (see
``library_params``): learning rate 0.1, L2 lambda 1.0, at least 20 rows and 1e-3
hessian per leaf (XGBoost has no row-count limit), 255 value bins, 2 threads, no row or
column subsampling, no validation set during training.

Each (library, data set) pair runs in its own subprocess (this script launching itself
with ``--child``), which loads the data, trains ONCE for ``max(--rounds)`` rounds and
prints one JSON line:

* training time: from just before the library's data set object is built from the
  numpy arrays (binning included) to the end of each round in ``--rounds``, taken by a
  per-round callback, so one run gives the 100- and the 500-round times;
* test accuracy (and AUC for binary problems) of the first ``r`` rounds for each ``r``
  in ``--rounds`` (cbudget ``iteration_range``, LightGBM ``num_iteration``, XGBoost
  ``iteration_range``);
* prediction throughput: test rows per second predicting with all trees, best of 3;
* memory: the child's peak RSS (``ru_maxrss``) and its increase over the RSS measured
  after loading the data.

The parent collects the JSON lines, writes them to ``<output stem>.json`` and prints /
writes Markdown tables (``--output``).

Usage::

    PYTHONPATH=. python benchmarks/bench_engine.py                      # full run
    PYTHONPATH=. python benchmarks/bench_engine.py --quick              # smoke run, < 1 min
    PYTHONPATH=. python benchmarks/bench_engine.py --datasets letters --rounds 50,200
"""
import gc
import json
import os
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
    LIBRARY_LABELS, N_THREADS, Clock, add_run_arguments, attempts_text, command_line,
    cpu_jiffies, cpu_seconds, fmt, library_params, loadavg, machine_info, machine_text,
    maxrss_bytes, other_cores, ratio, rss_bytes, run_child_command, run_with_retries,
    shared_machine_text, source_hash, train_cbudget_timed, train_lightgbm_timed, write_json,
    parse_choices)

LIBRARIES = ("cbudget", "lightgbm", "xgboost")
DATASETS = ("letters", "mnist", "synthetic")
QUICK = {"rounds": "5,10", "n_rows": 20_000, "train_rows": 2_000}


# --------------------------------------------------------------------------- data
def load_dataset(name, n_rows=None, train_rows=None):
    """The data set ``name`` as returned by benchmarks/datasets.py; ``n_rows`` is the
    total size of the synthetic set, ``train_rows`` keeps only the first rows of the
    training set (smoke runs)."""
    if name == "letters":
        data = datasets.load_letters(seed=0)
    elif name == "mnist":
        data = datasets.load_mnist(seed=0, n_valid=10000)
    elif name == "synthetic":
        data = datasets.make_synthetic_binary(n_samples=n_rows or 1_000_000, n_features=50,
                                              seed=0)
    else:
        raise ValueError(f"unknown data set {name!r}; valid: {', '.join(DATASETS)}")
    if train_rows:
        data["X_train"] = data["X_train"][:train_rows]
        data["y_train"] = data["y_train"][:train_rows]
    # Not used by this benchmark: drop them so that they do not count in the RSS.
    data["X_valid"] = data["y_valid"] = None
    return data


# ---------------------------------------------------------------------- children
def _train_cbudget(data, params, n_rounds, clock):
    booster, t_dataset, t_total, dtrain = train_cbudget_timed(data, params, n_rounds, clock)

    def predict(X, r=None):
        return booster.predict(X, iteration_range=None if r is None else (0, r))

    return booster, predict, t_dataset, t_total, dtrain


def _train_lightgbm(data, params, n_rounds, clock):
    booster, t_dataset, t_total, dtrain = train_lightgbm_timed(data, params, n_rounds, clock)

    def predict(X, r=None):
        return booster.predict(X, num_iteration=r)

    return booster, predict, t_dataset, t_total, dtrain


def _train_xgboost(data, params, n_rounds, clock):
    import xgboost as xgb

    class RoundClock(xgb.callback.TrainingCallback):
        def after_iteration(self, model, epoch, evals_log):
            clock.tick()
            return False

    clock.start()
    dtrain = xgb.QuantileDMatrix(data["X_train"], data["y_train"], max_bin=params["max_bin"],
                                 nthread=params["nthread"])
    t_dataset = clock.since_start()
    booster = xgb.train(params, dtrain, num_boost_round=n_rounds, callbacks=[RoundClock()],
                        verbose_eval=False)
    t_total = clock.since_start()

    def predict(X, r=None):
        return booster.inplace_predict(X, iteration_range=(0, 0) if r is None else (0, r))

    return booster, predict, t_dataset, t_total, dtrain


TRAINERS = {"cbudget": _train_cbudget, "lightgbm": _train_lightgbm, "xgboost": _train_xgboost}


def _import_library(library):
    if library == "cbudget":
        import cbudget
        return cbudget.__version__, os.path.dirname(cbudget.__file__)
    if library == "lightgbm":
        import lightgbm
        return lightgbm.__version__, os.path.dirname(lightgbm.__file__)
    import xgboost
    return xgboost.__version__, os.path.dirname(xgboost.__file__)


def run_child(args):
    """Benchmark one (library, data set); return the result dict."""
    library, name = args.library, args.dataset
    rounds = parse_rounds(args.rounds)
    n_rounds = max(rounds)
    version, location = _import_library(library)  # before the data: the baseline has it
    if library == "cbudget":
        version += f" (sources {source_hash(location)})"
    t = time.perf_counter()
    data = load_dataset(name, n_rows=args.n_rows, train_rows=args.train_rows)
    t_load = time.perf_counter() - t
    gc.collect()
    rss_after_load = rss_bytes()
    maxrss_after_load = maxrss_bytes()
    params = library_params(library, data["n_classes"], args.threads)
    clock = Clock()
    load_before = loadavg()
    cpu0 = cpu_seconds()
    busy0 = cpu_jiffies()[0]
    booster, predict, t_dataset, t_total, dtrain = TRAINERS[library](
        data, params, n_rounds, clock)
    cpu_train = cpu_seconds() - cpu0
    busy1 = cpu_jiffies()[0]
    if len(clock.round_ends) != n_rounds:
        raise RuntimeError(f"{library} trained {len(clock.round_ends)} rounds, "
                           f"expected {n_rounds}")
    del dtrain
    X_test, y_test = data["X_test"], data["y_test"]
    binary = data["n_classes"] == 2
    quality = {}
    for r in rounds:
        p = predict(X_test, r)
        if binary:
            p = np.asarray(p).reshape(-1)
            quality[r] = {"accuracy": float(np.mean((p > 0.5) == (y_test == 1))),
                          "auc": datasets._auc(y_test, p)}
        else:
            quality[r] = {"accuracy": float(np.mean(np.argmax(p, axis=1) == y_test))}
    predict_times = []
    cpu_p0, busy_p0 = cpu_seconds(), cpu_jiffies()[0]
    t_p0 = time.perf_counter()
    for _ in range(3):
        t = time.perf_counter()
        predict(X_test)
        predict_times.append(time.perf_counter() - t)
    other_predict = other_cores(busy_p0, cpu_jiffies()[0], cpu_seconds() - cpu_p0,
                                time.perf_counter() - t_p0)
    result = {
        "library": library, "version": version, "location": location, "dataset": name,
        "n_train": int(data["X_train"].shape[0]), "n_test": int(X_test.shape[0]),
        "n_features": int(X_test.shape[1]), "n_classes": int(data["n_classes"]),
        "params": params, "rounds": rounds,
        "load_s": t_load,
        "dataset_build_s": t_dataset,
        "train_s": {str(r): clock.round_ends[r - 1] for r in rounds},
        "train_total_s": t_total,
        "after_last_round_s": t_total - clock.round_ends[-1],
        "round_end_s": clock.round_ends,
        "train_cpu_s": cpu_train,
        "other_cores_during_train": other_cores(busy0, busy1, cpu_train, t_total),
        "other_cores_during_predict": other_predict,
        "n_threads": args.threads,
        "loadavg_before": load_before, "loadavg_after": loadavg(),
        "quality": {str(r): q for r, q in quality.items()},
        "predict_s": predict_times,
        "predict_rows_per_s": X_test.shape[0] / min(predict_times),
        "rss_after_load_mb": rss_after_load / 2**20,
        "maxrss_after_load_mb": maxrss_after_load / 2**20,
        "peak_rss_mb": maxrss_bytes() / 2**20,
    }
    result["rss_increase_mb"] = result["peak_rss_mb"] - result["rss_after_load_mb"]
    if "bayes_auc_test" in data:
        result["bayes_auc_test"] = data["bayes_auc_test"]
        result["bayes_accuracy_test"] = data["bayes_accuracy_test"]
    return result


# ------------------------------------------------------------------------ parent
def parse_rounds(text):
    rounds = sorted({int(v) for v in str(text).split(",") if v.strip()})
    if not rounds or rounds[0] < 1:
        raise ValueError(f"--rounds needs positive integers, got {text!r}")
    return rounds


def run_pair(library, name, args, log):
    """Run one (library, data set) child; rerun it (up to ``args.retries`` times) while
    other processes kept more than ``args.max_other_cores`` cores busy during its
    training, and keep the least disturbed run."""
    return run_with_retries(lambda: launch_child(library, name, args, log), args, log)


def launch_child(library, name, args, log):
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", "--library", library,
           "--dataset", name, "--rounds", args.rounds, "--threads", str(args.threads)]
    if args.n_rows:
        cmd += ["--n-rows", str(args.n_rows)]
    if args.train_rows:
        cmd += ["--train-rows", str(args.train_rows)]
    return run_child_command(cmd, args.child_timeout, log, f"{library}/{name}",
                             {"library": library, "dataset": name})


DATASET_TITLES = {
    "letters": "Letters (UCI, 26 classes)",
    "mnist": "MNIST (10 classes)",
    "synthetic": "Synthetic binary (benchmarks/datasets.py make_synthetic_binary, seed 0)",
}


def dataset_table(name, results, rounds):
    """Markdown section for one data set."""
    ok = [r for r in results if "error" not in r]
    lines = []
    first = ok[0] if ok else None
    size = (f"{first['n_train']:,} train / {first['n_test']:,} test rows, "
            f"{first['n_features']} features" if first else "")
    lines.append(f"### {DATASET_TITLES.get(name, name)}: {size}")
    lines.append("")
    binary = bool(first) and first["n_classes"] == 2
    rs = " / ".join(str(r) for r in rounds)
    head = ["library"] + [f"train s ({r} rounds)" for r in rounds] + [
        "+ after last round s", f"train ratio vs LightGBM ({rs})", "predict rows/s",
        "predict ratio vs LightGBM", "peak RSS MB", "RSS increase MB",
        f"test accuracy ({rs})"]
    if binary:
        head.append(f"test AUC ({rs})")
    lines.append("| " + " | ".join(head) + " |")
    lines.append("|" + "|".join("---" if i == 0 else "---:" for i in range(len(head))) + "|")
    ref = next((r for r in ok if r["library"] == "lightgbm"), None)
    for r in results:
        label = LIBRARY_LABELS.get(r["library"], r["library"])
        if "error" in r:
            lines.append(f"| {label} | failed: {r['error']} |" + " |" * (len(head) - 2))
            continue
        train = [r["train_s"][str(k)] for k in rounds]
        ratios = [ratio(t, ref["train_s"][str(k)] if ref else None)
                  for t, k in zip(train, rounds)]
        row = [label] + [fmt(t, ".2f") for t in train]
        row.append(fmt(r["after_last_round_s"], ".2f"))
        row.append(" / ".join(fmt(x, ".2f") for x in ratios))
        row.append(fmt(r["predict_rows_per_s"], ",.0f"))
        row.append(fmt(ratio(r["predict_rows_per_s"],
                               ref["predict_rows_per_s"] if ref else None), ".2f"))
        row.append(fmt(r["peak_rss_mb"], ".0f"))
        row.append(fmt(r["rss_increase_mb"], ".0f"))
        row.append(" / ".join(fmt(r["quality"][str(k)]["accuracy"], ".4f") for k in rounds))
        if binary:
            row.append(" / ".join(fmt(r["quality"][str(k)]["auc"], ".4f") for k in rounds))
        lines.append("| " + " | ".join(row) + " |")
    lines.append("")
    notes = []
    for r in ok:
        label = LIBRARY_LABELS.get(r["library"], r["library"])
        notes.append(
            f"{label}: data set build (binning) {r['dataset_build_s']:.2f} s, training CPU/wall "
            f"{r['train_cpu_s'] / max(r['train_total_s'], 1e-9):.2f}, other processes "
            f"{r['other_cores_during_train']:.2f} cores (predict: "
            f"{r['other_cores_during_predict']:.2f}){attempts_text(r)}, RSS after loading "
            f"{r['rss_after_load_mb']:.0f} MB, load average {r['loadavg_before'][0]:.2f} -> "
            f"{r['loadavg_after'][0]:.2f}")
    if first and "bayes_auc_test" in first:
        notes.append(f"Bayes reference (true probabilities) on this test set: accuracy "
                     f"{first['bayes_accuracy_test']:.4f}, AUC {first['bayes_auc_test']:.4f}")
    lines += [f"- {n}" for n in notes]
    lines.append("")
    return "\n".join(lines)


SETTINGS_TEXT = """\
Settings (all libraries): best-first (leaf-wise) trees with at most 31 leaves and no depth
limit, learning rate 0.1, L2 regularisation 1.0, no L1, minimum split gain 0, at least
1e-3 hessian per leaf, at least 20 rows per leaf (cbudget `min_data_in_leaf=20`,
LightGBM `min_data_in_leaf=20`; XGBoost has no such limit), no row or column
subsampling, {threads} thread(s), no validation set during training. Binning: cbudget
`max_bin=255` value bins (plus one bin for NaN), LightGBM `max_bin=255`, XGBoost
`max_bin=256` (`tree_method="hist"`, `grow_policy="lossguide"`, `max_leaves=31`,
`max_depth=0`, data as `QuantileDMatrix`): XGBoost keeps missing values out of its bins
and LightGBM/cbudget reserve bin room for them, so 256 is the XGBoost default that
matches LightGBM's 255 in the usual comparisons. None of these data sets has missing
values; only MNIST (256 distinct pixel values) can see the one-bin difference.

Columns: *train s* is wall time from just before the library's data set object is built
from the numpy arrays (binning included) to the end of round 100 / 500, from ONE
500-round run per library (a per-round callback takes the round-100 time). *+ after last
round s*: the rest of the 500-round `train()` call, not included in the train columns
(cbudget: the training-cost summary `Booster._record_training_costs`, run even without
feature costs; LightGBM: the model's round trip through its text format at the end of
`lgb.train`). *train ratio* = library time / LightGBM time (> 1: slower). *predict rows/s*: test rows per second with all trees (numpy float32 in,
probabilities out; XGBoost `inplace_predict`), best of 3; *predict ratio* = library rows/s
/ LightGBM rows/s (> 1: faster). *peak RSS MB*: `ru_maxrss` of the child process that ran
the pair (library imported, data loaded, trained, predicted); *RSS increase MB*: peak RSS
minus the RSS after loading the data. *test accuracy / AUC* with the first 100 / 500
rounds.
"""


def render(results_by_dataset, rounds, info, command, wall_s, quick, threads):
    out = ["# Engine benchmark: cbudget vs LightGBM vs XGBoost", ""]
    if quick:
        out += ["**Smoke run (`--quick`): small data and few rounds; the numbers say nothing "
                "about speed.**", ""]
    out += ["Command:", "", "```", command, "```", ""]
    out.append(machine_text(info))
    out.append("")
    out.append(f"Total wall time: {wall_s / 60:.1f} min.")
    out.append("")
    warning = shared_machine_text(
        [(f"{LIBRARY_LABELS[r['library']]} / {r['dataset']}", r["other_cores_during_train"])
         for rs in results_by_dataset.values() for r in rs if "error" not in r], info["nproc"])
    if warning:
        out.append(warning)
        out.append("")
    out.append(SETTINGS_TEXT.format(threads=threads))
    for name, results in results_by_dataset.items():
        out.append(dataset_table(name, results, rounds))
    return "\n".join(out)


def main(argv=None):
    parser = benchmark_parser(__doc__, DATASETS, "--library", "--dataset")
    parser.add_argument("--libraries", default=",".join(LIBRARIES),
                        help="comma-separated subset of cbudget,lightgbm,xgboost")
    parser.add_argument("--rounds", default=None,
                        help="comma-separated round counts (default 100,500); training runs "
                             "once for the largest")
    parser.add_argument("--n-rows", type=int, default=None,
                        help="total rows of the synthetic set (train + test; default "
                             "1,000,000)")
    parser.add_argument("--train-rows", type=int, default=None,
                        help="keep only the first N training rows of every data set")
    parser.add_argument("--output", default=None,
                        help="Markdown output (default benchmarks/results/engine.md, "
                             "engine_quick.md with --quick); raw JSON goes next to it")
    parser.add_argument("--quick", action="store_true",
                        help=f"smoke run: rounds {QUICK['rounds']}, {QUICK['n_rows']:,} "
                             f"synthetic rows, {QUICK['train_rows']:,} training rows")
    add_run_arguments(parser)
    args = parser.parse_args(argv)

    if args.quick:
        args.rounds = args.rounds or QUICK["rounds"]
        args.n_rows = args.n_rows or QUICK["n_rows"]
        args.train_rows = args.train_rows or QUICK["train_rows"]
    args.rounds = args.rounds or "100,500"
    rounds = parse_rounds(args.rounds)

    if args.child:
        print(json.dumps(run_child(args)), flush=True)
        return 0

    if args.render_from:
        return render_from(Path(args.render_from), args.output)

    names = parse_choices(parser, args.datasets, DATASETS, "data set")
    libraries = parse_choices(parser, args.libraries, LIBRARIES, "library")
    output = Path(args.output) if args.output else (
        REPO / "benchmarks" / "results" / ("engine_quick.md" if args.quick else "engine.md"))
    output.parent.mkdir(parents=True, exist_ok=True)
    command = command_line()
    info = machine_info()
    log = sys.stderr
    print(f"# {command}", file=log, flush=True)
    t_start = time.perf_counter()
    results = {}
    for name in names:
        results[name] = []
        for library in libraries:
            print(f"[{time.strftime('%H:%M:%S')}] {name} / {library} ...", file=log, flush=True)
            r = run_pair(library, name, args, log)
            results[name].append(r)
            if "error" not in r:
                print(f"    done in {r['child_wall_s']:.1f} s: train "
                      + ", ".join(f"{k}: {v:.2f} s" for k, v in r["train_s"].items())
                      + f", accuracy {r['quality'][str(rounds[-1])]['accuracy']:.4f}",
                      file=log, flush=True)
            # partial results survive a crash of a later child
            write_json(output, command, info, results, time.perf_counter() - t_start,
                        args.quick)
    wall = time.perf_counter() - t_start
    write_json(output, command, info, results, wall, args.quick)
    text = render(results, rounds, info, command, wall, args.quick, args.threads)
    print(text)
    output.write_text(text)
    print(f"# wrote {output} and {output.with_suffix('.json')} "
          f"(total wall time {wall / 60:.1f} min)", file=log, flush=True)
    return 0 if all("error" not in r for rs in results.values() for r in rs) else 1


def render_from(path, output=None):
    """Re-render the Markdown of an earlier run from its raw JSON."""
    doc = json.loads(path.read_text())
    results = doc["results"]
    first = next(r for rs in results.values() for r in rs if "error" not in r)
    rounds = [int(v) for v in first["rounds"]]
    quick = doc.get("quick", first["n_train"] < 5000)
    text = render(results, rounds, doc["machine"], doc["command"], doc["wall_s"], quick,
                  first.get("n_threads", N_THREADS))
    text = text.replace("\nMachine:", f"\nRendered from `{path.name}` by `{command_line()}`."
                        "\n\nMachine:", 1)
    output = Path(output) if output else path.with_suffix(".md")
    print(text)
    output.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
