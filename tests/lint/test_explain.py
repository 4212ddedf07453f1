"""`explain-error`: every webhook denial of trainer-api.md §5 (all versions), strict decoding and a
missing runtime map to a rule, with cause and fix; unknown text says so and suggests lint."""

from __future__ import annotations

import json
import re

import jsonschema
import pytest

from ckpt_doctor.explain import PATTERNS, explain
from tests.lint.conftest import REPO, findings_schema

TJ = 'admission webhook "validator.trainjob.trainer.kubeflow.org" denied the request: '
TR = 'admission webhook "validator.trainingruntime.trainer.kubeflow.org" denied the request: '
CTR = 'admission webhook "validator.clustertrainingruntime.trainer.kubeflow.org" denied the request: '
KUBECTL = 'Error from server (Forbidden): error when creating "trainjob.yaml": '
ENV = "must not have envs for the dataset-initializer, model-initializer, node containers"
R = "trainjob-rejected"

# (id, error text as kubectl prints it, rules that must fail)
DENIALS = [
    # §5.1 TrainJob webhook, every version's field path
    (
        "env-v2.2",
        f'{KUBECTL}{TJ}spec.runtimePatches: Invalid value: "...": {ENV}',
        {R, "env-in-pod-template-overrides"},
    ),
    (
        "env-v2.1",
        f'{KUBECTL}{TJ}spec.podTemplateOverrides: Invalid value: "...": {ENV}',
        {R, "env-in-pod-template-overrides"},
    ),
    (
        "env-v2.0",
        f"{KUBECTL}{TJ}spec.podSpecOverrides: Invalid value: []v1alpha1.PodSpecOverride{{...}}: {ENV}",
        {R, "env-in-pod-template-overrides"},
    ),
    (
        "replicated-job",
        f'{TJ}spec.runtimePatches: Invalid value: "...": must not have replicated job that doesn\'t '
        "exist in the runtime job template",
        {R},
    ),
    (
        "target-job-v2.1",
        f'{TJ}spec.podTemplateOverrides: Invalid value: "...": must not have targetJob that doesn\'t '
        "exist in the runtime job template",
        {R},
    ),
    (
        "target-job-v2.0",
        f'{TJ}spec.podSpecOverrides: Invalid value: "...": must not have targetJob that doesn\'t '
        "exist in the runtime job template",
        {R},
    ),
    (
        "init-container",
        f'{TJ}spec.podTemplateOverrides: Invalid value: "...": must not have initContainer that '
        "doesn't exist in the runtime job node",
        {R},
    ),
    (
        "container",
        f'{TJ}spec.runtimePatches: Invalid value: "...": must not have container that doesn\'t exist in the '
        "runtime job node",
        {R},
    ),
    ("duplicate", f'{TJ}spec.podSpecOverrides[1].targetJobs[0].name: Duplicate value: "node"', {R}),
    (
        "manager",
        f'{TJ}spec.runtimePatches[0].manager: Invalid value: "checkpoints": must be a domain-prefixed path '
        '(such as "acme.io/foo")',
        {R},
    ),
    (
        "suspended-v2.2",
        f"{TJ}spec.runtimePatches: Forbidden: RuntimePatches can only be modified when the TrainJob is suspended",
        {R},
    ),
    (
        "suspended-v2.3",
        f"{TJ}spec.runtimePatches: Forbidden: RuntimePatches can only be modified when the TrainJob is "
        "suspended before or after the update",
        {R},
    ),
    (
        "active-v2.2",
        f"{TJ}spec.runtimePatches: Forbidden: RuntimePatches cannot be modified when the JobSet's "
        "ReplicatedJob node is still active",
        {R},
    ),
    (
        "suspended-v2.1",
        f"{TJ}spec.podTemplateOverrides: Forbidden: PodTemplateOverrides can only be modified when the "
        "TrainJob is suspended",
        {R},
    ),
    (
        "active-v2.1",
        f"{TJ}spec.podTemplateOverrides: Forbidden: PodTemplateOverrides cannot be modified when the "
        "JobSet's ReplicatedJob node is still active",
        {R},
    ),
    (
        "suspended-v2.0",
        f"{TJ}spec.podSpecOverrides: Forbidden: PodSpecOverrides can only be modified when the TrainJob is suspended",
        {R},
    ),
    (
        "active-v2.0",
        f"{TJ}spec.podSpecOverrides: Forbidden: PodSpecOverrides cannot be modified when the JobSet's "
        "ReplicatedJob node is still active",
        {R},
    ),
    (
        "dataset-job",
        f'{TJ}spec.runtimeRef: Invalid value: "...": must have dataset-initializer job when trainJob is '
        "configured with input datasetConfig",
        {R},
    ),
    (
        "model-job",
        f'{TJ}spec.runtimeRef: Invalid value: "...": must have model-initializer job when trainJob is '
        "configured with input modelConfig",
        {R},
    ),
    (
        "dataset-container",
        f'{TJ}spec.runtimeRef: Invalid value: "...": must have container with name - '
        "dataset-initializer in the dataset-initializer job",
        {R},
    ),
    (
        "model-container",
        f'{TJ}spec.runtimeRef: Invalid value: "...": must have container with name - '
        "model-initializer in the model-initializer job",
        {R},
    ),
    (
        "dataset-mount",
        f'{TJ}spec.runtimeRef: Invalid value: "...": must have volumeMount with name - initializer in '
        "container dataset-initializer of the dataset-initializer job",
        {R},
    ),
    (
        "model-mount",
        f'{TJ}spec.runtimeRef: Invalid value: "...": must have volumeMount with name - initializer in '
        "container model-initializer of the model-initializer job",
        {R},
    ),
    (
        "missing-runtime",
        f'{KUBECTL}{TJ}spec.runtimeRef: Invalid value: "sft-checkpoint-runtime": '
        'TrainingRuntime.trainer.kubeflow.org "sft-checkpoint-runtime" not found: specified trainingRuntime must be '
        "created before the TrainJob is created",
        {R, "runtime-ref-unresolved"},
    ),
    (
        "missing-cluster-runtime",
        f'{KUBECTL}{TJ}spec.RuntimeRef: Invalid value: "torch-custom": '
        'ClusterTrainingRuntime.trainer.kubeflow.org "torch-custom" not found: '
        "specified clusterTrainingRuntime must be created before the TrainJob is created",
        {R, "runtime-ref-unresolved"},
    ),
    ("unsupported-runtime", f"{TJ}unsupported runtime: FooRuntime.example.com", {R, "runtime-ref-unresolved"}),
    (
        "reserved-torch",
        f'{TJ}spec.trainer.env: Invalid value: "...": must not have reserved envs, invalid envs '
        "configured: [PET_NNODES PET_NODE_RANK]",
        {R},
    ),
    (
        "reserved-mpi",
        f'{TJ}spec.trainer.env: Invalid value: "...": must not have reserved envs, invalid envs '
        "configured: [OMPI_MCA_orte_default_hostfile]",
        {R},
    ),
    (
        "num-proc",
        f'{TJ}spec.trainer.numProcPerNode: Invalid value: "many": must have an int value or [auto cpu gpu]',
        {R},
    ),
    (
        "mpi-nodes",
        f"{TJ}spec.trainer.numNodes: Invalid value: 2: must have 1 when MPI trainingRuntime with enabled "
        "runLauncherAsNode does not have either launcher and node",
        {R},
    ),
    (
        "env-injection",
        f'{TJ}spec.runtimeRef: Invalid value: "...": envInjection target podSet "launcher" container '
        '"sidecar" not found in runtime template',
        {R},
    ),
    *[
        (
            f"torchtune-{k}",
            f'{TJ}spec.trainer.args[3]: Invalid value: "{k}=/tmp/x": must not set immutable config '
            f'"{k}" in trainer args; it is managed by the runtime',
            {R},
        )
        for k in ("output_dir", "tokenizer.path", "checkpointer.checkpoint_dir", "tokenizer.merges_file")
    ],
    (
        "torchtune-model",
        f'{TJ}spec.runtimeRef.name: Invalid value: "torchtune-x": must have a supported pretrained '
        "model, invalid model configured: llama3_3_70b",
        {R},
    ),
    ("torchtune-nodes", f"{TJ}spec.trainer.numNodes: Invalid value: 2: must be 1 for llama3_2/1B model", {R}),
    (
        "torchtune-lora",
        f"{TJ}spec.trainer.numNodes: Invalid value: 2: LoRA fine-tuning is not supported for multi-node "
        "training in TorchTune",
        {R},
    ),
    (
        "immutable-trainer",
        'The TrainJob "sft-run-1" is invalid: spec.trainer: Invalid value: "object": field is immutable',
        {R},
    ),
    (
        "immutable-v2.1",
        'The TrainJob "sft-run-1" is invalid: spec.runtimeRef: Invalid value: "object": runtimeRef is immutable',
        {R},
    ),
    (
        "name-format",
        'The TrainJob "SFT_run" is invalid: <nil>: Invalid value: "object": metadata.name must match RFC '
        "1035 DNS label format",
        {R},
    ),
    (
        "managed-by",
        'The TrainJob "x" is invalid: spec.managedBy: Invalid value: "string": ManagedBy must be '
        "trainer.kubeflow.org/trainjob-controller or kueue.x-k8s.io/multikueue if set",
        {R},
    ),
    (
        "storage-uri",
        'The TrainJob "x" is invalid: spec.initializer.model.storageUri: Invalid value: "string": '
        "storageUri may be empty, or it must be a valid URI (scheme://...)",
        {R},
    ),
    # §5.2 runtime webhooks
    ("replicas", f"{TR}spec.template.spec.replicatedJobs[0].replicas: Invalid value: 2: always must be 1", {R}),
    (
        "required-container-trainer",
        f"{CTR}spec.template.spec.replicatedJobs[1].template.spec.template.spec.containers: "
        "Invalid value: ...: must contain the required container for the ancestor: trainer",
        {R, "trainer-container-not-node"},
    ),
    (
        "required-container-dataset",
        f"{TR}spec.template.spec.replicatedJobs[0].template.spec.template.spec.containers: "
        "Invalid value: ...: must contain the required container for the ancestor: dataset-initializer",
        {R},
    ),
    ("ml-policy", f'{TR}spec.mlPolicy: Invalid value: "object": Only one of the policy can be configured', {R}),
    ("mpi-proc", f'{CTR}spec.mlPolicy.mpi: Invalid value: "object": NumProcPerNode in mpiPolicy must be >= 1', {R}),
    (
        "env-injection-node",
        f'{TR}spec.mlPolicy.torch.envInjection: Invalid value: "object": containerNames must not '
        "include the main node container because PET_* envs are always injected into it",
        {R},
    ),
    # strict decoding: a field of another Trainer version
    (
        "unknown-pto",
        'Error from server (BadRequest): error when creating "trainjob.yaml": TrainJob in version '
        '"v1alpha1" cannot be handled as a TrainJob: strict decoding error: unknown field "spec.podTemplateOverrides"',
        {R, "override-field-unsupported"},
    ),
    (
        "unknown-rtp",
        'Error from server (BadRequest): error when creating "trainjob.yaml": TrainJob in version '
        '"v1alpha1" cannot be handled as a TrainJob: strict decoding error: unknown field "spec.runtimePatches", '
        'unknown field "spec.activeDeadlineSeconds"',
        {R, "override-field-unsupported"},
    ),
    (
        "ssa-not-declared",
        "Error from server: failed to create typed patch object (team-a/sft-run-1; "
        "trainer.kubeflow.org/v1alpha1, Kind=TrainJob): .spec.podSpecOverrides: field not declared in schema",
        {R, "override-field-unsupported"},
    ),
    (
        "client-validation",
        'error: error validating "trainjob.yaml": error validating data: ValidationError'
        '(TrainJob.spec): unknown field "podTemplateOverrides" in org.kubeflow.trainer.v1alpha1.TrainJob.spec',
        {R, "override-field-unsupported"},
    ),
    (
        "unknown-typo",
        'Error from server (BadRequest): error when creating "trainjob.yaml": TrainJob in version '
        '"v1alpha1" cannot be handled as a TrainJob: strict decoding error: unknown field "spec.trainer.envs"',
        {R},
    ),
    # the controller could not find the runtime (event TrainJobResourcesCreationFailed)
    (
        "controller-runtime",
        "TrainJob resources reconciliation failed: TrainingRuntime specified in TrainJob is not "
        'found: trainingruntimes.trainer.kubeflow.org "sft" not found',
        {R, "runtime-ref-unresolved"},
    ),
    (
        "no-crd",
        'error: resource mapping not found for name: "sft-run-1" namespace: "" from "trainjob.yaml": no matches '
        'for kind "TrainJob" in version "trainer.kubeflow.org/v1alpha1"',
        {R},
    ),
    (
        "webhook-down",
        'Internal error occurred: failed calling webhook "validator.trainjob.trainer.kubeflow.org": '
        'Post "https://kubeflow-trainer-controller-manager.kubeflow-system.svc:443/validate-trainer-kubeflow-org-v1alpha1-'
        'trainjob?timeout=10s": dial tcp 10.96.1.1:443: connect: connection refused',
        {R},
    ),
]


