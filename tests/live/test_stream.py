"""Live collection keeps what it reads of each log as it reads it, never every window at once (issue 14).

`diagnose` and `report` read each log through the log scanner as it arrives and keep only what it found
(`ScanAsRead`); everything else spools the windows to an anonymous temporary file (`SpoolWindows`). These tests
hold them to the behaviour of keeping the windows in memory: the same events, lines and line numbers, the same
findings and evidence as the collected bundle, nothing leaked by the faces that no longer redact the Snapshot,
and a bounded number of windows read ahead.
"""

from __future__ import annotations

import asyncio
import json
import os
import pickle
from pathlib import Path
from typing import Any

import pytest

from ckpt_doctor.facts.logs import load_signatures, scan_log
from ckpt_doctor.snapshot import LogRef, LogSpool, WindowsNotKept
from ckpt_doctor.sources.live import Collector, collect_live, connect
from ckpt_doctor.sources.live.logs import LogResult, ScanAsRead
from tests.clirun import run_cli
from tests.fakeapi.server import FakeKube
from tests.live.conftest import serving
from tests.live.scenario import NAME, NS, Scenario, pod_name
from tests.scenario import tqdm


def big_log(index: int, size: int = 400_000) -> bytes:
    """A log longer than the head and tail windows together, with events in both and in the skipped middle."""
    out = bytearray(
        f"rank {index} starting\n[checkpoint] no prior checkpoint in /ckpt/{NAME}, starting fresh\n".encode()
    )
    step = 0
    while len(out) < size:
        step += 1
        out += "".join(tqdm(s, 10_000) for s in range(step * 5 - 4, step * 5 + 1)).encode() + b"\n"
        out += f"{{'loss': {2.0 - step / 1e4:.4f}, 'epoch': 0.1}}\n".encode()
        if step % 40 == 0:
            out += f"[checkpoint] saved /ckpt/{NAME}/checkpoint-{step * 5}\n".encode()
    out += b"RuntimeError: NCCL communicator was aborted\n"
    return bytes(out)


@pytest.fixture
def big() -> Any:
    with serving() as kube:
        sc = Scenario(pods=3)
        sc.load(kube)
        for i in range(sc.pods):
            kube.set_log(NS, pod_name(NAME, i, 1), "node", big_log(i))
        yield kube


def _events(ref: LogRef, sigs: list[Any]) -> list[tuple[Any, ...]]:
    s = scan_log(ref, sigs)
    head = (s.binary, s.empty, s.whole, s.first_time, s.last_time, s.total_steps)
    return [
        head,
        *((e.kind, e.signature, e.line, e.window, e.offset, e.text, e.step, e.path, e.time) for e in s.events),
    ]


def test_scanned_as_read_equals_scanning_the_kept_windows(big: FakeKube, tmp_path: Path) -> None:
    kc = big.kubeconfig(tmp_path / "kc", namespace=NS)
    sigs = load_signatures([])
    scanned = collect_live(NAME, kubeconfig=str(kc), redact=False, scan=sigs, quiet=True)
    spooled = collect_live(NAME, kubeconfig=str(kc), redact=False, quiet=True)
    assert sorted(scanned.logs) == sorted(spooled.logs) and len(scanned.logs) == 4
    for key, ref in scanned.logs.items():
        assert not ref.kept
        with pytest.raises(WindowsNotKept):
            ref.read_head(10)
        assert ref.size == spooled.logs[key].size
        assert _events(ref, sigs) == _events(spooled.logs[key], sigs), key
    whole = spooled.logs[(pod_name(NAME, 0, 1), "node", False)]
    assert not whole.is_whole(256 * 1024)  # the middle was skipped: both windows and their events are compared
    assert any(e[3] == "tail" for e in _events(scanned.logs[(pod_name(NAME, 0, 1), "node", False)], sigs)[1:])


def test_a_log_scanned_with_other_signatures_says_so() -> None:
    sigs = load_signatures([])
    res = LogResult("p", "node", False, head=b"[checkpoint] saved /ckpt/x/checkpoint-5\n")
    ScanAsRead(sigs)(res, NS)
    assert res.head is None and res.ref is not None
    assert scan_log(res.ref, sigs).events[0].kind == "saved"
    with pytest.raises(WindowsNotKept):
        scan_log(res.ref, sigs[1:])


def test_live_findings_and_evidence_equal_the_collected_bundle(big: FakeKube, tmp_path: Path) -> None:
    kc = big.kubeconfig(tmp_path / "kc", namespace=NS)
    live = run_cli(["diagnose", NAME, "--kubeconfig", str(kc), "-q", "-o", "json", "-v"])
    out = tmp_path / "b.tar.gz"
    got = run_cli(["collect", NAME, "--kubeconfig", str(kc), "-q", "--no-redact", "-o", str(out)])
    assert got.rc == 0, got.err
    offline = run_cli(["diagnose", "--bundle", str(out), "--trainjob", NAME, "-o", "json", "-v"])
    assert live.rc == offline.rc

    def key(doc: dict[str, Any]) -> list[Any]:
        return sorted(json.dumps([f["rule"], f["status"], f.get("evidence")], sort_keys=True) for f in doc["findings"])

    a, b = json.loads(live.out), json.loads(offline.out)
    assert key(a) == key(b)
    quoted = [e for f in a["findings"] for e in f.get("evidence") or [] if e.get("type") == "log"]
    assert any(e.get("line") for e in quoted)  # line numbers are compared, not only texts


