"""cbudget.sklearn: the scikit-learn estimators pass scikit-learn's estimator checks and
work in its tools (pipelines, grid search, cross-validation, clone), with costs by
column name or position, early stopping, the cost methods and ADAPT's expensive
models."""
import os
import subprocess
import sys
import warnings

import numpy as np
import pytest

sklearn = pytest.importorskip("sklearn")

from sklearn.base import clone  # noqa: E402
from sklearn.datasets import make_classification, make_regression  # noqa: E402
from sklearn.exceptions import NotFittedError  # noqa: E402
from sklearn.frozen import FrozenEstimator  # noqa: E402
from sklearn.linear_model import LogisticRegression  # noqa: E402
from sklearn.model_selection import GridSearchCV, cross_val_score  # noqa: E402
from sklearn.pipeline import make_pipeline  # noqa: E402
from sklearn.preprocessing import StandardScaler  # noqa: E402
from sklearn.utils.estimator_checks import parametrize_with_checks  # noqa: E402

import cbudget  # noqa: E402
from cbudget.sklearn import (  # noqa: E402
    BUDGET_MARGIN,
    ADAPTClassifier,
    BudgetRFClassifier,
    CEGBClassifier,
    CEGBRanker,
    CEGBRegressor,
    CSTCClassifier,
    CSTCRegressor,
    GBDTClassifier,
    GBDTRanker,
    GBDTRegressor,
    GreedyMiserClassifier,
    GreedyMiserRanker,
    GreedyMiserRegressor,
)

# small models: the checks fit each estimator a few hundred times
CHECKED = [
    GBDTClassifier(n_estimators=5), GBDTRegressor(n_estimators=5, learning_rate=0.5),
    CEGBClassifier(n_estimators=5), CEGBRegressor(n_estimators=5, learning_rate=0.5),
    GreedyMiserClassifier(n_estimators=5),
    GreedyMiserRegressor(n_estimators=5, learning_rate=0.5),
    BudgetRFClassifier(n_estimators=5),
    CSTCClassifier(n_estimators=2, max_depth=2), CSTCRegressor(n_estimators=2, max_depth=2),
    ADAPTClassifier(n_estimators=5),
    ADAPTClassifier(algorithm="adapt_lin", n_estimators=2, params={"n_restarts": 1}),
]

SKLEARN_VERSION = tuple(int(part) for part in sklearn.__version__.split(".")[:2])
SAMPLE_WEIGHT_EQUIVALENCE = ("check_sample_weight_equivalence_on_dense_data",
                             "check_sample_weight_equivalence_on_sparse_data")


def binary_only(estimator) -> bool:
    """A classifier whose tags say it takes two classes only (CSTC, ADAPT)."""
    tags = estimator.__sklearn_tags__()
    return tags.classifier_tags is not None and not tags.classifier_tags.multi_class


def expected_failed_checks(estimator):
    """The checks that cannot apply, with the reason."""
    if isinstance(estimator, BudgetRFClassifier):
        reason = ("a weight is not a repeated row: each tree's bootstrap draws rows "
                  "uniformly, so a row of weight 2 is not drawn as often as two copies")
    elif isinstance(estimator, ADAPTClassifier) and estimator.algorithm == "adapt_lin":
        # measured with tmp scripts for issue 42 (the weighted standardisation is not it:
        # the same difference before and after)
        reason = ("on the check's 15 rows of 30 features f1 fits every row, so the q-step "
                  "sends almost none to f0 and the gate is flat (margins -18.68 +- 0.003, "
                  "weights ~1e-3, at L-BFGS's tolerance); the calibrated threshold still "
                  "sends the p_full share, by those margins, so which row goes to f0 "
                  "follows the order of floating-point sums: the weighted data in another "
                  "row order differs as much (0.11 in that row's probability), and with "
                  "gate_threshold=0 weights and repeated rows agree to 2e-6, L-BFGS's "
                  "tolerance, above the check's rtol of 1e-7")
    elif SKLEARN_VERSION < (1, 7) and binary_only(estimator):
        reason = ("scikit-learn 1.6's check makes the labels of a binary-only classifier "
                  "binary by the first row's class, which differs between its repeated and "
                  "its shuffled weighted data (1.7 fixed it)")
    else:
        return {}
    return {check: reason for check in SAMPLE_WEIGHT_EQUIVALENCE}


