"""Histogram kernel benchmark: bytes read per second against the machine's memory bandwidth.

``build_histograms`` (cbudget/_core/_histogram.pyx) timed on MNIST, the synthetic binary
set and Letters for the root (all training rows), a random 50% and a random 5% leaf
(sorted rows), with 1 and ``--threads`` threads, with the row-wise layout of the
mostly-constant features (``sparse=Dataset.sparse_bins()``) and without it (the column
pass for every feature), all repeated interleaved. The bytes a call reads follow an
explicit model (stated in the results) and are set against a STREAM-style copy / triad /
read bandwidth measured in the same run by a small C kernel compiled at run time with
``gcc -O3 -fopenmp``. Each part runs on the machine as it is and beside ``--busy``
spinning processes of its own. Protocol: benchmarks/README.md.
"""
import ctypes
import itertools
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import harness as h
import numpy as np
from bench_contention import SPIN_UP_S, SPINNER, process_cpu_ticks

DATASETS = ("mnist", "synthetic", "letters")
IDENT = ("dataset", "busy")
ROWS, SYNTHETIC_ROWS = ("train",), 1_000_000
# repeats: of every (leaf, threads, layout), interleaved; a timed sample repeats a call
# until it lasts min_sample_ms (small leaves); stream_mib: each of the three STREAM arrays
# (the LLC here is 32 MiB: STREAM asks for at least 4x it)
FULL = {"repeats": 7, "leaf_fractions": (0.05, 0.5, 1.0), "min_sample_ms": 20.0,
        "stream_mib": 256, "stream_repeats": 10}
QUICK = {"repeats": 2, "stream_mib": 16, "stream_repeats": 2, "train_rows": 4000,
         "n_rows": 20_000}
TIME_BUDGET = 15.0
BANDWIDTH = "bandwidth"      # the results key of the STREAM children
LAYOUTS = ("column", "row-wise")
LINE = 64                    # bytes of a cache line
HIST_BYTES = 24              # a histogram bin: two doubles and a count, aligned

GCC_FLAGS = ("-O3", "-march=native", "-fopenmp", "-fno-tree-loop-distribute-patterns",
             "-shared", "-fPIC")
# STREAM's kernels (McCalpin's copy and triad, plus a read-only sum: the histogram pass
# mostly reads). The flag -fno-tree-loop-distribute-patterns keeps the copy a loop
# (gcc would call memcpy, whose large copies use non-temporal stores).
STREAM_C = r"""
#include <stdint.h>
#include <omp.h>

void stream_init(double *a, double *b, double *c, int64_t n, int threads) {
    #pragma omp parallel for schedule(static) num_threads(threads)
    for (int64_t i = 0; i < n; i++) { a[i] = 1.0; b[i] = 2.0; c[i] = 0.0; }
}

double stream_copy(double *restrict c, const double *restrict a, int64_t n, int threads) {
    double t = omp_get_wtime();
    #pragma omp parallel for schedule(static) num_threads(threads)
    for (int64_t i = 0; i < n; i++) c[i] = a[i];
    return omp_get_wtime() - t;
}

double stream_triad(double *restrict a, const double *restrict b, const double *restrict c,
                    double s, int64_t n, int threads) {
    double t = omp_get_wtime();
    #pragma omp parallel for schedule(static) num_threads(threads)
    for (int64_t i = 0; i < n; i++) a[i] = b[i] + s * c[i];
    return omp_get_wtime() - t;
}

double stream_read(const uint64_t *restrict a, int64_t n, int threads, uint64_t *out) {
    uint64_t sum = 0;
    double t = omp_get_wtime();
    #pragma omp parallel for schedule(static) num_threads(threads) reduction(+:sum)
    for (int64_t i = 0; i < n; i++) sum += a[i];
    *out = sum;
    return omp_get_wtime() - t;
}
"""
# bytes counted per array element (8-byte doubles), the STREAM convention: what the loop
# reads plus what it writes (the write-allocate read of the target line not counted)
STREAM_BYTES = {"copy": 16, "triad": 24, "read": 8}


