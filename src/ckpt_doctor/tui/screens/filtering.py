"""The `/` line, shared by the screens: a filter over a list, or a search in a log or YAML.

Mixed into screens that hold a FilterBar with id `filter` (lists) or `search` (line views); their
BINDINGS start with the mixin's KEYS.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from textual.binding import Binding
from textual.widgets import Input

from ckpt_doctor.tui.widgets.filterbar import FilterBar

if TYPE_CHECKING:
    from ckpt_doctor.tui.widgets.lineview import LineView


class ListFilter:
    """Typing filters the list at once; enter keeps the filter and returns to the list; esc clears it."""

    KEYS = [Binding("slash", "filter", "Filter", key_display="/")]
    query_one: Any
    focus_now: Any

    def refilter(self) -> None:
        raise NotImplementedError

    def focus_list(self) -> None:
        raise NotImplementedError

    def action_filter(self) -> None:
        self.query_one("#filter", FilterBar).open()

    def on_input_changed(self, event: Input.Changed) -> None:
        if event.input.id == "filter":
            self.refilter()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        if event.input.id == "filter":
            self.query_one("#filter", FilterBar).done()

    def on_filter_bar_closed(self, event: FilterBar.Closed) -> None:
        self.focus_list()


class LineSearch:
    """Enter searches the line view for the text; n / N find the next / previous match."""

    KEYS = [
        Binding("slash", "search", "Search", key_display="/"),
        Binding("n", "match(False)", "Next match", show=False),
        Binding("N", "match(True)", "Prev match", show=False),
    ]
    query_one: Any
    focus_now: Any

    @property
    def searched(self) -> LineView:
        from ckpt_doctor.tui.widgets.lineview import LineView  # not on the first frame's import path

        return self.query_one(LineView)

    def action_search(self) -> None:
        self.query_one("#search", FilterBar).open()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        if event.input.id == "search":
            self.searched.search(event.value.strip())
            self.query_one("#search", FilterBar).done()

    def on_filter_bar_closed(self, event: FilterBar.Closed) -> None:
        if event.cleared:
            self.searched.search("")
        self.focus_now(self.searched)

    def action_match(self, backward: bool) -> None:
        if self.searched.needle:
            self.searched.search(self.searched.needle, backward=backward)
        else:
            self.action_search()
