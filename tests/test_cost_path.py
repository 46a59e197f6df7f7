"""lambda_max, the warning when no split can pay, and cost_path (glmnet-style paths)."""
import warnings

import numpy as np
import pytest

import cbudget
from cbudget.algorithms import boosting
from cbudget.cost_path import pareto_mask

COSTS = [1.0, 1.0, 2.0, 5.0, 10.0, 20.0]


def _data(n, seed, n_classes=2):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, 6))
    z = X[:, 0] + 0.5 * X[:, 3] - 0.3 * X[:, 5] + 0.3 * rng.standard_normal(n)
    y = (z > 0) if n_classes == 2 else np.digitize(z, [-0.5, 0.5])
    X[rng.random(X.shape) < 0.05] = np.nan
    return X, y.astype(np.float64)


@pytest.fixture(scope="module")
def binary():
    X, y = _data(1500, 0)
    Xv, yv = _data(500, 1)
    dtrain = cbudget.Dataset(X, y, feature_costs=COSTS)
    return dtrain, cbudget.Dataset(Xv, yv, reference=dtrain)


def _n_splits(model):
    return sum(int((tree["left"] != -1).sum()) for tree in model.trees)


def _train_quietly(params, dtrain, rounds):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model = cbudget.train(params, dtrain, rounds, verbose_eval=False)
    assert all(w.filename == __file__ for w in caught)   # points at the train() call
    return model, [str(w.message) for w in caught]


def reference_root_terms(dtrain, gradients, hessians, reg_lambda, min_data_in_leaf,
                         min_child_weight, cost_kind):
    """Slow NumPy version of TreeGrower.root_split_terms for a model that has bought
    nothing yet: every threshold of every feature, missing values on either side."""
    binned, missing = dtrain.binned, dtrain.missing_bin
    costs = dtrain.cost_model
    n, n_features = binned.shape

    def score(g, h):
        return g * g / (h + reg_lambda)

    parent = score(gradients.sum(), hessians.sum())
    gains = np.full(n_features, -np.inf)
    for f in range(n_features):
        is_missing = binned[:, f] == missing
        for b in range(int(dtrain.n_value_bins[f]) - 1):
            for missing_left in (False, True):
                left = (binned[:, f] <= b) & ~is_missing
                if missing_left:
                    left |= is_missing
                n_left = int(left.sum())
                h_left, h_right = hessians[left].sum(), hessians[~left].sum()
                if (min(n_left, n - n_left) < min_data_in_leaf
                        or min(h_left, h_right) < min_child_weight):
                    continue
                gain = 0.5 * (score(gradients[left].sum(), h_left)
                              + score(gradients[~left].sum(), h_right) - parent)
                gains[f] = max(gains[f], gain)
    group_cost = np.array([costs.group_costs[g] if g >= 0 else 0.0
                           for g in costs.feature_group])
    if cost_kind == "cegb":   # per input of the leaf, plus once per model
        increment = (costs.feature_costs + group_cost + costs.split_cost) * n \
            + costs.coupled_costs
    else:                     # greedy_miser: the whole cost once per model
        increment = costs.feature_costs + costs.coupled_costs + group_cost
    return gains, increment


@pytest.mark.parametrize("algorithm", ["cegb", "greedy_miser"])
def test_root_split_terms_match_a_numpy_reference(algorithm):
    X, y = _data(300, 3)
    dtrain = cbudget.Dataset(X, y, feature_costs=COSTS, cost_groups={"pair": [1, 2]},
                             group_costs={"pair": 3.0}, coupled_costs={"f4": 7.0},
                             split_cost=0.01 if algorithm == "cegb" else 0.0, max_bin=16)
    p = {"algorithm": algorithm, "objective": "binary:logistic", "min_data_in_leaf": 5}
    gains, increment = cbudget.training.root_split_terms(p, dtrain)[0]
    rate = 1.0 / (1.0 + np.exp(-np.log(y.mean() / (1 - y.mean()))))
    gradients = rate - y
    hessians = (np.ones_like(y) if algorithm == "greedy_miser"
                else np.full_like(y, rate * (1 - rate)))
    reg_lambda = 0.0 if algorithm == "greedy_miser" else 1.0
    ref_gains, ref_increment = reference_root_terms(dtrain, gradients, hessians, reg_lambda,
                                                    5, 1e-3, algorithm)
    np.testing.assert_allclose(gains, ref_gains, rtol=1e-9)
    np.testing.assert_allclose(increment, ref_increment, rtol=1e-12)


