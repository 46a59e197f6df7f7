"""What every tree ensemble shares (Booster, Forest): trees as flat ``NODE_DTYPE`` struct
arrays grouped in iterations, the per-tree JSON columns, and the cost accounting of
docs/architecture.md (per-input cost, cost reports, cost after each iteration, used
features)."""
from __future__ import annotations

import copy
from collections.abc import Iterable, Sequence
from typing import Any, TypeVar

import numpy as np

from ._core._predict import predict_leaf
from ._core._shap import expected_values, tree_shap
from ._core._types import NODE_DTYPE, compact_nodes
from ._model import CostParts, CostTracker, Model, ModelInput, NotApplicableError
from .category_bins import MAX_CATEGORY_CODE
from .costs import CostModel, CostReport
from .dataset import Dataset
from .explain import Explanation, paid_per_feature
from .model_io import check_integer_range, invalid, require
from .on_demand import FeatureSource, ReadSteps, global_node_ids, root_features, walk_trees

__all__ = ["TreeEnsemble", "tree_to_dict", "tree_from_dict", "read_trees", "read_scores",
           "read_imported_from", "read_tree_bitsets"]
# what copy returns: the class it was called on
EnsembleT = TypeVar("EnsembleT", bound="TreeEnsemble")

IMPORTANCE_KINDS = ("split", "gain", "cost")

# JSON key -> NODE_DTYPE field, and the Python type of its values
TREE_FIELDS = {
    "left_children": ("left", int),
    "right_children": ("right", int),
    "split_features": ("feature", int),
    "thresholds": ("threshold", float),
    "split_bins": ("bin_threshold", int),
    "default_left": ("default_left", int),
    "leaf_values": ("value", float),
    "gain": ("gain", float),
    "cost_penalty": ("cost_penalty", float),
    "n_samples": ("n_samples", int),
    "sum_hessian": ("sum_hessian", float),
    "new_acquisitions": ("new_acquisitions", int),
    "path_cost": ("path_cost", float),
    "depth": ("depth", int),
}
# counts, sums of hessians and costs
NON_NEGATIVE_FIELDS = ("n_samples", "sum_hessian", "new_acquisitions", "path_cost", "depth")


def tree_to_dict(tree: np.ndarray, output: int, cat_words: np.ndarray | None = None) -> dict:
    """One tree's document: column arrays indexed by node id, XGBoost-style. A tree with
    categorical splits (their bitsets in ``cat_words``) also has ``categorical`` (a flag
    per node), ``cat_boundaries`` and ``cat_threshold``, LightGBM's layout: the ``k``-th
    categorical node (in node order) has threshold ``k`` and its bitset words are
    ``cat_threshold[cat_boundaries[k]:cat_boundaries[k + 1]]``."""
    d: dict[str, Any] = {"output": int(output), "num_nodes": int(tree.shape[0])}
    for key, (field, kind) in TREE_FIELDS.items():
        d[key] = [kind(v) for v in tree[field].tolist()]
    categorical = np.flatnonzero(tree["categorical"])
    if categorical.size:
        assert cat_words is not None
        bitsets = [node_bitset(cat_words, tree["threshold"][n])[1:] for n in categorical]
        d["categorical"] = tree["categorical"].astype(int).tolist()
        for k, n in enumerate(categorical.tolist()):
            d["thresholds"][n] = float(k)
        d["cat_boundaries"] = np.concatenate(
            ([0], np.cumsum([b.size for b in bitsets]))).astype(int).tolist()
        d["cat_threshold"] = np.concatenate(bitsets).astype(int).tolist()
    return d


def node_bitset(cat_words: np.ndarray, offset: float) -> np.ndarray:
    """The bitset (length word, then the words) of a categorical node at ``offset``."""
    start = int(offset)
    return cat_words[start:start + 1 + int(cat_words[start])]


