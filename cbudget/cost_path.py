"""The cost path: models along a grid of trade-offs, as glmnet's lasso path.

:func:`cost_path` finds from the data ``lambda_max``, the smallest ``cost_tradeoff`` at
which no split can pay its cost (:func:`cbudget.lambda_max`), trains a geometric grid of
trade-offs from there down to ``lambda_max * eps``, and returns the frontier: mean
prediction cost and validation score of each model, the Pareto-optimal ones marked, and
:meth:`CostPath.select` for the best model within a budget. With ``cascades``, it also
searches two-stage cascades built from the path's models (a cheap trade-off's first
rounds continued at a dearer one, with exits): a single trade-off buys an expensive
feature for nearly every input or for none, a cascade with exits buys it only for the
inputs the cheap first stage leaves undecided (docs/user_guide/choosing_budget.md,
"Cascades").
"""
from __future__ import annotations

import math
import warnings
from collections.abc import Iterator, Sequence
from concurrent.futures import Executor, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np

from ._core._openmp_helpers import resolve_n_threads
from ._model import Model, NotApplicableError
from .algorithms import taken_by
from .booster import Booster
from .callback import ProgressLines
from .dataset import Dataset
from .exits import EXIT_FOLDS, check_epsilon
from .metrics import RANKING_OBJECTIVES, evaluate_on, metric_maximize
from .model_io import algorithms_of
from .training import lambda_max as find_lambda_max
from .training import train

__all__ = ["CostPath", "ScoredModel", "cost_path", "dear_stage_features", "pareto_mask",
           "stages_used", "train_cascade", "train_scored"]

# A point placed in a cost gap whose log(1 + cost) is within this share of the gap from
# an end's did not narrow it: the path jumps there (not split again). Small, because a
# cost only a little above the jump's lower end (Letters: 9.9 next to 10.9, below a jump
# from 0) is still a model worth having.
STEP_TOLERANCE = 0.02
# cascades: the cascades of cascades=True; stage 1's share of the rounds, tried from the
# smallest (if its stage 2 buys nothing new, a longer stage 1, which leaves smaller
# residuals, would not either); at how many trade-offs below a cost jump stage 2 must
# buy something (a continued model's residuals are smaller than a fresh model's
# gradients, so the jump's dearer end, and a few below it, often buy nothing after
# stage 1: those are passed over, not counted); the exit epsilons when none are given;
# the checks per stage-1-and-2 run when cascade_every is not given
DEFAULT_CASCADES = 4
CASCADE_SPLITS = (0.25, 0.5)
CASCADE_DEPTH = 3
CASCADE_EPSILONS = (0.0, 0.005, 0.01, 0.015, 0.02, 0.025, 0.03, 0.04, 0.05, 0.07, 0.1)
CASCADE_CHECKS = 20


class ScoredModel(NamedTuple):
    """A model of a path or a sweep (:func:`train_scored`) and how it does on the
    validation data."""
    model: Model
    metric: str      # the validation metric (the one early stopping watches)
    score: float     # its value at the best iteration (the last without early stopping)
    cost: float      # mean prediction cost per input
    cost_se: float = 0.0   # the standard error of that mean (per-input costs vary)


def _mean_and_se(costs: np.ndarray) -> tuple[float, float]:
    """The mean of per-input prediction ``costs`` and its standard error."""
    costs = np.asarray(costs, dtype=np.float64)
    se = float(costs.std(ddof=1) / math.sqrt(costs.size)) if costs.size > 1 else 0.0
    return float(costs.mean()), se


