"""Whether the program handles SIGTERM."""

from __future__ import annotations

import ast

from ckpt_doctor.facts.program.python.facts import (
    Site,
)
from ckpt_doctor.facts.program.python.tree import (
    _last,
)


class Signals:
    def _sigterm(self) -> Site | None:
        cands = list(self.by_attr.get("signal", ())) + list(self.by_attr.get("add_signal_handler", ()))
        best: ast.Call | None = None
        for node, _s, func in cands:
            q = self.qual(node.func) or ""
            if _last(node.func) == "signal" and q not in ("signal.signal", "signal"):
                continue
            if len(node.args) < 2:
                continue
            sig, handler = node.args[0], node.args[1]
            hs = self.seg(handler)
            if hs.endswith(("SIG_DFL", "SIG_IGN")):
                continue
            if self._is_sigterm(sig, func) and (best is None or node.lineno < best.lineno):
                best = node
        return self.site(best) if best is not None else None

    def _is_sigterm(self, sig: ast.AST, func: str) -> bool:
        s = self.seg(sig)
        if "SIGTERM" in s:
            return True
        if isinstance(sig, ast.Constant) and sig.value == 15:
            return True
        if isinstance(sig, ast.Name):
            for b in self.binds_any.get(sig.id, ()):
                if b.kind == "for" and isinstance(b.stmt, ast.For) and "SIGTERM" in self.seg(b.stmt.iter):
                    return True
                if b.kind == "assign" and b.value is not None and "SIGTERM" in self.seg(b.value):
                    return True
        return False