@pytest.mark.parametrize("algorithm", ["cegb", "greedy_miser"])
@pytest.mark.parametrize("n_classes", [2, 3])
def test_no_split_at_lambda_max_and_splits_just_below(algorithm, n_classes):
    X, y = _data(800, 4, n_classes)
    dtrain = cbudget.Dataset(X, y, feature_costs=COSTS, cost_groups=[[1, 2]],
                             group_costs=[1.5])
    p = {"algorithm": algorithm, "n_jobs": 1,
         **({"objective": "binary:logistic"} if n_classes == 2
            else {"objective": "multi:softprob", "num_class": 3})}
    limit = cbudget.lambda_max(p, dtrain)
    assert limit > 0
    at, messages = _train_quietly(dict(p, cost_tradeoff=limit), dtrain, 30)
    assert _n_splits(at) == 0
    assert any(f"lambda_max for this data is {limit:.4g}" in m for m in messages)
    below, messages = _train_quietly(dict(p, cost_tradeoff=limit * 0.999), dtrain, 1)
    assert _n_splits(below) > 0 and not messages
    # it scales inversely with the costs
    doubled = cbudget.Dataset(X, y, feature_costs=2 * np.array(COSTS), cost_groups=[[1, 2]],
                              group_costs=[3.0])
    assert cbudget.lambda_max(p, doubled) == pytest.approx(limit / 2, rel=1e-9)


def test_lambda_max_says_where_it_does_not_apply(binary):
    dtrain, _ = binary
    for algorithm in ("gbdt", "budget_rf", "cstc", "cscc", "cronus", "adapt_gbrt", "adapt_lin"):
        with pytest.raises(cbudget.NotApplicableError, match="give the trade-offs"):
            cbudget.lambda_max({"algorithm": algorithm, "objective": "binary:logistic"},
                               dtrain)
    free = cbudget.Dataset(dtrain.data, dtrain.label)
    assert cbudget.lambda_max({"algorithm": "cegb", "objective": "binary:logistic"}, free) == 0


def test_pareto_mask_against_brute_force():
    rng = np.random.default_rng(0)
    for _ in range(50):
        costs = rng.integers(0, 5, size=8).astype(float)
        scores = rng.integers(0, 5, size=8).astype(float)
        for maximize in (True, False):
            signed = scores if maximize else -scores
            expected = [not any((costs[j] <= costs[i] and signed[j] > signed[i])
                                or (costs[j] < costs[i] and signed[j] >= signed[i])
                                or (j < i and costs[j] == costs[i] and signed[j] == signed[i])
                                for j in range(8))
                        for i in range(8)]
            np.testing.assert_array_equal(pareto_mask(costs, scores, maximize), expected)


def test_cost_path_from_lambda_max(binary):
    dtrain, dvalid = binary
    params = {"algorithm": "cegb", "objective": "binary:logistic", "eval_metric": "error",
              "num_leaves": 8, "n_jobs": 1}
    with warnings.catch_warnings():
        warnings.simplefilter("error")   # the model at lambda_max is expected: no warning
        path = cbudget.cost_path(params, dtrain, dvalid, n_points=6, eps=1e-2,
                                 num_boost_round=40)
    assert len(path) == 6 and path.metric == "error" and not path.maximize
    assert path.lambda_max == pytest.approx(cbudget.lambda_max(params, dtrain))
    # lambda_max, two geometric steps to lambda_max * eps, 0, and 2 points in cost gaps
    assert path.lambdas[0] == path.lambda_max and path.lambdas[-1] == 0
    assert np.all(np.diff(path.lambdas) < 0)
    for lam in path.lambda_max * np.array([0.1, 0.01]):
        assert np.isclose(path.lambdas, lam, rtol=1e-12).any()
    assert _n_splits(path.models[0]) == 0 and path.costs[0] == 0
    assert np.all(np.diff(path.costs) >= 0)      # cheaper as lambda grows
    assert path.scores[-1] < path.scores[0]
    for model, lam, cost in zip(path.models, path.lambdas, path.costs):
        assert model.params["cost_tradeoff"] == lam
        assert cost == pytest.approx(model.predict_cost(dvalid).mean())
    np.testing.assert_array_equal(path.pareto, pareto_mask(path.costs, path.scores, False))
    budget = path.costs[3]
    chosen = path.best_index(budget)
    within = path.costs <= budget
    assert path.scores[chosen] == path.scores[within].min()
    assert path.select(budget) is path.models[chosen]
    assert "pareto" in str(path)
    with pytest.raises(ValueError, match="budget must be >= 0"):
        path.select(-1.0)
    expensive = cbudget.CostPath(lambdas=path.lambdas[1:], costs=path.costs[1:],
                                 scores=path.scores[1:], metric="error", maximize=False,
                                 models=path.models[1:], pareto=path.pareto[1:])
    with pytest.raises(ValueError, match="cheapest costs"):
        expensive.select(path.costs[1] / 2)
    # a margin of standard errors: the mean cost plus margin * its SE within the budget
    for i, model in enumerate(path.models):
        costs = model.predict_cost(dvalid)
        assert path.cost_ses[i] == pytest.approx(costs.std(ddof=1) / np.sqrt(costs.size))
    assert path.cost_ses[3] > 0
    margin = 0.5 * (path.costs[3] - path.costs[2]) / path.cost_ses[3] + 1e-9
    strict = path.best_index(budget, margin=margin)
    fits = path.costs + margin * path.cost_ses <= budget
    assert not fits[3] and fits[strict]
    assert path.scores[strict] == path.scores[fits].min()
    assert path.select(budget, margin) is path.models[strict]
    k = int(np.argmax(path.cost_ses))
    varied = cbudget.CostPath(lambdas=path.lambdas[k:k + 1], costs=path.costs[k:k + 1],
                              scores=path.scores[k:k + 1], metric="error", maximize=False,
                              models=path.models[k:k + 1], pareto=path.pareto[k:k + 1],
                              cost_ses=path.cost_ses[k:k + 1])
    assert varied.best_index(path.costs[k]) == 0
    with pytest.raises(ValueError, match="less 1e.06 standard errors"):
        varied.best_index(path.costs[k], margin=1e6)
    for bad in (-1.0, np.nan, np.inf):
        with pytest.raises(ValueError, match="margin must be"):
            path.best_index(budget, margin=bad)
    with pytest.raises(ValueError, match="no cost_ses"):
        expensive.select(budget, margin=1.0)
    # in parallel: the same models
    parallel = cbudget.cost_path(params, dtrain, dvalid, n_points=6, eps=1e-2,
                                 num_boost_round=40, n_jobs=2)
    np.testing.assert_array_equal(parallel.costs, path.costs)
    np.testing.assert_array_equal(parallel.scores, path.scores)


