"""The k8sgpt custom analyzer as k8sgpt sees it: a real gRPC client over loopback calls
`schema.v1.CustomAnalyzerService/Run` (and the older `AnalyzerService/Run`) on analyzers scoped by their own flags.

Each broken scenario of the live cluster (tests/assistants/cluster.py) gives one Result naming its TrainJob with
its failing rules, sensitive names marked and masked; the healthy one gives none; a scope of several answers with
the worst and names the others; no planted secret is in any response; `ckpt-doctor analyzer` starts as a process,
serves, and stops cleanly on SIGTERM.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import grpc
import pytest

from ckpt_doctor.analyzer import k8sgpt_schema_pb2 as pb
from ckpt_doctor.analyzer import k8sgpt_schema_pb2_grpc as pb_grpc
from ckpt_doctor.analyzer.server import Options, start
from tests.assistants.cluster import Job, LiveCluster
from tests.security.corpus import leaks

ROOT = Path(__file__).resolve().parents[2]
RULE_IN_TEXT = re.compile(r"\[([a-z0-9-]+), (?:warning|error|critical)\]")


@contextmanager
def analyzer(cluster: LiveCluster, **scope: Any) -> Iterator[grpc.Channel]:
    """An analyzer serving on a free loopback port, and a channel to it."""
    server, port = start(Options(kubeconfig=str(cluster.kubeconfig), **scope), "127.0.0.1", 0)
    try:
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            yield channel
    finally:
        server.stop(None).wait()


def run(channel: grpc.Channel) -> pb.RunResponse:
    return pb_grpc.CustomAnalyzerServiceStub(channel).Run(pb.RunRequest(), timeout=120)


@pytest.fixture(scope="module")
def answers(cluster: LiveCluster) -> dict[str, pb.RunResponse]:
    """Each scenario through an analyzer scoped to it alone (-n NS, and -l where its namespace holds others), as
    k8sgpt would call it."""
    out = {}
    for job in cluster.jobs.values():
        with analyzer(cluster, namespace=job.namespace, selector=job.selector) as channel:
            out[job.scenario] = run(channel)
    return out


def test_each_broken_trainjob_is_one_result_with_its_failing_rules(
    answers: dict[str, pb.RunResponse], cluster: LiveCluster
) -> None:
    for job in cluster.broken():
        got = answers[job.scenario]
        assert got.HasField("result"), job.scenario
        r = got.result
        assert (r.kind, r.name, r.parent_object) == ("TrainJob", job.target, f"TrainJob/{job.name}")
        texts = [e.text for e in r.error]
        rules = {m.group(1) for t in texts if (m := RULE_IN_TEXT.search(t))}
        assert set(job.expect) <= rules, (job.scenario, texts)
        assert all(e.doc.startswith("docs/rules.md#") for e in r.error)
        assert "Symptom:" in r.details or "Latent cause" in r.details, r.details
        assert "Fix:" in r.details


def test_the_healthy_trainjob_gives_no_result(answers: dict[str, pb.RunResponse], cluster: LiveCluster) -> None:
    for job in cluster.healthy():
        assert not answers[job.scenario].HasField("result"), answers[job.scenario]


def test_names_in_the_texts_are_marked_sensitive_and_masked(
    answers: dict[str, pb.RunResponse], cluster: LiveCluster
) -> None:
    job = cluster.jobs["checkpoint-on-emptydir"]
    marked: dict[str, str] = {}
    for e in answers[job.scenario].result.error:
        for s in e.sensitive:
            assert s.unmasked in e.text and s.masked and s.masked != s.unmasked
            assert marked.setdefault(s.unmasked, s.masked) == s.masked  # one mask per name within a run
    assert job.name in marked or any(job.name in n for n in marked), marked


def test_the_older_service_name_gets_the_same_answer(cluster: LiveCluster) -> None:
    job = cluster.jobs["runtime-without-ancestor-label"]
    with analyzer(cluster, namespace=job.namespace, selector=job.selector) as channel:
        new = run(channel)
        old = pb_grpc.AnalyzerServiceStub(channel).Run(pb.AnalyzerRunRequest(), timeout=120)
    assert old.result.name == new.result.name == job.target
    assert [e.text for e in old.result.error] == [e.text for e in new.result.error]


def test_a_scope_of_several_answers_with_the_worst_and_names_the_others(cluster: LiveCluster) -> None:
    with analyzer(cluster, all_namespaces=True) as channel:
        got = run(channel)
    assert got.HasField("result")
    failing = [j for j in cluster.jobs.values() if j.expect]
    assert got.result.name in {j.target for j in failing}
    others = [j for j in failing if j.target != got.result.name]
    assert f"{len(others)} other TrainJob(s)" in got.result.details
    for j in others:
        assert j.target in got.result.details
    assert "critical" in got.result.error[0].text  # ranked: a critical failure comes first


def test_no_planted_secret_is_in_any_answer(answers: dict[str, pb.RunResponse], cluster: LiveCluster) -> None:
    assert answers["secrets"].HasField("result")
    blob = b"".join(a.SerializeToString() for a in answers.values())
    leaked = leaks(blob, cluster.plants)
    assert not leaked, sorted({f"{p.where}/{p.kind}" for p in leaked})


def test_an_unreachable_cluster_is_an_unavailable_status_without_credentials(cluster: LiveCluster) -> None:
    with analyzer(cluster, context="broken", request_timeout=3.0) as channel, pytest.raises(grpc.RpcError) as e:
        run(channel)
    assert e.value.code() == grpc.StatusCode.UNAVAILABLE
    assert "Traceback" not in e.value.details()
    assert not leaks(e.value.details(), cluster.plants)


def test_the_process_serves_and_stops_on_sigterm(cluster: LiveCluster, tmp_path: Path) -> None:
    job: Job = cluster.jobs["checkpoint-on-emptydir"]
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "NO_COLOR": "1"}
    argv = [sys.executable, "-m", "ckpt_doctor", "analyzer", "--listen", "127.0.0.1:0", "-n", job.namespace]
    argv += ["-l", job.selector] if job.selector else []
    t0 = time.monotonic()
    proc = subprocess.Popen(
        [*argv, "--kubeconfig", str(cluster.kubeconfig)], cwd=ROOT, env=env, stderr=subprocess.PIPE, text=True
    )
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline()  # blocks until the analyzer says where it serves
        started = time.monotonic() - t0
        m = re.search(r"on 127\.0\.0\.1:(\d+) ", line)
        assert m, line
        with grpc.insecure_channel(f"127.0.0.1:{m.group(1)}") as channel:
            got = run(channel)
        assert got.result.name == job.target
        proc.send_signal(signal.SIGTERM)
        rest = proc.stderr.read()
        assert proc.wait(timeout=30) == 0, rest
        assert "stopped" in rest and "Traceback" not in rest
        print(f"\nanalyzer: serving {started:.2f} s after the process started")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_a_bad_listen_address_is_a_usage_error() -> None:
    from tests.clirun import run_cli

    got = run_cli(["analyzer", "--listen", "nowhere"])
    assert got.rc == 2 and "--listen" in got.err
    got = run_cli(["analyzer", "-A", "-n", "x"])
    assert got.rc == 2 and "not both" in got.err


def test_a_taken_port_is_an_input_error_in_one_line() -> None:
    import socket

    from tests.clirun import run_cli

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        got = run_cli(["analyzer", "--listen", f"127.0.0.1:{s.getsockname()[1]}"])
    assert got.rc == 3 and "cannot listen on 127.0.0.1:" in got.err and "Traceback" not in got.err, got.err
