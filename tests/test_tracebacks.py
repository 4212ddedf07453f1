"""Tracebacks are typed events (facts/tracebacks.py), read from the real runs' logs (recordings/) the same under
every dress a setup gives them, and a crash between a resume line and the first training step is a crash while
loading whatever its exception says (issue 19 §4)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from ckpt_doctor.data import recordings_dir
from ckpt_doctor.facts.attempts import Run
from ckpt_doctor.facts.logs import LogSummary, load_signatures, scan_log
from ckpt_doctor.snapshot import LogRef, Obj

SIGS = load_signatures()
LOGS = sorted(
    p for p in recordings_dir().glob("*/attempt-*.log") if b"Traceback (most recent call last)" in p.read_bytes()
)


def _scan(tmp_path: Path, data: bytes, name: str = "node.log") -> LogSummary:
    p = tmp_path / name
    p.write_bytes(data)
    return scan_log(LogRef("pod-0", "node", False, path=p), SIGS)


def _typed(s: LogSummary) -> list[tuple]:
    out = []
    for e in s.of("traceback"):
        tb = e.traceback
        assert tb is not None
        pf = tb.program_frame
        out.append((tb.exc_type, tb.message, tuple((f.file, f.line, f.function, f.code) for f in tb.frames),
                    (pf.file, pf.line) if pf else None, tb.chained))  # fmt: skip
    return out


def _lines(raw: bytes) -> list[bytes]:
    return raw.splitlines(keepends=True)


DRESSES = {
    "kubectl-timestamps": lambda raw: b"".join(b"2026-12-02T00:57:33.%06dZ " % i + ln
                                               for i, ln in enumerate(_lines(raw))),
    "kubectl-prefix": lambda raw: b"".join(b"[pod/trainer-node-0-0-x7k2p/node] " + ln for ln in _lines(raw)),
    "rank-tag": lambda raw: b"".join(b"[rank0]: " + ln for ln in _lines(raw)),
    "crlf": lambda raw: raw.replace(b"\n", b"\r\n"),
    # the container runtime's json-file log driver: every line a record, its text (indentation kept) in `log`
    "docker-json": lambda raw: b"".join(
        json.dumps({"log": ln.decode("utf-8", "replace"), "stream": "stderr", "time": "2026-12-02T00:57:33Z"}).encode()
        + b"\n" for ln in _lines(raw)),
}  # fmt: skip


def test_the_recordings_have_tracebacks() -> None:
    assert len(LOGS) >= 8


@pytest.mark.parametrize("log", LOGS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_recorded_tracebacks_are_typed(tmp_path: Path, log: Path) -> None:
    got = _typed(_scan(tmp_path, log.read_bytes()))
    assert got and all(t[0] and t[2] for t in got), got  # each has its exception type and its frames
    for exc_type, _msg, frames, _pf, _ch in got:
        assert re.fullmatch(r"(?:\w+\.)*[A-Z]\w*", exc_type)
        assert all(f[0].startswith("/") and f[1] > 0 for f in frames)


@pytest.mark.parametrize("dress", DRESSES)
@pytest.mark.parametrize("log", LOGS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_a_traceback_reads_the_same_in_any_dress(tmp_path: Path, log: Path, dress: str) -> None:
    raw = log.read_bytes()
    assert _typed(_scan(tmp_path, DRESSES[dress](raw), "dressed.log")) == _typed(_scan(tmp_path, raw))


def test_the_program_frame_is_the_scripts_own() -> None:
    """accelerate's load_state raised inside torch.serialization, reached from the program's line 46."""
    log = recordings_dir() / "accelerate-1.15-partial-save" / "attempt-1.log"
    tb = next(e.traceback for e in scan_log(LogRef("p", "node", False, path=log), SIGS).of("traceback"))
    assert tb is not None and tb.exc_type == "FileNotFoundError"
    assert tb.program_frame is not None and (tb.program_frame.file, tb.program_frame.function) == (
        "/workspace/train.py", "main") and "load_state" in tb.program_frame.code  # fmt: skip
    assert tb.raised_in is not None and tb.raised_in.file.endswith("torch/serialization.py")


# the recorded crashes while loading: a resume line, then a traceback before any training step
LOAD_CRASHES = [
    (run, i) for run in sorted(p.name for p in recordings_dir().iterdir() if (p / "run.yaml").is_file())
    for i, a in enumerate(__import__("yaml").safe_load((recordings_dir() / run / "run.yaml").read_text())["attempts"])
    if a.get("crashed_while_loading")
]  # fmt: skip
TEXTS = {
    "runtime": b"RuntimeError: Error(s) happened somewhere deep inside",
    "custom": b"mylib.errors.StateMismatch: shard 3 of 8 does not match the plan",
    "assertion": b"AssertionError",
}


def _rewrite_exceptions(raw: bytes, new: bytes) -> bytes:
    """Every traceback's exception line replaced by `new` (and no known failure text left behind)."""
    out, in_tb = [], False
    for ln in _lines(raw):
        tag = re.match(rb"\[rank\d+\]: ?", ln)
        body = ln[tag.end() if tag else 0 :].rstrip(b"\r\n")
        if body.startswith(b"Traceback (most recent call last)"):
            in_tb = True
        elif in_tb and body and not body.startswith((b" ", b"\t")):
            out.append((tag.group(0) if tag else b"") + new + b"\n")
            in_tb = False
            continue
        out.append(ln)
    return b"".join(out)


