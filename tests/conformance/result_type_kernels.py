"""Kernels whose only output is the static type of one expression
(`tl.static_print(r.dtype)`), written once in Triton's language. The result
type suite (test_result_types.py) runs each under Triton's interpreter and
through zetile's front end, with only the two import lines changed, and
compares what they print: the result type of every op for every operand
dtype. Value conformance (test_conformance.py) stores results into wide
outputs, where a narrower or wider result type can hide: a fp64 dot that
accumulated in fp32 passed Triton's own tests (rtol 1e-2).
"""
import triton
import triton.language as tl


@triton.jit
def binary_type(X, Y, OP: tl.constexpr):
    x = tl.load(X + tl.arange(0, 16))
    y = tl.load(Y + tl.arange(0, 16))
    if OP == "add":
        r = x + y
    elif OP == "sub":
        r = x - y
    elif OP == "mul":
        r = x * y
    elif OP == "truediv":
        r = x / y
    elif OP == "floordiv":
        r = x // y
    elif OP == "mod":
        r = x % y
    elif OP == "and":
        r = x & y
    elif OP == "or":
        r = x | y
    elif OP == "xor":
        r = x ^ y
    elif OP == "shl":
        r = x << y
    elif OP == "shr":
        r = x >> y
    elif OP == "lt":
        r = x < y
    elif OP == "eq":
        r = x == y
    elif OP == "maximum":
        r = tl.maximum(x, y)
    elif OP == "minimum":
        r = tl.minimum(x, y)
    elif OP == "where":
        r = tl.where(x > 0, x, y)
    elif OP == "fdiv":
        r = tl.fdiv(x, y)
    elif OP == "div_rn":
        r = tl.div_rn(x, y)
    elif OP == "umulhi":
        r = tl.umulhi(x, y)
    elif OP == "clamp":
        r = tl.clamp(x, y, y)
    elif OP == "join":
        r = tl.join(x, y)
    elif OP == "fma":
        r = tl.fma(x, y, y)
    elif OP == "scalar_int":
        r = x + 3
    elif OP == "scalar_big":
        r = x + 2**40
    elif OP == "scalar_float":
        r = x * 1.5
    else:
        tl.static_assert(False, "unknown op")
    tl.static_print(r.dtype)


@triton.jit
def unary_type(X, OP: tl.constexpr):
    x = tl.load(X + tl.arange(0, 16))
    if OP == "neg":
        r = -x
    elif OP == "invert":
        r = ~x
    elif OP == "not":
        r = not x
    elif OP == "abs":
        r = tl.abs(x)
    elif OP == "exp":
        r = tl.exp(x)
    elif OP == "exp2":
        r = tl.exp2(x)
    elif OP == "log":
        r = tl.log(x)
    elif OP == "sqrt":
        r = tl.sqrt(x)
    elif OP == "sqrt_rn":
        r = tl.sqrt_rn(x)
    elif OP == "rsqrt":
        r = tl.rsqrt(x)
    elif OP == "sin":
        r = tl.sin(x)
    elif OP == "floor":
        r = tl.floor(x)
    elif OP == "ceil":
        r = tl.ceil(x)
    elif OP == "erf":
        r = tl.erf(x)
    elif OP == "sigmoid":
        r = tl.sigmoid(x)
    elif OP == "softmax":
        r = tl.softmax(x)
    elif OP == "cdiv":
        r = tl.cdiv(x, 4)
    elif OP == "sum":
        r = tl.sum(x, 0)
    elif OP == "sum_f32":
        r = tl.sum(x, 0, dtype=tl.float32)
    elif OP == "max":
        r = tl.max(x, 0)
    elif OP == "min":
        r = tl.min(x, 0)
    elif OP == "argmax":
        r = tl.argmax(x, 0)
    elif OP == "max_index":
        r = tl.max(x, 0, return_indices=True)[1]
    elif OP == "xor_sum":
        r = tl.xor_sum(x, 0)
    elif OP == "reduce_or":
        r = tl.reduce_or(x, 0)
    elif OP == "cumsum":
        r = tl.cumsum(x, 0)
    elif OP == "cumprod":
        r = tl.cumprod(x, 0)
    elif OP == "sort":
        r = tl.sort(x)
    elif OP == "flip":
        r = tl.flip(x)
    elif OP == "histogram":
        r = tl.histogram(x, 8)
    elif OP == "to_f16":
        r = x.to(tl.float16)
    elif OP == "to_i1":
        r = x.to(tl.int1)
    elif OP == "bitcast_i32":
        r = x.to(tl.int32, bitcast=True)
    elif OP == "zeros_like":
        r = tl.zeros_like(x)
    elif OP == "full_like":
        r = tl.full((16,), 2, x.dtype) + x
    elif OP == "split":
        r = tl.split(tl.reshape(x, (8, 2)))[0]
    elif OP == "range_mul":
        r = tl.arange(0, 16) * x
    elif OP == "program_id_add":
        r = tl.program_id(0) + x
    else:
        tl.static_assert(False, "unknown op")
    tl.static_print(r.dtype)


