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
from cbudget.interop.to_xgboost import save_xgboost

pd = pytest.importorskip("pandas")
lgb = pytest.importorskip("lightgbm")
xgb = pytest.importorskip("xgboost")
ensemble = pytest.importorskip("sklearn.ensemble")

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
    test["c"] = pd.Categorical(c, categories=LETTERS + ["zz"])
    if "d" in test:
        d = test["d"].astype(object)
        d[rng.random(len(d)) < 0.1] = None
        test["d"] = pd.Categorical(d, categories=["u", "v", "w"])   # not training's order
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
    # on demand, fetching the levels as the DataFrame holds them
    source = cbudget.FeatureSource(lambda features, rows: test.iloc[rows, features], len(test))
    np.testing.assert_allclose(model.predict(source), model.predict(test), **EXACT)
    np.testing.assert_allclose(source.cost(), model.predict_cost(test))


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
    (r"pandas_categorical:.*", "pandas_categorical:" + "[" * 100_000, "not JSON"),
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


# -- XGBoost ---------------------------------------------------------------------------
# XGBoost writes its categories' levels into the model (the "cats" section) from 3.1;
# before, a model of pandas categories holds codes only (the oldest supported is 2.1)
writes_levels = pytest.mark.skipif(
    tuple(int(v) for v in xgb.__version__.split(".")[:2]) < (3, 1),
    reason="XGBoost < 3.1 does not write its categories' levels")

# XGBoost sums in float32
FLOAT32 = {"rtol": 1e-5, "atol": 1e-5}


def _xgb_margin(booster, X, types):
    """XGBoost's margins on a float matrix of codes."""
    dmatrix = xgb.DMatrix(X, feature_types=types, enable_categorical=True,
                          feature_names=booster.feature_names)
    return booster.predict(dmatrix, output_margin=True)


@pytest.mark.parametrize("onehot", [1, 64])      # partition splits; one-hot splits
def test_xgboost_integer_codes(onehot, tmp_path):
    df, y = _frame(8)
    X = df[["x", "k", "c"]].assign(c=df.c.cat.codes.replace(-1, np.nan)).to_numpy(float)
    types = ["q", "c", "c"]
    booster = xgb.train({"max_depth": 3, "max_cat_to_onehot": onehot, "tree_method": "hist"},
                        xgb.DMatrix(X, y, feature_types=types, enable_categorical=True), 6)
    model = cbudget.from_xgboost(booster)
    assert model.categories.to_dict() == {"features": [1, 2], "levels": [None, None]}
    assert any(tree["categorical"].any() for tree in model.trees)
    T = _probe(df, 9)[["x", "k", "c"]]
    T = T.assign(c=T.c.cat.codes.replace(-1, np.nan)).to_numpy(float)
    T[:4, 1] = [1e9, 2.7, 39, 40]    # beyond every bitset, a fraction (truncated), edges
    expected = _xgb_margin(booster, T, types)
    np.testing.assert_allclose(model.predict(T, output_margin=True).ravel(), expected,
                               **FLOAT32)
    path = tmp_path / "m.ubj"           # the UBJSON file reads alike (typed arrays)
    booster.save_model(path)
    np.testing.assert_array_equal(cbudget.from_xgboost(path).predict(T), model.predict(T))


@writes_levels
@pytest.mark.parametrize("kind", ["regressor", "multiclass"])
def test_xgboost_dataframe_levels(kind):
    df, y = _frame(10)
    data = df[["c", "x", "d"]]
    if kind == "regressor":
        estimator = xgb.XGBRegressor(n_estimators=6, max_depth=3, enable_categorical=True,
                                     max_cat_to_onehot=1, tree_method="hist")
    else:
        y = np.digitize(y, np.quantile(y, [0.33, 0.66]))
        estimator = xgb.XGBClassifier(n_estimators=4, max_depth=3, enable_categorical=True,
                                      max_cat_to_onehot=1, tree_method="hist")
    estimator.fit(data, y)
    costs = {"c": 2.0, "x": 1.0, "d": 5.0}
    model = cbudget.from_xgboost(estimator, feature_costs=costs)
    assert model.categories.to_dict() == {"features": [0, 2],
                                          "levels": [LETTERS, ["w", "v", "u"]]}
    test = _probe(data, 11)
    seen = test["c"].isin(LETTERS) | test["c"].isna()
    # XGBoost refuses a DataFrame with an unseen level: the seen rows by level ...
    expected = estimator.predict(test[seen].astype({"c": pd.CategoricalDtype(LETTERS)}),
                                 output_margin=True)
    np.testing.assert_allclose(model.predict(test[seen], output_margin=True).squeeze(),
                               expected.squeeze(), **FLOAT32)
    # ... and all rows as codes (an unseen level: code 10, beyond the training codes)
    X = _codes(test, {"c": LETTERS, "d": ["w", "v", "u"]})
    X[~test["c"].isin(LETTERS) & test["c"].notna(), 0] = len(LETTERS)
    expected = _xgb_margin(estimator.get_booster(), X, ["c", "q", "c"])
    np.testing.assert_allclose(model.predict(test, output_margin=True).squeeze(),
                               expected.squeeze(), **FLOAT32)
    acquired = model.acquisitions(test)
    np.testing.assert_allclose(model.predict_cost(test), acquired @ np.array([2.0, 1.0, 5.0]))


