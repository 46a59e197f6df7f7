"""Helpers shared by the benchmark scripts (``bench_engine.py``, ``bench_cegb.py``,
``bench_greedy_miser.py``).

* matched training settings of cbudget / LightGBM / XGBoost (:func:`library_params`);
* the data sets with feature costs and their titles (:func:`load_dataset`);
* process and machine measurements: RSS, CPU time, cores used by other processes,
  machine description, the exact command line, timed training (:func:`timed_training`);
* running one measurement in a child process, waiting for idle CPUs and retrying runs
  that other processes disturbed (:func:`run_jobs`);
* per-input prediction cost (ARCHITECTURE section 2) from leaf indices and tree
  structures (cbudget, LightGBM, scikit-learn trees), the same routine for every library (:func:`prediction_costs`, and
  round by round :class:`CostTrace`);
* accuracy at equal cost between two sweeps of trade-off values (:func:`dominance`,
  :func:`interpolated_accuracy`); the header of a results file, matplotlib.
"""
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

N_THREADS = 2  # default of --threads


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


def parse_lambdas(text):
    """Sorted distinct trade-off values >= 0 from a comma-separated string."""
    values = sorted({float(v) for v in str(text).split(",") if v.strip()})
    if not values or values[0] < 0:
        raise ValueError(f"--lambdas needs values >= 0, got {text!r}")
    return values


# ---------------------------------------------------------- data sets with costs
COST_DATASETS = ("letters", "mnist_multires", "synthetic_costly")
SYNTHETIC_ROWS = 500_000  # default total rows of make_synthetic_costly
DATASET_TITLES = {
    "letters": "Letters (UCI, 26 classes, every feature costs 1)",
    "mnist_multires": "Multi-resolution MNIST (10 classes, 1120 pixels at 4x4 / 8x8 / "
                      "16x16 / 28x28, each costs 1)",
    "synthetic_costly": "Synthetic costly binary (make_synthetic_costly, seed 0; 32 "
                        "features with costs 1 ... 200)",
}


def load_dataset(name, n_rows=None, train_rows=None, test_rows=None, valid_rows=None,
                 keep_valid=False):
    """The data set ``name`` (one of ``COST_DATASETS``) from benchmarks/datasets.py;
    ``n_rows``: total rows of the synthetic set; ``train_rows`` / ``valid_rows`` /
    ``test_rows`` keep the first rows (smoke runs). Without ``keep_valid`` the
    validation split is dropped (``X_valid`` / ``y_valid`` None)."""
    import datasets  # benchmarks/datasets.py, next to this module
    if name == "letters":
        data = datasets.load_letters(seed=0)
    elif name == "mnist_multires":
        data = datasets.load_mnist_multires(seed=0, n_valid=10000)
    elif name == "synthetic_costly":
        data = datasets.make_synthetic_costly(n_samples=n_rows or SYNTHETIC_ROWS, seed=0)
    else:
        raise ValueError(f"unknown data set {name!r}; valid: {', '.join(COST_DATASETS)}")
    for part, rows in (("train", train_rows), ("valid", valid_rows), ("test", test_rows)):
        if rows:
            for key in (f"X_{part}", f"y_{part}", f"p_{part}", f"hard_{part}"):
                if key in data:
                    data[key] = data[key][:rows]
    if not keep_valid:
        data["X_valid"] = data["y_valid"] = None
    return data


def load_for_child(name, args, keep_valid=False):
    """:func:`load_dataset` with the cuts of a child's ``args`` (``n_rows``,
    ``train_rows``, ``valid_rows`` if present, ``test_rows``), then a garbage
    collection. Returns (data, seconds to load, RSS after loading in bytes)."""
    t = time.perf_counter()
    data = load_dataset(name, n_rows=args.n_rows, train_rows=args.train_rows,
                        valid_rows=getattr(args, "valid_rows", None),
                        test_rows=args.test_rows, keep_valid=keep_valid)
    t_load = time.perf_counter() - t
    gc.collect()
    return data, t_load, rss_bytes()


# -------------------------------------------------------------------- measurements
def rss_bytes():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def maxrss_bytes():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # KiB on Linux


def cpu_seconds():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def cpu_jiffies():
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


