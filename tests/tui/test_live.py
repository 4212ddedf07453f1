"""The app against the fake Kubernetes API server: collection and refresh in worker threads, the
partial-data banner, errors, evidence jumps and following a log."""

from __future__ import annotations

import asyncio
import socket
from pathlib import Path

from ckpt_doctor.tui.app import DoctorApp
from ckpt_doctor.tui.lines import WindowLines
from ckpt_doctor.tui.screens.findings import FindingsScreen
from ckpt_doctor.tui.screens.logs import LogsScreen
from ckpt_doctor.tui.screens.overview import OverviewScreen
from ckpt_doctor.tui.screens.picker import PickerScreen
from ckpt_doctor.tui.target import Target
from ckpt_doctor.tui.widgets.lineview import LineView
from tests.fakeapi import FakeKube
from tests.tui.conftest import NAME, NS, screen_text, settle, settle_until

POD1 = "sft-resumable-node-0-0-wgr2w"


def live_app(kubeconfig: Path, target: str | None = f"{NS}/{NAME}", **kw: object) -> DoctorApp:
    return DoctorApp(Target(trainjob=target, kubeconfig=str(kubeconfig), timeout=5.0), **kw)  # type: ignore[arg-type]


async def test_live_overview_and_refresh(fake_kube: tuple[FakeKube, Path]) -> None:
    kube, kubeconfig = fake_kube
    app = live_app(kubeconfig)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        assert isinstance(app.screen, OverviewScreen)
        assert app.view is not None and app.view.source == "live"
        assert app.view.verdict[0].symptom.id == "final-checkpoint-missing"
        assert "live" in app.sub_title and "refreshed" in app.sub_title
        first, before = app.view, kube.count("GET")
        await pilot.press("r")
        await settle(pilot)
        assert kube.count("GET") > before
        assert app.view is not first and app.error is None


async def test_live_partial_data_banner(fake_kube: tuple[FakeKube, Path]) -> None:
    kube, kubeconfig = fake_kube
    kube.fault(verb="list", resource="events", status=403)
    app = live_app(kubeconfig)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        level, text = app.status
        assert level == "warn" and "Partial data" in text and "events" in text
        assert "forbidden" in text.lower()
        assert "Partial data" in screen_text(app)
        await pilot.press("5")
        await settle(pilot)
        assert "events not collected" in screen_text(app)


async def test_live_unreachable_cluster_is_a_banner_not_a_crash(tmp_path: Path) -> None:
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    kube = FakeKube(port=port)  # only used to write a kubeconfig for that port
    kubeconfig = kube.kubeconfig(tmp_path / "kc", namespace=NS)
    app = live_app(kubeconfig)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle_until(pilot, lambda: app.error is not None)
        level, text = app.status
        assert level == "error" and "r retries" in text
        assert app.view is None
        assert isinstance(app.screen, OverviewScreen)


async def test_live_evidence_jump_reads_the_collected_log_window(fake_kube: tuple[FakeKube, Path]) -> None:
    _, kubeconfig = fake_kube
    app = live_app(kubeconfig)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await pilot.press("2", "e", "down", "enter")
        await settle(pilot)
        assert isinstance(app.screen, LogsScreen)
        lv = app.screen.query_one(LineView)
        assert isinstance(lv.source, WindowLines)  # live logs are held in memory, not on disk
        assert lv.cursor == 56 and "480/1000" in lv.current_text()


async def test_live_follow_picks_up_new_lines(fake_kube: tuple[FakeKube, Path]) -> None:
    kube, kubeconfig = fake_kube
    app = live_app(kubeconfig)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await pilot.press("4")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, LogsScreen) and screen.entry.key[0] == POD1
        lv = screen.query_one(LineView)
        lines = lv.line_count
        await pilot.press("f")
        await settle(pilot)
        assert lv.follow and app.auto  # following keeps refreshing
        kube.append_log(NS, POD1, "node", "[checkpoint] saved /mnt/ckpt/sft-resumable/checkpoint-550\n")
        await pilot.press("r")
        await settle(pilot)
        lv = app.screen.query_one(LineView)
        assert lv.line_count == lines + 1
        assert lv.cursor == lv.line_count - 1 and "checkpoint-550" in lv.current_text()


