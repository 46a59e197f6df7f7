"""Backward compatibility: model files written by cbudget 0.1.0 (format 1.5) and by the
development versions before it (formats 1.0 to 1.4) still load and predict bit for bit
what cbudget 0.1.0 predicted with them (a gated model's margins and probabilities to 12
digits: ``CPU_DEPENDENT``).

The fixtures are in ``tests/fixtures/v0_1_0/`` (see its README): per model ``<name>.json``
(the saved model) and ``<name>.npz`` (the inputs ``X``, with missing values, and the
outputs cbudget 0.1.0 computed from the loaded file). Only the public API is used here:
``cbudget.load_model``, the models' prediction methods and ``cbudget.ExternalModel``.
"""
from pathlib import Path

import numpy as np
import pytest

import cbudget

FIXTURE_DIR = Path(__file__).resolve().parent / "fixtures" / "v0_1_0"

# every fixture, so that a lost file fails too ("written by" in the README)
FIXTURES = [
    # format 1.5, cbudget 0.1.0
    "gbdt_regression", "gbdt_binary", "gbdt_multiclass", "gbdt_early_stopping",
    "cegb_binary", "greedy_miser_binary", "budget_rf_binary", "budget_rf_multiclass",
    "cstc", "cstc_basis_trees", "cscc", "cronus",
    "adapt_gbrt_booster_f0", "adapt_lin_cstc_f0", "adapt_gbrt_external_f0",
    # older formats, written by development versions
    "format_1_0_gbdt_binary", "format_1_1_cegb_binary", "format_1_2_greedy_miser_multiclass",
    "format_1_3_budget_rf_multiclass", "format_1_4_cstc_basis_trees", "format_1_4_cscc",
]


class FixedLogistic:
    """The external expensive model of ``adapt_gbrt_external_f0``: a fixed logistic
    function of three features (deterministic, nothing fitted). Its file does not store
    it: it is given back at load time."""
    classes_ = np.array([0, 1])

    def predict_proba(self, X):
        X = np.nan_to_num(np.asarray(X, dtype=np.float64))
        z = np.clip(0.8 * X[:, 0] - 0.5 * X[:, 2] + 0.25 * X[:, 4] + 0.1, -30.0, 30.0)
        p = 1.0 / (1.0 + np.exp(-z))
        return np.column_stack([1.0 - p, p])


EXTERNAL_COST = 6.5     # its declared cost per input (ExternalModel(..., cost=))


def external_expensive_model():
    return cbudget.ExternalModel(FixedLogistic(), cost=EXTERNAL_COST)


def every(m):
    """v0.1.0 predicted with every iteration by default; since then an early-stopped
    booster or forest predicts up to its best iteration (as LightGBM does): the stored
    outputs are compared with every iteration, ``predict_best_iteration`` with the best."""
    return {"iteration_range": (0, 0)} if m.best_iteration is not None else {}


# what is checked, by output name: how to compute it from a loaded model
OUTPUTS = {
    "predict": lambda m, X: m.predict(X, **every(m)),
    "predict_margin": lambda m, X: m.predict(X, output_margin=True, **every(m)),
    "predict_proba": lambda m, X: m.predict_proba(X, **every(m)),
    "predict_leaf": lambda m, X: m.predict(X, pred_leaf=True, **every(m)),
    "predict_exit": lambda m, X: m.predict(X, pred_exit=True),
    "route": lambda m, X: m.predict(X, return_route=True)[1],
    "predict_best_iteration": lambda m, X: m.predict(
        X, iteration_range=(0, m.best_iteration + 1)),
    "predict_cost": lambda m, X: m.predict_cost(X, **every(m)),
    "acquisition_rate": lambda m, X: m.cost_report(X, **every(m)).acquisition_rate,
    "mean_cost": lambda m, X: np.float64(m.cost_report(X, **every(m)).mean_cost),
    "used_features": lambda m, X: m.used_features(**every(m)),
}
COMMON = ["predict", "predict_cost", "acquisition_rate", "mean_cost", "used_features"]
# the outputs each model class has (the Booster's predict_best_iteration: when
# early-stopped)
OUTPUTS_OF = {
    "Booster": COMMON + ["predict_margin", "predict_leaf"],
    "Forest": COMMON + ["predict_proba", "predict_leaf"],
    "ClassifierTree": COMMON + ["predict_margin", "predict_exit"],
    "Cascade": COMMON + ["predict_margin", "predict_exit"],
    "GatedModel": COMMON + ["predict_margin", "route"],
}


