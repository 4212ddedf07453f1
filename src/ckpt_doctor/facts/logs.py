"""What a container log says, read the way an engineer reads it, in time linear in the bytes read.

Only a bounded head window (`HEAD_BYTES`) and tail window (`TAIL_BYTES`) of each log are read, so
the cost grows with the number of logs, never with their size. Each window is read in three steps:

1. **Keyword pass.** One `re2.Set` pass over the window's bytes tells which of all the signatures'
   literal keywords occur in it (ASCII case ignored). Measured against a pyahocorasick automaton
   on the same windows (`bench/bench_logs.py`), the Set is several times faster because it only
   answers "which", and positions are then found with `bytes.find` for the few keywords present.
   Each keyword is looked for once per line: after a hit the search resumes at the end of the
   line, so a crafted line repeating a keyword 30,000 times costs one match.
2. **Normalising the lines that hold a keyword.** A line is a segment between `\\n` or `\\r`
   (each tqdm carriage-return update is its own line). Before matching, colour codes are
   dropped, surrounding blanks and CRLF trimmed, and prefixes peeled off in any combination:
   `kubectl logs --timestamps` and `--prefix`, torchrun rank tags (`[rank0]:`, `[default0]:`,
   `0: `), logger formats (HF/LlamaFactory `[INFO|file.py:N] date >> `, `date - LEVEL - name - `,
   DeepSpeed `[date] [INFO] [file:N:fn] [Rank 0] `, accelerate 1.15's `[RANK 0] `, `INFO:root:`,
   glog `I1130 08:01:02.1 pid file:N] `, loguru), a framework logger's own tag (transformers 5's
   `[transformers] `, declared in its framework module), and the remains of a tqdm bar that a
   logger line was appended to. A structured (JSON) record becomes its message followed by its
   other fields in the logfmt form, so `{"msg": "saved checkpoint", "step": 10, "path": "/c/s10"}`
   reads as `saved checkpoint step=10 path=/c/s10` and one signature reads a record, a logfmt line
   and a printed sentence alike. What is left is the event's `message`; the timestamp and rank
   found on the way become `time` and `rank`. A line longer than `MAX_LINE` characters is cut to
   `MAX_LINE` characters around each keyword hit (at most once per keyword and line).
3. **Matching.** Each candidate signature's pattern, compiled with google-re2 (linear time, no
   backtracking; a pattern re2 cannot compile is refused when the signature is loaded) runs once
   on the message. Values come from the named groups `step`, `total`, `path`, `epoch`, `count`
   and `desc`; a step or epoch missing from the groups is read off the path
   (`checkpoint-N`, `global_stepN`, `iter_0000N`, `step=N`/`step_N`, `epoch=N`/`epoch_N`). A
   step that cannot be read is None, never 0, and a "resume" from step 0 is a `fresh_start`.

Progress lines repeat thousands of times, so they are read from each window's edges inward:
the first few training-progress lines of the head and the last few of the tail (both ends of a
whole log), plus the first line of every other bar met on the way. Bars are classified
(`bar`): "train", "load" (`Loading checkpoint shards`), "data" (`Map`, `Filter`, `Generating
train split`, `Running tokenizer on dataset`...), "download" (`Downloading`, `Fetching N files`),
"eval" (`Evaluating`, `Validation`, `Sanity Checking`, `Testing`, `Predicting`, and a nested
tqdm bar without a description such as HF's evaluation bar) or "other". Only a training bar
carries a step:

* a bar without description (HF Trainer, most loops) or described as training/steps/iterations:
  the count is the step;
* torchtune's `E|S|Loss: x` description: step S, epoch E-1;
* PyTorch Lightning's `Epoch N` bar counts batches inside epoch N, and the global step equals
  N x batches + count only when each batch is one optimizer step and every epoch has the same
  length, neither of which a log shows. So `epoch` is N, `count` the batch, and `step` is given
  only when the bar's postfix shows it (`step=` or `global_step=` logged with prog_bar=True);
  otherwise None. Lightning's own lines give its global step (ModelCheckpoint's
  `Epoch N, global step M`).

Timestamps (`time`, `LogSummary.first_time`/`last_time`) are RFC 3339 UTC to the second, as
Kubernetes writes them, so they compare as text with pod and condition times. A logger
timestamp without a zone is taken as UTC (containers run in UTC unless told otherwise); a
kubectl timestamp, when present, wins; glog's has no year and is not used.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import cache
from pathlib import Path
from typing import Any

import re2

from ckpt_doctor import frameworks
from ckpt_doctor.data import rules_dir
from ckpt_doctor.errors import InputError
from ckpt_doctor.facts import tracebacks
from ckpt_doctor.facts.tracebacks import Traceback
from ckpt_doctor.snapshot import LogRef
from ckpt_doctor.yamlio import iter_documents

HEAD_BYTES = 128 * 1024
TAIL_BYTES = 128 * 1024
MAX_LINE = 2000  # characters of one line given to a pattern (around the keyword when longer)
EDGE = 4  # training-progress lines kept at the start of a log (a bar's first draw can be its 0/N reset)
TAIL_EDGE = 2  # and at its end
MAX_PROBES = 256  # progress lines examined at most from each edge
# training lines without a step examined from an edge while looking for ones with a step (a loop's bar redrawn
# every step around the structured record it prints every N steps: recordings dcp-1rank-*-jsonlog)
STEPLESS = 64
MAX_PER_SIGNATURE = 256  # events of one signature kept per window (a crafted log repeats lines)
BLOCK = 16 * 1024  # the keyword pass reports presence per block of this size
EVENT_KINDS = frozenset(
    {
        "resumed",
        "fresh_start",
        "saved",
        "save_started",
        "save_failed",
        "save_skipped",
        "sigterm",
        "sigterm_flush",
        "disk_full",
        "resume_error",
        "partial_checkpoint",
        "progress",
        "oom",
        "error",
        "finished",
        "overwrite_output",
        "worker_restart",
        "traceback",
    }
)
BAR_KINDS = ("train", "load", "eval", "data", "download", "other")
SETS = frozenset({"total_steps"})  # summary fields a signature may set instead of (or with) an event
GROUPS = frozenset({"step", "total", "path", "epoch", "count", "desc", "info"})
# CSI sequences and OSC strings (bounded, so a stray ESC ] can never make the scan quadratic)
ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07\x1b\n]{0,512}(?:\x07|\x1b\\)|\x1b[()][0-9A-B]|\x1b[=>78]")
_ANSI_B = re.compile(ANSI.pattern.encode())


@dataclass(frozen=True)
class Signature:
    """One kind of log line, as data (`rules/signatures/*.yaml`)."""

    id: str
    framework: str
    event: str  # an EVENT_KINDS member, or "" for a signature that only `sets` a field or is `ignore`
    keyword: str  # the first keyword (kept for callers); `keywords` holds all of them
    pattern: Any  # a google-re2 compiled pattern
    keywords: tuple[str, ...] = ()
    unless: Any = None  # a re2 pattern that, when it matches the message too, vetoes the match
    bar: str | None = None  # progress: what the line counts, when the signature knows it
    sets: str | None = None  # "total_steps"
    fallback: bool = False  # hand-rolled phrasings: tried after every framework's own signatures
    where: str = ""  # the file it came from
    ignore: bool = False  # a framework's line that is no event: matching it only keeps fallbacks off it
    redraws: bool = False  # progress: a bar redrawn at every update (tqdm), so its first line shows where it began

    def match(self, message: bytes) -> dict[str, bytes] | None:
        """The named groups of the pattern's first match in `message` (UTF-8), or None."""
        return _search(self.pattern, message)


