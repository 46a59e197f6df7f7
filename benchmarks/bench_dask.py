"""cbudget.dask on a LocalCluster against single-process cbudget and lightgbm.dask, on
the same synthetic data (issue 25):

    python benchmarks/bench_dask.py --rows 500000 --rounds 30 --repeats 3 \
        --output benchmarks/results/dask.md

Per system and repeat (interleaved, the machine is shared): training wall time for gbdt
and cegb (cbudget; LightGBM's gbdt and its CEGB with the same costs, rounds and leaves),
scoring wall time, the histogram bytes the driver receives per round and the round
trips (cbudget.dask's ``traffic``), and memory per worker (the shard's arrays and the
worker process's resident size). From the measured per-split traffic and round-trip
time, the time per round projected for 10 and 100 workers (a model on paper, its
assumptions printed with it). The cluster: 2 worker processes of 1 thread each; the
single-process runs use 2 threads.

This script starts its own cluster, so it does not use harness.main's child processes;
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


def rss_of_workers(client):
    import psutil
    return client.run(lambda: psutil.Process(os.getpid()).memory_info().rss)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=500_000)
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
        run(args)
    finally:
        for process in load:
            process.kill()


def run(args):

    import dask.array as da
    import lightgbm as lgb
    from distributed import Client, LocalCluster

    import cbudget
    import cbudget.dask as cdask

    X, y, costs = make_data(args.rows)
    Xs, _, _ = make_data(100_000, seed=1)      # scoring data
    chunk = -(-args.rows // args.partitions)
    cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                           dashboard_address=":0", silence_logs=logging.ERROR)
    client = Client(cluster)
    dX = da.from_array(X, chunks=(chunk, N_FEATURES)).persist()
    dy = da.from_array(y, chunks=chunk).persist()
    dXs = da.from_array(Xs, chunks=(25_000, N_FEATURES)).persist()
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
    records = []

    def record(system, algorithm, what, seconds, **extra):
        records.append(dict(system=system, algorithm=algorithm, what=what,
                            seconds=seconds, **extra))
        print(f"{system:>16} {algorithm:>5} {what:>8}: {seconds:7.2f} s {extra or ''}",
              flush=True)

    t0 = time.perf_counter()
    ddata = cdask.DaskDataset(client, dX, dy, feature_costs=costs)
    record("cbudget.dask", "-", "dataset", time.perf_counter() - t0)
    for repeat in range(args.repeats):
        for name, params in algorithms.items():
            # single process, 2 threads
            t0 = time.perf_counter()
            dtrain = cbudget.Dataset(X, y, feature_costs=costs)
            local = cbudget.train(dict(params, n_jobs=2), dtrain, args.rounds)
            record("cbudget", name, "train", time.perf_counter() - t0, repeat=repeat)
            t0 = time.perf_counter()
            local_scores = local.predict(Xs)
            record("cbudget", name, "predict", time.perf_counter() - t0, repeat=repeat)
            # the cluster
            traffic = {}
            t0 = time.perf_counter()
            model = cdask.train(client, params, ddata, args.rounds, traffic=traffic)
            seconds = time.perf_counter() - t0
            splits = sum(int((tree["left"] != -1).sum()) for tree in model.trees)
            same = all(np.array_equal(a["feature"], b["feature"])
                       for a, b in zip(model.trees, local.trees))
            record("cbudget.dask", name, "train", seconds, repeat=repeat,
                   histogram_bytes_per_round=float(np.mean(traffic["histogram_bytes"])),
                   round_trips_per_round=float(np.mean(traffic["round_trips"])),
                   splits_per_round=splits / args.rounds,
                   shard_bytes=traffic["worker_memory_bytes"],
                   worker_rss=rss_of_workers(client), same_split_features=same,
                   train_cost=model.summary["train_cost"],
                   local_train_cost=local.summary["train_cost"])
            t0 = time.perf_counter()
            scores = cdask.predict(client, model, dXs).compute()
            record("cbudget.dask", name, "predict", time.perf_counter() - t0, repeat=repeat,
                   max_diff_to_local=float(np.abs(scores - local_scores).max()))
            # LightGBM on the same cluster
            lgb_params = lgb_algorithms[name]
            t0 = time.perf_counter()
            lgb_model = lgb.DaskLGBMClassifier(client=client, **lgb_params).fit(dX, dy)
            record("lightgbm.dask", name, "train", time.perf_counter() - t0, repeat=repeat,
                   worker_rss=rss_of_workers(client))
            t0 = time.perf_counter()
            lgb_model.predict_proba(dXs).compute()
            record("lightgbm.dask", name, "predict", time.perf_counter() - t0, repeat=repeat)
            t0 = time.perf_counter()
            lgb.LGBMClassifier(n_jobs=2, **lgb_params).fit(X, y)
            record("lightgbm", name, "train", time.perf_counter() - t0, repeat=repeat)
    client.close()
    cluster.close()
    doc = dict(command=harness.command_line(), machine=harness.machine_info(),
               rows=args.rows, features=N_FEATURES, rounds=args.rounds, leaves=args.leaves,
               partitions=args.partitions, repeats=args.repeats, load=args.load,
               records=records)
    args.output.with_suffix(".json").write_text(json.dumps(doc, indent=1, default=str))
    write_markdown(doc, args.output)


def spread(values):
    values = np.asarray(values, dtype=float)
    return f"{np.median(values):.2f} ({values.min():.2f}-{values.max():.2f})"


def block_bytes(run):
    """One worker's histogram block: the round's histogram bytes over the exchanges that
    carry blocks (every round trip but the round's start, the tree's begin and its
    finish: the root's and the splits') and the 2 workers."""
    return run["histogram_bytes_per_round"] / max(1, run["round_trips_per_round"] - 3) / 2


def projection(records, rounds, rows):
    """Seconds per round for W workers, on paper: the local compute of a round shrinks
    as 1/W (its measured single-process time at 2 threads, taken as 2 workers' worth),
    and each round trip costs its measured time on this machine plus the driver
    receiving W histogram blocks."""
    lines = []
    for algorithm in ("gbdt", "cegb"):
        dask_runs = [r for r in records if r["system"] == "cbudget.dask"
                     and r["algorithm"] == algorithm and r["what"] == "train"]
        local_runs = [r for r in records if r["system"] == "cbudget"
                      and r["algorithm"] == algorithm and r["what"] == "train"]
        if not dask_runs or not local_runs:
            continue
        compute = np.median([r["seconds"] for r in local_runs]) / rounds
        trips = np.median([r["round_trips_per_round"] for r in dask_runs])
        block = np.median([block_bytes(r) for r in dask_runs])
        measured = np.median([r["seconds"] for r in dask_runs]) / rounds
        latency = max(0.0, (measured - compute) / trips)   # per round trip, measured here
        for workers in (10, 100):
            for bandwidth, net in ((1.25e9, "10 GbE"), (12.5e9, "100 GbE")):
                per_round = (compute * 2 / workers
                             + trips * (latency + workers * block / bandwidth))
                lines.append(f"| {algorithm} | {workers} | {net} | {compute * 2 / workers:.4f} "
                             f"| {trips:.0f} x ({latency * 1e3:.2f} ms + {workers} x "
                             f"{block / 1e3:.0f} kB / {net}) | {per_round:.3f} |")
    return lines


def write_markdown(doc, path):
    records = doc["records"]
    lines = [f"Command: `{doc['command']}`", "",
             f"{doc['rows']:,} rows x {doc['features']} features, {doc['rounds']} rounds, "
             f"{doc['leaves']} leaves, {doc['partitions']} partitions on a LocalCluster of "
             "2 worker processes x 1 thread; single-process runs on 2 threads"
             + (f"; {doc['load']} busy processes running beside it" if doc.get("load") else "")
             + f". Seconds: median (min-max) of {doc['repeats']} interleaved repeats.", "",
             "| system | algorithm | train s | predict 100k rows s |",
             "|---|---|---|---|"]
    for system in ("cbudget", "cbudget.dask", "lightgbm", "lightgbm.dask"):
        for algorithm in ("gbdt", "cegb"):
            train = [r["seconds"] for r in records if r["system"] == system
                     and r["algorithm"] == algorithm and r["what"] == "train"]
            predict = [r["seconds"] for r in records if r["system"] == system
                       and r["algorithm"] == algorithm and r["what"] == "predict"]
            if train:
                lines.append(f"| {system} | {algorithm} | {spread(train)} | "
                             f"{spread(predict) if predict else '-'} |")
    lines += ["", "cbudget.dask traffic and memory (per training run):", "",
              "| algorithm | round trips / round | splits / round | histogram bytes to the "
              "driver / round | one worker's histogram block | shard arrays per worker MB | "
              "worker RSS MB (cbudget.dask) | worker RSS MB (after lightgbm.dask) | "
              "same split features as local | train cost dask / local |",
              "|---|---|---|---|---|---|---|---|---|---|"]
    for algorithm in ("gbdt", "cegb"):
        runs = [r for r in records if r["system"] == "cbudget.dask"
                and r["algorithm"] == algorithm and r["what"] == "train"]
        lgb_runs = [r for r in records if r["system"] == "lightgbm.dask"
                    and r["algorithm"] == algorithm and r["what"] == "train"]
        if not runs:
            continue
        r = runs[-1]
        per_split = block_bytes(r)
        shard = "/".join(f"{v / 1e6:.0f}" for v in r["shard_bytes"].values())
        rss = "/".join(f"{v / 1e6:.0f}" for v in r["worker_rss"].values())
        lgb_rss = ("/".join(f"{v / 1e6:.0f}" for v in lgb_runs[-1]["worker_rss"].values())
                   if lgb_runs else "-")
        lines.append(f"| {algorithm} | {r['round_trips_per_round']:.1f} | "
                     f"{r['splits_per_round']:.1f} | {r['histogram_bytes_per_round'] / 1e6:.2f} MB"
                     f" | {per_split / 1e3:.0f} kB | {shard} | {rss} | {lgb_rss} | "
                     f"{all(x['same_split_features'] for x in runs)} | "
                     f"{r['train_cost']:.4f} / {r['local_train_cost']:.4f} |")
    lines += ["", "Projected seconds per round on W workers (on paper, from the measured "
              "per-split traffic and round-trip time above: local compute / W + round trips "
              "x (latency + W blocks over the network), the driver receiving every block):",
              "", "| algorithm | W | network | compute s | per-round traffic | s / round |",
              "|---|---|---|---|---|---|"]
    lines += projection(records, doc["rounds"], doc["rows"])
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
