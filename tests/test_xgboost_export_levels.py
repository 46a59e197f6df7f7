"""The XGBoost export writes its categorical features' levels (issue 44): XGBoost 3.1+'s
``cats`` section, with which XGBoost re-codes a DataFrame's category columns by level,
so a DataFrame whose categories are listed in another order than the model's, or a
subset of them, predicts as in cbudget. XGBoost 2.1 (the oldest supported) loads the
same files and reads the codes as before."""
import json

import numpy as np
import pytest

import cbudget
from cbudget.interop.ubjson import decode

pd = pytest.importorskip("pandas")
xgb = pytest.importorskip("xgboost")

reads_levels = pytest.mark.skipif(
    tuple(int(v) for v in xgb.__version__.split(".")[:2]) < (3, 1),
    reason="XGBoost < 3.1 does not re-code a DataFrame by the model's levels")

# XGBoost sums in float32
FLOAT32 = {"rtol": 1e-5, "atol": 1e-5}
STRINGS = ["b", "e", "a", "cc", "d", "jp"]      # not in sorted order
INTEGERS = [30, 7, -2, 11]


def _model(extra=None, seed=3, n=600):
    """A model with categorical splits on string and integer levels (``extra``: more
    category columns, unused by the target), and its training DataFrame."""
    rng = np.random.default_rng(seed)
    df = pd.DataFrame({"x": rng.normal(size=n),
                       "s": pd.Categorical(rng.choice(STRINGS, n), categories=STRINGS),
                       "i": pd.Categorical(rng.choice(INTEGERS, n), categories=INTEGERS)})
    for name, levels in (extra or {}).items():
        df[name] = pd.Categorical(rng.choice(levels, n), categories=levels)
    df.loc[rng.random(n) < 0.05, "s"] = np.nan
    y = (df.x + 2.0 * df.s.isin(["e", "cc", "jp"]) + 1.5 * df.i.isin([7, 11])
         + 0.1 * rng.normal(size=n))
    params = {"num_leaves": 8, "max_cat_to_onehot": 2, "min_data_per_group": 10,
              "cat_smooth": 1.0}
    model = cbudget.train(params, cbudget.Dataset(df, np.asarray(y, dtype=float),
                                                  categorical_feature=list(df)[1:]), 6)
    assert sum(int(t["categorical"].sum()) for t in model.trees) >= 4
    return model, df


def _recoded(df, seed):
    """``df`` reshuffled with its category columns listing their levels in other
    orders (reversed strings, integers permuted) and some missing values."""
    rng = np.random.default_rng(seed)
    test = df.sample(len(df), random_state=seed).reset_index(drop=True)
    s = test["s"].astype(object)
    s[rng.random(len(s)) < 0.1] = None
    test["s"] = pd.Categorical(s, categories=STRINGS[::-1])
    test["i"] = pd.Categorical(test["i"].astype(object), categories=[11, 30, 7, -2])
    return test


def _xgb_frame_margin(booster, frame):
    return booster.predict(xgb.DMatrix(frame, enable_categorical=True), output_margin=True)


@reads_levels
@pytest.mark.parametrize("suffix", ["json", "ubj"])
def test_xgboost_export_predicts_dataframes_by_level(suffix, tmp_path):
    model, df = _model()
    path = tmp_path / f"model.{suffix}"
    model.save_model(path, format="xgboost")
    booster = xgb.Booster(model_file=str(path))
    test = _recoded(df, 4)
    np.testing.assert_allclose(_xgb_frame_margin(booster, test),
                               model.predict(test, output_margin=True).ravel(), **FLOAT32)
    # a DataFrame listing a subset of the levels, in yet another order
    subset = test[test["s"].isin(["a", "jp"]) | test["s"].isna()].copy()
    subset["s"] = pd.Categorical(subset["s"].astype(object), categories=["jp", "a"])
    subset["i"] = pd.Categorical(subset["i"].astype(object), categories=[-2, 7, 30, 11])
    assert 0 < len(subset) < len(test)
    np.testing.assert_allclose(_xgb_frame_margin(booster, subset),
                               model.predict(subset, output_margin=True).ravel(), **FLOAT32)
    # XGBoost refuses a level the model has not seen (cbudget sends it right)
    unseen = test.assign(s=pd.Categorical(["zz"] * len(test)))
    with pytest.raises(xgb.core.XGBoostError, match="not in the training set"):
        _xgb_frame_margin(booster, unseen)


