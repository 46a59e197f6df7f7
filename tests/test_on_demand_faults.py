"""Fetches that fail or are late (FeatureSource's timeout, on_error, retries): with
on_error="missing" a failed call's pairs are predicted as missing values, exactly as eager
prediction on the data with those values missing, and the source says which; nothing is
written twice or half; with "raise" the source stays consistent."""
import asyncio
import sqlite3
import threading
import time

import numpy as np
import pytest
from small_models import ALGORITHMS
from test_on_demand import GROUPED, Recorder, _data, _train

import cbudget


@pytest.fixture(scope="module")
def models():
    X, y = _data(400, 0)
    Xv, _ = _data(200, 1)
    dtrain = cbudget.Dataset(X, y, **GROUPED)
    f0 = cbudget.train({"objective": "binary:logistic", "n_jobs": 1, "max_depth": 5}, dtrain,
                       12, verbose_eval=False)
    built = {algorithm: _train(algorithm, dtrain, f0) for algorithm in ALGORITHMS}
    return built, Xv


class Broken:
    """A fetch over a recorder whose calls asking for ``broken`` fail (``how``: "raise"
    an exception, "sleep" past any timeout, "shape": a wrong shape) while ``on``;
    ``fail_first`` makes each call's first attempts fail instead."""

    def __init__(self, X, broken=None, how="raise", fail_first=0, delay=0.3):
        self.recorder = Recorder(X)
        self.broken, self.how, self.on = broken, how, True
        self.fail_first, self.delay = fail_first, delay
        self.attempts: dict = {}
        self.lock = threading.Lock()

    def failing(self, features, rows):
        if self.fail_first:
            key = (tuple(features), rows.tobytes())
            with self.lock:
                self.attempts[key] = self.attempts.get(key, 0) + 1
                return self.attempts[key] <= self.fail_first
        return self.on and self.broken in features

    def __call__(self, features, rows):
        if self.failing(features, rows):
            if self.how == "sleep":
                time.sleep(self.delay)
                return self.recorder.X[np.ix_(rows, features)]   # late: must be dropped
            if self.how == "shape":
                return np.zeros((len(rows) + 1, len(features)))
            raise ConnectionError("service down")
        return self.recorder(features, rows)


class AsyncBroken(Broken):
    async def __call__(self, features, rows):
        if self.failing(features, rows):
            if self.how == "sleep":
                await asyncio.sleep(self.delay)
            else:
                raise ConnectionError("service down")
        return self.recorder(features, rows)


def _most_read(model, X):
    """The feature the model reads for the most inputs (a group member or not)."""
    return int(np.argmax(model.acquisitions(X).sum(axis=0)))


