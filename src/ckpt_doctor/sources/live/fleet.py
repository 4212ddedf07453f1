"""Many TrainJobs at once: a fixed number of list requests per kind and namespace, split per TrainJob.

The fleet scan (`diagnose --all-namespaces`, `-n NS` without a name, `-l SELECTOR`) and the watcher's
re-diagnoses read a set of TrainJobs with one list per kind per namespace, or one cluster-wide list per
kind for all namespaces, never one per TrainJob. Only container logs are read per pod.

Each TrainJob's Snapshot is then built by the single-job `Collector` itself, its requests answered from
these lists by `Listed` (an `Api` look-alike that serves what the lists hold), so each diagnosis is the
one `diagnose NS/NAME` gives, coverage included: a list that came back whole proves the absence of what
it does not hold (a 404 for a GET) in every namespace it covered, and a list that failed is a gap for
each TrainJob there (or, for kinds the collector reads by name, one GET per object instead, as
`diagnose` would make).

The lists are read in three rounds, each one concurrent: the TrainJobs; then what the TrainJobs name
(JobSets, runtimes) and what carries their JobSet's label (Jobs, pods), with PVCs and Kueue Workloads;
then what those name (PVs, nodes, mounted ConfigMaps, the events about any of them), and last the
storage classes of the PVCs and PVs. Lists of kinds that may hold much that is unrelated (events,
ConfigMaps, nodes) keep, page by page, only what may belong to a TrainJob of the scan.
"""

from __future__ import annotations

import copy
import threading
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Executor, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from ckpt_doctor.errors import InputError, UsageError
from ckpt_doctor.facts.logs import HEAD_BYTES, TAIL_BYTES
from ckpt_doctor.scope import JOBSET_NAME_LABEL, Scope, claim_names, longest_prefix, runtime_ref
from ckpt_doctor.snapshot import Obj, Snapshot
from ckpt_doctor.sources.live.client import PAGE, Api, CallError, Cluster, gap_reason
from ckpt_doctor.sources.live.collector import Collected, Collector, _configmap_refs, _owned_by
from ckpt_doctor.sources.live.kinds import (
    CLUSTERTRAININGRUNTIME,
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
    TRAININGRUNTIME,
    TRAINJOB,
    WORKLOAD,
    Kind,
    Read,
    runtime_kind,
)
from ckpt_doctor.sources.live.logs import LogReader
from ckpt_doctor.sources.live.progress import Progress

NAMESPACE = Kind("Namespace", "", "v1", "namespaces", namespaced=False)
IN_SELECTOR_NAMES = 64  # up to this many TrainJobs: pods and Jobs by `jobset-name in (...)`, else by the key
BIG_PAGE = 100  # page size for kinds whose objects may be large (ConfigMaps)
LOST = ("unreachable", "dropped")
NO_RETRY = (*LOST, "notfound", "unauthorized", "bad")  # cluster-wide list errors a per-namespace list would repeat

# What a fleet scan and the watcher read (the source of `ckpt-doctor rbac --fleet`): everything `diagnose`
# reads, listed across namespaces, and watched where the watcher follows it.
FLEET_READS: tuple[Read, ...] = (
    Read(TRAINJOB, ("get", "list", "watch"), "the TrainJobs (watch: the watcher)"),
    Read(TRAININGRUNTIME, ("get", "list"), "the runtimes the TrainJobs reference"),
    Read(CLUSTERTRAININGRUNTIME, ("get", "list"), "the cluster runtimes the TrainJobs reference"),
    Read(JOBSET, ("get", "list", "watch"), "the JobSets the TrainJobs created (watch: the watcher)"),
    Read(JOB, ("list",), "the JobSets' Jobs, by label"),
    Read(POD, ("list", "watch"), "the Jobs' pods, by label (watch: the watcher)"),
    Read(POD, ("get",), "container logs, current and previous", sub="log"),
    Read(EVENT, ("list", "watch"), "events of the TrainJobs and their objects (watch: the watcher)"),
    Read(PVC, ("list",), "the PVCs the pods mount"),
    Read(CONFIGMAP, ("get", "list"), "the runtime snapshots (v2.3) and the ConfigMaps the trainers mount"),
    Read(WORKLOAD, ("list",), "the Kueue Workloads, if Kueue is installed", optional=True),
    Read(PV, ("get", "list"), "the volumes bound to those PVCs"),
    Read(STORAGECLASS, ("get", "list"), "their storage classes"),
    Read(NODE, ("get", "list"), "the nodes the pods ran on"),
    Read(NAMESPACE, ("get", "list"), "namespaces, when TrainJobs cannot be listed across them at once; one named "
         "with -n that holds no TrainJob, to tell if it exists", optional=True),
    Read(DEPLOYMENT, ("get",), "the Trainer controller's image tag (its version)", optional=True),
)


