"""`d` in the app: an object summarised the way `kubectl describe` does it, with its events.

Plain lines (the line view draws and searches them). Each kind shows the fields that matter when a
job does not resume (a pod's containers with their last state and exit code, its volumes and
mounts; a PVC's access modes and class; a JobSet's failure policy and restarts); any other kind
shows its identity, conditions and events. Nothing here is judged: that is the findings' job.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from ckpt_doctor.tui.model import EventRow, age

WIDTH = 16  # the label column


def _d(x: Any) -> dict[str, Any]:
    return x if isinstance(x, dict) else {}


def _l(x: Any) -> list[Any]:
    return x if isinstance(x, list) else []


def _get(obj: Any, path: str) -> Any:
    for part in path.split("."):
        obj = _d(obj).get(part)
    return obj


class _Out:
    def __init__(self) -> None:
        self.lines: list[str] = []

    def field(self, label: str, value: Any, indent: int = 0) -> None:
        if value is None or value == "" or value == [] or value == {}:
            return
        pad = " " * indent
        head = f"{pad}{label + ':':<{max(WIDTH - indent, len(label) + 2)}}"
        if isinstance(value, dict):
            items = [f"{k}={v}" for k, v in value.items()]
        elif isinstance(value, list):
            items = [str(v) for v in value]
        else:
            items = str(value).splitlines() or [""]
        self.lines.append(head + items[0])
        self.lines += [" " * len(head) + x for x in items[1:]]

    def section(self, title: str) -> None:
        self.lines.append(f"{title}:")

    def text(self, line: str) -> None:
        self.lines.append(line)

    def table(self, header: list[str], rows: Iterable[list[str]], indent: int = 2) -> None:
        rows = [header, *rows]
        widths = [max(len(r[i]) for r in rows) for i in range(len(header) - 1)]
        for r in rows:
            cells = [c.ljust(w) for c, w in zip(r[:-1], widths, strict=False)] + [r[-1]]
            self.lines.append(" " * indent + "  ".join(cells).rstrip())


def _state(st: dict[str, Any]) -> str:
    for name in ("running", "waiting", "terminated"):
        s = st.get(name)
        if isinstance(s, dict):
            bits = [name.capitalize()]
            if s.get("reason"):
                bits.append(str(s["reason"]))
            if "exitCode" in s:
                bits.append(f"exit code {s['exitCode']}")
            if s.get("signal"):
                bits.append(f"signal {s['signal']}")
            when = s.get("finishedAt") or s.get("startedAt")
            if when:
                bits.append(f"at {when}")
            return " · ".join(bits)
    return ""


def _pod(o: _Out, raw: dict[str, Any]) -> None:
    spec, status = _d(raw.get("spec")), _d(raw.get("status"))
    o.field("Node", spec.get("nodeName"))
    o.field("Status", " · ".join(str(x) for x in (status.get("phase"), status.get("reason")) if x))
    o.field("Message", status.get("message"))
    o.field("Start Time", status.get("startTime"))
    o.field("Grace Period", spec.get("terminationGracePeriodSeconds"))
    statuses = {
        str(_d(cs).get("name")): _d(cs)
        for cs in _l(status.get("initContainerStatuses")) + _l(status.get("containerStatuses"))
    }
    for group, title in (("initContainers", "Init Containers"), ("containers", "Containers")):
        containers = [_d(c) for c in _l(spec.get(group))]
        if not containers:
            continue
        o.section(title)
        for c in containers:
            cs = statuses.get(str(c.get("name")), {})
            o.text(f"  {c.get('name')}:")
            o.field("Image", c.get("image"), 4)
            o.field("Command", " ".join(str(x) for x in _l(c.get("command"))), 4)
            o.field("Args", " ".join(str(x) for x in _l(c.get("args")))[:300], 4)
            o.field("State", _state(_d(cs.get("state"))), 4)
            o.field("Last State", _state(_d(cs.get("lastState"))), 4)
            o.field("Ready", cs.get("ready"), 4)
            o.field("Restart Count", cs.get("restartCount"), 4)
            o.field("Limits", _get(c, "resources.limits"), 4)
            o.field("Environment", [f"{_d(e).get('name')}={_env_value(_d(e))}" for e in _l(c.get("env"))], 4)
            o.field(
                "Mounts", [f"{_d(m).get('mountPath')} from {_d(m).get('name')}" for m in _l(c.get("volumeMounts"))], 4
            )
    vols = [_d(v) for v in _l(spec.get("volumes"))]
    if vols:
        o.section("Volumes")
        for v in vols:
            kind = next((k for k in v if k != "name"), "?")
            detail = _d(v.get(kind))
            what = detail.get("claimName") or detail.get("name") or detail.get("path") or ""
            o.text(f"  {v.get('name')}: {kind}" + (f" ({what})" if what else ""))


def _env_value(e: dict[str, Any]) -> str:
    if "value" in e:
        return str(e["value"])
    src = _d(e.get("valueFrom"))
    kind = next(iter(src), "")
    ref = _d(src.get(kind))
    return f"<{kind} {ref.get('name', '')}{'/' + str(ref['key']) if ref.get('key') else ''}>" if kind else ""


def _pvc(o: _Out, raw: dict[str, Any]) -> None:
    spec, status = _d(raw.get("spec")), _d(raw.get("status"))
    o.field("Status", status.get("phase"))
    o.field("Volume", spec.get("volumeName"))
    o.field("Capacity", _get(status, "capacity.storage") or _get(spec, "resources.requests.storage"))
    o.field("Access Modes", ",".join(str(m) for m in _l(spec.get("accessModes"))))
    o.field("StorageClass", spec.get("storageClassName"))
    o.field("VolumeMode", spec.get("volumeMode"))


def _pv(o: _Out, raw: dict[str, Any]) -> None:
    spec, status = _d(raw.get("spec")), _d(raw.get("status"))
    claim = _d(spec.get("claimRef"))
    o.field("Status", status.get("phase"))
    o.field("Claim", f"{claim.get('namespace')}/{claim.get('name')}" if claim else "")
    o.field("Capacity", _get(spec, "capacity.storage"))
    o.field("Access Modes", ",".join(str(m) for m in _l(spec.get("accessModes"))))
    o.field("Reclaim Policy", spec.get("persistentVolumeReclaimPolicy"))
    o.field("StorageClass", spec.get("storageClassName"))
    o.field(
        "Source", next((k for k in ("local", "hostPath", "csi", "nfs", "rbd", "awsElasticBlockStore") if k in spec), "")
    )
    terms = _l(_get(spec, "nodeAffinity.required.nodeSelectorTerms"))
    o.field(
        "Node Affinity",
        [
            f"{_d(e).get('key')} {_d(e).get('operator')} {','.join(str(v) for v in _l(_d(e).get('values')))}"
            for t in terms
            for e in _l(_d(t).get("matchExpressions"))
        ],
    )


def _storageclass(o: _Out, raw: dict[str, Any]) -> None:
    o.field("Provisioner", raw.get("provisioner"))
    o.field("Binding Mode", raw.get("volumeBindingMode"))
    o.field("Reclaim", raw.get("reclaimPolicy"))
    o.field("Expansion", raw.get("allowVolumeExpansion"))
    o.field("Parameters", _d(raw.get("parameters")))


def _job(o: _Out, raw: dict[str, Any]) -> None:
    spec, status = _d(raw.get("spec")), _d(raw.get("status"))
    o.field("Parallelism", spec.get("parallelism"))
    o.field("Completions", spec.get("completions"))
    o.field("Backoff Limit", spec.get("backoffLimit"))
    o.field("Start Time", status.get("startTime"))
    o.field("Completed At", status.get("completionTime"))
    counts = [f"{status[k]} {k}" for k in ("active", "ready", "succeeded", "failed") if status.get(k) is not None]
    o.field("Pods", " · ".join(counts))


def _jobset(o: _Out, raw: dict[str, Any]) -> None:
    spec, status = _d(raw.get("spec")), _d(raw.get("status"))
    fp = _d(spec.get("failurePolicy"))
    o.field("Suspend", spec.get("suspend"))
    o.field("Max Restarts", fp.get("maxRestarts") if fp else "none (no failurePolicy: a failure ends the JobSet)")
    o.field("Restarts", status.get("restarts", 0))
    o.field("Restarts (n)", status.get("restartsCountTowardsMax"))
    o.field(
        "Replicated",
        [f"{_d(r).get('name')} × {_d(r).get('replicas', 1)}" for r in _l(spec.get("replicatedJobs"))],
    )
    o.field("VolumeClaims", [str(_get(t, "metadata.name")) for t in _l(spec.get("volumeClaimPolicies"))])


def _trainjob(o: _Out, raw: dict[str, Any]) -> None:
    spec = _d(raw.get("spec"))
    ref = _d(spec.get("runtimeRef"))
    trainer = _d(spec.get("trainer"))
    o.field("Runtime", f"{ref.get('kind', 'ClusterTrainingRuntime')}/{ref.get('name', '')}" if ref else "")
    o.field("Suspend", spec.get("suspend"))
    o.field("Nodes", trainer.get("numNodes"))
    o.field("Image", trainer.get("image"))
    o.field("Command", " ".join(str(x) for x in _l(trainer.get("command")))[:300])
    o.field("Args", " ".join(str(x) for x in _l(trainer.get("args")))[:300])
    o.field("Environment", [f"{_d(e).get('name')}={_env_value(_d(e))}" for e in _l(trainer.get("env"))])
    jobs = [_d(j) for j in _l(_get(raw, "status.jobsStatus"))]
    if jobs:
        o.section("Jobs")
        o.table(
            ["Name", "Active", "Ready", "Succeeded", "Failed", "Suspended"],
            [
                [str(j.get(k, "")) for k in ("name", "active", "ready", "succeeded", "failed", "suspended")]
                for j in jobs
            ],
        )


def _runtime(o: _Out, raw: dict[str, Any]) -> None:
    spec = _d(raw.get("spec"))
    ml = _d(spec.get("mlPolicy"))
    o.field("Nodes", ml.get("numNodes"))
    o.field("Policy", ", ".join(k for k in ml if k != "numNodes"))
    rjobs = [_d(r) for r in _l(_get(spec, "template.spec.replicatedJobs"))]
    if rjobs:
        o.section("Replicated Jobs")
        for r in rjobs:
            step = _get(r, "template.metadata.labels") or {}
            o.text(f"  {r.get('name')} × {r.get('replicas', 1)}")
            o.field("Ancestor", _d(step).get("trainer.kubeflow.org/trainjob-ancestor-step") or "(no label)", 4)


DESCRIBERS: dict[str, Callable[[_Out, dict[str, Any]], None]] = {
    "Pod": _pod,
    "PersistentVolumeClaim": _pvc,
    "PersistentVolume": _pv,
    "StorageClass": _storageclass,
    "Job": _job,
    "JobSet": _jobset,
    "TrainJob": _trainjob,
    "TrainingRuntime": _runtime,
    "ClusterTrainingRuntime": _runtime,
}


def events_of(ref: str, events: Iterable[EventRow]) -> list[EventRow]:
    """The events about `ref` (`Kind/namespace/name`, or `Kind/name` for cluster objects)."""
    parts = ref.split("/")
    want = (parts[0], parts[1] if len(parts) == 3 else "", parts[-1])

    def key(obj: str) -> tuple[str, str, str]:
        p = obj.split("/")
        return (p[0], p[1] if len(p) == 3 else "", p[-1])

    return [e for e in events if key(e.object) == want]


def describe(ref: str, raw: dict[str, Any], events: Iterable[EventRow], now: float) -> list[str]:
    """The lines of `kubectl describe` for one object of the snapshot."""
    o = _Out()
    meta = _d(raw.get("metadata"))
    kind = str(raw.get("kind") or ref.split("/")[0])
    o.field("Name", meta.get("name"))
    o.field("Namespace", meta.get("namespace"))
    o.field("Kind", f"{kind} ({raw.get('apiVersion')})" if raw.get("apiVersion") else kind)
    o.field("Labels", _d(meta.get("labels")) or "<none>")
    o.field(
        "Annotations", {k: v for k, v in _d(meta.get("annotations")).items() if "last-applied" not in k} or "<none>"
    )
    created = str(meta.get("creationTimestamp") or "")
    o.field("Created", f"{created} ({age(created, now)} ago)" if created else "")
    o.field("Controlled By", [f"{_d(r).get('kind')}/{_d(r).get('name')}" for r in _l(meta.get("ownerReferences"))])
    describer = DESCRIBERS.get(kind)
    if describer is not None:
        describer(o, raw)
    conds = [_d(c) for c in _l(_get(raw, "status.conditions"))]
    if conds:
        o.section("Conditions")
        o.table(
            ["Type", "Status", "Reason", "Since", "Message"],
            [
                [str(c.get(k) or "") for k in ("type", "status", "reason")]
                + [age(str(c.get("lastTransitionTime") or ""), now) if c.get("lastTransitionTime") else ""]
                + [" ".join(str(c.get("message") or "").split())[:160]]
                for c in conds
            ],
        )
    evs = events_of(ref, events)
    o.section("Events")
    if not evs:
        o.text("  <none in the snapshot>")
    else:
        o.table(
            ["Type", "Reason", "Age", "Count", "Message"],
            [[e.type, e.reason, age(e.last, now) if e.last else "?", f"×{e.count}", e.message] for e in evs],
        )
    return o.lines
