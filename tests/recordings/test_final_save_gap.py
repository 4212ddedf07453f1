"""final-checkpoint-missing from the checkpoint listings (issue 19, recordings dcp/deepspeed-*-sigterm-no-handler,
lightning-2.6-slow-save-grace, and every run SIGKILLed with no SIGTERM first).

- A run stopped by SIGTERM trains on after its newest save until it stops; its log's last step is a lower bound
  (dcp prints every 5 steps, DeepSpeed none). The listing shows when that save was written and, from two saves of
  the run, how long a step takes at most; the trainer's own line saying it got the signal when SIGTERM came (to
  the millisecond: torchrun's glog stamp, whose year the run's times give), else the kubelet's Killing event, to
  the second (a lower bound). A gap of 1 s and one step period or more means steps ran after the save: lost, at
  medium confidence. Below either, nothing is said.
- A final save the log announces after SIGTERM but never shows finished counts once a listing shows it complete,
  written after SIGTERM and before the run ended (Lightning's last.ckpt).
- Exit 137 with nothing showing a SIGTERM first (no Killing event, eviction, preemption, suspend, DisruptionTarget
  or signal line) is a SIGKILL alone: no chance to save, so the rule never fails on it.
"""

from __future__ import annotations

import json
import re
import shutil
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from ckpt_doctor.pipeline import diagnose_snapshot
from ckpt_doctor.sources.bundle import open_bundle
from tests.recordings.bundles import OUT, all_runs, bundle_id, models_for, write_bundle
from tests.recordings.variants import TRANSFORMS, retimed, variant_run

RULE = "final-checkpoint-missing"
RUNS = all_runs()
BY_ID = {r["id"]: r for r in RUNS}
GAP = "dcp-1rank-sigterm-no-handler"  # torchrun exit 1 after SIGTERM, `step N/40` every 5 steps, resumed from 20
QUIET = "deepspeed-0.19-sigterm-no-handler"  # the same under DeepSpeed, which prints no step at all
FLUSHED = "lightning-2.6-slow-save-grace"  # `SIGTERM: saving at step 25`, no completion line, last.ckpt written


def _finding(bundle: Path) -> dict[str, Any]:
    with open_bundle(bundle) as snap:
        doc = diagnose_snapshot(snap).to_json()
    return next(f for f in doc["findings"] if f["rule"] == RULE)


def _copy(bundle: str, tmp_path: Path) -> Path:
    dst = tmp_path / bundle
    shutil.copytree(OUT / bundle, dst)
    return dst


def _set_mtime(bundle: Path, path: str, t: float) -> None:
    """Every listing in the bundle shows `path` (and what is under it) last written at `t`."""
    for p in (bundle / "checkpoints").rglob("*.txt"):
        p.write_text(retimed(p.read_text(), path, t))


_GLOG = re.compile(rb"^W(\d\d)(\d\d) (\d\d:\d\d:\d\d\.\d+) .*Received 15 death signal", re.M)


def _sigterm_at(bundle: Path) -> float:
    """When SIGTERM reached the stopped attempt: torchrun's own line when its log has one, else the Killing event."""
    killing = _killing_at(bundle)
    for log in (bundle / "logs").rglob("*.log"):
        m = _GLOG.search(log.read_bytes())
        if m is not None:
            year = datetime.fromtimestamp(killing, tz=UTC).year
            mo, d, hms = (g.decode() for g in m.groups())
            return datetime.strptime(f"{year}-{mo}-{d} {hms}", "%Y-%m-%d %H:%M:%S.%f").replace(tzinfo=UTC).timestamp()
    return killing


def _killing_at(bundle: Path) -> float:
    from ckpt_doctor.facts.timeline import epoch

    doc = json.loads((bundle / "events.json").read_text())
    [t] = [epoch(e["lastTimestamp"]) for e in doc["items"] if e["reason"] == "Killing"]
    assert t is not None
    return t


def _mtime(bundle: Path, path: str) -> float:
    for p in (bundle / "checkpoints").rglob("*.txt"):
        for ln in p.read_text().splitlines():
            parts = ln.split(" ", 3)
            if not ln.startswith("#") and len(parts) == 4 and parts[3] == path:
                return float(parts[2])
    raise AssertionError(path)


