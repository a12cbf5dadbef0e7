"""tl.exp on f32 with the 2^n step as llvm.ldexp (vscalefps) on AVX-512 hosts,
as an add to the exponent field elsewhere (issue 16; lowering/cpu/cpu_math.c).
The step replaced building 2^n in the exponent field twice plus a select for
x > hi; these cases go wrong if the saturation, the clamps or the NaN select
are off (E4, against float64)."""
import re
import shutil
import subprocess

import numpy as np
import pytest

import zetile
import zetile.language as tl

HI = np.float32(88.72283935546875)   # the clamp above log(FLT_MAX)
LO = np.float32(-87.33654022216797)  # below it the result is flushed to 0


pytestmark = pytest.mark.usefixtures("cpu_device")  # conftest.py


@zetile.jit
def _exp(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m, other=-float("inf"))
    tl.store(y_ptr + offs, tl.exp(x), mask=m)


def _run(x):
    y = np.full_like(x, 12345.0)
    _exp[(zetile.cdiv(x.size, 512),)](x, y, x.size, BLOCK=512)
    return y


def _avx512():
    with open("/proc/cpuinfo") as f:
        return " avx512f" in f.read()


def _exp_disassembly(tmp_path):
    """objdump -d of the exp kernel's machine code (the CPU artifact's object)."""
    ck = zetile.compile(_exp, "*fp32, *fp32, i32", constexprs={"BLOCK": 512}, cached=False)
    obj = tmp_path / "exp.o"
    obj.write_bytes(ck.asm["obj"])
    return subprocess.run(["objdump", "-d", str(obj)], capture_output=True, text=True,
                          check=True).stdout


@pytest.mark.skipif(shutil.which("objdump") is None, reason="objdump needed")
def test_exp_uses_vscalef_on_avx512(tmp_path):
    if not _avx512():
        pytest.skip("host without AVX-512F: the exponent-field method stays")
    dis = _exp_disassembly(tmp_path)
    assert re.search(r"vscalefps\s+%zmm", dis), "2^n not applied by vscalefps"
    # The exponent-field construction shifted n into bit 23 (vpslld $0x17).
    assert not re.search(r"vpslld\s+\$0x17", dis), "2^n still built in the exponent field"


@pytest.mark.skipif(shutil.which("objdump") is None, reason="objdump needed")
def test_exp_shifter_rounding_on_avx512(tmp_path):
    # Session 13: n = round(x log2e) by the 1.5 * 2^23 shifter, n as i32 from
    # the shifted bits: no vrndscaleps, no float -> int conversion, and no NaN
    # select (nothing is poison for NaN lanes any more: ldexp(NaN) is NaN).
    if not _avx512():
        pytest.skip("host without AVX-512F: the exponent-field method stays")
    dis = _exp_disassembly(tmp_path)
    assert re.search(r"vscalefps\s+%zmm", dis)
    for insn in ("vrndscaleps", "vcvttps2dq", "vcvtps2dq", "vcmpunordps"):
        assert insn not in dis, f"{insn} in the exp loop: the shifter form is gone"


@pytest.mark.skipif(shutil.which("objdump") is None, reason="objdump needed")
def test_exp_shifter_on_avx2(tmp_path):
    # Session 18: without AVX-512 the same shifter form, 2^n added to the
    # exponent field (n << 23 from the shifted bits, one vpaddd) where the
    # Cephes form rounded (vroundps), converted (vcvttps2dq), built 2^n twice
    # and selected NaN lanes apart (vcmpunordps): 32 instructions per 8 lanes.
    if _avx512():
        pytest.skip("host with AVX-512F: vscalefps (the tests above)")
    dis = _exp_disassembly(tmp_path)
    assert re.search(r"vpslld\s+\$0x17,%ymm", dis), "2^n not built in the exponent field"
    for insn in ("vroundps", "vcvttps2dq", "vcvtps2dq", "vcmpunordps"):
        assert insn not in dis, f"{insn} in the exp loop: the shifter form is gone"


def test_exp_saturates_and_flushes_at_the_clamps():
    up = np.nextafter(HI, np.float32(np.inf))
    down = np.nextafter(HI, np.float32(0))
    below = np.nextafter(LO, np.float32(-np.inf))
    x = np.float32([HI, up, down, 89.0, 1e30, np.inf, LO, below, -88.0, -1e30, -np.inf,
                    np.nan, -np.nan, 0.0, -0.0])
    y = _run(x)
    assert y[0] == np.inf and y[1] == np.inf and y[3] == np.inf and y[4] == np.inf
    assert y[5] == np.inf
    assert np.isfinite(y[2]) or y[2] == np.inf  # e^down is within rounding of FLT_MAX
    # At LO the result is still a normal float; below it exactly 0, never a subnormal.
    assert y[6] >= np.finfo(np.float32).tiny * 0.99, y[6]
    assert (y[7:11] == 0).all() and not np.signbit(y[7:11]).any()
    assert np.isnan(y[11]) and np.isnan(y[12])
    assert y[13] == 1.0 and y[14] == 1.0


def test_exp_near_both_ends_within_2_ulp():
    # The scalef path rounds y * 2^n once: where n reaches 127/128 and -126
    # (the ends of the exponent range) a wrong scale shows as a factor of 2.
    rng = np.random.default_rng(11)
    x = np.concatenate([rng.uniform(87.5, float(HI), 60_000),
                        rng.uniform(float(LO), -86.5, 60_000),
                        rng.uniform(-20, 20, 20_000)]).astype(np.float32)
    y = _run(x)
    ref = np.exp(x.astype(np.float64))
    fmax = float(np.finfo(np.float32).max)
    finite = ref < fmax * (1 - 2.0 ** -22)
    ulp = np.spacing(np.abs(ref[finite]).astype(np.float32)).astype(np.float64)
    err = np.abs(y[finite].astype(np.float64) - ref[finite]) / ulp
    assert err.max() <= 2.0, (err.max(), x[finite][err.argmax()])
    # Within a rounding of FLT_MAX: the largest floats or +inf, nothing else.
    edge = y[~finite]
    assert ((edge == np.inf) | (edge >= np.float32(fmax * (1 - 2.0 ** -21)))).all()


def test_exp_masked_tail_and_nan_lanes():
    # A length that leaves a masked tail in the last program; NaN and infinities
    # scattered through the vectors, each in its own lane.
    rng = np.random.default_rng(12)
    n = 512 * 3 + 77
    x = rng.uniform(-100, 100, n).astype(np.float32)
    x[::37] = np.nan
    x[5::41] = np.inf
    x[9::43] = -np.inf
    y = _run(x)
    ref = np.exp(x.astype(np.float64))
    nan = np.isnan(x)
    assert np.isnan(y[nan]).all() and not np.isnan(y[~nan]).any()
    tiny = ref < np.finfo(np.float32).tiny
    assert (y[tiny & ~nan] == 0).all()
    big = ref > float(np.finfo(np.float32).max)
    assert (y[big & ~nan] == np.inf).all()
    ok = ~nan & ~tiny & ~big & (ref < float(np.finfo(np.float32).max) * 0.5)
    np.testing.assert_allclose(y[ok], ref[ok], rtol=3e-7)
