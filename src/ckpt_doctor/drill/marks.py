"""The marks a drill leaves on what it changes, and how each mark is undone.

Every object the drill creates or changes carries annotations saying so, written before (or with)
the change itself. They are the drill's undo log, kept on the cluster: a cleanup, in this run or in
`ckpt-doctor drill --cleanup` after an interrupted one, reads them back and knows what to restore.
This module is pure (no I/O): it builds marks and the patches that undo them.
"""

from __future__ import annotations

import copy
import secrets
from dataclasses import dataclass, field
from typing import Any

PREFIX = "drill.ckpt-doctor.io/"
ID = PREFIX + "id"  # the drill that marked the object
CREATED = PREFIX + "created"  # "true": the drill created the object (cleanup deletes it unless --keep)
SUSPEND = PREFIX + "suspend"  # a TrainJob's spec.suspend before the drill ("true" / "false")
STEER = PREFIX + "steer"  # the kubernetes.io/hostname the drill's nodeSelector entry points at
CORDON = PREFIX + "cordon"  # "true": the drill cordoned this node, which was schedulable before
FOR = PREFIX + "for"  # on a node: the TrainJob (namespace/name) whose drill cordoned it
STARTED = PREFIX + "started"  # when that drill started (RFC 3339)
KEYS = (ID, CREATED, SUSPEND, STEER, CORDON, FOR, STARTED)

MANAGER = "ckpt-doctor.io/drill"  # the runtimePatches manager of the drill's nodeSelector (v2.2+)
HOSTNAME = "kubernetes.io/hostname"
OVERRIDE_FIELDS = ("runtimePatches", "podTemplateOverrides", "podSpecOverrides")


def new_id() -> str:
    return "d-" + secrets.token_hex(3)


def annotations(obj: dict[str, Any]) -> dict[str, str]:
    return dict(((obj.get("metadata") or {}).get("annotations")) or {})


def marks_of(obj: dict[str, Any]) -> dict[str, str]:
    """The drill's annotations on an object."""
    return {k: v for k, v in annotations(obj).items() if k.startswith(PREFIX)}


def drill_id(obj: dict[str, Any]) -> str | None:
    return annotations(obj).get(ID)


# -- steering the trainer to a node ------------------------------------------------------------------


def steer_field(version: str) -> str:
    """The override field the Trainer version has (trainer-api.md §2.2)."""
    if version in ("v2.0",):
        return "podSpecOverrides"
    if version in ("v2.1",):
        return "podTemplateOverrides"
    return "runtimePatches"


def steer_entry(fieldname: str, job: str, hostname: str, did: str) -> dict[str, Any]:
    """The drill's own entry in that field: a nodeSelector on `kubernetes.io/hostname` for replicated job `job`."""
    selector = {HOSTNAME: hostname}
    if fieldname == "runtimePatches":
        pod = {"template": {"spec": {"template": {"spec": {"nodeSelector": selector}}}}}
        return {"manager": MANAGER, "trainingRuntimeSpec": {"template": {"spec": {"replicatedJobs": [
            {"name": job, **pod}]}}}}
    if fieldname == "podTemplateOverrides":
        meta = {"annotations": {ID: did}}
        return {"targetJobs": [{"name": job}], "metadata": meta, "spec": {"nodeSelector": selector}}
    return {"targetJobs": [{"name": job}], "nodeSelector": selector}


def is_steer_entry(fieldname: str, entry: Any, hostname: str | None) -> bool:
    """Whether an override entry is one the drill added (by its manager, its mark, or its exact shape)."""
    if not isinstance(entry, dict):
        return False
    if fieldname == "runtimePatches":
        return entry.get("manager") == MANAGER
    if fieldname == "podTemplateOverrides":
        return ID in (((entry.get("metadata") or {}).get("annotations")) or {})
    if fieldname == "podSpecOverrides" and hostname:
        sel = entry.get("nodeSelector") or {}
        return set(entry) == {"targetJobs", "nodeSelector"} and sel == {HOSTNAME: hostname}
    return False


