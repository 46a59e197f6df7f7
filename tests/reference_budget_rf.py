"""Slow pure-NumPy reference of BudgetRF's GREEDYTREE (Nan, Wang, Saligrama, ICML 2015,
Algorithm 1), for the kernel tests of ``algorithm="budget_rf"``.

A node holding the examples S is split on the feature t of least risk

    R(t) = min over stumps g on t of  max over outcomes i of  c(t) / (F(S) - F(S_i^g))

(infinite when an outcome does not lower the impurity), by its best stump; a node with
F(S) = 0 -- or where no feature has a finite risk -- is a leaf. Stumps here are every
threshold between two of the node's value bins (``exhaustive``), so the reference needs
no random numbers; the kernel draws 80 / 40 / 20 of them at random.

Ties: lower risk, then (for equal risk, e.g. free features) the larger minimum impurity
decrease over the outcomes, then the lower feature, then the lower threshold.
"""
import numpy as np

MISSING = 255    # the Dataset's missing-value bin: the highest, so missing values go right


def threshold_pairs(counts, alpha):
    """Threshold-Pairs impurity (eq. 11) of class counts ``counts`` (..., n_classes):
    sum over class pairs i < j of [[n_i - alpha]_+ [n_j - alpha]_+ - alpha^2]_+.
    alpha = 0 counts the pairs of differently labelled examples."""
    c = np.maximum(np.asarray(counts, dtype=np.float64) - alpha, 0.0)
    k = c.shape[-1]
    i, j = np.triu_indices(k, 1)
    return np.maximum(c[..., i] * c[..., j] - alpha * alpha, 0.0).sum(axis=-1)


def impurity_of(counts, alpha, impurity):
    """F of a node with class counts ``counts``: threshold-Pairs, or (not admissible,
    ``alpha`` unused) the Gini index or the entropy of the class proportions."""
    if impurity == "threshold_pairs":
        return threshold_pairs(counts, alpha)
    total = float(np.sum(counts))
    if total == 0:
        return 0.0
    p = np.asarray(counts, dtype=np.float64) / total
    if impurity == "gini":
        return 1.0 - float(np.sum(p * p))
    p = p[p > 0]
    return float(-np.sum(p * np.log(p)))


def greedy_tree(binned, y, n_classes, costs, *, alpha=0.0, path_free=False, max_depth=None,
                feature_group=None, group_costs=None, impurity="threshold_pairs",
                weight=None, split_cost=0.0, n_edges=None):
    """GREEDYTREE on binned data ``binned`` (n, m) uint8 with labels ``y`` in
    [0, n_classes). c(t) is ``costs[t]`` -- 0 with ``path_free`` for a feature already
    tested on the root-to-node path -- plus ``group_costs[g]`` when the path has not
    touched t's group g yet, plus ``split_cost``. Class counts weigh each row by
    ``weight``. Thresholds are bins below ``n_edges[t]`` (the feature's bin edges; the
    top value bin has none). Returns nodes (dicts in pre-order) with ``feature``,
    ``bin`` (left: bin <= bin), ``left``, ``right``, ``counts``, ``risk``, ``cost``,
    ``decrease``."""
    if feature_group is None:
        feature_group = np.full(binned.shape[1], -1)
    nodes = []
    weight = np.ones(binned.shape[0]) if weight is None else np.asarray(weight, float)

    def grow(rows, depth, path):
        counts = np.bincount(y[rows], weights=weight[rows], minlength=n_classes)
        node = dict(feature=-1, bin=-1, left=-1, right=-1, counts=counts, risk=np.inf,
                    depth=depth)
        nodes.append(node)
        f_parent = impurity_of(counts, alpha, impurity)
        if f_parent == 0 or (max_depth is not None and depth >= max_depth):
            return len(nodes) - 1
        best = None   # (risk, -min decrease, feature, bin)
        for t in range(binned.shape[1]):
            b = binned[rows, t]
            values = np.unique(b)
            cost = split_cost + (0.0 if (path_free and t in path) else float(costs[t]))
            groups_on_path = {feature_group[f] for f in path}
            if feature_group[t] >= 0 and feature_group[t] not in groups_on_path:
                cost += float(group_costs[feature_group[t]])
            for threshold in values[:-1]:
                if n_edges is not None and threshold >= n_edges[t]:
                    break
                left = b <= threshold
                f_left = impurity_of(np.bincount(y[rows[left]], weights=weight[rows[left]],
                                                 minlength=n_classes), alpha, impurity)
                f_right = impurity_of(np.bincount(y[rows[~left]], weights=weight[rows[~left]],
                                                  minlength=n_classes), alpha, impurity)
                decrease = min(f_parent - f_left, f_parent - f_right)
                if decrease <= 0:
                    continue
                key = (cost / decrease, -decrease, t, int(threshold), cost)
                if best is None or key < best:
                    best = key
        if best is None:
            return len(nodes) - 1
        risk, neg_decrease, t, threshold, cost = best
        node.update(feature=t, bin=threshold, risk=risk, cost=cost, decrease=-neg_decrease)
        left = binned[rows, t] <= threshold
        node["left"] = grow(rows[left], depth + 1, path | {t})
        node["right"] = grow(rows[~left], depth + 1, path | {t})
        return nodes.index(node)

    grow(np.arange(binned.shape[0]), 0, frozenset())
    return nodes


def section_2_4_example():
    """The synthetic example of the paper's section 2.4: 1024 examples, one per value of
    10 binary unit-cost features (feature 0 the most significant bit of k); classes
    0..3 = the quarter of k, except k = 0, 256, 512, 768, labelled 1, 2, 3, 0."""
    k = np.arange(1024)
    X = ((k[:, None] >> np.arange(9, -1, -1)) & 1).astype(np.uint8)
    y = k // 256
    y[[0, 256, 512, 768]] = [1, 2, 3, 0]
    return X, y


def predict(nodes, binned):
    """Majority class of the reached leaf for each row."""
    out = np.empty(binned.shape[0], dtype=np.int64)
    for r in range(binned.shape[0]):
        node = nodes[0]
        while node["feature"] >= 0:
            node = nodes[node["left"] if binned[r, node["feature"]] <= node["bin"]
                         else node["right"]]
        out[r] = int(np.argmax(node["counts"]))
    return out