def _no_step_lines(raw: bytes, att: dict[str, Any]) -> bytes:
    """The stopped attempt's log without the lines that print a training step."""
    if att["index"] != 0:
        return raw
    return b"".join(ln for ln in raw.splitlines(keepends=True) if not re.search(rb"\bstep \d+/\d+", ln))


# -- steps ran after the last save: the gap --------------------------------------------------------------------
@pytest.mark.parametrize("rid", [GAP, QUIET])
@pytest.mark.parametrize("dress", ["as-recorded", "no-step-lines", *TRANSFORMS])
def test_steps_run_after_the_last_save_are_lost(rid: str, dress: str, tmp_path: Path) -> None:
    run = BY_ID[rid]
    if dress == "no-step-lines":
        run = variant_run(run, _no_step_lines, tmp_path / "runs")
    elif dress != "as-recorded":
        run = variant_run(run, TRANSFORMS[dress], tmp_path / "runs")
    f = _finding(write_bundle(run, "jobset-kept", tmp_path / "bundles"))
    assert (f["status"], f.get("confidence")) == ("fail", "medium"), f
    assert re.search(r"SIGTERM \d+\.\d s or more after its newest checkpoint \(step 20", f["detail"]), f["detail"]
    m = re.search(r"a step at 0\.\d\d s or less, so about (\d+) more step\(s\) ran \(an estimate\)", f["detail"])
    assert m is not None, f["detail"]
    # an estimate from the saves' pace (which holds a save too): never more steps than the truth lost
    lost = run["attempts"][0]["steps"]["last"] - 20
    assert 1 <= int(m.group(1)) <= lost, (m.group(1), lost)
    kinds = [e["type"] for e in f["evidence"]]
    assert "log" in kinds and "event" in kinds and kinds.count("checkpoint") == 2, kinds


def test_the_estimate_is_the_truth_when_the_trainer_says_when(tmp_path: Path) -> None:
    """dcp: torchrun's line gives SIGTERM to the millisecond, 2.2 s after step 20's save at 0.42 s a step: 5 steps,
    as many as the run trained after it (the bundle's Killing event, 3 s later, made it 12)."""
    f = _finding(OUT / bundle_id(BY_ID[GAP], "jobset-kept"))
    assert "about 5 more step(s)" in f["detail"], f["detail"]


def _no_signal_stamp(raw: bytes, att: dict[str, Any]) -> bytes:
    """torchrun's glog prefix taken off its lines: the signal line no longer says when."""
    return re.sub(rb"(?m)^[IWEF]\d{4} \d\d:\d\d:\d\d\.\d+ +\d+ [^\]\s]+\] ", b"", raw)


def test_without_the_trainers_time_the_events_second_decides(tmp_path: Path) -> None:
    """DeepSpeed's save came 0.998 s before the Killing event's second: under the clocks' margin, so without
    torchrun's own stamp nothing is said; dcp's gap is wide enough either way."""
    quiet = _finding(write_bundle(variant_run(BY_ID[QUIET], _no_signal_stamp, tmp_path / "r1"), "jobset-kept",
                                  tmp_path / "b1"))  # fmt: skip
    assert quiet["status"] == "not_evaluated", quiet
    gap = _finding(write_bundle(variant_run(BY_ID[GAP], _no_signal_stamp, tmp_path / "r2"), "jobset-kept",
                                tmp_path / "b2"))  # fmt: skip
    assert gap["status"] == "fail", gap


