"""LoopbackApi: an in-memory Kubernetes API server on loopback HTTP, the sandbox's (and the test suite's, where it
grew up as `tests/fakeapi`). Standard library only; the real `kubernetes` client and a real kubectl talk to it
unchanged. What it serves and its known gaps: docs/live.md ("Try it without a cluster") and tests/fakeapi/README.md.

The store keeps one immutable JSON-shaped dict per object, keyed by (store, namespace, name), and a bounded
history of changes for watches that resume from a resourceVersion. Every write, through HTTP or through the
Python methods, bumps the global resourceVersion and wakes the open watches.
"""

from __future__ import annotations

import base64
import copy
import json
import queue
import shutil
import tarfile
import tempfile
import threading
import time
import traceback
import uuid
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, date, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, NamedTuple
from urllib.parse import parse_qs, urlsplit

from . import discovery, selection
from .discovery import RESOURCES, SUBRESOURCE_VERBS, ResourceType

DEFAULT_USER = "system:serviceaccount:default:fake"
Obj = dict[str, Any]
Select = Callable[[Obj | None], Obj | None]
_CHUNK = 64 * 1024
_REASONS = {400: "BadRequest", 401: "Unauthorized", 403: "Forbidden", 404: "NotFound", 405: "MethodNotAllowed",
            409: "Conflict", 410: "Expired", 415: "UnsupportedMediaType", 422: "Invalid", 429: "TooManyRequests",
            500: "InternalError", 503: "ServiceUnavailable", 504: "Timeout"}


class ApiError(Exception):
    """An error answered as a Kubernetes ``Status`` object."""

    def __init__(self, code: int, message: str, reason: str | None = None, details: Obj | None = None) -> None:
        super().__init__(message)
        self.code, self.message, self.details = code, message, details
        self.reason = reason or _REASONS.get(code, "Unknown")

    def status(self) -> Obj:
        out = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "message": self.message,
               "reason": self.reason, "code": self.code}
        return out if self.details is None else {**out, "details": self.details}


def _details(rt: ResourceType, name: str | None) -> Obj:
    return {**({"name": name} if name else {}), **({"group": rt.group} if rt.group else {}), "kind": rt.plural}


def _not_found(rt: ResourceType | None, name: str | None) -> ApiError:
    if rt is None or not name:
        return ApiError(404, "the server could not find the requested resource", details={})
    return ApiError(404, f'{rt.qualified} "{name}" not found', details=_details(rt, name))


@dataclass
class Fault:
    """An injected failure: matching requests answer ``status`` (``times`` times, or forever).

    ``resource`` is ``plural``, ``plural.group`` or ``plural/subresource`` (``pods/log``), as in RBAC:
    ``pods`` does not cover ``pods/log``. A plural without a group matches every group. ``namespace=""``
    matches only requests across all namespaces (what a namespace-scoped RoleBinding refuses).

    ``effect`` other than "answer": "hang" holds the request unanswered for ``hang_seconds`` (a client with a
    shorter timeout sees a timeout), then closes the connection; "drop" cuts the connection in the middle of the
    answer (a watch or a log stream after its first bytes); "half-close" (pods/exec) sends some output, then
    closes the stream without the command's exit status. ``fired`` counts the requests it answered.
    """

    verb: str | None = None
    resource: str | None = None
    namespace: str | None = None
    name: str | None = None
    status: int = 500
    times: int | None = None
    effect: str = "answer"  # answer | hang | drop | half-close
    hang_seconds: float = 5.0
    fired: int = 0

    def matches(self, verb: str, group: str, plural: str, sub: str | None, namespace: str | None,
                name: str | None) -> bool:
        if self.resource:
            res, _, fsub = self.resource.partition("/")
            fplural, _, fgroup = res.partition(".")
            if fplural != plural or fsub != (sub or "") or (fgroup and fgroup != group):
                return False
        # namespace "" matches only requests across all namespaces (a cluster-wide list or watch)
        wanted = ((self.verb, verb), (self.namespace, namespace if self.namespace != "" else namespace or ""),
                  (self.name, name))
        return all(w is None or w == got for w, got in wanted)


class FaultEffect(Exception):
    """A matched fault whose effect is not an answer (hang, drop, half-close): the request handler enacts it."""

    def __init__(self, fault: Fault) -> None:
        super().__init__(fault.effect)
        self.fault = fault


class RequestRecord(NamedTuple):
    method: str
    path: str
    query: dict[str, str]
    status: int


class _Change(NamedTuple):
    rv: int
    type: str  # ADDED, MODIFIED, DELETED
    store: str
    new: Obj
    old: Obj | None


class _Stream(NamedTuple):
    """A chunked response body: ``run(emit)`` writes it piece by piece."""

    content_type: str
    run: Callable[[Callable[[bytes], None]], None]


class _Dropped(Exception):
    """Raised inside a watch stream to cut the connection without the final chunk."""


class _Log:
    """A container log: an optional file on disk (never read whole) plus bytes appended in memory."""

    def __init__(self, path: Path | None = None, data: bytes = b"") -> None:
        self.path, self.extra = path, bytearray(data)

    def _disk(self) -> int:
        return self.path.stat().st_size if self.path else 0

    def size(self) -> int:
        return self._disk() + len(self.extra)

    def read(self, start: int, end: int) -> Iterator[bytes]:
        disk = self._disk()
        if self.path and start < min(end, disk):
            with self.path.open("rb") as f:
                f.seek(start)
                left = min(end, disk) - start
                while left > 0 and (chunk := f.read(min(_CHUNK, left))):
                    left -= len(chunk)
                    yield chunk
        lo, hi = max(start - disk, 0), max(end - disk, 0)
        if hi > lo:
            yield bytes(self.extra[lo:hi])

    def tail_start(self, lines: int) -> int:
        """Offset of the first of the last ``lines`` lines, found by reading backwards from the end."""
        pos = self.size()
        if lines <= 0:
            return pos
        if pos and b"".join(self.read(pos - 1, pos)) == b"\n":
            pos -= 1  # the final newline ends the last line
        found = 0
        while pos > 0:
            lo = max(0, pos - _CHUNK)
            block, idx = b"".join(self.read(lo, pos)), None
            while (idx := block.rfind(b"\n", 0, idx)) >= 0:
                found += 1
                if found == lines:
                    return lo + idx + 1
            pos = lo
        return 0


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    allow_reuse_address = True
    fake: LoopbackApi

    def handle_error(self, request: Any, client_address: Any) -> None:  # clients that hang up: stay quiet
        pass


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body are separate writes: avoid 40 ms delayed-ACK stalls
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        self.server.fake._handle(self)

    do_POST = do_PUT = do_PATCH = do_DELETE = do_GET


