"""SARIF 2.1.0, for code-scanning UIs and CI annotations.

Failed findings are results, at the file and line of the field they are about (lint) or at
the object they name (diagnose, as a logical location). Rules come from the catalogue. What
could not be evaluated, and what was skipped in the input, travel as tool notifications, so a
clean SARIF log is never a silent all-clear.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import Any
from urllib.parse import quote

from ckpt_doctor import __version__
from ckpt_doctor.engine.catalogue import default_rules
from ckpt_doctor.engine.model import Finding, Rule
from ckpt_doctor.engine.walk import Diagnosis
from ckpt_doctor.report.evidence import describe

SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
LEVEL = {"critical": "error", "error": "error", "warning": "warning", "info": "note"}
# GitHub code scanning ranks results by this number (0.0 to 10.0) when present
SECURITY_SEVERITY = {"critical": "9.0", "error": "7.0", "warning": "4.0", "info": "1.0"}


def _name(rule_id: str) -> str:
    return "".join(p.capitalize() for p in rule_id.split("-"))


def _uri(path: str, base: str = "%SRCROOT%") -> dict[str, Any]:
    if re.match(r"^[A-Za-z]:[\\/]", path):
        return {"uri": "file:///" + quote(PureWindowsPath(path).as_posix())}
    p = PurePosixPath(path.replace("\\", "/"))
    if p.is_absolute():
        return {"uri": "file://" + quote(str(p))}
    return {"uri": quote(str(p)), "uriBaseId": base}


def _rule(r: Rule) -> dict[str, Any]:
    out: dict[str, Any] = {
        "id": r.id,
        "name": _name(r.id),
        "shortDescription": {"text": r.title},
        "fullDescription": {"text": r.explanation},
        "help": {"text": f"Fix: {r.fix}", "markdown": f"{r.explanation}\n\n**Fix:** {r.fix}"},
        "defaultConfiguration": {"level": LEVEL[r.severity]},
        "properties": {
            "tags": ["kubeflow-trainer", "checkpoint", r.kind],
            "kind": r.kind,
            "severity": r.severity,
            "security-severity": SECURITY_SEVERITY[r.severity],
        },
    }
    web = [d for d in r.docs if d.startswith(("http://", "https://"))]
    if web:
        out["helpUri"] = web[0].split(" ", 1)[0]
    return out


def _location(subject: dict[str, Any], base: str | None = "%SRCROOT%") -> dict[str, Any]:
    """Lint: the file and line. Diagnose: the file inside the bundle (base BUNDLEROOT), when there is one."""
    loc: dict[str, Any] = {}
    if subject.get("file") and base:
        phys: dict[str, Any] = {"artifactLocation": _uri(str(subject["file"]), base)}
        if subject.get("line"):
            phys["region"] = {"startLine": int(subject["line"])}
        loc["physicalLocation"] = phys
    name = "/".join(str(x) for x in (subject.get("kind"), subject.get("namespace"), subject.get("name")) if x)
    if name:
        loc["logicalLocations"] = [{"fullyQualifiedName": name, "kind": "resource"}]
    return loc


def _related(f: Finding, primary: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    seen = {(primary.get("file"), primary.get("line"))}
    for ev in f.result.evidence:
        if ev.get("type") != "file" or (ev.get("path"), ev.get("line")) in seen:
            continue
        seen.add((ev.get("path"), ev.get("line")))
        phys: dict[str, Any] = {"artifactLocation": _uri(str(ev["path"]))}
        if ev.get("line"):
            phys["region"] = {"startLine": int(ev["line"])}
        out.append({"id": len(out), "physicalLocation": phys, "message": {"text": str(ev.get("text") or ev["path"])}})
    return out


def _result(f: Finding, index: dict[str, int], base: str | None) -> dict[str, Any]:
    subject = f.result.subject or {}
    detail = f.result.detail or f.rule.title
    text = f"{detail}. Fix: {f.result.fix or f.rule.fix}"
    evidence = [describe(ev) for ev in f.result.evidence if ev.get("type") != "file"]
    key = "|".join(str(subject.get(k) or "") for k in ("kind", "namespace", "name")) + "|" + f.rule.id
    out: dict[str, Any] = {
        "ruleId": f.rule.id,
        "ruleIndex": index[f.rule.id],
        "kind": "fail",
        "level": LEVEL[f.rule.severity],
        "message": {"text": text},
        "partialFingerprints": {"ckptDoctorSubject/v1": hashlib.sha256(key.encode()).hexdigest()[:32]},
        "properties": {"confidence": f.result.confidence, "evidence": evidence},
    }
    loc = _location(subject, base)
    if loc:
        out["locations"] = [loc]
    related = _related(f, subject)
    if related:
        out["relatedLocations"] = related
    return out


def build(diag: Diagnosis) -> dict[str, Any]:
    rules = list(default_rules())
    index = {r.id: i for i, r in enumerate(rules)}
    facts = diag.facts
    snap = facts.scope.snap
    base: str | None = "%SRCROOT%"
    bases: dict[str, Any] = {}
    if facts.mode != "lint":  # bundle files are relative to the bundle, not to the source tree
        root = Path(snap.location) if snap.source == "bundle" and snap.location else None
        base = "BUNDLEROOT" if root is not None and root.is_dir() else None
        if base:
            assert root is not None
            bases[base] = {"uri": root.resolve().as_uri() + "/"}
    notes: list[dict[str, Any]] = []
    for f in diag.not_evaluated():
        subject = f.result.subject or {}
        n: dict[str, Any] = {
            "level": "note",
            "message": {"text": f"{f.rule.id} not evaluated: {f.result.reason}"},
            "descriptor": {"id": f.rule.id, "index": index[f.rule.id]},
        }
        loc = _location(subject, base)
        if loc:
            n["locations"] = [loc]
        notes.append(n)
    for g in facts.scope.snap.not_collected:
        notes.append({"level": "warning", "message": {"text": f"{g.what}: {g.reason}"}})
    run: dict[str, Any] = {
        "tool": {
            "driver": {
                "name": "ckpt-doctor",
                "version": __version__,
                "semanticVersion": __version__,
                "rules": [_rule(r) for r in rules],
            }
        },
        "invocations": [{"executionSuccessful": True, "toolExecutionNotifications": notes}],
        "results": [_result(f, index, base) for f in diag.failed()],
        "properties": {
            "mode": facts.mode,
            "trainerVersion": facts.version.version if facts.mode != "explain-error" else None,
            "summary": diag.summary(),
        },
    }
    if bases:
        run["originalUriBaseIds"] = bases
    return {"$schema": SCHEMA, "version": "2.1.0", "runs": [run]}


def render(diag: Diagnosis) -> str:
    return json.dumps(build(diag), indent=2, ensure_ascii=False) + "\n"
