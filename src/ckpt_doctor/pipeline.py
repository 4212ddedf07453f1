"""Snapshot → Scope → Facts → Diagnosis: the one path every face (CLI, TUI, live) takes."""

from __future__ import annotations

from pathlib import Path

from ckpt_doctor.engine.walk import Diagnosis, evaluate
from ckpt_doctor.facts.context import Facts
from ckpt_doctor.facts.logs import load_signatures
from ckpt_doctor.scope import build_scope, pick_trainjob
from ckpt_doctor.snapshot import Snapshot


def diagnose_snapshot(
    snap: Snapshot,
    trainjob: str | None = None,
    version_flag: str | None = None,
    signature_dirs: list[Path] | None = None,
) -> Diagnosis:
    """Diagnose one TrainJob of `snap` (the only one, or the one named)."""
    tj = pick_trainjob(snap, trainjob)
    scope = build_scope(snap, tj)
    sigs = load_signatures(signature_dirs or [])
    facts = Facts(scope, mode="diagnose", version_flag=version_flag, signatures=sigs)
    from ckpt_doctor.sources.redact import redact_diagnosis  # every face prints what leaves here: redacted

    return redact_diagnosis(evaluate(facts))
