"""Exit outputs benchmark: test AUC and log-loss of binary exits with partial scores vs
calibrated output maps (issue 43, "Exit outputs that keep their quality").

Per data set: cbudget CEGB trained on the training split; exit rules calibrated on the
validation split at each epsilon, once with ``outputs="partial"`` (an exited input
outputs its scores so far) and once with ``outputs="calibrated"`` (per check, an
isotonic map of the partial score to the full model's probability); also maps fitted to
the validation labels instead (``exits.fit_outputs`` with the labels as the target).
Everything is reported on the test split. Goal (issue 43): test AUC within 0.005 of
the full model's at no more than 2/3 of its mean cost; log-loss too (here: test
log-loss within 0.005 of the full model's at no more than 2/3 of its cost). The
"tolerance" points calibrate binary exits with a probability tolerance
(``calibrate_exits(dvalid, epsilon, every=..., tolerance=t)``: an exit that moves the
probability by more than ``t`` counts against epsilon like a class change).

    CBUDGET_DATA_DIR=/work/shared/data PYTHONPATH=. python benchmarks/bench_exit_outputs.py \
        --output benchmarks/results/exit_outputs.md

With ``--path``, also ``cbudget.cost_path`` with ``exit_epsilons`` on the synthetic set,
scored by log-loss and by AUC: the validation front and its points with exits. With
``--multiclass``, Letters' 26 classes: multi-class log-loss of partial scores vs the
per-check temperatures.
"""
import argparse
import os
import platform
import sys
import time
import warnings

import datasets
import numpy as np

import cbudget
from cbudget import exits
from cbudget.metrics import METRICS

EPSILONS = (0.0, 0.0005, 0.001, 0.005, 0.02)
# the probability tolerance's grid (calibrate_exits(tolerance=...)), with its epsilons
TOLERANCES = (0.01, 0.02, 0.03, 0.05, 0.07, 0.1)
TOLERANCE_EPSILONS = (0.02, 0.05, 0.1, 0.2)
# checks after every 1, 10, 20 or 40 iterations (calibrate_exits(every=...))
EVERY = (1, 10, 20, 40)
GOAL_AUC, GOAL_LOGLOSS, GOAL_RATIO = 0.005, 0.005, 2 / 3
BASE = {"objective": "binary:logistic", "algorithm": "cegb", "learning_rate": 0.1,
        "grow_policy": "lossguide", "num_leaves": 31, "min_data_in_leaf": 20,
        "reg_lambda": 1.0, "n_jobs": 2, "seed": 0}


def synthetic_costly(rows):
    d = datasets.make_synthetic_costly(n_samples=rows, seed=0)
    return d, "synthetic costly (make_synthetic_costly seed 0, 32 features priced 1-200)"


def mnist_4_vs_9(rows):
    d = datasets.load_mnist_multires()
    out = {}
    for part in ("train", "valid", "test"):
        keep = np.isin(d[f"y_{part}"], (4, 9))
        out[f"X_{part}"] = np.ascontiguousarray(d[f"X_{part}"][keep][:rows])
        out[f"y_{part}"] = (d[f"y_{part}"][keep][:rows] == 9).astype(np.int32)
    # the resolutions as cost tiers: a 4x4 pixel costs 1, 8x8 2, 16x16 4, 28x28 8
    costs = np.empty(d["feature_costs"].size)
    for tier, (_, cols) in enumerate(sorted(d["resolution_slices"].items())):
        costs[cols] = 2.0 ** tier
    out["feature_costs"] = costs
    return out, ("MNIST 9 vs 4, multi-resolution (4x4 / 8x8 / 16x16 / 28x28 pixels cost "
                 "1 / 2 / 4 / 8)")


def letters_halves(rows):
    d = datasets.load_letters()
    out = {f"{k}_{p}": d[f"{k}_{p}"] for k in ("X", "y") for p in ("train", "valid", "test")}
    for p in ("train", "valid", "test"):
        out[f"y_{p}"] = (d[f"y_{p}"] >= 13).astype(np.int32)      # A-M vs N-Z
    # every feature costs 1 in the papers; priced 1..16 here so that costs differ
    out["feature_costs"] = np.arange(1.0, 17.0)
    return out, "Letters A-M vs N-Z (16 features priced 1, 2, ..., 16)"


