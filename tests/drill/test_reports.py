"""The drill's JUnit and Markdown reports against golden files, its JSON against docs/drill.schema.json, and
every way out through the redactor. `UPDATE_GOLDEN=1 pytest tests/drill/test_reports.py` rewrites the goldens
(review the diff)."""

from __future__ import annotations

import json
import os
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import jsonschema

from ckpt_doctor.drill import verdict
from ckpt_doctor.drill.report import document, render_json, render_junit, render_markdown
from ckpt_doctor.drill.result import Command, DrillResult, StepResult
from tests.drill.conftest import ROOT

GOLDEN = Path(__file__).parent / "golden"
SCHEMA = json.loads((ROOT / "docs" / "drill.schema.json").read_text())
SECRET = "hf_" + "aBcDeFgHiJkLmNoPqRsTuVwXyZ012345"


def sample() -> DrillResult:
    """A drill of the lexical-sort scenario, as the runner records it (fixed times and ids)."""
    r = DrillResult("d-0a1b2c", "verify-resume", {"kind": "TrainJob", "namespace": "team-a", "name": "sft-resumable"},
                    "attach", trainer_version="v2.1", verdict="failed", started_at="2026-12-01T10:00:00Z",
                    finished_at="2026-12-01T10:04:12Z",
                    options={"crash": "delete", "crossNode": "selector", "keep": False, "yes": True})
    pod0, pod1 = "sft-resumable-node-0-0-b7k2q", "sft-resumable-node-0-0-x4m9z"
    r.steps = [
        StepResult("preflight", "Check the cluster, the permissions and the runtime before touching anything",
                   status="passed", started_at="2026-12-01T10:00:00Z", finished_at="2026-12-01T10:00:02Z", seconds=1.8,
                   observed="the Trainer and JobSet APIs are served; PVC ckpt-pvc is Bound (ReadWriteOnce, numNodes 1)",
                   evidence=[{"type": "field", "object": "PersistentVolumeClaim/team-a/ckpt-pvc",
                              "path": "status.phase", "value": "Bound"}],
                   notes=["Trainer v2.1: the Trainer controller's image is v2.1.0"]),
        StepResult("submit", "Submit the TrainJob (or attach to the one named) and wait for its trainer",
                   status="passed", started_at="2026-12-01T10:00:02Z", finished_at="2026-12-01T10:00:03Z", seconds=0.9,
                   observed=f"attached to TrainJob team-a/sft-resumable: its trainer {pod0} on node gpu-node-a runs "
                            "what spec.trainer asks"),
        StepResult("first-checkpoint", "Wait for the first complete checkpoint", status="passed",
                   started_at="2026-12-01T10:00:03Z", finished_at="2026-12-01T10:02:40Z", seconds=157.2,
                   observed="step 100 saved completely ([checkpoint] saved /mnt/ckpt/sft-resumable/checkpoint-100)",
                   evidence=[{"type": "log", "pod": pod0, "container": "node", "previous": False, "line": 19,
                              "text": "[checkpoint] saved /mnt/ckpt/sft-resumable/checkpoint-100", "attempt": 0},
                             {"type": "field", "object": f"Pod/team-a/{pod0}", "path": "ls /mnt/ckpt/sft-resumable",
                              "value": ["checkpoint-80", "checkpoint-90", "checkpoint-100"]}],
                   commands=[Command(f"kubectl -n team-a exec {pod0} -c node -- ls -1 /mnt/ckpt/sft-resumable",
                                     "read: list the checkpoint directory", "done")]),
        StepResult("crash", "Crash the trainer, then check that the next attempt resumed", status="failed",
                   started_at="2026-12-01T10:02:40Z", finished_at="2026-12-01T10:03:55Z", seconds=75.0,
                   observed="attempt 1 resumed from step 90 after the crash, older than the last complete save, "
                            "step 100",
                   evidence=[{"type": "log", "pod": pod1, "container": "node", "previous": False, "line": 2,
                              "text": "[checkpoint] resuming from /mnt/ckpt/sft-resumable/checkpoint-90",
                              "attempt": 1},
                             {"type": "field", "object": "JobSet/team-a/sft-resumable", "path": "status.restarts",
                              "value": 1},
                             {"type": "event", "object": f"Pod/team-a/{pod1}", "reason": "Pulled",
                              "message": f"pulled with HF_TOKEN={SECRET}", "count": 1,
                              "lastTimestamp": "2026-12-01T10:03:01Z"}],
                   commands=[Command(f"kubectl -n team-a delete pod {pod0}", f"delete the trainer pod {pod0}",
                                     "done")],
                   diagnosis={"verdict": [{"symptom": "resumed-older-checkpoint",
                                           "title": "An attempt resumed from an older checkpoint than the newest one "
                                                    "saved", "causes": ["lexical-checkpoint-sort"]}],
                              "findings": [{"rule": "lexical-checkpoint-sort", "kind": "cause", "severity": "warning",
                                            "title": "The newest checkpoint is chosen by sorting names as text",
                                            "detail": "sorted(glob(...)) picks checkpoint-90 over checkpoint-100",
                                            "fix": "Sort by the integer suffix"}]}),
        StepResult("suspend-resume", "Suspend the TrainJob, wait until its pods are gone, resume it"),
        StepResult("cross-node", "Resume on another node"),
        StepResult("cleanup", "Undo every change and check that the cluster is as it was", status="passed",
                   started_at="2026-12-01T10:03:55Z", finished_at="2026-12-01T10:04:12Z", seconds=0.4,
                   observed="read back as before"),
    ]
    for st in r.steps:
        st.required = st.id != "preflight"
    verdict.apply(r)  # as the runner does: the one decision every report shows
    return r


