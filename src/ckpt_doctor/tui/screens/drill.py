"""The verify drill in the app: the steps with their state, the current step's why, the command it is about
to run, its progress and the trainer's log; y confirms a change, s skips the step, a aborts (cleanup runs,
and is shown).

The drill runs in a worker thread (drill/runner.py, the same runner as `ckpt-doctor drill`); it talks to
this screen through `ScreenConsole`, which hands every update to the UI thread and waits for the answer to
a confirmation. Leaving the screen, or quitting, while the drill runs stops it the way abort does: the
cleanup still runs to its end before the worker finishes.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import Screen
from textual.widgets import DataTable, Footer, RichLog, Static

from ckpt_doctor.drill import console
from ckpt_doctor.sources.redact import redact_text
from ckpt_doctor.tui.widgets.header import DoctorHeader

MARKS = {"pending": "·", "running": "▶", **console.MARKS}  # the text console's, and the two states only a screen shows
TONES = {"passed": "green", "failed": "red", "error": "red", "stopped": "yellow", "running": "bold"}


class ScreenConsole:
    """The runner's Console (drill/console.py) for the app: updates go to the UI thread; confirm waits."""

    def __init__(self, screen: DrillScreen, stop: threading.Event) -> None:
        self.screen = screen
        self.stop = stop
        self.answered = threading.Event()
        self.answer = "abort"
        self._last_progress = 0.0
        self.detached = False  # the screen is going away: updates are dropped, the drill goes on to its cleanup

    def _ui(self, fn: Any, *args: Any) -> None:
        if self.detached:
            return
        try:
            self.screen.app.call_from_thread(fn, *args)
        except Exception:  # the app is closing: the drill goes on to its cleanup without a screen
            self.detached = True

    def begin(self, result: Any, steps: list[Any]) -> None:
        self._ui(self.screen.began, result, steps)

    def step_started(self, step: Any, index: int, total: int) -> None:
        self._ui(self.screen.step_started, step)

    def show_change(self, step: Any, does: str, kubectl: list[str]) -> None:
        self._ui(self.screen.show_command, does, kubectl)

    def confirm(self, step: Any, does: str) -> str:
        self.answered.clear()
        self._ui(self.screen.ask, does)
        while not self.answered.wait(0.1):
            if self.stop.is_set():
                return "abort"
        return self.answer

    def reply(self, answer: str) -> None:
        self.answer = answer
        self.answered.set()

    def progress(self, step: Any, text: str, elapsed: float, timeout: float) -> None:
        now = time.monotonic()
        if now - self._last_progress < 0.2:  # a wait polls often: a few updates a second are plenty
            return
        self._last_progress = now
        self._ui(self.screen.show_progress, f"… {text} ({elapsed:.0f} s of {timeout:.0f} s)")

    def log_tail(self, step: Any, lines: list[str]) -> None:
        self._ui(self.screen.show_log, lines)

    def note(self, text: str) -> None:
        self._ui(self.screen.add_note, text)

    def diagnosis(self, step: Any, lines: list[str]) -> None:
        for line in ["diagnosis:", *lines]:
            self._ui(self.screen.add_note, line)

    def step_finished(self, step: Any, result: Any) -> None:
        self._ui(self.screen.step_finished, step, result)

    def end(self, result: Any) -> None:
        self._ui(self.screen.ended, result)


