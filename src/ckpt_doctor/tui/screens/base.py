"""What every screen has: the header, the partial-data banner, the footer with its keys; and,
for the screens about one TrainJob, the navigation bar and a hook for each new diagnosis."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from textual.app import ComposeResult
from textual.screen import Screen
from textual.widgets import Footer, Header

from ckpt_doctor.tui.widgets.banner import Banner
from ckpt_doctor.tui.widgets.navbar import NavBar

if TYPE_CHECKING:
    from ckpt_doctor.tui.model import View


class Frame(Screen):
    """Header, banner, body, footer."""

    def compose(self) -> ComposeResult:
        yield Header(icon="✚")
        yield from self.top()
        yield Banner()
        yield from self.body()
        yield Footer(show_command_palette=False)

    def top(self) -> ComposeResult:
        yield from ()

    def body(self) -> ComposeResult:
        yield from ()

    def close_filter(self) -> bool:
        """Close an open filter bar; True when there was one (escape then goes no further)."""
        from ckpt_doctor.tui.widgets.filterbar import FilterBar

        for bar in self.query(FilterBar):
            if bar.is_open:
                bar.action_close()
                return True
        return False


class DoctorScreen(Frame):
    """A view of the current TrainJob's diagnosis."""

    TAB = ""
    ready = False  # mounted: requests (open this log, select that finding) apply at once

    def top(self) -> ComposeResult:
        yield NavBar(self.TAB)

    def on_mount(self) -> None:
        self.ready = True
        view = getattr(self.app, "view", None)
        if view is not None:
            self.show_view(view)
        else:
            self.show_loading()

    def show_loading(self) -> None:
        """No diagnosis yet (the banner says what is being read; no spinner competes with the reading)."""

    def show_view(self, view: View) -> None:
        """Fill the screen from a (new) diagnosis; called again after every refresh."""
        self.query_one(NavBar).refresh_tabs()

    def show_failed(self, why: str) -> None:
        """Loading failed: the banner says why; screens may say more."""

    @property
    def doctor(self) -> Any:
        """The app, typed loosely to keep this module free of an import cycle."""
        return self.app
