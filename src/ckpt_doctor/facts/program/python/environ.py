"""The environment variables the program reads."""

from __future__ import annotations

import ast
import re

from ckpt_doctor.facts.program.python.facts import (
    Site,
)


class Environ:
    def _env_reads(self) -> dict[str, Site]:
        found: list[tuple[int, str, ast.AST]] = []
        for attr in ("getenv", "get", "setdefault", "pop"):
            for node, _s, _f in self.by_attr.get(attr, ()):
                name = self._env_name(node)
                if name is not None:
                    found.append((node.lineno, name, node))
        for sub in list(self.subs_of.values()):
            v = sub.value
            if not (
                (isinstance(v, ast.Attribute) and v.attr == "environ")
                or (isinstance(v, ast.Name) and v.id == "environ")
            ):
                continue
            name = self._env_name(sub)
            if name is not None:
                found.append((sub.lineno, name, sub))
        for n in ast.walk(self.tree) if self._has_in_environ() else ():
            if (
                isinstance(n, ast.Compare)
                and len(n.ops) == 1
                and isinstance(n.ops[0], ast.In | ast.NotIn)
                and isinstance(n.left, ast.Constant)
                and isinstance(n.left.value, str)
                and self.qual(n.comparators[0]) in ("os.environ", "environ")
            ):
                found.append((n.lineno, n.left.value, n))
        out: dict[str, Site] = {}
        for _line, name, node in sorted(found, key=lambda x: x[0]):
            out.setdefault(name, self.site(node))
        return out

    def _has_in_environ(self) -> bool:
        return bool(re.search(r"\bin\s+(?:os\.)?environ\b", self.src))
