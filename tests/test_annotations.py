"""The public API is fully annotated (issue 48): every parameter and return of the
functions and methods a user calls, as measured by tools/annotation_share.py."""
import ast
import importlib.util
import os

import pytest

TOOL = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tools",
                    "annotation_share.py")


@pytest.fixture(scope="module")
def annotation_share():
    if not os.path.isfile(TOOL):
        pytest.skip("tools/ is not beside the tests (the suite runs on an installed copy)")
    spec = importlib.util.spec_from_file_location("annotation_share", TOOL)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_public_api_fully_annotated(annotation_share):
    rows, missing = annotation_share.measure()
    assert missing == []
    done, total = rows["public API"]
    assert total > 400 and done == total  # the whole API was found, and all of it is typed


@pytest.mark.parametrize("source, expected", [
    ("def f(x: int, *a: int, k: str = '', **o: int) -> None: ...", True),
    ("def f(x, y: int) -> None: ...", False),
    ("def f(x: int): ...", False),
    ("def f(*a, x: int) -> None: ...", False),
    ("class C:\n    def m(self, x: int) -> int: ...", True),
    ("class C:\n    def __init__(self, x: int): ...", True),   # as mypy: no return needed
    ("class C:\n    def __init__(self): ...", False),
    ("class C:\n    @staticmethod\n    def m(x) -> int: ...", False),  # x is not self
])
def test_fully_annotated_rule(annotation_share, source, expected):
    tree = ast.parse(source)
    [(node, is_method)] = list(annotation_share.functions(tree))
    assert annotation_share.fully_annotated(node, is_method) is expected


def test_feature_source_in_prediction_signatures():
    # the models' prediction and cost methods take a FeatureSource (on-demand prediction)
    import inspect
    import sys
    import typing

    import cbudget
    for cls in (cbudget.Booster, cbudget.Forest, cbudget.ClassifierTree, cbudget.GatedModel):
        for name in ("predict", "predict_cost", "cost_report"):
            method = getattr(cls, name)
            # the annotation as its module reads it (postponed evaluation: a string)
            written = inspect.signature(method).parameters["X"].annotation
            annotation = eval(written, vars(sys.modules[method.__module__]))
            assert cbudget.FeatureSource in typing.get_args(annotation), (cls, name)


TYPED_USE = '''
from typing import assert_type
import numpy as np
import cbudget

def use(d: cbudget.Dataset, booster: cbudget.Booster, forest: cbudget.Forest,
        source: cbudget.FeatureSource) -> None:
    assert_type(cbudget.train({}, d, 5, xgb_model=booster), cbudget.Booster)
    assert_type(cbudget.train({}, d, 5, xgb_model=forest), cbudget.Forest)
    assert_type(cbudget.train({}, d, expensive_model=booster), cbudget.GatedModel)
    assert_type(cbudget.train({}, d, evals=[(d, "valid")]), cbudget.Model)
    assert_type(booster.predict(source), np.ndarray)
    assert_type(booster.predict_cost(source), np.ndarray)
    # the (acquired features, touched groups) pair of CostModel.new_bitsets, not one array
    assert_type(booster.acquired_bitsets(np.zeros((1, 1))), tuple[np.ndarray, np.ndarray])
'''


@pytest.mark.slow
def test_train_and_predict_types_seen_by_mypy(tmp_path):
    # what a user's type checker sees: train's overloads, FeatureSource inputs
    api = pytest.importorskip("mypy.api")
    script = tmp_path / "use_cbudget.py"
    script.write_text(TYPED_USE)
    out, err, status = api.run([str(script), "--ignore-missing-imports",
                                "--follow-imports=silent", "--python-version=3.11",
                                "--cache-dir", str(tmp_path / "cache")])
    assert status == 0, out + err


def test_kernel_stubs_are_up_to_date():
    # the .pyi beside each .pyx is what tools/make_core_stubs.py makes of it now
    tool = os.path.join(os.path.dirname(TOOL), "make_core_stubs.py")
    if not os.path.isfile(tool):
        pytest.skip("tools/ is not beside the tests (the suite runs on an installed copy)")
    spec = importlib.util.spec_from_file_location("make_core_stubs", tool)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.main(["--check"]) == 0


def test_every_module_is_annotated_and_mypy_exempts_none(annotation_share):
    # pyproject's [tool.mypy] asks for annotations everywhere (disallow_untyped_defs)
    # and turns that off for no module; every module of cbudget/ is fully annotated
    tomllib = pytest.importorskip("tomllib")
    root = os.path.dirname(os.path.dirname(TOOL))
    with open(os.path.join(root, "pyproject.toml"), "rb") as f:
        mypy = tomllib.load(f)["tool"]["mypy"]
    assert mypy["disallow_untyped_defs"] is True
    assert not [o for o in mypy.get("overrides", [])
                if o.get("disallow_untyped_defs") is False or o.get("disable_error_code")]
    for path in annotation_share.package_files():
        module = os.path.relpath(path, root)[:-len(".py")].replace(os.sep, ".")
        assert all(annotation_share.fully_annotated(node, is_method) for node, is_method
                   in annotation_share.functions(annotation_share.parsed(path))), module
