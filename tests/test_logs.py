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


# -- the corpus of real lines (tests/corpus/logs/<signature file stem>.yaml) -----------------------
import re as _re  # noqa: E402

import pytest  # noqa: E402
import yaml  # noqa: E402

from ckpt_doctor.data import rules_dir  # noqa: E402

CORPUS = Path(__file__).resolve().parent / "corpus" / "logs"
SIG_BY_ID = {s.id: s for s in SIGS}
FIELDS = ("kind", "signature", "step", "path", "epoch", "bar", "total", "count", "rank", "time")


def _corpus() -> list[tuple[str, str, dict, str, dict]]:
    cases = []
    for f in sorted(CORPUS.glob("*.yaml")):
        doc = yaml.safe_load(f.read_text(encoding="utf-8"))
        for sid, spec in doc["signatures"].items():
            for i, v in enumerate(spec.get("variants", [])):
                line, over = (v, {}) if isinstance(v, str) else (v["line"], v.get("expect", {}))
                cases.append((f"{f.stem}:{sid}:variant{i}", sid, spec, line, over))
            for i, n in enumerate(spec.get("near", [])):
                cases.append((f"{f.stem}:{sid}:near{i}", sid, spec, n["line"], {"__near__": n}))
    return cases


CASES = _corpus()


def _matches(ev, want: dict) -> bool:
    return all(getattr(ev, k) == v for k, v in want.items())


def _scan_line(tmp_path: Path, line: str):
    return scan(tmp_path, line.encode("utf-8").replace(b"\\r", b"\r").replace(b"\\x1b", b"\x1b") + b"\n")


@pytest.mark.parametrize(("case", "sid", "spec", "line", "over"), CASES, ids=[c[0] for c in CASES])
def test_corpus_line(tmp_path: Path, case: str, sid: str, spec: dict, line: str, over: dict) -> None:
    sig = SIG_BY_ID[sid]
    summary = _scan_line(tmp_path, line)
    events = summary.events
    if sig.sets and not sig.event:  # a signature that sets a summary field and yields no event
        want_total = {**spec.get("expect", {}), **over}.get("total_steps")
        assert summary.total_steps == (None if "__near__" in over else want_total), line
        return
    if sig.ignore and "__near__" not in over:  # a framework's non-event line: it yields nothing
        assert not events, [(e.kind, e.signature) for e in events]
        return
    got = [{k: getattr(e, k) for k in FIELDS} for e in events]
    near = over.get("__near__")
    if near is None:
        want = {"signature": sid, **spec.get("expect", {}), **over}
        if sig.event and "kind" not in want:
            want["kind"] = sig.event
        assert any(_matches(e, want) for e in events), (want, got)
        return
    default = {"kind": sig.event, "bar": "train"} if sig.event == "progress" else {"kind": sig.event}
    must_not = near.get("must_not", default if sig.event else {"signature": sid})
    assert not any(_matches(e, must_not) for e in events), (near["why"], must_not, got)
    if "expect" in near:
        assert any(_matches(e, near["expect"]) for e in events), (near["why"], near["expect"], got)


def test_every_signature_has_a_corpus_with_three_variants_and_two_near_misses() -> None:
    stems = {p.stem for p in (rules_dir() / "signatures").glob("*.yaml")}
    assert stems == {p.stem for p in CORPUS.glob("*.yaml")}
    per: dict[str, list[int]] = {}
    for case, sid, spec, _line, _over in CASES:
        assert spec.get("source"), f"{sid}: needs a source"
        per.setdefault(sid, [0, 0])[1 if case.split(":")[2].startswith("near") else 0] += 1
    for s in SIGS:
        v, n = per.get(s.id, [0, 0])
        assert v >= 3 and n >= 2, f"{s.id}: {v} variants, {n} near-misses"
        stem = Path(s.where).stem
        assert _re.search(rf"^  {_re.escape(s.id)}:", (CORPUS / f"{stem}.yaml").read_text(), _re.M), s.id


