"""Select one TrainJob in a Snapshot and everything that belongs to it.

Objects that do not belong to the target (another TrainJob's pods, an unrelated pod's
events) never reach the rules: contracts.md §2.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ckpt_doctor.coverage import ABSENT, Known
from ckpt_doctor.errors import InputError, UsageError
from ckpt_doctor.snapshot import Obj, Origin, Snapshot
from ckpt_doctor.typed import clean
from ckpt_doctor.yamlio import kube_objects

JOBSET_NAME_LABEL = "jobset.sigs.k8s.io/jobset-name"
RESTART_ATTEMPT = "jobset.sigs.k8s.io/restart-attempt"
REPLICATED_JOB_LABEL = "jobset.sigs.k8s.io/replicatedjob-name"
ANCESTOR_LABEL = "trainer.kubeflow.org/trainjob-ancestor-step"
RUNTIME_KINDS = ("TrainingRuntime", "ClusterTrainingRuntime")
TRAINER_CONTAINER = "node"


@dataclass
class Scope:
    """Everything known about one TrainJob (or, for lint, one runtime without a TrainJob)."""

    snap: Snapshot
    trainjob: Obj | None
    runtime: Obj | None = None
    runtime_source: str = ""  # "TrainingRuntime", "ClusterTrainingRuntime", "runtime-snapshot"
    runtime_missing: str | None = None  # why no runtime, when one was referenced
    jobset: Obj | None = None
    jobs: list[Obj] = field(default_factory=list)
    pods: list[Obj] = field(default_factory=list)
    events: list[Obj] = field(default_factory=list)
    pvcs: dict[str, Obj] = field(default_factory=dict)
    pvs: dict[str, Obj] = field(default_factory=dict)
    storageclasses: dict[str, Obj] = field(default_factory=dict)
    nodes: dict[str, Obj] = field(default_factory=dict)
    workloads: list[Obj] = field(default_factory=list)
    configmaps: dict[str, Obj] = field(default_factory=dict)

    @property
    def namespace(self) -> str | None:
        if self.trainjob is not None:
            return self.trainjob.namespace
        return self.runtime.namespace if self.runtime is not None else None

    @property
    def name(self) -> str:
        return self.trainjob.name if self.trainjob is not None else ""

    def target(self) -> dict[str, Any] | None:
        if self.trainjob is None:
            return None
        return {"kind": "TrainJob", "namespace": self.trainjob.namespace or "default", "name": self.trainjob.name}

    def refs(self) -> set[str]:
        """`Kind/namespace/name` of every object in scope (what a malformed field is matched against)."""
        cached = self.__dict__.get("_refs")
        if cached is None:
            objs: list[Obj | None] = [self.trainjob, self.runtime, self.jobset, *self.jobs, *self.pods, *self.events]
            objs += [*self.pvcs.values(), *self.pvs.values(), *self.storageclasses.values(), *self.nodes.values()]
            objs += [*self.workloads, *self.configmaps.values()]
            cached = self.__dict__["_refs"] = {o.ref() for o in objs if o is not None}
        return cached

    def absence_proof(self, kind: str, name: str) -> Known | None:
        """An event of the target's that says `kind` `name` was not found (e.g. a pod's FailedScheduling)."""
        needle = f'{kind.lower()} "{name}" not found'
        for ev in self.events:
            f = event_fields(ev)
            if needle in f["message"].lower():
                return Known(ABSENT, f"{f['reason']} on {f['object']}: {f['message'][:160]}", event_ev(f))
        return None

    def trainer_pods(self) -> list[Obj]:
        """Pods of the trainer replicated job (`node`), or all pods when unlabeled."""
        labeled = [p for p in self.pods if p.labels.get(REPLICATED_JOB_LABEL)]
        if not labeled:
            return list(self.pods)
        names = self.trainer_job_names()
        return [p for p in labeled if p.labels.get(REPLICATED_JOB_LABEL) in names]

    def trainer_job_names(self) -> set[str]:
        names = {TRAINER_CONTAINER}
        for rj in replicated_jobs(self.runtime):
            labels = ((rj.get("template") or {}).get("metadata") or {}).get("labels") or {}
            if labels.get(ANCESTOR_LABEL) == "trainer" and rj.get("name"):
                names.add(str(rj["name"]))
        return names


def replicated_jobs(runtime: Obj | None) -> list[dict[str, Any]]:
    if runtime is None:
        return []
    rjs = (((runtime.spec.get("template") or {}).get("spec") or {}).get("replicatedJobs")) or []
    return [r for r in rjs if isinstance(r, dict)]


def trainjobs(snap: Snapshot) -> list[Obj]:
    return [o for o in snap.of_kind("TrainJob") if o.group == "trainer.kubeflow.org"]


def pick_trainjob(snap: Snapshot, wanted: str | None) -> Obj:
    """The TrainJob the user means: the only one, or the one named NAME / NS/NAME."""
    tjs = trainjobs(snap)
    where = snap.location or None
    if not tjs:
        raise InputError("no TrainJob (trainer.kubeflow.org) found; add `kubectl get trainjob NAME -o yaml`", where)
    if wanted:
        ns, sep, name = wanted.strip().rpartition("/")
        if not name or (sep and not ns) or "/" in ns:
            raise UsageError(f"--trainjob {wanted!r}: expected NAME or NAMESPACE/NAME")
        hits = [t for t in tjs if t.name == name and (not ns or t.namespace == ns)]
        if len(hits) == 1:
            return hits[0]
        listed = ", ".join(sorted(_qual(t) for t in tjs))
        if not hits:
            raise InputError(f"TrainJob {wanted!r} not found; the bundle has: {listed}", where)
        raise InputError(f"TrainJob {wanted!r} is ambiguous; name it as NAMESPACE/NAME: {listed}", where)
    if len(tjs) > 1:
        listed = ", ".join(sorted(_qual(t) for t in tjs))
        raise InputError(f"the bundle holds {len(tjs)} TrainJobs; choose one with --trainjob: {listed}", where)
    return tjs[0]


def _qual(o: Obj) -> str:
    return f"{o.namespace}/{o.name}" if o.namespace else o.name


def build_scope(snap: Snapshot, trainjob: Obj | None, runtime: Obj | None = None) -> Scope:
    sc = Scope(snap=snap, trainjob=trainjob)
    ns = trainjob.namespace if trainjob is not None else (runtime.namespace if runtime else None)
    if trainjob is not None:
        _find_runtime(sc)
    else:
        sc.runtime = runtime
        sc.runtime_source = runtime.kind if runtime is not None else ""
    name = trainjob.name if trainjob is not None else None
    if name:
        sc.jobset = next(
            (
                j
                for j in snap.of_kind("JobSet")
                if j.name == name and _same_ns(j, ns) and _owned_by_or_unowned(j, trainjob)
            ),
            None,
        )
        sc.jobs = [j for j in snap.of_kind("Job") if _same_ns(j, ns) and j.labels.get(JOBSET_NAME_LABEL) == name]
        sc.pods = [p for p in snap.of_kind("Pod") if _same_ns(p, ns) and p.labels.get(JOBSET_NAME_LABEL) == name]
        sc.workloads = [w for w in snap.of_kind("Workload") if _same_ns(w, ns) and owned_by(w, trainjob)]
    _find_storage(sc, ns)
    sc.events = _events_for(sc, ns)
    return sc


def _same_ns(o: Obj, ns: str | None) -> bool:
    return ns is None or o.namespace in (None, ns)


def owned_by(o: Obj, owner: Obj | None) -> bool:
    """`o` names `owner` in its ownerReferences (kind and name; uid too when both sides have one)."""
    if owner is None:
        return False
    for ref in o.meta.get("ownerReferences") or []:
        if not isinstance(ref, dict):
            continue
        same = ref.get("kind") == owner.kind and ref.get("name") == owner.name
        if same and (not ref.get("uid") or not owner.uid or ref.get("uid") == owner.uid):
            return True
    return False


def _owned_by_or_unowned(o: Obj, owner: Obj | None) -> bool:
    refs = [r for r in o.meta.get("ownerReferences") or [] if isinstance(r, dict)]
    return not refs or owned_by(o, owner)


def longest_prefix(name: str, jobs: set[str]) -> str | None:
    """The longest of `jobs` that `name` is, or starts with followed by `-` (the pods, Jobs and events of a
    JobSet are named after it)."""
    if name in jobs:
        return name
    i = name.rfind("-")
    while i > 0:
        if name[:i] in jobs:
            return name[:i]
        i = name.rfind("-", 0, i)
    return None


def runtime_ref(tj: Obj) -> tuple[str, str, dict[str, Any]]:
    """(name, kind, the ref as written) of a TrainJob's spec.runtimeRef; kind defaults to
    ClusterTrainingRuntime, as the Trainer's does."""
    ref = tj.spec.get("runtimeRef")
    ref = ref if isinstance(ref, dict) else {}
    return str(ref.get("name") or ""), str(ref.get("kind") or "ClusterTrainingRuntime"), ref


