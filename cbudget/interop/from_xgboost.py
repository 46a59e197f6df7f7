"""XGBoost models as cbudget Boosters: read the model's JSON (or UBJSON) document and
rewrite its trees in cbudget's conventions (docs/architecture.md, "Interoperability").

XGBoost sends ``x`` left when ``float32(x) < split_condition`` and a missing value to
``default_left``; the importer turns each condition into the float64 threshold ``T``
with ``float32(x) < c`` iff ``x <= T`` (:func:`float32_below_thresholds`), so float32
and float64 inputs route as in XGBoost. Leaf values are the ``split_conditions`` of the
leaves (XGBoost keeps a node's split condition and leaf value in one field). XGBoost
is imported only when a live ``xgboost`` object is given: files and bytes are read
without it.

Categorical splits (``split_type`` 1, ``enable_categorical``): XGBoost sends the
categories a node lists (``categories[categories_segments[j]:][:categories_sizes[j]]``
for node ``categories_nodes[j]``) to its right child, every other category (unseen ones
too) to its left child, a missing value to ``default_left``. cbudget sends its bitset's
categories left, so the node becomes a categorical node with the listed categories, the
children swapped and ``default_left`` negated. XGBoost's negative values (invalid
categories) go to its left child; cbudget reads them as missing (the default side). The
features of type ``"c"`` become the model's ``categories``, with the levels XGBoost 3.1+
stores in the model (``cats``: the training DataFrame's categories, code ``c`` the
level at position ``c``), so a DataFrame is mapped by level as XGBoost re-codes it.
"""
from __future__ import annotations

import json
import os
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..booster import Booster
from ..categories import MAX_LEVELS, NO_CATEGORIES, Categories
from ..costs import CostGroups, FeatureCosts, GroupCosts
from ..objectives import LOG_LINK_OBJECTIVES
from .trees import (
    COST_ARGUMENTS,
    bitset_of_codes,
    build_tree,
    cost_model_for,
    describe_source,
    float32_below_thresholds,
    imported_booster,
    source_feature_names,
)
from .ubjson import decode

__all__ = ["from_xgboost", "read_xgboost_document", "XGBOOST_OBJECTIVES"]

# XGBoost objective -> cbudget objective with the same output transform. XGBoost's
# base_score is in output space: logit of it for the logistic objectives, itself for the
# rest (softmax included; XGBoost 3 stores one per class).
XGBOOST_OBJECTIVES = {
    "reg:squarederror": "reg:squarederror",
    "reg:squaredlogerror": "reg:squarederror",
    "reg:absoluteerror": "reg:absoluteerror",
    "reg:pseudohubererror": "reg:pseudohubererror",
    "reg:quantileerror": "reg:quantileerror",
    "count:poisson": "count:poisson",        # predictions exp(margin), as cbudget's
    "reg:tweedie": "reg:tweedie",
    "reg:gamma": "reg:gamma",
    "binary:logitraw": "reg:squarederror",   # its predictions are the raw margins
    "binary:logistic": "binary:logistic",
    "reg:logistic": "binary:logistic",
    "multi:softprob": "multi:softprob",
    "multi:softmax": "multi:softprob",       # cbudget predicts the probabilities
    "rank:pairwise": "rank:pairwise",
    "rank:ndcg": "rank:ndcg",
    "rank:map": "rank:ndcg",
}
LOGIT_BASE_SCORE = ("binary:logistic", "reg:logistic")

# the feature count sizes the feature names and the cost model. Feature names (the
# file's, or the caller's) back it with values; a file without them backs it with nothing
# (num_feature 2**24 took 44 s and 2.3 GB to import, 2**20 over a minute to use)
MAX_FEATURES = 1 << 24
MAX_UNNAMED_FEATURES = 1 << 16

# XGBoost writes 2**31 - 1 as the split index of a node that pruning deleted
DELETED_NODE = 2**31 - 1


def _field(doc: Any, key: str, kind: type | tuple[type, ...], where: str) -> Any:
    """``doc[key]``, checked to be of ``kind`` (ValueError naming ``where``)."""
    if not isinstance(doc, dict) or key not in doc:
        raise ValueError(f"XGBoost model: {where}{key} is missing")
    value = doc[key]
    if not isinstance(value, kind) or isinstance(value, bool) and kind is not bool:
        raise ValueError(f"XGBoost model: {where}{key} has the wrong type")
    return value


