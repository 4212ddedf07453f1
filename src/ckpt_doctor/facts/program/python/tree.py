"""The one walk over the tree and the indexes every other reader asks: scopes and bindings, calls
by name, subscripts, assignments, functions, classes, `if`s and loops.
"""

from __future__ import annotations

import ast
import bisect
import re
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from ckpt_doctor.facts.program.python.facts import (
    Option,
    Site,
)


@dataclass
class _Bind:
    value: ast.AST | None  # None: bound but not to an expression we can follow (a parameter, a loop target)
    stmt: ast.AST
    func: str
    kind: str  # assign | param | for | unpack | with | import


@dataclass
class _List:
    hint: str  # names | ints | natural | unknown
    pattern: str | None = None
    root: str | None = None
    words: list[str] = field(default_factory=list)
    fixed: bool = False  # the pattern matches fixed-width names only
    listing: bool = False  # comes straight from a file-system listing


_FIELDS: dict[type, tuple[str, ...]] = {}


def _fields(t: type) -> tuple[str, ...]:
    """The child fields of an ast node class, without the expression context."""
    got = _FIELDS.get(t)
    if got is None:
        got = _FIELDS[t] = tuple(f for f in getattr(t, "_fields", ()) if f != "ctx")
    return got


_SPLIT_LINES = re.compile(r"\r\n|\r|\n")


def _pos(n: ast.AST) -> tuple[int, int]:
    return (getattr(n, "lineno", 0) or 0, getattr(n, "col_offset", 0) or 0)


def _end(n: ast.AST) -> tuple[int, int]:
    return (getattr(n, "end_lineno", 0) or 0, getattr(n, "end_col_offset", 0) or 0)


def _within(inner: ast.AST, outer: ast.AST) -> bool:
    return _pos(outer) <= _pos(inner) and _end(inner) <= _end(outer)


def _last(func: ast.AST) -> str:
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return ""


def _int_index(sl: ast.AST) -> bool:
    """`[-1]`, `[0]`, `[:-3]`, `[len(x) - 1]`: one end of the list."""
    if isinstance(sl, ast.Slice):
        return True
    if isinstance(sl, ast.BinOp) and isinstance(sl.op, ast.Sub) and isinstance(sl.left, ast.Call):
        return _last(sl.left.func) == "len"
    if isinstance(sl, ast.Constant) and isinstance(sl.value, int) and not isinstance(sl.value, bool):
        return True
    return (
        isinstance(sl, ast.UnaryOp)
        and isinstance(sl.op, ast.USub)
        and isinstance(sl.operand, ast.Constant)
        and isinstance(sl.operand.value, int)
    )


_MAX_SCOPE_BINDINGS = 64

