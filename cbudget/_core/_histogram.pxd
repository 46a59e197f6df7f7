from libc.stdint cimport int32_t, uint32_t

from ._types cimport X_BINNED_C, hist_struct, BITSET_WORD_C

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
    int n_threads) noexcept nogil

cdef void subtract_histograms_core(
    const hist_struct * parent, const hist_struct * child, hist_struct * out,
    Py_ssize_t n_features, Py_ssize_t n_bins, const unsigned char * feature_mask,
    const uint32_t * n_value_bins, int missing_bin, int n_threads) noexcept nogil