def read_tree_bitsets(d: dict, tree: np.ndarray, where: str,
                      categorical_features: np.ndarray) -> list[np.ndarray]:
    """The bitsets (length word, then the words) of the categorical nodes of tree
    document ``d`` (see :func:`tree_to_dict`), in node order, validated; sets the tree's
    ``categorical`` flags. A file without ``categorical`` has none."""
    if "categorical" not in d:
        if "cat_boundaries" in d or "cat_threshold" in d:
            raise invalid(f"{where}cat_boundaries / cat_threshold without categorical")
        return []
    flags = require(d, "categorical", list, where)
    if len(flags) != tree.shape[0] or not all(
            isinstance(v, int) and not isinstance(v, bool) and v in (0, 1) for v in flags):
        raise invalid(f"{where}categorical must hold a 0 or 1 per node")
    tree["categorical"] = flags
    nodes = np.flatnonzero(tree["categorical"])
    if np.any(tree["left"][nodes] == -1):
        raise invalid(f"{where}categorical marks a leaf")
    if not np.all(np.isin(tree["feature"][nodes], categorical_features)):
        raise invalid(f"{where}a categorical split is on a feature not declared "
                      f"categorical (in the categories key)")
    if not np.array_equal(tree["threshold"][nodes], np.arange(nodes.size)):
        raise invalid(f"{where}thresholds of the categorical nodes must number them "
                      f"0, 1, ... in node order")
    bounds = require(d, "cat_boundaries", list, where)
    words = require(d, "cat_threshold", list, where)
    if len(bounds) != nodes.size + 1 or not all(
            isinstance(b, int) and not isinstance(b, bool) for b in bounds) \
            or bounds[0] != 0 or bounds[-1] != len(words) \
            or any(b < a for a, b in zip(bounds, bounds[1:])):
        raise invalid(f"{where}cat_boundaries must rise from 0 to the length of "
                      f"cat_threshold, one step per categorical node")
    if np.diff(bounds).max(initial=0) > (MAX_CATEGORY_CODE + 1) // 32:
        raise invalid(f"{where}a categorical bitset is longer than codes up to "
                      f"{MAX_CATEGORY_CODE} need")
    if not all(isinstance(w, int) and not isinstance(w, bool) for w in words):
        raise invalid(f"{where}cat_threshold must hold integers")
    check_integer_range(words, np.dtype(np.uint32), f"{where}cat_threshold")
    flat = np.asarray(words, dtype=np.uint32)
    return [np.concatenate(([b - a], flat[a:b])).astype(np.uint32)
            for a, b in zip(bounds, bounds[1:])]


def tree_from_dict(d: dict, index: int, n_features: int, n_outputs: int
                   ) -> tuple[np.ndarray, int]:
    """(tree, output) of tree ``index``'s document, validated: lengths before any
    allocation, integer ranges, one tree with children after their parents, split
    features in range, finite thresholds and values."""
    where = f"trees[{index}]."
    if not isinstance(d, dict):
        raise invalid(f"trees[{index}] is not an object")
    n_nodes = require(d, "num_nodes", int, where)
    if n_nodes < 1:
        raise invalid(f"{where}num_nodes must be >= 1")
    for key in TREE_FIELDS:  # lengths first: never allocate for a bogus num_nodes
        n_values = len(require(d, key, list, where))
        if n_values != n_nodes:
            raise invalid(f"{where}{key} has {n_values} entries, expected {n_nodes}")
    output = require(d, "output", int, where)
    if not 0 <= output < n_outputs:
        raise invalid(f"{where}output {output} out of range")
    tree = np.zeros(n_nodes, dtype=NODE_DTYPE)
    for key, (field, kind) in TREE_FIELDS.items():
        values = d[key]
        allowed = (int,) if kind is int else (int, float)
        if not all(isinstance(v, allowed) and not isinstance(v, bool) for v in values):
            raise invalid(f"{where}{key} must hold {'integers' if kind is int else 'numbers'}")
        if kind is int:
            check_integer_range(values, tree.dtype[field], f"{where}{key}")
        try:
            tree[field] = values
        except OverflowError:   # an integer too large for a float field
            raise invalid(f"{where}{key} value out of range") from None
    left, right, feature = tree["left"], tree["right"], tree["feature"]
    is_leaf = left == -1
    if np.any(is_leaf != (right == -1)):
        raise invalid(f"{where} a node has exactly one child")
    internal = ~is_leaf
    ids = np.arange(n_nodes)
    # children after their parent and within the tree: no cycles, no out-of-range ids
    if np.any(internal & ((left <= ids) | (right <= ids) | (left >= n_nodes)
                          | (right >= n_nodes))):
        raise invalid(f"{where} child index out of range or cyclic")
    children = np.concatenate([left[internal], right[internal]])
    if np.unique(children).size != children.size or children.size != n_nodes - 1:
        raise invalid(f"{where} nodes do not form one tree")
    if np.any(internal & ((feature < 0) | (feature >= n_features))):
        raise invalid(f"{where} split feature out of range")
    for key, (field, kind) in TREE_FIELDS.items():
        if kind is float and not np.all(np.isfinite(tree[field])):
            raise invalid(f"{where}{key} must hold finite numbers")
    for key in NON_NEGATIVE_FIELDS:
        if np.any(tree[TREE_FIELDS[key][0]] < 0):
            raise invalid(f"{where}{key} must be >= 0")
    if np.any(tree["default_left"] > 1):
        raise invalid(f"{where}default_left must hold 0 or 1")
    return tree, output


