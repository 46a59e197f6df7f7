"""What the linear-node learners share (CSTC's nodes, ADAPT-LIN's gate and predictor):
features standardised over their readable values under the sample weights, the groups of
coordinates the relaxed cost penalty charges together, and the threads a kernel call
gets."""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import scipy.sparse
from numpy.typing import ArrayLike

from .._core._linear import MAX_INPUT, readable

if TYPE_CHECKING:  # only for type hints
    from ..booster import Booster
    from ..costs import CostModel

__all__ = ["standardize", "standardized", "cost_groups", "threads_for", "PARALLEL_WORK"]

# Kernel calls with less work than this run on one thread: waking OpenMP threads costs
# more than such a call, and their spinning competes with BLAS's threads in between.
PARALLEL_WORK = 1_000_000

# columns standardised together: about this many entries per block of temporaries
_BLOCK_ENTRIES = 1 << 20


def threads_for(work: float, n_threads: int) -> int:
    """``n_threads`` for a kernel call of ``work`` multiply-adds, 1 below
    ``PARALLEL_WORK`` (small calls lose more to waking threads than they gain)."""
    return n_threads if work >= PARALLEL_WORK else 1


def _power_of_two_at_least(x: np.ndarray | float) -> np.ndarray:
    """The smallest power of two >= ``x`` (> 0), elementwise; 1 where ``x`` is 0: dividing
    by it is exact."""
    _, exponent = np.frexp(x)
    return np.where(x > 0, np.ldexp(1.0, exponent), 1.0)


def standardize(coords: np.ndarray, weight: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    """Mean and standard deviation per column under the sample ``weight``, over the
    readable values (see :func:`cbudget._core._linear.readable`: NaN, +-inf and
    magnitudes from ``MAX_INPUT`` on are missing, as prediction reads them) of the rows
    of positive weight: a row of weight 0 has no influence at all, a row of weight 2
    counts as the row twice. Columns without spread get deviation 0 (never used).

    Overflow-safe: each column is divided by a power of two at least its largest
    magnitude (exact), so that no sum of squares overflows, whatever the values' scale.
    """
    n, d = coords.shape
    weight = np.asarray(weight, dtype=np.float64)
    rows = weight > 0
    # the weights in units of a power of two near the largest one (exact): no sum of
    # weights overflows either
    w_rows = weight / _power_of_two_at_least(weight.max(initial=0.0))
    mean, std = np.zeros(d), np.zeros(d)
    step = max(1, _BLOCK_ENTRIES // max(n, 1))
    for start in range(0, d, step):
        block = coords[:, start:start + step]
        present = readable(block) & rows[:, None]
        w = np.where(present, w_rows[:, None], 0.0)
        values = np.where(present, block, 0.0)
        unit = _power_of_two_at_least(np.abs(values).max(axis=0, initial=0.0))
        values = values / unit
        total = w.sum(axis=0)
        seen = total > 0
        total = np.where(seen, total, 1.0)
        centre = (w * values).sum(axis=0) / total
        deviation = np.sqrt((w * (values - centre) ** 2).sum(axis=0) / total)
        # relative to the column's magnitude: a constant column's rounding is no spread
        spread = seen & (deviation > 1e-12 * np.maximum(np.abs(centre), 1.0 / unit))
        mean[start:start + step] = np.where(seen, centre * unit, 0.0)
        std[start:start + step] = np.where(spread, deviation * unit, 0.0)
    return mean, std


def standardized(coords: np.ndarray, mean: np.ndarray, std: np.ndarray) -> np.ndarray:
    """(coords - mean) / std with unreadable values (missing, infinite, magnitudes from
    ``MAX_INPUT`` on) at 0 (the mean, what prediction imputes) and constant columns 0;
    bounded by ``MAX_INPUT`` (a value far out on a column of tiny spread would otherwise
    overflow)."""
    scale = np.where(std > 0, 1.0 / np.where(std > 0, std, 1.0), 0.0)
    with np.errstate(over="ignore", invalid="ignore"):
        Z = (coords - mean) * scale
    Z[~readable(coords)] = 0.0
    np.clip(Z, -MAX_INPUT, MAX_INPUT, out=Z)
    return np.ascontiguousarray(Z)


def cost_groups(costs: CostModel, basis: Booster | None, n_coords: int
                ) -> tuple[scipy.sparse.csr_matrix, np.ndarray]:
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
