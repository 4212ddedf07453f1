"""Typed reading at the Snapshot's edge: the fields the rules read, checked once against their types.

Bundles are written by people and by generators as well as by kubectl, so any field can hold
anything. Every object entering a Snapshot goes through `clean()`: each field the rules read is
checked against the type the Kubernetes API gives it. A field of the wrong type is taken out of
the object (copy on write: the caller's dict is not changed) and reported as a `Malformed`
("Pod team-a/x spec.volumes is a boolean, expected a list"); the rules that read it are then
`not_evaluated` naming it. No check ever sees a value of the wrong type, so none can crash on one.

Timestamps that a YAML reader turned into `datetime` are written back as RFC 3339 strings, the
form kubectl prints, so that they compare in time order with every other timestamp.

`None` is accepted anywhere: for the API it means "not set", as it does for the checks.
"""

from __future__ import annotations

import datetime as _dt
from typing import Any

from ckpt_doctor.coverage import Malformed

# -- types ----------------------------------------------------------------------------------------
STR = "str"
INT = "int"
BOOL = "bool"
NUM = "num"  # int or float (resource quantities may be numbers)
TIME = "time"  # RFC 3339 string (datetime objects normalised)
MAP = "map"  # any mapping
ANY = "any"
SCALAR = "scalar"  # str, int, float or bool (quantities, label values written as numbers are still wrong)

_WORDS = {
    STR: "a string",
    INT: "an integer",
    BOOL: "a boolean",
    NUM: "a number",
    TIME: "a timestamp string",
    MAP: "a mapping",
    SCALAR: "a plain value",
}


def _found(v: Any) -> str:
    if isinstance(v, bool):
        return "a boolean"
    if isinstance(v, int):
        return "an integer"
    if isinstance(v, float):
        return "a number"
    if isinstance(v, str):
        return "a string"
    if isinstance(v, dict):
        return "a mapping"
    if isinstance(v, list):
        return "a list"
    if isinstance(v, _dt.datetime | _dt.date):
        return "a date"
    return f"a {type(v).__name__}"


def _time(v: Any) -> str | None:
    if isinstance(v, str):
        return v
    if isinstance(v, _dt.datetime):
        if v.tzinfo is not None:
            v = v.astimezone(_dt.UTC).replace(tzinfo=None)
        return v.strftime("%Y-%m-%dT%H:%M:%SZ")
    return None


def _scalar_ok(t: str, v: Any) -> bool:
    if t == ANY:
        return True
    if t == STR:
        return isinstance(v, str)
    if t == INT:
        return isinstance(v, int) and not isinstance(v, bool)
    if t == BOOL:
        return isinstance(v, bool)
    if t == NUM:
        return isinstance(v, int | float) and not isinstance(v, bool)
    if t == MAP:
        return isinstance(v, dict)
    if t == SCALAR:
        return isinstance(v, str | int | float | bool)
    raise ValueError(t)


# -- the schema -----------------------------------------------------------------------------------
# A schema is a type name, a dict {key: schema} (a mapping; unlisted keys are not checked), a list
# [schema] (a list whose items have that schema) or ("mapof", schema) (a mapping with any keys).


def MAPOF(s: Any) -> tuple[str, Any]:
    return ("mapof", s)


