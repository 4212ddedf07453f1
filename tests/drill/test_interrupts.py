"""Interrupted drills: SIGINT and SIGTERM at every step (a real process, real signals) leave the cluster as it
was, with the verdict "stopped"; a drill killed outright (SIGKILL, no cleanup) leaves marks, and
`ckpt-doctor drill --cleanup` finds them and undoes them."""

from __future__ import annotations

import json
import queue
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from tests.drill.conftest import Cluster, drill_subprocess, stuck
from tests.drill.controller import Simulator
from tests.drill.scenarios import NAME, NS, correct

STEPS = ("preflight", "submit", "first-checkpoint", "crash", "suspend-resume", "cross-node")
WAIT = 60.0  # generous for a loaded machine: every wait ends on a condition


class Lines:
    """The drill's stderr, line by line, read in a thread."""

    def __init__(self, stream: Any) -> None:
        self.q: queue.Queue[str] = queue.Queue()
        self.seen: list[str] = []
        threading.Thread(target=self._read, args=(stream,), daemon=True).start()

    def _read(self, stream: Any) -> None:
        for line in stream:
            self.q.put(line)

    def wait_for(self, text: str, timeout: float = WAIT) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                line = self.q.get(timeout=0.05)
            except queue.Empty:
                continue
            self.seen.append(line)
            if text in line:
                return
        raise AssertionError(f"never saw {text!r}; saw:\n{''.join(self.seen)}")

    def rest(self) -> str:
        while True:
            try:
                self.seen.append(self.q.get(timeout=0.5))
            except queue.Empty:
                return "".join(self.seen)


@contextmanager
def running(argv: list[str]) -> Iterator[tuple[subprocess.Popen[str], Lines, Lines]]:
    """A drill subprocess and its stderr and stdout read line by line; killed if still running at the end."""
    p = drill_subprocess(argv)
    try:
        yield p, Lines(p.stderr), Lines(p.stdout)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()


def ends(p: subprocess.Popen[str], lines: Lines, after: str) -> None:
    """The drill ends within WAIT of `after`; else it is aborted and the test fails with its threads' stacks."""
    if stuck(p, WAIT):
        raise AssertionError(f"the drill did not end {WAIT:g} s after {after}; its stderr and its threads' "
                             f"stacks:\n{lines.rest()[-8000:]}")


def until(cond: Callable[[], bool], timeout: float = WAIT) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return
        time.sleep(0.01)
    raise AssertionError("the condition never held")


def hold_for(sim: Simulator, step: str) -> Callable[[], None]:
    """Make `step` wait for ever (so the signal lands in it): holds set before, or once the cluster is ready."""
    if step == "submit":
        sim.holds.add("start")
    elif step == "first-checkpoint":
        sim.holds.add("saves")
    starts = {"crash": 1, "suspend-resume": 2, "cross-node": 3}.get(step)

    def arm() -> None:
        if starts is not None:  # the attempts before this step have started: later ones will not
            until(lambda: len(sim.starts) >= starts)
            sim.holds.add("start")

    return arm


def interrupt(c: Cluster, step: str, sig: int, arm: Callable[[], None], *extra: str) -> tuple[int, dict[str, Any],
                                                                                              str]:
    argv = [*extra, "--yes", "-o", "json", "--kubeconfig", str(c.kubeconfig), "--playbook", str(c.playbook)]
    with running(argv) as (p, lines, stdout):
        arm()
        index = STEPS.index(step) + 1
        lines.wait_for(f"[{index}/7] {step}:")  # the step has begun: from here a signal stops it
        p.send_signal(sig)
        ends(p, lines, signal.Signals(sig).name)
        out = stdout.rest()
    return p.returncode, json.loads(out), lines.rest()


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
@pytest.mark.parametrize("step", STEPS)
def test_interrupted_at_every_step_leaves_the_cluster_as_it_was(make_cluster: Any, step: str, sig: int) -> None:
    c = make_cluster(correct())
    arm = hold_for(c.sim, step)  # before the TrainJob exists: a hold on its first pod or first save
    c.seed()
    until(lambda: c.kube.get("trainjobs", NS, NAME) is not None)
    before = c.state()
    rc, doc, err = interrupt(c, step, sig, arm, f"{NS}/{NAME}")
    assert rc == (130 if sig == signal.SIGINT else 143), err
    assert doc["verdict"] == "stopped", err
    by = {s["id"]: s for s in doc["steps"]}
    stopped = [s["id"] for s in doc["steps"] if s["status"] == "stopped"]
    if step == "preflight":
        assert stopped and STEPS.index(stopped[0]) >= 0, err
    else:
        assert stopped == [step], (stopped, err)
    assert by["cleanup"]["status"] == "passed", (by["cleanup"], err)
    c.sim.holds.clear()
    assert c.state() == before
    tj = c.kube.get("trainjobs", NS, NAME)
    assert not tj["spec"].get("suspend")
    assert all(not (n.get("spec") or {}).get("unschedulable") for n in c.kube.objects("nodes"))


