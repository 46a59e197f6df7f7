"""On-demand prediction: cbudget.FeatureSource vs eager predict.

CEGB (10 classes) on multi-resolution MNIST, the model of examples/on_demand_mnist.py
for each lambda, 10,000 test images. Three parts, each repeated with eager and
on-demand interleaved, on an idle machine and with ``--busy`` processes spinning:
(1) overhead: ``fetch`` reads an in-memory matrix; rows/s of on-demand against eager
``predict``; ``next_features`` per step in microseconds; (2) payoff: the example end to
end, features computed from the raw images, all first then ``predict`` against on
demand; (3) latency: ``fetch`` sleeps ``--latency-ms`` per call; rounds, calls and wall
time for ``max_workers`` 1 and 8. Every on-demand prediction is checked equal to eager.
"""
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import harness as h
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))
import on_demand_mnist as example  # noqa: E402

DATASETS = ("overhead", "payoff", "latency")        # the parts (--datasets)
IDENT = ("part", "lambda", "busy")
ROWS = ("train", "test")
FULL = {"lambdas": (0.0, 0.001, 0.01, 0.03), "rounds": 40, "repeats": 7, "latency_ms": 2.0}
QUICK = {"lambdas": (0.01,), "rounds": 10, "repeats": 3, "train_rows": 3_000,
         "test_rows": 2_000}
LATENCY_LAMBDA = 0.01     # the latency part's lambda, when in the grid


def add_arguments(parser):
    parser.add_argument("--busy", type=int, default=2,
                        help="spinning processes of the busy runs (default 2; 0: idle only)")
    parser.add_argument("--workdir", default=None, help="directory of the trained models")


def plan(args, parts):
    lambdas = list(h.setting(args, "lambdas"))
    spec = {key: h.setting(args, key) for key in ("rounds", "repeats", "latency_ms")}
    spec.update(train_rows=args.train_rows or 20_000, test_rows=args.test_rows or 10_000,
                threads=args.threads,
                workdir=args.workdir or tempfile.mkdtemp(prefix="bench_on_demand_"))
    loads = [0] + ([args.busy] if args.busy else [])
    one = [LATENCY_LAMBDA if LATENCY_LAMBDA in lambdas else lambdas[0]]
    jobs = [(part, f"{part} / lambda {lam:g} / {busy} busy",
             dict(spec, part=part, **{"lambda": lam}, busy=busy))
            for part in parts for lam in (one if part == "latency" else lambdas)
            for busy in loads]
    return jobs, {"settings": {k: v for k, v in spec.items() if k != "workdir"}}


# ------------------------------------------------------------------------- child
def model_for(spec, images, labels):
    """The CEGB model of the spec's lambda, trained once per work directory."""
    import cbudget
    path = Path(spec["workdir"]) / (f"cegb_{spec['lambda']:g}_{spec['train_rows']}_"
                                    f"{spec['rounds']}.json")
    if path.exists():
        return cbudget.load_model(path), None
    with h.Timer() as t:
        model = example.train_cegb(images, labels, spec["lambda"], spec["rounds"],
                                   n_jobs=spec["threads"])
    model.save_model(path)
    return model, t.wall


