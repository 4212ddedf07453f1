"""Evaluate the catalogue against Facts and walk the graph from symptoms to causes."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from functools import cache
from typing import TYPE_CHECKING, Any

from ckpt_doctor import __version__
from ckpt_doctor.engine.catalogue import default_digest, default_rules
from ckpt_doctor.engine.checks import load_checks
from ckpt_doctor.engine.model import CONFIDENCE, Finding, Result, Rule, severity_rank, skip
from ckpt_doctor.errors import InternalError
from ckpt_doctor.facts.context import NEEDS_CLUSTER, Facts
from ckpt_doctor.simulation import simulated_meta

if TYPE_CHECKING:
    import networkx as nx

Explainer = Callable[[str], list[str]]  # symptom id -> the causes with a path to it


@dataclass
class Explanation:
    symptom: Finding
    causes: list[Finding]  # failing causes, strongest evidence first
    unexplored: list[str]  # causes that could explain it but were not evaluated


@dataclass
class Diagnosis:
    facts: Facts
    findings: list[Finding]
    verdict: list[Explanation] = field(default_factory=list)
    latent: list[Finding] = field(default_factory=list)  # failing causes with no failing symptom

    def failed(self) -> list[Finding]:
        return [f for f in self.findings if f.status == "fail"]

    def not_evaluated(self) -> list[Finding]:
        return [f for f in self.findings if f.status == "not_evaluated"]

    def summary(self) -> dict[str, Any]:
        fails = self.failed()
        hi = max((f.rule.severity for f in fails), key=severity_rank, default=None)
        return {
            "fail": len(fails),
            "pass": sum(1 for f in self.findings if f.status == "pass"),
            "notEvaluated": len(self.not_evaluated()),
            "highestSeverity": hi,
        }

    def exit_code(self, fail_on: str = "warning", strict: bool = False) -> int:
        threshold = severity_rank(fail_on)
        if any(severity_rank(f.rule.severity) >= threshold for f in self.failed()):
            return 1
        if strict and self.not_evaluated():
            return 4
        return 0

    def to_json(self) -> dict[str, Any]:
        f = self.facts
        told = f.mode != "explain-error" or f.version.source != "assumed"  # an error text may not show it
        return {
            "schemaVersion": 1,
            "tool": {"name": "ckpt-doctor", "version": __version__},
            "mode": f.mode,
            "target": f.scope.target() if f.mode == "diagnose" else None,
            "trainerVersion": f.version.version if told else None,
            "trainerVersionSource": f.version.source if told else None,
            "cluster": self._cluster(),
            "findings": [x.to_json() for x in self.findings],
            "notCollected": [g.to_json() for g in f.scope.snap.not_collected],
            "summary": self.summary(),
            "verdict": [
                {"symptom": e.symptom.rule.id, "causes": [c.rule.id for c in e.causes], "unexplored": e.unexplored}
                for e in self.verdict
            ],
            "latent": [x.rule.id for x in self.latent],
            "notes": list(f.scope.snap.notes),
        }


    def _cluster(self) -> dict[str, Any]:
        """What the snapshot was collected from, in the drill document's shape: the API server's version and
        whether it is `ckpt-doctor sandbox` (a simulation, said by every output format)."""
        meta = self.facts.scope.snap.meta or {}
        cluster = meta.get("cluster") if isinstance(meta.get("cluster"), dict) else {}
        version = cluster.get("serverVersion")
        return {"serverVersion": str(version) if version else None, "simulated": simulated_meta(meta)}


def strength(f: Finding) -> tuple[int, int, int]:
    """How strongly a failed finding makes its case: confidence, then severity, then evidence."""
    return (CONFIDENCE.get(f.result.confidence, 0), severity_rank(f.rule.severity), len(f.result.evidence))


STATUS_ORDER = {"fail": 0, "not_evaluated": 1, "pass": 2}  # failed first, then not evaluated


def _sort_key(f: Finding) -> tuple[Any, ...]:
    return (STATUS_ORDER[f.status], -severity_rank(f.rule.severity), 0 if f.rule.kind == "symptom" else 1, f.rule.id)


def _stored_explainer() -> Explainer | None:
    """The default catalogue's `explaining` table from rules/index.json, when it was made from the
    catalogue as it is (its digest matches): a diagnosis then needs no graph built at run time,
    nor networkx imported (a third of a small diagnosis's CPU). make docs writes the table with
    networkx; tests keep it current."""
    table = _stored_table(default_digest())
    return None if table is None else (lambda symptom: list(table.get(symptom, [])))


@cache
def _stored_table(digest: str) -> dict[str, list[str]] | None:
    """rules/index.json's table, read once per process (a fleet or the watcher diagnoses many TrainJobs)."""
    import json

    from ckpt_doctor.data import rules_dir

    try:
        index = json.loads((rules_dir() / "index.json").read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(index, dict) or index.get("digest") != digest:
        return None
    table = index.get("explaining")
    return table if isinstance(table, dict) else None


def _explainer(rules: list[Rule] | None, checks: dict[str, Any], graph: nx.DiGraph | None) -> Explainer:
    if graph is None and rules is None:
        stored = _stored_explainer()
        if stored is not None:
            return stored
    from ckpt_doctor.engine.graph import build_graph, explaining

    g = graph if graph is not None else build_graph(rules if rules is not None else default_rules(), checks)
    return lambda symptom: explaining(g, symptom)


def evaluate(facts: Facts, rules: list[Rule] | None = None, graph: nx.DiGraph | None = None) -> Diagnosis:
    checks = load_checks()
    explain = _explainer(rules, checks, graph)
    rules = list(rules if rules is not None else default_rules())
    results: dict[str, list[Result]] = {}
    for rule in rules:
        results[rule.id] = _run(rule, facts, checks)
    # specific before generic: a catch-all does not fail when a more specific cause does
    for rule in rules:
        hit = [s for s in rule.specific if any(r.status == "fail" for r in results.get(s, []))]
        if hit:
            results[rule.id] = [
                Result("pass", r.subject, r.evidence, None, f"explained by the more specific cause {hit[0]}")
                if r.status == "fail"
                else r
                for r in results[rule.id]
            ]
    findings = [Finding(rule, r) for rule in rules for r in _one_per_subject(results[rule.id])]
    if facts.mode == "explain-error":
        findings = [f for f in findings if f.status == "fail"]
    findings.sort(key=_sort_key)
    diag = Diagnosis(facts, findings)
    _walk(diag, explain)
    _check_consistency(diag)
    return diag


def _check_consistency(diag: Diagnosis) -> None:
    from ckpt_doctor.engine.consistency import contradictions

    found = contradictions(diag)
    if not found:
        return
    if os.environ.get("CKPT_DOCTOR_DEBUG"):
        raise InternalError("findings contradict each other: " + "; ".join(found))
    notes = diag.facts.scope.snap.notes
    for c in found:
        notes.append(f"internal consistency check: {c}; please report it")


def _run(rule: Rule, facts: Facts, checks: dict[str, Any]) -> list[Result]:
    subject = facts.subject()
    if facts.mode not in rule.modes:
        if facts.mode == "lint":
            return [skip(NEEDS_CLUSTER, subject)]
        return [skip(f"not part of {facts.mode}", subject)]
    if facts.mode != "explain-error":  # explain-error checks read only the error text
        bad = facts.malformed_for(rule)  # first: a malformed field may be why an input looks missing
        if bad:
            more = f" (+{len(bad) - 2} more)" if len(bad) > 2 else ""
            return [skip("malformed input: " + "; ".join(m.reason for m in bad[:2]) + more, subject)]
        for need in rule.needs:
            why = facts.missing(need)
            if why:
                return [skip(why, subject)]
    if rule.versioned and facts.mode != "explain-error" and len(facts.version.candidates) > 1:
        return _across_versions(rule, facts, checks, subject)
    return _call(rule, facts, checks, subject)


def _call(rule: Rule, facts: Facts, checks: dict[str, Any], subject: dict[str, Any] | None) -> list[Result]:
    try:
        out = checks[rule.id](facts, rule)
    except Exception as e:  # a bug: say so loudly rather than let one check hide or pass anything
        if os.environ.get("CKPT_DOCTOR_DEBUG"):
            raise
        raise InternalError(f"the check of rule {rule.id} raised {type(e).__name__}: {e}") from e
    res = out if isinstance(out, list) else [out]
    for r in res:
        if r.subject is None:
            r.subject = subject
        if r.status == "fail" and not r.evidence:
            raise InternalError(f"the check of rule {rule.id} failed without evidence")
    return res or [skip("the check returned nothing", subject)]


def _across_versions(rule: Rule, facts: Facts, checks: dict[str, Any], subject: dict[str, Any] | None) -> list[Result]:
    """A version-dependent rule when the Trainer version is not known: judged for every version still
    possible; it passes or fails only when they all agree."""
    v = facts.version
    per = {c: _call(rule, facts.with_version(replace(v, version=c)), checks, subject) for c in v.candidates}
    worst = {c: min(STATUS_ORDER[r.status] for r in res) for c, res in per.items()}
    if len(set(worst.values())) == 1:
        res = per[v.candidates[0]]  # the oldest: its reason rests on evidence, not on the version
        span = f"{v.candidates[0]}–{v.candidates[-1]}"
        for r in res:
            if r.status == "pass":
                r.reason = f"{r.reason} (the same on every Trainer version still possible, {span})"
        return res
    by_status: dict[str, list[str]] = {}
    for c, w in worst.items():
        by_status.setdefault(next(k for k, o in STATUS_ORDER.items() if o == w), []).append(c)
    told = "; ".join(f"{st.replace('_', ' ')} on {', '.join(cs)}" for st, cs in sorted(by_status.items()))
    return [
        skip(
            f"depends on the Trainer version, which is not known ({v.why}): {told}; "
            "pass --trainer-version (or record cluster.trainerVersion in bundle.yaml)",
            subject,
        )
    ]


def _one_per_subject(res: list[Result]) -> list[Result]:
    """Keep one result per subject, the worst one (fail > not_evaluated > pass)."""
    best: dict[tuple[Any, ...], Result] = {}
    for r in res:
        s = r.subject or {}
        key = (s.get("kind"), s.get("namespace"), s.get("name"), s.get("file"))
        if key not in best or STATUS_ORDER[r.status] < STATUS_ORDER[best[key].status]:
            best[key] = r
    return list(best.values())


def rewalk(diag: Diagnosis) -> None:
    """The verdict and the latent causes again, from the findings as they are now (explain-error adds the
    ones the error text shows after the evaluation), through the default catalogue's graph."""
    diag.verdict, diag.latent = [], []
    _walk(diag, _explainer(None, load_checks(), None))


def _walk(diag: Diagnosis, explaining: Explainer) -> None:
    by_rule: dict[str, list[Finding]] = {}
    for f in diag.findings:
        by_rule.setdefault(f.rule.id, []).append(f)
    explained: set[str] = set()
    for f in diag.findings:
        if f.rule.kind != "symptom" or f.status != "fail":
            continue
        causes, unexplored = [], []
        for cid in explaining(f.rule.id):
            fs = by_rule.get(cid, [])
            failing = [x for x in fs if x.status == "fail"]
            causes += failing
            if not failing and any(x.status == "not_evaluated" for x in fs):
                unexplored.append(cid)
        causes.sort(key=strength, reverse=True)
        explained |= {c.rule.id for c in causes}
        diag.verdict.append(Explanation(f, causes, sorted(unexplored)))
    diag.verdict.sort(key=lambda e: (-severity_rank(e.symptom.rule.severity), e.symptom.rule.id))
    diag.latent = sorted(
        (f for f in diag.findings if f.rule.kind == "cause" and f.status == "fail" and f.rule.id not in explained),
        key=strength,
        reverse=True,
    )
