"""DeepSpeed: `engine.save_checkpoint(save_dir, tag)` / `load_checkpoint(load_dir)`.

Checkpoints are `{save_dir}/{tag}/` (default tag `global_step{N}`); after every rank's writes rank 0
writes the pointer `{save_dir}/latest` (the tag's name, a plain write), so a half-written newest tag
leaves `latest` naming the previous one and `load_checkpoint` without a tag reads `latest`.
Under HF Trainer the save directory is HF's `checkpoint-N`: `global_stepN` is a tag *inside* it
(knowledge: platform-signals-and-layouts.md §3).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ckpt_doctor.frameworks.spec import CheckpointName, Config, Framework, Launch, Layout, Logs, Pick, Pointer, Tool


def _is_config(data: Mapping[str, Any], keys: set[str]) -> bool:
    return bool(keys & {"zero_optimization", "train_micro_batch_size_per_gpu", "train_batch_size"}) and not (
        keys & {"output_dir"}
    )


FRAMEWORK = Framework(
    name="deepspeed",
    title="DeepSpeed",
    order=70,
    summary="DeepSpeed's engine, alone or under HF Trainer / accelerate",
    launch=Launch(
        tools=(Tool("deepspeed", role="launcher"),),
        imports=("deepspeed",),
        config_files=("ds_config.json",),
    ),
    logs=Logs(files=("deepspeed.yaml",), names=("deepspeed",), path_steps=("global_step_?",)),
    layout=Layout(
        names=(
            CheckpointName("global_step{step}", "dir", note="the default tag, in the save directory"),
            CheckpointName(
                "global_step{step}",
                "dir",
                parent="hf-trainer:checkpoint-{step}",
                note="under HF Trainer: a tag inside checkpoint-N",
            ),
        ),
        files=("mp_rank_*_model_states.pt", "*zero_pp_rank_*_mp_rank_*_optim_states.pt"),
        pointers=(
            Pointer("latest", "tag", note="rank 0 writes it after every rank's files"),
            Pointer("latest_universal", "tag", note="the universal checkpoint's tag"),
        ),
        atomic="pointer",
    ),
    pick=Pick(
        "pointer",
        True,
        "DeepSpeed's load_checkpoint reads the tag named in latest",
        "deepspeed.runtime.engine.DeepSpeedEngine.load_checkpoint",
        rank=85,
    ),
    config=Config(
        _is_config,
        rank=30,
        keys={"zero_optimization": "the ZeRO stage", "checkpoint": "checkpoint options (tag validation, ...)"},
    ),
    library=True,
)
