"""`collect --follow`: the recorder keeps a restarted attempt's pods, events and logs; Ctrl-C leaves a bundle."""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ckpt_doctor.sources.bundle_write import write_bundle
from ckpt_doctor.sources.live import connect
from ckpt_doctor.sources.recorder import LogWindow, Recorder
from tests.fakeapi.server import FakeKube
from tests.live.conftest import REAL_KUBECONFIG, run_cli, run_subprocess
from tests.live.scenario import NAME, NS, T1, Scenario, event, pod_name

pytestmark = pytest.mark.skipif(bool(REAL_KUBECONFIG), reason="drives a TrainJob through a restart: fake only")


def _wait(cond: Callable[[], bool], timeout: float = 30.0) -> None:  # generous: CI machines are shared
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError("timed out waiting")
        time.sleep(0.02)


def _attempt0(sc: Scenario) -> list[dict[str, Any]]:
    """The TrainJob while attempt 0 runs: no restart yet, two healthy pods."""
    objs = []
    for o in sc.objects():
        if o["kind"] == "Pod" and o["metadata"]["labels"]["jobset.sigs.k8s.io/jobset-name"] == NAME:
            continue
        if o["kind"] == "JobSet":
            o["status"] = {"restarts": 0}
        objs.append(o)
    for i in range(sc.pods):
        p = sc.pod(i, attempt=0)
        p["status"]["containerStatuses"][0].update(restartCount=0, containerID=f"containerd://a0-{i}")
        p["status"]["containerStatuses"][0].pop("lastState", None)
        objs.append(p)
    return objs


def _start(kube: FakeKube, tmp_path: Path) -> tuple[Recorder, threading.Thread, dict[str, Any]]:
    cluster = connect(kubeconfig=str(kube.kubeconfig(tmp_path / "kc", namespace=NS)), timeout=5, pool=64)
    rec = Recorder(cluster, NS, NAME, watch_seconds=2, grace=1.0)
    ready = threading.Event()
    result: dict[str, Any] = {}

    def run() -> None:
        try:
            result["value"] = rec.run(on_ready=ready.set)
        except BaseException as e:  # surfaced by the test
            result["error"] = e
            ready.set()

    t = threading.Thread(target=run, daemon=True)
    t.start()
    assert ready.wait(10), "the recorder never got ready"
    assert "error" not in result, result.get("error")
    return rec, t, result


def _uid(kube: FakeKube, event_name: str) -> str:
    ev = kube.get("events", NS, event_name)
    return str(ev["metadata"]["uid"]) if ev else ""


def _window(rec: Recorder, pod: str) -> bytes:
    with rec._lock:
        runs = rec._instances.get((pod, "node")) or []
        return b"".join(bytes(r.window.head + r.window.tail) for r in runs)


def test_recorder_keeps_the_evidence_of_a_restart(tmp_path: Path) -> None:
    sc = Scenario(pods=2)
    with FakeKube() as kube:
        kube.add_many(_attempt0(sc))
        old = [pod_name(NAME, i, 0) for i in range(2)]
        for i, p in enumerate(old):
            kube.set_log(
                NS, p, "node", f"rank {i} starting\n[checkpoint] no prior checkpoint in /ckpt/sft-run, starting fresh\n"
            )
        rec, thread, result = _start(kube, tmp_path)
        # attempt 0 trains and saves, and the recorder sees it as it happens
        kube.append_log(NS, old[0], "node", "step 100 loss 1.2\n[checkpoint] saved /ckpt/sft-run/checkpoint-100\n")
        kube.append_log(NS, old[0], "node", "step 200 loss 1.1\n[checkpoint] saved /ckpt/sft-run/checkpoint-200\n")
        _wait(lambda: b"checkpoint-200" in _window(rec, old[0]))
        # a watch drops mid-stream: the recorder resumes from the last resourceVersion it saw
        kube.drop_watches_after(1)
        kube.add(event("sft-run.oom", "Pod", old[1], "OOMKilling", "Memory cgroup out of memory", ts=T1))
        _wait(lambda: rec.reconnects >= 1 and ("Event", _uid(kube, "sft-run.oom")) in rec._objects)
        # then the history is compacted while the watch is cut: resuming gets 410 Gone, the recorder lists again
        kube.drop_watches_after(0)
        kube.compact()
        kube.add(event("sft-run.evicted", "Pod", old[1], "Evicted", "The node was low on resource: memory", ts=T1))
        time.sleep(0.3)
        kube.drop_watches_after(None)
        _wait(lambda: rec.relists >= 1 and ("Event", _uid(kube, "sft-run.evicted")) in rec._objects)
        # the JobSet restarts: attempt-0 pods and their logs are deleted, attempt-1 pods start fresh
        for p in old:
            kube.add(event(f"{p}.killing", "Pod", p, "Killing", "Stopping container node", ts=T1))
            kube.delete("pods", NS, p)
        js = kube.get("jobsets", NS, NAME)
        assert js is not None
        js["status"] = {"restarts": 1}
        kube.update(js)
        new = [pod_name(NAME, i, 1) for i in range(2)]
        for i, p in enumerate(new):
            pod = sc.pod(i, attempt=1)
            pod["status"]["containerStatuses"][0].update(restartCount=0, containerID=f"containerd://a1-{i}")
            pod["status"]["containerStatuses"][0].pop("lastState", None)
            kube.add(pod)
            kube.set_log(
                NS,
                p,
                "node",
                f"rank {i} starting\n[checkpoint] no prior checkpoint in /ckpt/sft-run, "
                "starting fresh\nstep 1 loss 2.0\n",
            )
        _wait(lambda: all(b"step 1 loss" in _window(rec, p) for p in new))
        # the TrainJob fails: the recording ends by itself
        tj = kube.get("trainjobs", NS, NAME)
        assert tj is not None
        tj["status"]["conditions"].append({"type": "Failed", "status": "True", "reason": "JobSetFailed"})
        kube.update(tj)
        thread.join(15)
        assert not thread.is_alive() and "error" not in result, result.get("error")
        snap, extra = result["value"]
        assert kube.errors == []
    assert snap.meta["recorded"]["stoppedBy"] == "the TrainJob finished: Failed (JobSetFailed)"
    pods = {o.name for o in snap.of_kind("Pod")}
    assert set(old + new) <= pods  # the deleted attempt-0 pods are kept
    assert b"checkpoint-200" in snap.logs[(old[0], "node", False)].read_head(1 << 20)
    events = {o.name for o in snap.of_kind("Event")}
    assert {"sft-run.oom", "sft-run.evicted", f"{old[0]}.killing", f"{old[1]}.killing"} <= events
    assert extra == {}
    out = write_bundle(snap, tmp_path / "recorded.tar.gz")
    doc = run_cli(["diagnose", "--bundle", str(out), "-o", "json"]).json()
    fresh = next(f for f in doc["findings"] if f["rule"] == "fresh-start-after-restart")
    assert fresh["status"] == "fail"
    # the facts now see what attempt 0 saved before the restart deleted its pod and log
    from ckpt_doctor.pipeline import diagnose_snapshot
    from ckpt_doctor.sources.bundle import open_bundle

    with open_bundle(out) as recorded:
        runs = diagnose_snapshot(recorded).facts.history.runs
        assert {r.pod.name: r.max_saved() for r in runs if r.pod.name in old} == {old[0]: 200, old[1]: None}


