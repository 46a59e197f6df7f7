"""Categorical features used as a pandas, scikit-learn or LightGBM user would: inputs
that once gave a crash, an unclear error or a silently wrong answer (issue 44's review;
docs/architecture.md, "Categorical features")."""
import json
import warnings

import numpy as np
import pytest

import cbudget
from cbudget import Dataset
from cbudget.model_io import model_from_dict

pd = pytest.importorskip("pandas")

PARAMS = {"objective": "reg:squarederror", "max_depth": 3, "verbosity": 0}
LEVELS = np.array(["A", "B", "10", "007", "x y"])
EFFECT = np.array([2.0, -2.0, 1.0, -1.0, 0.5])


def frame(n=300, seed=0):
    """A string column whose levels partly look like numbers, a number, and the label
    (mostly the level's effect)."""
    rng = np.random.default_rng(seed)
    k = rng.integers(0, LEVELS.size, n)
    df = pd.DataFrame({"g": LEVELS[k], "x": rng.normal(size=n)})
    return df, EFFECT[k] + 0.1 * df.x.to_numpy()


@pytest.fixture(scope="module")
def trained():
    df, y = frame()
    return df, y, cbudget.train(PARAMS, Dataset(df, y), 5, verbose_eval=False)


# -- every value of a categorical column missing -----------------------------------------
@pytest.mark.parametrize("missing", [None, np.nan, pd.NA])
def test_a_column_of_missing_values_only_predicts_the_missing_way(trained, missing):
    """One row to predict whose level is missing (so no value of the column is present)
    goes the missing way, as in a batch where other rows have levels."""
    df, _, model = trained
    row = pd.DataFrame({"g": pd.Series([missing], dtype=object), "x": [0.3]})
    batch = pd.DataFrame({"g": pd.Series([missing, "A"], dtype=object), "x": [0.3, 0.3]})
    np.testing.assert_array_equal(model.predict(row), model.predict(batch)[:1])
    # the same row asked for on demand, or known up front
    assert model.next_features({"g": missing, "x": 0.3}) == []
    source = cbudget.FeatureSource(
        lambda features, rows: row.iloc[rows, features].to_numpy(dtype=object), 1)
    np.testing.assert_array_equal(model.predict(source), model.predict(batch)[:1])


def test_training_on_a_categorical_column_without_a_level():
    df, y = frame()
    df["g"] = pd.Series([None] * len(df), dtype=object)
    data = Dataset(df, y, categorical_feature=["g"])
    assert data.categories.levels == [[]]
    assert np.isnan(data.data[:, 0]).all()
    model = cbudget.train(PARAMS, data, 3, verbose_eval=False)
    again = model_from_dict(model.to_dict())
    assert again.categories == data.categories
    np.testing.assert_array_equal(again.predict(df), model.predict(df))


