"""Attempts from what happened, not from a condition's name (issue 22 §3 and the silent-pass probe).

A resume, a restart counter or a kept log is an earlier attempt only with evidence that something ran
before it; with none, that attempt is unknown and the symptoms that need it are not_evaluated, never
failed and never passed. Attempts come from every source in the snapshot: a kept `.previous.log` proves
an earlier instance even when the Pod's status is missing or says nothing.
"""

from __future__ import annotations

import copy
import shutil
from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML

from ckpt_doctor.pipeline import diagnose_snapshot
from ckpt_doctor.sources.bundle import open_bundle
from tests.held import crash_loop
from tests.scenario import Attempt, Scenario, convention_log, hf_log, resumed_condition, ts
from tests.stories import CK

ROOT = Path(__file__).resolve().parents[1]
SYMPTOMS_NEEDING_AN_EARLIER_ATTEMPT = (
    "fresh-start-after-restart",
    "resumed-older-checkpoint",
    "final-checkpoint-missing",
    "no-checkpoint-before-interruption",
    "ckpt-autodetect-found-nothing",
)


def diagnose(s: Scenario, tmp_path: Path):
    with open_bundle(s.write(tmp_path / "b")) as snap:
        return diagnose_snapshot(snap)


def status(diag, rule: str) -> str:
    [got] = {f.status for f in diag.findings if f.rule.id == rule}
    return got


def workload(conditions: list[dict[str, Any]], requeue: dict[str, Any] | None = None) -> dict[str, Any]:
    st: dict[str, Any] = {"conditions": conditions}
    if requeue is not None:
        st["requeueState"] = requeue
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta1",
        "kind": "Workload",
        "metadata": {"name": "trainjob-sft-resumable-3f2a1", "namespace": "team-a",
                     "ownerReferences": [{"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
                                          "name": "sft-resumable"}]},
        "status": st,
    }  # fmt: skip


def admitted(minute: float) -> list[dict[str, Any]]:
    return [
        {"type": "QuotaReserved", "status": "True", "reason": "QuotaReserved", "lastTransitionTime": ts(minute)},
        {"type": "Admitted", "status": "True", "reason": "Admitted", "lastTransitionTime": ts(minute)},
    ]


def first_run(**kw: Any) -> Scenario:
    """A TrainJob created suspended, resumed a minute later (Kueue's admission, or a team staging it), whose
    first and only attempt is training from step 0: every pod, log and event is younger than the resume."""
    s = Scenario()
    s.tj_conditions = [resumed_condition(-1)]
    s.attempts = [Attempt(0, "gpu-node-a", convention_log(CK, 0, 90))]
    for k, v in kw.items():
        setattr(s, k, v)
    return s


def test_a_first_run_resumed_with_nothing_before_it_is_no_critical_false_alarm(tmp_path: Path) -> None:
    """No Workload in the snapshot, no queue-name label (Kueue's default LocalQueue needs none): the resume
    tells nothing about an earlier run, so fresh-start-after-restart is unknown, not critical."""
    diag = diagnose(first_run(), tmp_path)
    for rule in SYMPTOMS_NEEDING_AN_EARLIER_ATTEMPT:
        f = next(f for f in diag.findings if f.rule.id == rule)
        assert f.status == "not_evaluated", (rule, f.status, f.result.detail)
        assert "resumed at 2026-11-30T07:59:00Z" in (f.result.reason or ""), f.result.reason
    h = diag.facts.history
    assert [a.index for a in h.attempts] == [0] and h.attempts[0].how == "initial" and not h.interruptions
    assert not h.earlier and h.doubt


