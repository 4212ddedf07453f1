"""Progress of a long collection on stderr: a transient bar on a terminal, plain lines otherwise."""

from __future__ import annotations

import sys
import threading
import time
from typing import Any, TextIO

# -- progress ---------------------------------------------------------------------------------------


class Progress:
    """Progress on stderr for long collections: a transient bar on a terminal, plain lines otherwise.

    Nothing at all with `quiet`, and nothing for a collection that ends within `delay` seconds.
    """

    def __init__(self, quiet: bool = False, stream: TextIO | None = None, delay: float = 1.0) -> None:
        self.quiet = quiet
        self.stream = stream if stream is not None else sys.stderr
        self.delay = delay
        self.start = time.monotonic()
        self.stage_text = ""
        self.done = 0
        self.total = 0
        self._lock = threading.Lock()
        self._bar: Any = None
        self._task: Any = None
        self._last_line = 0.0
        self._tty = bool(getattr(self.stream, "isatty", lambda: False)())

    def stage(self, text: str, total: int = 0) -> None:
        with self._lock:
            self.stage_text, self.total, self.done = text, total, 0
            self._show(force=True)

    def advance(self, n: int = 1) -> None:
        with self._lock:
            self.done += n
            self._show()

    def note(self, text: str) -> None:
        """A line that stays (used by the recorder), unless quiet."""
        if self.quiet:
            return
        with self._lock:
            if self._bar is not None:
                self._bar.console.print(text)
            else:
                print(f"ckpt-doctor: {text}", file=self.stream, flush=True)

    def _show(self, force: bool = False) -> None:
        if self.quiet or time.monotonic() - self.start < self.delay:
            return
        if self._tty:
            if self._bar is None:
                from rich.console import Console
                from rich.progress import BarColumn, MofNCompleteColumn, SpinnerColumn, TextColumn
                from rich.progress import Progress as Bar

                console = Console(file=self.stream, stderr=self.stream is sys.stderr)
                self._bar = Bar(
                    SpinnerColumn(),
                    TextColumn("{task.description}"),
                    BarColumn(),
                    MofNCompleteColumn(),
                    console=console,
                    transient=True,
                )
                self._bar.start()
                self._task = self._bar.add_task(self.stage_text, total=self.total or None)
            self._bar.update(self._task, description=self.stage_text, completed=self.done, total=self.total or None)
            return
        now = time.monotonic()
        if force or now - self._last_line >= 2.0 or (self.total and self.done == self.total):
            self._last_line = now
            count = f" {self.done}/{self.total}" if self.total else ""
            print(f"ckpt-doctor: {self.stage_text}{count}", file=self.stream, flush=True)

    def close(self) -> None:
        with self._lock:
            if self._bar is not None:
                self._bar.stop()
                self._bar = None
