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
        predict = model.predict
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
        predict = model.predict
    return predict, seconds


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=300)
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--out", default="benchmarks/results/monotone.json")
    args = parser.parse_args()
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
                    predict, seconds = run(data, system, constraints, args.rounds, lambdas)
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


if __name__ == "__main__":
    main()
