"""Budget search (issue 43): cost_path over single trade-offs, two-stage cascades and
exits, the frontier over all of them, the best validation model within a budget, and
the estimators' default search."""
import warnings

import numpy as np
import pytest
from reference_exits import cross_fitted

import cbudget
from cbudget.algorithms import boosting
from cbudget.cost_path import CASCADE_EPSILONS, train_cascade

pytest.importorskip("sklearn")
from cbudget.sklearn import (  # noqa: E402
    FALLBACK_TRADEOFF,
    CEGBClassifier,
    CEGBRanker,
    CEGBRegressor,
)

CHEAP_COSTS = [4.0, 4.0, 4.0, 4.0, 2.0, 2.0]     # 20 in all
TEST_COST = 200.0                               # 10x the cheap total


def make_cascade(n, seed, share=0.35):
    """bench_cascade.make_cascade's binary member, small: four cheap features decide
    the inputs that are not borderline (a share of them, whose cheap features carry no
    evidence); a test costing 10x the cheap total decides those; two cheap noise
    features and a weak extra feature costing 2.5x the test."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    sign = 2.0 * y - 1.0
    hard = rng.random(n) < share
    X = np.column_stack([1.2 * (sign * ~hard)[:, None] + rng.standard_normal((n, 4)),
                         rng.standard_normal((n, 2)),
                         1.3 * sign + rng.standard_normal(n),
                         0.3 * sign + rng.standard_normal(n)])
    return X, y.astype(np.float64)


COSTS = CHEAP_COSTS + [TEST_COST, 2.5 * TEST_COST]
PARAMS = {"algorithm": "cegb", "objective": "binary:logistic", "eval_metric": "error",
          "seed": 0}
ROUNDS = 60


@pytest.fixture(scope="module")
def cascade_task():
    X, y = make_cascade(1000, 1)
    Xv, yv = make_cascade(800, 2)
    dtrain = cbudget.Dataset(X, y, feature_costs=COSTS)
    dvalid = cbudget.Dataset(Xv, yv, reference=dtrain)
    path = cbudget.cost_path(PARAMS, dtrain, dvalid, n_points=8, num_boost_round=ROUNDS,
                             cascades=True)
    return dtrain, dvalid, path


def _validation_score(model, dvalid):
    return float(np.mean((model.predict(dvalid) > 0.5) != dvalid.label))


def test_every_entry_is_scored_and_costed_on_validation(cascade_task):
    _, dvalid, path = cascade_task
    assert path.stages is not None and len(path.stages) == len(path)
    cascades = [i for i, stages in enumerate(path.stages) if stages is not None]
    assert cascades and all(np.isnan(path.lambdas[i]) for i in cascades)
    for i, model in enumerate(path.models):
        costs = model.predict_cost(dvalid)
        if np.isnan(path.epsilons[i]):
            assert path.scores[i] == pytest.approx(_validation_score(model, dvalid))
            assert path.costs[i] == pytest.approx(costs.mean())
            assert path.cost_ses[i] == pytest.approx(costs.std(ddof=1) / np.sqrt(costs.size))
        else:      # exit copies: cross-fitted (test_exit_copies_are_scored_cross_fitted)
            assert path.costs[i] >= costs.mean() - 1e-9
    # the default exit epsilons when cascades are searched: the cascades' copies
    single = np.array([stages is None for stages in path.stages])
    assert np.isnan(path.epsilons[single]).all()
    cascade_epsilons = path.epsilons[~single]
    assert set(cascade_epsilons[~np.isnan(cascade_epsilons)]) == set(CASCADE_EPSILONS)
    # the cascades' stages: stage 1 cheaper than stage 2, the rounds adding up
    for i in cascades:
        (r1, high), (r2, low) = path.stages[i]
        assert r1 + r2 == ROUNDS and high > low
        assert path.models[i].num_iterations() == ROUNDS
        # the booster records them (continuing a model appends the new rounds' stage)
        assert [tuple(stage) for stage in path.models[i].cost_stages] == [
            (0, r1, high), (r1, ROUNDS, low)]
    text = str(path)
    assert "cascade" in text and f"{path.stages[cascades[0]][0][0]}@" in text


def test_exit_copies_are_scored_cross_fitted(cascade_task):
    # an exit copy's validation score is that of exits calibrated on the other half of
    # dvalid, and its cost the larger of that and its own: scored on the rows they were
    # calibrated on, the exits disagreed on at most epsilon of them by construction
    _, dvalid, path = cascade_task
    copies = [i for i in np.flatnonzero(~np.isnan(path.epsilons))
              if path.epsilons[i] in (0.02, 0.05)]
    assert copies
    for i in copies:
        model = path.models[i]
        rules = model.exit_rules
        full = model.copy()
        full.exit_rules = None
        predictions, costs = cross_fitted(
            full, dvalid.data, path.epsilons[i], every=rules.calibration["every"],
            hold=rules.hold.tolist() if rules.hold is not None else None)
        error = np.mean((predictions > 0.5) != dvalid.label)
        assert path.scores[i] == pytest.approx(error)
        own = model.predict_cost(dvalid)
        expected = costs if costs.mean() > own.mean() else own
        assert path.costs[i] == pytest.approx(expected.mean())
        assert path.cost_ses[i] == pytest.approx(expected.std(ddof=1) / np.sqrt(expected.size))


def test_the_frontier_over_all_candidates_against_brute_force(cascade_task):
    _, _, path = cascade_task
    costs, scores = path.costs, path.scores    # error: lower is better
    expected = np.ones(len(path), dtype=bool)
    for i in range(len(path)):
        for j in range(len(path)):
            beaten = (costs[j] <= costs[i] and scores[j] < scores[i]) \
                or (costs[j] < costs[i] and scores[j] <= scores[i]) \
                or (costs[j] == costs[i] and scores[j] == scores[i] and j < i)
            if j != i and beaten:
                expected[i] = False
    np.testing.assert_array_equal(path.pareto, expected)
    assert any(path.pareto[i] for i, s in enumerate(path.stages) if s is not None)


@pytest.mark.parametrize("budget", [30.0, 60.0, 100.0, 150.0])
def test_the_search_honours_the_budget_on_validation(cascade_task, budget):
    _, dvalid, path = cascade_task
    chosen = path.best_index(budget)
    model = path.models[chosen]
    assert model.predict_cost(dvalid).mean() <= budget
    within = path.costs <= budget
    assert path.scores[chosen] == path.scores[within].min()


def test_a_cascade_beats_every_single_tradeoff_within_a_middle_budget(cascade_task):
    # the ideal policy tests the borderline 35%: 20 + 0.35 * 200 = 90; a single trade-off
    # buys the test for nearly every input or for none
    _, _, path = cascade_task
    budget = 1.2 * (sum(CHEAP_COSTS) + 0.35 * TEST_COST)
    chosen = path.best_index(budget)
    assert path.stages[chosen] is not None
    single = np.array([s is None for s in path.stages]) & (path.costs <= budget)
    assert path.scores[chosen] < path.scores[single].min() - 0.05


def test_nothing_within_the_budget_is_a_clear_error():
    X, y = make_cascade(300, 3)
    with pytest.raises(ValueError, match="no model of the path is within budget 0.5"):
        CEGBClassifier(n_estimators=10, path_points=3, feature_costs=COSTS, tree_cost=1.0,
                       cost_budget=0.5, random_state=0).fit(X, y)


def test_train_cascade_is_the_continuation_of_the_sliced_stage_one(cascade_task):
    dtrain, dvalid, _ = cascade_task
    first = cbudget.train(dict(PARAMS, cost_tradeoff=0.01), dtrain, 20, verbose_eval=False)
    stages = [(10, 0.01), (15, 0.0005)]
    scored = train_cascade(PARAMS, dtrain, dvalid, stages, first)
    manual = cbudget.train(dict(PARAMS, cost_tradeoff=0.0005), dtrain, 15,
                           xgb_model=first[:10], verbose_eval=False)
    assert scored.model.num_iterations() == 25
    np.testing.assert_array_equal(scored.model.predict(dvalid), manual.predict(dvalid))
    assert scored.cost == pytest.approx(manual.predict_cost(dvalid).mean())
    with pytest.raises(ValueError, match="at least 30 rounds"):
        train_cascade(PARAMS, dtrain, dvalid, [(30, 0.01), (5, 0.001)], first)


def test_a_stage_two_that_buys_nothing_does_not_use_up_the_cascades():
    # borderline share 0.2: after stage 1 at the jump's cheap end, stage 2 at its dear end
    # buys nothing (bench_cascade's bin_s20_r10, mc3_s20_r10: all the cascades asked for
    # went there, the search returned the cheap model for a budget of 1.2x the ideal's)
    X, y = make_cascade(2000, 1, share=0.2)
    Xv, yv = make_cascade(1500, 2, share=0.2)
    dtrain = cbudget.Dataset(X, y, feature_costs=COSTS)
    dvalid = cbudget.Dataset(Xv, yv, reference=dtrain)
    path = cbudget.cost_path(PARAMS, dtrain, dvalid, n_points=8, num_boost_round=ROUNDS,
                             cascades=2, exit_epsilons=[])
    single = {lam: cost for lam, cost, s in zip(path.lambdas, path.costs, path.stages)
              if s is None}
    cascades = [(s, cost) for s, cost in zip(path.stages, path.costs) if s is not None]
    assert len(cascades) == 2
    for ((_, high), _), cost in cascades:   # each buys the test for some inputs at least
        assert cost > 2 * single[high]


def test_cascade_options_are_checked(cascade_task):
    dtrain, dvalid, _ = cascade_task
    with pytest.raises(ValueError, match="cascades must be"):
        cbudget.cost_path(PARAMS, dtrain, dvalid, n_points=3, cascades=-1)
    with pytest.raises(ValueError, match="cascade_every"):
        cbudget.cost_path(PARAMS, dtrain, dvalid, n_points=3, cascades=True,
                          cascade_every=0)
    with pytest.raises(cbudget.NotApplicableError, match="cascades apply to cegb"):
        cbudget.cost_path(dict(PARAMS, algorithm="cstc"), dtrain, dvalid, lambdas=[0.1],
                          cascades=True)


def test_regression_cascades_have_exits_only_with_a_tolerance(cascade_task):
    dtrain, dvalid, _ = cascade_task
    params = {"algorithm": "cegb", "objective": "reg:squarederror", "seed": 0}
    path = cbudget.cost_path(params, dtrain, dvalid, n_points=4, num_boost_round=20,
                             cascades=2)
    assert path.epsilons is None and sum(s is not None for s in path.stages) <= 2
    with_exits = cbudget.cost_path(params, dtrain, dvalid, n_points=4, num_boost_round=20,
                                   cascades=1, exit_tolerance=0.2)
    assert set(with_exits.epsilons[~np.isnan(with_exits.epsilons)]) == set(CASCADE_EPSILONS)


# -- the estimators' default search -------------------------------------------------------
def _costly_task(n=400, seed=0):
    """Five features priced 0.1 to 500: at the old default trade-off (1) no split pays."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, 5))
    y = (X[:, 0] + X[:, 3] + X[:, 4] + 0.5 * rng.standard_normal(n) > 0).astype(int)
    return X, y, [0.1, 1.0, 10.0, 100.0, 500.0]


