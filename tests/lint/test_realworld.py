"""lint on real manifests from six repositories (tests/lint/realworld, issue 22 §2): nothing above
warning that their maintainers would dispute, one info message where nothing checkpoints, and
`--fix --dry-run` over the whole corpus stays sane."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from ckpt_doctor.sources.render import find_tool
from tests.clirun import run_cli

HERE = Path(__file__).parent / "realworld"
SPEC = yaml.safe_load((HERE / "expected.yaml").read_text())
SEVERITY = ("info", "warning", "error", "critical")
FOLDERS = ("kubeflow-manifests/base/runtimes", "kubeflow-manifests/overlays/runtimes", "odh-trainer/rhoai-runtimes")


def _lint(*args: str) -> Any:
    cwd = os.getcwd()
    os.chdir(HERE)  # findings cite paths as given: relative to this folder, as SOURCES.md names them
    try:
        return run_cli(["lint", *args])
    finally:
        os.chdir(cwd)


def test_the_corpus_spans_five_repositories_besides_kubeflow_trainer() -> None:
    sources = (HERE / "SOURCES.md").read_text()
    files = sorted(str(p.relative_to(HERE)) for p in HERE.rglob("*.yaml") if p.name != "expected.yaml")
    listed = set(re.findall(r"^\| `([^`]+)` \| (\S+) \|", sources, re.M))
    assert {f for f, _repo in listed} == set(files)
    repos = {repo for _f, repo in listed} - {"kubeflow/trainer"}
    assert len(repos) >= 5, repos


@pytest.mark.parametrize("case", SPEC["cases"], ids=[c["id"] for c in SPEC["cases"]])
def test_real_manifest(case: dict[str, Any]) -> None:
    if any(f in FOLDERS for f in case["files"]) and find_tool("kubectl") is None:
        pytest.skip("kubectl is not installed: the Kustomize folders are judged as rendered")
    got = _lint(*case["files"], "-o", "json")
    assert got.rc == case["exit"], got.err
    if got.rc == 3:
        return
    doc = json.loads(got.out)
    accept = case.get("accept") or {}
    disputed = []
    for f in doc["findings"]:
        if f["status"] != "fail" or f["severity"] == "info":
            continue
        allowed = accept.get(f["rule"])
        if allowed is None or SEVERITY.index(f["severity"]) > SEVERITY.index(allowed):
            disputed.append(f"{f['rule']} [{f['severity']}] {f['subject'].get('file')}: {f.get('detail')}")
    assert disputed == []
    ready = [f for f in doc["findings"] if f["status"] == "fail" and f["rule"] == "not-set-up-for-resume"]
    assert len(ready) == case["readiness"]
    assert all(f["severity"] == "info" for f in ready)


def test_fix_dry_run_over_the_whole_corpus_is_sane() -> None:
    """--fix --dry-run on every file at once: no crash, no write, and every hunk of the diff adds
    only what a mechanical fix adds (the ancestor label, a failurePolicy, backoffLimit, exec)."""
    before = {p: p.read_bytes() for p in HERE.rglob("*") if p.is_file()}
    got = _lint(*sorted(p.name for p in HERE.iterdir() if p.is_dir()), "--fix", "--dry-run")
    assert got.rc in (0, 1), got.err
    assert "Traceback" not in got.err
    assert {p: p.read_bytes() for p in HERE.rglob("*") if p.is_file()} == before
    added = [ln[1:].strip() for ln in got.out.splitlines() if ln.startswith("+") and not ln.startswith("+++")]
    removed = [ln for ln in got.out.splitlines() if ln.startswith("-") and not ln.startswith("---")]
    allowed = ("metadata:", "labels:", "trainer.kubeflow.org/trainjob-ancestor-step: trainer", "failurePolicy:")
    assert removed == [] or all("exec " in ln or "backoffLimit" in ln for ln in removed), removed
    assert all(a.startswith(allowed) or a.startswith(("maxRestarts:", "backoffLimit:", "exec ")) for a in added), added
    for line in got.err.splitlines():  # every message names a rule, a file and what was (not) done
        assert line.startswith("ckpt-doctor: "), line
