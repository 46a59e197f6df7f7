"""Forest: a voting ensemble of classification trees (``algorithm="budget_rf"``, or a
random forest imported from scikit-learn)."""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar, Literal

import numpy as np
from numpy.typing import ArrayLike

from ._core._predict import predict_node_rows, sum_node_rows
from ._ensemble import TreeEnsemble, read_imported_from, read_scores, read_trees, tree_to_dict
from ._model import ModelInput
from .costs import CostModel
from .dataset import Dataset
from .metrics import evaluate_on
from .model_io import (
    IMPORTED,
    build,
    checked_params,
    file_section,
    invalid,
    model_header,
    read_attributes,
    read_header,
    register_model_type,
    require,
)
from .objectives import get_objective
from .on_demand import FeatureSource

__all__ = ["Forest"]

# a forest votes: its default metric is the error of the vote
VOTE_METRICS = {"binary:logistic": "error", "multi:softprob": "merror"}
IMPURITIES = ("threshold_pairs", "gini", "entropy")
# the training parameters the section of a forest's file (budget_rf's) restates
SECTION_PARAMS = ("alpha", "budget", "impurity", "path_free")


@register_model_type
class Forest(TreeEnsemble):
    """A trained random forest of classification trees. Made by :func:`cbudget.train`
    with ``algorithm="budget_rf"`` or by :func:`cbudget.load_model`.

    Each tree is a flat ``NODE_DTYPE`` struct array (node 0 the root, children by node
    id, -1 for leaves); a leaf's ``value`` is its majority class. ``class_counts[t]``
    holds, for every node of tree ``t``, the (bootstrap) training examples of each class
    that reached it. One iteration is one tree: ``iteration_range=(0, k)`` and
    ``forest[:k]`` are the first ``k`` trees.

    A BudgetRF forest votes by majority (``vote == "majority"``). A forest imported from
    scikit-learn (``algorithm == "imported"``, :func:`cbudget.from_sklearn`) holds each
    leaf's class distribution as its ``class_counts`` and votes as scikit-learn does
    (``vote == "average"``): ``predict_proba`` averages the trees' distributions and
    ``predict`` is its argmax.

    Attributes
    ----------
    objective : str
        ``binary:logistic`` or ``multi:softprob`` (the label convention and the metrics;
        a forest is not fitted by a loss).
    num_class : int
        Number of classes (2 for a binary forest).
    class_prior : ndarray of shape (num_class,)
        Class frequencies of the training labels: the prediction of a forest without
        trees (e.g. when one tree already exceeds the budget).
    class_counts : list of ndarray of shape (n_nodes, num_class)
    feature_names, cost_model, params, summary, best_iteration, best_score :
        as for :class:`cbudget.Booster`.
    """

    model_type = "forest"
    no_exit_reason: ClassVar[str] = (
        "its trees vote for classes, and its budget is the number of trees (grown until a "
        "validation budget is met); exit rules apply to boosted models, whose trees add "
        "up to the scores")
    importable = True

    def __init__(self, *, objective: str, num_class: int, class_prior: ArrayLike,
                 feature_names: Sequence[str], cost_model: CostModel,
                 params: dict[str, Any]) -> None:
        super().__init__(feature_names=feature_names, cost_model=cost_model, params=params,
                         default_algorithm="budget_rf")
        if objective not in ("binary:logistic", "multi:softprob"):
            raise ValueError(f"a Forest is a classifier; objective {objective!r} is not "
                             "binary:logistic or multi:softprob")
        self.objective = objective
        self.num_class = int(num_class)
        if self.num_class < 2 or (objective == "binary:logistic" and self.num_class != 2):
            raise ValueError(f"num_class {num_class} does not fit objective {objective!r}")
        self._objective = get_objective(objective, self.num_class
                                        if objective == "multi:softprob" else None)
        self.class_prior = np.asarray(class_prior, dtype=np.float64)
        if self.class_prior.shape != (self.num_class,):
            raise ValueError(f"class_prior must have {self.num_class} entries")
        self.class_counts: list[np.ndarray] = []

    @property
    def vote(self) -> str:
        """``"majority"`` (BudgetRF: each tree votes for its leaf's majority class) or
        ``"average"`` (an imported scikit-learn forest: the argmax of the averaged class
        distributions)."""
        return "average" if self.algorithm == IMPORTED else "majority"

    @property
    def default_metric(self) -> str:
        """The error of the vote: error (binary) or merror."""
        return VOTE_METRICS[self.objective]

    # -- building -----------------------------------------------------------------------
    def add_tree(self, tree: np.ndarray, class_counts: ArrayLike) -> None:
        """Append one tree (one iteration) with its nodes' class counts (n_nodes x
        num_class); its leaves' values become their majority classes."""
        class_counts = np.ascontiguousarray(class_counts, dtype=np.float64)
        if class_counts.shape != (tree.shape[0], self.num_class):
            raise ValueError("class_counts must have one row per node and one column per "
                             "class")
        leaves = tree["left"] == -1
        tree["value"][leaves] = np.argmax(class_counts[leaves], axis=1)
        self._add_tree(tree, 0)
        self.class_counts.append(class_counts)
        self._end_iteration()

    def _slice_extra(self, t0: int, t1: int, begin: int, end: int) -> None:
        self.class_counts = [c.copy() for c in self.class_counts[t0:t1]]

    def num_trees(self) -> int:
        """Number of trees."""
        return self.num_iterations()

    # -- prediction -------------------------------------------------------------------
    def _node_table(self, t0: int, t1: int, what: str) -> np.ndarray:
        """Per node of trees [t0, t1): its class counts (``what="counts"``), the one-hot
        majority class stored as the leaf's ``value`` (``"votes"``; internal nodes are
        never reached as leaves), or both side by side (``"both"``, 2 x num_class
        columns: one traversal gives both)."""
        key = (what, t0, t1)
        if key not in self._flat_cache:
            counts = (np.concatenate(self.class_counts[t0:t1]) if t1 > t0
                      else np.zeros((0, self.num_class)))
            votes = np.zeros_like(counts)
            votes[np.arange(counts.shape[0]),
                  self._flat(t0, t1)[0]["value"].astype(np.intp)] = 1.0
            self._flat_cache[key] = {"counts": counts, "votes": votes,
                                     "both": np.hstack([counts, votes])}[what]
        return self._flat_cache[key]

    def leaf_sums(self, X: np.ndarray | FeatureSource,
                  what: Literal["counts", "votes", "both"],
                  iteration_range: tuple[int, int] | None = None) -> np.ndarray:
        """The class counts (``what="counts"``), one-hot votes (``"votes"``) or both
        side by side (``"both"``, 2 x num_class columns) of the leaves each input of the
        prepared matrix (or FeatureSource) ``X`` reaches, summed over the trees of
        ``iteration_range``."""
        t0, t1 = self._tree_range(iteration_range)
        _, offsets, _, nodes = self._flat(t0, t1)
        table = self._node_table(t0, t1, what)
        if isinstance(X, FeatureSource):      # from the leaves the walk reached
            leaves = self._leaf_indices(X, iteration_range)
            out = np.zeros((leaves.shape[0], table.shape[1]))
            sum_node_rows(leaves, offsets, table, out, self.n_threads())
            return out
        out = np.zeros((X.shape[0], table.shape[1]))
        predict_node_rows(X, nodes, offsets, table, out, self.n_threads())
        return out

    # Model.predict(X, **options): each model type takes its own options
    def predict(self, X: ModelInput, *,
                iteration_range: tuple[int, int] | None = None,
                pred_leaf: bool = False) -> np.ndarray:
        """Predicted class by majority vote of the trees (each tree votes for the
        majority class of the leaf the input reaches; ties go to the lower class); for
        an imported forest (``vote == "average"``) the argmax of :meth:`predict_proba`.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features), DataFrame, sparse or Dataset
        iteration_range : (begin, end), optional
            Use trees ``begin <= t < end`` (``end = 0``: up to the last). Default: up
            to ``best_iteration`` after early stopping, else all.
        pred_leaf : bool
            Return the leaf index reached in each tree, int32 (n_samples, n_trees).

        Returns
        -------
        ndarray of int64, shape (n_samples,)
            Classes in ``[0, num_class)``; a forest without trees predicts the most
            frequent training class.
        """
        if pred_leaf:
            return self._leaf_indices(X, iteration_range)
        if not isinstance(X, FeatureSource):
            X = self.prepare_input(X)
        sums = self.leaf_sums(X, "votes" if self.vote == "majority" else "counts",
                              iteration_range)
        return np.argmax(self._normalise(sums), axis=1).astype(np.int64)

    def predict_proba(self, X: ModelInput, *,
                      iteration_range: tuple[int, int] | None = None,
                      votes: bool = False, pred_contrib: bool = False) -> np.ndarray:
        """Class probabilities: the training examples of each class in the leaves the
        input reaches, summed over the trees and normalised (the paper's confidence).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features), DataFrame, sparse or Dataset
        iteration_range : (begin, end), optional
            As for :meth:`predict`.
        votes : bool, default False
            The share of the trees voting for each class instead, whose argmax is
            :meth:`predict`.
        pred_contrib : bool
            Each feature's contribution (exact path-dependent TreeSHAP) to each class's
            leaf class counts (``votes``: votes) averaged over the trees -- the forest's
            sum of trees, which the normalisation of the probabilities is not --,
            float64 (n_samples, num_class * (n_features + 1)) in LightGBM's layout: per
            class its contributions, then its bias. With ``votes`` (or for a forest
            imported from scikit-learn, whose leaves hold class distributions) a class's
            block sums to its probability.

        Returns
        -------
        ndarray of float64, shape (n_samples, num_class)
            A forest without trees gives the training class frequencies.
        """
        if pred_contrib:
            return self._pred_contrib(X, iteration_range, votes=votes)
        if not isinstance(X, FeatureSource):
            X = self.prepare_input(X)
        return self._normalise(self.leaf_sums(X, "votes" if votes else "counts",
                                              iteration_range))

    def _contributions(self, X: np.ndarray, iteration_range: tuple[int, int] | None = None,
                       *, votes: bool = False, **options: Any) -> tuple[np.ndarray, np.ndarray]:
        """TreeSHAP values of each class's leaf class counts (``votes``: one-hot votes)
        averaged over the trees, and their bias; a forest without trees: no
        contributions, the class frequencies as the bias (what it predicts)."""
        t0, t1 = self._tree_range(iteration_range)
        if t1 == t0:
            return np.zeros((X.shape[0], self.num_class, X.shape[1])), self.class_prior.copy()
        contributions, bias = self._tree_shap(
            X, t0, t1, self._node_table(t0, t1, "votes" if votes else "counts"),
            np.zeros(t1 - t0, dtype=np.int32), self.num_class)
        return contributions / (t1 - t0), bias / (t1 - t0)

    def _normalise(self, table: np.ndarray) -> np.ndarray:
        """Rows of summed class counts or votes -> probabilities; the class prior where
        nothing was summed (no trees, or only zero-weight examples in the leaves)."""
        totals = table.sum(axis=1, keepdims=True)
        return np.where(totals > 0, table / np.where(totals > 0, totals, 1.0),
                        self.class_prior)

    def metric_predictions(self, metric: str, counts: np.ndarray,
                           votes: np.ndarray) -> np.ndarray:
        """What ``metric`` takes, from summed leaf class counts and votes: the error
        metrics score the vote (as :meth:`predict`), the others the probabilities of
        :meth:`predict_proba`; P(class 1) for a binary forest."""
        by_vote = metric in ("error", "merror") and self.vote == "majority"
        proba = self._normalise(votes if by_vote else counts)
        return proba[:, 1] if self.objective == "binary:logistic" else proba

    def _staged_metric(self, data: Dataset, metric: str) -> np.ndarray:
        """``metric`` of ``data`` using trees ``0..t``, for each tree ``t``."""
        X = self.prepare_input(data)
        sums = np.zeros((X.shape[0], 2 * self.num_class))
        scores = np.zeros(self.num_trees())
        for t in range(self.num_trees()):
            sums += self.leaf_sums(X, "both", (t, t + 1))
            counts, votes = np.hsplit(sums, 2)
            scores[t] = evaluate_on(metric, data,
                                    self.metric_predictions(metric, counts, votes))
        return scores

    # -- files --------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """The JSON document: the header, ``base_score`` holding the training class
        frequencies (the prediction without trees), the trees (``leaf_values``: the
        leaves' majority classes) each with ``class_counts`` (n_nodes x num_class, row by
        row; ``gain`` is a split's worst-child impurity decrease, ``cost_penalty`` its
        c(t)), and the ``budget_rf`` section (an imported forest: the ``imported_from``
        section instead)."""
        doc = model_header(self)
        doc["iteration_indptr"] = list(self.iteration_indptr)
        doc["base_score"] = self.class_prior.tolist()
        doc["trees"] = []
        for tree, counts in zip(self.trees, self.class_counts):
            d = tree_to_dict(tree, 0)
            d["class_counts"] = counts.ravel().tolist()
            doc["trees"].append(d)
        if self.imported_from is not None:
            doc["imported_from"] = dict(self.imported_from)
        section = file_section(self.algorithm)      # the registry's: none when imported
        if section is None:
            return doc
        p = self.params
        doc[section] = {
            "alpha": float(p["alpha"]), "impurity": p["impurity"], "path_free": p["path_free"],
            "n_stumps": p["n_stumps"] if p["n_stumps"] == "all" else list(p["n_stumps"]),
            "stump_node_sizes": list(p["stump_node_sizes"]), "max_depth": p["max_depth"],
            "budget": p["budget"], "vote": "majority",
        }
        return doc

    @classmethod
    def from_dict(cls, doc: dict[str, Any], *, expensive_model: Any = None) -> Forest:
        header = read_header(doc, cls)
        num_class = require(doc, "num_class", int)
        objective, params = header.objective, header.params
        if num_class < 2 or (objective == "binary:logistic" and num_class != 2) \
                or objective not in VOTE_METRICS:
            raise invalid(f"num_class {num_class} does not fit a forest with objective "
                          f"{objective!r}")
        section_name = file_section(params["algorithm"])
        if section_name is not None:
            section = require(doc, section_name, dict)
            missing = [name for name in SECTION_PARAMS if name not in section]
            if missing:
                raise invalid(f"{section_name} lacks {missing}")
            params = checked_params(
                {**params, **{name: section[name] for name in SECTION_PARAMS}}, section_name)
        prior = np.asarray(read_scores(doc), dtype=np.float64)
        if prior.shape != (num_class,) or not np.all(np.isfinite(prior)) \
                or np.any(prior < 0) or not prior.sum() > 0:
            raise invalid(f"base_score must hold {num_class} finite numbers >= 0 (class "
                          "frequencies)")
        model = build(cls, objective=objective, num_class=num_class, class_prior=prior,
                      feature_names=header.feature_names, cost_model=header.cost_model,
                      params=params)
        model.imported_from = read_imported_from(doc)
        trees, indptr = read_trees(doc, len(header.feature_names), 1, one_tree_each=True)
        for i, (d, tree, _, _) in enumerate(trees):
            if np.any(tree["value"][tree["left"] != -1] != 0):
                raise invalid(f"trees[{i}].leaf_values must be 0 at internal nodes")
            model.add_tree(tree, read_class_counts(d, i, tree.shape[0], num_class))
        model.iteration_indptr = indptr
        return read_attributes(model, doc, model.num_iterations())

    def __repr__(self) -> str:
        return (f"<cbudget.Forest algorithm={self.algorithm} num_class={self.num_class} "
                f"trees={self.num_trees()}>")


def read_class_counts(d: dict[str, Any], index: int, n_nodes: int,
                      num_class: int) -> np.ndarray:
    """A forest tree's ``class_counts``: n_nodes x num_class finite numbers >= 0."""
    values = require(d, "class_counts", list, f"trees[{index}].")
    if len(values) != n_nodes * num_class or not all(
            isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
        raise invalid(f"trees[{index}].class_counts must hold {n_nodes} x {num_class} "
                      "numbers")
    counts = np.asarray(values, dtype=np.float64).reshape(n_nodes, num_class)
    if not np.all(np.isfinite(counts)) or np.any(counts < 0):
        raise invalid(f"trees[{index}].class_counts must be finite and >= 0")
    return counts
