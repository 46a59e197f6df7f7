"""Best-first vs breadth-first growth for CEGB (the paper's Fig. 3b comparison).

cbudget ``algorithm="cegb"`` with the settings of ``bench_cegb.py`` (31 leaves per
tree, learning rate 0.1, ...), over the same lambda sweep, once with best-first growth
(``grow_policy="lossguide"``, no depth limit: the default) and once breadth-first
(``grow_policy="depthwise"``: level by level until the tree has 31 leaves, at most
depth 10). Reports test accuracy and mean prediction cost per test input
(``Booster.predict_cost``, which ``bench_cegb.py`` checks against its shared cost
routine) and the deepest leaf. Writes ``benchmarks/results/cegb_growth.md`` (+ .json).

    PYTHONPATH=. python benchmarks/bench_cegb_growth.py
    PYTHONPATH=. python benchmarks/bench_cegb_growth.py --datasets letters --rounds 20
"""
import argparse
import json
import time
from pathlib import Path

import numpy as np

from _common import DATASET_TITLES, command_line, load_dataset, machine_info, machine_text
from bench_cegb import DEFAULT_LAMBDAS, cegb_params

POLICIES = {"best-first": {"grow_policy": "lossguide"},
            "breadth-first": {"grow_policy": "depthwise", "max_depth": 10}}


def run(name, rounds, lambdas, threads):
    import cbudget
    data = load_dataset(name)
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
                "train_s": train_s,
            })
            print(json.dumps(results[-1]), flush=True)
    return results


def render(results, command, info):
    lines = ["# CEGB: best-first vs breadth-first growth (cbudget)", "", "Command:", "",
             f"```\n{command}\n```", "", machine_text(info), "",
             "Both policies grow 31-leaf trees with the CEGB penalty (lambda = "
             "`cost_tradeoff`); breadth-first goes level by level (at most depth 10). "
             "Accuracy and mean prediction cost on the test set.", ""]
    for name in dict.fromkeys(r["dataset"] for r in results):
        rows = [r for r in results if r["dataset"] == name]
        lines += [f"### {DATASET_TITLES.get(name, name)}, {rows[0]['rounds']} rounds", "",
                  "| lambda | best-first accuracy | best-first mean cost | best-first "
                  "deepest leaf | breadth-first accuracy | breadth-first mean cost | "
                  "breadth-first deepest leaf |", "|---:|---:|---:|---:|---:|---:|---:|"]
        for lam in sorted({r["lambda"] for r in rows}):
            b = next(r for r in rows if r["lambda"] == lam and r["policy"] == "best-first")
            d = next(r for r in rows if r["lambda"] == lam and r["policy"] == "breadth-first")
            lines.append(f"| {lam:g} | {b['accuracy']:.4f} | {b['mean_cost']:,.2f} | "
                         f"{b['max_depth']} | {d['accuracy']:.4f} | {d['mean_cost']:,.2f} | "
                         f"{d['max_depth']} |")
        lines.append("")
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", default="letters,synthetic_costly")
    parser.add_argument("--rounds", type=int, default=200)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--output", default="benchmarks/results/cegb_growth.md")
    args = parser.parse_args()
    results = []
    for name in args.datasets.split(","):
        results += run(name, args.rounds, DEFAULT_LAMBDAS[name], args.threads)
    info = machine_info(libraries=())
    output = Path(args.output)
    output.write_text(render(results, command_line(), info))
    output.with_suffix(".json").write_text(json.dumps(results, indent=1))
    print(f"wrote {output}")


if __name__ == "__main__":
    main()
