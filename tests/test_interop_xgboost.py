"""XGBoost import (cbudget.interop.from_xgboost) and export (Booster.save_model(path,
format="xgboost")): predictions equal XGBoost's on data with NaN and on inputs at, just
below and just above every split condition; refusals; hostile files."""
import json

import numpy as np
import pytest

import cbudget
from cbudget.interop.from_xgboost import from_xgboost
from cbudget.interop.ubjson import MAX_DEPTH, decode, encode

xgb = pytest.importorskip("xgboost")

F32 = np.float32
INF32 = F32(np.inf)


def _data(seed, n=300, n_features=5, nan_rate=0.1):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, n_features))
    X[:, 1] = np.round(X[:, 1], 1)          # ties: split conditions on data values
    X[rng.random(X.shape) < nan_rate] = np.nan
    return rng, X


LOG_LINK = ("count:poisson", "reg:tweedie", "reg:gamma")


def _labels(rng, X, objective):
    signal = np.nan_to_num(X[:, 0]) + 0.5 * np.nan_to_num(X[:, 1])
    if objective == "binary:logistic":
        return (signal + rng.normal(size=len(X)) > 0).astype(int)
    if objective == "multi:softprob":
        return np.digitize(signal + rng.normal(size=len(X)), [-0.5, 0.5])
    if objective in LOG_LINK:      # positive, mean exp(signal / 2)
        return np.exp(0.5 * signal) * rng.gamma(2.0, 0.5, size=len(X))
    return signal + 0.3 * rng.normal(size=len(X))


def _xgb_margin(booster, X):
    """XGBoost's margins of float64 ``X`` (it rounds to float32), (n, n_outputs);
    inplace_predict takes inputs with infinities, which a DMatrix refuses."""
    margin = booster.inplace_predict(np.asarray(X, dtype=np.float64), predict_type="margin")
    return np.asarray(margin, dtype=np.float64).reshape(len(X), -1)


def _probe_rows(X, features, values, rng):
    """Rows of ``X`` (random ones) with ``features[i]`` set to ``values[i]``, plus rows
    of NaN and of +-inf."""
    rows = X[rng.integers(0, len(X), size=len(values))].copy()
    rows[np.arange(len(values)), features] = values
    special = np.repeat(X[:3], 3, axis=0)
    special[0:3] = np.nan
    special[3:6] = np.inf
    special[6:9] = -np.inf
    return np.vstack([rows, special])


def _values_around_conditions(conditions):
    """Per XGBoost split condition c (float32): c, the float32 neighbours of c, and
    float64 values between them and c (the midpoints and the float64s next to c)."""
    c = np.asarray(conditions, dtype=F32)
    below, above = np.nextafter(c, -INF32), np.nextafter(c, INF32)
    c64 = c.astype(np.float64)
    return np.concatenate([
        c64, below.astype(np.float64), above.astype(np.float64),
        (c64 + below) / 2, (c64 + above) / 2,
        np.nextafter(c64, -np.inf), np.nextafter(c64, np.inf)]), 7


def _xgb_split_probes(booster, X, rng):
    doc = json.loads(booster.save_raw("json"))
    trees = doc["learner"]["gradient_booster"]["model"]["trees"]
    features, conditions = [], []
    for tree in trees:
        internal = np.asarray(tree["left_children"]) != -1
        features.extend(np.asarray(tree["split_indices"])[internal])
        conditions.extend(np.asarray(tree["split_conditions"])[internal])
    assert conditions, "the model has no split to probe"
    values, copies = _values_around_conditions(conditions)
    return _probe_rows(X, np.tile(features, copies), values, rng)


def _check_predictions(model, booster, X):
    expected = _xgb_margin(booster, X)
    margin = model.predict(X, output_margin=True).reshape(len(X), -1)
    np.testing.assert_allclose(margin, expected, rtol=1e-6, atol=1e-6)
    expected_output = booster.inplace_predict(X).reshape(len(X), -1)
    output = model.predict(X).reshape(len(X), -1)
    if expected_output.shape[1] == 1 and output.shape[1] > 1:   # multi:softmax: labels
        np.testing.assert_array_equal(np.argmax(output, axis=1), expected_output[:, 0])
    else:
        np.testing.assert_allclose(output, expected_output, rtol=1e-6, atol=1e-6)


XGB_CASES = [("reg:squarederror", {}), ("binary:logistic", {}),
             ("multi:softprob", {"num_class": 3}), ("multi:softmax", {"num_class": 4}),
             ("reg:absoluteerror", {}), ("reg:logistic", {}), ("binary:logitraw", {}),
             ("reg:pseudohubererror", {"huber_slope": 2.0}),
             ("reg:quantileerror", {"quantile_alpha": 0.8}), ("count:poisson", {}),
             ("reg:tweedie", {"tweedie_variance_power": 1.3}), ("reg:gamma", {})]


