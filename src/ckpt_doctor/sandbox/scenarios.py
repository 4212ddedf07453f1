"""The sandbox's preloaded scenarios: one TrainJob each, in namespace `sandbox`, with its runtime, PVC and script.

Each scenario's objects are `scenarios/<name>.manifests.yaml` (what a user would apply); its table row here says
what its trainer does (sandbox/controller.Program), which recording of a real run it speaks, and what a correct
diagnosis and the verify drill conclude about it, the ground truth the tests hold the tool to.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ckpt_doctor.errors import UsageError
from ckpt_doctor.sandbox.controller import Program

HERE = Path(__file__).resolve().parent / "scenarios"
NAMESPACE = "sandbox"


@dataclass(frozen=True)
class ScenarioSpec:
    name: str
    title: str  # one line, for `ckpt-doctor sandbox` and the docs
    verdict: str  # what the verify drill concludes: passed | failed
    failing_step: str | None  # the drill's step that fails (with preflight, as `ckpt-doctor drill` runs)
    rules: tuple[str, ...]  # the rules a diagnosis (and the failing step's) must name
    program: dict[str, Any] = field(default_factory=dict)  # sandbox/controller.Program knobs
    recordings: tuple[str, ...] = ()  # run ids of recordings to replay, the first this installation has
    detach_seconds: float = 1.0  # how long a ReadWriteOnce volume stays on its old node

    def manifests(self) -> list[dict[str, Any]]:
        from ckpt_doctor.yamlio import iter_documents

        path = HERE / f"{self.name}.manifests.yaml"
        return [d for d in iter_documents(path.read_text(encoding="utf-8"), str(path)) if isinstance(d, dict)]

    def make_program(self, **overrides: Any) -> Program:
        # the scripts save every save_every steps for as long as they run, keeping save_total_limit (3) of them
        return Program(**{"keep": 3, "burst_saves": None, **self.program, **overrides})


# The recordings each scenario's trainer speaks, the first one installed (recordings/, packaged): HF
# Trainer runs of the same shape as the scenario's script. Without any, the guide's [checkpoint] convention.
HF = ("hf-4.57-{}", "hf-5.24-{}")


def _rec(scenario: str) -> tuple[str, ...]:
    return tuple(x.format(scenario) for x in HF)


SCENARIOS: tuple[ScenarioSpec, ...] = (
    ScenarioSpec("healthy-resume", "a healthy resumable job: saves every 50 steps to a PVC, resumes from the newest "
                 "complete checkpoint, saves on SIGTERM", "passed", None, (), recordings=_rec("sigterm-handler")),
    ScenarioSpec("lexical-checkpoint-sort", "resumes from sorted(glob(...))[-1]: checkpoint-90 sorts after "
                 "checkpoint-100", "failed", "preflight", ("lexical-checkpoint-sort",),
                 {"sort": "lexical", "save_every": 10, "burst_saves": 10, "keep": 30},
                 recordings=_rec("lexical-sort")),
    ScenarioSpec("runtime-without-ancestor-label", "the runtime's trainer Job lacks the ancestor label: spec.trainer "
                 "(CKPT_DIR, resources) never reaches the pod", "failed", "preflight", ("missing-ancestor-label",),
                 recordings=_rec("correct-resume")),
    ScenarioSpec("rwo-on-two-nodes", "two nodes share one ReadWriteOnce PVC: the second pod waits for a volume "
                 "attached elsewhere", "failed", "preflight", ("rwo-multi-node",), recordings=_rec("correct-resume")),
    ScenarioSpec("shell-pid1-short-grace", "bash stays PID 1 (a here-document) with a 10 s grace period: SIGTERM "
                 "never reaches the trainer, SIGKILL ends it without a final save", "failed", "preflight",
                 ("sigterm-not-forwarded",), {"pid1": "shell"}, recordings=_rec("sigterm-no-handler")),
    ScenarioSpec("checkpoint-on-emptydir", "checkpoints on an emptyDir: every new pod starts from step 0",
                 "failed", "preflight", ("ckpt-dir-not-persistent",), recordings=_rec("correct-resume")),
)
BY_NAME = {s.name: s for s in SCENARIOS}


def choose(names: list[str] | tuple[str, ...] | None) -> list[ScenarioSpec]:
    """The scenarios named (all when none is), in the table's order; UsageError for an unknown name."""
    if not names:
        return list(SCENARIOS)
    unknown = [n for n in names if n not in BY_NAME]
    if unknown:
        raise UsageError(f"--scenario: unknown {', '.join(unknown)}; the scenarios are {', '.join(BY_NAME)}")
    return [s for s in SCENARIOS if s.name in names]


def platform(trainer_version: str = "v2.1") -> list[dict[str, Any]]:
    """What the simulated platform has before any scenario: its namespace, a storage class, and the Trainer's
    controller (whose image tag says the version, as a real installation's does)."""
    image = f"ghcr.io/kubeflow/trainer/trainer-controller-manager:{trainer_version}.0"
    return [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}},
        {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": "ceph-rbd"},
         "provisioner": "rbd.csi.ceph.com", "reclaimPolicy": "Delete", "volumeBindingMode": "Immediate",
         "allowVolumeExpansion": True},
        {"apiVersion": "apps/v1", "kind": "Deployment",
         "metadata": {"name": "kubeflow-trainer-controller-manager", "namespace": "kubeflow-system"},
         "spec": {"template": {"spec": {"containers": [{"name": "manager", "image": image}]}}}},
    ]
