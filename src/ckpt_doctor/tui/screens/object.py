"""One object as YAML, scrolled to the field an evidence item cites."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.content import Content
from textual.widgets import Static

from ckpt_doctor.tui.lines import TextLines
from ckpt_doctor.tui.model import View
from ckpt_doctor.tui.screens.base import DoctorScreen
from ckpt_doctor.tui.screens.filtering import LineSearch
from ckpt_doctor.tui.widgets.filterbar import FilterBar
from ckpt_doctor.tui.widgets.guard import SafeStatic
from ckpt_doctor.tui.widgets.lineview import LineView
from ckpt_doctor.tui.widgets.tone import var
from ckpt_doctor.tui.yamltext import locate, resolve, to_yaml


class ObjectScreen(LineSearch, DoctorScreen):
    TAB = "object"
    BINDINGS = LineSearch.KEYS

    def __init__(self, ref: str, path: str = "") -> None:
        super().__init__()
        self.ref, self.path = ref, path

    def body(self) -> ComposeResult:
        yield SafeStatic(id="object-title")
        yield LineView(id="yaml", yaml=True)
        yield FilterBar("search this object…", id="search")

    def selected_ref(self) -> str:
        return self.ref

    def show_view(self, view: View) -> None:
        super().show_view(view)
        raw = view.objects.get(self.ref)
        title = self.query_one("#object-title", Static)
        lv = self.query_one("#yaml", LineView)
        if not view.complete:
            title.update(Content.styled(f"⟳ reading {self.ref}…", var("foreground-muted")))
            return
        if raw is None:
            title.update(Content.styled(f"{self.ref} is not in the snapshot any more.", var("text-warning")))
            lv.set_source(TextLines([]))
            return
        lines, where = to_yaml(raw)
        line = locate(raw, where, self.path) if self.path else None
        parts: list = [(self.ref, "bold")]
        if self.path:
            _, whole = resolve(raw, self.path)
            parts += [(" · ", var("foreground-muted")), (self.path, var("text-accent"))]
            if not whole:
                parts.append(
                    ("  (not all of this path is in the object: showing the nearest field)", var("text-warning"))
                )
        title.update(Content.assemble(*parts))
        lv.set_source(TextLines(lines, self.ref), line=line + 1 if line is not None else None, keep=lv.line_count > 0)
        self.focus_now(lv)
