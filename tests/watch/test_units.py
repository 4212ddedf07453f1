"""The watcher's parts one by one: routing, the debounced queue, what is kept per job, the collector,
the Events it may write (in-process, against FakeKube)."""

from __future__ import annotations

import threading
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from ckpt_doctor.fleet.summary import JobSummary, Lost
from ckpt_doctor.watch.events import REASON, event_body, should_emit
from ckpt_doctor.watch.metrics import Metrics
from ckpt_doctor.watch.routing import longest_prefix, route
from ckpt_doctor.watch.state import Figures, Pending, Registry, remember, remembered_loss
from tests.live.conftest import REAL_KUBECONFIG
from tests.watch.conftest import first_verdicts, parse_metrics, value, wait_for


def registry(*jobs: tuple[str, str]) -> Registry:
    r = Registry()
    for ns, name in jobs:
        r.upsert(ns, name, f"uid-{name}", "ClusterTrainingRuntime/torch", "1")
    return r


def test_routing() -> None:
    r = registry(("ml", "job-1"), ("ml", "job-10"), ("cv", "job-1"))
    pod = {"metadata": {"namespace": "ml", "labels": {"jobset.sigs.k8s.io/jobset-name": "job-10"}}}
    assert route("Pod", pod, r) == [("ml", "job-10")]
    assert route("JobSet", {"metadata": {"namespace": "cv", "name": "job-1"}}, r) == [("cv", "job-1")]
    assert route("JobSet", {"metadata": {"namespace": "cv", "name": "job-10"}}, r) == []  # not watched there

    def ev(kind: str, name: str, **extra: Any) -> dict[str, Any]:
        return {"metadata": {"namespace": "ml"}, "involvedObject": {"kind": kind, "name": name}, **extra}

    assert route("Event", ev("Pod", "job-10-node-0-0-abcde"), r) == [("ml", "job-10")]  # the longest name wins
    assert route("Event", ev("Pod", "job-1-node-0-0-abcde"), r) == [("ml", "job-1")]
    assert route("Event", ev("Job", "job-1-node-0"), r) == [("ml", "job-1")]
    assert route("Event", ev("Pod", "unrelated-7d9c"), r) == []
    assert route("Event", ev("TrainJob", "job-10"), r) == [("ml", "job-10")]
    assert route("Event", ev("Workload", "trainjob-job-10-3f2a1"), r) == [("ml", "job-10")]
    assert route("Event", ev("TrainJob", "job-10", reportingComponent="ckpt-doctor"), r) == []  # its own Events
    assert route("Event", ev("PersistentVolumeClaim", "ckpt"), r) == []
    s = summary(claims=frozenset({"ckpt"}))
    r.scanned("ml", "job-1", s)
    r.scanned("ml", "job-10", s)
    assert route("Event", ev("PersistentVolumeClaim", "ckpt"), r) == [("ml", "job-1"), ("ml", "job-10")]
    assert longest_prefix("a-b-c", {"a", "a-b"}) == "a-b"


def summary(**kw: Any) -> JobSummary:
    base: dict[str, Any] = {
        "namespace": "ml", "name": "job-1", "uid": "u", "runtime": "", "state": "running", "attempts": 1,
        "lost": Lost(0), "resume_status": "none", "last_checkpoint_step": None, "last_checkpoint_time": None,
        "save_interval_seconds": None, "worst": None, "cause": None,
    }  # fmt: skip
    base.update(kw)
    return JobSummary(**base)


def test_the_queue_debounces_and_does_not_starve() -> None:
    p = Pending(debounce=5, max_delay=20)
    p.mark(("ml", "a"), now=100)
    p.mark(("ml", "a"), now=103)  # still changing
    assert p.take(10, now=106) == []
    assert p.take(10, now=108.5) == [("ml", "a")]  # quiet for 5 s
    assert p.take(10, now=200) == []  # taken once; it is running
    for t in range(0, 25, 2):  # changes every 2 s, for ever
        p.mark(("ml", "b"), now=300 + t)
    assert p.take(10, now=320.5) == [("ml", "b")]  # due after max_delay anyway
    p.mark(("ml", "a"), now=400)  # changed while it was being diagnosed: not taken twice at once
    assert p.take(10, now=500) == []
    p.done(("ml", "a"))
    assert p.take(10, now=500) == [("ml", "a")]
    assert p.depth() == 0


def test_a_job_recreated_under_its_name_starts_afresh() -> None:
    r = registry(("ml", "a"))
    r.scanned("ml", "a", summary(claims=frozenset({"c"})))
    assert r.upsert("ml", "a", "uid-a", "x", "1") is False  # same resourceVersion: nothing changed
    assert r.upsert("ml", "a", "another-uid", "x", "9") is True
    (_, st), = r.view()
    assert st.figures is None and r.claim_holders("ml", "c") == set()


