"""Training callbacks in the style of ``xgboost.callback``. They work with every model
type: the training loop (:func:`cbudget.engine.run_training`) is the same for all."""
from __future__ import annotations

import math
import sys
import time
import warnings
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, TextIO, TypeAlias

from .metrics import metric_maximize

if TYPE_CHECKING:  # only for type hints: the loop imports this module and the models
    from ._model import CostTracker, Model
    from .dataset import InputData

__all__ = ["TrainingCallback", "EvaluationMonitor", "ProgressMonitor", "ProgressLines",
           "EarlyStopping", "BudgetStopping", "CallbackContainer"]

# {data name: {metric name: [value per iteration]}}
EvalsLog: TypeAlias = dict[str, dict[str, list[float]]]


class TrainingCallback:
    """Base class. ``evals_log`` is ``{data name: {metric name: [value per round]}}``.

    ``before_iteration`` and ``after_iteration`` return True to stop training.
    ``iterations_to_keep`` may ask for the model to be cut to its first iterations
    (:class:`BudgetStopping` drops the iteration that crossed the budget); the loop cuts
    it before ``after_training``.
    """

    def before_training(self, model: Model) -> Model:
        """Called once before the first iteration.

        Parameters
        ----------
        model : Model
            The model before training (empty, or the model training continues).

        Returns
        -------
        Model
            The model to train (this one returns ``model``).
        """
        return model

    def after_training(self, model: Model) -> Model:
        """Called once after training, with the final model (already cut to the
        iterations it keeps).

        Parameters
        ----------
        model : Model

        Returns
        -------
        Model
            The model :func:`cbudget.train` returns (this one returns ``model``).
        """
        return model

    def before_iteration(self, model: Model, epoch: int, evals_log: EvalsLog) -> bool:
        """Called before each iteration.

        Parameters
        ----------
        model : Model
            The model as it is before this iteration.
        epoch : int
            The iteration's number: 0 for the first (when training continues a model,
            the number of iterations it already has).
        evals_log : dict
            ``{data name: {metric name: [value per iteration]}}`` so far.

        Returns
        -------
        bool
            True to stop training.
        """
        return False

    def after_iteration(self, model: Model, epoch: int, evals_log: EvalsLog) -> bool:
        """Called after each iteration, its evaluation results in ``evals_log``.

        Parameters
        ----------
        model : Model
            The model with this iteration.
        epoch : int
            The iteration's number: 0 for the first (when training continues a model,
            the number of iterations it already has).
        evals_log : dict
            ``{data name: {metric name: [value per iteration]}}`` so far.

        Returns
        -------
        bool
            True to stop training.
        """
        return False

    def iterations_to_keep(self) -> int | None:
        """None, or the number of first iterations the final model keeps."""
        return None


class EvaluationMonitor(TrainingCallback):
    """Print the metrics every ``period`` rounds (and the last one) to ``stream``."""

    def __init__(self, period: int = 1, stream: TextIO | None = None) -> None:
        self.period = max(1, int(period))
        self.stream = stream
        self._last_printed = -1
        self._last_line: tuple[int, str] | None = None

    def _line(self, epoch: int, evals_log: EvalsLog) -> str:
        parts = [f"[{epoch}]"]
        for data, metrics in evals_log.items():
            for metric, values in metrics.items():
                parts.append(f"{data}-{metric}:{values[-1]:.5f}")
        return "\t".join(parts)

    def after_iteration(self, model: Model, epoch: int, evals_log: EvalsLog) -> bool:
        if evals_log:
            self._last_line = (epoch, self._line(epoch, evals_log))
            if epoch % self.period == 0:
                print(self._last_line[1], file=self.stream or sys.stdout, flush=True)
                self._last_printed = epoch
        return False

    def after_training(self, model: Model) -> Model:
        if self._last_line and self._last_line[0] != self._last_printed:
            print(self._last_line[1], file=self.stream or sys.stdout, flush=True)
        return model


