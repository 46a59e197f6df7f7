"""Sample weights and unreadable values in training (issue 42 items 6 and 7): a row of
weight 0 is no training row for any algorithm (nor does it place a bin edge); the linear
learners' (CSTC, CSCC, Cronus, ADAPT-LIN) standardisation is weighted (weight 2 is the row
twice), and they read NaN, +-inf and magnitudes from ``MAX_INPUT`` on as missing in
training, as prediction does, without overflow or a NumPy warning."""
import warnings

import numpy as np
import pytest
from scipy.special import expit

import cbudget
from cbudget._core._linear import MAX_INPUT, readable
from cbudget.algorithms.linear_inputs import standardize, standardized

LINEAR = ["cstc", "cscc", "cronus", "adapt_lin"]


class SumOfColumns:
    """ADAPT's expensive model: sigmoid(10 x the sum of the readable values of ``cols``)."""
    classes_ = np.array([0, 1])

    def __init__(self, cols):
        self.cols = list(cols)

    def predict_proba(self, X):
        values = X[:, self.cols]
        p = expit(10 * np.where(readable(values), values, 0.0).sum(axis=1))
        return np.column_stack([1 - p, p])


def train(algorithm, X, y, weight=None, cols=(0, 1), rounds=10):
    extra = {}
    if algorithm == "adapt_lin":
        extra["expensive_model"] = cbudget.ExternalModel(SumOfColumns(cols), cost=10.0)
    return cbudget.train({"algorithm": algorithm, "objective": "binary:logistic",
                          "n_jobs": 1}, cbudget.Dataset(X, y, weight=weight), rounds,
                         verbose_eval=False, **extra)


def accuracy(model, X, y):
    return float(np.mean((model.predict(X) > 0.5) == (y > 0.5)))


def separable(seed=0, n=200, d=4):
    """The issue's small separable set: the label is the side of x0 + x1, with a margin."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = (X[:, 0] + X[:, 1] > 0).astype(np.float64)
    X[:, 0] += np.where(y > 0, 0.5, -0.5)
    return X, y


# -- item 6: sample weights ------------------------------------------------------------
@pytest.mark.parametrize("algorithm", LINEAR)
def test_rows_of_weight_zero_change_nothing(algorithm):
    """40 far-away rows at weight 0 (random labels): the model is the one trained
    without them (the unweighted standardisation took CSTC's training accuracy from 1.0
    to 0.535)."""
    X, y = separable()
    rng = np.random.default_rng(1)
    far = rng.normal(size=(40, X.shape[1])) * 5 + 1000.0
    X_all = np.vstack([X, far])
    y_all = np.concatenate([y, rng.integers(0, 2, 40)])
    weight = np.concatenate([np.ones(y.size), np.zeros(40)])
    clean = train(algorithm, X, y)
    padded = train(algorithm, X_all, y_all, weight)
    assert accuracy(clean, X, y) == 1.0
    assert accuracy(padded, X, y) == 1.0
    np.testing.assert_allclose(padded.predict(X), clean.predict(X), atol=1e-6)
    np.testing.assert_array_equal(padded.used_features(), clean.used_features())


@pytest.mark.parametrize("algorithm", ["gbdt", "cegb", "greedy_miser", "budget_rf",
                                       "adapt_gbrt"])
def test_rows_of_weight_zero_change_no_tree_model(algorithm):
    """The tree learners too: rows of weight 0 placed bin edges, counted towards
    min_data_in_leaf and CEGB's acquisitions and were drawn by BudgetRF's bootstraps
    (predictions moved by 0.14 to 1)."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 4))
    y = (X[:, 0] + X[:, 1] + 0.3 * rng.normal(size=300) > 0).astype(np.float64)
    X_all = np.vstack([X, rng.normal(size=(40, 4)) * 5 + 1000.0])
    y_all = np.concatenate([y, rng.integers(0, 2, 40)])
    weight = np.concatenate([np.ones(300), np.zeros(40)])
    params = {"algorithm": algorithm, "objective": "binary:logistic", "seed": 0}
    if algorithm in ("cegb", "greedy_miser", "adapt_gbrt"):
        params["cost_tradeoff"] = 0.01
    extra = {}
    if algorithm == "adapt_gbrt":
        extra["expensive_model"] = cbudget.ExternalModel(SumOfColumns([0, 1]), cost=10.0)
    costs = dict(feature_costs=[1.0, 2.0, 3.0, 4.0])
    clean = cbudget.train(params, cbudget.Dataset(X, y, **costs), 10, verbose_eval=False,
                          **extra)
    padded = cbudget.train(params, cbudget.Dataset(X_all, y_all, weight=weight, **costs), 10,
                           verbose_eval=False, **extra)
    np.testing.assert_array_equal(padded.predict(X), clean.predict(X))


