"""Python tracebacks in a log, read as typed values: the exception's type and message, the frames, the
program's own frame that led to the raise.

The log reader (facts/logs.py) finds each `Traceback (most recent call last):` header in its keyword
pass and hands the lines after it to `read`, which walks them once: `File "...", line N, in fn` frames
(each with the source line under it, when Python showed one, and the `^^^^` markers of 3.11+ skipped),
then the exception line at the header's own indentation (`torch.OutOfMemoryError: CUDA out of memory.`,
`KeyboardInterrupt`). Prefixes a setup adds to every line (kubectl timestamps, `[rank0]:`, a logger's
format) are peeled off by the reader's own normaliser, and indentation is measured after them, so a
traceback reads the same under any of them. Reading stops at the exception line, at the next header, at
a line that is none of these, or after `MAX_LINES` lines / `MAX_BYTES` bytes: the walk is linear in the
bytes it covers, and tracebacks never overlap.

A frame is the *library's* when its file lives in `site-packages`/`dist-packages`, in the standard
library (`lib/pythonX.Y/`), in a frozen module, or is a console script of an environment's `bin/`
(`/opt/venv/bin/torchrun`); otherwise it is the *program's*. `Traceback.program_frame` is the innermost
program frame: the line of the program that called into the library that raised (issue 19: DCP's
`CheckpointException` raised inside `torch.distributed.checkpoint`'s load, reached from the program's
`load_checkpoint`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

HEADER = b"Traceback (most recent call last):"
MAX_LINES = 400  # lines of one traceback walked at most
MAX_BYTES = 64 * 1024  # and bytes
MAX_FRAMES = 64  # frames kept (the outermost and innermost when there are more)
_FRAME = re.compile(rb'File "(?P<file>[^"\r\n]{1,1024})", line (?P<line>\d{1,9})(?:, in (?P<fn>[^\s\r\n]{1,256}))?')
_EXC = re.compile(rb"(?P<type>(?:[A-Za-z_]\w{0,127}\.){0,16}[A-Za-z_]\w{0,127})(?::(?: (?P<msg>[^\r\n]*))?)?\s*$")
_CARETS = re.compile(rb"[\s~^]+$")
_LIB = re.compile(r"/(?:site|dist)-packages/|/lib/python\d+(?:\.\d+)?/|^<frozen |/bin/[^/.]+$|^<[a-z_]+>$")
_CHAINED = (
    (b"During handling of the above exception, another exception occurred:", "during"),
    (b"The above exception was the direct cause of the following exception:", "cause"),
)


@dataclass(frozen=True)
class Frame:
    file: str
    line: int
    function: str
    code: str = ""  # the source line Python showed under it

    @property
    def library(self) -> bool:
        return bool(_LIB.search(self.file))

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}" + (f" in {self.function}" if self.function else "")
        return where + (f": {self.code}" if self.code else "")


@dataclass
class Traceback:
    """One traceback; `exc_type` is "" when the log ends (or the window ends) before its exception line."""

    frames: list[Frame] = field(default_factory=list)
    exc_type: str = ""
    message: str = ""
    chained: str = ""  # "during" / "cause": it followed another traceback in the same chain
    exc_offset: int = -1  # where its exception line starts in the window (-1: not seen)
    end: int = 0  # where the walk stopped in the window
    frames_cut: int = 0  # frames dropped from the middle of a very deep stack

    @property
    def exception(self) -> str:
        """`ExcType: message` as Python printed it (or the type alone)."""
        return f"{self.exc_type}: {self.message}" if self.message else self.exc_type

    @property
    def raised_in(self) -> Frame | None:
        """The innermost frame: where the exception was raised."""
        return self.frames[-1] if self.frames else None

    @property
    def program_frame(self) -> Frame | None:
        """The innermost frame of the program's own code (None: only library frames were shown)."""
        return next((f for f in reversed(self.frames) if not f.library), None)

    def through(self, *names: str) -> bool:
        """Whether a frame's function is one of `names` (`load_state`, `load_checkpoint`, ...)."""
        return any(f.function in names for f in self.frames)

    def summary(self) -> str:
        """One line for people: the exception and the program's frame that led to it."""
        pf = self.program_frame
        where = f" (from {pf.file}:{pf.line} in {pf.function}{': ' + pf.code if pf.code else ''})" if pf else ""
        return (self.exception or "a traceback without its exception line") + where