def _shifted(run: dict[str, Any], dt: float, root: Path) -> dict[str, Any]:
    """The same run `dt` seconds later: its attempts' times, its listings' times and every mtime in them."""
    import yaml

    from tests.recordings.bundles import epoch, load_run

    def later(text: str) -> str:
        t = datetime.fromtimestamp(epoch(text) + dt, tz=UTC)
        return t.strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"

    d = root / run["id"]
    shutil.copytree(run["_dir"], d)
    doc = yaml.safe_load((d / "run.yaml").read_text())
    for a in doc["attempts"]:
        a["started"], a["ended"] = later(a["started"]), later(a["ended"])
    (d / "run.yaml").write_text(yaml.safe_dump(doc, sort_keys=False, allow_unicode=True))
    for p in d.glob("attempt-*.listing"):
        out = []
        for ln in p.read_text().splitlines(keepends=True):
            parts = ln.split(" ", 3)
            if ln.startswith("# at: "):
                ln = f"# at: {later(ln[6:].strip())}\n"
            elif not ln.startswith("#") and len(parts) == 4:
                ln = f"{parts[0]} {parts[1]} {float(parts[2]) + dt:.10f} {parts[3]}"
            out.append(ln)
        p.write_text("".join(out))
    return load_run(d)


@pytest.mark.parametrize("dt", [0.6, 400 * 86400.0, -3.3])
def test_the_same_run_at_another_time_is_judged_alike(dt: float, tmp_path: Path) -> None:
    """Times shifted (a fraction of a second moves the Killing event's truncated second): still lost."""
    f = _finding(write_bundle(_shifted(BY_ID[GAP], dt, tmp_path / "runs"), "jobset-kept", tmp_path / "bundles"))
    assert (f["status"], f.get("confidence")) == ("fail", "medium"), f
    g = _finding(write_bundle(_shifted(BY_ID[FLUSHED], dt, tmp_path / "runs"), "jobset-kept", tmp_path / "b2"))
    assert g["status"] == "pass", g


def test_a_gap_shorter_than_one_step_period_says_nothing(tmp_path: Path) -> None:
    """The same run with its saves of step 10 and 20 far apart: a step may take longer than the gap."""
    b = _copy(bundle_id(BY_ID[GAP], "jobset-kept"), tmp_path)
    last = _mtime(b, "/mnt/checkpoints/run/step-20")
    gap = _sigterm_at(b) - last
    _set_mtime(b, "/mnt/checkpoints/run/step-10", last - 10 * (gap + 1.0))
    f = _finding(b)
    assert f["status"] == "not_evaluated", f
    assert "whether steps were lost is not shown" in f["reason"]


def test_a_gap_under_a_second_says_nothing(tmp_path: Path) -> None:
    """The newest save half a second before SIGTERM: the clocks of the node and the volume may disagree by that
    much."""
    b = _copy(bundle_id(BY_ID[GAP], "jobset-kept"), tmp_path)
    t = _sigterm_at(b) - 0.5
    _set_mtime(b, "/mnt/checkpoints/run/step-20", t)
    _set_mtime(b, "/mnt/checkpoints/run/step-10", t - 4.2)
    assert _finding(b)["status"] == "not_evaluated"


def test_a_save_after_sigterm_is_no_gap(tmp_path: Path) -> None:
    """The newest save written after SIGTERM: the listing cannot tell it from a final save."""
    b = _copy(bundle_id(BY_ID[GAP], "jobset-kept"), tmp_path)
    _set_mtime(b, "/mnt/checkpoints/run/step-20", _sigterm_at(b) + 1.2)
    assert _finding(b)["status"] == "not_evaluated"


# -- a final save the log announced and the listing shows written -----------------------------------------------
@pytest.mark.parametrize("dress", ["as-recorded", *TRANSFORMS])
def test_a_final_save_the_listing_shows_written_after_sigterm_passes(dress: str, tmp_path: Path) -> None:
    run = BY_ID[FLUSHED]
    if dress != "as-recorded":
        run = variant_run(run, TRANSFORMS[dress], tmp_path / "runs")
    f = _finding(write_bundle(run, "jobset-kept", tmp_path / "bundles"))
    assert f["status"] == "pass", f
    assert "announced a save after SIGTERM and wrote last.ckpt" in f["reason"]


def test_a_final_save_written_before_sigterm_does_not_pass(tmp_path: Path) -> None:
    b = _copy(bundle_id(BY_ID[FLUSHED], "jobset-kept"), tmp_path)
    _set_mtime(b, "/mnt/checkpoints/run/last.ckpt", _killing_at(b) - 0.5)
    assert _finding(b)["status"] != "pass"


