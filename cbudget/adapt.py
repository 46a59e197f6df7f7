"""Gated models: ADAPT-GBRT and ADAPT-LIN (Nan and Saligrama, "Adaptive Classification
for Prediction Under a Budget", NIPS 2017).

A low-cost gate ``g`` reads each input and sends it either to a low-cost predictor
``f1`` or to a given expensive model ``f0``: to ``f0`` when ``g(x) > gate_threshold``
(0: the gate's probability ``sigmoid(g(x))`` of sending to ``f0`` is above one half).
Prediction cost (docs/architecture.md, "Cost model"): the features the gate reads for the input,
plus those ``f1`` or ``f0`` reads for it, each feature (and cost group) paid once;
plus the split and tree costs of the parts the input goes through. When ``f0`` is not a
cbudget model, its cost is declared (:class:`ExternalModel`).
"""
from __future__ import annotations

import math
import numbers
import os
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Literal, TypeAlias, Union, overload

import numpy as np
from numpy.typing import ArrayLike
from scipy.special import expit

from ._core._linear import readable
from ._model import CostParts, Model, ModelInput, NotApplicableError
from .booster import Booster
from .costs import CostModel, CostReport, resolve_feature
from .dataset import (
    Dataset,
    InputData,
    labelled_data,
    prediction_input,
    zero_one_labels,
)
from .exits import EPSILON_GRID, EXIT_FOLDS, best_epsilon, exit_folds
from .metrics import check_metric, evaluate_on, metric_maximize
from .model_io import (
    checked_params,
    file_section,
    finite_number,
    invalid,
    model_header,
    nested_model_from_dict,
    number_list,
    read_attributes,
    read_header,
    register_model_type,
    require,
)
from .on_demand import FeatureSource, ReadSteps, in_lockstep

__all__ = ["ExternalModel", "GatedModel", "LinearClassifier", "calibrated_threshold", "q_step",
           "positive_probability", "is_binary_classifier"]

# probabilities of the expensive model are clipped to [EPS, 1 - EPS] before logs
PROBABILITY_EPS = 1e-12

# An external expensive model's declared cost: per input, or a function of the inputs
DeclaredCost: TypeAlias = Union[float, Callable[[np.ndarray], ArrayLike]]


def q_step(excess_loss: ArrayLike, p_full: float,
           weight: np.ndarray | None = None) -> tuple[np.ndarray, float]:
    """The closed-form q-step of (OPT1): ``q_i = 1 / (1 + exp(B_i - A_i + beta))``, the
    probability of sending input ``i`` to the expensive model, with the smallest
    ``beta >= 0`` that keeps the (weighted) mean of ``q`` at most ``p_full``.

    Parameters
    ----------
    excess_loss : ndarray of shape (n_samples,)
        ``A_i - B_i``: the loss of ``f1`` (and of the gate for keeping it) minus the
        loss of ``f0`` (and of the gate for sending it).
    p_full : float in [0, 1]
    weight : ndarray of shape (n_samples,), optional

    Returns
    -------
    q : ndarray of shape (n_samples,)
    beta : float
    """
    excess_loss = np.asarray(excess_loss, dtype=np.float64)
    weight = (np.full(excess_loss.shape[0], 1.0 / excess_loss.shape[0]) if weight is None
              else weight / weight.sum())
    if p_full <= 0:
        return np.zeros_like(excess_loss), np.inf

    def mean_q(beta: float) -> float:
        return weight @ expit(excess_loss - beta)

    if mean_q(0.0) <= p_full:
        return expit(excess_loss), 0.0
    low, high = 0.0, 1.0
    while mean_q(high) > p_full:
        low, high = high, 2.0 * high
    for _ in range(200):     # bisection to the resolution of the doubles
        mid = 0.5 * (low + high)
        if mid in (low, high):
            break
        if mean_q(mid) > p_full:
            low = mid
        else:
            high = mid
    return expit(excess_loss - high), high


def calibrated_threshold(margin: np.ndarray, weight: np.ndarray, p_full: float) -> float:
    """The gate threshold that sends to the expensive model the largest share, at most
    ``p_full`` (weighted), of the inputs with the highest ``margin`` (those strictly
    above it; ties stay below). It is the midpoint of the gap between the last margin
    sent and the first kept, so that new inputs near either side go the same way.

    Parameters
    ----------
    margin : ndarray of shape (n_samples,)
        The gate's margins on the training inputs.
    weight : ndarray of shape (n_samples,)
        Their weights (not all zero). The inputs of weight 0 have no say: neither their
        share nor their margins place the threshold.
    p_full : float in [0, 1]

    Returns
    -------
    float
    """
    counted = weight > 0
    margin, weight = margin[counted], weight[counted]
    order = np.argsort(-margin, kind="stable")
    ranked = margin[order]
    share = np.cumsum(weight[order]) / weight.sum()
    k = int(np.searchsorted(share, p_full * (1 + 1e-12), side="right"))
    while 0 < k < ranked.shape[0] and ranked[k - 1] == ranked[k]:
        k -= 1            # a tie at the boundary stays below
    if k >= ranked.shape[0]:
        return float(ranked[-1] - 1.0)
    if k == 0:
        return float(ranked[0])
    return float(0.5 * (ranked[k - 1] + ranked[k]))


def is_binary_classifier(model: Model) -> bool:
    """Whether a cbudget model predicts P(y = 1), as an expensive model must."""
    return model.objective == "binary:logistic" and model.num_class in (1, 2)


