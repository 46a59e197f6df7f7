"""More than 256 bins per feature (issue 44): uint16 binned data through every kernel
that reads bins, against the NumPy references of test_kernels, and end to end with
``max_bin > 255``."""
import numpy as np
import pytest
from sklearn.metrics import roc_auc_score
from test_kernels import (
    concat_edges,
    random_raw_data,
    random_tree,
    ref_histograms,
    ref_leaf,
    ref_split_rows,
)

import cbudget
from cbudget._core._acquisition import AcquisitionState
from cbudget._core._binning import map_to_bins
from cbudget._core._grower import TreeGrower
from cbudget._core._histogram import SparseBins, build_histograms
from cbudget._core._partition import split_rows
from cbudget._core._predict import predict_binned_add
from cbudget._core._types import HISTOGRAM_DTYPE
from cbudget.dataset import Dataset, find_bin_edges

MISSING = 700           # a missing bin beyond uint8
N_BINS = MISSING + 1


def wide_binned(rng, n_samples, n_features, p_missing=0.1):
    """Fortran-ordered uint16 bins in [0, MISSING) or MISSING, bins above 255 common."""
    binned = rng.integers(0, MISSING, (n_samples, n_features))
    binned[rng.random(binned.shape) < p_missing] = MISSING
    return np.asfortranarray(binned.astype(np.uint16))


def hist_fields(out):
    return out["sum_gradients"], out["sum_hessians"], out["count"]


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("n_threads", [1, 2])
def test_histograms_on_wide_bins(seed, n_threads):
    """Column-wise (full blocks of four and a partial block) and row-wise histograms of
    uint16 bins equal the reference; the acquisition counts come along."""
    rng = np.random.default_rng(seed)
    n_samples, n_features = 3000, 6
    binned = wide_binned(rng, n_samples, n_features)
    binned[rng.random(n_samples) < 0.8, 4] = 300        # mostly one bin: row-wise
    binned[rng.random(n_samples) < 0.8, 5] = 3
    rows = np.sort(rng.choice(n_samples, 1700, replace=False)).astype(np.int32)
    g, h = rng.normal(size=n_samples), rng.random(n_samples)
    nvb = np.full(n_features, MISSING, np.uint32)
    mask = np.ones(n_features, np.uint8)
    sg, sh, cnt = ref_histograms(binned, rows, g, h, N_BINS)
    acquired = np.asfortranarray(rng.integers(0, 2 ** 63, (n_samples, 1), dtype=np.uint64))
    touched = np.asfortranarray(np.zeros((n_samples, 1), np.uint64))
    groups = np.full(n_features, -1, np.int32)
    for sparse in (None, SparseBins(binned, nvb, MISSING, min_share=0.5,
                                    min_elided_columns=1.0)):
        out = np.zeros((n_features, N_BINS), HISTOGRAM_DTYPE)
        unacquired = np.zeros(n_features, np.uint32)
        untouched = np.zeros(n_features, np.uint32)
        build_histograms(binned, rows, g, h, mask, nvb, MISSING, out, n_threads,
                         acquired, touched, groups, unacquired, untouched, sparse=sparse)
        got_g, got_h, got_c = hist_fields(out)
        np.testing.assert_array_equal(got_c, cnt)
        np.testing.assert_allclose(got_g, sg, rtol=1e-10, atol=1e-10)
        np.testing.assert_allclose(got_h, sh, rtol=1e-10, atol=1e-10)
        bits = (acquired[rows, 0][:, None] >> np.arange(n_features, dtype=np.uint64)) & 1
        np.testing.assert_array_equal(unacquired, (bits == 0).sum(axis=0))
    assert sparse.features.tolist() == [4, 5]
    assert sparse.most_frequent_bin[4] == 300


def test_sparse_bins_refuse_a_missing_bin_beyond_the_dtype():
    binned = np.asfortranarray(np.zeros((5, 2), np.uint8))
    with pytest.raises(ValueError, match=r"missing_bin must be in \[0, 255\]"):
        SparseBins(binned, np.ones(2, np.uint32), 300)


