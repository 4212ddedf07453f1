"""Metamorphic variants of the recordings: the same run, its logs as another setup would show them.

Each transform rewrites the attempts' logs of a recorded run in a way that keeps what they say (how each
attempt began, its steps and saves, how it ended) and changes only how it is written: kubectl's
`--timestamps` and `--prefix`, a torchrun rank tag, CRLF line ends, every line wrapped in a JSON record by a
logging handler, the numbers of a hand-rolled loop's lines moved into a structured record's fields
(`{"msg": "saved checkpoint", "step": 10, "path": …}`), and an unrelated error printed long after the last
completed save. The engine must judge a variant exactly as it judges the recording (tests/recordings/
test_variants.py): reading a log is independent of its dress.
"""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml

from tests.recordings.bundles import epoch, load_run

Transform = Callable[[bytes, dict[str, Any]], bytes]


def _lines(raw: bytes) -> list[bytes]:
    """Physical lines (LF-terminated), the last one possibly without its LF."""
    return raw.splitlines(keepends=True)


def _stamp(t: float) -> bytes:
    return datetime.fromtimestamp(t, tz=UTC).strftime("%Y-%m-%dT%H:%M:%S.%f000Z").encode()


def timestamps(raw: bytes, att: dict[str, Any]) -> bytes:
    """`kubectl logs --timestamps`: the runtime's RFC 3339 time before each line, rising through the attempt."""
    lines = _lines(raw)
    t0, t1 = epoch(att["started"]), epoch(att["ended"])
    n = max(len(lines), 1)
    return b"".join(_stamp(t0 + (t1 - t0) * k / n) + b" " + ln for k, ln in enumerate(lines))


def kubectl_prefix(raw: bytes, att: dict[str, Any]) -> bytes:
    """`kubectl logs --prefix`: `[pod/NAME/CONTAINER] ` before each line."""
    return b"".join(b"[pod/trainer-node-0-0-x7k2p/node] " + ln for ln in _lines(raw))


def rank_tag(raw: bytes, att: dict[str, Any]) -> bytes:
    """torchrun's `--local-ranks-filter`/`--tee` style: `[rank0]: ` before each line."""
    return b"".join(b"[rank0]: " + ln for ln in _lines(raw))


def crlf(raw: bytes, att: dict[str, Any]) -> bytes:
    """Windows line ends (a log copied through a tool that rewrote them)."""
    return raw.replace(b"\r\n", b"\n").replace(b"\n", b"\r\n")


def json_lines(raw: bytes, att: dict[str, Any]) -> bytes:
    """A JSON logging handler: each printed line becomes `{"time", "level", "msg"}`. A tqdm bar's carriage-return
    frames are written by tqdm itself, past the handler, and stay as they were."""
    out = []
    t0 = epoch(att["started"])
    for k, ln in enumerate(_lines(raw)):
        body = ln.rstrip(b"\n")
        if b"\r" in body or not body.strip():
            out.append(ln)
            continue
        rec = {"time": _stamp(t0 + k * 0.01).decode(), "level": "INFO", "logger": "train",
               "msg": body.decode("utf-8", "surrogateescape")}  # fmt: skip
        out.append(json.dumps(rec, ensure_ascii=False).encode("utf-8", "surrogateescape") + b"\n")
    return b"".join(out)


# the phrasings of the recorded hand-rolled loops, and the structured record each becomes
_FIELDS: list[tuple[re.Pattern[bytes], Callable[[re.Match[bytes]], dict[str, Any]]]] = [
    (re.compile(rb"^[Ss]aved checkpoint (?P<path>\S+?(?P<step>\d+))$"),
     lambda m: {"msg": "saved checkpoint", "step": int(m["step"]), "path": m["path"].decode()}),
    (re.compile(rb"^step (?P<step>\d+)(?:/(?P<total>\d+))?:? loss (?P<loss>[\d.]+)$"),
     lambda m: {"msg": "train", "step": int(m["step"]), "loss": float(m["loss"])}),
    (re.compile(rb"^resumed from (?P<path>\S+) at (?:global )?step (?P<step>\d+)$"),
     lambda m: {"msg": "resumed from checkpoint", "global_step": int(m["step"]), "path": m["path"].decode()}),
    (re.compile(rb"^no checkpoint in (?P<path>\S+), starting at step 0$"),
     lambda m: {"msg": "no checkpoint found, starting fresh", "ckpt_dir": m["path"].decode()}),
]  # fmt: skip


def json_fields(raw: bytes, att: dict[str, Any]) -> bytes:
    """A structured logger (structlog, a JSON formatter with `extra=`): the numbers of a loop's own lines go in
    the record's fields, not in its message: `{"msg": "saved checkpoint", "step": 10, "path": …}`."""
    out = []
    for ln in _lines(raw):
        body = ln.rstrip(b"\n")
        for rx, make in _FIELDS:
            m = rx.match(body)
            if m is not None:
                out.append(json.dumps({"level": "info", **make(m)}).encode() + b"\n")
                break
        else:
            out.append(ln)
    return b"".join(out)


