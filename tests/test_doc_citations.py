"""Citations of the documentation point at something that exists.

Docstrings, comments, tests, benchmark reports and the docs themselves cite sections as
``docs/architecture.md, "Cost model"`` or ``docs/user_guide/costs.md`` (optionally
followed by a quoted section name, several names as ``("On-demand prediction",
"Serving")``, a name possibly broken over a comment's lines). Each cited file must exist
and each quoted name must be a heading of it, so that moving a section (issue 48 cut
docs/architecture.md down and moved the rest to the user guide) cannot leave a stale
pointer behind.
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"

# where citations live: (folder or file, suffixes)
SOURCES = [("cbudget", (".py", ".pyx", ".pxd", ".pyi")), ("tests", (".py",)),
           ("benchmarks", (".py", ".md")), ("tools", (".py", ".md", ".sh")),
           ("examples", (".py", ".md")), ("docs", (".md", ".py")),
           ("README.md", ()), ("CHANGELOG.md", ())]

CITED_FILE = re.compile(r"docs/(architecture\.md|user_guide/[\w-]+\.md)")
# a quoted name right after the file (or after the previous name): separators only
QUOTED = re.compile(r"""[\s,(`]*(?:"([^"\n]{1,100})"|'([^'\n]{1,100})')""")
HEADING = re.compile(r"^#{1,6}[ \t]+(.+?)[ \t]*#*[ \t]*$", re.MULTILINE)
# a line break inside a comment or docstring, with the next line's comment marker
LINE_BREAK = re.compile(r"[ \t]*\n[ \t]*(?:#+[ \t]*|//[ \t]*)?")
# Python's implicit concatenation of string literals: "... docs/architecture.md, " "\"X\""
ADJACENT_LITERALS = re.compile(r'"[ \t]+"')
# pages the site's build writes from the code (docs/_ext); their text comes from docstrings
GENERATED = {DOCS / "parameters.md", DOCS / "benchmarks.md"}


def citations(text: str) -> list[tuple[str, str | None]]:
    """[(cited file under docs/, quoted section name or None)] in ``text``."""
    flat = ADJACENT_LITERALS.sub("", LINE_BREAK.sub(" ", text)).replace('\\"', '"')
    found = []
    for match in CITED_FILE.finditer(flat):
        path, pos, names = match.group(1), match.end(), []
        while (quoted := QUOTED.match(flat, pos)) is not None:
            names.append(quoted.group(1) or quoted.group(2))
            pos = quoted.end()
        found.extend((path, name) for name in names or [None])
    return found


def headings(page: Path) -> set[str]:
    """The headings of a Markdown page, without fenced code blocks."""
    text = re.sub(r"^```.*?^```", "", page.read_text(encoding="utf-8"),
                  flags=re.MULTILINE | re.DOTALL)
    return {name.strip() for name in HEADING.findall(text)}


def broken(text: str, docs: Path) -> list[str]:
    """What ``text`` cites that ``docs`` does not have, in words."""
    problems = []
    for path, name in citations(text):
        page = docs / path
        if not page.is_file():
            problems.append(f"docs/{path} does not exist")
        elif name is not None and name not in headings(page):
            problems.append(f'docs/{path} has no section "{name}"')
    return problems


def source_files():
    for where, suffixes in SOURCES:
        path = ROOT / where
        if path.is_file():
            yield path
        elif path.is_dir():
            for file in sorted(path.rglob("*")):
                if (file.is_file() and file.suffix in suffixes and file not in GENERATED
                        and file != Path(__file__).resolve()   # its examples are broken ones
                        and not {"_build", "auto_examples", "generated"} & set(file.parts)):
                    yield file


def test_citations_are_found():
    text = ('see docs/architecture.md, "Cost model"; docs/architecture.md ("On-demand\n'
            '# prediction", "Serving") and docs/user_guide/costs.md, and\n'
            '"docs/architecture.md, " "\\"Limits\\")" and `docs/architecture.md`, "Models"')
    assert citations(text) == [("architecture.md", "Cost model"),
                               ("architecture.md", "On-demand prediction"),
                               ("architecture.md", "Serving"),
                               ("user_guide/costs.md", None),
                               ("architecture.md", "Limits"),
                               ("architecture.md", "Models")]


def test_a_broken_citation_is_reported(tmp_path):
    (tmp_path / "user_guide").mkdir()
    (tmp_path / "architecture.md").write_text("# Title\n\n## Layers\n\n```\n# not one\n```\n")
    (tmp_path / "user_guide" / "costs.md").write_text("# Costs\n")
    assert broken('docs/architecture.md, "Layers" and docs/user_guide/costs.md', tmp_path) == []
    assert broken('docs/architecture.md, "Cost model"', tmp_path) == [
        'docs/architecture.md has no section "Cost model"']
    assert broken('docs/architecture.md, "not one"', tmp_path) == [
        'docs/architecture.md has no section "not one"']
    assert broken("docs/user_guide/budget.md", tmp_path) == [
        "docs/user_guide/budget.md does not exist"]


def test_every_citation_points_at_a_section_that_exists():
    if not (DOCS / "architecture.md").is_file():   # the suite also runs away from the tree
        pytest.skip("docs/ is not beside this test suite")
    problems = [f"{file.relative_to(ROOT)}: {problem}"
                for file in source_files()
                for problem in broken(file.read_text(encoding="utf-8", errors="replace"), DOCS)]
    assert not problems, "\n".join(problems)
