"""Categorical features, the input layer: which columns are categorical, the mapping of
their levels to codes, its place in the model and its file, and the errors (cbudget/
categories.py; docs/architecture.md, "Categorical features"). The splits are
tests/test_categorical_engine.py's."""
import json
import warnings

import numpy as np
import pytest

import cbudget
from cbudget import Dataset
from cbudget.algorithms import REGISTRY
from cbudget.categories import MAX_LEVELS, Categories
from cbudget.model_io import model_from_dict

pd = pytest.importorskip("pandas")

PARAMS = {"objective": "binary:logistic", "max_depth": 3, "verbosity": 0}


def frame(n=300, seed=0):
    """Strings, a pandas category (in a non-sorted order), an integer-coded column
    and a number; the label depends on the categories."""
    rng = np.random.default_rng(seed)
    df = pd.DataFrame({
        "sex": rng.choice(["M", "F"], n),
        "dept": pd.Categorical(rng.choice(["cardio", "onco", "neuro"], n),
                               categories=["onco", "cardio", "neuro"]),
        "grade": rng.integers(0, 5, n),
        "age": rng.normal(50, 10, n),
    })
    y = ((df.sex == "M") ^ (df.dept == "onco") | (df.grade == 3)).to_numpy(dtype=float)
    return df, y


def codes_of(df):
    """The codes cbudget documents, computed here by hand: sorted string levels, the
    category's own order, integer codes as they are."""
    sex = df.sex.map({"F": 0.0, "M": 1.0}).to_numpy(dtype=float)
    dept = df.dept.map({"onco": 0.0, "cardio": 1.0, "neuro": 2.0}).to_numpy(dtype=float)
    return np.column_stack([sex, dept, df.grade.to_numpy(float), df.age.to_numpy()])


@pytest.fixture(scope="module")
def trained():
    df, y = frame()
    dtrain = Dataset(df, y, categorical_feature=["sex", "dept", "grade"])
    return df, dtrain, cbudget.train(PARAMS, dtrain, 5, verbose_eval=False)


def test_codes_of_each_kind_of_column():
    df, y = frame()
    data = Dataset(df, y, categorical_feature=["sex", "dept", "grade"])
    np.testing.assert_array_equal(data.categorical_features, [0, 1, 2])
    assert data.categorical_features.dtype == np.int32
    np.testing.assert_array_equal(data.data, codes_of(df))
    assert data.categories.levels == [["F", "M"], ["onco", "cardio", "neuro"], None]


def test_auto_takes_strings_and_categories_not_numbers():
    df, y = frame()
    data = Dataset(df, y)              # categorical_feature="auto" by default
    np.testing.assert_array_equal(data.categorical_features, [0, 1])
    assert Dataset(df.drop(columns=["sex", "dept"]), y).categorical_features.size == 0
    # names, indices, numpy object arrays
    assert Dataset(df, y, categorical_feature=[1, "sex"]).categorical_features.tolist() == [0, 1]
    objects = Dataset(df[["sex"]].to_numpy(dtype=object), y)
    np.testing.assert_array_equal(objects.data[:, 0], codes_of(df)[:, 0])


def test_missing_values_and_negative_codes_are_nan():
    df = pd.DataFrame({"s": ["a", None, "b", np.nan], "c": pd.Categorical(["x", None, "y", "x"]),
                       "k": [0, -1, 2, 1]})
    data = Dataset(df, [0, 1, 0, 1], categorical_feature=["s", "c", "k"])
    np.testing.assert_array_equal(np.isnan(data.data), [[0, 0, 0], [1, 1, 1], [0, 0, 0],
                                                        [1, 0, 0]])
    assert data.categories.levels[0] == ["a", "b"]


def test_integer_codes_from_numpy():
    X = np.column_stack([np.arange(6) % 3, np.linspace(0, 1, 6)]).astype(np.float32)
    data = Dataset(X, np.arange(6) % 2, categorical_feature=[0])
    np.testing.assert_array_equal(data.data[:, 0], X[:, 0])
    assert data.categories.levels == [None]
    X[0, 0] = -3
    assert np.isnan(Dataset(X, np.arange(6) % 2, categorical_feature=[0]).data[0, 0])
    assert X[0, 0] == -3          # the caller's array is not edited