@pytest.mark.parametrize("suffix", ["json", "ubj"])
def test_xgboost_export_with_levels_reads_codes(suffix, tmp_path):
    """Every supported XGBoost (2.1 too: CI runs this file on it) loads a file with
    levels and predicts the codes as cbudget does; Treelite refuses the levels and
    loads the file written without them."""
    model, df = _model()
    path = tmp_path / f"model.{suffix}"
    model.save_model(path, format="xgboost")
    X = model.prepare_input(_recoded(df, 5))
    X[:5, 1] = len(STRINGS)                 # an unseen level's code
    expected = model.predict(X, output_margin=True).ravel()
    booster = xgb.Booster(model_file=str(path))
    dmatrix = xgb.DMatrix(X, feature_types=booster.feature_types, enable_categorical=True,
                          feature_names=booster.feature_names)
    np.testing.assert_allclose(booster.predict(dmatrix, output_margin=True), expected,
                               **FLOAT32)
    treelite = pytest.importorskip("treelite")
    choice = "json" if suffix == "json" else "ubjson"
    with pytest.raises(treelite.TreeliteError, match="categorical encoder"):
        treelite.frontend.load_xgboost_model(str(path), format_choice=choice)
    model.save_model(path, format="xgboost", levels=False)
    loaded = treelite.frontend.load_xgboost_model(str(path), format_choice=choice)
    np.testing.assert_allclose(treelite.gtil.predict(loaded, X.astype(np.float32),
                                                     pred_margin=True).ravel(),
                               expected, **FLOAT32)


@pytest.mark.parametrize("suffix", ["json", "ubj"])
def test_xgboost_export_levels_round_trip(suffix, tmp_path):
    """The file's ``cats`` section: XGBoost's layout (per feature, strings as bytes cut
    at offsets, integers as int64 values; the levels' sorted order), read back by
    from_xgboost; levels XGBoost cannot hold are left as codes."""
    extra = {"f": [0.5, 1.5, 2.5], "u": ["é", "a", "日本"]}
    model, _ = _model(extra)
    path = tmp_path / f"model.{suffix}"
    model.save_model(path, format="xgboost")
    raw = path.read_bytes()
    document = decode(raw) if suffix == "ubj" else json.loads(raw)
    cats = document["learner"]["gradient_booster"]["model"]["cats"]
    enc = cats["enc"]
    assert len(enc) == 5 and [len(e["values"]) for e in enc] == [0, 8, 4, 0, 0]
    assert bytes(list(enc[1]["values"])) == b"beaccdjp"
    assert list(enc[1]["offsets"]) == [0, 1, 2, 3, 5, 6, 8]
    assert enc[2]["type"] == 15 and list(enc[2]["values"]) == INTEGERS
    assert list(cats["feature_segments"]) == [0, 0, 6, 10, 10, 10]
    assert list(cats["sorted_idx"]) == [2, 0, 3, 4, 1, 5, 2, 1, 3, 0]
    back = cbudget.from_xgboost(path)
    assert back.categories.to_dict() == {"features": [1, 2, 3, 4],
                                         "levels": [STRINGS, INTEGERS, None, None]}


def test_xgboost_export_without_levels_has_no_cats(tmp_path):
    """A model of integer codes only writes no ``cats`` section, as XGBoost would."""
    rng = np.random.default_rng(6)
    X = np.column_stack([rng.normal(size=300), rng.integers(0, 5, 300)]).astype(float)
    y = X[:, 0] + (X[:, 1] % 2)
    model = cbudget.train({"num_leaves": 4, "max_cat_to_onehot": 2},
                          cbudget.Dataset(X, y, categorical_feature=[1]), 3)
    path = tmp_path / "model.json"
    model.save_model(path, format="xgboost")
    assert "cats" not in json.loads(path.read_text())["learner"]["gradient_booster"]["model"]


def test_from_xgboost_reads_non_ascii_levels(tmp_path):
    """XGBoost writes a string level's UTF-8 bytes as int8, non-ASCII ones negative."""
    model, _ = _model()
    path = tmp_path / "model.json"
    model.save_model(path, format="xgboost")
    document = json.loads(path.read_text())
    signed = [b - 256 if b > 127 else b for b in "é".encode()]
    document["learner"]["gradient_booster"]["model"]["cats"]["enc"][1] = {
        "offsets": [0, 1, 2, 3, 5, 6, 8], "values": list(b"bea") + signed + list(b"djp")}
    path.write_text(json.dumps(document))
    levels = cbudget.from_xgboost(path).categories.levels_of(1)
    assert levels == ["b", "e", "a", "é", "d", "jp"]