def _integer(value: Any, where: str) -> int:
    """An integer that XGBoost writes as a string ("3") or a number."""
    try:
        if isinstance(value, (str, int)) and not isinstance(value, bool):
            return int(value)
    except ValueError:
        pass
    raise ValueError(f"XGBoost model: {where} is not an integer")


def _numbers(doc: dict, key: str, n: int, where: str) -> np.ndarray:
    """A node array of ``n`` numbers (a JSON list or a UBJSON typed array)."""
    values = _field(doc, key, (list, np.ndarray), where)
    if len(values) != n:
        raise ValueError(f"XGBoost model: {where}{key} has {len(values)} values, "
                         f"expected {n}")
    if isinstance(values, list) and not all(
            isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
        raise ValueError(f"XGBoost model: {where}{key} must hold numbers")
    array = np.asarray(values)
    return array if array.dtype.kind in "iuf" else array.astype(np.float64)


def read_xgboost_document(model: Any) -> tuple[dict, str]:
    """The model's JSON document and the estimator's name, from an ``xgboost.Booster``,
    a fitted XGBoost scikit-learn estimator, a path or the bytes of a JSON or UBJSON
    model (told apart by content)."""
    estimator = "Booster"
    if isinstance(model, (str, os.PathLike)):
        with open(model, "rb") as f:
            raw = f.read()
    elif isinstance(model, (bytes, bytearray, memoryview)):
        raw = bytes(model)
    elif hasattr(model, "get_booster") or hasattr(model, "save_raw"):
        estimator = type(model).__name__
        booster = model.get_booster() if hasattr(model, "get_booster") else model
        raw = bytes(booster.save_raw("json"))
    else:
        raise TypeError("from_xgboost needs an xgboost.Booster, a fitted XGBoost "
                        "estimator, a model file path or its bytes, not "
                        f"{type(model).__name__}")
    stripped = raw.lstrip()
    after_brace = stripped[1:].lstrip()[:1]
    try:
        if stripped[:1] == b"{" and after_brace in (b'"', b"}"):
            doc = json.loads(raw.decode("utf-8"))
        else:
            doc = decode(raw)
    except RecursionError:
        raise ValueError("XGBoost model: nested too deeply") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ValueError(f"XGBoost model: not valid JSON ({e})") from None
    if not isinstance(doc, dict):
        raise ValueError("XGBoost model: the document is not an object")
    return doc, estimator


def _string_list(learner: dict, key: str) -> list[str]:
    """``learner[key]``: a list of strings, empty when missing or null."""
    values = learner.get(key)
    if values is None:
        return []
    if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
        raise ValueError(f"XGBoost model: learner.{key} must be a list of strings")
    return values


def _version(doc: dict) -> str:
    version = _field(doc, "version", (list, np.ndarray), "")
    parts = [v for v in np.asarray(version).tolist() if isinstance(v, int)]
    if len(parts) != len(version) or not parts:
        raise ValueError("XGBoost model: version must be a list of integers")
    return ".".join(str(p) for p in parts)


def _base_score(learner_param: dict, objective: str, n_outputs: int) -> np.ndarray:
    """cbudget's raw base score per output from XGBoost's ``base_score``: a number in
    output space written as a string, ``"5E-1"`` (XGBoost 2) or ``"[5E-1]"`` / one per
    class ``"[a,b,c]"`` (XGBoost 3). XGBoost turns it into a margin in float32; so does
    this."""
    text = _field(learner_param, "base_score", str, "learner.learner_model_param.")
    try:
        values = np.array([float(v) for v in text.strip().strip("[]").split(",")],
                          dtype=np.float32)
    except ValueError:
        raise ValueError(f"XGBoost model: base_score {text[:40]!r} is not a number "
                         "or a list of numbers") from None
    if values.shape[0] not in (1, n_outputs) or not np.all(np.isfinite(values)):
        raise ValueError(f"XGBoost model: base_score must hold 1 or {n_outputs} finite "
                         "numbers")
    if objective in LOGIT_BASE_SCORE:
        if np.any((values <= 0) | (values >= 1)):
            raise ValueError("XGBoost model: a logistic model's base_score must lie in (0, 1)")
        one = np.float32(1)
        values = -np.log(one / values - one)
    elif XGBOOST_OBJECTIVES[objective] in LOG_LINK_OBJECTIVES:
        if np.any(values <= 0):
            raise ValueError(f"XGBoost model: a {objective} model's base_score (a mean) must "
                             "be > 0")
        values = np.log(values)
    return np.broadcast_to(values.astype(np.float64), (n_outputs,)).copy()


def _objective(learner: dict) -> str:
    section = _field(learner, "objective", dict, "learner.")
    name = _field(section, "name", str, "learner.objective.")
    if name not in XGBOOST_OBJECTIVES:
        raise ValueError(
            f"XGBoost objective {name!r} is not supported: its predictions transform the "
            "margin in a way no cbudget objective does (supported: "
            f"{', '.join(sorted(XGBOOST_OBJECTIVES))})")
    return name


def _tree(doc: Any, index: int, n_features: int,
          leaf_scale: float) -> tuple[np.ndarray, list[np.ndarray]]:
    """Tree ``index`` in cbudget's form and the bitsets of its categorical splits (a
    categorical node's threshold indexes them); nodes that XGBoost's pruning deleted
    (kept in its arrays, unreachable) are left out."""
    where = f"trees[{index}]."
    if not isinstance(doc, dict):
        raise ValueError(f"XGBoost model: {where[:-1]} is not an object")
    tree_param = _field(doc, "tree_param", dict, where)
    if _integer(tree_param.get("size_leaf_vector", "1"), f"{where}size_leaf_vector") > 1:
        raise ValueError("XGBoost models with vector leaves (multi_strategy="
                         "'multi_output_tree') are not supported: cbudget's trees hold one "
                         "value per leaf")
    n = len(_field(doc, "left_children", (list, np.ndarray), where))
    left = _numbers(doc, "left_children", n, where).astype(np.int64)
    right = _numbers(doc, "right_children", n, where).astype(np.int64)
    feature = _numbers(doc, "split_indices", n, where).astype(np.int64)
    condition = _numbers(doc, "split_conditions", n, where).astype(np.float32)
    default_left = _numbers(doc, "default_left", n, where)
    gain = _numbers(doc, "loss_changes", n, where)
    sum_hessian = _numbers(doc, "sum_hessian", n, where)
    threshold = float32_below_thresholds(condition)
    split_type = _numbers(doc, "split_type", n, where) if "split_type" in doc else np.zeros(n)
    if np.any((split_type != 0) & (split_type != 1)):
        raise ValueError(f"XGBoost model: {where}split_type must hold 0 (numeric) or 1 "
                         "(categorical)")
    categorical = (split_type == 1) & (left != -1)
    bitsets = _bitsets(doc, categorical, threshold, where)
    # XGBoost sends the listed categories right, cbudget its bitset's left
    left, right = np.where(categorical, right, left), np.where(categorical, left, right)
    default_left = np.where(categorical, default_left == 0, default_left != 0)
    is_leaf = left == -1
    if np.any((left < -1) | (left >= n) | (right < -1) | (right >= n)):
        raise ValueError(f"XGBoost model: {where} child index out of range")
    kept = ~(is_leaf & (feature == DELETED_NODE))
    new_id = np.cumsum(kept) - 1
    if np.any(~is_leaf & ~(kept[np.maximum(left, 0)] & kept[np.maximum(right, 0)])):
        raise ValueError(f"XGBoost model: {where} a split leads to a deleted node")
    remap = np.where(is_leaf, -1, new_id[np.maximum(left, 0)])
    remap_right = np.where(is_leaf, -1, new_id[np.maximum(right, 0)])
    with np.errstate(over="ignore"):   # a hostile scale: build_tree refuses infinities
        value = (condition * np.float32(leaf_scale)).astype(np.float64)
    tree = build_tree(remap[kept], remap_right[kept], feature[kept], threshold[kept],
                      default_left[kept], value[kept], n_features=n_features,
                      where=f"XGBoost model: {where}", gain=gain[kept],
                      sum_hessian=sum_hessian[kept], categorical=categorical[kept])
    return tree, bitsets


def _bitsets(doc: dict, categorical: np.ndarray, threshold: np.ndarray,
             where: str) -> list[np.ndarray]:
    """The bitsets of the categories each categorical node lists (``categories``,
    ``categories_nodes``, ``categories_segments``, ``categories_sizes``); each such
    node's ``threshold`` becomes its bitset's index."""
    if not categorical.any():
        return []
    count = len(_field(doc, "categories_nodes", (list, np.ndarray), where))
    nodes, segments, sizes = (_numbers(doc, key, count, where).astype(np.int64) for key in (
        "categories_nodes", "categories_segments", "categories_sizes"))
    listed = _numbers(doc, "categories", len(_field(doc, "categories", (list, np.ndarray),
                                                    where)), where)
    n = categorical.shape[0]
    if (np.any((nodes < 0) | (nodes >= n)) or not np.array_equal(
            np.sort(nodes), np.flatnonzero(categorical))):
        raise ValueError(f"XGBoost model: {where}categories_nodes must list each "
                         "categorical split once")
    if np.any((segments < 0) | (sizes < 0) | (segments + sizes > listed.shape[0])):
        raise ValueError(f"XGBoost model: {where}categories_segments and categories_sizes "
                         "must lie within categories")
    bitsets = []
    for j, (node, start, size) in enumerate(zip(nodes.tolist(), segments.tolist(),
                                                sizes.tolist())):
        bitsets.append(bitset_of_codes(listed[start:start + size],
                                       f"XGBoost model: {where[:-1]}"))
        threshold[node] = j
    return bitsets


def _categories(learner: dict, model_doc: dict, n_features: int) -> Categories:
    """The features of type ``"c"`` and their levels: those of the ``cats`` section
    (XGBoost 3.1+, a model trained on a DataFrame) where it has them, else None
    (integer codes)."""
    types = _string_list(learner, "feature_types")
    features = [m for m, kind in enumerate(types) if kind == "c"]
    if not features:
        return NO_CATEGORIES
    if len(types) != n_features:
        raise ValueError(f"XGBoost model: feature_types has {len(types)} entries for "
                         f"{n_features} features")
    encodings = model_doc.get("cats", {}).get("enc") if isinstance(
        model_doc.get("cats"), dict) else None
    if not isinstance(encodings, list) or len(encodings) != n_features:
        return Categories(features)
    return Categories(features, [_levels(encodings[m], m) for m in features])


def _levels(encoding: Any, feature: int) -> list[Any] | None:
    """One feature's levels from its ``cats`` entry: numbers (``values`` with a
    ``type``), or strings (UTF-8 bytes in ``values`` cut at ``offsets``); None when it
    lists none."""
    where = f"cats.enc[{feature}]."
    if not isinstance(encoding, dict):
        raise ValueError(f"XGBoost model: {where[:-1]} is not an object")
    values = np.asarray(_field(encoding, "values", (list, np.ndarray), where))
    if values.size and values.dtype.kind not in "iuf":
        raise ValueError(f"XGBoost model: {where}values must hold numbers")
    if "type" in encoding:
        levels = values.tolist()
        if not np.all(np.isfinite(values)):
            raise ValueError(f"XGBoost model: {where}values must be finite")
    else:
        offsets = np.asarray(_field(encoding, "offsets", (list, np.ndarray), where))
        if not offsets.size:
            return None
        if (offsets.dtype.kind not in "iu" or offsets[0] != 0 or offsets[-1] != values.size
                or np.any(np.diff(offsets) < 0) or np.any((values < -128) | (values > 255))):
            raise ValueError(f"XGBoost model: {where}offsets and values are not strings")
        # XGBoost writes the bytes as int8 (non-ASCII ones negative)
        raw = bytes((values.astype(np.int64) % 256).astype(np.uint8))
        try:
            levels = [raw[a:b].decode("utf-8") for a, b in zip(offsets[:-1], offsets[1:])]
        except UnicodeDecodeError:
            raise ValueError(f"XGBoost model: {where}values are not UTF-8 strings") from None
    if len(set(levels)) != len(levels) or len(levels) > MAX_LEVELS:
        raise ValueError(f"XGBoost model: {where}values repeat a level or hold more than "
                         f"{MAX_LEVELS} levels")
    return levels


def _rounds(model_doc: dict, trees: list[Any], n_outputs: int
            ) -> tuple[list[list[Any]], list[int]]:
    """cbudget's rounds (one tree, or what stands for it, per output each) of XGBoost's,
    and the number of
    cbudget rounds after each XGBoost round: a round of XGBoost with
    ``num_parallel_tree`` trees per output becomes that many cbudget rounds (the sum is
    the same)."""
    where = "learner.gradient_booster.model."
    tree_info = np.asarray(_field(model_doc, "tree_info", (list, np.ndarray), where))
    if tree_info.shape != (len(trees),) or tree_info.dtype.kind not in "iu" or np.any(
            (tree_info < 0) | (tree_info >= n_outputs)):
        raise ValueError(f"XGBoost model: tree_info must give each of the {len(trees)} "
                         f"trees an output in [0, {n_outputs})")
    if "iteration_indptr" in model_doc:
        indptr = np.asarray(_field(model_doc, "iteration_indptr", (list, np.ndarray), where))
    else:   # written before XGBoost 2: rounds of num_parallel_tree trees per output
        per_round = n_outputs * max(1, _integer(
            model_doc.get("gbtree_model_param", {}).get("num_parallel_tree", "1"),
            "num_parallel_tree"))
        indptr = np.arange(0, len(trees) + 1, per_round)
    if (indptr.ndim != 1 or indptr.dtype.kind not in "iu" or indptr.size == 0
            or indptr[0] != 0 or indptr[-1] != len(trees) or np.any(np.diff(indptr) < 0)):
        raise ValueError("XGBoost model: iteration_indptr does not match the trees")
    rounds: list[list[np.ndarray]] = []
    ends: list[int] = []
    for t0, t1 in zip(indptr[:-1].tolist(), indptr[1:].tolist()):
        # the round's trees by output, in file order within each: sorting, not a scan
        # per output, so a round costs its trees, whatever the outputs declared
        outputs = tree_info[t0:t1].astype(np.int64)
        if np.any(np.bincount(outputs, minlength=n_outputs) != (t1 - t0) // n_outputs):
            raise ValueError("XGBoost model: a round has different numbers of trees per "
                             "output")
        order = t0 + np.argsort(outputs, kind="stable")
        per_output = order.reshape(n_outputs, -1).tolist()
        rounds.extend([trees[t] for t in r] for r in zip(*per_output))
        ends.append(len(rounds))
    return rounds, ends


def _best_iteration(model: Booster, learner: dict, round_ends: list[int],
                    from_estimator: bool) -> Booster:
    """``model`` predicting as the source does by default. XGBoost's scikit-learn
    estimators predict with the rounds up to the ``best_iteration`` that early stopping
    recorded: it becomes cbudget's (in cbudget's rounds; the rounds after it are kept,
    as cbudget keeps them after its own early stopping). ``xgboost.Booster.predict``
    uses every round: a Booster or file that records one keeps every round, with a
    warning when the estimators would predict with fewer."""
    attributes = learner.get("attributes")
    if not isinstance(attributes, dict) or "best_iteration" not in attributes:
        return model
    best = _integer(attributes["best_iteration"], "learner.attributes.best_iteration")
    if best < 0:
        raise ValueError(f"XGBoost model: best_iteration {best} is negative")
    end = round_ends[best] if best < len(round_ends) else model.num_iterations()
    if not from_estimator:
        if end < model.num_iterations():
            warnings.warn(
                f"the XGBoost model records best_iteration {best} from early stopping; "
                f"every round is imported, as xgboost.Booster.predict uses them all "
                f"(its scikit-learn estimators predict with rounds 0 to {best}: pass the "
                f"fitted estimator, or slice the imported model with [:{end}])",
                UserWarning, stacklevel=3)
        return model
    try:
        score = float(attributes.get("best_score", "nan"))
    except (TypeError, ValueError):
        score = float("nan")
    if not np.isfinite(score):     # a best_iteration is saved with its score: cut instead
        return model[:end]
    model.best_iteration, model.best_score = end - 1, score
    return model


def _check_outputs(num_class: int, n_trees: int, n_base_scores: int) -> None:
    """A declared class count against what the file holds, before anything is sized by
    it (2**31 - 1 classes hung the import: a scan per class, a base score per class):
    every output has trees in a model with trees; a model without trees has a base
    score per output, or num_class 1."""
    if num_class > max(n_trees, n_base_scores, 1):
        raise ValueError(f"XGBoost model: num_class {num_class} but the file holds "
                         f"{n_trees} trees and {n_base_scores} base score(s): every class "
                         "needs its trees")


def from_xgboost(model: Any, *, feature_costs: FeatureCosts | None = None,
                 cost_groups: CostGroups | None = None, group_costs: GroupCosts | None = None,
                 coupled_costs: FeatureCosts | None = None, split_cost: float = 0.0,
                 tree_cost: float = 0.0, default_cost: float | None = None,
                 feature_names: Sequence[str] | None = None) -> Booster:
    return _from_document(*read_xgboost_document(model), feature_names=feature_names,
                          from_estimator=hasattr(model, "get_booster"),
                          costs=dict(feature_costs=feature_costs, cost_groups=cost_groups,
                                     group_costs=group_costs, coupled_costs=coupled_costs,
                                     split_cost=split_cost, tree_cost=tree_cost,
                                     default_cost=default_cost))


from_xgboost.__doc__ = f"""A cbudget Booster that predicts as an XGBoost model, with a cost model.

    Parameters
    ----------
    model : xgboost.Booster, fitted XGBoost scikit-learn estimator, path or bytes
        A live model (xgboost is then needed) or a model file saved by XGBoost 2.1 or
        later, JSON or UBJSON (told apart by content, not by the file name), or its
        bytes: files are read without xgboost installed.
    {COST_ARGUMENTS}

    Returns
    -------
    cbudget.Booster
        ``algorithm == "imported"``; ``imported_from`` names XGBoost's version, the
        estimator and the objective. Every tree is imported. A fitted scikit-learn
        estimator's early-stopping ``best_iteration`` (and ``best_score``) is carried,
        so ``predict`` uses the rounds the estimator's ``predict`` uses
        (``iteration_range=(0, 0)``: all). A Booster, file or bytes predicts with every
        round, as ``xgboost.Booster.predict`` does; a ``best_iteration`` it records is
        not applied (a UserWarning says so when it would drop rounds).

    Notes
    -----
    ``predict(X, output_margin=True)`` equals XGBoost's margins up to float32 rounding
    (XGBoost sums in float32, cbudget in float64); a split ``float32(x) < c`` becomes
    ``x <= T`` for the largest float64 ``T`` left of it, so every float32 and float64
    input routes as in XGBoost, NaN to the default side.

    Objectives: ``reg:squarederror``, ``reg:absoluteerror``, ``reg:pseudohubererror``,
    ``reg:quantileerror`` (of one quantile), ``count:poisson``, ``reg:tweedie`` and
    ``reg:gamma`` stay (the last three predict ``exp(margin)``; their ``base_score`` is
    a mean, its log the raw base score; the objectives' own parameters, e.g. the
    Tweedie power, are not carried: an imported model has no training parameters);
    ``reg:squaredlogerror`` and ``binary:logitraw`` (margins) become
    ``reg:squarederror``; ``binary:logistic`` and
    ``reg:logistic`` become ``binary:logistic``; ``multi:softprob`` and
    ``multi:softmax`` become ``multi:softprob`` (cbudget then predicts probabilities,
    not XGBoost's softmax class labels); ``rank:pairwise`` stays, ``rank:ndcg`` and
    ``rank:map`` become ``rank:ndcg`` (scores). XGBoost's ``base_score`` (output space)
    becomes cbudget's raw ``base_score`` through the objective's link (logit for the
    logistic ones). A dart model's leaves are scaled by its ``weight_drop``; a round of
    ``num_parallel_tree`` trees per output becomes as many cbudget rounds.

    Raises
    ------
    ValueError
        For a model cbudget cannot represent: other objectives (``survival:*``,
        ``binary:hinge``, ``multi:softmax`` aside: their output transforms have no
        cbudget counterpart), categorical splits listing a
        category above 65,535, vector
        leaves (``multi_strategy="multi_output_tree"``), several targets, ``gblinear``;
        and for any malformed model. Declared sizes are checked against what the file
        holds before they size anything: ``num_class`` against the trees (and base
        scores), ``num_feature`` against the feature names; without names (the file's or
        ``feature_names``) it is at most 2**16.
    """


def _from_document(doc: dict, estimator: str, *, feature_names: Sequence[str] | None,
                   costs: dict[str, Any], from_estimator: bool = False) -> Booster:
    version = _version(doc)
    learner = _field(doc, "learner", dict, "")
    xgb_objective = _objective(learner)
    objective = XGBOOST_OBJECTIVES[xgb_objective]
    param = _field(learner, "learner_model_param", dict, "learner.")
    n_features = _integer(_field(param, "num_feature", (str, int), "learner."), "num_feature")
    stored = _string_list(learner, "feature_names")
    named = feature_names is not None or bool(stored)
    if not 1 <= n_features <= (MAX_FEATURES if named else MAX_UNNAMED_FEATURES):
        raise ValueError(
            f"XGBoost model: num_feature {n_features} out of range [1, {MAX_FEATURES}]" if named
            else f"XGBoost model: num_feature {n_features} out of range [1, "
                 f"{MAX_UNNAMED_FEATURES}] for a model without feature names (give "
                 "feature_names to import a wider one)")
    if _integer(param.get("num_target", "1"), "num_target") > 1:
        raise ValueError("XGBoost models of several targets are not supported: a cbudget "
                         "Booster predicts one target")
    num_class = max(1, _integer(param.get("num_class", "0"), "num_class"))
    if (objective == "multi:softprob") != (num_class > 1):
        raise ValueError(f"XGBoost model: num_class {num_class} does not fit objective "
                         f"{xgb_objective!r}")
    booster_doc = _field(learner, "gradient_booster", dict, "learner.")
    kind = _field(booster_doc, "name", str, "learner.gradient_booster.")
    if kind == "gblinear":
        raise ValueError("XGBoost gblinear models are not supported: cbudget imports trees")
    if kind not in ("gbtree", "dart"):
        raise ValueError(f"XGBoost booster {kind!r} is not supported (gbtree or dart)")
    if kind == "dart":
        # XGBoost predicts with each dart tree's leaves times its weight_drop
        weights = np.asarray(_field(booster_doc, "weight_drop", (list, np.ndarray),
                                    "learner.gradient_booster."), dtype=np.float64)
        booster_doc = _field(booster_doc, "gbtree", dict, "learner.gradient_booster.")
    model_doc = _field(booster_doc, "model", dict, "learner.gradient_booster.")
    tree_docs = _field(model_doc, "trees", list, "learner.gradient_booster.model.")
    if kind == "dart" and weights.shape != (len(tree_docs),):
        raise ValueError("XGBoost model: weight_drop must hold one weight per tree")
    _check_outputs(num_class, len(tree_docs),
                   _field(param, "base_score", str, "learner.learner_model_param.").count(",") + 1)
    trees = [_tree(d, i, n_features, float(weights[i]) if kind == "dart" else 1.0)
             for i, d in enumerate(tree_docs)]
    n_outputs = num_class if num_class > 1 else 1
    names = source_feature_names(stored or None, feature_names, n_features)
    paired, round_ends = _rounds(model_doc, trees, n_outputs)
    rounds = [[tree for tree, _ in r] for r in paired]
    model = imported_booster(
        rounds, categories=_categories(learner, model_doc, n_features),
        bitsets=[[bitsets for _, bitsets in r] for r in paired],
        objective=objective, num_class=num_class,
        base_score=_base_score(param, xgb_objective, n_outputs), feature_names=names,
        cost_model=cost_model_for(names, **costs),
        imported_from=describe_source("xgboost", version, estimator, objective=xgb_objective,
                                      booster=kind))
    return _best_iteration(model, learner, round_ends, from_estimator)