def _train_xgb(objective, extra, seed, n_rounds=6):
    rng, X = _data(seed)
    label_objective = {"multi:softmax": "multi:softprob", "reg:logistic": "binary:logistic",
                       "binary:logitraw": "binary:logistic"}.get(objective, objective)
    y = _labels(rng, X, label_objective)
    if objective == "multi:softmax":
        y = np.minimum(y + (np.nan_to_num(X[:, 2]) > 1), 3)
    params = {"objective": objective, "max_depth": int(rng.integers(1, 7)), "eta": 0.3,
              "seed": seed, **extra}
    if seed % 2:
        params.update(grow_policy="lossguide", max_leaves=int(rng.integers(2, 12)),
                      max_depth=0, tree_method="hist")
    elif seed % 3 == 0:
        params["tree_method"] = "exact"      # pruning leaves deleted nodes in the arrays
        params["gamma"] = 0.5
    booster = xgb.train(params, xgb.DMatrix(X, y), n_rounds)
    return rng, X, booster


@pytest.mark.parametrize("objective,extra", XGB_CASES)
@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_import_predicts_as_xgboost(objective, extra, seed, tmp_path):
    rng, X, booster = _train_xgb(objective, extra, seed)
    probes = np.vstack([X, _xgb_split_probes(booster, X, rng)])
    json_path, ubj_path = tmp_path / "m.json", tmp_path / "m.ubj"
    booster.save_model(json_path)
    booster.save_model(ubj_path)
    weird_name = tmp_path / "m.model"          # the content decides, not the name
    weird_name.write_bytes(ubj_path.read_bytes())
    sources = [booster, json_path, str(ubj_path), weird_name, bytes(booster.save_raw("ubj")),
               bytearray(booster.save_raw("json"))]
    for source in sources:
        model = from_xgboost(source)
        assert model.algorithm == "imported"
        assert model.imported_from["library"] == "xgboost"
        assert model.imported_from["version"] == xgb.__version__
        assert model.imported_from["objective"] == objective
        _check_predictions(model, booster, probes)
    dmatrix_margin = booster.predict(xgb.DMatrix(X), output_margin=True).reshape(len(X), -1)
    np.testing.assert_allclose(model.predict(X, output_margin=True).reshape(len(X), -1),
                               dmatrix_margin, rtol=1e-6, atol=1e-6)


def test_deleted_nodes_of_pruned_trees_are_dropped():
    rng, X = _data(5)
    y = _labels(rng, X, "reg:squarederror")
    booster = xgb.train({"tree_method": "exact", "gamma": 2.0, "max_depth": 6},
                        xgb.DMatrix(X, y), 4)
    doc = json.loads(booster.save_raw("json"))
    assert any(int(t["tree_param"]["num_deleted"])
               for t in doc["learner"]["gradient_booster"]["model"]["trees"])
    _check_predictions(from_xgboost(booster), booster, X)


@pytest.mark.parametrize("objective", ["reg:squarederror", "binary:logistic",
                                       "multi:softprob"])
