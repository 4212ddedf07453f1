"""Which TrainJob a watched object belongs to.

- a TrainJob: itself; a JobSet: the TrainJob of its name (the Trainer names it after the TrainJob);
- a pod or Job: the TrainJob of its `jobset.sigs.k8s.io/jobset-name` label;
- an event: the TrainJob its involved object belongs to: a TrainJob or JobSet by name, a pod or Job by
  the longest watched TrainJob name its name starts with (`<jobset>-<replicated job>-…`: pods of
  deleted attempts are known only by name), a PVC by the TrainJobs whose pods mounted it, a Kueue
  Workload by its name (`trainjob-<name>-<hash>`).
"""

from __future__ import annotations

from typing import Any

from ckpt_doctor.scope import JOBSET_NAME_LABEL, longest_prefix
from ckpt_doctor.watch.state import Key, Registry

OWN_COMPONENT = "ckpt-doctor"  # events the watcher itself writes are not changes of the job


def _meta(o: dict[str, Any]) -> dict[str, Any]:
    m = o.get("metadata")
    return m if isinstance(m, dict) else {}


def route(kind: str, obj: dict[str, Any], registry: Registry) -> list[Key]:
    meta = _meta(obj)
    ns = str(meta.get("namespace") or "default")
    if kind == "JobSet":
        name = str(meta.get("name") or "")
        return [(ns, name)] if registry.known(ns, name) else []
    if kind in ("Pod", "Job"):
        labels = meta.get("labels") if isinstance(meta.get("labels"), dict) else {}
        name = str(labels.get(JOBSET_NAME_LABEL) or "")
        return [(ns, name)] if name and registry.known(ns, name) else []
    if kind == "Event":
        return route_event(obj, ns, registry)
    return []


def route_event(ev: dict[str, Any], ns: str, registry: Registry) -> list[Key]:
    if OWN_COMPONENT in (ev.get("reportingComponent"), (ev.get("source") or {}).get("component"),
                         ev.get("reportingController")):  # fmt: skip
        return []
    inv = ev.get("involvedObject") or ev.get("regarding") or {}
    if not isinstance(inv, dict):
        return []
    ns = str(inv.get("namespace") or ns)
    kind, name = str(inv.get("kind") or ""), str(inv.get("name") or "")
    if not name:
        return []
    if kind in ("TrainJob", "JobSet"):
        return [(ns, name)] if registry.known(ns, name) else []
    if kind in ("Pod", "Job"):
        job = longest_prefix(name, registry.names(ns))
        return [(ns, job)] if job else []
    if kind == "PersistentVolumeClaim":
        return [(ns, j) for j in sorted(registry.claim_holders(ns, name))]
    if kind == "Workload":
        base = name.removeprefix("trainjob-")
        job = longest_prefix(base, registry.names(ns))
        return [(ns, job)] if job else []
    return []
