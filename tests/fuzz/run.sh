#!/usr/bin/env bash
# Builds zetile's libFuzzer harnesses with clang-22 (-fsanitize=fuzzer,
# address,undefined) into build/fuzz/ and runs each for SECONDS seconds
# (default 10) on a copy of its corpus (tests/fuzz/corpus/<name>, which is
# only read). Prints one line per harness: executions, new corpus entries,
# crashes. Exit status 1 if any harness crashed, hung or leaked.
#   tests/fuzz/run.sh            short run (CI)
#   tests/fuzz/run.sh 600        long run (bench/ or scripts/stress.sh)
#   ZT_FUZZ_ONLY=builder ...     one harness
# Needs clang-22 and libclang-rt-22-dev (scripts/setup.sh installs both) and
# the normal build in build/ (the tile IR harness links its libzetile).
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
SECONDS_EACH="${1:-10}"
OUT="$ROOT/build/fuzz"
mkdir -p "$OUT"
CC="${ZT_FUZZ_CC:-clang-22}"
FLAGS=(-g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined
       -D_GNU_SOURCE -I"$ROOT/include" -I"$ROOT/runtime" -I"$ROOT/jit" -I"$ROOT/build/generated")
BASE=("$ROOT/runtime/base/status.c" "$ROOT/runtime/base/strbuf.c")

build() {  # name sources... [-- link flags]
  local name=$1; shift
  if ! "$CC" "${FLAGS[@]}" "$@" -o "$OUT/fuzz_$name" 2>"$OUT/fuzz_$name.build.log"; then
    echo "fuzz $name: BUILD FAILED (see $OUT/fuzz_$name.build.log)"; return 1
  fi
}

build artifact "$ROOT/tests/fuzz/fuzz_artifact.c" "$ROOT/runtime/base/artifact.c" \
  "$ROOT/runtime/base/kernel_meta.c" "$ROOT/runtime/base/spirv_check.c" "${BASE[@]}" \
  "$ROOT/jit/builder.c" -lxxhash || exit 1
build cache_entry "$ROOT/tests/fuzz/fuzz_cache_entry.c" "$ROOT/jit/cache.c" "${BASE[@]}" \
  -lxxhash -lpthread || exit 1
build builder "$ROOT/tests/fuzz/fuzz_builder.c" "$ROOT/jit/builder.c" "${BASE[@]}" || exit 1
build elf_object "$ROOT/tests/fuzz/fuzz_elf_object.c" "$ROOT/runtime/cpu/elf_load.c" "${BASE[@]}" || exit 1
# The tile IR harness runs on a copy of the build's libzetile and its
# compiler library: others rebuild build/ while a long run goes on, and a
# harness started while the linker rewrites libzetile.so fails to load it
# ("file too short": a whole harness run lost so). A copy that does not load
# (taken mid-write) is taken again.
LIB="$OUT/lib"
mkdir -p "$LIB"
for try in 1 2 3 4 5 6; do
  for so in libzetile.so libzetile_compiler.so; do
    cp "$ROOT/build/$so" "$LIB/$so.tmp" && mv -f "$LIB/$so.tmp" "$LIB/$so"
  done
  build tile_ir "$ROOT/tests/fuzz/fuzz_tile_ir.c" -L"$LIB" -lzetile -Wl,-rpath,"$LIB" || exit 1
  if ZT_FUZZ_TARGET=cpu "$OUT/fuzz_tile_ir" -runs=0 >"$OUT/fuzz_tile_ir.load.log" 2>&1; then break; fi
  if [ $try = 6 ]; then echo "fuzz tile_ir: does not load (see $OUT/fuzz_tile_ir.load.log)"; exit 1; fi
  sleep 10
done

status=0
# tile_ir runs once per target family: the CPU lowering, Xe (pvc) and the
# Xe compat path for DG2, each from the same seeds.
for name in artifact cache_entry builder elf_object tile_ir tile_ir_pvc tile_ir_dg2; do
  if [ -n "${ZT_FUZZ_ONLY:-}" ] && [ "$ZT_FUZZ_ONLY" != "$name" ]; then continue; fi
  work="$(mktemp -d)"
  bin="$name"; target=cpu
  case "$name" in tile_ir_*) bin=tile_ir; target="${name#tile_ir_}";; esac
  seeds="$ROOT/tests/fuzz/corpus/$bin"
  log="$OUT/fuzz_$name.log"
  # tile_ir: MLIR leaks nothing per input but keeps global caches, so leak
  # checks are off there; every harness gets a per-input time limit.
  detect_leaks=1; [ "$bin" = tile_ir ] && detect_leaks=0
  ASAN_OPTIONS="detect_leaks=$detect_leaks:allocator_may_return_null=1" \
  ZETILE_CACHE_DIR="$work/cache" ZT_FUZZ_TARGET="$target" \
    "$OUT/fuzz_$bin" -max_total_time="$SECONDS_EACH" -timeout=20 -rss_limit_mb=4096 \
      -max_len=65536 -artifact_prefix="$OUT/crash_${name}_" -print_final_stats=1 \
      "$work" $( [ -d "$seeds" ] && echo "$seeds" ) >"$log" 2>&1
  rc=$?
  execs=$(grep -m1 "stat::number_of_executed_units" "$log" | awk '{print $2}')
  new=$(ls "$work" 2>/dev/null | grep -vc '^cache$')
  crashes=$(ls "$OUT" | grep -c "^crash_${name}_" || true)
  if [ $rc -eq 0 ]; then verdict="0 crashes"; else verdict="FAILED rc=$rc (see $log)"; status=1; fi
  echo "fuzz $name: ${execs:-0} executions in ${SECONDS_EACH}s, $new new inputs, $verdict, crash files so far: $crashes"
  rm -rf "$work"
done
exit $status
