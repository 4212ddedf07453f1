"""The drill screen of the app: the palette's "Start the verify drill" opens it on the live TrainJob; y confirms
a change, s skips a step, a aborts (the cleanup runs, and the screen shows it)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from textual.pilot import Pilot

from ckpt_doctor.tui.app import DoctorApp
from ckpt_doctor.tui.commands import DoctorCommands
from ckpt_doctor.tui.screens.drill import DrillScreen
from ckpt_doctor.tui.target import Target
from tests.drill.scenarios import NAME, NS, correct
from tests.tui.conftest import screen_text


async def until(pilot: Pilot, cond: Callable[[], bool], timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        await pilot.pause(0.05)
        if cond():
            return
    raise AssertionError("the screen never got there")


def prompt_in_sight(app: Any) -> bool:
    """The question is on screen whatever the length of the step's explanation above it (it was inside the
    detail pane's scroll, below the explanation: on a 100x30 terminal the cross-node step's pushed it out).
    Waited for, not asserted at once: the layout follows the prompt's new text a frame later."""
    from textual.widgets import Static

    prompt = app.screen.query_one("#drill-prompt", Static)
    region = prompt.region
    return (region.height > 0 and region.bottom <= app.screen.size.height
            and app.screen.get_widget_at(region.x, region.y)[0] is prompt)  # fmt: skip


async def test_drill_screen_confirm_skip_abort(make_cluster: Any) -> None:
    c = make_cluster(correct())
    c.seed()
    before = c.state()
    app = DoctorApp(Target(trainjob=f"{NS}/{NAME}", kubeconfig=str(c.kubeconfig), timeout=5.0))
    app.drill_options = {"playbook": c.playbook}
    async with app.run_test(size=(100, 30)) as pilot:  # the size of the tmux test, where it was seen
        await until(pilot, lambda: app.view is not None)
        names = [name for name, _cb, _help in DoctorCommands(app.screen)._commands()]  # type: ignore[arg-type]
        assert "Start the verify drill" in names
        app.action_drill()
        await until(pilot, lambda: isinstance(app.screen, DrillScreen))
        screen: DrillScreen = app.screen  # type: ignore[assignment]
        await until(pilot, lambda: screen.asking is not None)
        assert "delete the trainer pod" in screen.asking  # the crash, and its command on screen
        # the command on screen: waited for, the screen paints the question's step a frame or more later
        await until(pilot, lambda: "kubectl -n team-a delete pod" in screen_text(app))
        await until(pilot, lambda: prompt_in_sight(app))
        await pilot.press("y")
        await until(pilot, lambda: screen.asking is not None and "suspend" in screen.asking)
        assert screen.states["crash"] == "passed"
        await pilot.press("s")  # skip suspend-resume
        await until(pilot, lambda: screen.asking is not None and screen.states.get("cross-node") == "running")
        await until(pilot, lambda: prompt_in_sight(app))  # the longest explanation of the drill
        await pilot.press("a")
        await until(pilot, lambda: not screen.running)
        assert screen.states["suspend-resume"] == "skipped"
        assert screen.states["cross-node"] == "stopped"
        assert screen.states["cleanup"] == "passed"
        assert screen.result.verdict == "stopped"
        text = screen_text(app)
        assert "verdict: stopped" in text or "stopped" in text
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, DrillScreen)
    assert c.state() == before


async def test_leaving_a_running_drill_cleans_up(make_cluster: Any) -> None:
    c = make_cluster(correct())
    c.seed()
    before = c.state()
    app = DoctorApp(Target(trainjob=f"{NS}/{NAME}", kubeconfig=str(c.kubeconfig), timeout=5.0))
    app.drill_options = {"playbook": c.playbook}
    async with app.run_test(size=(120, 36)) as pilot:
        await until(pilot, lambda: app.view is not None)
        app.action_drill()
        await until(pilot, lambda: isinstance(app.screen, DrillScreen))
        screen: DrillScreen = app.screen  # type: ignore[assignment]
        await until(pilot, lambda: screen.asking is not None)
        await pilot.press("y")  # the crash runs
        await until(pilot, lambda: screen.asking is not None and "suspend" in screen.asking)
        await pilot.press("y")  # suspended; now quit while it waits for the pods to go
        await pilot.press("q")
    assert c.state() == before


async def test_ctrl_c_during_a_drill_aborts_it_and_quits_after_its_cleanup(make_cluster: Any) -> None:
    """ctrl+c is the app's quit: during a drill it went straight to exit, and the screen's unmount then held
    the event loop for the whole cleanup. Now it aborts the drill and quits once the cleanup is done."""
    c = make_cluster(correct())
    c.seed()
    before = c.state()
    app = DoctorApp(Target(trainjob=f"{NS}/{NAME}", kubeconfig=str(c.kubeconfig), timeout=5.0))
    app.drill_options = {"playbook": c.playbook}
    async with app.run_test(size=(120, 36)) as pilot:
        await until(pilot, lambda: app.view is not None)
        app.action_drill()
        await until(pilot, lambda: isinstance(app.screen, DrillScreen))
        screen: DrillScreen = app.screen  # type: ignore[assignment]
        await until(pilot, lambda: screen.asking is not None)
        await pilot.press("y")  # the crash runs
        await until(pilot, lambda: screen.asking is not None and "suspend" in screen.asking)
        await pilot.press("ctrl+c")
        assert screen.quit_after and app.screen is screen  # still on screen, the cleanup under way
        await until(pilot, lambda: not screen.running)
        assert screen.states["cleanup"] == "passed"
    assert c.state() == before


async def test_the_app_shows_the_same_verdict_as_the_command_line(make_cluster: Any) -> None:
    """Issue 20: started from the app, the drill whose exec was refused ended `passed` with every interruption
    `not_run`. The screen shows the one verdict (drill/verdict.py): error, at first-checkpoint, with the reason."""
    import dataclasses

    from tests.drill.controller import Program

    c = make_cluster(dataclasses.replace(correct(), program=Program(print_saves=False)), first_checkpoint=3.0)
    c.seed()
    c.kube.upgrade = None  # the loopback API answers the exec handshake with 404
    app = DoctorApp(Target(trainjob=f"{NS}/{NAME}", kubeconfig=str(c.kubeconfig), timeout=5.0))
    app.drill_options = {"playbook": c.playbook}
    async with app.run_test(size=(140, 40)) as pilot:
        await until(pilot, lambda: app.view is not None)
        app.action_drill()
        await until(pilot, lambda: isinstance(app.screen, DrillScreen))
        screen: DrillScreen = app.screen  # type: ignore[assignment]
        await until(pilot, lambda: not screen.running)
        assert screen.result.verdict == "error" and screen.result.verdict_step == "first-checkpoint"
        assert all(screen.states[s] == "not_run" for s in ("crash", "suspend-resume", "cross-node"))
        text = screen_text(app)
        assert f"drill {screen.result.drill_id}: error" in text
        assert "first-checkpoint could not run" in text
