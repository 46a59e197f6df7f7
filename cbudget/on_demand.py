"""On-demand feature acquisition at prediction time (docs/architecture.md, "On-demand
prediction").

A :class:`FeatureSource` stands in for ``X`` in every prediction method of every model:
instead of a matrix it holds a function that computes features when the model asks for
them, so that an input pays only for the features its paths read.

How a prediction runs on a source: the model's ``read_steps(source, rows)`` generator
walks the inputs as far as the features known so far allow and registers the (input,
feature) pairs it needs next (:meth:`FeatureSource.request`, :func:`walk_trees`), then
yields; the source fetches everything registered in one round -- one call per feature,
or per cost group -- and resumes it. Composite models step their parts together
(:func:`in_lockstep`), so the rounds are bounded by the deepest path, not by the number
of trees. The model then predicts from the leaves the walk reached, or on
:attr:`FeatureSource.values`, whose unfetched entries it never reads: the result equals
``predict`` on the full matrix.
"""
from __future__ import annotations

import asyncio
import contextlib
import inspect
import math
import time
from collections.abc import Callable, Generator, Iterator, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from typing import Any, NamedTuple, TypeAlias

import numpy as np
from numpy.typing import ArrayLike

from ._core._predict import walk_step
from .categories import NO_CATEGORIES, Categories, as_numbers, encode_column
from .costs import CostModel, resolve_feature

__all__ = ["FeatureSource", "FetchCall", "FetchFailure", "ReadSteps", "awaited_fetch",
           "global_node_ids", "root_features", "walk_trees", "in_lockstep"]

# What a model's read_steps returns: a generator that yields once per round of fetches
# (and returns what it computed on the way, e.g. the leaves reached).
ReadSteps: TypeAlias = Generator[None, None, Any]

# status of each (input, feature) pair of a source
UNKNOWN, KNOWN, REQUESTED = 0, 1, 2
# fewer (input, tree) pairs than this are walked by one thread: waking a second one costs
# more (milliseconds on a busy machine)
PARALLEL_PAIRS = 50_000


class FetchCall(NamedTuple):
    """One call of a source's ``fetch`` that returned: which features, for how many
    inputs, how long its last attempt took, in which round of fetches (0 = the source's
    first), and after how many attempts (more than 1 when it failed or timed out first
    and was retried; a call that failed every attempt is a :class:`FetchFailure`)."""
    features: tuple[int, ...]
    n_rows: int
    seconds: float
    round: int
    attempts: int = 1


class FetchFailure(NamedTuple):
    """A call of a source's ``fetch`` that failed or timed out on every attempt, under
    ``on_error="missing"``: its pairs were predicted as missing values."""
    features: tuple[int, ...]
    rows: np.ndarray        # the inputs the call was for (int64, ascending)
    reason: str
    attempts: int
    round: int


