"""Serving latency: one input at a time, on-demand against eager and LightGBM.

Issue 45's overhead measurement: the serving case, one request at a time with ``fetch``
reading from memory, in microseconds per request (p50 / p99) for (a) cbudget eager
single-row ``predict``, (b) on-demand ``predict`` on a ``FeatureSource`` of one input,
(b') the same with ``merge_calls=True`` (one fetch call per round), (c) the
``next_features`` loop of the caller (the whole input, and per step) and (d) LightGBM's
single-row ``Booster.predict``. Models on the synthetic binary set
(make_synthetic_binary, 50 features, 10 informative): ``gbdt``: a LightGBM model
(``--rounds`` trees, 31 leaves) imported with ``cbudget.from_lightgbm``, so cbudget and
LightGBM walk the same trees; ``cegb``: a cbudget CEGB model of as many rounds (every
feature costs 1, cost_tradeoff 0.01), with that LightGBM model as the reference. Every
way runs once per request in turn (interleaved), over ``--repeats`` passes of
``--requests`` test rows; one thread everywhere; every on-demand prediction is checked
equal to eager. Idle, and with ``--busy`` processes spinning.
"""
import subprocess
import sys
import time

import harness as h
import numpy as np

DATASETS = ("gbdt", "cegb")                  # the models (--datasets)
IDENT = ("model", "busy")
ROWS = ("train", "test")
FULL = {"rounds": 100, "repeats": 5, "requests": 400}
QUICK = {"rounds": 20, "repeats": 2, "requests": 50, "train_rows": 5_000, "test_rows": 100}
WAYS = ("eager", "on_demand", "on_demand_merged", "next_features", "lightgbm")


def add_arguments(parser):
    parser.add_argument("--busy", type=int, default=2,
                        help="spinning processes of the busy runs (default 2; 0: idle only)")


def plan(args, models):
    spec = {key: h.setting(args, key) for key in ("rounds", "repeats", "requests")}
    spec.update(train_rows=args.train_rows or 50_000, test_rows=args.test_rows or 2_000)
    loads = [0] + ([args.busy] if args.busy else [])
    jobs = [(model, f"{model} / {busy} busy", dict(spec, model=model, busy=busy))
            for model in models for busy in loads]
    return jobs, {"settings": spec}


# ------------------------------------------------------------------------- child
def train_models(spec, X, y):
    """(cbudget model, LightGBM booster): see the module docstring."""
    import lightgbm as lgb

    import cbudget
    booster = lgb.train({"objective": "binary", "num_leaves": 31, "learning_rate": 0.1,
                         "num_threads": 1, "verbose": -1, "seed": 0},
                        lgb.Dataset(X, y), spec["rounds"])
    if spec["model"] == "gbdt":
        model = cbudget.from_lightgbm(booster)
    else:
        model = cbudget.train({"algorithm": "cegb", "objective": "binary:logistic",
                               "cost_tradeoff": 0.01, "num_leaves": 31, "learning_rate": 0.1,
                               "n_jobs": 1, "verbosity": 0},
                              cbudget.Dataset(X, y, feature_costs=np.ones(X.shape[1])),
                              spec["rounds"], verbose_eval=False)
    model.params["n_jobs"] = 1
    return model, booster


def one_request(model, booster, x, cbudget):
    """The four ways for the one-row matrix ``x``: {way: seconds}, and what the
    on-demand source and the next_features loop did."""
    out = {}
    start = time.perf_counter()
    eager = model.predict(x)
    out["eager"] = time.perf_counter() - start

    start = time.perf_counter()
    source = cbudget.FeatureSource(lambda features, rows: x[rows][:, features], 1)
    on_demand = model.predict(source)
    out["on_demand"] = time.perf_counter() - start
    if not np.array_equal(on_demand, eager):
        raise AssertionError("the on-demand prediction differs from the eager one")

    start = time.perf_counter()
    merged = cbudget.FeatureSource(lambda features, rows: x[rows][:, features], 1,
                                   merge_calls=True)
    on_demand = model.predict(merged)
    out["on_demand_merged"] = time.perf_counter() - start
    if not np.array_equal(on_demand, eager) or len(merged.calls) != merged.n_rounds:
        raise AssertionError("the merged on-demand prediction differs from the eager one")

    start = time.perf_counter()
    steps = h.next_features_steps(model, x[0])
    out["next_features"] = time.perf_counter() - start

    start = time.perf_counter()
    booster.predict(x, num_threads=1)
    out["lightgbm"] = time.perf_counter() - start
    return out, source, steps


