"""Run work once the first frame has reached the terminal, not merely been composed.

Textual's `Ready` (and `call_after_refresh`) come when a frame has been handed to the driver's
output thread, before that thread has written it: the frame is still in a queue. Whatever the app
starts then (the live collection importing the kubernetes client, the reader's results being
unpickled, the first screen's body being mounted) holds the interpreter's lock in turns of 5 ms
against the output thread, which needs it for every `write` and `flush`: on this project's loaded
2-core machine the frame reached the terminal 10-15 ms after `Ready` on the median and up to 52 ms
(9 runs each, live and `--bundle`), against 3 ms when the work waits. So `when_painted` waits, on a
timer that leaves the interpreter to the output thread, until the output queue has stayed empty for
one look.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from textual.app import App
from textual.lazy import Lazy
from textual.widget import Widget

EVERY = 0.004  # seconds between two looks at the output queue
LIMIT = 0.1  # seconds at most to wait: an app that keeps drawing must not hold its work back


def output_queue(app: App[Any]) -> Any | None:
    """The driver's queue of text not yet written, or None where there is none (headless and
    test drivers, which write nothing; Windows' driver)."""
    writer = getattr(app._driver, "_writer_thread", None)
    queue = getattr(writer, "_queue", None)
    return queue if callable(getattr(queue, "qsize", None)) else None


def when_painted(app: App[Any], callback: Callable[[], Any], limit: float = LIMIT) -> None:
    """Call `callback` on the app's thread once what the app has drawn so far is on the terminal
    (the output queue empty at two looks in a row: the first may catch the text being written),
    or after `limit` seconds, whichever is first. Without an output thread: on the next turn."""
    queue = output_queue(app)
    if queue is None:
        app.call_later(callback)
        return
    deadline = time.monotonic() + limit
    empty_before = False

    def look() -> None:
        nonlocal empty_before
        empty = queue.qsize() == 0
        if (empty and empty_before) or time.monotonic() >= deadline:
            timer.stop()
            app.call_later(callback)
        empty_before = empty

    timer = app.set_interval(EVERY, look, name="when-painted")


class AfterPaint(Lazy):
    """Textual's `Lazy`, mounting its widget once the first frame is on the terminal (`Lazy`
    mounts it right after the first refresh, while the frame is still in the output queue)."""

    async def mount_composed_widgets(self, widgets: list[Widget]) -> None:
        parent, widget = self.parent, self._replace_widget
        if not isinstance(parent, Widget):
            return

        async def mount() -> None:
            await parent.mount(widget, after=self)
            await self.remove()

        self.call_after_refresh(when_painted, self.app, mount)  # the first frame is queued after it
