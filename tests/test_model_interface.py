"""Every public helper with every model type: it works, or raises NotApplicableError
saying why it does not apply (docs/architecture.md, "Models")."""
import json
import warnings

import numpy as np
import pytest
from small_models import (
    ALGORITHMS,
    BOOSTERS,
    CLASSIFIER_TREES,
    STAGED,
    takes_expensive_model,
)

import cbudget
from cbudget.model_io import MODEL_TYPES

COSTS = dict(feature_costs=[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], cost_groups={"pair": [4, 5]},
             group_costs={"pair": 2.5}, split_cost=0.01)


def _data(n, seed):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 6))
    y = ((X[:, 0] + 0.6 * X[:, 1] - 0.4 * X[:, 4] + 0.3 * rng.normal(size=n)) > 0)
    X[rng.random(X.shape) < 0.05] = np.nan      # missing values follow the default direction
    return X, y.astype(np.float64)


@pytest.fixture(scope="module")
def data():
    X, y = _data(400, 0)
    Xv, yv = _data(200, 1)
    dtrain = cbudget.Dataset(X, y, **COSTS)
    dvalid = cbudget.Dataset(Xv, yv, reference=dtrain)
    return dtrain, dvalid, Xv


def _params(algorithm):
    params = {"algorithm": algorithm, "objective": "binary:logistic", "n_jobs": 1}
    if algorithm == "adapt_lin":
        params["n_restarts"] = 1
    if algorithm in CLASSIFIER_TREES:
        params["max_depth"] = 2
    if algorithm == "cegb":   # below lambda_max (0.2 here): models that split
        params["cost_tradeoff"] = 0.01
    return params


def _train(algorithm, dtrain, f0, rounds=6, params=(), **kwargs):
    extra = {"expensive_model": f0} if takes_expensive_model(algorithm) else {}
    return cbudget.train({**_params(algorithm), **dict(params)}, dtrain, rounds,
                         verbose_eval=False, **extra, **kwargs)


