#!/usr/bin/env bash
# Installs everything zetile needs on Debian 12 and builds it. Idempotent:
# a second run with nothing missing only re-checks and rebuilds what changed.
#   scripts/setup.sh            dependencies + build (build/)
#   ZT_SKIP_BUILD=1 ...         dependencies only
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi

# Debian packages (LLVM/MLIR 22 come from bookworm-security).
DEB_PKGS=(
  build-essential cmake ninja-build pkg-config ccache git
  llvm-22-dev libmlir-22-dev mlir-22-tools clang-22 llvm-22-tools libclang-rt-22-dev
  libze1 libze-dev intel-opencl-icd libigc-tools spirv-tools
  check libffi-dev libxxhash-dev
  ocl-icd-opencl-dev opencl-headers ocl-icd-libopencl1
)
missing=()
for p in "${DEB_PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "[setup] installing Debian packages: ${missing[*]}"
  $SUDO apt-get update -q
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

# Python packages in a virtualenv the project owns.
PY="${ZT_PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
  echo "[setup] creating .venv"
  "$PY" -m venv .venv
fi
REQ="$ROOT/scripts/requirements.txt"
STAMP=.venv/.zt-requirements
if ! cmp -s "$REQ" "$STAMP" 2>/dev/null; then
  echo "[setup] installing Python packages"
  .venv/bin/python -m pip install -q --upgrade pip
  .venv/bin/python -m pip install -q -r "$REQ"
  cp "$REQ" "$STAMP"
fi
# Intel's OpenCL CPU runtime (pip intel-opencl-rt) lands in .venv/lib; zetile
# opens it there directly (no change to /etc/OpenCL/vendors). Check it loads.
if [ -e .venv/lib/libintelocl.so ]; then
  missing_libs=$(LD_LIBRARY_PATH="$ROOT/.venv/lib" ldd .venv/lib/libintelocl.so | grep "not found" || true)
  if [ -n "$missing_libs" ]; then
    echo "[setup] warning: Intel's OpenCL CPU runtime lacks libraries (opencl:cpu unavailable):"
    echo "$missing_libs"
  fi
else
  echo "[setup] warning: .venv/lib/libintelocl.so is missing (pip intel-opencl-rt): no opencl:cpu device"
fi
# The package is installed editable (pyproject.toml): Python serves its
# files from python-bindings/, its binaries are the ones the build below
# copies into python-bindings/zetile/ (ZT_EDITABLE_FROM_BUILD: pip compiles
# nothing), and pip writes the `zetile` command and the entry points
# (torch.backends). Redone only when pyproject.toml changes or the install
# is missing; the file and wrapper of the former in-place setup go.
SITE=$(.venv/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
ESTAMP=.venv/.zt-editable
editable_here() {  # zetile is installed editable from this checkout
  .venv/bin/python - "$ROOT" <<'PY' 2>/dev/null
import importlib.metadata as m, json, sys
d = json.loads(m.distribution("zetile").read_text("direct_url.json") or "{}")
sys.exit(not (d.get("dir_info", {}).get("editable") and d.get("url") == "file://" + sys.argv[1]))
PY
}
if ! cmp -s pyproject.toml "$ESTAMP" 2>/dev/null || ! editable_here; then
  echo "[setup] installing zetile into .venv (editable)"
  rm -f .venv/bin/zetile
  ZT_EDITABLE_FROM_BUILD=1 .venv/bin/python -m pip install -q --no-deps --no-build-isolation \
    -e "$ROOT"
  cp pyproject.toml "$ESTAMP"
fi
rm -f "$SITE/zetile-dev.pth"

if [ "${ZT_SKIP_BUILD:-0}" != 1 ]; then
  export CCACHE_DIR="${CCACHE_DIR:-$HOME/.cache/ccache}"
  cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DZT_SANITIZE=OFF \
    -DZT_BUILD_COMPILER=ON -DZT_BUILD_PYTHON=ON -DZT_BUILD_TESTS=ON \
    -DPython3_EXECUTABLE="$ROOT/.venv/bin/python" >/dev/null
  cmake --build build
fi
