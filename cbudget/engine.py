"""The one training loop, and what an algorithm gives it (see docs/architecture.md,
"Training").

An :class:`Algorithm` declares its parameters and makes a :class:`Trainer`; the loop
(:func:`run_training`) runs the trainer's iterations with the evaluation log, the
callbacks (early stopping, budgets, printing) and the best iteration, the same way for
every algorithm.
"""
from __future__ import annotations

import math
import os
import resource
from collections.abc import Sequence
from typing import Any, Generic, NamedTuple, TypeVar

from ._model import Model, NotApplicableError
from .callback import CallbackContainer
from .dataset import Dataset, check_model_matches
from .metrics import evaluate_on
from .model_io import load_model
from .objectives import Objective
from .params import CATEGORICAL_PARAMS, COMMON_PARAMS, Param, resolve_declared

__all__ = ["Algorithm", "Trainer", "TrainingSetup", "run_training", "model_to_continue",
           "MemoryNeed", "TrainingMemoryError", "MEMORY_LIMIT_VARIABLE", "memory_limit",
           "check_memory"]

# the environment variable that sets the memory training may plan to use (bytes, or with
# a K/M/G/T suffix, powers of 1024; "none": no check)
MEMORY_LIMIT_VARIABLE = "CBUDGET_MEMORY_LIMIT"
_UNITS = {"": 1, "K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}


class TrainingMemoryError(MemoryError, ValueError):
    """Training would allocate more memory than there is (:func:`check_memory`), found
    before allocating it; the message says what takes it and which parameter to change.
    A ValueError too: it is an input the machine cannot take, reported as such."""


class MemoryNeed(NamedTuple):
    """One large allocation training will make (see :meth:`Algorithm.memory_needs`)."""
    what: str          # what it is, with its formula: "n_features^2 x 8 bytes"
    n_bytes: float
    hint: str          # what to change to need less


def _size(n_bytes: float) -> str:
    for unit, scale in (("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n_bytes >= scale:
            return f"{n_bytes / scale:.3g} {unit}"
    return f"{n_bytes:.0f} bytes"


def memory_limit() -> tuple[float | None, str]:
    """The memory a training may plan to use, and where the figure comes from: the
    environment variable :data:`MEMORY_LIMIT_VARIABLE` if set (None for "none": no
    limit), else the physical memory, or the address-space limit (``ulimit -v``) if
    lower."""
    text = os.environ.get(MEMORY_LIMIT_VARIABLE, "").strip()
    if text:
        if text.lower() == "none":
            return None, f"{MEMORY_LIMIT_VARIABLE}=none"
        number, unit = text.upper().rstrip("B").rstrip("I"), ""
        if number and number[-1] in _UNITS:
            number, unit = number[:-1], number[-1]
        try:
            value = float(number) * _UNITS[unit]
        except ValueError:
            value = math.nan
        if not value > 0 or not math.isfinite(value):
            raise ValueError(f"{MEMORY_LIMIT_VARIABLE}={text!r}: give a number of bytes "
                             "(with K, M, G or T: powers of 1024), or 'none' for no limit")
        return value, f"{MEMORY_LIMIT_VARIABLE}={text}"
    limit, source = math.inf, ""
    try:
        limit = float(os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))
        source = "the physical memory"
    except (ValueError, OSError, AttributeError):   # no sysconf names: not checked
        pass
    address_space = resource.getrlimit(resource.RLIMIT_AS)[0]
    if address_space != resource.RLIM_INFINITY and address_space < limit:
        limit, source = float(address_space), "the address-space limit (ulimit -v)"
    return (None, "") if math.isinf(limit) else (limit, source)


def check_memory(algorithm: Algorithm, p: dict, dtrain: Dataset, setup: TrainingSetup
                 ) -> None:
    """Raise :class:`TrainingMemoryError` when the large allocations ``algorithm`` will make
    on ``dtrain`` (:meth:`Algorithm.memory_needs`) add up to more than
    :func:`memory_limit`, before anything is allocated. The message lists them, largest
    first, with their formulas and what to change."""
    limit, source = memory_limit()
    if limit is None:
        return
    needs = sorted(algorithm.memory_needs(p, dtrain, setup), key=lambda need: -need.n_bytes)
    total = sum(need.n_bytes for need in needs)
    if total <= limit:
        return
    parts = "; ".join(f"{need.what} = {_size(need.n_bytes)}" for need in needs)
    raise TrainingMemoryError(
        f"{algorithm.name} would need about {_size(total)} on {dtrain.num_data()} rows x "
        f"{dtrain.num_feature()} features, more than the {_size(limit)} of {source}: "
        f"{parts}. {needs[0].hint}. (To change the limit, set {MEMORY_LIMIT_VARIABLE} to a "
        "size such as 64G, or to none.)")


class TrainingSetup(NamedTuple):
    """What :func:`cbudget.train` checked and hands to a trainer."""
    objective: Objective
    metrics: list          # metric names, the last one for early stopping
    evals: list            # [(Dataset, name)]
    n_threads: int
    verbose: bool
    xgb_model: Any = None  # a model to continue (algorithms with ``continues``)
    expensive_model: Any = None  # the gated models' f0
    custom_metric: Any = None    # a callable (preds, data) -> (name, value) or a list

    def without_evals(self) -> TrainingSetup:
        """The same set-up with no evaluation sets (a trainer built to inspect data)."""
        return self._replace(evals=[])


# the class of model a trainer makes
ModelT = TypeVar("ModelT", bound=Model)


class Trainer(Generic[ModelT]):
    """One training run of an algorithm, driven by :func:`run_training`.

    A subclass sets ``model`` (the model as it is, handed to the callbacks) in its
    constructor (and ``n_iterations`` if it runs another number of iterations than
    ``num_boost_round``), and implements :meth:`iterate` and :meth:`finish`.
    """

    # True: the model keeps every iteration after early stopping (the user predicts
    # with iteration_range); False: it is cut to the best iteration
    keeps_all_iterations = True
    model: ModelT
    first_iteration = 0
    n_iterations = 0

    def __init__(self, p: dict, dtrain: Dataset, num_boost_round: int, setup: TrainingSetup):
        self.p = p
        self.dtrain = dtrain
        self.setup = setup
        self.n_iterations = num_boost_round

    @property
    def named_evals(self) -> list:
        """The evaluation sets as (name, data) pairs."""
        return [(name, data) for data, name in self.setup.evals]

    def callbacks(self) -> list:
        """Callbacks the algorithm adds after the user's (e.g. BudgetRF's budget)."""
        return []

    def iterate(self, iteration: int) -> bool:
        """Run one iteration; True when training has converged (stop after it)."""
        raise NotImplementedError

    def eval_predictions(self) -> list:
        """(name, data, predictions) of each evaluation set for the model as it is."""
        return []

    def eval_scores(self, metrics: Sequence[str]) -> list:
        """(name, {metric: value}) of each evaluation set for the model as it is."""
        return [(name, {metric: evaluate_on(metric, data, predictions)
                        for metric in metrics})
                for name, data, predictions in self.eval_predictions()]

    def custom_metric_inputs(self) -> list:
        """(name, data, predictions) of each evaluation set that the custom metric
        reads (the trainers that take callables: raw scores with a custom objective)."""
        return self.eval_predictions()

    def custom_scores(self, metrics: Sequence[str]) -> list:
        """(name, {metric: value}) of the custom metric (``setup.custom_metric``) on each
        evaluation set; its names must differ from the built-in ``metrics``."""
        function = self.setup.custom_metric
        if function is None:
            return []
        scores = []
        for name, data, predictions in self.custom_metric_inputs():
            result = function(predictions, data)
            pairs = result if isinstance(result, list) else [result]
            values = {}
            for pair in pairs:
                if not (isinstance(pair, tuple) and len(pair) == 2
                        and isinstance(pair[0], str)):
                    raise TypeError("custom_metric must return (name, value) or a list of "
                                    f"such pairs, got {pair!r}")
                if pair[0] in metrics:
                    raise ValueError(f"custom_metric's name {pair[0]!r} is a built-in "
                                     "metric's: name it otherwise")
                values[pair[0]] = float(pair[1])
            scores.append((name, values))
        return scores

    def finish(self, n_keep: int | None) -> ModelT:
        """The trained model, of its first ``n_keep`` iterations (None: all; 0: the
        model before the first iteration)."""
        raise NotImplementedError

    def record_training(self, model: ModelT) -> None:
        """After the callbacks: record the training costs in the model."""

    def close(self) -> None:
        """Release what the trainer holds (thread pools)."""


def run_training(trainer: Trainer, container: CallbackContainer,
                 evals_result: dict | None = None) -> Model:
    """Run ``trainer``'s iterations with the callbacks of ``container`` and return the
    model: the evaluation log (also into ``evals_result``), callbacks that stop training,
    the best iteration of early stopping, and the iterations a callback keeps (a
    budget)."""
    evals_log: dict = {}
    try:
        # a callback may hand back another model: training goes on with that one
        model = trainer.model = container.before_training(trainer.model)
        first = trainer.first_iteration
        for iteration in range(first, first + trainer.n_iterations):
            if container.before_iteration(model, iteration, evals_log):
                break
            converged = trainer.iterate(iteration)
            model = trainer.model
            metrics = trainer.setup.metrics
            for name, scores in (trainer.eval_scores(metrics)
                                 + trainer.custom_scores(metrics)):
                log = evals_log.setdefault(name, {})
                for metric, value in scores.items():
                    log.setdefault(metric, []).append(value)
            if container.after_iteration(model, iteration, evals_log) or converged:
                break
        best = (model.best_iteration, model.best_score)
        keep = container.iterations_to_keep()
        if best[0] is not None and not trainer.keeps_all_iterations:
            keep = best[0] + 1 if keep is None else min(keep, best[0] + 1)
        model = trainer.finish(keep)
        if best[0] is not None and (keep is None or best[0] < keep):
            model.best_iteration, model.best_score = best
        model = container.after_training(model)
        trainer.record_training(model)
    finally:
        trainer.close()
    if evals_result is not None:
        evals_result.clear()
        evals_result.update(evals_log)
    return model


class Algorithm:
    """An entry of the registry: a name, its parameters, its trainer, and what its models
    are (the model classes and the file format read that from the registry, see
    :func:`cbudget.model_io.algorithms_of`).

    Parameters
    ----------
    name : str
    params : tuple of Param
        The parameters it takes besides :data:`cbudget.params.COMMON_PARAMS` (an entry
        of the same name as a common one replaces it, e.g. another default objective).
    trainer : Trainer subclass
        Made with ``(p, dtrain, num_boost_round, setup)`` for each training run.
    doc : str
        One line: what it is, after which paper.
    model_class : Model subclass
        The class of the models it trains (loading a file of this algorithm makes one).
    section : str or None
        The section of its model files that restates its settings (e.g. ``"cegb"``,
        ``"budget_rf"``; algorithms of one model class may share one), or None for none.
        What the section holds is the model class's.
    cannot_continue : str or None
        Why it cannot continue a model (``xgb_model``); None if it can.
    takes_expensive_model : bool
        Whether it approximates an expensive model (``expensive_model``).
    takes_callables : bool
        Whether it trains with a Python objective and metric (``train``'s ``obj`` and
        ``custom_metric``).
    retired_params : dict, optional
        Parameters it no longer takes -> the value it always used, which older model
        files may still list (reading them drops those entries).

    Notes
    -----
    :attr:`splits_categories`: whether it trains on categorical features
    (:attr:`cbudget.Dataset.categorical_features`); :func:`cbudget.train` refuses data
    with some for the algorithms that do not.
    """

    def __init__(self, name: str, params: tuple, trainer: type, doc: str, *,
                 model_class: type[Model], section: str | None = None,
                 cannot_continue: str | None = None, takes_expensive_model: bool = False,
                 retired_params: dict | None = None, takes_callables: bool = False):
        self.name = name
        self.model_class = model_class
        self.section = section
        self.declared: dict[str, Param] = {param.name: param for param in COMMON_PARAMS}
        self.declared.update((param.name, param) for param in params)
        self.trainer = trainer
        self.doc = doc
        self.cannot_continue = cannot_continue
        self.takes_expensive_model = takes_expensive_model
        self.takes_callables = takes_callables
        self.retired_params = retired_params or {}

    @property
    def splits_categories(self) -> bool:
        """Whether it splits categorical features: those that declare the categorical
        split parameters (:data:`cbudget.params.CATEGORICAL_PARAMS`; the histogram
        engine's trees) do."""
        return all(param.name in self.declared for param in CATEGORICAL_PARAMS)

    def resolve(self, given: dict) -> dict:
        """The parameters of a training run: defaults filled in, values checked, the
        defaults that depend on other parameters completed (:meth:`complete`)."""
        p = resolve_declared(self.declared, given)
        p["algorithm"] = self.name
        self.complete(p)
        return p

    def complete(self, p: dict) -> None:
        """Defaults and checks that depend on several parameters (subclasses)."""

    def default_metric(self, p: dict, objective: Objective) -> str:
        return objective.metric

    def lambda_max(self, p: dict, dtrain: Dataset, setup: TrainingSetup) -> float:
        """The smallest ``cost_tradeoff`` at which training makes no costly split
        (:func:`cbudget.lambda_max`)."""
        raise self._no_split_penalty("lambda_max")

    def root_split_terms(self, p: dict, dtrain: Dataset, setup: TrainingSetup) -> list:
        """Per tree of the first round: each feature's best root-split gain and cost
        increment (:func:`cbudget.training.root_split_terms`)."""
        raise self._no_split_penalty("root_split_terms")

    def _no_split_penalty(self, what: str) -> NotApplicableError:
        return NotApplicableError(
            f"{what} is computed for the boosted trees whose splits pay cost_tradeoff "
            f"times their cost (cegb, greedy_miser), not for {self.name}: give the "
            "trade-offs to try yourself")

    def prepare_data(self, dtrain: Dataset, evals: list) -> tuple[Dataset, list]:
        """The training and evaluation data as the algorithm reads them (e.g. labels
        -1/+1 as 0/1)."""
        return dtrain, evals

    def check_data(self, p: dict, objective: Objective, dtrain: Dataset) -> None:
        """Errors for data the algorithm cannot fit, before the objective's checks."""

    def memory_needs(self, p: dict, dtrain: Dataset, setup: TrainingSetup) -> list[MemoryNeed]:
        """The large allocations training on ``dtrain`` will make, from the parameters and
        the data's shape alone (nothing is allocated): what grows with the product of
        two sizes (features x bins x leaves, features^2, rows x features), not what is
        proportional to the data. :func:`check_memory` compares their sum with the
        memory there is before training starts."""
        return []

    def __repr__(self) -> str:
        return f"<cbudget algorithm {self.name!r}>"



def model_to_continue(xgb_model: Any, dtrain: Dataset, objective: Objective,
                      model_class: type[ModelT], num_class: int | None = None
                      ) -> ModelT | None:
    """The model to continue from (a model or a saved model's path), checked against the
    training data: its class, objective and ``num_class`` (default the objective's),
    features and costs."""
    if xgb_model is None:
        return None
    if isinstance(xgb_model, (str, os.PathLike)):
        xgb_model = load_model(xgb_model)
    if not isinstance(xgb_model, model_class):
        raise TypeError(f"xgb_model must be a cbudget.{model_class.__name__} or the path of "
                        f"a saved one, got {type(xgb_model).__name__}")
    num_class = objective.num_class if num_class is None else num_class
    if (xgb_model.objective, xgb_model.num_class) != (objective.name, num_class):
        raise ValueError(f"xgb_model was trained for {xgb_model.objective} with num_class="
                         f"{xgb_model.num_class}, not {objective.name} with num_class={num_class}")
    check_model_matches(xgb_model, dtrain, "xgb_model",
                        "a model has one cost model; give dtrain the model's costs")
    return xgb_model
