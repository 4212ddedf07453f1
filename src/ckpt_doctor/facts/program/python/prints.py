"""The lines the program prints or logs, as templates (to recognise its own log lines)."""

from __future__ import annotations

import ast
import re

from ckpt_doctor.facts.program.python.facts import (
    Site,
)
from ckpt_doctor.facts.program.python.tree import (
    _last,
)
from ckpt_doctor.facts.program.python.vocabulary import (
    _PRINT_LEVELS,
)


class Prints:
    def _prints(self) -> list[Site]:
        out: list[Site] = []
        seen: set[tuple[int, str]] = set()
        cands = [
            c
            for name, lst in self.by_attr.items()
            if name in _PRINT_LEVELS
            or name in ("log", "write", "echo", "secho")
            or "print" in name.lower()
            or name in ("rank_zero_info", "rank_zero_warn")
            for c in lst
        ]
        for node, _s, _f in cands:
            msgs = self._print_args(node)
            if not msgs:
                continue
            for tpl in self._templates_of(msgs, node):
                if not re.search(r"[A-Za-z]", tpl):
                    continue
                key = (node.lineno, tpl)
                if key not in seen:
                    seen.add(key)
                    out.append(Site(node.lineno, tpl[:400]))
        out.sort(key=lambda s: s.line)
        return out

    def _print_args(self, node: ast.Call) -> list[ast.AST] | None:
        f = node.func
        name = _last(f)
        if isinstance(f, ast.Name):
            if name == "print" or "print" in name.lower() or name in ("rank_zero_info", "rank_zero_warn"):
                return list(node.args)
            if self.aliases.get(name, "").startswith(("logging.", "loguru.")) and name in _PRINT_LEVELS:
                return list(node.args[:1])
            return None
        if not isinstance(f, ast.Attribute):
            return None
        recv = self.seg(f.value, 80)
        if name in _PRINT_LEVELS and (re.search(r"log", recv, re.I) or recv in ("warnings", "logging")):
            return list(node.args[:1])
        if name == "log" and re.search(r"log", recv, re.I) and len(node.args) >= 2:
            return [node.args[1]]
        if name == "print":
            return list(node.args)
        if name == "write" and recv in ("sys.stdout", "sys.stderr", "tqdm"):
            return list(node.args[:1])
        if name in ("echo", "secho") and recv in ("click", "typer"):
            return list(node.args[:1])
        return None

    def _templates_of(self, msgs: list[ast.AST], call: ast.Call) -> list[str]:
        # a conditional message prints either branch
        for i, m in enumerate(msgs):
            if isinstance(m, ast.IfExp):
                return self._templates_of([*msgs[:i], m.body, *msgs[i + 1 :]], call) + self._templates_of(
                    [*msgs[:i], m.orelse, *msgs[i + 1 :]], call
                )
        sep = " "
        for k in call.keywords:
            if k.arg == "sep" and isinstance(k.value, ast.Constant) and isinstance(k.value.value, str):
                sep = k.value.value
        f = call.func
        level_call = isinstance(f, ast.Attribute) and f.attr in _PRINT_LEVELS | {"log"}
        parts = []
        literal = False
        for m in msgs:
            if isinstance(m, ast.Constant | ast.JoinedStr | ast.BinOp) or (
                isinstance(m, ast.Call) and isinstance(m.func, ast.Attribute) and m.func.attr == "format"
            ):
                tpl = self.template(m)
                literal = literal or any(
                    isinstance(x, ast.Constant) and isinstance(x.value, str) and x.value.strip() for x in ast.walk(m)
                )
                parts.append(tpl)
            else:
                parts.append("{" + self.seg(m, 80) + "}")
        if not literal:
            return []
        text = sep.join(parts)
        if level_call and isinstance(msgs[0], ast.Constant) and len(call.args) > 1:
            rest = call.args[1:] if _last(f) != "log" else call.args[2:]
            it = iter(rest)
            text = re.sub(
                r"%[-+ #0]*\d*(?:\.\d+)?[sdifrxge]",
                lambda m: "{" + self.seg(next(it, None), 80) + "}",
                text,
            )
        return [text]
