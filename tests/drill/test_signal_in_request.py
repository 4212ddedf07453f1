"""A signal that reaches the drill while its main thread is inside a request to the cluster is acted on when the
request ends: raised in the middle of the client's own code (urllib3 takes its pool's lock in Python code), the
drill's Stopped could leave that lock taken for ever, and the cleanup's next request, or the pool's finalizer at
exit, would then block: a drill that did not end 60 s after SIGINT in its crash step, once."""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from ckpt_doctor.drill.interrupt import Abandoned, Interrupts, Stopped
from ckpt_doctor.sources.live import client as live
from ckpt_doctor.sources.live import connect
from tests.live.conftest import REAL_KUBECONFIG, serving

main_only = pytest.mark.skipif(threading.current_thread() is not threading.main_thread(), reason="signals")


def _signal_arrives(it: Interrupts, before: int) -> None:
    """Send SIGINT to this process and wait until its handler ran (it runs between two bytecodes)."""
    os.kill(os.getpid(), signal.SIGINT)
    deadline = time.monotonic() + 10
    while len(it.pending) + len(it.held) <= before and time.monotonic() < deadline:
        pass


@main_only
def test_a_signal_inside_a_request_stops_the_drill_when_the_request_ends() -> None:
    went_on = []
    with Interrupts() as it, pytest.raises(Stopped) as stop, it.call():
        _signal_arrives(it, 0)
        assert it.pending == ["SIGINT"]  # not raised here, in the middle of the request
        went_on.append(True)
    assert went_on == [True] and stop.value.why == "SIGINT" and it.pending == []


@main_only
def test_a_signal_outside_a_request_stops_at_once() -> None:
    with Interrupts() as it, pytest.raises(Stopped):
        os.kill(os.getpid(), signal.SIGINT)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            pass
    assert it.calls == 0


@main_only
def test_two_signals_inside_a_request_of_the_cleanup_abandon_it_when_the_request_ends() -> None:
    notes: list[str] = []
    with Interrupts(announce=notes.append) as it, it.shield(), pytest.raises(Abandoned), it.call():
        _signal_arrives(it, 0)
        _signal_arrives(it, 1)
        assert it.pending == ["SIGINT", "SIGINT"] and it.held == []
    assert it.held == ["SIGINT", "SIGINT"] and len(notes) == 1  # the first was announced, the second abandoned


def test_a_request_of_another_thread_does_not_hold_the_main_thread_s_signals() -> None:
    it = Interrupts()
    seen: list[int] = []

    def other() -> None:
        with it.call():
            seen.append(it.calls)

    t = threading.Thread(target=other)
    t.start()
    t.join()
    assert seen == [0]


@contextmanager
def _counting(log: list[str]) -> Iterator[None]:
    log.append("in")
    try:
        yield
    finally:
        log.append("out")


@pytest.mark.skipif(bool(REAL_KUBECONFIG), reason="starts its own fake API server")
def test_every_request_runs_inside_the_guard_the_drill_sets(tmp_path: Path) -> None:
    log: list[str] = []
    with serving() as kube:
        api = live.Api(connect(kubeconfig=str(kube.kubeconfig(tmp_path / "kc")), timeout=5))
        old = live.guard_calls(lambda: _counting(log))
        try:
            api.version()
            with pytest.raises(live.CallError):  # a refused request leaves the guard too
                api._raw("/api/v1/namespaces/none/pods/nothing")
        finally:
            live.guard_calls(old)
    assert log == ["in", "out", "in", "out"]


@main_only
def test_the_drill_s_interrupts_install_the_guard_and_put_back_the_one_before() -> None:
    before = live.guard_calls(None)
    live.guard_calls(before)
    with Interrupts() as it:
        current = live.guard_calls(None)
        live.guard_calls(current)
        assert getattr(current, "__self__", None) is it
    after = live.guard_calls(None)
    live.guard_calls(after)
    assert after is before
