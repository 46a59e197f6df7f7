"""``train()``: validate, look the algorithm up, run its trainer in the training loop
(in the style of ``xgboost.train``)."""
from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeAlias, TypeVar, Union, overload

import numpy as np

from ._core._openmp_helpers import resolve_n_threads
from ._model import Model, NotApplicableError
from .algorithms import REGISTRY, get_algorithm, resolve_params
from .callback import (
    CallbackContainer,
    EarlyStopping,
    EvaluationMonitor,
    ProgressMonitor,
    TrainingCallback,
)
from .dataset import Dataset
from .engine import Algorithm, TrainingSetup, check_memory, run_training
from .metrics import check_metric, ranking_metric
from .objectives import CustomObjective, get_objective
from .params import INT_MAX

if TYPE_CHECKING:  # only for type hints: adapt imports the training machinery
    from .adapt import ExternalModel, GatedModel

# train's evals: (Dataset, name) pairs, or one pair
Evals: TypeAlias = Union[Sequence[tuple[Dataset, str]], tuple[Dataset, str], None]
# a model to continue training: the model, or the path of its file
StartModel: TypeAlias = Union[Model, str, os.PathLike, None]
# the model continued, whose class the continued training returns
ContinuedT = TypeVar("ContinuedT", bound=Model)

__all__ = ["train", "lambda_max", "root_split_terms"]


def check_evals(evals: Evals, dtrain: Dataset) -> list:
    """``evals`` as a list of (Dataset, name) pairs with labels, the training data's
    features and distinct names."""
    if evals is None:
        return []
    if isinstance(evals, tuple) and len(evals) == 2 and isinstance(evals[0], Dataset):
        evals = [evals]
    out = []
    names = set()
    for item in evals:
        if not (isinstance(item, (tuple, list)) and len(item) == 2
                and isinstance(item[0], Dataset) and isinstance(item[1], str)):
            raise TypeError("evals must be a list of (Dataset, name) pairs")
        data, name = item
        if data.label is None:
            raise ValueError(f"evaluation data {name!r} has no label")
        if data.num_feature() != dtrain.num_feature():
            raise ValueError(f"evaluation data {name!r} has {data.num_feature()} features, "
                             f"training data has {dtrain.num_feature()}")
        if data.categories != dtrain.categories:
            # its codes number its own levels: scored as they are, they would be wrong
            try:
                data = data.coded_as(dtrain)
            except ValueError as exc:
                raise ValueError(f"evaluation data {name!r}: {exc} from the training "
                                 "data's: build it with reference=dtrain") from None
        if name in names:
            raise ValueError(f"two evaluation data sets are named {name!r}")
        names.add(name)
        out.append((data, name))
    return out


# The algorithm is a value in `params`, which a type checker cannot read (a dict literal is
# a dict[str, ...], not a TypedDict): what the signature can tell is that continuing a
# model (xgb_model) returns its class, and that an expensive_model makes a GatedModel.
@overload
def train(params: dict, dtrain: Dataset, num_boost_round: int = ..., *, evals: Evals = ...,
          early_stopping_rounds: int | None = ..., evals_result: dict | None = ...,
          verbose_eval: bool | int = ..., callbacks: list[TrainingCallback] | None = ...,
          xgb_model: ContinuedT, expensive_model: None = ...,
          obj: Callable | None = ..., custom_metric: Callable | None = ...,
          maximize: bool | None = ...) -> ContinuedT: ...


@overload
def train(params: dict, dtrain: Dataset, num_boost_round: int = ..., *, evals: Evals = ...,
          early_stopping_rounds: int | None = ..., evals_result: dict | None = ...,
          verbose_eval: bool | int = ..., callbacks: list[TrainingCallback] | None = ...,
          xgb_model: str | os.PathLike | None = ...,
          expensive_model: Model | ExternalModel,
          obj: Callable | None = ..., custom_metric: Callable | None = ...,
          maximize: bool | None = ...) -> GatedModel: ...


@overload
def train(params: dict, dtrain: Dataset, num_boost_round: int = ..., *, evals: Evals = ...,
          early_stopping_rounds: int | None = ..., evals_result: dict | None = ...,
          verbose_eval: bool | int = ..., callbacks: list[TrainingCallback] | None = ...,
          xgb_model: StartModel = ...,
          expensive_model: Model | ExternalModel | None = ...,
          obj: Callable | None = ..., custom_metric: Callable | None = ...,
          maximize: bool | None = ...) -> Model: ...