def _find_runtime(sc: Scope) -> None:
    tj = sc.trainjob
    assert tj is not None
    rname, rkind, _ = runtime_ref(tj)
    snap = sc.snap
    cm = snap.get("ConfigMap", f"{tj.name}-runtime-snapshot", tj.namespace)
    if cm is not None:
        text = (cm.raw.get("data") or {}).get("runtime")
        if isinstance(text, str):
            where = f"ConfigMap/{tj.namespace}/{cm.name} data.runtime"
            try:
                objs = list(kube_objects(text, where))
            except InputError as e:  # a broken snapshot is this TrainJob's fact, not a broken bundle
                objs = []
                sc.runtime_missing = f"the runtime snapshot cannot be read ({e.message})"
            if objs:
                origin = cm.origin or Origin(where)
                raw, bad = clean(objs[0], str(objs[0].get("kind") or ""))
                sc.runtime = Obj(raw, origin)
                snap.coverage.malformed.extend(bad)
                sc.runtime_source = "runtime-snapshot"
                return
    if not rname:
        sc.runtime_missing = "the TrainJob has no spec.runtimeRef.name"
        return
    if rkind == "TrainingRuntime":
        sc.runtime = snap.get("TrainingRuntime", rname, tj.namespace)
    else:
        sc.runtime = next((o for o in snap.of_kind("ClusterTrainingRuntime") if o.name == rname), None)
    if sc.runtime is not None:
        sc.runtime_source = rkind
    else:
        sc.runtime_missing = f"{rkind} {rname!r} is not in the snapshot"


