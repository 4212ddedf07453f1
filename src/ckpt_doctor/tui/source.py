"""Where the app's data comes from: an offline bundle or the live cluster.

Every method here blocks and is called from a worker thread. A bundle is read and diagnosed by a
child process (`bundleproc`) that can start before Textual does; the live source module, and with
it the kubernetes client, is imported on first use in a worker thread (live collection waits on the
network, which threads do well), so the first frame never waits for either.
"""

from __future__ import annotations

import gc
import os
import pickle
import signal
import subprocess
import sys
import tempfile
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from ckpt_doctor.tui.target import Target

if TYPE_CHECKING:  # imported where used: `run()` starts the reader before anything heavy loads
    from ckpt_doctor.tui.model import JobRow, View

IDLE_NEEDED = 0.75  # of a processor, idle beside the starting app, for a forked reader to start at once


def head_start(window: float = 0.04) -> bool:
    """Whether a reader forked before the app starts may begin at once (called in that child).

    Reading beside the app's start helps only on a processor the app does not need: on a busy
    machine the two would share one, and the first frame would wait for part of the reading
    (2.2-2.8x a bare Textual app's start on a loaded 2-core machine, against 1.4x for the app
    without a reader). So the child looks at how idle the processors are while the app starts
    (/proc/stat over `window` seconds; elsewhere the load average) and, with less than
    IDLE_NEEDED of one to spare, waits for the app's first question, which comes after its first
    frame.
    """
    cpus = os.cpu_count() or 1
    try:
        idle0, total0 = _cpu_times()
        time.sleep(window)
        idle1, total1 = _cpu_times()
    except (OSError, ValueError, IndexError):
        try:
            return cpus - os.getloadavg()[0] >= 1 + IDLE_NEEDED  # the app's processor and the reader's
        except (AttributeError, OSError):
            return True
    if total1 <= total0:
        return True
    return (idle1 - idle0) / (total1 - total0) * cpus >= IDLE_NEEDED


def _cpu_times() -> tuple[int, int]:
    """(idle, total) clock ticks of all processors since boot, from the first line of /proc/stat."""
    with open("/proc/stat", "rb") as f:
        ticks = [int(x) for x in f.readline().split()[1:9]]  # user nice system idle iowait irq softirq steal
    return ticks[3] + ticks[4], sum(ticks)


class Loader(ABC):
    """Lists TrainJobs and diagnoses one of them; called from worker threads only."""

    target: Target

    @abstractmethod
    def list_jobs(self) -> list[JobRow]: ...

    @abstractmethod
    def load(self, key: str) -> View:
        """The diagnosis of `key`: possibly a preview (`complete` False), see `load_complete`."""

    def load_complete(self, key: str) -> View:
        """The diagnosis of `key` with everything (objects, events, the Diagnosis itself)."""
        return self.load(key)

    def start(self) -> None:
        """Begin reading early, if this source can (called before the app starts)."""
        return None

    def reload(self) -> None:
        """Forget what was read, so the next load sees the source as it is now."""
        return None

    def verdict(self, key: str) -> JobRow:
        """The picker row of one TrainJob with its verdict filled in."""
        return self.load(key).row

    def close(self) -> None:
        return None


_gc_lock = threading.Lock()
_gc_holds = 0


@contextmanager
def quiet_gc() -> Iterator[None]:
    """No cyclic garbage collection while a big diagnosis is built or unpickled, then freeze it.

    A View of a 512-pod TrainJob is a few million objects; Python's collector would walk them all
    again and again while they are created (and on every later full collection), each walk a pause
    of 100-300 ms on the screen. Frozen, they are left to reference counting, which frees them
    when a refresh replaces them (they hold no reference cycles).
    """
    hold_gc()
    try:
        yield
    finally:
        release_gc()


def hold_gc() -> None:
    """Pause the cyclic collector until the matching `release_gc` (holds nest, across threads)."""
    global _gc_holds
    with _gc_lock:
        _gc_holds += 1
        gc.disable()


def release_gc() -> None:
    """End one `hold_gc`; the last to end freezes what was made meanwhile and resumes collecting."""
    global _gc_holds
    with _gc_lock:
        _gc_holds -= 1
        if _gc_holds == 0:
            gc.freeze()
            gc.enable()


