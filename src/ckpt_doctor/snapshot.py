"""The Snapshot: everything known about a cluster slice, whatever it came from.

A live collection, an offline bundle and a folder of manifests all produce a Snapshot:
Kubernetes objects (plain dicts, wrapped in `Obj` for typed access), container logs, listings of
checkpoint directories, and the list of things that could not be collected and why.
"""

from __future__ import annotations

import os
import threading
from collections import defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ckpt_doctor.coverage import Coverage
from ckpt_doctor.typed import clean

TRAINER_GROUP = "trainer.kubeflow.org"
JOBSET_GROUP = "jobset.x-k8s.io"


@dataclass(frozen=True)
class Origin:
    """Where an object was read from (for lint findings and error messages)."""

    file: str
    line: int | None = None


@dataclass
class Obj:
    """A Kubernetes object as a dict, with the accessors every rule needs."""

    raw: dict[str, Any]
    origin: Origin | None = None

    @property
    def kind(self) -> str:
        return str(self.raw.get("kind", ""))

    @property
    def api_version(self) -> str:
        return str(self.raw.get("apiVersion", ""))

    @property
    def group(self) -> str:
        av = self.api_version
        return av.split("/", 1)[0] if "/" in av else ""

    @property
    def meta(self) -> dict[str, Any]:
        m = self.raw.get("metadata")
        return m if isinstance(m, dict) else {}

    @property
    def name(self) -> str:
        return str(self.meta.get("name", ""))

    @property
    def namespace(self) -> str | None:
        ns = self.meta.get("namespace")
        return str(ns) if ns else None

    @property
    def uid(self) -> str | None:
        uid = self.meta.get("uid")
        return str(uid) if uid else None

    @property
    def labels(self) -> dict[str, str]:
        lab = self.meta.get("labels")
        return lab if isinstance(lab, dict) else {}

    @property
    def annotations(self) -> dict[str, str]:
        ann = self.meta.get("annotations")
        return ann if isinstance(ann, dict) else {}

    @property
    def spec(self) -> dict[str, Any]:
        s = self.raw.get("spec")
        return s if isinstance(s, dict) else {}

    @property
    def status(self) -> dict[str, Any]:
        s = self.raw.get("status")
        return s if isinstance(s, dict) else {}

    @property
    def created(self) -> str:
        return str(self.meta.get("creationTimestamp") or "")

    def ref(self) -> str:
        """`Kind/namespace/name` (or `Kind/name` for cluster objects), as evidence cites it."""
        return f"{self.kind}/{self.namespace}/{self.name}" if self.namespace else f"{self.kind}/{self.name}"

    def subject(self) -> dict[str, Any]:
        s: dict[str, Any] = {"kind": self.kind, "namespace": self.namespace, "name": self.name}
        if self.origin is not None:
            s["file"] = self.origin.file
            if self.origin.line:
                s["line"] = self.origin.line
        return s

    def conditions(self) -> list[dict[str, Any]]:
        conds = self.status.get("conditions")
        return [c for c in conds if isinstance(c, dict)] if isinstance(conds, list) else []

    def condition(self, ctype: str) -> dict[str, Any] | None:
        for c in self.conditions():
            if c.get("type") == ctype:
                return c
        return None


class LogSpool:
    """Many logs' bytes back to back in one anonymous temporary file, so that a collection holds none in memory.

    The live collector appends each log as it is read (redacted first when the collection is redacted); a LogRef
    then reads its windows from here. The file has no name (`tempfile.TemporaryFile`: unlinked at once), so it
    is gone when the last LogRef using it is, or when the process ends, however it ends: nothing is left behind
    on disk, even after a SIGKILL. It lives in the temporary directory ($TMPDIR).
    """

    def __init__(self, directory: str | None = None) -> None:
        import tempfile  # only a live collection needs it

        self._file = tempfile.TemporaryFile(prefix="ckpt-doctor-logs-", dir=directory)
        self._fd = self._file.fileno()
        self._end = 0
        self._lock = threading.Lock()

    def add(self, data: bytes) -> int:
        """Append `data`; returns its offset."""
        with self._lock:
            at = self._end
            view = memoryview(data)
            while view:
                n = os.pwrite(self._fd, view, at + len(data) - len(view))
                view = view[n:]
            self._end += len(data)
        return at

    def read(self, offset: int, n: int) -> bytes:
        parts: list[bytes] = []
        got = 0
        while got < n:
            chunk = os.pread(self._fd, n - got, offset + got)
            if not chunk:
                break
            parts.append(chunk)
            got += len(chunk)
        return parts[0] if len(parts) == 1 else b"".join(parts)

    @property
    def size(self) -> int:
        return self._end