def read_trees(doc: dict, n_features: int, n_outputs: int, one_tree_each: bool,
               categorical_features: np.ndarray | None = None
               ) -> tuple[list[tuple[Any, np.ndarray, int, list[np.ndarray]]], list]:
    """The document's trees as (tree document, tree, output, bitsets) and its
    ``iteration_indptr``, validated (``one_tree_each``: one tree per iteration;
    ``categorical_features``: the features categorical splits may use, None when the
    model takes none)."""
    trees = require(doc, "trees", list)
    indptr = read_iteration_indptr(doc, len(trees), one_tree_each)
    out = []
    for i, d in enumerate(trees):
        tree, output = tree_from_dict(d, i, n_features, n_outputs)
        if categorical_features is None and isinstance(d, dict) and "categorical" in d:
            raise invalid(f"trees[{i}]: categorical splits are not supported by this "
                          f"model type yet")
        bitsets = read_tree_bitsets(d, tree, f"trees[{i}].",
                                    np.zeros(0, np.int32) if categorical_features is None
                                    else categorical_features)
        out.append((d, tree, output, bitsets))
    return out, indptr


def read_iteration_indptr(doc: dict, n_trees: int, one_tree_each: bool) -> list:
    """The document's ``iteration_indptr``, checked against its ``n_trees`` trees."""
    indptr = require(doc, "iteration_indptr", list)
    if (not indptr or indptr[0] != 0 or indptr[-1] != n_trees
            or not all(isinstance(i, int) and not isinstance(i, bool) for i in indptr)
            or any(b < a for a, b in zip(indptr, indptr[1:]))
            or (one_tree_each and indptr != list(range(n_trees + 1)))):
        raise invalid("iteration_indptr does not match the trees")
    return list(indptr)


def read_scores(doc: dict) -> list:
    """The document's ``base_score``: a list of numbers."""
    base_score = require(doc, "base_score", list)
    if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in base_score):
        raise invalid("base_score must hold numbers")
    return base_score


def read_imported_from(doc: dict) -> dict | None:
    """The document's ``imported_from`` section (where an imported model came from:
    library, version, estimator; str values), or None when it has none."""
    if "imported_from" not in doc:
        return None
    section = require(doc, "imported_from", dict)
    if not all(isinstance(v, str) for v in section.values()):
        raise invalid("imported_from must map names to strings")
    return dict(section)


def concatenate_trees(trees: list) -> np.ndarray:
    """The ``NODE_DTYPE`` trees back to back. Copied as bytes: numpy's field-by-field
    promotion of thousands of struct arrays costs several times the copy."""
    if not trees:
        return np.zeros(0, dtype=NODE_DTYPE)
    if all(t.dtype == NODE_DTYPE and t.ndim == 1 and t.flags.c_contiguous for t in trees):
        return np.concatenate([t.view(np.uint8) for t in trees]).view(NODE_DTYPE)
    return np.concatenate(trees).astype(NODE_DTYPE, copy=False)


class StagedCostTracker(CostTracker):
    """The mean cost of fixed inputs as an ensemble grows: each new iteration's trees
    are routed once, the inputs' acquired features are kept."""

    def __init__(self, model: TreeEnsemble, X: ModelInput) -> None:
        super().__init__(model, X)
        self.bitsets = model.cost_model.new_bitsets(self.X.shape[0])
        self.cost = np.zeros(self.X.shape[0])
        self.iterations_seen = 0

    def mean_cost(self, model: Model) -> float:
        assert isinstance(model, TreeEnsemble)
        n_iterations = model.num_iterations()
        if n_iterations > self.iterations_seen:
            offsets, nodes = model.packed_trees((self.iterations_seen, n_iterations))
            model.cost_model.accumulate(self.X, nodes, offsets, self.bitsets, self.cost,
                                        n_threads=model.n_threads(),
                                        cat_words=model.cat_words)
            self.iterations_seen = n_iterations
        return float(self.cost.mean()) if self.cost.size else 0.0


