"""Best split of one leaf under the second-order gain minus a per-feature cost penalty."""
from cython.parallel cimport prange
from libc.math cimport INFINITY
from libc.stdint cimport uint32_t
from libc.stdlib cimport free

import numpy as np

from ._safety cimport check_n_threads, checked_malloc
from ._types cimport hist_struct

# Below this many (feature, bin) pairs the scan runs on one thread.
cdef Py_ssize_t MIN_PARALLEL_WORK = 8192


cdef class SplitInfo:
    """The best split of a leaf (``feature == -1``: no admissible split).

    ``gain`` is ``raw_gain - cost_penalty``; rows with bin ``<= bin_threshold`` go left,
    missing values go left when ``default_left``.
    """
    cdef public double gain, raw_gain, cost_penalty
    cdef public int feature, bin_threshold
    cdef public bint default_left
    cdef public double sum_gradient_left, sum_hessian_left
    cdef public double sum_gradient_right, sum_hessian_right
    cdef public unsigned int count_left, count_right

    def __repr__(self):
        return (f"SplitInfo(feature={self.feature}, bin_threshold={self.bin_threshold}, "
                f"default_left={self.default_left}, gain={self.gain!r}, "
                f"raw_gain={self.raw_gain!r}, cost_penalty={self.cost_penalty!r}, "
                f"count_left={self.count_left}, count_right={self.count_right})")


cdef inline double _score(double g, double h, double reg_lambda) noexcept nogil:
    return g * g / (h + reg_lambda)


cdef double leaf_value_core(double sum_gradients, double sum_hessians,
                            double reg_lambda) noexcept nogil:
    if sum_hessians + reg_lambda <= 0.0:
        return 0.0
    return -sum_gradients / (sum_hessians + reg_lambda)


def leaf_value(double sum_gradients, double sum_hessians, double reg_lambda):
    """Newton step ``-G / (H + lambda)`` of a leaf (before the learning rate)."""
    return leaf_value_core(sum_gradients, sum_hessians, reg_lambda)


cdef inline void _scan_feature(
    Py_ssize_t f, const hist_struct * h, uint32_t n_value_bins, int missing_bin,
    double sum_gradients, double sum_hessians, uint32_t count, double parent_score,
    double reg_lambda, double min_child_weight, uint32_t min_data_in_leaf,
    double penalty, split_struct * s) noexcept nogil:
    cdef double gl, hl, gr, hr, gain
    cdef uint32_t cl, cr
    cdef Py_ssize_t b
    cdef int direction
    cdef double mg = h[missing_bin].sum_gradients
    cdef double mh = h[missing_bin].sum_hessians
    cdef uint32_t mc = h[missing_bin].count
    cdef bint top_bin_empty = h[n_value_bins - 1].count == 0
    s.gain = -INFINITY
    s.feature = -1
    # direction 0: missing values go right; 1: they go left (tried only if any)
    for direction in range(2):
        if direction == 1 and mc == 0:
            break
        gl = mg if direction == 1 else 0.0
        hl = mh if direction == 1 else 0.0
        cl = mc if direction == 1 else 0
        for b in range(<Py_ssize_t> n_value_bins - 1):
            # An empty bin gives the same partition as the bin before it: skipping it
            # keeps the lowest threshold whatever the rounding noise of a histogram
            # obtained by subtraction.
            if h[b].count == 0 and b > 0:
                continue
            # Missing values alone on the left mirror "every value left, missing right",
            # which direction 0 reaches when the top bin is empty: one form per split.
            if direction == 1 and h[b].count == 0 and top_bin_empty:
                continue
            gl = gl + h[b].sum_gradients
            hl = hl + h[b].sum_hessians
            cl = cl + h[b].count
            if cl < min_data_in_leaf or hl < min_child_weight:
                continue
            cr = count - cl
            hr = sum_hessians - hl
            if cr < min_data_in_leaf or hr < min_child_weight:
                break   # the right side only shrinks from here on
            gr = sum_gradients - gl
            gain = 0.5 * (_score(gl, hl, reg_lambda) + _score(gr, hr, reg_lambda)
                          - parent_score)
            if gain - penalty > s.gain:
                s.gain = gain - penalty
                s.raw_gain = gain
                s.cost_penalty = penalty
                s.feature = f
                s.bin_threshold = b
                s.default_left = direction == 1
                s.sum_gradient_left = gl
                s.sum_hessian_left = hl
                s.count_left = cl