STRMAP = MAPOF(STR)
COND = {"type": STR, "status": STR, "reason": STR, "message": STR, "lastTransitionTime": TIME}
OWNER = {"kind": STR, "name": STR, "uid": STR, "apiVersion": STR, "controller": BOOL}
META = {
    "name": STR,
    "generateName": STR,
    "namespace": STR,
    "uid": STR,
    "resourceVersion": STR,
    "generation": INT,
    "creationTimestamp": TIME,
    "deletionTimestamp": TIME,
    "labels": STRMAP,
    "annotations": STRMAP,
    "ownerReferences": [OWNER],
    "managedFields": [{"manager": STR, "operation": STR, "time": TIME, "fieldsV1": MAP}],
}
ENV = {
    "name": STR,
    "value": STR,
    "valueFrom": {
        "fieldRef": {"fieldPath": STR},
        "configMapKeyRef": {"name": STR, "key": STR},
        "secretKeyRef": {"name": STR, "key": STR},
    },
}
CONTAINER = {
    "name": STR,
    "image": STR,
    "command": [STR],
    "args": [STR],
    "workingDir": STR,
    "env": [ENV],
    "envFrom": [{"configMapRef": {"name": STR}, "secretRef": {"name": STR}}],
    "volumeMounts": [{"name": STR, "mountPath": STR, "subPath": STR, "readOnly": BOOL}],
    "resources": {"limits": MAPOF(SCALAR), "requests": MAPOF(SCALAR)},
}
VOLUME = {
    "name": STR,
    "persistentVolumeClaim": {"claimName": STR, "readOnly": BOOL},
    "configMap": {"name": STR, "items": [{"key": STR, "path": STR}]},
    "secret": MAP,
    "emptyDir": MAP,
    "hostPath": {"path": STR, "type": STR},
    "ephemeral": MAP,
    "projected": {"sources": [{"configMap": {"name": STR}}]},
    "downwardAPI": MAP,
    "nfs": MAP,
    "csi": MAP,
}
POD_SPEC = {
    "containers": [CONTAINER],
    "initContainers": [CONTAINER],
    "volumes": [VOLUME],
    "nodeName": STR,
    "nodeSelector": STRMAP,
    "restartPolicy": STR,
    "terminationGracePeriodSeconds": INT,
    "hostname": STR,
    "subdomain": STR,
}
POD_TEMPLATE = {"metadata": META, "spec": POD_SPEC}
TERMINATED = {"exitCode": INT, "reason": STR, "message": STR, "startedAt": TIME, "finishedAt": TIME}
STATE = {"running": {"startedAt": TIME}, "waiting": {"reason": STR, "message": STR}, "terminated": TERMINATED}
CONTAINER_STATUS = {
    "name": STR,
    "restartCount": INT,
    "ready": BOOL,
    "started": BOOL,
    "state": STATE,
    "lastState": STATE,
}
JOB_SPEC = {
    "parallelism": INT,
    "completions": INT,
    "backoffLimit": INT,
    "suspend": BOOL,
    "template": POD_TEMPLATE,
}
REPLICATED_JOB = {"name": STR, "replicas": INT, "template": {"metadata": META, "spec": JOB_SPEC}}
JOBSET_SPEC = {
    "replicatedJobs": [REPLICATED_JOB],
    "volumeClaimPolicies": [{"templates": [{"metadata": META, "spec": {"accessModes": [STR]}}]}],
    "failurePolicy": {"maxRestarts": INT, "restartStrategy": STR, "rules": [MAP]},
    "suspend": BOOL,
}
PATCH_POD_SPEC = POD_SPEC
TRAINER = {
    "image": STR,
    "command": [STR],
    "args": [STR],
    "env": [ENV],
    "numNodes": INT,
    "numProcPerNode": ANY,  # int32 on v2.2+, IntOrString before
    "resourcesPerNode": {"limits": MAPOF(SCALAR), "requests": MAPOF(SCALAR)},
}
TRAINJOB_SPEC = {
    "runtimeRef": {"name": STR, "kind": STR, "apiGroup": STR},
    "trainer": TRAINER,
    "suspend": BOOL,
    "managedBy": STR,
    "activeDeadlineSeconds": INT,
    "podSpecOverrides": [{"targetJobs": [{"name": STR}], "containers": [CONTAINER], "volumes": [VOLUME]}],
    "podTemplateOverrides": [{"targetJobs": [{"name": STR}], "metadata": META, "spec": PATCH_POD_SPEC}],
    "runtimePatches": [
        {
            "manager": STR,
            "trainingRuntimeSpec": {
                "template": {
                    "metadata": META,
                    "spec": {
                        "replicatedJobs": [
                            {
                                "name": STR,
                                "template": {
                                    "metadata": META,
                                    "spec": {"template": {"metadata": META, "spec": PATCH_POD_SPEC}},
                                },
                            }
                        ]
                    },
                }
            },
        }
    ],
}
EVENT_TARGET = {"kind": STR, "namespace": STR, "name": STR, "uid": STR}
SCHEMAS: dict[str, dict[str, Any]] = {
    "Pod": {
        "spec": POD_SPEC,
        "status": {
            "phase": STR,
            "reason": STR,
            "message": STR,
            "startTime": TIME,
            "conditions": [COND],
            "containerStatuses": [CONTAINER_STATUS],
            "initContainerStatuses": [CONTAINER_STATUS],
        },
    },
    "Job": {"spec": JOB_SPEC, "status": {"active": INT, "failed": INT, "succeeded": INT, "conditions": [COND]}},
    "JobSet": {"spec": JOBSET_SPEC, "status": {"restarts": INT, "conditions": [COND]}},
    "TrainingRuntime": {"spec": {"mlPolicy": {"numNodes": INT}, "template": {"metadata": META, "spec": JOBSET_SPEC}}},
    "TrainJob": {"spec": TRAINJOB_SPEC, "status": {"conditions": [COND]}},
    "PersistentVolumeClaim": {
        "spec": {"accessModes": [STR], "storageClassName": STR, "volumeName": STR},
        "status": {"phase": STR, "accessModes": [STR]},
    },
    "PersistentVolume": {
        "spec": {"accessModes": [STR], "storageClassName": STR, "local": MAP, "hostPath": MAP},
        "status": {"phase": STR},
    },
    "StorageClass": {"provisioner": STR},
    "Node": {"spec": {"unschedulable": BOOL}},
    "ConfigMap": {"data": MAPOF(STR)},
    "Event": {
        "involvedObject": EVENT_TARGET,
        "regarding": EVENT_TARGET,
        "reason": STR,
        "message": STR,
        "note": STR,
        "type": STR,
        "count": INT,
        "deprecatedCount": INT,
        "firstTimestamp": TIME,
        "lastTimestamp": TIME,
        "eventTime": TIME,
        "deprecatedLastTimestamp": TIME,
        "series": {"count": INT, "lastObservedTime": TIME},
    },
    "Workload": {"status": {"conditions": [COND]}},
}
SCHEMAS["ClusterTrainingRuntime"] = SCHEMAS["TrainingRuntime"]
COMMON = {"apiVersion": STR, "kind": STR, "metadata": META, "spec": MAP, "status": MAP}

