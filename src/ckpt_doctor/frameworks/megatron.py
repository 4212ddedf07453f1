"""Megatron-LM and MindSpeed-LLM: `--save`, `--load`, `--save-interval`.

Checkpoints are `{save}/iter_{N:07d}/`; after a barrier rank 0 writes the tracker
`{save}/latest_checkpointed_iteration.txt` (the iteration, or `release`), the pointer the resume
reads. `--finetune` and `--no-load-optim`/`--no-load-rng` make a restart load base weights at
iteration 0 (knowledge: guide-and-frameworks.md §4.4).
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
    Pick,
    Pointer,
    Tool,
)


def _is_config(data: Mapping[str, Any], keys: set[str]) -> bool:
    return bool(keys & {"save", "load", "save-interval", "save_interval", "tensor-model-parallel-size"}) and bool(
        keys & {"finetune", "no-load-optim", "load", "tensor-model-parallel-size", "pretrained-checkpoint"}
    )


FRAMEWORK = Framework(
    name="megatron",
    title="Megatron/MindSpeed",
    order=40,
    summary="Megatron-LM's training loop and MindSpeed-LLM on it",
    launch=Launch(
        tools=(Tool("msrun"),),
        imports=("megatron", "mindspeed_llm"),
        scripts=r"(?:pretrain|posttrain|finetune)_(?:gpt|llama|bert|t5|mamba|vlm)\w*\.py$|megatron",
        arg_keys=frozenset(
            {"tensor-model-parallel-size", "save-interval", "micro-batch-size", "pipeline-model-parallel-size"}
        ),
    ),
    logs=Logs(
        files=("megatron.yaml",),
        names=("megatron",),
        path_steps=("iter_",),
        load_frames=(r"/megatron/training/checkpointing\.py:_?load_(?:checkpoint|base_checkpoint|args_from_checkpoint)$",),
    ),
    layout=Layout(
        names=(CheckpointName("iter_{step:07d}", "dir", note="mp_rank_XX[_YYY]/model_optim_rng.pt or torch_dist"),),
        files=("mp_rank_*/model_optim_rng.pt|.metadata",),
        pointers=(
            Pointer(
                "latest_checkpointed_iteration.txt",
                "step",
                note="the iteration or `release`; written by rank 0 after the barrier",
            ),
        ),
        atomic="pointer",
    ),
    pick=Pick(
        "pointer",
        True,
        "Megatron reads the step from latest_checkpointed_iteration.txt",
        "megatron.training.checkpointing.read_metadata",
        rank=30,
    ),
    config=Config(
        _is_config,
        rank=60,
        keys={
            "save": "where iter_N directories are written",
            "load": "where the resume reads; the same directory as save to resume",
            "save-interval": "the save cadence in iterations",
            "finetune": "load weights only, iteration 0: forbidden for a resume",
            "no-load-optim": "skip the optimizer state on load",
            "no-load-rng": "skip the RNG state on load",
            "pretrained-checkpoint": "the base weights when load holds no checkpoint",
        },
    ),
    failures=(
        Failure(
            "WARNING: could not find the metadata file {load}/latest_checkpointed_iteration.txt",
            "no tracker: the run starts from random weights",
            "mg-no-tracker",
        ),
        Failure(
            ">> '--exit-on-missing-checkpoint' is set but no checkpoint was found",
            "the resume found nothing and stopped",
            "mg-exit-on-missing",
        ),
    ),
)
