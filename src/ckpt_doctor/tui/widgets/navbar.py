"""The screens of one TrainJob, k9s-style: a number key or a click opens each."""

from __future__ import annotations

from textual.content import Content
from textual.widgets import Static

from ckpt_doctor.tui.screens import SCREENS
from ckpt_doctor.tui.widgets.guard import Guarded

TABS = tuple((key, name, label) for key, name, label, _ in SCREENS if name != "picker")  # one TrainJob's screens


class NavBar(Guarded, Static):
    DEFAULT_CSS = """
    NavBar { height: 1; background: $panel; color: $foreground-muted; padding: 0 1; }
    """

    def __init__(self, current: str) -> None:
        super().__init__()
        self.current = current

    def on_mount(self) -> None:
        self.watch(self.app, "status", lambda _: self.refresh_tabs(), init=False)
        self.refresh_tabs()

    def refresh_tabs(self) -> None:
        view = getattr(self.app, "view", None)
        parts: list[str | tuple[str, str]] = []
        for key, name, label in TABS:
            extra = ""
            if view is not None and name == "findings":
                fails = view.summary.get("fail") or 0
                extra = f" ✗{fails}" if fails else " ✓"
            text = f" {key} {label}{extra} "
            if name == self.current:
                parts.append((text, "reverse bold"))
            else:
                parts.append((text, f"@click=app.goto('{name}')"))
        self.update(Content.assemble(*parts))
