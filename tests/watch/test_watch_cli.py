"""`ckpt-doctor watch` refuses to start with a clear line and the contract's exit code."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from ckpt_doctor.errors import UsageError
from ckpt_doctor.watch.http import parse_listen
from tests.clirun import run_cli
from tests.live.conftest import REAL_KUBECONFIG, serving


def test_listen_addresses() -> None:
    assert parse_listen(":9808") == ("", 9808)
    assert parse_listen("127.0.0.1:0") == ("127.0.0.1", 0)
    assert parse_listen("[::1]:9808") == ("::1", 9808)
    for bad in ("9808", "host:", "host:http", ":70000"):
        with pytest.raises(UsageError):
            parse_listen(bad)


def test_usage_errors() -> None:
    bad = run_cli(["watch", "--listen", "nowhere"])
    assert bad.rc == 2 and "--listen 'nowhere'" in bad.err
    assert run_cli(["watch", "-A", "-n", "x"]).rc == 2


@pytest.mark.skipif(bool(REAL_KUBECONFIG), reason="injects faults on the fake API server")
def test_cannot_start_is_exit_3(tmp_path: Path) -> None:
    with serving() as kube:
        kc = kube.kubeconfig(tmp_path / "kc")
        kube.fault(verb="list", resource="trainjobs", status=403)
        forbidden = run_cli(["watch", "-A", "--kubeconfig", str(kc), "--listen", "127.0.0.1:0"])
        kube.clear_faults()
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            s.listen()
            taken = run_cli(["watch", "--kubeconfig", str(kc), "--listen", f"127.0.0.1:{s.getsockname()[1]}"])
        kube.stop()
        gone = run_cli(["watch", "--kubeconfig", str(kc), "--listen", "127.0.0.1:0", "--request-timeout", "2"])
    assert forbidden.rc == 3 and "forbidden" in forbidden.err and "rbac --fleet --check" in forbidden.err
    assert taken.rc == 3 and "cannot listen on 127.0.0.1:" in taken.err
    assert gone.rc == 3 and "cannot reach the cluster" in gone.err
