"""The `zetile` command line.

    zetile info                                    devices, drivers, targets, cache
    zetile compile FILE.py:KERNEL --signature "x_ptr=*fp32,n=i32" \
        --constexpr BLOCK=1024 --target pvc -o out.spv
    zetile demo                                    the demo (examples/demo.py)
    zetile evidence [--kernel NAME] [--json]       evidence level (E1-E5) per kernel
    zetile tune gemm|FILE.py:KERNEL|show|export|import ...   autotuning (tune_cli.py)
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import sys


def _load_kernel(spec):
    if ":" not in spec:
        raise SystemExit(f"zetile: expected FILE.py:KERNEL, got {spec!r}")
    path, name = spec.rsplit(":", 1)
    if not os.path.exists(path):
        raise SystemExit(f"zetile: no such file: {path}")
    sys.path.insert(0, os.path.dirname(os.path.abspath(path)))
    mod_name = "_zetile_cli_" + os.path.splitext(os.path.basename(path))[0]
    s = importlib.util.spec_from_file_location(mod_name, path)
    mod = importlib.util.module_from_spec(s)
    s.loader.exec_module(mod)
    if not hasattr(mod, name):
        raise SystemExit(f"zetile: {path} has no kernel named {name!r}")
    return getattr(mod, name)


def _parse_value(v):
    for conv in (int, float):
        try:
            return conv(v)
        except ValueError:
            pass
    if v in ("True", "False"):
        return v == "True"
    if v == "None":
        return None
    if v.startswith("tl.") or v in ("float16", "float32", "bfloat16", "int32"):
        from .language import core
        return getattr(core, v.split(".")[-1])
    return v


def _parse_pairs(text, what):
    out = {}
    if not text:
        return out
    # Split on commas outside brackets ("a=tensordesc<fp16[64,32]>,n=i32").
    parts, depth, cur = [], 0, ""
    for ch in text:
        depth += ch in "[<(" and 1 or (ch in "]>)" and -1 or 0)
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    parts.append(cur)
    for part in parts:
        part = part.strip()
        if not part:
            continue
        if "=" not in part:
            raise SystemExit(f"zetile: {what} entries are NAME=VALUE, got {part!r}")
        k, v = part.split("=", 1)
        out[k.strip()] = v.strip()
    return out


def cmd_info(args):
    from . import _C, __version__
    devs = _C.devices()
    ok, msg = _C.compiler_available()
    # The default device is the one launches would open: open it, so that a
    # bad ZETILE_DEVICE is reported here rather than at the first launch.
    default_error = None
    try:
        default = _C.Device(os.environ.get("ZETILE_DEVICE") or "default").info["name"]
    except _C.Error as e:
        default, default_error = os.environ.get("ZETILE_DEVICE"), str(e)
    info = {
        "version": __version__,
        "devices": devs,
        "default_device": default,
        "default_device_error": default_error,
        # Targets with a lowering (lowering/xe/xe_target.c's rows; the
        # integrated GPUs' rows run the SIMD8 lowering with FMA dots).
        "targets": ["cpu", "pvc", "bmg", "lnl", "ptl", "dg2", "arl-h", "skl", "icllp", "tgllp",
                    "rkl", "adl-s", "adl-p", "dg1", "mtl"],
        "compiler": {"available": bool(ok), "version": _C.compiler_version() if ok else None,
                     "message": msg},
        "cache": {"dir": _C.cache_dir(), **_C.cache_stats()},
    }
    if args.json:
        print(json.dumps(info, indent=2))
        return 1 if default_error else 0
    print(f"zetile {info['version']}")
    print("devices:")
    for d in devs:
        extra = f", driver {d['driver_version']}" if d.get("driver_version") else ""
        compat = " (compat path: no 2D block IO)" if d.get("compat") else ""
        print(f"  {d['name']:<16} target={d['target']:<5} {d['description']}{extra}{compat}")
        if d.get("target_why"):
            print(f"  {'':<16} (target {d['target']}: {d['target_why']})")
    print(f"default device: {info['default_device']}"
          + (" (cannot be opened: see below)" if default_error else ""))
    print(f"compile targets: {', '.join(info['targets'])}")
    c = info["compiler"]
    print(f"compiler: {c['version'] if c['available'] else 'not available: ' + str(c['message'])}")
    print(f"cache: {info['cache']['dir']}")
    if default_error:
        print(f"zetile: the default device cannot be opened: {default_error}", file=sys.stderr)
        return 1
    return 0


def cmd_compile(args):
    # zetile.jit is the decorator; the module is reached through import.
    from .jit import JITFunction, compile as zcompile
    kernel = _load_kernel(args.kernel)
    if not isinstance(kernel, JITFunction):
        raise SystemExit(f"zetile: {args.kernel} is not a @zetile.jit function")
    # "x_ptr=*fp32,n=i32", or Triton's positional "*fp32,i32".
    sig = args.signature if "=" not in args.signature else _parse_pairs(args.signature, "--signature")
    consts = {k: _parse_value(v) for k, v in _parse_pairs(args.constexpr, "--constexpr").items()}
    try:
        ck = zcompile(kernel, signature=sig, constexprs=consts, target=args.target,
                          num_warps=args.num_warps, compat=args.compat)
    except Exception as e:  # noqa: BLE001 - shown to the user as it is
        print(f"zetile: {e}", file=sys.stderr)
        return 1
    asm = ck.asm
    out_key = args.emit or ("spirv" if args.target != "cpu" else "llvm")
    if out_key not in asm:
        print(f"zetile: no '{out_key}' output for target {args.target} (have: {', '.join(asm)})",
              file=sys.stderr)
        return 1
    data = asm[out_key]
    if args.output and args.output != "-":
        mode = "wb" if isinstance(data, bytes) else "w"
        with open(args.output, mode) as f:
            f.write(data)
        print(f"wrote {args.output} ({len(data)} {'bytes' if isinstance(data, bytes) else 'chars'}, "
              f"{out_key})")
    else:
        if isinstance(data, bytes):
            print("zetile: binary output needs -o FILE", file=sys.stderr)
            return 1
        sys.stdout.write(data)
    return 0


def cmd_isa(args):
    from .jit import JITFunction
    from .tools import isa
    kernel = _load_kernel(args.kernel)
    if not isinstance(kernel, JITFunction):
        raise SystemExit(f"zetile: {args.kernel} is not a @zetile.jit function")
    sig = args.signature if "=" not in args.signature else _parse_pairs(args.signature, "--signature")
    consts = {k: _parse_value(v) for k, v in _parse_pairs(args.constexpr, "--constexpr").items()}
    try:
        r = isa.report(kernel, sig, consts, target=args.target, num_warps=args.num_warps,
                       compat=args.compat, igc_options=args.igc_options, driver=not args.no_driver)
    except Exception as e:  # noqa: BLE001 - shown to the user as it is
        print(f"zetile: {e}", file=sys.stderr)
        return 1
    print(json.dumps(r, indent=2) if args.json else isa.format_report(r))
    return 0


def cmd_demo(args):
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    demo = os.path.join(root, "examples", "demo.py")
    if not os.path.exists(demo):
        raise SystemExit("zetile: examples/demo.py not found next to the package")
    sys.argv = [demo] + list(args.rest)
    import runpy
    runpy.run_path(demo, run_name="__main__")
    return 0


def main(argv=None):
    p = argparse.ArgumentParser(prog="zetile", description="Triton-style kernels for Intel GPUs")
    sub = p.add_subparsers(dest="cmd", required=True)
    pi = sub.add_parser("info", help="devices, drivers, targets and the cache")
    pi.add_argument("--json", action="store_true")
    pi.set_defaults(fn=cmd_info)
    pc = sub.add_parser("compile", help="compile one kernel specialization (no device needed)")
    pc.add_argument("kernel", help="FILE.py:KERNEL")
    pc.add_argument("--signature", "-s", default="",
                    help='types of the run-time arguments: "x_ptr=*fp32,n=i32" (or "*fp32,i32" in order)')
    pc.add_argument("--constexpr", "-c", default="", help='"BLOCK=1024,ACT=relu"')
    pc.add_argument("--target", "-t", default="pvc", help="cpu, pvc, bmg, dg2 or an integrated GPU's row (zetile info lists them)")
    pc.add_argument("--num-warps", type=int, default=0)
    pc.add_argument("--compat", action="store_true", help="Xe: no 2D block IO (old drivers)")
    pc.add_argument("--emit", help="section to write: tile, mlir, spirv, llvm, meta")
    pc.add_argument("-o", "--output", help="output file (default: stdout for text)")
    pc.set_defaults(fn=cmd_compile)
    px = sub.add_parser("isa", help="Intel ISA report (ocloc + iga64; driver stats in AUB mode)")
    px.add_argument("kernel", help="FILE.py:KERNEL")
    px.add_argument("--signature", "-s", default="")
    px.add_argument("--constexpr", "-c", default="")
    px.add_argument("--target", "-t", default="pvc", help="pvc, bmg, dg2 or an integrated GPU's row (zetile info lists them)")
    px.add_argument("--num-warps", type=int, default=0)
    px.add_argument("--compat", action="store_true")
    px.add_argument("--igc-options", default=None)
    px.add_argument("--no-driver", action="store_true", help="skip the Level Zero (AUB) stats")
    px.add_argument("--json", action="store_true")
    px.set_defaults(fn=cmd_isa)
    from .tools import evidence  # zetile evidence: E1-E5 per kernel (tools/evidence.py)
    evidence.add_parser(sub)
    from . import tune_cli  # zetile tune: autotuning and its results database (tune_cli.py)
    tune_cli.add_parser(sub)
    pd = sub.add_parser("demo", help="run the demo")
    pd.add_argument("rest", nargs=argparse.REMAINDER)
    pd.set_defaults(fn=cmd_demo)
    args = p.parse_args(argv)
    return args.fn(args)


if __name__ == "__main__":
    sys.exit(main())
