"""Growth of one regression tree on binned data, entirely in C: best-first
("lossguide": always split the open leaf of largest net gain, up to ``num_leaves``
leaves) or depth-wise (level by level, up to ``max_depth``).

Per split: partition the leaf's rows, build the smaller child's histograms, get the
sibling's by subtraction, search both children's best splits. Histogram buffers come
from a pool kept across trees (large buffers are expensive to allocate).
"""
from libc.math cimport INFINITY
from libc.stdint cimport int32_t, int64_t, uint32_t
from libc.stdlib cimport free, malloc

import numpy as np

from ._histogram cimport build_histograms_core, subtract_histograms_core
from ._partition cimport split_rows_parallel
from ._split cimport find_best_split_core, leaf_value_core, split_struct
from ._types cimport X_BINNED_C, hist_struct, node_struct
from ._types import NODE_DTYPE


cdef struct grow_node:
    Py_ssize_t start         # the node's rows are rows[start:stop]
    Py_ssize_t stop
    double sum_gradients
    double sum_hessians
    int depth
    hist_struct * histograms  # NULL when not (or no longer) needed
    split_struct split       # split.feature == -1: not to be split
    int32_t left
    int32_t right


cdef inline void _init_child(grow_node * child, int depth) noexcept nogil:
    child.depth = depth
    child.histograms = NULL
    child.split.feature = -1
    child.left = -1
    child.right = -1


