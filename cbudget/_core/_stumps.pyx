"""BudgetRF's GREEDYTREE (Nan, Wang, Saligrama, ICML 2015, Algorithm 1) on binned data.

A node holding the examples S is split on the feature t of least risk

    R(t) = min over stumps g on t of  max over outcomes i of  c(t) / (F(S) - F(S_i^g))

by its best stump (infinite risk when an outcome does not lower the impurity F); a node
with F(S) = 0, or without a stump of finite risk, is a leaf. Stumps are thresholds
between value bins (the feature's bin edges), drawn at random per node and feature
(``n_stumps`` of them, by node size) or all of them (``exhaustive``). c(t) is the feature's cost plus its cost group's
when the node's path has not touched the group yet, plus the split cost; with
``path_free`` a feature already tested on the path costs nothing (it is cached at
prediction time).

Impurities: threshold-Pairs (eq. 11; admissible), Gini and entropy (not admissible; for
comparison). Ties: lower risk, then the larger minimum impurity decrease, then the lower
feature, then the lower threshold. The missing-value bin is the highest bin, so missing
values go right; "every value left, missing right" is a stump only when the node's values
stay below the feature's top value bin (there is no edge above it).
"""
from libc.math cimport INFINITY, log
from libc.stdint cimport int32_t, int64_t, uint64_t
from libc.stdlib cimport calloc, free, malloc

import numpy as np

from ._types cimport X_BINNED_C, node_struct
from ._types import NODE_DTYPE

IMPURITIES = {"threshold_pairs": 0, "gini": 1, "entropy": 2}


cdef double _impurity(const double * counts, int n_classes, double alpha,
                      int kind) noexcept nogil:
    cdef double total = 0.0, out = 0.0, ci, cj, p
    cdef int i, j
    if kind == 0 and alpha == 0:
        # the unlike pairs: (N^2 - sum n_i^2) / 2, exact for integer counts
        for i in range(n_classes):
            total += counts[i]
            out += counts[i] * counts[i]
        return 0.5 * (total * total - out)
    if kind == 0:
        for i in range(n_classes):
            ci = counts[i] - alpha
            if ci <= 0:
                continue
            for j in range(i + 1, n_classes):
                cj = counts[j] - alpha
                if cj > 0 and ci * cj > alpha * alpha:
                    out += ci * cj - alpha * alpha
        return out
    for i in range(n_classes):
        total += counts[i]
    if total <= 0:
        return 0.0
    for i in range(n_classes):
        p = counts[i] / total
        if kind == 1:
            out += p * p
        elif p > 0:
            out -= p * log(p)
    return 1.0 - out if kind == 1 else out


cdef inline uint64_t _next_random(uint64_t * state) noexcept nogil:
    """splitmix64: fast, seedable, good enough to draw stump thresholds."""
    state[0] += <uint64_t> 0x9E3779B97F4A7C15
    cdef uint64_t z = state[0]
    z = (z ^ (z >> 30)) * <uint64_t> 0xBF58476D1CE4E5B9
    z = (z ^ (z >> 27)) * <uint64_t> 0x94D049BB133111EB
    return z ^ (z >> 31)


cdef inline Py_ssize_t _random_below(uint64_t * state, Py_ssize_t n) noexcept nogil:
    """A random integer in [0, n), n <= 256: the high 32 bits scaled by n (a multiply
    and a shift instead of a 64-bit division; the bias is below n / 2^32)."""
    return <Py_ssize_t> (((_next_random(state) >> 32) * <uint64_t> n) >> 32)


cdef inline void _sort_bins(int32_t * present, Py_ssize_t n_present,
                            const int32_t * bin_rows) noexcept nogil:
    """Sort the present bins: insertion sort when few, else a scan of the 256 bins."""
    cdef Py_ssize_t i, j
    cdef int32_t b
    if n_present <= 32:
        for i in range(1, n_present):
            b = present[i]
            j = i - 1
            while j >= 0 and present[j] > b:
                present[j + 1] = present[j]
                j -= 1
            present[j + 1] = b
        return
    j = 0
    for i in range(256):
        if bin_rows[i] > 0:
            present[j] = <int32_t> i
            j += 1


cdef inline Py_ssize_t _floor_index(const int32_t * present, Py_ssize_t n,
                                    Py_ssize_t b) noexcept nogil:
    """Index of the highest of the sorted ``present[:n]`` that is <= b (present[0] <= b)."""
    cdef Py_ssize_t lo = 0, hi = n - 1, mid
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if present[mid] <= b:
            lo = mid
        else:
            hi = mid - 1
    return lo


