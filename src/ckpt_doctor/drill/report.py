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


def _outcome(doc: dict[str, Any], s: dict[str, Any]) -> str:
    """A step's JUnit outcome: its status, except that a required step whose absence made the verdict `error`
    (skipped, not chosen, not run) is an error: a CI reading the JUnit must not see green where the drill did
    not pass (drill/verdict.py decides, this only shows it)."""
    if doc.get("verdict") == "error" and doc.get("failedStep") == s["id"] and s["status"] not in ("failed", "error"):
        return "error"
    return str(s["status"])


def render_junit(doc: dict[str, Any]) -> str:
    """One test case per step: failed → <failure>, error → <error>, not run / skipped / planned → <skipped>."""
    steps = doc["steps"]
    outcomes = [_outcome(doc, s) for s in steps]
    fails = outcomes.count("failed")
    errors = outcomes.count("error")
    skipped = sum(1 for o in outcomes if o in ("skipped", "not_run", "planned", "stopped"))
    total_time = sum(s.get("seconds") or 0 for s in steps)
    attrs = {"tests": str(len(steps)), "failures": str(fails), "errors": str(errors), "skipped": str(skipped)}
    root = ET.Element("testsuites", {"name": "ckpt-doctor drill", **attrs, "time": f"{total_time:.3f}"})
    suite = ET.SubElement(root, "testsuite", {"name": f"drill {doc['playbook']} {_target(doc)}", **attrs,
                                              "time": f"{total_time:.3f}", "timestamp": doc.get("startedAt") or ""})
    props = ET.SubElement(suite, "properties")
    for k in ("drillId", "verdict", "verdictReason", "trainerVersion", "how", "dryRun"):
        ET.SubElement(props, "property", {"name": k, "value": str(doc.get(k) if doc.get(k) is not None else "")})
    if (doc.get("cluster") or {}).get("simulated"):
        from ckpt_doctor.simulation import WORDS

        ET.SubElement(props, "property", {"name": "cluster", "value": WORDS})
    for s, outcome in zip(steps, outcomes, strict=True):
        tc = ET.SubElement(suite, "testcase", {"classname": f"ckpt-doctor.drill.{doc['playbook']}", "name": s["id"],
                                               "time": f"{s.get('seconds') or 0:.3f}"})
        body = _body(s)
        if outcome == "failed":
            ET.SubElement(tc, "failure", {"type": "failed", "message": s["observed"] or s["title"]}).text = body
        elif outcome == "error":
            message = s["observed"] if s["status"] == "error" else doc.get("verdictReason")
            ET.SubElement(tc, "error", {"type": "error", "message": message or s["title"]}).text = body
        elif outcome in ("skipped", "not_run", "planned", "stopped"):
            why = {"not_run": "not run: an earlier step ended the drill", "planned": "planned (--dry-run)",
                   "stopped": "stopped: the drill was interrupted"}.get(s["status"], s["observed"] or "skipped")
            ET.SubElement(tc, "skipped", {"message": why if s["status"] != "skipped" else (s["observed"] or why)})
        if body and outcome not in ("failed", "error"):
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
    said = f": {_md(doc['verdictReason'])}" if doc.get("verdictReason") else failed  # the reason names the step
    out += [f"**Verdict: {verdict}**{said}", ""]
    out += [f"Playbook `{doc['playbook']}`, {doc['how']}"
            + (f", Trainer {doc['trainerVersion']}" if doc.get("trainerVersion") else "")
            + (" (dry run: nothing was changed)" if doc.get("dryRun") else "") + ".", ""]
    if (doc.get("cluster") or {}).get("simulated"):
        from ckpt_doctor.simulation import WORDS

        out += [f"Cluster: the {WORDS} at {doc['cluster']['server']}, not a real cluster.", ""]
    if doc.get("startedAt"):
        out += [f"Started {doc['startedAt']}, finished {doc.get('finishedAt') or '-'}.", ""]
    out += ["| step | status | took | observed |", "|---|---|---|---|"]
    for s in doc["steps"]:
        took = f"{s['seconds']:.1f} s" if s.get("seconds") is not None else ""
        status = STATUS_WORDS.get(s["status"], s["status"]) + ("" if s.get("required", True) else " (optional)")
        out.append(f"| `{s['id']}` | {status} | {took} | {_md(s['observed'])} |")
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


def write_reports(result: DrillResult, junit: Path | None, report: Path | None, stdout: IO[str] | None,
                  force: bool = False) -> None:
    """Write what was asked for (safely: safewrite; an existing file only with `force`, keeping its mode), then
    the JSON on stdout when asked. One that cannot be written does not keep the others from being written; the
    first refusal is raised at the end."""
    from ckpt_doctor.errors import InputError
    from ckpt_doctor.safewrite import write_output

    doc = document(result)
    refused: list[InputError] = []
    for path, render in ((junit, render_junit), (report, render_markdown)):
        if path is None:
            continue
        try:
            write_output(path, render(doc), force=force)
        except InputError as e:
            refused.append(e)
    if stdout is not None:
        stdout.write(render_json(doc))
        stdout.flush()
    if refused:
        raise refused[0]
