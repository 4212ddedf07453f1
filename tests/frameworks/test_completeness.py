"""Completeness per framework, checked against every real run (recordings/): each checkpoint a listing shows is
judged complete or not as the run's ground truth says, and the checkpoint the resume in use picks is the one the
next attempt really read.

The truth of a path in the listing taken after attempt n is what the last attempt up to n that wrote it did
(`save_paths`: a save that ended, `partial_paths`: one that never did). The pick is checked against the next
attempt's `resumed_from` (the step it resumed from) or, when it crashed while loading, `resume_path`.
"""

from __future__ import annotations

from typing import Any

import pytest

from ckpt_doctor.facts.context import Facts
from ckpt_doctor.scope import build_scope, pick_trainjob
from ckpt_doctor.sources.bundle import open_bundle
from tests.recordings.bundles import OUT, all_runs, bundle_id, epoch, models_for

RUNS = [r for r in all_runs() if "jobset-kept" in models_for(r)]


def _truth(run: dict[str, Any], n: int) -> dict[str, bool]:
    state: dict[str, bool] = {}
    for a in run["attempts"][: n + 1]:
        for p in a.get("save_paths") or []:
            state[p.rstrip("/")] = True
        for p in a.get("partial_paths") or []:
            state[p.rstrip("/")] = False
    return state


def _judged(run: dict[str, Any]) -> list[Any]:
    with open_bundle(OUT / bundle_id(run, "jobset-kept")) as snap:
        facts = Facts(build_scope(snap, pick_trainjob(snap, None)))
        return list(facts.volume.judged)


@pytest.mark.parametrize("run", RUNS, ids=[r["id"] for r in RUNS])
def test_every_checkpoint_is_judged_as_the_run_left_it(run: dict[str, Any]) -> None:
    judged = _judged(run)
    ends = [epoch(a["ended"]) for a in run["attempts"]]
    assert len(judged) == len(ends), "one listing per attempt"
    checked = 0
    for j in judged:
        n = min(range(len(ends)), key=lambda i: abs(ends[i] - (j.at or 0)))
        truth = _truth(run, n)
        assert j.framework in (run["framework"], "hand-rolled") or not j.dirs, j.framework
        for d in j.dirs:
            for c in d.checkpoints:
                want = truth.get(c.path.rstrip("/"))
                if want is None:
                    continue  # no save call wrote it (Lightning's last.ckpt is written by the same save as step=N)
                checked += 1
                assert c.complete is want, f"listing {n}: {c.name}: judged {c.complete} ({c.why}), truth {want}"
        nxt = run["attempts"][n + 1] if n + 1 < len(run["attempts"]) else None
        if nxt is None or not j.dirs or run["scenario"] in ("dir-changes", "fresh-start"):
            continue
        picked = [p for p in j.picks if p.known]
        if nxt["resumed_from"] is not None:
            assert picked, f"listing {n}: the pick is unknown ({[p.how for p in j.picks]})"
            c = picked[0].checkpoint
            assert c is not None
            if c.step is not None:
                assert c.step == nxt["resumed_from"], f"listing {n}: picks {c.name}, attempt {n + 1} resumed from " \
                                                      f"{nxt['resumed_from']}"
            else:
                assert (nxt["resume_path"] or "").startswith(c.path), (c.path, nxt["resume_path"])
        elif nxt.get("crashed_while_loading") and nxt["resume_path"]:
            assert picked and picked[0].checkpoint is not None
            assert nxt["resume_path"].startswith(picked[0].checkpoint.path)
            assert picked[0].checkpoint.complete is False
    if any(a["saves_complete"] or a["saves_partial"] for a in run["attempts"]):
        assert checked, "no checkpoint of the run was found in its listings"


def test_partial_saves_are_found_in_every_framework() -> None:
    """Every framework whose recordings have a partial save shows it as incomplete (or absent: Lightning writes
    its file whole, so a killed save leaves nothing)."""
    seen: dict[str, bool] = {}
    for run in RUNS:
        if run["scenario"] != "partial-save":
            continue
        for j in _judged(run)[:1]:
            seen[run["framework"]] = any(c.complete is False for d in j.dirs for c in d.checkpoints)
    assert seen.pop("lightning") is False
    assert seen and all(seen.values()), seen
