"""Entry points: `parse_shell`, `parse_argv`, `expand_word`, and the reader that puts the small
readers together.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence

from ckpt_doctor.facts.program.shell.assign import Assign
from ckpt_doctor.facts.program.shell.builtins import Builtins
from ckpt_doctor.facts.program.shell.commands import Commands
from ckpt_doctor.facts.program.shell.expand import Expand, _Acc
from ckpt_doctor.facts.program.shell.invocation import _base, shell_invocation
from ckpt_doctor.facts.program.shell.program import ShellInvocation, ShellProgram, Word
from ckpt_doctor.facts.program.shell.tail import Tail
from ckpt_doctor.facts.program.shell.walk import Walk


class _Reader(Expand, Assign, Commands, Builtins, Tail, Walk):
    """The shell reader: the walk and the readers it calls."""



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
        if sys.modules[__package__]._STRICT:  # type: ignore[attr-defined]
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
        if sys.modules[__package__]._STRICT:  # type: ignore[attr-defined]
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