def positive_probability(model: Model | ExternalModel, X: np.ndarray, **options: Any
                         ) -> np.ndarray:
    """P(y = 1) of the rows of the prepared matrix ``X`` by an expensive model: an
    :class:`ExternalModel`'s, a forest's vote shares (its ``predict`` gives classes), any
    other binary cbudget model's ``predict`` (with ``options``)."""
    if isinstance(model, ExternalModel):
        return model.positive_proba(X)
    if callable(getattr(model, "predict_proba", None)):
        return model.predict_proba(X)[:, 1]  # type: ignore[attr-defined]  # a Forest has it
    return model.predict(X, **options)


def positive_log_loss(margin: np.ndarray, y01: np.ndarray) -> np.ndarray:
    """Per-input logistic loss ``log(1 + exp(-y f))`` of margins ``f`` for 0/1 labels."""
    return np.logaddexp(0.0, margin) - y01 * margin


class ExternalModel:
    """An expensive model ``f0`` that is not a cbudget model, with its prediction cost.

    Parameters
    ----------
    model : object with ``predict_proba(X)``
        A fitted binary classifier (scikit-learn, LightGBM or XGBoost estimators...). It
        is given numpy arrays with the training data's columns, a categorical feature's
        as its codes (the positions of its levels in the model's
        :attr:`~cbudget.Model.categories`, NaN for missing). The probability of the
        positive class is the column of the largest of ``model.classes_`` (column 1
        without ``classes_``).
    cost : float >= 0 or callable, optional
        Its cost per input (a callable maps the inputs ``X`` to per-input costs). It is
        added to the gate's cost: nothing is shared with the gate.
    features : "all" or list of feature names / indices, optional
        The features it reads instead: an input sent to it pays for those it has not
        acquired in the gate (each once, cost groups included). On-demand prediction
        (:class:`cbudget.FeatureSource`) fetches them for the inputs sent to it, and
        gives it 0 in the other columns.

    Notes
    -----
    Give exactly one of ``cost`` and ``features``. A per-input cost array of a given
    data set can also be passed to :meth:`GatedModel.predict_cost`.
    """

    def __init__(self, model: Any, *, cost: DeclaredCost | None = None,
                 features: Literal["all"] | Iterable[str | int] | None = None) -> None:
        if not callable(getattr(model, "predict_proba", None)):
            raise TypeError(f"the expensive model must have a predict_proba method; "
                            f"{type(model).__name__} has none")
        if (cost is None) == (features is None):
            raise ValueError("declare the expensive model's prediction cost: give exactly one "
                             "of cost= (a number or a callable X -> per-input costs) and "
                             "features= (the features it reads, or 'all')")
        if cost is not None and not callable(cost):
            if isinstance(cost, bool) or not isinstance(cost, numbers.Real) \
                    or not np.isfinite(cost) or cost < 0:
                raise ValueError(f"cost must be a finite number >= 0 or a callable, got {cost!r}")
            cost = float(cost)
        if features is not None and not (isinstance(features, str) and features == "all"):
            if isinstance(features, str) or not hasattr(features, "__iter__"):
                raise TypeError("features must be 'all' or a list of feature names / indices")
            features = list(features)
        self.model = model
        self.cost: DeclaredCost | None = cost
        self.features: str | list[str | int] | None = features

    def positive_proba(self, X: np.ndarray) -> np.ndarray:
        """P(y = 1) for the rows of ``X``, as float64 of shape (n_samples,)."""
        if X.shape[0] == 0:
            return np.zeros(0)
        proba = np.asarray(self.model.predict_proba(X), dtype=np.float64)
        if proba.ndim != 2 or proba.shape != (X.shape[0], 2):
            raise ValueError(f"the expensive model's predict_proba returned shape "
                             f"{proba.shape}; a binary classifier gives ({X.shape[0]}, 2)")
        classes = getattr(self.model, "classes_", None)
        column = 1 if classes is None else int(np.argmax(np.asarray(classes)))
        return proba[:, column]

    def feature_indices(self, feature_names: Sequence[str]) -> np.ndarray | None:
        """The declared features as sorted indices (None when a cost is declared)."""
        if self.features is None:
            return None
        if isinstance(self.features, str):
            return np.arange(len(feature_names), dtype=np.int64)
        return np.unique(np.array([resolve_feature(key, list(feature_names), "features")
                                   for key in self.features], dtype=np.int64))

    def read_steps(self, source: FeatureSource, rows: np.ndarray) -> ReadSteps:
        """The declared features, for every input sent to it, in one round."""
        assert source.feature_names is not None
        features = self.feature_indices(source.feature_names)
        if features is None:
            raise NotApplicableError(
                "on-demand prediction does not apply to a gated model whose external "
                "expensive model declares a cost instead of its features: declare what it "
                "reads with cbudget.ExternalModel(model, features=[...] or 'all') (the other "
                "columns it is given are 0)")
        source.request(rows, features)
        if source.has_pending():
            yield

    def declared_cost(self, X: np.ndarray) -> np.ndarray:
        """The declared per-input cost of ``X`` (zeros when features are declared)."""
        if self.cost is None:
            return np.zeros(X.shape[0])
        if callable(self.cost):
            cost = np.asarray(self.cost(X), dtype=np.float64)
            if cost.shape != (X.shape[0],) or not np.all(np.isfinite(cost)) or np.any(cost < 0):
                raise ValueError(f"the expensive model's cost callable must return "
                                 f"{X.shape[0]} finite costs >= 0")
            return cost
        return np.full(X.shape[0], self.cost)

    def __repr__(self) -> str:
        declared = f"cost={self.cost!r}" if self.features is None else f"features={self.features!r}"
        return f"ExternalModel({type(self.model).__name__}, {declared})"


