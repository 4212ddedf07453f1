"""The timeline fact: attempts, what ended each, and the work lost at each interruption.

On the examples (JobSet restarts, a container restart, suspend/resume, pods gone) and on scenarios built
here with tests/scenario.py (a deleted pod whose log was kept, Kueue preemption, OOMKilled, eviction, node
loss, a deadline). Unknown stays unknown: never 0.
"""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from ckpt_doctor.facts.timeline import Timeline, timeline_of
from tests.clirun import run_cli
from tests.report.conftest import EXAMPLES, ROOT, diagnose_dir, diagnosis
from tests.scenario import T0, Attempt, Scenario, convention_log, resumed_condition, tqdm, ts
from tests.stories import CK, _restart

SCHEMA = json.loads((ROOT / "docs" / "findings.schema.json").read_text())


def tl(name: str) -> Timeline:
    return timeline_of(diagnosis(name).facts)


def built(tmp_path: Path, s: Scenario, extra_logs: dict[str, str] | None = None) -> Timeline:
    root = s.write(tmp_path / "b")
    for pod, text in (extra_logs or {}).items():
        (root / "logs" / pod).mkdir(parents=True, exist_ok=True)
        (root / "logs" / pod / "node.log").write_text(text)
    return timeline_of(diagnose_dir(root).facts)


# -- the examples ---------------------------------------------------------------------------------------------
def test_jobset_restart_to_an_older_checkpoint() -> None:
    t = tl("lexical-sort-older")
    a0, a1 = t.attempts
    assert (a0.start, a0.last_step, a0.newest_save, a0.end.kind, a0.end.then) == ("fresh", 1020, 1000, "crash",
                                                                                   "jobset-restart")  # fmt: skip
    assert "CUDA out of memory" in a0.end.text and a0.end.exit_code == 1
    assert (a1.how, a1.start, a1.start_step, a1.running) == ("jobset-restart", "resumed", 950, True)
    assert a1.resumed_from == f"{CK}/checkpoint-950"
    [i] = t.interruptions
    assert (i.from_step, i.to_step, i.steps_lost, i.behind_save, i.newest_save) == (1020, 950, 70, 50, 1000)
    assert i.label == "↓ ≥ 1020 → 950, ≥ 70 steps lost"
    assert i.redo_seconds == pytest.approx(70 / 1.84) and i.redo_from == "its progress bar"
    assert i.gpus == 1 and i.gpu_hours == pytest.approx(70 / 1.84 / 3600)
    assert i.downtime_seconds == 630  # 08:30:00 → 08:40:30
    assert t.steps_lost == 70 and not t.lost_complete  # attempt 0 crashed: 1020 is a lower bound


def test_jobset_restart_resumed_from_the_newest_save() -> None:
    [i] = tl("healthy-resume").interruptions
    assert (i.from_step, i.to_step, i.steps_lost, i.behind_save) == (180, 150, 30, 0)


def test_container_restart() -> None:
    t = tl("no-failure-policy")
    a0, a1 = t.attempts
    assert a1.how == "container-restart" and a0.end.then == "container-restart"
    assert a1.end.kind == "crash" and a1.end.then == "failed"  # the TrainJob failed: no restart was configured
    [i] = t.interruptions
    assert (i.from_step, i.to_step, i.steps_lost) == (120, 100, 20)


def test_suspend_and_resume() -> None:
    t = tl("final-checkpoint-missing")
    a0, a1 = t.attempts
    assert a0.end.kind == "suspended" and a0.end.exit_code == 137
    assert "grace period ran out" in a0.end.text  # the log had SIGTERM, the exit code says SIGKILL
    assert a0.end.at == "2026-11-30T08:30:00Z"  # when it ended, not when the TrainJob was resumed
    assert a1.how == "resumed" and a0.end.then == "resumed"
    [i] = t.interruptions
    assert (i.steps_lost, i.cause, i.downtime_seconds) == (80, "suspended", 3690)


def test_an_attempt_whose_pods_and_logs_are_gone_is_unknown_never_zero() -> None:
    t = tl("emptydir-fresh-start")
    a0, a1 = t.attempts
    assert a0.index == 0 and a0.inferred and "pods and logs are gone" in a0.inferred
    assert (a0.last_step, a0.start, a0.points, a0.gpus) == (None, "unknown", [], None)
    assert a0.end.then == "jobset-restart" and a0.ended_by == "2026-11-30T08:39:00Z"  # the restart event
    assert a1.start == "fresh" and a1.start_step == 0
    [i] = t.interruptions
    assert i.steps_lost is None and i.gpu_hours is None and i.redo_seconds is None
    assert "how far attempt 0 got is not known" in i.unknown
    assert t.steps_lost is None and not t.lost_complete


