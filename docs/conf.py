"""Sphinx configuration of cbudget's documentation site.

Build from the repository root (as .ci/run does)::

    pip install ".[docs]"
    sphinx-build -W --keep-going -b html docs docs/_build/html

Pages are MyST Markdown; docstrings are numpydoc; the API reference is autosummary's; the
gallery runs the scripts of examples/gallery (sphinx-gallery). The Parameters and
Benchmarks pages are written at build time by docs/_ext/cbudget_pages.py from the algorithm
registry and from benchmarks/results/, so nothing on them is written by hand.
"""
from __future__ import annotations

import os
import sys

DOCS = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(DOCS, "_ext"))

import cbudget  # noqa: E402 - the installed package (or PYTHONPATH) is documented

project = "cbudget"
author = "the cbudget authors"
copyright = "the cbudget authors, BSD-3-Clause"
release = cbudget.__version__
version = release

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "numpydoc",
    "sphinx_gallery.gen_gallery",
    "cbudget_pages",
]

source_suffix = {".md": "markdown", ".rst": "restructuredtext"}
root_doc = "index"
exclude_patterns = ["_build", "**.ipynb_checkpoints",
                    # the gallery's own sources: sphinx-gallery renders them itself
                    "auto_examples/*.py", "auto_examples/*.ipynb", "auto_examples/*.json"]

# MyST: ```{directive} fences, :::{note} blocks, $math$, definition lists, heading anchors
# (so that [text](page.md#a-heading) links resolve)
myst_enable_extensions = ["colon_fence", "deflist", "dollarmath", "fieldlist"]
myst_heading_anchors = 3

# autodoc / autosummary: one page per public object under api/generated (not committed)
autosummary_generate = True
autosummary_imported_members = True
autodoc_default_options = {"members": True, "inherited-members": False}
autodoc_typehints = "none"       # numpydoc's "Parameters" sections say the types

# numpydoc: the class pages list their methods through autosummary; no member tables
# (they would need a stub per inherited method)
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = False

# sphinx-gallery: examples/gallery only (examples/serving is a service, not a gallery script)
sphinx_gallery_conf = {
    "examples_dirs": os.path.join(DOCS, "..", "examples", "gallery"),
    "gallery_dirs": "auto_examples",
    "filename_pattern": r"/plot_",      # every plot_*.py runs during the build
    "ignore_pattern": r"__init__\.py",
    "download_all_examples": False,
    "remove_config_comments": True,
    "within_subsection_order": "FileNameSortKey",
    "image_scrapers": ("matplotlib",),
    "show_memory": False,
    "plot_gallery": "True",
    "abort_on_example_error": True,
}

html_theme = "alabaster"
html_title = f"cbudget {release}"
html_static_path: list[str] = []
html_theme_options = {"description": "Tree learners that know what a prediction costs"}


def skip_foreign_members(app, what, name, obj, skip, options):
    """Leave out the members a class inherits from another library (scikit-learn's
    ``score``, ``set_params``, ``set_fit_request`` ...): their docstrings are that
    library's, with references into its own documentation."""
    module = getattr(obj, "__module__", None) or ""
    if callable(obj) and module and not module.startswith("cbudget"):
        return True
    return None


def setup(app):
    app.connect("autodoc-skip-member", skip_foreign_members)
