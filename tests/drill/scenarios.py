"""The drill's scenarios: a TrainJob, its runtime and storage (built with tests/scenario.py), what the simulated
trainer does, and what the drill must conclude: its verdict and the step that fails, both with the default
steps (preflight judges the manifests first) and with `--skip preflight` (the experiment alone must find it).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML

from tests.drill.controller import Program, Scenario
from tests.scenario import PodSpecKnobs
from tests.scenario import Scenario as Build

NS, NAME = "team-a", "sft-resumable"
SERVER_FIELDS = ("uid", "resourceVersion", "generation", "creationTimestamp")
TRAINER_IMAGE = "ghcr.io/kubeflow/trainer/trainer-controller-manager:{version}.0"

LEXICAL_SCRIPT = (
    'import glob, os\nfrom transformers import Trainer, TrainingArguments\nCKPT_DIR = os.environ["CKPT_DIR"]\n'
    'ckpts = sorted(glob.glob(f"{CKPT_DIR}/checkpoint-*"))\n'
    "last = ckpts[-1] if ckpts else None\n"
    'print(f"[checkpoint] resuming from {last}" if last else "[checkpoint] no prior checkpoint, starting fresh", '
    "flush=True)\n"
    "args = TrainingArguments(output_dir=CKPT_DIR, save_steps=10, save_total_limit=30)\n"
    "Trainer(model=model, args=args).train(resume_from_checkpoint=last)\n"
)


@dataclass
class Case:
    name: str
    build: Build
    program: Program
    default: tuple[str, str | None]  # (verdict, failing step) with every step
    experiment: tuple[str, str | None]  # the same with --skip preflight
    rules: tuple[str, ...] = ()  # rules the failing step's diagnosis must name
    detach_seconds: float = 0.0
    extra: dict[str, Any] = field(default_factory=dict)

    def scenario(self) -> Scenario:
        return Scenario(self.program)


def clean(obj: dict[str, Any]) -> dict[str, Any]:
    """As a user writes it: no status, no server-set metadata."""
    o = copy.deepcopy(obj)
    o.pop("status", None)
    meta = o.get("metadata") or {}
    for k in SERVER_FIELDS:
        meta.pop(k, None)
    if o.get("kind") == "PersistentVolumeClaim":
        o["spec"].pop("volumeName", None)
    return o


def manifests(case: Case) -> list[dict[str, Any]]:
    b = case.build
    out = []
    if b.knobs.ckpt_volume == "pvc":
        out.append(clean(b.pvc()))
    cm = b.script_configmap()
    if cm:
        out.append(clean(cm))
    out.append(clean(b.runtime()))
    out.append(clean(b.trainjob()))
    return out


def cluster_side(case: Case, version: str = "v2.1") -> list[dict[str, Any]]:
    """What the platform already has: the storage class, and the Trainer controller (its image says the version)."""
    b = case.build
    dep = {"apiVersion": "apps/v1", "kind": "Deployment",
           "metadata": {"name": "kubeflow-trainer-controller-manager", "namespace": "kubeflow-system"},
           "spec": {"template": {"spec": {"containers": [
               {"name": "manager", "image": TRAINER_IMAGE.format(version=version)}]}}}}
    return [b.storageclass(), dep]


def write_manifests(case: Case, root: Path) -> list[Path]:
    """The guide's three files: checkpoint-pvc.yaml, checkpoint-trainingruntime.yaml, trainjob-resume.yaml."""
    root.mkdir(parents=True, exist_ok=True)
    yaml = YAML()
    yaml.default_flow_style = False
    by = {"PersistentVolumeClaim": "checkpoint-pvc.yaml", "ConfigMap": "checkpoint-trainingruntime.yaml",
          "TrainingRuntime": "checkpoint-trainingruntime.yaml", "TrainJob": "trainjob-resume.yaml"}
    files: dict[str, list[dict[str, Any]]] = {}
    for o in manifests(case):
        files.setdefault(by[o["kind"]], []).append(o)
    out = []
    for name, objs in files.items():
        p = root / name
        with p.open("w") as f:
            yaml.dump_all(objs, f)
        out.append(p)
    return out


# -- the cases ---------------------------------------------------------------------------------------------


def correct() -> Case:
    return Case("correct-resume", Build(), Program(), ("passed", None), ("passed", None))


def emptydir() -> Case:
    return Case("checkpoint-on-emptydir", Build(knobs=PodSpecKnobs(ckpt_volume="emptyDir")), Program(),
                ("failed", "preflight"), ("failed", "crash"), ("ckpt-dir-not-persistent",))


def no_ancestor_label() -> Case:
    b = Build()
    b.ancestor_label = False
    b.label_on_pod_template = True
    return Case("runtime-without-ancestor-label", b, Program(), ("failed", "preflight"), ("failed", "submit"),
                ("missing-ancestor-label",))


def rwo_attach_delay() -> Case:
    return Case("rwo-attach-delay", Build(), Program(), ("passed", None), ("passed", None), detach_seconds=1.0)


def no_failure_policy() -> Case:
    b = Build()
    b.failure_policy = None
    return Case("no-failure-policy", b, Program(), ("failed", "preflight"), ("failed", "crash"),
                ("no-failure-policy",))


def shell_pid1_short_grace() -> Case:
    knobs = PodSpecKnobs(
        grace=10,
        command=["bash", "-ec"],
        args=["pip install -q -r /opt/train/requirements.txt\npython - <<'PY'\n"
              "exec(open('/opt/train/train.py').read())\nPY"],
    )
    return Case("shell-pid1-short-grace", Build(knobs=knobs), Program(pid1="shell"), ("failed", "preflight"),
                ("failed", "suspend-resume"), ("sigterm-not-forwarded",))


def lexical_sort() -> Case:
    b = Build(knobs=PodSpecKnobs(script=LEXICAL_SCRIPT))
    return Case("lexical-checkpoint-sort", b, Program(sort="lexical", save_every=10, burst_saves=10),
                ("failed", "preflight"), ("failed", "crash"), ("lexical-checkpoint-sort",))


CASES = (correct, emptydir, no_ancestor_label, rwo_attach_delay, no_failure_policy, shell_pid1_short_grace,
         lexical_sort)
