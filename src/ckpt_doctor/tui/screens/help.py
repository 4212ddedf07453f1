"""`?`: the keys of the screen you came from, the global keys, and what each screen is for."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.content import Content
from textual.screen import ModalScreen

from ckpt_doctor.tui.screens import SCREENS
from ckpt_doctor.tui.widgets.guard import SafeStatic
from ckpt_doctor.tui.widgets.tone import var

WIDGET_KEYS = (("enter", "open, jump"), ("tab", "next pane"), ("q", "Quit"))
COLUMN = 34


class HelpScreen(ModalScreen[None]):
    BINDINGS = [Binding("escape,question_mark,q", "dismiss", "Close", show=False)]
    DEFAULT_CSS = """
    HelpScreen { align: center middle; }
    HelpScreen > VerticalScroll {
        width: 90%; max-width: 100; height: 90%; background: $panel; border: round $primary; padding: 0 1;
    }
    """

    def __init__(self, keys: list[tuple[str, str]]) -> None:
        super().__init__()
        self.keys = keys

    def compose(self) -> ComposeResult:
        with VerticalScroll() as vs:
            vs.border_title = "ckpt-doctor · keys"
            vs.border_subtitle = "esc closes"
            yield SafeStatic(self._text())

    def _text(self) -> Content:
        parts: list = [("Keys here", "bold")]
        entries = [*self.keys, *WIDGET_KEYS]
        for n, (key, desc) in enumerate(entries):
            cell = f"{key:<10} {desc}"[: COLUMN - 1]
            parts += [
                "\n  " if n % 2 == 0 else "",
                (f"{key:<10} ", f"bold {var('text-accent')}"),
                f"{cell[11:]:<{COLUMN - 11}}" if n % 2 == 0 else cell[11:],
            ]
        parts += ["\n\n", ("Screens", "bold")]
        for key, _, label, desc in SCREENS:
            parts += ["\n  ", (f"{key:<3}", f"bold {var('text-accent')}"), (f"{label:<11}", "bold"), desc]
        parts += [
            "\n\n",
            ("Mouse", "bold"),
            "\n  click tabs, rows, tree nodes, links; scroll with the wheel",
            "\n\n",
            ("Colours", "bold"),
            "\n  ",
            ("✗", var("text-error")),
            " failed / broken   ",
            ("▲", var("text-warning")),
            " warning   ",
            ("?", var("text-warning")),
            " not evaluated   ",
            ("✓ ●", var("text-success")),
            " passed / healthy   ○ gone",
            "\n  NO_COLOR=1 turns colours off; the marks stay.",
            "\n\n",
            ("Command palette", "bold"),
            "\n  : (or ctrl+p) jumps to a screen, a finding or another TrainJob, exports a Markdown report,"
            "\n  saves an SVG screenshot, switches the light/dark theme.",
        ]
        return Content.assemble(*parts)
