"""The judge's own reading of a raw log (tests/recordings/judge.py `shows_progress`), which decides when an
attempt may come out with its last step unknown: it must see the progress every framework that prints it shows,
and only the logs that truly show none (rich without a terminal, DeepSpeed at its default log level, output lost
to buffering) may pass as quiet."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.recordings.bundles import all_runs, epoch
from tests.recordings.judge import judge_not_fail, save_shown, shows_progress

ATTEMPTS = [(r, a) for r in all_runs() for a in r["attempts"] if a["steps"]]


def _quiet_by_nature(run: dict, att: dict) -> bool:
    raw = (run["_dir"] / f"attempt-{att['index']}.log").read_bytes()
    rich = run["id"].startswith("lightning-2.6") and att["ended_by"] != "completed"
    buffered = "PYTHONUNBUFFERED" not in (run.get("env") or {}) and att["ended_by"] != "completed"
    return not raw or run["framework"] == "deepspeed" or rich or buffered


@pytest.mark.parametrize(("run", "att"), ATTEMPTS, ids=[f"{r['id']}-{a['index']}" for r, a in ATTEMPTS])
def test_a_log_that_prints_progress_is_seen_to(run: dict, att: dict) -> None:
    raw = (run["_dir"] / f"attempt-{att['index']}.log").read_bytes()
    if not _quiet_by_nature(run, att):
        assert shows_progress(raw, att["steps"])


def test_numbers_outside_a_step_are_not_progress() -> None:
    steps = {"first": 1, "last": 25}
    assert not shows_progress(b"[2026-12-02 01:14:23,010] [WARNING] engine.py:4437 at 12/02\n", steps)
    assert not shows_progress(b"resumed from /c/global_step20 at global step 20\n", {"first": 21, "last": 40})
    assert shows_progress(b"[checkpoint] saved global step 25, exiting\n", steps)
    assert shows_progress(b'{"msg": "train", "step": 7}\n', steps)
    assert shows_progress(b"Epoch 0/0 40/40 0:00:05 7.84it/s\n", steps)


SAVERS = [(r, a) for r in all_runs() if r["framework"] in ("hf-trainer", "torch-dcp") for a in r["attempts"]]


@pytest.mark.parametrize(("run", "att"), SAVERS, ids=[f"{r['id']}-{a['index']}" for r, a in SAVERS])
def test_a_log_that_prints_its_saves_shows_each(run: dict, att: dict) -> None:
    raw = (run["_dir"] / f"attempt-{att['index']}.log").read_bytes()
    assert all(save_shown(s, att, raw, []) for s in att["saves_complete"])


def _entry(t: float, name: str, files_at: float | None = None) -> list[tuple[float, str, str]]:
    """A listing entry: a file by its name's suffix, else a directory with one file in it (written at `files_at`)."""
    path = f"/c/run/{name}"
    if "." in name:
        return [(t, path, "f")]
    return [(t, path, "d"), (t if files_at is None else files_at, f"{path}/model.pt", "f")]


def test_a_listing_shows_a_save_by_its_own_name_while_the_attempt_ran() -> None:
    att = {"started": "2026-12-02T00:00:00Z", "ended": "2026-12-02T00:01:00Z"}
    t = epoch(att["started"]) + 10
    for name in ("20", "checkpoint-20", "global_step20", "step=20.ckpt", "step_0020.pt", "epoch=0-step=20.ckpt"):
        assert save_shown(20, att, None, [_entry(t, name)]), name
    assert not save_shown(20, att, None, [_entry(t + 3600, "checkpoint-20")])  # written by a later attempt
    for name in ("f20", "ocdbt.process_20x", "checkpoint-200", "last.ckpt"):
        assert not save_shown(20, att, None, [_entry(t, name)]), name


def test_a_directory_shows_a_save_by_the_files_under_it() -> None:
    """A directory's own mtime says when an entry was made in it (a write began); its files say when the write
    was last done: DeepSpeed rewrites `global_step10/*` in place, leaving the directory's time from the attempt
    before (recording deepspeed-0.19-fresh-start), so that listing shows no save of the earlier attempt."""
    att = {"started": "2026-12-02T00:00:00Z", "ended": "2026-12-02T00:01:00Z"}
    t = epoch(att["started"]) + 10
    assert not save_shown(20, att, None, [_entry(t, "global_step20", files_at=t + 3600)])  # rewritten later
    assert save_shown(20, att, None, [_entry(t - 3600, "global_step20", files_at=t)])  # made before, written now
    assert not save_shown(20, att, None, [[(t, "/c/run/global_step20", "d")]])  # nothing in it


