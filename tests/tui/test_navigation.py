"""Driving the app from example bundles: screens, keys, the picker, filters, evidence jumps."""

from __future__ import annotations

from pathlib import Path

from textual.widgets import DataTable, OptionList, Select

from ckpt_doctor.tui.app import DoctorApp
from ckpt_doctor.tui.screens.events import EventsScreen, cells
from ckpt_doctor.tui.screens.findings import FindingsScreen
from ckpt_doctor.tui.screens.help import HelpScreen
from ckpt_doctor.tui.screens.logs import LogsScreen
from ckpt_doctor.tui.screens.object import ObjectScreen
from ckpt_doctor.tui.screens.overview import OverviewScreen
from ckpt_doctor.tui.screens.picker import PickerScreen
from ckpt_doctor.tui.screens.timeline import TimelineScreen
from ckpt_doctor.tui.target import Target
from ckpt_doctor.tui.widgets.lineview import LineView
from ckpt_doctor.tui.widgets.objtree import ObjectTree
from ckpt_doctor.tui.widgets.rowtable import RowTable
from tests.tui.conftest import EXAMPLES, all_verdicts, bundle_app, screen_text, settle, settle_until


async def test_single_trainjob_bundle_opens_the_overview_with_the_verdict() -> None:
    app = bundle_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        assert isinstance(app.screen, OverviewScreen)
        assert app.current == "team-a/sft-resumable"
        text = screen_text(app)
        assert "final-checkpoint-missing" in text
        assert "sigterm-not-forwarded" in text
        assert "fix:" in text
        tree = app.screen.query_one(ObjectTree)
        labels = [str(n.label) for n in tree.root.children]
        assert any("JobSet" in x for x in labels)
        pods = [d for d in app.view.tree.walk() if d.kind == "Pod"]
        assert [p.health for p in pods] == ["bad", "warn"]


async def test_number_keys_switch_screens_and_escape_goes_back() -> None:
    app = bundle_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        for key, cls in (("2", FindingsScreen), ("3", TimelineScreen), ("4", LogsScreen), ("5", EventsScreen)):
            await pilot.press(key)
            await settle(pilot)
            assert isinstance(app.screen, cls), key
        # tabs replace each other above the overview: one escape returns to it
        await pilot.press("escape")
        await settle(pilot)
        assert isinstance(app.screen, OverviewScreen)
        await pilot.press("5", "1")
        await settle(pilot)
        assert isinstance(app.screen, OverviewScreen)
        assert sum(isinstance(s, OverviewScreen) for s in app.screen_stack) == 1


async def test_clicking_a_tab_in_the_navigation_bar() -> None:
    app = bundle_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await pilot.click("NavBar", offset=(18, 0))  # " 2 Findings ✗3 "
        await settle(pilot)
        assert isinstance(app.screen, FindingsScreen)


async def test_findings_are_failed_then_not_evaluated_then_passed() -> None:
    app = bundle_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await pilot.press("2")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, FindingsScreen)
        statuses = [f.status for f in screen.shown]
        assert statuses == sorted(statuses, key=["fail", "not_evaluated", "pass"].index)
        assert screen.current is not None and screen.current.id == "final-checkpoint-missing"
        text = screen_text(app)
        assert "FAILED (3)" in text and "PASSED (36)" in text
        await pilot.press("down")
        await settle(pilot)
        assert screen.current.id == "grace-period-too-short"
        assert "Rule graph" in screen_text(app)


async def test_evidence_jumps_to_the_cited_log_line() -> None:
    app = bundle_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await pilot.press("2", "e", "down", "enter")  # 2nd evidence: log …gxql2/node:57
        await settle(pilot)
        assert isinstance(app.screen, LogsScreen)
        lv = app.screen.query_one(LineView)
        assert lv.target == 56 and lv.cursor == 56
        assert app.screen.entry.key == ("sft-resumable-node-0-0-gxql2", "node", False)
        assert "480/1000" in lv.current_text()
        assert "line 57/59" in screen_text(app)
        await pilot.press("escape")
        await settle(pilot)
        assert isinstance(app.screen, FindingsScreen)


