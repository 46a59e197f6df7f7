"""Exit rules that hold an input once it has bought a dear feature (``hold``,
:attr:`cbudget.ExitRules.hold`): the prediction kernel against a pure-Python walk, the
calibration (held inputs never leave; epsilon spent on the others; epsilon 0 certified),
on-demand prediction, files (format 1.9, hostile ``hold``), the option's forms and
errors, and the cost path's cascades (held by their dear stage's features)."""
import json
import math

import numpy as np
import pytest
from reference_predict import tree_walk

import cbudget
from cbudget._core._predict import path_holds, predict_raw_exits, trees_until_held
from cbudget.cost_path import dear_stage_features, find_lambda_max
from cbudget.model_io import model_from_dict

COSTS = [1.0, 1.0, 2.0, 2.0, 200.0, 500.0]
DEAR = 4          # the test every borderline input needs
NAMES = ["c0", "c1", "c2", "c3", "test", "extra"]


def make_data(n, seed, n_classes=2):
    """Cheap features 0-3 decide most inputs; feature 4 (cost 200) the borderline third
    (whose cheap features carry no signal); feature 5 adds little."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, n_classes, n)
    hard = rng.random(n) < 0.35
    level = y - (n_classes - 1) / 2
    X = np.column_stack([1.5 * level[:, None] * ~hard[:, None] + rng.normal(size=(n, 2)),
                         rng.normal(size=(n, 2)),
                         1.5 * level + rng.normal(size=n),
                         0.2 * level + rng.normal(size=n)])
    return X, y.astype(float)


@pytest.fixture(scope="module", params=[2, 3], ids=["binary", "multiclass"])
def cascade(request):
    """A two-stage cegb cascade (cheap stage, then the test) and its validation data."""
    k = request.param
    X, y = make_data(900, 0, k)
    Xv, yv = make_data(600, 1, k)
    Xt, _ = make_data(400, 2, k)
    objective = {"objective": "binary:logistic"} if k == 2 else \
        {"objective": "multi:softprob", "num_class": k}
    dtrain = cbudget.Dataset(X, y, feature_costs=COSTS, feature_names=NAMES)
    dvalid = cbudget.Dataset(Xv, yv, reference=dtrain)
    params = {"algorithm": "cegb", **objective, "num_leaves": 6, "min_data_in_leaf": 10,
              "learning_rate": 0.3, "n_jobs": 2, "verbosity": 0}
    top = find_lambda_max(params, dtrain)
    model = cbudget.train({**params, "cost_stages": [[10, 0.1 * top], [15, 0.003 * top]]},
                          dtrain, 25)
    assert DEAR not in model.used_features((0, 10)) and DEAR in model.used_features()
    return {"model": model, "dvalid": dvalid, "Xv": Xv, "Xt": Xt}


def calibrated(cascade, epsilon, **options):
    model = cascade["model"].copy()
    model.calibrate_exits(cascade["dvalid"], epsilon, every=2, **options)
    return model


def reference_exits(model, X):
    """(raw scores at the exit, trees evaluated) by walking the saved JSON trees: the
    kernel's rule literally, a held input (one whose paths so far split on a feature of
    ``hold``) not leaving."""
    doc = json.loads(json.dumps(model.to_dict()))
    rules = model.exit_rules
    hold = set(rules.hold.tolist()) if rules.hold is not None else set()
    indptr = model.iteration_indptr
    checks = {indptr[c]: k for k, c in enumerate(rules.check_after.tolist())}
    n_trees = indptr[rules.iterations]
    raw = np.tile(np.asarray(doc["base_score"]), (X.shape[0], 1))
    trees = np.full(X.shape[0], n_trees)
    for i, x in enumerate(X):
        held = False
        for t, tree in enumerate(doc["trees"][:n_trees]):
            path = tree_walk(tree, x)
            raw[i, tree["output"]] += tree["leaf_values"][path[-1]]
            held |= any(tree["split_features"][node] in hold for node in path[:-1])
            k = checks.get(t + 1)
            if k is not None and not held and rules.exits(raw[i:i + 1], k)[0]:
                trees[i] = t + 1
                break
    return raw, trees


def test_hold_by_cost_names_or_indices_resolves_to_the_same_features(cascade):
    by_cost = calibrated(cascade, 0.05, hold=150).exit_rules
    assert by_cost.hold.tolist() == [4, 5]
    assert calibrated(cascade, 0.05, hold=["extra", "test"]).exit_rules.hold.tolist() == [4, 5]
    assert calibrated(cascade, 0.05, hold=[DEAR]).exit_rules.hold.tolist() == [DEAR]
    # no feature that dear: no hold at all
    assert calibrated(cascade, 0.05, hold=1000.0).exit_rules.hold is None
    assert calibrated(cascade, 0.05).exit_rules.hold is None


@pytest.mark.parametrize("hold, error", [
    (-1.0, ValueError), (math.nan, ValueError), ("test", TypeError), (["nope"], ValueError),
    ([99], ValueError), (True, TypeError), ({"test": 1}, TypeError)])
def test_bad_hold_is_refused(cascade, hold, error):
    with pytest.raises(error, match="hold"):
        calibrated(cascade, 0.05, hold=hold)


@pytest.mark.parametrize("epsilon", [0.0, 0.05])
def test_kernel_matches_the_reference_walk(cascade, epsilon):
    model = calibrated(cascade, epsilon, hold=[DEAR])
    X = cascade["Xt"][:150]
    raw, trees = reference_exits(model, X)
    unmapped = model.copy()
    unmapped.exit_rules = model.exit_rules.__class__(
        **{**model.exit_rules.__dict__, "outputs": None})
    np.testing.assert_allclose(unmapped.predict(X, output_margin=True).reshape(raw.shape),
                               raw, rtol=0, atol=1e-10)
    iterations = np.searchsorted(model.iteration_indptr, trees)
    np.testing.assert_array_equal(model.exit_iterations(X), iterations)


def test_path_holds_and_trees_until_held_match_a_walk(cascade):
    model = cascade["model"]
    offsets, nodes = model.packed_trees((0, 0))
    feature_held = np.zeros(len(COSTS), dtype=np.uint8)
    feature_held[DEAR] = 1
    flags = np.empty(nodes.shape[0], dtype=np.uint8)
    path_holds(nodes, offsets, feature_held, flags)
    X = np.ascontiguousarray(cascade["Xt"][:100])
    until = np.empty(X.shape[0], dtype=np.int64)
    trees_until_held(X, nodes, offsets, flags, until, 2)
    doc = model.to_dict()
    n_trees = len(doc["trees"])
    for i, x in enumerate(X):
        expected = n_trees + 1
        for t, tree in enumerate(doc["trees"]):
            path = tree_walk(tree, x)
            reads = any(tree["split_features"][node] == DEAR for node in path[:-1])
            assert flags[offsets[t] + path[-1]] == reads
            if reads:
                expected = t + 1
                break
        assert until[i] == expected


def test_kernel_rejects_mismatched_flags(cascade):
    model = cascade["model"]
    offsets, nodes = model.packed_trees((0, 0))
    X = np.ascontiguousarray(cascade["Xt"][:5])
    raw, trees = np.zeros((5, model.n_outputs)), np.empty(5, dtype=np.int64)
    outputs = np.asarray(model.tree_outputs, dtype=np.int32)
    args = (X, nodes, offsets, outputs, np.array([2], dtype=np.int64), np.array([-1.0]),
            np.array([1.0]), model.n_outputs > 1, raw, trees, 1)
    with pytest.raises(ValueError, match="leaf_holds"):
        predict_raw_exits(*args, np.zeros(3, dtype=np.uint8))
    with pytest.raises(ValueError, match="feature_held"):
        path_holds(nodes, offsets, np.zeros(2, dtype=np.uint8),
                   np.empty(nodes.shape[0], dtype=np.uint8))


@pytest.mark.parametrize("epsilon", [0.0, 0.02, 0.1])
def test_held_inputs_never_exit_and_epsilon_goes_to_the_others(cascade, epsilon):
    model = calibrated(cascade, epsilon, hold=[DEAR])
    Xv, rules = cascade["Xv"], model.exit_rules
    offsets, nodes = model.packed_trees((0, 0))
    feature_held = np.zeros(len(COSTS), dtype=np.uint8)
    feature_held[DEAR] = 1
    flags = np.empty(nodes.shape[0], dtype=np.uint8)
    path_holds(nodes, offsets, feature_held, flags)
    until = np.empty(Xv.shape[0], dtype=np.int64)
    trees_until_held(np.ascontiguousarray(Xv), nodes, offsets, flags, until, 1)
    trees = np.asarray(model.iteration_indptr)[model.exit_iterations(Xv)]
    n_trees = model.iteration_indptr[-1]
    exited = trees < n_trees
    # an input leaves only at a check before the tree that first reads the test
    assert np.all(trees[exited] < until[exited])
    # the held ones do read it: they pay for the test and keep what it adds
    assert not exited[until <= n_trees].all()
    full = model.predict(Xv, early_exit=False)
    exits = model.predict(Xv)
    decide = (lambda p: p > 0.5) if full.ndim == 1 else (lambda p: p.argmax(axis=1))
    disagree = np.mean(decide(full) != decide(exits))
    assert disagree <= epsilon + 1e-12
    assert disagree == pytest.approx(rules.calibration["disagreement"])
    if epsilon == 0.0:   # certified: no class changes on any input
        Xt = cascade["Xt"]
        np.testing.assert_array_equal(decide(model.predict(Xt)),
                                      decide(model.predict(Xt, early_exit=False)))


def test_on_demand_fetches_exactly_the_acquisitions_with_hold(cascade):
    model = calibrated(cascade, 0.05, hold=[DEAR])
    X = cascade["Xt"]
    source = cbudget.FeatureSource(lambda features, rows: X[np.ix_(rows, features)],
                                   X.shape[0])
    np.testing.assert_array_equal(model.predict(source), model.predict(X))
    np.testing.assert_array_equal(source.acquired, model.acquisitions(X))
    np.testing.assert_allclose(source.cost(), model.predict_cost(X), rtol=1e-12)


def test_file_round_trip_keeps_the_hold(cascade, tmp_path):
    model = calibrated(cascade, 0.05, hold=[DEAR])
    path = tmp_path / "held.json"
    model.save_model(path)
    doc = json.loads(path.read_text())
    assert doc["format_version"] >= [1, 9]
    assert doc["exit_rules"]["hold"] == [DEAR]
    loaded = cbudget.load_model(path)
    assert loaded.exit_rules.hold.tolist() == [DEAR]
    X = cascade["Xt"]
    np.testing.assert_array_equal(loaded.predict(X), model.predict(X))
    np.testing.assert_array_equal(loaded.predict_cost(X), model.predict_cost(X))
    assert "held by 1 feature" in repr(loaded.exit_rules)


@pytest.mark.parametrize("hold", [[-1], [4, 4], [5, 4], [6], ["4"], [True], 4, [2**40],
                                  [4.0]])
def test_hostile_hold_in_a_file_is_refused(cascade, hold):
    doc = calibrated(cascade, 0.05, hold=[DEAR]).to_dict()
    doc["exit_rules"]["hold"] = hold
    with pytest.raises(ValueError, match="hold"):
        model_from_dict(doc)


def test_rules_held_by_a_feature_the_model_lacks_are_refused(cascade):
    model = cascade["model"].copy()
    rules = calibrated(cascade, 0.05, hold=[DEAR]).exit_rules
    rules.hold = np.array([len(COSTS)])
    with pytest.raises(ValueError, match="hold"):
        model.exit_rules = rules


def test_cost_path_cascades_hold_their_dear_stage(cascade):
    model = cascade["model"]
    assert dear_stage_features(model, 10).tolist() == [DEAR] + \
        ([5] if 5 in model.used_features() else [])
    for end in (2, 5, 10, 20):      # the definition, literally
        first = set(model.used_features((0, end)).tolist())
        later = set(model.used_features((end, 0)).tolist()) - first
        cheap_end = max((COSTS[m] for m in first), default=0.0)
        assert dear_stage_features(model, end).tolist() == \
            sorted(m for m in later if COSTS[m] > cheap_end)


def test_cost_path_cascade_exits_are_held():
    X, y = make_data(800, 3)
    Xv, yv = make_data(500, 4)
    dtrain = cbudget.Dataset(X, y, feature_costs=COSTS, feature_names=NAMES)
    dvalid = cbudget.Dataset(Xv, yv, reference=dtrain)
    path = cbudget.cost_path({"algorithm": "cegb", "objective": "binary:logistic",
                              "num_leaves": 6, "min_data_in_leaf": 10, "n_jobs": 2,
                              "verbosity": 0}, dtrain, dvalid, n_points=5,
                             num_boost_round=20, cascades=1)
    cascades = [(model, stages) for model, stages, eps in
                zip(path.models, path.stages, path.epsilons)
                if stages is not None and not np.isnan(eps)]
    assert cascades
    for model, stages in cascades:
        expected = dear_stage_features(model, stages[0][0])
        hold = model.exit_rules.hold
        assert (hold.tolist() if hold is not None else []) == expected.tolist()
