"""Flags and helpers that several verbs share."""

from __future__ import annotations

import argparse
import os
import sys
from typing import TYPE_CHECKING

from ckpt_doctor.severity import SEVERITIES

if TYPE_CHECKING:
    from ckpt_doctor.engine.walk import Diagnosis


def add_output_flags(p: argparse.ArgumentParser, formats: tuple[str, ...]) -> None:
    p.add_argument("-o", "--output", choices=formats, default="text", help="output format (default: text)")
    p.add_argument(
        "--fail-on",
        choices=SEVERITIES,
        default="warning",
        help="exit 1 when a finding fails at or above this severity (default: warning)",
    )
    p.add_argument(
        "--strict", action="store_true", help="exit 4 when something could not be evaluated (missing or forbidden data)"
    )
    p.add_argument("-v", "--verbose", action="store_true", help="list passed rules and every not-evaluated one")


def use_color() -> bool:
    return sys.stdout.isatty() and not os.environ.get("NO_COLOR")


def emit(diag: Diagnosis, fmt: str, verbose: bool = False) -> None:
    if fmt == "text":
        from ckpt_doctor.report.text import build

        text = build(diag, verbose)
        if use_color():
            from rich.console import Console

            Console(highlight=False, soft_wrap=True).print(text, end="")
        else:
            sys.stdout.write(text.plain)
        return
    from ckpt_doctor.report import renderer

    sys.stdout.write(renderer(fmt)(diag))


def diagnose_live_target(args: argparse.Namespace) -> Diagnosis:
    """Diagnose the TrainJob `args.target` names, read from the cluster (diagnose and report share it)."""
    from ckpt_doctor.cli import inspect_options
    from ckpt_doctor.pipeline import diagnose_live

    return diagnose_live(
        args.target,
        namespace=args.namespace,
        context=args.context,
        kubeconfig=args.kubeconfig,
        timeout=args.request_timeout,
        quiet=args.quiet,
        workers=args.concurrency,
        log_bytes=args.log_bytes,
        version_flag=args.trainer_version,
        signature_dirs=args.signatures,
        inspect=inspect_options(args),
    )


def live_diagnosis(args: argparse.Namespace) -> tuple[Diagnosis, str]:
    """`diagnose_live_target`, and why the cluster was lost half-way through the collection ('' if it was not):
    the diagnosis is then of what was read before, and its `notCollected` says so."""
    from ckpt_doctor.sources.live.collector import lost_reason

    diag = diagnose_live_target(args)
    return diag, lost_reason(diag.facts.scope.snap)


def say_lost(lost: str) -> int:
    """The one error line of a cluster lost mid-collection (after the output it still printed or wrote): exit 3."""
    from ckpt_doctor.errors import EXIT_INPUT

    print(f"ckpt-doctor: error: {' '.join(lost.split())}", file=sys.stderr)
    return EXIT_INPUT
