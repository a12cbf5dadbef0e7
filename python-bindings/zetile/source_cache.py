"""Tile IR kept by source (issue 16, warm start): a new process whose cache
holds a kernel skips the front end (the DSL's parse and trace, ~1 ms a
specialization, most of what a cached kernel cost before its launch).

The C cache keys machine code by the Tile IR text, which only the front end
can make; this file keys that text by what the front end reads, as Triton
keys its cache by source: the kernel's source lines (file and first line:
they are in the IR's locations), the specialization (argument types,
divisibility, constexprs, descriptors, debug and bounds flags), the front
end's own code (size and mtime of the package's files) and, for every name
the kernel or a kernel it calls mentions, the value that name has now in the
function's closure or module. Values are fingerprinted only when their
fingerprint says all the front end can read of them: numbers, strings,
tuples of those, constexprs, zetile.language's modules, zetile's functions
and dtypes, and @jit functions (their source and names, recursively). A kernel that mentions
anything else (a Python helper, an array, another library's module) is not
kept: the front end runs as before. So is every kernel when
ZETILE_SOURCE_CACHE=0.

Entries live in <cache dir>/tile-ir/<2 hex>/<32 hex>, written whole under a
temporary name and renamed; a file that does not carry its own key and
length is ignored (the front end runs and rewrites it).
"""
import ast
import builtins
import os
import sys
import threading
import types

from . import _C

_MAGIC = "zetile-tile-ir 1"
_front_end_id = None
_BUILTIN_IDS = {id(v): k for k, v in vars(builtins).items() if callable(v)}


class _NotKept(Exception):
    """A value whose fingerprint would not say all the front end reads of it."""


def enabled():
    return os.environ.get("ZETILE_SOURCE_CACHE", "1") != "0"


def _front_end_version():
    """The front end's code: the package's own files (its Python sources and
    the extension) and those of its compiler and language folders, by path,
    size and mtime; read once per process."""
    global _front_end_id
    if _front_end_id is None:
        root = os.path.dirname(os.path.abspath(__file__))
        parts = [sys.version, _C._ext.__version__]
        for sub in ("", "compiler", "language", os.path.join("language", "extra"),
                    os.path.join("language", "extra", "_libdevice")):
            d = os.path.join(root, sub)
            for f in sorted(os.listdir(d)):
                if f.endswith((".py", ".so")):
                    st = os.stat(os.path.join(d, f))
                    parts.append(f"{sub}/{f}:{st.st_size}:{st.st_mtime_ns}")
        _front_end_id = _C.hash_hex("\n".join(parts).encode())
    return _front_end_id


def _names(src):
    """Every name the function's code mentions (a local that shadows a
    module's name is fingerprinted too, which costs at most a miss)."""
    got = getattr(src, "_mentioned_names", None)
    if got is None:
        got = sorted({n.id for n in ast.walk(src.tree) if isinstance(n, ast.Name)})
        src._mentioned_names = got
    return got


def _is_zetile(name):
    return name == "zetile" or (name or "").startswith("zetile.")


_classes = None


def _import_classes():
    # Imported once, when first needed (jit.py imports this module).
    global _classes
    from .compiler.codegen import TupleArg
    from .jit import JITFunction
    from .language.core import constexpr
    _classes = (TupleArg, JITFunction, constexpr)
    return _classes