@pytest.mark.parametrize(
    ("variant", "want"),
    [
        ("workload admitted once", "pass"),
        ("queue label", "pass"),
        ("jobset suspended at creation", "pass"),
        ("workload evicted before", "fail"),
        ("workload requeued", "fail"),
        ("pod event before the resume", "fail"),
        ("job created a pod before the resume", "fail"),
        ("jobset suspended after a run", "fail"),
    ],
)
def test_the_same_first_run_with_and_without_what_shows_a_run_before_the_resume(
    tmp_path: Path, variant: str, want: str
) -> None:
    s = first_run()
    if variant == "workload admitted once":
        s.workload = workload(admitted(-1))
    elif variant == "queue label":
        s.labels = {"kueue.x-k8s.io/queue-name": "team-a-queue"}
    elif variant == "jobset suspended at creation":
        s.event("JobSet", s.name, "SuspendedJobs", "jobset is suspended", -2, etype="Normal")
        s.event("JobSet", s.name, "ResumeJobs", "jobset is resumed", -1, etype="Normal")
    elif variant == "workload evicted before":
        s.workload = workload([*admitted(-1), {"type": "Evicted", "status": "True", "reason": "Preempted",
                                               "message": "Preempted to accommodate a higher priority Workload",
                                               "lastTransitionTime": ts(-1.5)}])  # fmt: skip
    elif variant == "workload requeued":
        s.workload = workload([*admitted(-1), {"type": "Requeued", "status": "True", "reason": "Preempted",
                                               "lastTransitionTime": ts(-1.2)}], {"count": 1})  # fmt: skip
    elif variant == "pod event before the resume":
        s.event("Pod", f"{s.name}-node-0-0-zzzzz", "Started", "Started container node", -1.8, etype="Normal")
    elif variant == "job created a pod before the resume":
        s.event("Job", f"{s.name}-node-0", "SuccessfulCreate", f"Created pod: {s.name}-node-0-0-zzzzz", -1.9,
                etype="Normal")  # fmt: skip
    elif variant == "jobset suspended after a run":
        s.tj_conditions = [resumed_condition(60)]
        s.attempts = [
            Attempt(0, "gpu-node-a", convention_log(CK, 0, 230, sigterm_at=230), phase="Failed", exit_code=143,
                    reason="Error", started=0),
            Attempt(0, "gpu-node-b", convention_log(CK, 0, 60, resumed=False), started=61),
        ]  # fmt: skip
        s.event("JobSet", s.name, "SuspendedJobs", "jobset is suspended", 45, etype="Normal")
    diag = diagnose(s, tmp_path)
    assert status(diag, "fresh-start-after-restart") == want, variant


def test_a_jobset_suspended_at_creation_alone_is_no_interruption(tmp_path: Path) -> None:
    """The JobSet's SuspendedJobs event at its creation, with no TrainJob condition at all: a staged job."""
    s = Scenario()
    s.attempts = [Attempt(0, "gpu-node-a", convention_log(CK, 0, 90), started=1)]
    s.event("JobSet", s.name, "SuspendedJobs", "jobset is suspended", -2, etype="Normal")
    s.event("JobSet", s.name, "ResumeJobs", "jobset is resumed", 0.5, etype="Normal")
    diag = diagnose(s, tmp_path)
    assert status(diag, "fresh-start-after-restart") == "pass"
    assert not diag.facts.history.interruptions


# -- the silent pass: a Pod without status must not hide the log the bundle keeps -------------------------
def _disk_full_in_the_previous_instance() -> Scenario:
    s = Scenario()
    crash = "OSError: [Errno 28] No space left on device: '/mnt/ckpt/sft-resumable/checkpoint-700'"
    full = hf_log(CK, 0, 700, save_every=100, crash=crash)
    s.attempts = [Attempt(0, "gpu-node-a", convention_log(CK, 600, 650), previous_log=full, started=0)]
    return s


def _fresh_after_an_in_place_restart() -> Scenario:
    s = Scenario()
    before = convention_log(CK, 0, 260, crash="RuntimeError: NCCL error")
    s.attempts = [Attempt(0, "gpu-node-a", convention_log(CK, 0, 60, resumed=False), previous_log=before, started=0)]
    return s


def _strip(what: str) -> Any:
    def edit(objs: list[dict[str, Any]]) -> None:
        for o in objs:
            if o["kind"] != "Pod":
                continue
            if what == "status":
                o.pop("status", None)
            elif what == "containerStatuses":
                o.get("status", {}).pop("containerStatuses", None)
            elif what == "restartCount":
                for cs in o.get("status", {}).get("containerStatuses") or []:
                    cs.pop("restartCount", None)
                    cs.pop("lastState", None)

    return edit


