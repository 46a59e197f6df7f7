"""Monotone constraints (issue 47): accuracy and training time of cbudget's gbdt, cegb and
greedy_miser with and without ``monotone_constraints``, against LightGBM's basic method
(``monotone_constraints_method="basic"``) with the same trees.

Data: Ames housing (log sale price, RMSE; 40 categorical columns as pandas categories)
with ``Gr_Liv_Area`` +1 ("one") or four size/age features +1 ("four"), and Lending Club
(default, logloss) with ``int_rate`` +1 and ``annual_inc`` -1. Five splits (``seed`` 0-4
of the loaders: a different permutation each), the same rounds, leaves, learning rate,
L2, min_data_in_leaf and max_bin for both libraries (``harness.library_params``), one
thread. cegb / greedy_miser train with the data's feature costs at 5% of its
``lambda_max``; greedy_miser with its own trees (depth 4, no L2).
Per model: the test metric, the training time, and the largest step against a
constraint's direction over sweeps of each constrained feature (200 test rows x its
training quantiles; <= 0: monotone).

    CBUDGET_DATA_DIR=<data dir> python benchmarks/bench_monotone.py [--rounds 300]
        [--seeds 5] [--out benchmarks/results/monotone.json]
"""
import argparse
import json
import time

import datasets
import harness as h
import lightgbm as lgb
import numpy as np

import cbudget

SETTINGS = {
    "ames": {"one": {"Gr_Liv_Area": 1},
             "four": {"Gr_Liv_Area": 1, "Total_Bsmt_SF": 1, "Lot_Area": 1,
                      "Year_Built": 1}},
    "lending_club": {"two": {"int_rate": 1, "annual_inc": -1}},
}
LOADERS = {"ames": datasets.load_ames, "lending_club": datasets.load_lending_club_frame}
SYSTEMS = ("gbdt", "cegb", "greedy_miser", "lightgbm")


def metric(task, y, pred):
    if task == "binary":
        p = np.clip(pred, 1e-15, 1 - 1e-15)
        return float(-np.mean(y * np.log(p) + (1 - y) * np.log(1 - p)))
    return float(np.sqrt(np.mean((pred - y) ** 2)))


def worst_step(predict, X, constraints, quantiles):
    """The largest step against a direction over the sweeps of each constrained feature."""
    rows = X.iloc[:200]
    worst = -np.inf
    for name, direction in constraints.items():
        grid = quantiles[name]
        sweep = rows.iloc[np.repeat(np.arange(len(rows)), grid.size)].copy()
        sweep[name] = np.tile(grid, len(rows)).astype(sweep[name].dtype)
        pred = np.asarray(predict(sweep)).reshape(len(rows), grid.size)
        worst = max(worst, float(np.max(-direction * np.diff(pred, axis=1))))
    return worst


def training_data(data):
    return cbudget.Dataset(data["X_train"], data["y_train"],
                           feature_costs=list(data["feature_costs"]))