class DrillScreen(Screen):
    """`ckpt-doctor drill` on one TrainJob, step by step."""

    BINDINGS = [
        Binding("y", "confirm", "Confirm"),
        Binding("s", "skip", "Skip step"),
        Binding("a", "abort", "Abort"),
        Binding("escape", "close", "Back"),
        Binding("q", "quit_drill", "Quit"),
    ]
    DEFAULT_CSS = """
    DrillScreen #drill-body { height: 1fr; }
    DrillScreen #drill-steps { width: 40; height: 1fr; border-right: vkey $primary 40%; }
    DrillScreen #drill-detail { width: 1fr; height: 1fr; padding: 0 1; }
    DrillScreen #drill-title { text-style: bold; margin-bottom: 1; }
    DrillScreen #drill-why { margin-bottom: 1; text-style: italic; }
    DrillScreen #drill-command { background: $boost; padding: 0 1; margin-bottom: 1; }
    DrillScreen #drill-prompt { color: $warning; text-style: bold; height: auto; }
    DrillScreen #drill-progress { height: auto; }
    DrillScreen #drill-log { height: 1fr; border-top: hkey $primary 40%; }
    """

    def __init__(
        self,
        target: str,
        context: str | None = None,
        kubeconfig: str | None = None,
        timeout: float = 15.0,
        playbook: Path | None = None,
        **options: Any,
    ) -> None:
        super().__init__()
        self.target = target
        self.context = context
        self.kubeconfig = kubeconfig
        self.timeout = timeout
        self.playbook = playbook
        self.options = options
        self.stop = threading.Event()
        self.console = ScreenConsole(self, self.stop)
        self.asking: str | None = None
        self.result: Any = None
        self.states: dict[str, str] = {}
        self.running = False
        self.finished = threading.Event()  # the worker is done, cleanup included
        self.quit_after = False

    def compose(self) -> ComposeResult:
        yield DoctorHeader(icon="✚")
        with Horizontal(id="drill-body"):
            yield DataTable(id="drill-steps", cursor_type="row", show_header=False)
            with Vertical(id="drill-detail"):
                with VerticalScroll():
                    yield Static("The verify drill", id="drill-title")
                    yield Static("", id="drill-why")
                    yield Static("", id="drill-command")
                # outside the scroll: a long explanation above must never push the question out of sight
                yield Static("", id="drill-prompt")
                yield Static("", id="drill-progress")
                yield RichLog(id="drill-log", wrap=True, markup=False, max_lines=400)
        yield Footer(show_command_palette=False)

    def on_mount(self) -> None:
        self.title = f"drill · {self.target}"
        table = self.query_one("#drill-steps", DataTable)
        table.add_columns("", "step", "state")
        table.focus()  # pushed from the palette, the screen had no focus, and its first key (a y) was lost
        self.running = True
        self._run()

    # -- the worker --------------------------------------------------------------------------------------
    @work(thread=True, exclusive=True, group="drill", exit_on_error=False)
    def _run(self) -> None:
        from ckpt_doctor.drill.runner import Drill, Options
        from ckpt_doctor.errors import InputError, UsageError

        opts = Options(
            target=self.target,
            context=self.context,
            kubeconfig=self.kubeconfig,
            request_timeout=self.timeout,
            playbook=self.playbook,
            **self.options,
        )
        try:
            drill = Drill(opts, self.console, stop=self.stop)
            self.drill = drill
            drill.run()  # never raises: its verdict (drill/verdict.py) is what the screen shows
            if drill.error is not None and drill.result.verdict_step is None:
                self.console.note(f"error: {drill.error}")
        except (InputError, UsageError) as e:
            self.console.note(f"error: {e}")
        finally:
            self.finished.set()
            self.console._ui(self._done)

    def _done(self) -> None:
        self.running = False
        self.asking = None
        self.query_one("#drill-prompt", Static).update("")
        self.refresh_bindings()
        if self.quit_after:
            self.app.exit(0)

    # -- from the runner (UI thread) ---------------------------------------------------------------------
    def began(self, result: Any, steps: list[Any]) -> None:
        self.result = result
        table = self.query_one("#drill-steps", DataTable)
        table.clear()
        for st in steps:
            self.states[st.id] = "pending"
            table.add_row(MARKS["pending"], st.id, "pending", key=st.id)
        self.sub_title = f"drill {result.drill_id}" + (" · dry run" if result.dry_run else "")
        if result.simulated:
            from ckpt_doctor.simulation import WORDS

            self.sub_title += f" · {WORDS}"
            self.add_note(f"on the {WORDS}: not a real cluster")
        for n in result.notes:
            self.add_note(n)

    def _set(self, sid: str, state: str) -> None:
        self.states[sid] = state
        table = self.query_one("#drill-steps", DataTable)
        if sid not in table.rows:
            table.add_row(MARKS.get(state, "?"), sid, state, key=sid)
            return
        style = TONES.get(state, "")
        table.update_cell(sid, table.ordered_columns[0].key, Text(MARKS.get(state, "?"), style=style))
        table.update_cell(sid, table.ordered_columns[2].key, Text(state, style=style))

    def step_started(self, step: Any) -> None:
        self._set(step.id, "running")
        self.query_one("#drill-title", Static).update(redact_text(f"{step.id}: {step.title}"))
        self.query_one("#drill-why", Static).update(redact_text(step.why))
        self.query_one("#drill-command", Static).update(redact_text(f"expect: {step.expect}"))
        self.query_one("#drill-progress", Static).update("")
        self.add_note(f"▶ {step.id}")

    def show_command(self, does: str, kubectl: list[str]) -> None:
        text = "\n".join([f"{does}:", *(f"  {line}" for line in kubectl)])
        self.query_one("#drill-command", Static).update(redact_text(text))
        self.add_note(text)

    def ask(self, does: str) -> None:
        self.asking = does
        self.query_one("#drill-prompt", Static).update(
            redact_text(f"{does}?  y confirm · s skip this step · a abort the drill")
        )
        self.refresh_bindings()

    def show_progress(self, text: str) -> None:
        self.query_one("#drill-progress", Static).update(redact_text(text))

    def show_log(self, lines: list[str]) -> None:
        log = self.query_one("#drill-log", RichLog)
        seen = getattr(self, "_log_seen", set())
        for line in lines:
            if line not in seen:
                seen.add(line)
                log.write(redact_text(f"log │ {line[:300]}"))
        self._log_seen = seen

    def add_note(self, text: str) -> None:
        self.query_one("#drill-log", RichLog).write(redact_text(text))

    def step_finished(self, step: Any, result: Any) -> None:
        self._set(step.id, result.status)
        self.query_one("#drill-progress", Static).update(redact_text(f"{result.status}: {result.observed}"))
        self.add_note(f"{MARKS.get(result.status, '?')} {step.id} {result.status}: {result.observed}")

    def ended(self, result: Any) -> None:
        self.result = result
        for st in result.steps:
            self._set(st.id, st.status)
        tone = TONES.get(result.verdict, "")
        self.query_one("#drill-title", Static).update(Text(f"drill {result.drill_id}: {result.verdict}", style=tone))
        self.query_one("#drill-why", Static).update(redact_text(f"{result.verdict_reason}\nesc goes back"))
        for left in result.leftovers:
            self.add_note(f"LEFT BEHIND: {left} (run `ckpt-doctor drill --cleanup`)")
        self.add_note(f"verdict: {result.verdict}: {result.verdict_reason}")

    # -- keys ---------------------------------------------------------------------------------------------
    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in ("confirm", "skip"):
            return True if self.asking else None
        if action == "abort":
            return True if self.running else None
        return True

    def _answer(self, answer: str) -> None:
        if self.asking is None:
            return
        self.asking = None
        self.query_one("#drill-prompt", Static).update("")
        self.console.reply(answer)
        self.refresh_bindings()

    def action_confirm(self) -> None:
        self._answer("yes")

    def action_skip(self) -> None:
        self._answer("skip")

    def action_abort(self) -> None:
        if not self.running:
            return
        self.stop.set()
        self.add_note("abort: stopping the drill; the cleanup runs now")
        self._answer("abort")

    def action_quit_drill(self) -> None:
        if not self.running:
            self.app.exit(0)
            return
        self.quit_after = True
        self.action_abort()
        self.add_note("quitting once the cleanup is done")

    def action_close(self) -> None:
        if self.running:
            self.notify("The drill is running: a aborts it (the cleanup runs), then esc goes back.")
            return
        self.app.pop_screen()

    def on_unmount(self) -> None:
        """The app is closing with the drill still running: stop it and wait for its cleanup to finish."""
        self.console.detached = True
        self.stop.set()
        self.console.reply("abort")
        if self.running:
            self.finished.wait(timeout=3600)
