"""The Textual app: pick a TrainJob, see why it did not resume, with the proof and the fix.

Start-up order matters for how fast the first frame appears: this module imports Textual and the
app's own widgets only. A bundle is read by a child process started before Textual is imported
(`commands/tui.py`, `source.py`); in live mode the worker thread that starts once the first frame is
on the terminal (`on_ready`, `paint.py`) imports the engine and the kubernetes client. The first
screen's body is mounted then too (`screens/base.py`).
"""

from __future__ import annotations

import threading
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from textual import on, work
from textual.app import App
from textual.binding import Binding
from textual.message import Message
from textual.reactive import reactive
from textual.screen import Screen
from textual.worker import get_current_worker

from ckpt_doctor.tui.commands import DoctorCommands
from ckpt_doctor.tui.paint import when_painted
from ckpt_doctor.tui.screens import SCREENS
from ckpt_doctor.tui.screens.base import DoctorScreen, Frame
from ckpt_doctor.tui.screens.overview import OverviewScreen
from ckpt_doctor.tui.target import Target

if TYPE_CHECKING:
    from collections.abc import Callable

    from ckpt_doctor.snapshot import LogKey
    from ckpt_doctor.tui.model import JobRow, Jump, View
    from ckpt_doctor.tui.screens.picker import PickerScreen
    from ckpt_doctor.tui.source import Loader

DEFAULT_AUTO_REFRESH = 30.0
# bindings the help lists elsewhere (screens, quit) or that are Textual's own plumbing
HELP_SKIPS = frozenset(
    {"Help", "Quit", "Focus Next", "Focus Previous", "Page Left", "Page Right", "Copy selected text"}
    | {label for _, _, label, _ in SCREENS}
)
FOLLOW_REFRESH = 5.0


class RowsLoaded(Message):
    def __init__(self, rows: list[JobRow] | None, error: str | None) -> None:
        super().__init__()
        self.rows, self.error = rows, error


class RowUpdated(Message):
    def __init__(self, row: JobRow) -> None:
        super().__init__()
        self.row = row


class ViewLoaded(Message):
    def __init__(self, key: str, view: View | None, error: str | None) -> None:
        super().__init__()
        self.key, self.view, self.error = key, view, error


def why(e: BaseException) -> str:
    """One line that says what went wrong, for the banner."""
    from ckpt_doctor.errors import InputError

    if isinstance(e, InputError):
        return str(e)
    return f"{type(e).__name__}: {e}"


def _screen_class(name: str) -> type[Screen]:
    """Screens other than the first two are imported when first opened."""
    if name == "overview":
        return OverviewScreen
    if name == "findings":
        from ckpt_doctor.tui.screens.findings import FindingsScreen

        return FindingsScreen
    if name == "timeline":
        from ckpt_doctor.tui.screens.timeline import TimelineScreen

        return TimelineScreen
    if name == "logs":
        from ckpt_doctor.tui.screens.logs import LogsScreen

        return LogsScreen
    if name == "events":
        from ckpt_doctor.tui.screens.events import EventsScreen

        return EventsScreen
    raise ValueError(name)


def picker() -> type[PickerScreen]:
    """The TrainJob list's screen class, imported when first needed: a TrainJob given on the command
    line opens on the Overview, and the list's table is then not part of the first frame."""
    from ckpt_doctor.tui.screens.picker import PickerScreen

    return PickerScreen


