"""Values that change on every start: the clock, the host or pod name, the process id, a random id.

A checkpoint directory built from one (`os.path.join(CKPT_DIR, time.strftime("run-%Y%m%d-%H%M%S"))`) is a new,
empty directory after every restart, so the restart finds nothing to resume (recordings `*-dir-changes`,
`ckpt-dir-changed`). The reader follows an expression through the simple bindings it uses (a name assigned
once, at module level or in the function) and names the first such part it finds.
"""

from __future__ import annotations

import ast

from ckpt_doctor.facts.program.python.tree import _MAX_SCOPE_BINDINGS

# calls whose result differs from one start of the program to the next
CLOCK = frozenset({
    "time.time", "time.time_ns", "time.strftime", "time.localtime", "time.gmtime", "time.ctime", "time.asctime",
    "datetime.now", "datetime.utcnow", "datetime.today", "date.today",
    "datetime.datetime.now", "datetime.datetime.utcnow", "datetime.datetime.today", "datetime.date.today",
    "pendulum.now", "arrow.now", "arrow.utcnow",
})  # fmt: skip
IDENTITY = frozenset({
    "uuid.uuid1", "uuid.uuid4", "socket.gethostname", "socket.getfqdn", "platform.node", "os.getpid", "os.uname",
    "os.urandom", "secrets.token_hex", "secrets.token_urlsafe", "random.random", "random.randint",
    "random.getrandbits", "tempfile.mkdtemp", "wandb.util.generate_id",
})  # fmt: skip
# environment variables that name the pod or host: a new value for every pod
PER_POD_ENV = frozenset({"HOSTNAME", "POD_NAME", "MY_POD_NAME", "POD_UID", "MY_POD_UID", "K8S_POD_NAME"})
_MAX_DEPTH = 5


class Dynamics:
    def dynamic_part(
        self, node: ast.AST | None, func: str = "", at: ast.AST | None = None, depth: int = 0
    ) -> str | None:
        """The part of `node` whose value changes with every start, as written (`time.strftime("run-%Y%m%d")`),
        followed through the bindings of the names it reads; None when there is none."""
        if node is None or depth > _MAX_DEPTH:
            return None
        memo: dict[tuple[int, str], str | None] = self.__dict__.setdefault("_dyn_memo", {})
        key = (id(node), func)
        if key in memo:
            return memo[key]
        memo[key] = None  # a cycle of bindings finds nothing
        got = self._dynamic_part(node, func, at if at is not None else node, depth)
        memo[key] = got
        return got

    def _dynamic_part(self, node: ast.AST, func: str, at: ast.AST, depth: int) -> str | None:
        names: list[ast.Name] = []
        for n in ast.walk(node):
            if isinstance(n, ast.Call):
                q = self._dyn_qual(n.func)
                if q is not None and (q in CLOCK or q in IDENTITY):
                    return self.seg(n, 120) or q  # type: ignore[attr-defined,no-any-return]
                env = self._env_name(n)  # type: ignore[attr-defined]
                if env in PER_POD_ENV:
                    return self.seg(n, 120) or env  # type: ignore[attr-defined,no-any-return]
            elif isinstance(n, ast.Subscript):
                env = self._env_name(n)  # type: ignore[attr-defined]
                if env in PER_POD_ENV:
                    return self.seg(n, 120) or env  # type: ignore[attr-defined,no-any-return]
            elif isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load):
                names.append(n)
        for n in names:
            binds, _ = self._preceding(n.id, at, func)  # type: ignore[attr-defined]
            if not binds or len(binds) > _MAX_SCOPE_BINDINGS:
                continue
            for b in binds:
                if b.kind == "assign" and b.value is not None:
                    got = self.dynamic_part(b.value, b.func, b.stmt, depth + 1)
                    if got is not None:
                        return got
        return None

    def _dyn_qual(self, f: ast.AST) -> str | None:
        """The qualified name of a called function, without the calls in between: `datetime.now().strftime`
        is `datetime.now` (what makes it differ), `datetime.datetime.now` stays itself."""
        while isinstance(f, ast.Attribute) and isinstance(f.value, ast.Call):
            f = f.value.func
        return self.qual(f)  # type: ignore[attr-defined,no-any-return]

    def _dynamic_names(self) -> dict[str, tuple[str, int]]:
        """Names bound (by a plain assignment) to a value that changes with every start: name -> (the part that
        changes, the line of the binding). Read by the engine for save paths it has only as text."""
        out: dict[str, tuple[str, int]] = {}
        for name, binds in self.binds_any.items():  # type: ignore[attr-defined]
            if len(binds) > _MAX_SCOPE_BINDINGS:
                continue
            for b in binds:
                if b.kind != "assign" or b.value is None or not _has_call_or_name(b.value):
                    continue
                got = self.dynamic_part(b.value, b.func, b.stmt)
                if got is not None:
                    out.setdefault(name, (got, getattr(b.stmt, "lineno", 0)))
                    break
        return out


def _has_call_or_name(node: ast.AST) -> bool:
    return not isinstance(node, ast.Constant)
