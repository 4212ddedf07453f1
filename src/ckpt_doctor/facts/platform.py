"""What the platform itself reports about a TrainJob's attempts (issue 21 §4), read as seen / absent / unknown.

Each signal is one typed `Signal`: its state, the object and field it comes from, its value, and the known
upstream defects that change what it seems to say (`caveats`). Field names are the ones in the Trainer,
JobSet and Kueue APIs (../shared/knowledge/platform-signals-and-layouts.md, trainer-api.md):

- TrainJob `status.trainerStatus{progressPercentage, estimatedRemainingSeconds, metrics[], lastUpdatedTime}`
  (Trainer v2.2+, feature gate `TrainJobStatus`, off by default: absent says nothing about the run), and Red
  Hat's annotation `trainer.opendatahub.io/trainerStatus` (JSON; may carry `checkpoint{last_step, last_path}`);
- JobSet `status.restarts`, the `RestartingJobSet` condition (v0.12+), `status.executionAttempts` (KEP-1282,
  counts suspend/resume too) and the pod annotations/labels `jobset.sigs.k8s.io/in-place-restart-attempt`
  (v0.11+), `jobset.sigs.k8s.io/job-restart-attempt` (v0.12+), `jobset.sigs.k8s.io/execution-attempt`;
- Kueue Workload conditions `Evicted` (reasons `Preempted`, `PodsReadyTimeout`, `NodeFailures`, …),
  `Preempted`, `Requeued`, `PodsReady` (`WaitForRecovery`).

A progress that drops after a restart is direct evidence that the attempt began below what came before:
`progress_below` compares the TrainJob's progress (as a step, when the total is known) with the earliest
checkpoint an earlier attempt completed; below all of them the attempt resumed from none of them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from ckpt_doctor.snapshot import Obj

RHOAI_ANNOTATION = "trainer.opendatahub.io/trainerStatus"
POD_ANNOTATIONS = (
    "jobset.sigs.k8s.io/in-place-restart-attempt",
    "jobset.sigs.k8s.io/job-restart-attempt",
    "jobset.sigs.k8s.io/execution-attempt",
)
KUEUE_CONDITIONS = ("Evicted", "Preempted", "Requeued", "PodsReady")
# kubeflow/trainer#3666 (PR #3963 open): the `State` printer column is the last condition's type
CAVEAT_3666 = (
    "kubeflow/trainer#3666: after a resume `kubectl get trainjob` may still show Suspended (its State column "
    "is the last condition's type); the Suspended condition's status and reason say what happened"
)
# kubeflow/trainer#3779 (fixed on main by #3891): a failed JobSet deleted by its TTL was recreated
CAVEAT_3779 = (
    "kubeflow/trainer#3779: a failed JobSet deleted by its TTL was recreated by the Trainer with its restart "
    "count back at 0; status.restarts then counts only the restarts since it was recreated"
)


@dataclass
class Signal:
    """One platform signal. state: seen | absent (its object was read and does not carry it) | unknown."""

    name: str
    state: str
    where: str = ""  # `TrainJob/ns/name status.trainerStatus`
    value: Any = None
    why: str = ""  # for unknown: what was not read; for absent: what absence means here
    caveats: list[str] = field(default_factory=list)

    def evidence(self) -> dict[str, Any]:
        obj, _, path = self.where.partition(" ")
        return {"type": "field", "object": obj, "path": path, "value": self.value}

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "state": self.state}
        for k in ("where", "value", "why"):
            v = getattr(self, k)
            if v not in ("", None):
                out[k] = v
        if self.caveats:
            out["caveats"] = list(self.caveats)
        return out


@dataclass
class TrainerStatus:
    """The TrainJob's progress as its trainer reported it."""

    percent: float | None
    remaining_seconds: float | None
    metrics: dict[str, str]
    updated: str
    source: str  # status.trainerStatus | annotation
    checkpoint_step: int | None = None  # the RHOAI annotation's checkpoint.last_step
    checkpoint_path: str | None = None

    def step(self, total: int | None) -> int | None:
        """The step it stands for: a step metric when one is reported, else the percentage of `total`."""
        for k in ("global_step", "step", "current_step", "train/global_step"):
            v = _int(self.metrics.get(k))
            if v is not None:
                return v
        if self.percent is None or not total:
            return None
        return int(self.percent * total / 100.0)


