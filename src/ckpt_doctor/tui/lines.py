"""Line sources for the line view: a log file of any size, bounded log windows, or plain text.

A log file is never read whole. `FileLines.index()` (run in a worker thread) walks the file in
blocks that end on a newline and records only where each block starts and which line it begins
with: a few thousand numbers for gigabytes of log. Reading a line decodes just its block, and a
small cache keeps the blocks on screen. No Textual here.
"""

from __future__ import annotations

import os
import threading
from bisect import bisect_right
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path

from ckpt_doctor.snapshot import LogRef

BLOCK = 256 * 1024
MAX_BLOCK = 4 * 1024 * 1024  # a "line" longer than this is cut into several
CACHED_BLOCKS = 32


def clean(line: str) -> str:
    """A raw log line without colour codes and without the CR of a CRLF ending."""
    if "\x1b" in line:
        from ckpt_doctor.facts.logs import ANSI  # the engine's own definition of a colour code

        line = ANSI.sub("", line)
    return line[:-1] if line.endswith("\r") else line


def split_text(text: str) -> list[str]:
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [clean(x) for x in lines]


class LineSource:
    """Numbered lines. `count()` may grow while a file is being indexed."""

    title: str = ""
    complete: bool = True

    def count(self) -> int:
        raise NotImplementedError

    def lines(self, start: int, n: int) -> list[str]:
        raise NotImplementedError

    def number(self, i: int) -> str:
        """The gutter label of line `i` (0-based): its 1-based number, or '' when unknown."""
        return str(i + 1)

    def index_of(self, line_number: int) -> int:
        """The 0-based index of 1-based `line_number` as the engine counts lines."""
        return line_number - 1

    def index(self, stop: Callable[[], bool] = lambda: False, progress: Callable[[], None] | None = None) -> None:
        """Build whatever index reading needs (no-op for text in memory)."""
        return None

    def widest(self) -> int | None:
        """The width of the widest line when known without reading everything (else the view
        learns it from the lines it draws)."""
        return None

    def find(
        self, needle: str, start: int, backward: bool = False, stop: Callable[[], bool] = lambda: False
    ) -> int | None:
        """The first line at or after `start` (or at or before, backward) containing `needle`, any case."""
        n = needle.lower()
        total = self.count()
        if total == 0 or not n:
            return None
        step = 256
        if backward:
            hi = min(start, total - 1)
            while hi >= 0 and not stop():
                lo = max(0, hi - step + 1)
                chunk = self.lines(lo, hi - lo + 1)
                for k in range(len(chunk) - 1, -1, -1):
                    if n in chunk[k].lower():
                        return lo + k
                hi = lo - 1
            return None
        i = max(0, start)
        while i < total and not stop():
            chunk = self.lines(i, step)
            if not chunk:
                break
            for k, line in enumerate(chunk):
                if n in line.lower():
                    return i + k
            i += len(chunk)
        return None

    def close(self) -> None:
        return None


class TextLines(LineSource):
    def __init__(self, lines: list[str], title: str = "") -> None:
        self._lines = lines
        self.title = title

    def count(self) -> int:
        return len(self._lines)

    def lines(self, start: int, n: int) -> list[str]:
        return self._lines[max(0, start) : max(0, start) + n]

    def widest(self) -> int | None:
        return max((len(seg.expandtabs(4)) for line in self._lines for seg in line.split("\r")), default=0)


class WindowLines(LineSource):
    """A log known only by its head and tail windows (a live collection keeps just those)."""

    def __init__(self, ref: LogRef, window: int = 4 * 1024 * 1024, title: str = "") -> None:
        self.title = title
        size = ref.size
        head = ref.read_head(window)
        self._head = split_text(head.decode("utf-8", "replace"))
        self._tail: list[str] = []
        self._gap = ""
        if not ref.is_whole(window):
            tail = ref.read_tail(window)
            cut = tail.find(b"\n")
            tail = tail[cut + 1 :] if cut != -1 else tail
            self._tail = split_text(tail.decode("utf-8", "replace"))
            missing = f"{size - len(head) - len(tail):,} bytes" if size else "the middle"
            self._gap = f"⋯ {missing} of this log were not collected ⋯"
        self._all = self._head + ([self._gap, *self._tail] if self._gap else [])  # joined once: lines() is per row

    def count(self) -> int:
        return len(self._all)

    def lines(self, start: int, n: int) -> list[str]:
        return self._all[max(0, start) : max(0, start) + n]

    def number(self, i: int) -> str:
        return str(i + 1) if i < len(self._head) else ""


