"""`ckpt-doctor analyzer --listen :8085`: serve k8sgpt's custom-analyzer gRPC call over the TrainJobs in scope.

Long-running and read-only. k8sgpt sends no namespace or selector with its call: -n/-A/-l here decide what is
scanned. SIGTERM and SIGINT stop it (exit 0). Exit 3 when it cannot listen. See docs/assistants.md.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
from typing import Any

from ckpt_doctor.cli import add_cluster_flags, add_diagnosis_flags, add_log_flags, listen_address
from ckpt_doctor.errors import UsageError
from ckpt_doctor.severity import SEVERITIES

GRACE = 5.0  # seconds a Run in progress may take to finish when the analyzer is stopped


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "analyzer",
        help="a k8sgpt custom analyzer over gRPC (schema.v1.CustomAnalyzerService), read-only",
        description="Serve k8sgpt's custom-analyzer call: on each call, diagnose the TrainJobs these flags select "
        "(k8sgpt sends no namespace) and answer with the Result of the TrainJob that fails worst, naming the others "
        "in its details; no Result when nothing fails. Register it with `k8sgpt custom-analyzer add --name "
        "ckpt-doctor --url HOST --port PORT` and run `k8sgpt analyze --custom-analysis`. See docs/assistants.md.",
    )
    p.add_argument(
        "--listen",
        type=listen_address,
        default=("", 8085),
        metavar="HOST:PORT",
        help="where to serve gRPC (default: :8085, every address)",
    )
    p.add_argument("-A", "--all-namespaces", action="store_true", help="scan TrainJobs in every namespace")
    p.add_argument("-l", "--selector", metavar="SELECTOR", help="only TrainJobs with these labels (like kubectl)")
    p.add_argument(
        "--fail-on",
        choices=SEVERITIES,
        default="warning",
        help="a TrainJob gets a Result when a finding fails at or above this severity (default: warning)",
    )
    add_diagnosis_flags(p)
    add_cluster_flags(p)
    add_log_flags(p)
    p.set_defaults(func=run)


def _warm_up(args: argparse.Namespace) -> None:
    """Load the Kubernetes client and read the kubeconfig once serving: the first call does not wait for it, and
    a kubeconfig that cannot be used is said at once (each call will fail with the same reason)."""
    from ckpt_doctor.errors import InputError
    from ckpt_doctor.sources.live import connect

    try:
        connect(args.namespace, args.context, args.kubeconfig, args.request_timeout)
    except InputError as e:
        print(f"ckpt-doctor analyzer: warning: {e}; every call will fail until this is fixed", file=sys.stderr)


def run(args: argparse.Namespace) -> int:
    if args.all_namespaces and args.namespace:
        raise UsageError("give either -n NAMESPACE or -A/--all-namespaces, not both")
    # gRPC's core logs its own errors on stderr, past the redactor: ours say the same in one line
    os.environ.setdefault("GRPC_VERBOSITY", "NONE")
    from ckpt_doctor.analyzer.server import Options, start  # gRPC loads here, for this verb only

    options = Options(
        namespace=args.namespace,
        all_namespaces=args.all_namespaces,
        selector=args.selector,
        context=args.context,
        kubeconfig=args.kubeconfig,
        request_timeout=args.request_timeout,
        concurrency=args.concurrency,
        log_bytes=args.log_bytes,
        trainer_version=args.trainer_version,
        signatures=tuple(args.signatures),
        fail_on=args.fail_on,
    )
    host, port = args.listen
    server, bound = start(options, host, port)
    stopped = threading.Event()

    def on_signal(signum: int, _frame: Any) -> None:
        stopped.set()

    from ckpt_doctor.signals import handled

    with handled((signal.SIGTERM, signal.SIGINT), on_signal):
        try:
            scope = "all namespaces" if args.all_namespaces else f"namespace {args.namespace or 'of the kubeconfig'}"
            scope += f", selector {args.selector}" if args.selector else ""
            print(
                f"ckpt-doctor analyzer: serving schema.v1.CustomAnalyzerService/Run on {host or '*'}:{bound} "
                f"(read-only; scope: {scope})",
                file=sys.stderr,
                flush=True,
            )
            threading.Thread(target=_warm_up, args=(args,), name="ckpt-analyzer-warm-up", daemon=True).start()
            while not stopped.wait(0.5):
                pass
        finally:
            server.stop(GRACE).wait()
    print("ckpt-doctor analyzer: stopped", file=sys.stderr, flush=True)
    return 0