@parametrize_with_checks(CHECKED, expected_failed_checks=expected_failed_checks)
def test_sklearn_estimator_checks(estimator, check):
    check(estimator)


def _binary(n=300, seed=0):
    X, y = make_classification(n, 5, n_informative=3, random_state=seed)
    return X, y


def test_import_cbudget_does_not_import_sklearn(tmp_path):
    code = ("import sys, cbudget; assert 'cbudget.sklearn' not in sys.modules; "
            "assert 'sklearn' not in sys.modules")
    # this cbudget (installed, or an in-place build), not a source tree in the cwd
    env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(cbudget.__file__)))
    subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, check=True)


def test_grid_search_over_cost_tradeoff_with_string_labels():
    X, y = _binary()
    labels = np.array(["no", "yes"])[y]
    costs = [1.0, 2.0, 4.0, 8.0, 16.0]
    search = GridSearchCV(CEGBClassifier(n_estimators=10, feature_costs=costs),
                          {"cost_tradeoff": [0.0, 0.01, 1.0]}, cv=3).fit(X, labels)
    assert search.best_params_["cost_tradeoff"] in (0.0, 0.01, 1.0)
    assert set(search.predict(X)) <= {"no", "yes"}
    best = search.best_estimator_
    assert list(best.classes_) == ["no", "yes"]
    assert best.model_.params["cost_tradeoff"] == search.best_params_["cost_tradeoff"]
    # a larger trade-off buys cheaper models
    cheap = clone(best).set_params(cost_tradeoff=1.0).fit(X, labels)
    free = clone(best).set_params(cost_tradeoff=0.0).fit(X, labels)
    assert cheap.predict_cost(X).mean() < free.predict_cost(X).mean()


def test_pipeline_costs_by_column_name_and_by_position():
    pd = pytest.importorskip("pandas")
    X, y = _binary()
    names = ["age", "blood", "scan", "biopsy", "genome"]
    costs = dict(zip(names, [1.0, 2.0, 10.0, 50.0, 100.0]))
    frame = pd.DataFrame(X, columns=names)
    pipe = make_pipeline(StandardScaler().set_output(transform="pandas"),
                         CEGBClassifier(n_estimators=10, feature_costs=costs)).fit(frame, y)
    model = pipe[-1]
    assert list(model.feature_names_in_) == names
    assert model.model_.feature_names == names
    np.testing.assert_array_equal(model.model_.cost_model.feature_costs, list(costs.values()))
    # integer positions: what works when the previous steps drop the column names
    by_position = make_pipeline(StandardScaler(), CEGBClassifier(
        n_estimators=10, feature_costs={2: 10.0, 3: 50.0, 4: 100.0}, default_cost=1.0))
    by_position.fit(frame, y)
    assert not hasattr(by_position[-1], "feature_names_in_")
    np.testing.assert_array_equal(by_position[-1].model_.cost_model.feature_costs,
                                  [1.0, 1.0, 10.0, 50.0, 100.0])
    # names without names: a clear error, not cbudget's default names f0, f1, ...
    nameless = make_pipeline(StandardScaler(), CEGBClassifier(feature_costs=costs))
    with pytest.raises(ValueError, match="set_output"):
        nameless.fit(frame, y)
    with pytest.raises(ValueError, match="does not name 3 of the 5"):
        CEGBClassifier(feature_costs={0: 1.0, 1: 2.0}).fit(X, y)


def test_cross_val_score():
    X, y = make_regression(200, 4, noise=1.0, random_state=0)
    scores = cross_val_score(GreedyMiserRegressor(n_estimators=20, learning_rate=0.3), X, y,
                             cv=3)
    assert scores.shape == (3,) and np.all(scores > 0.5)


@pytest.mark.parametrize("estimator", [CEGBClassifier(learning_rate=0.5, num_leaves=31),
                                       BudgetRFClassifier()])
