#!/usr/bin/env bash
# Packaging check, run by .ci/run: what users install must work, not just the source tree.
#
#   tools/check_packaging.sh
#
# 1. tools/build_wheels.sh: the sdist, a wheel built from it, auditwheel repair and show;
#    `twine check` of both (the metadata and README rendering PyPI requires).
# 2. The release configuration: cibuildwheel accepts [tool.cibuildwheel] and selects the
#    promised wheels; the release workflow is valid (tools/check_release_config.py).
# 3. That wheel in a fresh virtual environment outside the source tree: the CLI's version,
#    then the test suite, copied to an empty directory, against the installed wheel; then
#    the test suite again with the oldest dependencies pyproject.toml allows (each lower
#    bound "x>=1.23" pinned as "x==1.23.*"), when python3 is 3.11.
# 4. The sdist installed with OpenMP disabled (CBUDGET_NO_OPENMP=1) in another fresh
#    environment: the test suite again, then tools/compare_builds.py: the serial build
#    must load the OpenMP build's models and train the same ones, bit for bit.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT="$PWD"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
VERSION="$(python3 -c 'exec(open("cbudget/_version.py").read()); print(__version__)')"

step() { echo; echo "=== $*"; }
fresh_venv() {  # fresh_venv DIR: a new virtual environment with an up-to-date pip
  python3 -m venv "$1"
  "$1/bin/python" -m pip install --quiet --upgrade pip
}
run_tests() {  # run_tests VENV: the copied test suite against VENV's installed cbudget
  (cd "$WORK" && "$1/bin/python" -m pytest -n auto tests -q -p no:cacheprovider)
}
installed_from() {  # installed_from VENV: where the venv's cbudget is imported from
  (cd "$WORK" && "$1/bin/python" -c 'import cbudget; print(cbudget.__file__)')
}

step "sdist and manylinux wheel (tools/build_wheels.sh)"
bash tools/build_wheels.sh --wheelhouse "$WORK/wheelhouse"
TOOLS="$ROOT/build/wheel-tools"   # build_wheels.sh's tools venv, reused for the checks
"$TOOLS/bin/python" -m pip install --quiet cibuildwheel check-jsonschema twine
SDIST="$WORK/wheelhouse/cbudget-$VERSION.tar.gz"
WHEEL="$(ls "$WORK"/wheelhouse/cbudget-"$VERSION"-*manylinux*.whl)"
echo "wheel: $(basename "$WHEEL"), $(du -k "$WHEEL" | cut -f1) KiB;" \
  "sdist: $(du -k "$SDIST" | cut -f1) KiB"
"$TOOLS/bin/twine" check --strict "$WHEEL" "$SDIST"   # metadata PyPI would accept

step "release configuration"
PATH="$TOOLS/bin:$PATH" "$TOOLS/bin/python" tools/check_release_config.py

step "the wheel in a fresh virtual environment outside the source tree"
cp -r tests "$WORK/tests"
START=$SECONDS
fresh_venv "$WORK/venv-wheel"
"$WORK/venv-wheel/bin/python" -m pip install --quiet "${WHEEL}[test]"
LOCATION="$(installed_from "$WORK/venv-wheel")"
case "$LOCATION" in
  "$WORK/venv-wheel/"*) ;;
  *) echo "cbudget imported from $LOCATION" >&2; exit 1 ;;
esac
CLI_VERSION="$(cd "$WORK" && "$WORK/venv-wheel/bin/cbudget" --version)"
[ "$CLI_VERSION" = "cbudget $VERSION" ] || { echo "cbudget --version: $CLI_VERSION" >&2; exit 1; }
echo "installed in $((SECONDS - START)) s: $LOCATION; $CLI_VERSION"
CBUDGET_EXPECT_OPENMP=1 run_tests "$WORK/venv-wheel"
echo "fresh-venv install and test of the wheel: $((SECONDS - START)) s"

# (tomllib needs 3.11; the oldest numpy has no wheels for 3.12+)
if python3 -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))'; then
  step "the wheel with the oldest supported dependencies"
  mapfile -t OLDEST < <(python3 -c '
import re, tomllib
project = tomllib.load(open("pyproject.toml", "rb"))["project"]
for dep in project["dependencies"] + project["optional-dependencies"]["test"]:
    print(re.sub(r">=([0-9.]+)$", r"==\1.*", dep))')
  fresh_venv "$WORK/venv-oldest"
  "$WORK/venv-oldest/bin/python" -m pip install --quiet "${OLDEST[@]}" "$WHEEL"
  "$WORK/venv-oldest/bin/python" -c 'import numpy, scipy, pandas, pytest
print("numpy", numpy.__version__, "scipy", scipy.__version__, "pandas", pandas.__version__,
      "pytest", pytest.__version__)'
  CBUDGET_EXPECT_OPENMP=1 run_tests "$WORK/venv-oldest"
fi

step "the sdist, built and installed with OpenMP disabled"
START=$SECONDS
fresh_venv "$WORK/venv-serial"
CBUDGET_NO_OPENMP=1 "$WORK/venv-serial/bin/python" -m pip install --quiet "${SDIST}[test]"
echo "built and installed in $((SECONDS - START)) s: $(installed_from "$WORK/venv-serial")"
CBUDGET_EXPECT_OPENMP=0 run_tests "$WORK/venv-serial"

step "same models from the OpenMP wheel and the serial build"
(cd "$WORK" && "$WORK/venv-wheel/bin/python" "$ROOT/tools/compare_builds.py" write models)
(cd "$WORK" && "$WORK/venv-serial/bin/python" "$ROOT/tools/compare_builds.py" check models)
echo; echo "packaging checks passed"