@dataclass
class LogEvent:
    kind: str
    signature: str
    framework: str
    text: str  # the line as displayed (colour codes removed), cut to MAX_LINE
    step: int | None = None
    total: int | None = None
    path: str | None = None
    line: int | None = None  # 1-based line in the log, when known
    window: str = "head"  # head | tail
    offset: int = 0  # position inside the window (for ordering)
    time: str | None = None  # RFC 3339 UTC, to the second
    rank: int | None = None
    epoch: int | None = None
    bar: str | None = None  # progress only: one of BAR_KINDS
    message: str = ""  # the normalised message the pattern matched
    count: int | None = None  # progress: the bar's own count (batches in the epoch for Lightning)
    traceback: Traceback | None = None  # kind "traceback": the typed traceback (facts/tracebacks.py)
    desc: str | None = None  # progress: the bar's description, when it has one
    redrawn: bool = False  # progress: a line of a bar redrawn at every update (its signature's `redraws`)

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
    first_time: str | None = None  # first and last timestamp seen in the windows read
    last_time: str | None = None
    total_steps: int | None = None  # e.g. HF's `Total optimization steps = N`, when seen
    # a traceback after the resume line in the tail window, with the middle of the log unread: whether the run
    # crashed while loading cannot be told (the rules that need it are not_evaluated), else ""
    load_crash_unknown: str = ""

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

    def progress(self, bar: str = "train", with_step: bool = True) -> list[LogEvent]:
        """Progress events of one bar kind (by default: training progress that has a step)."""
        return [e for e in self.of("progress") if e.bar == bar and (e.step is not None or not with_step)]

    @property
    def frameworks(self) -> set[str]:
        return {e.framework for e in self.events if e.framework != "generic"}


# -- loading ------------------------------------------------------------------------------------
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


_QUIET = re2.Options()
_QUIET.log_errors = False  # RE2 would print a refused pattern on the terminal itself, around our one line


def _compile(pattern: str, sid: str, what: str, where: str) -> Any:
    try:
        rx = re2.compile(pattern, _QUIET)
    except re2.error as e:
        why = str(e) or "not a pattern google-re2 accepts"
        raise InputError(
            f"signature {sid}: bad {what}: {why} (patterns are RE2: no look-around or back-references)", where
        ) from None
    bad = set(rx.groupindex) - GROUPS
    if bad:
        raise InputError(f"signature {sid}: unknown group(s) {', '.join(sorted(bad))} in {what}", where)
    return rx


def _parse_file(doc: Any, where: str) -> list[Signature]:
    if not isinstance(doc, dict) or not isinstance(doc.get("signatures"), list):
        raise InputError("a signature file needs `framework:` and a `signatures:` list", where)
    fw = str(doc.get("framework") or Path(where).stem)
    fallback = bool(doc.get("fallback", False))
    sigs = []
    for i, s in enumerate(doc["signatures"]):
        if not isinstance(s, dict) or not all(k in s for k in ("id", "pattern")):
            raise InputError(f"signature #{i + 1} needs id, event, keyword and pattern", where)
        sid = str(s["id"])
        event = str(s.get("event") or "")
        sets = s.get("sets")
        ignore = bool(s.get("ignore", False))
        if not event and not sets and not ignore:
            raise InputError(f"signature {sid}: needs an event (or `sets:`, or `ignore: true`)", where)
        if event and event not in EVENT_KINDS:
            raise InputError(f"signature {sid}: unknown event {event!r}", where)
        if sets is not None and sets not in SETS:
            raise InputError(f"signature {sid}: unknown `sets:` {sets!r} (known: {', '.join(sorted(SETS))})", where)
        raw_kw = s.get("keywords", s.get("keyword"))
        kws = tuple(str(k) for k in raw_kw) if isinstance(raw_kw, list) else ((str(raw_kw),) if raw_kw else ())
        if not kws or not all(kws):
            raise InputError(f"signature {sid}: needs a non-empty `keyword:` (or `keywords:` list)", where)
        bar = s.get("bar")
        if bar is not None and (event != "progress" or bar not in BAR_KINDS):
            kinds = ", ".join(BAR_KINDS)
            raise InputError(f"signature {sid}: `bar:` is for progress signatures, one of {kinds}", where)
        pat = _compile(str(s["pattern"]), sid, "pattern", where)
        unless = _compile(str(s["unless"]), sid, "unless", where) if s.get("unless") else None
        redraws = bool(s.get("redraws", False))
        if redraws and event != "progress":
            raise InputError(f"signature {sid}: `redraws:` is for progress signatures", where)
        sigs.append(
            Signature(
                sid, fw, event, kws[0], pat, kws, unless, bar, str(sets) if sets else None, fallback, where, ignore,
                redraws,
            )
        )
    return sigs


# -- re2 without the wrapper's per-call overhead --------------------------------------------------
_UNANCHORED = getattr(getattr(re2, "_Anchor", None), "UNANCHORED", None)


def _search(rx: Any, data: bytes) -> dict[str, bytes] | None:
    raw = getattr(rx, "_regexp", None)
    if raw is None or _UNANCHORED is None:  # another google-re2 build: the public API
        m = rx.search(data)
        return None if m is None else {k: v for k, v in m.groupdict().items() if v is not None}
    spans = raw.Match(_UNANCHORED, data, 0, len(data))
    if spans[0][0] < 0:
        return None
    out = {}
    for name, i in _group_index(rx):
        a, b = spans[i]
        if a >= 0:
            out[name] = data[a:b]
    return out


_GROUPS: dict[int, tuple[tuple[str, int], ...]] = {}


def _group_index(rx: Any) -> tuple[tuple[str, int], ...]:
    g = _GROUPS.get(id(rx))
    if g is None:
        g = _GROUPS[id(rx)] = tuple(rx.groupindex.items())
    return g


# -- the keyword index, built once per signature list ----------------------------------------------
@dataclass
class _Index:
    sigs: list[Signature]
    kset: Any  # re2.Set of every keyword
    words: list[bytes]  # lower-cased keywords, by Set index
    event_sigs: list[tuple[int, ...]]  # per keyword: non-progress signatures (priority order)
    progress_sigs: list[tuple[int, ...]]
    priority: list[int]
    longest: int = 1  # the longest keyword, in bytes (blocks overlap by this much minus one)


