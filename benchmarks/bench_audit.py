"""Audit benchmark: LightGBM without costs, audited and served on demand, vs CEGB.

A LightGBM model trained without costs, audited and served on demand by cbudget, against
a cbudget CEGB retrain at the same accuracy.

Per data set (the synthetic costly set and multi-resolution MNIST): (1) LightGBM trained
without costs, imported with ``cbudget.from_lightgbm`` and the data set's feature costs
(predictions checked equal to LightGBM's), audited on the test set (mean and quantiles of
the cost per input, the share of inputs that buy each feature, the cost of computing every
feature the model uses) and served on demand (``cbudget.FeatureSource`` fetching each
input's features from the test matrix; eager and on-demand prediction interleaved, idle
and with ``--busy`` processes spinning); (2) cbudget CEGB over a lambda grid, the same
rounds and tree settings; (3) CEGB continuing the imported LightGBM model (``xgb_model=``)
for a few cost-aware rounds. The table picks the cheapest CEGB model whose validation
accuracy reaches LightGBM's. Protocol: benchmarks/README.md.
"""
import subprocess
import sys
import tempfile
from pathlib import Path

import harness as h
import numpy as np

DATASETS = ("synthetic_costly", "mnist_multires")
IDENT = ("dataset", "part", "lambda", "busy")
ROWS, SYNTHETIC_ROWS = ("train", "test"), h.SYNTHETIC_ROWS
FULL = {"rounds": {"synthetic_costly": 200, "mnist_multires": 60},
        "lambdas": {"synthetic_costly": (1e-6, 3e-6, 1e-5, 3e-5, 1e-4),
                    "mnist_multires": (0.0003, 0.001, 0.003)},
        "continue_rounds": {"synthetic_costly": 50, "mnist_multires": 10},
        "continue_lambda": {"synthetic_costly": 1e-4, "mnist_multires": 0.003},
        "repeats": 5}
QUICK = {"rounds": {"synthetic_costly": 20, "mnist_multires": 3},
         "lambdas": {"synthetic_costly": (1e-5, 1e-4), "mnist_multires": (0.003,)},
         "continue_rounds": {"synthetic_costly": 5, "mnist_multires": 2}, "repeats": 2,
         "train_rows": 5000, "n_rows": 20_000}
QUANTILES = (10, 25, 50, 75, 90, 99)


def add_arguments(parser):
    parser.add_argument("--busy", type=int, default=2,
                        help="spinning processes of the busy serving run (default 2; 0: "
                             "idle only)")
    parser.add_argument("--workdir", default=None, help="directory of the LightGBM models")


def plan(args, names):
    spec = {"threads": args.threads, "n_rows": args.n_rows, "train_rows": args.train_rows,
            "test_rows": args.test_rows, "repeats": h.setting(args, "repeats"),
            "workdir": args.workdir or tempfile.mkdtemp(prefix="bench_audit_")}
    jobs = []
    for d in names:
        rounds = h.setting(args, "rounds", d)
        base = dict(spec, dataset=d, rounds=rounds, busy=0, **{"lambda": None})
        jobs.append((d, f"{d} / LightGBM, audit, on demand (idle)", dict(base, part="lightgbm")))
        if args.busy:
            jobs.append((d, f"{d} / on demand ({args.busy} busy)",
                         dict(base, part="serve", busy=args.busy)))
        jobs += [(d, f"{d} / CEGB lambda={lam:g}", dict(base, part="cegb", **{"lambda": lam}))
                 for lam in h.setting(args, "lambdas", d)]
        jobs.append((d, f"{d} / CEGB continuing LightGBM",
                     dict(base, part="continue",
                          **{"lambda": h.setting(args, "continue_lambda", d)},
                          continue_rounds=h.setting(args, "continue_rounds", d))))
    return jobs, {"settings": {k: v for k, v in spec.items() if k != "workdir"}}


