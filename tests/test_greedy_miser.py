"""Greedy Miser (``algorithm="greedy_miser"``): the grower with once-per-model costs
against the slow reference, lambda = 0 against a slow pure-NumPy stage-wise regression,
the behaviour the paper describes (fewer and cheaper features as lambda grows, shared
group costs, one phi for all class trees), budgets, continuation and the model format."""
import json

import numpy as np
import pytest
from reference_growers import (
    MISSING,
    assert_tree_matches_reference,
    random_binned_problem,
    ref_best_split,
    ref_grow,
)

import cbudget
from cbudget._core._acquisition import AcquisitionState
from cbudget._core._grower import TreeGrower
from cbudget.algorithms import resolve_params

SEEDS = [0, 1, 2]


# ---------------------------------------------------------------------------------------
# The grower with Greedy Miser's penalty (phi: once per model) against the reference
# ---------------------------------------------------------------------------------------
# every combination of trade-off, groups and growth once; the data seeds rotate over them,
# so that each seed meets every value of every parameter
GROWER_CASES = [(SEEDS[(i + j + k) % len(SEEDS)], tradeoff, n_groups, *growth)
                for i, tradeoff in enumerate((0.0, 0.05, 0.5))
                for j, n_groups in enumerate((0, 3))
                for k, growth in enumerate(((False, -1, 4), (False, -1, 2), (True, 10, -1)))]


@pytest.mark.parametrize("seed,tradeoff,n_groups,best_first,num_leaves,max_depth",
                         GROWER_CASES)
def test_grower_matches_reference(seed, tradeoff, n_groups, best_first, num_leaves, max_depth):
    """Several first-order trees (hessian = weight, no L2) on one state: a feature's
    cost is paid by the first split on it in the whole model, a group's cost by the
    first split on any member; leaves that could not pay are reopened when a cost
    drops (the reference recomputes every open leaf from scratch after each split)."""
    rng = np.random.default_rng(seed)
    n, n_features = 300, 11
    binned, n_value_bins, edges, indptr, mask = random_binned_problem(rng, n, n_features)
    group = (rng.integers(-1, n_groups, n_features) if n_groups
             else np.full(n_features, -1)).astype(np.int32)
    costs = {"feature_costs": np.zeros(n_features), "feature_group": group,
             "group_costs": np.zeros(n_groups),
             "coupled_costs": rng.uniform(0, 30, n_features) * (rng.random(n_features) < 0.8),
             "coupled_group_costs": rng.uniform(10, 60, n_groups), "split_cost": 0.0}
    grower = TreeGrower(binned, edges, indptr, n_value_bins, MISSING, 0.1, 0.0, 1e-3, 0.0, 5,
                        num_leaves, max_depth, best_first, 2)
    state = AcquisitionState(n, group, n_groups)
    grower.set_cost_penalty(state, tradeoff, costs["feature_costs"], group,
                            costs["group_costs"], costs["coupled_costs"],
                            costs["coupled_group_costs"], 0.0)
    ref_state = {"acquired": np.zeros((n, n_features), bool),
                 "touched": np.zeros((n, n_groups), bool),
                 "used": np.zeros(n_features, bool), "group_used": np.zeros(n_groups, bool)}
    for t in range(5):
        signal = (binned[:, t % 4] < n_value_bins[t % 4] // 2) - 0.5
        g = rng.standard_normal(n) + 2 * signal
        h = np.ones(n) if t % 2 else rng.uniform(0.5, 1.5, n)     # weights
        rows = np.sort(rng.choice(n, n - 40 * (t % 2), replace=False)).astype(np.int32)
        ref = ref_grow(binned, n_value_bins, g, h, rows.copy(), mask, ref_state, costs,
                       tradeoff, reg_lambda=0.0, num_leaves=num_leaves, max_depth=max_depth,
                       best_first=best_first)
        tree = grower.grow(g, h, rows, mask)
        assert_tree_matches_reference(tree, ref, g, h, learning_rate=0.1, reg_lambda=0.0)
        np.testing.assert_array_equal(state.used_mask.astype(bool), ref_state["used"])
        np.testing.assert_array_equal(state.group_used_mask.astype(bool),
                                      ref_state["group_used"])


# ---------------------------------------------------------------------------------------
# lambda = 0: plain first-order stage-wise regression (slow reference)
# ---------------------------------------------------------------------------------------
def ref_cart_leaves(binned, n_value_bins, rows, g, h, *, max_depth, min_data, mcw, depth=0):
    """The row sets of the leaves of a least-squares CART tree on residuals -g/h
    (weights h), grown recursively to ``max_depth`` by the exhaustive split scan."""
    if depth < max_depth and rows.shape[0] >= 2 * min_data and h[rows].sum() >= 2 * mcw:
        net, _, _, f, t, default_left = ref_best_split(
            binned, n_value_bins, rows, g, h, np.ones(binned.shape[1], bool),
            np.zeros(binned.shape[1]), 0.0, mcw, min_data)
        if f >= 0 and net > 0:
            b = binned[rows, f]
            left = np.where(b == MISSING, default_left, b <= t)
            return [leaf for part in (rows[left], rows[~left])
                    for leaf in ref_cart_leaves(binned, n_value_bins, part, g, h,
                                                max_depth=max_depth, min_data=min_data,
                                                mcw=mcw, depth=depth + 1)]
    return [rows]


def ref_gradients(objective, raw, y, w):
    """Per-output gradients of the loss w.r.t. the raw scores, times the weight."""
    if objective == "reg:squarederror":
        return w[:, None] * (raw - y[:, None])
    if objective == "binary:logistic":
        return w[:, None] * (1 / (1 + np.exp(-raw)) - y[:, None])
    p = np.exp(raw - raw.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    return w[:, None] * (p - (y[:, None] == np.arange(raw.shape[1])))


def ref_stagewise(dtrain, objective, base_score, n_rounds, *, step=0.1, max_depth=4,
                  min_data=20, mcw=1e-3):
    """Friedman's stage-wise regression: each round fits one CART tree per output to
    the negative gradient and adds ``step`` times its leaf means. Raw training scores."""
    n = dtrain.num_data()
    y = dtrain.label
    w = np.ones(n) if dtrain.weight is None else dtrain.weight
    raw = np.tile(base_score, (n, 1))
    for _ in range(n_rounds):
        grad = ref_gradients(objective, raw, y, w)
        for k in range(raw.shape[1]):
            for rows in ref_cart_leaves(dtrain.binned, dtrain.n_value_bins, np.arange(n),
                                        grad[:, k], w, max_depth=max_depth,
                                        min_data=min_data, mcw=mcw):
                raw[rows, k] -= step * grad[rows, k].sum() / w[rows].sum()
    return raw


def make_problem(seed, n=1500, n_features=6, objective="binary:logistic", n_classes=3,
                 missing=0.03):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, n_features))
    score = X[:, 0] + np.sin(2 * X[:, 1]) + 0.5 * X[:, 2] * X[:, 3]
    if objective == "reg:squarederror":
        y = score + 0.3 * rng.standard_normal(n)
    elif objective == "binary:logistic":
        y = (score + 0.5 * rng.standard_normal(n) > 0).astype(float)
    else:
        y = np.digitize(score, np.quantile(score, np.linspace(0, 1, n_classes + 1)[1:-1]))
        y = y.astype(float)
    X[rng.random(X.shape) < missing] = np.nan
    return X, y


