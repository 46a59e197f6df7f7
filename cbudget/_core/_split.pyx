"""Best split of one leaf under the second-order gain minus a per-feature cost penalty."""
from cython.parallel cimport prange
from libc.math cimport INFINITY
from libc.stdint cimport uint32_t
from libc.stdlib cimport free, malloc
from libc.string cimport memcpy
from libc.string cimport memset

import numpy as np

from ._safety cimport check_n_threads, checked_malloc
from ._types cimport hist_struct

# Below this many (feature, bin) pairs the scan runs on one thread.
cdef Py_ssize_t MIN_PARALLEL_WORK = 8192


cdef class SplitInfo:
    """The best split of a leaf (``feature == -1``: no admissible split).

    ``gain`` is ``raw_gain - cost_penalty``; rows with bin ``<= bin_threshold`` go left
    (a ``categorical`` split: rows whose bin is in ``left_bins``), missing values go
    left when ``default_left``.
    """
    cdef public double gain, raw_gain, cost_penalty
    cdef public int feature, bin_threshold
    cdef public bint default_left, categorical
    cdef public object left_bins      # sorted int array of the bins going left
    cdef public double sum_gradient_left, sum_hessian_left
    cdef public double sum_gradient_right, sum_hessian_right
    cdef public unsigned int count_left, count_right

    def __repr__(self):
        return (f"SplitInfo(feature={self.feature}, bin_threshold={self.bin_threshold}, "
                f"default_left={self.default_left}, categorical={self.categorical}, "
                f"left_bins={self.left_bins}, gain={self.gain!r}, "
                f"raw_gain={self.raw_gain!r}, cost_penalty={self.cost_penalty!r}, "
                f"count_left={self.count_left}, count_right={self.count_right})")


cdef inline double _score(double g, double h, double reg_lambda) noexcept nogil:
    return g * g / (h + reg_lambda)


cdef double leaf_value_core(double sum_gradients, double sum_hessians,
                            double reg_lambda) noexcept nogil:
    if sum_hessians + reg_lambda <= 0.0:
        return 0.0
    return -sum_gradients / (sum_hessians + reg_lambda)


cdef double bounded_output(double sum_gradients, double sum_hessians, double reg_lambda,
                           double lower, double upper) noexcept nogil:
    """The leaf value clipped to ``[lower, upper]`` (a leaf's monotone bounds)."""
    cdef double value = leaf_value_core(sum_gradients, sum_hessians, reg_lambda)
    if value < lower:
        return lower
    if value > upper:
        return upper
    return value


cdef inline const monotone_struct * _bounds_for(const monotone_struct * monotone,
                                                Py_ssize_t f) noexcept nogil:
    """The constraints a split of feature ``f`` must meet: NULL (none: the plain gain)
    unless ``f`` has a direction or the leaf's output is bounded."""
    if monotone == NULL or (monotone.direction[f] == 0 and monotone.lower == -INFINITY
                            and monotone.upper == INFINITY):
        return NULL
    return monotone


cdef inline double _split_gain(double gl, double hl, double gr, double hr, double reg_lambda,
                               double parent_score, const monotone_struct * monotone,
                               int direction) noexcept nogil:
    """``0.5 * (G_L^2/(H_L+lambda) + G_R^2/(H_R+lambda) - parent_score)``; with
    ``monotone`` (LightGBM's basic method), the children's outputs are clipped to the
    leaf's bounds and the gain is that of the clipped outputs, ``-(2 G v + (H + lambda)
    v^2)`` per child (the same at an unclipped optimum); -inf (never chosen) when the
    outputs go against ``direction`` (+1: left <= right, -1: left >= right)."""
    cdef double left, right
    if monotone == NULL:
        return 0.5 * (_score(gl, hl, reg_lambda) + _score(gr, hr, reg_lambda) - parent_score)
    left = bounded_output(gl, hl, reg_lambda, monotone.lower, monotone.upper)
    right = bounded_output(gr, hr, reg_lambda, monotone.lower, monotone.upper)
    if (direction > 0 and left > right) or (direction < 0 and left < right):
        return -INFINITY
    return 0.5 * (-(2.0 * gl * left + (hl + reg_lambda) * left * left)
                  - (2.0 * gr * right + (hr + reg_lambda) * right * right) - parent_score)


