"""A line view that renders only the lines on screen, from a source of any size.

Used for logs (signature lines highlighted, search, follow) and for object YAML (the cited field
highlighted). The source is indexed in a worker thread; the view grows while that runs and a
jump to a line that is not indexed yet waits for it.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from rich.style import Style
from rich.text import Text
from textual import events, work
from textual.binding import Binding
from textual.geometry import Size
from textual.message import Message
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.strip import Strip
from textual.worker import get_current_worker

from ckpt_doctor.tui.lines import LineSource, TextLines
from ckpt_doctor.tui.widgets.guard import Guarded

MAX_CHARS = 2000
KIND_CLASS = {
    "resumed": "good",
    "finished": "good",
    "fresh_start": "warn",
    "overwrite_output": "warn",
    "sigterm": "warn",
    "worker_restart": "warn",
    "disk_full": "bad",
    "resume_error": "bad",
    "oom": "bad",
    "partial_checkpoint": "bad",
    "saved": "save",
    "sigterm_flush": "save",
    "save_started": "save",
}
MARKER = {"good": "▶", "warn": "!", "bad": "✗", "save": "◆", "target": "➤"}


def display_text(raw: str, prefer: Iterable[str] = ()) -> str:
    """What a terminal shows of a raw line: the last carriage-return segment (tqdm bars), or the
    last segment holding a preferred text (a search hit, a cited line) when the last one does not."""
    if "\r" in raw:
        segs = [s for s in raw.split("\r") if s.strip()]
        pick = segs[-1] if segs else ""
        for want in prefer:
            if want:
                w = want.lower()
                hit = next((s for s in reversed(segs) if w in s.lower()), None)
                if hit is not None:
                    pick = hit
                    break
        raw = pick
    if "\t" in raw:
        raw = raw.expandtabs(4)
    raw = "".join(ch if ch >= " " else "�" for ch in raw) if any(ch < " " for ch in raw) else raw
    return raw[:MAX_CHARS]


@dataclass(frozen=True)
class Place:
    """Where a reader was in one source: restored when they come back to it."""

    cursor: int = 0
    x: int = 0
    y: int = 0
    needle: str = ""
    target: int | None = None


class LineView(Guarded, ScrollView, can_focus=True):
    """Lines of a LineSource with a cursor, a jump target, search hits and signature colours."""

    COMPONENT_CLASSES = {
        "lineview--gutter",
        "lineview--cursor",
        "lineview--target",
        "lineview--match",
        "lineview--good",
        "lineview--warn",
        "lineview--bad",
        "lineview--save",
        "lineview--key",
        "lineview--gap",
    }
    DEFAULT_CSS = """
    LineView {
        background: $surface;
        color: $foreground;
        overflow: auto auto;
        &:focus { background-tint: $foreground 3%; }
        & > .lineview--gutter { color: $foreground-muted; }
        & > .lineview--cursor { background: $primary 30%; }
        & > .lineview--target { background: $accent 30%; text-style: bold; }
        & > .lineview--match { background: $warning 60%; color: $text; }
        & > .lineview--good { color: $text-success; text-style: bold; }
        & > .lineview--warn { color: $text-warning; text-style: bold; }
        & > .lineview--bad { color: $text-error; text-style: bold; }
        & > .lineview--save { color: $text-primary; }
        & > .lineview--key { color: $text-accent; }
        & > .lineview--gap { color: $foreground-muted; text-style: italic; }
    }
    """
    BINDINGS = [
        Binding("up,k", "move(-1)", "Up", show=False),
        Binding("down,j", "move(1)", "Down", show=False),
        Binding("pageup", "page(-1)", "Page up", show=False),
        Binding("pagedown,space", "page(1)", "Page down", show=False),
        Binding("home,g", "top", "Top", show=False),
        Binding("end,G", "bottom", "Bottom", show=False),
        Binding("left,h", "scroll_left", "Left", show=False),
        Binding("right,l", "scroll_right", "Right", show=False),
    ]

    cursor: reactive[int] = reactive(0, init=False)
    follow: reactive[bool] = reactive(False, init=False)
    wrap: reactive[bool] = reactive(False, init=False)

    class Changed(Message):
        """The cursor moved, the source grew or a search ended: status bars redraw."""

        def __init__(self, view: LineView) -> None:
            super().__init__()
            self.view = view

        def can_replace(self, message: Message) -> bool:
            return isinstance(message, LineView.Changed) and message.view is self.view

    class _Grew(Message):
        def can_replace(self, message: Message) -> bool:
            return isinstance(message, LineView._Grew)

    class _Found(Message):
        def __init__(self, index: int | None, needle: str, target: bool) -> None:
            super().__init__()
            self.index, self.needle, self.target = index, needle, target

    def __init__(
        self,
        source: LineSource | None = None,
        signatures: list[Any] | None = None,
        yaml: bool = False,
        name: str | None = None,
        id: str | None = None,
        classes: str | None = None,
    ) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self.source: LineSource = source or TextLines([])
        self._kinds: OrderedDict[int, str | None] = OrderedDict()
        self.signatures: list[Any] = [s for s in signatures or [] if s.event in KIND_CLASS]
        self.yaml = yaml
        self.needle = ""
        self.target: int | None = None
        self.target_text = ""
        self.searching = False
        self.message = ""  # the outcome of the last search, for status bars
        self._count = 0
        self._width = 0
        self._pending: tuple[int | None, str] | None = None
        self._layout: tuple[tuple[int, int, int, int], list[tuple[int, int]]] | None = None
        self._wrapped: OrderedDict[tuple[int, int], list[Strip]] = OrderedDict()

    # -- data ----------------------------------------------------------------------------------
    def use_signatures(self, signatures: list[Any]) -> None:
        """Log signatures whose lines get coloured (progress bars are left alone)."""
        self.signatures = [s for s in signatures if s.event in KIND_CLASS]
        self._kinds.clear()
        self._wrapped.clear()
        self.refresh()

    def watch_show_vertical_scrollbar(self, shown: bool) -> None:
        # Textual moves a thumb only while its bar shows: after a jump made before the layout (a
        # screen just opened on a cited line), the bar would appear with a stale thumb
        if shown:
            self.call_after_refresh(self._sync_thumb)

    def _sync_thumb(self) -> None:
        if self.show_vertical_scrollbar and self.vertical_scrollbar.position != self.scroll_y:
            self.vertical_scrollbar.position = self.scroll_y

    def on_mount(self) -> None:
        self.set_source(self.source)

    def on_unmount(self) -> None:
        self.workers.cancel_node(self)
        self.source.close()

    def set_source(
        self,
        source: LineSource,
        line: int | None = None,
        text: str = "",
        keep: bool = False,
        place: Place | None = None,
        close_old: bool = True,
    ) -> None:
        """Show `source`; jump to 1-based `line`, or to the last line containing `text`; or go back
        to `place` (where the reader was in it before). `close_old=False`: the caller keeps the
        previous source (and its index) for later."""
        old = self.source
        self.source = source
        if old is not source and old is not None and close_old:
            old.close()
        if old is not source:  # a search of the other source says nothing about this one
            self.workers.cancel_group(self, "lineview-search")
            self.searching = False
            self.message = ""
            self.needle = place.needle if place is not None else ""
        self._kinds.clear()
        self._wrapped.clear()
        self._layout = None
        # known up front, the scroll extent does not hang on which lines happened to be drawn
        self._width = min(source.widest() or 0, MAX_CHARS)
        self.target, self.target_text = None, text
        self._pending = (line, text) if (line or text) else None
        if place is not None and self._pending is None:
            self._sync()
            self.target = place.target
            self.set_reactive(LineView.cursor, min(place.cursor, max(0, self._count - 1)))
            self.scroll_to(place.x, place.y, animate=False, immediate=True, force=True)
            if not self.size.height:  # not laid out yet: the scroll would be clamped to nothing
                self.call_after_refresh(self.scroll_to, place.x, place.y, animate=False, immediate=True, force=True)
        elif not keep:
            self.set_reactive(LineView.cursor, 0)
            self.scroll_to(0, 0, animate=False, immediate=True, force=True)
        self._sync()
        if not source.complete:
            self._index()
        self._apply_pending()
        if self.follow and self._pending is None:
            self.action_bottom()
        self.refresh()

    @work(thread=True, exclusive=True, group="lineview-index", exit_on_error=False)
    def _index(self) -> None:
        worker = get_current_worker()
        last = [0.0]

        def progress() -> None:
            now = time.monotonic()
            if now - last[0] > 0.1:
                last[0] = now
                self.post_message(self._Grew())

        source = self.source
        try:
            source.index(stop=lambda: worker.is_cancelled, progress=progress)
        except OSError as e:  # the file vanished or was replaced under us: show what was read
            if not worker.is_cancelled:
                self.message = f"reading stopped: {e.strerror or e}"
        self.post_message(self._Grew())

    def on_line_view__grew(self, _: _Grew) -> None:
        self._sync()
        self._apply_pending()
        if self.follow:
            self.action_bottom()
        self.refresh()
        self.post_message(self.Changed(self))

    def place(self) -> Place:
        """Where the reader is now (see `set_source(place=)`)."""
        return Place(self.cursor, int(self.scroll_offset.x), int(self.scroll_offset.y), self.needle, self.target)

    def reindex(self) -> None:
        """Read what was added to the source since it was indexed (a followed log)."""
        self._index()

    def _sync(self) -> None:
        self._count = self.source.count()
        gw = self.gutter_width
        self._layout = None
        # wrapped, the view scrolls by source line and never sideways
        self.virtual_size = Size(1 if self.wrap else gw + max(self._width, 1), self._count)

    @property
    def gutter_width(self) -> int:
        return max(3, len(str(self._count))) + 3

    @property
    def line_count(self) -> int:
        return self._count

    def _apply_pending(self) -> None:
        if self._pending is None:
            return
        line, text = self._pending
        if line:
            i = self.source.index_of(line)
            if i < self._count:
                self._pending = None
                self._land(i)
            elif self.source.complete:
                self._pending = None
                self._land(max(0, self._count - 1))
            return
        if text and self.source.complete:
            self._pending = None
            self._find(text, max(0, self._count - 1), backward=True, target=True)

    def _land(self, i: int) -> None:
        self.target = i
        self._wrapped.clear()
        self.goto(i)

    # -- moving --------------------------------------------------------------------------------
    def goto(self, i: int, center: bool = True) -> None:
        i = max(0, min(i, max(0, self._count - 1)))
        self.cursor = i
        if self.size.height:
            self._reveal(i, center)
        else:  # not laid out yet (a screen just opened): scroll once the height is known, to centre
            self.call_after_refresh(self._reveal, i, center)

    def _reveal(self, i: int, center: bool) -> None:
        h = max(1, self.scrollable_content_region.height)
        y = int(self.scroll_offset.y)
        if self.wrap:
            self._reveal_wrapped(i, h, y, center)
            return
        if center:
            if not (y <= i < y + h):
                self.scroll_to(y=max(0, i - h // 2), animate=False, immediate=True, force=True)
        elif i < y:
            self.scroll_to(y=i, animate=False, immediate=True, force=True)
        elif i >= y + h:
            self.scroll_to(y=i - h + 1, animate=False, immediate=True, force=True)

    def _reveal_wrapped(self, i: int, h: int, y: int, center: bool) -> None:
        """Wrapped, a line takes one row or more: scroll (by line) until all of line `i` is on
        screen (or, taller than the screen, its start)."""
        if y <= i:
            rows = [li for li, _ in self._rows_from(y, h)]
            if rows.count(i) == self._height(i) or (y == i and rows):
                return
        if center:
            top = self._top_for(i, max(self._height(i), (h + self._height(i)) // 2))
        elif i < y:
            top = i
        else:
            top = self._top_for(i, h)
        self.scroll_to(y=top, animate=False, immediate=True, force=True)
        self._layout = None
        self.refresh()

    def _height(self, i: int) -> int:
        return max(1, len(self._wrap_line(i)))

    def _top_for(self, i: int, room: int) -> int:
        """The first line of the longest run ending at line `i` that fits in `room` rows."""
        top, used = i, self._height(i)
        while top > 0 and used + self._height(top - 1) <= room:
            top -= 1
            used += self._height(top)
        return top

    def watch_wrap(self, wrap: bool) -> None:
        self._wrapped.clear()
        self._sync()
        if wrap:
            self.scroll_to(x=0, animate=False, immediate=True, force=True)
        self.goto(self.cursor, center=False)
        self.refresh()
        self.post_message(self.Changed(self))

    def on_resize(self) -> None:
        self._wrapped.clear()
        self._layout = None

    def watch_cursor(self, old: int, new: int) -> None:
        cw = self._content_width()
        self._wrapped.pop((old, cw), None)  # drawn plain on the cursor, coloured off it
        self._wrapped.pop((new, cw), None)
        self.refresh()
        self.post_message(self.Changed(self))

    def watch_follow(self, follow: bool) -> None:
        if follow:
            self.action_bottom()
        self.post_message(self.Changed(self))

    def action_move(self, delta: int) -> None:
        self.goto(self.cursor + delta, center=False)

    def action_page(self, delta: int) -> None:
        h = max(1, self.scrollable_content_region.height - 1)
        self.scroll_to(y=self.scroll_offset.y + delta * h, animate=False, immediate=True, force=True)
        self.goto(self.cursor + delta * h, center=False)

    def action_top(self) -> None:
        self.goto(0, center=False)

    def action_bottom(self) -> None:
        self.goto(self._count - 1, center=False)

    def on_click(self, event: events.Click) -> None:
        off = event.get_content_offset(self)
        if off is None:
            return
        if self.wrap:
            rows = self._rows_from(int(self.scroll_offset.y), off.y + 1)
            if off.y < len(rows):
                self.goto(rows[off.y][0], center=False)
            return
        self.goto(int(self.scroll_offset.y) + off.y, center=False)

    # -- search --------------------------------------------------------------------------------
    def search(self, needle: str, backward: bool = False) -> None:
        """Move to the next (or previous) line containing `needle`, wrapping around."""
        self.needle = needle
        self._wrapped.clear()
        self.refresh()
        self.post_message(self.Changed(self))
        if needle:
            start = self.cursor - 1 if backward else self.cursor + 1
            self._find(needle, start, backward, target=False)

    def _find(self, needle: str, start: int, backward: bool, target: bool) -> None:
        self.searching = True
        self.message = f"searching for {needle!r}…"
        self.post_message(self.Changed(self))
        self._find_worker(needle, start, backward, target)

    @work(thread=True, exclusive=True, group="lineview-search", exit_on_error=False)
    def _find_worker(self, needle: str, start: int, backward: bool, target: bool) -> None:
        worker = get_current_worker()

        def stop() -> bool:
            return worker.is_cancelled

        try:
            hit = self.source.find(needle, start, backward, stop)
            if hit is None and not target and not stop():  # wrap around
                hit = self.source.find(needle, self._count - 1 if backward else 0, backward, stop)
        except OSError:  # the source was closed (another log opened) while searching
            hit = None
        if not stop():
            self.post_message(self._Found(hit, needle, target))

    def on_line_view__found(self, msg: _Found) -> None:
        self.searching = False
        if msg.index is None:
            self.message = f"{msg.needle!r} not found"
            if msg.target:
                self.target_text = ""
        else:
            self.message = ""
            if msg.target:
                self._land(msg.index)
            else:
                self.goto(msg.index)
        self.post_message(self.Changed(self))

    # -- rendering -----------------------------------------------------------------------------
    def _kind(self, i: int, raw: str) -> str | None:
        if i in self._kinds:
            return self._kinds[i]
        found = None
        for sig in self.signatures:
            if sig.keyword in raw and sig.pattern.search(raw):
                found = KIND_CLASS[sig.event]
                if found == "bad":
                    break
        self._kinds[i] = found
        if len(self._kinds) > 4096:
            self._kinds.popitem(last=False)
        return found

    def _style(self, name: str) -> Style:
        """Colours only; backgrounds (cursor, target, match) blended onto the view's own."""
        background = name in ("cursor", "target", "match")
        style = self.get_component_rich_style(f"lineview--{name}", partial=not background)
        if not background:
            return style
        color = None
        if name == "match" and style.bgcolor is not None:  # black or white, whichever reads on it
            from textual.color import Color

            from ckpt_doctor.tui.widgets.tone import readable_text

            color = readable_text(Color.from_rich_color(style.bgcolor), Color(0, 0, 0)).rich_color
        return Style(bgcolor=style.bgcolor, bold=style.bold, color=color)

    def _text(self, i: int) -> tuple[Text, str | None]:
        """Line `i` as shown (its last \\r segment, tabs expanded), styled: signature colour,
        YAML keys, search hits; and its signature class."""
        got = self.source.lines(i, 1)
        raw = got[0] if got else ""
        shown = display_text(raw, (self.needle, self.target_text if i == self.target else ""))
        if len(shown) > self._width:
            self._width = len(shown)
            self.call_after_refresh(self._sync)
        kind = None if self.yaml else self._kind(i, raw)
        line = Text(shown, no_wrap=True, end="")
        # the cursor's and the cited line's rows keep their own colours: a signature's colour on
        # their background would not read (the gutter's mark still says which signature it is)
        plain = i in (self.cursor, self.target)
        if self.yaml:
            colon = shown.find(":")
            if colon > 0 and not shown.lstrip().startswith(("|", '"')) and not plain:
                line.stylize(self._style("key"), 0, colon)
        elif kind and not plain:
            line.stylize(self._style(kind))
        if self.source.number(i) == "" and shown.startswith("⋯"):
            line.stylize(self._style("gap"))
        if self.needle:
            low, n = shown.lower(), self.needle.lower()
            pos = low.find(n)
            while pos != -1:
                line.stylize(self._style("match"), pos, pos + len(n))
                pos = low.find(n, pos + len(n))
        return line, kind

    def _content_width(self) -> int:
        return max(1, self.scrollable_content_region.width - self.gutter_width)

    def _wrap_line(self, i: int) -> list[Strip]:
        """Line `i` folded to the view's width, one strip per screen row (cached)."""
        cw = self._content_width()
        key = (i, cw)
        hit = self._wrapped.get(key)
        if hit is not None:
            return hit
        line, _ = self._text(i)
        console = self.app.console
        parts = line.wrap(console, cw, overflow="fold", no_wrap=False) if line.cell_len > cw else [line]
        strips = [Strip(part.render(console), part.cell_len).extend_cell_length(cw) for part in parts] or [
            Strip.blank(cw)
        ]
        self._wrapped[key] = strips
        if len(self._wrapped) > 2048:
            self._wrapped.popitem(last=False)
        return strips

    def _rows_from(self, top: int, h: int) -> list[tuple[int, int]]:
        """(line, part) of each screen row, wrapped, from line `top`."""
        rows: list[tuple[int, int]] = []
        i = top
        while len(rows) < h and i < self._count:
            rows += [(i, k) for k in range(self._height(i))]
            i += 1
        return rows[:h]

    def _gutter(self, i: int, kind: str | None, first: bool = True) -> Strip:
        gw = self.gutter_width
        is_target = i == self.target
        mark = MARKER["target"] if is_target else MARKER.get(kind or "", " ")
        label = self.source.number(i) if first else ""
        gutter = Text(f"{label:>{gw - 3}} {mark if first else '↪'} ", style=self._style("gutter"), end="")
        if kind and not is_target and first and i != self.cursor:
            gutter.stylize(self._style(kind), gw - 2, gw - 1)
        return Strip(gutter.render(self.app.console), gw)

    def _row_style(self, i: int) -> Style:
        row = self.rich_style
        if i == self.target:
            row = row + self._style("target")
        if i == self.cursor:
            row = row + self._style("cursor")
        return row

    def render_line(self, y: int) -> Strip:
        scroll_x, scroll_y = self.scroll_offset
        width = self.scrollable_content_region.width
        if self.wrap:
            key = (int(scroll_y), width, self._count, self.scrollable_content_region.height)
            if self._layout is None or self._layout[0] != key:
                self._layout = (key, self._rows_from(int(scroll_y), self.scrollable_content_region.height))
            rows = self._layout[1]
            if y >= len(rows):
                return Strip.blank(width, self.rich_style)
            i, k = rows[y]
            _, kind = self._text(i) if k == 0 else (None, None)
            strip = Strip.join([self._gutter(i, kind, first=k == 0), self._wrap_line(i)[k]])
            return strip.apply_style(self._row_style(i)).apply_offsets(0, i)
        i = scroll_y + y
        if i >= self._count:
            return Strip.blank(width, self.rich_style)
        line, kind = self._text(i)
        gw = self.gutter_width
        content = Strip(line.render(self.app.console), line.cell_len).crop_extend(
            int(scroll_x), int(scroll_x) + max(0, width - gw), None
        )
        strip = Strip.join([self._gutter(i, kind), content])
        return strip.apply_style(self._row_style(i)).apply_offsets(int(scroll_x), i)

    def on_focus(self) -> None:
        self.refresh()

    def on_blur(self) -> None:
        self.refresh()

    def action_scroll_left(self) -> None:
        if not self.wrap:
            super().action_scroll_left()

    def action_scroll_right(self) -> None:
        if not self.wrap:
            super().action_scroll_right()

    def current_text(self) -> str:
        got = self.source.lines(self.cursor, 1)
        return display_text(got[0]) if got else ""
