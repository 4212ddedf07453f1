"""`collect --follow`: record a TrainJob as it runs, so the evidence of a restart survives the restart.

A JobSet restart deletes the old pods and their logs; events expire after about an hour. The recorder
first collects everything once (like `collect`), then watches the TrainJob, its JobSet, Jobs, pods and
the namespace's events, and follows the log of every container instance that starts. It keeps the
last state of every pod it saw (deleted ones too), every event, and a bounded head and tail window of
every container instance's log, until the TrainJob finishes (Complete or Failed) or it is stopped
(Ctrl-C, or `stop` set). Watches that drop reconnect from the last resourceVersion they saw; a watch
told its resourceVersion is too old (410 Gone) lists again.

The recorded Snapshot uses the bundle layout: each pod's latest container instance is its current
log, the one before it the `.previous` log; older instances go to `recorded-logs/` in the bundle.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from ckpt_doctor.facts.logs import HEAD_BYTES, TAIL_BYTES
from ckpt_doctor.scope import JOBSET_NAME_LABEL
from ckpt_doctor.snapshot import Obj, Snapshot
from ckpt_doctor.sources.live import (
    Api,
    CallError,
    Cluster,
    Collected,
    Collector,
    Kind,
    LogResult,
    Progress,
    gap_reason,
    window_content,
)
from ckpt_doctor.sources.live.kinds import EVENT, JOB, JOBSET, POD, TRAINJOB

WATCH_SECONDS = 240  # each watch request asks the server to close it after this long; we reconnect


@dataclass
class LogWindow:
    """The head and a rolling tail of one container instance's log, fed as it streams."""

    head_limit: int = HEAD_BYTES
    tail_limit: int = TAIL_BYTES
    head: bytearray = field(default_factory=bytearray)
    tail: bytearray = field(default_factory=bytearray)
    skipped: bool = False  # bytes between head and tail were dropped
    from_start: bool = True  # False when following started after the log's beginning
    done: bool = False

    def feed(self, data: bytes) -> None:
        room = self.head_limit - len(self.head)
        if room > 0 and not self.tail and not self.skipped:
            self.head += data[:room]
            data = data[room:]
        if data:
            self.tail += data
            if len(self.tail) > 2 * self.tail_limit:
                del self.tail[: len(self.tail) - self.tail_limit]
                self.skipped = True

    def result(self, pod: str, container: str, previous: bool) -> LogResult:
        if not self.skipped and len(self.tail) <= self.tail_limit and self.from_start:
            return LogResult(pod, container, previous, head=bytes(self.head + self.tail), head_limit=self.head_limit)
        return LogResult(
            pod,
            container,
            previous,
            head=bytes(self.head),
            tail=bytes(self.tail[-self.tail_limit :]),
            head_limit=self.head_limit,
        )


@dataclass
class Instance:
    """One run of one container in one pod."""

    pod: str
    container: str
    key: str  # containerID, or "#<restartCount>"
    restarts: int
    started: str
    window: LogWindow


def _instance_key(cs: dict[str, Any]) -> str:
    """Which run of a container a status describes: its containerID, else "#<restartCount>"."""
    return str(cs.get("containerID") or f"#{int(cs.get('restartCount') or 0)}")


def _finished(tj: dict[str, Any]) -> str | None:
    for c in (tj.get("status") or {}).get("conditions") or []:
        if isinstance(c, dict) and c.get("type") in ("Complete", "Failed") and c.get("status") == "True":
            return f"{c.get('type')}{' (' + str(c.get('reason')) + ')' if c.get('reason') else ''}"
    return None


