"""PyTorch Lightning: `ModelCheckpoint` files and `trainer.fit(ckpt_path=...)`.

A checkpoint is one *file* (`epoch={E}-step={N}.ckpt`, `last.ckpt`, version suffix `last-v1.ckpt`)
written whole (`_atomic_save`); sharded strategies write DCP directories instead. Resume with
`ckpt_path="last"` loads `last.ckpt`. On SIGTERM it logs `Received SIGTERM` and may exit 0
without saving (knowledge: platform-signals-and-layouts.md §3; issue 19).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Mapping
from typing import Any

from ckpt_doctor.facts.program.python.facts import Call, Discovery, StateIO
from ckpt_doctor.facts.program.python.parts import _KEY_PARTS
from ckpt_doctor.frameworks.spec import (
    Bar,
    CheckpointName,
    Config,
    Framework,
    IORecogniser,
    Launch,
    Layout,
    Logs,
    Marker,
    Pick,
    PythonHooks,
    Tool,
)


def _is_config(data: Mapping[str, Any], keys: set[str]) -> bool:
    return isinstance(data.get("trainer"), dict) and (isinstance(data.get("model"), dict) or "ckpt_path" in keys)


# -- what its progress bar counts ----------------------------------------------------------------------------
def _one_batch_per_step(program: Any) -> bool:
    """Each batch is one optimizer step: the program's Lightning Trainer (in code or in a LightningCLI config)
    sets no gradient accumulation but 1, and nothing turns automatic optimization off. False when no Trainer
    is seen or a value cannot be known."""
    seen = False
    for part in getattr(program, "pythons", ()):
        if "automatic_optimization" in part.source.text:
            return False  # manual optimization: the program decides when it steps
        for call in part.facts.calls.get("lightning.Trainer", ()):
            seen = True
            v = call.kwargs.get("accumulate_grad_batches")
            if v is not None and not (v.known and v.const == 1):
                return False
    for part in getattr(program, "configs", ()):
        data = part.doc.data if isinstance(part.doc.data, dict) else {}
        trainer = data.get("trainer")
        if isinstance(trainer, dict):
            seen = True
            if trainer.get("accumulate_grad_batches", 1) != 1:
                return False
    return seen


def _bar_step(epoch: int | None, count: int | None, total: int | None, program: Any) -> int | None:
    """The `Epoch N` bar counts the batches of epoch N: in epoch 0, with one optimizer step per batch, that is
    the global step (recordings lightning-2.5-*: `Epoch 0: 24/40` at global step 24; lightning-2.6-* with rich:
    `Epoch 0/-2 ━━━ 40/40`). Later epochs' lengths are not in the log, and the `Training` bar of a run restarted
    mid-epoch does not say its epoch: no step."""
    if epoch != 0 or count is None or not _one_batch_per_step(program):
        return None
    return count


# -- the Python reader's hooks ---------------------------------------------------------------------
# `Trainer(...)` from lightning, `ModelCheckpoint(dirpath=..., save_weights_only=...)`,
# `trainer.fit(ckpt_path=...)`, `trainer.save_checkpoint`, `Model.load_from_checkpoint` (weights
# only) and Fabric's `fabric.save`/`fabric.load`.
_MODULES = ("lightning", "pytorch_lightning")
_FULL = ("model", "optimizer", "scheduler", "step")


class _Found:
    """What the calls reader found of Lightning in one program."""

    def __init__(self) -> None:
        self.trainer_names: set[str] = set()  # names bound to a lightning Trainer
        self.nodes: set[int] = set()  # id() of the Trainer(...) calls


def found(r: Any) -> _Found:
    return r.fw_state("lightning", _Found)  # type: ignore[no-any-return]


def imported(r: Any) -> bool:
    return "lightning" in r.imports or "pytorch_lightning" in r.imports


def is_lightning_trainer(r: Any, node: ast.Call, name: str) -> bool:
    """A `*Trainer(...)` call whose qualified name is Lightning's."""
    return (r.qual(node.func) or name).startswith(_MODULES)


def _calls(r: Any, node: ast.Call, stmt: ast.AST | None, func: str, name: str, out: dict[str, list[Call]]) -> bool:
    if name.endswith("Trainer"):
        if not is_lightning_trainer(r, node, name):
            return False
        if name == "Trainer":
            out["lightning.Trainer"].append(r._make_call(node, func))
            found(r).trainer_names.update(r._bound_names(node, stmt))
            found(r).nodes.add(id(node))
        return True
    if name == "ModelCheckpoint":
        out["ModelCheckpoint"].append(r._make_call(node, func))
        return True
    return False


def _methods(r: Any, out: dict[str, list[Call]]) -> None:
    """`trainer.fit(model, ckpt_path=...)`."""
    st = found(r)
    for node, _stmt, func in r.by_attr.get("fit", ()):
        f = node.func
        if not isinstance(f, ast.Attribute):
            continue
        recv = f.value
        recv_name = recv.id if isinstance(recv, ast.Name) else (recv.attr if isinstance(recv, ast.Attribute) else "")
        kws = {k.arg for k in node.keywords}
        if (
            recv_name in st.trainer_names
            or (isinstance(recv, ast.Call) and id(recv) in st.nodes)
            or "ckpt_path" in kws
            or ("trainer" in recv_name.lower() and imported(r))
        ):
            out["fit"].append(r._make_call(node, func, "fit"))


