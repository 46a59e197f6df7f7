"""Training callbacks in the style of ``xgboost.callback``."""
import math
import sys

from .metrics import metric_maximize

__all__ = ["TrainingCallback", "EvaluationMonitor", "EarlyStopping", "CallbackContainer"]


class TrainingCallback:
    """Base class. ``evals_log`` is ``{data name: {metric name: [value per round]}}``.

    ``before_iteration`` and ``after_iteration`` return True to stop training.
    """

    def before_training(self, model):
        return model

    def after_training(self, model):
        return model

    def before_iteration(self, model, epoch, evals_log):
        return False

    def after_iteration(self, model, epoch, evals_log):
        return False


class EvaluationMonitor(TrainingCallback):
    """Print the metrics every ``period`` rounds (and the last one) to ``stream``."""

    def __init__(self, period=1, stream=None):
        self.period = max(1, int(period))
        self.stream = stream
        self._last_printed = -1
        self._last_line = None

    def _line(self, epoch, evals_log):
        parts = [f"[{epoch}]"]
        for data, metrics in evals_log.items():
            for metric, values in metrics.items():
                parts.append(f"{data}-{metric}:{values[-1]:.5f}")
        return "\t".join(parts)

    def after_iteration(self, model, epoch, evals_log):
        if evals_log:
            self._last_line = (epoch, self._line(epoch, evals_log))
            if epoch % self.period == 0:
                print(self._last_line[1], file=self.stream or sys.stdout, flush=True)
                self._last_printed = epoch
        return False

    def after_training(self, model):
        if self._last_line and self._last_line[0] != self._last_printed:
            print(self._last_line[1], file=self.stream or sys.stdout, flush=True)
        return model


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

    Sets ``best_iteration`` and ``best_score`` on the booster.
    """

    def __init__(self, rounds, metric_name=None, data_name=None, maximize=None, min_delta=0.0):
        if int(rounds) < 1:
            raise ValueError("early stopping rounds must be >= 1")
        self.rounds = int(rounds)
        self.metric_name = metric_name
        self.data_name = data_name
        self.maximize = maximize
        self.min_delta = float(min_delta)
        self.best_score = None
        self.best_iteration = None

    def after_iteration(self, model, epoch, evals_log):
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


class CallbackContainer:
    """Runs a list of callbacks; any True from an iteration hook stops training."""

    def __init__(self, callbacks):
        for cb in callbacks:
            if not isinstance(cb, TrainingCallback):
                raise TypeError(f"callbacks must be TrainingCallback instances, got {cb!r}")
        self.callbacks = list(callbacks)

    def before_training(self, model):
        for cb in self.callbacks:
            model = cb.before_training(model)
        return model

    def after_training(self, model):
        for cb in self.callbacks:
            model = cb.after_training(model)
        return model

    def before_iteration(self, model, epoch, evals_log):
        return any([cb.before_iteration(model, epoch, evals_log) for cb in self.callbacks])

    def after_iteration(self, model, epoch, evals_log):
        return any([cb.after_iteration(model, epoch, evals_log) for cb in self.callbacks])