class WindowsNotKept(RuntimeError):
    """A log scanned as it was read (live diagnose) was asked for its bytes, or scanned with other signatures."""


class LogRef:
    """One container log (current or previous instance), read through bounded windows.

    Facts only ever need the head and the tail of a log, so a reader never loads a whole
    multi-gigabyte file: cost grows with the number of logs, not with their size.

    Where the bytes are: a file (`path`: a bundle's log, read by seeking), memory (`head`, and `tail` when the
    middle was skipped), a LogSpool (`spool`, at `offset`, `size` bytes: the windows of a live collection), or
    nowhere: a log that live `diagnose` read through the log scanner as it arrived keeps only what the scanner
    found (`scanned`: the signatures and windows it was read with, and the LogSummary), which `scanned_with`
    hands back to the scanner (facts.logs.scan_log) instead of reading it again.
    """

    def __init__(
        self,
        pod: str,
        container: str,
        previous: bool,
        path: Path | None = None,
        head: bytes | None = None,
        tail: bytes | None = None,
        size: int | None = None,
        namespace: str | None = None,
        *,
        spool: LogSpool | None = None,
        offset: int = 0,
        scanned: tuple[tuple[Any, int, int], Any] | None = None,
    ) -> None:
        self.pod = pod
        self.container = container
        self.previous = previous
        self.path = path
        self._head = head
        self._tail = tail
        self._size = size
        self.namespace = namespace
        self._spool = spool
        self._offset = offset
        self._scanned = scanned

    @property
    def size(self) -> int | None:
        if self.path is not None:
            return os.path.getsize(self.path)
        return self._size

    @property
    def kept(self) -> bool:
        """Whether the bytes of the log are here to read (False: only what the log scanner found in them)."""
        return self.path is not None or self._spool is not None or self._head is not None or self._scanned is None

    def _gone(self) -> WindowsNotKept:
        return WindowsNotKept(
            f"the log of {self.pod}/{self.container} was read through the log scanner as it arrived and its "
            "windows were not kept: only the scanner's findings are"
        )

    def read_head(self, limit: int) -> bytes:
        if self.path is not None:
            with open(self.path, "rb") as f:
                return f.read(limit)
        if self._spool is not None:
            return self._spool.read(self._offset, min(limit, self._size or 0))
        if not self.kept:
            raise self._gone()
        return (self._head or b"")[:limit]

    def read_tail(self, limit: int) -> bytes:
        """The last `limit` bytes (or the whole log when it is smaller)."""
        if self.path is not None:
            with open(self.path, "rb") as f:
                f.seek(0, os.SEEK_END)
                end = f.tell()
                f.seek(max(0, end - limit))
                return f.read(limit)
        if self._spool is not None:
            size = self._size or 0
            n = min(limit, size)
            return self._spool.read(self._offset + size - n, n)
        if not self.kept:
            raise self._gone()
        data = self._tail if self._tail is not None else (self._head or b"")
        return data[-limit:]

    def is_whole(self, limit: int) -> bool:
        """True when head and tail windows of `limit` bytes cover the entire log."""
        size = self.size
        if size is not None:
            return size <= limit
        return self._tail is None

    def scanned_with(self, sigs: Any, head: int, tail: int) -> Any | None:
        """The LogSummary the scanner made of this log as it was read, if it read it with these signatures and
        windows; None when the log was not read that way (its bytes are here: scan them)."""
        if self._scanned is None:
            return None
        (with_sigs, with_head, with_tail), summary = self._scanned
        if with_head == head and with_tail == tail and (with_sigs is sigs or with_sigs == sigs):
            return summary
        if not self.kept:  # read with other signatures, and nothing left to read again
            raise WindowsNotKept(f"the log of {self.pod}/{self.container} was scanned with other signatures")
        return None

    def __getstate__(self) -> dict[str, Any]:
        """A spooled log travels (pickled: the app's reader process) with its bytes: the spool stays here."""
        state = dict(self.__dict__)
        if self._spool is not None:
            state["_head"] = self.read_head(self._size or 0)
            state["_spool"] = None
            state["_offset"] = 0
        return state

    def __repr__(self) -> str:
        prev = ".previous" if self.previous else ""
        return f"LogRef({self.pod}/{self.container}{prev})"


