"""Training objectives: initial score, gradients and hessians, output transform."""
from __future__ import annotations

from typing import ClassVar

import numpy as np
from scipy.special import expit

from ._core._loss import logistic_gradients, softmax, softmax_gradients, squared_error_gradients
from ._core._rank import ranking_gradients

__all__ = ["get_objective", "OBJECTIVES"]

class Objective:
    """Base class. Raw scores have shape (n_samples, n_outputs)."""

    # every objective sets both (None only on this abstract base)
    name: ClassVar[str] = None  # type: ignore[assignment]
    default_metric: ClassVar[str] = None  # type: ignore[assignment]

    # True: the gradients of a document depend on the other documents of its query
    needs_groups: ClassVar[bool] = False

    def __init__(self, num_class: int = 1) -> None:
        self.num_class = num_class

    @property
    def n_outputs(self) -> int:
        """Raw scores per input: one per class for multi:softprob, else one."""
        return 1

    def check_label(self, y: np.ndarray) -> None:
        """Raise ValueError if the labels do not fit the objective."""

    def base_score(self, y: np.ndarray, weight: np.ndarray | None) -> np.ndarray:
        """Initial raw score per output, shape (n_outputs,)."""
        raise NotImplementedError

    def gradients(self, raw: np.ndarray, y: np.ndarray, weight: np.ndarray | None,
                  grad: np.ndarray, hess: np.ndarray, n_threads: int = 1,
                  group_ptr: np.ndarray | None = None) -> None:
        """Fill ``grad`` and ``hess`` (shape (n_samples, n_outputs), Fortran order) in
        place from the raw scores (shape (n_samples, n_outputs), C order); the ranking
        objectives read the query boundaries ``group_ptr``
        (:attr:`cbudget.Dataset.group_ptr`)."""
        raise NotImplementedError

    def transform(self, raw: np.ndarray) -> np.ndarray:
        """Raw scores (n, n_outputs) -> predictions: (n,) or (n, num_class)."""
        raise NotImplementedError


def _weighted_mean(y, weight):
    return float(np.average(y, weights=weight))


class SquaredError(Objective):
    """``reg:squarederror``: half the squared error; the base score is the weighted mean
    label and predictions are the raw scores."""

    name = "reg:squarederror"
    default_metric = "rmse"

    def base_score(self, y: np.ndarray, weight: np.ndarray | None) -> np.ndarray:
        return np.array([_weighted_mean(y, weight)])

    def gradients(self, raw: np.ndarray, y: np.ndarray, weight: np.ndarray | None,
                  grad: np.ndarray, hess: np.ndarray, n_threads: int = 1,
                  group_ptr: np.ndarray | None = None) -> None:
        squared_error_gradients(np.ascontiguousarray(raw[:, 0]), y, weight, grad[:, 0],
                                hess[:, 0], n_threads)

    def transform(self, raw: np.ndarray) -> np.ndarray:
        return raw[:, 0].copy()


class BinaryLogistic(Objective):
    """``binary:logistic``: the log-loss of ``sigmoid(raw)`` for labels in [0, 1]; the
    base score is the log-odds of the weighted mean label and predictions are
    probabilities."""

    name = "binary:logistic"
    default_metric = "logloss"

    def check_label(self, y: np.ndarray) -> None:
        if np.any((y < 0) | (y > 1)):
            raise ValueError("binary:logistic needs labels in [0, 1]")

    def base_score(self, y: np.ndarray, weight: np.ndarray | None) -> np.ndarray:
        p = np.clip(_weighted_mean(y, weight), 1e-12, 1 - 1e-12)
        return np.array([np.log(p / (1 - p))])

    def gradients(self, raw: np.ndarray, y: np.ndarray, weight: np.ndarray | None,
                  grad: np.ndarray, hess: np.ndarray, n_threads: int = 1,
                  group_ptr: np.ndarray | None = None) -> None:
        logistic_gradients(np.ascontiguousarray(raw[:, 0]), y, weight, grad[:, 0],
                           hess[:, 0], n_threads)

    def transform(self, raw: np.ndarray) -> np.ndarray:
        return expit(raw[:, 0])


class Softprob(Objective):
    """``multi:softprob``: the cross-entropy of ``softmax(raw)`` for integer classes
    0..num_class-1; the base score is the centred log class priors and predictions are
    class probabilities, (n_samples, num_class)."""

    name = "multi:softprob"
    default_metric = "mlogloss"

    @property
    def n_outputs(self) -> int:
        return self.num_class

    def check_label(self, y: np.ndarray) -> None:
        if np.any((y < 0) | (y >= self.num_class) | (y != np.floor(y))):
            raise ValueError(f"multi:softprob needs integer labels in [0, num_class="
                             f"{self.num_class})")

    def base_score(self, y: np.ndarray, weight: np.ndarray | None) -> np.ndarray:
        # Log class priors, centred (LightGBM's boost-from-average for softmax).
        counts = np.bincount(y.astype(np.int64), weights=weight, minlength=self.num_class)
        priors = np.clip(counts / counts.sum(), 1e-12, None)
        logp = np.log(priors)
        return logp - logp.mean()

    def gradients(self, raw: np.ndarray, y: np.ndarray, weight: np.ndarray | None,
                  grad: np.ndarray, hess: np.ndarray, n_threads: int = 1,
                  group_ptr: np.ndarray | None = None) -> None:
        softmax_gradients(raw, y, weight, grad, hess, n_threads)

    def transform(self, raw: np.ndarray) -> np.ndarray:
        # the probabilities the gradients use (the same arithmetic), on one thread
        prob = np.empty(raw.shape)
        softmax(np.asarray(raw, dtype=np.float64), prob, 1)
        return prob


