#!/usr/bin/env bash
# The kernels under AddressSanitizer and UndefinedBehaviorSanitizer (issue 20).
#
#   tools/sanitize_kernels.sh [--serial] [--leaks] [--keep] [pytest arguments...]
#
# Copies the source tree (the files git knows of, uncommitted edits included; no build
# outputs) to a temporary directory, builds the extensions there in place with
# -fsanitize=address,undefined, and runs the tests against that copy with gcc's libasan
# preloaded (python itself is not instrumented). The normal in-place build of the source
# tree is not touched.
#
#   --serial   build without OpenMP (CBUDGET_NO_OPENMP=1) instead of with it
#   --leaks    also run LeakSanitizer; only leaks with a frame in cbudget's own compiled
#              code count (the interpreter leaks by design at exit)
#   --keep     keep the temporary directory (its path is printed)
#   pytest arguments replace the default test selection below.
#
# Exit status 0 when the tests pass and no sanitizer reported anything; the summary at the
# end says which. Results of a run are kept in tools/sanitize_kernels.md.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT="$PWD"

SERIAL=0
LEAKS=0
KEEP=0
TESTS=()
for arg in "$@"; do
  case "$arg" in
    --serial) SERIAL=1 ;;
    --leaks) LEAKS=1 ;;
    --keep) KEEP=1 ;;
    *) TESTS+=("$arg") ;;
  esac
done
if [ "${#TESTS[@]}" -eq 0 ]; then
  # every kernel test, and the training tests of each algorithm family (they drive the
  # grower, the stumps, the acquisition state and the linear kernels end to end)
  TESTS=(tests/test_kernels.py tests/test_dataset.py tests/test_cegb.py
         tests/test_greedy_miser.py tests/test_budget_rf.py tests/test_cstc.py
         tests/test_adapt.py tests/test_on_demand.py)
fi

# the interpreter itself, not a wrapper script (pyenv's shims run helper processes that
# LeakSanitizer would stop)
PYTHON="$(python -c 'import sys; print(sys.executable)')"
LIBASAN="$(gcc -print-file-name=libasan.so)"
if [ ! -e "$LIBASAN" ]; then
  echo "sanitize_kernels: gcc has no libasan.so (install gcc's sanitizer runtimes)" >&2
  exit 2
fi

WORK="$(mktemp -d "${TMPDIR:-/tmp}/cbudget-sanitize.XXXXXX")"
if [ "$KEEP" -eq 1 ]; then
  echo "sanitize_kernels: working directory $WORK (kept)"
else
  trap 'rm -rf "$WORK"' EXIT
fi
SRC="$WORK/src"
mkdir -p "$SRC"
git ls-files -z --cached --others --exclude-standard \
  | while IFS= read -r -d '' f; do [ -e "$f" ] && printf '%s\0' "$f"; done \
  | xargs -0 cp --parents -t "$SRC"

# -fno-wrapv: python's own flags make signed overflow wrap, which would hide it from UBSan
SAN_FLAGS="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-wrapv -g"
echo "=== build: $SAN_FLAGS, $([ "$SERIAL" -eq 1 ] && echo 'serial (CBUDGET_NO_OPENMP=1)' || echo OpenMP)"
BUILD_LOG="$WORK/build.log"
if ! (cd "$SRC" && CBUDGET_NO_OPENMP="$SERIAL" CFLAGS="$SAN_FLAGS" \
      LDFLAGS="-fsanitize=address,undefined" \
      "$PYTHON" setup.py build_ext --inplace -j 2 >"$BUILD_LOG" 2>&1); then
  tail -40 "$BUILD_LOG"
  echo "sanitize_kernels: the sanitized build failed" >&2
  exit 2
