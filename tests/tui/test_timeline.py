"""The Timeline screen: the rewind is on screen with its label, enter opens the attempt's log at the line
that says how it began, and the palette's export writes what `ckpt-doctor report -o markdown` writes."""

from __future__ import annotations

from pathlib import Path

from textual.widgets import DataTable

from ckpt_doctor.tui.app import DoctorApp
from ckpt_doctor.tui.target import Target
from ckpt_doctor.tui.widgets.stepchart import REDO, StepChart
from tests.clirun import run_cli
from tests.tui.conftest import EXAMPLES, bundle_app, loader_for, screen_text, settle


async def test_the_rewind_is_a_labelled_cliff() -> None:
    app = bundle_app("lexical-sort-older")
    async with app.run_test(size=(120, 30)) as pilot:
        await settle(pilot)
        await pilot.press("3")
        await settle(pilot)
        text = screen_text(app)
        assert "a1: ↓ ≥ 1020 → 950, ≥ 70 steps lost" in text
        assert "70 (older ckpt)" in text
        chart = app.screen.query_one(StepChart)
        content = chart.render()
        cliffs = [sp for sp in content.spans if content.plain[sp.start : sp.end] == "│" and str(sp.style) == REDO]
        assert cliffs, "the cliff is drawn in the rewind colour"


async def test_enter_opens_the_log_at_the_resume_line() -> None:
    app = bundle_app("lexical-sort-older")
    opened: list[tuple] = []
    async with app.run_test(size=(120, 30)) as pilot:
        await settle(pilot)
        await pilot.press("3")
        await settle(pilot)
        original = app.open_log

        def spy(key, line=None, text=""):  # type: ignore[no-untyped-def]
            opened.append((key, line, text))
            original(key, line, text)

        app.open_log = spy  # type: ignore[method-assign]
        table = app.screen.query_one("#attempts", DataTable)
        table.focus()
        table.move_cursor(row=1)
        await pilot.press("enter")
        await settle(pilot)
        [(key, line, text)] = opened
        assert key[0].startswith("sft-resumable-node-0-0-") and key[1:] == ("node", False)
        assert line == 2 and "resuming from /mnt/ckpt/sft-resumable/checkpoint-950" in text
        assert "resuming from /mnt/ckpt/sft-resumable/checkpoint-950" in screen_text(app)


async def test_palette_export_is_the_report_command(tmp_path: Path) -> None:
    example = "final-checkpoint-missing"
    app = DoctorApp(Target(bundle=EXAMPLES / example), loader=loader_for(example), export_dir=tmp_path / "app")
    (tmp_path / "app").mkdir()
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        app.action_export_report()
        await settle(pilot)
    name = "ckpt-doctor-team-a-sft-resumable.md"
    exported = tmp_path / "app" / name
    (tmp_path / "cli").mkdir()
    out = str(tmp_path / "cli" / name)
    r = run_cli(["report", "--bundle", str(EXAMPLES / example), "-o", "markdown", "--out", out])
    assert r.rc == 0, r.err
    assert exported.read_text() == (tmp_path / "cli" / name).read_text()
    for chart in ("ckpt-doctor-team-a-sft-resumable-chart.svg", "ckpt-doctor-team-a-sft-resumable-chart.png"):
        assert (tmp_path / "app" / chart).read_bytes() == (tmp_path / "cli" / chart).read_bytes()
    assert "## Timeline" in exported.read_text() and "↓ ≥ 480 → 400, ≥ 80 steps lost" in exported.read_text()
