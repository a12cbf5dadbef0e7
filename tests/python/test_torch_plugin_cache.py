"""zetile's torch.compile plugin and Inductor's caches across processes
(issue 14): processes sharing one TORCHINDUCTOR_CACHE_DIR, the plugin
installed only by torch's autoload (a torch.backends entry point; the script
never imports zetile).
- a graph compiled without zetile (ZETILE_INDUCTOR=off) is not reused once
  zetile is on: the plugin's settings are in the FX-graph-cache key;
- a second process with zetile on hits the cache and runs the cached code,
  which calls torch.ops.zetile.* ops the hook registered before it ran."""
import json

import pytest

pytest.importorskip("torch")

from torch_plugin_util import entry_point_dir, run_python  # noqa: E402

SCRIPT = """
    import glob, json, os, sys
    import torch
    import torch.nn.functional as F
    from torch._dynamo.utils import counters
    from torch.nn.attention.flex_attention import create_block_mask, flex_attention

    torch.manual_seed(0)
    a, b, bias = torch.randn(16, 32), torch.randn(32, 24), torch.randn(24)
    q, k, v = (torch.randn(1, 2, 72, 16) for _ in range(3))
    bm = create_block_mask(lambda b, h, qi, ki: qi >= ki, None, None, 72, 72, device="cpu")

    def f(a, b, bias, q, k, v):
        return (torch.addmm(bias, a, b), F.scaled_dot_product_attention(q, k, v, is_causal=True),
                flex_attention(q, k, v, block_mask=bm))

    with torch.no_grad():
        got = torch.compile(f, fullgraph=True)(a, b, bias, q, k, v)
        want = f(a, b, bias, q, k, v)
    ok = all(torch.allclose(g, w, atol=2e-5, rtol=2e-5) for g, w in zip(got, want))
    code = ""
    for p in glob.glob(os.path.join(os.environ["TORCHINDUCTOR_CACHE_DIR"], "**", "*.py"),
                       recursive=True):
        code += open(p).read()
    print(json.dumps({"hit": counters["inductor"]["fxgraph_cache_hit"],
                      "miss": counters["inductor"]["fxgraph_cache_miss"], "ok": ok,
                      "zetile_ops_in_cache": code.count("torch.ops.zetile."),
                      "zetile_imported_by_hook": "zetile.inductor" in sys.modules}))
"""


def _run(env):
    rc, out, err = run_python(SCRIPT, env)
    assert rc == 0, err[-4000:]
    return json.loads(out.strip().splitlines()[-1])


def test_second_process_runs_the_cached_graph(tmp_path):
    env = {"PYTHONPATH": str(entry_point_dir(tmp_path)),
           "TORCHINDUCTOR_CACHE_DIR": str(tmp_path / "inductor")}
    stock = _run({**env, "ZETILE_INDUCTOR": "off"})
    # (Not stock["ok"]: stock Inductor's own flex_attention on some CPUs is
    # off from eager by far more than the tolerance, 2.33 on an AMD EPYC
    # with AVX2 only (torch 2.13, session 16) - torch's numerics, not the
    # cache behaviour this test is about. zetile's runs below must be right.)
    assert stock["miss"] == 1 and stock["zetile_ops_in_cache"] == 0, stock

    first = _run({**env, "ZETILE_INDUCTOR": "cpu"})
    # A miss, not the stock graph: zetile's version and mode are in the key.
    assert first["ok"] and first["miss"] == 1 and first["hit"] == 0, first
    assert first["zetile_ops_in_cache"] >= 3 and first["zetile_imported_by_hook"], first

    second = _run({**env, "ZETILE_INDUCTOR": "cpu"})
    assert second["ok"] and second["hit"] == 1 and second["miss"] == 0, second
    assert second["zetile_imported_by_hook"], second