def fingerprint(v, seen=None):
    """A string that is equal for two values exactly when the front end
    would read them alike; raises _NotKept when no such string is known."""
    TupleArg, JITFunction, constexpr = _classes or _import_classes()
    seen = set() if seen is None else seen
    t = type(v)
    if v is None or t in (bool, int, float, str, bytes, complex):
        return f"{t.__name__}:{v!r}"
    if t in (tuple, list):
        return f"{t.__name__}(" + ",".join(fingerprint(x, seen) for x in v) + ")"
    if t is dict:
        return "dict(" + ",".join(sorted(f"{fingerprint(k, seen)}={fingerprint(x, seen)}"
                                         for k, x in v.items())) + ")"
    if t is constexpr:
        return f"constexpr({fingerprint(v.value, seen)})"
    if isinstance(v, JITFunction):
        return _function(v, seen)
    if isinstance(v, types.ModuleType):
        # The language's modules hold code only (in the front end's files);
        # other modules (zetile.knobs, ...) may hold settings read at trace time.
        if v.__name__ == "zetile.language" or v.__name__.startswith("zetile.language."):
            return f"module:{v.__name__}"
        raise _NotKept(v.__name__)
    if id(v) in _BUILTIN_IDS and getattr(builtins, _BUILTIN_IDS[id(v)], None) is v:
        return f"builtin:{_BUILTIN_IDS[id(v)]}"
    if isinstance(v, (types.FunctionType, types.BuiltinFunctionType, type)):
        if _is_zetile(getattr(v, "__module__", None)) and "<locals>" not in v.__qualname__:
            return f"zetile:{v.__module__}.{v.__qualname__}"
        raise _NotKept(repr(v))
    if isinstance(v, TupleArg):
        # A tuple argument: which arguments hold its elements, and its class
        # (a NamedTuple's fields are the user's: plain tuples only).
        if v.cls is not tuple:
            raise _NotKept(repr(v.cls))
        return f"tuple-arg:{fingerprint(v.names, seen)}"
    if _is_zetile(t.__module__) and "<locals>" not in t.__qualname__:
        # zetile's own values (dtypes, enums): their repr names them; one
        # with an address in it says nothing.
        r = repr(v)
        if " at 0x" not in r and " object>" not in r:
            return f"zetile:{t.__module__}.{t.__qualname__}:{r}"
    raise _NotKept(repr(t))


def _function(jitfn, seen, bound=None):
    """A @jit function: where its source is, the source itself, its
    defaults and flags, and the values of the names it mentions but those
    the front end binds first: `bound`, the kernel's parameters that the
    specialization gives, or a called function's positional parameters
    (codegen.inline_call binds each)."""
    if id(jitfn) in seen:
        return f"jit-recursive:{jitfn.__qualname__}"
    seen.add(id(jitfn))
    src = jitfn.source
    if bound is None:
        bound = {p.arg for p in src.tree.args.args}
    fn = jitfn.fn
    parts = [f"jit:{jitfn.__module__}.{jitfn.__qualname__}", src.file, str(src.first_line),
             "".join(src.lines), fingerprint(fn.__defaults__, seen),
             fingerprint(fn.__kwdefaults__, seen), repr(getattr(jitfn, "noinline", None)),
             repr(sorted(jitfn.constexpr_names)), repr(sorted(jitfn.const_names))]
    for n in _names(src):
        if n in bound:
            continue
        if n in src.closure:
            parts.append(f"{n}={fingerprint(src.closure[n], seen)}")
        elif n in src.globals:
            parts.append(f"{n}={fingerprint(src.globals[n], seen)}")
        # else a local, a Python builtin or an error the front end reports
    seen.discard(id(jitfn))
    return "\n".join(parts)


def key(jitfn, arg_types, constexprs, divisibility, descriptors, debug, bounds):
    """The entry's 32-hex-digit key, or None when the kernel is not kept."""
    try:
        text = "\n\x00".join([
            _MAGIC, _front_end_version(),
            _function(jitfn, set(), {n for n in jitfn.arg_names
                                     if n in arg_types or n in constexprs
                                     or n in (descriptors or {})}),
            fingerprint({k: repr(v) for k, v in arg_types.items()}),
            fingerprint(dict(constexprs)), fingerprint(dict(divisibility)),
            fingerprint(dict(descriptors or {})), repr((bool(debug), bool(bounds)))])
    except _NotKept:
        return None
    except Exception:  # noqa: BLE001 - a source it cannot read: the front end says why
        return None
    return _C.hash_hex(text.encode("utf-8", "surrogatepass"))


def _path(k):
    return os.path.join(_C.cache_dir(), "tile-ir", k[:2], k)


def load(k):
    """The Tile IR kept under k, or None."""
    try:
        with open(_path(k), "rb") as f:
            data = f.read()
    except OSError:
        return None
    head, sep, body = data.partition(b"\n")
    if not sep or head != f"{_MAGIC} {k} {len(body)}".encode():
        return None  # another format, a torn or foreign file: build it again
    return body.decode("utf-8")


def store(k, text):
    """Keeps text under k; a cache that cannot be written is not an error."""
    path = _path(k)
    body = text.encode("utf-8")
    tmp = f"{path}.{os.getpid()}.{threading.get_ident()}.tmp"
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(tmp, "wb") as f:
            f.write(f"{_MAGIC} {k} {len(body)}\n".encode() + body)
        os.replace(tmp, path)
    except OSError:
        try:
            os.unlink(tmp)
        except OSError:
            pass
