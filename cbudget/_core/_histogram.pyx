"""Gradient/hessian histograms of one leaf, with the per-feature counts of inputs that
have not yet acquired the feature (or its cost group), in the same pass.

The acquisition counts feed the cost penalty of the split scorer (docs/architecture.md,
"Cost model"); they are only computed when a bitset is given, so plain boosting pays nothing for
them. Only the bins a feature uses (``0..n_value_bins[f]-1`` and the missing bin) are
written; the split scan reads nothing else.
"""
from cython.parallel cimport prange
from libc.stdint cimport int32_t, uint32_t
from libc.stdlib cimport free
from libc.string cimport memset

import numpy as np

from ._safety cimport check_n_threads, checked_malloc, first_out_of_range_32
from ._types cimport X_BINNED_C, hist_struct, BITSET_WORD_C

# Below this many (row, feature) pairs a histogram is built on one thread: an OpenMP
# region costs more than it saves on small leaves.
cdef Py_ssize_t MIN_PARALLEL_WORK = 32768

# Features whose histograms are built in one pass over the rows: the row index and
# gradients are read once per block, and the block's independent updates overlap.
cdef enum:
    FEATURE_BLOCK = 4


cdef inline void _add(hist_struct * h, double g, double hess) noexcept nogil:
    h.sum_gradients += g
    h.sum_hessians += hess
    h.count += 1


cdef inline void _block_histograms(
    Py_ssize_t first, Py_ssize_t stop, const X_BINNED_C * binned, Py_ssize_t n_samples,
    const int32_t * rows, Py_ssize_t n_rows,
    const double * ordered_gradients, const double * ordered_hessians,
    const unsigned char * feature_mask, const uint32_t * n_value_bins, int missing_bin,
    hist_struct * out, Py_ssize_t n_bins, const unsigned char * count_mask,
    const BITSET_WORD_C * acquired, const BITSET_WORD_C * groups_touched,
    const int32_t * feature_group,
    uint32_t * unacquired_count, uint32_t * group_untouched_count) noexcept nogil:
    """Histograms of the masked-in features ``first <= f < stop`` (at most
    FEATURE_BLOCK), and the acquisition counts of those with ``count_mask[f]``.

    ``first`` is a multiple of FEATURE_BLOCK, which divides 64: the block's feature bits
    share one bitset word, read once per row (the bitsets are column-major, so that
    word is read sequentially like a feature column)."""
    cdef const X_BINNED_C * columns[FEATURE_BLOCK]
    cdef hist_struct * hists[FEATURE_BLOCK]
    cdef Py_ssize_t features[FEATURE_BLOCK]
    cdef int shifts[FEATURE_BLOCK]
    cdef const BITSET_WORD_C * group_words[FEATURE_BLOCK]
    cdef int group_shifts[FEATURE_BLOCK]
    cdef uint32_t missing[FEATURE_BLOCK]
    cdef uint32_t untouched[FEATURE_BLOCK]
    cdef const BITSET_WORD_C * word = NULL
    cdef int n = 0, j
    cdef bint counting = False, any_group = False
    cdef Py_ssize_t f, i
    cdef int32_t row, group
    cdef double g, h
    cdef BITSET_WORD_C bits
    for f in range(first, stop):
        if feature_mask[f]:
            columns[n] = &binned[f * n_samples]
            hists[n] = &out[f * n_bins]
            memset(hists[n], 0, n_value_bins[f] * sizeof(hist_struct))
            memset(&hists[n][missing_bin], 0, sizeof(hist_struct))
            features[n] = f
            shifts[n] = f & 63
            missing[n] = 0
            untouched[n] = 0
            group_words[n] = NULL
            group_shifts[n] = 0
            if count_mask != NULL and count_mask[f]:
                counting = True
                group = feature_group[f]
                if group >= 0:
                    group_words[n] = &groups_touched[(group >> 6) * n_samples]
                    group_shifts[n] = group & 63
                    any_group = True
            n += 1
    if n == 0:
        return
    if not counting:
        if n == FEATURE_BLOCK:
            for i in range(n_rows):
                row = rows[i]
                g = ordered_gradients[i]
                h = ordered_hessians[i]
                _add(&hists[0][columns[0][row]], g, h)
                _add(&hists[1][columns[1][row]], g, h)
                _add(&hists[2][columns[2][row]], g, h)
                _add(&hists[3][columns[3][row]], g, h)
        else:
            for i in range(n_rows):
                row = rows[i]
                for j in range(n):
                    _add(&hists[j][columns[j][row]], ordered_gradients[i], ordered_hessians[i])
        return
    # Counting: the missing bits of every feature of the block are summed (cheap ALU
    # work); only the counted features' sums are stored.
    word = &acquired[(first >> 6) * n_samples]
    if n == FEATURE_BLOCK and not any_group:
        for i in range(n_rows):
            row = rows[i]
            g = ordered_gradients[i]
            h = ordered_hessians[i]
            bits = ~word[row]
            _add(&hists[0][columns[0][row]], g, h)
            _add(&hists[1][columns[1][row]], g, h)
            _add(&hists[2][columns[2][row]], g, h)
            _add(&hists[3][columns[3][row]], g, h)
            missing[0] += (bits >> shifts[0]) & 1
            missing[1] += (bits >> shifts[1]) & 1
            missing[2] += (bits >> shifts[2]) & 1
            missing[3] += (bits >> shifts[3]) & 1
    else:
        for i in range(n_rows):
            row = rows[i]
            bits = ~word[row]
            for j in range(n):
                _add(&hists[j][columns[j][row]], ordered_gradients[i], ordered_hessians[i])
                missing[j] += (bits >> shifts[j]) & 1
            if any_group:
                for j in range(n):
                    if group_words[j] != NULL:
                        untouched[j] += ((~group_words[j][row]) >> group_shifts[j]) & 1
    for j in range(n):
        if count_mask[features[j]]:
            unacquired_count[features[j]] = missing[j]
            group_untouched_count[features[j]] = untouched[j]