_INDEXES: list[tuple[list[Signature], int, _Index]] = []


def _index(sigs: list[Signature]) -> _Index:
    for held, n, idx in _INDEXES:
        if held is sigs and n == len(sigs):
            return idx
    idx = _build_index(sigs)
    _INDEXES.insert(0, (sigs, len(sigs), idx))
    del _INDEXES[8:]
    return idx


def _build_index(sigs: list[Signature]) -> _Index:
    words: list[bytes] = []
    where: dict[bytes, int] = {}
    ev: list[list[int]] = []
    pr: list[list[int]] = []
    # framework signatures first, then generic ones, hand-rolled (fallback) phrasings last
    order = sorted(range(len(sigs)), key=lambda i: (sigs[i].fallback, sigs[i].framework == "generic", i))
    priority = [0] * len(sigs)
    for rank, i in enumerate(order):
        priority[i] = rank
    for i in order:
        s = sigs[i]
        for kw in s.keywords or (s.keyword,):
            w = kw.encode("utf-8").lower()
            if w not in where:
                where[w] = len(words)
                words.append(w)
                ev.append([])
                pr.append([])
            (pr if s.event == "progress" else ev)[where[w]].append(i)
    opts = re2.Options()
    opts.case_sensitive = False
    kset = re2.Set.SearchSet(opts)
    for w in words:
        kset.Add(re2.escape(w))
    if words:
        kset.Compile()
    longest = max((len(w) for w in words), default=1)
    return _Index(sigs, kset, words, [tuple(x) for x in ev], [tuple(x) for x in pr], priority, longest)


# -- normalising one line ---------------------------------------------------------------------------
_LEVEL = rb"(?:TRACE|DEBUG|INFO|NOTICE|WARNING|WARN|ERROR|CRITICAL|FATAL|SUCCESS)"
_DATE = rb"(\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d)(?:[,.]\d{1,9})?"
# Anchored, bounded patterns: each can only fail or succeed within a few hundred bytes.
_P_KUBE_TS = re.compile(rb"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.\d{1,9})?(Z|[+-]\d\d:?\d\d) ")
_P_KUBE_PREFIX = re.compile(rb"\[pod/[^\]\s/]{1,253}/[^\]\s/]{1,253}\] ")
_P_RANK_TAG = re.compile(rb"\[(?:rank|default|[A-Za-z_][A-Za-z0-9_-]{0,31}?)(\d{1,5})\]: ?")
_P_HF = re.compile(rb"\[" + _LEVEL + rb"\|[^\]\s|]{1,128}:\d{1,6}\] (?:" + _DATE + rb" )?>> ")
_P_LF = re.compile(rb"\[" + _LEVEL + rb"\|" + _DATE + rb"\] [^\s]{1,256}:\d{1,6} >> ")
_P_BRACKET_TS = re.compile(
    rb"\[" + _DATE + rb"\] (?:\[" + _LEVEL + rb"\] )?(?:\[[^\]\s]{1,256}:\d{1,6}:[^\]\s]{1,128}\] )?"
    rb"(?:\[Rank (\d{1,5})\] )?"
)
_P_LEVEL_TAG = re.compile(rb"\[" + _LEVEL + rb"\] (?:\[Rank (\d{1,5})\] )?")
_P_DS_RANK = re.compile(rb"\[(?:Rank|RANK) (\d{1,5})\] ")  # DeepSpeed `[Rank 0] `, accelerate 1.15's logger `[RANK 0] `
_P_STD = re.compile(
    _DATE + rb"(?: - | \| | )(?:" + _LEVEL + rb" {0,8}(?: - | \| | ))?(?:[\w.\[\]<>-]{1,128}(?::\w{1,64}:\d{1,6})?"
    rb"(?: - | \| ))?(?:" + _LEVEL + rb"(?: - | \| |: ))?"
)
_P_US = re.compile(rb"(\d\d)/(\d\d)/(\d{4}) (\d\d:\d\d:\d\d) - " + _LEVEL + rb" - [\w.\[\]<>-]{1,128} - ")
_P_PYLOG = re.compile(_LEVEL + rb":[\w.\-<>]{1,128}:")
_P_GLOG = re.compile(rb"[IWEF]\d{4} \d\d:\d\d:\d\d(?:\.\d{1,9})? +\d{1,10} [^\]\s]{1,256}:\d{1,6}\] ")
_P_NUM_RANK = re.compile(rb"(\d{1,4}): (?=\S)")
_P_BAR_REMNANT = re.compile(rb"[^%\r\n]{0,160}%\|[^|\n]{0,160}\|[^\[\n]{0,64}\[[^\]\n]{0,256}\]\s*(?=\S)")
_JSON_MESSAGE = ("message", "msg", "event", "log", "text")
_JSON_TIME = ("time", "timestamp", "ts", "@timestamp", "asctime", "date", "datetime")
_JSON_RANK = ("rank", "global_rank", "RANK")
_JSON_SKIP = frozenset({"level", "levelname", "severity", "logger", "name", "module", "filename", "funcName", "lineno",
                        "process", "thread", "threadName", "taskName", "pid", "hostname", "host",
                        "stream"})  # fmt: skip
_JSON_KEY = re.compile(r"[A-Za-z_][\w./-]{0,63}$")
_JSON_MAX_FIELDS = 24  # fields of one record given to the signatures
_JSON_MAX_VALUE = 512  # characters of one field's value


@dataclass
class _Line:
    message: bytes  # the normalised message (prefixes, colours and bar remnants removed)
    bar_message: bytes  # the same before the tqdm remnant was peeled off (what a progress pattern reads)
    time: str | None = None
    rank: int | None = None
    nested: bool = False  # drawn with cursor-up codes: a tqdm bar at position >= 1
    indent: int | None = None  # a structured record's message: how far it was indented
    record_message: bytes | None = None  # a structured record's message alone (without its fields)


def _utc(text: str, offset: str = "") -> str | None:
    """RFC 3339 UTC to the second from '2024-07-03 18:28:26' (+ zone offset), or None."""
    if len(text) < 19:
        return None
    base = text[:10] + "T" + text[11:19]
    if offset in ("", "Z", "z", "+00:00", "+0000", "-00:00"):
        return base + "Z"
    try:
        dt = datetime.fromisoformat(base + (offset if ":" in offset else offset[:3] + ":" + offset[3:]))
    except ValueError:
        return None
    return dt.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


_P_PRECISE_ISO = re.compile(r"\[?(\d{4}-\d\d-\d\d)[ T](\d\d:\d\d:\d\d)(?:[.,](\d{1,9}))?(Z|[+-]\d\d:?\d\d)?[\] ]")
_P_PRECISE_GLOG = re.compile(
    r"[IWEF](\d\d)(\d\d) (\d\d):(\d\d):(\d\d)(?:\.(\d{1,9}))? +\d{1,10} [^\]\s]{1,256}:\d{1,6}\] "
)


