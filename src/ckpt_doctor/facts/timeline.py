"""The attempts timeline as one fact: what each attempt did, what ended it, and what each interruption cost.

Built once per diagnosis from `Facts.history` (the attempts and their runs) and the Snapshot (pod and
container statuses, pod conditions, TrainJob / JobSet / Workload conditions, events). The app's Timeline
screen, `ckpt-doctor report` and the `timeline` key of `diagnose -o json` all read this one value.

Per attempt: when it started and ended (container `startedAt`/`finishedAt`, else the first and last
timestamp of its log), how it began (resumed from step N and the checkpoint it named, fresh, pending,
unknown), its complete saves (`Run.saves()`), the last step it reached, what ended it (a crash with its
exit code and the error line, OOMKilled, eviction, node loss, suspend, Kueue preemption, deadline, SIGTERM,
restarts exhausted) and what the platform did next, the pods and GPUs it held, and its training rate.

Per interruption (between an attempt and the next one that did work): the step reached before and the
step the next attempt began at (the drop), the steps redone, how far behind the newest complete save the
resume landed, the training time those steps had cost (from the rate), the time with no training in
between, and the GPU-hours lost. Attempts known only by inference (their pods are gone; a log kept in
the bundle, or nothing but a restart counter) are present and marked. What cannot be known is None,
never 0, and `unknown` says why.

Times of log lines are used only when they agree with the container's own start and end (a log that
prints a clock of its own can be wrong); a point placed by interpolation between known times is marked
`estimated`.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from itertools import pairwise
from typing import TYPE_CHECKING, Any

from ckpt_doctor import frameworks
from ckpt_doctor.facts.attempts import SIGKILL_EXIT, SIGTERM_EXIT, Attempt, History, Run, training_total
from ckpt_doctor.facts.platform import Platform, notable, platform_of, progress_below
from ckpt_doctor.scope import event_ev, event_fields

if TYPE_CHECKING:
    from ckpt_doctor.facts.context import Facts
    from ckpt_doctor.snapshot import Obj

# what ended an attempt
ENDINGS = (
    "crash",
    "oom-killed",
    "evicted",
    "node-lost",
    "preempted",
    "suspended",
    "deadline",
    "sigterm",
    "killed",
    "completed",
    "running",
    "pending",
    "unknown",
)
# what the platform did after it
THEN = ("jobset-restart", "container-restart", "pod-replaced", "resumed", "restarts-exhausted", "failed",
        "deadline", "completed", "suspended", "")  # fmt: skip
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
SLACK = 120.0  # seconds a log timestamp may lie outside its container's run (clocks, buffering)
ACCELERATORS = ("nvidia.com/gpu", "amd.com/gpu", "gpu.intel.com/i915", "gpu.intel.com/xe", "habana.ai/gaudi",
                "aws.amazon.com/neuron", "aws.amazon.com/neuroncore", "google.com/tpu")  # fmt: skip
# the rate a progress line prints: tqdm's `1.84it/s` / `2.31s/it` before the closing bracket, and
# Megatron's `elapsed time per iteration (ms): 812.4`
_TQDM_RATE = re.compile(r"[,\s](\d+(?:\.\d+)?)\s*(it/s|s/it)\s*(?:,[^\]]*)?\]")
_MEGATRON_MS = re.compile(r"elapsed time per iteration \(ms\):\s*(\d+(?:\.\d+)?)")
# DisruptionTarget reasons (pod condition) and what they mean
DISRUPTION = {
    "PreemptionByScheduler": ("preempted", "preempted by the scheduler for a higher-priority pod"),
    "PreemptionByKubeScheduler": ("preempted", "preempted by the scheduler for a higher-priority pod"),
    "EvictionByEvictionAPI": ("evicted", "evicted through the Eviction API (a node drain)"),
    "TerminationByKubelet": ("evicted", "terminated by the kubelet (node pressure or shutdown)"),
    "DeletionByTaintManager": ("node-lost", "deleted by the taint manager: its node became unreachable"),
    "DeletionByPodGC": ("node-lost", "deleted by pod garbage collection: its node is gone"),
}
# events that say what ended an attempt
EVENT_ENDINGS = {
    "Evicted": "evicted",
    "Preempted": "preempted",
    "TaintManagerEviction": "node-lost",
    "NodeNotReady": "node-lost",
    "NodeShutdown": "node-lost",
    "DeadlineExceeded": "deadline",
    "OOMKilling": "oom-killed",
    "SuspendedJobs": "suspended",
    "Suspended": "suspended",
}


# -- records ----------------------------------------------------------------------------------------------
@dataclass
class Ending:
    """What ended an attempt, and what the platform did next."""

    kind: str  # one of ENDINGS
    text: str  # one line for people: `exit 1 (Error): torch.OutOfMemoryError: CUDA out of memory.`
    at: str = ""  # RFC 3339, when known
    exit_code: int | None = None
    reason: str = ""  # the container's or pod's reason
    then: str = ""  # one of THEN
    then_text: str = ""
    evidence: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class Save:
    step: int
    at: str | None  # the log line's timestamp, when it has one (a listing's save: the checkpoint's mtime)
    path: str | None
    evidence: dict[str, Any]
    source: str = "log"  # log | listing (a complete checkpoint last written inside the attempt's run)

    @property
    def name(self) -> str:
        """The checkpoint's own name (the last part of its path), "" when the save names none."""
        return (self.path or "").rstrip("/").rpartition("/")[2]


@dataclass
class Point:
    """One (time, step) of an attempt's series; `t` in epoch seconds, None when it cannot be placed."""

    t: float | None
    step: int
    kind: str  # start | progress | save | last
    estimated: bool  # the time was interpolated (the line has no usable timestamp)


@dataclass
class AttemptFact:
    index: int | None  # the number findings give it; None for a lost attempt whose number is not known
    how: str  # initial | jobset-restart | container-restart | pod-replaced | resumed
    inferred: str  # "" when its pods are seen; else what it is known from
    started: str  # RFC 3339 or ""
    ended: str  # RFC 3339 or "" (running, or not known)
    ended_by: str  # an upper bound when `ended` is not known: the next attempt's start, or an event
    running: bool
    start: str  # resumed | fresh | pending | unknown
    start_step: int | None
    resumed_from: str | None  # the checkpoint the log names
    start_log: tuple[str, str, bool] | None  # the log that says how it began, and the line
    start_line: int | None
    start_text: str
    saves: list[Save]
    last_step: int | None
    end: Ending
    pods: list[str]
    nodes: list[str]
    gpus: int | None  # accelerators the attempt's pods held (limits, else requests)
    gpus_from: str
    rate: float | None  # training steps per second
    rate_from: str
    points: list[Point]
    log: tuple[str, str, bool] | None  # the attempt's main log (rank 0 when it has one)
    evidence: list[dict[str, Any]] = field(default_factory=list)  # what proves a lost attempt happened
    span: int = 1  # how many attempts it stands for: container instances known only from a restart counter
    resume_failed: str = ""  # the line that shows its resume failed to load the checkpoint it named
    # the attempt may have trained past `last_step`: it was stopped (a kill, SIGTERM, a crash) or is still running,
    # or its log does not show where training ended; the true last step is at least `last_step` (issue 19)
    last_step_bound: bool = False
    last_step_unknown: str = ""  # why `last_step` is None, when its log is there and shows no step
    start_step_unknown: str = ""  # why `start_step` is None for a resume whose log names its checkpoint
    saves_unknown: str = ""  # why `saves` may miss some: its log prints none, and listings show what survived

    @property
    def last_step_text(self) -> str:
        """`24`, `≥ 24` (a lower bound) or `unknown`."""
        if self.last_step is None:
            return "unknown"
        return f"≥ {self.last_step}" if self.last_step_bound else str(self.last_step)

    @property
    def label(self) -> str:
        if self.index is None:
            return "an earlier attempt" if self.span == 1 else f"{self.span} earlier attempts"
        return f"attempt {self.index}" if self.span == 1 else f"attempts {self.index}-{self.index + self.span - 1}"

    @property
    def short(self) -> str:
        if self.index is None:
            return "a?"
        return f"a{self.index}" if self.span == 1 else f"a{self.index}-{self.index + self.span - 1}"

    @property
    def newest_save(self) -> int | None:
        return max((s.step for s in self.saves), default=None)

    @property
    def did_work(self) -> bool | None:
        """True when it trained (a step is seen), False when it never ran, None when it cannot be told."""
        if self.start == "pending":
            return False
        if self.last_step is not None:
            return True
        return None