cdef class TreeGrower:
    """Grows trees on one binned data set; reuse it for every tree of a training run.

    Parameters
    ----------
    binned : uint8 array (n_samples, n_features), Fortran order
    bin_edges : float64 array
        All features' upper bin edges back to back (thresholds are taken from them).
    edges_indptr : int64 array (n_features + 1,)
    n_value_bins : uint32 array (n_features,)
    missing_bin : int
    learning_rate, reg_lambda, min_child_weight, gamma : float
    min_data_in_leaf : int
    num_leaves : int, -1 for no cap
    max_depth : int, -1 for no limit
    best_first : bool
    n_threads : int
    """
    cdef const X_BINNED_C[::1, :] binned
    cdef const double[::1] bin_edges
    cdef const int64_t[::1] edges_indptr
    cdef const uint32_t[::1] n_value_bins
    cdef int missing_bin, n_threads, num_leaves, max_depth
    cdef bint best_first
    cdef Py_ssize_t n_samples, n_features, n_bins, capacity
    cdef double learning_rate, reg_lambda, min_child_weight, gamma
    cdef uint32_t min_data_in_leaf
    cdef int32_t * buffer
    cdef double * ordered_gradients
    cdef double * ordered_hessians
    cdef split_struct * per_feature
    cdef grow_node * nodes
    cdef Py_ssize_t n_nodes           # of the last tree grown
    cdef int32_t * open_leaves
    cdef hist_struct ** free_histograms   # the pool
    cdef Py_ssize_t n_free_histograms

    def __cinit__(self, const X_BINNED_C[::1, :] binned, const double[::1] bin_edges,
                  const int64_t[::1] edges_indptr, const uint32_t[::1] n_value_bins,
                  int missing_bin, double learning_rate, double reg_lambda,
                  double min_child_weight, double gamma, uint32_t min_data_in_leaf,
                  int num_leaves, int max_depth, bint best_first, int n_threads):
        self.binned = binned
        self.bin_edges = bin_edges
        self.edges_indptr = edges_indptr
        self.n_value_bins = n_value_bins
        self.missing_bin = missing_bin
        self.n_samples = binned.shape[0]
        self.n_features = binned.shape[1]
        self.n_bins = missing_bin + 1
        self.learning_rate = learning_rate
        self.reg_lambda = reg_lambda
        self.min_child_weight = min_child_weight
        self.gamma = gamma
        self.min_data_in_leaf = max(min_data_in_leaf, 1)
        self.num_leaves = num_leaves
        self.max_depth = max_depth
        self.best_first = best_first
        self.n_threads = n_threads
        # Every leaf keeps >= min_data_in_leaf rows, so no tree has more nodes than this.
        cdef Py_ssize_t cap = 2 * max(1, self.n_samples // self.min_data_in_leaf) - 1
        if num_leaves > 0:
            cap = min(cap, 2 * num_leaves - 1)
        if 0 <= max_depth < 30:
            cap = min(cap, (1 << (max_depth + 1)) - 1)
        self.capacity = cap
        self.buffer = <int32_t *> malloc(max(self.n_samples, 1) * sizeof(int32_t))
        self.ordered_gradients = <double *> malloc(max(self.n_samples, 1) * sizeof(double))
        self.ordered_hessians = <double *> malloc(max(self.n_samples, 1) * sizeof(double))
        self.per_feature = <split_struct *> malloc(max(self.n_features, 1) * sizeof(split_struct))
        self.nodes = <grow_node *> malloc(cap * sizeof(grow_node))
        self.open_leaves = <int32_t *> malloc(cap * sizeof(int32_t))
        self.free_histograms = <hist_struct **> malloc(cap * sizeof(hist_struct *))
        self.n_free_histograms = 0
        self.n_nodes = 0
        if (self.buffer == NULL or self.ordered_gradients == NULL
                or self.ordered_hessians == NULL or self.per_feature == NULL
                or self.nodes == NULL or self.open_leaves == NULL
                or self.free_histograms == NULL):
            raise MemoryError()

    def __dealloc__(self):
        cdef Py_ssize_t i
        if self.free_histograms != NULL:
            for i in range(self.n_free_histograms):
                free(self.free_histograms[i])
        free(self.free_histograms)
        free(self.buffer)
        free(self.ordered_gradients)
        free(self.ordered_hessians)
        free(self.per_feature)
        free(self.nodes)
        free(self.open_leaves)

    cdef hist_struct * _take_histograms(self) noexcept nogil:
        if self.n_free_histograms > 0:
            self.n_free_histograms -= 1
            return self.free_histograms[self.n_free_histograms]
        return <hist_struct *> malloc(self.n_features * self.n_bins * sizeof(hist_struct))

    cdef void _release_histograms(self, grow_node * node) noexcept nogil:
        if node.histograms != NULL:
            self.free_histograms[self.n_free_histograms] = node.histograms
            self.n_free_histograms += 1
            node.histograms = NULL

    cdef bint _can_split(self, grow_node * node) noexcept nogil:
        return ((self.max_depth < 0 or node.depth < self.max_depth)
                and node.stop - node.start >= 2 * self.min_data_in_leaf
                and node.sum_hessians >= 2 * self.min_child_weight)

    cdef void _find_split(self, grow_node * node, const unsigned char * feature_mask) noexcept nogil:
        node.split = find_best_split_core(
            node.histograms, self.n_features, self.n_bins, &self.n_value_bins[0],
            self.missing_bin, feature_mask, node.sum_gradients, node.sum_hessians,
            <uint32_t> (node.stop - node.start), self.reg_lambda, self.min_child_weight,
            self.min_data_in_leaf, NULL, self.per_feature, self.n_threads)
        if node.split.feature >= 0 and not node.split.gain > self.gamma:
            node.split.feature = -1

    cdef Py_ssize_t _open_if_splittable(self, grow_node * child,
                                        const unsigned char * feature_mask,
                                        Py_ssize_t n_open) noexcept nogil:
        """Search the child's best split; add it to the open leaves if it has one.
        Returns the new number of open leaves."""
        if child.histograms != NULL and self._can_split(child):
            self._find_split(child, feature_mask)
            if child.split.feature >= 0:
                self.open_leaves[n_open] = <int32_t> (child - self.nodes)
                return n_open + 1
        self._release_histograms(child)
        return n_open

    cdef void _build(self, grow_node * node, int32_t * rows, const double * gradients,
                     const double * hessians, const unsigned char * feature_mask) noexcept nogil:
        node.histograms = self._take_histograms()
        build_histograms_core(
            &self.binned[0, 0], self.n_samples, self.n_features, &rows[node.start],
            node.stop - node.start, gradients, hessians, feature_mask, &self.n_value_bins[0],
            self.missing_bin, node.histograms, self.n_bins, self.ordered_gradients,
            self.ordered_hessians, NULL, 0, NULL, 0, NULL, NULL, NULL, self.n_threads)

    def grow(self, const double[::1] gradients, const double[::1] hessians,
             int32_t[::1] rows, const unsigned char[::1] feature_mask):
        """Grow one tree on ``rows`` (sorted in-bag sample indices, reordered in place).

        Returns
        -------
        ndarray of NODE_DTYPE
            Node 0 is the root; children have larger ids than their parent.
        """
        if gradients.shape[0] != self.n_samples or hessians.shape[0] != self.n_samples:
            raise ValueError("gradients/hessians do not match the binned data")
        if feature_mask.shape[0] != self.n_features:
            raise ValueError("feature_mask does not match the number of features")
        if rows.shape[0] == 0:
            raise ValueError("no rows to grow a tree on")
        cdef Py_ssize_t n_nodes = 1, n_open = 0, n_leaves = 1, i, pick, n_left
        cdef grow_node * node
        cdef grow_node * left
        cdef grow_node * right
        cdef grow_node * small
        cdef grow_node * large
        cdef int32_t * row_ptr = &rows[0]
        cdef const double * g = &gradients[0]
        cdef const double * h = &hessians[0]
        cdef const unsigned char * mask = &feature_mask[0]
        cdef bint partition_error = False, allocation_error = False
        cdef double sum_g = 0.0, sum_h = 0.0
        with nogil:
            for i in range(rows.shape[0]):
                sum_g += g[row_ptr[i]]
                sum_h += h[row_ptr[i]]
            node = &self.nodes[0]
            node.start, node.stop, node.depth = 0, rows.shape[0], 0
            node.sum_gradients, node.sum_hessians = sum_g, sum_h
            node.histograms = NULL
            node.split.feature = -1
            node.left = node.right = -1
            if self._can_split(node):
                self._build(node, row_ptr, g, h, mask)
                if node.histograms == NULL:
                    allocation_error = True
                else:
                    self._find_split(node, mask)
                    if node.split.feature >= 0:
                        self.open_leaves[0] = 0
                        n_open = 1
            while n_open > 0 and (self.num_leaves < 0 or n_leaves < self.num_leaves) \
                    and not allocation_error:
                # best-first: largest net gain, ties to the lowest id; depth-wise: the
                # oldest open leaf (ids are given in creation order, so: level order)
                pick = 0
                for i in range(1, n_open):
                    if self.best_first:
                        if (self.nodes[self.open_leaves[i]].split.gain
                                > self.nodes[self.open_leaves[pick]].split.gain
                                or (self.nodes[self.open_leaves[i]].split.gain
                                    == self.nodes[self.open_leaves[pick]].split.gain
                                    and self.open_leaves[i] < self.open_leaves[pick])):
                            pick = i
                    elif self.open_leaves[i] < self.open_leaves[pick]:
                        pick = i
                node = &self.nodes[self.open_leaves[pick]]
                n_open -= 1
                self.open_leaves[pick] = self.open_leaves[n_open]

                n_left = split_rows_parallel(
                    &row_ptr[node.start], node.stop - node.start,
                    &self.binned[0, node.split.feature], node.split.bin_threshold,
                    node.split.default_left, self.missing_bin, self.buffer, self.n_threads)
                if n_left != node.split.count_left:
                    partition_error = True
                    break
                node.left, node.right = n_nodes, n_nodes + 1
                left, right = &self.nodes[n_nodes], &self.nodes[n_nodes + 1]
                n_nodes += 2
                n_leaves += 1
                left.start, left.stop = node.start, node.start + n_left
                right.start, right.stop = node.start + n_left, node.stop
                left.sum_gradients = node.split.sum_gradient_left
                left.sum_hessians = node.split.sum_hessian_left
                right.sum_gradients = node.sum_gradients - node.split.sum_gradient_left
                right.sum_hessians = node.sum_hessians - node.split.sum_hessian_left
                _init_child(left, node.depth + 1)
                _init_child(right, node.depth + 1)

                # Histograms: build the smaller child's, subtract for the sibling.
                if left.stop - left.start <= right.stop - right.start:
                    small, large = left, right
                else:
                    small, large = right, left
                if self._can_split(small) or self._can_split(large):
                    self._build(small, row_ptr, g, h, mask)
                    if small.histograms == NULL:
                        allocation_error = True
                        break
                    if self._can_split(large):
                        large.histograms = self._take_histograms()
                        if large.histograms == NULL:
                            allocation_error = True
                            break
                        subtract_histograms_core(
                            node.histograms, small.histograms, large.histograms,
                            self.n_features, self.n_bins, mask, &self.n_value_bins[0],
                            self.missing_bin)
                self._release_histograms(node)
                n_open = self._open_if_splittable(left, mask, n_open)
                n_open = self._open_if_splittable(right, mask, n_open)
            for i in range(n_nodes):
                self._release_histograms(&self.nodes[i])
        if allocation_error:
            raise MemoryError("cannot allocate histograms")
        if partition_error:
            raise RuntimeError("internal error: row partition disagrees with the histogram")
        self.n_nodes = n_nodes
        return self._to_array(n_nodes)

    def add_leaf_values(self, const int32_t[::1] rows, double[:, ::1] raw, int output):
        """``raw[r, output] += value of r's leaf`` for the rows of the last tree grown,
        from its partition (``rows`` as left by :meth:`grow`): no traversal needed."""
        cdef Py_ssize_t node, i
        cdef double value
        cdef grow_node * leaf
        if raw.shape[0] != self.n_samples or not 0 <= output < raw.shape[1]:
            raise ValueError("raw does not match the binned data")
        with nogil:
            for node in range(self.n_nodes):
                leaf = &self.nodes[node]
                if leaf.left != -1:
                    continue
                value = self.learning_rate * leaf_value_core(
                    leaf.sum_gradients, leaf.sum_hessians, self.reg_lambda)
                for i in range(leaf.start, leaf.stop):
                    raw[rows[i], output] += value

    cdef _to_array(self, Py_ssize_t n_nodes):
        out = np.zeros(n_nodes, dtype=NODE_DTYPE)
        cdef node_struct[::1] view = out
        cdef Py_ssize_t i
        cdef grow_node * node
        with nogil:
            for i in range(n_nodes):
                node = &self.nodes[i]
                view[i].value = self.learning_rate * leaf_value_core(
                    node.sum_gradients, node.sum_hessians, self.reg_lambda)
                view[i].sum_hessian = node.sum_hessians
                view[i].n_samples = <int32_t> (node.stop - node.start)
                view[i].depth = node.depth
                view[i].left = node.left
                view[i].right = node.right
                if node.left == -1:
                    view[i].feature = -1
                else:
                    view[i].feature = node.split.feature
                    view[i].bin_threshold = <X_BINNED_C> node.split.bin_threshold
                    view[i].default_left = node.split.default_left
                    view[i].threshold = self.bin_edges[
                        self.edges_indptr[node.split.feature] + node.split.bin_threshold]
                    view[i].gain = node.split.raw_gain
                    view[i].cost_penalty = node.split.cost_penalty
        return out
