"""The `/` line: filters a list as you type, or searches a log when you press enter."""

from __future__ import annotations

from textual.binding import Binding
from textual.message import Message
from textual.widgets import Input


class FilterBar(Input):
    DEFAULT_CSS = """
    FilterBar { dock: bottom; display: none; height: 1; padding: 0 1; background: $boost; }
    FilterBar.-textual-compact, FilterBar.-textual-compact:focus { padding: 0 1; background: $boost; }
    FilterBar.-open { display: block; }
    """
    BINDINGS = [Binding("escape", "close", "Close", show=False)]

    class Closed(Message):
        def __init__(self, bar: FilterBar, cleared: bool) -> None:
            super().__init__()
            self.bar, self.cleared = bar, cleared

    def __init__(self, placeholder: str = "filter…", id: str | None = None) -> None:
        # compact: one row, no border, focused or not (a focused Input's tall border would leave a
        # one-row bar no room for the text being typed)
        super().__init__(placeholder=placeholder, id=id, compact=True)
        self.cursor_blink = False

    def open(self) -> None:
        self.add_class("-open")
        self.screen.set_focus(self)  # now: the next key typed is the first of the filter

    @property
    def is_open(self) -> bool:
        return self.has_class("-open")

    def action_close(self) -> None:
        """Escape: clear and hide."""
        self.value = ""
        self.remove_class("-open")
        self.post_message(self.Closed(self, cleared=True))

    def done(self) -> None:
        """Enter: keep the filter (and the bar, while it holds one), give the focus back."""
        if not self.value:
            self.remove_class("-open")
        self.post_message(self.Closed(self, cleared=False))
