"""Exact path-dependent TreeSHAP (Lundberg et al., "Consistent individualized feature
attribution for tree ensembles", 2018, Algorithm 2): the Shapley values of each input's
features for the trees' sum, where the value of a feature subset ``S`` is the tree's
expectation given ``x_S``: at a split on a feature in ``S`` the input's branch, at any
other split the children weighted by their training cover.

The cover of a node is the caller's (``node_cover``: counts or sums of hessians, see
``TreeEnsemble.cover_field``); a split weights child ``c`` by ``cover[c] / (cover[left] +
cover[right])`` -- the node's own cover in a consistent tree, and still a distribution
where an importer copied a subtree with its statistics (``from_lightgbm``'s rewritten
zero-as-missing splits) -- or 1/2 each when both children have cover 0. The branch an
input follows is prediction's (``child_of``: NaN, and negative values at a categorical
split, follow ``default_left``).

Rows run in parallel (OpenMP), each thread with its own path buffer; each row adds the
trees in order. The entry point checks the arrays and every tree's structure (children
after their parent and inside the tree, split features inside ``X``) before any loop:
the recursion relies on it.
"""
from cython.parallel cimport prange, threadid
from libc.stdint cimport int32_t, int64_t, uint32_t
from libc.stdlib cimport free

import numpy as np

from ._predict cimport child_of
from ._safety cimport check_n_threads, check_offsets, checked_malloc, first_out_of_range_32
from ._types cimport predict_node_struct

# the recursion takes one C call per level on an OpenMP thread's stack (512 kB by default
# on macOS): deeper trees are refused, not crashed on
MAX_DEPTH = 1024

ctypedef fused floating_t:
    float
    double


cdef struct path_element:
    int32_t feature         # -1 for the root's element
    double zero_fraction    # share of the cover that goes this way (feature left out)
    double one_fraction     # 1 when the input goes this way (feature known), else 0
    double weight           # permutation weight of subsets of this size


cdef inline double _split_share(const double * cover, int32_t child,
                                int32_t sibling) noexcept nogil:
    """The share of a split's cover that goes to ``child``."""
    cdef double total = cover[child] + cover[sibling]
    if total > 0:
        return cover[child] / total
    return 0.5


cdef void _extend(path_element * path, int depth, double zero_fraction, double one_fraction,
                  int32_t feature) noexcept nogil:
    """Append a split to the path (``depth`` elements before it) and update the subset
    weights."""
    cdef int i
    path[depth].feature = feature
    path[depth].zero_fraction = zero_fraction
    path[depth].one_fraction = one_fraction
    path[depth].weight = 1.0 if depth == 0 else 0.0
    for i in range(depth - 1, -1, -1):
        path[i + 1].weight += one_fraction * path[i].weight * (i + 1) / (depth + 1.0)
        path[i].weight = zero_fraction * path[i].weight * (depth - i) / (depth + 1.0)


cdef void _unwind(path_element * path, int depth, int index) noexcept nogil:
    """Remove element ``index`` from the path (last element at ``depth``): the inverse
    of :func:`_extend`."""
    cdef double one_fraction = path[index].one_fraction
    cdef double zero_fraction = path[index].zero_fraction
    cdef double next_one = path[depth].weight, tmp
    cdef int i
    for i in range(depth - 1, -1, -1):
        if one_fraction != 0:
            tmp = path[i].weight
            path[i].weight = next_one * (depth + 1) / ((i + 1) * one_fraction)
            next_one = tmp - path[i].weight * zero_fraction * (depth - i) / (depth + 1.0)
        else:
            path[i].weight = path[i].weight * (depth + 1) / (zero_fraction * (depth - i))
    for i in range(index, depth):
        path[i].feature = path[i + 1].feature
        path[i].zero_fraction = path[i + 1].zero_fraction
        path[i].one_fraction = path[i + 1].one_fraction


cdef double _unwound_sum(const path_element * path, int depth, int index) noexcept nogil:
    """The total subset weight of the path without element ``index`` (what
    :func:`_unwind` would leave), without changing the path."""
    cdef double one_fraction = path[index].one_fraction
    cdef double zero_fraction = path[index].zero_fraction
    cdef double next_one = path[depth].weight, total = 0.0, tmp
    cdef int i
    for i in range(depth - 1, -1, -1):
        if one_fraction != 0:
            tmp = next_one * (depth + 1) / ((i + 1) * one_fraction)
            total += tmp
            next_one = path[i].weight - tmp * zero_fraction * (depth - i) / (depth + 1.0)
        elif zero_fraction != 0:
            total += path[i].weight * (depth + 1) / (zero_fraction * (depth - i))
    return total


