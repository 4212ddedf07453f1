"""What every screen has: the header, the partial-data banner, the footer with its keys; and,
for the screens about one TrainJob, the navigation bar and a hook for each new diagnosis.

The body (tables, tree, chart) of the app's first screen is mounted lazily, once the first frame is
on the terminal (`paint.py`): its widgets are most of the start-up's style work, and they would show
nothing but "loading" yet. So a screen fills its body in `setup()`, which runs once the body is in
the DOM, and the app sends it data only when it is `ready`; `setup()` picks up whatever the app
already has.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from textual import events
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.message import Message
from textual.screen import Screen

from ckpt_doctor.tui.paint import AfterPaint
from ckpt_doctor.tui.widgets.banner import Banner
from ckpt_doctor.tui.widgets.header import DoctorHeader
from ckpt_doctor.tui.widgets.keyfooter import KeyFooter
from ckpt_doctor.tui.widgets.navbar import NavBar

if TYPE_CHECKING:
    from ckpt_doctor.tui.model import View


class Body(Vertical):
    """The part of a screen below the banner; says when it is mounted."""

    DEFAULT_CSS = "Body { height: 1fr; }"

    class Mounted(Message):
        """The body and its widgets are in the DOM."""

    def on_mount(self) -> None:
        self.post_message(self.Mounted())


class Frame(Screen):
    """Header, banner, body, footer."""

    ready = False  # the body is mounted and set up: the app's data goes straight to it
    PASS = frozenset({"escape", "ctrl+c", "ctrl+q"})  # never held back

    def __init__(self, lazy: bool = False) -> None:
        super().__init__()
        self.lazy = lazy
        self._typed: list[tuple[str, str | None]] = []  # keys typed before the body was there

    def on_key(self, event: events.Key) -> None:
        """Keys for the body typed before it exists (`2 e j enter` typed fast, on a loaded
        machine) are kept and replayed once it is set up, instead of being lost; the app's own
        keys (screens, quit, refresh) act at once."""
        if self.ready or event.key in self.PASS or event.key in self.app._bindings.key_to_bindings:
            return
        self._typed.append((event.key, event.character))
        event.stop()
        event.prevent_default()

    def _replay(self) -> None:
        """One key at a time: each may move the focus (`e`), which the next one needs to find."""
        if self._typed and self.is_current:
            key, character = self._typed.pop(0)
            self.app.post_message(events.Key(key, character))
            self.call_after_refresh(self._replay)

    def on_screen_suspend(self) -> None:
        self._typed.clear()  # typed for a screen that was left before it could take them

    def compose(self) -> ComposeResult:
        yield DoctorHeader(icon="✚")
        yield from self.top()
        yield Banner()
        body = Body(id="body")
        with AfterPaint(body) if self.lazy else body:
            yield from self.body()
        yield KeyFooter(show_command_palette=False)  # Footer, rebuilt only when its keys change

    def on_body_mounted(self, event: Body.Mounted) -> None:
        event.stop()
        if self.going:  # removed (or the app closed) before the body's message arrived: nothing to fill
            return
        self.ready = True
        self.setup()
        if self.lazy and self.focused is None:  # the screen's auto-focus ran before the body existed
            self.focus_next(self.AUTO_FOCUS or self.app.AUTO_FOCUS or "*")
        self.refresh_bindings()
        if self._typed:
            self.call_after_refresh(self._replay)

    @property
    def going(self) -> bool:
        """Being removed, or the app is closing: its widgets are going or gone, and it takes no data."""
        return bool(self._pruning or self._closing)

    def focus_now(self, widget: Any) -> None:
        """Move the focus before the next key is read (`Widget.focus()` waits a turn, and a key
        typed right after `e` would go to the list it leaves)."""
        if widget.is_mounted and widget.screen is self:
            self.set_focus(widget)
        else:
            widget.focus()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """The screen's own keys act on its body: shown dimmed, and ignored, until it is mounted
        (keys typed ahead while the first screen opens)."""
        return True if self.ready else None

    def setup(self) -> None:
        """Fill the body from what the app has (called once, when the body is mounted)."""

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

    def top(self) -> ComposeResult:
        yield NavBar(self.TAB)

    def setup(self) -> None:
        """Show the diagnosis the app has, or why there is none (yet)."""
        app = self.doctor
        if app.view is not None:
            app.show_safely(self, app.view)
        elif app.error and not app.busy:
            self.show_failed(app.error)
        else:
            self.show_loading()

    def show_loading(self) -> None:
        """No diagnosis yet (the banner says what is being read; no spinner competes with the reading)."""

    def show_view(self, view: View) -> None:
        """Fill the screen from a (new) diagnosis; called again after every refresh."""
        self.query_one(NavBar).refresh_tabs()

    def show_failed(self, why: str) -> None:
        """Loading failed: the banner says why; screens may say more."""

    def show_broken(self, why: str, log: Path | None) -> None:
        """This screen could not show the diagnosis: say so on top of its body (the other screens
        and the keys keep working)."""
        from textual.content import Content

        from ckpt_doctor.tui.widgets.guard import SafeStatic

        where = f" (details in {log})" if log else ""
        text = Content.styled(f"✗ This screen could not show the diagnosis: {why}{where}", "$text-error")
        found = self.query("#broken")
        if found:
            found.first(SafeStatic).update(text)
        else:
            self.query_one("#body").mount(SafeStatic(text, id="broken"), before=0)

    def recover(self) -> None:
        """New data: let broken panels try again."""
        from ckpt_doctor.tui.widgets.guard import Guarded

        self.query("#broken").remove()
        for w in self.query("*"):
            if isinstance(w, Guarded):
                w.recover()

    @property
    def doctor(self) -> Any:
        """The app, typed loosely to keep this module free of an import cycle."""
        return self.app
