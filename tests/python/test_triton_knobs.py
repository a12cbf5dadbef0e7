"""triton.knobs (zetile.knobs): Triton's knob sets with scope/copy/reset,
the JIT cache hooks with preload, and refusals of knobs zetile cannot honour
(issue 19)."""
import os

import numpy as np
import pytest

import zetile
import zetile.language as tl
from zetile import knobs


@zetile.jit
def _add_tuple(x, t, N: tl.constexpr):
    o = tl.arange(0, N)
    tl.store(x + o, tl.load(x + o) + t[0] + t[1][0])


def test_scope_restores_values_and_environment():
    before = os.environ.get("TRITON_OVERRIDE_ARCH")
    with knobs.runtime.scope():
        knobs.runtime.override_arch = "sm90"
        assert knobs.runtime.override_arch == "sm90"
        assert os.environ["TRITON_OVERRIDE_ARCH"] == "sm90"  # propagated, as in Triton
    assert knobs.runtime.override_arch == before
    assert os.environ.get("TRITON_OVERRIDE_ARCH") == before


def test_env_read_unless_set(monkeypatch):
    monkeypatch.setenv("TRITON_DEFAULT_FP_FUSION", "0")
    ks = knobs.language.copy().reset()
    assert ks.default_fp_fusion is False
    monkeypatch.delenv("TRITON_DEFAULT_FP_FUSION")
    assert ks.default_fp_fusion is True
    assert "default_fp_fusion" in ks.knob_descriptors


def test_jit_cache_hook_and_preload():
    seen = []
    x = np.zeros(8, np.float32)
    with knobs.runtime.scope():
        knobs.runtime.jit_cache_hook = lambda **kw: seen.append(kw) and None
        _add_tuple.device_caches[0][0].clear()
        w = _add_tuple.warmup(x, (1.5, (tl.constexpr(2),)), 8, grid=(1,))
        assert len(seen) == 1 and seen[0]["is_manual_warmup"] is True
        data = seen[0]["compile"]["specialization_data"]
        assert isinstance(data, str)
        _add_tuple.device_caches[0][0].clear()
        p = _add_tuple.preload(data)  # compiled again from the data alone
        assert p is not w and p.hash == w.hash and w.hash
    # the preloaded specialization serves the launch
    _add_tuple[(1,)](x, (1.5, (tl.constexpr(2),)), 8)
    np.testing.assert_array_equal(x, np.full(8, 3.5, np.float32))


def test_jit_cache_hook_true_skips_compile():
    with knobs.runtime.scope():
        knobs.runtime.jit_cache_hook = lambda **kw: True
        _add_tuple.device_caches[0][0].clear()
        assert _add_tuple.warmup(np.zeros(8, np.float32), (1.0, (2,)), 8, grid=(1,)) is None


def test_post_compile_hook_called():
    seen = []
    with knobs.runtime.scope():
        knobs.runtime.jit_post_compile_hook = lambda **kw: seen.append(kw["key"])
        _add_tuple.device_caches[0][0].clear()
        _add_tuple.warmup(np.zeros(8, np.float32), (1.0, (2,)), 8, grid=(1,))
    assert len(seen) == 1


def test_preload_other_kernel_refused():
    seen = []
    with knobs.runtime.scope():
        knobs.runtime.jit_cache_hook = lambda **kw: seen.append(kw)
        _add_tuple.device_caches[0][0].clear()
        _add_tuple.warmup(np.zeros(8, np.float32), (1.0, (2,)), 8, grid=(1,))

    @zetile.jit
    def other(x):
        pass

    with pytest.raises(RuntimeError, match="specialization data is for"):
        other.preload(seen[0]["compile"]["specialization_data"])


def test_override_arch_refused_not_ignored():
    with knobs.runtime.scope():
        knobs.runtime.override_arch = "sm90"
        _add_tuple.device_caches[0][0].clear()
        with pytest.raises(zetile.UnsupportedError, match="override_arch"):
            _add_tuple.warmup(np.zeros(8, np.float32), (1.0, (2,)), 8, grid=(1,))


@pytest.mark.parametrize("fusion", [False, True])
def test_fp_fusion_settings_same_result(fusion):
    # zetile never contracts a*b+c: both settings give the twice-rounded result.
    @zetile.jit
    def mul_add(d, N: tl.constexpr):
        p = d + tl.arange(0, N)
        tl.store(p, tl.load(p) * 1.5 + 1.0)

    rs = np.random.RandomState(0)
    x = rs.randn(128).astype(np.float32)
    want = (x * np.float32(1.5)).astype(np.float32) + np.float32(1.0)
    with knobs.language.scope():
        knobs.language.default_fp_fusion = fusion
        y = x.copy()
        mul_add[(1,)](y, 128)
        z = x.copy()
        mul_add[(1,)](z, 128, enable_fp_fusion=fusion)
    np.testing.assert_array_equal(y, want)
    np.testing.assert_array_equal(z, want)


def test_runtime_debug_compiles_asserts_in_even_after_a_launch():
    @zetile.jit
    def check(x, N: tl.constexpr):
        v = tl.load(x + tl.arange(0, N))
        tl.device_assert(v < 5, "v < 5")

    x = np.arange(8, dtype=np.int32)  # 5, 6, 7 break the assertion
    check[(1,)](x, 8)  # not a debug kernel: the assert is compiled out
    check[(1,)](x, 8)  # a repeat, through the C fast launch
    ok = np.zeros(8, dtype=np.int32)
    with knobs.runtime.scope():
        knobs.runtime.debug = True
        check[(1,)](ok, 8)  # a debug launch that passes (cached as a fast launch)
        with pytest.raises(Exception, match="v < 5"):
            check[(1,)](x, 8)
    check[(1,)](x, 8)  # back to the non-debug specialization
