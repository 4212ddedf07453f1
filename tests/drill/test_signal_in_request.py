"""A signal whose handler raises (Ctrl-C, the drill's Stopped) waits while the main thread is inside a request to
the cluster, and is acted on when the request ends: raised in the middle of the client's own code (urllib3 takes
its pool's lock in Python code), the exception could leave that lock taken for ever, and the next request (the
drill's cleanup, deleting a reader pod) or the pool's finalizer at exit would then block: a drill that did not
end 60 s after SIGINT in its crash step, once."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from ckpt_doctor import signals
from ckpt_doctor.drill.interrupt import Abandoned, Interrupts, Stopped
from ckpt_doctor.sources.live import client as live
from ckpt_doctor.sources.live import connect
from tests.live.conftest import REAL_KUBECONFIG, serving

main_only = pytest.mark.skipif(threading.current_thread() is not threading.main_thread(), reason="signals")
ROOT = Path(__file__).resolve().parents[2]


def _signal_arrives(before: int) -> None:
    """SIGINT to this process; returns once its handler ran (it runs between two bytecodes) and kept it."""
    os.kill(os.getpid(), signal.SIGINT)
    deadline = time.monotonic() + 10
    while len(signals._pending) <= before and time.monotonic() < deadline:
        pass
    assert len(signals._pending) == before + 1


@main_only
def test_a_signal_inside_a_request_stops_the_drill_when_the_request_ends() -> None:
    went_on = []
    with Interrupts() as it, pytest.raises(Stopped) as stop, signals.request():
        _signal_arrives(0)  # not raised here, in the middle of the request
        went_on.append(True)
    assert went_on == [True] and stop.value.why == "SIGINT" and signals._pending == [] and it.first == "SIGINT"


@main_only
def test_a_signal_outside_a_request_stops_at_once() -> None:
    with Interrupts(), pytest.raises(Stopped):
        os.kill(os.getpid(), signal.SIGINT)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            pass
    assert signals._in_request == 0


@main_only
def test_two_signals_inside_a_request_of_the_cleanup_abandon_it_when_the_request_ends() -> None:
    notes: list[str] = []
    with Interrupts(announce=notes.append) as it, it.shield(), pytest.raises(Abandoned), signals.request():
        _signal_arrives(0)
        _signal_arrives(1)
        assert it.held == []
    assert it.held == ["SIGINT", "SIGINT"] and len(notes) == 1  # the first was announced, the second abandoned


@main_only
def test_ctrl_c_is_a_keyboard_interrupt_after_the_request() -> None:
    with signals.handled((signal.SIGINT,), signals.raise_interrupt), pytest.raises(KeyboardInterrupt), \
            signals.request():
        _signal_arrives(0)
    assert signals._pending == []


def test_a_request_of_another_thread_does_not_hold_the_main_thread_s_signals() -> None:
    seen: list[int] = []

    def other() -> None:
        with signals.request():
            seen.append(signals._in_request)

    t = threading.Thread(target=other)
    t.start()
    t.join()
    assert seen == [0]


@pytest.mark.skipif(bool(REAL_KUBECONFIG), reason="starts its own fake API server")
def test_every_request_is_counted_while_it_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[int] = []
    with serving() as kube:
        api = live.Api(connect(kubeconfig=str(kube.kubeconfig(tmp_path / "kc")), timeout=5))
        real = api.cluster.client.call_api

        def spy(*a: object, **kw: object) -> object:
            seen.append(signals._in_request)
            return real(*a, **kw)

        monkeypatch.setattr(api.cluster.client, "call_api", spy)
        api.version()
        with pytest.raises(live.CallError):  # a refused request leaves the count too
            api._raw("/api/v1/namespaces/none/pods/nothing")
    expected = 1 if threading.current_thread() is threading.main_thread() else 0
    assert seen == [expected, expected] and signals._in_request == 0


def test_the_command_line_s_ctrl_c_waits_for_the_request_in_flight(tmp_path: Path) -> None:
    """A real `ckpt-doctor diagnose` whose request the server holds back: Ctrl-C ends it with exit 130 and one
    line, after the request (the pool's lock was never at risk), not in the middle of it."""
    if REAL_KUBECONFIG:
        pytest.skip("holds requests back on the fake API server")
    with serving() as kube:
        kc = kube.kubeconfig(tmp_path / "kc", namespace="ml")
        held = kube.fault(verb="list", effect="hang", hang_seconds=3, times=1)
        env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "NO_COLOR": "1"}
        p = subprocess.Popen([sys.executable, "-m", "ckpt_doctor", "diagnose", "-n", "ml", "--kubeconfig", str(kc)],
                             env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip
        try:
            deadline = time.monotonic() + 60
            while held.fired < 1 and time.monotonic() < deadline:
                time.sleep(0.01)
            sent = time.monotonic()
            p.send_signal(signal.SIGINT)
            _out, err = p.communicate(timeout=60)
            took = time.monotonic() - sent
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()
    assert p.returncode == 130 and "interrupted" in err and "Traceback" not in err, err
    assert took >= 1.5, f"interrupted {took:.2f} s after Ctrl-C, in the middle of the held request"
