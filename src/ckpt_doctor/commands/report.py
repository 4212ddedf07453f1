"""`ckpt-doctor report`: the post-incident write-up of one TrainJob (live, or from a bundle)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ckpt_doctor.cli import add_cluster_flags, add_diagnosis_flags, add_log_flags, trainjob_target
from ckpt_doctor.errors import UsageError


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "report",
        help="the post-incident report: timeline, lost work, step chart, cause, fixes (Markdown or HTML)",
        description="Write what happened to a TrainJob as a postmortem: a summary (what broke, the cause, the "
        "cost), the steps and GPU-hours lost, the attempts timeline and a step chart, the root cause with its "
        "evidence, the fixes as patches, what could not be checked, and the kubectl commands that show the "
        "evidence again. Redacted like a bundle. Exit 0 when written (whatever it found), 2 usage, 3 input.",
    )
    p.add_argument(
        "target", type=trainjob_target, nargs="?", metavar="[NAMESPACE/]TRAINJOB", help="a TrainJob on the live cluster"
    )
    p.add_argument("--bundle", type=Path, help="an evidence bundle (directory or .tar.gz) instead of a cluster")
    p.add_argument("--trainjob", metavar="[NAMESPACE/]NAME", help="which TrainJob of a bundle with several")
    p.add_argument(
        "-o",
        "--output",
        choices=("markdown", "html"),
        default="markdown",
        help="markdown (for GitHub/GitLab issues) or html (one self-contained file); default: markdown",
    )
    p.add_argument(
        "--out",
        type=Path,
        metavar="FILE",
        help="write to FILE instead of standard output (Markdown: the step chart goes beside it as "
        "FILE-chart.svg and FILE-chart.png)",
    )
    p.add_argument("--force", action="store_true", help="replace FILE (and its chart files) if they exist")
    p.add_argument(
        "--redact-pattern",
        action="append",
        default=[],
        metavar="REGEX",
        help="also redact what REGEX matches (repeatable; its first group if it has one, else the whole match)",
    )
    add_diagnosis_flags(p)
    add_cluster_flags(p)
    live = p.add_argument_group("live collection")
    live.add_argument("-q", "--quiet", action="store_true", help="no progress display, and no 'wrote' line")
    add_log_flags(live)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ckpt_doctor.commands.common import diagnose_live_target
    from ckpt_doctor.pipeline import diagnose_snapshot
    from ckpt_doctor.report.incident import render_report, write_files
    from ckpt_doctor.sources.redact import Redactor

    if args.bundle and args.target:
        raise UsageError("give either a live TARGET or --bundle, not both")
    if not args.bundle and not args.target:
        raise UsageError("name a TrainJob ([NAMESPACE/]NAME) or pass --bundle PATH")
    if args.force and not args.out:
        raise UsageError("--force replaces the file --out names: give --out FILE")
    redactor = Redactor(args.redact_pattern)  # a bad pattern: exit 3 before any I/O
    if args.bundle:
        from ckpt_doctor.sources.bundle import open_bundle

        with open_bundle(args.bundle) as snap:
            diag = diagnose_snapshot(snap, args.trainjob, args.trainer_version, args.signatures)
            rendered = render_report(diag, args.output, args.out, redactor)
    else:
        diag = diagnose_live_target(args)  # redacted as it leaves; with --redact-pattern, render_report redacts more
        rendered = render_report(diag, args.output, args.out, redactor)
    if args.out is None:
        sys.stdout.write(rendered.text)
        return 0
    written = write_files(args.out, rendered, args.force)
    if not args.quiet:
        for w in written:
            print(f"ckpt-doctor: {w.describe()}", file=sys.stderr)
        for n in rendered.notes:
            if n.startswith("no PNG"):
                print(f"  {n}", file=sys.stderr)
    return 0