def _check_degraded(model, source, X, broken):
    """The source's predictions equal eager ones with the degraded pairs missing, and
    the degraded pairs are those of the broken feature's calls."""
    degraded = source.degraded
    assert degraded[:, broken].any()
    X_missing = X.copy()
    X_missing[degraded] = np.nan
    np.testing.assert_array_equal(model.predict(source), model.predict(X_missing))
    acquisitions = model.acquisitions(X_missing)
    np.testing.assert_array_equal(source.acquired | degraded, acquisitions)
    assert not (source.acquired & degraded).any()
    np.testing.assert_array_equal(source.degraded_inputs, degraded.any(axis=1))
    # the cost: what was acquired (the degraded pairs are not charged) and the same
    # structural costs as eager prediction with those values missing
    charge = model.cost_model.acquisition_costs
    np.testing.assert_allclose(
        source.cost(), model.predict_cost(X_missing) - charge(acquisitions)
        + charge(source.acquired), rtol=1e-12, atol=1e-12)
    # every degraded pair comes from a reported failure of a call asking for it
    assert source.failures and all(broken in f.features for f in source.failures)
    failed = np.zeros_like(degraded)
    for failure in source.failures:
        failed[np.ix_(failure.rows, failure.features)] = True
    np.testing.assert_array_equal(failed, degraded)


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_a_failed_feature_is_predicted_missing_for_the_inputs_asked(models, algorithm):
    built, X = models
    model = built[algorithm]
    broken = _most_read(model, X)
    for fetch_type in (Broken, AsyncBroken):
        fetch = fetch_type(X, broken)
        source = cbudget.FeatureSource(fetch, X.shape[0], on_error="missing")
        if fetch_type is AsyncBroken:
            asyncio.run(model.apredict(source))
        else:
            model.predict(source)
        _check_degraded(model, source, X, broken)
        assert all("ConnectionError: service down" == f.reason for f in source.failures)
        # once the outage is over, forget_degraded: the next prediction is eager's
        fetch.on = False
        source.forget_degraded()
        assert not source.degraded.any() and not source.failures
        if fetch_type is AsyncBroken:
            got = asyncio.run(model.apredict(source))
        else:
            got = model.predict(source)
        np.testing.assert_array_equal(got, model.predict(X))
        # what the degraded prediction fetched on the default paths stays (never fetched
        # twice, and paid for)
        acquisitions = model.acquisitions(X)
        assert not (acquisitions & ~source.acquired).any()
        charge = model.cost_model.acquisition_costs
        np.testing.assert_allclose(
            source.cost(), model.predict_cost(X) - charge(acquisitions)
            + charge(source.acquired), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("path, workers", [("sync", 1), ("sync", 4), ("async", 1)])
def test_a_late_call_is_missing_and_its_late_result_never_written(models, path, workers):
    built, X = models
    model = built["gbdt"]
    broken = _most_read(model, X)
    fetch = (AsyncBroken if path == "async" else Broken)(X, broken, how="sleep", delay=0.3)
    source = cbudget.FeatureSource(fetch, X.shape[0], on_error="missing", timeout=0.05,
                                   max_workers=workers)
    start = time.perf_counter()
    if path == "async":
        asyncio.run(model.apredict(source))
    else:
        model.predict(source)
    assert time.perf_counter() - start < 0.3 * len(source.failures)   # not waited for
    _check_degraded(model, source, X, broken)
    assert all(f.reason.endswith("took more than 0.05 s") for f in source.failures)
    time.sleep(0.35)               # the abandoned sync calls return meanwhile
    assert np.isnan(source.values[source.degraded]).all()
    _check_degraded(model, source, X, broken)


def test_a_late_call_raises_timeout_error_and_the_source_stays_consistent(models):
    built, X = models
    model = built["gbdt"]
    fetch = Broken(X, _most_read(model, X), how="sleep", delay=0.2)
    source = cbudget.FeatureSource(fetch, X.shape[0], timeout=0.05)
    with pytest.raises(TimeoutError, match="took more than 0.05 s"):
        model.predict(source)
    with pytest.raises(ValueError, match="did not complete"):
        source.cost()
    fetch.on = False
    np.testing.assert_array_equal(model.predict(source), model.predict(X))
    np.testing.assert_array_equal(fetch.recorder.fetched, model.acquisitions(X))


@pytest.mark.parametrize("retries, degraded", [(2, False), (1, True)])
def test_retries_within_the_round(models, retries, degraded):
    built, X = models
    model = built["gbdt"]
    for fetch_type in (Broken, AsyncBroken):
        fetch = fetch_type(X, fail_first=2)
        source = cbudget.FeatureSource(fetch, X.shape[0], on_error="missing",
                                       retries=retries)
        if fetch_type is AsyncBroken:
            asyncio.run(model.apredict(source))
        else:
            model.predict(source)
        assert source.degraded.any() == degraded
        assert all(f.attempts == retries + 1 for f in source.failures)
        if not degraded:
            np.testing.assert_array_equal(model.predict(source), model.predict(X))
            # each call tried three times, written once (Recorder fails a pair fetched twice)
            assert set(fetch.attempts.values()) == {3}
            assert len(source.calls) == len(fetch.attempts)
            # a call that returned is logged once, with the attempts it took
            assert [c.attempts for c in source.calls] == [3] * len(source.calls)


def test_a_result_of_the_wrong_shape_is_a_failure_under_missing(models):
    built, X = models
    model = built["gbdt"]
    broken = _most_read(model, X)
    source = cbudget.FeatureSource(Broken(X, broken, how="shape"), X.shape[0],
                                   on_error="missing")
    model.predict(source)
    _check_degraded(model, source, X, broken)
    assert all(f.reason.startswith("ValueError: fetch(features=") for f in source.failures)
    with pytest.raises(ValueError, match="returned shape"):
        model.predict(cbudget.FeatureSource(Broken(X, broken, how="shape"), X.shape[0]))


def test_an_async_fetch_on_the_sync_path_is_an_error_even_under_missing(models):
    built, X = models
    source = cbudget.FeatureSource(AsyncBroken(X), X.shape[0], on_error="missing", retries=3)
    with pytest.raises(TypeError, match="fetch is asynchronous"):
        built["gbdt"].predict(source)
    assert not source.failures


@pytest.mark.parametrize("bad, message", [
    ({"timeout": 0}, "timeout must be"), ({"timeout": float("nan")}, "timeout must be"),
    ({"timeout": True}, "timeout must be"), ({"on_error": "ignore"}, "on_error must be"),
    ({"retries": -1}, "retries must be"), ({"retries": 1.5}, "retries must be"),
])
def test_the_fault_options_are_checked(bad, message):
    with pytest.raises(ValueError, match=message):
        cbudget.FeatureSource(lambda features, rows: None, 3, **bad)


def test_sqlite_with_one_connection_per_thread(models, tmp_path):
    # SQLite objects can only be used in the thread that created them: with max_workers
    # > 1 each worker thread opens its own connection (threading.local)
    built, X = models
    model = built["gbdt"]
    path = tmp_path / "features.db"
    with sqlite3.connect(path) as db:
        columns = ", ".join(f"f{m} REAL" for m in range(X.shape[1]))
        db.execute(f"CREATE TABLE features (id INTEGER PRIMARY KEY, {columns})")
        db.executemany(f"INSERT INTO features VALUES ({', '.join('?' * (X.shape[1] + 1))})",
                       [(i, *[None if np.isnan(v) else float(v) for v in row])
                        for i, row in enumerate(X)])
    local = threading.local()
    threads = set()

    def fetch(features, rows):
        if not hasattr(local, "db"):
            local.db = sqlite3.connect(path)
        threads.add(threading.get_ident())
        wanted = ", ".join(f"f{m}" for m in features)
        marks = ", ".join("?" * len(rows))
        found = dict((row[0], row[1:]) for row in local.db.execute(
            f"SELECT id, {wanted} FROM features WHERE id IN ({marks})", rows.tolist()))
        return np.array([found[r] for r in rows.tolist()], dtype=float)   # None -> NaN

    source = cbudget.FeatureSource(fetch, X.shape[0], max_workers=4)
    np.testing.assert_array_equal(model.predict(source), model.predict(X))
    assert len(threads) > 1
