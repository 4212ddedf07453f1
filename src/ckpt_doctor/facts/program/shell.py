"""A container's shell script read the way bash reads it.

Kubeflow trainer containers very often run ``bash -c "<script>"``. This module reads such a
script with a real parser (tree-sitter-bash) and answers what callers need:

* every simple command, in source order, with its words expanded the way bash would expand
  them (assignments and ``export`` earlier in the script, the container's env, ``${VAR:-x}``,
  quoting, word splitting, arrays) and with the parts that cannot be known statically
  (``$(hostname)``, ``$RANDOM``, unset variables) reported instead of guessed;
* here-documents as bash reads them (tree-sitter-bash gets several forms wrong, so a small
  pre-scanner finds them first; see ``_prescan``);
* the command that starts training, and whether SIGTERM reaches it (``ShellProgram.pid1``),
  following what was measured with bash 5.2.15 and dash 0.5.12 running as PID 1 in a PID
  namespace (``/work/shared/knowledge/guide-and-frameworks.md`` §2, contracts §6).

Nothing here runs a shell, touches the file system or imports anything heavy at import time:
the parser is imported inside ``_parser()`` the first time a script is read.
"""

from __future__ import annotations

import ast
import bisect
import operator
import posixpath
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ckpt_doctor import frameworks

__all__ = [
    "SHELLS",
    "Command",
    "HereDoc",
    "ShellInvocation",
    "ShellProgram",
    "Trap",
    "Word",
    "expand_word",
    "kube_env",
    "kube_expand",
    "parse_argv",
    "parse_shell",
    "shell_invocation",
    "split_shell_argv",
    "trainer_kind",
]

SHELLS = frozenset({"sh", "bash", "dash", "ash", "zsh", "ksh", "mksh", "busybox"})

# raise instead of recording "internal error" (tests set this; callers never need it)
_STRICT = False

_MAX_VALUE = 1 << 20  # a value longer than this is reported unresolvable (`a=$a$a` loops)
_MAX_DEPTH = 150  # nesting depth at which the walker stops descending
_MAX_INNER = 2  # how deep `bash -c '...'` inside a script is read


# --------------------------------------------------------------------------------------------
# public data


@dataclass(frozen=True)
class Word:
    """One word as written and as bash would see it."""

    raw: str  # source text of the word
    value: str | None  # after quote removal and expansion; None when any part cannot be resolved
    unresolved: tuple[str, ...]  # what could not be resolved: NAME, "$(cmd)", "`cmd`", "$RANDOM", "~"...
    line: int  # 0-based line in the script
    col: int
    # the expansion with unresolvable parts left as written (always a string)
    partial: str = ""
    # the fields bash makes of it (word splitting, "$@", arrays); None when unresolved
    fields: tuple[str, ...] | None = None
    # variables that were not set and whose ${VAR:-default} default was used
    assumed: tuple[str, ...] = ()

    @property
    def text(self) -> str:
        """The value when known, else the partial expansion."""
        return self.value if self.value is not None else self.partial


@dataclass(frozen=True)
class HereDoc:
    """A here-document as bash reads it."""

    delimiter: str  # after quote removal
    quoted: bool  # any quoting in the delimiter: the body is taken literally
    strip_tabs: bool  # `<<-`
    raw: str  # the body as written (leading tabs already stripped for <<-)
    body: str  # what the command reads: raw when quoted, else expanded (unresolved parts as written)
    unresolved: tuple[str, ...]
    line: int  # 0-based line of the `<<` operator
    body_line: int  # 0-based line where the body starts
    terminated: bool  # False when the script ended before the delimiter line


@dataclass
class Trap:
    signals: tuple[str, ...]  # normalised: TERM, INT, EXIT, ERR, ...
    action: str  # "" = ignore, "-" = reset
    line: int
    conditional: bool = False


@dataclass(eq=False)
class Command:
    """One simple command."""

    argv: list[Word]  # as written; leading assignments and `exec` (with its options) removed
    text: str  # the command's source text (here-document bodies are not part of it)
    line: int  # 0-based line where it starts
    exec_: bool = False  # run through `exec`
    pipeline: bool = False  # part of a pipeline (a | b)
    redirected: bool = False  # any redirection, a here-document or here-string included
    heredoc: str | None = None  # body of the (first) here-document it reads
    background: bool = False  # ends with & (or is inside a backgrounded list)
    conditional: bool = False  # inside if/while/for/case/function/subshell, or after && / ||
    cwd: str | None = None  # working directory at that point (None when unknown)
    last: bool = False  # the last simple command of the top-level script
    # ---- more facts
    col: int = 0  # column where it starts (its first assignment or word)
    fields: list[Word] = field(default_factory=list)  # argv after word splitting: one Word per field
    assigns: dict[str, str | None] = field(default_factory=dict)  # FOO=bar cmd
    heredocs: list[HereDoc] = field(default_factory=list)
    redirects: list[str] = field(default_factory=list)  # source text of each redirection
    stdin: str | None = None  # what it reads on stdin when known (here-document or here-string)
    negated: bool = False  # `! cmd`
    timed: bool = False  # `time cmd`
    substitution: bool = False  # runs inside $(...), `...` or <(...)
    within: tuple[str, ...] = ()  # enclosing constructs, outermost first: "if", "function f", ...
    end_line: int = 0
    inner: ShellProgram | None = None  # the script of `bash -c '...'` run by this command
    _env: _Env | None = field(default=None, repr=False)
    _traps: tuple[tuple[str, str, bool, int], ...] = field(default=(), repr=False)
    _start: int = field(default=0, repr=False)
    _subshell: bool = field(default=False, repr=False)

    @property
    def env(self) -> dict[str, str | None]:
        """Shell variables visible at that point (None = assigned but unresolvable).

        Arrays appear with their elements joined by spaces.
        """
        out = self._env.as_dict() if self._env is not None else {}
        out.update(self.assigns)
        return out

    @property
    def process_env(self) -> dict[str, str | None]:
        """What the started process sees: exported variables and `FOO=bar cmd` assignments."""
        out: dict[str, str | None] = {}
        if self._env is not None:
            for name, var in self._env.items():
                if var.exported and var.array is None:
                    out[name] = var.value
        out.update(self.assigns)
        return out

    @property
    def values(self) -> list[str]:
        """The fields' values, unresolved ones as partially expanded text."""
        return [w.text for w in self.fields]

    @property
    def name(self) -> str | None:
        return self.fields[0].text if self.fields else None

    @property
    def unresolved(self) -> tuple[str, ...]:
        out: list[str] = []
        for w in self.argv:
            for u in w.unresolved:
                if u not in out:
                    out.append(u)
        return tuple(out)


@dataclass
class ShellProgram:
    shell: str
    script: str
    commands: list[Command]  # every simple command in source order, including nested ones
    assignments: list[tuple[str, Word, bool, int]]  # (name, value, exported, line)
    traps: list[Trap]
    errors: list[str]  # parse errors (the parser recovered); empty when clean
    heredocs: list[HereDoc] = field(default_factory=list)
    files: dict[str, str | None] = field(default_factory=dict)  # files the script writes (cat > f <<EOF ...)
    functions: dict[str, int] = field(default_factory=dict)  # name -> line of definition
    invocation: ShellInvocation | None = None
    _tail: list[str] = field(default_factory=list, repr=False)  # why bash would not exec its last command
    _tail_cmd: Command | None = field(default=None, repr=False)
    _fn_cmds: dict[str, set[str]] = field(default_factory=dict, repr=False)

    # ---------------------------------------------------------------- trainer
    def trainer(self) -> Command | None:
        """The command that starts training, preferring the last such one.

        python/python3.x (not `-m pip`, `--version` or a one-line `-c` probe), torchrun,
        `python -m torch.distributed.run`, `accelerate launch`, deepspeed, `llamafactory-cli train`,
        `tune run`, `lightning run`, ... , mpirun/srun wrapping one of these, or a *.sh / *.py script
        run directly. Commands inside $(...) do not count; `bash -c '...'` is looked into.
        """
        for cmd in reversed(self.commands):
            if cmd.substitution:
                continue
            if cmd.inner is not None:
                t = cmd.inner.trainer()
                if t is not None:
                    return t
            if trainer_kind(cmd.values) is not None:
                return cmd
        return None

    def last_command(self) -> Command | None:
        """The last simple command of the top-level script (None when the script ends otherwise)."""
        lasts = [c for c in self.commands if c.last]
        return lasts[-1] if lasts else None

    # ---------------------------------------------------------------- SIGTERM
    def pid1(self) -> tuple[bool | None, list[str]]:
        """Does SIGTERM sent to the container reach the trainer? (answer, reasons).

        True: the trainer is PID 1 (an exec, explicit or bash's own), or a trap passes the signal
        on, or an init (tini/dumb-init) hands it the signal. False: the shell stays PID 1 and
        keeps the signal to itself (or dies of it). None: cannot be told (no trainer found, a
        shell whose behaviour was not measured, a trainer that is itself a shell script).
        """
        trainer = self.trainer()
        if trainer is None:
            why = "no command that starts training was found in the script"
            if self.errors:
                why += f" (it does not parse: {self.errors[0]})"
            return None, [why]
        chain = self._chain(trainer)
        answer: bool | None = True
        reasons: list[str] = []
        inv = self.invocation
        is_pid1 = inv is None or (inv.init is None and inv.launcher is None)
        for prog, cmd in chain:
            a, r = prog._pid1_one(cmd, is_pid1)
            reasons += r
            if a is False:
                answer = False
                break
            if a is None:
                answer = None
        if answer is not False:
            kind = trainer_kind(trainer.values)
            if kind == "script" and _is_shell_script(trainer.values):
                answer = None
                reasons.append(
                    f"the trainer `{_short(trainer.text)}` is itself a shell script: a shell running a "
                    "file never replaces itself with its last command, so it passes SIGTERM on only "
                    "if that script `exec`s the trainer or forwards the signal"
                )
        if inv is not None and inv.init is not None:
            reasons = self._with_init(inv, chain, reasons)
        elif inv is not None and inv.launcher:
            reasons.insert(
                0, f"{inv.launcher} is PID 1 and starts the shell; how it passes SIGTERM on was not measured"
            )
            answer = None
        return answer, reasons

    def _chain(self, trainer: Command) -> list[tuple[ShellProgram, Command]]:
        """[(program, command)] from this program down to the one that runs the trainer."""
        if any(c is trainer for c in self.commands):
            return [(self, trainer)]
        for cmd in reversed(self.commands):
            if cmd.inner is not None:
                sub = cmd.inner._chain(trainer)
                if sub:
                    return [(self, cmd), *sub]
        return []

    def _exec_or_trap(self, chain: list[tuple[ShellProgram, Command]]) -> bool:
        return all(prog._execs(cmd) or prog._trap_delivers(cmd) for prog, cmd in chain)

    def _trap_delivers(self, cmd: Command) -> bool:
        verdict = self._trap_verdict(cmd)
        return verdict is not None and verdict[0] is True

    def _execs(self, cmd: Command) -> bool:
        """The shell replaces itself with cmd (explicit exec, or bash's own)."""
        if cmd.exec_ and not (cmd.pipeline or cmd.background or cmd._subshell or cmd.substitution):
            return True
        return self.shell == "bash" and self._tail_cmd is cmd and not self._tail

    def _with_init(
        self, inv: ShellInvocation, chain: list[tuple[ShellProgram, Command]], reasons: list[str]
    ) -> list[str]:
        init = inv.init or ""
        head = f"{init} is PID 1, not the shell"
        if self._exec_or_trap(chain):
            return [f"{head}: it passes SIGTERM to its child, and the shell hands it on to the trainer", *reasons]
        how = "its whole process group" if inv.init_group else "the shell only"
        return [
            f"{head}: it sends SIGTERM to {how}; the shell (no TERM trap) dies of it, {init} exits with it, "
            "and the kernel SIGKILLs the trainer before it can save",
            *reasons,
        ]

    def _term_trap(self, cmd: Command) -> tuple[str, str, bool, int] | None:
        """The TERM trap in effect at cmd (not an ignore or a reset)."""
        return next((t for t in cmd._traps if t[0] == "TERM" and t[1] not in ("", "-")), None)

    def _action_commands(self, action: str) -> set[str]:
        """Names of the commands a trap action runs (functions it calls looked into)."""
        prog = parse_shell(action, self.shell, _depth=_MAX_INNER)
        names: set[str] = set()
        for c in prog.commands:
            name = posixpath.basename(c.name or "")
            if name in ("kill", "pkill", "killall") and len(c.fields) < 2:
                continue
            names.add(name)
            names |= self._fn_cmds.get(name, set())
        return names

    def _trap_verdict(self, cmd: Command, is_pid1: bool = True) -> tuple[bool | None, str] | None:
        """What the TERM trap in effect at cmd does for it (None: there is no such trap).

        Measured with bash 5.2 and dash as PID 1: the trap runs only once the foreground command
        has returned; and after it has run, the `wait` it interrupted returns, so unless the shell
        waits again (in the trap or after) the script ends and PID 1's exit gets the trainer
        SIGKILLed a few milliseconds into its save.
        """
        trap = self._term_trap(cmd)
        if trap is None:
            return None
        shell = self.shell
        src = f"`trap {_quote(_short(trap[1], 50))} TERM`"
        names = self._action_commands(trap[1])
        if not names & {"kill", "pkill", "killall"}:
            stays = "stays PID 1" if is_pid1 else "stays"
            return False, f"{shell} {stays} with a TERM trap ({src}) that does not pass the signal on"
        if not cmd.background:
            return False, (
                f"a trap forwards SIGTERM ({src}), but {shell} runs traps only after the foreground command "
                f"returns: `{_short(cmd.text)}` is in the foreground, so the trap runs too late"
            )
        waits = self._waits_after(cmd)
        if not waits:
            return False, f"a trap forwards SIGTERM ({src}) but the script does not `wait` for the trainer"
        if not ("wait" in names or len(waits) > 1 or any(w.within for w in waits)):
            return False, (
                f"a trap passes SIGTERM on ({src}), but then the script ends: `wait` returns as soon as the "
                f"trap has run, {shell} exits, and as PID 1 its exit gets the trainer SIGKILLed before it can "
                "save; wait again after forwarding (`trap 'kill -TERM $child; wait $child' TERM`)"
            )
        cond = " (the trap is set conditionally)" if trap[2] else ""
        return None if trap[2] else True, (
            f"a trap forwards SIGTERM to the trainer ({src}) and {shell} waits for it to finish{cond}"
        )

    def _pid1_one(self, cmd: Command, is_pid1: bool = True) -> tuple[bool | None, list[str]]:
        """Does SIGTERM reach cmd when this program's shell gets it? (is_pid1: the shell is PID 1)"""
        shell = self.shell
        keeps = "stays PID 1 and does not pass SIGTERM on" if is_pid1 else "does not replace itself with the trainer"
        stays = f"{shell} stays PID 1" if is_pid1 else f"{shell} stays"
        what = f"`{_short(cmd.text)}`"
        ignored = [t for t in cmd._traps if t[0] == "TERM" and t[1] == ""]
        notes = (
            ["SIGTERM is ignored (`trap '' TERM`) and the trainer inherits that unless it installs its own handler"]
            if ignored
            else []
        )
        # explicit exec
        if cmd.exec_:
            if cmd.pipeline:
                return False, [
                    f"{what} is exec'd inside a pipeline: the exec replaces a pipeline subshell, {stays}",
                    *notes,
                ]
            if cmd.background:
                return False, [
                    f"{what} is exec'd in the background (&): the exec replaces a subshell, {stays}",
                    *notes,
                ]
            if cmd._subshell:
                return False, [f"{what} is exec'd inside a ( ... ) subshell: {stays}", *notes]
            if cmd.substitution:
                return False, [f"{what} runs inside a command substitution", *notes]
            return True, [f"the script execs the trainer ({what}): it replaces {shell} and gets SIGTERM", *notes]
        # a trap that forwards
        verdict = self._trap_verdict(cmd, is_pid1)
        if verdict is not None:
            return verdict[0], [verdict[1], *notes]
        # the shell's own exec
        if shell in ("sh", "dash"):
            extra = ""
            if shell == "sh":
                would = self._tail_cmd is cmd and not self._tail
                extra = " (if /bin/sh is bash, as on RHEL/UBI images, bash " + (
                    "would replace itself with it)" if would else "would not either)"
                )
            return False, [
                f"`{shell} -c` (dash on Debian/Ubuntu images) never replaces itself with the trainer: "
                f"it {keeps}{extra}",
                *notes,
            ]
        if shell != "bash":
            return None, [f"`{shell} -c` was not measured: whether it replaces itself with {what} is not known", *notes]
        if self._tail_cmd is cmd and not self._tail:
            return True, [
                f"bash replaces itself with the trainer: {what} is the last simple command of the -c script",
                *notes,
            ]
        if self._tail_cmd is cmd or cmd.last:
            return False, [f"bash {keeps}: {'; '.join(self._tail)}", *notes]
        return False, [f"bash {keeps}: {self._not_last(cmd)}", *notes]

    def _not_last(self, cmd: Command) -> str:
        if cmd.background:
            return f"the trainer runs in the background (&), and {self.shell} has no TERM trap to pass the signal on"
        if cmd.within:
            inside = cmd.within[-1]
            return (
                f"the trainer runs inside {_describe_within(inside)}; bash only replaces itself with a "
                "top-level simple command"
            )
        last = self.last_command()
        if last is not None:
            return f"the trainer is not the last command (`{_short(last.text)}` runs after it)"
        if self._tail:
            return "; ".join(self._tail)
        return "the trainer is not the last command of the script"

    def _waits_after(self, cmd: Command) -> list[Command]:
        return [c for c in self.commands if c._start > cmd._start and not c.substitution and c.name == "wait"]


