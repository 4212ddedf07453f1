"""The live fleet scan with its diagnoses in worker processes: the same bytes in the same order as in one
process, and Ctrl-C / SIGTERM end the scan and its workers (real processes, real signals)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.clirun import run_cli
from tests.fakeapi.server import FakeKube
from tests.fleet.cluster import SHARED_NS, crowd, mixed
from tests.live.conftest import REAL_KUBECONFIG, serving

pytestmark = pytest.mark.skipif(
    bool(REAL_KUBECONFIG) or not hasattr(os, "fork"), reason="seeds the fake API server; workers are forked"
)

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def same_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    """One collection time for every collection (the workers are forked: they inherit it)."""
    monkeypatch.setattr("ckpt_doctor.sources.live.collector.now_rfc3339", lambda: "2026-12-01T00:00:00Z")


def submitted(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The TrainJobs the parent handed to a worker, in the order it did."""
    from ckpt_doctor.fleet import procs

    seen: list[str] = []
    real = procs.Pool.submit

    def spy(self: Any, out: Any, cluster: Any, namespace: str, name: str, redact: bool) -> Any:
        seen.append(f"{namespace}/{name}")
        return real(self, out, cluster, namespace, name, redact)

    monkeypatch.setattr(procs.Pool, "submit", spy)
    return seen


@pytest.mark.parametrize("fmt", ["json", "text", "sarif", "junit"])
def test_workers_print_the_same_bytes_in_the_same_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fmt: str
) -> None:
    from ckpt_doctor.fleet.procs import MIN_JOBS_PER_PROCESS

    with serving() as kube:
        jobs = mixed(kube)
        assert len(jobs) >= 2 * MIN_JOBS_PER_PROCESS  # else the scan would not fork
        kc = kube.kubeconfig(tmp_path / "kc", namespace=SHARED_NS)
        one = run_cli(["diagnose", "-A", "--kubeconfig", str(kc), "-q", "-o", fmt, "--processes", "1"])
        seen = submitted(monkeypatch)
        two = run_cli(["diagnose", "-A", "--kubeconfig", str(kc), "-q", "-o", fmt, "--processes", "2"])
    assert one.rc in (0, 1), one.err
    assert sorted(seen) == [f"{ns}/{n}" for ns, n in jobs]  # every diagnosis went to a worker
    assert (two.rc, two.out, two.err) == (one.rc, one.out, one.err)
    if fmt == "json":  # the diagnoses, printed one by one, are set in as the whole document printed at once has them
        assert one.out == json.dumps(json.loads(one.out), indent=2, ensure_ascii=False) + "\n"


def test_a_small_scan_stays_in_one_process(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with serving() as kube:
        crowd(kube, 1, pods=2)  # and the live scenario's neighbour: 2 TrainJobs
        kc = kube.kubeconfig(tmp_path / "kc", namespace="fleet-0")
        seen = submitted(monkeypatch)
        got = run_cli(["diagnose", "-A", "--kubeconfig", str(kc), "-q", "-o", "json", "--processes", "8"])
    assert got.rc in (0, 1), got.err
    assert seen == [] and len(got.json()["diagnoses"]) == 2


def _children(pid: int) -> set[int]:
    kids: set[int] = set()
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            kids |= {int(k) for k in (task / "children").read_text().split()}
        except OSError:
            pass
    return kids


def _until(cond: Callable[[], bool], seconds: float) -> bool:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if cond():
            return True
        time.sleep(0.02)
    return cond()


@pytest.fixture
def slow_fleet(tmp_path: Path) -> Iterator[Path]:
    with FakeKube(latency_ms=300) as kube:
        crowd(kube, 32, namespaces=2, pods=2)
        yield kube.kubeconfig(tmp_path / "kc", namespace="fleet-0")


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="finds the workers through /proc")
@pytest.mark.parametrize("how", ["ctrl-c", "sigterm"])
def test_a_signal_ends_the_scan_and_its_workers(slow_fleet: Path, how: str) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "NO_COLOR": "1"}
    cmd = [sys.executable, "-m", "ckpt_doctor", "diagnose", "-A", "--kubeconfig", str(slow_fleet), "-q",
           "-o", "json", "--processes", "2"]  # fmt: skip
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    try:
        assert _until(lambda: len(_children(proc.pid)) >= 2 or proc.poll() is not None, 60), "no workers started"
        workers = _children(proc.pid)
        assert proc.poll() is None, "the scan ended before it could be interrupted"
        if how == "ctrl-c":  # the terminal sends it to the whole process group
            os.killpg(proc.pid, signal.SIGINT)
        else:
            proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode == 130, err
    assert b"interrupted" in err and b"Traceback" not in err, err.decode()[-2000:]
    assert out == b""
    assert _until(lambda: not any(Path(f"/proc/{w}").exists() for w in workers), 10), "a worker outlived the scan"


def test_unreadable_signatures_are_each_diagnosis_s_error_as_in_one_process(tmp_path: Path) -> None:
    bad = tmp_path / "sigs"
    bad.mkdir()
    (bad / "broken.yaml").write_text("signatures: [not closed\n")
    with serving() as kube:
        crowd(kube, 8, pods=2)
        kc = kube.kubeconfig(tmp_path / "kc", namespace="fleet-0")
        args = ["diagnose", "-A", "--kubeconfig", str(kc), "-q", "-o", "json", "--signatures", str(bad)]
        one = run_cli([*args, "--processes", "1"])
        two = run_cli([*args, "--processes", "2"])
    assert (two.rc, two.out, two.err) == (one.rc, one.out, one.err)
    assert all(r.get("error") for r in one.json()["trainjobs"])


@pytest.mark.parametrize("busy", [False, True])
def test_ending_the_workers_leaves_no_pool_thread_for_exit_to_wake(busy: bool) -> None:
    """After `terminate` the pool's manager thread is gone: on Python 3.11 interpreter exit writes to a pipe of a
    manager thread still running, and if that thread closes the pipe at the same moment the user's one-line
    "interrupted" is followed by an "Exception ignored ... Bad file descriptor" traceback (seen once in CI)."""
    import threading
    from concurrent.futures.process import _ExecutorManagerThread

    from ckpt_doctor.fleet import procs
    from ckpt_doctor.fleet.scan import Diagnoser

    pool = procs.Pool(Diagnoser(), 2)
    if busy:  # a worker in the middle of a call when the scan is stopped
        pool._pool.submit(time.sleep, 30)
    pool.terminate()
    left = [t for t in threading.enumerate() if isinstance(t, _ExecutorManagerThread) and t.is_alive()]
    assert not left
