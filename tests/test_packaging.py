"""Packaging: the version is single-sourced, the installed build is complete (compiled
kernels, package data) and has the OpenMP setting it was built for, and the CLI works."""
import glob
import importlib
import importlib.metadata
import os
import re
import subprocess
import sys

import pytest

import cbudget
import cbudget._core
from cbudget._core._openmp_helpers import openmp_enabled
from cbudget.datasets import load_letters


def test_version_is_single_sourced():
    assert re.fullmatch(r"\d+\.\d+\.\d+((a|b|rc)\d+)?(\.dev\d+)?", cbudget.__version__)
    try:
        installed = importlib.metadata.version("cbudget")
    except importlib.metadata.PackageNotFoundError:
        pytest.skip("cbudget runs from an in-place build, not an installed distribution")
    assert installed == cbudget.__version__


def test_python_m_cbudget_version(tmp_path):
    # from an empty directory: the installed package, not a source tree in the cwd
    result = subprocess.run([sys.executable, "-m", "cbudget", "--version"], cwd=tmp_path,
                            capture_output=True, text=True, check=True)
    assert result.stdout.strip() == f"cbudget {cbudget.__version__}"


def test_every_kernel_is_compiled_and_importable():
    core = os.path.dirname(cbudget._core.__file__)
    names = sorted(os.path.basename(p)[:-len(".pyx")] for p in glob.glob(f"{core}/*.pyx"))
    # the .pyx and .pxd sources ship with the package; each has its compiled module
    assert {"_grower", "_histogram", "_linear", "_predict", "_split"} <= set(names)
    assert glob.glob(f"{core}/_types.pxd")
    for name in names:
        module = importlib.import_module(f"cbudget._core.{name}")
        assert not module.__file__.endswith(".py"), module.__file__


def test_shipped_letters_data_loads():
    X, y, names = load_letters()
    assert X.shape == (20000, 16) and y.shape == (20000,) and len(names) == 16
    assert set(y) == set(range(26))


@pytest.mark.skipif("CBUDGET_EXPECT_OPENMP" not in os.environ,
                    reason="set CBUDGET_EXPECT_OPENMP=1/0 to check the build's OpenMP setting")
def test_build_has_the_expected_openmp_setting():
    assert openmp_enabled() == (os.environ["CBUDGET_EXPECT_OPENMP"] == "1")


def test_kernel_stubs_and_py_typed_ship():
    # a type checker reads the kernels' signatures from the .pyi beside each compiled
    # module (tools/make_core_stubs.py), and the package's types at all only with py.typed
    core = os.path.dirname(cbudget._core.__file__)
    kernels = {os.path.basename(p)[:-len(".pyx")] for p in glob.glob(f"{core}/*.pyx")}
    stubs = {os.path.basename(p)[:-len(".pyi")] for p in glob.glob(f"{core}/*.pyi")}
    assert kernels and kernels == stubs
    assert os.path.isfile(os.path.join(os.path.dirname(cbudget.__file__), "py.typed"))
