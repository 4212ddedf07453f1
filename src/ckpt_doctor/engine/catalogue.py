"""Loading the rule catalogue from `rules/*.yaml` and checking that it is whole."""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

from ckpt_doctor.data import rules_dir
from ckpt_doctor.engine.model import MODES, NEEDS, SEVERITIES, Rule
from ckpt_doctor.errors import InputError
from ckpt_doctor.yamlio import iter_documents

REQUIRED = ("id", "kind", "severity", "title", "explanation", "fix")

RUNTIME = ("TrainingRuntime", "ClusterTrainingRuntime")
# Named groups of `reads:`: what whole families of checks read.
READ_GROUPS: dict[str, tuple[tuple[str, str], ...]] = {
    # the trainer's program: its container (pods, or runtime + overrides) and the files it mounts
    "program": (
        ("Pod", "spec"),
        ("TrainJob", "spec"),
        *((k, "spec") for k in RUNTIME),
        ("ConfigMap", "data"),
    ),
    # the attempts: pods and their container statuses, restarts, suspend/resume, preemption
    "history": (
        ("Pod", "metadata"),
        ("Pod", "status"),
        ("Pod", "spec.containers"),
        ("JobSet", "status"),
        ("TrainJob", "status"),
        ("Workload", "status"),
        ("Event", ""),
    ),
    "storage": (
        ("PersistentVolumeClaim", ""),
        ("PersistentVolume", "spec"),
        ("StorageClass", ""),
        ("Pod", "spec.volumes"),
    ),
    "runtime": tuple((k, "spec") for k in RUNTIME),
    "jobset": (("JobSet", "spec"), *((k, "spec.template") for k in RUNTIME)),
    "events": (("Event", ""),),
    "status": (("TrainJob", "status"), ("JobSet", "status")),
}


def parse_reads(v: Any, where: str, rid: str) -> tuple[tuple[str, str], ...]:
    out: list[tuple[str, str]] = []
    for item in _tuple(v):
        if item in READ_GROUPS:
            out += READ_GROUPS[item]
            continue
        kind, dot, path = item.partition(".")
        if not kind or not kind[0].isupper():
            raise InputError(f"rule {rid}: reads entry {item!r} is neither a group nor Kind.path", where)
        out.append((kind, path if dot else ""))
    return tuple(dict.fromkeys(out))


def _tuple(v: Any) -> tuple[str, ...]:
    if v is None:
        return ()
    if isinstance(v, str):
        return (v,)
    return tuple(str(x) for x in v)


def parse_rule(doc: dict[str, Any], where: str) -> Rule:
    missing = [k for k in REQUIRED if not doc.get(k)]
    if missing:
        raise InputError(f"rule is missing {', '.join(missing)}", where)
    if doc["kind"] not in ("symptom", "cause"):
        raise InputError(f"rule {doc['id']}: kind must be symptom or cause", where)
    if doc["severity"] not in SEVERITIES:
        raise InputError(f"rule {doc['id']}: severity must be one of {', '.join(SEVERITIES)}", where)
    needs = _tuple(doc.get("needs"))
    bad = [n for n in needs if n not in NEEDS]
    if bad:
        raise InputError(f"rule {doc['id']}: unknown needs {bad}", where)
    modes = _tuple(doc.get("modes")) or ("diagnose", "lint")
    if any(m not in MODES for m in modes):
        raise InputError(f"rule {doc['id']}: unknown mode in {modes}", where)
    return Rule(
        id=str(doc["id"]),
        kind=str(doc["kind"]),
        severity=str(doc["severity"]),
        title=str(doc["title"]).strip(),
        explanation=" ".join(str(doc["explanation"]).split()),
        fix=" ".join(str(doc["fix"]).split()),
        docs=_tuple(doc.get("docs")),
        explains=_tuple(doc.get("explains")),
        needs=needs,
        modes=modes,
        params=dict(doc.get("params") or {}),
        specific=_tuple(doc.get("specific")),
        guide_row=doc.get("guideRow"),
        source=where,
        reads=parse_reads(doc.get("reads"), where, str(doc["id"])),
        versioned=bool(doc.get("versioned")),
        confidence=" ".join(str(doc.get("confidence") or "").split()),
        listing=" ".join(str(doc.get("listing") or "").split()),
    )


def load_rules(directory: Path | None = None) -> list[Rule]:
    d = directory or rules_dir()
    rules: list[Rule] = []
    seen: set[str] = set()
    for f in sorted(d.glob("*.yaml")):
        for doc in iter_documents(f.read_text(encoding="utf-8"), str(f)):
            items = doc if isinstance(doc, list) else [doc]
            for item in items:
                if not isinstance(item, dict):
                    raise InputError("each rule must be a mapping", str(f))
                rule = parse_rule(item, f.name)
                if rule.id in seen:
                    raise InputError(f"duplicate rule id {rule.id}", str(f))
                seen.add(rule.id)
                rules.append(rule)
    return rules


@cache
def default_rules() -> tuple[Rule, ...]:
    return tuple(load_rules())


@cache
def default_digest() -> str:
    """A digest of the catalogue's files: says whether rules/index.json was made from them."""
    import hashlib

    h = hashlib.sha256()
    for f in sorted(rules_dir().glob("*.yaml")):
        h.update(f.name.encode() + b"\0" + f.read_bytes() + b"\0")
    return h.hexdigest()
