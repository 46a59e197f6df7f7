"""The documentation site's generated pages (docs/_ext/cbudget_pages.py), checked without
building the site: the Parameters page lists every parameter each registered algorithm
declares, with its default and doc, and every alias; the API reference lists every public
name; the Benchmarks page links every report of benchmarks/results/."""
from __future__ import annotations

import importlib.util
import os
import re

import pytest

from cbudget.algorithms import REGISTRY, register_algorithm, unregister_algorithm
from cbudget.engine import Algorithm
from cbudget.params import ALIASES, Param

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXT = os.path.join(ROOT, "docs", "_ext", "cbudget_pages.py")
pytestmark = pytest.mark.skipif(not os.path.exists(EXT),
                                reason="the documentation sources are not in this tree")


@pytest.fixture(scope="module")
def pages():
    spec = importlib.util.spec_from_file_location("cbudget_pages", EXT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def section(page: str, algorithm: str) -> str:
    """The text of ``algorithm``'s section of the Parameters page."""
    match = re.search(rf"^## {re.escape(algorithm)}\n(.*?)(?=^\(parameters-|\Z)", page,
                      re.M | re.S)
    assert match, f"no section for {algorithm}"
    return match.group(1)


def test_parameters_page_has_every_declared_parameter(pages):
    page = pages.parameters_page()
    for name, algorithm in REGISTRY.items():
        rows = section(page, name)
        for param in algorithm.declared.values():
            if param.name == "algorithm":
                continue
            row = f"| `{param.name}` | `{param.default!r}` | {pages.cell(param.doc)} |"
            assert row in rows, f"{name}: {param.name} missing or wrong"
    for alias, target in ALIASES.items():
        assert f"| `{alias}` | `{target}` |" in page


def test_parameters_page_follows_the_registry(pages):
    """A newly registered algorithm (and its parameter) appear without editing the page."""
    gbdt = REGISTRY["gbdt"]
    extra = Algorithm("doc_probe", (Param("probe_knob", 7, None, "a knob | with a pipe"),),
                      gbdt.trainer,
                      "an algorithm for this test", model_class=gbdt.model_class)
    register_algorithm(extra)
    try:
        rows = section(pages.parameters_page(), "doc_probe")
    finally:
        unregister_algorithm("doc_probe")
    assert "| `probe_knob` | `7` | a knob \\| with a pipe |" in rows


def test_api_page_lists_the_public_api(pages):
    import cbudget

    page = pages.api_page()
    listed = set(re.findall(r"^   ([A-Za-z_]\w*)$", page, re.M))
    public = {n for n in cbudget.__all__
              if not n.startswith("__") and n not in ("datasets", "serving")}
    assert public <= listed, sorted(public - listed)
    for module_name, names, _ in pages.api_sections():
        module = importlib.import_module(module_name)
        assert all(hasattr(module, n) for n in names), module_name


def test_benchmarks_page_links_every_report(pages):
    results = os.path.join(ROOT, "benchmarks", "results")
    page = pages.benchmarks_page(results, "../benchmarks/results/")
    reports = [f for f in os.listdir(results) if f.endswith(".md")]
    assert reports
    for report in reports:
        assert f"<../benchmarks/results/{report}>`" in page
