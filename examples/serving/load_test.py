"""A bounded local load test of the example service (app.py beside this file).

``--clients`` closed-loop clients (each sends its next request when the previous one is
answered) share one aiohttp session limited to that many connections, until
``--requests`` requests are answered; prints the throughput and the latency percentiles.
(aiohttp rather than httpx here: httpx's client took about 10 ms of CPU per request at
100 connections, so the client, not the service, was measured.)::

    python examples/serving/load_test.py --url http://127.0.0.1:8000 --clients 100
"""
from __future__ import annotations

import argparse
import asyncio
import json
import time
from collections.abc import Callable

import aiohttp
import numpy as np


async def run_load(url: str, endpoint: str, bodies: Callable[[int], dict], n_clients: int,
                   n_requests: int, timeout: float = 60.0) -> dict:
    """Send ``n_requests`` (``bodies(k)``: the k-th request's JSON) from ``n_clients``
    concurrent clients; returns throughput, latencies and the answers, in request order.
    A request that fails (HTTP error, connection error) is counted, never dropped."""
    answers: list[dict | None] = [None] * n_requests
    latencies = np.zeros(n_requests)
    errors: list[str] = []
    next_request = iter(range(n_requests))

    async def client(http: aiohttp.ClientSession) -> None:
        for k in next_request:
            start = time.perf_counter()
            try:
                async with http.post(f"{url}/{endpoint}", json=bodies(k)) as response:
                    response.raise_for_status()
                    answers[k] = await response.json()
            except (aiohttp.ClientError, asyncio.TimeoutError) as exc:
                errors.append(f"{type(exc).__name__}: {exc}")
            latencies[k] = time.perf_counter() - start

    connector = aiohttp.TCPConnector(limit=n_clients)
    async with aiohttp.ClientSession(connector=connector,
                                     timeout=aiohttp.ClientTimeout(total=timeout)) as http:
        start = time.perf_counter()
        await asyncio.gather(*(client(http) for _ in range(n_clients)))
        wall = time.perf_counter() - start
    return {"wall_s": wall, "throughput": n_requests / wall,
            "p50_ms": 1e3 * float(np.quantile(latencies, 0.5)),
            "p99_ms": 1e3 * float(np.quantile(latencies, 0.99)),
            "answers": answers, "errors": errors}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--url", default="http://127.0.0.1:8000")
    parser.add_argument("--endpoint", default="predict",
                        choices=("predict", "predict_upfront", "predict_sync"))
    parser.add_argument("--clients", type=int, default=10)
    parser.add_argument("--requests", type=int, default=1000)
    parser.add_argument("--ids", type=int, default=4000, help="ids 0..ids-1 are asked")
    args = parser.parse_args()
    out = asyncio.run(run_load(args.url, args.endpoint,
                               lambda k: {"id": (k * 7919) % args.ids}, args.clients,
                               args.requests))
    answered = [a for a in out["answers"] if a is not None]
    summary = {key: round(out[key], 2) for key in ("wall_s", "throughput", "p50_ms", "p99_ms")}
    summary.update(answered=len(answered), errors=len(out["errors"]),
                   mean_cost=round(float(np.mean([a["cost"] for a in answered])), 3)
                   if answered else None)
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