@dataclass(frozen=True)
class Gap:
    """Something that could not be collected, and why (bundle.yaml `notCollected`)."""

    what: str
    reason: str

    def to_json(self) -> dict[str, str]:
        return {"what": self.what, "reason": self.reason}


LogKey = tuple[str, str, bool]  # (pod, container, previous)
ListingKey = tuple[str, str]  # (pod, container)


@dataclass
class ListingSource:
    """A checkpoint listing as it was collected (contracts.md §2 `checkpoints/<pod>/<container>.txt`), not yet
    read: its text (a bundle's file, or what exec printed), `df -P -B1` of its directory, and the small files kept
    beside it (relative path -> a bundle's file or the bytes `head -c` printed). facts/listing.py reads it."""

    pod: str
    container: str
    display: str  # where it came from, as notes and evidence name it
    path: Path | None = None
    text: str | None = None
    df_path: Path | None = None
    df_text: str | None = None
    files: dict[str, Path | bytes] = field(default_factory=dict)
    problem: str = ""  # why it could not be taken or read (a refused exec, a file too big): unknown

    def read_text(self, limit: int) -> str:
        if self.path is not None:
            size = os.path.getsize(self.path)
            if size > limit:
                raise ValueError(f"{self.display} is {size} bytes, more than the {limit} a listing may have")
            return self.path.read_bytes().decode("utf-8", "surrogateescape")
        return self.text or ""

    def read_df(self) -> str | None:
        if self.df_path is not None:
            return self.df_path.read_bytes()[:65536].decode("utf-8", "replace")
        return self.df_text

    def read_files(self, limit: int) -> dict[str, bytes]:
        out = {}
        for rel, src in self.files.items():
            if isinstance(src, bytes):
                out[rel] = src[:limit]
            else:
                with open(src, "rb") as f:
                    out[rel] = f.read(limit)
        return out


