"""The cost path: models along a grid of trade-offs, as glmnet's lasso path.

:func:`cost_path` finds from the data ``lambda_max``, the smallest ``cost_tradeoff`` at
which no split can pay its cost (:func:`cbudget.lambda_max`), trains a geometric grid of
trade-offs from there down to ``lambda_max * eps``, and returns the frontier: mean
prediction cost and validation score of each model, the Pareto-optimal ones marked, and
:meth:`CostPath.select` for the best model within a budget.
"""
from __future__ import annotations

import warnings
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import numpy as np

from ._core._openmp_helpers import resolve_n_threads
from ._model import Model
from .dataset import Dataset
from .metrics import metric_maximize
from .training import lambda_max as find_lambda_max
from .training import train

__all__ = ["CostPath", "cost_path", "pareto_mask"]


def pareto_mask(costs: np.ndarray, scores: np.ndarray, maximize: bool) -> np.ndarray:
    """True for the points no other point beats: none is at most as costly and scores
    strictly better, or is cheaper and scores as well (of equal points the first is
    kept; a NaN score is never optimal).
    """
    costs = np.asarray(costs, dtype=np.float64)
    signed = np.asarray(scores, dtype=np.float64) * (1.0 if maximize else -1.0)
    mask = np.zeros(costs.shape[0], dtype=bool)
    best = -np.inf
    # cheapest first; among equal costs the best score first
    for i in np.lexsort((-np.nan_to_num(signed, nan=-np.inf), costs)):
        if signed[i] > best:   # False for NaN
            mask[i] = True
            best = signed[i]
    return mask


@dataclass
class CostPath:
    """The result of :func:`cost_path`, one entry per trade-off, largest first.

    Attributes
    ----------
    lambdas : ndarray
        The ``cost_tradeoff`` of each model.
    costs : ndarray
        Mean prediction cost per input on the validation data.
    scores : ndarray
        The validation metric (of the best iteration after early stopping).
    metric : str
    maximize : bool
        Whether a larger score is better.
    models : list of Model
    pareto : ndarray of bool
        The Pareto-optimal points: none of the others is cheaper and at least as good.
    lambda_max : float or None
        The trade-off the grid starts from (None when the grid was given).
    """

    lambdas: np.ndarray
    costs: np.ndarray
    scores: np.ndarray
    metric: str
    maximize: bool
    models: list[Model] = field(repr=False)
    pareto: np.ndarray
    lambda_max: float | None = None

    def __len__(self) -> int:
        return len(self.models)

    def best_index(self, budget: float) -> int:
        """The index of the best-scoring model whose mean validation cost is at most
        ``budget`` (ties: the cheaper one). ValueError when none is."""
        budget = float(budget)
        if not budget >= 0:
            raise ValueError(f"budget must be >= 0, got {budget}")
        within = np.flatnonzero(self.costs <= budget)
        if within.size == 0:
            raise ValueError(f"no model of the path is within budget {budget:g}: the "
                             f"cheapest costs {self.costs.min():.6g} per input")
        signed = self.scores[within] * (1.0 if self.maximize else -1.0)
        order = np.lexsort((self.costs[within], -signed))
        return int(within[order[0]])

    def select(self, budget: float) -> Model:
        """The best model (validation score) whose mean validation cost per input is
        at most ``budget``."""
        return self.models[self.best_index(budget)]

    def __str__(self) -> str:
        lines = [f"{'lambda':>12} {'mean cost':>12} {self.metric:>12}  pareto"]
        for lam, cost, score, best in zip(self.lambdas, self.costs, self.scores, self.pareto):
            lines.append(f"{lam:>12.4g} {cost:>12.6g} {score:>12.6g}  {'*' if best else ''}")
        return "\n".join(lines)


