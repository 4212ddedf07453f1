"""How an attempt ended, judged on the real runs (recordings/) and on variants of them (issue 19 §4, endings).

A trainer stopped by SIGTERM often exits with a code of its own: 0 after a save-on-SIGTERM handler or
Lightning's signal handling, 1 from torchrun's agent (`SignalException: Process 1 got signal: 15`). Such an
attempt was terminated, not completed and not crashed. Each case is checked with every piece of evidence
the bundle may keep (the trainer's line, the kubelet's Killing event) and with each one taken away; and the
opposite: a SIGTERM that came after the work was done, or that PID 1 dropped, leaves a completed run.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from ckpt_doctor.facts.timeline import timeline_of
from ckpt_doctor.pipeline import diagnose_snapshot
from ckpt_doctor.sources.bundle import open_bundle
from tests.recordings.bundles import all_runs, write_bundle

RUNS = {r["id"]: r for r in all_runs()}
# every recorded attempt that SIGTERM stopped and that then exited with its own code (0 or 1)
TERMINATED = sorted(
    (rid, a["index"])
    for rid, r in RUNS.items()
    for a in r["attempts"]
    if a["ended_by"] == "terminated" and a["exit_code"] not in (137, 143)
)
# attempts sent SIGTERM that ran to their end anyway (PID 1 with no handler ignored it) and exited 0
IGNORED = sorted(
    (rid, a["index"])
    for rid, r in RUNS.items()
    for a in r["attempts"]
    if (a.get("fault") or {}).get("signal") == "SIGTERM" and a["ended_by"] == "completed"
)


def bundle(tmp_path: Path, rid: str) -> Path:
    return write_bundle(RUNS[rid], "jobset-kept", tmp_path)


def ending(b: Path, index: int) -> Any:
    with open_bundle(b) as snap:
        diag = diagnose_snapshot(snap)
    tl = timeline_of(diag.facts)
    return next(a for a in tl.attempts if a.index == index).end


def drop_events(b: Path, reason: str) -> None:
    f = b / "events.json"
    doc = json.loads(f.read_text())
    doc["items"] = [e for e in doc["items"] if e.get("reason") != reason]
    f.write_text(json.dumps(doc))


def pods(b: Path) -> dict[int, dict[str, Any]]:
    """The bundle's pods by restart attempt (jobset-kept: one pod per attempt)."""
    items = yaml.safe_load((b / "pods.yaml").read_text())["items"]
    return {int(p["metadata"]["labels"]["jobset.sigs.k8s.io/restart-attempt"]): p for p in items}


def pod_of(b: Path, index: int) -> str:
    return str(pods(b)[index]["metadata"]["name"])


def add_killing(b: Path, pod: str, at: str) -> None:
    f = b / "events.json"
    doc = json.loads(f.read_text())
    doc["items"].append({
        "apiVersion": "v1", "kind": "Event", "metadata": {"name": f"{pod}.kill", "namespace": "team-a"},
        "involvedObject": {"kind": "Pod", "namespace": "team-a", "name": pod}, "reason": "Killing",
        "message": "Stopping container node", "type": "Normal", "count": 1, "lastTimestamp": at,
    })  # fmt: skip
    f.write_text(json.dumps(doc))


def test_there_are_such_runs() -> None:
    assert len(TERMINATED) >= 8 and {RUNS[r]["framework"] for r, _ in TERMINATED} >= {"hf-trainer", "lightning",
                                                                                        "torch-dcp", "deepspeed"}
    assert IGNORED, "a recording where SIGTERM was sent and the run finished anyway"


@pytest.mark.parametrize(("rid", "index"), TERMINATED, ids=[f"{r}-a{i}" for r, i in TERMINATED])
def test_terminated_with_own_exit_code_is_a_sigterm_ending(tmp_path: Path, rid: str, index: int) -> None:
    b = bundle(tmp_path, rid)
    end = ending(b, index)
    assert end.kind == "sigterm", end.text
    assert "SIGTERM" in end.text
    # the trainer's own words alone (no Killing event kept: events expire after an hour)
    drop_events(b, "Killing")
    assert ending(b, index).kind == "sigterm"


@pytest.mark.parametrize(("rid", "index"), [t for t in TERMINATED if RUNS[t[0]]["attempts"][t[1]]["exit_code"] != 0],
                         ids=lambda x: str(x))  # fmt: skip
def test_a_non_zero_exit_after_the_kubelets_sigterm_is_no_crash_without_the_log(
    tmp_path: Path, rid: str, index: int
) -> None:
    b = bundle(tmp_path, rid)
    shutil.rmtree(b / "logs" / pod_of(b, index))
    assert ending(b, index).kind == "sigterm"


@pytest.mark.parametrize(("rid", "index"), IGNORED, ids=[f"{r}-a{i}" for r, i in IGNORED])
def test_a_sigterm_pid1_dropped_leaves_a_completed_run(tmp_path: Path, rid: str, index: int) -> None:
    """The kubelet sent SIGTERM (its Killing event), but the trainer never saw it and trained to its end."""
    assert ending(bundle(tmp_path, rid), index).kind == "completed"


def test_a_worker_stopped_by_torchrun_is_no_sigterm_of_the_container(tmp_path: Path) -> None:
    """torchrun SIGTERMs the surviving worker when another dies (`Signal 15 (SIGTERM) received by PID 6` in its
    summary): the container was not sent SIGTERM, the attempt crashed."""
    b = write_bundle(RUNS["dcp-2ranks-correct-resume"], "jobset-kept", tmp_path)
    assert ending(b, 0).kind == "crash"


def test_a_sigterm_after_training_reached_its_total_is_a_completion(tmp_path: Path) -> None:
    """A Killing event while the container ran and a `Received SIGTERM` line after the bar reached its total
    (HF's `Total optimization steps = 40`, the bar at 40/40): the work was done, the run completed."""
    rid = "hf-5.24-correct-resume"
    b = bundle(tmp_path, rid)
    last = len(RUNS[rid]["attempts"]) - 1
    pod = pods(b)[last]
    log = b / "logs" / pod["metadata"]["name"] / "node.log"
    log.write_text(log.read_text() + "Received SIGTERM, shutting down\n")
    finished = pod["status"]["containerStatuses"][0]["state"]["terminated"]["finishedAt"]
    add_killing(b, pod["metadata"]["name"], finished)
    assert ending(b, last).kind == "completed"
    # the same line before the bar reached its total: stopped by the signal
    text = log.read_text().replace("Received SIGTERM, shutting down\n", "")
    at = text.index(" 25/40")
    log.write_text(text[:at] + "\nReceived SIGTERM, shutting down\n" + text[at:])
    assert ending(b, last).kind == "sigterm"
