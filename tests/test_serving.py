"""cbudget.serving.Predictor: concurrent requests batched into shared fetches, with every
model type; batching never changes a prediction or a cost."""
import asyncio
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
from small_models import ALGORITHMS
from test_on_demand import GROUPED, _data, _train

import cbudget
from cbudget.serving import Predictor

N_REQUESTS = 40


@pytest.fixture(scope="module")
def models():
    X, y = _data(400, 0)
    Xv, _ = _data(N_REQUESTS, 1)
    dtrain = cbudget.Dataset(X, y, **GROUPED)
    f0 = cbudget.train({"objective": "binary:logistic", "n_jobs": 1, "max_depth": 5}, dtrain,
                       12, verbose_eval=False)
    return {algorithm: _train(algorithm, dtrain, f0) for algorithm in ALGORITHMS}, Xv


class Store:
    """Rows of X by key ("id-<row>"), read by features and keys; records the calls."""

    def __init__(self, X, delay=0.0):
        self.X, self.delay = X, delay
        self.calls = []
        self.lock = threading.Lock()

    def rows(self, keys):
        return [int(key.split("-")[1]) for key in keys]

    def __call__(self, features, keys):
        if self.delay:
            time.sleep(self.delay)
        with self.lock:
            self.calls.append((list(features), list(keys)))
        return self.X[np.ix_(self.rows(keys), features)]


class AsyncStore(Store):
    async def __call__(self, features, keys):
        await asyncio.sleep(self.delay)
        with self.lock:
            self.calls.append((list(features), list(keys)))
        return self.X[np.ix_(self.rows(keys), features)]


def _serve(predictor, keys, known=None):
    async def main():
        async with predictor:
            return await asyncio.gather(*(predictor.predict_one(
                key, None if known is None else known(key)) for key in keys))
    return asyncio.run(main())


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_batched_requests_equal_eager_prediction_and_cost(models, algorithm):
    built, X = models
    model = built[algorithm]
    keys = [f"id-{i}" for i in range(len(X))]
    store = AsyncStore(X)
    results = _serve(Predictor(model, store, max_wait_ms=20), keys)
    np.testing.assert_array_equal([r.value for r in results], model.predict(X))
    np.testing.assert_allclose([r.cost for r in results], model.predict_cost(X), rtol=1e-12,
                               atol=1e-12)
    acquisitions = model.acquisitions(X)
    names = model.feature_names
    for i, r in enumerate(results):
        assert r.key == keys[i] and not r.degraded and not r.missing
        assert r.fetched == tuple(names[m] for m in np.flatnonzero(acquisitions[i]))
    # the requests shared calls: fewer calls than one per request and round
    assert max(r.batch_size for r in results) > 1
    batches = {(r.batch_size, r.rounds, r.calls) for r in results}
    assert sum(calls for _, _, calls in batches) >= len(store.calls)
    if len(store.calls):
        assert len(store.calls) < sum(r.rounds for r in results)
    # and each request alone gives the same
    alone = [_serve(Predictor(model, Store(X), max_wait_ms=0), [key])[0] for key in keys[:3]]
    assert [r.value for r in alone] == [r.value for r in results[:3]]
    assert all(r.batch_size == 1 for r in alone)


def test_max_batch_and_a_sync_fetch(models):
    built, X = models
    model = built["cegb"]
    store = Store(X)
    predictor = Predictor(model, store, max_batch=8, max_wait_ms=50)
    results = _serve(predictor, [f"id-{i}" for i in range(len(X))])
    assert max(r.batch_size for r in results) == 8
    assert predictor.stats.batches == len(X) // 8 and predictor.stats.requests == len(X)
    np.testing.assert_array_equal([r.value for r in results], model.predict(X))
    # the concurrent batches' calls for the same features were merged: fewer calls of
    # fetch than the batches asked for, each key once per call
    asked = sum(r.calls for r in results[::8])       # the batches are requests 8k..8k+7
    assert len(store.calls) == predictor.stats.calls < asked
    assert all(len(keys) == len(set(keys)) for _, keys in store.calls)


def test_a_lone_request_waits_for_others_only_once(models):
    # it waits max_wait_ms for others to form a batch; then its fetch calls start at
    # once in each round (no other running batch could join them)
    built, X = models
    predictor = Predictor(built["gbdt"], AsyncStore(X), max_wait_ms=150)
    start = time.perf_counter()
    result = _serve(predictor, ["id-3"])[0]
    elapsed = time.perf_counter() - start
    assert result.rounds >= 2 and elapsed < 0.15 * (1 + result.rounds) - 0.1
    assert result.batch_size == 1 and result.value == built["gbdt"].predict(X[3:4])[0]


def test_known_features_per_request(models):
    # in one batch, some requests know feature 0 and others do not: it is fetched only
    # for those that do not, and every prediction equals eager
    built, X = models
    model = built["gbdt"]
    store = AsyncStore(X)
    keys = [f"id-{i}" for i in range(len(X))]
    results = _serve(Predictor(model, store, max_wait_ms=20), keys,
                     known=lambda key: {"f0": X[int(key[3:]), 0]} if int(key[3:]) % 2
                     else None)
    np.testing.assert_array_equal([r.value for r in results], model.predict(X))
    for features, call_keys in store.calls:
        if 0 in features:
            assert all(int(key[3:]) % 2 == 0 for key in call_keys)
    assert all("f0" not in r.fetched for r in results[1::2])