class FileLines(LineSource):
    """A log file on disk, indexed by newline-aligned blocks."""

    def __init__(self, path: Path, title: str = "") -> None:
        self.path = Path(path)
        self.title = title
        self._fd = os.open(self.path, os.O_RDONLY)
        self._starts: list[int] = []  # byte offset where each block starts
        self._firsts: list[int] = []  # index of the first line of each block
        self._ends: list[int] = []
        self._partial = False  # the last block ends without a newline (file may still grow)
        self._lines = 0
        self._end = 0
        self._lock = threading.Lock()
        self._cache: OrderedDict[int, list[str]] = OrderedDict()
        self.complete = False
        self.size = 0

    def count(self) -> int:
        return self._lines

    def index(self, stop: Callable[[], bool] = lambda: False, progress: Callable[[], None] | None = None) -> None:
        """Index the file from where the last call stopped (so a growing log can be followed)."""
        self.complete = False
        with self._lock:
            if self._partial:  # re-read the unterminated last line: it may have grown
                self._end, self._lines = self._starts.pop(), self._firsts.pop()
                self._ends.pop()
                self._cache.pop(len(self._starts), None)
                self._partial = False
        self.size = os.fstat(self._fd).st_size
        pos = self._end
        while pos < self.size and not stop():
            data = os.pread(self._fd, BLOCK, pos)
            if not data:
                break
            cut = data.rfind(b"\n")
            while cut == -1 and len(data) < MAX_BLOCK and pos + len(data) < self.size:
                more = os.pread(self._fd, BLOCK, pos + len(data))
                if not more:
                    break
                data += more
                cut = data.rfind(b"\n")
            partial = cut == -1 and pos + len(data) >= self.size
            block = data if cut == -1 else data[: cut + 1]
            n = block.count(b"\n") + (0 if block.endswith(b"\n") else 1)
            with self._lock:
                self._starts.append(pos)
                self._firsts.append(self._lines)
                self._ends.append(pos + len(block))
                self._partial = partial
                self._lines += n
                self._end = pos + len(block)
            pos += len(block)
            if progress is not None:
                progress()
        self.complete = not stop()

    def _block_lines(self, b: int) -> list[str]:
        with self._lock:
            hit = self._cache.get(b)
            if hit is not None:
                self._cache.move_to_end(b)
                return hit
            start, end = self._starts[b], self._ends[b]
        data = os.pread(self._fd, end - start, start)
        lines = split_text(data.decode("utf-8", "replace"))
        with self._lock:
            self._cache[b] = lines
            while len(self._cache) > CACHED_BLOCKS:
                self._cache.popitem(last=False)
        return lines

    def lines(self, start: int, n: int) -> list[str]:
        out: list[str] = []
        i = max(0, start)
        while len(out) < n and i < self._lines:
            b = bisect_right(self._firsts, i) - 1
            if b < 0:
                break
            blk = self._block_lines(b)
            j = i - self._firsts[b]
            if j >= len(blk):
                break
            take = blk[j : j + n - len(out)]
            out += take
            i += len(take)
        return out

    def close(self) -> None:
        """Idempotent: the view and the screen that keeps sources may both close one (a second
        os.close could close a file opened since under the same number)."""
        fd, self._fd = self._fd, -1
        if fd >= 0:
            try:
                os.close(fd)
            except OSError:
                pass


def source_for(ref: LogRef, title: str = "") -> LineSource:
    """The cheapest faithful source for a log: its file when there is one, else its windows."""
    if ref.path is not None and Path(ref.path).is_file():
        return FileLines(Path(ref.path), title)
    return WindowLines(ref, title=title)
