#!/bin/sh
# FileCheck tests of the compiler's stages (Debian's llvm-22-tools FileCheck).
# Each *.tile file in DIR starts with a line
#   // RUN: <stage> <target> <num_warps>
# and is compiled by zt-compile-tile with ZETILE_DUMP=<stage>
# ZETILE_STOP_AFTER=<stage>; the dump is checked against the file's CHECK lines.
# usage: run.sh ZT_COMPILE_TILE DIR [FILECHECK]
set -u
tool=$1
dir=$2
fc=${3:-/usr/lib/llvm-22/bin/FileCheck}
[ -x "$fc" ] || fc=$(command -v FileCheck || true)
if [ -z "$fc" ] || [ ! -x "$fc" ]; then
  echo "FileCheck not found (llvm-22-tools)"
  exit 77
fi
failed=0
n=0
for f in "$dir"/*.tile; do
  n=$((n + 1))
  set -- $(sed -n 's|^// RUN: *||p' "$f" | head -1) "" "" ""
  stage=$1 target=$2 warps=$3
  if [ -z "$stage" ] || [ -z "$target" ] || [ -z "$warps" ]; then
    echo "FAIL: $(basename "$f") (no '// RUN: <stage> <target> <num_warps>' line)"
    failed=$((failed + 1))
    continue
  fi
  if ZETILE_DUMP=$stage ZETILE_STOP_AFTER=$stage "$tool" "$f" "$target" "$warps" 2>&1 |
      "$fc" "$f"; then
    echo "PASS: $(basename "$f")"
  else
    echo "FAIL: $(basename "$f")"
    failed=$((failed + 1))
  fi
done
echo "$n tests, $failed failed"
[ "$n" -gt 0 ] && [ "$failed" -eq 0 ]
