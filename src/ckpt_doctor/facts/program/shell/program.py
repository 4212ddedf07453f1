"""What the shell reader finds: words, here-documents, traps, commands and the program they make
up.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ckpt_doctor.facts.program.shell.env import _Env
from ckpt_doctor.facts.program.shell.invocation import ShellInvocation
from ckpt_doctor.facts.program.shell.pid1 import Pid1
from ckpt_doctor.facts.program.shell.trainer import trainer_kind


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
class ShellProgram(Pid1):
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
