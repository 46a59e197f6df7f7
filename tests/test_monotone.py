"""Monotone constraints (``monotone_constraints``, LightGBM's basic method) of gbdt, cegb
and greedy_miser: sweeps of a constrained feature never go against its direction (NaN
rows included) while the unconstrained model's do, a free feature keeps its shape, the
split search against a brute-force search over every partition, every grown tree's
subtrees ordered at a constrained split (each growth policy), the parameter's forms and
errors, and model files."""
import json

import numpy as np
import pytest

import cbudget
from cbudget._core._grower import TreeGrower
from cbudget._core._split import find_best_split
from cbudget._core._types import HISTOGRAM_DTYPE
from cbudget.sklearn import GBDTRegressor

ALGORITHMS = ("gbdt", "cegb", "greedy_miser")
GRID = np.linspace(-1.3, 1.3, 53)     # beyond the training range on both sides
DIRECTIONS = [1, -1, 0]               # x0 increasing, x1 decreasing, x2 free


def make_data(task, seed=0, n=600, missing=0.1):
    """x0 with a wavy rising effect, x1 a wavy falling one, x2 a sine (free): the
    unconstrained model is non-monotone in every one of them. NaN in x0 and x1."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, (n, 3))
    y = (X[:, 0] + 0.6 * np.sin(7 * X[:, 0]) - X[:, 1] + 0.6 * np.cos(6 * X[:, 1])
         + np.sin(4 * X[:, 2]) + 0.1 * rng.normal(size=n))
    if task == "binary":
        y = (y > np.median(y)).astype(np.float64)
    X[rng.random((n, 3)) < missing * np.array([1, 1, 0])] = np.nan
    return X, y


def params(algorithm, task, constraints, **extra):
    p = {"algorithm": algorithm, "objective": "binary:logistic" if task == "binary"
         else "reg:squarederror", "learning_rate": 0.3, "min_data_in_leaf": 5,
         "monotone_constraints": constraints, "verbosity": 0, **extra}
    if algorithm != "gbdt":
        p["cost_tradeoff"] = 0.01
    return p


def sweeps(model, X, feature, rows=40):
    """Predictions (rows x grid) with ``feature`` swept over GRID in the first ``rows``
    rows of X (their other features as they are, NaN included), and with it NaN."""
    base = np.repeat(X[:rows], GRID.size, axis=0)
    base[:, feature] = np.tile(GRID, rows)
    return model.predict(base, output_margin=True).reshape(rows, GRID.size)


def worst_step(model, X, feature, direction):
    """The largest step against ``direction`` over the sweeps (<= 0: monotone)."""
    return float(np.max(-direction * np.diff(sweeps(model, X, feature), axis=1)))


@pytest.mark.parametrize("task", ["regression", "binary"])
@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_sweeps_follow_the_constraints(algorithm, task):
    X, y = make_data(task)
    # rows with NaN in the other features (and in the swept one's neighbour) among them
    X_sweep = X[np.argsort(np.isnan(X).any(axis=1))[::-1]]
    assert np.isnan(X_sweep[:20]).any(axis=1).all()
    d = cbudget.Dataset(X, y)
    free = cbudget.train(params(algorithm, task, None), d, 30)
    held = cbudget.train(params(algorithm, task, DIRECTIONS), d, 30)
    for feature, direction in ((0, 1), (1, -1)):
        assert worst_step(free, X_sweep, feature, direction) > 1e-3      # the test can fail
        assert worst_step(held, X_sweep, feature, direction) <= 0.0
    # the free feature keeps its sine: the sweeps rise and fall
    steps = np.diff(sweeps(held, X_sweep, 2), axis=1)
    assert steps.max() > 1e-2 and steps.min() < -1e-2
    # and the constrained model still learns (better than the constant)
    pred = held.predict(X)
    if task == "binary":
        assert np.mean((pred > 0.5) == y) > 0.75
    else:
        assert np.mean((pred - y) ** 2) < 0.5 * np.var(y)


def test_all_zero_constraints_are_no_constraints():
    X, y = make_data("regression")
    d = cbudget.Dataset(X, y)
    for algorithm in ALGORITHMS:
        free = cbudget.train(params(algorithm, "regression", None), d, 10)
        zero = cbudget.train(params(algorithm, "regression", [0, 0, 0]), d, 10)
        np.testing.assert_array_equal(free.predict(X), zero.predict(X))


def subtree_leaf_values(tree, node):
    """The values of the leaves under ``node``."""
    if tree["left"][node] == -1:
        return [tree["value"][node]]
    return (subtree_leaf_values(tree, tree["left"][node])
            + subtree_leaf_values(tree, tree["right"][node]))


@pytest.mark.parametrize("algorithm,extra", [
    ("gbdt", {"grow_policy": "depthwise", "max_depth": 5}),
    ("gbdt", {"grow_policy": "lossguide", "num_leaves": 20}),
    ("cegb", {}),                                 # best-first, no depth limit
    ("greedy_miser", {"objective": "multi:softprob", "num_class": 3, "n_jobs": 2}),
])
def test_every_constrained_split_orders_its_subtrees(algorithm, extra):
    """In every tree, at every split on a constrained feature, every leaf of the left
    subtree is on the constraint's side of every leaf of the right one (+1: <=);
    multiclass Greedy Miser's trees grow speculatively on two threads."""
    X, y = make_data("regression", seed=1)
    if extra.get("num_class"):
        y = np.digitize(y, np.quantile(y, [1 / 3, 2 / 3])).astype(np.float64)
    model = cbudget.train(params(algorithm, "regression", DIRECTIONS, **extra),
                          cbudget.Dataset(X, y), 8)
    checked = 0
    for tree in model.trees:
        for node in np.flatnonzero(tree["left"] != -1):
            direction = DIRECTIONS[tree["feature"][node]]
            if direction:
                left = subtree_leaf_values(tree, tree["left"][node])
                right = subtree_leaf_values(tree, tree["right"][node])
                gap = min(right) - max(left) if direction > 0 else min(left) - max(right)
                assert gap >= 0.0
                checked += 1
    assert checked > 10