def test_cost_path_with_given_lambdas_for_any_algorithm(binary):
    dtrain, dvalid = binary
    path = cbudget.cost_path({"algorithm": "cstc", "objective": "binary:logistic",
                              "max_depth": 2}, dtrain, dvalid, lambdas=[1e-3, 1.0],
                             num_boost_round=3)
    np.testing.assert_array_equal(path.lambdas, [1.0, 1e-3])
    assert path.lambda_max is None and path.costs[0] <= path.costs[1]
    with pytest.raises(cbudget.NotApplicableError):
        cbudget.cost_path({"algorithm": "cstc", "objective": "binary:logistic"}, dtrain,
                          dvalid)


@pytest.mark.parametrize("kwargs, match", [
    ({"n_points": 1}, "n_points"), ({"eps": 1.5}, "eps"), ({"lambdas": [-1.0]}, "lambdas"),
    ({"lambdas": []}, "lambdas"), ({"lambda_max": 0.0}, "lambda_max must be"),
    ({"lambda_max": float("nan")}, "lambda_max must be"),
    ({"lambda_max": True}, "lambda_max must be"), ({"lambda_max": "1"}, "lambda_max must be"),
    ({"lambda_max": 10**400}, "lambda_max must be"), ({"lambda_max": -2}, "lambda_max must be"),
    ({"lambdas": [1.0], "lambda_max": 1.0}, "not both")])
def test_cost_path_rejects_bad_grids(binary, kwargs, match):
    dtrain, dvalid = binary
    with pytest.raises(ValueError, match=match):
        cbudget.cost_path({"algorithm": "cegb", "objective": "binary:logistic"}, dtrain,
                          dvalid, **kwargs)
    with pytest.raises(TypeError, match="dvalid"):
        cbudget.cost_path({"algorithm": "cegb"}, dtrain, cbudget.Dataset(dtrain.data))


def test_a_known_lambda_max_is_not_computed_again(binary, monkeypatch):
    # the estimators' search computed lambda_max, then cost_path computed it again (a
    # one-round training): cost_path now takes it
    dtrain, dvalid = binary
    params = {"algorithm": "cegb", "objective": "binary:logistic", "num_leaves": 8,
              "n_jobs": 1}
    options = {"n_points": 4, "eps": 1e-2, "num_boost_round": 10}
    computed = cbudget.cost_path(params, dtrain, dvalid, **options)

    def not_again(*args):
        raise AssertionError("lambda_max computed again")
    monkeypatch.setattr(boosting.Boosting, "lambda_max", not_again)
    given = cbudget.cost_path(params, dtrain, dvalid, lambda_max=computed.lambda_max,
                              **options)
    assert given.lambda_max == computed.lambda_max
    np.testing.assert_array_equal(given.lambdas, computed.lambdas)
    np.testing.assert_array_equal(given.costs, computed.costs)
    np.testing.assert_array_equal(given.scores, computed.scores)


def test_refinement_fills_the_widest_cost_gap():
    from cbudget.cost_path import _widest_cost_gap

    def fitted(costs):
        return {lam: (None, "error", 0.0, cost) for lam, cost in costs.items()}

    costs = {1.0: 0.0, 0.1: 10.0, 0.01: 11.0, 0.0: 50.0}
    assert _widest_cost_gap(fitted(costs), 0.1, set()) == pytest.approx(
        (np.sqrt(0.1), 1.0, 0.1))
    costs[np.sqrt(0.1)] = 3.0            # now 11 -> 50 (next to 0) is the widest
    assert _widest_cost_gap(fitted(costs), 0.1, set()) == pytest.approx((0.001, 0.01, 0.0))
    # a jump that a point between did not narrow is left alone
    assert _widest_cost_gap(fitted(costs), 0.1, {(0.01, 0.0)}) == pytest.approx(
        (np.sqrt(np.sqrt(0.1)), 1.0, np.sqrt(0.1)))
    assert _widest_cost_gap(fitted({1.0: 3.0, 0.5: 3.0, 0.0: 3.0}), 0.1, set()) is None
