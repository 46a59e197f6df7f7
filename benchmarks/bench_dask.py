"""cbudget.dask on a LocalCluster against single-process cbudget and lightgbm.dask, on
the same synthetic data (issues 25 and 49):

    python benchmarks/bench_dask.py --rows 500000 5000000 --rounds 30 --repeats 3 \
        --output benchmarks/results/dask.md

Per data size a fresh cluster of 2 worker processes x 1 thread (the single-process runs
use 2 threads). Per system and repeat (interleaved, the machine is shared): training
wall time for gbdt and cegb (cbudget; LightGBM's gbdt and its CEGB with the same costs,
rounds and leaves), and scoring wall time. cbudget.dask's traffic per round (its
``traffic``): the driver's round trips, the sums among the workers, the bytes a worker
sends, the bytes the driver receives. Memory per worker: the float rows it holds, the
shard's arrays, and the peak resident size sampled during its first training (before
lightgbm.dask has run in it) and during lightgbm.dask's first training.

Projection (a model on paper, calibrated by these runs; its terms printed with it) of
the time per tree and the driver's traffic per tree on W = 10, 100 and 1,000 workers for
100M rows, for this design (workers sum among themselves by recursive doubling) and for
a driver-centred one (the driver receives every worker's block per split):

* compute per tree = c x rows / W, with c the core-seconds per row of a round measured
  single-process at the largest size run (2 threads: 2 cores' worth);
* this design: (splits + 3) sums per tree, each ceil(log2 W) swaps of one packed block
  (b bytes) with a peer over the network, plus o, the seconds one sum took in these
  runs (cbudget.dask's ``peer_seconds`` per sum: Python, one loopback swap and waiting
  for the slower worker, so the network time is counted twice: an upper bound), plus
  one driver round trip (a) per tree;
* driver-centred: (splits + 4) driver round trips per tree, each a + W blocks received
  by the driver over its link + W block sums on the driver (s per block, measured);
* network: latency l per message and bandwidth B per link (10 GbE: 50 us, 1.25 GB/s;
  100 GbE: 10 us, 12.5 GB/s: assumed, not measured here); a measured on this cluster
  (an actor call to every worker at once).

This script starts its own clusters, so it does not use harness.main's child processes;
it writes the Markdown table and a JSON of every measurement beside it.
"""
import argparse
import json
import logging
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import harness  # noqa: E402

N_FEATURES = 28


def make_data(n_rows, seed=0):
    """A binary task with 28 features of rising cost; the informative ones are spread
    over cheap and costly features."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n_rows, N_FEATURES)).astype(np.float64)
    logit = (X[:, 0] + 0.8 * X[:, 5] - 0.6 * X[:, 10] ** 2 + 0.5 * X[:, 15] * X[:, 20]
             + 1.2 * X[:, 27] + 0.3 * np.sin(3 * X[:, 3]))
    y = (logit + rng.logistic(size=n_rows) > 0).astype(np.float64)
    costs = np.linspace(1.0, 10.0, N_FEATURES)
    return X, y, costs


def start_rss_sampler(dask_worker):
    """Sample this worker process's resident size every 5 ms until
    :func:`stop_rss_sampler` (state on the worker object: ``client.run`` ships these
    functions by value)."""
    import threading

    import psutil
    process = psutil.Process(os.getpid())
    state = {"peak": process.memory_info().rss, "running": True}

    def sample():
        while state["running"]:
            state["peak"] = max(state["peak"], process.memory_info().rss)
            time.sleep(0.005)
    state["thread"] = threading.Thread(target=sample, daemon=True)
    state["thread"].start()
    dask_worker.bench_rss_sampler = state
    return state["peak"]


def stop_rss_sampler(dask_worker):
    """The peak resident size since :func:`start_rss_sampler`."""
    state = dask_worker.bench_rss_sampler
    state["running"] = False
    state["thread"].join()
    return state["peak"]


def rss_now():
    import psutil
    return psutil.Process(os.getpid()).memory_info().rss


def import_libraries():
    import lightgbm  # noqa: F401

    import cbudget.dask  # noqa: F401


class Echo:
    """An actor answering at once: the driver's round trip to every worker."""

    def ping(self):
        return 0