def _xgb_doc():
    import json
    df, y = _frame(12)
    X = df[["x", "k"]].to_numpy(float)
    booster = xgb.train({"max_depth": 2, "max_cat_to_onehot": 1},
                        xgb.DMatrix(X, y, feature_types=["q", "c"], enable_categorical=True), 2)
    return json.loads(booster.save_raw("json"))


@pytest.mark.parametrize(("edit", "message"), [
    (lambda t: t.__setitem__("categories_nodes", []), "categories_segments has 1 values"),
    (lambda t: t["categories_nodes"].__setitem__(0, len(t["left_children"]) - 1),
     "list each categorical split once"),
    (lambda t: t["categories_sizes"].__setitem__(0, 10 ** 6), "must lie within categories"),
    (lambda t: t["categories"].__setitem__(0, 70_000), "lists category 70000;"),
    (lambda t: t["categories"].__setitem__(0, -1), "lists category -1;"),
    (lambda t: t["split_type"].__setitem__(0, 2), "split_type must hold 0"),
])
def test_xgboost_bad_categorical_fields(edit, message):
    import json
    doc = _xgb_doc()
    tree = next(t for t in doc["learner"]["gradient_booster"]["model"]["trees"]
                if 1 in t["split_type"])
    edit(tree)
    with pytest.raises(ValueError, match=message):
        cbudget.from_xgboost(json.dumps(doc).encode())


# -- scikit-learn HistGradientBoosting -------------------------------------------------
def _hgb(kind, **params):
    if kind == "regressor":
        return ensemble.HistGradientBoostingRegressor(max_iter=8, max_leaf_nodes=8, **params)
    return ensemble.HistGradientBoostingClassifier(max_iter=5, max_leaf_nodes=8, **params)


def _hgb_raw(estimator, X):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        raw = (estimator.decision_function(X) if hasattr(estimator, "classes_")
               else estimator.predict(X))
    return np.asarray(raw).reshape(len(X), -1)


@pytest.mark.parametrize("kind", ["regressor", "binary", "multiclass"])
def test_hgb_dataframe_levels(kind, tmp_path):
    df, y = _frame(13)
    data = df[["x", "c", "d"]].assign(s=df.c.astype(object))   # a string column too
    data.loc[data.index[:30], "s"] = None
    if kind != "regressor":
        y = np.digitize(y, np.quantile(y, [0.5] if kind == "binary" else [0.33, 0.66]))
    estimator = _hgb(kind, categorical_features=["c", "d", "s"]).fit(data, y)
    model = cbudget.from_sklearn(estimator, feature_costs=[1.0, 2.0, 4.0, 8.0])
    # the encoder's levels (sorted training values), whatever the dtype's order
    assert model.categories.to_dict() == {"features": [1, 2, 3], "levels": [
        LETTERS, ["u", "v", "w"], LETTERS]}
    test = _probe(data, 14)     # unseen levels ("zz") and missing values
    test["s"] = test["c"].astype(object)
    test.loc[test.index[:3], "s"] = "unseen"
    expected = _hgb_raw(estimator, test)
    np.testing.assert_allclose(model.predict(test, output_margin=True).reshape(expected.shape),
                               expected, **EXACT)
    path = tmp_path / "model.json"
    model.save_model(path)
    np.testing.assert_array_equal(cbudget.load_model(path).predict(test), model.predict(test))
    assert model.predict_cost(test).max() <= 15.0


def test_hgb_integer_codes():
    """Integer-coded categories (not 0..k-1: a value never seen, sparse values) predict
    from NumPy as in scikit-learn: the bitsets hold the values themselves."""
    rng = np.random.default_rng(15)
    n = 600
    values = np.array([0, 1, 2, 5, 7, 9, 30, 31, 32, 100])
    X = np.column_stack([rng.normal(size=n), rng.choice(values, n)]).astype(float)
    X[rng.random(n) < 0.1, 1] = np.nan
    y = np.isin(X[:, 1], [1, 5, 31, 100]) * 2.0 + X[:, 0] + np.isnan(X[:, 1])
    estimator = _hgb("regressor", categorical_features=[1]).fit(X, y)
    model = cbudget.from_sklearn(estimator)
    assert model.categories.to_dict() == {"features": [1], "levels": [None]}
    T = X.copy()
    T[:8, 1] = [3, 8, 33, 101, 250, 1000, -1, np.nan]     # unknown values and missing
    np.testing.assert_allclose(model.predict(T).ravel(), _hgb_raw(estimator, T).ravel(),
                               **EXACT)
    # missing values going either way, unknown values with them
    assert {bool(p.nodes["missing_go_to_left"][n]) for per in estimator._predictors
            for p in per for n in np.flatnonzero(p.nodes["is_categorical"])} == {False, True}


