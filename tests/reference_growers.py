"""Slow pure-NumPy references shared by the grower tests: the growth of one
cost-penalised tree (CEGB, Greedy Miser) recomputing every open leaf's best split from
scratch after each split (no cached splits, no histograms)."""
import numpy as np

MISSING = 255


def ref_best_split(binned, n_value_bins, rows, g, h, mask, penalty, reg_lambda, mcw,
                   min_data):
    """(net gain, raw gain, penalty, feature, bin, default_left) of the best split of
    ``rows``; ties: lowest feature, then missing right, then lowest bin. A split sending
    only the missing values left is skipped when the top bin is empty (its mirror,
    every value left and missing right, is scanned)."""
    # Python floats in the scan below: the same IEEE double operations in the same order
    # as NumPy scalars, several times faster (this loop is most of the grower tests' time)
    G, H, n = float(g[rows].sum()), float(h[rows].sum()), rows.shape[0]
    parent = G * G / (H + reg_lambda)
    best = (-np.inf, 0.0, 0.0, -1, -1, False)
    for f in np.flatnonzero(mask):
        nvb = int(n_value_bins[f])
        if nvb < 2:
            continue
        b = binned[rows, f].astype(np.intp)
        sg = np.bincount(b, weights=g[rows], minlength=MISSING + 1)
        sh = np.bincount(b, weights=h[rows], minlength=MISSING + 1)
        sc = np.bincount(b, minlength=MISSING + 1)
        # the value bins, then the missing one at index nvb
        sg, sh, sc = ([*s[:nvb].tolist(), s[MISSING].item()] for s in (sg, sh, sc))
        pen = float(penalty[f])
        for default_left in (False, True):
            if default_left and sc[nvb] == 0:
                break
            gl, hl, cl = (sg[nvb], sh[nvb], sc[nvb]) if default_left else (0, 0, 0)
            for t in range(nvb - 1):
                if default_left and sc[t] == 0 and cl == sc[nvb] and sc[nvb - 1] == 0:
                    continue    # the mirror of "every value left, missing right"
                gl, hl, cl = gl + sg[t], hl + sh[t], cl + sc[t]
                if cl < min_data or hl < mcw:
                    continue
                if n - cl < min_data or H - hl < mcw:
                    break
                gain = 0.5 * (gl * gl / (hl + reg_lambda)
                              + (G - gl) ** 2 / (H - hl + reg_lambda) - parent)
                if gain - pen > best[0]:
                    best = (gain - pen, gain, pen, f, t, default_left)
    return best


def ref_grow(binned, n_value_bins, g, h, rows, mask, state, costs, tradeoff, *,
             reg_lambda=1.0, mcw=1e-3, min_data=5, num_leaves=-1, max_depth=-1,
             best_first=True):
    """Nodes (dicts in id order); ``state`` = dict of bool arrays ``acquired`` (n x F),
    ``touched`` (n x G), ``used`` (F) and, with ``costs["coupled_group_costs"]`` (once
    per model, per group), ``group_used`` (G), updated as the splits are applied."""
    fc, group, gc, coupled, alpha = (costs["feature_costs"], costs["feature_group"],
                                     costs["group_costs"], costs["coupled_costs"],
                                     costs["split_cost"])
    coupled_group = costs.get("coupled_group_costs")
    nodes = [dict(rows=np.asarray(rows), depth=0, left=-1, right=-1, feature=-1)]

    def can_split(node):
        return ((max_depth < 0 or node["depth"] < max_depth)
                and node["rows"].shape[0] >= 2 * min_data and h[node["rows"]].sum() >= 2 * mcw)

    def penalty(r):
        acquired, touched = state["acquired"][r], state["touched"][r]
        out = np.full(fc.shape[0], alpha * r.shape[0])
        out += coupled * ~state["used"]
        if coupled_group is not None:
            grouped = group >= 0
            out[grouped] += coupled_group[group[grouped]] * ~state["group_used"][group[grouped]]
        out += fc * (~acquired).sum(axis=0)
        grouped = np.flatnonzero(group >= 0)
        out[grouped] += gc[group[grouped]] * (~touched).sum(axis=0)[group[grouped]]
        return tradeoff * out

    open_ids = [0] if can_split(nodes[0]) else []
    n_leaves = 1
    # every open leaf's penalties are recomputed from the state after each split; its scan
    # is rerun unless they are exactly those of its last scan (the same rows and
    # penalties give the same split: this only saves time, it keeps nothing stale)
    scanned = {}
    while open_ids and (num_leaves < 0 or n_leaves < num_leaves):
        candidates = []
        for i in open_ids:
            r = nodes[i]["rows"]
            leaf_penalty = penalty(r)
            if i in scanned and np.array_equal(scanned[i][0], leaf_penalty):
                split = scanned[i][1]
            else:
                split = ref_best_split(binned, n_value_bins, r, g, h, mask, leaf_penalty,
                                       reg_lambda, mcw, min_data)
                scanned[i] = (leaf_penalty, split)
            if split[3] >= 0 and split[0] > 0:
                candidates.append((i, split))
        if not candidates:
            break
        if best_first:
            i, split = max(candidates, key=lambda c: (c[1][0], -c[0]))
        else:
            i, split = min(candidates, key=lambda c: c[0])
        open_ids.remove(i)
        node = nodes[i]
        _, raw_gain, pen, f, t, default_left = split
        r = node["rows"]
        b = binned[r, f]
        goes_left = np.where(b == MISSING, default_left, b <= t)
        state["acquired"][r, f] = True
        if group[f] >= 0:
            state["touched"][r, group[f]] = True
        state["used"][f] = True
        if group[f] >= 0 and "group_used" in state:
            state["group_used"][group[f]] = True
        node.update(feature=f, bin=t, default_left=default_left, gain=raw_gain, penalty=pen,
                    left=len(nodes), right=len(nodes) + 1)
        for part in (r[goes_left], r[~goes_left]):
            nodes.append(dict(rows=part, depth=node["depth"] + 1, left=-1, right=-1,
                              feature=-1))
            if can_split(nodes[-1]):
                open_ids.append(len(nodes) - 1)
        n_leaves += 1
    return nodes