def line_epoch(text: str, near: float | None = None) -> float | None:
    """When the program wrote a log line, from the stamp at the start of its message, to the fraction of a second
    it shows (epoch seconds, UTC), or None: a logger's ISO/`[2026-12-02 01:18:47,314]` stamp (no zone: UTC, as
    for `time`), or glog's `W1202 01:05:12.092000 1 file.py:753] `, whose year is not written: taken from `near`
    (when the run ran), the year that puts the line closest to it, and not read at all when that is more than
    two days away. What wraps the line on its way out (kubectl's `--timestamps`, `[pod/NAME/CONTAINER] `, a
    rank tag, a JSON record: the wrappers `_peel` takes off) is peeled first and its times are not used: the
    message's own stamp is the one a reader of the line sees, whatever carried it. Finer than `time` (whole
    seconds): for comparing with checkpoint mtimes."""
    rest = text.strip().encode()
    for _ in range(4):  # the wrappings, outermost first
        m = _P_KUBE_TS.match(rest) or _P_KUBE_PREFIX.match(rest) or _P_RANK_TAG.match(rest)
        if m is not None:
            rest = rest[m.end():]
            continue
        if rest[:1] == b"{" and rest[-1:] == b"}" and len(rest) <= 65536:
            try:
                rec = json.loads(rest)
            except ValueError:
                break
            msg = next((rec[k] for k in _JSON_MESSAGE if isinstance(rec.get(k), str)), None) if isinstance(
                rec, dict) else None  # fmt: skip
            if msg is None:
                break
            rest = msg.strip().encode()
            continue
        break
    line = rest.decode(errors="replace")
    m = _P_PRECISE_ISO.match(line)
    if m is not None:
        day, hms, frac, zone = m.groups()
        z = "+00:00" if zone in (None, "Z") else (zone if ":" in zone else f"{zone[:3]}:{zone[3:]}")
        try:
            t = datetime.fromisoformat(f"{day}T{hms}{z}").timestamp()
        except ValueError:
            return None
        return t + float(f"0.{frac}" if frac else 0)
    m = _P_PRECISE_GLOG.match(line)
    if m is None or near is None:
        return None
    mo, d, hh, mm, ss = map(int, m.groups()[:5])
    frac = m.group(6)
    year = datetime.fromtimestamp(near, UTC).year
    best: float | None = None
    for y in (year - 1, year, year + 1):
        try:
            t = datetime(y, mo, d, hh, mm, ss, tzinfo=UTC).timestamp()
        except ValueError:  # 29 February of a year without it
            continue
        if best is None or abs(t - near) < abs(best - near):
            best = t
    if best is None or abs(best - near) > 2 * 86400:
        return None
    return best + float(f"0.{frac}" if frac else 0)


