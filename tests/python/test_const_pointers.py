"""tl.const pointer parameters (issue 19): loads read through them, stores
and atomics are refused with Triton's message, and constness is part of the
pointer type (a run-time choice between a const and a plain pointer is a
type mismatch, as in Triton)."""
import numpy as np
import pytest

import zetile
import zetile.language as tl


@zetile.jit
def _pick(a, b, choose_b):
    if choose_b:
        return b
    else:
        return a


def test_load_through_const_pointer():
    @zetile.jit
    def copy(src: tl.const, dst, n, B: tl.constexpr):
        o = tl.arange(0, B)
        tl.store(dst + o, tl.load(src + o, mask=o < n) * 2.0, mask=o < n)

    x = np.arange(16, dtype=np.float32)
    y = np.zeros(16, np.float32)
    copy[(1,)](x, y, 10, 16)
    want = np.where(np.arange(16) < 10, x * 2, 0.0).astype(np.float32)
    np.testing.assert_array_equal(y, want)


@pytest.mark.parametrize("op", ["store", "atomic_add", "atomic_cas", "atomic_xchg"])
def test_writes_through_const_pointer_refused(op):
    body = {
        "store": "tl.store(p + tl.arange(0, 8), tl.zeros([8], tl.float32))",
        "atomic_add": "tl.atomic_add(p, 1.0)",
        "atomic_cas": "tl.atomic_cas(p, 0.0, 1.0)",
        "atomic_xchg": "tl.atomic_xchg(p + 1, 1.0)",
    }[op]

    @zetile.jit
    def k(p: tl.const):
        BODY

    k._unsafe_update_src(k.src.replace("BODY", body))
    with pytest.raises(zetile.CompilationError) as e:
        k.warmup(np.zeros(8, np.float32), grid=(1,))
    assert "Cannot store to a constant pointer" in e.value.error_message


def test_const_pointer_type():
    pt = tl.pointer_type(tl.float32, const=True)
    assert pt.is_const() and pt != tl.pointer_type(tl.float32)
    assert str(pt) == "*kfp32" and tl.str_to_ty("*kfp32") == pt
    assert not tl.pointer_type(tl.float32).is_const()


@pytest.mark.parametrize("mode", ["if", "ternary", "call"])
def test_runtime_choice_between_const_and_plain_is_a_mismatch(mode):
    tail = {
        "if": "if choose:\n        f = c_out\n    else:\n        f = out",
        "ternary": "f = c_out if choose else out",
        "call": "f = _pick(out, c_out, choose)",
    }[mode]
    msg = {"if": "Mismatched type for f", "ternary": "inconsistent type",
           "call": "Return type mismatch"}[mode]

    @zetile.jit(do_not_specialize=["choose"])
    def k(out, c_out: tl.const, choose):
        TAIL
        tl.store(f, 1.0)

    k._unsafe_update_src(k.src.replace("TAIL", tail))
    x = np.zeros(4, np.float32)
    with pytest.raises(zetile.CompilationError, match=msg):
        k.warmup(x, x, 0, grid=(1,))


@pytest.mark.parametrize("choose", [False, True])
def test_compile_time_choice_through_a_helper(choose):
    # A constexpr passed to a @jit helper stays compile-time there (Triton's
    # rule), so only the chosen pointer reaches tl.store.
    @zetile.jit
    def k(out, c_out: tl.const, choose: tl.constexpr):
        f = _pick(out, c_out, choose)
        tl.store(f + tl.arange(0, 4), tl.full([4], 7.0, tl.float32))

    x = np.zeros(4, np.float32)
    if choose:
        with pytest.raises(zetile.CompilationError, match="Cannot store to a constant pointer"):
            k.warmup(x, x, choose, grid=(1,))
    else:
        k[(1,)](x, x, choose)
        np.testing.assert_array_equal(x, np.full(4, 7.0, np.float32))


def test_const_pointer_builds_for_pvc():
    @zetile.jit
    def copy(src: tl.const, dst, B: tl.constexpr):
        o = tl.arange(0, B)
        tl.store(dst + o, tl.load(src + o))

    sig = {"src": "*kfp32", "dst": "*fp32"}
    ck = zetile.compile(copy, sig, constexprs={"B": 64}, target="pvc")
    assert ck.asm["spirv"][:4] == b"\x03\x02\x23\x07"