@pytest.mark.parametrize("objective,weighted,max_depth", [
    ("reg:squarederror", False, 4), ("binary:logistic", False, 4),
    ("binary:logistic", True, 3), ("multi:softprob", False, 4)])
def test_zero_tradeoff_is_stagewise_regression(objective, weighted, max_depth):
    X, y = make_problem(3, objective=objective)
    weight = np.random.default_rng(4).uniform(0.2, 2.0, y.shape[0]) if weighted else None
    rng = np.random.default_rng(5)
    dtrain = cbudget.Dataset(X, y, weight=weight, feature_costs=rng.uniform(1, 10, 6),
                             coupled_costs=rng.uniform(0, 5, 6), cost_groups=[[0, 4]],
                             group_costs=[7.0])
    params = {"algorithm": "greedy_miser", "cost_tradeoff": 0.0, "objective": objective,
              "max_depth": max_depth}
    if objective == "multi:softprob":
        params["num_class"] = 3
    b = cbudget.train(params, dtrain, 12, verbose_eval=False)
    raw = ref_stagewise(dtrain, objective, b.base_score, 12, max_depth=max_depth)
    np.testing.assert_allclose(b.predict(X, output_margin=True).reshape(raw.shape), raw,
                               rtol=1e-9, atol=1e-9)
    assert all(t["depth"].max() <= max_depth for t in b.trees)
    assert np.all(np.concatenate([t["cost_penalty"] for t in b.trees]) == 0)


