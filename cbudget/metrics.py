"""Evaluation metrics on transformed predictions (probabilities / values / scores).

Every metric of :data:`METRICS` takes ``(y, pred, weight)``: the labels (n_samples,);
the predictions -- values for regression, P(y = 1) of shape (n_samples,) for binary
classification, class probabilities (n_samples, n_classes) for multi-class; sample
weights (n_samples,) or None (all 1). It returns a float.

The regression metrics are XGBoost's: ``rmse``, ``mae``, ``mphe`` (pseudo-Huber),
``quantile`` (pinball), ``poisson-nloglik``, ``gamma-nloglik``, ``gamma-deviance`` and
``tweedie-nloglik``; those with a parameter take it after ``@`` (``mphe@2``,
``quantile@0.9``, ``tweedie-nloglik@1.2``; the bare name has the default 1, 0.5, 1.5).

The ranking metrics score each query's documents in the order of ``pred`` (highest
first; ties in row order) and average over the queries (docs/user_guide/ranking.md,
"How ranking works"); they need the query groups. Their names:

* ``ndcg@k``: normalised discounted cumulative gain of the top ``k`` (gain
  ``2**label - 1``, discount ``1 / log2(1 + position)``); a query whose ideal DCG is 0
  (every label 0) scores 1, as in LightGBM. ``ndcg``: the whole list.
* ``precision@k``: the share of the top ``min(k, documents)`` that are relevant,
  ``label >= 1``; ``precision@k>=t``: relevant means ``label >= t`` (the papers'
  precision@5 on Yahoo!'s 0-4 grades is ``precision@5>=3``).
* ``map@k`` / ``map@k>=t``: mean average precision of the top ``k``, divided by
  ``min(k, relevant documents)``; a query without relevant documents scores 1, as in
  LightGBM.

A query's weight is the mean weight of its documents.
"""
from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

__all__ = ["METRICS", "RANKING_OBJECTIVES", "evaluate_metric", "evaluate_on",
           "metric_maximize", "is_metric", "check_metric", "ranking_metric", "ranking_hint",
           "parametric_metric"]

_EPS = 1e-15


def _avg(values: np.ndarray, weight: np.ndarray | None) -> float:
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
        # imported here: scipy.stats alone takes over a second to import
        from scipy.stats import rankdata
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


def mae(y: np.ndarray, pred: np.ndarray, weight: np.ndarray | None) -> float:
    """Mean absolute error."""
    return _avg(np.abs(pred - y), weight)


def mphe(y: np.ndarray, pred: np.ndarray, weight: np.ndarray | None,
         slope: float = 1.0) -> float:
    """Mean pseudo-Huber error ``s^2 (sqrt(1 + ((pred - y) / s)^2) - 1)``, slope ``s``
    (``mphe@s``; XGBoost's ``huber_slope``, default 1)."""
    return _avg(slope ** 2 * (np.sqrt(1.0 + ((pred - y) / slope) ** 2) - 1.0), weight)


def quantile(y: np.ndarray, pred: np.ndarray, weight: np.ndarray | None,
             alpha: float = 0.5) -> float:
    """Mean pinball loss of quantile ``alpha`` (``quantile@alpha``, default 0.5):
    ``alpha (y - pred)`` where ``y >= pred``, else ``(1 - alpha) (pred - y)``."""
    d = y - pred
    return _avg(np.where(d >= 0, alpha * d, (alpha - 1.0) * d), weight)


def poisson_nloglik(y: np.ndarray, pred: np.ndarray, weight: np.ndarray | None) -> float:
    """Poisson negative log-likelihood ``lgamma(y + 1) + p - y log(p)`` of means ``p``
    (clipped below at 1e-16), XGBoost's ``poisson-nloglik``."""
    from scipy.special import gammaln
    p = np.maximum(pred, 1e-16)
    return _avg(gammaln(y + 1.0) + p - np.log(p) * y, weight)


def gamma_nloglik(y: np.ndarray, pred: np.ndarray, weight: np.ndarray | None) -> float:
    """Gamma negative log-likelihood with dispersion 1, ``y / p + log(p)`` of means
    ``p`` (clipped below at 1e-6), XGBoost's ``gamma-nloglik``."""
    p = np.maximum(pred, 1e-6)
    return _avg(y / p + np.log(p), weight)


def gamma_deviance(y: np.ndarray, pred: np.ndarray, weight: np.ndarray | None) -> float:
    """Gamma deviance ``2 (log(p / y) + y / p - 1)`` (1e-6 added to both), XGBoost's
    ``gamma-deviance``."""
    p, t = pred + 1e-6, y + 1e-6
    return 2.0 * _avg(np.log(p / t) + t / p - 1.0, weight)


