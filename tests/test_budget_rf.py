"""BudgetRF (``algorithm="budget_rf"``): GREEDYTREE's behaviour as the paper describes
it, the kernel against the slow reference, and the Forest model (budget loop, voting,
costs, JSON)."""
import json

import numpy as np
import pytest
from reference_budget_rf import (
    MISSING,
    greedy_tree,
    impurity_of,
    predict,
    section_2_4_example,
    threshold_pairs,
)
from reference_predict import brute_cost

import cbudget
from cbudget._core._stumps import grow_greedy_tree, node_impurity


def test_threshold_pairs():
    assert threshold_pairs([3, 2, 0], 0) == 6                 # 3*2 unlike pairs
    assert threshold_pairs([5, 0, 0], 0) == 0
    # [[5-1]_+ [2-1]_+ - 1]_+ = 3, [[2-1][0-1]_+ - 1]_+ = 0, ...
    assert threshold_pairs([5, 2, 0], 1) == 3
    assert threshold_pairs([255, 1, 0, 0], 1) == 0            # one stray example: pure


def test_section_2_4_depth_two_tree_misclassifies_only_the_four_special_examples():
    X, y = section_2_4_example()
    shallow = greedy_tree(X, y, 4, np.ones(10), alpha=1.0)
    assert max(n["depth"] for n in shallow) == 2
    assert {n["feature"] for n in shallow if n["feature"] >= 0} == {0, 1}
    wrong = np.flatnonzero(predict(shallow, X) != y)
    assert wrong.tolist() == [0, 256, 512, 768]                 # 0.39% error
    exact = greedy_tree(X, y, 4, np.ones(10), alpha=0.0)        # Kraft: depth 10
    assert max(n["depth"] for n in exact) == 10
    assert np.all(predict(exact, X) == y)


def test_risk_prefers_the_cheap_feature_of_equal_power_and_pays_when_it_must():
    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, 400)
    informative = y.astype(np.uint8)
    X = np.column_stack([informative, informative]).astype(np.uint8)
    cheap_first = greedy_tree(X, y, 2, np.array([5.0, 1.0]))
    assert cheap_first[0]["feature"] == 1
    assert greedy_tree(X, y, 2, np.array([1.0, 5.0]))[0]["feature"] == 0
    # the cheap feature is constant: no stump on it lowers the impurity
    X = np.column_stack([np.zeros(400), informative]).astype(np.uint8)
    assert greedy_tree(X, y, 2, np.array([1.0, 50.0]))[0]["feature"] == 1


@pytest.mark.parametrize("impurity", ["threshold_pairs", "gini", "entropy"])
@pytest.mark.parametrize("alpha", [0.0, 0.5, 2.0])
def test_kernel_impurity_matches_reference(impurity, alpha):
    rng = np.random.default_rng(4)
    for n_classes in (1, 2, 3, 6):
        for _ in range(40):
            counts = rng.integers(0, 8, n_classes).astype(np.float64)
            if rng.random() < 0.5:              # weighted examples: fractional counts
                counts *= rng.uniform(0.1, 3.0, n_classes)
            counts[rng.random(n_classes) < 0.2] = 0.0
            expected = impurity_of(counts, alpha, impurity)
            assert node_impurity(counts, alpha, impurity) == pytest.approx(
                expected, rel=1e-12, abs=1e-12), counts


# ---------------------------------------------------------------------------------------
# The kernel (exhaustive stumps) against the reference
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("alpha", [0.0, 2.0])
@pytest.mark.parametrize("impurity_path_free", [("threshold_pairs", False),
                                                ("threshold_pairs", True),
                                                ("gini", False), ("entropy", True)])
