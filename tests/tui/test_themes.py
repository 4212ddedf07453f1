"""Every selected or focused state reads in the dark and the light theme (measured: the WCAG
contrast of the text the row is drawn with), and under NO_COLOR the marks still say it all."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.widget import Widget
from textual.widgets import DataTable, OptionList

from ckpt_doctor.tui.app import DoctorApp
from ckpt_doctor.tui.target import Target
from ckpt_doctor.tui.widgets.lineview import LineView
from ckpt_doctor.tui.widgets.objtree import ObjectTree
from ckpt_doctor.tui.widgets.rowtable import RowTable
from tests.tui.conftest import all_verdicts, bundle_app, settle, settle_until
from tests.tui.contrast import row_contrast

THEMES = ["textual-dark", "textual-light"]
READABLE = 4.5  # WCAG AA for body text


def _row_of(widget: Widget, line: int) -> int:
    return line - int(widget.scroll_offset.y)


async def _states(app: DoctorApp, pilot) -> dict[str, tuple[float, str]]:
    """The contrast of each selected/focused state the app has, visited in turn."""
    out: dict[str, tuple[float, str]] = {}
    tree = app.screen.query_one(ObjectTree)
    for line in range(min(8, tree.last_line + 1)):  # every health the example has on the cursor
        tree.cursor_line = line
        await settle(pilot, 1)
        out[f"tree cursor on line {line}"] = row_contrast(tree, _row_of(tree, line))
    await pilot.press("2")
    await settle(pilot)
    fl = app.screen.query_one("#finding-list", OptionList)
    for _ in range(3):  # a failed finding, another, a passed one further down
        line = fl._index_to_line[fl.highlighted or 0]
        out[f"findings highlight {fl.highlighted}"] = row_contrast(fl, _row_of(fl, line))
        await pilot.press("j")
        await settle(pilot, 1)
    await pilot.press("e")
    await settle(pilot, 1)
    ev = app.screen.query_one("#evidence", OptionList)
    out["evidence highlight"] = row_contrast(ev, _row_of(ev, ev._index_to_line[ev.highlighted or 0]))
    await pilot.press("3")
    await settle(pilot)
    at = app.screen.query_one("#attempts", DataTable)
    at.focus()
    await settle(pilot, 1)
    out["attempts cursor"] = row_contrast(at, at.cursor_row + 1 - int(at.scroll_offset.y))
    await pilot.press("4")
    await settle(pilot)
    lv = app.screen.query_one(LineView)
    out["log cursor"] = row_contrast(lv, _row_of(lv, lv.cursor))
    await pilot.press("slash", *"resum", "enter")
    await settle_until(pilot, lambda: not lv.searching)
    out["log search hit on the cursor"] = row_contrast(lv, _row_of(lv, lv.cursor))
    lv.target = lv.cursor
    lv.refresh()
    await settle(pilot, 1)
    out["log cited line"] = row_contrast(lv, _row_of(lv, lv.cursor))
    await pilot.press("slash", *"abc")
    await settle(pilot, 1)
    bar = app.screen.query_one("#search")
    out["search text while typing"] = row_contrast(bar, 0)
    return out


@pytest.mark.parametrize("theme", [*THEMES, "no-color"])
async def test_selected_and_focused_states_are_readable(theme: str, monkeypatch: pytest.MonkeyPatch) -> None:
    if theme == "no-color":  # Textual draws in greys: the cursor must still stand out and read
        monkeypatch.setenv("NO_COLOR", "1")
        theme = THEMES[0]
    app = bundle_app("rwo-multi-attach")
    async with app.run_test(size=(120, 40)) as pilot:
        app.theme = theme
        await settle(pilot)
        states = await _states(app, pilot)
    bad = {k: (round(r, 2), t) for k, (r, t) in states.items() if r < READABLE}
    assert not bad, f"{theme}: unreadable {bad}"


@pytest.mark.parametrize("theme", THEMES)
async def test_the_picker_and_event_cursors_are_readable(theme: str, two_jobs: Path) -> None:
    app = DoctorApp(Target(bundle=two_jobs))
    async with app.run_test(size=(120, 40)) as pilot:
        app.theme = theme
        await settle_until(pilot, lambda: all_verdicts(app))
        table = app.screen.query_one("#jobs", DataTable)
        rows = {
            f"picker row {i}": row_contrast(table, i + 1)
            for i in range(table.row_count)
            if not table.move_cursor(row=i)
        }
        await pilot.press("enter")
        await settle(pilot)
        await pilot.press("5")
        await settle(pilot)
        events = app.screen.query_one(RowTable)
        if events.row_count:
            rows["events cursor"] = row_contrast(events, 1 + events.cursor - int(events.scroll_offset.y))
    bad = {k: (round(r, 2), t) for k, (r, t) in rows.items() if r < READABLE}
    assert not bad, f"{theme}: unreadable {bad}"