def test_the_default_estimator_is_not_constant_on_a_costly_task():
    X, y, costs = _costly_task()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")      # the old default's "no split could pay"
        old = CEGBClassifier(cost_tradeoff=1.0, n_estimators=30, feature_costs=costs,
                             random_state=0).fit(X, y)
    assert np.unique(old.predict_proba(X)[:, 1]).size == 1      # what the default was
    default = CEGBClassifier(n_estimators=30, feature_costs=costs, random_state=0).fit(X, y)
    assert default.get_params()["cost_tradeoff"] is None     # the search
    assert np.unique(default.predict_proba(X)[:, 1]).size > 10
    assert default.score(X, y) > 0.8
    assert default.cost_path_ is not None and default.cost_stages_ is None
    assert default.model_.params["cost_tradeoff"] == default.cost_tradeoff_


def test_the_default_trains_as_before_on_data_without_costs():
    X, y, _ = _costly_task()
    weight = np.random.default_rng(1).random(y.shape[0])
    for estimator, target in ((CEGBClassifier, y), (CEGBRegressor, y.astype(float))):
        fit = {"sample_weight": weight, "eval_set": [(X[:50], target[:50])]}
        default = estimator(n_estimators=10, random_state=0).fit(X, target, **fit)
        before = estimator(n_estimators=10, random_state=0, cost_tradeoff=1.0).fit(
            X, target, **fit)
        np.testing.assert_array_equal(default.predict(X), before.predict(X))
        assert default.evals_result_ == before.evals_result_
        assert default.cost_path_ is None and default.cost_tradeoff_ == 1.0
    group = [100, 100, 100, 100]
    ranker = CEGBRanker(n_estimators=5, random_state=0).fit(X, y, group=group)
    before = CEGBRanker(n_estimators=5, random_state=0, cost_tradeoff=1.0).fit(
        X, y, group=group)
    np.testing.assert_array_equal(ranker.predict(X), before.predict(X))