@pytest.mark.parametrize("step", ["submit", "cross-node"])
def test_interrupted_submission_is_deleted(make_cluster: Any, step: str) -> None:
    c = make_cluster(correct())
    files = [str(f) for f in c.files()]
    before = c.state()
    arm = hold_for(c.sim, step)
    rc, doc, err = interrupt(c, step, signal.SIGTERM, arm, "--submit", *files, "--cross-node", "cordon")
    assert rc == 143 and doc["verdict"] == "stopped", err
    assert c.state() == before  # the PVC, ConfigMap, runtime and TrainJob it created are gone, the node uncordoned
    assert c.kube.get("trainjobs", NS, NAME) is None


@pytest.mark.parametrize("mode", ["selector", "cordon"])
def test_cleanup_undoes_what_a_killed_drill_left(make_cluster: Any, mode: str) -> None:
    c = make_cluster(correct())
    c.seed()
    until(lambda: c.kube.get("trainjobs", NS, NAME) is not None)
    before = c.state()
    arm = hold_for(c.sim, "cross-node")
    argv = [f"{NS}/{NAME}", "--yes", "--cross-node", mode, "--kubeconfig", str(c.kubeconfig), "--playbook",
            str(c.playbook)]
    p = drill_subprocess(argv)
    lines = Lines(p.stderr)
    try:
        arm()
        lines.wait_for("resume the TrainJob:" if mode == "selector" else "[6/7] cross-node:")
        lines.wait_for("for the trainer to run on another node")
        p.kill()  # no cleanup at all
        p.wait(timeout=WAIT)
    finally:
        if p.poll() is None:
            p.kill()
    tj = c.kube.get("trainjobs", NS, NAME)
    assert any(k.startswith("drill.ckpt-doctor.io/") for k in tj["metadata"].get("annotations") or {})
    if mode == "cordon":
        assert c.kube.get("nodes", None, "gpu-node-a")["spec"].get("unschedulable")
    else:
        assert tj["spec"].get("podTemplateOverrides")
    c.sim.holds.clear()
    got = c.drill("--cleanup", "-n", NS, "-o", "json")
    assert got.rc == 0, got.err
    doc = got.json()
    assert doc["how"] == "cleanup" and doc["verdict"] == "passed", got.err
    assert "undid" in doc["steps"][0]["observed"]
    assert c.state() == before
    again = c.drill("--cleanup", "-n", NS, "-o", "json")  # idempotent: nothing left, nothing done
    assert again.rc == 0 and "no drill leftovers" in again.json()["steps"][0]["observed"]


def test_a_lost_cluster_is_an_error_with_the_leftovers_named(make_cluster: Any) -> None:
    c = make_cluster(correct())
    arm = hold_for(c.sim, "suspend-resume")
    c.seed()
    argv = [f"{NS}/{NAME}", "--yes", "-o", "json", "--kubeconfig", str(c.kubeconfig), "--playbook", str(c.playbook),
            "--request-timeout", "2"]
    with running(argv) as (p, lines, stdout):
        arm()
        lines.wait_for("for the resumed trainer to run")
        c.kube.fault(status=503)  # the API server stops answering while the TrainJob is half-way through a resume
        ends(p, lines, "the cluster went")
        out = stdout.rest()
    err = lines.rest()
    assert p.returncode == 3, err
    doc = json.loads(out)
    assert doc["verdict"] == "error"
    assert doc["leftovers"], doc
    assert "drill --cleanup" in err and "LEFT BEHIND" in err


def test_a_signal_inside_a_request_stops_the_drill_once_the_request_ended(make_cluster: Any) -> None:
    """SIGINT while the drill's main thread waits for an answer the server holds back: the drill does not raise in
    the middle of the client's code (its connection pool's lock could stay taken for ever, and the cleanup's
    requests block on it); it stops once that request ended, cleans up and exits 130."""
    c = make_cluster(correct())
    arm = hold_for(c.sim, "crash")
    c.seed()
    until(lambda: c.kube.get("trainjobs", NS, NAME) is not None)
    before = c.state()
    argv = [f"{NS}/{NAME}", "--yes", "-o", "json", "--kubeconfig", str(c.kubeconfig), "--playbook", str(c.playbook)]
    with running(argv) as (p, lines, stdout):
        arm()
        lines.wait_for("[4/7] crash:")
        held = c.kube.fault(verb="list", resource="pods", effect="hang", hang_seconds=3, times=1)
        until(lambda: held.fired >= 1)  # the drill is inside that request now
        sent = time.monotonic()
        p.send_signal(signal.SIGINT)
        ends(p, lines, "SIGINT")
        took = time.monotonic() - sent
        out = stdout.rest()
    err = lines.rest()
    assert p.returncode == 130, err
    doc = json.loads(out)
    assert doc["verdict"] == "stopped", err
    assert next(s for s in doc["steps"] if s["id"] == "cleanup")["status"] == "passed", err
    assert took >= 1.5, f"stopped {took:.2f} s after the signal, in the middle of the held request"
    c.sim.holds.clear()
    assert c.state() == before
