"""Collecting one TrainJob: a fixed number of list/get calls plus the logs, into a Snapshot.

Cost model: a fixed number of requests (one GET or one label-selected list per kind), plus the
logs: one request per container instance for a log smaller than the head window, two for a larger
one. Log reads run concurrently with a bound. Every request has a timeout. What cannot be read
becomes a `Gap` with the reason and the collection goes on; an unreachable cluster or a missing
TrainJob is an `InputError` (exit 3).

A cluster lost after the TrainJob was read (`LossWatch`: a connection failure, and the API server does not
answer a probe either) ends every later read at once, without a request; the Snapshot holds what was read
and its first `notCollected` entry, `cluster` (`LOST`), says the cluster was lost and when. `diagnose` and
`collect` print or write that, and exit 3 (contracts.md §1: a connection error).
"""

from __future__ import annotations

import re
import threading
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from itertools import islice
from typing import TYPE_CHECKING, Any

from ckpt_doctor.coverage import apply_absent_or_log, apply_gap, plural
from ckpt_doctor.errors import InputError, UsageError
from ckpt_doctor.facts.logs import HEAD_BYTES, TAIL_BYTES
from ckpt_doctor.scope import (
    JOBSET_NAME_LABEL,
    REPLICATED_JOB_LABEL,
    Scope,
    claim_names,
    owned_by,
    replicated_jobs,
    runtime_ref,
)
from ckpt_doctor.snapshot import Gap, LogSpool, Obj, Snapshot
from ckpt_doctor.sources.bundle_write import FILE_NAMES
from ckpt_doctor.sources.live.client import Api, CallError, Cluster, connect, gap_reason, kind_words
from ckpt_doctor.sources.live.kinds import (
    CONFIGMAP,
    DEPLOYMENT,
    EVENT,
    JOB,
    JOBSET,
    NODE,
    POD,
    PV,
    PVC,
    STORAGECLASS,
    TRAINER_DEPLOYMENT,
    TRAINJOB,
    WORKLOAD,
    Kind,
    runtime_kind,
)
from ckpt_doctor.sources.live.logs import (
    Keep,
    LogReader,
    LogResult,
    ScanAsRead,
    SpoolWindows,
    container_instances,
    log_gap_name,
)
from ckpt_doctor.sources.live.progress import Progress

if TYPE_CHECKING:
    from ckpt_doctor.facts.logs import Signature
    from ckpt_doctor.sources.live.inspect import Inspect

NODE_GETS = 10  # up to this many distinct nodes: one GET each; more: one (paged) list of all nodes
LOST = "cluster"  # the notCollected entry that says the cluster went away during the collection
CONNECTION_FAILURES = ("unreachable", "dropped", "timeout")


class LossWatch:
    """The reads of one collection (`get`, `list`, `log`, `version` of an `Api`), watching for the cluster's loss.

    A read that fails on the connection (refused, cut, no answer) may be one resource's trouble (a log stream the
    node cut, a slow list) or the cluster's: one probe (`/version`) tells. When the probe fails too, the cluster
    is lost: `lost` says so, and every later read fails at once, as a connection failure, without a request
    (what is left becomes gaps, instead of a timeout each).
    """

    READS = frozenset({"get", "list", "log", "version"})

    def __init__(self, api: Api, cluster: Cluster) -> None:
        self.api = api
        self._cluster = cluster
        self._lock = threading.Lock()
        self.lost = ""  # why, once lost

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self.api, name)
        if name not in self.READS:
            return attr

        def read(*args: Any, **kwargs: Any) -> Any:
            if self.lost:
                raise CallError("unreachable", self.lost)
            try:
                return attr(*args, **kwargs)
            except CallError as e:
                if e.kind in CONNECTION_FAILURES and self._gone(e):
                    raise CallError("unreachable", self.lost) from None
                raise

        return read

    def _gone(self, e: CallError) -> bool:
        with self._lock:
            if self.lost:
                return True
            try:
                self.api.version()
            except CallError as probe:
                if probe.kind not in CONNECTION_FAILURES:
                    return False  # it answered (an error status, but an answer: it is there)
                at = f"{self._cluster.server} (context {self._cluster.context or '?'})"
                self.lost = f"lost the cluster at {at} during the collection: {e.message}"
                return True
            return False


# -- the collector ----------------------------------------------------------------------------------