def test_validation_data_takes_the_references_levels():
    df, y = frame()
    dtrain = Dataset(df, y)
    valid = df.head(6).copy()
    # another category order, a level never seen, strings given as a category
    valid["dept"] = pd.Categorical(["neuro", "onco", "cardio", "psych", "onco", None],
                                   categories=["psych", "neuro", "cardio", "onco"])
    valid["sex"] = ["M", "F", "X", "M", None, "F"]
    with pytest.warns(UserWarning, match="not in the training data"):
        dvalid = Dataset(valid, y[:6], reference=dtrain)
    np.testing.assert_array_equal(dvalid.data[:, 1], [2, 0, 1, 3, 0, np.nan])
    np.testing.assert_array_equal(dvalid.data[:, 0], [1, 0, 2, 1, np.nan, 0])
    assert dvalid.categories is dtrain.categories


def test_validation_column_of_another_kind_is_refused():
    df, y = frame()
    dtrain = Dataset(df, y)
    valid = df.head(6).copy()
    valid["sex"] = np.arange(6.0)
    with pytest.raises(TypeError, match="'sex'.*string levels in training"):
        Dataset(valid, y[:6], reference=dtrain)
    with pytest.raises(ValueError, match="categorical_feature comes from the reference"):
        Dataset(df, y, reference=dtrain, categorical_feature=["sex"])
    # a categorical column missing: no longer among the columns
    with pytest.raises(ValueError, match="3 features but the reference Dataset has 4"):
        Dataset(valid.drop(columns=["sex"]), y[:6], reference=dtrain)


def test_prediction_maps_dataframe_levels_by_name(trained):
    df, dtrain, model = trained
    expected = model.predict(codes_of(df))      # a numeric array is taken as codes
    np.testing.assert_array_equal(model.predict(df), expected)
    # the same levels as another dtype / category order give the same predictions
    other = df.copy()
    other["sex"] = pd.Categorical(df.sex, categories=["M", "F"])
    other["dept"] = df.dept.astype(str)
    np.testing.assert_array_equal(model.predict(other), expected)
    np.testing.assert_array_equal(model.predict_cost(df), model.predict_cost(codes_of(df)))
    np.testing.assert_array_equal(model.acquisitions(df), model.acquisitions(codes_of(df)))
    np.testing.assert_array_equal(model.predict(df, output_margin=True),
                                  model.predict(dtrain, output_margin=True))


def test_unseen_and_missing_levels_at_prediction(trained):
    df, _, model = trained
    new = df.head(4).copy()
    new["sex"] = ["X", None, "M", "F"]
    new["dept"] = pd.Categorical(["psych", None, "onco", "neuro"])
    codes = codes_of(df.head(4))
    codes[:, 0] = [2, np.nan, 1, 0]          # unseen: k (2 levels), missing: NaN
    codes[:, 1] = [3, np.nan, 0, 2]
    np.testing.assert_array_equal(model.predict(new), model.predict(codes))


def test_reordered_columns_are_matched_by_name_renamed_ones_refused(trained):
    # as for numeric features (and as the CLI does): the training columns by name
    df, _, model = trained
    np.testing.assert_array_equal(model.predict(df[["dept", "sex", "grade", "age"]]),
                                  model.predict(df))
    with pytest.raises(ValueError, match="feature names differ"):
        model.predict(df.rename(columns={"dept": "department"}))


def test_dataset_with_levels_of_its_own_is_refused(trained):
    df, y = frame(50, seed=3)
    df["sex"] = "M"                 # levels ["M"]: codes of their own
    _, _, model = trained
    with pytest.raises(ValueError, match="reference="):
        model.predict(Dataset(df, y, categorical_feature=["sex", "dept", "grade"]))


def test_save_load_keeps_levels_and_predictions(trained, tmp_path):
    df, _, model = trained
    path = tmp_path / "m.json"
    model.save_model(path)
    doc = json.loads(path.read_text())
    assert doc["categories"] == {"features": [0, 1, 2],
                                 "levels": [["F", "M"], ["onco", "cardio", "neuro"], None]}
    loaded = cbudget.load_model(path)
    assert loaded.categories == model.categories
    np.testing.assert_array_equal(loaded.predict(df), model.predict(df))
    # slices keep them
    np.testing.assert_array_equal(model[:2].predict(df), model[:2].predict(codes_of(df)))


