"""Tree traversal: raw scores, leaf ids, and per-input prediction cost (the cost
model of docs/architecture.md: a feature is paid once per input across all trees, then
cached).

The traversal kernels read the packed ``PREDICT_NODE_DTYPE`` layout (leaf value in
``threshold``; see ``_types.compact_nodes``); training-time updates read full trees. A
categorical split (``categorical`` set) reads its bitset in ``cat_words`` (the model's
``TreeEnsemble.cat_words``, an optional argument of every kernel that walks raw values)
at offset ``threshold``: ``child_of`` in ``_predict.pxd``; on binned data, its
bitset in the grown tree's ``cat_bin_words`` (``binned_child``).
Rows are processed in blocks, tree by tree, so that one tree stays in cache while a
block of rows walks it; each row still adds the trees in order (same sums). Rows are
indexed with Py_ssize_t: prediction has no row limit.

Every entry point checks the shapes of its arrays, the tree offsets and outputs, and
the index arrays it is given (rows, leaves) before any loop, and raises ValueError
otherwise. The nodes themselves (child ids, split features below ``X.shape[1]``) are
trusted here -- checking them would cost a pass over every node per call, more than
predicting one input: the model classes make them (training) or check them (loading a
model file, and X's number of features). The training-time kernels on NODE_DTYPE trees
(``predict_binned_add``) check their one tree.
"""
from cython.parallel cimport prange, threadid
from libc.stdint cimport int32_t, int64_t, uint8_t, uint32_t, uint64_t

import numpy as np

from ._safety cimport (
    check_n_threads, check_offsets, checked_bin_words, first_bad_node, first_out_of_range_32,
    first_out_of_range_64)
from ._types cimport binned_t, node_struct, predict_node_struct, BITSET_WORD_C

ctypedef fused floating_t:
    float
    double

cdef Py_ssize_t ROW_BLOCK = 64


cdef int _check_outputs(const int32_t[::1] tree_outputs, Py_ssize_t n_trees,
                        Py_ssize_t n_outputs) except -1:
    if tree_outputs.shape[0] != n_trees:
        raise ValueError(f"tree_outputs has {tree_outputs.shape[0]} entries for "
                         f"{n_trees} trees")
    if n_trees and first_out_of_range_32(&tree_outputs[0], n_trees, 0, n_outputs) >= 0:
        raise ValueError(f"tree_outputs must be columns of out, in [0, {n_outputs})")
    return 0


cdef int _check_leaves(const int32_t[:, ::1] leaves, const int64_t[::1] tree_offsets,
                       str what) except -1:
    """``leaves[i, t]`` is a node of tree ``t`` (offsets already checked)."""
    cdef Py_ssize_t i, t, bad = -1
    with nogil:
        for i in range(leaves.shape[0]):
            for t in range(leaves.shape[1]):
                if not 0 <= leaves[i, t] < tree_offsets[t + 1] - tree_offsets[t]:
                    bad = i
                    break
            if bad >= 0:
                break
    if bad >= 0:
        raise ValueError(f"{what}: leaves[{bad}] holds a node outside its tree")
    return 0


cdef inline int32_t _leaf_of_row(const predict_node_struct * nodes, const floating_t * x,
                                 const uint32_t * cat_words) noexcept nogil:
    cdef int32_t node = 0
    while nodes[node].left != -1:
        node = child_of(&nodes[node], x[nodes[node].feature], cat_words)
    return node


cdef const uint32_t * _words(const uint32_t[::1] cat_words):
    """The categorical splits' bitsets (``TreeEnsemble.cat_words``): a packed node with
    ``categorical`` set reads its bitset at ``cat_words[threshold]``. NULL for None (or
    empty): the nodes must then be numeric (the model classes see to it)."""
    if cat_words is None or cat_words.shape[0] == 0:
        return NULL
    return &cat_words[0]


