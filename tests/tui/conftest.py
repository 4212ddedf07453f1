"""Fixtures for the app's tests: example bundles (diagnosed once per session), the fake API server,
and a `settle` helper that waits for the app's worker threads and the screen to catch up."""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from textual.pilot import Pilot
from textual.widgets import Input

from ckpt_doctor.tui.app import DoctorApp
from ckpt_doctor.tui.source import BundleLoader
from ckpt_doctor.tui.target import Target
from tests.fakeapi import FakeKube

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
NS, NAME = "team-a", "sft-resumable"

_loaders: dict[str, BundleLoader] = {}


@pytest.fixture(autouse=True)
def no_cursor_blink(monkeypatch: pytest.MonkeyPatch) -> None:
    """A blinking cursor makes screenshots depend on timing."""
    monkeypatch.setattr(Input, "_toggle_cursor", lambda self: None)


def loader_for(example: str) -> BundleLoader:
    """One loader per example for the whole session: each bundle is read and diagnosed once."""
    if example not in _loaders:
        _loaders[example] = BundleLoader(Target(bundle=EXAMPLES / example))
    return _loaders[example]


def bundle_app(example: str = "final-checkpoint-missing", *, shared: bool = True, **target: object) -> DoctorApp:
    t = Target(bundle=EXAMPLES / example, **target)  # type: ignore[arg-type]
    return DoctorApp(t, loader=loader_for(example) if shared and not target else None)


async def settle(pilot: Pilot, rounds: int = 3) -> None:
    """Let workers finish and their results reach the screen."""
    for _ in range(rounds):
        await pilot.pause()
        await pilot.app.workers.wait_for_complete()
    await pilot.pause()


async def settle_until(pilot: Pilot, done: Callable[[], bool], rounds: int = 100) -> None:
    """Settle until `done()` holds (results that arrive one by one, like the picker's verdicts)."""
    for _ in range(rounds):
        await settle(pilot)
        if done():
            return
    raise AssertionError("the app never got there")


def all_verdicts(app: DoctorApp) -> bool:
    return bool(app.rows) and all(r.verdict != "…" for r in app.rows or [])


def screen_text(app: DoctorApp) -> str:
    """What the terminal shows, as plain text."""
    import io

    from rich.console import Console

    w, h = app.size
    console = Console(
        width=w,
        height=h,
        file=io.StringIO(),
        force_terminal=True,
        color_system="truecolor",
        record=True,
        legacy_windows=False,
    )
    console.print(app.screen._compositor.render_update(full=True, screen_stack=app._background_screens))
    return console.export_text()


@pytest.fixture(scope="session")
def two_jobs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Written once per session: the tests that use it only read it."""
    return write_two_jobs(tmp_path_factory.mktemp("two_jobs"))


def write_two_jobs(tmp_path: Path) -> Path:
    """A bundle with two TrainJobs: the final-checkpoint-missing story and a healthy one beside it."""
    from tests import stories

    root = tmp_path / "two"
    story = {s.name: s for s in stories.STORIES}
    story["final-checkpoint-missing"].build().write(root)
    other = story["healthy-resume"].build()
    other.name = "llama-healthy"
    other.runtime_name = "healthy-runtime"
    other.bundle_meta = None
    other.write(tmp_path / "other")
    shutil.copytree(tmp_path / "other" / "logs", root / "logs", dirs_exist_ok=True)
    shutil.rmtree(tmp_path / "other" / "logs")
    shutil.move(str(tmp_path / "other"), root / "other")
    (root / "bundle.yaml").write_text(  # no target: the picker lists both
        "apiVersion: ckpt-doctor/v1\nkind: Bundle\ncollectedAt: '2026-11-30T10:00:00Z'\n"
        "cluster: {trainerVersion: v2.1.0}\n"
    )
    return root


@pytest.fixture
def fake_kube(tmp_path: Path) -> Iterator[tuple[FakeKube, Path]]:
    """The fake API server serving an example bundle, and a kubeconfig that points at it."""
    kube = FakeKube()
    kube.load_bundle(EXAMPLES / "final-checkpoint-missing")
    kube.start()
    kubeconfig = kube.kubeconfig(tmp_path / "kubeconfig", namespace=NS)
    try:
        yield kube, kubeconfig
    finally:
        kube.stop()
    assert kube.errors == [], "the fake API server hit a bug"
