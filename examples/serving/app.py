"""A small prediction service whose expensive features live in a database.

The model: CEGB on the UCI Letters data set that ships with cbudget (letters A-M against
N-Z). The four box features (``x-box``, ``y-box``, ``width``, ``high``) are cheap and come
in the request; the twelve others cost 1 each and are read from SQLite, through the async
driver aiosqlite, only when the input's paths need them. Concurrent requests share their
reads (:class:`cbudget.serving.Predictor`): each round of a batch makes one query per
feature for every waiting input that needs it.

Endpoints (JSON)::

    POST /predict          {"id": 123, "known": {"x-box": 4, ...}}   batched, on demand
    POST /predict_upfront  same body: every feature the model uses read first, then predict
    POST /predict_sync     same body: a synchronous FeatureSource for this request alone
    GET  /stats            requests and database reads of each endpoint

Run (from the repository root; ``pip install starlette uvicorn aiosqlite``)::

    python examples/serving/app.py --db /tmp/letters.db --fetch-delay-ms 10
    python examples/serving/load_test.py --url http://127.0.0.1:8000 --clients 100

``--fetch-delay-ms`` adds that much latency to every database read (a remote feature
store's round trip); ``--fail-rate`` and ``--hang-rate`` make that share of reads fail or
hang (with ``--on-error missing --timeout``: answered without the feature, ``degraded``).
See README.md beside this file.
"""
from __future__ import annotations

import argparse
import asyncio
import contextlib
import random
import sqlite3
import threading
import time
from pathlib import Path

import aiosqlite
import numpy as np
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

import cbudget

CHEAP = ["x-box", "y-box", "width", "high"]       # sent in the request body
CHEAP_COST, EXPENSIVE_COST = 0.1, 1.0
N_TRAIN = 16_000                                  # the rest of Letters is the served set


def letters_split():
    """Letters as a binary task (A-M against N-Z): (X_train, y_train, X_served, y_served,
    feature names), the served rows being the ones the database holds."""
    X, y, names = cbudget.datasets.load_letters()
    y = (y >= 13).astype(np.float64)
    order = np.random.default_rng(0).permutation(len(y))
    train, served = order[:N_TRAIN], order[N_TRAIN:]
    return X[train], y[train], X[served], y[served], names


def train_model(path: Path | None = None, rounds: int = 100) -> cbudget.Booster:
    """The CEGB model (loaded from ``path`` when it exists, else trained and saved there)."""
    if path is not None and path.exists():
        return cbudget.load_model(path)
    X, y, _, _, names = letters_split()
    costs = [CHEAP_COST if name in CHEAP else EXPENSIVE_COST for name in names]
    model = cbudget.train({"algorithm": "cegb", "objective": "binary:logistic",
                           "num_leaves": 31, "learning_rate": 0.1, "cost_tradeoff": 0.01,
                           "n_jobs": 1, "verbosity": 0},
                          cbudget.Dataset(X, y, feature_costs=costs, feature_names=names),
                          rounds, verbose_eval=False)
    if path is not None:
        model.save_model(path)
    return model


def build_database(path: Path, X: np.ndarray) -> None:
    """Table ``features``: one row per entity (id = row of X), a column f<m> per feature."""
    path.unlink(missing_ok=True)
    columns = ", ".join(f"f{m} REAL" for m in range(X.shape[1]))
    with sqlite3.connect(path) as db:
        db.execute(f"CREATE TABLE features (id INTEGER PRIMARY KEY, {columns})")
        marks = ", ".join("?" * (X.shape[1] + 1))
        db.executemany(f"INSERT INTO features VALUES ({marks})",
                       [(i, *map(float, row)) for i, row in enumerate(X)])


def _query(features: list[int], ids: list[int]) -> tuple[str, list[int]]:
    wanted = ", ".join(f"f{m}" for m in features)
    return f"SELECT id, {wanted} FROM features WHERE id IN ({', '.join('?' * len(ids))})", ids


def _in_order(found, ids: list[int], n_features: int) -> np.ndarray:
    """The rows of a query in the order of ``ids`` (SQL gives no order); an unknown id:
    missing values."""
    by_id = {row[0]: row[1:] for row in found}
    missing = (None,) * n_features
    return np.array([by_id.get(i, missing) for i in ids], dtype=np.float64)


class Faults:
    """Injected faults: a share of the reads fail, another share hang (seeded)."""

    def __init__(self, fail_rate: float = 0.0, hang_rate: float = 0.0, hang_s: float = 2.0,
                 seed: int = 0) -> None:
        self.fail_rate, self.hang_rate, self.hang_s = fail_rate, hang_rate, hang_s
        self.random = random.Random(seed)

    def draw(self) -> str | None:
        u = self.random.random()
        if u < self.fail_rate:
            return "fail"
        return "hang" if u < self.fail_rate + self.hang_rate else None


class FeatureDatabase:
    """Reads of the features table: async for the event loop (one aiosqlite connection
    per event loop: aiosqlite runs it in a thread of its own, and asyncio objects belong
    to one loop), sync for worker threads (one sqlite3 connection per thread: SQLite
    objects can only be used in the thread that made them)."""

    def __init__(self, path: Path, delay_ms: float = 0.0, faults: Faults | None = None):
        self.path, self.delay = path, delay_ms / 1000
        self.faults = faults or Faults()
        self.reads = {"async": 0, "sync": 0}
        self._connection: aiosqlite.Connection | None = None
        self._opening = asyncio.Lock()
        self._local = threading.local()

    async def connection(self) -> aiosqlite.Connection:
        async with self._opening:
            if self._connection is None:
                self._connection = await aiosqlite.connect(self.path)
        return self._connection

    async def read(self, features: list[int], ids: list[int]) -> np.ndarray:
        self.reads["async"] += 1
        fault = self.faults.draw()
        await asyncio.sleep(self.delay + (self.faults.hang_s if fault == "hang" else 0.0))
        if fault == "fail":
            raise ConnectionError("feature database unavailable")
        db = await self.connection()
        async with db.execute(*_query(features, ids)) as cursor:
            found = await cursor.fetchall()
        return _in_order(found, ids, len(features))

    def read_sync(self, features: list[int], ids: list[int]) -> np.ndarray:
        self.reads["sync"] += 1
        if not hasattr(self._local, "db"):
            self._local.db = sqlite3.connect(self.path)
        time.sleep(self.delay)
        return _in_order(self._local.db.execute(*_query(features, ids)).fetchall(), ids,
                         len(features))

    async def close(self) -> None:
        if self._connection is not None:
            await self._connection.close()
            self._connection = None


