"""The static result type of every op, for every operand dtype, against
Triton's interpreter (result_type_kernels.py: each kernel prints one
expression's `dtype` with tl.static_print; zetile's front end builds the
kernel's tile IR without compiling it). Value conformance stores results into
wide outputs, where a wrong result type can hide behind a tolerance; here any
difference, including one side refusing what the other accepts, fails.
"""
import contextlib
import io
import os

import pytest

import zetile
from conformance_support import load_kernels

HERE = os.path.dirname(os.path.abspath(__file__))
PATH = os.path.join(HERE, "result_type_kernels.py")
triton_mod = load_kernels("triton", PATH)
zetile_mod = load_kernels("zetile", PATH)

DTYPES = ["int1", "int8", "int16", "int32", "int64", "uint8", "uint32", "float16", "bfloat16",
          "float32", "float64"]
BINARY = ["add", "sub", "mul", "truediv", "floordiv", "mod", "and", "or", "xor", "shl", "shr",
          "lt", "eq", "maximum", "minimum", "where", "fdiv", "div_rn", "umulhi", "clamp", "join",
          "fma", "scalar_int", "scalar_big", "scalar_float"]
UNARY = ["neg", "invert", "not", "abs", "exp", "exp2", "log", "sqrt", "sqrt_rn", "rsqrt", "sin",
         "floor", "ceil", "erf", "sigmoid", "softmax", "cdiv", "sum", "sum_f32", "max", "min",
         "argmax", "max_index", "xor_sum", "reduce_or", "cumsum", "cumprod", "sort", "flip",
         "histogram", "to_f16", "to_i1", "bitcast_i32", "zeros_like", "full_like", "split",
         "range_mul", "program_id_add"]
SCALAR = ["lt_float", "floordiv_int", "mod_float", "and_hex", "shl_int", "rsub_int", "rdiv_float",
          "mul_bool", "where_scalars", "where_int_scalar", "where_float_scalar", "maximum_scalar",
          "pow_int", "neg_big", "u32_scalar", "load_other", "load_other_float", "atomic_add",
          "atomic_max", "atomic_xchg", "atomic_cas", "rand", "randint", "sum_keep", "reduce_fn",
          "to_f8", "to_bf16_rtz", "ravel", "trans", "broadcast", "interleave", "gather",
          "dot_scaled_like"]
DOT = ["default", "out_f16", "out_f32", "acc_f32", "acc_f16", "acc_i32"]
DOT_DTYPES = ["int8", "uint8", "float16", "bfloat16", "float32", "float64"]

# Where the two may differ, with the reason. A key is (kernel, op, dtypes).
_INT_FMA = ("Triton's interpreter computes tl.fma of integers; compiled Triton refuses it "
            "(math.fma is a float op) and so does zetile")
EXPECTED = {("binary_type", "fma", (a, b)): _INT_FMA
            for a in DTYPES for b in DTYPES
            if not (a.startswith("float") or a == "bfloat16" or b.startswith("float") or b == "bfloat16")}
_JOIN = ("Triton's interpreter joins tensors of two dtypes (typed as the first); compiled "
         "Triton's tt.join needs one element type, and zetile refuses it")
EXPECTED.update({("binary_type", "join", (a, b)): _JOIN for a in DTYPES for b in DTYPES if a != b})
_UINT8_DOT = ("zetile multiplies uint8 x uint8 into int32 (zero-extended); Triton takes only int8")
EXPECTED.update({("dot_type", op, ("uint8", "uint8")): _UINT8_DOT for op in DOT})
_ACC = ("an accumulator whose dtype is not the operands' result type: Triton types the result "
        "by the operands while its IR takes the accumulator's (its interpreter prints one, a "
        "compile checks the other); zetile accumulates in the accumulator's dtype, or refuses")
EXPECTED.update({("dot_type", "acc_f32", (a, a)): _ACC for a in ("int8", "float64")})
EXPECTED.update({("dot_type", "acc_f16", (a, a)): _ACC
                 for a in ("int8", "bfloat16", "float32", "float64")})
EXPECTED[("dot_type", "acc_i32", ("bfloat16", "bfloat16"))] = _ACC
_INTERP = ("Triton's interpreter cannot run it (numpy: 'Unsupported data type' / 'cannot cast'); "
           "Triton's semantic.py accepts it and so does zetile")
EXPECTED[("scalar_type", "atomic_add", ("bfloat16",))] = _INTERP
EXPECTED.update({("scalar_type", "atomic_xchg", (a,)): _INTERP for a in ("float32", "float64")})
EXPECTED.update({("scalar_type", "to_f8", (a,)): _INTERP
                 for a in ("int1", "int8", "int16", "int32", "int64", "uint8", "uint32")})


def _tensor(dt, n):
    import torch
    if dt == "int1":
        return torch.zeros(n, dtype=torch.bool)
    return torch.ones(n, dtype=getattr(torch, dt))


def _printed(mod, which, kernel, args, op):
    """What the kernel's static_print prints (its last line), or "error"."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        try:
            k = getattr(mod, kernel)
            if which == "triton":
                k[(1,)](*args, OP=op)
            else:
                bound = k._bind(tuple(args), {"OP": op})
                _, at, div, ce, _, descs = k.specialize(bound, zetile.get_device("cpu"))
                k.build_tile_ir(at, ce, div, descs)
        except Exception:
            return "error"
    lines = out.getvalue().strip().splitlines()
    return lines[-1].strip() if lines else "(nothing printed)"


def _compare(kernel, op, combos, n):
    if triton_mod is None:
        pytest.skip("triton is not installed: the oracle is missing (pip install triton)")
    wrong = []
    for dts in combos:
        args = [_tensor(dt, n) for dt in dts]
        t = _printed(triton_mod, "triton", kernel, args, op)
        z = _printed(zetile_mod, "zetile", kernel, args, op)
        if (kernel, op, dts) in EXPECTED:
            continue  # may differ, for the reason given
        if t != z:
            wrong.append(f"{op}({', '.join(dts)}): Triton {t}, zetile {z}")
    assert not wrong, f"{len(wrong)} of {len(combos)} differ:\n" + "\n".join(wrong)


@pytest.mark.parametrize("op", BINARY)
def test_binary_result_type(op):
    _compare("binary_type", op, [(a, b) for a in DTYPES for b in DTYPES], 16)


@pytest.mark.parametrize("op", UNARY)
def test_unary_result_type(op):
    _compare("unary_type", op, [(a,) for a in DTYPES], 16)


@pytest.mark.parametrize("op", DOT)
def test_dot_result_type(op):
    _compare("dot_type", op, [(a, a) for a in DOT_DTYPES], 256)


@pytest.mark.parametrize("op", SCALAR)
def test_scalar_and_memory_result_type(op):
    _compare("scalar_type", op, [(a,) for a in DTYPES], 16)
