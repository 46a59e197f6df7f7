"""Categorical splits across libraries (issue 44, interop): LightGBM, XGBoost and
HistGradientBoosting models with categorical splits import as cbudget categorical
splits that predict what the source predicts on seen levels, unseen levels and missing
values, from a DataFrame (mapped by level) and from a NumPy array of codes; cbudget's
categorical splits export to XGBoost JSON that XGBoost predicts the same with."""
import re
import warnings

import numpy as np
import pytest

import cbudget

pd = pytest.importorskip("pandas")

EXACT = {"rtol": 1e-12, "atol": 1e-12}
LETTERS = list("abcdefghij")


def _frame(seed, n=400):
    """A DataFrame: a numeric column, a category column of 10 levels (some missing), a
    category column of 3 levels in non-alphabetical order and one of integer codes."""
    rng = np.random.default_rng(seed)
    df = pd.DataFrame({
        "x": rng.normal(size=n),
        "c": pd.Categorical(rng.choice(LETTERS, n), categories=LETTERS),
        "d": pd.Categorical(rng.choice(["u", "v", "w"], n), categories=["w", "v", "u"]),
        "k": rng.integers(0, 40, n).astype(float)})
    df.loc[rng.random(n) < 0.08, "c"] = np.nan
    y = (df.x + 2.0 * df.c.isin(list("acegi")) + (df.d == "v") + (df.k % 3 == 0)
         + 0.1 * rng.normal(size=n))
    return df, np.asarray(y, dtype=float)


def _probe(df, seed):
    """Rows with every seen level, an unseen level, missing values, codes never seen."""
    rng = np.random.default_rng(seed)
    test = df.sample(len(df), random_state=seed).reset_index(drop=True)
    c = test["c"].astype(object)
    c[rng.random(len(c)) < 0.1] = "zz"              # a level not seen in training
    c[rng.random(len(c)) < 0.1] = None
    d = test["d"].astype(object)
    d[rng.random(len(d)) < 0.1] = None
    test["c"] = pd.Categorical(c, categories=LETTERS + ["zz"])
    test["d"] = pd.Categorical(d, categories=["u", "v", "w"])   # another order than training
    if "k" in test:
        k = test["k"].to_numpy().copy()
        k[rng.random(len(k)) < 0.1] = np.nan
        k[rng.random(len(k)) < 0.05] = 77             # a code never seen in training
        k[rng.random(len(k)) < 0.05] = -3             # negative: missing
        test["k"] = k
    return test


def _codes(df, levels):
    """``df`` as a float matrix of codes: each category column's position among
    ``levels`` (the training levels; NaN for missing or unseen)."""
    out = df.copy()
    for name, lv in levels.items():
        out[name] = df[name].astype(object).map({v: c for c, v in enumerate(lv)}).astype(float)
    return out.to_numpy(dtype=float)


# -- LightGBM --------------------------------------------------------------------------
lgb = pytest.importorskip("lightgbm")

LGB_PARAMS = {"verbose": -1, "num_leaves": 8, "min_data_in_leaf": 5,
              "min_data_per_group": 5, "cat_smooth": 1, "max_cat_to_onehot": 4}


def _lgb_train(params, data, y, rounds=8, **dataset):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return lgb.train({**LGB_PARAMS, **params}, lgb.Dataset(data, y, **dataset),
                         num_boost_round=rounds)


def _lgb_paths(booster, X):
    """Per row, the features LightGBM's trees test on the way to the leaves it reaches
    (from ``dump_model`` and ``pred_leaf``): what cbudget's acquisitions must be."""
    leaves = booster.predict(X, pred_leaf=True)
    found = []
    for info in booster.dump_model()["tree_info"]:
        paths: dict[int, set] = {}
        stack = [(info["tree_structure"], frozenset())]
        while stack:
            node, path = stack.pop()
            if "leaf_index" in node or "split_feature" not in node:
                paths[node.get("leaf_index", 0)] = path
                continue
            below = path | {node["split_feature"]}
            stack += [(node["left_child"], below), (node["right_child"], below)]
        found.append(paths)
    acquired = np.zeros((X.shape[0], booster.num_feature()), dtype=bool)
    for t, paths in enumerate(found):
        for i, leaf in enumerate(leaves[:, t]):
            acquired[i, list(paths[int(leaf)])] = True
    return acquired


@pytest.mark.parametrize("objective", ["regression", "binary"])
def test_lightgbm_dataframe_levels(objective, tmp_path):
    df, y = _frame(0)
    y = y if objective == "regression" else (y > np.median(y)).astype(int)
    booster = _lgb_train({"objective": objective}, df[["x", "c", "d"]], y)
    assert re.search(r"^num_cat=[1-9]", booster.model_to_string(), re.MULTILINE)
    costs = {"x": 1.0, "c": 2.0, "d": 4.0}
    model = cbudget.from_lightgbm(booster, feature_costs=costs)
    assert model.categories.to_dict() == {"features": [1, 2],
                                          "levels": [LETTERS, ["w", "v", "u"]]}
    test = _probe(df[["x", "c", "d"]], 1)
    expected = booster.predict(test, raw_score=True)
    np.testing.assert_allclose(model.predict(test, output_margin=True).ravel(), expected,
                               **EXACT)
    # a NumPy array holds LightGBM's codes (positions among the training levels)
    X = _codes(test, {"c": LETTERS, "d": ["w", "v", "u"]})
    np.testing.assert_allclose(model.predict(X, output_margin=True).ravel(),
                               booster.predict(X, raw_score=True), **EXACT)
    np.testing.assert_allclose(model.predict(test).ravel(), booster.predict(test), **EXACT)
    # saved and loaded, the levels and bitsets stay
    path = tmp_path / "model.json"
    model.save_model(path)
    loaded = cbudget.load_model(path)
    np.testing.assert_array_equal(loaded.predict(test), model.predict(test))
    # costs: the features on LightGBM's paths, each paid once
    acquired = _lgb_paths(booster, X)
    np.testing.assert_array_equal(model.acquisitions(test), acquired)
    np.testing.assert_allclose(model.predict_cost(test), acquired @ np.array([1.0, 2.0, 4.0]))


