"""The live source: read one TrainJob and everything around it from a cluster, the way kubectl would.

This is the only module that imports `kubernetes`, and only inside functions (it takes ~0.8 s to
import). Objects are read as raw JSON (no model classes), so every field the server sends is kept.

Cost model: a fixed number of requests (one GET or one label-selected list per kind), plus the
logs: one request per container instance for a log smaller than the head window, two for a larger
one (its head through `limitBytes`, its tail through `tailLines` capped by `limitBytes`). Log reads
run concurrently with a bound. Every request has a timeout.

What cannot be read (403, 404 runtime, 5xx, timeouts, a pod deleted mid-read, a rotated or binary
log) becomes a `Gap` in `Snapshot.not_collected` with the reason, and the collection goes on. The
cluster being unreachable or the TrainJob not existing is an `InputError` (exit 3).
"""

from __future__ import annotations

import json
import logging
import os
import re
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TextIO
from urllib.parse import quote

from ckpt_doctor.errors import InputError
from ckpt_doctor.facts.logs import HEAD_BYTES, TAIL_BYTES
from ckpt_doctor.scope import JOBSET_NAME_LABEL, Scope, claim_names, replicated_jobs
from ckpt_doctor.snapshot import Gap, LogRef, Obj, Snapshot

IN_CLUSTER_NS = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"
PAGE = 500  # items per list page
NODE_GETS = 10  # up to this many distinct nodes: one GET each; more: one (paged) list of all nodes
TRAINER_DEPLOYMENT = ("kubeflow-system", "kubeflow-trainer-controller-manager")
LONG_LINE = 8 << 20  # the most read to reach the end of a log whose last line is endless
BINARY_NULS = 16  # more NUL bytes than this in the first 4 KiB: not text (same test as facts.logs)
ROTATED = re.compile(
    r"unable to retrieve container logs|no such file or directory|failed to try resolving symlinks|rotat",
    re.I,
)
NOT_STARTED = re.compile(r"is waiting to start|ContainerCreating|PodInitializing", re.I)
NO_PREVIOUS = re.compile(r"previous terminated container .* not found", re.I)


# -- what is read (also the source of `ckpt-doctor rbac`) ---------------------------------------------


@dataclass(frozen=True)
class Kind:
    kind: str
    group: str
    version: str
    plural: str
    namespaced: bool = True

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def gap(self) -> str:
        """The `notCollected` name of this resource (facts map these names to not_evaluated reasons)."""
        return self.plural

    def path(self, namespace: str | None = None, name: str | None = None, sub: str | None = None) -> str:
        base = f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"
        if self.namespaced and namespace:
            base += f"/namespaces/{quote(namespace, safe='')}"
        base += f"/{self.plural}"
        if name:
            base += f"/{quote(name, safe='')}"
        if sub:
            base += f"/{sub}"
        return base


TRAINJOB = Kind("TrainJob", "trainer.kubeflow.org", "v1alpha1", "trainjobs")
TRAININGRUNTIME = Kind("TrainingRuntime", "trainer.kubeflow.org", "v1alpha1", "trainingruntimes")
CLUSTERTRAININGRUNTIME = Kind(
    "ClusterTrainingRuntime", "trainer.kubeflow.org", "v1alpha1", "clustertrainingruntimes", namespaced=False
)
JOBSET = Kind("JobSet", "jobset.x-k8s.io", "v1alpha2", "jobsets")
JOB = Kind("Job", "batch", "v1", "jobs")
POD = Kind("Pod", "", "v1", "pods")
EVENT = Kind("Event", "", "v1", "events")
PVC = Kind("PersistentVolumeClaim", "", "v1", "persistentvolumeclaims")
PV = Kind("PersistentVolume", "", "v1", "persistentvolumes", namespaced=False)
STORAGECLASS = Kind("StorageClass", "storage.k8s.io", "v1", "storageclasses", namespaced=False)
NODE = Kind("Node", "", "v1", "nodes", namespaced=False)
CONFIGMAP = Kind("ConfigMap", "", "v1", "configmaps")
WORKLOAD = Kind("Workload", "kueue.x-k8s.io", "v1beta1", "workloads")
DEPLOYMENT = Kind("Deployment", "apps", "v1", "deployments")


@dataclass(frozen=True)
class Read:
    """One kind of read the collector makes, with the verbs it uses and why (for least-privilege RBAC)."""

    kind: Kind
    verbs: tuple[str, ...]
    why: str
    sub: str | None = None
    follow_only: tuple[str, ...] = ()  # verbs only `collect --follow` needs
    optional: bool = False  # missing it never stops a diagnosis (e.g. the Trainer version probe)

    @property
    def resource(self) -> str:
        return f"{self.kind.plural}/{self.sub}" if self.sub else self.kind.plural


READS: tuple[Read, ...] = (
    Read(TRAINJOB, ("get", "list"), "the TrainJob (list: to name the ones that exist)", follow_only=("watch",)),
    Read(TRAININGRUNTIME, ("get",), "the runtime the TrainJob references"),
    Read(CLUSTERTRAININGRUNTIME, ("get",), "the cluster runtime the TrainJob references"),
    Read(JOBSET, ("get",), "the JobSet the TrainJob created", follow_only=("list", "watch")),
    Read(JOB, ("list",), "the JobSet's Jobs, by label", follow_only=("watch",)),
    Read(POD, ("list",), "the Jobs' pods, by label", follow_only=("watch",)),
    Read(POD, ("get",), "container logs, current and previous", sub="log"),
    Read(EVENT, ("list",), "events of the TrainJob, JobSet, Jobs, pods and PVCs", follow_only=("watch",)),
    Read(PVC, ("list",), "the PVCs the pods mount"),
    Read(CONFIGMAP, ("get",), "the runtime snapshot (v2.3) and the ConfigMaps the trainer mounts"),
    Read(WORKLOAD, ("list",), "the Kueue Workload, if Kueue is installed", optional=True),
    Read(PV, ("get",), "the volumes bound to those PVCs"),
    Read(STORAGECLASS, ("get",), "their storage classes"),
    Read(NODE, ("get", "list"), "the nodes the pods ran on"),
    Read(DEPLOYMENT, ("get",), "the Trainer controller's image tag (its version)", optional=True),
)