cdef void _recurse(const predict_node_struct * tree, const double * cover,
                   const double * values, Py_ssize_t n_values, const floating_t * x,
                   const uint32_t * words, double * phi, Py_ssize_t stride, int32_t node,
                   int depth, path_element * parent_path, double zero_fraction,
                   double one_fraction, int32_t feature) noexcept nogil:
    """Add the contributions of the subtree at ``node`` (reached through a split on
    ``feature`` with these fractions) to ``phi[k * stride + m]`` (value ``k``, feature
    ``m``); ``parent_path`` holds the ``depth`` elements above."""
    cdef path_element * path = parent_path + depth + 1
    cdef int i, found, d = depth
    cdef int32_t split, hot, cold
    cdef double w, incoming_zero = 1.0, incoming_one = 1.0
    cdef Py_ssize_t k
    cdef const double * leaf
    for i in range(depth + 1):
        path[i] = parent_path[i]
    _extend(path, d, zero_fraction, one_fraction, feature)
    if tree[node].left == -1:
        leaf = &values[<Py_ssize_t> node * n_values]
        for i in range(1, d + 1):
            w = _unwound_sum(path, d, i) * (path[i].one_fraction - path[i].zero_fraction)
            for k in range(n_values):
                phi[k * stride + path[i].feature] += w * leaf[k]
        return
    split = tree[node].feature
    hot = child_of(&tree[node], x[split], words)
    cold = tree[node].right if hot == tree[node].left else tree[node].left
    # a feature met again: take its earlier split out and fold its fractions in here
    found = -1
    for i in range(1, d + 1):
        if path[i].feature == split:
            found = i
            break
    if found >= 0:
        incoming_zero = path[found].zero_fraction
        incoming_one = path[found].one_fraction
        _unwind(path, d, found)
        d -= 1
    w = _split_share(cover, hot, cold) * incoming_zero
    if w != 0 or incoming_one != 0:     # else every contribution below is 0
        _recurse(tree, cover, values, n_values, x, words, phi, stride, hot, d + 1, path,
                 w, incoming_one, split)
    w = _split_share(cover, cold, hot) * incoming_zero
    if w != 0:
        _recurse(tree, cover, values, n_values, x, words, phi, stride, cold, d + 1, path,
                 w, 0.0, split)


cdef int _check_trees(const predict_node_struct[::1] nodes, const int64_t[::1] tree_offsets,
                      Py_ssize_t n_features, int32_t[::1] depth) except -1:
    """ValueError unless each tree's children come after their parent and inside the
    tree, and its split features are below ``n_features``; fills each node's depth."""
    cdef Py_ssize_t t, n, bad = -1
    cdef int64_t base, size
    with nogil:
        for t in range(tree_offsets.shape[0] - 1):
            base = tree_offsets[t]
            size = tree_offsets[t + 1] - base
            if size == 0:
                continue
            depth[base] = 0
            for n in range(size):
                if nodes[base + n].left == -1:
                    continue
                if not (n < nodes[base + n].left < size and n < nodes[base + n].right < size
                        and nodes[base + n].left != nodes[base + n].right
                        and 0 <= nodes[base + n].feature < n_features):
                    bad = base + n
                    break
                depth[base + nodes[base + n].left] = depth[base + n] + 1
                depth[base + nodes[base + n].right] = depth[base + n] + 1
            if bad >= 0:
                break
    if bad >= 0:
        raise ValueError(f"tree_shap: node {bad} has a child outside its tree (or before "
                         f"it) or splits on a feature outside X")
    return 0


def expected_values(
    const predict_node_struct[::1] nodes,
    const int64_t[::1] tree_offsets,
    const double[::1] node_cover,
    const double[:, ::1] node_values,
    double[:, ::1] out,
):
    """``out[t] =`` tree ``t``'s expectation of ``node_values`` (n_nodes x n_values, the
    leaves' rows) over its leaves, each weighted by the product of the split shares on
    its path (:func:`tree_shap`'s value of the empty feature set). The trees are
    trusted (:func:`tree_shap` checks them)."""
    cdef Py_ssize_t n_trees = tree_offsets.shape[0] - 1, n_values = node_values.shape[1]
    cdef Py_ssize_t t, n, k
    cdef int64_t base, left, right
    cdef double share
    check_offsets(&tree_offsets[0] if tree_offsets.shape[0] else NULL,
                  tree_offsets.shape[0], nodes.shape[0], "expected_values")
    if node_cover.shape[0] != nodes.shape[0] or node_values.shape[0] != nodes.shape[0] \
            or out.shape[0] != n_trees or out.shape[1] != n_values:
        raise ValueError("expected_values: arrays of inconsistent shapes")
    means = np.array(node_values, dtype=np.float64)     # leaves: their own rows
    cdef double[:, ::1] mean = means
    with nogil:
        for t in range(n_trees):
            base = tree_offsets[t]
            # children after their parent: from the last node back, each split's children
            # are done
            for n in range(tree_offsets[t + 1] - 1, base - 1, -1):
                if nodes[n].left == -1:
                    continue
                left = base + nodes[n].left
                right = base + nodes[n].right
                share = _split_share(&node_cover[base], nodes[n].left, nodes[n].right)
                for k in range(n_values):
                    mean[n, k] = share * mean[left, k] + (1.0 - share) * mean[right, k]
            for k in range(n_values):
                out[t, k] = mean[base, k] if tree_offsets[t + 1] > base else 0.0