def loadavg():
    with open("/proc/loadavg") as f:
        return [float(v) for v in f.read().split()[:3]]


class Clock:
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


def source_hash(package_dir):
    """sha256 (first 12 hex digits) over cbudget's .py/.pyx/.pxd sources: identifies the
    version benchmarked (the repository may have no commit for it)."""
    h = hashlib.sha256()
    root = Path(package_dir)
    for path in sorted(list(root.rglob("*.py")) + list(root.rglob("*.pyx"))
                       + list(root.rglob("*.pxd"))):
        h.update(str(path.relative_to(root)).encode())
        h.update(path.read_bytes())
    return h.hexdigest()[:12]


def library_version(library):
    """(version text, package directory) of ``library`` (``cbudget``: with the source
    hash)."""
    import importlib
    module = importlib.import_module(library)
    location = os.path.dirname(module.__file__)
    if library == "cbudget":
        return f"{module.__version__} (sources {source_hash(location)})", location
    return module.__version__, location


def machine_info(libraries=("lightgbm", "xgboost")):
    """nproc, CPU, memory, Python / numpy / ``libraries`` versions, the cbudget source
    hash and the platform."""
    import importlib
    versions = {lib: importlib.import_module(lib).__version__ for lib in libraries}
    try:
        import cbudget
        cb = f"cbudget {cbudget.__version__} (sources {source_hash(os.path.dirname(cbudget.__file__))}, " \
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
    info = {
        "nproc": os.cpu_count(), "affinity": len(os.sched_getaffinity(0)), "cpu": cpu,
        "mem_gb": round(mem_gb, 1), "python": platform.python_version(),
        "numpy": np.__version__}
    info.update(versions)
    info.update({"cbudget": cb, "platform": platform.platform()})
    return info


LIBRARY_LABELS = {"cbudget": "cbudget", "lightgbm": "LightGBM", "xgboost": "XGBoost",
                  "sklearn": "scikit-learn"}


def machine_text(info):
    """The "Machine: ..." sentence of a results file."""
    libs = "".join(f"{LIBRARY_LABELS[lib]} {info[lib]}, "
                   for lib in ("lightgbm", "xgboost", "sklearn") if lib in info)
    return (f"Machine: nproc {info['nproc']} (affinity {info['affinity']}), {info['cpu']}, "
            f"{info['mem_gb']} GB; Python {info['python']}, numpy {info['numpy']}, "
            f"{libs}{info['cbudget']}; {info['platform']}.")


def shared_machine_text(busy, nproc):
    """Warning paragraph for runs during which other processes kept CPUs busy; ``busy``
    is a list of (what ran, average cores used by other processes). Empty if none."""
    loaded = [(what, c) for what, c in busy if c > 0.3]
    if not loaded:
        return ""
    return ("**Shared machine:** other processes kept on average "
            + ", ".join(f"{c:.2f} cores busy during {what}" for what, c in loaded)
            + f" (of {nproc}). Multi-threaded (OpenMP) training slows down "
            "far more than in proportion when a thread is preempted, so those times "
            "are inflated and their ratios are unreliable.")


def command_line():
    pythonpath = os.environ.get("PYTHONPATH")
    prefix = f"PYTHONPATH={shlex.quote(pythonpath)} " if pythonpath else ""
    return prefix + "python " + " ".join(shlex.quote(a) for a in sys.argv)


SMOKE_BANNER = ("**Smoke run (`--quick`): small data and few rounds; the numbers say "
                "nothing about accuracy, cost or speed.**")


def results_header(title, command, info, wall_s, busy, banners=()):
    """First lines of a results file: title, ``banners`` (bold warnings), the exact
    command, the machine, the total wall time and the :func:`shared_machine_text`
    warning for ``busy`` (list of (what ran, cores used by other processes))."""
    out = [f"# {title}", ""]
    for banner in banners:
        out += [banner, ""]
    out += ["Command:", "", "```", command, "```", "", machine_text(info), "",
            f"Total wall time: {wall_s / 60:.1f} min.", ""]
    warning = shared_machine_text(busy, info["nproc"])
    if warning:
        out += [warning, ""]
    return out


