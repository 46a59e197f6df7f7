"""Export agreement: cbudget models saved as XGBoost models, predicting on float64 data.

Per data set, task and algorithm (gbdt, cegb, greedy_miser): train a cbudget Booster,
save it with ``save_model(path, format="xgboost")``, load it with ``xgboost.Booster``
and predict the held-out rows, given as float64 (XGBoost rounds them to float32), with
both; Treelite (``treelite.frontend.load_xgboost_model`` and ``treelite.gtil``) reads the
same file. Data with repeated float64 values: ``grid3`` (generated: 8 features of three
decimals, uniform on [0, 1) and normal, so every value repeats; binary, multiclass and
regression labels of a documented rule) and two real sets of ``../shared/data`` with
their numeric columns (missing values kept as NaN): Lending Club (binary, ``Class ==
"bad"``) and Ames housing (regression, log of ``Sale_Price``), split 50 / 50 with seed 0.

A row *differs* when an output differs by more than ``1e-6 * max(1, |cbudget's|)``:
XGBoost sums float32 leaf values in float32 and cbudget in float64, which puts the two
about 1e-7 apart (the rows' largest gap on float32 inputs, where routing is exact, is
reported); a row routed to another leaf moves by a leaf value (1e-3 or more here). A row
is *within float32 rounding of a threshold* when one of its inputs ``x`` and one of the
model's thresholds ``T`` on that feature have ``x <= T`` but ``float32(x) >=`` the
exported condition, or the reverse: XGBoost cannot route it as cbudget does at such a
split (whether or not the row reaches it); only those rows may differ. Thresholds are
also counted when they sit on a training value and when float32 cannot tell their two
neighbouring training values apart. Protocol: benchmarks/README.md.
"""
import gzip
import os
import sys
import tempfile

import harness as h
import numpy as np

DATASETS = ("grid3", "lending_club", "ames")
TASKS = {"grid3": ("binary", "multiclass", "regression"), "lending_club": ("binary",),
         "ames": ("regression",)}
IDENT = ("dataset", "task", "algorithm")
ROWS = ()
FULL = {"rounds": 50, "grid_rows": 20_000}
QUICK = {"rounds": 5, "grid_rows": 2_000}
METHODS = ("gbdt", "cegb", "greedy_miser")
RELATIVE_TOLERANCE = 1e-6
OBJECTIVES = {"binary": "binary:logistic", "multiclass": "multi:softprob",
              "regression": "reg:squarederror"}


def plan(args, names):
    algorithms = h.parse_choices(args.methods, METHODS, "method")
    spec = {"threads": args.threads, "rounds": h.setting(args, "rounds"),
            "grid_rows": h.setting(args, "grid_rows")}
    jobs = [(d, f"{d} / {task} / {a}", dict(spec, dataset=d, task=task, algorithm=a))
            for d in names for task in TASKS[d] for a in algorithms]
    return jobs, {"settings": spec}


# ------------------------------------------------------------------------- data
def make_grid3(n_rows, task, seed=0):
    """8 features of three decimals (4 uniform on [0, 1), 4 standard normal), so values
    repeat; labels from s = x0 + x1 - x2 + 0.5 x4 x5 + sin(3 x6) plus noise (sd 0.3):
    binary s > median, multiclass s in terciles, regression s."""
    rng = np.random.default_rng(seed)
    X = np.round(np.column_stack([rng.uniform(size=(n_rows, 4)),
                                  rng.normal(size=(n_rows, 4))]), 3)
    s = (X[:, 0] + X[:, 1] - X[:, 2] + 0.5 * X[:, 4] * X[:, 5] + np.sin(3 * X[:, 6])
         + 0.3 * rng.normal(size=n_rows))
    if task == "binary":
        y = (s > np.median(s)).astype(np.float64)
    elif task == "multiclass":
        y = np.digitize(s, np.quantile(s, [1 / 3, 2 / 3])).astype(np.float64)
    else:
        y = s
    return X, y


