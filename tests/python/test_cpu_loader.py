"""The CPU target's cached machine code loaded by libzetile's own ELF loader
(runtime/cpu/elf_load.c) against ORC in libzetile_compiler: the same kernels
in fresh processes sharing one cache, ZETILE_CPU_LOADER=own and =orc, must
give bit-identical outputs and prints, and the own loader must not map
libzetile_compiler (what the warm start saves). The kernels' objects must
import what the loader resolves in each place: libmvec, libm, libc and the
runtime's helpers (bf16 conversion, print)."""
import json
import os
import struct

from zt_testutil import run_python

HERE = os.path.dirname(os.path.abspath(__file__))

CHILD = """
import json, sys
sys.path.insert(0, {here!r})
import cpu_loader_kernels as K
digests, objs = K.run_all()
for name, obj in objs.items():
    with open({out!r} + "/" + name + ".o", "wb") as f:
        f.write(obj)
sys.stdout.flush()
mapped = "libzetile_compiler" in open("/proc/self/maps").read()
print("RESULT " + json.dumps({{"digests": digests, "compiler_mapped": mapped}}))
"""


def _child(tmp_path, label, loader):
    out = tmp_path / label
    out.mkdir()
    env = {"ZETILE_DEVICE": "cpu", "ZETILE_CACHE_DIR": str(tmp_path / "cache")}
    if loader:
        env["ZETILE_CPU_LOADER"] = loader
    r = run_python(CHILD.format(here=HERE, out=str(out)), env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    lines = r.stdout.splitlines()
    result = json.loads(lines[-1][len("RESULT "):])
    result["prints"] = [ln for ln in lines if ln.startswith("pid ")]
    result["dir"] = out
    return result


def _imports(obj):
    """Names of the undefined symbols of an ELF64 little-endian object."""
    shoff, = struct.unpack_from("<Q", obj, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", obj, 0x3A)
    shdrs = [struct.unpack_from("<IIQQQQIIQQ", obj, shoff + i * shentsize) for i in range(shnum)]
    names = set()
    for sh in shdrs:
        if sh[1] != 2:  # SHT_SYMTAB
            continue
        strtab = shdrs[sh[6]]
        for off in range(sh[4], sh[4] + sh[5], 24):
            name, _info, _other, shndx = struct.unpack_from("<IBBH", obj, off)
            if shndx == 0 and name:
                end = obj.index(b"\0", strtab[4] + name)
                names.add(obj[strtab[4] + name:end].decode())
    return names


def test_own_loader_matches_orc_without_the_compiler(tmp_path):
    cold = _child(tmp_path, "cold", None)    # fills the cache
    own = _child(tmp_path, "own", "own")     # a decline would fail the launch
    orc = _child(tmp_path, "orc", "orc")
    assert own["digests"] == orc["digests"] == cold["digests"]
    assert own["prints"] == orc["prints"] and len(own["prints"]) == 4, own["prints"]
    assert not own["compiler_mapped"] and not cold["compiler_mapped"]
    assert orc["compiler_mapped"]  # the check itself can see the compiler
    imports = set()
    for f in os.listdir(own["dir"]):
        imports |= _imports((own["dir"] / f).read_bytes())
    assert any(n.startswith("_ZGV") for n in imports), imports       # libmvec
    assert {"fmodf", "zt_cpu_print"} <= imports, imports              # libm, runtime
    assert imports & {"memset", "memcpy"}, imports                    # libc
    with open("/proc/cpuinfo") as f:
        has_bf16 = "avx512_bf16" in f.read()
    if not has_bf16:
        assert "__truncsfbf2" in imports, imports                     # runtime's bf16



WARM = """
import sys
sys.path.insert(0, {here!r})
import zetile
late = [m for m in ("json", "dataclasses", "zetile.tools.tensor_descriptor")
        if m in sys.modules]
import numpy as np
import cpu_loader_kernels as K
x = np.arange(8, dtype=np.float32)
out = np.zeros_like(x)
K.add[(1,)](x, x, out, 8, BLOCK=8)
assert (out == 2 * x).all()
late += [m for m in ("hashlib",) if m in sys.modules]
mapped = "libzetile_compiler" in open("/proc/self/maps").read()
print("RESULT", ",".join(late) or "-", mapped)
"""


def test_warm_process_imports_and_maps_little(tmp_path):
    """What a process launching a cached kernel does not load (each cost
    milliseconds of the warm start, bench/warm_start.py): json and the
    TensorDescriptor dataclass at `import zetile`, hashlib (Triton's
    CompiledKernel.hash, now computed when read) at the launch, the
    compiler at the load."""
    env = {"ZETILE_DEVICE": "cpu", "ZETILE_CACHE_DIR": str(tmp_path)}
    for run, want in (("cold", {"-", "hashlib"}), ("warm", {"-"})):  # a compile may hash
        r = run_python(WARM.format(here=HERE), env=env)
        assert r.returncode == 0, r.stdout + r.stderr
        late, mapped = r.stdout.split("RESULT ")[-1].split()
        assert late in want and mapped == "False", (run, late, mapped)