# ------------------------------------------------------------------------- child
def lightgbm_params(n_classes, threads):
    """LightGBM without costs, the tree settings of the other benchmarks."""
    return dict(h.library_params("lightgbm", n_classes, threads), deterministic=True)


def model_path(spec):
    return Path(spec["workdir"]) / f"lightgbm_{spec['dataset']}_{spec['rounds']}.txt"


def accuracy(model, X, y):
    return h.accuracy(np.asarray(model.predict(X)), y)


def imported(cbudget, spec, data):
    """The LightGBM model of the data set (trained by the "lightgbm" part) in cbudget."""
    return cbudget.from_lightgbm(str(model_path(spec)), feature_costs=data["feature_costs"],
                                 feature_names=data["feature_names"])


def serve(cbudget, model, X, repeats):
    """Eager ``predict(X)`` against on-demand prediction fetching from ``X``, interleaved;
    the on-demand result checked equal."""
    fetched = []

    def on_demand():
        source = cbudget.FeatureSource(lambda features, rows: X[np.ix_(rows, features)],
                                       X.shape[0])
        prediction = model.predict(source)
        fetched.append(source)
        return prediction

    runs = h.interleaved(repeats, eager=lambda: model.predict(X), on_demand=on_demand)
    eager, lazy = runs["eager"][1], runs["on_demand"][1]
    if not np.array_equal(eager, lazy):
        raise AssertionError("on-demand predictions differ from eager ones")
    source = fetched[-1]
    return {"eager": h.wall_spread(runs["eager"][0]),
            "on_demand": h.wall_spread(runs["on_demand"][0]),
            "fetched_per_input": float(np.asarray(source.acquired).sum() / X.shape[0]),
            "on_demand_cost": float(source.cost().mean()), "rounds": int(source.n_rounds),
            "calls": len(source.calls)}


def run_point(spec):
    """One part; ``other_cores_during_train``: cores other processes kept busy during the
    whole part (the busy serving part's spinners included)."""
    with h.Timer() as whole:
        result = measure(spec)
    result["other_cores_during_train"] = whole.other
    return result


def measure(spec):
    import lightgbm

    import cbudget
    data, result = h.start_child(spec, "cbudget", keep_valid=True)
    costs, X_test, y_test = data["feature_costs"], data["X_test"], data["y_test"]
    result.update(part=spec["part"], busy=spec["busy"], rounds=spec["rounds"],
                  **{"lambda": spec["lambda"]})
    if spec["part"] == "lightgbm":
        params = lightgbm_params(data["n_classes"], spec["threads"])
        with h.Timer() as t:
            booster = lightgbm.train(params, lightgbm.Dataset(data["X_train"], data["y_train"]),
                                     spec["rounds"])
        booster.save_model(str(model_path(spec)))
        with h.Timer() as t_import:
            model = imported(cbudget, spec, data)
        raw = booster.predict(X_test, raw_score=True)
        own = model.predict(X_test, output_margin=True)
        report = model.cost_report(X_test)
        cost = report.per_input_cost
        acquired = model.acquisitions(X_test)
        used = model.used_features()
        share = acquired.mean(axis=0)
        eager_cost = model.cost_model.acquisition_cost(used)
        top = np.argsort(-costs * share, kind="stable")[:12]
        result.update(
            lightgbm_version=lightgbm.__version__, params=params, train_s=t.wall,
            import_s=t_import.wall, n_trees=len(model.trees),
            max_abs_margin_difference=float(np.max(np.abs(np.asarray(raw).reshape(own.shape)
                                                          - own))),
            accuracy=accuracy(booster, X_test, y_test),
            valid_accuracy=accuracy(booster, data["X_valid"], data["y_valid"]),
            mean_cost=report.mean_cost,
            quantiles={str(q): float(np.percentile(cost, q)) for q in QUANTILES},
            max_cost=float(cost.max()), features_used=int(used.size),
            eager_cost=eager_cost, all_features_cost=float(costs.sum()),
            top_features=[{"name": data["feature_names"][m], "cost": float(costs[m]),
                           "share": float(share[m]), "mean_cost": float(costs[m] * share[m])}
                          for m in top if share[m] > 0],
            serving=serve(cbudget, model, X_test, spec["repeats"]))
        if data["n_classes"] == 2:
            result["bayes_accuracy"] = data.get("bayes_accuracy_test")
    elif spec["part"] == "serve":
        model = imported(cbudget, spec, data)
        spinners = [subprocess.Popen([sys.executable, "-c", "while True: pass"])
                    for _ in range(spec["busy"])]
        try:
            result["serving"] = serve(cbudget, model, X_test, spec["repeats"])
        finally:
            for p in spinners:
                p.kill()
        result["mean_cost"] = float(model.predict_cost(X_test).mean())
    else:
        dtrain = cbudget.Dataset(data["X_train"], data["y_train"], feature_costs=costs,
                                 feature_names=data["feature_names"])
        params = dict(h.library_params("cbudget", data["n_classes"], spec["threads"]),
                      algorithm="cegb", cost_tradeoff=float(spec["lambda"]))
        rounds, start = spec["rounds"], None
        if spec["part"] == "continue":
            start = imported(cbudget, spec, data)
            rounds = spec["continue_rounds"]
            result.update(start_accuracy=accuracy(start, X_test, y_test),
                          start_mean_cost=float(start.predict_cost(X_test).mean()),
                          continue_rounds=rounds)
        with h.Timer() as t:
            model = cbudget.train(params, dtrain, rounds, xgb_model=start)
        cost = model.predict_cost(X_test)
        result.update(params=params, train_s=t.wall, n_trees=len(model.trees),
                      accuracy=accuracy(model, X_test, y_test),
                      valid_accuracy=accuracy(model, data["X_valid"], data["y_valid"]),
                      mean_cost=float(cost.mean()),
                      quantiles={str(q): float(np.percentile(cost, q)) for q in QUANTILES},
                      features_used=int(model.used_features().size))
    return result