# -- connecting -------------------------------------------------------------------------------------


@dataclass
class Cluster:
    """A configured client for one cluster, and what kubectl would call its context."""

    client: Any  # kubernetes.client.ApiClient
    namespace: str
    context: str | None
    server: str
    timeout: float


def _kubeconfig_paths(kubeconfig: str | None) -> list[str]:
    if kubeconfig:
        return [kubeconfig]
    env = os.environ.get("KUBECONFIG")
    if env:
        return [p for p in env.split(os.pathsep) if p]
    return [os.path.expanduser("~/.kube/config")]


def connect(
    namespace: str | None = None,
    context: str | None = None,
    kubeconfig: str | None = None,
    timeout: float = 15.0,
    pool: int = 16,
) -> Cluster:
    """Configure a client like kubectl: --kubeconfig, else $KUBECONFIG, else ~/.kube/config, else in-cluster.

    The namespace is -n, else the context's, else the in-cluster service account's, else `default`.
    """
    from kubernetes import client, config
    from kubernetes.config.config_exception import ConfigException
    from urllib3.util.retry import Retry

    cfg = client.Configuration()
    paths = _kubeconfig_paths(kubeconfig)
    existing = [p for p in paths if os.path.exists(p)]
    ctx_name: str | None = context
    ctx_ns: str | None = None
    if kubeconfig and not existing:
        raise InputError(f"kubeconfig {kubeconfig} does not exist")
    if existing:
        joined = os.pathsep.join(existing)
        try:
            contexts, active = config.list_kube_config_contexts(config_file=joined)
            chosen = active
            if context:
                chosen = next((c for c in contexts if c.get("name") == context), None)
                if chosen is None:
                    names = ", ".join(sorted(str(c.get("name")) for c in contexts)) or "none"
                    raise InputError(f"context {context!r} is not in the kubeconfig (contexts: {names})")
            ctx_name = str(chosen.get("name")) if chosen else context
            ctx_ns = ((chosen or {}).get("context") or {}).get("namespace")
            config.load_kube_config(config_file=joined, context=context, client_configuration=cfg, persist_config=False)
        except InputError:
            raise
        except Exception as e:  # ConfigException, YAML errors, a failing exec credential plugin
            raise InputError(f"cannot use the kubeconfig ({joined}): {e}") from None
    elif os.environ.get("KUBERNETES_SERVICE_HOST"):
        try:
            config.load_incluster_config(client_configuration=cfg)
        except ConfigException as e:
            raise InputError(f"in-cluster configuration failed: {e}") from None
        ctx_name = "in-cluster"
        try:
            ctx_ns = Path(IN_CLUSTER_NS).read_text().strip() or None
        except OSError:
            ctx_ns = None
    else:
        raise InputError(
            f"no kubeconfig found ({', '.join(paths)}) and not running in a cluster; "
            "pass --kubeconfig or --context, or use --bundle PATH"
        )
    logging.getLogger("urllib3").setLevel(logging.ERROR)  # retries and full pools are ours to report
    cfg.retries = Retry(total=2, connect=2, read=0, status=0, other=0, redirect=2, backoff_factor=0.1)
    cfg.connection_pool_maxsize = max(4, pool)
    api = client.ApiClient(cfg)
    return Cluster(api, namespace or ctx_ns or "default", ctx_name, str(cfg.host), timeout)


# -- one request --------------------------------------------------------------------------------------


