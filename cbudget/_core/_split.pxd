from libc.stdint cimport int64_t, uint32_t

from ._types cimport hist_struct

cdef struct split_struct:
    double gain            # raw gain minus cost penalty
    double raw_gain
    double cost_penalty
    int feature            # -1: no admissible split
    int bin_threshold
    unsigned char default_left
    double sum_gradient_left
    double sum_hessian_left
    uint32_t count_left
    unsigned char categorical   # a categorical split: the bins going left are cat_bins
                                # (1: one level, 2: many-vs-many, children regularised
                                # with reg_lambda + cat_l2)
    uint32_t * cat_bins         # ... a bitset (_bitset.pxd) in the scan's scratch
    int64_t cat_at              # ... or, kept by the grower, at this offset of its pool

# Monotone constraints of a leaf's split search (LightGBM's "basic" method): the
# features' directions and the bounds of the leaf's output, which its children's outputs
# are clipped to
cdef struct monotone_struct:
    const signed char * direction   # per feature: +1 increasing, -1 decreasing, 0 free
    double lower
    double upper

# LightGBM's categorical split parameters (cbudget.params.CATEGORICAL_PARAMS)
cdef struct cat_params_struct:
    int max_cat_to_onehot
    int max_cat_threshold
    double cat_l2
    double cat_smooth
    uint32_t min_data_per_group

cdef split_struct find_best_split_core(
    const hist_struct * histograms, Py_ssize_t n_features, Py_ssize_t n_bins,
    const uint32_t * n_value_bins, int missing_bin, const unsigned char * feature_mask,
    double sum_gradients, double sum_hessians, uint32_t count,
    double reg_lambda, double min_child_weight, uint32_t min_data_in_leaf,
    const double * cost_penalty, const unsigned char * categorical,
    const cat_params_struct * cat, split_struct * per_feature, uint32_t * cat_scratch,
    Py_ssize_t cat_words, const monotone_struct * monotone, int n_threads) noexcept nogil

cdef Py_ssize_t cat_words_of(Py_ssize_t n_bins) noexcept nogil

cdef double leaf_value_core(double sum_gradients, double sum_hessians,
                            double reg_lambda) noexcept nogil

cdef double bounded_output(double sum_gradients, double sum_hessians, double reg_lambda,
                           double lower, double upper) noexcept nogil