def test_squared_error_equals_gbdt_without_l2():
    """For squared error the hessian is the weight: Greedy Miser with lambda = 0 and
    second-order boosting with the same depth-limited trees and no L2 coincide."""
    X, y = make_problem(6, objective="reg:squarederror")
    dtrain = cbudget.Dataset(X, y, feature_costs=np.arange(1, 7))
    miser = cbudget.train({"algorithm": "greedy_miser", "cost_tradeoff": 0.0}, dtrain, 10,
                          verbose_eval=False)
    gbdt = cbudget.train({"grow_policy": "depthwise", "max_depth": 4, "reg_lambda": 0.0},
                         dtrain, 10, verbose_eval=False)
    for a, b in zip(miser.trees, gbdt.trees):
        np.testing.assert_array_equal(a["feature"], b["feature"])
        np.testing.assert_array_equal(a["bin_threshold"], b["bin_threshold"])
        np.testing.assert_allclose(a["value"], b["value"], rtol=1e-12)


# ---------------------------------------------------------------------------------------
# The behaviour the paper describes
# ---------------------------------------------------------------------------------------
def heterogeneous_cost_problem(seed, n=6000):
    """12 features in cost levels 1, 10, 100 (four each). The expensive features carry
    the cleanest signal, the cheap ones noisy copies of it."""
    rng = np.random.default_rng(seed)
    z = rng.standard_normal((n, 4))
    y = (z @ np.array([1.0, 0.8, 0.6, 0.4]) + 0.3 * rng.standard_normal(n) > 0).astype(float)
    X = np.column_stack([z + rng.normal(0, 1.5, z.shape), z + rng.normal(0, 0.7, z.shape),
                         z + rng.normal(0, 0.1, z.shape)])
    costs = np.repeat([1.0, 10.0, 100.0], 4)
    return X, y, costs


def test_larger_tradeoff_uses_fewer_and_cheaper_features():
    """The paper's Fig. 2 trend: as lambda grows the model extracts fewer features,
    drops the expensive ones first and keeps re-using cheap ones."""
    X, y, costs = heterogeneous_cost_problem(0)
    dtrain = cbudget.Dataset(X, y, feature_costs=costs)
    used_costs, n_used, expensive = [], [], []
    for tradeoff in (0.0, 0.3, 1.0, 5.0, 20.0):
        b = cbudget.train({"algorithm": "greedy_miser", "objective": "binary:logistic",
                           "cost_tradeoff": tradeoff}, dtrain, 60, verbose_eval=False)
        used = b.used_features()
        used_costs.append(costs[used].sum())
        n_used.append(len(used))
        expensive.append(int(np.sum(costs[used] == 100)))
    assert expensive[0] == 4                      # without costs: the best features
    assert all(a >= b for a, b in zip(n_used, n_used[1:])), n_used
    assert all(a >= b for a, b in zip(used_costs, used_costs[1:])), used_costs
    assert all(a >= b for a, b in zip(expensive, expensive[1:])), expensive
    assert expensive[-1] == 0 and 0 < n_used[-1] < 12


def test_each_feature_and_group_is_paid_once_per_model():
    """Summed over every split of a multiclass model, the penalties charged are exactly
    lambda times the model's once-per-model cost: each used feature's cost and each
    touched group's cost once -- the class trees of a round share one phi, and a group's
    other members cost only their marginal cost."""
    X, y = make_problem(7, n=3000, n_features=8, objective="multi:softprob")
    costs = np.array([1.0, 3.0, 0.5, 2.0, 0.5, 4.0, 1.0, 2.0])
    groups = [[0, 3], [1, 5, 6]]
    group_costs = np.array([40.0, 25.0])
    dtrain = cbudget.Dataset(X, y, feature_costs=costs, cost_groups=groups,
                             group_costs=group_costs)
    tradeoff = 0.2
    b = cbudget.train({"algorithm": "greedy_miser", "objective": "multi:softprob",
                       "num_class": 3, "cost_tradeoff": tradeoff}, dtrain, 15,
                      verbose_eval=False)
    nodes = np.concatenate(b.trees)
    splits = nodes[nodes["left"] != -1]
    used = b.used_features()
    touched = [g for g, members in enumerate(groups) if set(members) & set(used)]
    assert touched, "the test needs a used group"
    expected = tradeoff * (costs[used].sum() + group_costs[touched].sum())
    assert splits["cost_penalty"].sum() == pytest.approx(expected, rel=1e-12)
    # once paid, never again: every split's penalty is 0, the feature's own marginal
    # cost, or the feature's plus its group's
    feature_group = dtrain.cost_model.feature_group
    for node in splits:
        m, pen = node["feature"], node["cost_penalty"]
        options = [0.0, tradeoff * costs[m]]
        if feature_group[m] >= 0:
            options.append(tradeoff * (costs[m] + group_costs[feature_group[m]]))
        assert min(abs(pen - o) for o in options) < 1e-12
    # a group member used after its group was paid cost only its marginal cost
    assert np.any(np.isclose(splits["cost_penalty"], tradeoff * costs[splits["feature"]])
                  & (feature_group[splits["feature"]] >= 0)
                  & (splits["cost_penalty"] > 0))


