"""int8 dot operands that are not straight 2-D block reads, on pvc (issues 12
and 13). The stdlib GEMM's generic int8 export passes every stride at run
time, so A and B are row gathers; an int8 DPAS wants A as 8x32 blocks with
each lane holding a column pair (2j, 2j + 1) packed in one 16-bit register,
which a 16-lane row gather does not give. Now each A row is two gathers, of
the even and of the odd columns, packed per lane (xe_matrix.c
gather_i8_pairs); B's 32x16 VNNI blocks are 16-lane rows already. Before,
the load was refused ("2-D gathers of i8 tensors feeding a dot").

Evidence: E1 (spirv-val, the XeGPU holds gathers and int8 DPAS), E2 (`zetile
isa` pvc: DPAS in the K loop, no spill at 4 subgroups), E4 (CPU target) and
E5 (the pvc SPIR-V on Intel's OpenCL CPU runtime), exact against int64 numpy
with M, N, K tails and a column-major A."""
import os
import sys

import pytest

import zetile
from zt_testutil import (e5_cases, have_tool, isa_no_spill, run_cases_on, spirv_val,
                         unalias_types as _unalias)

HERE = os.path.dirname(os.path.abspath(__file__))
# Intel's OpenCL CPU runtime takes tens of seconds per kernel build here: E5
# runs one case of each kernel by default, all with ZETILE_SLOW_TESTS=1
# (zt_testutil.e5_cases).
sys.path.insert(0, HERE)

import xe_int8_gather_kernels as K  # noqa: E402

pytestmark = pytest.mark.usefixtures("cpu_device")  # conftest.py

# The numerics of every kernel here in one fresh interpreter per device (a
# process start and the device's set-up once, not four times).
RUN_ALL = """
import json, zetile
import xe_int8_gather_kernels as K
n = N_CASES
zp = K.run_zero_points(K.ZP_CASES[:n])
zp.update({"b_" + k: v for k, v in K.run_zero_points(K.ZP_CASES[:n], b_zp=True).items()})
out = {"strided": K.run_strided(K.STRIDED_CASES[:n]), "zp": zp,
       "scaled": K.run_scaled(K.SCALED_CASES[:n]), "stored": K.run_stored(K.STORED_CASES[:n]),
       "device": zetile.get_device().info["name"]}
print("RESULT", json.dumps(out))
"""


@pytest.fixture(scope="module")
def numerics():
    done = {}

    def on(device):
        if device not in done:
            done[device] = run_cases_on(device, RUN_ALL, HERE)
        return done[device]
    return on


def _compile_strided(num_warps, target="pvc"):
    return zetile.compile(K.i8_strided, signature=K.SIG_STRIDED,
                          constexprs={"BM": 64, "BN": 64, "BK": 32}, target=target,
                          num_warps=num_warps, cached=False)


@pytest.mark.skipif(not have_tool("spirv-val"), reason="spirv-val is not installed")
@pytest.mark.parametrize("target", ["pvc", "bmg"])
@pytest.mark.parametrize("num_warps", [1, 4])
def test_e1_strided_int8_gemm(num_warps, target):
    asm = _compile_strided(num_warps, target).asm
    mlir = _unalias(asm["mlir"])
    # Gathers (no block read can serve run-time strides) and int8 DPAS: 64x64
    # over num_warps subgroups, K 32 a DPAS.
    assert mlir.count("xegpu.load_nd") == 0
    assert mlir.count("xegpu.load ") > 0
    assert mlir.count("xegpu.dpas") == 32 // num_warps
    assert "vector<8x32xi8>" in mlir
    spirv_val(asm["spirv"])


# Gathered operands keep the columns-first grid (1 x 4 here): the fewest-
# operand-registers grid of block-read dots (c513a0b, 2 x 2) gave this kernel
# 23 scratch sends outside its DPAS loop.
def test_e2_strided_int8_gemm():
    ck = _compile_strided(4)
    r = isa_no_spill(ck.asm["spirv"], ck.metadata.get("igc_options", ""), "pvc 64x64x32 num_warps 4")
    # 32x32 per subgroup: 4x2 accumulators, one int8 DPAS (K 32) each.
    assert r["dpas_in_innermost_loop"] >= 8, r


