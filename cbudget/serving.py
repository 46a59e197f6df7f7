"""Serving one request at a time with shared fetches (docs/architecture.md, "Serving").

A :class:`Predictor` answers ``await predictor.predict_one(key)`` for the entity ``key``
(a patient, a loan) by on-demand prediction. Concurrent requests are gathered into
batches: each batch is one :class:`~cbudget.FeatureSource` whose ``fetch`` receives the
keys of the batch's inputs, so that each round of fetches makes one call per feature (or
cost group) for every waiting input that needs it, instead of one per request. Batching
never changes a prediction: inputs are predicted independently; only the calls are shared.
"""
from __future__ import annotations

import asyncio
import math
import threading
from collections.abc import Callable, Hashable, Mapping
from concurrent.futures import Future as ThreadFuture
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ._model import Model
from .costs import resolve_feature
from .on_demand import FeatureSource, awaited_fetch

__all__ = ["Predictor", "PredictorStats", "ServedPrediction"]

OUTPUTS = ("predict", "predict_proba")


@dataclass(frozen=True)
class ServedPrediction:
    """What :meth:`Predictor.predict_one` returns for one request."""
    key: Hashable
    #: the input's row of ``predict`` (a float) or ``predict_proba`` (an array)
    value: Any
    #: the input's prediction cost: the features fetched for it and its split and tree
    #: costs (as :meth:`FeatureSource.cost`)
    cost: float
    #: names of the features fetched for it
    fetched: tuple[str, ...]
    #: whether it was predicted without some feature it needed (its fetch failed)
    degraded: bool
    #: (feature name, why) of each feature it was predicted without
    missing: tuple[tuple[str, str], ...]
    #: inputs predicted together with it, the rounds of fetches and the fetch calls they made
    batch_size: int
    rounds: int
    calls: int


@dataclass
class PredictorStats:
    """Counts since the predictor started."""
    requests: int = 0
    batches: int = 0
    calls: int = 0
    rounds: int = 0
    degraded: int = 0
    failed: int = 0

    @property
    def mean_batch_size(self) -> float:
        return self.requests / self.batches if self.batches else 0.0


@dataclass
class _Request:
    key: Hashable
    known: dict[int, Any]
    future: asyncio.Future = field(repr=False)


