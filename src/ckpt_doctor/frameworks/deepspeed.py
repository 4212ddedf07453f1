"""DeepSpeed: `engine.save_checkpoint(save_dir, tag)` / `load_checkpoint(load_dir)`.

Checkpoints are `{save_dir}/{tag}/` (default tag `global_step{N}`); after every rank's writes rank 0
writes the pointer `{save_dir}/latest` (the tag's name, a plain write), so a half-written newest tag
leaves `latest` naming the previous one and `load_checkpoint` without a tag reads `latest`.
Under HF Trainer the save directory is HF's `checkpoint-N`: `global_stepN` is a tag *inside* it
(knowledge: platform-signals-and-layouts.md §3).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Mapping
from typing import Any

from ckpt_doctor.facts.program.python.facts import Call, Discovery, StateIO
from ckpt_doctor.facts.program.python.parts import _KEY_PARTS
from ckpt_doctor.frameworks import lightning
from ckpt_doctor.frameworks.spec import (
    CheckpointName,
    Config,
    Framework,
    IORecogniser,
    Launch,
    Layout,
    Logs,
    Pick,
    Pointer,
    PythonHooks,
    Tool,
)


def _is_config(data: Mapping[str, Any], keys: set[str]) -> bool:
    return bool(keys & {"zero_optimization", "train_micro_batch_size_per_gpu", "train_batch_size"}) and not (
        keys & {"output_dir"}
    )


# -- the Python reader's hooks ---------------------------------------------------------------------
# `deepspeed.initialize(...)`, `engine.save_checkpoint(dir, tag, client_state=...)` and
# `engine.load_checkpoint(dir, tag, load_optimizer_states=..., load_module_only=...)`; a load
# without a tag reads `latest`.


def engine_call(r: Any, node: ast.Call) -> bool:
    """A method call on a DeepSpeed engine (not a Lightning trainer's save_checkpoint)."""
    f = node.func
    if not isinstance(f, ast.Attribute):
        return False
    recv = r.seg(f.value, 80)
    if re.search(r"trainer", recv, re.I) and lightning.imported(r):
        return False
    return "deepspeed" in r.imports or bool(re.search(r"engine|deepspeed|\bds_", recv, re.I))


def _calls(r: Any, node: ast.Call, stmt: ast.AST | None, func: str, name: str, out: dict[str, list[Call]]) -> bool:
    if name == "initialize" and (r.qual(node.func) or "").startswith("deepspeed"):
        out["deepspeed.initialize"].append(r._make_call(node, func))
        return True
    return False


def _discoveries(r: Any, calls: dict[str, list[Call]]) -> list[Discovery]:
    out: list[Discovery] = []
    for node, _s, func in r.by_attr.get("load_checkpoint", ()):
        if not engine_call(r, node):
            continue
        tag = node.args[1] if len(node.args) > 1 else next((k.value for k in node.keywords if k.arg == "tag"), None)
        tv = r.value(tag, func, node) if tag is not None else None
        if tv is None or (tv.known and tv.const is None):  # no tag: DeepSpeed reads `latest`
            a = node.args[0] if node.args else next((k.value for k in node.keywords if k.arg == "load_dir"), None)
            out.append(Discovery("framework", r.site(node), "latest", r.seg(a) or None, False, "load_checkpoint"))
    return out


def _checkpoint(r: Any, node: ast.Call, stmt: ast.AST | None, func: str, name: str) -> StateIO | None:
    if not isinstance(node.func, ast.Attribute) or not engine_call(r, node):
        return None
    op = "save" if name == "save_checkpoint" else "load"
    kw = {k.arg: k.value for k in node.keywords if k.arg}
    a = node.args[0] if node.args else next(iter(kw.values()), None)
    weights = False
    if op == "load":
        for k in ("load_optimizer_states", "load_lr_scheduler_states"):
            v = kw.get(k)
            if isinstance(v, ast.Constant) and v.value is False:
                weights = True
        v = kw.get("load_module_only")
        if isinstance(v, ast.Constant) and v.value is True:
            weights = True
    keys: tuple[str, ...] = ()
    cs = kw.get("client_state") or kw.get("client_sd")
    if cs is not None:
        _p, keys, _b = r._saved(cs, func, node, 0)
    return StateIO(
        op,
        f"deepspeed.{name}",
        "weights" if weights else "full",
        keys,
        r.site(node),
        ("model",) if weights else ("model", "optimizer", "scheduler"),
        _KEY_PARTS if weights else (),
        r.seg(a) or None,
    )


FRAMEWORK = Framework(
    name="deepspeed",
    title="DeepSpeed",
    order=70,
    summary="DeepSpeed's engine, alone or under HF Trainer / accelerate",
    launch=Launch(
        tools=(
            Tool(
                "deepspeed",
                role="launcher",
                flags=frozenset({"--autotuning", "--force_multi", "--no_local_rank", "--bind_cores_to_rank"}),
            ),
        ),
        imports=("deepspeed",),
        config_files=("ds_config.json",),
    ),
    logs=Logs(
        files=("deepspeed.yaml",),
        names=("deepspeed",),
        path_steps=("global_step_?",),
        load_frames=(r"/deepspeed/runtime/engine\.py:_?load_(?:checkpoint|module_state_dict|zero_checkpoint)$",),
        # recordings deepspeed-0.19-*: only the program's own prints show
        quiet="DeepSpeed prints neither its steps nor its saves at its default log level",
    ),
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
        # ZeRO writes the optimizer's shards beside the model states; without ZeRO they are inside them (the
        # recordings' runs), so only the model states are required
        files=("mp_rank_*_model_states.pt|layer_*-model_*-model_states.pt",),
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
    python=PythonHooks(
        rank=40,
        calls=_calls,
        discoveries=_discoveries,
        io_calls=(IORecogniser(("save_checkpoint", "load_checkpoint"), 101, _checkpoint),),
    ),
)