@pytest.mark.parametrize("device", ["cpu", "opencl:cpu"])
def test_numerics_strided_exact(device, numerics):
    res = numerics(device)["strided"]
    assert len(res) == len(K.STRIDED_CASES[:e5_cases(device)])
    assert all(v == 0 for v in res.values()), res


# int8 arithmetic before an int8 dot (a zero point subtracted in int8): the
# op runs on the A operand's 8x32 lane-pair blocks as they are, and on B's
# 32x16 VNNI blocks one byte position of each dword at a time (xe_matrix.c
# i8_operand_elementwise). Before: "elementwise ops on int8 tiles on Xe".
# K is a run-time argument without a hint here, so A is also gathered; on
# opencl:cpu the launcher hints K and A is a 2-D block read.
def _compile_zp(num_warps, b_zp=False):
    return zetile.compile(K.i8_zero_points, signature=K.SIG_ZP,
                          constexprs={"BM": 64, "BN": 64, "BK": 32, "B_ZP": b_zp},
                          target="pvc", num_warps=num_warps, cached=False)


@pytest.mark.skipif(not have_tool("spirv-val"), reason="spirv-val is not installed")
@pytest.mark.parametrize("num_warps", [1, 4])
def test_e1_int8_arith_before_dot(num_warps):
    asm = _compile_zp(num_warps).asm
    assert _unalias(asm["mlir"]).count("xegpu.dpas") == 32 // num_warps
    # the subtraction on 8x32 i8 blocks
    assert "vector<8x32xi8>) -> vector<8x32xi8>" in _unalias(asm["mlir"])
    spirv_val(asm["spirv"])


@pytest.mark.skipif(not have_tool("spirv-val"), reason="spirv-val is not installed")
@pytest.mark.parametrize("num_warps", [1, 4])
def test_e1_int8_arith_on_b(num_warps):
    # A B operand's 32x16 VNNI blocks are one 32-byte vector per lane, which
    # LLVM 22's SPIR-V backend cannot take apart: the op runs on the lane's
    # registers viewed as 8 dwords, one byte position at a time (zt.lane_regs
    # markers around it). Refused by name before.
    asm = _compile_zp(num_warps, b_zp=True).asm
    mlir = _unalias(asm["mlir"])
    assert "vector<32x16xi8> to vector<8x16xi32> {zt.lane_regs}" in mlir
    assert mlir.count("xegpu.dpas") == 32 // num_warps
    spirv_val(asm["spirv"])


def test_e2_int8_arith_before_dot():
    for b_zp in (False, True):
        ck = _compile_zp(4, b_zp)
        r = isa_no_spill(ck.asm["spirv"], ck.metadata.get("igc_options", ""),
                         f"pvc zero-point (B too: {b_zp}) 64x64x32 num_warps 4")
        assert r["dpas_in_innermost_loop"] >= 8, r


@pytest.mark.parametrize("device", ["cpu", "opencl:cpu"])
def test_numerics_int8_arith_exact(device, numerics):
    res = numerics(device)["zp"]
    assert len(res) == 2 * len(K.ZP_CASES[:e5_cases(device)])
    assert all(v == 0 for v in res.values()), res


# The stdlib GEMM's generic int8 export (gemm-i8-none-plain-64x64x32: what
# the C API runs for int8 operands that are not row-major with 16-aligned
# rows) for pvc at the planner's subgroup count: was refused at the A load.
def test_e1_e2_stdlib_generic_int8_export():
    torch = pytest.importorskip("torch")  # noqa: F841 (zetile.ops needs it)
    from zetile import _C
    from zetile.ops import export
    _, text, _, _ = export.spec_manifest("gemm-i8-none-plain-64x64x32")
    art = _C.compile(text, target="pvc", num_warps=0, cached=False)
    mlir = art.get("mlir")
    mlir = _unalias(mlir.decode() if isinstance(mlir, bytes) else mlir)
    assert mlir.count("xegpu.load_nd") == 0 and mlir.count("xegpu.dpas") > 0  # gathered
    if have_tool("spirv-val"):
        spirv_val(art.get("spirv"))
    r = isa_no_spill(art.get("spirv"), "-ze-opt-large-register-file", "pvc generic int8 export")
    assert r["dpas_in_innermost_loop"] >= 2, r