@dataclass
class Snapshot:
    objects: list[Obj] = field(default_factory=list)
    logs: dict[LogKey, LogRef] = field(default_factory=dict)
    checkpoints: dict[ListingKey, ListingSource] = field(default_factory=dict)  # checkpoint listings
    not_collected: list[Gap] = field(default_factory=list)
    meta: dict[str, Any] = field(default_factory=dict)
    source: str = "bundle"  # bundle | live | manifests
    location: str = ""
    coverage: Coverage = field(default_factory=Coverage)
    notes: list[str] = field(default_factory=list)  # what the reader did that the user should know

    def __post_init__(self) -> None:
        self._by_kind: defaultdict[str, list[Obj]] | None = None
        self._by_key: dict[tuple[str, str, str, str], Obj] | None = None

    def add(self, obj: Obj, dedupe: bool = False) -> None:
        """Add an object, its fields checked against their types (typed.clean).

        With `dedupe`, a second copy of the same kind/namespace/name is dropped when identical, and
        otherwise the newer copy (higher resourceVersion, else newer managedFields time) is kept.
        """
        raw, bad = clean(obj.raw, obj.kind)
        if bad:
            obj.raw = raw
            self.coverage.malformed.extend(bad)
        if dedupe and obj.name:
            if self._by_key is None:
                self._by_key = {}
            # a uid tells two objects of one name apart (a JobSet restart recreates its Jobs under their names)
            key = (obj.kind, obj.namespace or "", obj.name, obj.uid or "")
            old = self._by_key.get(key)
            if old is not None:
                self._replace_duplicate(old, obj)
                return
            self._by_key[key] = obj
        self.objects.append(obj)
        if self._by_kind is not None:  # keep the index: readers that look up while adding stay linear
            self._by_kind[obj.kind].append(obj)

    def _replace_duplicate(self, old: Obj, new: Obj) -> None:
        if old.raw == new.raw:
            return
        keep_new, why = _choose(old, new)
        where = " and ".join(o.origin.file for o in (old, new) if o.origin is not None) or "the input"
        self.notes.append(f"{new.ref()} appears twice with different content ({where}); kept {why}")
        if keep_new:
            i = next(i for i, o in enumerate(self.objects) if o is old)
            self.objects[i] = new
            self._by_key[(new.kind, new.namespace or "", new.name, new.uid or "")] = new  # type: ignore[index]
            self._by_kind = None

    def extend(self, objs: Iterable[Obj]) -> None:
        for o in objs:
            self.add(o)

    def of_kind(self, *kinds: str) -> list[Obj]:
        if self._by_kind is None:
            idx: dict[str, list[Obj]] = defaultdict(list)
            for o in self.objects:
                idx[o.kind].append(o)
            self._by_kind = idx
        out: list[Obj] = []
        for k in kinds:
            out.extend(self._by_kind.get(k, ()))
        return out

    def get(self, kind: str, name: str, namespace: str | None = None) -> Obj | None:
        for o in self.of_kind(kind):
            if o.name == name and (namespace is None or o.namespace in (None, namespace)):
                return o
        return None

    def gap_for(self, *whats: str) -> Gap | None:
        """The first recorded gap whose `what` names any of `whats` (prefix match)."""
        for g in self.not_collected:
            for w in whats:
                if g.what == w or g.what.startswith(w + "/") or g.what.startswith(w + " "):
                    return g
        return None

    def logs_of(self, pod: str) -> Iterator[LogRef]:
        """The logs of one pod, in the order they were added. Through an index of the logs by pod, built on the
        first call and rebuilt when `logs` changed: a caller asking for every pod's logs walks them once."""
        for key in self.log_index().get(pod, ()):
            ref = self.logs.get(key)
            if ref is not None:
                yield ref

    def log_index(self) -> dict[str, list[LogKey]]:
        """The keys of `logs` by pod name (rebuilt when keys were added or removed since it was made)."""
        idx = self.__dict__.get("_logs_by_pod")
        if idx is None or idx[0] is not self.logs or idx[1] != len(self.logs) or not _same_keys(idx[2], self.logs):
            by: dict[str, list[LogKey]] = {}
            for key in self.logs:
                by.setdefault(key[0], []).append(key)
            idx = self.__dict__["_logs_by_pod"] = (self.logs, len(self.logs), by)
        return idx[2]


def _same_keys(by_pod: dict[str, list[LogKey]], logs: dict[LogKey, LogRef]) -> bool:
    """Whether an index of the logs by pod still holds `logs`' keys (same count checked by the caller): the
    newest key of the dict (dicts keep insertion order) must be in it, which a removal and an addition break."""
    if not logs:
        return not by_pod
    last = next(reversed(logs))
    return last in by_pod.get(last[0], ())


def _rv(o: Obj) -> int | None:
    rv = o.meta.get("resourceVersion")
    return int(rv) if isinstance(rv, str) and rv.isdigit() else None


def _managed_time(o: Obj) -> str:
    times = [str(m.get("time") or "") for m in o.meta.get("managedFields") or [] if isinstance(m, dict)]
    return max(times, default="")


def _choose(old: Obj, new: Obj) -> tuple[bool, str]:
    """(keep the new copy?, which was kept and why): the higher resourceVersion, else the newer
    managedFields time, else the first copy read."""
    ro, rn = _rv(old), _rv(new)
    if ro is not None and rn is not None and ro != rn:
        return rn > ro, f"the one with the higher resourceVersion ({max(ro, rn)})"
    to, tn = _managed_time(old), _managed_time(new)
    if to and tn and to != tn:
        return tn > to, f"the one managed last ({max(to, tn)})"
    return False, "the first one read"