@pytest.mark.parametrize("default_left", [False, True])
def test_split_rows_on_wide_bins(default_left):
    rng = np.random.default_rng(3)
    binned = wide_binned(rng, 2000, 2)
    rows = np.sort(rng.choice(2000, 1500, replace=False)).astype(np.int32)
    for threshold in (100, 299, 650):
        got = rows.copy()
        n_left = split_rows(got, binned, 1, threshold, default_left, MISSING,
                            np.empty_like(rows))
        expected, expected_left = ref_split_rows(rows, binned, 1, threshold, default_left,
                                                 MISSING)
        assert n_left == expected_left
        np.testing.assert_array_equal(got, expected)
    with pytest.raises(ValueError, match=r"must be in \[0, 255\] for uint8"):
        split_rows(rows.copy(), np.asfortranarray(binned.astype(np.uint8)), 0, 3, False,
                   MISSING, np.empty_like(rows))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_map_to_bins_and_binned_prediction_on_wide_bins(dtype):
    """Binning into uint16 matches the reference; a tree traversed on those bins lands
    where raw traversal does (thresholds past bin 255 included)."""
    rng = np.random.default_rng(5)
    n_samples, n_features, max_bin = 3000, 3, 1000
    X = rng.normal(size=(n_samples, n_features)).astype(dtype)
    X[rng.random(X.shape) < 0.1] = np.nan
    edges_list = [find_bin_edges(X[:, f], max_bin) for f in range(n_features)]
    assert min(len(e) for e in edges_list) > 300
    edges, indptr = concat_edges(edges_list)
    binned = np.empty(X.shape, np.uint16, order="F")
    map_to_bins(X, edges, indptr, max_bin, binned, 2)
    np.testing.assert_array_equal(binned, ref_wide_bins(X, edges_list, max_bin))
    with pytest.raises(ValueError, match=r"missing_bin must be in \[0, 255\]"):
        map_to_bins(X, edges, indptr, max_bin, np.empty(X.shape, np.uint8, order="F"), 1)
    tree = random_tree(rng, edges_list, 40, max_depth=10)
    assert tree["bin_threshold"].max() > 255
    expected = tree["value"][[ref_leaf(tree, X[i]) for i in range(n_samples)]]
    for n_threads in (1, 2):
        raw = np.zeros((n_samples, 1))
        predict_binned_add(binned, tree, max_bin, raw, 0, n_threads)
        np.testing.assert_array_equal(raw[:, 0], expected)


def ref_wide_bins(X, edges_list, missing_bin):
    """test_kernels.ref_bins into uint16."""
    out = np.empty(X.shape, dtype=np.uint16)
    for f, edges in enumerate(edges_list):
        out[:, f] = np.searchsorted(edges, X[:, f].astype(np.float64), side="left")
        out[np.isnan(X[:, f]), f] = missing_bin
    return out


def test_grower_on_wide_bins_partitions_as_it_routes():
    """A tree grown on uint16 bins: its leaf values added through the partition equal
    binned traversal and raw traversal through its thresholds; acquisitions along its
    paths count every row once per feature."""
    rng = np.random.default_rng(7)
    n_samples = 4000
    X = random_raw_data(rng, n_samples, 4, p_nan=0.05)
    y = np.sin(3 * np.nan_to_num(X[:, 0])) + (np.nan_to_num(X[:, 1]) > 0.3)
    data = Dataset(X, y, max_bin=1000)
    assert data.binned.dtype == np.uint16
    edges, indptr = data.flat_bin_edges()
    grower = TreeGrower(data.binned, edges, indptr, data.n_value_bins, data.missing_bin,
                        1.0, 0.0, 0.0, 0.0, 5, 63, -1, True, 2)
    g = -(y - y.mean())
    rows = np.arange(n_samples, dtype=np.int32)
    tree = grower.grow(g, np.ones(n_samples), rows, np.ones(4, np.uint8))
    splits = tree["left"] != -1
    assert splits.sum() == 62 and tree["bin_threshold"][splits].max() > 255
    by_partition = np.zeros((n_samples, 1))
    grower.add_leaf_values(rows, by_partition, 0)
    by_bins = np.zeros((n_samples, 1))
    predict_binned_add(data.binned, tree, data.missing_bin, by_bins, 0, 2)
    by_raw = tree["value"][[ref_leaf(tree, X[i]) for i in range(n_samples)]]
    np.testing.assert_array_equal(by_partition, by_bins)
    np.testing.assert_array_equal(by_bins[:, 0], by_raw)
    state = AcquisitionState(n_samples, np.full(4, -1, np.int32), 0)
    state.acquire_along_paths(data.binned, tree, data.missing_bin, rows)
    expected = np.zeros(4, np.int64)
    for i in range(n_samples):
        on_path, node = set(), 0
        while tree["left"][node] != -1:
            on_path.add(int(tree["feature"][node]))
            node = ref_child(tree, node, X[i])
        expected[list(on_path)] += 1
    np.testing.assert_array_equal(state.acquired_counts, expected)


