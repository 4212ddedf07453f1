"""What the TrainJob asks for versus what the trainer pods run, and the controller's merge.

Merging follows the controller (trainer-api.md §2.2, §3): podSpecOverrides (v2.0),
podTemplateOverrides (v2.1) and runtimePatches (v2.2+) target replicated jobs by *name*;
`spec.trainer.*` lands only in the container named `node` of the replicated job whose Job
template carries `trainer.kubeflow.org/trainjob-ancestor-step: trainer`.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

from ckpt_doctor.facts.versions import TrainerVersion
from ckpt_doctor.scope import ANCESTOR_LABEL, TRAINER_CONTAINER, Scope, replicated_jobs
from ckpt_doctor.snapshot import Obj

# Strategic-merge keys of the PodSpec lists an override can touch; other lists are replaced.
MERGE_KEYS = {
    "containers": "name",
    "initContainers": "name",
    "volumes": "name",
    "env": "name",
    "volumeMounts": "mountPath",
    "imagePullSecrets": "name",
    "replicatedJobs": "name",
}


def strategic_merge(base: Any, patch: Any, key: str | None = None) -> Any:
    if isinstance(base, dict) and isinstance(patch, dict):
        out = dict(base)
        for k, v in patch.items():
            if v is None:
                out.pop(k, None)
            elif k in out:
                out[k] = strategic_merge(out[k], v, k)
            else:
                out[k] = copy.deepcopy(v)
        return out
    if isinstance(base, list) and isinstance(patch, list) and key in MERGE_KEYS:
        mk = MERGE_KEYS[key]
        out_l = [copy.deepcopy(x) for x in base]
        for item in patch:
            if isinstance(item, dict) and mk in item:
                hit = next((i for i, b in enumerate(out_l) if isinstance(b, dict) and b.get(mk) == item[mk]), None)
                if hit is not None:
                    out_l[hit] = strategic_merge(out_l[hit], item)
                    continue
            out_l.append(copy.deepcopy(item))
        return out_l
    return copy.deepcopy(patch)


@dataclass
class TrainerJob:
    """The trainer replicated job of the runtime and its `node` container, after merging."""

    index: int | None  # index in replicatedJobs, None when no trainer job was found
    name: str
    has_ancestor_label: bool
    label_on_pod_template: bool
    pod_spec: dict[str, Any]
    container: dict[str, Any] | None  # the container overrides land in (`node`), if any
    container_names: list[str] = field(default_factory=list)
    path: str = ""  # field path of the replicated job in the runtime


def trainer_rjob_index(rjs: list[Any]) -> tuple[int, bool] | None:
    """(index, labelled) of the trainer replicated job: the one carrying the ancestor label, else the
    one named `node`; None when neither exists."""
    jobs = [(i, r) for i, r in enumerate(rjs) if isinstance(r, dict)]
    for i, rj in jobs:
        if (((rj.get("template") or {}).get("metadata") or {}).get("labels") or {}).get(ANCESTOR_LABEL) == "trainer":
            return i, True
    return next(((i, False) for i, rj in jobs if rj.get("name") == TRAINER_CONTAINER), None)


def find_trainer_job(runtime: Obj | None) -> TrainerJob | None:
    rjs = replicated_jobs(runtime)
    if not rjs:
        return None
    chosen = trainer_rjob_index(rjs)
    if chosen is None:  # the replicated job that is not an initializer
        chosen = (next((i for i, rj in enumerate(rjs) if "initializer" not in str(rj.get("name"))), 0), False)
    i, labelled = chosen
    rj = rjs[i]
    pod_tmpl = ((rj.get("template") or {}).get("spec") or {}).get("template") or {}
    pod_spec = pod_tmpl.get("spec") or {}
    pod_labels = (pod_tmpl.get("metadata") or {}).get("labels") or {}
    containers = [c for c in pod_spec.get("containers") or [] if isinstance(c, dict)]
    node = next((c for c in containers if c.get("name") == TRAINER_CONTAINER), None)
    return TrainerJob(
        i,
        str(rj.get("name") or ""),
        labelled,
        pod_labels.get(ANCESTOR_LABEL) == "trainer",
        pod_spec,
        node,
        [str(c.get("name")) for c in containers],
        f"spec.template.spec.replicatedJobs[{i}]",
    )


def override_pod_patches(trainjob: Obj, job_name: str) -> list[tuple[str, dict[str, Any]]]:
    """(field path, pod-spec patch) of every override that targets `job_name`."""
    spec = trainjob.spec
    out: list[tuple[str, dict[str, Any]]] = []
    for i, ov in enumerate(spec.get("podSpecOverrides") or []):
        if isinstance(ov, dict) and _targets(ov, job_name):
            patch = {k: v for k, v in ov.items() if k != "targetJobs"}
            out.append((f"spec.podSpecOverrides[{i}]", patch))
    for i, ov in enumerate(spec.get("podTemplateOverrides") or []):
        if isinstance(ov, dict) and _targets(ov, job_name):
            out.append((f"spec.podTemplateOverrides[{i}].spec", ov.get("spec") or {}))
    for i, p in enumerate(spec.get("runtimePatches") or []):
        tmpl = (((p or {}).get("trainingRuntimeSpec") or {}).get("template") or {}).get("spec") or {}
        for j, rj in enumerate(tmpl.get("replicatedJobs") or []):
            if isinstance(rj, dict) and rj.get("name") == job_name:
                pod = (((rj.get("template") or {}).get("spec") or {}).get("template") or {}).get("spec") or {}
                out.append(
                    (
                        f"spec.runtimePatches[{i}].trainingRuntimeSpec.template.spec.replicatedJobs[{j}]"
                        ".template.spec.template.spec",
                        pod,
                    )
                )
    return out


def _targets(ov: dict[str, Any], job_name: str) -> bool:
    return any(isinstance(t, dict) and t.get("name") == job_name for t in ov.get("targetJobs") or [])


def merged_trainer_pod_spec(scope: Scope, version: TrainerVersion) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """The trainer pod spec and `node` container as the controller would build them."""
    tj_job = find_trainer_job(scope.runtime)
    if tj_job is None:
        return {}, None
    pod_spec = copy.deepcopy(tj_job.pod_spec)
    if scope.trainjob is not None:
        for _path, patch in override_pod_patches(scope.trainjob, tj_job.name):
            pod_spec = strategic_merge(pod_spec, patch)
    containers = [c for c in pod_spec.get("containers") or [] if isinstance(c, dict)]
    node = next((c for c in containers if c.get("name") == TRAINER_CONTAINER), None)
    trainer = (scope.trainjob.spec.get("trainer") or {}) if scope.trainjob is not None else {}
    if node is not None and tj_job.has_ancestor_label and trainer:
        for f in ("image", "command", "args"):
            if trainer.get(f) is not None:
                node[f] = copy.deepcopy(trainer[f])
        if trainer.get("env"):
            node["env"] = strategic_merge(node.get("env") or [], trainer["env"], "env")
        if trainer.get("resourcesPerNode") is not None:
            if version.at_least("v2.3"):
                node["resources"] = strategic_merge(node.get("resources") or {}, trainer["resourcesPerNode"])
            else:
                node["resources"] = copy.deepcopy(trainer["resourcesPerNode"])
    return pod_spec, node


def requested(trainjob: Obj | None) -> dict[str, Any]:
    return dict(trainjob.spec.get("trainer") or {}) if trainjob is not None else {}


def env_map(container: dict[str, Any] | None) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for e in (container or {}).get("env") or []:
        if isinstance(e, dict) and e.get("name"):
            out[str(e["name"])] = e
    return out


@dataclass
class Difference:
    field: str  # what differs, for people: env[CKPT_DIR] | image | command | args | resourcesPerNode
    wanted: Any
    actual: Any
    want_path: str  # where the TrainJob asks for it (a path the YAML view and lint can resolve)
    pod_path: str  # where the pod carries it, or would


def pod_container(pod: Obj, name: str = TRAINER_CONTAINER) -> dict[str, Any] | None:
    for c in pod.spec.get("containers") or []:
        if isinstance(c, dict) and c.get("name") == name:
            return c
    return None


def _resources_cover(wanted: dict[str, Any], actual: dict[str, Any]) -> bool:
    for section in ("limits", "requests"):
        for k, v in (wanted.get(section) or {}).items():
            if str((actual.get(section) or {}).get(k)) != str(v):
                return False
    return True


def compare(trainjob: Obj, pod: Obj) -> list[Difference]:
    """Fields of spec.trainer that the pod's trainer container does not carry."""
    want = requested(trainjob)
    node = pod_container(pod)
    diffs: list[Difference] = []
    if node is None:
        if want:
            names = [c.get("name") for c in pod.spec.get("containers") or [] if isinstance(c, dict)]
            diffs.append(
                Difference(f"container {TRAINER_CONTAINER}", "present", names, "spec.trainer", "spec.containers")
            )
        return diffs
    container = f"spec.containers[name={TRAINER_CONTAINER}]"
    actual_env = env_map(node)
    for e in want.get("env") or []:
        if not isinstance(e, dict) or not e.get("name"):
            continue
        got = actual_env.get(str(e["name"]))
        if got is None or ("value" in e and str(got.get("value")) != str(e.get("value"))):
            diffs.append(
                Difference(
                    f"env[{e['name']}]",
                    e.get("value", e.get("valueFrom")),
                    None if got is None else got.get("value", got.get("valueFrom")),
                    f"spec.trainer.env[name={e['name']}]",
                    f"{container}.env[name={e['name']}]",
                )
            )
    for f in ("image", "command", "args"):
        if want.get(f) is not None and want[f] != node.get(f):
            diffs.append(Difference(f, want[f], node.get(f), f"spec.trainer.{f}", f"{container}.{f}"))
    rpn = want.get("resourcesPerNode")
    if isinstance(rpn, dict) and not _resources_cover(rpn, node.get("resources") or {}):
        diffs.append(
            Difference(
                "resourcesPerNode",
                rpn,
                node.get("resources") or {},
                "spec.trainer.resourcesPerNode",
                f"{container}.resources",
            )
        )
    return diffs
