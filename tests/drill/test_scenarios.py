"""For each scenario, the drill's verdict and failing step, with preflight (the manifests judged first) and
without it (the experiment alone must find the fault); and from the fake server's request log, that nothing
outside the drill's scope was written and the cluster is back as it was."""

from __future__ import annotations

import json
import re
from typing import Any

import jsonschema
import pytest

from tests.drill.conftest import ROOT, Cluster, chosen_only
from tests.drill.scenarios import CASES, NAME, NS, Case

SCHEMA = json.loads((ROOT / "docs" / "drill.schema.json").read_text())
POD_PATH = re.compile(rf"^/api/v1/namespaces/{NS}/pods/{NAME}-node-0-0-[a-z0-9]{{5}}(/exec)?$")


def allowed_write(method: str, path: str, created: set[str], cordoned: set[str]) -> bool:
    """The drill's blast radius, as request paths: its TrainJob, that TrainJob's pods, what it created,
    the node it cordoned, and SelfSubjectAccessReviews (which change nothing)."""
    if path == "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews":
        return method == "POST"
    if path == f"/apis/trainer.kubeflow.org/v1alpha1/namespaces/{NS}/trainjobs/{NAME}":
        return method in ("PATCH", "DELETE")
    if POD_PATH.match(path):
        return method in ("DELETE", "GET")
    if path in created:
        return method in ("DELETE", "PATCH")
    if path in {p.rsplit("/", 1)[0] for p in created} and method == "POST":
        return True  # the create itself: POST to the collection
    if path.startswith("/api/v1/nodes/"):
        return method == "PATCH" and path.rsplit("/", 1)[1] in cordoned
    return False


def check_scope(c: Cluster, doc: dict[str, Any], submit: bool) -> None:
    created: set[str] = set()
    if submit:
        created = {
            f"/api/v1/namespaces/{NS}/persistentvolumeclaims/ckpt-pvc",
            f"/api/v1/namespaces/{NS}/configmaps/{NAME}-script",
            f"/apis/trainer.kubeflow.org/v1alpha1/namespaces/{NS}/trainingruntimes/checkpoint-runtime",
            f"/apis/trainer.kubeflow.org/v1alpha1/namespaces/{NS}/trainjobs/{NAME}",
        }
    cordoned = {"gpu-node-a"} if doc["options"].get("crossNode") == "cordon" else set()
    bad = [(m, p) for m, p in c.writes() if not allowed_write(m, p, created, cordoned)]
    assert bad == [], bad


def run(c: Cluster, submit: bool, *extra: str) -> tuple[int, dict[str, Any], str]:
    target = ["--submit", *map(str, c.files())] if submit else [f"{NS}/{NAME}"]
    if not submit:
        c.seed()
    before = c.state()
    c.kube.reset_requests()
    res = c.drill(*target, "--yes", "-o", "json", *extra)
    doc = res.json()
    jsonschema.validate(doc, SCHEMA)
    check_scope(c, doc, submit)
    after = c.state()
    assert after == before, {k: (before.get(k), after.get(k)) for k in set(before) | set(after)
                             if before.get(k) != after.get(k)}
    return res.rc, doc, res.err


def failing(doc: dict[str, Any]) -> tuple[str, str | None]:
    return doc["verdict"], doc["failedStep"]


@pytest.mark.parametrize("make_case", CASES, ids=lambda f: f.__name__)
def test_verdict_with_preflight(make_cluster: Any, make_case: Any) -> None:
    case: Case = make_case()
    c = make_cluster(case)
    rc, doc, err = run(c, submit=False)
    assert failing(doc) == case.default, err
    assert rc == (0 if case.default[0] == "passed" else 1)
    if case.default[1] == "preflight":
        pre = doc["steps"][0]
        named = {f["rule"] for f in (pre.get("diagnosis") or {}).get("findings") or []}
        assert set(case.rules) <= named, pre
        assert all(s["status"] in ("not_run", "passed") for s in doc["steps"][1:]), doc["steps"]
        assert not c.writes() or all("selfsubjectaccessreviews" in p for _, p in c.writes())


@pytest.mark.parametrize("make_case", CASES, ids=lambda f: f.__name__)
def test_verdict_of_the_experiment(make_cluster: Any, make_case: Any) -> None:
    """Without preflight the drill itself must catch what the manifests predicted: by interrupting the job."""
    case: Case = make_case()
    c = make_cluster(case)
    _rc, doc, err = run(c, True, "--skip", "preflight")
    assert failing(doc) == case.experiment, err
    assert doc["steps"][-1]["status"] == "passed", doc["steps"][-1]
    if case.experiment[1] is not None:
        step = next(s for s in doc["steps"] if s["id"] == case.experiment[1])
        diag = step.get("diagnosis") or {}
        named = {c for v in diag.get("verdict") or [] for c in v["causes"]} | {
            f["rule"] for f in diag.get("findings") or []}
        assert set(case.rules) <= named, (step["observed"], diag)
        assert step["evidence"], step


def test_rwo_attach_delay_is_measured(make_cluster: Any) -> None:
    from tests.drill.scenarios import rwo_attach_delay

    case = rwo_attach_delay()
    c = make_cluster(case)
    rc, doc, err = run(c, False, "--steps", "first-checkpoint,cross-node")
    assert rc == 3 and chosen_only(doc, "first-checkpoint", "cross-node"), err
    step = next(s for s in doc["steps"] if s["id"] == "cross-node")
    assert "Multi-Attach" in step["observed"]
    attach = next(e for e in step["evidence"] if e.get("path") == "volume attach and start (s)")
    assert attach["value"] > 0  # the pod waited for the volume (how long depends on the machine: not asserted)
    assert any(e["type"] == "event" and e["reason"] == "FailedAttachVolume" for e in step["evidence"])
    nodes = [e["value"] for e in step["evidence"] if e.get("path") == "spec.nodeName"]
    assert nodes == ["gpu-node-b"]
