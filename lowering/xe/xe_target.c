// The target table (see xe_target.h). Sources of the figures, per column:
// subgroup size and DPAS shapes: cl_intel_subgroup_matrix_multiply_accumulate
// (SIMD16 on Xe-HPC/Xe2/Xe3, SIMD8 on Xe-HPG) and upstream's XeGPU uArch
// (pvc/bmg: exec size 16, depth 8, repeat 8); 2D block IO:
// cl_intel_subgroup_2d_block_io (Xe-HPC and later, not Xe-HPG); GRF: 128
// registers of 64 bytes by default, 256 in IGC's large-register-file mode
// (Xe-HPC, Xe2, Xe3; Xe-HPG has 128 of 32 bytes); SLM per Xe core: upstream's
// uArch (pvc 512 KB, bmg 256 KB), 64 KB on Xe-HPG; per workgroup: 128 KB on
// PVC, 64 KB on Xe-HPG, the others left to the driver.
#include "xe/xe_target.h"

#include <stdlib.h>
#include <string.h>

#define KB(x) ((int64_t)(x) * 1024)

static const xe_target_t g_targets[] = {
    {
        .name = "pvc", .arch = "Xe-HPC (Data Center GPU Max)", .lowering = XE_LOWERING_XEVM,
        .xevm_chip = "pvc", .ocloc_device = "pvc", .subgroup_size = 16,
        .subgroup_sizes = {16, 32}, .dp4a = true,
        .dpas_exec_size = 16, .dpas_systolic_depth = 8, .dpas_repeat_count = 8,
        .dpas_channel_bits = 32, .dpas_tf32 = true, .block_io_2d = true,
        .grf_default = 128, .grf_large = 256, .grf_bytes = 64,
        .grf_large_option = "-ze-opt-large-register-file",
        .slm_per_core = KB(512), .slm_per_workgroup = KB(128),
    },
    {
        .name = "bmg", .arch = "Xe2-HPG (Arc B-series)", .lowering = XE_LOWERING_XEVM,
        .xevm_chip = "bmg", .ocloc_device = "bmg", .subgroup_size = 16,
        .subgroup_sizes = {16, 32}, .dp4a = true,
        .dpas_exec_size = 16, .dpas_systolic_depth = 8, .dpas_repeat_count = 8,
        .dpas_channel_bits = 32, .dpas_tf32 = true, .block_io_2d = true,
        .grf_default = 128, .grf_large = 256, .grf_bytes = 64,
        .grf_large_option = "-ze-opt-large-register-file",
        .slm_per_core = KB(256), .slm_per_workgroup = 0,
    },
    {
        .name = "dg2", .arch = "Xe-HPG (Arc A-series, acm-g10)", .lowering = XE_LOWERING_SIMD8,
        .xevm_chip = NULL, .ocloc_device = "acm-g10", .subgroup_size = 8,
        .subgroup_sizes = {8, 16, 32}, .dp4a = true,
        .dpas_exec_size = 8, .dpas_systolic_depth = 8, .dpas_repeat_count = 8,
        .dpas_channel_bits = 32, .dpas_tf32 = false, .block_io_2d = false,
        .grf_default = 128, .grf_large = 0, .grf_bytes = 32, .grf_large_option = "",
        .slm_per_core = KB(64), .slm_per_workgroup = KB(64),
        .no_fp64 = true,
    },
    // Lunar Lake's Xe2-LPG has Xe2-HPG's SIMD16 XMX, 2D block IO and register
    // file, and Panther Lake's Xe3-LPG keeps the same DPAS shapes and block
    // IO extension (Intel's Triton knows both, as lnl and ptl_h/ptl_u, and
    // takes DPAS and 2D block IO from the device's reported extensions). XeVM
    // 22.1 has no hardware table for either and Debian's 2022 IGC knows
    // neither device, so both rows emit bmg's SPIR-V, byte for byte (what
    // test_igpu_targets.py checks): their evidence is bmg's (E1), and the
    // driver's IGC compiles it for the actual device.
    {
        .name = "lnl", .arch = "Xe2-LPG (Lunar Lake iGPU)", .lowering = XE_LOWERING_XEVM,
        .xevm_chip = "bmg", .ocloc_device = "lnl-m", .subgroup_size = 16,
        .subgroup_sizes = {16, 32}, .dp4a = true,
        .dpas_exec_size = 16, .dpas_systolic_depth = 8, .dpas_repeat_count = 8,
        .dpas_channel_bits = 32, .dpas_tf32 = true, .block_io_2d = true,
        .grf_default = 128, .grf_large = 256, .grf_bytes = 64,
        .grf_large_option = "-ze-opt-large-register-file",
        .slm_per_core = 0, .slm_per_workgroup = 0,
    },
    {
        .name = "ptl", .arch = "Xe3-LPG (Panther Lake iGPU)", .lowering = XE_LOWERING_XEVM,
        .xevm_chip = "bmg", .ocloc_device = "ptl-h", .subgroup_size = 16,
        .subgroup_sizes = {16, 32}, .dp4a = true,
        .dpas_exec_size = 16, .dpas_systolic_depth = 8, .dpas_repeat_count = 8,
        .dpas_channel_bits = 32, .dpas_tf32 = true, .block_io_2d = true,
        .grf_default = 128, .grf_large = 256, .grf_bytes = 64,
        .grf_large_option = "-ze-opt-large-register-file",
        .slm_per_core = 0, .slm_per_workgroup = 0,
    },
    // Integrated GPUs and DG1 (issue 21). None of them has XMX except
    // arl-h; their dots are FMAs in the SIMD8 lowering (dg2_dot_fma.c), int8
    // dots DP4A where the row has it. Subgroups of 8, 16 and 32 on Gen9 to
    // Xe-LPG (the SIMD8 lowering takes 8). Registers: 128 of 32 bytes (no
    // large-GRF mode). SLM: 64 KB per workgroup, what NEO reports as
    // CL_DEVICE_LOCAL_MEM_SIZE on these parts; per core left to the driver.
    // Published figures, not measured here (no Intel GPU on this machine).
    {
        .name = "skl", .arch = "Gen9 (Skylake to Comet Lake: HD/UHD Graphics 5xx/6xx)",
        .lowering = XE_LOWERING_SIMD8, .xevm_chip = NULL, .ocloc_device = "skl",
        .subgroup_size = 8, .subgroup_sizes = {8, 16, 32}, .dp4a = false,
        .block_io_2d = false, .grf_default = 128, .grf_bytes = 32, .grf_large_option = "",
        .slm_per_workgroup = KB(64),
    },
    {
        .name = "icllp", .arch = "Gen11 (Ice Lake: Iris Plus, UHD Graphics G1)",
        .lowering = XE_LOWERING_SIMD8, .xevm_chip = NULL, .ocloc_device = "icllp",
        .subgroup_size = 8, .subgroup_sizes = {8, 16, 32}, .dp4a = false,
        .block_io_2d = false, .grf_default = 128, .grf_bytes = 32, .grf_large_option = "",
        .slm_per_workgroup = KB(64),
        .no_fp64 = true,
    },
    {
        .name = "tgllp", .arch = "Gen12LP / Xe-LP (Tiger Lake: Iris Xe, UHD Graphics)",
        .lowering = XE_LOWERING_SIMD8, .xevm_chip = NULL, .ocloc_device = "tgllp",
        .subgroup_size = 8, .subgroup_sizes = {8, 16, 32}, .dp4a = true,
        .block_io_2d = false, .grf_default = 128, .grf_bytes = 32, .grf_large_option = "",
        .slm_per_workgroup = KB(64),
        .no_fp64 = true,
    },
    {
        .name = "rkl", .arch = "Gen12LP / Xe-LP (Rocket Lake: UHD Graphics 730/750)",
        .lowering = XE_LOWERING_SIMD8, .xevm_chip = NULL, .ocloc_device = "rkl",
        .subgroup_size = 8, .subgroup_sizes = {8, 16, 32}, .dp4a = true,
        .block_io_2d = false, .grf_default = 128, .grf_bytes = 32, .grf_large_option = "",
        .slm_per_workgroup = KB(64),
        .no_fp64 = true,
    },
    {
        .name = "adl-s", .arch = "Gen12LP / Xe-LP (Alder/Raptor Lake-S: UHD Graphics 7xx)",
        .lowering = XE_LOWERING_SIMD8, .xevm_chip = NULL, .ocloc_device = "adl-s",
        .subgroup_size = 8, .subgroup_sizes = {8, 16, 32}, .dp4a = true,
        .block_io_2d = false, .grf_default = 128, .grf_bytes = 32, .grf_large_option = "",
        .slm_per_workgroup = KB(64),
        .no_fp64 = true,
    },
    {
        .name = "adl-p", .arch = "Gen12LP / Xe-LP (Alder/Raptor Lake-P/H/U: Iris Xe)",
        .lowering = XE_LOWERING_SIMD8, .xevm_chip = NULL, .ocloc_device = "adl-p",
        .subgroup_size = 8, .subgroup_sizes = {8, 16, 32}, .dp4a = true,
        .block_io_2d = false, .grf_default = 128, .grf_bytes = 32, .grf_large_option = "",
        .slm_per_workgroup = KB(64),
        .no_fp64 = true,
    },
    {
        .name = "dg1", .arch = "Gen12LP / Xe-LP discrete (DG1: Iris Xe MAX)",
        .lowering = XE_LOWERING_SIMD8, .xevm_chip = NULL, .ocloc_device = "dg1",
        .subgroup_size = 8, .subgroup_sizes = {8, 16, 32}, .dp4a = true,
        .block_io_2d = false, .grf_default = 128, .grf_bytes = 32, .grf_large_option = "",
        .slm_per_workgroup = KB(64),
        .no_fp64 = true,
    },
    // Xe-LPG derives from Xe-HPG without its XMX. Debian's ocloc (22.43)
    // knows neither mtl nor arl-h: their SPIR-V is the tgllp / dg2 rows'
    // (same subgroup size and features), which is what was checked.
    {
        .name = "mtl", .arch = "Xe-LPG (Meteor Lake: Core Ultra Series 1 Arc/Intel Graphics)",
        .lowering = XE_LOWERING_SIMD8, .xevm_chip = NULL, .ocloc_device = "mtl-h",
        .subgroup_size = 8, .subgroup_sizes = {8, 16, 32}, .dp4a = true,
        .block_io_2d = false, .grf_default = 128, .grf_bytes = 32, .grf_large_option = "",
        .slm_per_workgroup = KB(64),
    },
    // Xe-LPG+ adds Xe-HPG's SIMD8 XMX back (Intel's Arc 130T/140T), so it
    // takes dg2's DPAS path.
    {
        .name = "arl-h", .arch = "Xe-LPG+ (Arrow Lake-H: Arc 130T/140T, with XMX)",
        .lowering = XE_LOWERING_SIMD8, .xevm_chip = NULL, .ocloc_device = "arl-h",
        .subgroup_size = 8, .subgroup_sizes = {8, 16, 32}, .dp4a = true,
        .dpas_exec_size = 8, .dpas_systolic_depth = 8, .dpas_repeat_count = 8,
        .dpas_channel_bits = 32, .dpas_tf32 = false, .block_io_2d = false,
        .grf_default = 128, .grf_bytes = 32, .grf_large_option = "",
        .slm_per_workgroup = KB(64),
    },
};

