"""`ckpt-doctor collect`: capture a redacted evidence bundle of one TrainJob (contracts.md §2)."""

from __future__ import annotations

import argparse
import signal
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from ckpt_doctor.cli import add_cluster_flags, add_inspect_flags, add_log_flags, inspect_options, trainjob_target
from ckpt_doctor.errors import InputError

NO_REDACT_WARNING = (
    "ckpt-doctor: WARNING: --no-redact: the bundle holds env values, tokens, passwords, keys and log lines "
    "exactly as the cluster has them; do not share it"
)


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "collect",
        help="capture a redacted evidence bundle of one TrainJob",
        description="Read one TrainJob and everything around it (runtime, JobSet, Jobs, pods, events, PVCs, PVs, "
        "storage classes, nodes, Kueue Workload, container logs current and previous) and write it as a bundle "
        "that `ckpt-doctor diagnose --bundle` reads. Credentials are redacted unless --no-redact.",
    )
    p.add_argument(
        "target", type=trainjob_target, metavar="[NAMESPACE/]TRAINJOB", help="the TrainJob on the live cluster"
    )
    p.add_argument(
        "-o",
        "--output",
        required=True,
        metavar="FILE.tar.gz",
        help="the bundle to write: FILE.tar.gz or FILE.tgz (any other name: a new directory)",
    )
    p.add_argument(
        "--force",
        action="store_true",
        help="replace an existing FILE.tar.gz (never followed if it is a symlink: the link itself is replaced)",
    )
    p.add_argument(
        "--follow",
        action="store_true",
        help="record until the TrainJob finishes or Ctrl-C: keep every attempt's pods, events and logs as they "
        "happen, so the evidence of a restart survives the restart",
    )
    p.add_argument(
        "--no-redact",
        action="store_true",
        help="do NOT redact: env values, tokens, passwords, keys, credentials in URLs and log lines go into the "
        "bundle exactly as the cluster has them (for bundles that never leave your machine); prints a warning",
    )
    p.add_argument(
        "--redact-pattern",
        action="append",
        default=[],
        metavar="REGEX",
        help="also redact what REGEX matches (repeatable; its first group if it has one, else the whole match)",
    )
    add_log_flags(p)
    add_inspect_flags(p)
    p.add_argument("-q", "--quiet", action="store_true", help="no progress or summary on stderr")
    add_cluster_flags(p)
    p.set_defaults(func=run)


@contextmanager
def _sigterm_as_interrupt() -> Iterator[None]:
    """`kill PID` stops a recording the way Ctrl-C does: the bundle is still written."""
    from ckpt_doctor.signals import handled, raise_interrupt

    with handled((signal.SIGTERM,), raise_interrupt):
        yield


def _inspect_after_recording(snap: Any, args: argparse.Namespace, inspect: Any) -> None:
    """collect --follow --inspect-checkpoints: the directory as it is when the recording ends."""
    from ckpt_doctor.sources.live import Api, CallError, connect
    from ckpt_doctor.sources.live.inspect import inspect_checkpoints, to_snapshot

    target = snap.meta.get("target") or {}
    try:
        api = Api(connect(args.namespace, args.context, args.kubeconfig, args.request_timeout))
        found = inspect_checkpoints(api, snap, str(target.get("namespace")), str(target.get("name")), inspect)
    except (CallError, InputError) as e:
        from ckpt_doctor.snapshot import Gap

        snap.not_collected.append(Gap("checkpoints", f"the cluster could not be reached to list it: {e}"))
        return
    to_snapshot(snap, found)  # redacted with the rest of the snapshot


def run(args: argparse.Namespace) -> int:
    from ckpt_doctor.safewrite import check_output
    from ckpt_doctor.sources.bundle_write import is_archive, write_bundle
    from ckpt_doctor.sources.live.collector import LOST, lost_reason
    from ckpt_doctor.sources.redact import Redactor

    redactor = Redactor(args.redact_pattern, enabled=not args.no_redact)  # bad patterns: exit 2 before any I/O
    check_output(args.output, args.force, directory=not is_archive(args.output))  # refused before collecting
    if args.no_redact:
        print(NO_REDACT_WARNING, file=sys.stderr)
    common: dict[str, Any] = {
        "namespace": args.namespace,
        "context": args.context,
        "kubeconfig": args.kubeconfig,
        "timeout": args.request_timeout,
        "head_bytes": args.log_bytes,
        "tail_bytes": args.log_bytes,
        "workers": args.concurrency,
        "quiet": args.quiet,
    }
    extra: dict[str, bytes] = {}
    if args.follow:
        from ckpt_doctor.sources.recorder import record

        with _sigterm_as_interrupt():
            snap, extra = record(args.target, **common)
        inspect = inspect_options(args)
        if inspect is not None:
            _inspect_after_recording(snap, args, inspect)
        redactor.snapshot(snap)
        extra = {k: redactor.bytes(v) for k, v in extra.items()}
        snap.meta["redactions"] = redactor.count
    else:
        from ckpt_doctor.sources.live import collect_live

        snap = collect_live(args.target, redact=not args.no_redact, redact_patterns=args.redact_pattern,
                            inspect=inspect_options(args), **common)  # fmt: skip
    import os

    was = "a symlink, replaced itself (what it pointed to is untouched)" if os.path.islink(args.output) else "a file"
    replaced = os.path.lexists(args.output) and not os.path.isdir(args.output)
    try:
        out = write_bundle(snap, args.output, extra, force=args.force)
    except OSError as e:
        raise InputError(f"cannot write the bundle: {e.strerror or e}", str(args.output)) from None
    if not args.quiet:
        target = snap.meta.get("target") or {}
        size = f", {out.stat().st_size} bytes" if out.is_file() else ""
        if replaced:
            print(f"ckpt-doctor: --force: replaced what was at {out}: {was}", file=sys.stderr)
        print(
            f"ckpt-doctor: wrote {out} for TrainJob {target.get('namespace')}/{target.get('name')}: "
            f"{len(snap.objects)} objects, {len(snap.logs)} logs, "
            + (f"{len(snap.checkpoints)} checkpoint listing(s), " if snap.checkpoints else "")
            + f"{snap.meta.get('redactions', 0)} redactions, "
            f"{len(snap.not_collected)} not collected{size}",
            file=sys.stderr,
        )
        for g in snap.not_collected:
            if g.what != LOST:
                print(f"  not collected: {g.what}: {g.reason}", file=sys.stderr)
    lost = lost_reason(snap)
    if lost:
        from ckpt_doctor.commands.common import say_lost

        return say_lost(lost)  # the bundle holds what was read, and its bundle.yaml says the cluster went away
    return 0
