"""CEGB (``algorithm="cegb"``): the grower against a slow pure-NumPy reference, the
behaviour the paper describes, continuation, budgets and the model format."""
import json

import numpy as np
import pytest
from reference_growers import (
    MISSING,
    assert_tracked_costs_equal_routing,
    assert_tree_matches_reference,
    expand,
    random_binned_problem,
    ref_grow,
)

import cbudget
from cbudget._core._acquisition import AcquisitionState
from cbudget._core._grower import TreeGrower
from cbudget._core._histogram import SparseBins

SEEDS = [0, 1, 2]


def random_costs(rng, n_features, n_groups, coupled):
    group = (rng.integers(-1, n_groups, n_features) if n_groups
             else np.full(n_features, -1)).astype(np.int32)
    fc = rng.uniform(0, 2, n_features) * (rng.random(n_features) < 0.8)
    return {
        "feature_costs": fc,
        "feature_group": group,
        "group_costs": rng.uniform(0.5, 3, n_groups),
        "coupled_costs": (rng.uniform(20, 200, n_features) * (rng.random(n_features) < 0.5)
                          if coupled else np.zeros(n_features)),
        "split_cost": 0.05,
    }


# every combination of trade-off, costs and growth once; the data seeds rotate over them,
# so that each seed meets every value of every parameter (a full grid of the three seeds
# tripled the time of the file's slowest test for more random draws of the same cases)
GROWER_CASES = [(SEEDS[(i + j + k) % len(SEEDS)], tradeoff, n_groups, coupled, best_first,
                 num_leaves, max_depth, None)
                for i, tradeoff in enumerate((0.0, 0.002, 0.02))
                for j, (n_groups, coupled) in enumerate(((0, False), (3, False), (2, True)))
                for k, (best_first, num_leaves, max_depth) in enumerate(
                    ((True, 12, -1), (True, -1, -1), (False, -1, 3)))]
# the row-wise histogram layout: every feature (share 0), or the mostly-constant ones
GROWER_CASES += [(SEEDS[(i + j + k) % len(SEEDS)], tradeoff, n_groups, False, True, 12, -1,
                  share)
                 for i, tradeoff in enumerate((0.0, 0.02)) for j, n_groups in enumerate((0, 3))
                 for k, share in enumerate((0.0, 0.5))]


@pytest.mark.parametrize("seed,tradeoff,n_groups,coupled,best_first,num_leaves,max_depth,"
                         "sparse_share", GROWER_CASES)
