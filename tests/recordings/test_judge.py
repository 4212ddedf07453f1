"""The judge's own reading of a raw log (tests/recordings/judge.py `shows_progress`), which decides when an
attempt may come out with its last step unknown: it must see the progress every framework that prints it shows,
and only the logs that truly show none (rich without a terminal, DeepSpeed at its default log level, output lost
to buffering) may pass as quiet."""

from __future__ import annotations

import pytest

from tests.recordings.bundles import all_runs, epoch
from tests.recordings.judge import save_shown, shows_progress

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
