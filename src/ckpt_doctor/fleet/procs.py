"""Diagnoses in worker processes, so a live fleet scan uses more than one core.

A diagnosis is CPU-bound Python (redaction, the rules, the output's document), so threads share one core.
The parent keeps the requests in flight: each collected TrainJob (its `Collected`: plain objects and log
windows) is queued for a worker and the collecting thread moves on to the next TrainJob. The worker builds,
redacts and diagnoses its Snapshot exactly as the parent would and sends back the outcome (row, output
part, exit code). Outcomes keep the order of the TrainJobs, so the output is byte for byte the
single-process one.

Workers are forked (they inherit the loaded modules and the caller's settings), right after the TrainJobs
are listed and before any thread of the scan starts, so no lock is copied while held. Where fork is not
available the scan diagnoses in its own process. Workers ignore SIGINT (Ctrl-C reaches the whole process
group; the parent decides) and leave when their parent is gone; on any way out of the scan the parent
cancels what is queued and ends the workers.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import threading
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from types import TracebackType
from typing import TYPE_CHECKING, Any

from ckpt_doctor.errors import InternalError

if TYPE_CHECKING:
    from ckpt_doctor.fleet.scan import Diagnoser, JobOutcome
    from ckpt_doctor.sources.live.client import Cluster
    from ckpt_doctor.sources.live.collector import Collected

MIN_JOBS_PER_PROCESS = 4  # fewer TrainJobs than this per process: forking costs more than it saves
STOPS = {signal.SIGINT, signal.SIGTERM}
QUEUED_PER_PROCESS = 4  # collected TrainJobs waiting for a worker, at most, per worker (memory)


def default_processes() -> int:
    """The CPUs this process may run on (its affinity, where the system tells it)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def usable(processes: int, jobs: int) -> int:
    """How many worker processes a scan of `jobs` TrainJobs gets when `processes` are allowed (0: none, diagnose
    in this process)."""
    if processes <= 1 or "fork" not in multiprocessing.get_all_start_methods():
        return 0
    return max(0, min(processes, jobs // MIN_JOBS_PER_PROCESS))


# -- in the worker -----------------------------------------------------------------------------------------

_diagnoser: Diagnoser | None = None


def _start(diagnoser: Diagnoser, parent: int) -> None:
    global _diagnoser
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # not the parent's handler: its SIGTERM ends a worker at once
    if hasattr(signal, "pthread_sigmask"):  # forked while the parent held them back
        signal.pthread_sigmask(signal.SIG_UNBLOCK, STOPS)
    _diagnoser = diagnoser
    threading.Thread(target=_orphaned, args=(parent,), name="ckpt-fleet-parent", daemon=True).start()
    from ckpt_doctor.facts.logs import load_signatures
    from ckpt_doctor.sources.live.collector import build_snapshot  # noqa: F401  (imported while the parent lists)

    if diagnoser._signatures is None:
        try:
            diagnoser._signatures = load_signatures(diagnoser.signature_dirs)
        except Exception:  # each diagnosis reads them again and says why, as in one process
            diagnoser._signatures = None


def _orphaned(parent: int) -> None:
    """End this worker once its parent is gone (killed with no chance to end it): no orphans left behind."""
    ev = threading.Event()
    while not ev.wait(0.5):
        if os.getppid() != parent:
            os._exit(1)


def _noop() -> None:
    return None


def _diagnose(out: Collected, cluster: Cluster, namespace: str, name: str, redact: bool) -> JobOutcome:
    from ckpt_doctor.fleet.scan import diagnose_collected

    assert _diagnoser is not None
    return diagnose_collected(_diagnoser, out, cluster, namespace, name, redact)


# -- in the parent -----------------------------------------------------------------------------------------


class Pool:
    """`processes` forked workers that turn a collected TrainJob into its outcome."""

    def __init__(self, diagnoser: Diagnoser, processes: int) -> None:
        ctx = multiprocessing.get_context("fork")
        # Ctrl-C and SIGTERM wait until the workers are up: raised in the middle of a fork (in an at-fork hook) the
        # interrupt is lost, and half-started workers would outlive the scan
        held = signal.pthread_sigmask(signal.SIG_BLOCK, STOPS) if hasattr(signal, "pthread_sigmask") else None
        try:
            self._pool = ProcessPoolExecutor(processes, mp_context=ctx, initializer=_start,
                                             initargs=(diagnoser, os.getpid()))  # fmt: skip
            # with fork, the first submit starts every worker at once, before the scan's threads exist
            self._pool.submit(_noop).result()
        except BrokenProcessPool:
            raise InternalError("the diagnosis worker processes could not start") from None
        finally:
            if held is not None:
                signal.pthread_sigmask(signal.SIG_SETMASK, held)
        self._room = threading.Semaphore(QUEUED_PER_PROCESS * processes)
        self._closed = False

    def submit(self, out: Collected, cluster: Cluster, namespace: str, name: str, redact: bool) -> Future[JobOutcome]:
        """Queue one collected TrainJob's diagnosis; waits while QUEUED_PER_PROCESS per worker are queued or
        running (each holds its collection in memory)."""
        self._room.acquire()
        if self._closed:
            self._room.release()  # wake the next waiter too
            raise RuntimeError("the scan was stopped")
        try:
            fut: Future[JobOutcome] = self._pool.submit(_diagnose, out, cluster, namespace, name, redact)
        except BaseException:
            self._room.release()
            raise
        fut.add_done_callback(lambda _f: self._room.release())
        return fut

    @staticmethod
    def result(fut: Future[JobOutcome]) -> JobOutcome:
        try:
            return fut.result()
        except BrokenProcessPool:
            raise InternalError("a diagnosis worker process ended unexpectedly") from None

    def __enter__(self) -> Pool:
        return self

    def __exit__(self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None) -> None:
        if et is None:
            self._pool.shutdown(wait=True)
            return
        self.terminate()

    def terminate(self) -> None:
        """Cancel what is queued and end the workers now (Ctrl-C, SIGTERM, an error)."""
        self._closed = True
        self._room.release()  # a thread waiting for room wakes, sees it closed, and wakes the next one
        procs: dict[int, Any] = dict(getattr(self._pool, "_processes", None) or {})
        manager: threading.Thread | None = getattr(self._pool, "_executor_manager_thread", None)
        self._pool.shutdown(wait=False, cancel_futures=True)
        for p in procs.values():
            if p.is_alive():
                p.terminate()
        for p in procs.values():
            p.join(5)
        # the pool's manager thread ends once it sees its workers gone. Wait for it: on Python 3.11 interpreter
        # exit wakes a manager still running through a pipe that thread may be closing at that moment, and prints
        # "Exception ignored ... OSError: [Errno 9] Bad file descriptor" after our one-line "interrupted"
        if manager is not None and manager is not threading.current_thread():
            manager.join(5)
