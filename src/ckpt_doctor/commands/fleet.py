"""`ckpt-doctor diagnose --all-namespaces | -n NS | -l SELECTOR` and `diagnose --bundle B --all`: the fleet scan.

Reached from `commands/diagnose.py` when no TrainJob is named; prints the ranked table (or one fleet
document) and exits as `diagnose` does, over all TrainJobs: 1 when any fails at or above --fail-on,
4 with --strict when anything could not be evaluated or read, else 0.
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from ckpt_doctor.commands.common import use_color
from ckpt_doctor.errors import UsageError

if TYPE_CHECKING:  # loaded by the functions that scan: a single `diagnose` never needs them
    from ckpt_doctor.fleet.scan import Diagnoser, FleetResult


def wants_fleet(args: argparse.Namespace) -> bool:
    """No TrainJob named, and a fleet asked for: -A, -l, -n NS, or --bundle B --all."""
    if getattr(args, "all", False):
        return True
    if args.target or args.bundle:
        return False
    return bool(args.all_namespaces or args.selector or args.namespace)


def check_flags(args: argparse.Namespace) -> None:
    if args.all and not args.bundle:
        raise UsageError("--all diagnoses every TrainJob of a bundle: give --bundle PATH (live: -A or -n NS)")
    if args.bundle and (args.all_namespaces or args.selector):
        raise UsageError("-A/--all-namespaces and -l/--selector read a live cluster; for a bundle use --all")
    if args.all and args.trainjob:
        raise UsageError("give either --trainjob NAME or --all, not both")
    if args.target and (args.all_namespaces or args.selector):
        raise UsageError("a TrainJob name and -A/-l do not go together: name one TrainJob, or scan many")
    if args.all_namespaces and args.namespace:
        raise UsageError("give either -n NAMESPACE or -A/--all-namespaces, not both")


def _diagnoser(args: argparse.Namespace) -> Diagnoser:
    from ckpt_doctor.fleet.scan import Diagnoser

    return Diagnoser(args.trainer_version, args.signatures, args.output, args.fail_on, args.strict)


def run(args: argparse.Namespace) -> int:
    from ckpt_doctor.fleet.scan import exit_code

    check_flags(args)
    result = run_bundle(args) if args.bundle else run_live(args)
    emit(result, args.output)
    return exit_code(result, args.strict)


def run_bundle(args: argparse.Namespace) -> FleetResult:
    from ckpt_doctor.fleet.scan import scan_bundle
    from ckpt_doctor.sources.bundle import open_bundle

    with open_bundle(args.bundle) as snap:
        return scan_bundle(snap, _diagnoser(args), str(args.bundle))


def run_live(args: argparse.Namespace) -> FleetResult:
    import signal

    from ckpt_doctor.fleet.procs import default_processes
    from ckpt_doctor.signals import handled, raise_interrupt

    processes = args.processes if getattr(args, "processes", None) else default_processes()
    with handled((signal.SIGTERM,), raise_interrupt):  # `kill PID` stops it as Ctrl-C does: the workers end too
        return _scan(args, processes)


def _scan(args: argparse.Namespace, processes: int) -> FleetResult:
    from ckpt_doctor.fleet.scan import scan_cluster

    return scan_cluster(
        _diagnoser(args),
        namespace=args.namespace,
        all_namespaces=args.all_namespaces,
        selector=args.selector,
        context=args.context,
        kubeconfig=args.kubeconfig,
        timeout=args.request_timeout,
        concurrency=args.concurrency,
        log_bytes=args.log_bytes,
        quiet=args.quiet,
        processes=processes,
    )


def emit(result: FleetResult, fmt: str) -> None:
    from ckpt_doctor.fleet.render import RENDERERS, build_text

    if fmt == "text" and use_color():
        from rich.console import Console

        Console(highlight=False, soft_wrap=True).print(build_text(result), end="")
        return
    sys.stdout.write(RENDERERS[fmt](result))
