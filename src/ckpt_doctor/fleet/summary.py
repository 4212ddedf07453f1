"""One TrainJob's diagnosis in one row: what state it is in, how often it started, what it lost, what is worst.

The same figures feed the fleet table and the watcher's metrics. Every figure that cannot be read is
None (unknown), never 0: a restart whose resume step or whose predecessor's last step is unknown makes
the steps lost a lower bound (`Lost.partial`), or unknown when no restart could be measured. Attempts
and steps lost come from the attempts timeline (facts/timeline.py), the same figures `report` shows.
"""

from __future__ import annotations

import itertools
import statistics
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from ckpt_doctor.engine.model import Finding, severity_rank
from ckpt_doctor.engine.walk import Diagnosis
from ckpt_doctor.facts.attempts import History
from ckpt_doctor.facts.context import Facts
from ckpt_doctor.facts.timeline import epoch, timeline_of
from ckpt_doctor.scope import Scope, claim_names, runtime_ref

# crashlooping: a trainer container waits in CrashLoopBackOff (its pod is Running, its trainer is not)
STATES = ("running", "crashlooping", "pending", "suspended", "complete", "failed", "idle", "unknown")
# how the latest attempt began (a StateSet): resumed from its newest checkpoint; from an older one; from
# step 0 although an earlier attempt had trained; no resume to judge (the first start, or a restart with
# nothing trained before it); unknown (its start could not be read or judged)
RESUME_STATES = ("resumed", "older_checkpoint", "fresh_start", "none", "unknown")
FRESH_RULE = "fresh-start-after-restart"
OLDER_RULE = "resumed-older-checkpoint"


@dataclass
class Lost:
    """Training steps lost to restarts: the sum over restarts of (the earlier attempt's last step − where
    the next one began). `partial`: some restart could not be measured, so `steps` is a lower bound."""

    steps: int | None
    partial: bool = False

    def text(self) -> str:
        if self.steps is None:
            return "?"
        return f"≥{self.steps}" if self.partial else str(self.steps)

    def to_json(self) -> dict[str, Any]:
        return {"steps": self.steps, "partial": self.partial}


@dataclass
class JobSummary:
    namespace: str
    name: str
    uid: str
    runtime: str  # Kind/name of the runtime it references, "" when none
    state: str
    attempts: int  # starts seen or proven, the first one included
    lost: Lost
    resume_status: str
    last_checkpoint_step: int | None
    last_checkpoint_time: float | None  # seconds since the epoch, when the log gives the save's time
    save_interval_seconds: float | None  # median time between the latest attempt's timed saves
    worst: Finding | None  # the failing symptom (or latent cause) that ranks highest
    cause: Finding | None  # the cause that explains it, when it is a symptom and one was found
    unexplored: list[str] = field(default_factory=list)
    failed: Counter[tuple[str, str]] = field(default_factory=Counter)  # (rule, severity) -> subjects failing
    counts: dict[str, Any] = field(default_factory=dict)  # the diagnosis summary (fail, pass, notEvaluated…)
    claims: frozenset[str] = frozenset()  # PVCs its pods mount (the watcher routes PVC events with them)
    # the attempts timeline in figures: (attempt number or None, last step seen) per attempt, and per
    # interruption (attempt before, attempt after, where the one after began, steps lost): the watcher
    # remembers last steps across diagnoses, because a JobSet restart deletes the logs that show them
    attempt_steps: list[tuple[int | None, int | None]] = field(default_factory=list)
    interruptions: list[tuple[int | None, int | None, int | None, int | None]] = field(default_factory=list)

    @property
    def severity(self) -> str | None:
        return self.worst.rule.severity if self.worst is not None else None

    @property
    def verdict_key(self) -> tuple[Any, ...]:
        """What a change of verdict means for the watcher's Events: the failing rules and the resume status."""
        return (self.resume_status, tuple(sorted(self.failed)))

    def to_json(self) -> dict[str, Any]:
        worst = None
        if self.worst is not None:
            worst = {"rule": self.worst.rule.id, "kind": self.worst.rule.kind, "severity": self.worst.rule.severity}
        return {
            "namespace": self.namespace,
            "name": self.name,
            "state": self.state,
            "attempts": self.attempts,
            "stepsLost": self.lost.to_json(),
            "resumeStatus": self.resume_status,
            "lastCheckpointStep": self.last_checkpoint_step,
            "worst": worst,
            "cause": self.cause.rule.id if self.cause is not None else None,
            "unexplored": list(self.unexplored),
            "summary": dict(self.counts),
        }


