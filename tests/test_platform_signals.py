"""Platform signals in the attempts timeline (issue 21 §4): each read as seen / absent / unknown, the known
upstream defects as caveats, and a progress report below every earlier save as evidence of a fresh start."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ckpt_doctor.facts.platform import CAVEAT_3666, CAVEAT_3779, platform_of
from ckpt_doctor.facts.timeline import timeline_of
from ckpt_doctor.pipeline import diagnose_snapshot
from ckpt_doctor.sources.bundle import open_bundle
from tests.scenario import Scenario, convention_log, resumed_condition, ts
from tests.stories import CK, _restart


def _diagnose(s: Scenario, tmp_path: Path):
    with open_bundle(s.write(tmp_path / "bundle")) as snap:
        return diagnose_snapshot(snap)


def _objs(objs: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [o for o in objs if o["kind"] == kind]


def _status(pct: float, minutes: float, **extra: Any) -> dict[str, Any]:
    return {"progressPercentage": pct, "estimatedRemainingSeconds": 600, "lastUpdatedTime": ts(minutes),
            "metrics": [{"name": "loss", "value": "1.92"}], **extra}  # fmt: skip


def test_nothing_reported_is_absent_not_unknown(tmp_path: Path) -> None:
    s = _restart(Scenario(), convention_log(CK, 0, 180, crash="Killed"), convention_log(CK, 150, 400))
    diag = _diagnose(s, tmp_path)
    p = platform_of(diag.facts)
    assert p.get("trainerStatus").state == "absent"  # type: ignore[union-attr]
    assert p.get("rhoaiTrainerStatus").state == "absent"  # type: ignore[union-attr]
    assert p.get("RestartingJobSet").state == "absent"  # type: ignore[union-attr]
    assert p.trainer_status is None and p.caveats == []
    assert "platform" not in timeline_of(diag.facts).to_json()


def test_every_signal_is_read_where_present(tmp_path: Path) -> None:
    def post(objs: list[dict[str, Any]]) -> None:
        (tj,) = _objs(objs, "TrainJob")
        tj.setdefault("status", {})["trainerStatus"] = _status(40.0, 50)
        tj["metadata"].setdefault("annotations", {})["trainer.opendatahub.io/trainerStatus"] = json.dumps(
            {"progressPercentage": 40, "checkpoint": {"last_step": 350, "last_path": f"{CK}/checkpoint-350"}}
        )
        (js,) = _objs(objs, "JobSet")
        js["status"]["executionAttempts"] = 2
        js["status"].setdefault("conditions", []).append(
            {"type": "RestartingJobSet", "status": "False", "reason": "JobsReady", "message": "all jobs are ready"}
        )
        for pod in _objs(objs, "Pod"):
            pod["metadata"].setdefault("annotations", {})["jobset.sigs.k8s.io/execution-attempt"] = "1"

    s = _restart(Scenario(), convention_log(CK, 0, 180, crash="Killed"), convention_log(CK, 150, 400))
    s.post = post
    diag = _diagnose(s, tmp_path)
    p = platform_of(diag.facts)
    seen = {x.name for x in p.seen()}
    assert {"trainerStatus", "rhoaiTrainerStatus", "executionAttempts", "RestartingJobSet", "execution-attempt"} <= seen
    assert p.trainer_status is not None and p.trainer_status.percent == 40.0
    assert p.trainer_status.metrics == {"loss": "1.92"}
    tl = timeline_of(diag.facts)
    doc = tl.to_json()
    assert {x["name"] for x in doc["platform"]["signals"]} >= {"trainerStatus", "RestartingJobSet"}
    assert any("the trainer reports 40%" in n for n in tl.notes), tl.notes


def test_known_defects_are_caveats(tmp_path: Path) -> None:
    """A resumed TrainJob (#3666) and a JobSet whose restart count is below its pods' restart attempt (#3779)."""

    def post(objs: list[dict[str, Any]]) -> None:
        (js,) = _objs(objs, "JobSet")
        js["status"]["restarts"] = 0

    s = _restart(Scenario(), convention_log(CK, 0, 180, crash="Killed"), convention_log(CK, 150, 400))
    s.tj_conditions = [resumed_condition(30)]
    s.post = post
    p = platform_of(_diagnose(s, tmp_path).facts)
    assert CAVEAT_3666 in p.caveats and CAVEAT_3779 in p.caveats
    assert CAVEAT_3779 in p.get("restarts").caveats  # type: ignore[union-attr]


def test_kueue_conditions_or_unknown_when_workloads_were_not_read(tmp_path: Path) -> None:
    s = _restart(Scenario(), convention_log(CK, 0, 180, crash="Killed"), convention_log(CK, 150, 400))
    s.listed = ["jobs", "pods", "events", "persistentvolumeclaims"]  # Workloads not listed
    p = platform_of(_diagnose(s, tmp_path / "a").facts)
    assert p.get("workload").state == "unknown", p.get("workload")  # type: ignore[union-attr]


def _progress_after_restart(pct: float) -> Scenario:
    """Attempt 0 saved checkpoint-50 … 150 and crashed; attempt 1's log is unreadable; the TrainJob then
    reported `pct` of 1000 steps."""

    def post(objs: list[dict[str, Any]]) -> None:
        (tj,) = _objs(objs, "TrainJob")
        tj.setdefault("status", {})["trainerStatus"] = _status(pct, 60)

    s = _restart(Scenario(), convention_log(CK, 0, 180, crash="Killed"), convention_log(CK, 150, 400))
    s.attempts[1].log = None
    s.post = post
    return s


def test_progress_below_every_earlier_save_is_a_fresh_start(tmp_path: Path) -> None:
    diag = _diagnose(_progress_after_restart(3.0), tmp_path)
    (f,) = [f for f in diag.findings if f.rule.id == "fresh-start-after-restart"]
    assert f.status == "fail", f.result.reason
    assert "below step 50" in (f.result.detail or "") and f.result.confidence == "medium"
    assert any(e.get("path") == "status.trainerStatus" for e in f.result.evidence), f.result.evidence


def test_progress_above_the_saves_proves_nothing(tmp_path: Path) -> None:
    diag = _diagnose(_progress_after_restart(30.0), tmp_path)
    (f,) = [f for f in diag.findings if f.rule.id == "fresh-start-after-restart"]
    assert f.status == "not_evaluated", (f.status, f.result.detail)
