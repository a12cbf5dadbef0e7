"""Template specializations exported for C programs (no Python at run time).

    python -m zetile.ops.export stdlib-kernels/prebuilt

writes, per exported case, NAME.tile (the tile IR zt_compile takes) and
NAME.args (one line per run-time argument, in launch order: name, kind
("ptr" or a scalar kind) and the value the specialization was made for;
constexprs and integers equal to 1 are compiled in). tests/c/
test_stdlib_templates.c runs them; tests/python/test_templates_prebuilt.py
checks that the checked-in files match the templates. This is the build-time
half of a C API for the templates (docs/TEMPLATES.md, "Next").
"""
import os
import sys


def _cases():
    import numpy as np
    from . import gemm, scaled_dot_product_attention
    rng = np.zeros
    M, N, K = 96, 80, 64           # multiples of 16: the divisibility hints hold
    B, H, L, S, E = 1, 2, 48, 64, 64
    return {
        # C = A @ B, fp32, row-major, no epilogue (DEFAULT tiles shrunk to 64).
        "gemm_f32": gemm(rng((M, K), np.float32), rng((K, N), np.float32), plan=True),
        # out, lse = SDPA(q, k, v), fp32 (B, H, L, E), k/v (B, H, S, E), causal.
        "sdpa_f32_causal": scaled_dot_product_attention(
            rng((B, H, L, E), np.float32), rng((B, H, S, E), np.float32),
            rng((B, H, S, E), np.float32), is_causal=True, return_lse=True, plan=True),
    }


def manifest(launch):
    """(tile IR text, [(name, kind, value)]) of a planned launch, as the CPU
    device would specialize it."""
    from .. import runtime
    dev = runtime.get_device("cpu")
    k = launch.kernel
    bound = k._bind(launch.args, launch.kwargs)
    _, arg_types, div, constexprs, values, descs = k.specialize(bound, dev)
    text = k.build_tile_ir(arg_types, constexprs, div, descs)
    # Source locations relative to the tree, so the files do not depend on
    # where it was checked out.
    from ._kernels import stdlib_dir
    text = text.replace(os.path.abspath(stdlib_dir()), "stdlib-kernels")
    rows = []
    for name, dt, v in values:
        if dt.is_ptr():
            rows.append((name, "ptr", 0))
        else:
            rows.append((name, dt.name, v))
    return text, rows


def export(out_dir):
    os.makedirs(out_dir, exist_ok=True)
    written = []
    for name, launch in _cases().items():
        text, rows = manifest(launch)
        with open(os.path.join(out_dir, name + ".tile"), "w") as f:
            f.write(text)
        with open(os.path.join(out_dir, name + ".args"), "w") as f:
            f.write(f"# {name}: run-time arguments of {launch.kernel.__name__} in launch order; "
                    f"grid {launch.grid[0]} {launch.grid[1] if len(launch.grid) > 1 else 1}\n")
            for r in rows:
                f.write(f"{r[0]} {r[1]} {r[2]}\n")
        written.append(name)
    return written


if __name__ == "__main__":
    target = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "stdlib-kernels", "prebuilt")
    print("\n".join(export(target)))
