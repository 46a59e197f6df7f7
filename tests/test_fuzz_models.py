"""Hostile model files (issue 20): a model file is refused at load time with a
ValueError (or TypeError) that says what is wrong, or it loads and then everything a
user does with it works -- predictions, costs, reports, on-demand prediction, saving it
again, save -> load giving the same document -- and no value of the file is silently
changed.

A bounded hypothesis property over mutated files of every model type
(tests/model_mutations.py; ``tools/fuzz_models.py`` runs thousands of cases in CI), then
one test for each problem the issue reports. Cases that might kill the interpreter run
in a worker subprocess (``model_mutations.Worker``), so a crash fails a test instead of
ending pytest.
"""
import json
import math

import numpy as np
import pytest
from model_mutations import Worker, check_case, inputs, make_case, seed_models, to_text

import cbudget

try:
    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis import strategies as st
except ImportError:      # hypothesis is in the test extra; without it only the property is skipped
    given = None


def seeds():
    """name -> document of the seed models (trained once per process, then copied)."""
    return dict(seed_models())


@pytest.fixture(scope="module")
def worker():
    with Worker(timeout=60) as w:
        yield w


def doc(name):
    return seeds()[name]


def assert_refused_or_works(outcome, what, field=None):
    """The property; a refusal must name ``field`` when given."""
    assert not outcome.failed, f"{what}: {outcome.kind} at {outcome.step}: {outcome.message}"
    if outcome.kind.startswith("rejected:") and field is not None:
        assert field in outcome.message, \
            f"{what}: refused without naming {field!r}: {outcome.message}"


def assert_refused(outcome, what, field):
    assert outcome.kind in ("rejected:ValueError", "rejected:TypeError"), \
        f"{what}: expected a ValueError naming {field!r}, got {outcome.kind} at " \
        f"{outcome.step}: {outcome.message}"
    assert field in outcome.message, f"{what}: the message does not name {field!r}: " \
                                     f"{outcome.message}"


def test_every_seed_model_works_unmutated():
    """The fuzzer's starting points: every model type and algorithm (imported boosters
    and forests too), each working before mutation (a model cbudget saved must load
    again: issue 20's budget_rf with num_class=2)."""
    models = seeds()
    kinds = {d["model_type"] for d in models.values()}
    algorithms = {d["algorithm"] for d in models.values()}
    assert kinds == set(cbudget.model_io.MODEL_TYPES)
    assert algorithms == {*cbudget.algorithms.REGISTRY, "imported"}
    failures = {name: check_case(d) for name, d in models.items()}
    failures = {name: o for name, o in failures.items() if o.kind != "ok"}
    assert not failures


def test_mutations_are_deterministic_and_mutate():
    changed = 0
    for seed in range(40):
        a, b = make_case(seed), make_case(seed)
        assert (a.model, a.steps, a.via) == (b.model, b.steps, b.via)
        text = a.case if isinstance(a.case, bytes) else to_text(a.case)
        assert text == (b.case if isinstance(b.case, bytes) else to_text(b.case))
        changed += a.case != doc(a.model)
    assert changed >= 35      # a few mutations change nothing (swapping equal entries)


# -- the property -------------------------------------------------------------------------
if given is not None:
    @settings(max_examples=150, deadline=None, derandomize=True, database=None,
              phases=[Phase.explicit, Phase.generate],      # no shrinking: bounded time
              suppress_health_check=list(HealthCheck))
    @given(seed=st.integers(0, 2**31 - 1), model_index=st.integers(0, 63))
    def test_a_mutated_model_file_is_refused_or_works(worker, seed, model_index):
        """Refused with a ValueError (TypeError) and a message, or everything works."""
        case = make_case(seed, model_index)
        outcome = worker.check_case(case)
        assert not outcome.failed, \
            f"{case.describe()}\n{outcome.kind} at {outcome.step}: {outcome.message}\n" \
            f"(again: python tools/fuzz_models.py --case {seed} --model-index {model_index})"
else:
    def test_a_mutated_model_file_is_refused_or_works():
        pytest.skip("hypothesis is not installed (pip install '.[test]')")


