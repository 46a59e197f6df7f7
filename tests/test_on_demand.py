"""On-demand feature acquisition (cbudget.FeatureSource, Model.next_features) with every
model type: the predictions equal eager prediction bit for bit, the pairs fetched are
exactly the acquisitions, none twice, in at most as many rounds as the deepest path."""
import asyncio
import threading
import time

import numpy as np
import pytest
from small_models import ALGORITHMS, small_model_params, takes_expensive_model

import cbudget

N_FEATURES = 8
COSTS = {"feature_costs": [1.0, 1.0, 2.0, 2.0, 4.0, 4.0, 8.0, 8.0], "split_cost": 0.01}
GROUPED = {**COSTS, "cost_groups": {"pair": [4, 5], "trio": [1, 6, 7]},
           "group_costs": {"pair": 3.0, "trio": 1.5}}


def _data(n, seed):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, N_FEATURES))
    margin = X[:, 0] + 0.8 * X[:, 1] * X[:, 2] - 0.6 * X[:, 4] + 0.5 * X[:, 6]
    y = (margin + 0.3 * rng.normal(size=n)) > 0
    X[rng.random(X.shape) < 0.08] = np.nan      # missing values: the default direction
    return X, y.astype(np.float64)


def _train(algorithm, dtrain, f0, rounds=8, **params):
    extra = {"expensive_model": f0} if takes_expensive_model(algorithm) else {}
    return cbudget.train({**small_model_params(algorithm), **params}, dtrain, rounds,
                         verbose_eval=False, **extra)


@pytest.fixture(scope="module", params=["no_groups", "groups"])
def setting(request):
    X, y = _data(500, 0)
    Xv, _ = _data(300, 1)
    dtrain = cbudget.Dataset(X, y, **(GROUPED if request.param == "groups" else COSTS))
    f0 = cbudget.train({"objective": "binary:logistic", "n_jobs": 1, "max_depth": 5}, dtrain,
                       12, verbose_eval=False)
    models = {algorithm: _train(algorithm, dtrain, f0) for algorithm in ALGORITHMS}
    models["cstc_basis"] = _train("cstc", dtrain, f0, basis_trees=6, basis_max_depth=3)
    return models, dtrain, Xv


class Recorder:
    """A fetch reading from a matrix that records every call and fails the test on a
    pair fetched twice."""

    def __init__(self, X, delay=0.0):
        self.X, self.delay = X, delay
        self.calls = []
        self.fetched = np.zeros(X.shape, dtype=bool)
        self.lock = threading.Lock()
        self.in_flight = self.most_in_flight = 0

    def __call__(self, features, rows):
        assert isinstance(features, list) and all(type(m) is int for m in features)
        assert rows.dtype == np.int64
        if self.delay:
            with self.lock:
                self.in_flight += 1
                self.most_in_flight = max(self.most_in_flight, self.in_flight)
            time.sleep(self.delay)
            with self.lock:
                self.in_flight -= 1
        with self.lock:
            block = np.ix_(rows, features)
            assert not self.fetched[block].any(), "a pair fetched twice"
            self.fetched[block] = True
            self.calls.append((list(features), rows.copy()))
        return self.X[block]


def _tree_depth(tree):
    depth = np.zeros(tree.shape[0], dtype=np.int64)
    for node in range(tree.shape[0]):
        if tree["left"][node] != -1:
            depth[tree["left"][node]] = depth[tree["right"][node]] = depth[node] + 1
    return int(depth.max())


def deepest_path(model):
    """The most rounds on-demand prediction may take: the deepest path through the
    model's parts (trees walked together count once; linear nodes one each)."""
    if isinstance(model, cbudget.GatedModel):
        return deepest_path(model.gate) + max(deepest_path(model.predictor),
                                              deepest_path(model.expensive))
    if isinstance(model, (cbudget.LinearClassifier, cbudget.ExternalModel)):
        return 1
    if isinstance(model, cbudget.ClassifierTree):
        def cost(k):
            if model.basis is None:
                return 1
            trees = [model.basis.trees[c] for c in model.node_coordinates(k)]
            return max((_tree_depth(t) for t in trees), default=0)
        return max(sum(cost(j) for j in model.path(k)) for k in range(model.num_nodes()))
    return max((_tree_depth(t) for t in model.trees), default=0)