def test_rows_of_weight_zero_leave_the_queries_they_were_in():
    """Ranking: the queries keep their other rows; a query of weight-0 rows only goes."""
    rng = np.random.default_rng(0)
    sizes = np.array([8, 5, 7, 6, 9, 4] * 5)
    n = sizes.sum()
    X = rng.normal(size=(n, 3))
    relevance = np.clip(np.round(X[:, 0] + rng.normal(size=n) * 0.5 + 1), 0, 3)
    weight = np.ones(n)
    weight[rng.random(n) < 0.2] = 0.0
    weight[:8] = 0.0                                  # the first query entirely
    kept = weight > 0
    query = np.repeat(np.arange(sizes.size), sizes)
    kept_sizes = np.bincount(query[kept], minlength=sizes.size)
    params = {"objective": "rank:ndcg", "min_data_in_leaf": 5}
    padded = cbudget.train(params, cbudget.Dataset(X, relevance, weight=weight, group=sizes),
                           5, verbose_eval=False)
    clean = cbudget.train(params, cbudget.Dataset(X[kept], relevance[kept],
                                                  group=kept_sizes[kept_sizes > 0]),
                          5, verbose_eval=False)
    np.testing.assert_array_equal(padded.predict(X), clean.predict(X))


@pytest.mark.parametrize("algorithm", ["cstc", "cscc", "cronus"])
def test_weight_two_is_the_row_twice(algorithm):
    """The deterministic tree and cascades: integer weights equal repeated rows."""
    X, y = separable(seed=3, n=120)
    flip = np.random.default_rng(4).random(y.size) < 0.1
    y[flip] = 1 - y[flip]                                   # not separable
    counts = np.random.default_rng(5).integers(0, 4, y.size)
    weighted = train(algorithm, X, y, counts.astype(np.float64))
    repeated = train(algorithm, X.repeat(counts, axis=0), y.repeat(counts))
    np.testing.assert_allclose(weighted.predict(X), repeated.predict(X), atol=1e-7)


def test_standardize_is_weighted_and_ignores_rows_of_weight_zero():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(50, 3)) * [1.0, 1e-3, 1e3]
    counts = rng.integers(0, 3, 50)
    mean, std = standardize(X, counts.astype(np.float64))
    repeated = X.repeat(counts, axis=0)
    np.testing.assert_allclose(mean, repeated.mean(axis=0), rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(std, repeated.std(axis=0), rtol=1e-12)


# -- item 7: non-finite and huge values --------------------------------------------------
def test_standardize_does_not_overflow_and_reads_huge_values_as_missing():
    """Values up to 1e153 are standardised without overflow (their squares would
    overflow float64); NaN, +-inf and 1e308 (>= MAX_INPUT) are missing, at the mean."""
    X = np.array([[1e150, 1.0], [-1e150, np.inf], [3e150, 1e308], [np.nan, -np.inf],
                  [1e153, 3.0]])
    assert 1e153 < MAX_INPUT < 1e308
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        mean, std = standardize(X, np.ones(5))
        Z = standardized(X, mean, std)
    first = np.array([1.0, -1.0, 3.0, 1000.0])     # column 0 in units of 1e150
    np.testing.assert_allclose(mean, [first.mean() * 1e150, 2.0])
    np.testing.assert_allclose(std, [first.std() * 1e150, 1.0])
    assert np.isfinite(Z).all()
    np.testing.assert_array_equal(Z[[1, 2, 3], 1], 0.0)
    assert Z[3, 0] == 0.0


@pytest.mark.parametrize("value", [np.inf, 1e308])
@pytest.mark.parametrize("algorithm", LINEAR)
def test_infinite_and_huge_values_are_missing_in_training(algorithm, value):
    """20% of the entries +-inf (or +-1e308), the others holding the label: training
    reads them as missing, as prediction does (they trained a constant model: accuracy
    0.52, no weight), with no NumPy warning."""
    rng = np.random.default_rng(2)
    n, d = 300, 6
    y = rng.integers(0, 2, n).astype(np.float64)
    X = (2 * y - 1)[:, None] + 0.7 * rng.normal(size=(n, d))
    hit = rng.random((n, d)) < 0.2
    X[hit] = value * rng.choice([-1.0, 1.0], hit.sum())
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        model = train(algorithm, X, y, cols=range(d))
        assert accuracy(model, X, y) >= 0.95
    assert model.used_features().size > 0
    # a huge value predicts as a missing one
    odd = X[:20].copy()
    odd[:, 0] = 1e200
    missing = odd.copy()
    missing[:, 0] = np.nan
    np.testing.assert_array_equal(model.predict(odd), model.predict(missing))
