"""Serving under load (issue 45): the example service of examples/serving/ (Starlette +
uvicorn, the expensive features in SQLite read through aiosqlite, every read delayed by
``--delay-ms``, default 10 ms) answering N concurrent closed-loop HTTP clients.

Ways, each an endpoint of the service:

* ``batched``: ``cbudget.serving.Predictor`` (on demand, concurrent requests share reads);
* ``upfront``: every expensive feature the model uses read first (one read per feature,
  concurrently), then ``predict`` (what a service does without on-demand prediction);
* ``sync``: a synchronous ``FeatureSource`` per request, one read at a time (the
  baseline: one request at a time, synchronous fetching).

For each way and N: throughput, p50 / p99 latency, database reads per request (the
service's count), rounds per request, mean feature cost per request and accuracy; every
answer is checked equal to eager ``predict`` on the same row. Then faults runs: 5 % of
reads fail and 5 % hang (2 s) with ``timeout`` 0.1 s, ``on_error="missing"`` and 0 or 1
retry: requests answered, degraded, and the degraded predictions against the same inputs
predicted with every feature. The server runs in a subprocess (one core), the client
here (the other).

    PYTHONPATH=. python benchmarks/bench_serving_load.py --output benchmarks/results/serving_load.md
"""
from __future__ import annotations

import argparse
import asyncio
import importlib.util
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import harness as h
import numpy as np

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "serving"


def _load(name):
    spec = importlib.util.spec_from_file_location(name, EXAMPLE / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


app = _load("app")
load_test = _load("load_test")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """The example service in a subprocess."""

    def __init__(self, db, model_path, delay_ms, *extra):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.process = subprocess.Popen(
            [sys.executable, str(EXAMPLE / "app.py"), "--db", str(db), "--model",
             str(model_path), "--port", str(self.port), "--fetch-delay-ms", str(delay_ms),
             *extra], env=os.environ.copy())
        deadline = time.time() + 60
        while time.time() < deadline:
            try:
                self.stats()
                return
            except OSError:
                time.sleep(0.2)
        self.process.kill()
        raise RuntimeError("the service did not start")

    def stats(self):
        import urllib.request
        with urllib.request.urlopen(f"{self.url}/stats", timeout=5) as response:
            return json.load(response)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.process.terminate()
        self.process.wait(30)


def run_point(server, way, n_clients, n_requests, ids, Xs, names):
    endpoint = {"batched": "predict", "upfront": "predict_upfront", "sync": "predict_sync"}[way]
    cheap = [names.index(name) for name in app.CHEAP]

    def body(k):
        i = int(ids[k % len(ids)])
        return {"id": i, "known": {names[m]: float(Xs[i, m]) for m in cheap}}

    before = server.stats()
    out = asyncio.run(load_test.run_load(server.url, endpoint, body, n_clients, n_requests))
    after = server.stats()
    reads = sum(after["reads"].values()) - sum(before["reads"].values())
    answered = [a for a in out["answers"] if a is not None]
    return {"way": way, "clients": n_clients, "requests": n_requests,
            "throughput": out["throughput"], "p50_ms": out["p50_ms"], "p99_ms": out["p99_ms"],
            "answered": len(answered), "errors": len(out["errors"]),
            "reads_per_request": reads / n_requests,
            "rounds_per_request": float(np.mean([a.get("rounds", 1) for a in answered])),
            "mean_cost": float(np.mean([a["cost"] for a in answered])),
            "ids": [int(ids[k % len(ids)]) for k in range(n_requests)],
            "predictions": [a["prediction"] if a else None for a in out["answers"]],
            "degraded": [bool(a.get("degraded")) if a else None for a in out["answers"]]}


def spread(values):
    values = sorted(values)
    return f"{np.median(values):.0f} ({values[0]:.0f}-{values[-1]:.0f})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--delay-ms", type=float, default=10.0)
    parser.add_argument("--clients", default="1,10,100,1000")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--quick", action="store_true", help="few requests (a smoke run)")
    parser.add_argument("--busy", type=int, default=0,
                        help="processes spinning on a core for the whole run (other work)")
    parser.add_argument("--output", type=Path, default=None)
    args = parser.parse_args()
    started = time.time()
    clients = [int(n) for n in args.clients.split(",")]
    tmp = Path(tempfile.mkdtemp(prefix="cbudget-serving-"))
    model_path, db = tmp / "model.json", tmp / "features.db"
    model = app.train_model(model_path)
    _, _, Xs, ys, names = app.letters_split()
    app.build_database(db, Xs)
    eager = model.predict(Xs)
    ids = np.random.default_rng(0).permutation(len(Xs))

    def n_requests(way, n):
        if args.quick:
            return max(n, 20)
        base = 60 if way == "sync" else 200
        return max(base, 3 * n)

    spinners = [subprocess.Popen([sys.executable, "-c", "while True: pass"])
                 for _ in range(args.busy)]
    try:
        points, faults = measure(args, clients, db, model_path, ids, Xs, ys, names, eager,
                                 n_requests)
    finally:
        for spinner in spinners:
            spinner.kill()
    report(args, started, model, Xs, ys, eager, points, faults)


