"""Categorical features: cbudget against LightGBM's and XGBoost's native categorical splits.

Issue 44's measurements. Accuracy and training time on Lending Club (5 categorical
columns), Ames (40) and a synthetic set with 1,000+ levels per column
(``datasets.make_synthetic_categorical``), every system with the same rounds, leaves,
learning rate and max_bin (``harness.library_params``): LightGBM with pandas ``category``
columns, XGBoost ``enable_categorical``, LightGBM on one-hot indicators and on ordinal
codes, cbudget on ordinal codes and on one-hot indicators, and cbudget's categorical
splits on the pandas frame (``cbudget.Dataset(frame, categorical_feature=[names])``) and
on the ordinal codes (``categorical_feature=[indices]``), each skipped with the reason
when the cbudget imported refuses it or makes no categorical split. One child per (data set,
system, repeat), the systems interleaved within a repeat. On Lending Club also CEGB's
cost path with the categorical columns one-hot (the indicators of a column one cost
group: the column is priced once), as ordinal codes and native (frame or codes). Protocol:
benchmarks/README.md ("Categorical features").
"""
import sys

import datasets
import harness as h
import numpy as np

DATASETS = ("lending_club", "ames", "synthetic_categorical")
ACCURACY_METHODS = ("lightgbm_native", "xgboost_native", "lightgbm_onehot", "lightgbm_ordinal",
                    "cbudget_ordinal", "cbudget_onehot", "cbudget_native", "cbudget_codes")
FRONT_METHODS = ("cegb_onehot", "cegb_ordinal", "cegb_native", "cegb_codes")  # Lending Club
METHODS = ACCURACY_METHODS + FRONT_METHODS
# the methods that need cbudget's categorical_feature: on the pandas frame by column names,
# or on the ordinal codes by column indices (integer-coded categories, as LightGBM takes)
NATIVE = {"cbudget_native": "frame", "cegb_native": "frame", "cbudget_codes": "codes",
          "cegb_codes": "codes"}
IDENT = ("dataset", "method", "repeat")
ROWS, SYNTHETIC_ROWS = ("train", "test"), 1_000_000
FULL = {"rounds": 100, "repeats": 3, "n_points": 12}
QUICK = {"rounds": 5, "repeats": 1, "n_points": 3, "n_rows": 5_000}
ONEHOT_LIMIT_GB = 2.0  # one-hot systems are skipped where the dense matrix is larger
REFERENCE = "lightgbm_native"
GOAL_AUC, GOAL_RMSE, GOAL_TIME = 0.005, 0.01, 1.0  # issue 44: within 0.005 AUC / 1 % RMSE
OBJECTIVES = {"cbudget": "reg:squarederror", "lightgbm": "regression",
              "xgboost": "reg:squarederror"}
LOADERS = {
    "lending_club": lambda n_rows: datasets.load_lending_club_frame(seed=0),
    "ames": lambda n_rows: datasets.load_ames(seed=0),
    "synthetic_categorical": lambda n_rows: datasets.make_synthetic_categorical(
        n_samples=n_rows or SYNTHETIC_ROWS, seed=0)}


def onehot_gb(name, n_rows):
    """GB of the float32 one-hot training matrix of a data set (the synthetic one's levels
    from the generator's table; the real ones are small)."""
    if name != "synthetic_categorical":
        return 0.0
    width = 8 + sum(c[1] for c in datasets.CATEGORICAL_COLUMNS)
    return 0.8 * (n_rows or SYNTHETIC_ROWS) * width * 4 / 2**30


