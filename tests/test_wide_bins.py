"""More than 256 bins per feature (issue 44): uint16 binned data through every kernel
that reads bins, against the NumPy references of test_kernels, and end to end with
``max_bin > 255``."""
import pickle

import numpy as np
import pytest
from sklearn.metrics import roc_auc_score
from test_categorical_engine import CAT_DEFAULTS, ref_categorical_split
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
from cbudget._core._grower import TreeGrower, bin_words
from cbudget._core._histogram import SparseBins, build_histograms
from cbudget._core._partition import split_rows
from cbudget._core._predict import predict_binned_add
from cbudget._core._split import find_best_split
from cbudget._core._types import HISTOGRAM_DTYPE
from cbudget.category_bins import fit_codes
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


# ---------------------------------------------------------------------------------------
# categorical features with more than 256 bins
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("max_bin", [16, 255])
def test_fit_codes_bins_categories_as_lightgbm(max_bin):
    """Beyond max_bin - 1 codes, more until 99% of the rows are covered, stopping at a
    code with fewer than 3 rows: LightGBM's bin count (its NaN/"other" bin is our
    "other")."""
    lgb = pytest.importorskip("lightgbm")
    rng = np.random.default_rng(1)
    codes = np.minimum(rng.zipf(1.4, 30000), 3000).astype(np.float64) - 1
    codes[rng.random(codes.size) < 0.05] = np.nan
    reference = lgb.Dataset(codes[:, None], label=np.zeros(codes.size),
                            categorical_feature=[0],
                            params={"max_bin": max_bin, "verbose": -1})
    reference.construct()
    kept = fit_codes(codes, max_bin)
    assert kept.size + 1 == reference.feature_num_bin(0) > 256
    values, counts = np.unique(codes[~np.isnan(codes)], return_counts=True)
    assert counts[np.isin(values, kept)].min() >= np.sort(counts)[::-1][kept.size]
    data = Dataset(codes[:, None], np.zeros(codes.size), max_bin=max_bin,
                   categorical_feature=[0])
    assert data.missing_bin == kept.size + 1 and data.binned.dtype == np.uint16
    np.testing.assert_array_equal(data.categorical_bin_codes[0], kept)


def test_fit_codes_keeps_few_levels_as_before():
    """A column with at most max_bin - 1 levels: every level its bin, as any max_bin."""
    codes = np.repeat(np.arange(200.0), np.arange(1, 201))
    np.testing.assert_array_equal(fit_codes(codes, 255), np.arange(200))
    data = Dataset(codes[:, None], np.zeros(codes.size), categorical_feature=[0])
    assert data.binned.dtype == np.uint8 and data.missing_bin == 255


@pytest.mark.parametrize("seed", [0, 1, "ties"])
@pytest.mark.parametrize("n_levels", [300, 1000])
@pytest.mark.parametrize("params", [CAT_DEFAULTS,
                                    dict(CAT_DEFAULTS, max_cat_threshold=400, cat_l2=0.0,
                                         cat_smooth=1.0, min_data_per_group=5)])
def test_categorical_split_kernel_on_wide_bins(seed, n_levels, params):
    """The split scan over more than 256 bins equals the reference (left sets beyond
    bin 255, more than 256 bins on the left with a large max_cat_threshold; the levels
    selected from either end of the order, not all sorted, with many equal keys in
    "ties")."""
    rng = np.random.default_rng(7 if seed == "ties" else seed)
    n, missing = 20000, 1100
    codes = rng.integers(0, n_levels, n)
    binned = np.where(rng.random(n) < 0.1, missing, codes).astype(np.uint16)
    if seed == "ties":      # a few effects, no noise: levels of one effect and count tie
        effect = rng.integers(-1, 2, n_levels + 1).astype(np.float64)
        g, h = effect[codes] - 0.7 * (binned == missing), np.ones(n)
    else:
        effect = rng.normal(size=n_levels + 1)
        g = effect[codes] + rng.normal(size=n) - 0.7 * (binned == missing)
        h = rng.uniform(0.2, 1.0, n)
    hist = np.zeros((1, missing + 1), HISTOGRAM_DTYPE)
    hist["sum_gradients"][0] = np.bincount(binned, weights=g, minlength=missing + 1)
    hist["sum_hessians"][0] = np.bincount(binned, weights=h, minlength=missing + 1)
    hist["count"][0] = np.bincount(binned, minlength=missing + 1)
    lam, mcw, mdl, penalty = 1.0, 1e-3, 20, 0.5
    got = find_best_split(hist, np.array([n_levels + 1], np.uint32), missing,
                          np.ones(1, np.uint8), float(g.sum()), float(h.sum()), n, lam, mcw,
                          mdl, np.array([penalty]), 1, np.ones(1, np.uint8), **params)
    sums = [list(hist[k][0, :n_levels + 1]) + [hist[k][0, missing]]
            for k in ("sum_gradients", "sum_hessians", "count")]
    exp_gain, exp_left, exp_default = ref_categorical_split(
        *sums, n_levels, float(g.sum()), float(h.sum()), n, lam, mcw, mdl, penalty, params)
    assert got.feature == 0 and got.categorical
    assert set(got.left_bins.tolist()) == exp_left and max(exp_left) > 255
    assert bool(got.default_left) == exp_default
    assert got.gain == pytest.approx(exp_gain, rel=1e-9)