def overhead(model, X, repeats, cbudget):
    def on_demand():
        source = cbudget.FeatureSource(lambda features, rows: X[np.ix_(rows, features)],
                                       X.shape[0])
        return model.predict(source), source
    runs = h.interleaved(repeats, eager=lambda: model.predict(X), on_demand=on_demand)
    prediction, source = runs["on_demand"][1]
    if not np.array_equal(prediction, runs["eager"][1]):
        raise AssertionError("on-demand predictions differ from eager ones")
    steps = []                                 # next_features, one input at a time
    for i in range(0, X.shape[0], max(1, X.shape[0] // 200)):
        steps += h.next_features_steps(model, X[i])
    n = X.shape[0]
    return {"eager": h.wall_spread(runs["eager"][0]),
            "on_demand": h.wall_spread(runs["on_demand"][0]),
            "ratio_rows_per_s": [e / o for e, o in zip(runs["eager"][0],
                                                        runs["on_demand"][0])],
            "eager_rows_per_s": n / statistics.median(runs["eager"][0]),
            "on_demand_rows_per_s": n / statistics.median(runs["on_demand"][0]),
            "rounds": source.n_rounds, "calls": len(source.calls),
            "features_per_input": float(source.acquired.sum(axis=1).mean()),
            "next_features_us": {"median": 1e6 * statistics.median(steps),
                                 "p90": 1e6 * float(np.quantile(steps, 0.9)),
                                 "steps": len(steps)}}


def latency(model, X, latency_s, cbudget):
    out = {}
    for workers in (1, 8):
        def fetch(features, rows):
            time.sleep(latency_s)
            return X[np.ix_(rows, features)]
        source = cbudget.FeatureSource(fetch, X.shape[0], max_workers=workers)
        start = time.perf_counter()
        prediction = model.predict(source)
        out[workers] = {"wall_s": time.perf_counter() - start, "rounds": source.n_rounds,
                        "calls": len(source.calls)}
        if not np.array_equal(prediction, model.predict(X)):
            raise AssertionError("on-demand predictions differ from eager ones")
    return out


def run_point(spec):
    import cbudget
    train_images, y_train, images, labels = example.load_images(spec["train_rows"],
                                                                spec["test_rows"])
    model, train_s = model_for(spec, train_images, y_train)
    model.params["n_jobs"] = spec["threads"]
    X = example.MultiResolutionPixels(images).all_features()
    spinners = [subprocess.Popen([sys.executable, "-c", "while True: pass"])
                for _ in range(spec["busy"])]
    try:
        with h.Timer() as t:
            if spec["part"] == "overhead":
                result = overhead(model, X, spec["repeats"], cbudget)
            elif spec["part"] == "payoff":
                result = {"runs": [example.predict_both_ways(model, images, labels)
                                   for _ in range(spec["repeats"])]}
            else:
                result = latency(model, X, spec["latency_ms"] / 1000, cbudget)
    finally:
        for p in spinners:
            p.kill()
    eager = model.predict(X)
    return {"part": spec["part"], "lambda": spec["lambda"], "busy": spec["busy"],
            "result": result, "train_s": t.wall, "model_train_s": train_s,
            "accuracy": float(np.mean(np.argmax(eager, axis=1) == labels)),
            "mean_cost": float(model.predict_cost(X).mean()),
            "features_used": int(model.used_features().size), "trees": len(model.trees),
            "train_cpu_s": t.cpu, "other_cores_during_train": t.other}


# ------------------------------------------------------------------------ report
def _ms(s):
    return f"{1000 * s['median_s']:.1f} ({1000 * s['min_s']:.1f}-{1000 * s['max_s']:.1f})"


def _load(r):
    return "idle" if not r["busy"] else f"{r['busy']} busy"


def render(doc):
    ok = {part: h.ok_results(rs) for part, rs in doc["results"].items()}
    lines = [f"Settings: {doc['settings']}. Times: median (min-max) over the repeats.", ""]
    if ok.get("overhead"):
        lines += ["## (1) Overhead: fetch from an in-memory matrix", ""] + h.table(
            ["lambda", "machine", "accuracy", "features / input (of 1,120)", "eager ms",
             "on-demand ms", "rows/s on-demand / eager (min-max)", "rounds", "calls",
             "next_features us / step (p90)"],
            [[f"{r['lambda']:g}", _load(r), f"{r['accuracy']:.4f}",
              f"{r['result']['features_per_input']:.1f}", _ms(r["result"]["eager"]),
              _ms(r["result"]["on_demand"]),
              f"{statistics.median(r['result']['ratio_rows_per_s']):.2f} "
              f"({min(r['result']['ratio_rows_per_s']):.2f}-"
              f"{max(r['result']['ratio_rows_per_s']):.2f})",
              r["result"]["rounds"], r["result"]["calls"],
              f"{r['result']['next_features_us']['median']:.0f} "
              f"({r['result']['next_features_us']['p90']:.0f})"] for r in ok["overhead"]],
            "rlrrrrrrrr") + [""]
    if ok.get("payoff"):
        rows = []
        for r in ok["payoff"]:
            runs = r["result"]["runs"]
            eager = [x["eager_s"] for x in runs]
            lazy = [x["on_demand_s"] for x in runs]
            rows.append([f"{r['lambda']:g}", _load(r), f"{runs[0]['accuracy']:.4f}",
                         f"{runs[0]['features_per_input_on_demand']:.1f}",
                         _ms(h.wall_spread(eager)), _ms(h.wall_spread(lazy)),
                         f"{statistics.median(e / o for e, o in zip(eager, lazy)):.2f}"])
        lines += ["## (2) Payoff: features computed from the raw images", ""] + h.table(
            ["lambda", "machine", "accuracy", "features computed / image (of 1,120)",
             "compute all, then predict: ms", "on demand: ms", "speed-up (median)"],
            rows, "rlrrrrr") + [""]
    if ok.get("latency"):
        lines += [f"## (3) Latency: fetch sleeps {doc['settings']['latency_ms']:g} ms per "
                  "call", ""] + h.table(
            ["lambda", "machine", "max_workers", "rounds", "calls", "wall s"],
            [[f"{r['lambda']:g}", _load(r), w, v["rounds"], v["calls"], f"{v['wall_s']:.2f}"]
             for r in ok["latency"] for w, v in r["result"].items()], "rlrrrr") + [""]
    return lines


if __name__ == "__main__":
    sys.exit(h.main(sys.modules[__name__]))
