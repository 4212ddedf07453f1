"""The collector is paused while the app starts and resumes once its first frame is painted."""

from __future__ import annotations

import gc

from ckpt_doctor.tui import source
from ckpt_doctor.tui.app import DoctorApp
from ckpt_doctor.tui.target import Target
from tests.tui.conftest import EXAMPLES


def test_a_startup_hold_is_released_once_and_nests_with_a_loading_hold() -> None:
    assert gc.isenabled()
    hold = source.StartupGc()
    try:
        assert not gc.isenabled()
        with source.quiet_gc():  # a big result unpickled while the app starts
            assert not gc.isenabled()
        assert not gc.isenabled()  # the start still holds it
        hold.release()
        assert gc.isenabled()
        hold.release()  # released once: a second call (the caller's `finally`) changes nothing
        assert gc.isenabled() and source._gc_holds == 0
    finally:
        hold.release()
        gc.enable()


async def test_the_app_says_when_its_first_frame_is_painted() -> None:
    calls: list[bool] = []
    app = DoctorApp(
        Target(bundle=EXAMPLES / "final-checkpoint-missing"), painted=lambda: calls.append(app._dom_ready)
    )
    async with app.run_test(size=(80, 24)) as pilot:
        for _ in range(200):
            if calls:
                break
            await pilot.pause(0.02)
        await pilot.pause(0.1)
    assert calls == [True]  # once, after the first frame
