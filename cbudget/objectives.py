"""Training objectives: initial score, gradients and hessians, output transform."""
from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
from scipy.special import expit

from ._core._loss import logistic_gradients, softmax, softmax_gradients, squared_error_gradients
from ._core._rank import ranking_gradients

if TYPE_CHECKING:  # only for type hints
    from .dataset import Dataset

__all__ = ["get_objective", "OBJECTIVES", "OBJECTIVE_ALIASES", "objective_name",
           "CustomObjective", "weighted_quantile", "REGRESSION_OBJECTIVES",
           "LOG_LINK_OBJECTIVES", "objective_params"]

class Objective:
    """Base class. Raw scores have shape (n_samples, n_outputs)."""

    # every objective sets both (None only on this abstract base)
    name: ClassVar[str] = None  # type: ignore[assignment]
    default_metric: ClassVar[str] = None  # type: ignore[assignment]

    # True: the gradients of a document depend on the other documents of its query
    needs_groups: ClassVar[bool] = False
    # not None: the loss has no useful hessian (absolute error, quantile): each new
    # tree's leaves are re-fitted to this quantile of their rows' residuals
    # (:meth:`renew_leaf_values`), as XGBoost and LightGBM do
    leaf_quantile: float | None = None

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

    def margin(self, value: float) -> float:
        """The raw score of a given ``base_score`` (a prediction: a probability for
        binary:logistic, a mean for the log-link objectives)."""
        return float(value)

    @property
    def metric(self) -> str:
        """The default metric of this instance (``default_metric`` with the
        objective's parameter where the metric takes one, e.g. ``quantile@0.9``)."""
        return self.default_metric

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


def _weighted_mean(y: np.ndarray, weight: np.ndarray | None) -> float:
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

    def margin(self, value: float) -> float:
        if not 0 < value < 1:
            raise ValueError("base_score for binary:logistic is a probability in (0, 1)")
        return float(np.log(value / (1 - value)))

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
    predictions are the scores (docs/user_guide/ranking.md, "How ranking works")."""

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


# -- regression objectives beyond squared error (XGBoost's definitions) ------------------
def weighted_quantile(values: np.ndarray, weight: np.ndarray | None, alpha: float) -> float:
    """The ``alpha`` quantile of ``values`` as XGBoost takes it: without weights, linear
    interpolation between order statistics at position ``alpha (n + 1)`` (NIST's
    definition, the ends clamped); with weights, the smallest value whose cumulative
    weight reaches ``alpha`` times the total (a step function). NaN for no values."""
    n = values.shape[0]
    if n == 0:
        return float("nan")
    if weight is None:
        # two order statistics: a partial sort (O(n)) finds them
        if alpha <= 1.0 / (n + 1):
            return float(values.min())
        if alpha >= n / (n + 1.0):
            return float(values.max())
        x = alpha * (n + 1)
        k = int(np.floor(x)) - 1
        d = x - 1 - k
        low, high = np.partition(values, (k, k + 1))[k:k + 2]
        return float(low + d * (high - low))
    order = np.argsort(values, kind="stable")
    cdf = np.cumsum(weight[order])
    index = min(int(np.searchsorted(cdf, alpha * cdf[-1], side="left")), n - 1)
    return float(values[order[index]])


def _fill(grad: np.ndarray, hess: np.ndarray, g: np.ndarray, h: np.ndarray,
          weight: np.ndarray | None) -> None:
    """``grad[:, 0] = g * weight``, ``hess[:, 0] = h * weight`` (weight None: 1)."""
    if weight is None:
        grad[:, 0], hess[:, 0] = g, h
    else:
        np.multiply(g, weight, out=grad[:, 0])
        np.multiply(h, weight, out=hess[:, 0])


class _Regression(Objective):
    """A single-output regression objective whose gradients are one NumPy expression of
    the raw score and the label (:meth:`loss_gradients`); identity link."""

    def loss_gradients(self, raw: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Per-row gradient and hessian of the loss (unweighted)."""
        raise NotImplementedError

    def gradients(self, raw: np.ndarray, y: np.ndarray, weight: np.ndarray | None,
                  grad: np.ndarray, hess: np.ndarray, n_threads: int = 1,
                  group_ptr: np.ndarray | None = None) -> None:
        g, h = self.loss_gradients(raw[:, 0], y)
        _fill(grad, hess, g, h, weight)

    def transform(self, raw: np.ndarray) -> np.ndarray:
        return raw[:, 0].copy()


