"""Cost: a fixed number of requests per collection; only logs grow with pods; big logs cost two bounded reads."""

from __future__ import annotations

from pathlib import Path

import pytest

from ckpt_doctor.facts.logs import HEAD_BYTES, TAIL_BYTES
from ckpt_doctor.sources.live import collect_live
from tests.fakeapi.server import FakeKube
from tests.live.conftest import REAL_KUBECONFIG, findings, run_cli, serving
from tests.live.scenario import NAME, NS, Scenario, pod_name

pytestmark = pytest.mark.skipif(bool(REAL_KUBECONFIG), reason="counts requests on the fake API server")

FIXED = [  # what one collection asks, whatever the number of pods
    "/apis/trainer.kubeflow.org/v1alpha1/namespaces/team-a/trainjobs/sft-run",
    "/apis/trainer.kubeflow.org/v1alpha1/clustertrainingruntimes/torch-ckpt",
    "/api/v1/namespaces/team-a/configmaps/sft-run-runtime-snapshot",
    "/apis/jobset.x-k8s.io/v1alpha2/namespaces/team-a/jobsets/sft-run",
    "/apis/batch/v1/namespaces/team-a/jobs",
    "/api/v1/namespaces/team-a/pods",
    "/api/v1/namespaces/team-a/events",
    "/api/v1/namespaces/team-a/persistentvolumeclaims",
    "/apis/kueue.x-k8s.io/v1beta1/namespaces/team-a/workloads",
    "/apis/apps/v1/namespaces/kubeflow-system/deployments/kubeflow-trainer-controller-manager",
    "/version",
    "/api/v1/persistentvolumes/pv-ckpt-sft",
    "/apis/storage.k8s.io/v1/storageclasses/filestore",
]


def _collect(tmp_path: Path, sc: Scenario, **kw: object) -> tuple[FakeKube, list[str], list[str]]:
    with serving() as kube:
        sc.load(kube)
        kc = kube.kubeconfig(tmp_path / f"kc{sc.pods}", namespace=NS)
        kube.reset_requests()
        collect_live(NAME, kubeconfig=str(kc), **kw)  # type: ignore[arg-type]
    paths = [r.path for r in kube.requests]
    logs = [p for p in paths if p.endswith("/log")]
    return kube, [p for p in paths if not p.endswith("/log")], logs


def test_request_count_for_a_64_pod_job(tmp_path: Path) -> None:
    _, fixed8, logs8 = _collect(tmp_path, Scenario(pods=8))
    kube, fixed64, logs64 = _collect(tmp_path, Scenario(pods=64))
    nodes = [f"/api/v1/nodes/gpu-{i}" for i in range(4)]
    assert sorted(fixed64) == sorted(FIXED + nodes)  # 17 requests: one per kind, no GET per pod
    assert sorted(fixed8) == sorted(fixed64)
    assert len(logs8) == 8 + 1 and len(logs64) == 64 + 1  # each current log, plus pod 0's previous one
    log_reqs = [r for r in kube.requests if r.path.endswith("/log")]
    assert all(r.query.get("limitBytes") == str(HEAD_BYTES) for r in log_reqs)  # never a whole log
    assert sum(1 for r in log_reqs if r.query.get("previous") == "true") == 1
    assert {r.status for r in kube.requests} <= {200, 404}  # 404: no runtime snapshot, no Trainer deployment


def test_many_nodes_are_listed_once(tmp_path: Path) -> None:
    _, fixed, _ = _collect(tmp_path, Scenario(pods=64, node_count=64))
    assert [p for p in fixed if "/nodes" in p] == ["/api/v1/nodes"]


def test_big_log_costs_two_bounded_reads_and_keeps_head_and_tail(tmp_path: Path) -> None:
    sc = Scenario(pods=1)
    pod = pod_name(NAME, 0)
    middle = b"".join(b"step %d loss 1.0 lr 3e-5 grad_norm 0.9 tokens/s 5123\n" % s for s in range(120_000))
    big = (
        b"rank 0 starting\n[checkpoint] resuming from /ckpt/sft-run/checkpoint-300\n"
        + middle
        + b"[checkpoint] saved /ckpt/sft-run/checkpoint-900\nstep 920 loss 0.7\n"
    )
    assert len(big) > 20 * (HEAD_BYTES + TAIL_BYTES)
    with serving() as kube:
        sc.load(kube)
        kube.set_log(NS, pod, "node", big)
        kc = kube.kubeconfig(tmp_path / "kc", namespace=NS)
        kube.reset_requests()
        snap = collect_live(NAME, kubeconfig=str(kc))
        reads = [r.query for r in kube.requests if r.path.endswith(f"/{pod}/log") and r.query.get("previous") != "true"]
        assert len(reads) == 2
        assert reads[0]["limitBytes"] == str(HEAD_BYTES) and "tailLines" not in reads[0]
        assert "tailLines" in reads[1] and int(reads[1]["limitBytes"]) <= 4 * TAIL_BYTES
        ref = snap.logs[(pod, "node", False)]
        assert ref.read_head(HEAD_BYTES) == big[:HEAD_BYTES]
        assert ref.read_tail(TAIL_BYTES) == big[-TAIL_BYTES:]
        assert ref.size is not None and ref.size < HEAD_BYTES + TAIL_BYTES + 1024
        # the same windows reach a bundle: collect, read back, same findings (evidence included)
        live = run_cli(["diagnose", NAME, "--kubeconfig", str(kc), "-o", "json"])
        out = tmp_path / "big.tar.gz"
        assert run_cli(["collect", NAME, "-o", str(out), "--kubeconfig", str(kc), "-q"]).rc == 0
        offline = run_cli(["diagnose", "--bundle", str(out), "-o", "json"])
    assert findings(live.json()) == findings(offline.json())
    ev = lambda doc: [f["evidence"] for f in doc["findings"]]  # noqa: E731
    assert ev(live.json()) == ev(offline.json())


def test_one_endless_line_is_still_bounded(tmp_path: Path) -> None:
    """A tqdm bar that never prints a newline: the tail read falls back to fewer lines, never the whole log."""
    sc = Scenario(pods=1)
    pod = pod_name(NAME, 0)
    bar = b"".join(b"\r 45%%|#####     | %d/20000 [01:02<01:13, 3.2it/s]" % s for s in range(40_000))
    with serving() as kube:
        sc.load(kube)
        kube.set_log(NS, pod, "node", b"[checkpoint] no prior checkpoint in /ckpt/sft-run, starting fresh\n" + bar)
        kc = kube.kubeconfig(tmp_path / "kc", namespace=NS)
        kube.reset_requests()
        snap = collect_live(NAME, kubeconfig=str(kc))
        reads = [r.query for r in kube.requests if r.path.endswith(f"/{pod}/log") and r.query.get("previous") != "true"]
    assert 2 <= len(reads) <= 8 and all(int(q["limitBytes"]) <= 8 << 20 for q in reads)
    ref = snap.logs[(pod, "node", False)]
    assert ref.read_head(HEAD_BYTES).startswith(b"[checkpoint] no prior")
    assert ref.read_tail(TAIL_BYTES) == bar[-TAIL_BYTES:]  # the bar's very end: the last step reached
