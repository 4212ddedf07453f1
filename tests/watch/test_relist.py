"""The watcher (in-process, against FakeKube) when its watches are cut and list again, and when the cluster comes
back after an outage: unchanged objects are no change, and readiness follows the scans.

Both failed before: every list made again marked every TrainJob dirty (resetting its debounce each time, so
that verdicts waited for `--max-delay`), and `/readyz` stayed 503 until each watch's backoff ran out, up to
half a minute after re-diagnoses read the cluster again. Every wait is on a condition, never a fixed sleep.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from ckpt_doctor.sources.live import connect
from ckpt_doctor.sources.live.kinds import TRAINJOB
from ckpt_doctor.watch.jlog import JsonLog
from ckpt_doctor.watch.watcher import Watcher, WatchOptions
from tests.fakeapi.server import FakeKube
from tests.live.conftest import REAL_KUBECONFIG, serving
from tests.watch.conftest import first_verdicts, wait_for
from tests.watch.sim import Job, restarted, running_first_attempt

pytestmark = pytest.mark.skipif(bool(REAL_KUBECONFIG), reason="injects watch faults on the fake API server")

NAME = "sft-resumable"
A, B = ("team-a", NAME), ("team-b", NAME)


def _scanned_at(w: Watcher, key: tuple[str, str]) -> float | None:
    with w.registry.lock:
        st = w.registry.jobs.get(key)
        return st.scanned_at if st is not None and st.figures is not None else None


def _scan_failed(w: Watcher, key: tuple[str, str]) -> str | None:
    with w.registry.lock:
        st = w.registry.jobs.get(key)
        return st.scan_failed if st is not None else None


def _quiet(w: Watcher) -> bool:
    return w.pending.depth() == 0 and not w.pending.running


def running(tmp_path: Path, **options: float) -> Iterator[tuple[FakeKube, Watcher, dict[str, Job]]]:
    with serving() as kube, open(tmp_path / "log.jsonl", "w") as logf:
        kube.bookmark_interval = 0.5
        jobs = {ns: Job(ns) for ns in ("team-a", "team-b")}
        for job in jobs.values():
            job.show(kube, running_first_attempt())
        cluster = connect(kubeconfig=str(kube.kubeconfig(tmp_path / "kc", namespace="default")), timeout=5)
        opts = WatchOptions(listen="127.0.0.1:0", watch_seconds=10, **options)  # type: ignore[arg-type]
        w = Watcher(cluster, None, None, opts, JsonLog(logf))
        w.start()
        runner = threading.Thread(target=w.run, daemon=True)
        runner.start()
        try:
            first_verdicts(lambda: _scanned_at(w, A) and _scanned_at(w, B) and _quiet(w), tmp_path / "log.jsonl")
            yield kube, w, jobs
        finally:
            w.stop_event.set()
            w.stop()
            runner.join(timeout=10)
        assert kube.errors == [], "the fake API server hit a bug"


@pytest.fixture
def relisting(tmp_path: Path) -> Iterator[tuple[FakeKube, Watcher, dict[str, Job]]]:
    yield from running(tmp_path, debounce=0.3, max_delay=120)


def test_a_list_made_again_marks_only_what_changed(relisting: tuple[FakeKube, Watcher, dict[str, Job]]) -> None:
    kube, w, jobs = relisting
    b_before = _scanned_at(w, B)
    relists = {i.kind.plural: i.relists for i in w.informers}
    # every watch is cut, and the server forgets its history: each watch lists again (410 Gone), nothing changed
    kube.drop_watches_after(0)  # nothing more reaches the watches: their resourceVersion stays where it is
    kube.add({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "elsewhere", "namespace": "other"}})
    kube.compact()  # the server forgets its history: it no longer goes back to the watches' resourceVersion
    kube.end_watches()
    kube.clear_faults()  # every watch opened from now on is answered 410 Gone, and lists again
    wait_for(lambda: all(i.relists > relists[i.kind.plural] for i in w.informers), "a list again of every kind")
    assert w.pending.depth() == 0, "a list of unchanged objects marked TrainJobs dirty"
    # a real change of one job is re-diagnosed (well before --max-delay); the unchanged one is not
    a_before = _scanned_at(w, A)
    jobs["team-a"].show(kube, restarted(resume=True))
    wait_for(lambda: (_scanned_at(w, A) or 0) > (a_before or 0) and _quiet(w), "the changed job's verdict")
    assert _scanned_at(w, B) == b_before, "the unchanged job was diagnosed again"


def test_a_watch_that_replays_what_it_sent_is_no_change(relisting: tuple[FakeKube, Watcher, dict[str, Job]]) -> None:
    """A watch opened again from an older resourceVersion (or with the initial events) replays objects as they
    were: the same resourceVersion is no change."""
    kube, w, _jobs = relisting
    pods = [p for p in kube.objects("pods", "team-b")]
    assert pods
    inf = next(i for i in w.informers if i.kind.kind == "Pod")
    for pod in pods:
        w._on_event(inf.kind, "ADDED", pod)  # exactly what the watch delivered before
    assert w.pending.depth() == 0
    changed = {**pods[0], "metadata": {**pods[0]["metadata"], "resourceVersion": "999999"}}
    w._on_event(inf.kind, "MODIFIED", changed)
    assert w.pending.depth() == 1


@pytest.fixture
def outage(tmp_path: Path) -> Iterator[tuple[FakeKube, Watcher, dict[str, Job]]]:
    yield from running(tmp_path, debounce=0.2, max_delay=1, retry_after=0.3, stale_after=1.0)


def test_readiness_follows_the_scans_after_an_outage(outage: tuple[FakeKube, Watcher, dict[str, Job]]) -> None:
    kube, w, _jobs = outage
    assert w.ready() == (True, "ok")
    kube.fault(status=500)  # the API server fails every request: the watches back off, re-diagnoses fail
    kube.end_watches()
    wait_for(lambda: not w.ready()[0], "not ready: the watches are down")
    wait_for(lambda: all(i.errors >= 4 for i in w.informers), "every watch backing off (8 s and more)")
    w.pending.mark(A)  # a change seen just before the outage: its re-diagnosis fails, and is retried
    wait_for(lambda: _scan_failed(w, A), "a failed re-diagnosis")
    kube.clear_faults()
    wait_for(lambda: _scan_failed(w, A) is None, "the re-diagnoses read the cluster again")
    assert w.ready() == (True, "ok"), "readiness waited for the watches' backoff"
    wait_for(lambda: all(i.connected for i in w.informers if i.kind is not TRAINJOB), "the watches open again")