class FeatureSource:
    """Features computed on request, in place of ``X`` in any model's ``predict``,
    ``predict_proba``, ``predict_cost``, ``acquisitions``, ``cost_report`` ...

    Parameters
    ----------
    fetch : callable ``fetch(features, rows) -> array of shape (len(rows), len(features))``
        ``features`` is a list of feature indices (the model's column order), ``rows``
        an int64 array of input indices in ``[0, n_samples)``. NaN in the result means
        missing (the trained default direction). A categorical feature with levels (a
        string or pandas ``category`` column in training, :attr:`cbudget.Model.categories`)
        is fetched as its levels, as in a DataFrame (e.g. ``"M"``; an unseen level goes
        to the splits' "other" side, None or NaN is missing): the result may then be an
        object array or a DataFrame. An integer-coded one is fetched as its codes. The
        result is copied as soon as the call returns, so it may be a view of a buffer
        the next call reuses (with ``max_workers`` > 1 calls overlap: each then needs a
        buffer of its own). The features of one cost group that the same inputs need in
        the same round come in one call; otherwise each call is one feature, for all the
        inputs that need it at that step (unless ``merge_calls``).
    n_samples : int
        Number of inputs.
    known : mapping or DataFrame, optional
        Features available for free up front: ``{feature index or name: column of
        n_samples values}``, or a DataFrame whose columns are named after features.
        They are never fetched and cost nothing; a categorical feature's as levels, as
        ``fetch`` returns them.
    max_workers : int, default 1
        With more than one, the calls of one round run concurrently in a thread pool
        (for fetches that wait on I/O: a web service, a database, a lab).
    timeout : float, optional
        Seconds one call (one attempt) may take. The async path cancels a late call;
        a synchronous ``fetch`` then runs in a worker thread, which cannot be stopped:
        the call goes on in its thread until it returns, and its late result is
        discarded, never written.
    on_error : {"raise", "missing"}, default "raise"
        What a call that failed or timed out (after its ``retries``) does. "raise": its
        exception (``TimeoutError`` for a late call) propagates once the round's other
        calls are stored. "missing": its (input, feature) pairs are predicted as missing
        values (the trained default direction), the prediction goes on, and
        :attr:`degraded`, :attr:`degraded_inputs` and :attr:`failures` say which inputs
        went without which features and why. A result of the wrong shape or of
        non-numbers is such a failure too.
    retries : int, default 0
        More attempts for a call that failed or timed out, within the same round.
    merge_calls : bool, default False
        With True, the features that exactly the same inputs need in the same round come
        in one call, whatever their cost groups: one call per round for a single input,
        fewer calls for a batch (for a fetch that pays per call: a feature store, a
        remote service). Predictions and costs are the same either way.

    Notes
    -----
    After a prediction the source tells what happened: :attr:`acquired` (the pairs
    fetched), :meth:`cost` (per input, with the model's cost model), :attr:`calls` (the
    log of the calls that returned, each once with its number of attempts),
    :attr:`failures` (the calls that failed every attempt) and :attr:`n_rounds`. Each
    (input, feature) pair is fetched at most once, across predictions: the values are
    kept in :attr:`values`.

    Examples
    --------
    >>> source = cbudget.FeatureSource(lambda features, rows: X[np.ix_(rows, features)],
    ...                                n_samples=len(X))
    >>> model.predict(source)        # equals model.predict(X), fetching only what it reads
    >>> source.cost().mean()         # equals model.predict_cost(X).mean()
    """

    def __init__(self, fetch: Callable[[list[int], np.ndarray], ArrayLike], n_samples: int, *,
                 known: Mapping[int | str, ArrayLike] | Any | None = None,
                 max_workers: int = 1, timeout: float | None = None,
                 on_error: str = "raise", retries: int = 0,
                 merge_calls: bool = False) -> None:
        if not callable(fetch):
            raise TypeError(f"fetch must be callable, got {type(fetch).__name__}")
        for name, value, low in (("n_samples", n_samples, 1), ("max_workers", max_workers, 1),
                                 ("retries", retries, 0)):
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) \
                    or value < low:
                raise ValueError(f"{name} must be an int >= {low}, got {value!r}")
        if known is not None and not isinstance(known, Mapping) and not hasattr(known, "columns"):
            raise TypeError("known must be a mapping {feature: column} or a DataFrame")
        if timeout is not None and (isinstance(timeout, bool)
                                    or not isinstance(timeout, (int, float, np.number))
                                    or not math.isfinite(timeout) or timeout <= 0):
            raise ValueError(f"timeout must be a positive number of seconds or None, got "
                             f"{timeout!r}")
        if on_error not in ("raise", "missing"):
            raise ValueError(f"on_error must be 'raise' or 'missing', got {on_error!r}")
        self.fetch = fetch
        self.n_samples = int(n_samples)
        self.max_workers = int(max_workers)
        self.merge_calls = bool(merge_calls)
        self.timeout = None if timeout is None else float(timeout)
        self.on_error = on_error
        self.retries = int(retries)
        self.calls: list[FetchCall] = []
        self.failures: list[FetchFailure] = []
        self.n_rounds = 0
        self._known = known
        self.feature_names: list[str] | None = None
        self.cost_model: CostModel | None = None
        self._values = np.zeros((0, 0))
        # {feature: levels} of the model's categorical features with levels
        self._levels: dict[int, list] = {}
        self._status = np.zeros((0, 0), dtype=np.uint8)
        self._free = np.zeros(0, dtype=bool)
        self._degraded = np.zeros((0, 0), dtype=bool)
        # the pairs registered for the coming round, as blocks (features, rows): every
        # input of rows needs every feature of features (one block per step for one input)
        self._pending: list[tuple[np.ndarray, np.ndarray]] = []
        self._other_costs: Callable[[], np.ndarray] | None = None
        # set while a prediction runs and kept when it fails: cost() then refuses
        self._incomplete = False

    def __repr__(self) -> str:
        return (f"<cbudget.FeatureSource n_samples={self.n_samples} calls={len(self.calls)} "
                f"rounds={self.n_rounds}>")

    # -- what the user reads --------------------------------------------------------------
    def _check_used(self) -> None:
        if self.feature_names is None:
            raise ValueError("this FeatureSource has not been used by a model yet")

    @property
    def values(self) -> np.ndarray:
        """float64 (n_samples, n_features): the features fetched or known so far (NaN:
        a missing value), 0 elsewhere (see :attr:`acquired`). The models predict on it,
        reading only what they fetched."""
        self._check_used()
        return self._values

    @property
    def acquired(self) -> np.ndarray:
        """bool (n_samples, n_features): the (input, feature) pairs fetched so far (the
        free ``known`` features excluded)."""
        self._check_used()
        return (self._status == KNOWN) & ~self._free & ~self._degraded

    @property
    def degraded(self) -> np.ndarray:
        """bool (n_samples, n_features): the pairs asked for whose call failed or timed
        out under ``on_error="missing"``: predicted as missing values, not charged, and
        not asked again until :meth:`forget_degraded`."""
        self._check_used()
        return self._degraded.copy()

    @property
    def degraded_inputs(self) -> np.ndarray:
        """bool (n_samples,): the inputs predicted without some feature they needed."""
        self._check_used()
        return np.asarray(self._degraded.any(axis=1))

    def forget_degraded(self) -> None:
        """Make the degraded pairs unknown again, so that the next prediction on this
        source asks for them (and :attr:`failures` starts anew)."""
        self._check_used()
        self._status[self._degraded] = UNKNOWN
        self._values[self._degraded] = 0.0
        self._degraded[:] = False
        self.failures.clear()

    def cost(self) -> np.ndarray:
        """Per-input cost of what was fetched, with the model's cost model: each fetched
        feature once, its cost group once, plus the split and tree costs of the last
        prediction made on this source. Without ``known`` features it equals the
        model's ``predict_cost`` on the full data (up to rounding).

        Returns
        -------
        ndarray of float64, shape (n_samples,)

        Raises
        ------
        ValueError
            When the last prediction on this source raised (a fetch failed): its cost is
            not known (:attr:`acquired` still lists what was fetched).
        """
        self._check_used()
        if self._incomplete:
            raise ValueError("the last prediction on this FeatureSource did not complete "
                             "(it raised, e.g. a fetch failed): its cost is not known. "
                             "acquired and calls list the pairs fetched so far, which a new "
                             "prediction on this source does not fetch again")
        assert self.cost_model is not None
        cost = self.cost_model.acquisition_costs(self.acquired)
        if self._other_costs is not None:
            cost = cost + self._other_costs()
        return cost

    # -- what the models use ----------------------------------------------------------------
    def bind(self, feature_names: Sequence[str], cost_model: CostModel,
             categories: Categories = NO_CATEGORIES) -> None:
        """Take the model's features, costs and categorical levels (at the first use:
        allocate the values and fill in the known features); ValueError for a model of
        other features."""
        names = list(feature_names)
        self._levels = {m: levels for m, levels in categories.by_feature().items()
                        if levels is not None}
        if self.feature_names is not None:
            if names != self.feature_names:
                raise ValueError("this FeatureSource was used with a model of other features")
            self.cost_model = cost_model
            return
        n_features = len(names)
        values = np.zeros((self.n_samples, n_features))     # zeroed lazily by the system
        status = np.zeros((self.n_samples, n_features), dtype=np.uint8)
        free = np.zeros(n_features, dtype=bool)
        known = [(m := resolve_feature(key, names, "known"),
                  self._known_column(column, names[m], self._levels.get(m)))
                 for key, column in self._known_columns()]
        if known:
            # all columns in one write: next_features binds a source per step
            columns = [m for m, _ in known]
            values[:, columns] = np.array([column for _, column in known]).T
            status[:, columns] = KNOWN
            free[columns] = True
        self.feature_names, self.cost_model = names, cost_model
        self._values, self._status, self._free = values, status, free
        self._degraded = np.zeros(status.shape, dtype=bool)

    def _known_columns(self) -> list[tuple[str, Any]]:
        known = self._known
        if known is None:
            return []
        if hasattr(known, "columns") and not isinstance(known, Mapping):
            return [(str(c), known[c].to_numpy()) for c in known.columns]
        return list(known.items())

    def _known_column(self, column: Any, name: str, levels: list[Any] | None = None
                      ) -> np.ndarray:
        try:
            array = np.asarray(column)     # once: a column may be a list or a Series
        except Exception as exc:  # noqa: BLE001 - report any conversion failure clearly
            raise TypeError(f"known[{name!r}]: cannot convert to an array: {exc}") from None
        # the shape first: a column of levels of a wrong length is not "not numbers"
        if array.shape != (self.n_samples,):
            raise ValueError(f"known[{name!r}] must have shape ({self.n_samples},), got "
                             f"{array.shape}")
        if levels is not None:
            return encode_column(column, f"known[{name!r}]", levels, check=False)
        column = array
        try:
            if column.dtype.kind not in "biufO":
                raise TypeError
            return as_numbers(column)     # objects: None, NaN, pandas' NA are missing
        except (TypeError, ValueError):
            raise TypeError(f"known[{name!r}] must hold numbers, got dtype {column.dtype}"
                            ) from None

    def request(self, rows: np.ndarray, features: ArrayLike) -> None:
        """Register that the inputs ``rows`` need ``features`` (the pairs not known or
        already requested are fetched in the coming round)."""
        features = np.asarray(features, dtype=np.int64)
        if rows.size == 0 or features.size == 0:
            return
        if rows.size == 1:                  # the serving case, without 2-d indexing
            wanted = features[self._status[rows[0], features] == UNKNOWN]
            if wanted.size:
                self._status[rows[0], wanted] = REQUESTED
                self._pending.append((wanted, rows.copy()))
            return
        unknown = self._status[np.ix_(rows, features)] == UNKNOWN
        needed = unknown.any(axis=0)
        if unknown[:, needed].all():
            # every input needs each of these features (always so for one input): one
            # status write and one rows array for all of them, not a pass per feature
            wanted = features[needed]
            if wanted.size:
                self._status[np.ix_(rows, wanted)] = REQUESTED
                self._pending.append((wanted, rows.copy()))
            return
        for j in np.flatnonzero(needed):
            need = rows[unknown[:, j]]
            self._status[need, features[j]] = REQUESTED
            self._pending.append((features[j:j + 1], need))

    def has_pending(self) -> bool:
        """Whether pairs are registered for the coming round."""
        return bool(self._pending)

    def run(self, steps: ReadSteps, other_costs: Callable[[], np.ndarray] | None = None
            ) -> Any:
        """Drive a model's ``read_steps``: fetch what it registers at each step until it
        is done; returns what it returned. ``other_costs`` gives the split and tree
        costs of the prediction for :meth:`cost`; when a fetch fails, its exception
        propagates and :meth:`cost` refuses until a prediction completes."""
        with self._driving(steps) as rounds:
            for _ in rounds:
                self._fetch_pending()
        self._other_costs = other_costs
        return rounds.result

    async def arun(self, steps: ReadSteps, other_costs: Callable[[], np.ndarray] | None = None
                   ) -> Any:
        """The awaitable form of :meth:`run`: each round's calls run concurrently."""
        with self._driving(steps) as rounds:
            for _ in rounds:
                await self._afetch_pending()
        self._other_costs = other_costs
        return rounds.result

    @contextlib.contextmanager
    def _driving(self, steps: ReadSteps) -> Iterator[_Rounds]:
        """What :meth:`run` and :meth:`arun` share: the prediction marked incomplete
        until it ends without an error; ``steps`` closed and what it left registered
        unrequested, however it ends."""
        self._incomplete, self._other_costs = True, None
        try:
            yield _Rounds(steps)
        finally:
            steps.close()
            self._cancel_pending()
        self._incomplete = False

    def first_requests(self, steps: ReadSteps) -> list[int]:
        """The features ``steps`` registers first (those to acquire next), sorted; [] when
        it completes without needing any."""
        try:
            for _ in steps:
                if self._pending:
                    return sorted({feature for features, _ in self._pending
                                   for feature in features.tolist()})
            return []
        finally:
            steps.close()
            self._cancel_pending()

    # -- fetching ---------------------------------------------------------------------------
    def _cancel_pending(self) -> None:
        for features, rows in self._pending:
            self._status[np.ix_(rows, features)] = UNKNOWN
        self._pending.clear()

    def _fetch_pending(self) -> None:
        if not self._pending:
            return
        calls = self._plan_calls()
        tries = _Tries(len(calls), self.retries)
        while todo := tries.todo():
            tries.record(todo, self._attempt_calls([calls[k] for k in todo]))
        self._store_round(calls, tries)

    async def _afetch_pending(self) -> None:
        """The async twin of :meth:`_fetch_pending`: the round's calls run concurrently
        (a sync ``fetch`` in threads, so the event loop is not blocked)."""
        if not self._pending:
            return
        calls = self._plan_calls()
        tries = _Tries(len(calls), self.retries)
        while todo := tries.todo():
            tries.record(todo, await asyncio.gather(*(self._acall(*calls[k]) for k in todo)))
        self._store_round(calls, tries)

    def _attempt_calls(self, calls: list[tuple[list[int], np.ndarray]]
                       ) -> list[tuple[Any, BaseException | None]]:
        """One attempt of each call, as ``(result, exception)``: in this thread, or in
        a pool when they may overlap or have a timeout (a late call is left running in
        its thread, its result unread)."""
        if self.timeout is None and (self.max_workers == 1 or len(calls) == 1):
            return [_outcome(self._call, features, rows) for features, rows in calls]
        starts: dict[int, float] = {}

        def started(k: int) -> tuple[np.ndarray, float]:
            starts[k] = time.perf_counter()
            return self._call(*calls[k])

        pool = ThreadPoolExecutor(max_workers=min(self.max_workers, len(calls)))
        try:
            futures = [pool.submit(started, k) for k in range(len(calls))]
            return _collected(futures, starts, self.timeout,
                              lambda k: self._timeout_error(*calls[k]))
        finally:
            pool.shutdown(wait=self.timeout is None, cancel_futures=True)

    def _timeout_error(self, features: list[int], rows: np.ndarray) -> TimeoutError:
        return TimeoutError(f"cbudget.FeatureSource: fetch of feature(s) {features} on "
                            f"{rows.size} rows took more than {self.timeout:g} s")

    def _store_round(self, calls: list[tuple[list[int], np.ndarray]], tries: _Tries) -> None:
        """Write a round's results in call order (same logs as the sync path). A failed
        call writes nothing; with on_error="raise" its exception propagates after the
        others are stored, with "missing" its pairs become missing values."""
        round_index = self.n_rounds
        error = None
        for (features, rows), (result, exc), attempts in zip(calls, tries.outcomes,
                                                             tries.attempts):
            if exc is not None:
                if self.on_error == "raise" or isinstance(exc, AsyncFetchInSyncPath):
                    error = error or exc
                    continue
                block = np.ix_(rows, np.asarray(features))
                self._values[block] = np.nan
                self._status[block] = KNOWN
                self._degraded[block] = True
                self.failures.append(FetchFailure(tuple(features), rows.copy(),
                                                  _reason(exc), attempts, round_index))
                continue
            values, seconds = result
            if len(features) == 1:
                self._values[rows, features[0]] = values[:, 0]
                self._status[rows, features[0]] = KNOWN
            elif rows.size == 1:
                self._values[rows[0], features] = values[0]
                self._status[rows[0], features] = KNOWN
            else:
                block = np.ix_(rows, np.asarray(features))
                self._values[block] = values
                self._status[block] = KNOWN
            self.calls.append(FetchCall(tuple(features), int(rows.size), seconds, round_index,
                                        attempts))
        self._pending.clear()
        self.n_rounds += 1
        if error is not None:
            self._status[self._status == REQUESTED] = UNKNOWN
            raise error

    def _plan_calls(self) -> list[tuple[list[int], np.ndarray]]:
        """The round's calls, by feature: one per ungrouped feature with all its rows; for
        a cost group, one per set of its members that the same rows need."""
        assert self.cost_model is not None
        if self.merge_calls and len(self._pending) == 1:
            features, rows = self._pending[0]       # one block: one call
            return [(sorted(features.tolist()), rows)]
        if len(self._pending) == 1:
            features, rows = self._pending[0]
            rows_of = dict.fromkeys(features.tolist(), rows)
        else:
            by_feature: dict[int, list[np.ndarray]] = {}
            for features, rows in self._pending:
                for feature in features.tolist():
                    by_feature.setdefault(feature, []).append(rows)
            rows_of = {feature: parts[0] if len(parts) == 1
                       else np.sort(np.concatenate(parts))
                       for feature, parts in by_feature.items()}
        feature_group = self.cost_model.feature_group
        calls = [([feature], rows) for feature, rows in rows_of.items()
                 if feature_group[feature] < 0]
        for g in sorted({int(feature_group[m]) for m in rows_of} - {-1}):
            members = [m for m in sorted(rows_of) if feature_group[m] == g]
            if all(rows_of[m] is rows_of[members[0]] for m in members):
                calls.append((members, rows_of[members[0]]))    # one block: one pattern
                continue
            group_rows = np.unique(np.concatenate([rows_of[m] for m in members]))
            needs = np.column_stack([np.isin(group_rows, rows_of[m], assume_unique=True)
                                     for m in members])
            patterns, which = np.unique(needs, axis=0, return_inverse=True)
            for k, pattern in enumerate(patterns):
                calls.append(([m for m, needed in zip(members, pattern) if needed],
                              group_rows[which.ravel() == k]))
        if self.merge_calls and len(calls) > 1:
            calls = _merged_by_rows(calls)
        calls.sort(key=lambda call: call[0][0])
        return calls

    def _call(self, features: list[int], rows: np.ndarray) -> tuple[np.ndarray, float]:
        """One call of ``fetch``: its values (a float64 copy of their own, checked) and
        the seconds it took."""
        start = time.perf_counter()
        try:
            result = self.fetch(list(features), rows.copy())
            if inspect.isawaitable(result):
                getattr(result, "close", lambda: None)()
                raise AsyncFetchInSyncPath(
                    "cbudget.FeatureSource: fetch is asynchronous; use the awaitable "
                    "methods (await model.apredict(source), ...)")
        except Exception as exc:
            note = (f"cbudget.FeatureSource: fetch failed for feature(s) {features} on "
                    f"{rows.size} rows")
            if hasattr(exc, "add_note"):
                exc.add_note(note)
            raise
        return self._checked(result, features, rows, start)

    async def _acall(self, features: list[int], rows: np.ndarray
                     ) -> tuple[Any, BaseException | None]:
        """One attempt of a call on the event loop, as ``(result, exception)``; a late
        one is cancelled (a sync ``fetch``'s thread goes on, its result unread)."""
        start = time.perf_counter()
        try:
            try:
                result = await asyncio.wait_for(
                    awaited_fetch(self.fetch, list(features), rows.copy()), self.timeout)
            except asyncio.TimeoutError:
                return None, self._timeout_error(features, rows)
            return self._checked(result, features, rows, start), None
        except Exception as exc:  # noqa: BLE001 - handled by the round (on_error)
            return None, exc

    def _checked(self, result: Any, features: list[int], rows: np.ndarray,
                 start: float) -> tuple[np.ndarray, float]:
        seconds = time.perf_counter() - start
        # Copied now, before the round's next call: a fetch may return a view of a buffer
        # it reuses (preallocated arrays, database cursors), which that call overwrites.
        return _copied_values(result, features, rows.size, self._levels), seconds


