"""Trees and cascades of linear classifiers: CSTC, CSCC and Cronus (Xu, Kusner,
Weinberger, Chen, Chapelle, JMLR 2014). Trained by :func:`cbudget.train` with
``algorithm`` "cstc" (a :class:`ClassifierTree`), "cscc" or "cronus" (a
:class:`Cascade`); the optimisation is in ``cbudget.algorithms.cstc_solver``.

Every node ``k`` scores an input with ``f_k(x) = x . weights[k] + bias[k]`` (with the
boosting trick, ``x`` is the vector of the basis trees' outputs) and sends it to
``upper[k]`` when ``f_k(x) > thresholds[k]``, else to ``lower[k]``; a child -1 is a
terminal element: the input exits with the prediction ``f_k(x)``.

Prediction cost (docs/architecture.md, "Cost model"): an input pays for the features with a non-zero
weight in the nodes it visits, each once (their cost groups once); with the boosting
trick it evaluates the basis trees that those nodes weigh (``tree_cost`` each) and pays
for the features on its own paths through them. ``split_cost`` is paid per visited node
that routes the input on (a node with a child classifier) and per split node of the
basis trees it walks.
"""
from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
from numpy.typing import ArrayLike

from ._core._linear import predict_hard
from ._core._types import compact_nodes
from ._model import Model, ModelInput, NotApplicableError
from .costs import CostModel
from .dataset import Dataset
from .model_io import (
    build,
    check_integer_range,
    checked_params,
    file_section,
    invalid,
    model_header,
    nested_model_from_dict,
    number_list,
    read_attributes,
    read_header,
    register_model_type,
    require,
)
from .on_demand import FeatureSource, ReadSteps, global_node_ids, in_lockstep, walk_trees

if TYPE_CHECKING:  # only for type hints: the basis booster is read by nested_model_from_dict
    from .booster import Booster

__all__ = ["ClassifierTree", "Cascade", "node_inputs", "score_transform", "default_metric"]

# what the classifier_tree section of a file holds
CLASSIFIER_TREE_SETTINGS = ("loss", "reg_alpha", "cost_tradeoff", "tree_structure", "max_depth",
                            "fine_tune", "class_weight", "basis_trees", "basis_max_depth",
                            "basis_learning_rate", "tol")
LOSSES = ("squared", "logistic")


def node_inputs(X: np.ndarray, basis: Booster | None) -> np.ndarray:
    """The inputs as the nodes see them: the features (float64), or with the boosting
    trick the outputs of the ``basis`` booster's trees, (n_samples, n_trees)."""
    if basis is None:
        return np.ascontiguousarray(X, dtype=np.float64)
    leaves = basis.predict(X, pred_leaf=True)
    out = np.empty(leaves.shape, dtype=np.float64)
    for t, tree in enumerate(basis.trees):
        out[:, t] = tree["value"][leaves[:, t]]
    return out


def default_metric(objective: str, loss: str) -> str:
    """The metric of a tree of classifiers: the objective's, but the error for a binary
    one fitted by least squares (its probabilities are clipped scores: the log-loss
    would be decided by the few inputs clipped to the wrong end)."""
    if objective == "binary:logistic":
        return "error" if loss == "squared" else "logloss"
    return "rmse"


def score_transform(objective: str, loss: str, score: np.ndarray) -> np.ndarray:
    """Scores to predictions: the score itself (regression); P(y = 1) for
    binary:logistic: ``(f + 1) / 2`` clipped to [0, 1] for the squared loss on +-1
    targets (its least-squares estimate of ``2 P(y = 1) - 1``), ``sigmoid(f)`` for the
    logistic loss."""
    if objective == "reg:squarederror":
        return score
    if loss == "logistic":
        return 0.5 * (1.0 + np.tanh(0.5 * score))
    return np.clip(0.5 * (score + 1.0), 0.0, 1.0)


