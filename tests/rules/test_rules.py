"""Every rule fails on its failing fixtures and passes on its passing ones."""

from __future__ import annotations

from pathlib import Path

import pytest

from ckpt_doctor.engine.catalogue import default_rules
from ckpt_doctor.pipeline import diagnose_snapshot
from ckpt_doctor.sources.bundle import open_bundle
from tests.rules.cases import ALL_RULES_PASS, CASES, Case

CONTRACT_IDS = {
    "fresh-start-after-restart",
    "resumed-older-checkpoint",
    "overrides-not-applied",
    "volume-attach-blocked",
    "checkpoint-disk-full",
    "final-checkpoint-missing",
    "job-failed-without-restart",
    "restarts-exhausted",
    "resume-crashed",
    "trainjob-rejected",
    "ckpt-dir-not-persistent",
    "ckpt-dir-changed",
    "ckpt-autodetect-found-nothing",
    "lexical-checkpoint-sort",
    "missing-ancestor-label",
    "trainer-container-not-node",
    "env-in-pod-template-overrides",
    "override-field-unsupported",
    "trainer-edited-while-running",
    "weights-only-checkpoint",
    "rwo-multi-node",
    "rwo-still-attached",
    "node-pinned-storage",
    "pvc-unbound",
    "save-total-limit-unset",
    "grace-period-too-short",
    "sigterm-not-forwarded",
    "resume-true-hardcoded",
    "llamafactory-overwrite-output-dir",
    "megatron-resume-disabled",
    "training-hub-weights-only",
    "partial-latest-checkpoint",
    "no-failure-policy",
    "no-checkpoint-before-interruption",
}


def diagnose_case(case: Case, tmp_path: Path):
    bundle = case.build().write(tmp_path / "bundle")
    with open_bundle(bundle) as snap:
        return diagnose_snapshot(snap)


def test_contract_rule_ids_exist() -> None:
    ids = {r.id for r in default_rules()}
    assert ids >= CONTRACT_IDS, sorted(CONTRACT_IDS - ids)


def test_every_rule_has_failing_and_passing_fixture() -> None:
    missing = []
    for rule in default_rules():
        statuses = {c.expect for c in CASES if c.rule == rule.id}
        if "fail" not in statuses:
            missing.append(f"{rule.id}: no failing fixture")
        # the healthy story is a passing fixture for every rule (asserted in test_healthy_passes_everything)
    assert not missing, missing


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c.rule}-{c.expect}-{c.name}")
def test_case(case: Case, tmp_path: Path) -> None:
    diag = diagnose_case(case, tmp_path)
    got = [f for f in diag.findings if f.rule.id == case.rule]
    assert got, f"rule {case.rule} produced no finding"
    statuses = {f.status for f in got}
    if case.expect == "fail":
        assert "fail" in statuses, [(f.status, f.result.reason) for f in got]
        for f in got:
            if f.status == "fail":
                assert f.result.evidence, "a failed finding carries evidence"
    elif case.expect == "pass":
        assert statuses == {"pass"}, [(f.status, f.result.detail or f.result.reason) for f in got]
    else:
        assert statuses == {"not_evaluated"}, [(f.status, f.result.detail or f.result.reason) for f in got]
        assert all(f.result.reason for f in got)


def test_healthy_passes_everything(tmp_path: Path) -> None:
    diag = diagnose_case(ALL_RULES_PASS, tmp_path)
    bad = [(f.rule.id, f.status, f.result.detail or f.result.reason) for f in diag.findings if f.status != "pass"]
    assert not bad
    assert {f.rule.id for f in diag.findings} == {r.id for r in default_rules()}


def test_a_missing_megatron_load_flag_is_placed_in_its_object(tmp_path: Path) -> None:
    """An absence says where it is missing as OBJECT PATH, so lint and the app can point at it."""
    case = next(c for c in CASES if c.rule == "megatron-resume-disabled" and c.expect == "fail")
    diag = diagnose_case(case, tmp_path)
    (f,) = [f for f in diag.findings if f.rule.id == "megatron-resume-disabled"]
    absent = [e for e in f.result.evidence if e["type"] == "absence"]
    assert [e["what"] for e in absent] == ["--load"]
    obj, _, path = absent[0]["where"].partition(" ")
    assert obj.startswith("Pod/team-a/") and path.startswith("spec.containers[name=node]"), absent[0]["where"]


def test_override_differences_cite_fields_that_exist(tmp_path: Path) -> None:
    """Each side of a spec.trainer / pod difference is a real field path, so the app and lint can open it."""
    from ckpt_doctor.tui.yamltext import resolve

    root = Path(__file__).resolve().parents[2]
    with open_bundle(root / "examples" / "missing-ancestor-label") as snap:
        diag = diagnose_snapshot(snap)
        objects = {o.ref(): o.raw for o in snap.objects}
    evidence = [e for f in diag.findings if f.rule.id == "overrides-not-applied" for e in f.result.evidence]
    paths = {(e["object"].split("/")[0], e["path"]) for e in evidence}
    assert ("TrainJob", "spec.trainer.env[name=CKPT_DIR]") in paths
    assert ("Pod", "spec.containers[name=node].resources") in paths
    for e in evidence:
        assert resolve(objects[e["object"]], e["path"])[1], (e["object"], e["path"])


def test_node_pinned_storage_cites_the_field_that_pins_it(tmp_path: Path) -> None:
    from ckpt_doctor.tui.yamltext import resolve

    case = next(c for c in CASES if c.rule == "node-pinned-storage" and c.expect == "fail")
    root = case.build().write(tmp_path / "b")
    with open_bundle(root) as snap:
        diag = diagnose_snapshot(snap)
        objects = {o.ref(): o.raw for o in snap.objects}
    (f,) = [f for f in diag.findings if f.rule.id == "node-pinned-storage"]
    first = f.result.evidence[0]
    assert first["type"] == "field" and first["object"].startswith("PersistentVolume/")
    assert first["path"] == "spec.local"
    assert resolve(objects[first["object"]], first["path"])[1]


def test_lexical_sort_cites_the_newer_save_beside_the_older_resume() -> None:
    root = Path(__file__).resolve().parents[2]
    with open_bundle(root / "examples" / "lexical-sort-older") as snap:
        diag = diagnose_snapshot(snap)
    (f,) = [f for f in diag.findings if f.rule.id == "lexical-checkpoint-sort"]
    assert f.status == "fail"
    logs = [e for e in f.result.evidence if e["type"] == "log"]
    assert len(logs) == 2, f.result.evidence
    newest = (f.result.detail or "").split("although ")[1].split(" existed")[0]  # checkpoint-N
    assert newest in logs[0]["text"] and "resum" in logs[1]["text"].lower(), logs
