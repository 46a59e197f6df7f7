"""cbudget Boosters as XGBoost JSON or UBJSON models (``Booster.save_model(path,
format="xgboost")``), loadable by ``xgboost.Booster(model_file=path)`` in XGBoost 2.1 and
later, predicting as cbudget does (docs/architecture.md, "Interoperability").

cbudget sends ``x`` left when ``x <= T`` (float64); XGBoost when ``float32(x) < c``.
Each threshold becomes the float32 ``c`` after the largest float32 at most ``T``
(:func:`float32_split_conditions`), so every float32 input, which is what XGBoost
predicts on, routes as in cbudget. So does every float64 input that is not within
float32 rounding of a threshold: cbudget's bin edges lie between training values, on
float32 values where float32 tells the neighbours apart (``cbudget.dataset.
edges_between``), so no training value, and no value on their grid, is that close.

A categorical split (cbudget: the codes of its bitset go left, other codes right, NaN
and negative values the ``default_left`` way) becomes an XGBoost categorical split
(``split_type`` 1) listing the same codes, with its children swapped and
``default_left`` negated: XGBoost sends the listed categories right, every other one
left. The feature's type is ``"c"``; its levels go to XGBoost 3.1+'s ``cats`` section
(:func:`_cats_section`), by which XGBoost 3.1+ re-codes a DataFrame. XGBoost sends a
negative value (an invalid category) to its left child, which is cbudget's right one:
a negative value routes as in cbudget only at a split whose missing values go right.

This module does not import :mod:`cbudget.booster`, which imports it for
``save_model``; it reads the model through its public attributes.
"""
from __future__ import annotations

import json
import os
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from .._files import write_file_atomically
from ..booster import Booster
from ..category_bins import bitset_codes
from ..dataset import float32_floor
from ..model_io import register_exporter
from ..objectives import LOG_LINK_OBJECTIVES, objective_params
from .trees import check_exportable, leaf_tree
from .ubjson import encode

__all__ = ["save_xgboost", "xgboost_file_content", "float32_split_conditions",
           "EXPORTED_OBJECTIVES"]

# XGBoost's settings of the objectives (as XGBoost 2.1 writes them; later versions read
# them and default the settings they added). Only the name matters to prediction.
_LAMBDARANK_PARAM = {"lambdarank_bias_norm": "1", "lambdarank_normalization": "1",
                     "lambdarank_num_pair_per_sample": "4294967295",
                     "lambdarank_pair_method": "topk", "lambdarank_unbiased": "0",
                     "ndcg_exp_gain": "1"}
EXPORTED_OBJECTIVES: dict[str, dict[str, Any]] = {
    "reg:squarederror": {"reg_loss_param": {"scale_pos_weight": "1"}},
    "binary:logistic": {"reg_loss_param": {"scale_pos_weight": "1"}},
    "multi:softprob": {},          # softmax_multiclass_param: filled with num_class
    "rank:pairwise": {"lambdarank_param": _LAMBDARANK_PARAM},
    "rank:ndcg": {"lambdarank_param": _LAMBDARANK_PARAM},
    "reg:absoluteerror": {},
    "reg:gamma": {"reg_loss_param": {"scale_pos_weight": "1"}},
    # with the objective's parameter (objective_settings)
    "reg:pseudohubererror": {}, "reg:quantileerror": {}, "count:poisson": {},
    "reg:tweedie": {},
}
# the section (and key) of an objective's parameter in XGBoost's file
_PARAMETER_SECTIONS = {"huber_slope": ("pseudo_huber_param", "huber_slope"),
                       "quantile_alpha": ("quantile_loss_param", "quantile_alpha"),
                       "poisson_max_delta_step": ("poisson_regression_param",
                                                  "max_delta_step"),
                       "tweedie_variance_power": ("tweedie_regression_param",
                                                  "tweedie_variance_power")}
# the base_score (output space) whose margin is 0: the base scores go into the trees
ZERO_MARGIN_BASE_SCORE = {"binary:logistic": "5E-1",
                          **{name: "1E0" for name in LOG_LINK_OBJECTIVES}}