cdef void build_histograms_core(
    const X_BINNED_C * binned, Py_ssize_t n_samples, Py_ssize_t n_features,
    const int32_t * rows, Py_ssize_t n_rows,
    const double * gradients, const double * hessians,
    const unsigned char * feature_mask, const uint32_t * n_value_bins, int missing_bin,
    hist_struct * out, Py_ssize_t n_bins,
    double * ordered_gradients, double * ordered_hessians,
    const unsigned char * count_mask,
    const BITSET_WORD_C * acquired, const BITSET_WORD_C * groups_touched,
    const int32_t * feature_group,
    uint32_t * unacquired_count, uint32_t * group_untouched_count,
    int n_threads) noexcept nogil:
    """Histograms of the rows ``rows[:n_rows]``; ``binned`` is Fortran ordered
    (feature ``f`` of row ``r`` at ``binned[f * n_samples + r]``); ``out`` holds
    ``n_features x n_bins`` structs. ``ordered_*`` are scratch buffers of at least
    ``n_rows`` doubles.

    ``count_mask == NULL``: no acquisition counts. Otherwise the features with
    ``count_mask[f]`` also get ``unacquired_count[f]`` (rows without bit ``f`` in
    ``acquired``) and ``group_untouched_count[f]`` (rows without the bit of ``f``'s
    group in ``groups_touched``; 0 without a group); the other entries are not
    written. Both bitsets are column-major: word ``w`` of row ``r`` at
    ``[w * n_samples + r]``. The histograms do not depend on what is counted."""
    cdef Py_ssize_t i, block
    cdef Py_ssize_t n_blocks = (n_features + FEATURE_BLOCK - 1) // FEATURE_BLOCK
    if n_rows * n_features < MIN_PARALLEL_WORK:
        n_threads = 1
    # Gradients gathered in the leaf's row order once, so that each feature's pass
    # reads them sequentially.
    for i in prange(n_rows, schedule="static", num_threads=n_threads):
        ordered_gradients[i] = gradients[rows[i]]
        ordered_hessians[i] = hessians[rows[i]]
    for block in prange(n_blocks, schedule="static", num_threads=n_threads):
        _block_histograms(
            block * FEATURE_BLOCK, min((block + 1) * FEATURE_BLOCK, n_features), binned,
            n_samples, rows, n_rows, ordered_gradients, ordered_hessians, feature_mask,
            n_value_bins, missing_bin, out, n_bins, count_mask, acquired, groups_touched,
            feature_group, unacquired_count, group_untouched_count)


cdef inline void _subtract_feature(
    const hist_struct * parent, const hist_struct * child, hist_struct * out,
    uint32_t n_value_bins, int missing_bin) noexcept nogil:
    cdef Py_ssize_t b, k
    for k in range(n_value_bins + 1):
        b = k if k < n_value_bins else missing_bin
        out[b].sum_gradients = parent[b].sum_gradients - child[b].sum_gradients
        out[b].sum_hessians = parent[b].sum_hessians - child[b].sum_hessians
        out[b].count = parent[b].count - child[b].count


