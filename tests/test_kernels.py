"""Each Cython kernel of ``cbudget._core`` against a slow pure-NumPy reference
(docs/architecture.md, "Testing").

The references come first, one small function per kernel; the tests follow. They use
small random data from ``np.random.default_rng(seed)``.
"""
import os
import subprocess
import sys

import numpy as np
import pytest

import cbudget
from cbudget._core._acquisition import AcquisitionState, bitset_to_bool, mark_acquired
from cbudget._core._binning import map_to_bins
from cbudget._core._grower import TreeGrower
from cbudget._core._histogram import SparseBins, build_histograms, subtract_histograms
from cbudget._core._linear import (
    dense_gradient,
    dense_scores,
    node_objective,
    pointwise_loss,
    predict_hard,
    soft_route,
)
from cbudget._core._loss import logistic_gradients, softmax, softmax_gradients
from cbudget._core._partition import split_rows
from cbudget._core._predict import (
    add_leaf_values,
    predict_binned_add,
    predict_cost,
    predict_leaf,
    predict_node_rows,
    predict_raw,
    sum_node_rows,
)
from cbudget._core._split import find_best_split, leaf_value
from cbudget._core._stumps import grow_greedy_tree
from cbudget._core._types import HISTOGRAM_DTYPE, MAX_ROWS, NODE_DTYPE, compact_nodes
from cbudget.costs import CostModel
from cbudget.dataset import Dataset, find_bin_edges

SEEDS = [0, 1, 2]
MISSING = 255          # missing bin of the histogram tests
N_BINS = MISSING + 1


# ---------------------------------------------------------------------------------------
# References
# ---------------------------------------------------------------------------------------
def ref_bins(X, edges_list, missing_bin):
    """bin = #(edges < x) = searchsorted(edges, x, 'left'); NaN -> missing_bin."""
    X = np.asarray(X, dtype=np.float64)
    out = np.empty(X.shape, dtype=np.uint8)
    for f, edges in enumerate(edges_list):
        out[:, f] = np.searchsorted(edges, X[:, f], side="left")
        out[np.isnan(X[:, f]), f] = missing_bin
    return out


def ref_histograms(binned, rows, gradients, hessians, n_bins):
    """(sum_gradients, sum_hessians, count), each of shape (n_features, n_bins)."""
    n_features = binned.shape[1]
    sg = np.zeros((n_features, n_bins))
    sh = np.zeros((n_features, n_bins))
    cnt = np.zeros((n_features, n_bins), dtype=np.int64)
    for f in range(n_features):
        b = binned[rows, f].astype(np.intp)
        np.add.at(sg[f], b, gradients[rows])
        np.add.at(sh[f], b, hessians[rows])
        np.add.at(cnt[f], b, 1)
    return sg, sh, cnt