def _json_time(v: Any) -> str | None:
    if isinstance(v, bool):
        return None
    if isinstance(v, int | float):
        x = float(v)
        if x > 1e14:  # nanoseconds or microseconds since the epoch
            x /= 1e9 if x > 1e17 else 1e6
        elif x > 1e11:  # milliseconds
            x /= 1e3
        try:
            return datetime.fromtimestamp(x, tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        except (OverflowError, OSError, ValueError):
            return None
    if isinstance(v, str):
        m = re.match(r"(\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d)(?:[.,]\d{1,9})?\s*(Z|z|[+-]\d\d:?\d\d)?", v)
        if m:
            return _utc(m.group(1), m.group(2) or "")
    return None


def _peel(seg: bytes, line: _Line, allow_bar: bool) -> bytes:
    """Strip prefixes off `seg`, in any combination; record time and rank in `line`."""
    for _ in range(12):
        if not seg:
            return seg
        c = seg[0]
        m = None
        if c == 0x5B:  # [
            cut = next((len(p) for p in frameworks.log_prefixes() if seg.startswith(p)), 0)
            if cut:  # a framework logger's own prefix (`[transformers] `)
                seg = seg[cut:].lstrip()
                continue
            m = _P_KUBE_PREFIX.match(seg)
            if m is None:
                m = _P_RANK_TAG.match(seg)
                if m is not None:
                    line.rank = line.rank if line.rank is not None else int(m.group(1))
            if m is None:
                m = _P_HF.match(seg) or _P_LF.match(seg)
                if m is not None and m.group(1) and line.time is None:
                    line.time = _utc(m.group(1).decode())
            if m is None:
                m = _P_BRACKET_TS.match(seg)
                if m is not None:
                    if line.time is None:
                        line.time = _utc(m.group(1).decode())
                    if m.group(2) and line.rank is None:
                        line.rank = int(m.group(2))
            if m is None:
                m = _P_LEVEL_TAG.match(seg) or _P_DS_RANK.match(seg)
                if m is not None and m.lastindex and line.rank is None:
                    line.rank = int(m.group(1))
        elif 0x30 <= c <= 0x39:  # a digit
            m = _P_KUBE_TS.match(seg)
            if m is not None:
                t = _utc(m.group(1).decode(), m.group(2).decode())
                line.time = t or line.time  # the container runtime's clock wins over a logger's
            else:
                m = _P_STD.match(seg)
                if m is not None:
                    if line.time is None:
                        line.time = _utc(m.group(1).decode())
                else:
                    m = _P_US.match(seg)
                    if m is not None:
                        mo, d, y, hms = (g.decode() for g in m.group(1, 2, 3, 4))
                        line.time = line.time or _utc(f"{y}-{mo}-{d} {hms}")
                    else:
                        m = _P_NUM_RANK.match(seg)
                        if m is not None and line.rank is None:
                            line.rank = int(m.group(1))
        elif c == 0x7B and seg[-1:] == b"}" and seg[1:].lstrip()[:1] == b'"' and len(seg) <= 65536:  # a JSON record
            try:
                rec = json.loads(seg)
            except ValueError:
                rec = None
            if isinstance(rec, dict):
                got = _record(rec, line)
                if got is not None:
                    seg = got
                    continue
            return seg
        elif 0x41 <= c <= 0x5A:  # an upper-case letter: INFO:root:, glog
            m = _P_PYLOG.match(seg) or _P_GLOG.match(seg)
        if m is None and allow_bar and b"%|" in seg[:200]:
            m = _P_BAR_REMNANT.match(seg)
            if m is not None:
                line.bar_message = line.bar_message or seg
        if m is None or m.end() == 0:
            return seg
        seg = seg[m.end() :].lstrip()
    return seg


def _record(rec: dict[str, Any], line: _Line) -> bytes | None:
    """A structured record read as its message followed by its other fields in the logfmt form
    (`saved checkpoint step=10 path=/ckpt/step-10`), so that one signature reads a JSON record, a logfmt line
    and a printed sentence alike; its time and rank go to `line`. None: not a log record (no message and no
    field a signature could read)."""
    msg = next((rec[k] for k in _JSON_MESSAGE if isinstance(rec.get(k), str)), None)
    fields = []
    for k, v in rec.items():
        if len(fields) >= _JSON_MAX_FIELDS:
            break
        if k in _JSON_MESSAGE or k in _JSON_TIME or k in _JSON_RANK or k in _JSON_SKIP or not isinstance(k, str):
            continue
        if isinstance(v, bool) or not isinstance(v, str | int | float) or not _JSON_KEY.match(k):
            continue
        text = str(v)[:_JSON_MAX_VALUE]
        if not text or "\n" in text or "\r" in text:
            continue
        fields.append(f'{k}="{text}"' if (" " in text or "\t" in text) else f"{k}={text}")
    if msg is None and not fields:
        return None
    if msg:
        body = msg.rstrip("\r\n")
        line.indent = len(body) - len(body.lstrip(" \t"))
        line.record_message = body.strip().encode("utf-8", "replace")
    tv = next((rec[k] for k in _JSON_TIME if k in rec), None)
    line.time = line.time or _json_time(tv)
    rv = next((rec[k] for k in _JSON_RANK if k in rec), None)
    if line.rank is None and isinstance(rv, int | str) and str(rv).isdigit():
        line.rank = int(rv)
    seg = " ".join(([msg.strip()] if msg and msg.strip() else []) + fields).encode("utf-8", "replace")
    if b"\x1b" in seg:
        seg = _ANSI_B.sub(b"", seg)
    return seg


def _tb_line(seg: bytes, inner: bool = False) -> tuple[int, bytes]:
    """A traceback line without its prefixes, and how far it is indented after them (tracebacks.read)."""
    if seg[:1] in (b" ", b"\t") and b"\x1b" not in seg:  # no prefix: a frame or a source line as Python wrote it
        text = seg.lstrip(b" \t")
        return len(seg) - len(text), text
    if b"\x1b" in seg:
        seg = _ANSI_B.sub(b"", seg)
    probe = _Line(b"", b"")
    rest = _peel(seg, probe, allow_bar=False)
    text = rest.lstrip(b" \t")
    if probe.indent is not None and not inner:  # a structured record: its message, as a line of its own
        body = probe.record_message or b""
        ind, text = _tb_line(b" " * probe.indent + body, inner=True)
        return ind, text
    lead = seg[: len(seg) - len(text)] if seg.endswith(text) else b""
    return len(lead) - len(lead.rstrip(b" \t")), text


def _normalise(raw: bytes, s: int, e: int, line_start: int, at_start: bool) -> _Line:
    seg = raw[s:e]
    nested = b"\x1b[A" in seg
    if b"\x1b" in seg:
        seg = _ANSI_B.sub(b"", seg)
    seg = seg.strip()
    line = _Line(b"", b"", nested=nested)
    if line_start < s and at_start:
        # a carriage-return segment: the physical line's prefix (kubectl timestamp, rank) applies
        head = raw[line_start : min(s, line_start + 512)]
        if b"\x1b" in head:
            head = _ANSI_B.sub(b"", head)
        probe = _Line(b"", b"")
        _peel(head.strip(), probe, allow_bar=False)
        line.time, line.rank = probe.time, probe.rank
    if at_start:
        seg = _peel(seg, line, allow_bar=True)
    line.message = seg
    line.bar_message = line.bar_message or seg
    return line


# -- reading values --------------------------------------------------------------------------------
_EPOCH_IN_PATH = re.compile(r"(?<![a-z])epoch[=_-]?(\d+)", re.I)
_TRAIN_DESC = re.compile(r"(?i)(?:train(?:ing)?|steps?|global[ _]?steps?|iter(?:ation)?s?|it|optimi[sz]ation steps?)\b")
_BAR_TABLE = [
    (re.compile(r"(?i)(?:loading dataset shards|map\b|filter\b|generating \w+ split|running tokenizer|tokeniz|"
                r"converting format|pre-?process|packing|shuffl|concatenat|grouping texts|grouping|saving the dataset|"
                r"casting|flattening|resolving data files|creating|applying chat template|formatting)"), "data"),
    (re.compile(r"(?i)(?:loading checkpoint shards|loading (?:model|weights|checkpoint|state|pipeline)|"
                r"load(?:ing)?\b)"),
     "load"),
    (re.compile(r"(?i)(?:download|fetching|uploading|upload\b)"), "download"),
    (re.compile(r"(?i)(?:eval|validat|val\b|predict|test|sanity checking|inference|generat)"), "eval"),
]
_POSTFIX_STEP = re.compile(r"(?:^|[,\s])(?:global_step|trainer/global_step|step)[=:]\s*(\d+)(?:\.0+)?(?=$|[,\s\]])")


def _int(v: bytes | None) -> int | None:
    if not v:
        return None
    t = v.replace(b",", b"").replace(b"_", b"").strip()
    if t.isdigit():
        return int(t)
    try:
        return int(float(t))
    except ValueError:
        return None


def _clean_path(v: bytes | None) -> str | None:
    if not v:
        return None
    p = v.decode("utf-8", "replace").strip().strip("'\"`").rstrip(".,;:)]}>'\"`")
    return p or None


def _step_from_path(path: str) -> int | None:
    if path.isdigit():
        return int(path)
    found = frameworks.path_step().findall(path)  # checkpoint-N, global_stepN, iter_N, step=N ...
    return int(found[-1]) if found else None


def _epoch_from_path(path: str) -> int | None:
    found = _EPOCH_IN_PATH.findall(path)
    return int(found[-1]) if found else None


def _classify_bar(desc: str, nested: bool) -> str:
    if not desc:
        return "eval" if nested else "train"
    if any(b.rx.match(desc) for b in frameworks.bars()):  # Lightning's `Epoch N`, torchtune's `E|S|`
        return "train"
    for rx, kind in _BAR_TABLE:
        if rx.match(desc):
            return kind
    if _TRAIN_DESC.match(desc):
        return "train"
    return "other"


def _progress(sig: Signature, gd: dict[str, bytes], ev: LogEvent, nested: bool) -> None:
    """Fill bar, step, epoch and count of a progress event (see the module docstring)."""
    count = _int(gd.get("count"))
    ev.count = count if count is not None else ev.step
    if sig.bar is not None:
        ev.bar = sig.bar
        if ev.bar != "train":
            ev.step = None
        return
    if "desc" not in gd and "count" not in gd:
        ev.bar = "train"
        return
    desc = gd.get("desc", b"").decode("utf-8", "replace").strip().rstrip(":").strip()
    ev.desc = desc or None
    bar = _classify_bar(desc, nested)
    ev.bar = bar
    step = None
    if bar == "train":
        own = next(((b, m) for b in frameworks.bars() if (m := b.rx.match(desc))), None)
        if own is not None:  # a framework's own bar: its description says the epoch (and the step)
            b, m = own
            if b.epoch_group is not None:
                ev.epoch = int(m.group(b.epoch_group)) + b.epoch_offset
            if b.step_group is not None:
                step = int(m.group(b.step_group))
            if b.step_from_postfix:
                pm = _POSTFIX_STEP.search(gd.get("info", b"").decode("utf-8", "replace"))
                step = int(pm.group(1)) if pm else step
        else:
            step = ev.count
            pm = _POSTFIX_STEP.search(gd.get("info", b"").decode("utf-8", "replace"))
            if pm:
                step = int(pm.group(1))
    ev.step = step


# -- scanning one window ---------------------------------------------------------------------------
class _Bounds:
    """Line boundaries around positions, each query searching only what earlier ones did not.

    `bytes.find(b"\\r")` in a window without CR would otherwise scan to the end at every hit;
    remembering the last answer keeps a window's boundary searches linear overall, whether the
    positions are visited forward (keyword hits) or backward (the tail's progress lines).
    """

    def __init__(self, raw: bytes, has_cr: bool | None = None) -> None:
        self.raw = raw
        self.n = len(raw)
        self.has_cr = b"\r" in raw if has_cr is None else has_cr
        self._next: dict[int, tuple[int, int]] = {}  # byte -> (query position, answer)
        self._prev: dict[int, tuple[int, int]] = {}

    def next(self, ch: int, pos: int) -> int:
        """First position >= pos of byte ch, or len(raw)."""
        if ch == 13 and not self.has_cr:
            return self.n
        memo = self._next.get(ch)
        if memo is not None and memo[0] <= pos <= memo[1]:
            return memo[1]
        if memo is not None and pos < memo[0]:  # backward: only [pos, q) is new
            r = self.raw.find(bytes((ch,)), pos, memo[0])
            a = memo[1] if r < 0 else r
        else:
            r = self.raw.find(bytes((ch,)), pos)
            a = self.n if r < 0 else r
        self._next[ch] = (pos, a)
        return a

    def prev(self, ch: int, pos: int) -> int:
        """Last position < pos of byte ch, or -1."""
        if ch == 13 and not self.has_cr:
            return -1
        memo = self._prev.get(ch)
        if memo is not None and memo[0] <= pos:  # forward: only [q, pos) is new
            r = self.raw.rfind(bytes((ch,)), memo[0], pos)
            a = memo[1] if r < 0 else r
        elif memo is not None and memo[1] < pos:  # backward, still after the answer
            a = memo[1]
        else:
            a = self.raw.rfind(bytes((ch,)), 0, pos)
        self._prev[ch] = (pos, a)
        return a

    def segment(self, pos: int) -> tuple[int, int, int]:
        """(start, end, physical line start) of the CR/LF-delimited segment holding pos."""
        lf = self.prev(10, pos)
        start = max(lf, self.prev(13, pos)) + 1
        end = min(self.next(10, pos), self.next(13, pos))
        return start, end, lf + 1


class _Window:
    def __init__(self, raw: bytes, idx: _Index, name: str, count_lines: bool) -> None:
        self.raw = raw
        self.idx = idx
        self.name = name
        self.count_lines = count_lines
        self.events: list[LogEvent] = []
        self.total_steps: int | None = None
        self.per_sig: dict[int, int] = {}
        self._orders: dict[tuple[int, ...], list[int]] = {}
        # The keyword pass, block by block: which keywords occur, and in which blocks, so that
        # finding their positions afterwards searches only the blocks that hold them.
        self.ranges: dict[int, list[tuple[int, int]]] = {}
        if idx.words:
            n, step, over = len(raw), BLOCK, idx.longest - 1
            for a in range(0, max(n, 1), step):
                b = min(n, a + step + over)
                for k in idx.kset.Match(raw[a:b]) or ():
                    rs = self.ranges.setdefault(k, [])
                    if rs and rs[-1][1] >= a:
                        rs[-1] = (rs[-1][0], b)
                    else:
                        rs.append((a, b))
        self.present = sorted(self.ranges)
        self.low = raw.lower() if self.present else raw
        self.has_cr = b"\r" in raw

    # non-progress signatures: every line holding a keyword
    def scan_events(self) -> None:
        idx, low, raw = self.idx, self.low, self.raw
        hits: list[tuple[int, int]] = []
        for k in self.present:
            if not idx.event_sigs[k]:
                continue
            w = idx.words[k]
            b = _Bounds(raw, self.has_cr)
            found = cursor = 0
            for a, z in self.ranges[k]:
                pos = low.find(w, max(a, cursor), z)
                while pos >= 0 and found < MAX_PER_SIGNATURE * 4:
                    hits.append((pos, k))
                    found += 1
                    cursor = max(min(b.next(10, pos), b.next(13, pos)), pos + len(w))
                    pos = low.find(w, cursor, z) if cursor < z else -1
        if not hits:
            return
        hits.sort()
        bounds = _Bounds(raw, self.has_cr)
        i = 0
        while i < len(hits):
            pos, _k = hits[i]
            s, e, ls = bounds.segment(pos)
            j = i
            while j < len(hits) and hits[j][0] < e:
                j += 1
            self._segment(s, e, ls, hits[i:j])
            i = j

    def _segment(self, s: int, e: int, ls: int, hits: list[tuple[int, int]]) -> None:
        idx = self.idx
        views: list[tuple[int, int, list[tuple[int, int]]]]
        if e - s <= MAX_LINE:
            views = [(s, e, hits)]
        else:  # a very long line: MAX_LINE bytes around each keyword's first hit in it
            views = []
            for p, k in hits:
                if views and p + len(idx.words[k]) <= views[-1][1]:
                    views[-1][2].append((p, k))
                    continue
                lo = max(s, p - MAX_LINE // 2)
                views.append((lo, min(e, lo + MAX_LINE), [(p, k)]))
        for vs, ve, vhits in views:
            cands = sorted({i for _p, k in vhits for i in idx.event_sigs[k]}, key=idx.priority.__getitem__)
            line: _Line | None = None
            done: set[str] = set()
            claimed = False
            for si in cands:
                sig = idx.sigs[si]
                if sig.event in done or self.per_sig.get(si, 0) >= MAX_PER_SIGNATURE:
                    continue
                if sig.fallback and claimed:  # hand-rolled phrasings never reinterpret a framework's line
                    break
                if line is None:
                    line = _normalise(self.raw, vs, ve, ls, vs == s)
                gd = sig.match(line.message)
                if gd is None and vs != s:  # cut out of a long line: the message may begin at the keyword
                    p0 = next(p for p, k in vhits if si in idx.event_sigs[k])
                    gd = sig.match(_normalise(self.raw, p0, ve, ls, False).message)
                if gd is None or (sig.unless is not None and _search(sig.unless, line.message) is not None):
                    continue
                if sig.sets == "total_steps":
                    self.total_steps = _int(gd.get("total") or gd.get("step")) or self.total_steps
                if not sig.event:
                    claimed = claimed or not (sig.fallback or sig.framework == "generic")
                    continue
                ev = self._event(sig, gd, line, vs, ve)
                if ev.kind == "traceback":
                    self._traceback(ev, ls if vs == s else vs)
                claimed = claimed or not (sig.fallback or sig.framework == "generic")
                done.add(sig.event)
                if ev.kind != sig.event:
                    done.add(ev.kind)
                self.per_sig[si] = self.per_sig.get(si, 0) + 1
                self.events.append(ev)

    def _traceback(self, ev: LogEvent, start: int) -> None:
        """Read the traceback whose header is `ev`'s line; the event stands at its exception line."""
        tb = tracebacks.read(self.raw, start, _tb_line)
        ev.traceback = tb
        if tb.exc_offset >= 0:
            end = self.raw.find(b"\n", tb.exc_offset)
            text = self.raw[tb.exc_offset : end if end >= 0 else len(self.raw)]
            if b"\x1b" in text:
                text = _ANSI_B.sub(b"", text)
            ev.offset = tb.exc_offset
            ev.text = text.decode("utf-8", "replace").strip()[:MAX_LINE]

    def _event(self, sig: Signature, gd: dict[str, bytes], line: _Line, s: int, e: int) -> LogEvent:
        text = self.raw[s:e]
        if b"\x1b" in text:
            text = _ANSI_B.sub(b"", text)
        path = _clean_path(gd.get("path"))
        step = _int(gd.get("step"))
        epoch = _int(gd.get("epoch"))
        if path is not None:
            if step is None:
                step = _step_from_path(path)
            if epoch is None:
                epoch = _epoch_from_path(path)
        kind = sig.event
        if kind == "resumed" and step == 0:  # loading base weights at step 0 is a fresh start
            kind = "fresh_start"
        message = line.message if kind != "progress" else line.bar_message
        return LogEvent(
            kind=kind,
            signature=sig.id,
            framework=sig.framework,
            text=text.decode("utf-8", "replace").strip()[:MAX_LINE],
            step=step,
            total=_int(gd.get("total")),
            path=path,
            window=self.name,
            offset=s,
            time=line.time,
            rank=line.rank,
            epoch=epoch,
            message=message.decode("utf-8", "replace")[:MAX_LINE],
        )

    # progress signatures: from the window's edges inward
    def scan_progress(self, forward: bool, name: str | None = None, skip: set[int] | None = None) -> None:
        idx = self.idx
        words = [k for k in self.present if idx.progress_sigs[k]]
        if not words:
            return
        raw, low = self.raw, self.low
        b = _Bounds(raw, self.has_cr)
        cursor = 0 if forward else len(raw)
        cache: dict[int, int] = {}  # keyword -> its next hit in the scan direction (-1: none left)
        trained = with_step = probes = 0
        edge = EDGE if forward else TAIL_EDGE
        seen_desc: set[tuple[str, str]] = set()
        while probes < MAX_PROBES:
            best = -1
            for k in words:
                p = cache.get(k, -2)
                if p == -1:
                    continue
                if p == -2 or (p < cursor if forward else p + len(idx.words[k]) > cursor):
                    p = low.find(idx.words[k], cursor) if forward else low.rfind(idx.words[k], 0, cursor)
                    cache[k] = p
                    if p < 0:
                        continue
                if best < 0 or (p < best if forward else p > best):
                    best = p
            if best < 0:
                return
            probes += 1
            s, e, ls = b.segment(best)
            ks = [k for k in words if cache.get(k, -1) >= s and cache[k] < e]
            ev = None if skip is not None and s in skip else self._progress_line(s, e, ls, ks)
            if ev is not None:
                if name is not None:
                    ev.window = name
                if ev.bar == "train":
                    trained += 1
                    with_step += ev.step is not None
                    if ev.step is not None or trained - with_step <= 2 * edge:
                        self.events.append(ev)
                elif (ev.bar or "", ev.message[:24]) not in seen_desc:
                    seen_desc.add((ev.bar or "", ev.message[:24]))
                    self.events.append(ev)
            if with_step >= edge or trained - with_step >= STEPLESS:
                return
            other = ev is not None and ev.bar != "train"
            if forward:  # past this segment; past the whole physical line for another bar
                cursor = (b.next(10, e) if other else e) + 1 if e < len(raw) else len(raw) + 1
                if cursor > len(raw):
                    return
            else:
                cursor = ls if other else s
                if cursor <= 0:
                    return

    def _progress_line(self, s: int, e: int, ls: int, ks: list[int]) -> LogEvent | None:
        idx = self.idx
        if e - s > MAX_LINE:
            e = s + MAX_LINE
        line = _normalise(self.raw, s, e, ls, True)
        key = tuple(ks)
        order = self._orders.get(key)
        if order is None:
            order = sorted({i for k in ks for i in idx.progress_sigs[k]}, key=idx.priority.__getitem__)
            self._orders[key] = order
        first: LogEvent | None = None
        for text in (line.bar_message, line.message) if line.message != line.bar_message else (line.bar_message,):
            # a bar's remnant with a logger's line after it: the line's own progress counts when it has a step
            for si in order:
                sig = idx.sigs[si]
                gd = sig.match(text)
                if gd is None or (sig.unless is not None and _search(sig.unless, text) is not None):
                    continue
                if sig.sets == "total_steps":
                    self.total_steps = _int(gd.get("total")) or self.total_steps
                ev = self._event(sig, gd, line, s, e)
                _progress(sig, gd, ev, line.nested)
                ev.redrawn = sig.redraws
                if ev.step is not None or ev.bar != "train" or text is line.message:
                    return ev if ev.step is not None or first is None else first
                first = first or ev
                break
        return first

    def finish(self) -> list[LogEvent]:
        self.events.sort(key=lambda ev: ev.offset)
        if self.count_lines:
            n, at = 1, 0
            for ev in self.events:
                n += self.raw.count(b"\n", at, ev.offset)
                at = ev.offset
                ev.line = n
        return self.events


def _edge_time(raw: bytes, forward: bool, lines: int = 8) -> str | None:
    """The timestamp of the first (or last) of a few lines at a window's edge, if any has one."""
    chunk = raw[:4096] if forward else raw[-4096:]
    parts = chunk.split(b"\n", lines) if forward else chunk.rsplit(b"\n", lines)[::-1]
    for seg in parts[:lines]:
        seg = seg.split(b"\r", 1)[0][:512]
        if b"\x1b" in seg:
            seg = _ANSI_B.sub(b"", seg)
        seg = seg.strip()
        if seg:
            probe = _Line(b"", b"")
            _peel(seg, probe, allow_bar=False)
            if probe.time:
                return probe.time
    return None


def _scan(raw: bytes, idx: _Index, name: str, first: bool, last: bool, count_lines: bool) -> _Window:
    w = _Window(raw, idx, name, count_lines)
    w.scan_events()
    if first:
        w.scan_progress(forward=True)
    if last:
        seen = {ev.offset for ev in w.events if ev.kind == "progress"}
        w.scan_progress(forward=False, name="tail" if first else None, skip=seen)
    w.finish()
    return w


def scan_log(ref: LogRef, sigs: list[Signature], head: int = HEAD_BYTES, tail: int = TAIL_BYTES) -> LogSummary:
    done: LogSummary | None = ref.scanned_with(sigs, head, tail)  # scanned as it was read (live diagnose)
    if done is not None:
        return done
    summary = LogSummary(ref=ref)
    first = ref.read_head(head)
    if not first:
        summary.empty = True
        return summary
    if first[:4096].count(b"\x00") > 16:
        summary.binary = True
        return summary
    idx = _index(sigs)
    whole = ref.is_whole(head)
    summary.whole = whole
    hw = _scan(first, idx, "head", first=True, last=whole, count_lines=True)
    summary.events = hw.events
    summary.total_steps = hw.total_steps
    times = [t for t in (_edge_time(first, True),) if t]
    if whole:
        t = _edge_time(first, False)
        if t:
            times.append(t)
    else:
        last = ref.read_tail(tail)
        size = ref.size
        # drop the (probably partial) first line of the tail window
        cut = last.find(b"\n")
        last_start = (size - len(last) if size is not None else None), cut + 1
        last = last[cut + 1 :] if cut != -1 else last
        tw = _scan(last, idx, "tail", first=False, last=True, count_lines=False)
        base = None if last_start[0] is None else last_start[0] + last_start[1]
        _merge_tail(summary, tw.events, base, len(first))
        summary.total_steps = tw.total_steps or summary.total_steps
        t = _edge_time(last, False)
        if t:
            times.append(t)
        summary.whole = size is not None and size <= head + tail
    times.extend(e.time for e in summary.events if e.time)
    if times:
        summary.first_time, summary.last_time = min(times), max(times)
    _crash_while_loading(summary)
    return summary


# -- what a framework's bar counts, once the program is known ---------------------------------------------
def resolve_progress(s: LogSummary, program: Any) -> None:
    """Give a framework's training bars their global step from its rule (`Bar.step`), in a program whose code
    shows the framework: Lightning's `Epoch 0: k/M` counts batches, the global step only when each batch is one
    optimizer step, which the program's Trainer says. A step the bar's own postfix shows (`step=`) is kept."""
    stacks = set(getattr(program, "stacks", None) or ())
    rules = [b for fw, b in frameworks.bar_rules() if fw in stacks]
    if not rules:
        return
    for e in s.of("progress"):
        if e.bar != "train" or e.desc is None:
            continue
        bar = next((b for b in rules if b.rx.match(e.desc)), None)
        if bar is None or _POSTFIX_STEP.search(e.message.rpartition("[")[2]):
            continue
        assert bar.step is not None
        e.step = bar.step(e.epoch, e.count, e.total, program)


# -- a crash while loading ------------------------------------------------------------------------------
_MISSING = re.compile(r"FileNotFoundError|No such file or directory|\[Errno 2\]|ENOENT|does not exist|not found")
_QUOTED_PATH = re.compile(r"""['"]([^'"\s]*/[^'"\s]+)['"]""")


def _crash_while_loading(s: LogSummary) -> None:
    """A run that stopped with a traceback before it trained a step, after its resume line or through a
    framework's loading code (`Logs.load_frames`), crashed while loading a checkpoint, whatever its exception
    says: a `load-crash` event is added at the exception line of the program's own traceback (the first one
    through a frame of the program; else the first one), `partial_checkpoint` when a traceback on the way says
    a file inside the checkpoint being resumed is missing (it is incomplete), else `resume_error`. Nothing is
    added when the log names the failure already (a known signature), when the run trained after all (a
    traceback it logged and survived), or when the lines between the two were not read."""
    if s.of("resume_error") or s.of("partial_checkpoint"):
        return  # a known failure text already says it
    events = s.events
    resume = next((e for e in events if e.kind == "resumed"), None)
    after = events[events.index(resume) + 1 :] if resume is not None else events
    if any(_trained(e, resume) for e in after):
        return
    tbs = [e for e in after if e.kind == "traceback" and e.traceback is not None and e.traceback.exc_type]
    if not tbs:
        return
    if resume is None:
        frames = frameworks.load_frames()
        if frames is None or not any(frames.search(f"{f.file}:{f.function}") for e in tbs
                                     for f in e.traceback.frames):  # type: ignore[union-attr]  # fmt: skip
            return  # an error before training, and nothing says it was loading a checkpoint
    crash = next((e for e in tbs if e.traceback.program_frame is not None), tbs[0])  # type: ignore[union-attr]
    if resume is not None and resume.window != crash.window and not s.whole:
        s.load_crash_unknown = (f"its log shows a traceback ({crash.text[:120]}) after its resume line, and the "
                                "middle of the log between them was not read: whether it trained first is unknown")
        return
    _add_load_crash(s, crash, [e.traceback for e in tbs], resume)  # type: ignore[misc]


def _trained(e: LogEvent, resume: LogEvent | None) -> bool:
    """Whether the event shows training went on (a step past where the run began, a save, the end)."""
    if e.kind in ("saved", "save_started", "sigterm_flush", "finished"):
        return True
    if e.kind == "progress" and e.bar == "train":
        began = resume.step if resume is not None and resume.step is not None else 0
        return e.step is None or e.step > began
    return False


def _add_load_crash(s: LogSummary, at: LogEvent, tbs: list[Traceback], resume: LogEvent | None) -> None:
    tb = at.traceback
    assert tb is not None
    ckpt = resume.path if resume is not None else None
    step = resume.step if resume is not None else None
    inside: str | None = None
    for t in tbs:  # a missing file inside the checkpoint being resumed, said by any traceback on the way
        if not _MISSING.search(t.exception):
            continue
        for missing in _QUOTED_PATH.findall(t.message):
            parent = missing.rstrip("/").rsplit("/", 1)[0]
            if (ckpt and missing.startswith(ckpt.rstrip("/") + "/")) or (
                not ckpt and step is not None and _step_from_path(parent) == step
            ):
                inside = inside or parent
    kind = "partial_checkpoint" if inside else "resume_error"
    ckpt = ckpt or inside
    ev = LogEvent(
        kind=kind,
        signature="load-crash",
        framework="generic",
        text=at.text,
        step=step,
        path=ckpt,
        line=at.line,
        window=at.window,
        offset=at.offset,
        time=at.time,
        rank=at.rank,
        message=tb.summary()[:MAX_LINE],
        traceback=tb,
    )
    s.events.insert(s.events.index(at) + 1, ev)


def _merge_tail(summary: LogSummary, tail_events: list[LogEvent], base: int | None, head_len: int) -> None:
    """Append the tail's events, without those of lines the head window already covered."""
    if base is not None:
        summary.events.extend(e for e in tail_events if base + e.offset >= head_len)
        return
    seen = {(e.kind, e.text) for e in summary.events}
    for e in tail_events:
        if (e.kind, e.text) not in seen or e.kind == "progress":
            summary.events.append(e)
            seen.add((e.kind, e.text))
