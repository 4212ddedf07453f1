"""`diagnose -n NS` when NS has no TrainJob: a namespace that does not exist is the user's typo (exit 3, one line),
not "No TrainJob found" (exit 0); one that exists but holds none is still an empty scan; and when whether it
exists cannot be asked (no `get namespaces` in a namespaced Role), the empty scan says so."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.clirun import run_cli
from tests.fleet.cluster import crowd
from tests.live.conftest import REAL_KUBECONFIG, serving

pytestmark = pytest.mark.skipif(bool(REAL_KUBECONFIG), reason="seeds and faults the sandbox's API server")


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_a_namespace_that_does_not_exist(tmp_path: Path, fmt: str) -> None:
    with serving() as kube:
        crowd(kube, 2, namespaces=1, pods=1)
        kc = kube.kubeconfig(tmp_path / "kc", namespace="fleet-0")
        got = run_cli(["diagnose", "-n", "fleet-9", "--kubeconfig", str(kc), "-q", "-o", fmt])
    assert got.rc == 3 and got.out == "", got
    assert len(got.err.strip().splitlines()) == 1 and "namespace 'fleet-9' does not exist" in got.err, got.err


def test_a_namespace_that_exists_and_holds_none(tmp_path: Path) -> None:
    with serving() as kube:
        crowd(kube, 2, namespaces=1, pods=1)
        kube.add({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "quiet"}})
        kc = kube.kubeconfig(tmp_path / "kc", namespace="fleet-0")
        got = run_cli(["diagnose", "-n", "quiet", "--kubeconfig", str(kc), "-q"])
    assert got.rc == 0 and "No TrainJob found" in got.out, got


def test_whether_it_exists_cannot_be_asked(tmp_path: Path) -> None:
    with serving() as kube:
        crowd(kube, 2, namespaces=1, pods=1)
        kube.fault(verb="get", resource="namespaces", status=403)
        kc = kube.kubeconfig(tmp_path / "kc", namespace="fleet-0")
        got = run_cli(["diagnose", "-n", "fleet-9", "--kubeconfig", str(kc), "-q"])
    assert got.rc == 0 and "No TrainJob found" in got.out, got
    assert "whether it exists is unknown" in got.out and "forbidden" in got.out.lower(), got.out
