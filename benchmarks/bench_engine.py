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
import argparse
import gc
import hashlib
import json
import os
import platform
import resource
import shlex
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))

import datasets  # noqa: E402  (benchmarks/datasets.py)

LIBRARIES = ("cbudget", "lightgbm", "xgboost")
LIBRARY_LABELS = {"cbudget": "cbudget", "lightgbm": "LightGBM", "xgboost": "XGBoost"}
DATASETS = ("letters", "mnist", "synthetic")
N_THREADS = 2  # default of --threads
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


# ----------------------------------------------------------------------- settings
def library_params(library, n_classes, n_threads=N_THREADS):
    """Training parameters of ``library``, matched across libraries."""
    binary = n_classes == 2
    if library == "cbudget":
        p = {"objective": "binary:logistic" if binary else "multi:softprob",
             "learning_rate": 0.1, "grow_policy": "lossguide", "num_leaves": 31,
             "min_data_in_leaf": 20, "min_child_weight": 1e-3, "reg_lambda": 1.0,
             "gamma": 0.0, "subsample": 1.0, "colsample_bytree": 1.0,
             "n_jobs": n_threads, "seed": 0}
        if not binary:
            p["num_class"] = n_classes
        return p
    if library == "lightgbm":
        p = {"objective": "binary" if binary else "multiclass", "boosting": "gbdt",
             "learning_rate": 0.1, "num_leaves": 31, "max_depth": -1, "max_bin": 255,
             "min_data_in_leaf": 20, "min_sum_hessian_in_leaf": 1e-3, "lambda_l2": 1.0,
             "lambda_l1": 0.0, "min_gain_to_split": 0.0, "bagging_fraction": 1.0,
             "bagging_freq": 0, "feature_fraction": 1.0, "num_threads": n_threads,
             "seed": 0, "verbose": -1}
        if not binary:
            p["num_class"] = n_classes
        return p
    if library == "xgboost":
        p = {"objective": "binary:logistic" if binary else "multi:softprob",
             "tree_method": "hist", "grow_policy": "lossguide", "max_leaves": 31,
             "max_depth": 0, "max_bin": 256, "eta": 0.1, "lambda": 1.0, "alpha": 0.0,
             "gamma": 0.0, "min_child_weight": 1e-3, "subsample": 1.0,
             "colsample_bytree": 1.0, "nthread": n_threads, "seed": 0, "verbosity": 0}
        if not binary:
            p["num_class"] = n_classes
        return p
    raise ValueError(f"unknown library {library!r}")


# ---------------------------------------------------------------------- children
def _rss_bytes():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def _maxrss_bytes():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # KiB on Linux