def run(data, system, constraints, rounds, lambdas):
    binary = data["task"] == "binary"
    names = list(data["X_train"].columns)
    if system == "lightgbm":
        p = h.library_params("lightgbm", 2 if binary else 0, 1)
        p["objective"] = "binary" if binary else "regression"
        p.pop("num_class", None)
        if constraints:
            p["monotone_constraints"] = [constraints.get(n, 0) for n in names]
            p["monotone_constraints_method"] = "basic"
        start = time.perf_counter()
        model = lgb.train(p, lgb.Dataset(data["X_train"], data["y_train"]), rounds)
        seconds = time.perf_counter() - start
        leaves = sum(t["num_leaves"] for t in model.dump_model()["tree_info"])
    else:
        p = h.library_params("cbudget", 2 if binary else 0, 1)
        p["objective"] = "binary:logistic" if binary else "reg:squarederror"
        p.pop("num_class", None)
        p.update(algorithm=system, verbosity=0, monotone_constraints=constraints or None)
        if system == "greedy_miser":        # its own trees: depth 4, no L2
            for key in ("grow_policy", "num_leaves", "reg_lambda"):
                p.pop(key)
        dtrain = training_data(data)
        if system != "gbdt":
            p["cost_tradeoff"] = 0.05 * lambdas[system]
        start = time.perf_counter()
        model = cbudget.train(p, dtrain, rounds)
        seconds = time.perf_counter() - start
        leaves = sum(int((tree["left"] == -1).sum()) for tree in model.trees)
    return model.predict, seconds, leaves


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=300)
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--out", default="benchmarks/results/monotone.json")
    parser.add_argument("--summarise", metavar="JSON",
                        help="only print the tables of an earlier run's results")
    parser.add_argument("--timing", type=int, metavar="REPEATS",
                        help="only time training on Ames (seed 0), each setting REPEATS "
                             "times interleaved (the fastest of each), and the "
                             "constrained path's overhead on same-tree synthetic data")
    args = parser.parse_args()
    if args.summarise:
        with open(args.summarise) as f:
            summarise(json.load(f)["results"])
        return
    if args.timing:
        timing(args.rounds, args.timing)
        overhead(args.rounds, args.timing)
        return
    results = []
    for name, settings in SETTINGS.items():
        for seed in range(args.seeds):
            data = LOADERS[name](seed=seed)
            quantiles = {f: np.unique(np.nanquantile(data["X_train"][f].to_numpy(np.float64),
                                                     np.linspace(0, 1, 40)))
                         for setting in settings.values() for f in setting}
            dtrain = training_data(data)
            objective = "binary:logistic" if data["task"] == "binary" else "reg:squarederror"
            lambdas = {a: cbudget.lambda_max({"algorithm": a, "objective": objective}, dtrain)
                       for a in ("cegb", "greedy_miser")}
            for system in SYSTEMS:
                for setting, constraints in [("none", {})] + list(settings.items()):
                    predict, seconds, _ = run(data, system, constraints, args.rounds,
                                              lambdas)
                    score = metric(data["task"], data["y_test"], predict(data["X_test"]))
                    steps = worst_step(predict, data["X_test"], dict(
                        (f, d) for s in settings.values() for f, d in s.items())
                        if not constraints else constraints, quantiles)
                    results.append({"dataset": name, "seed": seed, "system": system,
                                    "setting": setting, "metric": score,
                                    "seconds": seconds, "worst_step": steps})
                    print(json.dumps(results[-1]), flush=True)
    with open(args.out, "w") as f:
        json.dump({"rounds": args.rounds, "seeds": args.seeds,
                   "lightgbm": lgb.__version__, "results": results}, f, indent=1)
    summarise(results)


def timing(rounds, repeats):
    """The fastest of ``repeats`` trainings per (system, setting) on Ames, interleaved
    (the machine's other load falls on every setting alike)."""
    data = LOADERS["ames"](seed=0)
    dtrain = training_data(data)
    lambdas = {a: cbudget.lambda_max({"algorithm": a}, dtrain) for a in ("cegb", "greedy_miser")}
    settings = [("none", {})] + list(SETTINGS["ames"].items())
    times, leaves = {}, {}
    for _ in range(repeats):
        for system in SYSTEMS:
            for setting, constraints in settings:
                _, seconds, leaves[(system, setting)] = run(data, system, constraints,
                                                            rounds, lambdas)
                key = (system, setting)
                times[key] = min(times.get(key, np.inf), seconds)
    print("Fastest training, seconds (ms per 1,000 leaves grown):")
    print()
    print(f"| system | {' | '.join(s for s, _ in settings)} | per leaf, four / none |")
    print(f"|---|{'---|' * len(settings)}---|")
    for system in SYSTEMS:
        per_leaf = [1e6 * times[(system, s)] / leaves[(system, s)] for s, _ in settings]
        cells = [f"{times[(system, s)]:.3f} ({p:.0f})" for (s, _), p in zip(settings, per_leaf)]
        print(f"| {system} | {' | '.join(cells)} | {per_leaf[-1] / per_leaf[0]:.2f} |")


