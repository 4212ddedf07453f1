"""`ckpt-doctor explain-error`: from the text of a rejected apply to the rule, the cause and the fix.

The texts come from trainer-api.md §5 (Trainer webhook denials of every version, quoted
verbatim there), the API server's strict decoding (`unknown field "spec.…"`, a field of another
Trainer version) and CEL validation (`field is immutable`). Every recognised text fails
`trainjob-rejected` and, where one exists, the specific cause. The findings go through the same
engine (`evaluate` in explain-error mode), so the document is the one contracts.md §3 describes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from ckpt_doctor.engine.catalogue import default_rules
from ckpt_doctor.engine.checks import snippet
from ckpt_doctor.engine.checks.runtime import FIELD_VERSIONS, has_field
from ckpt_doctor.engine.model import Finding, Result
from ckpt_doctor.engine.walk import Diagnosis, evaluate, rewalk
from ckpt_doctor.facts.context import Facts
from ckpt_doctor.facts.versions import KNOWN, TrainerVersion
from ckpt_doctor.scope import Scope
from ckpt_doctor.snapshot import Snapshot

REJECTED = "trainjob-rejected"
SUGGESTION = (
    "not recognised as a Kubeflow Trainer apply error. If it came from `kubectl apply -f FILE`, "
    "run `ckpt-doctor lint FILE` to check the manifest itself."
)
VERSION_FIELDS = {
    "podSpecOverrides": "Trainer v2.0",
    "podTemplateOverrides": "Trainer v2.1",
    "runtimePatches": "Trainer v2.2+",
}
# override fields that exist only in some Trainer versions (an unknown one means another version)
VERSIONED = tuple(FIELD_VERSIONS)
UNKNOWN_FIELD_FIX = {
    "podSpecOverrides": "The cluster runs a Trainer newer than v2.0: write the overrides as spec.podTemplateOverrides "
    "(v2.1) or spec.runtimePatches (v2.2+); `ckpt-doctor lint --fix --trainer-version v2.3 FILE` converts them",
    "podTemplateOverrides": "The cluster runs Trainer v2.2 or newer, where podTemplateOverrides became "
    "spec.runtimePatches; `ckpt-doctor lint --fix --trainer-version v2.3 FILE` converts them",
    "runtimePatches": "The cluster runs Trainer v2.0 or v2.1: write the overrides as podTemplateOverrides (v2.1) or "
    "podSpecOverrides (v2.0), or upgrade the Trainer",
    "labels": "spec.labels was removed in Trainer v2.2: put JobSet labels under "
    "spec.runtimePatches[].trainingRuntimeSpec.template.metadata.labels",
    "annotations": "spec.annotations was removed in Trainer v2.2: put JobSet annotations under "
    "spec.runtimePatches[].trainingRuntimeSpec.template.metadata.annotations",
    "activeDeadlineSeconds": "spec.activeDeadlineSeconds exists from Trainer v2.2: drop it on this cluster",
    "terminationGracePeriodSeconds": "terminationGracePeriodSeconds in runtimePatches exists from Trainer v2.3: "
    "set it in the runtime's pod template instead",
}
SUSPEND_FIRST = (
    'Suspend the TrainJob first (kubectl patch trainjob NAME --type=merge -p \'{"spec":{"suspend":true}}\'), '
    "wait until its pods are gone, make the change, then set suspend back to false"
)


@dataclass(frozen=True)
class Pattern:
    """One family of apply-time errors: what it means and how to fix it."""

    id: str
    regex: re.Pattern[str]
    rules: tuple[str, ...]  # specific causes, besides trainjob-rejected
    cause: str  # one sentence; `{0}`, `{1}` … take the regex groups
    fix: str
    rejection: bool = True  # False: a warning; the apply went through


def _p(
    pid: str, rx: str, rules: tuple[str, ...], cause: str, fix: str, flags: int = 0, rejection: bool = True
) -> Pattern:
    return Pattern(pid, re.compile(rx, flags), rules, cause, fix, rejection)


PATTERNS: tuple[Pattern, ...] = (
    _p(
        "env-on-reserved-container",
        r"(spec\.(?:runtimePatches|podTemplateOverrides|podSpecOverrides))\S*: .*?"
        r"must not have envs for the dataset-initializer, model-initializer, node containers",
        ("env-in-pod-template-overrides",),
        "{0} sets env on the node or an initializer container, which only spec.trainer.env and "
        "spec.initializer.*.env may do",
        "Move the variables to spec.trainer.env (node) or spec.initializer.dataset/model.env; "
        "`ckpt-doctor lint --fix FILE` does it",
        re.S,
    ),
    _p(
        "unknown-replicated-job",
        r"must not have (?:replicated job|targetJob) that doesn't exist in the runtime job template",
        (),
        "the overrides target a replicated job the runtime does not have",
        "Name an existing replicated job of the runtime (the trainer's is usually `node`) in "
        "targetJobs[].name / runtimePatches[].trainingRuntimeSpec.template.spec.replicatedJobs[].name",
    ),
    _p(
        "unknown-container",
        r"must not have (?:initContainer|container) that doesn't exist in the runtime job (\S+)",
        (),
        "the overrides patch a container that replicated job {0} does not have",
        "Use the container names of the runtime's job (the trainer container is `node`); overrides can only "
        "change containers that exist, not add them",
    ),
    _p(
        "duplicate-target-job",
        r"Duplicate value: \"([^\"]+)\"",
        (),
        "the overrides list the target job {0} twice (Trainer v2.0 podSpecOverrides)",
        "Merge the two overrides for that job into one entry",
    ),
    _p(
        "runtime-patch-manager",
        r"spec\.runtimePatches\S*\.manager: .*?(?:domain-prefixed path|prefix part|Invalid value)",
        (),
        "runtimePatches[].manager must be a domain-prefixed path such as example.com/my-team",
        "Set manager to a name you own with a domain prefix, e.g. platform.example.com/checkpoints",
        re.S,
    ),
    _p(
        "patch-while-running",
        r"(RuntimePatches|PodTemplateOverrides|PodSpecOverrides) (?:can only be modified when the TrainJob is "
        r"suspended|cannot be modified when the JobSet's ReplicatedJob (\S+) is still active)",
        (),
        "{0} may only change while the TrainJob is suspended and its jobs are no longer active",
        SUSPEND_FIRST,
    ),
    _p(
        "missing-initializer-job",
        r"must have (dataset|model)-initializer job when trainJob is configured with input (?:dataset|model)Config",
        (),
        "spec.initializer.{0} is set, but the runtime has no {0}-initializer replicated job",
        "Use a runtime with a {0}-initializer job (ancestor label {0}-initializer), or drop spec.initializer.{0}",
    ),
    _p(
        "missing-initializer-container",
        r"must have container with name - ((?:dataset|model)-initializer) in the \S+ job",
        (),
        "the runtime's {0} job has no container named {0}",
        "Name the initializer's container {0} in the runtime",
    ),
    _p(
        "missing-initializer-mount",
        r"must have volumeMount with name - initializer in container (\S+) of the (\S+) job",
        (),
        "Trainer v2.3+ needs the {0} container to mount a volume named `initializer`",
        "Add a volumeMount named initializer (and the volume) to container {0} of the runtime's {1} job",
    ),
    _p(
        "runtime-not-found",
        r"specified (trainingRuntime|clusterTrainingRuntime) must be created before the TrainJob is created",
        ("runtime-ref-unresolved",),
        "spec.runtimeRef names a {0} that does not exist (yet) where the webhook looked",
        "Apply the runtime before the TrainJob, and check runtimeRef: kind defaults to ClusterTrainingRuntime, "
        "so a namespaced TrainingRuntime needs kind: TrainingRuntime and must be in the TrainJob's namespace",
    ),
    _p(
        "runtime-not-found-controller",
        r"(TrainingRuntime specified in TrainJob is not found|not found ClusterTrainingRuntime specified in TrainJob)",
        ("runtime-ref-unresolved",),
        "the controller cannot find the runtime the TrainJob names ({0})",
        "Create the runtime (or fix spec.runtimeRef name and kind); the controller retries on its own",
    ),
    _p(
        "unsupported-runtime",
        r"unsupported runtime: (\S+)",
        ("runtime-ref-unresolved",),
        "spec.runtimeRef points at {0}, which is not a Trainer runtime kind",
        "Set spec.runtimeRef.apiGroup: trainer.kubeflow.org and kind: TrainingRuntime or ClusterTrainingRuntime",
    ),
    _p(
        "reserved-env",
        r"must not have reserved envs, invalid envs configured: \[([^\]]*)\]",
        (),
        "spec.trainer.env sets variables the framework plugin owns: {0}",
        "Remove them from spec.trainer.env; numNodes and numProcPerNode set the PET_* variables "
        "(and the MPI plugin the OMPI_* ones)",
    ),
    _p(
        "num-proc-per-node",
        r"must have an int value or \[auto cpu gpu\]|numProcPerNode must be greater than or equal to 1|"
        r"NumProcPerNode in mpiPolicy must be >= 1",
        (),
        "numProcPerNode has a value this Trainer version does not accept",
        "Use a positive integer (v2.0/v2.1 also accept auto, cpu or gpu)",
    ),
    _p(
        "mpi-num-nodes",
        r"must have 1 when MPI trainingRuntime with enabled runLauncherAsNode does not have either launcher and node",
        (),
        "this MPI runtime runs the launcher as a node and has a single job, so numNodes must be 1",
        "Set spec.trainer.numNodes: 1 or use a runtime with separate launcher and node jobs",
    ),
    _p(
        "env-injection",
        r"envInjection target podSet \"([^\"]+)\" container \"([^\"]+)\" not found in runtime template|"
        r"containerNames must not include the main node container because PET_\* envs are always injected into it",
        (),
        "mlPolicy.torch.envInjection names a job or container the runtime does not have (or the node container)",
        "Point envInjection at an existing non-node container of the runtime",
    ),
    _p(
        "torchtune-immutable-arg",
        r"must not set immutable config \"([^\"]+)\" in trainer args; it is managed by the runtime",
        (),
        "the torchtune runtime fixes {0}; trainer args cannot change it (the checkpoint directory is the runtime's)",
        "Drop {0} from spec.trainer.args; to keep checkpoints elsewhere, use a runtime of your own",
    ),
    _p(
        "torchtune-model",
        r"must have a supported pretrained model, invalid model configured: \S+|must be 1 for \S+ model|"
        r"LoRA fine-tuning is not supported for multi-node training in TorchTune",
        (),
        "the torchtune runtime does not support this model or node count",
        "Use the model the torchtune runtime is built for, with numNodes 1 (LoRA is single-node)",
    ),
    _p(
        "replicas-must-be-1",
        r"always must be 1",
        (),
        "a replicated job with the ancestor label must have replicas 1 (the runtime webhook)",
        "Set replicas: 1 on the trainer and initializer jobs; scale with spec.trainer.numNodes instead",
        re.S,
    ),
    _p(
        "required-container",
        r"must contain the required container for the ancestor: trainer\b",
        ("trainer-container-not-node",),
        "the runtime's trainer job has no container named `node`, where spec.trainer lands",
        "Name the training container `node`",
    ),
    _p(
        "required-initializer-container",
        r"must contain the required container for the ancestor: ((?:dataset|model)-initializer)",
        (),
        "the runtime's {0} job has no container named {0}",
        "Name the initializer's container {0}",
    ),
    _p(
        "ml-policy",
        r"Only one of the policy can be configured",
        (),
        "the runtime's mlPolicy sets more than one framework policy (torch, mpi, …)",
        "Keep exactly one policy under spec.mlPolicy",
    ),
    _p(
        "immutable-trainer",
        r"(spec\.(?:trainer|initializer|runtimeRef|activeDeadlineSeconds|managedBy)\S*): Invalid value: .*?"
        r"field is immutable|(runtimeRef) is immutable|(ManagedBy) value is immutable",
        (),
        "{0} cannot change once the TrainJob exists (spec.trainer and spec.initializer: Trainer v2.2+)",
        "Delete the TrainJob and create it again with the same checkpoint directory (spec.trainer.env CKPT_DIR): "
        "the new run resumes from the PVC",
        re.S,
    ),
    _p(
        "name-format",
        r"metadata\.name must match RFC 1035 DNS label format|metadata\.name must be no more than 63 characters",
        (),
        "the TrainJob's name is not a DNS label (lowercase letters, digits, '-', starting with a letter, ≤ 63)",
        "Rename it, e.g. sft-run-1",
    ),
    _p(
        "managed-by",
        r"ManagedBy must be trainer\.kubeflow\.org/trainjob-controller or kueue\.x-k8s\.io/multikueue if set",
        (),
        "spec.managedBy names a controller that will never reconcile the TrainJob",
        "Remove spec.managedBy, or set it to kueue.x-k8s.io/multikueue for MultiKueue",
    ),
    _p(
        "storage-uri",
        r"storageUri may be empty, or it must be a valid URI \(scheme://\.\.\.\)",
        (),
        "spec.initializer.*.storageUri is not a URI",
        "Write it as scheme://… (hf://org/model, s3://bucket/path)",
    ),
    _p(
        "unknown-field",
        r"unknown field \"(spec\.[^\"]+)\"|"
        r"(?<![A-Za-z0-9_\]])\.?(spec\.[A-Za-z0-9_.\[\]]+): field not declared in schema|"
        r"unknown field \"([A-Za-z0-9_]+)\" in org\.kubeflow\.trainer\.v1alpha1\.TrainJob\.spec",
        (),
        "{0} does not exist in the TrainJob schema of this cluster",
        "Check the field name, and which Trainer version the cluster runs (override fields differ by version)",
    ),
    _p(
        "no-trainer-crd",
        r"no matches for kind \"(TrainJob|TrainingRuntime|ClusterTrainingRuntime)\" in version "
        r"\"trainer\.kubeflow\.org/v1alpha1\"",
        (),
        "the cluster has no {0} API: Kubeflow Trainer (v2) is not installed",
        "Install Kubeflow Trainer v2 (its CRDs and controller) or point kubectl at the cluster that has it",
    ),
    _p(
        "deprecated-runtime",
        r"(?:Referenced )?ClusterTrainingRuntime \"([^\"]+)\" is deprecated and will be removed",
        (),
        "a warning, not a rejection: the ClusterTrainingRuntime {0} is labeled deprecated; the apply went through",
        "Move to a runtime that is not deprecated before a Trainer upgrade removes it",
        rejection=False,
    ),
    _p(
        "webhook-unavailable",
        r"failed calling webhook \"((?:validator|defaulter)\.(?:trainjob|trainingruntime|clustertrainingruntime)"
        r"\.trainer\.kubeflow\.org)\"",
        (),
        "the API server could not reach the Trainer webhook {0}: the controller manager is not running or not ready",
        "Check the Trainer controller manager pod and its webhook Service/certificate "
        "(kubectl -n kubeflow-system get pods), then apply again",
    ),
)

WEBHOOK = re.compile(
    r"admission webhook \"((?:validator|defaulter)\.(?:trainjob|trainingruntime|clustertrainingruntime)"
    r"\.trainer\.kubeflow\.org)\" denied the request"
)


@dataclass
class Match:
    pattern: Pattern
    m: re.Match[str]

    def groups(self) -> list[str]:
        return [g for g in self.m.groups() if g is not None]

    def cause(self) -> str:
        return _fill(self.pattern.cause, self.groups())

    def fix(self) -> str:
        return _fill(self.pattern.fix, self.groups())


def _fill(template: str, groups: list[str]) -> str:
    return re.sub(r"\{(\d)\}", lambda m: groups[int(m.group(1))] if int(m.group(1)) < len(groups) else "", template)


@dataclass
class Explanation:
    """The explain-error result: the document, and what was recognised."""

    diagnosis: Diagnosis
    matches: list[Match] = field(default_factory=list)
    webhook: str | None = None  # the webhook that denied the request, if named
    version_hint: str | None = None

    @property
    def recognised(self) -> bool:
        return bool(self.diagnosis.failed()) or any(not m.pattern.rejection for m in self.matches)

    def warnings(self) -> list[Match]:
        return [m for m in self.matches if not m.pattern.rejection]

    def exit_code(self) -> int:
        return 0 if self.recognised else 1

    def to_json(self) -> dict[str, Any]:
        doc = self.diagnosis.to_json()
        doc["recognised"] = self.recognised
        if not self.recognised:
            doc["suggestion"] = SUGGESTION
        if self.warnings():
            doc["warnings"] = [{"cause": m.cause(), "fix": m.fix()} for m in self.warnings()]
        if self.version_hint:
            doc["trainerVersionHint"] = self.version_hint
        return doc


def match(text: str) -> list[Match]:
    """Every pattern the text matches (a kubectl error can hold several causes)."""
    out = []
    for p in PATTERNS:
        m = p.regex.search(text)
        if m is not None:
            out.append(Match(p, m))
    return out


def _snippet(text: str, m: re.Match[str], before: int = 60, after: int = 200) -> str:
    return snippet(text, m.start(), m.end(), before, after)


def _versioned_field(mt: Match) -> str | None:
    """The version-dependent field an unknown-field error names, if it is one."""
    name = next(iter(mt.groups()), "")
    if "terminationGracePeriodSeconds" in name and "runtimePatches" in name:
        return "terminationGracePeriodSeconds"
    top = name.removeprefix("spec.").split(".", 1)[0].split("[", 1)[0]
    return top if top in VERSIONED else None


def _version_from_text(text: str, matches: list[Match]) -> TrainerVersion | None:
    """The Trainer versions the error text leaves possible, when it narrows them (its `why` is the hint shown);
    None when the text does not tell."""
    for mt in matches:
        field = _versioned_field(mt) if mt.pattern.id == "unknown-field" else None
        if field == "terminationGracePeriodSeconds":
            why = "runtimePatches without terminationGracePeriodSeconds: the cluster runs Trainer v2.2"
            return TrainerVersion("v2.2", "inferred", why)
        if field in VERSION_FIELDS:
            left = tuple(v for v in KNOWN if not has_field(field, v))  # the versions that do not know it
            why = f"the cluster does not know spec.{field}, so it is not {VERSION_FIELDS[field]}"
            return TrainerVersion(left[-1], "inferred", why, left)
    for key, where in VERSION_FIELDS.items():
        if re.search(rf"spec\.{key}\b", text) and "unknown field" not in text and "not declared" not in text:
            have = tuple(v for v in KNOWN if has_field(key, v))
            why = f"the error names spec.{key}, so the cluster runs {where}"
            return TrainerVersion(have[-1], "inferred", why, have)
    return None


def explain(text: str) -> Explanation:
    """Match an apply-time error text to rules; the findings fail with `text` evidence."""
    snap = Snapshot(source="error-text", location="error text")
    facts = Facts(Scope(snap=snap, trainjob=None), mode="explain-error", error_text=text)
    matches = match(text)
    hinted = _version_from_text(text, matches)
    if hinted is not None:
        facts = facts.with_version(hinted)
    diag = evaluate(facts)
    webhook = WEBHOOK.search(text)
    trainer_text = bool(webhook) or bool(re.search(r"trainer\.kubeflow\.org|TrainJob|TrainingRuntime", text))
    if not matches and not trainer_text:
        diag.findings = []  # "is invalid" about some other object: not ours to explain
    rules = {r.id: r for r in default_rules()}
    by_rule: dict[str, Finding] = {f.rule.id: f for f in diag.findings}
    for mt in matches:
        if not mt.pattern.rejection:
            continue
        wanted = list(mt.pattern.rules)
        cause, fix = mt.cause(), mt.fix()
        versioned = _versioned_field(mt) if mt.pattern.id == "unknown-field" else None
        if versioned:
            wanted.append("override-field-unsupported")
            cause = f"{cause}: a field of another Trainer version"
            fix = UNKNOWN_FIELD_FIX[versioned]
        for rid in [REJECTED, *wanted]:
            ev = {"type": "text", "text": _snippet(text, webhook or mt.m) if rid == REJECTED else _snippet(text, mt.m)}
            if rid in by_rule:
                res = by_rule[rid].result
                if rid == REJECTED or not res.detail:
                    res.detail = cause
                res.fix = fix
                if not any(e.get("type") == "text" for e in res.evidence):
                    res.evidence.append(ev)
                continue
            if rid not in rules:
                continue
            f = Finding(rules[rid], Result("fail", None, [ev], cause, None, "high", fix))
            by_rule[rid] = f
            diag.findings.append(f)
    for f in diag.findings:  # the rule's own fix sends the reader here: say what to do instead
        if f.rule.id == REJECTED and not f.result.fix:
            f.result.fix = (
                "Read the field the denial names and the reason it gives; `ckpt-doctor lint` on the manifest "
                "checks it against the cluster's Trainer version and finds the known causes"
            )
    diag.findings.sort(key=lambda f: (0 if f.rule.kind == "symptom" else 1, f.rule.id))
    rewalk(diag)  # the symptom the denial is, and the causes the text shows, linked as in any diagnosis
    return Explanation(diag, matches, webhook.group(1) if webhook else None, hinted.why if hinted else None)


def render_text(ex: Explanation) -> str:
    """Cause and fix, for a human who just saw `kubectl apply` fail."""
    if not ex.recognised:
        return f"ckpt-doctor explain-error: {SUGGESTION}\n"
    lines = ["ckpt-doctor explain-error: recognised"]
    if ex.webhook:
        lines[0] += f" (denied by the {ex.webhook} webhook)"
    if ex.version_hint:
        lines.append(f"  ({ex.version_hint})")
    for w in ex.warnings():
        lines += ["", f"• {w.cause()}", f"  fix: {w.fix()}"]
    for f in ex.diagnosis.findings:
        r = f.result
        lines.append("")
        lines.append(f"✗ {f.rule.title}  [{f.rule.severity}] {f.rule.id}")
        if r.detail:
            lines.append(f"  cause: {r.detail}")
        for ev in r.evidence[:2]:
            if ev.get("type") == "text":
                lines.append(f"  matched: {ev['text']}")
        lines.append(f"  fix: {r.fix or f.rule.fix}")
    return "\n".join(lines) + "\n"
