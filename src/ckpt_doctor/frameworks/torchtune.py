"""torchtune: `tune run <recipe> --config cfg.yaml`, checkpoints per epoch.

`{output_dir}/epoch_{N}/` holds the weights, `{output_dir}/recipe_state/recipe_state.pt` the
optimizer, data loader and RNG state with `epochs_run`; `resume_from_checkpoint: True` resumes from
the recipe state. Not atomic, no marker (knowledge: platform-signals-and-layouts.md §3).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ckpt_doctor.frameworks.spec import (
    Bar,
    CheckpointName,
    Config,
    Failure,
    Framework,
    Launch,
    Layout,
    Logs,
    Pick,
    Tool,
)


def _is_config(data: Mapping[str, Any], keys: set[str]) -> bool:
    return any(isinstance(v, dict) and "_component_" in v for v in data.values())


FRAMEWORK = Framework(
    name="torchtune",
    title="torchtune",
    order=30,
    summary="torchtune recipes",
    launch=Launch(
        tools=(Tool("tune", frozenset({"run"}), role="trainer"),),
        modules=("torchtune",),
        imports=("torchtune",),
    ),
    logs=Logs(
        files=("torchtune.yaml",),
        names=("torchtune",),
        load_frames=(r"/torchtune/training/checkpointing/.*:load_checkpoint$",),
    ),
    layout=Layout(
        names=(
            CheckpointName("epoch_{epoch}", "dir", note="model-{i}-of-{n} shards, adapter_model.*"),
            CheckpointName("step_{step}", "dir", note="step-based checkpointing"),
            CheckpointName("recipe_state/recipe_state.pt", "file", note="what the resume reads"),
        ),
        files=("recipe_state/recipe_state.pt",),
        atomic="no",
    ),
    pick=Pick(
        "highest-step",
        False,
        "torchtune resumes from the checkpointer's recipe state",
        "torchtune.training.checkpointing._utils.get_recipe_checkpoint_path",
        rank=60,
    ),
    config=Config(
        _is_config,
        rank=20,
        keys={
            "checkpointer.output_dir": "where epoch_N directories are written",
            "resume_from_checkpoint": "True: resume from the recipe state",
        },
    ),
    failures=(
        Failure(
            "recipe_state.pt ... missing keys", "the recipe state does not match the recipe", "tt-bad-recipe-state"
        ),
    ),
    bars=(Bar(r"(\d+)\|(\d+)\|", epoch_group=1, epoch_offset=-1, step_group=2),),
    saves_by_default=True,
)