def _cpu_seconds():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def _cpu_jiffies():
    """(busy, total) jiffies of all CPUs from /proc/stat."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    idle = v[3] + v[4]  # idle + iowait
    total = sum(v[:8])  # user nice system idle iowait irq softirq steal
    return total - idle, total


def other_cores(busy0, busy1, own_cpu_s, wall_s):
    """Average number of cores that other processes kept busy over ``wall_s``."""
    hz = os.sysconf("SC_CLK_TCK")
    return max(0.0, ((busy1 - busy0) / hz - own_cpu_s) / max(wall_s, 1e-9))


def _loadavg():
    with open("/proc/loadavg") as f:
        return [float(v) for v in f.read().split()[:3]]


class _Clock:
    """Elapsed time at the end of every round, from ``t0``."""

    def __init__(self):
        self.t0 = None
        self.round_ends = []

    def start(self):
        self.t0 = time.perf_counter()

    def tick(self):
        self.round_ends.append(time.perf_counter() - self.t0)

    def since_start(self):
        return time.perf_counter() - self.t0


def _train_cbudget(data, params, n_rounds, clock):
    import cbudget

    class RoundClock(cbudget.TrainingCallback):
        def after_iteration(self, model, epoch, evals_log):
            clock.tick()
            return False

    clock.start()
    dtrain = cbudget.Dataset(data["X_train"], data["y_train"], max_bin=255)
    t_dataset = clock.since_start()
    booster = cbudget.train(params, dtrain, n_rounds, verbose_eval=False,
                            callbacks=[RoundClock()])
    t_total = clock.since_start()

    def predict(X, r=None):
        return booster.predict(X, iteration_range=None if r is None else (0, r))

    return booster, predict, t_dataset, t_total, dtrain


def _train_lightgbm(data, params, n_rounds, clock):
    import lightgbm as lgb

    def round_clock(env):
        clock.tick()

    clock.start()
    dtrain = lgb.Dataset(data["X_train"], data["y_train"], params=params,
                         free_raw_data=True)
    dtrain.construct()  # binning happens here (it is lazy otherwise)
    t_dataset = clock.since_start()
    booster = lgb.train(params, dtrain, num_boost_round=n_rounds, callbacks=[round_clock])
    t_total = clock.since_start()

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
        version += f" (sources {_source_hash(location)})"
    t = time.perf_counter()
    data = load_dataset(name, n_rows=args.n_rows, train_rows=args.train_rows)
    t_load = time.perf_counter() - t
    gc.collect()
    rss_after_load = _rss_bytes()
    maxrss_after_load = _maxrss_bytes()
    params = library_params(library, data["n_classes"], args.threads)
    clock = _Clock()
    load_before = _loadavg()
    cpu0 = _cpu_seconds()
    busy0 = _cpu_jiffies()[0]
    booster, predict, t_dataset, t_total, dtrain = TRAINERS[library](
        data, params, n_rounds, clock)
    cpu_train = _cpu_seconds() - cpu0
    busy1 = _cpu_jiffies()[0]
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
    cpu_p0, busy_p0 = _cpu_seconds(), _cpu_jiffies()[0]
    t_p0 = time.perf_counter()
    for _ in range(3):
        t = time.perf_counter()
        predict(X_test)
        predict_times.append(time.perf_counter() - t)
    other_predict = other_cores(busy_p0, _cpu_jiffies()[0], _cpu_seconds() - cpu_p0,
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
        "loadavg_before": load_before, "loadavg_after": _loadavg(),
        "quality": {str(r): q for r, q in quality.items()},
        "predict_s": predict_times,
        "predict_rows_per_s": X_test.shape[0] / min(predict_times),
        "rss_after_load_mb": rss_after_load / 2**20,
        "maxrss_after_load_mb": maxrss_after_load / 2**20,
        "peak_rss_mb": _maxrss_bytes() / 2**20,
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


def _source_hash(package_dir):
    """sha256 (first 12 hex digits) over cbudget's .py/.pyx/.pxd sources: identifies the
    version benchmarked (the repository may have no commit for it)."""
    h = hashlib.sha256()
    root = Path(package_dir)
    for path in sorted(list(root.rglob("*.py")) + list(root.rglob("*.pyx"))
                       + list(root.rglob("*.pxd"))):
        h.update(str(path.relative_to(root)).encode())
        h.update(path.read_bytes())
    return h.hexdigest()[:12]


def machine_info():
    import lightgbm
    import xgboost
    try:
        import cbudget
        cb = f"cbudget {cbudget.__version__} (sources {_source_hash(os.path.dirname(cbudget.__file__))}, " \
             f"{os.path.dirname(cbudget.__file__)})"
        from cbudget._core._openmp_helpers import openmp_enabled
        cb += ", OpenMP" if openmp_enabled() else ", serial build"
    except Exception as exc:  # noqa: BLE001 - report, do not fail
        cb = f"cbudget not importable ({exc})"
    cpu = platform.processor() or "?"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    try:
        mem_gb = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    except (ValueError, OSError):
        mem_gb = float("nan")
    return {
        "nproc": os.cpu_count(), "affinity": len(os.sched_getaffinity(0)), "cpu": cpu,
        "mem_gb": round(mem_gb, 1), "python": platform.python_version(),
        "numpy": np.__version__, "lightgbm": lightgbm.__version__,
        "xgboost": xgboost.__version__, "cbudget": cb, "platform": platform.platform(),
    }


def command_line():
    pythonpath = os.environ.get("PYTHONPATH")
    prefix = f"PYTHONPATH={shlex.quote(pythonpath)} " if pythonpath else ""
    return prefix + "python " + " ".join(shlex.quote(a) for a in sys.argv)


def busy_cores(seconds=3.0):
    """Cores kept busy by all processes over the next ``seconds`` (this one sleeps)."""
    b0, t0 = _cpu_jiffies()
    time.sleep(seconds)
    b1, t1 = _cpu_jiffies()
    return (b1 - b0) / max(t1 - t0, 1) * (os.cpu_count() or 1)


def wait_for_idle(max_wait, threshold):
    """Sleep until other processes use less than ``threshold`` cores (measured over 3 s)
    or ``max_wait`` seconds have passed; return (seconds waited, last measurement)."""
    t = time.perf_counter()
    while True:
        busy = busy_cores()
        waited = time.perf_counter() - t
        if busy < threshold or waited >= max_wait:
            return waited, busy
        time.sleep(min(10.0, max(0.0, max_wait - waited)))


def run_pair(library, name, args, log):
    """Run one (library, data set) child; rerun it (up to ``args.retries`` times) while
    other processes kept more than ``args.max_other_cores`` cores busy during its
    training, and keep the least disturbed run."""
    best, history = None, []
    for attempt in range(1 + max(0, args.retries)):
        if args.wait_idle > 0:
            waited, busy = wait_for_idle(args.wait_idle, args.idle_cores)
            print(f"    waited {waited:.0f} s for idle CPUs (other processes: "
                  f"{busy:.2f} cores)", file=log, flush=True)
        r = launch_child(library, name, args, log)
        if "error" in r:
            return best or r
        history.append(r["other_cores_during_train"])
        if best is None or r["other_cores_during_train"] < best["other_cores_during_train"]:
            best = r
        if r["other_cores_during_train"] <= args.max_other_cores:
            break
        if attempt < args.retries:
            print(f"    other processes kept {r['other_cores_during_train']:.2f} cores busy "
                  f"(train {r['train_total_s']:.1f} s): running it again", file=log,
                  flush=True)
    best["attempts_other_cores"] = history
    return best


def launch_child(library, name, args, log):
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", "--library", library,
           "--dataset", name, "--rounds", args.rounds, "--threads", str(args.threads)]
    if args.n_rows:
        cmd += ["--n-rows", str(args.n_rows)]
    if args.train_rows:
        cmd += ["--train-rows", str(args.train_rows)]
    t = time.perf_counter()
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=args.child_timeout)
    except subprocess.TimeoutExpired:
        wall = time.perf_counter() - t
        print(f"  {library}/{name} timed out after {wall:.0f} s", file=log, flush=True)
        return {"library": library, "dataset": name,
                "error": f"timed out after {wall:.0f} s", "child_wall_s": wall}
    wall = time.perf_counter() - t
    for line in reversed(proc.stdout.splitlines()):
        if line.startswith("{"):
            result = json.loads(line)
            result["child_wall_s"] = wall
            return result
    tail = (proc.stderr or proc.stdout).strip().splitlines()[-15:]
    print(f"  {library}/{name} FAILED (exit {proc.returncode}):\n    " + "\n    ".join(tail),
          file=log, flush=True)
    return {"library": library, "dataset": name, "error": f"exit {proc.returncode}: "
            + (tail[-1] if tail else "no output"), "child_wall_s": wall}


def _attempts(r):
    h = r.get("attempts_other_cores") or []
    if len(h) <= 1:
        return ""
    return (f", best of {len(h)} runs (other processes: "
            + ", ".join(f"{c:.2f}" for c in h) + " cores)")


def _fmt(v, spec):
    return "n/a" if v is None or (isinstance(v, float) and v != v) else format(v, spec)


def _ratio(a, b):
    return None if a is None or b is None or b == 0 else a / b


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
        ratios = [_ratio(t, ref["train_s"][str(k)] if ref else None)
                  for t, k in zip(train, rounds)]
        row = [label] + [_fmt(t, ".2f") for t in train]
        row.append(_fmt(r["after_last_round_s"], ".2f"))
        row.append(" / ".join(_fmt(x, ".2f") for x in ratios))
        row.append(_fmt(r["predict_rows_per_s"], ",.0f"))
        row.append(_fmt(_ratio(r["predict_rows_per_s"],
                               ref["predict_rows_per_s"] if ref else None), ".2f"))
        row.append(_fmt(r["peak_rss_mb"], ".0f"))
        row.append(_fmt(r["rss_increase_mb"], ".0f"))
        row.append(" / ".join(_fmt(r["quality"][str(k)]["accuracy"], ".4f") for k in rounds))
        if binary:
            row.append(" / ".join(_fmt(r["quality"][str(k)]["auc"], ".4f") for k in rounds))
        lines.append("| " + " | ".join(row) + " |")
    lines.append("")
    notes = []
    for r in ok:
        label = LIBRARY_LABELS.get(r["library"], r["library"])
        notes.append(
            f"{label}: data set build (binning) {r['dataset_build_s']:.2f} s, training CPU/wall "
            f"{r['train_cpu_s'] / max(r['train_total_s'], 1e-9):.2f}, other processes "
            f"{r['other_cores_during_train']:.2f} cores (predict: "
            f"{r['other_cores_during_predict']:.2f}){_attempts(r)}, RSS after loading "
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
    out.append(f"Machine: nproc {info['nproc']} (affinity {info['affinity']}), {info['cpu']}, "
               f"{info['mem_gb']} GB; Python {info['python']}, numpy {info['numpy']}, "
               f"LightGBM {info['lightgbm']}, XGBoost {info['xgboost']}, {info['cbudget']}; "
               f"{info['platform']}.")
    out.append("")
    out.append(f"Total wall time: {wall_s / 60:.1f} min.")
    out.append("")
    busy = [(r["dataset"], r["library"], r["other_cores_during_train"])
            for rs in results_by_dataset.values() for r in rs if "error" not in r]
    loaded = [b for b in busy if b[2] > 0.3]
    if loaded:
        out.append("**Shared machine:** other processes kept on average "
                   + ", ".join(f"{c:.2f} cores busy during {LIBRARY_LABELS[lib]} / {d}"
                               for d, lib, c in loaded)
                   + f" (of {info['nproc']}). Multi-threaded (OpenMP) training slows down "
                   "far more than in proportion when a thread is preempted, so those times "
                   "are inflated and their ratios are unreliable.")
        out.append("")
    out.append(SETTINGS_TEXT.format(threads=threads))
    for name, results in results_by_dataset.items():
        out.append(dataset_table(name, results, rounds))
    return "\n".join(out)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--datasets", default=",".join(DATASETS),
                        help="comma-separated subset of letters,mnist,synthetic")
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
    parser.add_argument("--threads", type=int, default=N_THREADS,
                        help=f"threads for every library (default {N_THREADS})")
    parser.add_argument("--wait-idle", type=float, default=0.0,
                        help="before each child, wait up to this many seconds for other "
                             "processes to use less than --idle-cores cores (shared "
                             "machines); default 0: do not wait")
    parser.add_argument("--idle-cores", type=float, default=0.3,
                        help="threshold of --wait-idle (cores busy with other processes)")
    parser.add_argument("--retries", type=int, default=0,
                        help="rerun a (library, data set) up to this many times while other "
                             "processes kept more than --max-other-cores cores busy during "
                             "its training; the least disturbed run is reported")
    parser.add_argument("--max-other-cores", type=float, default=0.2,
                        help="threshold of --retries (average cores used by other "
                             "processes during training)")
    parser.add_argument("--child-timeout", type=float, default=4 * 3600,
                        help="seconds before a child run is killed")
    parser.add_argument("--render-from", metavar="JSON", default=None,
                        help="do not run anything: re-render the Markdown of an earlier "
                             "run from its raw JSON (to --output, default next to it)")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--library", help=argparse.SUPPRESS)
    parser.add_argument("--dataset", help=argparse.SUPPRESS)
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

    names = [d.strip() for d in args.datasets.split(",") if d.strip()]
    libraries = [v.strip() for v in args.libraries.split(",") if v.strip()]
    for d in names:
        if d not in DATASETS:
            parser.error(f"unknown data set {d!r}; valid: {', '.join(DATASETS)}")
    for v in libraries:
        if v not in LIBRARIES:
            parser.error(f"unknown library {v!r}; valid: {', '.join(LIBRARIES)}")
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
            _write_json(output, command, info, results, time.perf_counter() - t_start,
                        args.quick)
    wall = time.perf_counter() - t_start
    _write_json(output, command, info, results, wall, args.quick)
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


def _write_json(output, command, info, results, wall, quick=False):
    doc = {"command": command, "machine": info, "wall_s": wall, "quick": quick,
           "results": results}
    output.with_suffix(".json").write_text(json.dumps(doc, indent=1))


if __name__ == "__main__":
    sys.exit(main())