# -- the verdict's truth (realruns/record.py `verdict`) and its `not_fail` list ----------------------------------
def _record() -> Any:
    """realruns/record.py as a module (run by hand, not packaged; it finds matrix.py beside it)."""
    import importlib.util

    path = Path(__file__).resolve().parents[2] / "realruns" / "record.py"
    spec = importlib.util.spec_from_file_location("realruns_record", path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _att(i: int, saves: list[int], fault: str | None, ended_by: str, resumed_from: int | None = None) -> dict:
    return {"index": i, "fault": {"signal": fault} if fault else None, "ended_by": ended_by,
            "exit_code": 137 if ended_by == "killed" else 0, "steps": {"first": 1, "last": 25},
            "saves_complete": saves, "saves_partial": [], "resumed_from": resumed_from, "resume_path": None,
            "crashed_while_loading": False, "partial_paths": []}  # fmt: skip


def test_the_committed_verdicts_are_the_truths() -> None:
    """Every recording's verdict is what `verdict()` makes of its truth (`record.py --verdicts` rewrites them)."""
    rec = _record()
    by_id = {r.id: r for r in rec.RUNS}
    for run in all_runs():
        r = by_id.get(run["id"]) or by_id[run["first_take"]]
        assert run["verdict"] == rec.verdict(run["attempts"], r), run["id"]


def test_no_checkpoint_before_interruption_from_the_truth() -> None:
    rec = _record()
    r = rec.RUNS[0]
    saved = rec.verdict([_att(0, [10, 20], "SIGKILL", "killed"), _att(1, [30, 40], None, "completed", 20)], r)
    assert "no-checkpoint-before-interruption" in saved["pass"]
    lost = rec.verdict([_att(0, [], "SIGKILL", "killed"), _att(1, [10, 20], None, "completed")], r)
    assert "no-checkpoint-before-interruption" in lost["fail"]
    # no save of its own, but the next attempt resumed from an earlier one: neither
    mid = [_att(0, [10], "SIGKILL", "killed"), _att(1, [], "SIGKILL", "killed", 10)]
    mid.append(_att(2, [20], None, "completed", 10))
    v = rec.verdict(mid, r)
    assert "no-checkpoint-before-interruption" not in v["fail"] + v["pass"]


def test_final_checkpoint_missing_must_not_fail_without_a_sigterm() -> None:
    rec = _record()
    r = rec.RUNS[0]
    killed = rec.verdict([_att(0, [10, 20], "SIGKILL", "killed"), _att(1, [30, 40], None, "completed", 20)], r)
    assert killed["not_fail"] == ["final-checkpoint-missing"]
    termed = rec.verdict([_att(0, [10, 20, 25], "SIGTERM", "terminated"), _att(1, [30], None, "completed", 25)], r)
    assert "final-checkpoint-missing" in termed["pass"] and termed["not_fail"] == []
    kept = [x for x in all_runs() if "final-checkpoint-missing" in x["verdict"]["not_fail"]]
    assert len(kept) >= 40 and not any((a["fault"] or {}).get("signal") == "SIGTERM" for x in kept
                                       for a in x["attempts"])  # fmt: skip


def test_a_not_fail_rule_is_a_miss_only_when_it_fails() -> None:
    v = {"fail": [], "pass": [], "not_fail": ["final-checkpoint-missing"]}
    assert judge_not_fail(v, {"final-checkpoint-missing": "fail"}) == {
        "finding:final-checkpoint-missing:fail-must-not-fail"
    }
    for got in ({"final-checkpoint-missing": "pass"}, {"final-checkpoint-missing": "not_evaluated"}, {}):
        assert judge_not_fail(v, got) == set()
    assert judge_not_fail({"fail": [], "pass": []}, {"final-checkpoint-missing": "fail"}) == set()
