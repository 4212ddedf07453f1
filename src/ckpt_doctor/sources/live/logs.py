"""Reading container logs through bounded head and tail windows, current and previous instances."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from ckpt_doctor.facts.logs import HEAD_BYTES, TAIL_BYTES
from ckpt_doctor.snapshot import LogRef, LogSpool
from ckpt_doctor.sources.live.client import Api, CallError, kind_words

if TYPE_CHECKING:
    from ckpt_doctor.facts.logs import Signature

NO_PREVIOUS = re.compile(r"previous terminated container .* not found", re.I)

NOT_STARTED = re.compile(r"is waiting to start|ContainerCreating|PodInitializing", re.I)

ROTATED = re.compile(
    r"unable to retrieve container logs|no such file or directory|failed to try resolving symlinks|rotat",
    re.I,
)

BINARY_NULS = 16  # more NUL bytes than this in the first 4 KiB: not text (same test as facts.logs)

LONG_LINE = 8 << 20  # the most read to reach the end of a log whose last line is endless


# -- logs ---------------------------------------------------------------------------------------------


def skipped_marker(head: int, tail: int) -> bytes:
    return (
        f"\n[ckpt-doctor: the middle of this log was not collected; only its first {head} and last {tail} bytes]\n"
    ).encode()


def window_content(head: bytes, tail: bytes | None, head_limit: int) -> bytes:
    """One byte string holding a log's head window, a marker line and its tail window.

    The marker is padded so that the tail starts after `head_limit` bytes: the facts' head window
    then never sees tail lines (whose line numbers are unknown). A bundle file with these bytes reads
    back exactly as the live log did.
    """
    if tail is None:
        return head
    mark = skipped_marker(len(head), len(tail))
    pad = max(0, head_limit - len(head) - len(mark))
    if pad:
        mark = mark[:-1] + b" " * pad + b"\n"
    return head + mark + tail


@dataclass
class LogResult:
    pod: str
    container: str
    previous: bool
    head: bytes | None = None  # None: nothing to keep; the whole log when `tail` is None
    tail: bytes | None = None  # the last bytes, when the middle of the log was not read
    gap: str | None = None  # why it could not be (fully) collected
    absent: str | None = None  # the API said this log does not exist (no previous instance, not started)
    head_limit: int = HEAD_BYTES
    ref: LogRef | None = None  # what the collection keeps of it, made as it was read (a `Keep`); head is then None

    @property
    def content(self) -> bytes | None:
        if self.head is None:
            return None
        return window_content(self.head, self.tail, self.head_limit)

    def log_ref(self, namespace: str) -> LogRef:
        """What a Snapshot holds of this log: the form kept as it was read, else its windows in memory."""
        if self.ref is not None:
            return self.ref
        content = self.content or b""
        return LogRef(self.pod, self.container, self.previous, head=content, size=len(content), namespace=namespace)

    def kept_as(self, ref: LogRef) -> None:
        """Keep `ref` instead of the windows, which are let go."""
        self.ref, self.head, self.tail = ref, None, None


# -- what a collection keeps of each log, decided as the log is read ----------------------------------


class Keep(Protocol):
    """Called once per log read, in the order the logs were asked for, before the next windows are read."""

    def __call__(self, res: LogResult, namespace: str) -> None: ...


class SpoolWindows:
    """Keep each log's windows on disk in a LogSpool, not in memory (`transform`: the redactor, when redacting).

    The windows are the bytes a bundle stores for the log (`window_content`), so a bundle written from the
    Snapshot, the app's log screen and the facts read exactly what they would have read from memory.
    """

    def __init__(self, spool: LogSpool, transform: Callable[[bytes], bytes] | None = None) -> None:
        self.spool = spool
        self.transform = transform

    def __call__(self, res: LogResult, namespace: str) -> None:
        content = res.content
        if content is None:
            return
        if self.transform is not None:
            content = self.transform(content)
        at = self.spool.add(content)
        ref = LogRef(res.pod, res.container, res.previous, size=len(content), namespace=namespace, spool=self.spool,
                     offset=at)  # fmt: skip
        res.kept_as(ref)


class ScanAsRead:
    """Read each log through the facts' log scanner (`facts.logs.scan_log`) as it arrives; keep what it found.

    Only the typed events and the lines they quote stay in memory, not the windows: what `diagnose` and `report`
    need, since the scanner is the only reader of a log's bytes on their way (the LogRef hands the summary back
    to `scan_log`). The scan is the one `facts.attempts` would make (same signatures, same windows), over the
    same bytes (after `transform`, the redactor, when the collection redacts), so the events, their lines and
    their line numbers are the same.
    """

    def __init__(self, sigs: list[Signature], transform: Callable[[bytes], bytes] | None = None) -> None:
        self.sigs = sigs
        self.transform = transform

    def __call__(self, res: LogResult, namespace: str) -> None:
        from ckpt_doctor.facts.logs import scan_log

        content = res.content
        if content is None:
            return
        if self.transform is not None:
            content = self.transform(content)
        whole = LogRef(res.pod, res.container, res.previous, head=content, size=len(content), namespace=namespace)
        summary = scan_log(whole, self.sigs)
        kept = LogRef(
            res.pod,
            res.container,
            res.previous,
            size=len(content),
            namespace=namespace,
            scanned=((self.sigs, HEAD_BYTES, TAIL_BYTES), summary),
        )
        summary.ref = kept
        res.kept_as(kept)


def container_instances(pod: dict[str, Any]) -> list[tuple[str, bool]]:
    """The (container, previous) logs a pod has, from its status, as kubectl would find them."""
    spec = pod.get("spec") or {}
    statuses = {
        s.get("name"): s for s in (pod.get("status") or {}).get("containerStatuses") or [] if isinstance(s, dict)
    }
    out: list[tuple[str, bool]] = []
    for c in spec.get("containers") or []:
        name = c.get("name") if isinstance(c, dict) else None
        if not name:
            continue
        cs = statuses.get(name) or {}
        state = cs.get("state") or {}
        last = (cs.get("lastState") or {}).get("terminated")
        if state.get("running") or state.get("terminated") or last:
            out.append((name, False))
        if last or int(cs.get("restartCount") or 0) > 0:
            out.append((name, True))
    return out


class LogReader:
    """Reads the head and tail windows of one container log, bounded in bytes and requests."""

    def __init__(self, api: Api, head_bytes: int = HEAD_BYTES, tail_bytes: int = TAIL_BYTES) -> None:
        self.api = api
        self.head_bytes = head_bytes
        self.tail_bytes = tail_bytes

    def read(self, namespace: str, pod: str, container: str, previous: bool) -> LogResult:
        res = LogResult(pod, container, previous, head_limit=self.head_bytes)
        what = f"{'previous ' if previous else ''}log of {pod}/{container}"
        try:
            head = self.api.log(pod, namespace, container, previous, limit_bytes=self.head_bytes)
        except CallError as e:
            return self._failed(res, e, what, pod)
        if head[:4096].count(b"\x00") > BINARY_NULS:
            res.gap = f"{what} is binary ({head[:4096].count(0)} NUL bytes in its first 4 KiB), not text"
            return res
        res.head = head
        if len(head) < self.head_bytes:
            return res
        try:
            tail, whole = self._tail(namespace, pod, container, previous, head)
        except CallError as e:
            self._failed(res, e, what, pod)
            res.tail = b""
            return res
        if whole:
            res.head = tail
        else:
            res.tail = tail
        return res

    def _tail(self, ns: str, pod: str, container: str, previous: bool, head: bytes) -> tuple[bytes, bool]:
        """The last `tail_bytes` of the log via tailLines (estimated from the head's line length).

        Returns (data, whole): whole when the log turned out to have fewer lines than asked for, so
        `data` is the entire log.
        """
        want = self.tail_bytes
        cap = 4 * want
        avg = max(1.0, len(head) / max(1, head.count(b"\n")))
        lines = max(16, int(1.5 * want / avg))
        for _ in range(8):
            data = self.api.log(pod, ns, container, previous, limit_bytes=cap, tail_lines=lines)
            if len(data) >= cap:  # the last `lines` lines are longer than the cap: fewer lines
                if lines == 1:
                    if cap < LONG_LINE:  # one endless line (a progress bar): read it up to LONG_LINE bytes
                        cap = LONG_LINE
                        continue
                    return data[-want:], False  # longer still: its end is out of reach of tailLines
                lines = max(1, lines // 4)
                continue
            if len(data) >= want:
                return data[-want:], False
            if data.count(b"\n") < lines - 1:  # fewer lines exist than we asked for: this is all of it
                return data, True
            lines *= 4
        return data[-want:], False

    def _failed(self, res: LogResult, e: CallError, what: str, pod: str) -> LogResult:
        if e.kind == "bad" and (NO_PREVIOUS.search(e.message) or NOT_STARTED.search(e.message)):
            res.absent = f"the API says there is no {what}: {e.message}"  # nothing was ever written there
            return res
        if ROTATED.search(e.message):
            res.gap = f"{what} was rotated or removed on the node: {e.message}"
        elif e.kind == "notfound":
            res.gap = f"pod {pod} was deleted before its log could be read (404)"
        elif e.kind == "forbidden":
            res.gap = f"forbidden: cannot get pods/log of {pod}"
        elif e.kind == "timeout":
            res.gap = f"timed out reading the {what}: {e.message}"
        elif e.kind == "dropped":
            res.gap = f"connection lost while reading the {what} (pod gone?): {e.message}"
        else:
            res.gap = f"{kind_words(e)} reading the {what}: {e.message}"
        return res


def log_gap_name(pod: str, container: str, previous: bool) -> str:
    return f"logs/{pod}/{container}{'.previous' if previous else ''}"