def driver_round_trip(client, repeats=50):
    """Seconds of one call to an actor on every worker at once (median of repeats)."""
    workers = sorted(client.scheduler_info()["workers"])
    actors = [client.submit(Echo, actor=True, workers=[w], pure=False).result()
              for w in workers]
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for future in [actor.ping() for actor in actors]:
            future.result()
        times.append(time.perf_counter() - t0)
    return float(np.median(times))


def block_sum_seconds(nbytes, repeats=200):
    """Seconds to sum two histogram blocks of ``nbytes`` (cbudget.dask's sum_message)."""
    from cbudget._core._types import HISTOGRAM_DTYPE
    from cbudget.dask.training import sum_message
    entries = nbytes // HISTOGRAM_DTYPE.itemsize
    a = np.zeros(entries * HISTOGRAM_DTYPE.itemsize, dtype=np.uint8)
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        sum_message(a, a, 3, 0, entries)
        times.append(time.perf_counter() - t0)
    return float(np.median(times))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, nargs="+", default=[500_000])
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--leaves", type=int, default=31)
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--tradeoff", type=float, default=1e-3,
                        help="cost_tradeoff of cbudget's CEGB (LightGBM's cegb_tradeoff)")
    parser.add_argument("--load", type=int, default=0,
                        help="busy processes running beside the benchmark (other work on "
                             "a busy machine)")
    parser.add_argument("--output", type=Path, default=harness.RESULTS / "dask.md")
    parser.add_argument("--render-from", type=Path, metavar="JSON",
                        help="only rewrite the tables of --output from this JSON of a run")
    args = parser.parse_args()
    if args.render_from:
        write_markdown(json.loads(args.render_from.read_text()), args.output)
        return
    # other work: started first, stopped last (a busy loop per process)
    load = [subprocess.Popen([sys.executable, "-c", "while True: pass"])
            for _ in range(args.load)]
    try:
        records = []
        for rows in args.rows:
            records += run(args, rows)
    finally:
        for process in load:
            process.kill()
    doc = dict(command=harness.command_line(), machine=harness.machine_info(),
               rows=args.rows, features=N_FEATURES, rounds=args.rounds, leaves=args.leaves,
               partitions=args.partitions, repeats=args.repeats, load=args.load,
               records=records)
    args.output.with_suffix(".json").write_text(json.dumps(doc, indent=1, default=str))
    write_markdown(doc, args.output)