BUNDLE_META = {
    "collectedAt": TIME,
    "target": {"namespace": STR, "name": STR},
    "cluster": {"context": STR, "server": STR, "serverVersion": STR, "trainerVersion": STR},
    "notCollected": [{"what": STR, "reason": STR}],
    "listed": [STR],
    "absent": [{"what": STR, "reason": STR}],
    "redactions": INT,
}


# -- checking -------------------------------------------------------------------------------------
class _Walk:
    def __init__(self, ref: str, kind: str, namespace: str | None) -> None:
        self.ref, self.kind, self.namespace = ref, kind, namespace
        self.found: list[Malformed] = []

    def bad(self, path: str, value: Any, expected: str) -> None:
        self.found.append(Malformed(self.ref, self.kind, self.namespace, path, _found(value), expected))

    def value(self, v: Any, schema: Any, path: str) -> tuple[bool, Any]:
        """(ok, cleaned value) of `v` against `schema`; not ok means: drop it."""
        if v is None:
            return True, None
        if isinstance(schema, str):
            if schema == TIME:
                t = _time(v)
                if t is None:
                    self.bad(path, v, _WORDS[TIME])
                    return False, None
                return True, t
            if not _scalar_ok(schema, v):
                self.bad(path, v, _WORDS[schema])
                return False, None
            return True, v
        if isinstance(schema, list):
            if not isinstance(v, list):
                self.bad(path, v, "a list")
                return False, None
            out, changed = [], False
            for i, item in enumerate(v):
                ok, c = self.value(item, schema[0], f"{path}[{i}]")
                if not ok:
                    changed = True
                    continue
                changed = changed or c is not item
                out.append(c)
            return True, (out if changed else v)
        if isinstance(schema, tuple):  # mapof
            if not isinstance(v, dict):
                self.bad(path, v, "a mapping")
                return False, None
            out_m, changed = {}, False
            for k, item in v.items():
                ok, c = self.value(item, schema[1], f"{path}[{k}]")
                if not ok:
                    changed = True
                    continue
                changed = changed or c is not item
                out_m[k] = c
            return True, (out_m if changed else v)
        if not isinstance(v, dict):
            self.bad(path, v, "a mapping")
            return False, None
        return True, self.mapping(v, schema, path)

    def mapping(self, v: dict[str, Any], schema: dict[str, Any], path: str) -> dict[str, Any]:
        out: dict[str, Any] | None = None
        for key, sub in schema.items():
            if key not in v:
                continue
            item = v[key]
            if item is None:
                continue
            if sub.__class__ is str and (item.__class__ is str if sub == TIME else _scalar_ok(sub, item)):
                continue  # a scalar of the right type is kept as it is, without a path made for it
            ok, c = self.value(item, sub, f"{path}.{key}" if path else key)
            if ok and c is item:
                continue
            if out is None:
                out = dict(v)
            if ok:
                out[key] = c
            else:
                del out[key]
        return v if out is None else out


