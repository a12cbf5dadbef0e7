"""@zetile.autotune / zetile.Config / @zetile.heuristics with Triton's
semantics, and zetile.testing's helpers, on the CPU target (E4)."""
import threading

import numpy as np
import pytest

import zetile
import zetile.language as tl
from zetile import testing

FAST = dict(warmup=1, rep=3)   # milliseconds: the tests check choices, not speed


@pytest.fixture(autouse=True)
def cpu_and_db(tmp_path, monkeypatch):
    zetile.set_device("cpu")
    monkeypatch.setenv("ZETILE_AUTOTUNE_DB", str(tmp_path / "tune.sqlite"))


@zetile.jit
def accumulate_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    # out += x: running it twice gives a different answer than once.
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out_ptr + offs, tl.load(out_ptr + offs, mask=m) + tl.load(x_ptr + offs, mask=m),
             mask=m)


def _grid(n):
    return lambda META: (zetile.cdiv(n, META["BLOCK"]),)


CONFIGS = [zetile.Config({"BLOCK": b}, num_warps=w) for b, w in ((64, 1), (256, 2), (1024, 4))]


def _fake_bench(order):
    """A do_bench that ranks configs by BLOCK through `order` (no timing):
    lets the tests know which config must win."""
    def bench(kernel_call, quantiles):
        kernel_call()
        b = bench.current
        return [order[b], order[b], order[b]]
    return bench


def test_restore_value_gives_the_result_of_one_run():
    n = 3000
    x = np.random.default_rng(0).random(n).astype(np.float32)
    out = np.full(n, 5.0, np.float32)
    k = zetile.autotune(CONFIGS, key=["n"], restore_value=["out_ptr"], **FAST)(accumulate_kernel)
    k[_grid(n)](x, out, n)
    np.testing.assert_allclose(out, 5.0 + x, rtol=1e-6)
    assert k.tuning_source == "benchmark"
    assert len(k.configs_timings) == 3
    # Without restore_value the tuning runs would have accumulated many times.
    out2 = np.full(n, 5.0, np.float32)
    k2 = zetile.autotune(CONFIGS, key=["n"], cache_results=False, **FAST)(accumulate_kernel)
    k2[_grid(n)](x, out2, n)
    assert (out2 > 5.0 + x + 1e-3).any()


def test_reset_to_zero_gives_the_result_of_one_run_from_zero():
    n = 1000
    x = np.random.default_rng(1).random(n).astype(np.float32)
    out = np.full(n, 7.0, np.float32)
    k = zetile.autotune(CONFIGS, key=["n"], reset_to_zero=["out_ptr"], **FAST)(accumulate_kernel)
    k[_grid(n)](x, out, n)
    np.testing.assert_allclose(out, x, rtol=1e-6)


def test_best_config_is_the_fastest_and_key_changes_retune():
    n = 512
    x = np.ones(n, np.float32)
    out = np.zeros(n, np.float32)
    bench = _fake_bench({64: 3.0, 256: 1.0, 1024: 2.0})
    seen = []

    def pre(nargs, reset_only=False):   # Triton's pre_hook signature
        if not reset_only:
            bench.current = nargs["BLOCK"]
            seen.append(nargs["BLOCK"])
    k = zetile.autotune(CONFIGS, key=["n"], pre_hook=pre, do_bench=bench,
                        cache_results=False)(accumulate_kernel)
    k[_grid(n)](x, out, n)
    assert k.best_config.kwargs == {"BLOCK": 256} and k.best_config.num_warps == 2
    assert sorted(set(seen)) == [64, 256, 1024]
    seen.clear()
    k[_grid(n)](x, out, n)           # same key: no tuning, runs the best config
    assert k.tuning_source == "memory" and seen == []
    bench.__dict__["current"] = None
    k[_grid(n + 1)](np.ones(n + 1, np.float32), np.zeros(n + 1, np.float32), n + 1)
    assert k.tuning_source == "benchmark" and sorted(set(seen)) == [64, 256, 1024]


def test_prune_configs_by_early_prune_and_perf_model():
    n = 256
    x = np.ones(n, np.float32)
    timed = []

    def bench(kernel_call, quantiles):
        kernel_call()
        return [1.0, 1.0, 1.0]

    def pre(nargs, reset_only=False):
        timed.append(nargs["BLOCK"])

    def early(configs, named_args, **kwargs):
        assert named_args["n"] == n
        return [c for c in configs if c.kwargs["BLOCK"] >= 256]

    def model(**kw):
        return {256: 2.0, 1024: 1.0}[kw["BLOCK"]]
    k = zetile.autotune(CONFIGS, key=["n"], pre_hook=pre, do_bench=bench, cache_results=False,
                        prune_configs_by={"early_config_prune": early, "perf_model": model,
                                          "top_k": 1})(accumulate_kernel)
    out = np.zeros(n, np.float32)
    k[_grid(n)](x, out, n)
    # One config left after pruning: no benchmark at all, as in Triton.
    assert timed == [] and k.best_config.kwargs == {"BLOCK": 1024}
    np.testing.assert_allclose(out, x)
    k2 = zetile.autotune(CONFIGS, key=["n"], do_bench=bench, cache_results=False,
                         prune_configs_by={"early_config_prune": lambda c, a, **kw: []}
                         )(accumulate_kernel)
    with pytest.raises(zetile.AutotunerError, match="No valid autotuner configs"):
        k2[_grid(n)](x, out, n)