def test_prediction_uses_the_best_iteration_of_early_stopping(estimator):
    # noisy labels: the validation metric gets worse after a few iterations
    X, y = _binary(400)
    flip = np.random.default_rng(0).random(y.shape[0]) < 0.3
    y = np.where(flip, 1 - y, y)
    X_train, y_train, X_valid, y_valid = X[:250], y[:250], X[250:], y[250:]
    estimator.set_params(n_estimators=60, early_stopping_rounds=5, random_state=0)
    estimator.fit(X_train, y_train, eval_set=[(X_valid, y_valid)])
    model, best = estimator.model_, estimator.best_iteration_
    assert best is not None and model.num_iterations() > best + 1   # it stopped early
    assert len(estimator.evals_result_["valid_0"]) == 1
    prefix = model[:best + 1]
    if isinstance(estimator, CEGBClassifier):
        expected = prefix.predict(X_valid)
        every_iteration = model.predict(X_valid, iteration_range=(0, 0))
        proba = estimator.predict_proba(X_valid)[:, 1]
    else:
        expected = prefix.predict_proba(X_valid, votes=True)
        every_iteration = model.predict_proba(X_valid, iteration_range=(0, 0), votes=True)
        proba = estimator.predict_proba(X_valid)
    np.testing.assert_array_equal(proba, expected)
    assert not np.array_equal(proba, every_iteration)
    np.testing.assert_array_equal(estimator.predict_cost(X_valid), prefix.predict_cost(X_valid))


def test_models_cut_to_the_best_iteration_predict_as_one_trained_that_long():
    X, y = _binary(300)
    flip = np.random.default_rng(0).random(y.shape[0]) < 0.3
    y = np.where(flip, 1 - y, y)
    params = {"tol": 1e-9, "loss": "logistic"}     # no stop by convergence
    stopped = CSTCClassifier(n_estimators=30, early_stopping_rounds=2, max_depth=2,
                             params=params)
    stopped.fit(X[:200], y[:200], eval_set=[(X[200:], y[200:])])
    best = stopped.best_iteration_
    assert best is not None and best + 1 < len(stopped.evals_result_["valid_0"]["logloss"])
    short = CSTCClassifier(n_estimators=best + 1, max_depth=2, params=params)
    short.fit(X[:200], y[:200])
    np.testing.assert_array_equal(stopped.predict_proba(X), short.predict_proba(X))


def test_cost_methods_delegate_to_the_model():
    X, y = _binary()
    costs = np.array([1.0, 2.0, 3.0, 4.0, 5.0])
    estimator = GreedyMiserClassifier(n_estimators=20, feature_costs=costs,
                                      cost_tradeoff=0.1).fit(X, y)
    acquired = estimator.acquisitions(X)
    assert acquired.dtype == bool and acquired.shape == X.shape
    np.testing.assert_allclose(estimator.predict_cost(X), acquired @ costs)
    report = estimator.cost_report(X)
    assert report.mean_cost == pytest.approx(estimator.predict_cost(X).mean())
    importances = estimator.feature_importances_
    assert importances.sum() == pytest.approx(1.0)
    np.testing.assert_allclose(importances, estimator.model_.feature_importance("gain")
                               / estimator.model_.feature_importance("gain").sum())


def test_missing_values_are_read_as_missing():
    X, y = _binary()
    X[::7, 0] = np.nan
    estimator = CEGBClassifier(n_estimators=10).fit(X, y)
    np.testing.assert_array_equal(estimator.predict_proba(X)[:, 1], estimator.model_.predict(X))
    X[0, 1] = np.inf
    with pytest.raises(ValueError, match="infinity"):
        estimator.predict(X)


def test_adapt_with_a_fitted_sklearn_expensive_model():
    X, y = _binary()
    costs = np.array([1.0, 1.0, 1.0, 5.0, 5.0])
    f0 = LogisticRegression().fit(X, y)
    adapt = ADAPTClassifier(expensive_model=f0, n_estimators=10, feature_costs=costs,
                            p_full=0.3).fit(X, y)
    assert isinstance(adapt.expensive_model_, cbudget.ExternalModel)
    _, route = adapt.model_.predict(X, return_route=True)
    to_f0 = route == 0
    assert 0 < to_f0.sum() < X.shape[0]
    # the inputs sent to f0 get its probabilities and pay for every feature
    np.testing.assert_allclose(adapt.predict_proba(X)[to_f0], f0.predict_proba(X[to_f0]))
    np.testing.assert_allclose(adapt.predict_cost(X)[to_f0], costs.sum())
    # clone() copies the expensive model unfitted: a clear error, or FrozenEstimator
    with pytest.raises(ValueError, match="FrozenEstimator"):
        clone(adapt).fit(X, y)
    frozen = clone(adapt.set_params(expensive_model=FrozenEstimator(f0))).fit(X, y)
    np.testing.assert_array_equal(frozen.predict(X), adapt.predict(X))
    with pytest.raises(ValueError, match="classes"):
        ADAPTClassifier(expensive_model=f0).fit(X, np.where(y == 1, "b", "a"))