class TreeEnsemble(Model):
    """Base class of the tree models.

    Each tree is a flat ``NODE_DTYPE`` struct array (node 0 the root, children by node
    id, -1 for leaves). Iteration ``r`` holds trees
    ``iteration_indptr[r]:iteration_indptr[r + 1]`` (a boosting round: one tree per
    output; a forest: one tree).

    ``imported_from`` describes where the trees of a model imported from another library
    came from (``library``, ``version``, ``estimator``; :mod:`cbudget.interop`), None
    for a model cbudget trained from scratch; a file keeps it in its ``imported_from``
    section.
    """

    def __init__(self, *, feature_names: Sequence[str], cost_model: CostModel, params: dict,
                 default_algorithm: str) -> None:
        super().__init__(feature_names=feature_names, cost_model=cost_model, params=params,
                         default_algorithm=default_algorithm)
        self.imported_from: dict[str, str] | None = None
        # the bitsets of the categorical splits of every tree back to back (a node's
        # ``threshold`` is its bitset's offset)
        self._cat_chunks: list[np.ndarray] = []
        self._cat_size = 0
        self._cat_words: np.ndarray | None = None
        self.trees: list[np.ndarray] = []
        self.tree_outputs: list[int] = []
        self.iteration_indptr = [0]
        # arrays made once per range of trees: (t0, t1) -> _flat's, ("walk", t0, t1) ->
        # _walk's; subclasses add their own
        self._flat_cache: dict[tuple, Any] = {}

    # -- building -----------------------------------------------------------------------
    def _add_tree(self, tree: np.ndarray, output: int,
                  bitsets: Sequence[np.ndarray] = ()) -> None:
        """Append a tree; ``bitsets``: one per categorical node in node order (a length
        word, then the words of the codes going left), stored in :attr:`cat_words`."""
        nodes = np.flatnonzero(tree["categorical"])
        if nodes.size != len(bitsets):
            raise ValueError(f"the tree has {nodes.size} categorical splits and "
                             f"{len(bitsets)} bitsets")
        if nodes.size and not np.all(np.isin(tree["feature"][nodes],
                                             self.categorical_features)):
            raise ValueError("a categorical split is on a feature the model does not "
                             "declare categorical (its categories)")
        for node, words in zip(nodes.tolist(), bitsets):
            words = np.ascontiguousarray(words, dtype=np.uint32)
            if words.size != 1 + int(words[0]):
                raise ValueError("a bitset must hold its length word, then that many words")
            tree["threshold"][node] = self._cat_size
            self._cat_chunks.append(words)
            self._cat_size += words.size
        self._cat_words = None
        self._annotate_path_costs(tree)
        self.trees.append(tree)
        self.tree_outputs.append(int(output))
        self._flat_cache.clear()

    @property
    def categorical_features(self) -> np.ndarray:
        """Sorted int32 indices of the categorical features (of :attr:`categories`)."""
        return self.categories.features

    @property
    def cat_words(self) -> np.ndarray:
        """uint32: the bitsets of the categorical splits of every tree back to back (what
        the prediction kernels take with the packed nodes)."""
        if self._cat_words is None:
            self._cat_words = (np.concatenate(self._cat_chunks) if self._cat_chunks
                               else np.zeros(0, dtype=np.uint32))
            self._cat_chunks = [self._cat_words] if self._cat_size else []
        return self._cat_words

    def tree_bitsets(self, tree: np.ndarray) -> list[np.ndarray]:
        """The bitsets of a tree's categorical nodes, in node order (what
        :meth:`_add_tree` takes)."""
        words = self.cat_words
        return [node_bitset(words, tree["threshold"][n])
                for n in np.flatnonzero(tree["categorical"])]

    def _end_iteration(self) -> None:
        self.iteration_indptr.append(len(self.trees))

    def _annotate_path_costs(self, tree: np.ndarray) -> None:
        """``path_cost`` of each node: acquisition cost (groups included) of the distinct
        features tested on the way from the root to the node, the node's own included."""
        # indexed per split, not converted whole: a tree costs its nodes, not the
        # model's features (a million declared features took seconds per tree)
        feature_costs = self.cost_model.feature_costs
        group_costs = self.cost_model.group_costs
        feature_group = self.cost_model.feature_group
        # node -> (path cost, features on the path, groups on the path); parents come
        # before their children in id order
        paths: list[tuple[float, frozenset[int], frozenset[int]] | None] = [None] * tree.shape[0]
        paths[0] = (0.0, frozenset(), frozenset())
        path_cost = np.zeros(tree.shape[0])
        for node, (left, right, m) in enumerate(zip(tree["left"].tolist(),
                                                    tree["right"].tolist(),
                                                    tree["feature"].tolist())):
            path = paths[node]
            assert path is not None  # set by its parent
            cost, features, groups = path
            if left != -1:
                if m not in features:
                    cost += float(feature_costs[m])
                    features = features | {m}
                    g = int(feature_group[m])
                    if g >= 0 and g not in groups:
                        cost += float(group_costs[g])
                        groups = groups | {g}
                paths[left] = paths[right] = (cost, features, groups)
            path_cost[node] = cost
        tree["path_cost"] = path_cost

    # -- structure ----------------------------------------------------------------------
    def num_iterations(self) -> int:
        """Number of iterations (boosting rounds; trees of a forest)."""
        return len(self.iteration_indptr) - 1

    def _tree_range(self, iteration_range: tuple[int, int] | None) -> tuple[int, int]:
        """Trees ``[t0, t1)`` of ``iteration_range`` (see :meth:`iterations_used`)."""
        begin, end = self.iterations_used(iteration_range)
        return self.iteration_indptr[begin], self.iteration_indptr[end]

    def iterations_used(self, iteration_range: tuple[int, int] | None = None
                        ) -> tuple[int, int]:
        """The iterations ``[begin, end)`` that predicting with ``iteration_range`` uses:
        None is up to the best iteration after early stopping (as LightGBM and the
        scikit-learn wrappers predict), else every iteration; ``(0, 0)`` is every
        iteration."""
        n_iterations = self.num_iterations()
        if iteration_range is None:
            begin, end = 0, n_iterations
            if self.best_iteration is not None and self.best_iteration < n_iterations:
                end = self.best_iteration + 1
        else:
            try:
                begin, end = (int(v) for v in iteration_range)
            except (TypeError, ValueError):
                raise TypeError("iteration_range must be a pair (begin, end) of ints") from None
            if end == 0:
                end = n_iterations
            if not 0 <= begin <= end <= n_iterations:
                raise ValueError(f"iteration_range {tuple(iteration_range)} is out of "
                                 f"[0, {n_iterations}]")
        return begin, end

    def _flat(self, t0: int, t1: int
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """All trees in ``[t0, t1)`` back to back: (nodes, int64 offsets, int32 outputs,
        the nodes in the packed prediction layout)."""
        key = (t0, t1)
        if key not in self._flat_cache:
            trees = self.trees[t0:t1]
            nodes = concatenate_trees(trees)
            offsets = np.zeros(len(trees) + 1, dtype=np.int64)
            offsets[1:] = np.cumsum([t.shape[0] for t in trees])
            outputs = np.asarray(self.tree_outputs[t0:t1], dtype=np.int32)
            self._flat_cache[key] = (nodes, offsets, outputs, compact_nodes(nodes))
        return self._flat_cache[key]

    def packed_trees(self, iteration_range: tuple[int, int] | None = None
                     ) -> tuple[np.ndarray, np.ndarray]:
        """The trees of ``iteration_range`` back to back in the prediction kernels'
        layout: (int64 tree offsets, packed nodes)."""
        _, offsets, _, nodes = self._flat(*self._tree_range(iteration_range))
        return offsets, nodes

    def used_features(self, iteration_range: tuple[int, int] | None = None) -> np.ndarray:
        """Sorted indices of the features that the trees split on."""
        t0, t1 = self._tree_range(iteration_range)
        nodes = self._flat(t0, t1)[0]
        return np.unique(nodes["feature"][nodes["left"] != -1]).astype(np.int64)

    def __getitem__(self: EnsembleT, key: Any) -> EnsembleT:
        """``model[a:b]``: a new model with iterations ``a`` to ``b - 1``; ``model[i]``:
        iteration ``i`` alone. Everything else (a booster's base score, a forest's
        classes) is kept; ``best_iteration`` is dropped."""
        n = self.num_iterations()
        if isinstance(key, (int, np.integer)) and not isinstance(key, bool):
            if key < 0:
                key += n
            if not 0 <= key < n:
                raise IndexError(f"iteration {key} out of range for {n} iterations")
            key = slice(key, key + 1)
        if not isinstance(key, slice):
            raise TypeError(f"a {type(self).__name__} is indexed by an int or a slice")
        begin, end, step = key.indices(n)
        if step != 1:
            raise ValueError(f"slicing a {type(self).__name__} needs step 1")
        end = max(end, begin)
        sliced = copy.copy(self)
        t0, t1 = self.iteration_indptr[begin], self.iteration_indptr[end]
        sliced.trees = [t.copy() for t in self.trees[t0:t1]]
        sliced.tree_outputs = self.tree_outputs[t0:t1]
        sliced.iteration_indptr = [i - t0 for i in self.iteration_indptr[begin:end + 1]]
        sliced._cat_chunks = list(self._cat_chunks)   # offsets into the same words
        sliced.params = dict(self.params)
        sliced.summary = {}
        sliced.best_iteration = sliced.best_score = None
        sliced._flat_cache = {}
        sliced._slice_extra(t0, t1, begin, end)
        return sliced

    def copy(self: EnsembleT) -> EnsembleT:
        """A copy of the model that shares its (read-only) trees: setting its attributes
        (exit rules, parameters) leaves this one as it is."""
        new = copy.copy(self)
        new.params = dict(self.params)
        new.summary = dict(self.summary)
        new.trees, new.tree_outputs = list(self.trees), list(self.tree_outputs)
        new.iteration_indptr = list(self.iteration_indptr)
        new._cat_chunks = list(self._cat_chunks)
        new._flat_cache = dict(self._flat_cache)
        return new

    def _slice_extra(self, t0: int, t1: int, begin: int, end: int) -> None:
        """Hook for subclasses: keep per-tree data of trees ``[t0, t1)`` (iterations
        ``[begin, end)``) after slicing."""

    def _leaf_indices(self, X: ModelInput, iteration_range: tuple[int, int] | None) -> np.ndarray:
        """int32 (n_samples, n_trees): the tree-local leaf each input reaches (of a
        FeatureSource: fetching what the paths read)."""
        if isinstance(X, FeatureSource):     # every tree's leaf: no exits
            return self._acquire(X, iteration_range=iteration_range, early_exit=False)
        X = self.prepare_input(X)
        t0, t1 = self._tree_range(iteration_range)
        _, offsets, _, nodes = self._flat(t0, t1)
        out = np.zeros((X.shape[0], t1 - t0), dtype=np.int32)
        predict_leaf(X, nodes, offsets, out, self.n_threads(), self.cat_words)
        return out

    def read_steps(self, source: FeatureSource, rows: np.ndarray,
                   iteration_range: tuple[int, int] | None = None,
                   **reads: Any) -> ReadSteps:
        """All trees of ``iteration_range`` walked together (see :func:`walk_trees`);
        returns the leaf each input reaches in each tree."""
        if reads.get("early_exit"):     # a booster walks its exits in its own read_steps
            raise self._no_exits()
        return self._walk(source, rows, *self._tree_range(iteration_range))

    def _walk(self, source: FeatureSource, rows: np.ndarray, t0: int, t1: int) -> ReadSteps:
        """The read steps of trees ``[t0, t1)`` (:func:`walk_trees`)."""
        key = ("walk", t0, t1)
        if key not in self._flat_cache:
            _, offsets, _, nodes = self._flat(t0, t1)
            # per model, not per prediction: a single input's walk is short
            self._flat_cache[key] = (offsets, global_node_ids(offsets, nodes),
                                     root_features(offsets, nodes))
        offsets, nodes, first = self._flat_cache[key]
        return walk_trees(source, rows, offsets, nodes, self.n_threads(), self.cat_words,
                          first)

    # -- explanations (TreeSHAP) --------------------------------------------------------
    @property
    def cover_field(self) -> str:
        """The node statistic TreeSHAP weighs a split's children by (their training
        cover): ``sum_hessian`` for a model imported from XGBoost (XGBoost's cover),
        else ``n_samples``, the training rows that reached the node (LightGBM's data
        counts; a forest's bootstrap rows)."""
        library = (self.imported_from or {}).get("library")
        return "sum_hessian" if library == "xgboost" else "n_samples"

    def _explained_input(self, X: ModelInput) -> np.ndarray:
        """The prepared matrix of ``X`` for TreeSHAP, which reads every feature the
        trees split on (the branches an input does not take too): not a FeatureSource."""
        if isinstance(X, FeatureSource):
            raise TypeError("pred_contrib / explain read every feature the trees split on, "
                            "not only those an input's paths test: pass the inputs as an "
                            "array or DataFrame, not a FeatureSource")
        return self.prepare_input(X)

    def _tree_shap(self, X: np.ndarray, t0: int, t1: int, node_values: np.ndarray,
                   columns: np.ndarray, n_columns: int) -> tuple[np.ndarray, np.ndarray]:
        """TreeSHAP values of the prepared ``X`` for trees ``[t0, t1)``, (n_samples,
        n_columns, n_features), and the trees' summed expectations, (n_columns,) (the
        bias): tree ``t`` adds its leaves' ``node_values`` rows (one row per node of the
        trees) to columns ``columns[t]`` onwards."""
        full, offsets, _, nodes = self._flat(t0, t1)
        cover = np.ascontiguousarray(full[self.cover_field], dtype=np.float64)
        node_values = np.ascontiguousarray(node_values, dtype=np.float64)
        columns = np.ascontiguousarray(columns, dtype=np.int32)
        out = np.zeros((X.shape[0], n_columns, X.shape[1] + 1))
        tree_shap(X, nodes, offsets, columns, cover, node_values, out, self.n_threads(),
                  self.cat_words)
        means = np.zeros((t1 - t0, node_values.shape[1]))
        expected_values(nodes, offsets, cover, node_values, means)
        bias = np.zeros(n_columns)
        for k in range(node_values.shape[1]):
            np.add.at(bias, columns + k, means[:, k])
        return out[:, :, :-1], bias

    def _contributions(self, X: np.ndarray, iteration_range: tuple[int, int] | None = None,
                       **options: Any
                       ) -> tuple[np.ndarray, np.ndarray]:
        """TreeSHAP values of the prepared ``X``, (n_samples, n_outputs, n_features),
        and the bias, (n_outputs,) (the model type says what its outputs are)."""
        raise NotImplementedError

    def _pred_contrib(self, X: ModelInput, iteration_range: tuple[int, int] | None = None,
                      **options: Any) -> np.ndarray:
        """``pred_contrib``'s array, LightGBM's layout: (n_samples, n_outputs *
        (n_features + 1)), each output's contributions then its bias."""
        X = self._explained_input(X)
        contributions, bias = self._contributions(X, iteration_range, **options)
        n_samples, n_outputs, _ = contributions.shape
        full = np.concatenate(
            [contributions, np.broadcast_to(bias[:, None], (n_samples, n_outputs, 1))], axis=2)
        return full.reshape(n_samples, -1)

    def explain(self, X: ModelInput, *, iteration_range: tuple[int, int] | None = None
                ) -> Explanation:
        """Per input and feature, the contribution to the prediction (TreeSHAP: what
        ``pred_contrib`` gives) and the acquisition cost the input paid for it.

        Exit rules are not used (as ``pred_leaf``): the contributions explain every
        tree of ``iteration_range`` and the costs are those of evaluating them all
        (``early_exit=False``).

        Returns
        -------
        cbudget.explain.Explanation
        """
        contributions, bias = self._contributions(self._explained_input(X), iteration_range)
        parts = self.cost_parts(X, iteration_range=iteration_range, early_exit=False)
        return Explanation(feature_names=list(self.feature_names),
                           contributions=contributions, expected_value=bias,
                           acquired=parts.acquired,
                           feature_cost=paid_per_feature(self.cost_model, parts.acquired),
                           other_cost=parts.other)

    # -- early exit ---------------------------------------------------------------------
    def _exit_tree_ends(self, X: np.ndarray, iteration_range: tuple[int, int] | None,
                        early_exit: bool | None) -> np.ndarray | None:
        """int64 per input of the prepared ``X``: the trees of ``iteration_range`` it
        evaluates before it exits; None when every input evaluates them all. Only
        boosters have exit rules."""
        if early_exit:
            raise self._no_exits()
        return None

    def _no_exits(self) -> NotApplicableError:
        return NotApplicableError(f"early exit does not apply to a {type(self).__name__}: "
                                  f"{self.no_exit_reason}")

    # -- prediction cost ----------------------------------------------------------------
    def _costs(self, X: np.ndarray, iteration_range: tuple[int, int] | None = None,
               node_counts: np.ndarray | None = None, early_exit: bool | None = None
               ) -> tuple[np.ndarray, tuple[np.ndarray, np.ndarray]]:
        """(per-input cost, acquisition bitsets) of the prepared rows ``X``, each input's
        trees ending at its exit (``early_exit``: see :meth:`Booster.predict`)."""
        offsets, nodes = self.packed_trees(iteration_range)
        bitsets = self.cost_model.new_bitsets(X.shape[0])
        cost = np.zeros(X.shape[0])
        self.cost_model.accumulate(X, nodes, offsets, bitsets, cost, node_counts=node_counts,
                                   n_threads=self.n_threads(), cat_words=self.cat_words,
                                   row_tree_end=self._exit_tree_ends(X, iteration_range,
                                                                     early_exit))
        return cost, bitsets

    def acquired_bitsets(self, X: np.ndarray, iteration_range: tuple[int, int] | None = None,
                         early_exit: bool | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Per input of the prepared matrix ``X``, the bitsets (acquired features, touched
        cost groups) of :meth:`cbudget.CostModel.new_bitsets` after the trees."""
        return self._costs(X, iteration_range, early_exit=early_exit)[1]

    def _cost_and_acquired(self, X: np.ndarray, iteration_range: tuple[int, int] | None = None,
                           early_exit: bool | None = None) -> tuple[np.ndarray, np.ndarray]:
        cost, bitsets = self._costs(X, iteration_range, early_exit=early_exit)
        return cost, self.cost_model.acquired_matrix(bitsets)

    def predict_cost(self, X: ModelInput, *, iteration_range: tuple[int, int] | None = None,
                     early_exit: bool | None = None
                     ) -> np.ndarray:
        """Prediction cost of each input (docs/architecture.md, "Cost model"): each
        feature paid once per input across all trees, its cost group once, plus split
        and tree costs. With exit rules (a booster's ``exit_rules``), an input pays only
        for the trees before its exit; ``early_exit=False``: for all of them.

        Returns
        -------
        ndarray of float64, shape (n_samples,)
        """
        reads: dict[str, Any] = {"iteration_range": iteration_range, "early_exit": early_exit}
        return self._costs(self.prepare_input(X, **reads), **reads)[0]

    def acquisitions(self, X: ModelInput, *, iteration_range: tuple[int, int] | None = None,
                     early_exit: bool | None = None
                     ) -> np.ndarray:
        """The features each input pays for: bool (n_samples, n_features), True where an
        input's paths through the trees (those before its exit) test the feature."""
        reads: dict[str, Any] = {"iteration_range": iteration_range, "early_exit": early_exit}
        return self._cost_and_acquired(self.prepare_input(X, **reads), **reads)[1] \
            .astype(bool)

    def cost_parts(self, X: ModelInput, *, iteration_range: tuple[int, int] | None = None,
                   early_exit: bool | None = None
                   ) -> CostParts:
        """Each input's acquired features and its split and tree costs (those before its
        exit): what a model that contains this one (a gated model) combines."""
        reads: dict[str, Any] = {"iteration_range": iteration_range, "early_exit": early_exit}
        cost, acquired = self._cost_and_acquired(self.prepare_input(X, **reads), **reads)
        return CostParts(acquired.astype(bool),
                         self.cost_model.structural_costs(cost, acquired))

    def cost_report(self, X: ModelInput, *, iteration_range: tuple[int, int] | None = None,
                    early_exit: bool | None = None) -> CostReport:
        """Mean cost, per-input cost, per-feature acquisition rates, features used and the
        fixed coupled cost of predicting ``X`` (inputs exit early as :meth:`predict_cost`
        says).

        Returns
        -------
        CostReport
        """
        reads: dict[str, Any] = {"iteration_range": iteration_range, "early_exit": early_exit}
        cost, acquired = self._cost_and_acquired(self.prepare_input(X, **reads), **reads)
        return self._report(cost, acquired, self.used_features(iteration_range), X)

    def cost_tracker(self, X: ModelInput) -> StagedCostTracker:
        """The mean cost of ``X`` as the ensemble grows, one pass per new iteration."""
        return StagedCostTracker(self, X)

    def cost_curve(self, X: ModelInput) -> np.ndarray:
        """Mean prediction cost of ``X`` using iterations ``0..r``, for each ``r``.

        Returns
        -------
        ndarray of float64, shape (num_iterations,)
        """
        return self._cost_curve(self.prepare_input(X))

    def _cost_curve(self, X: np.ndarray, node_counts: np.ndarray | None = None,
                    bitsets: tuple[np.ndarray, np.ndarray] | None = None) -> np.ndarray:
        _, offsets, _, nodes = self._flat(0, len(self.trees))
        if bitsets is None:
            bitsets = self.cost_model.new_bitsets(X.shape[0])
        cost = np.zeros(X.shape[0])
        curve = np.zeros(self.num_iterations())
        for r in range(self.num_iterations()):
            t0, t1 = self.iteration_indptr[r], self.iteration_indptr[r + 1]
            round_counts = None if node_counts is None else node_counts[offsets[t0]:offsets[t1]]
            self.cost_model.accumulate(
                X, nodes[offsets[t0]:offsets[t1]], offsets[t0:t1 + 1] - offsets[t0], bitsets,
                cost, node_counts=round_counts, n_threads=self.n_threads(),
                cat_words=self.cat_words)
            curve[r] = cost.mean()
        return curve

    def training_cost_pass(self, X: np.ndarray) -> tuple[np.ndarray, tuple[np.ndarray, np.ndarray]]:
        """Route the training rows ``X`` (prepared, as ``Dataset.data``) through every
        tree: set each node's ``new_acquisitions`` (the rows that first acquire its
        feature there) and return the mean cost after each iteration and the rows'
        acquisition bitsets (:meth:`cbudget.CostModel.new_bitsets`) after the last.

        The boosters track the same numbers while they grow their trees; this pass is
        what :meth:`finalize` runs for the other learners, and what continuing a model
        runs over the trees it starts from."""
        _, offsets, _, nodes = self._flat(0, len(self.trees))
        counts = np.zeros(nodes.shape[0], dtype=np.int64)
        bitsets = self.cost_model.new_bitsets(X.shape[0])
        curve = self._cost_curve(X, node_counts=counts, bitsets=bitsets)
        for t, tree in enumerate(self.trees):
            tree["new_acquisitions"] = counts[offsets[t]:offsets[t + 1]]
        self._flat_cache.clear()
        return curve, bitsets

    def finalize(self, dtrain: Dataset | None, evals: Iterable[tuple[str, Dataset]],
                 train_cost_curve: Sequence[float] | np.ndarray | None = None) -> None:
        """After training: per node ``new_acquisitions`` (training inputs that first
        acquire the node's feature there) and the cost ``summary``.

        ``train_cost_curve``: the mean training cost after each iteration when training
        already tracked it (the boosters' acquisition state; the trees then carry their
        ``new_acquisitions``), else both come from routing the training data through the
        trees (:meth:`training_cost_pass`)."""
        if train_cost_curve is None:
            assert dtrain is not None, "without a training cost curve, finalize needs dtrain"
            curve = self.training_cost_pass(dtrain.data)[0]
        else:
            curve = np.asarray(train_cost_curve[:self.num_iterations()], dtype=np.float64)
        # the summary describes the model as it predicts by default (the best iteration)
        end = self.iteration_indptr.index(self._tree_range(None)[1])
        self._summarise_costs(curve[end - 1] if end else 0.0, evals,
                              train_cost_per_iteration=curve.tolist())

    # -- importance ---------------------------------------------------------------------
    def feature_importance(self, kind: str = "split", *,
                           iteration_range: tuple[int, int] | None = None) -> np.ndarray:
        """Per-feature importance.

        Parameters
        ----------
        kind : {"split", "gain", "cost"}
            "split": number of splits on the feature; "gain": total raw gain of those
            splits (a forest: their minimum impurity decrease); "cost": total
            acquisition cost the training inputs paid for the feature
            (``feature_costs[m]`` times the inputs that acquired it).

        Returns
        -------
        ndarray of float64, shape (n_features,)
        """
        if kind not in IMPORTANCE_KINDS:
            raise ValueError(f"kind must be one of {IMPORTANCE_KINDS}, got {kind!r}")
        t0, t1 = self._tree_range(iteration_range)
        nodes = self._flat(t0, t1)[0]
        splits = nodes[nodes["left"] != -1]
        n = len(self.feature_names)
        if kind == "split":
            return np.bincount(splits["feature"], minlength=n).astype(np.float64)
        if kind == "gain":
            return np.bincount(splits["feature"], weights=splits["gain"], minlength=n)
        acquisitions = np.bincount(splits["feature"], weights=splits["new_acquisitions"],
                                   minlength=n)
        return acquisitions * self.cost_model.feature_costs
