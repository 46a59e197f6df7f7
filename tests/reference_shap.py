"""Brute-force reference for TreeSHAP (``pred_contrib``): the Shapley values of each
input's features by enumerating feature subsets, with the path-dependent value of a
subset ``S`` -- the tree's expectation given ``x_S``: at a split on a feature of ``S``
the input's branch, at any other split both children weighted by their share of the
split's cover (1/2 each when both have none). Pure Python on tree documents
(``model.to_dict()["trees"]``); for tiny trees only (2^features subsets)."""
import itertools
import math

import numpy as np
from reference_predict import child


def conditional_expectation(tree, values, cover, x, known, node=0):
    """The tree's expectation of ``values[leaf]`` given the features in ``known``."""
    left, right = tree["left_children"][node], tree["right_children"][node]
    if left == -1:
        return np.asarray(values[node], dtype=np.float64)
    if tree["split_features"][node] in known:
        return conditional_expectation(tree, values, cover, x, known, child(tree, node, x))
    total = cover[left] + cover[right]
    share = cover[left] / total if total > 0 else 0.5
    return (share * conditional_expectation(tree, values, cover, x, known, left)
            + (1 - share) * conditional_expectation(tree, values, cover, x, known, right))


def tree_shapley(tree, values, cover, x, n_features):
    """(n_features + 1, n_values): each feature's Shapley value for one tree and input,
    then the expectation given no feature (the bias)."""
    used = sorted({tree["split_features"][n] for n in range(tree["num_nodes"])
                   if tree["left_children"][n] != -1})
    memo = {}

    def value(subset):
        if subset not in memo:
            memo[subset] = conditional_expectation(tree, values, cover, x, set(subset))
        return memo[subset]

    n_values = np.atleast_1d(values[0]).shape[0]
    phi = np.zeros((n_features + 1, n_values))
    k = len(used)
    for m in used:
        others = [f for f in used if f != m]
        for size in range(k):
            weight = math.factorial(size) * math.factorial(k - size - 1) / math.factorial(k)
            for subset in itertools.combinations(others, size):
                with_m = tuple(sorted(subset + (m,)))
                phi[m] += weight * (value(with_m) - value(subset))
    phi[n_features] = value(())
    return phi


def brute_contributions(trees, X, n_columns, cover_key, node_values=None, columns=None):
    """(n_samples, n_columns, n_features + 1): the trees' summed Shapley values and bias;
    tree ``t`` adds its leaves' ``node_values[t]`` rows (default: its leaf values) to
    the columns from ``columns[t]`` (default: its output)."""
    n_features = X.shape[1]
    out = np.zeros((X.shape[0], n_columns, n_features + 1))
    for t, tree in enumerate(trees):
        values = (np.asarray(tree["leaf_values"])[:, None] if node_values is None
                  else node_values[t])
        start = tree["output"] if columns is None else columns[t]
        for i, x in enumerate(X):
            phi = tree_shapley(tree, values, tree[cover_key], x, n_features)
            out[i, start:start + phi.shape[1]] += phi.T
    return out
