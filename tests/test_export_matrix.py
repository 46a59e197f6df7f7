"""Every served format against cbudget (issue 46's matrix): gbdt, cegb and greedy_miser x
binary, multiclass and regression, on clean, NaN and repeated-decimal float64 inputs, each
saved in XGBoost's, LightGBM's and ONNX's formats and read by the library that serves it
(XGBoost, Treelite, LightGBM, onnxruntime). The margins must equal cbudget's to the
rounding of the format's arithmetic (float32 sums for XGBoost, Treelite and a float32
ONNX graph; float64 for LightGBM and a float64 ONNX graph); a row whose margins differ
by more has been routed differently, which only a row with a value within float32
rounding of a threshold may be, and only in a format that rounds its inputs to float32."""
import warnings

import numpy as np
import pytest

import cbudget
from cbudget.interop.to_xgboost import save_xgboost

xgb = pytest.importorskip("xgboost")
lgb = pytest.importorskip("lightgbm")
treelite = pytest.importorskip("treelite")
ort = pytest.importorskip("onnxruntime")

F32_EPS = float(np.finfo(np.float32).eps)
OBJECTIVES = {"binary": {"objective": "binary:logistic"},
              "multiclass": {"objective": "multi:softprob", "num_class": 3},
              "regression": {"objective": "reg:squarederror"}}
ALGORITHMS = {"gbdt": {}, "cegb": {"cost_tradeoff": 0.01}, "greedy_miser": {"cost_tradeoff": 0.01}}
N_FEATURES = 5


def _labels(X, task, rng):
    signal = np.nan_to_num(X[:, 0]) + 0.5 * np.nan_to_num(X[:, 1]) - np.nan_to_num(X[:, 3]) ** 2
    noisy = signal + 0.3 * rng.normal(size=len(X))
    if task == "binary":
        return (noisy > 0).astype(float)
    if task == "multiclass":
        return np.digitize(noisy, [-0.5, 0.5]).astype(float)
    return noisy


@pytest.fixture(scope="module")
def models():
    """The nine models, trained on data with missing values and repeated values."""
    rng = np.random.default_rng(46)
    X = rng.normal(size=(800, N_FEATURES))
    X[:, 1] = np.round(X[:, 1], 1)
    X[rng.random(X.shape) < 0.1] = np.nan
    trained = {}
    for task, objective in OBJECTIVES.items():
        data = cbudget.Dataset(X, _labels(X, task, rng),
                               feature_costs=[1.0, 2.0, 4.0, 8.0, 0.5])
        for algorithm, extra in ALGORITHMS.items():
            trained[algorithm, task] = cbudget.train(
                {**objective, **extra, "algorithm": algorithm, "num_leaves": 8,
                 "min_data_in_leaf": 5, "n_jobs": 1}, data, 15, verbose_eval=False)
    return trained


def _inputs(model, kind):
    """Float64 rows of ``kind``, with probes at, and one ulp either side of, every
    threshold of the model (the rows a float32 format may route otherwise)."""
    rng = np.random.default_rng(["clean", "nan", "decimals"].index(kind))
    X = rng.normal(size=(400, N_FEATURES))
    if kind == "nan":
        X[rng.random(X.shape) < 0.25] = np.nan
    elif kind == "decimals":
        X = np.round(X * 3, 2)      # values such as 0.1, 1.37: no float32 equals them
    thresholds = [(int(t["feature"][n]), float(t["threshold"][n]))
                  for t in model.trees for n in np.flatnonzero(t["left"] != -1)]
    probes = np.repeat(X[:1], 3 * len(thresholds), axis=0)
    for i, (feature, threshold) in enumerate(thresholds):
        probes[3 * i:3 * i + 3, feature] = [np.nextafter(threshold, -np.inf), threshold,
                                            np.nextafter(threshold, np.inf)]
    return np.vstack([X, probes]), thresholds


def _near_a_threshold(X, thresholds):
    """Rows with a value that float32 rounding moves across a threshold of its feature
    (at or within one float32 step of it)."""
    near = np.zeros(len(X), dtype=bool)
    for feature, threshold in thresholds:
        column = X[:, feature]
        with np.errstate(invalid="ignore"):
            near |= (column <= threshold) != (column.astype(np.float32) <= threshold)
            near |= np.abs(column - threshold) <= 2 * F32_EPS * abs(threshold)
    return near


def _served_margins(model, fmt, X, tmp_path):
    """The margins (n, n_outputs) the library that serves ``fmt`` computes from ``X``."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", cbudget.ExportWarning)
        if fmt == "xgboost":
            model.save_model(tmp_path / "m.json", format="xgboost")
            served = xgb.Booster(model_file=str(tmp_path / "m.json")).inplace_predict(
                X, predict_type="margin")
        elif fmt == "treelite":
            save_xgboost(model, tmp_path / "t.json", levels=False)
            loaded = treelite.frontend.load_xgboost_model(str(tmp_path / "t.json"))
            served = treelite.gtil.predict(loaded, X.astype(np.float32), pred_margin=True)
        elif fmt == "lightgbm":
            model.save_model(tmp_path / "m.txt", format="lightgbm")
            served = lgb.Booster(model_file=str(tmp_path / "m.txt")).predict(
                X, raw_score=True)
        else:
            dtype = "float32" if fmt == "onnx-float32" else "float64"
            model.save_model(tmp_path / "m.onnx", format="onnx", dtype=dtype)
            session = ort.InferenceSession(str(tmp_path / "m.onnx"),
                                           providers=["CPUExecutionProvider"])
            served = session.run(["margin"], {"input": X.astype(dtype)})[0]
    return np.asarray(served, dtype=np.float64).reshape(len(X), -1)


def _rounding(model, float32):
    """How far a format's margin may be from cbudget's without a routing difference:
    the float32 rounding of the leaf sums (each leaf value and each partial sum), or
    float64's for a float64 format."""
    eps = F32_EPS if float32 else float(np.finfo(np.float64).eps)
    largest = np.abs(np.asarray(model.base_score)).max() + sum(
        np.abs(t["value"][t["left"] == -1]).max() for t in model.trees)
    return 2 * eps * len(model.trees) * largest


@pytest.mark.parametrize("fmt", ["xgboost", "treelite", "lightgbm", "onnx", "onnx-float32"])
@pytest.mark.parametrize("kind", ["clean", "nan", "decimals"])
@pytest.mark.parametrize("task", list(OBJECTIVES))
@pytest.mark.parametrize("algorithm", list(ALGORITHMS))
def test_served_formats_predict_as_cbudget(models, algorithm, task, kind, fmt, tmp_path):
    model = models[algorithm, task]
    X, thresholds = _inputs(model, kind)
    float32 = fmt in ("xgboost", "treelite", "onnx-float32")
    expected = model.predict(X.astype(np.float32) if fmt == "onnx-float32" else X,
                             output_margin=True).reshape(len(X), -1)
    served = _served_margins(model, fmt, X, tmp_path)
    differs = np.abs(served - expected).max(axis=1) > _rounding(model, float32)
    if float32 and fmt != "onnx-float32":
        # rounded to float32 by the library: only rows at a threshold may differ
        assert not np.any(differs & ~_near_a_threshold(X, thresholds))
        assert differs.sum() <= _near_a_threshold(X, thresholds).sum()
    else:
        assert not differs.any(), f"{differs.sum()} of {len(X)} rows routed differently"
    plain = ~_near_a_threshold(X, thresholds)   # every format routes these as cbudget
    assert plain.sum() >= 350
    np.testing.assert_allclose(served[plain], expected[plain], rtol=0,
                               atol=_rounding(model, float32))