fi
grep -m1 "OpenMP disabled" "$BUILD_LOG" || true
# every extension must really be instrumented
for so in "$SRC"/cbudget/_core/*.so; do
  if ! nm -D "$so" | grep "__asan_init" >/dev/null; then
    echo "sanitize_kernels: $so is not instrumented" >&2
    exit 2
  fi
done

# The sanitizers are live: a deliberate out-of-bounds read through instrumented code (a
# node whose feature is past X's last column: the prediction kernels trust their nodes)
# must be reported
CANARY="$WORK/canary"
mkdir -p "$CANARY"
(cd "$SRC" && env LD_PRELOAD="$LIBASAN" ASAN_OPTIONS="detect_leaks=0:log_path=$CANARY/asan" \
   PYTHONMALLOC=malloc PYTHONPATH="$SRC" "$PYTHON" - >/dev/null 2>&1 <<'EOF'
import numpy as np
from cbudget._core._predict import predict_raw
from cbudget._core._types import PREDICT_NODE_DTYPE
nodes = np.zeros(3, PREDICT_NODE_DTYPE)
nodes["left"] = [1, -1, -1]
nodes["right"] = [2, -1, -1]
nodes["feature"] = [2, -1, -1]          # X has features 0 and 1
predict_raw(np.zeros((1, 2)), nodes, np.array([0, 3]), np.zeros(1, np.int32),
            np.zeros((1, 1)), 1)
EOF
) || true
if grep -qs "heap-buffer-overflow" "$CANARY"/asan.*; then
  echo "=== canary: a deliberate out-of-bounds read was reported (the sanitizers are live)"
else
  echo "sanitize_kernels: a deliberate out-of-bounds read went unreported" >&2
  exit 2
fi

REPORTS="$WORK/reports"
mkdir -p "$REPORTS"
ASAN_OPTIONS="detect_leaks=$LEAKS:halt_on_error=1:abort_on_error=0:log_path=$REPORTS/asan"
if [ "$LEAKS" -eq 1 ]; then
  # the interpreter's leaks at exit must not change exit statuses (the out-of-memory
  # tests check their child processes' status): leaks are counted from the reports, and
  # so are errors (each writes one)
  ASAN_OPTIONS+=":exitcode=0"
fi
ASAN_OPTIONS+=":strict_string_checks=1:detect_stack_use_after_return=1"
ASAN_OPTIONS+=":check_initialization_order=1:allocator_may_return_null=1"
UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:log_path=$REPORTS/ubsan"

echo "=== pytest ${TESTS[*]}"
START=$SECONDS
set +e
(cd "$SRC" && env LD_PRELOAD="$LIBASAN" ASAN_OPTIONS="$ASAN_OPTIONS" \
   UBSAN_OPTIONS="$UBSAN_OPTIONS" PYTHONMALLOC=malloc PYTHONPATH="$SRC" \
   "$PYTHON" -m pytest -q -p no:cacheprovider \
     --deselect tests/test_packaging.py::test_python_m_cbudget_version \
     "${TESTS[@]}" \
   >"$WORK/pytest.log" 2>&1)
STATUS=$?
set -e
ELAPSED=$((SECONDS - START))
tail -5 "$WORK/pytest.log"

# Sanitizer reports: errors of any kind; with --leaks, only leaks that cbudget's compiled
# code allocated (a frame in cbudget/_core) count
n_errors=0
n_leaks_ours=0
n_leaks_other=0
shopt -s nullglob
for report in "$REPORTS"/*; do
  if grep -q "runtime error:\|ERROR: AddressSanitizer" "$report"; then
    n_errors=$((n_errors + 1))
    echo "--- $(basename "$report")"
    grep -A40 "runtime error:\|ERROR: AddressSanitizer" "$report" | head -60
  fi
  if grep -q "ERROR: LeakSanitizer" "$report"; then
    ours=$(awk '/^(Direct|Indirect) leak/ {keep = $0; mine = 0; next}
                /cbudget\/_core/ {mine = 1}
                /^$/ {if (keep != "" && mine) print keep; keep = ""}
                END {if (keep != "" && mine) print keep}' "$report")
    if [ -n "$ours" ]; then
      n_leaks_ours=$((n_leaks_ours + $(printf '%s\n' "$ours" | wc -l)))
      echo "--- leaks in cbudget's code ($(basename "$report"))"
      printf '%s\n' "$ours" | head -20
    fi
    n_leaks_other=$((n_leaks_other + $(grep -c "^\(Direct\|Indirect\) leak" "$report")))
  fi
done

echo
echo "=== summary"
echo "build:     $([ "$SERIAL" -eq 1 ] && echo serial || echo OpenMP), $SAN_FLAGS"
echo "tests:     $(grep -E '[0-9]+ (passed|failed|error)' "$WORK/pytest.log" | tail -1)"
echo "pytest:    exit status $STATUS, ${ELAPSED}s"
echo "ASan/UBSan error reports: $n_errors"
if [ "$LEAKS" -eq 1 ]; then
  echo "leaks in cbudget's compiled code: $n_leaks_ours (leak records of the interpreter" \
       "and libraries, ignored: $n_leaks_other)"
fi
if ! grep -qE '[0-9]+ passed' "$WORK/pytest.log" && [ "$STATUS" -eq 0 ]; then
  STATUS=1                  # no summary line: the run died
fi
if [ "$STATUS" -ne 0 ] || [ "$n_errors" -ne 0 ] || [ "$n_leaks_ours" -ne 0 ]; then
  [ "$STATUS" -ne 0 ] && grep -E "^(FAILED|ERROR)|Fatal Python|Segmentation" "$WORK/pytest.log" | head -20
  echo "result:    FAILED"
  exit 1
fi
echo "result:    clean"