def test_adapt_with_a_fitted_cbudget_expensive_model():
    X, y = _binary()
    labels = np.array(["neg", "pos"])[y]
    costs = [1.0, 1.0, 1.0, 5.0, 5.0]
    f0 = GBDTClassifier(n_estimators=20, feature_costs=costs).fit(X, labels)
    adapt = ADAPTClassifier(algorithm="adapt_lin", expensive_model=f0, n_estimators=5,
                            feature_costs=costs, params={"n_restarts": 1}).fit(X, labels)
    assert adapt.expensive_model_ is f0.model_
    _, route = adapt.model_.predict(X, return_route=True)
    to_f0 = route == 0
    assert to_f0.any()
    np.testing.assert_allclose(adapt.predict_proba(X)[to_f0], f0.predict_proba(X[to_f0]))
    assert set(adapt.predict(X)) <= {"neg", "pos"}
    with pytest.raises(ValueError, match="costs differ"):
        ADAPTClassifier(expensive_model=f0).fit(X, labels)


def test_clone_round_trip():
    estimator = CSTCClassifier(algorithm="cscc", n_estimators=5, cost_tradeoff=0.1,
                               feature_costs={0: 1.0, 1: 2.0}, default_cost=3.0,
                               random_state=3, params={"reg_alpha": 0.1})
    copy = clone(estimator)
    assert copy.get_params() == estimator.get_params()
    X, y = _binary(200)
    estimator.fit(X, y)
    assert isinstance(estimator.model_, cbudget.Cascade)
    np.testing.assert_array_equal(clone(estimator).fit(X, y).predict_proba(X),
                                  estimator.predict_proba(X))


def test_budget_rf_predicts_the_vote_and_its_share():
    X, y = make_classification(300, 6, n_informative=4, n_classes=3, random_state=0)
    labels = np.array(["a", "b", "c"])[y]
    forest = BudgetRFClassifier(n_estimators=7, random_state=0).fit(X, labels)
    proba = forest.predict_proba(X)
    np.testing.assert_allclose(proba * 7, np.round(proba * 7))    # shares of 7 votes
    np.testing.assert_array_equal(forest.predict(X), forest.classes_[forest.model_.predict(X)])


def test_bad_parameters_raise_clear_errors():
    X, y = _binary(100)
    with pytest.raises(ValueError, match="sets 'seed' from random_state"):
        CEGBClassifier(params={"random_state": 1}).fit(X, y)
    with pytest.raises(ValueError, match="sets 'learning_rate'"):
        CEGBClassifier(params={"eta": 0.3}).fit(X, y)
    with pytest.raises(ValueError, match="unknown parameter"):
        CEGBClassifier(params={"no_such_parameter": 1}).fit(X, y)
    with pytest.raises(ValueError, match="applies to"):
        GBDTClassifier(params={"cost_tradeoff": 1.0}).fit(X, y)
    with pytest.raises(ValueError, match="eval_set"):
        GBDTClassifier(early_stopping_rounds=3).fit(X, y)
    with pytest.raises(ValueError, match="eval_set"):
        BudgetRFClassifier(budget=3.0).fit(X, y)
    with pytest.raises(ValueError, match="not among the training classes"):
        GBDTClassifier().fit(X, y, eval_set=[(X, y + 1)])
    with pytest.raises(ValueError, match="'cstc', 'cscc' or 'cronus'"):
        CSTCRegressor(algorithm="gbdt").fit(X, y)
    # a fit that failed after setting classes_ leaves the estimator unfitted
    binary_only = CSTCClassifier()
    with pytest.raises(ValueError, match="Only binary"):
        binary_only.fit(X, np.arange(X.shape[0]) % 3)
    with pytest.raises(NotFittedError):
        binary_only.predict(X)


