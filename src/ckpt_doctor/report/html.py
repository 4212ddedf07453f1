"""The post-incident report as one self-contained HTML file, to attach to a ticket.

No request of any kind leaves the page: the CSS is inline, the step chart is an inline SVG (pygal with
its scripts removed), there is no script, no font, no image and no link to anything outside the file
(references such as the guide's address are shown as text). Every string is escaped.
"""

from __future__ import annotations

from html import escape
from typing import Any

CSS = """
body{font:15px/1.5 -apple-system,"Segoe UI",Helvetica,Arial,sans-serif;color:#1f2328;max-width:1040px;
margin:2em auto;padding:0 1em}
h1{font-size:1.6em;border-bottom:1px solid #d1d9e0;padding-bottom:.3em}
h2{font-size:1.3em;border-bottom:1px solid #d1d9e0;padding-bottom:.2em;margin-top:1.6em}
h3{font-size:1.1em}h4{font-size:1em}
.meta{color:#59636e}
table{border-collapse:collapse;margin:.6em 0;font-size:.92em}
th,td{border:1px solid #d1d9e0;padding:.3em .6em;text-align:left;vertical-align:top}
th{background:#f6f8fa}
code,pre{font-family:"DejaVu Sans Mono",Menlo,Consolas,monospace;font-size:.88em}
code{background:#eff1f3;padding:.1em .3em;border-radius:4px}
pre{background:#f6f8fa;padding:.8em;overflow:auto;border-radius:6px}
pre code{background:none;padding:0}
.add{color:#116329;background:#dafbe1}.del{color:#82071e;background:#ffebe9}.hunk{color:#8250df}
.sev-critical,.sev-error{color:#cf222e;font-weight:600}.sev-warning{color:#9a6700;font-weight:600}
.chart svg{max-width:100%;height:auto}
.inferred{color:#59636e;font-style:italic}
ul.evidence li{margin:.15em 0}
"""


def _e(s: Any) -> str:
    return escape(str(s), quote=True)


def _c(s: Any) -> str:
    return f"<code>{_e(s)}</code>"


def _inline(s: Any) -> str:
    """Our prose with `code` in backticks (as the Markdown shows it) → escaped HTML with <code>."""
    parts = str(s).split("`")
    if len(parts) % 2 == 0:  # an unpaired backtick: plain text
        return _e(s)
    return "".join(_c(p) if i % 2 else _e(p) for i, p in enumerate(parts))


def _finding(f: dict[str, Any], tag: str, lead: str = "") -> list[str]:
    out = [
        f"<{tag}>{_e(lead)}{_e(f['title'])}</{tag}>",
        f"<p>{_c(f['id'])} · {_e(f['kind'])} · <span class=\"sev-{_e(f['severity'])}\">{_e(f['severity'])}</span>"
        f" · {_e(f['confidence'])} confidence</p>",
    ]
    if f["detail"]:
        out.append(f"<p>{_e(f['detail'])}</p>")
    if f["explanation"]:
        out.append(f"<p>{_e(f['explanation'])}</p>")
    if f["evidence"]:
        out.append("<p>Evidence:</p><ul class=\"evidence\">")
        out += [f"<li>{_c(x)}</li>" for x in f["evidence"]]
        out.append("</ul>")
    return out


def _diff(text: str) -> str:
    rows = []
    for line in text.rstrip("\n").split("\n"):
        cls = ""
        if line.startswith("@@"):
            cls = "hunk"
        elif line.startswith("+") and not line.startswith("+++"):
            cls = "add"
        elif line.startswith("-") and not line.startswith("---"):
            cls = "del"
        rows.append(f'<span class="{cls}">{_e(line)}</span>' if cls else _e(line))
    return "<pre><code>" + "\n".join(rows) + "</code></pre>"


def _table(head: list[str], rows: list[list[str]]) -> list[str]:
    out = ["<table>", "<tr>" + "".join(f"<th>{_e(h)}</th>" for h in head) + "</tr>"]
    out += ["<tr>" + "".join(f"<td>{c}</td>" for c in r) + "</tr>" for r in rows]
    out.append("</table>")
    return out


