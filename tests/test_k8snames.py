"""A target Kubernetes could not hold is a typo: every verb that takes one says so in one line with exit 2, before
any cluster is asked (it used to read as "not found", exit 3, or as an empty namespace, exit 0)."""

from __future__ import annotations

import pytest

from ckpt_doctor.k8snames import name_problem, namespace_problem, target_problem
from tests.clirun import run_cli

GOOD_NS = ["a", "team-a", "0", "a" * 63, "kubeflow-system", "ns9"]
BAD_NS = ["", "A", "Team-a", "team_a", "-a", "a-", "a.b", "a" * 64, "é", "a b", " a"]
GOOD_NAMES = ["a", "llama-8b", "job.v2", "a" * 253, "0a", "a-1.b-2"]
BAD_NAMES = ["", "Job", "job_1", "-job", "job-", "job..x", ".job", "job.", "a" * 254, "jöb", "a/b"]


@pytest.mark.parametrize("ns", GOOD_NS)
def test_namespaces_kubernetes_accepts(ns: str) -> None:
    assert namespace_problem(ns) is None


@pytest.mark.parametrize("ns", BAD_NS)
def test_namespaces_kubernetes_refuses(ns: str) -> None:
    assert repr(ns) in (namespace_problem(ns) or "")


@pytest.mark.parametrize("name", GOOD_NAMES)
def test_names_kubernetes_accepts(name: str) -> None:
    assert name_problem(name) is None and target_problem(name) is None and target_problem(f"team-a/{name}") is None


@pytest.mark.parametrize("name", BAD_NAMES)
def test_names_kubernetes_refuses(name: str) -> None:
    assert name_problem(name)


@pytest.mark.parametrize("target", ["a/b/c", "/job", "ns/", "Bad_NS/job", "ns/Job_1"])
def test_targets_of_the_wrong_shape_or_names(target: str) -> None:
    assert (target_problem(target) or "").startswith(f"TrainJob {target!r}: ")


@pytest.mark.parametrize(
    "argv",
    [
        ["diagnose", "-n", "Bad_NS"],
        ["diagnose", "Bad_NS/job"],
        ["diagnose", "team-a/Job_1"],
        ["report", "team-a/Job_1", "-o", "markdown"],
        ["collect", "team-a/Job_1"],
        ["drill", "a/b/c", "--dry-run"],
        ["rbac", "-n", "UPPER"],
    ],
)
def test_every_verb_says_it_in_one_line_without_a_cluster(argv: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KUBECONFIG", "/nonexistent/kubeconfig")  # had the name been asked for, this is exit 3
    got = run_cli(argv)
    assert got.rc == 2, got
    assert len(got.err.strip().splitlines()) == 1 and "Traceback" not in got.err
    assert "not a valid" in got.err or "expected NAME or NAMESPACE/NAME" in got.err
