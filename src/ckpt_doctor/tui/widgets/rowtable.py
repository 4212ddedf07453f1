"""A read-only table that renders only the rows on screen, for lists of any length (events).

Textual's DataTable builds every row up front, which takes a second for 3,000 events; this table
only measures column widths once per update and draws the visible rows, so 20,000 events open
as fast as 20.
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.style import Style
from rich.text import Text
from textual import events
from textual.binding import Binding
from textual.geometry import Size
from textual.message import Message
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.strip import Strip

from ckpt_doctor.tui.widgets.guard import Guarded

Cell = tuple[str, str]  # (text, tone: "" | ok | warn | bad | muted | strong)
TONES = ("ok", "warn", "bad", "muted", "strong")
MAX_WIDTH = 44  # a column wider than this is cut, except the last one


class RowTable(Guarded, ScrollView, can_focus=True):
    COMPONENT_CLASSES = {"rowtable--header", "rowtable--cursor", *(f"rowtable--{t}" for t in TONES)}
    DEFAULT_CSS = """
    RowTable {
        background: $surface;
        overflow: auto auto;
        & > .rowtable--header { background: $panel; text-style: bold; }
        & > .rowtable--cursor { background: $primary 30%; }
        & > .rowtable--ok { color: $text-success; }
        & > .rowtable--warn { color: $text-warning; text-style: bold; }
        & > .rowtable--bad { color: $text-error; text-style: bold; }
        & > .rowtable--muted { color: $foreground-muted; }
        & > .rowtable--strong { text-style: bold; }
    }
    """
    BINDINGS = [
        Binding("up,k", "move(-1)", "Up", show=False),
        Binding("down,j", "move(1)", "Down", show=False),
        Binding("pageup", "page(-1)", "Page up", show=False),
        Binding("pagedown", "page(1)", "Page down", show=False),
        Binding("home,g", "edge(0)", "Top", show=False),
        Binding("end,G", "edge(1)", "Bottom", show=False),
        Binding("left,h", "scroll_left", "Left", show=False),
        Binding("right,l", "scroll_right", "Right", show=False),
        Binding("enter", "select", "Open", show=False),
    ]

    cursor: reactive[int] = reactive(0, init=False)

    class Highlighted(Message):
        def __init__(self, table: RowTable, index: int) -> None:
            super().__init__()
            self.table, self.index = table, index

    class Selected(Message):
        def __init__(self, table: RowTable, index: int) -> None:
            super().__init__()
            self.table, self.index = table, index

    def __init__(self, columns: Sequence[str], id: str | None = None) -> None:
        super().__init__(id=id)
        self.columns = list(columns)
        self.rows: list[Sequence[Cell]] = []
        self.widths = [len(c) for c in self.columns]

    def set_rows(self, rows: list[Sequence[Cell]], keep: bool = True) -> None:
        self.rows = rows
        widths = [len(c) for c in self.columns]
        for row in rows:
            for i, (text, _) in enumerate(row):
                if len(text) > widths[i]:
                    widths[i] = len(text)
        self.widths = [min(w, MAX_WIDTH) if i < len(widths) - 1 else w for i, w in enumerate(widths)]
        total = sum(self.widths) + 2 * len(self.widths)
        self.virtual_size = Size(total, len(rows) + 1)
        self.set_reactive(RowTable.cursor, min(self.cursor, max(0, len(rows) - 1)) if keep else 0)
        self.refresh()
        if rows:
            self.post_message(self.Highlighted(self, self.cursor))

    @property
    def row_count(self) -> int:
        return len(self.rows)

    # -- moving ----------------------------------------------------------------------------------
    def move_to(self, i: int) -> None:
        self.cursor = max(0, min(i, len(self.rows) - 1))
        body = max(1, self.scrollable_content_region.height - 1)
        y = int(self.scroll_offset.y)
        if self.cursor < y:
            self.scroll_to(y=self.cursor, animate=False, immediate=True, force=True)
        elif self.cursor >= y + body:
            self.scroll_to(y=self.cursor - body + 1, animate=False, immediate=True, force=True)

    def watch_cursor(self, cursor: int) -> None:
        self.refresh()
        if self.rows:
            self.post_message(self.Highlighted(self, cursor))

    def action_move(self, delta: int) -> None:
        self.move_to(self.cursor + delta)

    def action_page(self, delta: int) -> None:
        self.move_to(self.cursor + delta * max(1, self.scrollable_content_region.height - 2))

    def action_edge(self, end: int) -> None:
        self.move_to(len(self.rows) - 1 if end else 0)

    def action_select(self) -> None:
        if self.rows:
            self.post_message(self.Selected(self, self.cursor))

    def on_click(self, event: events.Click) -> None:
        off = event.get_content_offset(self)
        if off is None or off.y == 0:
            return
        i = int(self.scroll_offset.y) + off.y - 1
        if 0 <= i < len(self.rows):
            if i == self.cursor:
                self.action_select()
            self.move_to(i)

    # -- drawing ---------------------------------------------------------------------------------
    def _style(self, name: str) -> Style:
        return self.get_component_rich_style(f"rowtable--{name}", partial=name != "cursor" and name != "header")

    def _line(self, cells: Sequence[Cell], base: Style) -> Text:
        line = Text(no_wrap=True, end="")
        last = len(self.widths) - 1
        for i, (text, tone) in enumerate(cells):
            w = self.widths[i]
            shown = text if i == last else (text if len(text) <= w else text[: w - 1] + "…").ljust(w)
            line.append(" " + shown + ("" if i == last else " "), self._style(tone) if tone else None)
        return line

    def render_line(self, y: int) -> Strip:
        scroll_x, scroll_y = self.scroll_offset
        width = self.scrollable_content_region.width
        base = self.rich_style
        if y == 0:
            text = self._line([(c, "") for c in self.columns], base)
            style = base + self._style("header")
        else:
            i = scroll_y + y - 1
            if i >= len(self.rows):
                return Strip.blank(width, base)
            on_cursor = i == self.cursor
            # the cursor row in the cursor's colours: a tone's colour on it would not read
            text = self._line([(c, "") for c, _ in self.rows[i]] if on_cursor else self.rows[i], base)
            style = base + self._style("cursor") if on_cursor else base
        strip = Strip(text.render(self.app.console), text.cell_len)
        return strip.crop_extend(int(scroll_x), int(scroll_x) + width, None).apply_style(style)
