"""Early returns and constexpr-annotated helper parameters (issue 20), and the
differential control-flow fuzzer (tests/fuzz/control_flow.py) against
Triton's interpreter: a short run of fixed seeds, and every case the fuzzer
ever found, kept in tests/fuzz/control_flow_cases/."""
import glob
import importlib.util
import os
import sys

import numpy as np
import pytest

import zetile
from zt_testutil import have_tool, opencl_cpu_or_skip, run_result, spirv_val

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "tests", "fuzz"))
import control_flow as fuzz  # noqa: E402
import control_flow_kernels as K  # noqa: E402

KERNELS_SRC = os.path.join(HERE, "control_flow_kernels.py")


def _triton_kernels(tmp_path_factory):
    """control_flow_kernels.py run by Triton's interpreter (imports swapped back)."""
    os.environ["TRITON_INTERPRET"] = "1"
    pytest.importorskip("triton")
    src = open(KERNELS_SRC).read()
    for z, t in zip(fuzz.ZETILE_HEADER.splitlines(), fuzz.TRITON_HEADER.splitlines()):
        assert z in src
        src = src.replace(z, t, 1)
    p = tmp_path_factory.mktemp("cf") / "control_flow_kernels_triton.py"
    p.write_text(src)
    spec = importlib.util.spec_from_file_location("control_flow_kernels_triton", p)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def T(tmp_path_factory):
    return _triton_kernels(tmp_path_factory)


def _launch(mod, kernel, grid, arrays, *scalars, **consts):
    """Runs mod.kernel on copies of `arrays` (torch tensors for Triton's
    interpreter, which takes no numpy arrays) and returns them as numpy."""
    if mod is K:
        args = [a.copy() for a in arrays]
    else:
        import torch
        args = [torch.from_numpy(a.copy()) for a in arrays]
    getattr(mod, kernel)[grid](*args, *scalars, **consts)
    return [np.asarray(a) for a in args]


def test_issue_reproducer():
    # The issue's program, verbatim: zetile stored nothing (the tile IR had no store).
    x = np.zeros(6, np.float32)
    K.issue_reproducer[(6,)](x, 3, C=True)
    np.testing.assert_array_equal(x, [1, 2, 3, 0, 0, 0])
    x = np.zeros(6, np.float32)
    K.issue_reproducer[(6,)](x, 3, C=False)
    np.testing.assert_array_equal(x, [1, 2, 3, 4, 5, 6])


def test_issue_reproducer_tile_ir_keeps_the_store():
    ck = zetile.compile(K.issue_reproducer, signature={"x": "*fp32", "n": "i32"},
                        constexprs={"C": True}, target="cpu", cached=False)
    assert "tile.store" in ck.asm["tile"]


@pytest.mark.parametrize("A", [False, True])
@pytest.mark.parametrize("B", [0, 1, 2])
def test_nested_returns_match_triton(T, A, B):
    out = np.full(12, -1, np.int32)
    got, want = (_launch(m, "nested_const_runtime", (12,), [out], 5, 7, A=A, B=B)[0] for m in (K, T))
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("LIMIT", [0, 4])
def test_helper_early_returns_in_loop_match_triton(T, LIMIT):
    n = 37
    x = np.arange(n, dtype=np.int32) * 3 - 20
    out = np.zeros(n, np.int32)
    got, want = (_launch(m, "helper_returns_in_loop", (3,), [x, out], n, LIMIT=LIMIT, BLOCK=16)[1]
                 for m in (K, T))
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("STAGE", [1, 2])
def test_constexpr_annotated_helper_param_takes_a_tensor(STAGE):
    out = np.zeros(32, np.int32)
    K.constexpr_annotated_tensor_param[(2,)](out, STAGE=STAGE, BLOCK=16)
    np.testing.assert_array_equal(out, np.arange(32) * STAGE)


@pytest.mark.parametrize("kernel,line", [
    ("return_in_static_range", "if i == 1:"),
    ("return_in_for", "if i == 2:"),
    ("return_in_while", "if i == 2:"),
])
def test_return_inside_a_loop_is_refused_with_its_line(kernel, line):
    # As in Triton (compiled): an early return cannot leave a loop. Refused
    # with the loop's source line, never compiled to something else.
    with pytest.raises(zetile.UnsupportedError) as e:
        getattr(K, kernel)[(1,)](np.zeros(4, np.int32), *([4] if kernel != "return_in_static_range" else []))
    msg = str(e.value)
    assert "Cannot have `return` statements inside `while` or `for`" in msg
    assert "control_flow_kernels.py" in msg
    assert "for i in" in msg or "while i < n" in msg


def test_pvc_build_keeps_the_store():
    if not have_tool("spirv-val"):
        pytest.skip("spirv-val is not installed")
    ck = zetile.compile(K.issue_reproducer, signature={"x": "*fp32", "n": "i32"},
                        constexprs={"C": True}, target="pvc", cached=False)
    spirv_val(ck.asm["spirv"])
    assert "tile.store" in ck.asm["tile"]


E5 = r"""
import json, numpy as np, zetile
import control_flow_kernels as K
x = np.zeros(6, np.float32)
K.issue_reproducer[(6,)](x, 3, C=True)
zetile.get_device().synchronize()
print("RESULT " + json.dumps(x.tolist()))
"""


def test_e5_pvc_spirv_on_opencl_cpu():
    opencl_cpu_or_skip()
    assert run_result(E5, path=HERE) == [1, 2, 3, 0, 0, 0]


# ------------------------------------------------------------------ fuzzer
@pytest.fixture(scope="module")
def runner(tmp_path_factory):
    pytest.importorskip("triton")
    return fuzz.Runner(str(tmp_path_factory.mktemp("cf-fuzz")))


CI_SEEDS = range(100, 125)


@pytest.mark.parametrize("seed", CI_SEEDS)
def test_fuzz_seed(runner, seed):
    msg = runner.run_case(fuzz.generate(seed), fuzz.arguments(seed), seed)
    assert msg is None, f"seed {seed}: {msg}\n{fuzz.generate(seed)}"


CASES = sorted(glob.glob(os.path.join(fuzz.CASES_DIR, "*.py")))


@pytest.mark.parametrize("path", CASES, ids=[os.path.basename(p) for p in CASES])
def test_fuzz_found_case(runner, path):
    src, runs, seed = fuzz.load_case(path)
    msg = runner.run_case(src, runs, seed)
    assert msg is None, f"{os.path.basename(path)}: {msg}"


def test_fuzz_cases_were_kept():
    # The cases the fuzzer found (against the front end before the fix) stay as tests.
    assert len(CASES) >= 5


def test_fuzz_runner_detects_a_difference(runner):
    # The comparison can fail: a module-level constant that differs between
    # the two imports makes the outputs differ, and the runner says where.
    src = fuzz.generate(3).replace(
        "    pid = tl.program_id(0)\n",
        "    pid = tl.program_id(0)\n    tl.store(OUT2 + pid, SIDE)\n", 1)
    src = "SIDE: tl.constexpr = 1 if triton.__name__ == 'zetile' else 0\n" + src
    msg = runner.run_case(src, fuzz.arguments(3), 3)
    assert msg is not None and "OUT2 differs" in msg
