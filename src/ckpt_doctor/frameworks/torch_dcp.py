"""torch.distributed.checkpoint (DCP): `dcp.save` / `dcp.load` with `checkpoint_id=<dir>`.

A checkpoint directory holds per-rank `__{rank}_{i}.distcp` files and `.metadata`, which
`_FileSystemWriter.finish()` writes last (temporary name, fsync, rename): a directory without
`.metadata` is incomplete; a loop that checks for it skips a half-written newest save
(knowledge: platform-signals-and-layouts.md §3). Launched by torchrun (see torchrun.py).
"""

from __future__ import annotations

import ast
from typing import Any

from ckpt_doctor.facts.program.python.facts import Call, Discovery, StateIO
from ckpt_doctor.frameworks.spec import (
    CheckpointName,
    Failure,
    Framework,
    IORecogniser,
    Launch,
    Layout,
    Logs,
    Marker,
    Pick,
    PythonHooks,
)

# -- the Python reader's hooks ---------------------------------------------------------------------
# `dcp.save(state_dict, checkpoint_id=...)` / `dcp.load(...)` (and the older save_state_dict /
# load_state_dict, async_save): what the state dict holds.
_NAMES = ("save", "async_save", "save_state_dict", "load", "load_state_dict")


def _is_dcp(r: Any, node: ast.Call) -> bool:
    return (r.qual(node.func) or "").startswith("torch.distributed.checkpoint")  # type: ignore[no-any-return]


def _discoveries(r: Any, calls: dict[str, list[Call]]) -> list[Discovery]:
    out: list[Discovery] = []
    for node, _s, _f in [*r.by_attr.get("load", ()), *r.by_attr.get("load_state_dict", ())]:
        if _is_dcp(r, node):
            a = next((k.value for k in node.keywords if k.arg == "checkpoint_id"), None)
            out.append(Discovery("framework", r.site(node), None, r.seg(a) or None, False, "dcp.load"))
    return out


def _io_call(r: Any, node: ast.Call, stmt: ast.AST | None, func: str, name: str) -> StateIO | None:
    if not _is_dcp(r, node):
        return None
    op = "save" if "save" in name else "load"
    sd = node.args[0] if node.args else next((k.value for k in node.keywords if k.arg == "state_dict"), None)
    cid = next((k.value for k in node.keywords if k.arg == "checkpoint_id"), None)
    return r.state_of(op, f"dcp.{op}", node, sd, cid, func)  # type: ignore[no-any-return]


FRAMEWORK = Framework(
    name="torch-dcp",
    title="torch.distributed.checkpoint",
    order=90,
    summary="torch.distributed.checkpoint in the program's own loop",
    launch=Launch(imports=("torch.distributed.checkpoint",)),
    logs=Logs(
        files=("torch-dcp.yaml",),
        names=("torch-dcp",),
        load_frames=(r"/torch/distributed/checkpoint/state_dict_loader\.py:",),
    ),
    layout=Layout(
        names=(CheckpointName("*", "dir", note="the program names the directory (checkpoint_id)"),),
        files=("__{rank}_{n}.distcp",),
        markers=(
            Marker(
                ".metadata",
                "complete",
                "inside",
                written_last=True,
                note="written last by the coordinator; deleted first when a save overwrites",
            ),
            Marker(
                "__{rank}.metadata", "complete", "inside", written_last=True, note="no-collectives mode", always=False
            ),
        ),
        atomic="marker",
        contains="*.distcp|.metadata|__{rank}.metadata",
    ),
    pick=Pick(
        "program",
        True,
        "dcp.load reads the directory the program names, whole or not at all",
        "torch.distributed.checkpoint.load",
        rank=95,
    ),
    failures=(
        Failure(
            "CheckpointException ... metadata is None",
            "the directory has no .metadata: a save that died",
            "dcp-checkpoint-exception",
        ),
    ),
    library=True,
    python=PythonHooks(rank=50, discoveries=_discoveries, io_calls=(IORecogniser(_NAMES, 30, _io_call),)),
)
