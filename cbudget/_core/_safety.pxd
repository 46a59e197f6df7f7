# What the kernels' Python entry points check before they go into code compiled with
# boundscheck=False (docs/architecture.md, "Limits"): allocations that raise a
# MemoryError naming what failed, thread counts, index arrays in range, trees whose
# children and features are in range.
from libc.stdint cimport SIZE_MAX, int32_t, int64_t, uint32_t
from libc.stdlib cimport calloc, malloc

from ._types cimport node_struct


cdef inline void * checked_malloc(Py_ssize_t count, size_t size, str what) except NULL:
    """``malloc(max(count, 1) * size)``, or MemoryError saying what and how big. Call
    with the GIL; free with ``free``."""
    cdef size_t n = <size_t> max(count, 1)
    cdef void * p = NULL
    if size == 0 or n <= SIZE_MAX // size:
        p = malloc(n * size)
    if p == NULL:
        raise MemoryError(f"cannot allocate {what}: {n} x {size} bytes")
    return p


cdef inline void * checked_calloc(Py_ssize_t count, size_t size, str what) except NULL:
    """``calloc(max(count, 1), size)`` (zeroed), or MemoryError saying what and how big."""
    cdef size_t n = <size_t> max(count, 1)
    cdef void * p = calloc(n, size)
    if p == NULL:
        raise MemoryError(f"cannot allocate {what}: {n} x {size} bytes")
    return p


cdef inline int check_n_threads(int n_threads) except -1:
    """OpenMP's num_threads must be positive (libgomp aborts the process on a negative
    one)."""
    if n_threads < 1:
        raise ValueError(f"n_threads must be >= 1, got {n_threads}")
    return 0


cdef inline Py_ssize_t first_out_of_range_32(const int32_t * values, Py_ssize_t n,
                                             Py_ssize_t low, Py_ssize_t stop) noexcept nogil:
    """Index of the first ``values[i]`` outside ``[low, stop)``, -1 when none is."""
    cdef Py_ssize_t i
    for i in range(n):
        if values[i] < low or values[i] >= stop:
            return i
    return -1


cdef inline int check_rows_in_range(const int32_t[::1] rows, Py_ssize_t n_samples) except -1:
    """ValueError naming the first of ``rows`` outside ``[0, n_samples)``."""
    cdef Py_ssize_t bad
    if rows.shape[0] == 0:
        return 0
    with nogil:
        bad = first_out_of_range_32(&rows[0], rows.shape[0], 0, n_samples)
    if bad >= 0:
        raise ValueError(f"rows[{bad}] = {rows[bad]} is out of range for {n_samples} samples")
    return 0


cdef inline Py_ssize_t first_out_of_range_64(const int64_t * values, Py_ssize_t n,
                                             Py_ssize_t low, Py_ssize_t stop) noexcept nogil:
    """Index of the first ``values[i]`` outside ``[low, stop)``, -1 when none is."""
    cdef Py_ssize_t i
    for i in range(n):
        if values[i] < low or values[i] >= stop:
            return i
    return -1


cdef inline Py_ssize_t first_bad_node(const node_struct * tree, Py_ssize_t n_nodes,
                                      Py_ssize_t n_features) noexcept nogil:
    """Index of the first node of one tree (NODE_DTYPE, tree-local children) that is
    neither a leaf (``left == -1``) nor a split on a feature in ``[0, n_features)`` with
    both children after it and inside the tree; -1 when every node is fine. Children
    after their parent: a walk from the root ends at a leaf."""
    cdef Py_ssize_t k
    for k in range(n_nodes):
        if tree[k].left == -1:
            continue
        if not (k < tree[k].left < n_nodes and k < tree[k].right < n_nodes
                and 0 <= tree[k].feature < n_features):
            return k
    return -1


cdef inline int check_bitset(const uint32_t[::1] bitset, str what) except -1:
    """ValueError unless ``bitset`` (None: no bitset) is a length word ``n`` followed
    by exactly ``n`` words (_bitset.pxd)."""
    if bitset is not None and not (bitset.shape[0] >= 1
                                   and <Py_ssize_t> bitset[0] == bitset.shape[0] - 1):
        raise ValueError(f"{what} must be a length word n followed by n words")
    return 0


cdef inline const uint32_t * checked_bin_words(const node_struct[::1] tree,
                                               const uint32_t[::1] bin_words) except? NULL:
    """The bin bitsets of a grown tree's categorical splits (``GrownTree.cat_bin_words``;
    None: none), after checking that every categorical node's bitset (its length word
    at ``cat_bins_at``, then that many words) lies within them: ValueError otherwise."""
    cdef Py_ssize_t k, n_words = bin_words.shape[0] if bin_words is not None else 0
    for k in range(tree.shape[0]):
        if tree[k].left != -1 and tree[k].categorical and not (
                tree[k].cat_bins_at < n_words
                and tree[k].cat_bins_at + 1 + <Py_ssize_t> bin_words[tree[k].cat_bins_at]
                <= n_words):
            raise ValueError(f"tree node {k}: a categorical split whose bin bitset is not "
                             f"within the {n_words} bin words given (cat_bin_words)")
    return &bin_words[0] if n_words else NULL


cdef inline int check_offsets(const int64_t * offsets, Py_ssize_t n_offsets,
                              Py_ssize_t n_nodes, str what) except -1:
    """``offsets`` (n_trees + 1) split ``n_nodes`` nodes into non-empty trees: starts at
    0, strictly increasing, ends at ``n_nodes``. ValueError naming ``what`` otherwise."""
    cdef Py_ssize_t t
    if n_offsets < 1 or offsets[0] != 0 or offsets[n_offsets - 1] != n_nodes:
        raise ValueError(f"{what}: tree_offsets must start at 0 and end at the number of "
                         f"nodes ({n_nodes})")
    for t in range(n_offsets - 1):
        if offsets[t + 1] <= offsets[t]:
            raise ValueError(f"{what}: tree_offsets must be strictly increasing "
                             f"(tree {t} is empty or reversed)")
    return 0
