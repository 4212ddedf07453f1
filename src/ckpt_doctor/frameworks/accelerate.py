"""HuggingFace accelerate: `accelerator.save_state` / `load_state` in the program's own loop.

No marker and not atomic: a complete state has every expected file per rank. With
`ProjectConfiguration(automatic_checkpoint_naming=True)` directories are `checkpoints/checkpoint_{i}`
where i counts saves, not steps; `load_state()` without a directory loads the newest of them
(knowledge: platform-signals-and-layouts.md §3).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ckpt_doctor.frameworks.spec import CheckpointName, Config, Framework, Launch, Layout, Logs, Pick, Tool


def _is_config(data: Mapping[str, Any], keys: set[str]) -> bool:
    return bool(keys & {"compute_environment", "distributed_type"})


FRAMEWORK = Framework(
    name="accelerate",
    title="accelerate",
    order=80,
    summary="accelerate's Accelerator, driven by the program's own loop",
    launch=Launch(
        tools=(Tool("accelerate", frozenset({"launch"}), role="launcher", skip=("launch",)),),
        imports=("accelerate",),
        config_files=("default_config.yaml",),
    ),
    logs=Logs(files=("accelerate.yaml",), names=("accelerate",)),
    layout=Layout(
        names=(
            CheckpointName("checkpoint_{n}", "dir", note="automatic_checkpoint_naming: n counts saves"),
            CheckpointName("step_{step}", "dir", note="accelerate's examples"),
            CheckpointName("epoch_{epoch}", "dir", note="accelerate's examples"),
        ),
        files=(
            "model.safetensors|pytorch_model.bin|model_{n}.safetensors",
            "optimizer.bin|optimizer_{n}.bin",
            "scheduler.bin|scheduler_{n}.bin",
            "random_states_{rank}.pkl",
        ),
        atomic="no",
        note="sampler.bin, scaler.pt and custom_checkpoint_{i}.pkl when there are such objects",
    ),
    pick=Pick(
        "program",
        False,
        "accelerate's load_state() loads the newest checkpoint_N of its project_dir",
        "accelerate.Accelerator.load_state",
        rank=90,
    ),
    config=Config(_is_config, rank=40, keys={"distributed_type": "how `accelerate launch` starts the processes"}),
    library=True,
)