class LoopbackApi:
    """An in-memory kube-apiserver. ``with LoopbackApi() as kube: ...`` or ``url = kube.start()`` ... ``kube.stop()``.

    ``server_version`` is the ``gitVersion`` /version reports; the sandbox marks itself there with build metadata,
    as distributions do (``v1.29.3+k3s1``): see ckpt_doctor.simulation."""

    def __init__(self, *, port: int = 0, latency_ms: int = 0, user: str = DEFAULT_USER,
                 server_version: str = "v1.33.1", history_size: int = 10_000) -> None:
        self.port, self.latency_ms, self.user, self.server_version = port, latency_ms, user, server_version
        self.watch_timeout = 1800.0  # seconds, for watches without timeoutSeconds
        self.bookmark_interval: float | None = None  # seconds between BOOKMARKs on idle allowWatchBookmarks watches
        self.watch_event_delay_ms = 0  # a slow watch: this long before each event is sent
        self.follow_timeout = 60.0  # seconds a ``follow=true`` log stream stays open
        self.requests: list[RequestRecord] = []
        self.errors: list[str] = []  # tracebacks of bugs in the fake itself (answered as 500)
        self.skipped: list[str] = []  # what load_bundle could not load, and why
        self._types: dict[tuple[str, str, str], ResourceType] = {}
        self._by_kind: dict[tuple[str, str], ResourceType] = {}
        for rt in RESOURCES:
            self.register(rt)
        self._lock = threading.RLock()
        self._log_cond = threading.Condition(self._lock)
        self._objects: dict[tuple[str, str, str], Obj] = {}
        self._logs: dict[tuple[str, str, str, bool], _Log] = {}
        self._rv = 0
        self._floor = 0  # watches from a resourceVersion below this get 410 Expired
        self._history: deque[_Change] = deque(maxlen=history_size)
        self._watchers: dict[queue.Queue[_Change | None], str] = {}
        self._faults: list[Fault] = []
        self._drop_after: int | None = None
        self._stopping = threading.Event()
        self._httpd: _Server | None = None
        self._tempdirs: list[Path] = []
        self._taps: list[queue.Queue[_Change]] = []  # in-process controllers' feeds of every change
        # serves WebSocket upgrades (pods/exec): (handler, path, query with repeated keys) -> HTTP status
        self.upgrade: Callable[[Any, str, dict[str, list[str]]], int] | None = None

    # ---- lifecycle ----------------------------------------------------------------------------------------

    def start(self) -> str:
        """Serve on 127.0.0.1 in a daemon thread; returns the base URL."""
        self._httpd = _Server(("127.0.0.1", self.port), _Handler)
        self._httpd.fake = self
        self.port = self._httpd.server_address[1]
        threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True,
                         name=f"fakekube-{self.port}").start()
        return self.url

    def stop(self) -> None:
        """Stop serving, end open watches and log follows, remove extracted bundles."""
        self._stopping.set()
        with self._lock:
            for q in self._watchers:
                q.put(None)
            self._log_cond.notify_all()
        if self._httpd:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None
        for d in self._tempdirs:
            shutil.rmtree(d, ignore_errors=True)
        self._tempdirs.clear()

    def __enter__(self) -> LoopbackApi:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def kubeconfig(self, path: str | Path, namespace: str = "default", context: str = "fake") -> Path:
        """Write a kubeconfig for this server (dummy bearer token) and return its path."""
        path = Path(path)
        path.write_text(f"apiVersion: v1\nkind: Config\ncurrent-context: {context}\npreferences: {{}}\n"
                        f"clusters:\n- name: {context}\n  cluster:\n    server: {self.url}\n"
                        f"users:\n- name: {context}\n  user:\n    token: fake-token\n"
                        f"contexts:\n- name: {context}\n  context:\n    cluster: {context}\n"
                        f"    user: {context}\n    namespace: {namespace}\n")
        return path

    # ---- seeding from Python (every change notifies watches) ----------------------------------------------

    def register(self, rt: ResourceType) -> None:
        """Serve one more resource type (discovery included)."""
        self._types[(rt.group, rt.version, rt.plural)] = rt
        self._by_kind.setdefault((rt.api_version, rt.kind), rt)

    def add(self, obj: Obj) -> Obj:
        """Create or replace an object (ADDED or MODIFIED); creates its Namespace if missing."""
        rt = self._type_of(obj)
        with self._lock:
            obj = self._canonical(rt, obj)
            if rt.namespaced:
                self._ensure_namespace(obj["metadata"]["namespace"])
            return copy.deepcopy(self._put(rt, obj, create=None))

    def add_many(self, objs: Iterable[Obj]) -> None:
        for obj in objs:
            self.add(obj)

    def update(self, obj: Obj) -> Obj:
        """Replace an existing object as given (status included); KeyError if it does not exist."""
        rt = self._type_of(obj)
        with self._lock:
            obj = self._canonical(rt, obj)
            ns, name = obj["metadata"].get("namespace"), obj["metadata"]["name"]
            if self._key(rt, ns, name) not in self._objects:
                raise KeyError(f"{rt.qualified} {ns}/{name}")
            return copy.deepcopy(self._put(rt, obj, create=False))

    def delete(self, resource: str, namespace: str | None, name: str) -> Obj:
        """Delete by plural, Kind or short name (optionally ``.group``); KeyError if absent."""
        rt = self._resolve(resource)
        with self._lock:
            if self._key(rt, namespace, name) not in self._objects:
                raise KeyError(f"{rt.qualified} {namespace}/{name}")
            return copy.deepcopy(self._render(rt, self._remove(rt, namespace, name)))

    def get(self, resource: str, namespace: str | None, name: str) -> Obj | None:
        rt = self._resolve(resource)
        with self._lock:
            obj = self._objects.get(self._key(rt, namespace, name))
            return copy.deepcopy(self._render(rt, obj)) if obj else None

    def objects(self, resource: str, namespace: str | None = None) -> list[Obj]:
        rt = self._resolve(resource)
        with self._lock:
            return [copy.deepcopy(self._render(rt, o)) for k, o in self._sorted(rt.store)
                    if namespace is None or k[1] == namespace]

    @property
    def resource_version(self) -> str:
        return str(self._rv)

    def compact(self) -> None:
        """Forget the change history: watches from any older resourceVersion now get 410 Expired."""
        with self._lock:
            self._floor = self._rv
            self._history.clear()

    def set_log(self, namespace: str, pod: str, container: str, data: bytes | str | Path,
                previous: bool = False) -> None:
        """Set a container log: bytes/str kept in memory, or a Path served lazily from disk."""
        log = _Log(path=data) if isinstance(data, Path) else _Log(data=_bytes(data))
        with self._log_cond:
            self._logs[(namespace, pod, container, previous)] = log
            self._log_cond.notify_all()

    def get_log(self, namespace: str, pod: str, container: str, previous: bool = False) -> bytes:
        """A container log as it is now (b"" when there is none)."""
        with self._lock:
            log = self._logs.get((namespace, pod, container, previous))
        return b"".join(log.read(0, log.size())) if log is not None else b""

    def append_log(self, namespace: str, pod: str, container: str, data: bytes | str,
                   previous: bool = False) -> None:
        """Append to a log (in memory: files on disk are never written); wakes ``follow`` streams."""
        with self._log_cond:
            self._logs.setdefault((namespace, pod, container, previous), _Log()).extra += _bytes(data)
            self._log_cond.notify_all()

    # ---- faults and request recording ---------------------------------------------------------------------

    def fault(self, verb: str | None = None, resource: str | None = None, namespace: str | None = None,
              name: str | None = None, status: int = 500, times: int | None = None, effect: str = "answer",
              hang_seconds: float = 5.0) -> Fault:
        """Make matching requests fail with ``status`` (403 answers a realistic Forbidden), or hang, or be cut."""
        if effect not in ("answer", "hang", "drop", "half-close"):
            raise ValueError(f"unknown fault effect {effect!r}")
        f = Fault(verb, resource, namespace, name, status, times, effect, hang_seconds)
        with self._lock:
            self._faults.append(f)
        return f

    def unfault(self, f: Fault) -> None:
        """Remove one fault (if it is still there)."""
        with self._lock:
            if f in self._faults:
                self._faults.remove(f)

    def drop_watches_after(self, n_events: int | None) -> None:
        """Cut every watch stream abruptly once it has sent ``n_events`` events (None: never)."""
        self._drop_after = n_events

    def end_watches(self) -> None:
        """End every open watch stream cleanly (as an apiserver restart or a watch timeout does)."""
        with self._lock:
            for q in self._watchers:
                q.put(None)

    def clear_faults(self) -> None:
        """Remove all faults and watch drops (``latency_ms`` is left as is)."""
        with self._lock:
            self._faults.clear()
            self._drop_after = None

    def count(self, method: str | None = None, path_contains: str | None = None) -> int:
        with self._lock:
            return sum(1 for r in self.requests if (method is None or r.method == method.upper())
                       and (path_contains is None or path_contains in r.path))

    def reset_requests(self) -> None:
        with self._lock:
            self.requests.clear()

    def tap(self) -> queue.Queue[_Change]:
        """A queue that receives every later change (rv, type, store, new, old), for in-process controllers."""
        q: queue.Queue[_Change] = queue.Queue()
        with self._lock:
            self._taps.append(q)
        return q

    def untap(self, q: queue.Queue[_Change]) -> None:
        with self._lock:
            if q in self._taps:
                self._taps.remove(q)

    # ---- bundles ------------------------------------------------------------------------------------------

    def load_bundle(self, path: str | Path) -> int:
        """Load a bundle directory or .tar.gz (contracts.md §2); returns how many objects were added.

        Logs are served lazily from their files; a log belongs to the namespace(s) of the Pod of that name.
        What cannot be loaded (unknown kinds, unparsable files, logs without a Pod) goes to ``skipped``.
        """
        root = Path(path)
        if root.is_file():
            root = self._extract(root)
        objs, logs, skipped = _read_bundle(root)
        self.skipped += skipped
        added = 0
        for where, obj in objs:
            try:
                self.add(obj)
                added += 1
            except ValueError as e:
                self.skipped.append(f"{where}: {e}")
        with self._lock:
            pod_namespaces: dict[str, list[str]] = {}
            for store, ns, name in self._objects:
                if store == "pods":
                    pod_namespaces.setdefault(name, []).append(ns)
        for (pod, container, previous), file in logs.items():
            if pod not in pod_namespaces:
                self.skipped.append(f"{file.relative_to(root)}: no Pod named {pod!r}")
            for ns in pod_namespaces.get(pod, []):
                self.set_log(ns, pod, container, file, previous)
        return added

    def _extract(self, archive: Path) -> Path:
        dest = Path(tempfile.mkdtemp(prefix="fakekube-bundle-")).resolve()
        self._tempdirs.append(dest)
        with tarfile.open(archive, "r:*") as tar:
            for m in tar.getmembers():
                if not (m.isfile() or m.isdir()) or not (dest / m.name).resolve().is_relative_to(dest):
                    raise ValueError(f"unsafe member in {archive.name}: {m.name!r}")
            tar.extractall(dest, **({"filter": "data"} if hasattr(tarfile, "data_filter") else {}))
        entries = list(dest.iterdir())
        return entries[0] if len(entries) == 1 and entries[0].is_dir() else dest

    # ---- the store ----------------------------------------------------------------------------------------

    def _type_of(self, obj: Obj) -> ResourceType:
        rt = self._by_kind.get((obj.get("apiVersion", ""), obj.get("kind", "")))
        if rt is None:
            raise ValueError(f"kind {obj.get('apiVersion')}/{obj.get('kind')} is not served by the fake")
        return rt

    def _resolve(self, resource: str) -> ResourceType:
        name, _, group = resource.partition(".")
        for rt in self._types.values():
            if (not group or group == rt.group) and name in (rt.plural, rt.kind, rt.kind.lower(), *rt.short_names):
                return rt
        raise KeyError(f"unknown resource {resource!r}")

    @staticmethod
    def _key(rt: ResourceType, namespace: str | None, name: str) -> tuple[str, str, str]:
        return (rt.store, (namespace or "") if rt.namespaced else "", name)

    def _sorted(self, store: str) -> list[tuple[tuple[str, str, str], Obj]]:
        return sorted(((k, o) for k, o in self._objects.items() if k[0] == store), key=lambda kv: kv[0])

    def _canonical(self, rt: ResourceType, obj: Obj) -> Obj:
        """A private deep copy in stored shape (core/v1 for events), with defaults filled in."""
        obj = json.loads(json.dumps(obj, default=_plain))
        events = rt.store == "events"
        if events and rt.group:
            obj = _convert_event(obj, to_core=True)
        obj["apiVersion"], obj["kind"] = ("v1", "Event") if events else (rt.api_version, rt.kind)
        meta = obj.setdefault("metadata", {})
        if not meta.get("name"):
            raise ValueError(f"{rt.kind} without metadata.name")
        for k in ("labels", "annotations"):  # omitempty, as the apiserver serialises ObjectMeta
            if k in meta and not meta[k]:
                del meta[k]
        if rt.namespaced:
            meta["namespace"] = meta.get("namespace") or "default"
        else:
            meta.pop("namespace", None)
        return obj

    def _put(self, rt: ResourceType, obj: Obj, *, create: bool | None) -> Obj:
        """Store ``obj`` (canonical, private); create=True/False/None: must be new/must exist/either."""
        meta = obj["metadata"]
        key = self._key(rt, meta.get("namespace"), meta["name"])
        old = self._objects.get(key)
        if create and old is not None:
            raise ApiError(409, f'{rt.qualified} "{meta["name"]}" already exists', "AlreadyExists",
                           _details(rt, meta["name"]))
        self._rv += 1
        meta["resourceVersion"] = str(self._rv)
        if old is not None:
            meta["uid"], meta["creationTimestamp"] = old["metadata"]["uid"], old["metadata"]["creationTimestamp"]
        meta.setdefault("uid", str(uuid.uuid4()))
        meta.setdefault("creationTimestamp", datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"))
        self._objects[key] = obj
        self._commit(_Change(self._rv, "MODIFIED" if old else "ADDED", rt.store, obj, old))
        return obj

    def _remove(self, rt: ResourceType, namespace: str | None, name: str) -> Obj:
        old = self._objects.pop(self._key(rt, namespace, name))
        self._rv += 1
        gone = {**old, "metadata": {**old["metadata"], "resourceVersion": str(self._rv)}}
        self._commit(_Change(self._rv, "DELETED", rt.store, gone, old))
        return gone

    def _ended(self, pods: ResourceType, ns: str | None, name: str | None, container: str) -> bool:
        """A followed container is over: its pod is gone, or the container terminated (kubectl logs -f returns)."""
        pod = self._objects.get(self._key(pods, ns, name or ""))
        if pod is None:
            return True
        for cs in (pod.get("status") or {}).get("containerStatuses") or []:
            if cs.get("name") == container and "terminated" in (cs.get("state") or {}):
                return True
        return False

    def _commit(self, change: _Change) -> None:
        if change.store == "pods":  # a pod gone or a container ended: its log follows may end (under _lock)
            self._log_cond.notify_all()
        if len(self._history) == self._history.maxlen:
            self._floor = self._history[0].rv
        self._history.append(change)
        for q, store in self._watchers.items():
            if store == change.store:
                q.put(change)
        for t in self._taps:
            t.put(change)

    def _ensure_namespace(self, ns: str) -> None:
        rt = self._types[("", "v1", "namespaces")]
        if self._key(rt, None, ns) not in self._objects:
            meta = {"name": ns, "labels": {"kubernetes.io/metadata.name": ns}}
            self._put(rt, {"apiVersion": "v1", "kind": "Namespace", "metadata": meta,
                           "spec": {"finalizers": ["kubernetes"]}, "status": {"phase": "Active"}}, create=True)

    @staticmethod
    def _render(rt: ResourceType, obj: Obj) -> Obj:
        return _convert_event(obj, to_core=False) if rt.store == "events" and rt.group else obj

    # ---- HTTP ---------------------------------------------------------------------------------------------

    def _handle(self, h: _Handler) -> None:
        if self.latency_ms:
            time.sleep(self.latency_ms / 1000)
        url = urlsplit(h.path)
        path = "/" + url.path.strip("/")
        query = {k: v[-1] for k, v in parse_qs(url.query, keep_blank_values=True).items()}
        if self.upgrade is not None and h.headers.get("Upgrade", "").lower() == "websocket":
            code = self.upgrade(h, path, parse_qs(url.query, keep_blank_values=True))
            with self._lock:
                self.requests.append(RequestRecord(h.command, path, query, code))
            h.close_connection = True
            return
        body = h.rfile.read(int(h.headers.get("Content-Length") or 0))
        try:
            code, payload = self._route(h.command, path, query, body, h.headers)
        except FaultEffect as e:
            with self._lock:
                self.requests.append(RequestRecord(h.command, path, query, 0))
            self._enact(h, e.fault, streaming=_truthy(query.get("watch")) or _truthy(query.get("follow")))
            return
        except ApiError as e:
            code, payload = e.code, e.status()
        except Exception as e:
            self.errors.append(traceback.format_exc())
            code, payload = 500, ApiError(500, f"Internal error occurred: {e}").status()
        with self._lock:
            self.requests.append(RequestRecord(h.command, path, query, code))
        try:
            if isinstance(payload, _Stream):
                self._send_stream(h, code, payload)
                return
            data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
            h.send_response(code)
            h.send_header("Content-Type", "text/plain" if isinstance(payload, bytes) else "application/json")
            h.send_header("Content-Length", str(len(data)))
            h.end_headers()
            h.wfile.write(data)
        except OSError:
            h.close_connection = True
        except Exception:  # a bug while streaming: record it, cut the connection
            self.errors.append(traceback.format_exc())
            h.close_connection = True

    def _enact(self, h: _Handler, f: Fault, streaming: bool) -> None:
        """A fault that does not answer: hold the request, or cut the connection in the middle of an answer."""
        h.close_connection = True
        try:
            if f.effect == "hang":
                self._stopping.wait(f.hang_seconds)
                return
            h.send_response(200)
            h.send_header("Content-Type", "application/json")
            if streaming:  # a watch or a log follow: its first bytes, then the connection is gone
                h.send_header("Transfer-Encoding", "chunked")
                h.end_headers()
                h.wfile.write(b"4\r\n{\"ty\r\n")
            else:  # a JSON answer cut short of its Content-Length
                h.send_header("Content-Length", "4096")
                h.end_headers()
                h.wfile.write(b'{"kind": "Sta')
            h.wfile.flush()
        except OSError:
            pass

    @staticmethod
    def _send_stream(h: _Handler, code: int, stream: _Stream) -> None:
        h.send_response(code)
        h.send_header("Content-Type", stream.content_type)
        h.send_header("Transfer-Encoding", "chunked")
        h.end_headers()

        def emit(data: bytes) -> None:
            if data:
                h.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
                h.wfile.flush()

        try:
            stream.run(emit)
            h.wfile.write(b"0\r\n\r\n")
        except (_Dropped, OSError):
            h.close_connection = True

    def _route(self, method: str, path: str, query: dict[str, str], body: bytes, headers: Any) -> tuple[int, Any]:
        types = self._types.values()
        if path in ("/healthz", "/livez", "/readyz"):
            return 200, b"ok"
        if path == "/version":
            return 200, discovery.version_info(self.server_version)
        if path == "/api":
            return 200, discovery.core_versions(f"127.0.0.1:{self.port}")
        if path == "/apis":
            return 200, discovery.group_list(types)
        parts = path.strip("/").split("/")
        if parts[0] == "api" and len(parts) >= 2:
            group, version, rest = "", parts[1], parts[2:]
        elif parts[0] == "apis" and len(parts) >= 3:
            group, version, rest = parts[1], parts[2], parts[3:]
        elif parts[0] == "apis" and len(parts) == 2 and (doc := discovery.group(types, parts[1])):
            return 200, doc
        else:
            raise _not_found(None, None)
        if not rest:
            if (doc := discovery.resource_list(types, group, version)) is None:
                raise _not_found(None, None)
            return 200, doc
        ns = None
        if rest[0] == "namespaces" and len(rest) >= 3 and rest[2] not in ("status", "finalize"):
            ns, rest = rest[1], rest[2:]
        plural, name, sub = (*rest, None, None)[:3]
        rt = self._types.get((group, version, plural))
        if (rt is None or len(rest) > 3 or (ns is not None and not rt.namespaced)
                or (name and rt.namespaced and ns is None) or (sub and sub not in rt.subresources)):
            raise _not_found(None, None)
        if method == "GET":
            verb = "get" if name else ("watch" if _truthy(query.get("watch")) else "list")
        else:
            verb = {"POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}[method]
        on_collection = method != "GET" and bool(name) == (verb == "create")  # no deletecollection, no POST to a name
        if verb not in (SUBRESOURCE_VERBS[sub] if sub else rt.verbs) or on_collection:
            raise ApiError(405, "the server does not allow this method on the requested resource")
        self._check_faults(verb, rt, sub, ns, name)
        if body and "protobuf" in headers.get("Content-Type", ""):
            raise ApiError(415, "the fake API server only accepts JSON request bodies (not protobuf)")
        if rt.plural == "selfsubjectaccessreviews":
            return 201, self._access_review(_json_body(body))
        if sub == "log":
            return 200, self._pod_log(ns, name, query)
        if verb == "get":
            with self._lock:
                if (obj := self._objects.get(self._key(rt, ns, name))) is None:
                    raise _not_found(rt, name)
            return 200, self._render(rt, obj)
        if verb == "list":
            return 200, self._list(rt, ns, query)
        if verb == "watch":
            return 200, self._watch(rt, ns, query)
        dry = query.get("dryRun") == "All"  # validate and answer, but do not persist
        if verb == "delete":
            with self._lock:
                if (obj := self._objects.get(self._key(rt, ns, name))) is None:
                    raise _not_found(rt, name)
                return 200, self._render(rt, obj if dry else self._remove(rt, ns, name))
        written = self._api_write(verb, rt, ns, name, sub, body, headers.get("Content-Type", ""), dry)
        return (201 if verb == "create" else 200), written

    def _check_faults(self, verb: str, rt: ResourceType, sub: str | None, ns: str | None, name: str | None) -> None:
        with self._lock:
            for f in self._faults:
                if f.matches(verb, rt.group, rt.plural, sub, ns, name):
                    if f.times is not None:
                        f.times -= 1
                        if f.times <= 0:
                            self._faults.remove(f)
                    f.fired += 1
                    if f.effect != "answer":
                        raise FaultEffect(f)
                    raise self._fault_error(f, verb, rt, sub, ns, name)

    def _fault_error(self, f: Fault, verb: str, rt: ResourceType, sub: str | None, ns: str | None,
                     name: str | None) -> ApiError:
        if f.status == 403:  # worded as the apiserver's RBAC denial
            scope = f'in the namespace "{ns}"' if ns else "at the cluster scope"
            who = f'{rt.qualified} "{name}"' if name else rt.qualified
            resource = f"{rt.plural}/{sub}" if sub else rt.plural
            return ApiError(403, f'{who} is forbidden: User "{self.user}" cannot {verb} resource "{resource}" '
                                 f'in API group "{rt.group}" {scope}', details=_details(rt, name))
        if f.status == 404:
            return _not_found(rt, name)
        if f.status == 500:
            return ApiError(500, "Internal error occurred: injected fault",
                            details={"causes": [{"message": "injected fault"}]})
        return ApiError(f.status, f"injected fault ({f.status})", details={})

    def _access_review(self, body: Obj) -> Obj:
        spec, allowed = body.get("spec") or {}, True
        if ra := spec.get("resourceAttributes"):
            asked = (ra.get("verb", ""), ra.get("group", ""), ra.get("resource", ""), ra.get("subresource") or None,
                     ra.get("namespace") or None, ra.get("name") or None)
            with self._lock:
                allowed = not any(f.status == 403 and f.matches(*asked) for f in self._faults)
        return {"kind": "SelfSubjectAccessReview", "apiVersion": "authorization.k8s.io/v1",
                "metadata": {"creationTimestamp": None}, "spec": spec, "status": {"allowed": allowed}}

    # ---- list and watch -----------------------------------------------------------------------------------

    def _selector(self, rt: ResourceType, ns: str | None, query: dict[str, str]) -> tuple[Select, bool]:
        """A function giving the served form of a stored object if it matches, else None; and "has selectors"."""
        try:
            labels = selection.parse_labels(query.get("labelSelector", ""))
            fields = selection.parse_fields(query.get("fieldSelector", ""))
        except selection.SelectorError as e:
            raise ApiError(400, str(e)) from None
        paths = rt.field_paths()
        for term in fields:
            if term.field not in paths:
                raise ApiError(400, f'"{term.field}" is not a known field selector: only "metadata.name", '
                                    '"metadata.namespace"' if rt.crd else f"field label not supported: {term.field}")

        def select(obj: Obj | None) -> Obj | None:
            if obj is None or (ns and obj["metadata"].get("namespace") != ns):
                return None
            served = self._render(rt, obj)
            ok = selection.match_labels(labels, served["metadata"].get("labels"))
            return served if ok and selection.match_fields(fields, served, paths) else None

        return select, bool(labels or fields)

    def _list(self, rt: ResourceType, ns: str | None, query: dict[str, str]) -> Obj:
        select, filtered = self._selector(rt, ns, query)
        limit = _int(query.get("limit") or "0", "limit")
        after: tuple[str, str] | None = None
        with self._lock:
            rv = self._rv
            if token := query.get("continue"):
                try:
                    state = json.loads(base64.urlsafe_b64decode(token))
                    rv, after = int(state["rv"]), tuple(state["start"])
                except Exception:
                    raise ApiError(400, "continue key is not valid: incorrect encoded start resourceVersion "
                                        "(version meta.k8s.io/v1)") from None
                if rv < self._floor:
                    raise ApiError(410, "The provided continue parameter is too old to display a consistent list "
                                        "result. You can start a new list without the continue parameter.")
            candidates = [(k, o) for k, o in self._sorted(rt.store) if after is None or k[1:] > after]
        items, meta, last = [], {"resourceVersion": str(rv)}, None
        for i, (key, obj) in enumerate(candidates):
            if (served := select(obj)) is None:
                continue
            if limit and len(items) == limit:  # a page is full and more match: hand out a continue token
                meta["continue"] = base64.urlsafe_b64encode(json.dumps({"rv": rv, "start": last}).encode()).decode()
                if not filtered:
                    meta["remainingItemCount"] = len(candidates) - i
                break
            items.append(served)
            last = list(key[1:])
        if not rt.crd:  # built-in lists carry no apiVersion/kind on their items
            items = [{k: v for k, v in o.items() if k not in ("apiVersion", "kind")} for o in items]
        return {"kind": f"{rt.kind}List", "apiVersion": rt.api_version, "metadata": meta, "items": items}

    def _classify(self, rt: ResourceType, change: _Change, select: Select) -> tuple[str, Obj] | None:
        """The event a watcher with this selector sees for a change (objects moving in or out of it too)."""
        new = select(change.new)
        if change.type == "DELETED":
            return ("DELETED", new) if new else None
        old = select(change.old)
        if new:
            return ("MODIFIED" if old else "ADDED", new)
        return ("DELETED", self._render(rt, change.new)) if old else None

    def _watch(self, rt: ResourceType, ns: str | None, query: dict[str, str]) -> _Stream:
        select, _ = self._selector(rt, ns, query)
        timeout = _int(query.get("timeoutSeconds") or "0", "timeoutSeconds") or self.watch_timeout
        since = _int(query.get("resourceVersion") or "0", "resourceVersion")
        bookmark = not since and _truthy(query.get("sendInitialEvents"))
        bookmarks = _truthy(query.get("allowWatchBookmarks"))

        def run(emit: Callable[[bytes], None]) -> None:
            sent, deadline, q = 0, time.monotonic() + timeout, queue.Queue[_Change | None]()

            def send(etype: str, obj: Obj) -> None:
                nonlocal sent
                if self._drop_after is not None and sent >= self._drop_after:
                    raise _Dropped
                if self.watch_event_delay_ms:
                    time.sleep(self.watch_event_delay_ms / 1000)
                emit(json.dumps({"type": etype, "object": obj}).encode() + b"\n")
                sent += 1
                if self._drop_after is not None and sent >= self._drop_after:
                    raise _Dropped

            with self._lock:  # the backlog and the registration are atomic: no change is missed or doubled
                if since and since < self._floor:
                    message = f"too old resource version: {since} ({self._floor + 1})"
                    return send("ERROR", ApiError(410, message, "Expired").status())
                if not since:  # "" or "0": the current state as ADDED, then changes
                    backlog = [("ADDED", s) for _, o in self._sorted(rt.store) if (s := select(o))]
                else:
                    backlog = [e for c in self._history
                               if c.rv > since and c.store == rt.store and (e := self._classify(rt, c, select))]
                self._watchers[q], start_rv = rt.store, self._rv
            try:
                for event in backlog:
                    send(*event)
                if bookmark:
                    meta = {"resourceVersion": str(start_rv), "annotations": {"k8s.io/initial-events-end": "true"}}
                    send("BOOKMARK", {"kind": rt.kind, "apiVersion": rt.api_version, "metadata": meta})
                next_mark = time.monotonic() + (self.bookmark_interval or 0)
                while not self._stopping.is_set() and (left := deadline - time.monotonic()) > 0:
                    periodic = bookmarks and self.bookmark_interval
                    try:
                        change = q.get(timeout=min(left, max(0.0, next_mark - time.monotonic())) if periodic else left)
                    except queue.Empty:
                        if not periodic or time.monotonic() >= deadline:
                            break
                        with self._lock:  # only when every change so far was sent: the bookmark skips none
                            mark_rv = str(self._rv) if q.empty() else None
                        if mark_rv is not None:
                            send("BOOKMARK", {"kind": rt.kind, "apiVersion": rt.api_version,
                                              "metadata": {"resourceVersion": mark_rv}})
                        next_mark = time.monotonic() + (self.bookmark_interval or 0)
                        continue
                    if change is None:
                        break
                    if event := self._classify(rt, change, select):
                        send(*event)
            finally:
                with self._lock:
                    self._watchers.pop(q, None)

        return _Stream("application/json", run)

    # ---- writes -------------------------------------------------------------------------------------------

    def _api_write(self, verb: str, rt: ResourceType, ns: str | None, name: str | None, sub: str | None,
                   body: bytes, content_type: str, dry: bool) -> Obj:
        with self._lock:
            if verb == "create":
                new = _json_body(body)
                meta = new.setdefault("metadata", {})
                if not meta.get("name") and meta.get("generateName"):
                    meta["name"] = meta["generateName"] + uuid.uuid4().hex[:5]
                if not (name := meta.get("name")):
                    raise ApiError(422, f'{rt.kind} "" is invalid: metadata.name: Required value: name or '
                                        "generateName is required")
                if "status" in rt.subresources:
                    new.pop("status", None)  # status is written through its subresource only
                namespaces = self._types[("", "v1", "namespaces")]
                if ns and self._key(namespaces, None, ns) not in self._objects:
                    raise _not_found(namespaces, ns)
            else:
                if (stored := self._objects.get(self._key(rt, ns, name or ""))) is None:
                    raise _not_found(rt, name)
                old = self._render(rt, stored)
                new = _json_body(body) if verb == "update" else _apply_patch(old, body, content_type)
                if not isinstance(new, dict):
                    raise ApiError(400, "the body of the request must be a JSON object")
                meta = new.setdefault("metadata", {})
                if meta.get("name", name) != name:
                    raise ApiError(400, f"the name of the object ({meta['name']}) does not match the name on the "
                                        f"URL ({name})")
                if meta.get("resourceVersion") not in (None, "", old["metadata"]["resourceVersion"]):
                    raise ApiError(409, f'Operation cannot be fulfilled on {rt.qualified} "{name}": the object has '
                                        "been modified; please apply your changes to the latest version and try "
                                        "again", details=_details(rt, name))
                if sub == "status":
                    new = {**old, "status": new.get("status")}
                elif "status" in rt.subresources:
                    new = {**new, "status": old.get("status")}
                new = {k: v for k, v in new.items() if not (k == "status" and v is None)}
            if rt.namespaced and meta.get("namespace", ns) != ns:
                raise ApiError(400, "the namespace of the provided object does not match the namespace sent on the "
                                    "request")
            if (new.setdefault("apiVersion", rt.api_version), new.setdefault("kind", rt.kind)) != (
                    rt.api_version, rt.kind):
                raise ApiError(400, f"the API version in the data ({new['apiVersion']}) does not match the expected "
                                    f"API version ({rt.api_version})")
            new = self._canonical(rt, {**new, "metadata": {**new["metadata"], "name": name, "namespace": ns}})
            return self._render(rt, new if dry else self._put(rt, new, create=verb == "create"))

    # ---- logs ---------------------------------------------------------------------------------------------

    def _pod_log(self, ns: str | None, name: str | None, query: dict[str, str]) -> _Stream:
        pods = self._types[("", "v1", "pods")]
        with self._lock:
            if (pod := self._objects.get(self._key(pods, ns, name or ""))) is None:
                raise _not_found(pods, name)
            spec = pod.get("spec") or {}
            names = [c.get("name") for c in spec.get("containers") or []]
            inits = [c.get("name") for k in ("initContainers", "ephemeralContainers") for c in spec.get(k) or []]
            if not (container := query.get("container")):
                candidates = names or sorted({k[2] for k in self._logs if k[:2] == (ns, name)})
                if len(candidates) != 1:
                    extra = f" or one of the init containers: [{' '.join(inits)}]" if inits else ""
                    raise ApiError(400, f"a container name must be specified for pod {name}, choose one of: "
                                        f"[{' '.join(names)}]{extra}")
                container = candidates[0]
            if (names or inits) and container not in names + inits:
                raise ApiError(400, f"container {container} is not valid for pod {name}")
            key = (ns or "", name or "", container, _truthy(query.get("previous")))
            if key[3] and key not in self._logs:
                raise ApiError(400, f'previous terminated container "{container}" in pod "{name}" not found')
            log = self._logs.setdefault(key, _Log())
        start = log.tail_start(_int(query["tailLines"], "tailLines")) if query.get("tailLines") else 0
        limit = _int(query["limitBytes"], "limitBytes") if query.get("limitBytes") else None
        follow = _truthy(query.get("follow"))

        def run(emit: Callable[[bytes], None]) -> None:
            pos, deadline = start, time.monotonic() + self.follow_timeout
            while True:
                end = log.size() if limit is None else min(log.size(), start + limit)
                for chunk in log.read(pos, end):
                    emit(chunk)
                pos = end
                if not follow or (limit is not None and pos >= start + limit):
                    return
                with self._log_cond:  # wait for append_log, stop(), the follow timeout, or the container's end
                    while log.size() == pos and not self._stopping.is_set():
                        if (left := deadline - time.monotonic()) <= 0 or self._ended(pods, ns, name, container):
                            return
                        self._log_cond.wait(min(left, 1.0))
                    if self._stopping.is_set():
                        return

        return _Stream("text/plain", run)


# ---- helpers ----------------------------------------------------------------------------------------------

_EVENT_RENAMES = {"involvedObject": "regarding", "message": "note", "reportingComponent": "reportingController",
                  "source": "deprecatedSource", "firstTimestamp": "deprecatedFirstTimestamp",
                  "lastTimestamp": "deprecatedLastTimestamp", "count": "deprecatedCount"}
_EVENT_RENAMES_BACK = {v: k for k, v in _EVENT_RENAMES.items()}


def _convert_event(ev: Obj, *, to_core: bool) -> Obj:
    """core/v1 <-> events.k8s.io/v1 Event, field by field as the apiserver converts them."""
    renames = _EVENT_RENAMES_BACK if to_core else _EVENT_RENAMES
    out = {"apiVersion": "v1" if to_core else "events.k8s.io/v1", "kind": "Event"}
    return out | {renames.get(k, k): v for k, v in ev.items() if k not in ("apiVersion", "kind")}


def _read_bundle(root: Path) -> tuple[list[tuple[str, Obj]], dict[tuple[str, str, bool], Path], list[str]]:
    """Objects (with their file), log files by (pod, container, previous), and what was skipped."""
    from ruamel.yaml import YAML

    objs: list[tuple[str, Obj]] = []
    logs: dict[tuple[str, str, bool], Path] = {}
    skipped: list[str] = []
    for f in sorted(p for p in root.rglob("*") if p.is_file()):
        rel = f.relative_to(root)
        if rel.parts[0] == "logs":
            if f.name.endswith(".log") and len(rel.parts) in (2, 3):
                base = f.name.removesuffix(".log")
                previous, base = base.endswith(".previous"), base.removesuffix(".previous")
                pod, container = (base, "node") if len(rel.parts) == 2 else (rel.parts[1], base)
                logs[(pod, container, previous)] = f
            continue
        if f.suffix not in (".yaml", ".yml", ".json"):
            continue
        try:
            with f.open("rb") as fh:
                docs = [json.load(fh)] if f.suffix == ".json" else list(YAML(typ="safe").load_all(fh))
        except Exception as e:
            skipped.append(f"{rel}: cannot parse: {e}")
            continue
        for doc in docs:
            if not isinstance(doc, dict) or doc.get("kind") == "Bundle":
                continue
            if str(doc.get("kind", "")).endswith("List") and isinstance(items := doc.get("items"), list):
                item_kind = doc["kind"].removesuffix("List")  # "PodList" items may lack apiVersion and kind
                objs += [(str(rel), {"apiVersion": doc.get("apiVersion"), "kind": item_kind, **i})
                         for i in items if isinstance(i, dict)]
            else:
                objs.append((str(rel), doc))
    return objs, logs, skipped


def _apply_patch(doc: Obj, body: bytes, content_type: str) -> Any:
    patch, kind = _json_body(body, any_json=True), content_type.split(";")[0].strip()
    if kind == "application/json-patch+json":
        return _json_patch(doc, patch)
    if kind == "application/merge-patch+json":
        return _merge_patch(doc, patch)
    if kind == "application/strategic-merge-patch+json":  # approximated: lists are replaced, not merged by key
        return _merge_patch(doc, _strip_directives(patch))
    raise ApiError(415, f"the body of the request was in an unknown format - accepted media types include: "
                        f"application/json-patch+json, application/merge-patch+json, "
                        f"application/strategic-merge-patch+json (got {kind!r})")


def _merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386 JSON merge patch; builds new dicts and never mutates ``target``."""
    if not isinstance(patch, dict):
        return patch
    out = dict(target) if isinstance(target, dict) else {}
    for k, v in patch.items():
        if v is None:
            out.pop(k, None)
        else:
            out[k] = _merge_patch(out.get(k), v)
    return out


def _strip_directives(patch: Any) -> Any:
    if isinstance(patch, dict):
        return {k: _strip_directives(v) for k, v in patch.items() if not k.startswith("$")}
    return [_strip_directives(v) for v in patch] if isinstance(patch, list) else patch


def _json_patch(doc: Obj, ops: Any) -> Any:
    """RFC 6902 JSON patch on a deep copy of ``doc``."""
    if not isinstance(ops, list):
        raise ApiError(400, "json patch must be a JSON array of operations")
    doc = copy.deepcopy(doc)
    for op in ops:
        try:
            doc = _patch_op(doc, op)
        except (KeyError, IndexError, TypeError, ValueError) as e:
            raise ApiError(422, f"the server rejected our request due to an error in our request: {op} ({e!r})",
                           "Invalid") from None
    return doc


def _pointer(path: str) -> list[str]:
    return [p.replace("~1", "/").replace("~0", "~") for p in path.split("/")[1:]] if path else []


def _at(doc: Any, parts: list[str]) -> Any:
    for p in parts:
        doc = doc[int(p)] if isinstance(doc, list) else doc[p]
    return doc


def _patch_op(doc: Any, op: Obj) -> Any:
    kind, path = op["op"], _pointer(op["path"])
    if kind == "test":
        if _at(doc, path) != op["value"]:
            raise ValueError("test failed")
        return doc
    if kind in ("move", "copy"):
        value = copy.deepcopy(_at(doc, _pointer(op["from"])))
        if kind == "move":
            doc = _patch_op(doc, {"op": "remove", "path": op["from"]})
        return _patch_op(doc, {"op": "add", "path": op["path"], "value": value})
    if kind not in ("add", "remove", "replace") or (not path and kind == "remove"):
        raise ValueError(f"unsupported operation {kind} on {op['path']!r}")
    if not path:
        return copy.deepcopy(op["value"])
    parent, key = _at(doc, path[:-1]), path[-1]
    if isinstance(parent, list):
        i = len(parent) if key == "-" and kind == "add" else int(key)
        if not 0 <= i <= len(parent) - (kind != "add"):
            raise IndexError(key)
    elif not isinstance(parent, dict) or (kind != "add" and key not in parent):
        raise KeyError(key)
    else:
        i = key
    if kind == "remove":
        del parent[i]
    elif kind == "add" and isinstance(parent, list):
        parent.insert(i, op["value"])
    else:
        parent[i] = op["value"]
    return doc


def _json_body(body: bytes, any_json: bool = False) -> Any:
    try:
        value = json.loads(body or b"{}")
    except ValueError as e:
        raise ApiError(400, f"the body of the request could not be decoded as JSON: {e}") from None
    if not any_json and not isinstance(value, dict):
        raise ApiError(400, "the body of the request must be a JSON object")
    return value


def _bytes(data: bytes | str) -> bytes:
    return data.encode() if isinstance(data, str) else data


def _truthy(value: str | None) -> bool:
    return (value or "").lower() in ("true", "1")


def _int(value: str, what: str) -> int:
    try:
        return int(value)
    except ValueError:
        raise ApiError(400, f"{what}: Invalid value: {value!r}: must be an integer") from None


def _plain(o: Any) -> str:
    """JSON fallback for what YAML loaders make of unquoted timestamps."""
    if isinstance(o, datetime):
        o = o.astimezone(UTC) if o.tzinfo else o
        return o.strftime("%Y-%m-%dT%H:%M:%S.%fZ" if o.microsecond else "%Y-%m-%dT%H:%M:%SZ")
    if isinstance(o, date):
        return o.isoformat()
    raise TypeError(f"{type(o).__name__} is not JSON serialisable")