@dataclass(frozen=True)
class ShellInvocation:
    """How a container argv starts a shell."""

    shell: str  # basename: bash, sh, dash, ...
    script: str
    args: list[str]  # what follows the script: [$0, $1, ...]
    options: tuple[str, ...] = ()  # e, x, u, pipefail, login, ...
    init: str | None = None  # tini / dumb-init when one is PID 1
    init_group: bool = False  # the init signals the whole process group (tini -g, dumb-init default)
    launcher: str | None = None  # mpirun / srun that starts the shell
    wrappers: tuple[str, ...] = ()  # every program before the shell, in order
    env: dict[str, str] = field(default_factory=dict)  # `env VAR=x bash -c`
    index: int = 0  # position of the script in argv

    @property
    def pid1(self) -> str:
        """Who is PID 1: the init, the launcher, or the shell."""
        return self.init or self.launcher or self.shell


# --------------------------------------------------------------------------------------------
# kubelet $(VAR) expansion

_K8S_NAME = re.compile(r"[-._a-zA-Z][-._a-zA-Z0-9]*\Z")


def kube_expand(text: str, env: Mapping[str, str]) -> tuple[str, tuple[str, ...]]:
    """kubelet's expansion of command/args/env values: `$(VAR)` -> value when VAR is defined,
    left as written otherwise; `$$` -> `$`. Returns (text, undefined names).

    What cannot be an env var name (`$(date +%s)`) is left alone and not reported; `$(hostname)`
    is reported as the undefined name `hostname`, though the shell will later run it as a command.
    """
    out: list[str] = []
    missing: list[str] = []
    i, n = 0, len(text)
    while i < n:
        j = text.find("$", i)
        if j < 0 or j + 1 >= n:
            out.append(text[i:])
            break
        out.append(text[i:j])
        nxt = text[j + 1]
        if nxt == "$":
            out.append("$")
            i = j + 2
        elif nxt == "(":
            k = text.find(")", j + 2)
            if k < 0:
                out.append("$(")
                i = j + 2
                continue
            name = text[j + 2 : k]
            if name in env:
                out.append(str(env[name]))
            else:
                out.append(text[j : k + 1])
                if _K8S_NAME.match(name) and name not in missing:
                    missing.append(name)
            i = k + 1
        else:
            out.append("$" + nxt)
            i = j + 2
    return "".join(out), tuple(missing)


def kube_env(pairs: Iterable[tuple[str, str]], base: Mapping[str, str] | None = None) -> dict[str, str]:
    """A container's env the way kubelet builds it: each value may use `$(NAME)` of earlier ones."""
    out = dict(base or {})
    for name, value in pairs:
        out[name] = kube_expand(value, out)[0]
    return out


# --------------------------------------------------------------------------------------------
# argv -> shell

_INITS = {"tini", "tini-static", "dumb-init", "catatonit"}
_LAUNCHERS = {"mpirun", "mpiexec", "orterun", "srun"}
_SHELL_LONG_WITH_ARG = {"--rcfile", "--init-file"}


def _base(arg: str) -> str:
    return arg.rsplit("/", 1)[-1]


def shell_invocation(argv: Sequence[str]) -> ShellInvocation | None:
    """The shell a container argv starts with `-c SCRIPT`, and what runs before it."""
    argv = [str(a) for a in argv]
    i = 0
    init: str | None = None
    group = False
    launcher: str | None = None
    wrappers: list[str] = []
    env: dict[str, str] = {}
    while i < len(argv):
        name = _base(argv[i])
        if name == "env":
            wrappers.append(name)
            i += 1
            while i < len(argv):
                a = argv[i]
                if a in ("-i", "--ignore-environment", "-0", "--null", "-v", "--debug"):
                    i += 1
                elif a in ("-u", "--unset", "-C", "--chdir", "-S", "--split-string"):
                    i += 2
                elif a == "--":
                    i += 1
                    break
                elif a.startswith("-") and len(a) > 1:
                    i += 1
                elif "=" in a and re.match(r"[A-Za-z_][A-Za-z0-9_]*=", a):
                    k, _, v = a.partition("=")
                    env[k] = v
                    i += 1
                else:
                    break
            continue
        if name in _INITS:
            wrappers.append(name)
            init = "tini" if name.startswith("tini") else name
            group = name == "dumb-init"
            i += 1
            while i < len(argv):
                a = argv[i]
                if a == "--":
                    i += 1
                    break
                if name.startswith("tini") and a.startswith("-") and not a.startswith("--"):
                    if "g" in a[1:]:
                        group = True
                    # -p SIG, -e CODE take a value
                    i += 2 if a[-1] in "pe" else 1
                    continue
                if name == "dumb-init" and a.startswith("-"):
                    if a in ("-c", "--single-child"):
                        group = False
                    i += 2 if a in ("-r", "--rewrite") else 1
                    continue
                if a.startswith("-"):
                    i += 1
                    continue
                break
            continue
        if name in _LAUNCHERS:
            wrappers.append(name)
            launcher = name
            i = _skip_launcher_opts(argv, i + 1)
            continue
        if name in SHELLS or name == "busybox":
            break
        return None
    if i >= len(argv):
        return None
    shell = _base(argv[i])
    if shell == "busybox":
        i += 1
        if i >= len(argv) or _base(argv[i]) not in ("sh", "ash"):
            return None
        shell = "ash"
    if shell not in SHELLS:
        return None
    options: list[str] = []
    has_c = False
    j = i + 1
    while j < len(argv):
        a = argv[j]
        if a == "--" or a == "-":
            j += 1
            break
        if a.startswith("--"):
            if a in _SHELL_LONG_WITH_ARG:
                j += 2
            else:
                options.append(a[2:])
                j += 1
            continue
        if len(a) > 1 and a[0] in "-+":
            letters = a[1:]
            takes = 0
            for ch in letters:
                if ch == "c":
                    has_c = True
                elif ch in "oO":
                    takes += 1
                else:
                    options.append({"l": "login", "i": "interactive"}.get(ch, ch))
            for k in range(takes):
                if j + 1 + k < len(argv):
                    options.append(argv[j + 1 + k])
            j += 1 + takes
            continue
        break
    if not has_c or j >= len(argv):
        return None
    return ShellInvocation(
        shell=shell,
        script=argv[j],
        args=argv[j + 1 :],
        options=tuple(options),
        init=init,
        init_group=group,
        launcher=launcher,
        wrappers=tuple(wrappers),
        env=env,
        index=j,
    )


def split_shell_argv(argv: Sequence[str]) -> tuple[str, str, list[str]] | None:
    """(shell name, script, positional args) when argv runs `SHELL [-flags] -c SCRIPT [arg0 args...]`.

    Understands `-ec`, `-euxo pipefail -c`, `-lc`, `-c` after other flags, `--login`, and what may run
    before the shell: `env [VAR=x]`, `tini [--]`, `dumb-init [--]`, `mpirun ...`
    (see `shell_invocation` for who is PID 1). The positional list is [$0, $1, ...].
    """
    inv = shell_invocation(argv)
    if inv is None:
        return None
    return inv.shell, inv.script, list(inv.args)


def _skip_launcher_opts(argv: list[str], i: int) -> int:
    two = {"--mca", "-mca", "-gmca", "--gmca", "-genv", "-env"}
    one = {
        "-np",
        "-n",
        "-N",
        "-c",
        "-H",
        "--host",
        "-host",
        "--hostfile",
        "-hostfile",
        "--machinefile",
        "-machinefile",
        "-x",
        "--bind-to",
        "-bind-to",
        "--map-by",
        "-map-by",
        "--rank-by",
        "-npernode",
        "--npernode",
        "-ppn",
        "-wdir",
        "--wdir",
        "-output-filename",
        "--output-filename",
        "-f",
        "--prefix",
        "-p",
        "-w",
        "-t",
        "-J",
        "-A",
        "-G",
        "-o",
        "-e",
        "--nodes",
        "--ntasks",
        "--gpus",
        "-u",
    }
    while i < len(argv):
        a = argv[i]
        if a == "--":
            return i + 1
        if a in two:
            i += 3
        elif a in one:
            i += 2
        elif a.startswith("-"):
            i += 1
        else:
            return i
    return i


# --------------------------------------------------------------------------------------------
# trainer detection

_PY = re.compile(r"(?:python|pypy)(?:\d+(?:\.\d+)*)?[mtd]?\Z")
_NOT_TRAINER_MODULES = {
    "pip",
    "pip3",
    "ensurepip",
    "venv",
    "virtualenv",
    "site",
    "http.server",
    "json.tool",
    "uv",
    "pytest",
    "compileall",
    "py_compile",
    "pydoc",
    "timeit",
    "zipfile",
    "tarfile",
    "sysconfig",
    "platform",
    "torch.utils.collect_env",
    "huggingface_hub",
    "pip._internal",
    "wheel",
    "build",
    "twine",
}
_WRAPPERS = {
    "env",
    "nohup",
    "stdbuf",
    "nice",
    "ionice",
    "taskset",
    "numactl",
    "timeout",
    "setsid",
    "chrt",
    "gosu",
    "su-exec",
    "sudo",
    "command",
    "builtin",
    "exec",
    "time",
    "xargs",
    "catchsegv",
    "unbuffer",
}
_WRAPPER_ARG = {"timeout": 1, "gosu": 1, "su-exec": 1, "taskset": 1, "chrt": 1}


