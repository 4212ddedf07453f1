"""What a fleet scan costs: requests grow with namespaces and kinds, not with TrainJobs × kinds.

Logs are read per container instance (as `diagnose` reads them) and are left out of the counts.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.clirun import run_cli
from tests.fleet.cluster import crowd
from tests.live.conftest import REAL_KUBECONFIG, serving

pytestmark = pytest.mark.skipif(bool(REAL_KUBECONFIG), reason="counts requests on the fake API server")

KINDS = 12  # TrainJobs, JobSets, Jobs, pods, events, PVCs, Workloads, runtimes, cluster runtimes, ConfigMaps,
# PVs, storage classes and nodes are listed once each (13) minus the runtimes the scenario does not use (1)


def requests(tmp_path: Path, jobs: int, *args: str, faults: tuple[dict[str, object], ...] = ()) -> list[str]:
    with serving() as kube:
        crowd(kube, jobs, namespaces=2, pods=2)
        kc = kube.kubeconfig(tmp_path / f"kc{jobs}", namespace="fleet-0")
        for f in faults:
            kube.fault(**f)  # type: ignore[arg-type]
        kube.reset_requests()
        got = run_cli(["diagnose", *args, "--kubeconfig", str(kc), "-o", "json", "-q"])
        assert got.rc in (0, 1), got.err
        ns = [a for a in args if a.startswith("fleet-")]
        expected = sum(1 for i in range(jobs) if not ns or f"fleet-{i % 2}" in ns) + (len(ns) or 2)  # + other-run
        assert len(got.json()["diagnoses"]) == expected
        paths = [f"{r.method} {r.path}" for r in kube.requests if not r.path.endswith("/log")]
    return sorted(paths)


def test_all_namespaces_costs_one_list_per_kind_whatever_the_number_of_jobs(tmp_path: Path) -> None:
    ten, forty = requests(tmp_path, 10, "-A"), requests(tmp_path, 40, "-A")
    assert ten == forty
    lists = [p for p in ten if "/namespaces/" not in p and p not in ("GET /version",)]
    assert len(lists) == KINDS  # one cluster-wide list per kind
    assert len(ten) == KINDS + 2  # + the server version and the Trainer controller's Deployment


def test_one_namespace_costs_one_list_per_kind(tmp_path: Path) -> None:
    ten, forty = requests(tmp_path, 10, "-n", "fleet-1"), requests(tmp_path, 40, "-n", "fleet-1")
    assert ten == forty and len(ten) == KINDS + 2


def test_refused_cluster_wide_lists_cost_one_list_per_namespace(tmp_path: Path) -> None:
    faults = ({"verb": "list", "resource": "pods", "namespace": "", "status": 403},
              {"verb": "list", "resource": "events", "namespace": "", "status": 403})  # fmt: skip
    ten, forty = requests(tmp_path, 10, "-A", faults=faults), requests(tmp_path, 40, "-A", faults=faults)
    assert ten == forty
    assert [p for p in ten if p.endswith("/pods")] == [
        "GET /api/v1/namespaces/fleet-0/pods",
        "GET /api/v1/namespaces/fleet-1/pods",
        "GET /api/v1/pods",  # the refused one
    ]


def test_a_job_on_many_nodes_does_not_list_nodes_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`diagnose` lists the nodes of a job on more than 10 nodes; the scan answers that from its own list."""
    from tests.live.scenario import Scenario

    monkeypatch.setattr("ckpt_doctor.sources.live.collector.now_rfc3339", lambda: "2026-12-01T00:00:00Z")
    with serving() as kube:
        for i in range(3):
            Scenario(pods=12, namespace="fleet-0", name=f"wide-{i}", node_count=12).load(kube)
        kc = kube.kubeconfig(tmp_path / "kc", namespace="fleet-0")
        kube.reset_requests()
        got = run_cli(["diagnose", "-A", "--kubeconfig", str(kc), "-o", "json", "-q"])
        assert got.rc in (0, 1), got.err
        assert [r.path for r in kube.requests if r.path.endswith("/nodes")] == ["/api/v1/nodes"]
        one = run_cli(["diagnose", "fleet-0/wide-1", "--kubeconfig", str(kc), "-o", "json", "-q"])
    docs = {d["target"]["name"]: d for d in got.json()["diagnoses"]}
    assert docs["wide-1"] == one.json()