def predict_raw(
    const floating_t[:, ::1] X,
    const predict_node_struct[::1] nodes,
    const int64_t[::1] tree_offsets,
    const int32_t[::1] tree_outputs,
    double[:, ::1] out,
    int n_threads,
    const uint32_t[::1] cat_words=None,
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
    cdef const uint32_t * words = _words(cat_words)
    check_n_threads(n_threads)
    check_offsets(&tree_offsets[0] if tree_offsets.shape[0] else NULL,
                  tree_offsets.shape[0], nodes.shape[0], "predict_raw")
    if out.shape[0] != n_samples:
        raise ValueError(f"out has {out.shape[0]} rows for {n_samples} inputs")
    _check_outputs(tree_outputs, n_trees, out.shape[1])
    if nodes.shape[0] == 0 or n_samples == 0:
        return
    for block in prange(n_blocks, nogil=True, schedule="static", num_threads=n_threads):
        stop = min((block + 1) * ROW_BLOCK, n_samples)
        for t in range(n_trees):
            tree = &nodes[tree_offsets[t]]
            for i in range(block * ROW_BLOCK, stop):
                out[i, tree_outputs[t]] += tree[_leaf_of_row(tree, &X[i, 0], words)].threshold


cdef inline bint _exits(const double[:, ::1] out, Py_ssize_t i, double lower, double upper,
                        bint gap) noexcept nogil:
    """Whether scores ``out[i]`` leave: output 0 outside ``[lower, upper]`` (``gap``
    False), or the two largest outputs more than ``upper`` apart (``gap`` True)."""
    cdef Py_ssize_t k
    cdef double first, second, v
    if not gap:
        return out[i, 0] < lower or out[i, 0] > upper
    first = out[i, 0]
    second = out[i, 1]
    if second > first:
        first, second = second, first
    for k in range(2, out.shape[1]):
        v = out[i, k]
        if v > first:
            second = first
            first = v
        elif v > second:
            second = v
    return first - second > upper


def predict_raw_exits(
    const floating_t[:, ::1] X,
    const predict_node_struct[::1] nodes,
    const int64_t[::1] tree_offsets,
    const int32_t[::1] tree_outputs,
    const int64_t[::1] check_after,
    const double[::1] lower,
    const double[::1] upper,
    bint gap,
    double[:, ::1] out,
    int64_t[::1] trees_evaluated,
    int n_threads,
    const uint8_t[::1] leaf_holds=None,
    const uint32_t[::1] cat_words=None,
):
    """``predict_raw`` with exits: after ``check_after[k]`` trees (ascending, in
    ``[1, n_trees)``), an input whose scores ``_exits`` at ``(lower[k], upper[k])`` stops.
    ``trees_evaluated[i]``: the trees input ``i`` evaluated (``n_trees`` if it never
    left). The sums are ``predict_raw``'s, tree by tree in order.

    ``leaf_holds`` (one flag per node, :func:`path_holds`), optional: an input that has
    reached a flagged leaf in a tree before a check does not exit there (it is *held*:
    it has paid for a feature the rules keep it for)."""
    cdef Py_ssize_t n_samples = X.shape[0]
    cdef Py_ssize_t n_trees = tree_offsets.shape[0] - 1
    cdef Py_ssize_t n_checks = check_after.shape[0]
    cdef Py_ssize_t n_blocks = (n_samples + ROW_BLOCK - 1) // ROW_BLOCK
    cdef Py_ssize_t block, i, t, k, stop
    cdef int32_t leaf
    cdef const predict_node_struct * tree
    cdef bint holding = leaf_holds is not None
    if holding and leaf_holds.shape[0] != nodes.shape[0]:
        raise ValueError(f"leaf_holds has {leaf_holds.shape[0]} entries for "
                         f"{nodes.shape[0]} nodes")
    held_rows = np.zeros(n_samples if holding else 0, dtype=np.uint8)
    cdef uint8_t[::1] held = held_rows
    cdef const uint32_t * words = _words(cat_words)
    check_n_threads(n_threads)
    check_offsets(&tree_offsets[0] if tree_offsets.shape[0] else NULL,
                  tree_offsets.shape[0], nodes.shape[0], "predict_raw_exits")
    if out.shape[0] != n_samples or trees_evaluated.shape[0] != n_samples:
        raise ValueError(f"out / trees_evaluated need one row per input ({n_samples})")
    _check_outputs(tree_outputs, n_trees, out.shape[1])
    if lower.shape[0] != n_checks or upper.shape[0] != n_checks:
        raise ValueError("lower / upper need one entry per check")
    for k in range(n_checks):
        if not 1 <= check_after[k] < n_trees or (k and check_after[k] <= check_after[k - 1]):
            raise ValueError(f"check_after must ascend within [1, {n_trees})")
    if gap and out.shape[1] < 2:
        raise ValueError("the gap rule needs two outputs or more")
    trees_evaluated[:] = n_trees
    if nodes.shape[0] == 0 or n_samples == 0:
        return
    for block in prange(n_blocks, nogil=True, schedule="static", num_threads=n_threads):
        stop = min((block + 1) * ROW_BLOCK, n_samples)
        k = 0
        for t in range(n_trees):
            tree = &nodes[tree_offsets[t]]
            for i in range(block * ROW_BLOCK, stop):
                if trees_evaluated[i] > t:
                    leaf = _leaf_of_row(tree, &X[i, 0], words)
                    out[i, tree_outputs[t]] += tree[leaf].threshold
                    if holding:
                        held[i] |= leaf_holds[tree_offsets[t] + leaf]
            if k < n_checks and check_after[k] == t + 1:
                for i in range(block * ROW_BLOCK, stop):
                    if trees_evaluated[i] > t and not (holding and held[i]) \
                            and _exits(out, i, lower[k], upper[k], gap):
                        trees_evaluated[i] = t + 1
                k = k + 1


def path_holds(
    const predict_node_struct[::1] nodes,
    const int64_t[::1] tree_offsets,
    const uint8_t[::1] feature_held,
    uint8_t[::1] out,
):
    """``out[n]`` = 1 when the path from node ``n``'s root to it splits on a feature
    ``m`` with ``feature_held[m]``, else 0 (per node; what ``predict_raw_exits`` reads at
    the leaves). The children of a node come after it within its tree (as the model
    classes check), so one pass in order sets them."""
    cdef Py_ssize_t n_trees = tree_offsets.shape[0] - 1
    cdef Py_ssize_t t, n, bad = -1
    cdef int64_t base
    cdef int32_t feature
    cdef uint8_t flag
    check_offsets(&tree_offsets[0] if tree_offsets.shape[0] else NULL,
                  tree_offsets.shape[0], nodes.shape[0], "path_holds")
    if out.shape[0] != nodes.shape[0]:
        raise ValueError(f"out has {out.shape[0]} entries for {nodes.shape[0]} nodes")
    with nogil:
        for t in range(n_trees):
            base = tree_offsets[t]
            out[base] = 0
            for n in range(base, tree_offsets[t + 1]):
                if nodes[n].left == -1:
                    continue
                feature = nodes[n].feature
                if not 0 <= feature < feature_held.shape[0] \
                        or not 0 < nodes[n].left < tree_offsets[t + 1] - base \
                        or not 0 < nodes[n].right < tree_offsets[t + 1] - base:
                    bad = n
                    break
                flag = out[n] | (feature_held[feature] != 0)
                out[base + nodes[n].left] = flag
                out[base + nodes[n].right] = flag
            if bad >= 0:
                break
    if bad >= 0:
        raise ValueError(f"path_holds: node {bad} splits on a feature outside "
                         f"feature_held or has a child outside its tree")


def trees_until_held(
    const floating_t[:, ::1] X,
    const predict_node_struct[::1] nodes,
    const int64_t[::1] tree_offsets,
    const uint8_t[::1] leaf_holds,
    int64_t[::1] out,
    int n_threads,
    const uint32_t[::1] cat_words=None,
):
    """``out[i]``: the number of trees after which input ``i`` is held -- ``t + 1`` for
    the first tree ``t`` in which it reaches a leaf flagged in ``leaf_holds``
    (:func:`path_holds`) -- or ``n_trees + 1`` when it never is."""
    cdef Py_ssize_t n_samples = X.shape[0]
    cdef Py_ssize_t n_trees = tree_offsets.shape[0] - 1
    cdef Py_ssize_t i, t
    cdef const uint32_t * words = _words(cat_words)
    check_n_threads(n_threads)
    check_offsets(&tree_offsets[0] if tree_offsets.shape[0] else NULL,
                  tree_offsets.shape[0], nodes.shape[0], "trees_until_held")
    if leaf_holds.shape[0] != nodes.shape[0] or out.shape[0] != n_samples:
        raise ValueError("leaf_holds needs one entry per node, out one per input")
    out[:] = n_trees + 1
    for i in prange(n_samples, nogil=True, schedule="static", num_threads=n_threads):
        for t in range(n_trees):
            if leaf_holds[tree_offsets[t] + _leaf_of_row(&nodes[tree_offsets[t]], &X[i, 0], words)]:
                out[i] = t + 1
                break


def predict_node_rows(
    const floating_t[:, ::1] X,
    const predict_node_struct[::1] nodes,
    const int64_t[::1] tree_offsets,
    const double[:, ::1] node_rows,
    double[:, ::1] out,
    int n_threads,
    const uint32_t[::1] cat_words=None,
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
    cdef const uint32_t * words = _words(cat_words)
    check_n_threads(n_threads)
    if node_rows.shape[0] != nodes.shape[0] or out.shape[1] != n_columns \
            or out.shape[0] != n_samples:
        raise ValueError("node_rows / out do not match the nodes / inputs")
    check_offsets(&tree_offsets[0] if tree_offsets.shape[0] else NULL,
                  tree_offsets.shape[0], nodes.shape[0], "predict_node_rows")
    if nodes.shape[0] == 0 or n_samples == 0:
        return
    for block in prange(n_blocks, nogil=True, schedule="static", num_threads=n_threads):
        stop = min((block + 1) * ROW_BLOCK, n_samples)
        for t in range(n_trees):
            for i in range(block * ROW_BLOCK, stop):
                leaf = tree_offsets[t] + _leaf_of_row(&nodes[tree_offsets[t]], &X[i, 0], words)
                for k in range(n_columns):
                    out[i, k] += node_rows[leaf, k]


def predict_leaf(
    const floating_t[:, ::1] X,
    const predict_node_struct[::1] nodes,
    const int64_t[::1] tree_offsets,
    int32_t[:, ::1] out,
    int n_threads,
    const uint32_t[::1] cat_words=None,
):
    """``out[i, t]`` = tree-local id of the leaf that input ``i`` reaches in tree ``t``."""
    cdef Py_ssize_t n_samples = X.shape[0]
    cdef Py_ssize_t n_trees = tree_offsets.shape[0] - 1
    cdef Py_ssize_t n_blocks = (n_samples + ROW_BLOCK - 1) // ROW_BLOCK
    cdef Py_ssize_t block, i, t, stop
    cdef const uint32_t * words = _words(cat_words)
    check_n_threads(n_threads)
    check_offsets(&tree_offsets[0] if tree_offsets.shape[0] else NULL,
                  tree_offsets.shape[0], nodes.shape[0], "predict_leaf")
    if out.shape[0] != n_samples or out.shape[1] != n_trees:
        raise ValueError(f"out must have shape ({n_samples}, {n_trees}), one column per "
                         f"tree")
    if nodes.shape[0] == 0 or n_samples == 0:
        return
    for block in prange(n_blocks, nogil=True, schedule="static", num_threads=n_threads):
        stop = min((block + 1) * ROW_BLOCK, n_samples)
        for t in range(n_trees):
            for i in range(block * ROW_BLOCK, stop):
                out[i, t] = _leaf_of_row(&nodes[tree_offsets[t]], &X[i, 0], words)


def predict_binned_add(
    const binned_t[::1, :] binned,
    const node_struct[::1] tree,
    const int missing_bin,
    double[:, :] raw,
    const int output,
    int n_threads,
    const uint32_t[::1] cat_bin_words=None,
):
    """``raw[i, output] += value of the leaf of one tree`` for binned training/eval data
    (exactly equivalent to raw-value traversal for data binned with the training edges).
    ``cat_bin_words``: the bin bitsets of the tree's categorical splits (a grown tree's
    ``cat_bin_words``). ValueError when ``raw`` or ``output`` does not match ``binned``,
    or a node of ``tree`` is neither a leaf nor a split on a column of ``binned`` with
    both children after it in the tree (and, if categorical, its bitset in
    ``cat_bin_words``).
    """
    cdef Py_ssize_t n_samples = binned.shape[0]
    cdef Py_ssize_t i, bad
    cdef int32_t node
    check_n_threads(n_threads)
    if raw.shape[0] != n_samples or not 0 <= output < raw.shape[1]:
        raise ValueError(f"raw (shape ({raw.shape[0]}, {raw.shape[1]})) and output {output} "
                         f"do not "
                         f"match the {n_samples} rows of binned")
    if tree.shape[0] == 0:
        raise ValueError("tree has no nodes")
    with nogil:
        bad = first_bad_node(&tree[0], tree.shape[0], binned.shape[1])
    if bad >= 0:
        raise ValueError(f"tree node {bad}: children must come after it within the tree, "
                         f"and its feature must be a column of binned")
    cdef const uint32_t * bin_words = checked_bin_words(tree, cat_bin_words)
    for i in prange(n_samples, nogil=True, schedule="static", num_threads=n_threads):
        node = 0
        while tree[node].left != -1:
            node = binned_child(&tree[node], binned[i, tree[node].feature], missing_bin,
                                bin_words)
        raw[i, output] += tree[node].value


def _lacking_features(const predict_node_struct[::1] nodes,
                      const BITSET_WORD_C[:, ::1] acquired):
    """Per input, how many of the features the trees split on it has not acquired."""
    arr = np.asarray(nodes)
    used = np.unique(arr["feature"][arr["left"] != -1]).astype(np.int32)
    lacking = np.full(acquired.shape[0], used.shape[0], dtype=np.int32)
    cdef int32_t[::1] out = lacking
    cdef const int32_t[::1] features = used
    cdef Py_ssize_t i, j
    cdef int32_t f
    with nogil:
        for i in range(acquired.shape[0]):
            for j in range(features.shape[0]):
                f = features[j]
                out[i] -= (acquired[i, f >> 6] >> (f & 63)) & 1
    return lacking


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
    const int64_t[::1] row_tree_end=None,
    const uint32_t[::1] cat_words=None,
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
    row_tree_end : int64 array of shape (n_samples,), optional
        Input ``i`` evaluates only trees ``0 .. row_tree_end[i] - 1`` (it exited there:
        see ``predict_raw_exits``); None: every tree.
    """
    cdef Py_ssize_t n_samples = X.shape[0]
    cdef Py_ssize_t n_trees = tree_offsets.shape[0] - 1
    cdef Py_ssize_t i, t, block, stop
    cdef Py_ssize_t n_blocks = (n_samples + ROW_BLOCK - 1) // ROW_BLOCK
    cdef int32_t node, feature, group
    cdef int64_t offset
    cdef double cost
    cdef bint count_nodes = new_acquisitions.shape[0] > 0
    cdef int tid
    cdef Py_ssize_t n_features = X.shape[1], n_groups = group_costs.shape[0]
    cdef const uint32_t * words = _words(cat_words)
    check_n_threads(n_threads)
    check_offsets(&tree_offsets[0] if tree_offsets.shape[0] else NULL,
                  tree_offsets.shape[0], nodes.shape[0], "predict_cost")
    if feature_costs.shape[0] < n_features or feature_group.shape[0] != feature_costs.shape[0]:
        raise ValueError(f"feature_costs / feature_group need one entry per feature of X "
                         f"({n_features})")
    if feature_group.shape[0] and first_out_of_range_32(
            &feature_group[0], feature_group.shape[0], -1, n_groups) >= 0:
        raise ValueError(f"feature_group must hold groups in [-1, {n_groups})")
    if (out_cost.shape[0] != n_samples or acquired.shape[0] != n_samples
            or groups_touched.shape[0] != n_samples):
        raise ValueError(f"out_cost / acquired / groups_touched need one row per input "
                         f"({n_samples})")
    if acquired.shape[1] * 64 < feature_costs.shape[0] or groups_touched.shape[1] * 64 < n_groups:
        raise ValueError("acquired / groups_touched have too few words per row for the "
                         "features / groups")
    if count_nodes and (new_acquisitions.shape[0] < n_threads
                        or new_acquisitions.shape[1] != nodes.shape[0]):
        raise ValueError(f"new_acquisitions must have shape (n_threads, n_nodes) = "
                         f"({n_threads}, {nodes.shape[0]}) or no rows")
    cdef bint all_trees = row_tree_end is None
    if not all_trees:
        if row_tree_end.shape[0] != n_samples:
            raise ValueError(f"row_tree_end has {row_tree_end.shape[0]} entries for "
                             f"{n_samples} inputs")
        if n_samples and first_out_of_range_64(&row_tree_end[0], n_samples, 0,
                                               n_trees + 1) >= 0:
            raise ValueError(f"row_tree_end must hold tree counts in [0, {n_trees}]")
    if n_samples == 0:
        return
    # each row's cost summed over the trees in order, as one row at a time would; the
    # rows of a block walk a tree together (the trees stay in cache)
    partial_costs = np.zeros(n_samples)
    cdef double[::1] partial = partial_costs
    # Without a split cost, an input that holds every feature the trees split on pays
    # only tree_cost from there on: its walks are skipped (large ensembles saturate).
    cdef bint may_skip = split_cost == 0.0
    lacking = _lacking_features(nodes, acquired) if may_skip else np.zeros(1, np.int32)
    cdef int32_t[::1] n_lacking = lacking
    for block in prange(n_blocks, nogil=True, schedule="static", num_threads=n_threads):
        tid = threadid()
        stop = min((block + 1) * ROW_BLOCK, n_samples)
        for t in range(n_trees):
            offset = tree_offsets[t]
            for i in range(block * ROW_BLOCK, stop):
                if not all_trees and t >= row_tree_end[i]:
                    continue
                cost = partial[i] + tree_cost
                if may_skip and n_lacking[i] == 0:
                    partial[i] = cost
                    continue
                node = 0
                while nodes[offset + node].left != -1:
                    feature = nodes[offset + node].feature
                    cost = cost + split_cost
                    if not (acquired[i, feature >> 6] >> (feature & 63)) & 1:
                        acquired[i, feature >> 6] |= (<uint64_t> 1) << (feature & 63)
                        cost = cost + feature_costs[feature]
                        if may_skip:
                            n_lacking[i] -= 1
                        if count_nodes:
                            new_acquisitions[tid, offset + node] += 1
                        group = feature_group[feature]
                        if group >= 0 and not (groups_touched[i, group >> 6] >> (group & 63)) & 1:
                            groups_touched[i, group >> 6] |= (<uint64_t> 1) << (group & 63)
                            cost = cost + group_costs[group]
                    node = child_of(&nodes[offset + node], X[i, feature], words)
                partial[i] = cost
        for i in range(block * ROW_BLOCK, stop):
            out_cost[i] += partial[i]



def walk_step(
    const double[:, ::1] X,
    uint8_t[:, ::1] status,
    const predict_node_struct[::1] nodes,
    const int64_t[::1] tree_offsets,
    const int64_t[::1] rows,
    int32_t[:, ::1] node_of,
    int32_t[:, ::1] cursor,
    int32_t[:, ::1] tree_of,
    int32_t[::1] n_todo,
    int64_t[::1] live,
    Py_ssize_t n_live,
    int32_t[:, ::1] needs,
    int32_t[::1] n_needs,
    int64_t[::1] feature_indptr,
    int64_t[::1] request_rows,
    int n_threads,
    const uint32_t[::1] cat_words=None,
):
    """One step of on-demand traversal: walk each input down all its unfinished trees as
    far as its known features allow, then list the features the blocked trees need.

    ``nodes``: the trees back to back with *global* child ids (tree ``t`` starts at
    ``tree_offsets[t]``). Input ``i`` is row ``rows[i]`` of ``X``; its unfinished trees
    are ``tree_of[i, :n_todo[i]]``, at the nodes ``cursor[i, :n_todo[i]]``; the inputs
    with unfinished trees are ``live[:n_live]`` (ascending). ``status[r, m]``: 0 when
    feature ``m`` of row ``r`` is unknown, 1 when ``X[r, m]`` holds it, 2 when it is
    already requested. An input moves exactly as prediction does (NaN: the default
    direction) while the feature of its node is known; a tree is then finished (its
    tree-local leaf goes to ``node_of[i, t]``) or blocked. Each unknown feature a blocked
    tree needs is marked requested (``needs``: per input, capacity
    ``min(n_trees, n_features)``).

    The shapes, ``rows`` (rows of ``X``), ``live[:n_live]`` (inputs) and ``n_todo``
    (at most n_trees) are checked; ``cursor`` and ``tree_of`` are the walk's own state
    (set up by ``on_demand.walk_trees``, then kept by this function) and trusted like the
    nodes.

    On return ``live[:n]`` holds the inputs still walking, and the rows that need
    feature ``m`` are ``request_rows[feature_indptr[m]:feature_indptr[m + 1]]``
    (ascending; each (row, feature) once).

    Returns
    -------
    (n, number of requests)
    """
    cdef Py_ssize_t n_features = status.shape[1]
    cdef Py_ssize_t a, i, k, j, kept, n_new, n_still = 0, bad_rows, bad_live, bad_todo
    cdef int64_t r, total
    cdef int32_t t, node, feature
    cdef Py_ssize_t n_inputs = rows.shape[0], n_trees = tree_offsets.shape[0] - 1
    cdef const uint32_t * words = _words(cat_words)
    check_n_threads(n_threads)
    if node_of.shape[0] != n_inputs or cursor.shape[0] != n_inputs \
            or tree_of.shape[0] != n_inputs or cursor.shape[1] != node_of.shape[1] \
            or tree_of.shape[1] != node_of.shape[1] \
            or node_of.shape[1] != n_trees \
            or n_todo.shape[0] != n_inputs or n_needs.shape[0] != n_inputs \
            or needs.shape[0] != n_inputs \
            or feature_indptr.shape[0] != n_features + 1 or status.shape[0] != X.shape[0] \
            or status.shape[1] != X.shape[1] or not 0 <= n_live <= live.shape[0] \
            or needs.shape[1] < min(node_of.shape[1], n_features) \
            or request_rows.shape[0] < n_inputs * needs.shape[1]:
        raise ValueError("walk_step: arrays of inconsistent shapes")
    check_offsets(&tree_offsets[0] if tree_offsets.shape[0] else NULL,
                  tree_offsets.shape[0], nodes.shape[0], "walk_step")
    with nogil:
        bad_rows = first_out_of_range_64(&rows[0] if n_inputs else NULL, n_inputs, 0,
                                         X.shape[0])
        bad_live = first_out_of_range_64(&live[0] if n_live else NULL, n_live, 0, n_inputs)
        bad_todo = first_out_of_range_32(&n_todo[0] if n_inputs else NULL, n_inputs, 0,
                                         n_trees + 1)
    if bad_rows >= 0 or bad_live >= 0 or bad_todo >= 0:
        raise ValueError("walk_step: rows must be rows of X, live[:n_live] inputs, n_todo "
                         "in [0, n_trees]")
    # one input at a time, all its trees: its row of X and status stays in cache
    for a in prange(n_live, nogil=True, schedule="static", num_threads=n_threads):
        i = live[a]
        r = rows[i]
        kept = 0
        n_new = 0
        for k in range(n_todo[i]):
            node = cursor[i, k]
            while nodes[node].left != -1:
                feature = nodes[node].feature
                if status[r, feature] != 1:
                    break
                node = child_of(&nodes[node], X[r, feature], words)
            t = tree_of[i, k]
            if nodes[node].left == -1:
                node_of[i, t] = node - tree_offsets[t]
                continue
            cursor[i, kept] = node
            tree_of[i, kept] = t
            kept = kept + 1
            feature = nodes[node].feature
            if status[r, feature] == 0:     # each row is one thread's: no race
                status[r, feature] = 2
                needs[i, n_new] = feature
                n_new = n_new + 1
        n_todo[i] = kept
        n_needs[i] = n_new
    # sequential: keep the live inputs, bucket the requests by feature (counting sort)
    feature_indptr[:] = 0
    for a in range(n_live):
        i = live[a]
        for j in range(n_needs[i]):
            feature_indptr[needs[i, j] + 1] += 1
        if n_todo[i] > 0:
            live[n_still] = i
            n_still += 1
    for j in range(n_features):
        feature_indptr[j + 1] += feature_indptr[j]
    total = feature_indptr[n_features]
    for a in range(n_still):
        i = live[a]
        for j in range(n_needs[i]):
            feature = needs[i, j]
            request_rows[feature_indptr[feature]] = rows[i]
            feature_indptr[feature] += 1
    # the scatter advanced each start to its end: shift back
    for j in range(n_features, 0, -1):
        feature_indptr[j] = feature_indptr[j - 1]
    feature_indptr[0] = 0
    return n_still, total


def sum_node_rows(
    const int32_t[:, ::1] leaves,
    const int64_t[::1] tree_offsets,
    const double[:, ::1] node_rows,
    double[:, ::1] out,
    int n_threads,
):
    """``out[i] += node_rows[tree_offsets[t] + leaves[i, t]]`` for each tree ``t`` in
    order: what ``predict_raw`` / ``predict_node_rows`` add, from known leaves."""
    cdef Py_ssize_t n_samples = leaves.shape[0], n_trees = leaves.shape[1]
    cdef Py_ssize_t n_columns = node_rows.shape[1], i, t, k
    cdef int64_t node
    check_n_threads(n_threads)
    if tree_offsets.shape[0] != n_trees + 1 or out.shape[0] != n_samples \
            or out.shape[1] != n_columns:
        raise ValueError("sum_node_rows: arrays of inconsistent shapes")
    check_offsets(&tree_offsets[0], n_trees + 1, node_rows.shape[0], "sum_node_rows")
    _check_leaves(leaves, tree_offsets, "sum_node_rows")
    for i in prange(n_samples, nogil=True, schedule="static", num_threads=n_threads):
        for t in range(n_trees):
            node = tree_offsets[t] + leaves[i, t]
            for k in range(n_columns):
                out[i, k] += node_rows[node, k]


def add_leaf_values(
    const int32_t[:, ::1] leaves,
    const predict_node_struct[::1] nodes,
    const int64_t[::1] tree_offsets,
    const int32_t[::1] tree_outputs,
    double[:, ::1] out,
    int n_threads,
):
    """``out[i, tree_outputs[t]] +=`` the value of leaf ``leaves[i, t]`` of tree ``t``, for
    each tree in order: what ``predict_raw`` adds, from known leaves."""
    cdef Py_ssize_t n_samples = leaves.shape[0], n_trees = leaves.shape[1], i, t
    check_n_threads(n_threads)
    if tree_offsets.shape[0] != n_trees + 1 or tree_outputs.shape[0] != n_trees \
            or out.shape[0] != n_samples:
        raise ValueError("add_leaf_values: arrays of inconsistent shapes")
    check_offsets(&tree_offsets[0], n_trees + 1, nodes.shape[0], "add_leaf_values")
    _check_outputs(tree_outputs, n_trees, out.shape[1])
    _check_leaves(leaves, tree_offsets, "add_leaf_values")
    for i in prange(n_samples, nogil=True, schedule="static", num_threads=n_threads):
        for t in range(n_trees):
            out[i, tree_outputs[t]] += nodes[tree_offsets[t] + leaves[i, t]].threshold
