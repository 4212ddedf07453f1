"""A resume from a checkpoint whose name holds no step (Lightning's `ckpt_path="last"` reading `last.ckpt`, which
ModelCheckpoint rewrites at every save), in a log that names no step (issue 19 §4): the attempt is resumed with
its step unknown and the reason said, never a guessed number; resumed-older-checkpoint passes only where the
listing taken before the resume shows that file complete and written after every other checkpoint, and stays
not evaluated when a newer one was there (a metamorphic variant of the same recordings)."""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from ckpt_doctor.facts.timeline import timeline_of
from ckpt_doctor.pipeline import diagnose_snapshot
from ckpt_doctor.sources.bundle import open_bundle
from tests.recordings.bundles import OUT, all_runs, bundle_id, models_for

NOSTEP = [r for r in all_runs() if any(re.fullmatch(r"last(-v\d+)?\.ckpt", (a["resume_path"] or "").rpartition("/")[2])
                                       for a in r["attempts"])]  # fmt: skip
CASES = [(r, m) for r in NOSTEP for m in models_for(r)]
KEPT = [r for r in NOSTEP if "jobset-kept" in models_for(r)]


def _diag(bundle: Path) -> Any:
    with open_bundle(bundle) as snap:
        return diagnose_snapshot(snap)


def test_the_recordings_have_them() -> None:
    assert {r["versions"]["lightning"][:3] for r in NOSTEP} >= {"2.5", "2.6"} and len(NOSTEP) >= 10


@pytest.mark.parametrize(("run", "model"), CASES, ids=[bundle_id(r, m) for r, m in CASES])
def test_resumed_with_the_step_unknown_and_why(run: dict[str, Any], model: str) -> None:
    tl = timeline_of(_diag(OUT / bundle_id(run, model)).facts)
    last = tl.attempts[-1]
    assert last.start == "resumed" and last.resumed_from == run["attempts"][-1]["resume_path"]
    if last.start_step is None:
        assert "names no step" in last.start_step_unknown
    else:
        assert last.start_step == run["attempts"][-1]["resumed_from"]


@pytest.mark.parametrize("run", KEPT, ids=[r["id"] for r in KEPT])
def test_resumed_older_passes_on_the_listing_before_the_resume(run: dict[str, Any]) -> None:
    doc = _diag(OUT / bundle_id(run, "jobset-kept")).to_json()
    f = next(x for x in doc["findings"] if x["rule"] == "resumed-older-checkpoint")
    assert f["status"] == "pass" and "newest checkpoint written before it began" in f["reason"], f


@pytest.mark.parametrize("run", KEPT, ids=[r["id"] for r in KEPT])
def test_a_newer_file_before_the_resume_leaves_it_unknown(run: dict[str, Any], tmp_path: Path) -> None:
    """The same bundle, the listing before the resume showing a step file written after last.ckpt: last.ckpt is
    no longer shown to be the newest, so the rule may not pass (nor fail: its step is unknown)."""
    d = tmp_path / "b"
    shutil.copytree(OUT / bundle_id(run, "jobset-kept"), d)
    first = sorted((d / "checkpoints").rglob("*.txt"), key=lambda p: p.read_text().split("# at: ")[1][:30])[0]
    lines = first.read_text().splitlines()
    last = next(ln for ln in lines if ln.endswith("/last.ckpt"))
    t = float(last.split()[2])
    out = [f"{ln.split()[0]} {ln.split()[1]} {t + 0.5:.10f} {ln.split()[3]}" if re.search(r"step=\d+\.ckpt$", ln)
           and ln == max((x for x in lines if re.search(r"step=\d+\.ckpt$", x)), key=lambda x: float(x.split()[2]))
           else ln for ln in lines]  # fmt: skip
    first.write_text("\n".join(out) + "\n")
    doc = _diag(d).to_json()
    f = next(x for x in doc["findings"] if x["rule"] == "resumed-older-checkpoint")
    assert f["status"] == "not_evaluated", f


# -- final-checkpoint-missing: the step of last.ckpt from the save it was written in ---------------------------
LOST = [r for r in KEPT if "final-checkpoint-missing" in r["verdict"]["fail"]]


def _final(bundle: Path) -> dict[str, Any]:
    return next(x for x in _diag(bundle).to_json()["findings"] if x["rule"] == "final-checkpoint-missing")


def _shift_last(bundle: Path, tmp_path: Path, how: str) -> Path:
    """A copy of the bundle whose listing before the resume is changed: `late` writes last.ckpt most of a save
    interval after the newest step file (a later save whose step file a top-k rotation removed), `lone` keeps a
    single step file (no interval to compare with)."""
    d = tmp_path / how
    shutil.copytree(bundle, d)
    first = sorted((d / "checkpoints").rglob("*.txt"), key=lambda p: p.read_text().split("# at: ")[1][:30])[0]
    lines = first.read_text().splitlines()
    steps = sorted((ln for ln in lines if re.search(r"step=\d+\.ckpt$", ln)), key=lambda x: float(x.split()[2]))
    gap = float(steps[-1].split()[2]) - float(steps[-2].split()[2])
    out = []
    for ln in lines:
        if how == "late" and ln.endswith("/last.ckpt"):
            f = ln.split()
            ln = f"{f[0]} {f[1]} {float(steps[-1].split()[2]) + 0.8 * gap:.10f} {f[3]}"
        if how == "lone" and ln in steps[:-1]:
            continue
        out.append(ln)
    first.write_text("\n".join(out) + "\n")
    return d


def test_the_recordings_lose_steps_after_a_stepless_save() -> None:
    assert {r["versions"]["lightning"][:3] for r in LOST} >= {"2.5", "2.6"}


@pytest.mark.parametrize("run", LOST, ids=[r["id"] for r in LOST])
def test_steps_lost_since_last_ckpt_fail_from_the_listing(run: dict[str, Any]) -> None:
    """Attempt 0 printed a step past its last save and was SIGKILLed; attempt 1 resumed from last.ckpt, which the
    listing shows written in the same save as the newest step file: the steps in between were lost (before, the
    rule stayed not_evaluated: the resume's step was unknown)."""
    f = _final(OUT / bundle_id(run, "jobset-kept"))
    assert f["status"] == "fail" and f["confidence"] == "medium" and "in the same save" in f["detail"], f
    assert any(e.get("type") == "checkpoint" and e["path"].endswith("/last.ckpt") for e in f["evidence"]), f


@pytest.mark.parametrize("how", ["late", "lone"])
@pytest.mark.parametrize("run", LOST, ids=[r["id"] for r in LOST])
def test_a_listing_that_does_not_place_last_ckpt_leaves_it_unknown(run: dict[str, Any], how: str,
                                                                   tmp_path: Path) -> None:  # fmt: skip
    f = _final(_shift_last(OUT / bundle_id(run, "jobset-kept"), tmp_path, how))
    assert f["status"] == "not_evaluated", f
