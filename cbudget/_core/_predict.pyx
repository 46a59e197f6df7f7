"""Tree traversal: raw scores, leaf ids, and per-input prediction cost (the cost
model of docs/architecture.md: a feature is paid once per input across all trees, then
cached).

The traversal kernels read the packed ``PREDICT_NODE_DTYPE`` layout (leaf value in
``threshold``; see ``_types.compact_nodes``); training-time updates read full trees.
Rows are processed in blocks, tree by tree, so that one tree stays in cache while a
block of rows walks it; each row still adds the trees in order (same sums).
"""
from cython.parallel cimport prange, threadid
from libc.math cimport isnan
from libc.stdint cimport int32_t, int64_t, uint64_t

from ._types cimport X_BINNED_C, node_struct, predict_node_struct, BITSET_WORD_C

ctypedef fused floating_t:
    float
    double

cdef Py_ssize_t ROW_BLOCK = 64


cdef inline int32_t _leaf_of_row(const predict_node_struct * nodes, const floating_t * x) noexcept nogil:
    cdef int32_t node = 0
    cdef double value
    while nodes[node].left != -1:
        value = x[nodes[node].feature]
        if isnan(value):
            node = nodes[node].left if nodes[node].default_left else nodes[node].right
        elif value <= nodes[node].threshold:
            node = nodes[node].left
        else:
            node = nodes[node].right
    return node


def predict_raw(
    const floating_t[:, ::1] X,
    const predict_node_struct[::1] nodes,
    const int64_t[::1] tree_offsets,
    const int32_t[::1] tree_outputs,
    double[:, ::1] out,
    int n_threads,
):
    """Add each tree's leaf value to ``out[i, tree_outputs[t]]``.

    ``nodes`` holds the trees back to back; tree ``t`` is
    ``nodes[tree_offsets[t]:tree_offsets[t + 1]]`` with tree-local child ids.
    """
    cdef Py_ssize_t n_samples = X.shape[0]
    cdef Py_ssize_t n_trees = tree_offsets.shape[0] - 1
    cdef Py_ssize_t n_blocks = (n_samples + ROW_BLOCK - 1) // ROW_BLOCK
    cdef Py_ssize_t block, i, t, stop
    cdef const predict_node_struct * tree
    if nodes.shape[0] == 0 or n_samples == 0:
        return
    for block in prange(n_blocks, nogil=True, schedule="static", num_threads=n_threads):
        stop = min((block + 1) * ROW_BLOCK, n_samples)
        for t in range(n_trees):
            tree = &nodes[tree_offsets[t]]
            for i in range(block * ROW_BLOCK, stop):
                out[i, tree_outputs[t]] += tree[_leaf_of_row(tree, &X[i, 0])].threshold


def predict_node_rows(
    const floating_t[:, ::1] X,
    const predict_node_struct[::1] nodes,
    const int64_t[::1] tree_offsets,
    const double[:, ::1] node_rows,
    double[:, ::1] out,
    int n_threads,
):
    """Add ``node_rows[n]`` to ``out[i]`` for the leaf ``n`` that input ``i`` reaches in
    each tree (a forest's class counts or votes per leaf; ``n`` is the global node index,
    ``tree_offsets[t]`` + the tree-local id)."""
    cdef Py_ssize_t n_samples = X.shape[0]
    cdef Py_ssize_t n_trees = tree_offsets.shape[0] - 1
    cdef Py_ssize_t n_columns = node_rows.shape[1]
    cdef Py_ssize_t n_blocks = (n_samples + ROW_BLOCK - 1) // ROW_BLOCK
    cdef Py_ssize_t block, i, t, k, stop
    cdef int64_t leaf
    if node_rows.shape[0] != nodes.shape[0] or out.shape[1] != n_columns \
            or out.shape[0] != n_samples:
        raise ValueError("node_rows / out do not match the nodes / inputs")
    if nodes.shape[0] == 0 or n_samples == 0:
        return
    for block in prange(n_blocks, nogil=True, schedule="static", num_threads=n_threads):
        stop = min((block + 1) * ROW_BLOCK, n_samples)
        for t in range(n_trees):
            for i in range(block * ROW_BLOCK, stop):
                leaf = tree_offsets[t] + _leaf_of_row(&nodes[tree_offsets[t]], &X[i, 0])
                for k in range(n_columns):
                    out[i, k] += node_rows[leaf, k]


