"""From a @jit function's Python AST to tile IR, through the C builder.

Structured like Triton's code generator: an ast.NodeVisitor keeps a scope of
names bound to kernel values (`tensor`) or compile-time Python values;
`if`/`for`/`while` on run-time values become scf ops whose carried values are
the names the body reassigns; calls to other @jit functions are inlined.
"""
from __future__ import annotations

import ast
import builtins
import inspect
import linecache
import numbers
import textwrap

from .. import _C
from ..language import core, dtypes as T
from ..language.semantic import Semantic, flatten_value, same_structure, tensor
from ..language import standard as core_std
from .errors import CompilationError, UnsupportedError

_BINOPS = {
    ast.Add: ("add", lambda a, b: a + b), ast.Sub: ("sub", lambda a, b: a - b),
    ast.Mult: ("mul", lambda a, b: a * b), ast.Div: ("truediv", lambda a, b: a / b),
    ast.FloorDiv: ("floordiv", lambda a, b: a // b), ast.Mod: ("mod", lambda a, b: a % b),
    ast.BitAnd: ("and_", lambda a, b: a & b), ast.BitOr: ("or_", lambda a, b: a | b),
    ast.BitXor: ("xor_", lambda a, b: a ^ b), ast.LShift: ("shl", lambda a, b: a << b),
    ast.RShift: ("shr", lambda a, b: a >> b), ast.Pow: (None, lambda a, b: a ** b),
}
_CMPOPS = {
    ast.Lt: ("lt", lambda a, b: a < b), ast.LtE: ("le", lambda a, b: a <= b),
    ast.Gt: ("gt", lambda a, b: a > b), ast.GtE: ("ge", lambda a, b: a >= b),
    ast.Eq: ("eq", lambda a, b: a == b), ast.NotEq: ("ne", lambda a, b: a != b),
    ast.Is: (None, lambda a, b: a is b), ast.IsNot: (None, lambda a, b: a is not b),
    ast.In: (None, lambda a, b: a in b), ast.NotIn: (None, lambda a, b: a not in b),
}
_RETURN = "$return"
_CONSTEXPR_NAMES = "$constexpr_names"  # names declared `x: tl.constexpr` without a value

# Python builtins a kernel may call on compile-time values.
_PY_BUILTINS = {"min": builtins.min, "max": builtins.max, "len": builtins.len, "int": builtins.int,
                "float": builtins.float, "bool": builtins.bool, "abs": builtins.abs,
                "isinstance": builtins.isinstance, "getattr": builtins.getattr,
                "tuple": builtins.tuple, "list": builtins.list, "print": builtins.print,
                "range": builtins.range, "enumerate": builtins.enumerate, "zip": builtins.zip,
                "hasattr": builtins.hasattr, "str": builtins.str, "round": builtins.round,
                "True": True, "False": False, "None": None, "type": builtins.type,
                "ValueError": ValueError, "TypeError": TypeError, "AssertionError": AssertionError}


def _block_lines(fn):
    """(lines, first line) of fn's definition, decorators included, as
    inspect.getsourcelines gives them but without its tokenizer, whose first
    use in a process compiles regular expressions (~5 ms of a cold compile).
    The block is the first line and every following line indented deeper (or
    blank, or closing the signature); None when the result does not parse as
    that one function, and the caller asks inspect."""
    code = getattr(fn, "__code__", None)
    if code is None:
        return None
    lines = linecache.getlines(code.co_filename, fn.__globals__)
    start = code.co_firstlineno - 1
    if not 0 <= start < len(lines):
        return None
    base = len(lines[start]) - len(lines[start].lstrip())
    end, header = start + 1, not lines[start].lstrip().startswith(("def ", "async def "))
    while end < len(lines):
        ln = lines[end]
        body = ln.strip()
        ind = len(ln) - len(ln.lstrip())
        if body and ind <= base:
            if header and body.startswith(("def ", "async def ")):
                header = False  # the def line after the decorators
            elif not (header and body.startswith("@")) and not body.startswith((")", "]")):
                break
        end += 1
    while end > start + 1 and not lines[end - 1].strip():
        end -= 1
    block = lines[start:end]
    try:
        tree = ast.parse(textwrap.dedent("".join(block)))
    except SyntaxError:
        return None
    if (len(tree.body) != 1 or not isinstance(tree.body[0], ast.FunctionDef)
            or tree.body[0].name != fn.__name__):
        return None
    return block, start + 1


class _Cells:
    """A function's closure cells as a read-only mapping of their current
    values; empty cells are absent."""

    def __init__(self, names, cells):
        self._cells = dict(zip(names, cells))

    def __contains__(self, name):
        c = self._cells.get(name)
        if c is None:
            return False
        try:
            c.cell_contents
        except ValueError:
            return False
        return True

    def __getitem__(self, name):
        return self._cells[name].cell_contents


class FunctionSource:
    """Parsed source of a Python function with its file and first line."""

    def __init__(self, fn, text=None):
        """text: source to compile instead of fn's own (Triton's
        JITFunction._unsafe_update_src), starting at its `def` line."""
        self.fn = fn
        self.name = fn.__name__
        try:
            got = _block_lines(fn)
            lines, self.first_line = got if got else inspect.getsourcelines(fn)
        except (OSError, TypeError) as e:
            raise UnsupportedError(getattr(fn, "__code__", None) and fn.__code__.co_filename or "?",
                                   0, 0, "", fn.__name__,
                                   f"cannot read the source of {fn.__name__}: {e}") from e
        if text is not None:
            # Errors keep pointing into fn's file, from its `def` line on.
            defs = [i for i, ln in enumerate(lines) if ln.lstrip().startswith(("def ", "async def "))]
            self.first_line += defs[0] if defs else 0
            lines = textwrap.dedent(text).splitlines(True)
        self.file = inspect.getsourcefile(fn) or fn.__code__.co_filename
        self.lines = lines
        src = textwrap.dedent("".join(lines))
        self.indent = len(lines[0]) - len(lines[0].lstrip())
        tree = ast.parse(src)
        fdef = tree.body[0]
        if not isinstance(fdef, ast.FunctionDef):
            raise UnsupportedError(self.file, self.first_line, 1, lines[0], self.name,
                                   "only plain functions can be @zetile.jit kernels")
        fdef.decorator_list = []
        self.tree = fdef
        self.globals = fn.__globals__
        # Closure variables are compile-time values too, read when looked up:
        # a cell may still be empty here (a name the enclosing function
        # assigns after patching the kernel's source, as Triton's tests do).
        self.closure = _Cells(fn.__code__.co_freevars, fn.__closure__ or ())

    def location(self, node):
        line = self.first_line + getattr(node, "lineno", 1) - 1
        col = getattr(node, "col_offset", 0) + 1 + self.indent
        return line, col

    def source_line(self, node):
        i = getattr(node, "lineno", 1) - 1
        return self.lines[i] if 0 <= i < len(self.lines) else ""


class TupleArg:
    """A tuple kernel argument, specialized element by element: `names` are
    the arguments holding its elements (run-time values or constexprs,
    nested tuples being TupleArgs again); `cls` rebuilds it (a NamedTuple
    keeps its field names)."""

    def __init__(self, cls, names):
        self.cls = cls
        self.names = list(names)

    def rebuild(self, lookup):
        items = []
        for n in self.names:
            v = lookup(n)
            items.append(v.rebuild(lookup) if isinstance(v, TupleArg) else v)
        if self.cls is not tuple and hasattr(self.cls, "_fields"):
            return self.cls(*items)
        return tuple(items)

    def __repr__(self):
        return f"TupleArg({self.cls.__name__}, {self.names})"


def _is_jit(obj):
    from ..jit import JITFunction
    return isinstance(obj, JITFunction)


def _is_constexpr_annotation(ann, src: FunctionSource):
    if ann is None:
        return False
    if isinstance(ann, ast.Constant) and isinstance(ann.value, str):
        return "constexpr" in ann.value
    if isinstance(ann, ast.Attribute):
        return ann.attr == "constexpr"
    if isinstance(ann, ast.Name):
        obj = src.globals.get(ann.id)
        return ann.id == "constexpr" or obj is core.constexpr
    return False


def _unwrap(x):
    while isinstance(x, core.constexpr):
        x = x.value
    return x


def _assigned_names(stmts):
    """Names stored anywhere in `stmts` (not in nested function bodies)."""
    out = []

    class V(ast.NodeVisitor):
        def visit_Name(self, node):
            if isinstance(node.ctx, ast.Store) and node.id not in out:
                out.append(node.id)

        def visit_FunctionDef(self, node):
            pass

        visit_Lambda = visit_FunctionDef

    for s in stmts:
        V().visit(s)
    return out


_RETURN_IN_LOOP = ("Cannot have `return` statements inside `while` or `for` statements (as in "
                   "Triton; a @jit helper called in a loop may return early)")


def _has_call(expr):
    return any(isinstance(n, ast.Call) for n in ast.walk(expr))


def _is_literal(expr):
    """A number written in the source (`0`, `-1.5`, `True`)."""
    if isinstance(expr, ast.UnaryOp) and isinstance(expr.op, (ast.USub, ast.UAdd)):
        expr = expr.operand
    return isinstance(expr, ast.Constant) and isinstance(expr.value, (bool, int, float))


def _contains_return(stmts):
    for s in stmts:
        for n in ast.walk(s):
            if isinstance(n, ast.Return):
                return True
    return False


class CodeGenerator(ast.NodeVisitor):
    def __init__(self, builder, src: FunctionSource, kernel_name: str):
        self.b = builder
        self.sem = Semantic(builder)
        self.src = src
        self.kernel_name = kernel_name
        self.scope = {}
        self.call_depth = 0
        self.cur_node = None
        # Builtins that inline @jit functions (reduce/scan combiners) reach us here.
        self.sem.codegen = self
        self.sem.debug = False

    # -------------------------------------------------------------- helpers
    def error(self, node, message, cls=CompilationError, error_type=None):
        line, col = self.src.location(node)
        return cls(self.src.file, line, col, self.src.source_line(node), self.src.name, message,
                   error_type)

    def set_loc(self, node):
        if hasattr(node, "lineno"):
            line, col = self.src.location(node)
            self.b.set_loc(self.src.file, line, col)

    def visit(self, node):
        if hasattr(node, "lineno"):
            self.set_loc(node)
            self.cur_node = node
        try:
            return super().visit(node)
        except CompilationError:
            raise
        except Exception as e:  # noqa: BLE001 - every error gets the kernel's line
            if hasattr(node, "lineno"):
                raise self.error(node, str(e), error_type=type(e).__name__) from e
            raise

    def generic_visit(self, node):
        raise self.error(node, f"{type(node).__name__} is not supported in zetile kernels",
                         UnsupportedError)

    def lookup(self, name, node):
        if name in self.scope:
            return self.scope[name]
        if name in self.src.closure:
            return self.src.closure[name]
        if name in self.src.globals:
            return self.src.globals[name]
        if name in _PY_BUILTINS:
            return _PY_BUILTINS[name]
        raise self.error(node, f"name '{name}' is not defined", error_type="NameError")

    def sanitize(self, value):
        """What an assignment stores: Python numbers become kernel scalars
        (Triton's rule); other compile-time objects stay as they are."""
        value = _unwrap(value)
        if isinstance(value, (bool, int, float)) and not isinstance(value, T.dtype):
            return self.sem.to_tensor(value)
        if isinstance(value, tuple):
            items = [self.sanitize(v) for v in value]
            # NamedTuples (Triton's aggregates) and tl.tuple keep their type.
            return type(value)(*items) if hasattr(value, "_fields") else type(value)(items)
        return value

    # ------------------------------------------------------------- kernel
    def generate_kernel(self, params, arg_types, constexprs, divisibility, descriptors):
        """params: the parameter names; arg_types: the run-time arguments in
        order (name -> dtype; a descriptor parameter d expands to d.base,
        d.shape<i>, d.stride<i>); constexprs: name -> Python value;
        descriptors: name -> (rank, block_shape, padding, unit_stride_dims)."""
        fdef = self.src.tree
        names = list(arg_types)
        types = [(arg_types[n].zt_kind, arg_types[n].element_ty.zt_kind if arg_types[n].is_ptr() else 0, ())
                 for n in names]
        self.set_loc(fdef)
        handles = self.b.begin_kernel(self.kernel_name, types, [divisibility.get(n, 0) for n in names])
        flat = {n: tensor(h, arg_types[n]) for n, h in zip(names, handles)}
        with core._SemanticScope(self.sem):
            for n in params:
                if n in descriptors:
                    from ..language.blocks import tensor_descriptor
                    rank, block_shape, padding, unit = descriptors[n]
                    one = self.sem.scalar_constant(1, T.int64)
                    self.scope[n] = tensor_descriptor(
                        flat[f"{n}.base"], [flat[f"{n}.shape{d}"] for d in range(rank)],
                        [one if d in unit else flat[f"{n}.stride{d}"] for d in range(rank)],
                        block_shape, padding)
                elif n in flat:
                    self.scope[n] = flat[n]
            def leaf(name):
                return flat[name] if name in flat else constexprs[name]

            for n, v in constexprs.items():
                self.scope[n] = v.rebuild(leaf) if isinstance(v, TupleArg) else v
            ret = self.visit_body(fdef.body)
        if ret is not None and _RETURN in self.scope and self.scope[_RETURN] is not None:
            raise self.error(fdef, "a kernel cannot return a value")
        self.b.end_kernel()

    # ------------------------------------------------------------ statements
    def visit_body(self, stmts):
        """Visits statements; returns True if every path through them ended
        in a return (the statements after a possibly-returning `if` are then
        visited inside it, as its continuation)."""
        stmts = list(stmts)
        for i, stmt in enumerate(stmts):
            if isinstance(stmt, ast.Return):
                self.visit(stmt)
                return True
            if isinstance(stmt, ast.If) and _contains_return(stmt.body + stmt.orelse):
                return self.visit_if_with_return(stmt, stmts[i + 1:])
            if isinstance(stmt, (ast.For, ast.While)) and _contains_return(stmt.body):
                raise self.error(stmt, _RETURN_IN_LOOP, UnsupportedError)
            self.visit(stmt)
        return False

    def visit_Return(self, node):
        value = None if node.value is None else self.visit(node.value)
        self.scope[_RETURN] = value

    def visit_Pass(self, node):
        pass

    def visit_Expr(self, node):
        if isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            return  # docstring
        self.visit(node.value)

    def visit_Assign(self, node):
        value = self.visit(node.value)
        for target in node.targets:
            self.assign(target, value, node)

    def visit_AnnAssign(self, node):
        if node.value is None:
            # `d0: tl.constexpr` declares a name whose later assignments
            # (`d0, d1 = shape`) stay compile-time values, as in Triton.
            if isinstance(node.target, ast.Name) and _is_constexpr_annotation(node.annotation, self.src):
                self.scope.setdefault(_CONSTEXPR_NAMES, set()).add(node.target.id)
            return
        value = self.visit(node.value)
        if _is_constexpr_annotation(node.annotation, self.src):
            v = _unwrap(value)
            if isinstance(v, tensor):
                raise self.error(node, f"'{ast.unparse(node.target)}' is annotated constexpr but its "
                                 "value is only known at run time")
            self.scope[node.target.id] = v
            return
        self.assign(node.target, value, node)

    def visit_AugAssign(self, node):
        target = node.target
        if not isinstance(target, ast.Name):
            raise self.error(node, "only names can be targets of augmented assignments", UnsupportedError)
        lhs = self.lookup(target.id, node)
        value = self.binop(node.op, lhs, self.visit(node.value), node)
        self.assign(target, value, node)

    def assign(self, target, value, node):
        if isinstance(target, ast.Name):
            if target.id in self.scope.get(_CONSTEXPR_NAMES, ()):
                v = _unwrap(value)
                if isinstance(v, tensor):
                    raise self.error(node, f"'{target.id}' is declared constexpr but its value is "
                                     "only known at run time")
                self.scope[target.id] = v
                return
            self.scope[target.id] = self.sanitize(value)
        elif isinstance(target, (ast.Tuple, ast.List)):
            value = _unwrap(value)
            if not isinstance(value, (tuple, list)):
                raise self.error(node, "cannot unpack a non-tuple value")
            if len(value) != len(target.elts):
                raise self.error(node, f"expected {len(target.elts)} values to unpack, got {len(value)}")
            for t, v in zip(target.elts, value):
                self.assign(t, v, node)
        else:
            raise self.error(node, f"assignment to {type(target).__name__} is not supported "
                             "(kernels write memory with tl.store)", UnsupportedError)

    def visit_Assert(self, node):
        cond = _unwrap(self.visit(node.test))
        if isinstance(cond, tensor):
            msg = _unwrap(self.visit(node.msg)) if node.msg is not None else ast.unparse(node.test)
            core_std.device_assert(cond, str(msg))  # a no-op unless the kernel is built for debug
            return
        if not cond:
            msg = _unwrap(self.visit(node.msg)) if node.msg is not None else ""
            raise self.error(node, f"assertion failed: {msg}", error_type="AssertionError")

    # ------------------------------------------------------------------ if
    def _cond_scalar(self, cond, node, what):
        cond = self.sem.to_bool(cond)
        if cond.shape and cond.numel == 1:
            with core._SemanticScope(self.sem):
                cond = cond.item()  # a one-element block stands for its element, as in Triton
        if cond.shape:
            raise self.error(node, f"{what} condition must be a scalar, got a tensor of shape "
                             f"{list(cond.shape)} (use tl.where for elementwise choice)")
        return cond

    def visit_If(self, node):
        cond = _unwrap(self.visit(node.test))
        if not isinstance(cond, tensor):
            self.visit_body(node.body if cond else node.orelse)
            return
        self.dynamic_if(node, cond, node.body, node.orelse)

    def visit_if_with_return(self, node, rest):
        """An `if` with a return somewhere inside, followed by `rest`. The
        statements after it run only on the paths that did not return, so
        they become the continuation of both branches: each branch is
        visited as `branch + rest`, and visiting stops at the first return
        reached. A compile-time condition splices the taken branch in front
        of `rest` (never visiting the two apart), so a conditional return
        nested deeper still sees every statement that follows it."""
        cond = _unwrap(self.visit(node.test))
        if not isinstance(cond, tensor):
            return self.visit_body((node.body if cond else node.orelse) + rest)
        self.dynamic_if(node, cond, node.body + rest, node.orelse + rest)
        return True

    def dynamic_if(self, node, cond, then_body, else_body):
        cond = self._cond_scalar(cond, node, "if")
        live = dict(self.scope)
        self.b.if_begin(cond.handle)
        self.scope = dict(live)
        self.visit_body(then_body)
        then_scope = self.scope
        self.b.if_else()
        self.scope = dict(live)
        self.visit_body(else_body)
        else_scope = self.scope
        names = []
        for n in list(then_scope) + [k for k in else_scope if k not in then_scope]:
            in_then, in_else = n in then_scope, n in else_scope
            if n == _RETURN and in_then != in_else:
                v = then_scope.get(n) if in_then else else_scope.get(n)
                if v is not None:
                    raise self.error(node, "both branches must return a value, or neither")
                continue
            if not (in_then and in_else) and n not in live:
                continue  # defined on one side only: not visible after the if
            tv = then_scope.get(n, live.get(n))
            ev = else_scope.get(n, live.get(n))
            if tv is live.get(n) and ev is live.get(n):
                continue
            if n == _RETURN and tv is None and ev is None:
                continue
            names.append((n, tv, ev))
        then_y, else_y, kept = [], [], []
        for n, tv, ev in names:
            tts, rebuild = flatten_value(tv)
            ets, _ = flatten_value(ev)
            if not tts and not ets:
                if n == _RETURN:
                    raise self.error(node, "both branches must return a value, or neither")
                try:
                    same = tv is ev or bool(tv == ev)
                except Exception:  # noqa: BLE001 - incomparable objects differ
                    same = False
                if not same:
                    raise self.error(node, f"'{n}' is a compile-time value that differs between the "
                                     "branches of a run-time if")
                continue
            if not same_structure(tts, ets):
                tdesc = self._describe(tts) if tts else repr(tv)
                edesc = self._describe(ets) if ets else repr(ev)
                # Triton's wording (its tests match it)
                if n == _RETURN:
                    raise self.error(node, f"Return type mismatch: {tdesc} in the then branch but "
                                     f"{edesc} in the else branch")
                raise self.error(node, f"Mismatched type for {n} between then block ({tdesc}) and "
                                 f"else block ({edesc}); both branches must give it the same type")
            then_y.extend(t.handle for t in tts)
            else_y.extend(t.handle for t in ets)
            kept.append((n, tts, rebuild))
        results = self.b.if_end(then_y, else_y)
        self.scope = dict(live)
        for n, tv, ev in names:
            if not flatten_value(tv)[0] and not flatten_value(ev)[0]:
                self.scope[n] = tv
        self._bind(kept, results)

    def visit_IfExp(self, node):
        cond = _unwrap(self.visit(node.test))
        if not isinstance(cond, tensor):
            return self.visit(node.body if cond else node.orelse)
        if (cond.shape and cond.numel != 1) or not (_has_call(node.body) or _has_call(node.orelse)):
            # Elementwise choice, or two expressions without calls (nothing
            # in them reads or writes memory): both are computed, one chosen.
            a, b_ = _unwrap(self.visit(node.body)), _unwrap(self.visit(node.orelse))
            if isinstance(a, tensor) and isinstance(b_, tensor) and a.dtype.is_ptr() and \
                    b_.dtype.is_ptr() and a.dtype != b_.dtype:
                # pointers are not promoted (a tl.const pointer and a plain one differ)
                raise self.error(node, "Ternary expression with dynamic condition has inconsistent "
                                 f"type: {a.dtype} and {b_.dtype}")
            return self.sem.where(cond, a, b_)
        return self.ternary_if(node, cond)

    def ternary_if(self, node, cond):
        """`a if c else b` with a run-time scalar c and a call on either side
        (a load, a store, a helper): only the chosen side runs, as in Triton
        (an scf.if), so a load the condition guards is not read, and void
        sides (`tl.store(...) if c else tl.store(...)`) are statements."""
        cond = self._cond_scalar(cond, node, "ternary")
        body, orelse = node.body, node.orelse
        first = None
        if _is_literal(body) and not _is_literal(orelse):
            # A literal then-side takes the other side's type: emit that side first.
            first = self.visit(body)
            cond = self.sem.not_(cond)
            body, orelse = orelse, None
        self.b.if_begin(cond.handle)
        a = _unwrap(self.visit(body))
        if isinstance(a, (bool, int, float)):
            a = self.sem.to_tensor(a)
        self.b.if_else()
        b_ = _unwrap(first if orelse is None else self.visit(orelse))
        if isinstance(b_, (bool, int, float)) and isinstance(a, tensor):
            b_ = self.sem.broadcast_to(self.sem.scalar_constant(b_, a.dtype), a.shape)
        elif isinstance(b_, (bool, int, float)):
            b_ = self.sem.to_tensor(b_)
        if a is None and b_ is None:
            self.b.if_end([], [])
            return None
        if not (isinstance(a, tensor) and isinstance(b_, tensor)) or a.dtype != b_.dtype or \
                tuple(a.shape) != tuple(b_.shape):
            def desc(v):
                return f"{v.dtype}{list(v.shape) if v.shape else ''}" if isinstance(v, tensor) else repr(v)
            raise self.error(node, "Ternary expression with dynamic condition has inconsistent type: "
                             f"{desc(a)} and {desc(b_)}")
        r = self.b.if_end([a.handle], [b_.handle])
        return tensor(r[0], a.dtype, a.shape)

    # ----------------------------------------------------------------- loops
    def _carried(self, body, extra_exclude=()):
        """Names the body reassigns whose values hold kernel values, with
        their flattened tensors and rebuild functions."""
        out = []
        for n in _assigned_names(body):
            if n in extra_exclude or n not in self.scope:
                continue
            ts, rebuild = flatten_value(self.scope[n])
            if ts:
                out.append((n, ts, rebuild))
        return out

    @staticmethod
    def _handles(carried):
        return [t.handle for _, ts, _ in carried for t in ts]

    def _bind(self, carried, handles):
        """Rebinds each carried name to a value rebuilt from `handles`."""
        i = 0
        for n, ts, rebuild in carried:
            new = [tensor(h, t.dtype, t.shape) for h, t in zip(handles[i:i + len(ts)], ts)]
            self.scope[n] = rebuild(new)
            i += len(ts)

    def visit_For(self, node):
        if node.orelse:
            raise self.error(node, "for ... else is not supported", UnsupportedError)
        if not isinstance(node.target, ast.Name):
            raise self.error(node, "the loop variable must be a single name", UnsupportedError)
        it = node.iter
        if not isinstance(it, ast.Call):
            raise self.error(node, "kernels can only loop over range(), tl.range() or tl.static_range()",
                             UnsupportedError)
        fn = _unwrap(self.visit(it.func))
        args = [self.visit(a) for a in it.args]
        kwargs = {k.arg: self.visit(k.value) for k in it.keywords}
        if fn is core.static_range:
            r = core.static_range(*args, **kwargs)
            for i in builtins.range(r.start, r.end, r.step):
                self.scope[node.target.id] = i
                self.visit_body(node.body)
            return
        if fn is core.range:
            r = core.range(*args, **kwargs)
            lb, ub, step = r.start, r.end, r.step
        elif fn is builtins.range:
            if kwargs or not 1 <= len(args) <= 3:
                raise self.error(node, "range() takes 1 to 3 positional arguments")
            if len(args) == 1:
                lb, ub, step = 0, args[0], 1
            else:
                lb, ub = args[0], args[1]
                step = args[2] if len(args) == 3 else 1
        else:
            raise self.error(node, "kernels can only loop over range(), tl.range() or tl.static_range()",
                             UnsupportedError)
        lb, ub, step = _unwrap(lb), _unwrap(ub), _unwrap(step)
        negative = isinstance(step, int) and step < 0
        if isinstance(step, int) and step == 0:
            raise self.error(node, "range() step must not be zero")
        s = self.sem
        lb_t, ub_t, step_t = s.to_tensor(lb), s.to_tensor(ub), s.to_tensor(abs(step) if negative else step)
        for v, what in ((lb_t, "start"), (ub_t, "end"), (step_t, "step")):
            if not v.dtype.is_int() or v.shape:
                raise self.error(node, f"range {what} must be an integer scalar, got {v}")
        iv_t = s.integer_promote(s.integer_promote(lb_t.dtype, ub_t.dtype), step_t.dtype)
        lb_t, ub_t, step_t = s.cast(lb_t, iv_t), s.cast(ub_t, iv_t), s.cast(step_t, iv_t)
        if negative:
            # range(a, b, -k): run i = a - j*k for j in [0, ceil((a - b) / k)).
            start, stop = lb_t, ub_t
            span = s.maximum(s.sub(start, stop), 0)
            count = s.floordiv(s.sub(s.add(span, step_t), 1), step_t)
            lb_t, ub_t, step_t = s.cast(s.to_tensor(0), iv_t), count, s.cast(s.to_tensor(1), iv_t)
        carried = self._carried(node.body, extra_exclude=(node.target.id,))
        live = dict(self.scope)
        iv, iter_args = self.b.for_begin(lb_t.handle, ub_t.handle, step_t.handle, self._handles(carried))
        self._bind(carried, iter_args)
        ivt = tensor(iv, iv_t)
        if negative:
            ivt = s.sub(start, s.mul(ivt, s.cast(s.to_tensor(abs(step)), iv_t)))
        self.scope[node.target.id] = ivt
        self.visit_body(node.body)
        yields = self._loop_yields(node, carried)
        results = self.b.for_end(yields)
        self.scope = live
        self._bind(carried, results)

    def _loop_yields(self, node, carried):
        yields = []
        for n, init_ts, _ in carried:
            v = self.scope.get(n)
            if isinstance(_unwrap(v), (bool, int, float)):
                v = self.sanitize(v)
            ts, _ = flatten_value(v)
            if not same_structure(ts, init_ts):
                init = self._describe(init_ts)
                raise self.error(node, f"loop-carried variable '{n}' has initial type {init} but is "
                                 f"re-assigned to {self._describe(ts) if ts else repr(v)} in the loop; "
                                 "make sure its type stays the same")
            yields.extend(t.handle for t in ts)
        return yields

    @staticmethod
    def _describe(ts):
        return ts[0] if len(ts) == 1 else "(" + ", ".join(map(str, ts)) + ")"

    def visit_While(self, node):
        if node.orelse:
            raise self.error(node, "while ... else is not supported", UnsupportedError)
        carried = self._carried(node.body)
        live = dict(self.scope)
        before = self.b.while_begin(self._handles(carried))
        self._bind(carried, before)
        cond = _unwrap(self.visit(node.test))
        if not isinstance(cond, tensor):
            cond = self.sem.to_tensor(bool(cond))
        cond = self._cond_scalar(cond, node, "while")
        after = self.b.while_cond(cond.handle)
        self._bind(carried, after)
        self.visit_body(node.body)
        yields = self._loop_yields(node, carried)
        results = self.b.while_end(yields)
        self.scope = live
        self._bind(carried, results)

    def visit_Break(self, node):
        raise self.error(node, "break is not supported in kernels yet", UnsupportedError)

    def visit_Continue(self, node):
        raise self.error(node, "continue is not supported in kernels yet", UnsupportedError)

    # ----------------------------------------------------------- expressions
    def visit_Constant(self, node):
        return node.value

    def visit_Name(self, node):
        return self.lookup(node.id, node)

    def visit_Tuple(self, node):
        return tuple(self.visit(e) for e in node.elts)

    def visit_List(self, node):
        return [self.visit(e) for e in node.elts]

    def visit_JoinedStr(self, node):
        parts = []
        for v in node.values:
            if isinstance(v, ast.Constant):
                parts.append(str(v.value))
            else:
                parts.append(str(_unwrap(self.visit(v.value))))
        return "".join(parts)

    def binop(self, op, lhs, rhs, node):
        name, pyfn = _BINOPS.get(type(op), (None, None))
        if pyfn is None:
            raise self.error(node, f"operator {type(op).__name__} is not supported", UnsupportedError)
        lhs, rhs = _unwrap(lhs), _unwrap(rhs)
        if not isinstance(lhs, tensor) and not isinstance(rhs, tensor):
            return pyfn(lhs, rhs)
        if isinstance(op, ast.MatMult):
            return core.dot(lhs, rhs)
        if name is None:
            raise self.error(node, f"operator {type(op).__name__} is not supported on tensors",
                             UnsupportedError)
        return getattr(self.sem, name)(lhs, rhs)

    def visit_BinOp(self, node):
        if isinstance(node.op, ast.MatMult):
            return core.dot(_unwrap(self.visit(node.left)), _unwrap(self.visit(node.right)))
        return self.binop(node.op, self.visit(node.left), self.visit(node.right), node)

    def visit_UnaryOp(self, node):
        v = _unwrap(self.visit(node.operand))
        if not isinstance(v, tensor):
            return {ast.USub: lambda x: -x, ast.UAdd: lambda x: +x, ast.Not: lambda x: not x,
                    ast.Invert: lambda x: ~x}[type(node.op)](v)
        if isinstance(node.op, ast.USub):
            return self.sem.minus(v)
        if isinstance(node.op, ast.UAdd):
            return v
        if isinstance(node.op, ast.Not):
            return self.sem.not_(v)
        return self.sem.invert(v)

    def visit_Compare(self, node):
        result = None
        lhs = self.visit(node.left)
        for op, comp in zip(node.ops, node.comparators):
            rhs = self.visit(comp)
            name, pyfn = _CMPOPS[type(op)]
            a, b_ = _unwrap(lhs), _unwrap(rhs)
            if isinstance(op, (ast.Is, ast.IsNot)):
                # Identity is decided at compile time, as in Triton: a kernel
                # value is never None (`if bias_ptr is not None:` with an
                # optional pointer; a None argument is a constexpr).
                r = pyfn(a, b_)
            elif isinstance(a, tensor) or isinstance(b_, tensor):
                if name is None:
                    raise self.error(node, f"'{type(op).__name__}' cannot compare tensors", UnsupportedError)
                r = self.sem.compare(name, a, b_)
            else:
                r = pyfn(a, b_)
            result = r if result is None else self._and(result, r)
            lhs = rhs
        return result

    def _and(self, a, b_):
        a, b_ = _unwrap(a), _unwrap(b_)
        if not isinstance(a, tensor) and not isinstance(b_, tensor):
            return a and b_
        return self.sem.logical_and(a, b_)

    def visit_BoolOp(self, node):
        # Compile-time operands short-circuit as in Python; run-time ones are
        # combined elementwise (both sides are evaluated), as in Triton.
        is_and = isinstance(node.op, ast.And)
        acc = None
        for v in node.values:
            x = _unwrap(self.visit(v))
            if acc is None:
                acc = x
            elif not isinstance(acc, tensor) and not isinstance(x, tensor):
                acc = (acc and x) if is_and else (acc or x)
            elif not isinstance(acc, tensor):
                if is_and and not acc:
                    return acc
                if not is_and and acc:
                    return acc
                acc = x
            else:
                acc = self.sem.logical_and(acc, x) if is_and else self.sem.logical_or(acc, x)
            if not isinstance(acc, tensor) and ((is_and and not acc) or (not is_and and acc)):
                return acc
        return acc

    def visit_Attribute(self, node):
        obj = _unwrap(self.visit(node.value))
        if isinstance(obj, tensor):
            if node.attr == "dtype":
                return obj.dtype
            if node.attr == "shape":
                return list(obj.shape)  # a list, as Triton's (`x.shape == [1, N]`)
            if node.attr == "numel":
                return obj.numel
        elif node.attr == "type" and (obj is None or isinstance(obj, (bool, int, float, str))):
            # A Python value in a kernel is a compile-time value, as in Triton
            # (`values[1].type == tl.constexpr_type(3)` on a tuple argument).
            return core.constexpr_type(obj)
        try:
            return getattr(obj, node.attr)
        except AttributeError:
            raise self.error(node, f"'{type(obj).__name__}' object has no attribute '{node.attr}'",
                             error_type="AttributeError") from None

    def visit_Subscript(self, node):
        obj = _unwrap(self.visit(node.value))
        idx = self.visit(node.slice)
        if isinstance(obj, tensor):
            return obj[idx]
        return obj[_unwrap(idx)]

    def visit_Slice(self, node):
        lo = None if node.lower is None else _unwrap(self.visit(node.lower))
        hi = None if node.upper is None else _unwrap(self.visit(node.upper))
        st = None if node.step is None else _unwrap(self.visit(node.step))
        return slice(lo, hi, st)

    def visit_Call(self, node):
        fn = _unwrap(self.visit(node.func))
        args = []
        for a in node.args:
            if isinstance(a, ast.Starred):
                args.extend(_unwrap(self.visit(a.value)))
            else:
                args.append(self.visit(a))
        kwargs = {}
        for k in node.keywords:
            if k.arg is None:
                kwargs.update(_unwrap(self.visit(k.value)))
            else:
                kwargs[k.arg] = self.visit(k.value)
        if _is_jit(fn):
            return self.inline_call(fn, args, kwargs, node)
        if getattr(fn, "__zetile_builtin__", False) or isinstance(fn, T.dtype):
            return fn(*args, **kwargs)
        if getattr(fn, "__self__", None) is not None and isinstance(fn.__self__, tensor):
            return fn(*args, **kwargs)  # tensor methods (x.to(...), x.sum(...))
        if fn in (core.range, core.static_range):
            raise self.error(node, f"{fn.__name__} can only be used as a for-loop iterator")
        if isinstance(fn, type) and issubclass(fn, core.constexpr):
            return _unwrap(args[0]) if args else None
        if isinstance(fn, type) and issubclass(fn, tuple) and hasattr(fn, "_fields"):
            # A NamedTuple holds kernel values as they are (Triton's aggregates).
            return fn(*[_unwrap(a) for a in args], **{k: _unwrap(v) for k, v in kwargs.items()})
        if fn in (builtins.isinstance, builtins.type, builtins.hasattr, builtins.getattr):
            # Compile-time questions about kernel values (`isinstance(d,
            # tl.tensor_descriptor)`, `x.dtype` via getattr) are answered now.
            return fn(*[_unwrap(a) for a in args])
        flat = [_unwrap(a) for a in args] + [_unwrap(v) for v in kwargs.values()]
        if any(isinstance(a, tensor) for a in flat):
            name = getattr(fn, "__name__", repr(fn))
            if fn in (builtins.min, builtins.max) and len(args) == 2:
                op = self.sem.minimum if fn is builtins.min else self.sem.maximum
                return op(_unwrap(args[0]), _unwrap(args[1]))
            raise self.error(node, f"cannot call {name}() with run-time values inside a kernel "
                             "(only @zetile.jit functions and zetile.language builtins can be)",
                             UnsupportedError)
        if callable(fn):
            return fn(*[_unwrap(a) for a in args], **{k: _unwrap(v) for k, v in kwargs.items()})
        raise self.error(node, f"'{type(fn).__name__}' object is not callable", error_type="TypeError")

    def inline_call(self, jitfn, args, kwargs, node):
        if self.call_depth > 64:
            raise self.error(node, "recursion is not supported in kernels", UnsupportedError)
        callee = jitfn.source
        sig = inspect.signature(jitfn.fn)
        try:
            bound = sig.bind(*args, **kwargs)
        except TypeError as e:
            raise self.error(node, f"{jitfn.fn.__name__}(): {e}", error_type="TypeError") from None
        bound.apply_defaults()
        new_scope = {}
        for p in callee.tree.args.args:
            v = bound.arguments[p.arg]
            if _is_constexpr_annotation(p.annotation, callee) and not isinstance(_unwrap(v), tensor):
                new_scope[p.arg] = _unwrap(v)
            else:
                # Like Triton, a helper's constexpr annotation does not make a
                # run-time argument constant: the value decides (the tutorial's
                # `_attn_fwd_inner(..., offs_m: tl.constexpr, ...)` takes a tensor).
                # A compile-time argument stays one in the callee, as in
                # Triton (its call specializes the callee on constexpr
                # arguments): `if flag:` on it is decided at compile time.
                new_scope[p.arg] = _unwrap(v)
        saved = (self.scope, self.src)
        self.scope, self.src = new_scope, callee
        self.call_depth += 1
        try:
            self.visit_body(callee.tree.body)
            ret = self.scope.get(_RETURN)
        finally:
            self.call_depth -= 1
            self.scope, self.src = saved
            # Ops built after the call (a reduce around its combiner) belong
            # to the call site, not to the callee's last line.
            if node is not None:
                self.set_loc(node)
        return ret

    def _comprehension(self, node):
        """[expr for x in <compile-time iterable> if <compile-time cond>]:
        unrolled at compile time (the iterable is a tuple, range, ...)."""
        out = []
        saved = dict(self.scope)

        def gen(i):
            if i == len(node.generators):
                out.append(self.visit(node.elt))
                return
            g = node.generators[i]
            it = _unwrap(self.visit(g.iter))
            if isinstance(it, tensor):
                raise self.error(g.iter, "comprehensions iterate over compile-time values "
                                 "(tuples, range of constants), not tensors", UnsupportedError)
            for x in it:
                self.assign(g.target, x, node)
                if all(self._static_cond(c) for c in g.ifs):
                    gen(i + 1)

        try:
            gen(0)
        finally:
            self.scope = saved
        return out

    def _static_cond(self, test):
        c = _unwrap(self.visit(test))
        if isinstance(c, tensor):
            raise self.error(test, "a comprehension's condition must be a compile-time value",
                             UnsupportedError)
        return bool(c)

    def visit_ListComp(self, node):
        return self._comprehension(node)

    def visit_GeneratorExp(self, node):
        return tuple(self._comprehension(node))

    def visit_Lambda(self, node):
        raise self.error(node, "lambdas are not supported in kernels; define a @zetile.jit function",
                         UnsupportedError)


def generate(builder, jitfn, kernel_name, arg_types, constexprs, divisibility, descriptors=None,
             debug=False):
    """Builds the tile IR of one specialization of `jitfn` into `builder`."""
    gen = CodeGenerator(builder, jitfn.source, kernel_name)
    gen.sem.debug = debug
    gen.generate_kernel(jitfn.arg_names, arg_types, constexprs, divisibility, descriptors or {})
    return gen
