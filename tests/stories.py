"""The example incidents: one story per guide troubleshooting row and per known trap.

Each story returns a Scenario and the rule ids that must fail (`expect`). `examples/` holds
their written bundles (`python -m tests.make_examples`); tests diagnose both.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from tests.scenario import Attempt, PodSpecKnobs, Scenario, convention_log, hf_log, megatron_log, resumed_condition, ts

CK = "/mnt/ckpt/sft-resumable"


@dataclass
class Story:
    name: str
    summary: str
    build: Callable[[], Scenario]
    expect: tuple[str, ...]  # rule ids that must fail
    symptom: str | None = None  # the verdict's symptom, if any
    cause: str | None = None  # the cause the verdict must name for that symptom


def _restart(s: Scenario, first_log: str, second_log: str, kept_first: bool = True) -> Scenario:
    """A crash at attempt 0 and a JobSet restart into attempt 1."""
    s.js_restarts = 1
    s.attempts = [
        Attempt(0, "gpu-node-a", first_log, phase="Failed", exit_code=1, reason="Error", started=0, kept=kept_first),
        Attempt(1, "gpu-node-b", second_log, started=40),
    ]
    s.event(
        "JobSet",
        s.name,
        "RestartJobSetFailurePolicyAction",
        f"applying RestartJobSet failure policy action (first failed job: {s.name}-node-0)",
        39,
    )
    return s


def healthy_resume() -> Scenario:
    s = Scenario()
    return _restart(
        s,
        convention_log(CK, 0, 180, crash="RuntimeError: NCCL error: unhandled system error"),
        convention_log(CK, 150, 400),
    )


def emptydir_fresh_start() -> Scenario:
    s = Scenario(knobs=PodSpecKnobs(ckpt_volume="emptyDir"))
    return _restart(
        s,
        convention_log(CK, 0, 180, crash="RuntimeError: CUDA error: an illegal memory access"),
        convention_log(CK, 0, 60, resumed=False),
        kept_first=False,
    )


def ckpt_dir_per_pod() -> Scenario:
    s = Scenario()
    s.trainer_env = [
        {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
        {"name": "CKPT_DIR", "value": "/mnt/ckpt/$(POD_NAME)"},
    ]
    return _restart(
        s,
        convention_log("/mnt/ckpt/sft-resumable-node-0-0-a", 0, 180, crash="Killed"),
        convention_log("/mnt/ckpt/sft-resumable-node-0-0-b", 0, 60, resumed=False),
        kept_first=False,
    )


def autodetect_glob_miss() -> Scenario:
    script = (
        'import glob, os\nfrom transformers import Trainer, TrainingArguments\nCKPT_DIR = os.environ["CKPT_DIR"]\n'
        'found = sorted(glob.glob(os.path.join(CKPT_DIR, "ckpt_*")), key=lambda p: int(p.rsplit("_", 1)[1]))\n'
        "last = found[-1] if found else None\n"
        'print(f"[checkpoint] resuming from {last}" if last else '
        '"[checkpoint] no prior checkpoint, starting fresh", flush=True)\n'
        "args = TrainingArguments(output_dir=CKPT_DIR, save_steps=100, save_total_limit=2)\n"
        "Trainer(model=model, args=args).train(resume_from_checkpoint=last)\n"
    )
    s = Scenario(knobs=PodSpecKnobs(script=script))
    first = hf_log(CK, 0, 250, crash="RuntimeError: NCCL communicator was aborted on rank 0")
    return _restart(s, first, convention_log(CK, 0, 40, resumed=False))


def lexical_sort_older() -> Scenario:
    script = (
        'import glob, os\nfrom transformers import Trainer, TrainingArguments\nCKPT_DIR = os.environ["CKPT_DIR"]\n'
        'ckpts = sorted(glob.glob(f"{CKPT_DIR}/checkpoint-*"))\n'
        "last = ckpts[-1] if ckpts else None\n"
        'print(f"[checkpoint] resuming from {last}", flush=True)\n'
        "args = TrainingArguments(output_dir=CKPT_DIR, save_steps=50, save_total_limit=30)\n"
        "Trainer(model=model, args=args).train(resume_from_checkpoint=last)\n"
    )
    s = Scenario(knobs=PodSpecKnobs(script=script))
    return _restart(
        s,
        convention_log(CK, 0, 1020, total=2000, crash="torch.OutOfMemoryError: CUDA out of memory."),
        convention_log(CK, 950, 1100, total=2000, lexical_resume=950),
    )


def missing_ancestor_label() -> Scenario:
    s = Scenario()
    s.ancestor_label = False
    s.label_on_pod_template = True
    # the runtime's own default CKPT_DIR is used, because spec.trainer.env never arrives
    return _restart(
        s, convention_log("/mnt/ckpt/default", 0, 120, crash="Killed"), convention_log("/mnt/ckpt/default", 100, 180)
    )


def env_in_overrides_rejected() -> Scenario:
    s = Scenario()
    s.trainer_env = []
    s.trainjob_spec_extra = {
        "podTemplateOverrides": [
            {
                "targetJobs": [{"name": "node"}],
                "spec": {"containers": [{"name": "node", "env": [{"name": "CKPT_DIR", "value": CK}]}]},
            }
        ]
    }
    return s


def weights_only() -> Scenario:
    script = (
        'import os, torch\nCKPT_DIR = os.environ["CKPT_DIR"]\n'
        "for step in range(start, max_steps):\n    loss = train_step(model, batch)\n"
        "    if step % 100 == 0:\n"
        '        torch.save(model.state_dict(), f"{CKPT_DIR}/checkpoint-{step}/model.pt")\n'
        '        print(f"[checkpoint] saved {CKPT_DIR}/checkpoint-{step}", flush=True)\n'
    )
    s = Scenario(knobs=PodSpecKnobs(script=script))
    return _restart(
        s, convention_log(CK, 0, 260, save_every=100, crash="Killed"), convention_log(CK, 200, 320, save_every=100)
    )


def rwo_multi_attach() -> Scenario:
    s = Scenario()
    s.tj_conditions = [resumed_condition(60)]
    s.attempts = [
        Attempt(
            0,
            "gpu-node-a",
            convention_log(CK, 0, 230, sigterm_at=230, final_save=True),
            phase="Failed",
            exit_code=143,
            reason="Error",
            started=0,
        ),
        Attempt(0, "gpu-node-b", None, phase="Pending", waiting="ContainerCreating", started=61),
    ]
    pods = s.pod_names()
    s.event(
        "Pod",
        pods[1][0],
        "FailedAttachVolume",
        f'Multi-Attach error for volume "pvc-{s.pvc_name}" Volume is already exclusively attached to one node '
        "and can't be attached to another",
        61.5,
        count=1,
    )
    s.event(
        "Pod",
        pods[1][0],
        "FailedMount",
        "Unable to attach or mount volumes: unmounted volumes=[ckpt], unattached volumes=[ckpt], failed to "
        "process volumes=[]: timed out waiting for the condition",
        63.6,
        count=3,
    )
    return s


def rwo_multi_node() -> Scenario:
    s = Scenario(num_nodes=2)
    s.attempts = [Attempt(0, "gpu-node-a", None, phase="Pending", waiting="ContainerCreating", started=0, pods=2)]
    pods = s.pod_names()
    s.event(
        "Pod",
        pods[0][1],
        "FailedAttachVolume",
        f'Multi-Attach error for volume "pvc-{s.pvc_name}" Volume is already used by pod(s) {pods[0][0]}',
        1,
    )
    return s


def disk_full() -> Scenario:
    script = (
        'import os\nfrom transformers import Trainer, TrainingArguments\n'
        "from transformers.trainer_utils import get_last_checkpoint\n"
        'CKPT_DIR = os.environ["CKPT_DIR"]\n'
        'args = TrainingArguments(output_dir=CKPT_DIR, save_strategy="steps", save_steps=100)\n'
        "last = get_last_checkpoint(CKPT_DIR) if os.path.isdir(CKPT_DIR) else None\n"
        "Trainer(model=model, args=args, train_dataset=ds).train(resume_from_checkpoint=last)\n"
    )
    s = Scenario(knobs=PodSpecKnobs(script=script))
    log = hf_log(
        CK,
        0,
        700,
        save_every=100,
        crash="OSError: [Errno 28] No space left on device: '/mnt/ckpt/sft-resumable/checkpoint-700'",
    )
    s.attempts = [Attempt(0, "gpu-node-a", log, phase="Failed", exit_code=1, reason="Error", started=0)]
    s.js_restarts = 0
    return s


def final_checkpoint_missing() -> Scenario:
    knobs = PodSpecKnobs(
        grace=None,
        command=["bash", "-ec"],
        args=[
            "pip install -q -r /opt/train/requirements.txt\npython - <<'PY'\n"
            "exec(open('/opt/train/train.py').read())\nPY"
        ],
    )
    s = Scenario(knobs=knobs)
    s.tj_conditions = [resumed_condition(90)]
    s.attempts = [
        Attempt(
            0,
            "gpu-node-a",
            convention_log(CK, 0, 480, save_every=200, sigterm_at=480),
            phase="Failed",
            exit_code=137,
            reason="Error",
            started=0,
        ),
        Attempt(0, "gpu-node-a", convention_log(CK, 400, 520, save_every=200), started=91),
    ]
    return s


def llamafactory_overwrite() -> Scenario:
    cfg = (
        "### model\nmodel_name_or_path: Qwen/Qwen2.5-7B-Instruct\n\n### method\nstage: sft\ndo_train: true\n"
        "finetuning_type: lora\nlora_target: all\n\n### dataset\ndataset: alpaca_en_demo\ntemplate: qwen\n"
        "cutoff_len: 2048\n\n### output\noutput_dir: /mnt/ckpt/sft-resumable\nlogging_steps: 10\n"
        "save_steps: 100\nsave_total_limit: 3\nplot_loss: true\noverwrite_output_dir: true\n\n"
        "### train\nper_device_train_batch_size: 1\ngradient_accumulation_steps: 8\nlearning_rate: 1.0e-4\n"
        "num_train_epochs: 3.0\nbf16: true\n"
    )
    knobs = PodSpecKnobs(
        command=["llamafactory-cli", "train", "/opt/train/sft.yaml"],
        args=[],
        script=None,
        config={"sft.yaml": cfg},
        env=[],
    )
    s = Scenario(knobs=knobs)
    s.trainer_env = []
    first = hf_log(CK, 0, 340, save_every=100, prefix="lf", crash="RuntimeError: NCCL error")
    second = hf_log(
        CK,
        0,
        60,
        save_every=100,
        prefix="lf",
        extra_head=[
            "[INFO|2026-11-30 08:41:02] llamafactory.train.callbacks:143 >> Previous trainer log in this folder "
            "will be deleted."
        ],
    )
    return _restart(s, first, second)


def megatron_finetune() -> Scenario:
    cmd = (
        "torchrun $DISTRIBUTED_ARGS posttrain_gpt.py --use-mcore-models --tensor-model-parallel-size 4 "
        "--load $MCORE_WEIGHTS_DIR --save $OUTPUT_DIR --finetune --no-load-optim --no-load-rng "
        "--no-save-optim --no-save-rng --save-interval $TRAIN_ITERS --train-iters $TRAIN_ITERS"
    )
    knobs = PodSpecKnobs(
        command=["bash", "-c"],
        args=[f"source /usr/local/Ascend/set_env.sh\nexec {cmd}"],
        script=None,
        env=[
            {"name": "MCORE_WEIGHTS_DIR", "value": "/models/qwen3-mcore"},
            {"name": "OUTPUT_DIR", "value": "/mnt/ckpt/sft-resumable"},
            {"name": "TRAIN_ITERS", "value": "2000"},
        ],
    )
    s = Scenario(knobs=knobs)
    s.trainer_env = []
    first = megatron_log("/models/qwen3-mcore", CK, 0, 1200, loaded_iter=0)
    second = megatron_log("/models/qwen3-mcore", CK, 0, 80, loaded_iter=0)
    return _restart(s, first, second)


def no_failure_policy() -> Scenario:
    s = Scenario()
    s.failure_policy = None
    s.backoff_limit = None
    msg = f"jobset failed due to one or more job failures (first failed job: {s.name}-node-0)"
    s.tj_conditions = [
        {"type": "Failed", "status": "True", "reason": "FailedJobs", "message": msg, "lastTransitionTime": ts(50)}
    ]
    s.js_conditions = [
        {"type": "Failed", "status": "True", "reason": "FailedJobs", "message": msg, "lastTransitionTime": ts(50)}
    ]
    s.attempts = [
        Attempt(
            0,
            "gpu-node-a",
            convention_log(
                CK, 100, 230, crash="torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB"
            ),
            previous_log=convention_log(CK, 0, 120, crash="torch.OutOfMemoryError"),
            phase="Failed",
            exit_code=1,
            reason="Error",
            started=0,
        )
    ]
    s.events.clear()
    s.event("JobSet", s.name, "FailedJobs", msg, 50)
    return s


def resume_true_hardcoded() -> Scenario:
    script = (
        'import os\nfrom transformers import Trainer, TrainingArguments\nCKPT_DIR = os.environ["CKPT_DIR"]\n'
        "args = TrainingArguments(output_dir=CKPT_DIR, save_steps=100, save_total_limit=3)\n"
        "trainer = Trainer(model=model, args=args, train_dataset=ds)\n"
        "trainer.train(resume_from_checkpoint=True)\n"
    )
    s = Scenario(knobs=PodSpecKnobs(script=script))
    crash = f"ValueError: No valid checkpoint found in output directory ({CK})"
    log = "\n".join(line for line in hf_log(CK, 0, 0, crash=crash).splitlines() if "it/s]" not in line) + "\n"
    msg = f"jobset failed due to reaching max number of restarts (first failed job: {s.name}-node-0)"
    s.js_restarts = 3
    s.tj_conditions = [
        {
            "type": "Failed",
            "status": "True",
            "reason": "ReachedMaxRestarts",
            "message": msg,
            "lastTransitionTime": ts(20),
        }
    ]
    s.js_conditions = list(s.tj_conditions)
    s.attempts = [Attempt(3, "gpu-node-c", log, phase="Failed", exit_code=1, reason="Error", started=15)]
    return s


STORIES: list[Story] = [
    Story(
        "healthy-resume",
        "A crash at step 180, a JobSet restart, and a clean resume from checkpoint-150.",
        healthy_resume,
        (),
    ),
    Story(
        "emptydir-fresh-start",
        "Checkpoints on an emptyDir: the restarted pod starts from step 0.",
        emptydir_fresh_start,
        ("fresh-start-after-restart", "ckpt-dir-not-persistent"),
        "fresh-start-after-restart",
        "ckpt-dir-not-persistent",
    ),
    Story(
        "ckpt-dir-per-pod",
        "CKPT_DIR is built from the pod name, so each attempt looks in a new folder.",
        ckpt_dir_per_pod,
        ("fresh-start-after-restart", "ckpt-dir-changed"),
        "fresh-start-after-restart",
        "ckpt-dir-changed",
    ),
    Story(
        "autodetect-glob-miss",
        "HF saves checkpoint-N but the resume glob looks for ckpt_*.",
        autodetect_glob_miss,
        ("fresh-start-after-restart", "ckpt-autodetect-found-nothing"),
        "fresh-start-after-restart",
        "ckpt-autodetect-found-nothing",
    ),
    Story(
        "lexical-sort-older",
        "sorted(glob) picks checkpoint-950 although checkpoint-1000 exists.",
        lexical_sort_older,
        ("resumed-older-checkpoint", "lexical-checkpoint-sort"),
        "resumed-older-checkpoint",
        "lexical-checkpoint-sort",
    ),
    Story(
        "missing-ancestor-label",
        "The runtime's label sits on the pod template: spec.trainer.env is dropped.",
        missing_ancestor_label,
        ("overrides-not-applied", "missing-ancestor-label"),
        "overrides-not-applied",
        "missing-ancestor-label",
    ),
    Story(
        "env-in-overrides-rejected",
        "env under podTemplateOverrides: the webhook rejects the TrainJob.",
        env_in_overrides_rejected,
        ("env-in-pod-template-overrides",),
    ),
    Story(
        "weights-only-checkpoint",
        "A hand-rolled loop saves model.state_dict() only.",
        weights_only,
        ("weights-only-checkpoint",),
    ),
    Story(
        "rwo-multi-attach",
        "After suspend/resume the pod lands on another node and waits on Multi-Attach.",
        rwo_multi_attach,
        ("volume-attach-blocked", "rwo-still-attached"),
        "volume-attach-blocked",
        "rwo-still-attached",
    ),
    Story(
        "rwo-multi-node",
        "Two nodes share a ReadWriteOnce checkpoint PVC.",
        rwo_multi_node,
        ("volume-attach-blocked", "rwo-multi-node"),
        "volume-attach-blocked",
        "rwo-multi-node",
    ),
    Story(
        "disk-full",
        "No save_total_limit: the PVC fills at checkpoint-700.",
        disk_full,
        ("checkpoint-disk-full", "save-total-limit-unset"),
        "checkpoint-disk-full",
        "save-total-limit-unset",
    ),
    Story(
        "final-checkpoint-missing",
        "bash -ec with a here-document is PID 1: SIGTERM never reaches Python.",
        final_checkpoint_missing,
        ("final-checkpoint-missing", "sigterm-not-forwarded", "grace-period-too-short"),
        "final-checkpoint-missing",
        "sigterm-not-forwarded",
    ),
    Story(
        "llamafactory-overwrite-output-dir",
        "LlamaFactory with overwrite_output_dir: true starts over.",
        llamafactory_overwrite,
        ("fresh-start-after-restart", "llamafactory-overwrite-output-dir"),
        "fresh-start-after-restart",
        "llamafactory-overwrite-output-dir",
    ),
    Story(
        "megatron-finetune-flags",
        "The MindSpeed recipe's --finetune and --load base weights restart at 0.",
        megatron_finetune,
        ("fresh-start-after-restart", "megatron-resume-disabled"),
        "fresh-start-after-restart",
        "megatron-resume-disabled",
    ),
    Story(
        "no-failure-policy",
        "No failurePolicy: the first Job failure fails the TrainJob.",
        no_failure_policy,
        ("job-failed-without-restart", "no-failure-policy"),
        "job-failed-without-restart",
        "no-failure-policy",
    ),
    Story(
        "resume-true-hardcoded",
        "resume_from_checkpoint=True crashes the first run, every restart.",
        resume_true_hardcoded,
        ("resume-crashed", "restarts-exhausted", "resume-true-hardcoded"),
        "resume-crashed",
        "resume-true-hardcoded",
    ),
]
