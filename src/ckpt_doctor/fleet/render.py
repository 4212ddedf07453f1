"""The fleet's faces: a ranked table (text, markdown) and one document (json, sarif, junit) for all TrainJobs.

Ranking: TrainJobs with a failing finding first (worst severity, then most steps lost, then most
attempts), then the ones that could not be diagnosed (unknown is not clean), then the rest.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from collections import Counter
from typing import Any

from rich.text import Text

from ckpt_doctor import __version__
from ckpt_doctor.engine.model import SEVERITIES, severity_rank
from ckpt_doctor.fleet.scan import FleetResult, JobOutcome, JsonText, deeper
from ckpt_doctor.fleet.summary import RESUME_STATES, JobSummary, Lost

SEV_STYLE = {"critical": "bold red", "error": "red", "warning": "yellow", "info": "cyan"}
COLUMNS = ("NAMESPACE", "TRAINJOB", "STATE", "ATTEMPTS", "STEPS LOST", "WORST FINDING", "CAUSE")


def rank(result: FleetResult) -> list[JobOutcome]:
    def key(o: JobOutcome) -> tuple[Any, ...]:
        r = o.row
        if r is None:
            return (1, 0, 0, 0, o.namespace, o.name)
        lost = r.lost.steps or 0
        return (0 if r.worst is not None else 2, -severity_rank(r.severity), -lost, -r.attempts, o.namespace, o.name)

    return sorted(result.outcomes, key=key)


def total_lost(result: FleetResult) -> Lost:
    rows = [o.row for o in result.outcomes if o.row is not None]
    known = [r.lost.steps for r in rows if r.lost.steps is not None]
    partial = any(r.lost.partial for r in rows)
    if not known and partial:
        return Lost(None, True)
    return Lost(sum(known), partial)


def summary(result: FleetResult) -> dict[str, Any]:
    rows = [o.row for o in result.outcomes if o.row is not None]
    sev = Counter(r.severity for r in rows if r.severity)
    return {
        "trainjobs": len(result.outcomes),
        "namespaces": len({o.namespace for o in result.outcomes}),
        "failing": sum(1 for r in rows if r.worst is not None),
        "unreadable": sum(1 for o in result.outcomes if o.row is None),
        "namespacesUnreadable": len(result.namespace_errors),
        "clean": sum(1 for r in rows if r.worst is None),
        "notEvaluated": sum(1 for r in rows if r.counts.get("notEvaluated")),
        "bySeverity": {s: sev[s] for s in reversed(SEVERITIES) if sev[s]},
        "resumeStatus": {s: n for s in RESUME_STATES if (n := sum(1 for r in rows if r.resume_status == s))},
        "stepsLost": total_lost(result).to_json(),
    }


# -- the table -----------------------------------------------------------------------------------------------


def _cells(o: JobOutcome) -> list[str]:
    r = o.row
    if r is None:
        return [o.namespace, o.name, "?", "?", "?", f"could not be diagnosed: {o.error}", ""]
    return [r.namespace, r.name, r.state, str(r.attempts), lost_cell(r.lost), _worst(r), _cause(r)]


def lost_cell(lost: Lost) -> str:
    """Steps lost in a table cell, with its bound: `70`, `≥70`, `0 (+?)` (none seen, not all measured), `?`."""
    if lost.steps == 0 and lost.partial:
        return "0 (+?)"
    return lost.text()


def _worst(r: JobSummary) -> str:
    return f"{r.worst.rule.id} [{r.worst.rule.severity}]" if r.worst is not None else "—"


def _cause(r: JobSummary) -> str:
    if r.worst is None:
        return "—"
    if r.worst.rule.kind == "cause":
        return "(a cause: no symptom yet)"
    if r.cause is not None:
        return r.cause.rule.id
    return "not found" + (f" ({len(r.unexplored)} not evaluated)" if r.unexplored else "")


def _rows(result: FleetResult) -> list[tuple[list[str], JobOutcome | None]]:
    out: list[tuple[list[str], JobOutcome | None]] = [(_cells(o), o) for o in rank(result)]
    errors = [([e.namespace, "*", "?", "?", "?", f"TrainJobs cannot be listed: {e.reason}", ""], None)
              for e in result.namespace_errors]  # fmt: skip
    first_clean = next((i for i, (_, o) in enumerate(out) if o is not None and o.row is not None
                        and o.row.worst is None), len(out))  # fmt: skip
    return out[:first_clean] + errors + out[first_clean:]


def _footer(result: FleetResult) -> str:
    s = summary(result)
    n, ns = s["trainjobs"], s["namespaces"]
    parts = [f"{n} TrainJob{'s' if n != 1 else ''} in {ns} namespace{'s' if ns != 1 else ''}"]
    detail = []
    if s["failing"]:
        sev = ", ".join(f"{k} {v}" for k, v in s["bySeverity"].items())
        detail.append(f"{s['failing']} failing ({sev})")
    if s["unreadable"]:
        detail.append(f"{s['unreadable']} could not be diagnosed")
    if s["namespacesUnreadable"]:
        k = s["namespacesUnreadable"]
        detail.append(f"{k} namespace{'s' if k != 1 else ''} whose TrainJobs could not be listed")
    detail.append(f"{s['clean']} with nothing failing")
    text = parts[0] + ": " + ", ".join(detail)
    lost = total_lost(result)
    if lost.steps:
        text += f"; {lost.steps} steps lost to restarts" + (" (at least)" if lost.partial else "")
    if s["notEvaluated"]:
        text += f"; {s['notEvaluated']} with rules not evaluated (see -o json, or diagnose NS/NAME)"
    return text


def _widths(rows: list[list[str]]) -> list[int]:
    widths = [len(c) for c in COLUMNS]
    for cells in rows:
        for i, c in enumerate(cells[:-2]):
            widths[i] = max(widths[i], len(c))
        widths[-2] = max(widths[-2], min(len(cells[-2]), 48))
    return widths


def build_text(result: FleetResult) -> Text:
    out = Text()
    out.append("ckpt-doctor ", "bold")
    out.append(f"diagnose · fleet · {result.where}\n\n")
    rows = _rows(result)
    if not rows:
        out.append("No TrainJob found.\n", "bold")
    else:
        widths = _widths([c for c, _ in rows])

        def line(cells: list[str]) -> str:
            head = "  ".join(c.ljust(w) for c, w in zip(cells[:-1], widths[:-1], strict=True))
            return (head + "  " + cells[-1]).rstrip()

        out.append(line(list(COLUMNS)) + "\n", "bold")
        for cells, o in rows:
            style = ""
            if o is None or o.row is None:
                style = "yellow"
            elif o.row.severity:
                style = SEV_STYLE.get(o.row.severity, "")
            out.append(line(cells) + "\n", style)
    out.append("\n" + _footer(result) + "\n")
    if result.notes:
        out.append("\nNOT COLLECTED\n", "bold yellow")
        for n in result.notes:
            out.append(f"  {n}\n", "yellow")
    return out


def render_text(result: FleetResult) -> str:
    return build_text(result).plain


def render_markdown(result: FleetResult) -> str:
    lines = [f"# ckpt-doctor fleet scan: {result.where}", ""]
    rows = _rows(result)
    if rows:
        lines.append("| " + " | ".join(c.title() if c != "TRAINJOB" else "TrainJob" for c in COLUMNS) + " |")
        lines.append("|" + "---|" * len(COLUMNS))
        for cells, _ in rows:
            lines.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    else:
        lines.append("No TrainJob found.")
    lines += ["", _footer(result) + "."]
    if result.notes:
        lines += ["", "## Not collected", ""] + [f"- {n}" for n in result.notes]
    return "\n".join(lines) + "\n"


# -- documents -----------------------------------------------------------------------------------------------


def to_json(result: FleetResult) -> dict[str, Any]:
    doc = _document(result)
    doc["diagnoses"] = [json.loads(p) if isinstance(p, JsonText) else p for p in doc["diagnoses"]]
    return doc


def _document(result: FleetResult) -> dict[str, Any]:
    """`to_json`'s document, its diagnoses as the parts hold them (printed ones as `JsonText`)."""
    ranked = rank(result)
    rows: list[dict[str, Any]] = []
    for o in ranked:
        rows.append(o.row.to_json() if o.row is not None else {"namespace": o.namespace, "name": o.name,
                                                                 "error": o.error})  # fmt: skip
    rows += [{"namespace": e.namespace, "name": None, "error": f"TrainJobs cannot be listed: {e.reason}"}
             for e in result.namespace_errors]  # fmt: skip
    return {
        "schemaVersion": 1,
        "tool": {"name": "ckpt-doctor", "version": __version__},
        "mode": "fleet",
        "source": result.source,
        "scope": result.where,
        "trainjobs": rows,
        "diagnoses": [o.part for o in ranked if o.part is not None],
        "notCollected": [{"what": "fleet", "reason": n} for n in result.notes],
        "summary": summary(result),
    }


