from ._types cimport X_BINNED_C, node_struct


cdef inline int binned_child(const node_struct * node, X_BINNED_C b,
                             X_BINNED_C missing_bin) noexcept nogil:
    """The child of split ``node`` that a row with bin ``b`` goes to."""
    if b == missing_bin:
        return node.left if node.default_left else node.right
    return node.left if b <= node.bin_threshold else node.right