def add_arguments(parser):
    parser.add_argument("--busy", type=int, default=1,
                        help="spinning processes of the loaded runs (default 1; 0: idle only)")


def plan(args, names):
    threads = sorted({1, args.threads})
    loads = [0] + ([args.busy] if args.busy > 0 else [])
    base = {"threads": args.threads, "thread_counts": threads}
    stream = {k: h.setting(args, k) for k in ("stream_mib", "stream_repeats")}
    timing = {k: h.setting(args, k) for k in ("repeats", "leaf_fractions", "min_sample_ms")}
    jobs = [(BANDWIDTH, f"STREAM / {busy} busy",
             dict(base, **stream, dataset=BANDWIDTH, busy=busy)) for busy in loads]
    jobs += [(name, f"{name} / {busy} busy",
              dict(base, **timing, dataset=name, busy=busy, n_rows=args.n_rows,
                   train_rows=args.train_rows))
             for name in names for busy in loads]
    return jobs, {"settings": dict(base, **stream, **timing, busy=args.busy)}


# ------------------------------------------------------------------------- child
class Spinners:
    """``n`` processes spinning (``python -c SPINNER``) while the block runs; ``cores``:
    the cores they used meanwhile (subtracted from the other processes' load)."""

    def __init__(self, n):
        self.n, self.cores = n, 0.0

    def __enter__(self):
        self.procs = [subprocess.Popen([sys.executable, "-c", SPINNER]) for _ in range(self.n)]
        time.sleep(SPIN_UP_S if self.procs else 0.0)
        self.ticks0, self.t0 = self._ticks(), time.perf_counter()
        return self

    def _ticks(self):
        return sum(process_cpu_ticks(p.pid) for p in self.procs)

    def __exit__(self, *exc):
        wall = time.perf_counter() - self.t0
        self.cores = (self._ticks() - self.ticks0) / os.sysconf("SC_CLK_TCK") / max(wall, 1e-9)
        for p in self.procs:
            p.kill()
            p.wait()
        return False


def timed_block(spec, measure):
    """``measure()`` beside the spec's spinners: (its result, the timing fields)."""
    with Spinners(spec["busy"]) as spin, h.Timer() as t:
        out = measure()
    return out, {"train_s": t.wall, "train_cpu_s": t.cpu, "spinner_cores": spin.cores,
                 "other_cores_during_train": max(0.0, t.other - spin.cores)}


def run_point(spec):
    if spec["dataset"] == BANDWIDTH:
        return run_stream(spec)
    return run_histograms(spec)


def llc_bytes():
    """The last-level cache of CPU 0 (sysfs), None when unknown."""
    caches = sorted(Path("/sys/devices/system/cpu/cpu0/cache").glob("index*/size"))
    if not caches:
        return None
    text = caches[-1].read_text().strip()
    scale = {"K": 2**10, "M": 2**20, "G": 2**30}.get(text[-1:], 1)
    return int(text.rstrip("KMG")) * scale


def compile_stream():
    """The STREAM kernels compiled into a temporary directory and loaded: (library, the
    compiler line)."""
    with tempfile.TemporaryDirectory(prefix="bench_histogram_") as tmp:
        source, library = Path(tmp) / "stream.c", Path(tmp) / "stream.so"
        source.write_text(STREAM_C)
        cmd = ["gcc", *GCC_FLAGS, str(source), "-o", str(library)]
        subprocess.run(cmd, check=True, capture_output=True, text=True)
        lib = ctypes.CDLL(str(library))      # mapped: the file may go
    i64, dbl, ptr = ctypes.c_int64, ctypes.c_double, ctypes.c_void_p
    lib.stream_init.argtypes = [ptr, ptr, ptr, i64, ctypes.c_int]
    lib.stream_copy.argtypes = [ptr, ptr, i64, ctypes.c_int]
    lib.stream_triad.argtypes = [ptr, ptr, ptr, dbl, i64, ctypes.c_int]
    lib.stream_read.argtypes = [ptr, i64, ctypes.c_int, ctypes.POINTER(ctypes.c_uint64)]
    for name in ("stream_copy", "stream_triad", "stream_read"):
        getattr(lib, name).restype = dbl
    version = subprocess.run(["gcc", "-dumpfullversion"], capture_output=True, text=True,
                             check=False).stdout.strip()
    return lib, f"gcc {version} " + " ".join(GCC_FLAGS)


