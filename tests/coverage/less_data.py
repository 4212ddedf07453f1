"""Less data never flips a verdict: the invariant behind "unknown is not absent" (issue 9).

A variant of a bundle takes one thing away (all objects of one kind, one log, bundle.yaml). With
less data a rule may lose its footing, never gain it:

- a rule that failed fails again, or is `not_evaluated`;
- a rule that was `not_evaluated` does not become `pass`;
- a rule that passed does not start to fail (what is missing is no evidence of a fault).

`bench/bench_less_data.py` runs every variant of every example; `make test` runs them all
offline (they are fast) and a sample live.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from ckpt_doctor.coverage import plural
from ckpt_doctor.engine.walk import Diagnosis
from ckpt_doctor.pipeline import diagnose_snapshot
from ckpt_doctor.sources.bundle import open_bundle
from ckpt_doctor.yamlio import kube_objects

Verdicts = dict[tuple[str, str, str | None], str]  # (rule, subject kind, subject name) -> status


@dataclass(frozen=True)
class Removal:
    what: str  # "kind Pod", "log logs/x/node.log", "bundle.yaml"
    kind: str | None = None
    log: str | None = None  # path under the bundle
    meta: bool = False


def verdicts(diag: Diagnosis) -> Verdicts:
    out: Verdicts = {}
    for f in diag.findings:
        s = f.result.subject or {}
        out[(f.rule.id, str(s.get("kind")), s.get("name"))] = f.status
    return out


def diagnose_dir(path: Path) -> Verdicts:
    with open_bundle(path) as snap:
        return verdicts(diagnose_snapshot(snap))


def read_objects(bundle: Path) -> list[dict[str, Any]]:
    out = []
    for f in sorted(bundle.rglob("*")):
        rel = f.relative_to(bundle)
        if not f.is_file() or "logs" in rel.parts[:-1] or rel == Path("bundle.yaml"):
            continue
        if f.suffix.lower() in (".yaml", ".yml", ".json"):
            out += list(kube_objects(f.read_text(), str(rel)))
    return out


def removals(bundle: Path) -> Iterator[Removal]:
    kinds = sorted({o["kind"] for o in read_objects(bundle)} - {"TrainJob"})
    for k in kinds:
        yield Removal(f"kind {k}", kind=k)
    for f in sorted((bundle / "logs").rglob("*.log")) if (bundle / "logs").is_dir() else []:
        yield Removal(f"log {f.relative_to(bundle)}", log=str(f.relative_to(bundle)))
    if (bundle / "bundle.yaml").exists():
        yield Removal("bundle.yaml", meta=True)


def write_without(bundle: Path, r: Removal, out: Path) -> Path:
    """A copy of `bundle` without what `r` names (a kind it removes is no longer `listed` either)."""
    out.mkdir(parents=True)
    objs = [o for o in read_objects(bundle) if o.get("kind") != r.kind]
    (out / "objects.json").write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": objs}))
    if (bundle / "logs").is_dir():
        shutil.copytree(bundle / "logs", out / "logs")
        if r.log:
            (out / r.log).unlink()
    if (bundle / "bundle.yaml").exists() and not r.meta:
        meta = yaml.safe_load((bundle / "bundle.yaml").read_text())
        if r.kind and isinstance(meta.get("listed"), list):
            meta["listed"] = [k for k in meta["listed"] if k != plural(r.kind)]
        (out / "bundle.yaml").write_text(yaml.safe_dump(meta))
    return out


WORST = {"fail": 0, "not_evaluated": 1, "pass": 2}


def by_rule(v: Verdicts) -> dict[str, str]:
    """Each rule's worst status over its subjects (the subject itself may move: a JobSet's failurePolicy
    is judged on the runtime when the JobSet is gone)."""
    out: dict[str, str] = {}
    for (rule, _k, _n), st in v.items():
        if rule not in out or WORST[st] < WORST[out[rule]]:
            out[rule] = st
    return out


def flips(before: Verdicts, after: Verdicts) -> list[str]:
    """What the invariant forbids, worded for a failure message."""
    b, a = by_rule(before), by_rule(after)
    bad = []
    for rule, was in b.items():
        now = a.get(rule)
        if now == "pass" and was in ("fail", "not_evaluated"):
            bad.append(f"{rule}: {was} -> {now}")
        if now == "fail" and was == "pass":
            bad.append(f"{rule}: {was} -> {now}")
    return bad
