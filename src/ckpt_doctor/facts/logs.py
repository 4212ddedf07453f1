"""What a container log says: signature matching over bounded head and tail windows.

Real logs are messy (tqdm carriage returns, ANSI colours, CRLF, invalid UTF-8, megabyte
lines). The scanner searches each window for the signatures' literal keywords first (C-speed
`str.find`), then applies the signature's regex to just the line around each hit, so the
cost is proportional to the window size, never to the whole log.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from ckpt_doctor.data import rules_dir
from ckpt_doctor.errors import InputError
from ckpt_doctor.snapshot import LogRef
from ckpt_doctor.yamlio import iter_documents

HEAD_BYTES = 128 * 1024
TAIL_BYTES = 128 * 1024
MAX_LINE = 2000
EVENT_KINDS = frozenset(
    {
        "resumed",
        "fresh_start",
        "saved",
        "save_started",
        "sigterm",
        "sigterm_flush",
        "disk_full",
        "resume_error",
        "partial_checkpoint",
        "progress",
        "oom",
        "finished",
        "overwrite_output",
        "worker_restart",
    }
)
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07")


@dataclass(frozen=True)
class Signature:
    id: str
    framework: str
    event: str
    keyword: str
    pattern: re.Pattern[str]


@dataclass
class LogEvent:
    kind: str
    signature: str
    framework: str
    text: str
    step: int | None = None
    total: int | None = None
    path: str | None = None
    line: int | None = None  # 1-based line in the log, when known
    window: str = "head"  # head | tail
    offset: int = 0  # position inside the window (for ordering)

    def evidence(self, ref: LogRef, attempt: int | None = None) -> dict[str, Any]:
        ev: dict[str, Any] = {
            "type": "log",
            "pod": ref.pod,
            "container": ref.container,
            "previous": ref.previous,
            "text": self.text,
        }
        if attempt is not None:
            ev["attempt"] = attempt
        if self.line is not None:
            ev["line"] = self.line
        return ev


@dataclass
class LogSummary:
    """The typed events found in one log, in order (head events before tail events)."""

    ref: LogRef
    events: list[LogEvent] = field(default_factory=list)
    binary: bool = False
    whole: bool = True  # False when the middle of the log was not read
    empty: bool = False

    def of(self, *kinds: str) -> list[LogEvent]:
        if len(kinds) == 1:  # the common case, indexed once per summary
            idx = self.__dict__.get("_by_kind")
            if idx is None or idx[0] != len(self.events):
                by: dict[str, list[LogEvent]] = {}
                for e in self.events:
                    by.setdefault(e.kind, []).append(e)
                idx = self.__dict__["_by_kind"] = (len(self.events), by)
            return idx[1].get(kinds[0], [])
        return [e for e in self.events if e.kind in kinds]

    def first(self, *kinds: str) -> LogEvent | None:
        return next((e for e in self.events if e.kind in kinds), None)

    def last(self, *kinds: str) -> LogEvent | None:
        return next((e for e in reversed(self.events) if e.kind in kinds), None)

    @property
    def frameworks(self) -> set[str]:
        return {e.framework for e in self.events if e.framework != "generic"}


def load_signatures(dirs: Iterable[Path] = ()) -> list[Signature]:
    """Signatures from the packaged `rules/signatures/` plus any extra directories."""
    return list(_packaged_signatures()) + [s for d in dirs for s in _read_dir(Path(d))]


@cache
def _packaged_signatures() -> tuple[Signature, ...]:
    return tuple(_read_dir(rules_dir() / "signatures"))


def _read_dir(d: Path) -> list[Signature]:
    if not d.is_dir():
        raise InputError("signature directory not found", str(d))
    out: list[Signature] = []
    for f in sorted(d.glob("*.y*ml")):
        for doc in iter_documents(f.read_text(encoding="utf-8"), str(f)):
            out.extend(_parse_file(doc, str(f)))
    return out


def _parse_file(doc: Any, where: str) -> list[Signature]:
    if not isinstance(doc, dict) or not isinstance(doc.get("signatures"), list):
        raise InputError("a signature file needs `framework:` and a `signatures:` list", where)
    fw = str(doc.get("framework") or Path(where).stem)
    sigs = []
    for i, s in enumerate(doc["signatures"]):
        if not isinstance(s, dict) or not all(k in s for k in ("id", "event", "keyword", "pattern")):
            raise InputError(f"signature #{i + 1} needs id, event, keyword and pattern", where)
        if s["event"] not in EVENT_KINDS:
            raise InputError(f"signature {s['id']}: unknown event {s['event']!r}", where)
        try:
            pat = re.compile(str(s["pattern"]))
        except re.error as e:
            raise InputError(f"signature {s['id']}: bad pattern: {e}", where) from None
        sigs.append(Signature(str(s["id"]), fw, str(s["event"]), str(s["keyword"]), pat))
    return sigs


def _decode(data: bytes) -> str:
    return ANSI.sub("", data.decode("utf-8", errors="replace"))


def _line_at(text: str, pos: int) -> tuple[int, str]:
    """(start, line text) of the physical line around `pos`; CR and LF both end a line."""
    start = max(text.rfind("\n", 0, pos), text.rfind("\r", 0, pos)) + 1
    ends = [e for e in (text.find("\n", pos), text.find("\r", pos)) if e != -1]
    end = min(ends) if ends else len(text)
    if end - start > MAX_LINE:
        lo = max(start, pos - MAX_LINE // 2)
        return lo, text[lo : min(end, lo + MAX_LINE)]
    return start, text[start:end]


def _scan_window(text: str, sigs: list[Signature], window: str, count_lines: bool) -> list[LogEvent]:
    found: dict[int, LogEvent] = {}  # keyed by line start: one event per line and signature kind
    for sig in sigs:
        progress = sig.event == "progress"
        positions: Iterable[int]
        if progress:
            positions = _edge_positions(text, sig.keyword, last=(window == "tail"))
        else:
            positions = _all_positions(text, sig.keyword)
        for pos in positions:
            start, line = _line_at(text, pos)
            m = sig.pattern.search(line)
            if m is None:
                continue
            key = start * 64 + hash(sig.event) % 64
            if key in found:
                continue
            gd = m.groupdict()
            ev = LogEvent(
                kind=sig.event,
                signature=sig.id,
                framework=sig.framework,
                text=line.strip(),
                step=int(gd["step"]) if gd.get("step") else None,
                total=int(gd["total"]) if gd.get("total") else None,
                path=gd.get("path") or None,
                window=window,
                offset=start,
            )
            if count_lines:
                ev.line = text.count("\n", 0, start) + 1
            found[key] = ev
    return sorted(found.values(), key=lambda e: e.offset)


def _all_positions(text: str, kw: str) -> Iterable[int]:
    i = text.find(kw)
    while i != -1:
        yield i
        i = text.find(kw, i + len(kw))


def _edge_positions(text: str, kw: str, last: bool, n: int = 8) -> list[int]:
    """The first (or last) few occurrences: progress bars repeat thousands of times."""
    out: list[int] = []
    if last:
        i = text.rfind(kw)
        while i != -1 and len(out) < n:
            out.append(i)
            i = text.rfind(kw, 0, i)
        return out
    i = text.find(kw)
    while i != -1 and len(out) < n:
        out.append(i)
        i = text.find(kw, i + len(kw))
    return out


def scan_log(ref: LogRef, sigs: list[Signature], head: int = HEAD_BYTES, tail: int = TAIL_BYTES) -> LogSummary:
    summary = LogSummary(ref=ref)
    first = ref.read_head(head)
    if not first:
        summary.empty = True
        return summary
    if first[:4096].count(b"\x00") > 16:
        summary.binary = True
        return summary
    whole = ref.is_whole(head)
    summary.whole = whole
    if whole:
        summary.events = _scan_window(_decode(first), sigs, "head", count_lines=True)
        # progress: want first *and* last in a whole log
        tail_progress = _scan_window(_decode(first), [s for s in sigs if s.event == "progress"], "tail", True)
        _merge_tail(summary, tail_progress)
        return summary
    summary.events = _scan_window(_decode(first), sigs, "head", count_lines=True)
    last = ref.read_tail(tail)
    # drop the (probably partial) first line of the tail window
    cut = last.find(b"\n")
    last = last[cut + 1 :] if cut != -1 else last
    _merge_tail(summary, _scan_window(_decode(last), sigs, "tail", count_lines=False))
    size = ref.size
    summary.whole = size is not None and size <= head + tail
    return summary


def _merge_tail(summary: LogSummary, tail_events: list[LogEvent]) -> None:
    seen = {(e.kind, e.text) for e in summary.events}
    for e in tail_events:
        if (e.kind, e.text) not in seen or e.kind == "progress":
            summary.events.append(e)
            seen.add((e.kind, e.text))