def _lines(raw: bytes, pos: int, stop: int) -> Iterator[tuple[int, int]]:
    """(start, end) of the physical lines in raw[pos:stop], at most MAX_LINES, found as the walk asks."""
    n = 0
    while pos < stop and n < MAX_LINES:
        nl = raw.find(b"\n", pos, stop)
        end = stop if nl < 0 else nl
        yield pos, end
        n += 1
        pos = end + 1


Peel = Callable[[bytes], tuple[int, bytes]]  # a line -> (its indentation after its prefixes, its text)


def _indent(seg: bytes, peel: Peel) -> tuple[int, bytes]:
    return peel(seg.rstrip(b"\r\n \t"))


def read(raw: bytes, header_start: int, peel: Peel, limit: int | None = None) -> Traceback:
    """The traceback whose header line starts at `header_start` in `raw` (one window of a log). `peel`
    strips a line's prefixes (the log reader's normaliser) and says how far what is left is indented."""
    tb = Traceback()
    stop = min(len(raw), limit if limit is not None else len(raw), header_start + MAX_BYTES)
    head_end = raw.find(b"\n", header_start, stop)
    head_end = stop if head_end < 0 else head_end
    base, _t = _indent(raw[header_start:head_end], peel)
    tb.chained = _chain_before(raw, header_start, peel)
    frames: list[Frame] = []
    tb.end = head_end
    expect_code = False
    for s, e in _lines(raw, head_end + 1, stop):
        ind, text = _indent(raw[s:e], peel)
        tb.end = e
        if not text:
            continue
        rel = ind - base
        if text.startswith(HEADER):  # the next traceback begins: this one ends without its exception line
            tb.end = s
            break
        if text.startswith(b"File "):
            m = _FRAME.match(text)
            if m is not None:
                frames.append(Frame(_dec(m["file"]), int(m["line"]), _dec(m["fn"] or b"")))
                expect_code = True
                continue
        if frames and rel >= 3 and expect_code:  # the source line under the frame
            if not _CARETS.match(text):
                f = frames[-1]
                frames[-1] = Frame(f.file, f.line, f.function, _dec(text[:300]))
            expect_code = not frames[-1].code  # carets may follow; a second code line may not
            continue
        if frames and rel >= 3 and _CARETS.match(text):
            continue
        if frames and rel >= 1 and text.startswith(b"[Previous line repeated"):
            continue
        if rel <= 1:
            m = _EXC.match(text[:4096])
            if m is not None and m["type"].split(b".")[-1][:1].isupper():
                tb.exc_type = _dec(m["type"])
                tb.message = _dec((m["msg"] or b"").strip()[:500])
                tb.exc_offset = s
            break
        break
    if len(frames) > MAX_FRAMES:
        keep = MAX_FRAMES // 2
        tb.frames_cut = len(frames) - 2 * keep
        frames = frames[:keep] + frames[-keep:]
    tb.frames = frames
    return tb


def _chain_before(raw: bytes, header_start: int, peel: Peel) -> str:
    """Whether the lines just before the header link it to a traceback before it."""
    before = raw[max(0, header_start - 512) : header_start].rstrip()
    last = before.rsplit(b"\n", 1)[-1]
    _i, text = _indent(last, peel)
    for line, kind in _CHAINED:
        if text.startswith(line):
            return kind
    return ""


def _dec(b: bytes) -> str:
    return b.decode("utf-8", "replace")
