"""Stable partition of a leaf's rows by a split (the grower's row bookkeeping)."""
from cython.parallel cimport prange
from libc.stdint cimport int32_t, uint8_t, uint16_t, uint32_t
from libc.stdlib cimport free, malloc
from libc.string cimport memcpy

from ._bitset cimport bitset_has
from ._safety cimport check_bitset, check_n_threads, first_out_of_range_32
from ._types cimport binned_t

# Leaves with fewer rows are partitioned on one thread.
cdef Py_ssize_t MIN_PARALLEL_ROWS = 65536


cdef Py_ssize_t _split_rows_typed(
    int32_t * rows, Py_ssize_t n_rows, const binned_t * column,
    binned_t bin_threshold, bint default_left, binned_t missing_bin,
    const uint32_t * cat_bins, int32_t * buffer) noexcept nogil:
    """:func:`split_rows_core` on ``binned_t`` bins."""
    cdef Py_ssize_t i, n_left = 0, n_right = 0
    cdef binned_t b
    cdef int goes_left
    cdef int32_t row
    # branch-free: the row is written to both sides and only one count advances (a
    # split's direction is a coin flip to the branch predictor)
    if cat_bins == NULL:
        for i in range(n_rows):
            row = rows[i]
            b = column[row]
            goes_left = default_left if b == missing_bin else b <= bin_threshold
            rows[n_left] = row
            buffer[n_right] = row
            n_left += goes_left
            n_right += 1 - goes_left
    else:
        for i in range(n_rows):
            row = rows[i]
            b = column[row]
            goes_left = default_left if b == missing_bin else bitset_has(cat_bins, b)
            rows[n_left] = row
            buffer[n_right] = row
            n_left += goes_left
            n_right += 1 - goes_left
    for i in range(n_right):
        rows[n_left + i] = buffer[i]
    return n_left


cdef Py_ssize_t split_rows_core(
    int32_t * rows, Py_ssize_t n_rows, const void * column, int bin_bytes,
    int bin_threshold, bint default_left, int missing_bin,
    const uint32_t * cat_bins, int32_t * buffer) noexcept nogil:
    """Rows going left first, then the rows going right, each side in its original
    order (sorted rows stay sorted, keeping histogram passes cache friendly).
    ``column`` is the feature's bins, uint8 (``bin_bytes`` 1) or uint16 (2);
    ``cat_bins`` (NULL: a numeric split) the bitset of the bins of a categorical split
    that go left (a length word, then the words: _bitset.pxd); ``buffer`` holds at least
    ``n_rows`` ints. Returns the number of rows going left."""
    if bin_bytes == 1:
        return _split_rows_typed(rows, n_rows, <const uint8_t *> column,
                                 <uint8_t> bin_threshold, default_left,
                                 <uint8_t> missing_bin, cat_bins, buffer)
    return _split_rows_typed(rows, n_rows, <const uint16_t *> column,
                             <uint16_t> bin_threshold, default_left, <uint16_t> missing_bin,
                             cat_bins, buffer)


