"""The watcher: informers on TrainJobs, JobSets, pods and events; debounced re-diagnoses; metrics.

Read-only unless `emit_events`. A change to a TrainJob or one of its objects marks it dirty; once it
has been quiet for `debounce` seconds (or dirty for `max_delay`), the TrainJobs due in one namespace
are re-diagnosed together by a fleet collection narrowed to them (`FleetScope(names=…)`, reading by GET
what few objects they name), their logs read then with the usual bounded windows and dropped with the
Snapshot. Only the figures the metrics need are kept.

A watch that is cut and opened again, or lists again after 410 Gone (changes may have been missed),
marks only the TrainJobs whose objects changed: each list of JobSets, pods and events is compared,
object by object, with the resourceVersions seen before (`Versions`), and an event that replays an
object at the resourceVersion already seen is no change. (Marking every TrainJob on each list reset
their debounce each time: verdicts waited for `--max-delay`.)

Readiness (`/readyz`) follows the scans: a watch down for longer than `stale_after` makes the watcher
not ready, unless a re-diagnosis read the cluster after that watch last failed; such a read also wakes
the watches waiting to retry, so they open again at once instead of at the end of their backoff (up
to half a minute after the cluster answered again).
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ckpt_doctor.errors import InputError
from ckpt_doctor.facts.logs import HEAD_BYTES, TAIL_BYTES
from ckpt_doctor.fleet.scan import Diagnoser
from ckpt_doctor.scope import JOBSET_NAME_LABEL, runtime_ref
from ckpt_doctor.snapshot import Obj
from ckpt_doctor.sources.live.client import Api, CallError, Cluster
from ckpt_doctor.sources.live.fleet import FleetCollector, FleetScope, list_kept, rejected_selector
from ckpt_doctor.sources.live.kinds import EVENT, JOBSET, POD, TRAINJOB, Kind
from ckpt_doctor.watch.events import should_emit, write_event
from ckpt_doctor.watch.http import MetricsServer
from ckpt_doctor.watch.informer import Informer
from ckpt_doctor.watch.jlog import JsonLog
from ckpt_doctor.watch.metrics import Metrics
from ckpt_doctor.watch.routing import route
from ckpt_doctor.watch.state import Figures, Key, ObjKey, Pending, Registry, Versions

STALE_AFTER = 60.0  # seconds a watch may be down before /readyz says so
SYNC_WAIT = 30.0  # seconds the first diagnoses wait for every watch to be open


@dataclass
class WatchOptions:
    listen: str = ":9808"
    debounce: float = 5.0
    max_delay: float = 60.0
    workers: int = 2  # re-diagnoses at once
    batch: int = 16  # TrainJobs of one namespace per re-diagnosis
    gets_up_to: int = 10  # a re-diagnosis reads up to this many objects of a kind by GET, else lists it
    log_workers: int = 4
    head_bytes: int = HEAD_BYTES
    tail_bytes: int = TAIL_BYTES
    watch_seconds: int = 300
    retry_after: float = 30.0  # a failed re-diagnosis is tried again after this long
    stale_after: float = STALE_AFTER  # a watch down this long, with no successful read since, is not ready
    emit_events: bool = False
    version_flag: str | None = None
    signature_dirs: Sequence[Path] = field(default_factory=list)


class Watcher:
    def __init__(
        self,
        cluster: Cluster,
        namespace: str | None,
        selector: str | None,
        options: WatchOptions,
        log: JsonLog,
    ) -> None:
        self.cluster = cluster
        self.api = Api(cluster)
        self.namespace = namespace
        self.selector = selector
        self.opt = options
        self.log = log
        self.stop_event = threading.Event()
        self.registry = Registry()
        self.versions = Versions()
        self.pending = Pending(options.debounce, options.max_delay)
        self._answered_at: float | None = None  # when a re-diagnosis last read the cluster (monotonic)
        self.informers: list[Informer] = []
        self.metrics = Metrics(self.registry, lambda: self.informers, self.pending.depth)
        self.diagnoser = Diagnoser(options.version_flag, options.signature_dirs)
        self.server = MetricsServer(options.listen, self.metrics.registry, self.healthy, self.ready)
        self._work: queue.Queue[tuple[str, list[str]] | None] = queue.Queue()
        self._workers: list[threading.Thread] = []
        self._first_rv = ""
        self._busy = 0  # batches queued or being diagnosed
        self._busy_lock = threading.Lock()

    # -- health -----------------------------------------------------------------------------------------
    def healthy(self) -> tuple[bool, str]:
        if self.stop_event.is_set():
            return False, "stopping"
        dead = [t.name for t in self._workers if not t.is_alive()] + [
            i.thread.name for i in self.informers if i.thread.ident is not None and not i.thread.is_alive()
        ]
        return (False, f"threads ended: {', '.join(dead)}") if dead else (True, "ok")

    def ready(self) -> tuple[bool, str]:
        ok, why = self.healthy()
        if not ok:
            return ok, why
        waiting = [i.kind.plural for i in self.informers if not i.synced.is_set()]
        if not self.informers or waiting:
            return False, f"not watching yet: {', '.join(waiting) or 'starting'}"
        now, stale, answered = time.monotonic(), self.opt.stale_after, self._answered_at
        down = [
            i.kind.plural
            for i in self.informers
            if not i.connected
            and i.disconnected_at is not None
            and now - i.disconnected_at > stale
            and not (answered is not None and i.failed_at is not None and answered > i.failed_at)
        ]
        if down:
            return False, f"watch down for more than {stale:g}s: {', '.join(down)}"
        return True, "ok"

    def _answered(self) -> None:
        """A re-diagnosis read the cluster: it answers. Watches waiting to retry are opened again now."""
        self._answered_at = time.monotonic()
        for inf in self.informers:
            if not inf.connected:
                inf.kick()

    # -- lifecycle --------------------------------------------------------------------------------------
    def start(self) -> None:
        """List the TrainJobs (fatal errors: InputError), start the HTTP server, informers and workers."""
        self._initial_list()
        self.server.start()
        self.log.info("serving metrics", listen=self.server.address, trainjobs=len(self.registry.keys()),
                      scope=self.namespace or "all namespaces")  # fmt: skip
        for _ in range(max(1, self.opt.workers)):
            t = threading.Thread(target=self._worker, name="ckpt-watch-diagnose", daemon=True)
            self._workers.append(t)
            t.start()
        label_of: dict[str, str | None] = {"TrainJob": self.selector, "Pod": JOBSET_NAME_LABEL}
        for kind in (TRAINJOB, JOBSET, POD, EVENT):
            inf = Informer(self.api, kind, self.namespace, self._on_event, self._on_list, self.stop_event, self.log,
                           label_of.get(kind.kind), self.opt.watch_seconds)  # fmt: skip
            self.informers.append(inf)
            inf.start()

    def run(self, until: Callable[[], bool] | None = None) -> None:
        """Schedule re-diagnoses until stopped (`stop()`, or `until()` true).

        The first ones wait until every watch is open (at most `SYNC_WAIT` seconds): a change made before
        a watch began must not slip between it and a diagnosis that read the objects earlier."""
        synced_by = time.monotonic() + SYNC_WAIT
        while not self.stop_event.is_set() and not (until and until()):
            self.pending.wake.clear()
            if time.monotonic() >= synced_by or all(i.synced.is_set() for i in self.informers):
                self._schedule()
            self.pending.wake.wait(0.25)

    def stop(self, grace: float = 10.0) -> None:
        self.stop_event.set()
        for inf in self.informers:
            inf.close()
        for _ in self._workers:
            self._work.put(None)
        deadline = time.monotonic() + grace
        for t in [*self._workers, *(i.thread for i in self.informers)]:
            t.join(timeout=max(0.0, deadline - time.monotonic()))
        self.server.stop()

    # -- the TrainJobs ----------------------------------------------------------------------------------
    def _initial_list(self) -> None:
        try:
            items, rv = list_kept(self.api, TRAINJOB, self.namespace, self.selector)
        except CallError as e:
            if bad := rejected_selector(e, self.selector):
                raise bad from None
            where = f"in {self.namespace}" if self.namespace else "in all namespaces"
            fc = FleetCollector(self.cluster, FleetScope(self.namespace, self.selector))
            raise InputError(fc._fatal(e, f"list TrainJobs {where}")) from None
        for tj in items:
            self._track_trainjob(tj, initial=True)
        self._first_rv = rv

    def _track_trainjob(self, tj: dict[str, Any], initial: bool = False) -> None:
        o = Obj(tj)
        rname, rkind, _ = runtime_ref(o)
        ns = o.namespace or "default"
        changed = self.registry.upsert(ns, o.name, o.uid or "", f"{rkind}/{rname}" if rname else "",
                                       str(o.meta.get("resourceVersion") or ""), initial=initial)  # fmt: skip
        if changed:
            self.pending.mark((ns, o.name), delay=-self.opt.debounce if initial else 0.0)

    def _on_list(self, kind: Kind, first: bool) -> str:
        if kind is TRAINJOB:
            if first and self._first_rv:
                return self._first_rv
            items, rv = list_kept(self.api, TRAINJOB, self.namespace, self.selector)
            seen = set()
            for tj in items:
                o = Obj(tj)
                seen.add((o.namespace or "default", o.name))
                self._track_trainjob(tj)
            for key in set(self.registry.keys()) - seen:
                self._forget(key, "no longer listed")
            return rv
        label = JOBSET_NAME_LABEL if kind is POD else None
        objects: dict[ObjKey, tuple[str, tuple[Key, ...]]] = {}

        def keep(o: dict[str, Any]) -> bool:  # remembers the version of what belongs to a TrainJob; keeps nothing
            owners = route(kind.kind, o, self.registry)
            if owners:
                objects[_obj_key(kind, o)] = (_rv(o), tuple(owners))
            return False

        _, rv = list_kept(self.api, kind, self.namespace, label, keep=keep)
        changed = self.versions.listed(kind.kind, objects)
        if not first:  # changes may have been missed while the watch was behind: the objects that changed say
            self.log.info("listed again", resource=kind.plural, objects=len(objects), trainjobsChanged=len(changed))
            for key in changed:
                self.pending.mark(key)
        return rv

    def _forget(self, key: Key, why: str) -> None:
        if self.registry.remove(*key):
            self.pending.forget(key)
            self.log.info("TrainJob gone: its series are dropped", namespace=key[0], trainjob=key[1], why=why)

    def _on_event(self, kind: Kind, etype: str, obj: dict[str, Any]) -> None:
        if kind is TRAINJOB:
            o = Obj(obj)
            if etype == "DELETED":
                self._forget((o.namespace or "default", o.name), "deleted")
            else:
                self._track_trainjob(obj)
            return
        okey = _obj_key(kind, obj)
        if etype == "DELETED":
            owners = set(self.versions.gone(okey)) | set(route(kind.kind, obj, self.registry))
        else:
            owners = set(route(kind.kind, obj, self.registry))
            if not self.versions.saw(okey, _rv(obj), sorted(owners)):
                return  # the object as it was already seen (a watch opened again replays it): no change
        for key in sorted(owners):
            self.pending.mark(key)

    # -- re-diagnoses -----------------------------------------------------------------------------------
    def _schedule(self) -> None:
        with self._busy_lock:
            free = max(0, self.opt.workers - self._busy)
        if not free:
            return
        keys = self.pending.take(free * self.opt.batch)
        by_ns: dict[str, list[str]] = {}
        for ns, name in keys:
            by_ns.setdefault(ns, []).append(name)
        for ns, names in by_ns.items():
            for i in range(0, len(names), self.opt.batch):
                with self._busy_lock:
                    self._busy += 1
                self._work.put((ns, names[i : i + self.opt.batch]))

    def _worker(self) -> None:
        while True:
            item = self._work.get()
            if item is None or self.stop_event.is_set():
                return
            ns, names = item
            try:
                self._rediagnose(ns, names)
            except Exception as e:  # a bug: logged and counted, the watcher goes on
                self.metrics.scan_errors.labels("diagnose").inc()
                self.log.error("re-diagnosis failed", namespace=ns, trainjobs=names, error=f"{type(e).__name__}: {e}")
            finally:
                with self._busy_lock:
                    self._busy -= 1
                for n in names:
                    self.pending.done((ns, n))

    def _rediagnose(self, ns: str, names: list[str]) -> None:
        from ckpt_doctor.sources.redact import Redactor

        t0 = time.monotonic()
        scope = FleetScope(ns, self.selector, frozenset(names), self.opt.gets_up_to)
        fc = FleetCollector(self.cluster, scope, self.opt.head_bytes, self.opt.tail_bytes, self.opt.log_workers,
                            workers=4)  # fmt: skip
        try:
            tjs = fc.trainjobs()
            fc.prefetch()
            self._answered()
        except (InputError, CallError) as e:
            why = e.message
            self.metrics.scan_errors.labels("collect").inc()
            self.log.warning("cannot read the TrainJobs; will try again", namespace=ns, trainjobs=names, error=why,
                             retryIn=self.opt.retry_after)  # fmt: skip
            for n in names:
                self.registry.failed(ns, n, why)
                self.pending.mark((ns, n), delay=self.opt.retry_after)
            return
        found = {Obj(t).name for t in tjs}
        for n in set(names) - found:  # deleted (or no longer selected) since it was marked
            self._forget((ns, n), "not found when re-diagnosed")
        for tj in tjs:  # one at a time: one job's logs in memory at once per worker
            if self.stop_event.is_set():
                return
            name = Obj(tj).name
            try:
                snap = fc.snapshot(tj, fc.collect(tj))
                Redactor().snapshot(snap)
                out = self.diagnoser.one(snap, ns, name)
                del snap
            except (InputError, CallError) as e:
                self.metrics.scan_errors.labels("collect").inc()
                self.registry.failed(ns, name, e.message)
                self.pending.mark((ns, name), delay=self.opt.retry_after)
                self.log.warning("cannot read the TrainJob; will try again", namespace=ns, trainjob=name,
                                 error=e.message)  # fmt: skip
                continue
            if out.row is None:
                self.metrics.scan_errors.labels("diagnose").inc()
                self.registry.failed(ns, name, out.error or "")
                self.log.error("diagnosis failed", namespace=ns, trainjob=name, error=out.error or "")
                continue
            self.metrics.scans.inc()
            before, figures, initial = self.registry.scanned(ns, name, out.row)
            if figures is None:
                continue
            if before is None or before.verdict != figures.verdict:
                self.log.info("verdict", namespace=ns, trainjob=name, worst=figures.worst, cause=figures.cause,
                              resumeStatus=figures.resume_status, lostSteps=figures.lost_steps,
                              attempts=figures.attempts, changed=before is not None)  # fmt: skip
            if self.opt.emit_events and should_emit(before, figures, initial):
                self._emit(ns, name, figures)
        self.metrics.duration.observe(time.monotonic() - t0)

    def _emit(self, ns: str, name: str, figures: Figures) -> None:
        with self.registry.lock:
            st = self.registry.jobs.get((ns, name))
            uid = st.uid if st is not None else ""
        try:
            write_event(self.api, ns, name, uid, figures)
            self.log.info("event written", namespace=ns, trainjob=name, worst=figures.worst)
        except CallError as e:
            self.metrics.scan_errors.labels("event").inc()
            self.log.warning("cannot write the Event", namespace=ns, trainjob=name, error=f"{e.kind}: {e.message}")


def _obj_key(kind: Kind, o: dict[str, Any]) -> ObjKey:
    meta = o.get("metadata") if isinstance(o.get("metadata"), dict) else {}
    return kind.kind, str(meta.get("namespace") or ""), str(meta.get("name") or "")


def _rv(o: dict[str, Any]) -> str:
    meta = o.get("metadata") if isinstance(o.get("metadata"), dict) else {}
    return str(meta.get("resourceVersion") or "")
