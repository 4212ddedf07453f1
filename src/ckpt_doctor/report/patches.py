"""The fixes of a report as patches: the lint fixers run on the runtime's or the TrainJob's YAML.

The YAML is the object as `kubectl get -o yaml` shows it, less what the server owns (status, uid,
resourceVersion, managedFields…), redacted first: a patch quotes the lines around the change. The fixer
edits a copy in memory; the patch is the unified diff between the two. Nothing is written anywhere and no
cluster object is touched: the reader applies the change to their own manifest.
"""

from __future__ import annotations

import copy
import difflib
import io
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ruamel.yaml import YAML
from ruamel.yaml.scalarstring import LiteralScalarString

if TYPE_CHECKING:
    from ckpt_doctor.engine.model import Finding
    from ckpt_doctor.engine.walk import Diagnosis
    from ckpt_doctor.snapshot import Obj
    from ckpt_doctor.sources.redact import Redactor

SERVER_FIELDS = ("uid", "resourceVersion", "generation", "creationTimestamp", "managedFields", "selfLink")
LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"


@dataclass
class Patch:
    rule: str
    target: str  # Kind/namespace/name
    what: str  # what the edit does
    diff: str  # unified diff; "" when there is none
    why_not: str  # why no patch could be made (then `diff` is "")


def manifest_of(obj: Obj, redactor: Redactor) -> str:
    """The object as an engineer would keep it in git: no status, no server-owned metadata; redacted."""
    raw = copy.deepcopy(obj.raw)
    raw.pop("status", None)
    meta = raw.get("metadata") if isinstance(raw.get("metadata"), dict) else {}
    for k in SERVER_FIELDS:
        meta.pop(k, None)
    ann = meta.get("annotations")
    if isinstance(ann, dict):
        ann.pop(LAST_APPLIED, None)
        if not ann:
            meta.pop("annotations")
    raw = _literal_blocks(redactor.obj(raw))
    yaml = YAML()
    yaml.default_flow_style = False
    yaml.width = 4096
    out = io.StringIO()
    yaml.dump(raw, out)
    return out.getvalue()


def _literal_blocks(v: Any) -> Any:
    """Multi-line strings as `|` blocks, the way kubectl shows a script."""
    if isinstance(v, dict):
        return {k: _literal_blocks(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_literal_blocks(x) for x in v]
    if isinstance(v, str) and "\n" in v.rstrip("\n") and not any(c in v for c in "\t\r") and v == v.rstrip(" "):
        return LiteralScalarString(v)
    return v


def file_name(obj: Obj) -> str:
    return f"{obj.kind.lower()}-{obj.name}.yaml"


def _candidates(diag: Diagnosis, f: Finding) -> list[Obj]:
    """The objects a fix may land on: the finding's subject, then the runtime, then the TrainJob."""
    sc = diag.facts.scope
    subj = f.result.subject or {}
    out: list[Obj] = []
    for o in (sc.snap.get(str(subj.get("kind")), str(subj.get("name")), subj.get("namespace")), sc.runtime,
              sc.trainjob):  # fmt: skip
        if o is not None and o.kind in ("TrainJob", "TrainingRuntime", "ClusterTrainingRuntime") and o not in out:
            out.append(o)
    return out


def patch_for(diag: Diagnosis, f: Finding, redactor: Redactor) -> Patch:
    """A patch for a failing finding, or why there is none."""
    from ckpt_doctor.fix import FIXABLE, NotMechanical, fixers

    rule = f.rule.id
    if rule not in FIXABLE:
        return Patch(rule, "", "", "", "no mechanical fix: it needs a decision (see the fix above)")
    fixer = FIXABLE[rule][1]
    reasons = []
    for obj in _candidates(diag, f):
        text = manifest_of(obj, redactor)
        subject = {"kind": obj.kind, "namespace": obj.namespace, "name": obj.name}
        try:
            new = fixer(text, subject, f, diag.facts.version)
        except NotMechanical as e:
            reasons.append(f"{obj.ref()}: {e}")
            continue
        if new is None or new == text:
            continue
        name = file_name(obj)
        diff = "".join(
            difflib.unified_diff(
                text.splitlines(keepends=True), new.splitlines(keepends=True), f"a/{name}", f"b/{name}"
            )
        )
        return Patch(rule, obj.ref(), fixers.WHAT[rule], redactor.text(diff), "")
    why = "; ".join(reasons) if reasons else "the runtime and the TrainJob already have it, or are not in the snapshot"
    return Patch(rule, "", fixers.WHAT[rule], "", f"not mechanical here: {why}")


def failing_causes(diag: Diagnosis) -> list[Finding]:
    """The causes to fix, the verdict's first, each rule once."""
    seen: set[str] = set()
    out: list[Finding] = []
    for f in [c for e in diag.verdict for c in e.causes] + list(diag.latent):
        if f.rule.id not in seen:
            seen.add(f.rule.id)
            out.append(f)
    return out


def patches(diag: Diagnosis, redactor: Redactor) -> list[tuple[Finding, Patch]]:
    return [(f, patch_for(diag, f, redactor)) for f in failing_causes(diag)]

