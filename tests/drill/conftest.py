"""Fixtures for the drill's tests: the fake API server with the simulated controllers, a playbook with test
timeouts, and the drill run in-process (or in a subprocess, for the signal tests)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML

from ckpt_doctor.drill.playbook import default_path
from tests.clirun import Result, run_cli
from tests.drill.controller import Simulator
from tests.drill.scenarios import NS, Case, cluster_side, manifests, write_manifests
from tests.fakeapi import FakeKube, ResourceType

ROOT = Path(__file__).resolve().parents[2]
WRITES = ("POST", "PUT", "PATCH", "DELETE")


def playbook_file(path: Path, timeout: float = 20.0, poll: float = 0.02, **per_step: float) -> Path:
    """The packaged playbook with test timeouts (generous: waits end on conditions, not on the clock)."""
    yaml = YAML()
    doc = yaml.load(default_path().read_text())
    doc["pollSeconds"] = poll
    for st in doc["steps"]:
        st["timeoutSeconds"] = per_step.get(st["id"].replace("-", "_"), timeout)
        if st["id"] == "cleanup":
            st["params"]["retries"] = 3
            st["params"]["backoffSeconds"] = 0.05
    with path.open("w") as f:
        yaml.dump(doc, f)
    return path


@dataclass
class Cluster:
    kube: FakeKube
    sim: Simulator
    case: Case
    kubeconfig: Path
    tmp: Path
    playbook: Path

    def seed(self) -> None:
        """Attach mode: the TrainJob and what it needs, as if the user had applied them."""
        self.kube.add_many(manifests(self.case))

    def files(self) -> list[Path]:
        return write_manifests(self.case, self.tmp / "manifests")

    def drill(self, *args: str, playbook: Path | None = None) -> Result:
        argv = ["drill", *args, "--kubeconfig", str(self.kubeconfig), "--playbook", str(playbook or self.playbook)]
        return run_cli(argv)

    def writes(self) -> list[tuple[str, str]]:
        return [(r.method, r.path) for r in self.kube.requests if r.method in WRITES]

    def state(self) -> dict[str, Any]:
        """What must be as it was after a drill: every object's spec and annotations (pods and events aside)."""
        out: dict[str, Any] = {}
        for res in ("trainjobs", "trainingruntimes", "persistentvolumeclaims", "configmaps", "nodes"):
            for o in self.kube.objects(res):
                meta = o["metadata"]
                key = f"{o['kind']}/{meta.get('namespace', '')}/{meta['name']}"
                spec = o.get("spec") if o["kind"] != "PersistentVolumeClaim" else {
                    k: v for k, v in (o.get("spec") or {}).items() if k != "volumeName"}
                out[key] = {"spec": spec, "annotations": meta.get("annotations") or {},
                            "data": o.get("data")}
        return out


def chosen_only(doc: dict[str, Any], *ids: str) -> bool:
    """A drill run with --steps: the chosen steps passed, and the verdict is `error` because a required step was
    not chosen (a drill that left out an interruption proves nothing about it, contracts.md §5)."""
    by = {s["id"]: s for s in doc["steps"]}
    ran = all(by[i]["status"] == "passed" for i in ids)
    return ran and doc["verdict"] == "error" and "not chosen" in doc["verdictReason"]


def start_cluster(case: Case, tmp: Path, version: str = "v2.1", **playbook: float) -> tuple[FakeKube, Simulator,
                                                                                               Path, Path]:
    kube = FakeKube()
    kube.register(ResourceType("apps", "v1", "deployments", "Deployment", short_names=("deploy",)))
    kube.start()
    kube.add({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}})
    kube.add_many(cluster_side(case, version))
    sim = Simulator(kube, case.scenario(), detach_seconds=case.detach_seconds)
    sim.start()
    kc = kube.kubeconfig(tmp / "kubeconfig", namespace=NS)
    pb = playbook_file(tmp / "playbook.yaml", **playbook)
    return kube, sim, kc, pb


@pytest.fixture
def make_cluster(tmp_path: Path) -> Iterator[Any]:
    made: list[tuple[FakeKube, Simulator]] = []

    def make(case: Case, version: str = "v2.1", **playbook: float) -> Cluster:
        kube, sim, kc, pb = start_cluster(case, tmp_path, version, **playbook)
        made.append((kube, sim))
        return Cluster(kube, sim, case, kc, tmp_path, pb)

    yield make
    for kube, sim in made:
        sim.stop()
        kube.stop()
        assert sim.errors == [], sim.errors[0]
        assert kube.errors == [], kube.errors[0]


def drill_subprocess(argv: list[str], **kw: Any) -> subprocess.Popen[str]:
    # PYTHONFAULTHANDLER: a drill that hangs is sent SIGABRT by `stuck` and prints where each thread was
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "NO_COLOR": "1", "PYTHONUNBUFFERED": "1",
           "PYTHONFAULTHANDLER": "1"}
    return subprocess.Popen([sys.executable, "-m", "ckpt_doctor", "drill", *argv], env=env, cwd=ROOT, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, **kw)


def stuck(p: subprocess.Popen[str], timeout: float) -> bool:
    """Wait for the drill to end; one still running after `timeout` is aborted (SIGABRT: with the fault handler
    on it prints every thread's stack to its stderr, which the caller reads) and True is returned."""
    try:
        p.wait(timeout=timeout)
        return False
    except subprocess.TimeoutExpired:
        p.send_signal(signal.SIGABRT)
        try:
            p.wait(timeout=10)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
        return True
