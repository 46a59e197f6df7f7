"""Gradient/hessian histograms of one leaf, with the per-feature counts of inputs that
have not yet acquired the feature (or its cost group), in the same pass.

The acquisition counts feed the cost penalty of the split scorer (docs/architecture.md,
"Cost model"); they are only computed when a bitset is given, so plain boosting pays nothing for
them. Only the bins a feature uses (``0..n_value_bins[f]-1`` and the missing bin) are
written; the split scan reads nothing else.

Features whose most frequent bin holds most rows (MNIST's zero pixels) are also kept
row-wise without that bin (:class:`SparseBins`): a leaf's pass then reads only each row's
other bins, and the most frequent bin is the leaf's totals minus the other bins. The
sums of every bin still run over the leaf's rows in order, so the histograms do not
depend on the number of threads (docs/architecture.md, "Histograms").
"""
from cython.parallel cimport parallel, prange
from libc.stdint cimport int32_t, int64_t, uint8_t, uint16_t, uint32_t, uint64_t
from libc.stdlib cimport calloc, free
from libc.string cimport memset


# Small C helpers of the histogram passes.
# - A bin's gradient and hessian sums are adjacent doubles: on x86-64 (SSE2 is part of
#   the base instruction set) one packed add updates both. Each lane is an ordinary IEEE
#   addition, so the sums are bit-identical to the scalar code's (the fallback).
# - The column pass of a full block of four features (cb_four_histograms), the hot loop
#   of boosting on dense data, is C so that it can be kept out of line with its eight
#   column and histogram pointers in registers: inlined into the OpenMP region (as
#   Cython's static functions are), they were reloaded from the stack every row. With
#   ``prefetch_rows > 0`` (leaves whose rows are far apart, so that each column read
#   misses the cache) the columns are prefetched that many rows ahead; on dense leaves
#   the hardware's sequential prefetch does better alone. Measured figures:
#   docs/architecture.md, "Histograms".
cdef extern from *:
    """
    #if defined(_MSC_VER)
    #define CB_NOINLINE __declspec(noinline)
    #define CB_ALWAYS_INLINE __forceinline
    #define CB_PREFETCH(address) ((void) 0)
    #else
    #define CB_NOINLINE __attribute__((noinline))
    #define CB_ALWAYS_INLINE inline __attribute__((always_inline))
    #define CB_PREFETCH(address) __builtin_prefetch(address)
    #endif
    #if defined(__SSE2__) || defined(_M_X64) || defined(_M_AMD64)
    #include <emmintrin.h>
    typedef __m128d cb_gh_pair;
    static inline cb_gh_pair cb_gh_make(double g, double h) { return _mm_set_pd(h, g); }
    static inline void cb_gh_add(double *sums, cb_gh_pair gh) {
        _mm_storeu_pd(sums, _mm_add_pd(_mm_loadu_pd(sums), gh));
    }
    #else
    typedef struct { double g, h; } cb_gh_pair;
    static inline cb_gh_pair cb_gh_make(double g, double h) { cb_gh_pair p = {g, h}; return p; }
    static inline void cb_gh_add(double *sums, cb_gh_pair gh) { sums[0] += gh.g; sums[1] += gh.h; }
    #endif
    typedef struct { double sum_gradients, sum_hessians; uint32_t count; } cb_bin;
    /* a row's gradient and hessian added to a bin (a cb_bin or hist_struct) */
    static inline void cb_bin_add(void *bin, cb_gh_pair gh) {
        cb_gh_add(&((cb_bin *) bin)->sum_gradients, gh);
        ((cb_bin *) bin)->count++;
    }
    /* One pass; ``prefetching`` and ``counting`` are constants in each caller below,
       so each of the four variants is compiled without the other's work. The bins
       are read into locals first: stores through the histograms may alias the
       columns, which would otherwise be read again after every store.
       CB_FOUR_HISTOGRAMS(suffix, bin_type) defines cb_four_histograms_<suffix> for
       columns of ``bin_type`` (uint8 and uint16 binned data: one source). */
    #define CB_FOUR_HISTOGRAMS(suffix, bin_type)                                          \
    static CB_ALWAYS_INLINE void cb_four_pass_##suffix(                                   \
            const bin_type *const *columns, void *const *histograms, const int32_t *rows, \
            Py_ssize_t n_rows, const double *gradients, const double *hessians,           \
            Py_ssize_t prefetch_rows, const uint64_t *words, const int *shifts,           \
            uint32_t *missing, const int prefetching, const int counting) {               \
        const bin_type *c0 = columns[0], *c1 = columns[1];                                \
        const bin_type *c2 = columns[2], *c3 = columns[3];                                \
        cb_bin *h0 = (cb_bin *) histograms[0], *h1 = (cb_bin *) histograms[1];            \
        cb_bin *h2 = (cb_bin *) histograms[2], *h3 = (cb_bin *) histograms[3];            \
        Py_ssize_t i, ahead = n_rows - prefetch_rows;                                     \
        uint32_t m0 = 0, m1 = 0, m2 = 0, m3 = 0;                                          \
        int s0 = 0, s1 = 0, s2 = 0, s3 = 0;                                               \
        if (counting) {                                                                   \
            s0 = shifts[0]; s1 = shifts[1]; s2 = shifts[2]; s3 = shifts[3];               \
        }                                                                                 \
        for (i = 0; i < n_rows; i++) {                                                    \
            int32_t row;                                                                  \
            bin_type b0, b1, b2, b3;                                                      \
            cb_gh_pair gh;                                                                \
            if (prefetching && i < ahead) {                                               \
                row = rows[i + prefetch_rows];                                            \
                CB_PREFETCH(c0 + row); CB_PREFETCH(c1 + row);                             \
                CB_PREFETCH(c2 + row); CB_PREFETCH(c3 + row);                             \
            }                                                                             \
            row = rows[i];                                                                \
            b0 = c0[row]; b1 = c1[row]; b2 = c2[row]; b3 = c3[row];                       \
            gh = cb_gh_make(gradients[i], hessians[i]);                                   \
            if (counting) {                                                               \
                uint64_t bits = ~words[row];                                              \
                m0 += (bits >> s0) & 1; m1 += (bits >> s1) & 1;                           \
                m2 += (bits >> s2) & 1; m3 += (bits >> s3) & 1;                           \
            }                                                                             \
            cb_bin_add(&h0[b0], gh);                                                      \
            cb_bin_add(&h1[b1], gh);                                                      \
            cb_bin_add(&h2[b2], gh);                                                      \
            cb_bin_add(&h3[b3], gh);                                                      \
        }                                                                                 \
        if (counting) {                                                                   \
            missing[0] = m0; missing[1] = m1; missing[2] = m2; missing[3] = m3;           \
        }                                                                                 \
    }                                                                                     \
    static CB_NOINLINE void cb_four_histograms_##suffix(                                  \
            const bin_type *const *columns, void *const *histograms, const int32_t *rows, \
            Py_ssize_t n_rows, const double *gradients, const double *hessians,           \
            Py_ssize_t prefetch_rows, const uint64_t *words, const int *shifts,           \
            uint32_t *missing) {                                                          \
        if (prefetch_rows > 0 && words != NULL)                                           \
            cb_four_pass_##suffix(columns, histograms, rows, n_rows, gradients, hessians, \
                                  prefetch_rows, words, shifts, missing, 1, 1);           \
        else if (prefetch_rows > 0)                                                       \
            cb_four_pass_##suffix(columns, histograms, rows, n_rows, gradients, hessians, \
                                  prefetch_rows, words, shifts, missing, 1, 0);           \
        else if (words != NULL)                                                           \
            cb_four_pass_##suffix(columns, histograms, rows, n_rows, gradients, hessians, \
                                  prefetch_rows, words, shifts, missing, 0, 1);           \
        else                                                                              \
            cb_four_pass_##suffix(columns, histograms, rows, n_rows, gradients, hessians, \
                                  prefetch_rows, words, shifts, missing, 0, 0);           \
    }
    CB_FOUR_HISTOGRAMS(u8, uint8_t)
    CB_FOUR_HISTOGRAMS(u16, uint16_t)
    """
    void prefetch "CB_PREFETCH" (const void *) noexcept nogil
    ctypedef double gh_pair "cb_gh_pair"    # opaque to Cython: only passed along
    gh_pair gh_make "cb_gh_make" (double g, double h) noexcept nogil
    void bin_add "cb_bin_add" (hist_struct * bin, gh_pair gh) noexcept nogil
    # ``histograms``: hist_struct arrays (cb_bin is the same struct; checked at import)
    size_t C_BIN_SIZE "sizeof(cb_bin)"
    void four_histograms_u8 "cb_four_histograms_u8" (
        const uint8_t * const * columns, void * const * histograms,
        const int32_t * rows, Py_ssize_t n_rows, const double * gradients,
        const double * hessians, Py_ssize_t prefetch_rows,
        const BITSET_WORD_C * words, const int * shifts, uint32_t * missing) noexcept nogil
    void four_histograms_u16 "cb_four_histograms_u16" (
        const uint16_t * const * columns, void * const * histograms,
        const int32_t * rows, Py_ssize_t n_rows, const double * gradients,
        const double * hessians, Py_ssize_t prefetch_rows,
        const BITSET_WORD_C * words, const int * shifts, uint32_t * missing) noexcept nogil

