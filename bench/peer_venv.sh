#!/bin/sh
# Sets up the peer compiler for bench/compile_latency.py --peer intel:
# Intel's Triton (triton-xpu 3.3.0b1, PyPI) in its own venv, compiling
# offline for a PVC target. No Intel GPU or driver is needed for that:
# - --no-deps: triton-xpu's requirements pull a GPU torch build; the
#   compiler itself needs none of them;
# - intel-sycl-rt: its driver module loads libsycl at import;
# - torch (the CPU build) importable: the XPU backend imports it;
# - CC=g++ when running (bench/compile_latency.py sets it): the backend
#   builds its SYCL launcher helpers with a C++ compiler.
# Usage: bench/peer_venv.sh [DIR]   (default bench/.peer-venv, git-ignored)
# Prints the venv's python on the last line.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
dir=${1:-$here/.peer-venv}
py=${PYTHON:-python3}
if [ ! -x "$dir/bin/python" ]; then
  "$py" -m venv "$dir"
fi
pip="$dir/bin/python -m pip install -q"
$pip --no-deps triton-xpu==3.3.0b1
$pip "intel-sycl-rt==2025.*"
# torch: the CPU wheel (pip finds it through the configured wheel directory
# when there is one, else the registry).
"$dir/bin/python" -c "import torch" 2>/dev/null || $pip torch==2.13.0
# What triton-xpu imports at compile time beyond torch (its other runtime
# requirements are for launching on a device).
$pip filelock packaging setuptools numpy
"$dir/bin/python" - <<'PY'
import triton, torch
from triton.backends.compiler import GPUTarget
print("triton", triton.__version__, "torch", torch.__version__)
PY
echo "$dir/bin/python"