def plan(args, names):
    methods = h.parse_choices(args.methods, METHODS, "method")
    reasons = {m: native_support(NATIVE[m]) for m in methods if m in NATIVE}
    reasons = {m: why for m, why in reasons.items() if why}
    skipped = [{"dataset": d, "method": m, "reason": why} for d in names
               for m, why in reasons.items() if m in ACCURACY_METHODS or d == "lending_club"]
    spec = {"threads": args.threads, "n_rows": args.n_rows, "train_rows": args.train_rows,
            "test_rows": args.test_rows, "rounds": h.setting(args, "rounds"),
            "n_points": h.setting(args, "n_points")}
    jobs = []
    for d in names:
        runs = []
        for m in (m for m in methods if m in ACCURACY_METHODS):
            gb = onehot_gb(d, args.n_rows) if m.endswith("onehot") else 0.0
            if gb > ONEHOT_LIMIT_GB:
                skipped.append({"dataset": d, "method": m, "reason": f"the one-hot training "
                                f"matrix would take {gb:.0f} GB (limit {ONEHOT_LIMIT_GB:g})"})
            elif m not in reasons:
                runs.append(m)
        for repeat in range(h.setting(args, "repeats")):
            k = repeat % max(1, len(runs))  # the order rotates with the repeat
            jobs += [(d, f"{d} / repeat {repeat + 1} / {m}",
                      dict(spec, dataset=d, method=m, repeat=repeat + 1))
                     for m in runs[k:] + runs[:k]]
        if d == "lending_club":  # a cost path is deterministic: once
            jobs += [(d, f"{d} / {m}", dict(spec, dataset=d, method=m, repeat=1))
                     for m in methods if m in FRONT_METHODS and m not in reasons]
    for s in skipped:
        h.log(f"  skipped {s['dataset']} / {s['method']}: {s['reason']}")
    return jobs, {"threads": args.threads, "skipped": skipped,
                  "settings": {k: spec[k] for k in ("rounds", "n_points", "n_rows")}}


def native_support(kind):
    """None when the cbudget imported takes a categorical column with
    ``categorical_feature`` (``kind`` "frame": a pandas category column by name; "codes":
    integer codes by column index) and splits it by level sets; else why it does not."""
    import pandas as pd
    try:
        import cbudget
        rng = np.random.default_rng(0)
        codes = rng.integers(0, 12, size=600)
        frame = pd.DataFrame({"c": pd.Categorical.from_codes(codes, [f"l{k}" for k in
                                                                      range(12)]),
                              "x": rng.random(600)})
        y = np.isin(codes, (1, 4, 7, 10)).astype(np.int32)
        dtrain = (cbudget.Dataset(frame, y, categorical_feature=["c"]) if kind == "frame"
                  else cbudget.Dataset(encode(frame, ["c"], "ordinal")[0], y,
                                       categorical_feature=[0]))
        model = cbudget.train(h.library_params("cbudget", 2, 1), dtrain, 3)
    except Exception as exc:  # noqa: BLE001 - the reason is reported
        return f"the cbudget imported refuses categorical_feature ({type(exc).__name__}: {exc})"
    if not categorical_splits(model):
        return ("the cbudget imported takes categorical_feature but makes no categorical "
                "split (an input layer without the engine's categorical splits)")
    return None


# ------------------------------------------------------------------------- child
def load(name, keep_valid=False, n_rows=None, train_rows=None, valid_rows=None,
         test_rows=None):
    """A data set of ``LOADERS`` (``harness.load_dataset``'s arguments): the first
    ``<part>_rows`` rows of a part kept; without ``keep_valid`` no validation part."""
    data = LOADERS[name](n_rows)
    for part, rows in (("train", train_rows), ("valid", valid_rows), ("test", test_rows)):
        if rows and data.get(f"X_{part}") is not None:
            data[f"X_{part}"] = data[f"X_{part}"].iloc[:rows]
            data[f"y_{part}"] = data[f"y_{part}"][:rows]
    if not keep_valid:
        data["X_valid"] = data["y_valid"] = None
    return data


