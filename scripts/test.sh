#!/usr/bin/env bash
# The whole test suite: sets up (idempotent), builds, runs the C tests (Check,
# through ctest), the C tests again under ASan/UBSan, then the Python tests.
#   scripts/test.sh            everything
#   scripts/test.sh -k softmax extra arguments go to pytest
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
scripts/setup.sh
export ZETILE_CACHE_DIR="${ZETILE_CACHE_DIR:-$(mktemp -d)}"
JOBS=$(nproc)

echo "== C tests (Check) =="
ctest --test-dir build --output-on-failure -j"$JOBS"

echo "== C tests under AddressSanitizer + UBSan =="
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DZT_SANITIZE=ON -DZT_BUILD_COMPILER=ON -DZT_BUILD_PYTHON=OFF -DZT_BUILD_TESTS=ON >/dev/null
cmake --build build-asan
# MLIR/LLVM keep process-lifetime singletons: only leaks in zetile count.
export LSAN_OPTIONS="suppressions=$ROOT/tests/lsan.supp:print_suppressions=0"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
ZETILE_COMPILER_LIB="$ROOT/build-asan/libzetile_compiler.so" \
  ctest --test-dir build-asan --output-on-failure -j"$JOBS"

echo "== Python tests (pytest) =="
# One worker process per core (pytest-xdist); a test file stays on one worker,
# so module fixtures and in-file order hold as in a serial run. --durations
# names the slowest tests in every log (the suite has a 45-minute budget).
.venv/bin/python -m pytest tests/python tests/conformance -q -p no:cacheprovider \
  -n "$JOBS" --dist loadfile --durations=25 "$@"
