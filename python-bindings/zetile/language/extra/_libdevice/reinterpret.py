"""Reinterpretations: a float's bits as an integer and back, and a double
split into or built from its 32-bit halves (CUDA's __float_as_int & co.)."""
from ....jit import jit
from ... import core as tl


@jit
def float_as_int(x):
    return x.to(tl.int32, bitcast=True)


@jit
def float_as_uint(x):
    return x.to(tl.int32, bitcast=True)  # int32 in Triton's table


@jit
def int_as_float(x):
    return x.to(tl.float32, bitcast=True)


uint_as_float = int_as_float


@jit
def double_as_longlong(x):
    return x.to(tl.int64, bitcast=True)


@jit
def longlong_as_double(x):
    return x.to(tl.float64, bitcast=True)


@jit
def hiloint2double(hi, lo):
    b = (hi.to(tl.int64) << 32) | lo.to(tl.uint32, bitcast=True).to(tl.int64)
    return b.to(tl.float64, bitcast=True)


@jit
def double2hiint(x):
    return (x.to(tl.int64, bitcast=True) >> 32).to(tl.int32)


@jit
def double2loint(x):
    return x.to(tl.int64, bitcast=True).to(tl.int32)