def rendered_from_note(text, path):
    """``text`` (a results file) with a line saying it was re-rendered from ``path``."""
    return text.replace("\nMachine:", f"\nRendered from `{path.name}` by `{command_line()}`."
                        "\n\nMachine:", 1)


def write_rerendered(text, path, output, png, caption):
    """Write (and print) a results file re-rendered from its JSON ``path``: the note saying
    so, and the plot's caption when ``png`` was drawn. Returns 0 (an exit status)."""
    text = rendered_from_note(text, path)
    if png:
        text += f"\nPlot: `{png.name}` ({caption}).\n"
    print(text)
    output.write_text(text)
    return 0


def pyplot():
    """matplotlib.pyplot with the Agg backend, or None when matplotlib is missing."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    return plt


def subplot_grid(results_by_dataset, n_rows=1, panel=(5.2, 4.2)):
    """A figure with ``n_rows`` rows and one column per data set that has a successful
    run: ``(plt, fig, axes (n_rows, n_columns), data set names)``, or None when
    matplotlib is missing or nothing succeeded."""
    plt = pyplot()
    if plt is None:
        return None
    names = [n for n, rs in results_by_dataset.items() if any("error" not in r for r in rs)]
    if not names:
        return None
    fig, axes = plt.subplots(n_rows, len(names), squeeze=False,
                             figsize=(panel[0] * len(names), panel[1] * n_rows))
    return plt, fig, axes, names


# --------------------------------------------------------------- running children
def benchmark_parser(doc, datasets, *child_options):
    """The argument parser of a benchmark script: the docstring's first paragraph as its
    description, ``--datasets`` (comma-separated subset of ``datasets``), and the hidden
    options of a child run: ``--child`` and ``child_options`` (e.g. ``"--method"``,
    ``"--dataset"``; values are strings)."""
    import argparse
    parser = argparse.ArgumentParser(description=doc.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--datasets", default=",".join(datasets),
                        help="comma-separated subset of " + ",".join(datasets))
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    for option in child_options:
        parser.add_argument(option, help=argparse.SUPPRESS)
    return parser


def add_run_arguments(parser, default_threads=N_THREADS):
    """The options every benchmark shares: threads, waiting for idle CPUs, retries,
    child timeout, re-rendering."""
    parser.add_argument("--threads", type=int, default=default_threads,
                        help=f"threads for every library (default {default_threads})")
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


def add_data_arguments(parser, synthetic_rows, valid=False):
    """Options cutting the data sets: ``--n-rows`` (synthetic set), ``--train-rows``,
    (``--valid-rows``), ``--test-rows``."""
    parser.add_argument("--n-rows", type=int, default=None,
                        help=f"total rows of the synthetic set (default {synthetic_rows:,})")
    parts = ("training", "validation", "test") if valid else ("training", "test")
    for part in parts:
        option = {"training": "--train-rows", "validation": "--valid-rows",
                  "test": "--test-rows"}[part]
        parser.add_argument(option, type=int, default=None,
                            help=f"keep only the first N {part} rows of every data set")


def parse_choices(parser, text, valid, what):
    """The comma-separated names of ``text``, each checked against ``valid`` (a parser
    error names the bad one and the valid ones)."""
    names = [v.strip() for v in text.split(",") if v.strip()]
    for name in names:
        if name not in valid:
            parser.error(f"unknown {what} {name!r}; valid: {', '.join(valid)}")
    return names


def special_mode(args, run_child, render_from):
    """``--child``: run one measurement (``run_child(args)``) and print its JSON line;
    ``--render-from``: re-render an earlier run. Returns the exit code, or None for a
    normal run."""
    if args.child:
        print(json.dumps(run_child(args)), flush=True)
        return 0
    if args.render_from:
        return render_from(Path(args.render_from), args.output)
    return None


def parse_run_args(parser, argv, run_child, render_from, quick=None, quick_keys=()):
    """The tail every benchmark's ``main`` shares: the common options, parsing, the
    ``--child`` / ``--render-from`` modes, and with ``--quick`` the row limits of
    ``quick_keys`` not given on the command line taken from ``quick``. Returns ``(args,
    exit code of a special mode or None)``."""
    add_run_arguments(parser)
    args = parser.parse_args(argv)
    mode = special_mode(args, run_child, render_from)
    if mode is None and args.quick:
        for key in quick_keys:
            setattr(args, key, getattr(args, key) or quick[key])
    return args, mode


def busy_cores(seconds=3.0):
    """Cores kept busy by all processes over the next ``seconds`` (this one sleeps)."""
    b0, t0 = cpu_jiffies()
    time.sleep(seconds)
    b1, t1 = cpu_jiffies()
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


def run_with_retries(launch, args, log):
    """Call ``launch()`` (one child run, returns its result dict); call it again (up to
    ``args.retries`` times) while other processes kept more than
    ``args.max_other_cores`` cores busy during its training, and keep the least
    disturbed run. Waits for idle CPUs first if ``args.wait_idle``."""
    best, history = None, []
    for attempt in range(1 + max(0, args.retries)):
        if args.wait_idle > 0:
            waited, busy = wait_for_idle(args.wait_idle, args.idle_cores)
            print(f"    waited {waited:.0f} s for idle CPUs (other processes: "
                  f"{busy:.2f} cores)", file=log, flush=True)
        r = launch()
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


def run_child_command(cmd, timeout, log, label, ident):
    """Run ``cmd`` (a benchmark script in ``--child`` mode) and return the dict of the
    last JSON line it printed, with ``child_wall_s`` added; on a timeout or a failure,
    ``ident`` plus ``error`` and ``child_wall_s``. ``label`` names the run in the log."""
    t = time.perf_counter()
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        wall = time.perf_counter() - t
        print(f"  {label} timed out after {wall:.0f} s", file=log, flush=True)
        return dict(ident, error=f"timed out after {wall:.0f} s", child_wall_s=wall)
    wall = time.perf_counter() - t
    for line in reversed(proc.stdout.splitlines()):
        if line.startswith("{"):
            result = json.loads(line)
            result["child_wall_s"] = wall
            return result
    tail = (proc.stderr or proc.stdout).strip().splitlines()[-15:]
    print(f"  {label} FAILED (exit {proc.returncode}):\n    " + "\n    ".join(tail),
          file=log, flush=True)
    return dict(ident, error=f"exit {proc.returncode}: " + (tail[-1] if tail else "no output"),
                child_wall_s=wall)


def run_jobs(jobs, launch, args, log, save, describe):
    """Run the child measurements ``jobs`` one after the other.

    ``jobs``: list of ``(key, job)``; ``launch(job)`` runs one child and returns its
    result dict (see :func:`run_child_command`); it is retried by
    :func:`run_with_retries`. Results are collected as ``{key: [result, ...]}``;
    ``save(results)`` is called after every job (partial results survive a crash of a
    later child); ``describe(result)`` is the log line of a successful job. ``job["label"]``
    names the job in the log."""
    results = {}
    for key, job in jobs:
        print(f"[{time.strftime('%H:%M:%S')}] {job['label']} ...", file=log, flush=True)
        r = run_with_retries(lambda: launch(job), args, log)
        results.setdefault(key, []).append(r)
        if "error" not in r:
            print(f"    done in {r['child_wall_s']:.1f} s: {describe(r)}", file=log,
                  flush=True)
        save(results)
    return results


def attempts_text(r):
    h = r.get("attempts_other_cores") or []
    if len(h) <= 1:
        return ""
    return (f", best of {len(h)} runs (other processes: "
            + ", ".join(f"{c:.2f}" for c in h) + " cores)")


def write_json(output, command, info, results, wall, quick=False, **extra):
    """The raw results next to the Markdown ``output`` (same stem, ``.json``)."""
    doc = {"command": command, "machine": info, "wall_s": wall, "quick": quick,
           "results": results}
    doc.update(extra)
    output.with_suffix(".json").write_text(json.dumps(doc, indent=1))


# ------------------------------------------------------------------------ format
def fmt(v, spec):
    return "n/a" if v is None or (isinstance(v, float) and v != v) else format(v, spec)


def ratio(a, b):
    return None if a is None or b is None or b == 0 else a / b


# ------------------------------------------------------------ accuracy at equal cost
def dominance(points, references, cost_key="mean_cost", score_key="accuracy"):
    """For each reference point (in order of cost): the best of ``points`` (highest
    score, then lowest cost) among those whose cost is at most the reference's.
    Returns a list of dicts ``{"reference", "best" (None if no point is that cheap),
    "ok" (best's score >= the reference's)}``."""
    rows = []
    for g in sorted(references, key=lambda r: r[cost_key]):
        cheaper = [c for c in points if c[cost_key] <= g[cost_key] * (1 + 1e-12)]
        best = (max(cheaper, key=lambda c: (c[score_key], -c[cost_key])) if cheaper
                else None)
        rows.append({"reference": g, "best": best,
                     "ok": best is not None and best[score_key] >= g[score_key]})
    return rows


def interpolated_accuracy(points, cost, cost_key="mean_cost", score_key="accuracy"):
    """The score of ``points`` at ``cost`` on the line through them (sorted by cost,
    linear in log(1 + cost)); None outside the range of their costs."""
    pts = sorted((c[cost_key], c[score_key]) for c in points)
    costs = np.log1p([p[0] for p in pts])
    if not pts or not costs[0] <= np.log1p(cost) <= costs[-1]:
        return None
    return float(np.interp(np.log1p(cost), costs, [p[1] for p in pts]))


# ------------------------------------------------------------- cost summaries
def cost_fields(cost, n_acquired, feature_costs, data, cut_test=False):
    """Result fields describing the per-input test costs ``cost`` (and features acquired
    per input): quantiles, maximum, the full cost; on the synthetic costly set also the
    mean cost of the hard and easy inputs and the reference accuracies of the test set
    (None when ``cut_test``: the test set was cut, the references are for all of it)."""
    out = {"cost_quantiles": {q: float(np.quantile(cost, float(q)))
                              for q in ("0.1", "0.5", "0.9")},
           "max_cost": float(cost.max()),
           "full_cost": float(np.sum(feature_costs)),
           "mean_features_acquired": float(n_acquired.mean())}
    if "hard_test" in data:
        hard = data["hard_test"]
        out["mean_cost_hard"] = float(cost[hard].mean()) if hard.any() else None
        out["mean_cost_easy"] = float(cost[~hard].mean()) if (~hard).any() else None
        for key in ("bayes_accuracy_test", "cheap_rule_accuracy_test", "hard_fraction_test"):
            out[key] = data[key] if not cut_test else None
    return out


def reference_notes(ok, label):
    """Notes on the synthetic costly set's references and the mean cost of its hard /
    easy test inputs per run (``label(result)`` names a run, ``ok`` in report order)."""
    notes = []
    syn = next((r for r in ok if r.get("bayes_accuracy_test") is not None), None)
    if syn:
        notes.append(f"References on this test set: Bayes accuracy "
                     f"{syn['bayes_accuracy_test']:.4f}; the best rule on the cost-1 "
                     f"features only (cost 3) {syn['cheap_rule_accuracy_test']:.4f}; "
                     f"{syn['hard_fraction_test']:.1%} of the inputs are hard.")
    hard = [r for r in ok if r.get("mean_cost_hard") is not None]
    if hard:
        notes.append("Mean cost on hard / easy test inputs: " + "; ".join(
            f"{label(r)}: {r['mean_cost_hard']:,.1f} / {r['mean_cost_easy']:,.1f}"
            for r in hard) + ".")
    return notes


def start_run(output):
    """Before the first child: create the output directory, print the command line to
    stderr. Returns (command line, machine info, log stream)."""
    output.parent.mkdir(parents=True, exist_ok=True)
    command = command_line()
    info = machine_info(libraries=("lightgbm",))
    log = sys.stderr
    print(f"# {command}", file=log, flush=True)
    return command, info, log


def finish_run(output, png, wall, log, results):
    """The last log line of a benchmark (the files written, the wall time); returns the
    exit code: 0 if no child failed."""
    print(f"# wrote {output}, {output.with_suffix('.json')}"
          + (f", {png}" if png else " (no plot: matplotlib missing)")
          + f" (total wall time {wall / 60:.1f} min)", file=log, flush=True)
    return 0 if all("error" not in r for rs in results.values() for r in rs) else 1


# ------------------------------------------------------------- prediction cost
# ARCHITECTURE section 2: an input pays feature_costs[m] once, the first time any node on
# its paths through all trees tests m, plus split_cost per split node it visits. One
# routine for every library: per tree, a table leaf id -> (bit mask of the features on
# the root-to-leaf path, number of split nodes on it); per input, the masks of the leaves
# it reaches are OR-ed over the trees and the costs of the set bits summed.

def _leaf_paths(left, right, feature):
    """``{leaf node id: (path feature mask, depth)}`` of a tree given by its child and
    split-feature lists (-1 children at leaves)."""
    out = {}
    stack = [(0, 0, 0)]
    while stack:
        node, mask, depth = stack.pop()
        if left[node] == -1:
            out[node] = (mask, depth)
        else:
            mask |= 1 << feature[node]
            stack.append((left[node], mask, depth + 1))
            stack.append((right[node], mask, depth + 1))
    return out


def cbudget_leaf_paths(tree):
    """``{leaf node id: (path feature mask, depth)}`` of one cbudget tree (a NODE_DTYPE
    struct array: node 0 the root, ``left``/``right`` child ids, -1 at leaves,
    ``feature`` the split feature). Masks are Python ints (bit m = feature m); the
    leaf ids are those of ``Booster.predict(X, pred_leaf=True)``."""
    return _leaf_paths(*(tree[f].tolist() for f in ("left", "right", "feature")))


def sklearn_leaf_paths(tree):
    """``{leaf node id: (path feature mask, depth)}`` of one scikit-learn tree (the
    ``tree_`` attribute of a fitted ``DecisionTreeClassifier``, e.g. an estimator of a
    ``RandomForestClassifier``: node 0 the root, ``children_left`` / ``children_right``
    -1 at leaves, ``feature`` the split feature). The leaf ids are those of
    ``estimator.apply(X)``."""
    return _leaf_paths(*(np.asarray(a).tolist() for a in (
        tree.children_left, tree.children_right, tree.feature)))


def lightgbm_leaf_paths(tree_structure, values=None):
    """``{leaf_index: (path feature mask, depth)}`` of one tree of LightGBM's
    ``Booster.dump_model()["tree_info"][t]["tree_structure"]`` (split nodes carry
    ``split_feature`` (the original column index), ``left_child``, ``right_child``;
    leaves ``leaf_index``, the ids of ``predict(X, pred_leaf=True)``). A tree without
    splits is a single leaf with index 0. If a dict ``values`` is given, it receives
    ``{leaf_index: leaf_value}``."""
    out = {}
    stack = [(tree_structure, 0, 0)]
    while stack:
        node, mask, depth = stack.pop()
        if "split_feature" not in node:
            out[node.get("leaf_index", 0)] = (mask, depth)
            if values is not None:
                values[node.get("leaf_index", 0)] = float(node["leaf_value"])
        else:
            mask |= 1 << int(node["split_feature"])
            stack.append((node["left_child"], mask, depth + 1))
            stack.append((node["right_child"], mask, depth + 1))
    return out


class PathTables:
    """Leaf tables of all trees packed for :func:`prediction_costs`: ``masks`` uint64
    (total rows, n_words) (row ``offsets[t] + leaf id`` is the path mask of that leaf
    of tree ``t``; rows of ids that are no leaf are 0), ``depths`` int64 (total rows,),
    ``offsets`` int64 (n_trees,); ``tree_masks``: per tree, the mask (Python int) of the
    features it splits on."""

    def __init__(self, leaf_paths, n_features):
        self.n_features = int(n_features)
        self.n_words = max(1, -(-self.n_features // 64))
        n_bytes = 8 * self.n_words
        sizes = [max(paths) + 1 for paths in leaf_paths]
        self.offsets = np.zeros(len(sizes), dtype=np.int64)
        if sizes:
            self.offsets[1:] = np.cumsum(sizes[:-1])
        total = int(sum(sizes))
        raw = bytearray(total * n_bytes)
        self.depths = np.zeros(total, dtype=np.int64)
        used = 0
        self.tree_masks = []
        for offset, paths in zip(self.offsets.tolist(), leaf_paths):
            tree_mask = 0
            for leaf, (mask, depth) in paths.items():
                row = offset + leaf
                raw[row * n_bytes:(row + 1) * n_bytes] = mask.to_bytes(n_bytes, "little")
                self.depths[row] = depth
                tree_mask |= mask
            self.tree_masks.append(tree_mask)
            used |= tree_mask
        self.masks = np.frombuffer(bytes(raw), dtype="<u8").reshape(total, self.n_words)
        self.used_mask = used

    @property
    def n_trees(self):
        return self.offsets.shape[0]

    def used_features(self):
        """Sorted indices of the features any split tests."""
        return np.array([m for m in range(self.n_features) if self.used_mask >> m & 1],
                        dtype=np.int64)


def bits_matrix(words, n_features):
    """uint64 words (n, n_words) -> bool (n, n_features): bit m of row i."""
    bits = np.unpackbits(np.ascontiguousarray(words, dtype="<u8").view(np.uint8), axis=1,
                         bitorder="little")
    return bits[:, :n_features].astype(bool)


def prediction_costs(leaves, tables, feature_costs, split_cost=0.0, chunk_rows=4096):
    """Per-input prediction cost of a tree ensemble (ARCHITECTURE section 2).

    Parameters
    ----------
    leaves : int array (n_samples, n_trees)
        The leaf id each input reaches in each tree (``pred_leaf``), trees in the order
        of ``tables``.
    tables : PathTables
    feature_costs : float array (n_features,)
    split_cost : float
        Cost of evaluating one split node for one input.

    Returns
    -------
    cost : float64 (n_samples,)
    n_acquired : int64 (n_samples,): features acquired per input
    """
    leaves = np.asarray(leaves)
    n, n_trees = leaves.shape
    if n_trees != tables.n_trees:
        raise ValueError(f"{n_trees} trees in the leaf matrix, {tables.n_trees} tables")
    feature_costs = np.asarray(feature_costs, dtype=np.float64)
    cost = np.zeros(n)
    n_acquired = np.zeros(n, dtype=np.int64)
    offsets = tables.offsets
    for a in range(0, n, chunk_rows):
        b = min(n, a + chunk_rows)
        # (n_trees, k) rows of the packed tables, one contiguous row per tree
        rows = leaves[a:b].T.astype(np.int64) + offsets[:, None]
        acquired = np.zeros((b - a, tables.n_words), dtype=np.uint64)
        for t in range(n_trees):
            acquired |= tables.masks[rows[t]]
        bits = bits_matrix(acquired, tables.n_features)
        cost[a:b] = bits @ feature_costs
        n_acquired[a:b] = bits.sum(axis=1)
        if split_cost:
            cost[a:b] += split_cost * tables.depths[rows].sum(axis=0)
    return cost, n_acquired


class CostTrace:
    """Per-input prediction cost round after round: the cost of :func:`prediction_costs`
    for the trees added so far, updated in place as trees are added (inputs keep the
    features they acquired, ARCHITECTURE section 2). Only the newly acquired bits of
    each tree block are unpacked, so a trace over thousands of rounds stays cheap.

    Attributes: ``cost`` float64 (n_samples,), ``n_acquired`` int64 (n_samples,),
    ``acquired`` uint64 (n_samples, n_words)."""

    def __init__(self, tables, feature_costs, n_samples, split_cost=0.0):
        self.tables = tables
        self.split_cost = float(split_cost)
        by_word = np.zeros(64 * tables.n_words)
        by_word[:tables.n_features] = np.asarray(feature_costs, dtype=np.float64)
        self.costs_by_word = by_word.reshape(tables.n_words, 64)
        self.acquired = np.zeros((n_samples, tables.n_words), dtype=np.uint64)
        self.cost = np.zeros(n_samples)
        self.n_acquired = np.zeros(n_samples, dtype=np.int64)

    def add_trees(self, leaves, first_tree):
        """Add trees ``first_tree, first_tree + 1, ...``; ``leaves`` int (n_samples, k):
        the leaf each input reaches in each of them (``pred_leaf`` columns)."""
        leaves = np.asarray(leaves)
        k = leaves.shape[1]
        rows = leaves.T.astype(np.int64) + self.tables.offsets[first_tree:first_tree + k,
                                                               None]
        acquired = self.acquired.copy()
        for t in range(k):
            acquired |= self.tables.masks[rows[t]]
        new = acquired & ~self.acquired
        self.acquired = acquired
        inputs, words = np.nonzero(new)
        if inputs.size:
            bits = bits_matrix(new[inputs, words][:, None], 64)
            n = self.cost.shape[0]
            self.cost += np.bincount(inputs, minlength=n,
                                     weights=(bits * self.costs_by_word[words]).sum(axis=1))
            self.n_acquired += np.bincount(inputs, minlength=n,
                                           weights=bits.sum(axis=1)).astype(np.int64)
        if self.split_cost:
            self.cost += self.split_cost * self.tables.depths[rows].sum(axis=0)


# ------------------------------------------------------------------ timed training
def train_cbudget_timed(data, params, n_rounds, clock, **dataset_kwargs):
    """Build the cbudget Dataset and train, ticking ``clock`` after every round.
    Returns (booster, seconds to build the data set, seconds in all, dtrain)."""
    import cbudget

    class RoundClock(cbudget.TrainingCallback):
        def after_iteration(self, model, epoch, evals_log):
            clock.tick()
            return False

    clock.start()
    dtrain = cbudget.Dataset(data["X_train"], data["y_train"], max_bin=255, **dataset_kwargs)
    t_dataset = clock.since_start()
    booster = cbudget.train(params, dtrain, n_rounds, verbose_eval=False,
                            callbacks=[RoundClock()])
    return booster, t_dataset, clock.since_start(), dtrain


def train_lightgbm_timed(data, params, n_rounds, clock):
    """Build the LightGBM Dataset (binning included) and train, ticking ``clock``
    after every round. Returns (booster, seconds to build the data set, seconds in
    all, dtrain)."""
    import lightgbm as lgb

    def round_clock(env):
        clock.tick()

    clock.start()
    dtrain = lgb.Dataset(data["X_train"], data["y_train"], params=params,
                         free_raw_data=True)
    dtrain.construct()  # binning happens here (it is lazy otherwise)
    t_dataset = clock.since_start()
    booster = lgb.train(params, dtrain, num_boost_round=n_rounds, callbacks=[round_clock])
    return booster, t_dataset, clock.since_start(), dtrain


def timed_training(trainer, data, params, n_rounds, *args):
    """Call ``trainer(data, params, n_rounds, clock, *args)`` (one of the ``train_*_timed``
    functions above, or a wrapper returning ``(booster, seconds to build the data set,
    seconds in all, ...)``) and measure it.

    Returns ``(what trainer returned, measurements)``: a dict with ``dataset_build_s``,
    ``train_s``, ``after_last_round_s``, ``round_end_s`` (elapsed time at the end of
    every round), ``train_cpu_s``, ``other_cores_during_train``, ``loadavg_before``,
    ``loadavg_after``. Raises RuntimeError if the library trained fewer rounds."""
    clock = Clock()
    load_before = loadavg()
    cpu0, busy0 = cpu_seconds(), cpu_jiffies()[0]
    out = trainer(data, params, n_rounds, clock, *args)
    cpu_train = cpu_seconds() - cpu0
    busy1 = cpu_jiffies()[0]
    t_dataset, t_total = out[1], out[2]
    if len(clock.round_ends) != n_rounds:
        raise RuntimeError(f"trained {len(clock.round_ends)} rounds, expected {n_rounds}")
    return out, {
        "dataset_build_s": t_dataset, "train_s": t_total,
        "after_last_round_s": t_total - clock.round_ends[-1],
        "round_end_s": clock.round_ends, "train_cpu_s": cpu_train,
        "other_cores_during_train": other_cores(busy0, busy1, cpu_train, t_total),
        "loadavg_before": load_before, "loadavg_after": loadavg()}


def spread(values):
    """``values`` in an order that covers their range early: the ends, then repeatedly
    the middle of the largest gap (so a run cut by the time budget still has a curve)."""
    values = list(values)
    if len(values) <= 2:
        return values
    order, gaps = [0, len(values) - 1], [(0, len(values) - 1)]
    while gaps:
        gaps.sort(key=lambda g: g[1] - g[0], reverse=True)
        a, b = gaps.pop(0)
        if b - a < 2:
            continue
        m = (a + b) // 2
        order.append(m)
        gaps += [(a, m), (m, b)]
    return [values[i] for i in order]