@pytest.mark.parametrize("estimator", [CEGBClassifier, GreedyMiserClassifier])
def test_cost_tradeoff_chosen_on_a_cost_path(estimator):
    X, y = _binary()
    costs = [1.0, 2.0, 4.0, 8.0, 16.0]
    best = estimator(n_estimators=20, cost_tradeoff="path", path_points=4,
                     feature_costs=costs, random_state=0).fit(X, y)
    path = best.cost_path_
    assert len(path) == 4 and path.lambdas[0] == path.lambda_max
    chosen = int(np.flatnonzero(path.lambdas == best.cost_tradeoff_)[0])
    assert best.model_ is path.models[chosen]
    assert path.scores[chosen] == path.scores.min()      # logloss: lower is better
    # within a budget: the best model whose validation cost fits, on the eval_set given
    budget = float(np.sort(path.costs)[1])
    cheap = estimator(n_estimators=20, cost_tradeoff="path", path_points=4, cost_budget=budget,
                      feature_costs=costs, random_state=0).fit(X[:200], y[:200],
                                                              eval_set=[(X[200:], y[200:])])
    # (its mean cost plus one standard error of it: BUDGET_MARGIN)
    chosen = list(cheap.cost_path_.models).index(cheap.model_)
    assert chosen == cheap.cost_path_.best_index(budget, margin=BUDGET_MARGIN)
    assert cheap.cost_path_.costs[chosen] + cheap.cost_path_.cost_ses[chosen] <= budget
    assert cheap.predict_cost(X[200:]).mean() == pytest.approx(cheap.cost_path_.costs[chosen])
    # refit at a fixed trade-off: no search result of the previous fit is left behind
    best.set_params(cost_tradeoff=0.01).fit(X, y)
    assert not any(hasattr(best, name)
                   for name in ("cost_path_", "cost_tradeoff_", "cost_stages_"))
    with pytest.raises(ValueError, match="'path'"):
        estimator(cost_tradeoff="auto").fit(X, y)
    with pytest.raises(ValueError, match="cost_budget applies"):
        estimator(cost_tradeoff=0.1, cost_budget=3.0).fit(X, y)


@pytest.mark.parametrize("estimator", [CEGBClassifier, GreedyMiserRegressor])
def test_the_search_logs_evals_result_as_training_at_its_trade_off(estimator):
    # the default (cost_tradeoff=None) searches: its evals_result_ was {} whatever the
    # eval_set, where training at one trade-off logs every set's metric per round
    X, y = _binary()
    if estimator is GreedyMiserRegressor:
        y = y + X[:, 0]
    options = dict(n_estimators=15, path_points=3, feature_costs=[1.0, 2.0, 4.0, 8.0, 16.0],
                   early_stopping_rounds=3, random_state=0)
    eval_set = [(X[150:200], y[150:200]), (X[200:], y[200:])]
    searched = estimator(**options).fit(X[:150], y[:150], eval_set=eval_set)
    assert searched.cost_path_ is not None
    again = estimator(**options, cost_tradeoff=searched.cost_tradeoff_).fit(
        X[:150], y[:150], eval_set=eval_set)
    np.testing.assert_array_equal(searched.predict(X), again.predict(X))   # one model
    assert searched.evals_result_.keys() == again.evals_result_.keys() == {"valid_0", "valid_1"}
    for name, logged in again.evals_result_.items():
        assert searched.evals_result_[name].keys() == logged.keys()
        for metric, values in logged.items():
            np.testing.assert_allclose(searched.evals_result_[name][metric], values,
                                       rtol=1e-12)


def test_the_cost_path_of_an_estimator_takes_the_exit_dimension():
    X, y = _binary()
    costs = [1.0, 2.0, 4.0, 8.0, 16.0]
    with_exits = CEGBClassifier(n_estimators=20, cost_tradeoff="path", path_points=3,
                                exit_epsilons=[0.0, 0.05], feature_costs=costs,
                                random_state=0).fit(X[:200], y[:200],
                                                    eval_set=[(X[200:], y[200:])])
    path = with_exits.cost_path_
    assert len(path) == 9 and np.isnan(path.epsilons[0])
    chosen = path.models.index(with_exits.model_)
    if not np.isnan(path.epsilons[chosen]):
        assert with_exits.model_.exit_rules.calibration["epsilon"] == path.epsilons[chosen]
    assert with_exits.predict_cost(X[200:]).mean() == pytest.approx(path.costs[chosen])
    with pytest.raises(ValueError, match="exit_epsilons applies with"):
        CEGBClassifier(cost_tradeoff=1.0, exit_epsilons=[0.01]).fit(X, y)
    with pytest.raises(ValueError, match="exit_tolerance"):
        CEGBRegressor(cost_tradeoff="path", exit_epsilons=[0.01]).fit(X, y.astype(float))
    with pytest.raises(ValueError, match="exit_tolerance applies with"):
        CEGBClassifier(cost_tradeoff=1.0, exit_tolerance=0.05).fit(X, y)


