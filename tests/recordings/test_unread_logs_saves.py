"""An attempt whose output was lost to buffering (an empty log) but whose checkpoints the listings show written
while it ran trained past loading, so it did not crash while loading: resume-crashed passes on that evidence
(recordings *-buffered); without the listings it stays not evaluated, never a pass."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from ckpt_doctor.pipeline import diagnose_snapshot
from ckpt_doctor.sources.bundle import open_bundle
from tests.recordings.bundles import OUT, all_runs, bundle_id

RULE = "resume-crashed"
BUFFERED = [r for r in all_runs() if any(not (r["_dir"] / f"attempt-{a['index']}.log").stat().st_size
                                         and a["saves_complete"] for a in r["attempts"])]  # fmt: skip


def _status(bundle: Path) -> dict[str, Any]:
    with open_bundle(bundle) as snap:
        return {f["rule"]: f for f in diagnose_snapshot(snap).to_json()["findings"]}


# the same loss made by hand: each correct resume with its first attempt's log blanked
RESUMES = [r for r in all_runs() if r["scenario"] == "correct-resume" and r["attempts"][0]["saves_complete"]]


def test_there_are_some() -> None:
    assert BUFFERED and len(RESUMES) >= 6


def _blank_first(run: dict[str, Any], tmp_path: Path) -> Path:
    d = tmp_path / "v"
    shutil.copytree(OUT / bundle_id(run, "jobset-kept"), d)
    first = min((d / "logs").rglob("*.log"), key=lambda p: _started(run, p))
    first.write_bytes(b"")
    return d


def _started(run: dict[str, Any], log: Path) -> str:
    doc = yaml.safe_load((log.parents[2] / "pods.yaml").read_text())
    pods = {p["metadata"]["name"]: p["status"].get("startTime", "") for p in doc.get("items", [doc])}
    return pods.get(log.parent.name, "")


@pytest.mark.parametrize("run", RESUMES, ids=[r["id"] for r in RESUMES])
def test_a_first_log_lost_the_listing_still_clears_it(run: dict[str, Any], tmp_path: Path) -> None:
    f = _status(_blank_first(run, tmp_path))[RULE]
    assert f["status"] == "pass" and "trained past loading" in f["reason"], f


@pytest.mark.parametrize("run", BUFFERED, ids=[r["id"] for r in BUFFERED])
def test_saves_in_the_listing_show_it_got_past_loading(run: dict[str, Any]) -> None:
    f = _status(OUT / bundle_id(run, "jobset-kept"))[RULE]
    assert RULE in run["verdict"]["pass"]
    assert f["status"] == "pass" and "trained past loading" in f["reason"], f


@pytest.mark.parametrize("run", BUFFERED, ids=[r["id"] for r in BUFFERED])
def test_without_the_listings_it_stays_unknown(run: dict[str, Any], tmp_path: Path) -> None:
    d = tmp_path / "b"
    shutil.copytree(OUT / bundle_id(run, "jobset-kept"), d)
    shutil.rmtree(d / "checkpoints")
    assert _status(d)[RULE]["status"] == "not_evaluated"
