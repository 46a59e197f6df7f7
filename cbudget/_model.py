"""The interface every cbudget model implements (:class:`Model`), and what it gives all of
them: cost reports, acquisitions, budgets, saving. See docs/architecture.md ("Models").

A model type subclasses :class:`Model`, sets ``model_type`` (the name in its files), is
registered with ``@register_model_type`` and implements:

* ``predict(X, ...)``;
* ``_cost_and_acquired(X)``: per-input cost and the (n_samples, n_features) 0/1 matrix
  of acquired features, for a prepared float matrix ``X``;
* ``used_features()``;
* ``read_steps(source, rows, **reads)``: the features predicting ``rows`` of a
  :class:`cbudget.FeatureSource` reads, step by step (see ``cbudget.on_demand``);
* ``to_dict()`` and the class method ``from_dict(doc, *, expensive_model=None)``.

Models built in stages (boosting rounds, forest trees) also implement
``num_iterations``, slicing, ``cost_curve`` and ``_staged_metric`` (behind
``staged_scores``); on the other models those raise :class:`NotApplicableError`.
"""
from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, ClassVar, NamedTuple, TypeAlias, Union

import numpy as np

from ._core._openmp_helpers import resolve_n_threads
from .categories import NO_CATEGORIES, Categories
from .costs import CostModel, CostReport
from .dataset import Dataset, InputData, prediction_input, query_boundaries_of
from .explain import Explanation
from .metrics import check_metric, metric_maximize
from .model_io import export_model
from .on_demand import FeatureSource, ReadSteps

__all__ = ["Model", "NotApplicableError", "BudgetChoice", "CostParts", "CostTracker"]


# What a model predicts on and reports the cost of: data in memory, or a source that
# fetches features on demand (cbudget.on_demand)
ModelInput: TypeAlias = Union[InputData, FeatureSource]

class NotApplicableError(TypeError):
    """A helper that does not apply to this model type (e.g. ``cost_curve`` of a model
    that is not built in stages); the message says why."""


class BudgetChoice(NamedTuple):
    """Result of :meth:`Model.best_iteration_within_budget`: predict with
    ``iteration_range=(0, iteration + 1)``."""
    iteration: int
    cost: float
    score: float
    metric: str


class CostParts(NamedTuple):
    """What each input's prediction cost is made of (see :meth:`Model.cost_parts`)."""
    acquired: np.ndarray      # bool (n_samples, n_features): the features it pays for
    other: np.ndarray         # float64 (n_samples,): split, tree and declared costs


class CostTracker:
    """The mean prediction cost of fixed inputs under a model that grows during training
    (see :meth:`Model.cost_tracker`). This one recomputes it from scratch each time;
    models built in stages return one that only adds the new stages."""

    def __init__(self, model: Model, X: ModelInput) -> None:
        self.X = model.prepare_input(X)

    def mean_cost(self, model: Model) -> float:
        """The mean cost of the inputs under ``model`` as it is now."""
        if self.X.shape[0] == 0:
            return 0.0
        return float(model.predict_cost(self.X).mean())


def _fetch_nothing(features: Any, rows: Any) -> Any:
    raise AssertionError("next_features never fetches")


