"""Every ```python block of README.md runs as written.

The convention (stated in README's "Example" section): the blocks run top to bottom in
one namespace, as one reader's session would -- a block may use the names the blocks
above it define -- in a temporary working directory (the files they save land there).
New blocks are picked up by themselves; nothing in them is replaced or stubbed, so keep
them small enough to run in a few seconds all together. ```bash blocks are not run.
"""
import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parent.parent / "README.md"

# a fenced block: ```python on its own line, up to the closing ``` at the line start
PYTHON_BLOCK = re.compile(r"^```python[ \t]*\n(.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)


def python_blocks(text):
    """[(line number of the block's first code line, code)] of the ```python blocks."""
    return [(text.count("\n", 0, match.start(1)) + 1, match.group(1))
            for match in PYTHON_BLOCK.finditer(text)]


@pytest.fixture(scope="module")
def readme_text():
    if not README.is_file():   # the suite also runs copied away from the source tree
        pytest.skip("README.md is not beside this test suite")
    return README.read_text(encoding="utf-8")


def test_blocks_are_found():
    text = "intro\n```python\na = 1\n```\n```bash\nls\n```\n```python\nb = a\n```\n"
    assert python_blocks(text) == [(3, "a = 1\n"), (9, "b = a\n")]


@pytest.mark.filterwarnings("error::UserWarning")   # e.g. a model that buys nothing
def test_readme_python_blocks_run(readme_text, tmp_path, monkeypatch):
    blocks = python_blocks(readme_text)
    assert len(blocks) >= 7, "README's Python examples went missing"
    monkeypatch.chdir(tmp_path)          # where model.json and the other saved files go
    namespace = {"__name__": "__readme__"}
    for line, code in blocks:
        # padded so that a traceback names the README's own line numbers
        compiled = compile("\n" * (line - 1) + code, str(README), "exec")
        try:
            exec(compiled, namespace)
        except Exception as exc:
            raise AssertionError(f"the README block at line {line} failed: "
                                 f"{type(exc).__name__}: {exc}") from exc
