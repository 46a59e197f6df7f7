"""BudgetRF (``algorithm="budget_rf"``): GREEDYTREE's behaviour as the paper describes
it, pinned on the slow reference (the kernel tests against it come with the kernel)."""
import numpy as np
import pytest

from cbudget._core._stumps import grow_greedy_tree
from reference_budget_rf import (MISSING, greedy_tree, predict, section_2_4_example,
                                 threshold_pairs)


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
    edges = np.concatenate([np.arange(256, dtype=np.float64)] * m)
    indptr = (np.arange(m + 1) * 256).astype(np.int64)
    mask = np.ones(m, dtype=np.uint8)
    nodes, counts = grow_greedy_tree(
        np.asfortranarray(binned), y.astype(np.int32), rows.copy(), k, costs, group,
        group_costs, edges, indptr, mask, alpha=alpha, impurity=impurity,
        path_free=path_free, exhaustive=True, max_depth=6)
    ref = greedy_tree(binned[rows], y[rows], k, costs, alpha=alpha, path_free=path_free,
                      max_depth=6, feature_group=group, group_costs=group_costs,
                      impurity=impurity)
    assert len(nodes) == len(ref) > 1
    for node, r, c in zip(nodes, ref, counts):
        assert (node["feature"], node["left"], node["right"]) == (r["feature"], r["left"],
                                                                 r["right"])
        np.testing.assert_array_equal(c, r["counts"])
        if r["feature"] >= 0:
            assert node["bin_threshold"] == r["bin"]
            np.testing.assert_allclose(node["cost_penalty"], r["cost"], rtol=1e-12)
            np.testing.assert_allclose(node["gain"], r["decrease"], rtol=1e-12)
