"""Categorical features in the histogram engine (docs/architecture.md, "Categorical
features"): binning of integer codes, the split kernel against a slow reference of
LightGBM's search, the partition, node bitsets in every traversal, the cost model (a
categorical feature is one feature), model files, determinism across thread counts."""
import copy
import json
import math

import numpy as np
import pytest
from reference_growers import assert_tracked_costs_equal_routing
from reference_predict import brute_cost, brute_raw, tree_walk

import cbudget
from cbudget._core._partition import split_rows
from cbudget._core._predict import predict_node_rows, predict_raw_exits, trees_until_held
from cbudget._core._split import find_best_split
from cbudget._core._types import HISTOGRAM_DTYPE, NODE_DTYPE, PREDICT_NODE_DTYPE
from cbudget.category_bins import (
    MAX_CATEGORY_CODE,
    bins_to_bitset,
    bitset_codes,
    codes_to_bitset,
)

MISSING = 255
CAT_DEFAULTS = dict(max_cat_to_onehot=4, max_cat_threshold=32, cat_l2=10.0, cat_smooth=10.0,
                    min_data_per_group=100)


# ---------------------------------------------------------------------------------------
# reference: LightGBM's categorical split search (FindBestThresholdCategoricalInner), on
# per-bin sums, in plain Python
# ---------------------------------------------------------------------------------------
def ref_categorical_split(sg, sh, sc, n_levels, G, H, N, lam, mcw, mdl, penalty, p):
    """(net gain, set of bins going left, default_left) of the best categorical split:
    ``sg/sh/sc`` hold the sums of value bins 0..n_levels (the last: "other", always
    right) and, at index -1, of the missing bin."""
    def score(g, h, lam_):
        return g * g / (h + lam_)

    parent = score(G, H, lam)
    best = (-math.inf, None, False)
    mg, mh, mc = sg[-1], sh[-1], sc[-1]
    onehot = n_levels + 1 <= p["max_cat_to_onehot"]     # the levels' bins and "other"
    if not onehot:
        used = [b for b in range(n_levels) if sc[b] > 0 and sc[b] >= p["cat_smooth"]]
        used.sort(key=lambda b: (sg[b] / (sh[b] + p["cat_smooth"]), b))
        max_num_cat = min(p["max_cat_threshold"], (len(used) + 1) // 2)
    for direction in (0, 1):
        if direction and mc == 0:
            break
        base = (mg, mh, mc) if direction else (0.0, 0.0, 0)

        def consider(gl, hl, cl, lam_, left, best, missing_left=bool(direction)):
            if cl < mdl or hl < mcw or N - cl < mdl or H - hl < mcw:
                return best
            gain = 0.5 * (score(gl, hl, lam_) + score(G - gl, H - hl, lam_) - parent)
            return (gain - penalty, left, missing_left) if gain - penalty > best[0] else best
        if onehot:
            for b in range(n_levels):
                if sc[b]:
                    best = consider(base[0] + sg[b], base[1] + sh[b], base[2] + sc[b], lam,
                                    {b}, best)
            continue
        for order in (used, used[::-1]):
            gl, hl, cl = base
            group, left = 0, set()
            for b in order[:max_num_cat]:
                gl, hl, cl = gl + sg[b], hl + sh[b], cl + sc[b]
                group += sc[b]
                left = left | {b}
                if cl < mdl or hl < mcw:
                    continue
                if N - cl < mdl or N - cl < p["min_data_per_group"] or H - hl < mcw:
                    break
                if group < p["min_data_per_group"]:
                    continue
                group = 0
                best = consider(gl, hl, cl, lam + p["cat_l2"], left, best)
    return best


def histograms(binned, g, h, n_features):
    hist = np.zeros((n_features, MISSING + 1), dtype=HISTOGRAM_DTYPE)
    for f in range(n_features):
        hist["sum_gradients"][f] = np.bincount(binned[:, f], weights=g, minlength=MISSING + 1)
        hist["sum_hessians"][f] = np.bincount(binned[:, f], weights=h, minlength=MISSING + 1)
        hist["count"][f] = np.bincount(binned[:, f], minlength=MISSING + 1)
    return hist


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("n_levels", [3, 4, 12, 60, 200])
@pytest.mark.parametrize("params", [CAT_DEFAULTS,
                                    dict(CAT_DEFAULTS, max_cat_threshold=3, cat_l2=0.0,
                                         cat_smooth=1.0, min_data_per_group=5),
                                    dict(CAT_DEFAULTS, max_cat_to_onehot=64, cat_smooth=0.0)])
def test_categorical_split_kernel_matches_reference(seed, n_levels, params):
    rng = np.random.default_rng(seed)
    n = 3000
    codes = rng.integers(0, n_levels, n)
    binned = np.where(rng.random(n) < 0.1, MISSING, codes).astype(np.uint8)[:, None]
    effect = rng.normal(size=n_levels + 1)
    g = effect[np.minimum(codes, n_levels)] + rng.normal(size=n) - 0.7 * (binned[:, 0] == MISSING)
    h = rng.uniform(0.2, 1.0, n)
    hist = histograms(binned, g, h, 1)
    nvb = np.array([n_levels + 1], np.uint32)        # the levels, then "other"
    lam, mcw, mdl, penalty = 1.0, 1e-3, 20, 0.5
    got = find_best_split(hist, nvb, MISSING, np.ones(1, np.uint8), float(g.sum()),
                          float(h.sum()), n, lam, mcw, mdl, np.array([penalty]), 1,
                          np.ones(1, np.uint8), **params)
    sums = [list(hist[k][0, :n_levels + 1]) + [hist[k][0, MISSING]]
            for k in ("sum_gradients", "sum_hessians", "count")]
    exp_gain, exp_left, exp_default = ref_categorical_split(
        *sums, n_levels, float(g.sum()), float(h.sum()), n, lam, mcw, mdl, penalty, params)
    if exp_left is None:
        assert got.feature == -1
        return
    assert got.feature == 0 and got.categorical
    assert set(got.left_bins.tolist()) == exp_left
    assert bool(got.default_left) == exp_default
    assert got.gain == pytest.approx(exp_gain, rel=1e-9)
    goes_left = np.isin(binned[:, 0], list(exp_left)) | (
        (binned[:, 0] == MISSING) & exp_default)
    assert got.count_left == goes_left.sum()
    assert got.sum_gradient_left == pytest.approx(g[goes_left].sum(), rel=1e-9, abs=1e-9)


def test_categorical_and_numeric_features_scanned_together():
    """A mask of categorical features: the numeric ones keep their threshold scan."""
    rng = np.random.default_rng(1)
    n = 2000
    binned = rng.integers(0, 50, (n, 3)).astype(np.uint8)
    g = rng.normal(size=n) + 3.0 * np.isin(binned[:, 1], [3, 17, 33, 41])
    h = np.ones(n)
    hist = histograms(binned, g, h, 3)
    nvb = np.full(3, 51, np.uint32)
    args = (hist, nvb, MISSING, np.ones(3, np.uint8), float(g.sum()), n, n, 0.0, 0.0, 1, None, 1)
    numeric = find_best_split(*args)
    categorical = find_best_split(*args, np.array([0, 1, 0], np.uint8),
                                  **dict(CAT_DEFAULTS, min_data_per_group=1))
    assert not numeric.categorical
    assert categorical.feature == 1 and categorical.categorical
    assert set(categorical.left_bins.tolist()) == {3, 17, 33, 41}
    assert categorical.raw_gain > numeric.raw_gain


def test_partition_by_bin_bitset():
    rng = np.random.default_rng(2)
    binned = np.asfortranarray(rng.integers(0, 40, (500, 1)).astype(np.uint8))
    binned[::7, 0] = MISSING
    rows = np.arange(500, dtype=np.int32)
    left_bins = [1, 5, 6, 31, 32, 39]
    bits = codes_to_bitset(left_bins)
    for default_left in (False, True):
        r = rows.copy()
        n_left = split_rows(r, binned, 0, 0, default_left, MISSING,
                            np.empty(500, np.int32), 1, bits)
        goes = np.isin(binned[:, 0], left_bins) | ((binned[:, 0] == MISSING) & default_left)
        assert n_left == goes.sum()
        np.testing.assert_array_equal(r[:n_left], np.flatnonzero(goes))
        np.testing.assert_array_equal(r[n_left:], np.flatnonzero(~goes))


# ---------------------------------------------------------------------------------------
# Dataset: codes, bins, errors
# ---------------------------------------------------------------------------------------
def test_codes_get_one_bin_each_and_missing_goes_to_the_missing_bin():
    X = np.array([[0.0], [3.0], [7.0], [3.0], [np.nan], [-1.0], [7.0]])
    d = cbudget.Dataset(X, np.zeros(7), categorical_feature=[0])
    np.testing.assert_array_equal(d.categorical_features, [0])
    np.testing.assert_array_equal(d.categorical_bin_codes[0], [0, 3, 7])
    np.testing.assert_array_equal(d.binned[:, 0], [0, 1, 2, 1, d.missing_bin, d.missing_bin, 2])
    assert d.n_value_bins[0] == 4           # three levels and "other"
    valid = cbudget.Dataset(np.array([[7.0], [5.0], [99.0]]), reference=d)
    np.testing.assert_array_equal(valid.binned[:, 0], [2, 3, 3])   # unseen: "other"
    np.testing.assert_array_equal(valid.categorical_features, [0])


def test_more_codes_than_bins_keeps_the_most_frequent():
    """max_bin - 1 codes (ties to the smaller code), then more only while they cover
    under 99% of the rows and have 3 rows or more (LightGBM's rule): here the next code
    has one row."""
    codes = np.concatenate([np.repeat(np.arange(10), 50), np.arange(10, 310)])
    d = cbudget.Dataset(codes[:, None].astype(float), np.zeros(codes.size), max_bin=16,
                        categorical_feature=[0])
    kept = d.categorical_bin_codes[0]
    np.testing.assert_array_equal(kept, np.arange(15))
    assert np.all(d.binned[~np.isin(codes, kept), 0] == 15)
    # codes of 3 rows each: kept until 99% of the rows are covered
    codes = np.concatenate([np.repeat(np.arange(10), 50), np.repeat(np.arange(10, 110), 3)])
    kept = cbudget.Dataset(codes[:, None].astype(float), np.zeros(codes.size), max_bin=16,
                           categorical_feature=[0]).categorical_bin_codes[0]
    assert kept.size == 10 + int(np.ceil((round(0.99 * 800) - 500) / 3))


def test_rows_of_weight_zero_give_no_code_a_bin():
    X = np.array([[0.0], [1.0], [2.0], [2.0], [5.0]])
    d = cbudget.Dataset(X, np.zeros(5), weight=[1, 1, 1, 1, 0], categorical_feature=[0])
    np.testing.assert_array_equal(d.categorical_bin_codes[0], [0, 1, 2])
    assert d.binned[4, 0] == 3          # code 5: "other"


@pytest.mark.parametrize("value,match", [(1.5, "not integers"),
                                         (MAX_CATEGORY_CODE + 1.0, "must be below")])
def test_bad_codes_are_refused_naming_the_column(value, match):
    X = np.array([[0.0, 1.0], [1.0, value], [2.0, 2.0]])
    with pytest.raises(ValueError, match=match) as info:
        cbudget.Dataset(X, np.zeros(3), feature_names=["a", "grade"], categorical_feature=[1])
    assert "'grade'" in str(info.value)


def test_validation_data_take_the_reference_categories():
    X = np.arange(12, dtype=float).reshape(6, 2) % 3
    d = cbudget.Dataset(X, np.zeros(6), categorical_feature=[1])
    with pytest.raises(ValueError, match="comes from the reference"):
        cbudget.Dataset(X, reference=d, categorical_feature=[0])
    assert cbudget.Dataset(X, reference=d).categorical_features == [1]


# ---------------------------------------------------------------------------------------
# training, prediction, every traversal
# ---------------------------------------------------------------------------------------
def membership_problem(seed=0, n=6000, n_levels=40, p_missing=0.05):
    """The label depends on whether a row's level is in a random set of levels: one
    categorical split separates it, no threshold on the codes does."""
    rng = np.random.default_rng(seed)
    codes = rng.integers(0, n_levels, n).astype(float)
    members = rng.permutation(n_levels)[:n_levels // 2]
    y = np.isin(codes, members) * 2.0 + rng.normal(scale=0.05, size=n)
    codes[rng.random(n) < p_missing] = np.nan
    X = np.column_stack([rng.normal(size=n), codes, rng.normal(size=n)])
    return X, y, members


def test_one_categorical_split_learns_a_level_set_that_thresholds_cannot():
    X, y, members = membership_problem()
    params = {"num_leaves": 2, "learning_rate": 1.0, "reg_lambda": 0.0}
    cat = cbudget.train(params, cbudget.Dataset(X, y, categorical_feature=[1]), 1)
    num = cbudget.train(params, cbudget.Dataset(X, y), 1)
    root = cat.trees[0][0]
    assert root["categorical"] == 1 and root["feature"] == 1
    left = set(bitset_codes(cat.tree_bitsets(cat.trees[0])[0][1:]).tolist())
    assert left in (set(members.tolist()), set(range(40)) - set(members.tolist()))
    present = ~np.isnan(X[:, 1])
    mse = [float(np.mean((m.predict(X[present]) - y[present]) ** 2)) for m in (cat, num)]
    assert mse[0] < 0.01 < 0.5 < mse[1]


@pytest.mark.parametrize("cat_l2", [0.0, 10.0, 250.0])
def test_leaves_below_a_many_vs_many_split_add_cat_l2(cat_l2):
    """LightGBM's leaf outputs of a many-vs-many split: -G / (H + reg_lambda + cat_l2)."""
    X, y, _ = membership_problem()
    model = cbudget.train({"num_leaves": 2, "learning_rate": 0.5, "reg_lambda": 1.0,
                           "cat_l2": cat_l2, "base_score": 0.0},
                          cbudget.Dataset(X, y, categorical_feature=[1]), 1)
    tree = model.trees[0]
    assert tree["categorical"][0]
    leaf = model.predict(X, pred_leaf=True)[:, 0]
    for node in (tree["left"][0], tree["right"][0]):
        g, h = -y[leaf == node].sum(), float((leaf == node).sum())
        assert tree["value"][node] == pytest.approx(-0.5 * g / (h + 1.0 + cat_l2), rel=1e-12)


def test_node_semantics_missing_negative_unseen_and_truncation():
    X, y, _ = membership_problem()
    model = cbudget.train({"num_leaves": 2, "learning_rate": 1.0},
                          cbudget.Dataset(X, y, categorical_feature=[1]), 1)
    root = model.trees[0][0]
    left_codes = bitset_codes(model.tree_bitsets(model.trees[0])[0][1:])
    leaf_of = {True: root["left"], False: root["right"]}
    inside, outside = float(left_codes[0]), float(np.setdiff1d(np.arange(40), left_codes)[0])
    rows = np.array([[0.0, inside, 0.0], [0.0, inside + 0.7, 0.0], [0.0, outside, 0.0],
                     [0.0, np.nan, 0.0], [0.0, -3.0, 0.0], [0.0, 1000.0, 0.0],
                     [0.0, 2.0 ** 40, 0.0], [0.0, np.inf, 0.0]])
    default = bool(root["default_left"])
    expected = [leaf_of[True], leaf_of[True], leaf_of[False], leaf_of[default],
                leaf_of[default], leaf_of[False], leaf_of[False], leaf_of[False]]
    np.testing.assert_array_equal(model.predict(rows, pred_leaf=True)[:, 0], expected)
    np.testing.assert_array_equal(
        model.predict(rows.astype(np.float32), pred_leaf=True)[:, 0], expected)


@pytest.fixture(scope="module")
def cat_model():
    rng = np.random.default_rng(3)
    X, y, _ = membership_problem(seed=3, n=3000)
    X = np.column_stack([X, rng.integers(0, 300, X.shape[0]).astype(float)])
    y = y + 0.3 * (X[:, 3] % 7 == 0)
    d = cbudget.Dataset(X, y, categorical_feature=[1, 3], feature_costs=[1.0, 5.0, 2.0, 3.0],
                        split_cost=0.01, tree_cost=0.1)
    model = cbudget.train({"algorithm": "cegb", "cost_tradeoff": 0.01, "num_leaves": 8,
                           "max_cat_to_onehot": 8, "min_data_per_group": 20,
                           "cat_smooth": 5.0}, d, 6)
    return model, X


def test_every_traversal_agrees_with_the_file_reference(cat_model):
    model, X = cat_model
    assert sum(int(t["categorical"].sum()) for t in model.trees) >= 3
    doc = model.to_dict()
    Xt = X[:200].copy()
    Xt[::9, 1] = -1.0            # negative: missing
    Xt[::11, 3] = 5000.0         # never seen
    raw = brute_raw(doc, Xt)[:, 0]
    np.testing.assert_allclose(model.predict(Xt, output_margin=True), raw, rtol=1e-12)
    np.testing.assert_allclose(model.predict_cost(Xt), brute_cost(doc, Xt), rtol=1e-12)
    leaves = model.predict(Xt, pred_leaf=True)
    for t, tree in enumerate(doc["trees"]):
        assert [tree_walk(tree, x)[-1] for x in Xt] == leaves[:, t].tolist()
    # on demand: the fetched features, the cost and the leaves of full prediction
    source = cbudget.FeatureSource(lambda features, rows: Xt[np.ix_(rows, features)], 200)
    np.testing.assert_allclose(model.predict(source, output_margin=True), raw, rtol=1e-12)
    np.testing.assert_allclose(source.cost(), model.predict_cost(Xt), rtol=1e-12)
    acquired = model.acquisitions(Xt)
    for i in range(0, 200, 17):
        paths = {tree["split_features"][n] for tree in doc["trees"]
                 for n in tree_walk(tree, Xt[i])[:-1]}
        assert set(np.flatnonzero(acquired[i]).tolist()) == paths


def test_exit_and_leaf_kernels_read_the_bitsets(cat_model):
    """predict_raw_exits, trees_until_held and predict_node_rows walk categorical nodes
    as predict_leaf does."""
    model, X = cat_model
    Xt = np.ascontiguousarray(X[:300])
    offsets, nodes = model.packed_trees()
    words, n_trees = model.cat_words, offsets.shape[0] - 1
    leaves = model.predict(Xt, pred_leaf=True)
    glob = leaves + offsets[:-1]
    outputs = np.zeros(n_trees, np.int32)
    # exits at every tree with bounds no score leaves: the full sums
    raw, ends = np.zeros((300, 1)), np.empty(300, np.int64)
    predict_raw_exits(Xt, nodes, offsets, outputs, np.arange(1, n_trees, dtype=np.int64),
                      np.full(n_trees - 1, -np.inf), np.full(n_trees - 1, np.inf), False,
                      raw, ends, 1, None, words)
    np.testing.assert_allclose(raw[:, 0], nodes["threshold"][glob].sum(axis=1), rtol=1e-12)
    # held from the first tree whose reached leaf is flagged
    flags = (np.arange(nodes.shape[0]) % 3 == 0).astype(np.uint8)
    until = np.empty(300, np.int64)
    trees_until_held(Xt, nodes, offsets, flags, until, 1, words)
    flagged = flags[glob].astype(bool)
    np.testing.assert_array_equal(until, np.where(flagged.any(axis=1),
                                                  flagged.argmax(axis=1) + 1, n_trees + 1))
    table = np.arange(2 * nodes.shape[0], dtype=float).reshape(-1, 2)
    out = np.zeros((300, 2))
    predict_node_rows(Xt, nodes, offsets, table, out, 1, words)
    np.testing.assert_array_equal(out, table[glob].sum(axis=1))


def test_a_categorical_feature_is_paid_once_per_input(cat_model):
    model, X = cat_model
    splits = [n for tree in model.trees for n in np.flatnonzero(tree["categorical"])]
    assert len(splits) >= 2
    costs = model.predict_cost(X[:50])
    acquired = model.acquisitions(X[:50])
    # each input pays a feature's cost once whatever the number of its splits on the path
    doc = model.to_dict()
    visits = np.array([sum(len(tree_walk(t, x)) - 1 for t in doc["trees"]) for x in X[:50]])
    expected = acquired @ np.array([1.0, 5.0, 2.0, 3.0]) + 0.01 * visits + 0.1 * len(doc["trees"])
    np.testing.assert_allclose(costs, expected, rtol=1e-12)
    importance = model.feature_importance("cost")
    assert importance[1] == 5.0 * sum(t["new_acquisitions"][t["feature"] == 1].sum()
                                      for t in model.trees)


def cost_problem(n=3000, seed=4):
    rng = np.random.default_rng(seed)
    X = np.column_stack([rng.normal(size=n), rng.integers(0, 30, n), rng.integers(0, 6, n),
                         rng.normal(size=n)]).astype(float)
    X[rng.random(n) < 0.05, 1] = np.nan
    y = (np.isin(X[:, 1], [1, 4, 7, 11, 19, 23, 28]) + (X[:, 2] == 3) * 0.7
         + 0.3 * X[:, 0] + rng.normal(scale=0.3, size=n) > 0.8).astype(float)
    dtrain = cbudget.Dataset(X, y, categorical_feature=[1, 2], **COSTS)
    return X, y, dtrain


COSTS = dict(feature_costs=[1.0, 2.0, 0.5, 3.0], cost_groups=[[1, 3]], group_costs=[1.5],
             split_cost=0.01, tree_cost=0.1)


@pytest.mark.parametrize("subsample", [1.0, 0.6])
@pytest.mark.parametrize("algorithm,tradeoff", [("gbdt", None), ("cegb", 0.002),
                                                ("greedy_miser", 0.5)])
def test_costs_tracked_in_training_match_routing(subsample, algorithm, tradeoff):
    """The acquisitions the learners track while growing (the partition, and for rows
    out of the round the binned walk along cat_bins) equal routing the raw codes through
    the finished model; the evaluation scores (predict_binned_add) equal predict's."""
    X, y, dtrain = cost_problem()
    params = {"objective": "binary:logistic", "algorithm": algorithm, "subsample": subsample,
              "eval_metric": "logloss"}
    if tradeoff is not None:
        params["cost_tradeoff"] = tradeoff
    log = {}
    valid = cbudget.Dataset(X[:500], y[:500], reference=dtrain)
    b = cbudget.train(params, dtrain, 8, evals=[(valid, "valid")], evals_result=log,
                      verbose_eval=False)
    assert any(t["categorical"].any() for t in b.trees)
    assert_tracked_costs_equal_routing(b, dtrain)
    p = b.predict(X[:500])
    logloss = -np.mean(y[:500] * np.log(p) + (1 - y[:500]) * np.log(1 - p))
    assert log["valid"]["logloss"][-1] == pytest.approx(logloss, rel=1e-9)


def test_cegb_prices_a_categorical_split_as_one_feature():
    """The penalty of a categorical split: the feature (and its group) for the rows that
    lack it, once; a later split on it below pays only the split cost."""
    X, y, dtrain = cost_problem()
    tradeoff = 0.001
    b = cbudget.train({"objective": "binary:logistic", "algorithm": "cegb",
                       "cost_tradeoff": tradeoff, "num_leaves": 12}, dtrain, 1)
    tree = b.trees[0]
    checked = 0
    for node in np.flatnonzero(tree["categorical"]):
        m, n = int(tree["feature"][node]), int(tree["n_samples"][node])
        ancestors, child = set(), node
        while child:
            child = int(np.flatnonzero((tree["left"] == child) | (tree["right"] == child))[0])
            ancestors.add(int(tree["feature"][child]))
        feature = {1: 2.0, 2: 0.5}[m] if m not in ancestors else 0.0
        group = 1.5 if m == 1 and not ancestors & {1, 3} else 0.0
        expected = tradeoff * n * (0.01 + feature + group)
        assert tree["cost_penalty"][node] == pytest.approx(expected, rel=1e-12)
        checked += 1
    assert checked >= 2


def test_slicing_keeps_the_bitsets(cat_model):
    model, X = cat_model
    sliced = model[2:5]
    np.testing.assert_allclose(
        sliced.predict(X[:100], output_margin=True) - sliced.base_score[0],
        model.predict(X[:100], output_margin=True, iteration_range=(2, 5)) - model.base_score[0],
        rtol=1e-12, atol=1e-12)
    doc = sliced.to_dict()
    np.testing.assert_allclose(brute_raw(doc, X[:100])[:, 0],
                               sliced.predict(X[:100], output_margin=True), rtol=1e-12)


def test_save_load_round_trip(cat_model, tmp_path):
    model, X = cat_model
    path = tmp_path / "cat.json"
    model.save_model(path)
    loaded = cbudget.Booster.load_model(path) if hasattr(cbudget.Booster, "load_model") \
        else cbudget.load_model(path)
    np.testing.assert_array_equal(loaded.predict(X), model.predict(X))
    np.testing.assert_array_equal(loaded.predict_cost(X), model.predict_cost(X))
    doc = json.loads(path.read_text())
    assert doc["format_version"] == [1, 10] and doc["categories"]["features"] == [1, 3]
    assert loaded.to_dict()["trees"] == doc["trees"]


def first_categorical_tree(doc):
    return next(t for t in doc["trees"] if "categorical" in t)


def corrupt(doc, how):
    doc = copy.deepcopy(doc)
    tree = first_categorical_tree(doc)
    node = tree["categorical"].index(1)
    if how == "short words":
        tree["cat_threshold"].pop()
    elif how == "bounds past the end":
        tree["cat_boundaries"][-1] += 3
    elif how == "bounds decreasing":
        tree["cat_boundaries"][1] = -1
    elif how == "one bound missing":
        tree["cat_boundaries"].pop()
    elif how == "word too large":
        tree["cat_threshold"][0] = 2 ** 32
    elif how == "threshold not its number":
        tree["thresholds"][node] = 7.0
    elif how == "not a declared feature":
        doc["categories"] = cbudget.categories.Categories(
            [3] if tree["split_features"][node] == 1 else [1]).to_dict()
    elif how == "undeclared everywhere":
        del doc["categories"]
    elif how == "leaf flagged":
        tree["categorical"][tree["left_children"].index(-1)] = 1
    elif how == "flag not 0/1":
        tree["categorical"][node] = 2
    elif how == "flag a float":
        tree["categorical"][node] = 1.0
    elif how == "words without flags":
        del tree["categorical"]
    elif how == "huge bitset":
        tree["cat_boundaries"] = [0] + [2 ** 20] * (len(tree["cat_boundaries"]) - 1)
    return doc


@pytest.mark.parametrize("how", ["short words", "bounds past the end", "bounds decreasing",
                                 "one bound missing", "word too large",
                                 "threshold not its number", "not a declared feature",
                                 "undeclared everywhere", "leaf flagged", "flag not 0/1",
                                 "flag a float",
                                 "words without flags", "huge bitset"])
def test_corrupt_bitsets_are_refused(cat_model, how):
    doc = cat_model[0].to_dict()
    with pytest.raises(ValueError, match="invalid cbudget model"):
        cbudget.model_io.model_from_dict(corrupt(doc, how))


def test_files_of_numeric_models_are_unchanged():
    X, y, _ = membership_problem(n=500)
    doc = cbudget.train({"num_leaves": 4}, cbudget.Dataset(X, y), 2).to_dict()
    assert "categories" not in doc
    assert all("categorical" not in t and "cat_threshold" not in t for t in doc["trees"])


@pytest.mark.parametrize("algorithm", ["gbdt", "cegb", "greedy_miser"])
def test_same_model_on_one_and_two_threads(algorithm):
    """Large enough that the split scan (features x bins over 8192) and the partition
    (leaves over 65536 rows) run on two threads."""
    rng = np.random.default_rng(5)
    n, n_cat = 70000, 40          # 40 x 251 value bins: over the scan's 8192
    X = rng.integers(0, 250, (n, n_cat)).astype(float)
    X[rng.random((n, n_cat)) < 0.02] = np.nan
    y = (np.isin(X[:, 0], np.arange(0, 250, 3)) + 0.5 * np.isin(X[:, 5], np.arange(60))
         + rng.normal(scale=0.1, size=n))
    d = cbudget.Dataset(X, y, categorical_feature=list(range(n_cat)),
                        feature_costs=np.linspace(0.1, 2, n_cat))
    docs = []
    for n_jobs in (1, 2):
        params = {"algorithm": algorithm, "n_jobs": n_jobs, "num_leaves": 8,
                  "max_depth": 3 if algorithm == "greedy_miser" else None}
        if algorithm != "gbdt":
            params["cost_tradeoff"] = 1e-4
        docs.append(json.dumps(cbudget.train(params, d, 2).to_dict()["trees"]))
    assert d.n_value_bins.sum() > 8192
    assert docs[0] == docs[1]
    assert '"categorical"' in docs[0]


def test_bins_to_bitset_and_back():
    kept = np.array([2, 40, 41, 300])
    bins = codes_to_bitset([0, 1, 3, 4])      # codes 2, 40, 300 (bin 4: "other")
    words = bins_to_bitset(bins, kept)
    assert words[0] == words.size - 1 == 300 // 32 + 1
    np.testing.assert_array_equal(bitset_codes(words[1:]), [2, 40, 300])


# ---------------------------------------------------------------------------------------
# parameters and what cannot take a categorical split yet
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("name,value,error", [
    ("max_cat_to_onehot", 0, ValueError), ("max_cat_threshold", 1.5, TypeError),
    ("cat_l2", -1.0, ValueError), ("cat_smooth", float("nan"), ValueError),
    ("min_data_per_group", 0, ValueError)])
def test_invalid_categorical_parameters_refused(name, value, error):
    X, y, _ = membership_problem(n=200)
    with pytest.raises(error, match=name):
        cbudget.train({name: value}, cbudget.Dataset(X, y, categorical_feature=[1]), 1)


def test_categorical_parameters_change_the_search():
    X, y, _ = membership_problem(n=2000)
    d = cbudget.Dataset(X, y, categorical_feature=[1])
    few = cbudget.train({"num_leaves": 2, "max_cat_threshold": 2, "min_data_per_group": 1,
                         "cat_smooth": 1.0}, d, 1)
    left = bitset_codes(few.tree_bitsets(few.trees[0])[0][1:])
    assert few.trees[0][0]["categorical"] and left.size <= 2


def test_plot_tree_names_the_level_set(cat_model):
    from cbudget.plotting import _ensemble_nodes
    model = cat_model[0]
    t = next(i for i, tree in enumerate(model.trees) if tree["categorical"].any())
    nodes, _ = _ensemble_nodes(model, t, None, 0)
    k = int(np.flatnonzero(model.trees[t]["categorical"])[0])
    codes = bitset_codes(model.tree_bitsets(model.trees[t])[0][1:])
    assert nodes[k].text.startswith(f"{model.feature_names[model.trees[t][k]['feature']]} in "
                                    f"{{{codes[0]}, ")


def test_adapt_gbrt_gate_and_predictor_split_a_level_set():
    """adapt_gbrt grows its gate and predictor with the histogram engine: its predictor
    learns the level set, as gbdt's trees do, and gets the label that thresholds on the
    codes cannot (the expensive model is a single constant-ish tree of the numbers)."""
    X, y, members = membership_problem(n=3000)
    label = (y > 1).astype(float)
    d = cbudget.Dataset(X, label, categorical_feature=[1])
    expensive = cbudget.train({"objective": "binary:logistic", "num_leaves": 2},
                              cbudget.Dataset(X[:, [0, 2]], label), 1)
    f0 = cbudget.ExternalModel(_ColumnsModel(expensive, [0, 2]), cost=1.0)
    model = cbudget.train({"algorithm": "adapt_gbrt", "objective": "binary:logistic",
                           "p_full": 0.1, "cost_tradeoff": 0.0}, d, 10, expensive_model=f0)
    splits = [tree[tree["categorical"] == 1] for tree in model.predictor.trees]
    assert sum(s.shape[0] for s in splits) > 0
    assert all((s["feature"] == 1).all() for s in splits)
    present = ~np.isnan(X[:, 1])
    low_cost = model.route(X) == 1
    accuracy = np.mean((model.predict(X) > 0.5)[present & low_cost]
                       == (label[present & low_cost] > 0.5))
    assert accuracy > 0.95


class _ColumnsModel:
    """A cbudget model of some columns, as an external expensive model of all of them."""

    def __init__(self, model, columns):
        self.model, self.columns = model, columns

    def predict_proba(self, X):
        p = self.model.predict(np.asarray(X)[:, self.columns])
        return np.column_stack([1 - p, p])


def test_algorithms_without_categorical_splits_refuse_clearly():
    X, y, _ = membership_problem(n=300)
    d = cbudget.Dataset(X, (y > 1).astype(float), categorical_feature=[1])
    with pytest.raises(ValueError, match="'budget_rf' does not split categorical"):
        cbudget.train({"algorithm": "budget_rf", "objective": "binary:logistic"}, d, 1)


def test_struct_layouts():
    assert PREDICT_NODE_DTYPE.itemsize == 24
    # a categorical split's bin bitset is out of the node (any number of bins): an offset
    assert NODE_DTYPE.fields["cat_bins_at"][0] == np.uint32
    assert NODE_DTYPE.itemsize == 80


@pytest.mark.parametrize("seed", [0, 1])
def test_close_to_lightgbm_with_categorical_feature(seed):
    """Side by side with LightGBM's categorical splits, the same rounds, leaves and
    categorical parameters: test AUC within 0.01 (measured gaps: 0.000-0.003)."""
    lgb = pytest.importorskip("lightgbm")
    rng = np.random.default_rng(seed)
    n, levels = 8000, (5, 30, 80)
    codes = np.column_stack([rng.integers(0, k, n) for k in levels]).astype(float)
    numeric = rng.normal(size=(n, 3))
    logit = numeric @ np.array([0.8, -0.5, 0.3])
    for j, k in enumerate(levels):
        logit += 0.7 * rng.normal(size=k)[codes[:, j].astype(int)]
    logit += 1.2 * (np.isin(codes[:, 2], rng.permutation(80)[:40]) ^ (codes[:, 1] < 15))
    y = (rng.random(n) < 1 / (1 + np.exp(-(logit - logit.mean())))).astype(float)
    codes[rng.random(codes.shape) < 0.03] = np.nan
    X = np.column_stack([numeric, codes])
    cat = [3, 4, 5]
    model = cbudget.train({"objective": "binary:logistic", "num_leaves": 31, "n_jobs": 1},
                          cbudget.Dataset(X[:5000], y[:5000], categorical_feature=cat), 50)
    params = {"objective": "binary", "num_leaves": 31, "min_data_in_leaf": 20,
              "min_sum_hessian_in_leaf": 1e-3, "lambda_l2": 1.0, "learning_rate": 0.1,
              "max_bin": 255, "num_threads": 1, "verbose": -1, "seed": 0}
    reference = lgb.train(params, lgb.Dataset(X[:5000], y[:5000], params=params,
                                              categorical_feature=cat), 50)

    def auc(score):
        ranks = np.argsort(np.argsort(score)) + 1.0
        pos = y[5000:] == 1
        return (ranks[pos].sum() - pos.sum() * (pos.sum() + 1) / 2) / (pos.sum() * (~pos).sum())
    assert auc(model.predict(X[5000:])) == pytest.approx(auc(reference.predict(X[5000:])),
                                                         abs=0.01)


def test_continued_training_keeps_and_extends_the_bitsets():
    X, y, dtrain = cost_problem()
    params = {"objective": "binary:logistic", "num_leaves": 6}
    whole = cbudget.train(params, dtrain, 5)
    continued = cbudget.train(params, dtrain, 2, xgb_model=cbudget.train(params, dtrain, 3))
    np.testing.assert_allclose(continued.predict(X), whole.predict(X), rtol=1e-12)
    assert [t["categorical"].sum() for t in continued.trees] == \
        [t["categorical"].sum() for t in whole.trees]
    with pytest.raises(ValueError, match="categorical features"):
        cbudget.train(params, cbudget.Dataset(X, y, categorical_feature=[1], **COSTS), 1,
                      xgb_model=whole)
