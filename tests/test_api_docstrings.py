"""The API reference's docstrings parse as numpydoc means them: every entry of a
Parameters section is a parameter. Prose written after the Parameters section, outside a
Notes section, is read by numpydoc as more parameters and rendered on the site as a list
of bold lines (e.g. ":attr:`acquired` (the pairs" as a parameter name)."""
from __future__ import annotations

import importlib
import importlib.util
import inspect
import os
import re
import warnings

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXT = os.path.join(ROOT, "docs", "_ext", "cbudget_pages.py")
pytestmark = pytest.mark.skipif(not os.path.exists(EXT),
                                reason="the documentation sources are not in this tree")
docscrape = pytest.importorskip("numpydoc.docscrape")

# a name, or several sharing one description ("timeout, on_error"), or *args / **kwargs
NAME = r"\*{0,2}[A-Za-z_]\w*"
PARAMETER_NAMES = re.compile(rf"{NAME}(\s*,\s*{NAME})*")


def documented_objects():
    """(qualified name, object) of each object of the API reference and of the public
    methods its classes define."""
    spec = importlib.util.spec_from_file_location("cbudget_pages", EXT)
    pages = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(pages)
    for module_name, names, _ in pages.api_sections():
        module = importlib.import_module(module_name)
        for name in names:
            obj = getattr(module, name)
            yield f"{module_name}.{name}", obj
            if inspect.isclass(obj):
                for member, value in vars(obj).items():
                    if not member.startswith("_") and callable(value):
                        yield f"{module_name}.{name}.{member}", value


def test_parameters_sections_hold_only_parameters():
    bad = []
    for qualified, obj in documented_objects():
        doc = inspect.getdoc(obj)
        if not doc:
            continue
        with warnings.catch_warnings():      # numpydoc warns of sections it does not know
            warnings.simplefilter("ignore")
            parsed = docscrape.NumpyDocString(doc)
        for section in ("Parameters", "Other Parameters"):
            bad += [f"{qualified}: {p.name!r}" for p in parsed[section]
                    if not PARAMETER_NAMES.fullmatch(p.name)]
    assert not bad, "prose read as parameters (move it to a Notes section):\n" + \
        "\n".join(bad)
