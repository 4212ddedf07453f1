"""HuggingFace transformers `Trainer` (and TRL's trainers, which are Trainers).

Layout: `checkpoint-{N}/` in `output_dir`; `_save_checkpoint` writes the model, then optimizer,
scheduler and RNG state, and "finally the Trainer state", so `trainer_state.json` is about the last
file written. Not atomic (the temporary-directory rename was reverted in 2025). `get_last_checkpoint`
picks the highest N with no completeness check: a half-written newest directory makes every
restart fail with `FileNotFoundError ... checkpoint-N/trainer_state.json`.
(knowledge: platform-signals-and-layouts.md §3, guide-and-frameworks.md §4.2)
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ckpt_doctor.frameworks.spec import (
    CheckpointName,
    Config,
    Failure,
    Framework,
    Launch,
    Layout,
    Logs,
    Marker,
    Pick,
    PythonHooks,
)

# modules whose `*Trainer` is an HF Trainer (the Python reader's vocabulary)
TRAINER_MODULES = ("transformers", "trl", "peft", "llamafactory", "unsloth", "axolotl", "setfit", "optimum")
TRAINER_NAMES = ("Trainer", "Seq2SeqTrainer", "TrainingArguments", "Seq2SeqTrainingArguments")
TRL_CONFIGS = frozenset(
    {
        "SFTConfig",
        "DPOConfig",
        "GRPOConfig",
        "PPOConfig",
        "ORPOConfig",
        "KTOConfig",
        "CPOConfig",
        "RewardConfig",
        "RLOOConfig",
        "OnlineDPOConfig",
        "BCOConfig",
        "GKDConfig",
        "PRMConfig",
        "XPOConfig",
        "NashMDConfig",
        "AlignPropConfig",
        "DDPOConfig",
        "IterativeSFTConfig",
    }
)
NOT_TRAINING_CONFIGS = frozenset({"ModelConfig", "DatasetMixtureConfig", "ScriptArguments", "ModelArguments"})


def _is_config(data: Mapping[str, Any], keys: set[str]) -> bool:
    return bool(keys & {"output_dir", "per_device_train_batch_size", "save_steps", "save_strategy"})


def _evidence(facts: Any) -> str | None:
    """transformers with its Trainer in sight (a bare `import transformers` is a model library)."""
    if facts.uses("transformers") and (
        any(facts.calls.get(k) for k in ("TrainingArguments", "Trainer"))
        or any(f"transformers.{n}" in facts.imports for n in TRAINER_NAMES)
    ):
        return "transformers Trainer"
    return None


LAYOUT = Layout(
    names=(CheckpointName("checkpoint-{step}", "dir", note="PREFIX_CHECKPOINT_DIR, regex ^checkpoint\\-(\\d+)$"),),
    files=(
        "model.safetensors|model-*-of-*.safetensors|adapter_model.safetensors|pytorch_model.bin",
        "optimizer.pt",
        "scheduler.pt",
        "rng_state.pth|rng_state_{rank}.pth",
        "trainer_state.json",
        "training_args.bin",
    ),
    markers=(
        Marker(
            "trainer_state.json",
            "complete",
            "inside",
            written_last=True,
            note="written after the weights and optimizer state: absent in a save that died",
        ),
        Marker(
            "checkpoint-is-incomplete.txt.node-{node}-rank-{rank}",
            "incomplete",
            "inside",
            note="Kubeflow SDK (Red Hat) just-in-time checkpointing marks a save in progress",
        ),
    ),
    atomic="no",
    note="FSDP adds pytorch_model_fsdp_0/ and optimizer_0/ (DCP); DeepSpeed adds global_step{N}/ and latest",
)

FRAMEWORK = Framework(
    name="hf-trainer",
    title="HF Trainer",
    order=60,
    summary="transformers.Trainer and the trainers built on it (TRL)",
    launch=Launch(
        imports=("trl",),
        python_calls=("TrainingArguments", "Trainer", "get_last_checkpoint"),
    ),
    logs=Logs(files=("hf-trainer.yaml",), names=("hf-trainer",), path_steps=("checkpoint-",)),
    layout=LAYOUT,
    pick=Pick(
        "highest-step",
        False,
        "HF Trainer picks checkpoint-N by its number (get_last_checkpoint)",
        "transformers.trainer_utils.get_last_checkpoint",
        rank=10,
    ),
    config=Config(
        _is_config,
        rank=70,
        keys={
            "output_dir": "where checkpoint-N directories are written",
            "save_strategy": "no | steps | epoch | best",
            "save_steps": "the save cadence in steps",
            "save_total_limit": "how many checkpoints are kept (older ones deleted)",
            "save_only_model": "True: weights only, not resumable",
            "resume_from_checkpoint": "a path, True (get_last_checkpoint) or None (fresh start)",
            "overwrite_output_dir": "ignored by Trainer itself; LlamaFactory skips its resume",
        },
    ),
    failures=(
        Failure(
            "ValueError: No valid checkpoint found in output directory ({output_dir})",
            "train(resume_from_checkpoint=True) found no checkpoint-N",
            "hf-no-valid-checkpoint",
        ),
        Failure(
            "Can't find a valid checkpoint at {path}", "the resume path holds no checkpoint", "hf-cant-find-checkpoint"
        ),
        Failure(
            "FileNotFoundError: ... checkpoint-{N}/trainer_state.json",
            "the newest checkpoint is half-written and get_last_checkpoint picked it",
            "hf-missing-trainer-state",
        ),
    ),
    python=PythonHooks(evidence=_evidence),
    saves_by_default=True,
)