def encode(frame, categorical, kind):
    """A DataFrame as a float32 matrix: (matrix, {column: its matrix columns}). ``kind``
    "ordinal": a category column as its codes (missing NaN); "onehot": one 0/1 indicator
    per category of the column's dtype (missing: all 0)."""
    blocks, columns, width = [], {}, 0
    for name in frame.columns:
        series = frame[name]
        if name not in categorical:
            block = series.to_numpy(dtype=np.float32)[:, None]
        else:
            codes = series.cat.codes.to_numpy()
            if kind == "ordinal":
                block = np.where(codes < 0, np.nan, codes).astype(np.float32)[:, None]
            else:
                block = np.zeros((codes.size, len(series.cat.categories)), dtype=np.float32)
                seen = np.flatnonzero(codes >= 0)
                block[seen, codes[seen]] = 1.0
        columns[name] = list(range(width, width + block.shape[1]))
        blocks.append(block)
        width += block.shape[1]
    return np.ascontiguousarray(np.hstack(blocks)), columns


def represent(data, kind):
    """``data`` with the features of ``kind`` ("native": the frames; "codes": the ordinal
    codes) and ``columns``, {source column: its columns in the features}."""
    if kind == "native":
        return dict(data, columns={c: [j] for j, c in enumerate(data["feature_names"])})
    out = dict(data)
    for part in ("train", "valid", "test"):
        if data.get(f"X_{part}") is not None:
            out[f"X_{part}"], out["columns"] = encode(
                data[f"X_{part}"], data["categorical"], "ordinal" if kind == "codes" else kind)
    return out


def params_for(library, task, threads):
    """``harness.library_params`` (binary), with the library's objective for regression."""
    p = h.library_params(library, 2, threads)
    return dict(p, objective=OBJECTIVES[library]) if task == "regression" else p


def categorical_splits(model):
    """Split nodes of a cbudget model that test a level set (0 without categorical nodes)."""
    return int(sum(np.count_nonzero((t["left"] != -1) & (t["categorical"] != 0))
                   for t in model.trees if "categorical" in (t.dtype.names or ())))


def predict(library, model, X):
    if library == "xgboost":
        import xgboost as xgb
        return model.predict(xgb.DMatrix(X, enable_categorical=True))
    return model.predict(X)


def scores(task, y, pred):
    """Test AUC and log loss (binary) or RMSE (regression)."""
    pred = np.asarray(pred, dtype=np.float64).reshape(-1)
    if task == "regression":
        return {"rmse": float(np.sqrt(np.mean((pred - y) ** 2)))}
    p = np.clip(pred, 1e-15, 1 - 1e-15)
    return {"auc": datasets.auc(y, pred),
            "logloss": float(-np.mean(np.where(y == 1, np.log(p), np.log1p(-p))))}


TRAINERS = {"cbudget": h.train_cbudget_timed, "lightgbm": h.train_lightgbm_timed,
            "xgboost": h.train_xgboost_timed}


def run_point(spec):
    """One system trained and scored on one data set (or a cost path: ``run_front``)."""
    import os
    if spec["method"] in FRONT_METHODS:
        return run_front(spec)
    library, kind = spec["method"].split("_")
    data, result = h.start_child(spec, library, load=load)
    load_1m = os.getloadavg()[0]
    data = represent(data, kind)
    kwargs = ({"categorical_feature": data["categorical"]} if spec["method"] == "cbudget_native"
              else {"categorical_feature": [data["feature_names"].index(c)
                                            for c in data["categorical"]]} if kind == "codes"
              else {"enable_categorical": True} if library == "xgboost" else {})
    params = params_for(library, data["task"], spec["threads"])
    rss_before = h.rss_bytes()
    (model, _, _, _), timing = h.timed_training(TRAINERS[library], data, params,
                                                spec["rounds"], **kwargs)
    result.update(
        method=spec["method"], repeat=spec["repeat"], rounds=spec["rounds"], params=params,
        task=data["task"], width=int(data["X_train"].shape[1]), loadavg_1m=load_1m,
        n_categorical=len(data["categorical"]),
        rss_before_train_mb=rss_before / 2**20, peak_rss_mb=h.maxrss_bytes() / 2**20,
        **{k: v for k, v in timing.items() if k != "round_end_s"},
        quality=scores(data["task"], data["y_test"],
                       predict(library, model, data["X_test"])))
    if library == "cbudget":
        result["categorical_splits"] = categorical_splits(model)
    if data["task"] == "binary":
        result["test_positives"] = int(np.sum(data["y_test"] == 1))
    if "bayes_auc_test" in data and not spec.get("test_rows"):
        result["bayes_auc_test"] = data["bayes_auc_test"]
    return result