@pytest.mark.parametrize("bad, message", [
    ({"features": [0, 9], "levels": [None, None]}, "feature indices"),
    ({"features": [0], "levels": [None, None]}, "one entry per"),
    ({"features": [1, 0], "levels": [None, None]}, "sorted"),
    ({"features": [0], "levels": [["a", 1]]}, "strings or all numbers"),
    ({"features": [0], "levels": [["a", "a"]]}, "repeat"),
    ({"features": [0]}, "'features' and 'levels'"),
])
def test_corrupt_categories_in_a_file_are_refused(trained, bad, message):
    doc = trained[2].to_dict()
    doc["categories"] = bad
    with pytest.raises(ValueError, match=message):
        model_from_dict(doc)


def test_a_file_without_categories_has_none(trained):
    # a model without categorical features writes no key (as every file before them)
    df, dtrain, _ = trained
    numeric = cbudget.train({"num_leaves": 4}, cbudget.Dataset(
        df.select_dtypes("number"), dtrain.get_label(), categorical_feature=[]), 2)
    doc = numeric.to_dict()
    assert "categories" not in doc
    assert len(model_from_dict(doc).categories) == 0
    # one that has them cannot lose the key: its splits would be on undeclared features
    doc = trained[2].to_dict()
    del doc["categories"]
    with pytest.raises(ValueError, match="not declared categorical"):
        model_from_dict(doc)


def test_on_demand_fetch_returns_levels(trained):
    df, _, model = trained
    fetched = []

    def fetch(features, rows):
        fetched.append(features)
        return df.iloc[rows, features].to_numpy(dtype=object)   # "M", "onco", 3, 51.2

    source = cbudget.FeatureSource(fetch, len(df))
    np.testing.assert_array_equal(model.predict(source), model.predict(df))
    np.testing.assert_array_equal(source.values[source.acquired], codes_of(df)[source.acquired])
    assert fetched
    # known= columns as levels too
    known = cbudget.FeatureSource(fetch, len(df), known={"sex": df.sex.to_numpy(object)})
    np.testing.assert_array_equal(model.predict(known), model.predict(df))


def test_next_features_takes_levels(trained):
    df, dtrain, model = trained
    # the same trees on the codes themselves (a numeric array: no levels)
    on_codes = cbudget.train(PARAMS, Dataset(codes_of(df), dtrain.label,
                                             categorical_feature=[0, 1, 2]),
                             5, verbose_eval=False)
    assert on_codes.categories.levels == [None, None, None]
    for levels, codes in [({}, {}), ({"sex": "M"}, {0: 1.0}),
                          ({"sex": "F", "dept": "onco"}, {0: 0.0, 1: 0.0}),
                          ({"dept": "psych", "grade": 3}, {1: 3.0, 2: 3.0})]:
        assert model.next_features(levels, names=False) == on_codes.next_features(codes)


def test_early_exit_on_a_dataframe(trained):
    df, dtrain, model = trained
    exits = model.copy()
    exits.calibrate_exits(dtrain, 0.05)
    np.testing.assert_array_equal(exits.predict(df), exits.predict(codes_of(df)))
    np.testing.assert_array_equal(exits.predict_cost(df), exits.predict_cost(codes_of(df)))


def test_pyarrow_dictionary_columns():
    pa = pytest.importorskip("pyarrow")
    df, y = frame(60)
    table = pa.table({"sex": pa.array(df.sex).dictionary_encode(), "age": df.age})
    data = Dataset(table, y)
    np.testing.assert_array_equal(data.categorical_features, [0])
    np.testing.assert_array_equal(data.data[:, 0], codes_of(df)[:, 0])


def test_polars_frames():
    pl = pytest.importorskip("polars")
    df, y = frame(60)
    data = Dataset(pl.from_pandas(df[["sex", "age"]]), y)
    np.testing.assert_array_equal(data.data[:, 0], codes_of(df)[:, 0])