@pytest.mark.parametrize("what", ["status", "containerStatuses", "restartCount"])
def test_a_pod_without_status_keeps_its_previous_log_as_an_earlier_attempt(tmp_path: Path, what: str) -> None:
    s = _disk_full_in_the_previous_instance()
    s.post = _strip(what)
    diag = diagnose(s, tmp_path / "disk")
    assert status(diag, "checkpoint-disk-full") == "fail"
    s = _fresh_after_an_in_place_restart()
    s.post = _strip(what)
    diag = diagnose(s, tmp_path / "fresh")
    assert status(diag, "fresh-start-after-restart") == "fail"
    assert any(e.get("type") == "log" and e.get("previous") for e in diag.facts.history.earlier)


def _bundles_with_previous_logs() -> list[object]:
    """Every bundle that keeps a `.previous.log`, each with the three ways of losing the status; the recordings'
    (dozens, all shaped alike) with the narrowest one, the restart counter alone (a test stays fast)."""
    out: list[object] = []
    local = [*(ROOT / "examples").iterdir(), *(ROOT / "tests" / "held" / "bundles").glob("*")]
    recorded = sorted((ROOT / "tests" / "recordings" / "bundles").glob("*"))
    for d in [*sorted(local), *recorded]:
        if not any(d.glob("logs/*/*.previous.log")):
            continue
        ways = ("restartCount",) if d in recorded else ("status", "containerStatuses", "restartCount")
        out += [pytest.param(d, w, id=f"{w}-{d.parent.parent.name}/{d.name}") for w in ways]
    return out


@pytest.mark.parametrize(("bundle", "what"), _bundles_with_previous_logs())
def test_taking_pod_status_away_never_turns_a_finding_into_a_pass(tmp_path: Path, bundle: Path, what: str) -> None:
    """Less evidence may make a rule not_evaluated, never an all-clear: every fail and not_evaluated stays."""
    with open_bundle(bundle) as snap:
        before = {(f.rule.id, str(f.result.subject)): f.status for f in diagnose_snapshot(snap).findings}
    copy_ = tmp_path / "b"
    shutil.copytree(bundle, copy_)
    y = YAML(typ="safe")
    for path in copy_.rglob("*.yaml"):
        doc = y.load(path.read_text())
        kinds = {doc.get("kind"), *(i.get("kind") for i in doc.get("items") or [])} if isinstance(doc, dict) else set()
        if "Pod" not in kinds:
            continue
        items = doc["items"] if doc.get("kind") == "List" else [doc]
        objs = copy.deepcopy(items)
        _strip(what)(objs)
        if doc.get("kind") == "List":
            doc["items"] = objs
        else:
            doc = objs[0]
        with path.open("w") as f:
            y.dump(doc, f)
    with open_bundle(copy_) as snap:
        after = {(f.rule.id, str(f.result.subject)): f.status for f in diagnose_snapshot(snap).findings}
    worse = {k: (before[k], after.get(k)) for k in before if before[k] != "pass" and after.get(k) == "pass"}
    assert not worse, worse


# -- crash loops ------------------------------------------------------------------------------------------
def test_a_crash_loop_is_attempts_that_crashed_and_one_waiting_not_one_running(tmp_path: Path) -> None:
    diag = diagnose(crash_loop(), tmp_path)
    h = diag.facts.history
    assert h.crash_loop and "CrashLoopBackOff" in h.crash_loop
    ended, waiting = h.attempts
    assert (ended.index, waiting.index) == (4, 5)  # restartCount 5: instances 0-3 ran before, their logs gone
    [r] = ended.runs
    assert r.exit_code == 1 and r.log is not None and r.last_state
    [w] = waiting.runs
    assert w.not_started and w.log is None and "CrashLoopBackOff" in w.waiting
    assert h.lost_instances and h.lost_instances[0][:2] == (0, 4)
    assert any("attempts 0-3" in u for u in h.unseen)
