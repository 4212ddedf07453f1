"""HuggingFace accelerate: `accelerator.save_state` / `load_state` in the program's own loop.

No marker and not atomic: a complete state has every expected file per rank. With
`ProjectConfiguration(automatic_checkpoint_naming=True)` directories are `checkpoints/checkpoint_{i}`
where i counts saves, not steps; `load_state()` without a directory loads the newest of them
(knowledge: platform-signals-and-layouts.md §3).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Mapping
from typing import Any

from ckpt_doctor.facts.program.python.facts import Call, Discovery, StateIO
from ckpt_doctor.facts.program.python.parts import _KEY_PARTS
from ckpt_doctor.frameworks.spec import (
    CheckpointName,
    Config,
    Framework,
    IORecogniser,
    Launch,
    Layout,
    Logs,
    Pick,
    PythonHooks,
    Tool,
)


def _is_config(data: Mapping[str, Any], keys: set[str]) -> bool:
    return bool(keys & {"compute_environment", "distributed_type"})


# -- the Python reader's hooks ---------------------------------------------------------------------
# `Accelerator(project_dir=...)`, `accelerator.save_state`/`load_state` (full state),
# `accelerator.save_model` (weights), `accelerator.save(obj, f)`; `load_state()` without a directory
# loads the newest automatic checkpoint.


def is_accelerate(r: Any, node: ast.Call) -> bool:
    """A method call on an Accelerator (by its receiver's name, its qualified name, or the import)."""
    f = node.func
    if not isinstance(f, ast.Attribute):
        return False
    recv = r.seg(f.value, 80)
    if re.search(r"accel", recv, re.I):
        return True
    q = r.qual(f) or ""
    if q.startswith("accelerate"):
        return True
    return "accelerate" in r.imports and not re.search(r"trainer|fabric", recv, re.I)


def _calls(r: Any, node: ast.Call, stmt: ast.AST | None, func: str, name: str, out: dict[str, list[Call]]) -> bool:
    if name == "Accelerator":
        out["Accelerator"].append(r._make_call(node, func))
        return True
    return False


def _project_dir(calls: dict[str, list[Call]]) -> str | None:
    for c in calls.get("Accelerator", ()):
        for k in ("project_dir", "logging_dir"):
            if k in c.kwargs:
                return c.kwargs[k].source
    return None


def _discoveries(r: Any, calls: dict[str, list[Call]]) -> list[Discovery]:
    out: list[Discovery] = []
    for node, _s, _f in r.by_attr.get("load_state", ()):
        if is_accelerate(r, node) and not node.args and not any(k.arg == "input_dir" for k in node.keywords):
            out.append(Discovery("framework", r.site(node), "checkpoint_*", _project_dir(calls), False, "load_state"))
    return out


def _save(r: Any, node: ast.Call, stmt: ast.AST | None, func: str, name: str) -> StateIO | None:
    """`accelerator.save(obj, f)`: what `obj` holds, like torch.save."""
    f = node.func
    if not (isinstance(f, ast.Attribute) and re.search(r"accel", r.seg(f.value, 60), re.I)):
        return None
    q = r.qual(f) or ""
    return r.saved_object(node, func, "torch.save" if q.startswith("torch") else "accelerate.save")  # type: ignore[no-any-return]


def _state(r: Any, node: ast.Call, stmt: ast.AST | None, func: str, name: str) -> StateIO | None:
    if not isinstance(node.func, ast.Attribute) or not is_accelerate(r, node):
        return None
    op = "save" if name == "save_state" else "load"
    a = (
        node.args[0]
        if node.args
        else next((k.value for k in node.keywords if k.arg in ("output_dir", "input_dir")), None)
    )
    return StateIO(
        op,
        f"accelerate.{name}",
        "full",
        (),
        r.site(node),
        ("model", "optimizer", "rng", "scheduler"),
        (),
        r.seg(a) or None,
    )


def _save_model(r: Any, node: ast.Call, stmt: ast.AST | None, func: str, name: str) -> StateIO | None:
    f = node.func
    if not (isinstance(f, ast.Attribute) and re.search(r"accel", r.seg(f.value, 80), re.I)):
        return None
    a = node.args[1] if len(node.args) > 1 else None
    return StateIO(
        "save", "accelerate.save_model", "weights", (), r.site(node), ("model",), _KEY_PARTS, r.seg(a) or None
    )


FRAMEWORK = Framework(
    name="accelerate",
    title="accelerate",
    order=80,
    summary="accelerate's Accelerator, driven by the program's own loop",
    launch=Launch(
        tools=(
            Tool(
                "accelerate",
                frozenset({"launch"}),
                role="launcher",
                skip=("launch",),
                flags=frozenset(
                    {
                        "--multi_gpu",
                        "--cpu",
                        "--use_deepspeed",
                        "--use_fsdp",
                        "--use_megatron_lm",
                        "--debug",
                        "--quiet",
                        "-q",
                    }
                ),
            ),
        ),
        imports=("accelerate",),
        config_files=("default_config.yaml",),
    ),
    logs=Logs(
        files=("accelerate.yaml",),
        names=("accelerate",),
        # recordings accelerate-1.15-partial-save: load_state -> load_accelerator_state -> torch.load
        load_frames=(r"/accelerate/(?:accelerator\.py:load_state|checkpointing\.py:load_accelerator_state)$",),
    ),
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
        parts={
            "weights": "model.safetensors|pytorch_model.bin|model_{n}.safetensors",
            "optimizer": "optimizer.bin|optimizer_{n}.bin",
            "scheduler": "scheduler.bin|scheduler_{n}.bin",
            "rng": "random_states_{rank}.pkl",
        },
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
    python=PythonHooks(
        rank=30,
        calls=_calls,
        discoveries=_discoveries,
        io_calls=(
            IORecogniser(("save",), 11, _save),
            IORecogniser(("save_state", "load_state"), 50, _state),
            IORecogniser(("save_model",), 60, _save_model),
        ),
    ),
)