def steer_add_patch(spec: dict[str, Any], fieldname: str, entry: dict[str, Any]) -> list[dict[str, Any]]:
    """A JSON patch appending `entry` to spec.<field> (creating the list when it is absent)."""
    if isinstance(spec.get(fieldname), list):
        return [{"op": "add", "path": f"/spec/{fieldname}/-", "value": entry}]
    return [{"op": "add", "path": f"/spec/{fieldname}", "value": [entry]}]


def steer_remove_patch(spec: dict[str, Any], hostname: str | None) -> list[dict[str, Any]]:
    """A JSON patch removing every drill entry from the override fields (guarded by `test` ops), or []."""
    ops: list[dict[str, Any]] = []
    for fieldname in OVERRIDE_FIELDS:
        items = spec.get(fieldname)
        if not isinstance(items, list):
            continue
        ours = [i for i, e in enumerate(items) if is_steer_entry(fieldname, e, hostname)]
        if not ours:
            continue
        if len(ours) == len(items):
            ops += [{"op": "test", "path": f"/spec/{fieldname}", "value": items},
                    {"op": "remove", "path": f"/spec/{fieldname}"}]
            continue
        for i in reversed(ours):  # from the end: earlier indexes stay valid
            ops += [{"op": "test", "path": f"/spec/{fieldname}/{i}", "value": items[i]},
                    {"op": "remove", "path": f"/spec/{fieldname}/{i}"}]
    return ops


def has_steer(spec: dict[str, Any], hostname: str | None) -> bool:
    return bool(steer_remove_patch(spec, hostname))


def without_steer(spec: dict[str, Any], hostname: str | None) -> dict[str, Any]:
    """`spec` with the drill's entries removed (to compare with what it was before)."""
    out = copy.deepcopy(spec)
    for fieldname in OVERRIDE_FIELDS:
        items = out.get(fieldname)
        if isinstance(items, list):
            kept = [e for e in items if not is_steer_entry(fieldname, e, hostname)]
            if kept:
                out[fieldname] = kept
            else:
                out.pop(fieldname)
    return out


# -- what to undo --------------------------------------------------------------------------------------


@dataclass
class Undo:
    """What cleanup must do to one marked object, read from its marks."""

    kind: str
    namespace: str | None
    name: str
    drill: str
    delete: bool = False  # the drill created it (and --keep was not given)
    unsteer: str | None = None  # remove the drill's nodeSelector entry (hostname)
    suspend: bool | None = None  # restore spec.suspend to this
    uncordon: bool = False
    steps: list[str] = field(default_factory=list)  # filled in as cleanup goes

    @property
    def ref(self) -> str:
        return f"{self.kind}/{self.namespace}/{self.name}" if self.namespace else f"{self.kind}/{self.name}"


def undo_for(obj: dict[str, Any], keep: bool = False) -> Undo | None:
    """The undo an object's marks call for (None when it carries no drill mark)."""
    m = marks_of(obj)
    if ID not in m:
        return None
    meta = obj.get("metadata") or {}
    u = Undo(str(obj.get("kind")), meta.get("namespace"), str(meta.get("name")), m[ID])
    if m.get(CREATED) == "true" and not keep:
        u.delete = True
        return u
    if STEER in m:
        u.unsteer = m[STEER] or None
    if SUSPEND in m:
        u.suspend = m[SUSPEND] == "true"
    if m.get(CORDON) == "true":
        u.uncordon = True
    return u


def unmark_patch(obj: dict[str, Any]) -> dict[str, Any] | None:
    """A merge patch removing the drill's annotations (None when there are none)."""
    ours = [k for k in annotations(obj) if k.startswith(PREFIX)]
    if not ours:
        return None
    return {"metadata": {"annotations": dict.fromkeys(ours)}}


def mark_patch(obj: dict[str, Any], wanted: dict[str, str]) -> dict[str, Any] | None:
    """A merge patch adding the marks `obj` does not carry yet (an original value is never overwritten)."""
    have = annotations(obj)
    add = {k: v for k, v in wanted.items() if k not in have}
    return {"metadata": {"annotations": add}} if add else None