def _merged_by_rows(calls: list[tuple[list[int], np.ndarray]]
                    ) -> list[tuple[list[int], np.ndarray]]:
    """Calls for the same rows as one call of their features (sorted)."""
    merged: dict[bytes, tuple[list[int], np.ndarray]] = {}
    for features, rows in calls:
        key = rows.tobytes()
        if key in merged:
            merged[key][0].extend(features)
        else:
            merged[key] = (list(features), rows)
    return [(sorted(features), rows) for features, rows in merged.values()]


def _copied_values(result: Any, features: list[int], n_rows: int,
                   levels: Mapping[int, list] | None = None) -> np.ndarray:
    """What a fetch returned, as a new float64 array of shape (n_rows, len(features)),
    the categorical features of ``levels`` mapped to codes; ValueError naming the call
    when it is not numbers (or levels) of that shape."""
    if type(result) is np.ndarray and result.dtype == np.float64 \
            and result.shape == (n_rows, len(features)) \
            and (not levels or not any(m in levels for m in features)):
        return result.copy()            # the common case, without the checks' set-up
    what = f"fetch(features={features}, rows=<{n_rows} rows>)"
    try:
        array = np.asarray(result)
    except Exception as exc:  # noqa: BLE001 - report any conversion failure clearly
        raise ValueError(f"{what} returned something that is not an array: {exc}") from None
    levels = levels or {}
    if (array.dtype.kind == "O" or any(m in levels for m in features)) \
            and array.shape == (n_rows, len(features)):
        # column by column: a categorical feature's levels to codes, the others' numbers
        codes = np.empty(array.shape)
        for j, m in enumerate(features):
            if m in levels:
                codes[:, j] = encode_column(array[:, j], f"{what}, feature {m}", levels[m],
                                            check=False)
                continue
            try:
                codes[:, j] = as_numbers(array[:, j])   # None, NaN, pandas' NA: missing
            except (TypeError, ValueError):
                raise ValueError(f"{what} returned values of dtype {array.dtype} that are "
                                 f"not numbers for feature {m}, which has no levels (it "
                                 "takes numbers, or integer codes)") from None
        return codes
    if array.dtype.kind not in "biuf":
        raise ValueError(f"{what} returned values of dtype {array.dtype}: numbers expected")
    if array.shape != (n_rows, len(features)):
        raise ValueError(f"{what} returned shape {array.shape}, expected "
                         f"({n_rows}, {len(features)})")
    return np.array(array, dtype=np.float64, copy=True)