def golden(name: str, text: str) -> None:
    path = GOLDEN / name
    if os.environ.get("UPDATE_GOLDEN"):
        path.parent.mkdir(exist_ok=True)
        path.write_text(text)
    assert path.exists(), f"no golden file {path}: run with UPDATE_GOLDEN=1 and review it"
    assert text == path.read_text()


def test_junit_golden() -> None:
    text = render_junit(document(sample()))
    golden("drill.junit.xml", text)
    root = ET.fromstring(text)
    cases = root.findall("testsuite/testcase")
    assert [c.get("name") for c in cases] == [s.id for s in sample().steps]
    assert cases[3].find("failure") is not None and cases[4].find("skipped") is not None
    assert root.get("failures") == "1" and root.get("skipped") == "2"


def test_markdown_golden() -> None:
    text = render_markdown(document(sample()))
    golden("drill.md", text)
    assert "**Verdict: failed**: step crash failed" in text
    assert "kubectl -n team-a delete pod" in text and "lexical-checkpoint-sort" in text


def test_json_is_valid_and_redacted() -> None:
    doc = document(sample())
    jsonschema.validate(doc, SCHEMA)
    assert doc["failedStep"] == "crash"
    for text in (render_json(doc), render_junit(doc), render_markdown(doc)):
        assert SECRET not in text and "redacted:hf-token" in text


def test_schema_rejects_a_wrong_document() -> None:
    doc: dict[str, Any] = document(sample())
    doc["steps"][0]["status"] = "ok"
    try:
        jsonschema.validate(doc, SCHEMA)
    except jsonschema.ValidationError:
        return
    raise AssertionError("the schema accepted an unknown step status")


def test_reports_written_through_the_cli(make_cluster: Any, tmp_path: Path) -> None:
    from tests.drill.scenarios import correct

    c = make_cluster(correct())
    c.seed()
    junit, md = tmp_path / "drill.xml", tmp_path / "drill.md"
    md.write_text("old")
    md.chmod(0o640)
    got = c.drill("team-a/sft-resumable", "--yes", "--steps", "first-checkpoint", "--junit", str(junit),
                  "--report", str(md), "--force")
    assert got.rc == 3 and "not chosen" in got.err, got.err  # --steps leaves required steps out: not passed
    assert ET.parse(junit).getroot().get("tests") == "7"
    assert md.read_text().startswith("# ckpt-doctor drill") and (md.stat().st_mode & 0o777) == 0o640
