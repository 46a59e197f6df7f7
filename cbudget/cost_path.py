"""The cost path: models along a grid of trade-offs, as glmnet's lasso path.

:func:`cost_path` finds from the data ``lambda_max``, the smallest ``cost_tradeoff`` at
which no split can pay its cost (:func:`cbudget.lambda_max`), trains a geometric grid of
trade-offs from there down to ``lambda_max * eps``, and returns the frontier: mean
prediction cost and validation score of each model, the Pareto-optimal ones marked, and
:meth:`CostPath.select` for the best model within a budget.
"""
from __future__ import annotations

import warnings
from collections.abc import Iterator
from concurrent.futures import Executor, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np

from ._core._openmp_helpers import resolve_n_threads
from ._model import Model, NotApplicableError
from .booster import Booster
from .dataset import Dataset
from .exits import check_epsilon
from .metrics import RANKING_OBJECTIVES, evaluate_on, metric_maximize
from .model_io import algorithms_of
from .training import lambda_max as find_lambda_max
from .training import train

__all__ = ["CostPath", "ScoredModel", "cost_path", "pareto_mask", "train_scored"]

# A point placed in a cost gap whose log(1 + cost) is within this share of the gap from
# an end's did not narrow it: the path jumps there (not split again). Small, because a
# cost only a little above the jump's lower end (Letters: 9.9 next to 10.9, below a jump
# from 0) is still a model worth having.
STEP_TOLERANCE = 0.02


class ScoredModel(NamedTuple):
    """A model of a path or a sweep (:func:`train_scored`) and how it does on the
    validation data."""
    model: Model
    metric: str      # the validation metric (the one early stopping watches)
    score: float     # its value at the best iteration (the last without early stopping)
    cost: float      # mean prediction cost per input


def train_scored(params: dict, dtrain: Dataset, dvalid: Dataset, num_boost_round: int = 100,
                 *, early_stopping_rounds: int | None = None, **train_kwargs) -> ScoredModel:
    """Train with ``params`` (quietly, ``dvalid`` evaluated as "valid") and score the
    model on ``dvalid``: one point of :func:`cost_path`, or of a parameter sweep.
    ``train_kwargs``: the other arguments of :func:`cbudget.train`."""
    log: dict = {}
    model = train(params, dtrain, num_boost_round, evals=[(dvalid, "valid")],
                  early_stopping_rounds=early_stopping_rounds, evals_result=log,
                  verbose_eval=False, **train_kwargs)
    name = list(log["valid"])[-1]    # the metric early stopping watches
    values = log["valid"][name]
    best = model.best_iteration if model.best_iteration is not None else len(values) - 1
    return ScoredModel(model, name, float(values[min(best, len(values) - 1)]),
                       float(model.predict_cost(dvalid).mean()))