class LinearClassifier:
    """A linear score ``x @ weights + bias`` (ADAPT-LIN's gate or low-cost predictor).

    A value that is missing, infinite or of magnitude ``MAX_INPUT`` (2**512) or more
    counts as ``impute`` (the feature's training mean; see
    :func:`cbudget._core._linear.readable`). The features with a non-zero weight are
    acquired for every input it scores.
    """

    model_type = "linear"

    def __init__(self, weights: ArrayLike, bias: float, impute: ArrayLike, *,
                 feature_names: Sequence[str], cost_model: CostModel) -> None:
        self.weights = np.ascontiguousarray(weights, dtype=np.float64)
        self.bias = float(bias)
        self.impute = np.ascontiguousarray(impute, dtype=np.float64)
        self.feature_names = list(feature_names)
        self.cost_model = cost_model
        n = len(self.feature_names)
        if self.weights.shape != (n,) or self.impute.shape != (n,):
            raise ValueError(f"weights and impute must have one entry per feature ({n})")
        if not (np.all(np.isfinite(self.weights)) and np.all(np.isfinite(self.impute))
                and np.isfinite(self.bias)):
            raise ValueError("weights, bias and impute must be finite")

    def used_features(self) -> np.ndarray:
        """Sorted indices of the features with a non-zero weight."""
        return np.flatnonzero(self.weights).astype(np.int64)

    def read_steps(self, source: FeatureSource, rows: np.ndarray) -> ReadSteps:
        """The features with a non-zero weight, for every input, in one round."""
        source.request(rows, self.used_features())
        if source.has_pending():
            yield

    def decision_function(self, X: np.ndarray) -> np.ndarray:
        """Scores of the rows of ``X`` (prepared float matrix)."""
        used = self.used_features()
        values = np.array(X[:, used], dtype=np.float64)
        bad = ~readable(values)
        values[bad] = np.broadcast_to(self.impute[used], values.shape)[bad]
        # feature by feature, not a matrix-vector product (BLAS's, and numpy's sums,
        # round a row by its place in the matrix): a row scores the same in any batch
        score = np.zeros(values.shape[0])
        for column, weight in zip(values.T, self.weights[used]):
            score += column * weight
        return score + self.bias

    def predict(self, X: InputData, *, output_margin: bool = False) -> np.ndarray:
        """Scores (``output_margin``) or ``sigmoid`` of the scores, of shape (n_samples,)."""
        score = self.decision_function(prediction_input(X, self.feature_names))
        return score if output_margin else expit(score)

    def cost_parts(self, X: InputData) -> CostParts:
        """Every input acquires the features with a non-zero weight; nothing else costs."""
        n_samples = prediction_input(X, self.feature_names).shape[0]
        acquired = np.zeros((n_samples, len(self.feature_names)), dtype=bool)
        acquired[:, self.used_features()] = True
        return CostParts(acquired, np.zeros(n_samples))

    def feature_importance(self, kind: str = "split") -> np.ndarray:
        """"split": 1 for a feature with a non-zero weight; "gain": the weight's magnitude
        (on the features' own scale)."""
        if kind == "split":
            return (self.weights != 0).astype(np.float64)
        if kind == "gain":
            return np.abs(self.weights)
        raise NotApplicableError(f"{kind!r} importance does not apply to a linear classifier")

    def to_dict(self) -> dict[str, Any]:
        """The classifier's document: ``model_type`` "linear", ``weights``, ``bias`` and
        ``impute`` (in a gated model's ``gate`` or ``predictor``)."""
        return {"model_type": "linear", "weights": self.weights.tolist(), "bias": self.bias,
                "impute": self.impute.tolist()}

    @classmethod
    def from_dict(cls, d: dict[str, Any], name: str, feature_names: Sequence[str],
                  cost_model: CostModel) -> LinearClassifier:
        """The linear part ``name`` of a gated model's document."""
        weights = number_list(require(d, "weights", list, f"{name}."), f"{name}.weights",
                              len(feature_names))
        impute = number_list(require(d, "impute", list, f"{name}."), f"{name}.impute",
                             len(feature_names))
        bias = require(d, "bias", (int, float), f"{name}.")
        try:
            return cls(weights, bias, impute, feature_names=feature_names,
                       cost_model=cost_model)
        except ValueError as exc:
            raise invalid(f"{name}: {exc}") from None

    def __repr__(self) -> str:
        return f"<cbudget.LinearClassifier {self.used_features().size} features>"