# -- errors name the column --------------------------------------------------------------
@pytest.mark.parametrize("make, spec, error, message", [
    (lambda df: df.assign(grade=df.age)[["grade"]], ["grade"], ValueError,
     "'grade'.*not integers"),
    (lambda df: df.assign(grade=df.grade + MAX_LEVELS)[["grade"]], ["grade"], ValueError,
     "'grade'.*below 65536"),
    (lambda df: df.assign(sex=[1 if i % 2 else "a" for i in range(len(df))]), ["sex"],
     TypeError, "'sex' mixes strings and numbers"),
    (lambda df: df.assign(when=pd.Timestamp(0)), ["when"], TypeError, "'when' has dtype"),
    (lambda df: df, ["nope"], ValueError, "no column named 'nope'"),
    (lambda df: df, [7], ValueError, "index 7 is out of range"),
    (lambda df: df, ["sex", 0], ValueError, "'sex' twice"),
    (lambda df: df, "yes", TypeError, "'auto' or a list"),
    (lambda df: df, [True], TypeError, "not a column name or index"),
    (lambda df: df.assign(sex=df.sex), [], TypeError, "'sex' has dtype"),
])
def test_errors_name_the_column(make, spec, error, message):
    df, y = frame(40)
    with pytest.raises(error, match=message):
        Dataset(make(df), y, categorical_feature=spec)


def test_too_many_levels_is_refused():
    levels = np.array([f"l{i}" for i in range(MAX_LEVELS + 1)], dtype=object)
    with pytest.raises(ValueError, match=f"'many' has {MAX_LEVELS + 1} levels"):
        Dataset(pd.DataFrame({"many": levels}), np.zeros(levels.size))


def test_categorical_label_is_refused():
    df, y = frame(20)
    with pytest.raises(TypeError, match="label is a categorical column"):
        Dataset(df, pd.Series(pd.Categorical(np.where(y > 0, "yes", "no"))))
    with pytest.raises(TypeError, match="label must be numeric.*pandas.factorize"):
        Dataset(df, np.where(y > 0, "yes", "no"))


def test_prediction_errors_name_the_column(trained):
    df, _, model = trained
    with pytest.raises(TypeError, match="'sex'.*string levels in training.*number"):
        model.predict(df.assign(sex=1.0))
    with pytest.raises(TypeError, match="'grade'.*non-numeric"):
        model.predict(df.assign(grade="x"))
    numeric = cbudget.train(PARAMS, Dataset(df[["age", "grade"]], np.arange(len(df)) % 2), 1,
                            verbose_eval=False)
    with pytest.raises(TypeError, match="'grade'.*categorical_feature"):
        numeric.predict(df[["age", "grade"]].assign(grade="x"))


@pytest.mark.parametrize("algorithm", sorted(REGISTRY))
def test_every_algorithm_splits_categories_or_refuses_naming_them(algorithm, tmp_path):
    """Each model type either trains on categorical columns (its trees split them; a
    DataFrame predicts by level as its codes do, and after a reload) or refuses, naming
    the columns."""
    df, y = frame(400)
    dtrain = Dataset(df, y)
    params = {"algorithm": algorithm, "objective": "binary:logistic", "verbosity": 0}
    expensive = None
    if REGISTRY[algorithm].takes_expensive_model:
        expensive = cbudget.train(PARAMS, dtrain, 5, verbose_eval=False)
    if not REGISTRY[algorithm].splits_categories:
        with pytest.raises(ValueError, match=f"{algorithm!r} does not split categorical.*"
                                             "'sex', 'dept'"):
            cbudget.train(params, dtrain, 1, verbose_eval=False, expensive_model=expensive)
        return
    model = cbudget.train(params, dtrain, 5, verbose_eval=False, expensive_model=expensive)
    boosters = [getattr(model, part, model) for part in ("gate", "predictor")]
    assert any(tree["categorical"].any() for b in boosters for tree in b.trees)
    expected = model.predict(codes_of(df))
    np.testing.assert_array_equal(model.predict(df), expected)
    model.save_model(tmp_path / "m.json")
    np.testing.assert_array_equal(cbudget.load_model(tmp_path / "m.json").predict(df), expected)


