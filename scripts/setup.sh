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
# The package is used in place: python-bindings/ and the build folder.
SITE=$(.venv/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
printf '%s\n' "$ROOT/python-bindings" > "$SITE/zetile-dev.pth"
# The `zetile` command line.
cat > .venv/bin/zetile <<WRAP
#!/usr/bin/env bash
exec "$ROOT/.venv/bin/python" -m zetile "\$@"
WRAP
chmod +x .venv/bin/zetile

if [ "${ZT_SKIP_BUILD:-0}" != 1 ]; then
  export CCACHE_DIR="${CCACHE_DIR:-$HOME/.cache/ccache}"
  cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DZT_SANITIZE=OFF \
    -DZT_BUILD_COMPILER=ON -DZT_BUILD_PYTHON=ON -DZT_BUILD_TESTS=ON \
    -DPython3_EXECUTABLE="$ROOT/.venv/bin/python" >/dev/null
  cmake --build build
fi
