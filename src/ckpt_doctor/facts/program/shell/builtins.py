"""What builtins change: `cd`, `trap`, `set`, `read`, and files written with `cat > f <<EOF`."""

from __future__ import annotations

import posixpath
import re

from ckpt_doctor.facts.program.shell.env import _Var
from ckpt_doctor.facts.program.shell.expand import _NAME, _Acc
from ckpt_doctor.facts.program.shell.invocation import shell_invocation
from ckpt_doctor.facts.program.shell.limits import _MAX_INNER
from ckpt_doctor.facts.program.shell.program import Command, Trap, Word
from ckpt_doctor.facts.program.shell.walk import _Ctx

_SIGNALS = {
    "0": "EXIT",
    "1": "HUP",
    "2": "INT",
    "3": "QUIT",
    "6": "ABRT",
    "9": "KILL",
    "10": "USR1",
    "12": "USR2",
    "13": "PIPE",
    "14": "ALRM",
    "15": "TERM",
    "17": "CHLD",
}


def _norm_signal(s: str) -> str:
    u = s.upper()
    if u in _SIGNALS:
        return _SIGNALS[u]
    if u.startswith("SIG"):
        u = u[3:]
    return u


class Builtins:
    def effects(self, cmd: Command, name: str, ctx: _Ctx) -> None:
        vals = [w.value for w in cmd.fields]
        args = vals[1:]
        if name in ("cd", "pushd", "popd"):
            self.change_dir(name, cmd, args)
        elif name == "trap":
            self.trap(cmd, ctx)
        elif name == "set":
            self.set_builtin(args)
        elif name == "shift":
            if self.args is not None:
                k = int(args[0]) if args and args[0] is not None and args[0].isdigit() else 1
                self.args = [self.args[0], *self.args[1 + k :]] if len(self.args) > k else self.args[:1]
        elif name == "read":
            self.read_builtin(cmd, args)
        elif name in self.functions and not cmd.exec_:
            self.call_function(name, ctx)
        if cmd.redirects and name in ("cat", "printf", "echo", "tee"):
            self.file_write(cmd, name, args)
        if name in ("bash", "sh", "dash") and self.depth_inner < _MAX_INNER and all(v is not None for v in vals):
            inv = shell_invocation([v for v in vals if v is not None])
            if inv is not None:
                from ckpt_doctor.facts.program.shell.parse import parse_shell

                cmd.inner = parse_shell(
                    inv.script,
                    inv.shell,
                    env={k: v for k, v in cmd.process_env.items() if v is not None},
                    cwd=self.cwd,
                    args=inv.args if inv.args else [inv.shell],
                    _depth=self.depth_inner + 1,
                )

    def change_dir(self, name: str, cmd: Command, args: list[str | None]) -> None:
        args = [a for a in args if not (a is not None and a.startswith("-") and a not in ("-",))]
        new: str | None
        if name == "popd":
            new = self.dirstack.pop() if self.dirstack else None
            self.oldpwd, self.cwd = self.cwd, new
            return
        if name == "pushd":
            if not args:
                self.cwd = None
                return
            self.dirstack.append(self.cwd)
        target = args[0] if args else (self.env.get("HOME").value if self.env.get("HOME") else None)
        if target is None:
            new = None
        elif target == "-":
            new = self.oldpwd
        elif target.startswith("/"):
            new = posixpath.normpath(target)
        elif self.cwd is not None:
            new = posixpath.normpath(posixpath.join(self.cwd, target))
        else:
            new = None
        if new is not None and new.startswith("//"):
            new = "/" + new.lstrip("/")
        self.oldpwd, self.cwd = self.cwd, new

    def trap(self, cmd: Command, ctx: _Ctx) -> None:
        words = [w.text for w in cmd.fields[1:]]
        while words and words[0] in ("-l", "-p", "-P", "--"):
            if words[0] in ("-l", "-p", "-P"):
                return
            words = words[1:]
        if not words:
            return
        if len(words) == 1:
            action, sigs = "-", words
        else:
            action, sigs = words[0], words[1:]
            if re.fullmatch(r"\d+", action):
                action, sigs = "-", words  # `trap 15 2`: POSIX resets when the first operand is a number
        signals = tuple(_norm_signal(s) for s in sigs)
        trap = Trap(signals, action, cmd.line, ctx.conditional)
        if not self.dry:
            self.traps.append(trap)
        state = {t[0]: t for t in self.trap_state}
        for s in signals:
            if action == "-":
                state.pop(s, None)
            else:
                state[s] = (s, action, ctx.conditional, cmd.line)
        self.trap_state = tuple(state.values())

    def set_builtin(self, args: list[str | None]) -> None:
        i = 0
        while i < len(args):
            a = args[i]
            if a is None:
                return
            if a == "--":
                rest = args[i + 1 :]
                head = self.args[0] if self.args else self.shell
                self.args = [head, *[r for r in rest if r is not None]] if None not in rest else None
                return
            if a.startswith(("-", "+")) and len(a) > 1:
                if "a" in a and a[1:].isalpha():
                    self.allexport = a[0] == "-"
                if a[1:] == "o" and i + 1 < len(args):
                    if args[i + 1] == "allexport":
                        self.allexport = a[0] == "-"
                    i += 1
                i += 1
                continue
            rest = args[i:]
            head = self.args[0] if self.args else self.shell
            self.args = [head, *[r for r in rest if r is not None]] if None not in rest else None
            return

    def read_builtin(self, cmd: Command, args: list[str | None]) -> None:
        names: list[str] = []
        delim = "\n"
        raw = False
        i = 0
        while i < len(args):
            a = args[i]
            if a is None:
                i += 1
                continue
            if a.startswith("-") and len(a) > 1:
                opt = a[1:]
                if "r" in opt:
                    raw = True
                if opt.endswith(("d", "a", "n", "N", "p", "t", "u", "i")):
                    if opt.endswith("d") and i + 1 < len(args):
                        delim = args[i + 1] or ""
                    i += 2
                    continue
                i += 1
                continue
            names.append(a)
            i += 1
        if not names:
            names = ["REPLY"]
        data = cmd.stdin
        unres: tuple[str, ...] = ()
        for hd in cmd.heredocs[:1]:
            unres = hd.unresolved
        if data is None:
            for n in names:
                if _NAME.fullmatch(n):
                    self.assign(n, _Var(None, (f"read {n}",)), cmd._start, record=False)
            return
        chunk = data.split("\x00" if delim == "" else delim[0], 1)[0]
        if not raw:
            chunk = chunk.replace("\\\n", "")
            chunk = re.sub(r"\\(.)", r"\1", chunk)
        parts = chunk.strip(" \t\n").split(None, len(names) - 1) if len(names) > 1 else [chunk.strip(" \t\n")]
        for k, n in enumerate(names):
            if _NAME.fullmatch(n):
                v = parts[k] if k < len(parts) else ""
                if unres:
                    word = Word(cmd.text, None, unres, cmd.line, 0, partial=v)
                    self.assign(n, _Var(None, unres, partial=v), cmd._start, word=word)
                else:
                    word = Word(cmd.text, v, (), cmd.line, 0, partial=v, fields=(v,))
                    self.assign(n, _Var(v), cmd._start, word=word)

    def file_write(self, cmd: Command, name: str, args: list[str | None]) -> None:
        args = [w.text for w in cmd.fields[1:]]
        target = None
        for r in cmd.redirects:
            m = re.match(r"\s*(?:1)?(>>?|>\|)\s*(.+?)\s*\Z", r, re.S)
            if m:
                target = m.group(2)
        if target is None:
            if name == "tee" and args and args[-1] and not args[-1].startswith("-"):
                target = args[-1]
            else:
                return
        tword_text = target.strip("'\"")
        path = tword_text
        if "$" in path or "`" in path:
            acc = _Acc()
            self.scan(target, 0, len(target), acc, "W", 0)
            if acc.bad:
                return
            path = acc.text()
        if not path.startswith("/") and self.cwd is not None:
            path = posixpath.normpath(posixpath.join(self.cwd, path))
        if path.startswith("/dev/") or path.startswith("/proc/"):
            return
        content: str | None
        args_l: list[str | None] = list(args)
        del args
        if name in ("cat", "tee"):
            opnds = [a for a in args_l if a and not a.startswith("-")]
            content = cmd.stdin if len(opnds) <= (1 if name == "tee" else 0) else None
        elif name == "printf":
            if len(args_l) == 2 and args_l[0] == "%s":
                content = args_l[1]
            elif len(args_l) == 1 and args_l[0] is not None and "%" not in args_l[0] and "\\" not in args_l[0]:
                content = args_l[0]
            else:
                content = None
        else:  # echo
            rest = list(args_l)
            nl = "\n"
            while rest and rest[0] in ("-n", "-e", "-E"):
                if rest[0] == "-n":
                    nl = ""
                rest = rest[1:]
            content = None if any(a is None for a in rest) else " ".join(a or "" for a in rest) + nl
        if any(">>" in r for r in cmd.redirects):
            old = self.files.get(path, "")
            content = None if content is None or old is None else old + content
        if not self.dry:
            self.files[path] = content
