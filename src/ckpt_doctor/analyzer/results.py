"""k8sgpt Results from diagnoses: one per TrainJob with failing findings (no gRPC here; `server` encodes them).

A Result names the TrainJob (`kind: TrainJob`, `name: NAMESPACE/NAME`, `parent_object`: the Kind/name that owns
it, or the TrainJob itself, the top of its own object tree), lists each failing finding at or above the threshold
as an error text (the finding's title, rule id, severity and detail) with the documentation it cites, and puts
the verdict (causes, fixes, what could not be evaluated) in `details`. The object names that appear in a text
are marked sensitive, each with a mask, so that `k8sgpt analyze --anonymize` can hide them from its AI backend.

Every string comes from the redacted diagnosis and passes through the one redactor again as it is built.
"""

from __future__ import annotations

import base64
import hashlib
import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ckpt_doctor.engine.model import severity_rank

if TYPE_CHECKING:
    from ckpt_doctor.engine.model import Finding
    from ckpt_doctor.engine.walk import Diagnosis
    from ckpt_doctor.fleet.scan import FleetResult
    from ckpt_doctor.sources.redact import Redactor

KIND = "TrainJob"
_MASK_KEY = os.urandom(32)  # masks are stable within a process and say nothing about the name across processes


@dataclass(frozen=True)
class Sensitive:
    unmasked: str
    masked: str


@dataclass
class Failure:
    rule: str  # the failing rule (in the text too; kept to name it without parsing)
    text: str
    sensitive: list[Sensitive] = field(default_factory=list)
    doc: str = ""


@dataclass
class TrainJobResult:
    kind: str
    name: str  # NAMESPACE/NAME
    errors: list[Failure]
    details: str
    parent_object: str

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "name": self.name,
            "error": [{"text": f.text, "sensitive": [vars(s) for s in f.sensitive], "doc": f.doc} for f in self.errors],
            "details": self.details,
            "parentObject": self.parent_object,
        }


def mask(value: str) -> str:
    """A stand-in for `value`: keyed by this process's random key, so equal names get equal masks in one run."""
    digest = hashlib.blake2b(value.encode("utf-8"), key=_MASK_KEY, digest_size=max(6, min(48, len(value)))).digest()
    return base64.b64encode(digest).decode("ascii")


def _names(f: Finding, namespace: str, name: str) -> list[str]:
    """The object names a finding's text may show: the TrainJob's, its subject's, the objects its evidence cites."""
    out = [namespace, name]
    subject = f.result.subject or {}
    out += [str(subject.get(k) or "") for k in ("namespace", "name")]
    for ev in f.result.evidence:
        ref = ev.get("object")
        if isinstance(ref, str):
            out += ref.split("/")[1:]  # Kind/namespace/name or Kind/name
        if isinstance(ev.get("pod"), str):
            out.append(ev["pod"])
    return [n for n in dict.fromkeys(out) if len(n) > 1]


def _sensitive(text: str, names: list[str]) -> list[Sensitive]:
    found = [n for n in names if n in text]
    return [Sensitive(n, mask(n)) for n in sorted(found, key=len, reverse=True)]


def _text(f: Finding) -> str:
    detail = (f.result.detail or "").strip()
    return f"{f.rule.title} [{f.rule.id}, {f.rule.severity}]" + (f": {detail}" if detail else "")


def _parent(diag: Diagnosis) -> str:
    tj = diag.facts.scope.trainjob
    if tj is None:
        return ""
    owners = [o for o in tj.meta.get("ownerReferences") or [] if isinstance(o, dict) and o.get("kind")]
    owner = next((o for o in owners if o.get("controller")), owners[0] if owners else None)
    if owner is not None:
        return f"{owner['kind']}/{owner.get('name', '')}"
    return f"{KIND}/{tj.name}"


def result_of(diag: Diagnosis, fail_on: str = "warning", redactor: Redactor | None = None) -> TrainJobResult | None:
    """The Result of one TrainJob's diagnosis: None when nothing fails at or above `fail_on`."""
    from ckpt_doctor.report.verdict import verdict_text
    from ckpt_doctor.sources.redact import Redactor, redact_diagnosis

    red = redactor or Redactor()
    redact_diagnosis(diag, red)  # idempotent: the pipeline did it; the texts below quote only what it left
    threshold = severity_rank(fail_on)
    failing = [f for f in diag.failed() if severity_rank(f.rule.severity) >= threshold]
    target = diag.facts.scope.target()
    if not failing or target is None:
        return None
    ns, name = str(target["namespace"]), str(target["name"])
    errors = []
    for f in failing:
        text = red.text(_text(f))
        errors.append(Failure(f.rule.id, text, _sensitive(text, _names(f, ns, name)), red.text("; ".join(f.rule.docs))))
    details = red.text(verdict_text(diag))
    return TrainJobResult(KIND, f"{ns}/{name}", errors, details, red.text(_parent(diag)))


@dataclass
class Scan:
    """What one Run found in its scope: the Results, worst first, and what could not be read."""

    results: list[TrainJobResult]
    unreadable: list[tuple[str, str]]  # (NAMESPACE/NAME or namespace, why)
    read: int  # TrainJobs diagnosed


def results_of(fleet: FleetResult) -> Scan:
    """The Results of a fleet scan whose diagnoser kept `result_of` as each TrainJob's part, worst first."""
    from ckpt_doctor.fleet.render import rank

    results: list[TrainJobResult] = []
    unreadable: list[tuple[str, str]] = []
    read = 0
    for o in rank(fleet):
        if o.error is not None:
            unreadable.append((f"{o.namespace}/{o.name}", o.error))
            continue
        read += 1
        if isinstance(o.part, TrainJobResult):
            results.append(o.part)
    unreadable += [(e.namespace or "(all namespaces)", e.reason) for e in fleet.namespace_errors]
    return Scan(results, unreadable, read)