def trainer_kind(values: Sequence[str]) -> str | None:
    """What kind of training launcher this argv is, or None."""
    return _kind(list(values), 0)


def _kind(v: list[str], depth: int) -> str | None:
    if not v or depth > 6:
        return None
    name = _base(v[0])
    rest = v[1:]
    if name in _WRAPPERS:
        i = 0
        if name == "env":
            while i < len(rest) and (rest[i].startswith("-") or re.match(r"[A-Za-z_][A-Za-z0-9_]*=", rest[i])):
                i += 1
        else:
            while i < len(rest) and rest[i].startswith("-"):
                i += 2 if name in ("nice", "ionice", "stdbuf") and len(rest[i]) == 2 else 1
            i += _WRAPPER_ARG.get(name, 0)
        return _kind(rest[i:], depth + 1)
    if name in ("uv", "poetry", "pipenv", "conda", "micromamba", "mamba", "pixi") and rest[:1] == ["run"]:
        i = 1
        while i < len(rest) and rest[i].startswith("-"):
            i += 2 if rest[i] in ("-n", "--name", "-p", "--prefix", "-e", "--environment", "--with") else 1
        return _kind(rest[i:], depth + 1)
    if name in _LAUNCHERS:
        inner = rest[_skip_launcher_opts(rest, 0) :]
        k = _kind(inner, depth + 1)
        return f"{name} {k}" if k else None
    if _PY.match(name):
        return _python_kind(rest)
    tool = frameworks.tools().get(name)  # torchrun, `accelerate launch`, `llamafactory-cli train`, ...
    if tool is not None:
        subs = tool.subcommands
        if subs is None:
            return name
        sub = next((a for a in rest if not a.startswith("-")), None)
        if sub is None or sub in subs or "$" in sub:
            return name
        return None
    if name in ("bash", "sh", "dash", "zsh", "ksh", "ash"):
        script = next((a for a in rest if not a.startswith("-")), None)
        if script is not None and "-c" not in rest and re.search(r"\.(?:sh|bash)\Z", script):
            return "script"
        return None
    if re.search(r"\.(?:sh|bash|py)\Z", v[0]) and ("/" in v[0] or name == v[0]):
        return "script"
    return None


def _python_kind(rest: list[str]) -> str | None:
    i = 0
    while i < len(rest):
        a = rest[i]
        if a in ("-V", "--version", "-h", "--help"):
            return None
        if a == "-m":
            mod = rest[i + 1] if i + 1 < len(rest) else ""
            launcher = frameworks.python_launchers().get(mod)  # torch.distributed.run is torchrun
            if launcher is not None:
                return launcher
            if mod in _NOT_TRAINER_MODULES or mod.split(".")[0] in ("pip", "ensurepip", "venv"):
                return None
            return "python"
        if a.startswith("-m") and len(a) > 2:
            return _python_kind(["-m", a[2:], *rest[i + 1 :]])
        if a == "-c":
            code = rest[i + 1] if i + 1 < len(rest) else ""
            return None if _is_probe(code) else "python"
        if a in ("-W", "-X", "-Q"):
            i += 2
            continue
        if a.startswith("-") and a != "-":
            i += 1
            continue
        return "python"  # a script path, or `-` (reads stdin)
    return "python" if not rest else None


_PROBE_STMT = re.compile(r"\s*(?:import\s+[\w., ]+|from\s+[\w.]+\s+import\s+[\w., *]+|print\(.*\)|pass)\s*\Z")


def _is_probe(code: str) -> bool:
    """A one-line `python -c` that only imports and prints (a version check)."""
    code = code.strip()
    if "\n" in code or not code:
        return not code
    return all(_PROBE_STMT.match(part) for part in code.split(";") if part.strip())


def _is_shell_script(values: Sequence[str]) -> bool:
    if not values:
        return False
    name = _base(values[0])
    if name in ("bash", "sh", "dash", "zsh", "ksh", "ash"):
        return True
    return bool(re.search(r"\.(?:sh|bash)\Z", values[0]))


# --------------------------------------------------------------------------------------------
# persistent environment


@dataclass(frozen=True)
class _Var:
    value: str | None
    unresolved: tuple[str, ...] = ()
    exported: bool = False
    array: tuple[str, ...] | None = None
    assumed: tuple[str, ...] = ()
    scripted: bool = False  # assigned by the script (not from the container's env)
    partial: str | None = None  # the value as far as it could be expanded, when value is None


_UNSET = _Var(None, ("<unset>",))


class _Env:
    """An immutable map name -> _Var; `set` returns a new one sharing most of the old (O(1) amortised)."""

    __slots__ = ("_base", "_dict", "_over")

    def __init__(self, base: dict[str, _Var], over: dict[str, _Var] | None = None) -> None:
        self._base = base
        self._over = over or {}
        self._dict: dict[str, str | None] | None = None

    def get(self, name: str) -> _Var | None:
        v = self._over.get(name)
        if v is None:
            v = self._base.get(name)
        return None if v is _UNSET else v

    def set(self, name: str, var: _Var) -> _Env:
        over = dict(self._over)
        over[name] = var
        if len(over) > 32 and len(over) * len(over) > len(self._base):  # ~sqrt(size): O(sqrt n) a set
            base = dict(self._base)
            base.update(over)
            return _Env({k: v for k, v in base.items() if v is not _UNSET})
        return _Env(self._base, over)

    def unset(self, name: str) -> _Env:
        if self.get(name) is None:
            return self
        return self.set(name, _UNSET)

    def items(self) -> Iterable[tuple[str, _Var]]:
        seen = set()
        for k, v in self._over.items():
            seen.add(k)
            if v is not _UNSET:
                yield k, v
        for k, v in self._base.items():
            if k not in seen:
                yield k, v

    def as_dict(self) -> dict[str, str | None]:
        if self._dict is None:
            self._dict = {k: (" ".join(v.array) if v.array is not None else v.value) for k, v in self.items()}
        return dict(self._dict)


# --------------------------------------------------------------------------------------------
# here-document pre-scan
#
# tree-sitter-bash 0.25 misreads `cat <<EOF;`, `<<EOF|cmd`, `(cat <<EOF)`, `<<E"O"F`, two
# here-documents on a line, a delimiter line with leading or trailing blanks, and drops the
# rest of the line after `<<'EOF';`. So here-documents are found here the way bash finds them
# (delimiter = the word after << with quotes removed; body = the lines after the next newline
# up to a line that is exactly the delimiter, tabs stripped for <<-), their bodies are blanked
# out of the text tree-sitter sees (newlines kept, so lines and offsets stay the same) and the
# `<<DELIM` operator becomes a same-length `<HHHH` file redirection that tree-sitter reads fine.


@dataclass
class _HD:
    op: int  # offset of `<<`
    op_end: int
    delim: str
    quoted: bool
    strip: bool
    body_start: int = -1
    body_end: int = -1  # end of the body text (start of the delimiter line)
    end: int = -1  # end of the delimiter line (exclusive, before its newline)
    terminated: bool = True


_META = set(" \t\n;&|()<>")


def _read_delim(s: str, i: int) -> tuple[str, bool, int]:
    n = len(s)
    out: list[str] = []
    quoted = False
    while i < n and s[i] not in _META:
        c = s[i]
        if c == "'":
            j = s.find("'", i + 1)
            j = n if j < 0 else j
            out.append(s[i + 1 : j])
            quoted = True
            i = j + 1
        elif c == '"':
            j = i + 1
            buf = []
            while j < n and s[j] != '"':
                if s[j] == "\\" and j + 1 < n and s[j + 1] in '"\\$`':
                    buf.append(s[j + 1])
                    j += 2
                    continue
                buf.append(s[j])
                j += 1
            out.append("".join(buf))
            quoted = True
            i = j + 1
        elif c == "\\" and i + 1 < n:
            out.append(s[i + 1])
            quoted = True
            i += 2
        elif c == "$" and i + 1 < n and s[i + 1] in "'\"":
            i += 1  # $'...' / $"..." as a delimiter: treat like plain quotes
        else:
            out.append(c)
            i += 1
    return "".join(out), quoted, min(i, n)


def _prescan(s: str) -> tuple[str, list[_HD], list[str]]:
    n = len(s)
    hds: list[_HD] = []
    errors: list[str] = []
    pending: list[_HD] = []
    # context stack: ("c", depth) code, ("d",) double quotes, ("b",) backticks, ("p", depth) ${...},
    # ("a", depth) arithmetic
    stack: list[list[Any]] = [["c", 0]]
    i = 0
    word_start = True
    while i < n:
        top = stack[-1]
        kind = top[0]
        c = s[i]
        if kind == "c":
            if c == "\\":
                i += 2
                word_start = False
                continue
            if c == "#" and word_start:
                j = s.find("\n", i)
                i = n if j < 0 else j
                continue
            if c == "'":
                j = s.find("'", i + 1)
                i = n if j < 0 else j + 1
                word_start = False
                continue
            if c == '"':
                stack.append(["d"])
                i += 1
                word_start = False
                continue
            if c == "`":
                stack.append(["b"])
                i += 1
                word_start = False
                continue
            if c == "$" and i + 1 < n:
                nx = s[i + 1]
                if nx == "'":
                    j = i + 2
                    while j < n and s[j] != "'":
                        j += 2 if s[j] == "\\" else 1
                    i = j + 1
                    word_start = False
                    continue
                if s.startswith("((", i + 1):
                    stack.append(["a", 0])
                    i += 3
                    continue
                if nx == "(":
                    stack.append(["c", 0, "$("])
                    i += 2
                    word_start = True
                    continue
                if nx == "{":
                    stack.append(["p", 0])
                    i += 2
                    continue
                i += 1
                word_start = False
                continue
            if c == "(" and word_start and s.startswith("((", i):
                stack.append(["a", 0])
                i += 2
                continue
            if c == "(":
                top[1] += 1
                i += 1
                word_start = True
                continue
            if c == ")":
                if top[1] == 0 and len(top) > 2 and len(stack) > 1:
                    stack.pop()
                else:
                    top[1] = max(0, top[1] - 1)
                i += 1
                word_start = True
                continue
            if c == "<" and s.startswith("<<", i):
                if s.startswith("<<<", i):
                    i += 3
                    word_start = True
                    continue
                strip = s.startswith("<<-", i)
                j = i + (3 if strip else 2)
                while j < n and s[j] in " \t":
                    j += 1
                delim, quoted, end = _read_delim(s, j)
                if not delim and not quoted:
                    errors.append(f"line {s.count(chr(10), 0, i) + 1}: syntax error: `<<` without a delimiter")
                    i = j
                    continue
                hd = _HD(i, end, delim, quoted, strip)
                pending.append(hd)
                hds.append(hd)
                i = end
                word_start = True
                continue
            if c == "\n":
                i += 1
                word_start = True
                if pending:
                    i = _read_bodies(s, i, pending, errors)
                    pending = []
                continue
            word_start = c in " \t;&|<>"
            i += 1
            continue
        if kind == "d":
            if c == '"':
                stack.pop()
                i += 1
                continue
            if c == "\\":
                i += 2
                continue
            if c == "`":
                stack.append(["b"])
                i += 1
                continue
            if c == "$" and s.startswith("$((", i):
                stack.append(["a", 0])
                i += 3
                continue
            if c == "$" and s.startswith("$(", i):
                stack.append(["c", 0, "$("])
                i += 2
                word_start = True
                continue
            if c == "$" and s.startswith("${", i):
                stack.append(["p", 0])
                i += 2
                continue
            i += 1
            continue
        if kind == "b":
            if c == "\\":
                i += 2
                continue
            if c == "`":
                stack.pop()
            i += 1
            continue
        if kind == "p":
            if c == "\\":
                i += 2
                continue
            if c == "'":
                j = s.find("'", i + 1)
                i = n if j < 0 else j + 1
                continue
            if c == '"':
                stack.append(["d"])
                i += 1
                continue
            if c == "{":
                top[1] += 1
            elif c == "}":
                if top[1] == 0:
                    stack.pop()
                else:
                    top[1] -= 1
            elif c == "$" and s.startswith("$(", i) and not s.startswith("$((", i):
                stack.append(["c", 0, "$("])
                i += 2
                continue
            i += 1
            continue
        # arithmetic
        if c == "(":
            top[1] += 1
        elif c == ")":
            if top[1] == 0:
                stack.pop()
                i += 2 if s.startswith("))", i) else 1
                continue
            top[1] -= 1
        i += 1
    if pending:
        for hd in pending:
            hd.body_start = hd.body_end = hd.end = n
            hd.terminated = False
            errors.append(
                f"line {s.count(chr(10), 0, hd.op) + 1}: here-document delimited by end-of-file (wanted `{hd.delim}`)"
            )
    # the text tree-sitter sees
    parts: list[str] = []
    pos = 0
    for hd in sorted(hds, key=lambda h: h.op):
        if "\n" in s[hd.op : hd.op_end] or hd.op < pos:
            continue
        parts.append(s[pos : hd.op])
        parts.append("<" + "H" * (hd.op_end - hd.op - 1))
        pos = hd.op_end
    parts.append(s[pos:])
    mod = "".join(parts)
    spans = sorted((hd.body_start, hd.end) for hd in hds if hd.body_start >= 0 and hd.end > hd.body_start)
    if spans:
        parts = []
        pos = 0
        for a, b in spans:
            if a < pos:
                a = pos
            if b <= a:
                continue
            parts.append(mod[pos:a])
            parts.append(re.sub(r"[^\n]", " ", mod[a:b]))
            pos = b
        parts.append(mod[pos:])
        mod = "".join(parts)
    if not mod.isascii():
        mod = re.sub(r"[^\x00-\x7f]", "H", mod)
    if "\x00" in mod:
        mod = mod.replace("\x00", " ")
    return mod, hds, errors