def test_restarts_exhausted_with_three_lost_attempts() -> None:
    t = tl("resume-true-hardcoded")
    assert [a.index for a in t.attempts] == [0, 1, 2, 3]
    assert [bool(a.inferred) for a in t.attempts] == [True, True, True, False]
    last = t.attempts[-1]
    assert last.end.kind == "crash" and last.end.then == "restarts-exhausted"
    assert all(i.steps_lost is None for i in t.interruptions)


def test_waiting_on_a_volume_after_resume() -> None:
    t = tl("rwo-multi-attach")
    a0, a1 = t.attempts
    assert a0.end.kind == "suspended" and a0.newest_save == 231
    assert a1.start == "pending" and a1.end.kind == "pending" and "ContainerCreating" in a1.end.text
    [i] = t.interruptions
    assert i.steps_lost is None and "has not started yet" in i.unknown
    assert i.downtime_open and i.downtime_seconds == 5400  # 08:30 → collected at 10:00


def test_a_rejected_trainjob_has_no_invented_attempt() -> None:
    t = tl("env-in-overrides-rejected")
    assert t.attempts == [] and t.interruptions == [] and t.steps_lost == 0


@pytest.mark.parametrize("name", sorted(p.name for p in EXAMPLES.iterdir() if (p / "bundle.yaml").exists()))
def test_json_carries_the_timeline_and_stays_valid(name: str) -> None:
    r = run_cli(["diagnose", "--bundle", str(EXAMPLES / name), "-o", "json"])
    assert r.rc in (0, 1), r.err
    doc = r.json()
    jsonschema.validate(doc, SCHEMA)
    t = doc["timeline"]
    assert set(t) == {"collectedAt", "attempts", "interruptions", "totals", "notes"}
    assert len(t["attempts"]) == len(tl(name).attempts)
    for i in t["interruptions"]:
        assert i["stepsLost"] is None or i["stepsLost"] >= 0
        assert i["unknown"] or i["stepsLost"] is not None


# -- built scenarios ------------------------------------------------------------------------------------------
def stamped_log(start_min: float, first: int, last: int, secs_per_step: float, save_every: int = 50) -> str:
    """A training log as `kubectl logs --timestamps` gives it: every line carries its time."""
    from datetime import timedelta

    def at(step: int) -> str:
        return (T0 + timedelta(minutes=start_min, seconds=(step - first) * secs_per_step)).strftime(
            "%Y-%m-%dT%H:%M:%S.000000000Z"
        )

    lines = [f"{at(first)} [checkpoint] no prior checkpoint, starting fresh"]
    for step in range(first, last + 1):
        if step % 10 == 0:
            lines.append(f"{at(step)} {tqdm(step, 1000).lstrip(chr(13))}")
        if step and step % save_every == 0:
            lines.append(f"{at(step)} [checkpoint] saved {CK}/checkpoint-{step}")
    return "\n".join(lines) + "\n"


def test_a_deleted_pod_whose_log_was_kept(tmp_path: Path) -> None:
    """JobSet restart; attempt 0's pod is gone but a recorder kept its log (with kubectl timestamps)."""
    s = _restart(Scenario(), "unused", convention_log(CK, 150, 400), kept_first=False)
    gone = s.pod_names()[0][0]
    t = built(tmp_path, s, {gone: stamped_log(0.7, 0, 180, 6.0)})
    a0, _a1 = t.attempts
    assert a0.inferred and "log kept" in a0.inferred and a0.pods == [gone]
    assert (a0.last_step, a0.newest_save, a0.start) == (180, 150, "fresh")
    assert a0.rate == pytest.approx(1 / 6) and a0.rate_from == "its log's timestamps"
    assert a0.started == "2026-11-30T08:00:42Z" and a0.ended == "2026-11-30T08:18:42Z"
    assert all(not p.estimated for p in a0.points if p.kind != "start")
    assert a0.gpus == 1 and "assumed" in a0.gpus_from  # its own pod is gone: as many per pod as attempt 1's
    [i] = t.interruptions
    assert (i.from_step, i.to_step, i.steps_lost) == (180, 150, 30)
    assert i.redo_seconds == pytest.approx(180) and i.gpu_hours == pytest.approx(0.05)
    assert i.downtime_seconds == (40.5 - 18.7) * 60