def run_stream(spec):
    """STREAM copy, triad and read, every thread count once per repeat (interleaved)."""
    lib, compiler = compile_stream()
    n = spec["stream_mib"] * 2**20 // 8
    a, b, c = (np.empty(n, dtype=np.float64) for _ in range(3))
    pa, pb, pc = (x.ctypes.data_as(ctypes.c_void_p) for x in (a, b, c))
    total = ctypes.c_uint64()
    kernels = {"copy": lambda k: lib.stream_copy(pc, pa, n, k),
               "triad": lambda k: lib.stream_triad(pa, pb, pc, 3.0, n, k),
               "read": lambda k: lib.stream_read(pa, n, k, ctypes.byref(total))}
    lib.stream_init(pa, pb, pc, n, max(spec["thread_counts"]))

    def measure():
        seconds = {f"{kernel} {k}": [] for kernel in kernels for k in spec["thread_counts"]}
        for repeat in range(spec["stream_repeats"] + 1):     # the first: warm-up
            for (kernel, run), k in itertools.product(kernels.items(), spec["thread_counts"]):
                s = run(k)
                if repeat:
                    seconds[f"{kernel} {k}"].append(s)
        return seconds

    seconds, timing = timed_block(spec, measure)
    if not np.array_equal(a[-1000:], b[-1000:] + 3.0 * c[-1000:]):   # triad wrote a last
        raise AssertionError("STREAM triad computed a wrong result")
    runs = []
    for key, values in seconds.items():
        kernel, k = key.split()
        gbs = [STREAM_BYTES[kernel] * n / s / 1e9 for s in values]
        runs.append({"kernel": kernel, "threads": int(k), "gb_s": gbs, "seconds": values})
    return {"dataset": BANDWIDTH, "busy": spec["busy"], "compiler": compiler,
            "array_bytes": 8 * n, "llc_bytes": llc_bytes(), "runs": runs, **timing}


def distinct_lines(positions, item_bytes):
    """Cache lines holding the items at ``positions`` (ascending) of ``item_bytes`` each
    (arrays taken as line-aligned)."""
    if positions.size == 0:
        return 0
    lines = positions * item_bytes // LINE
    return int(1 + np.count_nonzero(np.diff(lines)))


def leaf_counts(rows, binned, sparse):
    """What a leaf's pass touches: the cache lines of every feature's bins, of the
    gradients, of the row-wise entries and offsets, and the entries."""
    n = binned.shape[0]
    rows64 = rows.astype(np.int64)
    column_lines = np.array([distinct_lines(f * n + rows64, 1) for f in range(binned.shape[1])])
    dense = sparse.is_sparse == 0
    entries = entry_lines = offset_lines = 0
    for g in range(sparse.indptr.shape[0]):
        start, stop = sparse.indptr[g][rows64], sparse.indptr[g][rows64 + 1]
        entries += int(np.sum(stop - start))
        full = stop > start
        first, last = start[full] * 4 // LINE, (stop[full] * 4 - 1) // LINE
        # ranges of increasing rows do not overlap; a line shared by two is counted once
        entry_lines += int(np.sum(last - first + 1) - np.count_nonzero(first[1:] == last[:-1]))
        both = np.stack([rows64, rows64 + 1], axis=1).reshape(-1) + g * (n + 1)
        offset_lines += distinct_lines(np.unique(both), 8)
    return {"n_rows": int(rows.shape[0]), "column_lines_all": int(column_lines.sum()),
            "column_lines_dense": int(column_lines[dense].sum()),
            "gradient_lines": distinct_lines(rows64, 8), "entries": entries,
            "entry_lines": entry_lines, "offset_lines": offset_lines}


