from libc.stdint cimport int32_t, uint32_t

cdef Py_ssize_t split_rows_core(
    int32_t * rows, Py_ssize_t n_rows, const void * column, int bin_bytes,
    int bin_threshold, bint default_left, int missing_bin,
    const uint32_t * cat_bins, int32_t * buffer) noexcept nogil

cdef Py_ssize_t split_rows_parallel(
    int32_t * rows, Py_ssize_t n_rows, const void * column, int bin_bytes,
    int bin_threshold, bint default_left, int missing_bin,
    const uint32_t * cat_bins, int32_t * buffer, int n_threads) noexcept nogil
