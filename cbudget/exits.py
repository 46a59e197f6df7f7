"""Early exit: rules that stop evaluating an input once its prediction is settled
(docs/architecture.md, "Early exit").

A boosted model adds its trees one iteration after another. After some iterations (the
*checks*) an :class:`ExitRules` looks at each input's scores so far; an input whose
scores are outside a band (one score: regression, binary) or whose two largest class
scores are far enough apart (multiclass) leaves there. It evaluates none of the later
trees, so it pays for none of the features only they read: with on-demand acquisition
(:class:`cbudget.FeatureSource`) they are never fetched. Its prediction is its scores
at the exit.

The thresholds come from :func:`calibrate`: on validation inputs, the exited prediction
may disagree with the full model's on at most a fraction ``epsilon`` of them (binary
with a probability tolerance: another class, or a probability further than it,
:class:`ProbabilityAgreement`). Whatever
``epsilon``, a check also lets out the inputs the trees left cannot change
(:func:`certified_bounds`: their largest and smallest leaf values summed), so
``epsilon = 0`` changes no input's class (a regression prediction moves by at most the
tolerance), on any input.

The rules are stored in the model file (``exit_rules``); the booster applies them in its
prediction kernel (``_predict.predict_raw_exits``), in the cost kernel (each input's
trees end at its exit) and in its on-demand walk, with the same comparisons here
(:meth:`ExitRules.exits`).
"""
from __future__ import annotations

import math
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np

from ._json_checks import invalid, number_list, require

__all__ = ["ExitRules", "ExitChoice", "calibrate", "certified_bounds", "check_epsilon",
           "check_points", "check_hold", "exit_mask", "best_epsilon", "BAND", "GAP", "EPSILON_GRID",
           "OUTPUTS", "isotonic", "monotone_map", "fit_outputs", "map_outputs",
           "later_reach", "output_range", "check_outputs", "apply_map",
           "scale_within", "band_outputs", "ProbabilityAgreement"]

# "band": output 0 outside [lower, upper] exits; "gap": the two largest outputs more than
# upper apart
BAND, GAP = "band", "gap"
# a bound every finite score is below (stands for "everyone exits"; JSON has no infinity)
BIG = sys.float_info.max
# the certified bounds are widened by this share of the scores' magnitude: sums of the
# same leaf values in another order differ by rounding
CERTIFIED_SLACK = 1e-9
# the epsilons tried by default (selection, a metric-drop calibration), largest first
EPSILON_GRID = (0.1, 0.05, 0.02, 0.01, 0.005, 0.002, 0.001, 0.0)
# a choice among exit rules (a metric-drop calibration, the cost path's exit copies) scores
# them cross-fitted: calibrated on all but one of this many parts of the validation rows,
# scored on that part, each in turn (Booster.cross_fitted_exits). Scored on the rows they
# were calibrated on, exits disagree on at most epsilon of them by construction, and the
# choice went to rules that did worse on other inputs
EXIT_FOLDS = 2


def exit_folds(n: int) -> np.ndarray:
    """The part (``0 .. EXIT_FOLDS - 1``) of each of ``n`` validation rows when exit rules
    are scored cross-fitted: a fixed shuffle, so that the same data always parts alike."""
    return np.random.default_rng(0).permutation(n) % EXIT_FOLDS
# what the calibration section of a file may hold, and of which types
NUMBER = (int, float)
CALIBRATION_KEYS: dict[str, Any] = {
    "method": str, "epsilon": NUMBER, "decision_threshold": NUMBER, "tolerance": NUMBER,
    "margin": NUMBER, "every": int, "n_inputs": int, "disagreement": NUMBER,
    "max_metric_drop": NUMBER, "checks": str, "probability_tolerance": NUMBER}
# how the checks of calibrated rules were given when not every `every` iterations
CHECKS_GIVEN = ("stages", "given")
# what an exited input outputs: a calibrated estimate of the full model's output, or its
# partial scores
OUTPUTS = ("calibrated", "partial")
# a check's map is fitted on the validation inputs that exit there; with fewer, on all
# those still live there (the same partial scores, so the same conditional expectation
# of the full output given the score; a map of a handful of points would follow noise)
MIN_MAP_INPUTS = 20
# distinct partial scores a map is fitted to at most (adjacent ones pooled beyond)
MAX_FIT_POINTS = 512
# knots per map at most (files stay small): beyond, adjacent isotonic blocks are pooled
# into MAX_KNOTS groups of about equal weight, one knot each
MAX_KNOTS = 64
# probabilities are clipped to [PROBABILITY_EPS, 1 - PROBABILITY_EPS] before the logit
PROBABILITY_EPS = 1e-15
# a mapped binary output above the decision threshold is at least this far above it, or
# at least its partial score
SIDE_MARGIN = 1e-9
# the multiclass temperature is searched in [1 / SCALE_LIMIT, SCALE_LIMIT]
SCALE_LIMIT = 100.0
# Newton's steps at most that locate the temperature's root (fit_scale)
NEWTON_STEPS = 8


class ExitChoice(NamedTuple):
    """Result of :meth:`cbudget.Booster.best_exit_within_budget`."""
    model: Any          # the Booster of iterations 0..iteration, with the exit rules set
    iteration: int
    epsilon: float
    cost: float         # mean prediction cost per input on the validation data
    score: float
    metric: str


