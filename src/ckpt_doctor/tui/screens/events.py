"""Events of the TrainJob and its objects, newest first; `w` shows warnings only."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.content import Content
from textual.widgets import Static

from ckpt_doctor.tui.model import EventRow, View, clock
from ckpt_doctor.tui.screens.base import DoctorScreen
from ckpt_doctor.tui.screens.filtering import ListFilter
from ckpt_doctor.tui.widgets.filterbar import FilterBar
from ckpt_doctor.tui.widgets.guard import SafeStatic
from ckpt_doctor.tui.widgets.rowtable import Cell, RowTable
from ckpt_doctor.tui.widgets.tone import var

COLUMNS = ("last seen", "type", "reason", "object", "count", "message")


def _short(ref: str) -> str:
    """`Pod/team-a/name` → `Pod/name`: every event here is in the TrainJob's namespace."""
    parts = ref.split("/")
    return f"{parts[0]}/{parts[-1]}" if len(parts) == 3 else ref


def cells(r: EventRow) -> list[Cell]:
    warn = r.type == "Warning"
    return [
        (clock(r.last), ""),
        (("▲ " if warn else "· ") + r.type, "warn" if warn else "muted"),
        (r.reason, "warn" if warn else ""),
        (_short(r.object), ""),
        (str(r.count), ""),
        (r.message, ""),
    ]


def table_cells(view: View) -> list[list[Cell]]:
    """The cells of every event of the view, in its order; built once per view and kept on it.

    The app builds them in its loading thread as soon as the complete view arrives (`warm`), so
    that opening this screen on 6,000 events does not spend 15-20 ms of the screen's time on them.
    """
    got = view.__dict__.get("_event_cells")
    if got is None or len(got) != len(view.events):
        got = view.__dict__["_event_cells"] = [cells(r) for r in view.events]
    return got


def warm(view: View) -> None:
    """Build what this screen needs of a complete view ahead of its opening (any thread)."""
    if view.complete:
        table_cells(view)


class EventsScreen(ListFilter, DoctorScreen):
    TAB = "events"
    BINDINGS = [
        Binding("w", "warnings", "Warnings only"),
        Binding("d", "describe", "Describe"),
        *ListFilter.KEYS,
    ]

    def __init__(self) -> None:
        super().__init__()
        self.wanted: tuple[str, str, str] | None = None  # an event to select once shown
        self.warnings_only = False
        self.rows: list[EventRow] = []

    def body(self) -> ComposeResult:
        yield SafeStatic(id="events-status")
        yield RowTable(COLUMNS, id="events")
        yield SafeStatic(id="event-detail")
        yield FilterBar("filter events (reason, object, message)…", id="filter")

    def show_view(self, view: View) -> None:
        super().show_view(view)
        self._fill()
        if self.wanted is not None and view.complete:
            self.select(*self.wanted)
            self.wanted = None
        self.focus_now(self.query_one("#events", RowTable))

    def _fill(self) -> None:
        view = self.doctor.view
        if view is None:
            return
        needle = self.query_one("#filter", FilterBar).value.strip()
        every = table_cells(view)
        if not self.warnings_only and not needle:
            self.rows, shown = view.events, every
        else:
            keep = [
                i
                for i, r in enumerate(view.events)
                if (not self.warnings_only or r.type == "Warning") and (not needle or r.matches(needle))
            ]
            self.rows, shown = [view.events[i] for i in keep], [every[i] for i in keep]
        self.query_one("#events", RowTable).set_rows(shown)
        if not self.rows:
            self.query_one("#event-detail", Static).update("")
        total = len(view.events)
        warns = sum(1 for r in view.events if r.type == "Warning")
        gap = next((reason for what, reason in view.gaps if what.startswith("events")), None)
        parts: list = [f"{len(self.rows)} of {total} events, newest first · {warns} warning(s)"]
        parts.append(
            (" · warnings only (w shows all)" if self.warnings_only else " · w: warnings only", var("text-accent"))
        )
        if not view.complete:
            parts = [("⟳ reading the events…", var("foreground-muted"))]
        elif gap:
            parts.append((f" · events not collected: {gap}", var("text-warning")))
        elif total == 0:
            parts.append((" · no event of this TrainJob's objects in the snapshot", var("foreground-muted")))
        self.query_one("#events-status", Static).update(Content.assemble(*parts))

    def select(self, ref: str, reason: str, text: str) -> None:
        """Put the cursor on the event an evidence item cites."""
        if self.doctor.view is None or not self.ready:  # shown first, then selected (setup)
            self.wanted = (ref, reason, text)
            return
        table = self.query_one("#events", RowTable)
        for want_text in (True, False):
            for i, r in enumerate(self.rows):
                if r.object == ref and r.reason == reason and (not want_text or r.message.startswith(text[:60])):
                    table.move_to(i)
                    if not table.size.height:  # not laid out yet: scroll once it is
                        self.call_after_refresh(table.move_to, i)
                    return
        self.notify(f"Event {reason} on {ref} is not in the list (filtered out, or not collected).", severity="warning")

    def selected_ref(self) -> str:
        """The object of the highlighted event, as the snapshot keys it ("" when not in it)."""
        from ckpt_doctor.tui.screens.findings import object_ref

        view = self.doctor.view
        if view is None or not self.rows:
            return ""
        r = self.rows[min(max(self.query_one("#events", RowTable).cursor, 0), len(self.rows) - 1)]
        return object_ref(r.object, view.objects)

    def action_describe(self) -> None:
        ref = self.selected_ref()
        if ref:
            self.doctor.open_describe(ref)
        elif self.rows:
            self.notify("The object of this event is not in the snapshot.", severity="warning")

    def action_warnings(self) -> None:
        self.warnings_only = not self.warnings_only
        self._fill()

    def refilter(self) -> None:
        self._fill()

    def focus_list(self) -> None:
        self.focus_now(self.query_one("#events", RowTable))

    def on_row_table_highlighted(self, event: RowTable.Highlighted) -> None:
        if event.index < len(self.rows):
            r = self.rows[event.index]
            head = Content.assemble((f"{r.reason} ", "bold"), (f"on {r.object}", var("foreground-muted")))
            self.query_one("#event-detail", Static).update(head + f"\n{r.message}")

    def on_row_table_selected(self, event: RowTable.Selected) -> None:
        ref = self.rows[event.index].object
        view = self.doctor.view
        if view is not None and ref in view.objects:
            self.doctor.open_object(ref, "")
        else:
            self.notify(f"{ref} is not in the snapshot.", severity="warning")