def expand(bits, n_bits):
    return ((bits[:, np.arange(n_bits) // 64] >> (np.arange(n_bits) % 64).astype(np.uint64))
            & np.uint64(1)).astype(bool)


def random_binned_problem(rng, n, n_features):
    """Binned data with 2..39 value bins per feature (feature 3 has a single bin: never
    splittable), 5% missing values; its bin edges; a feature mask leaving out feature
    7 (column sampling)."""
    n_value_bins = rng.integers(2, 40, n_features).astype(np.uint32)
    n_value_bins[3] = 1
    binned = np.asfortranarray((rng.random((n, n_features)) * n_value_bins).astype(np.uint8))
    binned[rng.random((n, n_features)) < 0.05] = MISSING
    edges = np.concatenate([np.arange(k, dtype=np.float64) for k in n_value_bins])
    indptr = np.concatenate([[0], np.cumsum(n_value_bins)]).astype(np.int64)
    mask = np.ones(n_features, dtype=np.uint8)
    mask[7] = 0
    return binned, n_value_bins, edges, indptr, mask


def assert_tree_matches_reference(tree, ref, g, h, *, learning_rate, reg_lambda):
    """The grown tree (NODE_DTYPE) has the reference's nodes, splits, gains, penalties
    and leaf values (node by node, compared as arrays)."""
    assert tree.shape[0] == len(ref)
    for field in ("left", "right", "feature"):
        np.testing.assert_array_equal(tree[field], [r[field] for r in ref], err_msg=field)
    np.testing.assert_array_equal(tree["n_samples"], [r["rows"].shape[0] for r in ref])
    split = tree["left"] != -1
    splits = [r for r in ref if r["left"] != -1]
    np.testing.assert_array_equal(tree["bin_threshold"][split], [r["bin"] for r in splits])
    np.testing.assert_array_equal(tree["default_left"][split].astype(bool),
                                  [r["default_left"] for r in splits])
    np.testing.assert_allclose(tree["gain"][split], [r["gain"] for r in splits], rtol=1e-9,
                               atol=1e-9)
    np.testing.assert_allclose(tree["cost_penalty"][split], [r["penalty"] for r in splits],
                               rtol=1e-9, atol=1e-12)
    values = [-learning_rate * g[r["rows"]].sum() / (h[r["rows"]].sum() + reg_lambda)
              for r in ref if r["left"] == -1]
    np.testing.assert_allclose(tree["value"][~split], values, rtol=1e-9, atol=1e-12)


def assert_tracked_costs_equal_routing(booster, dtrain):
    """The new acquisitions and per-iteration training costs ``booster`` tracked while it
    grew equal those of routing ``dtrain`` through its finished trees (a copy whose
    acquisitions are recomputed by ``finalize``)."""
    routed = booster[:]
    for tree in routed.trees:
        tree["new_acquisitions"] = -1
    routed.finalize(dtrain, [])
    for tracked, expected in zip(booster.trees, routed.trees):
        np.testing.assert_array_equal(tracked["new_acquisitions"], expected["new_acquisitions"])
    np.testing.assert_allclose(booster.summary["train_cost_per_iteration"],
                               routed.summary["train_cost_per_iteration"], rtol=1e-12)