# ------------------------------------------------------------------------ report
def _ms(s):
    return f"{1000 * s['median_s']:.1f} ({1000 * s['min_s']:.1f}-{1000 * s['max_s']:.1f})"


def render(doc):
    lines = []
    for name, results in doc["results"].items():
        ok = h.ok_results(results)
        lgb = next((r for r in ok if r["part"] == "lightgbm"), None)
        if lgb is None:
            lines += [f"### {h.title(name)}: the LightGBM part failed", ""]
            continue
        lines += [f"### {h.title(name)}: {h.sizes_text(lgb)}, {lgb['rounds']} rounds", ""]
        lines += [f"**LightGBM {lgb['lightgbm_version']} without costs, imported** "
                  f"({lgb['n_trees']} trees, imported in {lgb['import_s']:.2f} s; largest "
                  f"difference of the raw scores from LightGBM's: "
                  f"{lgb['max_abs_margin_difference']:.2g}). Test accuracy "
                  f"{lgb['accuracy']:.4f}. Cost per test input: mean "
                  f"{lgb['mean_cost']:,.2f}, "
                  + ", ".join(f"p{q} {lgb['quantiles'][str(q)]:,.1f}" for q in QUANTILES)
                  + f", max {lgb['max_cost']:,.1f}; {lgb['features_used']} features used, "
                  f"computing all of them costs {lgb['eager_cost']:,.1f} per input "
                  f"(every feature of the data set: {lgb['all_features_cost']:,.0f}).", ""]
        lines += ["Features by what they add to the mean cost (the first 12):", ""]
        lines += h.table(["feature", "cost", "share of inputs that buy it", "adds to mean"],
                         [[f["name"], f"{f['cost']:g}", f"{100 * f['share']:.1f}%",
                           f"{f['mean_cost']:,.2f}"] for f in lgb["top_features"]], "lrrr")
        lines += ["", "Serving on demand (fetching each input's features from the test "
                  "matrix; wall ms, median (min-max) of the interleaved repeats):", ""]
        rows = []
        for r in [lgb] + [r for r in ok if r["part"] == "serve"]:
            s = r["serving"]
            rows.append(["idle" if not r["busy"] else f"{r['busy']} busy",
                         f"{s['fetched_per_input']:.1f}", f"{s['on_demand_cost']:,.2f}",
                         _ms(s["eager"]), _ms(s["on_demand"]),
                         f"{s['on_demand']['median_s'] / s['eager']['median_s']:.2f}",
                         s["rounds"], s["calls"]])
        lines += h.table(["machine", "features fetched / input", "cost / input (on demand)",
                          "eager predict ms", "on-demand ms", "on-demand / eager",
                          "rounds", "fetch calls"], rows, "lrrrrrrr")
        cegb = sorted((r for r in ok if r["part"] == "cegb"), key=lambda r: r["lambda"])
        lines += ["", "cbudget CEGB retrained (same rounds and tree settings):", ""]
        table_rows = [["LightGBM (no costs)", f"{lgb['valid_accuracy']:.4f}",
                       f"{lgb['accuracy']:.4f}", f"{lgb['mean_cost']:,.2f}",
                       f"{lgb['features_used']}", "1.00"]]
        for r in cegb:
            table_rows.append([f"CEGB lambda={r['lambda']:g}", f"{r['valid_accuracy']:.4f}",
                               f"{r['accuracy']:.4f}", f"{r['mean_cost']:,.2f}",
                               f"{r['features_used']}", f"{r['mean_cost'] / lgb['mean_cost']:.2f}"])
        for r in ok:
            if r["part"] == "continue":
                table_rows.append([f"LightGBM + {r['continue_rounds']} CEGB rounds "
                                   f"(lambda={r['lambda']:g})", f"{r['valid_accuracy']:.4f}",
                                   f"{r['accuracy']:.4f}", f"{r['mean_cost']:,.2f}",
                                   f"{r['features_used']}",
                                   f"{r['mean_cost'] / lgb['mean_cost']:.2f}"])
        lines += h.table(["model", "valid accuracy", "test accuracy", "mean cost / test input",
                          "features used", "cost / LightGBM's"], table_rows, "lrrrrr")
        lines += [""] + same_accuracy(lgb, cegb)
    return lines


