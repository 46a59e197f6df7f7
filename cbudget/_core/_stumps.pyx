"""BudgetRF's GREEDYTREE (Nan, Wang, Saligrama, ICML 2015, Algorithm 1) on binned data.

A node holding the examples S is split on the feature t of least risk

    R(t) = min over stumps g on t of  max over outcomes i of  c(t) / (F(S) - F(S_i^g))

by its best stump (infinite risk when an outcome does not lower the impurity F); a node
with F(S) = 0, or without a stump of finite risk, is a leaf. Stumps are thresholds
between value bins (the feature's bin edges), drawn at random per node and feature
(``n_stumps`` of them, by node size) or all of them (``exhaustive``). c(t) is the
feature's cost plus its cost group's when the node's path has not touched the group
yet, plus the split cost; with ``path_free`` a feature already tested on the path costs
nothing (it is cached at prediction time).

Impurities: threshold-Pairs (eq. 11; admissible), Gini and entropy (not admissible; for
comparison). Ties: lower risk, then the larger minimum impurity decrease, then the lower
feature, then the lower threshold. The missing-value bin is the highest bin, so missing
values go right; "every value left, missing right" is a stump only when the node's values
stay below the feature's top value bin (there is no edge above it).
"""
from libc.math cimport INFINITY, log
from libc.stdint cimport int32_t, int64_t, uint64_t
from libc.stdlib cimport free
from libc.string cimport memset

import numpy as np

from ._partition cimport split_rows_core
from ._path cimport mark_feature
from ._safety cimport checked_calloc, checked_malloc
from ._types cimport MAX_ROWS_C, X_BINNED_C, node_struct
from ._types import NODE_DTYPE

IMPURITIES = {"threshold_pairs": 0, "gini": 1, "entropy": 2}

# A stump sends a row left when its bin is <= the threshold, which is below 255; missing
# values (the highest bin) go right. split_rows_core, told that bin 255 is missing and
# goes right, makes exactly that partition.
cdef X_BINNED_C HIGHEST_BIN = 255


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


# ---------------------------------------------------------------------------------------
# One tree's inputs, settings and scratch buffers (plain C, read inside nogil)
# ---------------------------------------------------------------------------------------
cdef struct tree_inputs:
    const X_BINNED_C * binned       # Fortran order: feature t of row r at [t * n_samples + r]
    Py_ssize_t n_samples
    Py_ssize_t n_features
    const int32_t * y
    const double * sample_weight    # NULL: every example weighs 1
    const double * feature_costs
    const int32_t * feature_group   # -1: no cost group
    const double * group_costs
    const double * bin_edges
    const int64_t * edges_indptr
    const unsigned char * feature_mask


cdef struct tree_settings:
    int n_classes
    int impurity                    # a value of IMPURITIES
    double alpha
    double split_cost
    bint path_free
    bint exhaustive
    int max_depth                   # -1: no limit
    int min_samples_split
    int stumps_large                # n_stumps
    int stumps_medium
    int stumps_small
    Py_ssize_t size_large           # stump_node_sizes
    Py_ssize_t size_medium


cdef struct stack_entry:            # a node still to grow: rows[start:stop]
    Py_ssize_t start
    Py_ssize_t stop
    int32_t parent
    int depth
    bint is_left


cdef struct tree_scratch:
    int32_t * parent_of             # per node (capacity)
    stack_entry * stack             # capacity
    int32_t * buffer                # n_rows: the row partition's right side
    int32_t * by_bin                # n_rows: a node's rows ordered by bin
    int32_t * bin_rows              # 256: rows per bin of one feature; zero between features
    int32_t * bin_start             # 256
    int32_t * present               # 256: the bins present at a node, sorted
    unsigned char * marked          # 256: partitions to try; zero between features
    double * left                   # n_classes: class counts of a stump's outcomes
    double * right
    unsigned char * on_path         # n_features: tested on the node's path
    unsigned char * group_on_path   # n_groups: touched on the node's path


cdef struct stump:                  # a node's best stump so far
    double risk
    double decrease                 # minimum impurity decrease over the two outcomes
    double cost                     # c(t)
    int32_t feature                 # -1: none of finite risk
    int bin                         # left: bin <= bin


