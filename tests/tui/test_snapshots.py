"""The look of every screen, pinned as SVG at 80×24 and 160×48 (pytest-textual-snapshot).

After an intended change of the look: `pytest tests/tui/test_snapshots.py --snapshot-update`, then
review the SVGs under __snapshots__/ before committing them.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from textual.pilot import Pilot

from ckpt_doctor.tui.app import DoctorApp
from ckpt_doctor.tui.target import Target
from tests.tui.conftest import all_verdicts, bundle_app, settle, settle_until

SIZES = [pytest.param((80, 24), id="80x24"), pytest.param((160, 48), id="160x48")]


def keys(*pressed: str) -> Callable[[Pilot], object]:
    async def run_before(pilot: Pilot) -> None:
        await settle(pilot)
        for k in pressed:
            await pilot.press(k)
            await settle(pilot)

    return run_before


async def every_verdict(pilot: Pilot) -> None:
    """The picker fills verdicts in as each TrainJob is diagnosed: wait for the last one."""
    await settle_until(pilot, lambda: all_verdicts(pilot.app))  # type: ignore[arg-type]


@pytest.mark.parametrize("size", SIZES)
def test_picker(snap_compare, two_jobs: Path, size: tuple[int, int]) -> None:
    app = DoctorApp(Target(bundle=two_jobs))
    assert snap_compare(app, terminal_size=size, run_before=every_verdict)


@pytest.mark.parametrize("size", SIZES)
def test_overview(snap_compare, size: tuple[int, int]) -> None:
    assert snap_compare(bundle_app(), terminal_size=size, run_before=keys())


@pytest.mark.parametrize("size", SIZES)
def test_findings(snap_compare, size: tuple[int, int]) -> None:
    assert snap_compare(bundle_app(), terminal_size=size, run_before=keys("2", "down", "down"))


@pytest.mark.parametrize("size", SIZES)
def test_timeline(snap_compare, size: tuple[int, int]) -> None:
    assert snap_compare(bundle_app("lexical-sort-older"), terminal_size=size, run_before=keys("3"))


@pytest.mark.parametrize("size", SIZES)
def test_timeline_pods_gone(snap_compare, size: tuple[int, int]) -> None:
    # the first attempt's pods and logs are gone: it is marked ?, and the rewind says its size is unknown
    assert snap_compare(bundle_app("emptydir-fresh-start"), terminal_size=size, run_before=keys("3"))


@pytest.mark.parametrize("size", SIZES)
def test_logs(snap_compare, size: tuple[int, int]) -> None:
    # the evidence jump: the last step attempt 0 reached before SIGTERM, highlighted
    assert snap_compare(bundle_app(), terminal_size=size, run_before=keys("2", "e", "down", "enter"))


@pytest.mark.parametrize("size", SIZES)
def test_events(snap_compare, size: tuple[int, int]) -> None:
    assert snap_compare(bundle_app("rwo-multi-attach"), terminal_size=size, run_before=keys("5"))


@pytest.mark.parametrize("size", SIZES)
def test_object_yaml(snap_compare, size: tuple[int, int]) -> None:
    # evidence of sigterm-not-forwarded: the pod's args, highlighted in its YAML
    assert snap_compare(bundle_app(), terminal_size=size, run_before=keys("2", "down", "down", "e", "enter"))


def test_overview_light_theme(snap_compare) -> None:
    assert snap_compare(bundle_app("lexical-sort-older"), terminal_size=(80, 24), run_before=keys("ctrl+t"))


def test_help(snap_compare) -> None:
    assert snap_compare(bundle_app(), terminal_size=(80, 24), run_before=keys("2", "question_mark"))


def test_findings_light_theme(snap_compare) -> None:
    # the highlighted finding and the selected evidence, in the light theme
    assert snap_compare(bundle_app(), terminal_size=(100, 30), run_before=keys("ctrl+t", "2", "j", "e", "j"))


def test_overview_no_color(snap_compare, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NO_COLOR", "1")  # read (and removed) when the app is made
    assert snap_compare(bundle_app("rwo-multi-attach"), terminal_size=(100, 30), run_before=keys("j", "j", "j"))


def test_findings_no_color(snap_compare, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NO_COLOR", "1")
    assert snap_compare(bundle_app(), terminal_size=(100, 30), run_before=keys("2", "j", "e", "j"))


def test_describe(snap_compare) -> None:
    assert snap_compare(bundle_app(), terminal_size=(100, 36), run_before=keys("j", "j", "j", "j", "d"))


def test_logs_wrapped(snap_compare) -> None:
    assert snap_compare(bundle_app(), terminal_size=(80, 24), run_before=keys("2", "e", "j", "enter", "w"))