DATA = {"synthetic_costly": (synthetic_costly, 1e-4, 200),
        "mnist_4_vs_9": (mnist_4_vs_9, 1e-3, 100),
        "letters_halves": (letters_halves, 3e-3, 200)}


def label_maps(model, X, y, rules):
    """``rules`` with their maps refitted to the labels ``y`` of ``X`` (the
    validation inputs) instead of the full model's probability."""
    rules = exits.ExitRules(rules.rule, rules.iterations, rules.check_after, rules.lower,
                            rules.upper, dict(rules.calibration))

    def stages():
        for k, c in enumerate(rules.check_after.tolist()):
            yield k, model.predict(X, output_margin=True, iteration_range=(0, c),
                                   early_exit=False).reshape(-1, 1)
    exits.fit_outputs(stages(), y.astype(np.float64), None, [rules])
    return rules


def point(model, X, y, rules, full_cost):
    model.exit_rules = rules
    p = model.predict(X)
    cost = float(model.predict_cost(X).mean())
    return {"auc": METRICS["auc"](y, p, None), "logloss": METRICS["logloss"](y, p, None),
            "error": METRICS["error"](y, p, None), "cost_ratio": cost / full_cost}


def run(name, rows, epsilons):
    loader, lam, rounds = DATA[name]
    d, title = loader(rows)
    dtrain = cbudget.Dataset(d["X_train"], d["y_train"], feature_costs=d["feature_costs"])
    dvalid = cbudget.Dataset(d["X_valid"], d["y_valid"])
    Xt, yt = d["X_test"], d["y_test"]
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = cbudget.train(dict(BASE, cost_tradeoff=lam), dtrain, rounds)
    train_s = time.perf_counter() - t0
    p_full = model.predict(Xt, early_exit=False)
    full_cost = float(model.predict_cost(Xt, early_exit=False).mean())
    full = {"auc": METRICS["auc"](yt, p_full, None),
            "logloss": METRICS["logloss"](yt, p_full, None),
            "error": METRICS["error"](yt, p_full, None), "cost": full_cost}
    points = []
    for every, eps in ((e, x) for e in EVERY for x in epsilons):
        row = {"epsilon": eps, "every": every}
        for outputs in ("partial", "calibrated"):
            t0 = time.perf_counter()
            rules = model.calibrate_exits(dvalid, eps, every=every, outputs=outputs)
            row[f"{outputs}_s"] = time.perf_counter() - t0
            row[outputs] = point(model, Xt, yt, rules, full_cost)
        row["labels"] = point(model, Xt, yt, label_maps(model, d["X_valid"], d["y_valid"],
                                                        rules), full_cost)
        points.append(row)
        print(name, every, eps, {k: row[k] for k in ("partial", "calibrated", "labels")},
              file=sys.stderr, flush=True)
    tolerance_points = []
    for every, eps, tol in ((e, x, t) for e in EVERY for x in TOLERANCE_EPSILONS
                            for t in TOLERANCES):
        t0 = time.perf_counter()
        rules = model.calibrate_exits(dvalid, eps, every=every, tolerance=tol)
        row = {"epsilon": eps, "every": every, "tolerance": tol,
               "s": time.perf_counter() - t0,
               "disagreement": rules.calibration["disagreement"],
               "tolerance_family": point(model, Xt, yt, rules, full_cost)}
        tolerance_points.append(row)
        print(name, every, eps, tol, row["tolerance_family"], file=sys.stderr, flush=True)
    return {"name": name, "title": title, "lambda": lam, "rounds": rounds,
            "rows": {p: int(d[f"y_{p}"].size) for p in ("train", "valid", "test")},
            "train_s": train_s, "full": full, "points": points,
            "tolerance_points": tolerance_points, "model": model}


FAMILIES = ("partial", "calibrated", "labels", "tolerance_family")