def split_target(target: str, namespace_flag: str | None, default_ns: str) -> tuple[str, str]:
    """`[NS/]NAME` plus -n into (namespace, name); a target Kubernetes could not hold is a usage error."""
    from ckpt_doctor.k8snames import namespace_problem, target_problem

    bad = target_problem(target) or (namespace_problem(namespace_flag) if namespace_flag else None)
    if bad:
        raise UsageError(bad)
    ns, _sep, name = target.strip().rpartition("/")
    if ns and namespace_flag and ns != namespace_flag:
        raise UsageError(f"TrainJob {target!r} names namespace {ns!r} but -n says {namespace_flag!r}")
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
    lost: str = ""  # the cluster went away during the collection: why, and what had been read
    listed: set[str] = field(default_factory=set)  # kinds whose list came back whole (coverage: absent = absent)
    absent: list[Gap] = field(default_factory=list)  # objects and logs the API said do not exist (404)
    rvs: dict[str, str] = field(default_factory=dict)  # list resourceVersions, for watches
    server_version: str = ""
    trainer_version: str = ""

    def add(self, kind: str, items: Iterable[dict[str, Any]]) -> None:
        self.objects.setdefault(kind, []).extend(items)

    def gap(self, what: str, reason: str) -> None:
        if not any(g.what == what and g.reason == reason for g in self.gaps):
            self.gaps.append(Gap(what, reason))

    def not_there(self, what: str, reason: str) -> None:
        if not any(g.what == what for g in self.absent):
            self.absent.append(Gap(what, reason))

    def keep_log(self, res: LogResult) -> None:
        """One container log read: its gap, if any, and what was read."""
        if res.gap:
            self.gap(log_gap_name(res.pod, res.container, res.previous), res.gap)
        elif res.absent:
            self.not_there(log_gap_name(res.pod, res.container, res.previous), res.absent)
        if res.head is not None or res.ref is not None:
            self.logs[(res.pod, res.container, res.previous)] = res