# ---------------------------------------------------------------------------------------
# The split search against brute force
# ---------------------------------------------------------------------------------------
def brute_force_split(bins, missing, g, h, directions, lower, upper, penalty, reg_lambda,
                      min_data, min_hessian):
    """The best net gain (and its feature) over every split of every feature: rows of
    bin <= t left, missing values on either side; the children's outputs clipped to
    [lower, upper]; a split of a constrained feature only if they follow its direction."""
    G, H = g.sum(), h.sum()
    parent = G * G / (H + reg_lambda)
    best = (-np.inf, -1)
    for f in range(bins.shape[1]):
        for t in range(int(bins[~missing[:, f], f].max(initial=0))):
            for missing_left in (False, True):
                left = (bins[:, f] <= t) & ~missing[:, f] | (missing[:, f] & missing_left)
                if min(left.sum(), (~left).sum()) < min_data \
                        or min(h[left].sum(), h[~left].sum()) < min_hessian:
                    continue
                sides = []
                for side in (left, ~left):
                    gs, hs = g[side].sum(), h[side].sum()
                    out = np.clip(-gs / (hs + reg_lambda), lower, upper)
                    sides.append((out, -(2 * gs * out + (hs + reg_lambda) * out * out)))
                (lo, lgain), (ro, rgain) = sides
                if directions[f] * (ro - lo) < 0:
                    continue
                net = 0.5 * (lgain + rgain - parent) - penalty[f]
                if net > best[0] + 1e-12:
                    best = (net, f)
    return best


def test_split_search_matches_brute_force():
    """Random tiny problems, unbounded and bounded leaves, random cost penalties: the
    kernel's best split is the brute force's (the cost-penalised best among the
    admissible splits), and often not the unconstrained search's."""
    n, n_features, n_bins, missing_bin = 60, 4, 7, 7
    directions = np.array([1, -1, 0, 1], dtype=np.int8)
    nvb = np.full(n_features, n_bins, dtype=np.uint32)
    mask = np.ones(n_features, np.uint8)
    differ = 0
    for seed in range(8):
        rng = np.random.default_rng(seed)
        bins = rng.integers(0, n_bins, (n, n_features))
        missing = rng.random((n, n_features)) < 0.15
        g, h = rng.normal(size=n) + 0.3 * (bins[:, 0] % 3 == 1), rng.uniform(0.5, 1.5, n)
        penalty = rng.uniform(0, 0.3, n_features)
        hist = np.zeros((n_features, missing_bin + 1), dtype=HISTOGRAM_DTYPE)
        for f in range(n_features):
            column = np.where(missing[:, f], missing_bin, bins[:, f])
            np.add.at(hist[f]["sum_gradients"], column, g)
            np.add.at(hist[f]["sum_hessians"], column, h)
            np.add.at(hist[f]["count"], column, 1)
        args = (hist, nvb, missing_bin, mask, g.sum(), h.sum(), n, 1.0, 1e-3, 3, penalty, 1)
        unconstrained = find_best_split(*args)
        leaf = -g.sum() / (h.sum() + 1.0)
        for lower, upper in ((-np.inf, np.inf), (leaf - 0.05, leaf + 0.02), (leaf, leaf + 1)):
            got = find_best_split(*args, monotone=directions, lower=lower, upper=upper)
            want = brute_force_split(bins, missing, g, h, directions, lower, upper, penalty,
                                     1.0, 3, 1e-3)
            assert got.feature == want[1]
            if want[1] >= 0:
                assert got.gain == pytest.approx(want[0], rel=1e-9, abs=1e-12)
            assert unconstrained.gain >= got.gain - 1e-12
            differ += (got.feature, got.bin_threshold, got.default_left) != (
                unconstrained.feature, unconstrained.bin_threshold, unconstrained.default_left)
    assert differ >= 8