async def test_evidence_jumps_to_the_cited_field() -> None:
    app = bundle_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await pilot.press("2", "down", "down", "e", "enter")  # sigterm-not-forwarded: the args of the pod
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, ObjectScreen)
        assert screen.path == "spec.containers[name=node].args"
        lv = screen.query_one(LineView)
        assert lv.target is not None and lv.current_text().strip() == "args:"
        assert "Pod/team-a/sft-resumable-node-0-0-wgr2w" in screen_text(app)
        # the jump was made before the view had a height: the cited line still lands mid-screen
        h = lv.scrollable_content_region.height
        assert lv.scroll_offset.y == lv.target - h // 2


async def test_a_jump_before_the_layout_leaves_the_scrollbar_thumb_where_the_view_is() -> None:
    for size in ((80, 24), (160, 48)):
        app = bundle_app()
        async with app.run_test(size=size) as pilot:
            await settle(pilot)
            await pilot.press("2", "e", "down", "enter")  # a log line near the end of the log
            await settle(pilot)
            lv = app.screen.query_one(LineView)
            assert lv.scroll_offset.y > 0 and lv.show_vertical_scrollbar, size
            assert lv.vertical_scrollbar.position == lv.scroll_y, size


async def test_evidence_jumps_to_the_cited_event() -> None:
    app = bundle_app("rwo-multi-attach")
    async with app.run_test(size=(120, 30)) as pilot:
        await settle(pilot)
        view = app.view
        finding = next(
            f
            for f in view.findings
            if f.status == "fail" and any(e.jump and e.jump.screen == "event" for e in f.evidence)
        )
        app.open_finding(finding.id)
        await settle(pilot)
        screen = app.screen
        index = next(i for i, e in enumerate(screen.current.evidence) if e.jump and e.jump.screen == "event")
        await pilot.press("e", *["down"] * index, "enter")
        await settle(pilot)
        events = app.screen
        assert isinstance(events, EventsScreen)
        table = events.query_one(RowTable)
        row = events.rows[table.cursor]
        jump = screen.current.evidence[index].jump
        assert (row.object, row.reason) == (jump.ref, jump.reason)


async def test_overview_tree_opens_yaml_and_pod_logs() -> None:
    app = bundle_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        tree = app.screen.query_one(ObjectTree)
        node = tree.find_ref("Pod/team-a/sft-resumable-node-0-0-wgr2w")
        assert node is not None
        tree.move_cursor(node)
        await pilot.press("L")
        await settle(pilot)
        assert isinstance(app.screen, LogsScreen)
        assert app.screen.entry.key[0] == "sft-resumable-node-0-0-wgr2w"
        await pilot.press("escape", "y")
        await settle(pilot)
        assert isinstance(app.screen, ObjectScreen)
        assert app.screen.ref == "Pod/team-a/sft-resumable-node-0-0-wgr2w"


async def test_verdict_link_opens_the_finding() -> None:
    app = bundle_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await pilot.press("v")
        await settle(pilot)
        assert isinstance(app.screen, FindingsScreen)
        assert app.screen.current.id == "final-checkpoint-missing"


async def test_findings_filter() -> None:
    app = bundle_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await pilot.press("2", "slash", *"sigterm", "enter")
        await settle(pilot)
        screen = app.screen
        assert [f.id for f in screen.shown] == ["sigterm-not-forwarded", "sigterm-exit-zero"]
        assert app.focused is screen.query_one("#finding-list", OptionList)
        await pilot.press("escape")  # clears the filter first…
        await settle(pilot)
        assert len(screen.shown) == len(app.view.findings)
        assert isinstance(app.screen, FindingsScreen)
        await pilot.press("escape")  # …then goes back
        await settle(pilot)
        assert isinstance(app.screen, OverviewScreen)