def tree_shap(
    const floating_t[:, ::1] X,
    const predict_node_struct[::1] nodes,
    const int64_t[::1] tree_offsets,
    const int32_t[::1] tree_columns,
    const double[::1] node_cover,
    const double[:, ::1] node_values,
    double[:, :, ::1] out,
    int n_threads,
    const uint32_t[::1] cat_words=None,
):
    """Add each input's feature contributions to ``out`` (n_samples, n_columns,
    n_features + 1): tree ``t`` adds the contributions to its leaves' ``node_values``
    rows (n_nodes x n_values) in columns ``tree_columns[t] .. + n_values - 1``, feature
    ``m`` at ``out[i, column, m]``. The last entry (the trees' expectations, the bias) is
    the caller's (:func:`expected_values`).

    ``nodes``: the trees back to back in the packed layout with tree-local child ids
    (tree ``t`` is ``nodes[tree_offsets[t]:tree_offsets[t + 1]]``); ``node_cover``: each
    node's training cover (>= 0); ``cat_words``: the categorical splits' bitsets
    (``TreeEnsemble.cat_words``).
    """
    cdef Py_ssize_t n_samples = X.shape[0], n_features = X.shape[1]
    cdef Py_ssize_t n_trees = tree_offsets.shape[0] - 1, n_values = node_values.shape[1]
    cdef Py_ssize_t stride = out.shape[2], i, t
    cdef int max_depth, tid
    cdef Py_ssize_t path_size
    cdef path_element * paths
    cdef path_element * path
    cdef const uint32_t * words = NULL
    check_n_threads(n_threads)
    check_offsets(&tree_offsets[0] if tree_offsets.shape[0] else NULL,
                  tree_offsets.shape[0], nodes.shape[0], "tree_shap")
    if node_cover.shape[0] != nodes.shape[0] or node_values.shape[0] != nodes.shape[0]:
        raise ValueError("tree_shap: node_cover / node_values need one entry per node")
    if out.shape[0] != n_samples or stride != n_features + 1:
        raise ValueError(f"tree_shap: out must have shape ({n_samples}, n_columns, "
                         f"{n_features + 1})")
    if tree_columns.shape[0] != n_trees or (n_trees and first_out_of_range_32(
            &tree_columns[0], n_trees, 0, out.shape[1] - n_values + 1) >= 0):
        raise ValueError(f"tree_shap: tree_columns needs one entry per tree, each with "
                         f"{n_values} columns of out from it")
    cover_values = np.asarray(node_cover)
    if not np.all(np.isfinite(cover_values) & (cover_values >= 0)):
        raise ValueError("tree_shap: node_cover must hold finite numbers >= 0")
    if cat_words is not None and cat_words.shape[0]:
        words = &cat_words[0]
    elif np.any(np.asarray(nodes)["categorical"]):
        raise ValueError("tree_shap: categorical splits need cat_words")
    depths = np.zeros(nodes.shape[0], dtype=np.int32)
    _check_trees(nodes, tree_offsets, n_features, depths)
    if n_samples == 0 or n_trees == 0:
        return
    max_depth = int(depths.max(initial=0))
    if max_depth > MAX_DEPTH:
        raise ValueError(f"tree_shap: a tree {max_depth} levels deep (more than "
                         f"{MAX_DEPTH}): its recursion would overflow a thread's stack")
    # one level's path copies its parent's and adds one element: levels 0..max_depth + 1
    path_size = (max_depth + 2) * (max_depth + 3) // 2
    paths = <path_element *> checked_malloc(n_threads * path_size, sizeof(path_element),
                                            "TreeSHAP paths")
    try:
        for i in prange(n_samples, nogil=True, schedule="static", num_threads=n_threads):
            tid = threadid()
            path = &paths[tid * path_size]
            for t in range(n_trees):
                if tree_offsets[t + 1] == tree_offsets[t]:
                    continue
                # the root's element: feature -1, fractions 1
                _recurse(&nodes[tree_offsets[t]], &node_cover[tree_offsets[t]],
                         &node_values[tree_offsets[t], 0], n_values, &X[i, 0], words,
                         &out[i, tree_columns[t], 0], stride, 0, 0, path, 1.0, 1.0, -1)
    finally:
        free(paths)