def rare_levels_problem(n=30000, n_levels=1000, seed=0):
    """One categorical column of ``n_levels`` levels, most of them rare (beyond the 254
    most frequent), whose label effect is the level's parity, and a noise column."""
    rng = np.random.default_rng(seed)
    weights = 1.0 / np.arange(1, n_levels + 1) ** 0.3
    codes = rng.choice(n_levels, n, p=weights / weights.sum()).astype(np.float64)
    codes[rng.random(n) < 0.03] = np.nan
    X = np.column_stack([codes, rng.normal(size=n)])
    signal = np.where(np.isnan(codes), 0.0, 2.0 * (np.nan_to_num(codes) % 2) - 1.0)
    y = (signal + rng.normal(scale=0.8, size=n) > 0).astype(np.float64)
    return X, y


def capped(X, n_codes=254):
    """The column as uint8 bins saw it: codes beyond the ``n_codes`` most frequent in
    one level."""
    values, counts = np.unique(X[~np.isnan(X[:, 0]), 0], return_counts=True)
    top = values[np.lexsort((values, -counts))[:n_codes]]
    out = X.copy()
    rare = ~np.isnan(X[:, 0]) & ~np.isin(X[:, 0], top)
    out[rare, 0] = values.max() + 1
    return out


@pytest.mark.parametrize("algorithm", ["gbdt", "cegb", "greedy_miser"])
def test_rare_levels_learned_and_routed_as_the_bins_say(algorithm, tmp_path):
    """~1,000 levels, the signal in every level: the wide bins beat the column capped
    at 254 levels; every tree routes the training rows through its bin bitsets as the
    model routes their codes; n_jobs 1 and 2 train one model; save/load keeps it."""
    X, y = rare_levels_problem()
    train, test = slice(0, 24000), slice(24000, None)
    params = {"objective": "binary:logistic", "algorithm": algorithm, "num_leaves": 15,
              "learning_rate": 0.3, "max_cat_threshold": 600, "cat_smooth": 1.0,
              "min_data_per_group": 5}
    if algorithm != "gbdt":
        params["cost_tradeoff"] = 1e-3
    scores, models = {}, []
    for name, data in (("wide", X), ("capped", capped(X))):
        dtrain = Dataset(data[train], y[train], categorical_feature=[0],
                         feature_costs=[1.0, 1.0])
        for n_jobs in (1, 2):
            model = cbudget.train({**params, "n_jobs": n_jobs}, dtrain, 10)
            models.append(model)
            scores[name] = roc_auc_score(y[test], model.predict(data[test]))
        if name == "wide":
            assert dtrain.binned.dtype == np.uint16 and dtrain.missing_bin > 900
            wide, wide_data = model, dtrain
    assert models[0].to_dict()["trees"] == models[1].to_dict()["trees"]
    assert scores["wide"] > scores["capped"] + 0.1
    # the binned walk through each tree's bin bitsets lands where the codes do
    margin = np.full((24000, 1), wide.to_dict()["base_score"][0]
                     if isinstance(wide.to_dict()["base_score"], list)
                     else wide.to_dict()["base_score"])
    wide_bins_seen = False
    for tree in wide.trees:
        predict_binned_add(wide_data.binned, tree, wide_data.missing_bin, margin, 0, 2,
                           cat_bin_words=bin_words(tree))
        for at in tree["cat_bins_at"][tree["categorical"] == 1]:
            words = bin_words(tree)
            wide_bins_seen |= bool(words[at] > 8)        # a bin beyond 255 goes left
    assert wide_bins_seen
    np.testing.assert_allclose(margin[:, 0], wide.predict(X[train], output_margin=True),
                               rtol=1e-12, atol=1e-12)
    path = tmp_path / "wide.json"
    wide.save_model(path)
    np.testing.assert_array_equal(cbudget.load_model(path).predict(X), wide.predict(X))


