"""The boosters' training cost accounting, tracked while the trees grow (each node's
``new_acquisitions``, the training cost curve, the summary's ``train_cost``), against
the routing pass that :meth:`TreeEnsemble.finalize` runs for the other learners
(``training_cost_pass``, the slow reference here)."""
import copy

import numpy as np
import pytest
from small_models import BOOSTERS

import cbudget
from cbudget._core._acquisition import AcquisitionState
from cbudget._core._types import NODE_DTYPE

N_FEATURES = 7


def make_data(seed, n=400, n_classes=0, missing=True, ranking=False):
    """A small data set whose features all carry signal, some NaN, costs with a group,
    split and tree costs (every term of the training cost)."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, N_FEATURES))
    X[:, 3] = np.round(X[:, 3])           # few distinct values
    if missing:
        X[rng.random(X.shape) < 0.1] = np.nan
    score = np.nansum(X[:, :5] * np.array([1.0, -0.8, 0.6, 0.5, -0.4]), axis=1)
    if n_classes:
        y = np.digitize(score, np.quantile(score, np.linspace(0, 1, n_classes + 1)[1:-1]))
    elif ranking:
        y = np.clip(np.round(score + 2), 0, 4)
    else:
        y = score + 0.1 * rng.standard_normal(n)
    # the same costs for every seed (a continued model keeps its cost model)
    costs = dict(feature_costs=np.linspace(0.5, 3, N_FEATURES),
                 cost_groups={"pair": [1, 2]}, group_costs={"pair": 4.0},
                 split_cost=0.01, tree_cost=0.1)
    group = np.full(n // 20, 20) if ranking else None
    return cbudget.Dataset(X, y.astype(np.float64), group=group, **costs)


def routed(model, dtrain):
    """The reference numbers: (per-tree new_acquisitions, cost curve) of routing the
    training inputs through a copy of the model."""
    reference = copy.deepcopy(model)
    curve = reference.training_cost_pass(dtrain.data)[0]
    return [tree["new_acquisitions"].copy() for tree in reference.trees], curve


def assert_tracked_as_routed(model, dtrain):
    acquisitions, curve = routed(model, dtrain)
    assert len(acquisitions) == len(model.trees)
    for tracked, reference in zip(model.trees, acquisitions):
        np.testing.assert_array_equal(tracked["new_acquisitions"], reference)
    tracked_curve = np.asarray(model.summary["train_cost_per_iteration"])
    np.testing.assert_allclose(tracked_curve, curve, rtol=1e-12, atol=0)
    end = model.best_iteration + 1 if model.best_iteration is not None else len(curve)
    assert model.summary["train_cost"] == pytest.approx(curve[end - 1], rel=1e-12)
    # the model's splits acquire features: the comparison is not of zeros
    assert sum(int(t["new_acquisitions"].sum()) for t in model.trees) > 0


CASES = {
    "gbdt regression": ({"algorithm": "gbdt"}, {}),
    "gbdt bagged": ({"algorithm": "gbdt", "subsample": 0.6, "colsample_bytree": 0.7}, {}),
    "gbdt multiclass": ({"algorithm": "gbdt", "objective": "multi:softprob",
                         "num_class": 4, "subsample": 0.7}, {"n_classes": 4}),
    "gbdt binary depthwise": ({"algorithm": "gbdt", "objective": "binary:logistic",
                               "grow_policy": "depthwise", "max_depth": 3,
                               "subsample": 0.8}, {"n_classes": 2}),
    "gbdt ranking": ({"algorithm": "gbdt", "objective": "rank:ndcg", "subsample": 0.5},
                     {"ranking": True}),
    "cegb bagged": ({"algorithm": "cegb", "cost_tradeoff": 0.01, "subsample": 0.7}, {}),
    "greedy_miser multiclass": ({"algorithm": "greedy_miser", "cost_tradeoff": 0.5,
                                 "objective": "multi:softprob", "num_class": 3,
                                 "subsample": 0.8}, {"n_classes": 3}),
}


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("n_jobs", [1, 2])
def test_tracked_costs_match_routing(case, n_jobs):
    params, data_options = CASES[case]
    dtrain = make_data(0, **data_options)
    model = cbudget.train(dict(params, num_leaves=8, min_data_in_leaf=5, n_jobs=n_jobs,
                               seed=3), dtrain, 6)
    assert_tracked_as_routed(model, dtrain)


def test_tracked_costs_with_early_stopping():
    dtrain, dvalid = make_data(0), make_data(1, n=200)
    model = cbudget.train({"algorithm": "gbdt", "num_leaves": 31, "min_data_in_leaf": 2,
                           "learning_rate": 0.5}, dtrain, 60, evals=[(dvalid, "valid")],
                          early_stopping_rounds=3, verbose_eval=False)
    assert model.best_iteration < model.num_boosted_rounds() - 1   # the summary's round
    assert_tracked_as_routed(model, dtrain)


@pytest.mark.parametrize("algorithm", BOOSTERS)
def test_tracked_costs_when_continuing(algorithm):
    """xgb_model=: the trees continued from are routed once (on this training data,
    here another than they were trained on), the new ones tracked."""
    params = {"algorithm": algorithm, "num_leaves": 8, "min_data_in_leaf": 5,
              "subsample": 0.8, "seed": 1}
    if algorithm != "gbdt":
        params["cost_tradeoff"] = 0.01
    first = cbudget.train(params, make_data(5), 3)
    dtrain = make_data(6)
    model = cbudget.train(params, dtrain, 4, xgb_model=first)
    assert model.num_boosted_rounds() == 7
    assert_tracked_as_routed(model, dtrain)


def test_acquire_partition_counts_as_routing():
    """The state after a tree's partition: the rows of each split node acquire its
    feature, counted where they first do; a node's rows follow from n_samples."""
    # root splits on 0 into node 1 (rows 0-2, splits on 1) and node 2 (rows 3-4, a leaf)
    tree = np.zeros(5, dtype=NODE_DTYPE)
    tree["left"], tree["right"] = [1, 3, -1, -1, -1], [2, 4, -1, -1, -1]
    tree["feature"] = [0, 1, -1, -1, -1]
    tree["n_samples"] = [5, 3, 2, 1, 2]
    rows = np.array([4, 0, 2, 1, 3], dtype=np.int32)
    state = AcquisitionState(6, np.array([-1, 0], dtype=np.int32), 1)
    state.acquire(np.array([0], dtype=np.int32), 1)      # row 0 already has feature 1
    assert state.acquire_partition(tree, rows) == 5 + 3
    np.testing.assert_array_equal(tree["new_acquisitions"], [5, 2, 0, 0, 0])
    np.testing.assert_array_equal(state.acquired_counts, [5, 3])
    np.testing.assert_array_equal(state.touched_counts, [3])
    # a second identical tree acquires nothing new (every row has feature 0)
    again = tree.copy()
    again["new_acquisitions"] = 0
    assert state.acquire_partition(again, rows) == 8
    np.testing.assert_array_equal(again["new_acquisitions"], 0)


def test_acquire_partition_refuses_bad_partitions():
    tree = np.zeros(3, dtype=NODE_DTYPE)
    tree["left"], tree["right"], tree["feature"] = [1, -1, -1], [2, -1, -1], [0, -1, -1]
    tree["n_samples"] = [4, 1, 2]
    state = AcquisitionState(4, np.array([-1], dtype=np.int32), 0)
    rows = np.arange(4, dtype=np.int32)
    with pytest.raises(ValueError, match="add up"):
        state.acquire_partition(tree, rows)
    tree["n_samples"] = [4, 1, 3]
    with pytest.raises(ValueError, match="root holds"):
        state.acquire_partition(tree, rows[:3])
    with pytest.raises(ValueError, match="out of range"):
        state.acquire_partition(tree, np.array([0, 1, 2, 9], dtype=np.int32))
    tree["feature"][0] = 5
    with pytest.raises(ValueError, match="feature"):
        state.acquire_partition(tree, rows)