def leaf_rows(n, fraction, rng):
    """The rows of a leaf: all rows, or a random ``fraction`` of them, sorted."""
    if fraction >= 1.0:
        return np.arange(n, dtype=np.int32)
    return np.sort(rng.choice(n, max(1, round(fraction * n)), replace=False)).astype(np.int32)


def check_layouts_agree(build, rows, n_bins_used):
    """The row-wise and the column pass give the same histograms: counts exactly, sums up
    to rounding (the most frequent bin is the leaf's totals minus the other bins)."""
    column, row_wise = build(rows, 1, None), build(rows, 1, "sparse")
    used = n_bins_used
    if not np.array_equal(column["count"][used], row_wise["count"][used]):
        raise AssertionError("row-wise and column histograms differ in their counts")
    for key in ("sum_gradients", "sum_hessians"):
        if not np.allclose(column[key][used], row_wise[key][used], rtol=1e-9, atol=1e-6):
            raise AssertionError(f"row-wise and column histograms differ in {key}")


def run_histograms(spec):
    """Every (leaf, threads, layout) of one data set, repeats interleaved."""
    import cbudget
    from cbudget._core._histogram import build_histograms
    from cbudget._core._types import HISTOGRAM_DTYPE
    data, result = h.start_child(spec, "cbudget")
    t = time.perf_counter()
    dataset = cbudget.Dataset(data["X_train"], data["y_train"], max_bin=255)
    binning_s, t = time.perf_counter() - t, time.perf_counter()
    sparse = dataset.sparse_bins()
    layout_s = time.perf_counter() - t
    binned, nvb, missing = dataset.binned, dataset.n_value_bins, dataset.missing_bin
    n, m = binned.shape
    rng = np.random.default_rng(0)
    gradients, hessians = rng.standard_normal(n), rng.uniform(0.1, 1.0, n)
    mask = np.ones(m, dtype=np.uint8)
    out = np.zeros((m, missing + 1), dtype=HISTOGRAM_DTYPE)
    used = np.arange(missing + 1)[None, :] < nvb[:, None]     # the bins a pass writes
    used[:, missing] = True
    layouts = {"column": None, "row-wise": sparse}

    def build(rows, threads, layout):
        build_histograms(binned, rows, gradients, hessians, mask, nvb, missing, out,
                         threads, sparse=sparse if layout else None)
        return out.copy()

    leaves = {f: leaf_rows(n, f, rng) for f in spec["leaf_fractions"]}
    for rows in leaves.values():
        check_layouts_agree(build, rows, used)
    ways, inner = {}, {}
    for (f, rows), k, layout in itertools.product(leaves.items(), spec["thread_counts"],
                                                  LAYOUTS):
        key = f"{f:g} {k} {layout}"

        def call(rows=rows, k=k, layout=layout):
            build_histograms(binned, rows, gradients, hessians, mask, nvb, missing, out, k,
                             sparse=layouts[layout])

        call()                                           # warm-up, then one to size a sample
        start = time.perf_counter()
        call()
        once = time.perf_counter() - start
        inner[key] = max(1, min(1000, math.ceil(spec["min_sample_ms"] / 1e3 / max(once, 1e-7))))

        def sample(call=call, times=inner[key]):
            for _ in range(times):
                call()
        ways[key] = sample

    def measure():
        return h.interleaved(spec["repeats"], **ways)

    times, timing = timed_block(spec, measure)
    dense = sparse.is_sparse == 0
    blocks = np.arange(m) // 4
    result.update({
        "dataset": spec["dataset"], "busy": spec["busy"], "binning_s": binning_s,
        "layout_s": layout_s, "n_samples": int(n), "n_features": int(m),
        "n_sparse": int(sparse.features.shape[0]), "n_groups": int(sparse.indptr.shape[0]),
        "n_entries": int(sparse.n_entries), "layout_bytes": int(sparse.nbytes),
        "binned_bytes": int(binned.nbytes),
        "blocks_all": int(np.unique(blocks).size),
        "blocks_dense": int(np.unique(blocks[dense]).size),
        "bins_all": int(np.sum(nvb + 1)), "bins_sparse": int(np.sum((nvb + 1)[~dense])),
        "leaves": {f"{f:g}": leaf_counts(rows, binned, sparse) for f, rows in leaves.items()},
        "runs": [{"leaf_fraction": float(key.split()[0]), "threads": int(key.split()[1]),
                  "layout": key.split()[2], "calls_per_sample": inner[key],
                  "seconds": [s / inner[key] for s in times[key][0]]} for key in ways],
        **timing})
    return result


