"""The regression objectives beyond squared error (issue 47): absolute error,
pseudo-Huber, quantile, Poisson, Tweedie and gamma, with XGBoost's definitions of their
gradients, base scores and metrics; the adaptive leaves of absolute error and quantile;
label checks; custom objectives and metrics as Python callables; saving, aliases,
the estimators and the exported ONNX graph."""
import warnings

import numpy as np
import pytest

import cbudget
from cbudget.metrics import check_metric, evaluate_metric
from cbudget.objectives import get_objective, weighted_quantile

NEW = ["reg:absoluteerror", "reg:pseudohubererror", "reg:quantileerror", "count:poisson",
       "reg:tweedie", "reg:gamma"]
ALGORITHMS = ["gbdt", "cegb", "greedy_miser"]
PARAMS = {"huber_slope": 0.7, "quantile_alpha": 0.8, "tweedie_variance_power": 1.3}


def _data(objective, n=600, seed=0):
    """Features and labels that fit the objective: heavy-tailed values for the
    identity-link ones, counts for Poisson, zero-inflated amounts for Tweedie, positive
    amounts for gamma."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 4))
    signal = X[:, 0] + 0.5 * X[:, 1]
    mean = np.exp(0.8 * signal)
    if objective == "count:poisson":
        y = rng.poisson(mean).astype(float)
    elif objective == "reg:tweedie":
        y = rng.poisson(mean) * rng.gamma(2.0, 0.5, n)
    elif objective == "reg:gamma":
        y = rng.gamma(2.0, mean / 2.0)
    else:
        y = signal + rng.standard_t(2, n)
    return X, y


def _losses(objective, raw, y):
    """NumPy reference: each row's loss as a function of the raw score (the terms with
    the raw score), as XGBoost defines it."""
    z = raw - y
    if objective == "reg:pseudohubererror":
        s = PARAMS["huber_slope"]
        return s * s * (np.sqrt(1 + (z / s) ** 2) - 1)
    if objective == "count:poisson":
        return np.exp(raw) - y * raw
    if objective == "reg:tweedie":
        rho = PARAMS["tweedie_variance_power"]
        return (-y * np.exp((1 - rho) * raw) / (1 - rho)
                + np.exp((2 - rho) * raw) / (2 - rho))
    if objective == "reg:gamma":
        return y * np.exp(-raw) + raw
    if objective == "reg:quantileerror":
        a = PARAMS["quantile_alpha"]
        return np.where(z <= 0, -a * z, (1 - a) * z)
    return np.abs(z)


def _gradients(objective, raw, y, weight=None):
    obj = get_objective(objective, None, PARAMS)
    grad = np.empty((len(y), 1), order="F")
    hess = np.empty((len(y), 1), order="F")
    obj.gradients(raw.reshape(-1, 1), y, weight, grad, hess)
    return grad[:, 0], hess[:, 0]


@pytest.mark.parametrize("objective", NEW)
def test_gradients_match_finite_differences(objective):
    X, y = _data(objective, n=200)
    rng = np.random.default_rng(1)
    raw = np.log(np.mean(y) + 1.0) + 0.3 * rng.normal(size=len(y)) \
        if objective in ("count:poisson", "reg:tweedie", "reg:gamma") \
        else y + rng.normal(size=len(y))       # away from the kink of |z|
    weight = rng.uniform(0.5, 2.0, len(y))
    grad, hess = _gradients(objective, raw, y, weight)
    h = 1e-5
    fd_grad = (_losses(objective, raw + h, y) - _losses(objective, raw - h, y)) / (2 * h)
    np.testing.assert_allclose(grad, weight * fd_grad, rtol=1e-5, atol=1e-7)
    h = 1e-4        # the second difference loses eps / h^2 of the loss
    fd_hess = (_losses(objective, raw + h, y) - 2 * _losses(objective, raw, y)
               + _losses(objective, raw - h, y)) / h ** 2
    if objective in ("reg:absoluteerror", "reg:quantileerror"):
        np.testing.assert_array_equal(hess, weight)     # 0 really: leaves are re-fitted
    elif objective == "count:poisson":     # XGBoost's safeguard: exp(raw + 0.7)
        np.testing.assert_allclose(hess, weight * fd_hess * np.exp(0.7), rtol=1e-4)
    else:
        np.testing.assert_allclose(hess, weight * fd_hess, rtol=1e-4, atol=1e-6)


def test_weighted_quantile_is_xgboost_s():
    rng = np.random.default_rng(2)
    for n in (1, 2, 5, 50):
        values = rng.normal(size=n)
        for alpha in (0.01, 0.1, 0.5, 0.8, 0.99):
            # unweighted: NIST's interpolation at alpha (n + 1), numpy's "weibull"
            expected = np.quantile(values, alpha, method="weibull")
            assert weighted_quantile(values, None, alpha) == pytest.approx(expected)
            weight = rng.uniform(0.1, 3.0, n)
            # weighted: the first value (sorted) whose cumulative weight reaches alpha W
            order = np.argsort(values)
            cdf = np.cumsum(weight[order])
            first = next(i for i in range(n) if cdf[i] >= alpha * cdf[-1])
            assert weighted_quantile(values, weight, alpha) == values[order][first]


@pytest.mark.parametrize("objective,expected", [
    ("reg:absoluteerror", lambda y: np.quantile(y, 0.5, method="weibull")),
    ("reg:pseudohubererror", lambda y: np.quantile(y, 0.5, method="weibull")),
    ("reg:quantileerror", lambda y: np.quantile(y, 0.8, method="weibull")),
    ("count:poisson", lambda y: np.log(y.mean())),
    ("reg:tweedie", lambda y: np.log(y.mean())),
    ("reg:gamma", lambda y: np.log(y.mean())),
])
def test_base_scores(objective, expected):
    X, y = _data(objective)
    model = cbudget.train({"objective": objective, **PARAMS}, cbudget.Dataset(X, y), 0)
    assert model.base_score[0] == pytest.approx(expected(y))
    if objective in ("count:poisson", "reg:tweedie", "reg:gamma"):
        # a given base_score is a mean, as in XGBoost
        given = cbudget.train({"objective": objective, "base_score": 2.0},
                              cbudget.Dataset(X, y), 0)
        assert given.base_score[0] == pytest.approx(np.log(2.0))
        assert given.predict(X[:3]) == pytest.approx([2.0] * 3)
        with pytest.raises(ValueError, match="is a mean, > 0"):
            cbudget.train({"objective": objective, "base_score": -1.0},
                          cbudget.Dataset(X, y), 0)


@pytest.mark.parametrize("objective,labels,message", [
    ("count:poisson", [0.0, 2.0, -1.0], "non-negative labels"),
    ("reg:tweedie", [0.0, 2.0, -0.5], "non-negative labels"),
    ("reg:gamma", [1.0, 0.0, 3.0], "positive labels"),
    ("count:poisson", [0.0, 0.0, 0.0], "some positive label"),
])
def test_labels_checked(objective, labels, message):
    X = np.arange(6.0).reshape(3, 2)
    with pytest.raises(ValueError, match=message):
        cbudget.train({"objective": objective}, cbudget.Dataset(X, np.array(labels)), 2)


@pytest.mark.parametrize("algorithm", ALGORITHMS)
@pytest.mark.parametrize("objective", NEW)
def test_each_objective_improves_its_metric(objective, algorithm):
    X, y = _data(objective)
    dtrain = cbudget.Dataset(X[:450], y[:450], feature_costs=[1.0, 1.0, 2.0, 2.0])
    dvalid = cbudget.Dataset(X[450:], y[450:], reference=dtrain)
    params = {"objective": objective, "algorithm": algorithm, "num_leaves": 8, **PARAMS}
    if algorithm != "gbdt":
        params["cost_tradeoff"] = 1e-3
    log: dict = {}
    model = cbudget.train(params, dtrain, 30, evals=[(dvalid, "valid")], evals_result=log,
                          verbose_eval=False)
    metric = model.default_metric
    values = log["valid"][metric]
    # held out: better than the base score by a margin of the metric's spread
    assert values[-1] < values[0] - 0.02 * abs(values[0]), (metric, values[0], values[-1])
    assert evaluate_metric(metric, y[450:], model.predict(X[450:])) == \
        pytest.approx(values[-1])


def test_metric_names():
    assert get_objective("reg:quantileerror", None, {"quantile_alpha": 0.9}).metric \
        == "quantile@0.9"
    assert get_objective("reg:tweedie", None, {}).metric == "tweedie-nloglik@1.5"
    assert get_objective("reg:pseudohubererror", None, {}).metric == "mphe"
    with pytest.raises(ValueError, match="in \\(0, 1\\)"):
        check_metric("quantile@1.5", "reg:quantileerror")
    with pytest.raises(ValueError, match="in \\[1, 2\\)"):
        check_metric("tweedie-nloglik@2", "reg:tweedie")
    with pytest.raises(ValueError, match="does not apply to reg:squarederror"):
        check_metric("poisson-nloglik", "reg:squarederror")
    check_metric("mae", "count:poisson")


@pytest.mark.parametrize("metric,objective,params", [
    ("mae", "reg:absoluteerror", {}),
    ("mphe", "reg:pseudohubererror", {"huber_slope": 1.0}),
    ("quantile", "reg:quantileerror", {"quantile_alpha": 0.5}),
    ("poisson-nloglik", "count:poisson", {}),
    ("gamma-nloglik", "reg:gamma", {}),
    ("gamma-deviance", "reg:gamma", {}),
    ("tweedie-nloglik@1.3", "reg:tweedie", {"tweedie_variance_power": 1.3}),
])
def test_metrics_agree_with_xgboost(metric, objective, params):
    xgb = pytest.importorskip("xgboost")
    X, y = _data(objective, n=300)
    dmatrix = xgb.DMatrix(X, y)
    booster = xgb.train({"objective": objective, "eval_metric": metric, "max_depth": 3,
                         **params}, dmatrix, 5)
    theirs = float(booster.eval(dmatrix).split(":")[-1])
    ours = evaluate_metric(metric, y, booster.predict(dmatrix).astype(np.float64))
    assert ours == pytest.approx(theirs, rel=2e-5, abs=1e-6)


def _leaf_quantiles(model, X, y, alpha, learning_rate, weight=None):
    """Per leaf of the first tree: learning_rate times the alpha quantile of its rows'
    residuals from the base score, and the tree's value (XGBoost's adaptive leaves)."""
    leaves = model.predict(X, pred_leaf=True)[:, 0]
    tree = model.trees[0]
    residual = y - model.base_score[0]
    for leaf in np.unique(leaves):
        rows = leaves == leaf
        expected = learning_rate * weighted_quantile(
            residual[rows], None if weight is None else weight[rows], alpha)
        yield expected, tree["value"][leaf]


@pytest.mark.parametrize("objective,alpha", [("reg:absoluteerror", 0.5),
                                             ("reg:quantileerror", 0.8)])
@pytest.mark.parametrize("weighted", [False, True])
def test_adaptive_leaves_hold_the_residuals_quantile(objective, alpha, weighted):
    X, y = _data(objective)
    weight = np.random.default_rng(3).uniform(0.2, 3.0, len(y)) if weighted else None
    model = cbudget.train({"objective": objective, "quantile_alpha": alpha,
                           "learning_rate": 0.3, "num_leaves": 8},
                          cbudget.Dataset(X, y, weight=weight), 1)
    assert model.trees[0].shape[0] > 1
    for expected, value in _leaf_quantiles(model, X, y, alpha, 0.3, weight):
        assert value == pytest.approx(expected, rel=1e-12, abs=1e-12)
    # the training scores follow the renewed values: a second round starts from them
    two = cbudget.train({"objective": objective, "quantile_alpha": alpha,
                         "learning_rate": 0.3, "num_leaves": 8},
                        cbudget.Dataset(X, y, weight=weight), 2)
    assert np.array_equal(two.trees[0]["value"], model.trees[0]["value"])
    raw = model.predict(X, output_margin=True)
    leaves = two.predict(X, pred_leaf=True)[:, 1]
    for leaf in np.unique(leaves):
        rows = leaves == leaf
        expected = 0.3 * weighted_quantile((y - raw)[rows],
                                           None if weight is None else weight[rows], alpha)
        assert two.trees[1]["value"][leaf] == pytest.approx(expected, rel=1e-12, abs=1e-12)


def test_adaptive_leaves_with_row_sampling_use_the_rounds_rows():
    """With subsample < 1 a leaf holds the quantile of its in-bag rows' residuals (the
    rows the tree grew on), as XGBoost and LightGBM re-fit them."""
    from cbudget.algorithms.boosting import RoundSampler
    X, y = _data("reg:absoluteerror")
    data = cbudget.Dataset(X, y)
    params = {"objective": "reg:absoluteerror", "subsample": 0.5, "learning_rate": 0.5,
              "num_leaves": 6}
    model = cbudget.train(params, data, 1)
    in_bag, _ = RoundSampler({"seed": 0, "subsample": 0.5, "colsample_bytree": 1.0},
                             len(y), data.n_value_bins, 1).sample(0)
    leaves = model.predict(X, pred_leaf=True)[:, 0]
    residual = y - model.base_score[0]
    for leaf in np.unique(leaves):
        rows = (leaves == leaf) & in_bag
        assert model.trees[0]["value"][leaf] == pytest.approx(
            0.5 * np.quantile(residual[rows], 0.5, method="weibull"), rel=1e-12)


def test_aliases_and_unknown_names():
    X, y = _data("count:poisson", n=200)
    data = cbudget.Dataset(X, y)
    for alias, name in [("poisson", "count:poisson"), ("regression_l1", "reg:absoluteerror"),
                        ("quantile", "reg:quantileerror"), ("gamma", "reg:gamma"),
                        ("tweedie", "reg:tweedie")]:
        if name == "reg:gamma":
            data = cbudget.Dataset(X, y + 1.0)
        model = cbudget.train({"objective": alias}, data, 2)
        assert model.objective == name and model.params["objective"] == name
    with pytest.raises(ValueError, match="unknown objective 'reg:huber'"):
        cbudget.train({"objective": "reg:huber"}, data, 2)
    with pytest.raises(TypeError, match="obj=function"):
        cbudget.train({"objective": lambda p, d: (p, p)}, data, 2)


@pytest.mark.parametrize("objective", NEW)
def test_models_save_and_load(objective, tmp_path):
    X, y = _data(objective, n=300)
    model = cbudget.train({"objective": objective, **PARAMS}, cbudget.Dataset(X, y), 5)
    path = tmp_path / "m.json"
    model.save_model(path)
    loaded = cbudget.load_model(path)
    assert loaded.objective == objective
    assert loaded.default_metric == model.default_metric
    np.testing.assert_array_equal(loaded.predict(X), model.predict(X))


def test_onnx_graph_applies_exp_for_the_log_link(tmp_path):
    onnx = pytest.importorskip("onnx")
    from onnx.reference import ReferenceEvaluator
    for objective in NEW:
        X, y = _data(objective, n=300)
        model = cbudget.train({"objective": objective, **PARAMS}, cbudget.Dataset(X, y), 5)
        path = tmp_path / "m.onnx"
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", cbudget.ExportWarning)
            model.save_model(path, format="onnx")
        graph = onnx.load(str(path))
        has_exp = any(node.op_type == "Exp" for node in graph.graph.node)
        assert has_exp == (objective in ("count:poisson", "reg:tweedie", "reg:gamma"))
        prediction, margin = ReferenceEvaluator(graph).run(None, {"input": X})
        np.testing.assert_allclose(margin, model.predict(X, output_margin=True), rtol=1e-12)
        np.testing.assert_allclose(prediction, model.predict(X), rtol=1e-12)


def test_exits_refused_for_the_log_link():
    X, y = _data("count:poisson", n=300)
    data = cbudget.Dataset(X, y)
    model = cbudget.train({"objective": "count:poisson"}, data, 5)
    with pytest.raises(cbudget.NotApplicableError, match="predicts exp\\(raw score\\)"):
        model.calibrate_exits(data, epsilon=0.05, tolerance=0.5)
    # the identity-link ones take regression exits
    X, y = _data("reg:absoluteerror", n=300)
    model = cbudget.train({"objective": "reg:absoluteerror"}, cbudget.Dataset(X, y), 5)
    model.calibrate_exits(cbudget.Dataset(X, y), epsilon=0.05, tolerance=0.5)


# -- callables ------------------------------------------------------------------------
def _squared_error(preds, dtrain):
    return preds - dtrain.get_label(), np.ones_like(preds)


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_custom_squared_error_reproduces_the_built_in_one(algorithm):
    X, y = _data("reg:squarederror")
    weight = np.random.default_rng(4).uniform(0.5, 2.0, len(y))
    data = cbudget.Dataset(X, y, weight=weight, feature_costs=[1.0, 2.0, 0.5, 1.0])
    params = {"algorithm": algorithm, "subsample": 0.8}
    if algorithm != "gbdt":
        params["cost_tradeoff"] = 1e-3

    def weighted_squared_error(preds, dtrain):
        grad, hess = _squared_error(preds, dtrain)
        return grad * dtrain.get_weight(), hess * dtrain.get_weight()
    built_in = cbudget.train(params, data, 15)
    custom = cbudget.train(params, data, 15, obj=weighted_squared_error)
    assert custom.objective == "reg:squarederror"
    np.testing.assert_array_equal(custom.predict(X), built_in.predict(X))


def test_custom_logistic_objective_reproduces_binary_logistic():
    X, y = _data("reg:squarederror")
    labels = (y > np.median(y)).astype(float)
    data = cbudget.Dataset(X, labels)

    def logistic(preds, dtrain):
        p = 1.0 / (1.0 + np.exp(-preds))
        return p - dtrain.get_label(), np.maximum(p * (1.0 - p), 1e-16)
    params = {"objective": "binary:logistic"}
    built_in = cbudget.train(params, data, 10)
    custom = cbudget.train(params, data, 10, obj=logistic)
    np.testing.assert_allclose(custom.predict(X), built_in.predict(X), rtol=1e-12)


def test_custom_metric_is_logged_and_drives_early_stopping():
    X, y = _data("reg:squarederror")
    dtrain = cbudget.Dataset(X[:450], y[:450])
    dvalid = cbudget.Dataset(X[450:], y[450:], reference=dtrain)
    calls = []

    def bowl(preds, data):
        """Best at its sixth call (iteration 5), whatever the predictions."""
        assert preds.shape == (data.num_data(),)
        calls.append(1)
        return "bowl", float((len(calls) - 6) ** 2)
    log: dict = {}
    model = cbudget.train({}, dtrain, 100, evals=[(dvalid, "valid")], evals_result=log,
                          custom_metric=bowl, early_stopping_rounds=3, verbose_eval=False)
    assert list(log["valid"]) == ["rmse", "bowl"]
    assert log["valid"]["bowl"][:7] == [25.0, 16.0, 9.0, 4.0, 1.0, 0.0, 1.0]
    assert model.best_iteration == 5 and len(log["valid"]["rmse"]) == 9
    # maximize=True: the largest value is the best (the first)
    calls.clear()
    model = cbudget.train({}, dtrain, 100, evals=[(dvalid, "valid")], custom_metric=bowl,
                          early_stopping_rounds=3, maximize=True, verbose_eval=False)
    assert model.best_iteration == 0


def test_custom_metric_gets_raw_scores_with_a_custom_objective():
    X, y = _data("count:poisson")
    data = cbudget.Dataset(X, y)
    seen = {}

    def record(key):
        def metric(preds, dvalid):
            seen[key] = preds
            return "m", 0.0
        return metric

    def poisson(preds, dtrain):
        return np.exp(preds) - dtrain.get_label(), np.exp(preds + 0.7)
    model = cbudget.train({"objective": "count:poisson"}, data, 3, evals=[(data, "t")],
                          custom_metric=record("built_in"), verbose_eval=False)
    np.testing.assert_allclose(seen["built_in"], model.predict(X))
    model = cbudget.train({"objective": "count:poisson"}, data, 3, evals=[(data, "t")],
                          obj=poisson, custom_metric=record("custom"), verbose_eval=False)
    np.testing.assert_allclose(seen["custom"], model.predict(X, output_margin=True))


def test_callables_checked():
    X, y = _data("reg:squarederror", n=100)
    data = cbudget.Dataset(X, y)
    with pytest.raises(TypeError, match="obj must be a callable"):
        cbudget.train({}, data, 2, obj="reg:squarederror")
    with pytest.raises(cbudget.NotApplicableError, match="applies to algorithms"):
        cbudget.train({"algorithm": "budget_rf", "objective": "binary:logistic"},
                      cbudget.Dataset(X, (y > 0).astype(float)), 2, obj=_squared_error)
    with pytest.raises(ValueError, match="one per row and output"):
        cbudget.train({}, data, 2, obj=lambda p, d: (p[:5], p[:5]))
    with pytest.raises(ValueError, match="NaN or infinity"):
        cbudget.train({}, data, 2, obj=lambda p, d: (p * np.nan, p))
    with pytest.raises(TypeError, match="return \\(grad, hess\\)"):
        cbudget.train({}, data, 2, obj=lambda p, d: p)
    with pytest.raises(ValueError, match="is a built-in metric's"):
        cbudget.train({}, data, 2, evals=[(data, "t")], custom_metric=lambda p, d: ("rmse", 1.0),
                      verbose_eval=False)
    with pytest.raises(TypeError, match="\\(name, value\\)"):
        cbudget.train({}, data, 2, evals=[(data, "t")], custom_metric=lambda p, d: 1.0,
                      verbose_eval=False)


# -- the estimators ---------------------------------------------------------------------
def test_regressor_objectives_and_callables():
    from cbudget.sklearn import CEGBRegressor, GBDTClassifier, GBDTRegressor
    X, y = _data("reg:quantileerror", n=800)
    upper = GBDTRegressor(objective="quantile", n_estimators=60,
                          params={"quantile_alpha": 0.9}).fit(X, y)
    assert upper.model_.objective == "reg:quantileerror"
    coverage = np.mean(y <= upper.predict(X))
    assert 0.85 < coverage < 0.97
    # a LightGBM-style callable: squared error reproduces the default
    def squared(y_true, y_pred):
        return y_pred - y_true, np.ones_like(y_pred)
    np.testing.assert_array_equal(GBDTRegressor(objective=squared, n_estimators=10)
                                  .fit(X, y).predict(X),
                                  GBDTRegressor(n_estimators=10).fit(X, y).predict(X))
    with pytest.raises(ValueError, match="trains with \\['binary:logistic'\\]"):
        GBDTClassifier(objective="count:poisson").fit(X, y > 0)
    with pytest.raises(ValueError, match="give cost_tradeoff a number"):
        CEGBRegressor(objective=squared).fit(X, y)
    with pytest.raises(TypeError, match="got 1 parameters"):
        GBDTRegressor(objective=lambda a: a).fit(X, y)