def ref_pack_bits(bits):
    """(n_rows, n_bits) bool -> (n_rows, ceil(max(n_bits, 1) / 64)) uint64 bitset."""
    n_rows, n_bits = bits.shape
    out = np.zeros((n_rows, max(1, (n_bits + 63) // 64)), dtype=np.uint64)
    for b in range(n_bits):
        out[:, b // 64] |= bits[:, b].astype(np.uint64) << np.uint64(b % 64)
    return out


def ref_unpack_bits(words, n_bits):
    """Inverse of ref_pack_bits."""
    out = np.zeros((words.shape[0], n_bits), dtype=bool)
    for b in range(n_bits):
        out[:, b] = (words[:, b // 64] >> np.uint64(b % 64)) & np.uint64(1) == 1
    return out


# ref_best_split's fields of Python types (the sums and gains: numpy floats)
PYTHON_TYPES = {"feature": int, "bin_threshold": int, "count_left": int, "count_right": int,
                "default_left": bool, "cost_penalty": float}


def ref_best_split(binned, rows, g, h, n_value_bins, missing_bin, feature_mask,
                   reg_lambda, min_child_weight, min_data_in_leaf, cost_penalty):
    """Exhaustive scan straight from the rows (not from histograms): every masked-in
    feature, every threshold t in 0..n_value_bins[f]-2, missing values right, and left
    when there are any.

    Returns None when nothing is admissible, else a dict. Ties (within 1e-9 relative) go
    to the lowest feature, then the lowest threshold, then missing-right.
    A split sending only the missing values left is left out when the top value bin is
    empty: "every value left, missing right" is the same split.
    """
    gr_, hr_ = g[rows], h[rows]
    G, H, N = gr_.sum(), hr_.sum(), len(rows)
    parent = G * G / (H + reg_lambda)
    cands = []
    for f in np.flatnonzero(feature_mask):
        col = binned[rows, f]
        miss = col == missing_bin
        pen = 0.0 if cost_penalty is None else float(cost_penalty[f])
        ts = np.arange(int(n_value_bins[f]) - 1)
        for default_left in (False, True):
            if default_left and not miss.any():
                continue
            # left[k, r]: row r goes left under threshold ts[k]
            left = (~miss & (col[None, :] <= ts[:, None])) | (miss & default_left)
            gl, hl, nl = left @ gr_, left @ hr_, left.sum(axis=1)
            grr, hrr, nr = ~left @ gr_, ~left @ hr_, N - nl
            with np.errstate(divide="ignore", invalid="ignore"):  # empty sides, lambda=0
                raw = 0.5 * (gl**2 / (hl + reg_lambda) + grr**2 / (hrr + reg_lambda)
                             - parent)
            ok = ((nl >= min_data_in_leaf) & (nr >= min_data_in_leaf)
                  & (hl >= min_child_weight) & (hrr >= min_child_weight))
            # one form per split: missing values alone on the left are represented as
            # "every value left, missing right" when a threshold can express that
            only_missing_left = default_left & (nl == miss.sum())
            if default_left and not np.any(col == n_value_bins[f] - 1):
                ok &= ~only_missing_left
            # the admissible candidates of this feature and side, as arrays
            cands.append({"gain": raw[ok] - pen, "raw_gain": raw[ok],
                          "cost_penalty": np.full(ok.sum(), pen),
                          "feature": np.full(ok.sum(), int(f)), "bin_threshold": ts[ok],
                          "default_left": np.full(ok.sum(), default_left),
                          "sum_gradient_left": gl[ok], "sum_hessian_left": hl[ok],
                          "count_left": nl[ok], "sum_gradient_right": grr[ok],
                          "sum_hessian_right": hrr[ok], "count_right": nr[ok]})
    if not cands or not any(c["gain"].size for c in cands):
        return None
    cands = {name: np.concatenate([c[name] for c in cands]) for name in cands[0]}
    best = cands["gain"].max()
    tol = 1e-9 * max(1.0, abs(best))
    tied = np.flatnonzero(cands["gain"] >= best - tol)
    k = min(tied, key=lambda i: (cands["feature"][i], cands["bin_threshold"][i],
                                 cands["default_left"][i]))
    return {name: PYTHON_TYPES.get(name, np.float64)(value[k]) for name, value in cands.items()}


def ref_split_rows(rows, binned, feature, bin_threshold, default_left, missing_bin):
    """Stable partition: (left rows in order, then right rows in order), n_left."""
    b = binned[rows, feature]
    left = np.where(b == missing_bin, bool(default_left), b <= bin_threshold)
    return np.concatenate([rows[left], rows[~left]]), int(left.sum())


def ref_leaf(tree, x, node=0):
    """Recursive walk of one tree (NODE_DTYPE array) for one raw input row."""
    nd = tree[node]
    if nd["left"] == -1:
        return node
    v = float(x[nd["feature"]])
    if np.isnan(v):
        go_left = bool(nd["default_left"])
    else:
        go_left = v <= nd["threshold"]
    return ref_leaf(tree, x, int(nd["left"] if go_left else nd["right"]))


def ref_cost(X, trees, offsets, cm, acquired, touched, node_counts):
    """Brute-force cost of walking every input through every tree in order.

    ``acquired`` / ``touched``: one Python set per input (features / groups already paid),
    updated in place. ``node_counts`` (global node index) incremented in place.
    """
    costs = np.zeros(X.shape[0])
    for i in range(X.shape[0]):
        c = 0.0
        for t, tree in enumerate(trees):
            c += cm.tree_cost
            node = 0
            while tree[node]["left"] != -1:
                f = int(tree[node]["feature"])
                c += cm.split_cost
                if f not in acquired[i]:
                    acquired[i].add(f)
                    c += cm.feature_costs[f]
                    node_counts[offsets[t] + node] += 1
                grp = int(cm.feature_group[f])
                if grp >= 0 and grp not in touched[i]:
                    touched[i].add(grp)
                    c += cm.group_costs[grp]
                v = X[i, f]
                go_left = bool(tree[node]["default_left"]) if np.isnan(v) else (
                    v <= tree[node]["threshold"])
                node = int(tree[node]["left"] if go_left else tree[node]["right"])
        costs[i] = c
    return costs


def ref_depth(tree, x):
    """Number of split nodes ``x`` visits in ``tree``."""
    node, depth = 0, 0
    while tree[node]["left"] != -1:
        v = x[tree[node]["feature"]]
        go_left = bool(tree[node]["default_left"]) if np.isnan(v) else v <= tree[node][
            "threshold"]
        node = int(tree[node]["left"] if go_left else tree[node]["right"])
        depth += 1
    return depth


def ref_mark_acquired(bits, rows, bit):
    """bits: (n_rows, n_bits) bool, updated in place; returns the number newly set."""
    newly = 0
    for r in rows:
        if not bits[r, bit]:
            bits[r, bit] = True
            newly += 1
    return newly


# ---------------------------------------------------------------------------------------
# Helpers
# ---------------------------------------------------------------------------------------
SENTINEL = (12345.5, -777.25, 4242)


def sentinel_histograms(n_features, n_bins=N_BINS):
    """Histograms prefilled with a sentinel, to see what a kernel leaves untouched."""
    out = np.zeros((n_features, n_bins), dtype=HISTOGRAM_DTYPE)
    out["sum_gradients"], out["sum_hessians"], out["count"] = SENTINEL
    return out


def to_hist_array(sg, sh, cnt):
    out = np.zeros(sg.shape, dtype=HISTOGRAM_DTYPE)
    out["sum_gradients"], out["sum_hessians"], out["count"] = sg, sh, cnt
    return out


def used_bins(n_value_bins, missing_bin=MISSING):
    return np.r_[0:n_value_bins, missing_bin]


def assert_histograms(got, sg, sh, cnt, mask, nvb, rtol=1e-12):
    """Used bins (value bins and the missing bin) of masked-in features match the
    reference; every other bin keeps the sentinel."""
    for f in range(got.shape[0]):
        used = used_bins(nvb[f]) if mask[f] else np.zeros(0, np.intp)
        unused = np.setdiff1d(np.arange(got.shape[1]), used)
        np.testing.assert_allclose(got["sum_gradients"][f, used], sg[f, used], rtol=rtol,
                                   atol=1e-12)
        np.testing.assert_allclose(got["sum_hessians"][f, used], sh[f, used], rtol=rtol,
                                   atol=1e-12)
        np.testing.assert_array_equal(got["count"][f, used], cnt[f, used])
        for name, value in zip(("sum_gradients", "sum_hessians", "count"), SENTINEL):
            assert np.all(got[name][f, unused] == value), (f, name)


def assert_hist_equal(a, b):
    for name in ("sum_gradients", "sum_hessians", "count"):
        np.testing.assert_array_equal(a[name], b[name])


def random_binned(rng, n_samples, n_value_bins, missing_bin, p_missing=0.1):
    """Fortran-ordered uint8 bins with feature f in [0, n_value_bins[f]) or missing."""
    cols = [rng.integers(0, nvb, n_samples) for nvb in n_value_bins]
    binned = np.asfortranarray(np.stack(cols, axis=1).astype(np.uint8))
    binned[rng.random(binned.shape) < p_missing] = missing_bin
    return binned


def random_leaf(rng, n_samples, n_features, n_rows):
    """Bins (missing bin MISSING), a sorted subset of rows, gradients, hessians and
    the features' numbers of value bins (one feature uses all 255)."""
    nvb = rng.integers(1, 40, n_features).astype(np.uint32)
    nvb[rng.integers(n_features)] = MISSING
    binned = random_binned(rng, n_samples, nvb, MISSING)
    rows = np.sort(rng.choice(n_samples, n_rows, replace=False)).astype(np.int32)
    g = rng.normal(size=n_samples)
    h = rng.uniform(0.1, 2.0, n_samples)
    return binned, rows, g, h, nvb


def concat_edges(edges_list):
    indptr = np.zeros(len(edges_list) + 1, dtype=np.int64)
    indptr[1:] = np.cumsum([len(e) for e in edges_list])
    edges = np.concatenate(edges_list).astype(np.float64) if indptr[-1] else np.zeros(0)
    return edges, indptr


def random_tree(rng, edges_list, n_splits, max_depth=6):
    """A valid NODE_DTYPE tree: children ids > parent id, leaves left=right=feature=-1,
    threshold = edges[feature][bin_threshold]."""
    usable = [f for f, e in enumerate(edges_list) if len(e) > 0]
    nodes = [{"depth": 0}]
    leaves = [0]
    for _ in range(n_splits):
        candidates = [n for n in leaves if nodes[n]["depth"] < max_depth]
        if not candidates:
            break
        p = candidates[rng.integers(len(candidates))]
        leaves.remove(p)
        f = usable[rng.integers(len(usable))]
        t = int(rng.integers(len(edges_list[f])))
        left = len(nodes)
        nodes[p].update(feature=f, bin_threshold=t, threshold=edges_list[f][t],
                        default_left=int(rng.integers(2)), left=left, right=left + 1)
        nodes += [{"depth": nodes[p]["depth"] + 1}, {"depth": nodes[p]["depth"] + 1}]
        leaves += [left, left + 1]
    tree = np.zeros(len(nodes), dtype=NODE_DTYPE)
    tree["value"] = rng.normal(size=len(nodes))
    for i, nd in enumerate(nodes):
        tree[i]["depth"] = nd["depth"]
        tree[i]["left"] = nd.get("left", -1)
        tree[i]["right"] = nd.get("right", -1)
        tree[i]["feature"] = nd.get("feature", -1)
        tree[i]["threshold"] = nd.get("threshold", 0.0)
        tree[i]["bin_threshold"] = nd.get("bin_threshold", 0)
        tree[i]["default_left"] = nd.get("default_left", 0)
    return tree


def random_forest(rng, edges_list, sizes):
    trees = [random_tree(rng, edges_list, s) for s in sizes]
    offsets = np.zeros(len(trees) + 1, dtype=np.int64)
    offsets[1:] = np.cumsum([len(t) for t in trees])
    return trees, np.ascontiguousarray(np.concatenate(trees)), offsets


def random_raw_data(rng, n_samples, n_features, p_nan=0.1, dtype=np.float64):
    X = rng.normal(size=(n_samples, n_features))
    X[:, 0] = np.round(X[:, 0] * 2)  # few distinct values
    X[rng.random(X.shape) < p_nan] = np.nan
    return X.astype(dtype)


# ---------------------------------------------------------------------------------------
# 1. Binning
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("layout", ["C", "F", "strided"])
@pytest.mark.parametrize("max_bin", [4, 255])
def test_map_to_bins(seed, dtype, layout, max_bin):
    rng = np.random.default_rng(seed)
    n_samples, n_features = 300, 6
    X = rng.normal(size=(n_samples, n_features))
    X[:, 1] = 3.0                                    # constant: no edges
    X[:, 2] = rng.integers(0, 5, n_samples)          # few distinct values
    X[rng.random(X.shape) < 0.1] = np.nan
    X[0, 3], X[1, 3], X[2, 3] = np.inf, -np.inf, np.nan
    X = X.astype(dtype)
    edges_list = [find_bin_edges(X[:, f], max_bin) for f in range(n_features)]
    # values exactly on an edge (as representable in dtype) exercise the `<=` boundary
    for f, e in enumerate(edges_list):
        X[5:5 + len(e[:5]), f] = e[:5]
    assert len(edges_list[1]) == 0
    if layout == "C":
        X = np.ascontiguousarray(X)
    elif layout == "F":
        X = np.asfortranarray(X)
    else:                                            # non-contiguous view
        wide = np.zeros((2 * n_samples, 2 * n_features), dtype=dtype)
        wide[::2, ::2] = X
        X = wide[::2, ::2]
    edges, indptr = concat_edges(edges_list)
    out = np.full(X.shape, 77, dtype=np.uint8, order="F")
    map_to_bins(X, edges, indptr, max_bin, out, 2)

    np.testing.assert_array_equal(out, ref_bins(X, edges_list, max_bin))
    Xd = X.astype(np.float64)
    for f, e in enumerate(edges_list):
        finite = ~np.isnan(Xd[:, f])
        assert np.all(out[~finite, f] == max_bin)
        for t in range(len(e)):
            np.testing.assert_array_equal(Xd[finite, f] <= e[t], out[finite, f] <= t)

    out1 = np.empty(X.shape, dtype=np.uint8, order="F")
    map_to_bins(X, edges, indptr, max_bin, out1, 1)
    np.testing.assert_array_equal(out, out1)


@pytest.mark.parametrize("seed", SEEDS)
def test_dataset_bin_data_matches_reference(seed):
    rng = np.random.default_rng(seed)
    X = random_raw_data(rng, 200, 5)
    ds = Dataset(X, max_bin=16)
    assert ds.missing_bin == 16
    np.testing.assert_array_equal(ds.binned, ref_bins(X, ds.bin_edges, 16))
    np.testing.assert_array_equal(ds.bin_data(X), ds.binned)


# ---------------------------------------------------------------------------------------
# 2-4. Histograms
# ---------------------------------------------------------------------------------------
# The kernels only go parallel above a work threshold (n_rows * n_features >= 32768 for
# histograms, sum of n_value_bins >= 8192 for the split scan), so each test has a case
# large enough for n_threads=2 to really run on two threads.
@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("n_samples,n_features,n_rows", [(200, 7, 120), (60, 3, 60),
                                                         (50, 4, 0), (500, 9, 1),
                                                         (6000, 8, 4500)])
def test_build_histograms(seed, n_samples, n_features, n_rows):
    rng = np.random.default_rng(seed)
    binned, rows, g, h, nvb = random_leaf(rng, n_samples, n_features, n_rows)
    mask = (rng.random(n_features) < 0.7).astype(np.uint8)
    mask[0], mask[-1] = 1, 0
    out = sentinel_histograms(n_features)
    build_histograms(binned, rows, g, h, mask, nvb, MISSING, out, 2)

    sg, sh, cnt = ref_histograms(binned, rows, g, h, N_BINS)
    assert_histograms(out, sg, sh, cnt, mask, nvb)
    for f in np.flatnonzero(mask):  # totals: the leaf's sums, for every feature
        used = used_bins(nvb[f])
        assert out["sum_gradients"][f, used].sum() == pytest.approx(g[rows].sum(), abs=1e-9)
        assert out["sum_hessians"][f, used].sum() == pytest.approx(h[rows].sum(), abs=1e-9)
        assert out["count"][f, used].sum() == n_rows

    # sample-order independence
    perm = rows[rng.permutation(n_rows)].copy()
    out_perm = sentinel_histograms(n_features)
    build_histograms(binned, perm, g, h, mask, nvb, MISSING, out_perm, 2)
    assert_histograms(out_perm, out["sum_gradients"], out["sum_hessians"], out["count"],
                      mask, nvb, rtol=1e-9)

    # n_threads=1 equals n_threads=2 exactly
    out1 = sentinel_histograms(n_features)
    build_histograms(binned, rows, g, h, mask, nvb, MISSING, out1, 1)
    assert_hist_equal(out1, out)


def histograms_with_counts(binned, rows, g, h, mask, nvb, n_threads, acquired, touched,
                           feature_group, **options):
    """build_histograms with acquisition counts into sentinel-filled outputs."""
    n_features = binned.shape[1]
    out = sentinel_histograms(n_features)
    unacquired = np.full(n_features, 999, dtype=np.uint32)
    untouched = np.full(n_features, 999, dtype=np.uint32)
    build_histograms(binned, rows, g, h, mask, nvb, MISSING, out, n_threads,
                     acquired=acquired, groups_touched=touched, feature_group=feature_group,
                     unacquired_count=unacquired, group_untouched_count=untouched, **options)
    return out, unacquired, untouched


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("n_groups", [0, 5, 67])
@pytest.mark.parametrize("n_samples,n_rows", [(150, 100), (700, 600)])
def test_build_histograms_with_acquisitions(seed, n_groups, n_samples, n_rows):
    rng = np.random.default_rng(seed)
    n_features = 70                  # two bitset words
    binned, rows, g, h, nvb = random_leaf(rng, n_samples, n_features, n_rows)
    mask = (rng.random(n_features) < 0.8).astype(np.uint8)
    mask[[0, 63, 64, 65, 68, 69]] = 1
    acquired_bits = rng.random((n_samples, n_features)) < 0.5
    acquired_bits[:, 68] = True      # acquired by every row
    acquired_bits[:, 65] = False     # by none
    touched_bits = rng.random((n_samples, n_groups)) < 0.4
    feature_group = (rng.integers(-1, n_groups, n_features) if n_groups
                     else np.full(n_features, -1)).astype(np.int32)
    if n_groups == 67:
        feature_group[[0, 64, 69]] = [66, 64, 63]   # groups in the second word
    acquired = np.asfortranarray(ref_pack_bits(acquired_bits))   # column-major words
    touched = np.asfortranarray(ref_pack_bits(touched_bits))
    assert acquired.shape == (n_samples, 2)

    def run(n_threads):
        return histograms_with_counts(binned, rows, g, h, mask, nvb, n_threads, acquired,
                                      touched, feature_group)

    out, unacq, untouched = run(2)
    plain = sentinel_histograms(n_features)
    build_histograms(binned, rows, g, h, mask, nvb, MISSING, plain, 2)
    assert_hist_equal(out, plain)    # the extra counters change nothing else

    on = np.flatnonzero(mask)
    exp_unacq = (~acquired_bits[rows]).sum(axis=0)
    exp_group = np.zeros(n_features, dtype=np.int64)
    for f in range(n_features):
        if feature_group[f] >= 0:
            exp_group[f] = (~touched_bits[rows, feature_group[f]]).sum()
    np.testing.assert_array_equal(unacq[on], exp_unacq[on])
    np.testing.assert_array_equal(untouched[on], exp_group[on])
    assert unacq[65] == n_rows and unacq[68] == 0

    out1, unacq1, untouched1 = run(1)
    assert_hist_equal(out1, out)
    np.testing.assert_array_equal(unacq1, unacq)
    np.testing.assert_array_equal(untouched1, untouched)

    # counting only some features: the same histograms, the same counts for those,
    # the others' counters untouched
    count_mask = (rng.random(n_features) < 0.5).astype(np.uint8)
    count_mask[[0, 1, 2, 3]] = [1, 0, 1, 1]          # a block with a mix
    partial = sentinel_histograms(n_features)
    unacq2 = np.full(n_features, 999, dtype=np.uint32)
    untouched2 = np.full(n_features, 999, dtype=np.uint32)
    build_histograms(binned, rows, g, h, mask, nvb, MISSING, partial, 2, acquired=acquired,
                     groups_touched=touched, feature_group=feature_group,
                     unacquired_count=unacq2, group_untouched_count=untouched2,
                     count_mask=count_mask)
    assert_hist_equal(partial, plain)
    counted = np.flatnonzero(mask & count_mask)
    np.testing.assert_array_equal(unacq2[counted], exp_unacq[counted])
    np.testing.assert_array_equal(untouched2[counted], exp_group[counted])
    not_counted = np.flatnonzero(~(mask & count_mask).astype(bool))
    assert np.all(unacq2[not_counted] == 999) and np.all(untouched2[not_counted] == 999)


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("n_rows", [1, 31, 33, 300])
def test_build_histograms_of_scattered_leaves(seed, n_rows):
    """Leaves with under a quarter of the samples take the prefetching column pass:
    every row counted once, with and without acquisition counts."""
    rng = np.random.default_rng(seed)
    n_samples, n_features = 2000, 10          # two full blocks and a partial one
    binned, rows, g, h, nvb = random_leaf(rng, n_samples, n_features, n_rows)
    mask = np.ones(n_features, dtype=np.uint8)
    acquired_bits = rng.random((n_samples, n_features)) < 0.5
    acquired = np.asfortranarray(ref_pack_bits(acquired_bits))
    touched = np.asfortranarray(ref_pack_bits(np.zeros((n_samples, 1), dtype=bool)))
    no_group = np.full(n_features, -1, dtype=np.int32)
    sg, sh, cnt = ref_histograms(binned, rows, g, h, N_BINS)
    for n_threads in (1, 2):
        out = sentinel_histograms(n_features)
        build_histograms(binned, rows, g, h, mask, nvb, MISSING, out, n_threads)
        assert_histograms(out, sg, sh, cnt, mask, nvb)
        counted, unacquired, _ = histograms_with_counts(
            binned, rows, g, h, mask, nvb, n_threads, acquired, touched, no_group)
        assert_hist_equal(counted, out)
        np.testing.assert_array_equal(unacquired, (~acquired_bits[rows]).sum(axis=0))


def ref_sparse_entries(binned, most_frequent_bin, features, n_bins):
    """Per row, the sorted ``f * n_bins + bin`` of its sparse features' other bins."""
    return [sorted(int(f) * n_bins + int(binned[r, f]) for f in features
                   if binned[r, f] != most_frequent_bin[f]) for r in range(binned.shape[0])]


def mostly_zero_leaf(rng, n_samples, n_features, n_rows):
    """A leaf (random_leaf) whose even features are 80% zeros and feature 1 85% missing."""
    binned, rows, g, h, nvb = random_leaf(rng, n_samples, n_features, n_rows)
    binned[:, ::2] *= rng.random((n_samples, binned[:, ::2].shape[1])) < 0.2
    binned[rng.random(n_samples) < 0.85, 1] = MISSING
    return binned, rows, g, h, nvb


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("min_share,n_groups", [(0.0, 3), (0.7, 2), (0.7, 8), (1.0, 1)])
def test_sparse_bins_layout(seed, min_share, n_groups):
    rng = np.random.default_rng(seed)
    binned, _, _, _, nvb = mostly_zero_leaf(rng, 300, 9, 0)
    layout = SparseBins(binned, nvb, MISSING, min_share=min_share, n_groups=n_groups,
                        min_elided_columns=0)
    counts = np.stack([np.bincount(binned[:, f], minlength=256) for f in range(9)])
    np.testing.assert_array_equal(layout.most_frequent_bin, counts.argmax(axis=1))
    expected = np.flatnonzero(counts.max(axis=1) >= min_share * 300)
    np.testing.assert_array_equal(layout.features, expected)
    np.testing.assert_array_equal(np.flatnonzero(layout.is_sparse), expected)
    if min_share == 0.7:     # the 80%-zero features and the 85%-missing one
        np.testing.assert_array_equal(expected, [0, 1, 2, 4, 6, 8])
    # groups: consecutive runs covering the sparse features; entries per row in order
    gptr = layout.group_indptr
    assert gptr[0] == 0 and gptr[-1] == expected.size and np.all(np.diff(gptr) > 0)
    assert len(gptr) - 1 <= n_groups and layout.indptr.shape == (len(gptr) - 1, 301)
    got = [[] for _ in range(300)]
    for g in range(len(gptr) - 1):
        for r in range(300):
            got[r] += layout.entries[layout.indptr[g, r]:layout.indptr[g, r + 1]].tolist()
    assert got == ref_sparse_entries(binned, layout.most_frequent_bin, expected, MISSING + 1)
    assert layout.n_entries == sum(map(len, got))
    # no feature is row-wise when their elided bins add up to fewer columns than asked
    elided = counts.max(axis=1)[expected].sum() / 300
    for limit, row_wise in ((elided, expected), (elided + 0.01, [])):
        np.testing.assert_array_equal(SparseBins(binned, nvb, MISSING, min_share=min_share,
                                                 min_elided_columns=limit).features, row_wise)


def test_sparse_bins_rejects_bad_input():
    binned = np.asfortranarray(np.zeros((5, 2), dtype=np.uint8))
    nvb = np.array([2, 2], dtype=np.uint32)
    with pytest.raises(ValueError, match="min_share"):
        SparseBins(binned, nvb, MISSING, min_share=1.5)
    with pytest.raises(ValueError, match="n_groups"):
        SparseBins(binned, nvb, MISSING, n_groups=0)
    with pytest.raises(ValueError, match="min_elided_columns"):
        SparseBins(binned, nvb, MISSING, min_elided_columns=float("nan"))
    with pytest.raises(ValueError, match="n_value_bins"):
        SparseBins(binned, nvb[:1], MISSING)
    with pytest.raises(ValueError, match="bin"):
        SparseBins(binned, nvb, 1)
    layout = SparseBins(binned, nvb, MISSING)
    out = sentinel_histograms(2)
    args = (np.arange(5, dtype=np.int32), np.ones(5), np.ones(5), np.ones(2, np.uint8), nvb)
    with pytest.raises(ValueError, match="sparse layout was made for"):
        build_histograms(np.asfortranarray(binned[:4]), np.arange(4, dtype=np.int32),
                         np.ones(4), np.ones(4), np.ones(2, np.uint8), nvb, MISSING, out, 1,
                         sparse=layout)
    with pytest.raises(ValueError, match="sparse layout was made for"):
        build_histograms(binned, *args, 254, sentinel_histograms(2, 255), 1, sparse=layout)
    with pytest.raises(ValueError, match="sparse layout was made for"):
        TreeGrower(np.asfortranarray(binned[:4]), np.zeros(2), np.array([0, 1, 2]), nvb,
                   MISSING, 0.1, 1.0, 1e-3, 0.0, 1, 4, -1, True, 1, layout)


# n_rows: 0, a few, and enough for n_threads=2 to run two threads
@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("n_samples,n_features,n_rows", [(400, 70, 300), (6000, 9, 4500),
                                                         (100, 5, 0), (100, 5, 3)])
def test_build_histograms_row_wise(seed, n_samples, n_features, n_rows):
    """With the sparse features row-wise: the reference histograms (the most frequent
    bin up to rounding), the same acquisition counts, one result for 1 and 2 threads."""
    rng = np.random.default_rng(seed)
    binned, rows, g, h, nvb = mostly_zero_leaf(rng, n_samples, n_features, n_rows)
    layout = SparseBins(binned, nvb, MISSING, min_share=0.7, n_groups=3,
                        min_elided_columns=0)
    assert 0 < layout.features.size < n_features
    mask = (rng.random(n_features) < 0.8).astype(np.uint8)
    mask[:2] = 1
    n_groups = 5
    acquired_bits = rng.random((n_samples, n_features)) < 0.5
    touched_bits = rng.random((n_samples, n_groups)) < 0.4
    feature_group = rng.integers(-1, n_groups, n_features).astype(np.int32)
    acquired = np.asfortranarray(ref_pack_bits(acquired_bits))
    touched = np.asfortranarray(ref_pack_bits(touched_bits))
    count_mask = (rng.random(n_features) < 0.7).astype(np.uint8)

    def run(n_threads, sparse):
        return histograms_with_counts(binned, rows, g, h, mask, nvb, n_threads, acquired,
                                      touched, feature_group, count_mask=count_mask,
                                      sparse=sparse)

    out, unacq, untouched = run(2, layout)
    sg, sh, cnt = ref_histograms(binned, rows, g, h, N_BINS)
    built = mask | layout.is_sparse           # every sparse feature is built
    for f in range(n_features):
        used = used_bins(nvb[f]) if built[f] else np.zeros(0, np.intp)
        np.testing.assert_allclose(out["sum_gradients"][f, used], sg[f, used], atol=1e-9)
        np.testing.assert_allclose(out["sum_hessians"][f, used], sh[f, used], atol=1e-9)
        np.testing.assert_array_equal(out["count"][f, used], cnt[f, used])
    dense = np.flatnonzero(~layout.is_sparse.astype(bool) & mask.astype(bool))
    assert_histograms(out[dense], sg[dense], sh[dense], cnt[dense], mask[dense], nvb[dense])
    _, exp_unacq, exp_untouched = run(2, None)     # the counts of the column-wise pass
    counted = np.flatnonzero(mask & count_mask)
    np.testing.assert_array_equal(unacq[counted], exp_unacq[counted])
    np.testing.assert_array_equal(untouched[counted], exp_untouched[counted])
    assert np.all(unacq[count_mask == 0] == 999)
    for got, expected in zip(run(1, layout), (out, unacq, untouched)):
        np.testing.assert_array_equal(got, expected)

    # most sparse features masked out: they are built column-wise
    few = np.zeros(n_features, dtype=np.uint8)
    few[layout.features[:1]] = 1
    if layout.features.size >= 3:
        partial = sentinel_histograms(n_features)
        build_histograms(binned, rows, g, h, few, nvb, MISSING, partial, 2, sparse=layout)
        plain = sentinel_histograms(n_features)
        build_histograms(binned, rows, g, h, few, nvb, MISSING, plain, 2)
        assert_hist_equal(partial, plain)


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("full_mask", [True, False])
def test_subtract_histograms(seed, full_mask):
    rng = np.random.default_rng(seed)
    n_samples, n_features = 300, 6
    binned, rows, g, h, nvb = random_leaf(rng, n_samples, n_features, 200)
    in_child = rng.random(rows.size) < 0.4
    child_rows, sibling_rows = rows[in_child], rows[~in_child]
    mask = np.ones(n_features, np.uint8) if full_mask else np.array([1, 0, 1, 1, 0, 1], np.uint8)
    ones = np.ones(n_features, np.uint8)
    parent = np.zeros((n_features, N_BINS), HISTOGRAM_DTYPE)
    child = np.zeros((n_features, N_BINS), HISTOGRAM_DTYPE)
    build_histograms(binned, rows, g, h, ones, nvb, MISSING, parent, 1)
    build_histograms(binned, child_rows, g, h, ones, nvb, MISSING, child, 1)
    out = sentinel_histograms(n_features)
    subtract_histograms(parent, child, mask, nvb, MISSING, out)

    sg, sh, cnt = ref_histograms(binned, sibling_rows, g, h, N_BINS)
    assert_histograms(out, sg, sh, cnt, mask, nvb, rtol=1e-9)


@pytest.mark.parametrize("seed", SEEDS)
def test_subtract_histograms_in_parallel(seed):
    """Enough (feature, bin) pairs for the threaded path: the same result."""
    rng = np.random.default_rng(seed)
    n_features = 150
    binned, rows, g, h, nvb = random_leaf(rng, 400, n_features, 300)
    mask = (rng.random(n_features) < 0.9).astype(np.uint8)
    ones = np.ones(n_features, np.uint8)
    parent = np.zeros((n_features, N_BINS), HISTOGRAM_DTYPE)
    child = np.zeros((n_features, N_BINS), HISTOGRAM_DTYPE)
    build_histograms(binned, rows, g, h, ones, nvb, MISSING, parent, 2)
    build_histograms(binned, np.ascontiguousarray(rows[::3]), g, h, ones, nvb, MISSING, child, 2)
    serial, threaded = sentinel_histograms(n_features), sentinel_histograms(n_features)
    subtract_histograms(parent, child, mask, nvb, MISSING, serial, 1)
    subtract_histograms(parent, child, mask, nvb, MISSING, threaded, 2)
    assert_hist_equal(threaded, serial)
    sg, sh, cnt = ref_histograms(binned, np.setdiff1d(rows, rows[::3]), g, h, N_BINS)
    assert_histograms(serial, sg, sh, cnt, mask, nvb, rtol=1e-9)


# ---------------------------------------------------------------------------------------
# 5. Split finding
# ---------------------------------------------------------------------------------------
def run_split(binned, rows, g, h, nvb, missing_bin, mask, lam, mcw, mdl, penalty, n_threads):
    sg, sh, cnt = ref_histograms(binned, rows, g, h, missing_bin + 1)
    hist = to_hist_array(sg, sh, cnt)
    return find_best_split(hist, np.asarray(nvb, np.uint32), missing_bin,
                           np.asarray(mask, np.uint8), float(g[rows].sum()),
                           float(h[rows].sum()), len(rows), lam, mcw, mdl, penalty, n_threads)


def assert_split_matches(got, exp):
    assert got.feature == exp["feature"], (got, exp)
    assert got.bin_threshold == exp["bin_threshold"], (got, exp)
    assert bool(got.default_left) == exp["default_left"], (got, exp)
    for name in ("gain", "raw_gain", "cost_penalty", "sum_gradient_left", "sum_hessian_left",
                 "sum_gradient_right", "sum_hessian_right"):
        assert getattr(got, name) == pytest.approx(exp[name], rel=1e-9, abs=1e-9), name
    assert got.count_left == exp["count_left"]
    assert got.count_right == exp["count_right"]


def assert_split_identical(a, b):
    for name in ("feature", "bin_threshold", "default_left", "gain", "raw_gain",
                 "cost_penalty", "sum_gradient_left", "sum_hessian_left",
                 "sum_gradient_right", "sum_hessian_right", "count_left", "count_right"):
        assert getattr(a, name) == getattr(b, name), name


# small: 8 features with 1..12 value bins; wide: 44 features with 215..254 value bins
# (over the kernel's parallel threshold)
SPLIT_SHAPES = {"small": (250, 180, 8, 2, 13, 12), "wide": (800, 600, 44, 215, 255, 255)}


@pytest.mark.parametrize("seed", SEEDS + [3, 4])
@pytest.mark.parametrize("lam,mcw,mdl", [(0.0, 0.0, 1), (1.0, 1e-3, 1), (0.5, 2.0, 10),
                                         (2.0, 0.0, 30)])
@pytest.mark.parametrize("with_penalty", [False, True])
@pytest.mark.parametrize("shape", ["small", "wide"])
def test_find_best_split(seed, lam, mcw, mdl, with_penalty, shape):
    rng = np.random.default_rng(seed)
    n_samples, n_rows, n_features, lo, hi, missing_bin = SPLIT_SHAPES[shape]
    nvb = rng.integers(lo, hi, n_features)
    nvb[4] = 1                                       # a feature that cannot split
    binned = random_binned(rng, n_samples, nvb, missing_bin, p_missing=0.15)
    binned[:, 6][binned[:, 6] == missing_bin] = 0    # no missing values in feature 6
    rows = np.sort(rng.choice(n_samples, n_rows, replace=False)).astype(np.int32)
    # gradients that depend on a few features (and on missingness) so gains vary
    g = (rng.normal(size=n_samples) + 0.8 * (binned[:, 1] > nvb[1] // 3)
         - 0.6 * (binned[:, 3] == missing_bin))
    h = rng.uniform(0.05, 1.0, n_samples)
    mask = np.ones(n_features, np.uint8)
    mask[7] = 0
    penalty = rng.uniform(0, 2.0, n_features) if with_penalty else None

    got = run_split(binned, rows, g, h, nvb, missing_bin, mask, lam, mcw, mdl, penalty, 2)
    exp = ref_best_split(binned, rows, g, h, nvb, missing_bin, mask, lam, mcw, mdl, penalty)
    assert exp is not None
    assert_split_matches(got, exp)
    got1 = run_split(binned, rows, g, h, nvb, missing_bin, mask, lam, mcw, mdl, penalty, 1)
    assert_split_identical(got1, got)


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("nan_gradient", [-1.5, 1.5])
def test_find_best_split_from_nan_data(seed, nan_gradient):
    """Raw data with NaNs, binned by map_to_bins with quantile edges (max_bin=16); the
    NaN rows' gradients look like those of small (go left) or large (go right) values."""
    rng = np.random.default_rng(seed)
    X = random_raw_data(rng, 300, 6, p_nan=0.2)
    ds = Dataset(X, max_bin=16)
    rows = np.arange(300, dtype=np.int32)
    g = np.where(np.isnan(X[:, 2]), nan_gradient, np.nan_to_num(X[:, 2]))
    g = g + 0.3 * rng.normal(size=300)
    h = np.ones(300)
    mask = np.ones(6, np.uint8)
    for n_threads in (1, 2):
        got = run_split(ds.binned, rows, g, h, ds.n_value_bins, ds.missing_bin, mask, 1.0,
                        0.0, 5, None, n_threads)
        exp = ref_best_split(ds.binned, rows, g, h, ds.n_value_bins, ds.missing_bin, mask,
                             1.0, 0.0, 5, None)
        assert_split_matches(got, exp)
        assert got.feature == 2 and bool(got.default_left) == (nan_gradient < 0)


@pytest.mark.parametrize("seed", SEEDS)
def test_find_best_split_thresholds_stop_before_last_value_bin(seed):
    """Thresholds run over 0..n_value_bins-2 only: "every value | missing" is not a
    candidate, even when missingness is all the signal."""
    rng = np.random.default_rng(seed)
    nvb = np.array([4, 6])
    binned = random_binned(rng, 200, nvb, 10, p_missing=0.3)
    rows = np.arange(200, dtype=np.int32)
    g = np.where(binned[:, 0] == 10, 3.0, -1.0) + 0.1 * rng.normal(size=200)
    h = np.ones(200)
    mask = np.ones(2, np.uint8)
    got = run_split(binned, rows, g, h, nvb, 10, mask, 1.0, 0.0, 1, None, 1)
    exp = ref_best_split(binned, rows, g, h, nvb, 10, mask, 1.0, 0.0, 1, None)
    assert_split_matches(got, exp)
    assert got.bin_threshold <= nvb[got.feature] - 2


@pytest.mark.parametrize("n_threads", [1, 2])
@pytest.mark.parametrize("constraint", ["min_data_in_leaf", "min_child_weight"])
@pytest.mark.parametrize("at_limit", [True, False])
def test_find_best_split_constraint_limits_are_inclusive(constraint, at_limit, n_threads):
    """Two value bins of 5 rows (hessian 2.5) each: a side with exactly min_data_in_leaf
    rows / min_child_weight hessian is admissible; one more is not."""
    hist = np.zeros((1, 3), HISTOGRAM_DTYPE)   # value bins 0, 1; missing bin 2 (empty)
    hist["sum_gradients"][0] = [-5.0, 5.0, 0.0]
    hist["sum_hessians"][0] = [2.5, 2.5, 0.0]
    hist["count"][0] = [5, 5, 0]
    mdl, mcw = 1, 0.0
    if constraint == "min_data_in_leaf":
        mdl = 5 if at_limit else 6
    else:
        mcw = 2.5 if at_limit else np.nextafter(2.5, 3.0)
    got = find_best_split(hist, np.array([2], np.uint32), 2, np.ones(1, np.uint8), 0.0, 5.0,
                          10, 1.0, mcw, mdl, None, n_threads)
    if at_limit:
        assert (got.feature, got.bin_threshold, got.count_left, got.count_right) == (0, 0, 5, 5)
        assert got.gain == pytest.approx(0.5 * 2 * 25 / 3.5)
    else:
        assert got.feature == -1


@pytest.mark.parametrize("n_threads", [1, 2])
@pytest.mark.parametrize("seed", SEEDS)
def test_find_best_split_ties_go_to_lowest_feature(seed, n_threads):
    rng = np.random.default_rng(seed)
    # 44 x 210 value bins: over the parallel threshold; static halves are 0-21 and 22-43
    n_samples, n_features, missing_bin = 600, 44, 255
    nvb = np.full(n_features, 210)
    binned = random_binned(rng, n_samples, nvb, missing_bin)
    binned[:, 30] = binned[:, 5]                      # exact duplicates of feature 5,
    binned[:, 40] = binned[:, 5]                      # on the other thread's half
    rows = np.arange(n_samples, dtype=np.int32)
    g = np.where(binned[:, 5] > 100, 2.0, -2.0) + 0.1 * rng.normal(size=n_samples)
    h = rng.uniform(0.5, 1.0, n_samples)
    mask = np.ones(n_features, np.uint8)
    got = run_split(binned, rows, g, h, nvb, missing_bin, mask, 1.0, 0.0, 1, None, n_threads)
    exp = ref_best_split(binned, rows, g, h, nvb, missing_bin, mask, 1.0, 0.0, 1, None)
    assert exp["feature"] == 5
    assert_split_matches(got, exp)
    # masking out the first copy moves the choice to the next copy
    mask[5] = 0
    got = run_split(binned, rows, g, h, nvb, missing_bin, mask, 1.0, 0.0, 1, None, n_threads)
    assert got.feature == 30 and got.bin_threshold == exp["bin_threshold"]
    # a lower per-feature penalty on a later copy wins
    mask[5] = 1
    penalty = np.full(n_features, 0.5)
    penalty[40] = 0.25
    got = run_split(binned, rows, g, h, nvb, missing_bin, mask, 1.0, 0.0, 1, penalty, n_threads)
    assert got.feature == 40
    assert got.gain == pytest.approx(exp["raw_gain"] - 0.25, rel=1e-12)


def test_find_best_split_tie_across_missing_directions_prefers_missing_right():
    """Documented: "Ties go to the lowest feature index, then missing values going right,
    then the lowest bin".

    One feature, value bins 0..2 (2 rows each) and 2 missing rows whose sums equal bin
    1's; with min_data_in_leaf=3 only two splits are admissible and they have exactly the
    same (G_L, H_L): bins {0, 1} | {2, missing} (threshold 1, missing right) and
    {0, missing} | {1, 2} (threshold 0, missing left). Missing-right wins.
    """
    hist = np.zeros((1, 4), HISTOGRAM_DTYPE)
    hist["sum_gradients"][0] = [-3.0, 0.5, 2.0, 0.5]
    hist["sum_hessians"][0] = [1.0, 0.75, 1.5, 0.75]
    hist["count"][0] = [2, 2, 2, 2]
    G, H = hist["sum_gradients"].sum(), hist["sum_hessians"].sum()
    got = find_best_split(hist, np.array([3], np.uint32), 3, np.ones(1, np.uint8), G, H, 8,
                          1.0, 0.0, 3, None, 1)
    assert got.feature == 0
    assert (got.bin_threshold, bool(got.default_left)) == (1, False), got


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("case", ["min_data", "min_child_weight", "masked", "one_bin"])
def test_find_best_split_nothing_admissible(seed, case):
    rng = np.random.default_rng(seed)
    n_features, missing_bin = 4, 8
    nvb = np.full(n_features, 8) if case != "one_bin" else np.ones(n_features, int)
    binned = random_binned(rng, 40, nvb, missing_bin)
    rows = np.arange(12, dtype=np.int32)
    g, h = rng.normal(size=40), rng.uniform(0.5, 1.0, 40)
    mask = np.ones(n_features, np.uint8) if case != "masked" else np.zeros(n_features, np.uint8)
    mdl = 7 if case == "min_data" else 1
    mcw = 100.0 if case == "min_child_weight" else 0.0
    for n_threads in (1, 2):
        got = run_split(binned, rows, g, h, nvb, missing_bin, mask, 1.0, mcw, mdl, None,
                        n_threads)
        assert got.feature == -1
    assert ref_best_split(binned, rows, g, h, nvb, missing_bin, mask, 1.0, mcw, mdl,
                          None) is None


@pytest.mark.parametrize("G,H,lam", [(3.0, 2.0, 1.0), (-1.5, 0.5, 0.0), (2.0, 0.0, 0.0),
                                     (1.0, -2.0, 1.0)])
def test_leaf_value(G, H, lam):
    expected = 0.0 if H + lam <= 0 else -G / (H + lam)
    assert leaf_value(G, H, lam) == expected


# ---------------------------------------------------------------------------------------
# 6. Row partition
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("default_left", [False, True])
@pytest.mark.parametrize("order", ["sorted", "shuffled"])
def test_split_rows(seed, default_left, order):
    rng = np.random.default_rng(seed)
    n_samples, missing_bin = 300, 255
    nvb = [20, 5, 9]
    binned = random_binned(rng, n_samples, nvb, missing_bin, p_missing=0.2)
    rows = rng.choice(n_samples, 170, replace=False).astype(np.int32)
    if order == "sorted":
        rows.sort()
    for feature, t in [(0, 7), (1, 0), (2, 8), (0, 19)]:
        got_rows = rows.copy()
        buffer = np.full(rows.size, -5, np.int32)
        n_left = split_rows(got_rows, binned, feature, t, default_left, missing_bin, buffer)
        exp_rows, exp_left = ref_split_rows(rows, binned, feature, t, default_left,
                                            missing_bin)
        assert n_left == exp_left
        np.testing.assert_array_equal(got_rows, exp_rows)
        miss = binned[got_rows, feature] == missing_bin
        assert np.all(miss[:n_left] <= default_left)
        assert np.all(miss[n_left:] <= (not default_left))


# ---------------------------------------------------------------------------------------
# 7. Prediction
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("layout", ["C", "F"])
def test_predict(seed, dtype, layout):
    rng = np.random.default_rng(seed)
    n_samples, n_features, n_outputs, max_bin = 250, 5, 3, 16
    X = random_raw_data(rng, n_samples, n_features, p_nan=0.15, dtype=dtype)
    X = np.asfortranarray(X) if layout == "F" else np.ascontiguousarray(X)
    edges_list = [find_bin_edges(X[:, f], max_bin) for f in range(n_features)]
    trees, nodes, offsets = random_forest(rng, edges_list, [0, 1, 6, 12, 25])
    tree_outputs = rng.integers(0, n_outputs, len(trees)).astype(np.int32)
    for tree in trees:
        internal = tree["left"] != -1
        assert np.all(tree["left"][internal] > np.flatnonzero(internal))
        assert np.all(tree["feature"][~internal] == -1)

    exp_leaf = np.array([[ref_leaf(tree, X[i]) for tree in trees] for i in range(n_samples)])
    base = rng.normal(size=(n_samples, n_outputs))
    exp_raw = base.copy()
    for t, tree in enumerate(trees):
        exp_raw[:, tree_outputs[t]] += tree["value"][exp_leaf[:, t]]

    results = {}
    for n_threads in (1, 2):
        raw = base.copy()
        # the kernels read C-ordered rows and the packed node layout
        X_c, packed = np.ascontiguousarray(X), compact_nodes(nodes)
        predict_raw(X_c, packed, offsets, tree_outputs, raw, n_threads)
        leaf = np.full((n_samples, len(trees)), -9, np.int32)
        predict_leaf(X_c, packed, offsets, leaf, n_threads)
        np.testing.assert_array_equal(leaf, exp_leaf)
        np.testing.assert_allclose(raw, exp_raw, rtol=1e-12, atol=1e-12)
        results[n_threads] = raw
    np.testing.assert_array_equal(results[1], results[2])

    # binned traversal equals raw traversal for data binned with the same edges
    edges, indptr = concat_edges(edges_list)
    binned = np.empty(X.shape, np.uint8, order="F")
    map_to_bins(X, edges, indptr, max_bin, binned, 1)
    for n_threads in (1, 2):
        raw_b = base.copy()
        for t, tree in enumerate(trees):
            predict_binned_add(binned, tree, max_bin, raw_b, int(tree_outputs[t]), n_threads)
        np.testing.assert_array_equal(raw_b, results[1])


# ---------------------------------------------------------------------------------------
# 8. Cost accounting
# ---------------------------------------------------------------------------------------
def random_cost_model(rng, n_features, n_groups, zero_split_cost=False):
    feature_group = (rng.integers(-1, n_groups, n_features) if n_groups
                     else np.full(n_features, -1)).astype(np.int32)
    split_cost = float(rng.uniform(0, 0.3))
    return CostModel(rng.uniform(0, 5, n_features), feature_group,
                     rng.uniform(0, 10, n_groups), [f"g{i}" for i in range(n_groups)],
                     rng.uniform(0, 1, n_features), 0.0 if zero_split_cost else split_cost,
                     float(rng.uniform(0, 0.5)))


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("n_features,n_groups", [(6, 0), (10, 3), (70, 5), (70, 66)])
@pytest.mark.parametrize("initial_state", [False, True])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_cost_accumulate(seed, n_features, n_groups, initial_state, dtype):
    rng = np.random.default_rng(seed)
    n_samples = 120
    X = random_raw_data(rng, n_samples, n_features, p_nan=0.15, dtype=dtype)
    edges_list = [find_bin_edges(X[:, f], 8) for f in range(n_features)]
    # without a split cost, inputs holding every split feature skip the walks
    cm = random_cost_model(rng, n_features, n_groups, zero_split_cost=seed == 0)
    # two batches of trees (e.g. two boosting rounds), then the second batch again
    trees_a, nodes_a, off_a = random_forest(rng, edges_list, [3, 10, 0, 20])
    trees_b, nodes_b, off_b = random_forest(rng, edges_list, [15, 7])

    acq_sets = [set() for _ in range(n_samples)]
    grp_sets = [set() for _ in range(n_samples)]
    if initial_state:  # a consistent earlier state: groups of acquired features touched
        for i in range(n_samples):
            acq_sets[i] = set(np.flatnonzero(rng.random(n_features) < 0.2).tolist())
            grp_sets[i] = {int(cm.feature_group[f]) for f in acq_sets[i]
                           if cm.feature_group[f] >= 0}

    def packed_state():
        a = np.zeros((n_samples, n_features), bool)
        gt = np.zeros((n_samples, max(n_groups, 1)), bool)
        for i in range(n_samples):
            a[i, list(acq_sets[i])] = True
            gt[i, list(grp_sets[i])] = True
        return ref_pack_bits(a), ref_pack_bits(gt)

    start_state = packed_state()
    base = rng.uniform(0, 1, n_samples)
    runs = {}
    for n_threads in (1, 2):
        bitsets = (start_state[0].copy(), start_state[1].copy())
        zero = cm.new_bitsets(n_samples)
        assert bitsets[0].shape == zero[0].shape and bitsets[1].shape == zero[1].shape
        cost = base.copy()
        counts_a = np.zeros(len(nodes_a), np.int64)
        counts_b = np.zeros(len(nodes_b), np.int64)
        history = []
        for nodes, offsets, counts in ((nodes_a, off_a, counts_a), (nodes_b, off_b, counts_b),
                                       (nodes_b, off_b, counts_b)):
            cm.accumulate(X, compact_nodes(nodes), offsets, bitsets, cost,
                          node_counts=counts, n_threads=n_threads)
            history.append((cost.copy(), counts.copy(), bitsets[0].copy(), bitsets[1].copy()))
        runs[n_threads] = history

    # reference, with the state persisted across the three calls
    exp_cost = base.copy()
    exp_counts = {"a": np.zeros(len(nodes_a), np.int64), "b": np.zeros(len(nodes_b), np.int64)}
    for k, (trees, offsets, key) in enumerate(((trees_a, off_a, "a"), (trees_b, off_b, "b"),
                                               (trees_b, off_b, "b"))):
        before = [set(s) for s in acq_sets]
        added = ref_cost(X, trees, offsets, cm, acq_sets, grp_sets, exp_counts[key])
        exp_cost = exp_cost + added
        got_cost, got_counts, got_acq, got_grp = runs[1][k]
        np.testing.assert_allclose(got_cost, exp_cost, rtol=1e-12, atol=1e-12)
        np.testing.assert_array_equal(got_counts, exp_counts[key])
        exp_acq, exp_grp = packed_state()
        np.testing.assert_array_equal(got_acq, exp_acq)
        np.testing.assert_array_equal(got_grp, exp_grp)
        if k == 2:  # same trees, same bitsets: no feature or group is charged again
            assert all(b == a for a, b in zip(before, acq_sets))
            repeat_cost = runs[1][2][0] - runs[1][1][0]
            n_splits = np.array([sum(ref_depth(tree, X[i]) for tree in trees)
                                 for i in range(n_samples)])
            np.testing.assert_allclose(repeat_cost, cm.split_cost * n_splits
                                       + cm.tree_cost * len(trees), rtol=1e-9, atol=1e-9)
            np.testing.assert_array_equal(runs[1][2][1], runs[1][1][1])
    # n_threads=1 equals n_threads=2 exactly
    for h1, h2 in zip(runs[1], runs[2]):
        for a, b in zip(h1, h2):
            np.testing.assert_array_equal(a, b)


def test_cost_hand_computed():
    """Two inputs, two trees on features {0, 1 (group 0), 2 (group 0)}: known answers."""
    cm = CostModel([1.0, 10.0, 100.0], [-1, 0, 0], [1000.0], ["g"], [0, 0, 0], 0.5, 0.25)
    t1 = np.zeros(3, NODE_DTYPE)     # root splits feature 1 at 0.0
    t1["left"], t1["right"], t1["feature"] = [1, -1, -1], [2, -1, -1], [1, -1, -1]
    t2 = np.zeros(5, NODE_DTYPE)     # root on feature 0 at 0.0, left child on feature 2
    t2["left"], t2["right"], t2["feature"] = [1, 3, -1, -1, -1], [2, 4, -1, -1, -1], [0, 2, -1,
                                                                                     -1, -1]
    nodes = np.concatenate([t1, t2])
    offsets = np.array([0, 3, 8], np.int64)
    X = np.array([[-1.0, 5.0, 7.0], [1.0, np.nan, 7.0]])
    bitsets = cm.new_bitsets(2)
    cost = np.zeros(2)
    counts = np.zeros(8, np.int64)
    cm.accumulate(X, compact_nodes(nodes), offsets, bitsets, cost, node_counts=counts)
    # input 0: f1 (+10 +1000 group), f0 (+1), f2 (+100, group already paid); 3 splits, 2 trees
    # input 1: f1 (+10 +1000), f0 (+1); 2 splits, 2 trees
    np.testing.assert_allclose(cost, [1111 + 1.5 + 0.5, 1011 + 1.0 + 0.5])
    np.testing.assert_array_equal(counts, [2, 0, 0, 2, 1, 0, 0, 0])
    cm.accumulate(X, compact_nodes(nodes), offsets, bitsets, cost, node_counts=counts)
    np.testing.assert_allclose(cost, [1113 + 2.0, 1012.5 + 1.5])  # splits and trees only
    np.testing.assert_array_equal(counts, [2, 0, 0, 2, 1, 0, 0, 0])


# ---------------------------------------------------------------------------------------
# 9. Acquisition bitsets
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("bit", [0, 5, 63, 64, 100, 127])
@pytest.mark.parametrize("duplicates", [False, True])
def test_mark_acquired(seed, bit, duplicates):
    rng = np.random.default_rng(seed)
    n_rows, n_bits = 90, 128
    bits = rng.random((n_rows, n_bits)) < 0.5
    bitset = ref_pack_bits(bits)
    rows = rng.choice(n_rows, 50, replace=duplicates).astype(np.int32)
    exp_bits = bits.copy()
    expected = ref_mark_acquired(exp_bits, rows, bit)
    newly = mark_acquired(bitset, rows, bit)
    assert newly == expected
    np.testing.assert_array_equal(bitset, ref_pack_bits(exp_bits))
    assert mark_acquired(bitset, rows, bit) == 0            # idempotent
    np.testing.assert_array_equal(ref_unpack_bits(bitset, n_bits), exp_bits)


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("n_bits", [1, 64, 70, 128])
def test_bitset_to_bool(seed, n_bits):
    rng = np.random.default_rng(seed)
    bits = rng.random((30, n_bits)) < 0.5
    out = np.full((30, n_bits), 7, np.uint8)
    bitset_to_bool(ref_pack_bits(bits), n_bits, out)
    np.testing.assert_array_equal(out, bits.astype(np.uint8))


# ---------------------------------------------------------------------------------------
# 10. Loss gradients
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("weighted", [False, True])
def test_loss_gradients_match_numpy(weighted):
    from cbudget._core._loss import (
        logistic_gradients,
        softmax,
        softmax_gradients,
        squared_error_gradients,
    )
    rng = np.random.default_rng(3)
    n, n_classes = 1000, 4
    w = rng.uniform(0, 2, n) if weighted else None
    factor = w if weighted else np.ones(n)
    raw = rng.normal(scale=3, size=n)
    y = rng.integers(0, 2, n).astype(np.float64)
    for n_threads in (1, 2):
        g, h = np.empty(n), np.empty(n)
        squared_error_gradients(raw, y, w, g, h, n_threads)
        np.testing.assert_allclose(g, (raw - y) * factor, rtol=1e-14)
        np.testing.assert_allclose(h, factor, rtol=1e-14)
        logistic_gradients(raw, y, w, g, h, n_threads)
        p = 1 / (1 + np.exp(-raw))
        np.testing.assert_allclose(g, (p - y) * factor, rtol=1e-12, atol=1e-15)
        np.testing.assert_allclose(h, np.maximum(p * (1 - p), 1e-16) * factor, rtol=1e-12)

        raw_k = rng.normal(scale=3, size=(n, n_classes))
        raw_k[0] = 800.0      # overflow guard: softmax must subtract the row maximum
        yk = rng.integers(0, n_classes, n).astype(np.float64)
        gk = np.empty((n, n_classes), order="F")
        hk = np.empty((n, n_classes), order="F")
        softmax_gradients(raw_k, yk, w, gk, hk, n_threads)
        e = np.exp(raw_k - raw_k.max(axis=1, keepdims=True))
        pk = e / e.sum(axis=1, keepdims=True)
        onehot = np.eye(n_classes)[yk.astype(int)]
        np.testing.assert_allclose(gk, (pk - onehot) * factor[:, None], rtol=1e-12, atol=1e-15)
        np.testing.assert_allclose(hk, np.maximum(pk * (1 - pk), 1e-16) * factor[:, None],
                                   rtol=1e-12, atol=1e-300)
        # the probabilities alone (predictions), into either layout: those the gradients use
        for order in "CF":
            prob = np.full((n, n_classes), np.nan, order=order)
            softmax(raw_k, prob, n_threads)
            np.testing.assert_allclose(prob, pk, rtol=1e-12, atol=1e-300)
            np.testing.assert_array_equal(gk, (prob - onehot) * factor[:, None])


@pytest.mark.parametrize("default_left", [False, True])
def test_split_rows_parallel_equals_serial(default_left):
    rng = np.random.default_rng(11)
    n_samples, missing_bin = 300_000, 255
    binned = np.asfortranarray(rng.integers(0, 10, (n_samples, 2)).astype(np.uint8))
    binned[rng.random(n_samples) < 0.1, 1] = missing_bin
    rows = np.sort(rng.choice(n_samples, 200_001, replace=False)).astype(np.int32)
    results = []
    for n_threads in (1, 2, 3):
        r = rows.copy()
        n_left = split_rows(r, binned, 1, 4, default_left, missing_bin,
                            np.empty(n_samples, np.int32), n_threads)
        results.append((n_left, r))
    b = binned[rows, 1]
    goes_left = np.where(b == missing_bin, default_left, b <= 4)
    expected = np.concatenate([rows[goes_left], rows[~goes_left]])
    for n_left, r in results:
        assert n_left == goes_left.sum()
        np.testing.assert_array_equal(r, expected)


# ---------------------------------------------------------------------------------------
# 11. Allocation failures raise MemoryError (never a crash); errors leak nothing
# ---------------------------------------------------------------------------------------
linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"),
                                reason="needs RLIMIT_AS and /proc/self/status")

# Run in a child process (a crash must not take the test session down): build the
# inputs, cap the address space a little above what is mapped, then call the kernel,
# whose scratch buffers (hundreds of MB) cannot fit. Exit 0: MemoryError raised.
UNDER_MEMORY_LIMIT = """
import resource, sys
import numpy as np
{imports}

def mapped_bytes():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024

{inputs}
limit = mapped_bytes() + 64 * 2**20      # room for the interpreter, not the scratch
resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
try:
    {call}
except MemoryError as exc:
    print(exc)
    sys.exit(0)
sys.exit(3)                              # the limit did not bite
"""


def mapped_bytes():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no VmSize in /proc/self/status")


def run_under_memory_limit(imports, inputs, call):
    package_parent = os.path.dirname(os.path.dirname(cbudget.__file__))
    env = dict(os.environ, OMP_NUM_THREADS="1",
               PYTHONPATH=os.pathsep.join([package_parent, os.environ.get("PYTHONPATH", "")]))
    code = UNDER_MEMORY_LIMIT.format(imports=imports, inputs=inputs, call=call)
    # run from the tested package's parent: `python -c` puts the working directory first
    # on the path, where a source tree would shadow the installed package
    return subprocess.run([sys.executable, "-c", code], check=False, env=env, timeout=300,
                          capture_output=True, text=True, cwd=package_parent)


@linux_only
def test_build_histograms_out_of_memory_raises():
    # 40M rows (zero pages: not touched before the call): 2 x 320 MB of gathered
    # gradients
    result = run_under_memory_limit(
        "from cbudget._core._histogram import build_histograms\n"
        "from cbudget._core._types import HISTOGRAM_DTYPE",
        "binned = np.zeros((1, 1), dtype=np.uint8, order='F')\n"
        "rows = np.zeros(40_000_000, dtype=np.int32)\n"
        "g = np.zeros(1)\n"
        "out = np.zeros((1, 256), dtype=HISTOGRAM_DTYPE)",
        "build_histograms(binned, rows, g, g, np.ones(1, np.uint8), "
        "np.ones(1, np.uint32), 255, out, 1)")
    assert result.returncode == 0, (result.returncode, result.stderr[-2000:])


@linux_only
def test_find_best_split_out_of_memory_raises():
    # 5M features: 320 MB of per-feature scratch results
    result = run_under_memory_limit(
        "from cbudget._core._split import find_best_split\n"
        "from cbudget._core._types import HISTOGRAM_DTYPE",
        "n = 5_000_000\n"
        "hist = np.zeros((n, 2), dtype=HISTOGRAM_DTYPE)\n"
        "nvb = np.zeros(n, np.uint32)\n"
        "mask = np.ones(n, np.uint8)",
        "find_best_split(hist, nvb, 1, mask, 0.0, 1.0, 1, 1.0, 0.0, 1, None, 1)")
    assert result.returncode == 0, (result.returncode, result.stderr[-2000:])


@linux_only
def test_tree_grower_out_of_memory_raises():
    # 2**30 rows without features (no memory): 16 GB of partition and gradient buffers;
    # the MemoryError says which, and the half-built grower is freed without a crash
    result = run_under_memory_limit(
        "from cbudget._core._grower import TreeGrower",
        "binned = np.zeros((2**30, 0), np.uint8, order='F')",
        "TreeGrower(binned, np.zeros(0), np.zeros(1, np.int64), np.zeros(0, np.uint32), "
        "255, 0.1, 1.0, 0.0, 0.0, 1, -1, -1, True, 1)")
    assert result.returncode == 0, (result.returncode, result.stderr[-2000:])
    assert "cannot allocate the row partition buffer" in result.stdout


@linux_only
def test_build_histograms_frees_its_buffers_when_it_raises():
    rng = np.random.default_rng(0)
    binned, _, g, h, nvb = random_leaf(rng, 50, 3, 10)
    rows = np.zeros(4_000_000, dtype=np.int32)         # 64 MB of scratch per call
    acquired = np.zeros((49, 1), dtype=np.uint64, order="F")   # one row short
    counts = np.zeros(3, dtype=np.uint32)
    before = mapped_bytes()
    for _ in range(20):
        with pytest.raises(ValueError, match="one row per sample"):
            build_histograms(binned, rows, g, h, np.ones(3, np.uint8), nvb, MISSING,
                             sentinel_histograms(3), 1, acquired, acquired,
                             np.full(3, -1, np.int32), counts, counts)
    assert mapped_bytes() - before < 256 * 2**20      # a leak would map 1.28 GB


def test_acquisition_state_copy():
    rng = np.random.default_rng(4)
    n, groups = 300, np.array([0, -1, 1, 0, -1], np.int32)
    state = AcquisitionState(n, groups, 2)
    for feature in (0, 2, 4):
        state.acquire(rng.choice(n, 100, replace=False).astype(np.int32), feature)
    copy = AcquisitionState(n, groups, 2)
    copy.acquire(np.arange(n, dtype=np.int32), 1)     # overwritten
    copy.copy_from(state)
    for name in ("acquired_bits", "groups_touched_bits", "acquired_counts",
                 "touched_counts", "used_mask", "group_used_mask"):
        np.testing.assert_array_equal(getattr(copy, name), getattr(state, name))
    copy.acquire(np.arange(n, dtype=np.int32), 3)     # a copy, not a view
    assert state.acquired_counts[3] == 0 and not state.used_mask[3]


def test_build_histograms_rejects_incomplete_acquisition_arguments():
    rng = np.random.default_rng(1)
    binned, rows, g, h, nvb = random_leaf(rng, 50, 3, 10)
    acquired = np.zeros((50, 1), dtype=np.uint64, order="F")
    counts = np.zeros(3, dtype=np.uint32)
    args = (binned, rows, g, h, np.ones(3, np.uint8), nvb, MISSING, sentinel_histograms(3), 1)
    with pytest.raises(ValueError, match="feature_group"):
        build_histograms(*args, acquired, acquired, None, counts, counts)
    with pytest.raises(ValueError, match="do not match the number of features"):
        build_histograms(*args, acquired, acquired, np.full(3, -1, np.int32), counts,
                         np.zeros(2, dtype=np.uint32))


# ---------------------------------------------------------------------------------------
# 12. Input checks: a public kernel raises ValueError on arrays that do not fit together
#     (the kernels are compiled with boundscheck=False: a wrong length would read or write
#     out of bounds)
# ---------------------------------------------------------------------------------------
def small_problem(seed=0, n_samples=40, n_features=3):
    """Valid inputs of every kernel: bins, edges, gradients, rows, a forest and its
    packed layout, a cost model's arrays."""
    rng = np.random.default_rng(seed)
    X = random_raw_data(rng, n_samples, n_features, p_nan=0.1)
    edges_list = [find_bin_edges(X[:, f], 8) for f in range(n_features)]
    edges, indptr = concat_edges(edges_list)
    binned = np.empty(X.shape, np.uint8, order="F")
    map_to_bins(X, edges, indptr, MISSING, binned, 1)
    nvb = np.array([len(e) + 1 for e in edges_list], dtype=np.uint32)
    trees, nodes, offsets = random_forest(rng, edges_list, [3, 5])
    return dict(rng=rng, X=X, edges=edges, indptr=indptr, binned=binned, nvb=nvb,
                g=rng.normal(size=n_samples), h=rng.uniform(0.5, 1.0, n_samples),
                rows=np.arange(n_samples, dtype=np.int32), trees=trees, nodes=nodes,
                packed=compact_nodes(nodes), offsets=offsets,
                outputs=np.zeros(len(trees), np.int32), mask=np.ones(n_features, np.uint8))


def bad_tree(tree, field, node, value):
    tree = tree.copy()
    tree[field][node] = value
    return tree


def check_valid_and_bad_calls(valid_and_bad):
    """Each ``{name: (valid call, [bad calls])}``: the valid call runs, every bad call
    raises ValueError (never a crash)."""
    for name, (valid, bad_calls) in valid_and_bad.items():
        valid()
        for i, call in enumerate(bad_calls):
            with pytest.raises(ValueError):
                call()
                pytest.fail(f"{name}: bad call {i} did not raise")


def test_kernels_reject_inconsistent_inputs():
    """A valid call of each kernel, then the same call with one array of a wrong length,
    an index out of range or a malformed tree: ValueError each time."""
    p = small_problem()
    n, m = p["X"].shape
    X, binned, g, h, rows, nvb, mask = (p[k] for k in ("X", "binned", "g", "h", "rows",
                                                       "nvb", "mask"))
    edges, indptr, packed, offsets, outputs = (p[k] for k in ("edges", "indptr", "packed",
                                                             "offsets", "outputs"))
    tree = p["trees"][1]
    hist = sentinel_histograms(m)
    counts = np.zeros(m, np.uint32)
    bits = np.zeros((n, 1), np.uint64, order="F")
    no_group = np.full(m, -1, np.int32)

    def grower(**changes):
        args = dict(binned=binned, bin_edges=edges, edges_indptr=indptr, n_value_bins=nvb,
                    missing_bin=MISSING, learning_rate=0.1, reg_lambda=1.0,
                    min_child_weight=1e-3, gamma=0.0, min_data_in_leaf=1, num_leaves=8,
                    max_depth=-1, best_first=True, n_threads=1)
        args.update(changes)
        return TreeGrower(*args.values())

    def cost(**changes):
        args = dict(X=X, nodes=packed, offsets=offsets, fc=np.ones(m), fg=no_group,
                    gc=np.zeros(0), split_cost=0.0, tree_cost=0.0, out=np.zeros(n),
                    acq=np.zeros((n, 1), np.uint64), grp=np.zeros((n, 1), np.uint64),
                    per_thread=np.zeros((1, len(packed)), np.int64), n_threads=1)
        args.update(changes)
        predict_cost(*args.values())

    def greedy(indptr_=indptr, rows_=rows, **options):
        grow_greedy_tree(binned, (rows % 2).astype(np.int32), rows_.copy(), 2, np.ones(m),
                         no_group, np.zeros(0), edges, indptr_, mask, **options)

    valid_and_bad = {
        "map_to_bins": (
            lambda: map_to_bins(X, edges, indptr, MISSING, np.empty((n, m), np.uint8, "F"), 1),
            [lambda: map_to_bins(X, edges, indptr, MISSING, np.empty((n - 1, m), np.uint8,
                                                                      "F"), 1),
             lambda: map_to_bins(X, edges, indptr[:-1], MISSING,
                                 np.empty((n, m), np.uint8, "F"), 1),
             lambda: map_to_bins(X, edges[:-1], indptr, MISSING,
                                 np.empty((n, m), np.uint8, "F"), 1),
             # a feature with as many edges as missing_bin: its top bin would be missing
             lambda: map_to_bins(X, edges, indptr, int(np.diff(indptr).max()),
                                 np.empty((n, m), np.uint8, "F"), 1),
             lambda: map_to_bins(X, edges, indptr, MISSING, np.empty((n, m), np.uint8, "F"),
                                 0)]),
        "gradients": (
            lambda: logistic_gradients(g, np.ones(n), None, np.empty(n), np.empty(n), 1),
            [lambda: logistic_gradients(g, np.ones(n - 1), None, np.empty(n), np.empty(n), 1),
             lambda: logistic_gradients(g, np.ones(n), np.ones(2), np.empty(n), np.empty(n),
                                        1),
             lambda: logistic_gradients(g, np.ones(n), None, np.empty(n), np.empty(1), 1),
             lambda: softmax_gradients(np.zeros((n, 3)), np.ones(n), None,
                                       np.empty((n, 2), order="F"),
                                       np.empty((n, 3), order="F"), 1),
             lambda: softmax(np.zeros((n, 3)), np.empty((n, 2)), 1),
             lambda: softmax(np.zeros((n, 3)), np.empty((n - 1, 3)), 1),
             lambda: softmax(np.zeros((n, 3)), np.empty((n, 3)), 0)]),
        "build_histograms": (
            lambda: build_histograms(binned, rows, g, h, mask, nvb, MISSING, hist, 1),
            [lambda: build_histograms(binned, rows, g[:-1], h, mask, nvb, MISSING, hist, 1),
             lambda: build_histograms(binned, rows, g, h, mask[:-1], nvb, MISSING, hist, 1),
             lambda: build_histograms(binned, np.array([0, n], np.int32), g, h, mask, nvb,
                                      MISSING, hist, 1),
             lambda: build_histograms(binned, np.array([-1], np.int32), g, h, mask, nvb,
                                      MISSING, hist, 1),
             # bins up to 255 but histograms of 16 bins
             lambda: build_histograms(binned, rows, g, h, mask, np.minimum(nvb, 15), 15,
                                      sentinel_histograms(m, 16), 1),
             lambda: build_histograms(binned, rows, g, h, mask, nvb, MISSING, hist, 1,
                                      bits, bits, np.full(m, 64, np.int32), counts, counts),
             lambda: build_histograms(np.zeros((n, 70), np.uint8, "F"), rows, g, h,
                                      np.ones(70, np.uint8), np.ones(70, np.uint32), MISSING,
                                      sentinel_histograms(70), 1, bits, bits,
                                      np.full(70, -1, np.int32), np.zeros(70, np.uint32),
                                      np.zeros(70, np.uint32))]),
        "subtract_histograms": (
            lambda: subtract_histograms(hist, hist, mask, nvb, MISSING, hist.copy()),
            [lambda: subtract_histograms(hist, hist[:-1], mask, nvb, MISSING, hist.copy()),
             lambda: subtract_histograms(hist, hist, mask, nvb, MISSING, hist[:, :16].copy()),
             lambda: subtract_histograms(hist, hist, mask[:-1], nvb, MISSING, hist.copy()),
             lambda: subtract_histograms(hist, hist, mask, nvb[:-1], MISSING, hist.copy()),
             lambda: subtract_histograms(hist, hist, mask, nvb, N_BINS, hist.copy())]),
        "find_best_split": (
            lambda: find_best_split(hist, nvb, MISSING, mask, 0.0, 1.0, n, 1.0, 0.0, 1, None,
                                    1),
            [lambda: find_best_split(hist, nvb[:-1], MISSING, mask, 0.0, 1.0, n, 1.0, 0.0, 1,
                                     None, 1),
             lambda: find_best_split(hist, nvb, MISSING, mask[:-1], 0.0, 1.0, n, 1.0, 0.0, 1,
                                     None, 1),
             lambda: find_best_split(hist, nvb, MISSING, mask, 0.0, 1.0, n, 1.0, 0.0, 1,
                                     np.zeros(m - 1), 1),
             lambda: find_best_split(hist, nvb, N_BINS, mask, 0.0, 1.0, n, 1.0, 0.0, 1, None,
                                     1),
             lambda: find_best_split(hist[:, :4].copy(), nvb, 3, mask, 0.0, 1.0, n, 1.0, 0.0,
                                     1, None, 1),
             lambda: find_best_split(hist, nvb, MISSING, mask, 0.0, 1.0, n, 1.0, 0.0, 1, None,
                                     -1)]),
        "split_rows": (
            lambda: split_rows(rows.copy(), binned, 0, 2, False, MISSING, np.empty(n, np.int32)),
            [lambda: split_rows(rows.copy(), binned, m, 2, False, MISSING,
                                np.empty(n, np.int32)),
             lambda: split_rows(np.array([n], np.int32), binned, 0, 2, False, MISSING,
                                np.empty(n, np.int32))]),
        "mark_acquired": (
            lambda: mark_acquired(np.zeros((n, 1), np.uint64), rows, 63),
            [lambda: mark_acquired(np.zeros((n, 1), np.uint64), rows, 64),
             lambda: mark_acquired(np.zeros((n, 1), np.uint64), np.array([n], np.int32), 0)]),
        "bitset_to_bool": (
            lambda: bitset_to_bool(np.zeros((n, 1), np.uint64), 64, np.zeros((n, 64), np.uint8)),
            [lambda: bitset_to_bool(np.zeros((n, 1), np.uint64), 65,
                                    np.zeros((n, 65), np.uint8)),
             lambda: bitset_to_bool(np.zeros((n, 1), np.uint64), 64,
                                    np.zeros((n - 1, 64), np.uint8)),
             lambda: bitset_to_bool(np.zeros((n, 1), np.uint64), 64,
                                    np.zeros((n, 63), np.uint8))]),
        "AcquisitionState": (
            lambda: AcquisitionState(n, no_group, 0).acquire_along_paths(binned, tree.copy(),
                                                                         MISSING, rows),
            [lambda: AcquisitionState(n, no_group, 0).acquire_along_paths(
                binned, tree.copy(), MISSING, np.array([n], np.int32)),
             lambda: AcquisitionState(n, no_group, 0).acquire_along_paths(
                binned, tree[:0].copy(), MISSING, rows),
             lambda: AcquisitionState(n, no_group, 0).acquire_along_paths(
                binned, bad_tree(tree, "feature", 0, m), MISSING, rows),
             lambda: AcquisitionState(n, no_group, 0).acquire_along_paths(
                binned, bad_tree(tree, "left", 0, 0), MISSING, rows),      # a loop
             lambda: AcquisitionState(n, no_group, 0).acquire_along_paths(
                binned, bad_tree(tree, "right", 0, len(tree)), MISSING, rows),
             lambda: AcquisitionState(n, no_group, 0).load_bitsets(
                np.zeros((n, 2), np.uint64), np.zeros((n, 1), np.uint64), []),
             lambda: AcquisitionState(n, no_group, 0).load_bitsets(
                np.zeros((n, 1), np.uint64), np.zeros((n, 1), np.uint64), [m]),
             lambda: AcquisitionState(n, no_group, 0).copy_from(
                AcquisitionState(n - 1, no_group, 0)),
             lambda: AcquisitionState(n, no_group, 0).copy_from(
                AcquisitionState(n, np.zeros_like(no_group), 1)),
             lambda: AcquisitionState(n, no_group, -1),
             lambda: AcquisitionState(MAX_ROWS + 1, no_group, 0)]),
        "TreeGrower": (
            lambda: grower().grow(g, h, rows.copy(), mask),
            [lambda: grower(n_value_bins=nvb[:-1]),
             lambda: grower(edges_indptr=indptr[:-1]),
             lambda: grower(bin_edges=edges[:-1]),
             lambda: grower(n_value_bins=nvb + 1),             # a value bin without edge
             lambda: grower(missing_bin=256),
             # more rows than training takes (no features: no memory)
             lambda: grower(binned=np.zeros((MAX_ROWS + 1, 0), np.uint8, "F"),
                            bin_edges=np.zeros(0), edges_indptr=np.zeros(1, np.int64),
                            n_value_bins=np.zeros(0, np.uint32)),
             lambda: grower(n_threads=0),
             # missing_bin 7 but the data hold bin 255
             lambda: grower(n_value_bins=np.minimum(nvb, 7), missing_bin=7),
             lambda: grower().grow(g[:-1], h, rows.copy(), mask),
             lambda: grower().grow(g, h, rows.copy(), mask[:-1]),
             lambda: grower().grow(g, h, np.zeros(n + 1, np.int32), mask),   # > n rows
             lambda: grower().grow(g, h, np.array([0, n], np.int32), mask),
             lambda: grower().root_split_terms(g, h, np.array([-1], np.int32), mask),
             lambda: grower().add_leaf_values(rows, np.zeros((n, 1)), 0),  # nothing grown
             lambda: grower().set_cost_penalty(
                 AcquisitionState(n, no_group, 1), 1.0, np.ones(m), np.full(m, 1, np.int32),
                 np.ones(1), np.zeros(m), np.zeros(1), 0.0)]),
        "grow_greedy_tree": (
            lambda: greedy(),
            [lambda: greedy(indptr_=indptr[::-1].copy()),
             lambda: greedy(indptr_=indptr + 1),
             lambda: greedy(n_stumps=(3, 2)),
             lambda: greedy(stump_node_sizes=(10,)),
             lambda: greedy(rows_=np.array([n], np.int32))]),
        "predict_raw": (
            lambda: predict_raw(X, packed, offsets, outputs, np.zeros((n, 1)), 1),
            [lambda: predict_raw(X, packed, offsets, outputs, np.zeros((n - 1, 1)), 1),
             lambda: predict_raw(X, packed, offsets, outputs[:-1], np.zeros((n, 1)), 1),
             lambda: predict_raw(X, packed, offsets, outputs + 1, np.zeros((n, 1)), 1),
             lambda: predict_raw(X, packed, offsets[:-1], outputs[:-1], np.zeros((n, 1)), 1),
             lambda: predict_raw(X, packed, offsets[::-1].copy(), outputs, np.zeros((n, 1)),
                                 1),
             lambda: predict_raw(X, packed[:-1], offsets, outputs, np.zeros((n, 1)), 1)]),
        "predict_leaf": (
            lambda: predict_leaf(X, packed, offsets, np.zeros((n, 2), np.int32), 1),
            [lambda: predict_leaf(X, packed, offsets, np.zeros((n, 1), np.int32), 1),
             lambda: predict_leaf(X, packed, offsets, np.zeros((n - 1, 2), np.int32), 1),
             lambda: predict_leaf(X, packed, np.array([0, 0, len(packed)]),
                                  np.zeros((n, 2), np.int32), 1)]),
        "predict_node_rows": (
            lambda: predict_node_rows(X, packed, offsets, np.ones((len(packed), 2)),
                                      np.zeros((n, 2)), 1),
            [lambda: predict_node_rows(X, packed, offsets + 1, np.ones((len(packed), 2)),
                                       np.zeros((n, 2)), 1),
             lambda: predict_node_rows(X, packed, offsets, np.ones((len(packed) - 1, 2)),
                                       np.zeros((n, 2)), 1)]),
        "predict_binned_add": (
            lambda: predict_binned_add(binned, tree, MISSING, np.zeros((n, 2)), 1, 1),
            [lambda: predict_binned_add(binned, tree, MISSING, np.zeros((n, 2)), 2, 1),
             lambda: predict_binned_add(binned, tree, MISSING, np.zeros((n - 1, 2)), 1, 1),
             lambda: predict_binned_add(binned, tree[:0].copy(), MISSING, np.zeros((n, 2)), 1,
                                        1),
             lambda: predict_binned_add(binned, bad_tree(tree, "feature", 0, m), MISSING,
                                        np.zeros((n, 2)), 1, 1),
             lambda: predict_binned_add(binned, bad_tree(tree, "left", 0, 0), MISSING,
                                        np.zeros((n, 2)), 1, 1)]),
        "predict_cost": (
            cost,
            [lambda: cost(fc=np.ones(m - 1), fg=no_group[:-1]),
             lambda: cost(fg=np.full(m, 0, np.int32)),            # no group 0
             lambda: cost(out=np.zeros(n - 1)),
             lambda: cost(acq=np.zeros((n - 1, 1), np.uint64)),
             lambda: cost(acq=np.zeros((n, 0), np.uint64)),
             lambda: cost(n_threads=2),                           # one row of counts
             lambda: cost(per_thread=np.zeros((1, len(packed) - 1), np.int64))]),
        "sum_node_rows": (
            lambda: sum_node_rows(np.zeros((n, 2), np.int32), offsets,
                                  np.ones((len(packed), 2)), np.zeros((n, 2)), 1),
            [lambda: sum_node_rows(np.full((n, 2), offsets[1], np.int32), offsets,
                                   np.ones((len(packed), 2)), np.zeros((n, 2)), 1),
             lambda: sum_node_rows(np.full((n, 2), -1, np.int32), offsets,
                                   np.ones((len(packed), 2)), np.zeros((n, 2)), 1),
             lambda: sum_node_rows(np.zeros((n, 2), np.int32), offsets,
                                   np.ones((len(packed) + 1, 2)), np.zeros((n, 2)), 1)]),
        "add_leaf_values": (
            lambda: add_leaf_values(np.zeros((n, 2), np.int32), packed, offsets, outputs,
                                    np.zeros((n, 1)), 1),
            [lambda: add_leaf_values(np.full((n, 2), 99, np.int32), packed, offsets, outputs,
                                     np.zeros((n, 1)), 1),
             lambda: add_leaf_values(np.zeros((n, 2), np.int32), packed, offsets, outputs + 1,
                                     np.zeros((n, 1)), 1)]),
    }
    check_valid_and_bad_calls(valid_and_bad)


def test_linear_kernels_reject_inconsistent_inputs():
    rng = np.random.default_rng(3)
    n, d = 30, 4
    X = rng.normal(size=(n, d))
    F = rng.normal(size=(n, 3))
    thresholds = np.zeros(3)
    upper, lower = np.array([1, -1, -1], np.int32), np.array([2, -1, -1], np.int32)
    indptr = np.array([0, 2, 3, 4], np.int64)
    index = np.array([0, 3, 1, 2], np.int32)
    columns = np.array([0, 2], np.int64)
    v = np.ones(n)

    def hard(**changes):
        args = dict(X=X, indptr=indptr, index=index, value=np.ones(len(index)),
                    impute=np.zeros(d), bias=np.zeros(3), thresholds=thresholds, upper=upper,
                    lower=lower, out=np.empty(n), out_exit=np.empty(n, np.int32), n_threads=1)
        args.update(changes)
        predict_hard(*args.values())

    def objective(**changes):
        args = dict(f=v, y=v, sw=v, own_weight=v, slope=v, lu=v, lv=v, cu=v, cv=v,
                    threshold=0.0, sharpness=1.0, splits=True, loss=0, grad=np.empty(n),
                    n_threads=1)
        args.update(changes)
        node_objective(*args.values())

    valid_and_bad = {
        "pointwise_loss": (
            lambda: pointwise_loss(F, v, 0, np.empty((n, 3)), 1),
            [lambda: pointwise_loss(F, v[:-1], 0, np.empty((n, 3)), 1),
             lambda: pointwise_loss(F, v, 0, np.empty((n, 2)), 1)]),
        "soft_route": (
            lambda: soft_route(F, thresholds, upper, lower, np.empty((n, 3)), np.empty((n, 3)),
                               1.0, 1),
            [lambda: soft_route(F, thresholds, upper[:2], lower, np.empty((n, 3)),
                                np.empty((n, 3)), 1.0, 1),
             lambda: soft_route(F, thresholds, np.array([0, -1, -1], np.int32), lower,
                                np.empty((n, 3)), np.empty((n, 3)), 1.0, 1),     # a loop
             lambda: soft_route(F, thresholds, np.array([3, -1, -1], np.int32), lower,
                                np.empty((n, 3)), np.empty((n, 3)), 1.0, 1),
             lambda: soft_route(F, thresholds, upper, lower, np.empty((n, 2)),
                                np.empty((n, 3)), 1.0, 1),
             lambda: soft_route(F[:, :0].copy(), thresholds[:0], upper[:0], lower[:0],
                                np.empty((n, 0)), np.empty((n, 0)), 1.0, 1),
             lambda: soft_route(F, thresholds, upper, lower, np.empty((n, 3)),
                                np.empty((n, 3)), 0.0, 1),
             lambda: soft_route(F, thresholds, upper, lower, np.empty((n, 3)),
                                np.empty((n, 3)), np.inf, 1)]),
        "node_objective": (
            objective,
            [lambda: objective(sharpness=-1.0),
             lambda: objective(sharpness=np.nan),
             lambda: objective(y=v[:-1]),
             lambda: objective(grad=np.empty(n - 1)),
             lambda: objective(slope=v[:-1])]),
        "predict_hard": (
            hard,
            [lambda: hard(index=np.array([0, 3, 1, d], np.int32)),
             lambda: hard(indptr=np.array([0, 2, 3, 5], np.int64)),
             lambda: hard(indptr=np.array([0, 3, 2, 4], np.int64)),
             lambda: hard(indptr=indptr[:-1]),
             lambda: hard(impute=np.zeros(d - 1)),
             lambda: hard(upper=np.array([1, 0, -1], np.int32)),       # back to the root
             lambda: hard(out=np.empty(n - 1))]),
        "dense_scores": (
            lambda: dense_scores(X, columns, np.ones(2), 0.0, np.empty(n), 1),
            [lambda: dense_scores(X, np.array([0, d], np.int64), np.ones(2), 0.0,
                                  np.empty(n), 1),
             lambda: dense_scores(X, np.array([-1, 0], np.int64), np.ones(2), 0.0,
                                  np.empty(n), 1),
             lambda: dense_scores(X, columns, np.ones(1), 0.0, np.empty(n), 1),
             lambda: dense_scores(X, columns, np.ones(2), 0.0, np.empty(n - 1), 1)]),
        "dense_gradient": (
            lambda: dense_gradient(X, columns, v, np.empty(2), 1),
            [lambda: dense_gradient(X, np.array([0, d], np.int64), v, np.empty(2), 1),
             lambda: dense_gradient(X, columns, v[:-1], np.empty(2), 1),
             lambda: dense_gradient(X, columns, v, np.empty(1), 1)]),
    }
    check_valid_and_bad_calls(valid_and_bad)
