"""The lazy log view: a block index instead of the whole file, reads of just the lines on screen."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from textual.app import App, ComposeResult

from ckpt_doctor.snapshot import LogRef
from ckpt_doctor.tui import lines as L
from ckpt_doctor.tui.lines import FileLines, TextLines, WindowLines, source_for
from ckpt_doctor.tui.widgets.lineview import LineView, display_text
from tests.tui.conftest import settle


def _write(path: Path, n: int) -> list[str]:
    rows = [f"step {i} " + "x" * (i % 97) for i in range(n)]
    path.write_text("\n".join(rows) + "\n")
    return rows


def test_file_lines_index_reads_and_finds(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(L, "BLOCK", 4096)
    rows = _write(tmp_path / "a.log", 20_000)
    src = FileLines(tmp_path / "a.log")
    src.index()
    assert src.complete and src.count() == len(rows)
    assert len(src._starts) < len(rows) / 50  # an index of blocks, not of lines
    for i in (0, 1, 4095, 12_345, 19_999):
        assert src.lines(i, 3) == rows[i : i + 3]
    assert src.find("step 17000 ", 0) == 17000
    assert src.find("step 5 ", 19_000, backward=True) == 5
    assert src.find("no such text", 0) is None
    src.close()


def test_file_lines_follow_a_growing_log(tmp_path: Path) -> None:
    p = tmp_path / "g.log"
    p.write_text("one\ntwo\nthr")
    src = FileLines(p)
    src.index()
    assert src.lines(0, 5) == ["one", "two", "thr"]
    with p.open("a") as f:
        f.write("ee\nfour\n")
    src.index()
    assert src.lines(0, 5) == ["one", "two", "three", "four"]


def test_file_lines_clean_crlf_colours_and_cut_giant_lines(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(L, "BLOCK", 1024)
    monkeypatch.setattr(L, "MAX_BLOCK", 4096)
    p = tmp_path / "c.log"
    p.write_bytes(b"\x1b[32mgreen\x1b[0m\r\n" + b"y" * 10_000 + b"\nlast\n")
    src = FileLines(p)
    src.index()
    got = src.lines(0, 10)
    assert got[0] == "green"
    assert got[-1] == "last"
    assert sum(len(x) for x in got[1:-1]) == 10_000  # the giant line, cut into blocks


def test_window_lines_mark_the_gap() -> None:
    ref = LogRef("p", "node", False, head=b"a\nb\n", tail=b"partial\ny\nz\n", size=10_000)
    src = WindowLines(ref, window=12)
    shown = src.lines(0, 10)
    assert shown[:2] == ["a", "b"] and shown[-2:] == ["y", "z"]
    assert "not collected" in shown[2]
    assert src.number(0) == "1" and src.number(4) == ""


def test_source_for_prefers_the_file(tmp_path: Path) -> None:
    p = tmp_path / "x.log"
    p.write_text("hello\n")
    assert isinstance(source_for(LogRef("p", "c", False, path=p)), FileLines)
    assert isinstance(source_for(LogRef("p", "c", False, head=b"hello\n")), WindowLines)


def test_display_text_shows_what_a_terminal_shows() -> None:
    tqdm = " 10%|█| 10/100\r 20%|██| 20/100\r 30%|███| 30/100"
    assert display_text(tqdm) == " 30%|███| 30/100"
    assert display_text(tqdm, ["20/100"]) == " 20%|██| 20/100"
    assert display_text("a\tb") == "a   b"
    assert display_text("bell\x07") == "bell�"


class _Viewer(App):
    def __init__(self, source) -> None:
        super().__init__()
        self.source = source

    def compose(self) -> ComposeResult:
        yield LineView(self.source, id="v")


async def test_line_view_renders_a_big_log_lazily(tmp_path: Path) -> None:
    """200 000 lines (~15 MB): the view indexes in a worker, jumps, searches, and reads only
    the blocks it shows."""
    p = tmp_path / "big.log"
    with p.open("w") as f:
        for i in range(200_000):
            what = f"[checkpoint] saved /ckpt/checkpoint-{i}" if i % 50_000 == 0 else "loss 1.23"
            f.write(f"{i:>7} {what}\n")
    src = FileLines(p)
    reads: list[int] = []
    real = os.pread

    def counting(fd: int, n: int, off: int) -> bytes:
        reads.append(n)
        return real(fd, n, off)

    L.os.pread = counting  # type: ignore[attr-defined]
    try:
        app = _Viewer(src)
        async with app.run_test(size=(80, 20)) as pilot:
            await settle(pilot)
            v = app.query_one(LineView)
            assert v.line_count == 200_000 and src.complete
            indexing = sum(reads)
            reads.clear()
            v.set_source(src, line=150_001)
            await settle(pilot)
            assert v.cursor == 150_000 and "150000" in v.current_text()
            assert sum(reads) <= 2 * L.BLOCK  # one block or two for the lines on screen
            v.search("checkpoint-100000")
            await settle(pilot)
            assert v.cursor == 100_000
            await pilot.press("G")
            await settle(pilot)
            assert v.cursor == 199_999
            assert indexing >= p.stat().st_size  # the index read the file once, in blocks
    finally:
        L.os.pread = real  # type: ignore[attr-defined]


async def test_line_view_jump_to_text_when_the_line_is_unknown() -> None:
    src = TextLines([f"line {i}" for i in range(100)] + ["[checkpoint] resuming from /c/checkpoint-9"])
    app = _Viewer(src)
    async with app.run_test(size=(60, 10)) as pilot:
        await settle(pilot)
        v = app.query_one(LineView)
        v.set_source(src, text="resuming from /c/checkpoint-9")
        await settle(pilot)
        assert v.target == 100 and v.cursor == 100


async def test_a_text_source_gives_the_view_its_full_width_before_any_line_is_drawn() -> None:
    long = "x" * 150
    src = TextLines([f"line {i}" for i in range(200)] + [f"\t{long}", f"{long}\r{long}"])
    assert src.widest() == 154  # the tab expanded to 4 columns; each carriage-return segment measured apart
    app = _Viewer(TextLines(["a"]))
    async with app.run_test(size=(60, 10)) as pilot:
        await settle(pilot)
        v = app.query_one(LineView)
        v.set_source(src)  # the long lines are far below the screen: never drawn
        await settle(pilot)
        assert v.virtual_size.width == v.gutter_width + 154
        assert v.show_horizontal_scrollbar
