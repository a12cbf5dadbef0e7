"""tl.atomic_poll (Triton's API, issue 19): wait until a scalar integer
equals a value; True when seen, False when `timeout_ns` ran out. zetile has
no device timer: timeout_ns bounds the number of polls (at most
timeout_ns + 1 atomic reads), which the tests below pin down."""
import tempfile

import pytest

import zetile
import zetile.language as tl
from zt_testutil import have_tool

torch = pytest.importorskip("torch")


@zetile.jit
def poll_then_store(flag, out, expected, SEM: tl.constexpr, SCOPE: tl.constexpr):
    tl.atomic_poll(flag, expected, sem=SEM, scope=SCOPE)
    tl.store(out, 1)


@pytest.mark.parametrize("sem", ["relaxed", "acquire"])
@pytest.mark.parametrize("scope", ["cta", "gpu", "sys"])
@pytest.mark.parametrize("dtype", [torch.int16, torch.int32, torch.int64])
def test_poll_returns_once_the_value_is_there(dtype, sem, scope):
    # A large expected value checks the comparison is at the element width.
    v = {torch.int16: -3, torch.int32: 1 << 30, torch.int64: 1 << 40}[dtype]
    flag = torch.full((1,), v, dtype=dtype)
    out = torch.zeros_like(flag)
    poll_then_store[(1,)](flag, out, v, SEM=sem, SCOPE=scope)
    assert out.item() == 1 and flag.item() == v  # the poll leaves the value as it was


@zetile.jit
def poll_timeout(flag, out, expected, timeout_ns):
    tl.store(out, tl.atomic_poll(flag, expected, timeout_ns=timeout_ns))


@zetile.jit
def poll_method(flag, out):
    tl.store(out, flag.atomic_poll(7, sem="relaxed", scope="cta"))


@pytest.mark.parametrize("timeout", [0, 5, 64])
def test_timeout_returns_whether_the_value_was_seen(timeout):
    out = torch.empty(1, dtype=torch.bool)
    poll_timeout[(1,)](torch.full((1,), 3, dtype=torch.int32), out, 3, timeout)
    assert out.item() is True
    poll_timeout[(1,)](torch.full((1,), 2, dtype=torch.int32), out, 3, timeout)
    assert out.item() is False


def test_tensor_method_and_metadata():
    out = torch.empty(1, dtype=torch.bool)
    compiled = poll_method[(1,)](torch.full((1,), 7, dtype=torch.int64), out)
    assert out.item() is True
    # Triton's test reads compiled.metadata.shared (no shared memory on the CPU target).
    assert compiled.metadata.shared == 0 and compiled.metadata.target == "cpu"
    with pytest.raises(AttributeError, match="kernel metadata has no 'bogus'"):
        compiled.metadata.bogus
    poll_timeout[(1,)](torch.full((1,), 7, dtype=torch.int64), out, 8, 0)
    assert out.item() is False


def test_errors_follow_triton():
    @zetile.jit
    def block_ptr(flag, out):
        tl.atomic_poll(flag + tl.arange(0, 2), 1)

    @zetile.jit
    def bad_sem(flag, out):
        tl.atomic_poll(flag, 1, sem="release")

    @zetile.jit
    def negative(flag, out):
        tl.atomic_poll(flag, 1, timeout_ns=-1)

    @zetile.jit
    def float_flag(flag, out):
        tl.atomic_poll(flag, 1)

    i32 = torch.zeros(2, dtype=torch.int32)
    for k, flag, msg in [(block_ptr, i32, "pointer to a scalar"),
                         (bad_sem, i32, "acquire and relaxed"),
                         (negative, i32, "non-negative"),
                         (float_flag, torch.zeros(1), "integer elements"),
                         (float_flag, torch.zeros(1, dtype=torch.int8), "integer elements")]:
        with pytest.raises(Exception, match=msg):
            k[(1,)](flag, i32)


@zetile.jit
def poll_i32_out(flag, out, expected, timeout_ns):
    # Xe stores no i1 elements: the result goes out as an int32.
    tl.store(out, tl.atomic_poll(flag, expected, timeout_ns=timeout_ns).to(tl.int32))


def test_pvc_builds():
    if not (have_tool("spirv-val") and have_tool("ocloc")):
        pytest.skip("spirv-val/ocloc are not installed")
    from zetile.tools import isa
    from zt_testutil import spirv_val
    ck = zetile.compile(poll_i32_out, signature={"flag": "*i32", "out": "*i32", "expected": "i32",
                                                 "timeout_ns": "i64"},
                        target="pvc", cached=False)
    spv = ck.asm["spirv"]
    spirv_val(spv)
    with tempfile.TemporaryDirectory() as d:
        _, log = isa.ocloc_compile(spv, d, "pvc")
        assert "unresolved" not in log.lower(), log
