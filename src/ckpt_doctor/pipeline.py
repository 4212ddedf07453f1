"""Snapshot → Scope → Facts → Diagnosis: the one path every face (CLI, TUI, live) takes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ckpt_doctor.engine.walk import Diagnosis, evaluate
from ckpt_doctor.facts.context import Facts
from ckpt_doctor.facts.logs import Signature, load_signatures
from ckpt_doctor.scope import build_scope, pick_trainjob
from ckpt_doctor.snapshot import Snapshot


def diagnose_snapshot(
    snap: Snapshot,
    trainjob: str | None = None,
    version_flag: str | None = None,
    signature_dirs: list[Path] | None = None,
    signatures: list[Signature] | None = None,
) -> Diagnosis:
    """Diagnose one TrainJob of `snap` (the only one, or the one named). `signatures`, when given, are those
    of `signature_dirs` already read (a fleet reads them once: the log scanner's index is built per list)."""
    tj = pick_trainjob(snap, trainjob)
    scope = build_scope(snap, tj)
    sigs = signatures if signatures is not None else load_signatures(signature_dirs or [])
    facts = Facts(scope, mode="diagnose", version_flag=version_flag, signatures=sigs)
    from ckpt_doctor.sources.redact import redact_diagnosis  # every face prints what leaves here: redacted

    return redact_diagnosis(evaluate(facts))


def diagnose_live(
    target: str,
    *,
    namespace: str | None = None,
    context: str | None = None,
    kubeconfig: str | None = None,
    timeout: float = 15.0,
    quiet: bool = True,
    workers: int = 8,
    log_bytes: int | None = None,
    version_flag: str | None = None,
    signature_dirs: list[Path] | None = None,
    inspect: Any = None,
) -> Diagnosis:
    """Diagnose the TrainJob `target` (`[NAMESPACE/]NAME`) read from the cluster, read-only (every face that
    diagnoses one live TrainJob: diagnose, report, the MCP server).

    Each log is read through the log scanner as it arrives, keeping only what it finds, and nothing is
    redacted on the way in: the findings are, as they leave diagnose_snapshot.
    Raises InputError when the cluster cannot be reached or the TrainJob does not exist.
    """
    from ckpt_doctor.facts.logs import HEAD_BYTES
    from ckpt_doctor.sources.live import collect_live  # imports kubernetes: only on the live path

    window = log_bytes or HEAD_BYTES
    snap = collect_live(
        target,
        namespace=namespace,
        context=context,
        kubeconfig=kubeconfig,
        timeout=timeout,
        quiet=quiet,
        workers=workers,
        head_bytes=window,
        tail_bytes=window,
        redact=False,
        scan=load_signatures(signature_dirs or []),
        inspect=inspect,
    )
    name = snap.meta.get("target", {}).get("name") or None
    return diagnose_snapshot(snap, name, version_flag, signature_dirs)
