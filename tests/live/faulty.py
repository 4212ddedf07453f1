"""A FakeKube with the faults tests/fakeapi cannot inject yet: per-resource delays and log-read hooks.

Work-arounds, reported to the fakeapi author: `FakeKube.fault()` answers a fixed message per status and has
no delay, so a timeout on one resource, a kubelet's "rotated log" message, a pod deleted between the pod list
and its log read, and a log stream cut half-way are simulated here by overriding two internal methods.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from tests.fakeapi import server
from tests.fakeapi.server import ApiError, FakeKube

LogHook = Callable[["FaultyKube", str | None, str | None, dict[str, str]], Any]


class FaultyKube(FakeKube):
    def __init__(self, **kw: Any) -> None:
        super().__init__(**kw)
        self.slow: dict[str, float] = {}  # "plural" or "plural/sub" -> seconds to wait before answering
        self.log_hooks: dict[str, LogHook] = {}  # pod name -> what its log read does

    def _check_faults(self, verb: str, rt: Any, sub: str | None, ns: str | None, name: str | None) -> None:
        delay = self.slow.get(f"{rt.plural}/{sub}" if sub else rt.plural)
        if delay:
            time.sleep(delay)
        super()._check_faults(verb, rt, sub, ns, name)

    def _pod_log(self, ns: str | None, name: str | None, query: dict[str, str]) -> Any:
        hook = self.log_hooks.get(name or "")
        if hook is not None:
            return hook(self, ns, name, query)
        return super()._pod_log(ns, name, query)


def vanish(kube: FaultyKube, ns: str | None, name: str | None, query: dict[str, str]) -> Any:
    """The pod is deleted (a JobSet restart) after it was listed, before its log is read."""
    kube.delete("pods", ns, name or "")
    return FakeKube._pod_log(kube, ns, name, query)


def rotated(kube: FaultyKube, ns: str | None, name: str | None, query: dict[str, str]) -> Any:
    """What the kubelet answers when the container's log file was rotated away or removed."""
    path = f"/var/log/pods/{ns}_{name}_0b1e/node/0.log"
    raise ApiError(400, f'failed to try resolving symlinks in path "{path}": lstat {path}: no such file or directory')


def cut(kube: FaultyKube, ns: str | None, name: str | None, query: dict[str, str]) -> Any:
    """The log stream starts, then the connection drops (the node went away mid-read)."""
    stream = FakeKube._pod_log(kube, ns, name, query)

    def run(emit: Callable[[bytes], None]) -> None:
        emit(b"rank 1 starting\n")
        raise server._Dropped

    return server._Stream(stream.content_type, run)
