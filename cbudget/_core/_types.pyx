"""numpy dtypes that mirror the structs of ``_types.pxd``."""
import numpy as np

X_BINNED_DTYPE = np.uint8
# wide binned data: a feature with more than 256 bins (missing_bin > 255)
X_BINNED_WIDE_DTYPE = np.uint16
G_H_DTYPE = np.float64
BITSET_WORD_DTYPE = np.uint64

# Training refuses more rows than this (2**30; see MAX_ROWS_C in _types.pxd).
MAX_ROWS = MAX_ROWS_C

HISTOGRAM_DTYPE = np.dtype(
    [("sum_gradients", np.float64), ("sum_hessians", np.float64), ("count", np.uint32)],
    align=True,
)

# One tree is a flat array of these; children are node ids within the same tree (-1 = leaf).
NODE_DTYPE = np.dtype(
    [
        ("value", np.float64),
        ("threshold", np.float64),
        ("gain", np.float64),
        ("cost_penalty", np.float64),
        ("sum_hessian", np.float64),
        ("path_cost", np.float64),
        ("left", np.int32),
        ("right", np.int32),
        ("feature", np.int32),
        ("n_samples", np.int32),
        ("new_acquisitions", np.int32),
        ("depth", np.int32),
        ("bin_threshold", np.uint16),
        ("default_left", np.uint8),
        ("categorical", np.uint8),
        ("cat_bins_at", np.uint32),
    ],
    align=True,
)

# Mirrors predict_node_struct: the packed layout used for prediction (leaf value in
# ``threshold``).
PREDICT_NODE_DTYPE = np.dtype(
    [("threshold", np.float64), ("left", np.int32), ("right", np.int32),
     ("feature", np.int32), ("default_left", np.uint8), ("categorical", np.uint8)],
    align=True,
)
assert PREDICT_NODE_DTYPE.itemsize == sizeof(predict_node_struct) == 24
assert NODE_DTYPE.itemsize == sizeof(node_struct)


def compact_nodes(nodes):
    """PREDICT_NODE_DTYPE copy of a NODE_DTYPE array (leaf values in ``threshold``; a
    categorical split keeps its bitset offset there)."""
    out = np.zeros(nodes.shape[0], dtype=PREDICT_NODE_DTYPE)
    for field in ("left", "right", "feature", "default_left", "categorical"):
        out[field] = nodes[field]
    out["threshold"] = np.where(nodes["left"] == -1, nodes["value"], nodes["threshold"])
    return out