@register_model_type
class GatedModel(Model):
    """A gate, a low-cost predictor and an expensive model (ADAPT-GBRT / ADAPT-LIN).
    Made by :func:`cbudget.train` with ``algorithm`` "adapt_gbrt" or "adapt_lin", or by
    :func:`cbudget.load_model`.

    Attributes
    ----------
    gate : Booster or LinearClassifier
        ``g``: an input goes to the expensive model when its margin is above
        ``gate_threshold``.
    predictor : Booster or LinearClassifier
        ``f1``, the low-cost predictor (margins; probabilities by the sigmoid).
    expensive : cbudget model, ExternalModel or None
        ``f0`` (None after loading a model whose external ``f0`` was not given).
    gate_threshold : float, default 0
    objective : "binary:logistic"
    feature_names, cost_model, params, best_iteration, best_score, summary
    """

    model_type = "gated"
    loads_expensive_model = True
    no_exit_reason = ("its gate and low-cost predictor are linear (adapt_lin): no stages to "
                      "exit from; exit rules apply to boosted parts (adapt_gbrt)")
    objective = "binary:logistic"
    num_class = 1
    default_metric = "logloss"

    def __init__(self, *, gate: Booster | LinearClassifier,
                 predictor: Booster | LinearClassifier,
                 expensive: Model | ExternalModel | None, feature_names: Sequence[str],
                 cost_model: CostModel, params: dict[str, Any],
                 gate_threshold: float = 0.0) -> None:
        super().__init__(feature_names=feature_names, cost_model=cost_model, params=params,
                         default_algorithm="adapt_gbrt")
        self.gate = gate
        self.predictor = predictor
        self.expensive = expensive
        self.gate_threshold = float(gate_threshold)

    def _expensive(self) -> Model | ExternalModel:
        if self.expensive is None:
            raise ValueError("this gated model has no expensive model: it was saved with an "
                             "external one; load it with cbudget.load_model(path, "
                             "expensive_model=...)")
        return self.expensive

    def _expensive_proba(self, X: np.ndarray, early_exit: bool | None = None) -> np.ndarray:
        f0 = self._expensive()
        return positive_probability(f0, X, **self._exit_options(f0, early_exit))

    def _exit_options(self, part: Model | ExternalModel | LinearClassifier,
                      early_exit: bool | None) -> dict[str, Any]:
        """The ``early_exit`` option for a part. ``True`` asks for the exits of the gate
        and the low-cost predictor (NotApplicableError when neither is a booster); an
        expensive booster uses its own rules, if any, unless ``early_exit`` is False."""
        if early_exit and not any(isinstance(p, Booster) for p in (self.gate, self.predictor)):
            raise NotApplicableError(f"early exit does not apply to this gated model: "
                                     f"{self.no_exit_reason}")
        if not isinstance(part, Booster):
            return {}
        if part is not self.gate and part is not self.predictor and early_exit:
            return {"early_exit": None}
        return {"early_exit": early_exit}

    def _margin(self, part: Booster | LinearClassifier, X: np.ndarray,
                early_exit: bool | None = None) -> np.ndarray:
        return part.predict(X, output_margin=True, **self._exit_options(part, early_exit))

    def route(self, X: ModelInput, *, early_exit: bool | None = None) -> np.ndarray:
        """0 where the expensive model serves the input, 1 where the low-cost predictor
        does (the paper's z), int8 of shape (n_samples,); ``early_exit`` as for
        :meth:`predict`."""
        return self._route(self.prepare_input(X, early_exit=early_exit), early_exit)

    def _route(self, X: np.ndarray, early_exit: bool | None = None) -> np.ndarray:
        return np.where(self._margin(self.gate, X, early_exit) > self.gate_threshold, 0, 1) \
            .astype(np.int8)

    def read_steps(self, source: FeatureSource, rows: np.ndarray,
                   early_exit: bool | None = None, **reads: Any) -> ReadSteps:
        """The gate's features first; then, together, the low-cost predictor's for the
        inputs it keeps and the expensive model's for those it sends on (each booster
        stopping at its exits)."""
        f0 = self._expensive()
        yield from self.gate.read_steps(source, rows, **self._exit_options(self.gate, early_exit))
        # the route of all rows, as predict computes it (the same arithmetic); the rows
        # not walked here are never used
        route = self._route(source.values, early_exit)[rows]
        yield from in_lockstep(
            self.predictor.read_steps(source, rows[route == 1],
                                      **self._exit_options(self.predictor, early_exit)),
            f0.read_steps(source, rows[route == 0], **self._exit_options(f0, early_exit)))

    def calibrate_exits(self, data: InputData, epsilon: float | None = None, *,
                        every: int = 1, tolerance: float | None = None,
                        outputs: str = "calibrated",
                        hold: float | Sequence[int | str] | None = None,
                        checks: str | Sequence[int] | None = None,
                        max_metric_drop: float | None = None, metric: str | None = None,
                        **options: Any) -> dict[str, Any]:
        """Exit rules for the gate and the low-cost predictor (the boosters among them),
        calibrated on validation ``data`` (:meth:`cbudget.Booster.calibrate_exits` for
        each part): the gate's so that its exited route differs from its full route on
        at most a fraction ``epsilon`` of the inputs, then the predictor's on the inputs
        the gate (with its exits) keeps, so that its output disagrees with its full
        output on at most ``epsilon`` of them. Each part keeps its rules (its
        ``exit_rules``), saved with the model. The weights of a ``data`` Dataset weigh
        both parts' ``epsilon`` and the predictor's output maps (those of the inputs the
        gate keeps). A failed calibration leaves both parts' rules as they were.

        The gate only routes: an exit there agrees when it keeps the input's side of
        :attr:`gate_threshold`, and nothing else of its score reaches the prediction. So
        ``tolerance`` and ``outputs``, which are about the probability predicted, apply
        to the predictor, and the gate's exits keep their partial scores (an output map
        keeps the side of the threshold, so it could change no route).

        Parameters
        ----------
        data : array-like or Dataset
            Validation inputs (labels needed only with ``max_metric_drop``).
        epsilon : float in [0, 1], optional
            Default 0.01 (unless ``max_metric_drop`` is given). 0: certified, for any
            input: the gate's exits change no route, the predictor's no class (and with
            ``tolerance`` no probability by more than it).
        every : int, default 1
            Iterations between two checks, in both parts.
        tolerance : float in [0, 1], optional
            The predictor's: how far an exited input's probability may be from the full
            predictor's and still agree (besides keeping its class). Default: the class.
        outputs : {"calibrated", "partial"}, default "calibrated"
            What an input leaving the predictor outputs: a monotone map of its partial
            score fitted to the full predictor's probability, or the partial score.
        hold : float or sequence of int or str, optional
            Features that hold an input, in both parts: one whose path through a part's
            trees before a check has split on any of them does not exit that part there
            nor later (:attr:`cbudget.ExitRules.hold`). A number: the features whose
            first read costs at least that much in the gated model's cost model (which
            its parts share; cost groups included); or the gated model's feature indices
            or names. Each part holds on its own paths: a held feature the gate bought
            does not hold the input in the predictor until the predictor reads it too.
        checks : sequence of int, optional
            Instead of ``every``: the iteration counts after which both parts check.
            ``"stages"`` applies only to parts trained in cost stages, which ADAPT-GBRT's
            are not (it grows one tree of each part per round).
        max_metric_drop : float, optional
            Instead of ``epsilon``: the largest epsilon of (0.1, 0.05, ..., 0.001, 0),
            used for both parts, whose exits worsen the gated model's ``metric`` on
            ``data`` (a Dataset with labels) by at most this much, scored
            cross-fitted (each half of ``data`` predicted with the parts' rules
            calibrated on the other half; in-sample below 4 rows); the rules set are
            those of that epsilon on all of ``data``.
        metric : str, optional
            For ``max_metric_drop``: a binary metric ("error", "auc", "logloss",
            "rmse"...) of the gated model's probabilities, exits included; default
            "error".

        Returns
        -------
        dict
            ``{"gate": ExitRules, "predictor": ExitRules}`` (the boosted parts; the
            predictor's None when the gate keeps none of ``data``'s inputs).

        Notes
        -----
        ``decision_threshold`` and ``iteration_range`` do not apply: the gate decides at
        :attr:`gate_threshold`, the predictor's class is its probability's side of one
        half, and a gated model predicts with all its parts' iterations.
        """
        data = labelled_data(data, self.feature_names)   # (X, y) as a Dataset
        if options:
            raise TypeError(unused_exit_options(options))
        parts = {name: part for name, part in (("gate", self.gate),
                                               ("predictor", self.predictor))
                 if isinstance(part, Booster)}
        if not parts:
            raise NotApplicableError(f"calibrate_exits does not apply to this gated model "
                                     f"({self.algorithm}): {self.no_exit_reason}")
        if isinstance(checks, str) and checks == "stages" and \
                any(len(part.cost_stages) < 2 for part in parts.values()):
            # the parts' own error would say to train them with cost_stages
            raise ValueError(f"checks='stages': this gated model's parts were not trained in "
                             f"cost stages ({self.algorithm} grows one tree of each part per "
                             "round), so there is no stage boundary to check at; give "
                             "checks=[iteration counts] or every=")
        if max_metric_drop is not None and epsilon is not None:
            raise ValueError("give epsilon or max_metric_drop, not both")
        shared: dict[str, Any] = {"every": every, "checks": checks, "hold": hold}

        def calibrated(epsilon: float, on: InputData) -> dict[str, Any]:
            """Makes and sets the parts' rules at ``epsilon`` on the inputs ``on``."""
            X = self.prepare_input(on)
            # the parts take the weights with their inputs, in a Dataset
            weighted = on if isinstance(on, Dataset) and on.weight is not None else None
            made: dict[str, Any] = {}
            if "gate" in parts:
                made["gate"] = parts["gate"].calibrate_exits(
                    X if weighted is None else weighted, epsilon,
                    decision_threshold=self.gate_threshold, outputs="partial", **shared)
            if "predictor" in parts:
                # the inputs the gate (with its exits) keeps; none kept: no rules
                rows = np.flatnonzero(self._route(X) == 1)
                kept = np.ascontiguousarray(X[rows]) if weighted is None \
                    else weighted.subset(rows)
                parts["predictor"].exit_rules = None
                made["predictor"] = None if rows.size == 0 else \
                    parts["predictor"].calibrate_exits(kept, epsilon, tolerance=tolerance,
                                                       outputs=outputs, **shared)
            return made

        before = {name: part.exit_rules for name, part in parts.items()}
        try:
            if max_metric_drop is None:
                return calibrated(0.01 if epsilon is None else epsilon, data)
            return self._calibrated_by_metric(data, float(max_metric_drop), metric,
                                              calibrated, parts)
        except BaseException:
            for name, part in parts.items():     # all or nothing
                part.exit_rules = before[name]
            raise

    def _calibrated_by_metric(self, data: InputData, max_drop: float, metric: str | None,
                              calibrated: Callable[[float, InputData], dict[str, Any]],
                              parts: dict[str, Booster]) -> dict[str, Any]:
        """:meth:`calibrate_exits` with ``max_metric_drop``: the parts' rules of the
        largest epsilon of ``EPSILON_GRID`` (``calibrated(epsilon, inputs)`` makes and
        sets them) whose gated predictions on ``data`` score within ``max_drop`` of the
        full parts' by ``metric``, scored cross-fitted as a booster's
        (:meth:`cbudget.Booster.cross_fitted_exits`: each part of ``data``'s rows
        predicted with the rules made on the others; in-sample below 4 rows)."""
        if not isinstance(data, Dataset) or data.label is None:
            raise TypeError("max_metric_drop needs data as a cbudget.Dataset with labels")
        if not (math.isfinite(max_drop) and max_drop >= 0):
            raise ValueError(f"max_metric_drop must be a finite number >= 0, got {max_drop}")
        metric = metric or "error"
        check_metric(metric, self.objective)
        labelled = zero_one_labels(data)        # labels -1/+1 as the training takes them
        # the full parts' score: without their rules (not early_exit=False, which would
        # drop an expensive booster's own rules too)
        for part in parts.values():
            part.exit_rules = None
        X = self.prepare_input(data)
        full = evaluate_on(metric, labelled, self.predict(X))
        n = X.shape[0]
        parts_of_rows = exit_folds(n) if n >= 2 * EXIT_FOLDS else np.zeros(n, dtype=np.int64)
        scores = []
        for epsilon in EPSILON_GRID:
            predictions = np.empty(n)
            for k in np.unique(parts_of_rows):
                rows = np.flatnonzero(parts_of_rows == k)
                others = np.flatnonzero(parts_of_rows != k)
                # below 2 * EXIT_FOLDS rows one part: calibrated and scored in-sample
                calibrated(epsilon, data.subset(others if others.size else rows))
                predictions[rows] = self.predict(X[rows])
            scores.append((epsilon, evaluate_on(metric, labelled, predictions)))
        chosen = calibrated(EPSILON_GRID[best_epsilon(scores, full, max_drop,
                                                      metric_maximize(metric))], data)
        for name, part in parts.items():
            rules = chosen[name]
            if rules is not None:
                rules.calibration["max_metric_drop"] = max_drop
            part.exit_rules = rules
        return chosen

    @overload  # type: ignore[override]
    def predict(self, X: ModelInput, *, output_margin: bool = ...,
                return_route: Literal[False] = ..., early_exit: bool | None = ...,
                pred_contrib: bool = ...) -> np.ndarray: ...
    @overload
    def predict(self, X: ModelInput, *, output_margin: bool = ...,
                return_route: Literal[True], early_exit: bool | None = ...,
                pred_contrib: bool = ...) -> tuple[np.ndarray, np.ndarray]: ...
    @overload
    def predict(self, X: ModelInput, *, output_margin: bool = ...,
                return_route: bool, early_exit: bool | None = ...,
                pred_contrib: bool = ...) -> np.ndarray | tuple[np.ndarray, np.ndarray]: ...

    # Model.predict(X, **options) -> ndarray: each model type takes its own options, and
    # this one returns the route too on request
    def predict(self, X: ModelInput, *, output_margin: bool = False, return_route: bool = False,
                early_exit: bool | None = None, pred_contrib: bool = False
                ) -> np.ndarray | tuple[np.ndarray, np.ndarray]:
        """P(y = 1) of each input, from the model its gate chooses.

        Parameters
        ----------
        X : array-like or Dataset of shape (n_samples, n_features)
        output_margin : bool
            Log-odds instead of probabilities.
        return_route : bool
            Also return the route: int8 array, 0 where the expensive model ``f0`` served
            the input, 1 where the low-cost predictor ``f1`` did.
        early_exit : bool, optional
            Whether the boosted parts stop an input at their exits
            (:meth:`calibrate_exits`); default: where they have exit rules. False: the
            full parts. The cost methods take the same argument.
        pred_contrib : bool
            NotApplicableError: TreeSHAP explains sums of trees, and a gate picks one
            model per input.

        Returns
        -------
        ndarray of shape (n_samples,), or (predictions, route)
        """
        if pred_contrib:
            raise self._no_contributions("pred_contrib")
        X = self.prepare_input(X, early_exit=early_exit)
        route = self._route(X, early_exit)
        low, high = np.flatnonzero(route == 1), np.flatnonzero(route == 0)
        out = np.zeros(X.shape[0])
        if low.size:
            out[low] = self.predictor.predict(np.ascontiguousarray(X[low]),
                                              output_margin=output_margin,
                                              **self._exit_options(self.predictor, early_exit))
        if high.size:
            p0 = self._expensive_proba(np.ascontiguousarray(X[high]), early_exit)
            if output_margin:
                p0 = np.clip(p0, PROBABILITY_EPS, 1 - PROBABILITY_EPS)
                p0 = np.log(p0) - np.log1p(-p0)
            out[high] = p0
        return (out, route) if return_route else out

    # -- prediction cost --------------------------------------------------------------
    def _combined_cost_parts(self, X: np.ndarray, expensive_cost: np.ndarray | None = None,
                             early_exit: bool | None = None) -> tuple[np.ndarray, np.ndarray]:
        """(acquired features, split / tree / declared costs) per input: the gate's,
        then the chosen model's, each feature once."""
        route = self._route(X, early_exit)
        acquired, other = self.gate.cost_parts(X, **self._exit_options(self.gate, early_exit))
        for z, part in ((1, self.predictor), (0, None)):
            rows = np.flatnonzero(route == z)
            if rows.size == 0:
                continue
            Xz = np.ascontiguousarray(X[rows])
            if part is None:
                part_acquired, part_other = self._expensive_cost_parts(Xz, early_exit)
                if expensive_cost is not None:
                    part_other = part_other + expensive_cost[rows]
            else:
                part_acquired, part_other = part.cost_parts(
                    Xz, **self._exit_options(part, early_exit))
            acquired[rows] |= part_acquired
            other[rows] += part_other
        return acquired, other

    def _expensive_cost_parts(self, X: np.ndarray, early_exit: bool | None = None
                              ) -> tuple[np.ndarray, np.ndarray]:
        f0 = self._expensive()
        if not isinstance(f0, ExternalModel):
            return f0.cost_parts(X, **self._exit_options(f0, early_exit))
        acquired = np.zeros((X.shape[0], self.num_features()), dtype=bool)
        features = f0.feature_indices(self.feature_names)
        if features is not None:
            acquired[:, features] = True
        return acquired, f0.declared_cost(X)

    def _check_expensive_cost(self, expensive_cost: ArrayLike | None, n_samples: int
                              ) -> np.ndarray | None:
        if expensive_cost is None:
            return None
        if not isinstance(self.expensive, ExternalModel):
            raise ValueError("expensive_cost is for an external expensive model: cbudget "
                             "measures its own models' costs")
        cost = np.asarray(expensive_cost, dtype=np.float64)
        if cost.shape != (n_samples,) or not np.all(np.isfinite(cost)) or np.any(cost < 0):
            raise ValueError(f"expensive_cost must hold {n_samples} finite costs >= 0 (one "
                             "per input)")
        return cost

    def _cost_and_acquired(self, X: np.ndarray, expensive_cost: ArrayLike | None = None,
                           early_exit: bool | None = None) -> tuple[np.ndarray, np.ndarray]:
        acquired, other = self._combined_cost_parts(
            X, self._check_expensive_cost(expensive_cost, X.shape[0]), early_exit)
        return self.cost_model.acquisition_costs(acquired) + other, acquired

    def predict_cost(self, X: ModelInput, *, expensive_cost: ArrayLike | None = None,
                     early_exit: bool | None = None) -> np.ndarray:
        """Prediction cost of each input: the gate's features, plus those of the model it
        is sent to, each once (groups included), plus split, tree and declared costs.

        Parameters
        ----------
        X : array-like or Dataset
        expensive_cost : array of shape (n_samples,), optional
            Per-input cost of an external expensive model on these inputs, added for
            those sent to it (on top of its declared cost or features).
        early_exit : bool, optional
            As for :meth:`predict`: each boosted part charged up to the input's exit.

        Returns
        -------
        ndarray of float64, shape (n_samples,)
        """
        return self._cost_and_acquired(self.prepare_input(X, early_exit=early_exit),
                                       expensive_cost, early_exit)[0]

    def acquisitions(self, X: ModelInput, *, early_exit: bool | None = None) -> np.ndarray:
        """The features each input pays for (bool, n_samples x n_features): the gate's and
        those of the model it is sent to (``early_exit`` as for :meth:`predict`)."""
        return self._cost_and_acquired(self.prepare_input(X, early_exit=early_exit),
                                       early_exit=early_exit)[1].astype(bool)

    def cost_parts(self, X: ModelInput, *, early_exit: bool | None = None) -> CostParts:
        """Each input's acquired features (the gate's and its chosen model's) and its
        other costs (split, tree and declared)."""
        return CostParts(*self._combined_cost_parts(
            self.prepare_input(X, early_exit=early_exit), early_exit=early_exit))

    def used_features(self) -> np.ndarray:
        """Sorted indices of the features the gate or the low-cost predictor reads."""
        return np.union1d(self.gate.used_features(), self.predictor.used_features())

    def cost_report(self, X: ModelInput, *, expensive_cost: ArrayLike | None = None,
                    early_exit: bool | None = None) -> CostReport:
        """Mean cost, per-input cost, acquisition rates, features used (by the gate and
        the low-cost predictor) and the coupled cost of predicting ``X``.

        Returns
        -------
        CostReport
        """
        cost, acquired = self._cost_and_acquired(self.prepare_input(X, early_exit=early_exit),
                                                 expensive_cost, early_exit)
        return self._report(cost, acquired, self.used_features(), X)

    def finalize(self, dtrain: Dataset, evals: Iterable[tuple[str, Dataset]],
                 q: np.ndarray) -> None:
        """After training, the cost ``summary``: mean cost and fraction sent to the
        expensive model on the training and evaluation data, features used, and the mean
        of the last q-step's q on the training data."""
        fractions, costs = {}, {}
        for name, data in [("train", dtrain)] + list(evals):
            X = self.prepare_input(data)
            fractions[name] = float(np.mean(self._route(X) == 0)) if X.shape[0] else 0.0
            costs[name] = float(self._cost_and_acquired(X)[0].mean()) if X.shape[0] else 0.0
        used = self.used_features()
        self.summary = {
            "train_cost": costs.pop("train"),
            "valid_cost": costs,
            "train_expensive_fraction": fractions.pop("train"),
            "valid_expensive_fraction": fractions,
            "train_mean_q": float(np.mean(q)),
            "features_used": [self.feature_names[m] for m in used],
            "coupled_cost": self.cost_model.coupled_cost(used),
        }

    def feature_importance(self, kind: str = "split") -> np.ndarray:
        """The gate's and the low-cost predictor's importances added ("split", "gain";
        see :meth:`cbudget.Booster.feature_importance` and :class:`LinearClassifier`).
        "cost" does not apply: the two share their inputs' acquisitions."""
        if kind == "cost":
            raise NotApplicableError("cost importance does not apply to a gated model: its "
                                     "gate and predictor share their inputs' acquisitions")
        return self.gate.feature_importance(kind) + self.predictor.feature_importance(kind)

    # -- files ------------------------------------------------------------------------
    def save_model(self, path: str | os.PathLike, format: str = "cbudget",
                   **options: Any) -> None:
        """Write the model as JSON (see docs/architecture.md, "Model files"; ``format``:
        "cbudget" only). An external expensive model is not stored (only its declared
        cost): give it again to ``load_model``."""
        super().save_model(path, format, **options)

    def to_dict(self) -> dict[str, Any]:
        """The JSON document: the header, ``gate`` and ``predictor`` (booster documents,
        whose trees carry the per-node cost metadata, or linear classifiers), ``expensive``
        (the expensive model's own document, or ``{"model_type": "external", "class",
        "cost", "features"}`` for one that is not cbudget's) and the ``adapt`` section
        (``gate_threshold``, ``p_full``, ``cost_tradeoff`` ...)."""
        doc = model_header(self)
        doc["gate"] = self.gate.to_dict()
        doc["predictor"] = self.predictor.to_dict()
        f0 = self._expensive()
        if isinstance(f0, ExternalModel):
            kind = type(f0.model)
            features = f0.feature_indices(self.feature_names)
            doc["expensive"] = {
                "model_type": "external", "class": f"{kind.__module__}.{kind.__qualname__}",
                "cost": f0.cost if isinstance(f0.cost, float) else None,
                "cost_callable": callable(f0.cost),
                "features": None if features is None else features.tolist()}
        else:
            doc["expensive"] = f0.to_dict()
        section = {name: self.params[name] for name in ADAPT_SETTINGS if name in self.params}
        section["gate_threshold"] = self.gate_threshold
        doc[section_name(self.algorithm)] = section
        return doc

    @classmethod
    def from_dict(cls, doc: dict[str, Any], *, expensive_model: Any = None) -> GatedModel:
        header = read_header(doc, cls)
        feature_names, cost_model, params = header.feature_names, header.cost_model, \
            header.params
        if header.objective != "binary:logistic":
            raise invalid("a gated model is binary:logistic")
        name = section_name(params["algorithm"])
        section = require(doc, name, dict)
        threshold = require(section, "gate_threshold", (int, float), f"{name}.")
        if not math.isfinite(threshold):
            raise invalid(f"{name}.gate_threshold must be finite")
        params = checked_params(
            {**params, **{k: v for k, v in section.items() if k != "gate_threshold"}}, name)
        gate = read_part(require(doc, "gate", dict), "gate", feature_names, cost_model)
        predictor = read_part(require(doc, "predictor", dict), "predictor", feature_names,
                              cost_model)
        stored = require(doc, "expensive", dict)
        if stored.get("model_type") == "external":
            expensive: Model | ExternalModel = read_external(stored, expensive_model)
        else:
            if expensive_model is not None:
                raise ValueError("this gated model stores its expensive model: do not pass "
                                 "expensive_model")
            expensive = nested_model_from_dict(stored)
            if not is_binary_classifier(expensive):
                raise invalid(f"the expensive model must be a binary classifier "
                              f"(binary:logistic), not {expensive.objective!r}")
            if expensive.feature_names != feature_names or \
                    expensive.cost_model.to_dict() != cost_model.to_dict():
                raise invalid("the expensive model's features or costs differ from the "
                              "gated model's")
        model = cls(gate=gate, predictor=predictor, expensive=expensive,
                    feature_names=feature_names, cost_model=cost_model, params=params,
                    gate_threshold=threshold)
        return read_attributes(model, doc)

    def __repr__(self) -> str:
        return (f"<cbudget.GatedModel {self.algorithm}: gate {self.gate!r}, predictor "
                f"{self.predictor!r}, expensive {self.expensive!r}>")