class Tree:
    def __init__(self, source: str, tree: ast.Module) -> None:
        self.src = source
        self.tree = tree
        self.lines = _SPLIT_LINES.split(source)
        self.aliases: dict[str, str] = {}
        self.imports: set[str] = set()
        self.binds: dict[tuple[str, str], list[_Bind]] = defaultdict(list)  # (name, scope) -> bindings
        self.binds_any: dict[str, list[_Bind]] = defaultdict(list)
        self.calls: list[tuple[ast.Call, ast.AST | None, str]] = []  # (call, stmt, func)
        self.by_attr: dict[str, list[tuple[ast.Call, ast.AST | None, str]]] = defaultdict(list)
        self.subs_of: dict[int, ast.Subscript] = {}  # id(value) -> the subscript taking an index of it
        self.sub_info: dict[int, tuple[ast.AST | None, str]] = {}  # id(subscript) -> (statement, scope)
        self.subs_by_name: dict[str, list[tuple[ast.Subscript, str]]] = defaultdict(list)
        self.arg_of: dict[int, ast.Call] = {}  # id(first positional arg) -> the call
        self.attr_sets: dict[str, list[tuple[str, ast.AST, ast.AST]]] = defaultdict(list)  # N.attr = v
        self.key_sets: dict[str, list[tuple[ast.AST, ast.AST]]] = defaultdict(list)  # N[k] = v
        self.uses: dict[int, set[str]] = defaultdict(set)  # id(stmt) -> names it reads
        self.stmt_targets: list[tuple[ast.AST, list[str]]] = []
        self.funcs: dict[str, list[ast.AST]] = defaultdict(list)
        self.func_params: dict[str, list[str]] = {}
        self.classes: dict[str, ast.ClassDef] = {}
        self.ifs: list[ast.If] = []
        self.if_parent: dict[int, ast.If] = {}  # id(statement or if) -> the innermost enclosing if
        self.func_nodes: list[ast.AST] = []
        self._func_starts: list[tuple[int, int]] | None = None
        self._opts: dict[str, Option] = {}
        self._line_text: dict[int, str] = {}
        self.fors: dict[int, ast.AST] = {}  # id(stmt) -> innermost enclosing for loop
        self.padded_templates: list[str] = []
        self.parsed_args: set[str] = set()  # names bound to parse_args()
        self._encoded: dict[int, bytes] = {}
        self._users: dict[str, set[str]] | None = None
        self.alias_of: dict[str, list[str]] = defaultdict(list)  # name -> names assigned from it as a whole

    def site(self, node: ast.AST) -> Site:
        line = getattr(node, "lineno", 1) or 1
        text = self._line_text.get(line)
        if text is None:
            raw = self.lines[line - 1] if 0 < line <= len(self.lines) else ""
            text = self._line_text[line] = (raw[:2000].strip() if len(raw) > 2000 else raw.strip())[:300]
        return Site(line, text)

    def seg(self, node: ast.AST | None, limit: int = 400) -> str:
        if node is None:
            return ""
        try:
            l0, c0 = node.lineno, node.col_offset  # type: ignore[attr-defined]
            l1, c1 = node.end_lineno, node.end_col_offset  # type: ignore[attr-defined]
        except AttributeError:
            return ""
        if l1 is None or c1 is None or l0 < 1 or l1 > len(self.lines):
            return ""
        if l1 - l0 > 30:
            l1, c1 = l0 + 30, None
        pieces = []
        for ln in range(l0, l1 + 1):
            line = self.lines[ln - 1]
            start = c0 if ln == l0 else 0
            stop = c1 if ln == l1 else None
            if line.isascii():
                pieces.append(line[start:stop])
            else:
                b = self._encoded.get(ln)
                if b is None:
                    b = self._encoded[ln] = line.encode("utf-8", "replace")
                pieces.append(b[start:stop].decode("utf-8", "replace"))
        s = "\n".join(pieces)
        if len(s) > limit:
            s = s[:limit] + "…"
        return s

    def qual(self, node: ast.AST, _depth: int = 0) -> str | None:
        parts: list[str] = []
        depth = 0
        while isinstance(node, ast.Attribute) and depth < 20:
            parts.append(node.attr)
            node = node.value
            depth += 1
        if isinstance(node, ast.Name):
            parts.append(self.aliases.get(node.id, node.id))
        elif isinstance(node, ast.Call):
            inner = self.qual(node.func, _depth + 1) if _depth < 8 else None
            if inner is None:
                return None
            parts.append(inner + "()")
        else:
            return None
        return ".".join(reversed(parts))

    def walk(self) -> None:
        """One pass over the tree: statements recursively (they carry the scope, loop and `if`
        context), the expressions inside each statement in a tight loop."""
        self._walk_body(self.tree.body, "", None, None)
        # the walk is in source order but for decorators and defaults (met after the body)
        for lst in self.by_attr.values():
            if len(lst) > 1:
                lst.sort(key=lambda c: (c[0].lineno, c[0].col_offset))
        for subs in self.subs_by_name.values():
            if len(subs) > 1:
                subs.sort(key=lambda x: (x[0].lineno, x[0].col_offset))
        self.func_nodes.sort(key=_pos)
        self.ifs.sort(key=_pos)

    def _walk_body(self, body: list[ast.stmt], func: str, loop: ast.AST | None, cur_if: ast.If | None) -> None:
        for node in body:
            self._walk_stmt(node, func, loop, cur_if)

    def _walk_stmt(self, node: ast.stmt, func: str, loop: ast.AST | None, cur_if: ast.If | None) -> None:
        if cur_if is not None:
            self.if_parent[id(node)] = cur_if
        t = type(node)
        inner_func, inner_loop, inner_if = func, loop, cur_if
        if t is ast.FunctionDef or t is ast.AsyncFunctionDef:
            self._on_funcdef(node, func)  # type: ignore[arg-type]
            inner_func, inner_loop, inner_if = node.name, None, None  # type: ignore[attr-defined]
        else:
            if loop is not None:
                self.fors[id(node)] = loop
            self._on_stmt(node, func)
            if t is ast.For or t is ast.AsyncFor or t is ast.While:
                inner_loop = node
            elif t is ast.If:
                inner_if = node  # type: ignore[assignment]
        exprs: list[ast.AST] = []
        for name in _FIELDS.get(t) or _fields(t):
            v = getattr(node, name, None)
            if type(v) is list:
                for item in v:
                    if isinstance(item, ast.stmt):
                        # decorators and defaults belong to the outer scope, the body to the function
                        self._walk_stmt(item, inner_func, inner_loop, inner_if)
                    elif isinstance(item, ast.AST):
                        exprs.append(item)
            elif isinstance(v, ast.AST):
                exprs.append(v)
        if exprs:
            exprs.reverse()
            outer = t is ast.FunctionDef or t is ast.AsyncFunctionDef
            self._walk_exprs(exprs, node, func if outer else inner_func, inner_loop, inner_if)

    def _walk_exprs(
        self, stack: list[ast.AST], stmt: ast.stmt, func: str, loop: ast.AST | None, cur_if: ast.If | None
    ) -> None:
        pop, push = stack.pop, stack.append
        uses = self.uses[id(stmt)]
        Name, Call, Subscript, Constant, JoinedStr, NamedExpr = (
            ast.Name,
            ast.Call,
            ast.Subscript,
            ast.Constant,
            ast.JoinedStr,
            ast.NamedExpr,
        )
        Load, AST, stmt_t = ast.Load, ast.AST, ast.stmt
        fields = _FIELDS
        padded = self.padded_templates
        padded_rx = re.compile(r"%0\d+d|\{[^{}]*:0\d+d\}")

        def leaf(x: Any, tx: type) -> bool:
            """Handle a Name or Constant child in place (most children are); False for other nodes."""
            if tx is Name:
                if type(x.ctx) is Load:
                    uses.add(x.id)
                return True
            if tx is Constant:
                v = x.value
                if type(v) is str and ("%0" in v or ":0" in v) and padded_rx.search(v):
                    padded.append(v)
                return True
            return False

        for root in list(stack):
            if leaf(root, type(root)):
                stack.remove(root)
        while stack:
            n = pop()
            t = type(n)
            if t is Call:
                self._on_call(n, stmt, func)  # type: ignore[arg-type]
            elif t is Subscript:
                self._on_subscript(n, stmt, func)  # type: ignore[arg-type]
            elif t is JoinedStr:
                self._on_fstring(n)  # type: ignore[arg-type]
            elif t is NamedExpr:
                tg = n.target  # type: ignore[attr-defined]
                if isinstance(tg, Name):
                    self._bind(tg.id, n.value, stmt, func, "assign")  # type: ignore[attr-defined]
                    self.stmt_targets.append((stmt, [tg.id]))
            elif isinstance(n, stmt_t):  # the body of an except handler or a match case
                self._walk_stmt(n, func, loop, cur_if)
                continue
            names = fields.get(t)
            if names is None:
                names = _fields(t)
            # children pushed last-first, so they are popped in source order
            for name in reversed(names):
                v = getattr(n, name, None)
                if type(v) is list:
                    for item in reversed(v):
                        ti = type(item)
                        if ti is Name:
                            if type(item.ctx) is Load:
                                uses.add(item.id)
                        elif ti is Constant:
                            if type(item.value) is str:
                                leaf(item, ti)
                        elif isinstance(item, AST):
                            push(item)
                elif v is not None:
                    tv = type(v)
                    if tv is Name:
                        if type(v.ctx) is Load:
                            uses.add(v.id)
                    elif tv is Constant:
                        if type(v.value) is str:
                            leaf(v, tv)
                    elif isinstance(v, AST):
                        push(v)

    def _bind(self, name: str, value: ast.AST | None, stmt: ast.AST, func: str, kind: str) -> None:
        b = _Bind(value, stmt, func, kind)
        self.binds[(name, func)].append(b)
        self.binds_any[name].append(b)

    def _bind_target(self, target: ast.AST, value: ast.AST | None, stmt: ast.AST, func: str, kind: str) -> list[str]:
        if isinstance(target, ast.Name):
            self._bind(target.id, value, stmt, func, kind)
            return [target.id]
        if isinstance(target, ast.Starred):
            return self._bind_target(target.value, None, stmt, func, "unpack")
        if isinstance(target, ast.Tuple | ast.List):
            names: list[str] = []
            vals = value.elts if isinstance(value, ast.Tuple | ast.List) else None
            for i, el in enumerate(target.elts):
                v = vals[i] if vals is not None and len(vals) == len(target.elts) else None
                names += self._bind_target(el, v, stmt, func, kind if v is not None else "unpack")
            if isinstance(value, ast.Call) and names and _last(value.func) in ("parse_known_args",):
                self.parsed_args.add(names[0])
            return names
        if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and value is not None:
            self.attr_sets[target.value.id].append((target.attr, value, stmt))
        elif isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name) and value is not None:
            self.key_sets[target.value.id].append((target.slice, value))
        return []

    def _on_stmt(self, node: ast.AST, func: str) -> None:
        t = type(node)
        if t is ast.Assign:
            names: list[str] = []
            for tg in node.targets:  # type: ignore[attr-defined]
                names += self._bind_target(tg, node.value, node, func, "assign")  # type: ignore[attr-defined]
            v = node.value  # type: ignore[attr-defined]
            if isinstance(v, ast.Call) and _last(v.func) in ("parse_args", "parse_known_args") and names:
                self.parsed_args.add(names[0])
            elif isinstance(v, ast.Name):
                self.alias_of[v.id] += names
            self.stmt_targets.append((node, names))
        elif t is ast.AnnAssign:
            if node.value is not None:  # type: ignore[attr-defined]
                names = self._bind_target(node.target, node.value, node, func, "assign")  # type: ignore[attr-defined]
                self.stmt_targets.append((node, names))
        elif t is ast.AugAssign:
            tg = node.target  # type: ignore[attr-defined]
            if isinstance(tg, ast.Name):
                self._bind(tg.id, None, node, func, "unpack")
                self.stmt_targets.append((node, [tg.id]))
        elif t is ast.For or t is ast.AsyncFor:
            names = self._bind_target(node.target, None, node, func, "for")  # type: ignore[attr-defined]
            self.stmt_targets.append((node, names))
        elif t is ast.With or t is ast.AsyncWith:
            for item in node.items:  # type: ignore[attr-defined]
                if item.optional_vars is not None:
                    self._bind_target(item.optional_vars, None, node, func, "with")
        elif t is ast.Import:
            for a in node.names:  # type: ignore[attr-defined]
                self._add_import(a.name)
                if a.asname:
                    self.aliases[a.asname] = a.name
                    self._bind(a.asname, None, node, func, "import")
        elif t is ast.ImportFrom:
            mod = node.module or ""  # type: ignore[attr-defined]
            if node.level:  # type: ignore[attr-defined]
                mod = "." * node.level + mod  # type: ignore[attr-defined]
            else:
                self._add_import(mod)
            for a in node.names:  # type: ignore[attr-defined]
                if a.name == "*":
                    continue
                full = f"{mod}.{a.name}" if mod else a.name
                if not node.level:  # type: ignore[attr-defined]
                    self.imports.add(full)
                self.aliases[a.asname or a.name] = full
                self._bind(a.asname or a.name, None, node, func, "import")
        elif t is ast.ClassDef:
            self.classes.setdefault(node.name, node)  # type: ignore[attr-defined]
            self._bind(node.name, None, node, func, "import")  # type: ignore[attr-defined]
        elif t is ast.If:
            self.ifs.append(node)  # type: ignore[arg-type]
        elif t is ast.Return and func:
            self.uses[id(node)].add("")  # placeholder so the return is known to the flow graph
            self.stmt_targets.append((node, [func + "()"]))

    def _add_import(self, mod: str) -> None:
        if not mod:
            return
        parts = mod.split(".")
        for i in range(1, len(parts) + 1):
            self.imports.add(".".join(parts[:i]))

    def _on_funcdef(self, node: ast.FunctionDef | ast.AsyncFunctionDef, outer: str) -> None:
        self.funcs[node.name].append(node)
        self.func_nodes.append(node)
        self._bind(node.name, None, node, outer, "import")
        a = node.args
        params = [p.arg for p in a.posonlyargs + a.args]
        self.func_params.setdefault(node.name, params)
        for p in a.posonlyargs + a.args + a.kwonlyargs:
            self._bind(p.arg, None, node, node.name, "param")
        for p in (a.vararg, a.kwarg):
            if p is not None:
                self._bind(p.arg, None, node, node.name, "param")

    def _on_call(self, node: ast.Call, stmt: ast.AST | None, func: str) -> None:
        self.calls.append((node, stmt, func))
        f = node.func
        name = _last(f)
        if name:
            self.by_attr[name].append((node, stmt, func))
        if isinstance(f, ast.Name) and stmt is not None:
            self.uses[id(stmt)].add(f.id + "()")
        if node.args:
            self.arg_of[id(node.args[0])] = node
        if (
            name in ("__import__", "import_module")
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            self._add_import(node.args[0].value)

    def _on_subscript(self, node: ast.Subscript, stmt: ast.AST | None, func: str) -> None:
        if type(node.ctx) is not ast.Load:
            return
        self.subs_of[id(node.value)] = node
        self.sub_info[id(node)] = (stmt, func)
        if isinstance(node.value, ast.Name):
            self.subs_by_name[node.value.id].append((node, func))

    def _on_fstring(self, node: ast.JoinedStr) -> None:
        for v in node.values:
            if isinstance(v, ast.FormattedValue) and isinstance(v.format_spec, ast.JoinedStr):
                spec = "".join(
                    p.value for p in v.format_spec.values if isinstance(p, ast.Constant) and isinstance(p.value, str)
                )
                if re.fullmatch(r"0\d+d", spec):
                    self.padded_templates.append(self.template(node))
                    return

    def _scope_binds(self, name: str, func: str) -> list[_Bind]:
        return self.binds.get((name, func)) or []

    def _preceding(self, name: str, at: ast.AST | None, func: str) -> tuple[list[_Bind], bool]:
        """Bindings of `name` visible at `at`: (bindings, from_module_scope)."""
        local = self._scope_binds(name, func) if func else []
        if local:
            if at is None:
                return local, False
            p = _pos(at)
            return [b for b in local if _end(b.stmt) <= p or b.kind == "param"], False
        glob = self._scope_binds(name, "")
        if not func and at is not None:
            p = _pos(at)
            glob = [b for b in glob if _end(b.stmt) <= p]
        return glob, True

    def _nearest(self, name: str, at: ast.AST | None, func: str) -> _Bind | None:
        binds, _ = self._preceding(name, at, func)
        if not binds:
            return None
        return max(binds, key=lambda b: _end(b.stmt))

    def func_of(self, node: ast.AST) -> str:
        """The name of the innermost function around `node` ("" at module level)."""
        if self._func_starts is None:
            self._func_starts = [_pos(f) for f in self.func_nodes]
        i = bisect.bisect_right(self._func_starts, _pos(node))
        for f in reversed(self.func_nodes[max(0, i - 64) : i]):  # nearest first; deep nesting is rare
            if _within(node, f):
                return getattr(f, "name", "")
        return ""