def _check_source(model, source, recorder, X, iteration_range=None):
    """What every on-demand prediction guarantees."""
    reads = {} if iteration_range is None else {"iteration_range": iteration_range}
    acquired = model.acquisitions(X, **reads)
    np.testing.assert_array_equal(source.acquired, acquired)
    np.testing.assert_array_equal(recorder.fetched, acquired)
    np.testing.assert_allclose(source.cost(), model.predict_cost(X, **reads), rtol=1e-12,
                               atol=1e-12)
    assert source.n_rounds <= deepest_path(model)
    assert len(source.calls) == len(recorder.calls)
    groups = model.cost_model.feature_group
    for r in range(source.n_rounds):
        calls = [c for c in source.calls if c.round == r]
        features = [m for c in calls for m in c.features]
        # an ungrouped feature: one call per round for all the inputs that need it
        ungrouped = [m for m in features if groups[m] < 0]
        assert len(ungrouped) == len(set(ungrouped))
        for c in calls:      # a call is one feature, or members of one cost group
            assert len(c.features) == 1 or len({groups[m] for m in c.features}) == 1
            assert len(c.features) == 1 or groups[c.features[0]] >= 0


@pytest.mark.parametrize("algorithm", ALGORITHMS + ("cstc_basis",))
def test_predictions_equal_eager_and_fetch_exactly_the_acquisitions(setting, algorithm):
    models, _, X = setting
    model = models[algorithm]
    recorder = Recorder(X)
    source = cbudget.FeatureSource(recorder, X.shape[0])
    np.testing.assert_array_equal(model.predict(source), model.predict(X))
    assert 0 < recorder.fetched.sum() < X.size or algorithm == "cegb"
    _check_source(model, source, recorder, X)
    # the other prediction methods on the same source fetch nothing more
    n_calls = len(recorder.calls)
    np.testing.assert_array_equal(model.predict_cost(source), model.predict_cost(X))
    np.testing.assert_array_equal(model.acquisitions(source), model.acquisitions(X))
    if isinstance(model, cbudget.Forest):
        np.testing.assert_array_equal(model.predict_proba(source), model.predict_proba(X))
    if isinstance(model, (cbudget.Booster, cbudget.Forest)):
        np.testing.assert_array_equal(model.predict(source, pred_leaf=True),
                                      model.predict(X, pred_leaf=True))
        np.testing.assert_array_equal(model.cost_curve(source), model.cost_curve(X))
    if isinstance(model, cbudget.ClassifierTree):
        np.testing.assert_array_equal(model.predict(source, pred_exit=True),
                                      model.predict(X, pred_exit=True))
    if isinstance(model, cbudget.GatedModel):
        for got, want in zip(model.predict(source, return_route=True, output_margin=True),
                             model.predict(X, return_route=True, output_margin=True)):
            np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(model.route(source), model.route(X))
    assert len(recorder.calls) == n_calls


@pytest.mark.parametrize("algorithm", ALGORITHMS + ("cstc_basis",))
def test_one_input_at_a_time_equals_eager(setting, algorithm):
    # the serving case: a source of one input, whose requests take the path where every
    # input needs every feature asked (FeatureSource.request), each step
    models, _, X = setting
    model = models[algorithm]
    acquisitions = model.acquisitions(X[:12])
    for i in range(12):
        recorder = Recorder(X[i:i + 1])
        source = cbudget.FeatureSource(recorder, 1)
        np.testing.assert_array_equal(model.predict(source), model.predict(X[i:i + 1]))
        np.testing.assert_array_equal(recorder.fetched[0], acquisitions[i])
        np.testing.assert_allclose(source.cost(), model.predict_cost(X[i:i + 1]))


def test_request_registers_each_unknown_pair_once(setting):
    models, _, X = setting
    source = cbudget.FeatureSource(Recorder(X), 3, known={1: X[:3, 1]})
    source.bind(models["gbdt"].feature_names, models["gbdt"].cost_model)
    rows = np.arange(3, dtype=np.int64)
    source.request(rows[:2], [0, 1, 2])            # every row needs 0 and 2; 1 is known
    source.request(rows, [0, 2, 3])                # row 2 alone needs 0 and 2
    pending = sorted((m, tuple(r)) for features, r in source._pending
                     for m in features.tolist())
    assert pending == [(0, (0, 1)), (0, (2,)), (2, (0, 1)), (2, (2,)), (3, (0, 1, 2))]


