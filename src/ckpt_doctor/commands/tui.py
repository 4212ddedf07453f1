"""`ckpt-doctor tui` (also plain `ckpt-doctor`): the interactive app."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from ckpt_doctor.cli import add_cluster_flags, add_diagnosis_flags
from ckpt_doctor.errors import UsageError

if TYPE_CHECKING:
    from ckpt_doctor.tui.target import Target


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "tui",
        help="the interactive app (the default when no command is given)",
        description="Pick a TrainJob and see why it did not resume: the verdict, the evidence behind it "
        "(objects, events, log lines), the fix, the attempts' steps over time, logs and events. "
        "Press ? in the app for its keys.",
    )
    p.add_argument(
        "target",
        nargs="?",
        metavar="[NAMESPACE/]TRAINJOB",
        help="a TrainJob on the live cluster (default: pick one from the namespace)",
    )
    p.add_argument("--bundle", type=Path, help="an evidence bundle (directory or .tar.gz) instead of a cluster")
    p.add_argument("--trainjob", metavar="[NAMESPACE/]NAME", help="which TrainJob of a bundle to open first")
    p.add_argument("--playbook", type=Path, metavar="FILE",
                   help="the playbook of the verify drill the app runs (default: verify-resume)")
    p.add_argument(
        "--refresh",
        type=float,
        metavar="SECONDS",
        help="refresh automatically every SECONDS (default: off; r refreshes, : toggles auto-refresh)",
    )
    add_diagnosis_flags(p)
    add_cluster_flags(p)
    p.set_defaults(func=run)


def target_from(args: argparse.Namespace) -> Target:
    """The app's Target from parsed flags (checked here, before the app takes the screen)."""
    from ckpt_doctor.tui.target import Target

    if args.bundle and args.target:
        raise UsageError("give either a live TARGET or --bundle, not both")
    if args.trainjob and args.target:
        raise UsageError("give the TrainJob once: TARGET on a cluster, --trainjob in a bundle")
    if args.bundle is not None:  # what diagnose refuses (exit 3) is refused before the app takes the screen
        from ckpt_doctor.sources.archive_limits import check_bundle_path

        check_bundle_path(args.bundle)
    if args.refresh is not None and args.refresh <= 0:
        raise UsageError("--refresh needs a positive number of seconds")
    if args.playbook is not None:  # a broken playbook is an error before the app takes the screen
        from ckpt_doctor.drill.playbook import load_playbook

        load_playbook(args.playbook)
    if args.signatures:  # read them now: a broken file is an error before the app takes the screen
        from ckpt_doctor.facts.logs import load_signatures

        load_signatures(args.signatures)
    return Target(
        bundle=args.bundle,
        trainjob=args.target or args.trainjob,
        namespace=args.namespace,
        context=args.context,
        kubeconfig=args.kubeconfig,
        timeout=args.request_timeout,
        trainer_version=args.trainer_version,
        signatures=tuple(args.signatures),
        playbook=args.playbook,
    )


def need_terminal() -> None:
    """The app draws on a terminal and reads keys from it: without one it could never be quit."""
    import sys

    missing = [name for name, f in (("stdin", sys.stdin), ("stdout", sys.stdout)) if f is None or not f.isatty()]
    if missing:
        raise UsageError(
            f"the interactive app needs a terminal, and {' and '.join(missing)} "
            f"{'is' if len(missing) == 1 else 'are'} not one; for scripts and pipes use "
            "`ckpt-doctor diagnose` (-o json|markdown)"
        )


def run(args: argparse.Namespace) -> int:
    target = target_from(args)
    need_terminal()
    from ckpt_doctor.tui.source import StartupGc, make_loader

    # A bundle's reader starts before Textual is imported: the fork copies a process that is still
    # small, and the child reads and diagnoses on another core while Textual loads. (The frames it
    # sends are unpickled only once the app asks for them, after its first frame: see source._Run.)
    loader = make_loader(target)
    startup_gc = None
    try:
        loader.start()
        startup_gc = StartupGc()  # after the fork: the reader collects as usual
        from ckpt_doctor.tui.app import run as run_app

        return run_app(target, args.refresh, loader, painted=startup_gc.release)
    except BaseException:
        loader.close()
        raise
    finally:
        if startup_gc is not None:
            startup_gc.release()
