// Which row of the Intel GPU target table (lowering/xe/xe_target.c) a device
// gets, from what its driver reports, and why. Shared by the Level Zero and
// OpenCL backends so both pick the same row for the same GPU.
#ifndef ZETILE_RUNTIME_XE_DETECT_H_
#define ZETILE_RUNTIME_XE_DETECT_H_

#include <stddef.h>
#include <stdint.h>

/// What a driver reported about an Intel GPU; anything may be missing.
typedef struct zt_xe_props_s {
  uint32_t device_id;   ///< PCI device id; 0 if not reported (NEO's simulation)
  /// Intel's IP version (major << 22 | minor << 14 | revision, as
  /// CL_DEVICE_IP_VERSION_INTEL and ocloc's "12.0.0"); 0 if not reported.
  uint32_t ip_version;
  const char* name;     ///< device name; NULL if not reported
  int subgroup_sizes[8];  ///< offered subgroup sizes; 0-terminated (none: unknown)
  int dp4a;             ///< 1 / 0, or -1 if not reported
  int xmx;              ///< DPAS (matrix engines): 1 / 0, or -1 if not reported
  /// NEO's simulated product (its ProductFamilyOverride, "tgllp", "dg2",
  /// "adlp", ...) when the device is NEO's AUB/TBX simulation; NULL else.
  const char* simulated;
} zt_xe_props_t;

/// The target row's name for a device ("tgllp", "dg2", ...; never NULL),
/// with the reason in why (a sentence, e.g. "PCI id 0x9a49: Tiger Lake").
/// Order: the simulated product, PCI id, IP version, device name, then the
/// closest row by the reported properties (callers apply $ZETILE_TARGET
/// before this). An unknown GPU never gets "pvc": one that offers SIMD8 gets
/// a SIMD8 row (dg2 with XMX, tgllp with DP4A, skl else), one that offers
/// only SIMD16/32 gets bmg (the client Xe2 row).
const char* zt_xe_detect(const zt_xe_props_t* props, char* why, size_t why_cap);

#endif  // ZETILE_RUNTIME_XE_DETECT_H_
