"""Packaging (issue 18): a C program builds against an installed zetile with
CMake's find_package and with pkg-config, `pip wheel .` makes an abi3
wheel that carries the libraries and the compile worker and runs a kernel
once installed, and `pip install -e` and `pip install` of a fresh clone of the
committed tree into fresh virtual environments work (a kernel, `zetile info`,
the torch.backends entry point, the installed compile worker)."""
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
                "lib/pkgconfig/zetile.pc", "lib/zetile-compile-worker"):
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
              "zetile/zetile-compile-worker",
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
    kernel.write_text(WORKERS_SRC + textwrap.dedent("""
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
        print("workers", _workers())
    """))
    # The installed copy alone: -S skips site-packages' .pth files (an
    # editable install of the checkout, scripts/setup.sh, would otherwise
    # redirect `import zetile` to python-bindings/); numpy from this venv.
    import sysconfig
    env = dict(os.environ, ZETILE_CACHE_DIR=str(tmp_path / "cache"),
               PYTHONPATH=os.pathsep.join([str(target), sysconfig.get_paths()["purelib"]]))
    out = _run([sys.executable, "-S", str(kernel)], env=env, cwd=str(tmp_path)).stdout
    assert f"from {target}" in out, out
    assert f"templates from {target}" in out, out
    # The compiles ran in the wheel's worker (the default budget).
    assert f"workers ['{target}/zetile/zetile-compile-worker'" in out, out


# This process's zetile-compile-worker children, by executable (source for
# the scripts the tests run).
WORKERS_SRC = """
def _workers():
    import os
    me, found = str(os.getpid()), []
    for p in os.listdir("/proc"):
        try:
            stat = open(f"/proc/{p}/stat").read()
            if stat.rsplit(")", 1)[1].split()[1] == me and "zetile-compile" in stat.split(")")[0]:
                found.append(os.readlink(f"/proc/{p}/exe"))
        except (OSError, IndexError, ValueError):
            pass
    return sorted(found)
"""


FRESH_CHECK = WORKERS_SRC + """
import importlib.metadata as md, numpy as np, zetile, zetile.language as tl
@zetile.jit
def add(x, y, o, n, B: tl.constexpr):
    offs = tl.program_id(0) * B + tl.arange(0, B)
    m = offs < n
    tl.store(o + offs, tl.load(x + offs, mask=m) + tl.load(y + offs, mask=m), mask=m)
x = np.arange(100, dtype=np.float32); o = np.zeros_like(x)
add[(4,)](x, x, o, 100, B=32)
assert (o == 2 * x).all()
print("python", zetile.__file__)
print("extension", zetile._C._ext.__file__)
print("entry points", [e.value for e in md.entry_points(group="torch.backends")])
print("live", getattr(zetile, "LIVE_EDIT", None))
print("workers", _workers())
"""


@pytest.fixture(scope="module")
def fresh_clone(tmp_path_factory):
    # (In the suite since the lead measured it: both installs 33 s here with
    # ccache warm, a few minutes on a fresh machine; issue 18 asks for it in CI.)
    if not os.path.isdir(os.path.join(ROOT, ".git")):
        pytest.skip("not a git checkout")
    d = tmp_path_factory.mktemp("fresh")
    _run(["git", "clone", "-q", ROOT, str(d / "src")])   # the committed tree
    return d


def _fresh_venv(path):
    _run([sys.executable, "-m", "venv", str(path)])
    return str(path / "bin" / "python")


def _check_fresh(py, cwd, cache):
    """Runs a kernel, `zetile info` and the entry point check with `py`."""
    env = dict(os.environ, ZETILE_CACHE_DIR=str(cache))
    env.pop("PYTHONPATH", None)
    env.pop("ZETILE_COMPILE_TIMEOUT", None)
    script = cwd / "check.py"    # a file: the front end reads the kernel's source
    script.write_text(FRESH_CHECK)
    out = _run([py, str(script)], env=env, cwd=str(cwd)).stdout
    info = _run([os.path.join(os.path.dirname(py), "zetile"), "info"], env=env,
                cwd=str(cwd)).stdout
    assert "compile targets: cpu" in info, info
    assert "entry points ['_zetile_torch_hook:autoload']" in out, out
    return out


def test_editable_install_in_a_fresh_venv(fresh_clone):
    """`pip install -e <clone>`: the Python files are the clone's (an edit is
    seen without reinstalling), the binaries were built and installed into
    the venv, the compiles run in the installed worker."""
    src = fresh_clone / "src"
    py = _fresh_venv(fresh_clone / "venv-e")
    # Build isolation as a user would have it: pip fetches scikit-build-core.
    _run([py, "-m", "pip", "install", "-q", "-e", str(src)],
         env=dict(os.environ, CCACHE_NOHASHDIR="1"), timeout=1800)
    site = _run([py, "-c", "import sysconfig; print(sysconfig.get_paths()['platlib'])"]).stdout.strip()
    with open(src / "python-bindings" / "zetile" / "__init__.py", "a") as f:
        f.write("\nLIVE_EDIT = 'seen'\n")
    out = _check_fresh(py, fresh_clone, fresh_clone / "cache-e")
    assert f"python {src}/python-bindings/zetile/__init__.py" in out, out
    assert f"extension {site}/zetile/_zetile.abi3.so" in out, out
    assert "live seen" in out, out
    assert f"workers ['{site}/zetile/zetile-compile-worker']" in out, out


def test_install_in_a_fresh_venv(fresh_clone):
    """`pip install <clone>` (not editable): everything from site-packages."""
    src = fresh_clone / "src"
    py = _fresh_venv(fresh_clone / "venv-i")
    _run([py, "-m", "pip", "install", "-q", str(src)],
         env=dict(os.environ, CCACHE_NOHASHDIR="1"), timeout=1800)
    site = _run([py, "-c", "import sysconfig; print(sysconfig.get_paths()['platlib'])"]).stdout.strip()
    out = _check_fresh(py, fresh_clone, fresh_clone / "cache-i")
    assert f"python {site}/zetile/__init__.py" in out, out
    assert f"workers ['{site}/zetile/zetile-compile-worker']" in out, out
