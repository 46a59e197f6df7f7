"""Booster: an additive ensemble of regression trees (gbdt, cegb, greedy_miser)."""
from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from typing import Any, ClassVar

import numpy as np
from numpy.typing import ArrayLike

from ._core._predict import add_leaf_values, predict_raw
from ._ensemble import TreeEnsemble, read_imported_from, read_scores, read_trees, tree_to_dict
from .costs import CostModel
from .dataset import InputData
from .interop.to_xgboost import save_xgboost
from .metrics import evaluate_on
from .model_io import (
    IMPORTED,
    build,
    checked_params,
    invalid,
    model_header,
    read_attributes,
    read_header,
    register_model_type,
    require,
)
from .objectives import get_objective
from .on_demand import FeatureSource

__all__ = ["Booster"]

# algorithms whose files carry a section named after them with the cost trade-off
COST_AWARE_SECTIONS = ("cegb", "greedy_miser")


@register_model_type
class Booster(TreeEnsemble):
    """A trained boosted tree model. Made by :func:`cbudget.train` or
    :func:`cbudget.load_model`.

    Each tree is a flat ``NODE_DTYPE`` struct array (node 0 the root, children by node
    id, -1 for leaves). Round ``r`` holds trees
    ``iteration_indptr[r]:iteration_indptr[r + 1]`` (one per class for multi:softprob).

    Attributes
    ----------
    objective : str
    num_class : int
    base_score : ndarray of shape (n_outputs,)
        Initial raw score per output.
    feature_names : list of str
    cost_model : cbudget.CostModel
    params : dict
        The resolved training parameters.
    best_iteration, best_score : set by early stopping (else None)
    summary : dict
        Average train/validation cost, features used and train cost per round.
    """

    model_type = "booster"
    algorithms: ClassVar[tuple[str, ...]] = ("gbdt",) + COST_AWARE_SECTIONS + (IMPORTED,)

    def __init__(self, *, objective: str, num_class: int, base_score: ArrayLike,
                 feature_names: Sequence[str], cost_model: CostModel,
                 params: dict[str, Any]) -> None:
        super().__init__(feature_names=feature_names, cost_model=cost_model, params=params,
                         default_algorithm="gbdt")
        self.objective = objective
        self._objective = get_objective(objective, num_class if num_class > 1 else None)
        self.num_class = int(num_class)
        self.base_score = np.asarray(base_score, dtype=np.float64)

    @property
    def n_outputs(self) -> int:
        """Raw scores per input: one per class for multi:softprob, else one."""
        return self._objective.n_outputs

    def transform(self, raw: np.ndarray) -> np.ndarray:
        """Raw scores (n_samples, n_outputs) to predictions (sigmoid / softmax)."""
        return self._objective.transform(raw)

    @property
    def default_metric(self) -> str:
        """The objective's metric: rmse, logloss or mlogloss."""
        return self._objective.default_metric

    def num_boosted_rounds(self) -> int:
        """Number of boosting rounds."""
        return self.num_iterations()

    def add_round(self, trees: Iterable[np.ndarray]) -> None:
        """Append one boosting round: ``trees[k]`` is the tree of output ``k``."""
        for k, tree in enumerate(trees):
            self._add_tree(tree, k)
        self._end_iteration()

    # -- prediction ---------------------------------------------------------------------
    # Model.predict(X, **options): each model type takes its own options
    def predict(self, X: InputData, *,
                output_margin: bool = False, pred_leaf: bool = False,
                iteration_range: tuple[int, int] | None = None) -> np.ndarray:
        """Predict.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features), DataFrame, sparse or Dataset
        output_margin : bool
            Raw scores (before the sigmoid / softmax).
        pred_leaf : bool
            Return the leaf index reached in each tree, int32 (n_samples, n_trees).
        iteration_range : (begin, end), optional
            Use rounds ``begin <= r < end`` (``end = 0``: up to the last). Default: up
            to ``best_iteration`` after early stopping, else all; ``(0, 0)``: all. The
            cost methods (``predict_cost``, ``acquisitions``, ``cost_report``) take the
            same argument and default.

        Returns
        -------
        ndarray
            (n_samples,) for regression and binary:logistic (probabilities),
            (n_samples, num_class) for multi:softprob.
        """
        if pred_leaf:
            return self._leaf_indices(X, iteration_range)
        t0, t1 = self._tree_range(iteration_range)
        _, offsets, outputs, nodes = self._flat(t0, t1)
        if isinstance(X, FeatureSource):      # from the leaves the walk reached
            leaves = self._leaf_indices(X, iteration_range)
            raw = np.tile(self.base_score, (leaves.shape[0], 1))
            add_leaf_values(leaves, nodes, offsets, outputs, raw, self.n_threads())
        else:
            X = self.prepare_input(X)
            raw = np.tile(self.base_score, (X.shape[0], 1))
            predict_raw(X, nodes, offsets, outputs, raw, self.n_threads())
        if output_margin:
            return raw[:, 0].copy() if raw.shape[1] == 1 else raw
        return self.transform(raw)

    def _staged_metric(self, data, metric):
        """``metric`` of ``data`` using rounds ``0..r``, for each round ``r``."""
        X = self.prepare_input(data)
        _, offsets, outputs, nodes = self._flat(0, len(self.trees))
        raw = np.tile(self.base_score, (X.shape[0], 1))
        scores = np.zeros(self.num_boosted_rounds())
        for r in range(self.num_boosted_rounds()):
            t0, t1 = self.iteration_indptr[r], self.iteration_indptr[r + 1]
            predict_raw(X, nodes[offsets[t0]:offsets[t1]], offsets[t0:t1 + 1] - offsets[t0],
                        outputs[t0:t1], raw, self.n_threads())
            scores[r] = evaluate_on(metric, data, self.transform(raw))
        return scores

    # -- files --------------------------------------------------------------------------
    def save_model(self, path: str | os.PathLike, format: str = "cbudget") -> None:
        """Write the model to ``path``.

        Parameters
        ----------
        path : str or os.PathLike
        format : {"cbudget", "xgboost"}
            "cbudget": cbudget's JSON model file (docs/architecture.md, "Model files"),
            read back by :func:`cbudget.load_model` with everything. "xgboost": an
            XGBoost JSON model that ``xgboost.Booster(model_file=path)`` loads (XGBoost
            2.1 and later) and that predicts as this model does on float32 inputs (up
            to float32 rounding of the margins); it does not carry the cost model, the
            per-node cost metadata or the training parameters, and the base scores are
            folded into the first round's leaves
            (:func:`cbudget.interop.to_xgboost.save_xgboost`). Gradient boosted models
            (gbdt, cegb, greedy_miser, imported) of objectives reg:squarederror,
            binary:logistic, multi:softprob, rank:pairwise and rank:ndcg only.

        Raises
        ------
        ValueError
            For an unknown ``format``, or a model XGBoost's format cannot hold.
        """
        if format == "cbudget":
            super().save_model(path)
        elif format == "xgboost":
            save_xgboost(self, path)
        else:
            raise ValueError(f"unknown model format {format!r}; valid: 'cbudget', 'xgboost'")

    def to_dict(self) -> dict[str, Any]:
        """The JSON document: the header, ``iteration_indptr``, ``base_score``, the trees
        (column arrays with per-node cost metadata) and, for CEGB and Greedy Miser, a
        section named after the algorithm with what a reader needs to interpret the
        per-node ``gain`` and ``cost_penalty``; a model whose first rounds were imported
        from another library, the ``imported_from`` section."""
        doc = model_header(self)
        doc["iteration_indptr"] = list(self.iteration_indptr)
        doc["base_score"] = self.base_score.tolist()
        doc["trees"] = [tree_to_dict(t, k) for t, k in zip(self.trees, self.tree_outputs)]
        if self.imported_from is not None:
            doc["imported_from"] = dict(self.imported_from)
        if self.algorithm in COST_AWARE_SECTIONS:
            p = self.params
            doc[self.algorithm] = {
                "cost_tradeoff": float(p["cost_tradeoff"]),
                "grow_policy": p["grow_policy"],
                "num_leaves": p["num_leaves"],
                "max_depth": p["max_depth"],
                "gain_scale": 0.5,
                "gradient_order": 1 if self.algorithm == "greedy_miser" else 2,
                "learning_rate": float(p["learning_rate"]),
            }
        return doc

    @classmethod
    def from_dict(cls, doc: dict[str, Any], *, expensive_model: Any = None) -> Booster:
        header = read_header(doc, cls.algorithms)
        num_class = require(doc, "num_class", int)
        objective, params = header.objective, header.params
        if num_class < 1 or (num_class > 1) != (objective == "multi:softprob"):
            raise invalid(f"num_class {num_class} does not fit objective {objective!r}")
        if params["algorithm"] in COST_AWARE_SECTIONS:
            section = require(doc, params["algorithm"], dict)
            params = checked_params(
                {**params, "cost_tradeoff": require(section, "cost_tradeoff", (int, float),
                                                    f"{params['algorithm']}.")},
                params["algorithm"])
        base_score = np.asarray(read_scores(doc), dtype=np.float64)
        n_scores = num_class if objective == "multi:softprob" else 1
        if base_score.shape != (n_scores,) or not np.all(np.isfinite(base_score)):
            raise invalid(f"base_score must hold {n_scores} finite numbers")
        model = build(cls, objective=objective, num_class=num_class, base_score=base_score,
                      feature_names=header.feature_names, cost_model=header.cost_model,
                      params=params)
        model.imported_from = read_imported_from(doc)
        trees, indptr = read_trees(doc, len(header.feature_names), model.n_outputs,
                                   one_tree_each=False)
        # rebuilt round by round, path costs recomputed: a file whose stored path costs or
        # tree outputs differ is refused by model_io's final comparison
        for t0, t1 in zip(indptr[:-1], indptr[1:]):
            model.add_round(tree for _, tree, _ in trees[t0:t1])
        return read_attributes(model, doc, model.num_iterations())

    def __repr__(self) -> str:
        return (f"<cbudget.Booster algorithm={self.algorithm} objective={self.objective} "
                f"rounds={self.num_boosted_rounds()} trees={len(self.trees)}>")