cdef inline void _mark_path(int32_t node, const int32_t * parent_of,
                            const node_struct * nodes, const int32_t * feature_group,
                            unsigned char * on_path, unsigned char * group_on_path,
                            unsigned char mark) noexcept nogil:
    """Set (1) or clear (0) the marks of the features and cost groups tested on the path
    from the root to ``node``."""
    cdef int32_t ancestor = parent_of[node], group
    while ancestor >= 0:
        on_path[nodes[ancestor].feature] = mark
        group = feature_group[nodes[ancestor].feature]
        if group >= 0:
            group_on_path[group] = mark
        ancestor = parent_of[ancestor]


cdef struct stack_entry:
    Py_ssize_t start
    Py_ssize_t stop
    int32_t parent
    int depth
    bint is_left


def grow_greedy_tree(const X_BINNED_C[::1, :] binned, const int32_t[::1] y,
                     int32_t[::1] rows, int n_classes, const double[::1] feature_costs,
                     const int32_t[::1] feature_group, const double[::1] group_costs,
                     const double[::1] bin_edges, const int64_t[::1] edges_indptr,
                     const unsigned char[::1] feature_mask, *,
                     const double[::1] sample_weight=None, double split_cost=0.0,
                     double alpha=0.0,
                     str impurity="threshold_pairs", bint path_free=False,
                     bint exhaustive=False, n_stumps=(80, 40, 20),
                     stump_node_sizes=(2000, 500), int max_depth=-1,
                     int min_samples_split=2, unsigned long long seed=0):
    """Grow one GREEDYTREE on the examples ``rows`` (indices into ``binned``; repeats
    allowed, as in a bootstrap sample; reordered in place).

    Parameters
    ----------
    binned : uint8 (n_samples, n_features), Fortran order
    y : int32 (n_samples,), classes in [0, n_classes)
    feature_costs : float64 (n_features,); feature_group int32 (-1: none);
    group_costs : float64 (n_groups,)
    bin_edges, edges_indptr : the Dataset's upper bin edges (thresholds come from them)
    feature_mask : uint8 (n_features,), features that may be tested
    sample_weight : float64 (n_samples,), optional
        Class counts (and so the impurities) weigh each example by its weight
    split_cost : every split also costs this (added to c(t))
    n_stumps : (large, medium, small) random stumps per feature for nodes of more than
        ``stump_node_sizes[0]``, more than ``stump_node_sizes[1]``, and other sizes

    Returns
    -------
    nodes : NODE_DTYPE array (pre-order: a node, its left subtree, its right subtree);
        ``gain`` is the split's minimum impurity decrease, ``cost_penalty`` c(t)
    class_counts : float64 (n_nodes, n_classes), the (weighted) examples of each node
        per class; ``sum_hessian`` is their total
    """
    cdef Py_ssize_t n_samples = binned.shape[0], n_features = binned.shape[1]
    cdef Py_ssize_t n_rows = rows.shape[0]
    if y.shape[0] != n_samples or feature_costs.shape[0] != n_features \
            or feature_group.shape[0] != n_features or feature_mask.shape[0] != n_features \
            or edges_indptr.shape[0] != n_features + 1:
        raise ValueError("inputs do not match the binned data")
    if n_rows == 0:
        raise ValueError("no rows to grow a tree on")
    if n_classes < 1 or np.min(y) < 0 or np.max(y) >= n_classes:
        raise ValueError("y must hold classes in [0, n_classes)")
    if np.min(rows) < 0 or np.max(rows) >= n_samples:
        raise ValueError("rows out of range")
    if n_features and (np.min(feature_group) < -1
                       or np.max(feature_group) >= group_costs.shape[0]):
        raise ValueError("feature_group out of range")
    if sample_weight is not None and sample_weight.shape[0] != n_samples:
        raise ValueError("sample_weight does not match the binned data")
    if impurity not in IMPURITIES:
        raise ValueError(f"impurity must be one of {sorted(IMPURITIES)}, got {impurity!r}")
    cdef int kind = IMPURITIES[impurity]
    cdef int n_large = n_stumps[0], n_medium = n_stumps[1], n_small = n_stumps[2]
    cdef Py_ssize_t size_large = stump_node_sizes[0], size_medium = stump_node_sizes[1]
    cdef Py_ssize_t n_groups = group_costs.shape[0]
    cdef Py_ssize_t capacity = 2 * n_rows
    nodes = np.zeros(capacity, dtype=NODE_DTYPE)
    counts_out = np.zeros((capacity, n_classes), dtype=np.float64)
    cdef node_struct[::1] out = nodes
    cdef double[:, ::1] node_counts = counts_out
    cdef int32_t * parent_of = <int32_t *> malloc(capacity * sizeof(int32_t))
    cdef stack_entry * stack = <stack_entry *> malloc(capacity * sizeof(stack_entry))
    cdef int32_t * buffer = <int32_t *> malloc(n_rows * sizeof(int32_t))
    cdef int32_t * by_bin = <int32_t *> malloc(n_rows * sizeof(int32_t))
    cdef int32_t * bin_rows = <int32_t *> calloc(256, sizeof(int32_t))
    cdef int32_t * bin_start = <int32_t *> malloc(256 * sizeof(int32_t))
    cdef int32_t * present = <int32_t *> malloc(256 * sizeof(int32_t))
    cdef unsigned char * marked = <unsigned char *> calloc(256, 1)
    cdef double * left = <double *> malloc(n_classes * sizeof(double))
    cdef double * right = <double *> malloc(n_classes * sizeof(double))
    cdef unsigned char * on_path = <unsigned char *> calloc(max(n_features, 1), 1)
    cdef unsigned char * group_on_path = <unsigned char *> calloc(max(n_groups, 1), 1)
    cdef uint64_t rng = seed
    cdef Py_ssize_t n_nodes = 0, n_stack = 1, i, start, stop, n, b, lo, hi, k, n_left
    cdef Py_ssize_t t, draws, d, top, j, n_present, n_candidates, n_marked, n_sorted, last
    cdef int32_t node, row, group, best_feature
    cdef int depth, best_bin
    cdef double f_parent, f_left, f_right, decrease, cost, risk
    cdef double best_risk, best_decrease, best_cost, total, w = 1.0
    cdef bint weighted = sample_weight is not None
    if (parent_of == NULL or stack == NULL or buffer == NULL or by_bin == NULL
            or bin_rows == NULL or bin_start == NULL or present == NULL or marked == NULL
            or left == NULL or right == NULL or on_path == NULL or group_on_path == NULL):
        free(parent_of); free(stack); free(buffer); free(by_bin); free(left); free(right)
        free(on_path); free(group_on_path); free(bin_rows); free(bin_start); free(present)
        free(marked)
        raise MemoryError()
    stack[0].start, stack[0].stop, stack[0].parent, stack[0].depth = 0, n_rows, -1, 0
    try:
        with nogil:
            while n_stack > 0:
                n_stack -= 1
                start, stop = stack[n_stack].start, stack[n_stack].stop
                depth = stack[n_stack].depth
                node = n_nodes
                n_nodes += 1
                parent_of[node] = stack[n_stack].parent
                if parent_of[node] >= 0:
                    if stack[n_stack].is_left:
                        out[parent_of[node]].left = node
                    else:
                        out[parent_of[node]].right = node
                out[node].left = out[node].right = out[node].feature = -1
                out[node].depth = depth
                out[node].n_samples = <int32_t> (stop - start)
                n = stop - start
                for k in range(n_classes):
                    node_counts[node, k] = 0.0
                total = 0.0
                for i in range(start, stop):
                    if weighted:
                        w = sample_weight[rows[i]]
                    node_counts[node, y[rows[i]]] += w
                    total += w
                out[node].sum_hessian = total
                f_parent = _impurity(&node_counts[node, 0], n_classes, alpha, kind)
                if f_parent <= 0 or (0 <= max_depth <= depth) or n < min_samples_split:
                    continue
                # the features and groups on the path (path_free costs, group costs)
                _mark_path(node, parent_of, &out[0], &feature_group[0], on_path,
                           group_on_path, 1)
                best_feature, best_bin = -1, -1
                best_risk, best_decrease, best_cost = INFINITY, 0.0, 0.0
                draws = n_large if n > size_large else (n_medium if n > size_medium else n_small)
                for t in range(n_features):
                    if not feature_mask[t]:
                        continue
                    # the bins present at this node, sorted (small nodes touch few
                    # bins: nothing below is O(256) or O(n_classes) per row for them)
                    n_present = 0
                    for i in range(start, stop):
                        b = binned[rows[i], t]
                        if bin_rows[b] == 0:
                            present[n_present] = <int32_t> b
                            n_present += 1
                        bin_rows[b] += 1
                    _sort_bins(present, n_present, bin_rows)
                    # thresholds are the feature's bin edges: b < its number of edges
                    # (the top value bin has none; missing values always go right);
                    # candidates: the present bins below top (the j < n_candidates)
                    lo, hi = present[0], present[n_present - 1]
                    top = min(hi, edges_indptr[t + 1] - edges_indptr[t])
                    n_candidates = 0
                    while n_candidates < n_present and present[n_candidates] < top:
                        n_candidates += 1
                    if n_candidates == 0:
                        for j in range(n_present):
                            bin_rows[present[j]] = 0
                        continue
                    cost = split_cost + (0.0 if (path_free and on_path[t])
                                         else feature_costs[t])
                    group = feature_group[t]
                    if group >= 0 and not group_on_path[group]:
                        cost += group_costs[group]
                    # the partitions to try: every candidate, or those of random
                    # thresholds in [lo, top) (a threshold's partition is the one of the
                    # highest present bin at or below it)
                    last = -1
                    if exhaustive:
                        for j in range(n_candidates):
                            marked[j] = 1
                        last = n_candidates - 1
                    else:
                        n_marked = 0
                        for d in range(draws):
                            if n_marked == n_candidates:
                                break       # every partition drawn: more add nothing
                            b = lo + _random_below(&rng, top - lo)
                            j = _floor_index(present, n_candidates, b)
                            if not marked[j]:
                                marked[j] = 1
                                n_marked += 1
                                if j > last:
                                    last = j
                    # the rows up to the last bin to try, ordered by bin (counting sort)
                    n_sorted = 0
                    for j in range(last + 1):
                        bin_start[present[j]] = <int32_t> n_sorted
                        n_sorted += bin_rows[present[j]]
                    for i in range(start, stop):
                        b = binned[rows[i], t]
                        if b <= present[last]:
                            by_bin[bin_start[b]] = rows[i]
                            bin_start[b] += 1
                    # sweep the bins, adding their rows to the left side
                    for k in range(n_classes):
                        left[k] = 0.0
                    i = 0
                    for j in range(last + 1):
                        for d in range(bin_rows[present[j]]):
                            row = by_bin[i]
                            i += 1
                            left[y[row]] += sample_weight[row] if weighted else 1.0
                        if not marked[j]:
                            continue
                        marked[j] = 0
                        for k in range(n_classes):
                            right[k] = node_counts[node, k] - left[k]
                        f_left = _impurity(left, n_classes, alpha, kind)
                        f_right = _impurity(right, n_classes, alpha, kind)
                        decrease = f_parent - (f_left if f_left > f_right else f_right)
                        if not decrease > 0:
                            continue
                        risk = cost / decrease
                        b = present[j]
                        if (risk < best_risk
                                or (risk == best_risk and decrease > best_decrease)
                                or (risk == best_risk and decrease == best_decrease
                                    and t == best_feature and b < best_bin)):
                            best_risk, best_decrease, best_cost = risk, decrease, cost
                            best_feature, best_bin = <int32_t> t, <int> b
                    for j in range(n_present):
                        bin_rows[present[j]] = 0
                _mark_path(node, parent_of, &out[0], &feature_group[0], on_path,
                           group_on_path, 0)
                if best_feature < 0:
                    continue
                out[node].feature = best_feature
                out[node].bin_threshold = <X_BINNED_C> best_bin
                out[node].default_left = 0
                out[node].threshold = bin_edges[edges_indptr[best_feature] + best_bin]
                out[node].gain = best_decrease
                out[node].cost_penalty = best_cost
                # stable partition: rows with bin <= best_bin first
                n_left = 0
                for i in range(start, stop):
                    if binned[rows[i], best_feature] <= best_bin:
                        rows[start + n_left] = rows[i]
                        n_left += 1
                    else:
                        buffer[i - start - n_left] = rows[i]
                for i in range(stop - start - n_left):
                    rows[start + n_left + i] = buffer[i]
                # pre-order: the left child is popped (and numbered) first
                stack[n_stack].start, stack[n_stack].stop = start + n_left, stop
                stack[n_stack].parent, stack[n_stack].depth = node, depth + 1
                stack[n_stack].is_left = False
                stack[n_stack + 1].start, stack[n_stack + 1].stop = start, start + n_left
                stack[n_stack + 1].parent, stack[n_stack + 1].depth = node, depth + 1
                stack[n_stack + 1].is_left = True
                n_stack += 2
    finally:
        free(parent_of); free(stack); free(buffer); free(by_bin); free(left); free(right)
        free(on_path); free(group_on_path); free(bin_rows); free(bin_start); free(present)
        free(marked)
    return nodes[:n_nodes].copy(), counts_out[:n_nodes].copy()