def test_continued_training_needs_the_same_levels(trained):
    df, dtrain, model = trained
    other = Dataset(df, dtrain.label, categorical_feature=["sex", "dept"])
    with pytest.raises(ValueError, match="categorical features or levels differ"):
        cbudget.train(PARAMS, other, 1, xgb_model=model, verbose_eval=False)


def test_categories_class():
    cats = Categories([1, 3], [["a", "b"], None])
    assert cats.levels_of(1) == ["a", "b"] and cats.levels_of(3) is None
    assert Categories.from_dict(cats.to_dict(), 4) == cats
    assert cats.describe(1) == "categorical, 2 levels"
    with pytest.raises(KeyError):
        cats.levels_of(0)


def test_xgboost_export_reads_the_codes(trained, tmp_path):
    # the XGBoost file holds the splits over the codes (tests/test_categorical_interop.py):
    # XGBoost predicts on the matrix prepare_input maps the levels to
    xgb = pytest.importorskip("xgboost")
    df, _, model = trained
    model.save_model(tmp_path / "m.json", format="xgboost")
    loaded = xgb.Booster(model_file=str(tmp_path / "m.json"))
    assert loaded.feature_types[:3] == ["c", "c", "c"]
    X = model.prepare_input(df)
    dmatrix = xgb.DMatrix(X, feature_names=loaded.feature_names,
                          feature_types=loaded.feature_types, enable_categorical=True)
    np.testing.assert_allclose(loaded.predict(dmatrix, output_margin=True),
                               model.predict(df, output_margin=True).ravel(), atol=1e-5)


def test_cost_report_names_categorical_features(trained):
    df, _, model = trained
    report = model.cost_report(df)
    assert report.categorical == {"sex": "categorical, 2 levels",
                                  "dept": "categorical, 3 levels", "grade": "categorical"}
    text = str(report)
    for name in model.used_feature_names():
        if name in report.categorical:
            assert f"{name} ({report.categorical[name]}): acquired" in text
    # one feature each: paid once per input, whatever the level
    np.testing.assert_array_equal(report.acquisition_rate,
                                  model.acquisitions(codes_of(df)).mean(axis=0))


def test_acquisition_plot_names_categorical_features(trained):
    pytest.importorskip("matplotlib")
    import matplotlib
    matplotlib.use("Agg")
    df, _, model = trained
    from cbudget import plotting
    ax = plotting.plot_acquisition(model, df)
    labels = [t.get_text() for t in ax.get_yticklabels()]
    assert "sex (categorical)" in labels or "dept (categorical)" in labels
    assert "age" in labels or all("(categorical)" in label for label in labels)
    matplotlib.pyplot.close("all")


def test_validation_levels_unseen_in_training_are_warned_about():
    df, y = frame()
    dtrain = Dataset(df, y, categorical_feature=["sex", "dept", "grade"])
    valid = df.copy()
    valid["dept"] = valid["dept"].astype(object)
    valid.loc[valid.index[:3], "dept"] = "psych"           # not a training level
    with pytest.warns(UserWarning, match="3 of .* rows of categorical column 'dept' hold "
                                         "levels not in the training data"):
        dvalid = Dataset(valid, y, reference=dtrain)
    assert np.all(dvalid.data[:3, 1] == len(dtrain.categories.levels[1]))
    with warnings.catch_warnings():
        warnings.simplefilter("error")                      # seen levels: no warning
        Dataset(df, y, reference=dtrain)


def test_plot_tree_shows_level_names(trained):
    from cbudget.plotting import _ensemble_nodes
    df, _, model = trained
    shown = []
    for t, tree in enumerate(model.trees):
        nodes, _ = _ensemble_nodes(model, t, None, 0)
        for k in np.flatnonzero(tree["categorical"]):
            name = model.feature_names[tree[k]["feature"]]
            levels = model.categories.levels_of(int(tree[k]["feature"]))
            if levels is not None:
                shown.append(nodes[k].text)
                inside = nodes[k].text.split("{")[1].split("}")[0].split(", ")
                assert nodes[k].text.startswith(f"{name} in {{")
                assert set(inside) <= {str(level) for level in levels}
    assert shown        # the model splits a string column by its levels