def objective_settings(booster: Booster) -> dict[str, Any]:
    """XGBoost's ``learner.objective`` section of ``booster``: the name, the settings
    XGBoost 2.1 writes, and the objective's parameter (the model's, else the default)."""
    section: dict[str, Any] = {"name": booster.objective,
                               **EXPORTED_OBJECTIVES[booster.objective]}
    for param, value in objective_params(booster.objective, booster.params).items():
        name, key = _PARAMETER_SECTIONS[param]
        # XGBoost lists the quantiles of a quantile model
        section[name] = {key: f"[{value!r}]" if param == "quantile_alpha" else repr(value)}
    return section

# the version written: the oldest XGBoost that reads these files
WRITTEN_VERSION = [2, 1, 0]
# characters XGBoost refuses in feature names (its DMatrix and predict check them)
REFUSED_IN_NAMES = "[]<"
# XGBoost's parent of the root
NO_PARENT = 2**31 - 1


def float32_split_conditions(threshold: ArrayLike) -> np.ndarray:
    """XGBoost split conditions of cbudget thresholds (export): float32 ``c`` with
    ``x < c`` iff ``x <= threshold`` for every float32 ``x``: the float32 after the
    largest float32 at most ``threshold``."""
    with np.errstate(over="ignore"):
        return np.nextafter(float32_floor(threshold), np.float32(np.inf))