def train(params: dict, dtrain: Dataset, num_boost_round: int = 100, *, evals: Evals = (),
          early_stopping_rounds: int | None = None, evals_result: dict | None = None,
          verbose_eval: bool | int = True, callbacks: list[TrainingCallback] | None = None,
          xgb_model: StartModel = None,
          expensive_model: Model | ExternalModel | None = None, obj: Callable | None = None,
          custom_metric: Callable | None = None, maximize: bool | None = None) -> Model:
    """Train a cost-aware model.

    Parameters
    ----------
    params : dict
        Training parameters. ``params["algorithm"]`` selects the learner: "gbdt",
        "cegb", "greedy_miser" (a :class:`Booster`), "budget_rf" (a :class:`Forest`),
        "cstc" (a :class:`ClassifierTree`), "cscc", "cronus" (a :class:`Cascade`),
        "adapt_gbrt", "adapt_lin" (a :class:`GatedModel`). Each algorithm's parameters,
        defaults and method are documented in its module, ``cbudget.algorithms.<family>``
        (``cbudget.algorithms.parameter_docs(name)`` lists them); names are XGBoost's
        where one exists. An unknown name, or one another algorithm takes, raises
        ValueError saying so.
    dtrain : Dataset
        Training data with labels (and the feature costs).
    num_boost_round : int, default 100
        Iterations: boosting rounds, forest trees, CSTC sweeps, ADAPT alternations.
    evals : list of (Dataset, str)
        Data sets evaluated after every iteration (build them with ``reference=dtrain``
        to share bin edges).
    early_stopping_rounds : int, optional
        Stop when the last metric on the last eval set has not improved for this many
        iterations; ``best_iteration`` / ``best_score`` are set. Boosters and forests
        keep all iterations and predict (and count costs) up to the best one by default
        (``iteration_range=(0, 0)``: all); the other models are cut to the best one.
    evals_result : dict, optional
        Filled with ``{data name: {metric: [values]}}``.
    verbose_eval : bool or int, default True
        True: print the metrics every 10th iteration (and the last), and on long
        training a progress line every 10 seconds (:class:`ProgressMonitor`), with or
        without ``evals``; an int: the metrics every ``verbose_eval`` iterations (1:
        every one), and the progress lines; False: nothing.
    callbacks : list of TrainingCallback, optional
    xgb_model : model or path, optional
        Continue training this model (gbdt, cegb, greedy_miser, budget_rf; same
        objective, features and costs).
    expensive_model : cbudget model or ExternalModel
        adapt_gbrt / adapt_lin only: the expensive model the gate sends hard inputs to.
    obj : callable, optional
        gbdt, cegb, greedy_miser: a custom objective, as ``xgboost.train`` takes it,
        ``obj(preds, dtrain) -> (grad, hess)``: ``preds`` the raw scores ((n,), or (n,
        num_class) for multi:softprob), ``dtrain`` the training Dataset, ``grad`` and
        ``hess`` of the same shape with the sample weights applied. ``params``'
        objective (default reg:squarederror) still gives the base score, the label
        check, the prediction transform, the built-in metrics and the name the model is
        saved under.
    custom_metric : callable, optional
        gbdt, cegb, greedy_miser: ``custom_metric(preds, data) -> (name, value)`` (or a
        list of such pairs), evaluated on each eval set after the built-in metrics (so
        early stopping uses it). ``preds`` are the predictions (probabilities, means),
        or the raw scores when ``obj`` is given (as in XGBoost and LightGBM).
    maximize : bool, optional
        Early stopping: whether a larger metric is better (default: known for the
        built-in metrics, False for a custom one).

    Returns
    -------
    Model
        Booster, Forest, ClassifierTree, Cascade or GatedModel (see ``algorithm``). For
        a type checker the return is a :class:`Model` (the algorithm is a value in
        ``params``), the class of ``xgb_model`` when one is continued, a
        :class:`GatedModel` with ``expensive_model``: narrow it with ``isinstance`` (or
        ``typing.cast``) to use a model type's own methods and options.
    """
    algorithm, p, dtrain, setup = set_up_training(params, dtrain, num_boost_round, evals,
                                                  verbose_eval, xgb_model, expensive_model,
                                                  obj=obj, custom_metric=custom_metric)
    monitors = training_callbacks(callbacks, verbose_eval, early_stopping_rounds,
                                  num_boost_round, maximize)
    trainer = algorithm.trainer(p, dtrain, int(num_boost_round), setup)
    return run_training(trainer, CallbackContainer(monitors + trainer.callbacks()),
                        evals_result)


