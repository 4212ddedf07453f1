"""Rules, check results and findings: the engine's vocabulary."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ckpt_doctor.severity import SEVERITIES, severity_rank

__all__ = ["SEVERITIES", "severity_rank"]  # re-exported: the engine's vocabulary includes them
STATUSES = ("fail", "pass", "not_evaluated")
CONFIDENCE = {"high": 3, "medium": 2, "low": 1}
NEEDS = ("trainjob", "runtime", "jobset", "pods", "events", "logs", "pvcs", "error-text", "checkpointing")
MODES = ("diagnose", "lint", "explain-error")


@dataclass(frozen=True)
class Rule:
    id: str
    kind: str  # symptom | cause
    severity: str
    title: str
    explanation: str
    fix: str
    docs: tuple[str, ...] = ()
    explains: tuple[str, ...] = ()
    needs: tuple[str, ...] = ()
    modes: tuple[str, ...] = ("diagnose", "lint")
    params: dict[str, Any] = field(default_factory=dict)
    specific: tuple[str, ...] = ()  # more specific causes that take precedence over this one
    guide_row: str | None = None  # the guide troubleshooting row this rule covers
    source: str = ""
    reads: tuple[tuple[str, str], ...] = ()  # (kind, field path prefix) the check reads: malformed => not_evaluated
    versioned: bool = False  # its answer depends on the Trainer version: judged for every version still possible
    confidence: str = ""  # how sure a failure of this rule can be, and when it is not evaluated (docs)
    listing: str = ""  # what a checkpoint listing (contracts.md §2 checkpoints/) adds to it (docs)

    def to_json(self) -> dict[str, Any]:
        """The rule as `rules show -o json` prints it (and rules/index.json and the MCP server hold it)."""
        return {
            "id": self.id,
            "kind": self.kind,
            "severity": self.severity,
            "title": self.title,
            "explanation": self.explanation,
            "fix": self.fix,
            "docs": list(self.docs),
            "explains": list(self.explains),
            "needs": list(self.needs),
            "modes": list(self.modes),
            "params": self.params,
            "specific": list(self.specific),
        }


@dataclass
class Result:
    """What a check says about one subject."""

    status: str
    subject: dict[str, Any] | None = None
    evidence: list[dict[str, Any]] = field(default_factory=list)
    detail: str | None = None  # the specific sentence for this subject
    reason: str | None = None  # why not evaluated (or why a pass is a pass)
    confidence: str = "high"
    fix: str | None = None  # a subject-specific fix, overriding the rule's


def fail(
    subject: dict[str, Any] | None,
    evidence: list[dict[str, Any]],
    detail: str,
    confidence: str = "high",
    fix: str | None = None,
) -> Result:
    return Result("fail", subject, evidence, detail, None, confidence, fix)


def ok(
    subject: dict[str, Any] | None = None, reason: str | None = None, evidence: list[dict[str, Any]] | None = None
) -> Result:
    return Result("pass", subject, evidence or [], None, reason)


def skip(reason: str, subject: dict[str, Any] | None = None) -> Result:
    return Result("not_evaluated", subject, [], None, reason)


@dataclass
class Finding:
    rule: Rule
    result: Result

    @property
    def status(self) -> str:
        return self.result.status

    def to_json(self) -> dict[str, Any]:
        r, res = self.rule, self.result
        out: dict[str, Any] = {
            "rule": r.id,
            "kind": r.kind,
            "status": res.status,
            "severity": r.severity,
            "title": r.title,
        }
        if res.subject:
            out["subject"] = {k: v for k, v in res.subject.items() if v is not None or k == "namespace"}
        out["evidence"] = res.evidence
        out["explains"] = list(r.explains)
        out["fix"] = res.fix or r.fix
        out["docs"] = list(r.docs)
        if res.detail:
            out["detail"] = res.detail
        if res.status == "fail":
            out["confidence"] = res.confidence
        if res.reason:
            out["reason"] = res.reason
        return out