@dataclass(frozen=True)
class FleetScope:
    """Which TrainJobs: of one namespace or of all (None), optionally by label, optionally only some names."""

    namespace: str | None = None
    selector: str | None = None
    names: frozenset[str] | None = None  # only these TrainJobs of `namespace` (the watcher's re-diagnoses)
    gets_up_to: int = 0  # read a kind by GETs when at most this many of its objects are wanted, else list it

    def describe(self) -> str:
        where = f"namespace {self.namespace}" if self.namespace else "all namespaces"
        return where + (f", selector {self.selector}" if self.selector else "")


@dataclass
class NamespaceError:
    """A namespace whose TrainJobs could not be listed: a row of the scan with the reason."""

    namespace: str
    reason: str


# -- paging ----------------------------------------------------------------------------------------------


def list_kept(
    api: Api,
    kind: Kind,
    namespace: str | None = None,
    label_selector: str | None = None,
    field_selector: str | None = None,
    keep: Callable[[dict[str, Any]], bool] | None = None,
    limit: int = PAGE,
) -> tuple[list[dict[str, Any]], str]:
    """A whole list, keeping page by page only the items `keep` accepts (memory: one page plus those)."""
    out: list[dict[str, Any]] = []
    last = ""
    for items, rv in api.pages(kind, namespace, label_selector, field_selector, limit):
        out.extend(items if keep is None else (i for i in items if keep(i)))
        last = rv
    return out, last


def current_rv(api: Api, kind: Kind, namespace: str | None = None, label_selector: str | None = None) -> str:
    """The resourceVersion a watch can start from, from a one-item list (no objects are kept)."""
    for _items, rv in api.pages(kind, namespace, label_selector, limit=1):
        return rv
    return ""


def _meta(o: dict[str, Any]) -> dict[str, Any]:
    m = o.get("metadata")
    return m if isinstance(m, dict) else {}


def _ns(o: dict[str, Any]) -> str | None:
    ns = _meta(o).get("namespace")
    return str(ns) if ns else None


def _name(o: dict[str, Any]) -> str:
    return str(_meta(o).get("name") or "")


def _label(o: dict[str, Any], key: str) -> str | None:
    labels = _meta(o).get("labels")
    v = labels.get(key) if isinstance(labels, dict) else None
    return str(v) if v is not None else None


def rejected_selector(e: CallError, selector: str | None) -> UsageError | None:
    """The usage error to raise when the API server refused the user's label selector (400 BadRequest on a
    list that carried it), else None. The server is the judge of selector syntax: nothing is parsed here."""
    if not selector or e.kind != "bad" or e.status != 400:
        return None
    return UsageError(f"-l/--selector {selector!r} was rejected by the API server: {e.message}")


def jobset_selector(names: Iterable[str]) -> str:
    """`jobset-name in (a,b)` for a few TrainJobs, else every object that has the label."""
    wanted = sorted(set(names))
    if 0 < len(wanted) <= IN_SELECTOR_NAMES:
        return f"{JOBSET_NAME_LABEL} in ({','.join(wanted)})"
    return JOBSET_NAME_LABEL


# -- the store the per-job collectors read from ------------------------------------------------------------


@dataclass
class Store:
    """What the fleet read, as the single-job collector asks for it."""

    # kinds read by name: kind -> (namespace or None, name) -> the object, or the error of its GET
    named: dict[str, dict[tuple[str | None, str], dict[str, Any] | CallError]] = field(default_factory=dict)
    # kinds read by name whose list came back whole: kind -> namespace (None: cluster-wide) -> the names the
    # list was read for (kept page by page): their absence from it is proven, other names are not
    complete: dict[str, dict[str | None, set[str]]] = field(default_factory=dict)
    # kinds read by list: kind -> namespace (None for cluster kinds) -> items, or the list's error
    lists: dict[str, dict[str | None, list[dict[str, Any]] | CallError]] = field(default_factory=dict)
    version: str | CallError = ""
    trainer: dict[str, Any] | CallError | None = None
    notes: list[str] = field(default_factory=list)  # what the user should know about how it was read

    def put(self, kind: Kind, obj: dict[str, Any] | CallError, namespace: str | None, name: str) -> None:
        self.named.setdefault(kind.kind, {})[(namespace if kind.namespaced else None, name)] = obj

    def has_listed(self, kind: Kind, namespace: str | None, name: str | None = None) -> bool:
        """A whole list of `kind` covered `namespace` and was read for `name` (None: for any name)."""
        done = self.complete.get(kind.kind, {})
        scopes = [None] + ([namespace] if kind.namespaced else [])
        return any(w in done and (name is None or name in done[w]) for w in scopes)


