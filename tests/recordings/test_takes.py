"""Second takes (recordings/README.md "Takes"): a re-recording that behaved differently is kept beside the first,
and what it showed holds for every run, in every dress (tests/recordings/variants.py):

- a restart within the second: pod times kept to the second put the checkpoint an attempt resumed from inside
  its own run; a resume from step S saves only above S, so that checkpoint is never its save
  (hf-5.24-sigterm-no-handler-take2, `tight_restart` over every resumed run);
- training that ended before the kill: PID 1 ignored SIGTERM, training finished, saved, and SIGKILL came in
  teardown; the log shows the end, so its last step is exact and the next attempt, resumed from that save, lost
  nothing: final-checkpoint-missing passes. With the end cut from the log it never passes.
"""

from __future__ import annotations

import functools
import itertools
from pathlib import Path
from typing import Any

import pytest

from tests.recordings.bundles import OUT, all_runs, bundle_id, models_for, write_bundle
from tests.recordings.judge import judge
from tests.recordings.misses import load
from tests.recordings.variants import TRANSFORMS, hand_rolled, tight_restart, tight_restart_applies, variant_run

RUNS = all_runs()
BY_ID = {r["id"]: r for r in RUNS}
TAKES = [r for r in RUNS if r.get("take")]
RULE = "final-checkpoint-missing"
MISSES = load()
SAVE_MOVED = f"finding:{RULE}:not_evaluated-not-fail"


@functools.cache
def _original(bundle: str) -> tuple[str, ...]:
    return tuple(judge(OUT / bundle)[0])


def test_there_are_takes() -> None:
    assert len(TAKES) >= 10


@pytest.mark.parametrize("run", TAKES, ids=[r["id"] for r in TAKES])
def test_a_take_is_its_first_takes_run_again(run: dict[str, Any]) -> None:
    first = BY_ID[run["first_take"]]
    assert run["id"] == f"{first['id']}-take{run['take']}"
    for k in ("framework", "versions", "scenario", "command", "env", "checkpoint_dir", "trainjob"):
        assert run[k] == first[k], k
    script = run.get("script", "workspace/train.py")
    assert (run["_dir"] / script).read_bytes() == (first["_dir"] / script).read_bytes()
    # it behaved differently: else it would not be kept
    keys = ("ended_by", "exit_code", "steps", "saves_complete", "resumed_from")
    assert [[a[k] for k in keys] for a in run["attempts"]] != [[a[k] for k in keys] for a in first["attempts"]]


# every resumed run with every pod kept; the takes under each restart model but in-place (one pod, one time)
TIGHT = [(r, m) for r in RUNS if tight_restart_applies(r) for m in models_for(r)
         if m == "jobset-kept" or (r.get("take") and m != "in-place")]  # fmt: skip


@pytest.mark.parametrize(("run", "model"), TIGHT, ids=[bundle_id(r, m) for r, m in TIGHT])
def test_a_restart_within_the_second_is_judged_as_the_recording(run: dict[str, Any], model: str,
                                                                tmp_path: Path) -> None:  # fmt: skip
    v = tight_restart(run, tmp_path / "runs")
    assert v is not None
    got, _ = judge(write_bundle(v, model, tmp_path / "bundles"))
    # the variant writes the checkpoint the next attempt resumed from 0.4 s before the exit: after SIGTERM, where a
    # listing cannot tell it from a final save, so final-checkpoint-missing judged from the time between that save
    # and SIGTERM (dcp-1rank-sigterm-no-handler) becomes unknown there; it never becomes wrong
    assert tuple(x for x in got if x != SAVE_MOVED) == tuple(x for x in _original(bundle_id(run, model))
                                                            if x != SAVE_MOVED)  # fmt: skip


def _ended_then_killed(run: dict[str, Any]) -> bool:
    """An attempt that finished training, saved, and was SIGKILLed on its way out; the next resumed from there."""
    at = run["attempts"]
    return any(a["ended_by"] == "killed" and a["steps"] and (a.get("fault") or {}).get("signal") == "SIGTERM"
               and b["resumed_from"] == a["steps"]["last"] and a["steps"]["last"] in a["saves_complete"]
               and a["uncaught"] is None for a, b in itertools.pairwise(at))  # fmt: skip


ENDED = [r for r in RUNS if _ended_then_killed(r) and RULE in r["verdict"]["pass"]
         and not MISSES.get(bundle_id(r, "jobset-kept"))]  # fmt: skip
DRESSES = ["as-recorded", "timestamps", "kubectl-prefix", "json-lines", "crlf"]


def _status(bundle: Path) -> str:
    return judge(bundle)[1]["findings"].get(RULE, "absent")


def test_a_take_shows_training_ended_before_the_kill() -> None:
    assert "hf-5.24-sigterm-no-handler-take2" in {r["id"] for r in ENDED}


@pytest.mark.parametrize(("run", "dress"), [(r, d) for r in ENDED for d in DRESSES],
                         ids=[f"{r['id']}-{d}" for r in ENDED for d in DRESSES])  # fmt: skip
def test_training_ended_before_the_kill_loses_nothing(run: dict[str, Any], dress: str, tmp_path: Path) -> None:
    v = run if dress == "as-recorded" else variant_run(run, TRANSFORMS[dress], tmp_path / "runs")
    assert _status(write_bundle(v, "jobset-kept", tmp_path / "bundles")) == "pass"


def _cut_before_the_end(raw: bytes, att: dict[str, Any]) -> bytes:
    """The killed attempt's log without its second half: the end of training is no longer shown."""
    if att["ended_by"] != "killed":
        return raw
    half = raw[: len(raw) // 2]
    return half[: half.rfind(b"\n") + 1]


@pytest.mark.parametrize("run", ENDED, ids=[r["id"] for r in ENDED])
def test_with_the_end_cut_from_the_log_it_never_passes(run: dict[str, Any], tmp_path: Path) -> None:
    v = variant_run(run, _cut_before_the_end, tmp_path / "runs")
    assert _status(write_bundle(v, "jobset-kept", tmp_path / "bundles")) != "pass"


DRESSED_TAKES = [(r, n) for r in TAKES for n in TRANSFORMS if n != "json-fields" or hand_rolled(r)]


@pytest.mark.parametrize(("run", "name"), DRESSED_TAKES, ids=[f"{r['id']}-{n}" for r, n in DRESSED_TAKES])
def test_a_take_in_another_dress_is_judged_as_the_take(run: dict[str, Any], name: str, tmp_path: Path) -> None:
    """What a take showed (Lightning exiting 0 inside the grace, torchrun's exit 1, training ended before the
    kill, checkpoint-100 before a lexical resume) is read however the log is written."""
    v = variant_run(run, TRANSFORMS[name], tmp_path / "runs")
    got, _ = judge(write_bundle(v, "jobset-kept", tmp_path / "bundles"))
    assert tuple(got) == _original(bundle_id(run, "jobset-kept"))
