"""Evaluation metrics on transformed predictions (probabilities / values).

Every metric takes ``(y, pred, weight)``: the labels (n_samples,); the predictions --
values for regression, P(y = 1) of shape (n_samples,) for binary classification, class
probabilities (n_samples, n_classes) for multi-class; sample weights (n_samples,) or
None (all 1). It returns a float.
"""
from __future__ import annotations

from collections.abc import Callable

import numpy as np
from scipy.stats import rankdata

__all__ = ["METRICS", "evaluate_metric", "metric_maximize"]

_EPS = 1e-15


def _avg(values, weight):
    return float(np.average(values, weights=weight))


def rmse(y: np.ndarray, pred: np.ndarray, weight: np.ndarray | None) -> float:
    """Root mean squared error."""
    return float(np.sqrt(_avg((pred - y) ** 2, weight)))


def logloss(y: np.ndarray, pred: np.ndarray, weight: np.ndarray | None) -> float:
    """Binary log-loss (probabilities clipped to [1e-15, 1 - 1e-15])."""
    p = np.clip(pred, _EPS, 1 - _EPS)
    return _avg(-(y * np.log(p) + (1 - y) * np.log(1 - p)), weight)


def error(y: np.ndarray, pred: np.ndarray, weight: np.ndarray | None) -> float:
    """Binary error rate: the share of inputs with ``pred > 0.5`` and ``y <= 0.5`` or
    the other way round."""
    return _avg((pred > 0.5) != (y > 0.5), weight)


def auc(y: np.ndarray, pred: np.ndarray, weight: np.ndarray | None) -> float:
    """Area under the ROC curve (ties count one half), weighted by sample weight;
    NaN when one class has no weight."""
    pos = y > 0.5
    w = np.ones_like(pred) if weight is None else weight
    w_pos, w_neg = w[pos].sum(), w[~pos].sum()
    if w_pos == 0 or w_neg == 0:
        return float("nan")
    if weight is None:
        ranks = rankdata(pred)
        return float((ranks[pos].sum() - pos.sum() * (pos.sum() + 1) / 2)
                     / (pos.sum() * (~pos).sum()))
    order = np.argsort(pred, kind="mergesort")
    p_sorted, w_sorted, pos_sorted = pred[order], w[order], pos[order]
    # Sum over positives of (negative weight below + half the negative weight tied).
    uniq, start = np.unique(p_sorted, return_index=True)
    neg_w = np.where(pos_sorted, 0.0, w_sorted)
    pos_w = np.where(pos_sorted, w_sorted, 0.0)
    neg_per = np.add.reduceat(neg_w, start)
    pos_per = np.add.reduceat(pos_w, start)
    neg_below = np.concatenate(([0.0], np.cumsum(neg_per)[:-1]))
    return float(np.sum(pos_per * (neg_below + 0.5 * neg_per)) / (w_pos * w_neg))


def mlogloss(y: np.ndarray, pred: np.ndarray, weight: np.ndarray | None) -> float:
    """Multi-class log-loss (probabilities clipped below at 1e-15)."""
    p = np.clip(pred[np.arange(y.shape[0]), y.astype(np.int64)], _EPS, 1.0)
    return _avg(-np.log(p), weight)


def merror(y: np.ndarray, pred: np.ndarray, weight: np.ndarray | None) -> float:
    """Multi-class error rate: the share of inputs whose most probable class is not
    their label."""
    return _avg(np.argmax(pred, axis=1) != y.astype(np.int64), weight)


METRICS: dict[str, Callable[[np.ndarray, np.ndarray, np.ndarray | None], float]] = {
    "rmse": rmse, "logloss": logloss, "error": error, "auc": auc,
           "mlogloss": mlogloss, "merror": merror}
_MAXIMIZE = {"auc"}
_FOR_OBJECTIVE = {"reg:squarederror": {"rmse"},
                  "binary:logistic": {"logloss", "error", "auc", "rmse"},
                  "multi:softprob": {"mlogloss", "merror"}}


def check_metric(name: str, objective_name: str) -> None:
    """ValueError unless ``name`` is a metric that applies to the objective.

    Parameters
    ----------
    name : str
        A key of :data:`METRICS`.
    objective_name : str
        "reg:squarederror", "binary:logistic" or "multi:softprob".
    """
    if name not in METRICS:
        raise ValueError(f"unknown eval_metric {name!r}; valid: {sorted(METRICS)}")
    if name not in _FOR_OBJECTIVE[objective_name]:
        raise ValueError(f"eval_metric {name!r} does not apply to {objective_name}; use one "
                         f"of {sorted(_FOR_OBJECTIVE[objective_name])}")


def metric_maximize(name: str) -> bool:
    """Whether a higher value of metric ``name`` is better (auc), not a lower one.

    Parameters
    ----------
    name : str

    Returns
    -------
    bool
    """
    return name in _MAXIMIZE


def evaluate_metric(name: str, y: np.ndarray, pred: np.ndarray,
                    weight: np.ndarray | None = None) -> float:
    """Value of metric ``name`` for labels ``y`` and transformed predictions ``pred``.

    Parameters
    ----------
    name : str
        A key of :data:`METRICS`.
    y : ndarray of shape (n_samples,)
    pred : ndarray of shape (n_samples,) or (n_samples, num_class)
        Probabilities or values (not raw margins).
    weight : ndarray of shape (n_samples,), optional

    Returns
    -------
    float
    """
    return METRICS[name](y, pred, weight)
