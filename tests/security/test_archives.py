"""Bounded inputs: archive bombs are refused before they fill the disk, the private temp dir goes on every way out
(SIGTERM included), and a directory bundle is never read outside its root."""

from __future__ import annotations

import gzip
import io
import os
import signal
import stat
import subprocess
import sys
import tarfile
import time
from pathlib import Path

import pytest

from ckpt_doctor.errors import InputError
from ckpt_doctor.sources.bundle import DEFAULT_LIMITS, Limits, bundle_dir, load_bundle
from tests.clirun import run_cli

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "healthy-resume"


def _tgz(path: Path, members: list[tuple[str, bytes | int]]) -> Path:
    """An archive; a member given as an int is a header that claims that size, with no data after it."""
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w") as tar:
        for name, data in members:
            info = tarfile.TarInfo(name)
            if isinstance(data, int):
                info.size = data
                tar.addfile(info)  # the header only: what a bomb's first member says about itself
            else:
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
    path.write_bytes(gzip.compress(raw.getvalue()))
    return path


def _ours(tmp: Path) -> set[str]:
    return {p.name for p in tmp.iterdir() if p.name.startswith("ckpt-doctor-")}


@pytest.fixture
def private_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A TMPDIR of the test's own, so that what extraction leaves behind can be seen."""
    import tempfile

    d = tmp_path / "tmp"
    d.mkdir()
    monkeypatch.setenv("TMPDIR", str(d))
    monkeypatch.setattr(tempfile, "tempdir", str(d))
    return d


def test_defaults_are_documented() -> None:
    doc = (ROOT / "docs" / "security.md").read_text()
    assert Limits(2 * 1024**3, 50_000, 200) == DEFAULT_LIMITS
    for text in ("--max-bundle-bytes", "--max-bundle-entries", "--max-bundle-ratio", "2 GiB", "50,000", "200"):
        assert text in doc, text


def test_a_member_claiming_too_much_is_refused_before_it_is_written(tmp_path: Path, private_tmp: Path) -> None:
    bomb = _tgz(tmp_path / "bomb.tgz", [("b/bundle.yaml", b"kind: Bundle\n"), ("b/logs/p.log", 3 * 1024**3)])
    got = run_cli(["diagnose", "--bundle", str(bomb)])
    assert got.rc == 3 and "expands to more than 2147483648 bytes" in got.err and "--max-bundle-bytes" in got.err
    assert _ours(private_tmp) == set()


def test_the_byte_limit_can_be_lowered_and_raised(tmp_path: Path) -> None:
    a = _tgz(tmp_path / "a.tgz", [("b/logs/p.log", b"x" * 5000)])
    low = run_cli(["diagnose", "--bundle", str(a), "--max-bundle-bytes", "4K"])
    assert low.rc == 3 and "more than 4096 bytes" in low.err
    ok = run_cli(["diagnose", "--bundle", str(a), "--max-bundle-bytes", "1M"])
    assert "more than" not in ok.err  # within the limit: read (no TrainJob in it: that is the error now)


def test_a_compression_bomb_is_refused_by_its_ratio(tmp_path: Path, private_tmp: Path) -> None:
    zeros = _tgz(tmp_path / "zeros.tgz", [("b/logs/p.log", b"\0" * (65 * 1024 * 1024))])
    assert zeros.stat().st_size < 200 * 1024  # ratio above 300
    got = run_cli(["diagnose", "--bundle", str(zeros)])
    assert got.rc == 3 and "compression bomb" in got.err and "--max-bundle-ratio" in got.err
    assert _ours(private_tmp) == set()
    raised = run_cli(["diagnose", "--bundle", str(zeros), "--max-bundle-ratio", "100000"])
    assert "compression bomb" not in raised.err


def test_too_many_entries_are_refused(tmp_path: Path) -> None:
    many = _tgz(tmp_path / "many.tgz", [(f"b/objects/f{i}.txt", b"") for i in range(150)])
    got = run_cli(["diagnose", "--bundle", str(many), "--max-bundle-entries", "100"])
    assert got.rc == 3 and "more than 100 entries" in got.err


