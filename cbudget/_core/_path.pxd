# Marks of the features and cost groups tested on a node's root path, shared by the tree
# growers (_grower's cost penalty, _stumps' c(t)): a feature or group already on the path
# is priced differently. Each grower walks its own node layout and marks every ancestor's
# split feature with mark_feature.
from libc.stdint cimport int32_t


cdef inline void mark_feature(int32_t feature, const int32_t * feature_group,
                              unsigned char * on_path, unsigned char * group_on_path,
                              unsigned char mark) noexcept nogil:
    """Set (1) or clear (0) the path marks of ``feature`` and of its cost group (groups
    are ``feature_group[feature] >= 0``)."""
    on_path[feature] = mark
    if feature_group[feature] >= 0:
        group_on_path[feature_group[feature]] = mark
