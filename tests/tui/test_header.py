"""The header's title follows the app's and the screen's, and a title set while the app closes (its title widget
already removed) is no error: Textual's own Header failed there with NoMatches, once in a fresh-clone run of
tests/tui/test_startup_gc.py. The strict xfail on Textual's Header says when a Textual release no longer needs
DoctorHeader."""

from __future__ import annotations

import pytest
from textual.app import App, ComposeResult
from textual.widgets import Header
from textual.widgets._header import HeaderTitle

from ckpt_doctor.tui.widgets.header import DoctorHeader


class _One(App[None]):
    def __init__(self, header: type[Header]) -> None:
        super().__init__()
        self.header = header

    def compose(self) -> ComposeResult:
        yield self.header()


async def test_the_title_follows_the_app_and_the_screen() -> None:
    app = _One(DoctorHeader)
    async with app.run_test(size=(80, 24)) as pilot:
        app.title, app.sub_title = "ckpt-doctor", "pick a TrainJob"
        await pilot.pause()
        shown = str(app.query_one(HeaderTitle).render())
        assert "ckpt-doctor" in shown and "pick a TrainJob" in shown
        app.screen.sub_title = "ml/sft-resumable"
        await pilot.pause()
        assert "ml/sft-resumable" in str(app.query_one(HeaderTitle).render())


@pytest.mark.parametrize("header", [DoctorHeader, pytest.param(Header, marks=pytest.mark.xfail(strict=True))])
async def test_a_title_set_once_the_title_widget_is_gone_is_no_error(header: type[Header]) -> None:
    app = _One(header)
    async with app.run_test(size=(80, 24)) as pilot:
        await app.query_one(HeaderTitle).remove()  # as when the app closes: children go first
        app.sub_title = "a diagnosis loaded as the app exits"
        await pilot.pause()
        await pilot.pause()
