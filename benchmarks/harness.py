"""The machinery the benchmark scripts share (benchmarks/README.md, "Layout").

A script ``bench_<name>.py`` has its grid (``FULL``, ``QUICK``, ``plan(args, names)``),
the run of one point (``run_point(spec)``), its tables (``render(doc)``) and plot
(``plot(doc, path)``), and ends with ``sys.exit(harness.main(sys.modules[__name__]))``:
:func:`main` does the rest (options, one child process per point, waiting for idle CPUs,
retries, the time budget, the JSON and the Markdown). README.md lists what it reads.
"""
import argparse
import gc
import hashlib
import importlib
import importlib.util
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

N_THREADS = 2
RESULTS = Path(__file__).resolve().parent / "results"
ROW_OPTIONS = ("n_rows", "train_rows", "valid_rows", "test_rows")
BEGIN = ("<!-- BEGIN GENERATED: the benchmark script rewrites this block (--render-from "
         "re-renders it from the JSON); write conclusions outside it -->")
END = "<!-- END GENERATED -->"
SMOKE_BANNER = ("**Smoke run (`--quick`): small data and few rounds; the numbers say "
                "nothing about accuracy, cost or speed.**")
COST_CHECK_TOL = 1e-9


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
    elif library == "lightgbm":
        p = {"objective": "binary" if binary else "multiclass", "boosting": "gbdt",
             "learning_rate": 0.1, "num_leaves": 31, "max_depth": -1, "max_bin": 255,
             "min_data_in_leaf": 20, "min_sum_hessian_in_leaf": 1e-3, "lambda_l2": 1.0,
             "lambda_l1": 0.0, "min_gain_to_split": 0.0, "bagging_fraction": 1.0,
             "bagging_freq": 0, "feature_fraction": 1.0, "num_threads": n_threads,
             "seed": 0, "verbose": -1}
    elif library == "xgboost":
        p = {"objective": "binary:logistic" if binary else "multi:softprob",
             "tree_method": "hist", "grow_policy": "lossguide", "max_leaves": 31,
             "max_depth": 0, "max_bin": 256, "eta": 0.1, "lambda": 1.0, "alpha": 0.0,
             "gamma": 0.0, "min_child_weight": 1e-3, "subsample": 1.0,
             "colsample_bytree": 1.0, "nthread": n_threads, "seed": 0, "verbosity": 0}
    else:
        raise ValueError(f"unknown library {library!r}")
    if not binary:
        p["num_class"] = n_classes
    return p


def parse_choices(text, valid, what):
    """The comma-separated names of ``text``, each one of ``valid``."""
    names = [v.strip() for v in text.split(",") if v.strip()]
    for name in names:
        if name not in valid:
            raise ValueError(f"unknown {what} {name!r}; valid: {', '.join(valid)}")
    return names


def positive(text):
    """An argparse type: an integer >= 1."""
    if int(text) < 1:
        raise argparse.ArgumentTypeError(f"needs an integer >= 1, got {text!r}")
    return int(text)


def number_list(kind):
    """An argparse type: comma-separated numbers >= 0 of ``kind``, sorted, each once."""
    def parse(text):
        values = sorted({kind(v) for v in text.split(",") if v.strip()})
        if not values or values[0] < 0:
            raise argparse.ArgumentTypeError(f"needs numbers >= 0, got {text!r}")
        return values
    return parse


def add_grid_options(parser, full):
    """An option ``--<key>`` (numbers, comma-separated for a sequence) for every setting of
    a script's ``FULL`` but the row limits; given, it holds for every data set."""
    for key, value in full.items():
        if key in ROW_OPTIONS:
            continue
        sample = next(iter(value.values())) if isinstance(value, dict) else value
        if isinstance(sample, (tuple, list)):
            kind, text = number_list(type(sample[0])), values_text(sample)
        else:
            kind, text = (positive if isinstance(sample, int) else float), f"{sample:g}"
        parser.add_argument("--" + key.replace("_", "-"), type=kind, default=None,
                            help="default " + ("per data set, FULL in the script"
                                               if isinstance(value, dict) else text))


def setting(args, key, name=None):
    """The option ``--<key>`` if given, else the script's ``QUICK`` (with ``--quick``) or
    ``FULL`` setting; a dict there holds a value per data set: the one of ``name``."""
    value = getattr(args, key, None)
    if value is None:
        value = args.grid[key]
        value = value.get(name) if isinstance(value, dict) else value
    return list(value) if isinstance(value, tuple) else value


# ---------------------------------------------------------------------- data sets
COST_DATASETS = ("letters", "mnist_multires", "synthetic_costly")
SYNTHETIC_ROWS = 500_000  # default total rows of make_synthetic_costly
DATASET_TITLES = {  # "<short title> (<details>)"
    "letters": "Letters (UCI, 26 classes, every feature costs 1)",
    "letters_am": "Letters A-M vs N-Z (UCI, 16 features, cost 1 each)",
    "letters_skewed": "Letters A vs rest, skewed (paper section 6.3 style: negatives x10 in "
                      "training; 16 features, cost 1 each)",
    "mnist": "MNIST (10 classes, 784 pixels)",
    "mnist_multires": "Multi-resolution MNIST (10 classes, 1120 pixels at 4x4 / 8x8 / "
                      "16x16 / 28x28, each costs 1)",
    "mnist38": "MNIST 3 vs 8 (paper section 6.7: multi-resolution MNIST, 1,120 pixels, cost "
               "1 each)",
    "synthetic": "Synthetic binary (make_synthetic_binary, seed 0)",
    "synthetic_costly": "Synthetic costly binary (make_synthetic_costly, seed 0; 32 "
                        "features with costs 1 ... 200)",
}


def title(name, short=False):
    """The title of a data set (``short``: without the details in parentheses)."""
    text = DATASET_TITLES.get(name, name)
    return text.split(" (")[0] if short else text


NEG_REPLICATION = 10  # copies of every training negative of letters_skewed