# Booster.calibrate_exits options that a gated model does not take, and why
NOT_GATED_EXIT_OPTIONS = {
    "decision_threshold": "the gate decides at the model's gate_threshold (set that "
                          "attribute) and the predictor's class is its probability's side "
                          "of one half",
    "iteration_range": "a gated model predicts with all its parts' iterations (slice a "
                       "part's booster to drop some)",
}


def unused_exit_options(options: dict[str, Any]) -> str:
    """The message of the TypeError for ``options`` that :meth:`GatedModel.calibrate_exits`
    does not take: why, for a booster's options that do not apply."""
    why = [f"{name}: {NOT_GATED_EXIT_OPTIONS[name]}" for name in sorted(options)
           if name in NOT_GATED_EXIT_OPTIONS]
    other = sorted(set(options) - set(NOT_GATED_EXIT_OPTIONS))
    if other:
        why.append(f"unknown option(s) {other}: it takes epsilon, every, tolerance, outputs, "
                   "hold, checks, max_metric_drop and metric")
    return "a gated model's calibrate_exits does not take " + "; ".join(why)


def section_name(algorithm: str) -> str:
    """The section of a gated model's file holding its settings (the registry's; by
    default ``adapt``)."""
    return file_section(algorithm) or "adapt"


# what the adapt section of a file holds besides gate_threshold
ADAPT_SETTINGS = ("p_full", "cost_tradeoff", "q_update_period", "acquisition", "n_restarts")


