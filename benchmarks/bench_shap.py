"""TreeSHAP (pred_contrib): agreement with LightGBM and XGBoost, additivity, speed.

Issue 47's measurement of ``pred_contrib``. Per data set (``synthetic``:
make_synthetic_binary, 50 features; ``letters``: UCI Letters, 16 features, 26 classes):
an XGBoost model (depth 6) and a LightGBM model (31 leaves) of ``--rounds`` rounds,
imported with ``cbudget.from_xgboost`` / ``cbudget.from_lightgbm``, explain the first
``--explain-rows`` test rows with cbudget's ``predict(X, pred_contrib=True)`` and with
the library's own (``Booster.predict(DMatrix, pred_contribs=True)``,
``Booster.predict(X, pred_contrib=True)``): the largest absolute difference over every
entry (LightGBM's layout; XGBoost's multi-class array reshaped to it). Additivity: the
largest ``|sum of an output's block - predict(X, output_margin=True)|`` on the imported
models and on cbudget's own gbdt, cegb, greedy_miser boosters and budget_rf forest
(``predict_proba(pred_contrib=True, votes=True)`` against ``predict_proba(votes=True)``),
trained on the first 5,000 training rows with ``--rounds`` rounds (budget_rf: 20 trees).
Speed: cbudget on the XGBoost model against XGBoost on the same trees, and cbudget on
the LightGBM model against LightGBM, each way run ``--repeats`` times interleaved in one
process (median, min and max wall time), ``--threads`` threads in every library.
Protocol: benchmarks/README.md.
"""
import sys

import harness as h
import numpy as np

DATASETS = ("synthetic", "letters")
IDENT = ("dataset",)
ROWS = ("train",)
FULL = {"rounds": 50, "repeats": 5, "explain_rows": 1000}
QUICK = {"rounds": 5, "repeats": 2, "explain_rows": 100, "train_rows": 3_000}
NATIVE_ROWS = 5_000
FOREST_TREES = 20
WAYS = ("cbudget_on_xgboost", "xgboost", "cbudget_on_lightgbm", "lightgbm")


def plan(args, names):
    spec = {key: h.setting(args, key) for key in ("rounds", "repeats", "explain_rows")}
    spec.update(threads=args.threads, train_rows=args.train_rows)
    return [(d, d, dict(spec, dataset=d)) for d in names], {"settings": spec}


# ------------------------------------------------------------------------- child
def load(spec):
    """(X_train, y_train, X_explain, n_classes)."""
    import datasets
    if spec["dataset"] == "synthetic":
        n_train = spec["train_rows"] or 50_000
        data = datasets.make_synthetic_binary(n_train + spec["explain_rows"], seed=0,
                                              test_fraction=spec["explain_rows"]
                                              / (n_train + spec["explain_rows"]))
    else:
        data = datasets.load_letters(seed=0)
    X = np.asarray(data["X_train"], dtype=np.float64)[:spec["train_rows"] or None]
    y = np.asarray(data["y_train"])[:X.shape[0]]
    X_test = np.asarray(data["X_test"], dtype=np.float64)[:spec["explain_rows"]]
    return X, y, X_test, int(data["n_classes"])


def additivity(model, X):
    """Largest |sum of an output's contributions and bias - the margin| on ``X``."""
    if hasattr(model, "vote"):      # a forest: the averaged votes
        blocks = model.predict_proba(X, pred_contrib=True, votes=True)
        target = model.predict_proba(X, votes=True)
    else:
        blocks = model.predict(X, pred_contrib=True)
        target = model.predict(X, output_margin=True)
    sums = blocks.reshape(X.shape[0], -1, X.shape[1] + 1).sum(axis=2)
    return float(np.abs(sums - target.reshape(X.shape[0], -1)).max())


