// Internals of the Level Zero backend shared by its files.
#ifndef ZETILE_RUNTIME_LEVEL_ZERO_LEVEL_ZERO_H_
#define ZETILE_RUNTIME_LEVEL_ZERO_LEVEL_ZERO_H_

#include <stdbool.h>

#include "backend.h"
#include "level_zero/ze_status.h"

#define ZT_ZE_MAX_DEVICES 64

/// What was found at the (once per process) initialization.
typedef struct zt_ze_state_s {
  zt_ze_syms_t syms;
  bool available;        // loader loaded and zeInit succeeded
  char why_not[256];     // when not available: the reason (for diagnostics)
  int32_t num_devices;
  ze_driver_handle_t drivers[ZT_ZE_MAX_DEVICES];
  ze_device_handle_t devices[ZT_ZE_MAX_DEVICES];
  uint32_t device_ids[ZT_ZE_MAX_DEVICES];
  zt_device_info_t infos[ZT_ZE_MAX_DEVICES];
} zt_ze_state_t;

/// Loads the loader and initializes the driver on first call, only if an
/// Intel GPU (or the NEO AUB/TBX simulation, or ZETILE_LEVEL_ZERO=1) is
/// there: a plain zeInit segfaults with NEO installed and no GPU. Never
/// fails; read `available`.
const zt_ze_state_t* zt_ze_state(void);

// Device ids, names and properties -> target rows: runtime/xe_detect.h.

#endif  // ZETILE_RUNTIME_LEVEL_ZERO_LEVEL_ZERO_H_