class Model:
    """Base class of every cbudget model (Booster, Forest, ClassifierTree, Cascade,
    GatedModel).

    Attributes
    ----------
    algorithm : str
        The algorithm that trained it (``params["algorithm"]``).
    objective : str
    num_class : int
    feature_names : list of str
    cost_model : cbudget.CostModel
    params : dict
        The resolved training parameters.
    categories : cbudget.categories.Categories
        The categorical features and their levels (those of the training Dataset): a
        DataFrame is mapped by level, a numeric array taken as codes (docs/architecture.md,
        "Categorical features").
    best_iteration, best_score : set by early stopping (else None)
    summary : dict
        Training and validation cost, features used, and more per model type.
    """

    model_type: ClassVar[str] = ""
    # why exit rules (cbudget.exits) do not apply, for the models they do not
    no_exit_reason: ClassVar[str] = ("exit rules apply to boosted models, whose trees add "
                                     "up to the scores")
    # a gated model's file may leave its (external) expensive model out: load_model
    # takes it back
    loads_expensive_model: ClassVar[bool] = False
    # models of this class may be imported from other libraries (cbudget.interop), with
    # algorithm "imported"; the algorithms that train it are the registry's
    # (cbudget.model_io.algorithms_of)
    importable: ClassVar[bool] = False
    objective: str
    num_class: int

    def __init__(self, *, feature_names: Sequence[str], cost_model: CostModel, params: dict,
                 default_algorithm: str) -> None:
        self.feature_names = list(feature_names)
        self.cost_model = cost_model
        self.params = dict(params)
        self.algorithm = self.params.get("algorithm", default_algorithm)
        self.categories: Categories = NO_CATEGORIES
        self.best_iteration: int | None = None
        self.best_score: float | None = None
        self.summary: dict[str, Any] = {}

    # -- what each model type implements ------------------------------------------------
    def predict(self, X: ModelInput, *args: Any, **options: Any) -> Any:
        """Predictions for ``X`` (each model type documents its options)."""
        raise NotImplementedError

    def used_features(self) -> np.ndarray:
        """Sorted indices of the features the model can read."""
        raise NotImplementedError

    def used_feature_names(self, **options: Any) -> list[str]:
        """The names of :meth:`used_features` (same options), in feature order."""
        return [self.feature_names[m] for m in self.used_features(**options)]

    def _cost_and_acquired(self, X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        raise NotImplementedError

    def read_steps(self, source: FeatureSource, rows: np.ndarray, **reads: Any) -> ReadSteps:
        """The features that predicting the inputs ``rows`` of ``source`` reads, step
        by step: a generator that registers the (input, feature) pairs it needs next with
        ``source`` and yields; the source fetches them and resumes it (see
        ``cbudget.on_demand``). ``reads``: the prediction options that change what is
        read (``iteration_range``)."""
        raise NotImplementedError

    def to_dict(self) -> dict[str, Any]:
        """The JSON document of the model (see docs/architecture.md, "Model files")."""
        raise NotImplementedError

    @classmethod
    def from_dict(cls, doc: dict, *, expensive_model: Any = None) -> Model:
        """The model of a JSON document, validated (ValueError if it is not valid)."""
        raise NotImplementedError

    # -- inputs -------------------------------------------------------------------------
    def num_features(self) -> int:
        """Number of features the model was trained on."""
        return len(self.feature_names)

    def prepare_input(self, X: ModelInput, **reads: Any) -> np.ndarray:
        """``X`` (array, DataFrame, sparse or Dataset) as the float matrix the model
        reads; ValueError for a wrong number of features or other feature names.

        For a :class:`cbudget.FeatureSource`, first fetch what predicting with the
        options ``reads`` (``iteration_range``) reads; the matrix returned holds those
        values (NaN elsewhere, never read)."""
        if isinstance(X, FeatureSource):
            self._acquire(X, **reads)
            return X.values
        return prediction_input(X, self.feature_names, self.categories)

    def _all_read_steps(self, source: FeatureSource, **reads: Any) -> tuple[ReadSteps, Any]:
        """``source`` bound to this model, and (the read steps of all its inputs with the
        options ``reads``, the split and tree costs of that prediction) for its ``run``."""
        source.bind(self.feature_names, self.cost_model, self.categories)
        values = source.values
        return (self.read_steps(source, np.arange(source.n_samples, dtype=np.int64), **reads),
                lambda: self._structural_costs(values, **reads))

    def _acquire(self, source: FeatureSource, **reads: Any) -> Any:
        """Fetch from ``source`` what predicting all its inputs with the options
        ``reads`` reads; returns what :meth:`read_steps` returned."""
        return source.run(*self._all_read_steps(source, **reads))

    async def _aacquire(self, source: FeatureSource, **reads: Any) -> None:
        """Fetch asynchronously what :meth:`_acquire` would; the synchronous method
        then walks the complete source without fetching (one prediction code path)."""
        await source.arun(*self._all_read_steps(source, **reads))

    async def _awaited(self, method: str, source: FeatureSource, *args: Any,
                       **options: Any) -> Any:
        reads = {k: options[k] for k in ("iteration_range",) if k in options}
        await self._aacquire(source, **reads)
        return getattr(self, method)(source, *args, **options)

    async def apredict(self, source: FeatureSource, *args: Any, **options: Any) -> Any:
        """Awaitable :meth:`predict` for a source whose ``fetch`` may be ``async def``."""
        return await self._awaited("predict", source, *args, **options)

    async def apredict_proba(self, source: FeatureSource, *args: Any, **options: Any) -> Any:
        """Awaitable ``predict_proba``."""
        return await self._awaited("predict_proba", source, *args, **options)

    async def apredict_cost(self, source: FeatureSource) -> np.ndarray:
        """Awaitable :meth:`predict_cost`."""
        return await self._awaited("predict_cost", source)

    async def aacquisitions(self, source: FeatureSource) -> np.ndarray:
        """Awaitable :meth:`acquisitions`."""
        return await self._awaited("acquisitions", source)

    async def acost_report(self, source: FeatureSource) -> CostReport:
        """Awaitable :meth:`cost_report`."""
        return await self._awaited("cost_report", source)

    def _structural_costs(self, X: np.ndarray, **reads: Any) -> np.ndarray:
        """Per input of the prepared ``X``: the split and tree costs of predicting it."""
        costs = self.cost_model
        if not (costs.split_cost or costs.tree_cost):
            return np.zeros(X.shape[0])
        return costs.structural_costs(*self._cost_and_acquired(X, **reads))

    def next_features(self, known_values: Mapping[int | str, float], *,
                      names: bool | None = None) -> list[int] | list[str]:
        """For one input, the features to acquire next, given those known so far.

        Parameters
        ----------
        known_values : mapping {feature index or name: value}
            The features known so far (NaN: known to be missing); a categorical
            feature's level as a DataFrame holds it (see :attr:`categories`).
        names : bool, optional
            Return feature names (True) or indices (False). Default: names when the
            keys of ``known_values`` are names, indices when they are indices (or
            there are none).

        Returns
        -------
        list of int or list of str
            The features the prediction needs next (all trees, or the current node, at
            once), sorted by index; [] when the prediction is ready: then ``predict``
            on a row holding the known values (anything elsewhere, e.g. NaN) gives it,
            reading only known values.

        Examples
        --------
        >>> answers = {}
        >>> while (ask := model.next_features(answers)):
        ...     answers.update({m: ask_user(model.feature_names[m]) for m in ask})
        """
        if not isinstance(known_values, Mapping):
            raise TypeError("known_values must be a mapping {feature index or name: value}")
        source = FeatureSource(_fetch_nothing, 1,
                               known={key: [value] for key, value in known_values.items()})
        source.bind(self.feature_names, self.cost_model, self.categories)
        needed = source.first_requests(self.read_steps(source, np.zeros(1, dtype=np.int64)))
        if names is None:
            names = bool(known_values) and all(isinstance(k, str) for k in known_values)
        return [self.feature_names[m] for m in needed] if names else needed

    def n_threads(self) -> int:
        """Threads the model predicts with (its ``n_jobs`` parameter; None: all cores)."""
        return resolve_n_threads(self.params.get("n_jobs"))

    # -- prediction cost ----------------------------------------------------------------
    def predict_cost(self, X: ModelInput) -> np.ndarray:
        """Prediction cost of each input (the cost model of docs/architecture.md): each
        feature it reads paid once, its cost group once, plus split, tree and declared
        costs.

        Returns
        -------
        ndarray of float64, shape (n_samples,)
        """
        return self._cost_and_acquired(self.prepare_input(X))[0]

    def acquisitions(self, X: ModelInput) -> np.ndarray:
        """The features each input pays for.

        Returns
        -------
        ndarray of bool, shape (n_samples, n_features)
            True where predicting the input reads the feature.
        """
        return self._cost_and_acquired(self.prepare_input(X))[1].astype(bool)

    def cost_parts(self, X: ModelInput) -> CostParts:
        """Each input's acquired features and its other costs (split, tree, declared):
        what a model that contains this one (a gated model) combines with its other
        parts, paying each feature once."""
        cost, acquired = self._cost_and_acquired(self.prepare_input(X))
        return CostParts(acquired.astype(bool),
                         self.cost_model.structural_costs(cost, acquired))

    def cost_report(self, X: ModelInput) -> CostReport:
        """Mean cost, per-input cost, per-feature acquisition rates, features used and the
        fixed coupled cost of predicting ``X``."""
        cost, acquired = self._cost_and_acquired(self.prepare_input(X))
        return self._report(cost, acquired, self.used_features(), X)

    def _report(self, cost: np.ndarray, acquired: np.ndarray, used: np.ndarray,
                X: Any) -> CostReport:
        """The :class:`CostReport` of predicting ``X`` at per-input ``cost`` with the
        ``acquired`` features, the model using the features ``used``."""
        return self.cost_model.report(cost, acquired, used, self.feature_names,
                                      query_boundaries_of(X), categories=self.categories)

    def cost_tracker(self, X: ModelInput) -> CostTracker:
        """An object whose ``mean_cost(model)`` gives the mean cost of ``X`` as the model
        grows during training (used by :class:`cbudget.BudgetStopping`)."""
        return CostTracker(self, X)

    def _summarise_costs(self, train_cost: float, evals: Iterable[tuple[str, Dataset]],
                         **extra: Any) -> None:
        """The cost ``summary`` after training: training and validation cost, features
        used, their coupled cost, and ``extra``."""
        used = self.used_features()
        self.summary = {
            "train_cost": float(train_cost),
            "valid_cost": {name: float(self.predict_cost(data).mean()) for name, data in evals},
            "features_used": [self.feature_names[m] for m in used],
            "coupled_cost": self.cost_model.coupled_cost(used),
            **extra,
        }

    # -- early exit ---------------------------------------------------------------------
    def calibrate_exits(self, data: Dataset, epsilon: float = 0.01, **options: Any) -> Any:
        """Calibrate exit rules on validation ``data`` (see :meth:`Booster.calibrate_exits`,
        :meth:`GatedModel.calibrate_exits`); NotApplicableError for the other models."""
        raise NotApplicableError(f"calibrate_exits does not apply to a {type(self).__name__} "
                                 f"({self.algorithm}): {self.no_exit_reason}")

    # -- explanations -------------------------------------------------------------------
    def _no_contributions(self, what: str) -> NotApplicableError:
        return NotApplicableError(
            f"{what} does not apply to a {type(self).__name__} ({self.algorithm}): TreeSHAP "
            "explains tree ensembles whose trees add up to the prediction (a Booster, a "
            "Forest), and this model routes each input to linear classifiers or, through "
            "a gate, to one of its models")

    def explain(self, X: ModelInput, *, iteration_range: tuple[int, int] | None = None
                ) -> Explanation:
        """Per input and feature, the contribution to the prediction and the cost paid
        for it (see :meth:`cbudget.Booster.explain`); NotApplicableError for the models
        that are not sums of trees."""
        raise self._no_contributions("explain")

    # -- stages -------------------------------------------------------------------------
    def _no_stages(self, what: str) -> NotApplicableError:
        return NotApplicableError(
            f"{what} does not apply to a {type(self).__name__} ({self.algorithm}), which is "
            "optimised as a whole: it applies to models built in stages (a Booster's "
            "rounds, a Forest's trees)")

    def num_iterations(self) -> int:
        """Number of iterations (boosting rounds; trees of a forest)."""
        raise self._no_stages("num_iterations")

    def __getitem__(self, key: Any) -> Model:
        raise self._no_stages("slicing")

    def cost_curve(self, X: ModelInput) -> np.ndarray:
        """Mean prediction cost of ``X`` using iterations ``0..r``, for each ``r``."""
        raise self._no_stages("cost_curve")

    def _staged_metric(self, data: Dataset, metric: str) -> np.ndarray:
        raise self._no_stages("staged scores")

    def staged_scores(self, data: Dataset, metric: str | None = None) -> np.ndarray:
        """``metric`` on ``data`` of the model of iterations ``0..r``, for each ``r``
        (with :meth:`cost_curve`, the accuracy-against-cost curve of training).

        Parameters
        ----------
        data : Dataset with labels
        metric : str, optional
            Default: the model's (:attr:`default_metric`).

        Returns
        -------
        ndarray of shape (num_iterations,)

        Raises
        ------
        NotApplicableError
            For models not built in stages.
        """
        if not isinstance(data, Dataset) or data.label is None:
            raise TypeError("data must be a cbudget.Dataset with labels")
        metric = metric or self.default_metric
        check_metric(metric, self.objective)
        return self._staged_metric(data, metric)

    @property
    def default_metric(self) -> str:
        """The metric evaluation and budget choices use by default."""
        raise NotImplementedError

    def best_iteration_within_budget(self, data: Dataset, budget: float, *,
                                     metric: str | None = None) -> BudgetChoice:
        """The iteration whose model (iterations ``0..r``) scores best on ``data`` among
        those whose mean prediction cost on ``data`` is at most ``budget``.

        The cost can only grow with the iterations, so the candidates are the first ones
        up to the last one within budget. Ties go to the earlier (cheaper) iteration.

        Parameters
        ----------
        data : Dataset with labels (validation data)
        budget : float
        metric : str, optional
            Default: the model's (e.g. ``mlogloss`` for a multi-class booster).

        Returns
        -------
        BudgetChoice
            ``(iteration, cost, score, metric)``.

        Raises
        ------
        ValueError
            If even the first iteration costs more than ``budget``.
        NotApplicableError
            For models not built in stages.
        """
        if not isinstance(data, Dataset) or data.label is None:
            raise TypeError("data must be a cbudget.Dataset with labels")
        budget = float(budget)
        if not budget >= 0:
            raise ValueError(f"budget must be >= 0, got {budget}")
        if self.num_iterations() == 0:
            raise ValueError("the model has no iterations")
        metric = metric or self.default_metric
        scores = self.staged_scores(data, metric)
        curve = self.cost_curve(data)
        within = np.flatnonzero(curve <= budget)
        if within.size == 0:
            raise ValueError(f"no iteration is within budget {budget}: the first alone "
                             f"costs {curve[0]:.6g} per input")
        scores = scores[within]
        best = int(np.argmax(scores) if metric_maximize(metric) else np.argmin(scores))
        r = int(within[best])
        return BudgetChoice(iteration=r, cost=float(curve[r]), score=float(scores[best]),
                            metric=metric)

    # -- importance ---------------------------------------------------------------------
    def feature_importance(self, kind: str = "split") -> np.ndarray:
        """Per-feature importance (see the model class for the kinds it offers)."""
        raise NotApplicableError(f"feature_importance does not apply to a "
                                 f"{type(self).__name__}")

    def feature_importance_by_name(self, kind: str = "split", **options: Any) -> dict[str, float]:
        """:meth:`feature_importance` (same arguments) as ``{feature name: importance}``
        for the features with a non-zero importance, the most important first."""
        importance = self.feature_importance(kind, **options)
        order = np.argsort(-importance, kind="stable")
        return {self.feature_names[m]: float(importance[m]) for m in order if importance[m]}

    # -- files --------------------------------------------------------------------------
    def save_model(self, path: str | os.PathLike, format: str = "cbudget",
                   **options: Any) -> None:
        """Write the model to ``path``, whole or not at all.

        ``format``: "cbudget" (every model): cbudget's JSON model file
        (docs/architecture.md, "Model files"), read back by :func:`cbudget.load_model`
        with everything. For the runtimes that serve models (docs/architecture.md,
        "Interoperability"): "xgboost" (a :class:`cbudget.Booster`): XGBoost's JSON, or
        UBJSON for a ``.ubj`` path (option ``levels``;
        :func:`cbudget.interop.to_xgboost.save_xgboost`); "lightgbm" (a Booster):
        LightGBM's text format (:func:`cbudget.interop.to_lightgbm.save_lightgbm`);
        "onnx" (a Booster or :class:`cbudget.Forest`; option ``dtype``, "float64" or
        "float32"; needs the onnx package): :func:`cbudget.interop.to_onnx.save_onnx`.
        These hold the trees, not the cost model, cost stages or exit rules: saving a
        model that has them warns (:class:`cbudget.ExportWarning`). The formats are
        registered in :mod:`cbudget.model_io` (``register_exporter``); ValueError for an
        unknown one, one that cannot hold this model, or a file name of another format's
        (``.onnx``: "onnx"; ``.ubj``: "xgboost")."""
        export_model(self, path, format, **options)