int xe_target_count(void) { return (int)(sizeof g_targets / sizeof g_targets[0]); }

const xe_target_t* xe_target_at(int i) {
  return i >= 0 && i < xe_target_count() ? &g_targets[i] : NULL;
}

const xe_target_t* xe_target_find(const char* name) {
  if (!name) return NULL;
  for (int i = 0; i < xe_target_count(); ++i)
    if (strcmp(g_targets[i].name, name) == 0) return &g_targets[i];
  return NULL;
}

bool xe_target_has_xmx(const xe_target_t* t) { return t->dpas_exec_size > 0; }

int xe_target_ops_per_channel(const xe_target_t* t, int bits) {
  return bits > 0 && bits <= t->dpas_channel_bits ? t->dpas_channel_bits / bits : 0;
}

int xe_target_dpas_k(const xe_target_t* t, int bits) {
  return t->dpas_systolic_depth * xe_target_ops_per_channel(t, bits);
}

xe_simd8_route_t xe_simd8_route(void) {
  const char* v = getenv("ZETILE_DG2_LOWERING");
  if (!v || !*v) return XE_SIMD8_ROUTE_FOLDER;
  if (strcmp(v, "shared") == 0) return XE_SIMD8_ROUTE_SHARED;
  if (strcmp(v, "shared8") == 0) return XE_SIMD8_ROUTE_SHARED8;
  if (strcmp(v, "shared8all") == 0) return XE_SIMD8_ROUTE_SHARED8_ALL;
  return XE_SIMD8_ROUTE_INVALID;
}

xe_lowering_t xe_target_lowering_now(const xe_target_t* t) {
  if (!t) return XE_LOWERING_NONE;
  if (t->lowering != XE_LOWERING_SIMD8) return t->lowering;
  xe_simd8_route_t r = xe_simd8_route();
  return r == XE_SIMD8_ROUTE_FOLDER || r == XE_SIMD8_ROUTE_INVALID ? XE_LOWERING_SIMD8
                                                                   : XE_LOWERING_XEVM;
}