cdef int _allocate_scratch(tree_scratch * s, Py_ssize_t capacity, Py_ssize_t n_rows,
                           int n_classes, Py_ssize_t n_features,
                           Py_ssize_t n_groups) except -1:
    """Allocate every buffer, or raise MemoryError saying which; either way the caller
    frees ``s`` with _free_scratch (its pointers start NULL)."""
    s.parent_of = <int32_t *> checked_malloc(capacity, sizeof(int32_t), "the parent ids")
    s.stack = <stack_entry *> checked_malloc(capacity, sizeof(stack_entry), "the node stack")
    s.buffer = <int32_t *> checked_malloc(n_rows, sizeof(int32_t), "the partition buffer")
    s.by_bin = <int32_t *> checked_malloc(n_rows, sizeof(int32_t), "the rows by bin")
    s.bin_rows = <int32_t *> checked_calloc(256, sizeof(int32_t), "the bin counts")
    s.bin_start = <int32_t *> checked_malloc(256, sizeof(int32_t), "the bin starts")
    s.present = <int32_t *> checked_malloc(256, sizeof(int32_t), "the present bins")
    s.marked = <unsigned char *> checked_calloc(256, 1, "the stump marks")
    s.left = <double *> checked_malloc(n_classes, sizeof(double), "the class counts")
    s.right = <double *> checked_malloc(n_classes, sizeof(double), "the class counts")
    s.on_path = <unsigned char *> checked_calloc(n_features, 1, "the path marks")
    s.group_on_path = <unsigned char *> checked_calloc(n_groups, 1, "the group path marks")
    return 0


cdef void _free_scratch(tree_scratch * s) noexcept:
    free(s.parent_of)
    free(s.stack)
    free(s.buffer)
    free(s.by_bin)
    free(s.bin_rows)
    free(s.bin_start)
    free(s.present)
    free(s.marked)
    free(s.left)
    free(s.right)
    free(s.on_path)
    free(s.group_on_path)


# ---------------------------------------------------------------------------------------
# The parts of GREEDYTREE
# ---------------------------------------------------------------------------------------
cdef double _class_counts(const int32_t * rows, Py_ssize_t n_rows, const int32_t * y,
                          const double * sample_weight, int n_classes,
                          double * counts) noexcept nogil:
    """``counts[k]``: the (weighted) examples of class k among ``rows``; returns their
    total."""
    cdef double total = 0.0, w = 1.0
    cdef Py_ssize_t i, k
    for k in range(n_classes):
        counts[k] = 0.0
    for i in range(n_rows):
        if sample_weight != NULL:
            w = sample_weight[rows[i]]
        counts[y[rows[i]]] += w
        total += w
    return total


cdef inline const X_BINNED_C * _column(const tree_inputs * data,
                                       Py_ssize_t feature) noexcept nogil:
    return &data.binned[feature * data.n_samples]


cdef void _mark_path(int32_t node, const node_struct * nodes, const tree_inputs * data,
                     tree_scratch * s, unsigned char mark) noexcept nogil:
    """Set (1) or clear (0) the marks (``s.on_path``, ``s.group_on_path``) of the
    features and cost groups tested on the path from the root to ``node``."""
    cdef int32_t ancestor = s.parent_of[node]
    while ancestor >= 0:
        mark_feature(nodes[ancestor].feature, data.feature_group, s.on_path,
                     s.group_on_path, mark)
        ancestor = s.parent_of[ancestor]


cdef inline double _feature_cost(Py_ssize_t t, const tree_inputs * data,
                                 const tree_settings * settings,
                                 const tree_scratch * s) noexcept nogil:
    """c(t) at a node whose path is marked in ``s``: the split cost, the feature's cost
    (none with path_free when the path tested it), its group's when the path has not
    touched the group."""
    cdef double cost = settings.split_cost + (
        0.0 if (settings.path_free and s.on_path[t]) else data.feature_costs[t])
    cdef int32_t group = data.feature_group[t]
    if group >= 0 and not s.group_on_path[group]:
        cost += data.group_costs[group]
    return cost


cdef inline Py_ssize_t _count_bins(const X_BINNED_C * column, const int32_t * rows,
                                   Py_ssize_t n_rows, int32_t * bin_rows,
                                   int32_t * present) noexcept nogil:
    """``bin_rows[b]``: the rows in bin b (``bin_rows`` is zero on entry);
    ``present``: the bins with rows, sorted. Returns their number. Small nodes touch
    few bins: nothing here is O(256) per row for them."""
    cdef Py_ssize_t i, n_present = 0
    cdef X_BINNED_C b
    for i in range(n_rows):
        b = column[rows[i]]
        if bin_rows[b] == 0:
            present[n_present] = b
            n_present += 1
        bin_rows[b] += 1
    _sort_bins(present, n_present, bin_rows)
    return n_present


