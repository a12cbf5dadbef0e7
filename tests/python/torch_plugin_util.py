"""Shared pieces of the torch.compile plugin tests (test_torch_plugin*.py)."""
import os
import subprocess
import sys
import textwrap

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def compiled(fn, *args):
    """(result, generated code) of fn compiled by Inductor, run under no_grad."""
    import torch
    from torch._inductor.utils import run_and_get_code
    torch._dynamo.reset()
    with torch.no_grad():
        result, code = run_and_get_code(torch.compile(fn, fullgraph=True), *args)
    return result, "\n".join(code)


def entry_point_dir(tmp_path):
    """A directory that, on PYTHONPATH, declares zetile's torch.backends entry
    point as the installed wheel does (pyproject.toml): the in-place
    development tree has no dist-info, so torch's autoload would find nothing."""
    d = tmp_path / "ep"
    info = d / "zetile_entry_point_test-0.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: zetile-entry-point-test\n"
                                   "Version: 0.0\n")
    (info / "entry_points.txt").write_text(
        "[torch.backends]\nzetile = " + pyproject_entry_point() + "\n")
    return d


def pyproject_entry_point():
    import tomllib
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as f:
        meta = tomllib.load(f)
    return meta["project"]["entry-points"]["torch.backends"]["zetile"]


def run_python(code, env_extra, timeout=600):
    """Runs `code` in a fresh interpreter; returns (returncode, stdout, stderr)."""
    env = dict(os.environ)
    env.pop("ZETILE_INDUCTOR", None)
    env.pop("TORCH_DEVICE_BACKEND_AUTOLOAD", None)
    env.update(env_extra)
    r = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=env,
                       capture_output=True, text=True, timeout=timeout)
    return r.returncode, r.stdout, r.stderr