def test_members_that_escape_are_refused(tmp_path: Path) -> None:
    for name, info_type, link in (("../evil.yaml", tarfile.REGTYPE, ""), ("b/l", tarfile.SYMTYPE, "/etc/passwd")):
        raw = io.BytesIO()
        with tarfile.open(fileobj=raw, mode="w") as tar:
            info = tarfile.TarInfo(name)
            info.type, info.linkname = info_type, link
            tar.addfile(info)
        p = tmp_path / "escape.tgz"
        p.write_bytes(gzip.compress(raw.getvalue()))
        got = run_cli(["diagnose", "--bundle", str(p)])
        assert got.rc == 3 and "refused" in got.err, got.err
    assert not (tmp_path.parent / "evil.yaml").exists()


def test_the_extraction_dir_is_private_and_removed(tmp_path: Path) -> None:
    tgz = tmp_path / "ex.tgz"
    with tarfile.open(tgz, "w:gz") as tar:
        tar.add(EXAMPLE, arcname="healthy-resume")
    with bundle_dir(tgz) as root:
        top = root.parent
        assert stat.S_IMODE(top.stat().st_mode) == 0o700
        assert (root / "bundle.yaml").exists()
    assert not top.exists()
    with pytest.raises(InputError), bundle_dir(tgz) as root:
        top = root.parent
        raise InputError("boom")
    assert not top.exists()


def test_sigterm_during_extraction_leaves_nothing_behind(tmp_path: Path) -> None:
    big = tmp_path / "big.tgz"
    with tarfile.open(big, "w:gz") as tar:  # slow to extract: many small files
        tar.add(EXAMPLE, arcname="b")
        for i in range(40_000):
            info = tarfile.TarInfo(f"b/extra/f{i:05d}.txt")
            info.size = 1
            tar.addfile(info, io.BytesIO(b"x"))
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    env = {**os.environ, "TMPDIR": str(tmp), "PYTHONPATH": str(ROOT / "src")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "ckpt_doctor", "diagnose", "--bundle", str(big)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    deadline = time.monotonic() + 120
    started = False
    while time.monotonic() < deadline and proc.poll() is None:
        dirs = [tmp / d for d in _ours(tmp)]
        if dirs and any((d / "b" / "extra").exists() for d in dirs):
            started = True
            break
        time.sleep(0.01)
    assert started, "extraction never began"
    proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=120)
    assert proc.returncode == 128 + signal.SIGTERM
    assert _ours(tmp) == set(), "the extracted bundle was left in the temp dir"


def test_a_directory_bundle_is_never_read_outside_its_root(tmp_path: Path) -> None:
    import shutil

    root = tmp_path / "b"
    shutil.copytree(EXAMPLE, root)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.log").write_text("root:x:0:0:PLANTED-OUTSIDE\n")
    (outside / "pods.yaml").write_text("apiVersion: v1\nkind: Pod\nmetadata: {name: planted-outside}\n")
    pod = next(p for p in (root / "logs").iterdir() if p.is_dir())
    (pod / "sidecar.log").symlink_to(outside / "secret.log")
    (root / "more").symlink_to(outside, target_is_directory=True)
    (root / "stolen.yaml").symlink_to(outside / "pods.yaml")
    (root / "inside.yaml").symlink_to(root / "trainjob.yaml")  # inside the root: read
    snap = load_bundle(root)
    assert not any(ref.container == "sidecar" for ref in snap.logs.values())
    assert "planted-outside" not in {o.name for o in snap.objects}
    notes = "\n".join(snap.notes)
    assert "sidecar.log: a symlink to a file outside the bundle; not read" in notes
    assert "more: a symlink to a folder outside the bundle; skipped" in notes
    assert "stolen.yaml: a symlink to a file outside the bundle; not read" in notes
    got = run_cli(["diagnose", "--bundle", str(root), "-o", "json"])
    assert got.rc in (0, 1) and "PLANTED-OUTSIDE" not in got.out and "planted-outside" not in got.out
    assert any("outside the bundle" in n for n in got.json()["notes"])