def test_grower_matches_reference(seed, tradeoff, n_groups, coupled, best_first, num_leaves,
                                  max_depth, sparse_share):
    rng = np.random.default_rng(seed)
    n, n_features = 300, 11
    binned, n_value_bins, edges, indptr, mask = random_binned_problem(rng, n, n_features)
    layout = None
    if sparse_share is not None:
        mostly_zero = np.arange(n_features) % 2 == 1
        binned[:, mostly_zero] *= rng.random((n, mostly_zero.sum())) < 0.3
        layout = SparseBins(binned, n_value_bins, MISSING, min_share=sparse_share,
                            n_groups=3, min_elided_columns=0)
        row_wise = np.flatnonzero(layout.is_sparse)
        expected = np.arange(n_features) if sparse_share == 0 else \
            np.flatnonzero(mostly_zero | (n_value_bins == 1))
        np.testing.assert_array_equal(row_wise, expected)
    costs = random_costs(rng, n_features, n_groups, coupled)
    grower = TreeGrower(binned, edges, indptr, n_value_bins, MISSING, 0.1, 1.0, 1e-3, 0.0, 5,
                        num_leaves, max_depth, best_first, 2, layout)
    state = AcquisitionState(n, costs["feature_group"], n_groups)
    grower.set_cost_penalty(state, tradeoff, costs["feature_costs"], costs["feature_group"],
                            costs["group_costs"], costs["coupled_costs"],
                            np.zeros(n_groups), costs["split_cost"])
    ref_state = {"acquired": np.zeros((n, n_features), bool),
                 "touched": np.zeros((n, n_groups), bool),
                 "used": np.zeros(n_features, bool)}
    # several trees on one state: acquisitions persist across trees
    for t in range(4):
        signal = (binned[:, t % 3] < n_value_bins[t % 3] // 2) - 0.5
        g = rng.standard_normal(n) + 2 * signal
        h = rng.uniform(0.5, 1.5, n)
        rows = np.sort(rng.choice(n, n - 40 * (t % 2), replace=False)).astype(np.int32)
        ref = ref_grow(binned, n_value_bins, g, h, rows.copy(), mask, ref_state, costs,
                       tradeoff, num_leaves=num_leaves, max_depth=max_depth,
                       best_first=best_first)
        tree = grower.grow(g, h, rows, mask)
        assert_tree_matches_reference(tree, ref, g, h, learning_rate=0.1, reg_lambda=1.0)
        np.testing.assert_array_equal(expand(state.acquired_bits, n_features),
                                      ref_state["acquired"])
        np.testing.assert_array_equal(expand(state.groups_touched_bits, n_groups),
                                      ref_state["touched"])
        np.testing.assert_array_equal(state.acquired_counts, ref_state["acquired"].sum(0))
        np.testing.assert_array_equal(state.touched_counts, ref_state["touched"].sum(0))
        np.testing.assert_array_equal(state.used_mask.astype(bool), ref_state["used"])


def test_coupled_cost_drop_reopens_cached_leaves():
    """Feature 1 is only worth using once its large coupled cost is paid: the first
    split on it (in one leaf) must make it available in the other open leaves, whose
    cached best splits were computed while it was still unused (LightGBM #3679)."""
    rng = np.random.default_rng(5)
    n = 2000
    x0 = rng.integers(0, 2, n)                    # cheap, moderately useful
    x1 = rng.integers(0, 4, n)                    # coupled cost, very useful everywhere
    binned = np.asfortranarray(np.column_stack([x0, x1]).astype(np.uint8))
    g = (-3.0 * (2 * x0 - 1) - 3.0 * (x1 >= 2) * (x0 == 1) - 1.5 * (x1 >= 2) * (x0 == 0)
         + 0.1 * rng.standard_normal(n))
    h = np.ones(n)
    n_value_bins = np.array([2, 4], dtype=np.uint32)
    edges = np.arange(6, dtype=np.float64)
    indptr = np.array([0, 2, 6], dtype=np.int64)
    costs = {"feature_costs": np.zeros(2), "feature_group": np.full(2, -1, np.int32),
             "group_costs": np.zeros(0), "coupled_costs": np.array([0.0, 900.0]),
             "split_cost": 0.0}
    mask = np.ones(2, dtype=np.uint8)
    for num_leaves in (4, 8):
        grower = TreeGrower(binned, edges, indptr, n_value_bins, MISSING, 0.1, 1.0, 1e-3, 0.0,
                            5, num_leaves, -1, True, 1)
        state = AcquisitionState(n, costs["feature_group"], 0)
        grower.set_cost_penalty(state, 1.0, costs["feature_costs"], costs["feature_group"],
                                costs["group_costs"], costs["coupled_costs"], np.zeros(0),
                                0.0)
        ref_state = {"acquired": np.zeros((n, 2), bool), "touched": np.zeros((n, 0), bool),
                     "used": np.zeros(2, bool)}
        tree = grower.grow(g, h, np.arange(n, dtype=np.int32), mask)
        ref = ref_grow(binned, n_value_bins, g, h, np.arange(n), mask, ref_state, costs, 1.0,
                       num_leaves=num_leaves)
        assert [r["feature"] for r in ref] == tree["feature"].tolist()
        # root on feature 0; then the right child pays the coupled cost of feature 1,
        # after which the left child, whose cached split could not pay it (gain < 900),
        # splits on feature 1 for free
        assert tree["feature"][:3].tolist() == [0, 1, 1]
        assert tree["cost_penalty"][2] == 900.0 and tree["gain"][2] > 900
        assert tree["cost_penalty"][1] == 0.0 and 0 < tree["gain"][1] < 900


# ---------------------------------------------------------------------------------------
# Training
# ---------------------------------------------------------------------------------------
STRUCTURE = ["feature", "threshold", "bin_threshold", "default_left", "left", "right"]


def assert_same_trees(b1, b2, exact_values=True):
    assert b1.iteration_indptr == b2.iteration_indptr
    for t1, t2 in zip(b1.trees, b2.trees):
        for field in STRUCTURE:
            np.testing.assert_array_equal(t1[field], t2[field])
        if exact_values:
            np.testing.assert_array_equal(t1["value"], t2["value"])
        else:
            np.testing.assert_allclose(t1["value"], t2["value"], rtol=1e-9, atol=1e-12)


def make_problem(seed=0, n=3000, n_classes=2):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, 8))
    X[rng.random(X.shape) < 0.03] = np.nan
    score = X[:, 0] - 0.8 * np.nan_to_num(X[:, 1]) + 0.5 * np.sin(3 * np.nan_to_num(X[:, 2]))
    if n_classes == 2:
        y = (score + 0.3 * rng.standard_normal(n) > 0).astype(float)
    else:
        y = np.digitize(score, np.quantile(score, np.linspace(0, 1, n_classes + 1)[1:-1]))
    costs = rng.uniform(1, 10, 8)
    return X, y, costs