def hand_rolled(run: dict[str, Any]) -> bool:
    """The run's script prints the phrasings `json_fields` rewrites."""
    return any(rx.match(ln.rstrip(b"\n")) for a in run["attempts"] for ln in _lines(_log(run, a["index"]))
               for rx, _m in _FIELDS[:2])  # fmt: skip


_OOM = (
    b"Traceback (most recent call last):\n"
    b'  File "/workspace/train.py", line 88, in <module>\n'
    b"    main()\n"
    b'  File "/opt/venv/lib/python3.11/site-packages/torch/nn/modules/module.py", line 1775, in _call_impl\n'
    b"    return forward_call(*args, **kwargs)\n"
    b"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of "
    b"79.15 GiB of which 1.02 GiB is free.\n"
)


def late_error(raw: bytes, att: dict[str, Any]) -> bytes:
    """An unrelated error long after the attempt's last completed save: it ended the process, not a save."""
    if att.get("ended_by") == "killed" and att.get("saves_complete") and raw.strip():
        return raw + (b"" if raw.endswith(b"\n") or not raw else b"\n") + _OOM
    return raw


TRANSFORMS: dict[str, Transform] = {
    "timestamps": timestamps,
    "kubectl-prefix": kubectl_prefix,
    "rank-tag": rank_tag,
    "crlf": crlf,
    "json-lines": json_lines,
    "json-fields": json_fields,
}


def _log(run: dict[str, Any], i: int) -> bytes:
    return (run["_dir"] / f"attempt-{i}.log").read_bytes()


def variant_run(run: dict[str, Any], transform: Transform, root: Path) -> dict[str, Any]:
    """A copy of the run under `root` whose attempt logs went through `transform` (the truth unchanged)."""
    d = root / run["id"]
    shutil.copytree(run["_dir"], d)
    for a in run["attempts"]:
        p = d / f"attempt-{a['index']}.log"
        p.write_bytes(transform(p.read_bytes(), a))
    return load_run(d)


def retimed(listing: str, path: str, t: float) -> str:
    """A recorded listing (contracts.md §2) whose entry `path`, and every entry under it, was last written at `t`."""
    out = []
    for ln in listing.splitlines(keepends=True):
        parts = ln.split(" ", 3)
        if not ln.startswith("#") and len(parts) == 4:
            name = parts[3].rstrip("\n")
            if name == path or name.startswith(path + "/"):
                ln = f"{parts[0]} {parts[1]} {t:.10f} {parts[3]}"
        out.append(ln)
    return "".join(out)


def _ckpt_root(run: dict[str, Any], path: str, step: int) -> str | None:
    """The checkpoint a resume path belongs to: its shallowest folder (or file) under the checkpoint directory
    whose name carries the step (`checkpoint-20`, `step_000020`, `global_step20` of `global_step20/…pt`)."""
    base = run["checkpoint_dir"].rstrip("/")
    if not path.startswith(base + "/"):
        return None
    parts = path[len(base) + 1:].split("/")
    for k, name in enumerate(parts):
        if re.search(rf"(?<!\d)0*{step}(?!\d)", name):
            return "/".join([base, *parts[: k + 1]])
    return None


def _tight_moves(run: dict[str, Any]) -> list[tuple[int, str, float]]:
    """(attempt, the checkpoint it resumed from, the new time of that checkpoint) for `tight_restart`."""
    atts = run["attempts"]
    moves: list[tuple[int, str, float]] = []
    for k in range(1, len(atts)):
        a, prev = atts[k], atts[k - 1]
        step, path = a.get("resumed_from"), a.get("resume_path")
        if step is None or not path or step not in prev.get("saves_complete", []):
            continue
        ck = _ckpt_root(run, path, step)
        if ck is not None:
            moves.append((k, ck, epoch(prev["ended"]) - 0.4))
    return moves


def tight_restart_applies(run: dict[str, Any]) -> bool:
    return bool(_tight_moves(run))


def tight_restart(run: dict[str, Any], root: Path) -> dict[str, Any] | None:
    """The same run restarted within the second: each resumed attempt's container starts 50 ms after the one
    before it exited, and the checkpoint it resumed from was written 0.4 s before that exit (the last thing the
    attempt did: recording hf-5.24-sigterm-no-handler-take2). Pod times are kept to the second, so the checkpoint
    falls inside both attempts' runs. None when no attempt resumed from a checkpoint whose name holds its step."""
    atts = run["attempts"]
    moves = _tight_moves(run)
    if not moves:
        return None
    d = root / run["id"]
    shutil.copytree(run["_dir"], d)
    doc = yaml.safe_load((d / "run.yaml").read_text())
    for k, ck, m in moves:
        prev_end = epoch(doc["attempts"][k - 1]["ended"])
        doc["attempts"][k]["started"] = datetime.fromtimestamp(prev_end + 0.05, tz=UTC).strftime(
            "%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
        for i in range(k - 1, len(atts)):  # the listings taken after the save show its new time
            p = d / f"attempt-{i}.listing"
            p.write_text(retimed(p.read_text(), ck, m))
    (d / "run.yaml").write_text(yaml.safe_dump(doc, sort_keys=False, allow_unicode=True))
    return load_run(d)