# -- the reproductions of issue 20 --------------------------------------------------------
@pytest.mark.parametrize("name", ["gbdt_regression", "budget_rf_binary", "cstc_regression",
                                  "adapt_gbrt"])
@pytest.mark.parametrize("n_jobs", [10**6, 2**31 - 1, 2**63, -2**63 - 1])
def test_a_huge_n_jobs_does_not_kill_the_process(worker, name, n_jobs):
    """training_params.n_jobs 10**6 segfaulted at predict time (in a subprocess here);
    any integer is capped to the CPUs the process may use."""
    d = doc(name)
    for part in (d, d.get("gate"), d.get("predictor"), d.get("expensive")):
        if part:
            part["training_params"]["n_jobs"] = n_jobs
    outcome = worker.check(to_text(d).encode())
    assert_refused_or_works(outcome, f"{name} with n_jobs={n_jobs}", "n_jobs")


@pytest.mark.parametrize("n_jobs", ["2", 2.5, True, [1], {}, math.nan])
def test_n_jobs_of_the_wrong_type_is_refused(worker, n_jobs):
    """Bad n_jobs types failed at predict time (TypeError, OverflowError)."""
    d = doc("gbdt_regression")
    d["training_params"]["n_jobs"] = n_jobs
    assert_refused(worker.check(to_text(d).encode()), f"n_jobs={n_jobs!r}", "n_jobs")


def _deep(levels):
    return "[" * levels + "1" + "]" * levels


@pytest.mark.parametrize("levels", [1_000, 100_000])
@pytest.mark.parametrize("where", ["summary", "training_params", "attributes"])
def test_deep_nesting_is_refused_or_works(worker, levels, where):
    """A list nested deep raised RecursionError (at load, or later when saving)."""
    d = doc("cegb_binary")
    d[where]["deep"] = "DEEP"
    text = to_text(d).replace('"DEEP"', _deep(levels))
    assert_refused_or_works(worker.check(text.encode()), f"{where} nested {levels} deep")


def test_shallow_nesting_in_free_form_fields_round_trips():
    d = doc("gbdt_regression")
    d["summary"]["nested"] = json.loads(_deep(50))
    assert_refused_or_works(check_case(d), "summary nested 50 deep")


@pytest.mark.parametrize("name", ["budget_rf_binary", "budget_rf_multiclass"])
@pytest.mark.parametrize("value", ["num_class", -1, 0.5, 1e308, -1e308, 2**63, True, None, "1"])
@pytest.mark.parametrize("node", ["leaf", "internal"])
def test_forest_leaf_values_must_be_classes(worker, name, value, node):
    """A forest's leaf_values are the leaves' majority classes (0 at internal nodes):
    anything else failed at predict time (IndexError)."""
    d = doc(name)
    value = d["num_class"] if value == "num_class" else value
    for tree in d["trees"]:
        leaf = tree["left_children"].index(-1)
        tree["leaf_values"][leaf if node == "leaf" else 0] = value
    assert_refused(worker.check(to_text(d).encode()), f"{name} leaf value {value!r}",
                   "leaf_values")


@pytest.mark.parametrize("change", ["shorter", "longer", "not a list"])
def test_forest_leaf_values_of_the_wrong_length_are_refused(change):
    d = doc("budget_rf_binary")
    tree = d["trees"][1]
    if change == "shorter":
        tree["leaf_values"].pop()
    elif change == "longer":
        tree["leaf_values"].append(0.0)
    else:
        tree["leaf_values"] = {"0": 1}
    assert_refused(check_case(d), f"leaf_values {change}", "leaf_values")


NON_FINITE = [("summary", "train_cost"), ("attributes", "best_score"),
              ("trees.0", "gain"), ("trees.0", "sum_hessian"), ("trees.0", "path_cost"),
              ("trees.0", "cost_penalty"), ("training_params", "learning_rate"),
              ("training_params", "gamma"), ("cegb", "learning_rate")]