def render(doc: dict[str, Any], svg: str | None, chart_note: str = "") -> str:
    """The whole page; `svg` is the step chart (None: not drawn, `chart_note` says why)."""
    H: list[str] = [
        "<!DOCTYPE html>",
        '<html lang="en">',
        "<head>",
        '<meta charset="utf-8">',
        # no request of any kind: this policy makes a browser refuse one even if something slipped in
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; "
        "img-src data:\">",
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{_e(doc['title'])}</title>",
        f"<style>{CSS}</style>",
        "</head>",
        "<body>",
        f"<h1>{_e(doc['title'])}</h1>",
        f"<p class=\"meta\">{_e(doc['tool'])} · {_e(doc['source'])} · collected {_e(doc['collectedAt'])} · "
        f"Trainer {_e(doc['trainer'])}</p>",
    ]
    s = doc["summary"]
    H += ["<h2>Summary</h2>", "<ul>"]
    H += [f"<li><strong>What broke:</strong> {_inline(x)}</li>" for x in s["broke"]]
    causes = [f"<li><strong>Cause:</strong> {_inline(x)}</li>" for x in s["cause"]]
    H += causes or ["<li><strong>Cause:</strong> none</li>"]
    H += [f"<li><strong>Cost:</strong> {_e(s['cost'])}</li>", "</ul>"]
    H += ["<h2>Impact</h2>"]
    H += _table(["", ""], [[_e(k), _e(v)] for k, v in doc["impact"]])
    H += ["<h2>Timeline</h2>"]
    if doc["attempts"]:
        head = ["attempt", "how", "began", "started", "ended", "what ended it", "complete saves", "last step",
                "steps lost", "nodes", "GPUs"]  # fmt: skip
        rows = []
        for r in doc["attempts"]:
            first = f"<span class=\"inferred\">{_e(r['attempt'])}</span>" if r["inferred"] else _e(r["attempt"])
            keys = ("how", "began", "started", "ended", "end", "saves", "last", "lost", "nodes", "gpus")
            rows.append([first] + [_e(r[k]) for k in keys])
        H += _table(head, rows)
    else:
        H.append("<p>No attempt: the TrainJob has no trainer pods in the snapshot.</p>")
    if doc["moments"]:
        H.append("<ul>")
        H += [f"<li>{_c(m['at'])} {_e(m['what'])}</li>" for m in doc["moments"]]
        H.append("</ul>")
    H.append("<h3>Step chart</h3>")
    if svg:
        H.append(f'<div class="chart">{svg}</div>')
    if chart_note:
        H.append(f"<p class=\"meta\">{_e(chart_note)}</p>")
    H.append("<h2>Root cause</h2>")
    if not doc["rootCause"]:
        H.append("<p>No symptom failed.</p>")
    for e in doc["rootCause"]:
        H += _finding(e["symptom"], "h3", "Symptom: ")
        for c in e["causes"]:
            H += _finding(c, "h4", "Cause: ")
        if not e["causes"]:
            H.append("<p>No cause found among the rules that could be evaluated.</p>")
        if e["unexplored"]:
            H.append("<p>Could also explain it, but could not be checked: "
                     + ", ".join(_c(u) for u in e["unexplored"]) + "</p>")  # fmt: skip
    if doc["latent"]:
        H += ["<h3>Latent risks</h3>", "<p>Causes that fail with no failing symptom yet:</p>"]
        for c in doc["latent"]:
            H += _finding(c, "h4")
    H.append("<h2>Fixes</h2>")
    if not doc["fixes"]:
        H.append("<p>Nothing to fix.</p>")
    for f in doc["fixes"]:
        H += [f"<h3>{_c(f['id'])}: {_e(f['title'])}</h3>", f"<p><strong>Fix:</strong> {_e(f['fix'])}</p>"]
        if f["diff"]:
            H.append(f"<p>Patch ({_e(f['what'])}; against {_c(f['target'])} as <code>kubectl get -o yaml</code> "
                     "shows it):</p>")  # fmt: skip
            H.append(_diff(f["diff"]))
        elif f["whyNot"]:
            H.append(f"<p>No patch: {_e(f['whyNot'])}.</p>")
        if f["docs"]:
            H.append("<p>See: " + ", ".join(_c(d) for d in f["docs"]) + "</p>")
    H.append("<h2>What could not be checked</h2>")
    if not (doc["notChecked"] or doc["notCollected"] or doc["unknowns"]):
        H.append("<p>Every rule was evaluated and nothing was left uncollected.</p>")
    if doc["notChecked"]:
        H += _table(["rule", "why"], [[_c(n["rule"]), _e(n["why"])] for n in doc["notChecked"]])
    if doc["notCollected"]:
        H += ["<p>Not collected:</p>", "<ul>"]
        H += [f"<li>{_c(g['what'])}: {_e(g['why'])}</li>" for g in doc["notCollected"]]
        H.append("</ul>")
    if doc["unknowns"]:
        H += ["<p>Not known about the attempts:</p>", "<ul>"]
        H += [f"<li>{_e(u)}</li>" for u in doc["unknowns"]]
        H.append("</ul>")
    H += ["<h2>Reproduce the evidence</h2>", "<p>Read-only; run against the cluster the TrainJob is on:</p>"]
    cmds = "\n".join(f"# {c['what']}\n{c['command']}" for c in doc["reproduce"]) or "# nothing to show"
    H.append(f"<pre><code>{_e(cmds)}</code></pre>")
    H += ["<p>The same report again:</p>", f"<pre><code>{_e(doc['rerun'])}</code></pre>"]
    if doc["notes"]:
        H += ["<h2>Notes</h2>", "<ul>"] + [f"<li>{_e(n)}</li>" for n in doc["notes"]] + ["</ul>"]
    red = doc["redactions"]
    H.append(f"<p class=\"meta\">Redacted: {red} value{'s' if red != 1 else ''} that looked like credentials.</p>")
    H += ["</body>", "</html>", ""]
    return "\n".join(H)