def test_conflicting_meta_parameter_is_refused():
    n = 64
    k = zetile.autotune(CONFIGS, key=["n"], cache_results=False, **FAST)(accumulate_kernel)
    with pytest.raises(ValueError, match="Conflicting meta-parameters: BLOCK"):
        k[(1,)](np.ones(n, np.float32), np.zeros(n, np.float32), n, BLOCK=64)


def test_config_pre_hook_and_post_hook_see_every_argument():
    n = 128
    calls = []

    def cfg_hook(nargs):
        calls.append(("config", nargs["BLOCK"], nargs["n"]))

    def post(nargs, exception):
        calls.append(("post", exception))
    cfgs = [zetile.Config({"BLOCK": 64}, pre_hook=cfg_hook), zetile.Config({"BLOCK": 128})]
    k = zetile.autotune(cfgs, key=["n"], post_hook=post, cache_results=False,
                        **FAST)(accumulate_kernel)
    k[_grid(n)](np.ones(n, np.float32), np.zeros(n, np.float32), n)
    assert ("config", 64, n) in calls and ("post", None) in calls


def test_failing_config_is_skipped_and_all_failing_is_an_error():
    @zetile.jit
    def needs_pow2(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)   # tl.arange needs a power of 2
        tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)
    n = 64
    x = np.arange(n, dtype=np.float32)
    out = np.zeros(n, np.float32)
    k = zetile.autotune([zetile.Config({"BLOCK": 96}), zetile.Config({"BLOCK": 64})], key=["n"],
                        cache_results=False, **FAST)(needs_pow2)
    k[(1,)](x, out, n)
    assert k.best_config.kwargs == {"BLOCK": 64}
    assert k.configs_timings[zetile.Config({"BLOCK": 96})][0] == float("inf")
    np.testing.assert_allclose(out, x)
    bad = zetile.autotune([zetile.Config({"BLOCK": 96}), zetile.Config({"BLOCK": 48})], key=["n"],
                          cache_results=False, **FAST)(needs_pow2)
    with pytest.raises(zetile.AutotunerError, match="no config compiled"):
        bad[(1,)](x, out, n)


def test_heuristics_under_autotune():
    @zetile.autotune([zetile.Config({"BLOCK": 64}), zetile.Config({"BLOCK": 128})], key=["n"],
                     cache_results=False, **FAST)
    @zetile.heuristics({"EVEN": lambda a: a["n"] % a["BLOCK"] == 0})
    @zetile.jit
    def scale(x_ptr, out_ptr, n, BLOCK: tl.constexpr, EVEN: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        if EVEN:
            tl.store(out_ptr + offs, tl.load(x_ptr + offs) * 2)
        else:
            tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 3, mask=offs < n)
    for n, factor in ((256, 2), (200, 3)):
        x = np.arange(n, dtype=np.float32)
        out = np.zeros(n, np.float32)
        scale[_grid(n)](x, out, n)
        np.testing.assert_allclose(out, factor * x)


def test_config_identity_and_str():
    a = zetile.Config({"BLOCK": 64}, num_warps=4, num_stages=2, grf_mode="large")
    assert a == zetile.Config({"BLOCK": 64}, num_warps=4, num_stages=2, grf_mode="large")
    assert a != zetile.Config({"BLOCK": 64}, num_warps=8, num_stages=2, grf_mode="large")
    assert "BLOCK: 64" in str(a) and "num_warps: 4" in str(a) and "grf_mode: large" in str(a)
    assert a.all_kwargs() == {"BLOCK": 64, "num_warps": 4, "num_stages": 2, "grf_mode": "large"}
    with pytest.raises(ValueError):
        zetile.Config({}, grf_mode="huge")


def test_do_bench_and_assert_close():
    n = 1 << 14
    x = np.ones(n, np.float32)
    out = np.zeros(n, np.float32)

    def call():
        accumulate_kernel[_grid(n)](x, out, n, BLOCK=1024)
    med, lo, hi = testing.do_bench(call, warmup=1, rep=5, quantiles=(0.5, 0.2, 0.8))
    assert 0 < lo <= med <= hi
    allt = testing.do_bench(call, warmup=1, rep=5, return_mode="all")
    assert len(allt) >= 1 and all(t > 0 for t in allt)
    testing.assert_close(np.float32(1.0), 1.005)
    with pytest.raises(AssertionError):
        testing.assert_close(np.ones(4), np.ones(4) * 1.1)
    testing.assert_close(np.ones(4), np.ones(4) * 1.1, atol=0, rtol=0.2)


