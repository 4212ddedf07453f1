"""Textual's Footer, rebuilt only when the keys it shows change.

Textual's Footer builds all its key widgets anew on every "bindings updated" signal: each focus
change, each screen push, each `refresh_bindings()`. Opening a bundle sends nine such signals
(the picker's first frame and body, the overview's screen, focus and body), and each rebuild took
15-90 ms of the screen's time on a loaded 2-core machine, about 280 ms while the diagnosis loads.
This one rebuilds when the keys it would show, their labels or their enabled states differ from
what it shows, once however many signals come before the next refresh: the same footer, drawn as
often as it changes.
"""

from __future__ import annotations

from typing import Any

from textual.screen import Screen
from textual.widgets import Footer


class KeyFooter(Footer):
    DEFAULT_CSS = "KeyFooter { }"  # Footer's own rules apply (they name Footer, its base class)

    _shown: tuple[Any, ...] | None = None  # the keys of the last rebuild
    _pending = False  # a rebuild is already asked for

    def _keys(self, screen: Screen) -> tuple[Any, ...]:
        """What `compose` would draw from the screen's bindings, as a comparable value."""
        return (
            self.compact,
            self.show_command_palette,
            tuple(
                (b.key, b.action, b.description, b.key_display, b.tooltip, b.group, enabled, tooltip)
                for (_, b, enabled, tooltip) in screen.active_bindings.values()
                if b.show or b.action == "command_palette"
            ),
        )

    def bindings_changed(self, screen: Screen) -> None:
        if not screen.app.app_focus or not self.is_attached or screen is not self.screen:
            super().bindings_changed(screen)  # the base class's own conditions, as it has them
            return
        self._bindings_ready = True
        if self._pending:
            return
        self._pending = True
        self.call_after_refresh(self._rebuild)

    async def _rebuild(self) -> None:
        self._pending = False
        if not self.is_attached:
            return
        keys = self._keys(self.screen)
        if keys == self._shown:
            return
        self._shown = keys
        await self.recompose()