cdef Py_ssize_t _choose_partitions(const int32_t * present, Py_ssize_t n_candidates,
                                   Py_ssize_t top, bint exhaustive, int draws,
                                   unsigned char * marked, uint64_t * rng) noexcept nogil:
    """Mark the candidate partitions (``present[j]`` as threshold, j < n_candidates) to
    try: all, or those of ``draws`` random thresholds in [present[0], top) (a
    threshold's partition is the one of the highest present bin at or below it).
    Returns the highest marked j."""
    cdef Py_ssize_t lo = present[0], last = -1, n_marked = 0, _d, j
    if exhaustive:
        for j in range(n_candidates):
            marked[j] = 1
        return n_candidates - 1
    for _d in range(draws):
        if n_marked == n_candidates:
            break       # every partition drawn: more add nothing
        j = _floor_index(present, n_candidates, lo + _random_below(rng, top - lo))
        if not marked[j]:
            marked[j] = 1
            n_marked += 1
            if j > last:
                last = j
    return last


cdef void _sweep_partitions(
        Py_ssize_t t, const X_BINNED_C * column, const int32_t * rows, Py_ssize_t n_rows,
        Py_ssize_t last, double cost, double f_parent, const double * node_counts,
        const tree_inputs * data, const tree_settings * settings, tree_scratch * s,
        stump * best) noexcept nogil:
    """Try the marked partitions of feature ``t`` (unmarking them): sweep the bins in
    order, moving their rows to the left outcome, and keep the stump of least risk in
    ``best``. Ties: the larger decrease, then (across features, by the callers' order)
    the lower feature, then the lower bin."""
    cdef const int32_t * present = s.present
    cdef const int32_t * bin_rows = s.bin_rows
    cdef int32_t * bin_start = s.bin_start
    cdef int32_t * by_bin = s.by_bin
    cdef unsigned char * marked = s.marked
    cdef double * left = s.left
    cdef double * right = s.right
    cdef const int32_t * y = data.y
    cdef const double * sample_weight = data.sample_weight
    cdef bint weighted = sample_weight != NULL
    cdef int n_classes = settings.n_classes, kind = settings.impurity, k
    cdef double alpha = settings.alpha, f_left, f_right, decrease, risk
    cdef Py_ssize_t i, j, _d, n_sorted = 0, b
    cdef int32_t row
    # the rows up to the last bin to try, ordered by bin (counting sort)
    for j in range(last + 1):
        bin_start[present[j]] = <int32_t> n_sorted
        n_sorted += bin_rows[present[j]]
    for i in range(n_rows):
        b = column[rows[i]]
        if b <= present[last]:
            by_bin[bin_start[b]] = rows[i]
            bin_start[b] += 1
    for k in range(n_classes):
        left[k] = 0.0
    i = 0
    for j in range(last + 1):
        for _d in range(bin_rows[present[j]]):
            row = by_bin[i]
            i += 1
            left[y[row]] += sample_weight[row] if weighted else 1.0
        if not marked[j]:
            continue
        marked[j] = 0
        for k in range(n_classes):
            right[k] = node_counts[k] - left[k]
        f_left = _impurity(left, n_classes, alpha, kind)
        f_right = _impurity(right, n_classes, alpha, kind)
        decrease = f_parent - (f_left if f_left > f_right else f_right)
        if not decrease > 0:
            continue
        risk = cost / decrease
        b = present[j]
        if (risk < best.risk
                or (risk == best.risk and decrease > best.decrease)
                or (risk == best.risk and decrease == best.decrease
                    and t == best.feature and b < best.bin)):
            best.risk, best.decrease, best.cost = risk, decrease, cost
            best.feature, best.bin = <int32_t> t, <int> b