@dataclass
class Platform:
    signals: list[Signal] = field(default_factory=list)
    trainer_status: TrainerStatus | None = None
    caveats: list[str] = field(default_factory=list)

    def get(self, name: str) -> Signal | None:
        return next((s for s in self.signals if s.name == name), None)

    def seen(self) -> list[Signal]:
        return [s for s in self.signals if s.state == "seen"]

    def to_json(self) -> dict[str, Any]:
        return {"signals": [s.to_json() for s in self.signals], "caveats": list(self.caveats)}


def _int(v: Any) -> int | None:
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return int(f) if f == f and abs(f) < 1e15 else None


def _float(v: Any) -> float | None:
    if isinstance(v, bool):
        return None
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return f if f == f else None


def read_trainer_status(tj: Obj) -> tuple[TrainerStatus | None, list[Signal]]:
    """The two progress reports a TrainJob may carry: the upstream status field and RHOAI's annotation."""
    ref = tj.ref()
    out: list[Signal] = []
    got: TrainerStatus | None = None
    ts = tj.status.get("trainerStatus")
    if isinstance(ts, dict) and ts:
        metrics = {
            str(m.get("name")): str(m.get("value"))
            for m in (ts.get("metrics") or [])
            if isinstance(m, dict) and m.get("name") is not None
        }
        got = TrainerStatus(
            _float(ts.get("progressPercentage")),
            _float(ts.get("estimatedRemainingSeconds")),
            metrics,
            str(ts.get("lastUpdatedTime") or ""),
            "status.trainerStatus",
        )
        out.append(Signal("trainerStatus", "seen", f"{ref} status.trainerStatus", _compact(ts)))
    elif ts is not None and not isinstance(ts, dict):
        out.append(Signal("trainerStatus", "unknown", f"{ref} status.trainerStatus", why="malformed: not a mapping"))
    else:
        out.append(Signal("trainerStatus", "absent", f"{ref} status.trainerStatus",
                          why="not reported (Trainer v2.2+ with the TrainJobStatus gate, and a trainer that "
                              "reports: HF's KubeflowCallback or the SDK)"))  # fmt: skip
    raw = tj.annotations.get(RHOAI_ANNOTATION)
    if raw is None:
        out.append(Signal("rhoaiTrainerStatus", "absent", f"{ref} metadata.annotations[{RHOAI_ANNOTATION}]"))
        return got, out
    try:
        doc = json.loads(raw)
    except ValueError:
        doc = None
    if not isinstance(doc, dict):
        out.append(Signal("rhoaiTrainerStatus", "unknown", f"{ref} metadata.annotations[{RHOAI_ANNOTATION}]",
                          why="malformed: not a JSON object"))  # fmt: skip
        return got, out
    ck = doc.get("checkpoint") if isinstance(doc.get("checkpoint"), dict) else {}
    pct = _float(doc.get("progressPercentage", doc.get("progress_percentage")))
    ann = TrainerStatus(
        pct,
        _float(doc.get("estimatedRemainingSeconds", doc.get("estimated_remaining_seconds"))),
        {str(k): str(v) for k, v in doc.items() if isinstance(v, (int, float, str)) and not isinstance(v, bool)},
        str(doc.get("lastUpdatedTime") or doc.get("last_updated_time") or ""),
        "annotation",
        _int(ck.get("last_step")),
        str(ck["last_path"]) if ck.get("last_path") else None,
    )
    out.append(Signal("rhoaiTrainerStatus", "seen", f"{ref} metadata.annotations[{RHOAI_ANNOTATION}]",
                      _compact(doc)))  # fmt: skip
    return got or ann, out


def _compact(v: Any) -> Any:
    """A value small enough to quote (metrics lists can hold 256 entries)."""
    if isinstance(v, dict):
        return {k: _compact(x) for k, x in list(v.items())[:12]}
    if isinstance(v, list):
        return [_compact(x) for x in v[:8]] + ([f"… {len(v) - 8} more"] if len(v) > 8 else [])
    return v