@pytest.mark.parametrize("text,rules", [(t, r) for _i, t, r in DENIALS], ids=[i for i, _t, _r in DENIALS])
def test_denial_maps_to_rules(text: str, rules: set[str]) -> None:
    ex = explain(text)
    assert ex.recognised and ex.exit_code() == 0
    failed = {f.rule.id for f in ex.diagnosis.failed()}
    assert failed == rules
    assert all(f.status == "fail" for f in ex.diagnosis.findings)
    for f in ex.diagnosis.findings:
        assert any(ev["type"] == "text" and ev["text"] for ev in f.result.evidence)
        assert f.result.fix and f.result.detail
    doc = ex.to_json()
    jsonschema.validate(doc, findings_schema())
    assert doc["mode"] == "explain-error" and doc["target"] is None and doc["recognised"] is True


def _section(md: str, start: str, end: str) -> str:
    return md[md.index(start) : md.index(end)]


def _doc_denials() -> list[str]:
    """Every quoted message of trainer-api.md §5.1 and §5.2, placeholders filled in."""
    md = (REPO.parent / "shared" / "knowledge" / "trainer-api.md").read_text()
    fill = {
        "<rjob>": "node",
        "<targetJob>": "node",
        "<name>": "node",
        "<Kind.group>": "FooRuntime.example.com",
        "<names>": "PET_NNODES",
        "<job>": "launcher",
        "<c>": "sidecar",
        "<key>": "output_dir",
        "<m>": "llama3_3_70b",
        "<n>": "2",
        "<ancestor>": "trainer",
        "<path>": "spec.trainer",
        "<err>": 'TrainingRuntime.trainer.kubeflow.org "x" not found',
    }
    out = []
    for part in (_section(md, "### 5.1", "### 5.2"), _section(md, "### 5.2", "## 6.")):
        for s in re.findall(r"`([^`]+)`", part):
            if not re.search(r"[a-z]{3,} [a-z]{2,}", s) or s.startswith(("pkg/", "plugins/")):
                continue  # identifiers, file names, label keys: not messages
            for k, v in fill.items():
                s = s.replace(k, v)
            out.append(s)
    return out


