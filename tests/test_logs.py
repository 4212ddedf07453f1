"""The log scanner on messy real-world logs, within bounded windows."""

from __future__ import annotations

from pathlib import Path

from ckpt_doctor.facts.logs import HEAD_BYTES, load_signatures, scan_log
from ckpt_doctor.snapshot import LogRef

SIGS = load_signatures()


def scan(tmp_path: Path, data: bytes):
    p = tmp_path / "node.log"
    p.write_bytes(data)
    return scan_log(LogRef("pod-0", "node", False, path=p), SIGS)


def kinds(summary) -> list[tuple[str, int | None]]:
    return [(e.kind, e.step) for e in summary.events]


def test_convention_resume_with_crlf_ansi_and_bad_utf8(tmp_path: Path) -> None:
    data = (
        b"\x1b[93mLoading\x1b[0m weights \xff\xfe\r\n"
        b"[checkpoint] resuming from /mnt/ckpt/run-1/checkpoint-150\r\n"
        b"  15%|\xe2\x96\x88\xe2\x96\x8c        | 150/1000 [00:00<?, ?it/s]"
        b"\r 15%| | 151/1000 [00:01<07:40, 1.84it/s]\n"
    )
    s = scan(tmp_path, data)
    assert ("resumed", 150) in kinds(s)
    ev = s.first("resumed")
    assert ev.line == 2 and ev.path == "/mnt/ckpt/run-1/checkpoint-150"
    assert s.first("progress").step == 150 and s.last("progress").step == 151


def test_hf_info_lines_with_llamafactory_prefix(tmp_path: Path) -> None:
    data = (
        b"[INFO|trainer.py:2515] 2026-11-30 08:00:26,646 >> Loading model from /out/checkpoint-300.\n"
        b"[INFO|trainer.py:2302] >>   Continuing training from global step 300\n"
        b"[INFO|trainer.py:3705] >> Saving model checkpoint to /out/checkpoint-400\n"
    )
    assert kinds(scan(tmp_path, data)) == [("resumed", 300), ("resumed", 300), ("saved", 400)]


def test_megatron_iteration_zero_is_a_fresh_start(tmp_path: Path) -> None:
    from ckpt_doctor.facts.attempts import Run
    from ckpt_doctor.snapshot import Obj

    data = (
        b" loading checkpoint from /models/base at iteration 0\n"
        b"  successfully loaded checkpoint from /models/base [ t 0/4, p 0/1 ] at iteration 0\n"
    )
    s = scan(tmp_path, data)
    run = Run(Obj({"kind": "Pod", "metadata": {"name": "p"}}), "node", False, 0, 0, log=s)
    assert run.start()[0] == "fresh"


def test_huge_middle_is_never_read(tmp_path: Path) -> None:
    head = b"[checkpoint] resuming from /mnt/ckpt/r/checkpoint-50\n"
    middle = (b"x" * 1023 + b"\n") * (8 * 1024)  # 8 MiB, one save hidden in it
    middle = middle[: 4 * 1024 * 1024] + b"[checkpoint] saved /mnt/ckpt/r/checkpoint-60\n" + middle[4 * 1024 * 1024 :]
    tail = b"[checkpoint] saved /mnt/ckpt/r/checkpoint-90\n" + b" 9%|| 95/1000 [00:00<07:40, 1.84it/s]\n"
    s = scan(tmp_path, head + middle + tail)
    assert not s.whole
    steps = [e.step for e in s.of("saved")]
    assert steps == [90]  # the middle save lies outside both windows
    assert s.first("resumed").step == 50 and s.last("progress").step == 95
    assert s.last("saved").line is None  # line numbers are unknown in the tail window


def test_megabyte_line_is_cut_around_the_keyword(tmp_path: Path) -> None:
    data = b"A" * (HEAD_BYTES // 2) + b" Saving model checkpoint to /o/checkpoint-7 " + b"B" * (HEAD_BYTES // 2) + b"\n"
    s = scan(tmp_path, data)
    ev = s.first("saved")
    assert ev is not None and ev.step == 7 and len(ev.text) <= 2000


def test_binary_and_empty_logs(tmp_path: Path) -> None:
    assert scan(tmp_path, b"\x00" * 5000).binary
    assert scan(tmp_path, b"").empty


def test_disk_full_and_partial(tmp_path: Path) -> None:
    data = (
        b"OSError: [Errno 28] No space left on device: '/mnt/ckpt/checkpoint-700'\n"
        b"FileNotFoundError: [Errno 2] No such file or directory: '/c/checkpoint-300/trainer_state.json'\n"
    )
    k = [e.kind for e in scan(tmp_path, data).events]
    assert "disk_full" in k and "partial_checkpoint" in k


def test_extra_signature_directory(tmp_path: Path) -> None:
    d = tmp_path / "sigs"
    d.mkdir()
    (d / "mine.yaml").write_text(
        "framework: mine\nsignatures:\n  - id: mine-resume\n    event: resumed\n"
        "    keyword: 'RESUME@'\n    pattern: 'RESUME@(?P<step>\\d+)'\n"
    )
    sigs = load_signatures([d])
    p = tmp_path / "l.log"
    p.write_bytes(b"RESUME@42\n")
    assert scan_log(LogRef("p", "node", False, path=p), sigs).first("resumed").step == 42