@triton.jit
def dot_type(X, Y, OP: tl.constexpr):
    o = tl.arange(0, 16)
    x = tl.load(X + o[:, None] * 16 + o[None, :])
    y = tl.load(Y + o[:, None] * 16 + o[None, :])
    if OP == "default":
        r = tl.dot(x, y)
    elif OP == "out_f16":
        r = tl.dot(x, y, out_dtype=tl.float16)
    elif OP == "out_f32":
        r = tl.dot(x, y, out_dtype=tl.float32)
    elif OP == "acc_f32":
        r = tl.dot(x, y, tl.zeros((16, 16), tl.float32))
    elif OP == "acc_f16":
        r = tl.dot(x, y, tl.zeros((16, 16), tl.float16), out_dtype=tl.float16)
    elif OP == "acc_i32":
        r = tl.dot(x, y, tl.zeros((16, 16), tl.int32))
    else:
        tl.static_assert(False, "unknown op")
    tl.static_print(r.dtype)


@triton.jit
def scalar_type(X, OP: tl.constexpr):
    x = tl.load(X + tl.arange(0, 16))
    if OP == "lt_float":
        r = x < 2.5
    elif OP == "floordiv_int":
        r = x // 2
    elif OP == "mod_float":
        r = x % 3.0
    elif OP == "and_hex":
        r = x & 0xFF
    elif OP == "shl_int":
        r = x << 2
    elif OP == "rsub_int":
        r = 7 - x
    elif OP == "rdiv_float":
        r = 1.0 / x
    elif OP == "mul_bool":
        r = x * True
    elif OP == "where_scalars":
        r = tl.where(x > 0, 1, 2.5)
    elif OP == "where_int_scalar":
        r = tl.where(x > 0, x, 0)
    elif OP == "where_float_scalar":
        r = tl.where(x > 0, x, 0.0)
    elif OP == "maximum_scalar":
        r = tl.maximum(x, 0)
    elif OP == "pow_int":
        r = x * x * 2**31
    elif OP == "neg_big":
        r = x - 2**63
    elif OP == "u32_scalar":
        r = x + 2**32 - 1
    elif OP == "load_other":
        r = tl.load(X + tl.arange(0, 16), mask=tl.arange(0, 16) < 8, other=0)
    elif OP == "load_other_float":
        r = tl.load(X + tl.arange(0, 16), mask=tl.arange(0, 16) < 8, other=1.5)
    elif OP == "atomic_add":
        r = tl.atomic_add(X + tl.arange(0, 16), x)
    elif OP == "atomic_max":
        r = tl.atomic_max(X + tl.arange(0, 16), x)
    elif OP == "atomic_xchg":
        r = tl.atomic_xchg(X + tl.arange(0, 16), x)
    elif OP == "atomic_cas":
        r = tl.atomic_cas(X + tl.arange(0, 16), x, x)
    elif OP == "rand":
        r = tl.rand(x.to(tl.int32), tl.arange(0, 16))
    elif OP == "randint":
        r = tl.randint(x.to(tl.int32), tl.arange(0, 16))
    elif OP == "sum_keep":
        r = tl.sum(x, 0, keep_dims=True)
    elif OP == "reduce_fn":
        r = tl.reduce(x, 0, _combine_max)
    elif OP == "to_f8":
        r = x.to(tl.float8e5)
    elif OP == "to_bf16_rtz":
        r = x.to(tl.bfloat16, fp_downcast_rounding="rtz")
    elif OP == "ravel":
        r = tl.ravel(tl.reshape(x, (4, 4)))
    elif OP == "trans":
        r = tl.trans(tl.reshape(x, (4, 4)))
    elif OP == "broadcast":
        r = tl.broadcast_to(x[None, :], (2, 16))
    elif OP == "interleave":
        r = tl.interleave(x, x)
    elif OP == "gather":
        r = tl.gather(x, tl.arange(0, 16), 0)
    elif OP == "dot_scaled_like":
        r = tl.fdiv(x.to(tl.float32), 2.0)
    else:
        tl.static_assert(False, "unknown op")
    tl.static_print(r.dtype)


@triton.jit
def _combine_max(a, b):
    return tl.maximum(a, b)