@dataclass
class Interruption:
    before: int  # positions in Timeline.attempts
    after: int
    cause: str  # the ending kind of the attempt before
    at: str  # when the attempt before ended (or the upper bound)
    from_step: int | None  # the last step reached before
    to_step: int | None  # where the next attempt began
    newest_save: int | None  # the newest complete save of any attempt before
    steps_lost: int | None
    behind_save: int | None  # the resume landed this many steps behind the newest complete save
    redo_seconds: float | None  # training time the lost steps had cost
    redo_from: str
    downtime_seconds: float | None  # no training: the attempt before ended → the next began
    downtime_open: bool  # the next attempt has not started yet: downtime so far
    gpu_hours: float | None
    gpus: int | None
    unknown: str  # why steps_lost is None
    label: str  # `↓ 1020 → 950, 70 steps lost`
    from_bound: bool = False  # `from_step` is a lower bound (the attempt before was stopped): so is `steps_lost`


@dataclass
class Timeline:
    attempts: list[AttemptFact]
    interruptions: list[Interruption]
    collected_at: str
    notes: list[str] = field(default_factory=list)
    unseen: str | None = None  # why attempts may be missing from it (the pods were not collected), or None
    doubt: list[str] = field(default_factory=list)  # why an attempt may have come before the first one shown
    crash_loop: str = ""  # what shows the trainer container crash-looping, or ""
    # the platform's own reports beyond pods and logs (facts/platform.py): seen signals and known defects
    platform: dict[str, Any] | None = None

    @property
    def count(self) -> int:
        """How many attempts there were (a group of lost container instances counts as each of them)."""
        return sum(a.span for a in self.attempts)

    @property
    def interruption_count(self) -> int:
        return len(self.interruptions) + sum(a.span - 1 for a in self.attempts)

    @property
    def bounds(self) -> list[str]:
        """Why the totals are lower bounds: attempts not seen, an interruption whose cost is not known, or one
        that follows a stopped attempt (its last visible step is a lower bound)."""
        out = [i.unknown for i in self.interruptions if i.unknown]
        out += [f"{self.attempts[i.before].label} was stopped: its last visible step is a lower bound"
                for i in self.interruptions if i.from_bound]  # fmt: skip
        out += [f"{a.label}: {a.inferred}" for a in self.attempts if a.span > 1]
        if self.unseen:
            out.append(self.unseen)
        return list(dict.fromkeys(out + self.doubt))

    @property
    def steps_lost(self) -> int | None:
        """Steps redone over all interruptions; None when none is known (see `lost_complete`), and when
        none was seen but the pods that would show one were not collected."""
        known = [i.steps_lost for i in self.interruptions if i.steps_lost is not None]
        return sum(known) if known else (0 if not self.interruptions and not self.unseen else None)

    @property
    def lost_complete(self) -> bool:
        """Every interruption's loss is known, and every attempt could be seen (else `steps_lost` is a
        lower bound)."""
        return (
            not self.unseen
            and not self.doubt
            and all(a.span == 1 for a in self.attempts)
            and all(i.steps_lost is not None and not i.from_bound for i in self.interruptions)
        )

    @property
    def gpu_hours_lost(self) -> float | None:
        known = [i.gpu_hours for i in self.interruptions if i.gpu_hours is not None]
        return sum(known) if known else (0.0 if not self.interruptions and not self.unseen else None)

    @property
    def gpu_hours_complete(self) -> bool:
        return all(i.gpu_hours is not None for i in self.interruptions)

    @property
    def downtime_seconds(self) -> float | None:
        known = [i.downtime_seconds for i in self.interruptions if i.downtime_seconds is not None]
        return sum(known) if known else (0.0 if not self.interruptions else None)

    def attempt(self, index: int) -> AttemptFact | None:
        return next((a for a in self.attempts if a.index == index), None)

    def interruption_into(self, pos: int) -> Interruption | None:
        return next((i for i in self.interruptions if i.after == pos), None)

    def to_json(self) -> dict[str, Any]:
        """The `timeline` key of `diagnose -o json`."""

        def clean(d: dict[str, Any]) -> dict[str, Any]:
            return {_camel(k): v for k, v in d.items()}

        attempts = []
        for a in self.attempts:
            d = asdict(a)
            d["end"] = clean(d["end"])
            d["saves"] = [clean(s) for s in d["saves"]]
            d["points"] = [clean({**p, "t": _round(p["t"], 1)}) for p in d["points"]]
            d["rate"] = _round(d["rate"], 4)
            d["startLog"] = _log_json(a.start_log, a.start_line)
            d["log"] = _log_json(a.log, None)
            d.pop("start_log")
            d.pop("start_line")
            attempts.append(clean(d))
        totals = {
            "stepsLost": self.steps_lost,
            "stepsLostComplete": self.lost_complete,
            "gpuHoursLost": _round(self.gpu_hours_lost, 4),
            "gpuHoursComplete": self.gpu_hours_complete,
            "downtimeSeconds": _round(self.downtime_seconds, 1),
        }
        return {
            "collectedAt": self.collected_at or None,
            "attempts": attempts,
            "interruptions": [clean(_rounded(asdict(i))) for i in self.interruptions],
            "totals": totals,
            "notes": list(self.notes),
            **({"platform": self.platform} if self.platform else {}),
        }


def _rounded(d: dict[str, Any]) -> dict[str, Any]:
    return {**d, **{k: _round(d[k], n) for k, n in (("redo_seconds", 1), ("downtime_seconds", 1), ("gpu_hours", 4))}}


def _camel(k: str) -> str:
    head, *rest = k.split("_")
    return head + "".join(p.title() for p in rest)


def _round(v: float | None, nd: int) -> float | None:
    return None if v is None else round(v, nd)


def _log_json(key: tuple[str, str, bool] | None, line: int | None) -> dict[str, Any] | None:
    if key is None:
        return None
    out: dict[str, Any] = {"pod": key[0], "container": key[1], "previous": key[2]}
    if line is not None:
        out["line"] = line
    return out


# -- time -------------------------------------------------------------------------------------------------
def epoch(s: str | None) -> float | None:
    """RFC 3339 (as Kubernetes and the log reader write it) → epoch seconds; None when it is not a time."""
    if not s:
        return None
    try:
        dt = datetime.fromisoformat(str(s).replace("Z", "+00:00"))
    except ValueError:
        return None
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=UTC)
    return dt.timestamp()