# (b) A per-row scale on a dot's A operand over several subgroups
# (`a.to(fp16) * s[:, None]`, int8 dequantization before an fp16 dot). The
# A blocks hold every column of a subgroup's rows, replicated across the
# grid's columns, while the 1-D scale is split across the subgroups: each
# subgroup now gathers the whole column through SLM (or, when every subgroup
# already holds it, picks its rows) and builds the broadcast in the A places
# (xe_matrix.c broadcast_col_into_a). Before: "broadcast of this value to
# 2-D" at num_warps > 1 (it built at num_warps 1).
def _compile_scaled(bm, num_warps):
    return zetile.compile(K.scaled_a, signature=K.SIG_SCALED,
                          constexprs={"BM": bm, "BN": 64, "BK": 32}, target="pvc",
                          num_warps=num_warps, cached=False)


@pytest.mark.skipif(not have_tool("spirv-val"), reason="spirv-val is not installed")
@pytest.mark.parametrize("bm,num_warps,barriers", [(64, 4, 2), (64, 8, 0), (128, 8, 2)])
def test_e1_row_scale_on_a(bm, num_warps, barriers):
    asm = _compile_scaled(bm, num_warps).asm
    assert _unalias(asm["mlir"]).count("xegpu.dpas") == bm * 64 // (8 * 16 * num_warps) * 2
    # the scale's SLM exchange (two barriers) where the column is split
    assert _unalias(asm["mlir"]).count("gpu.barrier") == barriers
    spirv_val(asm["spirv"])


def test_e2_row_scale_on_a():
    ck = _compile_scaled(64, 4)
    r = isa_no_spill(ck.asm["spirv"], ck.metadata.get("igc_options", ""),
                     "pvc row scale 64x64x32 num_warps 4")
    assert r["dpas_in_innermost_loop"] >= 16, r


@pytest.mark.parametrize("device", ["cpu", "opencl:cpu"])
def test_numerics_row_scale_exact(device, numerics):
    res = numerics(device)["scaled"]
    assert len(res) == len(K.SCALED_CASES[:e5_cases(device)])
    # every product and sum is exact in fp16/fp32 (see run_scaled)
    assert all(v <= 1e-6 for v in res.values()), res


# An int8 tile both stored and read as an int8 dot's A operand: its 8x32
# lane-pair blocks are stored as two byte scatters a row (even and odd
# columns). Before: "2-D store of an int8 tile that an int8 tl.dot also
# reads as its A operand". K unhinted here: A gathered too.
@pytest.mark.skipif(not have_tool("spirv-val"), reason="spirv-val is not installed")
@pytest.mark.parametrize("num_warps", [1, 4])
def test_e1_int8_a_operand_also_stored(num_warps):
    ck = zetile.compile(K.i8_stored_and_dot, signature=K.SIG_STORED,
                        constexprs={"BM": 64, "BN": 64, "BK": 32}, target="pvc",
                        num_warps=num_warps, cached=False)
    mlir = _unalias(ck.asm["mlir"])
    assert "vector<8x32xi8> to vector<8x16xi16>" in mlir
    assert mlir.count("xegpu.dpas") == 32 // num_warps
    spirv_val(ck.asm["spirv"])


@pytest.mark.parametrize("device", ["cpu", "opencl:cpu"])
def test_numerics_int8_a_operand_also_stored_exact(device, numerics):
    res = numerics(device)["stored"]
    assert len(res) == len(K.STORED_CASES[:e5_cases(device)])
    assert all(v == 0 for v in res.values()), res
