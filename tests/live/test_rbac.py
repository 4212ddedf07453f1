"""`ckpt-doctor rbac`: least-privilege Roles built from what the collector reads, and the access check."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ruamel.yaml import YAML

from tests.live.conftest import Live, run_cli
from tests.live.scenario import NAME


def _docs(text: str) -> list[dict[str, Any]]:
    return [d for d in YAML(typ="safe").load_all(text) if d]


def _grants(docs: list[dict[str, Any]]) -> set[tuple[str, str, str, str]]:
    """(role kind, group, resource, verb) for every rule."""
    out = set()
    for d in docs:
        for rule in d["rules"]:
            for g in rule["apiGroups"]:
                for r in rule["resources"]:
                    for v in rule["verbs"]:
                        out.add((d["kind"], g, r, v))
    return out


def test_printed_roles_are_read_only_and_never_touch_secrets() -> None:
    got = run_cli(["rbac", "-n", "team-a"])
    assert got.rc == 0
    docs = _docs(got.out)
    assert [(d["kind"], d["metadata"]["name"]) for d in docs] == [
        ("Role", "ckpt-doctor-diagnose"),
        ("ClusterRole", "ckpt-doctor-diagnose-cluster"),
        ("Role", "ckpt-doctor-trainer-version"),
    ]
    assert docs[0]["metadata"]["namespace"] == "team-a" and "namespace" not in docs[1]["metadata"]
    grants = _grants(docs)
    assert {v for *_, v in grants} <= {"get", "list", "watch"}
    assert not any(r.startswith("secrets") for _, _, r, _ in grants)
    assert ("Role", "", "pods/log", "get") in grants
    assert ("ClusterRole", "trainer.kubeflow.org", "clustertrainingruntimes", "get") in grants
    drill = _docs(run_cli(["rbac", "--drill"]).out)
    assert drill[-1]["metadata"]["name"] == "ckpt-doctor-drill" and "namespace" not in drill[-1]["metadata"]
    assert ("Role", "", "pods", "delete") in _grants(drill[-1:])
    assert ("Role", "trainer.kubeflow.org", "trainjobs", "patch") in _grants(drill[-1:])


def _verb(method: str, path: str, query: dict[str, str]) -> tuple[str, str, str, bool] | None:
    """(group, resource, verb, cluster-scoped) of a recorded request, as RBAC sees it."""
    parts = path.strip("/").split("/")
    if parts[0] == "version":
        return None
    group, rest = ("", parts[2:]) if parts[0] == "api" else (parts[1], parts[3:])
    cluster = not (rest and rest[0] == "namespaces")
    if not cluster:
        rest = rest[2:]
    resource = rest[0] + (f"/{rest[2]}" if len(rest) > 2 else "")
    verb = "get" if len(rest) > 1 else ("watch" if query.get("watch") == "true" else "list")
    return group, resource, verb, cluster


def test_roles_cover_exactly_what_a_collection_reads(live: Live, tmp_path: Path) -> None:
    kube = live.kube
    kube.reset_requests()
    assert live.cli("collect", NAME, "-o", str(tmp_path / "b.tgz"), "-q").rc == 0
    used = {_verb(r.method, r.path, r.query) for r in kube.requests} - {None}
    grants = _grants(_docs(run_cli(["rbac"]).out))
    for group, resource, verb, cluster in used:  # type: ignore[misc]
        kind = "ClusterRole" if cluster else "Role"
        assert (kind, group, resource, verb) in grants, (group, resource, verb)
    granted = {(g, r, v) for _, g, r, v in grants}
    used_plain = {(g, r, v) for g, r, v, _ in used}  # type: ignore[misc]
    conditional = {  # granted for reads this collection did not need to make
        ("trainer.kubeflow.org", "trainjobs", "list"),  # naming the TrainJobs that exist, when one is not found
        ("trainer.kubeflow.org", "trainingruntimes", "get"),  # a TrainJob whose runtime is namespaced
        ("", "nodes", "list"),  # pods on more than 10 nodes
    }
    follow_only = {(g, r, v) for g, r, v in granted if v == "watch"} | {("jobset.x-k8s.io", "jobsets", "list")}
    assert granted - used_plain - follow_only == conditional


def test_check_lists_what_is_missing(live: Live) -> None:
    kube = live.kube
    ok = live.cli("rbac", "--check")
    assert ok.rc == 0, ok.out + ok.err
    assert "everything ckpt-doctor needs is allowed" in ok.out
    kube.fault("list", "events", status=403)
    kube.fault("get", "pods/log", status=403)
    kube.fault("get", "deployments", status=403)  # optional: the Trainer version probe
    missing = live.cli("rbac", "--check")
    assert missing.rc == 1
    lines = [line.split() for line in missing.out.splitlines() if line.startswith("  MISSING")]
    assert sorted((w[1], w[2]) for w in lines) == [("get", "deployments"), ("get", "pods/log"), ("list", "events")]
    assert "3 missing (2 required)" in missing.out
    drill = live.cli("rbac", "--check", "--drill")
    assert drill.rc == 1 and "pods/exec" in drill.out


def test_check_unreachable_is_exit_3(tmp_path: Path) -> None:
    kc = tmp_path / "kc"
    kc.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: x\nclusters:\n- name: x\n  cluster:\n"
        "    server: http://127.0.0.1:9\nusers:\n- name: x\n  user:\n    token: t\ncontexts:\n- name: x\n"
        "  context:\n    cluster: x\n    user: x\n"
    )
    got = run_cli(["rbac", "--check", "--kubeconfig", str(kc), "--request-timeout", "1"])
    assert got.rc == 3 and "cannot check access" in got.err


def test_check_reports_every_permission(live: Live) -> None:
    got = live.cli("rbac", "--check")
    assert got.rc in (0, 1), got.err
    rows = [line.split() for line in got.out.splitlines() if line.startswith("  ")]
    assert {(r[1], r[2]) for r in rows} >= {("get", "trainjobs"), ("get", "pods/log"), ("list", "events")}
    assert all(r[0] in ("ok", "MISSING") for r in rows)
