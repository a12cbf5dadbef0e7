#!/usr/bin/env bash
# Sets everything up (idempotent) and runs the demo on the best device present
# (an Intel GPU through Level Zero if there is one, else the CPU target).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
scripts/setup.sh
exec .venv/bin/python examples/demo.py "$@"