def training_callbacks(callbacks: Sequence[TrainingCallback] | None, verbose_eval: bool | int,
                       early_stopping_rounds: int | None,
                       num_boost_round: int, maximize: bool | None = None) -> list:
    """The user's callbacks and those that ``verbose_eval`` and ``early_stopping_rounds``
    ask for, checked (before the trainer's set-up work)."""
    monitors = list(callbacks or [])
    if verbose_eval:
        monitors.append(EvaluationMonitor(period=10 if verbose_eval is True else int(verbose_eval)))
        monitors.append(ProgressMonitor(int(num_boost_round)))
    if early_stopping_rounds is not None:
        monitors.append(EarlyStopping(early_stopping_rounds, maximize=maximize))
    CallbackContainer(monitors)
    return monitors


def lambda_max(params: dict, dtrain: Dataset, *, xgb_model: StartModel = None) -> float:
    """The smallest ``cost_tradeoff`` at which :func:`train` with ``params`` on
    ``dtrain`` makes no split that costs anything: no root split of the first tree can
    pay ``cost_tradeoff`` times its cost (its gain minus the penalty is at most
    ``gamma``), so the model predicts a constant (splits on free features aside).
    ``cost_tradeoff`` is meaningful below it, usually 1e-3 to 1e-1 times it;
    :func:`cbudget.cost_path` scans down from it. It scales with the loss's gains over
    the costs: double every cost and it halves. Computed on all rows and features: with
    ``subsample`` or ``colsample_bytree`` below 1, a round's sample may still find a
    split that pays.

    Parameters
    ----------
    params : dict
        As for :func:`train`; ``algorithm`` "cegb" or "greedy_miser" (its
        ``cost_tradeoff`` is ignored).
    dtrain : Dataset
    xgb_model : model or path, optional
        For training that continues this model: its trees' acquisitions count.

    Returns
    -------
    float
        0 when no costly split has a positive gain.

    Raises
    ------
    NotApplicableError
        For algorithms whose trade-off is not a split's cost penalty.
    """
    algorithm, p, dtrain, setup = set_up_training(params, dtrain, 1, (), False, xgb_model, None)
    return algorithm.lambda_max(p, dtrain, setup)


def root_split_terms(params: dict, dtrain: Dataset, *, xgb_model: StartModel = None) -> list:
    """What :func:`lambda_max` is computed from: per tree of the first round, the best
    raw gain of a root split on each feature (``-inf``: none allowed) and its cost
    increment (the penalty at ``cost_tradeoff=1``), on all rows and features.

    Returns
    -------
    list of (raw_gain, increment) pairs of float64 arrays (n_features,)
    """
    algorithm, p, dtrain, setup = set_up_training(params, dtrain, 1, (), False, xgb_model, None)
    return algorithm.root_split_terms(p, dtrain, setup)


def check_categorical_support(algorithm: Algorithm, dtrain: Dataset) -> None:
    """ValueError naming the categorical columns of ``dtrain`` when ``algorithm`` does
    not split categorical features (``Algorithm.splits_categories``)."""
    if len(dtrain.categories) and not algorithm.splits_categories:
        columns = [dtrain.feature_names[m] for m in dtrain.categorical_features]
        takers = [name for name, a in REGISTRY.items() if a.splits_categories]
        raise ValueError(f"algorithm {algorithm.name!r} does not split categorical features, "
                         f"and dtrain has {len(columns)}: {', '.join(map(repr, columns))}. "
                         f"Train with {', '.join(takers)}, or give these columns as numbers "
                         "(e.g. one-hot encoded) with categorical_feature=[]")


