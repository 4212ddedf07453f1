"""Generate docs/rules.md from the catalogue: `python -m ckpt_doctor.docs > docs/rules.md`."""

from __future__ import annotations

import sys

from ckpt_doctor.engine.catalogue import default_rules
from ckpt_doctor.engine.checks import load_checks
from ckpt_doctor.engine.graph import build_graph, to_mermaid

NO_LISTING = "nothing (this rule reads no listing)."


def render() -> str:
    rules = sorted(default_rules(), key=lambda r: (r.kind != "symptom", r.id))
    g = build_graph(rules, load_checks())
    out = [
        "# Rules",
        "",
        "Generated from `rules/*.yaml` by `make docs`; a test fails when this file is stale.",
        "",
        "Symptoms are what a user sees; causes explain them. `ckpt-doctor rules show ID` prints one rule.",
        "",
        "```mermaid",
        to_mermaid(g).rstrip(),
        "```",
        "",
        "| id | kind | severity | title |",
        "|---|---|---|---|",
    ]
    out += [f"| [`{r.id}`](#{r.id}) | {r.kind} | {r.severity} | {r.title} |" for r in rules]
    out.append("")
    for r in rules:
        out += [
            f"## {r.id}",
            "",
            f"**{r.title}**",
            "",
            f"{r.kind}, severity **{r.severity}**"
            + (f", guide troubleshooting row {r.guide_row}" if r.guide_row else ""),
            "",
            r.explanation,
            "",
            f"**Fix:** {r.fix}",
            "",
        ]
        if r.explains:
            out += ["Explains: " + ", ".join(f"[`{x}`](#{x})" for x in r.explains), ""]
        causes = sorted(g.predecessors(r.id))
        if causes:
            out += ["Explained by: " + ", ".join(f"[`{x}`](#{x})" for x in causes), ""]
        if r.needs:
            out += [f"Needs: {', '.join(r.needs)} (otherwise `not_evaluated`, with the reason)", ""]
        if r.reads:
            fields = ", ".join(f"`{k}.{p}`" if p else f"`{k}`" for k, p in r.reads)
            out += [f"Reads: {fields} (a field of the wrong type there makes it `not_evaluated`)", ""]
        if r.confidence:
            out += [f"How sure: {r.confidence}", ""]
        if r.modes != ("lint",) and r.modes != ("explain-error",):
            out += [f"What a checkpoint listing adds: {r.listing or NO_LISTING}", ""]
        if r.versioned:
            out += ["Depends on the Trainer version: judged for every version still possible when it is not known", ""]
        out += [f"Judged in: {', '.join(r.modes)}", ""]
        if r.params:
            out += ["Parameters: " + ", ".join(f"`{k}` = `{v}`" for k, v in r.params.items()), ""]
        if r.specific:
            out += ["Stays quiet when a more specific cause fails: " + ", ".join(f"`{x}`" for x in r.specific), ""]
        docs = [d for d in r.docs if not d.startswith("docs/rules.md")]
        if docs:
            out += ["Read more: " + "; ".join(docs), ""]
    return "\n".join(out)


if __name__ == "__main__":
    sys.stdout.write(render())
