"""Textual's lists, guarded (`guard.py`); apart from `guard.py` so the first frame does not import them."""

from __future__ import annotations

from typing import Any

from textual.binding import Binding
from textual.content import Content
from textual.strip import Strip
from textual.visual import visualize
from textual.widgets import DataTable, OptionList

from ckpt_doctor.tui.widgets.guard import Guarded


class SafeDataTable(Guarded, DataTable):  # type: ignore[type-arg]
    """A DataTable that cannot take the app down, with the keys of k9s."""

    BINDINGS = [
        Binding("j", "cursor_down", "Down", show=False),
        Binding("k", "cursor_up", "Up", show=False),
        Binding("g", "scroll_top", "Top", show=False),
        Binding("G", "scroll_bottom", "Bottom", show=False),
    ]


class SafeOptionList(Guarded, OptionList):
    """An OptionList that cannot take the app down, with the keys of k9s."""

    BINDINGS = [
        Binding("j", "cursor_down", "Down", show=False),
        Binding("k", "cursor_up", "Up", show=False),
        Binding("g", "first", "Top", show=False),
        Binding("G", "last", "Bottom", show=False),
    ]

    def _get_option_render(self, option: Any, style: Any) -> list[Strip]:
        """The highlighted option in the highlight's own colours: a red ✗ or a muted arrow on the
        highlight's background would not read (the marks keep their meaning without colour)."""
        prompt = option.prompt
        index = self._option_to_index.get(option)
        if index is None or index != self.highlighted or not isinstance(prompt, Content):
            return super()._get_option_render(option, style)
        coloured = option._visual
        option._visual = visualize(self, Content(prompt.plain), markup=False)
        try:
            return super()._get_option_render(option, style)
        finally:
            option._visual = coloured
