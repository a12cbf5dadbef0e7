// In-process SPIR-V validation (SPIRV-Tools' C API, the library behind
// spirv-val): every module the Xe and DG2 lowerings emit is validated before
// it becomes an artifact.
//
// Why: LLVM 22's SPIR-V backend, run inside a long-lived process, now and
// then emits a module with a result id defined twice from the very same
// LLVM input (the same gpu.module gives 1 bad module in ~10 compiles in one
// Python process; never in 20 fresh mlir-opt-22 runs). Intel's compiler
// then aborts (ocloc: SIGABRT) or, worse, a driver could accept it. A bad
// module is caught here and emitted again.
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lowering.h"

#include <stdatomic.h>

static atomic_int g_emissions;
// Set once an emission came out invalid after others: later ones skip the
// in-process attempt (stale state makes more and more modules invalid).
static atomic_bool g_stale;

int zt_spirv_emission_count(void) { return atomic_fetch_add(&g_emissions, 1); }
bool zt_spirv_backend_stale(void) { return atomic_load(&g_stale); }
void zt_spirv_backend_set_stale(void) { atomic_store(&g_stale, true); }

#if defined(ZT_HAVE_SPIRV_TOOLS)
#include <spirv-tools/libspirv.h>

bool zt_spirv_validator_available(void) { return true; }

zt_status_t zt_spirv_validate(const void* data, size_t size) {
  if (size % 4 != 0)
    return zt_make_status(ZT_STATUS_INTERNAL, "SPIR-V of %zu bytes (not whole words)", size);
  spv_context ctx = spvContextCreate(SPV_ENV_UNIVERSAL_1_6);  // spirv-val's default
  if (!ctx) return zt_make_status(ZT_STATUS_OUT_OF_MEMORY, "SPIR-V validator context");
  spv_const_binary_t bin = {(const uint32_t*)data, size / 4};
  spv_diagnostic diag = NULL;
  // Friendly names (%float_1 for %42 in diagnostics) cost a pass over the
  // module that builds a name for every id: ~1/4 of validation, ~1.5% of a
  // pvc softmax compile (callgrind; issue 22). Valid or not does not depend
  // on them, so validate without, and only when the module is invalid
  // validate again with them for a readable message.
  spv_validator_options opts = spvValidatorOptionsCreate();
  spv_result_t r = SPV_ERROR_OUT_OF_MEMORY;
  if (opts) {
    spvValidatorOptionsSetFriendlyNames(opts, false);
    r = spvValidateWithOptions(ctx, opts, &bin, &diag);
    spvValidatorOptionsDestroy(opts);
  }
  if (r != SPV_SUCCESS) {
    spvDiagnosticDestroy(diag);
    diag = NULL;
    r = spvValidate(ctx, &bin, &diag);
  }
  zt_status_t s = NULL;
  if (r != SPV_SUCCESS)
    s = zt_make_status(ZT_STATUS_INTERNAL, "invalid SPIR-V (SPIRV-Tools): %s",
                       diag && diag->error ? diag->error : "no diagnostic");
  spvDiagnosticDestroy(diag);
  spvContextDestroy(ctx);
  return s;
}

// Renumbering: see zt_spirv_set_artifact below.
typedef struct {
  uint32_t* w;      // the module's words (a copy), rewritten in place
  size_t n, at;     // words; where the instruction being parsed starts
  uint32_t* map;    // old id -> new id (0: not seen yet), bound entries
  uint32_t bound, next;
  bool bad;
} renumber_t;

static bool is_id_operand(spv_operand_type_t t) {
  switch (t) {
    case SPV_OPERAND_TYPE_ID:
    case SPV_OPERAND_TYPE_TYPE_ID:
    case SPV_OPERAND_TYPE_RESULT_ID:
    case SPV_OPERAND_TYPE_MEMORY_SEMANTICS_ID:
    case SPV_OPERAND_TYPE_SCOPE_ID:
    case SPV_OPERAND_TYPE_OPTIONAL_ID:
    case SPV_OPERAND_TYPE_VARIABLE_ID:
      return true;
    default:
      return false;
  }
}

static spv_result_t renumber_inst(void* user, const spv_parsed_instruction_t* inst) {
  renumber_t* r = user;
  if (r->at + inst->num_words > r->n) {
    r->bad = true;
    return SPV_ERROR_INVALID_BINARY;
  }
  uint32_t* w = r->w + r->at;
  for (uint16_t i = 0; i < inst->num_operands; ++i) {
    const spv_parsed_operand_t* op = &inst->operands[i];
    if (!is_id_operand(op->type)) continue;
    if (op->num_words != 1 || op->offset >= inst->num_words || w[op->offset] >= r->bound) {
      r->bad = true;
      return SPV_ERROR_INVALID_BINARY;
    }
    uint32_t* m = &r->map[w[op->offset]];
    if (*m == 0) *m = r->next++;
    w[op->offset] = *m;
  }
  r->at += inst->num_words;
  return SPV_SUCCESS;
}

// Ids numbered 1, 2, ... in the order of their first appearance. Why:
// LLVM 22's SPIR-V backend keeps module analysis state in a static member
// (see above and xe_lower.c), so in a process that has emitted before, a
// module may come out valid but numbered differently (seen: the kernel's
// entry block label %302 instead of %200, every other id the same): the
// same kernel gave different bytes depending on what the process compiled
// earlier (CI, test_compile_parallel). Renumbered, the bytes depend on the
// module alone. Cost: one parse of the module, cheaper than its validation.
static bool renumber_ids(uint32_t* w, size_t n) {
  if (n < 5 || w[0] != 0x07230203u || w[3] == 0 || w[3] > (1u << 24)) return false;
  renumber_t r = {w, n, 5, calloc(w[3], sizeof(uint32_t)), w[3], 1, false};
  if (!r.map) return false;
  spv_context ctx = spvContextCreate(SPV_ENV_UNIVERSAL_1_6);
  spv_diagnostic diag = NULL;
  spv_result_t res = ctx ? spvBinaryParse(ctx, &r, w, n, NULL, renumber_inst, &diag)
                         : SPV_ERROR_OUT_OF_MEMORY;
  spvDiagnosticDestroy(diag);
  if (ctx) spvContextDestroy(ctx);
  free(r.map);
  if (res != SPV_SUCCESS || r.bad || r.at != n) return false;
  w[3] = r.next;  // the new bound
  return true;
}

zt_status_t zt_spirv_set_artifact(zt_artifact_t* artifact, const void* data, size_t size) {
  if (size % 4 != 0 || size < 20) return zt_artifact_set(artifact, "spirv", data, size);
  uint32_t* w = malloc(size);
  if (!w) return zt_make_status(ZT_STATUS_OUT_OF_MEMORY, "SPIR-V copy (%zu bytes)", size);
  memcpy(w, data, size);
  bool renumbered = renumber_ids(w, size / 4);
  // A module the parser refuses is left as it came (validation reports it).
  zt_status_t s = zt_artifact_set(artifact, "spirv", renumbered ? w : data, size);
  free(w);
  return s;
}
#else
bool zt_spirv_validator_available(void) { return false; }

zt_status_t zt_spirv_set_artifact(zt_artifact_t* artifact, const void* data, size_t size) {
  return zt_artifact_set(artifact, "spirv", data, size);
}

zt_status_t zt_spirv_validate(const void* data, size_t size) {
  (void)data;
  (void)size;
  return NULL;
}
#endif