def _discoveries(r: Any, calls: dict[str, list[Call]]) -> list[Discovery]:
    out: list[Discovery] = []
    mc_dir = None
    for c in calls.get("ModelCheckpoint", ()):
        if "dirpath" in c.kwargs:
            mc_dir = c.kwargs["dirpath"].source
            break
    for c in calls.get("fit", ()):
        v = c.kwargs.get("ckpt_path")
        if v is not None and v.known and v.const in ("last", "best", "hpc", "registry"):
            pat = "last.ckpt" if v.const == "last" else None
            out.append(Discovery("framework", c.site, pat, mc_dir, False, "fit"))
    return out


def _io(r: Any, calls: dict[str, list[Call]]) -> list[StateIO]:
    out: list[StateIO] = []
    for c in calls.get("ModelCheckpoint", ()):
        wo = c.kwargs.get("save_weights_only")
        weights = wo is not None and wo.known and bool(wo.const)
        d = c.kwargs.get("dirpath")
        out.append(
            StateIO(
                "save",
                "lightning",
                "weights" if weights else "full",
                (),
                c.site,
                ("model",) if weights else _FULL,
                _KEY_PARTS if weights else (),
                d.source if d else None,
            )
        )
    for c in calls.get("fit", ()):
        v = c.kwargs.get("ckpt_path")
        if v is None or (v.known and v.const is None):
            continue
        out.append(StateIO("load", "lightning", "full", (), c.site, _FULL, (), v.source or None))
    return out


def _load_from_checkpoint(r: Any, node: ast.Call, stmt: ast.AST | None, func: str, name: str) -> StateIO | None:
    if not isinstance(node.func, ast.Attribute):
        return None
    a = node.args[0] if node.args else next((k.value for k in node.keywords if k.arg == "checkpoint_path"), None)
    return StateIO("load", "lightning", "weights", (), r.site(node), ("model",), _KEY_PARTS, r.seg(a) or None)


def _trainer_checkpoint(r: Any, node: ast.Call, stmt: ast.AST | None, func: str, name: str) -> StateIO | None:
    """`trainer.save_checkpoint(path, weights_only=...)` in a Lightning program."""
    f = node.func
    if not isinstance(f, ast.Attribute) or not (re.search(r"trainer", r.seg(f.value, 80), re.I) and imported(r)):
        return None
    kw = {k.arg: k.value for k in node.keywords if k.arg}
    a = node.args[0] if node.args else next(iter(kw.values()), None)
    wo = kw.get("weights_only")
    weights = isinstance(wo, ast.Constant) and wo.value is True
    return StateIO(
        "save" if name == "save_checkpoint" else "load",
        "lightning",
        "weights" if weights else "full",
        (),
        r.site(node),
        ("model",) if weights else _FULL,
        _KEY_PARTS if weights else (),
        r.seg(a) or None,
    )


def _fabric(r: Any, node: ast.Call, stmt: ast.AST | None, func: str, name: str) -> StateIO | None:
    """`fabric.save(path, state)` / `fabric.load(path, state)`: what `state` holds."""
    f = node.func
    if not isinstance(f, ast.Attribute) or "fabric" not in r.seg(f.value, 60).lower():
        return None
    st = node.args[1] if len(node.args) > 1 else next((k.value for k in node.keywords if k.arg == "state"), None)
    path = node.args[0] if node.args else None
    return r.state_of(name, f"fabric.{name}", node, st, path, func)  # type: ignore[no-any-return]


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
    logs=Logs(
        files=("lightning.yaml",),
        names=("lightning",),
        load_frames=(r"/(?:lightning/pytorch|pytorch_lightning)/trainer/connectors/checkpoint_connector\.py:",),
        # recordings lightning-2.6-*: a killed attempt's log holds no progress at all
        quiet="Lightning 2.6 draws its progress bar with rich when rich is installed, and without a terminal rich "
        "shows nothing until training stops; ModelCheckpoint saves without a line",
    ),
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
        name="last.ckpt",
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
    # `Epoch 3` (tqdm), `Epoch 0/-2` (rich, its max_epochs -1 shown as -2 when max_steps ends the run)
    bars=(
        Bar(r"Epoch (\d+)(?:/-?\d+)?$", epoch_group=1, step_from_postfix=True, step=_bar_step),
        Bar(r"Training$", step=_bar_step, generic=True),
    ),
    saves_by_default=True,
    python=PythonHooks(
        rank=20,
        calls=_calls,
        methods=_methods,
        discoveries=_discoveries,
        io=_io,
        io_calls=(
            IORecogniser(("load_from_checkpoint",), 90, _load_from_checkpoint),
            IORecogniser(("save_checkpoint", "load_checkpoint"), 100, _trainer_checkpoint),
            IORecogniser(("save", "load"), 110, _fabric),
        ),
    ),
)
