"""Markdown, for incident channels and post-incident reviews."""

from __future__ import annotations

from ckpt_doctor.engine.model import Finding
from ckpt_doctor.engine.walk import Diagnosis
from ckpt_doctor.report.evidence import describe
from ckpt_doctor.report.mdtext import cell, code, text
from ckpt_doctor.simulation import WORDS, simulated_meta


def _finding(f: Finding, level: str = "###") -> list[str]:
    lines = [
        f"{level} {text(f.rule.title)}",
        "",
        f"`{f.rule.id}` · {f.rule.kind} · **{f.rule.severity}**"
        + (f" · {f.result.confidence} confidence" if f.status == "fail" else ""),
        "",
    ]
    if f.result.detail:
        lines += [text(f.result.detail), ""]
    lines += [text(f.rule.explanation), ""]
    if f.result.evidence:
        lines.append("Evidence:")
        lines += [f"- {code(describe(ev))}" for ev in f.result.evidence]
        lines.append("")
    lines += [f"**Fix:** {text(f.result.fix or f.rule.fix)}", ""]
    return lines


def render(diag: Diagnosis) -> str:
    f = diag.facts
    tgt = f.scope.target()
    title = f"TrainJob `{tgt['namespace']}/{tgt['name']}`" if tgt else "manifests"
    if f.mode == "explain-error":
        title = "the error text"
    s = diag.summary()
    if f.mode == "explain-error" and f.version.source == "assumed":
        version = "The error text does not show the Trainer version. "
    elif len(f.version.candidates) > 1 and f.version.source != "assumed":
        version = f"Trainer {' or '.join(f.version.candidates)} ({f.version.why}). "
    else:
        version = f"Trainer {f.version.version} ({f.version.why}). "
    sim = [f"**{WORDS}**: collected from `ckpt-doctor sandbox`, not from a real cluster.", ""]
    lines = [
        f"# ckpt-doctor: {title}",
        "",
        *(sim if simulated_meta(f.scope.snap.meta) else []),
        f"{version}{s['fail']} failed, {s['pass']} passed, {s['notEvaluated']} not evaluated.",
        "",
    ]
    if diag.verdict:
        lines += ["## Verdict", ""]
        for e in diag.verdict:
            causes = ", ".join(f"`{c.rule.id}`" for c in e.causes) or "no cause found among evaluated rules"
            lines.append(f"- **{e.symptom.rule.title}** (`{e.symptom.rule.id}`) ← {causes}")
        lines.append("")
        for e in diag.verdict:
            lines += _finding(e.symptom, "## Symptom:")
            for c in e.causes:
                lines += _finding(c, "###")
    if diag.latent:
        lines += ["## Latent risks", ""]
        for c in diag.latent:
            lines += _finding(c, "###")
    if not diag.failed():
        lines += ["No failing symptom or cause.", ""]
    ne = diag.not_evaluated()
    if ne:
        lines += ["## Not evaluated", "", "| rule | why |", "|---|---|"]
        lines += [f"| `{n.rule.id}` | {cell(n.result.reason or '')} |" for n in ne]
        lines.append("")
    if f.scope.snap.not_collected:
        lines += ["## Notes" if f.mode == "lint" else "## Not collected", ""]
        lines += [f"- {text(g.what)}: {text(g.reason)}" for g in f.scope.snap.not_collected]
        lines.append("")
    return "\n".join(lines)
