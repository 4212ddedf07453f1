"""The app on the sandbox in a real terminal (tmux on a private socket): the TrainJob opens, the title bar says it is
a simulated cluster, the palette's "Start the verify drill" runs the drill from the screen (y to each change), and
the screen shows its verdict: passed on the healthy job, the failing step on a broken one."""

from __future__ import annotations

import os
import re
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from ckpt_doctor.sandbox.cluster import Sandbox
from tests.drill.conftest import playbook_file
from tests.tui.test_tmux import PROGRAM, Term, exit_code, start

pytestmark = pytest.mark.skipif(not PROGRAM.exists(), reason="needs the installed program")
VERDICT = re.compile(r"drill d-[0-9a-f]{6}: (passed|failed|error|stopped)")


@pytest.fixture
def tmux() -> Iterator[Term]:
    """A tmux server on a private socket, killed after the test whatever happened."""
    t = Term(f"ckpt-doctor-sandbox-{uuid.uuid4().hex[:8]}")
    yield t
    t.tmux("kill-server", check=False)


@pytest.fixture
def sandbox_for_app() -> Iterator[Sandbox]:
    with Sandbox(["healthy-resume", "checkpoint-on-emptydir"], speed=4.0) as sb:
        yield sb


SCROLLBAR = "▁▂▃▄▅▆▇█▔▏▎▍▌▋▊▉ "


def _drill_lines(screen: str) -> tuple[str, ...]:
    """The drill's own lines at the bottom of its log pane (the trainer's `log │` lines left out, the pane's
    scrollbar stripped), while it asks: what changes once a question is answered, as the drill carries out the
    change and shows the next one. (The question's own line is no good witness: a long one is cut at the pane's
    edge, and one ending in the scrollbar was missed, so an answered question looked unanswered.)"""
    if "y Confirm" not in screen:
        return ()
    lines = screen.splitlines()
    sep = max((i for i, ln in enumerate(lines) if "▔▔▔▔" in ln), default=-1)
    pane = [ln.split("▕", 1)[1].rstrip(SCROLLBAR) for ln in lines[sep + 1:] if "▕" in ln]
    return tuple(ln for ln in pane if ln.strip() and "log │" not in ln)[-4:]


def drill_from_the_screen(term: Term, job: str, sb: Sandbox, playbook: Path, rc: Path) -> str:
    command = (f"'{PROGRAM}' tui sandbox/{job} --kubeconfig '{sb.kubeconfig}' --playbook '{playbook}'; "
               f"echo $? > '{rc}'")
    start(term, command, {**os.environ, "TERM": "xterm-256color"})
    term.wait(lambda s: job in s and "sandbox (simulated cluster)" in s, timeout=60)
    term.keys(":")
    term.wait("Go to Overview")  # the palette is open
    term.keys("verify drill")
    term.wait("Start the verify drill")  # filtered to it: Enter runs the first match
    term.keys("Enter")
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        # the footer offers "y Confirm" only while the drill asks
        screen = term.wait(lambda s: "y Confirm" in s or VERDICT.search(s) is not None, timeout=60)
        if VERDICT.search(screen):
            return screen
        asked = _drill_lines(screen)
        term.keys("y")
        # answered: the question changes (the next change's) or goes; a y that did nothing fails here
        term.wait(lambda s, q=asked: _drill_lines(s) != q or VERDICT.search(s) is not None, timeout=30)
    raise AssertionError("the drill never ended on screen")


def test_the_drill_from_the_app_on_the_sandbox(sandbox_for_app: Sandbox, tmux: Term, tmp_path: Path) -> None:
    term = tmux
    pb = playbook_file(tmp_path / "pb.yaml", timeout=60.0, poll=0.05)
    rc = tmp_path / "rc"
    screen = drill_from_the_screen(term, "healthy-resume", sandbox_for_app, pb, rc)
    assert VERDICT.search(screen).group(1) == "passed", screen  # type: ignore[union-attr]
    assert "sandbox (simulated cluster)" in screen
    term.keys("q")
    assert exit_code(rc) == "0"
    term.tmux("kill-server", check=False)
    rc2 = tmp_path / "rc2"
    screen = drill_from_the_screen(term, "checkpoint-on-emptydir", sandbox_for_app, pb, rc2)
    assert VERDICT.search(screen).group(1) == "failed", screen  # type: ignore[union-attr]
    assert "preflight" in screen
    term.keys("q")
    assert exit_code(rc2) == "0"
