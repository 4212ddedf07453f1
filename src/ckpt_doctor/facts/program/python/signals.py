"""Whether the program handles SIGTERM, and how it ends once the handler ran.

The second question is rule sigterm-exit-zero's: since Kubernetes 1.27 a pod deleted or evicted whose
containers exit 0 ends in phase Succeeded, and its Job counts it. A handler that asks training to stop (a
flag a callback or the loop reads, `control.should_training_stop`) and then lets the program fall off its
end exits 0; one that exits with another code, re-raises the signal or raises does not.
"""

from __future__ import annotations

import ast

from ckpt_doctor.facts.program.python.facts import (
    SigtermEnd,
    Site,
)
from ckpt_doctor.facts.program.python.tree import (
    _last,
)

_EXITS = {"sys.exit", "exit", "quit", "os._exit", "_exit"}
_KILLS = {"os.kill", "os.killpg", "signal.raise_signal", "raise_signal", "signal.pthread_kill"}
# attributes a framework reads to stop training at the end of the step (HF TrainerControl, Lightning's Trainer)
_STOPS = {"should_training_stop", "should_stop"}
_SETTERS = ("update", "set", "__setitem__", "append", "put", "put_nowait")  # `STOP.update(now=True)`, an Event
_CATCH_ALL = {"BaseException", "Exception", "KeyboardInterrupt"}


