"""Smoke test: the real `ckpt-doctor tui` in a real terminal (tmux, private socket) against the fake
API server: it draws, navigates to a finding and its evidence, and quits cleanly with exit code 0."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.fakeapi import FakeKube
from tests.tui.conftest import NAME, NS, ROOT

TMUX = shutil.which("tmux") or "tmux"
PROGRAM = ROOT / ".venv" / "bin" / "ckpt-doctor"

pytestmark = pytest.mark.skipif(
    shutil.which("tmux") is None or not PROGRAM.exists(), reason="needs tmux and the installed program"
)


class Term:
    def __init__(self, socket: str) -> None:
        self.socket = socket

    def tmux(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return subprocess.run([TMUX, "-L", self.socket, *args], capture_output=True, text=True, check=check, timeout=10)

    def screen(self) -> str:
        return self.tmux("capture-pane", "-p", "-t", "app", check=False).stdout

    def keys(self, *keys: str) -> None:
        """Typed at once, as a user types: the app keeps keys that come before a screen is ready."""
        self.tmux("send-keys", "-t", "app", *keys)

    def wait(self, what: str | Callable[[str], bool], timeout: float = 20.0) -> str:
        test = (lambda s: what in s) if isinstance(what, str) else what
        deadline = time.monotonic() + timeout
        text = ""
        while time.monotonic() < deadline:
            text = self.screen()
            if test(text):
                return text
            time.sleep(0.1)
        raise AssertionError(f"timed out waiting for {what!r}; the screen shows:\n{text}")


@pytest.fixture
def term() -> Iterator[Term]:
    """A tmux server on a private socket, killed after the test whatever happened."""
    t = Term(f"ckpt-doctor-test-{uuid.uuid4().hex[:8]}")
    yield t
    t.tmux("kill-server", check=False)


def start(term: Term, command: str, env: dict[str, str]) -> None:
    """Run `command` in a detached 100×30 session on the private socket."""
    size = ["-x", "100", "-y", "30"]
    argv = [TMUX, "-L", term.socket, "-f", "/dev/null", "new-session", "-d", "-s", "app", *size, command]
    # COLUMNS/LINES win over the terminal's own size in the app (shutil.get_terminal_size), and pytest-xdist's
    # workers set them to 80×24: the app drew 80 columns in a 100-column pane and cut its title short
    env = {k: v for k, v in env.items() if k not in ("COLUMNS", "LINES")}
    subprocess.run(argv, check=True, env=env, timeout=10)


def exit_code(rc: Path) -> str:
    deadline = time.monotonic() + 10
    while not (rc.exists() and rc.read_text().strip()) and time.monotonic() < deadline:
        time.sleep(0.1)
    return rc.read_text().strip() if rc.exists() else "never exited"


def test_tui_in_tmux_on_a_bundle(term: Term, tmp_path: Path) -> None:
    """The bundle path: a forked reader process before the app starts, in a real terminal."""
    rc = tmp_path / "rc"
    bundle = ROOT / "examples" / "lexical-sort-older"
    start(term, f"'{PROGRAM}' tui --bundle '{bundle}'; echo $? > '{rc}'", {**os.environ, "TERM": "xterm-256color"})
    term.wait("resumed-older-checkpoint")
    term.keys("3")
    # the chart's legend and the table's lost-work cell: both on one screen
    screen = term.wait(lambda s: "a1 jobset-restart 950→1100" in s and "(older ckpt)" in s)
    assert "(older ckpt)" in screen
    term.keys("q")
    assert exit_code(rc) == "0"


def test_tui_in_tmux_against_the_fake_api_server(fake_kube: tuple[FakeKube, Path], term: Term, tmp_path: Path) -> None:
    """`term` is set up after `fake_kube`, so tmux is killed before the server stops."""
    rc = tmp_path / "rc"
    _, kubeconfig = fake_kube
    command = f"'{PROGRAM}' tui {NS}/{NAME} --kubeconfig '{kubeconfig}'; echo $? > '{rc}'"
    start(term, command, {**os.environ, "TERM": "xterm-256color", "KUBECONFIG": str(kubeconfig)})
    screen = term.wait("final-checkpoint-missing")
    assert "sigterm-not-forwarded" in term.wait("fix:")
    assert "1 Overview" in screen
    term.keys("2")
    term.wait("FAILED (3)")
    term.keys("e", "Down", "Enter")
    screen = term.wait("line 57/59")
    assert "480/1000" in screen
    term.keys("q")
    assert exit_code(rc) == "0"