def test_hgb_fractional_levels():
    """Numeric categories that are not integer codes keep the encoder's levels: a
    DataFrame is mapped by level (an unseen value goes the missing way)."""
    rng = np.random.default_rng(16)
    n = 500
    data = pd.DataFrame({"x": rng.normal(size=n), "r": rng.choice([0.5, 1.5, 2.5, 7.25], n)})
    y = data.x + 2.0 * data.r.isin([0.5, 7.25])
    estimator = _hgb("regressor", categorical_features=["r"]).fit(data, y)
    model = cbudget.from_sklearn(estimator)
    assert model.categories.to_dict() == {"features": [1], "levels": [[0.5, 1.5, 2.5, 7.25]]}
    test = data.copy()
    test.loc[:5, "r"] = [3.0, 0.0, np.nan, 9.5, 1.5, 7.25]
    np.testing.assert_allclose(model.predict(test).ravel(), _hgb_raw(estimator, test).ravel(),
                               **EXACT)


# -- export to XGBoost -----------------------------------------------------------------
def _xgb_loaded_margin(path, X):
    booster = xgb.Booster(model_file=str(path))
    return _xgb_margin(booster, X, booster.feature_types)


@pytest.mark.parametrize("suffix", ["json", "ubj"])
def test_xgboost_export_of_categorical_splits(suffix, tmp_path):
    df, y = _frame(17, n=1500)
    data = df[["x", "c", "k"]]
    model = cbudget.train({"num_leaves": 8, "max_cat_to_onehot": 4, "min_data_per_group": 10,
                           "cat_smooth": 1.0}, cbudget.Dataset(data, y, categorical_feature=[
                               "c", "k"]), 8)
    assert sum(int(t["categorical"].sum()) for t in model.trees) >= 3
    path = tmp_path / f"model.{suffix}"
    model.save_model(path, format="xgboost")
    X = _codes(_probe(data, 18), {"c": LETTERS})
    X[:5, 1] = len(LETTERS)                 # an unseen level's code
    X[5:10, 2] = 5000                       # a code beyond every bitset
    expected = model.predict(X, output_margin=True).ravel()
    np.testing.assert_allclose(_xgb_loaded_margin(path, X), expected, **FLOAT32)
    treelite = pytest.importorskip("treelite")   # which refuses XGBoost's levels
    save_xgboost(model, path, levels=False)
    loaded = treelite.frontend.load_xgboost_model(
        str(path), format_choice="json" if suffix == "json" else "ubjson")
    np.testing.assert_allclose(treelite.gtil.predict(loaded, X.astype(np.float32),
                                                     pred_margin=True).ravel(),
                               expected, **FLOAT32)


def test_xgboost_export_round_trip(tmp_path):
    """An XGBoost model imported and exported predicts as the original: its splits
    whose missing values go either way, and the listed side, come back."""
    df, y = _frame(19)
    X = df[["x", "k", "c"]].assign(c=df.c.cat.codes.replace(-1, np.nan)).to_numpy(float)
    types = ["q", "c", "c"]
    booster = xgb.train({"max_depth": 3, "max_cat_to_onehot": 1},
                        xgb.DMatrix(X, y, feature_types=types, enable_categorical=True), 6)
    model = cbudget.from_xgboost(booster)
    assert {bool(t["default_left"][n]) for t in model.trees
            for n in np.flatnonzero(t["categorical"])} == {False, True}
    path = tmp_path / "model.json"
    model.save_model(path, format="xgboost")
    T = _probe(df, 20)[["x", "k", "c"]]
    T = T.assign(c=T.c.cat.codes.replace(-1, np.nan)).to_numpy(float)
    np.testing.assert_allclose(_xgb_loaded_margin(path, T), _xgb_margin(booster, T, types),
                               **FLOAT32)


@writes_levels
@pytest.mark.parametrize(("enc", "message"), [
    ({"offsets": [0, 1, 5], "values": [97, 98]}, "not strings"),
    ({"offsets": [0, 1, 2], "values": [97, 97]}, "repeat a level"),
    ({"offsets": [0, 1], "values": [300]}, "not strings"),
    ({"type": 15, "values": ["a"]}, "must hold numbers"),
    ([], "is not an object"),
])
def test_xgboost_bad_cats(enc, message):
    import json
    df, y = _frame(21)
    estimator = xgb.XGBRegressor(n_estimators=2, max_depth=2, enable_categorical=True,
                                 tree_method="hist").fit(df[["x", "d"]], y)
    doc = json.loads(estimator.get_booster().save_raw("json"))
    doc["learner"]["gradient_booster"]["model"]["cats"]["enc"][1] = enc
    with pytest.raises(ValueError, match=message):
        cbudget.from_xgboost(json.dumps(doc).encode())
