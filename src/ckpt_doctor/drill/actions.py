"""The drill's cluster verbs: each change as the kubectl command that does the same, and the guard
that keeps the drill inside its blast radius.

A change is built first (`Change`: what it does, its kubectl lines) and applied only after the runner
has shown it and, unless --yes, asked. Writes go through one path that checks the guard (the TrainJob
the drill created or was named, that TrainJob's pods, the node it was told to cordon, the objects it
created: nothing else, ever), refuses every write in --dry-run, and retries a lost connection with
back-off. Marks (drill/marks.py) are written before, or with, the change they record.
"""

from __future__ import annotations

import json
import shlex
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ckpt_doctor.drill import marks
from ckpt_doctor.errors import InternalError
from ckpt_doctor.sources.live.client import Api, CallError
from ckpt_doctor.sources.live.kinds import (
    CLUSTERTRAININGRUNTIME,
    CONFIGMAP,
    EVENT,
    JOBSET,
    NODE,
    POD,
    PVC,
    TRAININGRUNTIME,
    TRAINJOB,
    Kind,
)
from ckpt_doctor.sources.live.logs import LogReader, LogResult

CREATABLE: dict[str, Kind] = {
    "PersistentVolumeClaim": PVC,
    "ConfigMap": CONFIGMAP,
    "TrainingRuntime": TRAININGRUNTIME,
    "ClusterTrainingRuntime": CLUSTERTRAININGRUNTIME,
    "TrainJob": TRAINJOB,
}
CREATE_ORDER = tuple(CREATABLE)  # what a TrainJob needs exists before it
KUBECTL_NAMES = {
    "TrainJob": "trainjob",
    "TrainingRuntime": "trainingruntime",
    "ClusterTrainingRuntime": "clustertrainingruntime",
    "PersistentVolumeClaim": "pvc",
    "ConfigMap": "configmap",
    "Pod": "pod",
    "Node": "node",
}
TRANSIENT = ("unreachable", "dropped", "timeout", "server")
WATCH_SECONDS = 5  # how long one pod watch request lasts: a stopped PodWatch's thread ends within it
SERVER_FIELDS = ("uid", "resourceVersion", "creationTimestamp", "generation", "managedFields", "selfLink")


class ClusterLost(Exception):
    """The cluster stopped answering, and retries with back-off did not bring it back."""


class OutOfScope(InternalError):
    """A write outside the drill's blast radius was attempted: a bug, refused before it is sent."""


@dataclass
class Change:
    """One change the drill is about to make."""

    does: str
    kubectl: list[str]
    apply: Callable[[], Any]
    result: Any = None


def q(text: str) -> str:
    return shlex.quote(text)


def compact(doc: Any) -> str:
    return json.dumps(doc, separators=(",", ":"), sort_keys=False)


@dataclass
class Scope:
    """What the drill may write: its TrainJob (and that TrainJob's pods), what it created, a node it cordons."""

    namespace: str
    trainjob: str
    created: set[tuple[str, str | None, str]] = field(default_factory=set)  # (Kind, namespace, name)
    nodes: set[str] = field(default_factory=set)

    def check(self, verb: str, kind: Kind, namespace: str | None, name: str, obj: dict[str, Any] | None = None) -> None:
        ns = namespace if kind.namespaced else None
        ours = kind is TRAINJOB and ns == self.namespace and name == self.trainjob
        if ours and verb in ("patch", "create", "delete"):
            if verb != "patch" and (kind.kind, ns, name) not in self.created:
                raise OutOfScope(f"the drill may {verb} TrainJob {ns}/{name} only if it created it")
            return
        if kind is POD and ns == self.namespace and verb in ("delete", "exec"):
            labels = ((obj or {}).get("metadata") or {}).get("labels") or {}
            if labels.get("jobset.sigs.k8s.io/jobset-name") == self.trainjob:
                return
            raise OutOfScope(f"pod {ns}/{name} is not a pod of TrainJob {self.namespace}/{self.trainjob}")
        if kind is NODE and name in self.nodes and verb == "patch":
            return
        if (kind.kind, ns, name) in self.created and verb in ("create", "delete", "patch"):
            return
        raise OutOfScope(f"the drill may not {verb} {kind.kind} {ns + '/' if ns else ''}{name}")