def load_dataset(name, n_rows=None, train_rows=None, valid_rows=None, test_rows=None,
                 keep_valid=False):
    """A data set of datasets.py (seed 0; ``synthetic*`` of ``n_rows`` rows) or a binary task
    of one (``letters_am``, ``letters_skewed``: every training negative ``NEG_REPLICATION``
    times, ``mnist38``); ``*_rows`` keep the first rows of a part (the Bayes accuracy and
    hard fraction are the cut test set's); without ``keep_valid`` no validation part."""
    import datasets
    loaders = {
        "letters": lambda: datasets.load_letters(seed=0),
        "mnist": lambda: datasets.load_mnist(seed=0, n_valid=10000),
        "mnist_multires": lambda: datasets.load_mnist_multires(seed=0, n_valid=10000),
        "synthetic": lambda: datasets.make_synthetic_binary(
            n_samples=n_rows or 1_000_000, n_features=50, seed=0),
        "synthetic_costly": lambda: datasets.make_synthetic_costly(
            n_samples=n_rows or SYNTHETIC_ROWS, seed=0)}
    tasks = {"letters_am": ("letters", lambda y: y >= 13),
             "letters_skewed": ("letters", lambda y: y == 0),
             "mnist38": ("mnist_multires", lambda y: y == 8)}
    base = tasks[name][0] if name in tasks else name
    if base not in loaders:
        raise ValueError(f"unknown data set {name!r}; valid: {', '.join([*loaders, *tasks])}")
    data = loaders[base]()
    for part, rows in (("train", train_rows), ("valid", valid_rows), ("test", test_rows)):
        X, y = f"X_{part}", f"y_{part}"
        if name == "mnist38":  # the digits 3 and 8 only
            keep = np.isin(data[y], (3, 8))
            data[X], data[y] = data[X][keep], data[y][keep]
        if name in tasks:
            data[y], data["n_classes"] = tasks[name][1](data[y]).astype(np.int32), 2
        for key in (X, y, f"p_{part}", f"hard_{part}"):
            if rows and key in data:
                data[key] = data[key][:rows]
    if name == "letters_skewed":  # every negative NEG_REPLICATION times, next to it
        y = data["y_train"]
        source = np.repeat(np.arange(y.shape[0]), np.where(y == 0, NEG_REPLICATION, 1))
        data.update(n_train_original=int(y.shape[0]), train_source=source, y_train=y[source],
                    X_train=np.ascontiguousarray(data["X_train"][source]))
    if test_rows and "hard_test" in data:
        data["hard_fraction_test"] = float(data["hard_test"].mean())
        data["bayes_accuracy_test"] = float(np.mean((data["p_test"] > 0.5)
                                                    == (data["y_test"] == 1)))
    if not keep_valid:
        data["X_valid"] = data["y_valid"] = None
    return data


def start_child(spec, library, keep_valid=False, load=load_dataset):
    """``library`` imported (in the memory baseline), then the data set of ``spec`` (by
    ``load``, with :func:`load_dataset`'s arguments): (data, the result fields: library,
    version, data set, sizes, load time, RSS after loading)."""
    version, location = library_version(library)
    t = time.perf_counter()
    data = load(spec["dataset"], keep_valid=keep_valid,
                **{k: spec.get(k) for k in ROW_OPTIONS})
    t_load = time.perf_counter() - t
    gc.collect()
    sizes = {f"n_{part}": int(data[f"X_{part}"].shape[0]) for part in ("train", "valid", "test")
             if data.get(f"X_{part}") is not None}
    return data, {"library": library, "version": version, "location": location,
                  "dataset": spec["dataset"], **sizes, "n_features": int(data["X_test"].shape[1]),
                  "n_classes": int(data["n_classes"]), "n_threads": spec["threads"],
                  "load_s": t_load, "rss_after_load_mb": rss_bytes() / 2**20}


# ------------------------------------------------------------------ measurements
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
    total = sum(v[:8])  # user nice system idle iowait irq softirq steal
    return total - v[3] - v[4], total


class Clock:
    """Elapsed time at the end of every round, from ``start()``."""

    def __init__(self):
        self.t0, self.round_ends = None, []

    def start(self):
        self.t0 = time.perf_counter()

    def tick(self):
        self.round_ends.append(time.perf_counter() - self.t0)

    def since_start(self):
        return time.perf_counter() - self.t0


class Timer:
    """Wall and CPU time of a block and the cores other processes kept busy meanwhile."""

    def __enter__(self):
        self.cpu0, self.busy0, self.t0 = cpu_seconds(), cpu_jiffies()[0], time.perf_counter()
        return self

    def __exit__(self, *exc):
        self.wall = time.perf_counter() - self.t0
        self.cpu = cpu_seconds() - self.cpu0
        busy = (cpu_jiffies()[0] - self.busy0) / os.sysconf("SC_CLK_TCK")
        self.other = max(0.0, (busy - self.cpu) / max(self.wall, 1e-9))
        return False

    def fields(self):
        return {"train_s": self.wall, "train_cpu_s": self.cpu, "other_cores": self.other}


def source_hash(package_dir):
    """sha256 (12 hex digits) of cbudget's .py/.pyx/.pxd sources: the version benchmarked."""
    h = hashlib.sha256()
    root = Path(package_dir)
    for path in sorted(p for ext in ("py", "pyx", "pxd") for p in root.rglob(f"*.{ext}")):
        h.update(str(path.relative_to(root)).encode())
        h.update(path.read_bytes())
    return h.hexdigest()[:12]


def library_version(library):
    """(version text, package directory) of ``library`` (cbudget: with the source hash)."""
    module = importlib.import_module(library)
    location = os.path.dirname(module.__file__)
    if library == "cbudget":
        return f"{module.__version__} (sources {source_hash(location)})", location
    return module.__version__, location


def machine_info(libraries=("lightgbm", "xgboost", "sklearn", "scipy")):
    """nproc, CPU, memory, Python / numpy / ``libraries`` versions, cbudget, platform."""
    try:
        import cbudget
        from cbudget._core._openmp_helpers import openmp_enabled
        location = os.path.dirname(cbudget.__file__)
        cb = (f"cbudget {cbudget.__version__} (sources {source_hash(location)}, {location}), "
              + ("OpenMP" if openmp_enabled() else "serial build"))
    except Exception as exc:  # noqa: BLE001 - report, do not fail
        cb = f"cbudget not importable ({exc})"
    with open("/proc/cpuinfo") as f:
        cpu = next((line.split(":", 1)[1].strip() for line in f
                    if line.startswith("model name")), platform.processor() or "?")
    mem_gb = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    return {"nproc": os.cpu_count(), "affinity": len(os.sched_getaffinity(0)), "cpu": cpu,
            "mem_gb": round(mem_gb, 1), "python": platform.python_version(),
            "numpy": np.__version__,
            **{lib: importlib.import_module(lib).__version__ for lib in libraries
               if importlib.util.find_spec(lib)},
            "cbudget": cb, "platform": platform.platform()}


