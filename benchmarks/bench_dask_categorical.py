"""cbudget.dask training with categorical features against single-process cbudget, on
the same synthetic data (issue 44):

    python benchmarks/bench_dask_categorical.py --rows 200000 --rounds 30 --repeats 3

A binary task of 10 numeric and 5 categorical columns (pandas strings of 50, 35, 12, 7
and 4 levels, some missing). Per repeat (interleaved: the machine is shared), wall
times of: building the data (cbudget.Dataset of the pandas frame; DaskDataset of a
Dask DataFrame of ``--partitions`` partitions already on the workers: levels found per
partition, partitions coded, bins fitted), and training gbdt and cegb (same rounds and
leaves; on Dask also with the categorical columns as numeric codes, for the cost of the
round trips alone). The cluster: 2 worker processes of 1 thread each; the single-process
runs use 2 threads. Prints a Markdown table, whether the models agree (largest
difference of predictions) and the round trips per round.
"""
import argparse
import logging
import time

import numpy as np

LEVELS = {"state": 50, "sub_grade": 35, "purpose": 12, "grade": 7, "home": 4}


def make_frame(n_rows, seed=0):
    import pandas as pd
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame(rng.normal(size=(n_rows, 10)), columns=[f"x{i}" for i in range(10)])
    logit = frame.x0 - 0.7 * frame.x3 ** 2 + 0.5 * frame.x5 * frame.x7
    for name, k in LEVELS.items():
        codes = rng.integers(0, k, n_rows)
        effect = rng.normal(size=k)
        logit = logit + effect[codes]
        column = pd.Series(np.array([f"{name}_{c:02d}" for c in range(k)])[codes], dtype=object)
        column[rng.random(n_rows) < 0.02] = None
        frame[name] = column
    y = (logit + rng.logistic(size=n_rows) > 0).to_numpy(dtype=np.float64)
    return frame, y


def timed(fn, *args, **kwargs):
    start = time.perf_counter()
    out = fn(*args, **kwargs)
    return out, time.perf_counter() - start


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--leaves", type=int, default=31)
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()

    import dask.dataframe as dd
    import pandas as pd
    from distributed import Client, LocalCluster

    import cbudget
    from cbudget.dask import DaskDataset, train

    frame, y = make_frame(args.rows)
    costs = dict(feature_costs=list(np.linspace(1.0, 10.0, frame.shape[1])))
    params = {name: dict(algorithm=name, objective="binary:logistic", num_leaves=args.leaves,
                         verbosity=0, **({"cost_tradeoff": 1e-3} if name == "cegb" else {}))
              for name in ("gbdt", "cegb")}
    times: dict[str, list[float]] = {}
    agreement, trips = {}, {}
    with LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=":0",
                      silence_logs=logging.ERROR) as cluster, Client(cluster) as client:
        # the data on the workers before anything is timed (as loaded there)
        lazy = dd.from_pandas(frame, npartitions=args.partitions, sort=False).persist()
        # the same columns as numbers (the levels' codes, NaN missing): what the Dask
        # round trips cost without categorical splits
        codes = frame.apply(lambda c: c if c.dtype.kind == "f" else pd.Series(
            pd.factorize(c)[0], index=c.index, dtype=float).where(c.notna()))
        lazy_codes = dd.from_pandas(codes, npartitions=args.partitions, sort=False).persist()
        label = dd.from_pandas(pd.Series(y), npartitions=args.partitions,
                               sort=False).persist()
        for repeat in range(args.repeats):
            dtrain, t = timed(cbudget.Dataset, frame, y, **costs)
            times.setdefault("data: cbudget.Dataset", []).append(t)
            ddata, t = timed(DaskDataset, client, lazy, label, **costs)
            times.setdefault("data: DaskDataset", []).append(t)
            dcodes = DaskDataset(client, lazy_codes, label, **costs)
            for name, p in params.items():
                local, t = timed(cbudget.train, dict(p, n_jobs=2), dtrain, args.rounds)
                times.setdefault(f"{name}: cbudget.train (2 threads)", []).append(t)
                # which of the two Dask runs goes first alternates: a run right after
                # another (its actors still closing) took up to 0.8 s longer
                runs = [(ddata, f"{name}: cbudget.dask.train (2 workers)"),
                        (dcodes, f"{name}: cbudget.dask.train, codes as numbers")]
                for data, step in runs[::1 if repeat % 2 == 0 else -1]:
                    traffic: dict = {}
                    model, t = timed(train, client, dict(p, n_jobs=1), data, args.rounds,
                                     traffic=traffic)
                    times.setdefault(step, []).append(t)
                    if data is ddata:
                        remote = model
                        trips[name] = float(np.mean(traffic["round_trips"]))
                agreement[name] = float(np.max(np.abs(remote.predict(frame)
                                                      - local.predict(frame))))
            del ddata, dcodes
    print(f"{args.rows} rows, 10 numeric + 5 categorical columns ({LEVELS}), "
          f"{args.rounds} rounds, {args.leaves} leaves, {args.partitions} partitions\n")
    print("| step | wall time, s (each repeat) | median |")
    print("|---|---|---|")
    for step, values in times.items():
        print(f"| {step} | {', '.join(f'{v:.2f}' for v in values)} | "
              f"{np.median(values):.2f} |")
    print(f"\nlargest |prediction difference|, Dask vs local: {agreement}")
    print(f"round trips to the workers per round (categorical): {trips}")


if __name__ == "__main__":
    main()