class Actions:
    """Reads and guarded writes of one drill against one cluster."""

    def __init__(
        self,
        api: Api,
        scope: Scope,
        drill_id: str,
        started: str,
        dry_run: bool = False,
        retries: int = 4,
        backoff: float = 0.5,
        sleep: Callable[[float], None] = time.sleep,
        on_retry: Callable[[str], None] | None = None,
    ) -> None:
        self.api = api
        self.scope = scope
        self.ns = scope.namespace
        self.name = scope.trainjob
        self.drill_id = drill_id
        self.started = started
        self.dry_run = dry_run
        self.retries = retries
        self.backoff = backoff
        self.sleep = sleep
        self.on_retry = on_retry
        self.logs = LogReader(api)
        self.writes: list[str] = []  # what was written (for the record): "PATCH TrainJob/ns/name"

    # -- one call, retried while the cluster is away ----------------------------------------------
    def call(self, what: str, fn: Callable[[], Any], retries: int | None = None, lost: bool = True) -> Any:
        """`fn()`, retried with back-off while the cluster is away; ClusterLost when it stays away (with `lost`
        False the last CallError is raised instead: an exec stream cut twice is not a cluster lost)."""
        left = self.retries if retries is None else retries
        delay = self.backoff
        while True:
            try:
                return fn()
            except CallError as e:
                if e.kind not in TRANSIENT or left <= 0:
                    if e.kind in TRANSIENT and lost:
                        raise ClusterLost(f"{what}: {e.message}") from None
                    raise
                left -= 1
                if self.on_retry is not None:
                    self.on_retry(f"{what}: {e.message}; retrying in {delay:g}s")
                self.sleep(delay)
                delay = min(delay * 2, 10.0)

    def _write(self, verb: str, kind: Kind, ns: str | None, name: str, fn: Callable[[], Any],
               obj: dict[str, Any] | None = None) -> Any:
        self.scope.check(verb, kind, ns, name, obj)
        if self.dry_run:
            raise InternalError(f"--dry-run must not write ({verb} {kind.kind} {name})")
        self.writes.append(f"{verb} {kind.kind}/{ns + '/' if ns and kind.namespaced else ''}{name}")
        return self.call(f"{verb} {kind.kind} {name}", fn)

    # -- reads -------------------------------------------------------------------------------------
    def get(self, kind: Kind, name: str, ns: str | None = None) -> dict[str, Any] | None:
        """The object, or None when it does not exist."""
        try:
            return self.call(f"get {kind.kind} {name}", lambda: self.api.get(kind, name, ns))
        except CallError as e:
            if e.kind == "notfound":
                return None
            raise

    def trainjob(self) -> dict[str, Any] | None:
        return self.get(TRAINJOB, self.name, self.ns)

    def jobset(self) -> dict[str, Any] | None:
        return self.get(JOBSET, self.name, self.ns)

    def pods(self) -> list[dict[str, Any]]:
        sel = f"jobset.sigs.k8s.io/jobset-name={self.name}"
        items, _ = self.call("list pods", lambda: self.api.list(POD, self.ns, sel))
        return items

    def nodes(self) -> list[dict[str, Any]]:
        items, _ = self.call("list nodes", lambda: self.api.list(NODE))
        return items

    def list(self, kind: Kind, ns: str | None) -> list[dict[str, Any]]:
        items, _ = self.call(f"list {kind.plural}", lambda: self.api.list(kind, ns))
        return items

    def events_of(self, kind: str, name: str) -> list[dict[str, Any]]:
        sel = f"involvedObject.kind={kind},involvedObject.name={name}"
        try:
            items, _ = self.call("list events", lambda: self.api.list(EVENT, self.ns, field_selector=sel))
        except CallError:
            return []
        return items

    def log(self, pod: str, container: str) -> bytes | None:
        """The container's current log (head and tail windows), or None when it cannot be read."""
        return self.log_result(pod, container).content

    def log_result(self, pod: str, container: str) -> LogResult:
        """The container's current log as read: its content, or why it could not be read (`gap`)."""
        return self.logs.read(self.ns, pod, container, False)

    def exec(self, pod: dict[str, Any], container: str, command: list[str], timeout: float) -> tuple[int | None, str]:
        name = str(pod["metadata"]["name"])
        self.scope.check("exec", POD, self.ns, name, pod)
        if self.dry_run:
            raise InternalError("--dry-run must not exec")
        return self.call(f"exec in {name}", lambda: self.api.exec(name, self.ns, container, command, timeout), 1,
                         lost=False)

    def watch_pods(self, on_pod: Callable[[dict[str, Any]], None]) -> PodWatch:
        """A watch on the TrainJob's pods in the background (`with act.watch_pods(fn):`): `fn` sees every state
        of every pod, the short-lived ones included (a container's exit code lasts milliseconds before its pod
        is gone: polling misses it)."""
        return PodWatch(self.api, self.ns, f"jobset.sigs.k8s.io/jobset-name={self.name}", on_pod)

    def follow_log(self, pod: dict[str, Any], container: str) -> LogFollow:
        """What the container prints from now until it ends (`kubectl logs -f --tail=0`), in the background: the
        lines a trainer prints on SIGTERM come just before its pod goes, too late for a poll."""
        return LogFollow(self.api, self.ns, str(pod["metadata"]["name"]), container)

    # -- kubectl lines -----------------------------------------------------------------------------
    def _kc(self, *words: str, namespaced: bool = True) -> str:
        head = ["kubectl", "-n", self.ns] if namespaced else ["kubectl"]
        return " ".join([*head, *words])

    def _annotate_line(self, kind: str, name: str, wanted: dict[str, str], namespaced: bool = True) -> str:
        pairs = " ".join(q(f"{k}={v}") for k, v in wanted.items())
        return self._kc("annotate", f"{KUBECTL_NAMES[kind]}/{name}", pairs, namespaced=namespaced)

    def base_marks(self) -> dict[str, str]:
        return {marks.ID: self.drill_id, marks.STARTED: self.started}

    # -- changes -----------------------------------------------------------------------------------
    def create(self, obj: dict[str, Any], file: str) -> Change:
        kind = CREATABLE[str(obj["kind"])]
        meta = obj.get("metadata") or {}
        name = str(meta["name"])
        ns = self.ns if kind.namespaced else None
        body = {k: v for k, v in obj.items() if k != "status"}
        body["metadata"] = {k: v for k, v in meta.items() if k not in SERVER_FIELDS}
        if kind.namespaced:
            body["metadata"]["namespace"] = ns
        body["metadata"]["annotations"] = {**(meta.get("annotations") or {}), **self.base_marks(),
                                           marks.CREATED: "true"}
        self.scope.created.add((kind.kind, ns, name))
        line = self._kc("create", "-f", q(file), namespaced=kind.namespaced)
        note = f"  # {obj['kind']} {name}, marked {marks.ID}={self.drill_id} {marks.CREATED}=true"

        def apply() -> dict[str, Any]:
            def once() -> dict[str, Any]:
                try:
                    return self.api.create(kind, ns, body)
                except CallError as e:
                    if e.status == 409:  # a retry of a create that had gone through: ours if it bears our mark
                        got = self.api.get(kind, name, ns)
                        if marks.drill_id(got) == self.drill_id:
                            return got
                    raise

            return self._write("create", kind, ns, name, once)

        return Change(f"create {obj['kind']} {name}", [line + note], apply)

    def _mark(self, kind: Kind, name: str, ns: str | None, obj: dict[str, Any], wanted: dict[str, str]) -> None:
        patch = marks.mark_patch(obj, wanted)
        if patch is not None:
            self._write("patch", kind, ns, name, lambda: self.api.patch(kind, name, ns, patch), obj)

    def suspend(self, value: bool) -> Change:
        tj = self.trainjob() or {}
        original = bool((tj.get("spec") or {}).get("suspend") or False)
        wanted = {**self.base_marks(), marks.SUSPEND: str(original).lower()}
        lines = []
        add = marks.mark_patch(tj, wanted)
        if add is not None:
            lines.append(self._annotate_line("TrainJob", self.name, add["metadata"]["annotations"]))
        patch = {"spec": {"suspend": value}}
        lines.append(self._kc("patch", f"trainjob/{self.name}", "--type=merge", "-p", q(compact(patch))))

        def apply() -> dict[str, Any]:
            cur = self.trainjob()
            if cur is None:
                raise CallError("notfound", f"TrainJob {self.ns}/{self.name} is gone", 404)
            self._mark(TRAINJOB, self.name, self.ns, cur, wanted)
            return self._write("patch", TRAINJOB, self.ns, self.name,
                               lambda: self.api.patch(TRAINJOB, self.name, self.ns, patch))

        return Change("suspend the TrainJob" if value else "resume the TrainJob", lines, apply)

    def delete_pod(self, pod: dict[str, Any]) -> Change:
        name = str(pod["metadata"]["name"])
        self.scope.check("delete", POD, self.ns, name, pod)

        def apply() -> Any:
            try:
                return self._write("delete", POD, self.ns, name, lambda: self.api.delete(POD, name, self.ns), pod)
            except CallError as e:
                if e.kind == "notfound":
                    return None
                raise

        return Change(f"delete the trainer pod {name}", [self._kc("delete", "pod", name)], apply)

    def kill_pid1(self, pod: dict[str, Any], container: str) -> Change:
        name = str(pod["metadata"]["name"])
        self.scope.check("exec", POD, self.ns, name, pod)
        line = self._kc("exec", name, "-c", container, "--", "kill", "1")
        return Change(f"send SIGTERM to PID 1 in {name}", [line], lambda: self.exec(pod, container, ["kill", "1"], 30))

    def steer(self, fieldname: str, job: str, hostname: str, node: str) -> Change:
        tj = self.trainjob() or {}
        entry = marks.steer_entry(fieldname, job, hostname, self.drill_id)
        wanted = {**self.base_marks(), marks.STEER: hostname}
        ops = marks.steer_add_patch(tj.get("spec") or {}, fieldname, entry)
        lines = [
            self._annotate_line("TrainJob", self.name, (marks.mark_patch(tj, wanted) or {"metadata": {
                "annotations": wanted}})["metadata"]["annotations"]),
            self._kc("patch", f"trainjob/{self.name}", "--type=json", "-p", q(compact(ops))),
        ]

        def apply() -> dict[str, Any]:
            cur = self.trainjob()
            if cur is None:
                raise CallError("notfound", f"TrainJob {self.ns}/{self.name} is gone", 404)
            self._mark(TRAINJOB, self.name, self.ns, cur, wanted)
            if marks.has_steer(cur.get("spec") or {}, hostname):
                return cur
            now_ops = marks.steer_add_patch(cur.get("spec") or {}, fieldname, entry)
            return self._write("patch", TRAINJOB, self.ns, self.name,
                               lambda: self.api.patch(TRAINJOB, self.name, self.ns, now_ops, "json"))

        return Change(f"steer the trainer to node {node} ({fieldname} nodeSelector)", lines, apply)

    def cordon(self, node: str, on: bool) -> Change:
        self.scope.nodes.add(node)
        cur = self.get(NODE, node) or {}
        lines = []
        wanted = {**self.base_marks(), marks.CORDON: "true", marks.FOR: f"{self.ns}/{self.name}"}
        if on:
            add = marks.mark_patch(cur, wanted)
            if add is not None:
                lines.append(self._annotate_line("Node", node, add["metadata"]["annotations"], namespaced=False))
        lines.append(self._kc("cordon" if on else "uncordon", node, namespaced=False))
        patch = {"spec": {"unschedulable": True if on else None}}

        def apply() -> dict[str, Any]:
            now_obj = self.get(NODE, node)
            if now_obj is None:
                raise CallError("notfound", f"node {node} is gone", 404)
            if on:
                self._mark(NODE, node, None, now_obj, wanted)
            return self._write("patch", NODE, None, node, lambda: self.api.patch(NODE, node, None, patch))

        return Change(f"{'cordon' if on else 'uncordon'} node {node}", lines, apply)

    # -- undo (cleanup) ----------------------------------------------------------------------------
    def unmark(self, kind: Kind, name: str, ns: str | None) -> Change | None:
        obj = self.get(kind, name, ns)
        patch = marks.unmark_patch(obj) if obj is not None else None
        if patch is None:
            return None
        keys = " ".join(f"{k}-" for k in patch["metadata"]["annotations"])
        line = self._kc("annotate", f"{KUBECTL_NAMES.get(kind.kind, kind.plural)}/{name}", keys,
                        namespaced=kind.namespaced)
        return Change(f"remove the drill's marks from {kind.kind} {name}", [line],
                      lambda: self._write("patch", kind, ns, name, lambda: self.api.patch(kind, name, ns, patch), obj))

    def delete(self, kind: Kind, name: str, ns: str | None) -> Change:
        def apply() -> Any:
            try:
                return self._write("delete", kind, ns, name,
                                   lambda: self.api.delete(kind, name, ns, propagation="Foreground"))
            except CallError as e:
                if e.kind == "notfound":
                    return None
                raise

        line = self._kc("delete", KUBECTL_NAMES.get(kind.kind, kind.plural), name, namespaced=kind.namespaced)
        return Change(f"delete {kind.kind} {name} (the drill created it)", [line], apply)

    def patch_trainjob(self, body: dict[str, Any] | list[Any], patch_type: str, does: str) -> Change:
        line = self._kc("patch", f"trainjob/{self.name}", f"--type={patch_type}", "-p", q(compact(body)))
        return Change(does, [line], lambda: self._write(
            "patch", TRAINJOB, self.ns, self.name, lambda: self.api.patch(TRAINJOB, self.name, self.ns, body,
                                                                          patch_type)))


