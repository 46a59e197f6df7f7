"""Categorical interop (issue 44): how closely imported models with categorical splits
predict what LightGBM, XGBoost and HistGradientBoosting predict, and how closely XGBoost
and Treelite predict what an exported cbudget model predicts.

A synthetic regression set of ``--rows`` training rows: 4 normal columns and three
pandas ``category`` columns of 5, 50 and 200 levels (string levels, 5% missing); the
test rows (as many) hold 5% missing values and 5% levels never seen in training in each
categorical column. Per library: the largest |difference| of the raw scores, and the
share of test rows whose difference is at most 1e-9 (1e-5 where a library sums in
float32), on the DataFrame (the source's own level mapping; XGBoost refuses unseen
levels on a DataFrame, so it gets the seen rows, then every row as codes).

    python diag_categorical_interop.py [--rows 20000] [--rounds 100] [--leaves 31]
"""
import argparse
import warnings

import numpy as np
import pandas as pd

import cbudget

LEVELS = (5, 50, 200)


def frame(n_rows, seed, unseen=0.0):
    rng = np.random.default_rng(seed)
    data = {f"x{j}": rng.normal(size=n_rows) for j in range(4)}
    for k in LEVELS:
        levels = [f"L{i}" for i in range(k)]
        values = rng.choice(levels, n_rows).astype(object)
        values[rng.random(n_rows) < unseen] = "never-seen"
        values[rng.random(n_rows) < 0.05] = None
        data[f"c{k}"] = pd.Categorical(values, categories=levels + (["never-seen"] if unseen
                                                                    else []))
    df = pd.DataFrame(data)
    effects = [np.random.default_rng(k).normal(size=k + 2) for k in LEVELS]
    y = df.x0 - 0.5 * df.x1
    for k, e in zip(LEVELS, effects):
        y = y + e[np.asarray(df[f"c{k}"].cat.codes).clip(-1, k) + 1]
    return df, np.asarray(y + 0.1 * rng.normal(size=n_rows))


def codes(df, train):
    """``df`` as a float matrix of the training codes (an unseen level: code k)."""
    out = df.copy()
    for name in train.select_dtypes("category"):
        lv = list(train[name].cat.categories)
        mapped = df[name].astype(object).map({v: c for c, v in enumerate(lv)})
        unseen = df[name].notna() & mapped.isna()
        out[name] = np.where(unseen, len(lv), mapped).astype(float)
    return out.to_numpy(dtype=float)


def report(name, ours, theirs, tolerance):
    diff = np.abs(np.ravel(ours) - np.ravel(theirs))
    print(f"{name:<44} rows {diff.size:6d}  max |diff| {diff.max():.3g}  "
          f"agree (<= {tolerance:g}) {np.mean(diff <= tolerance):.4f}")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=20000)
    parser.add_argument("--rounds", type=int, default=100)
    parser.add_argument("--leaves", type=int, default=31)
    args = parser.parse_args()
    train, y = frame(args.rows, 0)
    test, _ = frame(args.rows, 1, unseen=0.05)
    X_test = codes(test, train)

    import lightgbm as lgb
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        booster = lgb.train({"objective": "regression", "num_leaves": args.leaves,
                             "verbose": -1}, lgb.Dataset(train, y), args.rounds)
    model = cbudget.from_lightgbm(booster)
    report("LightGBM, DataFrame", model.predict(test, output_margin=True),
           booster.predict(test, raw_score=True), 1e-9)
    report("LightGBM, codes", model.predict(X_test, output_margin=True),
           booster.predict(X_test, raw_score=True), 1e-9)

    import xgboost as xgb
    estimator = xgb.XGBRegressor(n_estimators=args.rounds, max_leaves=args.leaves,
                                 enable_categorical=True, tree_method="hist").fit(train, y)
    model = cbudget.from_xgboost(estimator)
    seen = np.all([test[c].isna() | test[c].isin(train[c].cat.categories)
                   for c in train.select_dtypes("category")], axis=0)
    types = ["c" if c in train.select_dtypes("category") else "q" for c in train]
    seen_rows = test[seen].astype({c: train[c].dtype for c in train.select_dtypes("category")})
    report("XGBoost, DataFrame (seen levels)", model.predict(seen_rows, output_margin=True),
           estimator.predict(seen_rows, output_margin=True), 1e-5)
    dmatrix = xgb.DMatrix(X_test, feature_names=list(train.columns), feature_types=types,
                          enable_categorical=True)
    report("XGBoost, codes (unseen levels too)", model.predict(X_test, output_margin=True),
           estimator.get_booster().predict(dmatrix, output_margin=True), 1e-5)

    from sklearn.ensemble import HistGradientBoostingRegressor
    hgb = HistGradientBoostingRegressor(max_iter=args.rounds, max_leaf_nodes=args.leaves,
                                        categorical_features="from_dtype").fit(train, y)
    model = cbudget.from_sklearn(hgb)
    report("HistGradientBoosting, DataFrame", model.predict(test), hgb.predict(test), 1e-9)

    import tempfile
    from pathlib import Path

    import treelite
    ours = cbudget.train({"num_leaves": args.leaves}, cbudget.Dataset(train, y), args.rounds)
    expected = ours.predict(X_test, output_margin=True)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "model.json"
        # without the levels (XGBoost 3.1+'s cats section), which Treelite refuses
        ours.save_model(path, format="xgboost", levels=False)
        loaded = xgb.Booster(model_file=str(path))
        dmatrix = xgb.DMatrix(X_test, feature_names=loaded.feature_names,
                              feature_types=loaded.feature_types, enable_categorical=True)
        report("export: XGBoost on codes", loaded.predict(dmatrix, output_margin=True),
               expected, 1e-5)
        tl = treelite.frontend.load_xgboost_model(str(path), format_choice="json")
        report("export: Treelite on codes", treelite.gtil.predict(
            tl, X_test.astype(np.float32), pred_margin=True), expected, 1e-5)


if __name__ == "__main__":
    main()