def rfc3339(t: float | None) -> str:
    if t is None:
        return ""
    return datetime.fromtimestamp(t, tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


# -- building it ------------------------------------------------------------------------------------------
def timeline_of(facts: Facts) -> Timeline:
    """The timeline of a diagnosis, computed once per Facts (the app, the report and JSON share it)."""
    cached = facts.__dict__.get("_timeline")
    if cached is None:
        cached = facts.__dict__["_timeline"] = build_timeline(facts)
    return cached


def build_timeline(facts: Facts) -> Timeline:
    h = facts.history
    sc = facts.scope
    collected = str(sc.snap.meta.get("collectedAt") or "")
    items = _structural_items(facts)
    seen = [_attempt_fact(facts, h, a, i, collected, items) for i, a in enumerate(h.attempts)]
    attempts = _with_lost_attempts(facts, h, seen)
    _listing_saves(facts, attempts)
    _bound_ends(attempts, items, collected)
    _then_from_next(attempts)
    for a in attempts:
        a.points = _points(a, h, collected)
    _gpus_for_inferred(facts, attempts)
    interruptions = _interruptions(attempts, collected)
    notes = _notes(attempts)
    if h.crash_loop:
        notes.append(f"crash-looping: {h.crash_loop}")
    notes += [f"maybe an attempt before the first one shown: {d}" for d in h.doubt]
    pods = sc.snap.coverage.kind("Pod")  # no pod list seen: attempts may be missing, not absent
    unseen = f"pods not collected: {pods.reason}" if pods.unknown else None
    plat = platform_of(facts)
    notes += _platform_notes(plat, attempts, h)
    return Timeline(attempts, interruptions, collected, notes, unseen, list(h.doubt), h.crash_loop, notable(plat))


def _platform_notes(plat: Platform, attempts: list[AttemptFact], h: History) -> list[str]:
    """What the platform's progress report says about the attempts: where it stands, and a drop below what an
    earlier attempt had saved (a fresh start, or a resume from below every earlier save)."""
    ts = plat.trainer_status
    if ts is None:
        return []
    pct = f"{ts.percent:g}%" if ts.percent is not None else "progress"
    out = [f"the trainer reports {pct}" + (f" at {ts.updated}" if ts.updated else "") + f" ({ts.source})"]
    if ts.checkpoint_step is not None:
        where = f" ({ts.checkpoint_path})" if ts.checkpoint_path else ""
        out[-1] += f"; its last checkpoint: step {ts.checkpoint_step}{where}"
    if len(attempts) > 1:
        last = attempts[-1]
        saved = [s.step for a in attempts[:-1] for s in a.saves]
        why = progress_below(plat, last.started, _total(h), saved)
        if why:
            out.append(f"{last.label}: {why}")
    return out


def _total(h: History) -> int | None:
    """The total steps the trainer announced, from any attempt's log."""
    return max((t for r in h.runs if (t := training_total(r.log)) is not None), default=None)


@dataclass
class _Item:
    """A structural fact that may say what ended an attempt: an event or a condition, with its time."""

    kind: str  # an ENDINGS kind, or a THEN kind prefixed with "then:"
    text: str
    at: float | None
    evidence: dict[str, Any]
    resume: bool = False  # a resume condition: it marks when an attempt began, so only ends an attempt before it


def _structural_items(facts: Facts) -> list[_Item]:
    sc = facts.scope
    out: list[_Item] = []
    tj = sc.trainjob
    kueue = tj is not None and QUEUE_LABEL in tj.labels
    for w in sc.workloads:
        for c in w.conditions():
            if c.get("type") in ("Evicted", "Preempted") and str(c.get("status")) == "True":
                why = f"Kueue {c.get('type').lower()} the workload ({c.get('reason') or 'no reason'})"
                msg = str(c.get("message") or "")
                out.append(_Item("preempted", why + (f": {msg}" if msg else ""), epoch(c.get("lastTransitionTime")),
                                 _cond_ev(w, c)))  # fmt: skip
    for obj in (tj, sc.jobset):
        if obj is None:
            continue
        for c in obj.conditions():
            ctype, status, reason = c.get("type"), str(c.get("status")), str(c.get("reason") or "")
            at = epoch(c.get("lastTransitionTime"))
            if ctype == "Suspended" and obj is tj and (status == "True" or reason == "Resumed"):
                what = "preempted" if kueue and any(i.kind == "preempted" for i in out) else "suspended"
                text = "the TrainJob was suspended" + (" and resumed" if reason == "Resumed" else "")
                if reason == "Resumed" and not facts.history.interruptions:
                    continue  # nothing shows a run before the resume: it started the first attempt (§6)
                out.append(_Item(what, text, at, _cond_ev(obj, c), resume=reason == "Resumed"))
            elif ctype == "Failed" and status == "True":
                if reason == "ReachedMaxRestarts":
                    out.append(_Item("then:restarts-exhausted", f"{obj.kind} failed: restarts exhausted "
                                     "(ReachedMaxRestarts)", at, _cond_ev(obj, c)))  # fmt: skip
                elif reason == "DeadlineExceeded":
                    out.append(_Item("deadline", f"{obj.kind} failed: activeDeadlineSeconds passed (DeadlineExceeded)",
                                     at, _cond_ev(obj, c)))  # fmt: skip
                else:
                    out.append(_Item("then:failed", f"{obj.kind} failed ({reason or 'no reason'})", at,
                                     _cond_ev(obj, c)))  # fmt: skip
            elif ctype == "Complete" and status == "True":
                out.append(_Item("then:completed", f"{obj.kind} completed", at, _cond_ev(obj, c)))
    for ev in sc.events:
        f = event_fields(ev)
        reason = f["reason"]
        at = epoch(f["lastTimestamp"])
        if reason in EVENT_ENDINGS:
            out.append(_Item(EVENT_ENDINGS[reason], f"event {reason}: {f['message']}", at, event_ev(f)))
        elif reason == "RestartJobSetFailurePolicyAction":
            out.append(_Item("then:jobset-restart", f"the JobSet restarted its Jobs ({f['message']})", at, event_ev(f)))
        elif reason == "ReachedMaxRestarts":
            out.append(_Item("then:restarts-exhausted", f"event ReachedMaxRestarts: {f['message']}", at, event_ev(f)))
    return out


def _cond_ev(obj: Obj, c: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "condition",
        "object": obj.ref(),
        "conditionType": c.get("type"),
        "status": str(c.get("status")),
        "reason": c.get("reason", ""),
        "message": c.get("message", ""),
    }


def _primary(runs: list[Run]) -> Run:
    from ckpt_doctor.facts.attempts import COMPLETION_INDEX

    pool = [r for r in runs if r.log is not None] or runs
    return min(pool, key=lambda r: (r.pod.labels.get(COMPLETION_INDEX, "0") != "0", r.pod.name, not r.previous))


def _is_running(r: Run) -> bool:
    return (
        not r.previous
        and not r.inferred
        and not r.not_started
        and not r.finished
        and r.exit_code is None
        and str(r.pod.status.get("phase") or "") in ("Running", "")
        and bool(r.pod.status)
    )


def _run_window(r: Run) -> tuple[float | None, float | None]:
    """When the run's container started and ended (the log's first and last time for a deleted pod)."""
    t0, t1 = epoch(r.started), epoch(r.finished)
    if r.inferred and r.log is not None:
        t0 = t0 or epoch(r.log.first_time)
        t1 = t1 or epoch(r.log.last_time)
    return t0, t1


def _usable_times(r: Run, collected: float | None) -> bool:
    """The run's log timestamps make a clock of its training: two or more distinct times, rising with the
    step, inside its container's run (for a deleted pod they are all there is)."""
    if r.log is None:
        return False
    timed = sorted((e.step, epoch(e.time)) for e in r.training_progress() + r.saves() if e.time and epoch(e.time))
    times = [t for _s, t in timed]
    if len(set(times)) < 2 or any(b < a for a, b in pairwise(times)):  # type: ignore[operator]
        return False
    t0, t1 = (None, None) if r.inferred else (epoch(r.started), epoch(r.finished))
    if t1 is None and not r.inferred and _is_running(r):
        t1 = collected
    if t0 is not None and min(times) < t0 - SLACK:  # type: ignore[type-var,operator]
        return False
    return not (t1 is not None and max(times) > t1 + SLACK)  # type: ignore[type-var,operator]


def _rate(r: Run, start_step: int | None, collected: float | None) -> tuple[float | None, str]:
    """Training steps per second of a run: from timed log lines, the rate its progress line prints, or its
    container's average."""
    prog = [e for e in r.training_progress() + r.saves() if e.step is not None]
    if _usable_times(r, collected):
        timed = sorted({(epoch(e.time), e.step) for e in prog if e.time and epoch(e.time) is not None})
        if len(timed) >= 2:
            (ta, sa), (tb, sb) = timed[0], timed[-1]
            if tb > ta and sb > sa:  # type: ignore[operator]
                return (sb - sa) / (tb - ta), "its log's timestamps"  # type: ignore[operator]
    for e in reversed(r.training_progress()):
        m = _TQDM_RATE.search(e.text)
        if m:
            v = float(m.group(1))
            if v > 0:
                return (v if m.group(2) == "it/s" else 1 / v), "its progress bar"
    if r.log is not None:
        for e in reversed(r.log.of("progress")):
            m = _MEGATRON_MS.search(e.text)
            if m and float(m.group(1)) > 0:
                return 1000 / float(m.group(1)), "the time per iteration its log prints"
    t0, t1 = _run_window(r)
    last = r.last_step()
    first = start_step if start_step is not None else None
    if t0 is not None and t1 is not None and t1 > t0 and last is not None and first is not None and last > first:
        return (last - first) / (t1 - t0), "its container's run time, start-up included"
    return None, ""


def _gpus_of_pod(pod: Obj) -> int | None:
    """Accelerators one pod holds: the sum over its containers of the limits (else requests) on a known
    accelerator resource; None when the pod's containers carry no resources at all (a pod known only by name)."""
    containers = [c for c in pod.spec.get("containers") or [] if isinstance(c, dict)]
    if not containers or not any("resources" in c for c in containers):
        return None
    total = 0
    for c in containers:
        res = c.get("resources") if isinstance(c.get("resources"), dict) else {}
        for part in ("limits", "requests"):
            got = res.get(part) if isinstance(res.get(part), dict) else {}
            n = sum(_count(v) for k, v in got.items() if _accelerator(str(k)))
            if n:
                total += n
                break
    return total


def _accelerator(key: str) -> bool:
    return key in ACCELERATORS or key.endswith("/gpu")


def _count(v: Any) -> int:
    try:
        return int(str(v))
    except ValueError:
        return 0


def _attempt_fact(facts: Facts, h: History, a: Attempt, pos: int, collected: str, items: list[_Item]) -> AttemptFact:
    r = _primary(a.runs)
    kind, step, srun, sev = h.attempt_start(a)
    running = any(_is_running(x) for x in a.runs if x is r or not x.previous) and not all(x.not_started for x in a.runs)
    running = running and _is_running(r)
    starts = [t for t in (_run_window(x)[0] for x in a.runs) if t is not None]
    ends = [t for t in (_run_window(x)[1] for x in a.runs) if t is not None]
    started = rfc3339(min(starts)) if starts else ""
    ended = "" if running or not ends else rfc3339(max(ends))
    saves: dict[int, Save] = {}
    for x in a.runs:
        for e in x.saves():
            if e.step is not None and e.step not in saves:
                ref = facts.scope.snap.logs.get((x.pod.name, x.container, x.previous))
                evid = e.evidence(ref, x.attempt) if ref is not None else {"type": "log", "text": e.text}
                saves[e.step] = Save(e.step, e.time, e.path, evid)
    lasts = [x.last_step() for x in a.runs if x.last_step() is not None]
    last = max(lasts) if lasts else None  # type: ignore[type-var]
    pods = sorted({x.pod.name for x in a.runs})
    per_pod = {x.pod.name: _gpus_of_pod(x.pod) for x in a.runs}
    gpus: int | None = None
    gpus_from = ""
    if per_pod and all(v is not None for v in per_pod.values()):
        gpus = sum(v for v in per_pod.values() if v is not None)
        gpus_from = "the pods' resources"
    rate, rate_from = _rate(r, step, epoch(collected))
    start_log = None
    start_line = None
    start_text = ""
    if srun is not None and sev is not None:
        start_log = (srun.pod.name, srun.container, srun.previous)
        start_line = sev.line
        start_text = sev.text
    inferred = ""
    if a.runs and all(x.inferred for x in a.runs):
        inferred = "its pods are gone; known from the log kept in the snapshot"
    fact = AttemptFact(
        index=a.index,
        how=a.how,
        inferred=inferred,
        started=started,
        ended=ended,
        ended_by="",
        running=running,
        start=kind,
        start_step=step,
        resumed_from=sev.path if (kind == "resumed" and sev is not None) else None,
        start_log=start_log,
        start_line=start_line,
        start_text=start_text,
        saves=[saves[k] for k in sorted(saves)],
        last_step=last,
        end=Ending("unknown", "not known"),
        pods=pods,
        nodes=sorted({x.node for x in a.runs if x.node}),
        gpus=gpus,
        gpus_from=gpus_from,
        rate=rate,
        rate_from=rate_from,
        points=[],
        log=(r.pod.name, r.container, r.previous) if r.log is not None else None,
    )
    fact.end = _ending(facts, a, r, fact, running, items, h, pos)
    if kind == "resumed":
        logs = [x.log for x in a.runs if x.log is not None]
        bad = [e for lg in logs for e in lg.of("partial_checkpoint") + lg.of("resume_error")]
        if bad:
            fact.resume_failed = bad[0].text.strip()
    fact.last_step_bound, fact.last_step_unknown = _last_step_bound(fact, a, _stacks(facts))
    if kind == "resumed" and step is None and fact.resumed_from:
        fact.start_step_unknown = _why_no_resume_step(fact.resumed_from)
    return fact


def _why_no_resume_step(path: str) -> str:
    """Why a resume that names its checkpoint has no step: the name holds none (Lightning's `last.ckpt`, a
    `latest` link) and the log says no step beside it."""
    name = path.rstrip("/").rpartition("/")[2] or path
    return f"{name} names no step, and the log does not say which step it held"


def _stacks(facts: Facts) -> frozenset[str]:
    """The stacks the trainer's program shows (its code and logs), none when it cannot be read."""
    prog = facts.program if facts.mode == "diagnose" else None
    return frozenset(prog.stacks) if prog is not None else frozenset()


def _last_step_bound(fact: AttemptFact, a: Attempt, stacks: frozenset[str] = frozenset()) -> tuple[bool, str]:
    """Whether the attempt's last visible step is only a lower bound, and why none is visible at all.

    A process stopped from outside (SIGKILL, SIGTERM, a crash, an eviction) loses what it had not printed: the
    tqdm bar redraws at most every 0.1 s, a loop prints every N steps, block-buffered stdout is lost whole
    (recordings hf-*-correct-resume-buffered: 0 of 4 loss lines under transformers 4.57). Only an attempt whose
    log shows training end (its bar at its total, a finished line, the total it announced) stands at its last
    step exactly, however the process ended after it (hf-5.24-sigterm-no-handler-take2: killed in teardown)."""
    logs = [x.log for x in a.runs if x.log is not None]
    if fact.last_step is None:
        if fact.start == "pending" or not (logs or any(x.log_gap for x in a.runs)):
            return False, ""
        return False, _why_no_step(a, stacks)
    if any(shows_end(lg, fact.last_step) for lg in logs):
        return False, ""
    return True, ""


def shows_end(log: Any, last: int) -> bool:
    """Whether the log shows training ended at step `last`: its training bar at its total, the total it announced
    reached, or a finished line (HF's `{'train_runtime': …}`, Lightning's `max_steps reached`) after its last
    progress. Training stops there whatever ends the process after it (a SIGKILL in teardown included)."""
    prog = [e for e in log.of("progress") if e.bar in (None, "train") and e.step is not None]
    tail = max(prog, key=lambda e: (e.window == "tail", e.offset), default=None)
    at_total = tail is not None and tail.step == last and tail.total is not None and tail.step >= tail.total
    told = log.total_steps is not None and last >= log.total_steps
    finished = tail is not None and any(e.kind == "finished" and (e.window, e.offset) >= (tail.window, tail.offset)
                                        for e in log.of("finished"))  # fmt: skip
    return at_total or told or finished


def _why_no_step(a: Attempt, stacks: frozenset[str] = frozenset()) -> str:
    """Why an attempt whose log is in the snapshot shows no training step (a framework's own words when the
    program runs one that prints no progress without a terminal: `Logs.quiet`)."""
    killed = any(x.exit_code in (SIGKILL_EXIT, SIGTERM_EXIT) for x in a.runs)
    buffered = any(_buffered(x.pod, x.container) for x in a.runs)
    gaps = [x.log_gap for x in a.runs if x.log is None and x.log_gap]
    what = "; ".join(gaps) if gaps and not any(x.log is not None for x in a.runs) else "its log shows no training step"
    if buffered and killed:
        return (f"{what}: PYTHONUNBUFFERED is not set, so Python's stdout was block-buffered and the kill lost "
                "what it had not flushed")  # fmt: skip
    if buffered:
        return f"{what} (PYTHONUNBUFFERED is not set: stdout is block-buffered)"
    if gaps and what != "its log shows no training step":
        return what
    quiet = [f.logs.quiet for f in frameworks.all_frameworks() if f.name in stacks and f.logs.quiet]
    if quiet:
        return f"{what}: " + "; ".join(quiet)
    return f"{what}: the program prints no progress the reader knows (or draws it only on a terminal)"


def _buffered(pod: Obj, container: str) -> bool:
    """The container's env does not set PYTHONUNBUFFERED (a value from a ConfigMap or Secret is not known)."""
    for c in pod.spec.get("containers") or []:
        if isinstance(c, dict) and c.get("name") == container:
            env = {e.get("name"): e for e in c.get("env") or [] if isinstance(e, dict)}
            v = env.get("PYTHONUNBUFFERED")
            if v is None:
                return not c.get("envFrom")
            return "value" in v and str(v.get("value") or "") == ""
    return False


def _crash_line(r: Run) -> str:
    if r.log is None:
        return ""
    e = r.log.last("disk_full", "resume_error", "oom", "error", "save_failed")
    return e.text.strip() if e is not None else ""


def _container_ev(r: Run) -> dict[str, Any]:
    return {
        "type": "field",
        "object": r.pod.ref(),
        "path": r.terminated_path,
        "value": {k: v for k, v in (("exitCode", r.exit_code), ("reason", r.reason or None)) if v is not None},
    }


def _ending(
    facts: Facts, a: Attempt, r: Run, fact: AttemptFact, running: bool, items: list[_Item], h: History, pos: int
) -> Ending:
    if a.runs and all(x.not_started for x in a.runs):
        again = next((x.waiting for x in a.runs if x.waiting), "")
        if again:
            return Ending("pending", f"waiting to start again after the instance before ended ({again})",
                          reason=again.split(":", 1)[0])  # fmt: skip
        why = _waiting_reason(a.runs)
        return Ending("pending", f"not started yet ({why})" if why else "not started yet")
    if running:
        return Ending("running", "running when the snapshot was taken")
    # the run that ended it: a specific reason first, then a crash (the others were stopped after it)
    ended = [x for x in a.runs if x.exit_code is not None or x.reason]
    trigger = next((x for x in ended if x.reason in ("OOMKilled", "Evicted", "DeadlineExceeded")), None)
    trigger = trigger or next((x for x in ended if x.exit_code not in (None, 0, SIGTERM_EXIT, SIGKILL_EXIT)), None)
    trigger = trigger or (r if (r.exit_code is not None or r.reason) else (ended[0] if ended else None))
    end = Ending("unknown", "how it ended is not in the snapshot")
    if trigger is not None:
        end = _from_container(trigger)
    # pod-level facts (reason, DisruptionTarget) are more specific than a signal's exit code
    for x in a.runs:
        pod_end = _from_pod(x.pod)
        if pod_end is not None and end.kind in ("sigterm", "killed", "unknown", "crash"):
            if end.kind == "crash" and pod_end.kind not in ("deadline", "evicted"):
                continue
            pod_end.exit_code, pod_end.reason = end.exit_code, pod_end.reason or end.reason
            pod_end.evidence = end.evidence + pod_end.evidence
            end = pod_end
            break
    # what the cluster said in this attempt's window: suspend, preemption, eviction, deadline…
    window = _window_items(items, fact, pos, h, facts)
    specific = [i for i in window if not i.kind.startswith("then:")]
    if (specific and end.kind in ("sigterm", "killed", "unknown")) or any(i.kind == "deadline" for i in specific):
        best = _most_specific(specific)
        if best is not None:
            sig = _signal_text(end.exit_code, trigger)
            end = Ending(best.kind, best.text + (f": {sig}" if sig else ""), end.at or rfc3339(best.at), end.exit_code,
                         end.reason, evidence=[*end.evidence, best.evidence])  # fmt: skip
    if not end.at:
        end.at = fact.ended
    then = [i for i in window if i.kind.startswith("then:")]
    if then:
        t = then[-1]
        end.then, end.then_text = t.kind.split(":", 1)[1], t.text
        end.evidence.append(t.evidence)
    return end


def _signal_text(code: int | None, r: Run | None) -> str:
    if code == SIGTERM_EXIT:
        return "SIGTERM (exit 143)"
    if r is not None and r.exited_after_sigterm:
        return f"SIGTERM, then exit {code}"
    if code == SIGKILL_EXIT:
        got_term = r is not None and r.log is not None and r.log.first("sigterm", "sigterm_flush") is not None
        return "SIGTERM, then SIGKILL when the grace period ran out (exit 137)" if got_term else "SIGKILL (exit 137)"
    return ""


def _waiting_reason(runs: list[Run]) -> str:
    for x in runs:
        for cs in x.pod.status.get("containerStatuses") or []:
            if isinstance(cs, dict) and cs.get("name") == x.container:
                w = (cs.get("state") or {}).get("waiting") if isinstance(cs.get("state"), dict) else None
                if isinstance(w, dict) and w.get("reason"):
                    return str(w["reason"])
        phase = x.pod.status.get("phase")
        if phase:
            return str(phase)
    return ""


def _from_container(r: Run) -> Ending:
    code, reason = r.exit_code, r.reason
    ev = [_container_ev(r)]
    crash = _crash_line(r)
    head = " ".join(x for x in (f"exit {code}" if code is not None else "", f"({reason})" if reason else "") if x)
    if reason == "OOMKilled":
        return Ending("oom-killed", f"{head}: the container went over its memory limit", r.finished, code, reason,
                      evidence=ev)  # fmt: skip
    if r.exited_after_sigterm and code is not None:
        return _after_sigterm(r, head, crash, ev)
    if code == 0 or reason == "Completed":
        return Ending("completed", f"{head}: finished", r.finished, code, reason, evidence=ev)
    if code == SIGTERM_EXIT:
        return Ending("sigterm", f"{head}: stopped by SIGTERM", r.finished, code, reason, evidence=ev)
    if code == SIGKILL_EXIT:
        got_term = r.log is not None and r.log.first("sigterm", "sigterm_flush") is not None
        text = "killed by SIGKILL after SIGTERM: the grace period ran out" if got_term else "killed by SIGKILL"
        return Ending("killed", f"{head}: {text}" + (f"; {crash}" if crash else ""), r.finished, code, reason,
                      evidence=ev)  # fmt: skip
    if reason in ("Evicted", "DeadlineExceeded"):
        kind = "evicted" if reason == "Evicted" else "deadline"
        msg = str(r.pod.status.get("message") or "")
        text = f"pod {reason}" + (f": {msg.strip()}" if msg else "")
        return Ending(kind, text, r.finished, code, reason, evidence=ev)
    if code is not None:
        return Ending("crash", f"{head}" + (f": {crash}" if crash else ""), r.finished, code, reason, evidence=ev)
    return Ending("unknown", reason or "how it ended is not in the snapshot", r.finished, code, reason, evidence=ev)


def _after_sigterm(r: Run, head: str, crash: str, ev: list[dict[str, Any]]) -> Ending:
    """A run that exited with a code of its own after SIGTERM reached it was stopped, not finished and not
    crashed: exit 0 is what a save-on-SIGTERM handler or Lightning's signal handling leaves (Kubernetes then
    counts the pod as Succeeded: see sigterm-exit-zero), exit 1 what torchrun's agent leaves after stopping
    its workers."""
    code = r.exit_code
    if code == 0:
        text = f"{head}: stopped by SIGTERM and exited 0, which Kubernetes counts as success"
    elif _AGENT_RX.search(crash):
        text = f"{head}: stopped by SIGTERM (torchrun's agent exits 1 on it: {crash})"
    else:
        text = f"{head}: stopped by SIGTERM, then exited {code}" + (f"; {crash}" if crash else "")
    return Ending("sigterm", text, r.finished, code, r.reason, evidence=[*ev, *r.sigterm[:2]])


_AGENT_RX = re.compile(r"SignalException: Process \d+ got signal")

POD_REASONS = {
    "Evicted": ("evicted", "pod evicted"),
    "DeadlineExceeded": ("deadline", "pod activeDeadlineSeconds passed"),
    "NodeLost": ("node-lost", "pod lost with its node"),
    "Terminated": ("node-lost", "pod terminated with its node (node shutdown)"),
    "Shutdown": ("node-lost", "pod terminated with its node (node shutdown)"),
    "NodeShutdown": ("node-lost", "pod terminated with its node (node shutdown)"),
}


def _from_pod(pod: Obj) -> Ending | None:
    reason = str(pod.status.get("reason") or "")
    msg = str(pod.status.get("message") or "").strip()
    if reason in POD_REASONS:
        kind, text = POD_REASONS[reason]
        ev = {"type": "field", "object": pod.ref(), "path": "status.reason", "value": reason}
        return Ending(kind, text + (f": {msg}" if msg else ""), reason=reason, evidence=[ev])
    for c in pod.conditions():
        if c.get("type") == "DisruptionTarget" and str(c.get("status")) == "True":
            kind, text = DISRUPTION.get(str(c.get("reason")), ("unknown", f"disrupted ({c.get('reason')})"))
            return Ending(kind, f"pod {text}", reason=str(c.get("reason") or ""), evidence=[_cond_ev(pod, c)])
    return None


def _window_items(items: list[_Item], fact: AttemptFact, pos: int, h: History, facts: Facts) -> list[_Item]:
    """The structural items that fall between this attempt's start and the next attempt's start."""
    t0 = epoch(fact.started)
    nxt = h.attempts[pos + 1] if pos + 1 < len(h.attempts) else None
    t1 = None
    if nxt is not None:
        starts = [epoch(x.started or x.pod.created) for x in nxt.runs]
        known = [t for t in starts if t is not None]
        t1 = min(known) if known else None
    out = []
    # clocks may differ a little, but what came before an attempt started cannot have ended it: the slack below
    # its start is only for the first attempt, and never for a resume (which starts an attempt)
    low = None if t0 is None else (t0 - SLACK if pos == 0 else t0)
    for i in items:
        if i.at is None:
            # a timeless item speaks of the last attempt only (a terminal condition, a kept pod's state)
            if nxt is None:
                out.append(i)
            continue
        floor = t0 if (i.resume and t0 is not None) else low
        if (floor is None or i.at >= floor) and (t1 is None or i.at < t1):
            out.append(i)
    return out


_SPECIFIC_ORDER = ("deadline", "node-lost", "evicted", "preempted", "oom-killed", "suspended")


def _most_specific(items: list[_Item]) -> _Item | None:
    for k in _SPECIFIC_ORDER:
        got = [i for i in items if i.kind == k]
        if got:
            return got[0]
    return None


def _with_lost_attempts(facts: Facts, h: History, seen: list[AttemptFact]) -> list[AttemptFact]:
    """Add the attempts that happened but left no pod and no log (JobSet restart counters, a resume)."""
    runs = h.runs
    seen_ra = {r.restart_attempt for r in runs}
    top = max([*seen_ra, h.jobset_restarts], default=0)
    newest = max(seen_ra, default=-1)
    missing = [
        ra
        for ra in range(0, top + 1)
        if ra not in seen_ra and (ra < newest or 0 < ra <= h.jobset_restarts or ra == 0 < h.jobset_restarts)
    ]
    proof = [_what(e) for e in h.earlier][:2]
    known_from = "; ".join(proof) if proof else "the restart count"
    taken = {a.index for a in seen}
    lost: list[tuple[int, AttemptFact]] = []
    first_ra = min(seen_ra) if seen_ra else None
    for ra in missing:
        index: int | None = ra if (first_ra is None or ra < first_ra) and ra not in taken else None
        how = "initial" if ra == 0 else "jobset-restart"
        lost.append((ra, _lost_fact(index, how, f"its pods and logs are gone (restart-attempt {ra}); known from "
                                    f"{known_from}", h)))  # fmt: skip
    if not missing and _lost_before_first(h) and not any(r.inferred for r in runs):
        first = seen[0].index if seen else None
        index = first - 1 if first is not None and first >= 1 and (first - 1) not in taken else None
        lost.append((-1, _lost_fact(index, "initial", f"its pods and logs are gone; known from {known_from}", h)))
    out = seen
    if lost:
        # in restart-attempt order: a lost attempt goes before the seen attempts of a higher restart-attempt
        keyed = [((_ra_of(h, a) if _ra_of(h, a) is not None else 1 << 20), 1, i, a) for i, a in enumerate(seen)]
        keyed += [(ra, 0, i, a) for i, (ra, a) in enumerate(lost)]
        out = [a for *_k, a in sorted(keyed, key=lambda k: k[:3])]
    # container instances a restart counter shows before the oldest one seen: one row for all of them
    for first, n, why in h.lost_instances:
        fact = _lost_fact(first, "container-restart" if first else "initial", why + " (known from restartCount)", h)
        fact.span = n
        fact.end = Ending("unknown", "not in the snapshot: their logs are gone", then="container-restart",
                          then_text=NEXT_HOW["container-restart"])  # fmt: skip
        fact.evidence = [e for e in h.earlier if "restartCount" in str(e.get("path"))][:1]
        at = next((k for k, a in enumerate(out) if a.index is not None and a.index >= first + n), len(out))
        out = [*out[:at], fact, *out[at:]]
    return out


def _lost_before_first(h: History) -> bool:
    """An attempt ran before the first one seen: a suspend or preemption is recorded, with a time, before
    every seen run began (an interruption without a time proves nothing about order)."""
    if not h._first_attempt_lost() or not h.attempts:
        return False
    timed = [i.get("time") for i in h.interruptions if i.get("time")]
    if not timed:
        return any(r.restart_attempt > 0 for r in h.attempts[0].runs)
    first = min((r.started or r.pod.created for r in h.attempts[0].runs), default="")
    return bool(first) and any(str(t) < first for t in timed)


def _what(ev: dict[str, Any]) -> str:
    """A short description of a piece of evidence that an earlier attempt existed."""
    if ev.get("type") == "field":
        return f"{ev.get('object')} {ev.get('path')} = {ev.get('value')}"
    if ev.get("type") == "condition":
        return f"{ev.get('object')} condition {ev.get('conditionType')} reason {ev.get('reason')}"
    if ev.get("type") == "event":
        return f"event {ev.get('reason')} on {ev.get('object')}"
    return str(ev.get("type"))


def _ra_of(h: History, fact: AttemptFact) -> int | None:
    if fact.index is None:
        return None
    a = h.numbered(fact.index)
    if a is None or not a.runs:
        return None
    return min(r.restart_attempt for r in a.runs)


def _lost_fact(index: int | None, how: str, why: str, h: History) -> AttemptFact:
    return AttemptFact(
        index=index,
        how=how,
        inferred=why,
        started="",
        ended="",
        ended_by="",
        running=False,
        start="unknown",
        start_step=None,
        resumed_from=None,
        start_log=None,
        start_line=None,
        start_text="",
        saves=[],
        last_step=None,
        end=Ending("unknown", "not in the snapshot: its pods and logs are gone"),
        pods=[],
        nodes=[],
        gpus=None,
        gpus_from="",
        rate=None,
        rate_from="",
        points=[],
        log=None,
        evidence=list(h.earlier[:3]),
    )


def _listing_saves(facts: Facts, attempts: list[AttemptFact]) -> None:
    """Saves the checkpoint listings show (frameworks that print nothing when they save: Lightning, DeepSpeed at
    its default log level): a complete checkpoint last written while an attempt ran is a save of that attempt;
    before the first attempt seen, of the one lost attempt before it (when exactly one is). A listing shows what
    survived until it was taken: a save overwritten or rotated away since is not in it.

    An attempt that resumed from step S loaded a checkpoint that was there before it and saves only above S: a
    checkpoint at S or below is not its save, though pod times kept to the second may put it inside its run (a
    restart within the second after the previous attempt's last save: recording hf-5.24-sigterm-no-handler-take2,
    `checkpoint-40` written 0.6 s before the attempt that resumed from it started)."""
    vol = facts.volume
    for a in attempts:
        if a.log is not None and not any(s.source == "log" for s in a.saves) and not vol.seen:
            a.saves_unknown = "its log prints no save, and no checkpoint listing is in the snapshot"
    if not vol.seen:
        return
    for i, a in enumerate(attempts):
        t0, t1 = epoch(a.started), epoch(a.ended)
        if t1 is None and a.running:
            t1 = max((j.at for j in vol.judged if j.at is not None), default=None)
        if a.index is None and i == 0 and len(attempts) > 1 and attempts[1].started and not a.started:
            t0, t1 = float("-inf"), (epoch(attempts[1].started) or 0.0) - 1.0  # the one lost attempt before
        if t0 is None or t1 is None:
            continue
        have = {s.step for s in a.saves}
        loaded = a.start_step if a.start == "resumed" else None
        for c, j in sorted(vol.saves_in(t0, t1 + 1.0), key=lambda x: x[0].step or 0):  # whole-second end
            if c.step is not None and c.step not in have and (loaded is None or c.step > loaded):
                have.add(c.step)
                a.saves.append(Save(c.step, _mtime_text(c.mtime), c.path, j.save_evidence(c), "listing"))
        a.saves += _announced_saves_listed(facts, a, t0, t1, have, loaded)
        a.saves.sort(key=lambda s: s.step)
        if a.log is not None and (any(s.source == "listing" for s in a.saves) or not a.saves):
            a.saves_unknown = (
                (
                    "its log does not print every save: the rest are read from the checkpoint listings"
                    if a.saves
                    else "its log prints no save, and the checkpoint listings show none written while it ran"
                )
                + ", which show only the checkpoints that survived until they were taken (one rotated away or "
                "overwritten since is not in them)"
            )
        first = i == 0 and a.index == 0 and a.how == "initial"
        again = vol.trained_again(t0, t1 + 1.0, first) if a.start == "unknown" else None
        if again is not None:  # its log does not say how it began; the listings show it trained from step 0
            a.start, a.start_step = "fresh", 0
            a.start_text = again.text()


def sigterm_time(r: Run) -> tuple[float, float] | None:
    """When SIGTERM reached run `r`, and how finely that is known: (time, precision), the signal having come in
    [time, time + precision). The trainer's own line saying it got the signal, when its prefix carries a time
    (torchrun's glog `W1202 01:05:12.092000 … Received 15 death signal`, a logger's stamp), gives it to the
    millisecond; else the kubelet's Killing event, the pod's DisruptionTarget condition or a timestamped SIGTERM
    line, which are kept to the second (precision 1 s), the earliest of them. None when none has a clock."""
    from ckpt_doctor.facts.logs import line_epoch

    near = epoch(r.started)
    said = [t for e in r.sigterm if e.get("type") == "log" and (t := line_epoch(str(e.get("text") or ""), near))]
    if said:
        return min(said), 0.001
    times = []
    for e in r.sigterm:
        for k in ("firstTimestamp", "eventTime", "lastTimestamp", "lastTransitionTime", "time"):
            t = epoch(str(e.get(k) or ""))
            if t is not None:
                times.append(t)
                break
    return (min(times), 1.0) if times else None


def _save_began_after(r: Run, e: Any) -> float | None:
    """The earliest a save announced by line `e` of run `r`'s log can have begun: the line's own time, and the time
    SIGTERM reached the run when the log shows the signal at or before the line (a handler's save follows it).
    Both are kept to the second (a log's time, an event's). None when neither places it."""
    from ckpt_doctor.facts.attempts import _before

    assert r.log is not None
    bounds = [t for t in (epoch(e.time or ""),) if t is not None]
    sig = next((x for x in r.log.events if x.kind in ("sigterm", "sigterm_flush")), None)
    if sig is not None and (sig is e or sig.line == e.line or _before(sig, e)):
        t = sigterm_time(r)
        if t is not None:
            bounds.append(t[0])
    return max(bounds, default=None)


def _announced_saves_listed(
    facts: Facts, a: AttemptFact, t0: float, t1: float, have: set[int], loaded: int | None
) -> list[Save]:
    """A save whose start line names its step and whose end the log does not show (a SIGTERM handler's
    `[checkpoint] SIGTERM: saving at step 25`, then SIGKILL at the end of the grace period: recording
    lightning-2.6-slow-save-grace), completed as the listings show it: a complete checkpoint whose name holds no
    step (Lightning's `last.ckpt`, rewritten at every save) last written after the line's time and inside the
    attempt, the newest of its directory, and no other checkpoint of that directory written since the line (as
    `stepless_resume_step` places a resume from such a file). The line must be the run's last save line, at a step
    no lower than any the attempt is seen at: nothing later can have written the file. Times kept to the second
    count from the end of their second, so a file written before the save began is never taken for it."""
    if a.index is None:
        return []
    att = facts.history.numbered(a.index)
    if att is None:
        return []
    vol = facts.volume
    out: list[Save] = []
    for r in att.runs:
        if r.log is None:
            continue
        outcomes = r.save_outcomes()
        if not outcomes or outcomes[-1][1]:
            continue  # only the last save line of the run, and only one the log does not show done
        e = outcomes[-1][0]
        step = e.step
        if step is None or step in have or (loaded is not None and step <= loaded):
            continue
        if a.last_step is not None and a.last_step > step:
            continue
        began = _save_began_after(r, e)
        if began is None:
            continue
        got = _stepless_written_after(vol, began, t0, t1)
        if got is None:
            continue
        j, c = got
        ev = j.save_evidence(c)
        ev["why"] = f"written after `{e.text.strip()[:120]}`, the newest checkpoint of its directory"
        have.add(step)
        out.append(Save(step, _mtime_text(c.mtime), c.path, ev, "listing"))
    return out


def _stepless_written_after(vol: Any, began: float, t0: float, t1: float) -> tuple[Any, Any] | None:
    """The first complete checkpoint whose name holds no step, last written after the second `began` is kept to and
    inside [t0, t1], that is the newest of its directory with no other one of it written since `began`: (its
    listing, it), or None."""
    after = began + 1.0  # the end of the second the bound is kept to
    for j in vol.judged:
        p = j.listing.precision
        for d in j.dirs:
            for c in d.checkpoints:
                if c.step is not None or not c.complete or c.mtime is None:
                    continue
                if not (after <= c.mtime and t0 <= c.mtime and c.mtime + p <= t1 + 1.0):
                    continue
                others = [o for o in d.checkpoints if o is not c]
                if any(o.mtime is None or o.mtime > c.mtime or o.mtime + p >= began for o in others):
                    continue  # not the newest, or another one written since the save began
                return j, c
    return None


def _mtime_text(t: float | None) -> str | None:
    from ckpt_doctor.facts.listing import epoch_text

    return epoch_text(t) or None


def _bound_ends(attempts: list[AttemptFact], items: list[_Item], collected: str) -> None:
    """An attempt whose end is not known ended before the next one began (or before what restarted it)."""
    next_started: list[AttemptFact | None] = [None] * len(attempts)  # the first later attempt with a start
    found: AttemptFact | None = None
    for i in range(len(attempts) - 1, -1, -1):
        next_started[i] = found
        if attempts[i].started:
            found = attempts[i]
    for i, a in enumerate(attempts):
        if a.ended or a.running or a.start == "pending":
            continue
        nxt = next_started[i]
        bound = epoch(nxt.started) if nxt is not None else None
        if a.index is None or a.inferred:
            # what restarted or resumed it came before the next attempt
            t0 = epoch(a.started)
            marks = [
                it.at
                for it in items
                if it.at is not None
                and (it.kind.startswith("then:") or it.kind in ("suspended", "preempted"))
                and (bound is None or it.at <= bound)
                and (t0 is None or it.at >= t0)
            ]
            if marks:
                bound = min(marks) if bound is None else min(min(marks), bound)
                if a.end.kind == "unknown":
                    it = next(x for x in items if x.at == min(marks))
                    a.end.then = it.kind.split(":", 1)[1] if it.kind.startswith("then:") else it.kind
                    a.end.then_text = it.text
                    a.end.evidence.append(it.evidence)
        a.ended_by = rfc3339(bound)
        if not a.end.at and a.ended_by:
            a.end.at = a.ended_by


NEXT_HOW = {
    "jobset-restart": "the JobSet restarted its Jobs",
    "container-restart": "the container restarted in place",
    "pod-replaced": "a new pod replaced it",
    "resumed": "the TrainJob resumed with new pods",
}


def _then_from_next(attempts: list[AttemptFact]) -> None:
    """What followed an attempt, when nothing else said it: how the next attempt began."""
    for a, nxt in pairwise(attempts):
        if not a.end.then and nxt.how in NEXT_HOW:
            a.end.then, a.end.then_text = nxt.how, NEXT_HOW[nxt.how]


def _points(a: AttemptFact, h: History, collected: str) -> list[Point]:
    """The attempt's (time, step) series: its start, the training lines and saves its log shows, its last
    step; times from usable log timestamps, else interpolated between its start and end."""
    if a.index is None or (a.start_step is None and a.last_step is None):
        return []
    att = h.numbered(a.index)
    if att is None:
        return []
    r = _primary(att.runs)
    usable = _usable_times(r, epoch(collected))
    raw: list[tuple[float | None, int, str]] = []
    for e in r.training_progress():
        raw.append((epoch(e.time) if usable else None, e.step, "progress"))  # type: ignore[arg-type]
    for s in a.saves:
        raw.append((epoch(s.at) if usable or s.source == "listing" else None, s.step, "save"))
    t_start = epoch(a.started)
    t_end = epoch(a.ended) or (epoch(collected) if a.running else None) or epoch(a.ended_by)
    first = a.start_step if a.start_step is not None else min((s for _t, s, _k in raw), default=a.last_step)
    pts: list[Point] = []
    if first is not None:
        pts.append(Point(t_start, first, "start", False))
    for t, s, k in sorted(raw, key=lambda x: (x[1], x[2] != "save")):
        if first is not None and s < first:
            continue
        pts.append(Point(t, s, k, False))
    if a.last_step is not None:
        timed_last = max((p.t for p in pts if p.step == a.last_step and p.t is not None), default=None)
        pts.append(Point(timed_last if timed_last is not None else t_end, a.last_step, "last",
                         timed_last is None and not a.ended))  # fmt: skip
    return _interpolate(pts)


def _interpolate(pts: list[Point]) -> list[Point]:
    """Place the points without a time between their timed neighbours, linearly in the step (estimated)."""
    anchors = [(p.step, p.t) for p in pts if p.t is not None]
    if len(anchors) < 2:
        return pts
    out = []
    for p in pts:
        if p.t is not None:
            out.append(p)
            continue
        below = [(s, t) for s, t in anchors if s <= p.step]
        above = [(s, t) for s, t in anchors if s >= p.step]
        if not below or not above:
            out.append(p)
            continue
        (s0, t0), (s1, t1) = below[-1], above[0]
        t = t0 if s1 == s0 else t0 + (p.step - s0) / (s1 - s0) * (t1 - t0)  # type: ignore[operator]
        out.append(Point(t, p.step, p.kind, True))
    return out


def _gpus_for_inferred(facts: Facts, attempts: list[AttemptFact]) -> None:
    """An attempt whose pods are gone held as many accelerators per pod as the kept pods of this TrainJob."""
    kept = [a for a in attempts if a.gpus is not None and a.pods]
    if not kept:
        return
    ref = kept[-1]
    per_pod = ref.gpus / len(ref.pods) if ref.pods else None  # type: ignore[operator]
    for a in attempts:
        if a.gpus is None and a.pods and per_pod is not None:
            a.gpus = round(per_pod * len(a.pods))
            a.gpus_from = f"assumed as many per pod as {ref.label}'s pods (its own pods are gone)"


def _interruptions(attempts: list[AttemptFact], collected: str) -> list[Interruption]:
    """One pass over the attempts: the newest save so far and the last attempt that worked are carried along
    (a crash loop of hundreds of attempts stays linear)."""
    out = []
    best_save: int | None = None
    worked: int | None = None  # the latest attempt after the first that did not never-run (did_work not False)
    for j in range(1, len(attempts)):
        nxt = attempts[j]
        before = attempts[j - 1]
        if before.newest_save is not None:
            best_save = before.newest_save if best_save is None else max(best_save, before.newest_save)
        if j - 1 > 0 and before.did_work is not False:
            worked = j - 1
        # the attempt before that trained (one that never ran did no work to lose)
        i = worked if worked is not None else 0
        prev = attempts[i]
        if prev.did_work is False:
            continue
        steps, unknown = _steps_lost(prev, nxt)
        behind = best_save - nxt.start_step if best_save is not None and nxt.start_step is not None else None
        behind = behind if behind is not None and behind > 0 else (0 if behind is not None else None)
        redo = redo_from = None
        if steps is not None and prev.rate:
            redo, redo_from = steps / prev.rate, prev.rate_from
        elif steps == 0:
            redo, redo_from = 0.0, "no step lost"
        t_prev = epoch(prev.ended) or epoch(prev.ended_by)
        t_next = epoch(nxt.started)
        open_ = False
        if nxt.start == "pending":
            t_next, open_ = epoch(collected), True
        down = t_next - t_prev if t_prev is not None and t_next is not None and t_next >= t_prev else None
        if prev.ended == "" and not open_:
            down = None  # the attempt before has no known end: no honest figure
        gpu = prev.gpus * redo / 3600 if prev.gpus is not None and redo is not None else None
        out.append(
            Interruption(
                before=i,
                after=j,
                cause=prev.end.kind,
                at=prev.ended or prev.ended_by,
                from_step=prev.last_step,
                to_step=nxt.start_step,
                newest_save=best_save,
                steps_lost=steps,
                behind_save=behind,
                redo_seconds=redo,
                redo_from=redo_from or "",
                downtime_seconds=down,
                downtime_open=open_,
                gpu_hours=gpu,
                gpus=prev.gpus,
                unknown=unknown,
                label=drop_label(prev.last_step, nxt.start_step, steps, nxt.start, prev.last_step_bound),
                from_bound=prev.last_step_bound and prev.last_step is not None,
            )
        )
    return out


def _steps_lost(prev: AttemptFact, nxt: AttemptFact) -> tuple[int | None, str]:
    if nxt.start == "pending":
        return None, f"{nxt.label} has not started yet"
    if prev.last_step is None:
        gone = "their logs are gone" if prev.span > 1 else "its pods and logs are gone"
        why = gone if prev.inferred or prev.index is None else "its log shows no step"
        return None, f"how far {prev.label} got is not known ({why})"
    if nxt.resume_failed:
        return None, f"{nxt.label} failed to load step {nxt.start_step}'s checkpoint: where training goes on is unknown"
    if nxt.start_step is None:
        why = "its log does not say" if nxt.log is not None else "its log is not in the snapshot"
        return None, f"where {nxt.label} began is not known ({why})"
    return max(0, prev.last_step - nxt.start_step), ""


def drop_label(before: int | None, after: int | None, lost: int | None, start: str = "", bound: bool = False) -> str:
    """`↓ 1020 → 950, 70 steps lost` (the chart's and the table's words for one interruption); with `bound`, the
    step before is a lower bound: `↓ ≥ 1020 → 950, ≥ 70 steps lost`."""
    ge = "≥ " if bound and before is not None else ""
    a = "?" if before is None else f"{ge}{before}"
    b = "?" if after is None else str(after)
    if start == "pending":
        return f"↓ {a} → not started yet"
    if lost is None:
        return f"↓ {a} → {b}, steps lost unknown"
    if lost == 0:
        return f"{a} → {b}, no step lost" if not ge else f"{a} → {b}, 0 or more steps lost"
    return f"↓ {a} → {b}, {ge}{lost} step{'s' if lost != 1 else ''} lost"


def _notes(attempts: list[AttemptFact]) -> list[str]:
    notes = []
    est = [a.short for a in attempts if any(p.estimated for p in a.points)]
    if est:
        notes.append(
            f"times of the steps of {', '.join(est)} are interpolated between the container's start and end "
            "(their log lines have no usable timestamps)"
        )
    lost = [a for a in attempts if a.index is None or (a.inferred and not a.pods)]
    if lost:
        notes.append(f"{len(lost)} attempt(s) are known only from what restarted them: their pods and logs are gone")
    return notes
