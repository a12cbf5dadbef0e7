"""Templates read what `zetile tune` stored before their own defaults
(issue 15): a best config in the autotuning database for the GEMM template
and for SDPA, under the key `zetile tune gemm|sdpa` writes, is the config
the next call launches with; without one, the default is used."""
import json

import numpy as np
import pytest

import zetile
from zetile import runtime, tune_db
from zetile.ops import _kernels


@pytest.fixture
def db(tmp_path, monkeypatch):
    monkeypatch.setenv("ZETILE_AUTOTUNE_DB", str(tmp_path / "tune.sqlite"))
    _kernels.forget_tuned()
    yield tune_db.get_db()
    _kernels.forget_tuned()


def _store(db, kernel, key, best):
    dev = runtime.get_device()
    device, driver = tune_db.device_ids(runtime.info(dev))
    db.store(kernel="test", kernel_hash=tune_db.kernel_hash(kernel), key=json.dumps(key),
             configs_hash="x", device=device, driver=driver, target="cpu",
             best={"kwargs": best}, timings=[])


def test_gemm_uses_the_stored_config(db):
    import zetile.ops as ops
    g = _kernels.load("gemm")
    rng = np.random.default_rng(0)
    a = rng.standard_normal((64, 32)).astype(np.float32)
    b = rng.standard_normal((32, 48)).astype(np.float32)
    default = ops.gemm(a, b, plan=True).kwargs
    best = {"BLOCK_M": 16, "BLOCK_N": 64, "BLOCK_K": 64, "GROUP_M": 1}
    assert any(default[k] != v for k, v in best.items())
    _store(db, g.gemm_kernel, [64, 48, 32, "float32"], best)
    _kernels.forget_tuned()
    plan = ops.gemm(a, b, plan=True)
    assert {k: plan.kwargs[k] for k in best} == best
    np.testing.assert_allclose(plan.run(), a @ b, rtol=1e-5, atol=1e-5)
    # Another shape has no stored result: the default again.
    other = ops.gemm(a[:32], b, plan=True).kwargs
    assert other["BLOCK_M"] != 16 or other["BLOCK_K"] != 64


def test_sdpa_uses_the_stored_config(db):
    torch = pytest.importorskip("torch")
    import zetile.ops as ops
    t = _kernels.load("attention")
    q, k, v = (torch.randn(1, 2, 64, 64) for _ in range(3))
    default = ops.scaled_dot_product_attention(q, k, v, is_causal=True, plan=True).kwargs
    best = dict(default, BLOCK_M=16, BLOCK_N=16)
    best = {kk: best[kk] for kk in t.DEFAULT}
    _store(db, t.attn_fwd, [1, 2, 64, 64, 64, "float32", True], best)
    _kernels.forget_tuned()
    plan = ops.scaled_dot_product_attention(q, k, v, is_causal=True, plan=True)
    assert {kk: plan.kwargs[kk] for kk in best} == best
    ref = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
    out = plan.run()[0]  # (output, lse, max)
    torch.testing.assert_close(out, ref, rtol=1e-5, atol=1e-5)


def test_database_off_means_defaults(tmp_path, monkeypatch):
    import zetile.ops as ops
    monkeypatch.setenv("ZETILE_AUTOTUNE_DB", "off")
    _kernels.forget_tuned()
    a = np.ones((64, 32), np.float32)
    b = np.ones((32, 48), np.float32)
    assert ops.gemm(a, b, plan=True).kwargs["BLOCK_K"] == _kernels.load("gemm").DEFAULT["BLOCK_K"]
