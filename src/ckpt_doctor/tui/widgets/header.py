"""Textual's Header, with a title that can be set while the app closes.

Textual's own Header follows the app's and the screen's title through async watchers that look its title
widget up when they run; one queued just before the app closes runs after that widget was removed and fails
with NoMatches (it only expects NoScreen). Seen in the test suite: a diagnosis loaded as the app exited set
the sub-title, and the app's crash report fired on the way out. This one follows the same four attributes
and does nothing once the title widget is gone.
"""

from __future__ import annotations

from textual.css.query import NoMatches
from textual.dom import NoScreen
from textual.events import Mount
from textual.widget import Widget
from textual.widgets import Header
from textual.widgets._header import HeaderTitle


class DoctorHeader(Header):
    def _on_mount(self, event: Mount) -> None:
        event.prevent_default()  # not Header's watchers (see the module's text); Widget's own mount still runs
        Widget._on_mount(self, event)
        for obj in (self.app, self.screen):
            self.watch(obj, "title", self._show_title)
            self.watch(obj, "sub_title", self._show_title)

    async def _show_title(self) -> None:
        # awaited as Textual's own is (after the change that called it, not inside it: the first frame is not held
        # up by a title update per attribute), and no error once the title widget is gone
        try:
            self.query_one(HeaderTitle).update(self.format_title())
        except (NoScreen, NoMatches):
            return