def test_remembered_steps_fill_what_a_restart_deleted() -> None:
    memory: dict[int, int] = {}
    remember(memory, summary(attempt_steps=[(0, 120)]))
    later = summary(attempt_steps=[(0, None), (1, 40)], interruptions=[(0, 1, 0, None)], lost=Lost(None, True))
    remember(memory, later)
    assert memory == {0: 120, 1: 40}
    assert remembered_loss(later, memory) == (120, False)  # at least 120 steps, said to be a lower bound
    assert remembered_loss(summary(interruptions=[(0, 1, 0, 30)]), {}) == (30, True)
    assert remembered_loss(summary(interruptions=[(0, 1, None, None)]), memory) == (None, False)
    for i in range(10):
        remember(memory, summary(attempt_steps=[(i, i * 10)]))
    assert sorted(memory) == [6, 7, 8, 9]  # bounded


def test_deleted_jobs_lose_their_series_at_once() -> None:
    r = registry(("ml", "a"), ("ml", "b"))
    r.scanned("ml", "a", summary(name="a", failed=Counter({("fresh-start-after-restart", "critical"): 1}),
                                 resume_status="fresh_start"))  # fmt: skip
    m = Metrics(r, lambda: [], lambda: 0)
    from prometheus_client.exposition import generate_latest

    s = parse_metrics(generate_latest(m.registry).decode())
    ml_a = {"namespace": "ml", "trainjob": "a"}
    assert value(s, "ckpt_doctor_trainjob_resume_status", **ml_a, status="fresh_start") == 1
    assert value(s, "ckpt_doctor_finding", **ml_a, rule="fresh-start-after-restart", severity="critical") == 1
    assert value(s, "ckpt_doctor_trainjob_info", namespace="ml", trainjob="b", runtime="ClusterTrainingRuntime/torch",
                 uid="uid-b") == 1  # fmt: skip
    assert value(s, "ckpt_doctor_trainjob_attempt", namespace="ml", trainjob="b") is None  # not diagnosed yet
    r.remove("ml", "a")
    s = parse_metrics(generate_latest(m.registry).decode())
    assert not [k for k in s if dict(k[1]).get("trainjob") == "a"]
    assert value(s, "ckpt_doctor_trainjobs") == 1


def test_events_only_on_a_change_of_verdict() -> None:
    ok = Figures.of(summary())
    bad = Figures.of(summary(failed=Counter({("fresh-start-after-restart", "critical"): 1}),
                             resume_status="fresh_start"))  # fmt: skip
    assert not should_emit(None, bad, initial=True)  # a baseline when the watcher starts
    assert should_emit(None, bad, initial=False)  # a job created since, failing at once
    assert not should_emit(None, ok, initial=False)
    assert should_emit(ok, bad, initial=True) and should_emit(bad, ok, initial=True)
    assert not should_emit(bad, bad, initial=True)
    body = event_body("ml", "job-1", "u", bad)
    assert body["type"] == "Warning" and body["reason"] == REASON
    assert body["involvedObject"] == {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
                                      "namespace": "ml", "name": "job-1", "uid": "u"}  # fmt: skip
    assert body["reportingComponent"] == "ckpt-doctor"


@pytest.mark.skipif(bool(REAL_KUBECONFIG), reason="changes a TrainJob on the fake API server")
def test_emit_events_writes_one_event_when_the_verdict_changes(tmp_path: Path) -> None:
    """The watcher in-process, --emit-events: a job that restarts from step 0 gets one Warning Event."""
    from ckpt_doctor.sources.live import connect
    from ckpt_doctor.watch.jlog import JsonLog
    from ckpt_doctor.watch.watcher import Watcher, WatchOptions
    from tests.live.conftest import serving
    from tests.scenario import PodSpecKnobs
    from tests.watch.sim import Job, restarted, running_first_attempt

    knobs = PodSpecKnobs(ckpt_volume="emptyDir")
    with serving() as kube, open(tmp_path / "log.jsonl", "w") as logf:
        job = Job("ml")
        job.show(kube, running_first_attempt(knobs))
        cluster = connect(kubeconfig=str(kube.kubeconfig(tmp_path / "kc", namespace="ml")), timeout=5)
        opts = WatchOptions(listen="127.0.0.1:0", debounce=0.2, max_delay=1, emit_events=True, watch_seconds=10)
        w = Watcher(cluster, "ml", None, opts, JsonLog(logf))
        w.start()
        runner = threading.Thread(target=w.run, daemon=True)
        runner.start()
        try:
            first_verdicts(lambda: w.registry.view()[0][1].figures is not None, tmp_path / "log.jsonl", "a verdict")
            assert [e for e in kube.objects("events", "ml") if e.get("reason") == REASON] == []  # a baseline
            job.show(kube, restarted(resume=False, knobs=knobs))
            wait_for(lambda: [e for e in kube.objects("events", "ml") if e.get("reason") == REASON], "an Event")
            # the Event itself does not make the watcher diagnose again (it ignores its own): the queue empties
            wait_for(lambda: w.pending.depth() == 0 and not w.pending.running, "a quiet queue")
            mine = [e for e in kube.objects("events", "ml") if e.get("reason") == REASON]
            assert len(mine) == 1
            (e,) = mine
            assert e["type"] == "Warning" and e["involvedObject"]["name"] == "sft-resumable"
            assert "fresh-start-after-restart [critical]" in e["message"]
            assert "ckpt-doctor diagnose ml/sft-resumable" in e["message"]
        finally:
            w.stop_event.set()
            w.stop()
            runner.join(timeout=10)