class CallError(Exception):
    """A request that failed; `kind` is forbidden | notfound | timeout | server | unreachable | bad | other."""

    def __init__(self, kind: str, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message
        self.status = status


def _status_message(body: Any) -> str:
    try:
        doc = json.loads(body) if isinstance(body, str | bytes) else None
    except ValueError:
        doc = None
    if isinstance(doc, dict) and doc.get("message"):
        return str(doc["message"])
    text = body.decode("utf-8", "replace") if isinstance(body, bytes) else str(body or "")
    return text.strip()[:300]


def _call_error(e: BaseException, timeout: float) -> CallError:
    from kubernetes.client.exceptions import ApiException
    from urllib3.exceptions import (
        HTTPError,
        MaxRetryError,
        NewConnectionError,
        ProtocolError,
        ReadTimeoutError,
    )
    from urllib3.exceptions import (
        TimeoutError as U3Timeout,
    )

    if isinstance(e, ApiException):
        status = int(e.status or 0)
        msg = _status_message(e.body) or str(e.reason or "")
        if status == 403:
            return CallError("forbidden", msg, status)
        if status == 401:
            return CallError("unauthorized", msg, status)
        if status == 404:
            return CallError("notfound", msg, status)
        if status in (400, 422):
            return CallError("bad", msg, status)
        if status == 410:
            return CallError("gone", msg, status)
        if status >= 500 or status == 429:
            return CallError("server", msg, status)
        if status == 0:
            return CallError("unreachable", msg or str(e), None)
        return CallError("other", msg, status)
    reason: BaseException = e
    if isinstance(e, MaxRetryError) and e.reason is not None:
        reason = e.reason
    if isinstance(reason, NewConnectionError | ConnectionError):  # NewConnectionError is a ConnectTimeoutError
        return CallError("unreachable", _short(reason))
    if isinstance(reason, ReadTimeoutError | U3Timeout | TimeoutError):
        return CallError("timeout", f"no answer within {timeout:g}s")
    if isinstance(reason, ProtocolError):
        return CallError("dropped", _short(reason))
    if isinstance(reason, HTTPError | OSError):
        return CallError("unreachable", _short(reason))
    return CallError("other", _short(reason))


def _short(e: BaseException) -> str:
    text = str(e)
    m = re.search(r"(\[Errno [^\]]+\][^'\")]*|Connection refused|Name or service not known|timed out)", text)
    return (m.group(1) if m else text)[:200]


class Api:
    """GET / list / watch / log on raw paths through the kubernetes ApiClient (auth, TLS, proxies)."""

    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster
        self.timeout = cluster.timeout

    def _raw(
        self,
        path: str,
        query: Sequence[tuple[str, Any]] = (),
        timeout: float | tuple[float, float] | None = None,
        stream: bool = False,
    ) -> Any:
        try:
            resp = self.cluster.client.call_api(
                path,
                "GET",
                query_params=list(query),
                header_params={"Accept": "application/json, */*"},
                auth_settings=["BearerToken"],
                _preload_content=False,
                _request_timeout=timeout if timeout is not None else self.timeout,
            )
        except Exception as e:  # the client raises ApiException, urllib3 errors, OSError
            raise _call_error(e, self.timeout) from None
        if stream:
            return resp
        try:
            return resp.data
        except Exception as e:
            raise _call_error(e, self.timeout) from None
        finally:
            resp.release_conn()

    def get(self, kind: Kind, name: str, namespace: str | None = None) -> dict[str, Any]:
        data = self._raw(kind.path(namespace, name))
        obj = _json(data)
        obj.setdefault("apiVersion", kind.api_version)
        obj.setdefault("kind", kind.kind)
        return obj

    def list(
        self,
        kind: Kind,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
    ) -> tuple[list[dict[str, Any]], str]:
        """Every matching object (following `continue`), and the list's resourceVersion."""
        items: list[dict[str, Any]] = []
        cont: str | None = None
        rv = ""
        while True:
            q: list[tuple[str, Any]] = [("limit", PAGE)]
            if label_selector:
                q.append(("labelSelector", label_selector))
            if field_selector:
                q.append(("fieldSelector", field_selector))
            if cont:
                q.append(("continue", cont))
            doc = _json(self._raw(kind.path(namespace), q))
            for it in doc.get("items") or []:
                if isinstance(it, dict):  # built-in list items carry no apiVersion/kind: put them first
                    items.append({"apiVersion": kind.api_version, "kind": kind.kind, **it})
            meta = doc.get("metadata") or {}
            rv = str(meta.get("resourceVersion") or rv)
            cont = meta.get("continue")
            if not cont:
                return items, rv

    def watch(
        self,
        kind: Kind,
        namespace: str | None,
        resource_version: str,
        label_selector: str | None = None,
        field_selector: str | None = None,
        timeout_seconds: int = 300,
        on_open: Callable[[Any], None] | None = None,
        on_close: Callable[[Any], None] | None = None,
    ) -> Iterator[dict[str, Any]]:
        """Watch events (`{type, object}`) from `resource_version`; ends when the server closes the stream."""
        q: list[tuple[str, Any]] = [
            ("watch", "true"),
            ("resourceVersion", resource_version),
            ("allowWatchBookmarks", "true"),
            ("timeoutSeconds", timeout_seconds),
        ]
        if label_selector:
            q.append(("labelSelector", label_selector))
        if field_selector:
            q.append(("fieldSelector", field_selector))
        resp = self._raw(kind.path(namespace), q, timeout=(self.timeout, timeout_seconds + self.timeout), stream=True)
        if on_open is not None:
            on_open(resp)
        try:
            for line in _lines(resp):
                try:
                    ev = json.loads(line)
                except ValueError:
                    continue
                if isinstance(ev, dict):
                    obj = ev.get("object")
                    if isinstance(obj, dict) and ev.get("type") != "ERROR":
                        ev["object"] = {"apiVersion": kind.api_version, "kind": kind.kind, **obj}
                    yield ev
        except Exception as e:
            raise _call_error(e, self.timeout) from None
        finally:
            _end_stream(resp)
            if on_close is not None:
                on_close(resp)

    def log(
        self,
        pod: str,
        namespace: str,
        container: str,
        previous: bool = False,
        limit_bytes: int | None = None,
        tail_lines: int | None = None,
    ) -> bytes:
        q: list[tuple[str, Any]] = [("container", container)]
        if previous:
            q.append(("previous", "true"))
        if limit_bytes is not None:
            q.append(("limitBytes", limit_bytes))
        if tail_lines is not None:
            q.append(("tailLines", tail_lines))
        return bytes(self._raw(POD.path(namespace, pod, "log"), q))

    def follow_log(
        self,
        pod: str,
        namespace: str,
        container: str,
        tail_lines: int | None = None,
        on_open: Callable[[Any], None] | None = None,
        on_close: Callable[[Any], None] | None = None,
    ) -> Iterator[bytes]:
        """Stream a running container's log (`follow=true`) until it exits or the stream is closed."""
        q: list[tuple[str, Any]] = [("container", container), ("follow", "true")]
        if tail_lines is not None:
            q.append(("tailLines", tail_lines))
        resp = self._raw(POD.path(namespace, pod, "log"), q, timeout=(self.timeout, 24 * 3600.0), stream=True)
        if on_open is not None:
            on_open(resp)
        try:
            yield from resp.stream(64 * 1024, decode_content=True)
        except Exception as e:
            raise _call_error(e, self.timeout) from None
        finally:
            _end_stream(resp)
            if on_close is not None:
                on_close(resp)

    def version(self) -> str:
        doc = _json(self._raw("/version"))
        return str(doc.get("gitVersion") or "")

    def access_review(self, verb: str, kind: Kind, namespace: str | None, sub: str | None = None) -> bool:
        """SelfSubjectAccessReview: may the current identity do `verb` on this resource?"""
        attrs = {"verb": verb, "group": kind.group, "resource": kind.plural}
        if sub:
            attrs["subresource"] = sub
        if kind.namespaced and namespace:
            attrs["namespace"] = namespace
        body = {
            "apiVersion": "authorization.k8s.io/v1",
            "kind": "SelfSubjectAccessReview",
            "spec": {"resourceAttributes": attrs},
        }
        try:
            resp = self.cluster.client.call_api(
                "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
                "POST",
                body=body,
                header_params={"Accept": "application/json", "Content-Type": "application/json"},
                auth_settings=["BearerToken"],
                _preload_content=False,
                _request_timeout=self.timeout,
            )
            doc = _json(resp.data)
            resp.release_conn()
        except CallError:
            raise
        except Exception as e:
            raise _call_error(e, self.timeout) from None
        return bool((doc.get("status") or {}).get("allowed"))


def _end_stream(resp: Any) -> None:
    """Close a stream that may not have been read to its end (its connection cannot be reused), then free it."""
    try:
        resp.close()
    finally:
        resp.release_conn()


def _json(data: bytes | str) -> dict[str, Any]:
    try:
        doc = json.loads(data)
    except ValueError as e:
        raise CallError("other", f"the server answered something that is not JSON: {e}") from None
    if not isinstance(doc, dict):
        raise CallError("other", "the server answered JSON that is not an object")
    return doc


def _lines(resp: Any) -> Iterator[bytes]:
    buf = b""
    for chunk in resp.stream(64 * 1024, decode_content=True):
        buf += chunk
        while True:
            i = buf.find(b"\n")
            if i < 0:
                break
            line, buf = buf[:i], buf[i + 1 :]
            if line.strip():
                yield line
    if buf.strip():
        yield buf


# -- progress ---------------------------------------------------------------------------------------


class Progress:
    """Progress on stderr for long collections: a transient bar on a terminal, plain lines otherwise.

    Nothing at all with `quiet`, and nothing for a collection that ends within `delay` seconds.
    """

    def __init__(self, quiet: bool = False, stream: TextIO | None = None, delay: float = 1.0) -> None:
        self.quiet = quiet
        self.stream = stream if stream is not None else sys.stderr
        self.delay = delay
        self.start = time.monotonic()
        self.stage_text = ""
        self.done = 0
        self.total = 0
        self._lock = threading.Lock()
        self._bar: Any = None
        self._task: Any = None
        self._last_line = 0.0
        self._tty = bool(getattr(self.stream, "isatty", lambda: False)())

    def stage(self, text: str, total: int = 0) -> None:
        with self._lock:
            self.stage_text, self.total, self.done = text, total, 0
            self._show(force=True)

    def advance(self, n: int = 1) -> None:
        with self._lock:
            self.done += n
            self._show()

    def note(self, text: str) -> None:
        """A line that stays (used by the recorder), unless quiet."""
        if self.quiet:
            return
        with self._lock:
            if self._bar is not None:
                self._bar.console.print(text)
            else:
                print(f"ckpt-doctor: {text}", file=self.stream, flush=True)

    def _show(self, force: bool = False) -> None:
        if self.quiet or time.monotonic() - self.start < self.delay:
            return
        if self._tty:
            if self._bar is None:
                from rich.console import Console
                from rich.progress import BarColumn, MofNCompleteColumn, SpinnerColumn, TextColumn
                from rich.progress import Progress as Bar

                console = Console(file=self.stream, stderr=self.stream is sys.stderr)
                self._bar = Bar(
                    SpinnerColumn(),
                    TextColumn("{task.description}"),
                    BarColumn(),
                    MofNCompleteColumn(),
                    console=console,
                    transient=True,
                )
                self._bar.start()
                self._task = self._bar.add_task(self.stage_text, total=self.total or None)
            self._bar.update(self._task, description=self.stage_text, completed=self.done, total=self.total or None)
            return
        now = time.monotonic()
        if force or now - self._last_line >= 2.0 or (self.total and self.done == self.total):
            self._last_line = now
            count = f" {self.done}/{self.total}" if self.total else ""
            print(f"ckpt-doctor: {self.stage_text}{count}", file=self.stream, flush=True)

    def close(self) -> None:
        with self._lock:
            if self._bar is not None:
                self._bar.stop()
                self._bar = None


# -- logs ---------------------------------------------------------------------------------------------


def skipped_marker(head: int, tail: int) -> bytes:
    return (
        f"\n[ckpt-doctor: the middle of this log was not collected; only its first {head} and last {tail} bytes]\n"
    ).encode()


def window_content(head: bytes, tail: bytes | None, head_limit: int) -> bytes:
    """One byte string holding a log's head window, a marker line and its tail window.

    The marker is padded so that the tail starts after `head_limit` bytes: the facts' head window
    then never sees tail lines (whose line numbers are unknown). A bundle file with these bytes reads
    back exactly as the live log did.
    """
    if tail is None:
        return head
    mark = skipped_marker(len(head), len(tail))
    pad = max(0, head_limit - len(head) - len(mark))
    if pad:
        mark = mark[:-1] + b" " * pad + b"\n"
    return head + mark + tail


@dataclass
class LogResult:
    pod: str
    container: str
    previous: bool
    head: bytes | None = None  # None: nothing to keep; the whole log when `tail` is None
    tail: bytes | None = None  # the last bytes, when the middle of the log was not read
    gap: str | None = None  # why it could not be (fully) collected
    head_limit: int = HEAD_BYTES

    @property
    def content(self) -> bytes | None:
        if self.head is None:
            return None
        return window_content(self.head, self.tail, self.head_limit)


def container_instances(pod: dict[str, Any]) -> list[tuple[str, bool]]:
    """The (container, previous) logs a pod has, from its status, as kubectl would find them."""
    spec = pod.get("spec") or {}
    statuses = {
        s.get("name"): s for s in (pod.get("status") or {}).get("containerStatuses") or [] if isinstance(s, dict)
    }
    out: list[tuple[str, bool]] = []
    for c in spec.get("containers") or []:
        name = c.get("name") if isinstance(c, dict) else None
        if not name:
            continue
        cs = statuses.get(name) or {}
        state = cs.get("state") or {}
        last = (cs.get("lastState") or {}).get("terminated")
        if state.get("running") or state.get("terminated") or last:
            out.append((name, False))
        if last or int(cs.get("restartCount") or 0) > 0:
            out.append((name, True))
    return out


class LogReader:
    """Reads the head and tail windows of one container log, bounded in bytes and requests."""

    def __init__(self, api: Api, head_bytes: int = HEAD_BYTES, tail_bytes: int = TAIL_BYTES) -> None:
        self.api = api
        self.head_bytes = head_bytes
        self.tail_bytes = tail_bytes

    def read(self, namespace: str, pod: str, container: str, previous: bool) -> LogResult:
        res = LogResult(pod, container, previous, head_limit=self.head_bytes)
        what = f"{'previous ' if previous else ''}log of {pod}/{container}"
        try:
            head = self.api.log(pod, namespace, container, previous, limit_bytes=self.head_bytes)
        except CallError as e:
            return self._failed(res, e, what, pod)
        if head[:4096].count(b"\x00") > BINARY_NULS:
            res.gap = f"{what} is binary ({head[:4096].count(0)} NUL bytes in its first 4 KiB), not text"
            return res
        res.head = head
        if len(head) < self.head_bytes:
            return res
        try:
            tail, whole = self._tail(namespace, pod, container, previous, head)
        except CallError as e:
            self._failed(res, e, what, pod)
            res.tail = b""
            return res
        if whole:
            res.head = tail
        else:
            res.tail = tail
        return res

    def _tail(self, ns: str, pod: str, container: str, previous: bool, head: bytes) -> tuple[bytes, bool]:
        """The last `tail_bytes` of the log via tailLines (estimated from the head's line length).

        Returns (data, whole): whole when the log turned out to have fewer lines than asked for, so
        `data` is the entire log.
        """
        want = self.tail_bytes
        cap = 4 * want
        avg = max(1.0, len(head) / max(1, head.count(b"\n")))
        lines = max(16, int(1.5 * want / avg))
        for _ in range(8):
            data = self.api.log(pod, ns, container, previous, limit_bytes=cap, tail_lines=lines)
            if len(data) >= cap:  # the last `lines` lines are longer than the cap: fewer lines
                if lines == 1:
                    if cap < LONG_LINE:  # one endless line (a progress bar): read it up to LONG_LINE bytes
                        cap = LONG_LINE
                        continue
                    return data[-want:], False  # longer still: its end is out of reach of tailLines
                lines = max(1, lines // 4)
                continue
            if len(data) >= want:
                return data[-want:], False
            if data.count(b"\n") < lines - 1:  # fewer lines exist than we asked for: this is all of it
                return data, True
            lines *= 4
        return data[-want:], False

    def _failed(self, res: LogResult, e: CallError, what: str, pod: str) -> LogResult:
        if e.kind == "bad" and (NO_PREVIOUS.search(e.message) or NOT_STARTED.search(e.message)):
            return res  # nothing was ever written there; the facts say "not in the snapshot"
        if ROTATED.search(e.message):
            res.gap = f"{what} was rotated or removed on the node: {e.message}"
        elif e.kind == "notfound":
            res.gap = f"pod {pod} was deleted before its log could be read (404)"
        elif e.kind == "forbidden":
            res.gap = f"forbidden: cannot get pods/log of {pod}"
        elif e.kind == "timeout":
            res.gap = f"timed out reading the {what}: {e.message}"
        elif e.kind == "dropped":
            res.gap = f"connection lost while reading the {what} (pod gone?): {e.message}"
        else:
            res.gap = f"{_kind_words(e)} reading the {what}: {e.message}"
        return res


def log_gap_name(pod: str, container: str, previous: bool) -> str:
    return f"logs/{pod}/{container}{'.previous' if previous else ''}"


def _kind_words(e: CallError) -> str:
    if e.kind == "server":
        return f"server error {e.status}"
    if e.kind == "unreachable":
        return "connection failed"
    return f"error {e.status}" if e.status else "error"


def gap_reason(e: CallError, verb: str, kind: Kind, namespace: str | None, name: str | None = None) -> str:
    """A `notCollected` reason: what failed, where, and why, in one line."""
    where = f"in {namespace}" if kind.namespaced and namespace else "at cluster scope"
    target = f"{kind.plural} {name}" if name else kind.plural
    if e.kind == "forbidden":
        return f"forbidden: cannot {verb} {target} {where}"
    if e.kind == "notfound":
        return f"not found: {kind.kind} {namespace + '/' if kind.namespaced and namespace else ''}{name or ''} (404)"
    if e.kind == "timeout":
        return f"timed out: {verb} {target} {where} ({e.message})"
    if e.kind == "unauthorized":
        return f"unauthorized: {verb} {target} {where}"
    return f"{_kind_words(e)}: {verb} {target} {where}: {e.message}"


# -- the collector ----------------------------------------------------------------------------------


def split_target(target: str, namespace_flag: str | None, default_ns: str) -> tuple[str, str]:
    """`[NS/]NAME` plus -n into (namespace, name)."""
    ns, sep, name = target.strip().rpartition("/")
    if not name or (sep and not ns) or "/" in ns:
        raise InputError(f"TrainJob {target!r}: expected NAME or NAMESPACE/NAME")
    if ns and namespace_flag and ns != namespace_flag:
        raise InputError(f"TrainJob {target!r} names namespace {ns!r} but -n says {namespace_flag!r}")
    return (ns or namespace_flag or default_ns), name


def now_rfc3339() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass
class Collected:
    """The raw objects of one collection, by kind, before they become a Snapshot."""

    trainjob: dict[str, Any]
    objects: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    logs: dict[tuple[str, str, bool], LogResult] = field(default_factory=dict)
    gaps: list[Gap] = field(default_factory=list)
    rvs: dict[str, str] = field(default_factory=dict)  # list resourceVersions, for watches
    server_version: str = ""
    trainer_version: str = ""

    def add(self, kind: str, items: Iterable[dict[str, Any]]) -> None:
        self.objects.setdefault(kind, []).extend(items)

    def gap(self, what: str, reason: str) -> None:
        if not any(g.what == what and g.reason == reason for g in self.gaps):
            self.gaps.append(Gap(what, reason))


class Collector:
    """Reads one TrainJob and its surroundings; `collect()` returns the raw result."""

    def __init__(
        self,
        cluster: Cluster,
        namespace: str,
        name: str,
        head_bytes: int = HEAD_BYTES,
        tail_bytes: int = TAIL_BYTES,
        workers: int = 8,
        progress: Progress | None = None,
    ) -> None:
        self.cluster = cluster
        self.api = Api(cluster)
        self.namespace = namespace
        self.name = name
        self.workers = max(1, workers)
        self.logs = LogReader(self.api, head_bytes, tail_bytes)
        self.progress = progress or Progress(quiet=True)

    # -- the TrainJob, or exit 3 -------------------------------------------------------------------
    def trainjob(self) -> dict[str, Any]:
        ns, name, server = self.namespace, self.name, self.cluster.server
        try:
            return self.api.get(TRAINJOB, name, ns)
        except CallError as e:
            if e.kind == "notfound" and "could not find the requested resource" in e.message:
                raise InputError(
                    f"the cluster at {server} does not serve trainjobs.trainer.kubeflow.org: is Kubeflow Trainer "
                    "installed?"
                ) from None
            if e.kind == "notfound":
                raise InputError(f"TrainJob {ns}/{name} not found; {self._existing()}") from None
            raise InputError(self._fatal(e, f"get TrainJob {ns}/{name}")) from None

    def _existing(self) -> str:
        try:
            items, _ = self.api.list(TRAINJOB, self.namespace)
        except CallError as e:
            why = gap_reason(e, "list", TRAINJOB, self.namespace)
            return f"and the TrainJobs in {self.namespace} cannot be listed ({why})"
        names = sorted(str((i.get("metadata") or {}).get("name")) for i in items)
        if not names:
            return f"namespace {self.namespace} has no TrainJobs (another namespace? use -n or NAMESPACE/NAME)"
        return f"TrainJobs in {self.namespace}: {', '.join(names)}"

    def _fatal(self, e: CallError, doing: str) -> str:
        server, ctx = self.cluster.server, self.cluster.context or "?"
        if e.kind in ("unreachable", "dropped"):
            return f"cannot reach the cluster at {server} (context {ctx}): {e.message}; check --context/--kubeconfig"
        if e.kind == "timeout":
            return f"the cluster at {server} (context {ctx}) did not answer: {doing}: {e.message}"
        if e.kind == "unauthorized":
            return f"the cluster at {server} rejected the credentials of context {ctx} (401); log in again"
        if e.kind == "forbidden":
            return f"forbidden: {doing}: {e.message}; see `ckpt-doctor rbac --check`"
        return f"{doing} failed: {_kind_words(e)}: {e.message}"

    # -- everything -------------------------------------------------------------------------------
    def collect(self) -> Collected:
        ns, name = self.namespace, self.name
        self.progress.stage(f"reading TrainJob {ns}/{name}")
        tj = self.trainjob()
        out = Collected(tj)
        out.add("TrainJob", [tj])
        self.progress.stage("reading the runtime, JobSet, Jobs, pods and events")
        with ThreadPoolExecutor(max_workers=self.workers, thread_name_prefix="ckpt-live") as pool:
            self.read_objects(pool, tj, out)
            self.read_storage(pool, out)
            self.read_logs(pool, out)
        self.keep_events(out)
        return out

    def read_objects(self, pool: ThreadPoolExecutor, tj: dict[str, Any], out: Collected) -> None:
        ns, name = self.namespace, self.name
        ref = (tj.get("spec") or {}).get("runtimeRef") or {}
        rkind = (
            CLUSTERTRAININGRUNTIME
            if ref.get("kind", "ClusterTrainingRuntime") != "TrainingRuntime"
            else TRAININGRUNTIME
        )
        rname = str(ref.get("name") or "")
        sel = f"{JOBSET_NAME_LABEL}={name}"
        jobs: dict[str, Future[Any]] = {
            "runtime": pool.submit(self.api.get, rkind, rname, ns) if rname else _done(None),
            "snapshot": pool.submit(self.api.get, CONFIGMAP, f"{name}-runtime-snapshot", ns),
            "jobset": pool.submit(self.api.get, JOBSET, name, ns),
            "jobs": pool.submit(self.api.list, JOB, ns, sel),
            "pods": pool.submit(self.api.list, POD, ns, sel),
            "events": pool.submit(self.api.list, EVENT, ns),
            "pvcs": pool.submit(self.api.list, PVC, ns),
            "workloads": pool.submit(self.api.list, WORKLOAD, ns),
            "version": pool.submit(self.api.version),
            "trainer": pool.submit(self.api.get, DEPLOYMENT, TRAINER_DEPLOYMENT[1], TRAINER_DEPLOYMENT[0]),
        }
        res: dict[str, Any] = {}
        for key, fut in jobs.items():
            try:
                res[key] = fut.result()
            except CallError as e:
                res[key] = e
        # runtime snapshot first: when it exists it is the runtime actually used (v2.3)
        snap_cm = res["snapshot"]
        if isinstance(snap_cm, dict):
            out.add("ConfigMap", [snap_cm])
        elif snap_cm.kind != "notfound":
            out.gap(
                f"configmaps/{name}-runtime-snapshot",
                gap_reason(snap_cm, "get", CONFIGMAP, ns, f"{name}-runtime-snapshot"),
            )
        rt = res["runtime"]
        if isinstance(rt, dict):
            out.add(rt["kind"], [rt])
        elif rt is not None and not (rt.kind == "notfound" and isinstance(snap_cm, dict)):
            out.gap(rkind.gap, gap_reason(rt, "get", rkind, ns, rname))
        js = res["jobset"]
        if isinstance(js, dict):
            out.add("JobSet", [js])
        elif js.kind != "notfound":  # no JobSet is a fact (not created yet, or deleted), not a gap
            out.gap(JOBSET.gap, gap_reason(js, "get", JOBSET, ns, name))
        for key, kind in (("jobs", JOB), ("pods", POD), ("events", EVENT), ("pvcs", PVC), ("workloads", WORKLOAD)):
            r = res[key]
            if isinstance(r, tuple):
                items, rv = r
                out.rvs[kind.plural] = rv
                if kind is WORKLOAD:
                    items = [w for w in items if _owned_by(w, tj)]
                out.add(kind.kind, items)
            elif not (kind is WORKLOAD and r.kind in ("notfound", "forbidden")):  # Kueue is optional
                out.gap(kind.gap, gap_reason(r, "list", kind, ns))
        out.server_version = res["version"] if isinstance(res["version"], str) else ""
        dep = res["trainer"]
        out.trainer_version = _image_version(dep) if isinstance(dep, dict) else ""

    def read_storage(self, pool: ThreadPoolExecutor, out: Collected) -> None:
        ns = self.namespace
        tj = Obj(out.trainjob)
        pods = [Obj(p) for p in out.objects.get("Pod", [])]
        runtime = next(
            (Obj(o) for k in ("TrainingRuntime", "ClusterTrainingRuntime") for o in out.objects.get(k, [])), None
        )
        sc = Scope(snap=Snapshot(), trainjob=tj, runtime=runtime, pods=pods)
        claims = claim_names(sc)
        pvcs = [
            p
            for p in out.objects.pop("PersistentVolumeClaim", [])
            if (p.get("metadata") or {}).get("name") in claims
            or ((p.get("metadata") or {}).get("labels") or {}).get(JOBSET_NAME_LABEL) == self.name
        ]
        out.add("PersistentVolumeClaim", pvcs)
        pv_names = sorted({str(p["spec"]["volumeName"]) for p in pvcs if (p.get("spec") or {}).get("volumeName")})
        classes = sorted(
            {str(p["spec"]["storageClassName"]) for p in pvcs if (p.get("spec") or {}).get("storageClassName")}
        )
        nodes = sorted({str(p.spec["nodeName"]) for p in pods if p.spec.get("nodeName")})
        cms = sorted(_configmap_refs(pods, runtime) - {f"{self.name}-runtime-snapshot"})
        have = {(k, str((o.get("metadata") or {}).get("name"))) for k, objs in out.objects.items() for o in objs}
        pv_names, cms, nodes, classes = (
            [n for n in names if (kind.kind, n) not in have]
            for kind, names in ((PV, pv_names), (CONFIGMAP, cms), (NODE, nodes), (STORAGECLASS, classes))
        )
        gets: list[tuple[Kind, str, str | None, Future[Any]]] = []
        for n in pv_names:
            gets.append((PV, n, None, pool.submit(self.api.get, PV, n)))
        for n in cms:
            gets.append((CONFIGMAP, n, ns, pool.submit(self.api.get, CONFIGMAP, n, ns)))
        node_list: Future[Any] | None = None
        if len(nodes) <= NODE_GETS:
            for n in nodes:
                gets.append((NODE, n, None, pool.submit(self.api.get, NODE, n)))
        elif nodes:
            node_list = pool.submit(self.api.list, NODE)
        for n in classes:
            gets.append((STORAGECLASS, n, None, pool.submit(self.api.get, STORAGECLASS, n)))
        extra_classes: set[str] = set()
        for kind, n, kns, fut in gets:
            try:
                obj = fut.result()
            except CallError as e:
                if not (kind is CONFIGMAP and e.kind == "notfound"):
                    out.gap(f"{kind.plural}/{n}", gap_reason(e, "get", kind, kns, n))
                continue
            out.add(kind.kind, [obj])
            if kind is PV:
                cls = (obj.get("spec") or {}).get("storageClassName")
                if cls and cls not in classes and ("StorageClass", cls) not in have:
                    extra_classes.add(str(cls))
        for n in sorted(extra_classes):
            try:
                out.add("StorageClass", [self.api.get(STORAGECLASS, n)])
            except CallError as e:
                out.gap(f"storageclasses/{n}", gap_reason(e, "get", STORAGECLASS, None, n))
        if node_list is not None:
            try:
                items, _ = node_list.result()
                wanted = set(nodes)
                out.add("Node", [i for i in items if (i.get("metadata") or {}).get("name") in wanted])
            except CallError as e:
                out.gap(NODE.gap, gap_reason(e, "list", NODE, None))

    def read_logs(self, pool: ThreadPoolExecutor, out: Collected) -> None:
        todo = [
            (str(p["metadata"]["name"]), c, prev)
            for p in out.objects.get("Pod", [])
            for c, prev in container_instances(p)
        ]
        self.progress.stage(f"reading {len(todo)} container logs", total=len(todo))

        def one(item: tuple[str, str, bool]) -> LogResult:
            try:
                return self.logs.read(self.namespace, *item)
            finally:
                self.progress.advance()

        for res in pool.map(one, todo):
            if res.gap:
                out.gap(log_gap_name(res.pod, res.container, res.previous), res.gap)
            if res.head is not None:
                out.logs[(res.pod, res.container, res.previous)] = res

    def keep_events(self, out: Collected) -> None:
        """Events about this TrainJob's objects: matched on kind, namespace, name and (when known) uid."""
        events = out.objects.pop("Event", [])
        match = self.event_matcher(out)
        out.add("Event", [e for e in events if match(e)])

    def event_matcher(self, out: Collected) -> Callable[[dict[str, Any]], bool]:
        known: dict[tuple[str, str], str | None] = {}
        for kind in ("TrainJob", "JobSet", "Job", "Pod", "PersistentVolumeClaim", "Workload"):
            for o in out.objects.get(kind, []):
                meta = o.get("metadata") or {}
                known[(kind, str(meta.get("name")))] = meta.get("uid")
        rjobs = {str(rj.get("name")) for o in out.objects.get("JobSet", []) for rj in _rjobs(o.get("spec") or {})}
        for k in ("TrainingRuntime", "ClusterTrainingRuntime"):
            for o in out.objects.get(k, []):
                rjobs |= {str(rj.get("name")) for rj in replicated_jobs(Obj(o)) if rj.get("name")}
        for o in out.objects.get("Pod", []) + out.objects.get("Job", []):
            rj = ((o.get("metadata") or {}).get("labels") or {}).get("jobset.sigs.k8s.io/replicatedjob-name")
            if rj:
                rjobs.add(str(rj))
        rjobs.discard("None")
        gone = (
            re.compile(
                rf"^{re.escape(self.name)}-(?:{'|'.join(map(re.escape, sorted(rjobs)))})-\d+(?:-\d+-[a-z0-9]{{5}})?$"
            )
            if rjobs
            else None
        )
        ns = self.namespace

        def match(ev: dict[str, Any]) -> bool:
            inv = ev.get("involvedObject") or ev.get("regarding") or {}
            if not isinstance(inv, dict):
                return False
            if (inv.get("namespace") or (ev.get("metadata") or {}).get("namespace")) not in (None, ns):
                return False
            key = (str(inv.get("kind")), str(inv.get("name")))
            if key in known:
                uid = known[key]
                return not (uid and inv.get("uid") and inv.get("uid") != uid)
            # pods and Jobs of earlier attempts, deleted by a JobSet restart: their events outlive them
            return key[0] in ("Pod", "Job") and gone is not None and bool(gone.match(key[1]))

        return match

    # -- the Snapshot -----------------------------------------------------------------------------
    def snapshot(self, out: Collected) -> Snapshot:
        return build_snapshot(out, self.cluster, self.namespace, self.name, self.logs.head_bytes)


def _done(value: Any) -> Future[Any]:
    f: Future[Any] = Future()
    f.set_result(value)
    return f


def _rjobs(jobset_spec: dict[str, Any]) -> list[dict[str, Any]]:
    return [r for r in jobset_spec.get("replicatedJobs") or [] if isinstance(r, dict)]


def _owned_by(o: dict[str, Any], owner: dict[str, Any]) -> bool:
    uid = (owner.get("metadata") or {}).get("uid")
    name = (owner.get("metadata") or {}).get("name")
    for ref in (o.get("metadata") or {}).get("ownerReferences") or []:
        same = isinstance(ref, dict) and ref.get("kind") == owner.get("kind") and ref.get("name") == name
        if same and (not uid or not ref.get("uid") or ref.get("uid") == uid):
            return True
    labels = (o.get("metadata") or {}).get("labels") or {}
    return bool(uid) and labels.get("kueue.x-k8s.io/job-uid") == uid


def _image_version(deployment: dict[str, Any]) -> str:
    """`v2.3.0` from the Trainer controller's image tag, or ''."""
    spec = (((deployment.get("spec") or {}).get("template") or {}).get("spec")) or {}
    for c in spec.get("containers") or []:
        m = re.search(r":(v\d+\.\d+(?:\.\d+)?)(?:[-@]|$)", str((c or {}).get("image") or ""))
        if m:
            return m.group(1)
    return ""


def _configmap_refs(pods: Sequence[Obj], runtime: Obj | None) -> set[str]:
    """ConfigMaps the pods (or, without pods, the runtime's pod templates) mount or read env from."""
    specs = [p.spec for p in pods]
    if not specs:
        for rj in replicated_jobs(runtime):
            specs.append(((((rj.get("template") or {}).get("spec") or {}).get("template") or {}).get("spec")) or {})
    names: set[str] = set()
    for spec in specs:
        for v in spec.get("volumes") or []:
            if not isinstance(v, dict):
                continue
            if (v.get("configMap") or {}).get("name"):
                names.add(str(v["configMap"]["name"]))
            for src in (v.get("projected") or {}).get("sources") or []:
                if isinstance(src, dict) and (src.get("configMap") or {}).get("name"):
                    names.add(str(src["configMap"]["name"]))
        for c in (spec.get("containers") or []) + (spec.get("initContainers") or []):
            if not isinstance(c, dict):
                continue
            for ef in c.get("envFrom") or []:
                if isinstance(ef, dict) and (ef.get("configMapRef") or {}).get("name"):
                    names.add(str(ef["configMapRef"]["name"]))
            for e in c.get("env") or []:
                ref = ((e or {}).get("valueFrom") or {}).get("configMapKeyRef") or {}
                if ref.get("name"):
                    names.add(str(ref["name"]))
    return names


ORDER = (
    "TrainJob",
    "TrainingRuntime",
    "ClusterTrainingRuntime",
    "ConfigMap",
    "JobSet",
    "Job",
    "Pod",
    "Event",
    "PersistentVolumeClaim",
    "PersistentVolume",
    "StorageClass",
    "Node",
    "Workload",
)


def build_snapshot(out: Collected, cluster: Cluster, namespace: str, name: str, head_bytes: int) -> Snapshot:
    snap = Snapshot(source="live", location=f"{cluster.context or cluster.server}:{namespace}/{name}")
    for kind in sorted(out.objects, key=lambda k: ORDER.index(k) if k in ORDER else len(ORDER)):
        snap.extend(Obj(o) for o in out.objects[kind])
    pod_ns = {str(p["metadata"]["name"]): namespace for p in out.objects.get("Pod", [])}
    for (pod, container, previous), res in out.logs.items():
        content = res.content or b""
        snap.logs[(pod, container, previous)] = LogRef(
            pod, container, previous, head=content, size=len(content), namespace=pod_ns.get(pod, namespace)
        )
    snap.not_collected = list(out.gaps)
    clus: dict[str, Any] = {"context": cluster.context, "server": cluster.server}
    if out.server_version:
        clus["serverVersion"] = out.server_version
    if out.trainer_version:
        clus["trainerVersion"] = out.trainer_version
    snap.meta = {
        "apiVersion": "ckpt-doctor/v1",
        "kind": "Bundle",
        "collectedAt": now_rfc3339(),
        "target": {"namespace": namespace, "name": name},
        "cluster": clus,
    }
    return snap


def collect_live(
    target: str,
    namespace: str | None = None,
    context: str | None = None,
    kubeconfig: str | None = None,
    timeout: float = 15.0,
    *,
    redact: bool = True,
    redact_patterns: Sequence[str] = (),
    head_bytes: int = HEAD_BYTES,
    tail_bytes: int = TAIL_BYTES,
    workers: int = 8,
    quiet: bool = False,
    progress: Progress | None = None,
) -> Snapshot:
    """Collect one TrainJob (`[NS/]NAME`) from the cluster into a redacted Snapshot.

    `meta` holds what bundle.yaml will say (target, cluster, collectedAt, redactions).
    Raises InputError when the cluster cannot be reached or the TrainJob does not exist.
    """
    from ckpt_doctor.sources.redact import Redactor

    redactor = Redactor(redact_patterns, enabled=redact)  # bad patterns fail before any request
    cluster = connect(namespace, context, kubeconfig, timeout, pool=workers + 4)
    ns, name = split_target(target, namespace, cluster.namespace)
    prog = progress or Progress(quiet=quiet)
    try:
        col = Collector(cluster, ns, name, head_bytes, tail_bytes, workers, prog)
        snap = col.snapshot(col.collect())
    finally:
        if progress is None:
            prog.close()
    redactor.snapshot(snap)
    snap.meta["redactions"] = redactor.count
    return snap


def list_trainjobs(
    namespace: str | None = None,
    context: str | None = None,
    kubeconfig: str | None = None,
    timeout: float = 15.0,
) -> list[dict[str, Any]]:
    """The TrainJobs of a namespace (-n, else the context's), as raw objects, newest first (for pickers)."""
    cluster = connect(namespace, context, kubeconfig, timeout)
    col = Collector(cluster, cluster.namespace, "")
    try:
        items, _ = col.api.list(TRAINJOB, cluster.namespace)
    except CallError as e:
        if e.kind == "notfound":
            raise InputError(
                f"the cluster at {cluster.server} does not serve trainjobs.trainer.kubeflow.org: "
                "is Kubeflow Trainer installed?"
            ) from None
        raise InputError(col._fatal(e, f"list TrainJobs in {cluster.namespace}")) from None
    return sorted(items, key=lambda o: str((o.get("metadata") or {}).get("creationTimestamp") or ""), reverse=True)