class _Rounds:
    """Iterating over it advances ``steps`` to its next round of fetches; when it is
    done, :attr:`result` is what it returned."""

    def __init__(self, steps: ReadSteps) -> None:
        self.steps = steps
        self.result: Any = None

    def __iter__(self) -> Iterator[None]:
        self.result = yield from self.steps


class AsyncFetchInSyncPath(TypeError):
    """An ``async def`` fetch used by a synchronous prediction method: a usage error,
    raised whatever ``on_error`` says."""


class _Tries:
    """The attempts of a round's calls: which still need one (failed, with retries
    left), and the last outcome ``(result, exception)`` and number of attempts of each."""

    def __init__(self, n_calls: int, retries: int) -> None:
        self.outcomes: list[tuple[Any, BaseException | None]] = [(None, None)] * n_calls
        self.attempts = [0] * n_calls
        self.limit = retries + 1

    def todo(self) -> list[int]:
        return [k for k, (result, exc) in enumerate(self.outcomes)
                if (self.attempts[k] == 0 or exc is not None) and self.attempts[k] < self.limit
                and not isinstance(exc, AsyncFetchInSyncPath)]

    def record(self, todo: list[int], outcomes: Sequence[tuple[Any, BaseException | None]]
               ) -> None:
        for k, outcome in zip(todo, outcomes):
            self.outcomes[k] = outcome
            self.attempts[k] += 1


