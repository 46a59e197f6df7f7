"""The calibration's threshold search (cbudget.exits.calibrate) and the multiclass
temperature fit (cbudget.exits.fit_scale) against their slow references
(reference_exits.py: the code before they were sped up), bit for bit, on random
validation scores with ties, weights (whole, fractional, zero), held inputs and
certified bounds; and the work they skip."""
import numpy as np
import pytest
import reference_exits as ref

from cbudget import exits

EPSILONS = (0.3, 0.1, 0.033, 0.01, 0.002, 0.0)


def random_calibration(seed):
    """(stages as a list, full scores, calibrate's keyword arguments) of a random case."""
    rng = np.random.default_rng(seed)
    n, n_checks = int(rng.integers(1, 150)), int(rng.integers(1, 20))
    kind = ("binary", "regression", "gap")[seed % 3]
    n_out = 3 if kind == "gap" else 1
    full = rng.standard_normal((n, n_out)) * 3
    raw, stages = np.zeros((n, n_out)), []
    for k in range(n_checks):
        raw = raw + (full - raw) * rng.uniform(0, 0.5) + rng.standard_normal((n, n_out)) * 0.3
        if rng.random() < 0.3:
            raw = np.round(raw, 1)    # ties
        stages.append((k, raw.copy()))
    weight = (None, rng.integers(0, 3, n).astype(float),
              rng.uniform(0, 2, n) * (rng.random(n) < 0.9))[seed // 3 % 3]
    cert = (np.full(n_checks, -np.inf), np.full(n_checks, np.inf))
    if rng.random() < 0.5:
        c = np.sort(rng.uniform(0, 10, n_checks))[::-1]
        cert = (-c if kind != "gap" else cert[0], c)
    return stages, full, dict(
        rule=exits.GAP if kind == "gap" else exits.BAND, iterations=n_checks + 1,
        checks=np.arange(1, n_checks + 1), every=1,
        decision_threshold=float(rng.uniform(-1, 1)) if kind == "binary" else None,
        tolerance=0.5 if kind == "regression" else None, certified=cert, weight=weight,
        held_from=rng.integers(0, n_checks + 1, n) if rng.random() < 0.4 else None)


@pytest.mark.parametrize("seed", range(27))
def test_calibrate_equals_the_reference_search(seed):
    stages, full, options = random_calibration(seed)
    fast = exits.calibrate(iter(stages), full, EPSILONS, **options)
    slow = ref.calibrate(iter(stages), full, EPSILONS, **options)
    assert len(fast) == len(slow) == len(EPSILONS)
    for a, b in zip(fast, slow):
        assert np.array_equal(a.lower, b.lower) and np.array_equal(a.upper, b.upper)
        assert a.calibration == b.calibration      # the disagreement too, bit for bit


def test_the_search_stops_going_through_the_checks_once_no_input_is_left(monkeypatch):
    """Everyone leaves at the first check (certified): the dozens of runs of the search
    over K do not each go through the 200 checks after it."""
    n_checks, n = 200, 50
    rng = np.random.default_rng(0)
    full = rng.standard_normal((n, 1))
    stages = [(k, full + 0.01 * rng.standard_normal((n, 1))) for k in range(n_checks)]
    certified = (np.full(n_checks, exits.BIG), np.full(n_checks, np.inf))
    calls = []
    real = exits._outside
    monkeypatch.setattr(exits, "_outside", lambda *a: calls.append(1) or real(*a))
    made = exits.calibrate(iter(stages), full, [0.1], rule=exits.BAND,
                           iterations=n_checks + 1, checks=np.arange(1, n_checks + 1),
                           every=1, decision_threshold=None, tolerance=0.001,
                           certified=certified)
    assert np.all(made[0].lower == exits.BIG)
    # a check with inputs per run (the slow search: all 200 checks of each run)
    assert 0 < len(calls) <= 20


def random_temperature_fit(seed):
    """(scores, target, weight) for fit_scale: class scores of 1 to 8 magnitudes, ties,
    a target of another temperature with noise, and whole, fractional or zero weights."""
    rng = np.random.default_rng(seed)
    n, n_classes = int(rng.integers(1, 120)), int(rng.integers(2, 7))
    scores = rng.standard_normal((n, n_classes)) * rng.choice([0.01, 0.3, 1, 3, 10, 50])
    if seed % 4 == 0:
        scores = np.round(scores, 1)
    target = ref._softmax(np.exp(rng.uniform(-5.5, 5.5)) * scores
                          + rng.choice([0, 0.1, 1]) * rng.standard_normal(scores.shape))
    weight = (np.ones(n), rng.integers(0, 3, n).astype(float), rng.uniform(0, 2, n))[seed % 3]
    return scores, target, weight


@pytest.mark.parametrize("seed", range(0, 300, 10))
def test_fit_scale_equals_the_plain_bisection(seed):
    for s in range(seed, seed + 10):
        scores, target, weight = random_temperature_fit(s)
        assert exits.fit_scale(scores, target, weight) == ref.fit_scale(scores, target, weight)


def test_fit_scale_computes_a_third_of_the_softmaxes(monkeypatch):
    """Partial class scores of a few units, the full model's probabilities a little more
    extreme: Newton's steps and the known signs leave about 17 of the bisection's 50
    softmaxes (from 12 to 21 in the exit tests' fits)."""
    rng = np.random.default_rng(3)
    scores = 2 * rng.standard_normal((300, 4))
    target = ref._softmax(1.7 * scores + 0.5 * rng.standard_normal(scores.shape))
    calls = []
    real = exits._softmax
    monkeypatch.setattr(exits, "_softmax", lambda raw: calls.append(1) or real(raw))
    assert exits.fit_scale(scores, target, np.ones(300)) == \
        ref.fit_scale(scores, target, np.ones(300))
    assert len(calls) <= 21


def test_rules_leaving_the_same_inputs_share_one_fit(monkeypatch):
    """fit_outputs fits a check's map once for the rules whose inputs there are the
    same (the epsilons of a calibration often agree at a check), and each rule gets the
    maps it gets alone."""
    stages, full, options = random_calibration(3)     # binary, whole-number weights
    rules = exits.calibrate(iter(stages), full, exits.EPSILON_GRID, **options)
    target = 1 / (1 + np.exp(-full[:, 0]))
    alone = []
    for r in rules:
        fit_outputs_of([r], stages, target, options)
        alone.append(r.outputs)
    calls = []
    real = exits._fit_map
    monkeypatch.setattr(exits, "_fit_map", lambda *a: calls.append(1) or real(*a))
    fit_outputs_of(rules, stages, target, options)
    for r, maps in zip(rules, alone):
        assert len(r.outputs) == len(maps)
        for a, b in zip(r.outputs, maps):
            assert (a is None and b is None) or all(np.array_equal(u, v) for u, v in zip(a, b))
    fits = sum(m is not None for maps in alone for m in maps)
    assert 0 < len(calls) < fits     # (one per rule and check before)


def fit_outputs_of(rules, stages, target, options):
    exits.fit_outputs(iter(stages), target, options["weight"], rules, options["held_from"])