def _read_bodies(s: str, p: int, pending: list[_HD], errors: list[str]) -> int:
    n = len(s)
    for hd in pending:
        hd.body_start = p
        while True:
            if p >= n:
                hd.body_end = hd.end = n
                hd.terminated = False
                errors.append(
                    f"line {s.count(chr(10), 0, hd.op) + 1}: here-document delimited by end-of-file "
                    f"(wanted `{hd.delim}`)"
                )
                break
            e = s.find("\n", p)
            line_end = n if e < 0 else e
            line = s[p:line_end]
            if (line.lstrip("\t") if hd.strip else line) == hd.delim:
                hd.body_end = p
                hd.end = line_end
                p = n if e < 0 else e + 1
                break
            p = n if e < 0 else e + 1
    return p


# --------------------------------------------------------------------------------------------
# word expansion (text based; tree-sitter gives the word boundaries)


class _Acc:
    """Collects one word's expansion: its value, partial text, fields and what was not resolved."""

    __slots__ = ("assumed", "bad", "cur", "fields", "partial", "unres", "value", "zero")

    def __init__(self) -> None:
        self.value: list[str] = []
        self.partial: list[str] = []
        self.fields: list[str] = []
        self.cur: list[str] | None = None
        self.unres: list[str] = []
        self.assumed: list[str] = []
        self.bad = False
        self.zero = 0  # "$@" / "${A[@]}" expansions with no element (they make no field)

    def lit(self, s: str) -> None:
        self.value.append(s)
        self.partial.append(s)
        if self.cur is None:
            self.cur = []
        self.cur.append(s)

    def quoted(self) -> None:
        if self.cur is None:
            self.cur = []

    def brk(self) -> None:
        if self.cur is not None:
            self.fields.append("".join(self.cur))
            self.cur = None

    def split(self, s: str) -> None:
        """An unquoted expansion result: split on blanks."""
        self.value.append(s)
        self.partial.append(s)
        if not s:
            return
        if s[0] in " \t\n":
            self.brk()
        words = s.split()
        for k, w in enumerate(words):
            if k:
                self.brk()
            if self.cur is None:
                self.cur = []
            self.cur.append(w)
        if s[-1] in " \t\n":
            self.brk()

    def multi(self, items: Sequence[str], quoted: bool) -> None:
        """ "$@" / "${A[@]}": one field per item (quoted), or each item split (unquoted)."""
        self.value.append(" ".join(items))
        self.partial.append(" ".join(items))
        if quoted and not items:
            self.zero += 1
        for k, it in enumerate(items):
            if quoted:
                if k:
                    self.brk()
                if self.cur is None:
                    self.cur = []
                self.cur.append(it)
            else:
                if k:
                    self.brk()
                words = it.split()
                for m, w in enumerate(words):
                    if m:
                        self.brk()
                    if self.cur is None:
                        self.cur = []
                    self.cur.append(w)

    def unresolved(self, raw: str, what: str | Sequence[str]) -> None:
        self.bad = True
        self.partial.append(raw)
        for w in [what] if isinstance(what, str) else what:
            if w not in self.unres:
                self.unres.append(w)

    def assume(self, name: str) -> None:
        if name not in self.assumed:
            self.assumed.append(name)

    def text(self) -> str:
        return "".join(self.value)


_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_DYNAMIC = {
    "RANDOM",
    "SRANDOM",
    "HOSTNAME",
    "BASHPID",
    "PPID",
    "SECONDS",
    "EPOCHSECONDS",
    "EPOCHREALTIME",
    "LINENO",
    "UID",
    "EUID",
    "GROUPS",
    "BASH_COMMAND",
    "SHLVL",
    "BASHOPTS",
    "SHELLOPTS",
}
_PLAIN_W = re.compile(r"[^\\'\"$`~]+")
_PLAIN_D = re.compile(r'[^\\"$`]+')
_PLAIN_H = re.compile(r"[^\\$`]+")
_PARAM_OPS = (
    ":-",
    ":=",
    ":+",
    ":?",
    "-",
    "=",
    "+",
    "?",
    "##",
    "#",
    "%%",
    "%",
    "//",
    "/#",
    "/%",
    "/",
    "^^",
    "^",
    ",,",
    ",",
    "@",
    ":",
)


def _match(s: str, i: int, end: int, close: str, open_: str) -> int:
    """Index of the `close` matching an already opened `open_` from i (quotes skipped); end if none."""
    depth = 0
    while i < end:
        c = s[i]
        if c == "\\":
            i += 2
            continue
        if c == "'" and close != "`":
            j = s.find("'", i + 1, end)
            i = end if j < 0 else j + 1
            continue
        if c == '"' and close != '"':
            i = _match(s, i + 1, end, '"', '"') + 1
            continue
        if c == "`" and close != "`":
            i = _match(s, i + 1, end, "`", "`") + 1
            continue
        if close == '"':
            if c == '"':
                return i
            if c == "$" and i + 1 < end and s[i + 1] in "({":
                i = _match(s, i + 2, end, ")" if s[i + 1] == "(" else "}", s[i + 1]) + 1
                continue
            i += 1
            continue
        if c == close and depth == 0:
            return i
        if c == open_ and open_ != close:
            depth += 1
        elif c == close:
            depth -= 1
        i += 1
    return end


def _first_slash(s: str) -> int:
    i = 0
    while i < len(s):
        c = s[i]
        if c == "\\":
            i += 2
            continue
        if c in "'\"":
            j = s.find(c, i + 1)
            i = len(s) if j < 0 else j + 1
            continue
        if c == "/":
            return i
        i += 1
    return -1


def _glob_re(pat: str) -> str:
    out = []
    i = 0
    while i < len(pat):
        c = pat[i]
        if c == "*":
            out.append(".*")
        elif c == "?":
            out.append(".")
        elif c == "[":
            j = pat.find("]", i + 2)
            if j < 0:
                out.append(re.escape(c))
            else:
                body = pat[i + 1 : j]
                if body.startswith("!"):
                    body = "^" + body[1:]
                out.append("[" + body.replace("\\", "\\\\") + "]")
                i = j
        elif c == "\\" and i + 1 < len(pat):
            out.append(re.escape(pat[i + 1]))
            i += 1
        else:
            out.append(re.escape(c))
        i += 1
    return "".join(out)


_ARITH_OPS: dict[type, Any] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Mod: None,
    ast.FloorDiv: None,
    ast.Pow: operator.pow,
    ast.LShift: operator.lshift,
    ast.RShift: operator.rshift,
    ast.BitAnd: operator.and_,
    ast.BitOr: operator.or_,
    ast.BitXor: operator.xor,
}


