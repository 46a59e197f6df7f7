"""Check that two builds of cbudget (e.g. with and without OpenMP) give the same models.

    python tools/compare_builds.py write DIR   # with build A: train, save models + outputs
    python tools/compare_builds.py check DIR   # with build B: compare against DIR

``write`` trains one small model of every algorithm (on the shipped Letters data and on
generated data, with ``n_jobs=2``) and saves each model's JSON and its predictions and
per-input prediction costs on held-out rows. ``check`` loads those JSON files with the
other build and requires bit-identical predictions and costs, then trains the same models
again and requires the same JSON, predictions and costs. Exits 1 on any difference.
"""
import json
import os
import sys

import numpy as np

import cbudget
from cbudget._core._openmp_helpers import openmp_enabled
from cbudget.datasets import load_letters, make_quadrants, train_valid_test_split

N_JOBS = 2


def _letters_split():
    """(X, y, names, train rows, test rows) of the shipped Letters data."""
    X, y, names = load_letters()
    train_idx, _, test_idx = train_valid_test_split(len(y), (3000, 0, 2000))
    return X, y, names, train_idx, test_idx


def train_models():
    """{name: model} of every algorithm, small enough to train in seconds."""
    X, y, names, train_idx, _ = _letters_split()
    costs = np.linspace(1.0, 4.0, X.shape[1])
    dtrain = cbudget.Dataset(X[train_idx], (y[train_idx] >= 13).astype(float),
                             feature_names=names, feature_costs=costs)
    dtrain_multi = cbudget.Dataset(X[train_idx], y[train_idx], feature_names=names,
                                   feature_costs=costs)
    common = {"n_jobs": N_JOBS, "seed": 3}
    binary = dict(common, objective="binary:logistic")
    models = {
        "gbdt_multiclass": cbudget.train(
            dict(common, objective="multi:softprob", num_class=26, subsample=0.8,
                 colsample_bytree=0.8), dtrain_multi, 20, verbose_eval=False),
        "cegb": cbudget.train(dict(binary, algorithm="cegb", cost_tradeoff=0.05),
                              dtrain, 30, verbose_eval=False),
        "greedy_miser": cbudget.train(dict(binary, algorithm="greedy_miser",
                                           cost_tradeoff=1.0), dtrain, 40, verbose_eval=False),
        "budget_rf": cbudget.train({"algorithm": "budget_rf", "num_class": 26,
                                    "n_jobs": N_JOBS, "seed": 3}, dtrain_multi, 8,
                                   verbose_eval=False),
        "cstc": cbudget.train(dict(binary, algorithm="cstc", cost_tradeoff=0.01),
                              dtrain, 5, verbose_eval=False),
        "cscc_trees": cbudget.train(dict(binary, algorithm="cscc", cost_tradeoff=0.01,
                                         basis_trees=20, basis_max_depth=3),
                                    dtrain, 5, verbose_eval=False),
    }
    f0 = models["cegb"]
    models["adapt_gbrt"] = cbudget.train(dict(binary, algorithm="adapt_gbrt", p_full=0.3,
                                              cost_tradeoff=1.0), dtrain, 30,
                                         verbose_eval=False, expensive_model=f0)
    models["adapt_lin"] = cbudget.train(dict(binary, algorithm="adapt_lin", p_full=0.3),
                                        dtrain, 3, verbose_eval=False, expensive_model=f0)
    Xq, yq = make_quadrants(2000, seed=1)
    dquad = cbudget.Dataset(Xq, yq, feature_costs=[10, 10, 10, 10, 1, 1])
    models["cstc_quadrants"] = cbudget.train(    # regression, the paper's section 6.1
        dict(common, algorithm="cstc", max_depth=3, cost_tradeoff=0.004, reg_alpha=0.001),
        dquad, 5, verbose_eval=False)
    return models


def outputs(models):
    """{name: (predictions, per-input costs)} on held-out rows."""
    X, _, _, _, test_idx = _letters_split()
    X_test = X[test_idx]
    X_quad = make_quadrants(500, seed=2)[0]
    result = {}
    for name, model in models.items():
        X = X_quad if name == "cstc_quadrants" else X_test
        result[name] = (np.asarray(model.predict(X)), np.asarray(model.predict_cost(X)))
    return result


def _model_json(directory, name):
    with open(os.path.join(directory, f"{name}.json")) as f:
        return f.read()


def write(directory):
    os.makedirs(directory, exist_ok=True)
    models = train_models()
    arrays = {}
    for name, model in models.items():
        model.save_model(os.path.join(directory, f"{name}.json"))
    for name, (prediction, cost) in outputs(models).items():
        arrays[f"{name}.prediction"] = prediction
        arrays[f"{name}.cost"] = cost
    np.savez(os.path.join(directory, "outputs.npz"), **arrays)
    with open(os.path.join(directory, "build.json"), "w") as f:
        json.dump({"openmp": openmp_enabled(), "models": sorted(models)}, f)
    print(f"wrote {len(models)} models (openmp={openmp_enabled()}) to {directory}")
    return 0


def _differences(label, expected, got):
    problems = []
    for name in sorted(expected):
        for kind, a, b in zip(("prediction", "cost"), expected[name], got[name]):
            if a.shape != b.shape or not np.array_equal(a, b):
                worst = np.max(np.abs(a - b)) if a.shape == b.shape else "shape"
                problems.append(f"{label}: {name} {kind} differs (max abs diff {worst})")
    return problems


def check(directory):
    with open(os.path.join(directory, "build.json")) as f:
        written = json.load(f)
    saved = np.load(os.path.join(directory, "outputs.npz"))
    expected = {name: (saved[f"{name}.prediction"], saved[f"{name}.cost"])
                for name in written["models"]}
    print(f"comparing models written with openmp={written['openmp']} against this build "
          f"(openmp={openmp_enabled()})")
    loaded = {name: cbudget.load_model(os.path.join(directory, f"{name}.json"))
              for name in written["models"]}
    problems = _differences("loaded", expected, outputs(loaded))
    retrained = train_models()
    if sorted(retrained) != written["models"]:
        problems.append(f"retrained models {sorted(retrained)} != {written['models']}")
    problems += _differences("retrained", expected, outputs(retrained))
    for name, model in retrained.items():
        path = os.path.join(directory, f"{name}.retrained.json")
        model.save_model(path)
        with open(path) as f:
            if f.read() != _model_json(directory, name):
                problems.append(f"retrained: {name} JSON differs")
    for problem in problems:
        print(problem)
    print(f"{len(expected)} models: "
          + ("identical predictions, costs and JSON" if not problems else
             f"{len(problems)} differences"))
    return 1 if problems else 0


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] not in ("write", "check"):
        sys.exit(__doc__)
    sys.exit(write(sys.argv[2]) if sys.argv[1] == "write" else check(sys.argv[2]))
