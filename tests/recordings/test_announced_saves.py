"""A save announced by its start line and finished as the listing shows it (issue 19 §4, recording
lightning-2.6-slow-save-grace): the SIGTERM handler logs `[checkpoint] SIGTERM: saving at step 25` and writes
`last.ckpt`, whose name holds no step; SIGKILL comes at the end of the grace period, so the log never shows the
save done. The listing taken after the attempt shows `last.ckpt` complete, the newest of its directory, written
after SIGTERM reached the pod (the kubelet's Killing event: the line itself has no clock) and before the attempt
ended: that is the save of step 25.

Never from a file written before the save began (in the second of SIGTERM or earlier, or before the line's own
timestamp) or outside the attempt (a listing taken after the next attempt rewrote it), nor past another
checkpoint written since the line. Checked on every SIGTERM recording and its bundles, on the Lightning handlers
killed at the end of the grace instead of exiting, and on those in the dress of other setups (variants.py)."""

from __future__ import annotations

import json
import math
import re
import shutil
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import yaml

from ckpt_doctor.facts.timeline import timeline_of
from ckpt_doctor.pipeline import diagnose_snapshot
from ckpt_doctor.sources.bundle import open_bundle
from tests.recordings.bundles import OUT, all_runs, bundle_id, epoch, kill_first_container, models_for, write_bundle
from tests.recordings.judge import judge
from tests.recordings.variants import TRANSFORMS, variant_run

SIGTERM_RUNS = [r for r in all_runs() if r["scenario"] in ("sigterm-handler", "slow-save-grace")]
BUNDLES = [(r, m) for r in SIGTERM_RUNS for m in models_for(r)]
# a handler that announces its save before the write, into a file whose name holds no step
ANNOUNCING = [r for r in SIGTERM_RUNS if r["framework"] == "lightning"]
DRESSES = ("kubectl-prefix", "rank-tag", "crlf", "json-lines")


def test_the_recordings_have_them() -> None:
    assert {r["framework"] for r in SIGTERM_RUNS} >= {"hf-trainer", "lightning", "accelerate", "torch-dcp",
                                                      "deepspeed", "orbax"}  # fmt: skip
    assert len(ANNOUNCING) >= 4


def _timeline(bundle: Path) -> Any:
    with open_bundle(bundle) as snap:
        return timeline_of(diagnose_snapshot(snap).facts)


@pytest.mark.parametrize(("run", "model"), BUNDLES, ids=[bundle_id(r, m) for r, m in BUNDLES])
def test_every_save_read_is_a_true_one_and_none_shown_is_missed(run: dict[str, Any], model: str) -> None:
    bundle = OUT / bundle_id(run, model)
    misses, _ = judge(bundle)
    assert not {"saves-not-read", "save-not-in-truth", "partial-save-counted"} & set(misses), misses
    tl = _timeline(bundle)
    for e, t in zip(reversed(tl.attempts), reversed(run["attempts"]), strict=False):
        assert {s.step for s in e.saves} <= set(t["saves_complete"])


def _killed(bundle: Path) -> Path:
    """The bundle with the first attempt's container killed (137) at the end of its grace period rather than
    exiting on its own, the kubelet's Killing event no later than the second before the handler's file was
    written (a recorded handler that exited on its own has the event just before its exit: tests/recordings/
    bundles.py; the kubelet sends SIGTERM when it says Killing)."""
    pod = kill_first_container(bundle)
    written = _entry(_first_listing(bundle), "last.ckpt")
    events = json.loads((bundle / "events.json").read_text())
    for e in events["items"]:
        if e["reason"] == "Killing" and e["involvedObject"]["name"] == pod:
            t = min(epoch(e["lastTimestamp"]), math.floor(written) - 1.0)
            e["firstTimestamp"] = e["lastTimestamp"] = e["metadata"]["creationTimestamp"] = _k8s(t)
    (bundle / "events.json").write_text(json.dumps(events, indent=4))
    return bundle


