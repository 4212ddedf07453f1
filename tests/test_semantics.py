"""Shared semantics of contracts.md §6 that no single rule fixture pins down."""

from __future__ import annotations

from pathlib import Path

import pytest

from ckpt_doctor.facts.versions import trainer_version
from ckpt_doctor.pipeline import diagnose_snapshot
from ckpt_doctor.scope import build_scope, pick_trainjob
from ckpt_doctor.sources.bundle import open_bundle
from tests.scenario import Attempt, Scenario, convention_log, resumed_condition, ts
from tests.stories import CK, emptydir_fresh_start, healthy_resume


def diagnose(s: Scenario, tmp_path: Path):
    with open_bundle(s.write(tmp_path / "b")) as snap:
        return diagnose_snapshot(snap)


def statuses(diag, rule: str) -> set[str]:
    return {f.status for f in diag.findings if f.rule.id == rule}


def test_kueue_admission_resume_is_not_a_restart(tmp_path: Path) -> None:
    """Kueue suspends at creation and resumes on admission: that Resumed condition is no interruption."""
    s = Scenario()
    s.labels = {"kueue.x-k8s.io/queue-name": "team-a-queue"}
    s.tj_conditions = [resumed_condition(-1)]
    s.attempts = [Attempt(0, "gpu-node-a", convention_log(CK, 0, 90))]
    diag = diagnose(s, tmp_path)
    assert statuses(diag, "fresh-start-after-restart") == {"pass"}


