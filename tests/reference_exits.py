"""Slow references for cbudget.exits' calibration: the threshold search as it was before
it was sped up (every run of the search sorted the live inputs again and went through
every check, even once no input was left), and the multiclass temperature fitted by a
plain bisection of 50 steps, one softmax each. The fast code must give the same
thresholds, disagreements and scales bit for bit."""
import math
from collections.abc import Callable, Iterator, Sequence

import numpy as np

# the budget's spread over the checks and what a prediction decides are unchanged: the
# library's own, so that the comparison is of the search that changed
from cbudget.exits import (
    BAND,
    BIG,
    GAP,
    SCALE_LIMIT,
    ExitRules,
    _decisions,
    _spend_the_budget,
)
from cbudget.model_io import model_from_dict


def _outside(value: np.ndarray, gap: bool, lower: float, upper: float) -> np.ndarray:
    """bool per compared ``value`` (output 0, or the gap of the two largest outputs):
    whether the input leaves."""
    if gap:
        return value > upper
    return (value < lower) | (value > upper)


def _softmax(raw: np.ndarray) -> np.ndarray:
    z = np.exp(raw - raw.max(axis=1, keepdims=True))
    return z / z.sum(axis=1, keepdims=True)


def fit_scale(scores: np.ndarray, target: np.ndarray, w: np.ndarray) -> float:
    """The temperature ``c`` in ``[1 / SCALE_LIMIT, SCALE_LIMIT]`` whose ``softmax(c *
    scores)`` has the least weighted cross-entropy against the probabilities
    ``target`` (n, n_classes): the loss is convex in ``c``, so its derivative's sign is
    bisected (on log c)."""
    lo, hi = -math.log(SCALE_LIMIT), math.log(SCALE_LIMIT)
    expected = np.einsum("ij,ij->i", target, scores)
    for _ in range(50):
        mid = (lo + hi) / 2
        p = _softmax(math.exp(mid) * scores)
        slope = float(np.dot(w, np.einsum("ij,ij->i", p, scores) - expected))
        if slope > 0:
            hi = mid
        else:
            lo = mid
    return math.exp((lo + hi) / 2)



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


def _outside_in(values: np.ndarray, weight: np.ndarray, keep: np.ndarray,
                descending: bool) -> tuple[np.ndarray, np.ndarray]:
    """The ``values`` (ascending) that ``keep`` keeps and of positive ``weight``, in the
    order asked, and, before each and after the last, the weight of those ahead of it:
    ``ahead[j]`` is the weight of ``values[:j]``. (A threshold at the value of an input
    of weight 0 would let out no less weight than one at the next value: such inputs
    are left out.)"""
    keep = keep & (weight > 0)
    values, weight = values[keep], weight[keep]
    if descending:
        values, weight = values[::-1], weight[::-1]
    return values, np.concatenate(([0.0], np.cumsum(weight)))


def _band_thresholds(m: np.ndarray, wrong: np.ndarray, w: np.ndarray, allowance: float,
                     center: float | None) -> tuple[float, float]:
    """(lower, upper) letting the most live weight (scores ``m``, ascending, weights
    ``w``) out above ``upper`` or below ``lower`` with at most ``allowance`` of the
    ``wrong`` ones' weight (those whose exit would disagree) among them. ``center``: the
    decision threshold (binary), which the band keeps inside so that an input leaves on
    its own side."""
    below = np.concatenate(([0.0], np.cumsum(w)))    # the weight below each position
    if center is None:
        up_wrong = low_wrong = wrong
    else:
        up_wrong, low_wrong = wrong & (m > center), wrong & (m <= center)
    up_desc, up_ahead = _outside_in(m, w, up_wrong, descending=True)
    low_asc, low_ahead = _outside_in(m, w, low_wrong, descending=False)
    # above the (j + 1)-th largest wrong score, at most the weight of the j before it;
    # below, the most wrong ones the rest of the allowance pays for
    e_up = np.flatnonzero(up_ahead <= allowance)
    e_low = np.searchsorted(low_ahead, allowance - up_ahead[e_up], side="right") - 1
    upper = _nth(up_desc, e_up, -BIG)
    lower = _nth(low_asc, e_low, BIG)
    if center is not None:
        upper, lower = np.maximum(upper, center), np.minimum(lower, center)
    total = below[-1]
    let_out = (total - below[np.searchsorted(m, upper, side="right")]
               + below[np.searchsorted(m, lower, side="left")])
    let_out = np.where(lower > upper, total, np.minimum(let_out, total))
    best = int(np.argmax(let_out))   # the first best: the fewest disagreements above
    return float(lower[best]), float(upper[best])