def run(args, rows):
    """Every measurement at one data size, on a fresh cluster."""
    import dask.array as da
    import lightgbm as lgb
    from distributed import Client, LocalCluster

    import cbudget
    import cbudget.dask as cdask

    X, y, costs = make_data(rows)
    Xs, _, _ = make_data(100_000, seed=1)      # scoring data
    chunk = -(-rows // args.partitions)
    cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                           dashboard_address=":0", silence_logs=logging.ERROR)
    client = Client(cluster)
    client.run(import_libraries)
    records = []

    def record(system, algorithm, what, seconds, **extra):
        records.append(dict(rows=rows, system=system, algorithm=algorithm, what=what,
                            seconds=seconds, **extra))
        print(f"{rows:>9} {system:>16} {algorithm:>5} {what:>8}: {seconds:7.2f} s "
              f"{extra or ''}", flush=True)

    record("cluster", "-", "baseline", 0.0, worker_rss=client.run(rss_now),
           driver_round_trip=driver_round_trip(client))
    dX = da.from_array(X, chunks=(chunk, N_FEATURES)).persist()
    dy = da.from_array(y, chunks=chunk).persist()
    dXs = da.from_array(Xs, chunks=(25_000, N_FEATURES)).persist()
    t0 = time.perf_counter()
    ddata = cdask.DaskDataset(client, dX, dy, feature_costs=costs)
    float_bytes = {worker: sum(ddata.partition_rows[i] for i in parts) * N_FEATURES * 8
                   for worker, parts in ddata.placement().items()}
    record("cbudget.dask", "-", "dataset", time.perf_counter() - t0,
           worker_rss=client.run(rss_now), float_bytes=float_bytes)
    base = dict(objective="binary:logistic", num_leaves=args.leaves, learning_rate=0.1,
                min_data_in_leaf=20, verbosity=0)
    algorithms = {"gbdt": dict(base, algorithm="gbdt"),
                  "cegb": dict(base, algorithm="cegb", cost_tradeoff=args.tradeoff)}
    lgb_base = dict(objective="binary", num_leaves=args.leaves, learning_rate=0.1,
                    min_data_in_leaf=20, verbose=-1, n_estimators=args.rounds,
                    max_bin=255)
    lgb_algorithms = {"gbdt": dict(lgb_base),
                      "cegb": dict(lgb_base, cegb_tradeoff=args.tradeoff,
                                   cegb_penalty_feature_lazy=list(costs))}
    for repeat in range(args.repeats):
        models = {}
        # the cluster first: the first repeat's peak memory is cbudget.dask's alone
        for name, params in algorithms.items():
            traffic = {}
            start_rss = client.run(start_rss_sampler)
            t0 = time.perf_counter()
            model = cdask.train(client, params, ddata, args.rounds, traffic=traffic)
            seconds = time.perf_counter() - t0
            models[name] = (model, seconds, traffic, start_rss,
                            client.run(stop_rss_sampler))
        for name, params in algorithms.items():
            model, seconds, traffic, start_rss, peak = models[name]
            # single process, 2 threads
            t0 = time.perf_counter()
            dtrain = cbudget.Dataset(X, y, feature_costs=costs)
            local = cbudget.train(dict(params, n_jobs=2), dtrain, args.rounds)
            record("cbudget", name, "train", time.perf_counter() - t0, repeat=repeat)
            t0 = time.perf_counter()
            local_scores = local.predict(Xs)
            record("cbudget", name, "predict", time.perf_counter() - t0, repeat=repeat)
            splits = sum(int((tree["left"] != -1).sum()) for tree in model.trees)
            same = all(np.array_equal(a["feature"], b["feature"])
                       for a, b in zip(model.trees, local.trees))
            record("cbudget.dask", name, "train", seconds, repeat=repeat,
                   round_trips_per_round=float(np.mean(traffic["round_trips"])),
                   peer_sums_per_round=float(np.mean(traffic["peer_sums"])),
                   peer_bytes_per_round=float(np.mean(traffic["peer_bytes_sent"])),
                   peer_seconds_per_round=float(np.mean(traffic["peer_seconds"])),
                   driver_bytes_per_round=float(np.mean(traffic["driver_bytes"])),
                   splits_per_round=splits / args.rounds,
                   shard_bytes=traffic["worker_memory_bytes"], peak_rss=peak,
                   start_rss=start_rss,
                   same_split_features=same, train_cost=model.summary["train_cost"],
                   local_train_cost=local.summary["train_cost"])
            t0 = time.perf_counter()
            scores = cdask.predict(client, model, dXs).compute()
            record("cbudget.dask", name, "predict", time.perf_counter() - t0, repeat=repeat,
                   max_diff_to_local=float(np.abs(scores - local_scores).max()))
            # LightGBM on the same cluster
            lgb_params = lgb_algorithms[name]
            client.run(start_rss_sampler)
            t0 = time.perf_counter()
            lgb_model = lgb.DaskLGBMClassifier(client=client, **lgb_params).fit(dX, dy)
            record("lightgbm.dask", name, "train", time.perf_counter() - t0, repeat=repeat,
                   peak_rss=client.run(stop_rss_sampler))
            t0 = time.perf_counter()
            lgb_model.predict_proba(dXs).compute()
            record("lightgbm.dask", name, "predict", time.perf_counter() - t0, repeat=repeat)
            t0 = time.perf_counter()
            lgb.LGBMClassifier(n_jobs=2, **lgb_params).fit(X, y)
            record("lightgbm", name, "train", time.perf_counter() - t0, repeat=repeat)
    client.close()
    cluster.close()
    return records


def spread(values):
    values = np.asarray(values, dtype=float)
    return f"{np.median(values):.2f} ({values.min():.2f}-{values.max():.2f})"


def select(records, rows, system, algorithm, what="train"):
    return [r for r in records if r.get("rows") == rows and r["system"] == system
            and r["algorithm"] == algorithm and r["what"] == what]


