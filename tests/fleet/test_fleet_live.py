"""The live fleet scan: every TrainJob's diagnosis is exactly `diagnose NS/NAME`'s, with shared lists.

Against FakeKube through the real client: the example stories side by side (each in its own namespace)
plus TrainJobs whose names prefix one another in one namespace; then with lists refused across
namespaces and in one namespace, where the coverage must still be per TrainJob what `diagnose` sees.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.clirun import Result, run_cli
from tests.fakeapi.server import FakeKube
from tests.fleet.cluster import SHARED_NS, crowd, mixed
from tests.live.conftest import REAL_KUBECONFIG, serving

pytestmark = pytest.mark.skipif(bool(REAL_KUBECONFIG), reason="seeds a multi-job cluster on the fake API server")

STAMP = "2026-12-01T00:00:00Z"


@pytest.fixture(autouse=True)
def same_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    """One collection time for every collection, so documents compare whole (the timeline says when)."""
    monkeypatch.setattr("ckpt_doctor.sources.live.collector.now_rfc3339", lambda: STAMP)


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[tuple[FakeKube, Path, list[tuple[str, str]]]]:
    with serving() as kube:
        jobs = mixed(kube)
        yield kube, kube.kubeconfig(tmp_path / "kc", namespace=SHARED_NS), jobs


def scan(kc: Path, *args: str) -> Result:
    got = run_cli(["diagnose", *args, "--kubeconfig", str(kc), "-q"])
    assert got.rc in (0, 1, 4), got.err
    return got


def single(kc: Path, ns: str, name: str) -> dict[str, Any]:
    got = run_cli(["diagnose", f"{ns}/{name}", "--kubeconfig", str(kc), "-o", "json", "-q"])
    assert got.rc in (0, 1), got.err
    return got.json()


def by_target(doc: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    return {(d["target"]["namespace"], d["target"]["name"]): d for d in doc["diagnoses"]}


def test_each_diagnosis_is_the_single_job_one(cluster: tuple[FakeKube, Path, list[tuple[str, str]]]) -> None:
    _kube, kc, jobs = cluster
    doc = scan(kc, "-A", "-o", "json").json()
    got = by_target(doc)
    assert sorted(got) == jobs
    for ns, name in jobs:
        assert got[(ns, name)] == single(kc, ns, name), f"{ns}/{name}"
    rows = {(r["namespace"], r["name"]): r for r in doc["trainjobs"]}
    assert rows[("story-llamafactory-overwrite-output-dir", "sft-resumable")]["worst"]["rule"] == (
        "fresh-start-after-restart")  # fmt: skip
    assert rows[("story-llamafactory-overwrite-output-dir", "sft-resumable")]["cause"] == (
        "llamafactory-overwrite-output-dir")  # fmt: skip
    assert rows[("story-healthy-resume", "sft-resumable")]["worst"] is None
    assert doc["summary"]["trainjobs"] == len(jobs) and doc["summary"]["unreadable"] == 0


def test_one_namespace_and_a_selector(cluster: tuple[FakeKube, Path, list[tuple[str, str]]]) -> None:
    kube, kc, jobs = cluster
    doc = scan(kc, "-n", SHARED_NS, "-o", "json").json()
    assert sorted(by_target(doc)) == [j for j in jobs if j[0] == SHARED_NS]
    for (ns, name), d in by_target(doc).items():
        assert d == single(kc, ns, name)
    tj = kube.get("trainjobs", SHARED_NS, "job-10")
    assert tj is not None
    tj["metadata"]["labels"] = {"team": "vision"}
    kube.update(tj)
    picked = scan(kc, "-A", "-l", "team=vision", "-o", "json").json()
    assert sorted(by_target(picked)) == [(SHARED_NS, "job-10")]
    assert by_target(picked)[(SHARED_NS, "job-10")] == single(kc, SHARED_NS, "job-10")
    # no name and no -n: still a usage error (diagnose needs a TrainJob, or a fleet asked for)
    assert run_cli(["diagnose", "--kubeconfig", str(kc)]).rc == 2


def test_refused_lists_are_gaps_for_each_job_of_that_namespace(
    cluster: tuple[FakeKube, Path, list[tuple[str, str]]],
) -> None:
    """Events may not be listed across namespaces (a namespace-scoped RoleBinding), nor at all in one
    namespace: the scan lists them namespace by namespace, and that namespace's jobs see the gap."""
    kube, kc, jobs = cluster
    refused = "story-disk-full"
    kube.fault(verb="list", resource="events", namespace="", status=403)
    kube.fault(verb="list", resource="events", namespace=refused, status=403)
    for res in ("persistentvolumes", "storageclasses", "nodes", "jobsets", "configmaps", "clustertrainingruntimes",
                "trainingruntimes"):  # fmt: skip
        kube.fault(verb="list", resource=res, status=403)  # only GETs allowed, as `ckpt-doctor rbac` grants
    doc = scan(kc, "-A", "-o", "json").json()
    got = by_target(doc)
    assert sorted(got) == jobs
    for ns, name in jobs:
        assert got[(ns, name)] == single(kc, ns, name), f"{ns}/{name}"
    gaps = got[(refused, "sft-resumable")]["notCollected"]
    assert {"what": "events", "reason": f"forbidden: cannot list events in {refused}"} in gaps
    assert not any(g["what"] == "events" for d in got.values() if d["target"]["namespace"] != refused
                   for g in d["notCollected"])  # fmt: skip
    notes = [n["reason"] for n in doc["notCollected"]]
    assert "forbidden: cannot list events at cluster scope: listed them namespace by namespace" in notes
    assert "forbidden: cannot list persistentvolumes at cluster scope: read them one by one" in notes