def set_up_training(params: dict, dtrain: Dataset, num_boost_round: int, evals: Evals,
                    verbose_eval: bool | int, xgb_model: StartModel,
                    expensive_model: Model | ExternalModel | None, *,
                    obj: Callable | None = None, custom_metric: Callable | None = None
                    ) -> tuple[Algorithm, dict[str, Any], Dataset, TrainingSetup]:
    """The checks of :func:`train`: (algorithm, resolved params, training data as the
    algorithm reads it, TrainingSetup)."""
    p = resolve_params(params)
    algorithm = get_algorithm(p["algorithm"])
    if not isinstance(dtrain, Dataset):
        raise TypeError(f"dtrain must be a cbudget.Dataset, got {type(dtrain).__name__}: "
                        "wrap the data and its label as cbudget.Dataset(X, label, "
                        "feature_costs=...)")
    if dtrain.label is None:
        raise ValueError("dtrain has no label")
    if dtrain.data.shape[0] != dtrain.num_data():
        raise ValueError("dtrain holds bins without their float rows "
                         "(Dataset.with_binned_rows, as on a Dask worker): train on a "
                         "Dataset of the rows")
    check_categorical_support(algorithm, dtrain)
    if expensive_model is not None and not algorithm.takes_expensive_model:
        takers = [name for name, a in REGISTRY.items() if a.takes_expensive_model]
        raise ValueError(f"expensive_model applies to algorithms {takers}, not to "
                         f"{algorithm.name!r}")
    if xgb_model is not None and algorithm.cannot_continue:
        raise ValueError(f"{algorithm.name} cannot continue a model (xgb_model): "
                         f"{algorithm.cannot_continue}")
    if isinstance(num_boost_round, bool) or not isinstance(num_boost_round, (int, np.integer)) \
            or not 0 <= num_boost_round <= INT_MAX:
        raise ValueError(f"num_boost_round must be an integer in [0, {INT_MAX}], got "
                         f"{num_boost_round!r}")
    dtrain, evals = algorithm.prepare_data(dtrain, check_evals(evals, dtrain))
    if dtrain.weight is not None and not np.all(dtrain.weight > 0):
        # a row of weight 0 is no training row: no count (min_data_in_leaf, CEGB's
        # acquisitions, bootstraps, summaries) and no statistic sees it; its values placed
        # no bin edge either (dataset.binning_rows), so this is the model without it
        dtrain = dtrain.subset(np.flatnonzero(dtrain.weight > 0))
    objective = get_objective(p["objective"], p["num_class"], p)
    for what, function in (("obj", obj), ("custom_metric", custom_metric)):
        if function is None:
            continue
        if not callable(function):
            raise TypeError(f"{what} must be a callable, got {type(function).__name__}")
        if not algorithm.takes_callables:
            takers = [name for name, a in REGISTRY.items() if a.takes_callables]
            raise NotApplicableError(f"{what} (a Python callable) applies to algorithms "
                                     f"{takers}, not to {algorithm.name!r}")
    if obj is not None:
        objective = CustomObjective(objective, obj, dtrain)
    if objective.needs_groups and dtrain.group_ptr is None:
        raise ValueError(f"objective {objective.name} ranks the documents of each query: "
                         "build dtrain with its query groups, Dataset(..., group=sizes) or "
                         "qid=ids")
    algorithm.check_data(p, objective, dtrain)
    objective.check_label(dtrain.required_label())
    for data, _ in evals:
        objective.check_label(data.label)
    metrics = p["eval_metric"] or [algorithm.default_metric(p, objective)]
    for metric in metrics:
        check_metric(metric, objective.name)
        if ranking_metric(metric) is not None:
            ungrouped = [name for data, name in evals if data.group_ptr is None]
            if ungrouped:
                raise ValueError(f"eval_metric {metric!r} ranks the documents of each query, "
                                 f"but evaluation data {ungrouped} has no query groups: "
                                 "build it with Dataset(..., group=sizes) or qid=ids")
    setup = TrainingSetup(objective=objective, metrics=metrics, evals=evals,
                          n_threads=resolve_n_threads(p["n_jobs"]),
                          verbose=bool(verbose_eval) and p["verbosity"] > 0,
                          xgb_model=xgb_model, expensive_model=expensive_model,
                          custom_metric=custom_metric)
    # before anything large is allocated: a clear error instead of a failing allocation
    # (or swapping) deep in the training
    check_memory(algorithm, p, dtrain, setup)
    return algorithm, p, dtrain, setup