async def test_timeline_shows_the_rewind_and_opens_an_attempt_log() -> None:
    app = bundle_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await pilot.press("3")
        await settle(pilot)
        text = screen_text(app)
        assert "a0 initial 0→480" in text and "a1 resumed 400→520" in text
        assert "✕" in text and "▲" in text and "◆" in text
        table = app.screen.query_one(DataTable)
        assert table.row_count == 2
        assert "80" in str(table.get_row_at(1)[3])  # 480 reached, resumed at 400
        await pilot.press("down", "enter")
        await settle(pilot)
        assert isinstance(app.screen, LogsScreen)
        assert app.screen.entry.key[0] == "sft-resumable-node-0-0-wgr2w"


async def test_logs_previous_toggle_search_and_cycle() -> None:
    app = bundle_app("no-failure-policy")  # a container restart: current and previous logs
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await pilot.press("4")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, LogsScreen)
        pod, container, prev = screen.entry.key
        await pilot.press("p")
        await settle(pilot)
        assert screen.entry.key == (pod, container, not prev)
        assert len(screen.query_one(Select)._options) >= 2
        lv = screen.query_one(LineView)
        await pilot.press("slash", *"saved", "enter")
        await settle(pilot)
        first = lv.cursor
        assert "saved" in lv.current_text()
        await pilot.press("n")
        await settle(pilot)
        assert lv.cursor != first and "saved" in lv.current_text()
        await pilot.press("N")
        await settle(pilot)
        assert lv.cursor == first
        before = screen.entry.key
        await pilot.press("right_square_bracket")
        await settle(pilot)
        assert screen.entry.key != before


async def test_events_sorted_newest_first_with_warnings_toggle() -> None:
    app = bundle_app("rwo-multi-attach")
    async with app.run_test(size=(120, 30)) as pilot:
        await settle(pilot)
        await pilot.press("5")
        await settle(pilot)
        screen = app.screen
        lasts = [r.last for r in screen.rows]
        assert lasts == sorted(lasts, reverse=True)
        total = len(screen.rows)
        table = screen.query_one(RowTable)
        assert table.rows == [cells(r) for r in screen.rows]  # built ahead, in the loading thread
        assert app.view.__dict__.get("_event_cells") is not None
        await pilot.press("w")
        await settle(pilot)
        assert all(r.type == "Warning" for r in screen.rows)
        assert len(screen.rows) <= total
        assert table.rows == [cells(r) for r in screen.rows]  # the kept cells, filtered alike
        assert "warnings only" in screen_text(app)
        await pilot.press("w")
        await settle(pilot)
        assert len(screen.rows) == total
        assert table.rows == [cells(r) for r in screen.rows]


async def test_a_verdict_arriving_changes_its_row_in_place(two_jobs: Path, monkeypatch) -> None:
    from dataclasses import replace

    app = DoctorApp(Target(bundle=two_jobs))
    async with app.run_test(size=(120, 30)) as pilot:
        await settle_until(pilot, lambda: all_verdicts(app))
        screen = app.screen
        assert isinstance(screen, PickerScreen)
        table = screen.query_one(DataTable)
        clears: list[int] = []
        monkeypatch.setattr(table, "clear", lambda *a, **k: clears.append(1))  # a refill would call it
        row = app.rows[0]
        screen.update_row(replace(row, verdict="✗ a new verdict"))
        await settle(pilot)
        assert clears == []
        assert str(table.get_cell(row.key, screen._columns[-1])) == "✗ a new verdict"


async def test_picker_lists_trainjobs_filters_and_opens_one(two_jobs: Path) -> None:
    app = DoctorApp(Target(bundle=two_jobs))
    async with app.run_test(size=(120, 30)) as pilot:
        await settle_until(pilot, lambda: all_verdicts(app))
        assert isinstance(app.screen, PickerScreen)
        keys = [r.key for r in app.rows]
        assert keys == ["team-a/llama-healthy", "team-a/sft-resumable"] or sorted(keys) == keys
        verdicts = {r.key: r.verdict for r in app.rows}
        assert verdicts["team-a/sft-resumable"].startswith("✗ final-checkpoint-missing")
        assert verdicts["team-a/llama-healthy"].startswith("✓")
        table = app.screen.query_one(DataTable)
        assert table.row_count == 2
        await pilot.press("slash", *"healthy", "enter")
        await settle(pilot)
        assert table.row_count == 1
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, OverviewScreen)
        assert app.current == "team-a/llama-healthy"
        assert "No failing symptom or cause" in screen_text(app)
        await pilot.press("0")
        await settle(pilot)
        assert isinstance(app.screen, PickerScreen)


