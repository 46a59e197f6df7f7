"""The machinery the benchmark scripts share (benchmarks/README.md, "Layout").

A script ``bench_<name>.py`` keeps its grid, the run of one point, its tables and plot,
and ends with ``sys.exit(harness.main(sys.modules[__name__]))``. :func:`main` does the
rest: options, one child process per point (``--child SPEC``), waiting for idle CPUs,
retries, the time budget, the JSON, the Markdown (header, the script's tables, the runs
table) and ``--render-from``.

It reads from the script: ``NAME`` (``results/<NAME>.md``), ``TITLE``, ``DATASETS``
(choices of ``--datasets``), ``QUICK`` (its ``*_rows`` fill unset row options) and
``QUICK_HELP``, optional ``QUICK_OUTPUT``, ``INFO_LIBRARIES`` (machine line), ``IDENT``
(the spec keys naming a run), optional ``SUBSET_OPTION`` (``"methods"``: the option
``--methods``, a subset of ``METHODS``), ``TIME_BUDGET`` (``--time-budget``);
``add_arguments(parser)``, ``plan(args, names)`` -> ``([(results key, label, spec)],
extra JSON fields)`` (ValueError: bad options), ``run_point(spec)`` -> JSON-able dict,
``render(doc)`` -> Markdown lines of the JSON document ``doc``; optional
``plot(doc, path)`` -> caption or None.

Also here: matched library settings, the data sets, process measurements, the per-input
prediction cost from leaf paths (the cost model of docs/architecture.md, one routine for
every library) and its check, accuracy at equal cost.
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


def parse_values(text):
    """Sorted distinct values >= 0 (trade-offs, alphas) from a comma-separated string."""
    values = sorted({float(v) for v in str(text).split(",") if v.strip()})
    if not values or values[0] < 0:
        raise ValueError(f"need values >= 0, got {text!r}")
    return values


def parse_choices(text, valid, what):
    """The comma-separated names of ``text``, each one of ``valid``."""
    names = [v.strip() for v in text.split(",") if v.strip()]
    for name in names:
        if name not in valid:
            raise ValueError(f"unknown {what} {name!r}; valid: {', '.join(valid)}")
    return names


# ---------------------------------------------------------------------- data sets
COST_DATASETS = ("letters", "mnist_multires", "synthetic_costly")
SYNTHETIC_ROWS = 500_000  # default total rows of make_synthetic_costly
DATASET_TITLES = {
    "letters": "Letters (UCI, 26 classes, every feature costs 1)",
    "mnist_multires": "Multi-resolution MNIST (10 classes, 1120 pixels at 4x4 / 8x8 / "
                      "16x16 / 28x28, each costs 1)",
    "synthetic_costly": "Synthetic costly binary (make_synthetic_costly, seed 0; 32 "
                        "features with costs 1 ... 200)",
}


def load_dataset(name, n_rows=None, train_rows=None, valid_rows=None, test_rows=None,
                 keep_valid=False):
    """A data set of benchmarks/datasets.py (seed 0): ``letters``, ``mnist``,
    ``mnist_multires``, ``synthetic`` (binary, ``n_rows`` default 1,000,000) or
    ``synthetic_costly`` (``n_rows`` default ``SYNTHETIC_ROWS``); ``*_rows`` keep the
    first rows of a part; without ``keep_valid`` the validation part is dropped."""
    import datasets
    loaders = {
        "letters": lambda: datasets.load_letters(seed=0),
        "mnist": lambda: datasets.load_mnist(seed=0, n_valid=10000),
        "mnist_multires": lambda: datasets.load_mnist_multires(seed=0, n_valid=10000),
        "synthetic": lambda: datasets.make_synthetic_binary(
            n_samples=n_rows or 1_000_000, n_features=50, seed=0),
        "synthetic_costly": lambda: datasets.make_synthetic_costly(
            n_samples=n_rows or SYNTHETIC_ROWS, seed=0)}
    if name not in loaders:
        raise ValueError(f"unknown data set {name!r}; valid: {', '.join(loaders)}")
    data = loaders[name]()
    for part, rows in (("train", train_rows), ("valid", valid_rows), ("test", test_rows)):
        for key in (f"X_{part}", f"y_{part}", f"p_{part}", f"hard_{part}"):
            if rows and key in data:
                data[key] = data[key][:rows]
    if not keep_valid:
        data["X_valid"] = data["y_valid"] = None
    return data


def load_for_child(name, spec, keep_valid=False):
    """:func:`load_dataset` with the row limits of a job ``spec``, then a garbage
    collection: (data, seconds to load, RSS after loading in bytes)."""
    t = time.perf_counter()
    data = load_dataset(name, keep_valid=keep_valid, **{k: spec.get(k) for k in ROW_OPTIONS})
    t_load = time.perf_counter() - t
    gc.collect()
    return data, t_load, rss_bytes()


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


def other_cores(busy0, busy1, own_cpu_s, wall_s):
    """Average number of cores that other processes kept busy over ``wall_s``."""
    hz = os.sysconf("SC_CLK_TCK")
    return max(0.0, ((busy1 - busy0) / hz - own_cpu_s) / max(wall_s, 1e-9))


def loadavg():
    with open("/proc/loadavg") as f:
        return [float(v) for v in f.read().split()[:3]]


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
    """Wall and CPU time of a block and the cores other processes kept busy."""

    def __enter__(self):
        self.load_before = loadavg()
        self.cpu0, self.busy0, self.t0 = cpu_seconds(), cpu_jiffies()[0], time.perf_counter()
        return self

    def __exit__(self, *exc):
        self.wall = time.perf_counter() - self.t0
        self.cpu = cpu_seconds() - self.cpu0
        self.other = other_cores(self.busy0, cpu_jiffies()[0], self.cpu, self.wall)
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
    import importlib
    module = importlib.import_module(library)
    location = os.path.dirname(module.__file__)
    if library == "cbudget":
        return f"{module.__version__} (sources {source_hash(location)})", location
    return module.__version__, location


def machine_info(libraries):
    """nproc, CPU, memory, Python / numpy / ``libraries`` versions, cbudget, platform."""
    import importlib
    try:
        import cbudget
        from cbudget._core._openmp_helpers import openmp_enabled
        location = os.path.dirname(cbudget.__file__)
        cb = (f"cbudget {cbudget.__version__} (sources {source_hash(location)}, {location}), "
              + ("OpenMP" if openmp_enabled() else "serial build"))
    except Exception as exc:  # noqa: BLE001 - report, do not fail
        cb = f"cbudget not importable ({exc})"
    cpu = platform.processor() or "?"
    with open("/proc/cpuinfo") as f:
        cpu = next((line.split(":", 1)[1].strip() for line in f
                    if line.startswith("model name")), cpu)
    mem_gb = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    return {"nproc": os.cpu_count(), "affinity": len(os.sched_getaffinity(0)), "cpu": cpu,
            "mem_gb": round(mem_gb, 1), "python": platform.python_version(),
            "numpy": np.__version__,
            **{lib: importlib.import_module(lib).__version__ for lib in libraries},
            "cbudget": cb, "platform": platform.platform()}


LIBRARY_LABELS = {"cbudget": "cbudget", "lightgbm": "LightGBM", "xgboost": "XGBoost",
                  "sklearn": "scikit-learn", "scipy": "scipy"}
_MACHINE_KEYS = ("nproc", "affinity", "cpu", "mem_gb", "python", "numpy", "cbudget",
                 "platform")


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
    booster = cbudget.train(params, dtrain, n_rounds, verbose_eval=False,
                            callbacks=[RoundClock()])
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


def timed_training(trainer, data, params, n_rounds, **kwargs):
    """``trainer(data, params, n_rounds, clock, **kwargs)`` (returning ``(model, seconds to
    build the data set, seconds in all, ...)``), measured: ``(what it returned, fields)``
    with ``dataset_build_s``, ``train_s``, ``after_last_round_s``, ``round_end_s``,
    ``train_cpu_s``, ``other_cores_during_train``, ``loadavg_before`` / ``_after``."""
    clock = Clock()
    with Timer() as t:
        out = trainer(data, params, n_rounds, clock, **kwargs)
    if len(clock.round_ends) != n_rounds:
        raise RuntimeError(f"trained {len(clock.round_ends)} rounds, expected {n_rounds}")
    return out, {
        "dataset_build_s": out[1], "train_s": out[2],
        "after_last_round_s": out[2] - clock.round_ends[-1], "round_end_s": clock.round_ends,
        "train_cpu_s": t.cpu, "other_cores_during_train": t.other,
        "loadavg_before": t.load_before, "loadavg_after": loadavg()}


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
            stack += [(node["left_child"], mask, depth + 1),
                      (node["right_child"], mask, depth + 1)]
    return out


class PathTables:
    """The leaf tables of all trees packed: ``masks`` uint64 (rows, n_words), row
    ``offsets[t] + leaf id`` for tree ``t``; ``depths``; ``tree_masks`` (Python ints)."""

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
        self.tree_masks = []
        for offset, paths in zip(self.offsets.tolist(), leaf_paths, strict=True):
            tree_mask = 0
            for leaf, (mask, depth) in paths.items():
                row = offset + leaf
                raw[row * n_bytes:(row + 1) * n_bytes] = mask.to_bytes(n_bytes, "little")
                self.depths[row] = depth
                tree_mask |= mask
            self.tree_masks.append(tree_mask)
        self.masks = np.frombuffer(bytes(raw), dtype="<u8").reshape(total, self.n_words)
        self.used_mask = 0
        for mask in self.tree_masks:
            self.used_mask |= mask

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
    """Per-input prediction cost and features acquired (float64, int64 (n_samples,)) from
    ``leaves`` (n_samples, n_trees): the leaf of each input in each tree of ``tables``."""
    leaves = np.asarray(leaves)
    n, n_trees = leaves.shape
    if n_trees != tables.n_trees:
        raise ValueError(f"{n_trees} trees in the leaf matrix, {tables.n_trees} tables")
    feature_costs = np.asarray(feature_costs, dtype=np.float64)
    cost, n_acquired = np.zeros(n), np.zeros(n, dtype=np.int64)
    for a in range(0, n, chunk_rows):
        b = min(n, a + chunk_rows)
        rows = leaves[a:b].T.astype(np.int64) + tables.offsets[:, None]
        acquired = np.zeros((b - a, tables.n_words), dtype=np.uint64)
        for t in range(n_trees):
            acquired |= tables.masks[rows[t]]
        bits = bits_matrix(acquired, tables.n_features)
        cost[a:b] = bits @ feature_costs
        n_acquired[a:b] = bits.sum(axis=1)
        if split_cost:
            cost[a:b] += split_cost * tables.depths[rows].sum(axis=0)
    return cost, n_acquired


def check_leaf_path_costs(booster, X, feature_costs, split_cost=0.0):
    """The leaf-path cost check: :func:`prediction_costs` of a cbudget tree model on ``X``
    against its own ``predict_cost`` (AssertionError on a difference). Returns (cost,
    features acquired per input, the PathTables, max |difference|)."""
    leaves = np.asarray(booster.predict(X, pred_leaf=True), dtype=np.int64)
    tables = PathTables([cbudget_leaf_paths(t) for t in booster.trees], len(feature_costs))
    cost, n_acquired = prediction_costs(leaves.reshape(X.shape[0], -1), tables,
                                        feature_costs, split_cost)
    own = np.asarray(booster.predict_cost(X), dtype=np.float64)
    diff = float(np.max(np.abs(own - cost))) if cost.size else 0.0
    if not np.allclose(own, cost, rtol=COST_CHECK_TOL, atol=COST_CHECK_TOL):
        raise AssertionError(f"leaf-path costs differ from predict_cost: max |diff| {diff} "
                             f"(means {cost.mean()} vs {own.mean()})")
    return cost, n_acquired, tables, diff


class CostTrace:
    """The per-input cost of :func:`prediction_costs` updated in place as trees are added
    (``add_trees``); attributes ``cost``, ``n_acquired``, ``acquired`` (uint64 words)."""

    def __init__(self, tables, feature_costs, n_samples, split_cost=0.0):
        self.tables, self.split_cost = tables, float(split_cost)
        by_word = np.zeros(64 * tables.n_words)
        by_word[:tables.n_features] = np.asarray(feature_costs, dtype=np.float64)
        self.costs_by_word = by_word.reshape(tables.n_words, 64)
        self.acquired = np.zeros((n_samples, tables.n_words), dtype=np.uint64)
        self.cost = np.zeros(n_samples)
        self.n_acquired = np.zeros(n_samples, dtype=np.int64)

    def add_trees(self, leaves, first_tree):
        """Add trees ``first_tree, ...``; ``leaves`` (n_samples, k): their leaf ids."""
        leaves = np.asarray(leaves)
        k = leaves.shape[1]
        rows = leaves.T.astype(np.int64) + self.tables.offsets[first_tree:first_tree + k, None]
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


def cost_fields(cost, n_acquired, feature_costs, data, cut_test=False):
    """Result fields of the per-input test costs: quantiles, maximum, full cost; on the
    synthetic costly set the hard / easy means and the test set's references (None when
    ``cut_test``: they describe the whole test set)."""
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
def dominance(points, references, cost_key="mean_cost", score_key="accuracy"):
    """Per reference (by cost): ``{"reference", "best"`` (the best of ``points`` at no more
    cost, None if none is that cheap), ``"ok"`` (best at least as good)}."""
    rows = []
    for g in sorted(references, key=lambda r: r[cost_key]):
        cheaper = [c for c in points if c[cost_key] <= g[cost_key] * (1 + 1e-12)]
        best = (max(cheaper, key=lambda c: (c[score_key], -c[cost_key])) if cheaper
                else None)
        rows.append({"reference": g, "best": best,
                     "ok": best is not None and best[score_key] >= g[score_key]})
    return rows


def interpolated_accuracy(points, cost, cost_key="mean_cost", score_key="accuracy"):
    """The score of ``points`` at ``cost`` (linear in log(1 + cost)); None outside."""
    pts = sorted((c[cost_key], c[score_key]) for c in points)
    costs = np.log1p([p[0] for p in pts])
    if not pts or not costs[0] <= np.log1p(cost) <= costs[-1]:
        return None
    return float(np.interp(np.log1p(cost), costs, [p[1] for p in pts]))


def comparison_table(points, references, names, label, cost_key="mean_cost",
                     score_key="accuracy", shown=None, cost_fmt=",.2f", curve_points=None,
                     extra=()):
    """The one equal-cost layout. Per reference point (by cost): its label, cost and score;
    the best of ``points`` at no more cost (:func:`dominance`: label / cost, score,
    difference; whether it is as good); the curve of ``curve_points`` (default ``points``)
    at the reference's cost and the difference; ``extra`` columns ``(header, align,
    function of the dominance row)``. ``names``: (reference, compared, cost name, score
    name); ``shown``: the score displayed (default ``score_key``; ``"error"``: 1 - it)."""
    ref, other, cost_name, score_name = names
    shown = shown or score_key
    conv = (lambda v: 1 - v) if shown != score_key else (lambda v: v)
    rows = []
    for d in dominance(points, references, cost_key=cost_key, score_key=score_key):
        g, c = d["reference"], d["best"]
        curve = interpolated_accuracy(curve_points or points, g[cost_key], cost_key=cost_key,
                                      score_key=score_key)
        rows.append([label(g), format(g[cost_key], cost_fmt), f"{g[shown]:.4f}"]
                    + ([f"{label(c)} / {c[cost_key]:{cost_fmt}}", f"{c[shown]:.4f}",
                        f"{c[shown] - g[shown]:+.4f}"] if c else ["none this cheap", "", ""])
                    + ["yes" if d["ok"] else "no"]
                    + ([f"{conv(curve):.4f}", f"{conv(curve) - g[shown]:+.4f}"]
                       if curve is not None else ["", ""])
                    + [fn(d) for _, _, fn in extra])
    head = [f"{ref} point", f"{ref} {cost_name}", f"{ref} {score_name}",
            f"{other} best at {cost_name} <= (point / {cost_name})", f"its {score_name}",
            "difference", f"{other} as good", f"{other} curve at this {cost_name}",
            "difference"] + [e[0] for e in extra]
    return table(head, rows, "lrrlrrcrr" + "".join(e[1] for e in extra))


def spread(values):
    """``values`` ordered to cover their range early: the ends, then the middles of the
    largest gaps (a run cut by the time budget still has whole curves)."""
    values = list(values)
    if len(values) <= 2:
        return values
    order, gaps = [0, len(values) - 1], [(0, len(values) - 1)]
    while gaps:
        gaps.sort(key=lambda g: g[1] - g[0], reverse=True)
        a, b = gaps.pop(0)
        if b - a >= 2:
            m = (a + b) // 2
            order.append(m)
            gaps += [(a, m), (m, b)]
    return [values[i] for i in order]


# ------------------------------------------------------------------------ tables
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


def ok_results(results):
    return [r for r in results if "error" not in r]


def run_label(bench, r):
    """A run named by its ``IDENT`` values, e.g. ``library cbudget, dataset letters``."""
    return ", ".join(f"{k} {v:g}" if isinstance(v, float) else f"{k} {json.dumps(v)}"
                     if isinstance(v, dict) else f"{k} {v}"
                     for k in bench.IDENT if (v := r.get(k)) is not None)


def describe(r):
    """The log line of a finished child."""
    train = r.get("train_total_s", r.get("train_s"))
    return (f"train {train:.2f} s" + (f", accuracy {r['accuracy']:.4f}" if "accuracy" in r else "")
            + (f", mean cost {r['mean_cost']:,.2f}" if "mean_cost" in r else ""))


def runs_table(bench, doc):
    """Every child: wall time, training time, CPU/wall, the cores other processes kept
    busy (each attempt), peak RSS; failed and skipped children with their error."""
    rows = []
    for results in doc["results"].values():
        for r in results:
            if "error" in r:
                rows.append([run_label(bench, r), f"failed: {r['error']}", "", "", "", ""])
                continue
            train = r.get("train_total_s", r.get("train_s"))
            attempts = r.get("attempts_other_cores") or []
            rows.append([run_label(bench, r), fmt(r.get("child_wall_s"), ".1f"),
                         fmt(train, ".2f"), fmt(ratio(r.get("train_cpu_s"), train), ".2f"),
                         fmt(r.get("other_cores_during_train"), ".2f")
                         + (" (attempts: " + ", ".join(f"{c:.2f}" for c in attempts) + ")"
                            if len(attempts) > 1 else ""),
                         fmt(r.get("peak_rss_mb"), ".0f")])
    head = ["run", "child s", "train s", "CPU / wall", "other processes' cores",
            "peak RSS MB"]
    return (["<details><summary>Runs (one child process each)</summary>", ""]
            + table(head, rows, "lrrrrr") + ["", "</details>", ""])


def header(bench, doc, rendered_from=None):
    """Title, smoke-run and skip banners, command, machine, wall time, shared machine."""
    info = doc["machine"]
    out = [f"# {bench.TITLE}", ""]
    if doc.get("quick"):
        out += [SMOKE_BANNER, ""]
    skipped = [run_label(bench, r) for rs in doc["results"].values() for r in rs
               if r.get("skipped")]
    if skipped:
        out += [f"**{len(skipped)} job(s) skipped by the time budget**: "
                + ", ".join(skipped), ""]
    out += ["Command:", "", "```", doc["command"], "```", ""]
    if rendered_from:
        out += [f"Rendered from `{rendered_from.name}` by `{command_line()}`.", ""]
    libs = "".join(f"{LIBRARY_LABELS.get(k, k)} {v}, " for k, v in info.items()
                   if k not in _MACHINE_KEYS)
    out += [(f"Machine: nproc {info['nproc']} (affinity {info['affinity']}), {info['cpu']}, "
            f"{info['mem_gb']} GB; Python {info['python']}, numpy {info['numpy']}, {libs}"
            f"{info['cbudget']}; {info['platform']}."), "",
            f"Total wall time: {doc['wall_s'] / 60:.1f} min.", ""]
    busy = [r["other_cores_during_train"] for rs in doc["results"].values()
            for r in ok_results(rs) if r.get("other_cores_during_train", 0) > 0.3]
    if busy:
        out += [(f"**Shared machine:** other processes kept more than 0.3 cores busy (up to "
                f"{max(busy):.2f} of {info['nproc']}) during the training of {len(busy)} "
                "run(s), see the runs table: their times are inflated."), ""]
    return out


def jsonable(value):
    if isinstance(value, (np.integer, np.floating)):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    return str(value)


def write_json(output, doc):
    output.with_suffix(".json").write_text(json.dumps(doc, indent=1, default=jsonable))


def write_markdown(path, text):
    """Write ``text`` as the generated block of ``path`` (between BEGIN and END): an
    existing block is replaced and the text around it kept; a file without a block
    (results older than the markers) is kept whole, the block appended."""
    block = f"{BEGIN}\n{text.rstrip()}\n{END}"
    old = path.read_text() if path.exists() else ""
    if BEGIN in old and END in old.split(BEGIN, 1)[1]:
        before, rest = old.split(BEGIN, 1)
        path.write_text(before + block + rest.split(END, 1)[1])
    else:
        path.write_text((old.rstrip() + "\n\n" if old.strip() else "") + block + "\n")


def write_report(bench, doc, output, rendered_from=None):
    """The JSON (not when re-rendering), the plot and the Markdown."""
    if rendered_from is None:
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
def add_row_arguments(parser, parts=("train", "test"), synthetic_rows=None):
    """``--n-rows`` (with ``synthetic_rows``) and ``--<part>-rows`` options."""
    if synthetic_rows:
        parser.add_argument("--n-rows", type=int, default=None,
                            help=f"total rows of the synthetic set (default {synthetic_rows:,})")
    for part in parts:
        parser.add_argument(f"--{part}-rows", type=int, default=None,
                            help=f"keep only the first N {part} rows of every data set")


def main(bench, argv=None):
    """Options, then a child (``--child``), a re-render (``--render-from``) or a run."""
    parser = argparse.ArgumentParser(description=bench.__doc__.split("\n\n")[0])
    parser.add_argument("--datasets", "--tasks", dest="datasets",
                        default=",".join(bench.DATASETS),
                        help="comma-separated subset of " + ",".join(bench.DATASETS))
    parser.add_argument("--quick", action="store_true", help="smoke run: " + bench.QUICK_HELP)
    parser.add_argument("--output", default=None,
                        help=f"Markdown output (default results/{bench.NAME}.md); .json "
                             "and .png go next to it")
    parser.add_argument("--threads", type=int, default=N_THREADS,
                        help=f"threads for every library (default {N_THREADS})")
    parser.add_argument("--wait-idle", type=float, default=0.0,
                        help="before each child, wait up to this many seconds for other "
                             "processes to use less than --idle-cores cores")
    parser.add_argument("--idle-cores", type=float, default=0.3,
                        help="threshold of --wait-idle (cores busy with other processes)")
    parser.add_argument("--retries", type=int, default=0,
                        help="rerun a child up to this many times while other processes "
                             "kept more than --max-other-cores cores busy during its "
                             "training; the least disturbed run is reported")
    parser.add_argument("--max-other-cores", type=float, default=0.2,
                        help="threshold of --retries")
    parser.add_argument("--child-timeout", type=float, default=4 * 3600,
                        help="seconds before a child is killed")
    parser.add_argument("--render-from", metavar="JSON", default=None,
                        help="run nothing: re-render the Markdown (and plot) of an earlier "
                             "run from its JSON (to --output, default next to it)")
    parser.add_argument("--child", metavar="SPEC", default=None, help=argparse.SUPPRESS)
    option = getattr(bench, "SUBSET_OPTION", None)  # "methods": a subset of bench.METHODS
    if option:
        valid = ",".join(getattr(bench, option.upper()))
        parser.add_argument(f"--{option}", default=valid, help="comma-separated subset of "
                            + valid)
    if hasattr(bench, "TIME_BUDGET"):
        parser.add_argument("--time-budget", type=float, default=bench.TIME_BUDGET,
                            help="minutes of wall time for the whole run: later jobs are "
                                 "skipped, a running child is stopped; 0: no limit")
    bench.add_arguments(parser)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(bench.run_point(json.loads(args.child)), default=jsonable),
              flush=True)
        return 0
    if args.render_from:
        path = Path(args.render_from)
        doc = json.loads(path.read_text())
        write_report(bench, doc, Path(args.output) if args.output else path.with_suffix(".md"),
                     rendered_from=path)
        return 0
    if args.quick:
        for key in ROW_OPTIONS:
            if key in bench.QUICK and hasattr(args, key):
                setattr(args, key, getattr(args, key) or bench.QUICK[key])
    try:
        jobs, extra = bench.plan(args, parse_choices(args.datasets, bench.DATASETS,
                                                     "data set"))
    except ValueError as exc:
        parser.error(str(exc))
    output = Path(args.output) if args.output else (
        Path(getattr(bench, "QUICK_OUTPUT", RESULTS / f"{bench.NAME}_quick.md"))
        if args.quick else RESULTS / f"{bench.NAME}.md")
    output.parent.mkdir(parents=True, exist_ok=True)
    doc = {"command": command_line(), "machine": machine_info(bench.INFO_LIBRARIES),
           "wall_s": 0.0, "quick": args.quick, "results": {}, **extra}
    log = sys.stderr
    print(f"# {doc['command']}", file=log, flush=True)
    t_start = time.perf_counter()
    budget = getattr(args, "time_budget", 0) or 0
    deadline = t_start + 60.0 * budget if budget > 0 else None
    for key, label, spec in jobs:
        print(f"[{time.strftime('%H:%M:%S')}] {label} ...", file=log, flush=True)
        ident = {k: spec.get(k) for k in bench.IDENT}
        r = run_with_retries(bench, label, spec, ident, args, deadline, log)
        doc["results"].setdefault(key, []).append(r)
        if "error" not in r:
            print(f"    done in {r['child_wall_s']:.1f} s: {describe(r)}", file=log,
                  flush=True)
        doc["wall_s"] = time.perf_counter() - t_start
        write_json(output, doc)  # partial results survive a crash of a later child
    png = write_report(bench, doc, output)
    print(f"# wrote {output}, {output.with_suffix('.json')}" + (f", {png}" if png else "")
          + f" (total wall time {doc['wall_s'] / 60:.1f} min)", file=log, flush=True)
    return int(any("error" in r and not r.get("skipped")
                   for rs in doc["results"].values() for r in rs))


def busy_cores(seconds=3.0):
    """Cores kept busy by all processes over the next ``seconds`` (this one sleeps)."""
    b0, t0 = cpu_jiffies()
    time.sleep(seconds)
    b1, t1 = cpu_jiffies()
    return (b1 - b0) / max(t1 - t0, 1) * (os.cpu_count() or 1)


def run_with_retries(bench, label, spec, ident, args, deadline, log):
    """Run one child (after waiting for idle CPUs with ``--wait-idle``); again, up to
    ``--retries`` times, while other processes kept more than ``--max-other-cores``
    cores busy during its training; return the least disturbed result."""
    best, history = None, []
    for attempt in range(1 + max(0, args.retries)):
        if args.wait_idle > 0:
            t = time.perf_counter()
            while True:
                busy, waited = busy_cores(), time.perf_counter() - t
                if busy < args.idle_cores or waited >= args.wait_idle:
                    break
                time.sleep(min(10.0, max(0.0, args.wait_idle - waited)))
            print(f"    waited {waited:.0f} s for idle CPUs (other processes: {busy:.2f} "
                  "cores)", file=log, flush=True)
        r = run_child(bench, label, spec, ident, args, deadline, log)
        if "error" in r:
            return best or r
        history.append(r["other_cores_during_train"])
        if best is None or history[-1] < best["other_cores_during_train"]:
            best = r
        if history[-1] <= args.max_other_cores:
            break
        if attempt < args.retries:
            print(f"    other processes kept {history[-1]:.2f} cores busy: running it again",
                  file=log, flush=True)
    best["attempts_other_cores"] = history
    return best


def run_child(bench, label, spec, ident, args, deadline, log):
    """The script in ``--child`` mode for ``spec``: the dict of the last JSON line it
    printed, with ``child_wall_s``; on a failure, a timeout or when the time budget is
    spent, ``ident`` with ``error`` (and ``skipped``)."""
    left = deadline - time.perf_counter() if deadline else args.child_timeout
    if left < 1.0:
        print(f"  {label}: skipped (time budget spent)", file=log, flush=True)
        return dict(ident, error="skipped: time budget spent", skipped=True, child_wall_s=0.0)
    cmd = [sys.executable, str(Path(bench.__file__).resolve()), "--child", json.dumps(spec)]
    t = time.perf_counter()
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False,
                              timeout=min(args.child_timeout, left))
    except subprocess.TimeoutExpired:
        wall = time.perf_counter() - t
        print(f"  {label} timed out after {wall:.0f} s", file=log, flush=True)
        return dict(ident, error=f"timed out after {wall:.0f} s", child_wall_s=wall)
    wall = time.perf_counter() - t
    for line in reversed(proc.stdout.splitlines()):
        if line.startswith("{"):
            return dict(json.loads(line), child_wall_s=wall)
    tail = (proc.stderr or proc.stdout).strip().splitlines()[-15:]
    print(f"  {label} FAILED (exit {proc.returncode}):\n    " + "\n    ".join(tail),
          file=log, flush=True)
    return dict(ident, error=f"exit {proc.returncode}: " + (tail[-1] if tail else "no output"),
                child_wall_s=wall)


# ------------------------------------------------------------------------- plots
def plot_panels(path, doc, panels, draw, title, caption, size, n_rows=1, fontsize=9):
    """A figure of one column per panel, ``draw(axes, panel, plt)`` (``axes``: the
    column's ``n_rows`` axes, or the axis when ``n_rows`` is 1), saved to ``path`` (Agg
    backend): ``caption``; None without matplotlib or panels."""
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
        draw(axes[0][col] if n_rows == 1 else [axes[r][col] for r in range(n_rows)], panel,
             plt)
    fig.suptitle(title + (" - smoke run (--quick)" if doc.get("quick") else ""),
                 fontsize=fontsize)
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
