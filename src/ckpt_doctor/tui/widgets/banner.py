"""One line under the navigation bar that says when what you see is not the whole story:
loading, a failed refresh, data that could not be collected, rules that could not be evaluated."""

from __future__ import annotations

from textual.content import Content
from textual.widgets import Static

from ckpt_doctor.tui.widgets.guard import Guarded


class Banner(Guarded, Static):
    DEFAULT_CSS = """
    Banner {
        height: auto;
        max-height: 3;
        padding: 0 1;
        display: none;
        &.-info { display: block; background: $primary 20%; color: $text; }
        &.-warn { display: block; background: $warning 25%; color: $text; }
        &.-error { display: block; background: $error 30%; color: $text; }
    }
    """

    def on_mount(self) -> None:
        self.watch(self.app, "status", self._show, init=True)

    def _show(self, status: tuple[str, str]) -> None:
        level, text = status
        for lv in ("info", "warn", "error"):
            self.set_class(lv == level, f"-{lv}")
        self.update(Content(text) if text else "")