def outputs_of(model):
    names = list(OUTPUTS_OF[type(model).__name__])
    if type(model).__name__ == "Booster" and model.best_iteration is not None:
        names.append("predict_best_iteration")
    return names


def compute_outputs(model, X):
    """{output name: array} of ``model`` on ``X`` (the fixtures' ``out_<name>``)."""
    return {name: np.asarray(OUTPUTS[name](model, X)) for name in outputs_of(model)}


def load_kwargs(expensive):
    return {"expensive_model": external_expensive_model()} if expensive == "external" else {}


def assert_bit_identical(actual, expected, what):
    actual = np.asarray(actual)
    assert actual.dtype == expected.dtype, f"{what}: dtype {actual.dtype} != {expected.dtype}"
    assert actual.shape == expected.shape, f"{what}: shape {actual.shape} != {expected.shape}"
    np.testing.assert_array_equal(actual, expected, err_msg=what)
    if expected.dtype.kind == "f":   # -0.0 == 0.0 above: the sign bit too
        np.testing.assert_array_equal(np.signbit(actual), np.signbit(expected), err_msg=what)


# A gated model's margins and probabilities go through numpy's log and exp and a BLAS
# product (its linear parts); numpy and OpenBLAS pick their kernels by the CPU's SIMD
# extensions and numpy's version, and those differ in the last bits (seen: up to 32 ulps
# of a margin near 0, where log(p) - log1p(-p) cancels, with numpy 1.23 on an AVX-512
# machine against the fixtures written on one without). So those two outputs are compared
# to 12 digits (relative, or absolute near 0); every other output stays bit for bit.
CPU_DEPENDENT = {("GatedModel", "predict"), ("GatedModel", "predict_margin")}
CPU_TOLERANCE = 1e-12


def assert_close_to_rounding(actual, expected, what):
    actual = np.asarray(actual)
    assert actual.dtype == expected.dtype, f"{what}: dtype {actual.dtype} != {expected.dtype}"
    assert actual.shape == expected.shape, f"{what}: shape {actual.shape} != {expected.shape}"
    np.testing.assert_allclose(actual, expected, rtol=CPU_TOLERANCE, atol=CPU_TOLERANCE,
                               err_msg=what)


def load_fixture(name):
    with np.load(FIXTURE_DIR / f"{name}.npz") as data:
        stored = {key: data[key] for key in data.files}
    return stored


def check_outputs(model, stored, when):
    X = stored["X"]
    expected = {key[4:]: value for key, value in stored.items() if key.startswith("out_")}
    assert sorted(expected) == sorted(outputs_of(model)), f"{when}: outputs stored"
    for name, value in expected.items():
        if (type(model).__name__, name) in CPU_DEPENDENT:
            assert_close_to_rounding(OUTPUTS[name](model, X), value, f"{when}: {name}")
        else:
            assert_bit_identical(OUTPUTS[name](model, X), value, f"{when}: {name}")


def test_every_fixture_is_there():
    jsons = sorted(p.stem for p in FIXTURE_DIR.glob("*.json"))
    npzs = sorted(p.stem for p in FIXTURE_DIR.glob("*.npz"))
    assert jsons == npzs == sorted(FIXTURES)


@pytest.mark.parametrize("name", FIXTURES)
def test_fixture_loads_and_predicts_bit_identically(name, tmp_path):
    stored = load_fixture(name)
    expensive = str(stored["expensive_model"])
    model = cbudget.load_model(FIXTURE_DIR / f"{name}.json", **load_kwargs(expensive))
    assert type(model).__name__ == str(stored["model_class"])
    assert np.isnan(stored["X"]).any()
    if "attr_best_iteration" in stored:
        assert model.best_iteration == int(stored["attr_best_iteration"])
        assert_bit_identical(np.float64(model.best_score), stored["attr_best_score"],
                             "best_score")
        assert_bit_identical(model.predict(stored["X"]), stored["out_predict_best_iteration"],
                             "predict by default: up to the best iteration")
    check_outputs(model, stored, "loaded")

    # saved again by this version and loaded again: the same predictions
    path = tmp_path / f"{name}.json"
    model.save_model(path)
    again = cbudget.load_model(path, **load_kwargs(expensive))
    assert type(again).__name__ == str(stored["model_class"])
    check_outputs(again, stored, "re-saved")


def test_external_expensive_model_must_be_given_back():
    with pytest.raises(ValueError, match="expensive_model"):
        cbudget.load_model(FIXTURE_DIR / "adapt_gbrt_external_f0.json")
