"""The Logs screen keeps each log's place and index, says things about the log they are about,
shows what a terminal would of progress bars, and wraps long lines on demand."""

from __future__ import annotations

import shutil
from pathlib import Path

from textual.app import App, ComposeResult

from ckpt_doctor.tui.app import DoctorApp
from ckpt_doctor.tui.lines import FileLines, TextLines
from ckpt_doctor.tui.screens.logs import LogsScreen
from ckpt_doctor.tui.target import Target
from ckpt_doctor.tui.widgets.lineview import LineView, display_text
from tests.tui.conftest import EXAMPLES, screen_text, settle, settle_until

BAR = "\r".join(f" {p}%|{'█' * (p // 10)}| {p * 10}/1000 [00:{p:02d}<01:00, 1.84it/s]" for p in (10, 20, 30, 40))


def big_bundle(tmp_path: Path, lines: int = 30_000) -> Path:
    """final-checkpoint-missing with one log grown large (more than one index block)."""
    root = tmp_path / "b"
    shutil.copytree(EXAMPLES / "final-checkpoint-missing", root)
    log = next((root / "logs").glob("*gxql2/node.log"))
    text = log.read_text()
    log.write_text(text + "".join(f"[rank0] step filler line {i} " + "x" * 40 + "\n" for i in range(lines)))
    return root


async def test_returning_to_a_log_keeps_its_place_and_its_index(tmp_path: Path) -> None:
    app = DoctorApp(Target(bundle=big_bundle(tmp_path)))
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await pilot.press("4")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, LogsScreen)
        big = next(e for e in screen._options if e.key[0].endswith("gxql2") and not e.key[2])
        screen.open(big.key)
        lv = screen.lines
        await settle_until(pilot, lambda: lv.source.complete)
        source = lv.source
        assert isinstance(source, FileLines) and source.count() > 30_000
        lv.goto(20_000)
        await settle(pilot)
        place = lv.place()
        other = next(e for e in screen._options if e.key != big.key)
        screen.open(other.key)
        await settle(pilot)
        assert lv.source is not source
        screen.open(big.key)
        await settle(pilot)
        assert lv.source is source and source.complete  # the same index: nothing read again
        assert lv.cursor == 20_000 and lv.place() == place
        assert "line 20001/" in screen_text(app)


async def test_a_search_message_belongs_to_its_log() -> None:
    app = DoctorApp(Target(bundle=EXAMPLES / "final-checkpoint-missing"))
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await pilot.press("4", "slash", *"zzznotthere", "enter")
        await settle_until(pilot, lambda: "not found" in screen_text(app))
        await pilot.press("right_square_bracket")
        await settle(pilot)
        assert "not found" not in screen_text(app)
        assert app.screen.lines.needle == ""  # type: ignore[attr-defined]
        await pilot.press("left_square_bracket")  # back: its search is still there, its message is not
        await settle(pilot)
        assert app.screen.lines.needle == "zzznotthere"  # type: ignore[attr-defined]


def test_a_progress_bar_shows_its_last_segment_even_when_searched() -> None:
    assert display_text(BAR).startswith(" 40%")
    assert display_text(BAR, ["it/s"]).startswith(" 40%")  # every segment matches: the last one shows
    assert display_text(BAR, ["200/1000"]).startswith(" 20%")  # only an earlier one: that one


class _One(App[None]):
    def __init__(self, lines: list[str]) -> None:
        super().__init__()
        self._lines = lines

    def compose(self) -> ComposeResult:
        yield LineView(TextLines(self._lines), id="v")


async def test_wrap_folds_long_lines_and_keeps_the_cursor_in_view() -> None:
    long = "start " + "word " * 60 + "end"
    rows = [f"line {i}" for i in range(40)] + [long] + [f"after {i}" for i in range(40)]
    app = _One(rows)
    async with app.run_test(size=(60, 12)) as pilot:
        lv = app.query_one(LineView)
        await settle(pilot)
        lv.goto(40)
        await settle(pilot)
        assert "end" not in screen_text(app)  # cut: the end is off to the right
        lv.wrap = True
        await settle(pilot)
        text = screen_text(app)
        assert "start" in text and "end" in text and "↪" in text
        assert lv.virtual_size.width <= lv.size.width  # no sideways scrolling when wrapped
        for _ in range(15):
            await pilot.press("j")
        await settle(pilot)
        assert lv.cursor == 55 and "after 14" in screen_text(app)
        await pilot.press("G")
        await settle(pilot)
        assert "after 39" in screen_text(app)
        await pilot.press("g")
        await settle(pilot)
        assert "line 0" in screen_text(app)
        lv.wrap = False
        await settle(pilot)
        assert "↪" not in screen_text(app)


async def test_w_toggles_wrap_on_the_logs_screen() -> None:
    app = DoctorApp(Target(bundle=EXAMPLES / "final-checkpoint-missing"))
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("4", "w")
        await settle(pilot)
        assert app.screen.lines.wrap and "wrapped" in screen_text(app)  # type: ignore[attr-defined]
        await pilot.press("w")
        await settle(pilot)
        assert not app.screen.lines.wrap  # type: ignore[attr-defined]
