"""The watcher under test: `ckpt-doctor watch` as a subprocess (real HTTP) against FakeKube."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ckpt_doctor.watch.watcher import SYNC_WAIT
from tests.fakeapi.server import FakeKube

ROOT = Path(__file__).resolve().parents[2]
WAIT = 30.0  # seconds any one condition may take on a loaded 2-core machine
# the first diagnoses wait for every watch to be open, up to the watcher's SYNC_WAIT: a first verdict may take that
# long and then WAIT more, when one watch's first list failed on a loaded machine and backed off
FIRST = SYNC_WAIT + WAIT


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_for(cond: Callable[[], Any], what: str, timeout: float = WAIT, every: float = 0.1) -> Any:
    """Poll `cond` until it returns something truthy (returned), or fail saying `what` never happened."""
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        try:
            last = cond()
        except (OSError, urllib.error.URLError, ValueError) as e:
            last = e
        if last and not isinstance(last, Exception):
            return last
        time.sleep(every)
    raise AssertionError(f"timed out after {timeout:g}s waiting for {what} (last: {str(last)[:500]})")


def first_verdicts(cond: Callable[[], Any], log: Path, what: str = "the first verdicts") -> Any:
    """`wait_for` the first verdicts of an in-process watcher; a timeout shows the end of its JSON log (which
    watch did not open, which scan failed)."""
    try:
        return wait_for(cond, what, FIRST)
    except AssertionError as e:
        tail = log.read_text(errors="replace").splitlines()[-15:] if log.exists() else []
        raise AssertionError("\n".join([str(e), "the watcher's log ends:", *tail])) from None


def parse_metrics(text: str) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    """The samples of a Prometheus text exposition, by (name, labels)."""
    from prometheus_client.parser import text_string_to_metric_families

    out = {}
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            out[(s.name, frozenset(s.labels.items()))] = s.value
    return out


def value(samples: dict[tuple[str, frozenset[tuple[str, str]]], float], name: str, **labels: str) -> float | None:
    return samples.get((name, frozenset(labels.items())))


@dataclass
class Watch:
    kube: FakeKube
    port: int
    proc: subprocess.Popen[str]
    kubeconfig: Path
    stderr_path: Path
    notes: dict[str, Any] = field(default_factory=dict)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def get(self, path: str) -> tuple[int, str]:
        try:
            with urllib.request.urlopen(self.url + path, timeout=5) as r:
                return r.status, r.read().decode()
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode()

    def metrics_text(self) -> str:
        code, body = self.get("/metrics")
        assert code == 200, body
        return body

    def samples(self) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
        return parse_metrics(self.metrics_text())

    def logs(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.stderr_path.read_text().splitlines() if line.strip()]

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                return self.proc.wait(timeout=WAIT)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                raise
        return int(self.proc.returncode)


def start_watch(kube: FakeKube, tmp: Path, *args: str) -> Watch:
    """`ckpt-doctor watch ARGS` against `kube`, as a subprocess on a free loopback port; stderr to a file."""
    kc = kube.kubeconfig(tmp / "kubeconfig", namespace="default")
    port = free_port()
    err = tmp / "stderr.jsonl"
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "NO_COLOR": "1"}
    env.pop("CKPT_DOCTOR_DEBUG", None)  # a long-running process logs a check's crash and goes on
    with err.open("w") as stderr:
        proc = subprocess.Popen(
            [sys.executable, "-m", "ckpt_doctor", "watch", "--listen", f"127.0.0.1:{port}", "--kubeconfig", str(kc),
             *args],
            cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=stderr, text=True,
        )  # fmt: skip
    return Watch(kube, port, proc, kc, err)
