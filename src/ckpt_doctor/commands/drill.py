"""`ckpt-doctor drill [NS/]NAME | --submit MANIFEST…`: interrupt a TrainJob on purpose and check it resumes.

Exit codes (contracts.md §1, §5; decided by drill/verdict.py): 0 every required step ran and passed (or
--dry-run printed its plan), 1 a step failed, 2 usage, 3 error (a step could not run, a required step did not
run, the cluster or an input failed); a drill stopped by Ctrl-C (or the abort answer) exits 130, by SIGTERM
143, after its cleanup ran. A drill that would ask with no terminal on stdin (and neither --yes nor --dry-run)
is a usage error, refused before any request; the app asks on its own screen and never comes here. The drill
talks on stderr; stdout carries only the -o json record. `--junit`/`--report` are written on every one of these
paths, and refuse to replace an existing file without `--force`. `--cleanup` undoes what interrupted drills left.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ckpt_doctor.cli import add_cluster_flags, trainer_version_arg, trainjob_target
from ckpt_doctor.errors import InputError, InternalError, UsageError


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "drill",
        help="interrupt a TrainJob on purpose (crash, suspend/resume, another node) and check it resumes",
        description="The verify drill of the checkpointing guide, run step by step: preflight (APIs, runtime rules, "
        "PVC, permissions, nodes), submit or attach, wait for the first complete checkpoint, crash the trainer, "
        "suspend and resume, resume on another node, and clean up. Before every change it prints the kubectl "
        "command that does the same and asks on the terminal (--yes does not ask; without a terminal on stdin, "
        "pass --yes or --dry-run); it touches only its TrainJob, that "
        "TrainJob's pods, what it created, and a node it was told to cordon; it undoes everything at the end, "
        "on Ctrl-C and SIGTERM too. It passes only when every required step ran and passed. Exit 0 passed, 1 a "
        "step failed, 2 usage, 3 error (a step could not run, a required step did not run, the cluster or an input "
        "failed), 130/143 stopped by Ctrl-C/SIGTERM.",
    )
    p.add_argument(
        "target",
        type=trainjob_target,
        nargs="?",
        metavar="[NAMESPACE/]TRAINJOB",
        help="a running TrainJob to attach to",
    )
    p.add_argument(
        "--submit",
        nargs="+",
        metavar="MANIFEST",
        default=[],
        help="create these manifests (PVC, ConfigMap, runtime, TrainJob) and drill the TrainJob",
    )
    p.add_argument(
        "--steps",
        action="append",
        default=[],
        metavar="ID[,ID…]",
        help="run only these steps (submit and cleanup always run)",
    )
    p.add_argument("--skip", action="append", default=[], metavar="ID[,ID…]", help="leave these steps out")
    p.add_argument(
        "--dry-run",
        action="store_true",
        help="print the whole plan with its kubectl commands and change nothing (no write request)",
    )
    p.add_argument("-y", "--yes", action="store_true", help="do not ask before each change (unattended runs)")
    p.add_argument("--keep", action="store_true", help="keep what --submit created (the rest is still undone)")
    p.add_argument(
        "--cleanup",
        action="store_true",
        help="undo what interrupted drills left in the namespace (or of TRAINJOB), then exit",
    )
    p.add_argument(
        "--crash",
        choices=("delete", "kill"),
        default="delete",
        help="how the crash step crashes the trainer: delete its pod (default) or kill PID 1 in it",
    )
    p.add_argument(
        "--cross-node",
        choices=("selector", "cordon"),
        default="selector",
        help="move the trainer with a nodeSelector (default) or by cordoning its node (only when asked)",
    )
    p.add_argument("--playbook", type=Path, metavar="FILE", help="another playbook (default: verify-resume)")
    p.add_argument("--junit", type=Path, metavar="FILE", help="also write a JUnit XML report (one test case per step)")
    p.add_argument("--report", type=Path, metavar="FILE.md", help="also write a Markdown report")
    p.add_argument("--force", action="store_true", help="replace the --junit / --report files if they exist")
    p.add_argument(
        "-o",
        "--output",
        choices=("text", "json"),
        default="text",
        help="json: print the drill's record on stdout (docs/contracts.md §5)",
    )
    p.add_argument("-v", "--verbose", action="store_true", help="say why each step runs, and show the trainer's log")
    p.add_argument(
        "--trainer-version",
        type=trainer_version_arg,
        metavar="v2.x",
        help="the cluster's Trainer version, if it cannot be read",
    )
    p.add_argument(
        "--signatures",
        type=Path,
        action="append",
        default=[],
        metavar="DIR",
        help="a directory of extra log signature files (repeatable)",
    )
    add_cluster_flags(p)
    p.set_defaults(func=run)


def options(args: argparse.Namespace):  # type: ignore[no-untyped-def]
    from ckpt_doctor.drill.runner import Options

    if args.cleanup and args.submit:
        raise UsageError("--cleanup undoes leftovers; it takes no --submit")
    if not args.cleanup and bool(args.target) == bool(args.submit):
        raise UsageError("name a TrainJob to attach to ([NAMESPACE/]NAME) or give --submit MANIFEST…, not both")
    from ckpt_doctor.safewrite import check_output

    for f in (args.junit, args.report):
        if f is not None and f.exists() and f.is_dir():
            raise UsageError(f"{f} is a directory; give a file name")
        if f is not None:  # an existing file without --force, a missing directory, a read-only file: refused
            check_output(f, force=args.force)  # before the drill touches anything
    if args.junit is not None and args.report is not None and args.junit.resolve() == args.report.resolve():
        raise UsageError("--junit and --report name the same file")
    if args.signatures:
        from ckpt_doctor.facts.logs import load_signatures

        load_signatures(args.signatures)
    return Options(
        target=args.target,
        submit=tuple(args.submit),
        namespace=args.namespace,
        context=args.context,
        kubeconfig=args.kubeconfig,
        request_timeout=args.request_timeout,
        steps=tuple(args.steps),
        skip=tuple(args.skip),
        dry_run=args.dry_run,
        yes=args.yes,
        keep=args.keep,
        crash=args.crash,
        cross_node=args.cross_node,
        trainer_version=args.trainer_version,
        signatures=tuple(args.signatures),
        playbook=args.playbook,
        cleanup=args.cleanup,
    )


def run(args: argparse.Namespace) -> int:
    from ckpt_doctor.drill.console import TextConsole
    from ckpt_doctor.drill.interrupt import Interrupts
    from ckpt_doctor.drill.report import write_reports
    from ckpt_doctor.drill.runner import Drill

    opts = options(args)
    console = TextConsole(yes=opts.yes, verbose=args.verbose)
    drill = Drill(opts, console)
    if drill.asks() and not _terminal(sys.stdin):  # nobody to answer the first question: refuse before any request
        raise UsageError("stdin is not a terminal: pass --yes to confirm every change, or --dry-run to see the plan")
    try:
        with Interrupts(announce=console.note) as interrupts:
            drill.interrupts = interrupts
            result = drill.run()  # never raises but for a second signal during cleanup (held, then abandoned)
    finally:  # the reports on every way out, a second Ctrl-C included
        write_reports(
            drill.result, args.junit, args.report, sys.stdout if args.output == "json" else None, force=args.force
        )
    if drill.internal is not None:
        raise InternalError(f"{result.verdict_reason} (the reports say what ran)")
    if drill.error is not None and result.verdict == "error" and result.verdict_step is None:
        raise InputError(str(drill.error))
    return drill.exit_code()


def _terminal(stream: object) -> bool:
    try:
        return stream is not None and bool(stream.isatty())  # type: ignore[attr-defined]
    except (AttributeError, ValueError, OSError):  # closed, or no stream at all
        return False