class Collector:
    """Reads one TrainJob and its surroundings; `collect()` returns the raw result.

    `keep` decides what is kept of each log as it is read (`logs.Keep`: spooled windows, or only what the log
    scanner found); without it, the windows stay in memory. Logs are read with at most twice `workers` reads
    ahead of the one being kept, so that memory holds a bounded number of windows, whatever the pod count.
    """

    def __init__(
        self,
        cluster: Cluster,
        namespace: str,
        name: str,
        head_bytes: int = HEAD_BYTES,
        tail_bytes: int = TAIL_BYTES,
        workers: int = 8,
        progress: Progress | None = None,
        keep: Keep | None = None,
    ) -> None:
        self.cluster = cluster
        self.api = Api(cluster)  # the recorder watches and follows through it (reconnecting itself)
        self._reads: LossWatch | None = None
        self.namespace = namespace
        self.name = name
        self.workers = max(1, workers)
        self.logs = LogReader(self.reads, head_bytes, tail_bytes)
        self.progress = progress or Progress(quiet=True)
        self.keep = keep

    @property
    def reads(self) -> Any:
        """Every read of the collection: `api` (whatever answers it: the fleet puts its store there) through a
        `LossWatch`."""
        if self._reads is None or self._reads.api is not self.api:
            self._reads = LossWatch(self.api, self.cluster)
        return self._reads

    # -- the TrainJob, or exit 3 -------------------------------------------------------------------
    def trainjob(self) -> dict[str, Any]:
        ns, name, server = self.namespace, self.name, self.cluster.server
        try:
            return self.api.get(TRAINJOB, name, ns)  # before it, a connection failure is "unreachable"
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
        return f"{doing} failed: {kind_words(e)}: {e.message}"

    # -- everything -------------------------------------------------------------------------------
    def collect(self, objects_read: Callable[[Collected], None] | None = None) -> Collected:
        """Everything; `objects_read(out)` is called once every object is read, before the first log is."""
        ns, name = self.namespace, self.name
        self.progress.stage(f"reading TrainJob {ns}/{name}")
        tj = self.trainjob()
        out = Collected(tj)
        out.add("TrainJob", [tj])
        self.progress.stage("reading the runtime, JobSet, Jobs, pods and events")
        with ThreadPoolExecutor(max_workers=self.workers, thread_name_prefix="ckpt-live") as pool:
            self.read_objects(pool, tj, out)
            self.read_storage(pool, out)
            self.keep_events(out)
            if objects_read is not None:
                objects_read(out)
            self.read_logs(pool, out)
        if self.reads.lost:
            n = sum(len(v) for v in out.objects.values())
            out.lost = (
                f"{self.reads.lost}; read the TrainJob, {n - 1} more objects and {len(out.logs)} of the logs before it "
                "went (the rest is listed as not collected). Run it again when the cluster answers"
            )
        return out

    def read_objects(self, pool: ThreadPoolExecutor, tj: dict[str, Any], out: Collected) -> None:
        ns, name = self.namespace, self.name
        rname, kind, _ = runtime_ref(Obj(tj))
        rkind = runtime_kind(kind)
        sel = f"{JOBSET_NAME_LABEL}={name}"
        jobs: dict[str, Future[Any]] = {
            "runtime": pool.submit(self.reads.get, rkind, rname, ns) if rname else _done(None),
            "snapshot": pool.submit(self.reads.get, CONFIGMAP, f"{name}-runtime-snapshot", ns),
            "jobset": pool.submit(self.reads.get, JOBSET, name, ns),
            "jobs": pool.submit(self.reads.list, JOB, ns, sel),
            "pods": pool.submit(self.reads.list, POD, ns, sel),
            "events": pool.submit(self.reads.list, EVENT, ns),
            "pvcs": pool.submit(self.reads.list, PVC, ns),
            "workloads": pool.submit(self.reads.list, WORKLOAD, ns),
            "version": pool.submit(self.reads.version),
            "trainer": pool.submit(self.reads.get, DEPLOYMENT, TRAINER_DEPLOYMENT[1], TRAINER_DEPLOYMENT[0]),
        }
        res: dict[str, Any] = {}
        for key, fut in jobs.items():
            try:
                res[key] = fut.result()
            except CallError as e:
                res[key] = e
        # runtime snapshot first: when it exists it is the runtime actually used (v2.3)
        snap_cm = res["snapshot"]
        snap_name = f"{name}-runtime-snapshot"
        if isinstance(snap_cm, dict):
            out.add("ConfigMap", [snap_cm])
        elif snap_cm.kind == "notfound":
            out.not_there(f"configmaps/{ns}/{snap_name}", gap_reason(snap_cm, "get", CONFIGMAP, ns, snap_name))
        else:
            out.gap(f"configmaps/{snap_name}", gap_reason(snap_cm, "get", CONFIGMAP, ns, snap_name))
        rt = res["runtime"]
        if isinstance(rt, dict):
            out.add(rt["kind"], [rt])
        elif rt is not None and rt.kind == "notfound":
            rns = f"{ns}/" if rkind.namespaced else ""
            out.not_there(f"{rkind.plural}/{rns}{rname}", gap_reason(rt, "get", rkind, ns, rname))
        elif rt is not None:
            out.gap(rkind.gap, gap_reason(rt, "get", rkind, ns, rname))
        js = res["jobset"]
        if isinstance(js, dict):
            out.add("JobSet", [js])
        elif js.kind == "notfound":  # no JobSet is a fact (not created yet, or deleted), not a gap
            out.not_there(f"jobsets/{ns}/{name}", gap_reason(js, "get", JOBSET, ns, name))
        else:
            out.gap(JOBSET.gap, gap_reason(js, "get", JOBSET, ns, name))
        for key, kind in (("jobs", JOB), ("pods", POD), ("events", EVENT), ("pvcs", PVC), ("workloads", WORKLOAD)):
            r = res[key]
            if isinstance(r, tuple):
                items, rv = r
                out.rvs[kind.plural] = rv
                if kind is WORKLOAD:
                    items = [w for w in items if _owned_by(w, tj)]
                out.add(kind.kind, items)
                out.listed.add(kind.kind)
            elif kind is WORKLOAD and r.kind == "notfound":  # Kueue not installed: there are no Workloads
                out.listed.add(kind.kind)
            elif not (kind is WORKLOAD and r.kind == "forbidden"):  # Kueue is optional
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
            gets.append((PV, n, None, pool.submit(self.reads.get, PV, n)))
        for n in cms:
            gets.append((CONFIGMAP, n, ns, pool.submit(self.reads.get, CONFIGMAP, n, ns)))
        node_list: Future[Any] | None = None
        if len(nodes) <= NODE_GETS:
            for n in nodes:
                gets.append((NODE, n, None, pool.submit(self.reads.get, NODE, n)))
        elif nodes:
            node_list = pool.submit(self.reads.list, NODE)
        for n in classes:
            gets.append((STORAGECLASS, n, None, pool.submit(self.reads.get, STORAGECLASS, n)))
        extra_classes: set[str] = set()
        for kind, n, kns, fut in gets:
            try:
                obj = fut.result()
            except CallError as e:
                if e.kind == "notfound":
                    where = f"{kns}/" if kns else ""
                    out.not_there(f"{kind.plural}/{where}{n}", gap_reason(e, "get", kind, kns, n))
                else:
                    out.gap(f"{kind.plural}/{n}", gap_reason(e, "get", kind, kns, n))
                continue
            out.add(kind.kind, [obj])
            if kind is PV:
                cls = (obj.get("spec") or {}).get("storageClassName")
                if cls and cls not in classes and ("StorageClass", cls) not in have:
                    extra_classes.add(str(cls))
        for n in sorted(extra_classes):
            try:
                out.add("StorageClass", [self.reads.get(STORAGECLASS, n)])
            except CallError as e:
                if e.kind == "notfound":
                    out.not_there(f"storageclasses/{n}", gap_reason(e, "get", STORAGECLASS, None, n))
                else:
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

        left = iter(todo)
        ahead: deque[Future[LogResult]] = deque(pool.submit(one, item) for item in islice(left, 2 * self.workers))
        while ahead:
            res = ahead.popleft().result()
            nxt = next(left, None)
            if nxt is not None:
                ahead.append(pool.submit(one, nxt))
            if self.keep is not None:
                self.keep(res, self.namespace)
            out.keep_log(res)

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
            rj = ((o.get("metadata") or {}).get("labels") or {}).get(REPLICATED_JOB_LABEL)
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
        return build_snapshot(out, self.cluster, self.namespace, self.name)


