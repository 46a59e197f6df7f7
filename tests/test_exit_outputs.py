"""Exit outputs (cbudget.exits fit_outputs / map_outputs; docs/architecture.md, "Early
exit"): an exited input's output is a calibrated map of its partial score, monotone
within a check, on the partial score's side (binary) / class (multiclass), inside the
range the later trees can reach; saved in the model file, applied by predict and by
on-demand prediction."""
import functools
import json
import warnings

import numpy as np
import pytest
from test_early_exit import FEATURE_COSTS as COSTS
from test_early_exit import make_problem

import cbudget
from cbudget import exits
from cbudget.metrics import METRICS

OBJECTIVES = {"binary": "binary:logistic", "multiclass": "multi:softprob",
              "regression": "reg:squarederror"}
TOLERANCE = 0.6


def train(kind, seed=0, rounds=30, learning_rate=0.2):
    X, y = make_problem(kind, 700, seed)
    params = {"objective": OBJECTIVES[kind], "algorithm": "cegb", "cost_tradeoff": 1e-3,
              "num_leaves": 6, "learning_rate": learning_rate, "min_data_in_leaf": 10,
              "n_jobs": 1, "seed": seed}
    if kind == "multiclass":
        params["num_class"] = 3
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return cbudget.train(params, cbudget.Dataset(X, y, feature_costs=COSTS), rounds)


def calibrated(model, kind, epsilon, seed=1, **options):
    model = model.copy()
    Xv, yv = make_problem(kind, 500, seed)
    if kind == "regression":
        options.setdefault("tolerance", TOLERANCE)
    model.calibrate_exits(cbudget.Dataset(Xv, yv), epsilon, **options)
    return model


@functools.cache
def _calibrated_text(kind):
    return json.dumps(calibrated(train(kind), kind, 0.05).to_dict())


def calibrated_doc(kind):
    """A fresh document of ``calibrated(train(kind), kind, 0.05)`` (trained and calibrated
    once: the tests of hostile files each edit their own copy)."""
    return json.loads(_calibrated_text(kind))


def without_maps(rules):
    return exits.ExitRules(rules.rule, rules.iterations, rules.check_after, rules.lower,
                           rules.upper, dict(rules.calibration))


def reach(model, checks):
    """(least, most) the trees after each check can add, per output: from the trees."""
    n_rounds = model.num_boosted_rounds()
    lo, hi = np.zeros((n_rounds, model.n_outputs)), np.zeros((n_rounds, model.n_outputs))
    for r in range(n_rounds):
        for t in range(model.iteration_indptr[r], model.iteration_indptr[r + 1]):
            leaves = model.trees[t]["value"][model.trees[t]["left"] == -1]
            lo[r, model.tree_outputs[t]] += leaves.min()
            hi[r, model.tree_outputs[t]] += leaves.max()
    return (np.array([lo[c:].sum(axis=0) for c in checks]),
            np.array([hi[c:].sum(axis=0) for c in checks]))


def margins(model, X, **options):
    raw = model.predict(X, output_margin=True, **options)
    return raw.reshape(X.shape[0], -1)


# -- the isotonic fit ------------------------------------------------------------------------
@pytest.mark.parametrize("seed", range(6))
def test_isotonic_matches_sklearn_with_weights_and_ties(seed):
    from sklearn.isotonic import IsotonicRegression
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 60))
    x = rng.integers(0, 25, n).astype(float) / 3      # ties
    y = x * 0.3 + rng.normal(size=n)
    w = rng.random(n) * (rng.random(n) > 0.1)          # some zero weights
    xs, fitted, _ = exits.isotonic(x, y, w)
    if not np.any(w > 0):
        assert xs.size == 0
        return
    ref = IsotonicRegression().fit(x[w > 0], y[w > 0], sample_weight=w[w > 0])
    np.testing.assert_allclose(fitted, ref.predict(xs), rtol=1e-10, atol=1e-10)
    assert np.all(np.diff(xs) > 0) and np.all(np.diff(fitted) >= 0)