def test_predict_proba_output_and_checks(models):
    built, X = models
    model = built["budget_rf"]
    results = _serve(Predictor(model, Store(X), output="predict_proba"), ["id-0", "id-1"])
    np.testing.assert_array_equal(np.array([r.value for r in results]),
                                  model.predict_proba(X[:2]))
    with pytest.raises(ValueError, match="no predict_proba"):
        Predictor(built["cegb"], Store(X), output="predict_proba")
    with pytest.raises(ValueError, match="output must be"):
        Predictor(model, Store(X), output="raw")
    with pytest.raises(ValueError, match="max_batch"):
        Predictor(model, Store(X), max_batch=0)
    with pytest.raises(ValueError, match="on_error"):
        Predictor(model, Store(X), on_error="skip")
    with pytest.raises(ValueError, match="not a feature|unknown|no feature"):
        _serve(Predictor(model, Store(X)), ["id-0"], known=lambda key: {"nope": 1.0})


def test_the_sync_twin_batches_requests_from_threads(models):
    built, X = models
    model = built["gbdt"]
    store = Store(X, delay=0.01)
    keys = [f"id-{i}" for i in range(len(X))]
    with Predictor(model, store, max_wait_ms=10) as predictor:
        with ThreadPoolExecutor(8) as pool:
            results = list(pool.map(predictor.predict_one_sync, keys))
    np.testing.assert_array_equal([r.value for r in results], model.predict(X))
    assert predictor.stats.mean_batch_size > 1

    async def inside_a_loop():
        predictor.predict_one_sync("id-0")
    with pytest.raises(RuntimeError, match="block this event loop"):
        asyncio.run(inside_a_loop())


def test_a_failed_fetch_fails_its_batch_and_the_next_batch_works(models):
    built, X = models
    model = built["gbdt"]
    store = AsyncStore(X)
    state = {"down": True}

    async def fetch(features, keys):
        if state["down"]:
            raise ConnectionError("feature store down")
        return await store(features, keys)

    async def main():
        async with Predictor(model, fetch, max_wait_ms=10) as predictor:
            first = await asyncio.gather(*(predictor.predict_one(f"id-{i}") for i in range(5)),
                                         return_exceptions=True)
            state["down"] = False
            second = await asyncio.gather(*(predictor.predict_one(f"id-{i}")
                                            for i in range(5)))
            return first, second, predictor.stats
    first, second, stats = asyncio.run(main())
    assert all(isinstance(r, ConnectionError) for r in first)
    np.testing.assert_array_equal([r.value for r in second], model.predict(X[:5]))
    assert stats.failed == 5


def test_on_error_missing_answers_degraded_requests(models):
    built, X = models
    model = built["gbdt"]
    broken = int(np.argmax(model.acquisitions(X).sum(axis=0)))
    store = AsyncStore(X)

    async def fetch(features, keys):
        if broken in features:
            raise ConnectionError("bureau down")
        return await store(features, keys)

    keys = [f"id-{i}" for i in range(len(X))]
    results = _serve(Predictor(model, fetch, max_wait_ms=20, on_error="missing"), keys)
    name = model.feature_names[broken]
    degraded = np.array([r.degraded for r in results])
    assert degraded.any()
    X_missing = X.copy()
    X_missing[degraded, broken] = np.nan
    np.testing.assert_array_equal([r.value for r in results], model.predict(X_missing))
    for r in results:
        assert r.missing == (((name, "ConnectionError: bureau down"),) if r.degraded else ())


def test_a_cancelled_caller_does_not_break_its_batch(models):
    built, X = models
    model = built["gbdt"]

    async def main():
        async with Predictor(model, AsyncStore(X, delay=0.05), max_wait_ms=10) as predictor:
            impatient = asyncio.ensure_future(predictor.predict_one("id-0"))
            others = [asyncio.ensure_future(predictor.predict_one(f"id-{i}"))
                      for i in range(1, 6)]
            await asyncio.sleep(0.02)
            impatient.cancel()
            return await asyncio.gather(*others)
    results = asyncio.run(main())
    np.testing.assert_array_equal([r.value for r in results], model.predict(X[1:6]))


def test_an_idle_predictor_serves_a_later_event_loop_and_its_sync_twin(models):
    built, X = models
    model = built["gbdt"]
    predictor = Predictor(model, AsyncStore(X))
    first = asyncio.run(predictor.predict_one("id-0"))
    second = asyncio.run(predictor.predict_one("id-1"))      # a new loop, the first idle
    third = predictor.predict_one_sync("id-2")               # the predictor's own loop
    predictor.close()
    np.testing.assert_array_equal([first.value, second.value, third.value],
                                  model.predict(X[:3]))

    async def busy_elsewhere():
        waiting = asyncio.ensure_future(other.predict_one("id-3"))
        await asyncio.sleep(0)
        with pytest.raises(RuntimeError, match="in flight on another one"):
            await asyncio.get_running_loop().run_in_executor(
                None, lambda: asyncio.run(other.predict_one("id-4")))
        return await waiting
    other = Predictor(model, AsyncStore(X), max_wait_ms=200)
    assert asyncio.run(busy_elsewhere()).value == model.predict(X[3:4])[0]


def test_the_sync_twin_after_close_starts_no_thread(models):
    built, X = models
    predictor = Predictor(built["gbdt"], Store(X))
    predictor.predict_one_sync("id-0")
    predictor.close()
    with pytest.raises(RuntimeError, match="closed"):
        predictor.predict_one_sync("id-1")
    assert predictor._thread is None


def test_a_feature_known_twice_fails_its_request(models):
    built, X = models
    predictor = Predictor(built["gbdt"], AsyncStore(X))
    with pytest.raises(ValueError, match="twice"):
        asyncio.run(predictor.predict_one("id-0", {0: 1.0, built["gbdt"].feature_names[0]: 2.0}))
