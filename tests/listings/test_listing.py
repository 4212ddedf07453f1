"""Checkpoint listings (contracts.md §2) read into typed entries: the three documented formats, taken with the
real tools (GNU find and ls, busybox ls and df) over one directory, read to the same tree; the commands' own
complaints; malformed input unknown with the reason, never an empty directory."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from ckpt_doctor.facts.listing import parse_df, parse_listing

FIX = Path(__file__).parent / "fixtures"
AT = 1796170872.965  # 2026-12-02T00:21:12.965Z, when the fixture directory was listed


def _tree(lst) -> dict[str, tuple[str, int | None]]:
    return {n.path: (n.kind, n.size if n.kind == "f" else None) for n in lst.root.walk()}


def _read(name: str, reference: float | None = AT):
    return parse_listing((FIX / name).read_text(), "pod-a", "node", f"checkpoints/pod-a/{name}", reference)


def test_find_listing_with_headers() -> None:
    lst = _read("find.txt", None)
    assert lst.seen and lst.format == "find" and lst.exists
    assert lst.dir == "/mnt/checkpoints/run" and lst.at == "2026-12-02T00:21:12.965Z"
    assert lst.precision == 0.0
    ck = lst.node("checkpoint-30")
    assert ck is not None and ck.kind == "d" and set(ck.children) == {"config.json", "generation_config.json",
                                                                       "model.safetensors"}
    assert lst.node("checkpoint-20/trainer_state.json").size == 1390
    assert lst.node("notes v2.txt") is not None  # a name with a space
    assert lst.node("last").kind == "l"


@pytest.mark.parametrize("name", ["ls-gnu.txt", "ls-busybox.txt", "ls-busybox-full.txt"])
def test_every_format_reads_to_the_same_tree(name: str) -> None:
    ref = _read("find.txt", None)
    lst = _read(name)
    assert lst.seen, lst.problem
    assert lst.dir == "/mnt/checkpoints/run"
    assert _tree(lst) == _tree(ref)
    assert lst.node("last").target == "checkpoint-20"
    for n in ref.root.walk():
        if n.kind == "l" or n.mtime is None:
            continue
        got = lst.node(n.path[len(ref.dir) + 1 :] if n.path != ref.dir else "")
        assert got is not None and got.mtime is not None, n.path
        # each format's own precision: nanoseconds, whole seconds (busybox --full-time), minutes (plain ls)
        assert got.mtime <= n.mtime + 1e-3 and n.mtime - got.mtime < max(lst.precision, 1e-3), (n.path, lst.precision)


def test_a_busybox_listing_without_a_year_needs_a_time_to_date_it() -> None:
    lst = _read("ls-busybox.txt", None)
    assert lst.seen and lst.precision == 60.0
    assert lst.node("checkpoint-10").mtime is None  # undated: unknown, not the epoch
    # a date later than the listing's time is last year's (ls shows the time only for the last six months)
    early = parse_listing((FIX / "ls-busybox.txt").read_text(), "p", "c", "x", AT - 10 * 86400)
    assert early.node("checkpoint-10").mtime < AT - 300 * 86400


@pytest.mark.parametrize("name", ["find-absent.txt", "ls-absent.txt"])
def test_a_missing_directory_is_seen_absent(name: str) -> None:
    lst = _read(name)
    assert lst.seen and lst.exists is False and lst.root is None
    assert lst.dir == "/nonexistent/run"


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("", "empty"),
        ("# dir: /x\n# at: 2026-12-02T00:00:00Z\n", "empty"),
        ("d 4096 1.0 /x\nthis is not a listing line\n", "line 2"),
        ("d 4096 1.0 /x\nf 10 2.0 /y/file\n", "not under"),
        ("# at: yesterday\nd 4096 1.0 /x\n", "RFC 3339"),
        ("-rw-r--r-- 1 root root 10 2026-12-02 00:00:00.0 +0000 a\n", "no `DIR:` header"),
        ("/x:\ntotal 0\nsomething odd\n", "line 3"),
        ("find: '/x': Permission denied\n", "could not be read"),
    ],
)
def test_malformed_listings_are_unknown_with_the_reason(text: str, why: str) -> None:
    lst = parse_listing(text, "p", "c", "checkpoints/p/c.txt")
    assert not lst.seen and why in lst.problem, lst.problem


def test_an_unreadable_part_is_named_and_the_rest_is_read() -> None:
    text = ("d 4096 1.0 /x\nd 4096 2.0 /x/checkpoint-10\nfind: '/x/checkpoint-10': Permission denied\n"
            "d 4096 3.0 /x/checkpoint-20\n")  # fmt: skip
    lst = parse_listing(text, "p", "c", "x")
    assert lst.seen and lst.unreadable == ["/x/checkpoint-10: Permission denied"]
    assert lst.node("checkpoint-20") is not None


def test_kubectl_notes_and_crlf_are_not_entries() -> None:
    text = "Defaulted container \"node\" out of: node, sidecar\r\nd 4096 1.0 /x\r\nf 3 2.0 /x/a b\r\n"
    lst = parse_listing(text, "p", "c", "x")
    assert lst.seen and lst.node("a b").size == 3


@pytest.mark.parametrize("name", ["df-gnu.txt", "df-busybox.txt", "df-busybox-k.txt"])
def test_df(name: str) -> None:
    df, why = parse_df((FIX / name).read_text())
    assert df is not None, why
    assert df.size > df.available > 0 and df.mount == "/"
    gnu, _ = parse_df((FIX / "df-gnu.txt").read_text())
    assert gnu is not None and abs(df.size - gnu.size) < 1024 * 1024


@pytest.mark.parametrize("text", ["", "Filesystem Size Used Avail Use% Mounted on\n/dev/a 1G 1G 0 100% /\n",
                                  "Filesystem 1-blocks Used Available Capacity Mounted on\n/dev/a 1 2\n"])
def test_df_that_cannot_be_read(text: str) -> None:
    df, why = parse_df(text)
    assert df is None and why


def _tools() -> list[list[str]]:
    out = [["find", "{d}", "-maxdepth", "4", "-printf", "%y %s %T@ %p\\n"],
           ["ls", "-laR", "--time-style=full-iso", "{d}"]]  # fmt: skip
    bb = os.environ.get("CKPT_DOCTOR_BUSYBOX") or shutil.which("busybox")
    if bb:
        out += [[bb, "ls", "-laR", "{d}"], [bb, "ls", "-laR", "--full-time", "{d}"]]
    return out


@pytest.mark.parametrize("argv", _tools(), ids=lambda a: " ".join(a[:3]))
def test_the_real_commands_on_a_fresh_directory(tmp_path: Path, argv: list[str]) -> None:
    """The commands as collect runs them, on this machine (busybox when installed: CKPT_DOCTOR_BUSYBOX)."""
    d = tmp_path / "run"
    (d / "checkpoint-10").mkdir(parents=True)
    (d / "checkpoint-10" / "trainer_state.json").write_text("{}")
    (d / "step=10.ckpt").write_bytes(b"x" * 100)
    out = subprocess.run([a.replace("{d}", str(d)) for a in argv], capture_output=True, text=True,
                         env={**os.environ, "TZ": "UTC", "LC_ALL": "C"}, check=True).stdout  # fmt: skip
    import time

    lst = parse_listing(out, "p", "c", "x", time.time())
    assert lst.seen, lst.problem
    assert lst.node("checkpoint-10/trainer_state.json").size == 2
    assert lst.node("step=10.ckpt").size == 100
