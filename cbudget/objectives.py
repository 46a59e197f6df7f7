"""Training objectives: initial score, gradients and hessians, output transform."""
from __future__ import annotations

from typing import ClassVar

import numpy as np
from scipy.special import expit, softmax

from ._core._loss import logistic_gradients, softmax_gradients, squared_error_gradients

__all__ = ["get_objective", "OBJECTIVES"]

class Objective:
    """Base class. Raw scores have shape (n_samples, n_outputs)."""

    # every objective sets both (None only on this abstract base)
    name: ClassVar[str] = None  # type: ignore[assignment]
    default_metric: ClassVar[str] = None  # type: ignore[assignment]

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
                  grad: np.ndarray, hess: np.ndarray, n_threads: int = 1) -> None:
        """Fill ``grad`` and ``hess`` (shape (n_samples, n_outputs), Fortran order) in
        place from the raw scores (shape (n_samples, n_outputs), C order)."""
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
                  grad: np.ndarray, hess: np.ndarray, n_threads: int = 1) -> None:
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
                  grad: np.ndarray, hess: np.ndarray, n_threads: int = 1) -> None:
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
                  grad: np.ndarray, hess: np.ndarray, n_threads: int = 1) -> None:
        softmax_gradients(raw, y, weight, grad, hess, n_threads)

    def transform(self, raw: np.ndarray) -> np.ndarray:
        return softmax(raw, axis=1)


OBJECTIVES: dict[str, type[Objective]] = {
    cls.name: cls for cls in (SquaredError, BinaryLogistic, Softprob)}


def get_objective(name: str, num_class: int | None) -> Objective:
    """Objective instance for ``name`` (ValueError for an unknown one).

    Parameters
    ----------
    name : str
        "reg:squarederror", "binary:logistic" or "multi:softprob".
    num_class : int or None
        The number of classes, >= 2, for multi:softprob; None or 1 for the others.

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
    # num_class is an int >= 2 for multi:softprob (checked above)
    return OBJECTIVES[name](num_class if name == "multi:softprob" else 1)  # type: ignore[arg-type]
