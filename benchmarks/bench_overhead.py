"""Per-round overhead of small multiclass problems: cbudget against LightGBM on Letters
(12,000 x 16, 26 classes) with the settings of ``bench_engine.py`` (gbdt, 31 leaves) and
``bench_cegb.py`` (CEGB at one lambda), interleaved repeats in one process, and where
cbudget's training time goes (tree growth, gradients, score updates, cost tracking,
the work after the last round).

    PYTHONPATH=. python benchmarks/bench_overhead.py [--repeats 3] [--threads 1,2]
        [--gbdt-rounds 500] [--cegb-rounds 200] [--cegb-lambda 0.2]

Each training runs in a fresh child process (as in the benchmarks: cbudget sets
OpenMP's passive waiting when imported, which would slow LightGBM in the same process).
Small enough to run in a few minutes (the full engine and CEGB benchmarks take half an
hour); it prints a table, it writes no results file.
"""
import argparse
import json
import statistics
import subprocess
import sys
import time
from collections import defaultdict

import datasets
import harness as h
from bench_cegb import cegb_params

import cbudget
from cbudget.algorithms import boosting

# seconds per part of cbudget's training, summed over a run (see instrument)
PARTS: dict = defaultdict(float)


def instrument():
    """Time the parts of BoostingTrainer's rounds (wrapping its methods)."""
    trainer = boosting.BoostingTrainer

    def timed(name, method):
        def wrapper(*args, **kwargs):
            start = time.perf_counter()
            try:
                return method(*args, **kwargs)
            finally:
                PARTS[name] += time.perf_counter() - start
        return wrapper

    parts = {"round_jobs": "gradients and sampling",
             "grow_trees": "trees (growth, scores, cost state)",
             "record_acquisitions": "cost state (also inside trees when sequential)",
             "iterate": "rounds in all", "record_training": "after the last round"}
    for method, name in parts.items():
        if hasattr(trainer, method):     # older sources (before/after runs) lack some
            setattr(trainer, method, timed(name, getattr(trainer, method)))


def run(library, kind, data, threads, rounds, lam):
    """Training seconds (Dataset construction included, as in the benchmarks)."""
    if kind == "gbdt":
        params, kwargs = h.library_params(library, data["n_classes"], threads), {}
    else:
        params = cegb_params(library, "letters", data["n_classes"], lam,
                             data["feature_costs"], 0.0, threads)
        kwargs = {} if library == "lightgbm" else {
            "feature_names": data["feature_names"], "feature_costs": data["feature_costs"]}
    trainer = h.train_lightgbm_timed if library == "lightgbm" else h.train_cbudget_timed
    _, timing = h.timed_training(trainer, data, params, rounds, **kwargs)
    return timing["train_s"]


def child(library, kind, threads, rounds, lam):
    """One training in this process: print its seconds and cbudget's parts as JSON."""
    data = datasets.load_letters(seed=0)
    instrument()
    seconds = run(library, kind, data, threads, rounds, lam)
    print(json.dumps({"seconds": seconds, "parts": PARTS}))


def in_child(*args):
    out = subprocess.run([sys.executable, __file__, "--child", *map(str, args)],
                         check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", default="2,1")
    parser.add_argument("--gbdt-rounds", type=int, default=500)
    parser.add_argument("--cegb-rounds", type=int, default=200)
    parser.add_argument("--cegb-lambda", type=float, default=0.2)
    parser.add_argument("--child", nargs=5, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        library, kind, threads, rounds, lam = args.child
        child(library, kind, int(threads), int(rounds), float(lam))
        return
    runs = {"gbdt": args.gbdt_rounds, "cegb": args.cegb_rounds}
    print(f"Letters, cbudget {cbudget.__version__}; median (min-max) of {args.repeats} "
          f"interleaved repeats, seconds")
    for threads in (int(t) for t in args.threads.split(",")):
        for kind, rounds in runs.items():
            seconds: dict = {"cbudget": [], "lightgbm": []}
            parts: dict = defaultdict(float)
            for _ in range(args.repeats):
                for library in seconds:
                    result = in_child(library, kind, threads, rounds, args.cegb_lambda)
                    seconds[library].append(result["seconds"])
                    for part, spent in result["parts"].items():
                        parts[part] += spent / args.repeats
            med = {lib: statistics.median(s) for lib, s in seconds.items()}
            label = kind if kind == "gbdt" else f"cegb lambda={args.cegb_lambda:g}"
            print(f"\n{label}, {rounds} rounds, n_jobs={threads}: "
                  + ", ".join(f"{lib} {med[lib]:.2f} ({min(s):.2f}-{max(s):.2f})"
                              for lib, s in seconds.items())
                  + f"; ratio {med['cbudget'] / med['lightgbm']:.2f} "
                  f"(min-max {min(seconds['cbudget']) / max(seconds['lightgbm']):.2f}-"
                  f"{max(seconds['cbudget']) / min(seconds['lightgbm']):.2f})", flush=True)
            total = statistics.mean(seconds["cbudget"])
            for part, spent in parts.items():
                print(f"    cbudget {part:<48}{spent:7.3f} s ({100 * spent / total:5.1f}%)")


if __name__ == "__main__":
    main()