class StartupGc:
    """No cyclic collection while the app starts, up to its first frame on the terminal.

    Textual's import and the first screen make hundreds of thousands of objects and next to no
    garbage; the collector walked them over and over, 10-12 ms of a 130 ms import on this project's
    machine. Held once, released once (by the app when its first frame is painted, or by whoever
    started it when the app ends first); then frozen, as a big diagnosis is.
    """

    def __init__(self) -> None:
        hold_gc()
        self._held = True

    def release(self) -> None:
        if self._held:
            self._held = False
            release_gc()


def _input_error(message: str) -> Exception:
    from ckpt_doctor.errors import InputError

    return InputError(message)


class Superseded(Exception):
    """The reading a worker waited on was stopped (a refresh started a new one, or the app is
    closing): the worker drops its result."""


class _Run:
    """One child process reading the bundle, and what it has sent so far.

    Before the app starts (one thread; `ckpt-doctor tui` starts it before even importing Textual)
    the child is a fork and skips the interpreter start; later (threads running, a refresh) it is a
    fresh interpreter. What it sends is unpickled only once a consumer asks (`wait`), so the app's
    first frame never shares the GIL with that work. On a busy machine a fork does not even read
    before that first question, which comes after the first frame (`head_start`).
    """

    _go: int | None = None  # a fork may wait to read until this pipe gets a byte (see `_release`)

    def __init__(self, target: Target, extracted: Path | None, fork: bool = False) -> None:
        self.stderr: IO[bytes] = tempfile.TemporaryFile()
        self.proc: subprocess.Popen[bytes] | None = None
        self.pid: int | None = None
        if fork:
            self.stdout = self._fork(target, extracted)
        else:
            argv = [sys.executable, "-m", "ckpt_doctor.tui.bundleproc", str(target.bundle)]
            if extracted is not None:
                argv += ["--dir", str(extracted)]
            if target.trainjob:
                argv += ["--first", target.trainjob]
            if target.trainer_version:
                argv += ["--trainer-version", target.trainer_version]
            for d in target.signatures:
                argv += ["--signatures", str(d)]
            self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=self.stderr)
            assert self.proc.stdout is not None
            self.stdout = self.proc.stdout
        self._listen()

    def _listen(self) -> None:
        """The state the child's frames fill in, and the thread that reads them from `stdout`."""
        self.cond = threading.Condition()
        self.rows: list[JobRow] | None = None
        self.views: dict[str, View] = {}
        self.errors: dict[str, str] = {}
        self.aliases: dict[str, str] = {}  # NAME → NAMESPACE/NAME
        self.fatal: str | None = None
        self.finished = False
        self.asked = threading.Event()  # a consumer waits for a result: frames may be unpickled
        self.stopped = False
        self._backlog: list[bytes] = []  # frames read, not yet unpickled
        self._parts: dict[str, tuple[dict[str, Any], list[Any]]] = {}  # objects and events before a "full"
        self._taking = threading.Lock()
        threading.Thread(target=self._read, name="bundle-reader", daemon=True).start()

    def _fork(self, target: Target, extracted: Path | None) -> IO[bytes]:
        r, w = os.pipe()
        go_r, go_w = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child: write frames, never return into the parent's code
            code = 1
            try:
                os.close(r)
                null = os.open(os.devnull, os.O_RDWR)
                os.dup2(null, 0)
                os.dup2(null, 1)
                os.dup2(self.stderr.fileno(), 2)
                os.close(go_w)
                if not head_start() and not os.read(go_r, 1):  # closed without a question: the app is gone
                    os._exit(0)
                os.close(go_r)
                from ckpt_doctor.tui.bundleproc import serve

                with os.fdopen(w, "wb") as out:
                    assert target.bundle is not None
                    serve(target.bundle, extracted, target.trainjob, out, target.trainer_version, target.signatures)
                code = 0
            except BrokenPipeError:
                code = 0
            except BaseException:
                import traceback

                traceback.print_exc()
            finally:
                os._exit(code)
        os.close(w)
        os.close(go_r)
        self._go = go_w
        self.pid = pid
        return os.fdopen(r, "rb")

    def _release(self, go: bool) -> None:
        """Let a waiting child start reading (`go`), or let it exit (the pipe closes without a byte)."""
        with self.cond:
            fd, self._go = self._go, None
        if fd is None:
            return
        try:
            if go:
                os.write(fd, b"g")
        except OSError:  # the child is gone already
            pass
        finally:
            os.close(fd)

    def _read(self) -> None:
        try:
            while True:
                head = self.stdout.read(8)
                if len(head) < 8:
                    break
                data = self.stdout.read(int.from_bytes(head, "big"))
                with self._taking:
                    self._backlog.append(data)
                if self.asked.is_set():
                    self._take()
            with self._taking:  # waits for a consumer still applying the last frame it took
                pending = bool(self._backlog)
            if pending:  # the stream ended before anyone asked: hold the frames until someone does
                self.asked.wait()
                self._take()
        except Exception as e:  # a truncated or garbled stream: say so instead of hanging
            self._garbled(e)
        try:
            self._wait()
            with self.cond:
                if self.rows is None and self.fatal is None and not self.stopped:
                    tail = self._stderr_tail()
                    self.fatal = "reading the bundle failed" + (": " + " ".join(tail) if tail else "")
        finally:  # whatever happened (even a stop() mid-read), waiters must wake up
            with self.cond:
                self.finished = True
                self.cond.notify_all()
            self.stderr.close()

    def _take(self, enough: Callable[[], bool] = lambda: False) -> None:
        """Unpickle the frames read so far, in order, until `enough()` holds, from whichever thread
        gets here (the reader, or a consumer in `wait`).

        Not before someone asks for a result: unpickling imports the engine's modules and holds the
        GIL, which would delay the app's first frame; the bytes wait in `_backlog` until then. One
        frame per hold of the lock, so a consumer that needs only the rows or the small preview
        does not wait for every full View behind it; between two frames other threads (the
        screen's) get the GIL, and no frame is big (see bundleproc)."""
        while not enough():
            with self._taking:
                if not self._backlog or self.stopped:
                    return
                data = self._backlog.pop(0)
                with quiet_gc():
                    frame = pickle.loads(data)
                with self.cond:
                    if frame[0] == "rows":
                        self.rows = frame[1]
                    elif frame[0] == "view":
                        self.views.setdefault(frame[1], frame[2])
                    elif frame[0] == "objects":
                        self._parts.setdefault(frame[1], ({}, []))[0].update(frame[2])
                    elif frame[0] == "events":
                        self._parts.setdefault(frame[1], ({}, []))[1].extend(frame[2])
                    elif frame[0] == "full":
                        view = frame[2]
                        if frame[1] in self._parts:  # the parts sent before it, put back in order
                            view.objects, view.events = self._parts.pop(frame[1])
                        self.views[frame[1]] = view
                    elif frame[0] == "error":
                        self.errors[frame[1]] = frame[2]
                    elif frame[0] == "alias":
                        self.aliases[frame[1]] = frame[2]
                    elif frame[0] == "fatal":
                        self.fatal = frame[1]
                    self.cond.notify_all()

    def _garbled(self, e: Exception) -> None:
        """A frame could not be read or unpickled: the first such error is the reading's fate."""
        with self.cond:
            self.fatal = self.fatal or f"reading the bundle failed: {type(e).__name__}: {e}"

    def _stderr_tail(self) -> list[str]:
        try:
            self.stderr.seek(0)
            return self.stderr.read().decode("utf-8", "replace").strip().splitlines()[-3:]
        except (OSError, ValueError):
            return []

    def wait(self, ready: Callable[[], bool]) -> None:
        """Until `ready()` holds; raises InputError when the reading failed, Superseded when stopped."""
        self._release(go=True)  # the first question comes after the first frame: a waiting child starts
        self.asked.set()
        try:
            self._take(enough=ready)  # frames that came before anyone asked
        except Exception as e:
            self._garbled(e)
        with self.cond:
            self.cond.wait_for(lambda: ready() or self.fatal is not None or self.finished or self.stopped)
            if self.stopped:
                raise Superseded("a newer reading of the bundle replaced this one")
            if self.fatal is not None:
                raise _input_error(self.fatal)

    def _wait(self) -> None:
        if self.proc is not None:
            self.proc.wait()
        elif self.pid is not None:
            try:
                os.waitpid(self.pid, 0)
            except ChildProcessError:
                pass

    def stop(self) -> None:
        with self.cond:  # waiters wake up and raise Superseded
            self.stopped = True
            self.cond.notify_all()
        self._release(go=False)
        self.asked.set()  # a reader holding frames for a consumer lets them go
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
        elif self.pid is not None:
            try:
                os.kill(self.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        # stderr is closed by the reader thread once it has finished with it


class BundleLoader(Loader):
    """A bundle directory or archive, read by a child process and re-read on every refresh."""

    def __init__(self, target: Target) -> None:
        assert target.bundle is not None
        self.target = target
        self._lock = threading.Lock()
        self._run: _Run | None = None
        self._archive: AbstractContextManager[Path] | None = None
        self._extracted: Path | None = None

    def start(self) -> None:
        """Start the child now (for a directory; an archive is extracted first, in the worker)."""
        assert self.target.bundle is not None
        if self.target.bundle.is_dir():
            self._current(fork=hasattr(os, "fork") and threading.active_count() == 1)

    def _current(self, fork: bool = False) -> _Run:
        with self._lock:
            if self._run is None:
                bundle = self.target.bundle
                assert bundle is not None
                if not bundle.is_dir() and self._extracted is None:
                    from ckpt_doctor.sources.bundle import bundle_dir

                    self._archive = bundle_dir(bundle)
                    self._extracted = self._archive.__enter__()
                self._run = _Run(self.target, self._extracted, fork=fork)
            return self._run

    def list_jobs(self) -> list[JobRow]:
        run = self._current()
        run.wait(lambda: run.rows is not None)
        return list(run.rows or [])

    def load(self, key: str) -> View:
        return self._wait_view(key, complete=False)

    def load_complete(self, key: str) -> View:
        return self._wait_view(key, complete=True)

    def _wait_view(self, key: str, complete: bool) -> View:
        run = self._current()

        def known() -> str | None:
            k = run.aliases.get(key, key)
            if key in run.errors or k in run.errors:
                return k
            view = run.views.get(k)
            return k if view is not None and (view.complete or not complete) else None

        run.wait(lambda: known() is not None)
        k = known() or key
        if k in run.views:
            return run.views[k]
        raise _input_error(run.errors.get(key) or run.errors.get(k) or f"TrainJob {key!r} is not in the bundle")

    def reload(self) -> None:
        with self._lock:
            old, self._run = self._run, None
            if old is not None:  # stop the child before its files disappear
                old.stop()
            if self._archive is not None:  # the archive may have been replaced: extract it again
                self._archive.__exit__(None, None, None)
                self._archive = self._extracted = None

    def close(self) -> None:
        self.reload()


class LiveLoader(Loader):
    """The cluster, through ckpt_doctor.sources.live (the only kubernetes importer)."""

    def __init__(self, target: Target) -> None:
        self.target = target

    def _flags(self) -> dict[str, Any]:
        t = self.target
        return {"context": t.context, "kubeconfig": t.kubeconfig, "timeout": t.timeout}

    def list_jobs(self) -> list[JobRow]:
        from ckpt_doctor.sources.live import list_trainjobs
        from ckpt_doctor.tui.model import job_row, snapshot_now

        now = snapshot_now({}, live=True)
        from ckpt_doctor.simulation import simulated

        searched: list[str] = []
        server: list[str] = []
        items = list_trainjobs(namespace=self.target.namespace, searched=searched, server=server, **self._flags())
        if searched:
            self.target.listed_in = searched[0]
        self.target.simulated = simulated(server[0] if server else None)
        return [job_row(raw, now) for raw in items]

    def load(self, key: str) -> View:
        from ckpt_doctor.pipeline import diagnose_snapshot
        from ckpt_doctor.sources.live import collect_live
        from ckpt_doctor.tui.model import build_view

        with quiet_gc():
            # unredacted like a bundle's screens (what leaves, the export and screenshots, is redacted); the
            # windows are spooled to a temporary file, not held in memory
            inspect = None
            if self.target.inspect:  # exec only: the app never makes a reader pod (collect asks on a terminal)
                from ckpt_doctor.sources.live.inspect import Inspect

                inspect = Inspect()
            snap = collect_live(key, namespace=self.target.namespace, quiet=True, redact=False, inspect=inspect,
                                **self._flags())  # fmt: skip
            name = (snap.meta.get("target") or {}).get("name") or None
            ns = (snap.meta.get("target") or {}).get("namespace")
            wanted = f"{ns}/{name}" if ns and name else (name or key)
            t = self.target
            return build_view(diagnose_snapshot(snap, wanted, t.trainer_version, list(t.signatures)))


def make_loader(target: Target) -> Loader:
    return BundleLoader(target) if target.bundle is not None else LiveLoader(target)