@pytest.mark.skipif(not (REPO.parent / "shared" / "knowledge" / "trainer-api.md").exists(), reason="no shared/")
def test_every_message_of_the_fact_sheet_is_recognised() -> None:
    messages = _doc_denials()
    assert len(messages) >= 30
    for msg in messages:
        ex = explain(TJ + 'spec.runtimePatches: Invalid value: "...": ' + msg if ":" not in msg[:40] else TJ + msg)
        assert ex.matches, f"no pattern for: {msg}"
        assert ex.recognised, msg
        if all(m.pattern.rejection for m in ex.matches):
            assert R in {f.rule.id for f in ex.diagnosis.failed()}, msg


def test_deprecation_warning_is_not_a_rejection() -> None:
    ex = explain(
        'Warning: ClusterTrainingRuntime "torchtune-llama3.2-1b" is deprecated and will be removed in a future release '
        "of Kubeflow Trainer. See runtime deprecation policy: https://trainer.kubeflow.org/en/latest/operator-guides/"
        "runtime.html#runtime-deprecation-policy\ntrainjob.trainer.kubeflow.org/tune created"
    )
    assert ex.recognised and ex.exit_code() == 0 and ex.diagnosis.failed() == []
    assert ex.to_json()["warnings"]


def test_version_hints() -> None:
    assert "v2.1" in explain(DENIALS[1][1]).version_hint
    assert "not Trainer v2.1" in explain(DENIALS[-8][1]).version_hint


