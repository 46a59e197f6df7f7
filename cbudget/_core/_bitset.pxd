# The bitsets of categorical splits, of raw codes (the model's cat_words) and of bins
# (a grown tree's cat_bin_words, the grower's pool): a length word n, then n uint32
# words, bit k of word k >> 5 for member k (docs/architecture.md, "Categorical
# features"). Anything beyond the n words is not a member.
from libc.stdint cimport uint32_t


cdef inline bint bitset_has(const uint32_t * bitset, uint32_t k) noexcept nogil:
    """Whether ``k`` is a member of ``bitset`` (length word first)."""
    return (k >> 5) < bitset[0] and (bitset[1 + (k >> 5)] >> (k & 31)) & 1