def test_isotonic_against_brute_force_pav():
    def brute(y, w):      # pool the first violating pair until none is left
        blocks = [[v, wt, 1] for v, wt in zip(y, w)]
        changed = True
        while changed:
            changed = False
            for i in range(len(blocks) - 1):
                if blocks[i][0] > blocks[i + 1][0]:
                    a, b = blocks[i], blocks.pop(i + 1)
                    a[0] = (a[0] * a[1] + b[0] * b[1]) / (a[1] + b[1])
                    a[1] += b[1]
                    a[2] += b[2]
                    changed = True
                    break
        return np.repeat([b[0] for b in blocks], [b[2] for b in blocks])
    rng = np.random.default_rng(5)
    for _ in range(20):
        n = int(rng.integers(1, 30))
        y, w = rng.normal(size=n), rng.random(n) + 0.1
        np.testing.assert_allclose(exits.isotonic(np.arange(n), y, w)[1], brute(y, w),
                                   rtol=1e-12)


def test_monotone_map_caps_the_knots_and_stays_monotone():
    rng = np.random.default_rng(0)
    x = rng.normal(size=5000)
    y = np.tanh(x) + 0.01 * rng.normal(size=5000)      # thousands of blocks
    kx, ky = exits.monotone_map(x, y, max_knots=exits.MAX_KNOTS)
    assert 2 <= kx.size <= exits.MAX_KNOTS and ky.size == kx.size
    assert np.all(np.diff(kx) > 0) and np.all(np.diff(ky) > 0)
    grid = np.linspace(-4, 4, 999)
    mapped = exits.apply_map(grid, kx, ky)
    assert np.all(np.diff(mapped) > 0)                  # strictly: no ties made
    assert np.max(np.abs(exits.apply_map(x, kx, ky) - np.tanh(x))[np.abs(x) < 2]) < 0.1


# -- the guarantees, on fresh inputs ----------------------------------------------------------
@pytest.mark.parametrize("kind", list(OBJECTIVES))
@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("epsilon", [0.0, 0.05])
def test_mapped_outputs_keep_the_guarantees(kind, seed, epsilon):
    model = calibrated(train(kind, seed), kind, epsilon, seed=seed + 10)
    rules = model.exit_rules
    assert rules.outputs is not None and any(m is not None for m in rules.outputs)
    X, _ = make_problem(kind, 1500, seed + 20)
    mapped, full = margins(model, X), margins(model, X, early_exit=False)
    partial = margins(model.copy().set_exit_rules(without_maps(rules)), X)
    ends = model.exit_iterations(X)
    down, up = reach(model, rules.check_after)
    exited = ends < rules.iterations
    assert exited.any()
    slack = 1e-9 * (1 + np.abs(full).max())
    for k, check in enumerate(rules.check_after):
        rows = ends == check
        if not rows.any():
            continue
        p, m = partial[rows], mapped[rows]
        if kind == "multiclass":
            assert np.array_equal(np.argmax(m, axis=1), np.argmax(p, axis=1))
            # a positive scale per input (softmax sees differences only): every
            # difference of two class scores in the range the later trees give it
            scale = m / np.where(p == 0, 1, p)
            assert np.all(scale[p != 0] > 0)
            assert np.all(np.abs(scale - scale[:, :1])[p != 0] <= 1e-9 * np.abs(scale[:, :1]))
            assert np.all(down[k][:, None] <= up[k][None, :])     # 1 is allowed
            moved = (m[:, :, None] - m[:, None, :]) - (p[:, :, None] - p[:, None, :])
            assert np.all(moved >= down[k][:, None] - up[k][None, :] - slack)
            assert np.all(moved <= up[k][:, None] - down[k][None, :] + slack)
            continue
        order = np.argsort(p[:, 0], kind="stable")
        assert np.all(np.diff(m[order, 0]) >= 0)                  # monotone
        ties = np.diff(p[order, 0]) == 0
        assert np.all(np.diff(m[order, 0])[ties] == 0)           # ties -> equal outputs
        assert np.all(m[:, 0] >= p[:, 0] + down[k, 0] - slack)    # the certified range
        assert np.all(m[:, 0] <= p[:, 0] + up[k, 0] + slack)
        if kind == "binary":
            assert np.array_equal(m[:, 0] > 0, p[:, 0] > 0)       # same side
    if epsilon == 0:
        if kind == "regression":
            assert np.all(np.abs(mapped - full) <= TOLERANCE + slack)
        else:
            assert np.array_equal(np.argmax(mapped, axis=1) if kind == "multiclass"
                                  else mapped[:, 0] > 0,
                                  np.argmax(full, axis=1) if kind == "multiclass"
                                  else full[:, 0] > 0)


