"""Every recording of a real framework run (recordings/, realruns/) checked in seconds, with no framework
installed: the engine's attempts timeline equals the ground truth, its findings equal the run's verdict.

The bundles under tests/recordings/bundles/ are generated (tests/recordings/bundles.py) and must stay in
sync with recordings/; the engine's known misses are in misses.yaml (tests/recordings/misses.py).
"""

from __future__ import annotations

import functools
from pathlib import Path

import pytest

from tests.recordings.bundles import OUT, all_runs, bundle_id, models_for, write_all
from tests.recordings.frameworks_doc import DOC, generate
from tests.recordings.judge import judge
from tests.recordings.misses import load

RUNS = all_runs()
BUNDLES = [bundle_id(r, m) for r in RUNS for m in models_for(r)]
MISSES = load()
KEYS = {"id", "framework", "versions", "scenario", "description", "image_path_of_script", "command", "env",
        "checkpoint_dir", "attempts", "verdict"}  # fmt: skip
ATTEMPT_KEYS = {"index", "started", "ended", "fault", "ended_by", "exit_code", "steps", "saves_complete",
                "saves_partial", "resumed_from", "resume_path"}  # fmt: skip


@functools.cache
def _misses(bundle: str) -> list[str]:
    return judge(OUT / bundle)[0]


def _params() -> list[object]:
    out = []
    for b in BUNDLES:
        marks = []
        if MISSES.get(b):
            marks.append(pytest.mark.xfail(strict=True, reason="engine misses: " + ", ".join(MISSES[b])))
        out.append(pytest.param(b, id=b, marks=marks))
    return out


def test_there_are_recordings() -> None:
    assert len(RUNS) >= 30 and len({r["framework"] for r in RUNS}) >= 5


@pytest.mark.parametrize("run", RUNS, ids=[r["id"] for r in RUNS])
def test_recording_format(run: dict) -> None:
    assert set(run) >= KEYS, KEYS - set(run)
    assert run["id"] == run["_dir"].name
    for i, a in enumerate(run["attempts"]):
        assert set(a) >= ATTEMPT_KEYS, ATTEMPT_KEYS - set(a)
        assert a["index"] == i
        assert (run["_dir"] / f"attempt-{i}.log").is_file()
        listing = (run["_dir"] / f"attempt-{i}.listing").read_text()
        assert listing.startswith(f"# dir: {run['checkpoint_dir']}\n# at: ")
    assert set(run["verdict"]) == {"fail", "pass", "not_fail"}


def test_bundles_match_generator(tmp_path: Path) -> None:
    write_all(tmp_path, RUNS)
    ours = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*") if p.is_file())
    theirs = sorted(p.relative_to(OUT) for p in OUT.rglob("*") if p.is_file())
    assert ours == theirs, "regenerate: python -m tests.recordings.bundles"
    for rel in ours:
        assert (tmp_path / rel).read_bytes() == (OUT / rel).read_bytes(), f"{rel}: python -m tests.recordings.bundles"


@pytest.mark.parametrize("bundle", _params())
def test_engine_gets_recording_right(bundle: str) -> None:
    assert _misses(bundle) == []


@pytest.mark.parametrize("bundle", BUNDLES)
def test_no_new_miss(bundle: str) -> None:
    """A known miss may go away; a new class of miss may not appear."""
    misses = _misses(bundle)
    assert set(misses) <= set(MISSES.get(bundle, [])), sorted(set(misses) - set(MISSES.get(bundle, [])))


def test_misses_file_names_only_bundles() -> None:
    assert set(MISSES) <= set(BUNDLES), sorted(set(MISSES) - set(BUNDLES))


def test_frameworks_doc_is_current() -> None:
    judged = {b: _misses(b) for b in BUNDLES if b.endswith("--jobset-kept")}
    assert DOC.read_text() == generate(judged), "regenerate: python -m tests.recordings.frameworks_doc"
