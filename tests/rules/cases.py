"""Failing and passing fixtures for every rule (the stories add more).

Each case builds a Scenario; the test writes it as a bundle, diagnoses it through the bundle
reader, and checks the rule's status. tests/rules/test_rules.py fails when a rule has no
failing or no passing case.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.scenario import Attempt, PodSpecKnobs, Scenario, convention_log, megatron_log, tqdm, ts
from tests.stories import CK, STORIES, _restart, healthy_resume


@dataclass(frozen=True)
class Case:
    rule: str
    expect: str  # fail | pass | not_evaluated
    name: str
    build: Callable[[], Scenario]


def _container_named_trainer() -> Scenario:
    s = Scenario(knobs=PodSpecKnobs(container_name="trainer"))
    return _restart(
        s, convention_log("/mnt/ckpt/default", 0, 120, crash="Killed"), convention_log("/mnt/ckpt/default", 100, 180)
    )


def _pto_on(version: str) -> Callable[[], Scenario]:
    def build() -> Scenario:
        s = Scenario(version=version)
        s.trainjob_spec_extra = {
            "podTemplateOverrides": [
                {
                    "targetJobs": [{"name": "node"}],
                    "spec": {
                        "volumes": [{"name": "ckpt", "persistentVolumeClaim": {"claimName": "ckpt-pvc"}}],
                        "containers": [{"name": "node", "volumeMounts": [{"name": "ckpt", "mountPath": "/mnt/ckpt"}]}],
                    },
                }
            ]
        }
        return s

    return build


def _edited(version: str) -> Callable[[], Scenario]:
    def post(objs: list[dict[str, Any]]) -> None:
        tj = next(o for o in objs if o["kind"] == "TrainJob")
        tj["metadata"]["generation"] = 2
        tj["spec"]["trainer"]["env"].append({"name": "RESUME_FROM", "value": "latest"})
        tj["metadata"]["managedFields"] = [
            {
                "manager": "kubectl-edit",
                "operation": "Update",
                "apiVersion": "trainer.kubeflow.org/v1alpha1",
                "time": ts(25),
                "fieldsV1": {"f:spec": {"f:trainer": {"f:env": {}}}},
            }
        ]

    def build() -> Scenario:
        s = healthy_resume()
        s.version = version
        s.bundle_meta = {"trainerVersion": f"{version}.0"}
        s.post = post
        return s

    return build


def _node_local(move: bool) -> Callable[[], Scenario]:
    def build() -> Scenario:
        s = healthy_resume()
        s.pv_local, s.storage_class, s.provisioner = True, "local-storage", "kubernetes.io/no-provisioner"
        if not move:
            s.attempts[1].node = s.attempts[0].node
        return s

    return build


def _pvc(phase: str | None) -> Callable[[], Scenario]:
    def build() -> Scenario:
        s = Scenario()
        s.attempts = [Attempt(0, "gpu-node-a", None, phase="Pending", waiting="ContainerCreating")]
        if phase is None:
            s.include_pvc = False
        else:
            s.pvc_phase = phase
        return s

    return build


def _training_hub(full_state: bool) -> Callable[[], Scenario]:
    script = (
        "from training_hub import sft\n"
        "sft(model_path='/models/granite-3b', data_path='/data/train.jsonl', ckpt_output_dir=CKPT_DIR,\n"
        f"    num_epochs=3, checkpoint_at_epoch=True, accelerate_full_state_at_epoch={full_state})\n"
    )

    def build() -> Scenario:
        return Scenario(knobs=PodSpecKnobs(script=script))

    return build


def _partial() -> Scenario:
    s = Scenario()
    crash = f"FileNotFoundError: [Errno 2] No such file or directory: '{CK}/checkpoint-300/trainer_state.json'"
    second = (
        f"[checkpoint] resuming from {CK}/checkpoint-300\nTraceback (most recent call last):\n"
        f'  File "/opt/train/train.py", line 31, in <module>\n{crash}\n'
    )
    return _restart(s, convention_log(CK, 0, 300, sigterm_at=300), second)


def _no_save_before(interrupted_before_save: bool) -> Callable[[], Scenario]:
    def build() -> Scenario:
        s = Scenario()
        end = 80 if interrupted_before_save else 180
        return _restart(
            s,
            convention_log(CK, 0, end, save_every=100, crash="Killed"),
            convention_log(CK, 0 if interrupted_before_save else 100, 220, save_every=100),
        )

    return build


def _rejected_event() -> Scenario:
    s = healthy_resume()
    s.event(
        "TrainJob",
        s.name,
        "TrainJobResourcesCreationFailed",
        'TrainJob resources reconciliation failed: admission webhook "vjobset.kb.io" denied the request: '
        f'JobSet.jobset.x-k8s.io "{s.name}" is invalid: spec.replicatedJobs: Invalid value: "array": '
        "field is immutable",
        70,
        api="events.k8s.io",
    )
    return s


def _megatron_ok() -> Scenario:
    cmd = (
        "torchrun $DISTRIBUTED_ARGS pretrain_gpt.py --tensor-model-parallel-size 4 --use-distributed-optimizer "
        "--load $OUTPUT_DIR --save $OUTPUT_DIR --pretrained-checkpoint /models/base --save-interval 500"
    )
    knobs = PodSpecKnobs(
        command=["bash", "-c"], args=[f"exec {cmd}"], script=None, env=[{"name": "OUTPUT_DIR", "value": CK}]
    )
    s = Scenario(knobs=knobs)
    s.trainer_env = []
    return _restart(
        s, megatron_log(CK, CK, 0, 1200, loaded_iter=None), megatron_log(CK, CK, 1000, 1100, loaded_iter=1000)
    )


def _megatron_no_load() -> Scenario:
    s = _megatron_ok()
    s.knobs.args = [a.replace("--load $OUTPUT_DIR ", "") for a in s.knobs.args]
    assert "--load" not in s.knobs.args[0]
    return s


def _lf_ok() -> Scenario:
    from tests.stories import llamafactory_overwrite

    s = llamafactory_overwrite()
    s.knobs.config = {
        "sft.yaml": s.knobs.config["sft.yaml"].replace(
            "overwrite_output_dir: true",  # type: ignore
            "overwrite_output_dir: false",
        )
    }
    s.attempts[1].log = convention_log(CK, 300, 400)
    return s


def _simple_bash_last_command() -> Scenario:
    return Scenario(knobs=PodSpecKnobs(args=["cd /opt/train\npython train.py --config cfg.yaml"]))


def _sh_dash() -> Scenario:
    return Scenario(knobs=PodSpecKnobs(command=["sh", "-c"], args=["python /opt/train/train.py"]))


def _logs_not_collected() -> Scenario:
    s = healthy_resume()
    s.not_collected = [{"what": "logs", "reason": "forbidden: cannot get pods/log in team-a"}]
    for a in s.attempts:
        a.log = None
    return s


def _events_forbidden() -> Scenario:
    s = healthy_resume()
    s.events.clear()
    s.not_collected = [{"what": "events", "reason": "forbidden: cannot list events in team-a"}]
    return s


def _resumed_newer_than_seen() -> Scenario:
    """The resume picked a checkpoint newer than any save the kept log shows: not a lexical sort."""
    s = Scenario()
    # saves 50..550 are visible; checkpoint-600 sorts last as text *and* is the newest number
    return _restart(s, convention_log(CK, 0, 580, save_every=50, crash="Killed"), convention_log(CK, 600, 650))


def _backoff(limit: int | None) -> Callable[[], Scenario]:
    def build() -> Scenario:
        s = healthy_resume()
        s.backoff_limit = limit
        return s

    return build


def _runtime_ref_kind() -> Scenario:
    """runtimeRef without kind defaults to ClusterTrainingRuntime, but only a TrainingRuntime exists."""
    s = healthy_resume()
    s.trainjob_spec_extra = {"runtimeRef": {"apiGroup": "trainer.kubeflow.org", "name": s.runtime_name}}
    return s


def _no_checkpointing(with_pvc: bool) -> Callable[[], Scenario]:
    """A short job that checkpoints nothing: no CKPT_DIR, no volume, a script that saves nothing."""
    script = "import torch\nfor step in range(100):\n    loss = torch.randn(1).sum()\nprint('done')\n"

    def build() -> Scenario:
        s = Scenario(knobs=PodSpecKnobs(ckpt_volume="pvc" if with_pvc else None, env=[], script=script))
        s.trainer_env = []
        s.failure_policy = None
        log = "".join(tqdm(i, 100) for i in range(0, 60)) + "\n"
        return _restart(s, log + "Killed\n", log)

    return build


GUIDE_RUNTIME = (Path(__file__).resolve().parents[1] / "corpus" / "scripts" / "alauda-guide-runtime" / "train.py")


def _stopped_exit_zero(complete: bool) -> Callable[[], Scenario]:
    """Evicted at step 230: the guide's convention flushes on SIGTERM, then the trainer exits 0 and the pod ends
    Succeeded; with `complete` the JobSet and the TrainJob report Complete."""

    def build() -> Scenario:
        s = Scenario()
        s.attempts = [
            Attempt(0, "gpu-node-a", convention_log(CK, 0, 230, sigterm_at=230, final_save=True),
                    phase="Succeeded", exit_code=0, reason="Completed", started=0),
        ]  # fmt: skip
        if complete:
            s.tj_conditions = [{"type": "Complete", "status": "True", "reason": "JobSetCompleted",
                                "message": "jobset completed", "lastTransitionTime": ts(20)}]  # fmt: skip
        return s

    return build


def _finished_complete() -> Scenario:
    """Trained to its total and exited 0: Complete is right."""
    s = Scenario()
    s.attempts = [
        Attempt(0, "gpu-node-a", convention_log(CK, 0, 1000), phase="Succeeded", exit_code=0, reason="Completed"),
    ]
    s.tj_conditions = [{"type": "Complete", "status": "True", "reason": "JobSetCompleted",
                        "message": "jobset completed", "lastTransitionTime": ts(90)}]  # fmt: skip
    return s


def _sigterm_script(script: str, command: list[str] | None = None) -> Callable[[], Scenario]:
    def build() -> Scenario:
        knobs = PodSpecKnobs(script=script)
        if command is not None:
            knobs.args = [command[0]]
        s = Scenario(knobs=knobs)
        return _restart(
            s,
            convention_log(CK, 0, 180, crash="RuntimeError: NCCL error: unhandled system error"),
            convention_log(CK, 150, 400),
        )

    return build


_EXITS_143 = GUIDE_RUNTIME.read_text().replace(
    'print("[checkpoint] done", flush=True)',
    'print("[checkpoint] done", flush=True)\nif StopOnSigterm.requested:\n    sys.exit(143)',
).replace("import signal\n", "import signal\nimport sys\n")


CASES: list[Case] = [
    Case("not-set-up-for-resume", "fail", "no checkpoint directory, no volume", _no_checkpointing(False)),
    Case("not-set-up-for-resume", "pass", "a PVC is mounted", _no_checkpointing(True)),
    Case("fresh-start-after-restart", "fail", "a job not set up for resume restarted", _no_checkpointing(False)),
    Case("backoff-limit-fights-restarts", "fail", "backoffLimit 6 with maxRestarts 3", _backoff(6)),
    Case("backoff-limit-fights-restarts", "fail", "no backoffLimit (default 6)", _backoff(None)),
    Case("backoff-limit-fights-restarts", "pass", "backoffLimit 0", _backoff(0)),
    Case("runtime-ref-unresolved", "fail", "kind defaults to ClusterTrainingRuntime", _runtime_ref_kind),
    Case("lexical-checkpoint-sort", "pass", "resumed newer than the saves seen", _resumed_newer_than_seen),
    Case("trainer-container-not-node", "fail", "container named trainer", _container_named_trainer),
    Case("overrides-not-applied", "fail", "container named trainer", _container_named_trainer),
    Case("override-field-unsupported", "fail", "podTemplateOverrides on v2.2", _pto_on("v2.2")),
    Case("override-field-unsupported", "pass", "podTemplateOverrides on v2.1", _pto_on("v2.1")),
    Case("trainer-edited-while-running", "fail", "env added after the JobSet, v2.1", _edited("v2.1")),
    Case("trainer-edited-while-running", "pass", "v2.2 makes spec.trainer immutable", _edited("v2.2")),
    Case("node-pinned-storage", "fail", "local PV, attempt on another node", _node_local(True)),
    Case("node-pinned-storage", "pass", "local PV, same node every time", _node_local(False)),
    Case("ckpt-dir-not-persistent", "fail", "local PV is node-local", _node_local(True)),
    Case("pvc-unbound", "fail", "PVC Pending", _pvc("Pending")),
    Case("pvc-unbound", "fail", "PVC missing", _pvc(None)),
    Case("pvc-unbound", "pass", "PVC Bound", _pvc("Bound")),
    Case("training-hub-weights-only", "fail", "accelerate_full_state_at_epoch=False", _training_hub(False)),
    Case("training-hub-weights-only", "pass", "accelerate_full_state_at_epoch=True", _training_hub(True)),
    Case("partial-latest-checkpoint", "fail", "checkpoint-300 lacks trainer_state.json", _partial),
    Case("resume-crashed", "fail", "checkpoint-300 lacks trainer_state.json", _partial),
    Case("no-checkpoint-before-interruption", "fail", "crash at step 80, saves every 100", _no_save_before(True)),
    Case("no-checkpoint-before-interruption", "pass", "crash at 180 after a save", _no_save_before(False)),
    Case("fresh-start-after-restart", "fail", "crash before the first save", _no_save_before(True)),
    Case("trainjob-rejected", "fail", "TrainJobResourcesCreationFailed event", _rejected_event),
    Case("megatron-resume-disabled", "pass", "--load = --save, resumed at 1000", _megatron_ok),
    Case("megatron-resume-disabled", "fail", "--save without --load", _megatron_no_load),
    Case("fresh-start-after-restart", "pass", "Megatron resumed at iteration 1000", _megatron_ok),
    Case("llamafactory-overwrite-output-dir", "pass", "overwrite_output_dir: false", _lf_ok),
    Case("sigterm-not-forwarded", "pass", "bash: trainer is the last simple command", _simple_bash_last_command),
    Case("sigterm-not-forwarded", "fail", "sh -c (dash) never execs", _sh_dash),
    Case("sigterm-exit-zero", "fail", "evicted, flushed, exited 0", _stopped_exit_zero(False)),
    Case("sigterm-exit-zero", "fail", "the guide's runtime stops and ends", _sigterm_script(GUIDE_RUNTIME.read_text())),
    Case("sigterm-exit-zero", "pass", "the guide's runtime, exiting 143 after the stop", _sigterm_script(_EXITS_143)),
    Case("sigterm-exit-zero", "pass", "under torchrun (its agent exits 1)", _sigterm_script(
        GUIDE_RUNTIME.read_text(), ["exec torchrun --nproc_per_node 1 /opt/train/train.py"])),
    Case("trainjob-completed-early", "fail", "Complete after a SIGTERM stop that exited 0", _stopped_exit_zero(True)),
    Case("trainjob-completed-early", "pass", "Complete after reaching the total", _finished_complete),
    Case("fresh-start-after-restart", "not_evaluated", "logs forbidden", _logs_not_collected),
    Case("resume-crashed", "not_evaluated", "logs forbidden", _logs_not_collected),
    Case("volume-attach-blocked", "not_evaluated", "events forbidden", _events_forbidden),
    Case("rwo-still-attached", "not_evaluated", "events forbidden", _events_forbidden),
]

# every story's expected failures are failing cases; the healthy story passes every rule
for _story in STORIES:
    for _rule in _story.expect:
        CASES.append(Case(_rule, "fail", f"story {_story.name}", _story.build))
ALL_RULES_PASS = Case("*", "pass", "story healthy-resume", healthy_resume)
