"""lint on the shapes of the upstream Kubeflow Trainer manifests (tests/lint/upstream, issue 10 #9).

Each case of expected.yaml is what a Kubeflow Trainer maintainer would accept: a manifest that shows
no checkpointing is told so once ("not set up for resume") instead of failing storage rules, a
runtime judged alone leaves to its TrainJobs what they may add, nothing is critical.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.clirun import run_cli

HERE = Path(__file__).parent / "upstream"
SPEC = yaml.safe_load((HERE / "expected.yaml").read_text())
SEVERITY = ("info", "warning", "error", "critical")
READINESS = "not set up for resume"


def _expect(case: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    profile = SPEC["profiles"].get(case.get("profile") or "", {})
    out.update(profile.get("expect") or {})
    out.update(case.get("expect") or {})
    return {k: (v if isinstance(v, dict) else {"status": v}) for k, v in out.items()}


def _readiness(case: dict[str, Any]) -> dict[str, Any]:
    profile = SPEC["profiles"].get(case.get("profile") or "", {})
    return dict(case.get("readiness") or profile.get("readiness") or {"count": 0})


@pytest.mark.parametrize("case", SPEC["cases"], ids=[c["id"] for c in SPEC["cases"]])
def test_upstream_manifest(case: dict[str, Any]) -> None:
    assert problems_of(case) == []


def problems_of(case: dict[str, Any]) -> list[str]:
    """What lint says of one case that a maintainer would not accept (see expected.yaml)."""
    files = [str(HERE / f) for f in case["files"]]
    got = run_cli(["lint", *files, "-o", "json", *(case.get("flags") or [])])
    doc = json.loads(got.out)
    by_rule: dict[str, list[dict[str, Any]]] = {}
    for f in doc["findings"]:
        by_rule.setdefault(f["rule"], []).append(f)
    problems: list[str] = []
    for f in doc["findings"]:
        if f["status"] == "fail" and f["severity"] == "critical":
            problems.append(f"{f['rule']} fails at critical: {f.get('detail')}")
    expect = _expect(case)
    for rule, want in expect.items():
        fs = by_rule.get(rule, [])
        statuses = {f["status"] for f in fs}
        status = want["status"]
        if status == "any":
            continue
        if status == "not_fail":
            if "fail" in statuses:
                problems.append(f"{rule} must not fail: {[f.get('detail') for f in fs]}")
            continue
        if statuses != {status}:
            said = [f.get("detail") or f.get("reason") for f in fs]
            problems.append(f"{rule}: want {status}, got {sorted(statuses)}: {said}")
            continue
        f = fs[0]
        too_high = "max_severity" in want and SEVERITY.index(f["severity"]) > SEVERITY.index(want["max_severity"])
        if status == "fail" and too_high:
            problems.append(f"{rule} fails at {f['severity']}, at most {want['max_severity']} wanted")
        if "reason_contains" in want and want["reason_contains"] not in (f.get("reason") or ""):
            problems.append(f"{rule} reason {f.get('reason')!r} lacks {want['reason_contains']!r}")
        if "line" in want and f.get("subject", {}).get("line") != want["line"]:
            problems.append(f"{rule} at line {f.get('subject', {}).get('line')}, want {want['line']}")
        if "file" in want and not str(f.get("subject", {}).get("file", "")).endswith(want["file"]):
            problems.append(f"{rule} in {f.get('subject', {}).get('file')}, want {want['file']}")
    for rule, fs in by_rule.items():
        readiness = all(READINESS in (f.get("detail") or "") for f in fs if f["status"] == "fail")
        if rule not in expect and any(f["status"] == "fail" for f in fs) and not readiness:
            problems.append(f"{rule} must not fail (not listed): {[f.get('detail') for f in fs]}")
    ready = [f for f in doc["findings"] if f["status"] == "fail" and READINESS in (f.get("detail") or "")]
    ready_notes = [ln for ln in got.err.splitlines() if READINESS in ln]
    count = len(ready) + len(ready_notes)
    want_r = _readiness(case)
    want_n = str(want_r["count"])
    allowed = (0, 1) if want_n == "0-1" else (int(want_n), int(want_n))
    if not allowed[0] <= count <= allowed[1]:
        problems.append(f"{count} '{READINESS}' message(s), want {want_r['count']}")
    if "severity" in want_r and ready and ready[0]["severity"] != want_r["severity"]:
        problems.append(f"the readiness finding is {ready[0]['severity']}, want {want_r['severity']}")
    if "exit" in case and got.rc != case["exit"]:
        problems.append(f"exit {got.rc}, want {case['exit']}")
    return problems