def _claims_in_pod_spec(spec: dict[str, Any]) -> set[str]:
    out = set()
    for v in spec.get("volumes") or []:
        if isinstance(v, dict):
            claim = (v.get("persistentVolumeClaim") or {}).get("claimName")
            if claim:
                out.add(str(claim))
    return out


def claim_names(sc: Scope) -> set[str]:
    """PVC names the target's pods (or, without pods, its runtime and overrides) mount."""
    names: set[str] = set()
    for p in sc.pods:
        names |= _claims_in_pod_spec(p.spec)
    if not sc.pods:
        for rj in replicated_jobs(sc.runtime):
            pod_spec = (((rj.get("template") or {}).get("spec") or {}).get("template") or {}).get("spec") or {}
            names |= _claims_in_pod_spec(pod_spec)
        if sc.trainjob is not None:
            names |= _claims_in_overrides(sc.trainjob.spec)
    return names


def _claims_in_overrides(spec: dict[str, Any]) -> set[str]:
    names: set[str] = set()
    for ov in spec.get("podTemplateOverrides") or []:
        names |= _claims_in_pod_spec((ov or {}).get("spec") or {})
    for ov in spec.get("podSpecOverrides") or []:
        names |= _claims_in_pod_spec(ov or {})
    for patch in spec.get("runtimePatches") or []:
        tmpl = (((patch or {}).get("trainingRuntimeSpec") or {}).get("template") or {}).get("spec") or {}
        for rj in tmpl.get("replicatedJobs") or []:
            pod_spec = ((((rj or {}).get("template") or {}).get("spec") or {}).get("template") or {}).get("spec")
            names |= _claims_in_pod_spec(pod_spec or {})
    return names