def summarize(diag: Diagnosis) -> JobSummary:
    facts = diag.facts
    sc = facts.scope
    h = facts.history
    tj = sc.trainjob
    assert tj is not None, "a fleet row is about a TrainJob"
    rname, rkind, _ = runtime_ref(tj)
    worst, cause, unexplored = _worst(diag)
    tl = timeline_of(facts)
    last_step, last_time, interval = _checkpoints(h)
    return JobSummary(
        namespace=tj.namespace or "default",
        name=tj.name,
        uid=tj.uid or "",
        runtime=f"{rkind}/{rname}" if rname else "",
        state=_state(sc, h),
        attempts=max(attempt_count(sc, h), tl.count),
        lost=lost_steps(facts),
        resume_status=resume_status(diag, h),
        last_checkpoint_step=last_step,
        last_checkpoint_time=last_time,
        save_interval_seconds=interval,
        worst=worst,
        cause=cause,
        unexplored=unexplored,
        failed=Counter((f.rule.id, f.rule.severity) for f in diag.failed()),
        counts=diag.summary(),
        claims=frozenset(sc.pvcs) | frozenset(claim_names(sc)),
        attempt_steps=[(a.index, a.last_step) for a in tl.attempts],
        interruptions=[
            (tl.attempts[i.before].index, tl.attempts[i.after].index, i.to_step, i.steps_lost)
            for i in tl.interruptions
        ],
    )


def job_state(sc: Scope) -> str:
    """running | pending | suspended | complete | failed | idle (no pod running or pending, no end yet) |
    unknown (no end yet, and the pods were not collected)."""
    tj = sc.trainjob
    assert tj is not None
    for ctype in ("Complete", "Failed"):
        c = tj.condition(ctype)
        if c is not None and c.get("status") == "True":
            return ctype.lower()
    susp = tj.condition("Suspended")
    if (susp is not None and susp.get("status") == "True") or tj.spec.get("suspend") is True:
        return "suspended"
    phases = {str(p.status.get("phase") or "") for p in sc.trainer_pods()}
    if "Running" in phases:
        return "running"
    if "Pending" in phases:
        return "pending"
    return "unknown" if sc.snap.coverage.kind("Pod").unknown else "idle"


def _state(sc: Scope, h: History) -> str:
    """job_state, with a crash loop said as such (the attempts timeline's words)."""
    state = job_state(sc)
    return "crashlooping" if h.crash_loop and state in ("running", "pending") else state


def attempt_count(sc: Scope, h: History) -> int:
    """How many times the trainer started, counting attempts whose pods are gone."""
    n = max((a.index + 1 for a in h.attempts), default=0)
    if sc.jobset is not None:
        n = max(n, h.jobset_restarts + 1)
    return n


def lost_steps(facts: Facts) -> Lost:
    """Steps redone over the TrainJob's interruptions, from the attempts timeline (facts/timeline.py): for
    each attempt that began at step N (0 when fresh), its predecessor's last step − N."""
    tl = timeline_of(facts)
    if tl.steps_lost is None:
        return Lost(None, True)
    return Lost(tl.steps_lost, not tl.lost_complete)


def resume_status(diag: Diagnosis, h: History) -> str:
    status = {}
    for f in diag.findings:
        if f.rule.id in (FRESH_RULE, OLDER_RULE):
            prev = status.get(f.rule.id)
            order = {"fail": 0, "not_evaluated": 1, "pass": 2}
            if prev is None or order[f.status] < order[prev]:
                status[f.rule.id] = f.status
    if status.get(FRESH_RULE) == "fail":
        return "fresh_start"
    if status.get(OLDER_RULE) == "fail":
        return "older_checkpoint"
    later = h.later_attempts()
    if not later:
        return "none" if not h.unseen else "unknown"
    kind, _step, _run, _ev = h.attempt_start(max(later, key=lambda a: a.index))
    if kind == "resumed":
        return "resumed"
    if kind == "fresh" and status.get(FRESH_RULE) == "pass":
        return "none"  # a restart with nothing trained before it: nothing to resume from
    return "unknown"


def _checkpoints(h: History) -> tuple[int | None, float | None, float | None]:
    """The newest saved step, the time of the latest timed save, and the median time between the saves
    of the run that made it."""
    step = max((s for r in h.runs if (s := r.max_saved()) is not None), default=None)
    best: tuple[float, Any] | None = None
    for r in h.runs:
        for e in r.saves():
            t = epoch(e.time)
            if t is not None and (best is None or t > best[0]):
                best = (t, r)
    if best is None:
        return step, None, None
    times = sorted(t for e in best[1].saves() if (t := epoch(e.time)) is not None)
    gaps = [b - a for a, b in itertools.pairwise(times) if b > a]
    return step, best[0], (statistics.median(gaps) if gaps else None)


def _worst(diag: Diagnosis) -> tuple[Finding | None, Finding | None, list[str]]:
    sym = diag.verdict[0] if diag.verdict else None
    latent = diag.latent[0] if diag.latent else None
    if sym is not None and (latent is None or severity_rank(sym.symptom.rule.severity) >= severity_rank(
            latent.rule.severity)):  # fmt: skip
        return sym.symptom, (sym.causes[0] if sym.causes else None), list(sym.unexplored)
    if latent is not None:
        return latent, None, []
    failed = diag.failed()
    if failed:
        top = max(failed, key=lambda f: severity_rank(f.rule.severity))
        return top, None, []
    return None, None, []
