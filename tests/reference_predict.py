"""Brute-force references for prediction: walk the JSON trees of a saved model in pure
Python (docs/architecture.md, "Cost model", for the costs)."""
import math

import numpy as np


def child(tree, node, x):
    """The child of split ``node`` (of a tree document) that input x goes to."""
    v = x[tree["split_features"][node]]
    categorical = tree.get("categorical", [0] * len(tree["left_children"]))[node]
    if math.isnan(v) or (categorical and v < 0):
        go_left = bool(tree["default_left"][node])
    elif categorical:       # the node's codes: bits of its words in cat_threshold
        k = int(tree["thresholds"][node])
        bounds = tree["cat_boundaries"]
        words = tree["cat_threshold"][bounds[k]:bounds[k + 1]]
        code = int(v)
        go_left = code < 32 * len(words) and bool(words[code // 32] >> (code % 32) & 1)
    else:
        go_left = v <= tree["thresholds"][node]
    return tree["left_children"][node] if go_left else tree["right_children"][node]


def tree_walk(tree, x):
    """Node ids visited by input x (root first, the leaf last)."""
    node, path = 0, [0]
    while tree["left_children"][node] != -1:
        node = child(tree, node, x)
        path.append(node)
    return path


def brute_raw(doc, X, t0=0, t1=None):
    trees = doc["trees"][t0:t1]
    raw = np.tile(np.asarray(doc["base_score"]), (X.shape[0], 1))
    for i, x in enumerate(X):
        for tree in trees:
            leaf = tree_walk(tree, x)[-1]
            raw[i, tree["output"]] += tree["leaf_values"][leaf]
    return raw


def brute_cost(doc, X, t0=0, t1=None):
    """The cost model of docs/architecture.md, literally: each feature paid once per
    input across all trees, its group once, split_cost per split node visited, tree_cost
    per tree."""
    cm = doc["cost_model"]
    fc, fg, gc = cm["feature_costs"], cm["feature_group"], cm["group_costs"]
    trees = doc["trees"][t0:t1]
    out = np.zeros(X.shape[0])
    for i, x in enumerate(X):
        acquired, touched, cost = set(), set(), 0.0
        for tree in trees:
            cost += cm["tree_cost"]
            for node in tree_walk(tree, x)[:-1]:
                cost += cm["split_cost"]
                f = tree["split_features"][node]
                if f not in acquired:
                    acquired.add(f)
                    cost += fc[f]
                    if fg[f] >= 0 and fg[f] not in touched:
                        touched.add(fg[f])
                        cost += gc[fg[f]]
        out[i] = cost
    return out
