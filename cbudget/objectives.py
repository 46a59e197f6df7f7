"""Training objectives: initial score, gradients and hessians, output transform."""
import numpy as np
from scipy.special import expit, softmax

from ._core._loss import logistic_gradients, softmax_gradients, squared_error_gradients

__all__ = ["get_objective", "OBJECTIVES"]

class Objective:
    """Base class. Raw scores have shape (n_samples, n_outputs)."""

    name = None
    default_metric = None

    def __init__(self, num_class=1):
        self.num_class = num_class

    @property
    def n_outputs(self):
        return 1

    def check_label(self, y):
        """Raise ValueError if the labels do not fit the objective."""

    def base_score(self, y, weight):
        """Initial raw score per output, shape (n_outputs,)."""
        raise NotImplementedError

    def gradients(self, raw, y, weight, grad, hess, n_threads=1):
        """Fill ``grad`` and ``hess`` (shape (n_samples, n_outputs), Fortran order) in
        place from the raw scores (shape (n_samples, n_outputs), C order)."""
        raise NotImplementedError

    def transform(self, raw):
        """Raw scores (n, n_outputs) -> predictions: (n,) or (n, num_class)."""
        raise NotImplementedError


def _weighted_mean(y, weight):
    return float(np.average(y, weights=weight))


class SquaredError(Objective):
    name = "reg:squarederror"
    default_metric = "rmse"

    def base_score(self, y, weight):
        return np.array([_weighted_mean(y, weight)])

    def gradients(self, raw, y, weight, grad, hess, n_threads=1):
        squared_error_gradients(np.ascontiguousarray(raw[:, 0]), y, weight, grad[:, 0],
                                hess[:, 0], n_threads)

    def transform(self, raw):
        return raw[:, 0].copy()


class BinaryLogistic(Objective):
    name = "binary:logistic"
    default_metric = "logloss"

    def check_label(self, y):
        if np.any((y < 0) | (y > 1)):
            raise ValueError("binary:logistic needs labels in [0, 1]")

    def base_score(self, y, weight):
        p = np.clip(_weighted_mean(y, weight), 1e-12, 1 - 1e-12)
        return np.array([np.log(p / (1 - p))])

    def gradients(self, raw, y, weight, grad, hess, n_threads=1):
        logistic_gradients(np.ascontiguousarray(raw[:, 0]), y, weight, grad[:, 0],
                           hess[:, 0], n_threads)

    def transform(self, raw):
        return expit(raw[:, 0])


class Softprob(Objective):
    name = "multi:softprob"
    default_metric = "mlogloss"

    @property
    def n_outputs(self):
        return self.num_class

    def check_label(self, y):
        if np.any((y < 0) | (y >= self.num_class) | (y != np.floor(y))):
            raise ValueError(f"multi:softprob needs integer labels in [0, num_class="
                             f"{self.num_class})")

    def base_score(self, y, weight):
        # Log class priors, centred (LightGBM's boost-from-average for softmax).
        counts = np.bincount(y.astype(np.int64), weights=weight, minlength=self.num_class)
        priors = np.clip(counts / counts.sum(), 1e-12, None)
        logp = np.log(priors)
        return logp - logp.mean()

    def gradients(self, raw, y, weight, grad, hess, n_threads=1):
        softmax_gradients(raw, y, weight, grad, hess, n_threads)

    def transform(self, raw):
        return softmax(raw, axis=1)


OBJECTIVES = {cls.name: cls for cls in (SquaredError, BinaryLogistic, Softprob)}


def get_objective(name, num_class):
    """Objective instance for ``name`` (ValueError for an unknown one)."""
    if name not in OBJECTIVES:
        raise ValueError(f"unknown objective {name!r}; valid: {sorted(OBJECTIVES)}")
    if name == "multi:softprob":
        if num_class is None or num_class < 2:
            raise ValueError("multi:softprob needs num_class >= 2")
    elif num_class not in (None, 1):
        raise ValueError(f"num_class={num_class} is only for multi:softprob")
    return OBJECTIVES[name](num_class if name == "multi:softprob" else 1)