def _arith_eval(expr: str) -> int | None:
    expr = expr.strip()
    if not expr:
        return 0
    if len(expr) > 2000:
        return None
    py = re.sub(r"(?<![/*])/(?![/*])", "//", expr)
    py = py.replace("&&", " and ").replace("||", " or ")
    py = re.sub(r"!(?!=)", " not ", py)
    try:
        tree = ast.parse(py, mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None

    def ev(node: ast.AST, depth: int = 0) -> int:
        if depth > 60:
            raise ValueError
        if isinstance(node, ast.Expression):
            return ev(node.body, depth + 1)
        if isinstance(node, ast.Constant) and isinstance(node.value, int) and not isinstance(node.value, bool):
            return node.value
        if isinstance(node, ast.UnaryOp):
            v = ev(node.operand, depth + 1)
            if isinstance(node.op, ast.USub):
                return -v
            if isinstance(node.op, ast.UAdd):
                return v
            if isinstance(node.op, ast.Invert):
                return ~v
            if isinstance(node.op, ast.Not):
                return int(not v)
            raise ValueError
        if isinstance(node, ast.BinOp) and type(node.op) in _ARITH_OPS:
            a, b = ev(node.left, depth + 1), ev(node.right, depth + 1)
            if isinstance(node.op, ast.FloorDiv | ast.Mod):
                if b == 0:
                    raise ValueError
                q = abs(a) // abs(b) * (1 if (a >= 0) == (b >= 0) else -1)
                return q if isinstance(node.op, ast.FloorDiv) else a - q * b
            if isinstance(node.op, ast.Pow) and (b < 0 or b > 64):
                raise ValueError
            if isinstance(node.op, ast.LShift) and b > 64:
                raise ValueError
            return int(_ARITH_OPS[type(node.op)](a, b))
        if isinstance(node, ast.Compare) and len(node.ops) == 1:
            a, b = ev(node.left, depth + 1), ev(node.comparators[0], depth + 1)
            ops = {ast.Lt: a < b, ast.LtE: a <= b, ast.Gt: a > b, ast.GtE: a >= b, ast.Eq: a == b, ast.NotEq: a != b}
            r = ops.get(type(node.ops[0]))
            if r is None:
                raise ValueError
            return int(r)
        if isinstance(node, ast.BoolOp):
            vals = [ev(v, depth + 1) for v in node.values]
            return int(all(vals)) if isinstance(node.op, ast.And) else int(any(vals))
        raise ValueError

    try:
        v = ev(tree)
    except (ValueError, TypeError, OverflowError, RecursionError, MemoryError):
        return None
    return v if abs(v) < 1 << 63 else None


# --------------------------------------------------------------------------------------------
# the reader


class _Ctx:
    __slots__ = (
        "background",
        "conditional",
        "function",
        "pipeline",
        "redirected",
        "subshell",
        "substitution",
        "within",
    )

    def __init__(self) -> None:
        self.conditional = False
        self.pipeline = False
        self.background = False
        self.subshell = False
        self.substitution = False
        self.redirected = False
        self.function: str | None = None
        self.within: tuple[str, ...] = ()

    def but(self, **kw: Any) -> _Ctx:
        c = _Ctx()
        for k in self.__slots__:
            setattr(c, k, getattr(self, k))
        for k, v in kw.items():
            if k == "within":
                c.within = (*self.within, v)
            else:
                setattr(c, k, v)
        return c


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


class _Reader:
    def __init__(
        self,
        script: str,
        shell: str,
        env: Mapping[str, str] | None,
        cwd: str | None,
        args: Sequence[str] | None,
        depth: int,
    ) -> None:
        self.src = script
        self.shell = shell
        self.depth_inner = depth
        base: dict[str, _Var] = {}
        for k, v in (env or {}).items():
            base[str(k)] = _Var(str(v), exported=True)
        self.env = _Env(base)
        self.cwd = posixpath.normpath(cwd) if cwd and cwd.startswith("/") else None
        self.oldpwd: str | None = None
        self.dirstack: list[str | None] = []
        self.args: list[str] | None = list(args) if args is not None else None
        self.allexport = False
        self.commands: list[Command] = []
        self.assignments: list[tuple[str, Word, bool, int]] = []
        self.traps: list[Trap] = []
        self.trap_state: tuple[tuple[str, str, bool, int], ...] = ()
        self.errors: list[str] = []
        self.files: dict[str, str | None] = {}
        self.functions: dict[str, Any] = {}  # name -> body node
        self.function_lines: dict[str, int] = {}
        self.fn_cmds: dict[str, set[str]] = {}
        self.tracking: list[set[str]] = []
        self.dry = 0
        self.depth = 0
        self.calls = 0
        self.by_node: dict[tuple[int, int], Command] = {}
        self.hd_by_op: dict[int, _HD] = {}
        self.hd_made: dict[int, HereDoc] = {}
        self.heredocs: list[HereDoc] = []
        self.hd_spans: list[tuple[int, int]] = []
        self.line_starts: list[int] = [0]
        for m in re.finditer("\n", script):
            self.line_starts.append(m.end())
        self.cur_fn_cmds: set[str] | None = None

    # ------------------------------------------------------------------ positions
    def pos(self, off: int) -> tuple[int, int]:
        ln = bisect.bisect_right(self.line_starts, off) - 1
        return ln, off - self.line_starts[ln]

    def text(self, node: Any) -> str:
        return self.src[node.start_byte : node.end_byte]

    # ------------------------------------------------------------------ run
    def run(self) -> ShellProgram:
        mod, hds, errs = _prescan(self.src)
        self.errors += errs
        for hd in hds:
            self.hd_by_op[hd.op] = hd
            if hd.body_start >= 0:
                stop = hd.end + 1 if self.src[hd.end : hd.end + 1] == "\n" else hd.end
                self.hd_spans.append((hd.body_start, stop))
        tree = _parser().parse(mod.encode("ascii", "replace"))
        root = tree.root_node
        if root.has_error:
            self._collect_errors(root)
        self.walk_seq(root, _Ctx())
        self.commands.sort(key=lambda c: c._start)
        prog = ShellProgram(
            shell=self.shell,
            script=self.src,
            commands=self.commands,
            assignments=self.assignments,
            traps=self.traps,
            errors=self.errors,
            heredocs=self.heredocs,
            files=self.files,
            functions=dict(self.function_lines),
        )
        prog._fn_cmds = self.fn_cmds
        self._tail_analysis(root, prog)
        return prog

    def _collect_errors(self, root: Any) -> None:
        stack = [root]
        seen = 0
        while stack and seen < 20:
            n = stack.pop()
            if n.is_missing:
                ln, _ = self.pos(n.start_byte)
                self.errors.append(f"line {ln + 1}: syntax error: missing `{n.type}`")
                seen += 1
                continue
            if n.type == "ERROR":
                ln, _ = self.pos(n.start_byte)
                snippet = self.src[n.start_byte : n.end_byte].strip().split("\n")[0][:40]
                self.errors.append(f"line {ln + 1}: syntax error near `{snippet}`")
                seen += 1
            if n.has_error:
                stack.extend(reversed(n.children))

    # ------------------------------------------------------------------ statements
    def walk_seq(self, node: Any, ctx: _Ctx) -> None:
        """Walk the statements that are children of node (program, compound, do_group, ERROR...)."""
        kids = node.children
        for k, child in enumerate(kids):
            if not child.is_named or child.type == "comment":
                continue
            bg = k + 1 < len(kids) and kids[k + 1].type == "&"
            c = ctx.but(background=True) if bg else ctx
            self.guarded(child, c)

    def guarded(self, node: Any, ctx: _Ctx) -> None:
        if _STRICT:
            self.stmt(node, ctx)
            return
        try:
            self.stmt(node, ctx)
        except RecursionError:
            self.errors.append(f"line {self.pos(node.start_byte)[0] + 1}: nesting too deep to read")
        except Exception as exc:  # never let a strange script break the caller
            self.errors.append(f"line {self.pos(node.start_byte)[0] + 1}: could not read ({type(exc).__name__})")

    def stmt(self, node: Any, ctx: _Ctx) -> None:
        self.depth += 1
        try:
            if self.depth > _MAX_DEPTH:
                if self.depth == _MAX_DEPTH + 1:
                    self.errors.append(f"line {self.pos(node.start_byte)[0] + 1}: nesting too deep to read")
                return
            self._stmt(node, ctx)
        finally:
            self.depth -= 1

    def _stmt(self, node: Any, ctx: _Ctx) -> None:
        t = node.type
        if t == "command":
            self.simple(node, ctx, [])
        elif t == "redirected_statement":
            self.redirected(node, ctx)
        elif t in ("variable_assignment", "variable_assignments"):
            self.bare_assignments(node, ctx)
        elif t == "declaration_command":
            self.declaration(node, ctx)
        elif t == "unset_command":
            self.unset(node, ctx)
        elif t == "pipeline":
            self.pipeline(node, ctx)
        elif t == "list":
            self.list_(node, ctx)
        elif t == "negated_command":
            for ch in node.named_children:
                before = len(self.commands)
                self.stmt(ch, ctx.but(within="!") if ch.type not in ("command", "redirected_statement") else ctx)
                for cmd in self.commands[before:]:
                    if not cmd.substitution:
                        cmd.negated = True
        elif t == "subshell":
            self.isolated(lambda: self.walk_seq(node, ctx.but(conditional=True, subshell=True, within="subshell")))
        elif t == "compound_statement":
            self.walk_seq(node, ctx.but(conditional=True, within="group"))
        elif t == "if_statement":
            self.if_(node, ctx)
        elif t in ("while_statement", "for_statement", "c_style_for_statement", "select_statement"):
            self.loop(node, ctx)
        elif t == "case_statement":
            self.case(node, ctx)
        elif t == "function_definition":
            self.function(node, ctx)
        elif t in ("test_command", "arithmetic_expansion", "binary_expression", "unary_expression"):
            self.substitutions(node, ctx)
        elif t == "ERROR":
            self.walk_seq(node, ctx)
        elif t in ("heredoc_body", "heredoc_redirect", "file_redirect", "herestring_redirect"):
            pass
        else:
            # words and other odd statements (a lone `$(cmd)`, `((...))`...)
            self.substitutions(node, ctx)
            for ch in node.named_children:
                if ch.type in _STATEMENTS:
                    self.stmt(ch, ctx)

    def isolated(self, fn: Any) -> None:
        """Run fn in a subshell: its assignments, cd and traps do not survive it."""
        env, cwd, traps, args = self.env, self.cwd, self.trap_state, self.args
        oldpwd, stack, allexport = self.oldpwd, list(self.dirstack), self.allexport
        try:
            fn()  # files it writes stay written
        finally:
            self.env, self.cwd, self.trap_state, self.args = env, cwd, traps, args
            self.oldpwd, self.dirstack, self.allexport = oldpwd, stack, allexport

    def branches(self, runs: list[Any], fallthrough: bool) -> None:
        """Run each branch from the same state; afterwards a variable differing between them is ambiguous."""
        env0, cwd0, traps0 = self.env, self.cwd, self.trap_state
        results = []
        assigned: set[str] = set()
        for run in runs:
            self.env, self.cwd, self.trap_state = env0, cwd0, traps0
            track: set[str] = set()
            self.tracking.append(track)
            try:
                run()
            finally:
                self.tracking.pop()
            assigned |= track
            results.append((self.env, self.cwd, self.trap_state))
        if fallthrough:
            results.append((env0, cwd0, traps0))
        env = env0
        for name in assigned:
            vals = [r[0].get(name) for r in results]
            first = vals[0]
            if all(v == first for v in vals):
                env = env.set(name, first) if first is not None else env.unset(name)
            else:
                exported = any(v is not None and v.exported for v in vals)
                env = env.set(name, _Var(None, (name,), exported))
        self.env = env
        cwds = {r[1] for r in results}
        self.cwd = cwds.pop() if len(cwds) == 1 else None
        trap_sets = {r[2] for r in results}
        if len(trap_sets) == 1:
            self.trap_state = trap_sets.pop()
        else:
            merged: dict[str, tuple[str, str, bool, int]] = {}
            for ts in trap_sets:
                for tr in ts:
                    merged.setdefault(tr[0], (tr[0], tr[1], True, tr[3]))
            self.trap_state = tuple(merged.values())
        for track in self.tracking:
            track |= assigned

    def redirected(self, node: Any, ctx: _Ctx) -> None:
        body = node.child_by_field_name("body")
        redirects = [ch for ch in node.children if ch.type.endswith("_redirect")]
        if body is None:
            # `> file` alone, or a body tree-sitter lost
            for ch in node.named_children:
                if ch.type in _STATEMENTS:
                    self.stmt(ch, ctx)
            return
        if body.type == "command":
            self.simple(body, ctx, redirects, outer=node)
            return
        c = ctx.but(redirected=True)
        self.stmt(body, c)
        for r in redirects:
            self.substitutions(r, ctx)

    def pipeline(self, node: Any, ctx: _Ctx) -> None:
        kids = node.children
        for k, ch in enumerate(kids):
            if not ch.is_named:
                continue
            both = k + 1 < len(kids) and kids[k + 1].type == "|&"
            c = ctx.but(pipeline=True)
            if both:
                c = c.but(redirected=True)
            self.isolated(lambda ch=ch, c=c: self.stmt(ch, c))

    def _flatten_list(self, node: Any) -> list[tuple[str, Any]]:
        out: list[tuple[str, Any]] = []
        stack: list[tuple[str, Any]] = [("", node)]
        while stack:
            op, n = stack.pop()
            if n.type == "list":
                kids = n.children
                named = [c for c in kids if c.is_named]
                ops = [c.type for c in kids if not c.is_named]
                if len(named) == 2 and ops:
                    stack.append((ops[0], named[1]))
                    stack.append((op, named[0]))
                    continue
            out.append((op, n))
        return out

    def list_(self, node: Any, ctx: _Ctx) -> None:
        items = self._flatten_list(node)
        if not items:
            return
        first = items[0][1]
        self.stmt(first, ctx)
        rest = items[1:]
        if not rest:
            return

        def run() -> None:
            for _op, n in rest:
                self.stmt(n, ctx.but(conditional=True))

        self.branches([run], fallthrough=True)

    def if_(self, node: Any, ctx: _Ctx) -> None:
        c = ctx.but(conditional=True, within="if")
        branches: list[list[Any]] = [[]]
        has_else = False
        phase = "cond"
        for ch in node.children:
            t = ch.type
            if t == "then":
                phase = "body"
                continue
            if t in ("if", "fi", ";", "&"):
                continue
            if t == "elif_clause":
                branches.append([ch])
                continue
            if t == "else_clause":
                has_else = True
                branches.append([ch])
                continue
            if not ch.is_named or t == "comment":
                continue
            if phase == "cond":
                self.stmt(ch, c)
            else:
                branches[0].append(ch)

        def runner(nodes: list[Any]) -> Any:
            def run() -> None:
                for n in nodes:
                    if n.type == "elif_clause":
                        self.if_(n, ctx)
                    elif n.type == "else_clause":
                        self.walk_seq(n, c)
                    else:
                        self.stmt(n, c)

            return run

        self.branches([runner(b) for b in branches], fallthrough=not has_else)

    def loop(self, node: Any, ctx: _Ctx) -> None:
        kind = {
            "while_statement": "while",
            "for_statement": "for",
            "c_style_for_statement": "for",
            "select_statement": "select",
        }[node.type]
        c = ctx.but(conditional=True, within=kind)
        body = node.child_by_field_name("body")
        var = node.child_by_field_name("variable")
        words: list[Word] = []
        for ch in node.children:
            if _same(ch, body) or _same(ch, var) or not ch.is_named or ch.type == "comment":
                continue
            if node.type == "for_statement":
                if ch.type not in ("variable_name",):
                    words.append(self.word(ch))
                    self.substitutions(ch, ctx)
            elif node.type == "while_statement":
                self.stmt(ch, c)

        def run() -> None:
            if var is not None:
                name = self.text(var)
                vals = [f for w in words for f in (w.fields or ())]
                if len(vals) == 1 and all(w.value is not None for w in words):
                    self.assign(name, _Var(vals[0]), var.start_byte, record=False)
                else:
                    self.assign(name, _Var(None, (name,)), var.start_byte, record=False)
            if body is not None:
                self.walk_seq(body, c)

        self.branches([run], fallthrough=True)

    def case(self, node: Any, ctx: _Ctx) -> None:
        c = ctx.but(conditional=True, within="case")
        items = [ch for ch in node.named_children if ch.type == "case_item"]
        for ch in node.named_children:
            if ch.type != "case_item":
                self.substitutions(ch, ctx)

        def runner(item: Any) -> Any:
            def run() -> None:
                value_nodes = {_key(v) for v in item.children_by_field_name("value")}
                for ch in item.named_children:
                    if _key(ch) in value_nodes or ch.type == "comment":
                        continue
                    self.stmt(ch, c)

            return run

        self.branches([runner(i) for i in items], fallthrough=True)

    def function(self, node: Any, ctx: _Ctx) -> None:
        name_node = node.child_by_field_name("name")
        body = node.child_by_field_name("body")
        name = self.text(name_node) if name_node is not None else "?"
        self.functions[name] = body
        self.function_lines[name] = self.pos(node.start_byte)[0]
        if body is None:
            return
        saved = self.cur_fn_cmds
        self.cur_fn_cmds = set()
        c = ctx.but(conditional=True, function=name, within=f"function {name}")
        args = self.args
        self.args = None  # positional parameters are the function's own
        try:
            self.isolated(lambda: self.stmt(body, c) if body.type != "compound_statement" else self.walk_seq(body, c))
        finally:
            self.args = args
            self.fn_cmds[name] = self.cur_fn_cmds
            self.cur_fn_cmds = saved

    def call_function(self, name: str, ctx: _Ctx) -> None:
        """A call: run the body again, recording nothing, so its assignments and cd take effect."""
        body = self.functions.get(name)
        if body is None or self.dry > 4 or self.calls > 2000:
            return
        self.calls += 1
        self.dry += 1
        args = self.args
        self.args = None
        try:
            if body.type == "compound_statement":
                self.walk_seq(body, ctx.but(function=name))
            else:
                self.stmt(body, ctx.but(function=name))
        finally:
            self.args = args
            self.dry -= 1

    def substitutions(self, node: Any, ctx: _Ctx) -> None:
        """Record the commands inside $(...), `...` and <(...) found under node."""
        stack = [node]
        root = True
        while stack:
            n = stack.pop()
            if n.type in ("command_substitution", "process_substitution"):
                what = "$(...)" if n.type == "command_substitution" else "<(...)"
                c = ctx.but(substitution=True, within=what)
                self.isolated(lambda n=n, c=c: self.walk_seq(n, c))
                continue
            if root or n.type in (
                "string",
                "concatenation",
                "expansion",
                "arithmetic_expansion",
                "word",
                "array",
                "test_command",
                "binary_expression",
                "unary_expression",
                "parenthesized_expression",
                "file_redirect",
                "herestring_redirect",
                "command_name",
                "subscript",
                "translated_string",
                "variable_assignment",
                "simple_expansion",
                "ternary_expression",
                "postfix_expression",
                "heredoc_body",
                "redirected_statement",
                "negated_command",
                "case_item",
                "number",
                "command",
                "declaration_command",
                "unset_command",
                "ansi_c_string",
                "raw_string",
                "variable_assignments",
                "extglob_pattern",
                "regex",
            ):
                stack.extend(reversed(n.named_children))
            root = False

    # ------------------------------------------------------------------ assignments
    def assign(
        self,
        name: str,
        var: _Var,
        off: int,
        record: bool = True,
        word: Word | None = None,
        exported: bool | None = None,
    ) -> None:
        old = self.env.get(name)
        exp = exported if exported is not None else (old.exported if old is not None else False) or self.allexport
        var = _Var(var.value, var.unresolved, exp, var.array, var.assumed, True, var.partial)
        self.env = self.env.set(name, var)
        for t in self.tracking:
            t.add(name)
        if record and not self.dry and word is not None:
            self.assignments.append((name, word, exp, self.pos(off)[0]))

    def _assignment_parts(self, node: Any) -> tuple[str, str | None, bool, Any]:
        """(name, subscript, append, value node) of a variable_assignment node."""
        name_node = node.child_by_field_name("name")
        value = node.child_by_field_name("value")
        sub: str | None = None
        if name_node is not None and name_node.type == "subscript":
            n2 = name_node.child_by_field_name("name")
            idx = name_node.child_by_field_name("index")
            name = self.text(n2) if n2 is not None else self.text(name_node)
            sub = self.text(idx) if idx is not None else ""
        else:
            name = self.text(name_node) if name_node is not None else self.text(node).split("=")[0].rstrip("+")
        append = any(ch.type == "+=" for ch in node.children)
        return name, sub, append, value

    def eval_assignment(self, node: Any, env_for_values: _Env | None = None) -> tuple[str, _Var, Word]:
        name, sub, append, value = self._assignment_parts(node)
        ln, col = self.pos(node.start_byte)
        saved = self.env
        if env_for_values is not None:
            self.env = env_for_values
        try:
            old = self.env.get(name)
            if value is not None and value.type == "array":
                items: list[str] = []
                unres: list[str] = []
                assumed: list[str] = []
                for el in value.named_children:
                    if el.type == "comment":
                        continue
                    w = self.word(el)
                    if w.fields is None:
                        unres += [u for u in w.unresolved if u not in unres]
                    else:
                        items += list(w.fields)
                    assumed += list(w.assumed)
                if append and old is not None:
                    if old.array is None and old.value is None:
                        unres += list(old.unresolved or (name,))
                    items = list(old.array if old.array is not None else ([old.value] if old.value else [])) + items
                raw = self.text(value)
                joined = " ".join(items)
                word = Word(
                    raw,
                    None if unres else joined,
                    tuple(unres),
                    *self.pos(value.start_byte),
                    partial=joined,
                    fields=None if unres else tuple(items),
                    assumed=tuple(assumed),
                )
                var = _Var(
                    None if unres else joined,
                    tuple(unres),
                    array=None if unres else tuple(items),
                    assumed=tuple(assumed),
                )
                return name, var, word
            if value is None:
                word = Word("", "", (), ln, col + len(name) + 1, partial="", fields=("",))
            else:
                word = self.word(value, assign=True)
            val, unres = word.value, word.unresolved
            if append and old is not None:
                if old.array is not None and sub is None:
                    items = [*old.array, val] if val is not None else list(old.array)
                    return name, _Var(" ".join(items), unres, array=tuple(items)), word
                if old.value is None:
                    unres = tuple(dict.fromkeys((*old.unresolved, *unres)))
                    val = None
                elif val is not None:
                    val = old.value + val
            if sub is not None:
                # A[i]=x: keep what is known of the array
                arr = list(old.array) if old is not None and old.array is not None else None
                if arr is not None and val is not None and sub.isdigit() and int(sub) <= len(arr):
                    idx = int(sub)
                    if idx == len(arr):
                        arr.append(val)
                    else:
                        arr[idx] = val
                    return name, _Var(" ".join(arr), (), array=tuple(arr)), word
                if old is None and sub in ("0", "") and val is not None:
                    return name, _Var(val, (), array=(val,)), word
                return name, _Var(None, (name,)), word
            if val is not None and len(val) > _MAX_VALUE:
                return name, _Var(None, (f"{name} (too long)",)), word
            return name, _Var(val, unres, assumed=word.assumed, partial=None if val is not None else word.partial), word
        finally:
            self.env = saved

    def bare_assignments(self, node: Any, ctx: _Ctx) -> None:
        nodes = (
            [node]
            if node.type == "variable_assignment"
            else [ch for ch in node.named_children if ch.type == "variable_assignment"]
        )
        for n in nodes:
            self.substitutions(n, ctx)
            name, var, word = self.eval_assignment(n)
            self.assign(name, var, n.start_byte, word=word)

    def declaration(self, node: Any, ctx: _Ctx) -> None:
        kids = node.children
        keyword = kids[0].type if kids else "export"
        words: list[Word] = []
        export = keyword == "export"
        unexport = False
        array_flag = False
        for ch in kids[1:]:
            if not ch.is_named or ch.type == "comment":
                continue
            if ch.type == "variable_assignment":
                self.substitutions(ch, ctx)
                name, var, word = self.eval_assignment(ch)
                v = word.value
                words.append(
                    Word(
                        self.text(ch),
                        None if v is None else f"{name}={v}",
                        word.unresolved,
                        *self.pos(ch.start_byte),
                        partial=f"{name}={word.text}",
                        fields=None if v is None else (f"{name}={v}",),
                    )
                )
                if keyword == "local" and ctx.function is None:
                    continue
                self.assign(
                    name, var, ch.start_byte, word=word, exported=True if export else (False if unexport else None)
                )
                continue
            w = self.word(ch)
            words.append(w)
            txt = w.text
            if txt.startswith(("-", "+")) and len(txt) > 1 and not _NAME.fullmatch(txt):
                if "x" in txt:
                    export = txt.startswith("-")
                    unexport = txt.startswith("+") or (keyword == "export" and "n" in txt)
                if keyword == "export" and txt == "-n":
                    export, unexport = False, True
                if "a" in txt or "A" in txt:
                    array_flag = True
                continue
            if _NAME.fullmatch(txt):
                old = self.env.get(txt)
                if export or unexport:
                    if old is not None:
                        self.env = self.env.set(
                            txt,
                            _Var(
                                old.value,
                                old.unresolved,
                                export and not unexport,
                                old.array,
                                old.assumed,
                                old.scripted,
                                old.partial,
                            ),
                        )
                    elif export:
                        # `export NAME` of an unknown name: its value is whatever the image has
                        self.env = self.env.set(txt, _Var(None, (txt,), True))
                elif old is None and keyword in ("declare", "typeset", "local", "readonly"):
                    self.env = self.env.set(txt, _Var("", (), False, () if array_flag else None))
        ln, _ = self.pos(node.start_byte)
        argv = [
            Word(keyword, keyword, (), ln, self.pos(node.start_byte)[1], partial=keyword, fields=(keyword,)),
            *words,
        ]
        self.record(node, argv, ctx, [], {}, name=keyword)

    def unset(self, node: Any, ctx: _Ctx) -> None:
        func = False
        words = []
        for ch in node.named_children:
            w = self.word(ch)
            words.append(w)
            if w.text == "-f":
                func = True
                continue
            if w.text.startswith("-"):
                continue
            if func:
                self.functions.pop(w.text, None)
            else:
                self.env = self.env.unset(w.text)
                for t in self.tracking:
                    t.add(w.text)
        ln, col = self.pos(node.start_byte)
        self.record(
            node,
            [Word("unset", "unset", (), ln, col, partial="unset", fields=("unset",)), *words],
            ctx,
            [],
            {},
            name="unset",
        )

    # ------------------------------------------------------------------ simple commands
    def simple(self, node: Any, ctx: _Ctx, outer_redirects: list[Any], outer: Any = None) -> None:
        prefix: list[Any] = []
        words: list[Any] = []
        redirects: list[Any] = list(outer_redirects)
        for ch in node.children:
            if not ch.is_named or ch.type == "comment":
                continue
            t = ch.type
            if t == "variable_assignment" and not words:
                prefix.append(ch)
            elif t.endswith("_redirect"):
                redirects.append(ch)
            elif t == "command_name":
                inner = [c for c in ch.named_children if c.type != "comment"]
                words.extend(inner or [ch])
            else:
                words.append(ch)
        self.substitutions(node, ctx)
        for r in outer_redirects:
            self.substitutions(r, ctx)
        # prefix assignments: visible to the command only
        assigns: dict[str, str | None] = {}
        env_cmd = self.env
        for p in prefix:
            name, var, _word = self.eval_assignment(p, env_for_values=env_cmd)
            env_cmd = env_cmd.set(name, _Var(var.value, var.unresolved, True, var.array, var.assumed))
            assigns[name] = var.value
        argv = [self.word(w) for w in words]
        if not argv:
            # assignments (and redirections) only: the assignments persist
            for p in prefix:
                name, var, word = self.eval_assignment(p)
                self.assign(name, var, p.start_byte, word=word)
            if redirects:
                self.record(outer or node, [], ctx, redirects, {}, name=None)
            return
        self.record(outer or node, argv, ctx, redirects, assigns, env_cmd=env_cmd)

    def record(
        self,
        node: Any,
        argv: list[Word],
        ctx: _Ctx,
        redirects: list[Any],
        assigns: dict[str, str | None],
        name: str | None = "",
        env_cmd: _Env | None = None,
    ) -> None:
        exec_ = timed = False
        while argv and argv[0].raw in ("exec", "time") and argv[0].value == argv[0].raw:
            if argv[0].raw == "exec":
                exec_ = True
                argv = argv[1:]
                while argv and argv[0].text.startswith("-"):
                    opt = argv[0].text
                    argv = argv[1:]
                    if opt == "--":
                        break
                    if opt == "-a" and argv:
                        argv = argv[1:]
            elif argv[0].raw == "time":
                timed = True
                argv = argv[1:]
                while argv and argv[0].text in ("-p", "--"):
                    argv = argv[1:]
        fields: list[Word] = []
        for w in argv:
            if w.fields is None:
                fields.append(w)
            else:
                for f in w.fields:
                    fields.append(Word(w.raw, f, (), w.line, w.col, partial=f, fields=(f,), assumed=w.assumed))
        heredocs: list[HereDoc] = []
        stdin: str | None = None
        red_texts: list[str] = []
        for r in redirects:
            red_texts.append(self._redirect_text(r))
            hd = self._heredoc_of(r)
            if hd is not None:
                heredocs.append(hd)
                stdin = hd.body  # with several, the command reads the last one
            elif r.type == "herestring_redirect":
                val = list(r.named_children)
                if val:
                    w = self.word(val[-1])
                    stdin = None if w.value is None else w.value + "\n"
        start, end = node.start_byte, node.end_byte
        text = self.src[start:end]
        ln, col = self.pos(start)
        eln, _ = self.pos(max(start, end - 1))
        cmd = Command(
            argv=argv,
            text=text,
            line=ln,
            col=col,
            exec_=exec_,
            pipeline=ctx.pipeline,
            redirected=bool(redirects) or ctx.redirected,
            heredoc=heredocs[0].body if heredocs else None,
            background=ctx.background,
            conditional=ctx.conditional,
            cwd=self.cwd,
            fields=fields,
            assigns=assigns,
            heredocs=heredocs,
            redirects=red_texts,
            stdin=stdin,
            timed=timed,
            substitution=ctx.substitution,
            within=ctx.within,
            end_line=eln,
            _env=env_cmd if env_cmd is not None else self.env,
            _traps=self.trap_state,
            _start=start,
            _subshell=ctx.subshell,
        )
        cname = fields[0].text if fields else ""
        if not self.dry:
            self.commands.append(cmd)
            self.by_node[(start, end)] = cmd
            if self.cur_fn_cmds is not None and cname:
                self.cur_fn_cmds.add(posixpath.basename(cname))
        if name is None or not fields:
            return
        self.effects(cmd, cname, ctx)

    def _redirect_text(self, r: Any) -> str:
        return self.src[r.start_byte : r.end_byte]

    def _heredoc_of(self, r: Any) -> HereDoc | None:
        if r.type != "file_redirect":
            return None
        for ch in r.children:
            if ch.type == "<":
                hd = self.hd_by_op.get(ch.start_byte)
                if hd is None:
                    return None
                return self._make_heredoc(hd)
        return None

    def _make_heredoc(self, hd: _HD) -> HereDoc:
        made = self.hd_made.get(hd.op)
        if made is not None and not self.dry:
            return made
        raw = self.src[hd.body_start : hd.body_end] if hd.body_start >= 0 else ""
        if hd.strip:
            raw = re.sub(r"(?m)^\t+", "", raw)
        unres: tuple[str, ...] = ()
        if hd.quoted:
            body = raw
        else:
            acc = _Acc()
            self.scan(raw, 0, len(raw), acc, "H", 0)
            body = "".join(acc.partial)
            unres = tuple(acc.unres)
        out = HereDoc(
            delimiter=hd.delim,
            quoted=hd.quoted,
            strip_tabs=hd.strip,
            raw=raw,
            body=body,
            unresolved=unres,
            line=self.pos(hd.op)[0],
            body_line=self.pos(hd.body_start)[0] if hd.body_start >= 0 else self.pos(hd.op)[0],
            terminated=hd.terminated,
        )
        if not self.dry:
            self.hd_made[hd.op] = out
            self.heredocs.append(out)
        return out

    # ------------------------------------------------------------------ builtins' effects
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

    # ------------------------------------------------------------------ words
    def word(self, node: Any, assign: bool = False) -> Word:
        raw = self.src[node.start_byte : node.end_byte]
        ln, col = self.pos(node.start_byte)
        acc = _Acc()
        self.scan(raw, 0, len(raw), acc, "A" if assign else "W", 0)
        acc.brk()
        value = None if acc.bad else acc.text()
        if value is not None and len(value) > _MAX_VALUE:
            return Word(raw, None, ("<too long>",), ln, col, partial=raw, fields=None)
        return Word(
            raw,
            value,
            tuple(acc.unres),
            ln,
            col,
            partial="".join(acc.partial),
            fields=None if acc.bad else tuple(acc.fields),
            assumed=tuple(acc.assumed),
        )

    def scan(self, s: str, i: int, end: int, acc: _Acc, mode: str, depth: int) -> None:
        """Expand s[i:end] into acc. mode: W word, A assignment value, D "...", H here-doc body, O ${x:-operand}."""
        if depth > 40:
            acc.unresolved(s[i:end], s[i:end][:40])
            return
        plain = _PLAIN_W if mode in "WAO" else (_PLAIN_D if mode == "D" else _PLAIN_H)
        start = i
        while i < end:
            m = plain.match(s, i, end)
            if m:
                chunk = m.group(0)
                if mode == "O":
                    acc.split(chunk)
                else:
                    acc.lit(chunk)
                i = m.end()
                continue
            c = s[i]
            if c == "\\":
                if i + 1 >= end:
                    acc.lit("\\")
                    i += 1
                    continue
                nx = s[i + 1]
                if nx == "\n":
                    i += 2
                    continue
                if mode in "WAO" or nx in "$`\\" or (mode == "D" and nx == '"'):
                    acc.lit(nx)
                else:
                    acc.lit("\\" + nx)
                i += 2
                continue
            if c == "'" and mode in "WAO":
                j = s.find("'", i + 1, end)
                j = end if j < 0 else j
                acc.quoted()
                acc.lit(s[i + 1 : j])
                i = j + 1
                continue
            if c == '"' and mode in "WAO":
                j = _match(s, i + 1, end, '"', '"')
                fresh = acc.cur is None
                zero = acc.zero
                acc.quoted()
                self.scan(s, i + 1, j, acc, "D", depth + 1)
                if fresh and acc.zero > zero and acc.cur is not None and not "".join(acc.cur):
                    acc.cur = None  # "$@" with no positional parameters is no word at all
                i = j + 1
                continue
            if c == "`":
                j = _match(s, i + 1, end, "`", "`")
                body = s[i : j + 1]
                acc.unresolved(body, body if len(body) <= 60 else body[:57] + "...`")
                i = j + 1
                continue
            if c == "~":
                if mode in "WA" and (i == start or (mode == "A" and s[i - 1] == ":")):
                    j = i + 1
                    while j < end and s[j] not in "/:" and (s[j].isalnum() or s[j] in "_.-+"):
                        j += 1
                    user = s[i + 1 : j]
                    home = self.env.get("HOME")
                    if user == "" and home is not None and home.value is not None:
                        acc.lit(home.value)
                    elif user in ("+", "-"):
                        acc.unresolved(s[i:j], "~" + user)
                    else:
                        acc.unresolved(s[i:j], "~" + user)
                    i = j
                    continue
                if mode == "O":
                    acc.split("~")
                else:
                    acc.lit("~")
                i += 1
                continue
            if c == '"':  # in H mode a double quote is just text
                acc.lit('"')
                i += 1
                continue
            if c == "'":
                acc.lit("'")
                i += 1
                continue
            # c == "$"
            i = self.dollar(s, i, end, acc, mode, depth)

    def dollar(self, s: str, i: int, end: int, acc: _Acc, mode: str, depth: int) -> int:
        quoted = mode in "DHA"
        if i + 1 >= end:
            acc.lit("$")
            return i + 1
        nx = s[i + 1]
        if nx == "'" and mode in "WAO":
            j = i + 2
            while j < end and s[j] != "'":
                j += 2 if s[j] == "\\" else 1
            acc.quoted()
            acc.lit(_ansi_c(s[i + 2 : min(j, end)]))
            return j + 1
        if nx == '"' and mode in "WAO":
            j = _match(s, i + 2, end, '"', '"')
            acc.quoted()
            self.scan(s, i + 2, j, acc, "D", depth + 1)
            return j + 1
        if s.startswith("((", i + 1):
            j = _match(s, i + 3, end, ")", "(")
            # j is the first of the closing "))"
            inner = s[i + 3 : j]
            k = j + 2 if s.startswith("))", j) else j + 1
            self.arith(inner, s[i:k], acc, quoted, depth)
            return k
        if nx == "(":
            j = _match(s, i + 2, end, ")", "(")
            body = s[i : j + 1]
            acc.unresolved(body, body if len(body) <= 60 else body[:57] + "...)")
            return j + 1
        if nx == "{":
            j = _match(s, i + 2, end, "}", "{")
            self.param(s[i + 2 : j], s[i : j + 1], acc, mode, depth)
            return j + 1
        m = _NAME.match(s, i + 1, end)
        if m:
            self.var(m.group(0), s[i : m.end()], acc, quoted)
            return m.end()
        if nx.isdigit() or nx in "@*#?$!-":
            self.special(nx, "$" + nx, acc, quoted)
            return i + 2
        acc.lit("$")
        return i + 1

    def _put(self, acc: _Acc, value: str, quoted: bool) -> None:
        if quoted:
            acc.lit(value)
        else:
            acc.split(value)

    def lookup(self, name: str) -> tuple[str | None, tuple[str, ...], _Var | None]:
        """(value, unresolved, var) of $name."""
        if name == "PWD":
            if self.cwd is not None:
                return self.cwd, (), None
            return None, ("PWD",), None
        if name == "OLDPWD" and self.oldpwd is not None:
            return self.oldpwd, (), None
        var = self.env.get(name)
        if var is not None and (name not in _DYNAMIC or var.scripted):
            if var.value is None:
                return None, var.unresolved or (name,), var
            if var.array is not None:
                return (var.array[0] if var.array else ""), (), var
            return var.value, (), var
        if name in _DYNAMIC:
            return None, ("$" + name,), None
        return None, (name,), None

    def var(self, name: str, raw: str, acc: _Acc, quoted: bool) -> None:
        value, unres, var = self.lookup(name)
        if value is None:
            acc.unresolved(var.partial if var is not None and var.partial is not None else raw, unres)
            return
        if var is not None:
            for a in var.assumed:
                acc.assume(a)
        self._put(acc, value, quoted)

    def positional(self) -> list[str] | None:
        return None if self.args is None else self.args[1:]

    def special(self, ch: str, raw: str, acc: _Acc, quoted: bool) -> None:
        if ch.isdigit():
            if self.args is None:
                acc.unresolved(raw, "$" + ch)
                return
            k = int(ch)
            self._put(acc, self.args[k] if k < len(self.args) else "", quoted)
            return
        if ch in "@*":
            pos = self.positional()
            if pos is None:
                acc.unresolved(raw, "$" + ch)
                return
            if ch == "@" or not quoted:
                acc.multi(pos, quoted)  # "$*" joins, "$@" and unquoted $* make one field each
            else:
                acc.lit(" ".join(pos))
            return
        if ch == "#":
            pos = self.positional()
            if pos is None:
                acc.unresolved(raw, "$#")
            else:
                acc.lit(str(len(pos)))
            return
        acc.unresolved(raw, "$" + ch)

    def arith(self, inner: str, raw: str, acc: _Acc, quoted: bool, depth: int) -> None:
        sub = _Acc()
        self.scan(inner, 0, len(inner), sub, "H", depth + 1)
        if sub.bad:
            acc.unresolved(raw, sub.unres)
            return
        expr = sub.text()
        missing: list[str] = []

        def repl(m: re.Match[str]) -> str:
            name = m.group(0)
            value, unres, _v = self.lookup(name)
            if value is None:
                missing.extend(unres)
                return "0"
            v = value.strip()
            return v if re.fullmatch(r"-?\d+", v) else (missing.append(name) or "0")  # type: ignore[func-returns-value]

        expr2 = re.sub(r"(?<![0-9.])[A-Za-z_][A-Za-z0-9_]*", repl, expr)
        if missing:
            acc.unresolved(raw, missing)
            return
        v = _arith_eval(expr2)
        if v is None:
            acc.unresolved(raw, raw)
            return
        acc.lit(str(v))

    def param(self, body: str, raw: str, acc: _Acc, mode: str, depth: int) -> None:
        quoted = mode in "DHA"
        if not body:
            acc.unresolved(raw, raw)  # ${} is a bad substitution
            return
        length = indirect = False
        k = 0
        if body[0] == "#" and len(body) > 1 and body[1] not in "}":
            length = True
            k = 1
        elif body[0] == "!" and len(body) > 1:
            indirect = True
            k = 1
        m = _NAME.match(body, k)
        if m:
            name = m.group(0)
            k = m.end()
        elif k < len(body) and (body[k].isdigit()):
            j = k
            while j < len(body) and body[j].isdigit():
                j += 1
            name = body[k:j]
            k = j
        elif k < len(body) and body[k] in "@*#?$!-0":
            name = body[k]
            k += 1
        else:
            acc.unresolved(raw, raw)
            return
        index: str | None = None
        if k < len(body) and body[k] == "[":
            j = _match(body, k + 1, len(body), "]", "[")
            index = body[k + 1 : j]
            k = j + 1
        rest = body[k:]
        op = next((o for o in _PARAM_OPS if rest.startswith(o)), None) if rest else None
        if rest and op is None:
            acc.unresolved(raw, raw)
            return
        operand = rest[len(op) :] if op else ""
        # the value (and whether the variable is set)
        values, unres, is_set, var = self._param_value(name, index)
        if indirect:
            if values is None or len(values) != 1 or index is not None or op:
                acc.unresolved(raw, unres or (raw,))
                return
            target = values[0]
            if not (_NAME.fullmatch(target) or target.isdigit()):
                acc.unresolved(raw, raw)
                return
            values, unres, is_set, var = self._param_value(target, None)
        if length:
            if values is None:
                acc.unresolved(raw, unres)
                return
            if index in ("@", "*") or name in "@*":
                acc.lit(str(len(values)))
            else:
                acc.lit(str(len(values[0]) if values else 0))
            return
        multi = (index in ("@", "*")) or (name in ("@", "*") and index is None)
        star = index == "*" or (name == "*" and index is None)
        if op in (":-", "-", ":=", "=", ":+", "+", ":?", "?"):
            colon = op.startswith(":")
            if values is None and is_set is None:
                # not known whether it is set: unknown names are taken as unset (and reported)
                is_set = False
            empty = values is not None and (not values or (len(values) == 1 and values[0] == ""))
            use_alt = (not is_set) or (colon and empty)
            if op in (":+", "+"):
                if use_alt:
                    if values is None and var is None and name not in _DYNAMIC:
                        acc.assume(name)
                    return
                if values is None and is_set:
                    acc.unresolved(raw, unres)
                    return
                self.scan(operand, 0, len(operand), acc, "D" if quoted else "O", depth + 1)
                return
            if not use_alt:
                if values is None:
                    acc.unresolved(raw, unres)
                    return
                self._emit(acc, values, quoted, multi, star)
                if var is not None:
                    for a in var.assumed:
                        acc.assume(a)
                return
            if op.endswith("?"):
                acc.unresolved(raw, unres or (name,))
                return
            if values is None and name in _DYNAMIC:
                acc.unresolved(raw, unres)
                return
            if var is None and not name.isdigit() and name not in "@*#?$!-":
                acc.assume(name)
            if op in (":=", "=") and _NAME.fullmatch(name):
                sub = _Acc()
                self.scan(operand, 0, len(operand), sub, "A", depth + 1)
                v = None if sub.bad else sub.text()
                self.assign(name, _Var(v, tuple(sub.unres), partial="".join(sub.partial)), 0, record=False)
            self.scan(operand, 0, len(operand), acc, "D" if quoted else "O", depth + 1)
            return
        if values is None:
            acc.unresolved(raw, unres)
            return
        if var is not None:
            for a in var.assumed:
                acc.assume(a)
        if op is None:
            self._emit(acc, values, quoted, multi, star)
            return
        # operand (pattern / replacement / offset) expanded as in double quotes; for ${x/pat/rep}
        # the two halves split at the first unescaped, unquoted slash first
        parts = [operand]
        if op in ("/", "//", "/#", "/%"):
            k = _first_slash(operand)
            parts = [operand[:k], operand[k + 1 :]] if k >= 0 else [operand, ""]
        texts = []
        for part in parts:
            sub = _Acc()
            self.scan(part, 0, len(part), sub, "H" if quoted else "W", depth + 1)
            if sub.bad:
                acc.unresolved(raw, sub.unres)
                return
            texts.append(sub.text())
        arg = "\x00".join(texts)
        try:
            out = [self._apply(op, v, arg) for v in values]
        except (re.error, ValueError, IndexError):
            acc.unresolved(raw, raw)
            return
        if any(o is None for o in out):
            acc.unresolved(raw, raw)
            return
        self._emit(acc, [o for o in out if o is not None], quoted, multi, star)

    def _emit(self, acc: _Acc, values: Sequence[str], quoted: bool, multi: bool, star: bool) -> None:
        if multi:
            if quoted and not star:
                acc.multi(values, True)
            elif quoted:
                acc.lit(" ".join(values))
            else:
                acc.multi(values, False)
        else:
            self._put(acc, values[0] if values else "", quoted)

    def _param_value(
        self, name: str, index: str | None
    ) -> tuple[list[str] | None, tuple[str, ...], bool | None, _Var | None]:
        """(values, unresolved, is_set (None = unknown), var)."""
        if name.isdigit():
            if self.args is None:
                return None, ("$" + name,), None, None
            k = int(name)
            return ([self.args[k]] if k < len(self.args) else None), (), k < len(self.args), None
        if name in "@*":
            pos = self.positional()
            if pos is None:
                return None, ("$" + name,), None, None
            return list(pos), (), bool(pos), None
        if name == "#":
            pos = self.positional()
            return (None, ("$#",), None, None) if pos is None else ([str(len(pos))], (), True, None)
        if name in "?$!-":
            return None, ("$" + name,), True, None
        if name in ("PWD", "OLDPWD"):
            value, unres, _ = self.lookup(name)
            return ([value] if value is not None else None), unres, value is not None or None, None
        var = self.env.get(name)
        if var is None or (name in _DYNAMIC and not var.scripted):
            if name in _DYNAMIC:
                return None, ("$" + name,), True, None
            return None, (name,), None, None
        if var.value is None and var.array is None:
            return None, var.unresolved or (name,), True, var
        arr = list(var.array) if var.array is not None else [var.value or ""]
        if index is None:
            return [arr[0] if arr else ""], (), True, var
        if index in ("@", "*"):
            return arr, (), bool(arr), var
        idx = index.strip()
        if idx.lstrip("-").isdigit():
            k = int(idx)
            if -len(arr) <= k < len(arr):
                return [arr[k]], (), True, var
            return [""], (), False, var
        return None, (f"{name}[{index}]",), None, var

    def _apply(self, op: str, v: str, arg: str) -> str | None:
        if op in ("#", "##"):
            rx = re.compile(_glob_re(arg), re.S)
            best = None
            for k in range(len(v) + 1):
                if rx.fullmatch(v, 0, k):
                    best = k
                    if op == "#":
                        break
            return v[best:] if best is not None else v
        if op in ("%", "%%"):
            rx = re.compile(_glob_re(arg), re.S)
            best = None
            rng = range(len(v), -1, -1) if op == "%" else range(0, len(v) + 1)
            for k in rng:
                if rx.fullmatch(v, k):
                    best = k
                    break
            return v[:best] if best is not None else v
        if op in ("/", "//", "/#", "/%"):
            pat, _, rep = arg.partition("\x00")
            if not pat:
                return v
            rx = _glob_re(pat)
            if op == "/#":
                return re.sub("^" + rx, lambda _m: rep, v, count=1, flags=re.S)
            if op == "/%":
                return re.sub("(?:" + rx + ")$", lambda _m: rep, v, count=1, flags=re.S)
            return re.sub(rx, lambda _m: rep, v, count=0 if op == "//" else 1, flags=re.S)
        if op in ("^^", "^"):
            return v.upper() if op == "^^" else v[:1].upper() + v[1:]
        if op in (",,", ","):
            return v.lower() if op == ",," else v[:1].lower() + v[1:]
        if op == ":":
            off_s, _, len_s = arg.partition(":")
            off = _arith_eval(off_s) if off_s.strip() else 0
            if off is None:
                return None
            if off < 0:
                off = max(0, len(v) + off)
            if len_s.strip():
                ln = _arith_eval(len_s)
                if ln is None:
                    return None
                return v[off : off + ln] if ln >= 0 else v[off : len(v) + ln]
            return v[off:]
        if op == "@":
            if arg == "Q":
                import shlex

                return shlex.quote(v)
            if arg in ("U", "L", "u"):
                return v.upper() if arg == "U" else (v.lower() if arg == "L" else v[:1].upper() + v[1:])
            if arg == "E":
                return _ansi_c(v)
            return None
        return None

    # ------------------------------------------------------------------ the end of the script
    def _tail_analysis(self, root: Any, prog: ShellProgram) -> None:
        """Mark `last`, and say why bash would not replace itself with the last command."""
        kids = root.children
        stmts = [(k, c) for k, c in enumerate(kids) if c.is_named and c.type not in ("comment",)]
        if not stmts:
            return
        k_last, last = stmts[-1]
        problems: list[str] = []
        bg = k_last + 1 < len(kids) and kids[k_last + 1].type == "&"
        node = last
        is_list = False
        if node.type == "list":
            items = self._flatten_list(node)
            node = items[-1][1]
            is_list = True
        negated = False
        if node.type == "negated_command":
            negated = True
            inner = [c for c in node.named_children]
            node = inner[0] if inner else node
        redirected = False
        if node.type == "redirected_statement":
            body = node.child_by_field_name("body")
            if body is not None and body.type == "command":
                redirected = True
                node = body
        cmds: list[Command] = []
        if node.type == "pipeline":
            for ch in node.named_children:
                b = ch.child_by_field_name("body") if ch.type == "redirected_statement" else ch
                if b is not None and b.type == "command":
                    c = self._cmd_for(b)
                    if c is not None:
                        cmds.append(c)
            problems.append("the last command runs in a pipeline (`a | b`), so bash has to stay and wait for it")
        elif node.type == "command":
            c = self._cmd_for(node)
            if c is not None:
                cmds.append(c)
        if not cmds:
            if last.type in ("variable_assignment", "variable_assignments"):
                prog._tail = ["the script ends with an assignment, not the trainer"]
            return
        for c in cmds:
            c.last = True
        tail = cmds[-1]
        prog._tail_cmd = tail
        if bg or tail.background:
            problems.append("the last command runs in the background (&)")
        if negated or tail.negated:
            problems.append("the last command is negated (`! cmd`)")
        if tail.timed:
            problems.append("the last command is timed (`time cmd`)")
        if tail.heredocs:
            problems.append("the trainer reads a here-document (`<<`), a redirection, so bash forks it")
        elif redirected or tail.redirects:
            red = (tail.redirects or ["..."])[0]
            problems.append(f"the last command has a redirection (`{_short(red, 30)}`), so bash forks it")
        if tail.within:
            problems.append(f"the last command runs inside {_describe_within(tail.within[-1])}")
        # traps in effect
        for sig, action, _cond, _line in tail._traps:
            if action == "" or sig in ("DEBUG", "RETURN"):
                continue
            problems.append(f"a trap is set (`trap ... {sig}`), so bash stays to run it")
            break
        # the same-line group: `a; b && T` and `a & T` are not optimised
        k_prev = stmts[-2][0] if len(stmts) > 1 else None
        if k_prev is not None:
            gap_nodes = kids[k_prev + 1 : k_last]
            gap = self.src[kids[k_prev].end_byte : last.start_byte]
            gap_clean = re.sub(r"\\\n", "", gap)
            gap_clean = re.sub(r"#[^\n]*", "", gap_clean)
            same_line = "\n" not in gap_clean
            seps = [g.type for g in gap_nodes if not g.is_named]
            if same_line and "&" in seps:
                problems.append("a command is sent to the background (&) earlier on the same line")
            elif same_line and ";" in seps and is_list:
                problems.append(
                    "it ends a `a; b && c` line: bash only replaces itself with the last command of "
                    "`a; c` or of `b && c`"
                )
        # nothing may follow the trainer's line in the -c string
        rest = self.src[last.end_byte :]
        if self.hd_spans:
            rest_parts = []
            pos = last.end_byte
            for a, b in sorted(self.hd_spans):
                if b <= pos:
                    continue
                a = max(a, pos)
                rest_parts.append(self.src[pos:a])
                pos = b
            rest_parts.append(self.src[pos:])
            rest = "".join(rest_parts)
        rest_c = re.sub(r"\\\n", "", rest)
        if not re.fullmatch(r"[ \t]*(?:[;&][ \t]*)?(?:#[^\n]*)?\n?", rest_c):
            after = rest_c.split("\n", 1)[1] if "\n" in rest_c else rest_c
            if after.strip() == "":
                what = "a blank line"
            elif after.lstrip().startswith("#"):
                what = "a comment line"
            else:
                what = f"`{_short(after.strip(), 30)}`"
            problems.append(
                f"{what} follows the trainer's line: bash replaces itself only when nothing at all is left "
                "of the -c string"
            )
        prog._tail = problems

    def _cmd_for(self, node: Any) -> Command | None:
        direct = self.by_node.get((node.start_byte, node.end_byte))
        if direct is not None:
            return direct
        for (a, b), cmd in self.by_node.items():
            if a <= node.start_byte and node.end_byte <= b and cmd.fields:
                return cmd
        return None


def _key(node: Any) -> tuple[int, int, str]:
    return node.start_byte, node.end_byte, node.type


def _same(a: Any, b: Any) -> bool:
    return a is not None and b is not None and _key(a) == _key(b)


_STATEMENTS = {
    "command",
    "redirected_statement",
    "variable_assignment",
    "variable_assignments",
    "declaration_command",
    "unset_command",
    "pipeline",
    "list",
    "negated_command",
    "subshell",
    "compound_statement",
    "if_statement",
    "while_statement",
    "for_statement",
    "c_style_for_statement",
    "case_statement",
    "function_definition",
    "test_command",
    "ERROR",
    "select_statement",
}


def _ansi_c(s: str) -> str:
    out = []
    i = 0
    simple = {
        "n": "\n",
        "t": "\t",
        "r": "\r",
        "a": "\a",
        "b": "\b",
        "f": "\f",
        "v": "\v",
        "e": "\x1b",
        "E": "\x1b",
        "\\": "\\",
        "'": "'",
        '"': '"',
        "?": "?",
    }
    while i < len(s):
        c = s[i]
        if c == "\\" and i + 1 < len(s):
            nx = s[i + 1]
            if nx in simple:
                out.append(simple[nx])
                i += 2
                continue
            if nx == "x":
                m = re.match(r"[0-9a-fA-F]{1,2}", s[i + 2 :])
                if m:
                    out.append(chr(int(m.group(0), 16)))
                    i += 2 + m.end()
                    continue
            m = re.match(r"[0-7]{1,3}", s[i + 1 :])
            if m:
                out.append(chr(int(m.group(0), 8) & 0xFF))
                i += 1 + m.end()
                continue
            out.append("\\" + nx)
            i += 2
            continue
        out.append(c)
        i += 1
    return "".join(out)


def _quote(text: str) -> str:
    return "'" + text.replace("'", "'\\''") + "'"


def _short(text: str, n: int = 60) -> str:
    text = " ".join(text.split())
    return text if len(text) <= n else text[: n - 1] + "…"


def _describe_within(w: str) -> str:
    if w.startswith("function "):
        return f"the function `{w[9:]}`"
    return {
        "if": "an `if` block",
        "for": "a `for` loop",
        "while": "a `while` loop",
        "select": "a `select` loop",
        "case": "a `case` block",
        "subshell": "a `( ... )` subshell",
        "group": "a `{ ...; }` group",
        "!": "a negated command",
        "$(...)": "a command substitution",
        "<(...)": "a process substitution",
    }.get(w, w)


# --------------------------------------------------------------------------------------------
# entry points

_PARSER: Any = None


def _parser() -> Any:
    global _PARSER
    if _PARSER is None:
        import tree_sitter
        import tree_sitter_bash

        _PARSER = tree_sitter.Parser(tree_sitter.Language(tree_sitter_bash.language()))
    return _PARSER


def parse_shell(
    script: str,
    shell: str = "bash",
    env: Mapping[str, str] | None = None,
    cwd: str | None = None,
    *,
    args: Sequence[str] | None = None,
    invocation: ShellInvocation | None = None,
    _depth: int = 0,
) -> ShellProgram:
    """Read a `-c` script the way `shell` would.

    env seeds the variables (the container's env, all exported); cwd is the initial working
    directory (the container's workingDir); args are the positional parameters [$0, $1, ...]
    (None: not known, so $1 and "$@" stay unresolved). Never raises on broken input: what could
    be read is returned with `errors`.
    """
    shell = _base(shell or "bash") or "bash"
    if shell == "busybox":
        shell = "ash"
    if not isinstance(script, str):
        script = str(script)
    reader = _Reader(script, shell, env, cwd, args, _depth)
    try:
        prog = reader.run()
    except Exception as exc:
        if _STRICT:
            raise
        prog = ShellProgram(
            shell,
            script,
            reader.commands,
            reader.assignments,
            reader.traps,
            [*reader.errors, f"could not read the script ({type(exc).__name__})"],
        )
    prog.invocation = invocation
    return prog


def expand_word(
    text: str, env: Mapping[str, str] | None = None, cwd: str | None = None, *, assignment: bool = False
) -> Word:
    """Expand one shell word (a value from a config, an env var, a flag) the way bash would.

    No parser is loaded: quotes, `$VAR`, `${VAR:-default}`, `$((...))` and `~` are handled, and
    `$(...)`, backticks and unknown variables are reported in `unresolved`. With assignment=True
    the text is the right-hand side of `NAME=...` (no word splitting, `~` after `:` too).
    """
    reader = _Reader(text, "bash", env, cwd, None, 0)
    acc = _Acc()
    try:
        reader.scan(text, 0, len(text), acc, "A" if assignment else "W", 0)
    except Exception:
        if _STRICT:
            raise
        return Word(text, None, (text,), 0, 0, partial=text)
    acc.brk()
    value = None if acc.bad else acc.text()
    return Word(
        text,
        value,
        tuple(acc.unres),
        0,
        0,
        partial="".join(acc.partial),
        fields=None if acc.bad else tuple(acc.fields),
        assumed=tuple(acc.assumed),
    )


def parse_argv(
    argv: Sequence[str], env: Mapping[str, str] | None = None, cwd: str | None = None
) -> ShellProgram | None:
    """split_shell_argv + parse_shell: the program a container argv runs, or None when no `-c` shell."""
    inv = shell_invocation(argv)
    if inv is None:
        return None
    full = dict(env or {})
    full.update(inv.env)
    return parse_shell(inv.script, inv.shell, full, cwd, args=inv.args or [inv.shell], invocation=inv)
