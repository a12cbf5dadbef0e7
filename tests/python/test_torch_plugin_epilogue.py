"""GEMM epilogues taken from the graph by zetile's torch.compile plugin
(issue 14): `Linear -> GELU -> + residual` is one zetile GEMM, epilogues
follow mm and bmm too, and where GEMMs are raced (ZETILE_INDUCTOR=cpu-race)
the fused GEMM is raced against the same chain in aten. Outputs against
eager; the generated code shows one zetile op and no Inductor kernel left
for the activation or the add."""
import pytest

torch = pytest.importorskip("torch")
import torch.nn.functional as F  # noqa: E402

from torch_plugin_util import compiled  # noqa: E402

GEMM = "torch.ops.zetile.gemm.default("


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
    for g, w in zip(got, want):
        torch.testing.assert_close(g, w, atol=tol, rtol=tol)


def test_linear_gelu_residual_is_one_gemm():
    torch.manual_seed(0)
    lin = torch.nn.Linear(32, 64)
    x, r = torch.randn(2, 12, 32), torch.randn(2, 12, 64)

    def f(x, r):
        return (F.gelu(lin(x)) + r,)

    got, code = compiled(f, x, r)
    with torch.no_grad():
        _close(got, f(x, r))
    calls = [ln for ln in code.splitlines() if "= torch.ops.zetile." in ln]
    assert len(calls) == 1 and GEMM in calls[0], code
    # Bias, activation and residual are all in the one call: nothing else runs.
    assert "'gelu', reinterpret_tensor(" in code, code
    assert "cpp_fused" not in code and "extern_kernels." not in code, code


def test_mm_and_bmm_epilogues():
    torch.manual_seed(0)
    w = torch.randn(32, 48)
    x, y, z = torch.randn(24, 32), torch.randn(3, 16, 32), torch.randn(3, 32, 24)
    y2, r = torch.randn(3, 16, 32), torch.randn(3, 16, 24)

    def f(x, w, y, z, y2, r):
        # mm -> relu; bmm -> silu (decomposed by Inductor) -> + a broadcast
        # residual; bmm -> gelu (tanh) -> + a full residual.
        return (torch.relu(x @ w), F.silu(torch.bmm(y, z)) + y[:, :, :1],
                F.gelu(torch.bmm(y2, z), approximate="tanh") + r)

    got, code = compiled(f, x, w, y, z, y2, r)
    with torch.no_grad():
        _close(got, f(x, w, y, z, y2, r))
    assert code.count(GEMM) == 3, code
    assert "'gelu_tanh', arg" in code, code
    assert "'relu')" in code and "'silu', reinterpret_tensor(" in code, code
    assert "cpp_fused" not in code, code


def test_widening_residual_is_not_taken():
    """An add that broadcasts the GEMM's output to a larger shape is no
    epilogue (zetile's residual broadcasts to the output, not the output to
    it): Inductor keeps the add."""
    torch.manual_seed(0)
    w = torch.randn(32, 24)
    x, r = torch.randn(16, 32), torch.randn(2, 16, 24)

    def f(x, w, r):
        return (torch.relu(x @ w) + r,)

    got, code = compiled(f, x, w, r)
    with torch.no_grad():
        _close(got, f(x, w, r))
    assert "'relu')" in code and "cpp_fused" in code, code


def test_epilogues_raced(monkeypatch):
    """cpu-race: the fused GEMM and the same chain in aten are both timed;
    whichever wins, the chain is one call and equals eager."""
    from torch._inductor import select_algorithm
    monkeypatch.setenv("ZETILE_INDUCTOR", "cpu-race")
    seen = []
    orig = select_algorithm.AlgorithmSelectorCache.__call__

    def spy(self, name, choices, *a, **kw):
        seen.append((name, [c.name for c in choices]))
        return orig(self, name, choices, *a, **kw)

    monkeypatch.setattr(select_algorithm.AlgorithmSelectorCache, "__call__", spy)
    torch.manual_seed(0)
    lin = torch.nn.Linear(32, 64)
    x, r = torch.randn(2, 12, 32), torch.randn(2, 12, 64)

    def f(x, r):
        return (F.gelu(lin(x)) + r,)

    got, code = compiled(f, x, r)
    with torch.no_grad():
        _close(got, f(x, r))
    (name, names), = seen
    assert name == "zetile_gemm_epilogue", seen
    assert sorted(n.split("_zetile_")[0] for n in names) == ["zetile_epilogue_aten",
                                                             "zetile_epilogue_gemm"], names
    assert ("torch.ops.zetile.gemm_epilogue.default(" in code
            or "torch.ops.zetile.gemm_epilogue_aten.default(" in code), code
    assert "roles='bias,residual', activation='gelu'" in code, code
    assert "cpp_fused" not in code, code


@pytest.mark.parametrize("op", ["gemm_epilogue", "gemm_epilogue_aten"])
def test_epilogue_ops_agree(op):
    """Both sides of the race compute act(a @ b + bias) + residual."""
    torch.manual_seed(0)
    a, b, bias, res = torch.randn(8, 16), torch.randn(16, 12), torch.randn(12), torch.randn(8, 12)
    fn = getattr(torch.ops.zetile, op)
    want = F.gelu(a @ b + bias, approximate="tanh") + res
    torch.testing.assert_close(fn(a, b, bias, res, "bias,residual", "gelu_tanh"), want,
                               atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(fn(a, b, res, None, "residual", ""), a @ b + res,
                               atol=1e-5, rtol=1e-5)
    with pytest.raises(ValueError, match="roles"):
        fn(a, b, bias, None, "bias,residual", "")
