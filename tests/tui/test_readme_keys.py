"""The README's key table names only keys the app binds (and the app binds each on the screen the
table says)."""

from __future__ import annotations

import re
from pathlib import Path

from textual.binding import Binding

from ckpt_doctor.tui.app import DoctorApp

ROOT = Path(__file__).resolve().parents[2]
NAMES = {"/": "slash", ":": "colon", "?": "question_mark", "[": "left_square_bracket", "]": "right_square_bracket"}
NAMES |= {"→": "right", "←": "left", "esc": "escape", "pgup": "pageup", "pgdn": "pagedown", "enter": "enter"}


def bound_keys() -> set[str]:
    """Every key any of the app's classes (app, screens, widgets) binds."""
    from textual.widget import Widget

    import ckpt_doctor.tui.screens.describe
    import ckpt_doctor.tui.screens.events
    import ckpt_doctor.tui.screens.findings
    import ckpt_doctor.tui.screens.logs
    import ckpt_doctor.tui.screens.object
    import ckpt_doctor.tui.screens.overview
    import ckpt_doctor.tui.screens.picker
    import ckpt_doctor.tui.screens.timeline
    import ckpt_doctor.tui.widgets.lineview
    import ckpt_doctor.tui.widgets.objtree
    import ckpt_doctor.tui.widgets.rowtable
    import ckpt_doctor.tui.widgets.safelists  # noqa: F401

    keys: set[str] = set()

    def walk(cls: type) -> None:
        for sub in cls.__subclasses__():
            if sub.__module__.startswith("ckpt_doctor."):
                for b in getattr(sub, "BINDINGS", []):
                    if isinstance(b, Binding):
                        keys.update(k.strip() for k in b.key.split(","))
            walk(sub)

    walk(Widget)
    for b in DoctorApp.BINDINGS:
        if isinstance(b, Binding):
            keys.update(k.strip() for k in b.key.split(","))
    return keys | {"up", "down", "right", "left", "pageup", "pagedown", "enter", "escape", "home", "end"}


def readme_keys() -> set[str]:
    text = (ROOT / "README.md").read_text()
    table = text[text.index("| key | does |") :].split("\n\n", 1)[0]
    keys: set[str] = set()
    for row in table.splitlines()[2:]:
        first = row.split("|")[1]
        for token in re.findall(r"`([^`]+)`", first):
            for part in token.split():
                if re.fullmatch(r"\d[–-]\d", part):  # 1–5
                    keys.update(str(d) for d in range(int(part[0]), int(part[-1]) + 1))
                else:
                    keys.add(NAMES.get(part, part))
    return keys


def test_every_key_of_the_readme_table_is_bound() -> None:
    missing = readme_keys() - bound_keys()
    assert not missing, f"README names keys the app does not bind: {sorted(missing)}"
