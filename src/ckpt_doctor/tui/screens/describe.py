"""`d`: one object summarised as `kubectl describe` does, with its events (see `tui/describe.py`)."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.content import Content
from textual.widgets import Static

from ckpt_doctor.tui.describe import describe
from ckpt_doctor.tui.lines import TextLines
from ckpt_doctor.tui.model import View, snapshot_now
from ckpt_doctor.tui.screens.base import DoctorScreen
from ckpt_doctor.tui.screens.filtering import LineSearch
from ckpt_doctor.tui.widgets.filterbar import FilterBar
from ckpt_doctor.tui.widgets.guard import SafeStatic
from ckpt_doctor.tui.widgets.lineview import LineView
from ckpt_doctor.tui.widgets.tone import var


class DescribeScreen(LineSearch, DoctorScreen):
    TAB = "object"
    BINDINGS = [*LineSearch.KEYS, Binding("y", "yaml", "YAML")]

    def __init__(self, ref: str) -> None:
        super().__init__()
        self.ref = ref

    def body(self) -> ComposeResult:
        yield SafeStatic(id="object-title")
        yield LineView(id="describe")
        yield FilterBar("search this description…", id="search")

    def show_view(self, view: View) -> None:
        super().show_view(view)
        title = self.query_one("#object-title", Static)
        lv = self.query_one("#describe", LineView)
        if not view.complete:
            title.update(Content.styled(f"⟳ reading {self.ref}…", var("foreground-muted")))
            return
        raw = view.objects.get(self.ref)
        if raw is None:
            title.update(Content.styled(f"{self.ref} is not in the snapshot any more.", var("text-warning")))
            lv.set_source(TextLines([]))
            return
        now = snapshot_now({"collectedAt": view.collected_at}, view.source == "live")
        lines = describe(self.ref, raw, view.events, now)
        title.update(
            Content.assemble(
                ("describe ", var("foreground-muted")), (self.ref, "bold"), ("   y: YAML", var("foreground-muted"))
            )
        )
        lv.set_source(TextLines(lines, f"describe {self.ref}"), keep=lv.line_count > 0)
        self.focus_now(lv)

    def selected_ref(self) -> str:
        return self.ref

    def action_yaml(self) -> None:
        self.doctor.open_object(self.ref, "")
