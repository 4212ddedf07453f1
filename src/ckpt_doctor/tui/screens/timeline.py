"""Attempts timeline: the step chart on top, one row per attempt below (enter opens its log)."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.widgets import DataTable

from ckpt_doctor.tui.model import AttemptView, View, clock
from ckpt_doctor.tui.screens.base import DoctorScreen
from ckpt_doctor.tui.widgets import tone
from ckpt_doctor.tui.widgets.stepchart import StepChart

COLUMNS = ("#", "how", "start", "lost", "last", "saves", "started", "ended", "node")


def lost_work(prev: AttemptView | None, a: AttemptView) -> tuple[str, str]:
    """(text, tone) of the steps an attempt re-did compared with where the previous one got.

    From the timeline fact when the view carries it (`a.drop`); else from the two views' steps."""
    if a.drop:
        if a.lost is None:
            return ("?", "foreground-muted") if a.start_kind != "pending" else ("", "foreground")
        if a.lost <= 0:
            return "0", "success"
        why = " (step 0)" if a.start_step == 0 else (" (older ckpt)" if a.behind_save else "")
        return f"{a.lost}{why}", "error" if why else "warning"
    if prev is None or prev.last_step is None or a.start_step is None:
        return "", "foreground"
    lost = prev.last_step - a.start_step
    if lost <= 0:
        return "0", "success"
    newest_save = max(prev.saves, default=None)
    why = (
        " (step 0)"
        if a.start_step == 0
        else (" (older ckpt)" if newest_save is not None and a.start_step < newest_save else "")
    )
    return f"{lost}{why}", "error" if a.start_step == 0 or why else "warning"


class TimelineScreen(DoctorScreen):
    TAB = "timeline"

    def body(self) -> ComposeResult:
        yield StepChart(id="chart")
        yield DataTable(id="attempts", cursor_type="row", zebra_stripes=True)

    def setup(self) -> None:
        self.query_one("#attempts", DataTable).add_columns(*COLUMNS)
        super().setup()
        self.app.theme_changed_signal.subscribe(self, lambda _: self._refill())

    def show_view(self, view: View) -> None:
        super().show_view(view)
        self.query_one("#chart", StepChart).set_attempts(view.attempts)
        self._refill()

    def _refill(self) -> None:
        view = self.doctor.view
        if view is None:
            return
        table = self.query_one("#attempts", DataTable)
        row = table.cursor_row
        table.clear()
        prev = None
        app = self.app
        for a in view.attempts:
            lost, lt = lost_work(prev, a)
            when = clock(a.finished)[-8:] if a.finished and not a.finished.startswith("by ") else ""
            ended = Text(
                " ".join(x for x in (when, a.ended) if x) if not a.running else "running",
                style=tone.rich(app, "text-error" if a.interrupted else "foreground"),
            )
            start = Text(
                a.start_text,
                style=tone.rich(
                    app,
                    "text-success"
                    if a.start_kind == "resumed"
                    else "warning"
                    if a.start_kind == "fresh"
                    else "foreground-muted",
                ),
            )
            saves = ",".join(str(s) for s in a.saves[-4:]) + ("…" if len(a.saves) > 4 else "") if a.saves else "–"
            name = a.label or f"a{a.index}"
            table.add_row(
                Text(name + ("?" if a.inferred else ""), style=tone.rich(app, "text-accent", bold=True)),
                a.how + (" (pods gone)" if a.inferred else ""),
                start,
                Text(lost, style=tone.rich(app, lt, bold=lt == "error")),
                (f"≥ {a.last_step}" if a.last_bound else str(a.last_step)) if a.last_step is not None else "?",
                Text(saves),
                clock(a.started) if a.started else ("?" if a.inferred else ""),
                ended,
                Text(", ".join(a.nodes) + (f" ({a.pods} pods)" if a.pods > 1 else "")),
                key=str(a.index),
            )
            prev = a
        if not view.attempts:
            table.add_row("–", "no attempt: no trainer pod in the snapshot", *[""] * (len(COLUMNS) - 2))
        if row and row < table.row_count:
            table.move_cursor(row=row)

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        view = self.doctor.view
        if view is None or event.row_key.value is None:
            return
        a = next((x for x in view.attempts if str(x.index) == event.row_key.value), None)
        if a is None or a.log is None:
            self.notify("No log of this attempt in the snapshot.", severity="warning")
            return
        self.doctor.open_log(a.log, a.log_line, a.log_text)  # at the line that says how it began