# -- reading as an engineer would --------------------------------------------------------------------
def test_suffixes_and_prefixes_do_not_matter(tmp_path: Path) -> None:
    data = (
        b"[pod/sft-node-0-0-xk6fl/node] 2026-11-30T08:01:02.123456789Z [rank0]: "
        b"[checkpoint] resuming from /mnt/ckpt/run/checkpoint-1200 (epoch 3)\n"
    )
    ev = scan(tmp_path, data).first("resumed")
    assert ev is not None and ev.step == 1200 and ev.path == "/mnt/ckpt/run/checkpoint-1200"
    assert ev.time == "2026-11-30T08:01:02Z" and ev.rank == 0
    assert ev.message.startswith("[checkpoint] resuming from")


def test_json_records_are_read(tmp_path: Path) -> None:
    data = (
        b'{"time": "2026-11-30T09:01:02+01:00", "level": "INFO", "rank": 3, '
        b'"message": "Saving model checkpoint to /out/checkpoint-40"}\n'
        b'{"ts": 1796025600.5, "msg": "[checkpoint] no prior checkpoint, starting fresh"}\n'
    )
    s = scan(tmp_path, data)
    saved, fresh = s.first("saved"), s.first("fresh_start")
    assert saved is not None and saved.step == 40 and saved.time == "2026-11-30T08:01:02Z" and saved.rank == 3
    assert fresh is not None and fresh.time is not None
    assert s.first_time == min(saved.time, fresh.time) and s.last_time == max(saved.time, fresh.time)


def test_loading_shards_is_not_a_training_step(tmp_path: Path) -> None:
    data = (
        b"Loading checkpoint shards:   0%|          | 0/4 [00:00<?, ?it/s]\r"
        b"Loading checkpoint shards: 100%|##########| 4/4 [00:02<00:00,  1.50it/s]\n"
        b"  Total optimization steps = 1,000\n"
        b"  0%|          | 0/1000 [00:00<?, ?it/s]\r 15%|#5        | 151/1000 [00:01<07:40, 1.84it/s]\n"
    )
    s = scan(tmp_path, data)
    train = s.progress()
    assert [e.step for e in train][:2] == [0, 151] and all(e.bar == "train" for e in train)
    load = [e for e in s.of("progress") if e.bar == "load"]
    assert load and all(e.step is None for e in load)
    assert s.total_steps == 1000


def test_a_step_that_cannot_be_read_is_none(tmp_path: Path) -> None:
    data = b"Restored all states from the checkpoint at /out/checkpoints/last.ckpt\n"
    ev = scan(tmp_path, data).first("resumed")
    assert ev is not None and ev.step is None


def test_lightning_bar_has_an_epoch_but_no_invented_step(tmp_path: Path) -> None:
    data = b"Epoch 3:  45%|####5     | 450/1000 [00:30<00:36, 15.0it/s, v_num=0, train_loss=0.309]\n"
    ev = scan(tmp_path, data).first("progress")
    assert ev is not None and (ev.bar, ev.epoch, ev.count, ev.step) == ("train", 3, 450, None)


def test_bad_user_pattern_names_file_and_signature(tmp_path: Path) -> None:
    from ckpt_doctor.errors import InputError

    d = tmp_path / "sigs"
    d.mkdir()
    (d / "mine.yaml").write_text(
        "framework: mine\nsignatures:\n  - id: mine-lookahead\n    event: resumed\n"
        "    keyword: 'RESUME@'\n    pattern: 'RESUME@(?=\\d)'\n"
    )
    with pytest.raises(InputError) as e:
        load_signatures([d])
    text = str(e.value)
    assert "mine-lookahead" in text and "mine.yaml" in text and "\n" not in text