@pytest.mark.parametrize("algorithm", ("gbdt", "budget_rf"))
def test_iteration_range_fetches_only_for_those_iterations(setting, algorithm):
    models, _, X = setting
    model = models[algorithm]
    recorder = Recorder(X)
    source = cbudget.FeatureSource(recorder, X.shape[0])
    np.testing.assert_array_equal(model.predict(source, iteration_range=(1, 3)),
                                  model.predict(X, iteration_range=(1, 3)))
    _check_source(model, source, recorder, X, iteration_range=(1, 3))
    # the rest of the model later: only the pairs still missing are fetched
    np.testing.assert_array_equal(model.predict(source), model.predict(X))
    np.testing.assert_array_equal(recorder.fetched, model.acquisitions(X))


def test_known_features_are_free_and_never_fetched(setting):
    models, _, X = setting
    model = models["greedy_miser"]
    known = {0: X[:, 0], "f2": X[:, 2]}
    recorder = Recorder(X)
    source = cbudget.FeatureSource(recorder, X.shape[0], known=known)
    np.testing.assert_array_equal(model.predict(source), model.predict(X))
    acquired = model.acquisitions(X)
    assert not recorder.fetched[:, [0, 2]].any()
    np.testing.assert_array_equal(source.acquired, acquired & ~np.isin(np.arange(8), [0, 2]))
    np.testing.assert_allclose(source.cost(), model.cost_model.acquisition_costs(
        source.acquired) + model.cost_parts(X).other)
    assert np.all(source.cost() <= model.predict_cost(X) + 1e-12)


def test_a_gated_model_fetches_its_parts_only_for_the_inputs_routed_there(setting):
    models, _, X = setting
    model = models["adapt_gbrt"]
    recorder = Recorder(X)
    source = cbudget.FeatureSource(recorder, X.shape[0])
    _, route = model.predict(source, return_route=True)
    gate = model.gate.acquisitions(X)
    for z, part in ((1, model.predictor), (0, model.expensive)):
        rows = route == z
        np.testing.assert_array_equal(recorder.fetched[rows],
                                      gate[rows] | part.acquisitions(X[rows]))


class OnlySome:
    """An external classifier that reads features 0 and 2 (NaN elsewhere is fine)."""

    def predict_proba(self, X):
        assert not np.isnan(X[:, [0, 2]][~np.isnan(X[:, [0, 2]])]).any()
        p = 1 / (1 + np.exp(-(np.nan_to_num(X[:, 0]) - np.nan_to_num(X[:, 2]))))
        return np.column_stack([1 - p, p])


@pytest.mark.parametrize("features", [[0, 2], "all"])
def test_an_external_expensive_model_gets_its_declared_features(setting, features):
    models, dtrain, X = setting
    f0 = cbudget.ExternalModel(OnlySome(), features=features)
    model = _train("adapt_gbrt", dtrain, f0, rounds=4)
    recorder = Recorder(X)
    source = cbudget.FeatureSource(recorder, X.shape[0])
    proba, route = model.predict(source, return_route=True)
    np.testing.assert_array_equal(proba, model.predict(X))
    _check_source(model, source, recorder, X)
    sent = route == 0
    assert sent.any()
    declared = np.arange(N_FEATURES) if features == "all" else np.array(features)
    assert recorder.fetched[np.ix_(sent, declared)].all()


def test_an_external_expensive_model_with_a_declared_cost_does_not_apply(setting):
    models, dtrain, X = setting
    model = _train("adapt_gbrt", dtrain, cbudget.ExternalModel(OnlySome(), cost=5.0), rounds=4)
    source = cbudget.FeatureSource(Recorder(X), X.shape[0])
    with pytest.raises(cbudget.NotApplicableError, match="does not apply.*features="):
        model.predict(source)