def first_uses(booster, num_class):
    """(round, tree of the round) of each tree that splits on a feature no earlier tree
    used."""
    used, uses = set(), []
    for t, tree in enumerate(booster.trees):
        features = set(tree["feature"][tree["left"] != -1].tolist())
        if features - used:
            uses.append(divmod(t, num_class))
        used |= features
    return uses


@pytest.mark.parametrize("extra", [{"subsample": 0.8, "colsample_bytree": 0.7,
                                    "cost_tradeoff": 0.05},
                                   {"cost_tradeoff": 0.2}])
def test_threads_do_not_change_the_model(extra):
    """On several threads a multiclass round's trees grow in parallel from the round's
    starting state, and those after a tree that used a new feature grow again: the
    model, its costs and the evaluation log are those of one thread."""
    X, y = make_problem(8, n=2000, n_features=8, objective="multi:softprob")
    dtrain = cbudget.Dataset(X, y, feature_costs=np.arange(1.0, 9.0),
                             cost_groups={"g": [5, 6]}, group_costs={"g": 3.0})
    dvalid = cbudget.Dataset(X[:500], y[:500], reference=dtrain)
    params = {"algorithm": "greedy_miser", "objective": "multi:softprob", "num_class": 3,
              **extra}
    models, logs = [], []
    for n_jobs in (1, 2):
        log = {}
        models.append(cbudget.train({**params, "n_jobs": n_jobs}, dtrain, 12,
                                    evals=[(dvalid, "valid")], evals_result=log,
                                    verbose_eval=False))
        logs.append(log)
    one, two = models
    # both paths of the parallel round: a tree after the first of its round used a new
    # feature (the rest of that round grew again), and rounds with no new feature
    uses = first_uses(one, 3)
    assert any(r > 0 and k > 0 for r, k in uses) and len({r for r, _ in uses}) < 12
    assert len(one.trees) == len(two.trees) == 36
    for a, b in zip(one.trees, two.trees):
        np.testing.assert_array_equal(a, b)
    assert logs[0] == logs[1]
    assert one.summary == two.summary     # the training cost after each round included
    np.testing.assert_array_equal(one.predict_cost(X), two.predict_cost(X))


