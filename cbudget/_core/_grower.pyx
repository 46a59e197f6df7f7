"""Growth of one regression tree on binned data, entirely in C: best-first
("lossguide": always split the open leaf of largest net gain, up to ``num_leaves``
leaves) or depth-wise (level by level, up to ``max_depth``).

Per split: partition the leaf's rows, build the smaller child's histograms, get the
sibling's by subtraction, search both children's best splits. Histogram buffers come
from a pool kept across trees (large buffers are expensive to allocate).

With an :class:`AcquisitionState` (:meth:`TreeGrower.set_cost_penalty`) a split of
leaf ``p`` on feature ``m`` is scored by its raw gain minus ``cost_tradeoff`` times::

    split_cost * |p|
      + coupled_costs[m] * [m unused by the model]
      + coupled_group_costs[g(m)] * [no member of m's group used by the model]
      + feature_costs[m] * #(rows of p without m)
      + group_costs[g(m)] * #(rows of p that have not touched m's group)

CEGB (eq. 12-13 of the paper) uses the per-input terms and coupled feature costs;
Greedy Miser (eq. 5 of its paper) only the once-per-model terms (its phi). The row
counts come out of the histogram pass (siblings by subtraction); applying a split marks
every row of the leaf as having acquired ``m``.
"""
from cython.parallel cimport prange
from libc.math cimport INFINITY
from libc.stdint cimport int32_t, int64_t, uint8_t, uint16_t, uint32_t
from libc.stdlib cimport free, malloc, realloc
from libc.string cimport memcpy

import numpy as np

from ._acquisition cimport AcquisitionState
from ._histogram cimport (SparseBins, build_histograms_core, sparse_bins_struct,
                          subtract_histograms_core)
from ._partition cimport split_rows_parallel
from ._path cimport mark_feature
from ._safety cimport (check_bitset, check_n_threads, check_rows_in_range, checked_calloc,
                      checked_malloc, first_out_of_range_32)
from ._split cimport (bounded_output, cat_params_struct, cat_words_of, find_best_split_core,
                     monotone_struct, split_struct)
from ._types cimport MAX_ROWS_C, hist_struct, node_struct
from ._types import NODE_DTYPE

# Below this many rows a tree's leaf values are added to the scores on one thread.
cdef Py_ssize_t MIN_PARALLEL_ROWS = 65536


cdef struct grow_node:
    Py_ssize_t start         # the node's rows are rows[start:stop]
    Py_ssize_t stop
    double sum_gradients
    double sum_hessians
    int depth
    hist_struct * histograms  # NULL when not (or no longer) needed; followed by the
                              # unacquired and group-untouched counts (n_features each)
    split_struct split       # split.feature == -1: not to be split
    int32_t left
    int32_t right
    int32_t parent
    int64_t new_acquisitions  # in-bag rows that first acquire the split feature
    double extra_lambda       # added to reg_lambda in the leaf value: cat_l2 below a
                              # many-vs-many categorical split (LightGBM's leaf output)
    double lower              # the bounds of the node's output (monotone constraints;
    double upper              # -inf, inf without): its value is clipped to them


cdef inline void _init_child(grow_node * child, int depth, int32_t parent) noexcept nogil:
    child.depth = depth
    child.parent = parent
    child.new_acquisitions = 0
    child.extra_lambda = 0.0
    child.lower = -INFINITY
    child.upper = INFINITY
    child.histograms = NULL
    child.split.feature = -1
    child.left = -1
    child.right = -1


_NO_WORDS = np.zeros(0, dtype=np.uint32)


def _grown_tree(nodes, cat_bin_words):
    """Unpickling of a :class:`GrownTree`."""
    tree = np.asarray(nodes).view(GrownTree)
    tree.cat_bin_words = cat_bin_words
    return tree


class GrownTree(np.ndarray):
    """A tree as :class:`TreeGrower` grows it: NODE_DTYPE nodes, with the bin bitsets of
    its categorical splits in ``cat_bin_words`` (uint32; node ``n``'s at
    ``cat_bin_words[tree["cat_bins_at"][n]:]``, a length word then the words, bit ``b``
    for bin ``b`` going left), which the kernels that route binned data take
    (``predict_binned_add``, ``acquire_along_paths``). Copies and pickles keep them."""

    cat_bin_words = _NO_WORDS

    def __array_finalize__(self, obj):
        self.cat_bin_words = getattr(obj, "cat_bin_words", _NO_WORDS)

    def __reduce__(self):
        return _grown_tree, (np.asarray(self), self.cat_bin_words)


def bin_words(tree) -> np.ndarray:
    """The bin bitsets of a grown tree's categorical splits (none for a plain NODE_DTYPE
    array)."""
    return getattr(tree, "cat_bin_words", _NO_WORDS)