class PodWatch:
    """List, then watch from the list's resourceVersion, re-listing when the watch ends, is cut or expires (410),
    until the block ends. Best effort: a watch that is refused stops with `note` saying why (the caller's polling
    still sees what it sees); nothing it meets ever reaches the caller as an exception."""

    def __init__(self, api: Api, namespace: str, selector: str, on_pod: Callable[[dict[str, Any]], None]) -> None:
        self.api = api
        self.ns = namespace
        self.selector = selector
        self.on_pod = on_pod
        self.note: str | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="drill-pod-watch", daemon=True)

    def __enter__(self) -> PodWatch:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        # not closed from here (closing a urllib3 response another thread reads blocks until that read ends): the
        # watch asks the server to end it within WATCH_SECONDS, and the thread then sees the stop and ends
        self._stop.set()

    def _run(self) -> None:
        rv: str | None = None
        while not self._stop.is_set():
            try:
                if rv is None:
                    items, rv = self.api.list(POD, self.ns, self.selector)
                    for pod in items:
                        self.on_pod(pod)
                for ev in self.api.watch(POD, self.ns, rv, self.selector, timeout_seconds=WATCH_SECONDS):
                    if self._stop.is_set():
                        return
                    obj = ev.get("object") if isinstance(ev, dict) else None
                    if not isinstance(obj, dict):
                        continue
                    if ev.get("type") == "ERROR":  # 410 Expired, or another error: list again
                        rv = None
                        break
                    rv = str((obj.get("metadata") or {}).get("resourceVersion") or rv)
                    if ev.get("type") != "BOOKMARK":
                        self.on_pod(obj)
            except CallError as e:
                if self._stop.is_set():
                    return
                if e.kind in ("forbidden", "unauthorized", "notfound", "bad"):
                    self.note = f"cannot watch the TrainJob's pods ({e.kind}: {e.message})"
                    return
                rv = None
                self._stop.wait(0.2)
            except Exception as e:  # a bug or an answer nothing expected: the watch ends, the caller goes on
                self.note = f"the watch of the TrainJob's pods ended: {type(e).__name__}: {e}"
                return