def pricing(data):
    """The Dataset cost arguments of Lending Club's prices (``load_lending_club``: 1 a
    column, the bureau group 20) for ``data``'s features: a column of several features
    (one-hot indicators) has them cost 0 each and form a cost group of the column's price
    (paid once, whichever indicators the model reads), so that every column costs what it
    costs as one feature."""
    costs = np.zeros(sum(len(idx) for idx in data["columns"].values()), dtype=np.float64)
    groups, group_costs = {}, dict(data["group_costs"])
    for (name, idx), price in zip(data["columns"].items(), data["feature_costs"], strict=True):
        if len(idx) == 1:
            costs[idx[0]] = price
        else:
            groups[f"column {name}"], group_costs[f"column {name}"] = idx, float(price)
    sources = list(data["columns"].values())
    for g, members in data["cost_groups"].items():
        groups[g] = [j for m in members for j in sources[m]]
    return {"feature_costs": costs, "cost_groups": groups, "group_costs": group_costs}


def source_columns(model, data):
    """Source columns (a categorical column once) the splits of ``model`` read."""
    used = set(np.asarray(model.used_features()).tolist())
    return sum(bool(used.intersection(idx)) for idx in data["columns"].values())


def column_costs(model, X, data):
    """Per-input cost recomputed from the leaf paths at the level of the source columns (a
    column is acquired when any of its features is; it pays its price once, a cost group
    once when any member is): the check of ``pricing``."""
    leaves = np.asarray(model.predict(X, pred_leaf=True), dtype=np.int64)
    width = sum(len(idx) for idx in data["columns"].values())
    tables = h.PathTables([h.cbudget_leaf_paths(t) for t in model.trees], width)
    _, _, acquired = h.prediction_costs(leaves.reshape(leaves.shape[0], -1), tables,
                                        np.zeros(width))
    source = np.column_stack([acquired[:, idx].any(axis=1) for idx in data["columns"].values()])
    cost = source @ np.asarray(data["feature_costs"], dtype=np.float64)
    for g, members in data["cost_groups"].items():
        cost += data["group_costs"][g] * source[:, members].any(axis=1)
    return cost


def run_front(spec):
    """CEGB's cost path on Lending Club with the categorical columns as ``kind``: every
    model's validation and test AUC and mean cost per input."""
    import cbudget
    kind = spec["method"].removeprefix("cegb_")
    data, result = h.start_child(spec, "cbudget", keep_valid=True, load=load)
    data = represent(data, kind)
    categorical = {"native": data["categorical"],
                   "codes": [data["feature_names"].index(c) for c in data["categorical"]]}
    dtrain = cbudget.Dataset(data["X_train"], data["y_train"], max_bin=255, **pricing(data),
                             **({"categorical_feature": categorical[kind]}
                                if kind in categorical else {}))
    dvalid = cbudget.Dataset(data["X_valid"], data["y_valid"], reference=dtrain)
    params = dict(params_for("cbudget", "binary", spec["threads"]), algorithm="cegb")
    with h.Timer() as t:
        path = cbudget.cost_path(params, dtrain, dvalid, n_points=spec["n_points"],
                                 num_boost_round=spec["rounds"])
    points = []
    for lam, model, valid_cost in zip(path.lambdas, path.models, path.costs, strict=True):
        cost = np.asarray(model.predict_cost(data["X_test"]), dtype=np.float64)
        diff = float(np.max(np.abs(cost - column_costs(model, data["X_test"], data))))
        if diff > h.COST_CHECK_TOL:
            raise AssertionError(f"lambda {lam}: predict_cost differs from the columns' "
                                 f"prices by up to {diff}")
        points.append({
            "lambda": float(lam), "valid_mean_cost": float(valid_cost),
            "valid_auc": datasets.auc(data["y_valid"], model.predict(data["X_valid"])),
            "auc": datasets.auc(data["y_test"], model.predict(data["X_test"])),
            "mean_cost": float(cost.mean()), "cost_check_max_abs_diff": diff,
            "columns_used": source_columns(model, data),
            "categorical_splits": categorical_splits(model)})
    return dict(result, method=spec["method"], repeat=1, rounds=spec["rounds"],
                n_categorical=len(data["categorical"]),
                width=int(np.shape(data["X_train"])[1]), points=points,
                lambda_max=path.lambda_max, **t.fields(), other_cores_during_train=t.other)