async def awaited_fetch(fetch: Callable, *args: Any) -> Any:
    """The result of ``fetch(*args)`` on the event loop: awaited when ``fetch`` is
    ``async def``; else run in a thread (the loop goes on), an awaitable it returns
    (an object with an ``async def __call__``) then awaited."""
    if inspect.iscoroutinefunction(fetch):
        return await fetch(*args)
    result = await asyncio.to_thread(fetch, *args)
    if inspect.isawaitable(result):
        result = await result
    return result


def _collected(futures: list[Future], starts: dict[int, float], timeout: float | None,
               timeout_error: Callable[[int], TimeoutError]
               ) -> list[tuple[Any, BaseException | None]]:
    """``(result, exception)`` of each future; one running longer than ``timeout`` since
    its start (``starts``, set by its worker) is left and counts as ``timeout_error(k)``."""
    out: list[tuple[Any, BaseException | None]] = [(None, None)] * len(futures)
    left = set(range(len(futures)))
    while left:
        now = time.perf_counter()
        for k in sorted(left):
            if futures[k].done():
                out[k] = _outcome(futures[k].result)
                left.discard(k)
            elif timeout is not None and k in starts and now - starts[k] >= timeout:
                out[k] = (None, timeout_error(k))
                left.discard(k)
        if left:
            due = [starts[k] + timeout - now for k in left if k in starts] \
                if timeout is not None else []
            wait([futures[k] for k in left], return_when=FIRST_COMPLETED,
                 timeout=max(min(due), 1e-4) if due else timeout)
    return out