def leaf_value(double sum_gradients, double sum_hessians, double reg_lambda):
    """Newton step ``-G / (H + lambda)`` of a leaf (before the learning rate)."""
    return leaf_value_core(sum_gradients, sum_hessians, reg_lambda)


cdef inline void _scan_feature(
    Py_ssize_t f, const hist_struct * h, uint32_t n_value_bins, int missing_bin,
    double sum_gradients, double sum_hessians, uint32_t count, double parent_score,
    double reg_lambda, double min_child_weight, uint32_t min_data_in_leaf,
    double penalty, const monotone_struct * monotone, split_struct * s) noexcept nogil:
    """Feature ``f``'s best threshold into ``s`` (``monotone``: see _split_gain)."""
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
            gain = _split_gain(gl, hl, gr, hr, reg_lambda, parent_score, monotone,
                               monotone.direction[f] if monotone != NULL else 0)
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
                s.categorical = 0


# The encoding of a categorical candidate in _scan_categorical: bins and counts are
# below 65536 (uint16 bins).
cdef enum:
    CHOICE_END = 65536
    CHOICE_DIRECTION = 2 * CHOICE_END


cdef struct sort_entry:
    double key
    int bin


cdef inline bint _before(const sort_entry * x, const sort_entry * y) noexcept nogil:
    """Ascending key, ties to the lower bin: a total order (any sort gives one result)."""
    return x.key < y.key or (x.key == y.key and x.bin < y.bin)


cdef enum:
    SORT_RUN = 16     # insertion-sorted runs, then merged


cdef inline void _swap(sort_entry * a, sort_entry * b) noexcept nogil:
    cdef sort_entry t = a[0]
    a[0] = b[0]
    b[0] = t


cdef void _select(sort_entry * entries, Py_ssize_t lo, Py_ssize_t hi,
                  Py_ssize_t k) noexcept nogil:
    """Reorder ``entries[lo:hi]`` so that the entries before position ``k`` are the
    ones that come before it in :func:`_before`'s order (quickselect, median-of-three
    pivots); ``lo <= k < hi``."""
    cdef Py_ssize_t mid, i, store
    hi -= 1
    while lo < hi:
        mid = lo + (hi - lo) // 2
        if _before(&entries[mid], &entries[lo]):
            _swap(&entries[mid], &entries[lo])
        if _before(&entries[hi], &entries[lo]):
            _swap(&entries[hi], &entries[lo])
        if _before(&entries[mid], &entries[hi]):
            _swap(&entries[mid], &entries[hi])      # the median of three at hi: the pivot
        store = lo
        for i in range(lo, hi):
            if _before(&entries[i], &entries[hi]):
                _swap(&entries[i], &entries[store])
                store += 1
        _swap(&entries[store], &entries[hi])
        if k < store:
            hi = store - 1
        elif k > store:
            lo = store + 1
        else:
            return


cdef void _sort_ends(sort_entry * entries, sort_entry * scratch, Py_ssize_t n,
                     Py_ssize_t m) noexcept nogil:
    """Make ``entries[:m]`` and ``entries[n - m:n]`` what they are in the sorted order
    (the middle in any order): the many-vs-many search takes at most ``m`` levels from
    either end, so the thousands of levels of a wide column are selected, not all
    sorted."""
    if 2 * m >= n:
        _sort_entries(entries, scratch, n)
        return
    _select(entries, 0, n, m)
    _select(entries, m, n, n - m)
    _sort_entries(entries, scratch, m)
    _sort_entries(&entries[n - m], scratch, m)


