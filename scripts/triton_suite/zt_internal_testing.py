"""The helpers Triton's language tests import from `triton._internal_testing`,
written for zetile's CPU target (Triton's own module reaches into its
backends and drivers). Only what the tests import: dtype name lists, the
is_<hardware>() predicates (all False: the CPU target is none of them),
random inputs (the same draws as Triton's helper, so both runs see
the same data), and host <-> kernel array conversions."""
import os
from contextlib import contextmanager

import numpy as np
import torch

import triton
import triton.language as tl

int_dtypes = ["int8", "int16", "int32", "int64"]
uint_dtypes = ["uint8", "uint16", "uint32", "uint64"]
integral_dtypes = int_dtypes + uint_dtypes
float_dtypes = ["float16", "float32", "float64"]
float_dtypes_with_bfloat16 = float_dtypes + ["bfloat16"]
dtypes = integral_dtypes + float_dtypes
dtypes_with_bfloat16 = dtypes + ["bfloat16"]
torch_float8_dtypes = ["float8_e4m3fn", "float8_e5m2"]
torch_dtypes = ["bool"] + int_dtypes + ["uint8"] + float_dtypes + ["bfloat16"]
tma_dtypes = sorted(set(dtypes_with_bfloat16) - {"int64", "uint64", "float64"})


def is_interpreter():
    return os.environ.get("TRITON_INTERPRET", "0") == "1"


def is_compile_warmup():
    return False


def _false(*args, **kwargs):
    return False


# Hardware predicates: the CPU target is none of these devices.
(is_cuda, is_hip, is_xpu, is_hopper, is_hopper_or_newer, is_ampere_or_newer, is_blackwell,
 is_blackwell_ultra, is_rubin, is_sm12x, is_hip_cdna, is_hip_cdna2, is_hip_cdna3, is_hip_cdna4,
 is_hip_rdna, is_hip_rdna3, is_hip_rdna4m, is_hip_rdna4, is_hip_gfx1250,
 is_hip_cdna3_or_newer) = (_false,) * 20


def get_current_target():
    return None


def supports_tma(byval_only=False):
    return False


def supports_ws():
    return False


def numpy_random(shape, dtype_str, rs=None, low=None, high=None):
    """Random values of dtype_str; integers are never zero (the tests divide
    by them)."""
    if isinstance(shape, int):
        shape = (shape, )
    if rs is None:
        rs = np.random.RandomState(seed=17)
    if dtype_str in integral_dtypes:
        info = np.iinfo(getattr(np, dtype_str))
        low = info.min if low is None else max(low, info.min)
        high = info.max if high is None else min(high, info.max)
        x = rs.randint(low, high, shape, dtype=getattr(np, dtype_str))
        x[x == 0] = 1
        return x
    if dtype_str and "float8" in dtype_str:
        x = rs.randint(20, 40, shape, dtype=np.int8)
        return x
    if dtype_str in float_dtypes:
        return rs.normal(0, 1, shape).astype(dtype_str)
    if dtype_str == "bfloat16":
        # float32 values that bfloat16 holds exactly (the low 16 bits cleared)
        bits = rs.normal(0, 1, shape).astype(np.float32).view(np.uint32)
        return (bits & np.uint32(0xFFFF0000)).view(np.float32)
    if dtype_str in ("bool", "int1", "bool_"):
        return rs.normal(0, 1, shape) > 0.0
    raise RuntimeError(f"unknown dtype {dtype_str}")


def to_triton(x: np.ndarray, device, dst_type=None):
    """A torch tensor holding x; unsigned and fp8 data are reinterpreted
    (torch has no arithmetic on them), as Triton's helper does."""
    t = x.dtype.name
    if t in uint_dtypes:
        signed = x.astype(getattr(np, t[1:]))
        return triton.reinterpret(torch.tensor(signed, device=device), getattr(tl, t))
    if dst_type and "float8" in dst_type:
        return triton.reinterpret(torch.tensor(x, device=device), getattr(tl, dst_type))
    if t == "float32" and dst_type == "bfloat16":
        return torch.tensor(x, device=device).bfloat16()
    return torch.tensor(x, device=device)


def str_to_triton_dtype(x):
    return tl.str_to_ty(x)


def torch_dtype_name(dtype):
    if isinstance(dtype, tl.dtype):
        return dtype.name
    if isinstance(dtype, torch.dtype):
        return str(dtype).split(".", 1)[1]
    raise TypeError(f"not a triton or torch dtype: {type(dtype)}")


def to_numpy(x):
    if isinstance(x, triton.TensorWrapper):
        return x.base.cpu().numpy().astype(getattr(np, torch_dtype_name(x.dtype)))
    if isinstance(x, torch.Tensor):
        if x.dtype is torch.bfloat16:
            return x.cpu().float().numpy()
        return x.cpu().numpy()
    raise ValueError(f"not a triton-compatible tensor: {type(x)}")


def default_alloc_fn(size, align, stream):
    return torch.empty(size, dtype=torch.int8)


def unwrap_tensor(t):
    return t.base if isinstance(t, triton.TensorWrapper) else t


@contextmanager
def use_process_pool(name):
    yield None


def _fresh_knobs_impl(skipped_attr=None):
    """conftest's fresh_knobs: every knob set (but `skipped_attr`) replaced by
    a reset copy reading no environment variable of its own, restored after."""
    import pytest
    from triton import knobs

    skipped_attr = skipped_attr or set()
    monkeypatch = pytest.MonkeyPatch()
    knobs_map = {name: ks for name, ks in vars(knobs).items()
                 if isinstance(ks, knobs.base_knobs) and name not in skipped_attr}
    env_to_unset = []
    prev_propagate = knobs.propagate_env

    def fresh():
        for name, ks in knobs_map.items():
            setattr(knobs, name, ks.copy().reset())
            for d in ks.knob_descriptors.values():
                if d.key in os.environ:
                    monkeypatch.delenv(d.key, raising=False)
                else:
                    env_to_unset.append(d.key)
        knobs.propagate_env = True
        return knobs

    def reset():
        for name, ks in knobs_map.items():
            setattr(knobs, name, ks)
        monkeypatch.undo()
        for k in env_to_unset:
            os.environ.pop(k, None)
        knobs.propagate_env = prev_propagate

    return fresh, reset