async def test_live_auto_refresh(fake_kube: tuple[FakeKube, Path]) -> None:
    _, kubeconfig = fake_kube
    app = live_app(kubeconfig, refresh_every=0.3)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        assert "auto-refresh 0.3s" in app.sub_title
        first = app.view
        for _ in range(40):
            await asyncio.sleep(0.1)
            await pilot.pause()
            if app.view is not first:
                break
        assert app.view is not first


async def test_first_frame_before_the_kubernetes_client(fake_kube: tuple[FakeKube, Path]) -> None:
    """The app is on screen (loading) before the worker even starts the collection."""
    _, kubeconfig = fake_kube
    app = live_app(kubeconfig)
    async with app.run_test(size=(100, 30)) as pilot:
        assert isinstance(app.screen, OverviewScreen)
        assert app.status[0] == "info" and "Collecting" in app.status[1]
        await settle(pilot)
        assert app.view is not None


async def test_live_picker_lists_the_namespace(fake_kube: tuple[FakeKube, Path]) -> None:
    _, kubeconfig = fake_kube
    app = live_app(kubeconfig, target=None)
    async with app.run_test(size=(120, 30)) as pilot:
        await settle_until(pilot, lambda: app.view is not None)
        # one TrainJob in the namespace: the picker opens it
        assert app.rows is not None and [r.key for r in app.rows] == [f"{NS}/{NAME}"]
        assert isinstance(app.screen, OverviewScreen)
        await pilot.press("0")
        await settle(pilot)
        assert isinstance(app.screen, PickerScreen)
        assert "final-checkpoint-missing" in screen_text(app)


async def test_live_picker_forbidden_namespace(fake_kube: tuple[FakeKube, Path]) -> None:
    kube, kubeconfig = fake_kube
    kube.fault(verb="list", resource="trainjobs", status=403)
    app = live_app(kubeconfig, target=None)
    async with app.run_test(size=(120, 30)) as pilot:
        await settle_until(pilot, lambda: app.error is not None)
        assert isinstance(app.screen, PickerScreen)
        level, text = app.status
        assert level == "error" and "Could not list TrainJobs" in text
        assert "Could not list the TrainJobs" in screen_text(app)  # not "no TrainJob found"


async def test_live_findings_from_the_cluster_match_the_bundle(fake_kube: tuple[FakeKube, Path]) -> None:
    _, kubeconfig = fake_kube
    app = live_app(kubeconfig)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await pilot.press("2")
        await settle(pilot)
        assert isinstance(app.screen, FindingsScreen)
        failed = {f.id for f in app.screen.shown if f.status == "fail"}
        assert failed == {"final-checkpoint-missing", "grace-period-too-short", "sigterm-not-forwarded"}


def test_live_diagnosis_takes_the_extra_signatures(fake_kube: tuple[FakeKube, Path], tmp_path: Path) -> None:
    from ckpt_doctor.tui.source import LiveLoader
    from tests.tui.test_source import TEAM_SIGNATURES

    _, kubeconfig = fake_kube
    sigs = tmp_path / "sigs"
    sigs.mkdir()
    (sigs / "team.yaml").write_text(TEAM_SIGNATURES)
    base = Target(trainjob=f"{NS}/{NAME}", kubeconfig=str(kubeconfig), timeout=5.0)
    plain = LiveLoader(base).load(f"{NS}/{NAME}")
    extra = LiveLoader(Target(**{**base.__dict__, "signatures": (sigs,)})).load(f"{NS}/{NAME}")
    assert "team-saved" not in {s.id for s in plain.signatures}
    assert "team-saved" in {s.id for s in extra.signatures}


async def test_a_real_looking_cluster_is_not_called_a_simulation(fake_kube: tuple[FakeKube, Path]) -> None:
    _, kubeconfig = fake_kube
    app = live_app(kubeconfig, target=None)
    async with app.run_test(size=(120, 30)) as pilot:
        await settle_until(pilot, lambda: app.rows is not None)
        assert "simulated" not in app.sub_title and "simulated" not in screen_text(app)