def test_the_default_on_tiny_costly_data():
    X, y, costs = _costly_task(40)
    with warnings.catch_warnings():
        warnings.simplefilter("error")      # not "no split could pay its cost"
        for n in (2, 3, 10, 40):
            estimator = CEGBClassifier(n_estimators=5, feature_costs=costs, random_state=0)
            estimator.fit(X[:n], y[:n] if n > 3 else [0, 1, 0][:n])
            assert estimator.predict(X[:n]).shape == (n,)
    # 40 rows: the 32 kept leave no split worth its cost, so no path to choose on; the one
    # model at a trade-off below lambda_max, not a constant
    params = {"algorithm": "cegb", "objective": "binary:logistic", "seed": 0}
    start = cbudget.lambda_max(params, cbudget.Dataset(X, y, feature_costs=costs))
    assert estimator.cost_path_ is None
    assert estimator.cost_tradeoff_ == pytest.approx(FALLBACK_TRADEOFF * start)
    assert np.unique(estimator.predict_proba(X)[:, 1]).size > 1
    with pytest.raises(ValueError, match="one query: pass eval_set"):
        CEGBRanker(n_estimators=5, feature_costs=costs, cost_budget=10.0).fit(
            X, y, group=[40])
    # one query, no budget: the one model
    ranker = CEGBRanker(n_estimators=5, feature_costs=costs).fit(X, y, group=[40])
    assert ranker.cost_path_ is None