def render_json(result: FleetResult) -> str:
    """`to_json` printed with indent 2; the diagnoses, printed already (in the worker processes, or as each was
    diagnosed, one level deeper: `JsonText`), are set in as the whole document printed at once would print them,
    with one copy of their text."""
    doc = _document(result)
    parts = doc["diagnoses"]
    doc["diagnoses"] = []
    text = json.dumps(doc, indent=2, ensure_ascii=False, default=str) + "\n"
    if not parts:
        return text
    # a top-level key, so its line starts with exactly two spaces; no string holds a raw newline
    empty = '\n  "diagnoses": [],\n'
    assert text.count(empty) == 1
    at = text.index(empty)
    pieces = [text[:at], '\n  "diagnoses": [\n    ']
    for i, p in enumerate(parts):
        if i:
            pieces.append(",\n    ")
        pieces.append(p if isinstance(p, JsonText) else deeper(json.dumps(p, indent=2, ensure_ascii=False,
                                                                          default=str)))  # fmt: skip
    pieces += ["\n  ],\n", text[at + len(empty) :]]
    return "".join(pieces)


def render_sarif(result: FleetResult) -> str:
    """One SARIF run for the whole fleet: every TrainJob's results, each naming its TrainJob."""
    from ckpt_doctor.engine.catalogue import default_rules
    from ckpt_doctor.report.sarif import SCHEMA, _rule

    results: list[dict[str, Any]] = []
    notes: list[dict[str, Any]] = []
    bases: dict[str, Any] = {}
    for o in rank(result):
        who = f"{o.namespace}/{o.name}"
        if o.part is None:
            notes.append({"level": "error", "message": {"text": f"TrainJob {who} could not be diagnosed: {o.error}"}})
            continue
        run = o.part
        bases.update(run.get("originalUriBaseIds") or {})
        for r in run.get("results", []):
            r.setdefault("properties", {})["trainjob"] = who
            results.append(r)
        for inv in run.get("invocations", []):
            for n in inv.get("toolExecutionNotifications", []):
                n["message"]["text"] = f"{who}: {n['message']['text']}"
                notes.append(n)
    for e in result.namespace_errors:
        notes.append({"level": "error", "message": {"text": f"namespace {e.namespace}: {e.reason}"}})
    for n in result.notes:
        notes.append({"level": "warning", "message": {"text": n}})
    run_doc: dict[str, Any] = {
        "tool": {
            "driver": {
                "name": "ckpt-doctor",
                "version": __version__,
                "semanticVersion": __version__,
                "rules": [_rule(r) for r in default_rules()],
            }
        },
        "invocations": [{"executionSuccessful": True, "toolExecutionNotifications": notes}],
        "results": results,
        "properties": {"mode": "fleet", "scope": result.where, "summary": summary(result)},
    }
    if bases:
        run_doc["originalUriBaseIds"] = bases
    return json.dumps({"$schema": SCHEMA, "version": "2.1.0", "runs": [run_doc]}, indent=2, ensure_ascii=False) + "\n"