class Listed:
    """The part of `Api` the Collector uses (get, list, version), answered from a `Store`.

    A GET of an object the store does not hold is a 404 when a whole list of that kind covered its
    namespace; otherwise (its list failed, or it was not asked for) it goes to the cluster, as it would in
    `diagnose`. Objects are copies: a job's redaction never touches another job's view.
    """

    def __init__(
        self, api: Api, store: Store, narrowed: dict[str, list[dict[str, Any]]] | None = None, copies: bool = True
    ) -> None:
        self.api = api
        # False: the objects are handed out as the store holds them, for a collection that is only read in this
        # process and then sent to another (a worker process diagnoses, and redacts, a copy of its own)
        self._copy = _copy if copies else _same
        self.store = store
        self.cluster = api.cluster
        self.timeout = api.timeout
        # kinds the collector lists whole and then filters for its TrainJob: only the candidates, already
        # narrowed to a superset of what it keeps (so a namespace of 500 jobs is not copied 500 times)
        self.narrowed = narrowed or {}

    def holds(self, method: str, *args: Any) -> bool:
        """Whether `method(*args)` (`get`, `list`, `version`) is answered from the store, without a request."""
        if method == "get":
            return self._held(*args) is not None
        if method == "list":
            return self._listable(*args)
        return method == "version"

    def _held(self, kind: Kind, name: str, namespace: str | None = None) -> dict[str, Any] | CallError | None:
        """What the store says of one object (itself, or the error its GET got or would get); None: not known."""
        hit = self.store.named.get(kind.kind, {}).get((namespace if kind.namespaced else None, name))
        if hit is not None:
            return hit
        if kind is DEPLOYMENT and self.store.trainer is not None:
            return self.store.trainer
        if self.store.has_listed(kind, namespace, name):
            where = f" in namespace {namespace}" if kind.namespaced and namespace else ""
            return CallError("notfound", f'{kind.plural} "{name}" not found (not in the list{where})', 404)
        return None

    def get(self, kind: Kind, name: str, namespace: str | None = None) -> dict[str, Any]:
        hit = self._held(kind, name, namespace)
        if isinstance(hit, CallError):
            raise hit
        if hit is not None:
            return self._copy(hit)
        try:  # not read yet, or its list failed: one GET, as `diagnose` makes it, kept for the other jobs
            obj = self.api.get(kind, name, namespace)
        except CallError as e:
            if e.kind in ("notfound", "forbidden"):
                self.store.put(kind, e, namespace, name)
            raise
        self.store.put(kind, obj, namespace, name)
        return self._copy(obj)

    def _listable(
        self,
        kind: Kind,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
    ) -> bool:
        """Whether the store answers this list: a list of `kind` covered `namespace` (or it failed), or the kind
        was read by name from a whole list; with at most a `key=value` label selector and no field selector."""
        by_ns = self.store.lists.get(kind.kind)
        got = None if by_ns is None else by_ns.get(namespace if kind.namespaced else None)
        if got is None:
            return not label_selector and not field_selector and self.store.has_listed(kind, namespace)
        if field_selector:
            return False
        return isinstance(got, CallError) or not label_selector or _simple(label_selector)

    def list(
        self,
        kind: Kind,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
    ) -> tuple[list[dict[str, Any]], str]:
        if not self._listable(kind, namespace, label_selector, field_selector):
            return self.api.list(kind, namespace, label_selector, field_selector)
        by_ns = self.store.lists.get(kind.kind)
        got = None if by_ns is None else by_ns.get(namespace if kind.namespaced else None)
        if got is None:
            # a kind read by name, whose list came back whole (the collector lists nodes when a job has many):
            # what the store holds is every object of it the scan asked for, this job's among them
            named = self.store.named.get(kind.kind, {})
            got = [o for (ns, _n), o in named.items()
                   if isinstance(o, dict) and (not kind.namespaced or ns == namespace)]  # fmt: skip
        if isinstance(got, CallError):
            raise got
        items = self.narrowed.get(kind.kind, got)
        if label_selector:
            key, _eq, value = label_selector.partition("=")
            items = [o for o in items if _label(o, key.strip()) == value.strip()]
        return self._copy(items), ""

    def version(self) -> str:
        if isinstance(self.store.version, CallError):
            raise self.store.version
        return self.store.version


# -- the fleet collector -----------------------------------------------------------------------------------


