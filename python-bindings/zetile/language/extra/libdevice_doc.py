"""The libdevice section of docs/LANGUAGE.md (zetile.tools.language_table
appends it): every name of Triton's CUDA libdevice (Triton 3.9.0's
python/triton/language/extra/cuda/libdevice.py; tests/python/
test_libdevice_ext.py checks this list and the result dtypes against an
installed Triton), whether zetile provides it, and how it differs."""

TRITON_LIBDEVICE_NAMES = (
    'clz', 'popc', 'byte_perm', 'mulhi', 'mul24', 'brev', 'sad', 'abs', 'floor', 'rcp64h',
    'rsqrt', 'ceil', 'trunc', 'exp2', 'saturatef', 'fma_rn', 'fma_rz', 'fma_rd', 'fma_ru',
    'fast_dividef', 'div_rn', 'div_rz', 'div_rd', 'div_ru', 'rcp_rn', 'rcp_rz', 'rcp_rd',
    'rcp_ru', 'sqrt_rn', 'sqrt_rz', 'sqrt_rd', 'sqrt_ru', 'sqrt', 'add_rn', 'add_rz', 'add_rd',
    'add_ru', 'mul_rn', 'mul_rz', 'mul_rd', 'mul_ru', 'double2float_rn', 'double2float_rz',
    'double2float_rd', 'double2float_ru', 'double2int_rn', 'double2int_rz', 'double2int_rd',
    'double2int_ru', 'double2uint_rn', 'double2uint_rz', 'double2uint_rd', 'double2uint_ru',
    'int2double_rn', 'uint2double_rn', 'float2int_rn', 'float2int_rz', 'float2int_rd',
    'float2int_ru', 'float2uint_rn', 'float2uint_rz', 'float2uint_rd', 'float2uint_ru',
    'int2float_rn', 'int2float_rz', 'int2float_rd', 'int2float_ru', 'uint2float_rn',
    'uint2float_rz', 'uint2float_rd', 'uint2float_ru', 'hiloint2double', 'double2loint',
    'double2hiint', 'float2ll_rn', 'float2ll_rz', 'float2ll_rd', 'float2ll_ru', 'float2ull_rn',
    'float2ull_rz', 'float2ull_rd', 'float2ull_ru', 'double2ll_rn', 'double2ll_rz',
    'double2ll_rd', 'double2ll_ru', 'double2ull_rn', 'double2ull_rz', 'double2ull_rd',
    'double2ull_ru', 'll2float_rn', 'll2float_rz', 'll2float_rd', 'll2float_ru', 'ull2float_rn',
    'ull2float_rz', 'ull2float_rd', 'ull2float_ru', 'll2double_rn', 'll2double_rz',
    'll2double_rd', 'll2double_ru', 'ull2double_rn', 'ull2double_rz', 'ull2double_rd',
    'ull2double_ru', 'int_as_float', 'float_as_int', 'uint_as_float', 'float_as_uint',
    'longlong_as_double', 'double_as_longlong', 'fast_sinf', 'fast_cosf', 'fast_log2f',
    'fast_logf', 'fast_expf', 'fast_tanf', 'fast_exp10f', 'fast_log10f', 'fast_powf', 'hadd',
    'rhadd', 'sub_rn', 'sub_rz', 'sub_rd', 'sub_ru', 'rsqrt_rn', 'ffs', 'rint', 'llrint',
    'nearbyint', 'isnan', 'signbit', 'copysign', 'finitef', 'isinf', 'nextafter', 'sin', 'cos',
    'sinpi', 'cospi', 'tan', 'log2', 'exp', 'exp10', 'cosh', 'sinh', 'tanh', 'atan2', 'atan',
    'asin', 'acos', 'log', 'log10', 'log1p', 'acosh', 'asinh', 'atanh', 'expm1', 'hypot',
    'rhypot', 'norm3d', 'rnorm3d', 'norm4d', 'rnorm4d', 'cbrt', 'rcbrt', 'j0', 'j1', 'y0', 'y1',
    'yn', 'jn', 'cyl_bessel_i0', 'cyl_bessel_i1', 'erf', 'erfinv', 'erfc', 'erfcx', 'erfcinv',
    'normcdfinv', 'normcdf', 'lgamma', 'ldexp', 'scalbn', 'fmod', 'remainder', 'fma', 'pow',
    'tgamma', 'round', 'llround', 'fdim', 'ilogb', 'logb', 'isfinited',
)