async def test_trainjob_flag_opens_it_directly(two_jobs: Path) -> None:
    app = DoctorApp(Target(bundle=two_jobs, trainjob="sft-resumable"))
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        assert isinstance(app.screen, OverviewScreen)
        assert app.view is not None and app.view.key == "team-a/sft-resumable"


async def test_help_lists_the_keys_of_the_screen() -> None:
    app = bundle_app()
    async with app.run_test(size=(100, 60)) as pilot:
        await settle(pilot)
        await pilot.press("4")
        await settle(pilot)
        await pilot.press("question_mark")
        await settle(pilot)
        assert isinstance(app.screen, HelpScreen)
        text = screen_text(app)
        for word in ("Follow", "Search", "Refresh", "Screens", "NO_COLOR"):
            assert word in text, word
        await pilot.press("escape")
        await settle(pilot)
        assert isinstance(app.screen, LogsScreen)


async def test_command_palette_jumps_and_exports(tmp_path: Path) -> None:
    app = bundle_app()
    app.export_dir = tmp_path
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await pilot.press("colon", *"Go to Timeline")
        await settle(pilot)
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, TimelineScreen)
        await pilot.press("colon", *"Export report")
        await settle(pilot)
        await pilot.press("enter")
        await settle(pilot)
        report = tmp_path / "ckpt-doctor-team-a-sft-resumable.md"
        assert report.exists()
        assert "final-checkpoint-missing" in report.read_text()


async def test_refresh_rereads_the_bundle(tmp_path: Path) -> None:
    import shutil

    bundle = tmp_path / "b"
    shutil.copytree(EXAMPLES / "final-checkpoint-missing", bundle)
    app = DoctorApp(Target(bundle=bundle))
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        first = app.view
        assert first is not None and not first.gaps
        meta = bundle / "bundle.yaml"
        meta.write_text(meta.read_text() + "notCollected:\n- {what: events, reason: 'forbidden: cannot list events'}\n")
        await pilot.press("r")
        await settle(pilot)
        assert app.view is not first
        assert app.view.gaps == [("events", "forbidden: cannot list events")]
        level, text = app.status
        assert level == "warn" and "Partial data" in text and "events" in text
        assert "Partial data" in screen_text(app)


async def test_partial_bundle_shows_the_banner_and_why_not_evaluated(tmp_path: Path) -> None:
    import shutil

    bundle = tmp_path / "b"
    shutil.copytree(EXAMPLES / "final-checkpoint-missing", bundle)
    meta = bundle / "bundle.yaml"
    meta.write_text(meta.read_text() + "notCollected:\n- {what: logs, reason: 'forbidden: pods/log'}\n")
    app = DoctorApp(Target(bundle=bundle))
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        assert app.view.not_evaluated > 0
        assert "rule(s) not evaluated" in app.status[1]
        await pilot.press("2")
        await settle(pilot)
        screen = app.screen
        ne = [f for f in screen.shown if f.status == "not_evaluated"]
        assert ne and all("forbidden" in f.reason for f in ne)
        assert "NOT EVALUATED" in screen_text(app)


async def test_theme_toggle_and_no_color(monkeypatch) -> None:
    monkeypatch.setenv("NO_COLOR", "1")
    app = bundle_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        assert app.no_color
        assert "✗" in screen_text(app)  # the marks carry the meaning without colour
        dark = app.current_theme.dark
        await pilot.press("ctrl+t")
        await settle(pilot)
        assert app.current_theme.dark is not dark


async def test_missing_trainjob_shows_an_error_not_a_crash() -> None:
    app = DoctorApp(Target(bundle=EXAMPLES / "final-checkpoint-missing", trainjob="nope"))
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        level, text = app.status
        assert level == "error" and "nope" in text and "r retries" in text
        assert "TrainJob 'nope' not found" in " ".join(screen_text(app).split())