LIBRARY_LABELS = {"cbudget": "cbudget", "lightgbm": "LightGBM", "xgboost": "XGBoost",
                  "sklearn": "scikit-learn", "scipy": "scipy"}
_MACHINE_KEYS = ("nproc", "affinity", "cpu", "mem_gb", "python", "numpy", "cbudget", "platform")


def command_line():
    pythonpath = os.environ.get("PYTHONPATH")
    prefix = f"PYTHONPATH={shlex.quote(pythonpath)} " if pythonpath else ""
    return prefix + "python " + " ".join(shlex.quote(a) for a in sys.argv)


# ---------------------------------------------------------------- timed training
def train_cbudget_timed(data, params, n_rounds, clock, **dataset_kwargs):
    """Build the cbudget Dataset and train, ticking ``clock`` after every round:
    (booster, seconds to build the data set, seconds in all, dtrain)."""
    import cbudget

    class RoundClock(cbudget.TrainingCallback):
        def after_iteration(self, model, epoch, evals_log):
            clock.tick()
            return False

    clock.start()
    dtrain = cbudget.Dataset(data["X_train"], data["y_train"], max_bin=255, **dataset_kwargs)
    t_dataset = clock.since_start()
    booster = cbudget.train(params, dtrain, n_rounds, verbose_eval=False, callbacks=[RoundClock()])
    return booster, t_dataset, clock.since_start(), dtrain


def train_lightgbm_timed(data, params, n_rounds, clock):
    """The same for LightGBM (its Dataset constructed, i.e. binned, inside the time)."""
    import lightgbm as lgb
    clock.start()
    dtrain = lgb.Dataset(data["X_train"], data["y_train"], params=params, free_raw_data=True)
    dtrain.construct()
    t_dataset = clock.since_start()
    booster = lgb.train(params, dtrain, num_boost_round=n_rounds,
                        callbacks=[lambda env: clock.tick()])
    return booster, t_dataset, clock.since_start(), dtrain


def train_xgboost_timed(data, params, n_rounds, clock, **dmatrix_kwargs):
    """The same for XGBoost (its QuantileDMatrix built inside the time; ``dmatrix_kwargs``
    e.g. ``enable_categorical=True``)."""
    import xgboost as xgb

    class RoundClock(xgb.callback.TrainingCallback):
        def after_iteration(self, model, epoch, evals_log):
            clock.tick()
            return False

    clock.start()
    dtrain = xgb.QuantileDMatrix(data["X_train"], data["y_train"], max_bin=params["max_bin"],
                                 nthread=params["nthread"], **dmatrix_kwargs)
    t_dataset = clock.since_start()
    booster = xgb.train(params, dtrain, num_boost_round=n_rounds, callbacks=[RoundClock()],
                        verbose_eval=False)
    return booster, t_dataset, clock.since_start(), dtrain


def timed_training(trainer, data, params, n_rounds, **kwargs):
    """``trainer(data, params, n_rounds, clock, **kwargs)`` -> ``(model, data set seconds,
    seconds in all, ...)``, measured: (what it returned, the timing fields)."""
    clock = Clock()
    with Timer() as t:
        out = trainer(data, params, n_rounds, clock, **kwargs)
    if len(clock.round_ends) != n_rounds:
        raise RuntimeError(f"trained {len(clock.round_ends)} rounds, expected {n_rounds}")
    return out, {"dataset_build_s": out[1], "train_s": out[2],
                 "after_last_round_s": out[2] - clock.round_ends[-1],
                 "round_end_s": clock.round_ends, "train_cpu_s": t.cpu,
                 "other_cores_during_train": t.other}


# ------------------------------------------------------------ measuring a model
def accuracy(proba, y):
    """Accuracy of probabilities: (n,) binary (class 1 above 0.5) or (n, K) multiclass."""
    proba = np.asarray(proba)
    if proba.ndim == 2 and proba.shape[1] > 1:
        return float(np.mean(np.argmax(proba, axis=1) == y))
    return float(np.mean((proba.reshape(-1) > 0.5) == (np.asarray(y) == 1)))


def cost_summary(cost):
    """Quantiles 0.1, 0.5, 0.9 and maximum of the per-input costs."""
    q10, q50, q90 = (float(np.quantile(cost, q)) for q in (0.1, 0.5, 0.9))
    return {"cost_q10": q10, "cost_q50": q50, "cost_q90": q90, "max_cost": float(cost.max())}


def thin(values, n=60):
    """About ``n`` (round, value) pairs of a per-round list."""
    values = list(values)
    idx = (range(len(values)) if len(values) <= n else
           np.unique(np.round(np.linspace(0, len(values) - 1, n)).astype(int)))
    return [[int(i), float(values[i])] for i in idx]


def train_logged(cbudget, params, dtrain, dvalid, rounds, patience=None, **kwargs):
    """cbudget training with ``params["eval_metric"]`` on ``dvalid`` logged (and early
    stopping after ``patience`` rounds): (model, the metric per round, Timer)."""
    metric, log = params["eval_metric"], {}
    stopper = ([cbudget.EarlyStopping(patience, metric_name=metric, data_name="valid")]
               if patience else [])
    with Timer() as t:
        model = cbudget.train(params, dtrain, rounds, evals=[(dvalid, "valid")],
                              evals_result=log, verbose_eval=False, callbacks=stopper, **kwargs)
    return model, np.asarray(log["valid"][metric]), t


def binary_point(model, data, cost, proba):
    """A binary model's point: validation / test accuracy, test AUC, mean costs."""
    import datasets
    return {"valid_accuracy": accuracy(model.predict(data["X_valid"]), data["y_valid"]),
            "accuracy": accuracy(proba, data["y_test"]),
            "auc": datasets.auc(data["y_test"], proba), "mean_cost": float(cost.mean()),
            "valid_mean_cost": float(np.mean(model.predict_cost(data["X_valid"]))),
            **cost_summary(cost)}


