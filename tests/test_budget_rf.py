"""BudgetRF (``algorithm="budget_rf"``): GREEDYTREE's behaviour as the paper describes
it, pinned on the slow reference (the kernel tests against it come with the kernel)."""
import numpy as np

from reference_budget_rf import greedy_tree, predict, section_2_4_example, threshold_pairs


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
