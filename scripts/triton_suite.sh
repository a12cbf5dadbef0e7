#!/bin/sh
# Triton's own language tests (test_core, test_standard, test_random,
# test_tuple) with `triton` resolved to zetile on the CPU target, beside
# Triton's interpreter on the same selection. Needs TRITON_SRC, a Triton
# source tree; see scripts/triton_suite/run.py --help for options.
ROOT=$(cd "$(dirname "$0")/.." && pwd)
exec "$ROOT/.venv/bin/python" "$ROOT/scripts/triton_suite/run.py" "$@"
