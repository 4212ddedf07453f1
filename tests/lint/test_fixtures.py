"""Realistic manifests: the checkpoint-aware sets lint clean, every broken variant names its rule at its line."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from ckpt_doctor.engine.catalogue import default_rules
from ckpt_doctor.facts.context import NEEDS_CLUSTER
from ckpt_doctor.lint import lint_paths
from tests.lint.conftest import FIXTURES, GOOD, HERE, VARIANTS, Variant, findings_schema, variant

INFERRED = {"v2.0": "v2.0", "v2.1": "v2.1", "v2.3": "v2.3"}
# causes a manifest cannot show: they need pods, events or the bound PV (lint lists them not_evaluated)
CLUSTER_ONLY_CAUSES = {"node-pinned-storage", "pvc-unbound"}


@pytest.mark.parametrize("version", GOOD)
def test_checkpoint_aware_set_lints_clean(version: str, cli) -> None:
    rc, out, _err = cli("lint", str(FIXTURES / version / "good"), "-o", "json", "--fail-on", "error")
    assert rc == 0, out
    doc = json.loads(out)
    jsonschema.validate(doc, findings_schema())
    assert doc["mode"] == "lint" and doc["target"] is None
    assert doc["trainerVersion"] == INFERRED[version] and doc["trainerVersionSource"] == "inferred"
    assert [f for f in doc["findings"] if f["status"] == "fail"] == []
    assert doc["summary"]["pass"] >= 19
    # on a PVC; whether its class is node-local needs the StorageClass, which a set of manifests may lack
    ckpt = next(f for f in doc["findings"] if f["rule"] == "ckpt-dir-not-persistent")
    assert ckpt["status"] == "pass" or "StorageClass" in ckpt["reason"], ckpt
    # every finding names the file and line it is about
    for f in doc["findings"]:
        assert f["subject"]["file"].startswith(str(FIXTURES / version / "good")), f
        assert f["subject"]["line"] >= 1, f
    symptoms = [f for f in doc["findings"] if f["kind"] == "symptom"]
    assert symptoms and all(f["status"] == "not_evaluated" and f["reason"] == NEEDS_CLUSTER for f in symptoms)
    # strict: the symptoms were not evaluated
    assert cli("lint", str(FIXTURES / version / "good"), "--strict")[0] == 4


@pytest.mark.parametrize("variant", VARIANTS, ids=lambda v: v.id)
def test_variant_names_rule_at_file_and_line(variant: Variant, tmp_path: Path) -> None:
    root = variant.materialize(tmp_path)
    result = lint_paths([str(root)], variant.version_flag)
    got = sorted((f.rule.id, Path(f.result.subject["file"]).name, f.result.subject["line"]) for f in result.failed())
    want = sorted((e.rule, e.file, e.line) for e in variant.expected(root))
    assert got == want, [(f.rule.id, f.result.detail) for f in result.failed()]
    for f in result.failed():
        assert f.result.evidence and any(ev["type"] == "file" for ev in f.result.evidence)
        assert f.result.confidence in ("high", "medium", "low")
    jsonschema.validate(result.diagnosis.to_json(), findings_schema())
    expected_rc = 1 if want else 0
    assert result.exit_code("info") == expected_rc


def test_every_manifest_cause_has_a_failing_variant() -> None:
    lint_causes = {r.id for r in default_rules() if r.kind == "cause" and "lint" in r.modes}
    covered = {e["rule"] for v in VARIANTS for e in v.expect_raw}
    assert lint_causes - CLUSTER_ONLY_CAUSES <= covered, sorted(lint_causes - CLUSTER_ONLY_CAUSES - covered)


def test_framework_good_variants_are_clean() -> None:
    good = [v for v in VARIANTS if v.id.startswith("frameworks/") and not v.expect_raw]
    assert {v.name for v in good} >= {"llamafactory-good", "megatron-good", "training-hub-good"}


def test_cluster_only_causes_are_not_evaluated_in_lint(tmp_path: Path) -> None:
    result = lint_paths([str(FIXTURES / "v2.1" / "good")])
    by_rule = {f.rule.id: f for f in result.diagnosis.findings}
    for rid in (
        "trainer-edited-while-running",
        "rwo-still-attached",
        "partial-latest-checkpoint",
        *sorted(CLUSTER_ONLY_CAUSES),
    ):
        assert by_rule[rid].status == "not_evaluated" and by_rule[rid].result.reason == NEEDS_CLUSTER, rid


def test_a_claim_the_jobset_creates_is_not_judged_bound_in_lint() -> None:
    """A JobSet volumeClaimPolicies claim does not exist until the JobSet creates it, and no manifest
    shows a binding: pvc-unbound needs the cluster (issue 22)."""
    result = lint_paths([str(HERE / "upstream" / "runtimes" / "torchtune-llama3.2-1b.yaml")])
    (f,) = [f for f in result.diagnosis.findings if f.rule.id == "pvc-unbound"]
    assert f.status == "not_evaluated" and f.result.reason == NEEDS_CLUSTER


def test_heuristic_findings_state_their_confidence(tmp_path: Path) -> None:
    v = variant("v2.1/no-save-total-limit")
    result = lint_paths([str(v.materialize(tmp_path))])
    (f,) = result.failed()
    assert f.rule.id == "save-total-limit-unset" and f.result.confidence == "medium"
    assert f.to_json()["confidence"] == "medium"


def test_merge_follows_the_controller_per_version(tmp_path: Path) -> None:
    """The PVC comes from each version's override field, CKPT_DIR from spec.trainer.env."""
    for version, claim in (("v2.0", "llama-ckpt"), ("v2.1", "sft-checkpoints"), ("v2.3", "qwen-sft-ckpt")):
        result = lint_paths([str(FIXTURES / version / "good")])
        (unit,) = [u for u in result.units if u.facts.scope.trainjob is not None]
        cd = unit.facts.ckpt_dir
        assert cd is not None and cd.source == "env CKPT_DIR" and cd.claim == claim, version
        assert cd.persistent
    # v2.3: runtimePatches may set terminationGracePeriodSeconds, and it wins over the runtime's 90 s
    result = lint_paths([str(FIXTURES / "v2.3" / "good")])
    (unit,) = [u for u in result.units if u.facts.scope.trainjob is not None]
    assert unit.facts.spec.pod_spec["terminationGracePeriodSeconds"] == 180


def test_without_the_ancestor_label_spec_trainer_env_does_not_land(tmp_path: Path) -> None:
    v = variant("v2.1/ancestor-label-on-pod-template")
    result = lint_paths([str(v.materialize(tmp_path))])
    (unit,) = [u for u in result.units if u.facts.scope.trainjob is not None]
    assert "CKPT_DIR" not in unit.facts.spec.env()  # the controller drops it: nothing to judge a directory by
    ckpt = next(f for f in result.diagnosis.findings if f.rule.id == "ckpt-dir-not-persistent")
    assert ckpt.status == "not_evaluated"