def same_accuracy(lgb, cegb):
    """The cheapest CEGB model whose validation accuracy reaches LightGBM's, and the
    cheapest within one standard error of it (sqrt(p (1 - p) / n) of LightGBM's validation
    accuracy p on n rows: the noise of the validation set itself)."""
    p, n = lgb["valid_accuracy"], lgb["n_valid"]
    se = float(np.sqrt(p * (1 - p) / n))
    lines = []
    for rule, floor in (("reaches LightGBM's", p), (f"is within one standard error ({se:.4f}) "
                                                    "of LightGBM's", p - se)):
        reached = [r for r in cegb if r["valid_accuracy"] >= floor]
        if not reached:
            lines += [f"- No CEGB model of the grid {rule.replace('is within', 'comes within')}"
                      f" validation accuracy ({p:.4f}).", ""]
            continue
        pick = min(reached, key=lambda r: r["mean_cost"])
        lines += [f"- **Same accuracy:** the cheapest CEGB model whose validation accuracy "
                  f"{rule} ({p:.4f}) is lambda={pick['lambda']:g}: test accuracy "
                  f"{pick['accuracy']:.4f} (LightGBM {lgb['accuracy']:.4f}) at a mean cost of "
                  f"{pick['mean_cost']:,.2f} per test input, against LightGBM's "
                  f"{lgb['mean_cost']:,.2f} served on demand and {lgb['eager_cost']:,.1f} "
                  f"computing every feature it uses: {lgb['mean_cost'] / pick['mean_cost']:.1f}x "
                  f"and {lgb['eager_cost'] / pick['mean_cost']:.1f}x cheaper.", ""]
    return lines


if __name__ == "__main__":
    sys.exit(h.main(sys.modules[__name__]))
