from libc.math cimport isnan
from libc.stdint cimport int32_t, int64_t, uint32_t

from ._bitset cimport bitset_has
from ._types cimport node_struct, predict_node_struct


cdef inline int binned_child(const node_struct * node, int b, int missing_bin,
                             const uint32_t * bin_words) noexcept nogil:
    """The child of split ``node`` that a row with bin ``b`` goes to; a categorical
    split's bins going left are the bitset ``bin_words[node.cat_bins_at:]``."""
    if b == missing_bin:
        return node.left if node.default_left else node.right
    if node.categorical:
        return node.left if bitset_has(&bin_words[node.cat_bins_at], b) else node.right
    return node.left if b <= node.bin_threshold else node.right


cdef inline bint category_left(double value, const uint32_t * bitset) noexcept nogil:
    """Whether a (non-missing, >= 0) category ``value`` goes left at a categorical split
    whose bitset is ``bitset``: a length word ``n``, then ``n`` words of the codes going
    left. The value is truncated to its integer code; a code beyond the bitset (never
    seen in training) goes right."""
    if not value < 32.0 * bitset[0]:
        return False
    return bitset_has(bitset, <uint32_t> value)


cdef inline int32_t child_of(const predict_node_struct * node, double value,
                            const uint32_t * cat_words) noexcept nogil:
    """The child of split ``node`` (packed layout) that a row with ``value`` goes to:
    NaN (or, at a categorical split, a negative value) is missing and follows
    ``default_left``; a categorical split's bitset is ``cat_words[threshold:]``."""
    if isnan(value):
        return node.left if node.default_left else node.right
    if node.categorical:
        if value < 0:
            return node.left if node.default_left else node.right
        return node.left if category_left(value, &cat_words[<int64_t> node.threshold]) \
            else node.right
    return node.left if value <= node.threshold else node.right