cdef Py_ssize_t split_rows_parallel(
    int32_t * rows, Py_ssize_t n_rows, const void * column, int bin_bytes,
    int bin_threshold, bint default_left, int missing_bin,
    const uint32_t * cat_bins, int32_t * buffer, int n_threads) noexcept nogil:
    """Same result as :func:`split_rows_core`, on ``n_threads`` threads for large leaves:
    each thread partitions its chunk, then the chunks' left and right parts are copied
    to their final places (through ``buffer``) in chunk order."""
    if n_threads <= 1 or n_rows < MIN_PARALLEL_ROWS:
        return split_rows_core(rows, n_rows, column, bin_bytes, bin_threshold, default_left,
                               missing_bin, cat_bins, buffer)
    cdef Py_ssize_t chunk = (n_rows + n_threads - 1) // n_threads
    cdef Py_ssize_t * n_left = <Py_ssize_t *> malloc(3 * n_threads * sizeof(Py_ssize_t))
    cdef Py_ssize_t * left_at = n_left + n_threads
    cdef Py_ssize_t * right_at = n_left + 2 * n_threads
    cdef Py_ssize_t t, start, stop, total_left = 0, right_total = 0
    if n_left == NULL:   # out of memory: the serial version needs nothing more
        return split_rows_core(rows, n_rows, column, bin_bytes, bin_threshold, default_left,
                               missing_bin, cat_bins, buffer)
    for t in prange(n_threads, schedule="static", num_threads=n_threads):
        start = min(t * chunk, n_rows)
        stop = min(start + chunk, n_rows)
        n_left[t] = split_rows_core(&rows[start], stop - start, column, bin_bytes,
                                    bin_threshold, default_left, missing_bin, cat_bins,
                                    &buffer[start])
    for t in range(n_threads):
        left_at[t] = total_left
        total_left += n_left[t]
    right_total = total_left
    for t in range(n_threads):
        start = min(t * chunk, n_rows)
        stop = min(start + chunk, n_rows)
        right_at[t] = right_total
        right_total += stop - start - n_left[t]
    for t in prange(n_threads, schedule="static", num_threads=n_threads):
        start = min(t * chunk, n_rows)
        stop = min(start + chunk, n_rows)
        memcpy(&buffer[left_at[t]], &rows[start], n_left[t] * sizeof(int32_t))
        memcpy(&buffer[right_at[t]], &rows[start + n_left[t]],
               (stop - start - n_left[t]) * sizeof(int32_t))
    for t in prange(n_threads, schedule="static", num_threads=n_threads):
        start = min(t * chunk, n_rows)
        stop = min(start + chunk, n_rows)
        memcpy(&rows[start], &buffer[start], (stop - start) * sizeof(int32_t))
    free(n_left)
    return total_left


def split_rows(
    int32_t[::1] rows,
    const binned_t[::1, :] binned,
    const int feature,
    const int bin_threshold,
    const bint default_left,
    const int missing_bin,
    int32_t[::1] buffer,
    int n_threads=1,
    const uint32_t[::1] cat_bins=None,
):
    """Reorder ``rows`` in place so that the rows going left (bin ``<= bin_threshold``,
    or, with ``cat_bins`` (uint32: a length word ``n``, then ``n`` words with bit ``b``
    for bin ``b``), a bin whose bit is set; or missing with ``default_left``) come
    first, each side keeping its order. ``binned``: uint8 or uint16 bins.

    Returns the number of rows that go left. ValueError when ``feature`` is not a column
    of ``binned``, a row is out of range, ``buffer`` is shorter than ``rows``, a bin is
    out of the dtype's range, or ``cat_bins``' length word disagrees with its length.
    """
    cdef Py_ssize_t bad
    cdef int highest = 255 if binned_t is uint8_t else 65535
    check_n_threads(n_threads)
    if not (0 <= missing_bin <= highest and 0 <= bin_threshold <= highest):
        raise ValueError(f"bin_threshold and missing_bin must be in [0, {highest}] for "
                         f"{'uint8' if binned_t is uint8_t else 'uint16'} bins")
    if buffer.shape[0] < rows.shape[0]:
        raise ValueError("buffer is shorter than rows")
    if not 0 <= feature < binned.shape[1]:
        raise ValueError(f"feature {feature} out of range for {binned.shape[1]} features")
    check_bitset(cat_bins, "cat_bins")
    cdef const uint32_t * bits = &cat_bins[0] if cat_bins is not None else NULL
    if rows.shape[0] == 0:
        return 0
    with nogil:
        bad = first_out_of_range_32(&rows[0], rows.shape[0], 0, binned.shape[0])
    if bad >= 0:
        raise ValueError(f"rows[{bad}] = {rows[bad]} is out of range for "
                         f"{binned.shape[0]} samples")
    with nogil:
        n_left = split_rows_parallel(&rows[0], rows.shape[0], &binned[0, feature],
                                     sizeof(binned_t), bin_threshold, default_left, missing_bin,
                                     bits,
                                     &buffer[0], n_threads)
    return n_left