# How a name differs from CUDA's libdevice (accuracy measured against mpmath
# by tests/python/test_libdevice_ext.py on the CPU target; max ulps fp32 / fp64).
NOTES = {
    "isnan": "int32 0/1 as Triton's table (not int1)", "isinf": "int32 0/1", "signbit": "int32 0/1",
    "finitef": "int32 0/1", "isfinited": "int32 0/1",
    "fast_sinf": "the accurate sin", "fast_cosf": "the accurate cos", "fast_log2f": "the accurate log2",
    "fast_tanf": "the accurate tan", "fast_exp10f": "the accurate exp10",
    "fast_log10f": "the accurate log10", "fast_powf": "the accurate pow",
    "fast_expf": "the accurate exp", "fast_logf": "the accurate log", "fast_dividef": "x / y",
    "lgamma": "<= 6.3 / 6 ulps outside [-11.0001, -2.2637]; inside, near lgamma's zeros, an absolute error",
    "tgamma": "<= 4.2 / 4 ulps", "sinpi": "<= 1.5 / 3 ulps", "cospi": "<= 1.5 / 3 ulps",
    "erfc": "<= 2.2 / 3 ulps", "erfcx": "<= 3.4 / 3 ulps", "normcdf": "<= 2.8 / 4 ulps",
    "erfinv": "<= 2.6 / 2 ulps", "erfcinv": "<= 2.9 / 2 ulps", "normcdfinv": "<= 2.9 / 2 ulps",
    "j0": "relative below 8 away from zeros; absolute (<= 1e-6 / 2e-15) near zeros and above 8",
    "j1": "as j0", "y0": "as j0, absolute <= 4e-6 / 2e-14", "y1": "as y0",
    "jn": "forward recurrence below the turning point, Miller's backward above; <= 14 / 20 ulps there, absolute near zeros",
    "yn": "forward recurrence from y0, y1; absolute near zeros",
    "cyl_bessel_i0": "<= 3.2 / 4 ulps", "cyl_bessel_i1": "<= 3.6 / 4 ulps",
    "norm3d": "<= 3 ulps", "norm4d": "<= 3 ulps", "rnorm3d": "<= 3 ulps", "rnorm4d": "<= 3 ulps",
    "rhypot": "<= 3 ulps", "rcbrt": "<= 4 ulps",
    "hypot": "<= 3 ulps", "erf": "tl.erf",
    "fma_rz": "fp64: exact outside the subnormal range", "fma_rd": "as fma_rz", "fma_ru": "as fma_rz",
    "mul_rz": "fp64: exact outside the subnormal range", "mul_rd": "as mul_rz", "mul_ru": "as mul_rz",
    "div_rz": "fp64: exact outside the subnormal range", "div_rd": "as div_rz", "div_ru": "as div_rz",
    "rcp_rz": "as div_rz", "rcp_rd": "as div_rz", "rcp_ru": "as div_rz",
    "sqrt_rz": "fp64: exact outside the subnormal range", "sqrt_rd": "as sqrt_rz", "sqrt_ru": "as sqrt_rz",
    "float2int_rn": "saturating, NaN -> 0 (PTX cvt)",
}

MISSING_WHY = {
    "rcp64h": "NVIDIA-specific (reciprocal from the high word of a double)",
}


def section(provided):
    """provided(name) -> bool. Returns the markdown section."""
    rows, n_ok = [], 0
    for name in TRITON_LIBDEVICE_NAMES:
        if provided(name):
            n_ok += 1
            note = NOTES.get(name, "")
            status = "supported, with differences" if note else "supported"
        else:
            status, note = "not yet", MISSING_WHY.get(name, "")
        rows.append(f"| `libdevice.{name}` | {status} | {note} |")
    head = [
        "",
        "## tl.extra.libdevice (also tl.extra.cuda.libdevice, tl.extra.intel.libdevice)",
        "",
        "Against the names of Triton's CUDA libdevice (`zetile/language/extra/libdevice_doc.py`).",
        "Written over the kernel language's own ops, so every target takes them; result dtypes",
        "equal Triton's dispatch tables; conversions, bit intrinsics, reinterpretations and",
        "the _rn/_rz/_rd/_ru arithmetic are exact. A name not provided is an AttributeError",
        "saying so. Accuracy in ulps is fp32 / fp64, measured on the CPU target against mpmath.",
        "Also there: HIP's `fast_tanhf` (the accurate tanh). `tl.extra.intel.libdevice` also takes",
        "fp16 where Intel's tables do (abs, ceil, copysign, cos, exp, exp10, exp2, floor, fma, log,",
        "log10, log2, nearbyint, rint, rsqrt, sin, sqrt, trunc), computed in fp32.",
        "",
        f"{n_ok} of {len(TRITON_LIBDEVICE_NAMES)} provided.",
        "",
        "| name | status | differences |",
        "|---|---|---|",
    ]
    return "\n".join(head + rows) + "\n"