# ------------------------------------------------------------------------ model
def traffic(d, leaf, layout):
    """Bytes a call reads by the kernel-read model, by the distinct-lines model, the bytes
    it writes, and the histogram updates it makes (``d``: a data set's result)."""
    c = d["leaves"][leaf]
    r = c["n_rows"]
    row_wise = layout == "row-wise" and d["n_groups"] > 0
    gather = r * (4 + 16)                                # rows[i], gradients/hessians[row]
    blocks = d["blocks_dense"] if row_wise else d["blocks_all"]
    features = d["n_features"] - d["n_sparse"] if row_wise else d["n_features"]
    column = r * features + blocks * r * (4 + 16)        # bins; rows and ordered g/h per block
    groups = (r * 16                                     # the leaf's totals
              + d["n_groups"] * r * (4 + 16 + 16)        # rows, 2 offsets, ordered g/h
              + 4 * c["entries"]) if row_wise else 0
    lines = (LINE * (c["column_lines_dense" if row_wise else "column_lines_all"]
                     + 2 * c["gradient_lines"]
                     + (c["entry_lines"] + c["offset_lines"] if row_wise else 0))
             + r * (4 + 16))                              # rows; ordered g/h read once
    return {"read": gather + column + groups, "lines": lines,
            "written": r * 16 + HIST_BYTES * d["bins_all"],   # ordered g/h; zeroed bins
            "updates": r * features + (c["entries"] if row_wise else 0)}


MODEL_TEXT = [
    "**Byte model** (per call; the Python wrapper's check of `rows`, 4 bytes a row, not "
    "counted):",
    "",
    "- *gather* (both layouts): the row index (4 B) and the row's gradient and hessian "
    "(16 B) per row; the gathered copy is written (16 B per row, under *written*).",
    "- *column pass*, per feature built column-wise: one bin byte per row; per block of 4 "
    "such features (a pass over the leaf's rows): the row index (4 B) and the gathered "
    "gradient/hessian (16 B) per row. Without the row-wise layout every feature is built "
    "so; with it only the features that are not sparse.",
    "- *row-wise pass* (only when the layout has groups): the leaf's totals (16 B per row), "
    "then per group and row the row index (4 B), the row's two offsets (2 x 8 B) and the "
    "gathered gradient/hessian (16 B), and 4 B per entry (a bin other than the feature's "
    "most frequent one).",
    "- **read** = gather + column pass + row-wise pass: every byte the loops load, re-reads "
    "of the rows and gradients by each block and group included, at byte granularity.",
    "- **lines** (a lower bound of the memory traffic at cache-line granularity): 64 B per "
    "distinct cache line of the bins, gradients, hessians, entries and offsets the leaf's "
    "rows touch, plus the rows and the gathered gradients once (20 B per row). For the "
    "root and 50% leaves it is close to *read* without the re-reads; for the 5% leaf it is "
    "larger (a 64-byte line of a feature's column is fetched for ~3 of its rows).",
    "- *written* (shown, not in the rates): the gathered gradients (16 B per row) and the "
    "zeroed histogram bins (24 B per bin, every used bin of every feature: 4.8 MB per call "
    "on MNIST, as much as reading a 10% leaf's bins). The bin updates themselves "
    "(read-modify-write of 24 B in a 6 KB histogram per feature) stay in L1/L2 and are "
    "counted as *updates* (one per row and column-built feature, one per entry); ns per "
    "update is wall time x threads / updates.",
    "",
]


# ------------------------------------------------------------------------ report
def _median_range(values, spec, scale=1.0):
    v = [x * scale for x in values]
    return f"{statistics.median(v):{spec}} ({min(v):{spec}}-{max(v):{spec}})"


