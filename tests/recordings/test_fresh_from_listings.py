"""A fresh start the checkpoint listings prove when the logs cannot (DeepSpeed at its default log level, Lightning
2.6's rich bar without a terminal; issue 19 §2): a later attempt wrote a checkpoint at a step no higher than the
lowest one its directory already held, so it trained from step 0 again. Checked over the recordings and over the
same bundles with every log blanked (the listings alone must decide), and never on a run that resumed.

Where only the listing taken after the last attempt is left (a container restarted in place, a JobSet restart
that deleted the old pods), a checkpoint rewritten in place (DeepSpeed's `global_step10/*`) keeps its directory's
own time from the attempt before: that shows it was there before the attempt began."""

from __future__ import annotations

import math
import re
import shutil
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from ckpt_doctor.data import recordings_dir
from ckpt_doctor.facts.timeline import timeline_of
from ckpt_doctor.pipeline import diagnose_snapshot
from ckpt_doctor.sources.bundle import open_bundle
from tests.recordings.bundles import OUT, all_runs, bundle_id, epoch, load_run, models_for, write_bundle
from tests.recordings.judge import listing_entries, save_shown

KEPT = [r for r in all_runs() if "jobset-kept" in models_for(r) and len(r["attempts"]) > 1]
FRESH = [r for r in KEPT if r["scenario"] == "fresh-start"]
RESUMED = [r for r in KEPT if all(a["resumed_from"] is not None for a in r["attempts"][1:])]
# only the last listing left: the container restarted in place, or the JobSet restart deleted the old pods
LAST_ONLY = [(r, m) for r in FRESH for m in ("in-place", "jobset-gone") if m in models_for(r)]
RESUMED_ALL = [(r, m) for r in RESUMED for m in models_for(r) if m != "jobset-kept"]


def _run(bundle: Path) -> tuple[Any, dict[str, str]]:
    with open_bundle(bundle) as snap:
        diag = diagnose_snapshot(snap)
    return timeline_of(diag.facts), {f["rule"]: f["status"] for f in diag.to_json()["findings"]}


def _blanked(run: dict[str, Any], tmp_path: Path, model: str = "jobset-kept", src: Path = OUT) -> Path:
    d = tmp_path / "b"
    shutil.copytree(src / bundle_id(run, model), d)
    for p in (d / "logs").rglob("*.log"):
        p.write_bytes(b"")
    return d


def _rewritten_in_place(bundle: Path, att: dict[str, Any]) -> bool:
    """What the raw listing in the bundle shows, read without the engine: a checkpoint directory made before the
    attempt began (its own mtime: an entry was made in it then) whose files were all written while it ran, at a
    step no higher than any other made before it began, and not the highest of those (the highest may be a save
    cut short that a resume did again)."""
    t0 = math.floor(epoch(att["started"]))  # pod times are whole seconds
    t1 = math.ceil(epoch(att["ended"])) + 1.0
    entries = [e for p in (bundle / "checkpoints").rglob("*.txt") for e in listing_entries(p.read_text())]
    before, again = [], []
    for m, path, kind in entries:
        step = re.search(r"(\d+)$", path.rpartition("/")[2])
        files = [fm for fm, fp, fk in entries if fk == "f" and fp.startswith(path + "/")]
        if kind != "d" or step is None or not files or m >= t0:
            continue
        before.append(int(step.group(1)))
        if t0 <= min(files) and max(files) <= t1:
            again.append(int(step.group(1)))
    return any(s <= min(before) and max(before) > s for s in again)


def test_there_are_both() -> None:
    assert {r["framework"] for r in FRESH} >= {"deepspeed", "lightning", "hf-trainer"} and len(RESUMED) >= 10
    # the in-place rewrite is there to be read (DeepSpeed), so the last-listing cases are not all vacuous
    assert any(_rewritten_in_place(OUT / bundle_id(r, m), r["attempts"][-1]) for r, m in LAST_ONLY)


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


@pytest.mark.parametrize(("run", "model"), LAST_ONLY, ids=[bundle_id(r, m) for r, m in LAST_ONLY])
def test_logs_blanked_the_last_listing_alone_shows_a_rewrite_in_place(
    run: dict[str, Any], model: str, tmp_path: Path
) -> None:
    b = _blanked(run, tmp_path, model)
    tl, st = _run(b)
    last = tl.attempts[-1]
    assert last.start != "resumed" and st.get("fresh-start-after-restart") != "pass"
    if _rewritten_in_place(b, run["attempts"][-1]):
        assert last.start == "fresh" and "written again while it ran; its directory was already there" in (
            last.start_text
        )
        assert st["fresh-start-after-restart"] == "fail"