class Signals:
    def _sigterm(self) -> Site | None:
        best = self._sigterm_call()
        return self.site(best) if best is not None else None

    def _sigterm_call(self) -> ast.Call | None:
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
        return best

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

    # -- how the program ends after the handler ran -----------------------------------------------
    def _sigterm_end(self) -> SigtermEnd | None:
        call = self._sigterm_call()
        if call is None:
            return self._lightning_stop()
        handler = self.site(call)
        body = self._handler_body(call.args[1])
        if body is None:
            return SigtermEnd("unknown", f"the handler ({self.seg(call.args[1], 80)}) is not defined here", handler)
        parents = self._parents()
        inside = {id(n) for b in body for n in ast.walk(b)}
        # 1. the handler ends the program itself
        for node in _in_order(body):
            got = self._ending(node, parents, inside)
            if got is not None:
                code, why = got
                return SigtermEnd(code, why, handler, self.site(node), "high" if code != "unknown" else "low")
        # 2. the handler asks training to stop: a flag something outside it tests, or a framework's stop attribute
        flags, direct = self._flags(body)
        if direct is not None:
            stop: ast.AST | None = direct
        else:
            if not flags:
                return SigtermEnd("continues", "the handler neither exits nor sets anything training reads", handler)
            stop = self._flag_test(flags, inside)
            if stop is None:
                if self._flag_read(flags, inside):
                    return SigtermEnd("unknown", f"what reads {', '.join(sorted(flags))} cannot be followed", handler)
                return SigtermEnd("continues", f"nothing reads what the handler sets ({', '.join(sorted(flags))})",
                                  handler)  # fmt: skip
        # 3. after the stop: an exit the stop leads to, else the program falls off its end (exit 0)
        guarded = self._exit_after_stop(flags, inside, parents)
        if guarded is not None:
            return SigtermEnd(guarded[0], guarded[1], handler, guarded[2], "medium")
        return SigtermEnd(
            "zero",
            "the handler asks training to stop and the program then ends normally, with exit code 0",
            handler,
            self.site(stop),
            "medium",
        )

    def _lightning_stop(self) -> SigtermEnd | None:
        """Lightning installs its own SIGTERM handler (`trainer.received_sigterm`); a callback that tests it and
        sets `trainer.should_stop` stops training, and `fit` then returns (recordings lightning-*-sigterm-handler:
        exit 0)."""
        for n in ast.walk(self.tree):
            if not isinstance(n, ast.If) or not self._reads(n.test, {"received_sigterm"}):
                continue
            stops = [
                t for b in n.body for t in ast.walk(b)
                if isinstance(t, ast.Attribute) and t.attr in _STOPS and isinstance(t.ctx, ast.Store)
            ]  # fmt: skip
            if not stops:
                continue
            inside = {id(x) for x in ast.walk(n)}
            site = self.site(n)
            after = self._exit_after_stop({"received_sigterm"}, inside, self._parents())
            if after is not None:
                return SigtermEnd(after[0], after[1], site, after[2], "medium")
            why = (
                "Lightning's SIGTERM handler sets trainer.received_sigterm; the callback stops training and fit() "
                "returns: the program ends normally, with exit code 0"
            )
            return SigtermEnd("zero", why, site, self.site(stops[0]))
        return None

    def _lightning_default(self, fit: Site) -> SigtermEnd:
        """A Lightning `fit` with no SIGTERM handler of the program's own: Lightning's handler sets
        `received_sigterm`, the loop raises SIGTERMException, a SystemExit without a code, and the process exits 0
        once teardown ends inside the grace period (recordings lightning-2.5/2.6-sigterm-no-handler-take2; SIGKILLed
        at the grace period's end in the first takes). The upstream change Lightning-AI/pytorch-lightning#21623 gives
        it code 143. A program that catches it (or any SystemExit), or reacts in `on_exception`, is not
        followed."""
        for n in ast.walk(self.tree):
            if isinstance(n, ast.ExceptHandler):
                types = [] if n.type is None else n.type.elts if isinstance(n.type, ast.Tuple) else [n.type]
                names = {_last(t) for t in types}
                if n.type is None or names & {"SIGTERMException", "SystemExit", "BaseException"}:
                    caught = "except:" if n.type is None else f"except {self.seg(n.type, 60)}"
                    why = f"{caught} catches Lightning's SIGTERMException: the exit code that follows is not followed"
                    return SigtermEnd("unknown", why, fit, self.site(n), "low")
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == "on_exception":
                why = "a callback's on_exception sees Lightning's SIGTERMException: what it does then is not followed"
                return SigtermEnd("unknown", why, fit, self.site(n), "low")
        why = (
            "Lightning answers SIGTERM with SIGTERMException, a SystemExit without a code, so the process exits 0 "
            "once its teardown ends inside the grace period (recorded with Lightning 2.5.6 and 2.6.6; "
            "the upstream change Lightning-AI/pytorch-lightning#21623 gives it code 143)"
        )
        fix = (
            "catch SIGTERMException around trainer.fit(...) and exit non-zero once the checkpoint is written "
            "(`except SIGTERMException: sys.exit(143)`), or run a Lightning release where SIGTERMException "
            "carries code 143"
        )
        return SigtermEnd("zero", why, fit, None, "medium", fix)

    def _handler_body(self, h: ast.AST) -> list[ast.AST] | None:
        if isinstance(h, ast.Lambda):
            return [h.body]
        if isinstance(h, ast.Call) and _last(h.func) == "partial" and h.args:
            return self._handler_body(h.args[0])
        name = h.id if isinstance(h, ast.Name) else h.attr if isinstance(h, ast.Attribute) else None
        if name is None:
            return None
        defs = self.funcs.get(name) or []
        if len(defs) != 1:
            return None
        return list(defs[0].body)  # type: ignore[attr-defined]

    def _parents(self) -> dict[int, ast.AST]:
        got = self.__dict__.get("_parent_map")
        if got is None:
            got = {}
            for n in ast.walk(self.tree):
                for c in ast.iter_child_nodes(n):
                    got[id(c)] = n
            self.__dict__["_parent_map"] = got
        return got

    def _code(self, arg: ast.AST | None) -> str:
        """zero | nonzero | unknown: the exit status `sys.exit(arg)` gives."""
        if arg is None or (isinstance(arg, ast.Constant) and arg.value is None):
            return "zero"
        if isinstance(arg, ast.Constant):
            v = arg.value
            if isinstance(v, bool):
                return "nonzero" if v else "zero"
            if isinstance(v, int):
                return "zero" if v == 0 else "nonzero"
            if isinstance(v, str):
                return "nonzero"  # printed, exit status 1
            return "unknown"
        if isinstance(arg, (ast.UnaryOp, ast.BinOp)):
            v = _arith(arg)
            return "unknown" if v is None else "zero" if v == 0 else "nonzero"
        if isinstance(arg, ast.Call) and isinstance(arg.func, ast.Name):
            defs = self.funcs.get(arg.func.id) or []
            if len(defs) == 1:  # sys.exit(main()) where main returns nothing
                rets = [r for r in ast.walk(defs[0]) if isinstance(r, ast.Return) and r.value is not None]
                if not rets:
                    return "zero"
                codes = {self._code(r.value) for r in rets}
                return codes.pop() if len(codes) == 1 else "unknown"
        return "unknown"

    def _ending(self, node: ast.AST, parents: dict[int, ast.AST], inside: set[int]) -> tuple[str, str] | None:
        """(zero|nonzero|unknown, why) when `node` ends the program, else None."""
        if isinstance(node, ast.Call):
            q = self.qual(node.func) or _last(node.func)
            if q in _EXITS:
                code = self._code(node.args[0] if node.args else None)
                return code, f"{self.seg(node, 80)} exits with {_words(code)}"
            if q in _KILLS and any("SIGTERM" in self.seg(a) or "SIGKILL" in self.seg(a) for a in node.args):
                return "nonzero", f"{self.seg(node, 80)} dies of the signal (exit code 143 or 137)"
        if isinstance(node, ast.Raise):
            exc = node.exc
            if exc is None:
                return None
            name = _last(exc.func) if isinstance(exc, ast.Call) else _last(exc)
            if name == "SystemExit":
                arg = exc.args[0] if isinstance(exc, ast.Call) and exc.args else None
                code = self._code(arg)
                return code, f"raise {self.seg(exc, 60)} exits with {_words(code)}"
            if self._caught(name):
                return "unknown", f"raise {name}: the program catches it, and what it does then is not followed"
            return "nonzero", f"raise {name} is not caught: the program exits 1"
        return None

    def _caught(self, name: str) -> bool:
        for n in ast.walk(self.tree):
            if isinstance(n, ast.ExceptHandler):
                if n.type is None:
                    return True
                names = [_last(e) for e in (n.type.elts if isinstance(n.type, ast.Tuple) else [n.type])]
                if name in names or any(x in _CATCH_ALL for x in names):
                    return True
        return False

    def _flags(self, body: list[ast.AST]) -> tuple[set[str], ast.AST | None]:
        """The names the handler sets (a flag, a key of a dict, an attribute, an Event) and a direct stop."""
        flags: set[str] = set()
        for node in _in_order(body):
            targets: list[ast.AST] = []
            if isinstance(node, ast.Assign):
                targets = list(node.targets)
            elif isinstance(node, (ast.AugAssign, ast.AnnAssign, ast.NamedExpr)):
                targets = [node.target]
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _SETTERS:
                base = _last(node.func.value)
                if base:
                    flags.add(base)
            for t in targets:
                if isinstance(t, ast.Attribute) and t.attr in _STOPS:
                    return flags, node
                if isinstance(t, ast.Subscript):
                    t = t.value
                name = _last(t)
                if name:
                    flags.add(name)
        return flags, None

    def _reads(self, node: ast.AST, flags: set[str]) -> bool:
        for n in ast.walk(node):
            if isinstance(n, ast.Name) and n.id in flags:
                return True
            if isinstance(n, ast.Attribute) and n.attr in flags:
                return True
        return False

    def _flag_test(self, flags: set[str], inside: set[int]) -> ast.AST | None:
        """The first test outside the handler that reads one of `flags` (`if self.stop:`, `while not STOP[…]`)."""
        for n in ast.walk(self.tree):
            if id(n) in inside:
                continue
            test = getattr(n, "test", None) if isinstance(n, (ast.If, ast.While, ast.IfExp)) else None
            if test is not None and self._reads(test, flags):
                return n
        return None

    def _flag_read(self, flags: set[str], inside: set[int]) -> bool:
        for n in ast.walk(self.tree):
            if id(n) in inside:
                continue
            if isinstance(n, ast.Name) and n.id in flags and isinstance(n.ctx, ast.Load):
                return True
            if isinstance(n, ast.Attribute) and n.attr in flags and isinstance(n.ctx, ast.Load):
                return True
        return False

    def _exit_after_stop(
        self, flags: set[str], inside: set[int], parents: dict[int, ast.AST]
    ) -> tuple[str, str, Site] | None:
        """An exit outside the handler that decides the code after a stop: one under a test of the handler's
        flag, or one at the program's end with a code that is not 0 or cannot be told."""
        loose: tuple[str, str, Site] | None = None
        for n in ast.walk(self.tree):
            if id(n) in inside:
                continue
            got = self._ending(n, parents, inside)
            if got is None:
                continue
            code, why = got
            if flags and self._guarded(n, flags, parents):
                return code, why + " once the handler's flag is set", self.site(n)
            if code == "unknown" and not self._guarded_any(n, parents) and loose is None:
                loose = ("unknown", why + ", and its code after a stop cannot be told", self.site(n))
        return loose

    def _guarded(self, node: ast.AST, flags: set[str], parents: dict[int, ast.AST]) -> bool:
        p = parents.get(id(node))
        while p is not None:
            if isinstance(p, (ast.If, ast.While)) and self._reads(p.test, flags):
                return True
            p = parents.get(id(p))
        return False

    def _guarded_any(self, node: ast.AST, parents: dict[int, ast.AST]) -> bool:
        """Under an `if`/`try` (an error path), not on the way out of a run that went well."""
        p = parents.get(id(node))
        while p is not None:
            if isinstance(p, ast.If) and not _is_main_guard(p):
                return True
            if isinstance(p, (ast.ExceptHandler, ast.While, ast.For)):
                return True
            p = parents.get(id(p))
        return False