def tweedie_nloglik(y: np.ndarray, pred: np.ndarray, weight: np.ndarray | None,
                    rho: float = 1.5) -> float:
    """Tweedie negative log-likelihood (the terms with the prediction) of means ``p``
    and variance power ``rho`` (``tweedie-nloglik@rho``): ``-y p^(1 - rho) / (1 - rho)
    + p^(2 - rho) / (2 - rho)``."""
    log_p = np.log(np.maximum(pred, 1e-16))
    if rho == 1.0:      # the limit: Poisson's terms with the prediction
        return _avg(np.exp(log_p) - y * log_p, weight)
    return _avg(-y * np.exp((1.0 - rho) * log_p) / (1.0 - rho)
                + np.exp((2.0 - rho) * log_p) / (2.0 - rho), weight)


METRICS: dict[str, Callable[[np.ndarray, np.ndarray, np.ndarray | None], float]] = {
    "rmse": rmse, "logloss": logloss, "error": error, "auc": auc,
    "mlogloss": mlogloss, "merror": merror, "mae": mae, "mphe": mphe, "quantile": quantile,
    "poisson-nloglik": poisson_nloglik, "gamma-nloglik": gamma_nloglik,
    "gamma-deviance": gamma_deviance, "tweedie-nloglik": tweedie_nloglik}
# metrics with a parameter, ``name@value``: its check and its default (the bare name)
_PARAMETRIC: dict[str, tuple[Callable[[float], bool], str, float]] = {
    "mphe": (lambda s: s > 0, "> 0 (the slope)", 1.0),
    "quantile": (lambda a: 0 < a < 1, "in (0, 1) (the quantile)", 0.5),
    "tweedie-nloglik": (lambda r: 1 <= r < 2, "in [1, 2) (the variance power)", 1.5),
}
_MAXIMIZE = {"auc"}
RANKING_OBJECTIVES = ("rank:ndcg", "rank:pairwise")
# any single-output prediction of a value takes these
_VALUE_METRICS = {"rmse", "mae", "mphe", "quantile"}
_LOG_LINK_METRICS = _VALUE_METRICS | {"poisson-nloglik", "tweedie-nloglik"}
_FOR_OBJECTIVE = {"reg:squarederror": _VALUE_METRICS,
                  "reg:absoluteerror": _VALUE_METRICS,
                  "reg:pseudohubererror": _VALUE_METRICS,
                  "reg:quantileerror": _VALUE_METRICS,
                  "count:poisson": _LOG_LINK_METRICS,
                  "reg:tweedie": _LOG_LINK_METRICS,
                  "reg:gamma": _LOG_LINK_METRICS | {"gamma-nloglik", "gamma-deviance"},
                  "binary:logistic": {"logloss", "error", "auc", "rmse"},
                  "multi:softprob": {"mlogloss", "merror"},
                  **{name: set() for name in RANKING_OBJECTIVES}}
# objectives whose single score per document can rank a query's documents: regression
# on the relevance (CSTC's and Greedy Miser's papers), P(relevant), the ranking ones
_RANKABLE = ("reg:squarederror", "binary:logistic", *RANKING_OBJECTIVES)


def parametric_metric(name: str) -> tuple[str, float] | None:
    """``(base name, parameter)`` of a metric with a parameter (``quantile@0.9``,
    ``mphe@2``, ``tweedie-nloglik@1.2``; the bare name has the default); None for
    another name; ValueError for a bad parameter."""
    if not isinstance(name, str):
        return None
    base, at, text = name.partition("@")
    if base not in _PARAMETRIC:
        return None
    check, what, default = _PARAMETRIC[base]
    if not at:
        return base, default
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not check(value):
        raise ValueError(f"eval_metric {name!r}: the value after @ must be {what}")
    return base, value


# -- ranking metrics ------------------------------------------------------------------
class RankingMetric(NamedTuple):
    """A parsed ranking metric name: ``kind@top>=threshold``."""
    kind: str                  # "ndcg", "map" or "precision"
    top: int | None            # None: the whole list
    threshold: float           # the least relevant label (map, precision)


_RANKING_NAME = re.compile(r"(ndcg|map|precision)(?:@([0-9]+))?(?:>=([0-9]+(?:\.[0-9]*)?))?")


