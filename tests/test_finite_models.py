"""Models are finite (issue 42, item 8): training parameters that would make predictions
infinite or NaN (base_score=1e308, learning_rate=1e308, ...) are a ValueError at train()
time for every model type, a booster's raw scores are bounded by a finite number for any
input, and a model with numbers that are not finite is neither saved nor loaded."""
import json
import math

import numpy as np
import pytest
from small_models import small_model_params

import cbudget
from cbudget.algorithms import REGISTRY

BOOSTING = ("gbdt", "cegb", "greedy_miser")


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 4))
    y_reg = 3 * X[:, 0] + rng.normal(size=200)
    y_bin = (y_reg > 0).astype(float)
    costs = {"feature_costs": [1.0, 1.0, 2.0, 4.0]}
    f0 = cbudget.train({"objective": "binary:logistic", "n_jobs": 1, "max_depth": 3},
                       cbudget.Dataset(X, y_bin, **costs), 3)
    return X, cbudget.Dataset(X, y_reg, **costs), cbudget.Dataset(X, y_bin, **costs), f0


def train(algorithm, params, dtrain, f0, rounds=3):
    extra = {"expensive_model": f0} if algorithm.startswith("adapt") else {}
    return cbudget.train({**small_model_params(algorithm), **params}, dtrain, rounds,
                         verbose_eval=False, **extra)


@pytest.mark.parametrize("algorithm", BOOSTING)
@pytest.mark.parametrize("base_score", [1e308, -1e308, 1e200])
def test_base_score_too_far_from_the_labels_is_refused(data, algorithm, base_score):
    # before: 1e308 gave a model of NaN predictions that could not be saved; 1e200 a
    # model grown on infinite split gains
    X, dreg, _, f0 = data
    with pytest.raises(ValueError, match=r"base_score=.*too far from the labels"):
        train(algorithm, {"objective": "reg:squarederror", "base_score": base_score},
              dreg, f0)


@pytest.mark.parametrize("algorithm", BOOSTING)
def test_a_base_score_far_but_workable_is_kept(data, algorithm):
    X, dreg, _, f0 = data
    model = train(algorithm, {"objective": "reg:squarederror", "base_score": 1e100},
                  dreg, f0)
    assert model.base_score[0] == 1e100
    assert np.all(np.isfinite(model.predict(X)))


@pytest.mark.parametrize("algorithm, objective", [
    ("gbdt", "binary:logistic"), ("cegb", "binary:logistic"), ("greedy_miser", "binary:logistic"),
    ("adapt_gbrt", "binary:logistic"), ("gbdt", "multi:softprob"), ("gbdt", "reg:squarederror")])
def test_a_learning_rate_that_overflows_is_refused(data, algorithm, objective):
    X, dreg, dbin, f0 = data
    params = {"objective": objective, "learning_rate": 1e308}
    if objective == "multi:softprob":
        params["num_class"] = 2
    with pytest.raises(ValueError, match=r"round \d+: .*learning_rate \(now 1e\+308\)"):
        train(algorithm, params, dreg if objective == "reg:squarederror" else dbin, f0,
              rounds=10)


def real_valued(param):
    """Whether a declared parameter takes any real number (not only integers)."""
    if param.check is None:
        return False
    try:
        return isinstance(param.check(0.5, param.name), float)
    except (TypeError, ValueError):
        return False


@pytest.mark.parametrize("algorithm", list(REGISTRY))
def test_extreme_values_of_every_parameter_are_refused_or_give_a_finite_model(
        data, algorithm, tmp_path):
    X, _, dbin, f0 = data
    names = [name for name, param in REGISTRY[algorithm].declared.items()
             if real_valued(param)]
    assert names
    for name in names:
        for value in (1e308, -1e308, math.inf, -math.inf, math.nan):
            try:
                model = train(algorithm, {name: value}, dbin, f0)
            except ValueError as exc:
                assert name in str(exc) or "learning_rate" in str(exc), (name, value, exc)
                continue
            assert np.all(np.isfinite(model.predict(X))), (name, value)
            model.save_model(tmp_path / "m.json")
            loaded = cbudget.load_model(tmp_path / "m.json")
            np.testing.assert_array_equal(loaded.predict(X), model.predict(X))


def test_raw_scores_that_could_overflow_are_refused_at_load(data, tmp_path):
    X, _, dbin, f0 = data
    booster = train("gbdt", {}, dbin, f0)
    doc = booster.to_dict()
    for tree in doc["trees"][:2]:          # every leaf 1e308: two trees overflow together
        tree["leaf_values"] = [1e308] * tree["num_nodes"]
    path = tmp_path / "edited.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(ValueError, match="invalid cbudget model: round 1: the raw scores "
                                         "could leave float64's range"):
        cbudget.load_model(path)
    doc["trees"][1]["leaf_values"] = [0.0] * doc["trees"][1]["num_nodes"]
    path.write_text(json.dumps(doc))
    assert np.all(np.isfinite(cbudget.load_model(path).predict(X, output_margin=True)))


def test_saving_a_model_with_a_nan_names_it(data, tmp_path):
    X, _, dbin, f0 = data
    booster = train("gbdt", {}, dbin, f0)
    booster.base_score[:] = np.nan
    with pytest.raises(ValueError, match=r"cannot save this model: \.base_score\[0\] holds nan"):
        booster.save_model(tmp_path / "m.json")
    assert not list(tmp_path.iterdir())