# ------------------------------------------------------------------------ report
def summarize(runs):
    """{method: the repeats' median / min / max training time, first run's figures}."""
    out = {}
    for m in ACCURACY_METHODS:
        rs = [r for r in runs if r["method"] == m]
        if rs:
            times = [r["train_s"] for r in rs]
            out[m] = dict(rs[0], **h.wall_spread(times), n_repeats=len(rs),
                          same_quality=all(r["quality"] == rs[0]["quality"] for r in rs))
    return out


def auc_standard_error(auc, n_pos, n_neg):
    """Hanley and McNeil's (1982) standard error of a test AUC: the noise of the test set
    against which the AUC differences between systems are read."""
    q1, q2 = auc / (2 - auc), 2 * auc * auc / (1 + auc)
    return float(np.sqrt((auc * (1 - auc) + (n_pos - 1) * (q1 - auc * auc)
                          + (n_neg - 1) * (q2 - auc * auc)) / (n_pos * n_neg)))


def accuracy_table(by):
    ref = by.get(REFERENCE)
    regression = next(iter(by.values()))["task"] == "regression"
    metric = "rmse" if regression else "auc"

    def versus(r):
        if ref is None:
            return None
        a, b = r["quality"][metric], ref["quality"][metric]
        return (a / b - 1.0) * 100 if regression else a - b

    def goal(r):
        if ref is None or not r["method"].startswith("cbudget"):
            return ""
        d, t = versus(r), h.ratio(r["median_s"], ref["median_s"])
        ok_acc = d <= GOAL_RMSE * 100 if regression else d >= -GOAL_AUC
        return (("yes" if ok_acc else "no") + " / " + ("yes" if t <= GOAL_TIME else "no"))
    quality = ([("test RMSE", lambda r: h.fmt(r["quality"]["rmse"], ".4f")),
                ("vs LightGBM native %", lambda r: h.fmt(versus(r), "+.2f"))] if regression
               else [("test AUC", lambda r: h.fmt(r["quality"]["auc"], ".4f")),
                     ("vs LightGBM native", lambda r: h.fmt(versus(r), "+.4f")),
                     ("test log loss", lambda r: h.fmt(r["quality"]["logloss"], ".4f"))])
    return h.points_table(list(by.values()), [
        ("system", lambda r: r["method"].replace("_", " ")),
        ("features", h.col("width", ",d")),
        ("train s, median (min-max)", lambda r: f"{r['median_s']:.3g} ({r['min_s']:.3g}-"
                                                f"{r['max_s']:.3g})"),
        ("x LightGBM native", lambda r: h.fmt(h.ratio(r["median_s"], ref["median_s"])
                                              if ref else None, ".2f")),
        ("binning s", h.col("dataset_build_s", ".3g")),
        *quality,
        ("goal (accuracy / time)", goal),
        ("categorical splits", lambda r: h.fmt(r.get("categorical_splits"), "d")
         if r["method"].startswith("cbudget") else ""),
        ("peak RSS MB", h.col("peak_rss_mb", ",.0f")),
        ("repeats", lambda r: f"{r['n_repeats']}" + ("" if r["same_quality"]
                                                     else " (scores differ!)"))])


