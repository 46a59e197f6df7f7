"""Binary exits with a probability tolerance (``calibrate_exits(tolerance=...)`` on a
binary model; docs/architecture.md, "Early exit"): an exit disagrees with the full model
when it changes the class or moves the probability by more than the tolerance. On the
validation data at most a fraction epsilon disagree; with epsilon 0 no input, validation
or not, changes class or moves by more than the tolerance; outputs stay monotone in the
partial score and on its side; the tolerance is saved with the model."""
import json

import numpy as np
import pytest
from test_early_exit import make_problem
from test_exit_outputs import train

import cbudget
from cbudget import exits
from cbudget.model_io import model_from_dict


@pytest.fixture(scope="module")
def model():
    return train("binary", rounds=40)


def valid(seed=1, n=500):
    X, y = make_problem("binary", n, seed)
    return cbudget.Dataset(X, y)


def exited(model, X):
    """(raw with exits, probability with exits, raw, probability of the full model)."""
    return (model.predict(X, output_margin=True), model.predict(X),
            model.predict(X, output_margin=True, early_exit=False),
            model.predict(X, early_exit=False))


def disagree(model, X, tolerance):
    raw, p, raw_full, p_full = exited(model, X)
    return ((raw > 0) != (raw_full > 0)) | (np.abs(p - p_full) > tolerance)


@pytest.mark.parametrize("outputs", ["calibrated", "partial"])
@pytest.mark.parametrize("epsilon,tolerance,every", [
    (0.02, 0.02, 1), (0.05, 0.05, 1), (0.1, 0.03, 5), (0.2, 0.1, 3)])
def test_tolerance_bounds_the_validation_disagreement(model, outputs, epsilon, tolerance,
                                                      every):
    """At most a fraction epsilon of the validation inputs get an exited output whose
    class or probability (beyond the tolerance) differs from the full model's, maps
    included, and the calibration records that fraction."""
    m, dvalid = model.copy(), valid()
    rules = m.calibrate_exits(dvalid, epsilon, tolerance=tolerance, every=every,
                              outputs=outputs)
    off = disagree(m, dvalid.data, tolerance)
    assert off.mean() <= epsilon + 1e-12
    assert off.mean() == pytest.approx(rules.calibration["disagreement"])
    assert rules.calibration["probability_tolerance"] == tolerance
    # not vacuous: inputs leave, and the budget is spent on something
    assert m.predict_cost(dvalid.data).mean() < m.predict_cost(dvalid.data,
                                                                early_exit=False).mean()
    assert off.any()


def test_tolerance_with_held_inputs(model):
    """Held inputs (``hold``) never leave; the tolerance's budget is spent on the
    others and still bounds the validation disagreement."""
    m, dvalid = model.copy(), valid()
    dear = int(np.argmax(m.cost_model.first_read_costs()
                         * np.isin(np.arange(m.num_features()), m.used_features())))
    free = m.copy()
    free.calibrate_exits(dvalid, 0.1, tolerance=0.05, every=2)
    rules = m.calibrate_exits(dvalid, 0.1, tolerance=0.05, every=2, hold=[dear])
    assert rules.hold.tolist() == [dear]
    assert disagree(m, dvalid.data, 0.05).mean() <= 0.1
    ends = m.exit_iterations(dvalid.data)
    assert (ends < rules.iterations).any()
    assert np.mean(ends < rules.iterations) < np.mean(free.exit_iterations(dvalid.data)
                                                       < rules.iterations)


def test_max_metric_drop_with_a_tolerance(model):
    """Selection by the metric takes the tolerance too: the chosen epsilon's exits keep
    the validation log-loss within the drop."""
    m, dvalid = model.copy(), valid()
    rules = m.calibrate_exits(dvalid, max_metric_drop=0.002, metric="logloss",
                              tolerance=0.05)
    y = dvalid.label
    logloss = [-np.mean(y * np.log(p) + (1 - y) * np.log(1 - p))
               for p in (np.clip(m.predict(dvalid.data, early_exit=e), 1e-15, 1 - 1e-15)
                         for e in (None, False))]
    assert rules.calibration["probability_tolerance"] == 0.05
    assert logloss[0] - logloss[1] <= 0.002


