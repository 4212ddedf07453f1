"""The informer loop against FakeKube's watch faults: bookmarks, 410 Gone, dropped and refused watches."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ckpt_doctor.sources.live import Api, connect
from ckpt_doctor.sources.live.fleet import current_rv
from ckpt_doctor.sources.live.kinds import CONFIGMAP, JOBSET, Kind
from ckpt_doctor.watch.informer import Informer
from ckpt_doctor.watch.jlog import JsonLog
from tests.fakeapi.server import FakeKube
from tests.live.conftest import REAL_KUBECONFIG, serving
from tests.watch.conftest import wait_for

pytestmark = pytest.mark.skipif(bool(REAL_KUBECONFIG), reason="injects watch faults on the fake API server")


def jobset(name: str, restarts: int = 0) -> dict[str, Any]:
    return {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
            "metadata": {"name": name, "namespace": "ml"}, "status": {"restarts": restarts}}  # fmt: skip


class Seen:
    def __init__(self, api: Api) -> None:
        self.api = api
        self.events: list[tuple[str, str]] = []
        self.lists: list[bool] = []
        self.lock = threading.Lock()

    def on_event(self, kind: Kind, etype: str, obj: dict[str, Any]) -> None:
        with self.lock:
            self.events.append((etype, obj["metadata"]["name"]))

    def on_list(self, kind: Kind, first: bool) -> str:
        with self.lock:
            self.lists.append(first)
        return current_rv(self.api, kind, "ml")


@pytest.fixture
def informer(tmp_path: Path) -> Iterator[tuple[FakeKube, Informer, Seen]]:
    with serving() as kube:
        kube.add(jobset("a"))
        api = Api(connect(kubeconfig=str(kube.kubeconfig(tmp_path / "kc", namespace="ml")), timeout=5))
        seen = Seen(api)
        stop = threading.Event()
        log = JsonLog(open(tmp_path / "log.jsonl", "w"))
        inf = Informer(api, JOBSET, "ml", seen.on_event, seen.on_list, stop, log, watch_seconds=30, max_backoff=0.5)
        inf.start()
        try:
            wait_for(inf.synced.is_set, "the first watch")
            yield kube, inf, seen
        finally:
            stop.set()
            inf.close()
            inf.thread.join(timeout=10)
            assert not inf.thread.is_alive(), "close() must end the watch at once"


def test_changes_arrive_and_bookmarks_keep_the_resource_version_fresh(
    informer: tuple[FakeKube, Informer, Seen],
) -> None:
    kube, inf, seen = informer
    kube.update(jobset("a", restarts=1))
    wait_for(lambda: ("MODIFIED", "a") in seen.events, "the change")
    kube.bookmark_interval = 0.2
    kube.end_watches()  # the stream opened before bookmarks were on ends; the next one gets them
    kube.add({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "elsewhere", "namespace": "ml"}})
    target = kube.resource_version  # moved by an object the informer does not watch
    wait_for(lambda: inf.resource_version == target, "a bookmark at the server's resourceVersion")
    assert seen.events == [("MODIFIED", "a")]  # bookmarks are not events
    assert inf.relists == 0


def test_a_watch_cut_while_the_server_forgets_its_history_lists_again(
    informer: tuple[FakeKube, Informer, Seen],
) -> None:
    kube, inf, seen = informer
    kube.drop_watches_after(0)  # every stream is cut at its next event
    kube.end_watches()
    kube.add(jobset("b"))  # missed: the stream that would carry it is cut
    kube.compact()  # and the server no longer has it in its history
    kube.clear_faults()
    wait_for(lambda: inf.relists >= 1, "a list after 410 Gone")
    assert seen.lists[0] is True and False in seen.lists
    kube.add(jobset("c"))
    wait_for(lambda: ("ADDED", "c") in seen.events, "changes after the new list")
    assert inf.reconnects >= 1


def test_refused_watches_back_off_and_recover(informer: tuple[FakeKube, Informer, Seen]) -> None:
    kube, inf, seen = informer
    kube.fault(verb="watch", resource="jobsets", status=500, times=3)
    kube.end_watches()
    wait_for(lambda: inf.errors >= 3, "three failed watches")
    wait_for(lambda: inf.connected, "the watch back")
    kube.add(jobset("d"))
    wait_for(lambda: ("ADDED", "d") in seen.events, "changes after the errors")


def test_a_slow_stream_still_delivers_in_order(informer: tuple[FakeKube, Informer, Seen]) -> None:
    kube, _inf, seen = informer
    kube.watch_event_delay_ms = 30
    for i in range(5):
        kube.update(jobset("a", restarts=i + 2))
    wait_for(lambda: len(seen.events) >= 5, "five slow events")
    assert seen.events[:5] == [("MODIFIED", "a")] * 5


def test_current_rv_reads_one_item(tmp_path: Path) -> None:
    with serving() as kube:
        for i in range(5):
            kube.add({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"c{i}", "namespace": "ml"}})
        api = Api(connect(kubeconfig=str(kube.kubeconfig(tmp_path / "kc")), timeout=5))
        kube.reset_requests()
        assert current_rv(api, CONFIGMAP, "ml") == kube.resource_version
        assert [r.query.get("limit") for r in kube.requests] == ["1"]
