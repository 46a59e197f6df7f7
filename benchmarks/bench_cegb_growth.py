"""CEGB: best-first vs breadth-first growth (cbudget).

bench_cegb.py's cbudget runs with best-first growth (``grow_policy="lossguide"``) and
breadth-first (``"depthwise"``, 31 leaves, at most depth 10): the paper's Fig. 3b.
"""
import sys

import bench_cegb
import harness as h

DATASETS = ("letters", "synthetic_costly")
IDENT = ("dataset", "lambda", "policy")
ROWS = ()
FULL = {"rounds": 200}
QUICK = {"rounds": 20}
POLICIES = {"best-first": {"grow_policy": "lossguide"},
            "breadth-first": {"grow_policy": "depthwise", "max_depth": 10}}


def plan(args, names):
    rounds = h.setting(args, "rounds")
    return [(d, f"{d} / lambda={lam:g} / {policy}",
             {"library": "cbudget", "dataset": d, "lambda": lam, "policy": policy,
              "extra_params": POLICIES[policy], "rounds": rounds, "split_cost": 0.0,
              "threads": args.threads})
            for d in names for lam in bench_cegb.FULL["lambdas"][d] for policy in POLICIES], {
        "rounds": rounds}


def run_point(spec):
    """bench_cegb's cbudget run with the growth policy's parameters."""
    return dict(bench_cegb.run_point(spec), policy=spec["policy"])


def render(doc):
    lines = []
    for name, results in doc["results"].items():
        lines += [f"### {h.title(name)}, {doc['rounds']} rounds", ""] + h.points_table(
            sorted(h.ok_results(results), key=lambda r: (r["lambda"], r["policy"] != "best-first")),
            [("lambda", lambda r: f"{r['lambda']:g}"), ("growth", lambda r: r["policy"]),
             ("accuracy", h.col("accuracy", ".4f")), ("mean cost", h.col("mean_cost", ",.2f")),
             ("deepest leaf", h.col("max_depth", "d"))], "r") + [""]
    return lines


if __name__ == "__main__":
    sys.exit(h.main(sys.modules[__name__]))
