from libc.stdint cimport int32_t, int64_t

from ._types cimport BITSET_WORD_C, node_struct


cdef class AcquisitionState:
    cdef BITSET_WORD_C[::1, :] acquired         # column-major: a word is a column
    cdef BITSET_WORD_C[::1, :] groups_touched
    cdef int64_t[::1] n_acquired
    cdef int64_t[::1] n_touched
    cdef unsigned char[::1] feature_used
    cdef unsigned char[::1] group_used
    cdef const int32_t[::1] feature_group
    cdef readonly Py_ssize_t n_samples, n_features, n_groups
    cdef bint acquire_rows(self, const int32_t * rows, Py_ssize_t n_rows, int feature,
                           int64_t * newly_acquired) noexcept nogil
    cdef bint add_acquisitions(self, int feature, int64_t newly,
                               int64_t newly_touched) noexcept nogil
    cdef int _check_tree(self, const node_struct[::1] tree, str feature_is) except -1
