"""Recordings of real framework runs, in the format the team keeps them (TEAM.md, "The recording format"):

    recordings/<run-id>/run.yaml           what ran, per attempt the ground truth (steps, saves, resume), the verdict
    recordings/<run-id>/attempt-<n>.log    the container's stdout+stderr, byte for byte
    recordings/<run-id>/attempt-<n>.listing  the checkpoint directory after attempt n (contracts.md §2 `find` format)
    recordings/<run-id>/attempt-<n>.files/<rel path>  small files whose content decides completeness

The installed tool carries them as `ckpt_doctor/_data/recordings` (`data.recordings_dir`); the sandbox's trainers
speak their lines (sandbox/voice.py). A recording that is missing or malformed is an InputError naming it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ckpt_doctor.errors import InputError

LISTING_LINE = re.compile(r"^(?P<type>[dfl]) (?P<size>\d+) (?P<mtime>[\d.]+) (?P<path>.+)$")


@dataclass
class Listed:
    kind: str  # d | f | l
    size: int
    mtime: float
    path: str


@dataclass
class Attempt:
    index: int
    ended_by: str  # killed | terminated | completed | crashed
    first_step: int | None
    last_step: int | None
    saves_complete: list[int]
    saves_partial: list[int]
    resumed_from: int | None
    resume_path: str | None
    fault: dict[str, Any] | None
    exit_code: int | None
    log: bytes
    listing: list[Listed] = field(default_factory=list)
    files: dict[str, bytes] = field(default_factory=dict)  # relative path -> content


@dataclass
class Recording:
    id: str
    framework: str
    scenario: str
    description: str
    checkpoint_dir: str
    attempts: list[Attempt]
    verdict: dict[str, list[str]]
    path: Path

    def fresh(self) -> Attempt | None:
        """The first attempt that started from step 0 (its log says how a fresh start reads)."""
        return next((a for a in self.attempts if a.resumed_from is None and a.log), None)

    def resumed(self) -> Attempt | None:
        """The first attempt that resumed from a checkpoint (its log says how a resume reads)."""
        return next((a for a in self.attempts if a.resumed_from is not None and a.log), None)

    def terminated(self) -> Attempt | None:
        """An attempt that SIGTERM ended (its log's tail says what the framework prints then)."""
        return next((a for a in self.attempts if a.ended_by == "terminated" and a.log), None)


def parse_listing(text: str) -> list[Listed]:
    out = []
    for line in text.splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        m = LISTING_LINE.match(line)
        if m:
            out.append(Listed(m["type"], int(m["size"]), float(m["mtime"]), m["path"]))
    return out


def _ints(v: Any, where: str) -> list[int]:
    if v is None:
        return []
    if not isinstance(v, list) or not all(isinstance(x, int) and not isinstance(x, bool) for x in v):
        raise InputError("must be a list of step numbers", where)
    return list(v)


def load_recording(root: Path) -> Recording:
    """One recording directory, checked against the format."""
    from ckpt_doctor.yamlio import iter_documents

    run = root / "run.yaml"
    try:
        docs = [d for d in iter_documents(run.read_text(encoding="utf-8"), str(run)) if d is not None]
    except OSError as e:
        raise InputError(f"cannot read it: {e.strerror}", str(run)) from None
    if len(docs) != 1 or not isinstance(docs[0], dict):
        raise InputError("run.yaml is one mapping (id, framework, attempts, ...)", str(run))
    doc = docs[0]
    attempts = []
    for i, a in enumerate(doc.get("attempts") or []):
        where = f"{run}: attempts[{i}]"
        if not isinstance(a, dict) or not isinstance(a.get("index"), int):
            raise InputError("each attempt needs an index", where)
        n = a["index"]
        steps = a.get("steps") or {}
        log = root / f"attempt-{n}.log"
        listing = root / f"attempt-{n}.listing"
        files_dir = root / f"attempt-{n}.files"
        files = {}
        if files_dir.is_dir():
            files = {p.relative_to(files_dir).as_posix(): p.read_bytes() for p in sorted(files_dir.rglob("*"))
                     if p.is_file()}
        attempts.append(Attempt(
            index=n,
            ended_by=str(a.get("ended_by") or ""),
            first_step=steps.get("first") if isinstance(steps, dict) else None,
            last_step=steps.get("last") if isinstance(steps, dict) else None,
            saves_complete=_ints(a.get("saves_complete"), f"{where}.saves_complete"),
            saves_partial=_ints(a.get("saves_partial"), f"{where}.saves_partial"),
            resumed_from=a.get("resumed_from") if isinstance(a.get("resumed_from"), int) else None,
            resume_path=str(a["resume_path"]) if a.get("resume_path") else None,
            fault=a.get("fault") if isinstance(a.get("fault"), dict) else None,
            exit_code=a.get("exit_code") if isinstance(a.get("exit_code"), int) else None,
            log=log.read_bytes() if log.is_file() else b"",
            listing=parse_listing(listing.read_text(encoding="utf-8", errors="replace")) if listing.is_file() else [],
            files=files,
        ))
    if not attempts:
        raise InputError("a recording needs at least one attempt", str(run))
    verdict = doc.get("verdict") if isinstance(doc.get("verdict"), dict) else {}
    return Recording(
        id=str(doc.get("id") or root.name),
        framework=str(doc.get("framework") or ""),
        scenario=str(doc.get("scenario") or ""),
        description=str(doc.get("description") or ""),
        checkpoint_dir=str(doc.get("checkpoint_dir") or ""),
        attempts=sorted(attempts, key=lambda a: a.index),
        verdict={k: [str(x) for x in v or []] for k, v in verdict.items() if isinstance(v, list)},
        path=root,
    )


def find_recording(rid: str, roots: list[Path] | None = None) -> Recording | None:
    """The recording `rid` from the packaged ones (or `roots`), None when none has it."""
    from ckpt_doctor.data import recordings_dir

    if roots is None:
        try:
            packaged = recordings_dir()
        except FileNotFoundError:  # an installation without recordings
            packaged = None
        roots = [packaged] if packaged is not None else []
    for root in roots:
        d = root / rid
        if (d / "run.yaml").is_file():
            return load_recording(d)
    return None
