"""A fresh start the checkpoint listings prove when the logs cannot (DeepSpeed at its default log level, Lightning
2.6's rich bar without a terminal; issue 19 §2): a later attempt wrote a checkpoint at a step no higher than the
lowest one its directory already held, so it trained from step 0 again. Checked over the recordings and over the
same bundles with every log blanked (the listings alone must decide), and never on a run that resumed."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from ckpt_doctor.facts.timeline import timeline_of
from ckpt_doctor.pipeline import diagnose_snapshot
from ckpt_doctor.sources.bundle import open_bundle
from tests.recordings.bundles import OUT, all_runs, bundle_id, models_for
from tests.recordings.judge import listing_entries, save_shown

KEPT = [r for r in all_runs() if "jobset-kept" in models_for(r) and len(r["attempts"]) > 1]
FRESH = [r for r in KEPT if r["scenario"] == "fresh-start"]
RESUMED = [r for r in KEPT if all(a["resumed_from"] is not None for a in r["attempts"][1:])]


def _run(bundle: Path) -> tuple[Any, dict[str, str]]:
    with open_bundle(bundle) as snap:
        diag = diagnose_snapshot(snap)
    return timeline_of(diag.facts), {f["rule"]: f["status"] for f in diag.to_json()["findings"]}


def _blanked(run: dict[str, Any], tmp_path: Path) -> Path:
    d = tmp_path / "b"
    shutil.copytree(OUT / bundle_id(run, "jobset-kept"), d)
    for p in (d / "logs").rglob("*.log"):
        p.write_bytes(b"")
    return d


def test_there_are_both() -> None:
    assert {r["framework"] for r in FRESH} >= {"deepspeed", "lightning", "hf-trainer"} and len(RESUMED) >= 10


@pytest.mark.parametrize("run", FRESH, ids=[r["id"] for r in FRESH])
def test_the_quiet_fresh_starts_are_seen(run: dict[str, Any]) -> None:
    tl, st = _run(OUT / bundle_id(run, "jobset-kept"))
    assert [a.start for a in tl.attempts] == ["fresh"] * len(run["attempts"])
    assert st["fresh-start-after-restart"] == "fail"


@pytest.mark.parametrize("run", FRESH, ids=[r["id"] for r in FRESH])
def test_logs_blanked_the_listings_still_show_it(run: dict[str, Any], tmp_path: Path) -> None:
    tl, st = _run(_blanked(run, tmp_path))
    low = min(run["attempts"][0]["saves_complete"])
    last = listing_entries((run["_dir"] / f"attempt-{len(run['attempts']) - 1}.listing").read_text())
    # the listings still show a later attempt's save at or below the first one's lowest (not rotated away)
    if any(save_shown(s, a, None, [last]) for a in run["attempts"][1:] for s in a["saves_complete"] if s <= low):
        assert tl.attempts[-1].start == "fresh"
        assert st["fresh-start-after-restart"] == "fail"


@pytest.mark.parametrize("run", RESUMED, ids=[r["id"] for r in RESUMED])
def test_logs_blanked_a_resume_is_never_called_fresh(run: dict[str, Any], tmp_path: Path) -> None:
    tl, st = _run(_blanked(run, tmp_path))
    assert all(a.start != "fresh" for a in tl.attempts[1:])
    assert st.get("fresh-start-after-restart") != "fail"