cdef void _sort_entries(sort_entry * entries, sort_entry * scratch,
                        Py_ssize_t n) noexcept nogil:
    """Sort ``entries[:n]`` by :func:`_before` (``scratch``: room for ``n``): insertion
    sort of short runs, then bottom-up merges, the comparison inlined (qsort's call
    per comparison was a third of the training time on 5,000-level columns)."""
    cdef Py_ssize_t start, stop, i, j, width, lo, mid, hi, a, b, k
    cdef sort_entry item
    cdef sort_entry * src = entries
    cdef sort_entry * dst = scratch
    cdef sort_entry * swap
    start = 0
    while start < n:
        stop = min(start + SORT_RUN, n)
        for i in range(start + 1, stop):
            item = entries[i]
            j = i
            while j > start and _before(&item, &entries[j - 1]):
                entries[j] = entries[j - 1]
                j -= 1
            entries[j] = item
        start = stop
    width = SORT_RUN
    while width < n:
        lo = 0
        while lo < n:
            mid = min(lo + width, n)
            hi = min(lo + 2 * width, n)
            a, b, k = lo, mid, lo
            while a < mid and b < hi:
                if _before(&src[b], &src[a]):
                    dst[k] = src[b]
                    b += 1
                else:
                    dst[k] = src[a]
                    a += 1
                k += 1
            while a < mid:
                dst[k] = src[a]
                a += 1
                k += 1
            while b < hi:
                dst[k] = src[b]
                b += 1
                k += 1
            lo = hi
        swap = src
        src = dst
        dst = swap
        width *= 2
    if src != entries:
        memcpy(entries, src, n * sizeof(sort_entry))


cdef inline void _consider(
    double gl, double hl, uint32_t cl, double sum_gradients, double sum_hessians,
    uint32_t count, double parent_score, double child_lambda, double penalty,
    Py_ssize_t f, bint missing_left, int choice, int * best_choice, split_struct * s,
    uint32_t min_data_in_leaf, double min_child_weight, unsigned char kind,
    const monotone_struct * monotone) noexcept nogil:
    """Score one candidate left side (sums ``gl, hl, cl``); keep it in ``s`` when its net
    gain beats the best so far (``best_choice`` records which candidate it was)."""
    cdef double gr = sum_gradients - gl, hr = sum_hessians - hl, gain
    cdef uint32_t cr = count - cl
    if cl < min_data_in_leaf or hl < min_child_weight or cr < min_data_in_leaf \
            or hr < min_child_weight:
        return
    # a categorical feature has no direction: its children only keep the leaf's bounds
    gain = _split_gain(gl, hl, gr, hr, child_lambda, parent_score, monotone, 0)
    if gain - penalty > s.gain:
        s.gain = gain - penalty
        s.raw_gain = gain
        s.cost_penalty = penalty
        s.feature = f
        s.bin_threshold = 0
        s.default_left = missing_left
        s.sum_gradient_left = gl
        s.sum_hessian_left = hl
        s.count_left = cl
        s.categorical = kind
        best_choice[0] = choice