@pytest.mark.parametrize(
    "text",
    [
        'The Pod "x" is invalid: spec.containers[0].image: Required value',
        "error: You must be logged in to the server (Unauthorized)",
        "Segmentation fault (core dumped)",
    ],
)
def test_unrecognised_exit_1_and_suggest_lint(text: str, cli) -> None:
    rc, out, _err = cli("explain-error", text)
    assert rc == 1 and "ckpt-doctor lint" in out
    rc, out, _err = cli("explain-error", "-o", "json", text)
    doc = json.loads(out)
    jsonschema.validate(doc, findings_schema())
    assert rc == 1 and doc["recognised"] is False and doc["findings"] == [] and "lint" in doc["suggestion"]


def test_cli_text_stdin_and_json(cli, monkeypatch) -> None:
    import io

    text = DENIALS[1][1]
    rc, out, _err = cli("explain-error", text)
    assert rc == 0
    assert "env-in-pod-template-overrides" in out and "spec.trainer.env" in out and "cause:" in out
    monkeypatch.setattr("sys.stdin", io.StringIO(text + "\n"))
    rc, out, _err = cli("explain-error", "-", "-o", "json")
    doc = json.loads(out)
    assert rc == 0 and {f["rule"] for f in doc["findings"]} == {R, "env-in-pod-template-overrides"}
    assert all(f["status"] == "fail" for f in doc["findings"])
    monkeypatch.setattr("sys.stdin", io.StringIO("   \n"))
    assert cli("explain-error", "-")[0] == 2  # no text: a usage error


