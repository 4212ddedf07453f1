"""The app on bundles the examples do not cover: every state an object can be in draws, a widget
that fails to draw says so in its place, and anything else ends the app with one line and a log."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML

from ckpt_doctor.tui.app import DoctorApp
from ckpt_doctor.tui.model import HEALTH_MARK, ObjNode
from ckpt_doctor.tui.target import Target
from ckpt_doctor.tui.widgets.objtree import ObjectTree
from ckpt_doctor.tui.widgets.tone import HEALTH_VAR
from tests.tui.conftest import EXAMPLES, bundle_app, screen_text, settle

Edit = Callable[[dict[str, Any]], None]


def _yaml() -> YAML:
    y = YAML(typ="safe")
    y.default_flow_style = False
    return y


def variant(tmp_path: Path, file: str, kind: str, edit: Edit, example: str = "final-checkpoint-missing") -> Path:
    """A copy of an example bundle with `edit` applied to every object of `kind` in `file`."""
    root = tmp_path / "bundle"
    shutil.copytree(EXAMPLES / example, root)
    path = root / file
    doc = _yaml().load(path.read_text())
    items = doc["items"] if doc.get("kind") == "List" else [doc]
    for obj in items:
        if obj.get("kind") == kind:
            edit(obj)
    with path.open("w") as f:
        _yaml().dump(doc, f)
    return root


def _status(**status: Any) -> Edit:
    def edit(obj: dict[str, Any]) -> None:
        if status:
            obj["status"] = dict(status)
        else:
            obj.pop("status", None)

    return edit


def _cond(kind: str, extra: dict[str, Any] | None = None) -> Edit:
    return _status(conditions=[{"type": kind, "status": "True", "reason": kind, "message": kind}], **(extra or {}))


def _pod(phase: str | None, reason: str = "", waiting: str = "") -> Edit:
    def edit(obj: dict[str, Any]) -> None:
        st = obj.setdefault("status", {})
        if phase is None:
            st.pop("phase", None)
        else:
            st["phase"] = phase
        if reason:
            st["reason"] = reason
        if waiting:
            for cs in st.get("containerStatuses") or []:
                cs["state"] = {"waiting": {"reason": waiting}}

    return edit


VARIANTS: dict[str, tuple[str, str, Edit]] = {
    "trainjob-no-status": ("trainjob.yaml", "TrainJob", _status()),
    "healthy/trainjob-no-status": ("trainjob.yaml", "TrainJob", _status()),  # nothing cites it: stays `info`
    **{
        f"trainjob-{c}": ("trainjob.yaml", "TrainJob", _cond(c)) for c in ("Created", "Suspended", "Complete", "Failed")
    },
    "trainjob-active-jobs": ("trainjob.yaml", "TrainJob", _status(jobsStatus=[{"name": "node", "active": 1}])),
    "jobset-no-status": ("jobset.yaml", "JobSet", _status()),
    **{
        f"jobset-{c}": ("jobset.yaml", "JobSet", _cond(c, {"restarts": 3}))
        for c in ("Failed", "Completed", "Suspended")
    },
    **{f"pod-{p}": ("pods.yaml", "Pod", _pod(p)) for p in ("Pending", "Running", "Succeeded", "Failed", "Unknown")},
    "pod-no-phase": ("pods.yaml", "Pod", _pod(None)),
    "pod-evicted": ("pods.yaml", "Pod", _pod("Failed", reason="Evicted")),
    "pod-crashloop": ("pods.yaml", "Pod", _pod("Running", waiting="CrashLoopBackOff")),
    **{
        f"pvc-{p}": ("persistentvolumeclaims.yaml", "PersistentVolumeClaim", _status(phase=p))
        for p in ("Pending", "Bound", "Lost")
    },
    "pvc-no-status": ("persistentvolumeclaims.yaml", "PersistentVolumeClaim", _status()),
}


def test_every_health_has_a_mark_a_colour_and_a_tree_style() -> None:
    assert set(HEALTH_MARK) == set(HEALTH_VAR)
    assert {f"objtree--{h}" for h in HEALTH_VAR} <= ObjectTree.COMPONENT_CLASSES


async def test_a_tree_with_every_health_draws() -> None:
    root = ObjNode("TrainJob", "t", None, "info", children=[ObjNode("Pod", h, None, h, h) for h in HEALTH_VAR])
    app = bundle_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        tree = app.screen.query_one(ObjectTree)
        tree.show(root)
        await settle(pilot)
        text = screen_text(app)
        for h in HEALTH_VAR:
            assert f"{HEALTH_MARK[h]} Pod {h}" in text
        assert tree.broken is None


@pytest.mark.parametrize("name", sorted(VARIANTS))
async def test_every_state_of_every_object_draws_on_every_screen(tmp_path: Path, name: str) -> None:
    file, kind, edit = VARIANTS[name]
    example = "healthy-resume" if name.startswith("healthy/") else "final-checkpoint-missing"
    app = DoctorApp(Target(bundle=variant(tmp_path, file, kind, edit, example)))
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        assert app.view is not None and app.view.complete, app.error
        if name.startswith("healthy/"):
            assert app.view.tree.health == "info"
        tree = app.screen.query_one(ObjectTree)
        tree.root.expand_all()
        await settle(pilot)
        assert "TrainJob" in screen_text(app)
        for key in "23451":
            await pilot.press(key)
            await settle(pilot)
            screen_text(app)
        broken = [w for w in app.screen.query("*") if getattr(w, "broken", None)]
        assert not broken, [w.broken for w in broken]  # type: ignore[attr-defined]
    assert app.return_code in (0, None)


async def test_a_panel_that_fails_to_draw_shows_the_error_and_the_rest_keeps_working(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))

    def boom(self: ObjectTree, name: str, *a: Any, **kw: Any) -> Any:  # the crash of a style missing
        raise KeyError(f"No {name!r} key in COMPONENT_CLASSES")

    monkeypatch.setattr(ObjectTree, "get_component_rich_style", boom)
    app = bundle_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        text = screen_text(app)
        assert "could not draw this panel: KeyError" in text
        assert "final-checkpoint-missing" in text  # the verdict above it is still there
        await pilot.press("2")
        await settle(pilot)
        assert "sigterm-not-forwarded" in screen_text(app)
    assert app.return_code in (0, None)
    logs = list((tmp_path / "ckpt-doctor").glob("tui-crash-*.log"))
    assert len(logs) == 1 and "COMPONENT_CLASSES" in logs[0].read_text()


async def test_a_screen_that_cannot_show_the_diagnosis_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from ckpt_doctor.tui.screens.events import EventsScreen

    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))

    def boom(self: EventsScreen, view: Any) -> None:
        raise ValueError("no such column")

    monkeypatch.setattr(EventsScreen, "show_view", boom)
    app = bundle_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await pilot.press("5")
        await settle(pilot)
        assert "could not show the diagnosis: ValueError: no such column" in screen_text(app)
        await pilot.press("1")
        await settle(pilot)
        assert "final-checkpoint-missing" in screen_text(app)


def test_an_unexpected_error_ends_the_app_with_one_line_and_a_log(tmp_path: Path) -> None:
    """In a real run (not a pilot): the exit code is 3 and stderr has one line naming the log."""
    import os
    import subprocess
    import sys

    script = f"""
