"""Pages of the documentation site written from the code and the repository, not by hand.

* ``parameters.md``: every registered algorithm (:data:`cbudget.algorithms.REGISTRY`) with
  its declared parameters (:class:`cbudget.params.Param`: name, default, one-line doc),
  an index of which algorithms take each parameter, and the aliases
  (:data:`cbudget.params.ALIASES`).
* ``benchmarks.md``: the reports of ``benchmarks/results/`` (their titles), each linked.

* ``api.rst``: autosummary tables of the public names (:data:`API_SECTIONS`).

Sphinx calls :func:`setup`; at ``config-inited`` the pages are written into the source
folder (only when their text changed, so incremental builds stay incremental). The
functions that render them take no Sphinx object, so tests/test_docs_site.py checks them
without building the site.
"""
from __future__ import annotations

import os
import re
from collections.abc import Iterable
from typing import Any

GENERATED_NOTE = ("<!-- Written by docs/_ext/cbudget_pages.py at every build: edit the "
                  "declarations in the code, not this file. -->")


def cell(text: Any) -> str:
    """``text`` as one cell of a Markdown table (pipes escaped, one line)."""
    return " ".join(str(text).split()).replace("|", "\\|")


def anchor(algorithm: str) -> str:
    """The target (label) of an algorithm's section."""
    return f"parameters-{algorithm}"


def parameters_page() -> str:
    """The Parameters page (MyST Markdown), from the registry's declarations."""
    from cbudget.algorithms import REGISTRY, taken_by
    from cbudget.params import ALIASES

    out = [GENERATED_NOTE, "", "# Parameters", "",
           "Training takes a dict of parameters (`cbudget.train(params, dtrain, ...)`; the "
           "scikit-learn estimators take the same names as keyword arguments). "
           "`params[\"algorithm\"]` chooses the learner; each learner takes the parameters "
           "listed in its section below, with its own defaults. A parameter that the chosen "
           "algorithm does not take is an error that names the algorithms that do.", "",
           "This page is generated from the algorithm registry (`cbudget.algorithms.REGISTRY`)"
           " at every build of the site; `cbudget.algorithms.parameter_docs(name)` prints "
           "the same for one algorithm.", "",
           "## Algorithms", "",
           "| algorithm | what it is | parameters |", "| --- | --- | --- |"]
    for name, algorithm in REGISTRY.items():
        out.append(f"| [`{name}`](#{anchor(name)}) | {cell(algorithm.doc)} | "
                   f"{len(declared(algorithm))} |")
    out += ["", "## Which algorithms take each parameter", "",
            "| parameter | algorithms |", "| --- | --- |"]
    for param, algorithms in sorted(taken_by().items()):
        if param == "algorithm":
            continue
        out.append(f"| `{param}` | "
                   + ", ".join(f"[{a}](#{anchor(a)})" for a in algorithms) + " |")
    out += ["", "## Aliases", "",
            "Other libraries' names for the same parameters; training resolves them (giving "
            "both an alias and its parameter is an error).", "",
            "| alias | parameter |", "| --- | --- |"]
    out += [f"| `{alias}` | `{param}` |" for alias, param in sorted(ALIASES.items())]
    for name, algorithm in REGISTRY.items():
        out += ["", f"({anchor(name)})=", f"## {name}", "", cell(algorithm.doc) + ".", "",
                "| parameter | default | description |", "| --- | --- | --- |"]
        out += [f"| `{p.name}` | `{p.default!r}` | {cell(p.doc)} |"
                for p in declared(algorithm)]
    return "\n".join(out) + "\n"


def declared(algorithm: Any) -> list:
    """The parameters an algorithm takes, as the registry declares them (``algorithm``,
    which chooses the algorithm itself, left out)."""
    return [p for p in algorithm.declared.values() if p.name != "algorithm"]


def report_title(path: str) -> str:
    """The first Markdown heading of the report at ``path`` (its file name if none)."""
    with open(path, encoding="utf-8") as f:
        for line in f:
            match = re.match(r"#+\s+(.*\S)", line)
            if match:
                return match.group(1)
    return os.path.basename(path)