def booster_point(booster, data, costs):
    """:func:`binary_point` of a cbudget tree model with the leaf-path cost check."""
    cost, n_acquired, _, diff = check_leaf_path_costs(booster, data["X_test"], costs)
    used = np.asarray(booster.used_features(), dtype=np.int64)
    proba = np.asarray(booster.predict(data["X_test"]), dtype=np.float64)
    return {**binary_point(booster, data, cost, proba), "features_used": int(used.size),
            "model_cost": float(costs[used].sum()),
            "checks": {"cost_max_abs_diff": diff,
                       "mean_features_acquired": float(n_acquired.mean())}}


# -------------------------------------------------------------- prediction cost
# The cost model (docs/architecture.md): an input pays feature_costs[m] once, the first
# time a node on its paths through all trees tests m, plus split_cost per split node it visits. Per
# tree, a table leaf id -> (bit mask of the features on the root-to-leaf path, depth);
# per input, the masks of the leaves it reaches are OR-ed over the trees.
def _leaf_paths(left, right, feature):
    out, stack = {}, [(0, 0, 0)]
    while stack:
        node, mask, depth = stack.pop()
        if left[node] == -1:
            out[node] = (mask, depth)
        else:
            mask |= 1 << feature[node]
            stack += [(left[node], mask, depth + 1), (right[node], mask, depth + 1)]
    return out


def cbudget_leaf_paths(tree):
    """``{leaf id: (path feature mask, depth)}`` of a cbudget tree (NODE_DTYPE array; the
    ids of ``predict(X, pred_leaf=True)``)."""
    return _leaf_paths(*(tree[f].tolist() for f in ("left", "right", "feature")))


def sklearn_leaf_paths(tree):
    """The same for a scikit-learn ``tree_`` (the ids of ``estimator.apply``)."""
    return _leaf_paths(*(np.asarray(a).tolist() for a in (
        tree.children_left, tree.children_right, tree.feature)))


def lightgbm_leaf_paths(tree_structure, values=None):
    """The same for a tree of LightGBM's ``dump_model()`` (``leaf_index`` ids of
    ``predict(X, pred_leaf=True)``); a dict ``values`` receives ``{leaf: leaf_value}``."""
    out, stack = {}, [(tree_structure, 0, 0)]
    while stack:
        node, mask, depth = stack.pop()
        if "split_feature" not in node:
            out[node.get("leaf_index", 0)] = (mask, depth)
            if values is not None:
                values[node.get("leaf_index", 0)] = float(node["leaf_value"])
        else:
            mask |= 1 << int(node["split_feature"])
            stack += [(node["left_child"], mask, depth + 1), (node["right_child"], mask, depth + 1)]
    return out


