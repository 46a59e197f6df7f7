"""Booster: an additive ensemble of regression trees (gbdt, cegb, greedy_miser)."""
from typing import NamedTuple

import numpy as np

from ._core._predict import predict_raw
from ._ensemble import TreeEnsemble
from .dataset import Dataset
from .metrics import check_metric, evaluate_metric, metric_maximize
from .objectives import get_objective

__all__ = ["Booster", "BudgetChoice"]


class BudgetChoice(NamedTuple):
    """Result of :meth:`Booster.best_iteration_within_budget`: predict with
    ``iteration_range=(0, iteration + 1)``."""
    iteration: int
    cost: float
    score: float
    metric: str


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

    def __init__(self, *, objective, num_class, base_score, feature_names, cost_model,
                 params):
        super().__init__(feature_names=feature_names, cost_model=cost_model, params=params)
        self.objective = objective
        self._objective = get_objective(objective, num_class if num_class > 1 else None)
        self.num_class = int(num_class)
        self.base_score = np.asarray(base_score, dtype=np.float64)

    def num_boosted_rounds(self):
        """Number of boosting rounds."""
        return self.num_iterations()

    # -- prediction -------------------------------------------------------------------
    def predict(self, X, *, output_margin=False, pred_leaf=False, iteration_range=None):
        """Predict.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features), DataFrame, sparse or Dataset
        output_margin : bool
            Raw scores (before the sigmoid / softmax).
        pred_leaf : bool
            Return the leaf index reached in each tree, int32 (n_samples, n_trees).
        iteration_range : (begin, end), optional
            Use rounds ``begin <= r < end`` (``end = 0``: up to the last). Default: all.
            After early stopping: ``(0, booster.best_iteration + 1)``.

        Returns
        -------
        ndarray
            (n_samples,) for regression and binary:logistic (probabilities),
            (n_samples, num_class) for multi:softprob.
        """
        X = self._prepare(X)
        t0, t1 = self._tree_range(iteration_range)
        _, offsets, outputs, nodes = self._flat(t0, t1)
        if pred_leaf:
            return self._leaf_indices(X, iteration_range)
        raw = np.tile(self.base_score, (X.shape[0], 1))
        predict_raw(X, nodes, offsets, outputs, raw, self._n_threads())
        if output_margin:
            return raw[:, 0].copy() if raw.shape[1] == 1 else raw
        return self._objective.transform(raw)

    def _staged_scores(self, data, metric):
        """``metric`` of ``data`` using rounds ``0..r``, for each round ``r``."""
        X = self._prepare(data)
        _, offsets, outputs, nodes = self._flat(0, len(self.trees))
        raw = np.tile(self.base_score, (X.shape[0], 1))
        scores = np.zeros(self.num_boosted_rounds())
        for r in range(self.num_boosted_rounds()):
            t0, t1 = self.iteration_indptr[r], self.iteration_indptr[r + 1]
            predict_raw(X, nodes[offsets[t0]:offsets[t1]], offsets[t0:t1 + 1] - offsets[t0],
                        outputs[t0:t1], raw, self._n_threads())
            scores[r] = evaluate_metric(metric, data.label, self._objective.transform(raw),
                                        data.weight)
        return scores

    def best_iteration_within_budget(self, data, budget, *, metric=None):
        """The round whose model (rounds ``0..r``) scores best on ``data`` among those
        whose mean prediction cost on ``data`` is at most ``budget``.

        The cost can only grow with the rounds, so the candidates are the first rounds
        up to the last one within budget. Ties go to the earlier (cheaper) round.

        Parameters
        ----------
        data : Dataset with labels (validation data)
        budget : float
        metric : str, optional
            Default: the objective's metric (e.g. ``mlogloss``).

        Returns
        -------
        BudgetChoice
            ``(iteration, cost, score, metric)``.

        Raises
        ------
        ValueError
            If even the first round costs more than ``budget``.
        """
        if not isinstance(data, Dataset) or data.label is None:
            raise TypeError("data must be a cbudget.Dataset with labels")
        budget = float(budget)
        if not budget >= 0:
            raise ValueError(f"budget must be >= 0, got {budget}")
        if self.num_boosted_rounds() == 0:
            raise ValueError("the model has no rounds")
        metric = metric or self._objective.default_metric
        check_metric(metric, self.objective)
        curve = self.cost_curve(data)
        within = np.flatnonzero(curve <= budget)
        if within.size == 0:
            raise ValueError(f"no round is within budget {budget}: the first round alone "
                             f"costs {curve[0]:.6g} per input")
        scores = self._staged_scores(data, metric)[within]
        best = int(np.argmax(scores) if metric_maximize(metric) else np.argmin(scores))
        r = int(within[best])
        return BudgetChoice(iteration=r, cost=float(curve[r]), score=float(scores[best]),
                            metric=metric)

    def __repr__(self):
        return (f"<cbudget.Booster algorithm={self.algorithm} objective={self.objective} "
                f"rounds={self.num_boosted_rounds()} trees={len(self.trees)}>")