def test_every_pattern_is_exercised() -> None:
    used = set()
    for _i, text, _r in DENIALS:
        used |= {m.pattern.id for m in explain(text).matches}
    used |= {m.pattern.id for m in explain('ClusterTrainingRuntime "x" is deprecated and will be removed').matches}
    assert used == {p.id for p in PATTERNS}, {p.id for p in PATTERNS} - used


@pytest.mark.parametrize("text,rules", [(t, r) for _i, t, r in DENIALS], ids=[i for i, _t, _r in DENIALS])
def test_every_format_shows_the_denial_as_a_verdict(text: str, rules: set[str], cli) -> None:
    """The rejection is the symptom, the causes the text shows explain it: in JSON as in markdown, as for
    any diagnosis (before, the verdict was empty and markdown showed the causes alone, or nothing)."""
    from ckpt_doctor.engine.catalogue import default_rules

    kinds = {r.id: r.kind for r in default_rules()}
    rc, out, _err = cli("explain-error", "-o", "json", text)
    doc = json.loads(out)
    jsonschema.validate(doc, findings_schema())
    symptoms = {v["symptom"] for v in doc["verdict"]}
    assert symptoms == {r for r in rules if kinds[r] == "symptom"}
    explained = {c for v in doc["verdict"] for c in v["causes"]} | set(doc["latent"])
    assert explained == {r for r in rules if kinds[r] == "cause"}
    rc, md, _err = cli("explain-error", "-o", "markdown", text)
    assert rc == 0 and md.startswith("# ckpt-doctor: the error text")
    for rid in rules:
        assert f"`{rid}`" in md, rid
    if doc["trainerVersion"] is None:  # the text does not tell: no version is claimed
        assert "does not show the Trainer version" in md and "assuming" not in md
    else:
        assert doc["trainerVersionSource"] == "inferred" and "Trainer v2." in md


def test_the_version_the_text_shows_is_the_document_s() -> None:
    doc = explain(TJ + "spec.podTemplateOverrides: Invalid value: \"array\": " + ENV).to_json()
    assert (doc["trainerVersion"], doc["trainerVersionSource"]) == ("v2.1", "inferred")
    unknown = explain('Error from server (BadRequest): strict decoding error: unknown field "spec.runtimePatches"')
    v = unknown.diagnosis.facts.version
    assert v.source == "inferred" and v.candidates == ("v2.0", "v2.1")  # a cluster without runtimePatches
    assert explain('failed calling webhook "validator.trainjob.trainer.kubeflow.org": connection refused').to_json()[
        "trainerVersion"
    ] is None


def test_an_unknown_denial_s_fix_does_not_send_the_reader_back_to_explain_error() -> None:
    ex = explain(TJ + "spec.foo: Invalid value: something odd")
    (f,) = [f for f in ex.diagnosis.findings if f.rule.id == R]
    assert "explain-error" in f.rule.fix  # the rule's own fix, for diagnose and lint, points here
    assert f.result.fix and "explain-error" not in f.result.fix and "ckpt-doctor lint" in f.result.fix