def bandwidth_table(doc):
    """STREAM GB/s per (kernel, threads, load): {(kernel, threads, busy): best}, lines."""
    best, rows = {}, []
    streams = h.ok_results(doc["results"].get(BANDWIDTH, []))
    for s in streams:
        for r in s["runs"]:
            best[(r["kernel"], r["threads"], s["busy"])] = max(r["gb_s"])
            rows.append([r["kernel"], f"{STREAM_BYTES[r['kernel']]} B", r["threads"],
                         _load(s["busy"]), f"{max(r['gb_s']):.1f}",
                         _median_range(r["gb_s"], ".1f"), len(r["gb_s"])])
    if not streams:
        return best, ["No STREAM run: the fractions below are not available.", ""]
    s = streams[0]
    llc = s.get("llc_bytes")
    lines = ["## Machine bandwidth (STREAM-style)", "",
             f"Three arrays of {s['array_bytes'] / 2**20:,.0f} MiB"
             + (f" ({s['array_bytes'] / llc:.1f}x the {llc / 2**20:.0f} MiB last-level "
                "cache)" if llc else "")
             + f", compiled `{s['compiler']}`; copy `c[i] = a[i]`, triad `a[i] = b[i] + "
               "s c[i]`, read `sum += a[i]` (uint64). GB/s = 10^9 bytes/s, counted the "
               "STREAM way: the bytes a loop reads plus those it writes (copy 16 B, triad "
               "24 B, read 8 B per element; the read-for-ownership of the written lines "
               "not counted, so the real traffic of copy and triad is 1.5x and 1.33x "
               "that). Best of the repeats (the STREAM convention), then median "
               "(min-max); thread counts interleaved within each repeat.", ""]
    lines += h.table(["kernel", "bytes / element", "threads", "machine", "best GB/s",
                      "median (min-max)", "repeats"], rows, "llrlrrr")
    return best, lines + [""]


def _load(busy):
    return "idle" if not busy else f"{busy} spinning"


LEAF_LABELS = {"1": "root", "0.5": "50% leaf", "0.05": "5% leaf"}


def dataset_lines(d, best):
    n_entries_row = d["n_entries"] / max(d["n_samples"], 1)
    lines = [f"### {h.title(d['dataset'])}", "",
             f"{d['n_samples']:,} rows x {d['n_features']} features, binned "
             f"{d['binned_bytes'] / 1e6:,.1f} MB; {d['n_sparse']} sparse features (most "
             f"frequent bin >= 40% of the rows) in {d['n_groups']} groups, "
             f"{n_entries_row:.1f} entries per row, row-wise layout "
             f"{d['layout_bytes'] / 1e6:,.1f} MB (built in {d['layout_s']:.2f} s)."
             + (" No sparse feature: both layouts run the column pass (a check of the "
                "noise)." if d["n_groups"] == 0 else ""), ""]
    rows, by_key = [], {(r["leaf_fraction"], r["threads"], r["layout"]): r for r in d["runs"]}
    for (f, k, layout), r in sorted(by_key.items(), key=lambda kv: (-kv[0][0], kv[0][1],
                                                                    kv[0][2])):
        leaf = f"{f:g}"
        t = statistics.median(r["seconds"])
        model = traffic(d, leaf, layout)
        copy, read = best.get(("copy", k, d["busy"])), best.get(("read", k, d["busy"]))
        rate, line_rate = model["read"] / t / 1e9, model["lines"] / t / 1e9
        column_time = statistics.median(by_key[(f, k, "column")]["seconds"])
        rows.append([
            f"{LEAF_LABELS.get(leaf, leaf)} ({d['leaves'][leaf]['n_rows']:,})", k, layout,
            _median_range(r["seconds"], ".2f", 1e3),
            f"{column_time / t:.2f}" if layout != "column" else "",
            f"{model['read'] / 1e6:,.1f}", f"{rate:.2f}", h.fmt(h.ratio(rate, copy), ".0%"),
            h.fmt(h.ratio(rate, read), ".0%"), f"{model['lines'] / 1e6:,.1f}",
            f"{line_rate:.2f}", h.fmt(h.ratio(line_rate, copy), ".0%"),
            f"{model['written'] / 1e6:,.1f}", f"{t * k / max(model['updates'], 1) * 1e9:.2f}"])
    lines += h.table(["leaf (rows)", "threads", "layout", "ms median (min-max)",
                      "column ms / this", "read MB", "read GB/s", "of copy", "of read BW",
                      "lines MB", "lines GB/s", "of copy", "written MB", "ns / update"],
                     rows, "lrlrrrrrrrrrrr")
    return lines + [""]