@pytest.mark.parametrize("extra", [
    {}, {"subsample": 0.6}, {"colsample_bytree": 0.5}, {"grow_policy": "depthwise"},
    {"objective": "multi:softprob", "num_class": 3}, {"objective": "reg:squarederror"},
])
def test_zero_tradeoff_is_gbdt(extra):
    """cost_tradeoff = 0 runs the whole CEGB machinery (counts, penalties, bitsets) and
    must give the very same trees as plain boosting."""
    n_classes = extra.get("num_class", 2)
    X, y, costs = make_problem(1, n_classes=n_classes)
    dtrain = cbudget.Dataset(X, y, feature_costs=costs, coupled_costs=costs * 100,
                             split_cost=0.5)
    params = {"objective": "binary:logistic", "verbosity": 0, "num_leaves": 15, **extra}
    gbdt = cbudget.train(params, dtrain, 15, verbose_eval=False)
    cegb = cbudget.train({**params, "algorithm": "cegb", "cost_tradeoff": 0.0}, dtrain, 15,
                         verbose_eval=False)
    assert_same_trees(gbdt, cegb)
    assert np.all(np.concatenate([t["cost_penalty"] for t in cegb.trees]) == 0)


def figure1_data(seed, n):
    """Cheap features 0-3 decide most inputs; inside a small hard region
    (|x0| < 0.15, about 12% of inputs) only the expensive feature 4 tells the class."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, 5))
    y = ((X[:, 0] > 0) ^ (X[:, 1] > 0.5)).astype(float)
    hard = np.abs(X[:, 0]) < 0.15
    y[hard] = (X[hard, 4] > 0).astype(float)
    return X, y, hard


def test_figure1_expensive_feature_only_in_the_hard_region():
    """The paper's Fig. 1 situation: CEGB learns deep branches that compute the
    expensive feature only for the hard inputs; plain boosting computes it for all."""
    costs = [1, 1, 1, 1, 50]
    X, y, _ = figure1_data(0, 20000)
    Xt, yt, hard = figure1_data(1, 20000)
    dtrain = cbudget.Dataset(X, y, feature_costs=costs)
    params = {"objective": "binary:logistic", "verbosity": 0, "n_jobs": 1}
    gbdt = cbudget.train(params, dtrain, 100, verbose_eval=False)
    cegb = cbudget.train({**params, "algorithm": "cegb", "cost_tradeoff": 0.001}, dtrain, 100,
                         verbose_eval=False)
    acc_gbdt = np.mean((gbdt.predict(Xt) > 0.5) == yt)
    acc_cegb = np.mean((cegb.predict(Xt) > 0.5) == yt)
    assert acc_gbdt > 0.99
    assert acc_cegb >= acc_gbdt - 0.002                 # equal accuracy
    cost_gbdt, cost_cegb = gbdt.predict_cost(Xt), cegb.predict_cost(Xt)
    assert cost_gbdt.mean() > 50                        # every input pays for feature 4
    assert cost_cegb.mean() < cost_gbdt.mean() / 4      # far cheaper
    # the expensive feature is acquired for the hard inputs, hardly for the others
    rate = cegb.cost_report(Xt).acquisition_rate[4]
    assert hard.mean() <= rate < 1.5 * hard.mean()
    assert cost_cegb[hard].mean() > 45 and cost_cegb[~hard].mean() < 5
    # deep branches: deeper than a balanced tree of 31 leaves (depth 5)
    assert max(int(t["depth"].max()) for t in cegb.trees) > 8


def test_larger_tradeoff_is_cheaper():
    X, y, costs = make_problem(2, n=4000)
    dtrain = cbudget.Dataset(X, y, feature_costs=costs)
    mean_costs = []
    for tradeoff in [0.0, 0.001, 0.01, 0.1]:
        b = cbudget.train({"objective": "binary:logistic", "algorithm": "cegb",
                           "cost_tradeoff": tradeoff}, dtrain, 30, verbose_eval=False)
        mean_costs.append(b.predict_cost(X).mean())
    assert mean_costs == sorted(mean_costs, reverse=True)
    assert mean_costs[-1] < mean_costs[0] / 2


def test_groups_and_coupled_costs_steer_the_model():
    X, y, _ = make_problem(3, n=4000)
    # features 0 and 3 share an expensive group; feature 1 has a coupled cost only
    dtrain = cbudget.Dataset(X, y, feature_costs=np.zeros(8), cost_groups=[[0, 3]],
                             group_costs=[40.0], coupled_costs={1: 1e6})
    b = cbudget.train({"objective": "binary:logistic", "algorithm": "cegb",
                       "cost_tradeoff": 1.0}, dtrain, 20, verbose_eval=False)
    used = set(b.used_features().tolist())
    assert 1 not in used                                # a coupled cost of 1e6 never pays
    plain = cbudget.train({"objective": "binary:logistic"}, dtrain, 20, verbose_eval=False)
    assert {0, 1} <= set(plain.used_features().tolist())


def test_out_of_bag_inputs_are_charged_and_continuation_repeats_training(tmp_path):
    """Training a+b rounds at once equals a rounds, saving, and continuing b rounds:
    continuation restores the acquisition state by routing all training inputs through
    the saved trees, so the uninterrupted run must have charged the inputs left out of
    each subsampled round exactly so (LightGBM only updates in-bag inputs)."""
    X, y, costs = make_problem(4, n=3000)
    dtrain = cbudget.Dataset(X, y, feature_costs=costs, split_cost=0.01)
    params = {"objective": "binary:logistic", "algorithm": "cegb", "cost_tradeoff": 0.003,
              "subsample": 0.5, "colsample_bytree": 0.8, "seed": 7}
    full = cbudget.train(params, dtrain, 16, verbose_eval=False)
    first = cbudget.train(params, dtrain, 8, verbose_eval=False)
    path = tmp_path / "first.json"
    first.save_model(path)
    resumed = cbudget.train(params, dtrain, 8, xgb_model=str(path), verbose_eval=False)
    assert resumed.num_boosted_rounds() == 16
    assert_same_trees(full, resumed, exact_values=False)
    np.testing.assert_allclose(resumed.predict(X), full.predict(X), rtol=1e-9)
    # a penalty that ignored the out-of-bag acquisitions would have over-charged later
    # splits: check that the continued run is not trivially identical to a fresh one
    fresh = cbudget.train(params, dtrain, 8, verbose_eval=False)
    assert any(not np.array_equal(a["feature"], b["feature"])
               for a, b in zip(fresh.trees, resumed.trees[8:]))


def test_acquire_along_paths_matches_prediction_routing():
    X, y, costs = make_problem(5, n=1000)
    dtrain = cbudget.Dataset(X, y, feature_costs=costs)
    b = cbudget.train({"objective": "binary:logistic", "num_leaves": 8}, dtrain, 5,
                      verbose_eval=False)
    state = AcquisitionState(1000, dtrain.cost_model.feature_group, 0)
    rows = np.arange(0, 1000, 3, dtype=np.int32)
    for tree in b.trees:
        state.acquire_along_paths(dtrain.binned, tree, dtrain.missing_bin, rows)
    _, bitsets = b._costs(X[rows])
    np.testing.assert_array_equal(state.acquired_bits[rows], bitsets[0])
    untouched = np.setdiff1d(np.arange(1000), rows)
    assert not state.acquired_bits[untouched].any()
    np.testing.assert_array_equal(state.acquired_counts,
                                  expand(bitsets[0], 8).sum(axis=0))


def test_continuation_of_gbdt_and_errors(tmp_path):
    X, y, costs = make_problem(6, n=2000)
    dtrain = cbudget.Dataset(X, y, feature_costs=costs)
    params = {"objective": "binary:logistic"}
    full = cbudget.train(params, dtrain, 10, verbose_eval=False)
    half = cbudget.train(params, dtrain, 5, verbose_eval=False)
    resumed = cbudget.train(params, dtrain, 5, xgb_model=half, verbose_eval=False)
    assert_same_trees(full, resumed, exact_values=False)
    assert half.num_boosted_rounds() == 5             # the given model is not modified
    with pytest.raises(ValueError, match="objective|trained for"):
        cbudget.train({"objective": "reg:squarederror"}, dtrain, 2, xgb_model=half)
    with pytest.raises(ValueError, match="costs differ"):
        cbudget.train(params, cbudget.Dataset(X, y), 2, xgb_model=half)
    with pytest.raises(ValueError, match="features differ"):
        cbudget.train(params, cbudget.Dataset(X[:, :7], y, feature_costs=costs[:7]), 2,
                      xgb_model=half)
    with pytest.raises(TypeError, match="xgb_model"):
        cbudget.train(params, dtrain, 2, xgb_model=42)
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(ValueError, match="not a valid JSON"):
        cbudget.train(params, dtrain, 2, xgb_model=bad)


def test_continued_training_keeps_eval_scores():
    X, y, costs = make_problem(7, n=2000)
    dtrain = cbudget.Dataset(X[:1500], y[:1500], feature_costs=costs)
    dvalid = cbudget.Dataset(X[1500:], y[1500:], reference=dtrain)
    params = {"objective": "binary:logistic", "algorithm": "cegb", "cost_tradeoff": 0.01}
    log_full, log_resumed = {}, {}
    cbudget.train(params, dtrain, 10, evals=[(dvalid, "valid")], evals_result=log_full,
                  verbose_eval=False)
    half = cbudget.train(params, dtrain, 5, verbose_eval=False)
    cbudget.train(params, dtrain, 5, evals=[(dvalid, "valid")], evals_result=log_resumed,
                  xgb_model=half, verbose_eval=False)
    np.testing.assert_allclose(log_resumed["valid"]["logloss"],
                               log_full["valid"]["logloss"][5:], rtol=1e-9)


# ---------------------------------------------------------------------------------------
# Budgets
# ---------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def budget_problem():
    X, y, costs = make_problem(8, n=4000, n_classes=3)
    # the split cost makes the cost grow with every round
    dtrain = cbudget.Dataset(X[:3000], y[:3000], feature_costs=costs, split_cost=0.05)
    dvalid = cbudget.Dataset(X[3000:], y[3000:], reference=dtrain)
    params = {"objective": "multi:softprob", "num_class": 3, "algorithm": "cegb",
              "cost_tradeoff": 0.002, "num_leaves": 7}
    return dtrain, dvalid, params


def test_best_iteration_within_budget_matches_brute_force(budget_problem):
    dtrain, dvalid, params = budget_problem
    b = cbudget.train(params, dtrain, 25, verbose_eval=False)
    curve = b.cost_curve(dvalid)
    budget = float(curve[12] + curve[13]) / 2 if curve[13] > curve[12] else float(curve[12])
    choice = b.best_iteration_within_budget(dvalid, budget)
    assert isinstance(choice, cbudget.BudgetChoice)
    expected = None
    for r in range(b.num_boosted_rounds()):
        cost = b.predict_cost(dvalid, iteration_range=(0, r + 1)).mean()
        if cost > budget:
            continue
        p = b.predict(dvalid, iteration_range=(0, r + 1))
        loss = -np.mean(np.log(np.clip(p[np.arange(p.shape[0]), dvalid.label.astype(int)],
                                       1e-15, None)))
        if expected is None or loss < expected[1]:
            expected = (r, loss, cost)
    assert choice.iteration == expected[0]
    assert choice.cost <= budget
    np.testing.assert_allclose(choice.score, expected[1], rtol=1e-9)
    np.testing.assert_allclose(choice.cost, expected[2], rtol=1e-12)
    choice_err = b.best_iteration_within_budget(dvalid, budget, metric="merror")
    assert choice_err.metric == "merror" and choice_err.iteration <= expected[0] + 100
    with pytest.raises(ValueError, match="no iteration is within budget"):
        b.best_iteration_within_budget(dvalid, curve[0] / 2)
    with pytest.raises(TypeError):
        b.best_iteration_within_budget(dvalid.data, budget)


def test_budget_stopping_callback(budget_problem, capsys):
    dtrain, dvalid, params = budget_problem
    unlimited = cbudget.train(params, dtrain, 25, verbose_eval=False)
    curve = unlimited.cost_curve(dvalid)
    assert curve[-1] > curve[3]
    budget = float(curve[3] + curve[-1]) / 2
    crossing = int(np.argmax(curve > budget))
    callback = cbudget.BudgetStopping(budget, dvalid)
    b = cbudget.train(params, dtrain, 25, callbacks=[callback], verbose_eval=False)
    assert callback.stopped_at == crossing
    np.testing.assert_allclose(callback.cost_history, curve[:crossing + 1], rtol=1e-12)
    assert b.num_boosted_rounds() == crossing              # the crossing round is dropped
    assert b.predict_cost(dvalid).mean() <= budget
    assert_same_trees(b, unlimited[:crossing])
    assert "exceeds the budget" in capsys.readouterr().out
    kept = cbudget.train(params, dtrain, 25, verbose_eval=False,
                         callbacks=[cbudget.BudgetStopping(budget, dvalid,
                                                           keep_within_budget=False,
                                                           verbose=False)])
    assert kept.num_boosted_rounds() == crossing + 1
    with pytest.raises(ValueError):
        cbudget.BudgetStopping(-1.0, dvalid)


# ---------------------------------------------------------------------------------------
# Parameters and the model format
# ---------------------------------------------------------------------------------------
def test_parameters():
    from cbudget.algorithms import resolve_params
    assert resolve_params({"algorithm": "cegb"})["cost_tradeoff"] == 1.0
    assert resolve_params({"algorithm": "cegb", "cegb_tradeoff": 0.5})["cost_tradeoff"] == 0.5
    with pytest.raises(ValueError, match="applies to algorithms 'cegb', 'greedy_miser'"):
        resolve_params({"cost_tradeoff": 1.0})
    for bad in (-1.0, float("nan"), float("inf")):
        with pytest.raises(ValueError, match="cost_tradeoff"):
            resolve_params({"algorithm": "cegb", "cost_tradeoff": bad})
    with pytest.raises(TypeError, match="cost_tradeoff"):
        resolve_params({"algorithm": "cegb", "cost_tradeoff": "big"})


def test_json_records_cegb_parameters_and_penalties(tmp_path):
    X, y, costs = make_problem(9, n=2000)
    dtrain = cbudget.Dataset(X, y, feature_costs=costs, split_cost=0.1)
    b = cbudget.train({"objective": "binary:logistic", "algorithm": "cegb",
                       "cost_tradeoff": 0.004}, dtrain, 8, verbose_eval=False)
    path = tmp_path / "m.json"
    b.save_model(path)
    doc = json.loads(path.read_text())
    assert doc["algorithm"] == "cegb"
    assert doc["format_version"] == list(cbudget.model_io.FORMAT_VERSION)
    assert doc["cegb"] == {"cost_tradeoff": 0.004, "grow_policy": "lossguide",
                           "num_leaves": 31, "max_depth": None, "gain_scale": 0.5,
                           "gradient_order": 2, "learning_rate": 0.1,
                           "cost_stages": [[0, 8, 0.004]]}
    tree = doc["trees"][0]
    split = [i for i, left in enumerate(tree["left_children"]) if left != -1]
    penalties = np.array(tree["cost_penalty"])[split]
    assert np.all(penalties > 0)                       # split cost at least
    assert np.all(np.array(tree["gain"])[split] > penalties)   # raw gain beats the penalty
    loaded = cbudget.load_model(path)
    assert loaded.algorithm == "cegb" and loaded.params["cost_tradeoff"] == 0.004
    np.testing.assert_array_equal(loaded.predict(X), b.predict(X))
    np.testing.assert_array_equal(loaded.predict_cost(X), b.predict_cost(X))
    for edit, message in [(lambda d: d.pop("cegb"), "missing field 'cegb'"),
                          (lambda d: d["cegb"].update(cost_tradeoff=-1), "cost_tradeoff"),
                          (lambda d: d["cegb"].update(cost_tradeoff="x"), "wrong type"),
                          (lambda d: d.update(algorithm="boosting"), "unknown algorithm")]:
        bad = json.loads(path.read_text())
        edit(bad)
        bad_path = tmp_path / "bad.json"
        bad_path.write_text(json.dumps(bad))
        with pytest.raises(ValueError, match=message):
            cbudget.load_model(bad_path)


@pytest.mark.parametrize("subsample", [1.0, 0.6])
@pytest.mark.parametrize("algorithm,tradeoff", [("cegb", 0.002), ("greedy_miser", 0.5)])
def test_training_costs_tracked_during_training_match_the_routing_pass(subsample, algorithm,
                                                                        tradeoff):
    """The cost-aware learners' summary and per-node ``new_acquisitions`` come from the
    acquisition state; they must equal what routing the training data through the trees
    gives."""
    X, y, costs = make_problem(10, n=3000, n_classes=3)
    dtrain = cbudget.Dataset(X, y, feature_costs=costs, cost_groups=[[0, 5], [2, 3]],
                             group_costs=[4.0, 2.5], split_cost=0.02, tree_cost=0.1)
    b = cbudget.train({"objective": "multi:softprob", "num_class": 3, "algorithm": algorithm,
                       "cost_tradeoff": tradeoff, "subsample": subsample}, dtrain, 12,
                      verbose_eval=False)
    assert_tracked_costs_equal_routing(b, dtrain)
    assert np.any(np.concatenate([t["new_acquisitions"] for t in b.trees]) > 0)
    assert b.summary["train_cost"] == pytest.approx(b.predict_cost(X).mean(), rel=1e-12)