def test_concurrent_fetches_give_the_same_predictions(setting):
    # the calls of a round overlap with max_workers > 1 (counted, not timed: the speed-up
    # is measured in benchmarks/bench_on_demand.py)
    models, _, X = setting
    model = models["gbdt"]
    results = {}
    for workers in (1, 8):
        recorder = Recorder(X, delay=0.01)
        source = cbudget.FeatureSource(recorder, X.shape[0], max_workers=workers)
        results[workers] = (model.predict(source), recorder, source)
    np.testing.assert_array_equal(results[1][0], results[8][0])
    assert results[1][2].n_rounds == results[8][2].n_rounds
    n_calls = len(results[1][2].calls)
    assert n_calls > 2 * results[1][2].n_rounds     # rounds with several calls
    assert results[1][1].most_in_flight == 1
    assert results[8][1].most_in_flight > 1


class Outage:
    """A fetch over a recorder that raises ConnectionError for the model's last used
    feature while ``on``."""

    def __init__(self, model, X, on):
        self.recorder = Recorder(X)
        self.broken = model.used_features()[-1]
        self.on = on

    def __call__(self, features, rows):
        if self.on and self.broken in features:
            raise ConnectionError("service down")
        return self.recorder(features, rows)


def test_an_exception_in_fetch_propagates_and_the_source_stays_usable(setting):
    models, _, X = setting
    model = models["gbdt"]
    fetch = Outage(model, X, on=True)
    recorder, broken = fetch.recorder, fetch.broken
    source = cbudget.FeatureSource(fetch, X.shape[0])
    with pytest.raises(ConnectionError, match="service down") as info:
        model.predict(source)
    note = " ".join(getattr(info.value, "__notes__", []))
    assert "feature(s) [" in note and str(broken) in note and "rows" in note
    fetch.on = False
    np.testing.assert_array_equal(model.predict(source), model.predict(X))
    np.testing.assert_array_equal(recorder.fetched, model.acquisitions(X))


class ReusedBuffer:
    """A fetch that writes every answer into one preallocated buffer and returns a view
    of it (as fetches over preallocated arrays or database cursors do): the next call
    overwrites what the previous one returned."""

    def __init__(self, X):
        self.X = X
        self.buffer = np.empty(X.shape)
        self.n_calls = 0

    def __call__(self, features, rows):
        self.n_calls += 1
        out = self.buffer[:len(rows), :len(features)]
        out[:] = self.X[np.ix_(rows, features)]
        return out


@pytest.mark.parametrize("algorithm", ALGORITHMS + ("cstc_basis",))
def test_a_fetch_reusing_its_buffer_gives_the_eager_predictions(setting, algorithm):
    # issue 42, item 3: the source kept views, so a round's later calls overwrote its
    # earlier ones (the issue saw 4,871 of 5,000 gbdt predictions wrong)
    models, _, X = setting
    model = models[algorithm]
    fetch = ReusedBuffer(X)
    source = cbudget.FeatureSource(fetch, X.shape[0])
    np.testing.assert_array_equal(model.predict(source), model.predict(X))
    np.testing.assert_array_equal(source.acquired, model.acquisitions(X))
    np.testing.assert_allclose(source.cost(), model.predict_cost(X), rtol=1e-12, atol=1e-12)
    # the values kept are the source's own: overwriting the buffer changes nothing
    fetch.buffer[:] = np.nan
    np.testing.assert_array_equal(model.predict(source), model.predict(X))