def test_the_maps_move_outputs_toward_the_full_model():
    model = calibrated(train("binary", rounds=40, learning_rate=0.1), "binary", 0.05)
    X, _ = make_problem("binary", 2000, 7)
    full = margins(model, X, early_exit=False)[:, 0]
    mapped = margins(model, X)[:, 0]
    partial = margins(model.copy().set_exit_rules(without_maps(model.exit_rules)), X)[:, 0]
    exited = model.exit_iterations(X) < model.exit_rules.iterations
    assert np.mean(np.abs(mapped - full)[exited]) < 0.7 * np.mean(np.abs(partial - full)[exited])


def test_logloss_with_maps_is_closer_to_the_full_models():
    model = train("binary", rounds=60, learning_rate=0.1)
    with_maps = calibrated(model, "binary", 0.02)
    partial = calibrated(model, "binary", 0.02, outputs="partial")
    assert partial.exit_rules.outputs is None
    X, y = make_problem("binary", 3000, 9)
    full_loss = METRICS["logloss"](y, model.predict(X), None)
    loss = {name: METRICS["logloss"](y, m.predict(X), None) - full_loss
            for name, m in (("maps", with_maps), ("partial", partial))}
    assert np.array_equal(with_maps.predict_cost(X), partial.predict_cost(X))
    assert loss["partial"] > 0.01
    assert abs(loss["maps"]) < 0.75 * loss["partial"]


def test_weights_weigh_the_fit():
    model = train("binary")
    Xv, yv = make_problem("binary", 500, 1)
    plain = model.copy()
    plain.calibrate_exits(cbudget.Dataset(Xv, yv), 0.0)
    weighted = model.copy()
    w = np.where(Xv[:, 0] > 0, 5.0, 0.2)
    # epsilon 0: the same (certified) exits, whatever the weights (which weigh epsilon)
    weighted.calibrate_exits(cbudget.Dataset(Xv, yv, weight=w), 0.0)
    assert np.array_equal(plain.exit_rules.lower, weighted.exit_rules.lower)
    assert any(a is not None and (a[0].size != b[0].size or not np.allclose(a[1], b[1]))
               for a, b in zip(plain.exit_rules.outputs, weighted.exit_rules.outputs))


def test_outputs_option_is_checked():
    model = train("binary")
    Xv, _ = make_problem("binary", 100, 1)
    with pytest.raises(ValueError, match="outputs must be one of"):
        model.calibrate_exits(Xv, 0.01, outputs="probability")


# -- on-demand prediction ---------------------------------------------------------------------
@pytest.mark.parametrize("kind", list(OBJECTIVES))
def test_on_demand_prediction_equals_predict_with_maps(kind):
    model = calibrated(train(kind), kind, 0.05)
    X, _ = make_problem(kind, 400, 3)
    source = cbudget.FeatureSource(lambda f, r: X[np.ix_(r, f)], X.shape[0])
    assert np.array_equal(model.predict(source), model.predict(X))
    partial = model.copy().set_exit_rules(without_maps(model.exit_rules))
    assert not np.array_equal(partial.predict(X), model.predict(X))


# -- files ------------------------------------------------------------------------------------
@pytest.mark.parametrize("kind", list(OBJECTIVES))
def test_maps_survive_the_file(kind, tmp_path):
    model = calibrated(train(kind), kind, 0.05)
    path = tmp_path / "m.json"
    model.save_model(path)
    loaded = cbudget.load_model(path)
    X, _ = make_problem(kind, 300, 4)
    assert np.array_equal(loaded.predict(X), model.predict(X))
    doc = json.loads(path.read_text())
    assert len(doc["exit_rules"]["outputs"]) == len(doc["exit_rules"]["check_after"])
    loaded.save_model(tmp_path / "again.json")
    assert json.loads((tmp_path / "again.json").read_text()) == doc