class ProgressLines:
    """While a long job runs, a line every ``interval`` seconds with the steps done of
    ``total`` and an estimate of the time left; nothing for a job done within
    ``interval``.

    Parameters
    ----------
    total : int
        The steps the job takes at most.
    what : str
        What a step is, in the plural ("iterations", "models").
    interval : float, default 10
        Seconds between lines.
    stream : text stream, default sys.stdout
    clock : callable, default time.perf_counter
        Seconds (for tests).
    """

    def __init__(self, total: int, what: str, interval: float = 10.0,
                 stream: TextIO | None = None,
                 clock: Callable[[], float] = time.perf_counter) -> None:
        if not interval > 0:
            raise ValueError(f"interval must be > 0, got {interval!r}")
        self.total, self.what = int(total), what
        self.interval = float(interval)
        self.stream = stream
        self.clock = clock
        self._start = self._last = clock()

    def start(self) -> None:
        """(Re)start the clock: the job begins."""
        self._start = self._last = self.clock()

    def step(self, done: int, prefix: str = "") -> None:
        """``done`` steps are done: a line if ``interval`` has passed since the last."""
        now = self.clock()
        if now - self._last >= self.interval:
            elapsed = now - self._start
            left = elapsed / max(done, 1) * max(self.total - done, 0)
            print(f"{prefix}{done}/{self.total} {self.what} in {elapsed:.0f} s, about "
                  f"{left:.0f} s left at most", file=self.stream or sys.stdout, flush=True)
            self._last = now


class ProgressMonitor(TrainingCallback):
    """On long training, a line every ``interval`` seconds with the iterations done and
    an estimate of the time left (nothing when training takes less than ``interval``):
    training without evaluation sets, or printing them rarely, is not silent for minutes.

    Parameters
    ----------
    n_iterations : int
        The iterations training runs at most (early stopping may end it sooner).
    interval : float, default 10
        Seconds between lines.
    stream : text stream, default sys.stdout
    clock : callable, default time.perf_counter
        Seconds (for tests).
    """

    def __init__(self, n_iterations: int, interval: float = 10.0, stream: TextIO | None = None,
                 clock: Callable[[], float] = time.perf_counter) -> None:
        self.n_iterations = int(n_iterations)
        self._lines = ProgressLines(n_iterations, "iterations", interval, stream, clock)
        self._first_epoch = 0

    def before_training(self, model: Model) -> Model:
        self._lines.start()
        self._first_epoch = -1
        return model

    def after_iteration(self, model: Model, epoch: int, evals_log: EvalsLog) -> bool:
        if self._first_epoch < 0:   # a continued model's iterations are numbered on
            self._first_epoch = epoch
        self._lines.step(epoch - self._first_epoch + 1, prefix=f"[{epoch}] ")
        return False


class EarlyStopping(TrainingCallback):
    """Stop when the metric on a validation set has not improved for ``rounds`` rounds.

    Parameters
    ----------
    rounds : int
    metric_name : str, optional
        Default: the last metric of ``data_name``.
    data_name : str, optional
        Default: the last data set in ``evals``.
    maximize : bool, optional
        Default: True for auc, False otherwise.
    min_delta : float, default 0
        The least change that counts as an improvement.

    Notes
    -----
    Sets ``best_iteration`` and ``best_score`` on the booster.
    """

    def __init__(self, rounds: int, metric_name: str | None = None, data_name: str | None = None,
                 maximize: bool | None = None, min_delta: float = 0.0) -> None:
        if int(rounds) < 1:
            raise ValueError("early stopping rounds must be >= 1")
        self.rounds = int(rounds)
        self.metric_name = metric_name
        self.data_name = data_name
        self.maximize = maximize
        self.min_delta = float(min_delta)
        self.best_score: float | None = None
        self.best_iteration: int | None = None

    def after_iteration(self, model: Model, epoch: int, evals_log: EvalsLog) -> bool:
        if not evals_log:
            raise ValueError("early stopping needs at least one data set in evals")
        data = self.data_name or list(evals_log)[-1]
        if data not in evals_log:
            raise ValueError(f"early stopping: no data set named {data!r} in evals")
        metric = self.metric_name or list(evals_log[data])[-1]
        if metric not in evals_log[data]:
            raise ValueError(f"early stopping: no metric {metric!r} for {data!r}")
        maximize = metric_maximize(metric) if self.maximize is None else self.maximize
        score = evals_log[data][metric][-1]
        improved = self.best_score is None or (
            score > self.best_score + self.min_delta if maximize
            else score < self.best_score - self.min_delta)
        if improved and not math.isnan(score):
            self.best_score, self.best_iteration = score, epoch
        model.best_iteration = self.best_iteration
        model.best_score = self.best_score
        return epoch - self.best_iteration >= self.rounds if self.best_iteration is not None \
            else False