def goal(result, family, metric="auc"):
    """The cheapest point of ``family`` within GOAL_AUC of the full model's test AUC
    (``metric="logloss"``: within GOAL_LOGLOSS of its log-loss) at no more than
    GOAL_RATIO of its cost (None if none)."""
    points = result["tolerance_points" if family == "tolerance_family" else "points"]
    if metric == "auc":
        ok = [p for p in points if result["full"]["auc"] - p[family]["auc"] <= GOAL_AUC
              and p[family]["cost_ratio"] <= GOAL_RATIO]
    else:
        ok = [p for p in points
              if p[family]["logloss"] - result["full"]["logloss"] <= GOAL_LOGLOSS
              and p[family]["cost_ratio"] <= GOAL_RATIO]
    return min(ok, key=lambda p: p[family]["cost_ratio"]) if ok else None


def goal_cell(result, family, metric):
    g = goal(result, family, metric)
    if g is None:
        return "no"
    tol = f", tol {g['tolerance']:g}" if "tolerance" in g else ""
    return (f"yes: every {g['every']}, eps {g['epsilon']:g}{tol}, AUC "
            f"{g[family]['auc']:.4f}, log-loss {g[family]['logloss']:.4f}, cost "
            f"x{g[family]['cost_ratio']:.3f}")


def describe(point, full):
    """A tolerance point in words: its setting, cost ratio, log-loss and AUC."""
    t = point["tolerance_family"]
    return (f"every {point['every']}, eps {point['epsilon']:g}, tol {point['tolerance']:g}: "
            f"cost x{t['cost_ratio']:.3f}, log-loss {t['logloss']:.4f} "
            f"({t['logloss'] - full['logloss']:+.4f}), AUC {t['auc']:.4f}")


