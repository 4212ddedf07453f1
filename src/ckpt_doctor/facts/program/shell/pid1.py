"""Whether SIGTERM reaches the trainer, as measured with bash 5.2 and dash as PID 1: bash replaces
itself only with its last simple command (no redirection, pipeline, here-document, compound or
trap), dash never, `exec` always.
"""

from __future__ import annotations

import posixpath
from typing import TYPE_CHECKING

from ckpt_doctor.facts.program.shell.limits import _MAX_INNER
from ckpt_doctor.facts.program.shell.quoting import _describe_within, _quote, _short
from ckpt_doctor.facts.program.shell.trainer import _is_shell_script, trainer_kind

if TYPE_CHECKING:
    from ckpt_doctor.facts.program.shell.invocation import ShellInvocation
    from ckpt_doctor.facts.program.shell.program import Command, ShellProgram


class Pid1:
    """Whether SIGTERM reaches the trainer (a mixin of `ShellProgram`)."""

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
        from ckpt_doctor.facts.program.shell.parse import parse_shell

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