def _k8s(t: float) -> str:
    return datetime.fromtimestamp(t, tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _copy(run: dict[str, Any], tmp_path: Path, dress: str | None = None) -> Path:
    if dress is None:
        d = tmp_path / "b"
        shutil.copytree(OUT / bundle_id(run, "jobset-kept"), d)
    else:
        d = write_bundle(variant_run(run, TRANSFORMS[dress], tmp_path / "runs"), "jobset-kept", tmp_path / "bundles")
    return _killed(d)


def _announced(run: dict[str, Any], bundle: Path) -> set[int]:
    """The steps the first attempt's timeline reads from the listing beside an announced save."""
    return {s.step for s in _timeline(bundle).attempts[0].saves if s.source == "listing" and s.evidence.get("why")}


def _final(run: dict[str, Any]) -> int:
    a = run["attempts"][0]
    assert a["steps"]["last"] in a["saves_complete"]
    return a["steps"]["last"]


@pytest.mark.parametrize("run", ANNOUNCING, ids=[r["id"] for r in ANNOUNCING])
def test_killed_after_the_write_the_listing_shows_the_save_done(run: dict[str, Any], tmp_path: Path) -> None:
    assert _announced(run, _copy(run, tmp_path)) == {_final(run)}


CASES = [(r, d) for r in ANNOUNCING for d in DRESSES]


@pytest.mark.parametrize(("run", "dress"), CASES, ids=[f"{r['id']}-{d}" for r, d in CASES])
def test_in_another_dress_too(run: dict[str, Any], dress: str, tmp_path: Path) -> None:
    assert _announced(run, _copy(run, tmp_path, dress)) == {_final(run)}


# -- when the listing does not show it --------------------------------------------------------------------------
def _first_listing(bundle: Path) -> Path:
    return sorted((bundle / "checkpoints").rglob("*.txt"), key=lambda p: p.read_text().split("# at: ")[1][:30])[0]


def _entry(listing: Path, name: str) -> float:
    return next(float(ln.split()[2]) for ln in listing.read_text().splitlines() if ln.endswith("/" + name))


def _set(listing: Path, name: str, t: float) -> None:
    out = []
    for ln in listing.read_text().splitlines():
        if ln.endswith("/" + name):
            y, size, _m, path = ln.split(" ", 3)
            ln = f"{y} {size} {t:.10f} {path}"
        out.append(ln)
    listing.write_text("\n".join(out) + "\n")


def _sigterm_second(bundle: Path) -> float:
    """When the kubelet's Killing event says SIGTERM reached the first attempt's pod (to the second)."""
    doc = yaml.safe_load((bundle / "pods.yaml").read_text())
    first = min(doc.get("items", [doc]), key=lambda p: p["status"]["startTime"])["metadata"]["name"]
    items = json.loads((bundle / "events.json").read_text())["items"]
    return min(epoch(e["lastTimestamp"]) for e in items
               if e["reason"] == "Killing" and e["involvedObject"]["name"] == first)  # fmt: skip


@pytest.mark.parametrize("run", ANNOUNCING, ids=[r["id"] for r in ANNOUNCING])
def test_not_from_a_file_written_before_the_save_began(run: dict[str, Any], tmp_path: Path) -> None:
    b = _copy(run, tmp_path)
    lst = _first_listing(b)
    t_sig = _sigterm_second(b)
    newest_named = max(_entry(lst, n) for n in re.findall(r"/(step=\d+\.ckpt)$", lst.read_text(), re.M))
    assert newest_named < t_sig
    for t in (t_sig - 0.5, t_sig + 0.5):  # before SIGTERM, and inside the second the event is kept to
        _set(lst, "last.ckpt", max(t, newest_named + 0.1))
        assert not _announced(run, b), t


@pytest.mark.parametrize("run", ANNOUNCING, ids=[r["id"] for r in ANNOUNCING])
def test_not_from_a_listing_taken_after_the_next_attempt_rewrote_it(run: dict[str, Any], tmp_path: Path) -> None:
    b = _copy(run, tmp_path)
    _first_listing(b).unlink()  # only the listing after the last attempt is left: last.ckpt is its save's
    assert not _announced(run, b)
    assert _final(run) not in {s.step for s in _timeline(b).attempts[0].saves}


@pytest.mark.parametrize("run", ANNOUNCING, ids=[r["id"] for r in ANNOUNCING])
def test_not_past_another_checkpoint_written_since_the_line(run: dict[str, Any], tmp_path: Path) -> None:
    b = _copy(run, tmp_path)
    lst = _first_listing(b)
    last = _entry(lst, "last.ckpt")
    named = re.findall(r"/(step=\d+\.ckpt)$", lst.read_text(), re.M)
    _set(lst, max(named, key=lambda n: _entry(lst, n)), last - 0.2)  # a step file of another save, since SIGTERM
    assert not _announced(run, b)


def _stamped(raw: bytes, at: float, line_rx: bytes) -> bytes:
    """Every line stamped as `kubectl logs --timestamps` would, at the attempt's start, except the save's start
    line, stamped at `at`."""
    from tests.recordings.variants import _stamp

    out = []
    for ln in raw.splitlines(keepends=True):
        out.append(_stamp(at if re.search(line_rx, ln) else at - 20.0) + b" " + ln)
    return b"".join(out)


@pytest.mark.parametrize("run", ANNOUNCING, ids=[r["id"] for r in ANNOUNCING])
def test_the_lines_own_time_places_the_save(run: dict[str, Any], tmp_path: Path) -> None:
    """With a clock on the line (kubectl --timestamps), a file written before the stamped line is not its save,
    and one written a second or more after it is."""
    written = _entry(_first_listing(OUT / bundle_id(run, "jobset-kept")), "last.ckpt")
    got = {}
    for name, at in (("before", written - 2.0), ("after", written + 0.5)):

        def dress(raw: bytes, att: dict[str, Any], at: float = at) -> bytes:
            return _stamped(raw, at, rb"\[checkpoint\] SIGTERM: saving at step") if att["index"] == 0 else raw

        v = variant_run(run, dress, tmp_path / name / "runs")
        got[name] = _announced(run, _killed(write_bundle(v, "jobset-kept", tmp_path / name / "bundles")))
    assert got == {"before": {_final(run)}, "after": set()}


@pytest.mark.parametrize("run", ANNOUNCING, ids=[r["id"] for r in ANNOUNCING])
def test_the_grace_finding_says_the_save_finished(run: dict[str, Any], tmp_path: Path) -> None:
    """grace-period-too-short on the same killed bundles: the save finished (the listing), the process outlived
    the grace period after it; never a save still running when SIGKILL came."""
    with open_bundle(_copy(run, tmp_path)) as snap:
        doc = diagnose_snapshot(snap).to_json()
    f = next(x for x in doc["findings"] if x["rule"] == "grace-period-too-short")
    assert f"the save of step {_final(run)} began after SIGTERM and finished within" in f["detail"], f
    assert "still running when SIGKILL came at the end of the" in f["detail"] and "killed after the save" in f["detail"]
    assert "a final save here takes more than" not in f["detail"]
    assert any(e.get("path", "").endswith("/last.ckpt") for e in f["evidence"]), f["evidence"]