@dataclass(eq=False)
class ExitRules:
    """Where and when inputs leave a booster early.

    Attributes
    ----------
    rule : {"band", "gap"}
        "band" (one output: regression, binary): after check ``k`` an input leaves when
        its score is below ``lower[k]`` or above ``upper[k]``. "gap" (multiclass): when its
        two largest class scores differ by more than ``upper[k]``.
    iterations : int
        The rules apply to predictions with iterations ``0 .. iterations - 1`` (the
        model's default range when they were made).
    check_after : ndarray of int64
        The checks: after ``check_after[k]`` iterations (ascending, below
        ``iterations``).
    lower, upper : ndarray of float64
        The thresholds of each check (-inf / +inf: no exit on that side).
    calibration : dict
        How they were made: ``method`` ("calibrated" or "margin"), ``epsilon``,
        ``decision_threshold``, ``tolerance`` (regression), ``probability_tolerance``
        (binary, :class:`ProbabilityAgreement`), ``margin``, ``every`` (or ``checks``:
        "stages", "given"), ``n_inputs`` and the
        validation ``disagreement`` (the fraction of inputs whose exited prediction
        differs from the full model's), as they apply.
    outputs : list or None
        What an input that exits at check ``k`` outputs (:func:`map_outputs`): None (the
        default, and a file without the field) its partial scores; else per check None
        (partial scores there) or, band, the knots ``(x, y)`` of a monotone
        piecewise-linear map of the partial score (x ascending, y non-decreasing, at
        most ``MAX_KNOTS``), gap, a scale ``> 0`` of the class scores. A band map needs
        the calibration's ``decision_threshold`` (binary) or ``tolerance``
        (regression): the mapped output keeps the partial score's side of the one and
        stays within the other.
    hold : ndarray of int64 or None
        Features that *hold* an input (ascending column indices; None, the default and
        a file without the field: none): an input whose path through the trees before
        a check has split on one of them does not exit there nor later. It has paid for
        a feature the later trees were grown to use, which then cost it little more,
        so exiting would save little and lose what the feature adds (a cascade's
        expensive stage, docs/architecture.md "Early exit").
    """

    rule: str
    iterations: int
    check_after: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    calibration: dict[str, Any] = field(default_factory=dict)
    outputs: list[Any] | None = None
    hold: np.ndarray | None = None

    def __post_init__(self) -> None:
        self.check_after = np.ascontiguousarray(self.check_after, dtype=np.int64)
        self.lower = np.ascontiguousarray(self.lower, dtype=np.float64)
        self.upper = np.ascontiguousarray(self.upper, dtype=np.float64)
        checks, lower, upper = self.check_after, self.lower, self.upper
        if self.rule not in (BAND, GAP):
            raise ValueError(f"rule must be {BAND!r} or {GAP!r}, got {self.rule!r}")
        if isinstance(self.iterations, bool) or not isinstance(self.iterations,
                                                                 (int, np.integer)) \
                or self.iterations < 1:
            raise ValueError(f"iterations must be an integer >= 1, got {self.iterations!r}")
        self.iterations = int(self.iterations)
        if checks.ndim != 1 or lower.shape != checks.shape or upper.shape != checks.shape:
            raise ValueError("check_after, lower and upper need one entry per check")
        if np.any(checks < 1) or np.any(checks >= self.iterations) \
                or np.any(np.diff(checks) <= 0):
            raise ValueError(f"check_after must ascend within [1, {self.iterations})")
        # -inf / +inf: no exit on that side; a bound that lets everyone out is finite
        if np.isnan(lower).any() or np.isnan(upper).any() or np.any(lower == np.inf) \
                or np.any(upper == -np.inf):
            raise ValueError("lower must be < +inf and upper > -inf (no NaN): -inf / +inf "
                             "mean no exit on that side")
        if self.rule == GAP and np.any(lower != -np.inf):
            raise ValueError("the gap rule has no lower bounds (-inf)")
        if self.hold is not None:
            self.hold = check_hold(self.hold)
        if self.outputs is not None:
            self.outputs = check_outputs(self.outputs, self.rule, checks.size)
            if self.rule == BAND and any(m is not None for m in self.outputs) and \
                    (self.calibration.get("decision_threshold") is None) == \
                    (self.calibration.get("tolerance") is None):
                raise ValueError("band output maps need calibration.decision_threshold "
                                 "(binary) or calibration.tolerance (regression), one of "
                                 "them")

    @property
    def gap(self) -> bool:
        """Whether the rule compares the two largest class scores."""
        return self.rule == GAP

    def firing(self) -> np.ndarray:
        """bool per check: whether it can let any input out."""
        return (self.upper < np.inf) | (self.lower > -np.inf)

    def exits(self, scores: np.ndarray, k: int, held: np.ndarray | None = None
              ) -> np.ndarray:
        """bool per row of ``scores`` (n, n_outputs): whether it leaves at check ``k``
        (the prediction kernel's comparisons); ``held`` (bool per row): those held by
        :attr:`hold` there, which do not."""
        out = exit_mask(scores, self.gap, self.lower[k], self.upper[k])
        return out if held is None else out & ~held

    @classmethod
    def margin_rule(cls, model: Any, margin: float, every: int = 10) -> ExitRules:
        """LightGBM's ``pred_early_stop`` rule as exit rules of ``model`` (a Booster):
        every ``every`` iterations (``pred_early_stop_freq``), a binary input leaves when
        ``2 |score| > margin``, a multiclass one when its two largest scores differ by
        more than ``margin`` (``pred_early_stop_margin``). It is not calibrated: set it
        with ``model.exit_rules = rules``."""
        margin = float(margin)
        if not (math.isfinite(margin) and margin >= 0):
            raise ValueError(f"margin must be a finite number >= 0, got {margin!r}")
        if model.objective not in ("binary:logistic", "multi:softprob"):
            raise ValueError(f"the margin rule is for binary and multiclass models, not "
                             f"{model.objective}")
        iterations = model.iterations_used()[1]
        checks = check_points(iterations, every)
        gap = model.n_outputs > 1
        upper = np.full(checks.size, margin if gap else margin / 2)
        lower = np.full(checks.size, -np.inf if gap else -margin / 2)
        return cls(GAP if gap else BAND, iterations, checks, lower, upper,
                   {"method": "margin", "margin": margin, "every": int(every)})

    # -- files --------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """The ``exit_rules`` section of a model file (null: no exit on that side)."""
        def finite_or_none(values: np.ndarray) -> list[float | None]:
            return [float(v) if math.isfinite(v) else None for v in values.tolist()]
        doc = {"rule": self.rule, "iterations": int(self.iterations),
               "check_after": self.check_after.tolist(),
               "lower": finite_or_none(self.lower), "upper": finite_or_none(self.upper),
               "calibration": dict(self.calibration)}
        if self.outputs is not None:
            doc["outputs"] = [None if m is None else {"scale": float(m)} if self.gap
                              else {"x": m[0].tolist(), "y": m[1].tolist()}
                              for m in self.outputs]
        if self.hold is not None:
            doc["hold"] = self.hold.tolist()
        return doc

    @classmethod
    def from_dict(cls, d: Any, n_iterations: int, n_outputs: int) -> ExitRules:
        """The rules of a file's ``exit_rules`` section, checked against its model
        (``n_iterations``, ``n_outputs``); ValueError naming the field otherwise."""
        where = "exit_rules."
        if not isinstance(d, dict):
            raise invalid("exit_rules must be an object")
        unknown = set(d) - {"rule", "iterations", "check_after", "lower", "upper",
                            "calibration", "outputs", "hold"}
        if unknown:
            raise invalid(f"unknown field(s) {sorted(unknown)} in exit_rules")
        rule = require(d, "rule", str, where)
        if rule not in (BAND, GAP) or (rule == GAP) != (n_outputs > 1):
            raise invalid(f"{where}rule must be {GAP!r} for a multiclass model, {BAND!r} "
                          f"otherwise")
        iterations = require(d, "iterations", int, where)
        if not 1 <= iterations <= n_iterations:
            raise invalid(f"{where}iterations must be in [1, {n_iterations}]")
        checks = require(d, "check_after", list, where)
        if not all(isinstance(c, int) and not isinstance(c, bool) for c in checks) \
                or any(not 1 <= c < iterations for c in checks) \
                or any(b <= a for a, b in zip(checks, checks[1:])):
            raise invalid(f"{where}check_after must ascend within [1, {iterations})")
        bounds = {}
        for key, missing in (("lower", -np.inf), ("upper", np.inf)):
            values = require(d, key, list, where)
            try:
                if len(values) != len(checks) or not all(
                        v is None or (isinstance(v, (int, float)) and not isinstance(v, bool)
                                      and math.isfinite(v)) for v in values):
                    raise OverflowError
                bounds[key] = [missing if v is None else float(v) for v in values]
            except OverflowError:     # also an integer too large for a float
                raise invalid(f"{where}{key} must hold one finite number or null per "
                              f"check") from None
        if rule == GAP and any(v != -np.inf for v in bounds["lower"]):
            raise invalid(f"{where}lower must be null for the gap rule")
        calibration = require(d, "calibration", dict, where)
        for key, value in calibration.items():
            kind = CALIBRATION_KEYS.get(key)
            if kind is None:
                raise invalid(f"unknown field {key!r} in {where}calibration")
            if value is not None and (isinstance(value, bool) or not isinstance(value, kind)
                                      or (isinstance(value, float) and not math.isfinite(value))
                                      or (isinstance(value, int) and abs(value) > 2**53)):
                raise invalid(f"{where}calibration.{key} has the wrong type or value")
        if calibration.get("checks") not in (None, *CHECKS_GIVEN) or (
                calibration.get("checks") is not None and "every" in calibration):
            raise invalid(f"{where}calibration.checks must be one of {CHECKS_GIVEN}, and "
                          f"not with every")
        outputs = _read_outputs(d["outputs"], rule, len(checks)) if "outputs" in d else None
        hold = d.get("hold")
        if "hold" in d and (not isinstance(hold, list) or not all(
                isinstance(m, int) and not isinstance(m, bool) and 0 <= m < 2**31
                for m in hold)):
            raise invalid(f"{where}hold must be a list of feature indices")
        try:
            return cls(rule, iterations, np.asarray(checks, dtype=np.int64),
                       np.asarray(bounds["lower"]), np.asarray(bounds["upper"]),
                       dict(calibration), outputs,
                       None if hold is None else np.asarray(hold, dtype=np.int64))
        except ValueError as exc:
            raise invalid(f"exit_rules: {exc}") from None

    def __repr__(self) -> str:
        how = self.calibration.get("method", "?")
        detail = (f"epsilon={self.calibration.get('epsilon')}" if how == "calibrated"
                  else f"margin={self.calibration.get('margin')}")
        maps = sum(m is not None for m in self.outputs or ())
        return (f"<cbudget.ExitRules {self.rule}: {int(self.firing().sum())} of "
                f"{self.check_after.size} checks can exit, {how} ({detail}), for "
                f"{self.iterations} iterations, "
                f"{f'{maps} output maps' if maps else 'partial outputs'}"
                f"{'' if self.hold is None else f', held by {self.hold.size} feature(s)'}>")