class DoctorApp(App[int]):
    """`ckpt-doctor tui`."""

    CSS_PATH = Path(__file__).with_name("app.tcss")  # absolute: subclasses may live anywhere
    TITLE = "ckpt-doctor"
    COMMANDS = App.COMMANDS | {DoctorCommands}
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (120, "-wide")]
    VERTICAL_BREAKPOINTS = [(0, "-short"), (40, "-tall")]
    BINDINGS = [
        Binding("question_mark", "help", "Help", key_display="?"),
        # screens and the palette act when the key is read, not after the focused widget passed it
        # on: keys typed right after them then reach the new screen (see Frame.on_key)
        Binding("colon", "command_palette", "Cmds", key_display=":", priority=True),
        Binding("escape", "back", "Back", key_display="esc"),
        Binding("r", "refresh", "Refresh"),
        Binding("q", "quit", "Quit"),
        Binding("ctrl+c", "quit", "Quit", show=False, priority=True),  # as in k9s (Textual only hints)
        *(Binding(key, f"goto('{name}')", label, show=False, priority=True) for key, name, label, _ in SCREENS),
        Binding("ctrl+t", "toggle_theme", "Theme", show=False),
    ]

    status: reactive[tuple[str, str]] = reactive(("", ""))

    def __init__(
        self,
        target: Target,
        refresh_every: float | None = None,
        loader: Loader | None = None,
        export_dir: Path | None = None,
        painted: Callable[[], None] | None = None,
    ) -> None:
        super().__init__()
        self._painted = painted  # called once the first frame is on the terminal
        self.target = target
        self.refresh_every = refresh_every
        self.auto = bool(refresh_every)
        self.export_dir = export_dir or Path.cwd()
        self._loader = loader
        self.current: str | None = target.qualified() if target.trainjob else None
        self.view: View | None = None
        self.rows: list[JobRow] | None = None
        self.rows_failed = False  # the last listing of TrainJobs failed (the banner says why)
        self.busy = ""  # what is being loaded, for the banner
        self.error: str | None = None
        self.refreshed_at = ""
        self._opened_first = False
        self._tabs: dict[str, Screen] = {}
        self.crash_line = ""  # set by an unexpected error: printed once the terminal is restored

    # -- start -----------------------------------------------------------------------------------
    def on_mount(self) -> None:
        self._subtitle()
        if self.current:
            self.busy = f"⟳ {'Collecting' if self.target.live else 'Reading'} {self.current}…"
            self.push_screen(OverviewScreen(lazy=True))
        else:
            self.busy = f"⟳ Listing TrainJobs in {self.target.describe()}…"
            self.push_screen(picker()(lazy=True))
        self._timer = self.set_interval(self.refresh_every or DEFAULT_AUTO_REFRESH, self._tick, pause=not self.auto)
        self._status()

    def on_ready(self) -> None:
        """The first frame is composed: once it is on the terminal, load the engine (and the
        cluster client), which would otherwise hold back the thread that writes it (`paint.py`)."""
        when_painted(self, self._start_loading)

    def _start_loading(self) -> None:
        if self._painted is not None:
            self._painted()
        if self.current:
            self._load_view(self.current)
        else:
            self._load_rows()

    def loader(self) -> Loader:
        if self._loader is None:
            from ckpt_doctor.tui.source import make_loader

            self._loader = make_loader(self.target)
        return self._loader

    # -- workers (threads) -----------------------------------------------------------------------
    @work(thread=True, exclusive=True, group="rows", exit_on_error=False)
    def _load_rows(self, reload: bool = False) -> None:
        from ckpt_doctor.tui.source import Superseded

        try:
            if reload:
                self.loader().reload()
            rows = self.loader().list_jobs()
        except Superseded:  # a refresh started a newer reading; its worker reports
            return
        except Exception as e:
            self.post_message(RowsLoaded(None, why(e)))
            return
        self.post_message(RowsLoaded(rows, None))

    @work(thread=True, exclusive=True, group="view", exit_on_error=False)
    def _load_view(self, key: str, reload: bool = False, rows: bool = False) -> None:
        from ckpt_doctor.tui.source import Superseded

        loader = self.loader()
        if reload:
            loader.reload()
        try:
            if rows:
                try:
                    self.post_message(RowsLoaded(loader.list_jobs(), None))
                except Superseded:
                    raise
                except Exception as e:
                    self.post_message(RowsLoaded(None, why(e)))
            from ckpt_doctor.tui.screens.events import warm

            view = loader.load(key)
            warm(view)  # here, off the screen's time: the events' table cells of a complete view
            self.post_message(ViewLoaded(key, view, None))
            if not view.complete:  # a preview came first: the objects, events and report follow
                full = loader.load_complete(key)
                warm(full)
                self.post_message(ViewLoaded(key, full, None))
        except Superseded:  # a refresh started a newer reading; its worker reports
            return
        except Exception as e:
            self.post_message(ViewLoaded(key, None, why(e)))

    @work(thread=True, exclusive=True, group="verdicts", exit_on_error=False)
    def _fill_verdicts(self, keys: list[str]) -> None:
        worker = get_current_worker()
        for key in keys:
            if worker.is_cancelled:
                return
            try:
                row = self.loader().verdict(key)
            except Exception:
                continue  # the row keeps "…"; opening it shows the error
            self.post_message(RowUpdated(row))

    # -- results (UI thread) ---------------------------------------------------------------------
    @on(RowsLoaded)
    def _rows_loaded(self, msg: RowsLoaded) -> None:
        if not self.current:
            self.busy = ""
        if msg.error:
            self.error = f"Could not list TrainJobs: {msg.error}"
            self.rows = self.rows or []
            self.rows_failed = True
            self._status()
            for s in self._ready_screens(picker()):
                s.show_rows(self.rows, failed=True)
            return
        self.error = None if not self.current else self.error
        rows = msg.rows or []
        self.rows_failed = False
        if self.view is not None:  # keep the verdict we already have
            rows = [self.view.row if r.key == self.view.key else r for r in rows]
        self.rows = rows
        for s in self._ready_screens(picker()):
            s.show_rows(rows)
        if self.target.simulated and self.view is None:
            self._subtitle()  # the live listing told that the cluster is the sandbox (nothing else here changes it)
        self._status()
        if not self._opened_first and not self.current and len(rows) == 1:
            self._opened_first = True
            self.open_trainjob(rows[0].key)
            return
        pending = [r.key for r in rows if r.verdict == "…" and r.key != self.current]
        if pending:
            self._fill_verdicts(pending)

    @on(RowUpdated)
    def _row_updated(self, msg: RowUpdated) -> None:
        if self.rows is not None:
            self.rows = [msg.row if r.key == msg.row.key else r for r in self.rows]
        for s in self._ready_screens(picker()):
            s.update_row(msg.row)

    @on(ViewLoaded)
    def _view_loaded(self, msg: ViewLoaded) -> None:
        if msg.view is not None:
            self._row_updated(RowUpdated(msg.view.row))
        if msg.key != self.current:
            return
        self.busy = ""
        if msg.error or msg.view is None:
            self.error = f"Could not diagnose {msg.key}: {msg.error}"
            for s in self._ready_screens(DoctorScreen):
                s.show_failed(self.error)
            self._status()
            return
        self.error = None
        self.view = msg.view
        if self.target.live:
            self.refreshed_at = datetime.now().strftime("%H:%M:%S")
        self._subtitle()
        self._status()
        for s in self._ready_screens(DoctorScreen):
            self.show_safely(s, msg.view)

    def show_safely(self, screen: DoctorScreen, view: View) -> None:
        """Give a screen the new diagnosis; a screen that cannot show it says so, the others go on."""
        try:
            screen.recover()
            screen.show_view(view)
        except Exception as e:
            from ckpt_doctor.tui import crash

            path = crash.write(e, f"showing the diagnosis on {type(screen).__name__}")
            screen.show_broken(f"{type(e).__name__}: {e}", path)

    def _screens(self, cls: type) -> list[Any]:
        return [s for s in self.screen_stack if isinstance(s, cls)]

    def _ready_screens(self, cls: type) -> list[Any]:
        """Screens of `cls`, in the stack or kept as tabs, whose body can take data now (the others take it from
        the app when their body is mounted; one being removed takes none)."""
        return [s for s in dict.fromkeys([*self.screen_stack, *self._tabs.values()])
                if isinstance(s, cls) and s.ready and not s.going]

    def _subtitle(self) -> None:
        if self._closing or self._closed:  # a worker's result after the app began to close: no title to set
            return
        t = self.target
        where = f"bundle {t.bundle.name}" if t.bundle is not None else f"live · {t.context or 'current context'}"
        if (self.view is not None and self.view.simulated) or (self.view is None and t.simulated):
            from ckpt_doctor.simulation import WORDS

            where = f"{WORDS} · {where}"
        parts = [self.current or "pick a TrainJob", where]
        if self.auto:
            parts.append(f"auto-refresh {self._interval():g}s")
        if self.refreshed_at:
            parts.append(f"refreshed {self.refreshed_at}")
        self.sub_title = " · ".join(parts)

    def _status(self) -> None:
        """The banner: loading, errors, and what the data lacks."""
        level, parts = "", []
        if self.busy:
            level, parts = "info", [self.busy]
        if self.error:
            level = "error"
            parts.append(f"✗ {self.error}" + (" (showing the previous result)" if self.view else "") + " · r retries")
        view = self.view
        if view is not None and (view.gaps or view.not_evaluated):
            level = level or "warn"
            bits = []
            if view.gaps:
                shown = "; ".join(f"{what} ({reason})" for what, reason in view.gaps[:2])
                more = f" and {len(view.gaps) - 2} more" if len(view.gaps) > 2 else ""
                bits.append(f"not collected: {shown}{more}")
            if view.not_evaluated:
                bits.append(f"{view.not_evaluated} rule(s) not evaluated (2 shows why)")
            parts.append("⚠ Partial data: " + " · ".join(bits))
        self.status = (level, " · ".join(parts))

    # -- navigation ------------------------------------------------------------------------------
    def _pop_to(self, cls: type) -> Screen | None:
        while len(self.screen_stack) > 1 and not isinstance(self.screen, cls):
            self.pop_screen()
        return self.screen if isinstance(self.screen, cls) else None

    def _tab(self, name: str) -> Screen:
        """The screen of a tab, made once per TrainJob and kept (with its filters and positions)."""
        screen = self._tabs.get(name)
        if screen is None:
            screen = self._tabs[name] = _screen_class(name)()
            self.install_screen(screen, name=f"tab-{name}")
        return screen

    def _forget_tabs(self) -> None:
        for name, screen in list(self._tabs.items()):
            if screen not in self.screen_stack:
                self.uninstall_screen(f"tab-{name}")
                if screen.is_mounted:
                    screen.remove()
                del self._tabs[name]

    def _show(self, screen: Screen, push: bool = False) -> None:
        """Bring `screen` up: back to it if it is below, else in place of the current tab, or on top."""
        if screen is self.screen:
            return
        if screen in self.screen_stack:
            while self.screen is not screen:
                self.pop_screen()
        elif not push and isinstance(self.screen, DoctorScreen) and not isinstance(self.screen, OverviewScreen):
            self.switch_screen(screen)
        else:
            self.push_screen(screen)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """In a text field, digits and `:` are text (the bindings above are priority ones)."""
        if action in ("goto", "command_palette"):
            from textual.widgets import Input

            return not isinstance(self.focused, Input)
        return True

    def action_goto(self, name: str) -> None:
        if name == "picker":
            if self._pop_to(picker()) is None:
                self.push_screen(picker()())
                if self.rows is None:
                    self._load_rows()
            return
        if self.current is None:
            self.notify("Pick a TrainJob first: enter on a row.", severity="warning")
            return
        if name == "overview":
            if any(isinstance(s, OverviewScreen) for s in self.screen_stack):
                self._pop_to(OverviewScreen)
            else:
                self.push_screen(OverviewScreen())
            return
        self._show(self._tab(name))

    def action_back(self) -> None:
        if isinstance(self.screen, Frame) and self.screen.close_filter():
            return
        if len(self.screen_stack) > 2:
            self.pop_screen()

    def open_trainjob(self, key: str) -> None:
        """Diagnose another TrainJob (from the picker or the palette)."""
        if key == self.current and self.view is not None:
            self.action_goto("overview")
            return
        self.current, self.view, self.error = key, None, None
        self._pop_to(picker())
        self._forget_tabs()
        self.busy = f"⟳ {'Collecting' if self.target.live else 'Reading'} {key}…"
        self.push_screen(OverviewScreen())
        self._subtitle()
        self._status()
        self._load_view(key)

    def open_finding(self, rule_id: str) -> None:
        screen = self._tab("findings")
        self._show(screen, push=True)
        screen.select(rule_id)  # type: ignore[attr-defined]

    def open_log(self, key: LogKey, line: int | None = None, text: str = "") -> None:
        screen = self._tab("logs")
        self._show(screen, push=True)
        screen.open(key, line, text)  # type: ignore[attr-defined]

    def open_object(self, ref: str, path: str) -> None:
        from ckpt_doctor.tui.screens.object import ObjectScreen

        self.push_screen(ObjectScreen(ref, path))

    def _selected_ref(self) -> str:
        """The object the current screen has selected, else the TrainJob."""
        pick = getattr(self.screen, "selected_ref", None)
        ref = pick() if callable(pick) else ""
        return ref or (f"TrainJob/{self.current}" if self.current else "")

    def action_yaml(self) -> None:
        ref = self._selected_ref()
        if ref:
            self.open_object(ref, "")
        else:
            self.notify("Pick a TrainJob first: enter on a row.", severity="warning")

    def action_describe(self) -> None:
        ref = self._selected_ref()
        if ref:
            self.open_describe(ref)
        else:
            self.notify("Pick a TrainJob first: enter on a row.", severity="warning")

    def action_pods(self) -> None:
        """`:pods`: the Overview, with the cursor on the first pod."""
        self.action_goto("overview")
        if isinstance(self.screen, OverviewScreen):
            self.screen.select_kind("Pod")

    def open_describe(self, ref: str) -> None:
        from ckpt_doctor.tui.screens.describe import DescribeScreen

        self.push_screen(DescribeScreen(ref))

    def jump(self, j: Jump) -> None:
        """Open what an evidence item cites."""
        if j.screen == "log" and j.log is not None:
            self.open_log(j.log, j.line, j.text)
        elif j.screen == "object":
            self.open_object(j.ref, j.path)
        elif j.screen == "event":
            screen = self._tab("events")
            self._show(screen, push=True)
            screen.select(j.ref, j.reason, j.text)  # type: ignore[attr-defined]

    def action_help(self) -> None:
        from ckpt_doctor.tui.screens.help import HelpScreen

        if isinstance(self.screen, HelpScreen):
            self.pop_screen()
            return
        by_desc: dict[str, list[str]] = {}
        for ab in self.screen.active_bindings.values():
            b = ab.binding
            if b.description and not b.system and b.description not in HELP_SKIPS:
                keys = by_desc.setdefault(b.description, [])
                shown = b.key_display or self.get_key_display(b)
                if shown not in keys:
                    keys.append(shown)
        keys = [(" ".join(k[:3]), d) for d, k in by_desc.items()]
        self.push_screen(HelpScreen(keys))

    # -- refresh ---------------------------------------------------------------------------------
    def action_refresh(self) -> None:
        if self.current:
            self.busy = f"⟳ {'Collecting' if self.target.live else 'Re-reading'} {self.current}…"
            self._load_view(self.current, reload=True, rows=bool(self._screens(picker())))
        else:
            self.busy = f"⟳ Listing TrainJobs in {self.target.describe()}…"
            self._load_rows(reload=True)
        self._status()

    def action_inspect_checkpoints(self) -> None:
        """List the checkpoint directory (read-only exec in a running trainer) with every refresh from now on."""
        if not self.target.live:
            self.notify("A bundle holds the listings it was collected with (checkpoints/).")
            return
        self.target.inspect = True
        self.notify("Listing the checkpoint directory through exec in a running trainer container (read-only).")
        self.action_refresh()

    def _interval(self) -> float:
        return self.refresh_every or DEFAULT_AUTO_REFRESH

    def _tick(self) -> None:
        if not self.busy:
            self.action_refresh()

    def action_toggle_auto(self) -> None:
        self.auto = not self.auto
        if self.auto:
            self._timer.resume()
        else:
            self._timer.pause()
        self._subtitle()
        self.notify(f"Auto-refresh every {self._interval():g}s." if self.auto else "Auto-refresh off.")

    def ensure_refresh(self) -> None:
        """Following a log keeps refreshing (every --refresh seconds, or 5 s)."""
        if not self.auto:
            if not self.refresh_every:
                self._timer.stop()
                self.refresh_every = FOLLOW_REFRESH
                self._timer = self.set_interval(FOLLOW_REFRESH, self._tick)
            else:
                self._timer.resume()
            self.auto = True
            self._subtitle()

    def get_css_variables(self) -> dict[str, str]:
        """The theme's variables, with cursors dark or light enough for their text to read
        (Textual's dark cursor, white on mid blue, is 3.8:1; the app wants 4.5:1)."""
        from ckpt_doctor.tui.widgets.tone import readable_variables

        variables = readable_variables(super().get_css_variables())
        self.theme_variables = variables
        return variables

    # -- the rest --------------------------------------------------------------------------------
    def action_toggle_theme(self) -> None:
        self.theme = "textual-light" if self.current_theme.dark else "textual-dark"

    def action_export_report(self) -> None:
        view = self.view
        if view is None or not view.complete:
            self.notify("The diagnosis is still loading; try again in a moment.", severity="warning")
            return
        self._export_report(view)

    @work(thread=True, group="export", exit_on_error=False)
    def _export_report(self, view: View) -> None:
        """The report off the screen's thread: the diagnosis unpickled, redacted, rendered (chart, PNG) and
        written took 130-190 ms at 512 pods, a frozen screen."""
        from ckpt_doctor.report.incident import render_report, write_files
        from ckpt_doctor.safewrite import WriteRefused, fresh_path
        from ckpt_doctor.sources.redact import redact_diagnosis

        diag = view.diag
        if diag is None:
            self.call_from_thread(self.notify, "The diagnosis is still loading; try again.", severity="warning")
            return
        name = view.key.replace("/", "-")
        try:  # the same report as `ckpt-doctor report -o markdown --out FILE`, its chart beside it; a new file
            with self._export_lock:  # two exports at once: each its own fresh name
                path = fresh_path(self.export_dir / f"ckpt-doctor-{name}.md")
                written = write_files(path, render_report(redact_diagnosis(diag), "markdown", path))
        except WriteRefused as e:
            self.call_from_thread(self.notify, f"Could not write the report: {e}", severity="error")
            return
        more = f" (+ {len(written) - 1} chart files)" if len(written) > 1 else ""
        self.call_from_thread(self.notify, f"Report written to {written[0].path} ({written[0].size} bytes){more}")

    def action_screenshot(self) -> None:
        from textual._files import generate_datetime_filename

        from ckpt_doctor.safewrite import WriteRefused, fresh_path, write_output
        from ckpt_doctor.sources.redact import redact_svg

        diag = self.view.diag if self.view is not None else None
        try:  # what is on screen may quote a credential: the SVG's text goes through the redactor
            path = fresh_path(self.export_dir / generate_datetime_filename(self.title, ".svg", None))
            written = write_output(path, redact_svg(self.export_screenshot(), diag))
        except WriteRefused as e:
            self.notify(f"Could not save the screenshot: {e}", severity="error")
            return
        self.notify(f"Screenshot saved to {written.path}")

    drill_options: dict[str, Any] = {}  # extra drill Options (tests: a playbook with short timeouts)
    _export_lock = threading.Lock()

    def drill_available(self) -> bool:
        import importlib.util

        return importlib.util.find_spec("ckpt_doctor.commands.drill") is not None

    def action_drill(self) -> None:
        from ckpt_doctor.tui.screens.drill import DrillScreen

        t = self.target
        if not t.live or not self.current:
            self.notify(
                "The drill runs against a live cluster: start ckpt-doctor with NAMESPACE/NAME.", severity="warning"
            )
            return
        options = {"playbook": t.playbook, **self.drill_options}
        self.push_screen(DrillScreen(self.current, t.context, t.kubeconfig, t.timeout, **options))

    def action_quit(self) -> None:  # type: ignore[override]
        from ckpt_doctor.tui.screens.drill import DrillScreen

        drill = next((sc for sc in self.screen_stack if isinstance(sc, DrillScreen) and sc.running), None)
        if drill is not None:  # ctrl+c or q during a drill: abort it, quit once its cleanup is done, screen alive
            drill.action_quit_drill()
            return
        self.exit(0)

    def _handle_exception(self, error: Exception) -> None:
        """Anything no widget caught ends the app: exit 3 and one line naming the log with the
        traceback, never a traceback on the terminal."""
        from ckpt_doctor.tui import crash

        path = crash.write(error)
        super()._handle_exception(error)  # stops the app (and lets test pilots re-raise)
        self._return_code = 3
        self._exit_renderables.clear()
        self.crash_line = crash.one_line(error, path)

    def _print_error_renderables(self) -> None:
        """After the terminal is restored: the one line of a crash, written as is (not cut to the
        terminal's width, so scripts can grep it)."""
        super()._print_error_renderables()
        if self.crash_line:
            import sys

            print(self.crash_line, file=sys.stderr, flush=True)
            self.crash_line = ""

    def on_unmount(self) -> None:
        # stop the loader now, whoever made it: Textual waits for its worker threads before run()
        # returns, and a worker blocked on a bundle still being read would keep quit waiting
        if self._loader is not None:
            self._loader.close()


def run(
    target: Target, refresh_every: float | None, loader: Loader, painted: Callable[[], None] | None = None
) -> int:
    """Run the app until it quits; `loader` (started by the caller) is closed on every way out;
    `painted` is called once the first frame is on the terminal."""
    app = DoctorApp(target, refresh_every, loader=loader, painted=painted)
    try:
        code = app.run()
    finally:
        loader.close()
    if app.return_code:
        return app.return_code
    return int(code or 0)
