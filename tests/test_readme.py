"""Every ```python block of README.md, and of the site's quick start and user guide
(docs/quickstart.md, then docs/user_guide/ in its toctree's order), runs as written.

The convention (stated in the quick start's "Example" section): the blocks run top to
bottom in one namespace, as one reader's session would -- a block may use the names the
blocks above it define -- in a temporary working directory (the files they save land
there). README's blocks are a session of their own. New blocks are picked up by
themselves; nothing in them is replaced or stubbed, so keep them small enough to run in
a few seconds all together. ```bash blocks are not run.
"""
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
GUIDE = ROOT / "docs" / "user_guide"

# a fenced block: ```python on its own line, up to the closing ``` at the line start
PYTHON_BLOCK = re.compile(r"^```python[ \t]*\n(.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)
# the entries of a MyST toctree (one page name a line, after the options)
TOCTREE = re.compile(r"^```\{toctree\}[ \t]*\n(.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)


def python_blocks(text):
    """[(line number of the block's first code line, code)] of the ```python blocks."""
    return [(text.count("\n", 0, match.start(1)) + 1, match.group(1))
            for match in PYTHON_BLOCK.finditer(text)]


def guide_pages():
    """The quick start, then the user guide's pages in its toctree's order."""
    entries = TOCTREE.search((GUIDE / "index.md").read_text(encoding="utf-8")).group(1)
    names = [line.strip() for line in entries.splitlines()
             if line.strip() and not line.strip().startswith(":")]
    return [ROOT / "docs" / "quickstart.md"] + [GUIDE / f"{name}.md" for name in names]


def run_session(pages, tmp_path, monkeypatch):
    """Run the python blocks of ``pages`` in order in one namespace; the number run."""
    monkeypatch.chdir(tmp_path)          # where model.json and the other saved files go
    namespace = {"__name__": "__readme__"}
    n_blocks = 0
    for page in pages:
        for line, code in python_blocks(page.read_text(encoding="utf-8")):
            # padded so that a traceback names the page's own line numbers
            compiled = compile("\n" * (line - 1) + code, str(page), "exec")
            try:
                exec(compiled, namespace)
            except Exception as exc:
                raise AssertionError(f"the block at {page.name}:{line} failed: "
                                     f"{type(exc).__name__}: {exc}") from exc
            n_blocks += 1
    return n_blocks


def test_blocks_are_found():
    text = "intro\n```python\na = 1\n```\n```bash\nls\n```\n```python\nb = a\n```\n"
    assert python_blocks(text) == [(3, "a = 1\n"), (9, "b = a\n")]


@pytest.mark.filterwarnings("error::UserWarning")   # e.g. a model that buys nothing
def test_readme_python_blocks_run(tmp_path, monkeypatch):
    if not README.is_file():   # the suite also runs copied away from the source tree
        pytest.skip("README.md is not beside this test suite")
    assert run_session([README], tmp_path, monkeypatch) >= 1, \
        "README's Python example went missing"


@pytest.mark.filterwarnings("error::UserWarning")
def test_user_guide_python_blocks_run(tmp_path, monkeypatch):
    if not GUIDE.is_dir():
        pytest.skip("docs/ is not beside this test suite")
    pages = guide_pages()
    assert set(pages[1:]) == set(GUIDE.glob("*.md")) - {GUIDE / "index.md"}, \
        "a user guide page is missing from its toctree"
    assert run_session(pages, tmp_path, monkeypatch) >= 15, \
        "the user guide's Python examples went missing"
