"""`ckpt-doctor diagnose`: one TrainJob, from a bundle or the live cluster."""

from __future__ import annotations

import argparse
from pathlib import Path

from ckpt_doctor.cli import (
    add_cluster_flags,
    add_diagnosis_flags,
    add_inspect_flags,
    add_log_flags,
    positive_int,
    trainjob_target,
)
from ckpt_doctor.commands.common import add_output_flags, emit, live_diagnosis, say_lost
from ckpt_doctor.errors import UsageError


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "diagnose",
        help="diagnose one TrainJob (live, or --bundle PATH), or many (-A, -n NS, -l SELECTOR, --bundle B --all)",
        description="Say which symptom the TrainJob shows, which cause explains it, with the evidence and the fix. "
        "Without a TrainJob name, -A/--all-namespaces, -n NAMESPACE or -l SELECTOR (or --bundle B --all) diagnose "
        "every TrainJob they select and print them ranked by their worst finding and the steps they lost.",
    )
    p.add_argument(
        "target", type=trainjob_target, nargs="?", metavar="[NAMESPACE/]TRAINJOB", help="a TrainJob on the live cluster"
    )
    p.add_argument("--bundle", type=Path, help="an evidence bundle (directory or .tar.gz) instead of a cluster")
    p.add_argument("--trainjob", metavar="[NAMESPACE/]NAME", help="which TrainJob of a bundle with several")
    fleet = p.add_argument_group("many TrainJobs (no TRAINJOB named): a ranked table, or one document")
    fleet.add_argument("-A", "--all-namespaces", action="store_true", help="every TrainJob of every namespace")
    fleet.add_argument("-l", "--selector", metavar="SELECTOR", help="only TrainJobs with these labels (like kubectl)")
    fleet.add_argument("--all", action="store_true", help="every TrainJob of the --bundle")
    fleet.add_argument(
        "--processes",
        type=positive_int,
        metavar="N",
        help="live scans: diagnose in up to N worker processes while the requests go on (default: one per CPU "
        "this process may use; 1: all in this process); the output is the same",
    )
    add_diagnosis_flags(p)
    add_output_flags(p, ("text", "json", "markdown", "sarif", "junit"))
    add_cluster_flags(p)
    live = p.add_argument_group("live collection")
    live.add_argument("-q", "--quiet", action="store_true", help="no progress display on stderr")
    add_log_flags(live)
    add_inspect_flags(live)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if args.bundle and args.target:
        raise UsageError("give either a live TARGET or --bundle, not both")
    if getattr(args, "inspect_checkpoints", False) and not args.target:
        raise UsageError("--inspect-checkpoints lists a live TrainJob's checkpoint directory: name one TrainJob")
    from ckpt_doctor.commands import fleet
    from ckpt_doctor.pipeline import diagnose_snapshot  # the engine loads when a verb runs, not for --help
    from ckpt_doctor.sources.bundle import open_bundle

    if fleet.wants_fleet(args) or args.all_namespaces or args.selector:
        return fleet.run(args)  # `-n NS` without a name, -A, -l, or --bundle B --all
    if args.bundle:
        with open_bundle(args.bundle) as snap:
            diag = diagnose_snapshot(snap, args.trainjob, args.trainer_version, args.signatures)
            emit(diag, args.output, args.verbose)
    else:
        if not args.target:
            raise UsageError("name a TrainJob ([NAMESPACE/]NAME) or pass --bundle PATH")
        diag, lost = live_diagnosis(args)
        emit(diag, args.output, args.verbose)
        if lost:
            return say_lost(lost)  # what was read is printed; its notCollected says the cluster went away
    return diag.exit_code(args.fail_on, args.strict)