cdef split_struct find_best_split_core(
    const hist_struct * histograms, Py_ssize_t n_features, Py_ssize_t n_bins,
    const uint32_t * n_value_bins, int missing_bin, const unsigned char * feature_mask,
    double sum_gradients, double sum_hessians, uint32_t count,
    double reg_lambda, double min_child_weight, uint32_t min_data_in_leaf,
    const double * cost_penalty, split_struct * per_feature, int n_threads) noexcept nogil:
    """Best split over the masked-in features; ``per_feature`` is scratch space for
    ``n_features`` results; ``cost_penalty == NULL``: no penalty."""
    cdef Py_ssize_t f, work = 0
    cdef double parent_score = _score(sum_gradients, sum_hessians, reg_lambda)
    cdef split_struct best
    for f in range(n_features):
        per_feature[f].feature = -1
        if feature_mask[f]:
            work += n_value_bins[f]
    if work < MIN_PARALLEL_WORK:
        n_threads = 1
    for f in prange(n_features, schedule="static", num_threads=n_threads):
        if feature_mask[f] and n_value_bins[f] >= 2:
            _scan_feature(f, &histograms[f * n_bins], n_value_bins[f], missing_bin,
                          sum_gradients, sum_hessians, count, parent_score, reg_lambda,
                          min_child_weight, min_data_in_leaf,
                          cost_penalty[f] if cost_penalty != NULL else 0.0, &per_feature[f])
    # Deterministic reduction: ties go to the lowest feature (within a feature, see
    # _scan_feature: missing-right first, then the lowest bin).
    best.feature = -1
    best.gain = -INFINITY
    for f in range(n_features):
        if per_feature[f].feature >= 0 and per_feature[f].gain > best.gain:
            best = per_feature[f]
    return best


def find_best_split(
    const hist_struct[:, ::1] histograms,
    const uint32_t[::1] n_value_bins,
    const int missing_bin,
    const unsigned char[::1] feature_mask,
    const double sum_gradients,
    const double sum_hessians,
    const uint32_t count,
    const double reg_lambda,
    const double min_child_weight,
    const uint32_t min_data_in_leaf,
    const double[::1] cost_penalty,
    int n_threads,
):
    """Scan every masked-in feature's histogram for the split of largest net gain.

    The raw gain of a split into L and R is
    ``0.5 * (G_L^2/(H_L+lambda) + G_R^2/(H_R+lambda) - G^2/(H+lambda))``; the net gain
    subtracts ``cost_penalty[f]`` (None: no penalty, no extra work). Missing values
    (bin ``missing_bin``) are tried on both sides; a side needs at least
    ``min_data_in_leaf`` rows and ``min_child_weight`` hessian. Ties go to the lowest
    feature index, then to missing values going right, then to the lowest bin: the
    result does not depend on ``n_threads``.

    ``histograms`` is (n_features, n_bins); ``n_value_bins``, ``feature_mask`` and
    ``cost_penalty`` have one entry per feature, and ``missing_bin`` is a bin above every
    ``n_value_bins[f]``: ValueError otherwise.

    Returns
    -------
    SplitInfo
    """
    cdef Py_ssize_t n_features = histograms.shape[0]
    check_n_threads(n_threads)
    if (n_value_bins.shape[0] != n_features or feature_mask.shape[0] != n_features
            or (cost_penalty is not None and cost_penalty.shape[0] != n_features)):
        raise ValueError(f"n_value_bins / feature_mask / cost_penalty must have one entry "
                         f"per feature of histograms ({n_features})")
    nvb = np.asarray(n_value_bins)
    if not 0 <= missing_bin < histograms.shape[1] or (nvb.size and nvb.max() > missing_bin):
        raise ValueError("missing_bin must be a bin of histograms above every value bin")
    cdef const double * penalty = &cost_penalty[0] if cost_penalty is not None else NULL
    cdef split_struct best
    cdef split_struct * scratch = <split_struct *> checked_malloc(
        n_features, sizeof(split_struct), "the per-feature split results")
    with nogil:     # nothing in here can raise: no try/finally needed around it
        best = find_best_split_core(
            &histograms[0, 0], n_features, histograms.shape[1], &n_value_bins[0],
            missing_bin, &feature_mask[0], sum_gradients, sum_hessians, count, reg_lambda,
            min_child_weight, min_data_in_leaf, penalty, scratch, n_threads)
    free(scratch)
    result = SplitInfo()
    result.feature = best.feature
    result.gain = best.gain
    if best.feature >= 0:
        result.raw_gain = best.raw_gain
        result.cost_penalty = best.cost_penalty
        result.bin_threshold = best.bin_threshold
        result.default_left = best.default_left
        result.sum_gradient_left = best.sum_gradient_left
        result.sum_hessian_left = best.sum_hessian_left
        result.count_left = best.count_left
        result.sum_gradient_right = sum_gradients - best.sum_gradient_left
        result.sum_hessian_right = sum_hessians - best.sum_hessian_left
        result.count_right = count - best.count_left
    return result
