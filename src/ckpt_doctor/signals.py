"""Signal handlers for the length of a with-block: the one way every verb installs and restores them."""

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


def raise_interrupt(signum: int, frame: FrameType | None) -> None:
    """A handler that unwinds like Ctrl-C (KeyboardInterrupt), so that cleanups in `finally` run."""
    raise KeyboardInterrupt