def _reason(exc: BaseException) -> str:
    """Why a call failed, for :class:`FetchFailure`."""
    return str(exc) if isinstance(exc, TimeoutError) else f"{type(exc).__name__}: {exc}"


def _outcome(call: Callable[..., Any], *args: Any) -> tuple[Any, BaseException | None]:
    """(result, None) or (None, the exception) of ``call(*args)``."""
    try:
        return call(*args), None
    except Exception as exc:  # noqa: BLE001 - re-raised by the caller after the round
        return None, exc


def global_node_ids(tree_offsets: np.ndarray, nodes: np.ndarray) -> np.ndarray:
    """Packed prediction nodes of trees back to back (as ``TreeEnsemble.packed_trees``
    gives them) with their children as global ids (shifted by their tree's offset): the
    layout :func:`walk_trees` follows."""
    if tree_offsets[-1] >= np.iinfo(np.int32).max:
        raise ValueError("too many tree nodes for on-demand prediction (2**31)")
    out = nodes.copy()
    shift = np.repeat(tree_offsets[:-1], np.diff(tree_offsets)).astype(np.int32)
    inner = out["left"] != -1
    out["left"][inner] += shift[inner]
    out["right"][inner] += shift[inner]
    return out


def root_features(tree_offsets: np.ndarray, nodes: np.ndarray) -> np.ndarray:
    """The features the roots of the packed trees split on (sorted, int64): what every
    input needs first."""
    roots = nodes[tree_offsets[:-1]]
    return np.unique(roots["feature"][roots["left"] != -1]).astype(np.int64)