# -- exit 137 with nothing showing SIGTERM came first ----------------------------------------------------------
def _sigkilled(run: dict[str, Any]) -> bool:
    return any((a.get("fault") or {}).get("signal") == "SIGKILL" for a in run["attempts"][:-1])


SIGKILLED = [(r, m) for r in RUNS if _sigkilled(r) for m in models_for(r)]


def test_there_are_sigkilled_runs() -> None:
    assert len({r["id"] for r, _m in SIGKILLED}) >= 20


@pytest.mark.parametrize(("run", "model"), SIGKILLED, ids=[bundle_id(r, m) for r, m in SIGKILLED])
def test_a_sigkill_alone_never_fails(run: dict[str, Any], model: str) -> None:
    f = _finding(OUT / bundle_id(run, model))
    assert f["status"] != "fail", f.get("detail")


KEPT_SIGKILLED = [r for r, m in SIGKILLED if m == "jobset-kept"]


@pytest.mark.parametrize("run", KEPT_SIGKILLED, ids=[r["id"] for r in KEPT_SIGKILLED])
def test_a_sigkill_with_sigterm_shown_first_is_judged(run: dict[str, Any], tmp_path: Path) -> None:
    """The same bundle with the kubelet's Killing event 5 s before the first pod ended: the SIGKILL came at the end
    of a grace period, and the rule judges the run again instead of saying a SIGKILL alone came."""
    import yaml

    b = _copy(bundle_id(run, "jobset-kept"), tmp_path)
    before = _finding(b)
    assert before["status"] != "fail"
    pods = yaml.safe_load((b / "pods.yaml").read_text())["items"]
    first = min(pods, key=lambda p: p["metadata"]["creationTimestamp"])
    term = first["status"]["containerStatuses"][0]["state"]["terminated"]
    if term["exitCode"] != 137:
        pytest.skip(f"the SIGKILL hit a worker, the container exited {term['exitCode']}")
    if before["status"] == "not_evaluated" and "nothing shows SIGTERM came first" not in before["reason"]:
        pytest.skip("not judged for another reason: " + before["reason"][:120])
    from ckpt_doctor.facts.timeline import epoch

    end = epoch(term["finishedAt"])
    assert end is not None
    at = datetime.fromtimestamp(end - 5, tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    doc = json.loads((b / "events.json").read_text())
    name = first["metadata"]["name"]
    doc["items"].append({"apiVersion": "v1", "kind": "Event",
                         "metadata": {"name": f"{name}.kill", "namespace": first["metadata"]["namespace"]},
                         "involvedObject": {"kind": "Pod", "namespace": first["metadata"]["namespace"], "name": name,
                                            "uid": first["metadata"].get("uid", "")},
                         "reason": "Killing", "message": "Stopping container node", "type": "Normal", "count": 1,
                         "firstTimestamp": at, "lastTimestamp": at, "source": {"component": "kubelet"}})  # fmt: skip
    (b / "events.json").write_text(json.dumps(doc))
    after = _finding(b)
    assert "nothing shows SIGTERM came first" not in (after.get("reason") or ""), after


def test_a_recording_that_kept_when_sigterm_was_sent_places_the_killing_event(tmp_path: Path) -> None:
    """The harness now keeps `fault.sent_at`; the bundle's Killing event is then that second (else the attempt's
    end minus a second: 3 s late on dcp). With torchrun's own stamp taken off, the event alone gives 5 steps."""
    import yaml

    from tests.recordings.bundles import load_run

    d = tmp_path / "run"
    shutil.copytree(BY_ID[GAP]["_dir"], d)
    doc = yaml.safe_load((d / "run.yaml").read_text())
    doc["attempts"][0]["fault"]["sent_at"] = "2026-12-02T01:05:12.092Z"  # torchrun's line says this
    (d / "run.yaml").write_text(yaml.safe_dump(doc, sort_keys=False, allow_unicode=True))
    run = variant_run(load_run(d), _no_signal_stamp, tmp_path / "runs")
    b = write_bundle(run, "jobset-kept", tmp_path / "bundles")
    assert _killing_at(b) == datetime(2026, 12, 2, 1, 5, 12, tzinfo=UTC).timestamp()
    assert "about 5 more step(s)" in _finding(b)["detail"]