@register_model_type
class ClassifierTree(Model):
    """A tree of linear classifiers (CSTC). Made by :func:`cbudget.train` with
    ``algorithm="cstc"`` or by :func:`cbudget.load_model`.

    Attributes
    ----------
    objective : str
        "reg:squarederror" or "binary:logistic".
    loss : str
        "squared" (classification: least squares on +-1 targets) or "logistic".
    weights : ndarray of float64, shape (n_nodes, n_coordinates)
        Node ``k``'s weights on the features (or on the basis trees' outputs).
    bias, thresholds : ndarray of float64, shape (n_nodes,)
    upper, lower : ndarray of int32, shape (n_nodes,)
        Children (-1: terminal element); nodes are in level order.
    impute : ndarray of float64, shape (n_coordinates,)
        The value a missing (NaN) feature counts as: its training mean.
    basis : cbudget.Booster or None
        With the boosting trick, the booster whose trees' outputs are the coordinates.
    reach : ndarray of float64, shape (n_nodes,)
        Mean probability that a training input reaches the node under the soft traversal
        of training; ``n_samples`` / ``n_exits``: training inputs that reach / leave at
        the node with hard thresholds.
    feature_names, cost_model, params, best_iteration, best_score, summary
        As for :class:`cbudget.Booster`; ``best_iteration`` counts sweeps of block
        coordinate descent.
    """

    model_type = "tree_of_classifiers"
    no_exit_reason: ClassVar[str] = (
        "each input already leaves it where its route ends (a tree's leaf, a cascade's "
        "exit stage), which training chose for the cost; exit rules apply to boosted "
        "models, whose trees add up to the scores")
    default_algorithm: ClassVar[str] = "cstc"

    def __init__(self, *, objective: str, loss: str, feature_names: Sequence[str],
                 cost_model: CostModel, params: dict[str, Any], weights: ArrayLike,
                 bias: ArrayLike, thresholds: ArrayLike, upper: ArrayLike, lower: ArrayLike,
                 impute: ArrayLike, basis: Booster | None = None) -> None:
        super().__init__(feature_names=feature_names, cost_model=cost_model, params=params,
                         default_algorithm=self.default_algorithm)
        self.objective = objective
        self.loss = loss
        self.num_class = 1
        self.weights = np.ascontiguousarray(weights, dtype=np.float64)
        self.bias = np.ascontiguousarray(bias, dtype=np.float64)
        self.thresholds = np.ascontiguousarray(thresholds, dtype=np.float64)
        self.upper = np.ascontiguousarray(upper, dtype=np.int32)
        self.lower = np.ascontiguousarray(lower, dtype=np.int32)
        self.impute = np.ascontiguousarray(impute, dtype=np.float64)
        self.basis = basis
        n_nodes = self.weights.shape[0]
        self.reach = np.zeros(n_nodes)
        self.n_samples = np.zeros(n_nodes, dtype=np.int64)
        self.n_exits = np.zeros(n_nodes, dtype=np.int64)
        self._check_structure()
        self._path_cache: list[tuple[np.ndarray, np.ndarray, int]] | None = None
        self._basis_cache: dict[int, tuple[np.ndarray, np.ndarray]] = {}

    def _check_structure(self) -> None:
        n_nodes = self.weights.shape[0]
        if n_nodes < 1:
            raise ValueError("a tree of classifiers needs at least one node")
        for name in ("bias", "thresholds", "upper", "lower"):
            if getattr(self, name).shape != (n_nodes,):
                raise ValueError(f"{name} must have one entry per node ({n_nodes})")
        if self.impute.shape != (self.weights.shape[1],):
            raise ValueError("impute must have one entry per coordinate")
        ids = np.arange(n_nodes)
        children = np.concatenate([self.upper, self.lower])
        parents = np.concatenate([ids, ids])
        real = children != -1
        # level order: children after their parents, each node but the root a child once
        if np.any(real & ((children <= parents) | (children >= n_nodes))):
            raise ValueError("child index out of range or not after its parent")
        if np.unique(children[real]).size != real.sum() or real.sum() != n_nodes - 1:
            raise ValueError("the nodes do not form one tree")
        for name in ("weights", "bias", "thresholds", "impute"):
            if not np.all(np.isfinite(getattr(self, name))):
                raise ValueError(f"non-finite {name}")

    # -- structure --------------------------------------------------------------------
    def num_nodes(self) -> int:
        """Number of nodes (classifiers)."""
        return self.weights.shape[0]

    def is_leaf(self, k: int) -> bool:
        """Whether node ``k`` has no child classifier (every input reaching it exits
        there).

        Parameters
        ----------
        k : int
            A node id.

        Returns
        -------
        bool
        """
        return self.upper[k] == -1 and self.lower[k] == -1

    def parents(self) -> np.ndarray:
        """The parent of each node.

        Returns
        -------
        ndarray of int64, shape (n_nodes,)
            -1 for the root.
        """
        parent = np.full(self.num_nodes(), -1, dtype=np.int64)
        for k in range(self.num_nodes()):
            for child in (self.upper[k], self.lower[k]):
                if child != -1:
                    parent[child] = k
        return parent

    def path(self, k: int) -> list[int]:
        """Node ids from the root to ``k`` (included)."""
        parent = self.parents()
        nodes = [int(k)]
        while parent[nodes[-1]] != -1:
            nodes.append(int(parent[nodes[-1]]))
        return nodes[::-1]

    def node_coordinates(self, k: int) -> np.ndarray:
        """Coordinates (features, or basis trees) with a non-zero weight in node ``k``."""
        return np.flatnonzero(self.weights[k])

    def _path_table(self) -> list[tuple[np.ndarray, np.ndarray, int]]:
        """Per node: (distinct coordinates on the path, distinct features they need,
        number of routing nodes visited by an input that exits there)."""
        if self._path_cache is None:
            table = []
            for k in range(self.num_nodes()):
                nodes = self.path(k)
                coords = np.unique(np.concatenate([self.node_coordinates(j) for j in nodes]))
                routing = len(nodes) - 1 + int(not self.is_leaf(k))
                table.append((coords, self._coordinate_features(coords), routing))
            self._path_cache = table
        return self._path_cache

    def _coordinate_features(self, coords: np.ndarray) -> np.ndarray:
        """Features needed to compute the coordinates ``coords`` (all of a basis tree's
        split features: the relaxation's feature-usage matrix F)."""
        if self.basis is None:
            return np.asarray(coords, dtype=np.int64)
        features = [t["feature"][t["left"] != -1] for t in (self.basis.trees[c] for c in coords)]
        return np.unique(np.concatenate(features)).astype(np.int64) if features else \
            np.zeros(0, dtype=np.int64)

    def used_features(self) -> np.ndarray:
        """Sorted indices of the features some node needs."""
        coords = np.unique(np.concatenate([self.node_coordinates(k)
                                           for k in range(self.num_nodes())]))
        return self._coordinate_features(coords)

    @property
    def default_metric(self) -> str:
        """rmse (regression); error (squared loss on +-1 targets) or logloss."""
        return default_metric(self.objective, self.loss)

    # -- prediction -------------------------------------------------------------------
    def _coordinates(self, X: np.ndarray) -> np.ndarray:
        return node_inputs(X, self.basis)

    def _route(self, X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(exit-node scores, exit nodes) of the rows of ``X`` (prepared)."""
        coords = self._coordinates(X)
        nonzero = self.weights != 0
        indptr = np.zeros(self.num_nodes() + 1, dtype=np.int64)
        indptr[1:] = np.cumsum(nonzero.sum(axis=1))
        index = np.nonzero(nonzero)[1].astype(np.int32)
        value = np.ascontiguousarray(self.weights[nonzero])
        score = np.empty(X.shape[0])
        exit_node = np.empty(X.shape[0], dtype=np.int32)
        predict_hard(coords, indptr, index, value, self.impute, self.bias, self.thresholds,
                     self.upper, self.lower, score, exit_node, self.n_threads())
        return score, exit_node

    def _node_scores(self, k: int, coords: np.ndarray) -> np.ndarray:
        """Node ``k``'s scores of inputs given as rows of coordinates, by the same kernel
        (and so the same arithmetic) as :meth:`_route`."""
        index = np.flatnonzero(self.weights[k]).astype(np.int32)
        no_child = np.full(1, -1, dtype=np.int32)
        score = np.empty(coords.shape[0])
        predict_hard(np.ascontiguousarray(coords, dtype=np.float64),
                     np.array([0, index.size], dtype=np.int64), index, self.weights[k, index],
                     self.impute, self.bias[k:k + 1], self.thresholds[k:k + 1], no_child,
                     no_child, score, np.empty(coords.shape[0], dtype=np.int32), 1)
        return score

    def _basis_trees(self, k: int) -> tuple[np.ndarray, np.ndarray]:
        """The basis trees node ``k`` weighs, packed for :func:`walk_trees`: (int64
        offsets, nodes)."""
        if k not in self._basis_cache:
            assert self.basis is not None
            trees = [self.basis.trees[c] for c in self.node_coordinates(k)]
            offsets = np.zeros(len(trees) + 1, dtype=np.int64)
            offsets[1:] = np.cumsum([t.shape[0] for t in trees])
            nodes = compact_nodes(np.concatenate(trees)) if trees else \
                compact_nodes(np.zeros(0, dtype=self.basis.trees[0].dtype))
            self._basis_cache[k] = (offsets, global_node_ids(offsets, nodes))
        return self._basis_cache[k]

    def read_steps(self, source: FeatureSource, rows: np.ndarray, **reads: Any) -> ReadSteps:
        """Level by level: the inputs at node ``k`` fetch the features with a non-zero
        weight there (with the boosting trick: walk the basis trees it weighs), then move
        on to the child their score chooses."""
        node = np.zeros(rows.size, dtype=np.int32)
        live = np.arange(rows.size)
        while live.size:
            at = node[live]
            groups = [(int(k), live[at == k]) for k in np.unique(at)]
            if self.basis is None:
                for k, members in groups:
                    source.request(rows[members], self.node_coordinates(k))
                if source.has_pending():
                    yield
                leaves = [None] * len(groups)
            else:
                leaves = yield from in_lockstep(*(
                    walk_trees(source, rows[members], *self._basis_trees(k), self.n_threads())
                    for k, members in groups))
            for (k, members), reached in zip(groups, leaves):
                if self.basis is None:
                    coords = source.values[rows[members]]
                else:
                    assert reached is not None
                    coords = np.zeros((members.size, self.weights.shape[1]))
                    for j, c in enumerate(self.node_coordinates(k)):
                        coords[:, c] = self.basis.trees[c]["value"][reached[:, j]]
                score = self._node_scores(k, coords)
                node[members] = np.where(score > self.thresholds[k], self.upper[k],
                                         self.lower[k])
            live = live[node[live] != -1]

    def transform(self, score: np.ndarray) -> np.ndarray:
        """Scores to predictions (see :func:`score_transform`)."""
        return score_transform(self.objective, self.loss, score)

    # Model.predict(X, **options): each model type takes its own options
    def predict(self, X: ModelInput, *, output_margin: bool = False, pred_exit: bool = False,
                pred_contrib: bool = False) -> np.ndarray:
        """Predict with hard thresholds.

        Parameters
        ----------
        X : array-like or Dataset of shape (n_samples, n_features)
        output_margin : bool
            Return the exit node's score ``f(x)`` (no transformation).
        pred_exit : bool
            Return the node each input exits at, int32 (n_samples,).
        pred_contrib : bool
            NotApplicableError: TreeSHAP explains sums of trees (Booster, Forest).

        Returns
        -------
        ndarray of shape (n_samples,): values (regression) or P(y = 1)
        """
        if pred_contrib:
            raise self._no_contributions("pred_contrib")
        score, exit_node = self._route(self.prepare_input(X))
        if pred_exit:
            return exit_node
        return score if output_margin else self.transform(score)

    # -- prediction cost --------------------------------------------------------------
    def _cost_and_acquired(self, X: np.ndarray, exit_node: np.ndarray | None = None
                           ) -> tuple[np.ndarray, np.ndarray]:
        """(per-input cost, (n_samples, n_features) 0/1 matrix of acquired features)."""
        if exit_node is None:
            exit_node = self._route(X)[1]
        costs = self.cost_model
        cost = np.zeros(X.shape[0])
        acquired = np.zeros((X.shape[0], self.num_features()), dtype=np.uint8)
        for k, (coords, features, routing) in enumerate(self._path_table()):
            rows = np.flatnonzero(exit_node == k)
            if rows.size == 0:
                continue
            cost[rows] = costs.split_cost * routing
            if self.basis is None:
                cost[rows] += costs.acquisition_cost(features)
                acquired[np.ix_(rows, features)] = 1
                continue
            trees = [self.basis.trees[t] for t in coords]
            if not trees:
                continue
            nodes = compact_nodes(np.concatenate(trees))
            offsets = np.zeros(len(trees) + 1, dtype=np.int64)
            offsets[1:] = np.cumsum([t.shape[0] for t in trees])
            bitsets = costs.new_bitsets(rows.size)
            part = np.zeros(rows.size)
            costs.accumulate(np.ascontiguousarray(X[rows]), nodes, offsets, bitsets, part,
                             n_threads=self.n_threads())
            cost[rows] += part
            acquired[rows] = costs.acquired_matrix(bitsets)
        return cost, acquired

    def finalize(self, dtrain: Dataset, evals: Iterable[tuple[str, Dataset]],
                 reach: ArrayLike) -> None:
        """After training: per node reach probability (``reach``, from the soft
        traversal) and hard counts on the training data, and the cost ``summary``."""
        X = dtrain.data
        exit_node = self._route(X)[1]
        self.reach = np.asarray(reach, dtype=np.float64)
        self.n_exits = np.bincount(exit_node, minlength=self.num_nodes()).astype(np.int64)
        counts = np.zeros(self.num_nodes(), dtype=np.int64)
        for k in range(self.num_nodes()):
            counts[self.path(k)] += self.n_exits[k]
        self.n_samples = counts
        self._summarise_costs(self._cost_and_acquired(X, exit_node)[0].mean(), evals)

    def new_features(self) -> list[list[int]]:
        """Per node: the sorted features first needed there (not by its ancestors)."""
        paths = self._path_table()
        parent = self.parents()
        seen = [set(paths[k][1].tolist()) for k in range(self.num_nodes())]
        return [sorted(seen[k] - (seen[parent[k]] if parent[k] >= 0 else set()))
                for k in range(self.num_nodes())]

    def feature_importance(self, kind: str = "split") -> np.ndarray:
        """Per-feature importance.

        Parameters
        ----------
        kind : {"split", "cost"}
            "split": number of nodes that need the feature (a non-zero weight, or with
            the boosting trick a weighted basis tree that splits on it); "cost": its
            cost times the training inputs that reach a node first needing it (with the
            boosting trick an upper bound: an input may not walk that tree's split).
            "gain" does not apply to linear nodes.

        Returns
        -------
        ndarray of float64, shape (n_features,)
        """
        n = self.num_features()
        if kind == "split":
            counts = np.zeros(n)
            for _, features, _ in self._node_features():
                counts[features] += 1
            return counts
        if kind == "cost":
            inputs = np.zeros(n)
            for k, new in enumerate(self.new_features()):
                inputs[new] += self.n_samples[k]
            return inputs * self.cost_model.feature_costs
        if kind == "gain":
            raise NotApplicableError(f"gain importance does not apply to a "
                                     f"{type(self).__name__}: its nodes are linear "
                                     "classifiers (it applies to tree ensembles)")
        raise ValueError(f"kind must be 'split' or 'cost', got {kind!r}")

    def _node_features(self) -> Iterator[tuple[int, np.ndarray, np.ndarray]]:
        for k in range(self.num_nodes()):
            coords = self.node_coordinates(k)
            yield k, self._coordinate_features(coords), coords

    def path_costs(self) -> np.ndarray:
        """Per node: the acquisition cost of the features needed on the way from the root
        to it (its own included), groups included -- what an input exiting there pays
        for features (with the boosting trick: at most that)."""
        return np.array([self.cost_model.acquisition_cost(features)
                         for _, features, _ in self._path_table()])

    # -- files ------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """The JSON document: the header and, instead of ``trees``, a ``nodes`` section
        holding per node (level order) ``upper_children`` / ``lower_children`` (-1:
        terminal element), ``thresholds``, ``biases``, ``weights`` (n_nodes lists of
        n_coordinates numbers) and the cost metadata ``path_cost`` (acquisition cost of
        the features needed from the root to the node), ``new_features`` (features first
        needed there), ``reach`` (mean training reach probability, soft traversal),
        ``n_samples`` and ``n_exits`` (training inputs reaching / leaving there, hard
        thresholds); ``impute`` (the values of missing coordinates), ``basis`` (the
        booster of the boosting trick, or null) and the ``classifier_tree`` settings."""
        doc = model_header(self)
        doc["nodes"] = {
            "num_nodes": self.num_nodes(),
            "upper_children": self.upper.tolist(),
            "lower_children": self.lower.tolist(),
            "thresholds": self.thresholds.tolist(),
            "biases": self.bias.tolist(),
            "weights": self.weights.tolist(),
            "path_cost": self.path_costs().tolist(),
            "new_features": self.new_features(),
            "reach": self.reach.tolist(),
            "n_samples": self.n_samples.tolist(),
            "n_exits": self.n_exits.tolist(),
        }
        doc["impute"] = self.impute.tolist()
        doc["basis"] = None if self.basis is None else self.basis.to_dict()
        doc[self.section_name(self.algorithm)] = {name: self.params[name]
                                                  for name in CLASSIFIER_TREE_SETTINGS}
        return doc

    @staticmethod
    def section_name(algorithm: str) -> str:
        """The section of the file holding the settings (the registry's; by default
        ``classifier_tree``)."""
        return file_section(algorithm) or "classifier_tree"

    @classmethod
    def from_dict(cls, doc: dict[str, Any], *,
                  expensive_model: Any = None) -> ClassifierTree:
        header = read_header(doc, cls)
        feature_names, params = header.feature_names, header.params
        if header.objective not in ("reg:squarederror", "binary:logistic"):
            raise invalid(f"objective {header.objective!r} of a tree of classifiers")
        section_name = cls.section_name(params["algorithm"])
        section = require(doc, section_name, dict)
        missing = [name for name in CLASSIFIER_TREE_SETTINGS if name not in section]
        if missing:
            raise invalid(f"{section_name} lacks {missing}")
        params = checked_params({**params, **section}, section_name)
        nodes = require(doc, "nodes", dict)
        n_nodes = require(nodes, "num_nodes", int, "nodes.")
        if n_nodes < 1:
            raise invalid("nodes.num_nodes must be >= 1")
        basis: Any = doc.get("basis")     # null or a booster's document, then the booster
        if basis is not None:
            if not isinstance(basis, dict) or basis.get("model_type") != "booster":
                raise invalid("basis must be a booster document or null")
            basis = nested_model_from_dict(basis)
            if basis.feature_names != feature_names:
                raise invalid("the basis booster's features differ")
        n_coords = len(feature_names) if basis is None else len(basis.trees)
        columns = {}
        for key in ("upper_children", "lower_children", "thresholds", "biases", "path_cost",
                    "reach", "n_samples", "n_exits"):
            columns[key] = number_list(require(nodes, key, list, "nodes."), f"nodes.{key}",
                                       n_nodes)
        weights = require(nodes, "weights", list, "nodes.")
        if len(weights) != n_nodes:
            raise invalid(f"nodes.weights has {len(weights)} rows, expected {n_nodes}")
        for k, row in enumerate(weights):
            number_list(row, f"nodes.weights[{k}]", n_coords)
        impute = number_list(require(doc, "impute", list), "impute", n_coords)
        for key, dtype in (("upper_children", np.int32), ("lower_children", np.int32),
                           ("n_samples", np.int64), ("n_exits", np.int64)):
            if not all(isinstance(v, int) for v in columns[key]):
                raise invalid(f"nodes.{key} must hold integers")
            check_integer_range(columns[key], dtype, f"nodes.{key}")
        model = build(
            cls, objective=header.objective, loss=params["loss"], feature_names=feature_names,
            cost_model=header.cost_model, params=params,
            weights=np.asarray(weights, dtype=np.float64), bias=columns["biases"],
            thresholds=columns["thresholds"], upper=columns["upper_children"],
            lower=columns["lower_children"], impute=impute, basis=basis)
        model.reach = np.asarray(columns["reach"], dtype=np.float64)
        model.n_samples = np.asarray(columns["n_samples"], dtype=np.int64)
        model.n_exits = np.asarray(columns["n_exits"], dtype=np.int64)
        return read_attributes(model, doc)

    def __repr__(self) -> str:
        kind = "cascade" if self.model_type == "cascade" else "tree"
        return (f"<cbudget.{type(self).__name__} {self.algorithm} {kind} of "
                f"{self.num_nodes()} nodes, {len(self.used_features())} features used>")


@register_model_type
class Cascade(ClassifierTree):
    """A cascade of linear classifiers (CSCC, Cronus): a chain of stages, each sending
    the inputs whose score is not above its threshold to an early exit and the others to
    the next stage (see :class:`ClassifierTree`)."""

    model_type = "cascade"
    default_algorithm = "cscc"