import sys
from pathlib import Path
from ckpt_doctor.tui.app import DoctorApp
from ckpt_doctor.tui.target import Target
class Broken(DoctorApp):
    def on_ready(self):
        raise RuntimeError("token=abc123secretvalue went wrong")
app = Broken(Target(bundle=Path({str(EXAMPLES / "final-checkpoint-missing")!r})))
app.run(headless=True)
sys.exit(app.return_code or 0)
"""
    env = {**os.environ, "XDG_STATE_HOME": str(tmp_path)}
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, env=env)
    assert out.returncode == 3, out.stderr
    lines = [x for x in out.stderr.splitlines() if x.strip()]
    assert len(lines) == 1, out.stderr
    assert "internal error: RuntimeError" in lines[0] and "details in" in lines[0]
    assert "abc123secretvalue" not in out.stderr
    (log,) = (tmp_path / "ckpt-doctor").glob("tui-crash-*.log")
    assert "Traceback" in log.read_text() and "abc123secretvalue" not in log.read_text()
    assert log.stat().st_mode & 0o777 == 0o600


@pytest.mark.parametrize(
    "argv", [["tui", "--bundle", "examples/healthy-resume"], ["--bundle", "examples/healthy-resume"]]
)
def test_without_a_terminal_the_app_says_so_and_exits_2(argv: list[str]) -> None:
    import subprocess
    import sys

    from tests.tui.conftest import ROOT

    out = subprocess.run(
        [sys.executable, "-m", "ckpt_doctor", *argv],
        cwd=ROOT,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 2
    assert "needs a terminal" in out.stderr.splitlines()[0]
    assert "Traceback" not in out.stderr
