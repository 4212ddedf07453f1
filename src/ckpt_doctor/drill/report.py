"""The drill's record as JSON (`-o json`), JUnit XML (`--junit`) and Markdown (`--report`), contracts.md §5.

All three are rendered from one redacted copy of `DrillResult.to_json()`: a secret in an event message,
a log line or an error never leaves through a report.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import IO, Any

from ckpt_doctor.drill.result import DrillResult
from ckpt_doctor.report.evidence import describe
from ckpt_doctor.sources.redact import Redactor


def document(result: DrillResult) -> dict[str, Any]:
    """The record, redacted (what every output renders)."""
    return Redactor().obj(result.to_json())


def render_json(doc: dict[str, Any]) -> str:
    return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"


def _target(doc: dict[str, Any]) -> str:
    t = doc.get("target") or {}
    return f"{t.get('namespace')}/{t.get('name')}" if t else "-"


def render_junit(doc: dict[str, Any]) -> str:
    """One test case per step: failed → <failure>, error → <error>, not run / skipped / planned → <skipped>."""
    steps = doc["steps"]
    fails = sum(1 for s in steps if s["status"] == "failed")
    errors = sum(1 for s in steps if s["status"] == "error")
    skipped = sum(1 for s in steps if s["status"] in ("skipped", "not_run", "planned", "stopped"))
    total_time = sum(s.get("seconds") or 0 for s in steps)
    attrs = {"tests": str(len(steps)), "failures": str(fails), "errors": str(errors), "skipped": str(skipped)}
    root = ET.Element("testsuites", {"name": "ckpt-doctor drill", **attrs, "time": f"{total_time:.3f}"})
    suite = ET.SubElement(root, "testsuite", {"name": f"drill {doc['playbook']} {_target(doc)}", **attrs,
                                              "time": f"{total_time:.3f}", "timestamp": doc.get("startedAt") or ""})
    props = ET.SubElement(suite, "properties")
    for k in ("drillId", "verdict", "trainerVersion", "how", "dryRun"):
        ET.SubElement(props, "property", {"name": k, "value": str(doc.get(k) if doc.get(k) is not None else "")})
    for s in steps:
        tc = ET.SubElement(suite, "testcase", {"classname": f"ckpt-doctor.drill.{doc['playbook']}", "name": s["id"],
                                               "time": f"{s.get('seconds') or 0:.3f}"})
        body = _body(s)
        if s["status"] == "failed":
            ET.SubElement(tc, "failure", {"type": "failed", "message": s["observed"] or s["title"]}).text = body
        elif s["status"] == "error":
            ET.SubElement(tc, "error", {"type": "error", "message": s["observed"] or s["title"]}).text = body
        elif s["status"] in ("skipped", "not_run", "planned", "stopped"):
            why = {"not_run": "not run: an earlier step ended the drill", "planned": "planned (--dry-run)",
                   "stopped": "stopped: the drill was interrupted"}.get(s["status"], s["observed"] or "skipped")
            ET.SubElement(tc, "skipped", {"message": why if s["status"] != "skipped" else (s["observed"] or why)})
        if body and s["status"] not in ("failed", "error"):
            ET.SubElement(tc, "system-out").text = body
    if doc.get("leftovers"):
        ET.SubElement(suite, "system-err").text = "\n".join(f"left behind: {x}" for x in doc["leftovers"])
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def _body(s: dict[str, Any]) -> str:
    lines = [s["title"], f"expect: {s['expect']}"] if s.get("expect") else [s["title"]]
    if s.get("observed"):
        lines.append(f"observed: {s['observed']}")
    for c in s.get("commands") or []:
        lines.append(f"$ {c['kubectl']}  [{c['outcome']}]")
    for ev in s.get("evidence") or []:
        lines.append(f"- {describe(ev)}")
    diag = s.get("diagnosis") or {}
    for v in diag.get("verdict") or []:
        lines.append(f"diagnosis: {v['symptom']} ← {', '.join(v['causes']) or 'no cause found'}")
    for f in diag.get("findings") or []:
        lines.append(f"finding {f['rule']}: {f.get('detail') or f['title']}")
    for n in s.get("notes") or []:
        lines.append(f"note: {n}")
    return "\n".join(lines)


def _md(s: str) -> str:
    return s.replace("|", "\\|").replace("\n", " ")


STATUS_WORDS = {"passed": "✓ passed", "failed": "✗ failed", "error": "! error", "skipped": "– skipped",
                "not_run": "· not run", "stopped": "■ stopped", "planned": "○ planned"}


def render_markdown(doc: dict[str, Any]) -> str:
    """Each step: its command(s), what was observed, the evidence (and, on a failure, the diagnosis)."""
    out = [f"# ckpt-doctor drill `{doc['drillId']}`: TrainJob `{_target(doc)}`", ""]
    verdict = doc["verdict"]
    failed = f" at step `{doc['failedStep']}`" if doc.get("failedStep") else ""
    out += [f"**Verdict: {verdict}**{failed}. Playbook `{doc['playbook']}`, {doc['how']}"
            + (f", Trainer {doc['trainerVersion']}" if doc.get("trainerVersion") else "")
            + (" (dry run: nothing was changed)" if doc.get("dryRun") else "") + ".", ""]
    if doc.get("startedAt"):
        out += [f"Started {doc['startedAt']}, finished {doc.get('finishedAt') or '-'}.", ""]
    out += ["| step | status | took | observed |", "|---|---|---|---|"]
    for s in doc["steps"]:
        took = f"{s['seconds']:.1f} s" if s.get("seconds") is not None else ""
        out.append(f"| `{s['id']}` | {STATUS_WORDS.get(s['status'], s['status'])} | {took} | {_md(s['observed'])} |")
    out.append("")
    for s in doc["steps"]:
        out += [f"## {s['id']}: {s['title']}", "", f"_{STATUS_WORDS.get(s['status'], s['status'])}_", ""]
        if s.get("why"):
            out += [s["why"], ""]
        if s.get("expect"):
            out += [f"**Expected:** {s['expect']}", ""]
        if s.get("observed"):
            out += [f"**Observed:** {s['observed']}", ""]
        if s.get("commands"):
            out += ["Commands:", "", "```sh"]
            out += [f"{c['kubectl']}    # {c['outcome']}" for c in s["commands"]]
            out += ["```", ""]
        if s.get("evidence"):
            out += ["Evidence:", ""]
            out += [f"- `{_md(describe(ev))}`" for ev in s["evidence"]]
            out.append("")
        diag = s.get("diagnosis") or {}
        if diag.get("verdict") or diag.get("findings"):
            out += ["Diagnosis:", ""]
            for v in diag.get("verdict") or []:
                causes = ", ".join(f"`{c}`" for c in v["causes"]) or "no cause found among the evaluated rules"
                out.append(f"- **{v['title']}** (`{v['symptom']}`) ← {causes}")
            for f in diag.get("findings") or []:
                out.append(f"- `{f['rule']}` ({f['severity']}): {_md(f.get('detail') or f['title'])}. "
                           f"Fix: {_md(f['fix'])}")
            out.append("")
        for n in s.get("notes") or []:
            out.append(f"> {_md(n)}")
        if s.get("notes"):
            out.append("")
    if doc.get("leftovers"):
        out += ["## Left behind", ""]
        out += [f"- {_md(x)}" for x in doc["leftovers"]]
        out += ["", "Run `ckpt-doctor drill --cleanup` when the cluster answers.", ""]
    if doc.get("notes"):
        out += ["## Notes", ""]
        out += [f"- {_md(x)}" for x in doc["notes"]]
        out.append("")
    return "\n".join(out)


def write_reports(result: DrillResult, junit: Path | None, report: Path | None, stdout: IO[str] | None) -> None:
    """Write what was asked for (safely: safewrite), then the JSON on stdout when asked."""
    from ckpt_doctor.safewrite import write_output

    doc = document(result)
    if junit is not None:
        write_output(junit, render_junit(doc), force=True)
    if report is not None:
        write_output(report, render_markdown(doc), force=True)
    if stdout is not None:
        stdout.write(render_json(doc))
        stdout.flush()