def overhead(rounds, repeats):
    """The constrained code path's own cost: on data whose every effect is increasing
    (y = x0 + 2 x1 + x2, 20,000 rows, 10 features, no noise) the constrained gbdt grows
    (nearly) the unconstrained trees, so the time difference is the bounds' and the
    clipped gains' work, not other trees."""
    rng = np.random.default_rng(0)
    X = rng.uniform(size=(20_000, 10))
    y = X[:, 0] + 2 * X[:, 1] + X[:, 2]
    dtrain = cbudget.Dataset(X, y)
    p = dict(h.library_params("cbudget", 0, 1), objective="reg:squarederror", verbosity=0)
    p.pop("num_class", None)
    times, models = {}, {}
    for _ in range(repeats):
        for setting, constraints in (("none", None), ("+1 on x0, x1, x2", [1, 1, 1] + [0] * 7)):
            start = time.perf_counter()
            models[setting] = cbudget.train(dict(p, monotone_constraints=constraints),
                                            dtrain, rounds)
            times[setting] = min(times.get(setting, np.inf), time.perf_counter() - start)
    print("| constraints | fastest s | leaves | max abs prediction difference |")
    print("|---|---|---|---|")
    for setting, model in models.items():
        difference = np.abs(model.predict(X) - models["none"].predict(X)).max()
        leaves = sum(int((tree["left"] == -1).sum()) for tree in model.trees)
        print(f"| {setting} | {times[setting]:.3f} | {leaves} | {difference:.2g} |")


def summarise(results):
    """Per data set, setting and system: mean (sd) test metric over the seeds, median
    training time, largest step against a direction."""
    keys = sorted({(r["dataset"], r["setting"]) for r in results}, key=str)
    print("| data | constraints | system | test metric, mean (sd) | time s (median) | "
          "worst step |")
    print("|---|---|---|---|---|---|")
    for dataset, setting in keys:
        for system in SYSTEMS:
            rows = [r for r in results if (r["dataset"], r["setting"], r["system"])
                    == (dataset, setting, system)]
            if not rows:
                continue
            m = np.array([r["metric"] for r in rows])
            sd = m.std(ddof=1) if m.size > 1 else 0.0
            print(f"| {dataset} | {setting} | {system} | {m.mean():.4f} ({sd:.4f}) | "
                  f"{np.median([r['seconds'] for r in rows]):.3f} | "
                  f"{max(r['worst_step'] for r in rows):.2g} |")
    print()
    print("Paired by split (seed): mean difference (standard error) of the test metric")
    print()
    print("| data | constraints | system | constrained - none | gbdt - lightgbm |")
    print("|---|---|---|---|---|")
    by = {(r["dataset"], r["setting"], r["system"], r["seed"]): r["metric"] for r in results}
    seeds = sorted({r["seed"] for r in results})
    for dataset, setting in keys:
        for system in SYSTEMS if setting != "none" else ("gbdt",):
            cells = []
            for k, other in enumerate(((dataset, "none", system), (dataset, setting, "lightgbm"))):
                # nothing to compare "none" with; the matched trees only against LightGBM
                if (k == 0 and setting == "none") or (k == 1 and system != "gbdt"):
                    cells.append("")
                    continue
                d = np.array([by[(dataset, setting, system, k)] - by[(*other, k)]
                              for k in seeds])
                se = d.std(ddof=1) / np.sqrt(d.size) if d.size > 1 else 0.0
                cells.append(f"{d.mean():+.4f} ({se:.4f})")
            print(f"| {dataset} | {setting} | {system} | {cells[0]} | {cells[1]} |")


if __name__ == "__main__":
    main()
