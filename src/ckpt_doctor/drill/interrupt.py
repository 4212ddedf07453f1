"""Ctrl-C, SIGTERM and "abort" stop a drill; none of them may stop its cleanup.

`Stopped` is raised in the drill's thread: by the signal handlers (the command line, main thread) or by
the runner itself when its stop event is set (the app, or the abort answer). While `shielded()` (the
cleanup), a signal is held and announced instead; a second one abandons the cleanup, and the drill's
marks tell `ckpt-doctor drill --cleanup` what is left.

A signal that arrives while the main thread is inside a request to the cluster waits for that request to end
(at most its timeout; ckpt_doctor/signals.py `deferred`): raised in the middle of the client's code, the
exception could leave the connection pool's lock taken for ever, and the cleanup's first request (or the pool's
finalizer at exit) would block on it.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any

from ckpt_doctor.signals import deferred

NAMES = {signal.SIGINT: "SIGINT", signal.SIGTERM: "SIGTERM"}
EXIT = {"SIGINT": 130, "SIGTERM": 143, "abort": 130}


class Stopped(BaseException):
    """The drill was asked to stop (a signal, or the user's abort); its verdict is "stopped".

    A BaseException, like KeyboardInterrupt: no `except Exception` on the way (an HTTP call, a reader)
    may turn it into an error."""

    def __init__(self, why: str = "abort") -> None:
        super().__init__(why)
        self.why = why

    @property
    def exit_code(self) -> int:
        return EXIT.get(self.why, 130)


class Abandoned(BaseException):
    """A second signal during cleanup: give up cleaning (the marks stay for `drill --cleanup`)."""


class Interrupts:
    """Turns SIGINT and SIGTERM into Stopped (main thread only); holds them while shielded."""

    def __init__(self, announce: Callable[[str], None] | None = None) -> None:
        self.announce = announce or (lambda _t: None)
        self.shielded = False
        self.held: list[str] = []
        self.first: str | None = None
        self._old: dict[int, Any] = {}

    def _handler(self, signum: int, frame: FrameType | None) -> None:
        name = NAMES.get(signal.Signals(signum), str(signum))
        self.first = self.first or name
        if self.shielded:
            self.held.append(name)
            if len(self.held) >= 2:
                raise Abandoned(name)
            self.announce(f"{name}: finishing the cleanup first (send it again to abandon it, then run "
                          "`ckpt-doctor drill --cleanup`)")
            return
        raise Stopped(name)

    def __enter__(self) -> Interrupts:
        if threading.current_thread() is threading.main_thread():
            handler = deferred(self._handler)
            for s in NAMES:
                self._old[s] = signal.signal(s, handler)
        return self

    def __exit__(self, *exc: object) -> None:
        for s, old in self._old.items():
            signal.signal(s, old)
        self._old.clear()

    @contextmanager
    def shield(self) -> Iterator[None]:
        was = self.shielded
        self.shielded = True
        try:
            yield
        finally:
            self.shielded = was


class NoInterrupts(Interrupts):
    """For a drill that runs in a worker thread (the app): stopping goes through the runner's stop event."""

    def __enter__(self) -> Interrupts:
        return self