def test_kernel_matches_reference(seed, alpha, impurity_path_free):
    impurity, path_free = impurity_path_free
    rng = np.random.default_rng(seed)
    n, m, k = 250, 7, 3
    n_value_bins = rng.integers(2, 12, m)
    binned = (rng.random((n, m)) * n_value_bins).astype(np.uint8)
    binned[rng.random((n, m)) < 0.05] = MISSING
    y = ((binned[:, 0] > n_value_bins[0] // 2) + (binned[:, 1] % 2)
         + (rng.random(n) < 0.2)) % k
    group = np.array([-1, 0, 0, -1, 1, 1, -1], dtype=np.int32)
    group_costs = np.array([3.0, 1.5])
    costs = rng.uniform(0.5, 4, m)
    rows = rng.integers(0, n, n).astype(np.int32)           # a bootstrap sample
    # n_value_bins - 1 edges per feature: no threshold above the top value bin
    edges = np.concatenate([np.arange(v - 1, dtype=np.float64) for v in n_value_bins])
    indptr = np.concatenate([[0], np.cumsum(n_value_bins - 1)]).astype(np.int64)
    mask = np.ones(m, dtype=np.uint8)
    nodes, counts = grow_greedy_tree(
        np.asfortranarray(binned), y.astype(np.int32), rows.copy(), k, costs, group,
        group_costs, edges, indptr, mask, alpha=alpha, impurity=impurity,
        path_free=path_free, exhaustive=True, max_depth=6)
    ref = greedy_tree(binned[rows], y[rows], k, costs, alpha=alpha, path_free=path_free,
                      max_depth=6, feature_group=group, group_costs=group_costs,
                      impurity=impurity, n_edges=n_value_bins - 1)
    assert len(nodes) == len(ref) > 1
    for node, r, c in zip(nodes, ref, counts):
        assert (node["feature"], node["left"], node["right"]) == (r["feature"], r["left"],
                                                                 r["right"])
        np.testing.assert_array_equal(c, r["counts"])
        if r["feature"] >= 0:
            assert node["bin_threshold"] == r["bin"]
            np.testing.assert_allclose(node["cost_penalty"], r["cost"], rtol=1e-12)
            np.testing.assert_allclose(node["gain"], r["decrease"], rtol=1e-12)


@pytest.mark.parametrize("seed", [0, 1])
def test_kernel_matches_reference_with_weights_and_split_cost(seed):
    rng = np.random.default_rng(seed)
    n, m, k = 200, 5, 3
    binned = rng.integers(0, 8, (n, m)).astype(np.uint8)
    y = ((binned[:, 0] > 3) + (binned[:, 2] % 2) + (rng.random(n) < 0.15)) % k
    weight = rng.uniform(0.2, 3.0, n)
    weight[rng.random(n) < 0.1] = 0.0
    costs = rng.uniform(0.5, 3, m)
    nodes, counts = _kernel_tree(binned, y, k, costs, sample_weight=weight, split_cost=0.7,
                                 alpha=1.5, path_free=True, exhaustive=True, max_depth=5)
    ref = greedy_tree(binned, y, k, costs, alpha=1.5, path_free=True, max_depth=5,
                      weight=weight, split_cost=0.7)
    assert len(nodes) == len(ref) > 1
    for node, r, c in zip(nodes, ref, counts):
        assert (node["feature"], node["left"], node["right"]) == (r["feature"], r["left"],
                                                                 r["right"])
        np.testing.assert_allclose(c, r["counts"], rtol=1e-12)
        np.testing.assert_allclose(node["sum_hessian"], r["counts"].sum(), rtol=1e-12)
        if r["feature"] >= 0:
            np.testing.assert_allclose(node["cost_penalty"], r["cost"], rtol=1e-12)


# ---------------------------------------------------------------------------------------
# The kernel on its own: the paper's examples, weights, random stumps
# ---------------------------------------------------------------------------------------
def _kernel_tree(binned, y, n_classes, costs, rows=None, **options):
    n, m = binned.shape
    rows = np.arange(n, dtype=np.int32) if rows is None else rows.astype(np.int32)
    edges = np.concatenate([np.arange(256, dtype=np.float64)] * m)
    indptr = (np.arange(m + 1) * 256).astype(np.int64)
    return grow_greedy_tree(np.asfortranarray(binned, dtype=np.uint8), y.astype(np.int32),
                            rows, n_classes, np.asarray(costs, dtype=np.float64),
                            np.full(m, -1, dtype=np.int32), np.zeros(0), edges, indptr,
                            np.ones(m, dtype=np.uint8), **options)


def _kernel_predict(nodes, binned):
    out = np.empty(binned.shape[0], dtype=np.int64)
    for r in range(binned.shape[0]):
        node = 0
        while nodes[node]["left"] != -1:
            go_left = binned[r, nodes[node]["feature"]] <= nodes[node]["bin_threshold"]
            node = nodes[node]["left"] if go_left else nodes[node]["right"]
        out[r] = node
    return out


def test_kernel_section_2_4_example():
    X, y = section_2_4_example()
    nodes, counts = _kernel_tree(X, y, 4, np.ones(10), alpha=1.0, exhaustive=True)
    assert nodes["depth"].max() == 2
    wrong = np.flatnonzero(np.argmax(counts[_kernel_predict(nodes, X)], axis=1) != y)
    assert wrong.tolist() == [0, 256, 512, 768]
    nodes, counts = _kernel_tree(X, y, 4, np.ones(10), alpha=0.0, exhaustive=True)
    assert nodes["depth"].max() == 10
    assert np.all(np.argmax(counts[_kernel_predict(nodes, X)], axis=1) == y)


def test_kernel_weight_two_equals_a_duplicated_row():
    rng = np.random.default_rng(3)
    binned = rng.integers(0, 6, (150, 4)).astype(np.uint8)
    y = (binned[:, 0] + binned[:, 1] * (rng.random(150) < 0.7)) % 3
    weight = rng.integers(0, 3, 150).astype(np.float64)
    weighted, wcounts = _kernel_tree(binned, y, 3, [1, 2, 1, 3], sample_weight=weight,
                                     exhaustive=True, min_samples_split=1)
    repeated = np.repeat(np.arange(150), weight.astype(int))
    plain, counts = _kernel_tree(binned, y, 3, [1, 2, 1, 3], rows=repeated, exhaustive=True,
                                 min_samples_split=1)
    for field in ("feature", "bin_threshold", "left", "right", "gain", "cost_penalty"):
        np.testing.assert_array_equal(weighted[field], plain[field])
    np.testing.assert_array_equal(wcounts, counts)


def test_random_stumps_are_seeded_and_cover_every_threshold_when_many():
    rng = np.random.default_rng(5)
    binned = rng.integers(0, 10, (600, 6)).astype(np.uint8)
    y = ((binned[:, 0] > 4) + 2 * (binned[:, 3] > 6) + (rng.random(600) < 0.1)) % 4
    costs = rng.uniform(1, 3, 6)
    few = {"n_stumps": (2, 2, 2), "stump_node_sizes": (2000, 500)}
    a = _kernel_tree(binned, y, 4, costs, seed=11, **few)[0]
    b = _kernel_tree(binned, y, 4, costs, seed=11, **few)[0]
    c = _kernel_tree(binned, y, 4, costs, seed=12, **few)[0]
    np.testing.assert_array_equal(a, b)
    assert a.shape != c.shape or not np.array_equal(a, c)
    exhaustive = _kernel_tree(binned, y, 4, costs, exhaustive=True)[0]
    assert a.shape != exhaustive.shape or not np.array_equal(a, exhaustive)
    # thousands of draws per feature and node hit every one of the 9 thresholds
    many = _kernel_tree(binned, y, 4, costs, seed=1, n_stumps=(3000, 3000, 3000))[0]
    for field in ("feature", "bin_threshold", "left", "right", "gain"):
        np.testing.assert_array_equal(many[field], exhaustive[field])


def test_stump_counts_follow_the_node_size():
    """Nodes larger than stump_node_sizes[0] draw n_stumps[0] stumps, and so on: with
    many draws only for the large root, the root split is the exhaustive one."""
    rng = np.random.default_rng(8)
    binned = rng.integers(0, 12, (800, 5)).astype(np.uint8)
    y = ((binned[:, 1] > 7) + (binned[:, 4] > 2) + (rng.random(800) < 0.1)) % 3
    exhaustive = _kernel_tree(binned, y, 3, np.ones(5), exhaustive=True)[0]
    root_only = _kernel_tree(binned, y, 3, np.ones(5), seed=4, n_stumps=(4000, 1, 1),
                             stump_node_sizes=(799, 798))[0]
    none_many = _kernel_tree(binned, y, 3, np.ones(5), seed=4, n_stumps=(1, 1, 1),
                             stump_node_sizes=(799, 798))[0]
    assert (root_only[0]["feature"], root_only[0]["bin_threshold"]) == \
        (exhaustive[0]["feature"], exhaustive[0]["bin_threshold"])
    assert root_only[0]["gain"] > none_many[0]["gain"]


def test_kernel_rejects_bad_input():
    binned = np.zeros((10, 2), dtype=np.uint8)
    y = np.zeros(10)
    with pytest.raises(ValueError, match="impurity"):
        _kernel_tree(binned, y, 2, [1, 1], impurity="variance")
    with pytest.raises(ValueError, match="classes"):
        _kernel_tree(binned, np.full(10, 3), 2, [1, 1])
    with pytest.raises(ValueError, match="rows"):
        _kernel_tree(binned, y, 2, [1, 1], rows=np.array([0, 10]))
    with pytest.raises(ValueError, match="sample_weight"):
        _kernel_tree(binned, y, 2, [1, 1], sample_weight=np.ones(3))
    with pytest.raises(ValueError, match="n_stumps"):
        _kernel_tree(binned, y, 2, [1, 1], n_stumps=(4, 0, 2))


# ---------------------------------------------------------------------------------------
# train(algorithm="budget_rf") and the Forest model
# ---------------------------------------------------------------------------------------
FOREST = {"algorithm": "budget_rf", "n_jobs": 1}


def forest_problem(n=900, seed=0, k=3):
    """Classes decided by two cheap features and, for the third of the inputs that
    cheap feature 5 marks, by an expensive one; two noise features; some missing
    values."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 6))
    y = ((X[:, 0] > 0).astype(int) + (X[:, 1] > 0.5)) % k
    hard = X[:, 5] > 0.45
    y[hard] = (X[hard, 4] > 0).astype(int) * (k - 1)
    X[rng.random((n, 6)) < 0.03] = np.nan
    costs = np.array([1.0, 1.0, 2.0, 2.0, 8.0, 1.0])
    return X, y, costs


def forest_data(n=900, seed=0, k=3, **dataset_kwargs):
    X, y, costs = forest_problem(n, seed, k)
    n_train = 2 * n // 3
    dtrain = cbudget.Dataset(X[:n_train], y[:n_train], feature_costs=costs, **dataset_kwargs)
    dvalid = cbudget.Dataset(X[n_train:], y[n_train:], reference=dtrain)
    return dtrain, dvalid, X[n_train:], y[n_train:]


def train_forest(dtrain, n_trees=8, evals=(), **params):
    return cbudget.train({**FOREST, "num_class": 3, **params}, dtrain, n_trees, evals=evals,
                         verbose_eval=False)


def test_forest_learns_and_votes():
    dtrain, _dvalid, X, y = forest_data()
    forest = train_forest(dtrain, 10)
    assert isinstance(forest, cbudget.Forest) and forest.num_trees() == 10
    pred = forest.predict(X)
    assert pred.dtype == np.int64 and np.mean(pred == y) > 0.7     # majority class: 0.45
    # majority vote, brute force: each tree votes for its leaf's majority class
    leaves = forest.predict(X, pred_leaf=True)
    votes = np.zeros((X.shape[0], 3))
    counts = np.zeros((X.shape[0], 3))
    for t, tree_counts in enumerate(forest.class_counts):
        votes[np.arange(X.shape[0]), np.argmax(tree_counts[leaves[:, t]], axis=1)] += 1
        counts += tree_counts[leaves[:, t]]
    np.testing.assert_array_equal(pred, np.argmax(votes, axis=1))
    np.testing.assert_allclose(forest.predict_proba(X), counts / counts.sum(1, keepdims=True),
                               rtol=1e-12)
    # thresholds are the Dataset's bin edges (missing values go right)
    for tree in forest.trees:
        split = tree["left"] != -1
        for m, threshold, default_left in zip(tree["feature"][split], tree["threshold"][split],
                                              tree["default_left"][split]):
            assert threshold in dtrain.bin_edges[m] and not default_left
    # a leaf's value is its majority class
    for tree, tree_counts in zip(forest.trees, forest.class_counts):
        leaf = tree["left"] == -1
        np.testing.assert_array_equal(tree["value"][leaf], np.argmax(tree_counts[leaf], 1))


def test_forest_binary():
    X, y, costs = forest_problem(600, seed=2, k=2)
    dtrain = cbudget.Dataset(X, y, feature_costs=costs)
    forest = cbudget.train({**FOREST}, dtrain, 5, verbose_eval=False)
    assert forest.objective == "binary:logistic" and forest.num_class == 2
    assert forest.predict_proba(X).shape == (600, 2)
    assert np.mean(forest.predict(X) == y) > 0.85


def test_forest_costs_match_brute_force(tmp_path):
    dtrain, _dvalid, X, _y = forest_data(cost_groups=[[2, 3]], group_costs=[1.5], tree_cost=0.25)
    forest = train_forest(dtrain, 6)
    forest.save_model(tmp_path / "f.json")
    doc = json.loads((tmp_path / "f.json").read_text())
    np.testing.assert_allclose(forest.predict_cost(X), brute_cost(doc, X), rtol=1e-12)
    np.testing.assert_allclose(forest.predict_cost(X, iteration_range=(1, 4)),
                               brute_cost(doc, X, 1, 4), rtol=1e-12)
    curve = forest.cost_curve(X)
    np.testing.assert_allclose(curve, [brute_cost(doc, X, 0, t).mean() for t in range(1, 7)],
                               rtol=1e-12)
    report = forest.cost_report(X)
    assert report.mean_cost == pytest.approx(curve[-1])
    assert forest.summary["train_cost"] == pytest.approx(
        forest.predict_cost(dtrain).mean())


def test_same_seed_same_forest_whatever_n_jobs():
    dtrain, *_ = forest_data()
    forests = [train_forest(dtrain, 5, n_jobs=n_jobs, seed=3) for n_jobs in (1, 2, 2)]
    other_seed = train_forest(dtrain, 5, seed=4)
    for forest in forests[1:]:
        for a, b, ca, cb in zip(forests[0].trees, forest.trees, forests[0].class_counts,
                                forest.class_counts):
            np.testing.assert_array_equal(a, b)
            np.testing.assert_array_equal(ca, cb)
    assert not all(a.shape == b.shape and np.array_equal(a, b)
                   for a, b in zip(forests[0].trees, other_seed.trees))


def test_trees_are_prefixes_and_continuation_adds_the_same_trees(tmp_path):
    dtrain, *_ = forest_data()
    full = train_forest(dtrain, 7, n_jobs=2)
    head = train_forest(dtrain, 3)
    for a, b in zip(full.trees, head.trees):
        np.testing.assert_array_equal(a["feature"], b["feature"])
    head.save_model(tmp_path / "head.json")
    continued = cbudget.train({**FOREST, "num_class": 3}, dtrain, 4, verbose_eval=False,
                              xgb_model=tmp_path / "head.json")
    assert continued.num_trees() == 7
    for a, b in zip(full.trees, continued.trees):
        np.testing.assert_array_equal(a["feature"], b["feature"])
        np.testing.assert_array_equal(a["threshold"], b["threshold"])
    with pytest.raises(TypeError, match="Forest"):
        cbudget.train({**FOREST, "num_class": 3}, dtrain, 1, verbose_eval=False,
                      xgb_model=cbudget.train({"objective": "multi:softprob", "num_class": 3},
                                              dtrain, 1, verbose_eval=False))


def test_budget_stops_before_the_tree_that_crosses_it(capsys):
    dtrain, dvalid, X, _y = forest_data()
    unlimited = train_forest(dtrain, 12)
    curve = unlimited.cost_curve(dvalid)
    crossing = 2 + int(np.flatnonzero(np.diff(curve[1:]) > 0)[0])
    budget = float((curve[crossing - 1] + curve[crossing]) / 2)   # tree `crossing` crosses
    forest = cbudget.train({**FOREST, "num_class": 3, "budget": budget}, dtrain, 12,
                           evals=[(dvalid, "valid")], verbose_eval=True)
    assert forest.num_trees() == crossing
    assert forest.predict_cost(dvalid).mean() <= budget < curve[crossing]
    np.testing.assert_array_equal(forest.predict_proba(X),
                                  unlimited.predict_proba(X, iteration_range=(0, crossing)))
    assert "exceeds the budget" in capsys.readouterr().out
    # n_estimators caps the trees when the budget is not reached
    assert train_forest(dtrain, 100, n_estimators=3, budget=1e9,
                        evals=[(dvalid, "valid")]).num_trees() == 3


def test_budget_below_one_tree_gives_an_empty_forest_predicting_the_prior():
    dtrain, dvalid, X, _y = forest_data()
    with pytest.warns(RuntimeWarning, match="no trees"):
        forest = train_forest(dtrain, 5, budget=0.0, evals=[(dvalid, "valid")])
    assert forest.num_trees() == 0
    prior = np.bincount(dtrain.label.astype(int), minlength=3) / dtrain.num_data()
    np.testing.assert_allclose(forest.predict_proba(X), np.tile(prior, (len(X), 1)))
    assert np.all(forest.predict(X) == np.argmax(prior))
    assert np.all(forest.predict_cost(X) == 0)


def test_budget_needs_validation_data():
    dtrain, *_ = forest_data()
    with pytest.raises(ValueError, match="evals"):
        train_forest(dtrain, 3, budget=5.0)


def test_cheap_feature_of_equal_power_is_used_instead_of_the_expensive_one():
    rng = np.random.default_rng(1)
    signal = rng.normal(size=800)
    y = (signal > 0).astype(int)
    X = np.column_stack([signal, signal, rng.normal(size=800)])
    dtrain = cbudget.Dataset(X, y, feature_costs=[10.0, 1.0, 1.0])
    forest = cbudget.train(FOREST, dtrain, 4, verbose_eval=False)
    assert forest.used_features().tolist() == [1]
    # the cheap copy is constant: the expensive feature is bought
    X[:, 1] = 0.0
    dtrain = cbudget.Dataset(X, y, feature_costs=[10.0, 1.0, 1.0])
    forest = cbudget.train(FOREST, dtrain, 4, verbose_eval=False)
    assert 0 in forest.used_features().tolist()


def test_path_free_reuses_features_and_costs_less():
    dtrain, _dvalid, X, _y = forest_data(n=1500)
    charged = train_forest(dtrain, 6)
    free = train_forest(dtrain, 6, path_free=True)
    assert free.predict_cost(X).mean() < charged.predict_cost(X).mean()
    assert free.params["path_free"] and not charged.params["path_free"]


def test_evals_result_scores_the_vote_and_the_probabilities():
    dtrain, dvalid, X, y = forest_data()
    result = {}
    forest = cbudget.train({**FOREST, "num_class": 3, "eval_metric": ["merror", "mlogloss"]},
                           dtrain, 5, evals=[(dvalid, "valid")], evals_result=result,
                           verbose_eval=False)
    for k in range(1, 6):
        assert result["valid"]["merror"][k - 1] == pytest.approx(
            np.mean(forest.predict(X, iteration_range=(0, k)) != y))
        proba = np.clip(forest.predict_proba(X, iteration_range=(0, k)), 1e-15, 1)
        assert result["valid"]["mlogloss"][k - 1] == pytest.approx(
            -np.mean(np.log(proba[np.arange(len(y)), y])))
    # default metric of a forest: the vote's error
    result = {}
    cbudget.train({**FOREST, "num_class": 3}, dtrain, 2, evals=[(dvalid, "valid")],
                  evals_result=result, verbose_eval=False)
    assert list(result["valid"]) == ["merror"]


def test_early_stopping_and_slicing():
    dtrain, dvalid, X, _y = forest_data()
    forest = cbudget.train({**FOREST, "num_class": 3}, dtrain, 40, evals=[(dvalid, "valid")],
                           early_stopping_rounds=3, verbose_eval=False)
    assert forest.best_iteration is not None and forest.num_trees() < 40
    head = forest[:2]
    assert head.num_trees() == 2 and len(head.class_counts) == 2
    np.testing.assert_array_equal(head.predict_proba(X),
                                  forest.predict_proba(X, iteration_range=(0, 2)))
    assert forest.feature_importance("split", iteration_range=(0, 0)).sum() == sum(
        int((t["left"] != -1).sum()) for t in forest.trees)
    # by default, everything uses the trees up to the best one (as LightGBM does)
    best = forest[: forest.best_iteration + 1]
    assert forest.best_iteration + 1 < forest.num_trees()
    np.testing.assert_array_equal(forest.predict_proba(X), best.predict_proba(X))
    np.testing.assert_array_equal(forest.predict(X), best.predict(X))
    np.testing.assert_array_equal(forest.predict_cost(X), best.predict_cost(X))
    np.testing.assert_array_equal(forest.acquisitions(X), best.acquisitions(X))
    np.testing.assert_array_equal(forest.used_features(), best.used_features())
    np.testing.assert_array_equal(forest.feature_importance(), best.feature_importance())
    assert forest.cost_report(X).mean_cost == best.cost_report(X).mean_cost
    assert forest.cost_curve(X).size == forest.num_trees()   # staged: every tree


def test_forest_json_round_trip(tmp_path):
    dtrain, dvalid, X, _y = forest_data(cost_groups=[[0, 5]], group_costs=[2.0])
    forest = train_forest(dtrain, 5, alpha=1.5, path_free=True, budget=100.0,
                          evals=[(dvalid, "valid")])
    path = tmp_path / "forest.json"
    forest.save_model(path)
    loaded = cbudget.load_model(path)
    assert isinstance(loaded, cbudget.Forest) and loaded.num_trees() == 5
    np.testing.assert_array_equal(loaded.predict(X), forest.predict(X))
    np.testing.assert_array_equal(loaded.predict_proba(X), forest.predict_proba(X))
    np.testing.assert_array_equal(loaded.predict_cost(X), forest.predict_cost(X))
    for a, b in zip(loaded.trees, forest.trees):
        np.testing.assert_array_equal(a, b)
    doc = json.loads(path.read_text())
    assert doc["model_type"] == "forest" and doc["algorithm"] == "budget_rf"
    assert doc["budget_rf"]["alpha"] == 1.5 and doc["budget_rf"]["path_free"] is True
    assert doc["budget_rf"]["budget"] == 100.0
    assert len(doc["trees"][0]["class_counts"]) == 3 * doc["trees"][0]["num_nodes"]
    assert sum(doc["base_score"]) == pytest.approx(1.0)
    assert loaded.params["alpha"] == 1.5 and loaded.params["impurity"] == "threshold_pairs"


@pytest.mark.parametrize("corrupt, match", [
    (lambda d: d["trees"][0].update(class_counts=d["trees"][0]["class_counts"][:-1]),
     "class_counts"),
    (lambda d: d["trees"][0]["class_counts"].__setitem__(0, -1.0), "class_counts"),
    (lambda d: d.update(num_class=1), "num_class"),
    (lambda d: d.update(base_score=[0.5, 0.5]), "base_score"),
    (lambda d: d["budget_rf"].update(alpha=-1.0), "alpha"),
    (lambda d: d["budget_rf"].update(impurity="variance"), "impurity"),
    (lambda d: d.pop("budget_rf"), "budget_rf"),
    (lambda d: d.update(algorithm="gbdt"), "budget_rf"),
    (lambda d: d.update(iteration_indptr=[0, 2, 3, 4, 5]), "iteration_indptr"),
])
def test_corrupt_forest_files_are_rejected(tmp_path, corrupt, match):
    dtrain, *_ = forest_data()
    forest = train_forest(dtrain, 4)
    doc = forest.to_dict()
    corrupt(doc)
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(ValueError, match=match):
        cbudget.load_model(path)


@pytest.mark.parametrize("params, error, match", [
    ({"learning_rate": 0.3}, ValueError, "learning_rate"),
    ({"cost_tradeoff": 1.0}, ValueError, "cost_tradeoff"),
    ({"alpha": -1.0}, ValueError, "alpha"),
    ({"impurity": "mse"}, ValueError, "impurity"),
    ({"path_free": 1}, TypeError, "path_free"),
    ({"n_stumps": (80, 40)}, ValueError, "n_stumps"),
    ({"n_stumps": "some"}, ValueError, "n_stumps"),
    ({"stump_node_sizes": (2000, 0)}, ValueError, "stump_node_sizes"),
    ({"budget": -2.0}, ValueError, "budget"),
    ({"objective": "reg:squarederror"}, ValueError, "classifier"),
])
def test_budget_rf_parameter_errors(params, error, match):
    dtrain, *_ = forest_data()
    with pytest.raises(error, match=match):
        train_forest(dtrain, 1, **params)


def test_budget_rf_only_parameters_are_refused_elsewhere():
    dtrain, *_ = forest_data()
    with pytest.raises(ValueError, match="budget_rf"):
        cbudget.train({"alpha": 1.0}, dtrain, 1, verbose_eval=False)


def test_budget_rf_needs_class_labels():
    X, y, _costs = forest_problem(300)
    with pytest.raises(ValueError, match="integer class labels"):
        cbudget.train(FOREST, cbudget.Dataset(X, y * 0.3), 1, verbose_eval=False)
    with pytest.raises(ValueError, match="num_class"):
        cbudget.train(FOREST, cbudget.Dataset(X, y), 1, verbose_eval=False)


def test_exhaustive_stumps_and_depth_limit():
    dtrain, _dvalid, _X, _y = forest_data()
    forest = train_forest(dtrain, 3, n_stumps="all", max_depth=3)
    assert max(int(t["depth"].max()) for t in forest.trees) <= 3
    assert forest.params["n_stumps"] == "all"