def ref_child(tree, node, x):
    """The child of a numeric split ``node`` that raw row ``x`` goes to."""
    value = x[tree["feature"][node]]
    left = bool(tree["default_left"][node]) if np.isnan(value) else \
        value <= tree["threshold"][node]
    return int(tree["left"][node] if left else tree["right"][node])


def few_values_data(n=3000, seed=11):
    rng = np.random.default_rng(seed)
    X = rng.integers(0, 200, (n, 5)).astype(np.float64)
    X[rng.random(X.shape) < 0.05] = np.nan
    y = (np.nan_to_num(X[:, 0]) / 200 + np.nan_to_num(X[:, 1]) % 7 / 7
         + rng.normal(scale=0.3, size=n) > 1.0).astype(np.float64)
    return X, y


@pytest.mark.parametrize("algorithm", ["gbdt", "cegb", "greedy_miser"])
def test_max_bin_1000_trains_the_max_bin_255_model(algorithm):
    """With at most 255 distinct values per column the bins (and so the trees) do not
    depend on max_bin: uint16 bins train the model uint8 bins do, for any n_jobs."""
    X, y = few_values_data()
    params = {"objective": "binary:logistic", "algorithm": algorithm, "num_leaves": 15,
              "learning_rate": 0.2}
    if algorithm != "gbdt":
        params["cost_tradeoff"] = 0.01
    predictions = {}
    for max_bin in (255, 1000):
        for n_jobs in (1, 2):
            data = Dataset(X, y, max_bin=max_bin, feature_costs=np.arange(1.0, 6.0))
            valid = Dataset(X[:500], y[:500], reference=data)
            booster = cbudget.train({**params, "n_jobs": n_jobs}, data, 12,
                                    evals=[(valid, "valid")], verbose_eval=False)
            predictions[max_bin, n_jobs] = booster.predict(X)
    assert data.binned.dtype == np.uint16 and valid.binned.dtype == np.uint16
    for key in predictions:
        np.testing.assert_array_equal(predictions[key], predictions[255, 1])


def test_max_bin_beyond_255_splits_finer(tmp_path):
    """A label that alternates over 400 intervals of one feature: 255 bins cannot
    resolve it, 4000 can (splits above bin 255); the model saved and loaded predicts
    the same."""
    rng = np.random.default_rng(2)
    X = rng.random((6000, 1))
    y = (np.floor(X[:, 0] * 400) % 2).astype(np.float64)
    params = {"objective": "binary:logistic", "num_leaves": 63, "learning_rate": 0.5,
              "min_data_in_leaf": 3}
    narrow = cbudget.train(params, Dataset(X, y, max_bin=255), 30)
    wide = cbudget.train(params, Dataset(X, y, max_bin=4000), 30)
    assert max(max(tree["split_bins"]) for tree in wide.to_dict()["trees"]) > 255
    assert roc_auc_score(y, wide.predict(X)) > 0.99 > 0.8 > roc_auc_score(y, narrow.predict(X))
    path = tmp_path / "wide.json"
    wide.save_model(path)
    loaded = cbudget.load_model(path)
    assert loaded.to_dict() == wide.to_dict()
    np.testing.assert_array_equal(loaded.predict(X), wide.predict(X))


def test_budget_rf_refuses_wide_bins():
    X, y = few_values_data(300)
    with pytest.raises(ValueError, match=r"budget_rf .* max_bin <= 255"):
        cbudget.train({"objective": "binary:logistic", "algorithm": "budget_rf"},
                      Dataset(X, y, max_bin=300), 2)
