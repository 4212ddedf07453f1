"""LlamaFactory: HF Trainer driven by a YAML config (`llamafactory-cli train cfg.yaml`).

It auto-resumes from the newest `checkpoint-N` in `output_dir` only when `resume_from_checkpoint`
is unset, `do_train`, the directory exists and `overwrite_output_dir` is false; its examples ship
`overwrite_output_dir: true` (knowledge: guide-and-frameworks.md §4.3).
"""

from __future__ import annotations

import ast
from collections.abc import Mapping
from typing import Any

from ckpt_doctor.facts.program.python.facts import Call
from ckpt_doctor.frameworks import hf_trainer
from ckpt_doctor.frameworks.spec import Config, Failure, Framework, Launch, Logs, Pick, PythonHooks, Tool


def _is_config(data: Mapping[str, Any], keys: set[str]) -> bool:
    return {"stage", "finetuning_type"} <= keys or ("stage" in keys and "template" in keys)


# -- the Python reader's hooks ---------------------------------------------------------------------
def _calls(r: Any, node: ast.Call, stmt: ast.AST | None, func: str, name: str, out: dict[str, list[Call]]) -> bool:
    """`run_exp({...})`: LlamaFactory's entry with its config as a literal dict."""
    if not (name == "run_exp" and node.args and isinstance(node.args[0], ast.Dict)):
        return False
    c = r._make_call(node, func)
    d = node.args[0]
    kw = dict(c.kwargs)
    for kk, vv in zip(d.keys, d.values, strict=False):
        if isinstance(kk, ast.Constant) and isinstance(kk.value, str):
            kw[kk.value] = r.value(vv, func, node)
    out["run_exp"].append(Call(c.name, c.site, kw, c.args, c.qualname))
    return True


FRAMEWORK = Framework(
    name="llamafactory",
    title="LlamaFactory",
    order=10,
    summary="LlamaFactory (hiyouga/LlamaFactory), a config-driven HF Trainer",
    launch=Launch(
        tools=(
            Tool("llamafactory-cli", frozenset({"train"}), role="trainer"),
            Tool("lmf", frozenset({"train"}), role="trainer"),
        ),
        modules=("llamafactory", "llamafactory.cli", "llamafactory.launcher"),
        imports=("llamafactory",),
        config_files=("*.yaml",),
    ),
    logs=Logs(files=("llamafactory.yaml",), names=("llamafactory",)),
    layout=hf_trainer.LAYOUT,
    pick=Pick(
        "highest-step",
        False,
        "LlamaFactory picks the newest checkpoint-N by its number",
        "llamafactory.hparams.parser (get_last_checkpoint)",
        rank=20,
    ),
    config=Config(
        _is_config,
        rank=10,
        keys={
            "stage": "sft | pt | rm | ppo | dpo | kto",
            "finetuning_type": "full | freeze | lora",
            "output_dir": "where checkpoint-N directories are written",
            "overwrite_output_dir": "true: the auto-resume is skipped",
            "resume_from_checkpoint": "unset: auto-resume; a checkpoint-N path; never True",
            "save_steps": "the save cadence",
        },
    ),
    failures=(
        Failure(
            "Output directory already exists and is not empty. Please set `overwrite_output_dir`.",
            "output_dir holds files but no checkpoint to resume",
            "lf-output-dir-not-empty",
        ),
        Failure(
            "Cannot resume from checkpoint in current stage.",
            "rm/ppo with full/freeze cannot resume",
            "lf-cannot-resume-stage",
        ),
        Failure(
            "Previous trainer log in this folder will be deleted.",
            "overwrite_output_dir is on: the resume was skipped",
            "lf-previous-log-deleted",
        ),
    ),
    implies=("hf-trainer",),
    saves_by_default=True,
    python=PythonHooks(rank=70, calls=_calls),
)