def _count_matches(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    from ckpt_doctor.facts import logs

    calls = [0]
    real = logs._search

    def counting(rx, data):
        calls[0] += 1
        return real(rx, data)

    monkeypatch.setattr(logs, "_search", counting)
    return calls


def test_crafted_line_costs_one_match_per_signature(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # 120 KB on one line, a keyword every few bytes: once read per keyword, not once per hit
    line = b"No such file or directory: trainer_state.json checkpoint from " * 2000
    calls = _count_matches(monkeypatch)
    s = scan(tmp_path, line + b"\n")
    assert len(line) > 120_000 and not s.binary
    assert calls[0] <= 3 * len(SIGS), calls[0]


def test_window_of_a_megabyte_line_costs_bounded_work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    line = b"[checkpoint] resuming from /x/checkpoint-5 " + b"1it/s] SIGTERM " * (1024 * 1024 // 15)
    calls = _count_matches(monkeypatch)
    s = scan(tmp_path, line + b"\n")
    assert s.first("resumed").step == 5 and not s.whole
    assert calls[0] <= 3 * len(SIGS), calls[0]


def test_the_public_re2_api_gives_the_same_events(monkeypatch) -> None:
    """The scanner calls re2's compiled matcher directly for speed; without it (another google-re2
    build) the public API must give the very same events."""
    from ckpt_doctor.facts import logs
    from tests.scenario import convention_log, hf_log

    text = hf_log("/mnt/ckpt/x", 100, 260, resume_from=100, prefix="lf") + convention_log("/mnt/ckpt/x", 0, 120)
    ref = LogRef("p", "node", False, head=text.encode())
    sigs = logs.load_signatures()
    fast = [(e.kind, e.step, e.path, e.line) for e in logs.scan_log(ref, sigs).events]
    monkeypatch.setattr(logs, "_UNANCHORED", None)
    slow = [(e.kind, e.step, e.path, e.line) for e in logs.scan_log(ref, sigs).events]
    assert fast == slow and len(fast) > 10


def _count_traceback_lines(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    from ckpt_doctor.facts import logs

    calls = [0]
    real = logs._tb_line

    def counting(seg: bytes, inner: bool = False):  # type: ignore[no-untyped-def]
        calls[0] += 1
        return real(seg, inner)

    monkeypatch.setattr(logs, "_tb_line", counting)
    return calls


@pytest.mark.parametrize("shape", ["headers", "frames", "one-header-then-frames"])
def test_tracebacks_cost_each_line_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, shape: str) -> None:
    """A crafted window of traceback headers, of frames, or one header over thousands of frames: each line is
    walked by at most one traceback (the walk stops at the next header, and after MAX_LINES)."""
    frame = b'  File "/opt/venv/lib/python3.11/site-packages/x.py", line 1, in f\n    f()\n'
    body = {
        "headers": b"Traceback (most recent call last):\n" * 6000,
        "frames": (b"Traceback (most recent call last):\n" + frame * 3 + b"ValueError: x\n") * 1500,
        "one-header-then-frames": b"Traceback (most recent call last):\n" + frame * 4000,
    }[shape]
    calls = _count_traceback_lines(monkeypatch)
    s = scan(tmp_path, body)
    lines = min(body.count(b"\n"), (HEAD_BYTES * 2) // 30)
    assert s.of("traceback") and calls[0] <= 2 * lines + 2 * len(s.of("traceback")), (calls[0], lines)


def test_stepless_bars_around_records_cost_bounded_work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A loop's bar redrawn every step around a structured record every 500 steps: the edges are probed for a
    bounded number of lines, whatever the window holds."""
    rec = b'{"msg": "train", "step": %d, "loss": 2.5}\n'
    bar = b"Epoch 0:  50%%|#####     | %d/1000 [00:01<00:01, 9.0it/s]\r"
    body = b"".join(bar % i + (rec % i if i % 500 == 0 else b"") for i in range(1, 20000))
    calls = _count_matches(monkeypatch)
    s = scan(tmp_path, body)
    assert all(e.step == 500 for e in s.progress())  # the one record near an edge, if any: never a bar's count
    from ckpt_doctor.facts.logs import MAX_PROBES

    assert calls[0] <= 4 * MAX_PROBES * 3 + 3 * len(SIGS), calls[0]
