"""Export agreement: exported cbudget models (XGBoost, ONNX, LightGBM) on float64 data.

Per data set, task and algorithm (gbdt, cegb, greedy_miser): train a cbudget Booster,
save it with ``save_model(path, format="xgboost")``, load it with ``xgboost.Booster``
and predict the held-out rows, given as float64 (XGBoost rounds them to float32), with
both; Treelite (``treelite.frontend.load_xgboost_model`` and ``treelite.gtil``) reads the
same file. The model is also saved as ONNX graphs (``format="onnx"``, ``dtype`` float64
and float32), run by onnxruntime (output ``prediction``: the float64 graph on float64
rows, the float32 graph on float32 rows and on the float64 rows cast to float32 by the
caller), and as LightGBM text (``format="lightgbm"``), read by ``lightgbm.Booster``
(float64 rows). Data with repeated float64 values: ``grid3`` (generated: 8 features of three
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
split (whether or not the row reaches it); only those rows may differ. For the float32
ONNX graph the exported threshold is ``float32_floor(T)``, the largest float32 at most
``T``, and the test is ``x <= T`` against ``float32(x) <= float32_floor(T)``. The float64
ONNX graph, LightGBM's text and every runtime on float32 rows must route every row as
cbudget does (0 rows differ). Thresholds are
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


def xgboost_left(x32, thresholds):
    """Whether XGBoost sends float32 inputs left at the exported splits of
    ``thresholds``: ``float32(x) < c``, the exported condition."""
    from cbudget.interop.to_xgboost import float32_split_conditions
    return x32 < float32_split_conditions(thresholds)


def onnx_float32_left(x32, thresholds):
    """Whether the float32 ONNX graph sends float32 inputs left: ``float32(x) <=
    float32_floor(T)`` (BRANCH_LEQ on the largest float32 at most ``T``)."""
    from cbudget.dataset import float32_floor
    return x32 <= float32_floor(thresholds)


def within_float32_rounding(X, features, thresholds, float32_left=xgboost_left):
    """Per row: whether some input and some threshold of its feature route differently
    in float32 (``float32_left``) and in float64 (cbudget's ``x <= T``)."""
    flagged = np.zeros(X.shape[0], dtype=bool)
    with np.errstate(over="ignore"):
        X32 = X.astype(np.float32)
    for f in np.unique(features):
        t = thresholds[features == f]
        flagged |= np.any((X[:, f][:, None] <= t) != float32_left(X32[:, f][:, None], t),
                          axis=1)
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


def exported(model, folder):
    """The runtimes' models of ``model`` saved in every format: XGBoost, Treelite (the
    XGBoost file), onnxruntime sessions of the float64 and float32 graphs, LightGBM."""
    import lightgbm
    import onnxruntime
    import treelite
    import xgboost
    paths = {k: os.path.join(folder, name) for k, name in (
        ("xgboost", "model.json"), ("onnx64", "model64.onnx"), ("onnx32", "model32.onnx"),
        ("lightgbm", "model.txt"))}
    model.save_model(paths["xgboost"], format="xgboost")
    model.save_model(paths["onnx64"], format="onnx", dtype="float64")
    model.save_model(paths["onnx32"], format="onnx", dtype="float32")
    model.save_model(paths["lightgbm"], format="lightgbm")
    return {"xgboost": xgboost.Booster(model_file=paths["xgboost"]),
            "treelite": treelite.frontend.load_xgboost_model(paths["xgboost"]),
            **{k: onnxruntime.InferenceSession(paths[k], providers=["CPUExecutionProvider"])
               for k in ("onnx64", "onnx32")},
            "lightgbm": lightgbm.Booster(model_file=paths["lightgbm"])}


def run_point(spec):
    import lightgbm
    import onnxruntime
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
        runtimes = exported(model, folder)
    expected = model.predict(X_test)
    features, thresholds = splits(model)
    within = within_float32_rounding(X_test, features, thresholds)
    within_onnx = within_float32_rounding(X_test, features, thresholds, onnx_float32_left)
    X32 = X_test.astype(np.float32)
    expected32 = model.predict(X32.astype(np.float64))   # float32 rows route exactly
    none = np.zeros(len(X32), dtype=bool)
    result = {"dataset": spec["dataset"], "task": spec["task"],
              "algorithm": spec["algorithm"], "rounds": spec["rounds"],
              "n_train": len(y_train), "n_test": len(y_test), "n_features": X_test.shape[1],
              "repeated_share": float(1 - np.mean([np.unique(c[np.isfinite(c)]).size
                                                   / max(1, np.isfinite(c).sum())
                                                   for c in X_train.T])),
              "train_s": t.wall, "other_cores_during_train": t.other,
              "xgboost": xgboost.__version__, "treelite": treelite.__version__,
              "onnxruntime": onnxruntime.__version__, "lightgbm": lightgbm.__version__,
              "rows_within": int(within.sum()), "share_within": float(within.mean()),
              "rows_within_onnx_float32": int(within_onnx.sum()),
              **threshold_counts(X_train, features, thresholds)}
    xgb, tl = runtimes["xgboost"], runtimes["treelite"]
    onnx64, onnx32 = runtimes["onnx64"], runtimes["onnx32"]
    checks = {  # name: (cbudget's predictions, the runtime's, rows allowed to differ)
        "xgboost_float64": (expected, xgb.predict(xgboost.DMatrix(X_test)), within),
        "xgboost_float32": (expected32, xgb.predict(xgboost.DMatrix(X32)), none),
        "treelite_float64": (expected, treelite.gtil.predict(tl, X_test), within),
        "treelite_float32": (expected32, treelite.gtil.predict(tl, X32), none),
        "onnx64_float64": (expected, onnx64.run(["prediction"], {"input": X_test})[0], none),
        "onnx32_float32": (expected32, onnx32.run(["prediction"], {"input": X32})[0], none),
        "onnx32_float64": (expected, onnx32.run(["prediction"], {"input": X32})[0],
                           within_onnx),
        "lightgbm_float64": (expected, runtimes["lightgbm"].predict(X_test), none)}
    for name, (reference, got, allowed) in checks.items():
        result[name] = agreement(reference, np.asarray(got), allowed)
    return result


# ------------------------------------------------------------------------ report
def _agree(key):
    def text(r):
        a = r[key]
        return (f"{a['rows_differ']} ({100 * a['share_differ']:.2f}%), max "
                f"{a['max_difference']:.2g}, outside {a['rows_differ_not_within']}")
    return text


def _label(r):
    return f"{r['dataset']} / {r['task']} / {r['algorithm']}"


def render(doc):
    points = [r for results in doc["results"].values() for r in h.ok_results(results)]
    if not points:
        return []
    lines = ["Rows whose prediction differs from cbudget's (more than 1e-6 relative): count "
             "(share), largest difference, and how many of them are not within float32 "
             "rounding of a threshold (must be 0). Thresholds: distinct (feature, "
             "threshold) pairs of the model, those on a training value, those whose "
             "neighbouring training values float32 cannot separate.", "",
             "**XGBoost and Treelite** (the XGBoost JSON file; rows within float32 rounding: "
             "`x <= T` but not `float32(x) < c`, the exported condition, or the reverse).", ""]
    lines += h.points_table(points, [
        ("data / task / algorithm", _label),
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
    lines += ["", "**onnxruntime and LightGBM** (`save_model(format=\"onnx\", dtype=...)`, "
              "output `prediction`; `format=\"lightgbm\"` read by `lightgbm.Booster`). The "
              "float32 graph on float64 rows: the caller casts them to float32; rows within "
              "float32 rounding for it: `x <= T` but not `float32(x) <= float32_floor(T)` "
              "(the graph's threshold), or the reverse. Every other column allows none.", ""]
    lines += h.points_table(points, [
        ("data / task / algorithm", _label),
        ("rows within float32 rounding (float32 graph)",
         lambda r: str(r.get("rows_within_onnx_float32", "n/a"))),
        ("onnxruntime float64 graph, float64 rows", _agree("onnx64_float64")),
        ("float32 graph, float32 rows", _agree("onnx32_float32")),
        ("float32 graph, float64 rows cast", _agree("onnx32_float64")),
        ("LightGBM text, float64 rows", _agree("lightgbm_float64"))], "l")
    return lines + [""]


if __name__ == "__main__":
    sys.exit(h.main(sys.modules[__name__]))