def test_there_are_recorded_crashes_while_loading() -> None:
    assert len(LOAD_CRASHES) >= 4 and len({r.split("-")[0] for r, _i in LOAD_CRASHES}) >= 2


@pytest.mark.parametrize("text", TEXTS)
@pytest.mark.parametrize(("run", "i"), LOAD_CRASHES, ids=[f"{r}-a{i}" for r, i in LOAD_CRASHES])
def test_a_crash_after_the_resume_line_is_a_crash_while_loading_whatever_it_says(
    tmp_path: Path, run: str, i: int, text: str
) -> None:
    raw = _rewrite_exceptions((recordings_dir() / run / f"attempt-{i}.log").read_bytes(), TEXTS[text])
    s = _scan(tmp_path, raw)
    assert any(e.text.endswith(TEXTS[text].decode()) for e in s.of("traceback"))
    crash = [e for e in s.events if e.kind in ("resume_error", "partial_checkpoint")]
    assert crash and crash[0].signature == "load-crash" and crash[0].text.endswith(TEXTS[text].decode())
    run_ = Run(Obj({"kind": "Pod", "metadata": {"name": "p"}}), "node", False, 0, 0, exit_code=1, log=s)
    assert run_.start()[0] == "resumed" and run_.last_step() is None


def test_a_crash_after_training_began_is_no_crash_while_loading(tmp_path: Path) -> None:
    """The same traceback after the run's first steps is a crash in training."""
    log = (recordings_dir() / "accelerate-1.15-partial-save" / "attempt-1.log").read_bytes()
    at = log.index(b"Traceback (most recent call last)")
    steps = b"".join(b" %d%%|#| %d/40 [00:0%d<00:10,  2.00it/s]\r" % (i * 2, 30 + i, i) for i in range(1, 4)) + b"\n"
    s = _scan(tmp_path, log[:at] + steps + log[at:])
    assert not s.of("resume_error") and not s.of("partial_checkpoint")


def test_a_missing_file_inside_the_resumed_checkpoint_makes_it_incomplete(tmp_path: Path) -> None:
    data = (b"resuming from /ckpt/run/step_000300 (global_step 300)\n"
            b"Traceback (most recent call last):\n"
            b'  File "/app/train.py", line 90, in load_checkpoint\n'
            b"    state = torch.load(os.path.join(path, 'optim.pt'))\n"
            b"FileNotFoundError: [Errno 2] No such file or directory: '/ckpt/run/step_000300/optim.pt'\n"
            b"Traceback (most recent call last):\n"
            b'  File "/app/train.py", line 91, in load_checkpoint\n'
            b"FileNotFoundError: [Errno 2] No such file or directory: '/data/tokenizer.json'\n")  # fmt: skip
    s = _scan(tmp_path, data)
    ev = s.first("partial_checkpoint")
    assert ev is not None and ev.path == "/ckpt/run/step_000300" and ev.step == 300
    other = _scan(tmp_path, data.replace(b"'/ckpt/run/step_000300/optim.pt'", b"'/data/vocab.json'"), "b.log")
    assert not other.of("partial_checkpoint") and other.first("resume_error") is not None


@pytest.mark.parametrize(("run", "i"), LOAD_CRASHES, ids=[f"{r}-a{i}" for r, i in LOAD_CRASHES])
def test_an_unread_middle_between_resume_and_traceback_is_unknown(tmp_path: Path, run: str, i: int) -> None:
    """The recorded crash while loading with 400 KB of warnings between its resume line and its traceback: the
    middle is not read, so whether the run trained first is unknown (never 'no checkpoint-loading error')."""
    raw = (recordings_dir() / run / f"attempt-{i}.log").read_bytes()
    at = raw.index(b"Traceback (most recent call last)")
    at = raw.rfind(b"\n", 0, at) + 1
    noise = b"UserWarning: this DataLoader will create 8 worker processes in total.\n" * 6000
    s = _scan(tmp_path, raw[:at] + noise + raw[at:])
    assert not s.whole and s.first("resumed") is not None
    assert not [e for e in s.events if e.signature == "load-crash"]
    assert s.load_crash_unknown or s.of("partial_checkpoint") or s.of("resume_error")  # a known text still says it
