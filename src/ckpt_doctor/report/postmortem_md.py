"""The post-incident report as Markdown that renders in GitHub and GitLab issues.

Data goes into code spans and fenced blocks, escaped for where it goes by `report/mdtext.py` (quotes exact,
a redaction marker `<redacted:env>` never taken for an HTML tag); prose that is ours keeps its backticks. The
step chart is an image beside the file when the report is written with `--out` (`chart` names it).
"""

from __future__ import annotations

from typing import Any

from ckpt_doctor.report.mdtext import cell, cell_code, code, fenced, text

__all__ = ["cell", "cell_code", "code", "fenced", "render", "text"]


def _finding(f: dict[str, Any], level: str) -> list[str]:
    meta = f"`{f['id']}` · {f['kind']} · **{f['severity']}** · {f['confidence']} confidence"
    lines = [f"{level} {text(f['title'])}", "", meta, ""]
    if f["detail"]:
        lines += [text(f["detail"]), ""]
    if f["explanation"]:
        lines += [text(f["explanation"]), ""]
    if f["evidence"]:
        lines.append("Evidence:")
        lines += [f"- {code(e)}" for e in f["evidence"]]
        lines.append("")
    return lines


def render(doc: dict[str, Any], chart: str | None = None, chart_note: str = "") -> str:
    """The report; `chart` is the file name of the step chart beside it (None: not drawn here)."""
    L: list[str] = [f"# {text(doc['title'])}", ""]
    L += [
        f"> {text(doc['tool'])} · {text(doc['source'])} · collected {text(doc['collectedAt'])} · "
        f"Trainer {text(doc['trainer'])}",
        "",
    ]
    s = doc["summary"]
    L += ["## Summary", ""]
    L += [f"- **What broke:** {text(x)}" for x in s["broke"]]
    L += [f"- **Cause:** {text(x)}" for x in s["cause"]] or ["- **Cause:** none found"]
    L += [f"- **Cost:** {text(s['cost'])}", ""]
    L += ["## Impact", "", "| | |", "|---|---|"]
    L += [f"| {cell(k)} | {cell(v)} |" for k, v in doc["impact"]]
    L.append("")
    L += ["## Timeline", ""]
    if doc["attempts"]:
        L += [
            "| attempt | how | began | started | ended | what ended it | complete saves | last step | steps lost |",
            "|---|---|---|---|---|---|---|---|---|",
        ]
        for r in doc["attempts"]:
            L.append(
                "| "
                + " | ".join(
                    cell(r[k]) for k in ("attempt", "how", "began", "started", "ended", "end", "saves", "last", "lost")
                )
                + " |"
            )
        L.append("")
    else:
        L += ["No attempt: the TrainJob has no trainer pods in the snapshot.", ""]
    if doc["moments"]:
        L += [f"- {code(m['at'])} {text(m['what'])}" for m in doc["moments"]]
        L.append("")
    L += ["### Step chart", ""]
    if chart:
        L += [f"![Training step over time, one line per attempt]({chart})", ""]
    if chart_note:
        L += [text(chart_note), ""]
    L += ["## Root cause", ""]
    if not doc["rootCause"]:
        L += ["No symptom failed.", ""]
    for e in doc["rootCause"]:
        L += _finding(e["symptom"], "### Symptom:")
        for c in e["causes"]:
            L += _finding(c, "#### Cause:")
        if not e["causes"]:
            L += ["No cause found among the rules that could be evaluated.", ""]
        if e["unexplored"]:
            L += ["Could also explain it, but could not be checked: " + ", ".join(code(u) for u in e["unexplored"]), ""]
    if doc["latent"]:
        L += ["### Latent risks", "", "Causes that fail with no failing symptom yet:", ""]
        for c in doc["latent"]:
            L += _finding(c, "####")
    L += ["## Fixes", ""]
    if not doc["fixes"]:
        L += ["Nothing to fix.", ""]
    for f in doc["fixes"]:
        L += [f"### {code(f['id'])}: {text(f['title'])}", "", f"**Fix:** {text(f['fix'])}", ""]
        if f["diff"]:
            L += [f"Patch ({text(f['what'])}; against {code(f['target'])} as `kubectl get -o yaml` shows it):", ""]
            L += fenced(f["diff"], "diff")
            L.append("")
        elif f["whyNot"]:
            L += [f"No patch: {text(f['whyNot'])}.", ""]
        if f["docs"]:
            L += ["See: " + ", ".join(code(d) for d in f["docs"]), ""]
    L += ["## What could not be checked", ""]
    if not (doc["notChecked"] or doc["notCollected"] or doc["unknowns"]):
        L += ["Every rule was evaluated and nothing was left uncollected.", ""]
    if doc["notChecked"]:
        L += ["| rule | why |", "|---|---|"]
        L += [f"| {cell_code(n['rule'])} | {cell(n['why'])} |" for n in doc["notChecked"]]
        L.append("")
    if doc["notCollected"]:
        L += ["Not collected:", ""]
        L += [f"- {code(g['what'])}: {text(g['why'])}" for g in doc["notCollected"]]
        L.append("")
    if doc["unknowns"]:
        L += ["Not known about the attempts:", ""]
        L += [f"- {text(u)}" for u in doc["unknowns"]]
        L.append("")
    L += ["## Reproduce the evidence", "", "Read-only; run against the cluster the TrainJob is on:", ""]
    L += fenced("\n".join(f"# {c['what']}\n{c['command']}" for c in doc["reproduce"]) or "# nothing to show", "sh")
    L += ["", "The same report again:", ""]
    L += fenced(doc["rerun"], "sh")
    L.append("")
    if doc["notes"]:
        L += ["## Notes", ""]
        L += [f"- {text(n)}" for n in doc["notes"]]
        L.append("")
    red = doc["redactions"]
    L += [f"<sub>Redacted: {red} value{'s' if red != 1 else ''} that looked like credentials.</sub>", ""]
    return "\n".join(L)