class BudgetStopping(TrainingCallback):
    """Stop training once the mean prediction cost on ``data`` exceeds ``budget``.

    Works with every model type. For the tree ensembles the cost is tracked
    incrementally (each round's trees are routed once, the inputs' acquired features
    are kept), so the check costs one prediction pass per round; the other models are
    costed anew after each iteration.

    Parameters
    ----------
    budget : float
        Largest allowed mean cost per input (docs/architecture.md, "Cost model").
    data : Dataset or array-like
        Validation inputs.
    keep_within_budget : bool, default True
        Drop the round that crossed the budget from the returned model, so that it
        costs at most ``budget`` on ``data``. False keeps it.
    verbose : bool, default True
        Print a line when the budget stops training.

    Attributes
    ----------
    cost_history : list of float
        Mean cost on ``data`` after each round.
    stopped_at : int or None
        The round whose cost exceeded the budget.
    """

    def __init__(self, budget: float, data: InputData, *, keep_within_budget: bool = True,
                 verbose: bool = True) -> None:
        budget = float(budget)
        if not budget >= 0:
            raise ValueError(f"budget must be >= 0, got {budget}")
        self.budget = budget
        self.data = data
        self.keep_within_budget = keep_within_budget
        self.verbose = verbose
        self.cost_history: list[float] = []
        self.stopped_at: int | None = None

    def before_training(self, model: Model) -> Model:
        self._tracker: CostTracker = model.cost_tracker(self.data)
        self.cost_history = []
        self.stopped_at = None
        return model

    def after_iteration(self, model: Model, epoch: int, evals_log: EvalsLog) -> bool:
        cost = self._tracker.mean_cost(model)
        self.cost_history.append(cost)
        if cost > self.budget:
            self.stopped_at = epoch
            if self.verbose:
                print(f"[{epoch}]\tmean cost {cost:.6g} exceeds the budget {self.budget:.6g}: "
                      "stopping", file=sys.stdout)
            return True
        return False

    def iterations_to_keep(self) -> int | None:
        if self.stopped_at is None or not self.keep_within_budget:
            return None
        return self.stopped_at

    def after_training(self, model: Model) -> Model:
        if self.stopped_at is not None and self.keep_within_budget:
            cost = model.cost_tracker(self.data).mean_cost(model)
            if cost > self.budget:
                # a model optimised as a whole may cost more before its first iteration
                warnings.warn(f"the model before iteration {self.stopped_at} costs {cost:.6g} "
                              f"per input, more than the budget {self.budget:.6g}: no "
                              "iteration of it is within the budget", RuntimeWarning,
                              stacklevel=2)
        return model


class CallbackContainer:
    """Runs a list of callbacks; any True from an iteration hook stops training."""

    def __init__(self, callbacks: Sequence[TrainingCallback]) -> None:
        for cb in callbacks:
            if not isinstance(cb, TrainingCallback):
                raise TypeError(f"callbacks must be TrainingCallback instances, got {cb!r}")
        self.callbacks = list(callbacks)

    def before_training(self, model: Model) -> Model:
        """Each callback's ``before_training`` in turn, each given the model the previous
        one returned."""
        for cb in self.callbacks:
            model = cb.before_training(model)
        return model

    def after_training(self, model: Model) -> Model:
        """Each callback's ``after_training`` in turn, each given the model the previous
        one returned."""
        for cb in self.callbacks:
            model = cb.after_training(model)
        return model

    def before_iteration(self, model: Model, epoch: int, evals_log: EvalsLog) -> bool:
        """Every callback's ``before_iteration`` (all are called); True if any is True."""
        return any([cb.before_iteration(model, epoch, evals_log) for cb in self.callbacks])

    def after_iteration(self, model: Model, epoch: int, evals_log: EvalsLog) -> bool:
        """Every callback's ``after_iteration`` (all are called); True if any is True."""
        return any([cb.after_iteration(model, epoch, evals_log) for cb in self.callbacks])

    def iterations_to_keep(self) -> int | None:
        """The fewest first iterations any callback keeps (None: all)."""
        keep = [n for n in (cb.iterations_to_keep() for cb in self.callbacks) if n is not None]
        return min(keep) if keep else None