def _find_storage(sc: Scope, ns: str | None) -> None:
    snap = sc.snap
    for claim in claim_names(sc):
        pvc = snap.get("PersistentVolumeClaim", claim, ns)
        if pvc is not None:
            sc.pvcs[claim] = pvc
    for pvc in sc.pvcs.values():
        vol = pvc.spec.get("volumeName")
        pv = snap.get("PersistentVolume", str(vol)) if vol else None
        if pv is not None:
            sc.pvs[pvc.name] = pv
        cls = pvc.spec.get("storageClassName") or (pv.spec.get("storageClassName") if pv else None)
        if cls:
            sco = snap.get("StorageClass", str(cls))
            if sco is not None:
                sc.storageclasses[str(cls)] = sco
    for p in sc.pods:
        node = p.spec.get("nodeName")
        if node:
            n = snap.get("Node", str(node))
            if n is not None:
                sc.nodes[str(node)] = n
    for cm in snap.of_kind("ConfigMap"):
        if _same_ns(cm, ns):
            sc.configmaps[cm.name] = cm


def _event_target(ev: Obj) -> dict[str, Any]:
    inv = ev.raw.get("involvedObject") or ev.raw.get("regarding") or {}
    return inv if isinstance(inv, dict) else {}


def _events_for(sc: Scope, ns: str | None) -> list[Obj]:
    mine: dict[tuple[str, str], str | None] = {}
    for o in [sc.trainjob, sc.jobset, *sc.jobs, *sc.pods, *sc.pvcs.values(), *sc.workloads]:
        if o is not None:
            mine[(o.kind, o.name)] = o.uid
    out = []
    for ev in sc.snap.of_kind("Event"):
        inv = _event_target(ev)
        key = (str(inv.get("kind", "")), str(inv.get("name", "")))
        if key not in mine:
            continue
        inv_ns = inv.get("namespace") or ev.namespace
        if ns is not None and inv_ns not in (None, ns):
            continue
        uid = mine[key]
        if uid and inv.get("uid") and inv.get("uid") != uid:
            continue
        out.append(ev)
    return out


def event_fields(ev: Obj) -> dict[str, Any]:
    """Normalise core/v1 and events.k8s.io/v1 Events to one shape."""
    raw = ev.raw
    inv = _event_target(ev)
    last = (
        raw.get("lastTimestamp")
        or raw.get("eventTime")
        or (raw.get("series") or {}).get("lastObservedTime")
        or raw.get("deprecatedLastTimestamp")
        or ev.created
    )
    count = raw.get("count") or (raw.get("series") or {}).get("count") or raw.get("deprecatedCount") or 1
    return {
        "reason": str(raw.get("reason") or ""),
        "message": str(raw.get("message") or raw.get("note") or ""),
        "type": str(raw.get("type") or "Normal"),
        "count": int(count) if str(count).isdigit() else 1,
        "lastTimestamp": str(last or ""),
        "object": f"{inv.get('kind', '')}/{inv.get('namespace') or ev.namespace or ''}/{inv.get('name', '')}",
        "involvedKind": str(inv.get("kind", "")),
        "involvedName": str(inv.get("name", "")),
    }


def event_ev(f: dict[str, Any]) -> dict[str, Any]:
    """An event as evidence, from `event_fields`."""
    return {
        "type": "event",
        "object": f["object"],
        "reason": f["reason"],
        "message": f["message"],
        "count": f["count"],
        "lastTimestamp": f["lastTimestamp"],
    }