class LogFollow:
    """`kubectl logs -f --tail=0` in a thread: `data` grows until the container ends (`done`), or `error` says why
    it could not follow. Best effort, like PodWatch: nothing reaches the caller as an exception."""

    LIMIT = 8 << 20  # bytes kept: enough for the end of an attempt, bounded against an endless progress bar

    def __init__(self, api: Api, namespace: str, pod: str, container: str) -> None:
        self.api, self.ns, self.pod, self.container = api, namespace, pod, container
        self.data = bytearray()
        self.error: str | None = None
        self.done = threading.Event()
        self.opened = threading.Event()
        self._thread = threading.Thread(target=self._run, name="drill-log-follow", daemon=True)

    def __enter__(self) -> LogFollow:
        self._thread.start()
        self.opened.wait(5)  # the stream is open before the caller reads the log it extends
        return self

    def __exit__(self, *exc: object) -> None:
        pass  # the stream ends with the container (or the server's follow timeout); the thread is a daemon

    def _run(self) -> None:
        try:
            for chunk in self.api.follow_log(self.pod, self.ns, self.container, tail_lines=0,
                                             on_open=lambda _r: self.opened.set()):
                self.data += chunk
                if len(self.data) > self.LIMIT:
                    del self.data[: len(self.data) - self.LIMIT]
        except CallError as e:
            self.error = f"{e.kind}: {e.message}"
        except Exception as e:  # an answer nothing expected: following ends, the caller polls instead
            self.error = f"{type(e).__name__}: {e}"
        finally:
            self.opened.set()
            self.done.set()


def joined(before: bytes, after: bytes) -> bytes:
    """`before` (a log read once) continued by `after` (what a follow started before that read received): the
    bytes both hold are kept once."""
    for k in range(min(len(before), len(after)), 0, -1):
        if before.endswith(after[:k]):
            return before + after[k:]
    return before + after