def _nth(values: np.ndarray, index: np.ndarray, beyond: float) -> np.ndarray:
    """``values[index]``, ``beyond`` where the index is past the end."""
    if values.size == 0:
        return np.full(index.shape, beyond)
    return np.where(index < values.size, values[np.minimum(index, values.size - 1)], beyond)


def _gap_threshold(gap: np.ndarray, wrong: np.ndarray, w: np.ndarray,
                   allowance: float) -> float:
    """The gap above which the most live inputs (their gaps ascending) leave with at
    most ``allowance`` of the wrong ones' weight (``w``)."""
    wrong_desc, ahead = _outside_in(gap, w, wrong, descending=True)
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
    """:func:`cbudget.exits.calibrate` as it was (same arguments, same results): every
    run of the search over K sorts the live inputs again and goes through every check."""
    n_inputs = full.shape[0]
    w = np.ones(n_inputs) if weight is None else np.asarray(weight, dtype=np.float64)
    total = float(w.sum())
    decisions = _decisions(full, rule, decision_threshold)
    # per check, what the thresholds compare (output 0; gap: the two largest outputs'
    # difference), whose exit there would disagree and the inputs in ascending order of
    # the compared value (sorted once for every run), kept for the search over K
    seen: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
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
        seen.append((value, wrong, np.argsort(value)))
    center = decision_threshold if rule == BAND and tolerance is None else None

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


def _apply(state: _Calibration, seen: Sequence[tuple[np.ndarray, np.ndarray, np.ndarray]],
           rule: str, center: float | None, certified: tuple[np.ndarray, np.ndarray],
           held_from: np.ndarray | None = None) -> None:
    """Go through the checks (``seen``: per check the compared values, whether an exit
    would disagree and the inputs in ascending order of the values), setting
    ``state``'s thresholds and letting inputs out (not the held ones: ``held_from`` as
    for :func:`calibrate`)."""
    cert_lower, cert_upper = certified
    live = state.live
    for k, (value, wrong, order) in enumerate(seen):
        allowance = state.allowance(k)
        free = live if held_from is None else live & (held_from > k)
        lower, upper = -np.inf, np.inf
        if allowance >= 0 and free.any():
            rows = order[free[order]]      # the inputs that may leave, ascending
            if rule == GAP:
                upper = _gap_threshold(value[rows], wrong[rows], state.weight[rows],
                                       allowance)
            else:
                lower, upper = _band_thresholds(value[rows], wrong[rows],
                                                state.weight[rows], allowance, center)
        state.lower[k] = max(lower, cert_lower[k])
        state.upper[k] = min(upper, cert_upper[k])
        out = free & _outside(value, rule == GAP, state.lower[k], state.upper[k])
        state.used += float(state.weight[out & wrong].sum())
        live &= ~out


def cross_fitted(model, X: np.ndarray, epsilon: float, **options) -> tuple[np.ndarray,
                                                                           np.ndarray]:
    """(predictions, costs) of ``X``'s rows as ``Booster.cross_fitted_exits`` should give
    them: each half of the rows (cross-fitting's fixed shuffle) predicted and costed by
    a copy of ``model`` (any model with exits: a booster or a gated model) whose exits at
    ``epsilon`` were calibrated with ``options`` on the other half."""
    n = X.shape[0]
    half = np.random.default_rng(0).permutation(n) % 2
    predictions, costs = None, np.empty(n)
    for k in range(2):
        rows, others = np.flatnonzero(half == k), np.flatnonzero(half != k)
        fold = model_from_dict(model.to_dict())
        fold.calibrate_exits(X[others], epsilon, **options)
        predicted = fold.predict(X[rows])
        if predictions is None:
            predictions = np.empty((n, *predicted.shape[1:]))
        predictions[rows] = predicted
        costs[rows] = fold.predict_cost(X[rows])
    return predictions, costs