def test_leaf_values_are_clipped_to_the_midpoint():
    """One split on an increasing feature whose data decrease: no split is admissible
    (a stump), while the decreasing direction takes the split."""
    X = np.linspace(0, 1, 200)[:, None]
    y = -X[:, 0]
    d = cbudget.Dataset(X, y)
    for direction, n_nodes in ((1, 1), (-1, 3)):
        model = cbudget.train({"monotone_constraints": [direction], "max_depth": 1,
                               "grow_policy": "depthwise", "base_score": 0.0}, d, 1)
        assert model.trees[0].shape[0] == n_nodes


def test_lambda_max_weighs_the_admissible_root_splits_only():
    """lambda_max (the root splits' gain / cost ratios) with a constraint that forbids
    the one informative split: 0, no costly split has a gain."""
    X = np.linspace(0, 1, 200)[:, None]
    d = cbudget.Dataset(X, -X[:, 0], feature_costs=[1.0])
    for algorithm in ("cegb", "greedy_miser"):
        assert cbudget.lambda_max({"algorithm": algorithm}, d) > 0
        assert cbudget.lambda_max({"algorithm": algorithm, "monotone_constraints": [1]},
                                  d) == 0
        assert cbudget.lambda_max({"algorithm": algorithm, "monotone_constraints": [-1]},
                                  d) > 0


def test_grower_refuses_bad_directions():
    rng = np.random.default_rng(0)
    binned = np.asfortranarray(rng.integers(0, 4, (50, 2)).astype(np.uint8))
    args = (binned, np.arange(8, dtype=np.float64), np.array([0, 4, 8]),
            np.array([4, 4], dtype=np.uint32), 255, 0.1, 1.0, 1e-3, 0.0, 5, 8, -1, True, 1)
    with pytest.raises(ValueError, match="one of -1, 0, \\+1 per feature"):
        TreeGrower(*args, monotone=np.array([2, 0]))
    with pytest.raises(ValueError, match="one of -1, 0, \\+1 per feature"):
        TreeGrower(*args, monotone=np.array([1]))
    with pytest.raises(ValueError, match="categorical feature has no order"):
        TreeGrower(*args, categorical=np.array([0, 1]), monotone=np.array([0, -1]))


# ---------------------------------------------------------------------------------------
# The parameter
# ---------------------------------------------------------------------------------------
def test_forms_of_the_parameter_give_one_model():
    """A list, a tuple, an array, XGBoost's string and a dict by feature name (features
    left out: 0) train the same model."""
    X, y = make_data("regression", n=300)
    d = cbudget.Dataset(X, y, feature_names=["age", "debt", "noise"])
    forms = [[1, -1, 0], (1, -1, 0), np.array([1, -1, 0]), "(1,-1,0)", "1,-1,0",
             {"age": 1, "debt": -1}]
    predictions = [cbudget.train({"monotone_constraints": form}, d, 5).predict(X)
                   for form in forms]
    for pred in predictions[1:]:
        np.testing.assert_array_equal(pred, predictions[0])


@pytest.mark.parametrize("value,error,match", [
    ([1, 0], ValueError, "2 entries for the data's 3 features"),
    ([1, 2, 0], ValueError, r"\[1\] must be -1 \(decreasing\), 0 \(none\) or 1"),
    ([1.0, 0, 0], ValueError, "must be -1"),
    ([True, 0, 0], ValueError, "must be -1"),
    ("(1,x,0)", ValueError, "separated by commas"),
    ({"age": 1, "income": 1}, ValueError, r"names features the data has not: \['income'\]"),
    ({0: 1}, TypeError, "keys are feature names"),
    (1, TypeError, "must be a list"),
])
def test_bad_values_are_refused(value, error, match):
    X, y = make_data("regression", n=100)
    d = cbudget.Dataset(X, y, feature_names=["age", "debt", "noise"])
    with pytest.raises(error, match=match):
        cbudget.train({"monotone_constraints": value}, d, 2)


