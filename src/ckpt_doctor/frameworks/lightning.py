"""PyTorch Lightning: `ModelCheckpoint` files and `trainer.fit(ckpt_path=...)`.

A checkpoint is one *file* (`epoch={E}-step={N}.ckpt`, `last.ckpt`, version suffix `last-v1.ckpt`)
written whole (`_atomic_save`); sharded strategies write DCP directories instead. Resume with
`ckpt_path="last"` loads `last.ckpt`. On SIGTERM it logs `Received SIGTERM` and may exit 0
without saving (knowledge: platform-signals-and-layouts.md §3; issue 19).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ckpt_doctor.frameworks.spec import Bar, CheckpointName, Config, Framework, Launch, Layout, Logs, Marker, Pick, Tool


def _is_config(data: Mapping[str, Any], keys: set[str]) -> bool:
    return isinstance(data.get("trainer"), dict) and (isinstance(data.get("model"), dict) or "ckpt_path" in keys)


FRAMEWORK = Framework(
    name="lightning",
    title="PyTorch Lightning",
    order=50,
    summary="lightning.pytorch (and pytorch_lightning)",
    launch=Launch(
        tools=(Tool("lightning", frozenset({"run"})),),
        imports=("lightning", "pytorch_lightning"),
        python_calls=("ModelCheckpoint", "lightning.Trainer"),
    ),
    logs=Logs(files=("lightning.yaml",), names=("lightning",)),
    layout=Layout(
        names=(
            CheckpointName("epoch={epoch}-step={step}.ckpt", "file", note="ModelCheckpoint's default filename"),
            CheckpointName("last.ckpt", "file", note="save_last=True; save_last='link' makes it a symlink"),
            CheckpointName("last-v{n}.ckpt", "file", note="a new last.ckpt beside a stale one"),
            CheckpointName("*step={step}*.ckpt", "file", note="a custom filename with the step"),
        ),
        markers=(
            Marker(
                "{name}-unfinished",
                "incomplete",
                "beside",
                note="NeMo's ModelCheckpoint: created before the save, removed after",
            ),
        ),
        atomic="file",
    ),
    pick=Pick(
        "named",
        True,
        "Lightning's ckpt_path='last' names last.ckpt",
        "lightning.pytorch.trainer.connectors.checkpoint_connector",
        rank=50,
    ),
    config=Config(
        _is_config,
        rank=50,
        keys={
            "trainer.default_root_dir": "where checkpoints go without a dirpath",
            "ckpt_path": "last | best | a path: what fit() resumes from",
            "callbacks.ModelCheckpoint.dirpath": "where ModelCheckpoint writes",
        },
    ),
    bars=(Bar(r"Epoch (\d+)(?:/\d+)?$", epoch_group=1, step_from_postfix=True),),
    saves_by_default=True,
)