def measure(args, clients, db, model_path, ids, Xs, ys, names, eager, n_requests):
    """The load points (interleaved repeats) and the faults runs."""
    plan = [(way, n) for n in clients for way in ("batched", "upfront")] \
        + [("sync", n) for n in clients if n <= 10]
    points: dict = {}
    with Server(db, model_path, args.delay_ms) as server:
        for repeat in range(args.repeats):                  # interleaved repeats
            for way, n in plan:
                point = run_point(server, way, n, n_requests(way, n), ids, Xs, names)
                got = np.array(point["predictions"], dtype=float)
                if point["errors"] or not np.array_equal(got, eager[point["ids"]]):
                    raise AssertionError(f"{way} N={n}: answers differ from eager predict "
                                         f"({point['errors']} errors)")
                point["accuracy"] = float(np.mean((got > 0.5) == ys[point["ids"]]))
                points.setdefault((way, n), []).append(point)
                print(f"# {way:8s} N={n:5d} repeat {repeat}: {point['throughput']:8.1f} "
                      f"req/s p50 {point['p50_ms']:.1f} ms, reads/request "
                      f"{point['reads_per_request']:.2f}", flush=True)

    faults = []
    for retries in (0, 1):
        fault_args = ["--fail-rate", "0.05", "--hang-rate", "0.05", "--timeout", "0.1",
                      "--on-error", "missing", "--retries", str(retries)]
        with Server(db, model_path, args.delay_ms, *fault_args) as server:
            for repeat in range(args.repeats):
                point = run_point(server, "batched", 100, 50 if args.quick else 1000, ids,
                                  Xs, names)
                point.update(retries=retries, repeat=repeat)
                faults.append(point)
                print(f"# faults retries={retries} repeat {repeat}: answered "
                      f"{point['answered']}/{point['requests']}, degraded "
                      f"{sum(map(bool, point['degraded']))}", flush=True)
    return points, faults


def report(args, started, model, Xs, ys, eager, points, faults):

    lines = ["# Serving under load: the example service, N concurrent clients", "",
             "Command:", "", "```", h.command_line(), "```", "",
             f"Machine: {h.machine_info(())}", "",
             f"Total wall time: {(time.time() - started) / 60:.1f} min. Model: "
             f"{type(model).__name__} CEGB on Letters (A-M vs N-Z), "
             f"{len(model.trees)} trees; {len(Xs)} served rows in SQLite; every read "
             f"delayed {args.delay_ms:g} ms; {args.busy} other processes spinning. "
             f"Repeats: {args.repeats} (interleaved); "
             "throughput as median (min-max); latencies and counts of the last repeat. "
             "Every answer checked equal to eager predict on the row.", "",
             "| way | clients | requests | throughput req/s | p50 ms | p99 ms | "
             "reads / request | rounds / request | mean feature cost | accuracy |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for (way, n), reps in points.items():
        last = reps[-1]
        lines.append(f"| {way} | {n} | {last['requests']} | "
                     f"{spread([r['throughput'] for r in reps])} | {last['p50_ms']:.1f} | "
                     f"{last['p99_ms']:.1f} | {last['reads_per_request']:.2f} | "
                     f"{last['rounds_per_request']:.2f} | {last['mean_cost']:.2f} | "
                     f"{last['accuracy']:.4f} |")
    base = np.median([r["throughput"] for r in points.get(("sync", 1), [{"throughput": 0}])])
    best = np.median([r["throughput"] for r in points.get(("batched", 100), [{"throughput": 0}])])
    if base:
        lines += ["", f"Batched at 100 clients against sync one request at a time: "
                      f"**{best / base:.1f}x** the throughput."]
    lines += ["", "Faults (batched, 100 clients, 5 % of reads fail, 5 % hang 2 s; timeout "
              "0.1 s, on_error='missing'):", "",
              "| retries | repeat | requests | answered | errors | degraded | agree with "
              "full-feature predict (degraded) | accuracy (degraded) | accuracy with every "
              "feature (same inputs) | throughput req/s | p99 ms |",
              "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for point in faults:
        degraded = np.array([bool(d) for d in point["degraded"]])
        got = np.array([np.nan if p is None else p for p in point["predictions"]])
        rows = np.array(point["ids"])
        full = eager[rows]
        agree = np.mean((got[degraded] > 0.5) == (full[degraded] > 0.5)) if degraded.any() \
            else float("nan")
        acc_degraded = np.mean((got[degraded] > 0.5) == ys[rows][degraded]) \
            if degraded.any() else float("nan")
        acc_full = np.mean((full[degraded] > 0.5) == ys[rows][degraded]) if degraded.any() \
            else float("nan")
        lines.append(f"| {point['retries']} | {point['repeat']} | {point['requests']} | "
                     f"{point['answered']} | {point['errors']} "
                     f"| {int(degraded.sum())} | {agree:.4f} | {acc_degraded:.4f} | "
                     f"{acc_full:.4f} | {point['throughput']:.1f} | {point['p99_ms']:.1f} |")
    text = "\n".join(lines) + "\n"
    print(text)
    if args.output:
        args.output.write_text(text)
        print(f"# wrote {args.output}")


if __name__ == "__main__":
    main()
