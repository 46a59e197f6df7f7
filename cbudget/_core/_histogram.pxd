from libc.stdint cimport int32_t, int64_t, uint16_t, uint32_t

from ._types cimport hist_struct, BITSET_WORD_C


cdef struct sparse_bins_struct:
    # The row-wise layout of the sparse features (SparseBins): the entries of row r in
    # group g are entries[indptr[g * (n_samples + 1) + r] : indptr[... + r + 1]], each
    # f * n_bins + bin for a bin of feature f other than its most frequent one.
    Py_ssize_t n_groups
    const int64_t * indptr
    const uint32_t * entries
    const int32_t * group_indptr        # group g's features: features[group_indptr[g]:...]
    const int32_t * features            # the sparse features, ascending
    const unsigned char * is_sparse     # per feature
    const uint16_t * most_frequent_bin  # per feature


cdef class SparseBins:
    cdef sparse_bins_struct c
    cdef readonly Py_ssize_t n_samples, n_features, n_bins
    cdef readonly object indptr, entries, group_indptr, features, is_sparse
    cdef readonly object most_frequent_bin


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
    const sparse_bins_struct * sparse, int n_threads) noexcept nogil

cdef void subtract_histograms_core(
    const hist_struct * parent, const hist_struct * child, hist_struct * out,
    Py_ssize_t n_features, Py_ssize_t n_bins, const unsigned char * feature_mask,
    const uint32_t * n_value_bins, int missing_bin, int n_threads) noexcept nogil