def _done(value: Any) -> Future[Any]:
    f: Future[Any] = Future()
    f.set_result(value)
    return f


def _rjobs(jobset_spec: dict[str, Any]) -> list[dict[str, Any]]:
    return [r for r in jobset_spec.get("replicatedJobs") or [] if isinstance(r, dict)]


def _owned_by(o: dict[str, Any], owner: dict[str, Any]) -> bool:
    """Owned by reference, or (a Kueue Workload) labelled with the owner's uid."""
    obj, by = Obj(o), Obj(owner)
    return owned_by(obj, by) or (bool(by.uid) and obj.labels.get("kueue.x-k8s.io/job-uid") == by.uid)


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


ORDER = tuple(FILE_NAMES)  # a snapshot lists the kinds in the order a bundle does


def build_snapshot(out: Collected, cluster: Cluster, namespace: str, name: str) -> Snapshot:
    return finish_snapshot(snapshot_objects(out, cluster, namespace, name), out, cluster, namespace, name)


def snapshot_objects(out: Collected, cluster: Cluster, namespace: str, name: str) -> Snapshot:
    """A Snapshot holding the objects of `out`, in the order a bundle lists their kinds."""
    snap = Snapshot(source="live", location=f"{cluster.context or cluster.server}:{namespace}/{name}")
    for kind in sorted(out.objects, key=lambda k: ORDER.index(k) if k in ORDER else len(ORDER)):
        snap.extend(Obj(o) for o in out.objects[kind])
    return snap