def render_junit(result: FleetResult) -> str:
    """One JUnit report: a test suite per TrainJob (a suite with an error for one that could not be read)."""
    root = ET.Element("testsuites", {"name": "ckpt-doctor fleet"})
    tests = failures = skipped = errors = 0
    for o in rank(result):
        who = f"{o.namespace}/{o.name}"
        if o.part is None:
            _error_suite(root, f"ckpt-doctor diagnose {who}", who, str(o.error))
            tests, errors = tests + 1, errors + 1
            continue
        suite = o.part
        suite.set("name", f"ckpt-doctor diagnose {who}")
        root.append(suite)
        tests += int(suite.get("tests", "0"))
        failures += int(suite.get("failures", "0"))
        skipped += int(suite.get("skipped", "0"))
    for e in result.namespace_errors:
        _error_suite(root, f"ckpt-doctor namespace {e.namespace}", e.namespace, e.reason)
        tests, errors = tests + 1, errors + 1
    for k, v in (("tests", tests), ("failures", failures), ("errors", errors), ("skipped", skipped)):
        root.set(k, str(v))
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def _error_suite(root: ET.Element, suite_name: str, case_name: str, message: str) -> None:
    attrs = {"name": suite_name, "tests": "1", "failures": "0", "errors": "1", "skipped": "0", "time": "0"}
    suite = ET.SubElement(root, "testsuite", attrs)
    case = ET.SubElement(suite, "testcase", {"classname": "ckpt-doctor.fleet", "name": case_name, "time": "0"})
    ET.SubElement(case, "error", {"message": message})


RENDERERS = {
    "text": render_text,
    "markdown": render_markdown,
    "json": render_json,
    "sarif": render_sarif,
    "junit": render_junit,
}