def test_import_from_sklearn_wrapper(objective):
    pytest.importorskip("sklearn")       # XGBoost's wrappers need it
    rng, X = _data(7)
    y = _labels(rng, X, objective)
    estimator = (xgb.XGBRegressor if objective == "reg:squarederror" else xgb.XGBClassifier)(
        n_estimators=5, max_depth=3)
    estimator.fit(X, y)
    model = from_xgboost(estimator)
    assert model.imported_from["estimator"] == type(estimator).__name__
    assert model.objective == objective
    _check_predictions(model, estimator.get_booster(), X)
    if objective != "reg:squarederror":
        np.testing.assert_allclose(model.predict(X).reshape(len(X), -1)[:, -1],
                                   estimator.predict_proba(X)[:, -1], rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("objective,num_parallel_tree", [
    ("reg:squarederror", 1), ("binary:logistic", 1), ("multi:softprob", 1),
    ("binary:logistic", 2)])
def test_import_early_stopped_estimator(objective, num_parallel_tree, tmp_path):
    """Issue 42, item 5: an early-stopped estimator predicts with rounds 0 to its
    best_iteration; the import predicts the same (the estimator's best_iteration was
    dropped: up to 1.43 apart). A Booster predicts with every round, and so does its
    import, with a warning naming the best iteration."""
    pytest.importorskip("sklearn")
    rng, X = _data(9, n=600)
    y = _labels(rng, X, objective)
    estimator = (xgb.XGBRegressor if objective == "reg:squarederror" else xgb.XGBClassifier)(
        n_estimators=200, learning_rate=0.5, max_depth=4, early_stopping_rounds=3,
        num_parallel_tree=num_parallel_tree)
    estimator.fit(X[:300], y[:300], eval_set=[(X[300:450], y[300:450])], verbose=False)
    n_rounds = estimator.get_booster().num_boosted_rounds()
    assert estimator.best_iteration + 1 < n_rounds, "early stopping kept every round"
    model = from_xgboost(estimator)
    held_out = X[450:]
    if objective == "reg:squarederror":
        expected = estimator.predict(held_out)
    else:       # cbudget's binary prediction is the positive class's probability
        expected = estimator.predict_proba(held_out)[:, 1 if objective[0] == "b" else 0:]
    np.testing.assert_allclose(model.predict(held_out), expected.squeeze(), rtol=1e-5,
                               atol=1e-6)
    assert model.num_boosted_rounds() == n_rounds * num_parallel_tree    # all kept
    assert model.best_iteration == (estimator.best_iteration + 1) * num_parallel_tree - 1
    assert model.best_score == pytest.approx(estimator.best_score)
    model.save_model(tmp_path / "imported.json")           # kept by cbudget's format
    assert cbudget.load_model(tmp_path / "imported.json").best_iteration == model.best_iteration
    booster = estimator.get_booster()
    with pytest.warns(UserWarning, match=f"best_iteration {estimator.best_iteration} "):
        whole = from_xgboost(booster)
    assert whole.best_iteration is None
    _check_predictions(whole, booster, X)
    # without a best_score (which cbudget's files keep with it) the rounds are cut
    booster.set_attr(best_score=None)
    cut = from_xgboost(estimator)
    assert cut.best_iteration is None and cut.num_boosted_rounds() == model.best_iteration + 1
    np.testing.assert_allclose(cut.predict(held_out), model.predict(held_out))


def test_dart_and_parallel_trees():
    rng, X = _data(8)
    y = _labels(rng, X, "multi:softprob")
    for params in ({"booster": "dart", "rate_drop": 0.5, "skip_drop": 0.0},
                   {"num_parallel_tree": 3, "subsample": 0.7, "colsample_bynode": 0.7}):
        booster = xgb.train({"objective": "multi:softprob", "num_class": 3, "max_depth": 3,
                             "seed": 1, **params}, xgb.DMatrix(X, y), 4)
        _check_predictions(from_xgboost(booster), booster, X)


def test_rank_objectives():
    rng, X = _data(9)
    y = rng.integers(0, 3, len(X))
    for objective, expected in [("rank:pairwise", "rank:pairwise"), ("rank:ndcg", "rank:ndcg"),
                                ("rank:map", "rank:ndcg")]:
        dtrain = xgb.DMatrix(X, y % 2 if objective == "rank:map" else y)
        dtrain.set_group([50] * 6)
        booster = xgb.train({"objective": objective, "max_depth": 3}, dtrain, 4)
        model = from_xgboost(booster)
        assert model.objective == expected
        _check_predictions(model, booster, X)


def test_feature_names_and_costs(tmp_path):
    rng, X = _data(10)
    y = _labels(rng, X, "binary:logistic")
    names = ["age", "bmi", "glucose", "insulin", "bp"]
    booster = xgb.train({"objective": "binary:logistic", "max_depth": 3},
                        xgb.DMatrix(X, y, feature_names=names), 6)
    costs = {"age": 1.0, "bmi": 2.0, "glucose": 5.0, "insulin": 11.0, "bp": 3.0}
    model = from_xgboost(booster, feature_costs=costs)
    assert model.feature_names == names
    assert list(model.cost_model.feature_costs) == [costs[n] for n in names]
    renamed = from_xgboost(booster, feature_names=[f"x{i}" for i in range(5)])
    assert renamed.feature_names == [f"x{i}" for i in range(5)]
    with pytest.raises(ValueError, match="feature_names"):
        from_xgboost(booster, feature_names=["a", "b"])
    # costs: the path's features, each counted once
    cost = model.predict_cost(X)
    acquired = model.acquisitions(X)
    np.testing.assert_allclose(cost, acquired.astype(float) @ np.array(
        [costs[n] for n in names]))
    assert model.cost_report(X).mean_cost == pytest.approx(cost.mean())
    # on demand: the same predictions and costs
    source = cbudget.FeatureSource(lambda features, rows: X[np.ix_(rows, features)],
                                   X.shape[0])
    np.testing.assert_allclose(model.predict(source), model.predict(X))
    np.testing.assert_allclose(source.cost(), model.predict_cost(X))
    # a cbudget file keeps the model
    path = tmp_path / "imported.json"
    model.save_model(path)
    loaded = cbudget.load_model(path)
    assert loaded.imported_from == model.imported_from
    np.testing.assert_array_equal(loaded.predict(X), model.predict(X))
    np.testing.assert_array_equal(loaded.predict_cost(X), cost)


def test_base_score_forms():
    """XGBoost 2 writes base_score "5E-1", XGBoost 3 "[5E-1]" or one per class."""
    rng, X, booster = _train_xgb("multi:softprob", {"num_class": 3}, 4)
    doc = json.loads(booster.save_raw("json"))
    param = doc["learner"]["learner_model_param"]
    model = from_xgboost(json.dumps(doc).encode())
    for form, margin in [("5E-1", [0.5] * 3), ("[5E-1]", [0.5] * 3),
                         ("[1E-1,-2E-1,3E-1]", [0.1, -0.2, 0.3])]:
        param["base_score"] = form
        shifted = from_xgboost(json.dumps(doc).encode())
        np.testing.assert_allclose(shifted.base_score, np.float32(margin))
        np.testing.assert_allclose(shifted.predict(X, output_margin=True)
                                   - shifted.base_score,
                                   model.predict(X, output_margin=True) - model.base_score)
    for bad in ["[1,2]", "x", "[nan]", ""]:
        param["base_score"] = bad
        with pytest.raises(ValueError, match="base_score"):
            from_xgboost(json.dumps(doc).encode())
    _, _, logistic = _train_xgb("binary:logistic", {}, 4)
    doc = json.loads(logistic.save_raw("json"))
    doc["learner"]["learner_model_param"]["base_score"] = "2.5E-1"
    assert from_xgboost(json.dumps(doc).encode()).base_score[0] == pytest.approx(
        np.log(0.25 / 0.75), rel=1e-6)
    doc["learner"]["learner_model_param"]["base_score"] = "1"
    with pytest.raises(ValueError, match="base_score"):
        from_xgboost(json.dumps(doc).encode())


# -- refusals ----------------------------------------------------------------------------
def _small_xgb(params, X=None, y=None, **dmatrix):
    rng, X0 = _data(11, n=100)
    X = X0 if X is None else X
    y = _labels(rng, X0, "reg:squarederror") if y is None else y
    tree_params = {} if params.get("booster") == "gblinear" else {"max_depth": 2}
    return xgb.train({**tree_params, **params}, xgb.DMatrix(X, y, **dmatrix), 2)


@pytest.mark.parametrize("params,match", [
    ({"booster": "gblinear"}, "gblinear"),
    ({"objective": "binary:hinge"}, "binary:hinge"),
])
def test_refused_models(params, match):
    y = None
    if params.get("objective") == "binary:hinge":
        y = np.arange(100) % 2
    booster = _small_xgb(params, y=y)
    with pytest.raises(ValueError, match=match):
        from_xgboost(booster)
    with pytest.raises(ValueError, match=match):    # and its file, without xgboost
        from_xgboost(bytes(booster.save_raw("ubj")))


def test_categorical_split_on_a_numeric_feature_refused():
    """(Categorical imports: tests/test_categorical_interop.py.)"""
    rng = np.random.default_rng(0)
    X = np.column_stack([rng.integers(0, 6, 200), rng.normal(size=200)]).astype(float)
    y = (X[:, 0] % 2) + rng.normal(size=200) * 0.1
    booster = xgb.train({"max_depth": 3, "tree_method": "hist", "max_cat_to_onehot": 1},
                        xgb.DMatrix(X, y, feature_types=["c", "q"], enable_categorical=True),
                        3)
    doc = json.loads(booster.save_raw("json"))
    doc["learner"]["feature_types"] = ["float", "float"]   # the splits themselves
    with pytest.raises(ValueError, match="does not declare categorical"):
        from_xgboost(json.dumps(doc).encode())


def test_refused_vector_leaves():
    rng, X = _data(12, n=100)
    Y = np.column_stack([_labels(rng, X, "reg:squarederror")] * 2)
    booster = xgb.train({"tree_method": "hist", "multi_strategy": "multi_output_tree",
                         "max_depth": 2}, xgb.DMatrix(X, Y), 2)
    with pytest.raises(ValueError, match="multi_output_tree|several targets"):
        from_xgboost(booster)


def test_refused_input_type():
    with pytest.raises(TypeError, match="from_xgboost"):
        from_xgboost(42)


# -- hostile input -----------------------------------------------------------------------
@pytest.fixture(scope="module")
def raw_models():
    booster = _small_xgb({"objective": "binary:logistic"}, y=np.arange(100) % 2)
    return bytes(booster.save_raw("json")), bytes(booster.save_raw("ubj"))


@pytest.mark.parametrize("kind", [0, 1])
def test_truncated(raw_models, kind):
    raw = raw_models[kind]
    for cut in np.unique(np.linspace(1, len(raw) - 1, 97).astype(int)):
        with pytest.raises(ValueError):
            from_xgboost(raw[:cut])


def test_garbage():
    rng = np.random.default_rng(0)
    for blob in [b"", b"{", b"{}", b"[1, 2]", b"\x00" * 10, bytes(range(256)) * 3,
                 rng.bytes(1000), b"{" + rng.bytes(1000), b"{L" + rng.bytes(100),
                 b'{"learner": 3, "version": [2, 1, 0]}']:
        with pytest.raises(ValueError):
            from_xgboost(blob)


def test_ubjson_count_larger_than_the_file():
    for blob in [b"[$d#L" + (10**9).to_bytes(8, "big") + b"\x00" * 16,
                 b"[#l" + (1000).to_bytes(4, "big") + b"i\x01",
                 b"SL" + (2**62).to_bytes(8, "big") + b"abc",
                 b"{L" + (50).to_bytes(8, "big") + b"key",
                 b"[$L#I" + (-1).to_bytes(2, "big", signed=True)]:
        with pytest.raises(ValueError):
            decode(blob)


def test_ubjson_values_and_depth():
    value = decode(b"{i\x01a[$U#i\x02\x01\x02i\x01bSi\x02hiN}")
    np.testing.assert_array_equal(value["a"], [1, 2])
    assert value["b"] == "hi"
    assert decode(b"[TFZCxD\x3f\xf0\x00\x00\x00\x00\x00\x00d\x3f\x80\x00\x00I\x01\x00]") == [
        True, False, None, "x", 1.0, 1.0, 256]
    np.testing.assert_array_equal(decode(b"[$l#i\x02\xff\xff\xff\xff\x00\x00\x00\x07"),
                                  [-1, 7])
    deepest = decode(b"[" * MAX_DEPTH + b"]" * MAX_DEPTH)
    for _ in range(MAX_DEPTH - 1):
        assert len(deepest) == 1
        deepest = deepest[0]
    assert deepest == []
    with pytest.raises(ValueError, match="deeper"):
        decode(b"[" * (MAX_DEPTH + 1) + b"]" * (MAX_DEPTH + 1))
    with pytest.raises(ValueError, match="deeper"):
        decode(b"[" * 100_000)
    with pytest.raises(ValueError, match="after"):
        decode(b"[]i\x01")
    with pytest.raises(ValueError):
        decode(b"[$Z#i\x05")


def test_deep_json():
    with pytest.raises(ValueError):
        from_xgboost(b"{\"a\":" + b"[" * 100_000 + b"]" * 100_000 + b"}")


def _tree_doc(raw):
    doc = json.loads(raw)
    return doc, doc["learner"]["gradient_booster"]["model"]["trees"][0]


@pytest.mark.parametrize("change,match", [
    (lambda t: t["left_children"].__setitem__(0, 999), "child index out of range"),
    (lambda t: t["right_children"].__setitem__(0, -5), "child index out of range"),
    (lambda t: t["left_children"].__setitem__(0, 0), "tree"),
    (lambda t: t["split_indices"].__setitem__(0, 77), "split feature"),
    (lambda t: t["split_conditions"].pop(), "split_conditions"),
    (lambda t: t["split_conditions"].__setitem__(1, "x"), "numbers"),
    (lambda t: t["split_type"].__setitem__(0, 1), "categorical"),
    (lambda t: t.pop("left_children"), "left_children"),
])
def test_malformed_tree(raw_models, change, match):
    doc, tree = _tree_doc(raw_models[0])
    change(tree)
    with pytest.raises(ValueError, match=match):
        from_xgboost(json.dumps(doc).encode())


def test_malformed_model(raw_models):
    for change in [lambda d: d["learner"]["gradient_booster"]["model"]["tree_info"].append(0),
                   lambda d: d["learner"]["gradient_booster"]["model"].__setitem__(
                       "iteration_indptr", [0, 5]),
                   lambda d: d["learner"]["learner_model_param"].__setitem__(
                       "num_feature", "1000000000"),
                   lambda d: d["learner"]["learner_model_param"].__setitem__(
                       "num_class", "3"),
                   lambda d: d.__setitem__("version", "2.1")]:
        doc = json.loads(raw_models[0])
        change(doc)
        with pytest.raises(ValueError):
            from_xgboost(json.dumps(doc).encode())


# -- export ------------------------------------------------------------------------------
EXPORT_CASES = [("reg:squarederror", {}), ("binary:logistic", {}),
                ("multi:softprob", {"num_class": 3}), ("reg:absoluteerror", {}),
                ("reg:pseudohubererror", {"huber_slope": 2.0}),
                ("reg:quantileerror", {"quantile_alpha": 0.8}), ("count:poisson", {}),
                ("reg:tweedie", {"tweedie_variance_power": 1.3}), ("reg:gamma", {})]


def _cbudget_split_probes(model, X, rng):
    """Rows that put each split's feature at, just below and just above the float32
    values around its threshold T: the largest float32 at most T, its neighbours."""
    features, thresholds = [], []
    for tree in model.trees:
        internal = tree["left"] != -1
        features.extend(tree["feature"][internal])
        thresholds.extend(tree["threshold"][internal])
    assert thresholds, "the model has no split to probe"
    t = np.asarray(thresholds)
    floor = t.astype(F32)
    floor = np.where(floor.astype(np.float64) > t, np.nextafter(floor, -INF32), floor)
    values = np.concatenate([floor, np.nextafter(floor, -INF32), np.nextafter(floor, INF32),
                             t.astype(F32)])
    return _probe_rows(X, np.tile(features, 4), values.astype(np.float64), rng)


@pytest.mark.parametrize("objective,extra", EXPORT_CASES)
@pytest.mark.parametrize("algorithm", ["gbdt", "cegb", "greedy_miser"])
def test_export_predicts_as_cbudget(objective, extra, algorithm, tmp_path):
    rng, X = _data(20)
    y = _labels(rng, X, objective)
    params = {"objective": objective, "algorithm": algorithm, "max_depth": 4, **extra}
    if algorithm != "gbdt":
        params["cost_tradeoff"] = 0.01
    data = cbudget.Dataset(X, y, feature_costs=[1.0, 2.0, 4.0, 8.0, 0.5])
    model = cbudget.train(params, data, 10)
    path = tmp_path / "exported.json"
    model.save_model(path, format="xgboost")
    booster = xgb.Booster(model_file=str(path))
    assert booster.num_boosted_rounds() == model.num_boosted_rounds()
    probes = np.vstack([X, _cbudget_split_probes(model, X, rng)]).astype(F32)
    probes64 = probes.astype(np.float64)
    expected = model.predict(probes64, output_margin=True).reshape(len(probes), -1)
    np.testing.assert_allclose(_xgb_margin(booster, probes64), expected, rtol=1e-5,
                               atol=1e-5)
    finite = np.all(np.isfinite(probes) | np.isnan(probes), axis=1)
    np.testing.assert_allclose(
        booster.predict(xgb.DMatrix(probes[finite])).reshape(finite.sum(), -1),
        model.predict(probes64[finite]).reshape(finite.sum(), -1), rtol=1e-5, atol=1e-6)
    # leaves reached: the same paths (margins could agree by chance)
    np.testing.assert_array_equal(
        _leaf_values(booster, probes64), _cbudget_leaf_values(model, probes64))
    # and back: cbudget -> XGBoost -> cbudget
    back = from_xgboost(path)
    np.testing.assert_allclose(back.predict(probes64, output_margin=True),
                               model.predict(probes64, output_margin=True), rtol=1e-5,
                               atol=1e-5)


@pytest.mark.parametrize("objective,extra", EXPORT_CASES)
@pytest.mark.parametrize("algorithm", ["gbdt", "cegb"])
def test_export_agrees_on_float64_data_with_repeats(objective, extra, algorithm, tmp_path):
    """Issue 42, item 4: values of three decimals (repeated; more distinct values than
    bins) and held-out float64 rows of the same grid. With edges on training values,
    an input equal to one went right in XGBoost whenever its float32 rounding went up
    (0.8% to 3% of these rows' outputs differed)."""
    rng = np.random.default_rng(42)
    X = np.round(rng.uniform(0, 1, size=(3000, 4)), 3)
    y = _labels(rng, X - 0.5, objective)
    params = {"objective": objective, "algorithm": algorithm, "num_leaves": 8, **extra}
    if algorithm == "cegb":
        params["cost_tradeoff"] = 0.01
    data = cbudget.Dataset(X[:1500], y[:1500], feature_costs=[1.0, 2.0, 4.0, 8.0])
    model = cbudget.train(params, data, 20)
    path = tmp_path / "grid.json"
    model.save_model(path, format="xgboost")
    booster = xgb.Booster(model_file=str(path))
    held_out = X[1500:]
    np.testing.assert_allclose(booster.predict(xgb.DMatrix(held_out)).reshape(1500, -1),
                               model.predict(held_out).reshape(1500, -1), rtol=1e-5,
                               atol=1e-6)
    np.testing.assert_array_equal(_leaf_values(booster, held_out),
                                  _cbudget_leaf_values(model, held_out))


def _leaf_values(booster, X):
    """Per row and tree, the leaf value XGBoost reaches (float32)."""
    leaves = booster.predict(xgb.DMatrix(X[np.all(~np.isinf(X), axis=1)]), pred_leaf=True)
    doc = json.loads(booster.save_raw("json"))
    trees = doc["learner"]["gradient_booster"]["model"]["trees"]
    leaves = leaves.reshape(leaves.shape[0], -1).astype(int)
    values = np.column_stack([np.asarray(t["split_conditions"], dtype=F32)[leaves[:, i]]
                              for i, t in enumerate(trees)])
    values[:, :_first_round_size(doc)] = 0   # the base scores went there
    return values


def _first_round_size(doc):
    return doc["learner"]["gradient_booster"]["model"]["iteration_indptr"][1]


def _cbudget_leaf_values(model, X):
    X = X[np.all(~np.isinf(X), axis=1)]
    leaves = model.predict(X, pred_leaf=True)
    values = np.column_stack([tree["value"][leaves[:, i]].astype(F32)
                              for i, tree in enumerate(model.trees)])
    values[:, :model.iteration_indptr[1]] = 0
    return values


def test_export_rank_and_imported(tmp_path):
    rng, X = _data(21)
    y = rng.integers(0, 3, len(X))
    data = cbudget.Dataset(X, y, group=[50] * 6)
    model = cbudget.train({"objective": "rank:ndcg", "max_depth": 3}, data, 5)
    path = tmp_path / "rank.json"
    model.save_model(path, format="xgboost")
    booster = xgb.Booster(model_file=str(path))
    np.testing.assert_allclose(_xgb_margin(booster, X)[:, 0],
                               model.predict(X, output_margin=True), rtol=1e-5, atol=1e-5)
    # an imported model exports too, with its feature names
    _, _, source = _train_xgb("binary:logistic", {}, 2)
    imported = from_xgboost(source, feature_names=list("abcde"))
    imported.save_model(path, format="xgboost")
    booster = xgb.Booster(model_file=str(path))
    assert booster.feature_names == list("abcde")
    np.testing.assert_allclose(
        booster.predict(xgb.DMatrix(X, feature_names=list("abcde")), output_margin=True),
        source.predict(xgb.DMatrix(X), output_margin=True), rtol=1e-5, atol=1e-5)


def test_export_refusals(tmp_path):
    rng, X = _data(22, n=100)
    y = _labels(rng, X, "binary:logistic")
    forest = cbudget.train({"objective": "binary:logistic", "algorithm": "budget_rf"},
                           cbudget.Dataset(X, y), 3)
    with pytest.raises(ValueError, match="a Forest is saved in the formats 'cbudget', 'onnx' "
                                         "only, not 'xgboost'"):
        forest.save_model(tmp_path / "f.json", format="xgboost")
    assert not (tmp_path / "f.json").exists()
    model = cbudget.train({"objective": "binary:logistic"}, cbudget.Dataset(X, y), 2)
    with pytest.raises(ValueError, match="unknown model format"):
        model.save_model(tmp_path / "m.txt", format="catboost")
    assert not (tmp_path / "m.txt").exists()
    model.save_model(tmp_path / "m.json")            # the default stays cbudget's
    assert cbudget.load_model(tmp_path / "m.json").objective == "binary:logistic"
    model.trees[0]["threshold"][0] = 1e39            # beyond float32
    path = tmp_path / "x.json"
    path.write_text("previous")
    with pytest.raises(ValueError, match="float32"):
        model.save_model(path, format="xgboost")
    assert path.read_text() == "previous"            # untouched, no temporary left
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.json", "x.json"]


@pytest.mark.parametrize("objective,extra", EXPORT_CASES)
@pytest.mark.parametrize("suffix", ["json", "ubj"])
def test_export_early_stopped(objective, extra, suffix, tmp_path):
    """Issue 42, item 5: after early stopping the export writes the rounds cbudget
    predicts with (every round was written: xgboost.Booster.predict was up to 0.145
    apart from cbudget's); a .ubj path gets UBJSON, which XGBoost reads (it refused the
    JSON written there)."""
    rng, X = _data(23, n=600)
    y = _labels(rng, X, objective)
    data = cbudget.Dataset(X[:300], y[:300])
    valid = cbudget.Dataset(X[300:450], y[300:450], reference=data)
    model = cbudget.train({"objective": objective, "learning_rate": 0.5, **extra}, data, 100,
                          evals=[(valid, "valid")], early_stopping_rounds=3,
                          verbose_eval=False)
    assert model.best_iteration + 1 < model.num_boosted_rounds()
    path = tmp_path / f"es.{suffix}"
    model.save_model(path, format="xgboost")
    assert path.read_bytes()[:2] == (b"{L" if suffix == "ubj" else b'{"')
    booster = xgb.Booster(model_file=str(path))
    assert booster.num_boosted_rounds() == model.best_iteration + 1
    assert booster.attr("best_iteration") == str(model.best_iteration)
    held_out = X[450:]
    np.testing.assert_allclose(
        booster.predict(xgb.DMatrix(held_out)).reshape(len(held_out), -1),
        model.predict(held_out).reshape(len(held_out), -1), rtol=1e-5, atol=1e-6)
    back = from_xgboost(path)      # the file's best_iteration is its last round: no warning
    np.testing.assert_allclose(back.predict(held_out), model.predict(held_out), rtol=1e-5,
                               atol=1e-6)
    whole = model.copy()
    whole.best_iteration = None     # every round, when asked for
    whole.save_model(path, format="xgboost")
    assert xgb.Booster(model_file=str(path)).num_boosted_rounds() == model.num_boosted_rounds()


def test_ubjson_encode():
    """The exporter's encoder: decode reads back every kind of value it writes; 1-D
    numeric arrays as typed arrays of their dtype (bool as uint8), other arrays as
    lists; integers in the narrowest marker, lengths always int64 (XGBoost's rule)."""
    value = {"a": [1, -1, 2**40, True, False, None, "é", 1.5, -2**63, 2**63 - 1],
             "d": {"e": [], "f": {}, "g": [np.float32(0.1), (np.int64(7),)]}}
    assert decode(encode(value)) == {**value, "d": {**value["d"],
                                                    "g": [float(np.float32(0.1)), [7]]}}
    arrays = {dtype: np.array([0, 1, 7, 100], dtype=dtype) for dtype in
              ["float32", "float64", "int8", "uint8", "int16", "int32", "int64", ">f4",
               ">i8"]}
    arrays["nan"] = np.array([np.nan, -np.inf, 1e-45], dtype=np.float32)
    arrays["negative"] = np.array([-2**63, -1, 2**63 - 1])
    arrays["empty"] = np.zeros(0, dtype=np.int32)
    decoded = decode(encode({"nested": [arrays]}))["nested"][0]
    for name, array in arrays.items():
        assert decoded[name].dtype == array.dtype.newbyteorder("="), name
        np.testing.assert_array_equal(decoded[name], array)
    assert encode(np.array([1.5], dtype=np.float32)) == b"[$d#L" + bytes(7) + b"\x01" + \
        np.array([1.5], dtype=">f4").tobytes()
    assert encode(np.array([-1], dtype=np.int32))[:5] == b"[$l#L"
    flags = decode(encode(np.array([True, False])))
    assert flags.dtype == np.uint8 and flags.tolist() == [1, 0]
    assert decode(encode(np.array([1, 2], dtype=np.uint16))) == [1, 2]
    assert decode(encode(np.array(["x"]))) == ["x"]
    assert [encode(v)[:1] for v in (127, -128, 128, -2**15, 2**15, -2**31, 2**31)] == \
        [b"i", b"i", b"I", b"I", b"l", b"l", b"L"]
    assert encode("ab") == b"SL" + bytes(7) + b"\x02ab"
    with pytest.raises(TypeError, match="cannot encode"):
        encode({"x": object()})
    with pytest.raises(ValueError, match="64 bits"):
        encode(2**64)
    with pytest.raises(ValueError, match="1-D"):
        encode(np.zeros((2, 2)))


def test_export_ubjson_writes_xgboost_typed_arrays(tmp_path):
    """A tree's arrays are typed arrays of the types XGBoost writes (all of them: its
    reader takes a tree's arrays typed only if ``parents`` is); the untyped arrays,
    one marker and 8 bytes per integer, made the .ubj file larger than the JSON one
    (215,929 bytes against 139,599 for 50 rounds of depth 6; 120,391 typed)."""
    rng, X = _data(3, n=400)
    y = _labels(rng, X, "reg:squarederror")
    model = cbudget.train({"max_depth": 5}, cbudget.Dataset(X, y), 20)
    ubj, json_path = tmp_path / "m.ubj", tmp_path / "m.json"
    model.save_model(ubj, format="xgboost")
    model.save_model(json_path, format="xgboost")
    tree = decode(ubj.read_bytes())["learner"]["gradient_booster"]["model"]["trees"][1]
    dtypes = {key: value.dtype for key, value in tree.items() if isinstance(value, np.ndarray)}
    assert dtypes == {
        **dict.fromkeys(["base_weights", "loss_changes", "split_conditions", "sum_hessian"],
                        np.float32),
        **dict.fromkeys(["left_children", "right_children", "parents", "split_indices",
                         "categories", "categories_nodes"], np.int32),
        "categories_segments": np.int64, "categories_sizes": np.int64,
        "default_left": np.uint8, "split_type": np.uint8}
    from_ubj, from_json = xgb.Booster(model_file=str(ubj)), xgb.Booster(model_file=str(json_path))
    # as compact as XGBoost's own file of the model (untyped arrays: 1.58 times it)
    assert ubj.stat().st_size <= 1.05 * len(from_ubj.save_raw("ubj"))
    X32 = X.astype(np.float32)
    np.testing.assert_array_equal(from_ubj.inplace_predict(X32),
                                  from_json.inplace_predict(X32))
    np.testing.assert_allclose(from_ubj.inplace_predict(X32), model.predict(X32), atol=1e-5)
    # XGBoost writes such a tree back with the same layout
    resaved = decode(bytes(from_ubj.save_raw("ubj")))
    tree_back = resaved["learner"]["gradient_booster"]["model"]["trees"][1]
    assert {k: v.dtype for k, v in tree_back.items() if isinstance(v, np.ndarray)} == dtypes


def test_feature_names_as_xgboost_reads_them(tmp_path):
    # issue 46: non-ASCII names were written as \u escapes, which XGBoost kept literally
    # ("temp\u00e9rature"); names with [, ] or < were written though XGBoost refuses them
    rng, X = _data(23, n=120)
    y = _labels(rng, X, "binary:logistic")
    names = [f"f{m}" for m in range(X.shape[1])]
    names[0], names[1] = "température", "größe"
    model = cbudget.train({"objective": "binary:logistic"},
                          cbudget.Dataset(X, y, feature_names=names), 3, verbose_eval=False)
    for path in (tmp_path / "m.json", tmp_path / "m.ubj"):
        model.save_model(path, format="xgboost")
        loaded = xgb.Booster(model_file=str(path))
        assert loaded.feature_names == names
        got = loaded.predict(xgb.DMatrix(X, feature_names=names))
        np.testing.assert_allclose(got, model.predict(X), rtol=1e-5, atol=1e-6)
    names[2] = "x[1]"
    bad = cbudget.train({"objective": "binary:logistic"},
                        cbudget.Dataset(X, y, feature_names=names), 2, verbose_eval=False)
    with pytest.raises(ValueError, match=r"XGBoost refuses feature names containing.*x\[1\]"):
        bad.save_model(tmp_path / "bad.json", format="xgboost")
    assert not (tmp_path / "bad.json").exists()


def test_exit_rules_that_cannot_travel_warn(tmp_path):
    rng, X = _data(24, n=300)
    y = _labels(rng, X, "binary:logistic")
    data = cbudget.Dataset(X, y)
    model = cbudget.train({"objective": "binary:logistic"}, data, 20, verbose_eval=False)
    model.calibrate_exits(data, epsilon=0.05)
    assert model.exit_rules is not None
    with pytest.warns(cbudget.ExportWarning, match="'xgboost' format without the exit rules "
                      r"\(the file predicts with every tree") as caught:
        model.save_model(tmp_path / "m.json", format="xgboost")
    assert [w.filename for w in caught] == [__file__]     # the caller's line
    assert "cost model" not in str(caught[0].message)      # gbdt: nothing costs
    loaded = xgb.Booster(model_file=str(tmp_path / "m.json"))
    np.testing.assert_allclose(loaded.predict(xgb.DMatrix(X)),
                               model.predict(X, early_exit=False), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("threshold, message", [
    (1e39, r"at 1e\+39: the threshold lies beyond float32's range"),
    (np.inf, "sends every number the same way: it separates missing values"),
    (np.finfo(np.float64).max, "sends every number the same way"),
])
def test_an_unheld_threshold_is_explained(tmp_path, threshold, message):
    # issue 46: a LightGBM split that separates NaN from every number was refused as "a
    # threshold lies beyond float32's range", which confused users without large values
    rng, X = _data(25, n=100)
    model = cbudget.train({"objective": "binary:logistic"},
                          cbudget.Dataset(X, _labels(rng, X, "binary:logistic")), 2,
                          verbose_eval=False)
    model.trees[0]["threshold"][0] = threshold
    with pytest.raises(ValueError, match=message):
        model.save_model(tmp_path / "m.json", format="xgboost")