cdef void subtract_histograms_core(
    const hist_struct * parent, const hist_struct * child, hist_struct * out,
    Py_ssize_t n_features, Py_ssize_t n_bins, const unsigned char * feature_mask,
    const uint32_t * n_value_bins, int missing_bin, int n_threads) noexcept nogil:
    """``out = parent - child`` over the used bins of the masked-in features."""
    cdef Py_ssize_t f
    if n_features * n_bins < MIN_PARALLEL_WORK:
        n_threads = 1
    for f in prange(n_features, schedule="static", num_threads=n_threads):
        if feature_mask[f]:
            _subtract_feature(&parent[f * n_bins], &child[f * n_bins], &out[f * n_bins],
                              n_value_bins[f], missing_bin)


def _check_shapes(binned, out, n_value_bins, missing_bin):
    if out.shape[0] != binned.shape[1] or n_value_bins.shape[0] != binned.shape[1]:
        raise ValueError("out / n_value_bins do not match the number of features")
    nvb = np.asarray(n_value_bins)
    if not 0 <= missing_bin < out.shape[1] or (nvb.size and nvb.max() > missing_bin):
        raise ValueError("missing_bin must be a valid bin above every value bin")


def _check_bins(binned, n_bins):
    """Every bin of ``binned`` indexes one of the ``n_bins`` histogram bins (a uint8 bin
    always does when there are 256)."""
    if n_bins < 256 and binned.shape[0] and binned.shape[1] \
            and np.asarray(binned).max() >= n_bins:
        raise ValueError(f"binned holds a bin >= the {n_bins} bins of out")


def _check_rows(rows, Py_ssize_t n_samples):
    cdef const int32_t[::1] view = rows
    cdef Py_ssize_t bad
    with nogil:
        bad = first_out_of_range_32(&view[0] if view.shape[0] else NULL, view.shape[0], 0,
                                    n_samples)
    if bad >= 0:
        raise ValueError(f"rows[{bad}] = {view[bad]} is out of range for {n_samples} samples")


