"""Per-input acquired-feature bitsets (ARCHITECTURE section 2): update and query."""
from libc.stdint cimport int32_t, uint64_t

from ._types cimport BITSET_WORD_C


def mark_acquired(BITSET_WORD_C[:, ::1] bitset, const int32_t[::1] rows, const int bit):
    """Set ``bit`` for every row in ``rows``; return how many rows did not have it."""
    cdef Py_ssize_t i
    cdef int32_t row
    cdef Py_ssize_t word = bit >> 6
    cdef uint64_t mask = (<uint64_t> 1) << (bit & 63)
    cdef Py_ssize_t newly = 0
    with nogil:
        for i in range(rows.shape[0]):
            row = rows[i]
            if not bitset[row, word] & mask:
                bitset[row, word] |= mask
                newly = newly + 1
    return newly


def bitset_to_bool(const BITSET_WORD_C[:, ::1] bitset, const Py_ssize_t n_bits,
                   unsigned char[:, ::1] out):
    """Expand a bitset to an ``(n_rows, n_bits)`` array of 0/1."""
    cdef Py_ssize_t i, b
    with nogil:
        for i in range(bitset.shape[0]):
            for b in range(n_bits):
                out[i, b] = (bitset[i, b >> 6] >> (b & 63)) & 1