import numpy as np

if C_BIN_SIZE != sizeof(hist_struct):
    raise ImportError("cb_bin does not match hist_struct")

from ._safety cimport (check_n_threads, check_rows_in_range, checked_malloc,
                      first_out_of_range_32)
from ._types cimport binned_t, hist_struct, BITSET_WORD_C

# Below this many (row, feature) pairs a histogram is built on one thread: an OpenMP
# region costs more than it saves on small leaves.
cdef Py_ssize_t MIN_PARALLEL_WORK = 32768

# Features whose histograms are built in one pass over the rows: the row index and
# gradients are read once per block, and the block's independent updates overlap.
cdef enum:
    FEATURE_BLOCK = 4

# The column pass prefetches its columns' bytes COLUMN_PREFETCH_ROWS rows ahead in
# leaves with fewer than 1 / SCATTERED_LEAF_SHARE of the samples (measured on 800,000
# rows: 1.3x-1.8x faster on 5% and 1% leaves, 13% slower on half the rows).
cdef enum:
    COLUMN_PREFETCH_ROWS = 32
    SCATTERED_LEAF_SHARE = 4

# Row-wise (sparse) layout: a feature qualifies when its most frequent bin holds at least
# this share of the rows. Measured on 400,000 x 50 normal data with a share of zeros
# (1 thread): at 0.3 the row-wise pass takes as long as the column pass from the root
# down to 5% leaves, at 0.5 it is 1.4x faster at the root, at 0.9 3.3x; MNIST (784
# pixels, 81% zeros) builds its root 4x faster with every pixel at >= 0.3 row-wise.
MIN_SPARSE_SHARE = 0.4
# ... and only when the bins it elides add up to this many dense columns: a row-wise pass
# pays per row (the row's offsets, a cache miss in a small leaf) what a column pass pays
# for a few features (Letters: one 96%-constant feature was slower row-wise).
MIN_ELIDED_COLUMNS = 4.0
# The sparse features are cut into at most this many groups of about equal entries, the
# units of work of the threads (any number gives the same histograms), with at least
# MIN_GROUP_ENTRIES entries per row in each: a group's pass pays per row for the row's
# offsets and gradients (on MNIST, 150 entries per row, 4 groups build a root 1.4x
# faster than 16 and 2.1x faster than 32).
SPARSE_GROUPS = 8
MIN_GROUP_ENTRIES = 32
# Rows ahead whose offsets and counted bitset words (and, half as far, entries) are
# prefetched: a leaf's rows are scattered over the layout, each a cache miss otherwise.
cdef enum:
    PREFETCH_ROWS = 16
