"""JUnit XML: one test case per finding, for CI test reports.

A failed finding is a <failure> (its severity as the type), a finding that could not be
evaluated is <skipped> with the reason, a pass is a plain test case. Lint findings carry the
file and line as attributes (GitLab and Jenkins show them).
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from typing import Any

from ckpt_doctor.engine.model import Finding
from ckpt_doctor.engine.walk import Diagnosis
from ckpt_doctor.report.evidence import describe


def _subject_name(subject: dict[str, Any]) -> str:
    obj = "/".join(str(x) for x in (subject.get("kind"), subject.get("namespace"), subject.get("name")) if x)
    where = ""
    if subject.get("file"):
        where = f" ({subject['file']}" + (f":{subject['line']}" if subject.get("line") else "") + ")"
    return f"{obj}{where}"


def _case(f: Finding, suite: str) -> ET.Element:
    subject = f.result.subject or {}
    name = f.rule.id + (f" [{_subject_name(subject)}]" if subject else "")
    tc = ET.Element("testcase", {"classname": f"{suite}.{f.rule.kind}", "name": name, "time": "0"})
    if subject.get("file"):
        tc.set("file", str(subject["file"]))
        if subject.get("line"):
            tc.set("line", str(subject["line"]))
    if f.status == "fail":
        body = [f.result.detail or f.rule.title, ""]
        body += [f"- {describe(ev)}" for ev in f.result.evidence]
        body += ["", f"Fix: {f.result.fix or f.rule.fix}"]
        fail = ET.SubElement(tc, "failure", {"type": f.rule.severity, "message": f.rule.title})
        fail.text = "\n".join(body)
    elif f.status == "not_evaluated":
        ET.SubElement(tc, "skipped", {"message": f.result.reason or "not evaluated"})
    return tc


def build(diag: Diagnosis) -> ET.Element:
    facts = diag.facts
    suite_name = f"ckpt-doctor {facts.mode}"
    s = diag.summary()
    total = len(diag.findings)
    root = ET.Element(
        "testsuites",
        {"name": "ckpt-doctor", "tests": str(total), "failures": str(s["fail"]), "skipped": str(s["notEvaluated"])},
    )
    suite = ET.SubElement(
        root,
        "testsuite",
        {
            "name": suite_name,
            "tests": str(total),
            "failures": str(s["fail"]),
            "errors": "0",
            "skipped": str(s["notEvaluated"]),
            "time": "0",
        },
    )
    props = ET.SubElement(suite, "properties")
    tgt = facts.scope.target() if facts.mode == "diagnose" else None
    for k, v in (
        ("mode", facts.mode),
        ("target", f"{tgt['namespace']}/{tgt['name']}" if tgt else facts.scope.snap.location),
        ("trainerVersion", facts.version.version if facts.mode != "explain-error" else ""),
    ):
        ET.SubElement(props, "property", {"name": k, "value": str(v or "")})
    for f in diag.findings:
        suite.append(_case(f, "ckpt-doctor"))
    if facts.scope.snap.not_collected:
        out = ET.SubElement(suite, "system-out")
        out.text = "\n".join(f"{g.what}: {g.reason}" for g in facts.scope.snap.not_collected)
    return root


def render(diag: Diagnosis) -> str:
    root = build(diag)
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