def run_point(spec):
    import lightgbm as lgb
    import xgboost as xgb

    import cbudget
    X, y, X_test, n_classes = load(spec)
    threads = spec["threads"]
    multi = n_classes > 2
    xgb_params = {"max_depth": 6, "eta": 0.1, "nthread": threads, "seed": 0,
                  "objective": "multi:softprob" if multi else "binary:logistic"}
    lgb_params = {"num_leaves": 31, "learning_rate": 0.1, "num_threads": threads,
                  "verbose": -1, "seed": 0, "objective": "multiclass" if multi else "binary"}
    if multi:
        xgb_params["num_class"] = lgb_params["num_class"] = n_classes
    with h.Timer() as t_train:
        xgb_model = xgb.train(xgb_params, xgb.DMatrix(X, y), spec["rounds"])
        lgb_model = lgb.train(lgb_params, lgb.Dataset(X, y), spec["rounds"])
    from_xgb, from_lgb = cbudget.from_xgboost(xgb_model), cbudget.from_lightgbm(lgb_model)
    for model in (from_xgb, from_lgb):
        model.params["n_jobs"] = threads
    d_test = xgb.DMatrix(X_test)
    n = X_test.shape[0]
    ways = {
        "cbudget_on_xgboost": lambda: from_xgb.predict(X_test, pred_contrib=True),
        "xgboost": lambda: xgb_model.predict(d_test, pred_contribs=True).reshape(n, -1),
        "cbudget_on_lightgbm": lambda: from_lgb.predict(X_test, pred_contrib=True),
        "lightgbm": lambda: lgb_model.predict(X_test, pred_contrib=True,
                                              num_threads=threads),
    }
    for run in ways.values():       # warm up every path
        run()
    with h.Timer() as t:        # other processes' load while timing
        timed = h.interleaved(spec["repeats"], **ways)
    out = {way: timed[way][1] for way in WAYS}
    native = {}
    params = {"objective": "multi:softprob" if multi else "binary:logistic",
              "n_jobs": threads, "max_depth": 6}
    if multi:
        params["num_class"] = n_classes
    dtrain = cbudget.Dataset(X[:NATIVE_ROWS], y[:NATIVE_ROWS],
                             feature_costs=np.ones(X.shape[1]))
    for algorithm in ("gbdt", "cegb", "greedy_miser", "budget_rf"):
        extra = {"cost_tradeoff": 0.001} if algorithm == "cegb" else {}
        rounds = FOREST_TREES if algorithm == "budget_rf" else spec["rounds"]
        model = cbudget.train({**params, "algorithm": algorithm, **extra}, dtrain, rounds,
                              verbose_eval=False)
        native[algorithm] = additivity(model, X_test)
    return {
        "dataset": spec["dataset"], "n_classes": n_classes, "features": X.shape[1],
        "train_rows": X.shape[0], "explained_rows": n, "threads": threads,
        "trees_xgboost": len(from_xgb.trees), "trees_lightgbm": len(from_lgb.trees),
        "max_abs_diff_xgboost": float(np.abs(out["cbudget_on_xgboost"] - out["xgboost"]).max()),
        "max_abs_diff_lightgbm": float(np.abs(out["cbudget_on_lightgbm"]
                                              - out["lightgbm"]).max()),
        "max_abs_contribution": float(np.abs(out["xgboost"]).max()),
        "additivity": {"imported_xgboost": additivity(from_xgb, X_test),
                       "imported_lightgbm": additivity(from_lgb, X_test), **native},
        "times": {way: h.wall_spread(timed[way][0]) for way in WAYS},
        "model_train_s": t_train.wall, "train_s": t.wall, "train_cpu_s": t.cpu,
        "other_cores_during_train": t.other,
    }


# ------------------------------------------------------------------------ report
def _seconds(r, way):
    s = r["times"][way]
    return f"{s['median_s']:.3f} ({s['min_s']:.3f}-{s['max_s']:.3f})"


def _ratio(r, way, reference):
    return f"{r['times'][way]['median_s'] / r['times'][reference]['median_s']:.2f}"


def render(doc):
    ok = [r for rs in doc["results"].values() for r in h.ok_results(rs)]
    lines = [f"Settings: {doc['settings']}.", "",
             "Agreement on the imported models (largest absolute difference over every "
             "entry of pred_contrib):", ""]
    lines += h.table(["data set", "classes", "trees (XGBoost / LightGBM)", "rows",
                      "vs XGBoost", "vs LightGBM", "largest |contribution|"],
                     [[r["dataset"], r["n_classes"],
                       f"{r['trees_xgboost']} / {r['trees_lightgbm']}", r["explained_rows"],
                       f"{r['max_abs_diff_xgboost']:.2e}", f"{r['max_abs_diff_lightgbm']:.2e}",
                       f"{r['max_abs_contribution']:.3g}"] for r in ok], "lrrrrrr")
    models = list(ok[0]["additivity"]) if ok else []
    lines += ["", "Additivity (largest |block sum - margin|; budget_rf: - the vote shares):",
              ""]
    lines += h.table(["data set", *models],
                     [[r["dataset"], *(f"{r['additivity'][m]:.1e}" for m in models)]
                      for r in ok], "l" + "r" * len(models))
    lines += ["", "Wall seconds to explain the rows, median (min-max) of the interleaved "
              "repeats, and the ratios of the medians:", ""]
    lines += h.table(["data set", "threads", "cbudget (XGBoost's trees)", "XGBoost",
                      "cbudget / XGBoost", "cbudget (LightGBM's trees)", "LightGBM",
                      "cbudget / LightGBM"],
                     [[r["dataset"], r["threads"], _seconds(r, "cbudget_on_xgboost"),
                       _seconds(r, "xgboost"), _ratio(r, "cbudget_on_xgboost", "xgboost"),
                       _seconds(r, "cbudget_on_lightgbm"), _seconds(r, "lightgbm"),
                       _ratio(r, "cbudget_on_lightgbm", "lightgbm")]
                      for r in ok], "lrrrrrrr")
    return lines + [""]


if __name__ == "__main__":
    sys.exit(h.main(sys.modules[__name__]))