class Recorder:
    """Watch one TrainJob until it ends or `stop` is set; `run()` returns the recorded Snapshot."""

    def __init__(
        self,
        cluster: Cluster,
        namespace: str,
        name: str,
        head_bytes: int = HEAD_BYTES,
        tail_bytes: int = TAIL_BYTES,
        workers: int = 8,
        progress: Progress | None = None,
        watch_seconds: int = WATCH_SECONDS,
        grace: float = 10.0,
    ) -> None:
        self.namespace = namespace
        self.name = name
        self.head_bytes = head_bytes
        self.tail_bytes = tail_bytes
        self.progress = progress or Progress(quiet=True)
        self.collector = Collector(cluster, namespace, name, head_bytes, tail_bytes, workers, self.progress)
        self.api: Api = self.collector.api
        self.watch_seconds = watch_seconds
        self.grace = grace
        self.stop = threading.Event()
        self.finished = threading.Event()
        self.finish_reason = ""
        self.reconnects = 0
        self.relists = 0
        self._lock = threading.Lock()
        self._objects: dict[tuple[str, str], dict[str, Any]] = {}  # (kind, uid or name) -> latest
        self._deleted: set[tuple[str, str]] = set()
        self._instances: dict[tuple[str, str], list[Instance]] = {}  # (pod, container) -> runs seen
        self._followed: set[tuple[str, str, str]] = set()
        self._open: set[Any] = set()  # responses to close on stop
        self._threads: list[threading.Thread] = []
        self._gaps: dict[str, str] = {}
        self.base: Collected | None = None

    # -- the main loop --------------------------------------------------------------------------------
    def run(self, on_ready: Callable[[], None] | None = None) -> tuple[Snapshot, dict[str, bytes]]:
        """Record until the TrainJob finishes, `stop` is set, or KeyboardInterrupt; then assemble."""
        base = self.collector.collect()
        self.progress.close()  # from here on: one line per thing that happens
        self.base = base
        for kind, objs in base.objects.items():
            for o in objs:
                self._remember(kind, o)
        reason = _finished(base.trainjob)
        watched: tuple[tuple[Kind, str | None, str | None], ...] = (
            (TRAINJOB, None, f"metadata.name={self.name}"),
            (JOBSET, None, f"metadata.name={self.name}"),
            (JOB, f"{JOBSET_NAME_LABEL}={self.name}", None),
            (POD, f"{JOBSET_NAME_LABEL}={self.name}", None),
            (EVENT, None, None),
        )
        try:  # from the first thread started: Ctrl-C anywhere below still shuts down and keeps the record
            if reason is None:
                for kind, label, fields in watched:
                    self._start(f"watch-{kind.plural}", self._watch_loop, kind, label, fields)
                for pod in base.objects.get("Pod", []):
                    self._follow_pod(pod)
                self.progress.note(
                    f"recording TrainJob {self.namespace}/{self.name}; Ctrl-C stops and writes the bundle"
                )
            else:
                self.finish_reason = f"the TrainJob had already finished: {reason}"
                self.finished.set()
            if on_ready is not None:
                on_ready()
            while not self.stop.is_set() and not self.finished.is_set():
                self.stop.wait(0.2)
            if self.finished.is_set() and not self.stop.is_set():
                self._drain()
        except KeyboardInterrupt:
            self.finish_reason = "stopped by Ctrl-C"
        finally:
            self._shutdown()
        self.progress.note(f"{self.finish_reason or 'stopped'}; assembling the bundle")
        return self._assemble()

    def _start(self, name: str, fn: Callable[..., None], *args: Any) -> None:
        t = threading.Thread(target=fn, args=args, name=f"ckpt-rec-{name}", daemon=True)
        with self._lock:
            self._threads.append(t)
        t.start()

    def _drain(self) -> None:
        """After the job ended: give log streams a moment to deliver the last lines."""
        deadline = time.monotonic() + self.grace
        while time.monotonic() < deadline:
            with self._lock:
                busy = any(not i.window.done for runs in self._instances.values() for i in runs)
            if not busy:
                return
            time.sleep(0.1)

    def _shutdown(self) -> None:
        self.stop.set()
        with self._lock:
            responses = list(self._open)
            threads = list(self._threads)
        for r in responses:
            _close(r)
        deadline = time.monotonic() + 5.0
        for t in threads:
            t.join(timeout=max(0.0, deadline - time.monotonic()))

    def _track(self, resp: Any) -> None:
        with self._lock:
            self._open.add(resp)
        if self.stop.is_set():
            _close(resp)

    def _untrack(self, resp: Any) -> None:
        with self._lock:
            self._open.discard(resp)

    # -- watches --------------------------------------------------------------------------------------
    def _watch_loop(self, kind: Kind, label: str | None, fields: str | None) -> None:
        rv = (self.base.rvs.get(kind.plural) if self.base and kind in (JOB, POD, EVENT) else None) or None
        backoff = 0.2
        while not self.stop.is_set():
            try:
                if rv is None:
                    items, rv = self.api.list(kind, self.namespace, label, fields)
                    for o in items:
                        self._on(kind, "ADDED", o)
                opened, quiet = time.monotonic(), True
                for ev in self.api.watch(
                    kind,
                    self.namespace,
                    rv,
                    label,
                    fields,
                    self.watch_seconds,
                    on_open=self._track,
                    on_close=self._untrack,
                ):
                    if self.stop.is_set():
                        break
                    etype, obj = ev.get("type"), ev.get("object") or {}
                    if etype == "ERROR":
                        if int(obj.get("code") or 0) == 410:  # resourceVersion too old: list again
                            rv = None
                            self.relists += 1
                            quiet = False
                        break
                    new_rv = Obj(obj).meta.get("resourceVersion")
                    if new_rv:
                        rv = str(new_rv)
                    if etype != "BOOKMARK":
                        self._on(kind, str(etype), obj)
                    quiet, backoff = False, 0.2
                if self.stop.is_set():
                    return
                self.reconnects += 1
                if quiet and time.monotonic() - opened < 1.0:  # closed at once, or errors: do not spin
                    self.stop.wait(backoff)
                    backoff = min(5.0, backoff * 2)
            except CallError as e:
                if self.stop.is_set():
                    return
                if e.kind == "gone":
                    rv = None
                    self.relists += 1
                    continue
                if e.kind in ("forbidden", "notfound"):
                    with self._lock:
                        self._gaps[f"watch/{kind.plural}"] = gap_reason(e, "watch", kind, self.namespace)
                    return
                self.reconnects += 1
                self.stop.wait(backoff)
                backoff = min(5.0, backoff * 2)

    def _remember(self, kind: str, o: dict[str, Any]) -> tuple[str, str]:
        m = Obj(o).meta
        key = (kind, str(m.get("uid") or f"{m.get('namespace')}/{m.get('name')}"))
        with self._lock:
            self._objects[key] = o
        return key

    def _on(self, kind: Kind, etype: str, obj: dict[str, Any]) -> None:
        if not Obj(obj).meta.get("name"):
            return
        old = self._objects.get((kind.kind, str(Obj(obj).meta.get("uid"))))
        key = self._remember(kind.kind, obj)
        name = Obj(obj).meta.get("name")
        if etype == "DELETED":
            with self._lock:
                self._deleted.add(key)
            if kind is POD:
                self.progress.note(f"pod {name} deleted (its evidence is kept)")
        if kind is POD and etype != "DELETED":
            if old is None:
                self.progress.note(f"pod {name} appeared")
            self._follow_pod(obj)
        if kind is TRAINJOB:
            reason = _finished(obj)
            if etype == "DELETED" or (reason and not self.finished.is_set()):
                self.finish_reason = (
                    "the TrainJob was deleted" if etype == "DELETED" else f"the TrainJob finished: {reason}"
                )
                self.progress.note(self.finish_reason)
                self.finished.set()

    # -- logs -----------------------------------------------------------------------------------------
    def _follow_pod(self, pod: dict[str, Any]) -> None:
        pname = str(Obj(pod).meta.get("name"))
        for cs in (pod.get("status") or {}).get("containerStatuses") or []:
            if not isinstance(cs, dict) or not (cs.get("state") or {}).get("running"):
                continue
            cname = str(cs.get("name"))
            restarts = int(cs.get("restartCount") or 0)
            key = _instance_key(cs)
            with self._lock:
                if (pname, cname, key) in self._followed:
                    continue
                self._followed.add((pname, cname, key))
                inst = Instance(
                    pname,
                    cname,
                    key,
                    restarts,
                    str(cs["state"]["running"].get("startedAt") or ""),
                    LogWindow(self.head_bytes, self.tail_bytes),
                )
                self._instances.setdefault((pname, cname), []).append(inst)
            self._start(f"log-{pname}-{cname}", self._follow, inst)

    def _base_current(self, inst: Instance) -> LogResult | None:
        """The log the first collection read for this very instance (it was current then)."""
        if self.base is None:
            return None
        res = self.base.logs.get((inst.pod, inst.container, False))
        if res is None:
            return None
        for p in self.base.objects.get("Pod", []):
            if Obj(p).meta.get("name") != inst.pod:
                continue
            for cs in (p.get("status") or {}).get("containerStatuses") or []:
                if isinstance(cs, dict) and cs.get("name") == inst.container:
                    return res if _instance_key(cs) == inst.key else None
        return None

    def _follow(self, inst: Instance) -> None:
        w = inst.window
        base = self._base_current(inst)
        tail_lines: int | None = None
        if base is not None and base.tail is not None:  # a long log: keep its head, follow from now on
            w.head[:] = base.head or b""
            w.tail[:] = base.tail
            w.skipped, w.from_start = True, False
            tail_lines = 0
        try:
            for chunk in self.api.follow_log(
                inst.pod, self.namespace, inst.container, tail_lines, on_open=self._track, on_close=self._untrack
            ):
                with self._lock:
                    w.feed(chunk)
        except CallError as e:
            if not self.stop.is_set():  # the final assembly reads the log again if the pod is still there
                self.progress.note(f"stopped following {inst.pod}/{inst.container}: {e.message}")
        finally:
            w.done = True

    # -- assembling -----------------------------------------------------------------------------------
    def _assemble(self) -> tuple[Snapshot, dict[str, bytes]]:
        base = self.base
        assert base is not None
        out = Collected(base.trainjob, server_version=base.server_version, trainer_version=base.trainer_version)
        with self._lock:
            objects = list(self._objects.items())
            instances = {k: list(v) for k, v in self._instances.items()}
            gaps = dict(self._gaps)
        for (kind, _key), o in objects:
            out.add(kind, [o])
        tjs = out.objects.get("TrainJob") or [base.trainjob]
        out.trainjob = tjs[-1]
        for g in base.gaps:
            out.gap(g.what, g.reason)
        for what, reason in gaps.items():
            out.gap(what, reason)
        out.logs = dict(base.logs)
        extra: dict[str, bytes] = {}
        pods = {str(Obj(p).meta.get("name")): p for p in out.objects.get("Pod", [])}
        for (pod, container), runs in instances.items():
            runs.sort(key=lambda i: (i.restarts, i.started))
            seen = [i for i in runs if i.window.head or i.window.tail]
            if not seen:
                continue
            cur, prev = seen[-1], (seen[-2] if len(seen) > 1 else None)
            out.logs[(pod, container, False)] = cur.window.result(pod, container, False)
            if prev is not None:
                out.logs[(pod, container, True)] = prev.window.result(pod, container, True)
            for n, older in enumerate(seen[:-2]):
                content = older.window.result(pod, container, False).content or b""
                extra[f"recorded-logs/{pod}/{container}.instance-{n}.log"] = content
        with ThreadPoolExecutor(max_workers=self.collector.workers) as pool:
            self._refresh_missing_logs(pool, out, pods)
            self.collector.read_storage(pool, out)  # says what it could not read in out's gaps
        self.collector.keep_events(out)
        snap = self.collector.snapshot(out)
        snap.meta["recorded"] = {
            "until": snap.meta["collectedAt"],
            "stoppedBy": self.finish_reason or "stopped",
            "watchReconnects": self.reconnects,
        }
        return snap, extra

    def _refresh_missing_logs(self, pool: ThreadPoolExecutor, out: Collected, pods: dict[str, dict[str, Any]]) -> None:
        """Pods still there whose current instance was never followed (it ran and ended between events)."""
        from ckpt_doctor.sources.live import container_instances

        deleted = {k[1] for k in self._deleted if k[0] == "Pod"}
        todo = [
            (name, c, prev)
            for name, p in pods.items()
            if str(Obj(p).meta.get("uid")) not in deleted
            for c, prev in container_instances(p)
            if (name, c, prev) not in out.logs
        ]
        for res in pool.map(lambda t: self.collector.logs.read(self.namespace, *t), todo):
            out.keep_log(res)


