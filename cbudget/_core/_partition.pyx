"""Stable partition of a leaf's rows by a split (the grower's row bookkeeping)."""
from libc.stdint cimport int32_t

from ._types cimport X_BINNED_C


cdef Py_ssize_t split_rows_core(
    int32_t * rows, Py_ssize_t n_rows, const X_BINNED_C * column,
    X_BINNED_C bin_threshold, bint default_left, X_BINNED_C missing_bin,
    int32_t * buffer) noexcept nogil:
    """Rows going left first, then the rows going right, each side in its original
    order (sorted rows stay sorted, keeping histogram passes cache friendly).
    ``column`` is the feature's bins; ``buffer`` holds at least ``n_rows`` ints.
    Returns the number of rows going left."""
    cdef Py_ssize_t i, n_left = 0, n_right = 0
    cdef X_BINNED_C b
    cdef bint goes_left
    for i in range(n_rows):
        b = column[rows[i]]
        goes_left = default_left if b == missing_bin else b <= bin_threshold
        if goes_left:
            rows[n_left] = rows[i]
            n_left += 1
        else:
            buffer[n_right] = rows[i]
            n_right += 1
    for i in range(n_right):
        rows[n_left + i] = buffer[i]
    return n_left


def split_rows(
    int32_t[::1] rows,
    const X_BINNED_C[::1, :] binned,
    const int feature,
    const X_BINNED_C bin_threshold,
    const bint default_left,
    const X_BINNED_C missing_bin,
    int32_t[::1] buffer,
):
    """Reorder ``rows`` in place so that the rows going left (bin ``<= bin_threshold``,
    or missing with ``default_left``) come first, each side keeping its order.

    Returns the number of rows that go left.
    """
    if buffer.shape[0] < rows.shape[0]:
        raise ValueError("buffer is shorter than rows")
    if rows.shape[0] == 0:
        return 0
    with nogil:
        n_left = split_rows_core(&rows[0], rows.shape[0], &binned[0, feature], bin_threshold,
                                 default_left, missing_bin, &buffer[0])
    return n_left