@pytest.fixture(scope="module")
def models(data):
    dtrain, dvalid, _ = data
    f0 = cbudget.train({"objective": "binary:logistic", "n_jobs": 1}, dtrain, 10,
                       verbose_eval=False)
    return {algorithm: _train(algorithm, dtrain, f0, evals=[(dvalid, "valid")])
            for algorithm in ALGORITHMS}, f0


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_every_model_is_a_registered_model(models, algorithm):
    model = models[0][algorithm]
    assert isinstance(model, cbudget.Model)
    assert MODEL_TYPES[model.model_type] is type(model)
    assert model.algorithm == algorithm
    assert model.num_features() == 6 and model.feature_names == [f"f{i}" for i in range(6)]


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_costs_acquisitions_and_reports_agree(models, data, algorithm):
    model = models[0][algorithm]
    _, _, X = data
    cost = model.predict_cost(X)
    acquired = model.acquisitions(X)
    assert acquired.dtype == bool and acquired.shape == (X.shape[0], 6)
    parts = model.cost_parts(X)
    assert np.array_equal(parts.acquired, acquired)
    # the cost is the acquired features (groups once) plus split / tree costs
    np.testing.assert_allclose(model.cost_model.acquisition_costs(acquired) + parts.other,
                               cost, rtol=1e-12, atol=1e-12)
    assert np.all(parts.other >= -1e-12)
    report = model.cost_report(X)
    assert report.mean_cost == pytest.approx(cost.mean())
    np.testing.assert_array_equal(report.acquisition_rate, acquired.mean(axis=0))
    # an input only pays for features the model uses (a gated model: or its f0 reads)
    used = model.used_features()
    if isinstance(model, cbudget.GatedModel):
        used = np.union1d(used, model.expensive.used_features())
    assert not acquired[:, np.setdiff1d(np.arange(6), used)].any()


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_files_round_trip(models, data, algorithm, tmp_path):
    model = models[0][algorithm]
    _, _, X = data
    path = tmp_path / "model.json"
    model.save_model(path)
    loaded = cbudget.load_model(path)
    assert type(loaded) is type(model)
    np.testing.assert_array_equal(loaded.predict(X), model.predict(X))
    np.testing.assert_array_equal(loaded.predict_cost(X), model.predict_cost(X))
    np.testing.assert_array_equal(loaded.acquisitions(X), model.acquisitions(X))
    text = json.dumps(model.to_dict(), sort_keys=True)
    assert json.dumps(loaded.to_dict(), sort_keys=True) == text
    rebuilt = cbudget.model_io.model_from_dict(json.loads(text))
    assert json.dumps(rebuilt.to_dict(), sort_keys=True) == text


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_staged_helpers_work_or_say_they_do_not_apply(models, data, algorithm):
    model = models[0][algorithm]
    dtrain, dvalid, X = data
    if algorithm in STAGED:
        curve = model.cost_curve(X)
        assert curve.shape == (model.num_iterations(),)
        assert np.all(np.diff(curve) >= -1e-12)
        assert curve[-1] == pytest.approx(model.predict_cost(X).mean())
        choice = model.best_iteration_within_budget(dvalid, curve[2])
        assert choice.iteration <= 2 and choice.cost <= curve[2]
        assert isinstance(choice, cbudget.BudgetChoice)
        first = model[:2]
        assert first.num_iterations() == 2
        assert model.predict_cost(X, iteration_range=(0, 2)) == pytest.approx(
            first.predict_cost(X))
        return
    for call in (lambda: model.cost_curve(X), lambda: model.num_iterations(),
                 lambda: model[:2], lambda: model.best_iteration_within_budget(dvalid, 1.0)):
        with pytest.raises(cbudget.NotApplicableError, match="stages"):
            call()


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_early_exit_works_or_says_it_does_not_apply(models, data, algorithm):
    """Exit rules on the additive models (boosters, ADAPT-GBRT's gate and predictor);
    NotApplicableError saying why on the others."""
    model = models[0][algorithm]
    dtrain, dvalid, X = data
    if algorithm not in BOOSTERS + ("adapt_gbrt",):
        with pytest.raises(cbudget.NotApplicableError, match="exit"):
            model.calibrate_exits(dvalid, 0.05)
        return
    model = cbudget.model_io.model_from_dict(model.to_dict())     # a copy to calibrate
    full_cost = model.predict_cost(X)
    full = model.predict(X)
    model.calibrate_exits(dvalid, 0.0)
    assert np.array_equal(model.predict(X) > 0.5, full > 0.5)
    assert np.all(model.predict_cost(X) <= full_cost + 1e-12)
    assert np.array_equal(model.predict(X, early_exit=False), full)
    assert np.array_equal(model.cost_parts(X, early_exit=False).acquired,
                          model.acquisitions(X, early_exit=False))


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_feature_importance_works_or_says_it_does_not_apply(models, algorithm):
    model = models[0][algorithm]
    for kind in ("split", "gain", "cost"):
        try:
            importance = model.feature_importance(kind)
        except cbudget.NotApplicableError as exc:
            assert "does not apply" in str(exc)
            continue
        assert importance.shape == (6,) and np.all(importance >= 0)
        used = np.zeros(6, dtype=bool)
        used[model.used_features()] = True
        assert not importance[~used].any()
        by_name = model.feature_importance_by_name(kind)
        assert by_name == {f"f{m}": importance[m] for m in np.argsort(-importance, kind="stable")
                           if importance[m]}
        assert list(by_name.values()) == sorted(by_name.values(), reverse=True)
    assert model.used_feature_names() == [f"f{m}" for m in model.used_features()]
    with pytest.raises((ValueError, cbudget.NotApplicableError)):
        model.feature_importance("nope")