NETWORKS = (("10 GbE", 50e-6, 1.25e9), ("100 GbE", 10e-6, 12.5e9))
PROJECTED_ROWS = 100_000_000


def projection(records, doc):
    """Time per tree and the driver's bytes per tree on W workers (module docstring)."""
    rows = max(doc["rows"])
    rounds = doc["rounds"]
    cluster = [r for r in records if r.get("rows") == rows and r["system"] == "cluster"]
    lines: list[str] = []
    terms = ([f"a = {cluster[0]['driver_round_trip'] * 1e3:.2f} ms (measured)"]
             if cluster else [])
    for algorithm in ("gbdt", "cegb"):
        dask_runs = select(records, rows, "cbudget.dask", algorithm)
        local_runs = select(records, rows, "cbudget", algorithm)
        if not dask_runs or not local_runs or not cluster:
            continue
        local_round = np.median([r["seconds"] for r in local_runs]) / rounds
        c = local_round * 2 / rows                        # core-seconds per row
        sums = np.median([r["peer_sums_per_round"] for r in dask_runs])
        splits = np.median([r["splits_per_round"] for r in dask_runs])
        block = np.median([r["peer_bytes_per_round"] / r["peer_sums_per_round"]
                           for r in dask_runs])
        tree_bytes = np.median([r["driver_bytes_per_round"] for r in dask_runs])
        # o: a sum's seconds in these runs (one loopback swap, waiting included)
        overhead = np.median([r["peer_seconds_per_round"] / r["peer_sums_per_round"]
                              for r in dask_runs])
        a = cluster[0]["driver_round_trip"]
        s = block_sum_seconds(int(block))
        terms.append(f"{algorithm}: c = {c * 1e6:.2f} core-us per row, o = "
                     f"{overhead * 1e3:.2f} ms per sum, {sums:.0f} sums of b = "
                     f"{block / 1e3:.0f} kB per tree, s = {s * 1e6:.0f} us per block sum")
        for workers in (10, 100, 1000):
            compute = c * PROJECTED_ROWS / workers
            swaps = int(np.ceil(np.log2(workers)))
            for net, latency, bandwidth in NETWORKS:
                ours = compute + sums * (swaps * (latency + block / bandwidth) + overhead) + a
                trips = splits + 4
                theirs = compute + trips * (a + workers * block / bandwidth + workers * s)
                lines.append(
                    f"| {algorithm} | {workers} | {net} | {compute:.3f} | "
                    f"{ours:.3f} | {(tree_bytes + 64 * workers) / 1e3:.0f} kB | "
                    f"{theirs:.3f} | {trips * workers * block / 1e6:.0f} MB |")
    return lines, terms