def ranking_metric(name: str) -> RankingMetric | None:
    """The parsed ranking metric ``name``; None when it is not one (ValueError for a
    ranking name with a bad cut-off or threshold)."""
    match = _RANKING_NAME.fullmatch(name) if isinstance(name, str) else None
    if match is None:
        return None
    kind, top, threshold = match.groups()
    if top is not None and int(top) < 1:
        raise ValueError(f"eval_metric {name!r}: the cut-off after @ must be >= 1")
    if threshold is not None and kind == "ndcg":
        raise ValueError(f"eval_metric {name!r}: ndcg uses the graded labels; a relevance "
                         "threshold (>=t) applies to map and precision")
    return RankingMetric(kind, None if top is None else int(top),
                         1.0 if threshold is None else float(threshold))


def _ordered_labels(y: np.ndarray, score: np.ndarray, query: np.ndarray) -> np.ndarray:
    """The labels of each query's documents in descending order of ``score`` (ties in
    row order), queries one after another."""
    return y[np.lexsort((-score, query))]


def _per_query_ranking(metric: RankingMetric, y: np.ndarray, pred: np.ndarray,
                       group_ptr: np.ndarray) -> np.ndarray:
    """The metric of each query."""
    sizes = np.diff(group_ptr)
    n_queries = sizes.shape[0]
    query = np.repeat(np.arange(n_queries), sizes)
    position = np.arange(y.shape[0]) - group_ptr[query]      # 0 = the top
    top = position.shape[0] if metric.top is None else metric.top
    in_top = position < top
    ranked = _ordered_labels(y, pred, query)
    if metric.kind == "ndcg":
        if np.any(y < 0):
            raise ValueError("ndcg needs labels >= 0 (graded relevance)")
        discount = np.where(in_top, 1.0 / np.log2(position + 2.0), 0.0)
        dcg = np.bincount(query, weights=np.expm1(ranked * np.log(2.0)) * discount,
                          minlength=n_queries)
        ideal = np.bincount(query, weights=np.expm1(_ordered_labels(y, y, query)
                                                    * np.log(2.0)) * discount,
                            minlength=n_queries)
        return np.divide(dcg, ideal, out=np.ones(n_queries), where=ideal > 0)
    relevant = (ranked >= metric.threshold) & in_top
    relevant_in_top = np.bincount(query, weights=relevant, minlength=n_queries)
    if metric.kind == "precision":
        return relevant_in_top / np.minimum(sizes, top)
    # map: precision at each relevant position of the top, summed; hits counts the
    # relevant documents of the query up to each position
    hits = np.cumsum(relevant) - np.repeat(np.cumsum(relevant_in_top) - relevant_in_top,
                                           sizes)
    average = np.bincount(query, weights=np.where(relevant, hits / (position + 1.0), 0.0),
                          minlength=n_queries)
    n_relevant = np.minimum(np.bincount(query, weights=y >= metric.threshold,
                                        minlength=n_queries), top)
    return np.divide(average, n_relevant, out=np.ones(n_queries), where=n_relevant > 0)


def _ranking_value(metric: RankingMetric, name: str, y: np.ndarray, pred: np.ndarray,
                   weight: np.ndarray | None, group_ptr: np.ndarray | None) -> float:
    if group_ptr is None:
        raise ValueError(f"eval_metric {name!r} ranks the documents of each query: the "
                         "data needs its query groups (Dataset(..., group=sizes) or qid=)")
    if pred.ndim != 1:
        raise ValueError(f"eval_metric {name!r} ranks by one score per document, not by "
                         f"predictions of shape {pred.shape}")
    values = _per_query_ranking(metric, y, pred, group_ptr)
    if weight is None:
        return float(values.mean())
    query_weight = np.add.reduceat(weight, group_ptr[:-1]) / np.diff(group_ptr)
    return _avg(values, query_weight)


# -- what the rest of the package calls ------------------------------------------------
def ranking_hint(objective: Any, instead: str) -> str:
    """For an algorithm without the ranking objectives: what to do instead (appended
    to its error message), or "" when ``objective`` is not a ranking one."""
    if objective not in RANKING_OBJECTIVES:
        return ""
    return (f"; {objective} is for gbdt, cegb and greedy_miser. To rank with this "
            f"algorithm, train it {instead} on Dataset(..., group=) data and evaluate with "
            "the ranking metrics (eval_metric='ndcg@5', 'precision@5>=3')")


def is_metric(name: Any) -> bool:
    """Whether ``name`` is a metric cbudget knows (a key of :data:`METRICS` or a
    ranking metric name)."""
    try:
        return (name in METRICS or ranking_metric(name) is not None
                or parametric_metric(name) is not None)
    except (TypeError, ValueError):
        return False


