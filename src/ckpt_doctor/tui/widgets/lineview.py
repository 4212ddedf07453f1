"""A line view that renders only the lines on screen, from a source of any size.

Used for logs (signature lines highlighted, search, follow) and for object YAML (the cited field
highlighted). The source is indexed in a worker thread; the view grows while that runs and a
jump to a line that is not indexed yet waits for it.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Iterable
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
    segment holding a preferred text (a search hit, a cited line)."""
    if "\r" in raw:
        segs = [s for s in raw.split("\r") if s.strip()]
        pick = segs[-1] if segs else ""
        for want in prefer:
            if want:
                w = want.lower()
                hit = next((s for s in segs if w in s.lower()), None)
                if hit is not None:
                    pick = hit
                    break
        raw = pick
    if "\t" in raw:
        raw = raw.expandtabs(4)
    raw = "".join(ch if ch >= " " else "�" for ch in raw) if any(ch < " " for ch in raw) else raw
    return raw[:MAX_CHARS]


class LineView(ScrollView, can_focus=True):
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

    # -- data ----------------------------------------------------------------------------------
    def use_signatures(self, signatures: list[Any]) -> None:
        """Log signatures whose lines get coloured (progress bars are left alone)."""
        self.signatures = [s for s in signatures if s.event in KIND_CLASS]
        self._kinds.clear()
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

    def set_source(self, source: LineSource, line: int | None = None, text: str = "", keep: bool = False) -> None:
        """Show `source`; jump to 1-based `line`, or to the last line containing `text`."""
        old = self.source
        self.source = source
        if old is not source and old is not None:
            old.close()
        self._kinds.clear()
        # known up front, the scroll extent does not hang on which lines happened to be drawn
        self._width = min(source.widest() or 0, MAX_CHARS)
        self.target, self.target_text = None, text
        self._pending = (line, text) if (line or text) else None
        if not keep:
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

    def _sync(self) -> None:
        self._count = self.source.count()
        gw = self.gutter_width
        self.virtual_size = Size(gw + max(self._width, 1), self._count)

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
        if center:
            if not (y <= i < y + h):
                self.scroll_to(y=max(0, i - h // 2), animate=False, immediate=True, force=True)
        elif i < y:
            self.scroll_to(y=i, animate=False, immediate=True, force=True)
        elif i >= y + h:
            self.scroll_to(y=i - h + 1, animate=False, immediate=True, force=True)

    def watch_cursor(self, old: int, new: int) -> None:
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
        if off is not None:
            self.goto(int(self.scroll_offset.y) + off.y, center=False)

    # -- search --------------------------------------------------------------------------------
    def search(self, needle: str, backward: bool = False) -> None:
        """Move to the next (or previous) line containing `needle`, wrapping around."""
        self.needle = needle
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
        return (
            Style(bgcolor=style.bgcolor, bold=style.bold, color=style.color if name == "match" else None)
            if background
            else style
        )

    def render_line(self, y: int) -> Strip:
        scroll_x, scroll_y = self.scroll_offset
        i = scroll_y + y
        width = self.scrollable_content_region.width
        base = self.rich_style
        if i >= self._count:
            return Strip.blank(width, base)
        got = self.source.lines(i, 1)
        raw = got[0] if got else ""
        is_target = i == self.target
        shown = display_text(raw, (self.needle, self.target_text if is_target else ""))
        if len(shown) > self._width:
            self._width = len(shown)
            self.call_after_refresh(self._sync)
        kind = None if self.yaml else self._kind(i, raw)
        line = Text(shown, no_wrap=True, end="")
        if self.yaml:
            colon = shown.find(":")
            if colon > 0 and not shown.lstrip().startswith(("|", '"')):
                line.stylize(self._style("key"), 0, colon)
        elif kind:
            line.stylize(self._style(kind))
        if self.source.number(i) == "" and shown.startswith("⋯"):
            line.stylize(self._style("gap"))
        if self.needle:
            low, n = shown.lower(), self.needle.lower()
            pos = low.find(n)
            while pos != -1:
                line.stylize(self._style("match"), pos, pos + len(n))
                pos = low.find(n, pos + len(n))
        gw = self.gutter_width
        mark = MARKER["target"] if is_target else MARKER.get(kind or "", " ")
        gutter = Text(f"{self.source.number(i):>{gw - 3}} {mark} ", style=self._style("gutter"), end="")
        if kind and not is_target:
            gutter.stylize(self._style(kind), gw - 2, gw - 1)
        content = Strip(line.render(self.app.console), line.cell_len).crop_extend(
            int(scroll_x), int(scroll_x) + max(0, width - gw), None
        )
        strip = Strip.join([Strip(gutter.render(self.app.console), gw), content])
        row = base
        if is_target:
            row = row + self._style("target")
        if i == self.cursor:
            row = row + self._style("cursor")
        return strip.apply_style(row).apply_offsets(int(scroll_x), i)

    def on_focus(self) -> None:
        self.refresh()

    def on_blur(self) -> None:
        self.refresh()

    def current_text(self) -> str:
        got = self.source.lines(self.cursor, 1)
        return display_text(got[0]) if got else ""