@pytest.mark.filterwarnings("ignore:the model before iteration")   # dense at the start
@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_budget_stopping_works_for_every_model_type(models, data, algorithm):
    dtrain, dvalid, X = data
    f0 = models[1]
    full = models[0][algorithm]
    budget = 0.5 * full.predict_cost(dvalid).mean()
    stop = cbudget.BudgetStopping(budget, dvalid, verbose=False)
    model = _train(algorithm, dtrain, f0, callbacks=[stop])
    assert len(stop.cost_history) >= 1
    if stop.stopped_at is not None:
        assert stop.cost_history[-1] > budget
        if algorithm in STAGED:   # the round that crossed the budget is dropped
            assert model.num_iterations() == stop.stopped_at
            assert model.predict_cost(dvalid).mean() <= budget


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_early_stopping_sets_the_best_iteration(models, data, algorithm):
    dtrain, dvalid, X = data
    result = {}
    model = _train(algorithm, dtrain, models[1], rounds=8, evals=[(dvalid, "valid")],
                   early_stopping_rounds=2, evals_result=result)
    history = result["valid"][list(result["valid"])[-1]]
    assert model.best_iteration is not None
    assert model.best_score == pytest.approx(min(history))


def test_a_forest_as_expensive_model_gives_probabilities_not_classes(data):
    """A forest's predict gives classes; the gate's f0 probability is its vote share."""
    dtrain, dvalid, X = data
    forest = cbudget.train({"algorithm": "budget_rf", "n_jobs": 1, "n_stumps": "all"},
                           dtrain, 5, verbose_eval=False)
    gated = _train("adapt_gbrt", dtrain, forest)
    predictions, route = gated.predict(X, return_route=True)
    assert (route == 0).any()
    np.testing.assert_array_equal(predictions[route == 0],
                                  forest.predict_proba(X[route == 0])[:, 1])
    assert not np.all(np.isin(predictions[route == 0], (0.0, 1.0)))


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_a_budget_crossed_by_the_first_iteration_keeps_no_iteration(models, data, algorithm):
    """BudgetStopping at iteration 0 gives the model before any iteration, not the one
    that crossed the budget."""
    dtrain, dvalid, _ = data
    # no cost penalty: the first iteration reads features
    declared = cbudget.algorithms.REGISTRY[algorithm].declared
    params = {"cost_tradeoff": 0.0} if "cost_tradeoff" in declared else {}
    crossing = _train(algorithm, dtrain, models[1], rounds=1, params=params)
    budget = 0.5 * crossing.predict_cost(dvalid).mean()
    stop = cbudget.BudgetStopping(budget, dvalid, verbose=False)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model = _train(algorithm, dtrain, models[1], params=params, callbacks=[stop])
    assert stop.stopped_at == 0
    cost = model.predict_cost(dvalid).mean()
    # a model optimised as a whole (a tree of classifiers) may start dense: then it says so
    warned = [w for w in caught if "no iteration of it is within the budget" in str(w.message)]
    assert (cost <= budget and not warned) or (cost > budget and len(warned) == 1)
    if algorithm in STAGED or takes_expensive_model(algorithm):
        assert cost <= budget


def test_none_stands_for_the_default():
    from cbudget.algorithms import resolve_params

    for algorithm in ALGORITHMS:
        defaults = resolve_params({"algorithm": algorithm})
        given = {name: None for name in defaults if name != "algorithm"}
        assert resolve_params({"algorithm": algorithm, **given}) == defaults


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_infinite_inputs_give_finite_predictions(models, algorithm):
    """+inf and -inf in one input gave inf - inf = NaN in linear nodes; every model type
    predicts a finite value and cost (trees send +-inf past any threshold; linear nodes
    read an infinite value as missing: the node's impute value)."""
    model = models[0][algorithm]
    X = np.array([[np.inf, -np.inf, np.inf, -np.inf, np.inf, -np.inf],
                  [-np.inf, np.inf, 0.0, 0.0, -np.inf, np.inf],
                  [np.inf] * 6, [-np.inf] * 6])
    assert np.all(np.isfinite(model.predict(X)))
    assert np.all(np.isfinite(model.predict_cost(X)))


def test_a_stored_expensive_model_must_be_a_binary_classifier(models):
    """A gated model's f0 read from its file was not checked: a regression booster there
    gave "probabilities" outside [0, 1]."""
    gated = models[0]["adapt_gbrt"]
    doc = gated.to_dict()
    doc["expensive"]["objective"] = "reg:squarederror"
    doc["expensive"]["training_params"]["objective"] = "reg:squarederror"
    with pytest.raises(ValueError, match="expensive model must be a binary classifier"):
        cbudget.model_io.model_from_dict(doc)