def train_scored(params: dict, dtrain: Dataset, dvalid: Dataset, num_boost_round: int = 100,
                 *, early_stopping_rounds: int | None = None, **train_kwargs: Any
                 ) -> ScoredModel:
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
                       *_mean_and_se(model.predict_cost(dvalid)))


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
    """The result of :func:`cost_path`, one entry per trade-off, largest first (then the
    cascades, with ``cascades``).

    Attributes
    ----------
    lambdas : ndarray
        The ``cost_tradeoff`` of each model (NaN for a cascade: see ``stages``).
    costs : ndarray
        Mean prediction cost per input on the validation data (an exit copy's: the
        larger of its cross-fitted cost and its cost with the exits calibrated on all
        of the validation data, see :func:`cost_path`'s ``exit_scoring``).
    scores : ndarray
        The validation metric (of the best iteration after early stopping; an exit
        copy's: cross-fitted, see :func:`cost_path`'s ``exit_scoring``).
    metric : str
    maximize : bool
        Whether a larger score is better.
    models : list of Model
    pareto : ndarray of bool
        The Pareto-optimal points: none of the others is cheaper and at least as good.
    lambda_max : float or None
        The trade-off the grid starts from (None when the grid was given).
    epsilons : ndarray or None
        With ``exit_epsilons`` (or cascades): the epsilon of each model's exit rules
        (:meth:`cbudget.Booster.calibrate_exits`), NaN for a model without exits; None
        without that dimension.
    stages : list or None
        With ``cascades``: per entry, None for a single trade-off, ``[(r1, lambda_hi),
        (r2, lambda_lo)]`` for a cascade (``r1`` rounds at ``lambda_hi``, then ``r2``
        continued at ``lambda_lo``; with early stopping, the rounds the model predicts
        with, :func:`stages_used`); None without that dimension.
    cost_ses : ndarray or None
        The standard error of each entry of ``costs`` (the spread of the per-input
        costs over the square root of the number of validation inputs): how far the
        mean cost on other inputs may be from it. None when not measured.
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
    stages: list[list[tuple[int, float]] | None] | None = None
    cost_ses: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.models)

    def best_index(self, budget: float, margin: float = 0.0) -> int:
        """The index of the best-scoring model whose mean validation cost, plus
        ``margin`` standard errors of it (``cost_ses``), is at most ``budget`` (ties: the
        cheaper one). A margin keeps the pick within the budget on other inputs too:
        the expected cost per input of a model whose validation cost is at the budget
        exceeds it with probability about 1/2; of one a standard error below, about
        1/6. ValueError when none is."""
        budget = float(budget)
        if not budget >= 0:
            raise ValueError(f"budget must be >= 0, got {budget}")
        margin = float(margin)
        if not 0 <= margin < math.inf:
            raise ValueError(f"margin must be a number of standard errors >= 0, got "
                             f"{margin}")
        if margin and self.cost_ses is None:
            raise ValueError("this path has no cost_ses: a margin needs them")
        spread = 0.0 if not margin else margin * np.asarray(self.cost_ses)
        within = np.flatnonzero(self.costs + spread <= budget)
        if within.size == 0:
            raise ValueError(f"no model of the path is within budget {budget:g}"
                             + (f" less {margin:g} standard errors of its cost" if margin
                                else "")
                             + f": the cheapest costs {self.costs.min():.6g} per input")
        signed = self.scores[within] * (1.0 if self.maximize else -1.0)
        order = np.lexsort((self.costs[within], -signed))
        return int(within[order[0]])

    def select(self, budget: float, margin: float = 0.0) -> Model:
        """The best model (validation score) whose mean validation cost per input is
        at most ``budget`` (less ``margin`` standard errors: :meth:`best_index`)."""
        return self.models[self.best_index(budget, margin)]

    def __str__(self) -> str:
        exits = self.epsilons is not None
        cascades = self.stages is not None
        lines = [f"{'lambda':>12}" + (f" {'epsilon':>8}" if exits else "")
                 + f" {'mean cost':>12} {self.metric:>12}  pareto"
                 + ("  stages (rounds@lambda)" if cascades else "")]
        epsilons = self.epsilons if self.epsilons is not None else [None] * len(self)
        stages = self.stages if self.stages is not None else [None] * len(self)
        for lam, eps, cost, score, best, stage in zip(self.lambdas, epsilons, self.costs,
                                                       self.scores, self.pareto, stages):
            column = "" if eps is None else f" {'-' if np.isnan(eps) else f'{eps:g}':>8}"
            lam_text = "cascade" if np.isnan(lam) else f"{lam:.4g}"
            line = (f"{lam_text:>12}{column} {cost:>12.6g} {score:>12.6g}  "
                    f"{'*' if best else ' ':6}")
            if stage is not None:
                line += "  " + " + ".join(f"{r}@{lam_s:.4g}" for r, lam_s in stage)
            lines.append(line.rstrip())
        return "\n".join(lines)


def cost_path(params: dict, dtrain: Dataset, dvalid: Dataset, *, n_points: int = 16,
              eps: float = 1e-3, lambdas: Sequence[float] | None = None,
              lambda_max: float | None = None, num_boost_round: int = 100,
              early_stopping_rounds: int | None = None, metric: str | None = None,
              n_jobs: int = 1, executor: Executor | None = None,
              exit_epsilons: Sequence[float] | None = None, exit_every: int = 1,
              exit_tolerance: float | None = None,
              exit_scoring: str = "cross_fitted", cascades: bool | int = False,
              cascade_every: int | None = None, verbose: bool = True,
              **train_kwargs: Any) -> CostPath:
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
    lambda_max : float, optional
        The grid's start when already known: :func:`cbudget.lambda_max` of ``params``
        and ``dtrain`` (and ``xgb_model``), a number > 0, which saves computing it again
        (a one-round training). Not with ``lambdas``.
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
        costed with its exits (``CostPath.epsilons``) as ``exit_scoring`` says.
    exit_every : int, default 1
    exit_tolerance : float, optional
        Regression's exits: how far an exited prediction may be from the full one
        (required there); binary's, optional: how far in probability, in [0, 1]
        (:meth:`cbudget.Booster.calibrate_exits`' ``tolerance``, for exits that keep the
        log-loss).
    cascades : bool or int, default False
        Also search two-stage cascades (cegb, greedy_miser), ``True`` with 4 extra
        trainings, an int with that many: at the path's largest jumps of mean cost
        between neighbouring trade-offs (the cheap end's model costing something),
        stage 1 is the first ``r1`` rounds of the cheap end's model (sliced, not
        retrained), stage 2 the remaining rounds continued from it
        (:func:`train_cascade`) at the dear end's trade-off and the ones below it until
        three of them buy something; ``r1`` is a quarter, then half, of
        ``num_boost_round``. A stage 2 that buys nothing the stage 1 had not bought (its
        mean cost still the cheap end's) is left out and not counted. Each cascade also
        gets exit rules calibrated on ``dvalid`` at each of ``exit_epsilons`` (default,
        for the cascades only: ``(0, 0.005, 0.01, 0.015, 0.02, 0.025, 0.03, 0.04, 0.05,
        0.07, 0.1)``), checked every ``cascade_every`` iterations: the inputs the first
        stage decides leave before the trees that buy the dear features. Regression
        cascades have exits only with ``exit_tolerance``, ranking ones none. Entries in
        ``CostPath.stages``; trained here, not on ``executor``.
    exit_scoring : {"cross_fitted", "in_sample"}, default "cross_fitted"
        How an exit copy is scored. ``"cross_fitted"``: its exits are calibrated on
        each half of ``dvalid`` in turn and predict the other half, and the score is
        that of these predictions, as an unseen input would get them; its cost is the
        larger of their mean cost and the copy's own (its exits calibrated on all of
        ``dvalid``, as kept), so the copy's validation cost is within what
        :meth:`CostPath.best_index` compares to the budget. ``"in_sample"``: the
        copy's own score and cost on ``dvalid``, where its exits disagree with the
        full model on at most epsilon of the inputs by construction (optimistic: on
        other inputs they disagree more).
    cascade_every : int, optional
        The iterations between two exit checks of a cascade (default
        ``num_boost_round // 20``, at least 1); ``r1`` is rounded to a multiple of it,
        so that a check falls on the stage boundary.
    verbose : bool, default True
        On a long path, a line every 10 seconds with the models trained and an
        estimate of the time left (nothing for a path trained within 10 seconds).

    Returns
    -------
    CostPath
        Its entries ordered by trade-off, largest first (with exits: each model, then its
        copies by epsilon), then the cascades in the order trained (each, then its
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
        start = find_lambda_max(params, dtrain, xgb_model=train_kwargs.get("xgb_model")) \
            if lambda_max is None else _check_lambda_max(lambda_max)
        if start == 0:
            raise ValueError("no split that costs anything has a positive gain on this "
                             "data: every trade-off gives the same model")
        n_geometric = max(2, (n_points - 1) // 2 + 1)
        step = eps ** (1.0 / (n_geometric - 1))
        grid = np.append(start * step ** np.arange(n_geometric), 0.0)
        n_refine = n_points - grid.size
    else:
        if lambda_max is not None:
            raise ValueError("give lambdas or lambda_max, not both: lambda_max is the "
                             "start of the grid cost_path makes")
        grid = np.sort(np.asarray(lambdas, dtype=np.float64).reshape(-1))[::-1]
        if grid.size == 0 or not np.all(np.isfinite(grid)) or np.any(grid < 0):
            raise ValueError("lambdas must be finite numbers >= 0")
    n_cascades = _check_cascades(params, cascades, train_kwargs)
    if exit_epsilons is not None:
        exit_epsilons = _check_exit_options(params, exit_epsilons, exit_every, exit_tolerance)
    if exit_scoring not in ("cross_fitted", "in_sample"):
        raise ValueError(f'exit_scoring must be "cross_fitted" or "in_sample", got '
                         f'{exit_scoring!r}')
    # the cascades' exits: the path's epsilons, else the defaults (when they can have exits)
    cascade_epsilons = exit_epsilons if exit_epsilons is not None \
        else list(CASCADE_EPSILONS) if n_cascades and _has_exits(params, exit_tolerance) \
        else None
    if cascade_every is None:
        cascade_every = max(1, num_boost_round // CASCADE_CHECKS)
    elif isinstance(cascade_every, bool) or not isinstance(cascade_every, (int, np.integer)) \
            or cascade_every < 1:
        raise ValueError(f"cascade_every must be an integer >= 1, got {cascade_every!r}")
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

    # a line every 10 s on a long path (the refinements may stop early: "at most")
    progress = ProgressLines(len(grid) + n_refine, "models",
                             interval=10.0 if verbose else math.inf)
    done = 0

    def trained(lams: list[float]) -> Iterator[ScoredModel]:
        """The models of ``lams``, in order, each as soon as it and those before are."""
        if executor is not None:
            yield from executor.map(fit_elsewhere, lams)
        elif workers > 1 and len(lams) > 1:
            with ThreadPoolExecutor(max_workers=workers) as pool:
                yield from pool.map(fit, lams)
        else:
            yield from map(fit, lams)

    def fit_all(lams: list[float]) -> dict[float, ScoredModel]:
        nonlocal done
        fitted = {}
        for lam, scored in zip(lams, trained(lams)):
            fitted[lam] = scored
            done += 1
            progress.step(done, prefix="cost_path: ")
        return fitted

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
    # (lambda, stages, scored) of every candidate: the path's, then the cascades'
    candidates: list[tuple[float, list | None, ScoredModel]] = [
        (lam, None, fitted[lam]) for lam in order]
    if n_cascades:
        with _no_lambda_max_warning():
            candidates += _search_cascades(base, dtrain, dvalid, fitted, n_cascades,
                                           num_boost_round, cascade_every,
                                           early_stopping_rounds, train_kwargs)
    # (lambda, epsilon, stages, scored) of every entry, each candidate's exit copies after it
    points = []
    for lam, stages, scored in candidates:
        points.append((lam, np.nan, stages, scored))
        epsilons, every = (exit_epsilons, exit_every) if stages is None \
            else (cascade_epsilons, cascade_every)
        hold = None
        if stages is not None:       # cascades are boosters (_check_cascades)
            assert isinstance(scored.model, Booster)
            hold = dear_stage_features(scored.model, stages[0][0])
        if epsilons:
            points += [(lam, e, stages, copy) for e, copy in zip(epsilons, _exit_copies(
                scored, dvalid, list(epsilons), every, exit_tolerance, hold,
                exit_scoring == "cross_fitted"), strict=True)]
    scores = np.array([scored.score for _, _, _, scored in points])
    costs = np.array([scored.cost for _, _, _, scored in points])
    maximize = metric_maximize(metric_name)
    return CostPath(lambdas=np.array([lam for lam, _, _, _ in points]), costs=costs,
                    scores=scores, metric=metric_name, maximize=maximize,
                    models=[scored.model for _, _, _, scored in points],
                    pareto=pareto_mask(costs, scores, maximize), lambda_max=start,
                    epsilons=None if cascade_epsilons is None
                    else np.array([eps for _, eps, _, _ in points]),
                    stages=[stages for _, _, stages, _ in points] if n_cascades else None,
                    cost_ses=np.array([scored.cost_se for _, _, _, scored in points]))


def train_cascade(params: dict, dtrain: Dataset, dvalid: Dataset,
                  stages: Sequence[tuple[int, float]], first: Model, *,
                  early_stopping_rounds: int | None = None, **train_kwargs: Any
                  ) -> ScoredModel:
    """Train the two-stage cascade ``stages = [(r1, lambda_hi), (r2, lambda_lo)]`` and
    score it on ``dvalid`` (as :func:`train_scored`): ``first``, a model trained with
    ``params`` at ``lambda_hi`` for at least ``r1`` rounds, cut to its first ``r1``
    rounds (stage 1, not retrained), continued for ``r2`` rounds at ``lambda_lo``
    (``xgb_model=``: the features stage 1 bought stay bought). The one place a cascade
    is trained."""
    (r1, _), (r2, lam_lo) = stages
    if not isinstance(first, Booster) or first.num_iterations() < r1:
        raise ValueError(f"stage 1 needs a booster of at least {r1} rounds")
    return train_scored(dict(params, cost_tradeoff=float(lam_lo)), dtrain, dvalid, r2,
                        early_stopping_rounds=early_stopping_rounds, xgb_model=first[:r1],
                        **train_kwargs)


def _search_cascades(base: dict, dtrain: Dataset, dvalid: Dataset, fitted: dict,
                     n_cascades: int, num_boost_round: int, every: int,
                     early_stopping_rounds: int | None, train_kwargs: dict
                     ) -> list[tuple[float, list, ScoredModel]]:
    """At most ``n_cascades`` cascades ``(nan, stages, scored)`` from the path's models
    ``fitted`` (trade-off -> ScoredModel): for each cost jump, largest first, stage 1
    its cheap end's model's first rounds, stage 2 at the trade-offs from its dear end
    down until :data:`CASCADE_DEPTH` of them buy something; per trade-off the stage-1
    lengths of :data:`CASCADE_SPLITS`, shortest first, until one buys nothing new. A
    stage 2 that buys nothing is the cheap end again: left out, not counted."""
    splits = sorted({max(every, int(round(share * num_boost_round / every)) * every)
                     for share in CASCADE_SPLITS})
    splits = [r1 for r1 in splits if r1 < num_boost_round]
    found: list[tuple[float, list, ScoredModel]] = []
    for high, lows in _cascade_pairs(fitted):
        first = fitted[high].model
        cost_high = np.log1p(fitted[high].cost)
        jump = abs(np.log1p(fitted[lows[0]].cost) - cost_high)
        depth = 0      # the trade-offs below the jump at which stage 2 bought something
        for low in lows:
            if depth == CASCADE_DEPTH:
                break
            before = len(found)
            for r1 in splits:
                if len(found) == n_cascades:
                    return found
                if r1 > first.num_iterations():    # stage 1 stopped early
                    break
                stages = [(r1, float(high)), (num_boost_round - r1, float(low))]
                scored = train_cascade(base, dtrain, dvalid, stages, first,
                                       early_stopping_rounds=early_stopping_rounds,
                                       **train_kwargs)
                if np.log1p(scored.cost) - cost_high < STEP_TOLERANCE * jump:
                    break     # stage 2 bought nothing: a longer stage 1 would not either
                found.append((np.nan, stages_used(scored.model), scored))
            depth += len(found) > before
    return found


def stages_used(model: Model) -> list[tuple[int, float]]:
    """The ``(rounds, cost_tradeoff)`` stages (a ``cost_stages`` value) of the iterations
    ``model``, a Booster, predicts with: up to its best iteration after early stopping,
    which may end the last stage sooner than asked."""
    assert isinstance(model, Booster)
    used = model[:model.iterations_used()[1]]
    return [(stage.end_iteration - stage.first_iteration, stage.cost_tradeoff)
            for stage in used.cost_stages]


def _cascade_pairs(fitted: dict) -> list[tuple[float, list[float]]]:
    """(lambda_hi, [lambda_lo, ...]) for cascades: for each jump of mean cost between
    neighbouring trade-offs (log(1 + cost) scale), largest first, whose cheaper end's
    model costs something (a free stage 1 predicts a constant), the cheap end with the
    dear end and every trade-off below it, largest first."""
    lambdas = sorted(fitted, reverse=True)
    log_costs = np.log1p([fitted[lam].cost for lam in lambdas])
    gaps = np.diff(log_costs)
    pairs = []
    for i in np.argsort(-gaps, kind="stable"):
        if gaps[i] <= 0:
            break
        if log_costs[i] > 0:
            pairs.append((lambdas[i], lambdas[i + 1:]))
    return pairs


def _check_lambda_max(value: Any) -> float:
    """A ``lambda_max`` given to :func:`cost_path`, checked: a finite number > 0."""
    number = math.nan      # not a number: refused below
    if isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool):
        try:
            number = float(value)
        except OverflowError:      # an int too large for a float
            number = math.inf
    if not (math.isfinite(number) and number > 0):
        raise ValueError(f"lambda_max must be a finite number > 0 (cbudget.lambda_max of "
                         f"params and dtrain), got {value!r}")
    return number


def _check_cascades(params: dict, cascades: bool | int, train_kwargs: dict) -> int:
    """The number of cascades ``cascades`` asks for, once its options are checked."""
    if isinstance(cascades, (bool, np.bool_)):
        n = DEFAULT_CASCADES if cascades else 0
    elif isinstance(cascades, (int, np.integer)) and cascades >= 0:
        n = int(cascades)
    else:
        raise ValueError(f"cascades must be True, False or an integer >= 0, got "
                         f"{cascades!r}")
    if n == 0:
        return 0
    algorithm = params.get("algorithm", "gbdt")
    staged = taken_by().get("cost_stages", [])
    if algorithm not in staged:
        raise NotApplicableError(f"cascades apply to {', '.join(staged)} (stages of cost "
                                 f"trade-offs), not to {algorithm!r}")
    if train_kwargs.get("xgb_model") is not None:
        raise ValueError("cascades continue the path's own models: not with xgb_model")
    return n


def _has_exits(params: dict, tolerance: float | None) -> bool:
    """Whether the models of ``params`` take exit rules as the path would calibrate
    them: classification, or regression with a tolerance (ranking: none)."""
    objective = params.get("objective", "reg:squarederror")
    if objective in RANKING_OBJECTIVES:
        return False
    return objective in ("binary:logistic", "multi:softprob") or tolerance is not None


def _check_exit_options(params: dict, epsilons: Sequence[float], every: int, tolerance: float | None
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
    if objective == "multi:softprob" and tolerance is not None:
        raise ValueError("exit_tolerance is for regression (how far a prediction) and binary "
                         "(how far a probability); multiclass classes agree or do not")
    if objective == "binary:logistic" and tolerance is not None and (
            isinstance(tolerance, bool) or not isinstance(tolerance, (int, float))
            or not 0 <= tolerance <= 1):
        raise ValueError(f"a binary exit_tolerance is a probability in [0, 1], got "
                         f"{tolerance!r}")
    return epsilons


def dear_stage_features(model: Booster, first_end: int) -> np.ndarray:
    """The dear features of a cascade's later stages: those its iterations from
    ``first_end`` on read and the first stage's do not, whose first read costs more than
    any feature the first stage reads (the features the cascade holds an input for once
    it has bought them, :attr:`cbudget.ExitRules.hold`)."""
    first = model.used_features((0, first_end))
    later = np.setdiff1d(model.used_features((first_end, 0)), first)
    first_read = model.cost_model.first_read_costs()
    cheap_end = first_read[first].max() if first.size else 0.0
    return later[first_read[later] > cheap_end]


def _exit_copies(scored: ScoredModel, dvalid: Dataset, epsilons: list[float], every: int,
                 tolerance: float | None, hold: np.ndarray | None = None,
                 cross_fitted: bool = True) -> list[ScoredModel]:
    """Per epsilon, a copy of the scored booster with exit rules calibrated on ``dvalid``
    (held by the features ``hold``), scored and costed with its exits: on ``dvalid``
    itself, or ``cross_fitted`` (:func:`cost_path`'s ``exit_scoring``)."""
    booster = scored.model
    assert isinstance(booster, Booster)
    options: dict[str, Any] = {
        "every": every, "tolerance": tolerance,
        "hold": None if hold is None or not hold.size else hold.tolist()}
    folded = booster.cross_fitted_exits(dvalid, epsilons, **options) \
        if cross_fitted and dvalid.num_data() >= 2 * EXIT_FOLDS else None
    copies = []
    for i, rules in enumerate(booster.exit_rules_for(dvalid, epsilons, **options)):
        model = booster.copy()
        model.exit_rules = rules
        outputs, costs = model.predict(dvalid), model.predict_cost(dvalid)
        if folded is not None:
            outputs, folded_costs = folded[i]
            if folded_costs.mean() > costs.mean():
                costs = folded_costs
        copies.append(ScoredModel(model, scored.metric,
                                  evaluate_on(scored.metric, dvalid, outputs),
                                  *_mean_and_se(costs)))
    return copies


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