def test_a_failed_prediction_is_not_reported_as_one(setting):
    # a fetch that fails part-way through a prediction: the error says which call, and
    # the source's cost() does not report the partial (or an earlier) prediction's cost
    models, _, X = setting
    model = models["gbdt"]
    fetch = Outage(model, X, on=False)
    broken = fetch.broken
    source = cbudget.FeatureSource(fetch, X.shape[0])
    model.predict(source, iteration_range=(0, 1))
    assert source.cost().shape == (X.shape[0],)
    fetch.on = True
    with pytest.raises(ConnectionError, match="service down") as info:
        model.predict(source)
    assert any("fetch failed for feature(s)" in note for note in info.value.__notes__)
    assert not source.acquired[:, broken].all()
    with pytest.raises(ValueError, match="did not complete"):
        source.cost()
    fetch.on = False
    np.testing.assert_array_equal(model.predict(source), model.predict(X))
    np.testing.assert_allclose(source.cost(), model.predict_cost(X), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("bad, message", [
    (lambda f, r: np.zeros((len(r), len(f) + 1)), "returned shape"),
    (lambda f, r: np.zeros(len(r)), "returned shape"),
    (lambda f, r: np.full((len(r), len(f)), "x"), "dtype"),
    (lambda f, r: [[object()] * len(f)] * len(r), "dtype"),
])
def test_bad_returns_from_fetch_are_clear_errors(setting, bad, message):
    models, _, X = setting
    model = models["budget_rf"]
    recorder = Recorder(X)
    calls = {"n": 0}

    def fetch(features, rows):
        calls["n"] += 1
        return bad(features, rows) if calls["n"] == 2 else recorder(features, rows)

    source = cbudget.FeatureSource(fetch, X.shape[0])
    with pytest.raises(ValueError, match=message):
        model.predict(source)
    np.testing.assert_array_equal(model.predict(source), model.predict(X))


@pytest.mark.parametrize("algorithm", ALGORITHMS + ("cstc_basis",))
def test_next_features_asks_one_input_step_by_step(setting, algorithm):
    models, _, X = setting
    model = models[algorithm]
    for i in range(0, X.shape[0], 37):
        answers, asked = {}, set()
        while ask := model.next_features(answers):
            assert not asked & set(ask)
            asked |= set(ask)
            answers.update({m: X[i, m] for m in ask})
        row = np.full((1, N_FEATURES), np.nan)
        for m, value in answers.items():
            row[0, m] = value
        np.testing.assert_array_equal(model.predict(row), model.predict(X[i:i + 1]))
        assert asked == set(np.flatnonzero(model.acquisitions(X[i:i + 1])[0]))


def test_next_features_takes_names(setting):
    models, _, X = setting
    model = models["gbdt"]
    first = model.next_features({})
    assert first == [model.trees[0]["feature"][0]] or len(first) > 1
    by_name = model.next_features({model.feature_names[m]: X[0, m] for m in first})
    by_index = model.next_features({m: X[0, m] for m in first})
    # asked by name, answered by name (issue 47); by index, by index
    assert by_name == [model.feature_names[m] for m in by_index]
    assert model.next_features({model.feature_names[m]: X[0, m] for m in first},
                               names=False) == by_index
    assert model.next_features({}, names=True) == [model.feature_names[m] for m in first]
    with pytest.raises(ValueError, match="unknown feature name"):
        model.next_features({"nope": 1.0})
    with pytest.raises(TypeError, match="mapping"):
        model.next_features([1.0, 2.0])


def test_feature_source_checks_its_arguments(setting):
    models, _, X = setting
    model = models["gbdt"]
    with pytest.raises(TypeError, match="callable"):
        cbudget.FeatureSource(None, 3)
    with pytest.raises(ValueError, match="n_samples"):
        cbudget.FeatureSource(Recorder(X), 0)
    with pytest.raises(ValueError, match="max_workers"):
        cbudget.FeatureSource(Recorder(X), 3, max_workers=0)
    with pytest.raises(ValueError, match="not been used"):
        cbudget.FeatureSource(Recorder(X), 3).cost()
    with pytest.raises(ValueError, match=r"known\['f0'\] must have shape"):
        model.predict(cbudget.FeatureSource(Recorder(X), X.shape[0], known={0: X[:5, 0]}))
    source = cbudget.FeatureSource(Recorder(X[:, :3]), X.shape[0])
    other = cbudget.train({"objective": "binary:logistic", "n_jobs": 1},
                          cbudget.Dataset(X[:, :3], X[:, 0] > 0), 2, verbose_eval=False)
    other.predict(source)
    with pytest.raises(ValueError, match="other features"):
        model.predict(source)


def test_known_features_from_a_dataframe(setting):
    pd = pytest.importorskip("pandas")
    models, _, X = setting
    model = models["cegb"]
    known = pd.DataFrame({"f1": X[:, 1], "f4": X[:, 4]})
    recorder = Recorder(X)
    source = cbudget.FeatureSource(recorder, X.shape[0], known=known)
    np.testing.assert_array_equal(model.predict(source), model.predict(X))
    assert not recorder.fetched[:, [1, 4]].any()
    np.testing.assert_array_equal(source.values[:, [1, 4]], X[:, [1, 4]])


class AsyncRecorder(Recorder):
    """The Recorder as an ``async def`` fetch that sleeps; logs each call's start/end."""

    def __init__(self, X, delay=0.0):
        super().__init__(X)
        self.async_delay, self.spans = delay, []

    async def fetch(self, features, rows):
        start = time.perf_counter()
        await asyncio.sleep(self.async_delay)
        self.spans.append((start, time.perf_counter()))
        return self(features, rows)


@pytest.mark.parametrize("algorithm", ALGORITHMS + ("cstc_basis",))
def test_async_fetch_gives_the_sync_predictions_calls_and_logs(setting, algorithm):
    models, _, X = setting
    model = models[algorithm]
    sync_recorder, recorder = Recorder(X), AsyncRecorder(X)
    sync_source = cbudget.FeatureSource(sync_recorder, X.shape[0])
    source = cbudget.FeatureSource(recorder.fetch, X.shape[0])
    np.testing.assert_array_equal(asyncio.run(model.apredict(source)), model.predict(sync_source))
    assert [(f, r.tolist()) for f, r in recorder.calls] == \
        [(f, r.tolist()) for f, r in sync_recorder.calls]
    assert source.n_rounds == sync_source.n_rounds
    np.testing.assert_array_equal(source.cost(), sync_source.cost())
    np.testing.assert_array_equal(asyncio.run(model.apredict_cost(source)), model.predict_cost(X))
    np.testing.assert_array_equal(asyncio.run(model.aacquisitions(source)), model.acquisitions(X))
    if isinstance(model, cbudget.Forest):
        np.testing.assert_array_equal(asyncio.run(model.apredict_proba(source)),
                                      model.predict_proba(X))


def test_async_calls_of_a_round_overlap(setting):
    models, _, X = setting
    recorder = AsyncRecorder(X, delay=0.05)
    source = cbudget.FeatureSource(recorder.fetch, X.shape[0])
    asyncio.run(models["gbdt"].apredict(source))
    by_round = {}
    for call, span in zip(source.calls, sorted(recorder.spans, key=lambda s: s[0])):
        by_round.setdefault(call.round, []).append(span)
    widest = max(by_round.values(), key=len)
    assert len(widest) > 1
    # every call of the round started before the first of them ended
    assert max(s for s, _ in widest) < min(e for _, e in widest)


def test_a_sync_fetch_in_the_async_path_and_an_async_fetch_in_the_sync_path(setting):
    models, _, X = setting
    model = models["gbdt"]
    source = cbudget.FeatureSource(Recorder(X), X.shape[0])
    np.testing.assert_array_equal(asyncio.run(model.apredict(source)), model.predict(X))
    with pytest.raises(TypeError, match="asynchronous"):
        model.predict(cbudget.FeatureSource(AsyncRecorder(X).fetch, X.shape[0]))


@pytest.mark.parametrize("algorithm", ALGORITHMS + ("cstc_basis",))
def test_merged_calls_give_the_same_predictions_in_one_call_per_set_of_rows(setting,
                                                                            algorithm):
    models, _, X = setting
    model = models[algorithm]
    recorder = Recorder(X)
    source = cbudget.FeatureSource(recorder, X.shape[0], merge_calls=True)
    np.testing.assert_array_equal(model.predict(source), model.predict(X))
    np.testing.assert_array_equal(recorder.fetched, model.acquisitions(X))
    np.testing.assert_allclose(source.cost(), model.predict_cost(X), rtol=1e-12, atol=1e-12)
    unmerged = cbudget.FeatureSource(Recorder(X), X.shape[0])
    model.predict(unmerged)
    assert source.n_rounds == unmerged.n_rounds
    assert len(source.calls) <= len(unmerged.calls)
    rows_of_rounds = [(logged.round, rows.tobytes())       # one call at a time: same order
                      for logged, (_, rows) in zip(source.calls, recorder.calls)]
    assert len(rows_of_rounds) == len(set(rows_of_rounds)), \
        "two calls of a round for the same inputs"
    # one input: one call per round; a known feature is never fetched
    for i in range(5):
        recorder = Recorder(X[i:i + 1])
        single = cbudget.FeatureSource(recorder, 1, merge_calls=True, known={1: X[i:i + 1, 1]})
        np.testing.assert_array_equal(model.predict(single), model.predict(X[i:i + 1]))
        assert len(single.calls) == single.n_rounds
        want = model.acquisitions(X[i:i + 1])[0]
        want[1] = False
        np.testing.assert_array_equal(recorder.fetched[0], want)