@pytest.mark.parametrize(("run", "model"), RESUMED_ALL, ids=[bundle_id(r, m) for r, m in RESUMED_ALL])
def test_logs_blanked_a_resume_is_never_called_fresh_in_any_model(
    run: dict[str, Any], model: str, tmp_path: Path
) -> None:
    tl, st = _run(_blanked(run, tmp_path, model))
    assert all(a.start != "fresh" for a in tl.attempts[1:])
    assert st.get("fresh-start-after-restart") != "fail"


def _rotated(run_id: str, drop: tuple[str, ...], tmp_path: Path) -> dict[str, Any]:
    """A copy of a recorded run whose listings no longer hold `drop` (a script's rotation removed them)."""
    d = tmp_path / "runs" / run_id
    shutil.copytree(recordings_dir() / run_id, d)
    for p in d.glob("attempt-*.listing"):
        keep = [ln for ln in p.read_text().splitlines(keepends=True)
                if not any(f"/{x}" in ln.split(" ", 3)[-1] for x in drop)]  # fmt: skip
        p.write_text("".join(keep))
    return load_run(d)


@pytest.mark.parametrize("model", ["in-place", "jobset-gone"])
def test_a_save_cut_short_and_done_again_by_a_resume_is_no_fresh_start(model: str, tmp_path: Path) -> None:
    """deepspeed-0.19-partial-save: attempt 0 began global_step30 and was killed; attempt 1 resumed from 20 and
    wrote global_step30 again in place. With rotation having removed global_step10 and 20, the last listing holds
    global_step30 (its directory from before attempt 1) as the lowest: still no proof of a fresh start."""
    run = _rotated("deepspeed-0.19-partial-save", ("global_step10", "global_step20"), tmp_path)
    assert run["attempts"][1]["resumed_from"] == 20
    b = write_bundle(run, model, tmp_path / "bundles")
    tl, st = _run(_blanked(run, tmp_path, model, b.parent))
    assert tl.attempts[-1].start != "fresh" and st.get("fresh-start-after-restart") != "fail"


def _as_ls(find_text: str, precision: str) -> str:
    """A `find -printf` listing rewritten as `ls -laR` would print it: times to the nanosecond (GNU
    --time-style=full-iso), to the second (busybox --full-time) or to the minute (plain `ls`)."""
    heads = [ln for ln in find_text.splitlines() if ln.startswith("#")]
    rows = [(p[0], p[1], float(p[2]), p[3]) for ln in find_text.splitlines() if not ln.startswith("#")
            for p in [ln.split(" ", 3)] if len(p) == 4]  # fmt: skip
    style = {"ns": "%Y-%m-%d %H:%M:%S.%f000 +0000", "s": "%Y-%m-%d %H:%M:%S +0000", "min": "Dec %e %H:%M"}[precision]
    out = heads[:]
    for d in [r[3] for r in rows if r[0] == "d"]:
        out.append(f"{d}:")
        for k, size, m, p in rows:
            if p == d or p.rpartition("/")[0] == d:
                when = datetime.fromtimestamp(m, tz=UTC).strftime(style)
                mode = "drwxr-xr-x" if k == "d" else "-rw-r--r--"
                out.append(f"{mode}    1 root     root  {size:>9} {when} {'.' if p == d else p.rpartition('/')[2]}")
        out.append("")
    return "\n".join(out) + "\n"


@pytest.mark.parametrize(("precision", "fresh"), [("ns", True), ("s", False), ("min", False)])
def test_a_directory_time_within_the_listing_precision_of_the_start_is_not_placed(
    precision: str, fresh: bool, tmp_path: Path
) -> None:
    """A directory's own time counts as before the attempt only by more than the listing's precision: to the
    nanosecond global_step10 and global_step20 were made 3.1 s and 0.5 s before the container's start second; to
    the second global_step20 cannot be placed before it (and global_step10 alone, the highest left, may be a save
    cut short), to the minute neither: unknown, never resumed."""
    run = next(r for r, m in LAST_ONLY if r["id"] == "deepspeed-0.19-fresh-start" and m == "jobset-gone")
    b = _blanked(run, tmp_path, "jobset-gone")
    for p in (b / "checkpoints").rglob("*.txt"):
        p.write_text(_as_ls(p.read_text(), precision))
    tl, st = _run(b)
    assert (tl.attempts[-1].start == "fresh") is fresh and tl.attempts[-1].start != "resumed"
    assert st["fresh-start-after-restart"] == ("fail" if fresh else "not_evaluated")
