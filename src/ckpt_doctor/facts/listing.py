"""Checkpoint listings (contracts.md §2 `checkpoints/`) read into typed entries.

A listing is what a read-only command printed about a checkpoint directory, taken inside a trainer
container or a reader pod, or by hand:

    find DIR -maxdepth 4 -printf '%y %s %T@ %p\\n'     type, bytes, mtime (epoch seconds), path
    ls -laR --time-style=full-iso DIR                  GNU ls: times to the nanosecond
    ls -laR DIR                                         busybox and other minimal images: to the minute

optionally preceded by `# dir: PATH`, `# at: RFC3339`, `# pod: NAME`, `# container: NAME` comments
(other `#` lines are ignored). Beside it, `df -P -B1 DIR` (`.df`) and small files whose content
decides completeness (`<container>/<relative path>`).

Every line is parsed; a line that is none of the above makes the listing *malformed*: unknown with
the reason, never an empty directory. The commands' own complaints are facts: `No such file or
directory` for the directory itself says it does not exist (seen absent); `Permission denied` for a
sub-directory says that part could not be read (what is under it is unknown). Reading is one pass
over the lines.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

from ckpt_doctor.frameworks.completeness import Node

FORMATS = ("find", "ls-full-iso", "ls")
MAX_LISTING_BYTES = 64 * 1024 * 1024  # a listing bigger than this is refused (unknown), not read
MAX_SMALL_FILE = 64 * 1024  # what `head -c` keeps of a small state file
_HEADER = re.compile(r"^#\s*(dir|at|pod|container|trainjob)\s*:\s*(.*?)\s*$", re.I)
_FIND = re.compile(r"^([a-zA-Z]) (\d+) (\d+(?:\.\d+)?) (.+)$")
_MODE = r"([-dlcbpsD?])[-rwxsStTlL]{9}[.+@]?"
_FULL_ISO = re.compile(
    _MODE + r"\s+\d+\s+\S+\s+\S+\s+(\d+|\d+,\s*\d+)\s+(\d{4}-\d\d-\d\d) (\d\d:\d\d:\d\d(?:\.\d+)?) ([+-]\d{4}) (.+)$"
)
_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
# ls without --time-style: `Dec  2 00:21` (recent), `Dec  2  2025` (older than six months), and busybox
# `ls -e`: `Tue Dec  2 00:21:12 2026`
_COARSE = re.compile(
    _MODE + r"\s+\d+\s+\S+\s+\S+\s+(\d+|\d+,\s*\d+)\s+(?:[A-Z][a-z]{2}\s+)?([A-Z][a-z]{2})\s+(\d{1,2})\s+"
    r"(\d\d:\d\d:\d\d \d{4}|\d\d:\d\d|\d{4}) (.+)$"
)
_TOTAL = re.compile(r"^total \d+(?:\.\d+)?[KMG]?$")
_NOISE = ("Defaulted container ", "Unable to use a TTY")  # kubectl's own notes on stderr
_ERROR = re.compile(r"^(?:find|ls|busybox|/bin/ls|/usr/bin/find): (.*)$")
_QUOTED = re.compile(r"['‘\"](.+?)['’\"]")


@dataclass(frozen=True)
class DiskFree:
    """`df -P -B1 DIR` of the volume the listing is on (bytes)."""

    filesystem: str
    size: int
    used: int
    available: int
    mount: str
    line: str


@dataclass
class Listing:
    """One listing of a checkpoint directory, as evidence of what existed at `at` (not before, not after)."""

    pod: str
    container: str
    source: str  # where it was read: checkpoints/<pod>/<container>.txt, or `exec in POD/CONTAINER`
    dir: str = ""
    at: str = ""  # RFC 3339 as the header gave it; "" when not known
    at_epoch: float | None = None
    format: str = ""  # find | ls-full-iso | ls
    precision: float = 0.0  # seconds an mtime may be short of the truth (60 for `ls` without full times)
    root: Node | None = None  # the directory and what it holds; None when it does not exist or is unknown
    entries: int = 0
    exists: bool | None = None  # False: the command said the directory does not exist
    problem: str = ""  # why the listing is unknown (malformed, unreadable, refused); "" when it is seen
    unreadable: list[str] = field(default_factory=list)  # paths under it the command could not read
    df: DiskFree | None = None
    df_problem: str = ""
    files: dict[str, bytes] = field(default_factory=dict)  # path relative to `dir` -> content (small files)
    trainjob: str = ""  # `# trainjob:` header (a reader pod's listing names the TrainJob it was taken for)

    @property
    def seen(self) -> bool:
        return not self.problem

    def node(self, rel: str) -> Node | None:
        """The entry at `rel` (a path relative to the listed directory), or None."""
        cur = self.root
        for part in [p for p in rel.split("/") if p and p != "."]:
            if cur is None:
                return None
            cur = cur.children.get(part)
        return cur

    def file_text(self, rel: str) -> str | None:
        """The content of a small file kept beside the listing, or None when it was not kept."""
        data = self.files.get(rel.strip("/"))
        return None if data is None else data.decode("utf-8", "replace")


def parse_listing(text: str, pod: str, container: str, source: str, reference: float | None = None) -> Listing:
    """Parse one listing. `reference` (epoch seconds: the bundle's collection time) dates `ls` times that carry
    no year when the listing has no `# at:`."""
    lst = Listing(pod, container, source)
    body: list[tuple[int, str]] = []
    for n, raw in enumerate(text.splitlines(), 1):
        line = raw.rstrip("\r")
        if not line.strip():
            body.append((n, ""))
            continue
        if line.startswith("#"):
            m = _HEADER.match(line)
            if m:
                key, value = m.group(1).lower(), m.group(2)
                if key == "at":
                    lst.at, lst.at_epoch = value, _rfc3339(value)
                    if lst.at_epoch is None:
                        lst.problem = f"line {n}: '# at: {value}' is not an RFC 3339 time"
                        return lst
                elif key == "dir":
                    lst.dir = value.rstrip("/") or "/"
                elif key == "pod" and value:
                    lst.pod = value
                elif key == "container" and value:
                    lst.container = value
                elif key == "trainjob":
                    lst.trainjob = value
            continue
        if line.startswith(_NOISE):
            continue
        body.append((n, line))
    first = next((line for _n, line in body if line), "")
    if not first:
        lst.problem = "the listing is empty: find and ls print at least the directory itself"
        return lst
    ref = lst.at_epoch if lst.at_epoch is not None else reference
    if _FIND.match(first) or (_ERROR.match(first) and not any(_ls_line(x) for _n, x in body)):
        _read_find(lst, body)
    else:
        _read_ls(lst, body, ref)
    if not lst.problem and lst.root is None and lst.exists is not False:
        lst.problem = "no entry for the listed directory itself"
    return lst


def _ls_line(line: str) -> bool:
    return line.endswith(":") or bool(_TOTAL.match(line)) or bool(_FULL_ISO.match(line) or _COARSE.match(line))


def _bad(lst: Listing, n: int, line: str, what: str) -> None:
    shown = line if len(line) <= 120 else line[:119] + "…"
    lst.problem = f"line {n} is no {what} line: {shown!r}"


def _error(lst: Listing, n: int, line: str) -> bool:
    """A complaint of find or ls: the directory missing (seen absent) or a part of it unreadable."""
    m = _ERROR.match(line)
    if m is None:
        return False
    msg = m.group(1)
    q = _QUOTED.search(msg)
    path = (q.group(1) if q else msg.split(":", 1)[0]).rstrip("/")
    low = msg.lower()
    if "no such file or directory" in low:
        if not lst.dir or path in (lst.dir, lst.dir.rstrip("/")) or lst.root is None:
            lst.exists = False
            lst.dir = lst.dir or path
        else:
            lst.unreadable.append(f"{path}: vanished while it was listed")
        return True
    if "permission denied" in low or "cannot open" in low or "input/output error" in low:
        if lst.root is None and (not lst.dir or path == lst.dir):
            lst.problem = f"line {n}: the directory could not be read: {msg}"
        else:
            lst.unreadable.append(f"{path}: {msg.rsplit(':', 1)[-1].strip()}")
        return True
    lst.problem = f"line {n}: the command failed: {line[:160]}"
    return True


# -- find -printf '%y %s %T@ %p\n' ------------------------------------------------------------------------
def _read_find(lst: Listing, body: list[tuple[int, str]]) -> None:
    lst.format = "find"
    for n, line in body:
        if not line:
            continue
        m = _FIND.match(line)
        if m is None:
            if _error(lst, n, line):
                if lst.problem:
                    return
                continue
            _bad(lst, n, line, "`find -printf '%y %s %T@ %p'`")
            return
        kind, size, mtime, path = m.group(1), int(m.group(2)), float(m.group(3)), m.group(4)
        _add(lst, path, kind, size, mtime, n)
        if lst.problem:
            return


def _add(lst: Listing, path: str, kind: str, size: int | None, mtime: float | None, n: int,
         target: str | None = None) -> None:  # fmt: skip
    path = path.rstrip("/") or "/"
    if lst.root is None:
        if lst.dir and path != lst.dir:
            if not path.startswith(lst.dir.rstrip("/") + "/"):
                lst.problem = f"line {n}: {path!r} is not under the listed directory {lst.dir!r}"
                return
            lst.root = Node(Path(lst.dir).name or lst.dir, lst.dir, "d", None, None, 0)  # its own line came later
        else:
            lst.dir = path
            lst.root = Node(Path(path).name or path, path, _kind(kind), size, mtime, n, target)
            lst.exists = True
            lst.entries += 1
            return
    lst.exists = True
    base = lst.dir.rstrip("/")
    if path == lst.dir:
        r = lst.root
        r.kind, r.size, r.mtime, r.line = _kind(kind), size, mtime, n
        lst.entries += 1
        return
    if not path.startswith(base + "/"):
        lst.problem = f"line {n}: {path!r} is not under the listed directory {lst.dir!r}"
        return
    parts = path[len(base) + 1 :].split("/")
    cur = lst.root
    for i, part in enumerate(parts):
        nxt = cur.children.get(part)
        if nxt is None:
            sub = base + "/" + "/".join(parts[: i + 1])
            nxt = Node(part, sub, "d", None, None, 0) if i < len(parts) - 1 else Node(part, sub, "d", None, None, n)
            cur.children[part] = nxt
        cur = nxt
    cur.kind, cur.size, cur.mtime, cur.line, cur.target = _kind(kind), size, mtime, n, target
    lst.entries += 1


def _kind(letter: str) -> str:
    return {"d": "d", "f": "f", "-": "f", "l": "l"}.get(letter, "o")


# -- ls -laR -----------------------------------------------------------------------------------------------
def _read_ls(lst: Listing, body: list[tuple[int, str]], reference: float | None) -> None:
    current: str | None = None
    coarse = False
    for n, line in body:
        if not line:
            continue
        if line.endswith(":") and not _FULL_ISO.match(line) and not _COARSE.match(line):
            current = line[:-1].rstrip("/") or "/"
            if lst.root is None and not lst.dir:
                lst.dir = current
            continue
        if _TOTAL.match(line):
            continue
        if _error(lst, n, line):
            if lst.problem:
                return
            continue
        if current is None:
            _bad(lst, n, line, "`ls -laR` (no `DIR:` header before it)")
            return
        m = _FULL_ISO.match(line)
        if m is not None:
            kind, size_s, day, clock, tz, name = m.groups()
            mtime = _iso_epoch(day, clock, tz)
            lst.format = lst.format or "ls-full-iso"
            if "." not in clock:  # busybox --full-time: whole seconds
                lst.precision = max(lst.precision, 1.0)
        else:
            c = _COARSE.match(line)
            if c is None:
                _bad(lst, n, line, "`ls -laR`")
                return
            kind, size_s, mon, dd, when, name = c.groups()
            mtime, step = _coarse_epoch(mon, int(dd), when, reference)
            coarse = True
            lst.precision = max(lst.precision, step)
            lst.format = "ls"
        size = int(size_s) if size_s.isdigit() else None
        target = None
        if kind == "l" and " -> " in name:
            name, target = name.split(" -> ", 1)
        if name == "..":
            continue
        path = current if name == "." else (current.rstrip("/") + "/" + name if current != "/" else "/" + name)
        if lst.root is None and path != (lst.dir or path):
            _add(lst, lst.dir, "d", None, None, 0)
        _add(lst, path, kind, size, mtime, n, target)
        if lst.problem:
            return
    if coarse and lst.format == "ls" and reference is None:
        lst.precision = max(lst.precision, 60.0)


def _iso_epoch(day: str, clock: str, tz: str) -> float | None:
    try:
        whole, _, frac = clock.partition(".")
        base = datetime.strptime(f"{day} {whole}", "%Y-%m-%d %H:%M:%S")
        sign = 1 if tz[0] == "+" else -1
        off = timezone(sign * timedelta(hours=int(tz[1:3]), minutes=int(tz[3:5])))
        return base.replace(tzinfo=off).timestamp() + (float("0." + frac) if frac else 0.0)
    except ValueError:
        return None


def _coarse_epoch(mon: str, day: int, when: str, reference: float | None) -> tuple[float | None, float]:
    """An `ls` time without a year or without seconds: (epoch, how many seconds it may be short)."""
    if mon not in _MONTHS:
        return None, 60.0
    month = _MONTHS.index(mon) + 1
    try:
        if len(when) == 4 and when.isdigit():  # `Dec  2  2025`: a date only
            return datetime(int(when), month, day, tzinfo=UTC).timestamp(), 86400.0
        if " " in when:  # busybox -e: `00:21:12 2026`
            clock, year = when.split(" ")
            h, mi, s = (int(x) for x in clock.split(":"))
            return datetime(int(year), month, day, h, mi, s, tzinfo=UTC).timestamp(), 1.0
        if reference is None:
            return None, 60.0
        h, mi = (int(x) for x in when.split(":"))
        ref = datetime.fromtimestamp(reference, tz=UTC)
        t = datetime(ref.year, month, day, h, mi, tzinfo=UTC)
        if t.timestamp() > reference + 86400:  # ls shows this form for the last six months: last year's date
            t = t.replace(year=ref.year - 1)
        return t.timestamp(), 60.0
    except ValueError:
        return None, 60.0


def _rfc3339(s: str) -> float | None:
    try:
        return datetime.fromisoformat(s.strip().replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


# -- df -P -B1 DIR ------------------------------------------------------------------------------------------
_DF = re.compile(r"^(?P<fs>.+?)\s+(?P<size>\d+)\s+(?P<used>\d+)\s+(?P<avail>\d+)\s+(?P<cap>\d+%|-)\s+(?P<mount>/.*)$")
_DF_UNIT = re.compile(r"^Filesystem\s+(\d+)([KMG]?)(?:B)?-blocks\b", re.I)


def parse_df(text: str) -> tuple[DiskFree | None, str]:
    """(the volume's sizes in bytes, "") or (None, why it cannot be read)."""
    unit = 1
    rows = [ln.rstrip("\r") for ln in text.splitlines() if ln.strip() and not ln.startswith(_NOISE)]
    if not rows:
        return None, "the df output is empty"
    head = _DF_UNIT.match(rows[0])
    if head is not None:
        unit = int(head.group(1)) * {"": 1, "K": 1024, "M": 1024**2, "G": 1024**3}[head.group(2).upper()]
        rows = rows[1:]
    elif rows[0].startswith("Filesystem"):
        return None, f"df's header does not give its block size (run df -P -B1): {rows[0][:80]!r}"
    if len(rows) != 1:
        return None, f"df printed {len(rows)} rows for one directory; expected one"
    m = _DF.match(rows[0])
    if m is None:
        return None, f"not a line of df -P: {rows[0][:120]!r}"
    return DiskFree(m["fs"], int(m["size"]) * unit, int(m["used"]) * unit, int(m["avail"]) * unit, m["mount"],
                    rows[0]), ""  # fmt: skip


def epoch_text(t: float | None) -> str:
    """An mtime as RFC 3339 with milliseconds (UTC), as evidence quotes it."""
    if t is None:
        return ""
    return datetime.fromtimestamp(t, tz=UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
