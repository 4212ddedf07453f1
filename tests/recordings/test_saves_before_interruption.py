"""no-checkpoint-before-interruption reads the saves the timeline knows (issue 19 §4): the lines a log prints,
and the complete checkpoints the listings show written while the attempt ran. Lightning and Orbax save without a
word, so a log of theirs that prints no save shows nothing: with the listings the rule passes on them, without
any it is not evaluated, never failed. A log's silence shows no save was made only for a program seen printing
its saves while it trains (tests/rules: the `[checkpoint] saved` convention), never from a handler that announces
just its save on SIGTERM. In every recording each interrupted attempt saved first (the truth), so the rule never
fails on any of their bundles."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from ckpt_doctor.pipeline import diagnose_snapshot
from ckpt_doctor.sources.bundle import open_bundle
from tests.recordings.bundles import OUT, all_runs, bundle_id

RULE = "no-checkpoint-before-interruption"
RUNS = all_runs()
KEPT = [r for r in RUNS if (OUT / bundle_id(r, "jobset-kept")).is_dir()]
# frameworks whose logs print no save of their own while training
SILENT = [r for r in KEPT if r["framework"] in ("lightning", "orbax")]


def _finding(bundle: Path) -> dict[str, Any]:
    with open_bundle(bundle) as snap:
        doc = diagnose_snapshot(snap).to_json()
    return next(f for f in doc["findings"] if f["rule"] == RULE)


def _saved_before_each_interruption(run: dict[str, Any]) -> bool:
    return all(a["saves_complete"] for a in run["attempts"][:-1] if a["steps"])


def test_the_recordings_have_them() -> None:
    assert all(_saved_before_each_interruption(r) for r in RUNS)
    assert {r["framework"] for r in SILENT} == {"lightning", "orbax"} and len(SILENT) >= 15


BUNDLES = sorted(d.name for d in OUT.iterdir() if (d / "bundle.yaml").is_file())


@pytest.mark.parametrize("name", BUNDLES)
def test_never_fails_where_every_interrupted_attempt_saved(name: str) -> None:
    assert _finding(OUT / name)["status"] != "fail"


@pytest.mark.parametrize("run", SILENT, ids=[r["id"] for r in SILENT])
def test_a_silent_framework_passes_on_the_listing(run: dict[str, Any]) -> None:
    f = _finding(OUT / bundle_id(run, "jobset-kept"))
    assert f["status"] == "pass", f


@pytest.mark.parametrize("run", KEPT, ids=[r["id"] for r in KEPT])
def test_without_listings_a_silent_log_is_no_proof(run: dict[str, Any], tmp_path: Path) -> None:
    d = tmp_path / "b"
    shutil.copytree(OUT / bundle_id(run, "jobset-kept"), d)
    shutil.rmtree(d / "checkpoints")
    f = _finding(d)
    assert f["status"] != "fail", f
    if run in SILENT and f["status"] == "not_evaluated":
        assert f["reason"], f  # why it cannot be told