# LightGBM's limit too: 2**31 - 1 is the largest gain a 32-bit label gain table holds
MAX_RANK_LABEL = 31


class LambdaRank(Objective):
    """``rank:ndcg``: LambdaMART (Burges, 2010), with LightGBM's ``lambdarank``
    formulas: for each pair of a query's documents with different labels, one of them
    among the top ``truncation_level`` of the current ranking, the RankNet gradient
    ``sigmoid(s_low - s_high)`` weighted by the change of NDCG@``truncation_level`` that
    swapping them makes (gain ``2**label - 1``); with ``normalize``, the weight is divided
    by ``0.01 + |s_high - s_low|`` and each query's lambdas are scaled by
    ``log2(1 + sum) / sum``. Labels are relevance grades 0..31; base score 0;
    predictions are the scores (docs/architecture.md, "Learning to rank")."""

    name = "rank:ndcg"
    default_metric = "ndcg@5"
    needs_groups = True
    lambdarank = True

    def __init__(self, num_class: int = 1, truncation_level: int = 30,
                 normalize: bool = True) -> None:
        super().__init__(num_class)
        self.truncation_level = int(truncation_level)
        self.normalize = bool(normalize)

    def check_label(self, y: np.ndarray) -> None:
        if np.any((y < 0) | (y > MAX_RANK_LABEL) | (y != np.floor(y))):
            raise ValueError(f"{self.name} needs relevance labels that are integers in "
                             f"[0, {MAX_RANK_LABEL}] (its gain is 2**label - 1)")

    def base_score(self, y: np.ndarray, weight: np.ndarray | None) -> np.ndarray:
        return np.zeros(1)   # only the order of a query's scores counts

    def gradients(self, raw: np.ndarray, y: np.ndarray, weight: np.ndarray | None,
                  grad: np.ndarray, hess: np.ndarray, n_threads: int = 1,
                  group_ptr: np.ndarray | None = None) -> None:
        if group_ptr is None:
            raise ValueError(f"{self.name} needs the query groups of the training data")
        ranking_gradients(np.ascontiguousarray(raw[:, 0]), y, weight, group_ptr,
                          self.lambdarank, self.truncation_level, self.normalize, 1.0,
                          grad[:, 0], hess[:, 0], n_threads)

    def transform(self, raw: np.ndarray) -> np.ndarray:
        return raw[:, 0].copy()


class PairwiseRank(LambdaRank):
    """``rank:pairwise``: RankNet's pairwise logistic loss ``log(1 + exp(s_low -
    s_high))`` summed over every pair of a query's documents with different labels
    (any finite labels: only their order counts); base score 0; predictions are the
    scores."""

    name = "rank:pairwise"
    lambdarank = False

    def check_label(self, y: np.ndarray) -> None:
        pass      # Dataset already refuses non-finite labels; any order works


OBJECTIVES: dict[str, type[Objective]] = {
    cls.name: cls for cls in (SquaredError, BinaryLogistic, Softprob, LambdaRank,
                              PairwiseRank)}


def get_objective(name: str, num_class: int | None, params: dict | None = None) -> Objective:
    """Objective instance for ``name`` (ValueError for an unknown one).

    Parameters
    ----------
    name : str
        "reg:squarederror", "binary:logistic", "multi:softprob", "rank:ndcg" or
        "rank:pairwise".
    num_class : int or None
        The number of classes, >= 2, for multi:softprob; None or 1 for the others.
    params : dict, optional
        Training parameters: the ranking objectives read
        ``lambdarank_truncation_level`` and ``lambdarank_norm`` (default 30 and True).

    Returns
    -------
    Objective
    """
    if name not in OBJECTIVES:
        raise ValueError(f"unknown objective {name!r}; valid: {sorted(OBJECTIVES)}")
    if name == "multi:softprob":
        if num_class is None or num_class < 2:
            raise ValueError("multi:softprob needs num_class >= 2")
    elif num_class not in (None, 1):
        raise ValueError(f"num_class={num_class} is only for multi:softprob")
    if name in ("rank:ndcg", "rank:pairwise"):
        params = params or {}
        return OBJECTIVES[name](1, params.get("lambdarank_truncation_level", 30),  # type: ignore[call-arg]
                                params.get("lambdarank_norm", True))
    # num_class is an int >= 2 for multi:softprob (checked above)
    return OBJECTIVES[name](num_class if name == "multi:softprob" else 1)  # type: ignore[arg-type]
