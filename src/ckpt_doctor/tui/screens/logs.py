"""Logs: per pod and container, current or previous, across attempts; signature lines highlighted;
search; follow in live mode. Only the lines on screen are read, so a huge log stays smooth."""

from __future__ import annotations

from collections import OrderedDict

from textual.app import ComposeResult
from textual.binding import Binding
from textual.content import Content
from textual.widgets import Select, Static

from ckpt_doctor.facts.attempts import COMPLETION_INDEX
from ckpt_doctor.snapshot import LogKey
from ckpt_doctor.tui.lines import LineSource, source_for
from ckpt_doctor.tui.model import LogEntry, View
from ckpt_doctor.tui.screens.base import DoctorScreen
from ckpt_doctor.tui.screens.filtering import LineSearch
from ckpt_doctor.tui.widgets.filterbar import FilterBar
from ckpt_doctor.tui.widgets.guard import SafeStatic
from ckpt_doctor.tui.widgets.lineview import LineView, Place
from ckpt_doctor.tui.widgets.tone import var


def _size(n: int | None) -> str:
    if n is None:
        return "size unknown"
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024  # type: ignore[assignment]
    return ""


class LogsScreen(LineSearch, DoctorScreen):
    TAB = "logs"
    BINDINGS = [
        *LineSearch.KEYS,
        Binding("p", "previous", "Previous"),
        Binding("left_square_bracket", "cycle(-1)", "Prev log", key_display="[", show=False),
        Binding("right_square_bracket", "cycle(1)", "Next log", key_display="]", show=False),
        Binding("f", "follow", "Follow"),
        Binding("w", "wrap", "Wrap"),
    ]
    KEPT = 16  # logs whose index (and open file) stay at hand: coming back is instant

    def __init__(self) -> None:
        super().__init__()
        self.wanted: tuple[LogKey, int | None, str] | None = None  # a log line to open once shown
        self.entry: LogEntry | None = None
        self._options: list[LogEntry] = []
        # per log: its indexed source (kept for the KEPT last logs read) and where the reader was
        self._sources: OrderedDict[LogKey, tuple[object, LineSource]] = OrderedDict()
        self._places: dict[LogKey, Place] = {}

    def body(self) -> ComposeResult:
        yield Select([], id="which", allow_blank=True, prompt="choose a log", compact=True)
        yield SafeStatic(id="logstatus")
        yield LineView(id="log")
        yield FilterBar("search this log: enter finds the next match, n / N next / previous…", id="search")

    @property
    def lines(self) -> LineView:
        return self.query_one("#log", LineView)

    def show_view(self, view: View) -> None:
        super().show_view(view)
        self.lines.use_signatures(view.signatures)
        self._options = list(view.logs)
        sel = self.query_one("#which", Select)
        with self.prevent(Select.Changed):
            sel.set_options([(e.label, i) for i, e in enumerate(self._options)])
        if self.wanted is not None:
            key, line, text = self.wanted
            self.wanted = None
            self.open(key, line, text)
        elif self.entry is not None and view.log_entry(self.entry.key) is not None:
            follow = self.lines.follow
            key = self._followed(view) if follow else self.entry.key
            self.open(key, keep=True)
        elif self._options:
            newest = max(e.attempt or 0 for e in self._options)
            self.open(next(e for e in self._options if (e.attempt or 0) == newest).key)
        else:
            self.entry = None
            self._status()

    def _followed(self, view: View) -> LogKey:
        """Follow across restarts: the newest instance of the same replica and container."""
        assert self.entry is not None
        pod, container, _ = self.entry.key
        ns = self.entry.namespace
        idx = (view.objects.get(f"Pod/{ns}/{pod}") or {}).get("metadata", {}).get("labels", {}).get(COMPLETION_INDEX)
        same = [
            e
            for e in view.logs
            if e.key[1] == container
            and not e.key[2]
            and (view.objects.get(f"Pod/{e.namespace}/{e.key[0]}") or {})
            .get("metadata", {})
            .get("labels", {})
            .get(COMPLETION_INDEX)
            == idx
        ]
        best = max(same, key=lambda e: e.attempt or 0, default=None)
        return best.key if best is not None else self.entry.key

    def open(self, key: LogKey, line: int | None = None, text: str = "", keep: bool = False) -> None:
        """Show the log `key` (pod, container, previous), at 1-based `line` or the line holding `text`."""
        view = self.doctor.view
        if view is None or not self.ready:  # shown first, then opened (setup)
            self.wanted = (key, line, text)
            return
        entry = view.log_entry(key) if view is not None else None
        if entry is None:
            self.notify(
                f"No log of {key[0]}/{key[1]}{' (previous)' if key[2] else ''} in the snapshot.", severity="warning"
            )
            return
        same = self.entry is not None and self.entry.key == key
        if self.entry is not None and not same:
            self._places[self.entry.key] = self.lines.place()
        self.entry = entry
        sel = self.query_one("#which", Select)
        with self.prevent(Select.Changed):
            sel.value = self._options.index(entry) if entry in self._options else Select.BLANK
        source, fresh = self._source(entry)
        lv = self.lines
        if same and not fresh:  # the log on screen again (a refresh, a jump): read what it gained
            if line or text:
                lv.set_source(source, line=line, text=text, keep=True, close_old=False)
            if lv.follow:
                lv.reindex()
        elif same:  # the log on screen was collected again: the new reading replaces the old one
            lv.set_source(source, line=line, text=text, keep=keep, close_old=True)
        else:  # another log: where the reader left it, unless a line is asked for
            place = None if (line or text) else self._places.get(key)
            lv.set_source(source, line=line, text=text, place=place, close_old=False)
        self.focus_now(lv)
        self._status()

    def _source(self, entry: LogEntry) -> tuple[LineSource, bool]:
        """The source of a log, kept with its index while its file is the same; (source, new?)."""
        # a file is the same source as it grows (following reads on); windows are new when they change
        ident = (entry.ref.path, None) if entry.ref.path is not None else (None, entry.ref.size)
        kept = self._sources.get(entry.key)
        if kept is not None and kept[0] == ident:
            self._sources.move_to_end(entry.key)
            return kept[1], False
        if kept is not None:
            self._drop(entry.key)
        source = source_for(entry.ref, entry.label)
        self._sources[entry.key] = (ident, source)
        while len(self._sources) > self.KEPT:
            oldest = next(iter(self._sources))
            self._drop(oldest)
        return source, True

    def _drop(self, key: LogKey) -> None:
        _, source = self._sources.pop(key)
        if source is not self.lines.source:
            source.close()

    def on_unmount(self) -> None:
        for _, source in self._sources.values():
            source.close()
        self._sources.clear()

    def on_select_changed(self, event: Select.Changed) -> None:
        if isinstance(event.value, int) and 0 <= event.value < len(self._options):
            self.open(self._options[event.value].key)

    def on_line_view_changed(self, event: LineView.Changed) -> None:
        self._status()

    def _status(self) -> None:
        st = self.query_one("#logstatus", Static)
        if self.entry is None:
            st.update(Content.styled("No container log of this TrainJob in the snapshot.", var("foreground-muted")))
            return
        lv = self.lines
        pod, container, prev = self.entry.key
        parts: list = [
            (f"{pod}/{container}", "bold"),
            (" previous" if prev else " current", var("text-accent")),
            f" · attempt {self.entry.attempt if self.entry.attempt is not None else '?'}",
            f" · {_size(self.entry.ref.size)}",
            f" · line {lv.cursor + 1 if lv.line_count else 0}/{lv.line_count}",
        ]
        if not lv.source.complete:
            parts.append((" · indexing…", var("text-warning")))
        if lv.follow:
            parts.append((" · following", var("text-success")))
        if lv.wrap:
            parts.append((" · wrapped", var("text-accent")))
        if lv.needle:
            parts.append((f" · /{lv.needle}", var("text-accent")))
        if lv.message:
            parts.append((f" · {lv.message}", var("text-warning")))
        st.update(Content.assemble(*parts))

    # -- keys ------------------------------------------------------------------------------------
    def action_previous(self) -> None:
        if self.entry is None:
            return
        pod, container, prev = self.entry.key
        self.open((pod, container, not prev))

    def action_cycle(self, delta: int) -> None:
        if not self._options:
            return
        i = self._options.index(self.entry) if self.entry in self._options else -1
        self.open(self._options[(i + delta) % len(self._options)].key)

    def action_wrap(self) -> None:
        self.lines.wrap = not self.lines.wrap
        self._status()

    def action_follow(self) -> None:
        if self.doctor.view is None or self.doctor.view.source != "live":
            self.notify("Follow needs a live cluster: a bundle does not grow.", severity="warning")
            return
        self.lines.follow = not self.lines.follow
        if self.lines.follow:
            self.doctor.ensure_refresh()
        self._status()