def build_histograms(
    const X_BINNED_C[::1, :] binned,
    const int32_t[::1] rows,
    const double[::1] gradients,
    const double[::1] hessians,
    const unsigned char[::1] feature_mask,
    const uint32_t[::1] n_value_bins,
    int missing_bin,
    hist_struct[:, ::1] out,
    int n_threads,
    const BITSET_WORD_C[::1, :] acquired=None,
    const BITSET_WORD_C[::1, :] groups_touched=None,
    const int32_t[::1] feature_group=None,
    uint32_t[::1] unacquired_count=None,
    uint32_t[::1] group_untouched_count=None,
    const unsigned char[::1] count_mask=None,
):
    """Histograms of the leaf whose training rows are ``rows``.

    Parameters
    ----------
    binned : uint8 array of shape (n_samples, n_features), Fortran order
    rows : int32 array of shape (n_rows,), indices in [0, n_samples)
    gradients, hessians : float64 arrays of shape (n_samples,)
    feature_mask : uint8 array of shape (n_features,); only masked-in features are built
    n_value_bins : uint32 array of shape (n_features,)
    missing_bin : int
    out : HISTOGRAM_DTYPE array of shape (n_features, n_bins)
        Bins ``0..n_value_bins[f]-1`` and ``missing_bin`` of masked-in features are
        overwritten; the other bins are not touched.
    acquired : uint64 array of shape (n_samples, ceil(n_features / 64)), Fortran order,
        optional. When given, also count per feature ``f`` the rows without bit ``f``
        (``unacquired_count[f]``) and the rows that have not touched ``f``'s cost group
        (``group_untouched_count[f]``, 0 for ``feature_group[f] < 0``), in the same pass.
    groups_touched : uint64 array of shape (n_samples, n_group_words), Fortran order
    feature_group : int32 array of shape (n_features,), groups in [-1, 64 n_group_words)
    unacquired_count, group_untouched_count : uint32 arrays of shape (n_features,)
    count_mask : uint8 array of shape (n_features,), optional
        With ``acquired``: count only the features with ``count_mask[f]`` (default: all);
        the counts of the others are left untouched.

    Raises ValueError on inconsistent shapes, rows out of range or bins beyond ``out``.
    """
    check_n_threads(n_threads)
    _check_shapes(binned, out, n_value_bins, missing_bin)
    cdef Py_ssize_t n_rows = rows.shape[0], n_features = binned.shape[1]
    if (gradients.shape[0] != binned.shape[0] or hessians.shape[0] != binned.shape[0]
            or feature_mask.shape[0] != n_features):
        raise ValueError("gradients / hessians need one entry per sample, feature_mask "
                         "one per feature")
    _check_rows(rows, binned.shape[0])
    _check_bins(binned, out.shape[1])
    cdef const BITSET_WORD_C * acq = NULL
    cdef const BITSET_WORD_C * grp = NULL
    cdef const int32_t * fg = NULL
    cdef uint32_t * uc = NULL
    cdef uint32_t * gc = NULL
    cdef const unsigned char * cm = NULL
    cdef double * ordered_gradients = NULL
    cdef double * ordered_hessians = NULL
    if acquired is not None:
        if (groups_touched is None or feature_group is None or unacquired_count is None
                or group_untouched_count is None):
            raise ValueError("acquired needs groups_touched, feature_group, "
                             "unacquired_count and group_untouched_count")
        if acquired.shape[0] != binned.shape[0] or groups_touched.shape[0] != binned.shape[0]:
            raise ValueError("the bitsets need one row per sample")
        if (feature_group.shape[0] != n_features or unacquired_count.shape[0] != n_features
                or group_untouched_count.shape[0] != n_features
                or (count_mask is not None and count_mask.shape[0] != n_features)):
            raise ValueError("feature_group / counts / count_mask do not match the "
                             "number of features")
        if acquired.shape[1] * 64 < n_features:
            raise ValueError(f"acquired has {acquired.shape[1]} words per row, too few "
                             f"for {n_features} features")
        if n_features and first_out_of_range_32(
                &feature_group[0], n_features, -1, groups_touched.shape[1] * 64) >= 0:
            raise ValueError("feature_group holds a group outside [-1, the bits of "
                             "groups_touched)")
        if count_mask is None:
            count_mask = np.ones(n_features, dtype=np.uint8)
        if n_features:
            cm = &count_mask[0]
            acq, grp = &acquired[0, 0], &groups_touched[0, 0]
            fg, uc, gc = &feature_group[0], &unacquired_count[0], &group_untouched_count[0]
    # scratch allocated after every check that can raise; freed whatever happens
    try:
        ordered_gradients = <double *> checked_malloc(n_rows, sizeof(double),
                                                      "the leaf's gathered gradients")
        ordered_hessians = <double *> checked_malloc(n_rows, sizeof(double),
                                                     "the leaf's gathered hessians")
        with nogil:
            build_histograms_core(
                &binned[0, 0], binned.shape[0], n_features, &rows[0] if n_rows else NULL,
                n_rows, &gradients[0] if n_rows else NULL,
                &hessians[0] if n_rows else NULL, &feature_mask[0], &n_value_bins[0],
                missing_bin, &out[0, 0], out.shape[1], ordered_gradients, ordered_hessians,
                cm, acq, grp, fg, uc, gc, n_threads)
    finally:
        free(ordered_gradients)
        free(ordered_hessians)


def subtract_histograms(
    const hist_struct[:, ::1] parent,
    const hist_struct[:, ::1] child,
    const unsigned char[::1] feature_mask,
    const uint32_t[::1] n_value_bins,
    int missing_bin,
    hist_struct[:, ::1] out,
    int n_threads=1,
):
    """``out = parent - child`` (the sibling's histogram) over the used bins of the
    masked-in features. ``parent``, ``child`` and ``out`` have one shape (n_features,
    n_bins); ValueError otherwise, or when ``missing_bin`` is not a bin above every
    ``n_value_bins[f]``."""
    check_n_threads(n_threads)
    if (child.shape[0] != parent.shape[0] or child.shape[1] != parent.shape[1]
            or out.shape[0] != parent.shape[0] or out.shape[1] != parent.shape[1]):
        raise ValueError("parent, child and out must have one shape")
    if feature_mask.shape[0] != parent.shape[0]:
        raise ValueError("feature_mask does not match the number of features")
    nvb = np.asarray(n_value_bins)
    if nvb.shape[0] != parent.shape[0]:
        raise ValueError("n_value_bins does not match the number of features")
    if not 0 <= missing_bin < parent.shape[1] or (nvb.size and nvb.max() > missing_bin):
        raise ValueError("missing_bin must be a valid bin above every value bin")
    if parent.shape[0] == 0:
        return
    with nogil:
        subtract_histograms_core(&parent[0, 0], &child[0, 0], &out[0, 0], parent.shape[0],
                                 parent.shape[1], &feature_mask[0], &n_value_bins[0],
                                 missing_bin, n_threads)
