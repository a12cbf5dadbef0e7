"""`triton.runtime.driver.active`: the few questions ported programs ask the
active driver (which target, which device, how much shared memory), answered
for zetile's current device."""
from collections import namedtuple

from . import runtime

GPUTarget = namedtuple("GPUTarget", ["backend", "arch", "warp_size"])


class _Utils:
    def get_device_properties(self, device=None):
        info = runtime.info(runtime.get_device())
        slm = info.get("slm_size") or info.get("max_shared_mem") or 64 * 1024
        if info.get("backend") == "cpu":
            # The CPU target has no separate shared memory: a tile lives on the
            # program's stack, or on the heap past 256 KB per kernel
            # (docs/ARCHITECTURE.md), so host memory is the bound. Programs use
            # this to drop configs that would not fit (Triton's own tests skip
            # by it); 64 KB would drop configs the CPU target runs.
            slm = min(info.get("memory_bytes") or 0, 2**31 - 1) or slm
        return {"max_shared_mem": slm, "multiprocessor_count": info.get("compute_units", 1),
                "max_num_regs": 0, "warpSize": info.get("subgroup_size", 16),
                # Intel's driver answers this too (its benchmark kernels size
                # rows per program by it): 1024 work-items is the largest
                # workgroup of pvc/bmg/dg2 and zetile's 64 warps x 16 lanes.
                "max_work_group_size": 1024,
                "name": info.get("name", "")}


class _ActiveDriver:
    """The driver of zetile's current device (set_device / $ZETILE_DEVICE)."""

    utils = _Utils()

    def get_current_target(self):
        info = runtime.info(runtime.get_device())
        backend = "cpu" if info.get("backend") == "cpu" else "xpu"
        return GPUTarget(backend, info.get("target", "cpu"), info.get("subgroup_size", 16) or 16)

    def get_current_device(self):
        return 0

    def set_current_device(self, device):
        pass

    def get_current_stream(self, device=None):
        return 0

    def get_active_torch_device(self):
        import torch
        info = runtime.info(runtime.get_device())
        return torch.device("cpu" if info.get("backend") == "cpu" else "xpu")

    def is_active(self):
        return True


active = _ActiveDriver()