cdef inline void _scan_categorical(
    Py_ssize_t f, const hist_struct * h, uint32_t n_value_bins, int missing_bin,
    double sum_gradients, double sum_hessians, uint32_t count, double parent_score,
    double reg_lambda, double min_child_weight, uint32_t min_data_in_leaf,
    double penalty, const cat_params_struct * cat, const monotone_struct * monotone,
    split_struct * s) noexcept nogil:
    """LightGBM's categorical split search (FindBestThresholdCategoricalInner), on bins
    ``0 .. n_value_bins - 2`` (one level each; the last value bin holds the levels
    without a bin of their own and always goes right), with the missing bin tried on
    either side:

    * at most ``max_cat_to_onehot`` bins (the levels and "other"): one level against
      the rest;
    * otherwise the levels with at least ``cat_smooth`` rows, sorted by
      ``sum_gradient / (sum_hessian + cat_smooth)``, are taken from either end, up to
      ``max_cat_threshold`` (and half of them) on the left; the children's scores use
      ``reg_lambda + cat_l2`` (so do their leaf values: ``categorical == 2``); a candidate
      is scored only when ``min_data_per_group`` rows joined the left side since the last
      one scored, and the scan stops when the right side falls below
      ``min_data_per_group`` rows.

    Ties go to missing values right first, then the earlier candidate. The bins going
    left are written to ``s.cat_bins`` (room for a bitset of ``n_value_bins`` bins): a
    length word, then the words up to the last one with a member. No split when the
    sort buffer of a feature with more than 256 levels cannot be allocated."""
    cdef Py_ssize_t n_levels = <Py_ssize_t> n_value_bins - 1, b, i, used = 0, max_num_cat
    cdef Py_ssize_t n_words
    cdef sort_entry on_stack[2 * 256]
    cdef sort_entry * entries = on_stack       # then the sort's scratch
    cdef int direction, dir_index, best_choice = -1, choice
    cdef double mg = h[missing_bin].sum_gradients, mh = h[missing_bin].sum_hessians
    cdef uint32_t mc = h[missing_bin].count
    cdef double gl, hl, child_lambda = reg_lambda + cat.cat_l2
    cdef uint32_t cl, group_count
    # LightGBM counts its bins, the NaN / other one included: ours are the levels and
    # "other" (n_value_bins)
    cdef bint onehot = <Py_ssize_t> n_value_bins <= cat.max_cat_to_onehot
    s.gain = -INFINITY
    s.feature = -1
    if not onehot and n_levels > 256:
        entries = <sort_entry *> malloc(2 * n_levels * sizeof(sort_entry))
        if entries == NULL:
            return
    if not onehot:
        for b in range(n_levels):
            if h[b].count > 0 and h[b].count >= cat.cat_smooth:
                entries[used].key = h[b].sum_gradients / (h[b].sum_hessians + cat.cat_smooth)
                entries[used].bin = <int> b
                used += 1
    max_num_cat = min(<Py_ssize_t> cat.max_cat_threshold, (used + 1) // 2)
    if not onehot:
        _sort_ends(entries, &entries[used], used, max_num_cat)
    # choice encodes the candidate: direction * CHOICE_DIRECTION + (bin | sorted end *
    # CHOICE_END + count)
    for direction in range(2):
        if direction == 1 and mc == 0:
            break
        if onehot:
            for b in range(n_levels):
                if h[b].count == 0:
                    continue
                _consider((mg if direction else 0.0) + h[b].sum_gradients,
                          (mh if direction else 0.0) + h[b].sum_hessians,
                          (mc if direction else 0) + h[b].count, sum_gradients,
                          sum_hessians, count, parent_score, reg_lambda, penalty, f,
                          direction == 1, direction * CHOICE_DIRECTION + <int> b,
                          &best_choice, s,
                          min_data_in_leaf, min_child_weight, 1, monotone)
            continue
        for dir_index in range(2):      # from the low end, then from the high end
            gl = mg if direction else 0.0
            hl = mh if direction else 0.0
            cl = mc if direction else 0
            group_count = 0
            for i in range(min(used, max_num_cat)):
                b = entries[i if dir_index == 0 else used - 1 - i].bin
                gl += h[b].sum_gradients
                hl += h[b].sum_hessians
                cl += h[b].count
                group_count += h[b].count
                if cl < min_data_in_leaf or hl < min_child_weight:
                    continue
                if count - cl < min_data_in_leaf or count - cl < cat.min_data_per_group \
                        or sum_hessians - hl < min_child_weight:
                    break
                if group_count < cat.min_data_per_group:
                    continue
                group_count = 0
                _consider(gl, hl, cl, sum_gradients, sum_hessians, count, parent_score,
                          child_lambda, penalty, f, direction == 1,
                          direction * CHOICE_DIRECTION + dir_index * CHOICE_END + <int> i,
                          &best_choice, s,
                          min_data_in_leaf, min_child_weight, 2, monotone)
    if best_choice >= 0:
        n_words = (n_levels + 31) // 32
        memset(s.cat_bins, 0, (n_words + 1) * sizeof(uint32_t))
        choice = best_choice % CHOICE_DIRECTION
        if onehot:
            s.cat_bins[1 + (choice >> 5)] = (<uint32_t> 1) << (choice & 31)
        else:
            dir_index = choice // CHOICE_END
            for i in range(choice % CHOICE_END + 1):
                b = entries[i if dir_index == 0 else used - 1 - i].bin
                s.cat_bins[1 + (b >> 5)] |= (<uint32_t> 1) << (b & 31)
        while n_words > 0 and s.cat_bins[n_words] == 0:    # no trailing zero word
            n_words -= 1
        s.cat_bins[0] = <uint32_t> n_words
    if entries != on_stack:
        free(entries)


cdef Py_ssize_t cat_words_of(Py_ssize_t n_bins) noexcept nogil:
    """The words of a categorical candidate's bin bitset (_bitset.pxd) when a feature's
    histogram has ``n_bins`` bins: a length word and one bit per bin."""
    return 1 + (n_bins + 31) // 32


cdef inline void _scan_one(
    Py_ssize_t f, const hist_struct * histograms, Py_ssize_t n_bins,
    const uint32_t * n_value_bins, int missing_bin, const unsigned char * feature_mask,
    double sum_gradients, double sum_hessians, uint32_t count, double parent_score,
    double reg_lambda, double min_child_weight, uint32_t min_data_in_leaf,
    const double * cost_penalty, const unsigned char * categorical,
    const cat_params_struct * cat, const monotone_struct * monotone,
    split_struct * per_feature) noexcept nogil:
    """Feature ``f``'s best split into ``per_feature[f]`` (if masked in and splittable)."""
    if not (feature_mask[f] and n_value_bins[f] >= 2):
        return
    if categorical != NULL and categorical[f]:
        _scan_categorical(
            f, &histograms[f * n_bins], n_value_bins[f], missing_bin, sum_gradients,
            sum_hessians, count, parent_score, reg_lambda, min_child_weight,
            min_data_in_leaf, cost_penalty[f] if cost_penalty != NULL else 0.0, cat,
            _bounds_for(monotone, f), &per_feature[f])
    else:
        _scan_feature(f, &histograms[f * n_bins], n_value_bins[f], missing_bin,
                      sum_gradients, sum_hessians, count, parent_score, reg_lambda,
                      min_child_weight, min_data_in_leaf,
                      cost_penalty[f] if cost_penalty != NULL else 0.0,
                      _bounds_for(monotone, f), &per_feature[f])


cdef split_struct find_best_split_core(
    const hist_struct * histograms, Py_ssize_t n_features, Py_ssize_t n_bins,
    const uint32_t * n_value_bins, int missing_bin, const unsigned char * feature_mask,
    double sum_gradients, double sum_hessians, uint32_t count,
    double reg_lambda, double min_child_weight, uint32_t min_data_in_leaf,
    const double * cost_penalty, const unsigned char * categorical,
    const cat_params_struct * cat, split_struct * per_feature, uint32_t * cat_scratch,
    Py_ssize_t cat_words, const monotone_struct * monotone, int n_threads) noexcept nogil:
    """Best split over the masked-in features; ``per_feature`` is scratch space for
    ``n_features`` results; ``cost_penalty == NULL``: no penalty; ``categorical ==
    NULL``: every feature numeric (else ``cat`` holds the categorical parameters, and
    ``cat_scratch`` ``cat_words`` words per feature -- :func:`cat_words_of` -- where the
    bin bitsets of the categorical candidates go: the best split's ``cat_bins`` points
    there); ``monotone == NULL``: no monotone constraints (else only the splits whose
    clipped children's outputs follow their feature's direction are admissible, see
    _split_gain: the cost-penalised best is chosen among them)."""
    cdef Py_ssize_t f, work = 0
    cdef double parent_score = _score(sum_gradients, sum_hessians, reg_lambda)
    cdef split_struct best
    for f in range(n_features):
        per_feature[f].feature = -1
        per_feature[f].cat_bins = &cat_scratch[f * cat_words] if cat_scratch != NULL \
            else NULL
        if feature_mask[f]:
            work += n_value_bins[f]
    if work < MIN_PARALLEL_WORK:
        n_threads = 1
    # numeric features cost about the same each: static chunks; a categorical feature
    # of thousands of levels (sorted) can cost more than all the others together:
    # features handed out one at a time
    if categorical == NULL:
        for f in prange(n_features, schedule="static", num_threads=n_threads):
            _scan_one(f, histograms, n_bins, n_value_bins, missing_bin, feature_mask,
                      sum_gradients, sum_hessians, count, parent_score, reg_lambda,
                      min_child_weight, min_data_in_leaf, cost_penalty, categorical, cat,
                      monotone, per_feature)
    else:
        for f in prange(n_features, schedule="dynamic", num_threads=n_threads):
            _scan_one(f, histograms, n_bins, n_value_bins, missing_bin, feature_mask,
                      sum_gradients, sum_hessians, count, parent_score, reg_lambda,
                      min_child_weight, min_data_in_leaf, cost_penalty, categorical, cat,
                      monotone, per_feature)
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
    const unsigned char[::1] categorical=None,
    int max_cat_to_onehot=4,
    int max_cat_threshold=32,
    double cat_l2=10.0,
    double cat_smooth=10.0,
    uint32_t min_data_per_group=100,
    monotone=None,
    double lower=-INFINITY,
    double upper=INFINITY,
):
    """Scan every masked-in feature's histogram for the split of largest net gain.

    The raw gain of a split into L and R is
    ``0.5 * (G_L^2/(H_L+lambda) + G_R^2/(H_R+lambda) - G^2/(H+lambda))``; the net gain
    subtracts ``cost_penalty[f]`` (None: no penalty, no extra work). Missing values
    (bin ``missing_bin``) are tried on both sides; a side needs at least
    ``min_data_in_leaf`` rows and ``min_child_weight`` hessian. Ties go to the lowest
    feature index, then to missing values going right, then to the lowest bin: the
    result does not depend on ``n_threads``.

    ``monotone`` (int8 per feature, -1 / 0 / +1, or None for none) and the leaf's output
    bounds ``lower <= upper``: LightGBM's basic monotone constraints (the children's
    outputs clipped to the bounds, a split of a constrained feature admissible only if
    they follow its direction).

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
    if categorical is not None and categorical.shape[0] != n_features:
        raise ValueError(f"categorical must have one entry per feature ({n_features})")
    cdef Py_ssize_t cat_words = cat_words_of(histograms.shape[1]) \
        if categorical is not None else 0
    cdef const signed char[::1] directions
    cdef monotone_struct bounds
    cdef const monotone_struct * bounded = NULL
    if monotone is not None:
        directions = np.ascontiguousarray(monotone, dtype=np.int8)
        if directions.shape[0] != n_features or not lower <= upper:
            raise ValueError(f"monotone must have one direction per feature "
                             f"({n_features}) and lower <= upper")
        if n_features:
            bounds.direction, bounds.lower, bounds.upper = &directions[0], lower, upper
            bounded = &bounds
    cdef const double * penalty = &cost_penalty[0] if cost_penalty is not None else NULL
    cdef const unsigned char * is_cat = &categorical[0] if categorical is not None else NULL
    cdef cat_params_struct cat
    cat.max_cat_to_onehot = max_cat_to_onehot
    cat.max_cat_threshold = max_cat_threshold
    cat.cat_l2 = cat_l2
    cat.cat_smooth = cat_smooth
    cat.min_data_per_group = min_data_per_group
    cdef split_struct best
    cdef uint32_t[::1] cat_scratch = np.zeros(max(n_features * cat_words, 1), np.uint32)
    cdef split_struct * scratch = <split_struct *> checked_malloc(
        n_features, sizeof(split_struct), "the per-feature split results")
    with nogil:     # nothing in here can raise: no try/finally needed around it
        best = find_best_split_core(
            &histograms[0, 0], n_features, histograms.shape[1], &n_value_bins[0],
            missing_bin, &feature_mask[0], sum_gradients, sum_hessians, count, reg_lambda,
            min_child_weight, min_data_in_leaf, penalty, is_cat, &cat, scratch,
            &cat_scratch[0] if cat_words else NULL, cat_words, bounded, n_threads)
    free(scratch)
    result = SplitInfo()
    result.feature = best.feature
    result.gain = best.gain
    if best.feature >= 0:
        result.raw_gain = best.raw_gain
        result.cost_penalty = best.cost_penalty
        result.bin_threshold = best.bin_threshold
        result.default_left = best.default_left
        result.categorical = best.categorical
        if best.categorical:
            words = np.array(<uint32_t[:best.cat_bins[0] + 1]> best.cat_bins)
            bits = np.unpackbits(words[1:].astype("<u4").view(np.uint8), bitorder="little")
            result.left_bins = np.flatnonzero(bits)
        result.sum_gradient_left = best.sum_gradient_left
        result.sum_hessian_left = best.sum_hessian_left
        result.count_left = best.count_left
        result.sum_gradient_right = sum_gradients - best.sum_gradient_left
        result.sum_hessian_right = sum_hessians - best.sum_hessian_left
        result.count_right = count - best.count_left
    return result
