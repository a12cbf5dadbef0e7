"""zetile's torch.compile plugin (issue 14) on torch's CPU build, with
ZETILE_INDUCTOR=cpu: Inductor's generated code calls zetile's ops and the
results equal eager; what zetile does not take falls back with its reason
logged; the autoload hook is cheap, lazy and never breaks `import torch`."""
import logging

import pytest

torch = pytest.importorskip("torch")
import torch.nn.functional as F  # noqa: E402

from torch_plugin_util import compiled, entry_point_dir, pyproject_entry_point, run_python  # noqa: E402

GEMM = "torch.ops.zetile.gemm.default("
SDPA = "torch.ops.zetile.sdpa.default("
LOGGER = "torch._inductor.zetile"


@pytest.fixture(autouse=True)
def plugin(monkeypatch):
    monkeypatch.setenv("ZETILE_INDUCTOR", "cpu")
    import zetile.inductor
    zetile.inductor.install()
    with torch._inductor.config.patch(fx_graph_cache=False, autotune_local_cache=False,
                                      freezing=False):
        yield
    torch._dynamo.reset()


def _close(got, want, tol=1e-5):
    if isinstance(want, (tuple, list)):
        assert len(got) == len(want)
        for g, w in zip(got, want):
            _close(g, w, tol)
        return
    torch.testing.assert_close(got, want, atol=tol, rtol=tol)


def test_gemm_ops():
    torch.manual_seed(0)
    a, b, bias = torch.randn(16, 32), torch.randn(32, 24), torch.randn(24)
    x, y, z = torch.randn(3, 16, 32), torch.randn(3, 32, 24), torch.randn(3, 16, 24)

    def f(a, b, bias, x, y, z):
        return a @ b, torch.addmm(bias, a, b, alpha=0.5), torch.bmm(x, y), torch.baddbmm(z, x, y)

    got, code = compiled(f, a, b, bias, x, y, z)
    with torch.no_grad():
        want = f(a, b, bias, x, y, z)
    _close(got, want)
    assert code.count(GEMM) == 4, code
    for stock in ("extern_kernels.mm(", "extern_kernels.addmm(", "extern_kernels.bmm(",
                  "extern_kernels.baddbmm("):
        assert stock not in code
    # The 1-D bias reaches zetile as a broadcast (stride 0) view, not a copy.
    assert "(16, 24), (0, 1), 0)" in code


def test_linear_gelu_block():
    torch.manual_seed(0)
    m = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.GELU(), torch.nn.Linear(64, 16),
                            torch.nn.ReLU())
    x = torch.randn(2, 12, 32)
    got, code = compiled(m, x)
    with torch.no_grad():
        want = m(x)
    _close(got, want)
    assert code.count(GEMM) == 2, code
    # The activations are the GEMMs' epilogues, not kernels of their own.
    assert "'gelu')" in code and "'relu')" in code, code
    assert "cpp_fused" not in code and "erf(" not in code, code


def test_sdpa_cases():
    torch.manual_seed(0)
    B, H, L, S, E = 2, 4, 40, 56, 32
    q, k, v = torch.randn(B, H, L, E), torch.randn(B, H, S, E), torch.randn(B, H, S, E)
    kg, vg = torch.randn(B, 2, S, E), torch.randn(B, 2, S, E)       # GQA: 2 kv heads
    q2 = torch.randn(B, H, S, E)
    fmask = torch.randn(L, S)
    bmask = torch.rand(B, 1, L, S) > 0.3
    bmask[..., 0] = True

    def f(q, k, v, q2, kg, vg, fmask, bmask):
        return (F.scaled_dot_product_attention(q2, k, v, is_causal=True),
                F.scaled_dot_product_attention(q, k, v, attn_mask=fmask, scale=0.3),
                F.scaled_dot_product_attention(q, k, v, attn_mask=bmask),
                F.scaled_dot_product_attention(q, kg, vg, enable_gqa=True),
                F.scaled_dot_product_attention(q, k, v, is_causal=True))   # Lq != Lk, causal

    args = (q, k, v, q2, kg, vg, fmask, bmask)
    got, code = compiled(f, *args)
    with torch.no_grad():
        want = f(*args)
    _close(got, want)
    assert code.count(SDPA) == 5, code
    assert "_scaled_dot_product_flash_attention_for_cpu.default(" not in code