def test_perf_report_table_and_svg(tmp_path):
    @testing.perf_report(testing.Benchmark(x_names=["n"], x_vals=[256, 1024], line_arg="impl",
                                           line_vals=["a", "b"], line_names=["A", "B"],
                                           plot_name="toy", args={"scale": 2.0},
                                           ylabel="ms"))
    def bench(n, impl, scale):
        return (n * scale / 1000, n / 1000, n * 3 / 1000) if impl == "a" else n / 100
    df = bench.run(print_data=True, save_path=str(tmp_path), return_df=True)
    assert list(df["A"]) == [0.512, 2.048]
    files = sorted(p.name for p in tmp_path.iterdir())
    assert "toy.csv" in files and any(f.startswith("toy.") and f != "toy.csv" for f in files)
    plot = [p for p in tmp_path.iterdir() if p.name.startswith("toy.") and p.suffix != ".csv"][0]
    assert plot.stat().st_size > 200
    if plot.suffix == ".svg":   # written by zetile itself (no matplotlib): one line per series
        import xml.etree.ElementTree as ET
        lines = list(ET.parse(str(plot)).getroot().iter("{http://www.w3.org/2000/svg}polyline"))
        assert len(lines) == 2 and all(len(l.get("points").split()) == 2 for l in lines)


def test_two_threads_compile_concurrently():
    # The extension releases the GIL around zt_compile: two threads compiling
    # distinct specializations must both succeed (and give right numbers).
    @zetile.jit
    def mul(x_ptr, out_ptr, n, F: tl.constexpr, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * F, mask=offs < n)
    errors, results = [], {}
    n = 300

    def work(f):
        try:
            x = np.arange(n, dtype=np.float32)
            out = np.zeros(n, np.float32)
            for block in (64, 128):
                ck = zetile.compile(mul, signature={"x_ptr": "*fp32", "out_ptr": "*fp32",
                                                    "n": "i32"},
                                    constexprs={"F": f, "BLOCK": block}, target="cpu",
                                    cached=False)
                assert "llvm" in ck.asm
            mul[(zetile.cdiv(n, 64),)](x, out, n, F=f, BLOCK=64)
            results[f] = out
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)
    ts = [threading.Thread(target=work, args=(f,)) for f in (2, 3)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not errors, errors
    for f in (2, 3):
        np.testing.assert_allclose(results[f], f * np.arange(n, dtype=np.float32))


def test_xe_knobs_reach_the_compiler_and_tune_on_opencl_cpu():
    # zetile's own Config knobs: grf_mode picks IGC's register-file option,
    # compat the path without 2D block IO; each is its own specialization.
    from zt_testutil import opencl_cpu_or_skip
    opencl_cpu_or_skip()
    n = 256
    x = np.arange(n, dtype=np.float32)
    out = np.zeros(n, np.float32)
    big = accumulate_kernel.warmup(x, out, n, BLOCK=64, grf_mode="large", device="opencl:cpu")
    small = accumulate_kernel.warmup(x, out, n, BLOCK=64, grf_mode="default", device="opencl:cpu")
    assert big.metadata.get("igc_options") == "-ze-opt-large-register-file"
    assert small.metadata.get("igc_options", "") == ""
    compat = accumulate_kernel.warmup(x, out, n, BLOCK=64, compat=True, device="opencl:cpu")
    assert compat is not accumulate_kernel.warmup(x, out, n, BLOCK=64, compat=False,
                                                  device="opencl:cpu")
    cfgs = [zetile.Config({"BLOCK": 64}, num_warps=1, grf_mode="large"),
            zetile.Config({"BLOCK": 128}, num_warps=1, grf_mode="default", compat=True)]
    k = zetile.autotune(cfgs, key=["n"], restore_value=["out_ptr"], **FAST)(accumulate_kernel)
    k[_grid(n)](x, out, n, device="opencl:cpu")
    np.testing.assert_allclose(out, x)
    assert k.best_config in cfgs and len(k.configs_timings) == 2


def test_gpu_flush_path_writes_the_whole_buffer():
    # The flush a GPU gets (a zetile kernel writing a device buffer), run on
    # OpenCL's CPU device, the one place here that executes device kernels.
    from zt_testutil import opencl_cpu_or_skip
    opencl_cpu_or_skip()
    f = testing._Flusher(zetile.get_device("opencl:cpu"), host=False, nbytes=(1 << 20) + 12)
    f()
    f()
    a = f.buf.numpy()
    assert a.size == (1 << 18) + 3 and (a == 2).all()


def test_amd_options_in_config_kwargs_are_dropped():
    # Triton's tutorial 03 picks its HIP configs (with waves_per_eu) on any
    # non-CUDA device: they must launch on zetile too.
    n = 300
    x = np.arange(n, dtype=np.float32)
    out = np.zeros(n, np.float32)
    cfgs = [zetile.Config({"BLOCK": 64, "waves_per_eu": 2}, num_warps=4, num_stages=2),
            zetile.Config({"BLOCK": 128, "waves_per_eu": 3, "kpack": 2}, num_warps=4)]
    k = zetile.autotune(cfgs, key=["n"], reset_to_zero=["out_ptr"], **FAST)(accumulate_kernel)
    k[_grid(n)](x, out, n)
    np.testing.assert_allclose(out, x)
