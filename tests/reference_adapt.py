"""Slow references for the gated models: the q-step by a generic constrained solver, the
prediction cost by walking the saved JSON, and the paper's L1 baseline (section 5)."""
import warnings

import numpy as np
import scipy.optimize
from reference_predict import brute_raw, tree_walk


def q_step_numeric(excess, p_full, weight):
    """(OPT1) solved by SLSQP: minimise sum_i w_i [q_i (B_i - A_i) - H(q_i)] subject to
    sum_i w_i q_i <= p_full (weights normalised)."""
    w = weight / weight.sum()

    def value(q):
        q = np.clip(q, 1e-15, 1 - 1e-15)
        return w @ (-q * excess + q * np.log(q) + (1 - q) * np.log1p(-q))

    def gradient(q):
        q = np.clip(q, 1e-15, 1 - 1e-15)
        return w * (-excess + np.log(q) - np.log1p(-q))

    with warnings.catch_warnings():
        # some scipy versions warn when a step leaves the bounds; they clip, as we do
        warnings.filterwarnings("ignore", "Values in x were outside bounds", RuntimeWarning)
        result = scipy.optimize.minimize(
            value, np.full(excess.shape[0], min(p_full, 0.5)), jac=gradient, method="SLSQP",
            bounds=[(1e-12, 1 - 1e-12)] * excess.shape[0],
            constraints=[{"type": "ineq", "fun": lambda q: p_full - w @ q,
                          "jac": lambda q: -w}],
            options={"ftol": 1e-14, "maxiter": 1000})
    return result.x


def _part_walk(part, x):
    """(margin, features read, split nodes visited, trees evaluated) of one part of a
    gated document for input x."""
    if part["model_type"] == "linear":
        weights = np.asarray(part["weights"])
        values = np.where(np.isfinite(x), x, part["impute"])
        used = np.flatnonzero(weights)
        return float(values[used] @ weights[used] + part["bias"]), set(used.tolist()), 0, 0
    features, visits = set(), 0
    for tree in part["trees"]:
        path = tree_walk(tree, x)
        visits += len(path) - 1
        features.update(tree["split_features"][node] for node in path[:-1])
    margin = float(brute_raw(part, x[None, :])[0, 0])
    return margin, features, visits, len(part["trees"])


def brute_gated_cost(doc, X, expensive_features=None, expensive_cost=0.0):
    """The cost model of docs/architecture.md for a saved gated model: route by the
    gate, then pay each feature read by the gate or the chosen model once (groups once),
    split_cost per split node visited, tree_cost per tree evaluated; an external
    expensive model reads ``expensive_features`` and adds ``expensive_cost``."""
    cm = doc["cost_model"]
    fc, fg, gc = cm["feature_costs"], cm["feature_group"], cm["group_costs"]
    out = np.zeros(X.shape[0])
    routes = np.zeros(X.shape[0], dtype=np.int8)
    for i, x in enumerate(X):
        margin, features, visits, trees = _part_walk(doc["gate"], x)
        extra = 0.0
        if margin > doc["adapt"]["gate_threshold"]:
            if doc["expensive"]["model_type"] == "external":
                features |= set(expensive_features or [])
                extra = expensive_cost
            else:
                _, more, more_visits, more_trees = _part_walk(doc["expensive"], x)
                features |= more
                visits, trees = visits + more_visits, trees + more_trees
        else:
            routes[i] = 1
            _, more, more_visits, more_trees = _part_walk(doc["predictor"], x)
            features |= more
            visits, trees = visits + more_visits, trees + more_trees
        groups = {fg[m] for m in features if fg[m] >= 0}
        out[i] = (sum(fc[m] for m in features) + sum(gc[g] for g in groups)
                  + cm["split_cost"] * visits + cm["tree_cost"] * trees + extra)
    return out, routes