def predict_leaf(
    const floating_t[:, ::1] X,
    const predict_node_struct[::1] nodes,
    const int64_t[::1] tree_offsets,
    int32_t[:, ::1] out,
    int n_threads,
):
    """``out[i, t]`` = tree-local id of the leaf that input ``i`` reaches in tree ``t``."""
    cdef Py_ssize_t n_samples = X.shape[0]
    cdef Py_ssize_t n_trees = tree_offsets.shape[0] - 1
    cdef Py_ssize_t i, t
    if nodes.shape[0] == 0 or n_samples == 0:
        return
    for i in prange(n_samples, nogil=True, schedule="static", num_threads=n_threads):
        for t in range(n_trees):
            out[i, t] = _leaf_of_row(&nodes[tree_offsets[t]], &X[i, 0])


def predict_binned_add(
    const X_BINNED_C[::1, :] binned,
    const node_struct[::1] tree,
    const X_BINNED_C missing_bin,
    double[:, ::1] raw,
    const int output,
    int n_threads,
):
    """``raw[i, output] += value of the leaf of one tree`` for binned training/eval data
    (exactly equivalent to raw-value traversal for data binned with the training edges).
    """
    cdef Py_ssize_t n_samples = binned.shape[0]
    cdef Py_ssize_t i
    cdef int32_t node
    for i in prange(n_samples, nogil=True, schedule="static", num_threads=n_threads):
        node = 0
        while tree[node].left != -1:
            node = binned_child(&tree[node], binned[i, tree[node].feature], missing_bin)
        raw[i, output] += tree[node].value


def predict_cost(
    const floating_t[:, ::1] X,
    const predict_node_struct[::1] nodes,
    const int64_t[::1] tree_offsets,
    const double[::1] feature_costs,
    const int32_t[::1] feature_group,
    const double[::1] group_costs,
    const double split_cost,
    const double tree_cost,
    double[::1] out_cost,
    BITSET_WORD_C[:, ::1] acquired,
    BITSET_WORD_C[:, ::1] groups_touched,
    int64_t[:, ::1] new_acquisitions,
    int n_threads,
):
    """Per-input prediction cost of the trees, with cached acquisition.

    For each input ``i``, walk every tree in order; at each split node on feature ``m``
    pay ``split_cost``, and, the first time ``m`` is met for this input,
    ``feature_costs[m]`` (set bit ``m`` of ``acquired[i]``), plus ``group_costs[g]`` the
    first time ``m``'s group ``g`` is touched. Each tree adds ``tree_cost``. The costs
    are added to ``out_cost``.

    Parameters
    ----------
    acquired : uint64 array of shape (n_samples, ceil(n_features / 64)), zeroed or holding
        an earlier state (cost already paid), updated in place.
    groups_touched : uint64 array of shape (n_samples, ceil(max(n_groups, 1) / 64)),
        same convention.
    new_acquisitions : int64 array of shape (n_threads, n_nodes) or with 0 rows
        When it has rows, ``new_acquisitions[thread, node]`` counts the inputs that first
        acquired the node's feature at that node (global node index); sum over axis 0.
    """
    cdef Py_ssize_t n_samples = X.shape[0]
    cdef Py_ssize_t n_trees = tree_offsets.shape[0] - 1
    cdef Py_ssize_t i, t
    cdef int32_t node, feature, group
    cdef int64_t offset
    cdef double x, cost
    cdef bint goes_left, count_nodes = new_acquisitions.shape[0] > 0
    cdef int tid
    for i in prange(n_samples, nogil=True, schedule="static", num_threads=n_threads):
        cost = 0.0
        tid = threadid()
        for t in range(n_trees):
            offset = tree_offsets[t]
            cost = cost + tree_cost
            node = 0
            while nodes[offset + node].left != -1:
                feature = nodes[offset + node].feature
                cost = cost + split_cost
                if not (acquired[i, feature >> 6] >> (feature & 63)) & 1:
                    acquired[i, feature >> 6] |= (<uint64_t> 1) << (feature & 63)
                    cost = cost + feature_costs[feature]
                    if count_nodes:
                        new_acquisitions[tid, offset + node] += 1
                    group = feature_group[feature]
                    if group >= 0 and not (groups_touched[i, group >> 6] >> (group & 63)) & 1:
                        groups_touched[i, group >> 6] |= (<uint64_t> 1) << (group & 63)
                        cost = cost + group_costs[group]
                x = X[i, feature]
                if isnan(x):
                    goes_left = nodes[offset + node].default_left
                else:
                    goes_left = x <= nodes[offset + node].threshold
                node = nodes[offset + node].left if goes_left else nodes[offset + node].right
        out_cost[i] += cost