def test_lightgbm_integer_codes():
    df, y = _frame(2)
    X = df[["x", "k"]].to_numpy()
    booster = _lgb_train({"objective": "regression"}, X, y, categorical_feature=[1])
    model = cbudget.from_lightgbm(booster)
    assert model.categories.to_dict() == {"features": [1], "levels": [None]}
    T = _probe(df, 3)[["x", "k"]].to_numpy()
    T[:5, 1] = [0, 1e9, 2.7, np.nan, -1]     # a code far beyond any bitset, a fraction
    np.testing.assert_allclose(model.predict(T).ravel(), booster.predict(T), **EXACT)


def test_lightgbm_mixed_columns_need_category_columns():
    df, y = _frame(4)
    booster = _lgb_train({"objective": "regression"}, df, y, categorical_feature=["c", "d", "k"])
    with pytest.raises(ValueError, match="pass category_columns="):
        cbudget.from_lightgbm(booster)
    with pytest.raises(ValueError, match="'x' is not a categorical feature"):
        cbudget.from_lightgbm(booster, category_columns=["x", "d"])
    model = cbudget.from_lightgbm(booster, category_columns=["c", "d"])
    assert model.categories.to_dict()["levels"] == [LETTERS, ["w", "v", "u"], None]
    test = _probe(df, 5)
    np.testing.assert_allclose(model.predict(test).ravel(), booster.predict(test), **EXACT)


def test_lightgbm_multiclass_many_levels():
    """Many-vs-many splits over 300 integer categories (bitsets of 10 words)."""
    rng = np.random.default_rng(6)
    n = 3000
    X = np.column_stack([rng.integers(0, 300, n), rng.normal(size=n)]).astype(float)
    y = (X[:, 0] * 7 % 3).astype(int)
    booster = _lgb_train({"objective": "multiclass", "num_class": 3, "max_cat_threshold": 64},
                         X, y, rounds=4, categorical_feature=[0])
    model = cbudget.from_lightgbm(booster)
    T = np.column_stack([rng.integers(-2, 320, n), rng.normal(size=n)]).astype(float)
    np.testing.assert_allclose(model.predict(T, output_margin=True),
                               booster.predict(T, raw_score=True), **EXACT)


def _lgb_text():
    df, y = _frame(7)
    return _lgb_train({"objective": "regression"}, df[["x", "c"]], y, rounds=2).model_to_string()


@pytest.mark.parametrize(("old", "new", "message"), [
    (r"cat_boundaries=0 1", "cat_boundaries=0 5", "cat_boundaries must rise"),
    (r"cat_threshold=\d+", "cat_threshold=0 0 1", "cat_boundaries must rise"),
    (r"cat_threshold=\d+", "cat_threshold=4294967296", "outside uint32"),
    (r"cat_threshold=\d+", "cat_threshold=-1", "outside uint32"),
    (r"num_cat=1", "num_cat=2", "cat_boundaries has 2 values, expected 3"),
    (r"pandas_categorical:.*", "pandas_categorical:[[1, 2], [3]]", "pass category_columns="),
    (r"pandas_categorical:.*", 'pandas_categorical:[["a", "a"]]', "distinct strings"),
    (r"pandas_categorical:.*", "pandas_categorical:[oops", "not JSON"),
])
def test_lightgbm_bad_categorical_fields(old, new, message):
    text = _lgb_text()
    assert re.search(old, text)
    with pytest.raises(ValueError, match=message):
        cbudget.from_lightgbm(re.sub(old, new, text, count=1))


def test_lightgbm_code_beyond_cbudget_limit():
    text = _lgb_text()
    # category 70,000 (word 2187, bit 16) sent left: more than cbudget's codes hold
    words = " ".join(["0"] * 2187 + [str(1 << 16)])
    tree0 = text.split("Tree=1")[0]
    bounds = re.search(r"cat_boundaries=0 (\d+)", tree0)
    assert bounds and bounds.group(1) == "1"
    edited = (tree0.replace("cat_boundaries=0 1", "cat_boundaries=0 2188", 1)
              .replace(re.search(r"cat_threshold=\d+", tree0).group(0),
                       f"cat_threshold={words}", 1))
    with pytest.raises(ValueError, match="sends category 70000 left"):
        cbudget.from_lightgbm(edited + "Tree=1" + text.split("Tree=1")[1])
