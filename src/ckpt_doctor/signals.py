"""Signal handlers for the length of a with-block: the one way every verb installs and restores them.

A handler that raises (Ctrl-C's KeyboardInterrupt, the drill's Stopped) runs between any two bytecodes of the main
thread. Inside a request to the cluster that can be the middle of urllib3's own code: its connection pool takes
its lock in `Condition.__enter__` (Python code), and an exception right after the acquire leaves the lock taken
for ever; the next request on that pool (a drill's cleanup, deleting a reader pod) and the pool's finalizer at
exit then wait for ever. So every request runs inside `request()`, and a handler wrapped by `deferred` keeps a
signal that arrives meanwhile and acts on it when the request ends (at most its timeout later).
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any

Handler = Callable[[int, FrameType | None], Any]


@contextmanager
def handled(signums: Iterable[int], handler: Handler, *, keep_ignored: bool = False) -> Iterator[bool]:
    """Install `handler` for `signums` inside the block and put the previous handlers back on every way out.
    Python lets only the main thread install handlers: elsewhere nothing is installed (the caller's own handling
    applies) and the block gets False. With `keep_ignored`, a signal the process ignores (started under
    `nohup`, say) stays ignored."""
    old: dict[int, Any] = {}
    if threading.current_thread() is threading.main_thread():
        for s in signums:
            if keep_ignored and signal.getsignal(s) is signal.SIG_IGN:
                continue
            old[s] = signal.signal(s, handler)
    try:
        yield bool(old) or threading.current_thread() is threading.main_thread()
    finally:
        for s, prev in old.items():
            try:
                signal.signal(s, prev)
            except (ValueError, TypeError):  # a handler installed from C: nothing Python can put back
                pass


_in_request = 0  # requests to the cluster the main thread is inside
_pending: list[Callable[[], None]] = []  # what signals asked for meanwhile, in order


class _Request:
    """One request to the cluster (sources/live/client.py runs each inside one). Only the main thread's count:
    signal handlers run there."""

    __slots__ = ("counted",)

    def __init__(self) -> None:
        self.counted = False

    def __enter__(self) -> None:
        global _in_request
        if threading.current_thread() is threading.main_thread():
            _in_request += 1
            self.counted = True

    def __exit__(self, *exc: object) -> None:
        global _in_request
        if not self.counted:
            return
        _in_request -= 1
        while _in_request == 0 and _pending:
            _pending.pop(0)()  # may raise: a stop then replaces what the request raised


def request() -> _Request:
    """What a request to the cluster runs inside."""
    return _Request()


def deferred(handler: Handler) -> Handler:
    """`handler`, kept from running while the main thread is inside a request to the cluster: the signal is then
    handed to it when the request ends."""

    def run(signum: int, frame: FrameType | None) -> Any:
        if _in_request:
            _pending.append(lambda: handler(signum, None))
            return None
        return handler(signum, frame)

    return run


def _unwind(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt


# A handler that unwinds like Ctrl-C (KeyboardInterrupt), so that cleanups in `finally` run; never in the middle
# of a request to the cluster.
raise_interrupt: Handler = deferred(_unwind)