def test_a_file_without_maps_predicts_partial_scores(tmp_path):
    model = calibrated(train("binary"), "binary", 0.05)
    doc = model.to_dict()
    del doc["exit_rules"]["outputs"]
    path = tmp_path / "old.json"
    path.write_text(json.dumps(doc))
    loaded = cbudget.load_model(path)
    assert loaded.exit_rules.outputs is None
    X, _ = make_problem("binary", 300, 4)
    partial = model.copy().set_exit_rules(without_maps(model.exit_rules))
    assert np.array_equal(loaded.predict(X), partial.predict(X))


def _first_map(doc):
    return next(i for i, m in enumerate(doc["exit_rules"]["outputs"]) if m is not None)


HOSTILE = {
    "descending y": lambda m: m.update(x=[0.0, 1.0], y=[1.0, 0.0]),
    "x not ascending": lambda m: m.update(x=[1.0, 0.0], y=[0.0, 1.0]),
    "NaN": lambda m: m.update(y=[float("nan")] * len(m["y"])),
    "infinite x": lambda m: m.update(x=[float("inf")] * len(m["x"])),
    # finite knots whose spans overflow: np.interp's slope inf / inf was NaN predictions
    "spans overflow": lambda m: m.update(x=[-1e308, 1e308], y=[-1e308, 1e308]),
    "lengths differ": lambda m: m.update(y=m["y"] + [m["y"][-1]]),
    "no knots": lambda m: m.update(x=[], y=[]),
    "too many knots": lambda m: m.update(x=list(range(100)), y=list(range(100))),
    "bool knot": lambda m: m.update(x=[True], y=[0.0]),
    "string knot": lambda m: m.update(x=["0"], y=[0.0]),
    "unknown field": lambda m: m.update(scale=2.0),
    "missing field": lambda m: m.pop("y"),
}


@pytest.mark.parametrize("mutation", list(HOSTILE))
def test_hostile_maps_are_refused(mutation, tmp_path):
    doc = calibrated_doc("binary")
    HOSTILE[mutation](doc["exit_rules"]["outputs"][_first_map(doc)])
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(ValueError, match="invalid cbudget model: .*(outputs|knots)"):
        cbudget.load_model(path)


@pytest.mark.parametrize("outputs, message", [
    ("maps", "outputs must be a list"), ([], "one entry"), ([None], "one entry"),
    ("first:-1", "scale"), ("first:0", "scale"), ("first:true", "scale"),
    ("first:x", "exactly the field")])
def test_hostile_outputs_lists_are_refused(outputs, message, tmp_path):
    doc = calibrated_doc("multiclass")
    section = doc["exit_rules"]
    if isinstance(outputs, str) and outputs.startswith("first:"):
        value = {"-1": {"scale": -1.0}, "0": {"scale": 0.0}, "true": {"scale": True},
                 "x": {"x": [0.0], "y": [0.0]}}[outputs[6:]]
        section["outputs"][_first_map(doc)] = value
    elif outputs == [None]:
        section["outputs"] = section["outputs"] + [None]
    else:
        section["outputs"] = outputs
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(ValueError, match=message):
        cbudget.load_model(path)


def test_band_maps_need_the_threshold_or_the_tolerance():
    rules = calibrated(train("binary"), "binary", 0.05).exit_rules
    calibration = dict(rules.calibration, decision_threshold=None)
    with pytest.raises(ValueError, match="decision_threshold"):
        exits.ExitRules(rules.rule, rules.iterations, rules.check_after, rules.lower,
                        rules.upper, calibration, rules.outputs)


# -- selection with the user's metric ---------------------------------------------------------
MAX_DROP = {"auc": 0.01, "logloss": 0.05, "error": 0.01, "mlogloss": 0.05, "merror": 0.02,
            "rmse": 0.1}


@pytest.mark.parametrize("kind, metric", [("binary", "auc"), ("binary", "logloss"),
                                          ("binary", "error"), ("multiclass", "mlogloss"),
                                          ("multiclass", "merror"), ("regression", "rmse")])
