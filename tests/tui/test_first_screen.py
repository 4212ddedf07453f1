"""The first screen's body (tables, tree) is mounted after the first frame, so the frame needs less
style work; whatever the app learnt before the body was there must still reach it."""

from __future__ import annotations

from pathlib import Path

from textual.widgets import DataTable, Static

from ckpt_doctor.tui.app import DoctorApp
from ckpt_doctor.tui.screens.overview import OverviewScreen
from ckpt_doctor.tui.screens.picker import PickerScreen
from ckpt_doctor.tui.source import Loader
from ckpt_doctor.tui.target import Target
from ckpt_doctor.tui.widgets.objtree import ObjectTree
from ckpt_doctor.tui.widgets.verdict import VerdictPanel
from tests.tui.conftest import EXAMPLES, bundle_app, screen_text, settle


class Never(Loader):
    """A source that fails at once: the screens show why."""

    def __init__(self) -> None:
        self.target = Target(bundle=EXAMPLES / "final-checkpoint-missing")

    def list_jobs(self) -> list:
        raise RuntimeError("listing refused")

    def load(self, key: str):
        raise RuntimeError("diagnosis refused")


async def test_the_first_screen_mounts_without_its_body_and_the_body_follows(monkeypatch) -> None:
    from ckpt_doctor.tui import app as app_module

    seen: dict[str, bool] = {}

    class Probe(PickerScreen):
        def on_mount(self) -> None:  # after compose, before the first refresh draws the screen
            seen["header"] = bool(self.query("Header"))
            seen["table"] = bool(self.query(DataTable))
            seen["ready"] = self.ready

    monkeypatch.setattr(app_module, "picker", lambda: Probe)
    app = DoctorApp(Target(bundle=EXAMPLES / "final-checkpoint-missing"), loader=Never())
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        assert isinstance(app.screen, Probe)
        assert seen == {"header": True, "table": False, "ready": False}
        assert app.screen.ready and app.screen.query_one("#jobs", DataTable).has_focus
        title = str(app.screen.query_one("#picker-title", Static).render())
        assert title.startswith("Could not list the TrainJobs")  # the body knows the listing failed


async def test_a_lazy_picker_shows_rows_the_app_already_had(two_jobs: Path) -> None:
    app = DoctorApp(Target(bundle=two_jobs))
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        assert app.rows and len(app.rows) == 2
        app.push_screen(PickerScreen(lazy=True))  # its body mounts after the rows arrived
        await settle(pilot)
        table = app.screen.query_one("#jobs", DataTable)
        assert table.row_count == 2
        assert "2 of 2 TrainJob(s)" in screen_text(app)


async def test_a_lazy_overview_shows_the_diagnosis_the_app_already_had() -> None:
    app = bundle_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        assert app.view is not None
        app.push_screen(OverviewScreen(lazy=True))
        await settle(pilot)
        assert app.screen.ready
        panel = app.screen.query_one("#verdict", VerdictPanel)
        assert panel.border_title == f"Verdict · {app.view.key}"  # filled by setup(), not a message
        assert app.screen.query_one(ObjectTree).root.children


async def test_a_lazy_overview_shows_a_failure_that_came_first() -> None:
    app = DoctorApp(Target(bundle=EXAMPLES / "final-checkpoint-missing", trainjob="team-a/x"), loader=Never())
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        assert app.error and not app.busy
        app.push_screen(OverviewScreen(lazy=True))
        await settle(pilot)
        panel = app.screen.query_one("#verdict", VerdictPanel)
        shown = " ".join(str(w.render()) for w in panel.query(Static))
        assert shown.startswith("✗ Could not diagnose") and "diagnosis refused" in shown


async def test_keys_typed_before_the_body_is_mounted_are_ignored_not_a_crash() -> None:
    app = bundle_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        for screen, action in ((OverviewScreen(lazy=True), "yaml"), (PickerScreen(lazy=True), "filter")):
            app.push_screen(screen)
            # at once, as a key typed ahead would: the body (the tree, the filter bar) is not there yet
            assert not screen.ready
            assert await app.run_action(action, default_namespace=screen) is False
            await settle(pilot)
            assert screen.ready and screen.check_action(action, ()) is True
        assert app.is_running