def test_dask_partition_without_a_level_is_coded_as_missing(dask_client):
    """A partition whose categorical column holds no level (all None) is coded as
    missing values, as in a Dataset of all the rows (its coding raised IndexError)."""
    dd = pytest.importorskip("dask.dataframe")
    from cbudget.dask import DaskDataset
    from cbudget.dask import train as dask_train

    df, y = frame()
    df["g"] = df.g.astype(object)
    df.loc[len(df) // 2:, "g"] = None
    data = DaskDataset(dask_client, dd.from_pandas(df, npartitions=2, sort=False),
                       dd.from_pandas(pd.Series(y), npartitions=2, sort=False))
    model = dask_train(dask_client, PARAMS, data, 3)
    local = cbudget.train(PARAMS, Dataset(df, y), 3, verbose_eval=False)
    assert model.categories == local.categories
    np.testing.assert_allclose(model.predict(df), local.predict(df), rtol=1e-12)


# -- NumPy object arrays (a ColumnTransformer's output), pandas' NA, values on demand ----
def test_estimators_predict_on_the_array_of_levels_they_were_fitted_on():
    """An object array of strings (what a ColumnTransformer outputs by default) is read
    by level at prediction as at fit, as HistGradientBoosting does: not refused with
    "could not convert string to float"."""
    from sklearn.compose import make_column_transformer
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    from cbudget.sklearn import GBDTRegressor

    df, y = frame()
    on_frame = GBDTRegressor(n_estimators=5).fit(df, y).predict(df)
    levels = df.to_numpy(dtype=object)
    for spec in ([0], "from_dtype"):
        estimator = GBDTRegressor(n_estimators=5, categorical_features=spec).fit(levels, y)
        np.testing.assert_array_equal(estimator.is_categorical_, [True, False])
        np.testing.assert_array_equal(estimator.predict(levels), on_frame)
    # a list of rows, as validate_data makes it an array (of strings)
    rows = levels.tolist()
    estimator = GBDTRegressor(n_estimators=5, categorical_features=[0]).fit(rows, y)
    np.testing.assert_array_equal(estimator.predict(rows), on_frame)
    # a ColumnTransformer's output: numbers and strings in one object array
    def columns():
        return make_column_transformer((StandardScaler(), ["x"]), ("passthrough", ["g"]))

    pipeline = make_pipeline(columns(), GBDTRegressor(n_estimators=5)).fit(df, y)
    as_frame = make_pipeline(columns().set_output(transform="pandas"),
                             GBDTRegressor(n_estimators=5)).fit(df, y)
    np.testing.assert_array_equal(pipeline.predict(df), as_frame.predict(df))


def test_object_array_of_a_frame_with_nullable_columns_reads_pandas_na_as_missing():
    """``to_numpy(dtype=object)`` of a frame with a string column and nullable ``Int64``
    columns (a ColumnTransformer's output) holds pandas' NA: missing, as in the frame,
    for a numeric and an integer-coded column, not "holds non-numeric values"."""
    from cbudget.sklearn import GBDTRegressor

    df, y = frame()
    df["x"] = pd.array(np.round(df.x * 10), dtype="Int64")
    df["code"] = pd.array(np.arange(len(df)) % 4, dtype="Int64")
    df.loc[::7, ["x", "code"]] = pd.NA
    levels = df.to_numpy(dtype=object)
    on_frame = Dataset(df, y, categorical_feature=["g", "code"])
    on_array = Dataset(levels, y, categorical_feature=[0, 2])
    np.testing.assert_array_equal(on_array.data, on_frame.data)
    assert np.isnan(on_array.data[::7, 1:]).all()
    estimator = GBDTRegressor(n_estimators=3, categorical_features=[0, 2])
    np.testing.assert_array_equal(estimator.fit(levels, y).predict(levels),
                                  estimator.fit(df, y).predict(df))
    # numbers only (no column of levels): a numeric model's input, NA missing too
    numbers = df[["x", "code"]]
    model = cbudget.train(PARAMS, Dataset(numbers, y), 2, verbose_eval=False)
    np.testing.assert_array_equal(model.predict(numbers.to_numpy(dtype=object)),
                                  model.predict(numbers))


def test_a_fetch_of_levels_and_numbers_reads_pandas_na_as_missing():
    """A fetch returning a frame's rows as objects (levels of one feature, a nullable
    number and nullable integer codes: pandas' NA among them) predicts as the frame."""
    df, y = frame()
    df["code"] = pd.array(np.arange(len(df)) % 4, dtype="Int64")
    model = cbudget.train(PARAMS, Dataset(df, y + df.code.to_numpy(float),
                                          categorical_feature=["g", "code"]), 5,
                          verbose_eval=False)
    df["x"] = df.x.astype("Float64")
    df.loc[::5, ["x", "code"]] = pd.NA
    for fetch in (lambda features, rows: df.iloc[rows, features],
                  lambda features, rows: df.iloc[rows, features].to_numpy(dtype=object)):
        source = cbudget.FeatureSource(fetch, len(df))
        np.testing.assert_array_equal(model.predict(source), model.predict(df))
    # and known up front, as the frame's columns (objects: as pandas < 3 gives them)
    known = {name: df[name].to_numpy(dtype=object) for name in df.columns}
    source = cbudget.FeatureSource(lambda features, rows: None, len(df), known=known)
    np.testing.assert_array_equal(model.predict(source), model.predict(df))


def test_known_levels_of_a_wrong_length_are_refused_by_their_shape(trained):
    df, _, model = trained
    source = cbudget.FeatureSource(lambda features, rows: None, len(df),
                                   known={"g": df.g.to_numpy()[:-1]})
    with pytest.raises(ValueError, match=rf"known\['g'\] must have shape \({len(df)},\), "
                                         rf"got \({len(df) - 1},\)"):
        model.predict(source)


# -- which columns, which levels: errors that say what to do -----------------------------
def test_a_categorical_feature_named_by_a_repeated_column_name_is_refused_as_such():
    """Not taken as the last column of that name (the other then reported as "not a
    categorical feature (those are ['g'])")."""
    df, y = frame()
    twice = pd.concat([df, df.g], axis=1)
    with pytest.raises(ValueError, match=r"2 columns are named 'g' \(indices \[0, 2\]\)"):
        Dataset(twice, y, categorical_feature=["g"])


def test_levels_json_cannot_hold_are_refused_with_a_remedy():
    """A pandas.cut column (categories of Intervals) is refused naming the column and
    saying how to make it usable (LightGBM fails on it with "Circular reference")."""
    rng = np.random.default_rng(0)
    age = rng.uniform(0, 90, 100)
    df = pd.DataFrame({"band": pd.cut(age, [0, 18, 40, 65, 90]), "x": age})
    with pytest.raises(TypeError, match=r"column 'band': level Interval\(0, 18.*"
                                        r"astype\(\"string\"\)"):
        Dataset(df, age)
    as_text = Dataset(df.assign(band=df.band.astype("string")), age)
    assert as_text.categories.levels[0] == ["(0, 18]", "(18, 40]", "(40, 65]", "(65, 90]"]


def test_too_many_categories_says_how_many_are_unused():
    """A frame filtered from a larger one keeps its dtype's categories: the levels
    counted are those, and the error says how many the column does not use."""
    from cbudget.categories import MAX_LEVELS

    many = pd.Categorical(["l0", "l1"] * 50, categories=[f"l{i}" for i in range(MAX_LEVELS + 1)])
    with pytest.raises(ValueError, match=rf"'many' has {MAX_LEVELS + 1} levels \({MAX_LEVELS - 1} "
                                         r"of them unused: \.cat\.remove_unused_categories"):
        Dataset(pd.DataFrame({"many": many}), np.zeros(100))
    kept = Dataset(pd.DataFrame({"many": many.remove_unused_categories()}), np.zeros(100))
    assert kept.categories.levels == [["l0", "l1"]]


def test_evaluation_data_with_levels_of_its_own_is_scored_by_level():
    """Built without reference=, its codes number its own levels: they were scored as
    they are (wrong metrics, a wrong early-stopping round). Training now codes it with
    the training levels, as LightGBM sets the reference of its validation data: the same
    scores as with reference=, a level training lacks on the "other" side (warned)."""
    df, y = frame()
    dtrain = Dataset(df, y)
    later = df.iloc[:60].assign(g=np.where(df.g.iloc[:60] == "A", "B", df.g.iloc[:60]))
    later.loc[later.index[:3], "g"] = "never seen"
    own = Dataset(later, y[:60])
    assert own.categories != dtrain.categories
    with pytest.warns(UserWarning, match="hold levels not in the training data"):
        shared = Dataset(later, y[:60], reference=dtrain)
    results = []
    for data in (own, shared):
        result = {}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            model = cbudget.train(PARAMS, dtrain, 3, evals=[(data, "valid")],
                                  evals_result=result, verbose_eval=False)
        results.append(result["valid"]["rmse"])
    rmse = np.sqrt(np.mean((model.predict(later) - y[:60]) ** 2))
    assert results[0] == results[1] and results[1][-1] == pytest.approx(rmse, rel=1e-9)
    codes = Dataset(later.assign(g=1.0), y[:60])
    with pytest.raises(ValueError, match="evaluation data 'valid': the categorical features "
                                         "differ.*reference=dtrain"):
        cbudget.train(PARAMS, dtrain, 1, evals=[(codes, "valid")], verbose_eval=False)


def test_continuing_a_model_of_other_levels_says_how_to_build_dtrain(trained):
    """An imported model's levels in its own order (a pandas category) against dtrain's
    sorted strings: refused, saying to build dtrain with the model's categories, which
    then continues it."""
    df, y, _ = trained
    ordered = df.assign(g=pd.Categorical(df.g, categories=LEVELS.tolist()))
    model = cbudget.train(PARAMS, Dataset(ordered, y), 2, verbose_eval=False)
    with pytest.raises(ValueError, match=r"categorical_feature= the model's categories"):
        cbudget.train(PARAMS, Dataset(df, y), 1, xgb_model=model, verbose_eval=False)
    more = cbudget.train(PARAMS, Dataset(df, y, categorical_feature=model.categories), 1,
                         xgb_model=model, verbose_eval=False)
    np.testing.assert_array_equal(more[:2].predict(df), model.predict(df))


# -- the command line: CSV cells of levels that look like numbers ------------------------
def run_cli(argv):
    """``cbudget``'s exit status (argparse exits too)."""
    from cbudget.__main__ import main

    try:
        return main(argv)
    except SystemExit as exc:
        return exc.code


def test_cli_reads_levels_that_look_like_numbers_as_levels(tmp_path, capsys):
    """A CSV whose cells of a categorical column are all "10" and "007" (levels of the
    training file, which had "A" too) is read as those levels, not as the numbers 10
    and 7 (refused as numbers, or "007" lost); an empty cell is missing."""
    df, y = frame()
    df.assign(y=y).to_csv(tmp_path / "train.csv", index=False)
    later = pd.DataFrame({"g": ["10", "007", "10", None], "x": [0.1, -0.2, 0.3, 0.0]})
    later.to_csv(tmp_path / "new.csv", index=False)
    later.assign(y=[1.0, -1.0, 1.0, 0.0]).to_csv(tmp_path / "valid.csv", index=False)
    model_path, out = tmp_path / "m.json", tmp_path / "p.csv"
    assert run_cli(["train", str(tmp_path / "train.csv"), "--label", "y", "--rounds", "3",
                    "--valid", str(tmp_path / "valid.csv"), "--quiet",
                    "-o", str(model_path)]) == 0
    model = cbudget.load_model(model_path)
    assert model.categories.levels == [sorted(LEVELS.tolist())]
    assert run_cli(["predict", str(model_path), str(tmp_path / "new.csv"),
                    "-o", str(out)]) == 0
    np.testing.assert_allclose(pd.read_csv(out)["prediction"], model.predict(later),
                               rtol=1e-15)
    capsys.readouterr()
    assert run_cli(["report", str(model_path), str(tmp_path / "new.csv"), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["n_inputs"] == 4


def test_cli_infers_a_large_csv_column_from_all_its_rows(tmp_path):
    """pandas' default reads a CSV by chunks of rows (2**18) and types each chunk: a
    column of levels whose first chunk looks numeric ("1", "2") came out as numbers
    and strings ("A") at once, refused as mixing both."""
    n = 2 ** 18 + 2000
    g = np.where(np.arange(n) < n - 1000, np.where(np.arange(n) % 2, "1", "2"), "A")
    pd.DataFrame({"g": g, "y": (g == "A") * 1.0}).to_csv(tmp_path / "big.csv", index=False)
    model_path = tmp_path / "m.json"
    assert run_cli(["train", str(tmp_path / "big.csv"), "--label", "y", "--rounds", "1",
                    "--quiet", "-o", str(model_path)]) == 0
    assert cbudget.load_model(model_path).categories.levels == [["1", "2", "A"]]


# -- plots of levels ---------------------------------------------------------------------
def test_plots_draw_levels_and_names_with_dollar_signs_as_they_are():
    """Price bands ("$10-$20") are common levels: matplotlib must not read a pair of "$"
    as mathtext (which fails to draw on what is not valid mathtext)."""
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    from cbudget.plotting import plot_acquisition, plot_tree

    rng = np.random.default_rng(0)
    bands = np.array(["$10-$20", "$x^$", "under $10"])
    k = rng.integers(0, bands.size, 300)
    df = pd.DataFrame({"band": bands[k], "$cost^$": rng.normal(size=300)})
    model = cbudget.train(PARAMS, Dataset(df, EFFECT[k] + df["$cost^$"]), 2,
                          verbose_eval=False)
    tree = next(t for t, tree in enumerate(model.trees) if tree["categorical"].any())
    for ax, name in ((plot_tree(model, tree), "band in {"),
                     (plot_acquisition(model, df), "$cost^$")):
        ax.figure.canvas.draw()
        assert any(t.get_text().startswith(name) and "$" in t.get_text()
                   for t in ax.texts + ax.get_yticklabels())
        matplotlib.pyplot.close(ax.figure)


def test_a_split_shows_each_level_as_one():
    """A level holding ", " (or empty) is quoted in the split's set, which otherwise
    read as more (or fewer) levels than it holds."""
    from cbudget.plotting import to_graphviz

    rng = np.random.default_rng(0)
    names = np.array(["a, b", "", "c", " d"])
    k = rng.integers(0, names.size, 400)
    df = pd.DataFrame({"g": names[k]})
    model = cbudget.train({**PARAMS, "max_cat_to_onehot": 1, "min_data_per_group": 5,
                           "cat_smooth": 1}, Dataset(df, np.array([3.0, 2.0, -2.0, -3.0])[k]),
                          1, verbose_eval=False)
    dot = to_graphviz(model, 0)
    assert "g in {'', 'a, b'}" in dot or "g in {' d', 'c'}" in dot, dot


# -- model files and imports whose levels do not fit the splits --------------------------
def test_a_file_whose_levels_are_fewer_than_its_splits_codes_is_refused(trained):
    """With levels dropped from the file, the unseen-level code would be one a split
    sends left (and levels would map to other codes than the trees were grown on)."""
    df, _, model = trained
    doc = model.to_dict()
    assert model_from_dict(doc).categories == model.categories
    codes = [c for tree in doc["trees"] if "categorical" in tree
             for c in np.flatnonzero(np.unpackbits(np.asarray(
                 tree["cat_threshold"], dtype="<u4").view(np.uint8), bitorder="little"))]
    doc["categories"]["levels"][0] = doc["categories"]["levels"][0][:max(codes)]
    with pytest.raises(ValueError, match=rf"invalid cbudget model: .*sends code {max(codes)} "
                                         rf"left, but categorical feature 'g' has "
                                         rf"{max(codes)} levels"):
        model_from_dict(doc)


def test_lightgbm_levels_paired_with_another_feature_are_refused_at_import():
    """category_columns= naming the integer-coded feature: its splits' codes (up to 9)
    are beyond the 3 levels of the pandas column, refused when importing (the model
    would be refused when loaded once saved, and maps levels wrongly meanwhile)."""
    lgb = pytest.importorskip("lightgbm")
    rng = np.random.default_rng(0)
    k, c = rng.integers(0, 10, 2000), rng.integers(0, 3, 2000)
    df = pd.DataFrame({"k": k, "c": pd.Categorical(np.array(list("abc"))[c])})
    y = 2 * rng.normal(size=10)[k] + np.array([1.0, -1.0, 0.0])[c]
    booster = lgb.train({"objective": "regression", "verbose": -1, "num_leaves": 8,
                         "min_data_per_group": 5, "cat_smooth": 1},
                        lgb.Dataset(df, y, categorical_feature=["k", "c"]), 3)
    np.testing.assert_allclose(cbudget.from_lightgbm(booster, category_columns=["c"])
                               .predict(df), booster.predict(df), rtol=1e-12)
    with pytest.raises(ValueError, match=r"sends code \d+ left, but categorical feature 'k' "
                                         r"has 3 levels .*category_columns="):
        cbudget.from_lightgbm(booster, category_columns=["k"])