def test_the_estimator_chooses_a_cascade_within_a_middle_budget():
    X, y = make_cascade(2500, 1)
    budget = 1.2 * (sum(CHEAP_COSTS) + 0.35 * TEST_COST)
    estimator = CEGBClassifier(n_estimators=ROUNDS, path_points=8, feature_costs=COSTS,
                               cost_budget=budget, random_state=0,
                               params={"eval_metric": "error"}).fit(X, y)
    path = estimator.cost_path_
    chosen = path.models.index(estimator.model_)
    assert estimator.cost_stages_ == path.stages[chosen] is not None
    assert estimator.cost_tradeoff_ is None
    assert path.costs[chosen] <= budget
    # cost_stages_ is a cost_stages value: a refit (on all the rows) grows in those stages
    again = CEGBClassifier(n_estimators=ROUNDS, cost_stages=estimator.cost_stages_,
                           feature_costs=COSTS, random_state=0).fit(*make_cascade(2500, 1))
    assert again.model_.cost_stages == estimator.model_.cost_stages
    # on fresh data: above the best single trade-off within the budget, and near the budget
    X_test, y_test = make_cascade(4000, 5)
    single = [i for i, s in enumerate(path.stages) if s is None and path.costs[i] <= budget]
    best_single = path.models[min(single, key=lambda i: path.scores[i])]
    assert estimator.score(X_test, y_test) > np.mean(
        (best_single.predict(X_test) > 0.5) == y_test) + 0.05
    assert estimator.predict_cost(X_test).mean() <= 1.1 * budget