def _merge(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    out = dict(a)
    for k, v in b.items():
        out[k] = _merge(out[k], v) if isinstance(out.get(k), dict) and isinstance(v, dict) else v
    return out


_FULL: dict[str, dict[str, Any]] = {}


def schema_for(kind: str) -> dict[str, Any]:
    s = _FULL.get(kind)
    if s is None:
        s = _FULL[kind] = _merge(COMMON, SCHEMAS.get(kind, {}))
    return s


def clean(raw: dict[str, Any], kind: str) -> tuple[dict[str, Any], list[Malformed]]:
    """`raw` with every field the rules read of the right type, and what was taken out."""
    meta = raw.get("metadata")
    name = meta.get("name") if isinstance(meta, dict) else None
    ns = meta.get("namespace") if isinstance(meta, dict) else None
    name = name if isinstance(name, str) else "?"
    ns = ns if isinstance(ns, str) else None
    ref = f"{kind}/{ns}/{name}" if ns else f"{kind}/{name}"
    w = _Walk(ref, kind, ns)
    out = w.mapping(raw, schema_for(kind), "")
    return out, w.found


def clean_meta(raw: dict[str, Any], where: str) -> tuple[dict[str, Any], list[Malformed]]:
    """bundle.yaml through the same check (its fields are read by the version and coverage logic)."""
    w = _Walk(where, "Bundle", None)
    return w.mapping(raw, BUNDLE_META, ""), w.found


def unreadable_object(raw: dict[str, Any], where: str) -> Malformed:
    """An object whose kind or apiVersion is not a string: it could be of any kind, in its namespace."""
    meta = raw.get("metadata")
    name = meta.get("name") if isinstance(meta, dict) else None
    ns = meta.get("namespace") if isinstance(meta, dict) else None
    label = f"an object in {where}" + (f" named {name!r}" if isinstance(name, str) else "")
    kind, api = raw.get("kind"), raw.get("apiVersion")
    path, v = ("kind", kind) if not isinstance(kind, str) or not kind else ("apiVersion", api)
    return Malformed(label, "*", ns if isinstance(ns, str) else None, path, _found(v), "a string")
