"""Text for a tired human: the verdict first, then the proof, then what was not checked."""

from __future__ import annotations

from collections import Counter

from rich.text import Text

from ckpt_doctor.engine.model import Finding
from ckpt_doctor.engine.walk import Diagnosis
from ckpt_doctor.facts.context import NEEDS_CLUSTER
from ckpt_doctor.report.evidence import describe
from ckpt_doctor.simulation import WORDS, simulated_meta

SEV_STYLE = {"critical": "bold red", "error": "red", "warning": "yellow", "info": "cyan"}
MAX_EVIDENCE = 4


def build(diag: Diagnosis, verbose: bool = False) -> Text:
    out = Text()
    f = diag.facts
    tgt = f.scope.target()
    head = f"TrainJob {tgt['namespace']}/{tgt['name']}" if tgt else (f.scope.snap.location or "manifests")
    out.append("ckpt-doctor ", "bold")
    out.append(f"{f.mode} · {head} · Trainer {f.version.version}")
    out.append(f" ({f.version.why})", "dim")
    if simulated_meta(f.scope.snap.meta):
        out.append(f" · {WORDS}", "bold yellow")
    out.append("\n")
    if diag.verdict:
        for e in diag.verdict:
            out.append("\nSYMPTOM  ", "bold")
            _finding_line(out, e.symptom, "")
            if e.symptom.result.detail:
                out.append(f"         {e.symptom.result.detail}\n")
            _evidence(out, e.symptom, "         ")
            if e.causes:
                out.append("  because\n", "bold")
                for i, c in enumerate(e.causes, 1):
                    _cause(out, c, f"  {i}. ")
            else:
                out.append("  cause not found among the rules that could be evaluated\n", "yellow")
            if e.unexplored:
                out.append(f"  not evaluated, could also explain it: {', '.join(e.unexplored)}\n", "dim")
    elif not diag.failed():
        out.append("\nNo failing symptom or cause.", "bold green")
        if diag.not_evaluated():
            out.append(" Some rules could not be evaluated: see below; this is not an all-clear for them.\n")
        else:
            out.append(" Every rule was evaluated against what the snapshot holds.\n")
    if diag.latent:
        out.append("\nLATENT RISKS", "bold")
        out.append(" (causes that fail without a visible symptom yet)\n")
        per_rule = Counter(c.rule.id for c in diag.latent)
        for c in diag.latent:
            _cause(out, c, "  - ", _subject(c) if per_rule[c.rule.id] > 1 else "")
    ne = diag.not_evaluated()
    if ne:
        out.append(f"\nNOT EVALUATED ({len(ne)})\n", "bold yellow")
        groups: dict[tuple[str, str], list[Finding]] = {}  # one line per rule and reason, however many objects
        cluster: set[str] = set()  # lint: what only a cluster can show, one line with a count
        for n in ne:
            if not verbose and n.result.reason == NEEDS_CLUSTER:
                cluster.add(n.rule.id)
                continue
            groups.setdefault((n.rule.id, str(n.result.reason)), []).append(n)
        if cluster:
            out.append(f"  {len(cluster)} rules need cluster evidence (pods, events, logs); -v lists them\n", "yellow")
        lines = list(groups.items())
        for (rid, reason), fs in lines if verbose else lines[:12]:
            where = f"{len(fs)} objects" if len(fs) > 1 else _subject(fs[0])
            where = f" ({where})" if where else ""
            out.append(f"  {rid}{where}: {reason}\n", "yellow")
        if not verbose and len(lines) > 12:
            out.append(f"  … {len(lines) - 12} more (-v lists all)\n", "yellow")
    gaps = f.scope.snap.not_collected
    if gaps:
        out.append("\nNOTES\n" if f.mode == "lint" else "\nNOT COLLECTED\n", "bold yellow")
        for g in gaps:
            out.append(f"  {g.what}: {g.reason}\n", "yellow")
    if f.mode != "lint" and f.scope.snap.notes:
        out.append("\nNOTES\n", "bold yellow")
        for n in f.scope.snap.notes:
            out.append(f"  {n}\n", "yellow")
    passed = [x for x in diag.findings if x.status == "pass"]
    if verbose and passed:
        out.append(f"\nPASSED ({len(passed)})\n", "bold green")
        for p in passed:
            out.append(f"  {p.rule.id}" + (f": {p.result.reason}" if p.result.reason else "") + "\n", "green")
    s = diag.summary()
    out.append(f"\n{s['fail']} failed, {s['pass']} passed, {s['notEvaluated']} not evaluated", "bold")
    if s["highestSeverity"]:
        out.append(f" · highest severity {s['highestSeverity']}", SEV_STYLE[s["highestSeverity"]])
    out.append("\n")
    return out


def _finding_line(out: Text, f: Finding, indent: str) -> None:
    out.append(indent)
    out.append("✗ " if f.status == "fail" else "• ", SEV_STYLE.get(f.rule.severity, ""))
    out.append(f.rule.title, "bold")
    out.append(f"  [{f.rule.severity}] {f.rule.id}\n", SEV_STYLE.get(f.rule.severity, ""))


def _cause(out: Text, c: Finding, bullet: str, where: str = "") -> None:
    pad = " " * len(bullet)
    out.append(bullet)
    out.append(c.rule.title, "bold")
    conf = f", {c.result.confidence} confidence" if c.result.confidence != "high" else ""
    where = f" · {where}" if where else ""
    out.append(f"  [{c.rule.severity}{conf}] {c.rule.id}{where}\n", SEV_STYLE.get(c.rule.severity, ""))
    if c.result.detail:
        out.append(f"{pad}{c.result.detail}\n")
    _evidence(out, c, pad)
    out.append(f"{pad}fix: ", "bold green")
    out.append(f"{c.result.fix or c.rule.fix}\n")


def _subject(f: Finding) -> str:
    """What a finding is about, short: `Kind/name`, and the file and line when it has them (lint)."""
    sub = f.result.subject or {}
    name = f"{sub['kind']}/{sub['name']}" if sub.get("kind") and sub.get("name") else ""
    at = f"{sub['file']}:{sub['line']}" if sub.get("file") and sub.get("line") else str(sub.get("file") or "")
    return " at ".join(x for x in (name, at) if x)


def _evidence(out: Text, f: Finding, pad: str) -> None:
    for ev in f.result.evidence[:MAX_EVIDENCE]:
        out.append(f"{pad}‣ {describe(ev)}\n", "dim")
    extra = len(f.result.evidence) - MAX_EVIDENCE
    if extra > 0:
        out.append(f"{pad}‣ … {extra} more (-o json shows all)\n", "dim")


def render(diag: Diagnosis, verbose: bool = False) -> str:
    return build(diag, verbose).plain
