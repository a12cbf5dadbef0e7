// zetile's emulation library of Intel GPU-only OpenCL builtins: one
// translation unit, compiled to SPIR-V at build time (clang-22, SPIR-V
// backend) and linked into kernels by the OpenCL backend when the device
// lacks the builtins (Intel's OpenCL CPU runtime). See block2d.cl and
// matrix_mad.cl for the data layouts, taken from the published specs.
// E5 checks the 2D block builtins' operand rules (see block2d.cl).
#define ZT_EMU_CHECK_RULES 1
#include "block2d.cl"
#include "matrix_mad.cl"
#include "subgroup_block.cl"