def test_ctrl_c_leaves_a_valid_bundle(tmp_path: Path) -> None:
    with FakeKube() as kube:
        Scenario(pods=2).load(kube)
        kc = kube.kubeconfig(tmp_path / "kc", namespace=NS)
        out = tmp_path / "interrupted.tar.gz"
        proc = run_subprocess(["collect", NAME, "-o", str(out), "--follow", "--kubeconfig", str(kc)])
        lines: list[str] = []
        reader = threading.Thread(target=lambda: lines.extend(iter(proc.stderr.readline, "")), daemon=True)  # type: ignore[union-attr]
        reader.start()
        _wait(lambda: any("recording TrainJob team-a/sft-run" in line for line in lines), timeout=20)
        kube.append_log(NS, pod_name(NAME, 1), "node", "step 41 loss 1.9\n")
        time.sleep(0.3)
        proc.send_signal(signal.SIGINT)
        rc = proc.wait(20)
        reader.join(5)
    assert rc == 0, "".join(lines)
    assert any("stopped by Ctrl-C; assembling the bundle" in line for line in lines)
    assert any(f"wrote {out}" in line for line in lines)
    offline = run_cli(["diagnose", "--bundle", str(out), "-o", "json"])
    assert offline.rc in (0, 1), offline.err
    from ckpt_doctor.sources.bundle import open_bundle

    with open_bundle(out) as snap:
        assert snap.meta["recorded"]["stoppedBy"] == "stopped by Ctrl-C"
        assert b"step 41 loss 1.9" in snap.logs[(pod_name(NAME, 1), "node", False)].read_head(1 << 20)


def test_a_finished_trainjob_is_collected_once(tmp_path: Path) -> None:
    with FakeKube() as kube:
        sc = Scenario(pods=1)
        sc.load(kube)
        tj = kube.get("trainjobs", NS, NAME)
        assert tj is not None
        tj["status"]["conditions"].append({"type": "Complete", "status": "True", "reason": "JobSetCompleted"})
        kube.update(tj)
        kc = kube.kubeconfig(tmp_path / "kc", namespace=NS)
        got = run_cli(["collect", NAME, "-o", str(tmp_path / "done.tgz"), "--follow", "--kubeconfig", str(kc)])
        assert got.rc == 0, got.err
        assert "the TrainJob had already finished: Complete (JobSetCompleted)" in got.err
        assert kube.count("GET", "/log") == 2  # one current and one previous log: no follow stream opened


def test_log_window_keeps_head_and_tail() -> None:
    w = LogWindow(head_limit=10, tail_limit=8)
    for chunk in (b"0123456", b"789abcdef", b"ghijklmnopqrstuvwxyz"):
        w.feed(chunk)
    res = w.result("p", "node", False)
    assert res.head == b"0123456789" and res.tail == b"stuvwxyz"
    small = LogWindow(head_limit=10, tail_limit=8)
    small.feed(b"0123456789abc")
    assert small.result("p", "node", False).head == b"0123456789abc"
