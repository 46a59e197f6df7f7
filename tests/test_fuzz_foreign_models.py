"""Hostile LightGBM and XGBoost model files (issue 42): what ``cbudget report`` reads is
refused with a message or works, read through the command's own reading function
(tests/foreign_mutations.py; ``tools/fuzz_models.py --foreign-cases`` runs thousands of
cases in CI). Declared sizes (num_class 2**31 - 1 hung the XGBoost importer for minutes
and took 7.5 GB) are checked against what the file holds before anything is sized by
them. Cases run in a worker subprocess with a time and memory limit."""
import json
import random

import numpy as np
import pytest
from model_mutations import Deep, Worker

pytest.importorskip("lightgbm")
pytest.importorskip("xgboost")

from foreign_mutations import (  # noqa: E402
    check_foreign,
    directed_cases,
    foreign_seed_models,
    make_foreign_case,
    mutate_lightgbm,
    to_ubjson,
    xgboost_document,
)

import cbudget  # noqa: E402
from cbudget.interop.ubjson import decode, encode  # noqa: E402


@pytest.fixture(scope="module")
def worker():
    with Worker(timeout=30) as w:
        yield w


def test_every_foreign_seed_model_works_unmutated():
    models = foreign_seed_models()
    assert {via for _, via, _ in models} == {"foreign:lightgbm", "foreign:xgboost-json",
                                             "foreign:xgboost-ubj"}
    outcomes = {name: check_foreign(content, via) for name, via, content in models}
    assert all(o.kind == "ok" for o in outcomes.values()), outcomes


def test_the_ubjson_writer_gives_back_the_document():
    """The fuzzer's writer is the exporter's encoder (XGBoost's typed arrays, so the
    decoder's typed-array path is fuzzed) plus the hostile values it refuses."""
    for name, via, content in foreign_seed_models():
        if via == "foreign:xgboost-ubj":
            doc = xgboost_document(content, via)
            assert xgboost_document(to_ubjson(doc), via) == doc, name
            booster = decode(to_ubjson(doc))["learner"]["gradient_booster"]
            tree = booster.get("gbtree", booster)["model"]["trees"][0]   # dart: in gbtree
            assert tree["split_conditions"].dtype == np.float32, name
            assert tree["parents"].dtype == np.int32, name
    doc = {"a": [1.5, 2.0], "b": [1, 2**40], "c": "x", "d": None, "e": [0.1], "f": []}
    data = to_ubjson(doc)
    assert data == encode({**doc, "a": np.array([1.5, 2.0], dtype=np.float32),
                           "b": np.array([1, 2**40]), "e": np.array([0.1])})
    assert b"[$d#L" in data and b"[$L#L" in data and b"[$D#L" in data
    hostile = to_ubjson({"big": 2**64, "deep": Deep(5), "list": [1, -2**63 - 1]})
    big, deep = encode("big")[1:], encode("deep")[1:]      # keys: length and bytes
    assert big + b"HL" + bytes(7) + b"\x14" + str(2**64).encode() in hostile
    assert deep + b"[[[[[i\x01]]]]]" in hostile
    assert b"[i\x01H" in hostile                             # the list stays untyped
    with pytest.raises(ValueError, match="unsupported marker b'H'"):
        decode(hostile)
    assert decode(to_ubjson({"deep": Deep(5)})) == {"deep": [[[[[1]]]]]}


def test_foreign_mutations_are_deterministic_and_mutate():
    changed = 0
    models = foreign_seed_models()
    originals = {name: content for name, _, content in models}
    for seed in range(40):
        a, b = make_foreign_case(seed, models), make_foreign_case(seed, models)
        assert (a.model, a.steps, a.case, a.via) == (b.model, b.steps, b.case, b.via)
        changed += a.case != originals[a.model]
    assert changed >= 35
    text, steps = mutate_lightgbm(originals["lightgbm_binary"], random.Random(0))
    assert steps and text != originals["lightgbm_binary"]


def test_mutated_foreign_model_files_are_refused_or_work(worker):
    """A bounded run of the fuzzer's foreign cases."""
    models = foreign_seed_models()
    failures = []
    for seed in range(80):
        case = make_foreign_case(seed, models)
        outcome = worker.check_case(case)
        if outcome.failed:
            failures.append(f"{case.describe()}\n  {outcome.kind} at {outcome.step}: "
                            f"{outcome.message}\n  (again: python tools/fuzz_models.py "
                            f"--case {seed} --foreign)")
    assert not failures, "\n".join(failures)


@pytest.mark.parametrize("description,via,content", directed_cases(),
                         ids=[d for d, _, _ in directed_cases()])
def test_declared_sizes_are_checked_before_anything_is_sized(worker, description, via,
                                                             content):
    """num_class 2**31 - 1 in an XGBoost file hung the importer (60 s, 7.5 GB); a huge
    num_feature took 44 s and 2.3 GB. Each edit is refused in the worker's time limit,
    naming the field."""
    outcome = worker.check(content, via)
    assert outcome.kind == "rejected:ValueError", (description, outcome)
    key = description.split()[1].split("=")[0]
    assert key in outcome.message or (key == "num_class" and "trees per" in outcome.message) \
        or (key == "max_feature_idx" and "feature_names" in outcome.message), \
        (description, outcome.message)


def test_xgboost_num_class_must_have_its_trees():
    """The class count is checked against the trees (tree_info) and base scores."""
    _, via, content = next(m for m in foreign_seed_models()
                           if m[0] == "xgboost_multiclass_json")
    doc = xgboost_document(content, via)
    doc["learner"]["learner_model_param"]["num_class"] = "4"       # tree_info holds 0..2
    with pytest.raises(ValueError, match="trees per output|num_class"):
        cbudget.from_xgboost(json.dumps(doc).encode())
    model_doc = doc["learner"]["gradient_booster"]["model"]
    doc["learner"]["learner_model_param"]["num_class"] = str(len(model_doc["trees"]) + 1)
    with pytest.raises(ValueError, match="every class needs its trees"):
        cbudget.from_xgboost(json.dumps(doc).encode())


@pytest.mark.parametrize("key", ["feature_names", "feature_types"])
@pytest.mark.parametrize("value", [1, "c", [1, 2], {"a": "c"}])
def test_xgboost_name_and_type_lists_must_be_lists_of_strings(key, value):
    """feature_types 1 was a TypeError quoting Python ("'int' object is not iterable")."""
    _, via, content = next(m for m in foreign_seed_models() if m[0] == "xgboost_binary_json")
    doc = xgboost_document(content, via)
    doc["learner"][key] = value
    with pytest.raises(ValueError, match=f"learner.{key} must be a list of strings"):
        cbudget.from_xgboost(json.dumps(doc).encode())