# Bit planes of a positional population count: one per bit of a row count < 2**32.
cdef enum:
    COUNT_PLANES = 32


cdef struct count_task:
    # rows without a bit of one bitset word, counted per bit with bit-sliced counters
    const BITSET_WORD_C * column    # the word of every sample (column-major bitset)
    uint64_t planes[COUNT_PLANES]   # bit k of a bit's count is bit (that bit) of plane k


cdef inline void _block_histograms(
    Py_ssize_t first, Py_ssize_t stop, const binned_t * binned, Py_ssize_t n_samples,
    const int32_t * rows, Py_ssize_t n_rows,
    const double * ordered_gradients, const double * ordered_hessians,
    const unsigned char * feature_mask, const uint32_t * n_value_bins, int missing_bin,
    hist_struct * out, Py_ssize_t n_bins, const unsigned char * count_mask,
    const BITSET_WORD_C * acquired, const BITSET_WORD_C * groups_touched,
    const int32_t * feature_group,
    uint32_t * unacquired_count, uint32_t * group_untouched_count,
    const unsigned char * row_wise) noexcept nogil:
    """Histograms of the masked-in features ``first <= f < stop`` (at most
    FEATURE_BLOCK) that are not built row-wise (``row_wise[f]``, when given), and the
    acquisition counts of those with ``count_mask[f]``.

    ``first`` is a multiple of FEATURE_BLOCK, which divides 64: the block's feature bits
    share one bitset word, read once per row (the bitsets are column-major, so that
    word is read sequentially like a feature column)."""
    cdef const binned_t * columns[FEATURE_BLOCK]
    cdef hist_struct * hists[FEATURE_BLOCK]
    cdef Py_ssize_t features[FEATURE_BLOCK]
    cdef int shifts[FEATURE_BLOCK]
    cdef const BITSET_WORD_C * group_words[FEATURE_BLOCK]
    cdef int group_shifts[FEATURE_BLOCK]
    cdef uint32_t missing[FEATURE_BLOCK]
    cdef uint32_t untouched[FEATURE_BLOCK]
    cdef const BITSET_WORD_C * word = NULL
    cdef int n = 0, j
    cdef Py_ssize_t prefetch_rows
    cdef bint counting = False, any_group = False
    cdef Py_ssize_t f, i
    cdef int32_t row, group
    cdef gh_pair gh
    cdef BITSET_WORD_C bits
    for f in range(first, stop):
        if feature_mask[f] and (row_wise == NULL or not row_wise[f]):
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
    # Counting: the missing bits of every feature of the block are summed (cheap ALU
    # work); only the counted features' sums are stored.
    if counting:
        word = &acquired[(first >> 6) * n_samples]
    if n == FEATURE_BLOCK and not any_group:
        prefetch_rows = (COLUMN_PREFETCH_ROWS if n_rows * SCATTERED_LEAF_SHARE < n_samples
                         else 0)
        if binned_t is uint8_t:
            four_histograms_u8(columns, <void * const *> hists, rows, n_rows,
                               ordered_gradients, ordered_hessians, prefetch_rows, word,
                               shifts, missing)
        else:
            four_histograms_u16(columns, <void * const *> hists, rows, n_rows,
                                ordered_gradients, ordered_hessians, prefetch_rows, word,
                                shifts, missing)
    elif not counting:
        for i in range(n_rows):
            row = rows[i]
            gh = gh_make(ordered_gradients[i], ordered_hessians[i])
            for j in range(n):
                bin_add(&hists[j][columns[j][row]], gh)
    else:
        for i in range(n_rows):
            row = rows[i]
            bits = ~word[row]
            gh = gh_make(ordered_gradients[i], ordered_hessians[i])
            for j in range(n):
                bin_add(&hists[j][columns[j][row]], gh)
                missing[j] += (bits >> shifts[j]) & 1
            if any_group:
                for j in range(n):
                    if group_words[j] != NULL:
                        untouched[j] += ((~group_words[j][row]) >> group_shifts[j]) & 1
    for j in range(n):
        if counting and count_mask[features[j]]:
            unacquired_count[features[j]] = missing[j]
            group_untouched_count[features[j]] = untouched[j]