def test_tolerance_with_weights(model):
    """Weights weigh the maps' fits and the epsilon budget (a third of the inputs weigh
    nothing): the weighted disagreement over the validation inputs stays within
    epsilon."""
    X, y = make_problem("binary", 500, 1)
    weight = np.where(np.random.default_rng(5).random(500) < 1 / 3, 0.0, 1.0)
    m = model.copy()
    m.calibrate_exits(cbudget.Dataset(X, y, weight=weight), 0.1, tolerance=0.03, every=2)
    weighted = np.average(disagree(m, X, 0.03), weights=weight)
    assert weighted <= 0.1
    assert m.exit_rules.calibration["disagreement"] == pytest.approx(weighted)


@pytest.mark.parametrize("tolerance", [0.01, 0.05, 0.2])
def test_epsilon_zero_with_a_tolerance_is_certified_on_any_input(model, tolerance):
    """epsilon 0: only the exits the later trees cannot change by more than the
    tolerance in probability, nor in class, on inputs the calibration never saw."""
    m = model.copy()
    m.calibrate_exits(valid(), 0.0, tolerance=tolerance)
    X, _ = make_problem("binary", 3000, 7)
    raw, p, raw_full, p_full = exited(m, X)
    assert np.array_equal(raw > 0, raw_full > 0)
    assert np.abs(p - p_full).max() <= tolerance
    if tolerance == 0.2:
        assert m.predict_cost(X).mean() < m.predict_cost(X, early_exit=False).mean()


def test_certified_bounds_keep_the_probability_within_the_tolerance():
    """Outside the certified band, every output and full score in ``s + [min(down, 0),
    max(up, 0)]`` have probabilities within the tolerance and the same side; just
    inside, the widest pair is beyond it (the band is tight)."""
    rng = np.random.default_rng(0)
    sigmoid = lambda z: 1 / (1 + np.exp(-z))         # noqa: E731
    for _ in range(200):
        n_iter = 6
        leaf_max = rng.uniform(-0.5, 1.5, (n_iter, 1))
        leaf_min = leaf_max - rng.uniform(0, 2, (n_iter, 1))
        checks = np.array([1, 3, 5])
        tol = rng.choice([0.005, 0.02, 0.1, 0.3])
        threshold = rng.uniform(-1, 1)
        lower, upper = exits.certified_bounds(
            leaf_max, leaf_min, checks, rule="band", decision_threshold=threshold,
            tolerance=None, magnitude=10.0, probability_tolerance=tol)
        down, up = exits.later_reach(leaf_max, leaf_min, checks)
        lo, hi = np.minimum(down[:, 0], 0), np.maximum(up[:, 0], 0)
        for k in range(checks.size):
            s = np.linspace(-30, 30, 6001)
            out = (s < lower[k]) | (s > upper[k])
            width = sigmoid(s + hi[k]) - sigmoid(s + lo[k])
            assert np.all(width[out] <= tol)
            assert np.all(((s + down[k, 0] > threshold) == (s > threshold))[out])
            assert np.all(((s + up[k, 0] > threshold) == (s > threshold))[out])
            # just inside the upper bound, where the side alone would let it out
            side = max(threshold - down[k, 0], threshold)
            inside = ~out & (s > upper[k] - 0.02) & (s > side + 1e-6)
            assert np.all(width[inside] > tol * 0.99)


def test_tolerance_one_is_the_class_rule(model):
    """A tolerance of 1 counts class changes only: the thresholds of no tolerance."""
    a, b = model.copy(), model.copy()
    ra = a.calibrate_exits(valid(), 0.05, every=2)
    rb = b.calibrate_exits(valid(), 0.05, every=2, tolerance=1.0)
    assert np.array_equal(ra.lower, rb.lower) and np.array_equal(ra.upper, rb.upper)