def test_grown_tree_keeps_its_bin_bitsets_through_copies_and_pickles():
    """What a Dask worker receives of a grown tree: its bin bitsets with it."""
    X, y = rare_levels_problem(n=4000, n_levels=600)
    data = Dataset(X, y, categorical_feature=[0])
    tree = cbudget.train({"objective": "binary:logistic", "num_leaves": 4}, data, 1).trees[0]
    words = bin_words(tree)
    assert tree["categorical"].any() and words.size > 9
    for other in (tree.copy(), pickle.loads(pickle.dumps(tree))):
        np.testing.assert_array_equal(bin_words(other), words)
        np.testing.assert_array_equal(np.asarray(other), np.asarray(tree))
    assert bin_words(np.asarray(tree)).size == 0


@pytest.mark.slow
@pytest.mark.parametrize("algorithm", ["gbdt", "cegb"])
def test_dask_training_with_a_wide_categorical_column(dask_client, algorithm):
    """A 600-level string column (uint16 bins, fitted on the driver, data binned on the
    workers): one partition grows the single-machine trees bit for bit."""
    pd = pytest.importorskip("pandas")
    dd = pytest.importorskip("dask.dataframe")
    from cbudget.dask import DaskDataset
    from cbudget.dask import train as dask_train
    X, y = rare_levels_problem(n=4000, n_levels=600)
    frame = pd.DataFrame({"c": [None if np.isnan(c) else f"level{int(c)}" for c in X[:, 0]],
                          "x": X[:, 1]})
    params = {"objective": "binary:logistic", "algorithm": algorithm, "num_leaves": 8,
              "n_jobs": 1, "cat_smooth": 1.0, "min_data_per_group": 5}
    if algorithm != "gbdt":
        params["cost_tradeoff"] = 1e-3
    local_data = Dataset(frame, y, feature_costs=[1.0, 1.0])
    assert local_data.binned.dtype == np.uint16
    local = cbudget.train(params, local_data, 4)
    distributed = dask_train(dask_client, params, DaskDataset(
        dask_client, dd.from_pandas(frame, npartitions=1, sort=False),
        dd.from_pandas(pd.Series(y), npartitions=1, sort=False),
        feature_costs=[1.0, 1.0]), 4)
    assert any(bin_words(tree).size > 9 for tree in local.trees)
    for ours, theirs in zip(distributed.trees, local.trees):
        assert np.asarray(ours).tobytes() == np.asarray(theirs).tobytes()
    np.testing.assert_array_equal(distributed.cat_words, local.cat_words)


def test_xgboost_export_of_splits_over_many_levels(tmp_path):
    """A split whose left set holds levels beyond the 256th bin, exported to XGBoost
    JSON: XGBoost's predictions (enable_categorical) equal the model's."""
    xgb = pytest.importorskip("xgboost")
    X, y = rare_levels_problem(n=6000, n_levels=600)
    model = cbudget.train({"objective": "binary:logistic", "num_leaves": 8,
                           "max_cat_threshold": 300, "cat_smooth": 1.0,
                           "min_data_per_group": 5},
                          Dataset(X, y, categorical_feature=[0]), 5)
    assert any(bin_words(tree)[at] > 8 for tree in model.trees
               for at in tree["cat_bins_at"][tree["categorical"] == 1])
    path = tmp_path / "model.json"
    model.save_model(path, format="xgboost")
    booster = xgb.Booster(model_file=str(path))
    margin = booster.predict(xgb.DMatrix(X, feature_types=booster.feature_types,
                                         enable_categorical=True,
                                         feature_names=booster.feature_names),
                             output_margin=True)
    np.testing.assert_allclose(margin, model.predict(X, output_margin=True).ravel(),
                               rtol=1e-5, atol=1e-5)
