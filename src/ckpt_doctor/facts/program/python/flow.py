"""Which names flow into which: users of a name, what a set of names reaches, aliases."""

from __future__ import annotations

import ast
from collections import defaultdict
from collections.abc import Iterable


class Flow:
    @property
    def users(self) -> dict[str, set[str]]:
        if self._users is None:
            users: dict[str, set[str]] = defaultdict(set)
            for stmt, targets in self.stmt_targets:
                for u in self.uses.get(id(stmt), ()):
                    if u:
                        users[u].update(targets)
            self._users = users
        return self._users

    def reach(self, seeds: Iterable[str], hops: int = 3, limit: int = 200) -> set[str]:
        """The names a value flows into within `hops` assignments (`path = os.path.join(d, latest)`)."""
        seen = set(seeds)
        level = list(seen)
        users = self.users
        for _ in range(hops):
            nxt = []
            for n in level:
                for u in users.get(n, ()):
                    if u not in seen:
                        seen.add(u)
                        nxt.append(u)
            if not nxt or len(seen) >= limit:
                break
            level = nxt
        return seen

    def _aliases_of(self, seeds: set[str]) -> dict[str, bool]:
        """The seeds and the names bound to them as a whole (`xs = ckpts`, `found = find_latest(d)` for a
        `F()` seed): name -> whether it may live in another scope."""
        out = {n: False for n in seeds if not n.endswith("()")}
        for n in seeds:
            if n.endswith("()"):
                for call, stmt, _f in self.by_attr.get(n[:-2], ()):
                    if isinstance(call.func, ast.Name):
                        for t in self._bound_names(call, stmt):
                            out[t] = True
            else:
                for t in self.alias_of.get(n, ()):
                    out.setdefault(t, False)
        return out

    def seeds_of(self, node: ast.AST, stmt: ast.AST | None, func: str) -> set[str]:
        if stmt is None:
            return set()
        if isinstance(stmt, ast.Assign | ast.AnnAssign | ast.AugAssign):
            names: set[str] = set()
            tgs = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            for tg in tgs:
                for n in ast.walk(tg):
                    if isinstance(n, ast.Name):
                        names.add(n.id)
            return names
        if isinstance(stmt, ast.Return) and func:
            return {func + "()"}
        if isinstance(stmt, ast.For):
            return {n.id for n in ast.walk(stmt.target) if isinstance(n, ast.Name)}
        return set()
