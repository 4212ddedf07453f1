"""Pick a TrainJob: its state, age, restarts and the verdict of its last diagnosis; `/` filters."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rich.text import Text
from textual.app import ComposeResult
from textual.content import Content
from textual.widgets import DataTable, Static

from ckpt_doctor.tui.screens.base import Frame
from ckpt_doctor.tui.screens.filtering import ListFilter
from ckpt_doctor.tui.widgets import tone
from ckpt_doctor.tui.widgets.filterbar import FilterBar
from ckpt_doctor.tui.widgets.guard import SafeStatic
from ckpt_doctor.tui.widgets.safelists import SafeDataTable
from ckpt_doctor.tui.widgets.tone import var

if TYPE_CHECKING:
    from ckpt_doctor.tui.model import JobRow

COLUMNS = ("trainjob", "state", "age", "restarts", "verdict")


class PickerScreen(ListFilter, Frame):
    BINDINGS = ListFilter.KEYS

    def __init__(self, lazy: bool = False) -> None:
        super().__init__(lazy)
        self.rows: list[JobRow] = []
        self.failed = False  # the listing failed: the banner says why

    def body(self) -> ComposeResult:
        yield SafeStatic(id="picker-title")
        yield SafeDataTable(id="jobs", cursor_type="row", zebra_stripes=True)
        yield FilterBar("filter TrainJobs (name, state, verdict)…", id="filter")

    def setup(self) -> None:
        self._columns = self.query_one("#jobs", DataTable).add_columns(*COLUMNS)
        self.app.theme_changed_signal.subscribe(self, lambda _: self._fill())
        rows = getattr(self.app, "rows", None)
        if rows is not None:
            self.show_rows(rows, failed=getattr(self.app, "rows_failed", False))
        else:
            self.query_one("#picker-title", Static).update(
                Content.styled(
                    f"⟳ Listing TrainJobs in {self.app.target.describe()}…",  # type: ignore[attr-defined]
                    var("foreground-muted"),
                )
            )

    def show_rows(self, rows: list[JobRow], failed: bool = False) -> None:
        self.rows = rows
        self.failed = failed
        self._fill()

    def _cells(self, r: JobRow) -> tuple[Any, ...]:
        from ckpt_doctor.tui.model import HEALTH_MARK  # rows exist, so the model is loaded already

        app = self.app
        return (
            Text(f"{HEALTH_MARK[r.health]} {r.key}", style=tone.rich(app, tone.HEALTH_VAR[r.health])),
            r.state,
            r.age,
            r.restarts,
            Text(
                r.verdict,
                style=tone.rich(app, tone.HEALTH_VAR[r.health] if r.verdict != "…" else "foreground-muted"),
            ),
        )

    def _fill(self) -> None:
        needle = self.query_one("#filter", FilterBar).value.strip()
        table = self.query_one("#jobs", DataTable)
        keep = None
        if table.row_count and table.cursor_row is not None:
            try:
                keep = table.coordinate_to_cell_key((table.cursor_row, 0)).row_key.value
            except Exception:
                keep = None
        table.clear()
        shown = self._matching(needle)
        for r in shown:
            table.add_row(*self._cells(r), key=r.key)
        if keep is not None:
            idx = next((i for i, r in enumerate(shown) if r.key == keep), None)
            if idx is not None:
                table.move_cursor(row=idx)
        target = self.app.target  # type: ignore[attr-defined]
        where = target.describe_listing()
        if self.failed and not self.rows:
            title = Content.styled(f"Could not list the TrainJobs in {where}: see above; r retries.", var("text-error"))
        elif not self.rows:
            other = "" if target.bundle is not None else " (another namespace: -n NAMESPACE)"
            title = Content.styled(f"No TrainJob found in {where}{other}.", var("text-warning"))
        else:
            title = Content.assemble(
                (f"{len(shown)} of {len(self.rows)} TrainJob(s)", "bold"),
                f" in {where}",
                (" · enter opens one · / filters", var("foreground-muted")),
            )
        self.query_one("#picker-title", Static).update(title)

    def _score(self, r: JobRow, needle: str) -> float:
        """How well `needle` matches a row, fuzzily as the palette matches (`sftres` finds
        `team-a/sft-resumable`), over the name, the state and the verdict; 0: not at all."""
        from textual.fuzzy import FuzzySearch

        fuzzy = self.__dict__.setdefault("_fuzzy", FuzzySearch())
        return max(fuzzy.match(needle, text)[0] for text in (r.key, r.state, r.verdict))

    def _matching(self, needle: str) -> list[JobRow]:
        """The rows `needle` matches, best first (all of them, in order, without a needle)."""
        if not needle:
            return list(self.rows)
        scored = [(-score, i, r) for i, r in enumerate(self.rows) if (score := self._score(r, needle)) > 0]
        return [r for _, _, r in sorted(scored, key=lambda t: (t[0], t[1]))]

    def _shown(self, row: JobRow, needle: str) -> bool:
        return not needle or self._score(row, needle) > 0

    def update_row(self, row: JobRow) -> None:
        """One row's verdict arrived: change its cells in place (a refill per row would make the
        verdicts of N TrainJobs cost N² rows)."""
        for i, r in enumerate(self.rows):
            if r.key == row.key:
                self.rows[i] = row
                needle = self.query_one("#filter", FilterBar).value.strip()
                table = self.query_one("#jobs", DataTable)
                was_shown, shown = row.key in table.rows, self._shown(row, needle)
                if was_shown and shown:
                    for column, value in zip(self._columns, self._cells(row), strict=True):
                        table.update_cell(row.key, column, value, update_width=True)
                elif was_shown != shown:  # the new verdict moves it in or out of the filter
                    self._fill()
                return

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        if event.row_key.value:
            self.app.open_trainjob(event.row_key.value)  # type: ignore[attr-defined]

    def refilter(self) -> None:
        self._fill()

    def focus_list(self) -> None:
        self.focus_now(self.query_one("#jobs", DataTable))