cdef stump _best_stump(const int32_t * rows, Py_ssize_t n_rows, const double * node_counts,
                       double f_parent, const tree_inputs * data,
                       const tree_settings * settings, tree_scratch * s,
                       uint64_t * rng) noexcept nogil:
    """The stump of least risk over the masked-in features (``feature == -1``: none of
    finite risk) of the node holding ``rows``; its path must be marked in ``s``."""
    cdef stump best
    cdef const X_BINNED_C * column
    cdef Py_ssize_t t, j, n_present, n_candidates, top, last
    cdef int draws = (settings.stumps_large if n_rows > settings.size_large else
                      (settings.stumps_medium if n_rows > settings.size_medium
                       else settings.stumps_small))
    best.feature, best.bin = -1, -1
    best.risk, best.decrease, best.cost = INFINITY, 0.0, 0.0
    for t in range(data.n_features):
        if not data.feature_mask[t]:
            continue
        column = _column(data, t)
        n_present = _count_bins(column, rows, n_rows, s.bin_rows, s.present)
        # thresholds are the feature's bin edges: b < its number of edges (the top value
        # bin has none; missing values always go right); candidates: the present bins
        # below top (the j < n_candidates)
        top = min(s.present[n_present - 1],
                  data.edges_indptr[t + 1] - data.edges_indptr[t])
        n_candidates = 0
        while n_candidates < n_present and s.present[n_candidates] < top:
            n_candidates += 1
        if n_candidates > 0:
            last = _choose_partitions(s.present, n_candidates, top, settings.exhaustive,
                                      draws, s.marked, rng)
            _sweep_partitions(t, column, rows, n_rows, last,
                              _feature_cost(t, data, settings, s), f_parent, node_counts,
                              data, settings, s, &best)
        for j in range(n_present):
            s.bin_rows[s.present[j]] = 0
    return best


cdef inline void _push(stack_entry * entry, Py_ssize_t start, Py_ssize_t stop,
                       int32_t parent, int depth, bint is_left) noexcept nogil:
    entry.start, entry.stop = start, stop
    entry.parent, entry.depth, entry.is_left = parent, depth, is_left


cdef void _open_node(node_struct * nodes, int32_t * parent_of, int32_t node,
                     const stack_entry * entry) noexcept nogil:
    """Number the node popped from the stack: link it to its parent, leaf until split."""
    parent_of[node] = entry.parent
    if entry.parent >= 0:
        if entry.is_left:
            nodes[entry.parent].left = node
        else:
            nodes[entry.parent].right = node
    nodes[node].left = nodes[node].right = nodes[node].feature = -1
    nodes[node].depth = entry.depth
    nodes[node].n_samples = <int32_t> (entry.stop - entry.start)


cdef void _set_split(node_struct * node, const stump * best,
                     const tree_inputs * data) noexcept nogil:
    node.feature = best.feature
    node.bin_threshold = <X_BINNED_C> best.bin
    node.default_left = 0
    node.threshold = data.bin_edges[data.edges_indptr[best.feature] + best.bin]
    node.gain = best.decrease
    node.cost_penalty = best.cost


cdef Py_ssize_t _grow_tree(int32_t * rows, Py_ssize_t n_rows, const tree_inputs * data,
                           const tree_settings * settings, tree_scratch * s,
                           node_struct * nodes, double * class_counts,
                           uint64_t * rng) noexcept nogil:
    """Grow the tree depth first from an explicit stack, numbering the nodes in
    pre-order (a node, its left subtree, its right subtree); returns their number."""
    cdef Py_ssize_t n_nodes = 0, n_stack = 1, n_left
    cdef stack_entry entry
    cdef int32_t node
    cdef double f_parent
    cdef double * counts
    cdef stump best
    _push(&s.stack[0], 0, n_rows, -1, 0, False)
    while n_stack > 0:
        n_stack -= 1
        entry = s.stack[n_stack]
        node = <int32_t> n_nodes
        n_nodes += 1
        _open_node(nodes, s.parent_of, node, &entry)
        counts = &class_counts[<Py_ssize_t> node * settings.n_classes]
        nodes[node].sum_hessian = _class_counts(
            &rows[entry.start], entry.stop - entry.start, data.y, data.sample_weight,
            settings.n_classes, counts)
        f_parent = _impurity(counts, settings.n_classes, settings.alpha, settings.impurity)
        if (f_parent <= 0 or (0 <= settings.max_depth <= entry.depth)
                or entry.stop - entry.start < settings.min_samples_split):
            continue
        _mark_path(node, nodes, data, s, 1)
        best = _best_stump(&rows[entry.start], entry.stop - entry.start, counts, f_parent,
                           data, settings, s, rng)
        _mark_path(node, nodes, data, s, 0)
        if best.feature < 0:
            continue
        _set_split(&nodes[node], &best, data)
        n_left = split_rows_core(&rows[entry.start], entry.stop - entry.start,
                                 _column(data, best.feature), 1, best.bin,
                                 False, HIGHEST_BIN, NULL, s.buffer)
        # pre-order: the left child is popped (and numbered) first
        _push(&s.stack[n_stack], entry.start + n_left, entry.stop, node, entry.depth + 1,
              False)
        _push(&s.stack[n_stack + 1], entry.start, entry.start + n_left, node,
              entry.depth + 1, True)
        n_stack += 2
    return n_nodes