def load_csv(name, label):
    """The numeric columns of a ``modeldata`` CSV of the shared data directory (NA as
    NaN) and the label column's text."""
    import csv

    import datasets
    with gzip.open(datasets.data_dir() / name, "rt", newline="") as f:
        rows = list(csv.reader(f))
    head, body = rows[0], rows[1:]
    columns, names = [], []
    for j, column in enumerate(head):
        if column == label:
            continue
        try:
            values = [np.nan if r[j] == "NA" else float(r[j]) for r in body]
        except ValueError:       # a categorical column
            continue
        columns.append(values)
        names.append(column)
    return np.array(columns).T, [r[head.index(label)] for r in body], names


def load(spec):
    """(X_train, y_train, X_test, y_test) of the spec's data set and task."""
    if spec["dataset"] == "grid3":
        X, y = make_grid3(spec["grid_rows"], spec["task"])
    elif spec["dataset"] == "lending_club":
        X, labels, _ = load_csv("lending_club.csv.gz", "Class")
        y = (np.array(labels) == "bad").astype(np.float64)
    else:
        X, labels, _ = load_csv("ames.csv.gz", "Sale_Price")
        y = np.log(np.array(labels, dtype=np.float64))
    order = np.random.default_rng(0).permutation(len(y))
    train, test = order[:len(y) // 2], order[len(y) // 2:]
    return X[train], y[train], X[test], y[test]


# ------------------------------------------------------------------------ child
def splits(model):
    """(feature, threshold) of every split of the model."""
    features = np.concatenate([t["feature"][t["left"] != -1] for t in model.trees])
    thresholds = np.concatenate([t["threshold"][t["left"] != -1] for t in model.trees])
    return features, thresholds


def within_float32_rounding(X, features, thresholds):
    """Per row: whether some input and some threshold of its feature route differently
    in float32 (XGBoost's ``float32(x) < c``) and float64 (``x <= T``)."""
    from cbudget.interop.to_xgboost import float32_split_conditions
    conditions = float32_split_conditions(thresholds)
    flagged = np.zeros(X.shape[0], dtype=bool)
    with np.errstate(over="ignore"):
        X32 = X.astype(np.float32)
    for f in np.unique(features):
        t, c = thresholds[features == f], conditions[features == f]
        x, x32 = X[:, f][:, None], X32[:, f][:, None]
        flagged |= np.any((x <= t) != (x32 < c), axis=1)
    return flagged


def threshold_counts(X_train, features, thresholds):
    """Distinct thresholds, those equal to a training value and those whose neighbouring
    training values (largest at most T, smallest above) round to one float32 or lie at
    float32's end (no finite condition between them)."""
    pairs = np.unique(np.column_stack([features, thresholds]), axis=0)
    on_value = inseparable = 0
    top = np.float32(np.finfo(np.float32).max)
    for f, t in pairs:
        values = np.unique(X_train[:, int(f)][np.isfinite(X_train[:, int(f)])])
        on_value += bool(np.any(values == t))
        below, above = values[values <= t], values[values > t]
        if below.size and above.size:
            with np.errstate(over="ignore"):
                a, b = np.float32(below[-1]), np.float32(above[0])
            inseparable += bool(a == b or a >= top)
    return {"thresholds": int(len(pairs)), "on_training_value": int(on_value),
            "float32_inseparable": int(inseparable)}


def agreement(expected, got, within):
    """Rows whose outputs differ beyond the tolerance, their share, and those among the
    rows not within float32 rounding of a threshold."""
    expected = expected.reshape(len(expected), -1)
    gap = np.abs(got.reshape(expected.shape) - expected)
    differs = np.any(gap > RELATIVE_TOLERANCE * np.maximum(1.0, np.abs(expected)), axis=1)
    return {"rows_differ": int(differs.sum()), "share_differ": float(differs.mean()),
            "max_difference": float(gap.max()),
            "rows_differ_not_within": int((differs & ~within).sum())}


def run_point(spec):
    import treelite
    import xgboost

    import cbudget
    X_train, y_train, X_test, y_test = load(spec)
    params = {"objective": OBJECTIVES[spec["task"]], "algorithm": spec["algorithm"],
              "n_jobs": spec["threads"], "seed": 0}
    if spec["task"] == "multiclass":
        params["num_class"] = 3
    costs = None
    if spec["algorithm"] != "gbdt":
        costs = 1.0 + np.arange(X_train.shape[1]) % 8      # 1 ... 8, in column order
        params["cost_tradeoff"] = 0.001
    with h.Timer() as t:
        model = cbudget.train(params, cbudget.Dataset(X_train, y_train, feature_costs=costs),
                              spec["rounds"])
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "model.json")
        model.save_model(path, format="xgboost")
        booster = xgboost.Booster(model_file=path)
        tl_model = treelite.frontend.load_xgboost_model(path)
    expected = model.predict(X_test)
    features, thresholds = splits(model)
    within = within_float32_rounding(X_test, features, thresholds)
    X32 = X_test.astype(np.float32)
    result = {"dataset": spec["dataset"], "task": spec["task"],
              "algorithm": spec["algorithm"], "rounds": spec["rounds"],
              "n_train": len(y_train), "n_test": len(y_test), "n_features": X_test.shape[1],
              "repeated_share": float(1 - np.mean([np.unique(c[np.isfinite(c)]).size
                                                   / max(1, np.isfinite(c).sum())
                                                   for c in X_train.T])),
              "train_s": t.wall, "other_cores_during_train": t.other,
              "xgboost": xgboost.__version__,
              "treelite": treelite.__version__,
              "rows_within": int(within.sum()), "share_within": float(within.mean()),
              **threshold_counts(X_train, features, thresholds)}
    result["xgboost_float64"] = agreement(expected, booster.predict(xgboost.DMatrix(X_test)),
                                          within)
    result["xgboost_float32"] = agreement(model.predict(X32.astype(np.float64)),
                                          booster.predict(xgboost.DMatrix(X32)),
                                          np.zeros(len(X32), dtype=bool))
    for name, data in (("treelite_float64", X_test), ("treelite_float32", X32)):
        reference = expected if data is X_test else model.predict(X32.astype(np.float64))
        result[name] = agreement(reference, np.asarray(treelite.gtil.predict(tl_model, data)),
                                 within if data is X_test else np.zeros(len(X32), bool))
    return result