class PathTables:
    """The leaf tables of all trees packed: ``masks`` uint64 (rows, n_words), row
    ``offsets[t] + leaf id`` for tree ``t``; ``depths``; ``tree_masks`` (Python ints)."""

    def __init__(self, leaf_paths, n_features):
        self.n_features = int(n_features)
        self.n_words = max(1, -(-self.n_features // 64))
        sizes = [max(paths) + 1 for paths in leaf_paths]
        self.offsets = np.cumsum([0] + sizes, dtype=np.int64)[:-1]
        self.masks = np.zeros((sum(sizes), self.n_words), dtype=np.uint64)
        self.depths = np.zeros(sum(sizes), dtype=np.int64)
        self.tree_masks = []
        for offset, paths in zip(self.offsets.tolist(), leaf_paths, strict=True):
            tree_mask = 0
            for leaf, (mask, depth) in paths.items():
                self.masks[offset + leaf] = np.frombuffer(
                    mask.to_bytes(8 * self.n_words, "little"), dtype="<u8")
                self.depths[offset + leaf] = depth
                tree_mask |= mask
            self.tree_masks.append(tree_mask)

    @property
    def n_trees(self):
        return self.offsets.shape[0]

    def used_features(self, n_trees=None):
        """Sorted indices of the features any split of the first ``n_trees`` trees tests."""
        used = 0
        for mask in self.tree_masks[:n_trees]:
            used |= mask
        return np.array([m for m in range(self.n_features) if used >> m & 1], dtype=np.int64)


def bits_matrix(words, n_features):
    """uint64 words (n, n_words) -> bool (n, n_features): bit m of row i."""
    bits = np.unpackbits(np.ascontiguousarray(words, dtype="<u8").view(np.uint8), axis=1,
                         bitorder="little")
    return bits[:, :n_features].astype(bool)


def prediction_costs(leaves, tables, feature_costs, split_cost=0.0):
    """Per-input cost, number of features acquired and the features acquired (bool) from
    ``leaves`` (n_samples, n_trees): the leaf of each input in each tree of ``tables``."""
    leaves = np.asarray(leaves)
    if leaves.shape[1] != tables.n_trees:
        raise ValueError(f"{leaves.shape[1]} trees in the leaf matrix, {tables.n_trees} tables")
    trace = CostTrace(tables, feature_costs, leaves.shape[0], split_cost)
    trace.add_trees(leaves, 0)
    return trace.cost, trace.n_acquired, bits_matrix(trace.acquired, tables.n_features)


def check_costs(model, X, cost, acquired=None, **options):
    """The per-input ``cost`` (and ``acquired`` features) of a cbudget ``model`` against its
    ``predict_cost`` (and ``cost_report``): the largest differences; AssertionError."""
    own = np.asarray(model.predict_cost(X, **options), dtype=np.float64)
    out = {"max_abs_cost_diff": float(np.max(np.abs(own - cost))) if cost.size else 0.0}
    if not np.allclose(own, cost, rtol=COST_CHECK_TOL, atol=COST_CHECK_TOL):
        raise AssertionError(f"per-input costs differ from predict_cost: {out} (means "
                             f"{np.mean(cost)} vs {own.mean()})")
    if acquired is not None:
        rate = np.asarray(model.cost_report(X, **options).acquisition_rate)
        out["max_abs_rate_diff"] = (float(np.max(np.abs(rate - acquired.mean(axis=0))))
                                    if cost.size else 0.0)
        if out["max_abs_rate_diff"] > 1e-12:
            raise AssertionError(f"acquisition rates differ from cost_report: {out}")
    return out


def check_leaf_path_costs(booster, X, feature_costs, split_cost=0.0):
    """The leaf-path cost check of a cbudget tree model on ``X`` (:func:`check_costs`):
    (cost, features acquired per input, the PathTables, max |difference|)."""
    leaves = np.asarray(booster.predict(X, pred_leaf=True), dtype=np.int64)
    tables = PathTables([cbudget_leaf_paths(t) for t in booster.trees], len(feature_costs))
    cost, n_acquired, _ = prediction_costs(leaves.reshape(X.shape[0], -1), tables,
                                           feature_costs, split_cost)
    return cost, n_acquired, tables, check_costs(booster, X, cost)["max_abs_cost_diff"]


class CostTrace:
    """The per-input cost of :func:`prediction_costs` updated in place as trees are added
    (``add_trees``); attributes ``cost``, ``n_acquired``, ``acquired`` (uint64 words)."""

    def __init__(self, tables, feature_costs, n_samples, split_cost=0.0):
        self.tables, self.split_cost = tables, float(split_cost)
        self.feature_costs = np.asarray(feature_costs, dtype=np.float64)
        self.acquired = np.zeros((n_samples, tables.n_words), dtype=np.uint64)
        self.cost = np.zeros(n_samples)
        self.n_acquired = np.zeros(n_samples, dtype=np.int64)

    def add_trees(self, leaves, first_tree):
        """Add trees ``first_tree, ...``; ``leaves`` (n_samples, k): their leaf ids."""
        rows = np.asarray(leaves, dtype=np.int64).T
        rows = rows + self.tables.offsets[first_tree:first_tree + rows.shape[0], None]
        acquired = self.acquired.copy()
        for tree_rows in rows:
            acquired |= self.tables.masks[tree_rows]
        new = bits_matrix(acquired & ~self.acquired, self.tables.n_features)
        self.acquired = acquired
        self.cost += new @ self.feature_costs
        self.n_acquired += new.sum(axis=1)
        if self.split_cost:
            self.cost += self.split_cost * self.tables.depths[rows].sum(axis=0)


def cost_fields(cost, n_acquired, feature_costs, data, cut_test=False):
    """Result fields of the per-input test costs; on the synthetic costly set also the hard
    / easy means and the test set's references (None when ``cut_test``)."""
    out = {"cost_quantiles": {q: float(np.quantile(cost, float(q)))
                              for q in ("0.1", "0.5", "0.9")},
           "max_cost": float(cost.max()), "full_cost": float(np.sum(feature_costs)),
           "mean_features_acquired": float(n_acquired.mean())}
    if "hard_test" in data:
        hard = data["hard_test"]
        out["mean_cost_hard"] = float(cost[hard].mean()) if hard.any() else None
        out["mean_cost_easy"] = float(cost[~hard].mean()) if (~hard).any() else None
        for key in ("bayes_accuracy_test", "cheap_rule_accuracy_test", "hard_fraction_test"):
            out[key] = data[key] if not cut_test else None
    return out


# ------------------------------------------------------- accuracy at equal cost
def interpolated_accuracy(points, cost, cost_key="mean_cost", score_key="accuracy"):
    """The score of ``points`` at ``cost`` (linear in log(1 + cost)); None outside."""
    pts = sorted((c[cost_key], c[score_key]) for c in points)
    costs = np.log1p([p[0] for p in pts])
    if not pts or not costs[0] <= np.log1p(cost) <= costs[-1]:
        return None
    return float(np.interp(np.log1p(cost), costs, [p[1] for p in pts]))


def pareto(points, cost_key="mean_cost", score_key="accuracy"):
    """The points no other point beats (no more cost, a higher score), by cost."""
    front, best = [], -np.inf
    for p in sorted(points, key=lambda p: (p[cost_key], -p[score_key])):
        if p[score_key] > best:
            front.append(p)
            best = p[score_key]
    return front


def comparison_table(points, references, names, label, cost_key="mean_cost",
                     score_key="accuracy", shown=None, cost_fmt=",.2f", curve_points=None,
                     extra=()):
    """The one equal-cost layout, per reference point by cost: the best of ``points`` at no
    more cost, whether it is as good, the curve of ``curve_points`` (default ``points``) at
    the reference's cost, ``extra`` columns ``(header, function of the reference)``.
    ``names``: (reference, compared, cost name, score name); ``shown``: the score shown
    (``"error"``: 1 - it)."""
    ref, other, cost_name, score_name = names
    shown = shown or score_key
    conv = (lambda v: 1 - v) if shown != score_key else (lambda v: v)
    rows = []
    for g in sorted(references, key=lambda r: r[cost_key]):
        cheaper = [c for c in points if c[cost_key] <= g[cost_key] * (1 + 1e-12)]
        c = max(cheaper, key=lambda c: (c[score_key], -c[cost_key])) if cheaper else None
        curve = interpolated_accuracy(curve_points or points, g[cost_key], cost_key=cost_key,
                                      score_key=score_key)
        rows.append([label(g), format(g[cost_key], cost_fmt), f"{g[shown]:.4f}"]
                    + ([f"{label(c)} / {c[cost_key]:{cost_fmt}}", f"{c[shown]:.4f}",
                        f"{c[shown] - g[shown]:+.4f}"] if c else ["none this cheap", "", ""])
                    + ["yes" if c and c[score_key] >= g[score_key] else "no"]
                    + ([f"{conv(curve):.4f}", f"{conv(curve) - g[shown]:+.4f}"]
                       if curve is not None else ["", ""]) + [f(g) for _, f in extra])
    return table([f"{ref} point", f"{ref} {cost_name}", f"{ref} {score_name}",
                  f"{other} best at {cost_name} <= (point / {cost_name})", f"its {score_name}",
                  "difference", f"{other} as good", f"{other} curve at this {cost_name}",
                  "difference", *[e[0] for e in extra]], rows, "lrrlrrcrr" + "l" * len(extra))


def next_features_steps(model, row):
    """The seconds of each ``model.next_features`` call when one input's features are
    answered from ``row`` (values by feature index) until it asks for none."""
    steps, answers = [], {}
    while True:
        start = time.perf_counter()
        ask = model.next_features(answers)
        steps.append(time.perf_counter() - start)
        if not ask:
            return steps
        answers.update({m: row[m] for m in ask})


def spread(values):
    """``values`` with the ends first (a run cut by the time budget still spans each curve)."""
    values = list(values)
    return values if len(values) <= 2 else [values[0], values[-1], *values[1:-1]]


def round_robin(queues):
    """The first item of every queue, then the second, ...: [[a1, a2], [b1]] -> a1, b1, a2."""
    return [q.pop(0) for _ in range(max(map(len, queues), default=0)) for q in queues if q]


# ------------------------------------------------------------------------ tables
def interleaved(repeats, **ways):
    """Each way (a function returning a result) run ``repeats`` times, interleaved (the
    ways see the same machine conditions): ``{way: (wall times, last result)}``."""
    out = {name: ([], None) for name in ways}
    for _ in range(repeats):
        for name, run in ways.items():
            start = time.perf_counter()
            result = run()
            out[name] = (out[name][0] + [time.perf_counter() - start], result)
    return out


def wall_spread(times):
    """Median, min and max of wall times (seconds)."""
    return {"median_s": float(np.median(times)), "min_s": float(min(times)),
            "max_s": float(max(times))}


def fmt(v, spec):
    return "n/a" if v is None or (isinstance(v, float) and np.isnan(v)) else format(v, spec)


def ratio(a, b):
    return None if a is None or b is None or b == 0 else a / b


def table(head, rows, align):
    """Markdown table lines; ``align`` one letter per column (l, r, c) or one for all."""
    align = align * len(head) if len(align) == 1 else align
    sep = {"l": "---", "r": "---:", "c": ":---:"}
    return (["| " + " | ".join(head) + " |", "|" + "|".join(sep[a] for a in align) + "|"]
            + ["| " + " | ".join(str(c) for c in row) + " |" for row in rows])


def col(key, spec):
    """A column of :func:`points_table`: ``point[key]`` formatted with ``spec``."""
    return lambda p: fmt(p.get(key), spec)


def points_table(points, columns, align=None):
    """One row per point; ``columns``: (header, function of a point); ``align`` as in
    :func:`table` (default: the first column left, the others right)."""
    align = align or "l" + "r" * (len(columns) - 1)
    return table([c[0] for c in columns], [[f(p) for _, f in columns] for p in points], align)


def values_text(values):
    return ", ".join(f"{v:g}" for v in values)


def sizes_text(r):
    """``12,000 train / 4,000 valid / 4,000 test rows, 16 features`` of a result."""
    parts = [f"{r[f'n_{part}']:,} {part}" for part in ("train", "valid", "test")
             if f"n_{part}" in r]
    return " / ".join(parts) + f" rows, {r['n_features']} features"


def ok_results(results):
    return [r for r in results if "error" not in r]


# ------------------------------------------------------------------------ report
def run_label(bench, r):
    """A run named by its ``IDENT`` values, e.g. ``library cbudget, dataset letters``."""
    return ", ".join(f"{k} {v:g}" if isinstance(v, float) else f"{k} {json.dumps(v)}"
                     if isinstance(v, dict) else f"{k} {v}"
                     for k in bench.IDENT if (v := r.get(k)) is not None)


def runs_table(bench, doc):
    """Every child: times, CPU/wall, the cores other processes kept busy, peak RSS."""
    rows = []
    for r in (r for results in doc["results"].values() for r in results):
        if "error" in r:
            rows.append([run_label(bench, r), f"failed: {r['error']}", "", "", "", ""])
            continue
        train = r.get("train_total_s", r.get("train_s"))
        attempts = r.get("attempts_other_cores") or []
        rows.append([run_label(bench, r), fmt(r.get("child_wall_s"), ".1f"),
                     fmt(train, ".2f"), fmt(ratio(r.get("train_cpu_s"), train), ".2f"),
                     fmt(r.get("other_cores_during_train"), ".2f")
                     + (" (attempts: " + ", ".join(f"{c:.2f}" for c in attempts) + ")"
                        if len(attempts) > 1 else ""), fmt(r.get("peak_rss_mb"), ".0f")])
    return (["<details><summary>Runs (one child process each)</summary>", ""]
            + table(["run", "child s", "train s", "CPU / wall", "other processes' cores",
                     "peak RSS MB"], rows, "lrrrrr") + ["", "</details>", ""])


def header(bench, doc, rendered_from=None):
    """Title, smoke-run and skip banners, command, machine, wall time, shared machine."""
    info, runs = doc["machine"], [r for rs in doc["results"].values() for r in rs]
    title = bench.__doc__.split("\n", 1)[0].rstrip(".")
    out = [f"# {title}", ""] + ([SMOKE_BANNER, ""] if doc.get("quick") else [])
    skipped = [run_label(bench, r) for r in runs if r.get("skipped")]
    if skipped:
        out += [f"**{len(skipped)} job(s) skipped by the time budget**: " + ", ".join(skipped), ""]
    out += ["Command:", "", "```", doc["command"], "```", ""]
    if rendered_from:
        names = ", ".join(f"`{p.name}`" for p in rendered_from)
        out += [f"Rendered from {names} by `{command_line()}`.", ""]
    libs = "".join(f"{LIBRARY_LABELS.get(k, k)} {v}, " for k, v in info.items()
                   if k not in _MACHINE_KEYS)
    out += [(f"Machine: nproc {info['nproc']} (affinity {info['affinity']}), {info['cpu']}, "
            f"{info['mem_gb']} GB; Python {info['python']}, numpy {info['numpy']}, {libs}"
            f"{info['cbudget']}; {info['platform']}."), "",
            f"Total wall time: {doc['wall_s'] / 60:.1f} min.", ""]
    busy = sum(r.get("other_cores_during_train", 0) > 0.3 for r in ok_results(runs))
    return out + ([f"**Shared machine:** other processes kept more than 0.3 cores busy during "
                   f"{busy} run(s) (runs table): their times are inflated.", ""] if busy else [])


def jsonable(value):
    if isinstance(value, (np.integer, np.floating)):
        return value.item()
    return value.tolist() if isinstance(value, np.ndarray) else str(value)


def write_json(output, doc):
    output.with_suffix(".json").write_text(json.dumps(doc, indent=1, default=jsonable))


def write_markdown(path, text):
    """Write ``text`` as the generated block of ``path`` (between BEGIN and END), keeping
    the text around it; a file without a block is kept whole, the block appended."""
    block = f"{BEGIN}\n{text.rstrip()}\n{END}"
    old = path.read_text() if path.exists() else ""
    if BEGIN in old and END in old.split(BEGIN, 1)[1]:
        before, rest = old.split(BEGIN, 1)
        path.write_text(before + block + rest.split(END, 1)[1])
    else:
        path.write_text((old.rstrip() + "\n\n" if old.strip() else "") + block + "\n")


def merge_docs(docs, ident):
    """One document of the runs of several (the first's settings and machine; every
    command; the results of a data set in run order; the wall times summed); a run of a
    later document replaces an earlier run with the same ``ident`` values (a rerun)."""
    out = dict(docs[0], command="\n".join(d["command"] for d in docs),
               wall_s=sum(d["wall_s"] for d in docs), results={})
    for d in docs:
        for key, results in d["results"].items():
            names = {tuple(r.get(k) for k in ident) for r in results}
            kept = [r for r in out["results"].get(key, [])
                    if tuple(r.get(k) for k in ident) not in names]
            out["results"][key] = kept + results
    return out


def write_report(bench, doc, output, rendered_from=None):
    """The JSON (not when re-rendering one run's), the plot and the Markdown;
    ``rendered_from``: the JSON files re-rendered (several: merged, the JSON written)."""
    if rendered_from is None or len(rendered_from) > 1:
        write_json(output, doc)
    lines = header(bench, doc, rendered_from) + bench.render(doc) + runs_table(bench, doc)
    png = output.with_suffix(".png")
    caption = bench.plot(doc, png) if hasattr(bench, "plot") else None
    if caption:
        lines += [f"Plot: `{png.name}` ({caption}).", ""]
    text = "\n".join(lines)
    print(text)
    write_markdown(output, text)
    return png if caption else None


# ------------------------------------------------------------------------ runner
SHARED_OPTIONS = (  # (option, type, default, help) of every script
    ("--threads", int, N_THREADS, f"threads for every library (default {N_THREADS})"),
    ("--wait-idle", float, 0.0, "wait up to this many seconds before each child for other "
                                "processes to use less than --idle-cores cores"),
    ("--idle-cores", float, 0.3, "threshold of --wait-idle"),
    ("--retries", int, 0, "rerun a child up to this many times while other processes kept "
                          "more than --max-other-cores cores busy; report the least disturbed"),
    ("--max-other-cores", float, 0.2, "threshold of --retries"),
    ("--child-timeout", float, 4 * 3600, "seconds before a child is killed"),
)


def main(bench, argv=None):
    """Options, then a child (``--child``), a re-render (``--render-from``) or a run."""
    parser = argparse.ArgumentParser(description=bench.__doc__.split("\n\n")[0])
    name = Path(bench.__file__).stem.removeprefix("bench_")  # results/<name>.md
    parser.add_argument("--datasets", "--tasks", dest="datasets",
                        default=",".join(bench.DATASETS),
                        help="comma-separated subset of " + ",".join(bench.DATASETS))
    parser.add_argument("--quick", action="store_true",
                        help="smoke run: small data and few rounds (QUICK in the script)")
    parser.add_argument("--output", default=None,
                        help=f"Markdown output (default results/{name}.md, with --quick "
                             f"/tmp/{name}_quick.md); .json and .png go next to it")
    for option, kind, default, text in SHARED_OPTIONS:
        parser.add_argument(option, type=kind, default=default, help=text)
    parser.add_argument("--render-from", metavar="JSON", default=None,
                        help="run nothing: re-render the Markdown (and plot) of an earlier "
                             "run from its JSON (to --output, default next to it); "
                             "comma-separated JSON files: their runs merged, a later run "
                             "replacing an earlier one of the same IDENT (needs --output, "
                             "where the merged JSON goes too)")
    parser.add_argument("--child", metavar="SPEC", default=None, help=argparse.SUPPRESS)
    option = next((o for o in ("methods", "libraries") if hasattr(bench, o.upper())), None)
    if option:  # --methods, a subset of the script's METHODS (or --libraries)
        valid = ",".join(getattr(bench, option.upper()))
        parser.add_argument(f"--{option}", default=valid, help="comma-separated subset of " + valid)
    if hasattr(bench, "TIME_BUDGET"):
        parser.add_argument("--time-budget", type=float, default=bench.TIME_BUDGET,
                            help="minutes of wall time for the whole run: later jobs are "
                                 "skipped, a running child is stopped; 0: no limit")
    if getattr(bench, "SYNTHETIC_ROWS", None):
        parser.add_argument("--n-rows", type=int, default=None, help="total rows of the "
                            f"synthetic set (default {bench.SYNTHETIC_ROWS:,})")
    for part in bench.ROWS:
        parser.add_argument(f"--{part}-rows", type=int, default=None,
                            help=f"keep only the first N {part} rows of every data set")
    add_grid_options(parser, bench.FULL)
    if hasattr(bench, "add_arguments"):
        bench.add_arguments(parser)
    args = parser.parse_args(argv)
    args.grid = {**bench.FULL, **bench.QUICK} if args.quick else bench.FULL
    if args.child:
        result = bench.run_point(json.loads(args.child))
        result.setdefault("peak_rss_mb", maxrss_bytes() / 2**20)
        print(json.dumps(result, default=jsonable), flush=True)
        return 0
    if args.render_from:
        paths = [Path(p) for p in args.render_from.split(",") if p.strip()]
        if len(paths) > 1 and not args.output:
            parser.error("--render-from with several JSON files needs --output")
        docs = [json.loads(p.read_text()) for p in paths]
        write_report(bench, merge_docs(docs, bench.IDENT) if len(docs) > 1 else docs[0],
                     Path(args.output) if args.output else paths[0].with_suffix(".md"), paths)
        return 0
    for key in ROW_OPTIONS if args.quick else ():
        if key in bench.QUICK and hasattr(args, key):
            setattr(args, key, getattr(args, key) or bench.QUICK[key])
    try:
        jobs, extra = bench.plan(args, parse_choices(args.datasets, bench.DATASETS, "data set"))
    except ValueError as exc:
        parser.error(str(exc))
    output = Path(args.output or (f"/tmp/{name}_quick.md" if args.quick
                                  else RESULTS / f"{name}.md"))
    output.parent.mkdir(parents=True, exist_ok=True)
    doc = {"command": command_line(), "machine": machine_info(),
           "wall_s": 0.0, "quick": args.quick, "results": {}, **extra}
    log(f"# {doc['command']}")
    t_start = time.perf_counter()
    budget = getattr(args, "time_budget", 0) or 0
    deadline = t_start + 60.0 * budget if budget > 0 else None
    for key, label, spec in jobs:
        log(f"[{time.strftime('%H:%M:%S')}] {label} ...")
        r = run_with_retries(bench, label, spec, args, deadline)
        doc["results"].setdefault(key, []).append(r)
        if "error" not in r:
            log(f"    done in {r['child_wall_s']:.1f} s"
                + "".join(f", {k} {r[k]:,.4g}" for k in ("accuracy", "mean_cost") if k in r))
        doc["wall_s"] = time.perf_counter() - t_start
        write_json(output, doc)  # partial results survive a crash of a later child
    png = write_report(bench, doc, output)
    log(f"# wrote {output}, {output.with_suffix('.json')}" + (f", {png}" if png else "")
        + f" (total wall time {doc['wall_s'] / 60:.1f} min)")
    return int(any("error" in r and not r.get("skipped")
                   for rs in doc["results"].values() for r in rs))


def log(text):
    print(text, file=sys.stderr, flush=True)


def busy_cores(seconds=3.0):
    """Cores kept busy by all processes over the next ``seconds`` (this one sleeps)."""
    b0, t0 = cpu_jiffies()
    time.sleep(seconds)
    b1, t1 = cpu_jiffies()
    return (b1 - b0) / max(t1 - t0, 1) * (os.cpu_count() or 1)


def run_with_retries(bench, label, spec, args, deadline):
    """Run one child (after waiting for idle CPUs), again while other processes kept more
    than ``--max-other-cores`` busy (``--retries``): the least disturbed result."""
    best, history = None, []
    for attempt in range(1 + max(0, args.retries)):
        if args.wait_idle > 0:
            t = time.perf_counter()
            while True:
                busy, waited = busy_cores(), time.perf_counter() - t
                if busy < args.idle_cores or waited >= args.wait_idle:
                    break
                time.sleep(min(10.0, max(0.0, args.wait_idle - waited)))
            log(f"    waited {waited:.0f} s for idle CPUs (other processes: {busy:.2f} cores)")
        r = run_child(bench, label, spec, args, deadline)
        if "error" in r:
            return best or r
        history.append(r["other_cores_during_train"])
        if best is None or history[-1] < best["other_cores_during_train"]:
            best = r
        if history[-1] <= args.max_other_cores:
            break
        if attempt < args.retries:
            log(f"    other processes kept {history[-1]:.2f} cores busy: running it again")
    best["attempts_other_cores"] = history
    return best


def run_child(bench, label, spec, args, deadline):
    """The last JSON line of the script in ``--child`` mode, with ``child_wall_s``; on a
    failure, timeout or spent time budget the ``IDENT`` keys with ``error``."""
    ident = {k: spec.get(k) for k in bench.IDENT}
    left = deadline - time.perf_counter() if deadline else args.child_timeout
    if left < 1.0:
        log(f"  {label}: skipped (time budget spent)")
        return dict(ident, error="skipped: time budget spent", skipped=True, child_wall_s=0.0)
    cmd = [sys.executable, str(Path(bench.__file__).resolve()), "--child", json.dumps(spec)]
    t = time.perf_counter()
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False,
                              timeout=min(args.child_timeout, left))
    except subprocess.TimeoutExpired:
        wall = time.perf_counter() - t
        log(f"  {label} timed out after {wall:.0f} s")
        return dict(ident, error=f"timed out after {wall:.0f} s", child_wall_s=wall)
    wall = time.perf_counter() - t
    for line in reversed(proc.stdout.splitlines()):
        if line.startswith("{"):
            return dict(json.loads(line), child_wall_s=wall)
    tail = (proc.stderr or proc.stdout).strip().splitlines()[-15:]
    log(f"  {label} FAILED (exit {proc.returncode}):\n    " + "\n    ".join(tail))
    return dict(ident, error=f"exit {proc.returncode}: " + (tail[-1] if tail else "no output"),
                child_wall_s=wall)


# ------------------------------------------------------------------------- plots
def plot_panels(path, doc, panels, draw, title, caption, size, n_rows=1, fontsize=9):
    """One column per panel drawn by ``draw(axes, panel, plt)`` (the axis when ``n_rows``
    is 1), saved to ``path``: ``caption``; None without matplotlib or panels."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    if not panels:
        return None
    fig, axes = plt.subplots(n_rows, len(panels), squeeze=False,
                             figsize=(size[0] * len(panels), size[1] * n_rows))
    for col, panel in enumerate(panels):
        draw(axes[0][col] if n_rows == 1 else [axes[r][col] for r in range(n_rows)], panel, plt)
    fig.suptitle(title + (" - smoke run (--quick)" if doc.get("quick") else ""), fontsize=fontsize)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return caption


def curve(ax, points, x, y, fmt, color=None, label=None, annotate=None, fontsize=6, **kw):
    """``points`` sorted by ``x`` as one line; each labelled ``annotate(point)``."""
    pts = sorted(points, key=lambda p: p[x])
    if pts:
        ax.plot([p[x] for p in pts], [p[y] for p in pts], fmt, color=color, label=label, **kw)
    for p in pts if annotate else ():
        ax.annotate(annotate(p), (p[x], p[y]), textcoords="offset points", xytext=(3, 3),
                    fontsize=fontsize, color=color)


def finish_axis(ax, xlabel, ylabel, title, xscale="symlog", linthresh=1.0, legend_size=8,
                legend_loc="best"):
    if xscale == "symlog":
        ax.set_xscale("symlog", linthresh=linthresh)
    elif xscale:
        ax.set_xscale(xscale)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=10)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=legend_size, loc=legend_loc)
