"""The keyword calls that configure a framework (`TrainingArguments(...)`, `trainer.train(...)`),
found by the framework modules' hooks.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from collections.abc import Callable
from typing import Any, TypeVar

from ckpt_doctor import frameworks
from ckpt_doctor.facts.program.python.facts import (
    Call,
    Value,
)
from ckpt_doctor.facts.program.python.tree import (
    _last,
    _pos,
)

T = TypeVar("T")


class Calls:
    def _local_class_bases(self, name: str) -> list[str] | None:
        c = self.classes.get(name)
        if c is None:
            return None
        return [self.qual(b) or self.seg(b) for b in c.bases]

    def _make_call(self, node: ast.Call, func: str, label: str | None = None) -> Call:
        kwargs: dict[str, Value] = {}
        for k in node.keywords:
            if k.arg is not None:
                kwargs[k.arg] = self.value(k.value, func, node)
                continue
            # **mapping: expand a literal dict or a name bound to one
            d = k.value
            if isinstance(d, ast.Name):
                b = self._nearest(d.id, node, func)
                d = b.value if b is not None and b.kind == "assign" and b.value is not None else d
            if isinstance(d, ast.Dict) and all(isinstance(x, ast.Constant) for x in d.keys):
                for kk, vv in zip(d.keys, d.values, strict=False):
                    if isinstance(kk, ast.Constant) and isinstance(kk.value, str):
                        kwargs.setdefault(kk.value, self.value(vv, func, node))
            elif isinstance(d, ast.Call) and _last(d.func) == "dict" and not d.args:
                for kk in d.keywords:
                    if kk.arg:
                        kwargs.setdefault(kk.arg, self.value(kk.value, func, node))
            else:
                kwargs["**"] = self.value(k.value, func, node)
        args = tuple(self.value(a, func, node) for a in node.args[:6])
        return Call(label or _last(node.func), self.site(node), kwargs, args, self.qual(node.func))

    def _bound_names(self, node: ast.Call, stmt: ast.AST | None) -> list[str]:
        if isinstance(stmt, ast.Assign) and stmt.value is node:
            return [t.id for t in stmt.targets if isinstance(t, ast.Name)]
        if isinstance(stmt, ast.AnnAssign) and stmt.value is node and isinstance(stmt.target, ast.Name):
            return [stmt.target.id]
        return []

    def _calls(self) -> dict[str, list[Call]]:
        """Each call, offered to the framework modules' hooks until one claims it; then each
        framework reads the method calls on what it found (a trainer's `.train()`, `.fit()`)."""
        out: dict[str, list[Call]] = defaultdict(list)
        hooks = frameworks.python_hooks()
        claims = [h.calls for h in hooks if h.calls is not None]
        for node, stmt, func in self.calls:
            name = _last(node.func)
            if not name:
                continue
            for claim in claims:
                if claim(self, node, stmt, func, name, out):
                    break
        for h in hooks:
            if h.methods is not None:
                h.methods(self, out)
        for v in out.values():
            v.sort(key=lambda c: c.site.line)
        return dict(out)

    def fw_state(self, key: str, factory: Callable[[], T]) -> T:
        """A framework hook's own notes about this program (the trainers it found, ...)."""
        states: dict[str, Any] = self.__dict__.setdefault("_fw_states", {})
        got = states.get(key)
        if got is None:
            got = states[key] = factory()
        return got  # type: ignore[no-any-return]

    def _with_attr_sets(self, c: Call, names: list[str], func: str) -> Call:
        """`args = TrainingArguments(...); args.save_only_model = True` counts as a keyword."""
        extra: dict[str, Value] = {}
        for n in names:
            for attr, value, stmt in self.attr_sets.get(n, ()):
                if _pos(stmt) > (c.site.line, 0) and attr not in c.kwargs:
                    extra[attr] = self.value(value, func, stmt)
        if not extra:
            return c
        kw = dict(c.kwargs)
        kw.update(extra)
        return Call(c.name, c.site, kw, c.args, c.qualname)
