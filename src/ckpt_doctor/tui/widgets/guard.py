"""A widget that fails to draw shows what broke in its own place; the rest of the app keeps working.

`Guarded` goes first in the bases of every widget of the app (`class ObjectTree(Guarded, Tree)`).
The first error while drawing or measuring the widget is written to the crash log (`tui/crash.py`)
and noted once; from then on the widget draws a one-line error panel instead of its content, until
`recover()` (the screens call it when new data arrives).
"""

from __future__ import annotations

from typing import Any

from rich.segment import Segment
from rich.style import Style
from textual.geometry import Region, Size
from textual.strip import Strip
from textual.widgets import Static


class Guarded:
    broken: str | None = None

    def _fail(self, error: Exception) -> None:
        from ckpt_doctor.tui import crash

        w: Any = self
        self.broken = " ".join(f"{type(error).__name__}: {error}".split())[:300]
        if self.__dict__.get("_guard_logged"):  # failing again after new data: logged and said already
            return
        self.__dict__["_guard_logged"] = True
        path = crash.write(error, f"drawing {type(self).__name__}#{w.id or ''}")
        where = f" (details in {path})" if path else ""
        try:
            w.app.call_later(
                w.app.notify, f"This panel could not be drawn: {self.broken}{where}", severity="error", timeout=10
            )
        except Exception:  # no app (unit tests): the panel still says it
            pass

    def recover(self) -> None:
        """Try to draw the content again (new data came)."""
        if self.broken is not None:
            self.broken = None
            w: Any = self
            w.refresh(layout=True)

    def render_lines(self, crop: Region) -> list[Strip]:
        if self.broken is None:
            try:
                return super().render_lines(crop)  # type: ignore[misc]
            except Exception as e:
                self._fail(e)
        return self._error_lines(crop)

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        if self.broken is None:
            try:
                return super().get_content_height(container, viewport, width)  # type: ignore[misc]
            except Exception as e:
                self._fail(e)
        return 1

    def get_content_width(self, container: Size, viewport: Size) -> int:
        if self.broken is None:
            try:
                return super().get_content_width(container, viewport)  # type: ignore[misc]
            except Exception as e:
                self._fail(e)
        return container.width

    def _error_lines(self, crop: Region) -> list[Strip]:
        text = f"✗ could not draw this panel: {self.broken}"
        try:
            from ckpt_doctor.tui.widgets.tone import rich

            style = rich(self.app, "text-error", bold=True)  # type: ignore[attr-defined]
        except Exception:
            style = Style(bold=True)
        lines = []
        for y in range(crop.y, crop.y + crop.height):
            row = text[crop.x : crop.x + crop.width] if y == 0 else ""
            lines.append(Strip([Segment(row.ljust(crop.width), style if row else Style())], crop.width))
        return lines


class SafeStatic(Guarded, Static):
    """A Static that cannot take the app down."""
