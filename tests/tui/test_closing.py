"""A screen's body says it is mounted by a message; when the screen is removed (or the app closes) before that
message is handled, its widgets are already going: setting up is skipped instead of failing on a widget that
is gone (NoMatches '#verdict' on OverviewScreen, seen when a test closed the app right after its first frame)."""

from __future__ import annotations

from typing import Any

from ckpt_doctor.tui.app import DoctorApp
from ckpt_doctor.tui.screens.base import Body, Frame
from ckpt_doctor.tui.target import Target
from tests.tui.conftest import EXAMPLES


async def _going(app: DoctorApp, pilot: Any) -> Frame:
    """The app's first screen once it is ready, then as Textual leaves a screen it is removing: its body's
    children gone first, the screen marked as pruning (the caller puts the mark back)."""
    for _ in range(200):
        if isinstance(app.screen, Frame) and app.screen.ready:
            break
        await pilot.pause(0.02)
    screen = app.screen
    assert isinstance(screen, Frame) and screen.ready
    for child in list(screen.query_one(Body).children):
        await child.remove()
    screen._pruning = True
    return screen


async def test_a_body_mounted_message_on_a_screen_being_removed_sets_nothing_up() -> None:
    app = DoctorApp(Target(bundle=EXAMPLES / "final-checkpoint-missing"))
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await _going(app, pilot)
        screen.ready = False
        try:
            screen.post_message(Body.Mounted())
            await pilot.pause()
            await pilot.pause()
            assert not screen.ready
        finally:
            screen._pruning = False


async def test_a_listing_that_arrives_while_the_screen_is_going_fills_nothing() -> None:
    """The TrainJobs' listing (a worker's result) handled after the picker began to go: no screen is given rows
    (NoMatches '#jobs' on PickerScreen, seen once at the end of a test)."""
    from ckpt_doctor.tui.app import RowsLoaded

    app = DoctorApp(Target(bundle=EXAMPLES / "final-checkpoint-missing"))
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await _going(app, pilot)
        try:
            assert app._ready_screens(type(screen)) == []
            app.post_message(RowsLoaded([], None))
            await pilot.pause()
            await pilot.pause()
        finally:
            screen._pruning = False
