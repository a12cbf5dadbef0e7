"""Packaging (issue 18): a C program builds against an installed zetile with
CMake's find_package and with pkg-config, and `pip wheel .` makes an abi3
wheel that carries the libraries and runs a kernel once installed."""
import os
import shutil
import subprocess
import sys
import textwrap
import zipfile

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
BUILD = os.path.join(ROOT, "build")


def _run(cmd, **kw):
    r = subprocess.run(cmd, capture_output=True, text=True, **kw)
    assert r.returncode == 0, f"{' '.join(cmd)}:\n{r.stdout}\n{r.stderr}"
    return r


@pytest.fixture(scope="module")
def prefix(tmp_path_factory):
    if not os.path.exists(os.path.join(BUILD, "build.ninja")):
        pytest.skip("no build/ tree (scripts/setup.sh builds it)")
    p = tmp_path_factory.mktemp("prefix")
    _run(["cmake", "--install", BUILD, "--prefix", str(p)])
    return p


def test_install_tree(prefix):
    for rel in ("lib/libzetile.so", "lib/libzetile.a", "lib/libzetile_compiler.so",
                "include/zetile/zetile.h", "include/zetile/api.h", "share/zetile/tile.irdl.mlir",
                "lib/cmake/zetile/zetileConfig.cmake", "lib/cmake/zetile/zetileConfigVersion.cmake",
                "lib/pkgconfig/zetile.pc"):
        assert (prefix / rel).exists(), rel


def _check_example_output(exe, tmp_path):
    env = dict(os.environ, ZETILE_CACHE_DIR=str(tmp_path / "cache"))
    out = _run([str(exe)], env=env).stdout
    assert "zetile 0.1" in out or "zetile " in out
    assert "1000 floats on the CPU target (compiled): 0 wrong" in out, out


def test_c_example_with_find_package(prefix, tmp_path):
    b = tmp_path / "b"
    _run(["cmake", "-S", os.path.join(ROOT, "examples", "c"), "-B", str(b),
          f"-DCMAKE_PREFIX_PATH={prefix}"])
    _run(["cmake", "--build", str(b)])
    _check_example_output(b / "vector_add", tmp_path)


def test_c_example_with_pkg_config(prefix, tmp_path):
    if not shutil.which("pkg-config"):
        pytest.skip("pkg-config is not installed")
    env = dict(os.environ, PKG_CONFIG_PATH=str(prefix / "lib" / "pkgconfig"))
    flags = _run(["pkg-config", "--cflags", "--libs", "zetile"], env=env).stdout.split()
    version = _run(["pkg-config", "--modversion", "zetile"], env=env).stdout.strip()
    import zetile
    assert version == zetile.__version__
    exe = tmp_path / "vector_add"
    _run(["cc", "-std=c11", "-D_GNU_SOURCE", os.path.join(ROOT, "examples", "c", "vector_add.c"),
          *flags, f"-Wl,-rpath,{prefix / 'lib'}", "-o", str(exe)])
    _check_example_output(exe, tmp_path)


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    try:
        import scikit_build_core  # noqa: F401
    except ImportError:
        pytest.skip("scikit-build-core is not installed (scripts/requirements.txt)")
    out = tmp_path_factory.mktemp("wheel")
    # No build isolation: the build backend comes from the venv, nothing is fetched.
    _run([sys.executable, "-m", "pip", "wheel", ROOT, "--no-deps", "--no-build-isolation",
          "-w", str(out)], env=dict(os.environ, CCACHE_NOHASHDIR="1"), timeout=1800)
    wheels = list(out.glob("zetile-*.whl"))
    assert len(wheels) == 1, wheels
    return wheels[0]


def test_wheel_is_abi3_with_its_libraries(wheel):
    assert "-cp310-abi3-" in wheel.name, wheel.name
    names = set(zipfile.ZipFile(wheel).namelist())
    for n in ("zetile/_zetile.abi3.so", "zetile/libzetile.so", "zetile/libzetile_compiler.so",
              "zetile/tile.irdl.mlir", "zetile/__init__.py", "zetile/language/core.py",
              "zetile/compiler/codegen.py", "_zetile_torch_hook.py",
              "zetile/stdlib-kernels/gemm.py", "zetile/stdlib-kernels/attention.py"):
        assert n in names, n
    ep = zipfile.ZipFile(wheel).read(
        [n for n in names if n.endswith("entry_points.txt")][0]).decode()
    assert "zetile = zetile.cli:main" in ep
    # torch's autoload finds the Inductor plugin's hook through this group.
    assert "[torch.backends]" in ep and "_zetile_torch_hook:autoload" in ep, ep


def test_installed_wheel_runs_a_kernel(wheel, tmp_path):
    target = tmp_path / "site"
    _run([sys.executable, "-m", "pip", "install", "--no-deps", "--target", str(target), str(wheel)])
    kernel = tmp_path / "k.py"
    kernel.write_text(textwrap.dedent("""
        import numpy as np
        import zetile
        import zetile.language as tl

        @zetile.jit
        def add(x, y, o, n, B: tl.constexpr):
            offs = tl.program_id(0) * B + tl.arange(0, B)
            m = offs < n
            tl.store(o + offs, tl.load(x + offs, mask=m) + tl.load(y + offs, mask=m), mask=m)

        x = np.arange(100, dtype=np.float32)
        o = np.zeros_like(x)
        add[(4,)](x, x, o, 100, B=32)
        assert (o == 2 * x).all()
        import zetile.ops   # the templates, from the installed package
        a = np.random.default_rng(0).standard_normal((40, 24)).astype(np.float32)
        np.testing.assert_allclose(zetile.ops.gemm(a, a.T), a @ a.T, rtol=1e-4, atol=1e-4)
        print("templates from", zetile.ops._kernels.stdlib_dir())
        print("from", zetile.__file__, zetile.__version__)
    """))
    # The installed copy comes first on the path, before the in-place package.
    env = dict(os.environ, PYTHONPATH=str(target), ZETILE_CACHE_DIR=str(tmp_path / "cache"))
    out = _run([sys.executable, str(kernel)], env=env, cwd=str(tmp_path)).stdout
    assert f"from {target}" in out, out
    assert f"templates from {target}" in out, out
