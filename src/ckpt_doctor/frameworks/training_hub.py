"""training_hub (Red Hat AI Innovation) and its SFT backend instructlab.training.

`checkpoint_at_epoch` saves HF-format weights only (`hf_format/samples_N`, not resumable);
`accelerate_full_state_at_epoch: true` saves `full_state/..._N` with `training_metadata.json`, and
`main_ds.py` always loads the entry with the highest number after the last `_`
(knowledge: guide-and-frameworks.md §4.5).
"""

from __future__ import annotations

import ast
from typing import Any

from ckpt_doctor.facts.program.python.facts import Call, Discovery, StateIO
from ckpt_doctor.facts.program.python.parts import _KEY_PARTS
from ckpt_doctor.frameworks.spec import (
    CheckpointName,
    Failure,
    Framework,
    Launch,
    Layout,
    Logs,
    Marker,
    Pick,
    PythonHooks,
)

# -- the Python reader's hooks ---------------------------------------------------------------------
# `training_hub.sft(ckpt_output_dir=..., accelerate_full_state_at_epoch=...)`: it resumes by itself
# from full_state/, which exists only with accelerate_full_state_at_epoch.


def _calls(r: Any, node: ast.Call, stmt: ast.AST | None, func: str, name: str, out: dict[str, list[Call]]) -> bool:
    if name == "sft" and (
        (r.qual(node.func) or "").startswith("training_hub") or any(k.arg == "ckpt_output_dir" for k in node.keywords)
    ):
        out["sft"].append(r._make_call(node, func))
        return True
    return False


def _discoveries(r: Any, calls: dict[str, list[Call]]) -> list[Discovery]:
    out: list[Discovery] = []
    for c in calls.get("sft", ()):
        d = c.kwargs.get("ckpt_output_dir")
        out.append(Discovery("framework", c.site, "full_state/*", d.source if d else None, False, "sft"))
    return out


def _io(r: Any, calls: dict[str, list[Call]]) -> list[StateIO]:
    out: list[StateIO] = []
    for c in calls.get("sft", ()):
        v = c.kwargs.get("accelerate_full_state_at_epoch")
        d = c.kwargs.get("ckpt_output_dir")
        # absent: the backend default differs between instructlab.training versions
        content = ("full" if v.const else "weights") if v is not None and v.known else "unknown"
        parts = {"full": ("model", "optimizer", "scheduler", "step"), "weights": ("model",)}.get(content, ())
        out.append(
            StateIO(
                "save",
                "training_hub",
                content,
                (),
                c.site,
                parts,
                _KEY_PARTS if content == "weights" else (),
                d.source if d else None,
            )
        )
    return out


FRAMEWORK = Framework(
    name="training-hub",
    title="training_hub",
    order=20,
    summary="training_hub.sft and instructlab.training",
    launch=Launch(
        modules=("instructlab.training.main_ds", "training_hub"),
        imports=("training_hub", "instructlab.training"),
        python_calls=("sft",),
    ),
    logs=Logs(files=("training-hub.yaml",), names=("training-hub",)),
    layout=Layout(
        names=(
            CheckpointName("full_state/*_{n}", "dir", note="accelerate save_state; n counts samples or epochs"),
            CheckpointName("hf_format/samples_{n}", "dir", note="weights only: not resumable"),
        ),
        files=("training_metadata.json",),
        markers=(
            Marker(
                "training_metadata.json", "complete", "inside", note="current_epoch and samples_seen of the saved state"
            ),
        ),
        atomic="no",
    ),
    pick=Pick(
        "highest-step",
        False,
        "training_hub picks the full_state entry with the highest number",
        "instructlab.training.utils.load_latest_full_state",
        rank=40,
    ),
    failures=(
        Failure(
            "No checkpoints to load from: {dir}", "full_state/ exists but is empty: a fresh start", "th-no-checkpoints"
        ),
    ),
    saves_by_default=True,
    python=PythonHooks(rank=60, calls=_calls, discoveries=_discoveries, io=_io),
)