# ---------------------------------------------------------------------------------------
# Python entry points
# ---------------------------------------------------------------------------------------
def node_impurity(const double[::1] counts, double alpha=0.0,
                  str impurity="threshold_pairs"):
    """F of a node whose (weighted) examples per class are ``counts``: the kernel's
    impurity, for tests."""
    if impurity not in IMPURITIES:
        raise ValueError(f"impurity must be one of {sorted(IMPURITIES)}, got {impurity!r}")
    if counts.shape[0] == 0:
        raise ValueError("counts needs at least one class")
    return _impurity(&counts[0], counts.shape[0], alpha, IMPURITIES[impurity])


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
    if n_rows > MAX_ROWS_C:
        # node ids are int32 and a tree has up to 2 n_rows - 1 nodes
        raise ValueError(f"{n_rows} rows; a tree is grown on at most {MAX_ROWS_C} (2**30)")
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
    if len(n_stumps) != 3 or min(n_stumps) < 1:
        raise ValueError(f"n_stumps must be three counts >= 1, got {n_stumps!r}")
    if len(stump_node_sizes) != 2:
        raise ValueError(f"stump_node_sizes must be two sizes, got {stump_node_sizes!r}")
    if edges_indptr[0] != 0 or edges_indptr[n_features] > bin_edges.shape[0] \
            or np.any(np.diff(edges_indptr) < 0):
        raise ValueError("edges_indptr must start at 0, be non-decreasing and end within "
                         "bin_edges")

    cdef tree_settings settings
    settings.n_classes, settings.impurity = n_classes, IMPURITIES[impurity]
    settings.alpha, settings.split_cost = alpha, split_cost
    settings.path_free, settings.exhaustive = path_free, exhaustive
    settings.max_depth, settings.min_samples_split = max_depth, min_samples_split
    settings.stumps_large, settings.stumps_medium = n_stumps[0], n_stumps[1]
    settings.stumps_small = n_stumps[2]
    settings.size_large, settings.size_medium = stump_node_sizes[0], stump_node_sizes[1]
    cdef tree_inputs data
    data.binned, data.n_samples, data.n_features = &binned[0, 0], n_samples, n_features
    data.y = &y[0]
    data.sample_weight = &sample_weight[0] if sample_weight is not None else NULL
    data.feature_costs, data.feature_group = &feature_costs[0], &feature_group[0]
    data.group_costs, data.bin_edges = &group_costs[0], &bin_edges[0]
    data.edges_indptr, data.feature_mask = &edges_indptr[0], &feature_mask[0]

    # a split leaves rows on both sides: at most 2 n_rows - 1 nodes
    cdef Py_ssize_t capacity = 2 * n_rows, n_nodes
    nodes = np.zeros(capacity, dtype=NODE_DTYPE)
    counts_out = np.zeros((capacity, n_classes), dtype=np.float64)
    cdef node_struct[::1] nodes_view = nodes
    cdef double[:, ::1] counts_view = counts_out
    cdef uint64_t rng = seed
    cdef tree_scratch scratch
    memset(&scratch, 0, sizeof(scratch))    # NULL pointers: always safe to free
    try:
        _allocate_scratch(&scratch, capacity, n_rows, n_classes, n_features,
                          group_costs.shape[0])
        with nogil:
            n_nodes = _grow_tree(&rows[0], n_rows, &data, &settings, &scratch,
                                 &nodes_view[0], &counts_view[0, 0], &rng)
    finally:
        _free_scratch(&scratch)
    return nodes[:n_nodes].copy(), counts_out[:n_nodes].copy()