def test_metric_drop_selection_with_maps(kind, metric):
    model = train(kind)
    Xv, yv = make_problem(kind, 500, 1)
    dvalid = cbudget.Dataset(Xv, yv)
    extra = {"tolerance": TOLERANCE} if kind == "regression" else {}
    chosen = model.copy()
    max_drop = MAX_DROP[metric]
    rules = chosen.calibrate_exits(dvalid, max_metric_drop=max_drop, metric=metric, **extra)
    assert rules.outputs is not None
    full = METRICS[metric](yv, model.predict(Xv), None)
    score = METRICS[metric](yv, chosen.predict(Xv), None)
    drop = full - score if metric == "auc" else score - full
    assert drop <= max_drop + 1e-12
    pick = model.best_exit_within_budget(dvalid, np.inf, metric=metric, iterations=[30],
                                         epsilons=[0.0, 0.05], tolerance=extra.get("tolerance"),
                                         exit_scoring="in_sample")
    assert pick.model.exit_rules.outputs is not None
    assert pick.score == pytest.approx(METRICS[metric](yv, pick.model.predict(Xv), None))


def test_scale_within_keeps_every_difference_in_range_against_brute_force():
    rng = np.random.default_rng(3)
    grid = np.exp(np.linspace(np.log(1e-2), np.log(1e2), 4001))[:, None, None]
    for _ in range(10):
        n_classes = int(rng.integers(2, 5))
        scores = rng.normal(size=(20, n_classes)) * 3
        down, up = -rng.random(n_classes) * 2, rng.random(n_classes) * 2
        scale = float(np.exp(rng.normal() * 2))
        got = exits.scale_within(scores, scale, down, up)
        lo, hi = down[:, None] - up[None, :], up[:, None] - down[None, :]
        for s, c in zip(scores, got):
            diff = s[:, None] - s[None, :]
            ok = np.all(((grid - 1) * diff >= lo - 1e-9) & ((grid - 1) * diff <= hi + 1e-9),
                        axis=(1, 2))
            assert np.all((c - 1) * diff >= lo - 1e-9) and np.all((c - 1) * diff <= hi + 1e-9)
            best = grid[ok, 0, 0][np.argmin(np.abs(grid[ok, 0, 0] - scale))]
            assert abs(c - best) <= 0.01 * best        # the nearest allowed, on the grid


def test_a_large_scale_is_held_to_the_range_of_the_later_trees():
    model = calibrated(train("multiclass"), "multiclass", 0.05)
    rules = model.exit_rules
    forced = exits.ExitRules(rules.rule, rules.iterations, rules.check_after, rules.lower,
                             rules.upper, dict(rules.calibration),
                             [None if m is None else 80.0 for m in rules.outputs])
    X, _ = make_problem("multiclass", 800, 5)
    partial = margins(model.copy().set_exit_rules(without_maps(rules)), X)
    mapped = margins(model.copy().set_exit_rules(forced), X)
    ends = model.exit_iterations(X)
    down, up = reach(model, rules.check_after)
    assert np.array_equal(np.argmax(mapped, axis=1), np.argmax(partial, axis=1))
    seen = 0
    for k, check in enumerate(rules.check_after):
        rows = ends == check
        p, m = partial[rows], mapped[rows]
        moved = (m[:, :, None] - m[:, None, :]) - (p[:, :, None] - p[:, None, :])
        assert np.all(moved >= down[k][:, None] - up[k][None, :] - 1e-9)
        assert np.all(moved <= up[k][:, None] - down[k][None, :] + 1e-9)
        seen += np.count_nonzero(np.abs(m - p) > 1e-6)
    assert seen     # the scale moved some


@pytest.mark.parametrize("threshold", [-0.8, 0.7])
def test_binary_maps_keep_the_side_of_another_decision_threshold(threshold):
    model = calibrated(train("binary"), "binary", 0.05, decision_threshold=threshold)
    rules = model.exit_rules
    X, _ = make_problem("binary", 1500, 8)
    mapped = margins(model, X)[:, 0]
    partial = margins(model.copy().set_exit_rules(without_maps(rules)), X)[:, 0]
    exited = model.exit_iterations(X) < rules.iterations
    assert np.count_nonzero(exited & (mapped != partial)) > 10
    assert np.array_equal(mapped > threshold, partial > threshold)