# ---------------------------------------------------------------------------------------
# Tree budget, continuation, parameters and the model format
# ---------------------------------------------------------------------------------------
def test_tree_budget_selects_the_best_iteration_within_it():
    """With a per-tree evaluation cost e and free features, the number of rounds is the
    tree budget: within budget B only rounds r with (r + 1) * e * num_class <= B count,
    and the helper picks the best validation round among them."""
    X, y = make_problem(9, n=3000, objective="multi:softprob")
    Xv, yv = make_problem(10, n=1500, objective="multi:softprob")
    dtrain = cbudget.Dataset(X, y, tree_cost=0.5)
    dvalid = cbudget.Dataset(Xv, yv, reference=dtrain)
    b = cbudget.train({"algorithm": "greedy_miser", "objective": "multi:softprob",
                       "num_class": 3}, dtrain, 40, verbose_eval=False)
    np.testing.assert_allclose(b.cost_curve(Xv), 0.5 * 3 * np.arange(1, 41))
    scores = [np.mean(b.predict(Xv, iteration_range=(0, r + 1)).argmax(1) != yv)
              for r in range(40)]
    for budget in (1.5, 20.0, 33.0, 1000.0):
        choice = b.best_iteration_within_budget(dvalid, budget, metric="merror")
        last = min(int(budget // 1.5), 40) - 1
        assert choice.iteration == int(np.argmin(scores[:last + 1]))
        assert choice.cost <= budget
        assert choice.score == pytest.approx(scores[choice.iteration])
    with pytest.raises(ValueError, match="no iteration is within budget"):
        b.best_iteration_within_budget(dvalid, 1.0)


def test_continuation_restores_phi(tmp_path):
    """Training a rounds, saving, and continuing for b grows the same trees as a + b
    rounds at once: the features (and groups) the saved model uses are free."""
    X, y = make_problem(11, n=2000)
    dtrain = cbudget.Dataset(X, y, feature_costs=[1, 2, 3, 4, 5, 6], cost_groups=[[1, 2]],
                             group_costs=[10.0])
    params = {"algorithm": "greedy_miser", "objective": "binary:logistic",
              "cost_tradeoff": 0.3}
    full = cbudget.train(params, dtrain, 14, verbose_eval=False)
    part = cbudget.train(params, dtrain, 6, verbose_eval=False)
    part.save_model(tmp_path / "part.json")
    continued = cbudget.train(params, dtrain, 8, xgb_model=tmp_path / "part.json",
                              verbose_eval=False)
    assert continued.num_boosted_rounds() == 14
    for a, b in zip(full.trees, continued.trees):
        np.testing.assert_array_equal(a["feature"], b["feature"])
        np.testing.assert_array_equal(a["bin_threshold"], b["bin_threshold"])
        np.testing.assert_allclose(a["cost_penalty"], b["cost_penalty"], rtol=1e-12)
        np.testing.assert_allclose(a["value"], b["value"], rtol=1e-9, atol=1e-12)
    later = np.concatenate(continued.trees[6:])
    later = later[later["left"] != -1]
    reused = np.isin(later["feature"], part.used_features())
    assert reused.any() and np.all(later["cost_penalty"][reused] == 0)


def test_parameters():
    p = resolve_params({"algorithm": "greedy_miser"})
    assert (p["cost_tradeoff"], p["learning_rate"], p["grow_policy"], p["max_depth"],
            p["reg_lambda"], p["num_leaves"]) == (1.0, 0.1, "depthwise", 4, 0.0, None)
    p = resolve_params({"algorithm": "greedy_miser", "max_depth": 3, "eta": 0.05,
                        "lambda": 1.0, "grow_policy": "lossguide"})
    assert (p["max_depth"], p["learning_rate"], p["reg_lambda"], p["grow_policy"],
            p["num_leaves"]) == (3, 0.05, 1.0, "lossguide", 31)
    # the other algorithms keep their defaults
    p = resolve_params({})
    assert (p["grow_policy"], p["reg_lambda"], p["max_depth"]) == ("lossguide", 1.0, None)
    assert resolve_params({"grow_policy": "depthwise"})["max_depth"] == 6
    for bad in (-0.1, float("nan"), float("inf")):
        with pytest.raises(ValueError, match="cost_tradeoff"):
            resolve_params({"algorithm": "greedy_miser", "cost_tradeoff": bad})
    with pytest.raises(ValueError, match="unknown algorithm"):
        resolve_params({"algorithm": "greedy-miser"})


def test_json_records_the_algorithm_and_round_trips(tmp_path):
    X, y = make_problem(12, n=2000)
    dtrain = cbudget.Dataset(X, y, feature_costs=[1, 2, 3, 4, 5, 6], tree_cost=0.2)
    b = cbudget.train({"algorithm": "greedy_miser", "objective": "binary:logistic",
                       "cost_tradeoff": 0.25}, dtrain, 10, verbose_eval=False)
    path = tmp_path / "miser.json"
    b.save_model(path)
    doc = json.loads(path.read_text())
    assert doc["algorithm"] == "greedy_miser"
    assert doc["format_version"] == list(cbudget.model_io.FORMAT_VERSION)
    assert doc["greedy_miser"] == {"cost_tradeoff": 0.25, "grow_policy": "depthwise",
                                   "num_leaves": None, "max_depth": 4, "gain_scale": 0.5,
                                   "gradient_order": 1, "learning_rate": 0.1,
                                   "cost_stages": [[0, 10, 0.25]]}
    loaded = cbudget.load_model(path)
    assert loaded.algorithm == "greedy_miser" and loaded.params["cost_tradeoff"] == 0.25
    np.testing.assert_array_equal(loaded.predict(X), b.predict(X))
    np.testing.assert_array_equal(loaded.predict_cost(X), b.predict_cost(X))
    assert loaded.summary == b.summary
    for edit, message in [(lambda d: d.pop("greedy_miser"), "missing field 'greedy_miser'"),
                          (lambda d: d["greedy_miser"].update(cost_tradeoff=float("inf")),
                           "cost_tradeoff")]:
        bad = json.loads(path.read_text())
        edit(bad)
        (tmp_path / "bad.json").write_text(json.dumps(bad))
        with pytest.raises(ValueError, match=message):
            cbudget.load_model(tmp_path / "bad.json")