def render(results, command, timings):
    lines = ["# Exit outputs: partial scores, calibrated maps, a probability tolerance "
             "(issue 43)", "",
             "Command:", "", "```", command, "```", "",
             f"Machine: {platform.machine()}, Python {platform.python_version()}, numpy "
             f"{np.__version__}, cbudget from {cbudget.__file__}.", "",
             "Families: 'partial' (partial scores), 'calibrated' (maps to the full "
             "model's probability, the default), 'labels' (maps to the validation "
             "labels), all with the class rule; 'tolerance' (maps, calibrated with a "
             "probability tolerance)."]
    for metric, what, within in (("auc", "AUC", GOAL_AUC), ("logloss", "log-loss",
                                                           GOAL_LOGLOSS)):
        lines += ["", f"Goal: test {what} within {within} of the full model's at no more "
                  "than 2/3 of its mean cost (cost ratio <= 0.667); the cheapest setting "
                  "meeting it.", "",
                  "| data set | full AUC | full log-loss | partial | calibrated | labels | "
                  "tolerance |", "|---|---:|---:|---|---|---|---|"]
        lines += [f"| {r['name']} | {r['full']['auc']:.4f} | {r['full']['logloss']:.4f} | "
                  + " | ".join(goal_cell(r, fam, metric) for fam in FAMILIES) + " |"
                  for r in results]
    for r in results:
        f = r["full"]
        lines += ["", f"## {r['title']}", "",
                  f"CEGB cost_tradeoff {r['lambda']:g}, {r['rounds']} rounds; rows "
                  f"{r['rows']['train']:,} train / {r['rows']['valid']:,} valid / "
                  f"{r['rows']['test']:,} test; trained in {r['train_s']:.1f} s.", "",
                  f"Full model on test: AUC {f['auc']:.4f}, log-loss {f['logloss']:.4f}, "
                  f"error {f['error']:.4f}, mean cost {f['cost']:.2f}.", "",
                  "Exits (test): cost ratio = mean cost with exits / full model's (the "
                  "same for the three outputs); 'calibrated' maps to the full model's "
                  "probability (the default), 'labels' to the validation labels.", "",
                  "| every | epsilon | cost ratio | AUC partial | AUC calibrated | AUC labels | "
                  "log-loss partial | log-loss calibrated | log-loss labels | error partial "
                  "| error calibrated | calibrate s (partial / calibrated) |",
                  "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
        for p in r["points"]:
            a, c, b = p["partial"], p["calibrated"], p["labels"]
            lines.append(f"| {p['every']} | {p['epsilon']:g} | {c['cost_ratio']:.3f} | "
                         f"{a['auc']:.4f} | {c['auc']:.4f} | {b['auc']:.4f} | {a['logloss']:.4f} | "
                         f"{c['logloss']:.4f} | {b['logloss']:.4f} | {a['error']:.4f} | "
                         f"{c['error']:.4f} | {p['partial_s']:.2f} / {p['calibrated_s']:.2f} |")
        lines += ["", "Exits calibrated with a probability tolerance (maps; test): "
                  "'disagreement' is the validation fraction whose class or probability "
                  "(beyond the tolerance) differs from the full model's.", "",
                  "| every | epsilon | tolerance | cost ratio | AUC | log-loss | log-loss - "
                  "full | error | validation disagreement | calibrate s |",
                  "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
        for p in r["tolerance_points"]:
            t = p["tolerance_family"]
            lines.append(f"| {p['every']} | {p['epsilon']:g} | {p['tolerance']:g} | "
                         f"{t['cost_ratio']:.3f} | {t['auc']:.4f} | {t['logloss']:.4f} | "
                         f"{t['logloss'] - f['logloss']:+.4f} | {t['error']:.4f} | "
                         f"{p['disagreement']:.4f} | {p['s']:.2f} |")
        near = [p for p in r["tolerance_points"]
                if p["tolerance_family"]["logloss"] - f["logloss"] <= GOAL_LOGLOSS]
        cheap = [p for p in r["tolerance_points"]
                 if p["tolerance_family"]["cost_ratio"] <= GOAL_RATIO]
        lines += ["", "Cheapest tolerance setting with test log-loss within "
                  f"{GOAL_LOGLOSS} (any cost): "
                  + (describe(min(near, key=lambda p: p["tolerance_family"]["cost_ratio"]), f)
                     if near else "none") + ". Lowest test log-loss at a cost ratio <= "
                  "0.667: " + (describe(min(cheap, key=lambda p: p["tolerance_family"]
                                            ["logloss"]), f) if cheap else "none") + "."]
    if timings:
        lines += ["", "## Prediction time", "",
                  "predict (probabilities) with exit rules on 100,000 rows (test rows "
                  "tiled), best of 5, 2 threads:", "",
                  "| data set | no exits s | exits, partial s | exits, calibrated maps s |",
                  "|---|---:|---:|---:|"]
        lines += [f"| {name} | {a:.3f} | {b:.3f} | {c:.3f} |" for name, a, b, c in timings]
    return "\n".join(lines) + "\n"


def time_predict(model, X, rules_partial, rules_calibrated, repeat=5):
    out = []
    for rules, early in ((None, False), (rules_partial, None), (rules_calibrated, None)):
        model.exit_rules = rules
        best = np.inf
        for _ in range(repeat):
            t0 = time.perf_counter()
            model.predict(X, early_exit=early)
            best = min(best, time.perf_counter() - t0)
        out.append(best)
    return out


def multiclass_section():
    """Letters, 26 classes: test mlogloss / merror with partial vs calibrated outputs."""
    d = datasets.load_letters()
    costs = np.arange(1.0, 17.0)
    dtrain = cbudget.Dataset(d["X_train"], d["y_train"], feature_costs=costs)
    dvalid = cbudget.Dataset(d["X_valid"], d["y_valid"])
    Xt, yt = d["X_test"], d["y_test"]
    params = {"objective": "multi:softprob", "num_class": 26, "algorithm": "cegb",
              "cost_tradeoff": 3e-3, "learning_rate": 0.1, "num_leaves": 31, "n_jobs": 2,
              "seed": 0}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = cbudget.train(params, dtrain, 100)
    p_full = model.predict(Xt, early_exit=False)
    full_cost = float(model.predict_cost(Xt, early_exit=False).mean())
    lines = ["", "## Multiclass: Letters, 26 classes", "",
             "CEGB cost_tradeoff 3e-3, 100 rounds, features priced 1..16; full model on "
             f"test: mlogloss {METRICS['mlogloss'](yt, p_full, None):.4f}, merror "
             f"{METRICS['merror'](yt, p_full, None):.4f}. Calibrated: per check a "
             "temperature of the class scores (range of the fitted scales in the last "
             "column).", "",
             "| every | epsilon | cost ratio | mlogloss partial | mlogloss calibrated | "
             "merror partial | merror calibrated | scales min / median / max |",
             "|---:|---:|---:|---:|---:|---:|---:|---|"]
    for every, eps in ((e, x) for e in (1, 10) for x in (0.0, 0.005, 0.02)):
        row = {}
        for outputs in ("partial", "calibrated"):
            rules = model.calibrate_exits(dvalid, eps, every=every, outputs=outputs)
            p = model.predict(Xt)
            row[outputs] = (METRICS["mlogloss"](yt, p, None), METRICS["merror"](yt, p, None))
        scales = [m for m in rules.outputs if m is not None]
        ratio = float(model.predict_cost(Xt).mean()) / full_cost
        spread = " / ".join(f"{v:.2f}" for v in np.percentile(scales, [0, 50, 100])) \
            if scales else ""
        lines.append(f"| {every} | {eps:g} | {ratio:.3f} | {row['partial'][0]:.4f} | "
                     f"{row['calibrated'][0]:.4f} | {row['partial'][1]:.4f} | "
                     f"{row['calibrated'][1]:.4f} | {spread} |")
    return "\n".join(lines) + "\n"


def path_section(rows=30_000):
    """The validation front of ``cbudget.cost_path`` with exits, by log-loss and AUC."""
    d, title = synthetic_costly(rows)
    dtrain = cbudget.Dataset(d["X_train"], d["y_train"], feature_costs=d["feature_costs"])
    dvalid = cbudget.Dataset(d["X_valid"], d["y_valid"])
    params = {k: v for k, v in BASE.items() if k not in ("grow_policy", "min_data_in_leaf",
                                                          "reg_lambda")}
    lines = ["", "## cost_path with exits", "",
             f"{title}, {rows:,} rows; `cbudget.cost_path(params, dtrain, dvalid, "
             "num_boost_round=100, lambdas=[1e-3, 3e-4, 1e-4, 0], metric=..., "
             "exit_epsilons=[0, 0.001, 0.005, 0.02], exit_every=10)`; validation front:", ""]
    for metric in ("logloss", "auc"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            path = cbudget.cost_path(params, dtrain, dvalid, num_boost_round=100,
                                     lambdas=[1e-3, 3e-4, 1e-4, 0.0], metric=metric,
                                     exit_epsilons=[0.0, 0.001, 0.005, 0.02], exit_every=10)
        front = np.flatnonzero(path.pareto)
        exited = [i for i in front if not np.isnan(path.epsilons[i])]
        lines += [f"- {metric}: {len(front)} front points, {len(exited)} with exits: "
                  + "; ".join(f"lambda {path.lambdas[i]:g} eps {path.epsilons[i]:g} cost "
                              f"{path.costs[i]:.1f} {metric} {path.scores[i]:.4f}"
                              for i in front)]
    return "\n".join(lines) + "\n"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--datasets", default="synthetic_costly,mnist_4_vs_9,letters_halves")
    parser.add_argument("--rows", type=int, default=60_000,
                        help="synthetic: total rows; the others: rows per split at most")
    parser.add_argument("--output", default=None)
    parser.add_argument("--multiclass", action="store_true",
                        help="also Letters' 26 classes: partial vs temperature outputs")
    parser.add_argument("--path", action="store_true",
                        help="also the cost path's front with exits (synthetic set)")
    args = parser.parse_args()
    env = " ".join(f"{k}={os.environ[k]}" for k in ("CBUDGET_DATA_DIR", "PYTHONPATH")
                   if k in os.environ)
    command = f"{env} python " + " ".join(sys.argv)
    results, timings = [], []
    for name in args.datasets.split(","):
        r = run(name, args.rows, EPSILONS)
        results.append(r)
        d, _ = DATA[name][0](args.rows)
        X = np.resize(d["X_test"], (100_000, d["X_test"].shape[1]))
        model = r["model"]
        dvalid = cbudget.Dataset(d["X_valid"], d["y_valid"])
        rp = model.calibrate_exits(dvalid, 0.005, outputs="partial")
        rc = model.calibrate_exits(dvalid, 0.005)
        timings.append((name, *time_predict(model, X, rp, rc)))
    text = render(results, command, timings)
    if args.multiclass:
        text += multiclass_section()
    if args.path:
        text += path_section()
    if args.output:
        with open(args.output, "w") as f:
            f.write(text)
    print(text)


if __name__ == "__main__":
    main()
