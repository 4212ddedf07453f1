"""HuggingFace transformers `Trainer` (and TRL's trainers, which are Trainers).

Layout: `checkpoint-{N}/` in `output_dir`; `_save_checkpoint` writes the model, then optimizer,
scheduler and RNG state, and "finally the Trainer state", so `trainer_state.json` is about the last
file written. Not atomic (the temporary-directory rename was reverted in 2025). `get_last_checkpoint`
picks the highest N with no completeness check: a half-written newest directory makes every
restart fail with `FileNotFoundError ... checkpoint-N/trainer_state.json`.
(knowledge: platform-signals-and-layouts.md §3, guide-and-frameworks.md §4.2)
"""

from __future__ import annotations

import ast
import re
from collections.abc import Mapping
from typing import Any

from ckpt_doctor.facts.program.python.facts import Call, Discovery, StateIO
from ckpt_doctor.facts.program.python.parts import _KEY_PARTS
from ckpt_doctor.facts.program.python.tree import _last
from ckpt_doctor.facts.program.python.vocabulary import _SKIP_PRETRAINED
from ckpt_doctor.frameworks import lightning
from ckpt_doctor.frameworks.spec import (
    CheckpointName,
    Config,
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

# modules whose `*Trainer` is an HF Trainer (the Python reader's vocabulary)
TRAINER_MODULES = ("transformers", "trl", "peft", "llamafactory", "unsloth", "axolotl", "setfit", "optimum")
TRAINER_NAMES = ("Trainer", "Seq2SeqTrainer", "TrainingArguments", "Seq2SeqTrainingArguments")
TRL_CONFIGS = frozenset(
    {
        "SFTConfig",
        "DPOConfig",
        "GRPOConfig",
        "PPOConfig",
        "ORPOConfig",
        "KTOConfig",
        "CPOConfig",
        "RewardConfig",
        "RLOOConfig",
        "OnlineDPOConfig",
        "BCOConfig",
        "GKDConfig",
        "PRMConfig",
        "XPOConfig",
        "NashMDConfig",
        "AlignPropConfig",
        "DDPOConfig",
        "IterativeSFTConfig",
    }
)
NOT_TRAINING_CONFIGS = frozenset({"ModelConfig", "DatasetMixtureConfig", "ScriptArguments", "ModelArguments"})


def _is_config(data: Mapping[str, Any], keys: set[str]) -> bool:
    return bool(keys & {"output_dir", "per_device_train_batch_size", "save_steps", "save_strategy"})


def _evidence(facts: Any) -> str | None:
    """transformers with its Trainer in sight (a bare `import transformers` is a model library)."""
    if facts.uses("transformers") and (
        any(facts.calls.get(k) for k in ("TrainingArguments", "Trainer"))
        or any(f"transformers.{n}" in facts.imports for n in TRAINER_NAMES)
    ):
        return "transformers Trainer"
    return None


LAYOUT = Layout(
    names=(CheckpointName("checkpoint-{step}", "dir", note="PREFIX_CHECKPOINT_DIR, regex ^checkpoint\\-(\\d+)$"),),
    files=(
        "model.safetensors|model-*-of-*.safetensors|adapter_model.safetensors|pytorch_model.bin",
        "optimizer.pt",
        "scheduler.pt",
        "rng_state.pth|rng_state_{rank}.pth",
        "trainer_state.json",
        "training_args.bin",
    ),
    markers=(
        Marker(
            "trainer_state.json",
            "complete",
            "inside",
            written_last=True,
            note="written after the weights and optimizer state: absent in a save that died",
        ),
        Marker(
            "checkpoint-is-incomplete.txt.node-{node}-rank-{rank}",
            "incomplete",
            "inside",
            note="Kubeflow SDK (Red Hat) just-in-time checkpointing marks a save in progress",
        ),
    ),
    atomic="no",
    note="FSDP adds pytorch_model_fsdp_0/ and optimizer_0/ (DCP); DeepSpeed adds global_step{N}/ and latest",
    # save_only_model writes the weights, training_args.bin and trainer_state.json, and none of the rest
    parts={
        "weights": "model.safetensors|model-*-of-*.safetensors|adapter_model.safetensors|pytorch_model.bin"
        "|model.safetensors.index.json|pytorch_model_fsdp_0",
        "optimizer": "optimizer.pt|optimizer_0",
        "scheduler": "scheduler.pt",
        "rng": "rng_state.pth|rng_state_{rank}.pth",
        "scaler": "scaler.pt",
        "step": "trainer_state.json",
    },
)


# -- the Python reader's hooks ---------------------------------------------------------------------
# HF Trainer writes checkpoint-N/ itself (full state unless `save_only_model`); `train(resume_from_
# checkpoint=...)` loads one, `True` through get_last_checkpoint; `save_pretrained`/`from_pretrained`
# move weights only.


_FULL = ("model", "optimizer", "rng", "scheduler", "step")


class _Found:
    """What the calls reader found of HF Trainer in one program (a plain class: no start-up cost)."""

    def __init__(self) -> None:
        self.trainer_names: set[str] = set()  # names bound to a Trainer
        self.nodes: set[int] = set()  # id() of the Trainer(...) calls
        self.trainers: list[tuple[ast.Call, Call, str]] = []
        self.args: list[Call] = []  # TrainingArguments-like calls
        self.args_by_name: dict[str, Call] = {}


def found(r: Any) -> _Found:
    return r.fw_state("hf-trainer", _Found)  # type: ignore[no-any-return]


def _is_hf_module(q: str | None) -> bool:
    return bool(q) and q.split(".")[0] in TRAINER_MODULES  # type: ignore[union-attr]


def _hf_imported(r: Any) -> bool:
    return any(m in r.imports for m in TRAINER_MODULES)


def _hf_trainer(r: Any, node: ast.Call) -> bool:
    name = _last(node.func)
    q = r.qual(node.func) or name
    if _is_hf_module(q):
        return True
    bases = r._local_class_bases(name)
    if bases is not None:
        return any(_is_hf_module(b) or (b.endswith("Trainer") and _hf_imported(r)) for b in bases)
    return "." not in q and _hf_imported(r)  # a bare name: HF when transformers/trl are imported


def _is_training_args(r: Any, node: ast.Call) -> bool:
    name = _last(node.func)
    if name in NOT_TRAINING_CONFIGS:
        return False
    q = r.qual(node.func) or name
    if name.endswith("TrainingArguments") or name in TRL_CONFIGS:
        return True
    if q.startswith("trl.") and name.endswith("Config"):
        return True
    bases = r._local_class_bases(name)
    if bases:
        return any(b.rsplit(".", 1)[-1].endswith("TrainingArguments") or b in TRL_CONFIGS for b in bases)
    return False


def _is_hf_get_last(r: Any, node: ast.Call) -> bool:
    q = r.qual(node.func) or ""
    if q.startswith("transformers"):
        return True
    return "get_last_checkpoint" not in r.funcs


def _calls(r: Any, node: ast.Call, stmt: ast.AST | None, func: str, name: str, out: dict[str, list[Call]]) -> bool:
    st = found(r)
    if name.endswith(("Arguments", "Config")) and _is_training_args(r, node):
        c = r._make_call(node, func)
        names = r._bound_names(node, stmt)
        c = r._with_attr_sets(c, names, func)
        out["TrainingArguments"].append(c)
        st.args.append(c)
        for n in names:
            st.args_by_name[n] = c
        return True
    if name.endswith("Trainer"):
        if lightning.is_lightning_trainer(r, node, name):
            return False  # Lightning's hook reads it
        bases = r._local_class_bases(name)
        if bases is not None and not any(b.rsplit(".", 1)[-1].endswith("Trainer") for b in bases):
            return True  # a local class named *Trainer that is no trainer
        c = r._make_call(node, func)
        out["Trainer"].append(c)
        if _hf_trainer(r, node):
            st.trainer_names.update(r._bound_names(node, stmt))
            st.nodes.add(id(node))
            st.trainers.append((node, c, func))
        return True
    if name == "get_last_checkpoint" and _is_hf_get_last(r, node):
        out["get_last_checkpoint"].append(r._make_call(node, func))
        return True
    return False


def _methods(r: Any, out: dict[str, list[Call]]) -> None:
    """`trainer.train(...)`: its first positional argument is `resume_from_checkpoint`."""
    st = found(r)
    pl_names = lightning.found(r).trainer_names
    for node, _stmt, func in r.by_attr.get("train", ()):
        f = node.func
        if not isinstance(f, ast.Attribute):
            continue
        recv = f.value
        recv_name = recv.id if isinstance(recv, ast.Name) else (recv.attr if isinstance(recv, ast.Attribute) else "")
        kws = {k.arg for k in node.keywords}
        hf = (
            recv_name in st.trainer_names
            or (isinstance(recv, ast.Call) and id(recv) in st.nodes)
            or (
                "trainer" in recv_name.lower()
                and recv_name not in pl_names
                and (st.nodes or _hf_imported(r))
                and "Trainer" not in r.classes
            )
        )
        if not hf and "resume_from_checkpoint" not in kws:
            continue
        c = r._make_call(node, func, "train")
        if hf and node.args and "resume_from_checkpoint" not in c.kwargs:
            kw = dict(c.kwargs)
            kw["resume_from_checkpoint"] = c.args[0]
            c = Call(c.name, c.site, kw, c.args, c.qualname)
        out["train"].append(c)


def _discoveries(r: Any, calls: dict[str, list[Call]]) -> list[Discovery]:
    out: list[Discovery] = []
    for node, _s, _f in r.by_attr.get("get_last_checkpoint", ()):
        if _is_hf_get_last(r, node):
            a = node.args[0] if node.args else next((k.value for k in node.keywords), None)
            out.append(
                Discovery("hf-get-last", r.site(node), "checkpoint-*", r.seg(a) or None, False, "get_last_checkpoint")
            )
    ta_dir = None
    for c in found(r).args:
        if "output_dir" in c.kwargs:
            ta_dir = c.kwargs["output_dir"].source
            break
    for c in calls.get("train", ()):
        v = c.kwargs.get("resume_from_checkpoint")
        if v is not None and v.known and v.const is True:
            out.append(Discovery("hf-get-last", c.site, "checkpoint-*", ta_dir, False, "train"))
    return out


def _training_args_for(r: Any, trainer: Call) -> Call | None:
    a = trainer.kwargs.get("args")
    st = found(r)
    if a is not None and a.source in st.args_by_name:
        return st.args_by_name[a.source]
    return _training_args_for_any(r)


def _training_args_for_any(r: Any) -> Call | None:
    args = found(r).args
    return args[0] if len(args) == 1 else None


def _io(r: Any, calls: dict[str, list[Call]]) -> list[StateIO]:
    out: list[StateIO] = []
    for _node, c, _func in found(r).trainers:  # the Trainer writes checkpoint-N/ itself
        ta = _training_args_for(r, c)
        strategy = ta.kwargs.get("save_strategy") if ta else None
        if strategy is not None and strategy.known and strategy.const == "no":
            continue
        only = ta.kwargs.get("save_only_model") if ta else None
        content = "full"
        if only is not None:
            content = ("weights" if only.const else "full") if only.known else "unknown"
        d = ta.kwargs.get("output_dir") if ta else None
        parts = ("model",) if content == "weights" else _FULL
        out.append(
            StateIO(
                "save",
                "hf-trainer",
                content,
                (),
                c.site,
                parts if content != "unknown" else (),
                _KEY_PARTS if content == "weights" else (),
                d.source if d else None,
            )
        )
    for c in calls.get("train", ()):
        v = c.kwargs.get("resume_from_checkpoint")
        if v is None or (v.known and (v.const is None or v.const is False or v.const == "")):
            continue
        ta = _training_args_for_any(r)
        only = ta.kwargs.get("save_only_model") if ta else None
        content = "full"
        if only is not None and only.known and only.const:
            content = "weights"
        parts = ("model",) if content == "weights" else _FULL
        out.append(
            StateIO(
                "load",
                "hf-resume",
                content,
                (),
                c.site,
                parts,
                _KEY_PARTS if content == "weights" else (),
                v.source or None,
            )
        )
    return out


def _trainer_save_model(r: Any, node: ast.Call, stmt: ast.AST | None, func: str, name: str) -> StateIO | None:
    f = node.func
    if not isinstance(f, ast.Attribute):
        return None
    recv = r.seg(f.value, 80)
    if not (re.search(r"trainer", recv, re.I) or recv in found(r).trainer_names):
        return None
    a = node.args[0] if node.args else next((k.value for k in node.keywords if k.arg == "output_dir"), None)
    return StateIO("save", "trainer.save_model", "weights", (), r.site(node), ("model",), _KEY_PARTS, r.seg(a) or None)


def _save_pretrained(r: Any, node: ast.Call, stmt: ast.AST | None, func: str, name: str) -> StateIO | None:
    f = node.func
    if not isinstance(f, ast.Attribute) or _SKIP_PRETRAINED.search(r.seg(f.value, 80)):
        return None
    a = node.args[0] if node.args else next((k.value for k in node.keywords if k.arg == "save_directory"), None)
    return StateIO("save", "save_pretrained", "weights", (), r.site(node), ("model",), _KEY_PARTS, r.seg(a) or None)


def _from_pretrained(r: Any, node: ast.Call, stmt: ast.AST | None, func: str, name: str) -> StateIO | None:
    """Loading weights from a checkpoint-like path (not the base model's name)."""
    f = node.func
    if not isinstance(f, ast.Attribute) or _SKIP_PRETRAINED.search(r.seg(f.value, 80)):
        return None
    cands = list(node.args[:2]) + [
        k.value for k in node.keywords if k.arg in ("pretrained_model_name_or_path", "model_id")
    ]
    for a in cands:
        if r._resume_path(a, func):
            return StateIO(
                "load", "from_pretrained", "weights", (), r.site(node), ("model",), _KEY_PARTS, r.seg(a) or None
            )
    return None


FRAMEWORK = Framework(
    name="hf-trainer",
    title="HF Trainer",
    order=60,
    summary="transformers.Trainer and the trainers built on it (TRL)",
    launch=Launch(
        imports=("trl",),
        python_calls=("TrainingArguments", "Trainer", "get_last_checkpoint"),
    ),
    # transformers 5 puts `[transformers] ` before every line of its logger (recordings hf-5.24-*)
    logs=Logs(
        files=("hf-trainer.yaml",),
        names=("hf-trainer",),
        path_steps=("checkpoint-",),
        prefixes=("[transformers] ",),
        # recordings hf-*-partial-save: train() -> TrainerState.load_from_json(checkpoint-N/trainer_state.json)
        load_frames=(
            r"/transformers/trainer_callback\.py:load_from_json$",
            r"/transformers/trainer\.py:_(?:load_from_checkpoint|load_optimizer_and_scheduler|load_rng_state)$",
        ),
    ),
    layout=LAYOUT,
    pick=Pick(
        "highest-step",
        False,
        "HF Trainer picks checkpoint-N by its number (get_last_checkpoint)",
        "transformers.trainer_utils.get_last_checkpoint",
        rank=10,
    ),
    config=Config(
        _is_config,
        rank=70,
        keys={
            "output_dir": "where checkpoint-N directories are written",
            "save_strategy": "no | steps | epoch | best",
            "save_steps": "the save cadence in steps",
            "save_total_limit": "how many checkpoints are kept (older ones deleted)",
            "save_only_model": "True: weights only, not resumable",
            "resume_from_checkpoint": "a path, True (get_last_checkpoint) or None (fresh start)",
            "overwrite_output_dir": "ignored by Trainer itself; LlamaFactory skips its resume",
        },
    ),
    failures=(
        Failure(
            "ValueError: No valid checkpoint found in output directory ({output_dir})",
            "train(resume_from_checkpoint=True) found no checkpoint-N",
            "hf-no-valid-checkpoint",
        ),
        Failure(
            "Can't find a valid checkpoint at {path}", "the resume path holds no checkpoint", "hf-cant-find-checkpoint"
        ),
        Failure(
            "FileNotFoundError: ... checkpoint-{N}/trainer_state.json",
            "the newest checkpoint is half-written and get_last_checkpoint picked it",
            "hf-missing-trainer-state",
        ),
    ),
    saves_by_default=True,
    python=PythonHooks(
        rank=10,
        calls=_calls,
        methods=_methods,
        discoveries=_discoveries,
        io=_io,
        io_calls=(
            IORecogniser(("save_model",), 61, _trainer_save_model),
            IORecogniser(("save_pretrained",), 70, _save_pretrained),
            IORecogniser(("from_pretrained",), 80, _from_pretrained),
        ),
        evidence=_evidence,
    ),
)
