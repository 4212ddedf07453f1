"""A stopped attempt's last visible step is a lower bound (exact only when its log shows training ended before
the signal: then it is the true last step), and an attempt whose output was lost says why its
step is unknown: in the timeline (`AttemptFact.last_step_bound`, `last_step_unknown`), in `diagnose -o json`'s
timeline and in the report, over every recording where the truth shows it (issue 19 §4)."""

from __future__ import annotations

import functools
import json
from pathlib import Path

import pytest
import yaml

from ckpt_doctor.facts.timeline import timeline_of
from ckpt_doctor.pipeline import diagnose_snapshot
from ckpt_doctor.report.incident import render_report
from ckpt_doctor.report.jsonout import render as render_json
from ckpt_doctor.sources.bundle import open_bundle
from tests.recordings.bundles import OUT, all_runs, load_run

ROOT = Path(__file__).resolve().parents[2]
MODEL = "jobset-kept"


def _stopped_short() -> list[tuple[str, int]]:
    """(bundle, attempt) where the attempt was stopped from outside and its log shows a step below its last."""
    out = []
    for run in all_runs():
        for a in run["attempts"]:
            if a["ended_by"] in ("killed", "terminated") and a["steps"]:
                out.append((f"{run['id']}--{MODEL}", a["index"]))
    return out


def _truth_last(bundle: str, index: int) -> int:
    run = load_run(ROOT / "recordings" / bundle.split("--")[0])
    return int(run["attempts"][index]["steps"]["last"])


@functools.cache
def _diag(bundle: str):  # type: ignore[no-untyped-def]
    with open_bundle(OUT / bundle) as snap:
        return diagnose_snapshot(snap)


CASES = _stopped_short()


def test_there_are_stopped_attempts() -> None:
    assert len(CASES) >= 40


@pytest.mark.parametrize(("bundle", "index"), CASES, ids=[f"{b}-a{i}" for b, i in CASES])
def test_a_stopped_attempts_last_step_is_a_lower_bound(bundle: str, index: int) -> None:
    tl = timeline_of(_diag(bundle).facts)
    a = tl.attempt(index)
    assert a is not None
    if a.last_step is None:
        assert a.last_step_unknown, "no step and no reason"
        return
    doc = json.loads(render_json(_diag(bundle)))
    got = next(x for x in doc["timeline"]["attempts"] if x["index"] == index)
    if not a.last_step_bound:
        # its log shows training ended (bar at its total, a finished line) before the signal or the kill in
        # teardown (accelerate-1.15-sigterm-no-handler, hf-5.24-sigterm-no-handler-take2): exact, and right
        assert a.last_step == _truth_last(bundle, index) and a.last_step_text == str(a.last_step)
        assert got["lastStep"] == a.last_step and got["lastStepBound"] is False
        return
    assert a.last_step_text == f"≥ {a.last_step}"
    assert got["lastStep"] == a.last_step and got["lastStepBound"] is True


def test_the_bound_is_said_in_the_report_and_the_interruption() -> None:
    bundle = "hf-4.57-correct-resume--jobset-kept"  # killed at step 25, its bar last drawn at 24
    diag = _diag(bundle)
    tl = timeline_of(diag.facts)
    assert tl.attempts[0].last_step == 24 and tl.attempts[0].last_step_bound
    assert tl.interruptions[0].from_bound and tl.interruptions[0].label == "↓ ≥ 24 → 20, ≥ 4 steps lost"
    assert not tl.lost_complete
    text = render_report(diag, "markdown").text
    assert "last step ≥ 24" in text and "| ≥ 24 |" in text


def test_a_completed_attempt_that_shows_its_end_is_exact() -> None:
    for bundle in ("hf-4.57-correct-resume--jobset-kept", "dcp-1rank-correct-resume--jobset-kept",
                   "lightning-2.6-correct-resume--jobset-kept"):  # fmt: skip
        a = timeline_of(_diag(bundle).facts).attempts[-1]
        assert a.end.kind == "completed" and a.last_step == 40 and not a.last_step_bound, bundle


def test_output_lost_to_buffering_is_unknown_with_its_reason() -> None:
    bundle = "orbax-0.12-correct-resume-buffered--jobset-kept"
    run = load_run(ROOT / "recordings" / "orbax-0.12-correct-resume-buffered")
    assert (run["_dir"] / "attempt-0.log").stat().st_size == 0 and "PYTHONUNBUFFERED" not in run["env"]
    assert yaml.safe_load((OUT / bundle / "bundle.yaml").read_text())["recording"]["run"] == run["id"]
    diag = _diag(bundle)
    a = timeline_of(diag.facts).attempts[0]
    assert a.last_step is None and "PYTHONUNBUFFERED is not set" in a.last_step_unknown
    doc = json.loads(render_json(diag))
    assert "PYTHONUNBUFFERED" in doc["timeline"]["attempts"][0]["lastStepUnknown"]
    assert "last step unknown: " in render_report(diag, "markdown").text