def test_transformer_block():
    torch.manual_seed(0)

    class Block(torch.nn.Module):
        def __init__(self, d=64, heads=4):
            super().__init__()
            self.h = heads
            self.ln1, self.ln2 = torch.nn.LayerNorm(d), torch.nn.LayerNorm(d)
            self.qkv, self.proj = torch.nn.Linear(d, 3 * d), torch.nn.Linear(d, d)
            self.mlp = torch.nn.Sequential(torch.nn.Linear(d, 4 * d), torch.nn.GELU(),
                                           torch.nn.Linear(4 * d, d))

        def forward(self, x):
            B, T, D = x.shape
            q, k, v = self.qkv(self.ln1(x)).split(D, dim=-1)
            q, k, v = (t.view(B, T, self.h, D // self.h).transpose(1, 2) for t in (q, k, v))
            a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + self.proj(a.transpose(1, 2).reshape(B, T, D))
            return x + self.mlp(self.ln2(x))

    m = Block().eval()
    x = torch.randn(2, 48, 64)
    got, code = compiled(m, x)
    with torch.no_grad():
        want = m(x)
    _close(got, want, 2e-5)
    assert code.count(SDPA) == 1 and code.count(GEMM) == 4, code


def test_unsupported_falls_back_with_reason(caplog):
    a, b = torch.randn(16, 32, dtype=torch.float64), torch.randn(32, 24, dtype=torch.float64)
    q = torch.randn(1, 2, 16, 16, dtype=torch.float64)
    with caplog.at_level(logging.INFO, logger=LOGGER):
        got, code = compiled(lambda a, b, q: (a @ b, F.scaled_dot_product_attention(q, q, q)),
                             a, b, q)
    _close(got, (a @ b, F.scaled_dot_product_attention(q, q, q)))
    assert "zetile" not in code
    assert "extern_kernels.mm(" in code
    msgs = [r.getMessage() for r in caplog.records if r.name == LOGGER]
    assert any("aten.mm falls back to Inductor: dtype torch.float64" in m for m in msgs), msgs
    assert any("_scaled_dot_product_flash_attention_for_cpu" in m and "float64" in m
               for m in msgs), msgs


@pytest.mark.parametrize("mode", ["off", "on"])
def test_modes_that_leave_cpu_alone(monkeypatch, caplog, mode):
    """off: nothing; on (the default): only xpu tensors go to zetile."""
    monkeypatch.setenv("ZETILE_INDUCTOR", mode)
    a, b = torch.randn(16, 32), torch.randn(32, 24)
    with caplog.at_level(logging.INFO, logger=LOGGER):
        got, code = compiled(lambda a, b: a @ b, a, b)
    _close(got, a @ b)
    assert GEMM not in code and "extern_kernels.mm(" in code
    msgs = [r.getMessage() for r in caplog.records if r.name == LOGGER]
    assert any("device cpu is not routed to zetile" in m for m in msgs), msgs


def test_race_mode_benchmarks_both(monkeypatch):
    """cpu-race: zetile's GEMM is one choice among Inductor's; both are timed
    (the winner varies on CPU, so only correctness and the race are checked)."""
    from torch._inductor import select_algorithm
    monkeypatch.setenv("ZETILE_INDUCTOR", "cpu-race")
    seen = []
    orig = select_algorithm.AlgorithmSelectorCache.__call__

    def spy(self, name, choices, *a, **kw):
        seen.append((name, [c.name for c in choices]))
        return orig(self, name, choices, *a, **kw)

    monkeypatch.setattr(select_algorithm.AlgorithmSelectorCache, "__call__", spy)
    a, b = torch.randn(32, 64), torch.randn(64, 48)
    got, code = compiled(lambda a, b: a @ b, a, b)
    _close(got, a @ b)
    assert GEMM in code or "extern_kernels.mm(" in code
    (name, names), = seen
    assert name == "zetile_mm" and len(names) == 2
    assert any(n.startswith("zetile_gemm_zetile_") for n in names), names


def test_post_grad_pass_key_has_version_and_mode(monkeypatch):
    import zetile
    import zetile.inductor as zi
    p = zi._PostGradPass.instance
    cur = torch._inductor.config.post_grad_custom_post_pass
    assert p is cur or p in cur
    monkeypatch.setenv("ZETILE_INDUCTOR", "cpu")
    u_cpu = p.uuid()
    monkeypatch.setenv("ZETILE_INDUCTOR", "off")
    assert p.uuid() != u_cpu
    assert zetile.__version__ in zi.settings.cache_tag()


# ----------------------------------------------------------------- the hook
def test_pyproject_declares_the_hook():
    import importlib
    mod, fn = pyproject_entry_point().split(":")
    assert callable(getattr(importlib.import_module(mod), fn))


def test_hook_never_raises(monkeypatch):
    import _zetile_torch_hook as hook
    import zetile.inductor

    def boom(module=None):
        raise RuntimeError("broken install")

    monkeypatch.setattr(zetile.inductor, "install", boom)
    monkeypatch.setattr(hook, "error", None)
    hook._install(None)                       # what the finder calls after lowering loads
    assert isinstance(hook.error, RuntimeError)
    monkeypatch.setattr(hook.sys, "meta_path", None)   # anything inside the hook failing
    monkeypatch.setattr(hook, "_finder", None)
    monkeypatch.setitem(hook.sys.modules, hook.TARGET, None)
    monkeypatch.delitem(hook.sys.modules, hook.TARGET)
    hook.autoload()
    assert hook.error is not None


_AUTOLOAD = """
    import sys, time
    import torch
    import _zetile_torch_hook as hook
    finder = any(type(f).__name__ == "_Finder" for f in sys.meta_path)
    print("finder", finder, "zetile", "zetile" in sys.modules,
          "lowering", "torch._inductor.lowering" in sys.modules, "error", hook.error)
    if finder:
        from torch._inductor.utils import run_and_get_code
        a, b = torch.randn(16, 32), torch.randn(32, 24)
        r, code = run_and_get_code(torch.compile(lambda a, b: a @ b), a, b)
        assert torch.allclose(r, a @ b, atol=1e-5)
        print("installed", hook.installed, "gemm", "torch.ops.zetile.gemm.default(" in code[0])
"""


def test_autoload_through_the_entry_point(tmp_path):
    ep = entry_point_dir(tmp_path)
    env = {"PYTHONPATH": str(ep), "ZETILE_INDUCTOR": "cpu", "ZETILE_DEBUG": "inductor",
           "TORCHINDUCTOR_CACHE_DIR": str(tmp_path / "inductor")}
    rc, out, err = run_python(_AUTOLOAD, env)
    assert rc == 0, err
    # import torch installed the finder only: neither zetile nor Inductor's lowering loaded.
    assert "finder True zetile False lowering False error None" in out, out + err
    assert "installed True gemm True" in out, out + err
    # ZETILE_DEBUG=inductor prints what zetile took, once (not again through torch's logging).
    assert err.count("zetile.inductor: aten.mm -> torch.ops.zetile.gemm") == 1, err


@pytest.mark.parametrize("off", [{"TORCH_DEVICE_BACKEND_AUTOLOAD": "0"}, {"ZETILE_INDUCTOR": "off"}])
def test_autoload_switched_off(tmp_path, off):
    env = {"PYTHONPATH": str(entry_point_dir(tmp_path)), **off}
    rc, out, err = run_python(_AUTOLOAD, env)
    assert rc == 0, err
    assert "finder False zetile False" in out, out + err