def check_metric(name: str, objective_name: str) -> None:
    """ValueError unless ``name`` is a metric that applies to the objective.

    Parameters
    ----------
    name : str
        A key of :data:`METRICS` or a ranking metric (``ndcg@5``, ``precision@5>=3``).
    objective_name : str
        The model's objective, e.g. "reg:squarederror" or "rank:ndcg".
    """
    if ranking_metric(name) is not None:
        if objective_name not in _RANKABLE:
            raise ValueError(f"eval_metric {name!r} ranks documents by one score each; "
                             f"{objective_name} predicts one per class: use one of "
                             f"{sorted(_FOR_OBJECTIVE[objective_name])}")
        return
    parametric = parametric_metric(name)
    base = name if parametric is None else parametric[0]
    if base not in METRICS:
        raise ValueError(f"unknown eval_metric {name!r}; valid: {sorted(METRICS)} (mphe@s, "
                         "quantile@alpha, tweedie-nloglik@rho: with their parameter) and "
                         "the ranking metrics ndcg@k, map@k, precision@k (>=t: the least "
                         "relevant label)")
    if base not in _FOR_OBJECTIVE[objective_name]:
        valid = sorted(_FOR_OBJECTIVE[objective_name]) or ["ndcg@k", "map@k", "precision@k"]
        raise ValueError(f"eval_metric {name!r} does not apply to {objective_name}; use one "
                         f"of {valid}")


def metric_maximize(name: str) -> bool:
    """Whether a higher value of metric ``name`` is better (auc, the ranking metrics),
    not a lower one.

    Parameters
    ----------
    name : str

    Returns
    -------
    bool
    """
    return name in _MAXIMIZE or ranking_metric(name) is not None


def _evaluate(name: str, y: np.ndarray, pred: np.ndarray, weight: np.ndarray | None,
              group_ptr: np.ndarray | None) -> float:
    ranking = ranking_metric(name)
    if ranking is not None:
        return _ranking_value(ranking, name, y, pred, weight, group_ptr)
    parametric = parametric_metric(name)
    if parametric is not None:
        return METRICS[parametric[0]](y, pred, weight, parametric[1])  # type: ignore[call-arg]
    if name not in METRICS:
        raise ValueError(f"unknown metric {name!r}")
    return METRICS[name](y, pred, weight)


def evaluate_metric(name: str, y: np.ndarray, pred: np.ndarray,
                    weight: np.ndarray | None = None, *, group: Any = None) -> float:
    """Value of metric ``name`` for labels ``y`` and transformed predictions ``pred``.

    Parameters
    ----------
    name : str
        A key of :data:`METRICS` or a ranking metric (``ndcg@5``, ``map@10``,
        ``precision@5>=3``: see the module's documentation).
    y : ndarray of shape (n_samples,)
    pred : ndarray of shape (n_samples,) or (n_samples, num_class)
        Probabilities, values or ranking scores (not raw margins of a classifier).
    weight : ndarray of shape (n_samples,), optional
    group : array-like of int, optional
        The ranking metrics: the number of rows of each query, in row order.

    Returns
    -------
    float
    """
    y, pred = np.asarray(y, dtype=np.float64), np.asarray(pred, dtype=np.float64)
    if weight is not None:
        weight = np.asarray(weight, dtype=np.float64)
        if weight.shape != y.shape or not np.all(np.isfinite(weight) & (weight >= 0)):
            raise ValueError(f"weight must hold a finite, non-negative value per label "
                             f"({y.shape[0]})")
    group_ptr = None
    if group is not None:
        sizes = np.asarray(group, dtype=np.int64)
        if sizes.ndim != 1 or np.any(sizes <= 0) or int(sizes.sum()) != y.shape[0]:
            raise ValueError(f"group must hold positive query sizes summing to the "
                             f"{y.shape[0]} rows")
        group_ptr = np.concatenate(([0], np.cumsum(sizes)))
    return _evaluate(name, y, pred, weight, group_ptr)


def evaluate_on(name: str, data: Any, pred: np.ndarray) -> float:
    """Value of metric ``name`` of predictions ``pred`` on a labelled
    :class:`cbudget.Dataset` (its labels, weights and query groups).

    Parameters
    ----------
    name : str
    data : Dataset with labels
    pred : ndarray of shape (n_samples,) or (n_samples, num_class)

    Returns
    -------
    float
    """
    return _evaluate(name, data.label, pred, data.weight, data.group_ptr)