def test_the_estimators_take_an_exit_tolerance():
    X, y = _binary()
    costs = [1.0, 2.0, 4.0, 8.0, 16.0]
    common = dict(n_estimators=20, path_points=3, feature_costs=costs, random_state=0)
    fit = dict(eval_set=[(X[200:], y[200:])])
    # binary: a probability tolerance on every exit copy of the path
    clf = CEGBClassifier(exit_epsilons=[0.05], exit_tolerance=0.05, **common).fit(
        X[:200], y[:200], **fit)
    exited = [m for m, e in zip(clf.cost_path_.models, clf.cost_path_.epsilons)
              if not np.isnan(e)]
    assert exited and all(m.exit_rules.calibration["probability_tolerance"] == 0.05
                          for m in exited)
    # regression: exits with their tolerance
    target = X[:, 0] + 0.1 * X[:, 1]
    reg = CEGBRegressor(exit_epsilons=[0.05], exit_tolerance=0.2, **common).fit(
        X[:200], target[:200], eval_set=[(X[200:], target[200:])])
    exited = [m for m, e in zip(reg.cost_path_.models, reg.cost_path_.epsilons)
              if not np.isnan(e)]
    assert exited and all(m.exit_rules.calibration["tolerance"] == 0.2 for m in exited)
    with pytest.raises(ValueError, match="applies to exits"):
        CEGBRegressor(exit_tolerance=0.2, **common).fit(X, target)
    with pytest.raises(ValueError, match="ranker"):
        CEGBRanker(exit_epsilons=[0.05], exit_tolerance=0.1, **common).fit(
            X, target, group=[len(X)])


# -- categorical features (tests/test_categorical_input.py has the mapping itself) -------
def _categorical_frame(n=200, seed=0):
    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(seed)
    X = pd.DataFrame({"sex": rng.choice(["M", "F"], n),
                      "dept": pd.Categorical(rng.choice(["a", "b", "c"], n),
                                             categories=["c", "a", "b"]),
                      "grade": rng.integers(0, 4, n), "x": rng.normal(size=n)})
    y = ((X.sex == "M") ^ (X.dept == "a")).to_numpy(dtype=int)
    return X, y


@pytest.mark.parametrize("spec, expected", [
    ("from_dtype", [True, True, False, False]),
    (["sex", "dept", "grade"], [True, True, True, False]),
    ([0, 1], [True, True, False, False]),
    (np.array([True, True, True, False]), [True, True, True, False]),
])
def test_categorical_features_like_histgradientboosting(spec, expected):
    from cbudget.sklearn import CEGBClassifier
    X, y = _categorical_frame()
    clf = CEGBClassifier(n_estimators=4, categorical_features=spec,
                         feature_costs={"sex": 1, "dept": 2, "grade": 1, "x": 1}).fit(X, y)
    np.testing.assert_array_equal(clf.is_categorical_, expected)
    assert clf.model_.categories.features.tolist() == np.flatnonzero(expected).tolist()
    # predictions map the DataFrame's levels: the category order does not matter
    shuffled = X.assign(dept=X.dept.astype(str))
    np.testing.assert_array_equal(clf.predict_proba(shuffled), clf.predict_proba(X))
    np.testing.assert_array_equal(clf.predict_cost(X), clf.model_.predict_cost(X))
    assert "categorical" in str(clf.cost_report(X))