class Predictor:
    """On-demand prediction of one input per request, with the fetches of concurrent
    requests shared.

    Parameters
    ----------
    model : cbudget.Model
        Any cbudget model.
    fetch : callable ``fetch(features, keys) -> array (len(keys), len(features))``
        Plain or ``async def``. ``features`` is a list of feature indices (the model's
        column order), ``keys`` the list of the keys of the inputs that need them, in
        the order of the rows of the result. Returns values as a
        :class:`~cbudget.FeatureSource`'s ``fetch`` does (NaN: missing; levels for
        categorical features with levels). A plain ``fetch`` runs in a worker thread;
        with an async one, hold one connection or pool per event loop.
    max_batch : int, default 256
        Most inputs in one batch.
    max_wait_ms : float, default 2.0
        How long the first waiting request waits for others before its batch starts, and
        how long a fetch call waits for the calls of other running batches for the same
        features, with which it is merged into one call of ``fetch``.
    timeout, on_error, retries, merge_calls
        As :class:`~cbudget.FeatureSource`'s, for each batch's calls. With
        ``on_error="raise"`` a failed call fails every request of its batch with the
        exception; with "missing" the requests that needed the feature are answered
        without it (``degraded``).
    output : {"predict", "predict_proba"}, default "predict"
        The model's method whose row each request gets.

    Notes
    -----
    Batches run concurrently: a new batch does not wait for the running ones, and their
    calls for the same features within ``max_wait_ms`` are one call of ``fetch`` (for the
    keys of all of them, each key once; :attr:`stats` counts those calls). Requests
    whose ``known`` features differ are predicted in separate sources of the same batch
    (a source's known features are whole columns).

    Examples
    --------
    >>> async def fetch(features, keys):
    ...     return await feature_store.read(features, keys)
    >>> async with cbudget.serving.Predictor(model, fetch, on_error="missing") as p:
    ...     result = await p.predict_one(loan_id, known={"amount": 1200.0})
    >>> result.value, result.cost, result.fetched, result.degraded
    """

    def __init__(self, model: Model, fetch: Callable[..., Any], *, max_batch: int = 256,
                 max_wait_ms: float = 2.0, timeout: float | None = None,
                 on_error: str = "raise", retries: int = 0, merge_calls: bool = False,
                 output: str = "predict") -> None:
        if not isinstance(model, Model):
            raise TypeError(f"model must be a cbudget model, got {type(model).__name__}")
        if not callable(fetch):
            raise TypeError(f"fetch must be callable, got {type(fetch).__name__}")
        if isinstance(max_batch, bool) or not isinstance(max_batch, (int, np.integer)) \
                or max_batch < 1:
            raise ValueError(f"max_batch must be an int >= 1, got {max_batch!r}")
        if isinstance(max_wait_ms, bool) or not isinstance(max_wait_ms, (int, float)) \
                or not math.isfinite(max_wait_ms) or max_wait_ms < 0:
            raise ValueError(f"max_wait_ms must be a number >= 0, got {max_wait_ms!r}")
        if output not in OUTPUTS:
            raise ValueError(f"output must be one of {OUTPUTS}, got {output!r}")
        if output == "predict_proba" and not hasattr(model, "predict_proba"):
            raise ValueError(f"output='predict_proba': a {type(model).__name__} has no "
                             "predict_proba")
        self.model, self.fetch, self.output = model, fetch, output
        self.max_batch, self.max_wait_ms = int(max_batch), float(max_wait_ms)
        self.source_options: dict[str, Any] = {
            "timeout": timeout, "on_error": on_error, "retries": retries,
            "merge_calls": merge_calls}
        FeatureSource(fetch, 1, **self.source_options)      # checks the options now
        self.stats = PredictorStats()
        self._shared_calls = _SharedCalls(fetch, self.max_wait_ms / 1000, self.stats)
        self._levels = {m for m, levels in model.categories.by_feature().items()
                        if levels is not None}
        self._waiting: list[_Request] = []
        self._timer: asyncio.TimerHandle | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._batches: set[asyncio.Task] = set()
        self._closed = False
        self._thread: threading.Thread | None = None
        self._thread_loop: asyncio.AbstractEventLoop | None = None
        self._thread_lock = threading.Lock()

    def __repr__(self) -> str:
        return (f"<cbudget.serving.Predictor {type(self.model).__name__} "
                f"requests={self.stats.requests} batches={self.stats.batches}>")

    # -- requests -------------------------------------------------------------------------
    async def predict_one(self, key: Hashable, known: Mapping[int | str, Any] | None = None
                          ) -> ServedPrediction:
        """Predict the input of ``key`` (``known``: its features available for free, by
        index or name), fetching what its paths need together with the waiting requests."""
        if self._closed:
            raise RuntimeError("this Predictor is closed")
        loop = asyncio.get_running_loop()
        if self._loop is not loop:
            # an idle predictor moves to the caller's loop (a later asyncio.run, the sync
            # twin's own loop after awaited use); a busy one stays with its requests
            if self._waiting or self._batches or self._shared_calls.busy():
                raise RuntimeError("a Predictor serves one event loop at a time and has "
                                   "requests in flight on another one: make one per loop "
                                   "(or use predict_one_sync from threads)")
            self._loop = loop
        request = _Request(key, self._checked_known(known), loop.create_future())
        self._waiting.append(request)
        self.stats.requests += 1
        if len(self._waiting) >= self.max_batch:
            self._start_batches()
        elif self._timer is None:
            self._timer = loop.call_later(self.max_wait_ms / 1000, self._start_batches)
        return await request.future

    def predict_one_sync(self, key: Hashable, known: Mapping[int | str, Any] | None = None
                         ) -> ServedPrediction:
        """:meth:`predict_one` from synchronous code, e.g. a threaded web server: requests
        from any thread are batched together on the predictor's own event loop thread."""
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            pass
        else:
            raise RuntimeError("predict_one_sync would block this event loop: await "
                               "predict_one instead")
        if self._closed:        # before starting the loop thread, which close() stopped
            raise RuntimeError("this Predictor is closed")
        future: ThreadFuture = asyncio.run_coroutine_threadsafe(
            self.predict_one(key, known), self._own_loop())
        return future.result()

    def _checked_known(self, known: Mapping[int | str, Any] | None) -> dict[int, Any]:
        if known is None:
            return {}
        if not isinstance(known, Mapping):
            raise TypeError("known must be a mapping {feature index or name: value}")
        checked = {}
        for name, value in known.items():
            m = resolve_feature(name, self.model.feature_names, "known")
            if m not in self._levels:
                try:
                    value = float(np.nan if value is None else value)
                except (TypeError, ValueError):
                    raise TypeError(f"known[{name!r}] must be a number, got "
                                    f"{value!r}") from None
            if m in checked:
                raise ValueError(f"known gives feature {self.model.feature_names[m]!r} "
                                 "twice (by index and by name)")
            checked[m] = value
        return checked

    # -- batches --------------------------------------------------------------------------
    def _start_batches(self) -> None:
        """Start a batch of the waiting requests (several when more than max_batch wait)."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        assert self._loop is not None
        while self._waiting:
            batch, self._waiting = (self._waiting[:self.max_batch],
                                    self._waiting[self.max_batch:])
            task = self._loop.create_task(self._run_batch(batch))
            self._batches.add(task)
            task.add_done_callback(self._batches.discard)

    async def _run_batch(self, batch: list[_Request]) -> None:
        self.stats.batches += 1
        by_known: dict[tuple[int, ...], list[_Request]] = {}
        for request in batch:
            by_known.setdefault(tuple(sorted(request.known)), []).append(request)
        await asyncio.gather(*(self._run_source(part, len(batch))
                               for part in by_known.values()))

    async def _run_source(self, requests: list[_Request], batch_size: int) -> None:
        """Predict ``requests`` (which know the same features) on one source; answer
        each (or fail each with the source's error)."""
        keys = [request.key for request in requests]
        known = {m: [request.known[m] for request in requests] for m in requests[0].known}
        token = self._shared_calls.open_source()
        source = FeatureSource(_keyed_fetch(self._shared_calls, keys, token), len(requests),
                               known=known or None, **self.source_options)
        try:
            values = await getattr(self.model, "a" + self.output)(source)
            costs = source.cost()
        except Exception as exc:  # noqa: BLE001 - each waiting caller gets it
            self.stats.failed += len(requests)
            for request in requests:
                if not request.future.done():
                    request.future.set_exception(exc)
            return
        finally:
            self._shared_calls.close_source(token)
            self.stats.rounds += source.n_rounds
        names = self.model.feature_names
        acquired, degraded = source.acquired, source.degraded
        reasons: dict[tuple[int, int], str] = {}
        for failure in source.failures:
            for row in failure.rows.tolist():
                for m in failure.features:
                    reasons[row, m] = failure.reason
        for i, request in enumerate(requests):
            missing = tuple((names[m], reasons.get((i, m), "fetch failed"))
                            for m in np.flatnonzero(degraded[i]).tolist())
            self.stats.degraded += bool(missing)
            value = values[i]
            result = ServedPrediction(
                key=request.key, value=value.item() if np.ndim(value) == 0 else value,
                cost=float(costs[i]),
                fetched=tuple(names[m] for m in np.flatnonzero(acquired[i]).tolist()),
                degraded=bool(missing), missing=missing, batch_size=batch_size,
                rounds=source.n_rounds, calls=len(source.calls))
            if not request.future.done():           # its caller may have given up
                request.future.set_result(result)

    # -- closing --------------------------------------------------------------------------
    async def aclose(self) -> None:
        """Start the waiting requests, wait for every running batch, refuse new requests."""
        self._closed = True
        if self._waiting:
            self._start_batches()
        if self._batches:
            await asyncio.gather(*self._batches, return_exceptions=True)

    def close(self) -> None:
        """:meth:`aclose` for the synchronous twin: finish the requests, stop the
        predictor's event loop thread."""
        with self._thread_lock:
            loop, thread = self._thread_loop, self._thread
            self._thread_loop = self._thread = None
        if loop is None or thread is None:
            self._closed = True
            return
        asyncio.run_coroutine_threadsafe(self.aclose(), loop).result()
        loop.call_soon_threadsafe(loop.stop)
        thread.join()
        loop.close()

    def _own_loop(self) -> asyncio.AbstractEventLoop:
        with self._thread_lock:
            if self._thread_loop is None:
                loop = asyncio.new_event_loop()
                thread = threading.Thread(target=loop.run_forever, daemon=True,
                                          name="cbudget-predictor")
                thread.start()
                self._thread_loop, self._thread = loop, thread
            return self._thread_loop

    async def __aenter__(self) -> Predictor:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    def __enter__(self) -> Predictor:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


class _SharedCalls:
    """The calls of concurrent batches for the same features, merged: the first waits
    ``wait_s`` for others, then one call of ``fetch`` serves them all (each key once).
    The waiting calls start at once when every running source waits on one (no other
    can join them)."""

    def __init__(self, fetch: Callable[..., Any], wait_s: float, stats: PredictorStats
                 ) -> None:
        self.fetch, self.wait_s, self.stats = fetch, wait_s, stats
        self.waiting: dict[tuple[int, ...], list[tuple[list[Hashable], asyncio.Future]]] = {}
        self.running: set[asyncio.Task] = set()
        # the running sources: how many calls each waits on
        self.sources: dict[int, int] = {}
        self.next_token = 0
        self.flush_due = False

    def busy(self) -> bool:
        """Whether calls wait or run (on the loop of the running sources)."""
        return bool(self.waiting or self.running or self.sources)

    def open_source(self) -> int:
        self.next_token += 1
        self.sources[self.next_token] = 0
        return self.next_token

    def close_source(self, token: int) -> None:
        del self.sources[token]
        self._flush_when_all_wait()

    async def __call__(self, features: list[int], keys: list[Hashable], token: int) -> Any:
        loop = asyncio.get_running_loop()
        group = tuple(features)
        if group not in self.waiting:
            self.waiting[group] = []
            loop.call_later(self.wait_s, self._start, loop, group)
        future = loop.create_future()
        self.waiting[group].append((keys, future))
        self.sources[token] += 1
        self._flush_when_all_wait()
        try:
            return await future
        finally:
            if token in self.sources:
                self.sources[token] -= 1

    def _flush_when_all_wait(self) -> None:
        if self.waiting and not self.flush_due and all(self.sources.values()):
            # after the calls of this round already scheduled have joined
            self.flush_due = True
            asyncio.get_running_loop().call_soon(self._flush)

    def _flush(self) -> None:
        self.flush_due = False
        loop = asyncio.get_running_loop()
        for group in list(self.waiting):
            self._start(loop, group)

    def _start(self, loop: asyncio.AbstractEventLoop, group: tuple[int, ...]) -> None:
        parts = self.waiting.pop(group, None)
        if parts is None:           # started already (every source waited)
            return
        task = loop.create_task(self._call(group, parts))
        self.running.add(task)
        task.add_done_callback(self.running.discard)

    async def _call(self, group: tuple[int, ...],
                    parts: list[tuple[list[Hashable], asyncio.Future]]) -> None:
        unique = list(dict.fromkeys(key for keys, _ in parts for key in keys))
        self.stats.calls += 1
        try:
            result = await awaited_fetch(self.fetch, list(group), unique)
            table = np.asarray(result)
            if table.ndim != 2 or table.shape[0] != len(unique):
                raise ValueError(f"fetch(features={list(group)}, keys=<{len(unique)} keys>) "
                                 f"returned shape {table.shape}, expected ({len(unique)}, "
                                 f"{len(group)})")
        except Exception as exc:  # noqa: BLE001 - each merged caller gets it
            for _, future in parts:
                if not future.done():
                    future.set_exception(exc)
            return
        position = {key: i for i, key in enumerate(unique)}
        for keys, future in parts:
            if not future.done():        # its source may have timed out meanwhile
                future.set_result(table[[position[key] for key in keys]])


def _keyed_fetch(shared: _SharedCalls, keys: list[Hashable], token: int
                 ) -> Callable[..., Any]:
    """A source's fetch ``(features, rows)``: the shared calls for those rows' keys."""
    async def by_keys(features: list[int], rows: np.ndarray) -> Any:
        return await shared(features, [keys[r] for r in rows.tolist()], token)
    return by_keys