def _json_text(value: Any) -> str:
    """The JSON text of a document: its numpy arrays as lists, float32 ones in their
    shortest form (XGBoost parses its JSON numbers into float32 and refuses number
    texts longer than 18 characters)."""
    if isinstance(value, dict):
        return "{" + ",".join(f"{json.dumps(str(k), ensure_ascii=False)}:{_json_text(v)}"
                              for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ",".join(_json_text(v) for v in value) + "]"
    if isinstance(value, np.ndarray):      # str of a numpy float32: its shortest form
        items = value if value.dtype == np.float32 else value.tolist()
        return "[" + ",".join(str(v) for v in items) + "]"
    # as UTF-8, not \u escapes: XGBoost's JSON reader keeps escapes literally
    return json.dumps(value, ensure_ascii=False)


def _xgboost_tree(tree: np.ndarray, index: int, n_features: int, shift: float,
                  bitsets: list[np.ndarray]) -> dict[str, Any]:
    """One tree in XGBoost's JSON form, ``shift`` added to its leaf values
    (``bitsets``: those of its categorical nodes, in node order). XGBoost finds a node's
    right child at ``left + 1``, so the nodes are renumbered breadth first with each
    node's two children side by side; a categorical node's children are swapped."""
    categorical = tree["categorical"] != 0
    tree = tree.copy()
    tree["left"], tree["right"] = (np.where(categorical, tree["right"], tree["left"]),
                                   np.where(categorical, tree["left"], tree["right"]))
    listed = dict(zip(np.flatnonzero(categorical).tolist(),
                      (bitset_codes(words[1:]) for words in bitsets)))
    left, right = tree["left"].tolist(), tree["right"].tolist()
    order = [0]
    for node in order:              # grows as it goes: children after their parent
        if left[node] != -1:
            order.extend((left[node], right[node]))
    order_ids = np.asarray(order, dtype=np.int64)
    new_id = np.empty(len(order), dtype=np.int64)
    new_id[order_ids] = np.arange(len(order))
    nodes = tree[order_ids]
    is_leaf = nodes["left"] == -1
    parents = np.full(len(order), NO_PARENT, dtype=np.int64)
    internal = np.flatnonzero(~is_leaf)
    parents[new_id[nodes["left"][internal]]] = internal
    parents[new_id[nodes["right"][internal]]] = internal
    is_categorical = nodes["categorical"] != 0
    conditions = np.where(is_categorical, 0.0, float32_split_conditions(
        np.where(is_categorical, 0.0, nodes["threshold"])))
    unheld = np.flatnonzero(~is_leaf & ~np.isfinite(conditions))
    if unheld.size:
        node = nodes[unheld[0]]
        what = (f"the split of feature {int(node['feature'])} at {float(node['threshold'])!r}")
        if not np.isfinite(node["threshold"]) or abs(node["threshold"]) >= 1e300:
            raise ValueError(f"{what} sends every number the same way: it separates missing "
                             "values from all numbers (as LightGBM writes such splits), which "
                             "XGBoost's float32 split conditions cannot hold")
        raise ValueError(f"{what}: the threshold lies beyond float32's range (3.4e38), "
                         "where XGBoost cannot hold its split condition")
    leaf_values = np.where(is_leaf, nodes["value"] + shift, 0.0).astype(np.float32)
    n = len(order)
    # the categorical nodes in XGBoost's numbering, each with the codes it lists
    cat_nodes = np.flatnonzero(is_categorical)
    codes = [listed[int(order_ids[node])] for node in cat_nodes]
    sizes = np.array([c.size for c in codes], dtype=np.int64)
    # numpy arrays of the types XGBoost writes its own trees with: UBJSON files get its
    # typed arrays (float32 "d", int32 "l", int64 "L", uint8 "U"), all of a tree's arrays
    # typed, as its reader requires once "parents" is
    f32, i32, i64, u8 = np.float32, np.int32, np.int64, np.uint8
    return {
        "base_weights": leaf_values,
        "categories": np.concatenate([np.zeros(0, i32), *codes]).astype(i32),
        "categories_nodes": cat_nodes.astype(i32),
        "categories_segments": (np.cumsum(sizes) - sizes).astype(i64),
        "categories_sizes": sizes,
        "default_left": np.where(is_leaf, 0, (nodes["default_left"] != 0)
                                 != is_categorical).astype(u8),
        "id": index,
        "left_children": np.where(is_leaf, -1, new_id[nodes["left"]]).astype(i32),
        "loss_changes": np.where(is_leaf, 0.0, nodes["gain"]).astype(f32),
        "parents": parents.astype(i32),
        "right_children": np.where(is_leaf, -1, new_id[nodes["right"]]).astype(i32),
        "split_conditions": np.where(is_leaf, leaf_values, conditions).astype(f32),
        "split_indices": np.where(is_leaf, 0, nodes["feature"]).astype(i32),
        "split_type": is_categorical.astype(u8),
        "sum_hessian": nodes["sum_hessian"].astype(f32),
        "tree_param": {"num_deleted": "0", "num_feature": str(n_features),
                       "num_nodes": str(n), "size_leaf_vector": "1"},
    }


def _level_encoding(levels: list[Any] | None) -> tuple[dict[str, Any], np.ndarray]:
    """One feature's entry of XGBoost's ``cats`` section and the argsort of its levels
    (XGBoost finds a DataFrame's levels by binary search in that order, comparing
    strings bytewise). ASCII strings are their bytes cut at ``offsets``, integers int64
    ``values`` (``type`` 15, XGBoost's tag of an int64 array). Other levels get an
    empty entry, so XGBoost reads their codes: floats and booleans, which XGBoost does
    not take as categories, and strings beyond ASCII, which XGBoost 3.2 cuts at
    character counts instead of byte counts when it reads a DataFrame (its own models
    of such levels then refuse their training levels); integer-coded features too."""
    if levels and all(isinstance(v, str) and v.isascii() for v in levels):
        raw = [v.encode("ascii") for v in levels]
        order = sorted(range(len(raw)), key=raw.__getitem__)
        offsets = np.cumsum([0] + [len(r) for r in raw]).astype(np.int32)
        # the bytes as a plain list: XGBoost writes an int8 typed array, which 2.1's
        # UBJSON reader refuses; both read a list
        return ({"offsets": offsets, "values": list(b"".join(raw))},
                np.asarray(order, np.int32))
    if levels and all(isinstance(v, int) and not isinstance(v, bool) for v in levels):
        values = np.asarray(levels, dtype=np.int64)
        return ({"type": 15, "values": values},
                np.argsort(values, kind="stable").astype(np.int32))
    return ({"offsets": np.zeros(0, np.int32), "values": []},
            np.zeros(0, np.int32))


def _cats_section(booster: Booster, n_features: int) -> dict[str, Any] | None:
    """XGBoost 3.1+'s ``cats`` section (the categories of a model trained on a
    DataFrame: with it XGBoost re-codes a DataFrame's category columns by level), or
    None when no feature has levels XGBoost can hold."""
    by_feature = booster.categories.by_feature()
    entries = [_level_encoding(by_feature.get(m)) for m in range(n_features)]
    sizes = [order.size for _, order in entries]
    if not any(sizes):
        return None
    return {"enc": [enc for enc, _ in entries],
            "feature_segments": np.cumsum([0] + sizes).astype(np.int32),
            "sorted_idx": np.concatenate([order for _, order in entries])}


def xgboost_document(booster: Booster, levels: bool = True) -> dict[str, Any]:
    """The XGBoost JSON document of ``booster`` (see :func:`save_xgboost`)."""
    # every booster, whatever its algorithm, is additive regression trees: XGBoost's
    check_exportable(booster, "XGBoost", EXPORTED_OBJECTIVES, REFUSED_IN_NAMES)
    n_outputs = booster.n_outputs
    n_features = len(booster.feature_names)
    # the rounds cbudget predicts with by default (up to best_iteration after early
    # stopping), which xgboost.Booster.predict then uses: it predicts with every round
    _, end = booster.iterations_used()
    indptr = list(booster.iteration_indptr[:end + 1])
    trees = list(zip(booster.trees, booster.tree_outputs))[:indptr[-1]]
    base = np.asarray(booster.base_score, dtype=np.float64)
    # XGBoost 2.1 holds one base_score for every class: the intercept is set to margin
    # 0 and each output's raw base score added to the leaves of its first-round tree,
    # or, when the first round lacks a tree of some output, to a round of one-leaf
    # trees put first
    first_round = [k for _, k in trees[:indptr[1]]] if len(indptr) > 1 else []
    if sorted(first_round) != list(range(n_outputs)):
        trees = [(leaf_tree(0.0), k) for k in range(n_outputs)] + trees
        indptr = [0] + [i + n_outputs for i in indptr]
    xgb_trees = [_xgboost_tree(tree, i, n_features, float(base[k]) if i < indptr[1] else 0.0,
                               booster.tree_bitsets(tree))
                 for i, (tree, k) in enumerate(trees)]
    num_class = booster.num_class if booster.objective == "multi:softprob" else 0
    objective = objective_settings(booster)
    if booster.objective == "multi:softprob":
        objective["softmax_multiclass_param"] = {"num_class": str(num_class)}
    default_names = [f"f{i}" for i in range(n_features)]
    named = list(booster.feature_names) != default_names
    types = ["float"] * n_features
    for m in booster.categories.features.tolist():
        types[m] = "c"
    attributes = {}
    if booster.best_iteration is not None and end > 0:
        # the last round written (XGBoost's estimators predict up to it: all of them)
        attributes["best_iteration"] = str(min(int(booster.best_iteration), end - 1))
        if booster.best_score is not None:
            attributes["best_score"] = str(booster.best_score)
    model: dict[str, Any] = {
        "gbtree_model_param": {"num_parallel_tree": "1", "num_trees": str(len(xgb_trees))},
        "iteration_indptr": indptr,
        "tree_info": [int(k) for _, k in trees],
        "trees": xgb_trees,
    }
    cats = _cats_section(booster, n_features) if levels else None
    if cats is not None:
        model["cats"] = cats
    return {
        "learner": {
            "attributes": attributes,
            "feature_names": list(booster.feature_names) if named else [],
            "feature_types": types if named or len(booster.categories) else [],
            "gradient_booster": {"model": model, "name": "gbtree"},
            "learner_model_param": {
                "base_score": ZERO_MARGIN_BASE_SCORE.get(booster.objective, "0"),
                "boost_from_average": "1", "num_class": str(num_class),
                "num_feature": str(n_features), "num_target": "1"},
            "objective": objective,
        },
        "version": WRITTEN_VERSION,
    }


def xgboost_file_content(booster: Booster, path: str | os.PathLike,
                         levels: bool = True) -> str | bytes:
    """What :func:`save_xgboost` writes at ``path``: UBJSON bytes for a ``.ubj`` path
    (as XGBoost chooses its format by the extension), JSON text otherwise."""
    document = xgboost_document(booster, levels)
    if os.fsdecode(path).lower().endswith(".ubj"):
        return encode(document)
    return _json_text(document)


def save_xgboost(booster: Booster, path: str | os.PathLike, *, levels: bool = True) -> None:
    """Write ``booster`` as an XGBoost model that ``xgboost.Booster(model_file=path)``
    loads (XGBoost 2.1 and later) and that predicts as cbudget does: UBJSON when
    ``path`` ends with ``.ubj``, JSON otherwise.

    Parameters
    ----------
    booster : cbudget.Booster
        Of algorithm gbdt, cegb, greedy_miser or imported; objective
        reg:squarederror, binary:logistic, multi:softprob, rank:pairwise, rank:ndcg,
        or the regression objectives reg:absoluteerror, reg:pseudohubererror,
        reg:quantileerror, count:poisson, reg:tweedie, reg:gamma (with their parameter:
        huber_slope, quantile_alpha, max_delta_step, tweedie_variance_power).
    path : str or os.PathLike
        Written whole or not at all (a temporary file in the same folder, then
        renamed), over a regular file or none: a link, device, FIFO, socket or folder
        at ``path`` raises FileExistsError.
    levels : bool, default True
        Write the categorical features' levels (XGBoost 3.1+'s ``cats`` section, see
        Notes). False leaves them out, for readers that refuse the section (Treelite).

    Notes
    -----
    XGBoost predicts on float32 inputs: split conditions are chosen so that every
    float32 input (NaN included) reaches the leaf it reaches in cbudget; float64 inputs
    do too unless they lie within float32 rounding of a threshold (no training value
    does, unless float32 cannot tell it from its neighbour: see
    :func:`cbudget.dataset.edges_between`). XGBoost's margins equal cbudget's up to
    float32 rounding (the leaf values are float32 and XGBoost sums in float32). XGBoost
    2.1 holds one base score for all classes, so the file's ``base_score`` is the one
    of margin 0 (0.5 for binary:logistic, else 0) and each output's raw base score is
    added to the leaves of its first-round tree: the rounds are cbudget's (an
    ``iteration_range`` that skips the first round leaves the base score out in
    XGBoost). The rounds written are those ``predict`` uses by default: after early
    stopping, rounds 0 to ``best_iteration``, which ``xgboost.Booster.predict`` then
    uses, as do XGBoost's estimators (the file's ``best_iteration`` is its last round);
    slice the model (``booster[:n]``) or set its ``best_iteration`` to None to write
    other rounds. Feature names are written unless they are the default ``f0, f1, ...``
    (XGBoost then needs them on its DMatrix). Categorical splits become XGBoost
    categorical splits over the codes (feature type ``"c"``), NaN for missing; a
    negative value routes as in cbudget only where the split's missing values go right.
    The levels of the features that have ASCII string or integer levels are written in
    XGBoost 3.1+'s ``cats`` section, with which XGBoost 3.1+ re-codes a DataFrame's
    category columns by level (in any order, or a subset; it refuses a level the model
    lacks, which cbudget sends right). XGBoost 2.1 and 3.0 ignore the section and read
    a DataFrame's category codes by position, as do later ones for the features whose
    levels are not written (other levels: XGBoost 3.2 misreads strings beyond ASCII
    and takes no float categories): give those the codes,
    ``booster.prepare_input(df)``. Treelite refuses a file with the section: write it
    with ``levels=False``. Not carried: the cost model and per-node
    cost metadata, the training parameters and, for ranking, the objective's settings.

    Raises
    ------
    ValueError
        For a model that is not a Booster, or of another algorithm or objective, or with a
        threshold beyond float32's range.
    """
    write_file_atomically(path, xgboost_file_content(booster, path, levels))


register_exporter("xgboost", save_xgboost, (Booster,),
                  "boosters of gbdt, cegb, greedy_miser and imported ones", suffixes=(".ubj",))