def write_markdown(doc, path):
    records = doc["records"]
    sizes = doc["rows"] if isinstance(doc["rows"], list) else [doc["rows"]]
    lines = [f"Command: `{doc['command']}`", "",
             f"{', '.join(f'{n:,}' for n in sizes)} rows x {doc['features']} features, "
             f"{doc['rounds']} rounds, {doc['leaves']} leaves, {doc['partitions']} "
             "partitions on a LocalCluster of 2 worker processes x 1 thread (a fresh one "
             "per size); single-process runs on 2 threads"
             + (f"; {doc['load']} busy processes running beside it" if doc.get("load") else "")
             + f". Seconds: median (min-max) of {doc['repeats']} interleaved repeats.", "",
             "| rows | system | algorithm | train s | predict 100k rows s | train time / "
             "lightgbm.dask's (median of the repeats' ratios) |",
             "|---|---|---|---|---|---|"]
    for rows in sizes:
        for system in ("cbudget", "cbudget.dask", "lightgbm", "lightgbm.dask"):
            for algorithm in ("gbdt", "cegb"):
                train = [r["seconds"] for r in select(records, rows, system, algorithm)]
                predict = [r["seconds"]
                           for r in select(records, rows, system, algorithm, "predict")]
                theirs = [r["seconds"]
                          for r in select(records, rows, "lightgbm.dask", algorithm)]
                ratio = (spread([a / b for a, b in zip(train, theirs)])
                         if train and len(theirs) == len(train) else "-")
                if train:
                    lines.append(f"| {rows:,} | {system} | {algorithm} | {spread(train)} | "
                                 f"{spread(predict) if predict else '-'} | {ratio} |")
    lines += ["", "cbudget.dask traffic per round and memory per worker (MB; the workers "
              "separated by /):", "",
              "| rows | algorithm | driver round trips | sums among the workers | splits | "
              "bytes one worker sends | bytes per sum | seconds in the sums | bytes to the "
              "driver | "
              "float rows held | shard arrays | worker RSS before data | worker RSS with the "
              "DaskDataset | peak RSS (cbudget.dask) | peak RSS (lightgbm.dask) | peak RSS / "
              "float rows | (peak RSS - RSS before data) / float rows | peak RSS - RSS at the "
              "training's start | same split features as local | train cost dask / local |",
              "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]

    def mb(values):
        return "/".join(f"{v / 1e6:.0f}" for v in values)

    for rows in sizes:
        base = [r for r in records if r.get("rows") == rows and r["system"] == "cluster"]
        dataset = select(records, rows, "cbudget.dask", "-", "dataset")
        for algorithm in ("gbdt", "cegb"):
            runs = select(records, rows, "cbudget.dask", algorithm)
            lgb_runs = select(records, rows, "lightgbm.dask", algorithm)
            if not runs or not base or not dataset:
                continue
            r = runs[0]       # the first: no lightgbm.dask run in these workers before
            workers = sorted(r["peak_rss"])
            floats = [dataset[0]["float_bytes"][w] for w in workers]
            peak = [r["peak_rss"][w] for w in workers]
            before = [base[0]["worker_rss"][w] for w in workers]
            loaded = [dataset[0]["worker_rss"][w] for w in workers]
            lines.append(
                f"| {rows:,} | {algorithm} | {r['round_trips_per_round']:.0f} | "
                f"{r['peer_sums_per_round']:.0f} | {r['splits_per_round']:.0f} | "
                f"{r['peer_bytes_per_round'] / 1e6:.2f} MB | "
                f"{r['peer_bytes_per_round'] / r['peer_sums_per_round'] / 1e3:.0f} kB | "
                f"{r.get('peer_seconds_per_round', float('nan')):.3f} s | "
                f"{r['driver_bytes_per_round'] / 1e3:.1f} kB | {mb(floats)} | "
                f"{mb(r['shard_bytes'][w] for w in workers)} | {mb(before)} | "
                f"{mb(loaded)} | {mb(peak)} | "
                f"{mb(lgb_runs[0]['peak_rss'][w] for w in workers) if lgb_runs else '-'} | "
                + "/".join(f"{p / f:.2f}" for p, f in zip(peak, floats)) + " | "
                + "/".join(f"{(p - b) / f:.2f}" for p, b, f in zip(peak, before, floats))
                + " | " + (mb(r["peak_rss"][w] - r["start_rss"][w] for w in workers)
                           if "start_rss" in r else "-")
                + f" | {all(x['same_split_features'] for x in runs)} | "
                f"{r['train_cost']:.4f} / {r['local_train_cost']:.4f} |")
    projected, terms = projection(records, doc)
    lines += ["", f"Projected seconds per tree and the driver's bytes per tree on W workers "
              f"for {PROJECTED_ROWS:,} rows (a model on paper, calibrated by the largest "
              "run above; see the script's docstring; " + "; ".join(terms) + "):", "",
              "| algorithm | W | network | compute s | s / tree (workers sum) | driver "
              "bytes / tree | s / tree (driver sums) | driver bytes / tree (driver sums) |",
              "|---|---|---|---|---|---|---|---|"]
    lines += projected
    text = "\n".join(lines) + "\n"
    previous = path.read_text() if path.exists() else ""
    if harness.BEGIN in previous and harness.END in previous:
        head, rest = previous.split(harness.BEGIN, 1)
        tail = rest.split(harness.END, 1)[1]
        text = head + harness.BEGIN + "\n" + text + harness.END + tail
    else:
        text = ("# cbudget.dask against single-process cbudget and lightgbm.dask\n\n"
                + harness.BEGIN + "\n" + text + harness.END + "\n")
    path.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
