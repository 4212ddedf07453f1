"""What a drill observed: one record per step, and the drill's verdict (contracts.md §5).

The JSON form (`DrillResult.to_json`) is what `-o json` prints; docs/drill.schema.json is its schema.
Every way out (JSON, JUnit, Markdown, the screen) renders this record after redaction.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from ckpt_doctor import __version__

# step statuses: passed | failed | skipped (not chosen, declined, nothing to do) | stopped (interrupted
# while it ran) | error (the cluster or an input failed) | not_run (an earlier step ended the drill) |
# planned (--dry-run)
STATUSES = ("passed", "failed", "skipped", "stopped", "error", "not_run", "planned")
# drill verdicts: passed | failed | stopped | error | planned
VERDICTS = ("passed", "failed", "stopped", "error", "planned")


def now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass
class Command:
    """One change (or read through exec) as the kubectl command that does the same, and what came of it."""

    kubectl: str
    does: str  # what it does, in a few words
    outcome: str = "planned"  # planned | done | skipped | declined | failed: …

    def to_json(self) -> dict[str, Any]:
        return {"kubectl": self.kubectl, "does": self.does, "outcome": self.outcome}


@dataclass
class StepResult:
    id: str
    title: str
    why: str = ""
    expect: str = ""
    status: str = "not_run"
    started_at: str | None = None
    finished_at: str | None = None
    seconds: float | None = None
    observed: str = ""
    evidence: list[dict[str, Any]] = field(default_factory=list)
    commands: list[Command] = field(default_factory=list)
    diagnosis: dict[str, Any] | None = None  # on a failed verification: the engine's verdict
    notes: list[str] = field(default_factory=list)
    required: bool = True  # the playbook's: the drill passes only when every required step passed

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "id": self.id,
            "title": self.title,
            "status": self.status,
            "required": self.required,
            "startedAt": self.started_at,
            "finishedAt": self.finished_at,
            "seconds": None if self.seconds is None else round(self.seconds, 3),
            "observed": self.observed,
            "evidence": list(self.evidence),
            "commands": [c.to_json() for c in self.commands],
            "expect": self.expect,
            "why": self.why,
        }
        if self.diagnosis is not None:
            out["diagnosis"] = self.diagnosis
        if self.notes:
            out["notes"] = list(self.notes)
        return out


@dataclass
class DrillResult:
    drill_id: str
    playbook: str
    target: dict[str, Any] | None
    mode: str  # attach | submit | cleanup
    dry_run: bool = False
    trainer_version: str | None = None
    verdict: str = "planned"
    verdict_step: str | None = None  # the step that decided a failed or error verdict (drill/verdict.py)
    verdict_reason: str = ""
    started_at: str | None = None
    finished_at: str | None = None
    steps: list[StepResult] = field(default_factory=list)
    leftovers: list[str] = field(default_factory=list)  # what cleanup could not undo
    notes: list[str] = field(default_factory=list)
    options: dict[str, Any] = field(default_factory=dict)
    cluster: dict[str, Any] | None = None  # {server, serverVersion, simulated}: what the drill talked to

    @property
    def simulated(self) -> bool:
        return bool((self.cluster or {}).get("simulated"))

    def step(self, sid: str) -> StepResult:
        return next(s for s in self.steps if s.id == sid)

    def summary(self) -> dict[str, int]:
        out = {s: 0 for s in STATUSES}
        for st in self.steps:
            out[st.status] += 1
        return {k: v for k, v in out.items() if v}

    def to_json(self) -> dict[str, Any]:
        return {
            "schemaVersion": 1,
            "tool": {"name": "ckpt-doctor", "version": __version__},
            "mode": "drill",
            "drillId": self.drill_id,
            "playbook": self.playbook,
            "target": self.target,
            "cluster": self.cluster,
            "how": self.mode,
            "dryRun": self.dry_run,
            "trainerVersion": self.trainer_version,
            "verdict": self.verdict,
            "failedStep": self.verdict_step if self.verdict in ("failed", "error") else None,
            "verdictReason": self.verdict_reason,
            "startedAt": self.started_at,
            "finishedAt": self.finished_at,
            "options": dict(self.options),
            "steps": [s.to_json() for s in self.steps],
            "summary": self.summary(),
            "leftovers": list(self.leftovers),
            "notes": list(self.notes),
        }