def test_a_namespace_whose_trainjobs_cannot_be_listed_is_a_row(tmp_path: Path) -> None:
    with serving() as kube:
        crowd(kube, 4, namespaces=2, pods=1)
        kc = kube.kubeconfig(tmp_path / "kc", namespace="fleet-0")
        kube.fault(verb="list", resource="trainjobs", namespace="", status=403)
        kube.fault(verb="list", resource="trainjobs", namespace="fleet-1", status=500)
        got = run_cli(["diagnose", "-A", "--kubeconfig", str(kc), "-o", "json", "-q"])
        text = run_cli(["diagnose", "-A", "--kubeconfig", str(kc), "-q"])
    doc = got.json()
    assert {d["target"]["namespace"] for d in doc["diagnoses"]} == {"fleet-0"}
    row = next(r for r in doc["trainjobs"] if r.get("error"))
    assert row == {"namespace": "fleet-1", "name": None,
                   "error": "TrainJobs cannot be listed: server error 500: list trainjobs in fleet-1: Internal error "
                            "occurred: injected fault"}  # fmt: skip
    assert re.search(r"^fleet-1 +\* +\? .*TrainJobs cannot be listed: server error 500", text.out, re.M), text.out
    assert "1 namespace whose TrainJobs could not be listed" in text.out


def test_trainjobs_not_listable_anywhere_is_exit_3(tmp_path: Path) -> None:
    with serving() as kube:
        crowd(kube, 1, pods=1)
        kc = kube.kubeconfig(tmp_path / "kc", namespace="fleet-0")
        kube.fault(verb="list", resource="trainjobs", status=403)
        kube.fault(verb="list", resource="namespaces", status=403)
        every = run_cli(["diagnose", "-A", "--kubeconfig", str(kc), "-q"])
        here = run_cli(["diagnose", "-n", "fleet-0", "--kubeconfig", str(kc), "-q"])
    assert every.rc == 3 and "cannot list TrainJobs in all namespaces" in every.err and "-n NAMESPACE" in every.err
    assert here.rc == 3 and "forbidden" in here.err and "rbac --fleet --check" in here.err


def test_an_empty_namespace_is_an_empty_table(tmp_path: Path) -> None:
    with serving() as kube:
        crowd(kube, 1, pods=1)
        kube.add({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "nothing-here"}})  # it exists
        kc = kube.kubeconfig(tmp_path / "kc", namespace="fleet-0")
        got = run_cli(["diagnose", "-n", "nothing-here", "--kubeconfig", str(kc), "-q"])
    assert got.rc == 0 and "No TrainJob found." in got.out


def test_usage_errors() -> None:
    assert run_cli(["diagnose", "--all"]).rc == 2
    assert run_cli(["diagnose", "ns/name", "-A"]).rc == 2
    assert run_cli(["diagnose", "-A", "-n", "x"]).rc == 2
    assert run_cli(["diagnose", "--bundle", "examples/healthy-resume", "-A"]).rc == 2
    assert run_cli(["diagnose", "--bundle", "examples/healthy-resume", "--all", "--trainjob", "x"]).rc == 2


def test_events_of_a_pod_not_named_after_its_jobset_and_of_pods_not_listable(
    cluster: tuple[FakeKube, Path, list[tuple[str, str]]],
) -> None:
    """The scan keeps, of the events list, those about a listed pod whatever its name, and every pod event where
    pods cannot be listed: each diagnosis stays the single job's."""
    kube, kc, jobs = cluster
    pod = copy.deepcopy(next(p for p in kube.objects("pods", SHARED_NS)
                             if p["metadata"]["labels"].get("jobset.sigs.k8s.io/jobset-name") == "job-1"))  # fmt: skip
    pod["metadata"]["name"] = "renamed-trainer-pod"
    for key in ("uid", "resourceVersion", "creationTimestamp"):
        pod["metadata"].pop(key, None)
    kube.add(pod)
    kube.add({"apiVersion": "v1", "kind": "Event", "metadata": {"name": "renamed.1", "namespace": SHARED_NS},
              "involvedObject": {"kind": "Pod", "name": "renamed-trainer-pod", "namespace": SHARED_NS},
              "reason": "OOMKilling", "message": "Memory cgroup out of memory: Killed process 4242 (python)",
              "type": "Warning", "lastTimestamp": "2026-11-30T09:41:00Z", "count": 1})  # fmt: skip
    assert "renamed.1" in _events_held(kc, SHARED_NS)
    got = by_target(scan(kc, "-A", "-o", "json").json())
    for ns, name in jobs:
        assert got[(ns, name)] == single(kc, ns, name), f"{ns}/{name}"
    kube.fault(verb="list", resource="pods", namespace="", status=403)
    kube.fault(verb="list", resource="pods", namespace="story-disk-full", status=403)
    got = by_target(scan(kc, "-A", "-o", "json").json())
    for ns, name in jobs:
        assert got[(ns, name)] == single(kc, ns, name), f"{ns}/{name}"


def _events_held(kc: Path, ns: str) -> set[str]:
    """The names of the events a fleet scan of every namespace holds for `ns` once it has read its lists."""
    from ckpt_doctor.sources.live import connect
    from ckpt_doctor.sources.live.fleet import FleetCollector, FleetScope

    fc = FleetCollector(connect(None, None, str(kc), 15.0), FleetScope())
    fc.trainjobs()
    fc.prefetch()
    got = fc.store.lists["Event"][ns]
    assert isinstance(got, list)
    return {e["metadata"]["name"] for e in got}