def benchmarks_page(results_dir: str, link_prefix: str) -> str:
    """The Benchmarks page: every report (``*.md``) of ``results_dir`` with its title, each
    a link (``link_prefix`` + file name, a path relative to the page)."""
    reports = sorted(f for f in os.listdir(results_dir) if f.endswith(".md"))
    out = [GENERATED_NOTE, "", "# Benchmarks", "",
           "The benchmark scripts are in `benchmarks/` (how to run them: "
           "`benchmarks/README.md`); each writes its report (Markdown, beside the JSON of "
           "the measurements and the figures) into `benchmarks/results/`. The reports below "
           "are the repository's files, listed at every build of the site; each link opens "
           "the report as it is in the repository.", "",
           "| report | title |", "| --- | --- |"]
    out += [f"| {{download}}`{f} <{link_prefix}{f}>` | "
            f"{cell(report_title(os.path.join(results_dir, f)))} |" for f in reports]
    return "\n".join(out) + "\n"


# The API reference: (module, names or None for the module's __all__, what it is). Names
# that cbudget itself exports are documented once, as cbudget.<name>.
API_SECTIONS: list[tuple[str, list[str] | None, str]] = [
    ("cbudget", None, "Training, the model classes, costs, on-demand prediction, plots"),
    ("cbudget.sklearn", None, "scikit-learn estimators and scorers"),
    ("cbudget.datasets", None, "The data sets cbudget ships and generates"),
    ("cbudget.dask", None, "Scoring, cost paths and training on a Dask cluster"),
    ("cbudget.serving", None, "Serving: the request batcher"),
    ("cbudget.callback", None, "Training callbacks"),
    ("cbudget.interop.to_onnx", ["onnx_model", "save_onnx"], "Export to ONNX"),
    ("cbudget.interop.to_lightgbm", ["lightgbm_model_text", "save_lightgbm"],
     "Export to LightGBM"),
    ("cbudget.interop.to_xgboost", ["xgboost_document", "save_xgboost"], "Export to XGBoost"),
    ("cbudget.algorithms", None, "The algorithm registry"),
    ("cbudget.engine", ["Algorithm", "Trainer", "TrainingSetup"],
     "Extension point: a new algorithm"),
    ("cbudget.params", ["Param", "ALIASES", "COMMON_PARAMS"], "Declared parameters"),
    ("cbudget.model_io", ["save_model", "model_to_dict", "model_from_dict", "read_header",
                          "register_model_type", "register_exporter", "export_model",
                          "exporter_formats", "algorithms_of"],
     "Model files and the registries of model types and export formats"),
]


def api_sections() -> list[tuple[str, list[str], str]]:
    """(module, public names to document, title) of each section of the API reference."""
    import importlib

    import cbudget

    top = {id(getattr(cbudget, name)) for name in cbudget.__all__}
    sections = []
    for module_name, names, title in API_SECTIONS:
        module = importlib.import_module(module_name)
        if names is None:
            names = [n for n in module.__all__ if not n.startswith("__")
                     and (module is cbudget or id(getattr(module, n)) not in top)
                     # submodules have sections of their own
                     and not isinstance(getattr(module, n), type(cbudget))]
        sections.append((module_name, names, title))
    return sections


def api_page() -> str:
    """The API reference (reStructuredText: autosummary finds its tables in .rst sources
    only; a page per object under api/generated)."""
    title = "API reference"
    out = [".. " + GENERATED_NOTE[5:-4], "", title, "=" * len(title), "",
           "Generated from the docstrings (numpydoc) at every build of the site."]
    for module_name, names, heading in api_sections():
        out += ["", heading, "-" * len(heading), "", f".. currentmodule:: {module_name}", "",
                ".. autosummary::", "   :toctree: api/generated", ""]
        out += [f"   {name}" for name in names]
    return "\n".join(out) + "\n"


def write_if_changed(path: str, text: str) -> None:
    """Write ``text`` to ``path`` unless it holds that already."""
    if os.path.exists(path):
        with open(path, encoding="utf-8") as f:
            if f.read() == text:
                return
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


def generated_pages(srcdir: str) -> Iterable[tuple[str, str]]:
    """(file name, text) of each generated page of the site whose sources are ``srcdir``."""
    yield "parameters.md", parameters_page()
    yield "api.rst", api_page()
    results = os.path.join(srcdir, "..", "benchmarks", "results")
    yield "benchmarks.md", benchmarks_page(results, "../benchmarks/results/")


def write_pages(app: Any, config: Any) -> None:
    for name, text in generated_pages(app.srcdir):
        write_if_changed(os.path.join(app.srcdir, name), text)


def setup(app: Any) -> dict:
    # at config-inited: before Sphinx lists the source files and autosummary reads api.rst
    app.connect("config-inited", write_pages)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