def test_categorical_features_on_the_cost_path_and_eval_set():
    from cbudget.sklearn import CEGBClassifier, GBDTRegressor
    X, y = _categorical_frame()
    # the rows held out for the path keep the training levels
    path = CEGBClassifier(n_estimators=3, cost_tradeoff="path", path_points=3).fit(X, y)
    assert path.model_.categories.levels[:2] == [["F", "M"], ["c", "a", "b"]]
    reg = GBDTRegressor(n_estimators=3).fit(X[:150], y[:150], eval_set=[(X[150:], y[150:])])
    assert len(reg.evals_result_["valid_0"]["rmse"]) == 3
    np.testing.assert_array_equal(reg.predict(X), reg.model_.predict(X))


def test_string_columns_not_categorical_are_named():
    from cbudget.sklearn import BudgetRFClassifier, GBDTClassifier
    X, y = _categorical_frame()
    with pytest.raises(TypeError, match="column 'sex' has dtype"):
        GBDTClassifier(n_estimators=2, categorical_features=None).fit(X, y)
    with pytest.raises(ValueError, match="'budget_rf' does not split categorical.*'sex'"):
        BudgetRFClassifier(n_estimators=2).fit(X, y)
    numeric = GBDTClassifier(n_estimators=2).fit(X[["grade", "x"]], y)
    with pytest.raises(TypeError, match="column 'grade' has dtype"):
        numeric.predict(X[["grade", "x"]].assign(grade="a"))


@pytest.mark.parametrize("ranker", [GBDTRanker, CEGBRanker, GreedyMiserRanker])
def test_rankers_fail_only_the_checks_that_fit_without_groups(ranker):
    """scikit-learn's estimator checks fit without query groups, which a ranker needs (as
    LightGBM's LGBMRanker): each check a ranker fails, fails for that reason only (as
    README says), and the others pass."""
    from sklearn.utils.estimator_checks import check_estimator
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        results = check_estimator(ranker(n_estimators=3), on_fail=None)
    failed = [r for r in results if r["status"] == "failed"]

    def chain(exc):
        while exc is not None:
            yield str(exc)
            exc = exc.__cause__ or exc.__context__
    assert failed and len(failed) < len(results)
    for r in failed:
        assert any("group" in text for text in chain(r["exception"])), r["check_name"]


def test_cost_scorer_works_through_pipelines_and_searches():
    """A cost-aware scorer in a GridSearchCV of a pipeline (issue 47: predict_cost
    failed inside a Pipeline, the search chose among NaN scores)."""
    from sklearn.compose import ColumnTransformer
    from sklearn.model_selection import cross_val_score

    from cbudget.sklearn import make_cost_scorer, predict_cost
    rng = np.random.default_rng(4)
    X = rng.normal(size=(400, 4))
    y = (X[:, 0] + X[:, 3] + 0.3 * rng.normal(size=len(X)) > 0).astype(int)
    costs = [1.0, 1.0, 1.0, 50.0]
    pipeline = make_pipeline(
        ColumnTransformer([("scaled", StandardScaler(), [0, 1, 2, 3])]),
        CEGBClassifier(n_estimators=10, feature_costs=costs, cost_tradeoff=0.0))
    pipeline.fit(X, y)
    model = pipeline[-1]
    expected = model.predict_cost(pipeline[:-1].transform(X))
    np.testing.assert_array_equal(predict_cost(pipeline, X), expected)
    weighted = make_cost_scorer("accuracy", cost_weight=0.01)
    assert weighted(pipeline, X, y) == pytest.approx(
        pipeline.score(X, y) - 0.01 * expected.mean())
    # a budget the cost-blind models exceed: the search picks the cheap one
    search = GridSearchCV(pipeline, {"cegbclassifier__cost_tradeoff": [0.0, 0.01]}, cv=3,
                          scoring=make_cost_scorer("accuracy", budget=20.0))
    with warnings.catch_warnings():
        warnings.simplefilter("error")          # no NaN score, no failed fit
        search.fit(X, y)
    assert np.all(np.isfinite(search.cv_results_["mean_test_score"]))
    assert search.best_params_ == {"cegbclassifier__cost_tradeoff": 0.01}
    assert predict_cost(search, X).mean() <= 20.0
    assert np.all(cross_val_score(pipeline, X, y, cv=3, scoring=weighted) < 1.0)
    with pytest.raises(ValueError, match="give cost_weight or budget"):
        make_cost_scorer("accuracy")
    with pytest.raises(TypeError, match="ending in one"):
        predict_cost(StandardScaler().fit(X), X)
