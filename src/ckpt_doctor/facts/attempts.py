"""The attempts of a TrainJob, in time order, and what each one's logs say.

An attempt is one start of the trainer: the first run, a JobSet restart (new Jobs, label
`jobset.sigs.k8s.io/restart-attempt`), a pod replaced after suspend/resume, preemption or
eviction, or a container restarted in place (`restartCount`, `lastState`). Earlier attempts'
pods and logs are often gone; `History.earlier` still records what proves they happened.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from ckpt_doctor.facts.logs import LogEvent, LogSummary, Signature, resolve_progress, scan_log
from ckpt_doctor.scope import (
    JOBSET_NAME_LABEL,
    REPLICATED_JOB_LABEL,
    RESTART_ATTEMPT,
    TRAINER_CONTAINER,
    Scope,
    event_ev,
    event_fields,
)
from ckpt_doctor.snapshot import LogRef, Obj

COMPLETION_INDEX = "batch.kubernetes.io/job-completion-index"
# save lines a framework prints *before* it writes the checkpoint (HF Trainer logs "Saving model
# checkpoint to …" first): they count only when the run is seen going on past them
PRINTED_BEFORE_WRITE = frozenset({"hf-saving-checkpoint", "hr-saving-checkpoint"})
# lines that say a save is about to begin because of SIGTERM (the guide's `[checkpoint] SIGTERM: flushing at next step`)
ANNOUNCES_SAVE = frozenset({"ckpt-sigterm-flush"})


def is_training(e: LogEvent) -> bool:
    """A progress event of the training bar (the log reader classifies every bar)."""
    return e.bar in (None, "train")


QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
SIGTERM_EXIT = 143
SIGKILL_EXIT = 137
# torchrun's agent stops its workers with SIGTERM whenever it stops them (a worker failed, too): its
# `closing signal SIGTERM` line and its summary's `Signal 15 (SIGTERM) received by PID <worker>` do not say the
# container was sent one (recording dcp-2ranks-correct-resume: rank 1 SIGKILLed, rank 0 stopped so)
_AGENT_STOPPING_WORKERS = frozenset({"te-closing-signal-sigterm", "te-signal-received"})
# torchrun's agent as PID 1 turns its own SIGTERM into `SignalException: Process 1 got signal: 15` and exits 1
# (recording dcp-1rank-sigterm-handler: the workers had saved and returned)
_AGENT_GOT_SIGTERM = re.compile(r"\bSignalException: Process \d+ got signal: (?:15|SIGTERM)\b")
SLACK_SECONDS = 1.0  # event and container times are rounded to the second


@dataclass
class Run:
    """One container instance of a trainer pod."""

    pod: Obj
    container: str
    previous: bool
    restart_attempt: int
    instance: int  # container restart index inside the pod
    started: str = ""
    finished: str = ""
    exit_code: int | None = None
    reason: str = ""
    log: LogSummary | None = None
    log_gap: str | None = None  # why there is no readable log
    generation: int = 0
    attempt: int = 0  # index of the attempt this run belongs to
    inferred: bool = False  # the pod is gone: this run is known from a log left in the bundle
    not_started: bool = False  # the container has not run yet (waiting, never started): it has no log
    skipped: frozenset[int] = frozenset()  # steps a later run said it skipped as incomplete
    last_state: bool = False  # its end is the container's lastState (an instance before the current one)
    log_key: tuple[str, str, bool] | None = None  # the log file it wrote, when not (pod, container, previous)
    waiting: str = ""  # why a run that has not started waits: `CrashLoopBackOff: back-off 2m40s …`
    # what shows SIGTERM reached this run before it ended, whatever its exit code (`_mark_sigterm`): the
    # trainer's own line, torchrun's agent raising on signal 15, the kubelet's Killing event, the pod's
    # DisruptionTarget condition or deletion; empty when nothing shows one
    sigterm: list[dict[str, Any]] = field(default_factory=list)

    @property
    def unread(self) -> bool:
        """A run that wrote a log which cannot be read (a run that has not started wrote none)."""
        return self.log is None and not self.not_started

    @property
    def node(self) -> str:
        return str(self.pod.spec.get("nodeName") or "")

    @property
    def label(self) -> str:
        return f"{self.pod.name}/{self.container}{' (previous)' if self.previous else ''}"

    @property
    def terminated_path(self) -> str:
        """Where the pod's status says how this run's container ended (evidence paths quote it)."""
        return f"status.containerStatuses[name={self.container}].{'lastState' if self.previous else 'state'}.terminated"

    def sort_key(self) -> tuple[Any, ...]:
        return (self.restart_attempt, self.started or self.pod.created, self.instance)

    # -- what the log says about how this run began and ended -------------------------------
    def start(self) -> tuple[str, int | None, LogEvent | None]:
        """('resumed', step, event) | ('fresh', 0, event) | ('unknown', None, None)."""
        cached = self.__dict__.get("_start")
        if cached is None:
            cached = self.__dict__["_start"] = self._start()
        return cached

    def _start(self) -> tuple[str, int | None, LogEvent | None]:
        if self.log is None:
            return ("unknown", None, None)
        explicit = self.log.first("resumed", "fresh_start")
        if explicit is not None:
            if explicit.kind == "fresh_start":
                return ("fresh", 0, explicit)
            resumed = [e for e in self.log.of("resumed") if e.step is not None]
            step = max((e.step for e in resumed if e.step is not None), default=None)
            if step is not None and step > 0:
                best = next(e for e in resumed if e.step == step)
                return ("resumed", step, best)
            if step == 0:  # loading base weights at iteration 0 is a fresh start
                return ("fresh", 0, next(e for e in resumed if e.step == 0))
            if explicit.path:
                return ("resumed", None, explicit)
        if self.log.first("overwrite_output") is not None:
            return ("fresh", 0, self.log.first("overwrite_output"))
        return self._start_from_progress()

    def _start_from_progress(self) -> tuple[str, int | None, LogEvent | None]:
        """How the run began, from where its training bar starts (only the head of the log says).

        A bar first drawn past step 1 was restored: resumed from there. A bar at 0 or 1 that then
        moves on a step at a time is a fresh start. A bar drawn at 0/N and then jumping far is
        ambiguous: tqdm draws a resumed bar at 0 before it moves it to the restored step, and a fast
        fresh run skips counts between redraws, so that case stays unknown. Only bars redrawn at every update
        count (tqdm): a loop's every-N-steps line, Lightning's `max_steps reached` and a bar rich draws once at
        the end without a TTY show where a run got to, not where it began.
        """
        head = [e for e in self.training_progress() if e.window == "head" and e.redrawn]
        if not head:
            return ("unknown", None, None)
        first = head[0]
        assert first.step is not None
        if first.step > 1:
            return ("resumed", first.step, first)
        later = [e for e in head[1:] if e.step is not None and e.step > first.step]
        if not later or later[0].step - first.step <= 2:  # type: ignore[operator]
            return ("fresh", 0, first)
        return ("unknown", None, None)

    def training_progress(self) -> list[LogEvent]:
        """Progress lines of the *training* bar with a step (not loading shards, mapping, evaluation)."""
        if self.log is None:
            return []
        return [e for e in self.log.of("progress") if is_training(e) and e.step is not None]

    def first_training_progress(self) -> LogEvent | None:
        got = self.training_progress()
        return got[0] if got else None

    def saves(self) -> list[LogEvent]:
        """Saves that completed (contracts.md §6: a save that died half-way is not a saved step)."""
        cached = self.__dict__.get("_saves")
        if cached is None:
            cached = self.__dict__["_saves"] = [e for e, ok in self.save_outcomes() if ok]
        return cached

    def died_saves(self) -> list[LogEvent]:
        """Saves this run started and never completed: an error or a kill came first."""
        return [e for e, ok in self.save_outcomes() if not ok]

    def save_outcomes(self) -> list[tuple[LogEvent, bool]]:
        """Every save this run logged, with whether it completed.

        A save line printed after the write (`[checkpoint] saved …`, Megatron's `successfully saved`)
        completes it. One printed before the write (`save_started`, and HF's `Saving model checkpoint
        to`, which HF logs first) completes when the run is seen going on past it (more progress, a
        later save, the completion line, the end of training); an error or a kill first means it died.
        """
        if self.log is None:
            return []
        cached = self.__dict__.get("_save_outcomes")
        if cached is not None:
            return cached
        events = self.log.events
        out: list[tuple[LogEvent, bool]] = []
        for i, e in enumerate(events):
            if e.kind not in ("saved", "sigterm_flush", "save_started") or e.step is None:
                continue
            before_write = e.kind == "save_started" or e.signature in PRINTED_BEFORE_WRITE
            if before_write:
                if e.kind == "save_started" and any(x.kind == "saved" and x.step == e.step for x in events[i + 1 :]):
                    continue  # its completion line is counted instead
                ok = self._went_on(events, i)
            else:
                ok = not self._failed_while_saving(events, i)
            out.append((e, ok and e.step not in self.skipped))
        self.__dict__["_save_outcomes"] = out
        return out

    def _went_on(self, events: list[LogEvent], i: int) -> bool:
        e = events[i]
        for x in events[i + 1 :]:
            if x.kind in ("saved", "sigterm_flush") and x.step == e.step and x.signature not in PRINTED_BEFORE_WRITE:
                return True  # its completion line: what comes after it is no longer this save's business
            if x.kind in ("error", "save_failed", "oom", "disk_full"):
                return False
            if x.kind == "progress" and x.step is not None and e.step is not None and x.step > e.step:
                return True
            if x.kind in ("saved", "save_started", "finished", "sigterm_flush") and x.step != e.step:
                return True
            if x.kind == "finished":
                return True
        # nothing after it: complete unless the run then ended by an error or a kill; a program that exited 0 on its
        # own after SIGTERM finished the save it announced (recordings lightning-*-sigterm-handler)
        killed = self.exit_code in (SIGTERM_EXIT, SIGKILL_EXIT) or self.reason in ("Evicted", "Preempted")
        return not (killed or self.exit_code not in (None, 0))

    def _failed_while_saving(self, events: list[LogEvent], i: int) -> bool:
        """A completion line followed at once by the program's own save error (`save_failed`)."""
        e = events[i]
        return any(x.kind == "save_failed" and x.step in (None, e.step) for x in events[i + 1 : i + 3])

    def save_times(self, sigterm_at: float | None = None) -> list[SaveTime]:
        """How long this run's saves took, as far as its typed save events show: a save's start line to its
        completion line when both carry a timestamp (`kubectl logs --timestamps`, a logger's clock); and a save
        begun after SIGTERM that SIGKILL cut short took longer than the time it had (from SIGTERM, at
        `sigterm_at` in epoch seconds or the run's own timestamped SIGTERM line, to the container's end)."""
        if self.log is None:
            return []
        events = self.log.events
        out: list[SaveTime] = []
        sig = next((e for e in events if e.kind in ("sigterm", "sigterm_flush")), None)
        t_sig = sigterm_at if sigterm_at is not None else (_epoch(sig.time or "") if sig is not None else None)
        for i, e in enumerate(events):
            starts = e.kind == "save_started" or e.signature in PRINTED_BEFORE_WRITE or e.signature in ANNOUNCES_SAVE
            if not starts:
                continue
            done = next((x for x in events[i + 1 :] if x.kind in ("saved", "sigterm_flush") and x.step == e.step
                         and x.signature not in PRINTED_BEFORE_WRITE and x is not e), None)  # fmt: skip
            if done is not None:
                secs = _duration(e, done)
                if secs is not None:
                    out.append(SaveTime(e.step, secs, "timestamps", False, e, done))
                continue
            cut = self.exit_code == SIGKILL_EXIT and bool(self.sigterm) and (sig is None or _before(sig, e) or e is sig)
            t0 = max(t for t in (_epoch(e.time or ""), t_sig) if t is not None) if (e.time or t_sig) else None
            t_end = _epoch(self.finished)
            if cut and t0 is not None and t_end is not None and t_end > t0 and not self.saves_after(e):
                out.append(SaveTime(e.step, t_end - t0, "cut by SIGKILL", True, e, None))
                break  # one save was running when the kill came
        return out

    def saves_after(self, e: LogEvent) -> bool:
        """A save completed after line `e` (so what `e` began was not cut short)."""
        return any(_before(e, x) for x in self.saves())

    def max_saved(self) -> int | None:
        return max((e.step for e in self.saves() if e.step is not None), default=None)

    def last_step(self) -> int | None:
        """The highest training step this run is seen at (None when no line shows one: never 0)."""
        if self.log is None:
            return None
        steps = [e.step for e in self.log.of("progress") if e.step is not None and is_training(e)]
        steps += [e.step for e in self.saves() if e.step is not None]
        return max(steps, default=None)

    def last_step_event(self) -> LogEvent | None:
        """The line that shows `last_step()`: the last training-progress line or completed save."""
        seen = [e for e in (*self.training_progress(), *self.saves()) if e.step == self.last_step()]
        return max(seen, key=lambda e: (e.window == "tail", e.offset), default=None)

    def ended_by_signal(self) -> bool:
        """It was stopped from outside: killed by a signal (143, 137), evicted or preempted, or sent SIGTERM
        and then exited on its own (exit 0 after a save-on-SIGTERM handler, torchrun's exit 1)."""
        return (
            self.exit_code in (SIGTERM_EXIT, SIGKILL_EXIT)
            or self.reason in ("Evicted", "Preempted")
            or (bool(self.sigterm) and self.exit_code is not None)
        )

    @property
    def exited_after_sigterm(self) -> bool:
        """It was stopped by SIGTERM and exited with a code of its own (0, 1: not the signal's 143/137).

        For exit 0 the kubelet's word alone is not enough: a trainer that is PID 1 with no handler ignores
        SIGTERM and may finish within the grace period (recordings accelerate-1.15-sigterm-*,
        orbax-0.12-sigterm-no-handler); its own line saying it got the signal, or a log that stops short of the
        total it announced, shows the signal stopped it."""
        if not self.sigterm or self.exit_code in (None, SIGTERM_EXIT, SIGKILL_EXIT):
            return False
        if self.exit_code != 0:
            return True
        if any(e.get("type") == "log" for e in self.sigterm):
            return True
        total = training_total(self.log)
        last = self.last_step()
        return total is not None and last is not None and last < total


@dataclass
class SaveTime:
    """How long one save took, from the log: `seconds` exactly (timestamped lines), or at least (a final save
    still running when SIGKILL came)."""

    step: int | None
    seconds: float
    how: str  # "timestamps" | "cut by SIGKILL"
    at_least: bool
    start: LogEvent
    end: LogEvent | None  # the line that shows it done; None when it never was


def _duration(start: LogEvent, end: LogEvent) -> float | None:
    """Seconds from a save's start line to the line that shows it done, when both carry a timestamp."""
    t0, t1 = _epoch(start.time or ""), _epoch(end.time or "")
    return t1 - t0 if t0 is not None and t1 is not None and t1 >= t0 else None


@dataclass
class Attempt:
    index: int
    runs: list[Run]
    how: str  # initial | jobset-restart | container-restart | pod-replaced | resumed

    @property
    def started(self) -> str:
        return min((r.started or r.pod.created for r in self.runs if not r.waiting), default="")


@dataclass
class History:
    attempts: list[Attempt] = field(default_factory=list)
    earlier: list[dict[str, Any]] = field(default_factory=list)  # proof an earlier attempt existed
    interruptions: list[dict[str, Any]] = field(default_factory=list)  # suspend/preempt/evict proof
    jobset_restarts: int = 0
    unseen: list[str] = field(default_factory=list)  # attempts known to have happened, with no pod and no log
    # attempts that may have happened before the first one seen, with nothing to tell (a resume with no trace of
    # a run before it): the rules that need them are not_evaluated, the timeline says so
    doubt: list[str] = field(default_factory=list)
    # container instances known only from a restartCount: (index of the first, how many, what they were)
    lost_instances: list[tuple[int, int, str]] = field(default_factory=list)
    crash_loop: str = ""  # a trainer container waiting to restart after crashing again and again: what shows it

    def unread(self) -> list[str]:
        """Why some attempt's log cannot be read: its run's log gap, or an attempt whose pods are gone."""
        return sorted({r.log_gap for r in self.runs if r.unread and r.log_gap}) + self.unseen

    @property
    def runs(self) -> list[Run]:
        return [r for a in self.attempts for r in a.runs]

    def attempt(self, number: int) -> Attempt:
        got = self.numbered(number)
        if got is None:
            raise StopIteration(number)
        return got

    def numbered(self, number: int) -> Attempt | None:
        """The attempt numbered `number`, or None: one dict lookup (the attempts indexed by number once)."""
        idx = self.__dict__.get("_by_number")
        if idx is None or idx[0] != len(self.attempts):
            by: dict[int, Attempt] = {}
            for a in self.attempts:
                by.setdefault(a.index, a)
            idx = self.__dict__["_by_number"] = (len(self.attempts), by)
        return idx[1].get(number)

    def next_attempt(self, number: int) -> Attempt | None:
        """The attempt after attempt `number` (numbered `number + 1`), or None."""
        return self.numbered(number + 1)

    def later_attempts(self) -> list[Attempt]:
        """Attempts that are not the very first start of the TrainJob."""
        later = {id(r) for r in self.later_runs()}
        return [a for a in self.attempts if any(id(r) in later for r in a.runs)]

    def attempt_start(self, a: Attempt) -> tuple[str, int | None, Run | None, LogEvent | None]:
        """How attempt `a` began, from all its runs: 'fresh' when any run started at step 0, else
        'resumed' (the step its runs agree on, the highest when they do not), 'pending' when none of
        its containers has started yet, else 'unknown'.
        In a multi-node attempt often only rank 0 prints how it began.

        Computed once per attempt (it walks the attempt's runs): the rules ask it once per run of the attempt
        before, which made a walk of every run per run, quadratic in pods."""
        cached = a.__dict__.get("_start")
        if cached is None or cached[0] != len(a.runs):
            cached = a.__dict__["_start"] = (len(a.runs), self._attempt_start(a))
        return cached[1]

    @staticmethod
    def _attempt_start(a: Attempt) -> tuple[str, int | None, Run | None, LogEvent | None]:
        if a.runs and all(r.not_started for r in a.runs):
            return "pending", None, a.runs[0], None
        starts = [(r, r.start()) for r in a.runs]
        fresh = [(r, st) for r, st in starts if st[0] == "fresh"]
        if fresh:
            r, (_k, _s, ev) = fresh[0]
            return "fresh", 0, r, ev
        resumed = [(r, st) for r, st in starts if st[0] == "resumed"]
        if resumed:
            r, (_k, step, ev) = max(resumed, key=lambda x: x[1][1] or 0)
            return "resumed", step, r, ev
        return "unknown", None, None, None

    def later_runs(self) -> list[Run]:
        """Runs that are not part of the very first start of the TrainJob."""
        if not self.attempts:
            return []
        first_is_initial = self.attempts[0].how == "initial" and not self._first_attempt_lost()
        start = 1 if first_is_initial else 0
        return [r for a in self.attempts[start:] for r in a.runs]

    def _first_attempt_lost(self) -> bool:
        """Pods of the first attempt are gone, but evidence says it happened."""
        if not self.attempts:
            return bool(self.earlier)
        return self._lost_before(self.attempts[0].runs)

    def _lost_before(self, first: list[Run]) -> bool:
        if any(r.restart_attempt > 0 for r in first):
            return True
        return bool(self.interruptions) and all(
            _after(r.pod.created, i.get("time", "")) for r in first for i in self.interruptions if i.get("time")
        )


def _after(a: str, b: str) -> bool:
    """`a` (a pod's creation) is not before `b` (a suspend, eviction or resume). Times are whole seconds: a pod
    created in the second of a resume was made by it (a suspend or an eviction deletes the pods before it)."""
    return bool(a and b and a >= b)  # RFC 3339 UTC timestamps compare as text


def _container_status(pod: Obj, name: str) -> dict[str, Any]:
    for cs in pod.status.get("containerStatuses") or []:
        if isinstance(cs, dict) and cs.get("name") == name:
            return cs
    return {}


def _terminated(state: Any) -> dict[str, Any]:
    if isinstance(state, dict):
        t = state.get("terminated")
        if isinstance(t, dict):
            return t
    return {}


def _int(v: Any, default: int = 0) -> int:
    try:
        return int(v)
    except (TypeError, ValueError):
        return default


def _never_ran(pod: Obj, cs: dict[str, Any]) -> bool:
    """The container has not started yet: the pod is Pending, or its container is still waiting with no
    earlier instance (a pod stuck on its volume, an image pull). Such a run has written no log."""
    state = cs.get("state") if isinstance(cs.get("state"), dict) else {}
    if state.get("running") or state.get("terminated") or _int(cs.get("restartCount")) > 0:
        return False
    return bool(state.get("waiting")) or (not cs and pod.status.get("phase") == "Pending")


def trainer_container_name(pod: Obj) -> str:
    names = [c.get("name") for c in pod.spec.get("containers") or [] if isinstance(c, dict)]
    if TRAINER_CONTAINER in names or not names:
        return TRAINER_CONTAINER
    return str(names[0])


def _log_gap(scope: Scope, pod: Obj, container: str, previous: bool) -> str:
    gap = scope.snap.gap_for(
        f"logs/{pod.name}/{container}{'.previous' if previous else ''}", f"logs/{pod.name}", "logs"
    )
    if gap is not None:
        return gap.reason
    return f"{'previous ' if previous else ''}log of {pod.name}/{container} not in the snapshot"


def build_history(
    scope: Scope, sigs: list[Signature], log_cache: dict[LogRef, LogSummary] | None = None, program: Any = None
) -> History:
    """`program`: the trainer's program as its code shows it (facts/program), which says what a framework's
    progress bar counts (`resolve_progress`); None when it is not read."""
    h = History()
    cache = log_cache if log_cache is not None else {}

    def summary(ref: LogRef) -> LogSummary:
        if ref not in cache:
            cache[ref] = scan_log(ref, sigs)
            resolve_progress(cache[ref], program)
        return cache[ref]

    runs: list[Run] = []
    for pod in scope.trainer_pods():
        runs += _runs_of_pod(scope, pod, h)
    runs += _runs_of_deleted_pods(scope, runs)
    for r in runs:
        if r.waiting:  # waiting to start again: the log files are the ended instance's (kubelet serves that one)
            continue
        ref = scope.snap.logs.get(r.log_key or (r.pod.name, r.container, r.previous))
        if ref is None:
            if r.not_started:
                continue
            r.log_gap = _log_gap(scope, r.pod, r.container, r.previous)
            continue
        s = summary(ref)
        if s.binary:
            r.log_gap = f"log of {r.label} is binary, not text"
        elif s.empty:
            r.log_gap = f"log of {r.label} is empty (rotated or not yet written)"
        else:
            r.log = s
    _place_deleted(runs)
    _add_structural_evidence(scope, h, runs)
    _group(h, runs)
    _mark_sigterm(scope, runs)
    _mark_skipped(runs)
    h.unseen = _unseen_attempts(h, runs)
    return h


def _mark_sigterm(scope: Scope, runs: list[Run]) -> None:
    """Say for each run what shows SIGTERM reached it before it ended (`Run.sigterm`): a trainer that handles
    SIGTERM often exits 0 (a save-on-SIGTERM callback stops training; Lightning stops on it) and torchrun's
    agent exits 1, so the exit code alone calls the stop a completion or a crash (recordings
    `*-sigterm-handler`, `dcp-1rank-sigterm-*`)."""
    kills: dict[str, list[dict[str, Any]]] = {}
    for ev in scope.events:
        f = event_fields(ev)
        if f["involvedKind"] == "Pod" and f["reason"] == "Killing":
            kills.setdefault(f["involvedName"], []).append(f)
    for r in runs:
        if r.not_started:
            continue
        r.sigterm = _sigterm_evidence(r, kills.get(r.pod.name, []))


def _sigterm_evidence(r: Run, kills: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    if r.log is not None:
        got = _log_sigterm(r.log)
        if got is not None:
            out.append(got.evidence(r.log.ref, r.attempt))
    t0, t1 = _epoch(r.started), _epoch(r.finished)
    for f in kills:
        t = _epoch(f["lastTimestamp"])
        if t is None or (t0 is not None and t < t0 - SLACK_SECONDS) or (t1 is not None and t > t1 + SLACK_SECONDS):
            continue  # the kubelet stopped another instance of the container, or the pod after this run ended
        if t1 is None and r.exit_code is None:
            continue
        out.append(event_ev(f))
        break
    if not (r.previous or r.last_state or r.inferred):  # the pod's own state speaks of its current instance
        for c in r.pod.conditions():
            if c.get("type") == "DisruptionTarget" and str(c.get("status")) == "True":
                out.append({"type": "condition", "object": r.pod.ref(), "conditionType": "DisruptionTarget",
                            "status": "True", "reason": c.get("reason", ""),
                            "message": c.get("message", "")})  # fmt: skip
                break
    return out


def _log_sigterm(log: LogSummary) -> LogEvent | None:
    """The first line that shows the process was sent SIGTERM, unless the log shows training had already reached
    its end before it (a SIGTERM after the work is done does not stop it)."""
    hit = None
    for e in log.events:
        if e.kind in ("sigterm", "sigterm_flush") and e.signature not in _AGENT_STOPPING_WORKERS:
            hit = e
            break
        if e.kind == "error" and _AGENT_GOT_SIGTERM.search(e.text):
            hit = e
            break
    if hit is None:
        return None
    for x in log.of("progress"):
        if not _before(x, hit):
            continue
        total = log.total_steps or x.total
        if is_training(x) and x.step is not None and total and x.step >= total:
            return None
    return hit


def _before(a: LogEvent, b: LogEvent) -> bool:
    """`a` comes before `b` in the log: by line when both have one (a short log's windows overlap), else by
    window and offset."""
    if a.line is not None and b.line is not None:
        return a.line < b.line or (a.line == b.line and a.window == b.window and a.offset < b.offset)
    return (a.window == "tail", a.offset) < (b.window == "tail", b.offset)


def training_total(log: LogSummary | None) -> int | None:
    """The steps training was set to run, as the log says it: the total it announced (HF's `Total optimization
    steps = N`), else its training bar's total (`25/40`)."""
    if log is None:
        return None
    if log.total_steps:
        return log.total_steps
    totals = [e.total for e in log.of("progress") if is_training(e) and e.total]
    return max(totals) if totals else None


def _epoch(s: str) -> float | None:
    from datetime import UTC, datetime

    if not s:
        return None
    try:
        dt = datetime.fromisoformat(s.replace("Z", "+00:00"))
    except ValueError:
        return None
    return (dt if dt.tzinfo else dt.replace(tzinfo=UTC)).timestamp()


def _status_int(v: Any) -> int | None:
    """A count from a status field; None when it is missing or not a number (unknown, not 0)."""
    if isinstance(v, bool):
        return None
    if isinstance(v, int):
        return v
    return int(v) if isinstance(v, str) and v.isdigit() else None


def _runs_of_pod(scope: Scope, pod: Obj, h: History) -> list[Run]:
    """The container instances of one trainer pod that the snapshot shows, from its status and its logs.

    The current instance, and the one before it (`lastState`, `--previous`) when the restart counter says there
    was one or the bundle keeps its log: a kept previous log proves an earlier instance even when the pod's status
    is missing or says nothing. A container waiting again after a crash (CrashLoopBackOff) has not started its
    next instance: the kubelet serves the instance that ended as both its current and its previous log. Instances
    older than the previous one are known only from the counter (`History.lost_instances`)."""
    cname = trainer_container_name(pod)
    ra = _int(pod.labels.get(RESTART_ATTEMPT, pod.annotations.get(RESTART_ATTEMPT)))
    cs = _container_status(pod, cname)
    logs = scope.snap.logs
    prev_key, cur_key = (pod.name, cname, True), (pod.name, cname, False)
    counted = _status_int(cs.get("restartCount"))
    restarts = counted or 0
    kept_previous = prev_key in logs
    if counted is None and (kept_previous or not _never_ran(pod, cs)):
        # no restart counter: the instances before the one shown (or before its kept previous log) are unknown
        h.doubt.append(f"pod {pod.name}: its status shows no restartCount for container {cname}, so whether (and "
                       "how often) it restarted before is unknown")  # fmt: skip
    if restarts == 0 and kept_previous:
        restarts = 1  # at least one instance ran before this one: its log is here
        first = _first_line(logs[prev_key])
        h.earlier.append({"type": "log", "pod": pod.name, "container": cname, "previous": True, "line": 1,
                          "text": first})  # fmt: skip
    elif restarts > 0:
        h.earlier.append({"type": "field", "object": pod.ref(), "value": restarts,
                          "path": f"status.containerStatuses[name={cname}].restartCount"})  # fmt: skip
    if ra >= 1:
        h.earlier.append(
            {"type": "field", "object": pod.ref(), "path": f"metadata.labels[{RESTART_ATTEMPT}]", "value": str(ra)}
        )
    state = cs.get("state") if isinstance(cs.get("state"), dict) else {}
    term = _terminated(state)
    running = state.get("running") if isinstance(state.get("running"), dict) else {}
    waiting = state.get("waiting") if isinstance(state.get("waiting"), dict) else None
    last = _terminated(cs.get("lastState"))
    out: list[Run] = []
    if restarts > 0:
        backoff = waiting is not None and not kept_previous and cur_key in logs
        out.append(
            Run(pod, cname, not backoff, ra, restarts - 1, started=str(last.get("startedAt") or ""),
                finished=str(last.get("finishedAt") or ""), exit_code=last.get("exitCode"),
                reason=str(last.get("reason") or ""), last_state=True, log_key=cur_key if backoff else None)
        )  # fmt: skip
    if waiting is not None and restarts > 0:
        why = str(waiting.get("reason") or "waiting")
        msg = str(waiting.get("message") or "").strip()
        out.append(Run(pod, cname, False, ra, restarts, not_started=True, waiting=why + (f": {msg}" if msg else "")))
        if why == "CrashLoopBackOff" and not h.crash_loop:
            h.crash_loop = f"pod {pod.name}: container {cname} waits in CrashLoopBackOff after {restarts} restart(s)"
    else:
        out.append(
            Run(pod, cname, False, ra, restarts,
                started=str(running.get("startedAt") or term.get("startedAt") or ("" if restarts else pod.created)),
                finished=str(term.get("finishedAt") or ""), exit_code=term.get("exitCode"),
                reason=str(term.get("reason") or pod.status.get("reason") or ""), not_started=_never_ran(pod, cs))
        )  # fmt: skip
    return out


def _first_line(ref: LogRef) -> str:
    try:
        head = ref.read_head(4096)
    except OSError:
        return ""
    return head.decode("utf-8", "replace").splitlines()[0].strip()[:200] if head else ""


def _mark_skipped(runs: list[Run]) -> None:
    """A run that says it skipped an incomplete checkpoint (`skipping incomplete checkpoint-300`), or that found
    the checkpoint it loads incomplete (`…/checkpoint-300/trainer_state.json` missing, a truncated archive: the
    one it resumed from when the line names none), proves that the earlier runs' save of that step died half-way:
    it does not count as a saved step.

    Earlier runs: those of earlier attempts, and the previous instances of the same attempt's other runs. The
    steps are gathered per attempt first, so every rank printing the line costs one walk, not one per rank."""
    said: dict[int, set[int]] = {}  # id(run) -> the steps it skipped
    for r in runs:
        if r.log is None:
            continue
        steps = set()
        for e in r.log.of("save_skipped") + r.log.of("partial_checkpoint"):
            step = e.step
            if step is None and e.path:
                m = re.search(r"(?:checkpoint|ckpt|step|iter)[-_]?0*(\d+)", e.path)
                step = int(m.group(1)) if m else None
            if step is None and e.kind == "partial_checkpoint":
                kind, began, _ev = r.start()
                step = began if kind == "resumed" else None
            if step is not None:
                steps.add(step)
        if steps:
            said[id(r)] = steps
    if not said:
        return
    per_attempt: dict[int, dict[int, int]] = {}  # attempt -> step -> how many of its runs skipped it
    for r in runs:
        for step in said.get(id(r), ()):
            counts = per_attempt.setdefault(r.attempt, {})
            counts[step] = counts.get(step, 0) + 1
    later: dict[int, frozenset[int]] = {}  # attempt -> the steps any later attempt skipped
    acc: set[int] = set()
    attempts = sorted({r.attempt for r in runs} | set(per_attempt), reverse=True)
    for a in attempts:
        later[a] = frozenset(acc)
        acc |= set(per_attempt.get(a, {}))
    for x in runs:
        steps = set(later.get(x.attempt, ()))
        if x.previous:
            own = said.get(id(x), set())
            for step, n in per_attempt.get(x.attempt, {}).items():
                if n - (step in own) > 0:
                    steps.add(step)
        if steps:
            x.skipped = x.skipped | frozenset(steps)
            x.__dict__.pop("_saves", None)
            x.__dict__.pop("_save_outcomes", None)


def _pod_shape(scope: Scope) -> re.Pattern[str] | None:
    """The names the JobSet gives this TrainJob's trainer pods: `<trainjob>-<replicated job>-<job index>-
    <completion index>-<suffix>`."""
    tj = scope.trainjob
    if tj is None:
        return None
    rjobs = "|".join(re.escape(n) for n in sorted(scope.trainer_job_names()))
    return re.compile(rf"^{re.escape(tj.name)}-(?P<rjob>{rjobs})-(?P<job>\d+)-(?P<idx>\d+)-[a-z0-9]{{5}}$")


def _runs_of_deleted_pods(scope: Scope, kept: list[Run]) -> list[Run]:
    """Runs known from logs left in the bundle for trainer pods that are no longer in it.

    A JobSet restart or a suspend deletes the pods, but a recorder or an engineer may have kept
    their logs (`logs/<pod>/…`). A log belongs to this TrainJob when its pod name has the shape
    JobSet pods have, `<trainjob>-<replicated job>-<job index>-<completion index>-<suffix>`.
    """
    tj = scope.trainjob
    shape = _pod_shape(scope)
    if tj is None or shape is None:
        return []
    names = {r.pod.name for r in kept} | {p.name for p in scope.pods}
    out: list[Run] = []
    with_trainer = {k[0] for k in scope.snap.logs if k[1] == TRAINER_CONTAINER}
    for (pod, container, previous), _ref in sorted(scope.snap.logs.items(), key=lambda kv: kv[0]):
        m = shape.match(pod)
        if m is None or pod in names:
            continue
        if container != TRAINER_CONTAINER and pod in with_trainer:
            continue
        labels = {
            JOBSET_NAME_LABEL: tj.name,
            REPLICATED_JOB_LABEL: m.group("rjob"),
            COMPLETION_INDEX: m.group("idx"),
        }
        raw = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": pod, "namespace": tj.namespace, "labels": labels},
            "spec": {"containers": [{"name": container}]},
        }
        out.append(Run(Obj(raw), container, previous, -1, 0, inferred=True))
    return out


def _deleted_order(r: Run) -> tuple[str, int, int, str, bool]:
    """When the deleted pods' logs came: by their first time stamp; without one, by what they say
    (a fresh start before any resume, a resume from a lower step before one from a higher step,
    since steps only grow across attempts), and only then by name (which is random)."""
    kind, step, _ = r.start()
    rank = {"fresh": 0, "resumed": 1}.get(kind, 2)
    return (r.started or "", rank, step if isinstance(step, int) else 1 << 62, r.pod.name, r.previous)


def _place_deleted(runs: list[Run]) -> None:
    """Give the runs of deleted pods a restart attempt: they came before the pods that are kept.

    The k-th deleted run (in the time order of their logs, else by name) of each completion index
    goes to the k-th slot before the oldest kept attempt: a deleted pod was replaced by a newer one.
    """
    deleted = [r for r in runs if r.inferred]
    if not deleted:
        return
    for r in deleted:
        first = getattr(r.log, "first_time", None) if r.log is not None else None
        r.started = str(first or "")
    kept = [r for r in runs if not r.inferred]
    oldest = min((r.restart_attempt for r in kept), default=0)
    slots: dict[str, int] = {}
    order = sorted(deleted, key=_deleted_order)
    slot_of: dict[int, int] = {}
    for r in order:
        idx = r.pod.labels.get(COMPLETION_INDEX, "0")
        slot_of[id(r)] = slots.get(idx, 0)
        slots[idx] = slots.get(idx, 0) + 1
    depth = max(slots.values())
    for r in deleted:
        if oldest >= depth:  # room below the kept attempts: one restart attempt per slot
            r.restart_attempt = oldest - depth + slot_of[id(r)]
        else:
            # more deleted generations than attempts below the kept ones: the earliest fill the
            # attempts that must have come first (0 … oldest-1), the later ones are earlier pod
            # generations of the oldest kept attempt (a suspend/resume replaces pods, not attempts)
            r.restart_attempt = min(slot_of[id(r)], oldest)


def _unseen_attempts(h: History, runs: list[Run]) -> list[str]:
    """Attempts that happened (restart-attempt labels, JobSet restarts, a resume) but left no run here."""
    seen_ra = {r.restart_attempt for r in runs}
    top = max([*seen_ra, h.jobset_restarts], default=0)
    out = [
        f"attempt {ra} (restart-attempt {ra}): its pods and logs are gone"
        for ra in range(0, top + 1)
        if ra not in seen_ra
    ]
    if not out and h._first_attempt_lost() and not any(r.inferred for r in runs):
        out.append("the attempt before the suspend or preemption: its pods and logs are gone")
    for first, n, why in h.lost_instances:
        which = f"attempt {first}" if n == 1 else f"attempts {first}-{first + n - 1}"
        out.append(f"{which} ({why})")
    return out + h.doubt


def _add_structural_evidence(scope: Scope, h: History, runs: list[Run]) -> None:
    js = scope.jobset
    if js is not None:
        h.jobset_restarts = _int(js.status.get("restarts"))
        if h.jobset_restarts >= 1:
            h.earlier.append(
                {"type": "field", "object": js.ref(), "path": "status.restarts", "value": h.jobset_restarts}
            )
    tj = scope.trainjob
    preempted = False
    for w in scope.workloads:
        for c in w.conditions():
            if c.get("type") in ("Evicted", "Preempted", "Requeued") and c.get("status") == "True":
                preempted = True
                item = {
                    "type": "condition",
                    "object": w.ref(),
                    "conditionType": c.get("type"),
                    "status": "True",
                    "reason": c.get("reason", ""),
                    "message": c.get("message", ""),
                    "time": c.get("lastTransitionTime", ""),
                }
                h.earlier.append(_strip_time(item))
                h.interruptions.append(item)
    if tj is not None:
        cond = tj.condition("Suspended")
        if cond is not None and cond.get("reason") == "Resumed":
            _judge_resume(scope, h, runs, cond, preempted)
    for ev in scope.events:
        f = event_fields(ev)
        if f["reason"] in ("RestartJobSetFailurePolicyAction", "Preempted", "Evicted", "SuspendedJobs"):
            item = {**event_ev(f), "time": f["lastTimestamp"]}
            if f["reason"] == "SuspendedJobs":
                # a JobSet suspended at creation (Kueue, staged jobs) says so too: an interruption only after a run
                proof = _ran_before(scope, runs, f["lastTimestamp"])
                if not proof:
                    continue
                h.earlier += [_strip_time(item), *proof[:1]]
                h.interruptions.append(item)
                continue
            h.earlier.append(_strip_time(item))
            if f["reason"] != "RestartJobSetFailurePolicyAction":
                h.interruptions.append(item)
    for p in scope.pods:
        if p.status.get("reason") == "Evicted":
            item = {"type": "field", "object": p.ref(), "path": "status.reason", "value": "Evicted"}
            h.interruptions.append(item)


# events that show a trainer pod existed (was created, scheduled, started, stopped) at their time
_POD_RAN = frozenset({
    "Scheduled", "Pulling", "Pulled", "Created", "Started", "Killing", "BackOff", "Preempting", "Evicted", "Preempted",
    "FailedMount", "FailedAttachVolume", "SuccessfulAttachVolume",
})  # fmt: skip
_JOB_RAN = frozenset({"SuccessfulCreate", "SuccessfulDelete"})  # the Job controller made or removed a pod


def _ran_before(scope: Scope, runs: list[Run], when: str) -> list[dict[str, Any]]:
    """Evidence that a trainer pod of this TrainJob existed before `when` (RFC 3339): a pod created or a run
    started before it, a kept log of a pod that is gone, an event of a trainer pod or Job dated before it.
    Empty when nothing in the snapshot shows one (which is not proof that nothing ran)."""
    out: list[dict[str, Any]] = []
    if not when:
        return [_log_ev_of(r) for r in runs if r.inferred and r.log is not None][:1]
    for r in runs:
        t = r.started if r.inferred else (r.pod.created or r.started)
        if r.inferred and not t and r.log is not None:
            out.append(_log_ev_of(r))  # a pod that is gone, its time unknown: it ran, most likely before
        elif t and t < when:
            if r.inferred:
                out.append(_log_ev_of(r))
            else:
                out.append({"type": "field", "object": r.pod.ref(), "path": "metadata.creationTimestamp",
                            "value": r.pod.created or r.started})  # fmt: skip
        if out:
            return out
    pods = {p.name for p in scope.trainer_pods()}
    jobs = {j.name for j in scope.jobs}
    shape = _pod_shape(scope)
    for ev in scope.snap.of_kind("Event"):
        f = event_fields(ev)
        first = str(ev.raw.get("firstTimestamp") or ev.raw.get("eventTime") or f["lastTimestamp"] or "")
        if not first or first >= when:
            continue
        kind, name = f["involvedKind"], f["involvedName"]
        ns = f["object"].split("/")[1] if f["object"].count("/") >= 2 else ""
        if scope.namespace and ns and ns != scope.namespace:
            continue
        mine_pod = kind == "Pod" and (name in pods or (shape is not None and shape.match(name) is not None))
        if (mine_pod and f["reason"] in _POD_RAN) or (kind == "Job" and name in jobs and f["reason"] in _JOB_RAN):
            out.append(event_ev(f))
            return out
    return out


def _log_ev_of(r: Run) -> dict[str, Any]:
    first = r.log.events[0] if r.log is not None and r.log.events else None
    ev = {"type": "log", "pod": r.pod.name, "container": r.container, "previous": r.previous}
    if first is not None:
        ev.update(line=first.line, text=first.text)
    return ev


def _first_start_shown(scope: Scope, preempted: bool) -> str:
    """What shows that the TrainJob's resume was its first start (Kueue admitting it, a JobSet created suspended),
    or ""."""
    tj = scope.trainjob
    if preempted:
        return ""
    for w in scope.workloads:
        admitted = any(c.get("type") in ("Admitted", "QuotaReserved") and str(c.get("status")) == "True"
                       for c in w.conditions())  # fmt: skip
        if admitted and not w.status.get("requeueState"):
            return f"{w.ref()} was admitted once and never evicted: the resume was its admission"
    if tj is not None and QUEUE_LABEL in tj.labels:
        return f"the TrainJob is queued by Kueue ({QUEUE_LABEL}): Kueue creates it suspended, resumes it on admission"
    js = scope.jobset
    if js is not None and js.created:
        suspends = [event_fields(e) for e in scope.events if event_fields(e)["reason"] == "SuspendedJobs"]
        if len(suspends) == 1 and suspends[0]["count"] == 1:
            t = str(suspends[0]["lastTimestamp"])
            if t and _seconds(js.created, t) is not None and 0 <= (_seconds(js.created, t) or 0) <= 60:
                return f"the JobSet was suspended once, at its creation ({t}), and resumed: nothing ran before"
    return ""


def _seconds(a: str, b: str) -> float | None:
    """b - a in seconds, for RFC 3339 times; None when either is not a time."""
    from datetime import datetime

    try:
        ta = datetime.fromisoformat(a.replace("Z", "+00:00"))
        tb = datetime.fromisoformat(b.replace("Z", "+00:00"))
    except ValueError:
        return None
    return (tb - ta).total_seconds()


def _judge_resume(scope: Scope, h: History, runs: list[Run], cond: dict[str, Any], preempted: bool) -> None:
    """A TrainJob resumed (`Suspended=False, reason=Resumed`) was interrupted only if something ran before the
    resume (contracts.md §6): Kueue creates every TrainJob it manages suspended and resumes it on admission, and
    teams stage jobs the same way. With a run shown before it, the resume is an earlier attempt's end; with the
    first start shown, nothing; with neither, whether an attempt came before is unknown (`History.doubt`)."""
    tj = scope.trainjob
    assert tj is not None
    when = str(cond.get("lastTransitionTime") or "")
    item = {
        "type": "condition",
        "object": tj.ref(),
        "conditionType": "Suspended",
        "status": str(cond.get("status")),
        "reason": "Resumed",
        "message": cond.get("message", ""),
        "time": when,
    }
    proof = _ran_before(scope, runs, when)
    if proof or preempted:
        h.earlier += [_strip_time(item), *proof[:1]]
        h.interruptions.append(item)
        return
    if _first_start_shown(scope, preempted):
        return
    at = f" at {when}" if when else ""
    h.doubt.append(
        f"the TrainJob was resumed{at}, and nothing in the snapshot shows whether an attempt ran before that "
        "(no pod, log or event from before it; no Workload with its admission history)"
    )


def _strip_time(item: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in item.items() if k != "time"}


def _group(h: History, runs: list[Run]) -> None:
    runs.sort(key=Run.sort_key)
    # generation: successive pods for the same (restart attempt, completion index)
    seen: dict[tuple[int, str], int] = {}
    for r in runs:
        if r.previous or r.last_state:
            continue
        idx = str(r.pod.labels.get(COMPLETION_INDEX, r.pod.annotations.get(COMPLETION_INDEX, r.pod.name)))
        key = (r.restart_attempt, idx)
        r.generation = seen.get(key, -1) + 1
        seen[key] = r.generation
    current = {}  # a previous run's twin (the current run of its pod), by pod: one walk, not one per run
    for r in runs:
        if not (r.previous or r.last_state):
            current.setdefault(id(r.pod), r)
    for r in runs:
        if r.previous or r.last_state:
            twin = current.get(id(r.pod))
            r.generation = twin.generation if twin else 0
    groups: dict[tuple[int, int, int], list[Run]] = {}
    for r in runs:
        groups.setdefault((r.restart_attempt, r.generation, r.instance), []).append(r)
    # number attempts as a person counts them: attempts whose pods are gone still count, and so do the container
    # instances a restart counter shows before the oldest one seen (instance k of a pod is its k-th restart)
    lost = 0
    keys = sorted(groups)
    if keys:
        first = groups[keys[0]][0]
        lost = first.restart_attempt if first.restart_attempt > 0 else int(h._lost_before(groups[keys[0]]))
    number = lost
    prev_key: tuple[int, int, int] | None = None
    for key in keys:
        same_pods = prev_key is not None and key[:2] == prev_key[:2]
        gap = key[2] - (prev_key[2] + 1 if same_pods and prev_key is not None else 0)
        if gap > 0 and (same_pods or key[1] == 0):
            pod = min(groups[key], key=lambda r: r.pod.name).pod.name
            why = f"pod {pod} restarted its container {key[2]} time(s) before the instance whose log is here"
            h.lost_instances.append((number, gap, why + "; the earlier instances' logs are gone"))
            number += gap
        if prev_key is None and key == (0, 0, 0) and lost:
            # the first pod seen replaced one that is gone (a suspend or preemption deleted it)
            how = "resumed" if h.interruptions else "pod-replaced"
        elif prev_key is None:
            how = "initial" if key == (0, 0, 0) else _how(key, (0, 0, 0), h)
        else:
            how = _how(key, prev_key, h)
        for r in groups[key]:
            r.attempt = number
        h.attempts.append(Attempt(number, groups[key], how))
        prev_key = key
        number += 1


def _how(key: tuple[int, int, int], prev: tuple[int, int, int], h: History) -> str:
    if key[0] > prev[0]:
        return "jobset-restart"
    if key[1] > prev[1]:
        return "resumed" if h.interruptions else "pod-replaced"
    return "container-restart"