def check_hold(hold: Any) -> np.ndarray:
    """``hold`` (see :class:`ExitRules`) as ascending, distinct int64 feature indices
    ``>= 0``; ValueError otherwise."""
    values = np.asarray(hold)
    if values.ndim != 1 or (values.size and (values.dtype.kind not in "iu"
                                             or values.min() < 0
                                             or np.any(np.diff(values) <= 0))):
        raise ValueError(f"hold must list feature indices (integers >= 0), ascending and "
                         f"distinct, got {hold!r}")
    return np.ascontiguousarray(values, dtype=np.int64)


def _read_outputs(values: Any, rule: str, n_checks: int) -> list[Any]:
    """The ``outputs`` of a file's ``exit_rules`` as :class:`ExitRules` takes them (the
    JSON types checked here, the values by :func:`check_outputs`)."""
    where = "exit_rules.outputs"
    if not isinstance(values, list) or len(values) != n_checks:
        raise invalid(f"{where} must be a list with one entry (null or a map) per check")
    keys = {"scale"} if rule == GAP else {"x", "y"}
    outputs: list[Any] = []
    for k, m in enumerate(values):
        if m is None:
            outputs.append(None)
            continue
        if not isinstance(m, dict) or set(m) != keys:
            raise invalid(f"{where}[{k}] must be null or an object with exactly the "
                          f"field(s) {sorted(keys)}")
        if rule == GAP:
            scale = m["scale"]
            if isinstance(scale, bool) or not isinstance(scale, (int, float)):
                raise invalid(f"{where}[{k}].scale must be a number")
            outputs.append(float(scale))
        else:
            outputs.append(tuple(np.asarray(number_list(m[key], f"{where}[{k}].{key}"),
                                            dtype=np.float64) for key in ("x", "y")))
    return outputs


def check_outputs(outputs: Any, rule: str, n_checks: int) -> list[Any]:
    """``outputs`` (see :class:`ExitRules`) as float64 knots / float scales; ValueError
    saying what is wrong: one entry per check, band knots finite, x strictly ascending,
    y non-decreasing, 1 to ``MAX_KNOTS`` of them, as many y as x; gap scales finite and
    ``> 0``."""
    if not isinstance(outputs, (list, tuple)) or len(outputs) != n_checks:
        raise ValueError(f"outputs must hold one entry per check ({n_checks})")
    checked: list[Any] = []
    for k, m in enumerate(outputs):
        if m is None:
            checked.append(None)
        elif rule == GAP:
            if isinstance(m, (bool, np.bool_)) or not isinstance(m, (int, float, np.number)) \
                    or not (math.isfinite(m) and m > 0):
                raise ValueError(f"outputs[{k}]: a gap rule's map is a finite scale > 0, "
                                 f"got {m!r}")
            checked.append(float(m))
        else:
            try:
                x, y = (np.array(v, dtype=np.float64).reshape(-1) for v in m)
            except (TypeError, ValueError):
                raise ValueError(f"outputs[{k}]: a band rule's map is its knots (x, y)") \
                    from None
            if not 1 <= x.size <= MAX_KNOTS or y.size != x.size:
                raise ValueError(f"outputs[{k}]: x and y need the same number of knots, "
                                 f"1 to {MAX_KNOTS}")
            # the spans too: np.interp's slope of two overflowing spans is NaN
            with np.errstate(over="ignore", invalid="ignore"):
                spans = np.diff(x), np.diff(y)
            if not all(np.isfinite(v).all() for v in (x, y, *spans)):
                raise ValueError(f"outputs[{k}]: the knots and the spans between them "
                                 "must be finite")
            if np.any(spans[0] <= 0) or np.any(spans[1] < 0):
                raise ValueError(f"outputs[{k}]: x must ascend strictly and y must not "
                                 "descend (a monotone map)")
            checked.append((x, y))
    return checked


def exit_mask(scores: np.ndarray, gap: bool, lower: float, upper: float) -> np.ndarray:
    """bool per row of ``scores``: outside ``[lower, upper]`` (output 0), or with its two
    largest outputs more than ``upper`` apart (``gap``)."""
    if gap:
        top = np.sort(scores, axis=1)
        return _outside(top[:, -1] - top[:, -2], gap, lower, upper)
    return _outside(scores[:, 0], gap, lower, upper)


def _outside(value: np.ndarray, gap: bool, lower: float, upper: float) -> np.ndarray:
    """bool per compared ``value`` (output 0, or the gap of the two largest outputs):
    whether the input leaves."""
    if gap:
        return value > upper
    return (value < lower) | (value > upper)


def check_epsilon(epsilon: Any) -> float:
    """``epsilon`` as a float in [0, 1]; ValueError otherwise."""
    if isinstance(epsilon, bool) or not isinstance(epsilon, (int, float, np.floating)) \
            or not 0 <= epsilon <= 1:
        raise ValueError(f"epsilon must be a number in [0, 1], got {epsilon!r}")
    return float(epsilon)


def check_points(iterations: int, every: Any, checks: Sequence[int] | None = None
                 ) -> np.ndarray:
    """The checks after every ``every`` iterations, below ``iterations``; or the given
    ``checks`` (iteration counts), checked to ascend within ``[1, iterations)``."""
    if checks is not None:
        values = list(checks)
        if not all(isinstance(c, (int, np.integer)) and not isinstance(c, bool)
                   for c in values):
            raise TypeError(f"checks must hold integers (iteration counts), got {checks!r}")
        if any(not 1 <= c < iterations for c in values) \
                or any(b <= a for a, b in zip(values, values[1:])):
            raise ValueError(f"checks must ascend within [1, {iterations}): after how many "
                             f"iterations to check, got {values}")
        return np.asarray(values, dtype=np.int64).reshape(-1)
    if isinstance(every, bool) or not isinstance(every, (int, np.integer)) or every < 1:
        raise ValueError(f"every must be an integer >= 1, got {every!r}")
    return np.arange(int(every), int(iterations), int(every), dtype=np.int64)


def certified_bounds(leaf_max: np.ndarray, leaf_min: np.ndarray, checks: np.ndarray, *,
                     rule: str, decision_threshold: float | None, tolerance: float | None,
                     magnitude: float, probability_tolerance: float | None = None
                     ) -> tuple[np.ndarray, np.ndarray]:
    """(lower, upper) per check that only let out the inputs the later trees cannot
    change: ``leaf_max[r, c]`` / ``leaf_min[r, c]`` are the largest / smallest sums
    iteration ``r`` can add to output ``c``. Band with a decision threshold (binary):
    the score stays on its side, and with a ``probability_tolerance`` also its
    probability within it (:func:`_probability_settled`); band with a tolerance
    (regression): every input leaves when the later trees move no score by more than
    it; gap: the leading class stays ahead. ``magnitude`` bounds the scores' size, for
    the rounding slack."""
    rest_down, rest_up = later_reach(leaf_max, leaf_min, checks)
    slack = CERTIFIED_SLACK * (1.0 + magnitude)
    lower = np.full(checks.size, -np.inf)
    if rule == GAP:
        upper = rest_up.max(axis=1) - rest_down.min(axis=1) + slack
    elif tolerance is not None:
        settled = np.maximum(np.abs(rest_up[:, 0]), np.abs(rest_down[:, 0])) + slack \
            <= tolerance
        upper = np.full(checks.size, np.inf)
        lower[settled] = BIG
    else:
        assert decision_threshold is not None
        # an input leaves on its own side: the threshold stays inside the band even
        # when the later trees can move a score one way only
        upper = np.maximum(decision_threshold - rest_down[:, 0] + slack, decision_threshold)
        lower = np.minimum(decision_threshold - rest_up[:, 0] - slack, decision_threshold)
        if probability_tolerance is not None:
            settled_lower, settled_upper = _probability_settled(
                rest_down[:, 0], rest_up[:, 0], probability_tolerance, slack)
            upper, lower = np.maximum(upper, settled_upper), np.minimum(lower, settled_lower)
    return lower, upper


