"""Slow pure-NumPy references for the CSTC kernels and the prediction cost of a tree of
classifiers (recursion over nodes, one input at a time)."""
import numpy as np
from reference_predict import tree_walk


def sigmoid(z):
    with np.errstate(over="ignore"):     # exp(-z) = inf gives the right limit 0
        return 1.0 / (1.0 + np.exp(-z))


def soft_route(F, thresholds, upper, lower, sharpness=1.0):
    """(reach, exit) by recursion from the root, input by input."""
    n, n_nodes = F.shape
    reach, exit_ = np.zeros((n, n_nodes)), np.zeros((n, n_nodes))

    def visit(i, k, p):
        reach[i, k] = p
        if upper[k] == -1 and lower[k] == -1:
            exit_[i, k] += p
            return
        s = sigmoid(sharpness * (F[i, k] - thresholds[k]))
        for child, share in ((upper[k], s), (lower[k], 1.0 - s)):
            if child == -1:
                exit_[i, k] += p * share
            else:
                visit(i, child, p * share)

    for i in range(n):
        visit(i, 0, 1.0)
    return reach, exit_


def loss(f, y, kind):
    return 0.5 * (f - y) ** 2 if kind == 0 else np.log1p(np.exp(-y * f))


def loss_derivative(f, y, kind):
    return f - y if kind == 0 else -y * sigmoid(-y * f)


def node_objective(f, y, sw, a, b, lu, lv, cu, cv, theta, sharpness, splits, kind):
    """(value, d value / d theta, d value / d f) of ``_linear.node_objective``."""
    losses, dl = loss(f, y, kind), loss_derivative(f, y, kind)
    if not splits:
        return float(np.sum(sw * a * losses)), 0.0, sw * a * dl
    s = sigmoid(sharpness * (f - theta))
    ds = sharpness * s * (1 - s)     # d s / d f
    slope = b * losses + lu - lv + cu - cv
    value = float(np.sum(sw * ((a + b * s) * losses + s * lu + (1 - s) * lv)))
    grad_f = sw * ((a + b * s) * dl + ds * slope)
    return value, float(-np.sum(sw * ds * slope)), grad_f


def predict_hard(X, weights, bias, thresholds, upper, lower, impute):
    """(scores, exit nodes) walking each input from the root."""
    X = np.where(np.isnan(X), impute, X)
    scores, exits = np.zeros(X.shape[0]), np.zeros(X.shape[0], dtype=np.int64)
    for i, x in enumerate(X):
        k = 0
        while True:
            f = float(x @ weights[k] + bias[k])
            child = upper[k] if f > thresholds[k] else lower[k]
            if child == -1:
                break
            k = child
        scores[i], exits[i] = f, k
    return scores, exits


def brute_cost(doc, X):
    """Per-input cost (the cost model of docs/architecture.md) of a saved tree of
    classifiers (its JSON document): walk each input to its exit node; it pays
    split_cost per routing node, each feature with a non-zero weight on its path once
    (with the boosting trick: tree_cost per basis tree weighed on its path, the
    features and split nodes on its own walk through those trees), and each touched
    cost group once."""
    cm, nodes, basis = doc["cost_model"], doc["nodes"], doc["basis"]
    weights = np.asarray(nodes["weights"])
    upper, lower = nodes["upper_children"], nodes["lower_children"]
    if basis is None:
        coords = X
    else:
        coords = np.array([[tree["leaf_values"][tree_walk(tree, x)[-1]]
                            for tree in basis["trees"]] for x in X])
    _, exits = predict_hard(coords, weights, np.asarray(nodes["biases"]),
                            np.asarray(nodes["thresholds"]), upper, lower,
                            np.asarray(doc["impute"]))
    parent = {c: k for k in range(len(upper)) for c in (upper[k], lower[k]) if c != -1}
    out = np.zeros(X.shape[0])
    for i, k in enumerate(exits):
        path = [int(k)]
        while path[-1] in parent:
            path.append(parent[path[-1]])
        used = sorted({int(c) for j in path for c in np.flatnonzero(weights[j])})
        routing = len(path) - 1 + int(upper[k] != -1 or lower[k] != -1)
        total = cm["split_cost"] * routing
        if basis is None:
            features = set(used)
        else:
            features = set()
            for t in used:
                tree = basis["trees"][t]
                splits = tree_walk(tree, X[i])[:-1]
                features |= {tree["split_features"][node] for node in splits}
                total += cm["tree_cost"] + cm["split_cost"] * len(splits)
        groups = {cm["feature_group"][m] for m in features} - {-1}
        total += sum(cm["feature_costs"][m] for m in features)
        total += sum(cm["group_costs"][g] for g in groups)
        out[i] = total
    return out
