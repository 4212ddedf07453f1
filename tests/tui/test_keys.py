"""The keys a k9s user reaches for: j/k/g/G in every list and tree, →/← and l/h in the tree, d
describes, ctrl+c quits, `:pods` and friends are commands, the picker matches fuzzily, and what is
typed in a filter shows while it is typed."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.widgets import DataTable, OptionList

from ckpt_doctor.tui.app import DoctorApp
from ckpt_doctor.tui.screens.describe import DescribeScreen
from ckpt_doctor.tui.screens.events import EventsScreen
from ckpt_doctor.tui.screens.findings import FindingsScreen
from ckpt_doctor.tui.screens.logs import LogsScreen
from ckpt_doctor.tui.screens.object import ObjectScreen
from ckpt_doctor.tui.screens.overview import OverviewScreen
from ckpt_doctor.tui.screens.picker import PickerScreen
from ckpt_doctor.tui.screens.timeline import TimelineScreen
from ckpt_doctor.tui.target import Target
from ckpt_doctor.tui.widgets.objtree import ObjectTree
from tests.tui.conftest import all_verdicts, bundle_app, screen_text, settle, settle_until

POD = "Pod/team-a/sft-resumable-node-0-0-gxql2"


async def test_j_k_g_G_move_in_the_tree() -> None:
    app = bundle_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        tree = app.screen.query_one(ObjectTree)
        assert tree.has_focus and tree.cursor_line == 0
        await pilot.press("j", "j")
        assert tree.cursor_line == 2
        await pilot.press("k")
        assert tree.cursor_line == 1
        await pilot.press("G")
        assert tree.cursor_line == tree.last_line
        await pilot.press("g")
        assert tree.cursor_line == 0


async def test_arrows_and_l_h_open_and_fold_tree_nodes() -> None:
    app = bundle_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        tree = app.screen.query_one(ObjectTree)
        node = tree.find_ref(POD)
        assert node is not None and node.is_expanded  # a small job starts open: its claim shows
        tree.move_cursor(node)
        await pilot.press("left")
        assert not node.is_expanded and tree.cursor_node is node
        await pilot.press("left")  # folded: ← goes to the parent
        assert tree.cursor_node is node.parent
        tree.move_cursor(node)
        await pilot.press("l")
        assert node.is_expanded and tree.cursor_node is node
        await pilot.press("l")  # open: → goes to the first child
        assert tree.cursor_node is node.children[0]
        await pilot.press("h", "h")
        assert tree.cursor_node is node
        await pilot.press("h")
        assert not node.is_expanded


async def test_small_job_starts_open_and_a_large_one_folded(tmp_path: Path) -> None:
    from ckpt_doctor.tui import model

    app = bundle_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        pods = [n for n in app.view.tree.walk() if n.kind == "Pod"]
        assert pods and all(p.expand for p in pods)
        assert len(pods) <= model.SMALL_JOB


async def test_j_k_in_the_findings_and_the_evidence_lists() -> None:
    app = bundle_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await pilot.press("2")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, FindingsScreen)
        first = screen.current.id
        await pilot.press("j")
        await settle(pilot)
        assert screen.current.id != first
        await pilot.press("k")
        await settle(pilot)
        assert screen.current.id == first
        await pilot.press("e", "j")  # the issue's `e j j j enter` opened the first item
        ev = screen.query_one("#evidence", OptionList)
        assert ev.has_focus and ev.highlighted == 1
        await pilot.press("G")
        assert ev.highlighted == ev.option_count - 1
        await pilot.press("g")
        assert ev.highlighted == 0


async def test_j_k_in_the_picker_and_the_attempts_table(two_jobs: Path) -> None:
    app = DoctorApp(Target(bundle=two_jobs))
    async with app.run_test(size=(100, 30)) as pilot:
        await settle_until(pilot, lambda: all_verdicts(app))
        table = app.screen.query_one("#jobs", DataTable)
        assert table.cursor_row == 0
        await pilot.press("j")
        assert table.cursor_row == 1
        await pilot.press("k")
        assert table.cursor_row == 0
        await pilot.press("G")
        assert table.cursor_row == table.row_count - 1


async def test_d_describes_the_selected_object_with_its_events() -> None:
    app = bundle_app()
    async with app.run_test(size=(120, 60)) as pilot:
        await settle(pilot)
        tree = app.screen.query_one(ObjectTree)
        tree.move_cursor(tree.find_ref(POD))
        await pilot.press("d")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, DescribeScreen) and screen.ref == POD
        text = screen_text(app)
        for word in ("Name:", "Namespace:", "Containers:", "State:", "exit code 137", "Volumes:", "Events:"):
            assert word in text, word
        await pilot.press("y")
        await settle(pilot)
        assert isinstance(app.screen, ObjectScreen) and app.screen.ref == POD
        await pilot.press("escape", "escape")
        await settle(pilot)
        assert isinstance(app.screen, OverviewScreen)


async def test_d_on_an_event_describes_its_object() -> None:
    app = bundle_app("rwo-multi-attach")
    async with app.run_test(size=(120, 60)) as pilot:
        await settle(pilot)
        await pilot.press("5")
        await settle(pilot)
        row = app.screen.rows[0]  # type: ignore[attr-defined]
        await pilot.press("d")
        await settle(pilot)
        assert isinstance(app.screen, DescribeScreen)
        assert app.screen.ref.split("/")[-1] == row.object.split("/")[-1]
        assert row.reason in screen_text(app)  # its events, the selected one among them


async def test_ctrl_c_quits() -> None:
    app = bundle_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("ctrl+c")
        await pilot.pause()
    assert app.return_code == 0


@pytest.mark.parametrize(
    ("typed", "screen"),
    [
        ("pods", OverviewScreen),
        (":pod", OverviewScreen),
        ("events", EventsScreen),
        ("logs", LogsScreen),
        ("findings", FindingsScreen),
        ("timeline", TimelineScreen),
        ("yaml", ObjectScreen),
        ("describe", DescribeScreen),
    ],
)
async def test_k9s_commands_in_the_palette_come_before_fuzzy_matches(typed: str, screen: type) -> None:
    app = bundle_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await pilot.press("2")  # somewhere else first
        await settle(pilot)
        await pilot.press("colon", *typed)
        await settle(pilot)
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, screen), typed
        if typed in ("pods", ":pod"):
            node = app.screen.query_one(ObjectTree).cursor_node
            assert node is not None and node.data is not None and node.data.kind == "Pod"


async def test_q_in_the_palette_quits() -> None:
    app = bundle_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await pilot.press("colon", "q")
        await settle(pilot)
        await pilot.press("enter")
        await pilot.pause()
    assert app.return_code == 0


async def test_the_picker_matches_fuzzily(two_jobs: Path) -> None:
    app = DoctorApp(Target(bundle=two_jobs))
    async with app.run_test(size=(100, 30)) as pilot:
        await settle_until(pilot, lambda: all_verdicts(app))
        assert isinstance(app.screen, PickerScreen)
        await pilot.press("slash", *"lmhlthy")  # llama-healthy, not a substring
        await settle(pilot)
        table = app.screen.query_one("#jobs", DataTable)
        assert table.row_count == 1
        assert "llama-healthy" in screen_text(app)


@pytest.mark.parametrize("keys", [("2", "slash"), ("5", "slash"), ("4", "slash")])
async def test_what_is_typed_in_a_filter_or_search_shows_while_typing(keys: tuple[str, ...]) -> None:
    app = bundle_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press(*keys, *"sigq")
        await settle(pilot)
        bottom = screen_text(app).splitlines()[-2]
        assert "sigq" in bottom, screen_text(app)


async def test_keys_typed_before_a_screen_is_ready_are_not_lost() -> None:
    from textual import events

    app = bundle_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        # as from a fast typist on a loaded machine: all queued before the Findings body exists
        for key in ("2", "e", "j", "enter"):
            app.post_message(events.Key(key, key if len(key) == 1 else None))
        await settle(pilot)
        assert isinstance(app.screen, LogsScreen)  # the second evidence item of the finding: a log line
        assert app.screen.entry.key[0] == "sft-resumable-node-0-0-gxql2"