def walk_trees(source: FeatureSource, rows: np.ndarray, tree_offsets: np.ndarray,
               nodes: np.ndarray, n_threads: int = 1,
               cat_words: np.ndarray | None = None,
               first_features: np.ndarray | None = None) -> ReadSteps:
    """Read steps of trees (``nodes``: from :func:`global_node_ids`) for the inputs
    ``rows`` (ascending), all trees together: each step takes every input down every
    tree as far as its known features allow (``cat_words``: the bitsets of categorical
    splits, ``TreeEnsemble.cat_words``; ``first_features``: :func:`root_features` of
    the trees, which a model computes once). Returns the tree-local leaf each input reaches,
    int32 (len(rows), n_trees)."""
    n_trees = tree_offsets.shape[0] - 1
    n_features = source.values.shape[1]
    node_of = np.zeros((rows.size, n_trees), dtype=np.int32)
    if rows.size == 0 or n_trees == 0:
        return node_of
    tree_of = np.tile(np.arange(n_trees, dtype=np.int32), (rows.size, 1))
    cursor = np.tile(tree_offsets[:-1].astype(np.int32), (rows.size, 1))
    n_todo = np.full(rows.size, n_trees, dtype=np.int32)
    live = np.arange(rows.size, dtype=np.int64)
    capacity = max(1, min(n_trees, n_features))
    needs = np.empty((rows.size, capacity), dtype=np.int32)
    n_needs = np.empty(rows.size, dtype=np.int32)
    indptr = np.empty(n_features + 1, dtype=np.int64)
    request_rows = np.empty(rows.size * capacity, dtype=np.int64)
    # every input starts at every root: the first round asks for the roots' features
    # without walking (the requests a first walk step would make)
    if first_features is None:
        first_features = root_features(tree_offsets, nodes)
    source.request(rows, first_features)
    if source.has_pending():
        yield
    n_live = rows.size
    while n_live:
        threads = n_threads if n_live * n_trees >= PARALLEL_PAIRS else 1
        n_live, n_requests = walk_step(source.values, source._status, nodes,
                                       tree_offsets, rows, node_of, cursor, tree_of, n_todo,
                                       live, n_live, needs, n_needs, indptr, request_rows,
                                       threads, cat_words)
        if n_requests:
            features = np.flatnonzero(indptr[1:] > indptr[:-1])
            if rows.size == 1:          # one input: one block of all it needs
                source._pending.append((features, rows))
            else:
                source._pending.extend(
                    (features[j:j + 1], request_rows[indptr[f]:indptr[f + 1]].copy())
                    for j, f in enumerate(features.tolist()))
        if n_live:
            yield
    return node_of


def in_lockstep(*steps: ReadSteps) -> ReadSteps:
    """Read steps of several parts advanced together, one step each per round; returns
    the list of what each returned."""
    results: list[Any] = [None] * len(steps)
    live: list[tuple[int, Iterator[None]]] = list(enumerate(steps))
    while live:
        still = []
        for index, part in live:
            try:
                next(part)
            except StopIteration as done:
                results[index] = done.value
            else:
                still.append((index, part))
        live = still
        if live:
            yield
    return results
