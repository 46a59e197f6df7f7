"""ONNX export (``save_model(path, format="onnx")``, cbudget.interop.to_onnx), run by
onnxruntime: categorical splits, imported thresholds in a float32 graph, ranking, early
stopping, models without trees, the graph's properties and what the format refuses.
The matrix of algorithms x objectives x inputs is tests/test_export_matrix.py."""
import sys
import warnings

import numpy as np
import pytest

import cbudget
from cbudget.interop.to_onnx import onnx_model

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
lgb = pytest.importorskip("lightgbm")


def _session(model, tmp_path, **options):
    path = tmp_path / "m.onnx"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", cbudget.ExportWarning)
        model.save_model(path, format="onnx", **options)
    return ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])


def _run(session, X, output="prediction"):
    dtype = np.float32 if session.get_inputs()[0].type == "tensor(float)" else np.float64
    return session.run([output], {"input": np.asarray(X, dtype=dtype)})[0]


@pytest.mark.parametrize("objective, extra", [("binary:logistic", {}),
                                              ("multi:softprob", {"num_class": 3}),
                                              ("reg:squarederror", {})])
def test_categorical_splits_route_as_cbudget(objective, extra, tmp_path):
    rng = np.random.default_rng(3)
    X = rng.normal(size=(1500, 4))
    X[:, 2] = rng.integers(0, 12, len(X))
    X[rng.random(X.shape) < 0.15] = np.nan
    code = np.nan_to_num(X[:, 2], nan=-1)
    signal = np.nan_to_num(X[:, 0]) + np.isin(code, [1, 4, 7, 10]) - (code < 0)
    y = {"binary:logistic": (signal > 0.5), "multi:softprob": np.digitize(signal, [0, 1]),
         "reg:squarederror": signal}[objective].astype(float)
    model = cbudget.train({"objective": objective, **extra, "num_leaves": 8},
                          cbudget.Dataset(X, y, categorical_feature=[2]), 15,
                          verbose_eval=False)
    categorical = np.concatenate([t["categorical"] != 0 for t in model.trees])
    default_left = np.concatenate([t["default_left"] != 0 for t in model.trees])
    assert (categorical & default_left).any() and (categorical & ~default_left).any()
    probe = np.repeat(X[:40], 9, axis=0)
    # missing, negative (missing too), -0.0, fractional (the code is the integer part),
    # unseen, beyond every bitset, infinite
    probe[:, 2] = np.tile([np.nan, -1.0, -0.5, -0.0, 4.7, 11.0, 12.0, 5e9, np.inf], 40)
    X_test = np.vstack([X, probe])
    for dtype in ("float64", "float32"):
        session = _session(model, tmp_path, dtype=dtype)
        Xd = X_test.astype(dtype)
        tolerance = 1e-12 if dtype == "float64" else 1e-5
        np.testing.assert_allclose(_run(session, Xd), model.predict(Xd), rtol=0,
                                   atol=tolerance)
        np.testing.assert_allclose(_run(session, Xd, "margin"),
                                   model.predict(Xd, output_margin=True), rtol=0,
                                   atol=tolerance * 10)


def test_float32_graph_routes_imported_thresholds_exactly(tmp_path):
    """LightGBM's thresholds are float64 values float32 cannot hold: the float32 graph
    holds each as the largest float32 at most it, so every float32 input routes as in
    cbudget (rounding them to nearest sends the float32 just above left)."""
    rng = np.random.default_rng(5)
    X = rng.normal(size=(1000, 3))
    y = X[:, 0] - X[:, 1] ** 2 + 0.1 * rng.normal(size=len(X))
    lgb_model = lgb.train({"objective": "regression", "verbose": -1, "num_leaves": 15},
                          lgb.Dataset(X, y), 10)
    model = cbudget.from_lightgbm(lgb_model)
    thresholds = np.concatenate([t["threshold"][t["left"] != -1] for t in model.trees])
    features = np.concatenate([t["feature"][t["left"] != -1] for t in model.trees])
    assert np.any(thresholds.astype(np.float32) != thresholds)
    # each threshold's float32 neighbours, in rows of the data (which reach the nodes)
    rows = X[:60].astype(np.float32)
    probe = np.tile(rows, (3 * len(thresholds), 1))
    for i, (feature, threshold) in enumerate(zip(features, thresholds)):
        t32 = np.float32(threshold)
        for j, value in enumerate([np.nextafter(t32, np.float32(-np.inf)), t32,
                                   np.nextafter(t32, np.float32(np.inf))]):
            probe[(3 * i + j) * len(rows):(3 * i + j + 1) * len(rows), feature] = value
    session = _session(model, tmp_path, dtype="float32")
    np.testing.assert_allclose(_run(session, probe), model.predict(probe), rtol=0, atol=1e-5)
    session = _session(model, tmp_path)                   # float64: exact
    np.testing.assert_allclose(_run(session, probe), model.predict(probe), rtol=0, atol=1e-12)
    # onnx's reference evaluator (the operator's specification in Python) agrees (not
    # on set-membership splits: it reads their sets in another order, and stops a set
    # at the code 0)
    reference = pytest.importorskip("onnx.reference").ReferenceEvaluator(onnx_model(model))
    np.testing.assert_allclose(reference.run(["prediction"], {"input": X[:200]})[0],
                               model.predict(X[:200]), rtol=0, atol=1e-12)


