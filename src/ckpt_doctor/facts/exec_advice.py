"""How to make SIGTERM reach a trainer started from a shell script: one wording for every face.

`sigterm-not-forwarded`'s fix (diagnose, report, the app) and `lint --fix` (which refuses to edit what it
cannot make right mechanically) say the same thing for the same shape of command: `exec` helps a trainer that
is a simple command; in a pipeline, in the background, inside a nested shell or a compound command it does not,
and the advice says what does.
"""

from __future__ import annotations

from typing import Any

PLAIN = (
    "Start the trainer with `exec` (e.g. `exec torchrun …`), or write the inline script to a file first and "
    "`exec python /path/train.py`, so SIGTERM reaches Python"
)


def exec_obstacle(cmd: Any) -> str:
    """Why a plain `exec` in front of the trainer command `cmd` (a shell reader's Command) would not make it
    PID 1, and what to do instead; "" when `exec` is the whole answer."""
    if getattr(cmd, "inner", None) is not None or getattr(cmd, "substitution", False):
        return "the trainer runs inside a nested shell: exec it there by hand"
    if getattr(cmd, "pipeline", False):
        return "the trainer runs in a pipeline (`… | tee`): redirect its output instead, then exec it"
    if getattr(cmd, "background", False):
        return "the trainer runs in the background (`&`): run it in the foreground with exec"
    if getattr(cmd, "assigns", None):
        return "the trainer command starts with a variable assignment: export it first, then exec"
    within = getattr(cmd, "within", None)
    if within:
        return f"the trainer runs inside `{within[-1]}`: exec it there by hand"
    return ""


def exec_fix(cmd: Any) -> str:
    """The fix sentence for `sigterm-not-forwarded` on the trainer command `cmd` (None: not known)."""
    why = exec_obstacle(cmd) if cmd is not None else ""
    if not why:
        return PLAIN
    return f"{why[0].upper()}{why[1:]}, so that the trainer is PID 1 and SIGTERM reaches Python"