cdef class TreeGrower:
    """Grows trees on one binned data set; reuse it for every tree of a training run.

    Parameters
    ----------
    binned : uint8 or uint16 array (n_samples, n_features), Fortran order (uint16 when
        a feature has more than 256 bins, the missing bin included)
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
    sparse_bins : SparseBins, optional
        The row-wise layout of ``binned``'s mostly-constant features.
    exchange : object, optional
        The rows' side of a distributed training (:meth:`grow_remote`): this grower
        grows the tree (on a Dask worker, the same tree as every other worker's), the
        rows are behind the exchange (each worker's row grower, sums among the
        workers), ``binned`` has none.
    n_tree_rows : int, optional
        The rows of the whole training set, when they are spread over workers: the tree
        grower and each worker's row grower (:meth:`begin_tree`) are sized for it.
    monotone : int8 array (n_features,), optional
        Monotone constraints, LightGBM's "basic" method: +1 (-1) makes the trees'
        outputs non-decreasing (non-increasing) in the feature. Every node has bounds
        on its output (none at the root); a split on a constrained feature is
        admissible only if its children's outputs, clipped to the node's bounds, follow
        the direction, and then bounds the left child's output by their midpoint from
        above (+1; below for -1) and the right child's from below; every split's
        children inherit the node's bounds, and every node's value is clipped to its
        bounds. Missing values follow their split's default side. None (or all 0):
        unconstrained. A categorical feature takes no direction (ValueError).

    ValueError when the arrays disagree with ``binned`` or with each other (every value
    bin must have its edge, every bin of ``binned`` must be at most ``missing_bin``), or
    ``binned`` has more rows than training takes (``_types.MAX_ROWS``).
    """
    # the binned data: one pointer and its bins' width (1: uint8, 2: uint16), read by
    # the histogram and partition kernels, which dispatch on the width
    cdef object binned_array                  # keeps the data alive
    cdef const unsigned char * binned_data
    cdef int bin_bytes
    cdef SparseBins sparse_bins               # kept alive for ``sparse``
    cdef const sparse_bins_struct * sparse    # NULL: every feature column-wise
    cdef const double[::1] bin_edges
    cdef const int64_t[::1] edges_indptr
    cdef const uint32_t[::1] n_value_bins
    cdef const unsigned char * categorical  # NULL: every feature numeric
    cdef object categorical_array           # ... keeps its memory alive
    cdef cat_params_struct cat_params
    cdef const signed char * monotone       # NULL: no monotone constraints
    cdef object monotone_array              # ... keeps its memory alive
    # Categorical splits' bin bitsets (_bitset.pxd): the scan writes its candidates'
    # into ``cat_scratch`` (``cat_words`` a feature; 0 without categorical features);
    # a leaf's chosen split keeps its bitset in ``cat_pool`` (per tree, grown on demand)
    cdef uint32_t * cat_scratch
    cdef Py_ssize_t cat_words
    cdef uint32_t * cat_pool
    cdef Py_ssize_t cat_pool_used, cat_pool_size
    cdef bint cat_pool_failed
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
    cdef Py_ssize_t n_nodes           # of the last tree grown (0: none to add)
    cdef Py_ssize_t n_rows_grown      # the number of rows it was grown on
    cdef int32_t * open_leaves
    cdef hist_struct ** free_histograms   # the pool
    cdef Py_ssize_t n_free_histograms
    cdef size_t histograms_bytes          # one pool block: histograms + counts
    # Cost penalty (set_cost_penalty); has_penalty False: plain boosting, none of this
    # is used
    cdef bint has_penalty, keep_dormant
    cdef AcquisitionState state
    cdef double cost_tradeoff, split_cost
    cdef const double[::1] feature_costs
    cdef const double[::1] group_costs
    cdef const double[::1] coupled_costs
    cdef const double[::1] coupled_group_costs
    cdef const int32_t[::1] feature_group
    cdef unsigned char * count_mask       # features whose acquisition counts are taken
    cdef unsigned char * fresh_mask       # costly features no input had at tree start
    cdef unsigned char * on_path          # scratch: features on a leaf's path
    cdef unsigned char * group_on_path    # scratch: groups on a leaf's path
    cdef unsigned char * single_mask      # scratch: one feature masked in
    cdef double * penalty                 # scratch: per-feature penalty of one leaf
    # Distributed growth (docs/architecture.md, "Dask"). In a tree grower, ``exchange``
    # holds the rows: the grower has none of its own, gets the workers' summed
    # histograms and picks the splits (the same loop as on local rows). In a worker's
    # row grower (``begin_tree`` ...), the tree's rows, gradients and mask are kept
    # between the tree grower's requests.
    cdef object exchange
    cdef object remote_error              # an exception of the exchange, raised after growth
    cdef object pending                   # the histograms the last remote split brought
    cdef Py_ssize_t pending_node
    cdef object tree_arrays               # a worker's (rows, gradients, hessians, mask)
    cdef int32_t * tree_rows              # ... and pointers into them
    cdef const double * tree_gradients
    cdef const double * tree_hessians
    cdef const unsigned char * tree_mask

    def __cinit__(self, binned, const double[::1] bin_edges,
                  const int64_t[::1] edges_indptr, const uint32_t[::1] n_value_bins,
                  int missing_bin, double learning_rate, double reg_lambda,
                  double min_child_weight, double gamma, uint32_t min_data_in_leaf,
                  int num_leaves, int max_depth, bint best_first, int n_threads,
                  SparseBins sparse_bins=None, exchange=None, Py_ssize_t n_tree_rows=0,
                  categorical=None, int max_cat_to_onehot=4, int max_cat_threshold=32,
                  double cat_l2=10.0, double cat_smooth=10.0,
                  uint32_t min_data_per_group=100, monotone=None):
        cdef Py_ssize_t f, n_edges
        cdef const unsigned char[::1] cat_view
        cdef const signed char[::1] monotone_view
        cdef const uint8_t[::1, :] narrow
        cdef const uint16_t[::1, :] wide
        # pointers are NULL until allocated: __dealloc__ frees whatever was, also when
        # this raises
        binned = np.asarray(binned)
        if binned.dtype == np.uint16:
            wide = binned
            self.binned_data, self.bin_bytes = <const unsigned char *> &wide[0, 0], 2
        else:
            narrow = binned     # ValueError unless uint8, Fortran order
            self.binned_data, self.bin_bytes = &narrow[0, 0], 1
        highest = np.iinfo(binned.dtype).max
        if not binned.shape[0] <= MAX_ROWS_C:
            raise ValueError(f"binned has {binned.shape[0]} rows; training takes at most "
                             f"{MAX_ROWS_C} (2**30)")
        check_n_threads(n_threads)
        if not 0 <= missing_bin <= highest:
            raise ValueError(f"missing_bin must be in [0, {highest}] for {binned.dtype} "
                             f"bins, got {missing_bin}")
        if n_value_bins.shape[0] != binned.shape[1] \
                or edges_indptr.shape[0] != binned.shape[1] + 1:
            raise ValueError("n_value_bins / edges_indptr do not match the number of "
                             "features of binned")
        if edges_indptr[0] != 0 or edges_indptr[binned.shape[1]] > bin_edges.shape[0]:
            raise ValueError("edges_indptr must start at 0 and end within bin_edges")
        for f in range(binned.shape[1]):
            n_edges = edges_indptr[f + 1] - edges_indptr[f]
            # a split's threshold is edge number bin_threshold <= n_value_bins[f] - 2
            if (n_edges < 0 or n_value_bins[f] > n_edges + 1
                    or <Py_ssize_t> n_value_bins[f] > missing_bin):
                raise ValueError(f"feature {f}: {n_value_bins[f]} value bins for {n_edges} "
                                 f"edges and missing bin {missing_bin} (edges_indptr must "
                                 f"be non-decreasing, n_value_bins[f] <= its edges + 1 and "
                                 f"<= missing_bin)")
        if missing_bin < highest and binned.shape[0] and binned.shape[1] \
                and binned.max() > missing_bin:
            raise ValueError(f"binned holds a bin above missing_bin ({missing_bin})")
        if sparse_bins is not None:
            sparse_bins.check_matches(binned, missing_bin)
        self.categorical = NULL
        if categorical is not None:
            self.categorical_array = np.ascontiguousarray(categorical, dtype=np.uint8)
            if self.categorical_array.shape != (binned.shape[1],):
                raise ValueError("categorical must have one flag per feature of binned")
            cat_view = self.categorical_array
            if binned.shape[1]:
                self.categorical = &cat_view[0]
        self.cat_words = cat_words_of(missing_bin + 1) if self.categorical != NULL else 0
        self.monotone = NULL
        if monotone is not None:
            directions = np.asarray(monotone)
            if directions.shape != (binned.shape[1],) or not np.isin(directions,
                                                                     (-1, 0, 1)).all():
                raise ValueError("monotone must hold one of -1, 0, +1 per feature of binned")
            if categorical is not None and np.any(directions[self.categorical_array != 0]):
                raise ValueError("monotone: a categorical feature has no order, so it takes "
                                 "no monotone constraint")
            if np.any(directions):
                self.monotone_array = directions.astype(np.int8)
                monotone_view = self.monotone_array
                self.monotone = &monotone_view[0]
        self.cat_params.max_cat_to_onehot = max_cat_to_onehot
        self.cat_params.max_cat_threshold = max_cat_threshold
        self.cat_params.cat_l2 = cat_l2
        self.cat_params.cat_smooth = cat_smooth
        self.cat_params.min_data_per_group = min_data_per_group
        self.sparse_bins = sparse_bins
        self.sparse = &sparse_bins.c if sparse_bins is not None else NULL
        self.binned_array = binned
        self.bin_edges = bin_edges
        self.edges_indptr = edges_indptr
        self.n_value_bins = n_value_bins
        self.missing_bin = missing_bin
        self.n_samples = binned.shape[0]
        self.n_features = binned.shape[1]
        self.exchange = exchange
        if exchange is not None:
            if binned.shape[0] != 0 or sparse_bins is not None:
                raise ValueError("a grower whose rows are on workers (exchange) takes no "
                                 "rows of its own: binned must have 0 rows")
            if not 0 < n_tree_rows <= MAX_ROWS_C:
                raise ValueError(f"n_tree_rows must be in [1, {MAX_ROWS_C}] with an exchange, "
                                 f"got {n_tree_rows}")
            self.n_samples = n_tree_rows
        elif not 0 <= n_tree_rows <= MAX_ROWS_C:
            raise ValueError(f"n_tree_rows must be in [0, {MAX_ROWS_C}], got {n_tree_rows}")
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
        # Every leaf keeps >= min_data_in_leaf rows, so no tree has more nodes than this
        # (at most 2 * MAX_ROWS_C - 1: node ids fit in int32).
        # (a worker of a distributed training holds some of the rows of trees whose node
        # ids are the tree grower's: sized for all of them, n_tree_rows)
        cdef Py_ssize_t cap = 2 * max(1, max(self.n_samples, n_tree_rows)
                                      // self.min_data_in_leaf) - 1
        if num_leaves > 0:
            cap = min(cap, 2 * <Py_ssize_t> num_leaves - 1)
        if 0 <= max_depth < 30:
            cap = min(cap, (1 << (max_depth + 1)) - 1)
        self.capacity = cap
        self.n_free_histograms = 0
        self.histograms_bytes = (self.n_features * self.n_bins * sizeof(hist_struct)
                                 + 2 * self.n_features * sizeof(uint32_t))
        self.n_nodes = 0
        self.n_rows_grown = 0
        self.has_penalty = False
        self.group_on_path = NULL
        # row scratch: none needed by the tree grower of a distributed growth
        cdef Py_ssize_t n_local = binned.shape[0]
        self.buffer = <int32_t *> checked_malloc(
            n_local, sizeof(int32_t), "the row partition buffer")
        self.ordered_gradients = <double *> checked_malloc(
            n_local, sizeof(double), "the gathered gradients")
        self.ordered_hessians = <double *> checked_malloc(
            n_local, sizeof(double), "the gathered hessians")
        self.per_feature = <split_struct *> checked_malloc(
            self.n_features, sizeof(split_struct), "the per-feature split results")
        self.nodes = <grow_node *> checked_malloc(cap, sizeof(grow_node), "the tree's nodes")
        self.open_leaves = <int32_t *> checked_malloc(
            cap, sizeof(int32_t), "the open leaves")
        self.free_histograms = <hist_struct **> checked_malloc(
            cap, sizeof(hist_struct *), "the histogram pool")
        self.count_mask = <unsigned char *> checked_calloc(
            self.n_features, sizeof(unsigned char), "the count mask")
        self.single_mask = <unsigned char *> checked_calloc(
            self.n_features, sizeof(unsigned char), "the rescoring mask")
        self.penalty = <double *> checked_calloc(
            self.n_features, sizeof(double), "the per-feature penalties")
        self.fresh_mask = <unsigned char *> checked_calloc(
            self.n_features, sizeof(unsigned char), "the fresh-feature mask")
        self.on_path = <unsigned char *> checked_calloc(
            self.n_features, sizeof(unsigned char), "the path marks")
        if self.cat_words:
            self.cat_scratch = <uint32_t *> checked_malloc(
                self.n_features * self.cat_words, sizeof(uint32_t),
                "the categorical candidates' bin bitsets")
            self.cat_pool_size = 16 * self.cat_words
            self.cat_pool = <uint32_t *> checked_malloc(
                self.cat_pool_size, sizeof(uint32_t), "the categorical splits' bitsets")

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
        free(self.count_mask)
        free(self.single_mask)
        free(self.penalty)
        free(self.fresh_mask)
        free(self.on_path)
        free(self.group_on_path)
        free(self.cat_scratch)
        free(self.cat_pool)

    def set_cost_penalty(self, AcquisitionState state, double cost_tradeoff,
                         const double[::1] feature_costs, const int32_t[::1] feature_group,
                         const double[::1] group_costs, const double[::1] coupled_costs,
                         const double[::1] coupled_group_costs, double split_cost):
        """Grow cost-penalised trees from now on: splits pay ``cost_tradeoff`` times
        their cost increment (module docstring), and applying a split updates ``state``
        (shared across trees).

        ``feature_costs`` / ``group_costs`` are paid per input that lacks the feature
        (group), ``coupled_costs`` / ``coupled_group_costs`` once per model."""
        if state.n_features != self.n_features or state.n_samples != (
                0 if self.exchange is not None else self.n_samples):
            raise ValueError("the acquisition state does not match the binned data (a "
                             "grower whose rows are on workers takes a state of 0 rows: "
                             "the workers keep the bitsets)")
        if (feature_costs.shape[0] != self.n_features or feature_group.shape[0] != self.n_features
                or coupled_costs.shape[0] != self.n_features
                or group_costs.shape[0] != state.n_groups
                or coupled_group_costs.shape[0] != state.n_groups):
            raise ValueError("cost arrays do not match the number of features / groups")
        if not cost_tradeoff >= 0 or not split_cost >= 0:
            raise ValueError("cost_tradeoff and split_cost must be >= 0")
        if self.n_features and first_out_of_range_32(
                &feature_group[0], self.n_features, -1, state.n_groups) >= 0:
            raise ValueError(f"feature_group must hold groups in [-1, {state.n_groups})")
        # allocated first: out of memory leaves the grower as it was (a NULL scratch
        # with has_penalty set from an earlier call would crash the next grow)
        cdef unsigned char * group_on_path = <unsigned char *> checked_calloc(
            state.n_groups, sizeof(unsigned char), "the group path marks")
        free(self.group_on_path)
        self.group_on_path = group_on_path
        self.state = state
        self.cost_tradeoff = cost_tradeoff
        self.split_cost = split_cost
        self.feature_costs = feature_costs
        self.feature_group = feature_group
        self.group_costs = group_costs
        self.coupled_costs = coupled_costs
        self.coupled_group_costs = coupled_group_costs
        self.has_penalty = True

    cdef int _check_inputs(self, const double[::1] gradients, const double[::1] hessians,
                           const int32_t[::1] rows,
                           const unsigned char[::1] feature_mask,
                           bint allow_empty=False) except -1:
        """ValueError unless the arrays match the binned data and ``rows`` holds between
        1 and n_samples indices in range (the scratch buffers and the node capacity are
        sized for n_samples rows)."""
        if gradients.shape[0] != self.n_samples or hessians.shape[0] != self.n_samples:
            raise ValueError("gradients/hessians do not match the binned data")
        if feature_mask.shape[0] != self.n_features:
            raise ValueError("feature_mask does not match the number of features")
        if rows.shape[0] == 0 and not allow_empty:
            raise ValueError("no rows to grow a tree on")
        if rows.shape[0] > self.n_samples:
            raise ValueError(f"rows has {rows.shape[0]} entries for {self.n_samples} "
                             f"samples (at most one per sample)")
        check_rows_in_range(rows, self.n_samples)
        return 0

    cdef inline const void * _column(self, Py_ssize_t feature) noexcept nogil:
        """The bins of ``feature`` (on a worker or a local grower: rows of its own)."""
        return self.binned_data + feature * self.n_samples * self.bin_bytes

    cdef hist_struct * _take_histograms(self) noexcept nogil:
        if self.n_free_histograms > 0:
            self.n_free_histograms -= 1
            return self.free_histograms[self.n_free_histograms]
        return <hist_struct *> malloc(self.histograms_bytes)

    cdef void _release_histograms(self, grow_node * node) noexcept nogil:
        if node.histograms != NULL:
            self.free_histograms[self.n_free_histograms] = node.histograms
            self.n_free_histograms += 1
            node.histograms = NULL

    cdef bint _can_split(self, grow_node * node) noexcept nogil:
        return self._can_split_rows(node.depth, node.stop - node.start, node.sum_hessians)

    cdef bint _can_split_rows(self, int depth, Py_ssize_t n_rows,
                              double sum_hessians) noexcept nogil:
        return ((self.max_depth < 0 or depth < self.max_depth)
                and n_rows >= 2 * self.min_data_in_leaf
                and sum_hessians >= 2 * self.min_child_weight)

    cdef Py_ssize_t _child_to_build(self, grow_node * node, Py_ssize_t left_id) noexcept nogil:
        """Which child of the node's split gets its histograms built (the smaller; the
        other's are the difference), -1 when neither child can be split; decided from
        the split's counts, before the rows are split (on workers, the histograms come
        back with the split)."""
        cdef Py_ssize_t n_left = node.split.count_left
        cdef Py_ssize_t n_right = node.stop - node.start - n_left
        cdef double hessians_left = node.split.sum_hessian_left
        if not (self._can_split_rows(node.depth + 1, n_left, hessians_left)
                or self._can_split_rows(node.depth + 1, n_right,
                                        node.sum_hessians - hessians_left)):
            return -1
        return left_id if n_left <= n_right else left_id + 1

    cdef inline uint32_t * _unacquired(self, grow_node * node) noexcept nogil:
        return <uint32_t *> (node.histograms + self.n_features * self.n_bins)

    cdef inline uint32_t * _untouched(self, grow_node * node) noexcept nogil:
        return self._unacquired(node) + self.n_features

    cdef void _fill_penalty(self, grow_node * node, Py_ssize_t first,
                            Py_ssize_t stop) noexcept nogil:
        """``penalty[f]`` for ``first <= f < stop``: lambda times the cost increment of
        splitting ``node`` on ``f`` (eq. 13)."""
        cdef uint32_t * unacquired = self._unacquired(node)
        cdef uint32_t * untouched = self._untouched(node)
        cdef double increment, n_rows = node.stop - node.start
        cdef Py_ssize_t f
        cdef int32_t group
        # A fresh feature (no input had it, nor its group, when the tree started) is
        # lacked by every row of the leaf unless an ancestor split on it (or its group)
        # -- no counting needed.
        self._mark_path(node, 1)
        for f in range(first, stop):
            increment = self.split_cost * n_rows
            if not self.state.feature_used[f]:
                increment += self.coupled_costs[f]
            group = self.feature_group[f]
            if group >= 0 and not self.state.group_used[group]:
                increment += self.coupled_group_costs[group]
            if self.count_mask[f]:
                increment += self.feature_costs[f] * unacquired[f]
                if group >= 0:
                    increment += self.group_costs[group] * untouched[f]
            elif self.fresh_mask[f]:
                if not self.on_path[f]:
                    increment += self.feature_costs[f] * n_rows
                if group >= 0 and not self.group_on_path[group]:
                    increment += self.group_costs[group] * n_rows
            # else: every training input has f (and its group), or both are free
            self.penalty[f] = self.cost_tradeoff * increment
        self._mark_path(node, 0)

    cdef void _mark_path(self, grow_node * node, unsigned char value) noexcept nogil:
        """Set ``on_path`` / ``group_on_path`` of the features (groups) that the node's
        ancestors split on to ``value``."""
        cdef int32_t ancestor = node.parent
        while ancestor >= 0:
            mark_feature(self.nodes[ancestor].split.feature, &self.feature_group[0],
                         self.on_path, self.group_on_path, value)
            ancestor = self.nodes[ancestor].parent

    cdef split_struct _best_split(self, grow_node * node,
                                  const unsigned char * feature_mask) noexcept nogil:
        """The node's best split among the masked-in features, ``feature == -1`` if
        none has a net gain above ``gamma``."""
        cdef monotone_struct bounds
        bounds.direction, bounds.lower, bounds.upper = self.monotone, node.lower, node.upper
        cdef split_struct best = find_best_split_core(
            node.histograms, self.n_features, self.n_bins, &self.n_value_bins[0],
            self.missing_bin, feature_mask, node.sum_gradients, node.sum_hessians,
            <uint32_t> (node.stop - node.start), self.reg_lambda, self.min_child_weight,
            self.min_data_in_leaf, self.penalty if self.has_penalty else NULL,
            self.categorical, &self.cat_params, self.per_feature, self.cat_scratch,
            self.cat_words, &bounds if self.monotone != NULL else NULL, self.n_threads)
        if best.feature >= 0 and not best.gain > self.gamma:
            best.feature = -1
        return best

    cdef void _keep_split(self, grow_node * node, split_struct split) noexcept nogil:
        """``node.split = split``, a categorical split's bin bitset copied from the
        scan's scratch into the pool (``split.cat_at``); out of memory: no split, and
        ``cat_pool_failed``."""
        cdef Py_ssize_t n
        cdef uint32_t * grown
        node.split = split
        if split.feature < 0 or not split.categorical:
            return
        n = 1 + split.cat_bins[0]
        if self.cat_pool_used + n > self.cat_pool_size:
            grown = <uint32_t *> realloc(self.cat_pool, 2 * (self.cat_pool_size + n)
                                         * sizeof(uint32_t))
            if grown == NULL:
                node.split.feature = -1
                self.cat_pool_failed = True
                return
            self.cat_pool, self.cat_pool_size = grown, 2 * (self.cat_pool_size + n)
        memcpy(&self.cat_pool[self.cat_pool_used], split.cat_bins, n * sizeof(uint32_t))
        node.split.cat_at = self.cat_pool_used
        node.split.cat_bins = NULL      # the scratch is the next scan's
        self.cat_pool_used += n

    cdef inline double _node_value(self, const grow_node * node) noexcept nogil:
        """The node's output: its Newton step, clipped to its monotone bounds, shrunk."""
        return self.learning_rate * bounded_output(
            node.sum_gradients, node.sum_hessians, self.reg_lambda + node.extra_lambda,
            node.lower, node.upper)

    cdef void _bound_children(self, const grow_node * node, grow_node * left,
                              grow_node * right) noexcept nogil:
        """The children's output bounds (LightGBM's basic method): the node's, and,
        for a split on a constrained feature, the midpoint of their outputs (clipped to
        the node's bounds, as the split search scored them) as the left child's upper
        bound and the right child's lower bound (+1; the other way round for -1), so
        that every leaf below the left child stays on its side of every leaf below the
        right one."""
        cdef double mid
        cdef signed char direction
        left.lower = right.lower = node.lower
        left.upper = right.upper = node.upper
        if self.monotone == NULL or node.split.categorical:
            return
        direction = self.monotone[node.split.feature]
        if direction == 0:
            return
        mid = 0.5 * (
            bounded_output(left.sum_gradients, left.sum_hessians, self.reg_lambda,
                           node.lower, node.upper)
            + bounded_output(right.sum_gradients, right.sum_hessians, self.reg_lambda,
                             node.lower, node.upper))
        if direction > 0:
            left.upper = min(left.upper, mid)
            right.lower = max(right.lower, mid)
        else:
            left.lower = max(left.lower, mid)
            right.upper = min(right.upper, mid)

    cdef inline const uint32_t * _bins_left(self, grow_node * node) noexcept nogil:
        """The bin bitset of the node's categorical split (NULL for a numeric one)."""
        return &self.cat_pool[node.split.cat_at] if node.split.categorical else NULL

    cdef void _find_split(self, grow_node * node,
                          const unsigned char * feature_mask) noexcept nogil:
        if self.has_penalty:
            self._fill_penalty(node, 0, self.n_features)
        self._keep_split(node, self._best_split(node, feature_mask))

    cdef void _rescore_features(self, Py_ssize_t n_open, int m, bint group_first_use,
                                const unsigned char * feature_mask) noexcept nogil:
        """Feature ``m`` (or, with ``group_first_use``, its cost group) has just been
        used by the model for the first time: its once-per-model cost no longer
        applies, so its candidate split -- and its group-mates' -- may now beat an open
        leaf's cached best split. The other features' penalties did not change: only
        these are rescanned."""
        cdef Py_ssize_t i, f
        cdef int32_t group = self.feature_group[m]
        cdef bint any_rescored = False
        cdef grow_node * leaf
        cdef split_struct candidate
        for f in range(self.n_features):
            self.single_mask[f] = feature_mask[f] and (
                f == m or (group_first_use and self.feature_group[f] == group))
            any_rescored = any_rescored or self.single_mask[f]
        if any_rescored:
            for i in range(n_open):
                leaf = &self.nodes[self.open_leaves[i]]
                self._fill_penalty(leaf, 0, self.n_features)
                candidate = self._best_split(leaf, self.single_mask)
                # the same tie-break as a full search: the lower feature wins
                if candidate.feature >= 0 and (
                        leaf.split.feature < 0 or self.single_mask[leaf.split.feature]
                        or candidate.gain > leaf.split.gain
                        or (candidate.gain == leaf.split.gain
                            and candidate.feature < leaf.split.feature)):
                    self._keep_split(leaf, candidate)
        for f in range(self.n_features):
            self.single_mask[f] = 0

    cdef Py_ssize_t _open_if_splittable(self, grow_node * child,
                                        const unsigned char * feature_mask,
                                        Py_ssize_t n_open) noexcept nogil:
        """Search the child's best split; add it to the open leaves if it has one (or,
        when a coupled cost may still drop, if it could be split later). Returns the new
        number of open leaves."""
        if child.histograms != NULL and self._can_split(child):
            self._find_split(child, feature_mask)
            if child.split.feature >= 0 or self.keep_dormant:
                self.open_leaves[n_open] = <int32_t> (child - self.nodes)
                return n_open + 1
        self._release_histograms(child)
        return n_open

    cdef void _build(self, grow_node * node, int32_t * rows, const double * gradients,
                     const double * hessians, const unsigned char * feature_mask) noexcept nogil:
        """The node's histograms (and, with a cost penalty, acquisition counts);
        ``node.histograms`` stays NULL when memory runs out."""
        node.histograms = self._take_histograms()
        if node.histograms == NULL:
            return
        if self.exchange is not None:
            if self._fetch_remote_histograms(node) != 0:
                self._release_histograms(node)
        elif self._build_into(node.histograms, &rows[node.start], node.stop - node.start,
                              gradients, hessians, feature_mask) != 0:
            self._release_histograms(node)

    cdef int _build_into(self, hist_struct * out, int32_t * rows, Py_ssize_t n_rows,
                         const double * gradients, const double * hessians,
                         const unsigned char * feature_mask) noexcept nogil:
        """The histograms of ``rows[:n_rows]`` into the block ``out`` (followed by the
        acquisition counts, with a cost penalty); 0, or -1 when memory runs out."""
        cdef uint32_t * unacquired = <uint32_t *> (out + self.n_features * self.n_bins)
        if self.has_penalty:
            return build_histograms_core(
                self.binned_data, self.bin_bytes, self.n_samples, self.n_features, rows, n_rows,
                gradients, hessians, feature_mask, &self.n_value_bins[0], self.missing_bin,
                out, self.n_bins, self.ordered_gradients, self.ordered_hessians,
                self.count_mask, &self.state.acquired[0, 0], &self.state.groups_touched[0, 0],
                &self.feature_group[0], unacquired, unacquired + self.n_features,
                self.sparse, self.n_threads)
        return build_histograms_core(
            self.binned_data, self.bin_bytes, self.n_samples, self.n_features, rows, n_rows,
            gradients, hessians, feature_mask, &self.n_value_bins[0], self.missing_bin,
            out, self.n_bins, self.ordered_gradients, self.ordered_hessians, NULL, NULL,
            NULL, NULL, NULL, NULL, self.sparse, self.n_threads)

    cdef int _fetch_remote_histograms(self, grow_node * node) noexcept with gil:
        """The node's histograms and counts summed over the workers: those the last
        remote split brought (its smaller child's), else asked for. -1 with
        ``remote_error`` set when the exchange fails."""
        cdef Py_ssize_t node_id = node - self.nodes
        cdef const unsigned char[::1] block
        try:
            if self.pending is not None and self.pending_node == node_id:
                block = self.pending
            else:
                block = self.exchange.histograms(node_id)
            self.pending = None
            if block.shape[0] != <Py_ssize_t> self.histograms_bytes:
                raise ValueError(f"the exchange sent {block.shape[0]} bytes of histograms "
                                 f"for {self.histograms_bytes}")
            memcpy(node.histograms, &block[0], self.histograms_bytes)
            return 0
        except BaseException as error:
            self.remote_error = error
            return -1

    cdef int _begin_remote_tree(self, const unsigned char * feature_mask, double * sum_g,
                                double * sum_h, Py_ssize_t * n_rows) noexcept with gil:
        """Start a tree on the workers (they take the feature mask and, with a cost
        penalty, which features to count); their row count and gradient sums."""
        try:
            mask = np.asarray(<const unsigned char[:self.n_features]> feature_mask).copy()
            counted = np.asarray(<unsigned char[:self.n_features]> self.count_mask).copy()
            n, g, h = self.exchange.begin_tree(mask, counted if self.has_penalty else None)
            n_rows[0], sum_g[0], sum_h[0] = n, g, h
            if not 0 < n_rows[0] <= self.n_samples:
                raise ValueError(f"the workers hold {n_rows[0]} rows of the tree, not in "
                                 f"[1, {self.n_samples}]")
            return 0
        except BaseException as error:
            self.remote_error = error
            return -1

    cdef Py_ssize_t _split_remote(self, grow_node * node, Py_ssize_t left_id,
                                  Py_ssize_t build_id, int64_t * newly,
                                  int64_t * newly_touched) noexcept with gil:
        """Split the node's rows on the workers (with a cost penalty they acquire the
        feature: ``newly`` / ``newly_touched`` of their inputs acquire it / touch its
        group) and, when ``build_id >= 0``, build that child's histograms in the same
        round trip; returns the number of rows sent left (-1: ``remote_error``)."""
        try:
            # a categorical split sends the bitset of the bins going left
            bins_left = self._bins_left(node)
            cat_bins = None if bins_left == NULL else \
                np.array(<const uint32_t[:1 + bins_left[0]]> bins_left)
            n_left, n_new, n_new_touched, block = self.exchange.split(
                node - self.nodes, node.split.feature, node.split.bin_threshold,
                bool(node.split.default_left), left_id, build_id, bool(self.has_penalty),
                cat_bins)
            self.pending, self.pending_node = block, build_id
            newly[0], newly_touched[0] = n_new, n_new_touched
            return n_left
        except BaseException as error:
            self.remote_error = error
            return -1

    cdef void _subtract_counts(self, grow_node * parent, grow_node * small,
                               grow_node * large,
                               const unsigned char * feature_mask) noexcept nogil:
        """The sibling's acquisition counts: parent minus the built child, except for
        the split feature (and its group), which every row of the parent now has."""
        cdef Py_ssize_t f
        cdef int m = parent.split.feature
        cdef int32_t group = self.feature_group[m]
        cdef uint32_t * pu = self._unacquired(parent)
        cdef uint32_t * pt = self._untouched(parent)
        cdef uint32_t * su = self._unacquired(small)
        cdef uint32_t * st = self._untouched(small)
        cdef uint32_t * lu = self._unacquired(large)
        cdef uint32_t * lt = self._untouched(large)
        for f in range(self.n_features):
            if feature_mask[f] and self.count_mask[f]:
                lu[f] = pu[f] - su[f]
                lt[f] = pt[f] - st[f]
                if f == m:
                    lu[f] = 0
                if group >= 0 and self.feature_group[f] == group:
                    lt[f] = 0

    cdef void _prepare_costs(self, const unsigned char * feature_mask) noexcept nogil:
        """Per tree: which features need acquisition counts (a cost, and some training
        inputs with and some without it), which are fresh (a cost, and no input has
        it or its group), and whether leaves without a split must stay open because a
        feature's (or group's) once-per-model cost may still drop."""
        cdef Py_ssize_t f
        cdef int32_t group
        cdef bint costly, fresh
        self.keep_dormant = False
        for f in range(self.n_features):
            group = self.feature_group[f]
            costly = ((self.feature_costs[f] > 0 and self.state.n_acquired[f] < self.n_samples)
                      or (group >= 0 and self.group_costs[group] > 0
                          and self.state.n_touched[group] < self.n_samples))
            fresh = (self.state.n_acquired[f] == 0
                     and (group < 0 or self.state.n_touched[group] == 0))
            self.count_mask[f] = costly and not fresh
            self.fresh_mask[f] = costly and fresh
            if feature_mask[f] and self.cost_tradeoff > 0 and (
                    (self.coupled_costs[f] > 0 and not self.state.feature_used[f])
                    or (group >= 0 and self.coupled_group_costs[group] > 0
                        and not self.state.group_used[group])):
                self.keep_dormant = True

    def grow(self, const double[::1] gradients, const double[::1] hessians,
             int32_t[::1] rows, const unsigned char[::1] feature_mask):
        """Grow one tree on ``rows`` (sorted in-bag sample indices, reordered in place).

        Returns
        -------
        ndarray of NODE_DTYPE
            Node 0 is the root; children have larger ids than their parent.
        """
        if self.exchange is not None:
            raise ValueError("this grower's rows are on workers: grow_remote")
        self._check_inputs(gradients, hessians, rows, feature_mask)
        return self._grow(&rows[0], &gradients[0], &hessians[0], rows.shape[0],
                          &feature_mask[0])

    def grow_remote(self, const unsigned char[::1] feature_mask):
        """Grow one tree on rows held by the workers behind ``exchange`` (each worker
        of a Dask training grows it so): the same growth as :meth:`grow`, with the workers'
        histograms summed, and the split of a leaf's rows (and, with a cost penalty,
        their acquisitions) done by the workers. The exchange's methods:

        * ``begin_tree(feature_mask, count_mask or None)`` -> ``(n_rows, sum_gradients,
          sum_hessians)`` of the tree's in-bag rows;
        * ``histograms(node)`` -> the node's histograms and acquisition counts, summed,
          as the bytes of one histogram block;
        * ``split(node, feature, bin_threshold, default_left, left_id, build_id,
          acquire, cat_bins)`` -> ``(n_left, newly_acquired, newly_touched, block or
          None)``: the children get ids ``left_id`` and ``left_id + 1``; ``block`` holds
          child ``build_id``'s histograms (``build_id = -1``: none wanted); ``cat_bins``
          is None for a numeric split, else the bitset (uint32: a length word, then the
          words) of the bins going left.

        An exception of the exchange is raised once growth has released its buffers."""
        if self.exchange is None:
            raise ValueError("this grower has no exchange: grow")
        if feature_mask.shape[0] != self.n_features:
            raise ValueError("feature_mask does not match the number of features")
        return self._grow(NULL, NULL, NULL, 0, &feature_mask[0])

    cdef _grow(self, int32_t * row_ptr, const double * g, const double * h,
               Py_ssize_t n_rows, const unsigned char * mask):
        """The growth loop of :meth:`grow` and :meth:`grow_remote` (``row_ptr``, ``g``,
        ``h`` NULL: the rows are on the exchange's workers)."""
        self.n_nodes = 0       # until this tree is grown: add_leaf_values has nothing
        self.pending = None
        self.cat_pool_used = 0
        self.cat_pool_failed = False
        self.remote_error = None
        cdef bint remote = self.exchange is not None
        cdef Py_ssize_t n_nodes = 1, n_open = 0, n_leaves = 1, i, pick, n_left
        cdef Py_ssize_t build_id
        cdef grow_node * node
        cdef grow_node * left
        cdef grow_node * right
        cdef grow_node * small
        cdef grow_node * large
        cdef grow_node * candidate
        cdef bint partition_error = False, allocation_error = False, remote_failed = False
        cdef bint first_use, group_first_use
        cdef int m
        cdef int32_t group
        cdef int64_t newly = 0, newly_touched = 0
        cdef double sum_g = 0.0, sum_h = 0.0
        with nogil:
            if self.has_penalty:
                self._prepare_costs(mask)
            if remote:
                if self._begin_remote_tree(mask, &sum_g, &sum_h, &n_rows) != 0:
                    remote_failed = True
                    n_rows = 0
            for i in range(0 if remote else n_rows):
                sum_g += g[row_ptr[i]]
                sum_h += h[row_ptr[i]]
            self.n_rows_grown = n_rows
            node = &self.nodes[0]
            _init_child(node, 0, -1)
            node.start, node.stop = 0, n_rows
            node.sum_gradients, node.sum_hessians = sum_g, sum_h
            if not remote_failed and self._can_split(node):
                self._build(node, row_ptr, g, h, mask)
                if node.histograms == NULL:
                    allocation_error = True
                else:
                    n_open = self._open_if_splittable(node, mask, 0)
            while n_open > 0 and (self.num_leaves < 0 or n_leaves < self.num_leaves) \
                    and not allocation_error:
                # best-first: largest net gain, ties to the lowest id; depth-wise: the
                # oldest open leaf (ids are given in creation order, so: level order).
                # Leaves without a split (kept open for a cost drop) are skipped.
                pick = -1
                for i in range(n_open):
                    candidate = &self.nodes[self.open_leaves[i]]
                    if candidate.split.feature < 0:
                        continue
                    if pick < 0:
                        pick = i
                    elif self.best_first:
                        if (candidate.split.gain > self.nodes[self.open_leaves[pick]].split.gain
                                or (candidate.split.gain
                                    == self.nodes[self.open_leaves[pick]].split.gain
                                    and self.open_leaves[i] < self.open_leaves[pick])):
                            pick = i
                    elif self.open_leaves[i] < self.open_leaves[pick]:
                        pick = i
                if pick < 0:
                    break
                node = &self.nodes[self.open_leaves[pick]]
                n_open -= 1
                self.open_leaves[pick] = self.open_leaves[n_open]

                # the child whose histograms are built (the smaller), if either child
                # may be split; on workers, in the same round trip as the split
                build_id = self._child_to_build(node, n_nodes)
                if remote:
                    n_left = self._split_remote(node, n_nodes, build_id, &newly,
                                                &newly_touched)
                    if n_left < 0:
                        remote_failed = True
                        break
                else:
                    n_left = split_rows_parallel(
                        &row_ptr[node.start], node.stop - node.start,
                        self._column(node.split.feature), self.bin_bytes,
                        node.split.bin_threshold,
                        node.split.default_left, self.missing_bin, self._bins_left(node),
                        self.buffer, self.n_threads)
                if n_left != node.split.count_left:
                    partition_error = True
                    break
                if self.has_penalty:
                    m = node.split.feature
                    group = self.feature_group[m]
                    group_first_use = (group >= 0 and not self.state.group_used[group]
                                       and self.coupled_group_costs[group] > 0)
                    if remote:
                        node.new_acquisitions += newly
                        first_use = self.state.add_acquisitions(m, newly, newly_touched)
                    else:
                        first_use = self.state.acquire_rows(
                            &row_ptr[node.start], node.stop - node.start, m,
                            &node.new_acquisitions)
                    if self.keep_dormant and ((first_use and self.coupled_costs[m] > 0)
                                              or group_first_use):
                        self._rescore_features(n_open, m, group_first_use, mask)
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
                _init_child(left, node.depth + 1, <int32_t> (node - self.nodes))
                _init_child(right, node.depth + 1, <int32_t> (node - self.nodes))
                if node.split.categorical == 2:
                    left.extra_lambda = right.extra_lambda = self.cat_params.cat_l2
                self._bound_children(node, left, right)

                # Histograms: build the smaller child's, subtract for the sibling.
                if build_id >= 0:
                    if build_id == node.left:
                        small, large = left, right
                    else:
                        small, large = right, left
                    self._build(small, row_ptr, g, h, mask)
                    if small.histograms == NULL:
                        remote_failed = self.remote_error is not None
                        allocation_error = not remote_failed
                        break
                    if self._can_split(large):
                        large.histograms = self._take_histograms()
                        if large.histograms == NULL:
                            allocation_error = True
                            break
                        subtract_histograms_core(
                            node.histograms, small.histograms, large.histograms,
                            self.n_features, self.n_bins, mask, &self.n_value_bins[0],
                            self.missing_bin, self.n_threads)
                        if self.has_penalty:
                            self._subtract_counts(node, small, large, mask)
                self._release_histograms(node)
                n_open = self._open_if_splittable(left, mask, n_open)
                n_open = self._open_if_splittable(right, mask, n_open)
            for i in range(n_nodes):
                self._release_histograms(&self.nodes[i])
        self.pending = None
        if remote_failed or self.remote_error is not None:
            error, self.remote_error = self.remote_error, None
            raise error
        if allocation_error:
            raise MemoryError(f"cannot allocate a leaf's histograms: "
                              f"{self.histograms_bytes} bytes")
        if self.cat_pool_failed:
            raise MemoryError("cannot allocate the categorical splits' bin bitsets")
        if partition_error:
            raise RuntimeError("internal error: row partition disagrees with the histogram")
        self.n_nodes = n_nodes
        return self._to_array(n_nodes)

    # A worker's rows of a distributed tree: the tree grower's grow_remote asks, through
    # its exchange, for begin_tree, then build_node / split_node per leaf;
    # add_tree_values adds the finished tree. Node ids are the tree grower's.

    def begin_tree(self, gradients, hessians, rows, feature_mask, count_mask=None):
        """Start a tree on this worker's in-bag ``rows`` (int32, reordered in place by
        the splits; may be empty), kept with the arrays until the next tree.
        ``count_mask``: the features whose acquisition counts the histograms carry (the
        tree grower's, from the counts of all workers); needed with a cost penalty.

        Returns (number of rows, sum of gradients, sum of hessians) of the rows."""
        if self.exchange is not None:
            raise ValueError("begin_tree is a row grower's: this grower grows trees "
                             "through its exchange")
        cdef const double[::1] g = gradients
        cdef const double[::1] h = hessians
        cdef int32_t[::1] r = rows
        cdef const unsigned char[::1] fm = feature_mask
        cdef const unsigned char[::1] counted
        cdef Py_ssize_t i, n = r.shape[0]
        cdef double sum_g = 0.0, sum_h = 0.0
        self._check_inputs(g, h, r, fm, True)
        if self.has_penalty:
            if count_mask is None:
                raise ValueError("a cost-penalised tree needs the tree grower's count_mask")
            counted = count_mask
            if counted.shape[0] != self.n_features:
                raise ValueError("count_mask does not match the number of features")
            for i in range(self.n_features):
                self.count_mask[i] = counted[i]
        self.tree_arrays = (rows, gradients, hessians, feature_mask)   # kept alive
        self.tree_rows = &r[0] if n else NULL
        self.tree_gradients, self.tree_hessians = &g[0], &h[0]
        self.tree_mask = &fm[0]
        for i in range(n):
            sum_g += g[r[i]]
            sum_h += h[r[i]]
        _init_child(&self.nodes[0], 0, -1)
        self.nodes[0].start, self.nodes[0].stop = 0, n
        self.n_nodes = 1
        self.n_rows_grown = n
        return n, sum_g, sum_h

    cdef grow_node * _tree_node(self, Py_ssize_t node_id) except NULL:
        if self.tree_arrays is None or not 0 <= node_id < self.n_nodes:
            raise ValueError(f"node {node_id} is not a node of the tree begun here")
        return &self.nodes[node_id]

    def build_node(self, Py_ssize_t node_id):
        """The histograms (and acquisition counts) of this worker's rows of a node, as
        the bytes of one histogram block (zeros where the feature mask is 0)."""
        cdef grow_node * node = self._tree_node(node_id)
        block = np.zeros(self.histograms_bytes, dtype=np.uint8)
        cdef unsigned char[::1] out = block
        cdef int status = 0
        if node.stop > node.start:
            with nogil:
                status = self._build_into(<hist_struct *> &out[0], &self.tree_rows[node.start],
                                          node.stop - node.start, self.tree_gradients,
                                          self.tree_hessians, self.tree_mask)
        if status != 0:
            raise MemoryError("cannot allocate the histogram counters' scratch")
        return block

    def split_node(self, Py_ssize_t node_id, int feature, int bin_threshold,
                   bint default_left, Py_ssize_t left_id, bint acquire, cat_bins=None):
        """Split this worker's rows of a node (children ``left_id``, ``left_id + 1``);
        with ``acquire``, the rows acquire ``feature``. ``cat_bins``: for a split of a
        categorical feature (and only then), the bitset of the bins going left (uint32:
        a length word ``n``, then ``n`` words; ``bin_threshold`` unused). Returns (rows sent
        left, rows that newly acquired the feature, rows that newly touched its group)."""
        cdef grow_node * node = self._tree_node(node_id)
        cdef const uint32_t[::1] bins_left
        cdef const uint32_t * cat_ptr = NULL
        if not 0 <= feature < self.n_features or not 0 <= bin_threshold < self.missing_bin:
            raise ValueError(f"no split on feature {feature} at bin {bin_threshold}")
        if (cat_bins is not None) != (self.categorical != NULL
                                      and self.categorical[feature] != 0):
            raise ValueError(f"feature {feature} is "
                             f"{'numeric' if cat_bins is not None else 'categorical'} "
                             f"here: a split on it " + ("takes no cat_bins"
                             if cat_bins is not None else "needs its cat_bins"))
        if cat_bins is not None:
            bins_left = np.ascontiguousarray(cat_bins, dtype=np.uint32)
            check_bitset(bins_left, "cat_bins")
            cat_ptr = &bins_left[0]
        if left_id != self.n_nodes or left_id + 2 > self.capacity or node.left != -1:
            raise ValueError(f"node {node_id} cannot get children {left_id}, {left_id + 1} "
                             f"here ({self.n_nodes} nodes)")
        cdef Py_ssize_t n_left = 0, n_rows = node.stop - node.start
        cdef int64_t newly = 0, touched_before = 0
        cdef int child
        cdef int32_t group = self.feature_group[feature] if self.has_penalty else -1
        if acquire and not self.has_penalty:
            raise ValueError("acquire needs a cost penalty (set_cost_penalty)")
        if group >= 0:
            touched_before = self.state.n_touched[group]
        if n_rows:
            with nogil:
                n_left = split_rows_parallel(
                    &self.tree_rows[node.start], n_rows, self._column(feature),
                    self.bin_bytes,
                    bin_threshold, default_left, self.missing_bin, cat_ptr, self.buffer,
                    self.n_threads)
                if acquire:
                    self.state.acquire_rows(&self.tree_rows[node.start], n_rows, feature,
                                            &newly)
        node.left, node.right = left_id, left_id + 1
        for child in range(2):
            _init_child(&self.nodes[left_id + child], node.depth + 1, node_id)
        self.nodes[left_id].start, self.nodes[left_id].stop = node.start, node.start + n_left
        self.nodes[left_id + 1].start = node.start + n_left
        self.nodes[left_id + 1].stop = node.stop
        self.n_nodes = left_id + 2
        return n_left, newly, (self.state.n_touched[group] - touched_before
                               if acquire and group >= 0 else 0)

    def tree_node_sizes(self):
        """The number of this worker's rows in each node of the tree begun here (int32):
        its partition (the rows passed to :meth:`begin_tree`) as
        :meth:`AcquisitionState.acquire_partition` reads it."""
        sizes = np.zeros(self.n_nodes, dtype=np.int32)
        cdef Py_ssize_t node
        for node in range(self.n_nodes):
            sizes[node] = self.nodes[node].stop - self.nodes[node].start
        return sizes

    def add_tree_values(self, node_struct[::1] tree, double[:, :] raw, int output):
        """``raw[r, output] += value of r's leaf`` for this worker's rows of the tree
        begun here (the tree grower's finished tree, whose nodes these are)."""
        if self.tree_arrays is None or tree.shape[0] != self.n_nodes:
            raise ValueError(f"the tree has {tree.shape[0]} nodes, {self.n_nodes} here")
        if raw.shape[0] != self.n_samples or not 0 <= output < raw.shape[1]:
            raise ValueError("raw does not match the binned data")
        cdef Py_ssize_t node, i
        for node in range(self.n_nodes):
            if (tree[node].left == -1) != (self.nodes[node].left == -1):
                raise ValueError("the tree's shape differs from the one grown here")
        with nogil:
            for node in range(self.n_nodes):
                if self.nodes[node].left == -1:
                    for i in range(self.nodes[node].start, self.nodes[node].stop):
                        raw[self.tree_rows[i], output] += tree[node].value

    def root_split_terms(self, const double[::1] gradients, const double[::1] hessians,
                         int32_t[::1] rows, const unsigned char[::1] feature_mask):
        """What deciding the root split of a tree grown now weighs, per feature: the
        best raw gain of a split on it and its cost increment (the penalty at
        ``cost_tradeoff = 1``; zeros without a cost penalty). A split on ``f`` is made
        when ``raw_gain[f] - cost_tradeoff * increment[f] > gamma`` for the best ``f``:
        from these, the smallest trade-off at which no root split pays its cost.

        Returns
        -------
        raw_gain, increment : float64 arrays (n_features,)
            ``raw_gain[f] = -inf`` where no split on ``f`` is allowed.
        """
        if self.exchange is not None:
            raise ValueError("this grower's rows are on workers")
        self._check_inputs(gradients, hessians, rows, feature_mask)
        self.n_nodes = 0       # node 0 is overwritten: the last tree is gone
        raw_gain = np.full(self.n_features, -np.inf)
        increment = np.zeros(self.n_features)
        cdef double[::1] gain_view = raw_gain
        cdef double[::1] increment_view = increment
        cdef grow_node * node = &self.nodes[0]
        cdef const unsigned char * mask = &feature_mask[0]
        cdef double sum_g = 0.0, sum_h = 0.0, tradeoff = self.cost_tradeoff
        cdef Py_ssize_t i, f
        cdef monotone_struct bounds
        for i in range(rows.shape[0]):
            sum_g += gradients[rows[i]]
            sum_h += hessians[rows[i]]
        _init_child(node, 0, -1)
        node.start, node.stop = 0, rows.shape[0]
        node.sum_gradients, node.sum_hessians = sum_g, sum_h
        if not self._can_split(node):
            return raw_gain, increment
        if self.has_penalty:
            self._prepare_costs(mask)
        self._build(node, &rows[0], &gradients[0], &hessians[0], mask)
        if node.histograms == NULL:
            raise MemoryError(f"cannot allocate a leaf's histograms: "
                              f"{self.histograms_bytes} bytes")
        bounds.direction, bounds.lower, bounds.upper = self.monotone, node.lower, node.upper
        find_best_split_core(
            node.histograms, self.n_features, self.n_bins, &self.n_value_bins[0],
            self.missing_bin, mask, sum_g, sum_h, <uint32_t> rows.shape[0], self.reg_lambda,
            self.min_child_weight, self.min_data_in_leaf, NULL, self.categorical,
            &self.cat_params, self.per_feature, self.cat_scratch, self.cat_words,
            &bounds if self.monotone != NULL else NULL, self.n_threads)
        if self.has_penalty:
            self.cost_tradeoff = 1.0
            self._fill_penalty(node, 0, self.n_features)
            self.cost_tradeoff = tradeoff
        for f in range(self.n_features):
            if self.per_feature[f].feature >= 0:
                gain_view[f] = self.per_feature[f].raw_gain
            if self.has_penalty:
                increment_view[f] = self.penalty[f]
        self._release_histograms(node)
        return raw_gain, increment

    def add_leaf_values(self, const int32_t[::1] rows, double[:, :] raw, int output):
        """``raw[r, output] += value of r's leaf`` for the rows of the last tree grown,
        from its partition (``rows`` as left by :meth:`grow`): no traversal needed.
        ``raw`` may have any strides; Fortran order keeps the writes in one column."""
        cdef Py_ssize_t node, i
        cdef double value
        if self.exchange is not None:
            raise ValueError("this grower's rows are on workers")
        if raw.shape[0] != self.n_samples or not 0 <= output < raw.shape[1]:
            raise ValueError("raw does not match the binned data")
        if self.n_nodes == 0:
            raise ValueError("no tree to add: grow one first")
        if rows.shape[0] != self.n_rows_grown:
            raise ValueError(f"rows has {rows.shape[0]} entries, the last tree was grown "
                             f"on {self.n_rows_grown}")
        check_rows_in_range(rows, self.n_samples)
        # the leaves hold disjoint rows: one thread a leaf, every row added to once
        cdef int n_threads = self.n_threads if rows.shape[0] >= MIN_PARALLEL_ROWS else 1
        for node in prange(self.n_nodes, nogil=True, schedule="dynamic",
                           num_threads=n_threads):
            if self.nodes[node].left != -1:
                continue
            value = self._node_value(&self.nodes[node])
            for i in range(self.nodes[node].start, self.nodes[node].stop):
                raw[rows[i], output] += value

    def output_bounds(self):
        """The monotone bounds of each node of the last tree grown (``lower``,
        ``upper``: its output before the learning rate lies within them; -inf and inf
        without constraints), for leaf values set after growth to stay within them."""
        if self.n_nodes == 0:
            raise ValueError("no tree: grow one first")
        lower = np.empty(self.n_nodes, dtype=np.float64)
        upper = np.empty(self.n_nodes, dtype=np.float64)
        cdef Py_ssize_t i
        for i in range(self.n_nodes):
            lower[i] = self.nodes[i].lower
            upper[i] = self.nodes[i].upper
        return lower, upper

    cdef _to_array(self, Py_ssize_t n_nodes):
        out = np.zeros(n_nodes, dtype=NODE_DTYPE).view(GrownTree)
        cdef node_struct[::1] view = out
        cdef Py_ssize_t i, n_words = 0
        cdef grow_node * node
        for i in range(n_nodes):
            node = &self.nodes[i]
            if node.left != -1 and node.split.categorical:
                n_words += 1 + self._bins_left(node)[0]
        out.cat_bin_words = np.zeros(n_words, dtype=np.uint32)
        cdef uint32_t[::1] words = out.cat_bin_words
        n_words = 0
        with nogil:
            for i in range(n_nodes):
                node = &self.nodes[i]
                view[i].value = self._node_value(node)
                view[i].sum_hessian = node.sum_hessians
                view[i].n_samples = <int32_t> (node.stop - node.start)
                view[i].depth = node.depth
                view[i].left = node.left
                view[i].right = node.right
                if node.left == -1:
                    view[i].feature = -1
                else:
                    view[i].feature = node.split.feature
                    view[i].bin_threshold = <uint16_t> node.split.bin_threshold
                    view[i].default_left = node.split.default_left
                    if node.split.categorical:
                        # threshold: the bitset's offset, set when the model takes the
                        # tree (TreeEnsemble._add_tree)
                        view[i].categorical = 1
                        view[i].cat_bins_at = <uint32_t> n_words
                        memcpy(&words[n_words], self._bins_left(node),
                               (1 + self._bins_left(node)[0]) * sizeof(uint32_t))
                        n_words += 1 + self._bins_left(node)[0]
                    else:
                        view[i].threshold = self.bin_edges[
                            self.edges_indptr[node.split.feature] + node.split.bin_threshold]
                    view[i].gain = node.split.raw_gain
                    view[i].cost_penalty = node.split.cost_penalty
                    view[i].new_acquisitions = <int32_t> node.new_acquisitions
        return out
