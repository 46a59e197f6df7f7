"""What the linear-node learners share (CSTC's nodes, ADAPT-LIN's gate and predictor):
features standardised over their non-missing values, the groups of coordinates the
relaxed cost penalty charges together, and the threads a kernel call gets."""
from __future__ import annotations

import warnings

import numpy as np
import scipy.sparse

__all__ = ["standardize", "standardized", "cost_groups", "threads_for", "PARALLEL_WORK"]

# Kernel calls with less work than this run on one thread: waking OpenMP threads costs
# more than such a call, and their spinning competes with BLAS's threads in between.
PARALLEL_WORK = 1_000_000


def threads_for(work, n_threads):
    """``n_threads`` for a kernel call of ``work`` multiply-adds, 1 below
    ``PARALLEL_WORK`` (small calls lose more to waking threads than they gain)."""
    return n_threads if work >= PARALLEL_WORK else 1


def standardize(coords):
    """Mean / standard deviation per column over the non-missing values; constant
    columns get deviation 0 (never used)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        mean = np.nanmean(coords, axis=0)
        std = np.nanstd(coords, axis=0)
    mean = np.where(np.isfinite(mean), mean, 0.0)
    std = np.where(np.isfinite(std) & (std > 1e-12 * np.maximum(1.0, np.abs(mean))), std, 0.0)
    return mean, std


def standardized(coords, mean, std):
    """(coords - mean) / std with missing values at 0 (the mean) and constant columns 0."""
    scale = np.where(std > 0, 1.0 / np.where(std > 0, std, 1.0), 0.0)
    Z = (coords - mean) * scale
    Z[~np.isfinite(Z)] = 0.0
    return np.ascontiguousarray(Z)


def cost_groups(costs, basis, n_coords):
    """The relaxed cost's groups of coordinates (see ``cstc_solver``): per feature (its
    coordinate, or the basis trees that split on it) with ``feature_costs``, per cost
    group with ``group_costs``, and with the boosting trick one per tree with
    ``tree_cost`` (eq. 20, 21)."""
    if basis is None:
        users = [[m] for m in range(costs.n_features)]
    else:
        users = [[] for _ in range(costs.n_features)]
        for t, tree in enumerate(basis.trees):
            for m in np.unique(tree["feature"][tree["left"] != -1]):
                users[m].append(t)
    rows, group_costs = [], []
    for m in range(costs.n_features):
        if costs.feature_costs[m] > 0 and users[m]:
            rows.append(users[m])
            group_costs.append(costs.feature_costs[m])
    for g in range(costs.n_groups):
        members = sorted({t for m in np.flatnonzero(costs.feature_group == g) for t in users[m]})
        if costs.group_costs[g] > 0 and members:
            rows.append(members)
            group_costs.append(costs.group_costs[g])
    if basis is not None and costs.tree_cost > 0:
        rows.extend([t] for t in range(n_coords))
        group_costs.extend([costs.tree_cost] * n_coords)
    indptr = np.cumsum([0] + [len(r) for r in rows])
    indices = np.asarray([t for r in rows for t in r], dtype=np.int64)
    groups = scipy.sparse.csr_matrix((np.ones(indices.size), indices, indptr),
                                     shape=(len(rows), n_coords))
    return groups, np.asarray(group_costs, dtype=np.float64)