def _arith(n: ast.AST) -> int | None:
    """`128 + 15`, `-1`: small integer arithmetic, else None."""
    if isinstance(n, ast.Constant) and isinstance(n.value, int):
        return n.value
    if isinstance(n, ast.UnaryOp) and isinstance(n.op, (ast.USub, ast.UAdd)):
        v = _arith(n.operand)
        return None if v is None else (-v if isinstance(n.op, ast.USub) else v)
    if isinstance(n, ast.BinOp) and isinstance(n.op, (ast.Add, ast.Sub)):
        a, b = _arith(n.left), _arith(n.right)
        if a is None or b is None:
            return None
        return a + b if isinstance(n.op, ast.Add) else a - b
    return None


def _is_main_guard(node: ast.If) -> bool:
    t = node.test
    return isinstance(t, ast.Compare) and isinstance(t.left, ast.Name) and t.left.id == "__name__"


def _words(code: str) -> str:
    return {"zero": "code 0", "nonzero": "a non-zero code"}.get(code, "a code that cannot be told")


def _in_order(body: list[ast.AST]) -> list[ast.AST]:
    """Every node of the handler's body in source order (not into nested functions)."""
    out: list[ast.AST] = []
    stack = list(reversed(body))
    while stack:
        n = stack.pop()
        out.append(n)
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        stack.extend(reversed(list(ast.iter_child_nodes(n))))
    return out
