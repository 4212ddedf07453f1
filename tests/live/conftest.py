"""Live tests: the real `kubernetes` client over HTTP against the fake API server (tests/fakeapi).

Set `CKPT_DOCTOR_KUBECONFIG=/path/to/kubeconfig` (and `CKPT_DOCTOR_TARGET=NAMESPACE/TRAINJOB`) to run the
read-only tests against that real cluster instead; tests that seed objects or inject faults are skipped.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.clirun import Result, run_cli
from tests.fakeapi.server import FakeKube
from tests.live.scenario import NAME, NS, Scenario

ROOT = Path(__file__).resolve().parents[2]
REAL_KUBECONFIG = os.environ.get("CKPT_DOCTOR_KUBECONFIG")
REAL_TARGET = os.environ.get("CKPT_DOCTOR_TARGET", "")


@dataclass
class Live:
    """Where the tests point: a kubeconfig, a TrainJob, and (fake mode) the server and its scenario."""

    kubeconfig: Path
    target: str  # NAMESPACE/NAME
    fake: FakeKube | None = None
    scenario: Scenario | None = None

    @property
    def kube(self) -> FakeKube:
        if self.fake is None:
            pytest.skip("needs the fake API server (seeds objects or injects faults)")
        return self.fake

    def require_fake(self) -> None:
        """Skip unless the fake API server is in use (the test seeds objects or injects faults)."""
        if self.fake is None:
            pytest.skip("needs the fake API server (seeds objects or injects faults)")

    def cli(self, *args: str, live: bool = True) -> Result:
        """Run `ckpt-doctor ARGS` in-process (adding --kubeconfig for live verbs)."""
        argv = list(args)
        if live:
            argv += ["--kubeconfig", str(self.kubeconfig)]
        return run_cli(argv)


def run_subprocess(argv: list[str], **kw: Any) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "NO_COLOR": "1"}
    return subprocess.Popen(
        [sys.executable, "-m", "ckpt_doctor", *argv],
        env=env,
        cwd=ROOT,
        text=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        **kw,
    )


def findings(doc: dict[str, Any]) -> set[tuple[str, str, str | None, str | None, str | None]]:
    """What must match between two diagnoses: rule, status and subject (kind, namespace, name)."""
    out = set()
    for f in doc["findings"]:
        s = f.get("subject") or {}
        out.add((f["rule"], f["status"], s.get("kind"), s.get("namespace"), s.get("name")))
    return out


@contextlib.contextmanager
def serving() -> Iterator[FakeKube]:
    """A started fake API server for the block; on exit it is stopped and must not have hit a bug of its own.

    Stopping is idempotent, so the block may stop the server itself (the cluster going away)."""
    with FakeKube() as kube:
        yield kube
    assert kube.errors == [], "the fake API server hit a bug"


@pytest.fixture
def fake() -> Iterator[FakeKube]:
    if REAL_KUBECONFIG:
        pytest.skip("needs the fake API server; CKPT_DOCTOR_KUBECONFIG points at a real cluster")
    with serving() as kube:
        yield kube


@pytest.fixture
def scenario() -> Scenario:
    return Scenario(pods=3)


@pytest.fixture
def live(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Live]:
    """The cluster under test: the fake serving `scenario` (default), or the real one from the env."""
    if REAL_KUBECONFIG:
        if "/" not in REAL_TARGET:
            pytest.skip("set CKPT_DOCTOR_TARGET=NAMESPACE/TRAINJOB to run against a real cluster")
        yield Live(Path(REAL_KUBECONFIG), REAL_TARGET)
        return
    kube: FakeKube = request.getfixturevalue("fake")
    sc: Scenario = request.getfixturevalue("scenario")
    sc.load(kube)
    kc = kube.kubeconfig(tmp_path / "kubeconfig", namespace=NS)
    yield Live(kc, f"{sc.namespace}/{sc.name}", kube, sc)


__all__ = ["NAME", "NS", "Live", "Result", "findings", "run_cli", "run_subprocess", "serving"]