@contextmanager
def _no_lambda_max_warning() -> Iterator[None]:
    # the model at lambda_max has no split by design: no warning about it
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*no split could pay its cost")
        yield


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
    epsilons : ndarray or None
        With ``exit_epsilons``: the epsilon of each model's exit rules
        (:meth:`cbudget.Booster.calibrate_exits`), NaN for a model without exits; None
        without that dimension.
    """

    lambdas: np.ndarray
    costs: np.ndarray
    scores: np.ndarray
    metric: str
    maximize: bool
    models: list[Model] = field(repr=False)
    pareto: np.ndarray
    lambda_max: float | None = None
    epsilons: np.ndarray | None = None

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
        exits = self.epsilons is not None
        lines = [f"{'lambda':>12}" + (f" {'epsilon':>8}" if exits else "")
                 + f" {'mean cost':>12} {self.metric:>12}  pareto"]
        epsilons = self.epsilons if self.epsilons is not None else [None] * len(self)
        for lam, eps, cost, score, best in zip(self.lambdas, epsilons, self.costs,
                                                self.scores, self.pareto):
            column = "" if eps is None else f" {'-' if np.isnan(eps) else f'{eps:g}':>8}"
            lines.append(f"{lam:>12.4g}{column} {cost:>12.6g} {score:>12.6g}  "
                         f"{'*' if best else ''}")
        return "\n".join(lines)


def cost_path(params: dict, dtrain: Dataset, dvalid: Dataset, *, n_points: int = 16,
              eps: float = 1e-3, lambdas=None, num_boost_round: int = 100,
              early_stopping_rounds: int | None = None, metric: str | None = None,
              n_jobs: int = 1, executor: Executor | None = None,
              exit_epsilons=None, exit_every: int = 1, exit_tolerance: float | None = None,
              **train_kwargs) -> CostPath:
    """Train one model per trade-off from ``lambda_max`` down and return the frontier.

    The grid: about half of ``n_points`` geometric from ``lambda_max`` to ``lambda_max *
    eps``, and 0 (no cost penalty, the most accurate end); the other points are placed
    one at a time in the widest gap of mean validation cost between neighbouring
    trade-offs (on a log(1 + cost) scale; below the smallest positive one, one geometric
    step further), so that the frontier covers the costs evenly wherever along lambda
    they change. A gap that a point between does not narrow (the point's log(1 + cost)
    within 2% of the gap from an end's) is a jump of the path, e.g. right below
    ``lambda_max``, where the first affordable split makes the next ones cheap: it is
    not split again.

    Parameters
    ----------
    params : dict
        As for :func:`cbudget.train`; ``cost_tradeoff`` is set per point.
    dtrain, dvalid : Dataset
        Training and validation data (``dvalid`` built with ``reference=dtrain``); the
        costs and scores are measured on ``dvalid``.
    n_points : int, default 16
        Models trained (at least 3).
    eps : float, default 1e-3
        The smallest positive trade-off of the geometric part, as a fraction of
        ``lambda_max``.
    lambdas : sequence of float, optional
        The trade-offs to train instead: for the algorithms without a ``lambda_max``
        (CSTC, CSCC, Cronus, ADAPT), or a grid of your own.
    num_boost_round, early_stopping_rounds, **train_kwargs
        Passed to :func:`cbudget.train` (e.g. ``expensive_model``, ``callbacks``).
    metric : str, optional
        The validation metric (default: the algorithm's).
    n_jobs : int, default 1
        Models trained at the same time (threads; -1: one per core). With more than
        one, each model trains on ``cores / n_jobs`` threads unless ``params`` sets
        ``n_jobs``. The models do not depend on it.
    executor : concurrent.futures.Executor, optional
        Train the models on it instead (not with ``n_jobs``), each on one thread unless
        ``params`` sets ``n_jobs``: the first grid at once, then the points placed in
        the cost gaps one by one. The function it is given is a closure that holds the
        data: an executor of other processes must pickle it with cloudpickle, and
        should send it once, not with every point (:func:`cbudget.dask.cost_path` does
        both on a Dask cluster). The models do not depend on it.
    exit_epsilons : sequence of float, optional
        The path's exit dimension (boosters: gbdt, cegb, greedy_miser): besides each
        model, one copy of it per epsilon with exit rules calibrated on ``dvalid``
        (:meth:`cbudget.Booster.calibrate_exits` with ``every=exit_every``), scored and
        costed with its exits (``CostPath.epsilons``). Scores and costs are measured on
        the data the exits were calibrated on.
    exit_every : int, default 1
    exit_tolerance : float, optional
        Regression's exits: how far an exited prediction may be from the full one.

    Returns
    -------
    CostPath
        Its entries ordered by trade-off, largest first (with exits: each model, then its
        copies by epsilon).
    """
    if not isinstance(dvalid, Dataset) or dvalid.label is None:
        raise TypeError("dvalid must be a cbudget.Dataset with labels")
    start = None
    n_refine = 0
    if lambdas is None:
        if isinstance(n_points, bool) or not isinstance(n_points, (int, np.integer)) \
                or n_points < 3:
            raise ValueError(f"n_points must be an integer >= 3, got {n_points!r}")
        if not 0 < eps < 1:
            raise ValueError(f"eps must be in (0, 1), got {eps!r}")
        start = find_lambda_max(params, dtrain, xgb_model=train_kwargs.get("xgb_model"))
        if start == 0:
            raise ValueError("no split that costs anything has a positive gain on this "
                             "data: every trade-off gives the same model")
        n_geometric = max(2, (n_points - 1) // 2 + 1)
        step = eps ** (1.0 / (n_geometric - 1))
        grid = np.append(start * step ** np.arange(n_geometric), 0.0)
        n_refine = n_points - grid.size
    else:
        grid = np.sort(np.asarray(lambdas, dtype=np.float64).reshape(-1))[::-1]
        if grid.size == 0 or not np.all(np.isfinite(grid)) or np.any(grid < 0):
            raise ValueError("lambdas must be finite numbers >= 0")
    if exit_epsilons is not None:
        exit_epsilons = _check_exit_options(params, exit_epsilons, exit_every, exit_tolerance)
    if executor is not None and n_jobs != 1:
        raise ValueError("give n_jobs (local threads) or an executor, not both")
    workers = min(resolve_n_threads(n_jobs), grid.size)
    base = dict(params)
    if metric is not None:
        base["eval_metric"] = metric
    if executor is not None and "n_jobs" not in base:
        base["n_jobs"] = 1
    elif workers > 1 and "n_jobs" not in base:
        base["n_jobs"] = max(1, resolve_n_threads(-1) // workers)

    def fit(lam: float) -> ScoredModel:
        return train_scored(dict(base, cost_tradeoff=float(lam)), dtrain, dvalid,
                            num_boost_round, early_stopping_rounds=early_stopping_rounds,
                            **train_kwargs)

    def fit_elsewhere(lam: float) -> ScoredModel:
        with _no_lambda_max_warning():   # the filter below does not reach the executor
            return fit(lam)

    def fit_all(lams: list[float]) -> dict[float, ScoredModel]:
        if executor is not None:
            return dict(zip(lams, executor.map(fit_elsewhere, lams)))
        if workers > 1 and len(lams) > 1:
            with ThreadPoolExecutor(max_workers=workers) as pool:
                return dict(zip(lams, pool.map(fit, lams)))
        return {lam: fit(lam) for lam in lams}

    with _no_lambda_max_warning():
        fitted = fit_all(grid.tolist())
        steps: set = set()   # gaps a point between did not narrow: jumps of the path
        for _ in range(n_refine):   # one at a time: the same models whatever n_jobs
            pick = _widest_cost_gap(fitted, step, steps)
            if pick is None:
                break
            lam, high, low = pick
            fitted.update(fit_all([lam]))
            # the point's cost next to one end's: the whole jump is on its other side
            cost, cost_high, cost_low = np.log1p([fitted[x][3] for x in (lam, high, low)])
            if abs(cost - cost_low) < STEP_TOLERANCE * abs(cost_low - cost_high):
                steps.add((high, lam))
            elif abs(cost - cost_high) < STEP_TOLERANCE * abs(cost_low - cost_high):
                steps.add((lam, low))
    order = sorted(fitted, reverse=True)
    metric_name = fitted[order[0]][1]
    points = [(lam, np.nan, fitted[lam]) for lam in order]
    if exit_epsilons is not None:
        points = [point for lam, eps, scored in points
                  for point in [(lam, eps, scored)]
                  + [(lam, e, _with_exits(scored, dvalid, e, exit_every, exit_tolerance))
                     for e in exit_epsilons]]
    scores = np.array([scored.score for _, _, scored in points])
    costs = np.array([scored.cost for _, _, scored in points])
    maximize = metric_maximize(metric_name)
    return CostPath(lambdas=np.array([lam for lam, _, _ in points]), costs=costs,
                    scores=scores, metric=metric_name, maximize=maximize,
                    models=[scored.model for _, _, scored in points],
                    pareto=pareto_mask(costs, scores, maximize), lambda_max=start,
                    epsilons=None if exit_epsilons is None
                    else np.array([eps for _, eps, _ in points]))


def _check_exit_options(params: dict, epsilons, every: int, tolerance: float | None
                        ) -> list[float]:
    """The exit dimension's epsilons, sorted, once its options are checked (before any
    training)."""
    epsilons = sorted({check_epsilon(e) for e in epsilons})
    algorithm = params.get("algorithm", "gbdt")
    boosters = algorithms_of(Booster)
    if algorithm not in boosters:
        raise NotApplicableError(f"exit_epsilons applies to boosters ({', '.join(boosters)}), "
                                 f"not to {algorithm!r}")
    objective = params.get("objective", "reg:squarederror")
    if objective in RANKING_OBJECTIVES:
        raise NotApplicableError(f"exit_epsilons does not apply to {objective}: a document's "
                                 "place depends on its query's other documents")
    if isinstance(every, bool) or not isinstance(every, int) or every < 1:
        raise ValueError(f"exit_every must be an integer >= 1, got {every!r}")
    regression = objective not in ("binary:logistic", "multi:softprob")
    if regression and tolerance is None:
        raise ValueError(f"exit_epsilons with {objective} needs exit_tolerance: how far an "
                         "exited prediction may be from the full model's")
    if not regression and tolerance is not None:
        raise ValueError("exit_tolerance is for regression; classes agree or do not")
    return epsilons


def _with_exits(scored: ScoredModel, dvalid: Dataset, epsilon: float, every: int,
                tolerance: float | None) -> ScoredModel:
    """A copy of the scored booster with exit rules calibrated on ``dvalid``, scored and
    costed there with its exits."""
    assert isinstance(scored.model, Booster)
    model = scored.model.copy()
    model.calibrate_exits(dvalid, epsilon, every=every, tolerance=tolerance)
    return ScoredModel(model, scored.metric, evaluate_on(scored.metric, dvalid,
                                                         model.predict(dvalid)),
                       float(model.predict_cost(dvalid).mean()))


def _widest_cost_gap(fitted: dict, step: float, steps: set) -> tuple | None:
    """``(lambda, high, low)``: a trade-off between the two neighbours ``high > low`` whose
    mean costs differ most on a log(1 + cost) scale, ``steps`` (pairs a point between did
    not narrow: the cost jumps there) left out. Their geometric mean, or one ``step``
    below the smallest positive one next to 0. None when no such neighbours differ."""
    lambdas = sorted(fitted, reverse=True)
    log_costs = np.log1p([fitted[lam][3] for lam in lambdas])
    gaps = np.abs(np.diff(log_costs))
    for i in np.argsort(-gaps, kind="stable"):
        high, low = lambdas[i], lambdas[i + 1]
        if gaps[i] <= 0:
            return None
        if (high, low) in steps:
            continue
        middle = float(np.sqrt(high * low)) if low > 0 else high * step
        if low < middle < high:   # not a gap rounding has closed
            return middle, high, low
    return None
