"""Where a drill talks to its user: the interface the runner calls, and its terminal implementation.

The runner never prints: it tells a Console what happens (a step starts, a change is about to be made,
a wait goes on, a step ends) and asks it to confirm each change. The command line uses TextConsole
(stderr, so that `-o json` keeps stdout clean); the app has its own (tui/screens/drill.py).
Everything shown passes through the redactor.
"""

from __future__ import annotations

import sys
import threading
import time
from typing import IO, Protocol

from ckpt_doctor.drill.playbook import Step
from ckpt_doctor.drill.result import DrillResult, StepResult
from ckpt_doctor.sources.redact import redact_text

MARKS = {
    "passed": "✓",
    "failed": "✗",
    "skipped": "-",
    "stopped": "■",
    "error": "!",
    "not_run": "·",
    "planned": "○",
}


class Console(Protocol):
    def begin(self, result: DrillResult, steps: list[Step]) -> None: ...

    def step_started(self, step: Step, index: int, total: int) -> None: ...

    def show_change(self, step: Step, does: str, kubectl: list[str]) -> None: ...

    def confirm(self, step: Step, does: str) -> str:
        """'yes', 'skip' or 'abort'."""
        ...

    def progress(self, step: Step, text: str, elapsed: float, timeout: float) -> None: ...

    def log_tail(self, step: Step, lines: list[str]) -> None: ...

    def note(self, text: str) -> None: ...

    def diagnosis(self, step: Step, lines: list[str]) -> None: ...

    def step_finished(self, step: Step, result: StepResult) -> None: ...

    def end(self, result: DrillResult) -> None: ...


def _fmt_seconds(s: float) -> str:
    if s < 60:
        return f"{s:.1f} s" if s < 10 else f"{s:.0f} s"
    m, sec = divmod(int(s), 60)
    return f"{m} min {sec:02d} s" if m < 60 else f"{m // 60} h {m % 60:02d} min"


class TextConsole:
    """The drill on a terminal (stderr): steps, commands, prompts, waits."""

    def __init__(
        self,
        yes: bool = False,
        verbose: bool = False,
        out: IO[str] | None = None,
        answers: IO[str] | None = None,
        quiet: bool = False,
    ) -> None:
        self.yes = yes
        self.verbose = verbose
        self.out = out or sys.stderr
        self.answers = answers or sys.stdin
        self.quiet = quiet
        self.tty = hasattr(self.out, "isatty") and self.out.isatty()
        self._last_progress = ""
        self._progress_shown = False
        self._seen_log: set[str] = set()
        self._lock = threading.Lock()

    def _print(self, text: str = "") -> None:
        with self._lock:
            if self._progress_shown and self.tty:
                self.out.write("\r\x1b[2K")
                self._progress_shown = False
            self.out.write(redact_text(text) + "\n")
            self.out.flush()

    def begin(self, result: DrillResult, steps: list[Step]) -> None:
        t = result.target or {}
        what = f"TrainJob {t.get('namespace')}/{t.get('name')}" if t else "no TrainJob yet"
        how = {"submit": "submitting it", "attach": "attached to it", "cleanup": "cleaning up"}.get(result.mode, "")
        dry = " (dry run: nothing is changed)" if result.dry_run else ""
        self._print(f"ckpt-doctor drill {result.drill_id}: {what}, {how}{dry}")
        if result.simulated:
            from ckpt_doctor.simulation import WORDS

            self._print(f"  on the {WORDS} at {(result.cluster or {}).get('server')}: not a real cluster")
        if result.trainer_version:
            self._print(f"  Trainer {result.trainer_version}")
        for n in result.notes:
            self._print(f"  note: {n}")

    def step_started(self, step: Step, index: int, total: int) -> None:
        self._last_progress = ""
        self._print(f"[{index}/{total}] {step.id}: {step.title}")
        if self.verbose:
            self._print(f"      why: {step.why}")

    def show_change(self, step: Step, does: str, kubectl: list[str]) -> None:
        self._print(f"      {does}:")
        for line in kubectl:
            self._print(f"        {line}")

    def confirm(self, step: Step, does: str) -> str:
        if self.yes:
            return "yes"
        while True:
            with self._lock:
                self.out.write(redact_text(f"      {does}? [y]es / [s]kip this step / [a]bort the drill: "))
                self.out.flush()
            line = self.answers.readline()
            if not line:
                self._print("(no answer: stopping the drill)")
                return "abort"
            a = line.strip().lower()
            if a in ("y", "yes"):
                return "yes"
            if a in ("s", "skip", "n", "no"):
                return "skip"
            if a in ("a", "abort", "q", "quit"):
                return "abort"

    def progress(self, step: Step, text: str, elapsed: float, timeout: float) -> None:
        if self.quiet:
            return
        line = f"      … {text} ({_fmt_seconds(elapsed)} of {_fmt_seconds(timeout)})"
        if self.tty:
            with self._lock:
                self.out.write("\r\x1b[2K" + redact_text(line)[:200])
                self.out.flush()
                self._progress_shown = True
            return
        if text != self._last_progress:  # on a pipe: one line per new state, not per tick
            self._last_progress = text
            self._print(line)

    def log_tail(self, step: Step, lines: list[str]) -> None:
        if not self.verbose:
            return
        for line in lines:
            if line not in self._seen_log:
                self._seen_log.add(line)
                self._print(f"      log │ {line[:200]}")

    def note(self, text: str) -> None:
        self._print(f"      {text}")

    def diagnosis(self, step: Step, lines: list[str]) -> None:
        if not lines:
            return
        self._print("      diagnosis:")
        for line in lines:
            self._print(f"        {line}")

    def step_finished(self, step: Step, result: StepResult) -> None:
        took = f" ({_fmt_seconds(result.seconds)})" if result.seconds is not None else ""
        mark = MARKS.get(result.status, "?")
        self._print(f"      {mark} {result.status}{took}: {result.observed}" if result.observed else
                    f"      {mark} {result.status}{took}")

    def end(self, result: DrillResult) -> None:
        self._print(f"drill {result.drill_id}: {result.verdict}: {result.verdict_reason}")
        for left in result.leftovers:
            self._print(f"  LEFT BEHIND: {left}")
        if result.leftovers:
            t = result.target or {}
            self._print(f"  run `ckpt-doctor drill --cleanup -n {t.get('namespace', 'NAMESPACE')}` when the cluster "
                        "answers")


class Clock:
    """Time for the runner (tests may replace it)."""

    def monotonic(self) -> float:
        return time.monotonic()

    def sleep(self, seconds: float) -> None:
        time.sleep(seconds)