def test_logs_are_read_a_bounded_number_ahead(tmp_path: Path) -> None:
    workers = 3
    with serving() as kube:
        Scenario(pods=30).load(kube)
        kc = kube.kubeconfig(tmp_path / "kc", namespace=NS)
        cluster = connect(kubeconfig=str(kc))
        started: list[int] = []
        seen: list[tuple[int, int]] = []

        def keep(res: LogResult, namespace: str) -> None:
            seen.append((len(started), len(seen)))

        col = Collector(cluster, NS, NAME, workers=workers, keep=keep)
        read = col.logs.read
        col.logs.read = lambda *a: started.append(1) or read(*a)  # type: ignore[method-assign]
        out = col.collect()
    assert len(seen) == len(out.logs) == 31
    assert all(begun <= 2 * workers + kept + 1 for begun, kept in seen)


def test_the_spool_holds_windows_without_a_name(tmp_path: Path) -> None:
    spool = LogSpool(str(tmp_path))
    assert os.fstat(spool._fd).st_nlink == 0 and not list(tmp_path.iterdir())  # nothing to leave behind
    data = b"line one\nline two\n" * 1000
    at = spool.add(b"other log\n")
    ref = LogRef("p", "c", False, size=len(data), spool=spool, offset=spool.add(data))
    mem = LogRef("p", "c", False, head=data, size=len(data))
    assert at == 0 and spool.size == len(data) + 10
    for n in (1, 5, len(data), 10 * len(data)):
        assert ref.read_head(n) == mem.read_head(n) and ref.read_tail(n) == mem.read_tail(n)
        assert ref.is_whole(n) == mem.is_whole(n)
    back = pickle.loads(pickle.dumps(ref))  # the app's reader process sends its views pickled
    assert back.read_head(len(data)) == data and back.read_tail(9) == data[-9:]


def test_collect_spools_the_windows_it_redacts(tmp_path: Path) -> None:
    """The bundle holds the redacted windows, and the Snapshot kept them on disk, not in memory."""
    secret = "hunter2-Planted-Value-0001"
    with serving() as kube:
        sc = Scenario(pods=2, secrets={"DB_PASSWORD": secret}, log_lines=[f"connecting with {secret}"])
        sc.load(kube)
        kc = kube.kubeconfig(tmp_path / "kc", namespace=NS)
        snap = collect_live(NAME, kubeconfig=str(kc), quiet=True)
    refs = list(snap.logs.values())
    assert refs and all(r.path is None and r._spool is not None and r._head is None for r in refs)
    text = b"".join(r.read_head(r.size or 0) for r in refs)
    assert secret.encode() not in text and b"<redacted:" in text
    assert snap.meta["redactions"] > 0


# -- the faces that read a live Snapshot unredacted: what they print is still redacted ----------------------


async def _live_app(target: str, kc: Path, out: Path) -> bytes:
    from ckpt_doctor.tui.app import DoctorApp
    from ckpt_doctor.tui.target import Target

    out.mkdir(parents=True, exist_ok=True)
    app = DoctorApp(Target(trainjob=target, kubeconfig=str(kc), timeout=10.0), export_dir=out)
    async with app.run_test(size=(160, 50)) as pilot:
        for _ in range(600):
            await pilot.pause()
            await app.workers.wait_for_complete()
            if app.view is not None and app.view.diag is not None:
                break
        else:
            raise AssertionError("the app never showed the diagnosis")
        app.action_export_report()
        await pilot.pause()
        await app.workers.wait_for_complete()  # the export writes in a worker
        for key in ("o", "f", "l", "e"):
            await pilot.press(key)
            await pilot.pause()
            app.action_screenshot()
    return b"".join(p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file())


def test_live_report_and_app_leak_no_planted_secret(tmp_path: Path) -> None:
    from tests.security.corpus import NAME as JOB
    from tests.security.corpus import NS as JOB_NS
    from tests.security.corpus import build, kubeconfig, leaks

    c = build()
    bundle = c.scenario.write(tmp_path / "handmade")
    with FakeKube() as kube:
        kube.load_bundle(bundle)
        kc = kubeconfig(tmp_path / "kubeconfig", kube.url, c)
        outs: dict[str, bytes] = {}
        for fmt in ("markdown", "html"):
            got = run_cli(["report", f"{JOB_NS}/{JOB}", "--kubeconfig", str(kc), "-o", fmt, "-q"])
            assert got.rc == 0, got.err
            outs[f"report live -o {fmt}"] = (got.out + got.err).encode("utf-8", "surrogateescape")
        outs["app live: export and screenshots"] = asyncio.run(_live_app(f"{JOB_NS}/{JOB}", kc, tmp_path / "exports"))
    assert all(outs.values())
    assert {k: [p.secret for p in leaks(v, c.plants)] for k, v in outs.items()} == {k: [] for k in outs}