def _probability_settled(down: np.ndarray, up: np.ndarray, tolerance: float, slack: float
                         ) -> tuple[np.ndarray, np.ndarray]:
    """(lower, upper) per check outside which an exited binary output, mapped or
    partial, has a probability within ``tolerance`` of the full model's: both lie in
    ``s + [lo, hi]`` (``lo = min(down, 0)``, ``hi = max(up, 0)``; a map's output is
    kept within ``s + [down, up]``, :func:`output_range`), so they differ by at most
    ``g(s) = sigmoid(s + hi) - sigmoid(s + lo)``. ``g`` rises to ``tanh((hi - lo) / 4)``
    at ``s = -(hi + lo) / 2`` and falls symmetrically on either side; ``g(s) =
    tolerance`` there is a quadratic in ``exp(-(s + lo))``, whose smaller root is the
    upper bound (-BIG / BIG: everyone / no one leaves)."""
    lo, hi = np.minimum(down, 0.0), np.maximum(up, 0.0)
    width, middle = hi - lo, -(hi + lo) / 2
    # a hair below the tolerance: the probabilities compared are rounded
    tol = tolerance * (1 - 1e-9) - 1e-15
    q = np.exp(-width)
    b = (1 - q) - tol * (1 + q)
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        root = 2 * tol / (b + np.sqrt(np.maximum(b * b - 4 * tol * tol * q, 0.0)))
        upper = -np.log(root) - lo + slack
    everyone = np.tanh(width / 4) <= tol
    upper = np.where(everyone, -BIG, np.where(tol > 0, np.maximum(upper, middle), BIG))
    lower = np.where(everyone, BIG, np.where(tol > 0, 2 * middle - upper, -BIG))
    return lower, upper


def later_reach(leaf_max: np.ndarray, leaf_min: np.ndarray, checks: np.ndarray
                ) -> tuple[np.ndarray, np.ndarray]:
    """(least, most) the iterations after each check can add to each output, arrays
    (n_checks, n_outputs): the suffix sums of ``leaf_min`` / ``leaf_max`` (per iteration
    and output, the smallest / largest sum of leaf values it can add)."""
    up = np.cumsum(leaf_max[::-1], axis=0)[::-1]
    down = np.cumsum(leaf_min[::-1], axis=0)[::-1]
    return down[checks], up[checks]


