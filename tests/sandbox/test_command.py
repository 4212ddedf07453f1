"""`ckpt-doctor sandbox` as a user runs it: `ready <URL> kubeconfig <FILE>` on stdout once it serves, a kubeconfig
a real kubectl uses, running until SIGINT or SIGTERM, then a clean exit 0 that removes the kubeconfig it chose;
an existing --kubeconfig file is refused without --force, an unknown scenario is a usage error."""

from __future__ import annotations

import os
import shutil
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.clirun import run_cli
from tests.drill.conftest import ROOT

KUBECTL = shutil.which("kubectl", path=str(Path(sys.executable).parent)) or shutil.which("kubectl")


def start(*args: str) -> tuple[subprocess.Popen[str], str, Path]:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    proc = subprocess.Popen([sys.executable, "-m", "ckpt_doctor", "sandbox", "--speed", "1", *args], cwd=ROOT,
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    line = proc.stdout.readline()  # blocks until it serves (or exits)
    assert line.startswith("ready "), (line, proc.stderr.read() if proc.poll() is not None else "")
    _, url, _, kc = line.split()
    return proc, url, Path(kc)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_it_serves_until_stopped_and_cleans_up(sig: signal.Signals) -> None:
    proc, url, kc = start("--scenario", "healthy-resume")
    try:
        assert url.startswith("http://127.0.0.1:") and kc.is_file()
        assert stat.S_IMODE(kc.stat().st_mode) == 0o600
        if KUBECTL:
            got = subprocess.run([KUBECTL, "--kubeconfig", str(kc), "get", "trainjobs", "-o", "name"],
                                 capture_output=True, text=True, timeout=30)
            assert got.stdout.split() == ["trainjob.trainer.kubeflow.org/healthy-resume"], got.stderr
            version = subprocess.run([KUBECTL, "--kubeconfig", str(kc), "version", "-o", "json"],
                                     capture_output=True, text=True, timeout=30)
            assert "+ckpt-doctor-sandbox" in version.stdout
    finally:
        proc.send_signal(sig)
        rc = proc.wait(timeout=30)
    err = proc.stderr.read() if proc.stderr else ""
    assert rc == 0, err
    assert "sandbox (simulated cluster)" in err and f"stopped by {sig.name}" in err
    assert "Traceback" not in err
    assert not kc.exists() and not kc.parent.exists()


def test_a_kubeconfig_given_is_kept_and_an_existing_one_is_refused(tmp_path: Path) -> None:
    kc = tmp_path / "kubeconfig"
    kc.write_text("apiVersion: v1\nkind: Config\n# someone's real kubeconfig\n")
    refused = run_cli(["sandbox", "--kubeconfig", str(kc)])
    assert refused.rc == 3 and "--force" in refused.err
    assert "someone's real kubeconfig" in kc.read_text()
    proc, _url, got = start("--scenario", "checkpoint-on-emptydir", "--kubeconfig", str(kc), "--force")
    try:
        assert got == kc and "ckpt-doctor-sandbox" in kc.read_text()
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0
    assert kc.exists()  # the user's path: left for them


def test_usage() -> None:
    bad = run_cli(["sandbox", "--scenario", "nope"])
    assert bad.rc == 2 and "healthy-resume" in bad.err
    listed = run_cli(["sandbox", "--list"])
    assert listed.rc == 0 and "rwo-on-two-nodes" in listed.out
    assert run_cli(["sandbox", "--speed", "0"]).rc == 2


def test_a_port_in_use_is_one_line_and_exit_3() -> None:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        t0 = time.monotonic()
        got = run_cli(["sandbox", "--port", str(port), "--scenario", "healthy-resume"])
    assert got.rc == 3 and f"127.0.0.1:{port}" in got.err and "Traceback" not in got.err
    assert time.monotonic() - t0 < 30


def test_a_kubeconfig_it_created_is_removed_and_a_stale_one_replaced(tmp_path: Path) -> None:
    """The README's two-terminal recipe run twice: the --kubeconfig FILE the sandbox created goes on a clean stop,
    and one left by a sandbox that was killed (SIGKILL: no way out) is replaced without --force."""
    kc = tmp_path / "sandbox.kubeconfig"
    proc, _url, got = start("--scenario", "healthy-resume", "--kubeconfig", str(kc))
    assert got == kc and kc.is_file()
    proc.send_signal(signal.SIGINT)
    assert proc.wait(timeout=30) == 0
    assert not kc.exists()
    proc, _url, _got = start("--scenario", "healthy-resume", "--kubeconfig", str(kc))
    proc.kill()
    proc.wait(timeout=30)
    assert kc.is_file()  # killed: left behind
    proc, _url, _got = start("--scenario", "healthy-resume", "--kubeconfig", str(kc))
    try:
        assert "left by an earlier sandbox" in (proc.stderr.readline() if proc.stderr else "")
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0
    assert not kc.exists()