def make_app(model: cbudget.Model, database: FeatureDatabase, *, max_batch: int = 256,
             max_wait_ms: float = 2.0, timeout: float | None = None,
             on_error: str = "raise", retries: int = 0) -> Starlette:
    """The service: see the module docstring."""
    predictor = cbudget.serving.Predictor(
        model, database.read, max_batch=max_batch, max_wait_ms=max_wait_ms, timeout=timeout,
        on_error=on_error, retries=retries)
    used = model.used_features().tolist()
    expensive_used = [m for m in used if model.feature_names[m] not in CHEAP]
    counts = {"predict": 0, "predict_upfront": 0, "predict_sync": 0}

    async def body(request: Request) -> tuple[int, dict]:
        payload = await request.json()
        return int(payload["id"]), dict(payload.get("known") or {})

    async def predict(request: Request) -> JSONResponse:
        key, known = await body(request)
        counts["predict"] += 1
        result = await predictor.predict_one(key, known)
        return JSONResponse({"id": key, "prediction": result.value, "cost": result.cost,
                             "fetched": list(result.fetched), "degraded": result.degraded,
                             "missing": [list(pair) for pair in result.missing],
                             "batch_size": result.batch_size, "rounds": result.rounds,
                             "calls": result.calls})

    async def predict_upfront(request: Request) -> JSONResponse:
        # the usual way: read every expensive feature the model uses (one query per
        # feature, concurrently, as the on-demand rounds do), then predict on the row
        key, known = await body(request)
        counts["predict_upfront"] += 1
        columns = await asyncio.gather(*(database.read([m], [key]) for m in expensive_used))
        x = np.full((1, len(model.feature_names)), np.nan)
        for m, column in zip(expensive_used, columns):
            x[0, m] = column[0, 0]
        for name, value in known.items():
            x[0, model.feature_names.index(name)] = value
        acquired = np.zeros_like(x, dtype=bool)
        acquired[0, expensive_used] = True
        cost = float(model.cost_model.acquisition_costs(acquired)[0])
        return JSONResponse({"id": key, "prediction": float(model.predict(x)[0]),
                             "cost": cost, "calls": len(expensive_used)})

    def predict_sync(key: int, known: dict) -> dict:
        source = cbudget.FeatureSource(
            lambda features, rows: database.read_sync(features, [key]), 1,
            known={name: [value] for name, value in known.items()})
        prediction = float(model.predict(source)[0])
        return {"id": key, "prediction": prediction, "cost": float(source.cost()[0]),
                "rounds": source.n_rounds, "calls": len(source.calls)}

    async def predict_sync_endpoint(request: Request) -> JSONResponse:
        # the synchronous FeatureSource, in a worker thread (as a threaded server would)
        key, known = await body(request)
        counts["predict_sync"] += 1
        return JSONResponse(await asyncio.to_thread(predict_sync, key, known))

    async def stats(request: Request) -> JSONResponse:
        s = predictor.stats
        return JSONResponse({"requests": counts, "reads": database.reads,
                             "predictor": {"requests": s.requests, "batches": s.batches,
                                           "calls": s.calls, "rounds": s.rounds,
                                           "degraded": s.degraded, "failed": s.failed}})

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette):
        yield
        await predictor.aclose()          # the waiting requests are answered first
        await database.close()

    return Starlette(routes=[Route("/predict", predict, methods=["POST"]),
                             Route("/predict_upfront", predict_upfront, methods=["POST"]),
                             Route("/predict_sync", predict_sync_endpoint, methods=["POST"]),
                             Route("/stats", stats)],
                     lifespan=lifespan)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--db", type=Path, default=Path("letters-features.db"),
                        help="the SQLite file (built from the served rows when missing)")
    parser.add_argument("--model", type=Path, default=None,
                        help="model file (trained and saved there when missing)")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--fetch-delay-ms", type=float, default=0.0)
    parser.add_argument("--fail-rate", type=float, default=0.0)
    parser.add_argument("--hang-rate", type=float, default=0.0)
    parser.add_argument("--timeout", type=float, default=None, help="seconds per read")
    parser.add_argument("--on-error", choices=("raise", "missing"), default="raise")
    parser.add_argument("--retries", type=int, default=0)
    parser.add_argument("--max-batch", type=int, default=256)
    parser.add_argument("--max-wait-ms", type=float, default=2.0)
    args = parser.parse_args()
    import uvicorn  # only to run the server

    model = train_model(args.model)
    if not args.db.exists():
        build_database(args.db, letters_split()[2])
    database = FeatureDatabase(args.db, args.fetch_delay_ms,
                               Faults(args.fail_rate, args.hang_rate))
    app = make_app(model, database, max_batch=args.max_batch, max_wait_ms=args.max_wait_ms,
                   timeout=args.timeout, on_error=args.on_error, retries=args.retries)
    uvicorn.run(app, host=args.host, port=args.port, log_level="warning")


if __name__ == "__main__":
    main()
