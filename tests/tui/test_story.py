"""The app tells the diagnosis's story (issue 22): it opens every log the diagnosis reads, says where it
looked when it finds no TrainJob, and refuses what `diagnose` refuses before it takes the screen."""

from __future__ import annotations

from pathlib import Path

from ckpt_doctor.tui.app import DoctorApp
from ckpt_doctor.tui.screens.logs import LogsScreen
from ckpt_doctor.tui.screens.picker import PickerScreen
from ckpt_doctor.tui.target import Target
from tests.clirun import run_cli
from tests.fakeapi import FakeKube
from tests.tui.conftest import screen_text, settle, settle_until

HELD = Path(__file__).resolve().parents[1] / "held" / "bundles"


async def test_the_log_of_a_pod_that_is_gone_but_kept_opens_in_the_app() -> None:
    """The diagnosis reads and cites attempt 0's log (its pod was deleted by the JobSet restart): the app
    lists it under its attempt and opens it."""
    app = DoctorApp(Target(bundle=HELD / "kept-log-of-a-gone-pod"))
    async with app.run_test(size=(120, 30)) as pilot:
        await settle_until(pilot, lambda: app.view is not None)
        view = app.view
        assert view is not None
        gone = next(r for r in view.diag.facts.history.runs if r.inferred) if view.diag else None
        key = (gone.pod.name, gone.container, gone.previous) if gone else None
        entry = view.log_entry(key) if key else None
        assert entry is not None and entry.attempt == 0, [e.key for e in view.logs]
        await pilot.press("4")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, LogsScreen)
        screen.open(entry.key)
        await settle_until(pilot, lambda: "no prior checkpoint, starting fresh" in screen_text(app))
        assert "in the snapshot" not in app.status[1]


async def test_an_empty_live_namespace_says_which_namespace_was_searched(
    fake_kube: tuple[FakeKube, Path],
) -> None:
    _, kubeconfig = fake_kube
    app = DoctorApp(Target(kubeconfig=str(kubeconfig), namespace="team-empty", timeout=5.0))
    async with app.run_test(size=(140, 30)) as pilot:
        await settle_until(pilot, lambda: app.rows is not None)
        assert isinstance(app.screen, PickerScreen)
        text = screen_text(app)
        assert "No TrainJob found in namespace team-empty" in text
        assert "in cluster" not in text


def test_an_app_on_a_file_that_is_no_bundle_exits_3_as_diagnose_does(tmp_path: Path) -> None:
    notes = tmp_path / "notes.txt"
    notes.write_text("what I saw on the cluster yesterday\n")
    diag = run_cli(["diagnose", "--bundle", str(notes)])
    app = run_cli(["tui", "--bundle", str(notes)])
    assert diag.rc == 3 and app.rc == 3
    assert app.err.strip().splitlines() == diag.err.strip().splitlines()