def test_binary_maps_keep_the_side_in_probability():
    # just above the threshold, sigmoid of the next float above 0 is 0.5: the mapped
    # output keeps at least min(partial, threshold + SIDE_MARGIN)
    rules = exits.ExitRules("band", 3, np.array([1]), np.array([0.0]), np.array([0.0]),
                            {"decision_threshold": 0.0},
                            [(np.array([-1.0, 1.0]), np.array([-1e-300, 1e-300]))])
    raw = np.array([[1e-12], [0.5], [-0.5], [-1e-12]])
    exits.map_outputs(rules, raw, np.zeros(4, dtype=np.int64), np.array([-5.0]),
                      np.array([5.0]))
    p = 1 / (1 + np.exp(-raw[:, 0]))
    assert np.array_equal(p > 0.5, [True, True, False, False])
    assert raw[0, 0] == 1e-12 and raw[1, 0] == exits.SIDE_MARGIN


def test_best_exit_within_budget_weighs_the_maps():
    model = train("binary")
    Xv, yv = make_problem("binary", 500, 1)
    w = np.where(Xv[:, 0] > 0, 5.0, 0.2)
    dvalid = cbudget.Dataset(Xv, yv, weight=w)
    pick = model.best_exit_within_budget(dvalid, np.inf, iterations=[30], epsilons=[0.05])
    direct = model.copy()
    direct.calibrate_exits(dvalid, 0.05)
    for a, b in zip(pick.model.exit_rules.outputs, direct.exit_rules.outputs):
        assert (a is None) == (b is None)
        if a is not None:
            np.testing.assert_array_equal(a[0], b[0])
            np.testing.assert_array_equal(a[1], b[1])


@pytest.mark.parametrize("outputs", ["calibrated", "partial"])
def test_best_exit_within_budget_scores_and_keeps_the_outputs_asked(outputs):
    # best_exit_within_budget had no outputs= (it always fitted maps): each pair is now
    # scored with the outputs asked, and the choice is the best pair calibrated by hand
    model = train("binary")
    Xv, yv = make_problem("binary", 500, 1)
    dvalid = cbudget.Dataset(Xv, yv)
    epsilons, ends = [0.0, 0.02, 0.1], [10, 20, 30]
    pick = model.best_exit_within_budget(dvalid, np.inf, metric="logloss", iterations=ends,
                                         epsilons=epsilons, outputs=outputs,
                                         exit_scoring="in_sample")
    assert (pick.model.exit_rules.outputs is None) == (outputs == "partial")
    by_hand = {}
    for end in ends:
        for epsilon in epsilons:
            exited = model[:end]
            exited.calibrate_exits(dvalid, epsilon, outputs=outputs)
            by_hand[end - 1, epsilon] = METRICS["logloss"](yv, exited.predict(Xv), None)
    assert pick.score == pytest.approx(by_hand[pick.iteration, pick.epsilon])
    assert pick.score == pytest.approx(min(by_hand.values()))
    assert pick.score == pytest.approx(METRICS["logloss"](yv, pick.model.predict(Xv), None))


@pytest.mark.parametrize("seed", [1, 4, 7])
def test_regression_maps_keep_the_validation_disagreement_within_epsilon(seed):
    # a map moves a prediction: fitted to the squared error, it took some exits that
    # were within the tolerance of the full prediction out of it (validation disagreement
    # 0.0225-0.03 at epsilon 0.02 on these seeds); a check's map is now kept only where
    # it leaves no more of its exits beyond the tolerance than the partial scores
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(1100, 5))
    y = X[:, 0] + 0.5 * X[:, 4] * (np.abs(X[:, 0]) < 0.5) + 0.5 * rng.normal(size=1100)
    params = {"algorithm": "cegb", "objective": "reg:squarederror", "cost_tradeoff": 1e-3,
              "num_leaves": 7, "learning_rate": 0.3, "n_jobs": 1, "verbosity": 0}
    model = cbudget.train(params, cbudget.Dataset(X[:700], y[:700],
                                                  feature_costs=[1, 1, 1, 1, 50]), 30)
    valid = cbudget.Dataset(X[700:], y[700:])
    epsilon, tolerance = 0.02, 0.05
    rules = model.calibrate_exits(valid, epsilon, tolerance=tolerance, every=3)
    off = np.abs(model.predict(X[700:]) - model.predict(X[700:], early_exit=False)) > tolerance
    assert np.mean(off) <= epsilon
    assert np.mean(off) == pytest.approx(rules.calibration["disagreement"])
    assert any(m is not None for m in rules.outputs)      # maps kept where they agree
