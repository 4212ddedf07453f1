"""`ckpt-doctor watch`: watch TrainJobs, re-diagnose them as they change, serve Prometheus metrics.

Long-running and read-only (it writes Kubernetes Events only with --emit-events). Logs are JSON lines
on stderr. SIGTERM and SIGINT stop it cleanly (exit 0). Exit 3 when it cannot start: no cluster, the
TrainJobs cannot be listed, the address is taken. See docs/fleet.md.
"""

from __future__ import annotations

import argparse
import signal
import threading
from typing import Any

from ckpt_doctor.cli import add_cluster_flags, add_diagnosis_flags, add_log_flags, positive_int


def _simulated(cluster: Any) -> dict[str, str]:
    """`cluster: "sandbox (simulated cluster)"` for the start line when it is the sandbox (ckpt_doctor.simulation)."""
    from ckpt_doctor.simulation import WORDS, simulated
    from ckpt_doctor.sources.live.client import Api, CallError

    try:
        return {"cluster": WORDS} if simulated(Api(cluster).version()) else {}
    except CallError:
        return {}


def _seconds(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if v < 0:
        raise argparse.ArgumentTypeError("must not be negative")
    return v


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "watch",
        help="watch TrainJobs, re-diagnose them as they change, serve Prometheus metrics (read-only)",
        description="List and watch TrainJobs, JobSets, pods and events; re-diagnose a TrainJob (debounced) when "
        "one of its objects changes; serve its verdict as Prometheus metrics on /metrics, with /healthz and "
        "/readyz. Read-only unless --emit-events. In a pod it uses the in-cluster service account.",
    )
    p.add_argument("--listen", default=":9808", metavar="HOST:PORT", help="where to serve HTTP (default: :9808)")
    p.add_argument("-A", "--all-namespaces", action="store_true", help="watch TrainJobs in every namespace")
    p.add_argument("-l", "--selector", metavar="SELECTOR", help="only TrainJobs with these labels")
    p.add_argument(
        "--debounce",
        type=_seconds,
        default=5.0,
        metavar="SECONDS",
        help="re-diagnose a TrainJob once its objects have been quiet this long (default: 5)",
    )
    p.add_argument(
        "--max-delay",
        type=_seconds,
        default=60.0,
        metavar="SECONDS",
        help="…or at the latest this long after its first change (default: 60)",
    )
    p.add_argument("--workers", type=positive_int, default=2, metavar="N", help="re-diagnoses at once (default: 2)")
    p.add_argument(
        "--emit-events",
        action="store_true",
        help="write a Kubernetes Event on a TrainJob when its verdict changes (needs create on events)",
    )
    p.add_argument("--log-level", choices=("debug", "info", "warning", "error"), default="info")
    p.add_argument(
        "--watch-timeout",
        type=positive_int,
        default=300,
        metavar="SECONDS",
        help="ask the server to end each watch after this long; it is opened again (default: 300)",
    )
    add_diagnosis_flags(p)
    add_cluster_flags(p)
    add_log_flags(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ckpt_doctor.errors import UsageError
    from ckpt_doctor.sources.live import connect  # imports kubernetes: only here
    from ckpt_doctor.watch.http import parse_listen
    from ckpt_doctor.watch.jlog import JsonLog
    from ckpt_doctor.watch.watcher import Watcher, WatchOptions

    if args.all_namespaces and args.namespace:
        raise UsageError("give either -n NAMESPACE or -A/--all-namespaces, not both")
    parse_listen(args.listen)  # a bad address is a usage error before any request
    log = JsonLog(level=args.log_level)
    opts = WatchOptions(
        listen=args.listen,
        debounce=args.debounce,
        max_delay=max(args.max_delay, args.debounce),
        workers=args.workers,
        log_workers=args.concurrency,
        head_bytes=args.log_bytes,
        tail_bytes=args.log_bytes,
        watch_seconds=args.watch_timeout,
        emit_events=args.emit_events,
        version_flag=args.trainer_version,
        signature_dirs=args.signatures,
    )
    cluster = connect(args.namespace, args.context, args.kubeconfig, args.request_timeout,
                      pool=4 * (args.workers * args.concurrency + 8))  # fmt: skip
    ns = None if args.all_namespaces else cluster.namespace
    watcher = Watcher(cluster, ns, args.selector, opts, log)
    stopped = threading.Event()

    def on_signal(signum: int, _frame: Any) -> None:
        log.info("stopping", signal=signal.Signals(signum).name)
        stopped.set()
        watcher.stop_event.set()
        watcher.pending.wake.set()

    from ckpt_doctor.signals import handled

    with handled((signal.SIGTERM, signal.SIGINT), on_signal):
        try:
            watcher.start()
            log.info("watching", scope=ns or "all namespaces", selector=args.selector, readOnly=not args.emit_events,
                     debounce=opts.debounce, **_simulated(cluster))  # fmt: skip
            watcher.run(until=stopped.is_set)
        finally:
            watcher.stop()
    log.info("stopped")
    return 0
