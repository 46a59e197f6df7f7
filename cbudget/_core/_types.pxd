# Shared C types of the kernels. Each struct mirrors a numpy dtype defined in _types.pyx
# (aligned, same field order), so struct arrays pass between Python and Cython as typed
# memoryviews without copies.
from libc.stdint cimport uint8_t, uint16_t, uint32_t, uint64_t, int32_t, int64_t

# A binned matrix holds uint8 bins when every feature has at most 256 bins (the missing
# bin included), else uint16 (Dataset.binned; docs/architecture.md, "Binning"). The
# kernels that read binned data take either (``binned_t``); budget_rf's stump kernel
# reads uint8 only (X_BINNED_C).
ctypedef uint8_t X_BINNED_C
ctypedef fused binned_t:
    uint8_t
    uint16_t
ctypedef double G_H_C
ctypedef uint64_t BITSET_WORD_C

# The most rows training takes (docs/architecture.md, "Limits"): row indices, per-node
# row counts and node ids are int32, and a tree grown on n rows has up to 2 n - 1 nodes,
# so 2 n - 2 must fit in an int32: n <= 2**30. Exposed to Python as _types.MAX_ROWS.
cdef enum:
    MAX_ROWS_C = 1073741824

cdef struct hist_struct:
    double sum_gradients
    double sum_hessians
    uint32_t count

cdef struct node_struct:
    double value
    double threshold
    double gain
    double cost_penalty
    double sum_hessian
    double path_cost
    int32_t left
    int32_t right
    int32_t feature
    int32_t n_samples
    int32_t new_acquisitions
    int32_t depth
    uint16_t bin_threshold
    uint8_t default_left
    # A categorical split (docs/architecture.md, "Categorical features"): the bins that
    # go left are the bitset at ``cat_bins_at`` in the grown tree's bin words
    # (training-time, like bin_threshold: _grower.GrownTree.cat_bin_words), and
    # ``threshold`` holds the offset of the raw codes' bitset in the model's
    # ``cat_words``; both bitsets are a length word, then the words (_bitset.pxd).
    uint8_t categorical
    uint32_t cat_bins_at

# What prediction reads of a node, packed (24 bytes instead of 72): traversal of large
# ensembles stays in cache. For a leaf, ``threshold`` holds the leaf value.
cdef struct predict_node_struct:
    double threshold
    int32_t left
    int32_t right
    int32_t feature
    uint8_t default_left
    uint8_t categorical     # in the padding: the struct stays 24 bytes