def finish_snapshot(snap: Snapshot, out: Collected, cluster: Cluster, namespace: str, name: str) -> Snapshot:
    """`snap` (from `snapshot_objects`) with the logs, what was not collected, coverage and meta of `out`."""
    for key, res in out.logs.items():
        snap.logs[key] = res.log_ref(namespace)
    snap.not_collected = ([Gap(LOST, out.lost)] if out.lost else []) + list(out.gaps)
    cov = snap.coverage
    for g in out.gaps:
        apply_gap(cov, g.what, g.reason)
    for kind_name in sorted(out.listed):
        cov.listed(kind_name)
    for g in out.absent:
        apply_absent_or_log(cov, g.what, g.reason)
    cov.presence({o.kind for o in snap.objects}, "collection")
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
        "listed": [plural(k) for k in sorted(out.listed)],
        "absent": [g.to_json() for g in out.absent],
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
    scan: list[Signature] | None = None,
    inspect: Inspect | None = None,
) -> Snapshot:
    """Collect one TrainJob (`[NS/]NAME`) from the cluster into a Snapshot, redacted unless `redact=False`.

    What is kept of each log is decided as it is read, so memory never holds every log's windows at once:

    - by default its windows, spooled to an anonymous temporary file (`LogSpool`): the Snapshot can be written as
      a bundle (`collect`), shown (the app) and diagnosed;
    - with `scan` (the signatures `diagnose_snapshot` will read the logs with): only what the log scanner found
      in them, for a Snapshot that is diagnosed and let go (`diagnose`, `report`; the findings are redacted as
      they leave the pipeline, so these pass `redact=False`).

    Redaction happens in the order `Redactor.snapshot` follows: every object (the redactor learns the
    credentials they hold), then each log as it is read, then meta, gap reasons and notes.
    `meta` holds what bundle.yaml will say (target, cluster, collectedAt, redactions).
    With `inspect` (`--inspect-checkpoints`), the checkpoint directory is listed too (sources/live/inspect.py),
    its text through the same redactor.
    Raises InputError when the cluster cannot be reached or the TrainJob does not exist.
    """
    from ckpt_doctor.sources.redact import Redactor

    redactor = Redactor(redact_patterns, enabled=redact)  # bad patterns fail before any request
    cluster = connect(namespace, context, kubeconfig, timeout, pool=workers + 4)
    ns, name = split_target(target, namespace, cluster.namespace)
    prog = progress or Progress(quiet=quiet)
    transform = redactor.bytes if redact else None
    keep: Keep = ScanAsRead(scan, transform) if scan is not None else SpoolWindows(LogSpool(), transform)
    parts: list[Snapshot] = []

    def objects_read(out: Collected) -> None:
        snap = snapshot_objects(out, cluster, ns, name)
        redactor.snapshot(snap)  # the objects only: it has no log, meta or gap yet
        parts.append(snap)

    found = None
    try:
        col = Collector(cluster, ns, name, head_bytes, tail_bytes, workers, prog, keep=keep)
        out = col.collect(objects_read)
        if inspect is not None and not col.reads.lost:
            from ckpt_doctor.sources.live.inspect import inspect_checkpoints

            prog.stage("listing the checkpoint directory")
            prog.close()  # a reader pod may need a question answered on this terminal
            found = inspect_checkpoints(col.api, parts[0], ns, name, inspect)
    finally:
        if progress is None:
            prog.close()
    snap = finish_snapshot(parts[0], out, cluster, ns, name)
    if found is not None:
        from ckpt_doctor.sources.live.inspect import to_snapshot

        to_snapshot(snap, found, redactor.text if redact else None)
    rest = Snapshot(meta=snap.meta, not_collected=snap.not_collected, notes=snap.notes)  # objects and logs: done
    redactor.snapshot(rest)
    snap.meta, snap.not_collected, snap.notes = rest.meta, rest.not_collected, rest.notes
    snap.meta["redactions"] = redactor.count
    return snap


def list_trainjobs(
    namespace: str | None = None,
    context: str | None = None,
    kubeconfig: str | None = None,
    timeout: float = 15.0,
    searched: list[str] | None = None,
    server: list[str] | None = None,
) -> list[dict[str, Any]]:
    """The TrainJobs of a namespace (-n, else the context's), as raw objects, newest first (for pickers);
    `searched` gets the namespace that was listed (so that an empty list can say where it looked), `server` the
    API server's version (`ckpt-doctor sandbox` marks its own: ckpt_doctor.simulation), '' when it is not told."""
    cluster = connect(namespace, context, kubeconfig, timeout)
    if searched is not None:
        searched.append(cluster.namespace)
    col = Collector(cluster, cluster.namespace, "")
    if server is not None:
        try:
            server.append(col.api.version())
        except Exception:  # the version is a label, never a reason to fail the listing
            server.append("")
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


def lost_reason(snap: Snapshot) -> str:
    """Why the collection of `snap` lost its cluster half-way ('' when it did not)."""
    return next((g.reason for g in snap.not_collected if g.what == LOST), "")
