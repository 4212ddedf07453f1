"""The verdict of one diagnosis in a few plain sentences, for faces that answer in prose (the MCP server's
diagnose tool, the k8sgpt analyzer's `details`): what failed, which cause explains it, the fix, and what
could not be judged. Built from the (already redacted) Diagnosis; no markup.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ckpt_doctor.engine.model import Finding
    from ckpt_doctor.engine.walk import Diagnosis

MAX_SYMPTOMS = 3  # more failing symptoms are counted, not spelled out
MAX_UNKNOWN = 5  # not-evaluated rules named, with their reason


def _fix(f: Finding) -> str:
    return (f.result.fix or f.rule.fix).rstrip(".")


def _named(f: Finding) -> str:
    return f"{f.rule.title} [{f.rule.id}, {f.rule.severity}]"


def _detail(f: Finding) -> str:
    d = (f.result.detail or "").strip().rstrip(".")
    return f": {d}" if d else ""


def verdict_text(diag: Diagnosis) -> str:
    """A short verdict: each failing symptom with the cause that explains it and its fix, the failing causes no
    symptom shows yet, and how much could not be evaluated (which is never a pass)."""
    lines: list[str] = []
    for e in diag.verdict[:MAX_SYMPTOMS]:
        lines.append(f"Symptom: {_named(e.symptom)}{_detail(e.symptom)}.")
        if e.causes:
            c = e.causes[0]
            lines.append(f"  Cause: {_named(c)}{_detail(c)}.")
            lines.append(f"  Fix: {_fix(c)}.")
            for other in e.causes[1:]:
                lines.append(f"  Also failing, and could explain it: {other.rule.id}.")
        else:
            lines.append(f"  No cause in the catalogue was found failing. Fix: {_fix(e.symptom)}.")
        if e.unexplored:
            lines.append(f"  Causes that could explain it but were not evaluated: {', '.join(e.unexplored)}.")
    if len(diag.verdict) > MAX_SYMPTOMS:
        lines.append(f"{len(diag.verdict) - MAX_SYMPTOMS} more failing symptom(s): see the findings.")
    shown = {e.symptom.rule.id for e in diag.verdict} | {c.rule.id for e in diag.verdict for c in e.causes}
    latent = [f for f in diag.latent if f.rule.id not in shown]
    for f in latent:
        lines.append(f"Latent cause (no symptom yet, it breaks the next resume): {_named(f)}{_detail(f)}.")
        lines.append(f"  Fix: {_fix(f)}.")
    others = [f for f in diag.failed() if f.rule.id not in shown and f not in latent]
    if others:
        lines.append("Also failing: " + ", ".join(sorted({f.rule.id for f in others})) + ".")
    s = diag.summary()
    if not diag.failed():
        lines.append(f"Nothing failed: {s['pass']} rule(s) passed on evidence.")
    unknown = diag.not_evaluated()
    if unknown:
        lines.append(f"{len(unknown)} rule(s) could not be evaluated (missing or forbidden data; this is not a pass):")
        for f in unknown[:MAX_UNKNOWN]:
            lines.append(f"  {f.rule.id}: {f.result.reason or 'no reason given'}")
        if len(unknown) > MAX_UNKNOWN:
            lines.append(f"  … and {len(unknown) - MAX_UNKNOWN} more (see the findings).")
    return "\n".join(lines) + "\n"