# ------------------------------------------------------------------------ report
def _agree(key):
    def text(r):
        a = r[key]
        return (f"{a['rows_differ']} ({100 * a['share_differ']:.2f}%), max "
                f"{a['max_difference']:.2g}, outside {a['rows_differ_not_within']}")
    return text


def render(doc):
    points = [r for results in doc["results"].values() for r in h.ok_results(results)]
    if not points:
        return []
    lines = ["Rows whose prediction differs from cbudget's (more than 1e-6 relative): count "
             "(share), largest difference, and how many of them are not within float32 "
             "rounding of a threshold (must be 0). Thresholds: distinct (feature, "
             "threshold) pairs of the model, those on a training value, those whose "
             "neighbouring training values float32 cannot separate.", ""]
    lines += h.points_table(points, [
        ("data / task / algorithm", lambda r: f"{r['dataset']} / {r['task']} / "
                                              f"{r['algorithm']}"),
        ("rows train / test", lambda r: f"{r['n_train']:,} / {r['n_test']:,}"),
        ("repeated values", lambda r: f"{100 * r['repeated_share']:.0f}%"),
        ("thresholds (on a value, inseparable)",
         lambda r: f"{r['thresholds']} ({r['on_training_value']}, "
                   f"{r['float32_inseparable']})"),
        ("rows within float32 rounding", lambda r: f"{r['rows_within']} "
                                                   f"({100 * r['share_within']:.2f}%)"),
        ("XGBoost, float64 rows", _agree("xgboost_float64")),
        ("XGBoost, float32 rows", _agree("xgboost_float32")),
        ("Treelite, float64 rows", _agree("treelite_float64")),
        ("Treelite, float32 rows", _agree("treelite_float32"))], "l")
    return lines + [""]


if __name__ == "__main__":
    sys.exit(h.main(sys.modules[__name__]))
