"""What the watcher keeps: per TrainJob only the figures its metrics need, and the queue of changes.

Memory is bounded by the number of TrainJobs times a few hundred bytes: no pods, events or logs are
kept between diagnoses (a re-diagnosis reads them again), and the queue holds each TrainJob at most
once however often its objects change. Of each JobSet, pod and event that belongs to a watched TrainJob,
only its resourceVersion is kept (`Versions`: a few dozen bytes, dropped when the object is), so that a
list made again, or a watch that replays what it already sent, marks only the TrainJobs whose objects
really changed.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ckpt_doctor.fleet.summary import JobSummary

Key = tuple[str, str]  # (namespace, TrainJob name)


@dataclass
class Figures:
    """A diagnosis as the metrics show it (no findings, no evidence)."""

    state: str
    attempts: int
    lost_steps: int | None
    lost_complete: bool
    resume_status: str
    last_checkpoint_step: int | None
    last_checkpoint_time: float | None
    save_interval_seconds: float | None
    failed: Counter[tuple[str, str]]  # (rule, severity) -> subjects failing
    worst: str | None  # "rule [severity]"
    cause: str | None
    verdict: tuple[Any, ...]

    @classmethod
    def of(cls, s: JobSummary, memory: dict[int, int] | None = None) -> Figures:
        """The figures of a diagnosis; `memory` (attempt number → the last step an earlier diagnosis saw it
        reach) fills in the steps lost that this diagnosis cannot see, as lower bounds."""
        lost, complete = s.lost.steps, not s.lost.partial
        if memory is not None:
            lost, complete = remembered_loss(s, memory)
        return cls(
            state=s.state,
            attempts=s.attempts,
            lost_steps=lost,
            lost_complete=complete,
            resume_status=s.resume_status,
            last_checkpoint_step=s.last_checkpoint_step,
            last_checkpoint_time=s.last_checkpoint_time,
            save_interval_seconds=s.save_interval_seconds,
            failed=Counter(s.failed),
            worst=f"{s.worst.rule.id} [{s.worst.rule.severity}]" if s.worst is not None else None,
            cause=s.cause.rule.id if s.cause is not None else None,
            verdict=s.verdict_key,
        )


MEMORY_ATTEMPTS = 4  # last steps remembered per TrainJob: its newest attempts only


def remember(memory: dict[int, int], s: JobSummary) -> None:
    """Keep the last step each attempt was seen at (the highest seen), for its newest attempts."""
    for index, step in s.attempt_steps:
        if index is not None and step is not None:
            memory[index] = max(memory.get(index, step), step)
    for index in sorted(memory)[:-MEMORY_ATTEMPTS]:
        del memory[index]


def remembered_loss(s: JobSummary, memory: dict[int, int]) -> tuple[int | None, bool]:
    """Steps lost over the interruptions, each from this diagnosis when it can say, else from the last step
    an earlier diagnosis saw the attempt before reach (a lower bound: it may have gone further)."""
    if not s.interruptions:  # none seen: the diagnosis says whether none happened (or the pods went unseen)
        return s.lost.steps, not s.lost.partial
    total, complete, measured = 0, True, False
    for before, _after, began_at, lost in s.interruptions:
        if lost is not None:
            total, measured = total + lost, True
            continue
        complete = False
        seen = memory.get(before) if before is not None else None
        if seen is not None and began_at is not None:
            total, measured = total + max(0, seen - began_at), True
    if s.interruptions and not measured:
        return None, False
    return total, complete


@dataclass
class JobState:
    uid: str = ""
    runtime: str = ""
    resource_version: str = ""
    figures: Figures | None = None
    scanned_at: float | None = None  # when the last diagnosis finished
    scan_failed: str | None = None  # why the last attempt to diagnose failed (the figures are older)
    claims: frozenset[str] = frozenset()  # PVCs its pods mount (routes PVC events)
    initial: bool = True  # known from the first listing: its first verdict is a baseline, not a change
    last_steps: dict[int, int] = field(default_factory=dict)  # attempt number -> last step seen (see remember)


@dataclass
class Registry:
    """The TrainJobs being watched, by (namespace, name); thread-safe."""

    jobs: dict[Key, JobState] = field(default_factory=dict)
    by_ns: dict[str, set[str]] = field(default_factory=dict)
    _claims: dict[tuple[str, str], set[str]] = field(default_factory=dict)
    lock: threading.RLock = field(default_factory=threading.RLock)

    def upsert(self, ns: str, name: str, uid: str, runtime: str, rv: str, initial: bool = False) -> bool:
        """Add or update a TrainJob; True when it is new or changed (its resourceVersion moved)."""
        with self.lock:
            st = self.jobs.get((ns, name))
            if st is not None and st.uid and uid and st.uid != uid:  # deleted and created again under its name
                self.remove(ns, name)
                st = None
            if st is None:
                self.jobs[(ns, name)] = JobState(uid, runtime, rv, initial=initial)
                self.by_ns.setdefault(ns, set()).add(name)
                return True
            changed = st.resource_version != rv
            st.uid, st.runtime, st.resource_version = uid or st.uid, runtime, rv
            return changed

    def remove(self, ns: str, name: str) -> bool:
        with self.lock:
            st = self.jobs.pop((ns, name), None)
            if st is None:
                return False
            names = self.by_ns.get(ns)
            if names is not None:
                names.discard(name)
                if not names:
                    del self.by_ns[ns]
            for c in st.claims:
                holders = self._claims.get((ns, c))
                if holders is not None:
                    holders.discard(name)
                    if not holders:
                        del self._claims[(ns, c)]
            return True

    def scanned(self, ns: str, name: str, summary: JobSummary) -> tuple[Figures | None, Figures | None, bool]:
        """Record a diagnosis: (the figures before, the figures now, whether the job was known from the start);
        figures now None when the job was deleted meanwhile."""
        with self.lock:
            st = self.jobs.get((ns, name))
            if st is None:  # deleted while it was being diagnosed
                return None, None, True
            remember(st.last_steps, summary)
            figures, claims = Figures.of(summary, st.last_steps), summary.claims
            before, initial = st.figures, st.initial
            for c in st.claims - claims:
                self._claims.get((ns, c), set()).discard(name)
            for c in claims:
                self._claims.setdefault((ns, c), set()).add(name)
            st.figures, st.claims, st.scanned_at, st.scan_failed = figures, claims, time.time(), None
            return before, figures, initial

    def failed(self, ns: str, name: str, why: str) -> None:
        with self.lock:
            st = self.jobs.get((ns, name))
            if st is not None:
                st.scan_failed, st.scanned_at = why, time.time()

    def names(self, ns: str) -> set[str]:
        with self.lock:
            return set(self.by_ns.get(ns, ()))

    def known(self, ns: str, name: str) -> bool:
        with self.lock:
            return (ns, name) in self.jobs

    def claim_holders(self, ns: str, claim: str) -> set[str]:
        with self.lock:
            return set(self._claims.get((ns, claim), ()))

    def keys(self) -> list[Key]:
        with self.lock:
            return list(self.jobs)

    def view(self) -> list[tuple[Key, JobState]]:
        """A consistent copy for one scrape (figures are replaced, never changed in place)."""
        with self.lock:
            return [(k, JobState(**{**vars(v), "last_steps": {}})) for k, v in self.jobs.items()]


@dataclass
class Pending:
    """TrainJobs whose objects changed, due once they have been quiet for `debounce` seconds (or have
    waited `max_delay` seconds: a job that never stops changing is still re-diagnosed)."""

    debounce: float = 5.0
    max_delay: float = 60.0
    dirty: dict[Key, tuple[float, float]] = field(default_factory=dict)  # key -> (first change, last change)
    running: set[Key] = field(default_factory=set)
    lock: threading.Lock = field(default_factory=threading.Lock)
    wake: threading.Event = field(default_factory=threading.Event)

    def mark(self, key: Key, now: float | None = None, delay: float = 0.0) -> None:
        """`key` changed (or, with `delay`, should be tried again after that many seconds)."""
        now = time.monotonic() if now is None else now
        with self.lock:
            first, _ = self.dirty.get(key, (now, now))
            self.dirty[key] = (min(first, now), now + delay)
        self.wake.set()

    def forget(self, key: Key) -> None:
        with self.lock:
            self.dirty.pop(key, None)

    def take(self, limit: int, now: float | None = None) -> list[Key]:
        """Up to `limit` due TrainJobs, not already being diagnosed; they are then `running`."""
        now = time.monotonic() if now is None else now
        with self.lock:
            due = [
                k
                for k, (first, last) in self.dirty.items()
                if k not in self.running and (now - last >= self.debounce or now - first >= self.max_delay)
            ]
            due.sort(key=lambda k: self.dirty[k][0])
            out = due[:limit]
            for k in out:
                del self.dirty[k]
                self.running.add(k)
            return out

    def done(self, key: Key) -> None:
        with self.lock:
            self.running.discard(key)
        self.wake.set()

    def depth(self) -> int:
        with self.lock:
            return len(self.dirty)


ObjKey = tuple[str, str, str]  # (kind, namespace, name)


@dataclass
class Versions:
    """The resourceVersion last seen of each watched object that belongs to a TrainJob, and the TrainJobs it
    belongs to; thread-safe."""

    seen: dict[ObjKey, tuple[str, tuple[Key, ...]]] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def saw(self, key: ObjKey, rv: str, owners: Sequence[Key]) -> bool:
        """Record a watch event's object; False when it is what was seen already (the same resourceVersion)."""
        with self.lock:
            before = self.seen.get(key)
            if owners:
                self.seen[key] = (rv, tuple(owners))
            return before is None or not rv or before[0] != rv

    def gone(self, key: ObjKey) -> tuple[Key, ...]:
        """The object was deleted: the TrainJobs it belonged to."""
        with self.lock:
            before = self.seen.pop(key, None)
        return before[1] if before is not None else ()

    def listed(self, kind: str, objects: dict[ObjKey, tuple[str, tuple[Key, ...]]]) -> set[Key]:
        """A whole list of `kind`: what it holds replaces what was seen of that kind; returns the TrainJobs whose
        objects are new, changed (another resourceVersion) or gone from it."""
        changed: set[Key] = set()
        with self.lock:
            for key in [k for k in self.seen if k[0] == kind and k not in objects]:
                changed.update(self.seen.pop(key)[1])
            for key, (rv, owners) in objects.items():
                before = self.seen.get(key)
                if before is None or before[0] != rv:
                    changed.update(owners)
                self.seen[key] = (rv, owners)
        return changed

    def __len__(self) -> int:
        with self.lock:
            return len(self.seen)