cdef inline void _count_row(count_task * task, int32_t row) noexcept nogil:
    """Add 1 to the count of every bit that is NOT set in the row's word: a ripple-carry
    add of the word into the bit planes (two steps on average)."""
    cdef uint64_t carry = ~task.column[row], t
    cdef int k = 0
    while carry != 0 and k < COUNT_PLANES:
        t = task.planes[k] & carry
        task.planes[k] ^= carry
        carry = t
        k += 1


cdef inline uint32_t _task_count(const count_task * task, int bit) noexcept nogil:
    cdef uint32_t count = 0
    cdef int k
    for k in range(COUNT_PLANES):
        count |= <uint32_t> ((task.planes[k] >> bit) & 1) << k
    return count


cdef inline void _sparse_group_histograms(
    const sparse_bins_struct * sparse, Py_ssize_t group, Py_ssize_t n_samples,
    const int32_t * rows, Py_ssize_t n_rows,
    const double * ordered_gradients, const double * ordered_hessians,
    const uint32_t * n_value_bins, int missing_bin, hist_struct * out, Py_ssize_t n_bins,
    count_task * tasks, Py_ssize_t n_tasks) noexcept nogil:
    """Histograms of every feature of one row-wise group, and the counts of the tasks
    ``group, group + n_groups, ...``, in one pass over the leaf's rows."""
    cdef Py_ssize_t i, j, k, t, b, f, first_task = group
    cdef const int64_t * indptr = &sparse.indptr[group * (n_samples + 1)]
    cdef const uint32_t * entries = sparse.entries
    cdef int32_t row
    cdef double sum_g, sum_h, total_gradients = 0.0, total_hessians = 0.0
    cdef gh_pair gh
    cdef uint32_t count
    cdef hist_struct * hist
    cdef int most_frequent
    for j in range(sparse.group_indptr[group], sparse.group_indptr[group + 1]):
        f = sparse.features[j]
        memset(&out[f * n_bins], 0, n_value_bins[f] * sizeof(hist_struct))
        memset(&out[f * n_bins + missing_bin], 0, sizeof(hist_struct))
    for i in range(n_rows):
        total_gradients += ordered_gradients[i]
        total_hessians += ordered_hessians[i]
        if i + PREFETCH_ROWS < n_rows:
            prefetch(&indptr[rows[i + PREFETCH_ROWS]])
            t = first_task
            while t < n_tasks:
                prefetch(&tasks[t].column[rows[i + PREFETCH_ROWS]])
                t += sparse.n_groups
        if i + PREFETCH_ROWS // 2 < n_rows:
            prefetch(&entries[indptr[rows[i + PREFETCH_ROWS // 2]]])
        row = rows[i]
        gh = gh_make(ordered_gradients[i], ordered_hessians[i])
        for k in range(indptr[row], indptr[row + 1]):
            bin_add(&out[entries[k]], gh)
        t = first_task
        while t < n_tasks:
            _count_row(&tasks[t], row)
            t += sparse.n_groups
    # the most frequent bin: the leaf's totals (summed in row order: the same in every
    # group) minus the other bins, in bin order
    for j in range(sparse.group_indptr[group], sparse.group_indptr[group + 1]):
        f = sparse.features[j]
        hist = &out[f * n_bins]
        most_frequent = sparse.most_frequent_bin[f]
        sum_g, sum_h, count = total_gradients, total_hessians, <uint32_t> n_rows
        for k in range(n_value_bins[f] + 1):
            b = k if k < n_value_bins[f] else missing_bin
            if b != most_frequent:
                sum_g -= hist[b].sum_gradients
                sum_h -= hist[b].sum_hessians
                count -= hist[b].count
        hist[most_frequent].sum_gradients = sum_g
        hist[most_frequent].sum_hessians = sum_h
        hist[most_frequent].count = count


cdef bint _use_row_wise(const sparse_bins_struct * sparse,
                        const unsigned char * feature_mask) noexcept nogil:
    """The row-wise pass builds every sparse feature: worth it while at least half of
    them are masked in (column subsampling can leave fewer)."""
    cdef Py_ssize_t j, n_masked = 0
    if sparse == NULL or sparse.n_groups == 0:
        return False
    for j in range(sparse.group_indptr[sparse.n_groups]):
        n_masked += feature_mask[sparse.features[j]] != 0
    return 2 * n_masked >= sparse.group_indptr[sparse.n_groups]


cdef Py_ssize_t _max_count_tasks(
    const sparse_bins_struct * sparse, const unsigned char * feature_mask,
    const unsigned char * count_mask, const int32_t * feature_group) noexcept nogil:
    """Room for the tasks of :func:`_count_tasks`: every ``acquired`` word up to the
    last counted row-wise feature's, every ``groups_touched`` word up to its largest
    group's."""
    cdef Py_ssize_t j, f, last_feature = -1, last_group = -1
    for j in range(sparse.group_indptr[sparse.n_groups]):
        f = sparse.features[j]
        if feature_mask[f] and count_mask[f]:
            last_feature = f
            last_group = max(last_group, feature_group[f])
    return (last_feature + 64) // 64 + (last_group + 64) // 64


cdef Py_ssize_t _count_tasks(
    const sparse_bins_struct * sparse, Py_ssize_t n_samples,
    const unsigned char * feature_mask, const unsigned char * count_mask,
    const BITSET_WORD_C * acquired, const BITSET_WORD_C * groups_touched,
    const int32_t * feature_group, count_task * tasks) noexcept nogil:
    """The bitset words whose bits the counted row-wise features need (``acquired``
    words, then ``groups_touched`` words), each once, into ``tasks``; returns how many."""
    cdef Py_ssize_t j, f, t, n_tasks = 0
    cdef const BITSET_WORD_C * column
    cdef int32_t group
    for j in range(sparse.group_indptr[sparse.n_groups]):     # features ascend
        f = sparse.features[j]
        column = &acquired[(f >> 6) * n_samples]
        if feature_mask[f] and count_mask[f] and (
                n_tasks == 0 or tasks[n_tasks - 1].column != column):
            tasks[n_tasks].column = column
            n_tasks += 1
    for j in range(sparse.group_indptr[sparse.n_groups]):
        f = sparse.features[j]
        group = feature_group[f]
        if not (feature_mask[f] and count_mask[f]) or group < 0:
            continue
        column = &groups_touched[(group >> 6) * n_samples]
        for t in range(n_tasks):       # few group words: a scan finds the known ones
            if tasks[t].column == column:
                break
        else:
            tasks[n_tasks].column = column
            n_tasks += 1
    return n_tasks


cdef void _store_row_wise_counts(
    const sparse_bins_struct * sparse, Py_ssize_t n_samples,
    const unsigned char * feature_mask, const unsigned char * count_mask,
    const BITSET_WORD_C * acquired, const BITSET_WORD_C * groups_touched,
    const int32_t * feature_group, const count_task * tasks, Py_ssize_t n_tasks,
    uint32_t * unacquired_count, uint32_t * group_untouched_count) noexcept nogil:
    cdef Py_ssize_t j, f, t
    cdef int32_t group
    for j in range(sparse.group_indptr[sparse.n_groups]):
        f = sparse.features[j]
        if not (feature_mask[f] and count_mask[f]):
            continue
        group = feature_group[f]
        group_untouched_count[f] = 0
        for t in range(n_tasks):
            if tasks[t].column == &acquired[(f >> 6) * n_samples]:
                unacquired_count[f] = _task_count(&tasks[t], f & 63)
            elif group >= 0 and tasks[t].column == &groups_touched[(group >> 6) * n_samples]:
                group_untouched_count[f] = _task_count(&tasks[t], group & 63)


cdef int build_histograms_core(
    const void * binned, int bin_bytes, Py_ssize_t n_samples, Py_ssize_t n_features,
    const int32_t * rows, Py_ssize_t n_rows,
    const double * gradients, const double * hessians,
    const unsigned char * feature_mask, const uint32_t * n_value_bins, int missing_bin,
    hist_struct * out, Py_ssize_t n_bins,
    double * ordered_gradients, double * ordered_hessians,
    const unsigned char * count_mask,
    const BITSET_WORD_C * acquired, const BITSET_WORD_C * groups_touched,
    const int32_t * feature_group,
    uint32_t * unacquired_count, uint32_t * group_untouched_count,
    const sparse_bins_struct * sparse, int n_threads) noexcept nogil:
    """Histograms of the rows ``rows[:n_rows]``; ``binned`` is Fortran ordered
    (feature ``f`` of row ``r`` at ``binned[f * n_samples + r]``), uint8 bins
    (``bin_bytes`` 1) or uint16 (2); ``out`` holds
    ``n_features x n_bins`` structs. ``ordered_*`` are scratch buffers of at least
    ``n_rows`` doubles.

    ``sparse`` (or NULL): the row-wise layout of the sparse features of ``binned``
    (:class:`SparseBins`, made with ``n_bins``). When the row-wise pass is used, the
    bins of every sparse feature are written, masked-in or not.

    ``count_mask == NULL``: no acquisition counts. Otherwise the features with
    ``count_mask[f]`` also get ``unacquired_count[f]`` (rows without bit ``f`` in
    ``acquired``) and ``group_untouched_count[f]`` (rows without the bit of ``f``'s
    group in ``groups_touched``; 0 without a group); the other entries are not
    written. Both bitsets are column-major: word ``w`` of row ``r`` at
    ``[w * n_samples + r]``. The histograms do not depend on what is counted.

    Returns 0, or -1 when the counters' scratch cannot be allocated (nothing built)."""
    cdef Py_ssize_t i, item, n_tasks = 0
    cdef Py_ssize_t n_blocks = (n_features + FEATURE_BLOCK - 1) // FEATURE_BLOCK
    cdef const unsigned char * row_wise = NULL
    cdef count_task * tasks = NULL
    cdef Py_ssize_t n_groups = 0
    if _use_row_wise(sparse, feature_mask):
        row_wise = sparse.is_sparse
        n_groups = sparse.n_groups
        if count_mask != NULL:
            tasks = <count_task *> calloc(
                _max_count_tasks(sparse, feature_mask, count_mask, feature_group) + 1,
                sizeof(count_task))
            if tasks == NULL:
                return -1
            n_tasks = _count_tasks(sparse, n_samples, feature_mask, count_mask, acquired,
                                   groups_touched, feature_group, tasks)
    if n_rows * n_features < MIN_PARALLEL_WORK:
        n_threads = 1
    # One parallel region (waking OpenMP's sleeping threads costs 13-21 us a region):
    # the gradients gathered in the leaf's row order once, so that each feature's pass
    # reads them sequentially; then one pool of work: the row-wise groups (the largest
    # items) first, then the dense feature blocks, each writing its own features only.
    with parallel(num_threads=n_threads):
        for i in prange(n_rows, schedule="static"):
            ordered_gradients[i] = gradients[rows[i]]
            ordered_hessians[i] = hessians[rows[i]]
        for item in prange(n_groups + n_blocks, schedule="dynamic"):
            if item < n_groups:
                _sparse_group_histograms(
                    sparse, item, n_samples, rows, n_rows, ordered_gradients,
                    ordered_hessians, n_value_bins, missing_bin, out, n_bins, tasks,
                    n_tasks)
            elif bin_bytes == 1:
                _block_histograms(
                    (item - n_groups) * FEATURE_BLOCK,
                    min((item - n_groups + 1) * FEATURE_BLOCK, n_features),
                    <const uint8_t *> binned,
                    n_samples, rows, n_rows, ordered_gradients, ordered_hessians,
                    feature_mask, n_value_bins, missing_bin, out, n_bins, count_mask,
                    acquired, groups_touched, feature_group, unacquired_count,
                    group_untouched_count, row_wise)
            else:
                _block_histograms(
                    (item - n_groups) * FEATURE_BLOCK,
                    min((item - n_groups + 1) * FEATURE_BLOCK, n_features),
                    <const uint16_t *> binned,
                    n_samples, rows, n_rows, ordered_gradients, ordered_hessians,
                    feature_mask, n_value_bins, missing_bin, out, n_bins, count_mask,
                    acquired, groups_touched, feature_group, unacquired_count,
                    group_untouched_count, row_wise)
    if tasks != NULL:
        _store_row_wise_counts(sparse, n_samples, feature_mask, count_mask, acquired,
                               groups_touched, feature_group, tasks, n_tasks,
                               unacquired_count, group_untouched_count)
        free(tasks)
    return 0


cdef inline void _subtract_bin(const hist_struct * parent, const hist_struct * child,
                               hist_struct * out) noexcept nogil:
    out.sum_gradients = parent.sum_gradients - child.sum_gradients
    out.sum_hessians = parent.sum_hessians - child.sum_hessians
    out.count = parent.count - child.count


cdef inline void _subtract_feature(
    const hist_struct * parent, const hist_struct * child, hist_struct * out,
    uint32_t n_value_bins, int missing_bin) noexcept nogil:
    cdef Py_ssize_t b
    for b in range(n_value_bins):      # a branch-free loop over contiguous bins
        _subtract_bin(&parent[b], &child[b], &out[b])
    _subtract_bin(&parent[missing_bin], &child[missing_bin], &out[missing_bin])


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


cdef class SparseBins:
    """The sparse features of binned data, row-wise, without their most frequent bin.

    A feature is sparse when its most frequent bin (the missing bin included) holds at
    least ``min_share`` of the rows, provided the sparse features' most frequent bins
    hold at least ``min_elided_columns`` columns' worth of rows together (else none is).
    Its other bins are stored per row, so that a leaf's
    histogram pass reads only them; the most frequent bin is rebuilt from the leaf's
    totals. The sparse features are cut into at most ``n_groups`` runs of consecutive
    features with about equal numbers of entries (and at least MIN_GROUP_ENTRIES per row
    in each), the units of work of the threads.

    Parameters
    ----------
    binned : uint8 or uint16 array of shape (n_samples, n_features), Fortran order
    n_value_bins : uint32 array of shape (n_features,)
    missing_bin : int
        The histograms this layout fills have ``missing_bin + 1`` bins per feature.
    min_share : float in [0, 1]
        0 makes every feature sparse (as the tests do); 1 only the constant ones.
    n_groups : int >= 1
    min_elided_columns : float >= 0

    Attributes
    ----------
    features : int32 array, the sparse features (ascending)
    is_sparse : uint8 array of shape (n_features,)
    most_frequent_bin : uint16 array of shape (n_features,)
    group_indptr : int32 array of shape (n_groups + 1,); group ``g`` holds
        ``features[group_indptr[g]:group_indptr[g + 1]]``
    indptr : int64 array of shape (n_groups, n_samples + 1)
    entries : uint32 array; row ``r``'s entries in group ``g`` are
        ``entries[indptr[g, r]:indptr[g, r + 1]]``, each ``f * n_bins + bin``
    """

    def __init__(self, binned, const uint32_t[::1] n_value_bins, int missing_bin,
                 double min_share=MIN_SPARSE_SHARE, Py_ssize_t n_groups=SPARSE_GROUPS,
                 double min_elided_columns=MIN_ELIDED_COLUMNS):
        _fill_sparse_bins(self, binned, n_value_bins, missing_bin, min_share, n_groups,
                          min_elided_columns)

    @property
    def n_entries(self) -> int:
        """The stored (row, feature) pairs: the rows outside each sparse feature's most
        frequent bin."""
        return int(self.entries.shape[0])

    @property
    def nbytes(self) -> int:
        return int(self.indptr.nbytes + self.entries.nbytes)

    def check_matches(self, binned, int missing_bin):
        """ValueError unless this layout was made for data of ``binned``'s shape and
        histograms of ``missing_bin + 1`` bins."""
        if (binned.shape[0] != self.n_samples or binned.shape[1] != self.n_features
                or missing_bin + 1 != self.n_bins):
            raise ValueError(
                f"the sparse layout was made for {self.n_samples} x {self.n_features} "
                f"binned data with {self.n_bins} bins, not {binned.shape[0]} x "
                f"{binned.shape[1]} with {missing_bin + 1}")


def _fill_sparse_bins(SparseBins self, const binned_t[::1, :] binned,
                      const uint32_t[::1] n_value_bins, int missing_bin, double min_share,
                      Py_ssize_t n_groups, double min_elided_columns):
    """:class:`SparseBins`' constructor on ``binned_t`` bins (a special method cannot
    take fused types)."""
    cdef Py_ssize_t n = binned.shape[0], n_features = binned.shape[1]
    cdef Py_ssize_t f, r, g, j, n_sparse
    cdef int highest = 255 if binned_t is uint8_t else 65535
    if not 0 <= missing_bin <= highest:
        raise ValueError(f"missing_bin must be in [0, {highest}], got {missing_bin}")
    if n_value_bins.shape[0] != n_features:
        raise ValueError("n_value_bins does not match the number of features")
    if not 0.0 <= min_share <= 1.0:
        raise ValueError(f"min_share must be in [0, 1], got {min_share}")
    if n_groups < 1:
        raise ValueError(f"n_groups must be >= 1, got {n_groups}")
    if not min_elided_columns >= 0:
        raise ValueError(f"min_elided_columns must be >= 0, got {min_elided_columns}")
    nvb = np.asarray(n_value_bins)
    if nvb.size and nvb.max() > missing_bin:
        raise ValueError("missing_bin must be a bin above every value bin")
    _check_bins(binned, missing_bin + 1)
    self.n_samples, self.n_features, self.n_bins = n, n_features, missing_bin + 1
    bin_counts = np.zeros((n_features, missing_bin + 1), dtype=np.int64)
    cdef int64_t[:, ::1] counts = bin_counts
    with nogil:
        for f in range(n_features):
            for r in range(n):
                counts[f, binned[r, f]] += 1
    most_frequent = bin_counts.argmax(axis=1).astype(np.uint16)
    top = bin_counts.max(axis=1) if n_features else np.zeros(0, dtype=np.int64)
    is_sparse = (top >= min_share * n) & (n > 0)
    if (n_features * self.n_bins >= 2 ** 32    # entries would overflow uint32
            or top[is_sparse].sum() < min_elided_columns * n):
        is_sparse[:] = False
    features = np.flatnonzero(is_sparse).astype(np.int32)
    n_sparse = features.shape[0]
    # runs of consecutive sparse features with about equal numbers of entries
    cumulative = np.cumsum(n - top[features])
    total = int(cumulative[n_sparse - 1]) if n_sparse else 0
    n_groups = max(1, min(n_groups, total // max(n * MIN_GROUP_ENTRIES, 1)))
    cuts = np.searchsorted(cumulative, total * np.arange(1, n_groups) / n_groups,
                           side="right")
    group_indptr = np.unique(np.concatenate(
        [[0], np.clip(cuts, 0, n_sparse), [n_sparse]])).astype(np.int32)
    n_groups = group_indptr.shape[0] - 1 if n_sparse else 0
    group_indptr = group_indptr[:n_groups + 1]
    indptr = np.zeros((n_groups, n + 1), dtype=np.int64)
    cdef int64_t[:, ::1] ptr = indptr
    cdef const int32_t[::1] feats = features
    cdef const int32_t[::1] gptr = group_indptr
    cdef const uint16_t[::1] mfb = most_frequent
    cdef int64_t base = 0
    with nogil:
        for g in range(n_groups):
            for j in range(gptr[g], gptr[g + 1]):
                f = feats[j]
                for r in range(n):
                    ptr[g, r + 1] += binned[r, f] != mfb[f]
            ptr[g, 0] = base
            for r in range(n):
                ptr[g, r + 1] += ptr[g, r]
            base = ptr[g, n]
    entries = np.empty(base, dtype=np.uint32)
    cursor = np.empty(n, dtype=np.int64)
    cdef uint32_t[::1] out = entries
    cdef int64_t[::1] at = cursor
    cdef uint32_t n_bins = <uint32_t> self.n_bins
    with nogil:
        for g in range(n_groups):
            for r in range(n):
                at[r] = ptr[g, r]
            for j in range(gptr[g], gptr[g + 1]):      # features ascend in a row
                f = feats[j]
                for r in range(n):
                    if binned[r, f] != mfb[f]:
                        out[at[r]] = <uint32_t> f * n_bins + binned[r, f]
                        at[r] += 1
    self.indptr, self.entries, self.group_indptr = indptr, entries, group_indptr
    self.features, self.most_frequent_bin = features, most_frequent
    self.is_sparse = is_sparse.astype(np.uint8)
    self.c.n_groups = n_groups
    self.c.indptr = &ptr[0, 0] if n_groups else NULL
    self.c.entries = &out[0] if base else NULL
    self.c.group_indptr = &gptr[0]
    self.c.features = &feats[0] if n_sparse else NULL
    cdef const unsigned char[::1] sparse_view = self.is_sparse
    self.c.is_sparse = &sparse_view[0] if n_features else NULL
    self.c.most_frequent_bin = &mfb[0] if n_features else NULL


def _check_shapes(binned, out, n_value_bins, missing_bin):
    if out.shape[0] != binned.shape[1] or n_value_bins.shape[0] != binned.shape[1]:
        raise ValueError("out / n_value_bins do not match the number of features")
    nvb = np.asarray(n_value_bins)
    if not 0 <= missing_bin < out.shape[1] or (nvb.size and nvb.max() > missing_bin):
        raise ValueError("missing_bin must be a valid bin above every value bin")


def _check_bins(binned, n_bins):
    """Every bin of ``binned`` indexes one of the ``n_bins`` histogram bins (a bin always
    does when there are as many as its dtype has values)."""
    if n_bins <= np.iinfo(np.asarray(binned).dtype).max and binned.shape[0] \
            and binned.shape[1] \
            and np.asarray(binned).max() >= n_bins:
        raise ValueError(f"binned holds a bin >= the {n_bins} bins of out")


def build_histograms(
    const binned_t[::1, :] binned,
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
    SparseBins sparse=None,
):
    """Histograms of the leaf whose training rows are ``rows``.

    Parameters
    ----------
    binned : uint8 or uint16 array of shape (n_samples, n_features), Fortran order
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
    sparse : SparseBins of ``binned``, optional
        Build the sparse features row-wise; their bins are then all written (masked-in
        or not) and equal the column-wise sums up to rounding in the most frequent bin.

    Raises ValueError on inconsistent shapes, rows out of range or bins beyond ``out``.
    """
    check_n_threads(n_threads)
    _check_shapes(binned, out, n_value_bins, missing_bin)
    cdef Py_ssize_t n_rows = rows.shape[0], n_features = binned.shape[1]
    if (gradients.shape[0] != binned.shape[0] or hessians.shape[0] != binned.shape[0]
            or feature_mask.shape[0] != n_features):
        raise ValueError("gradients / hessians need one entry per sample, feature_mask "
                         "one per feature")
    check_rows_in_range(rows, binned.shape[0])
    _check_bins(binned, out.shape[1])
    if sparse is not None:
        sparse.check_matches(binned, missing_bin)
        if out.shape[1] != sparse.n_bins:
            raise ValueError(f"out has {out.shape[1]} bins per feature, the sparse layout "
                             f"{sparse.n_bins}")
    cdef const sparse_bins_struct * layout = &sparse.c if sparse is not None else NULL
    cdef int status
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
            status = build_histograms_core(
                &binned[0, 0], sizeof(binned_t), binned.shape[0], n_features,
                &rows[0] if n_rows else NULL,
                n_rows, &gradients[0] if n_rows else NULL,
                &hessians[0] if n_rows else NULL, &feature_mask[0], &n_value_bins[0],
                missing_bin, &out[0, 0], out.shape[1], ordered_gradients, ordered_hessians,
                cm, acq, grp, fg, uc, gc, layout, n_threads)
    finally:
        free(ordered_gradients)
        free(ordered_hessians)
    if status != 0:
        raise MemoryError("cannot allocate the acquisition counters of a histogram pass")


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