def read_platform(scope: Any, coverage: Any = None) -> Platform:
    """Every platform signal of the TrainJob in `scope` (a `Scope`); `coverage` tells unknown from absent."""
    p = Platform()
    tj, js = scope.trainjob, scope.jobset
    if tj is None:
        p.signals.append(Signal("trainerStatus", "unknown", why="no TrainJob in the snapshot"))
    else:
        p.trainer_status, sigs = read_trainer_status(tj)
        p.signals += sigs
        c = tj.condition("Suspended")
        if c is not None and str(c.get("status")) == "False" and c.get("reason") == "Resumed":
            p.caveats.append(CAVEAT_3666)
    if js is None:
        p.signals.append(Signal("jobset", "unknown", why="no JobSet in the snapshot"))
    else:
        ref = js.ref()
        for name, path in (("restarts", "restarts"), ("executionAttempts", "executionAttempts")):
            v = js.status.get(path)
            state = "seen" if v is not None else "absent"
            p.signals.append(Signal(name, state, f"{ref} status.{path}", v))
        c = js.condition("RestartingJobSet")
        p.signals.append(Signal("RestartingJobSet", "seen" if c else "absent", f"{ref} status.conditions",
                                _cond(c) if c else None,
                                why="" if c else "JobSet v0.12+ only"))  # fmt: skip
        highest = _highest_restart_label(scope.pods)
        restarts = _int(js.status.get("restarts"))
        if highest is not None and restarts is not None and restarts < highest:
            p.caveats.append(CAVEAT_3779)
            p.get("restarts").caveats.append(CAVEAT_3779)  # type: ignore[union-attr]
    for ann in POD_ANNOTATIONS:
        vals = {}
        for pod in scope.pods:
            v = pod.annotations.get(ann, pod.labels.get(ann))
            if v is not None:
                vals[pod.name] = v
        short = ann.rsplit("/", 1)[-1]
        if vals:
            p.signals.append(Signal(short, "seen", f"Pod/{scope.namespace}/* metadata.annotations[{ann}]", vals))
        elif scope.pods:
            p.signals.append(Signal(short, "absent", f"Pod/{scope.namespace}/* metadata.annotations[{ann}]"))
    wl_kind = coverage.kind("Workload") if coverage is not None else None
    if not scope.workloads:
        if wl_kind is not None and wl_kind.unknown:
            p.signals.append(Signal("workload", "unknown", why=f"Workloads not collected: {wl_kind.reason}"))
        else:
            p.signals.append(Signal("workload", "absent", why="no Kueue Workload for this TrainJob"))
    for wl in scope.workloads:
        for t in KUEUE_CONDITIONS:
            c = wl.condition(t)
            p.signals.append(Signal(f"kueue.{t}", "seen" if c else "absent", f"{wl.ref()} status.conditions",
                                    _cond(c) if c else None))  # fmt: skip
    return p


def _cond(c: dict[str, Any]) -> dict[str, Any]:
    return {k: c.get(k) for k in ("type", "status", "reason", "message", "lastTransitionTime") if c.get(k)}


def _highest_restart_label(pods: list[Obj]) -> int | None:
    got = [_int(p.labels.get("jobset.sigs.k8s.io/restart-attempt")) for p in pods]
    got = [g for g in got if g is not None]
    return max(got) if got else None


def progress_below(p: Platform, attempt_started: str, total: int | None, saved: list[int]) -> str | None:
    """Why the TrainJob's progress shows the attempt that began at `attempt_started` below every checkpoint
    an earlier attempt completed (`saved`): the report was made after it began and stands below the lowest of
    them. None when it does not show that (or cannot)."""
    ts = p.trainer_status
    if ts is None or not saved or not ts.updated or not attempt_started or ts.updated < attempt_started:
        return None
    step = ts.step(total)
    if step is None or step >= min(saved):
        return None
    pct = f"{ts.percent:g}%" if ts.percent is not None else "its step metric"
    return (
        f"the TrainJob's progress ({ts.source}, {pct} at {ts.updated}: step {step}"
        + (f" of {total}" if total else "")
        + f") is below step {min(saved)}, the earliest checkpoint saved before the attempt began"
    )


def platform_of(facts: Any) -> Platform:
    """The platform signals of a diagnosis, read once per Facts."""
    cached = facts.__dict__.get("_platform")
    if cached is None:
        sc = facts.scope
        cached = facts.__dict__["_platform"] = read_platform(sc, sc.snap.coverage)
    return cached


# what the timeline shows: signals that say more than the pods and logs do (`restarts` is read with them)
NOTABLE = ("trainerStatus", "rhoaiTrainerStatus", "executionAttempts", "RestartingJobSet", *(
    a.rsplit("/", 1)[-1] for a in POD_ANNOTATIONS), *(f"kueue.{t}" for t in KUEUE_CONDITIONS))


def notable(p: Platform) -> dict[str, Any] | None:
    """The `platform` key of the timeline's JSON: the seen signals beyond restarts, and the caveats; None when
    there are none."""
    sigs = [s.to_json() for s in p.signals if s.state == "seen" and s.name in NOTABLE]
    if not sigs and not p.caveats:
        return None
    return {"signals": sigs, "caveats": list(p.caveats)}