def cost_path(params: dict, dtrain: Dataset, dvalid: Dataset, *, n_points: int = 10,
              eps: float = 1e-3, lambdas=None, num_boost_round: int = 100,
              early_stopping_rounds: int | None = None, metric: str | None = None,
              n_jobs: int = 1, **train_kwargs) -> CostPath:
    """Train one model per trade-off along a geometric grid and return the frontier.

    Parameters
    ----------
    params : dict
        As for :func:`cbudget.train`; ``cost_tradeoff`` is set per point.
    dtrain, dvalid : Dataset
        Training and validation data (``dvalid`` built with ``reference=dtrain``); the
        costs and scores are measured on ``dvalid``.
    n_points : int, default 10
        Grid size: ``lambda_max * eps ** (i / (n_points - 1))`` for i = 0..n_points-1.
    eps : float, default 1e-3
        The smallest trade-off as a fraction of ``lambda_max``.
    lambdas : sequence of float, optional
        The trade-offs to train instead of the grid: for the algorithms without a
        ``lambda_max`` (CSTC, CSCC, Cronus, ADAPT), or a grid of your own.
    num_boost_round, early_stopping_rounds, **train_kwargs
        Passed to :func:`cbudget.train` (e.g. ``expensive_model``, ``callbacks``).
    metric : str, optional
        The validation metric (default: the algorithm's).
    n_jobs : int, default 1
        Models trained at the same time (threads; -1: one per core). With more than
        one, each model trains on ``cores / n_jobs`` threads unless ``params`` sets
        ``n_jobs``.

    Returns
    -------
    CostPath
    """
    if not isinstance(dvalid, Dataset) or dvalid.label is None:
        raise TypeError("dvalid must be a cbudget.Dataset with labels")
    start = None
    if lambdas is None:
        if isinstance(n_points, bool) or not isinstance(n_points, (int, np.integer)) \
                or n_points < 2:
            raise ValueError(f"n_points must be an integer >= 2, got {n_points!r}")
        if not 0 < eps < 1:
            raise ValueError(f"eps must be in (0, 1), got {eps!r}")
        start = find_lambda_max(params, dtrain, xgb_model=train_kwargs.get("xgb_model"))
        if start == 0:
            raise ValueError("no split that costs anything has a positive gain on this "
                             "data: every trade-off gives the same model")
        grid = start * eps ** (np.arange(n_points) / (n_points - 1))
    else:
        grid = np.sort(np.asarray(lambdas, dtype=np.float64).reshape(-1))[::-1]
        if grid.size == 0 or not np.all(np.isfinite(grid)) or np.any(grid < 0):
            raise ValueError("lambdas must be finite numbers >= 0")
    workers = min(resolve_n_threads(n_jobs), grid.size)
    base = dict(params)
    if metric is not None:
        base["eval_metric"] = metric
    if workers > 1 and "n_jobs" not in base:
        base["n_jobs"] = max(1, resolve_n_threads(-1) // workers)

    def fit(lam: float) -> tuple[Model, str, float]:
        log: dict = {}
        model = train(dict(base, cost_tradeoff=float(lam)), dtrain, num_boost_round,
                      evals=[(dvalid, "valid")], early_stopping_rounds=early_stopping_rounds,
                      evals_result=log, verbose_eval=False, **train_kwargs)
        name = list(log["valid"])[-1]    # the metric early stopping watches
        values = log["valid"][name]
        best = model.best_iteration if model.best_iteration is not None else len(values) - 1
        return model, name, float(values[min(best, len(values) - 1)])

    with warnings.catch_warnings():
        # the model at lambda_max has no split by design: no warning about it
        warnings.filterwarnings("ignore", message=".*no split could pay its cost")
        if workers > 1:
            with ThreadPoolExecutor(max_workers=workers) as pool:
                fitted = list(pool.map(fit, grid))
        else:
            fitted = [fit(lam) for lam in grid]
    models = [model for model, _, _ in fitted]
    metric_name = fitted[0][1]
    scores = np.array([score for _, _, score in fitted])
    costs = np.array([float(model.predict_cost(dvalid).mean()) for model in models])
    maximize = metric_maximize(metric_name)
    return CostPath(lambdas=grid, costs=costs, scores=scores, metric=metric_name,
                    maximize=maximize, models=models,
                    pareto=pareto_mask(costs, scores, maximize), lambda_max=start)