def test_ranking_early_stopping_and_no_trees(tmp_path):
    rng = np.random.default_rng(7)
    X = rng.normal(size=(600, 4))
    y = rng.integers(0, 3, len(X)).astype(float)
    ranker = cbudget.train({"objective": "rank:ndcg"}, cbudget.Dataset(X, y, group=[30] * 20),
                           8, verbose_eval=False)
    np.testing.assert_allclose(_run(_session(ranker, tmp_path), X), ranker.predict(X),
                               rtol=0, atol=1e-12)
    # early stopping: the rounds predict uses by default
    data = cbudget.Dataset(X[:400], (X[:400, 0] > 0).astype(float))
    valid = cbudget.Dataset(X[400:], (X[400:, 0] + rng.normal(size=200) > 0).astype(float))
    stopped = cbudget.train({"objective": "binary:logistic", "learning_rate": 0.5}, data, 60,
                            evals=[(valid, "valid")], early_stopping_rounds=3, verbose_eval=False)
    assert stopped.best_iteration < stopped.num_boosted_rounds() - 1
    np.testing.assert_allclose(_run(_session(stopped, tmp_path), X), stopped.predict(X),
                               rtol=0, atol=1e-12)
    # no trees (a slice of none): the base score alone
    empty = stopped[:0]
    np.testing.assert_allclose(_run(_session(empty, tmp_path), X), empty.predict(X),
                               rtol=0, atol=1e-12)


def test_graph_properties_and_outputs(tmp_path):
    rng = np.random.default_rng(8)
    X = rng.normal(size=(300, 3))
    data = cbudget.Dataset(X, np.digitize(X[:, 0], [-0.5, 0.5]).astype(float),
                           feature_names=["âge", "b", "c"])
    model = cbudget.train({"objective": "multi:softprob", "num_class": 3}, data, 3,
                          verbose_eval=False)
    proto = onnx_model(model)
    props = {p.key: p.value for p in proto.metadata_props}
    assert props["objective"] == "multi:softprob" and props["num_class"] == "3"
    assert '"âge"' in props["feature_names"]
    session = _session(model, tmp_path)
    assert [o.name for o in session.get_outputs()] == ["prediction", "margin"]
    assert _run(session, X).shape == (300, 3)
    assert session.get_modelmeta().custom_metadata_map["algorithm"] == "gbdt"


@pytest.mark.parametrize("source", ["budget_rf", "sklearn"])
@pytest.mark.parametrize("n_class", [2, 4])
def test_forests_vote_as_cbudget(source, n_class, tmp_path):
    rng = np.random.default_rng(11)
    X = rng.normal(size=(800, 5))
    X[:, 1] = np.round(X[:, 1], 1)
    y = np.digitize(X[:, 0] + 0.5 * X[:, 1] + 0.3 * rng.normal(size=len(X)),
                    np.linspace(-1, 1, n_class - 1)).astype(float)
    objective = ({"objective": "binary:logistic"} if n_class == 2
                 else {"objective": "multi:softprob", "num_class": n_class})
    if source == "budget_rf":
        X_train = X.copy()
        X_train[rng.random(X.shape) < 0.1] = np.nan
        forest = cbudget.train({**objective, "algorithm": "budget_rf", "max_depth": 6},
                               cbudget.Dataset(X_train, y), 12, verbose_eval=False)
    else:
        ensemble = pytest.importorskip("sklearn.ensemble")
        forest = cbudget.from_sklearn(ensemble.RandomForestClassifier(
            n_estimators=8, max_depth=6, random_state=0).fit(X, y))
    assert isinstance(forest, cbudget.Forest)
    X_test = np.vstack([X, np.where(rng.random(X.shape) < 0.2, np.nan, X)])
    for dtype in ("float64", "float32"):
        session = _session(forest, tmp_path, dtype=dtype)
        Xd = X_test.astype(dtype)
        label, probabilities = session.run(["label", "probabilities"], {"input": Xd})
        np.testing.assert_array_equal(label, forest.predict(Xd))
        np.testing.assert_allclose(probabilities, forest.predict_proba(Xd), rtol=0,
                                   atol=1e-12 if dtype == "float64" else 1e-6)
    empty = forest[:0]          # no trees: the class prior
    session = _session(empty, tmp_path)
    np.testing.assert_allclose(_run(session, X, "probabilities"), empty.predict_proba(X))
    np.testing.assert_array_equal(_run(session, X, "label"), empty.predict(X))


def test_what_onnx_refuses(tmp_path, monkeypatch):
    rng = np.random.default_rng(9)
    X = rng.normal(size=(300, 3))
    data = cbudget.Dataset(X, (X[:, 0] > 0).astype(float))
    linear_tree = cbudget.train({"objective": "binary:logistic", "algorithm": "cstc"}, data,
                                3, verbose_eval=False)
    with pytest.raises(ValueError, match="saved in cbudget's format only, not 'onnx'"):
        linear_tree.save_model(tmp_path / "t.onnx", format="onnx")
    booster = cbudget.train({"objective": "binary:logistic"}, data, 3, verbose_eval=False)
    with pytest.raises(ValueError, match="dtype must be one of"):
        booster.save_model(tmp_path / "b.onnx", format="onnx", dtype="float16")
    booster.calibrate_exits(data, epsilon=0.05)
    with pytest.warns(cbudget.ExportWarning, match="'onnx' format without the exit rules"):
        booster.save_model(tmp_path / "b.onnx", format="onnx")
    monkeypatch.setitem(sys.modules, "onnx", None)       # onnx not installed
    with pytest.raises(ImportError, match="pip install onnx"):
        booster.save_model(tmp_path / "c.onnx", format="onnx")
    assert not (tmp_path / "c.onnx").exists()