def test_a_categorical_feature_takes_no_direction():
    import pandas as pd
    X, y = make_data("regression", n=200)
    frame = pd.DataFrame({"a": X[:, 0], "b": pd.Categorical(np.where(X[:, 1] > 0, "u", "v")),
                          "c": X[:, 2]})
    d = cbudget.Dataset(frame, y)
    with pytest.raises(ValueError, match=r"categorical features \['b'\]: their levels have "
                                         "no order"):
        cbudget.train({"monotone_constraints": [1, 1, 0]}, d, 2)
    # a direction on the numeric features only: trained, monotone in "a"
    model = cbudget.train({"monotone_constraints": {"a": 1}, "min_data_in_leaf": 5}, d, 20)
    sweep = frame.iloc[np.repeat(np.arange(10), GRID.size)].copy()
    sweep["a"] = np.tile(GRID, 10)
    assert np.diff(model.predict(sweep).reshape(10, -1), axis=1).min() >= 0


@pytest.mark.parametrize("algorithm", ["budget_rf", "cstc", "cscc", "cronus", "adapt_gbrt",
                                       "adapt_lin"])
def test_other_algorithms_refuse_the_parameter(algorithm):
    with pytest.raises(ValueError, match=r"'monotone_constraints' applies to algorithms "
                                         r"'gbdt', 'cegb', 'greedy_miser', not to algorithm"):
        cbudget.algorithms.resolve_params({"algorithm": algorithm,
                                           "monotone_constraints": [1]})


def test_model_files_keep_the_constraints(tmp_path):
    X, y = make_data("regression", n=300)
    d = cbudget.Dataset(X, y, feature_names=["age", "debt", "noise"])
    for value in ([1, -1, 0], {"age": 1}):
        model = cbudget.train({"algorithm": "cegb", "monotone_constraints": value,
                               "cost_tradeoff": 0.0}, d, 5)
        path = tmp_path / "m.json"
        model.save_model(path)
        loaded = cbudget.load_model(path)
        assert loaded.params["monotone_constraints"] == value
        np.testing.assert_array_equal(loaded.predict(X), model.predict(X))
        # a file written before the parameter existed loads, without constraints
        doc = json.loads(path.read_text())
        assert doc["training_params"].pop("monotone_constraints") == value
        path.write_text(json.dumps(doc))
        old = cbudget.load_model(path)
        assert old.params["monotone_constraints"] is None
        np.testing.assert_array_equal(old.predict(X), model.predict(X))


def test_sklearn_estimators_pass_it_through():
    X, y = make_data("regression", n=300)
    model = GBDTRegressor(n_estimators=20, params={"monotone_constraints": DIRECTIONS,
                                                   "min_data_in_leaf": 5}).fit(X, y)
    base = np.repeat(X[:20], GRID.size, axis=0)
    base[:, 0] = np.tile(GRID, 20)
    assert np.diff(model.predict(base).reshape(20, -1), axis=1).min() >= 0


@pytest.mark.slow
@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_dask_training_keeps_the_constraints(dask_client, algorithm):
    """cbudget.dask's driver grows with the same bounds: on two partitions the trees of
    single-machine training, up to summation order, and monotone."""
    da = pytest.importorskip("dask.array")
    from cbudget.dask import DaskDataset
    from cbudget.dask import train as dask_train
    X, y = make_data("regression", seed=2)
    p = params(algorithm, "regression", DIRECTIONS)
    local = cbudget.train(p, cbudget.Dataset(X, y), 10)
    remote = dask_train(dask_client, p, DaskDataset(dask_client, da.from_array(X, chunks=(350, 3)),
                                                    da.from_array(y, chunks=350)), 10)
    np.testing.assert_allclose(remote.predict(X), local.predict(X), rtol=1e-9, atol=1e-12)
    assert worst_step(remote, X, 0, 1) <= 0.0 and worst_step(remote, X, 1, -1) <= 0.0


@pytest.mark.parametrize("objective", ["reg:absoluteerror", "reg:quantileerror"])
def test_renewed_leaves_keep_the_constraints(objective):
    """Absolute error and quantile re-fit their leaves after growth: the re-fitted
    values stay within the leaves' monotone bounds (they broke the direction before)."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(2000, 2))
    y = np.sin(3 * X[:, 0]) + 0.1 * rng.normal(size=len(X))
    model = cbudget.train({"objective": objective, "monotone_constraints": [1, 0]},
                          cbudget.Dataset(X, y), 30, verbose_eval=False)
    grid = np.column_stack([np.linspace(-2, 2, 400), np.zeros(400)])
    assert np.all(np.diff(model.predict(grid)) >= -1e-12)