def _logistic_fit(X, y, l1=0.0, l2=1e-6):
    """Logistic regression (intercept unpenalised) with an l1 (split into positive and
    negative parts) and a small ridge; returns (weights, bias)."""
    n, d = X.shape

    def value_grad(v):
        w = v[:d] - v[d:2 * d]
        z = X @ w + v[-1]
        loss = np.mean(np.logaddexp(0, z) - y * z)
        r = (1 / (1 + np.exp(-z)) - y) / n
        gw = X.T @ r + l2 * w
        return (loss + l1 * v[:2 * d].sum() + 0.5 * l2 * w @ w,
                np.concatenate([gw + l1, -gw + l1, [r.sum()]]))

    bounds = [(0, None)] * (2 * d) + [(None, None)]
    v = scipy.optimize.minimize(value_grad, np.zeros(2 * d + 1), jac=True, method="L-BFGS-B",
                                bounds=bounds, options={"maxiter": 2000}).x
    return v[:d] - v[d:2 * d], v[-1]


def l1_baseline_curve(X, y, X_test, y_test, expensive_predict, expensive_features):
    """The L1 baseline of section 5 with unit costs: an l1-regularised logistic regression
    on all the data selects the first feature to enter its path; f1 is a logistic
    regression on the selected features; the gate is a logistic regression on them
    predicting whether f1 is right. Every gate threshold gives a point (mean test cost,
    test accuracy): an input the gate doubts goes to the expensive model."""
    Xc = X - X.mean(axis=0)
    entry = np.abs(Xc.T @ (y - y.mean())) / X.shape[0]
    w, _ = _logistic_fit(Xc, y, l1=0.9 * entry.max())
    selected = np.flatnonzero(np.abs(w) > 1e-8)
    f1_w, f1_b = _logistic_fit(X[:, selected], y)
    correct = ((X[:, selected] @ f1_w + f1_b > 0) == (y > 0.5)).astype(np.float64)
    g_w, g_b = _logistic_fit(X[:, selected], correct)
    trust = X_test[:, selected] @ g_w + g_b
    f1_right = (X_test[:, selected] @ f1_w + f1_b > 0) == (y_test > 0.5)
    f0_right = (expensive_predict(X_test) > 0.5) == (y_test > 0.5)
    expensive_cost = len(set(selected.tolist()) | set(expensive_features))
    points = []
    for threshold in np.concatenate([[-np.inf], np.sort(trust), [np.inf]]):
        to_expensive = trust <= threshold
        accuracy = np.mean(np.where(to_expensive, f0_right, f1_right))
        cost = np.mean(np.where(to_expensive, expensive_cost, len(selected)))
        points.append((cost, accuracy))
    return selected, points


def four_cluster_optimum(centers, labels, proportions=None):
    """The cheapest fully accurate gated model of well separated four-cluster data
    (``datasets.make_four_clusters``; two unit-cost features, f0 reading both) with a
    linear gate and predictor, by enumeration: the gate and f1 read one feature ``a``
    (reading both costs 2, as f0 does); the inputs kept for f1 are the clusters on one
    side of a threshold on ``x_a`` and f1 must separate their labels by a threshold on
    ``x_a``; the others go to f0 and pay both features. Returns (mean cost per input,
    feature, bool mask of the clusters sent to f0); every input to f0 (cost 2) if no
    such gate helps."""
    centers = np.asarray(centers, dtype=np.float64)
    labels = np.asarray(labels)
    share = np.full(4, 0.25) if proportions is None else np.asarray(proportions, float)
    share = share / share.sum()
    best = (2.0, None, np.ones(4, dtype=bool))
    for a in range(2):
        x = centers[:, a]
        for t in np.unique(x):
            for kept in (x <= t, x >= t):
                ones, zeros = x[kept & (labels == 1)], x[kept & (labels == 0)]
                separable = (ones.size == 0 or zeros.size == 0 or ones.max() < zeros.min()
                             or zeros.max() < ones.min())
                cost = 1.0 + share[~kept].sum()
                if separable and cost < best[0] - 1e-12:
                    best = (cost, a, ~kept)
    return best
