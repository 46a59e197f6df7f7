"""Release habits: CHANGELOG.md's newest version is the package's, and the pre-commit hooks
run the fast checks of .ci/run with the same commands (so neither drifts from the other)."""
from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

import cbudget

ROOT = Path(__file__).resolve().parent.parent
CHANGELOG = ROOT / "CHANGELOG.md"
PRE_COMMIT = ROOT / ".pre-commit-config.yaml"
CI = ROOT / ".ci" / "run"

# the wheel check runs the suite outside the source tree, without these files; an sdist
# has CHANGELOG.md but not .ci/ (MANIFEST.in)
needs_changelog = pytest.mark.skipif(not CHANGELOG.is_file(), reason="no CHANGELOG.md here")
needs_ci = pytest.mark.skipif(not (CI.is_file() and PRE_COMMIT.is_file()),
                              reason="not in a git checkout (no .ci/run)")

# the checks both must run: the tool, as .ci/run names it first on a line of its own
HOOK_TOOLS = ("ruff", "mypy", "cython-lint")


def changelog_versions(text: str) -> list[str]:
    """The version headings of a Keep-a-Changelog file, newest first ('Unreleased' left
    out)."""
    return re.findall(r"^## \[(\d+\.\d+\.\d+[^\]]*)\]", text, flags=re.MULTILINE)


def ci_commands(text: str) -> list[list[str]]:
    """The commands of a shell script, one per line, split as the shell splits them
    (comments, continuations and control lines aside: enough for .ci/run's check lines)."""
    commands = []
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            try:
                commands.append(shlex.split(line, comments=True))
            except ValueError:      # a line of a quoted multi-line argument (python -c)
                continue
    return commands


def hook_entries(text: str) -> dict[str, list[str]]:
    """id -> entry of every hook of a pre-commit configuration, split into arguments."""
    yaml = pytest.importorskip("yaml")
    config = yaml.safe_load(text)
    return {hook["id"]: shlex.split(hook["entry"])
            for repo in config["repos"] for hook in repo["hooks"]}


@needs_changelog
def test_changelog_top_version_is_the_package_version():
    versions = changelog_versions(CHANGELOG.read_text(encoding="utf-8"))
    assert versions, "CHANGELOG.md has no '## [X.Y.Z] - date' heading"
    assert versions[0] == cbudget.__version__, (
        f"CHANGELOG.md's newest version is {versions[0]}, cbudget/_version.py says "
        f"{cbudget.__version__}: add the release's section or bump the version")


@needs_changelog
def test_changelog_versions_are_listed_newest_first():
    versions = changelog_versions(CHANGELOG.read_text(encoding="utf-8"))
    as_numbers = [tuple(int(part) for part in re.findall(r"\d+", v)[:3]) for v in versions]
    assert as_numbers == sorted(as_numbers, reverse=True) and len(set(as_numbers)) == len(
        as_numbers)


@needs_ci
def test_pre_commit_hooks_run_ci_commands():
    hooks = hook_entries(PRE_COMMIT.read_text(encoding="utf-8"))
    commands = ci_commands(CI.read_text(encoding="utf-8"))
    for tool in HOOK_TOOLS:
        assert tool in hooks, f".pre-commit-config.yaml has no {tool} hook"
        in_ci = [command for command in commands if command[0] == tool]
        assert in_ci, f".ci/run does not run {tool}"
        entry = hooks[tool]
        # the hook's entry is CI's command, less the paths CI passes (pre-commit passes
        # the changed files instead), or exactly CI's command when it passes none
        assert any(entry == command or entry == [a for a in command if not _is_path(a)]
                   for command in in_ci), (
            f"the {tool} hook runs {shlex.join(entry)!r}, .ci/run runs "
            f"{' / '.join(shlex.join(c) for c in in_ci)!r}")


@needs_ci
def test_pre_commit_hooks_download_nothing():
    yaml = pytest.importorskip("yaml")
    config = yaml.safe_load(PRE_COMMIT.read_text(encoding="utf-8"))
    for repo in config["repos"]:
        assert repo["repo"] == "local"
        assert all(hook["language"] == "system" for hook in repo["hooks"])


def _is_path(argument: str) -> bool:
    """An argument that names a path of the checkout ('.' or a folder), not an option."""
    return not argument.startswith("-") and (argument == "." or (ROOT / argument).exists())