class AbsoluteError(_Regression):
    """``reg:absoluteerror``: ``|raw - y|``; gradient ``sign(raw - y)``, hessian 1 (the
    true one is 0); each tree's leaves are re-fitted to the median of their rows'
    residuals ``y - raw`` (times ``learning_rate``), as XGBoost's adaptive leaves and
    LightGBM's ``regression_l1``. Base score: the weighted median label."""

    name = "reg:absoluteerror"
    default_metric = "mae"
    leaf_quantile = 0.5

    def base_score(self, y: np.ndarray, weight: np.ndarray | None) -> np.ndarray:
        return np.array([weighted_quantile(y, weight, 0.5)])

    def loss_gradients(self, raw: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return np.sign(raw - y), np.ones_like(y)


class QuantileError(_Regression):
    """``reg:quantileerror``: the pinball loss of quantile ``quantile_alpha`` (0.5),
    ``alpha (y - raw)`` above the label's prediction and ``(1 - alpha) (raw - y)``
    below; gradient ``-alpha`` where ``y >= raw`` else ``1 - alpha``, hessian 1; leaves
    re-fitted to the ``alpha`` quantile of their residuals (as XGBoost, LightGBM). Base
    score: the weighted ``alpha`` quantile of the labels. One quantile per model."""

    name = "reg:quantileerror"
    default_metric = "quantile"

    def __init__(self, num_class: int = 1, alpha: float = 0.5) -> None:
        super().__init__(num_class)
        self.alpha = float(alpha)
        self.leaf_quantile = self.alpha

    @property
    def metric(self) -> str:
        return metric_name_with("quantile", self.alpha, 0.5)

    def base_score(self, y: np.ndarray, weight: np.ndarray | None) -> np.ndarray:
        return np.array([weighted_quantile(y, weight, self.alpha)])

    def loss_gradients(self, raw: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        alpha = self.alpha
        return np.where(y >= raw, -alpha, 1.0 - alpha), np.ones_like(y)


class PseudoHuberError(_Regression):
    """``reg:pseudohubererror``: ``s^2 (sqrt(1 + ((raw - y) / s)^2) - 1)`` with slope
    ``s = huber_slope`` (1); gradient ``z / sqrt(1 + (z/s)^2)``, hessian ``(1 +
    (z/s)^2)^(-3/2)`` (``z = raw - y``), XGBoost's. Base score: the weighted median
    label (XGBoost fits one Newton step from 0, far off when the labels are far from 0
    and the slope small)."""

    name = "reg:pseudohubererror"
    default_metric = "mphe"

    def __init__(self, num_class: int = 1, slope: float = 1.0) -> None:
        super().__init__(num_class)
        self.slope = float(slope)

    @property
    def metric(self) -> str:
        return metric_name_with("mphe", self.slope, 1.0)

    def base_score(self, y: np.ndarray, weight: np.ndarray | None) -> np.ndarray:
        return np.array([weighted_quantile(y, weight, 0.5)])

    def loss_gradients(self, raw: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        z = raw - y
        scale = 1.0 + (z / self.slope) ** 2
        root = np.sqrt(scale)
        return z / root, 1.0 / (scale * root)


class _LogLink(_Regression):
    """Log link: predictions are ``exp(raw)``; a given ``base_score`` is a mean (> 0);
    the fitted one is the log of the weighted mean label (LightGBM's; the constant that
    minimises Poisson, Tweedie and gamma deviance alike)."""

    # what the labels must be: "non-negative" or "positive"
    label_domain = "non-negative"

    def check_label(self, y: np.ndarray) -> None:
        bad = y <= 0 if self.label_domain == "positive" else y < 0
        if np.any(bad):
            raise ValueError(f"{self.name} needs {self.label_domain} labels, got "
                             f"{int(np.count_nonzero(bad))} that are not (the smallest "
                             f"{float(np.min(y)):g})")
        if y.size and not np.any(y > 0):
            raise ValueError(f"{self.name} needs some positive label: the log of a mean of "
                             "0 is -inf")

    def base_score(self, y: np.ndarray, weight: np.ndarray | None) -> np.ndarray:
        return np.array([np.log(_weighted_mean(y, weight))])

    def margin(self, value: float) -> float:
        if not value > 0:
            raise ValueError(f"base_score for {self.name} is a mean, > 0; got {value!r}")
        return float(np.log(value))

    def transform(self, raw: np.ndarray) -> np.ndarray:
        return np.exp(raw[:, 0])


class Poisson(_LogLink):
    """``count:poisson``: the Poisson negative log-likelihood of mean ``exp(raw)``;
    gradient ``exp(raw) - y``, hessian ``exp(raw + poisson_max_delta_step)`` (0.7, the
    safeguard XGBoost and LightGBM use: a larger hessian, smaller steps)."""

    name = "count:poisson"
    default_metric = "poisson-nloglik"

    def __init__(self, num_class: int = 1, max_delta_step: float = 0.7) -> None:
        super().__init__(num_class)
        self.max_delta_step = float(max_delta_step)

    def loss_gradients(self, raw: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        mean = np.exp(raw)
        return mean - y, mean * np.exp(self.max_delta_step)


class Tweedie(_LogLink):
    """``reg:tweedie``: the Tweedie negative log-likelihood (up to terms without the
    prediction) of mean ``exp(raw)`` and variance power ``rho = tweedie_variance_power``
    in [1, 2) (1.5); gradient ``-y exp((1 - rho) raw) + exp((2 - rho) raw)``, hessian
    ``-y (1 - rho) exp((1 - rho) raw) + (2 - rho) exp((2 - rho) raw)``."""

    name = "reg:tweedie"
    default_metric = "tweedie-nloglik"

    def __init__(self, num_class: int = 1, variance_power: float = 1.5) -> None:
        super().__init__(num_class)
        self.rho = float(variance_power)

    @property
    def metric(self) -> str:
        return f"tweedie-nloglik@{self.rho:g}"      # XGBoost always names the power

    def loss_gradients(self, raw: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        a = np.exp((1.0 - self.rho) * raw)
        b = np.exp((2.0 - self.rho) * raw)
        return -y * a + b, -y * (1.0 - self.rho) * a + (2.0 - self.rho) * b


class Gamma(_LogLink):
    """``reg:gamma``: the gamma deviance of mean ``exp(raw)`` (log link); gradient ``1 -
    y exp(-raw)``, hessian ``y exp(-raw)``; labels > 0."""

    name = "reg:gamma"
    default_metric = "gamma-nloglik"
    label_domain = "positive"

    def loss_gradients(self, raw: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        ratio = y * np.exp(-raw)
        return 1.0 - ratio, ratio


def metric_name_with(base: str, value: float, default: float) -> str:
    """``base`` for the default parameter, else ``base@value``."""
    return base if value == default else f"{base}@{value:g}"


class CustomObjective(Objective):
    """A Python callable as the objective, as ``xgboost.train(obj=)`` takes it:
    ``obj(preds, dtrain) -> (grad, hess)``, ``preds`` the raw scores ((n,) or (n,
    n_outputs) for several outputs) and ``dtrain`` the training Dataset; ``grad`` and
    ``hess`` the same shape, the sample weights already applied. Everything else
    (labels check, base score, prediction transform, metrics, the name the model is
    saved with) is the declared objective's ``base``."""

    def __init__(self, base: Objective, function: Callable[[np.ndarray, Dataset], Any],
                 dtrain: Dataset) -> None:
        super().__init__(base.num_class)
        self.base, self.function, self.dtrain = base, function, dtrain
        self.name = base.name                       # type: ignore[misc]
        self.default_metric = base.default_metric   # type: ignore[misc]
        # a ranking objective's queries still count (sampling, the groups check)
        self.needs_groups = base.needs_groups       # type: ignore[misc]
        self.leaf_quantile = None

    @property
    def n_outputs(self) -> int:
        return self.base.n_outputs

    @property
    def metric(self) -> str:
        return self.base.metric

    def check_label(self, y: np.ndarray) -> None:
        self.base.check_label(y)

    def base_score(self, y: np.ndarray, weight: np.ndarray | None) -> np.ndarray:
        return self.base.base_score(y, weight)

    def margin(self, value: float) -> float:
        return self.base.margin(value)

    def transform(self, raw: np.ndarray) -> np.ndarray:
        return self.base.transform(raw)

    def gradients(self, raw: np.ndarray, y: np.ndarray, weight: np.ndarray | None,
                  grad: np.ndarray, hess: np.ndarray, n_threads: int = 1,
                  group_ptr: np.ndarray | None = None) -> None:
        preds = np.array(raw[:, 0] if raw.shape[1] == 1 else raw)   # a copy: theirs
        result = self.function(preds, self.dtrain)
        if not (isinstance(result, tuple) and len(result) == 2):
            raise TypeError(f"the custom objective must return (grad, hess), got "
                            f"{type(result).__name__}")
        for what, values, out in zip(("grad", "hess"), result, (grad, hess)):
            values = np.asarray(values, dtype=np.float64)
            if values.size != out.size:
                raise ValueError(f"the custom objective's {what} has {values.size} values; "
                                 f"it needs one per row and output, {out.shape}")
            if not np.all(np.isfinite(values)):
                raise ValueError(f"the custom objective's {what} holds NaN or infinity")
            out[...] = values.reshape(out.shape)


OBJECTIVES: dict[str, type[Objective]] = {
    cls.name: cls for cls in (SquaredError, BinaryLogistic, Softprob, LambdaRank,
                              PairwiseRank, AbsoluteError, PseudoHuberError, QuantileError,
                              Poisson, Tweedie, Gamma)}

# the objectives of one real prediction per input that is no class probability
REGRESSION_OBJECTIVES = ("reg:squarederror", "reg:absoluteerror", "reg:pseudohubererror",
                         "reg:quantileerror", "count:poisson", "reg:tweedie", "reg:gamma")

# LightGBM's names (and XGBoost's older ones) for the same objectives: training takes
# them and saves the model under the canonical name. LightGBM's ``huber`` is the true
# Huber loss, not the pseudo-Huber one: not an alias.
OBJECTIVE_ALIASES = {
    "regression": "reg:squarederror", "regression_l2": "reg:squarederror",
    "l2": "reg:squarederror", "mse": "reg:squarederror", "reg:linear": "reg:squarederror",
    "regression_l1": "reg:absoluteerror", "l1": "reg:absoluteerror",
    "mae": "reg:absoluteerror", "quantile": "reg:quantileerror",
    "poisson": "count:poisson", "tweedie": "reg:tweedie", "gamma": "reg:gamma",
    "binary": "binary:logistic", "multiclass": "multi:softprob",
    "softmax": "multi:softprob", "lambdarank": "rank:ndcg",
}


def objective_name(value: Any, name: str = "objective") -> str:
    """The canonical name of objective ``value`` (one of :data:`OBJECTIVES` or an alias
    of :data:`OBJECTIVE_ALIASES`): a parameter check (ValueError for an unknown name,
    TypeError for a callable: give that as ``obj=``)."""
    if callable(value):
        raise TypeError(f"parameter {name} is a name; give a custom objective as "
                        "cbudget.train(..., obj=function) (the estimators: "
                        "objective=function)")
    if not isinstance(value, str):
        raise TypeError(f"parameter {name} must be a str, got {value!r}")
    value = OBJECTIVE_ALIASES.get(value, value)
    if value not in OBJECTIVES:
        raise ValueError(f"unknown {name} {value!r}; valid: {sorted(OBJECTIVES)} (or "
                         f"LightGBM's names {sorted(OBJECTIVE_ALIASES)})")
    return value


# objective -> (its class's keyword, the training parameter, its default)
_OBJECTIVE_PARAMS = {
    "reg:quantileerror": ("alpha", "quantile_alpha", 0.5),
    "reg:pseudohubererror": ("slope", "huber_slope", 1.0),
    "reg:tweedie": ("variance_power", "tweedie_variance_power", 1.5),
    "count:poisson": ("max_delta_step", "poisson_max_delta_step", 0.7),
}


def objective_params(name: str, params: dict | None) -> dict[str, float]:
    """The parameter of objective ``name`` that has one (``quantile_alpha``,
    ``huber_slope``, ``tweedie_variance_power``, ``poisson_max_delta_step``) as
    ``params`` give it, else its default: ``{}`` for the other objectives."""
    if name not in _OBJECTIVE_PARAMS:
        return {}
    _, param, default = _OBJECTIVE_PARAMS[name]
    value = (params or {}).get(param)
    return {param: float(default if value is None else value)}


# the objectives whose predictions are exp(raw score)
LOG_LINK_OBJECTIVES = ("count:poisson", "reg:tweedie", "reg:gamma")


def get_objective(name: str, num_class: int | None, params: dict | None = None) -> Objective:
    """Objective instance for ``name`` (ValueError for an unknown one).

    Parameters
    ----------
    name : str
        A key of :data:`OBJECTIVES` ("reg:squarederror", "binary:logistic",
        "multi:softprob", "rank:ndcg", "rank:pairwise", "reg:absoluteerror",
        "reg:pseudohubererror", "reg:quantileerror", "count:poisson", "reg:tweedie",
        "reg:gamma") or an alias of :data:`OBJECTIVE_ALIASES`.
    num_class : int or None
        The number of classes, >= 2, for multi:softprob; None or 1 for the others.
    params : dict, optional
        Training parameters: the ranking objectives read
        ``lambdarank_truncation_level`` and ``lambdarank_norm`` (default 30 and True);
        ``quantile_alpha`` (0.5), ``huber_slope`` (1), ``tweedie_variance_power``
        (1.5) and ``poisson_max_delta_step`` (0.7) their objectives'.

    Returns
    -------
    Objective
    """
    name = objective_name(name)
    if name == "multi:softprob":
        if num_class is None or num_class < 2:
            raise ValueError("multi:softprob needs num_class >= 2")
    elif num_class not in (None, 1):
        raise ValueError(f"num_class={num_class} is only for multi:softprob")
    params = params or {}
    if name in ("rank:ndcg", "rank:pairwise"):
        return OBJECTIVES[name](1, params.get("lambdarank_truncation_level", 30),  # type: ignore[call-arg]
                                params.get("lambdarank_norm", True))
    if name in _OBJECTIVE_PARAMS:
        (value,) = objective_params(name, params).values()
        return OBJECTIVES[name](1, **{_OBJECTIVE_PARAMS[name][0]: value})  # type: ignore[arg-type]
    # num_class is an int >= 2 for multi:softprob (checked above)
    return OBJECTIVES[name](num_class if name == "multi:softprob" else 1)  # type: ignore[arg-type]
