"""RBAC: the Roles `ckpt-doctor rbac` prints grant every API call the code makes, and nothing it never makes.

diagnose, collect and (through the recorder that `collect --follow` runs) a follow run against the fake API
server; every recorded request is mapped to what RBAC checks (API group, resource or resource/subresource, verb,
namespace) and must be granted by the printed Roles; the follow-only verbs are used only by the follow run, and
each is marked "only collect --follow" in the printed Roles.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML

from ckpt_doctor.commands.rbac import diagnose_needs
from ckpt_doctor.sources.live import connect
from ckpt_doctor.sources.recorder import Recorder
from tests.clirun import run_cli
from tests.fakeapi.server import FakeKube
from tests.live.scenario import NAME, NS, Scenario

Call = tuple[str, str, str, str | None]  # group, resource, verb, namespace (None: cluster-scoped)


def _call(method: str, path: str, query: dict[str, str]) -> Call | None:
    parts = path.strip("/").split("/")
    if parts[0] in ("version", "openapi") or (parts[0] in ("api", "apis") and len(parts) <= 3 - (parts[0] == "api")):
        return None  # discovery: allowed to every authenticated user
    group, rest = ("", parts[2:]) if parts[0] == "api" else (parts[1], parts[3:])
    ns = None
    if rest and rest[0] == "namespaces" and len(rest) > 2:
        ns, rest = rest[1], rest[2:]
    resource = rest[0] + (f"/{rest[2]}" if len(rest) > 2 else "")
    if method == "POST":
        verb = "create"
    elif len(rest) > 1:
        verb = "get"
    else:
        verb = "watch" if query.get("watch") in ("true", "1") else "list"
    return group, resource, verb, ns


def _grants(text: str) -> set[tuple[str | None, str, str, str]]:
    """(namespace or None for a ClusterRole, group, resource, verb) of every printed rule."""
    out = set()
    for d in YAML(typ="safe").load_all(text):
        if not d:
            continue
        ns = d["metadata"].get("namespace") if d["kind"] == "Role" else None
        for rule in d["rules"]:
            for g in rule["apiGroups"]:
                for r in rule["resources"]:
                    for v in rule["verbs"]:
                        out.add((ns, g, r, v))
    return out


def _granted(call: Call, grants: set[tuple[str | None, str, str, str]]) -> bool:
    group, resource, verb, ns = call
    return (ns, group, resource, verb) in grants


@pytest.fixture
def kube(tmp_path: Path) -> Any:
    with FakeKube() as k:
        Scenario(pods=2).load(k)
        yield k


def _calls(kube: FakeKube) -> set[Call]:
    return {c for r in kube.requests if (c := _call(r.method, r.path, r.query)) is not None}


def test_diagnose_and_collect_use_only_what_the_printed_roles_grant(kube: FakeKube, tmp_path: Path) -> None:
    kc = kube.kubeconfig(tmp_path / "kc", namespace=NS)
    grants = _grants(run_cli(["rbac", "-n", NS]).out)
    follow_only = {(n.group, n.resource, n.verb) for n in diagnose_needs() if n.follow_only}
    plain = {(n.group, n.resource, n.verb) for n in diagnose_needs() if not n.follow_only}
    for argv in (["diagnose", NAME, "-q"], ["collect", NAME, "-o", str(tmp_path / "b.tgz"), "-q"]):
        kube.reset_requests()
        got = run_cli([*argv, "--kubeconfig", str(kc)])
        assert got.rc in (0, 1), got.err
        used = _calls(kube)
        assert used, argv
        missing = [c for c in used if not _granted(c, grants)]
        assert missing == [], (argv[0], missing)
        assert {c[:3] for c in used} <= plain, (argv[0], {c[:3] for c in used} - plain)
        assert not {c[:3] for c in used} & (follow_only - plain), argv[0]


def test_the_follow_only_verbs_are_what_a_follow_run_adds(kube: FakeKube, tmp_path: Path) -> None:
    kc = kube.kubeconfig(tmp_path / "kc", namespace=NS)
    cluster = connect(kubeconfig=str(kc), timeout=5, pool=32)
    kube.reset_requests()
    rec = Recorder(cluster, NS, NAME, watch_seconds=2, grace=0.5)
    ready = threading.Event()
    result: dict[str, Any] = {}
    t = threading.Thread(target=lambda: result.setdefault("v", rec.run(on_ready=ready.set)), daemon=True)
    t.start()
    assert ready.wait(30), "the recorder never got ready"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not any(c[2] == "watch" for c in _calls(kube)):
        time.sleep(0.02)
    rec.stop.set()
    t.join(30)
    used = _calls(kube)
    grants = _grants(run_cli(["rbac", "-n", NS]).out)
    assert [c for c in used if not _granted(c, grants)] == []
    follow_only = {(n.group, n.resource, n.verb) for n in diagnose_needs() if n.follow_only}
    plain = {(n.group, n.resource, n.verb) for n in diagnose_needs() if not n.follow_only}
    added = {c[:3] for c in used} - plain
    assert added, "a follow run watches"
    assert added <= follow_only
    printed = run_cli(["rbac", "-n", NS]).out
    for _group, resource, verb in added:
        block = printed.split(f"resources: [{resource}]")[0].rsplit("  # ", 1)[1]
        assert "only collect --follow" in block and verb in block.split("only collect --follow")[0], resource
