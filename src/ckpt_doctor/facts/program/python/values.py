"""What an expression's value is, when it is statically known: literals, simple bindings, argparse
defaults, environment reads, f-string templates.
"""

from __future__ import annotations

import ast
import re
from typing import Any

from ckpt_doctor.facts.program.python.facts import (
    Value,
)
from ckpt_doctor.facts.program.python.tree import (
    _MAX_SCOPE_BINDINGS,
    _last,
)


class Values:
    def value(self, node: ast.AST | None, func: str = "", at: ast.AST | None = None) -> Value:
        if node is None:
            return Value(None, False, "", "expr")
        src = self.seg(node)
        try:
            const, known, origin, extra = self._eval(node, func, at if at is not None else node, 0)
        except (RecursionError, ValueError, TypeError, OverflowError, MemoryError, IndexError, KeyError):
            return Value(None, False, src, "expr", dynamic=self._dynamic_of(node, func, at))
        if not known:
            extra = {**extra, "dynamic": self._dynamic_of(node, func, at)}
        return Value(const if known else None, known, src, origin, **extra)

    def _dynamic_of(self, node: ast.AST, func: str, at: ast.AST | None) -> str | None:
        try:
            return self.dynamic_part(node, func, at)  # type: ignore[attr-defined,no-any-return]
        except RecursionError:
            return None

    def _eval(self, node: ast.AST, func: str, at: ast.AST, depth: int) -> tuple[Any, bool, str, dict[str, Any]]:
        unknown: tuple[Any, bool, str, dict[str, Any]] = (None, False, "expr", {})
        if depth > 8:
            return unknown
        t = type(node)
        if t is ast.Constant:
            v = node.value  # type: ignore[attr-defined]
            if isinstance(v, str | int | float | bool | bytes) or v is None:
                return v, True, "literal", {}
            return unknown
        if t is ast.Name:
            binds, _ = self._preceding(node.id, at, func)  # type: ignore[attr-defined]
            if not binds or len(binds) > _MAX_SCOPE_BINDINGS:
                return unknown
            results = []
            for b in binds:
                if b.value is None or b.kind != "assign":
                    return unknown
                c, k, o, e = self._eval(b.value, b.func, b.stmt, depth + 1)
                if not k:
                    if len(binds) == 1 and o in ("env", "argparse-default"):
                        return c, k, o, e  # ckpt_dir = os.environ["CKPT_DIR"]; f(output_dir=ckpt_dir)
                    return unknown
                results.append(c)
                if len(binds) == 1 and o == "argparse-default":
                    return c, k, o, e
            first = results[0]
            if all(r == first and type(r) is type(first) for r in results):
                return first, True, "name", {}
            return unknown
        if t is ast.Attribute:
            opt = self._argparse_option(node)  # type: ignore[arg-type]
            if opt is not None:
                d = opt.default
                return d.const, d.known, "argparse-default", {"option": opt.flags[0] if opt.flags else opt.dest}
            return unknown
        if t is ast.Subscript:
            env = self._env_name(node)
            if env is not None:
                return None, False, "env", {"env": env}
            return unknown
        if t is ast.Call:
            env = self._env_name(node)
            if env is not None:
                d = node.args[1] if len(node.args) > 1 else None  # type: ignore[attr-defined]
                dv = self._eval(d, func, at, depth + 1) if d is not None else (None, False, "", {})
                return None, False, "env", {"env": env, "default": dv[0] if dv[1] else None}
            q = self.qual(node.func) or ""  # type: ignore[attr-defined]
            args = [self._eval(a, func, at, depth + 1) for a in node.args[:8]]  # type: ignore[attr-defined]
            if q in ("int", "float", "str", "bool") and len(args) == 1 and args[0][2] == "env":
                return args[0]  # int(os.environ["SAVE_STEPS"]) is still that variable
            if node.keywords or not all(a[1] for a in args):  # type: ignore[attr-defined]
                return unknown
            vals = [a[0] for a in args]
            if q in ("os.path.join", "posixpath.join") and all(isinstance(v, str) for v in vals) and vals:
                out = vals[0]
                for v in vals[1:]:
                    out = v if v.startswith("/") else (out.rstrip("/") + "/" + v if out else v)
                return out, True, "expr", {}
            if q in ("int", "float", "str", "bool") and len(vals) == 1:
                conv = {"int": int, "float": float, "str": str, "bool": bool}[q]
                v0 = vals[0]
                if q in ("int", "float") and isinstance(v0, str) and len(v0) > 40:
                    return unknown
                return conv(v0), True, "expr", {}
            return unknown
        if t is ast.JoinedStr:
            out = []
            for part in node.values:  # type: ignore[attr-defined]
                if isinstance(part, ast.Constant):
                    out.append(str(part.value))
                elif isinstance(part, ast.FormattedValue):
                    if part.format_spec is not None or part.conversion not in (-1, None):
                        return unknown
                    c, k, _o, _e = self._eval(part.value, func, at, depth + 1)
                    if not k:
                        return unknown
                    out.append(str(c))
            return "".join(out), True, "expr", {}
        if t is ast.BinOp and isinstance(node.op, ast.Add):  # type: ignore[attr-defined]
            a = self._eval(node.left, func, at, depth + 1)  # type: ignore[attr-defined]
            b = self._eval(node.right, func, at, depth + 1)  # type: ignore[attr-defined]
            if a[1] and b[1] and type(a[0]) in (str, int, float) and type(a[0]) is type(b[0]):
                if isinstance(a[0], str) and len(a[0]) + len(b[0]) > 10_000:
                    return unknown
                return a[0] + b[0], True, "expr", {}
            return unknown
        if t is ast.UnaryOp:
            a = self._eval(node.operand, func, at, depth + 1)  # type: ignore[attr-defined]
            if not a[1]:
                return unknown
            if isinstance(node.op, ast.Not):  # type: ignore[attr-defined]
                return (not a[0]), True, "expr", {}
            if isinstance(node.op, ast.USub) and isinstance(a[0], int | float) and not isinstance(a[0], bool):  # type: ignore[attr-defined]
                return -a[0], True, "expr", {}
            return unknown
        if t is ast.List or t is ast.Tuple or t is ast.Set:
            elts = node.elts  # type: ignore[attr-defined]
            if len(elts) > 200:
                return unknown
            vals = []
            for e in elts:
                c, k, _o, _e = self._eval(e, func, at, depth + 1)
                if not k:
                    return unknown
                vals.append(c)
            if t is ast.Tuple:
                return tuple(vals), True, "literal", {}
            if t is ast.Set:
                try:
                    return set(vals), True, "literal", {}
                except TypeError:
                    return unknown
            return vals, True, "literal", {}
        if t is ast.Dict:
            if len(node.keys) > 200:  # type: ignore[attr-defined]
                return unknown
            out_d: dict[Any, Any] = {}
            for k, v in zip(node.keys, node.values, strict=False):  # type: ignore[attr-defined]
                if k is None:
                    return unknown
                kc = self._eval(k, func, at, depth + 1)
                vc = self._eval(v, func, at, depth + 1)
                if not (kc[1] and vc[1]):
                    return unknown
                try:
                    out_d[kc[0]] = vc[0]
                except TypeError:
                    return unknown
            return out_d, True, "literal", {}
        return unknown

    def _env_name(self, node: ast.AST) -> str | None:
        if isinstance(node, ast.Subscript):
            if self.qual(node.value) in ("os.environ", "environ"):
                s = node.slice
                if isinstance(s, ast.Constant) and isinstance(s.value, str):
                    return s.value
            return None
        if isinstance(node, ast.Call):
            q = self.qual(node.func) or ""
            if (
                q in ("os.getenv", "os.environ.get", "os.environ.setdefault", "os.environ.pop", "environ.get")
                and node.args
                and isinstance(node.args[0], ast.Constant)
                and isinstance(node.args[0].value, str)
            ):
                return node.args[0].value
        return None

    def template(self, node: ast.AST, depth: int = 0) -> str:
        """A string expression as text with `{expr}` for the parts not known statically."""
        if depth > 6:
            return "{" + self.seg(node, 80) + "}"
        if isinstance(node, ast.Constant):
            return str(node.value) if isinstance(node.value, str) else "{" + self.seg(node, 80) + "}"
        if isinstance(node, ast.JoinedStr):
            out = []
            for v in node.values:
                if isinstance(v, ast.Constant):
                    out.append(str(v.value))
                elif isinstance(v, ast.FormattedValue):
                    out.append("{" + self.seg(v.value, 80) + "}")
            return "".join(out)
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            return self.template(node.left, depth + 1) + self.template(node.right, depth + 1)
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod) and isinstance(node.left, ast.Constant):
            fmt = str(node.left.value)
            args = node.right.elts if isinstance(node.right, ast.Tuple) else [node.right]
            it = iter(args)

            def sub(m: re.Match[str]) -> str:
                if m.group(0) == "%%":
                    return "%"
                a = next(it, None)
                return "{" + (self.seg(a, 80) if a is not None else "") + "}"

            return re.sub(r"%%|%[-+ #0]*\d*(?:\.\d+)?[sdifrxge]", sub, fmt)
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "format"
            and isinstance(node.func.value, ast.Constant)
            and isinstance(node.func.value.value, str)
        ):
            fmt = node.func.value.value
            pos = iter(node.args)
            kws = {k.arg: k.value for k in node.keywords if k.arg}

            def fsub(m: re.Match[str]) -> str:
                inner = m.group(1).split(":", 1)[0].split("!", 1)[0]
                if inner == "" or inner.isdigit():
                    a = next(pos, None)
                elif inner in kws:
                    a = kws[inner]
                else:
                    return "{" + inner + "}"
                return "{" + (self.seg(a, 80) if a is not None else "") + "}"

            return re.sub(r"\{([^{}]*)\}", fsub, fmt)
        if (
            isinstance(node, ast.Call)
            and _last(node.func) == "join"
            and self.qual(node.func)
            in (
                "os.path.join",
                "posixpath.join",
            )
        ):
            return "/".join(self.template(a, depth + 1) for a in node.args)
        if isinstance(node, ast.Name) and depth < 3:
            b = self._nearest(node.id, node, self.func_of(node))
            if b is not None and b.kind == "assign" and isinstance(b.value, ast.Constant | ast.JoinedStr | ast.BinOp):
                t = self.template(b.value, depth + 2)
                if t.count("{") < 3:
                    return t
        return "{" + self.seg(node, 80) + "}"