def front_tables(fronts):
    """Each method's validation front (test figures) and native / ordinal against one-hot."""
    lines, chosen = [], {}
    for m in FRONT_METHODS:
        r = fronts.get(m)
        if r is None:
            continue
        front = h.pareto(r["points"], cost_key="valid_mean_cost", score_key="valid_auc")
        chosen[m] = front
        lines += [f"**{m.replace('_', ' ')}** ({r['width']} features, {r['train_s']:.0f} s for "
                  f"{len(r['points'])} models, lambda_max {r['lambda_max']:.4g}; the "
                  f"{len(front)} models on the validation front):", ""]
        lines += h.points_table(front, [
            ("lambda", lambda p: f"{p['lambda']:.4g}"),
            ("columns used", h.col("columns_used", "d")),
            ("categorical splits", h.col("categorical_splits", "d")),
            ("valid mean cost", h.col("valid_mean_cost", ".2f")),
            ("valid AUC", h.col("valid_auc", ".4f")),
            ("test mean cost", h.col("mean_cost", ".2f")),
            ("test AUC", h.col("auc", ".4f"))]) + [""]
    for m in ("cegb_native", "cegb_codes", "cegb_ordinal"):
        if m in chosen and "cegb_onehot" in chosen:
            lines += [f"{m.replace('_', ' ')} against cegb one-hot (validation fronts, test "
                      "figures):", ""]
            lines += h.comparison_table(chosen[m], chosen["cegb_onehot"],
                                        ("one-hot", m.removeprefix("cegb_"), "test cost",
                                         "test AUC"),
                                        lambda p: f"lambda={p['lambda']:.3g}",
                                        score_key="auc") + [""]
    return lines


def render(doc):
    lines = ["Settings: " + ", ".join(f"{k} {v}" for k, v in doc["settings"].items()
                                      if v is not None) + f"; {doc['threads']} threads. "
             "Training time: Dataset construction (binning, pandas levels) and boosting; "
             "goal (issue 44, cbudget rows): accuracy within 0.005 AUC / 1 % RMSE of "
             "LightGBM native, time at most 1.0x.", ""]
    for s in doc.get("skipped", []):
        lines += [f"* skipped {s['dataset']} / {s['method']}: {s['reason']}"]
    lines += [""] if doc.get("skipped") else []
    for name, results in doc["results"].items():
        ok = h.ok_results(results)
        if not ok:
            continue
        by = summarize(ok)
        first = next(iter(by.values()), ok[0])
        lines += [f"### {name}: {h.sizes_text(first)}, {first['n_categorical']} of them "
                  "categorical", ""]
        if "bayes_auc_test" in first:
            lines += [f"AUC of the true probabilities on the test rows: "
                      f"{first['bayes_auc_test']:.4f}.", ""]
        if by:
            lines += accuracy_table(by) + [""]
        ref = by.get(REFERENCE)
        if ref and "test_positives" in ref:
            n_pos = ref["test_positives"]
            se = auc_standard_error(ref["quality"]["auc"], n_pos, ref["n_test"] - n_pos)
            lines += [f"Test AUC standard error (Hanley-McNeil, {n_pos:,} positives of "
                      f"{ref['n_test']:,}) at LightGBM native's AUC: {se:.4f}.", ""]
        fronts = {r["method"]: r for r in ok if r["method"] in FRONT_METHODS}
        if fronts:
            lines += ["CEGB cost path (Lending Club prices of `datasets.load_lending_club`: "
                      "1 a column, the nine bureau columns a group of 20 more; one-hot: a "
                      "column's indicators cost 0 each and form a group of the column's "
                      "price 1):", ""] + front_tables(fronts)
    return lines


if __name__ == "__main__":
    sys.exit(h.main(sys.modules[__name__]))