def test_a_smaller_tolerance_keeps_the_log_loss(model):
    """The knob between the certified exits and the class rule: the tolerance's exits
    leave the log-loss nearer the full model's, and cost more, than the class rule's at
    the same epsilon."""
    dtest = valid(seed=3, n=2000)
    y = dtest.label
    scores = {}
    for tolerance in (None, 0.1, 0.02):
        m = model.copy()
        m.calibrate_exits(valid(), 0.05, tolerance=tolerance)
        p = np.clip(m.predict(dtest.data), 1e-15, 1 - 1e-15)
        scores[tolerance] = (-np.mean(y * np.log(p) + (1 - y) * np.log(1 - p)),
                             m.predict_cost(dtest.data).mean())
    assert scores[0.02][0] < scores[0.1][0] < scores[None][0]
    assert scores[0.02][1] > scores[0.1][1] > scores[None][1]


def test_outputs_monotone_and_on_the_partial_side(model):
    """Within a check, the outputs (the final maps, or where those would disagree more,
    the maps fitted before the thresholds) ascend with the partial score and keep its
    side of the threshold."""
    m = model.copy()
    rules = m.calibrate_exits(valid(), 0.1, tolerance=0.05, every=4)
    assert any(o is not None for o in rules.outputs)
    X, _ = make_problem("binary", 3000, 9)
    mapped = m.predict(X, output_margin=True)
    partial = m.copy().set_exit_rules(exits.ExitRules(
        rules.rule, rules.iterations, rules.check_after, rules.lower, rules.upper,
        dict(rules.calibration))).predict(X, output_margin=True)
    ends = m.exit_iterations(X)
    for check in rules.check_after:
        rows = ends == check
        order = np.argsort(partial[rows], kind="stable")
        assert np.all(np.diff(mapped[rows][order]) >= 0)
        assert np.array_equal(mapped[rows] > 0, partial[rows] > 0)
    assert (ends < rules.iterations).any()


def test_tolerance_saved_with_the_model(model):
    m = model.copy()
    m.calibrate_exits(valid(), 0.05, tolerance=0.04, every=3)
    back = model_from_dict(json.loads(json.dumps(m.to_dict())))
    X, _ = make_problem("binary", 300, 4)
    assert back.exit_rules.calibration["probability_tolerance"] == 0.04
    np.testing.assert_array_equal(back.predict(X), m.predict(X))


@pytest.mark.parametrize("tolerance", [-0.1, 1.5, float("nan"), True, "0.1"])
def test_bad_binary_tolerance_is_a_clear_error(model, tolerance):
    with pytest.raises(ValueError, match=r"probability in \[0, 1\]"):
        model.copy().calibrate_exits(valid(), 0.05, tolerance=tolerance)


def test_multiclass_has_no_tolerance():
    model = train("multiclass", rounds=10)
    X, y = make_problem("multiclass", 200, 1)
    with pytest.raises(ValueError, match="multiclass exits agree when the class does"):
        model.calibrate_exits(cbudget.Dataset(X, y), 0.05, tolerance=0.1)


def test_cost_path_takes_a_binary_probability_tolerance():
    X, y = make_problem("binary", 400, 11)
    Xv, yv = make_problem("binary", 300, 12)
    dtrain = cbudget.Dataset(X, y, feature_costs=[1.0] * X.shape[1])
    dvalid = cbudget.Dataset(Xv, yv, reference=dtrain)
    params = {"algorithm": "cegb", "objective": "binary:logistic", "verbosity": 0}
    path = cbudget.cost_path(params, dtrain, dvalid, n_points=3, num_boost_round=10,
                             exit_epsilons=[0.05], exit_tolerance=0.05)
    exited = [m for m, e in zip(path.models, path.epsilons) if not np.isnan(e)]
    assert exited and all(m.exit_rules.calibration["probability_tolerance"] == 0.05
                          for m in exited)
    for bad in (1.5, -0.1, "0.1"):
        with pytest.raises(ValueError, match="probability"):
            cbudget.cost_path(params, dtrain, dvalid, n_points=3, num_boost_round=10,
                              exit_epsilons=[0.05], exit_tolerance=bad)
    with pytest.raises(ValueError, match="multiclass"):
        cbudget.cost_path({**params, "objective": "multi:softprob", "num_class": 3},
                          dtrain, dvalid, n_points=3, num_boost_round=10,
                          exit_epsilons=[0.05], exit_tolerance=0.05)
