"""``train()``: validate, look the algorithm up, run its trainer in the training loop
(in the style of ``xgboost.train``)."""
from __future__ import annotations

import numpy as np

from ._core._openmp_helpers import resolve_n_threads
from ._model import Model
from .algorithms import REGISTRY, get_algorithm, resolve_params
from .callback import CallbackContainer, EarlyStopping, EvaluationMonitor, TrainingCallback
from .dataset import Dataset
from .engine import TrainingSetup, run_training
from .metrics import check_metric
from .objectives import get_objective

__all__ = ["train"]


def check_evals(evals, dtrain: Dataset) -> list:
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
        if name in names:
            raise ValueError(f"two evaluation data sets are named {name!r}")
        names.add(name)
        out.append((data, name))
    return out


def train(params: dict, dtrain: Dataset, num_boost_round: int = 100, *, evals=(),
          early_stopping_rounds: int | None = None, evals_result: dict | None = None,
          verbose_eval: bool | int = True, callbacks: list[TrainingCallback] | None = None,
          xgb_model=None, expensive_model=None) -> Model:
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
        Print the metrics every iteration (or every ``verbose_eval`` iterations).
    callbacks : list of TrainingCallback, optional
    xgb_model : model or path, optional
        Continue training this model (gbdt, cegb, greedy_miser, budget_rf; same
        objective, features and costs).
    expensive_model : cbudget model or ExternalModel
        adapt_gbrt / adapt_lin only: the expensive model the gate sends hard inputs to.

    Returns
    -------
    Model
        Booster, Forest, ClassifierTree, Cascade or GatedModel (see ``algorithm``).
    """
    p = resolve_params(params)
    algorithm = get_algorithm(p["algorithm"])
    if not isinstance(dtrain, Dataset):
        raise TypeError(f"dtrain must be a cbudget.Dataset, got {type(dtrain).__name__}")
    if dtrain.label is None:
        raise ValueError("dtrain has no label")
    if expensive_model is not None and not algorithm.takes_expensive_model:
        takers = [name for name, a in REGISTRY.items() if a.takes_expensive_model]
        raise ValueError(f"expensive_model applies to algorithms {takers}, not to "
                         f"{algorithm.name!r}")
    if xgb_model is not None and algorithm.cannot_continue:
        raise ValueError(f"{algorithm.name} cannot continue a model (xgb_model): "
                         f"{algorithm.cannot_continue}")
    if isinstance(num_boost_round, bool) or not isinstance(num_boost_round, (int, np.integer)) \
            or num_boost_round < 0:
        raise ValueError(f"num_boost_round must be an integer >= 0, got {num_boost_round!r}")
    dtrain, evals = algorithm.prepare_data(dtrain, check_evals(evals, dtrain))
    objective = get_objective(p["objective"], p["num_class"])
    algorithm.check_data(p, objective, dtrain)
    objective.check_label(dtrain.label)
    for data, _ in evals:
        objective.check_label(data.label)
    metrics = p["eval_metric"] or [algorithm.default_metric(p, objective)]
    for metric in metrics:
        check_metric(metric, objective.name)
    setup = TrainingSetup(objective=objective, metrics=metrics, evals=evals,
                          n_threads=resolve_n_threads(p["n_jobs"]),
                          verbose=bool(verbose_eval) and p["verbosity"] > 0,
                          xgb_model=xgb_model, expensive_model=expensive_model)
    monitors = list(callbacks or [])
    if verbose_eval:
        monitors.append(EvaluationMonitor(period=1 if verbose_eval is True else int(verbose_eval)))
    if early_stopping_rounds is not None:
        monitors.append(EarlyStopping(early_stopping_rounds))
    CallbackContainer(monitors)   # checked before the trainer's set-up work
    trainer = algorithm.trainer(p, dtrain, int(num_boost_round), setup)
    return run_training(trainer, CallbackContainer(monitors + trainer.callbacks()),
                        evals_result)