class FleetCollector:
    """Reads the TrainJobs of a `FleetScope` and everything around them with shared lists.

    `trainjobs()` lists them; `prefetch()` reads the rest; `collect(tj)` then gives one TrainJob's
    `Collected`, its logs read on the spot, exactly as `Collector.collect()` would for that TrainJob.
    """

    def __init__(
        self,
        cluster: Cluster,
        scope: FleetScope,
        head_bytes: int = HEAD_BYTES,
        tail_bytes: int = TAIL_BYTES,
        log_workers: int = 2,
        workers: int = 8,
        progress: Progress | None = None,
        in_flight: int = 0,
    ) -> None:
        self.cluster = cluster
        self.api = Api(cluster)
        # at most this many log reads at once over all TrainJobs (0: each TrainJob's `log_workers` only), so a
        # TrainJob may read more of its logs at once while others are between requests
        self._log_api: Any = _Gated(self.api, in_flight) if in_flight > 0 else self.api
        self.in_flight = in_flight
        self.copies = True  # False: `collect` hands out the store's objects themselves (see `Listed`)
        self.scope = scope
        self.head_bytes = head_bytes
        self.tail_bytes = tail_bytes
        self.log_workers = max(1, log_workers)
        self.workers = max(1, workers)
        self.progress = progress or Progress(quiet=True)
        self.store = Store()
        self.namespace_errors: list[NamespaceError] = []
        self.items: list[dict[str, Any]] = []
        self._cluster_wide = scope.namespace is None  # lists are cluster-wide until that is refused
        self._namespaces: list[str] = []
        self._lock = threading.Lock()
        self._indices: dict[str, _EventIndex | None] = {}
        # (kind, namespace) -> (the list indexed, its objects by their JobSet's name)
        self._jobset_index: dict[tuple[str, str], tuple[Any, dict[str, list[dict[str, Any]]]]] = {}

    # -- round 0: the TrainJobs -----------------------------------------------------------------------
    def trainjobs(self) -> list[dict[str, Any]]:
        """The TrainJobs of the scope (InputError when none can be listed at all)."""
        sc = self.scope
        self.progress.stage(f"listing TrainJobs ({sc.describe()})")
        if sc.namespace is not None:
            field_sel = None
            if sc.names is not None and len(sc.names) == 1:
                field_sel = f"metadata.name={next(iter(sc.names))}"
            try:
                items, _ = list_kept(self.api, TRAINJOB, sc.namespace, sc.selector, field_sel, self._wanted)
            except CallError as e:
                if bad := rejected_selector(e, sc.selector):
                    raise bad from None
                raise InputError(self._fatal(e, f"list TrainJobs in {sc.namespace}")) from None
            if not items and sc.names is None:
                self._namespace_exists(sc.namespace)
        else:
            try:
                items, _ = list_kept(self.api, TRAINJOB, None, sc.selector)
            except CallError as e:
                if bad := rejected_selector(e, sc.selector):
                    raise bad from None
                if e.kind in LOST or e.kind in ("unauthorized", "notfound"):
                    raise InputError(self._fatal(e, "list TrainJobs in all namespaces")) from None
                items = self._trainjobs_per_namespace(e)
        self.items = sorted(items, key=lambda o: (_ns(o) or "", _name(o)))
        for tj in self.items:
            self.store.put(TRAINJOB, tj, _ns(tj), _name(tj))
        self._namespaces = sorted({_ns(t) or "default" for t in self.items})
        return self.items

    def _namespace_exists(self, ns: str) -> None:
        """A namespace with no TrainJob: one that does not exist is the user's typo (InputError, exit 3), not an
        empty result; when that cannot be asked (forbidden: a namespaced Role has no `get namespaces`), a note
        says so beside the empty list."""
        try:
            self.api.get(NAMESPACE, ns)
        except CallError as e:
            if e.kind == "notfound":
                raise InputError(
                    f"namespace {ns!r} does not exist on the cluster at {self.cluster.server} (context "
                    f"{self.cluster.context or '?'}); `kubectl get namespaces` lists them"
                ) from None
            if e.kind not in LOST:
                self.store.notes.append(
                    f"no TrainJob in namespace {ns}, and whether it exists is unknown: "
                    f"{gap_reason(e, 'get', NAMESPACE, None)}"
                )

    def _wanted(self, tj: dict[str, Any]) -> bool:
        return self.scope.names is None or _name(tj) in self.scope.names

    def _trainjobs_per_namespace(self, first: CallError) -> list[dict[str, Any]]:
        """TrainJobs cannot be listed across namespaces: list the namespaces, then each one's TrainJobs."""
        self._cluster_wide = False
        why = gap_reason(first, "list", TRAINJOB, None)
        try:
            namespaces, _ = self.api.list(NAMESPACE)
        except CallError as e:
            raise InputError(
                f"cannot list TrainJobs in all namespaces ({why}) nor the namespaces "
                f"({gap_reason(e, 'list', NAMESPACE, None)}); name one with -n NAMESPACE "
                "(see `ckpt-doctor rbac --fleet`)"
            ) from None
        self.store.notes.append(f"{why}: listed them namespace by namespace")
        names = sorted(_name(n) for n in namespaces if _name(n))
        out: list[dict[str, Any]] = []

        def one(ns: str) -> tuple[str, list[dict[str, Any]] | CallError]:
            try:
                return ns, list_kept(self.api, TRAINJOB, ns, self.scope.selector)[0]
            except CallError as e:
                return ns, e

        refused: list[str] = []
        with ThreadPoolExecutor(self.workers, thread_name_prefix="ckpt-fleet") as pool:
            for ns, got in pool.map(one, names):
                if isinstance(got, CallError) and (bad := rejected_selector(got, self.scope.selector)):
                    raise bad from None
                if isinstance(got, CallError) and got.kind == "forbidden":
                    refused.append(ns)
                elif isinstance(got, CallError):
                    self.namespace_errors.append(NamespaceError(ns, gap_reason(got, "list", TRAINJOB, ns)))
                else:
                    out.extend(got)
        if names and not out and len(self.namespace_errors) == len(names):  # not one namespace could be read
            raise InputError(
                f"cannot list TrainJobs in any of the {len(names)} namespace(s): {self.namespace_errors[0].reason}"
                + (f" (and {len(names) - 1} more)" if len(names) > 1 else "")
            )
        if refused:  # unknown, not empty: said once rather than as one row per namespace one may not read
            shown = ", ".join(refused[:8]) + (f" and {len(refused) - 8} more" if len(refused) > 8 else "")
            self.store.notes.append(
                f"forbidden: cannot list trainjobs in {len(refused)} namespace(s) ({shown}): their TrainJobs are "
                "not in this scan"
            )
        return out

    def _fatal(self, e: CallError, doing: str) -> str:
        if e.kind == "notfound" and "could not find the requested resource" in e.message:
            return (
                f"the cluster at {self.cluster.server} does not serve trainjobs.trainer.kubeflow.org: "
                "is Kubeflow Trainer installed?"
            )
        col = Collector(self.cluster, self.scope.namespace or "", "")
        return col._fatal(e, doing).replace("ckpt-doctor rbac --check", "ckpt-doctor rbac --fleet --check")

    # -- rounds 1 to 3: everything else ----------------------------------------------------------------
    def prefetch(self) -> None:
        if not self.items:
            return
        self.progress.stage(f"listing JobSets, Jobs, pods, events and storage ({self._where()})")
        names = {_name(t) for t in self.items}
        with ThreadPoolExecutor(self.workers, thread_name_prefix="ckpt-fleet") as pool:
            sel = jobset_selector(names)
            round1: list[Callable[[], None]] = [
                lambda: self._listed(JOB, sel),
                lambda: self._listed(POD, sel),
                lambda: self._listed(PVC),
                lambda: self._listed(WORKLOAD),
                lambda: self._named(JOBSET, [(_ns(t), _name(t)) for t in self.items]),
                lambda: self._named(TRAININGRUNTIME, self._runtime_refs("TrainingRuntime")),
                lambda: self._named(CLUSTERTRAININGRUNTIME, self._runtime_refs("ClusterTrainingRuntime")),
                self._versions,
            ]
            self._run(pool, round1)
            self._check_lost()
            pvs, nodes, cms = self._storage_names()
            round2: list[Callable[[], None]] = [
                lambda: self._named(PV, pvs),
                lambda: self._named(NODE, nodes),
                lambda: self._named(CONFIGMAP, cms, BIG_PAGE),
                self._events,
            ]
            self._run(pool, round2)
            self._named(STORAGECLASS, self._class_names())

    def _where(self) -> str:
        if self._cluster_wide:
            return "all namespaces"
        return f"{len(self._namespaces)} namespace{'s' if len(self._namespaces) != 1 else ''}"

    @staticmethod
    def _run(pool: ThreadPoolExecutor, calls: Sequence[Callable[[], None]]) -> None:
        for fut in [pool.submit(c) for c in calls]:
            fut.result()

    def _check_lost(self) -> None:
        """The cluster went away after the TrainJobs were listed: exit 3 rather than diagnose half-read jobs."""
        errors = [
            got
            for by_ns in self.store.lists.values()
            for got in by_ns.values()
            if isinstance(got, CallError)
        ]
        lost = [e for e in errors if e.kind in LOST]
        total = sum(len(by_ns) for by_ns in self.store.lists.values())
        if lost and len(lost) >= max(1, total // 2):
            raise InputError(
                f"lost the cluster at {self.cluster.server} in the middle of the scan ({lost[0].message}); "
                "run it again when the cluster answers"
            )

    def _listed(
        self, kind: Kind, label: str | None = None, keep: Callable[[dict[str, Any]], bool] | None = None
    ) -> None:
        """One list of `kind` (cluster-wide, or per namespace), split by namespace into the store."""
        by_ns = self.store.lists.setdefault(kind.kind, {})
        if not kind.namespaced:
            try:
                by_ns[None] = list_kept(self.api, kind, None, label, keep=keep)[0]
            except CallError as e:
                by_ns[None] = e
            return
        if self._cluster_wide:
            try:
                items = list_kept(self.api, kind, None, label, keep=keep)[0]
            except CallError as e:
                if e.kind in NO_RETRY:  # per namespace would fail the same way (or the kind is not served)
                    for ns in self._namespaces:
                        by_ns[ns] = e
                    return
                self.store.notes.append(f"{gap_reason(e, 'list', kind, None)}: listed them namespace by namespace")
                self._per_namespace(kind, label, keep, by_ns)
                return
            for ns in self._namespaces:
                by_ns[ns] = []
            for o in items:
                ns = _ns(o) or "default"
                if ns in by_ns:
                    by_ns[ns].append(o)  # type: ignore[union-attr]
            return
        self._per_namespace(kind, label, keep, by_ns)

    def _per_namespace(
        self,
        kind: Kind,
        label: str | None,
        keep: Callable[[dict[str, Any]], bool] | None,
        by_ns: dict[str | None, list[dict[str, Any]] | CallError],
    ) -> None:
        def one(ns: str) -> tuple[str, list[dict[str, Any]] | CallError]:
            try:
                return ns, list_kept(self.api, kind, ns, label, keep=keep)[0]
            except CallError as e:
                return ns, e

        if len(self._namespaces) <= 1:
            by_ns.update(one(ns) for ns in self._namespaces)
            return
        with ThreadPoolExecutor(min(8, len(self._namespaces)), thread_name_prefix="ckpt-fleet-ns") as pool:
            by_ns.update(pool.map(one, self._namespaces))

    def _named(self, kind: Kind, wanted: Iterable[tuple[str | None, str]], limit: int = PAGE) -> None:
        """Objects read by name: by GET when few are wanted (`gets_up_to`), else from one list per scope."""
        want = {((ns or "default") if kind.namespaced else None, n) for ns, n in wanted if n}
        if not want:
            return
        if len(want) <= self.scope.gets_up_to:
            for ns, n in sorted(want, key=lambda k: (k[0] or "", k[1])):
                try:
                    self.store.put(kind, self.api.get(kind, n, ns), ns, n)
                except CallError as e:
                    self.store.put(kind, e, ns, n)
            return
        names = {n for _, n in want}
        done = self.store.complete.setdefault(kind.kind, {})
        scopes = [None] if not kind.namespaced or self._cluster_wide else sorted({str(ns) for ns, _ in want})

        def one(where: str | None) -> None:
            field_sel = None
            ns_names = [n for ns, n in want if where is None or ns == where]
            if where is not None and len(ns_names) == 1:
                field_sel = f"metadata.name={ns_names[0]}"
            try:
                items, _ = list_kept(
                    self.api, kind, where, None, field_sel, keep=lambda o: _name(o) in names, limit=limit
                )
            except CallError as e:
                # one GET per object later, as `diagnose` reads them
                self.store.notes.append(f"{gap_reason(e, 'list', kind, where)}: read them one by one")
                return
            for o in items:
                self.store.put(kind, o, _ns(o), _name(o))
            done[where] = set(ns_names)

        if len(scopes) == 1:
            one(scopes[0])
            return
        with ThreadPoolExecutor(min(8, len(scopes)), thread_name_prefix="ckpt-fleet-ns") as pool:
            list(pool.map(one, scopes))

    def _runtime_refs(self, kind: str) -> list[tuple[str | None, str]]:
        out = []
        for tj in self.items:
            rname, rkind, _ = runtime_ref(Obj(tj))
            if rname and runtime_kind(rkind).kind == kind:
                out.append((_ns(tj), rname))
        return out

    def _versions(self) -> None:
        try:
            self.store.version = self.api.version()
        except CallError as e:
            self.store.version = e
        try:
            self.store.trainer = self.api.get(DEPLOYMENT, TRAINER_DEPLOYMENT[1], TRAINER_DEPLOYMENT[0])
        except CallError as e:
            self.store.trainer = e

    # -- what round 2 must read: the names the collector will ask for --------------------------------
    def _job_view(self, tj: dict[str, Any]) -> tuple[list[dict[str, Any]], dict[str, Any] | None]:
        """The pods and the runtime the collector will see for `tj` (from the store; not copies: to read)."""
        ns, name = _ns(tj) or "default", _name(tj)
        pods = self._by_jobset("Pod", ns).get(name, [])
        rname, rkind, _ = runtime_ref(Obj(tj))
        runtime = None
        if rname:
            kind = runtime_kind(rkind)
            hit = self.store.named.get(kind.kind, {}).get((ns if kind.namespaced else None, rname))
            if isinstance(hit, dict):
                return pods, hit
            try:  # else by the GET the collector would make (kept for it)
                runtime = Listed(self.api, self.store).get(kind, rname, ns)
            except CallError:
                runtime = None
        return pods, runtime

    def _by_jobset(self, kind: str, ns: str) -> dict[str, list[dict[str, Any]]]:
        """A namespace's listed pods (or Jobs) by their JobSet's name, in the list's order (indexed once: each
        TrainJob used to filter the namespace's every pod)."""
        got = self.store.lists.get(kind, {}).get(ns)
        with self._lock:
            held = self._jobset_index.get((kind, ns))
            if held is not None and held[0] is got:
                return held[1]
            by_name: dict[str, list[dict[str, Any]]] = {}
            for p in got if isinstance(got, list) else ():
                owner = _label(p, JOBSET_NAME_LABEL)
                if owner is not None:
                    by_name.setdefault(owner, []).append(p)
            self._jobset_index[(kind, ns)] = (got, by_name)
            return by_name

    def _storage_names(
        self,
    ) -> tuple[list[tuple[str | None, str]], list[tuple[str | None, str]], list[tuple[str | None, str]]]:
        pvs: set[tuple[str | None, str]] = set()
        nodes: set[tuple[str | None, str]] = set()
        cms: set[tuple[str | None, str]] = set()
        for tj in self.items:
            ns, name = _ns(tj) or "default", _name(tj)
            pods, runtime = self._job_view(tj)
            rt = Obj(runtime) if runtime is not None else None
            pod_objs = [Obj(p) for p in pods]
            for p in self._job_pvcs(tj, pods, runtime):
                vol = (p.get("spec") or {}).get("volumeName")
                if vol:
                    pvs.add((None, str(vol)))
            nodes |= {(None, str(p.spec["nodeName"])) for p in pod_objs if p.spec.get("nodeName")}
            cms.add((ns, f"{name}-runtime-snapshot"))
            cms |= {(ns, n) for n in _configmap_refs(pod_objs, rt)}
        return sorted(pvs, key=str), sorted(nodes, key=str), sorted(cms, key=str)

    def _job_pvcs(
        self, tj: dict[str, Any], pods: list[dict[str, Any]], runtime: dict[str, Any] | None
    ) -> list[dict[str, Any]]:
        ns, name = _ns(tj) or "default", _name(tj)
        got = self.store.lists.get("PersistentVolumeClaim", {}).get(ns)
        if not isinstance(got, list):
            return []
        sc = Scope(
            snap=Snapshot(),
            trainjob=Obj(tj),
            runtime=Obj(runtime) if runtime is not None else None,
            pods=[Obj(p) for p in pods],
        )
        claims = claim_names(sc)
        return [p for p in got if _name(p) in claims or _label(p, JOBSET_NAME_LABEL) == name]

    def _class_names(self) -> list[tuple[str | None, str]]:
        classes: set[tuple[str | None, str]] = set()
        for tj in self.items:
            pods, runtime = self._job_view(tj)
            for p in self._job_pvcs(tj, pods, runtime):
                cls = (p.get("spec") or {}).get("storageClassName")
                if cls:
                    classes.add((None, str(cls)))
                vol = (p.get("spec") or {}).get("volumeName")
                pv = self.store.named.get("PersistentVolume", {}).get((None, str(vol))) if vol else None
                if isinstance(pv, dict) and (pv.get("spec") or {}).get("storageClassName"):
                    classes.add((None, str(pv["spec"]["storageClassName"])))
        return sorted(classes, key=str)

    def _events(self) -> None:
        """Events that may be about a TrainJob of the scan or one of its objects (the collector then keeps
        exactly those it would keep from the whole namespace's list)."""
        jobs: dict[str, set[str]] = {}
        for tj in self.items:
            jobs.setdefault(_ns(tj) or "default", set()).add(_name(tj))
        named: dict[str, set[tuple[str, str]]] = {}
        open_kinds: dict[str, set[str]] = {}  # kinds whose list failed: keep all their events
        for kind in ("Pod", "Job", "PersistentVolumeClaim", "Workload"):
            for ns, got in self.store.lists.get(kind, {}).items():
                if ns is None:
                    continue
                if isinstance(got, CallError):
                    open_kinds.setdefault(ns, set()).add(kind)
                else:
                    named.setdefault(ns, set()).update((kind, _name(o)) for o in got)

        def keep(ev: dict[str, Any]) -> bool:
            ns = _ns(ev) or "default"
            mine = jobs.get(ns)
            if not mine:
                return False
            inv = _involved(ev)
            if inv is None:
                return True  # malformed: the collector decides
            kind, name = inv
            if kind in ("TrainJob", "JobSet"):
                return name in mine
            if kind in open_kinds.get(ns, ()) or (kind, name) in named.get(ns, ()):
                return True
            if kind in ("Pod", "Job"):
                return longest_prefix(name, mine) is not None
            return False

        self._listed(EVENT, None, keep)

    def _event_index(self, ns: str) -> _EventIndex | None:
        with self._lock:
            if ns not in self._indices:
                got = self.store.lists.get("Event", {}).get(ns)
                self._indices[ns] = _EventIndex(got) if isinstance(got, list) else None
            return self._indices[ns]

    def _narrowed(self, tj: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
        """This TrainJob's candidates among its namespace's pods, Jobs, events, PVCs and Workloads (a superset of
        what the collector keeps of the whole lists, in their order)."""
        ns, name = _ns(tj) or "default", _name(tj)
        pods, runtime = self._job_view(tj)
        out: dict[str, list[dict[str, Any]]] = {}
        # its pods and Jobs: the collector lists them by `jobset-name=NAME`, which keeps exactly these
        if isinstance(self.store.lists.get("Pod", {}).get(ns), list):
            out["Pod"] = pods
        if isinstance(self.store.lists.get("Job", {}).get(ns), list):
            out["Job"] = self._by_jobset("Job", ns).get(name, [])
        pvcs = self.store.lists.get("PersistentVolumeClaim", {}).get(ns)
        if isinstance(pvcs, list):
            out["PersistentVolumeClaim"] = self._job_pvcs(tj, pods, runtime)
        wls = self.store.lists.get("Workload", {}).get(ns)
        if isinstance(wls, list):
            out["Workload"] = [w for w in wls if _owned_by(w, tj)]
        idx = self._event_index(ns)
        if idx is not None:
            keys = [("TrainJob", name), ("JobSet", name)]
            keys += [("Pod", _name(p)) for p in pods]
            keys += [("Job", _name(j)) for j in out.get("Job", [])]
            keys += [("PersistentVolumeClaim", _name(p)) for p in out.get("PersistentVolumeClaim", [])]
            keys += [("Workload", _name(w)) for w in out.get("Workload", [])]
            out["Event"] = idx.candidates(name, keys, open_kinds=self._open_kinds(ns))
        return out

    def _open_kinds(self, ns: str) -> set[str]:
        """Kinds whose list failed in `ns`: their objects are unknown, so any event about one may be ours."""
        return {
            k
            for k in ("Pod", "Job", "PersistentVolumeClaim", "Workload")
            if isinstance(self.store.lists.get(k, {}).get(ns), CallError)
        }

    # -- one TrainJob ----------------------------------------------------------------------------------
    def collect(self, tj: dict[str, Any], pool: Executor | None = None) -> Collected:
        """One TrainJob's collection, as `Collector.collect()` makes it, from the store (logs read now); its
        requests on `pool` when given (one pool for the scan's TrainJobs), else on a pool of its own."""
        col = Collector(self.cluster, _ns(tj) or "default", _name(tj), self.head_bytes, self.tail_bytes,
                        self.log_workers, pool=pool)  # fmt: skip
        col.api = Listed(self.api, self.store, self._narrowed(tj), self.copies)  # type: ignore[assignment]
        col.logs = LogReader(self._log_api, self.head_bytes, self.tail_bytes)
        return col.collect()

    def snapshot(self, tj: dict[str, Any], out: Collected) -> Snapshot:
        from ckpt_doctor.sources.live.collector import build_snapshot

        return build_snapshot(out, self.cluster, _ns(tj) or "default", _name(tj))


class _Gated:
    """`Api.log` through a shared limit of requests in flight."""

    def __init__(self, api: Api, limit: int) -> None:
        self.api = api
        self._room = threading.BoundedSemaphore(limit)

    def log(self, *args: Any, **kwargs: Any) -> bytes:
        with self._room:
            return self.api.log(*args, **kwargs)


def _simple(label_selector: str) -> bool:
    """One `key=value` requirement (what the collector asks for), which a list in memory can apply."""
    key, eq, _value = label_selector.partition("=")
    return bool(eq) and "," not in label_selector and "!" not in key


def _same(o: Any) -> Any:
    return o


def _copy(o: Any) -> Any:
    """A deep copy of what the API returned (dicts, lists and scalars, no object twice), several times faster
    than copy.deepcopy; anything else is deep-copied as before."""
    t = type(o)
    if t is dict:
        return {k: _copy(v) for k, v in o.items()}
    if t is list:
        return [_copy(v) for v in o]
    if t is str or t is int or t is bool or t is float or o is None:
        return o
    return copy.deepcopy(o)


def _involved(ev: dict[str, Any]) -> tuple[str, str] | None:
    inv = ev.get("involvedObject") or ev.get("regarding") or {}
    if not isinstance(inv, dict):
        return None
    return str(inv.get("kind")), str(inv.get("name"))


class _EventIndex:
    """A namespace's events by the object they are about, and Pod/Job events by every `-` prefix of the
    name (the pods and Jobs of deleted attempts are known only by their JobSet's name)."""

    def __init__(self, events: list[dict[str, Any]]) -> None:
        self.events = events
        self.by_key: dict[tuple[str, str], list[int]] = {}
        self.by_prefix: dict[str, list[int]] = {}
        self.by_kind: dict[str, list[int]] = {}
        self.odd: list[int] = []  # no readable involved object: every job's candidate
        for i, ev in enumerate(events):
            inv = _involved(ev)
            if inv is None:
                self.odd.append(i)
                continue
            kind, name = inv
            self.by_key.setdefault(inv, []).append(i)
            self.by_kind.setdefault(kind, []).append(i)
            if kind in ("Pod", "Job"):
                j = name.find("-")
                while j > 0:
                    self.by_prefix.setdefault(name[:j], []).append(i)
                    j = name.find("-", j + 1)

    def candidates(
        self, job: str, keys: Iterable[tuple[str, str]], open_kinds: Iterable[str] = ()
    ) -> list[dict[str, Any]]:
        hit = set(self.odd) | set(self.by_prefix.get(job, ()))
        for k in keys:
            hit.update(self.by_key.get(k, ()))
        for kind in open_kinds:
            hit.update(self.by_kind.get(kind, ()))
        return [self.events[i] for i in sorted(hit)]
