"""Each fault: the collection completes, records the gap, and the rules that needed the data are not_evaluated."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from ckpt_doctor.engine.catalogue import default_rules
from tests.live.conftest import REAL_KUBECONFIG, findings, run_cli
from tests.live.faulty import FaultyKube, cut, rotated, vanish
from tests.live.scenario import NAME, NS, Scenario, pod_name

P0, P1, P2 = (pod_name(NAME, i) for i in range(3))


@dataclass
class Case:
    id: str
    setup: Callable[[FaultyKube], Any]
    what: str  # the notCollected entry
    reason: str  # its reason (a prefix when it ends with "…")
    need: str | None  # the rule input it takes away
    rc: int  # exit code with --fail-on critical --strict
    timeout: float = 5.0


NOT_COLLECTED = {"pods": "pods", "events": "events", "logs": "logs", "pvcs": "PVCs"}
CASES = [
    Case(
        "403-pods",
        lambda k: k.fault("list", "pods", status=403),
        "pods",
        "forbidden: cannot list pods in team-a",
        "pods",
        4,
    ),
    Case(
        "403-events",
        lambda k: k.fault("list", "events", status=403),
        "events",
        "forbidden: cannot list events in team-a",
        "events",
        1,
    ),
    Case(
        "403-pvcs",
        lambda k: k.fault("list", "persistentvolumeclaims", status=403),
        "persistentvolumeclaims",
        "forbidden: cannot list persistentvolumeclaims in team-a",
        "pvcs",
        1,
    ),
    Case(
        "403-jobset",
        lambda k: k.fault("get", "jobsets", status=403),
        "jobsets",
        "forbidden: cannot get jobsets sft-run in team-a",
        None,
        1,
    ),  # no rule needs the JobSet yet
    Case(
        "403-logs",
        lambda k: k.fault("get", "pods/log", status=403),
        f"logs/{P0}/node",
        f"forbidden: cannot get pods/log of {P0}",
        "logs",
        4,
    ),
    Case(
        "403-nodes",
        lambda k: k.fault("get", "nodes", status=403),
        "nodes/gpu-0",
        "forbidden: cannot get nodes gpu-0 at cluster scope",
        None,
        1,
    ),
    Case(
        "500-events",
        lambda k: k.fault("list", "events", status=500),
        "events",
        "server error 500: list events in team-a: Internal error occurred: injected fault",
        "events",
        1,
    ),
    Case(
        "500-pods",
        lambda k: k.fault("list", "pods", status=500),
        "pods",
        "server error 500: list pods in team-a: Internal error occurred: injected fault",
        "pods",
        4,
    ),
    Case(
        "timeout-events",
        lambda k: k.slow.update(events=3.0),
        "events",
        "timed out: list events in team-a (no answer within 0.6s)",
        "events",
        1,
        timeout=0.6,
    ),
    Case(
        "timeout-log",
        lambda k: k.slow.update({"pods/log": 3.0}),
        f"logs/{P0}/node",
        f"timed out reading the log of {P0}/node: no answer within 0.6s",
        "logs",
        4,
        timeout=0.6,
    ),
    Case(
        "pod-vanishes",
        lambda k: k.log_hooks.update({P1: vanish}),
        f"logs/{P1}/node",
        f"pod {P1} was deleted before its log could be read (404)",
        "logs",
        1,  # the other pods still show the fresh start: one lost log hides nothing
    ),
    Case(
        "stream-cut",
        lambda k: k.log_hooks.update({P2: cut}),
        f"logs/{P2}/node",
        f"connection lost while reading the log of {P2}/node (pod gone?): …",
        "logs",
        1,  # the other pods still show the fresh start: one lost log hides nothing
    ),
    Case(
        "rotated-log",
        lambda k: k.log_hooks.update({P1: rotated}),
        f"logs/{P1}/node",
        f"log of {P1}/node was rotated or removed on the node: failed to try resolving symlinks in path …",
        "logs",
        1,  # the other pods still show the fresh start: one lost log hides nothing
    ),
    Case(
        "binary-log",
        lambda k: k.set_log(NS, P1, "node", b"\x7fELF" + b"\x00" * 64 + b"\x01\x02" * 100),
        f"logs/{P1}/node",
        f"log of {P1}/node is binary (64 NUL bytes in its first 4 KiB), not text",
        "logs",
        1,  # the other pods still show the fresh start: one lost log hides nothing
    ),
]


# rules whose pass means "no error in any log": an unread log must keep them from passing
LOG_SCANNING_RULES = ("checkpoint-disk-full", "resume-crashed", "partial-latest-checkpoint")


def _reason_matches(got: str, want: str) -> bool:
    return got.startswith(want[:-1]) if want.endswith("…") else got == want


@pytest.fixture
def faulty(tmp_path: Path) -> Iterator[tuple[FaultyKube, Path]]:
    if REAL_KUBECONFIG:
        pytest.skip("injects faults: fake API server only")
    with FaultyKube() as kube:
        Scenario(pods=3).load(kube)
        yield kube, kube.kubeconfig(tmp_path / "kc", namespace=NS)


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_fault_degrades_to_not_evaluated(case: Case, faulty: tuple[FaultyKube, Path]) -> None:
    kube, kc = faulty
    case.setup(kube)
    got = run_cli(
        [
            "diagnose",
            f"{NS}/{NAME}",
            "--kubeconfig",
            str(kc),
            "-o",
            "json",
            "--fail-on",
            "critical",
            "--strict",
            "--request-timeout",
            str(case.timeout),
        ]
    )
    assert got.rc == case.rc, got.err
    doc = got.json()
    gaps = {g["what"]: g["reason"] for g in doc["notCollected"]}
    assert case.what in gaps, gaps
    assert _reason_matches(gaps[case.what], case.reason), gaps[case.what]
    if case.need is None:
        return
    by_id = {f["rule"]: f for f in doc["findings"]}
    if case.what.startswith("logs/"):
        # one unreadable log: the rules that need every log for an all-clear say which log is missing;
        # the others judge from what is there (e.g. "no restart happened" needs no log at all)
        for rule_id in LOG_SCANNING_RULES:
            f = by_id[rule_id]
            assert f["status"] == "not_evaluated", (rule_id, f)
            assert case.reason.rstrip("…") in f["reason"], (rule_id, f["reason"], case.reason)
        return
    affected = [r for r in default_rules() if "diagnose" in r.modes and case.need in r.needs]
    assert affected, f"no rule needs {case.need}"
    for rule in affected:
        f = by_id[rule.id]
        assert f["status"] == "not_evaluated", (rule.id, f)
        want = f"{NOT_COLLECTED[case.need]} not collected: {case.reason}" if case.need in NOT_COLLECTED else case.reason
        assert _reason_matches(f["reason"], want), (rule.id, f["reason"], want)


def test_optional_kueue_and_trainer_probe_are_not_gaps(faulty: tuple[FaultyKube, Path]) -> None:
    kube, kc = faulty
    kube.fault("list", "workloads", status=403)  # Kueue installed but not readable: still no gap
    got = run_cli(["diagnose", f"{NS}/{NAME}", "--kubeconfig", str(kc), "-o", "json"])
    assert got.json()["notCollected"] == []
    assert kube.count("GET", "/deployments/kubeflow-trainer-controller-manager") == 1  # tried once, 404


def test_every_fault_at_once_still_completes(faulty: tuple[FaultyKube, Path]) -> None:
    kube, kc = faulty
    for plural in ("jobsets", "jobs", "pods", "events", "persistentvolumeclaims", "clustertrainingruntimes"):
        kube.fault(resource=plural, status=403)
    got = run_cli(
        ["diagnose", f"{NS}/{NAME}", "--kubeconfig", str(kc), "-o", "json", "--strict", "--fail-on", "critical"]
    )
    assert got.rc == 4, got.err
    whats = {g["what"] for g in got.json()["notCollected"]}
    assert whats == {"jobsets", "jobs", "pods", "events", "persistentvolumeclaims", "clustertrainingruntimes"}


def test_a_runtime_that_answers_404_is_absent_not_unknown(faulty: tuple[FaultyKube, Path]) -> None:
    """A 404 proves the runtime does not exist: runtime-ref-unresolved fails on it, it is no gap."""
    kube, kc = faulty
    kube.fault("get", "clustertrainingruntimes", status=404)
    got = run_cli(["diagnose", f"{NS}/{NAME}", "--kubeconfig", str(kc), "-o", "json", "--fail-on", "critical"])
    doc = got.json()
    assert "clustertrainingruntimes" not in {g["what"] for g in doc["notCollected"]}
    by_id = {f["rule"]: f for f in doc["findings"]}
    assert by_id["runtime-ref-unresolved"]["status"] == "fail", by_id["runtime-ref-unresolved"]
    assert "(404)" in by_id["runtime-ref-unresolved"]["detail"]
    needing = [r for r in default_rules() if "diagnose" in r.modes and "runtime" in r.needs]
    for rule in needing:
        f = by_id[rule.id]
        assert f["status"] == "not_evaluated" and "does not exist" in f["reason"], (rule.id, f)


class _Vanishing(FaultyKube):
    """The API server answers the TrainJob and `after` more requests, then goes away: every later connection is
    cut unanswered."""

    def __init__(self, after: int = 0, **kw: Any) -> None:
        super().__init__(**kw)
        self.after = after
        self.started = False
        self.answered = 0

    def _handle(self, h: Any) -> None:
        if self.started:
            self.answered += 1
            if self.answered > self.after:
                h.close_connection = True
                return
        super()._handle(h)
        if "/trainjobs/" in h.path and h.command == "GET":
            self.started = True


# lost at once; after the runtime and a few lists; after every object, with the logs half read
LOST_AFTER = [0, 6, 16]


@pytest.mark.parametrize("after", LOST_AFTER)
def test_cluster_lost_mid_run_is_exit_3_with_what_was_read(after: int, tmp_path: Path) -> None:
    """contracts.md §1: a connection error is exit 3. A cluster lost after the TrainJob was read ended `diagnose`
    with exit 0/1 and gaps once half the first reads had answered, and with `-q -o json` nothing said it went
    away. Now the diagnosis of what was read is printed, its notCollected says the cluster was lost, and the
    exit is 3 with one line on stderr."""
    if REAL_KUBECONFIG:
        pytest.skip("injects faults: fake API server only")
    with _Vanishing(after) as kube:
        Scenario(pods=3).load(kube)
        kc = kube.kubeconfig(tmp_path / "kc", namespace=NS)
        live = ["--kubeconfig", str(kc), "--request-timeout", "3"]
        got = run_cli(["diagnose", f"{NS}/{NAME}", *live, "-q", "-o", "json"])
    assert got.rc == 3, (got.rc, got.err)
    doc = got.json()
    first = doc["notCollected"][0]
    assert first["what"] == "cluster" and "lost the cluster" in first["reason"], doc["notCollected"]
    assert "read the TrainJob" in first["reason"]
    line = got.err.strip()
    assert line.count("\n") == 0 and "lost the cluster" in line and "read the TrainJob" in line, line
    assert not [f for f in doc["findings"] if f["status"] == "pass" and "cluster" in str(f.get("reason", ""))]


@pytest.mark.parametrize("after", LOST_AFTER)
def test_collect_that_loses_the_cluster_writes_what_it_read_and_exits_3(after: int, tmp_path: Path) -> None:
    if REAL_KUBECONFIG:
        pytest.skip("injects faults: fake API server only")
    out = tmp_path / "b.tar.gz"
    with _Vanishing(after) as kube:
        Scenario(pods=3).load(kube)
        kc = kube.kubeconfig(tmp_path / "kc", namespace=NS)
        live = ["--kubeconfig", str(kc), "--request-timeout", "3"]
        got = run_cli(["collect", f"{NS}/{NAME}", "-o", str(out), "-q", *live])
    assert got.rc == 3, (got.rc, got.err)
    assert got.err.count("\n") == 1 and "lost the cluster" in got.err, got.err
    offline = run_cli(["diagnose", "--bundle", str(out), "-o", "json"]).json()
    first = offline["notCollected"][0]
    assert first["what"] == "cluster" and "lost the cluster" in first["reason"], offline["notCollected"]
    assert offline["target"]["name"] == NAME  # the TrainJob read before the loss is in the bundle


def test_a_cut_log_stream_is_not_a_lost_cluster(faulty: tuple[FaultyKube, Path]) -> None:
    """A connection cut while one log streams (the node went away) is that log's gap: the API server still
    answers the probe, so the collection goes on and the exit is the findings'."""
    kube, kc = faulty
    kube.log_hooks[P2] = cut
    got = run_cli(["diagnose", f"{NS}/{NAME}", "--kubeconfig", str(kc), "-q", "-o", "json"])
    assert got.rc in (0, 1), got.err
    assert "cluster" not in {g["what"] for g in got.json()["notCollected"]}


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_live_and_collected_bundle_agree_under_the_fault(case: Case, faulty: tuple[FaultyKube, Path]) -> None:
    """Parity: what live diagnose says under a fault, the bundle `collect` wrote under it says too
    (each on its own server: some faults change the cluster, a pod deleted mid-read)."""
    kube, kc = faulty
    case.setup(kube)
    timeout = ["--request-timeout", str(case.timeout)]
    live = run_cli(["diagnose", f"{NS}/{NAME}", "-o", "json", "--kubeconfig", str(kc), *timeout])
    out = kc.parent / "b.tar.gz"
    with FaultyKube() as other:
        Scenario(pods=3).load(other)
        case.setup(other)
        kc2 = other.kubeconfig(kc.parent / "kc2", namespace=NS)
        got = run_cli(["collect", f"{NS}/{NAME}", "-o", str(out), "-q", "--kubeconfig", str(kc2), *timeout])
    assert got.rc == 0, got.err
    offline = run_cli(["diagnose", "--bundle", str(out), "-o", "json"])
    assert live.rc == offline.rc, (live.err, offline.err)
    assert findings(live.json()) == findings(offline.json())
    assert {g["what"] for g in live.json()["notCollected"]} == {g["what"] for g in offline.json()["notCollected"]}