def output_range(rest_down: np.ndarray, rest_up: np.ndarray, tolerance: float | None,
                 magnitude: float, gap: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """(low, high) per check: where a mapped output may lie, as offsets from the
    partial score. Gap: per class, ``rest_down`` and ``rest_up`` (:func:`later_reach`;
    :func:`scale_within` keeps the scores' differences in the range they span). One
    output: the range the later trees can reach (of output 0), in which the full
    model's output lies; with a
    ``tolerance`` (regression), where it is wide enough, only the outputs within the
    tolerance of every output in that range, so that an exit certified to be within the
    tolerance stays so once mapped (the partial score is then inside: low <= 0 <= high)."""
    if gap:
        return rest_down, rest_up
    low, high = rest_down[:, 0].copy(), rest_up[:, 0].copy()
    if tolerance is not None:
        slack = CERTIFIED_SLACK * (1.0 + magnitude)
        near_low, near_high = high - tolerance + slack, low + tolerance - slack
        fits = near_low <= near_high
        low[fits] = np.maximum(low, near_low)[fits]
        high[fits] = np.minimum(high, near_high)[fits]
    return low, high


# -- exit outputs: fitting ------------------------------------------------------------------
def isotonic(x: np.ndarray, y: np.ndarray, w: np.ndarray | None = None
             ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Weighted isotonic (non-decreasing) regression of ``y`` on ``x`` by
    pool-adjacent-violators: ``(xs, fitted, weights)`` per distinct ``x`` of positive
    weight, ascending (tied ``x`` are pooled first, so they get one value)."""
    x, y = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    w = np.ones_like(x) if w is None else np.asarray(w, dtype=np.float64)
    keep = w > 0
    x, y, w = x[keep], y[keep], w[keep]
    if x.size == 0:
        return x, y, w
    order = np.argsort(x, kind="stable")
    xs, start = np.unique(x[order], return_index=True)
    weights = np.add.reduceat(w[order], start)
    means = np.add.reduceat(w[order] * y[order], start) / weights
    # the blocks so far: mean, weight, distinct x's; a new point pools with the blocks
    # before it while their mean is above its
    block_mean: list[float] = []
    block_weight: list[float] = []
    block_size: list[int] = []
    for mean, weight in zip(means.tolist(), weights.tolist()):
        size = 1
        while block_mean and block_mean[-1] > mean:
            total = block_weight[-1] + weight
            mean = (block_mean.pop() * block_weight[-1] + mean * weight) / total
            block_weight.pop()
            weight = total
            size += block_size.pop()
        block_mean.append(mean)
        block_weight.append(weight)
        block_size.append(size)
    fitted = np.repeat(np.maximum.accumulate(np.asarray(block_mean)), block_size)
    return xs, fitted, weights


def monotone_map(x: np.ndarray, y: np.ndarray, w: np.ndarray | None = None,
                 max_knots: int = MAX_KNOTS) -> tuple[np.ndarray, np.ndarray]:
    """The knots ``(x, y)`` (both ascending strictly, at most ``max_knots``) of a
    piecewise-linear map fitted to ``y`` by :func:`isotonic`: each block of equal
    fitted values gives one knot, at its weighted mean ``x``. Between knots the map is
    linear, so it is strictly increasing there: unlike the step function of the blocks,
    it keeps the order of the scores, which AUC measures. With more blocks than
    ``max_knots``, adjacent blocks are pooled into that many groups of about equal
    weight (their weighted means; the map stays increasing). More than
    ``MAX_FIT_POINTS`` distinct ``x``: runs of adjacent ones are first pooled into that
    many points (weighted means), which bounds the fit's time (a Python loop) and
    changes the map little, as it has far fewer knots."""
    x, y = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    w = np.ones_like(x) if w is None else np.asarray(w, dtype=np.float64)
    keep = w > 0
    order = np.argsort(x[keep], kind="stable")
    xo = x[keep][order]
    distinct = np.cumsum(_run_starts(xo)) - 1 if xo.size else xo
    if xo.size and distinct[-1] + 1 > MAX_FIT_POINTS:
        yo, wo = y[keep][order], w[keep][order]
        # the run of each point (tied x's in one run)
        run = distinct * MAX_FIT_POINTS // (distinct[-1] + 1)
        start = np.flatnonzero(_run_starts(run))
        pooled = np.add.reduceat(wo, start)
        x = np.add.reduceat(wo * xo, start) / pooled
        y = np.add.reduceat(wo * yo, start) / pooled
        w = pooled
    xs, fitted, weights = isotonic(x, y, w)
    if xs.size == 0:
        raise ValueError("monotone_map needs at least one point of positive weight")
    # the blocks: runs of equal fitted value
    first = np.flatnonzero(_run_starts(fitted))
    block_weight = np.add.reduceat(weights, first)
    groups = max(1, max_knots)
    if first.size > groups:
        before = np.cumsum(block_weight) - block_weight / 2
        group = np.minimum((before / block_weight.sum() * groups).astype(np.int64),
                           groups - 1)
        first = first[_run_starts(group)]
    weight = np.add.reduceat(weights, first)
    value = np.add.reduceat(weights * fitted, first) / weight
    center = np.add.reduceat(weights * xs, first) / weight
    # the means of disjoint ascending blocks ascend; rounding must not break that
    keep = np.concatenate(([True], (np.diff(center) > 0) & (np.diff(value) > 0)))
    return center[keep], np.maximum.accumulate(value[keep])


def _run_starts(values: np.ndarray) -> np.ndarray:
    """bool per value: whether it differs from the one before (the first: True)."""
    return np.concatenate(([True], values[1:] != values[:-1]))


def _logit(p: np.ndarray) -> np.ndarray:
    p = np.clip(p, PROBABILITY_EPS, 1 - PROBABILITY_EPS)
    return np.log(p) - np.log1p(-p)


def _softmax(raw: np.ndarray) -> np.ndarray:
    z = np.exp(raw - raw.max(axis=1, keepdims=True))
    return z / z.sum(axis=1, keepdims=True)


def _scale_slope(t: float, scores: np.ndarray, expected: np.ndarray, w: np.ndarray,
                 derivative: bool = False) -> tuple[float, float]:
    """The derivative in ``c = exp(t)`` of :func:`fit_scale`'s loss, whose sign the
    bisection on ``t`` follows, and (``derivative``) its derivative in ``t``: ``c``
    times the weighted variances of the scores under ``softmax(c * scores)``."""
    c = math.exp(t)
    p = _softmax(c * scores)
    mean = np.einsum("ij,ij->i", p, scores)
    slope = float(np.dot(w, mean - expected))
    if not derivative:
        return slope, math.nan
    return slope, c * float(np.dot(w, np.einsum("ij,ij->i", p, scores * scores) - mean * mean))


def fit_scale(scores: np.ndarray, target: np.ndarray, w: np.ndarray) -> float:
    """The temperature ``c`` in ``[1 / SCALE_LIMIT, SCALE_LIMIT]`` whose ``softmax(c *
    scores)`` has the least weighted cross-entropy against the probabilities
    ``target`` (n, n_classes): the loss is convex in ``c``, so its derivative's sign is
    bisected (on log c, 50 steps).

    The bisection's result is kept bit for bit with far fewer softmaxes: the derivative
    (the slope) increases with ``c`` (weights >= 0), so a slope computed at ``t``
    further from 0 than the rounding errors (:func:`_slope_errors`) at ``t`` and at
    another point on its far side tells the sign computed there (:class:`_KnownSigns`).
    A few Newton steps find such points near the root on both sides; only the
    bisection's points between them are computed."""
    lo, hi = -math.log(SCALE_LIMIT), math.log(SCALE_LIMIT)
    expected = np.einsum("ij,ij->i", target, scores)
    known = _KnownSigns(_slope_errors(scores, expected, w)) \
        if scores.size and np.all(w >= 0) else None
    if known is not None:
        t, change = 0.0, math.nan
        left, right = lo, hi     # the root's bracket by the slopes' signs
        for _ in range(NEWTON_STEPS):
            slope, change = _scale_slope(t, scores, expected, w, derivative=True)
            known.add(t, slope)
            left, right = (t, right) if slope <= 0 else (left, t)
            if not change > 0 or (t == hi and slope <= 0) or (t == lo and slope > 0):
                break     # (or the root is beyond the range: all signs known)
            # Newton's step; beyond the bracket, its end (the range's first) or its middle
            step = slope / change
            if left < t - step < right:
                t -= step
            else:
                end = hi if t - step >= right else lo
                t = end if end in (left, right) and t != end else (left + right) / 2
            if abs(step) < 1e-9:        # the next is below 1e-15
                break
        if change > 0 and math.isfinite(change):
            # points just past the errors on either side of the root found
            spread = 4 * known.error(t) / change
            for probe in (t - spread, t + spread):
                known.add(probe, _scale_slope(probe, scores, expected, w)[0])
    for _ in range(50):
        mid = (lo + hi) / 2
        sign = None if known is None else known.sign(mid)
        if sign is None:
            sign = _scale_slope(mid, scores, expected, w)[0] > 0
        if sign:
            hi = mid
        else:
            lo = mid
    return math.exp((lo + hi) / 2)


def _slope_errors(scores: np.ndarray, expected: np.ndarray, w: np.ndarray
                  ) -> tuple[float, float]:
    """``(base, growth)``: the rounding error of :func:`_scale_slope`'s slope at ``t``
    is below ``base + exp(t) * growth`` (twice the first-order bound, in units of the
    machine epsilon: ``c * scores`` and the shift by the largest, ``8 c m^2`` per input
    of largest score magnitude ``m``; the softmax's sums and the expectation, ``(2 C
    + 5) m`` over ``C`` classes; the difference to ``expected`` and the dot product of
    ``n`` terms, ``(n + 1) (m + |expected|)``)."""
    n, n_classes = scores.shape
    size = np.abs(scores).max(axis=1)
    unit = 2 * sys.float_info.epsilon
    base = unit * float(np.dot(w, (2 * n_classes + 5) * size
                               + (n + 1) * (size + np.abs(expected))))
    return base, unit * 8 * float(np.dot(w, size * size))


class _KnownSigns:
    """The signs of :func:`fit_scale`'s computed slopes that its computed slopes so far
    tell: the slope increases, so at ``s < t`` it is at most ``slope(t) + error(t) +
    error(s)`` (<= 0 while ``error(s)`` is small enough), at ``s > t`` at least
    ``slope(t) - error(t) - error(s)`` (> 0 likewise); ``error(s) = base + exp(s) *
    growth`` (:func:`_slope_errors`)."""

    def __init__(self, errors: tuple[float, float]):
        self.base, self.growth = errors
        self.below = -math.inf                  # <= 0 at and below
        self.above: list[tuple[float, float]] = []   # > 0 from a up to (not at) b

    def error(self, t: float) -> float:
        return self.base + math.exp(t) * self.growth

    def add(self, t: float, slope: float) -> None:
        room = abs(slope) - self.error(t) - self.base     # for exp(s) * growth
        if not room > 0:
            return
        # the points s whose error leaves the sign: exp(s) * growth < room
        reach = math.inf if self.growth == 0 else math.log(room / self.growth)
        if slope <= 0:
            self.below = max(self.below, min(t, reach))
        elif reach > t:
            self.above.append((t, reach))

    def sign(self, s: float) -> bool | None:
        """Whether the computed slope at ``s`` is > 0, if known; else None."""
        if s <= self.below:
            return False
        if any(a <= s < b for a, b in self.above):
            return True
        return None


def fit_outputs(stages: Iterator[tuple[int, np.ndarray]], target: np.ndarray,
                weight: np.ndarray | None, rules: Sequence[ExitRules],
                held_from: np.ndarray | None = None) -> None:
    """Set the ``outputs`` of each of ``rules`` (made on the same inputs and checks):
    per check that can let inputs out, a map from the partial scores of the inputs that
    leave there to ``target``, the estimate of the full model's output wanted
    (``held_from`` as for :func:`calibrate`).

    ``stages`` yields ``(k, scores)`` per check as for :func:`calibrate`. ``target``:
    binary, a probability per input (the full model's, or the label), fitted by
    :func:`monotone_map` and stored on the raw (logit) scale; regression, the full
    model's prediction; multiclass, the full model's class probabilities, to which a
    temperature is fitted (:func:`fit_scale`). Fewer than ``MIN_MAP_INPUTS`` inputs
    leaving at a check: the map is fitted on all those live there."""
    n = target.shape[0]
    w = np.ones(n) if weight is None else np.asarray(weight, dtype=np.float64)
    live = [np.ones(n, dtype=bool) for _ in rules]
    maps: list[list[Any]] = [[None] * r.check_after.size for r in rules]
    firing = [r.firing() for r in rules]
    for k, scores in stages:
        gap = rules[0].gap if rules else False
        if gap:
            top = np.sort(scores, axis=1)
            value = top[:, -1] - top[:, -2]
        else:
            value = scores[:, 0]
        free = None if held_from is None else held_from > k
        fitted: dict[tuple[bytes, bool], Any] = {}   # rules fitted on the same inputs
        for j, r in enumerate(rules):
            if not firing[j][k]:
                continue
            may_leave = live[j] if free is None else live[j] & free
            out = may_leave & _outside(value, gap, r.lower[k], r.upper[k])
            fit_on = out if np.count_nonzero(out) >= MIN_MAP_INPUTS else may_leave
            if np.any(w[fit_on] > 0):
                key = (np.packbits(fit_on).tobytes(), r.calibration.get("tolerance") is None)
                if key not in fitted:
                    fitted[key] = _fit_map(r, scores[fit_on], target[fit_on], w[fit_on])
                maps[j][k] = fitted[key]
            live[j] &= ~out
    for r, m in zip(rules, maps):
        r.outputs = check_outputs(m, r.rule, r.check_after.size)


def _fit_map(rules: ExitRules, scores: np.ndarray, target: np.ndarray, w: np.ndarray) -> Any:
    """One check's map (see :func:`fit_outputs`)."""
    if rules.gap:
        return fit_scale(scores, target, w)
    x, y = monotone_map(scores[:, 0], target, w)
    return (x, _logit(y) if rules.calibration.get("tolerance") is None else y)


# -- exit outputs: applying -----------------------------------------------------------------
def apply_map(partial: np.ndarray, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """The map of knots ``(x, y)`` at ``partial``: linear between the knots, and beyond
    them the partial score shifted by the end knot's offset (slope 1), so that the
    order of the scores is kept there too rather than flattened into ties."""
    below, above = partial < x[0], partial > x[-1]
    return np.where(below, partial + (y[0] - x[0]),
                    np.where(above, partial + (y[-1] - x[-1]), np.interp(partial, x, y)))


def scale_within(scores: np.ndarray, scale: float, down: np.ndarray, up: np.ndarray
                 ) -> np.ndarray:
    """Per row of ``scores`` (n, n_classes), the factor ``c > 0`` nearest to ``scale``
    with which every difference of two class scores stays in the range the later trees
    can give it: ``c (s_i - s_j)`` within ``s_i - s_j + [down_i - up_j, up_i - down_j]``
    (``down`` / ``up``: what they add to each class at least / most; softmax depends on
    the differences only). The factors allowed form an interval, which holds 1 (the
    partial scores) whenever ``down <= up`` across classes (leaves of both signs); where
    it is empty, 1. A factor > 0 keeps the largest class, which wins at the lower end
    (at least ``1 / SCALE_LIMIT``)."""
    n, n_classes = scores.shape
    lo, hi = np.full(n, -np.inf), np.full(n, np.inf)   # bounds on c - 1
    with np.errstate(divide="ignore", invalid="ignore"):
        for i in range(n_classes):
            diff = scores[:, i:i + 1] - scores        # s_i - s_j, pairs with s_i > s_j
            ahead = diff > 0
            hi = np.minimum(hi, np.where(ahead, (up[i] - down) / diff, np.inf).min(axis=1))
            lo = np.maximum(lo, np.where(ahead, (down[i] - up) / diff, -np.inf).max(axis=1))
    t = np.where(lo <= hi, np.clip(scale - 1.0, lo, hi), 0.0)
    return np.maximum(1.0 + t, 1.0 / SCALE_LIMIT)


def map_outputs(rules: ExitRules, raw: np.ndarray, check: np.ndarray,
                low: np.ndarray, high: np.ndarray) -> None:
    """Replace, in place, the raw scores (n, n_outputs) of the inputs that left at
    check ``k`` (``check[i] == k``; -1: not exited) by ``rules.outputs[k]``'s map of
    them. Band: the map's value (:func:`apply_map`), kept within
    ``partial + [low[k], high[k]]`` (:func:`output_range`) and then, binary, on the
    partial score's side of the decision threshold (which wins should the two
    conflict, which only a calibrated exit that the later trees certainly reverse
    could; above the threshold, the output is at least ``min(partial, threshold +
    SIDE_MARGIN)``). Gap: the scores times the scale, brought per input as near to it
    as the range of the later trees allows (:func:`scale_within`; the largest class
    stays the largest)."""
    if rules.outputs is None:
        return
    order = np.argsort(check, kind="stable")
    ends = np.searchsorted(check[order], np.arange(rules.check_after.size + 1))
    threshold = rules.calibration.get("decision_threshold")
    for k, m in enumerate(rules.outputs):
        rows = order[ends[k]:ends[k + 1]]
        if m is None or rows.size == 0:
            continue
        if rules.gap:
            raw[rows] *= scale_within(raw[rows], m, low[k], high[k])[:, None]
            continue
        raw[rows, 0] = band_outputs(raw[rows, 0], m, low[k], high[k], threshold)


def band_outputs(partial: np.ndarray, m: tuple[np.ndarray, np.ndarray], low: float,
                 high: float, threshold: float | None) -> np.ndarray:
    """The outputs of inputs leaving a band check with the ``partial`` scores: the map of
    knots ``m`` there (:func:`apply_map`), kept within ``partial + [low, high]`` and on
    the partial score's side of ``threshold`` (None: regression), as
    :func:`map_outputs` says."""
    mapped = np.clip(apply_map(partial, *m), partial + low, partial + high)
    if threshold is None:
        return mapped
    # above the threshold: at least the partial score or threshold + SIDE_MARGIN, so that
    # a probability stays above 0.5 too (sigmoid of the next float above 0 is 0.5)
    return np.where(partial > threshold,
                    np.maximum(mapped, np.minimum(partial, threshold + SIDE_MARGIN)),
                    np.minimum(mapped, threshold))


class ProbabilityAgreement:
    """Binary exits that keep the probability (:func:`calibrate`'s ``disagrees``): an
    exit disagrees with the full model when it changes the class (the side of
    ``threshold``) or when its output's probability is more than ``tolerance`` from
    the full model's ``target`` probability.

    The exited output is the check's map (``fit=True``) or the partial score. The
    thresholds are set from the disagreements and the maps are fitted on the inputs
    that leave, which the thresholds decide; so here, before the thresholds, each
    check's map is fitted on all the inputs that may leave there (those not held): the
    same partial scores, so about the same conditional expectation of the full model's
    probability (:attr:`maps`, which :meth:`cbudget.Booster.calibrate_exits` keeps
    wherever the final map, fitted on the inputs that leave, would disagree more).
    ``low`` / ``high``: per check, the offsets within which an output stays
    (:func:`output_range`); ``transform``: raw score to probability (a 1-d array)."""

    def __init__(self, tolerance: float, threshold: float, full: np.ndarray,
                 target: np.ndarray, weight: np.ndarray | None, low: np.ndarray,
                 high: np.ndarray, transform: Callable[[np.ndarray], np.ndarray], *,
                 fit: bool = True, held_from: np.ndarray | None = None):
        self.tolerance, self.threshold = tolerance, threshold
        self.side = full[:, 0] > threshold
        self.target = np.asarray(target, dtype=np.float64).reshape(-1)
        self.weight = np.ones(self.target.size) if weight is None \
            else np.asarray(weight, dtype=np.float64)
        self.low, self.high, self.transform = low, high, transform
        self.fit, self.held_from = fit, held_from
        self.maps: list[Any] = [None] * low.size

    def outputs(self, k: int, partial: np.ndarray) -> np.ndarray:
        """The raw outputs of inputs leaving check ``k`` with the ``partial`` scores."""
        m = self.maps[k]
        return partial if m is None else band_outputs(partial, m, self.low[k],
                                                      self.high[k], self.threshold)

    def off(self, raw: np.ndarray) -> np.ndarray:
        """bool per input: whether the output ``raw`` (one raw score each) disagrees
        with the full model's (another class, or a probability beyond the tolerance)."""
        return ((raw > self.threshold) != self.side) | (
            np.abs(self.transform(raw.reshape(-1, 1)) - self.target) > self.tolerance)

    def __call__(self, k: int, scores: np.ndarray) -> np.ndarray:
        partial = scores[:, 0]
        if self.fit:
            may = slice(None) if self.held_from is None else self.held_from > k
            if np.any(self.weight[may] > 0):
                x, y = monotone_map(partial[may], self.target[may], self.weight[may])
                self.maps[k] = (x, _logit(y))
        return self.off(self.outputs(k, partial))


class _Calibration:
    """The state of one epsilon's calibration while the checks go by. The budget is
    ``epsilon`` times the inputs' total ``weight``; whole-number weights count inputs (a
    weight of 2: the input twice), so their budget is whole inputs, as without weights."""

    def __init__(self, epsilon: float, weight: np.ndarray, n_checks: int, spread: int):
        self.epsilon = epsilon
        self.weight = weight
        total = float(weight.sum())
        self.whole = bool(np.all(weight == np.floor(weight)))
        self.allowed: float = math.floor(epsilon * total + 1e-9) if self.whole \
            else epsilon * total
        self.spread = spread
        self.live = np.ones(weight.size, dtype=bool)
        self.used = 0.0     # the weight of the disagreeing exits so far
        self.lower = np.full(n_checks, -np.inf)
        self.upper = np.full(n_checks, np.inf)

    def allowance(self, k: int) -> float:
        """Disagreeing weight this check may add: the budget spread evenly over the
        first ``spread`` checks, what earlier checks left unused carried over."""
        if self.epsilon == 0:
            return -1     # no calibrated exits: only the certified ones
        spread = self.allowed * (k + 1) // self.spread if self.whole \
            else self.allowed * (k + 1) / self.spread
        return max(0, min(self.allowed, spread) - self.used)


class _Check(NamedTuple):
    """One check's data for the threshold search, computed once for all the runs of a
    calibration (:func:`_spend_the_budget` runs it dozens of times): per input the
    compared ``value`` and whether its exit would disagree (``wrong``); ``order``, the
    inputs by ascending value, and in that order the ``ascending`` values, their
    ``weight`` and, ``up`` / ``low``, whether the input is a wrong one of positive
    weight that the upper / lower threshold must pass (binary: above / at or below the
    decision threshold; otherwise all of them; the gap rule uses ``up``)."""
    value: np.ndarray
    wrong: np.ndarray
    order: np.ndarray
    ascending: np.ndarray
    weight: np.ndarray
    up: np.ndarray
    low: np.ndarray


def _check(value: np.ndarray, wrong: np.ndarray, weight: np.ndarray, center: float | None
           ) -> _Check:
    """The :class:`_Check` of the compared ``value``, ``wrong`` and ``weight`` per input
    (``center``: the binary decision threshold, else None)."""
    order = np.argsort(value)
    ascending, wrong_sorted, w = value[order], wrong[order], weight[order]
    counted = wrong_sorted & (w > 0)
    if center is None:
        up = low = counted
    else:
        up, low = counted & (ascending > center), counted & (ascending <= center)
    return _Check(value, wrong, order, ascending, w, up, low)


def _outside_in(check: _Check, keep: np.ndarray, descending: bool
                ) -> tuple[np.ndarray, np.ndarray]:
    """The values of ``check`` that ``keep`` (in ascending order) keeps, in the order
    asked, and, before each and after the last, the weight of those ahead of it:
    ``ahead[j]`` is the weight of ``values[:j]``."""
    values, weight = check.ascending[keep], check.weight[keep]
    if descending:
        values, weight = values[::-1], weight[::-1]
    return values, np.concatenate(([0.0], np.cumsum(weight)))


def _band_thresholds(check: _Check, may: np.ndarray, allowance: float,
                     center: float | None) -> tuple[float, float]:
    """(lower, upper) letting the most weight of the inputs that ``may`` leave (bool in
    ascending order of the values) out above ``upper`` or below ``lower`` with at most
    ``allowance`` of the wrong ones' weight among them. ``center``: the decision
    threshold (binary), which the band keeps inside so that an input leaves on its own
    side. (A threshold at the value of an input of weight 0 would let out no less weight
    than one at the next value: such inputs are no candidates.)"""
    up, low = may & check.up, may & check.low
    # the largest wrong value above and the smallest below (-1: none)
    top, bottom = _first(up, last=True), _first(low)
    if (top < 0 or check.weight[top] > allowance) and \
            (bottom < 0 or check.weight[bottom] > allowance):
        # the allowance pays for no wrong exit (the most common case): the one candidate
        # below, without the weights ahead (the same thresholds)
        upper = check.ascending[top] if top >= 0 else -BIG
        lower = check.ascending[bottom] if bottom >= 0 else BIG
        if center is not None:
            upper, lower = np.maximum(upper, center), np.minimum(lower, center)
        return float(lower), float(upper)
    up_desc, up_ahead = _outside_in(check, up, descending=True)
    low_asc, low_ahead = _outside_in(check, low, descending=False)
    # above the (j + 1)-th largest wrong score, at most the weight of the j before it
    # (j < n_up: the weights are > 0, so ahead ascends); below, the most wrong ones the
    # rest of the allowance pays for
    n_up = int(np.searchsorted(up_ahead, allowance, side="right"))
    e_low = np.searchsorted(low_ahead, allowance - up_ahead[:n_up], side="right") - 1
    upper = _nth(up_desc, np.arange(n_up), -BIG)
    lower = _nth(low_asc, e_low, BIG)
    if center is not None:
        upper, lower = np.maximum(upper, center), np.minimum(lower, center)
    if n_up == 1:      # one candidate (no allowance beyond the largest wrong score)
        return float(lower[0]), float(upper[0])
    m = check.ascending[may]
    below = np.concatenate(([0.0], np.cumsum(check.weight[may])))   # weight below each
    total = below[-1]
    let_out = (total - below[np.searchsorted(m, upper, side="right")]
               + below[np.searchsorted(m, lower, side="left")])
    let_out = np.where(lower > upper, total, np.minimum(let_out, total))
    best = int(np.argmax(let_out))   # the first best: the fewest disagreements above
    return float(lower[best]), float(upper[best])


def _first(mask: np.ndarray, last: bool = False) -> int:
    """The index of the first (``last``: the last) True of ``mask``, -1 if none."""
    if not mask.size:
        return -1
    i = int(np.argmax(mask[::-1])) if last else int(np.argmax(mask))
    i = mask.size - 1 - i if last else i
    return i if mask[i] else -1


def _nth(values: np.ndarray, index: np.ndarray, beyond: float) -> np.ndarray:
    """``values[index]``, ``beyond`` where the index is past the end."""
    if values.size == 0:
        return np.full(index.shape, beyond)
    return np.where(index < values.size, values[np.minimum(index, values.size - 1)], beyond)


def _gap_threshold(check: _Check, may: np.ndarray, allowance: float) -> float:
    """The gap above which the most of the inputs that ``may`` leave (bool in ascending
    order of their gaps) leave with at most ``allowance`` of the wrong ones' weight."""
    up = may & check.up
    top = _first(up, last=True)     # the largest wrong gap (-1: none)
    if top < 0 or check.weight[top] > allowance:     # no wrong exit paid for
        return float(check.ascending[top]) if top >= 0 else -1.0
    wrong_desc, ahead = _outside_in(check, up, descending=True)
    j = int(np.searchsorted(ahead, allowance, side="right")) - 1
    return float(wrong_desc[j]) if j < wrong_desc.size else -1.0


def calibrate(stages: Iterator[tuple[int, np.ndarray]], full: np.ndarray,
              epsilons: Sequence[float], *, rule: str, iterations: int, checks: np.ndarray,
              every: int, decision_threshold: float | None, tolerance: float | None,
              certified: tuple[np.ndarray, np.ndarray],
              weight: np.ndarray | None = None,
              held_from: np.ndarray | None = None,
              disagrees: Callable[[int, np.ndarray], np.ndarray] | None = None
              ) -> list[ExitRules]:
    """Exit rules for each of ``epsilons`` from validation scores.

    ``stages`` yields ``(k, scores)`` for each check ``k`` in order: every input's scores
    (n, n_outputs) after ``checks[k]`` iterations; ``full`` the scores after all
    ``iterations``. At each check, among the inputs still in, the thresholds let out
    the most with at most the check's allowance of disagreements, together with the
    ``certified`` ones (:func:`certified_bounds`). The allowance spreads the budget
    ``floor(epsilon * n)`` evenly over the first ``K`` checks, the unused part carried
    over; ``K`` is the most checks over which the budget is still spent
    (:func:`_spend_the_budget`). With the inputs' ``weight``, disagreements are
    weighed: the budget is ``epsilon`` times the total weight (whole-number weights:
    floored, as the weight 2 of an input given twice), and the recorded
    ``disagreement`` the disagreeing exits' share of the total weight. ``held_from``
    (int per input, optional): the first check at which the input is held
    (:attr:`ExitRules.hold`; ``checks.size``: never); from there it does not leave.
    ``disagrees(k, scores)`` (optional): bool per input, whose exit at check ``k``
    would disagree (:class:`ProbabilityAgreement`); default: a class changed, or a
    regression prediction moved by more than ``tolerance``.
    """
    n_inputs = full.shape[0]
    w = np.ones(n_inputs) if weight is None else np.asarray(weight, dtype=np.float64)
    total = float(w.sum())
    decisions = _decisions(full, rule, decision_threshold)
    center = decision_threshold if rule == BAND and tolerance is None else None
    # per check, what the thresholds compare (output 0; gap: the two largest outputs'
    # difference) and whose exit there would disagree, sorted once for every run of the
    # search over K (_Check)
    seen: list[_Check] = []
    for k, scores in stages:     # in the order of the checks
        partial = _decisions(scores, rule, decision_threshold)
        if disagrees is not None:
            wrong = disagrees(k, scores)
        elif rule == GAP or tolerance is None:
            wrong = partial != decisions
        else:
            wrong = np.abs(scores[:, 0] - full[:, 0]) > tolerance
        if rule == GAP:
            top = np.sort(scores, axis=1)
            value = top[:, -1] - top[:, -2]
        else:
            value = scores[:, 0].copy()
        seen.append(_check(value, wrong, w, center))

    def run(epsilon: float, spread: int) -> _Calibration:
        state = _Calibration(epsilon, w, checks.size, spread)
        _apply(state, seen, rule, center, certified, held_from)
        return state

    states = [_spend_the_budget(eps, checks.size, run) for eps in epsilons]
    return [ExitRules(rule, iterations, checks, s.lower, s.upper,
                      {"method": "calibrated", "epsilon": s.epsilon,
                       "decision_threshold": None if rule == GAP or tolerance is not None
                       else decision_threshold,
                       "tolerance": tolerance, "every": int(every), "n_inputs": n_inputs,
                       "disagreement": s.used / total if total > 0 else 0.0})
            for s in states]


def _apply(state: _Calibration, seen: Sequence[_Check], rule: str, center: float | None,
           certified: tuple[np.ndarray, np.ndarray],
           held_from: np.ndarray | None = None) -> None:
    """Go through the checks (``seen``, :class:`_Check`), setting ``state``'s thresholds
    and letting inputs out (not the held ones: ``held_from`` as for
    :func:`calibrate`)."""
    cert_lower, cert_upper = certified
    live = state.live
    for k, check in enumerate(seen):
        if not live.any():
            # no one left: the later checks have their certified bounds (as
            # max(-inf, bound) / min(inf, bound) below) and let no one else out
            state.lower[k:] = np.fmax(-np.inf, cert_lower[k:])
            state.upper[k:] = np.fmin(np.inf, cert_upper[k:])
            return
        allowance = state.allowance(k)
        free = live if held_from is None else live & (held_from > k)
        lower, upper = -np.inf, np.inf
        if allowance >= 0:
            may = free[check.order]      # the inputs that may leave, ascending
            if may.any():
                if rule == GAP:
                    upper = _gap_threshold(check, may, allowance)
                else:
                    lower, upper = _band_thresholds(check, may, allowance, center)
        state.lower[k] = max(lower, cert_lower[k])
        state.upper[k] = min(upper, cert_upper[k])
        out = free & _outside(check.value, rule == GAP, state.lower[k], state.upper[k])
        state.used += float(state.weight[out & check.wrong].sum())
        live &= ~out


def _spend_the_budget(epsilon: float, n_checks: int,
                      run: Callable[[float, int], _Calibration]) -> _Calibration:
    """The calibration of ``epsilon`` whose budget is spread over the most checks ``K``
    among those that spend the most of it. Spread over all the checks, the allowance of
    the late ones goes mostly unused: the inputs that would disagree have left or come
    to agree by then (epsilon 0.05 reached 0.017-0.032). Over fewer checks it is spent
    while enough validation inputs there disagree with the full model (not always all
    of it at ``K = 1``: after a few trees many scores tie). ``K`` is tried at the powers
    of two, from the largest down to the first that spends it all, then bisected
    between the largest that spends the most and the next (the spent budget is not
    exactly monotone in ``K``; the bisection keeps ``lo`` spending the most, so the
    result does)."""
    widest = run(epsilon, max(n_checks, 1))
    if epsilon == 0 or n_checks <= 1 or widest.used >= widest.allowed:
        return widest
    tried = {n_checks: widest}
    for spread in sorted((1 << i for i in range(n_checks.bit_length()) if 1 << i < n_checks),
                         reverse=True):
        tried[spread] = run(epsilon, spread)
        if tried[spread].used >= widest.allowed:   # all of it: fewer checks cannot beat it
            break
    most = max(state.used for state in tried.values())
    lo = max(spread for spread, state in tried.items() if state.used == most)
    if lo == n_checks:
        return widest
    hi, best = 2 * lo if 2 * lo < n_checks else n_checks, tried[lo]
    while hi - lo > 1:     # lo spends the most, hi less
        mid = (lo + hi) // 2
        state = run(epsilon, mid)
        if state.used >= most:
            lo, best = mid, state
        else:
            hi = mid
    return best


def _decisions(scores: np.ndarray, rule: str, decision_threshold: float | None) -> np.ndarray:
    """What a prediction decides: the class of largest score (gap), the side of the
    decision threshold (binary band), the score itself (regression)."""
    if rule == GAP:
        return np.argmax(scores, axis=1)
    if decision_threshold is not None:
        return scores[:, 0] > decision_threshold
    return scores[:, 0]


def best_epsilon(candidates: Sequence[tuple[float, float]], full_score: float,
                 max_drop: float, maximize: bool) -> int:
    """Index of the largest epsilon whose metric (``candidates``: (epsilon, metric)) is
    within ``max_drop`` of the full model's; ValueError when none is."""
    for i, (_, score) in sorted(enumerate(candidates), key=lambda c: -c[1][0]):
        drop = full_score - score if maximize else score - full_score
        if drop <= max_drop:
            return i
    raise ValueError(f"no epsilon of {[c[0] for c in candidates]} keeps the metric within "
                     f"{max_drop} of the full model's ({full_score:.6g})")

