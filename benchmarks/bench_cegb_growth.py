"""Best-first vs breadth-first growth for CEGB (the paper's Fig. 3b comparison).

cbudget ``algorithm="cegb"`` with ``bench_cegb.py``'s settings and lambda sweep, once with
best-first growth (``grow_policy="lossguide"``) and once breadth-first (``"depthwise"``,
31 leaves, at most depth 10), in this process: test accuracy, mean prediction cost
(``predict_cost``) and the deepest leaf. Writes ``results/cegb_growth.md`` (+ .json).

    PYTHONPATH=. python benchmarks/bench_cegb_growth.py --datasets letters --rounds 20
"""
import argparse
import json
import time
from pathlib import Path

import harness as h
import numpy as np
from bench_cegb import DEFAULT_LAMBDAS, cegb_params

POLICIES = {"best-first": {"grow_policy": "lossguide"},
            "breadth-first": {"grow_policy": "depthwise", "max_depth": 10}}


def run(name, rounds, lambdas, threads):
    import cbudget
    data = h.load_dataset(name)
    dtrain = cbudget.Dataset(data["X_train"], data["y_train"],
                             feature_costs=data["feature_costs"])
    results = []
    for lam in lambdas:
        for policy, extra in POLICIES.items():
            params = {**cegb_params("cbudget", name, data["n_classes"], lam,
                                    data["feature_costs"], n_threads=threads), **extra}
            start = time.perf_counter()
            booster = cbudget.train(params, dtrain, rounds, verbose_eval=False)
            train_s = time.perf_counter() - start
            proba = booster.predict(data["X_test"])
            pred = proba.argmax(axis=1) if proba.ndim == 2 else (proba > 0.5).astype(int)
            results.append({
                "dataset": name, "lambda": lam, "policy": policy, "rounds": rounds,
                "accuracy": float(np.mean(pred == data["y_test"])),
                "mean_cost": float(booster.predict_cost(data["X_test"]).mean()),
                "max_depth": int(max(t["depth"].max() for t in booster.trees)),
                "train_s": train_s})
            print(json.dumps(results[-1]), flush=True)
    return results


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", default="letters,synthetic_costly")
    parser.add_argument("--rounds", type=int, default=200)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--output", default=str(h.RESULTS / "cegb_growth.md"))
    args = parser.parse_args()
    results = []
    for name in args.datasets.split(","):
        results += run(name, args.rounds, DEFAULT_LAMBDAS[name], args.threads)
    info = h.machine_info(())
    lines = ["# CEGB: best-first vs breadth-first growth (cbudget)", "", "Command:", "",
             f"```\n{h.command_line()}\n```", "",
             f"Machine: nproc {info['nproc']}, {info['cpu']}; {info['cbudget']}.", ""]
    for name in dict.fromkeys(r["dataset"] for r in results):
        rows = [r for r in results if r["dataset"] == name]
        by = {(r["lambda"], r["policy"]): r for r in rows}
        lines += [f"### {h.DATASET_TITLES.get(name, name)}, {rows[0]['rounds']} rounds", ""]
        lines += h.table(["lambda"] + [f"{p} {c}" for p in POLICIES for c in (
            "accuracy", "mean cost", "deepest leaf")],
            [[f"{lam:g}"] + [v for p in POLICIES for v in (
                f"{by[lam, p]['accuracy']:.4f}", f"{by[lam, p]['mean_cost']:,.2f}",
                by[lam, p]["max_depth"])] for lam in sorted({r["lambda"] for r in rows})],
            "r") + [""]
    output = Path(args.output)
    h.write_markdown(output, "\n".join(lines))
    output.with_suffix(".json").write_text(json.dumps(results, indent=1))
    print(f"wrote {output}")


if __name__ == "__main__":
    main()