@pytest.mark.parametrize("section,key", NON_FINITE)
@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf])
@pytest.mark.parametrize("via", ["file", "dict"])
def test_nan_and_infinite_metadata_is_refused(section, key, value, via):
    """NaN / inf metadata loaded, then the model could not be saved again."""
    d = doc("gbdt_early_stopping" if section == "attributes" else "cegb_binary")
    node = d
    for part in section.split("."):
        node = node[int(part)] if part.isdigit() else node[part]
    if isinstance(node[key], list):
        node[key][0] = value
    else:
        node[key] = value
    assert_refused(check_case(d, via), f"{section}.{key} = {value}", key)


@pytest.mark.parametrize("name", ["cegb_binary", "budget_rf_binary", "cstc_basis_trees",
                                  "cronus", "adapt_gbrt", "adapt_lin"])
def test_missing_training_parameter_keys(name):
    """A file without one of its training parameters loaded and predicted, then could not
    be saved (KeyError): refused naming the key, or works and round-trips."""
    failures = []
    for key in seeds()[name]["training_params"]:
        d = doc(name)
        del d["training_params"][key]
        outcome = check_case(d)
        if outcome.failed or (outcome.kind != "ok" and key not in outcome.message):
            failures.append(f"{key}: {outcome.kind} at {outcome.step}: {outcome.message}")
    assert not failures, f"{name}, training_params without:\n" + "\n".join(failures)


@pytest.mark.parametrize("value", [0.9, 1.5, True, "0", None, -2, 2**63])
def test_feature_group_must_be_a_group_index(value):
    """feature_group 0.9 was read as group 0."""
    d = doc("cegb_binary")
    d["cost_model"]["feature_group"][2] = value
    assert_refused(check_case(d), f"feature_group {value!r}", "feature_group")


def test_feature_group_as_an_integral_float_is_refused_or_kept():
    d = doc("cegb_binary")
    d["cost_model"]["feature_group"][2] = 0.0
    assert_refused_or_works(check_case(d), "feature_group 0.0", "feature_group")


@pytest.mark.parametrize("key", ["feature_costs", "coupled_costs", "group_costs"])
@pytest.mark.parametrize("value", [True, False, "1", None])
def test_costs_must_be_numbers(key, value):
    """feature_costs true was read as 1.0 (changing the costs)."""
    d = doc("cegb_binary")
    d["cost_model"][key][0] = value
    assert_refused(check_case(d), f"{key}[0] = {value!r}", key)


@pytest.mark.parametrize("key", ["split_cost", "tree_cost"])
@pytest.mark.parametrize("value", [True, "0.01", None, [0.01]])
def test_scalar_costs_must_be_numbers(key, value):
    d = doc("cegb_binary")
    d["cost_model"][key] = value
    assert_refused(check_case(d), f"{key} = {value!r}", key)


def test_budget_rf_trained_with_num_class_2_round_trips(tmp_path):
    """A forest trained with num_class=2 (multi:softprob) could not be loaded."""
    X, y = np.random.default_rng(0).normal(size=(120, 3)), np.arange(120) % 2
    forest = cbudget.train({"algorithm": "budget_rf", "num_class": 2, "n_stumps": (4, 2, 2),
                            "max_depth": 3, "n_jobs": 1}, cbudget.Dataset(X, y), 2,
                           verbose_eval=False)
    path = tmp_path / "forest.json"
    forest.save_model(path)
    loaded = cbudget.load_model(path)
    np.testing.assert_array_equal(loaded.predict_proba(X), forest.predict_proba(X))
    assert loaded.to_dict() == forest.to_dict()
    outcome = check_case(seeds()["budget_rf_num_class_2"])
    assert outcome.kind == "ok", f"{outcome.kind} at {outcome.step}: {outcome.message}"


def test_the_inputs_have_nan_and_infinite_rows():
    X = inputs(cbudget.model_io.model_from_dict(doc("gbdt_regression")))
    assert np.isnan(X).all(axis=1).any() and np.isposinf(X).all(axis=1).any() \
        and np.isneginf(X).all(axis=1).any()
