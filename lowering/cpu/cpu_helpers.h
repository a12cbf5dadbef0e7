// Functions that JIT'ed CPU kernels call: tile.print and failed tile.assert.
// They are compiled into libzetile_compiler (registered with each ORC and
// ExecutionEngine load, jit/compiler_cpu_*.c) and into libzetile (its own
// object loader, runtime/cpu/elf_load.c, resolves kernels' imports with
// them); the lowering (cpu_debug.c) declares them under these names.
#ifndef ZETILE_LOWERING_CPU_CPU_HELPERS_H_
#define ZETILE_LOWERING_CPU_CPU_HELPERS_H_

#include <stddef.h>
#include <stdint.h>

#include "compiler_api.h"

#define ZT_CPU_PRINT_SYMBOL "zt_cpu_print"
#define ZT_CPU_ASSERT_SYMBOL "zt_cpu_assert_fail"
#define ZT_CPU_BOUNDS_SYMBOL "zt_cpu_check_access"

/// One element of a tile.print: `pid (x, y, z) idx (i, j)<prefix>[(operand
/// k) ]<value>` on one line of stdout (see cpu_helpers.c for why stdout).
/// idx/dims: the first `rank` are used; operand < 0 when the op has one
/// operand; kind is a zt_scalar_kind_t (-1: no value, the prefix alone);
/// integers come in ival
/// (sign-extended), floats in fval.
void zt_cpu_print(const char* prefix, int32_t pidx, int32_t pidy, int32_t pidz,
                  int32_t rank, int32_t i0, int32_t i1, int32_t i2, int32_t i3,
                  int32_t d0, int32_t d1, int32_t d2, int32_t d3, int32_t operand,
                  int32_t kind, int32_t hex, int64_t ival, double fval);

/// A failed tile.assert at element (i0..) of program (x, y, z): records it in
/// ctx->error and longjmps to ctx->exit; returns only when ctx is NULL.
void zt_cpu_assert_fail(zt_cpu_program_ctx_t* ctx, const char* message,
                        const char* where, int32_t pidx, int32_t pidy, int32_t pidz,
                        int32_t rank, int32_t i0, int32_t i1, int32_t i2, int32_t i3);

/// Bounds mode: an access of `bytes` bytes at `addr` (a load when write is
/// 0, a store 1, an atomic 2) by the op at `where` in program (x, y, z).
/// Returns if it lies inside one of ctx->bounds; else records the failure
/// (kernel argument nearest to the address, offset from its start) and
/// longjmps to ctx->exit. Returns at once without a context or bounds.
void zt_cpu_check_access(zt_cpu_program_ctx_t* ctx, uint64_t addr, int32_t bytes,
                         int32_t write, const char* where, int32_t pidx, int32_t pidy,
                         int32_t pidz);

/// The symbols CPU kernels call into the runtime (f16/bf16 conversions,
/// print, assert, bounds checks), i in [0, count): the name, and the
/// function in *out_fn (cpu_runtime_symbols.c).
size_t zt_cpu_runtime_symbol_count(void);
const char* zt_cpu_runtime_symbol(size_t i, void** out_fn);

#endif  // ZETILE_LOWERING_CPU_CPU_HELPERS_H_