def read_part(d: dict[str, Any], name: str, feature_names: list[str],
              cost_model: CostModel) -> Booster | LinearClassifier:
    """The gate or the predictor of a gated model's document: a binary booster with the
    model's features and costs, or a linear classifier."""
    if d.get("model_type") == "linear":
        return LinearClassifier.from_dict(d, name, feature_names, cost_model)
    if d.get("model_type") != "booster":
        raise invalid(f"{name} must be a booster document or a linear classifier")
    part = nested_model_from_dict(d)
    if part.objective != "binary:logistic":
        raise invalid(f"{name} must be a binary:logistic booster")
    if part.feature_names != feature_names or \
            part.cost_model.to_dict() != cost_model.to_dict():
        raise invalid(f"{name}'s features or costs differ from the gated model's")
    return part  # type: ignore[return-value]  # model_type "booster": a Booster


def read_external(d: dict[str, Any], expensive_model: Any) -> ExternalModel:
    """The expensive model of a document that did not store it: ``expensive_model``, with
    the declared cost stored in the document unless it is already an ExternalModel."""
    if expensive_model is None:
        raise ValueError(
            f"this gated model's expensive model ({d.get('class')}) is not a cbudget model "
            "and was not saved: load it with cbudget.load_model(path, expensive_model=...)")
    if isinstance(expensive_model, ExternalModel):
        return expensive_model
    if d.get("cost_callable"):
        raise ValueError("this gated model's expensive model has a cost function, which "
                         "was not saved: pass expensive_model=cbudget.ExternalModel(model, "
                         "cost=...)")
    cost, features = d.get("cost"), d.get("features")
    if cost is not None:
        finite_number(d, "cost", "expensive.")
    if features is not None and not (isinstance(features, list)
                                     and all(isinstance(m, int) for m in features)):
        raise invalid("expensive.features must be a list of feature indices")
    try:
        return ExternalModel(expensive_model, cost=cost, features=features)
    except (TypeError, ValueError) as exc:
        raise invalid(f"expensive: {exc}") from None