def test_kueue_preemption_is_a_restart(tmp_path: Path) -> None:
    s = Scenario()
    s.labels = {"kueue.x-k8s.io/queue-name": "team-a-queue"}
    s.tj_conditions = [resumed_condition(30)]
    s.workload = {
        "apiVersion": "kueue.x-k8s.io/v1beta1",
        "kind": "Workload",
        "metadata": {
            "name": "trainjob-sft-resumable-3f2a1",
            "namespace": "team-a",
            "ownerReferences": [
                {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob", "name": "sft-resumable"}
            ],
        },
        "status": {
            "conditions": [
                {
                    "type": "Preempted",
                    "status": "True",
                    "reason": "InCohortReclamation",
                    "message": "Preempted to accommodate a workload",
                    "lastTransitionTime": ts(20),
                },
                {"type": "Requeued", "status": "True", "reason": "Preempted", "lastTransitionTime": ts(21)},
            ]
        },
    }
    s.attempts = [Attempt(0, "gpu-node-b", convention_log(CK, 0, 90, resumed=False), started=31)]
    diag = diagnose(s, tmp_path)
    fresh = next(f for f in diag.findings if f.rule.id == "fresh-start-after-restart")
    assert fresh.status == "fail"
    assert any(e.get("conditionType") == "Preempted" for e in fresh.result.evidence)


def test_specific_cause_silences_the_catch_all(tmp_path: Path) -> None:
    s = emptydir_fresh_start()
    s.attempts[0].kept = True  # the earlier attempt's saves are visible
    diag = diagnose(s, tmp_path)
    catch_all = next(f for f in diag.findings if f.rule.id == "ckpt-autodetect-found-nothing")
    assert catch_all.status == "pass"
    assert catch_all.result.reason == "explained by the more specific cause ckpt-dir-not-persistent"
    assert statuses(diag, "ckpt-dir-not-persistent") == {"fail"}


def test_loading_base_weights_at_iteration_zero_is_a_fresh_start(tmp_path: Path) -> None:
    from tests.stories import megatron_finetune

    diag = diagnose(megatron_finetune(), tmp_path)
    assert statuses(diag, "fresh-start-after-restart") == {"fail"}
    assert statuses(diag, "resumed-older-checkpoint") == {"pass"}


def test_a_half_written_save_is_not_a_saved_step(tmp_path: Path) -> None:
    """HF logs 'Saving …' before writing; killed right after it, that save does not count."""
    from tests.scenario import hf_log

    s = Scenario()
    s.tj_conditions = [resumed_condition(60)]
    first = hf_log(CK, 0, 300, save_every=100).rstrip("\n").rsplit("\n", 1)[0] + "\n"  # ends with 'Saving …300'
    s.attempts = [
        Attempt(0, "gpu-node-a", first, phase="Failed", exit_code=137, started=0),
        Attempt(0, "gpu-node-a", hf_log(CK, 200, 320, save_every=100, resume_from=200), started=61),
    ]
    diag = diagnose(s, tmp_path)
    assert statuses(diag, "resumed-older-checkpoint") == {"pass"}


@pytest.mark.parametrize(
    ("extra", "meta", "flag", "want"),
    [
        ({}, {"trainerVersion": "v2.1.0"}, None, ("v2.1", "bundle")),
        ({}, None, "v2.0.1", ("v2.0", "flag")),
        ({"podTemplateOverrides": []}, None, None, ("v2.1", "inferred")),
        ({"podSpecOverrides": []}, None, None, ("v2.0", "inferred")),
        ({"runtimePatches": []}, None, None, ("v2.2", "inferred")),
        ({}, None, None, ("v2.3", "assumed")),
    ],
)
def test_trainer_version(tmp_path: Path, extra, meta, flag, want) -> None:
    s = healthy_resume()
    s.trainjob_spec_extra = extra
    s.bundle_meta = meta
    with open_bundle(s.write(tmp_path / "b")) as snap:
        v = trainer_version(build_scope(snap, pick_trainjob(snap, None)), flag)
    assert (v.version, v.source) == want


def test_a_flag_the_bundle_overrules_is_said_not_used(tmp_path: Path) -> None:
    s = healthy_resume()
    s.bundle_meta = {"trainerVersion": "v2.1.0"}
    with open_bundle(s.write(tmp_path / "b")) as snap:
        scope = build_scope(snap, pick_trainjob(snap, None))
        v = trainer_version(scope, "v2.2")
        same = trainer_version(scope, "v2.1")
    assert (v.version, v.source) == ("v2.1", "bundle") and "--trainer-version v2.2 not used" in v.why
    assert "not used" not in same.why


def test_runtime_snapshot_configmap_is_the_runtime_used(tmp_path: Path) -> None:
    """v2.3 reads <trainjob>-runtime-snapshot; later edits of the runtime object do not count."""
    import yaml

    s = healthy_resume()
    s.bundle_meta = None
    good_runtime = s.runtime()
    s.ancestor_label = False  # the live TrainingRuntime was edited afterwards and lost its label

    def post(objs):
        objs.append(
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": "sft-resumable-runtime-snapshot", "namespace": "team-a"},
                "data": {"runtime": yaml.safe_dump(good_runtime)},
            }
        )

    s.post = post
    diag = diagnose(s, tmp_path)
    assert diag.facts.version.version == "v2.3"
    assert diag.facts.scope.runtime_source == "runtime-snapshot"
    assert statuses(diag, "missing-ancestor-label") == {"pass"}


def test_a_save_the_next_attempt_skipped_as_incomplete_is_not_a_saved_step(tmp_path: Path) -> None:
    """contracts.md §6: a save that died half-way does not count, even with a completion line, when the
    program's own next start says it skipped that checkpoint as incomplete."""
    from tests.scenario import convention_log
    from tests.stories import CK, _restart

    s = Scenario()
    first = convention_log(CK, 0, 320, crash="Killed")
    second = f"[checkpoint] skipping incomplete checkpoint {CK}/checkpoint-300\n" + convention_log(CK, 250, 400)
    _restart(s, first, second)
    with open_bundle(s.write(tmp_path / "b")) as snap:
        diag = diagnose_snapshot(snap)
    by = {f.rule.id: f for f in diag.findings}
    runs = diag.facts.history.runs
    first_run = next(r for r in runs if r.attempt == 0)
    assert 300 not in [e.step for e in first_run.saves()] and 250 in [e.step for e in first_run.saves()]
    assert by["resumed-older-checkpoint"].status == "pass", by["resumed-older-checkpoint"].result
    assert by["lexical-checkpoint-sort"].status != "fail"