def _close(resp: Any) -> None:
    for method in ("shutdown", "close"):
        fn = getattr(resp, method, None)
        if fn is not None:
            try:
                fn()
            except Exception:
                pass


def record(
    target: str,
    namespace: str | None = None,
    context: str | None = None,
    kubeconfig: str | None = None,
    timeout: float = 15.0,
    *,
    stop: threading.Event | None = None,
    head_bytes: int = HEAD_BYTES,
    tail_bytes: int = TAIL_BYTES,
    workers: int = 8,
    quiet: bool = False,
    grace: float = 10.0,
    watch_seconds: int = WATCH_SECONDS,
    on_ready: Callable[[], None] | None = None,
) -> tuple[Snapshot, dict[str, bytes]]:
    """Record `[NS/]NAME` until it finishes, `stop` is set or Ctrl-C; returns the (unredacted) Snapshot
    and the extra bundle files (older container instances)."""
    from ckpt_doctor.sources.live import connect, split_target

    cluster = connect(namespace, context, kubeconfig, timeout, pool=workers + 256)
    ns, name = split_target(target, namespace, cluster.namespace)
    prog = Progress(quiet=quiet)
    rec = Recorder(cluster, ns, name, head_bytes, tail_bytes, workers, prog, watch_seconds, grace)
    if stop is not None:
        rec.stop = stop
    try:
        return rec.run(on_ready)
    finally:
        prog.close()


__all__ = ["LogWindow", "Recorder", "record", "window_content"]