def test_kueue_preemption(tmp_path: Path) -> None:
    s = Scenario()
    s.labels = {"kueue.x-k8s.io/queue-name": "team-a"}
    s.tj_conditions = [resumed_condition(60)]
    s.workload = {
        "apiVersion": "kueue.x-k8s.io/v1beta1",
        "kind": "Workload",
        "metadata": {"name": f"trainjob-{s.name}-1a2b3", "namespace": s.ns, "ownerReferences": [
            {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob", "name": s.name}]},
        "status": {"conditions": [{"type": "Evicted", "status": "True", "reason": "Preempted",
                                   "message": "Preempted to accommodate a higher priority Workload",
                                   "lastTransitionTime": ts(30)}]},
    }  # fmt: skip
    s.attempts = [
        Attempt(
            0,
            "gpu-node-a",
            convention_log(CK, 0, 230, sigterm_at=230, final_save=True),
            phase="Failed",
            exit_code=143,
            reason="Error",
            started=0,
        ),
        Attempt(0, "gpu-node-b", convention_log(CK, 231, 300), started=61),
    ]
    t = built(tmp_path, s)
    a0, _a1 = t.attempts
    assert a0.end.kind == "preempted" and "Kueue" in a0.end.text and "SIGTERM (exit 143)" in a0.end.text
    assert any(e.get("type") == "condition" and "Workload" in e.get("object", "") for e in a0.end.evidence)
    [i] = t.interruptions
    assert i.cause == "preempted" and i.steps_lost == 0 and i.redo_seconds == 0  # the final save held


def test_oom_killed_then_restarted_in_place(tmp_path: Path) -> None:
    s = Scenario()
    s.attempts = [
        Attempt(
            0,
            "gpu-node-a",
            convention_log(CK, 100, 200),
            previous_log=convention_log(CK, 0, 130),
            prev_exit=137,
            prev_reason="OOMKilled",
            started=0,
        ),
    ]
    t = built(tmp_path, s)
    a0, a1 = t.attempts
    assert a0.end.kind == "oom-killed" and a0.end.reason == "OOMKilled" and a1.how == "container-restart"
    [i] = t.interruptions
    assert (i.from_step, i.to_step, i.steps_lost) == (130, 100, 30)


def test_evicted(tmp_path: Path) -> None:
    s = _restart(Scenario(), convention_log(CK, 0, 120), convention_log(CK, 100, 150))
    s.attempts[0].reason, s.attempts[0].exit_code = "Evicted", 143
    t = built(tmp_path, s)
    seen = [a for a in t.attempts if not a.inferred]
    assert seen[0].end.kind == "evicted" and seen[0].end.then == "jobset-restart"
    assert not [a for a in t.attempts if a.inferred]  # an eviction with no time is no proof of an earlier attempt


def test_node_lost(tmp_path: Path) -> None:
    s = _restart(Scenario(), convention_log(CK, 0, 120), convention_log(CK, 100, 150))
    s.attempts[0].exit_code, s.attempts[0].reason = 137, "Error"
    first = s.pod_names()[0][0]

    def disrupted(objs: list[dict]) -> None:
        for o in objs:
            if o["kind"] == "Pod" and o["metadata"]["name"] == first:
                o["status"]["conditions"] = [{"type": "DisruptionTarget", "status": "True",
                                              "reason": "DeletionByTaintManager",
                                              "message": "Taint manager: deleting due to NoExecute taint"}]  # fmt: skip

    s.post = disrupted
    t = built(tmp_path, s)
    seen = [a for a in t.attempts if not a.inferred]
    assert seen[0].end.kind == "node-lost" and "unreachable" in seen[0].end.text


def test_deadline(tmp_path: Path) -> None:
    s = Scenario()
    msg = "TrainJob exceeded its activeDeadlineSeconds"
    s.tj_conditions = [
        {"type": "Failed", "status": "True", "reason": "DeadlineExceeded", "message": msg, "lastTransitionTime": ts(30)}
    ]
    s.attempts = [Attempt(0, "gpu-node-a", convention_log(CK, 0, 200), phase="Failed", exit_code=143,
                          reason="Error", started=0)]  # fmt: skip
    t = built(tmp_path, s)
    assert t.attempts[0].end.kind == "deadline" and t.interruptions == []