def run_point(spec):
    from datasets import make_synthetic_binary

    import cbudget
    n = spec["train_rows"] + spec["test_rows"]
    data = make_synthetic_binary(n, seed=0, test_fraction=spec["test_rows"] / n)
    X = np.asarray(data["X_train"], dtype=np.float64)
    with h.Timer() as t_train:
        model, booster = train_models(spec, X, data["y_train"])
    X_test = np.asarray(data["X_test"], dtype=np.float64)[:spec["requests"]]
    for i in range(min(20, len(X_test))):                   # warm up every path
        one_request(model, booster, X_test[i:i + 1], cbudget)
    times = {way: [] for way in WAYS}
    steps, rounds, calls, features = [], [], [], []
    spinners = [subprocess.Popen([sys.executable, "-c", "while True: pass"])
                for _ in range(spec["busy"])]
    try:
        with h.Timer() as t:
            for _ in range(spec["repeats"]):
                for i in range(len(X_test)):
                    out, source, step = one_request(model, booster, X_test[i:i + 1], cbudget)
                    for way in WAYS:
                        times[way].append(out[way])
                    steps += step
                    rounds.append(source.n_rounds)
                    calls.append(len(source.calls))
                    features.append(int(source.acquired.sum()))
    finally:
        for p in spinners:
            p.kill()

    def us(values):
        return {"p50": 1e6 * float(np.quantile(values, 0.5)),
                "p99": 1e6 * float(np.quantile(values, 0.99)), "n": len(values)}
    return {"model": spec["model"], "busy": spec["busy"],
            "latency_us": {way: us(v) for way, v in times.items()},
            "next_features_step_us": us(steps),
            "rounds": float(np.mean(rounds)), "calls": float(np.mean(calls)),
            "features_per_input": float(np.mean(features)),
            "features_used": int(model.used_features().size), "trees": len(model.trees),
            "model_train_s": t_train.wall, "train_s": t.wall, "train_cpu_s": t.cpu,
            "other_cores_during_train": t.other}


# ------------------------------------------------------------------------ report
def _load(r):
    return "idle" if not r["busy"] else f"{r['busy']} busy"


def render(doc):
    ok = [r for rs in doc["results"].values() for r in h.ok_results(rs)]
    lines = [f"Settings: {doc['settings']}. Microseconds per request, p50 / p99 over "
             "repeats x requests; ratios of the p50s.", ""]
    rows = []
    for r in ok:
        lat = r["latency_us"]
        rows.append([r["model"], _load(r), r["trees"], f"{r['features_per_input']:.1f}",
                     f"{r['rounds']:.1f}", f"{r['calls']:.1f}"]
                    + [f"{lat[w]['p50']:.0f} / {lat[w]['p99']:.0f}" for w in WAYS]
                    + [f"{lat['on_demand']['p50'] / lat['eager']['p50']:.1f}",
                       f"{lat['on_demand_merged']['p50'] / lat['eager']['p50']:.1f}",
                       f"{lat['on_demand']['p50'] / lat['lightgbm']['p50']:.1f}",
                       f"{lat['eager']['p50'] / lat['lightgbm']['p50']:.2f}",
                       f"{r['next_features_step_us']['p50']:.0f} / "
                       f"{r['next_features_step_us']['p99']:.0f}"])
    return lines + h.table(
        ["model", "machine", "trees", "features / input", "rounds", "fetch calls",
         "eager", "on-demand", "on-demand, merged calls", "next_features loop", "LightGBM",
         "on-demand / eager", "merged / eager", "on-demand / LightGBM", "eager / LightGBM",
         "next_features per step"],
        rows, "llrrrrrrrrrrrrrr") + [""]


if __name__ == "__main__":
    sys.exit(h.main(sys.modules[__name__]))