def test_cost_stages_describe_the_cascade_kept_after_early_stopping():
    # cost_stages_ was the path's nominal [(r1, hi), (ROUNDS - r1, lo)] even when early
    # stopping ended stage 2 sooner: it now gives the stages of the iterations the model
    # predicts with (up to best_iteration_)
    X, y = make_cascade(2000, 1)
    Xv, yv = make_cascade(600, 2)
    budget = 1.2 * (sum(CHEAP_COSTS) + 0.35 * TEST_COST)
    estimator = CEGBClassifier(n_estimators=ROUNDS, path_points=8, feature_costs=COSTS,
                               cost_budget=budget, random_state=0, early_stopping_rounds=5,
                               params={"eval_metric": "error"}).fit(X, y, eval_set=[(Xv, yv)])
    path, model = estimator.cost_path_, estimator.model_
    nominal = path.stages[path.models.index(model)]
    assert nominal is not None and estimator.cost_tradeoff_ is None
    kept = estimator.best_iteration_ + 1
    assert nominal[0][0] < kept < ROUNDS          # stopped early in stage 2
    (r1, high), (r2, low) = estimator.cost_stages_
    assert (r1, high) == nominal[0] and low == nominal[1][1] and r1 + r2 == kept
    assert [(r1, high), (r2, low)] == [
        (s.end_iteration - s.first_iteration, s.cost_tradeoff)
        for s in model[:kept].cost_stages]
    # the exits and costs are of those iterations too
    assert model.exit_rules is None or model.exit_rules.iterations == kept


def test_the_estimator_computes_lambda_max_once_per_training_set(monkeypatch):
    # it computed lambda_max, then cost_path computed it again on the same rows (one
    # more one-round training per fit); it now passes it on
    calls = []
    computed = boosting.Boosting.lambda_max

    def counted(self, p, dtrain, setup):
        calls.append(dtrain.num_data())
        return computed(self, p, dtrain, setup)
    monkeypatch.setattr(boosting.Boosting, "lambda_max", counted)
    X, y, costs = _costly_task()
    estimator = CEGBClassifier(n_estimators=5, path_points=3, feature_costs=costs,
                               random_state=0)
    estimator.fit(X[:300], y[:300], eval_set=[(X[300:], y[300:])])
    assert calls == [300]
    params = {"algorithm": "cegb", "objective": "binary:logistic", "seed": 0}
    assert estimator.cost_path_.lambda_max == cbudget.lambda_max(
        params, cbudget.Dataset(X[:300], y[:300], feature_costs=costs))
    calls.clear()
    estimator.fit(X, y)         # 20% held out: all the rows, then the 80% trained on
    assert calls == [400, 320]
    assert estimator.cost_path_.lambda_max > 0


def test_multiclass_and_greedy_miser_cascades_honour_the_budget():
    rng = np.random.default_rng(4)
    n = 1200
    y = rng.integers(0, 3, n)
    hard = rng.random(n) < 0.35
    X = np.column_stack([3.0 * np.eye(3)[y] * ~hard[:, None] + rng.standard_normal((n, 3)),
                         3.0 * (y - 1.0) + rng.standard_normal(n)])
    costs = [4.0, 4.0, 4.0, 200.0]
    dtrain = cbudget.Dataset(X[:800], y[:800].astype(float), feature_costs=costs)
    dvalid = cbudget.Dataset(X[800:], y[800:].astype(float), reference=dtrain)
    for algorithm in ("cegb", "greedy_miser"):
        params = {"algorithm": algorithm, "objective": "multi:softprob", "num_class": 3,
                  "seed": 0}
        path = cbudget.cost_path(params, dtrain, dvalid, n_points=6, num_boost_round=20,
                                 cascades=2)
        cascades = [i for i, stages in enumerate(path.stages) if stages is not None]
        assert cascades
        for i in cascades:
            assert len(path.models[i].cost_stages) == 2
        for budget in (15.0, 100.0):
            chosen = path.best_index(budget)
            assert path.models[chosen].predict_cost(dvalid).mean() <= budget
