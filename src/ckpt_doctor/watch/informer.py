"""List, then watch one kind, for as long as the watcher runs.

The loop kopf and client-go informers run, written out for the plain client: a list gives the
resourceVersion to watch from; the watch asks for bookmarks (`allowWatchBookmarks`), so the
resourceVersion it resumes from stays recent even when nothing it watches changes; a watch the server
ends (its `timeoutSeconds`, a dropped connection) is opened again from the last resourceVersion seen;
410 Gone (that resourceVersion is older than the server's history) means changes may have been
missed, so it lists again and tells `on_relist`; other errors back off exponentially (with jitter, up
to `max_backoff` seconds) and retry, at once when `kick()`ed (the watcher read the cluster again: it
answers). Nothing of the objects is kept here.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable
from typing import Any

from ckpt_doctor.sources.live.client import Api, CallError
from ckpt_doctor.sources.live.kinds import Kind
from ckpt_doctor.watch.jlog import JsonLog

OnEvent = Callable[[Kind, str, dict[str, Any]], None]
# list again: returns the resourceVersion to watch from; `first` is the initial list
OnList = Callable[[Kind, bool], str]


class Informer:
    def __init__(
        self,
        api: Api,
        kind: Kind,
        namespace: str | None,
        on_event: OnEvent,
        on_list: OnList,
        stop: threading.Event,
        log: JsonLog,
        label_selector: str | None = None,
        watch_seconds: int = 300,
        max_backoff: float = 30.0,
    ) -> None:
        self.api = api
        self.kind = kind
        self.namespace = namespace
        self.on_event = on_event
        self.on_list = on_list
        self.stop = stop
        self.log = log
        self.label_selector = label_selector
        self.watch_seconds = watch_seconds
        self.max_backoff = max_backoff
        self.synced = threading.Event()  # the first list is done and a watch has been open
        self.connected = False
        self.disconnected_at: float | None = None
        self.failed_at: float | None = None  # the last failed list or watch (monotonic)
        self._retry_now = threading.Event()  # kick(): stop waiting out the backoff
        self.relists = 0
        self.reconnects = 0
        self.errors = 0
        self.events = 0
        self.resource_version = ""
        self._open: set[Any] = set()
        self._lock = threading.Lock()
        self.thread = threading.Thread(target=self.run, name=f"ckpt-watch-{kind.plural}", daemon=True)

    def start(self) -> None:
        self.thread.start()

    def kick(self) -> None:
        """The cluster answers again (a re-diagnosis read it): retry now, from the shortest backoff."""
        self._retry_now.set()

    def close(self) -> None:
        """Stop: close the open watch so the thread ends now, not at the watch's timeout."""
        self._retry_now.set()
        with self._lock:
            responses = list(self._open)
        for r in responses:
            for method in ("shutdown", "close"):  # shutdown() interrupts a read blocked in another thread
                fn = getattr(r, method, None)
                if fn is not None:
                    try:
                        fn()
                    except Exception:
                        pass

    def _track(self, resp: Any) -> None:
        with self._lock:
            self._open.add(resp)
        self.connected, self.disconnected_at = True, None
        self.synced.set()
        if self.stop.is_set():
            self.close()

    def _untrack(self, resp: Any) -> None:
        with self._lock:
            self._open.discard(resp)

    def _down(self) -> None:
        now = time.monotonic()
        if self.connected or self.disconnected_at is None:
            self.disconnected_at = now
        self.failed_at = now
        self.connected = False

    def _wait(self, backoff: float) -> float:
        """Wait out `backoff` (jittered), or until kicked or stopped; returns the next backoff."""
        deadline = time.monotonic() + backoff * random.uniform(0.8, 1.2)
        kicked = False
        while not kicked and not self.stop.is_set() and (left := deadline - time.monotonic()) > 0:
            kicked = self._retry_now.wait(min(left, 0.5))  # a stop without close() is seen within half a second
        self._retry_now.clear()
        return 0.5 if kicked else min(self.max_backoff, backoff * 2)

    def run(self) -> None:
        rv: str | None = None
        first = True
        backoff = 0.5
        while not self.stop.is_set():
            try:
                if rv is None:
                    rv = self.on_list(self.kind, first)
                    if not first:
                        self.relists += 1
                    first = False
                opened = time.monotonic()
                got = False
                for ev in self.api.watch(
                    self.kind,
                    self.namespace,
                    rv,
                    self.label_selector,
                    None,
                    self.watch_seconds,
                    on_open=self._track,
                    on_close=self._untrack,
                ):
                    if self.stop.is_set():
                        return
                    etype, obj = str(ev.get("type") or ""), ev.get("object") or {}
                    if etype == "ERROR":
                        code = int(obj.get("code") or 0) if isinstance(obj, dict) else 0
                        if code == 410:
                            self.log.info("resourceVersion too old: listing again", resource=self.kind.plural,
                                          resourceVersion=rv)  # fmt: skip
                            rv = None
                            break
                        raise CallError("server", str(obj.get("message") if isinstance(obj, dict) else obj), code)
                    meta = obj.get("metadata") if isinstance(obj, dict) else None
                    new_rv = (meta or {}).get("resourceVersion") if isinstance(meta, dict) else None
                    if new_rv:
                        rv = self.resource_version = str(new_rv)
                    got, backoff = True, 0.5
                    if etype == "BOOKMARK":
                        continue
                    self.events += 1
                    self.on_event(self.kind, etype, obj)
                if self.stop.is_set():
                    return
                self.reconnects += 1
                if not got and time.monotonic() - opened < 1.0:  # closed at once: do not spin
                    self._down()
                    backoff = self._wait(backoff)
            except CallError as e:
                if self.stop.is_set():
                    return
                self._down()
                if e.kind == "gone":
                    rv = None
                    continue
                self.errors += 1
                self.log.warning("watch failed; retrying", resource=self.kind.plural, error=f"{e.kind}: {e.message}",
                                 retryIn=round(backoff, 1))  # fmt: skip
                backoff = self._wait(backoff)
            except Exception as e:  # a bug in a handler must not end the watch of a long-running process
                if self.stop.is_set():
                    return
                self._down()
                self.errors += 1
                self.log.error("watch handler failed; retrying", resource=self.kind.plural,
                               error=f"{type(e).__name__}: {e}")  # fmt: skip
                backoff = self._wait(backoff)
