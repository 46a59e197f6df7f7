"""What every importer shares: trees in another library's numbering turned into
cbudget's ``NODE_DTYPE`` arrays, the thresholds of libraries that compare in float32
turned into cbudget's float64 ``x <= threshold``, and the imported Booster or Forest
with its cost model (docs/architecture.md, "Interoperability").

A cbudget split sends ``x`` left when ``x <= threshold`` (float64) and NaN to the
``default_left`` side. Every source convention is rewritten into that one, so that
prediction, the cost model and on-demand prediction need nothing new:

* XGBoost sends ``x`` left when ``float32(x) < c``; scikit-learn when ``float32(x) <= t``
  (t a float64 midpoint). Rounding to float32 is monotone, so each is ``x <= T`` for the
  largest float64 ``T`` on the left side (:func:`float32_below_thresholds`,
  :func:`float32_at_most_thresholds`); float32 and float64 inputs then route alike.
  The exporter's inverse, :func:`cbudget.interop.to_xgboost.float32_split_conditions`,
  lives with the exporter (``cbudget.booster`` imports it; this module imports
  ``cbudget.booster``).
* LightGBM compares float64 values with ``<=`` already; its missing-value types are
  rewritten by its importer.

A categorical split (``categorical`` set) sends a category code left when it is in the
node's bitset, any other code right, NaN and negative values to ``default_left``
(docs/architecture.md, "Categorical features"). An importer gives :func:`build_tree`
such a node with ``threshold`` the index of its bitset in the tree's list (LightGBM's
and cbudget's file layout), and :func:`imported_booster` the lists
(:func:`bitset_of_words`, :func:`bitset_of_codes` make them).
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from .._core._types import NODE_DTYPE
from ..booster import Booster, check_codes_within_levels
from ..categories import NO_CATEGORIES, Categories
from ..category_bins import MAX_CATEGORY_CODE, codes_to_bitset
from ..costs import CostGroups, CostModel, FeatureCosts, GroupCosts
from ..forest import Forest
from ..model_io import IMPORTED

__all__ = ["build_tree", "preorder", "finite_thresholds", "float32_at_most_bounds",
           "float32_below_thresholds", "float32_at_most_thresholds", "cost_model_for",
           "imported_booster", "imported_forest", "source_feature_names", "describe_source",
           "bitset_of_words", "bitset_of_codes", "COST_ARGUMENTS", "MAX_NODES_PER_TREE"]

# a tree of more nodes than this is refused (a hostile file; LightGBM's zero-as-missing
# rewrite can grow a tree, see from_lightgbm)
MAX_NODES_PER_TREE = 1 << 22

# 2**128: where float32's next value after its largest finite one would be
_FLOAT32_END = float(2.0 ** 128)

COST_ARGUMENTS = """feature_costs : array-like of shape (n_features,) or dict {name: cost}, optional
        Per-input acquisition cost of each feature, as for :class:`cbudget.Dataset`
        (None: every feature is free).
    cost_groups, group_costs, coupled_costs, split_cost, tree_cost, default_cost :
        As for :class:`cbudget.Dataset`.
    feature_names : list of str, optional
        The features' names (default: the names the source model stores, else ``f0,
        f1, ...``). Costs given as a dict use them."""


def float32_at_most_bounds(q: ArrayLike) -> np.ndarray:
    """Per float32 value ``q``: the largest float64 ``x`` with ``float32(x) <= q``
    (rounding to nearest, ties to even), so ``float32(x) <= q`` iff ``x <= bound``.

    Between ``q`` and the next float32 ``n`` lies their midpoint ``m`` (exact in
    float64); ``m`` rounds to whichever of ``q`` and ``n`` has an even significand: to
    ``q`` when ``q``'s is even (the bound is ``m``), else to ``n`` (the bound is the
    float64 just below ``m``)."""
    q = np.asarray(q, dtype=np.float32)
    with np.errstate(over="ignore", invalid="ignore"):
        following = np.nextafter(q, np.float32(np.inf)).astype(np.float64)
        following[np.isinf(following) & (q > 0)] = _FLOAT32_END
        midpoint = (q.astype(np.float64) + following) / 2
    q_is_even = (q.view(np.uint32) & 1) == 0
    bound = np.where(q_is_even, midpoint, np.nextafter(midpoint, -np.inf))
    # -inf: the values that round down to it (ties go to the even -inf), +inf: everything
    bound = np.where(np.isneginf(q), -(_FLOAT32_END - 2.0 ** 103), bound)
    return np.where(np.isposinf(q), np.inf, bound)


def float32_below_thresholds(c: ArrayLike) -> np.ndarray:
    """cbudget thresholds of XGBoost split conditions ``c``: ``float32(x) < c`` iff
    ``x <= T``. (``c = -inf``, which no trained model has, sends nothing left in XGBoost
    but ``-inf`` in cbudget.)"""
    c = np.asarray(c, dtype=np.float32)
    with np.errstate(over="ignore"):
        return float32_at_most_bounds(np.nextafter(c, np.float32(-np.inf)))


def float32_at_most_thresholds(t: ArrayLike) -> np.ndarray:
    """cbudget thresholds of scikit-learn tree thresholds ``t`` (float64, compared with
    float32 inputs): ``float32(x) <= t`` iff ``x <= T``."""
    t = np.asarray(t, dtype=np.float64)
    with np.errstate(over="ignore"):      # nearest float32; step down if it lies above t
        q = t.astype(np.float32)
        q = np.where(q.astype(np.float64) > t, np.nextafter(q, np.float32(-np.inf)), q)
    return float32_at_most_bounds(q)


def build_tree(left: ArrayLike, right: ArrayLike, feature: ArrayLike, threshold: ArrayLike,
               default_left: ArrayLike, value: ArrayLike, *, n_features: int, where: str,
               root: int = 0, gain: ArrayLike | None = None,
               n_samples: ArrayLike | None = None,
               sum_hessian: ArrayLike | None = None,
               categorical: ArrayLike | None = None) -> np.ndarray:
    """A cbudget tree from a source tree's node arrays.

    The source's nodes are numbered ``0..n-1`` in any order (``root`` the root; a leaf
    has ``left == right == -1``); they are renumbered depth first so that children come
    after their parents, as cbudget's trees need. ``threshold`` is cbudget's
    (``x <= threshold`` goes left), ``value`` the leaf values; a node flagged in
    ``categorical`` is a categorical split whose ``threshold`` is the index of its bitset
    in the tree's list (see :func:`imported_booster`). ValueError (naming
    ``where``) for a structure that is not one tree, split features out of
    ``[0, n_features)`` or values that are not finite.
    """
    left = np.asarray(left, dtype=np.int64)
    right = np.asarray(right, dtype=np.int64)
    n = left.shape[0]
    if n == 0 or n > MAX_NODES_PER_TREE:
        raise ValueError(f"{where}: a tree has {n} nodes (1 to {MAX_NODES_PER_TREE})")
    columns = {"feature": feature, "threshold": threshold, "default_left": default_left,
               "value": value, "gain": gain, "n_samples": n_samples,
               "sum_hessian": sum_hessian, "categorical": categorical}
    arrays = {name: np.asarray(v) for name, v in columns.items() if v is not None}
    arrays["right"] = right
    if any(a.shape != (n,) for a in arrays.values()):
        raise ValueError(f"{where}: node arrays of different lengths")
    if not 0 <= root < n:
        raise ValueError(f"{where}: root {root} out of range")
    is_leaf = left == -1
    if np.any(is_leaf != (right == -1)):
        raise ValueError(f"{where}: a node has exactly one child")
    internal = ~is_leaf
    if np.any(internal & ((left < 0) | (left >= n) | (right < 0) | (right >= n))):
        raise ValueError(f"{where}: child index out of range")
    order, depth = preorder(left, right, root=root, where=where)
    new_id = np.empty(n, dtype=np.int64)
    new_id[order] = np.arange(n)
    tree = np.zeros(n, dtype=NODE_DTYPE)
    tree["left"] = np.where(is_leaf, -1, new_id[np.where(is_leaf, 0, left)])[order]
    tree["right"] = np.where(is_leaf, -1, new_id[np.where(is_leaf, 0, right)])[order]
    tree["depth"] = depth[order]
    split_feature = np.asarray(feature, dtype=np.int64)
    if np.any(internal & ((split_feature < 0) | (split_feature >= n_features))):
        raise ValueError(f"{where}: split feature out of range [0, {n_features})")
    tree["feature"] = np.where(is_leaf, 0, split_feature)[order]
    tree["threshold"] = np.where(is_leaf, 0.0, np.asarray(threshold, dtype=np.float64))[order]
    tree["default_left"] = np.where(is_leaf, 0, np.asarray(default_left) != 0)[order]
    tree["value"] = np.where(is_leaf, np.asarray(value, dtype=np.float64), 0.0)[order]
    if gain is not None:
        tree["gain"] = np.where(is_leaf, 0.0, np.asarray(gain, dtype=np.float64))[order]
    if n_samples is not None:
        counts = np.asarray(n_samples, dtype=np.float64)
        tree["n_samples"] = np.clip(np.nan_to_num(counts), 0, np.iinfo(np.int32).max)[order]
    if categorical is not None:
        tree["categorical"] = np.where(is_leaf, 0, np.asarray(categorical) != 0)[order]
    if sum_hessian is not None:
        tree["sum_hessian"] = np.clip(np.nan_to_num(
            np.asarray(sum_hessian, dtype=np.float64)), 0, None)[order]
    for field in ("threshold", "value", "gain"):
        if not np.all(np.isfinite(tree[field])):
            raise ValueError(f"{where}: {field} holds a value that is not finite")
    return tree


def check_exportable(booster: Any, library: str, objectives: Iterable[str],
                     refused_in_names: str = "", empty_names: bool = True) -> None:
    """ValueError for a model ``library``'s format cannot hold (what every exporter
    checks first): one that is not a booster, of an objective not in ``objectives``, or
    with feature names ``library`` refuses: holding a character of ``refused_in_names``,
    or empty (unless ``empty_names``)."""
    a_model = f"{'an' if library[0] in 'AEIOX' else 'a'} {library} model"
    if getattr(booster, "model_type", None) != "booster":
        raise ValueError(f"only a cbudget Booster can be saved as {a_model}, not a "
                         f"{type(booster).__name__}")
    objectives = list(objectives)
    if booster.objective not in objectives:
        raise ValueError(f"objective {booster.objective!r} cannot be saved as {a_model} "
                         f"(supported: {', '.join(objectives)})")
    refused = [name for name in booster.feature_names
               if set(name) & set(refused_in_names) or not (name or empty_names)]
    if refused:
        shown = " ".join(dict.fromkeys(
            repr(c) if c.isprintable() and not c.isspace() else "whitespace"
            for c in refused_in_names))
        empty = "" if empty_names else " or empty"
        raise ValueError(f"{library} refuses feature names containing {shown}{empty}: "
                         f"{refused[:5]}; rename them (model.feature_names) before saving "
                         "in its format")


def leaf_tree(value: float) -> np.ndarray:
    """A one-leaf tree of ``value`` in cbudget's node layout (what exporters put where a
    round lacks a tree of some output)."""
    tree = np.zeros(1, dtype=NODE_DTYPE)
    tree["left"] = tree["right"] = -1
    tree["value"] = value
    return tree


def preorder(left: ArrayLike, right: ArrayLike, *, root: int = 0,
             where: str = "tree") -> tuple[np.ndarray, np.ndarray]:
    """The depth-first preorder of a source tree's nodes (``order[i]``: the source id of
    :func:`build_tree`'s node ``i``) and each source node's depth. ValueError when the
    nodes do not form one tree under ``root`` (a node reached twice, or unreachable)."""
    left_list = np.asarray(left, dtype=np.int64).tolist()
    right_list = np.asarray(right, dtype=np.int64).tolist()
    n = len(left_list)
    order = np.empty(n, dtype=np.int64)
    depth = np.zeros(n, dtype=np.int64)
    seen = np.zeros(n, dtype=bool)
    stack = [root]
    count = 0
    while stack:
        node = stack.pop()
        if seen[node]:
            raise ValueError(f"{where}: the nodes do not form one tree (node {node} is "
                             "reached twice)")
        seen[node] = True
        order[count] = node
        count += 1
        if left_list[node] != -1:
            depth[right_list[node]] = depth[left_list[node]] = depth[node] + 1
            stack.append(right_list[node])
            stack.append(left_list[node])
    if count != n:
        raise ValueError(f"{where}: {n - count} nodes are not reachable from the root")
    return order, depth


def finite_thresholds(threshold: ArrayLike) -> np.ndarray:
    """Thresholds with ``+inf`` as the largest float64. LightGBM and scikit-learn split
    NaN from every number with a threshold of ``+inf``; cbudget's thresholds are finite
    (JSON holds no infinity), so only an input of ``+inf`` itself goes the other way
    (right) there."""
    return np.minimum(np.asarray(threshold, dtype=np.float64), np.finfo(np.float64).max)


def source_feature_names(stored: Sequence[str] | None, given: Sequence[str] | None,
                         n_features: int) -> list[str]:
    """The imported model's feature names: ``given``, else the source's ``stored``
    names, else ``f0, f1, ...``; checked for count and uniqueness."""
    names = given if given is not None else stored
    names = [f"f{i}" for i in range(n_features)] if names is None else [str(n) for n in names]
    if len(names) != n_features:
        raise ValueError(f"feature_names has {len(names)} names; the model has "
                         f"{n_features} features")
    if len(set(names)) != len(names):
        raise ValueError("feature_names must be unique")
    return names


def cost_model_for(feature_names: Sequence[str], *,
                   feature_costs: FeatureCosts | None = None,
                   cost_groups: CostGroups | None = None,
                   group_costs: GroupCosts | None = None,
                   coupled_costs: FeatureCosts | None = None, split_cost: float = 0.0,
                   tree_cost: float = 0.0, default_cost: float | None = None) -> CostModel:
    """The cost model of the Dataset-style cost arguments (:meth:`CostModel.from_user`)."""
    return CostModel.from_user(feature_names, feature_costs=feature_costs,
                               cost_groups=cost_groups, group_costs=group_costs,
                               coupled_costs=coupled_costs, split_cost=split_cost,
                               tree_cost=tree_cost, default_cost=default_cost)


def bitset_of_words(words: ArrayLike, where: str) -> np.ndarray:
    """A cbudget bitset (a length word, then the words) of the 32-bit ``words`` whose
    bit ``c`` (word ``c // 32``, bit ``c % 32``) is set for each category code ``c``
    going left, as LightGBM stores them. Trailing zero words are dropped (codes beyond
    the bitset go right anyway); ValueError naming ``where`` for a word outside uint32
    or a code above cbudget's :data:`~cbudget.category_bins.MAX_CATEGORY_CODE`."""
    values = np.asarray(words, dtype=np.int64).reshape(-1)
    if np.any((values < 0) | (values > np.iinfo(np.uint32).max)):
        raise ValueError(f"{where}: a categorical split's bitset holds a word outside uint32")
    used = np.flatnonzero(values)
    n_words = int(used[-1]) + 1 if used.size else 0
    if n_words:
        largest = 32 * (n_words - 1) + int(values[n_words - 1]).bit_length() - 1
        if largest > MAX_CATEGORY_CODE:
            raise ValueError(f"{where}: a categorical split sends category {largest} "
                             "left; cbudget's categorical features hold codes 0 .. "
                             f"{MAX_CATEGORY_CODE}")
    return np.concatenate([[n_words], values[:n_words]]).astype(np.uint32)


def bitset_of_codes(codes: ArrayLike, where: str) -> np.ndarray:
    """A cbudget bitset of the category ``codes`` going left (integers >= 0; see
    :func:`bitset_of_words`)."""
    codes = np.asarray(codes, dtype=np.float64).reshape(-1)
    if np.any((codes < 0) | (codes != np.floor(codes))) or np.any(codes > MAX_CATEGORY_CODE):
        bad = codes[(codes < 0) | (codes != np.floor(codes)) | (codes > MAX_CATEGORY_CODE)][0]
        raise ValueError(f"{where}: a categorical split lists category {float(bad):g}; cbudget's "
                         f"categorical features hold integer codes 0 .. {MAX_CATEGORY_CODE}")
    return codes_to_bitset(codes.astype(np.int64))


def imported_booster(rounds: Sequence[Sequence[np.ndarray]], *, objective: str,
                     num_class: int, base_score: ArrayLike, feature_names: Sequence[str],
                     cost_model: CostModel, imported_from: dict[str, str],
                     categories: Categories = NO_CATEGORIES,
                     bitsets: Sequence[Sequence[Sequence[np.ndarray]]] | None = None
                     ) -> Booster:
    """A Booster of imported trees: ``rounds[r][k]`` is round ``r``'s tree of output
    ``k`` (``build_tree``'s), ``base_score`` the raw score before the trees.

    ``categories``: the model's categorical features and their levels (what prediction
    on a DataFrame maps by); ``bitsets[r][k]``: the bitsets of that tree, a categorical
    node's ``threshold`` the index of its own in the list."""
    model = Booster(objective=objective, num_class=num_class, base_score=base_score,
                    feature_names=feature_names, cost_model=cost_model,
                    params={"algorithm": IMPORTED})
    model.categories = categories
    base = model.base_score
    if base.shape != (model.n_outputs,) or not np.all(np.isfinite(base)):
        raise ValueError(f"the base score must hold {model.n_outputs} finite numbers")
    for r, trees in enumerate(rounds):
        if len(trees) != model.n_outputs:
            raise ValueError(f"a round has {len(trees)} trees for {model.n_outputs} outputs")
        listed = [[] for _ in trees] if bitsets is None else bitsets[r]
        model.add_round(trees, bitsets=[
            [listed[k][int(i)] for i in tree["threshold"][tree["categorical"] != 0]]
            for k, tree in enumerate(trees)])
    try:
        check_codes_within_levels(model)
    except ValueError as exc:
        raise ValueError(f"the levels do not fit the splits: {exc} (levels of another "
                         "feature? a LightGBM model's: see category_columns=)") from None
    model.imported_from = dict(imported_from)
    return model


def imported_forest(trees: Sequence[np.ndarray], distributions: Sequence[np.ndarray], *,
                    num_class: int, class_prior: ArrayLike, feature_names: Sequence[str],
                    cost_model: CostModel, imported_from: dict[str, str]) -> Forest:
    """A Forest that averages its trees' class distributions (as scikit-learn's forests
    predict): ``distributions[t]`` holds, per node of tree ``t``, its class distribution
    (n_nodes x num_class, rows summing to 1 at the leaves)."""
    objective = "binary:logistic" if num_class == 2 else "multi:softprob"
    model = Forest(objective=objective, num_class=num_class, class_prior=class_prior,
                   feature_names=feature_names, cost_model=cost_model,
                   params={"algorithm": IMPORTED})
    for tree, distribution in zip(trees, distributions):
        model.add_tree(tree, distribution)
    model.imported_from = dict(imported_from)
    return model


def describe_source(library: str, version: str, estimator: str, **more: Any) -> dict[str, str]:
    """The ``imported_from`` section: the library, its version and the estimator."""
    return {"library": library, "version": str(version), "estimator": estimator,
            **{k: str(v) for k, v in more.items()}}