def busy_lines(idle, loaded, best):
    """Idle against loaded times of one data set."""
    rows = []
    loaded_by = {(r["leaf_fraction"], r["threads"], r["layout"]): r for r in loaded["runs"]}
    for r in idle["runs"]:
        key = (r["leaf_fraction"], r["threads"], r["layout"])
        if key not in loaded_by:
            continue
        t0, t1 = statistics.median(r["seconds"]), statistics.median(loaded_by[key]["seconds"])
        leaf = f"{key[0]:g}"
        model = traffic(loaded, leaf, key[2])
        copy = best.get(("copy", key[1], loaded["busy"]))
        rate = model["read"] / t1 / 1e9
        rows.append([f"{LEAF_LABELS.get(leaf, leaf)}", key[1], key[2], f"{t0 * 1e3:.2f}",
                     _median_range(loaded_by[key]["seconds"], ".2f", 1e3), f"{t1 / t0:.2f}",
                     f"{rate:.2f}", h.fmt(h.ratio(rate, copy), ".0%")])
    return h.table(["leaf", "threads", "layout", "idle ms", f"{_load(loaded['busy'])} ms "
                    "median (min-max)", "loaded / idle", "read GB/s", "of loaded copy"],
                   rows, "lrlrrrrr") + [""]


def render(doc):
    best, lines = bandwidth_table(doc)
    s = doc.get("settings", {})
    lines += ["## Histogram kernel", "",
              f"`build_histograms` (no acquisition counts), every feature masked in, "
              f"255 bins; gradients N(0, 1), hessians U(0.1, 1); leaves: all training rows, "
              f"a random 50% and 5% (sorted, seed 0). Each (leaf, threads, layout) "
              f"{s.get('repeats')} times, interleaved; a sample repeats the call until it "
              f"lasts {s.get('min_sample_ms', 0):g} ms (small leaves) and is divided by the "
              f"calls. *column*: `sparse=None` (every feature column-wise, the 'before'); "
              f"*row-wise*: `sparse=dataset.sparse_bins()`. Fractions against the best "
              f"STREAM copy (and read) of the same thread count and load. Below 32,768 "
              f"(row, feature) pairs the kernel runs on 1 thread whatever it is given "
              f"(Letters' 5% leaf).", ""] + MODEL_TEXT
    for name, results in doc["results"].items():
        if name == BANDWIDTH:
            continue
        ok = h.ok_results(results)
        idle = next((r for r in ok if r["busy"] == 0), None)
        if idle:
            lines += dataset_lines(idle, best)
    loaded_parts = []
    for name, results in doc["results"].items():
        ok = h.ok_results(results)
        idle = next((r for r in ok if r["busy"] == 0), None)
        for loaded in (r for r in ok if r["busy"] > 0 and name != BANDWIDTH):
            loaded_parts += [f"### {h.title(name)}", ""]
            loaded_parts += busy_lines(idle, loaded, best) if idle else dataset_lines(loaded,
                                                                                      best)
    if loaded_parts:
        lines += ["## With other work on the machine", "",
                  "The same runs beside spinning processes (`python -c \"" + SPINNER
                  + "\"`, started by the child " + f"{SPIN_UP_S:g} s before the timing and "
                  "killed after it); the loaded copy bandwidth is the STREAM run beside "
                  "the same spinners.", ""] + loaded_parts
    return lines


if __name__ == "__main__":
    sys.exit(h.main(sys.modules[__name__]))
