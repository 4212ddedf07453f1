"""Causes that live in the training command, script and framework configuration.

These are heuristics over text: each says how sure it is (`confidence`) and quotes the
line it matched. When no script or config is visible, they say so instead of passing.
"""

from __future__ import annotations

import re
import shlex
from typing import Any

from ckpt_doctor.engine.checks import absence, check
from ckpt_doctor.engine.model import Result, Rule, fail, ok, skip
from ckpt_doctor.facts.context import Facts
from ckpt_doctor.facts.program import Text, find, last_shell_command, line_of, shell_script
from ckpt_doctor.facts.storage import expand

NO_TEXT = "the training command, script and config are not visible (no command/args or mounted ConfigMap)"
TRAINER_CMD = re.compile(
    r"^(?:\S*/)?(?:python[0-9.]*|torchrun|accelerate|deepspeed|llamafactory-cli|"
    r"tune|composer|lightning|mpirun|bash\s+\S+\.sh|sh\s+\S+\.sh|\./\S+)\b"
)


def _has_text(facts: Facts) -> bool:
    return any(t.kind in ("script", "config") or len(t.text) > 0 for t in facts.texts)


def _hit_result(
    facts: Facts, hits: list[tuple[Text, re.Match[str]]], detail: str, confidence: str = "high", fix: str | None = None
) -> Result:
    t, m = hits[0]
    return fail(facts.subject(), [t.evidence(line_of(t.text, m.start()))], detail, confidence, fix)


def uses(facts: Facts, framework: str) -> bool:
    pats = {
        "hf": r"\bTrainingArguments\b|\bTrainer\(|\bSFTTrainer\b|from transformers import|run_clm\.py|"
        r"--per_device_train_batch_size|\bsave_steps\b",
        "llamafactory": r"llamafactory-cli|\bllamafactory\b|\bfinetuning_type\s*:|"
        r"\bstage\s*:\s*(?:sft|pt|dpo|rm|ppo|kto)",
        "megatron": r"pretrain_gpt\.py|posttrain_gpt\.py|\bmegatron\b|--tensor-model-parallel-size|--save-interval",
        "training-hub": r"\btraining_hub\b|from training_hub|\bckpt_output_dir\b",
    }[framework]
    if find(facts.texts, pats, flags=re.I):
        return True
    fw = {
        "hf": {"hf-trainer", "llamafactory"},
        "llamafactory": {"llamafactory"},
        "megatron": {"megatron"},
        "training-hub": {"training-hub"},
    }[framework]
    return any(r.log and (r.log.frameworks & fw) for r in facts.history.runs) if facts.mode == "diagnose" else False


@check("lexical-checkpoint-sort")
def lexical_sort(facts: Facts, rule: Rule) -> Result:
    h = facts.history
    # running maxima over earlier attempts: the newest save by number (with the log line that shows
    # it) and the checkpoint name that sorts last as text
    before: dict[int, tuple[int, str, dict[str, Any]] | None] = {}
    newest: tuple[int, str, dict[str, Any]] | None = None
    for a in h.attempts:
        before[a.index] = newest
        saves = [(e.step, r, e) for r in a.runs for e in r.saves() if e.step is not None]
        if saves:
            top, sr, se = max(saves, key=lambda x: x[0])
            lex = max(f"checkpoint-{s}" for s, _, _ in saves)
            if newest is None or top > newest[0]:
                assert sr.log is not None  # a save comes from a log
                newest = (top, lex if newest is None else max(newest[1], lex), se.evidence(sr.log.ref, sr.attempt))
            else:
                newest = (newest[0], max(newest[1], lex), newest[2])
    for r in h.later_runs():
        kind, step, ev = r.start()
        prior = before.get(r.attempt)
        if kind != "resumed" or step is None or prior is None:
            continue
        # only a resume that went *back* is a symptom of text sorting; a newer one was simply unseen
        if step < prior[0] and f"checkpoint-{step}" >= prior[1]:
            assert r.log is not None and ev is not None
            return fail(
                facts.subject(),
                [prior[2], ev.evidence(r.log.ref, r.attempt)],
                f"resumed checkpoint-{step} although checkpoint-{prior[0]} existed: "
                f"`checkpoint-{step}` sorts last as text",
            )
    if not _has_text(facts):
        return skip(NO_TEXT)
    bad = find(
        facts.texts,
        r"(?:sorted|max)\(\s*(?:glob\.glob|glob|os\.listdir|Path\([^)]*\)\.glob|[\w.]+\.glob)"
        r"\([^)]*\)\s*\)(?!\s*,\s*key)",
        kinds=("script", "config"),
    )
    bad = [
        (t, m)
        for t, m in bad
        if "key=" not in line_of(t.text, m.start())
        and re.search(r"checkpoint|ckpt|iter_|output_dir|save_dir", line_of(t.text, m.start()), re.I)  # not data shards
    ]
    if bad:
        return _hit_result(
            facts,
            bad,
            "the newest checkpoint is picked by sorting names as text (`checkpoint-9` sorts after `checkpoint-100`)",
            "medium",
        )
    ls = find(
        facts.texts,
        r"ls\b[^|\n]*checkpoint-\*[^|\n]*\|\s*(?:sort(?!\s+-[a-zA-Z]*[Vn]))?[^|\n]*\|?\s*tail",
        kinds=("script", "argv"),
    )
    if ls:
        return _hit_result(
            facts, ls, "`ls … checkpoint-* | tail` picks the lexically last checkpoint, not the newest", "medium"
        )
    return ok(reason="no text-sorted checkpoint lookup in the visible script")


@check("weights-only-checkpoint")
def weights_only(facts: Facts, rule: Rule) -> Result:
    if not _has_text(facts):
        return skip(NO_TEXT)
    hits = find(facts.texts, r"save_only_model\s*[:=]\s*(?:True|true)|--save_only_model(?:\s+(?:True|true)|\s*$|\s+--)")
    if hits:
        return _hit_result(
            facts,
            hits,
            "save_only_model is on: checkpoints hold weights without optimizer, "
            "scheduler or step, so a resume restarts the schedule",
        )
    for t in facts.texts:
        if t.kind not in ("script", "config"):
            continue
        for m in re.finditer(r"torch\.save\(\s*(?:\w+\.)?(?:model|module|net)\w*\.state_dict\(\)", t.text):
            window = t.text[max(0, m.start() - 600) : m.end() + 600]
            if not re.search(r"optim|optimizer|scheduler", window):
                return fail(
                    facts.subject(),
                    [t.evidence(line_of(t.text, m.start()))],
                    "the checkpoint saves model.state_dict() only: no optimizer, scheduler or step",
                    "medium",
                )
        m2 = re.search(r"from_pretrained\(\s*[^)]*(?:checkpoint|ckpt|last_ckpt|latest)[^)]*\)", t.text)
        if m2 and "resume_from_checkpoint" not in t.text:
            return fail(
                facts.subject(),
                [t.evidence(line_of(t.text, m2.start()))],
                "the script resumes with from_pretrained(checkpoint), which loads weights only",
                "medium",
            )
    return ok(reason="no weights-only save or load in the visible script")


@check("save-total-limit-unset")
def save_total_limit(facts: Facts, rule: Rule) -> Result:
    if not (uses(facts, "hf") or uses(facts, "llamafactory")):
        if not _has_text(facts):
            return skip(NO_TEXT)
        return ok(reason="not an HF Trainer-based stack (the limit applies to HF Trainer and LlamaFactory)")
    if find(facts.texts, r"save_total_limit"):
        return ok(reason="save_total_limit is set")
    # cite the script or config that configures the trainer (lint points at it), else the command
    where = next((t for t in facts.texts if t.kind in ("script", "config")), facts.texts[0] if facts.texts else None)
    ev = [absence("save_total_limit", f"{where.object} {where.path}" if where else "training config")]
    return fail(facts.subject(), ev, "checkpoints accumulate without save_total_limit until the PVC fills up", "medium")


def _last_command(script: str) -> str:
    body = re.sub(r"(?m)#.*$", "", script).strip()
    parts = [p.strip() for p in re.split(r"\n|;|&&|\|\|", body) if p.strip()]
    return parts[-1] if parts else ""


@check("sigterm-not-forwarded")
def sigterm_not_forwarded(facts: Facts, rule: Rule) -> Result:
    spec = facts.spec
    if spec is None or not spec.argv():
        return skip("no container command or args: the image's entrypoint is unknown")
    argv = spec.argv()
    sh = shell_script(argv)
    if sh is None:
        return ok(reason=f"the trainer is PID 1 itself ({shlex.quote(argv[0])})")
    shell, script = sh
    t = next(t for t in facts.texts if t.kind == "script")
    if re.search(r"(?m)(?:^|[;&|]\s*|\bthen\s+|\bdo\s+)exec\s+\S", script):
        return ok(reason="the script execs the trainer")
    trap = re.search(r"\btrap\b[^\n]*\b(?:TERM|SIGTERM|15)\b", script)
    if trap and re.search(r"kill\s+(?:-\w+\s+)?(?:-?TERM\s+)?\"?\$\{?\w*(?:pid|PID|child|!)", script):
        return ok(reason="a trap forwards SIGTERM to the trainer")
    last = _last_command(script)
    problems = []
    if shell in ("sh", "dash", "ash"):
        problems.append(f"`{shell} -c` (dash on Debian/Ubuntu images) never replaces itself with the trainer")
    if "<<" in script:
        problems.append("the script feeds the trainer a here-document")
    elif re.search(r"(?<![|])\|(?![|])", last):
        problems.append("the trainer runs in a pipeline")
    elif re.search(r"\d?>{1,2}\s*\S|\s<\s*\S|&>", last):
        problems.append("the trainer's output is redirected")
    if trap:
        problems.append("a trap keeps the shell alive")
    if last.endswith("&") or re.search(r"\bwait\b", last):
        problems.append("the trainer runs in the background")
    if not problems and not TRAINER_CMD.search(last):
        problems.append(f"the trainer is not the last command (`{last[:60]}` is)")
    if not problems:
        return ok(reason=f"bash runs the trainer as the last simple command and replaces itself ({last[:60]})")
    fix = (
        "Start the trainer with `exec` (e.g. `exec torchrun …`), or write the inline script to a file "
        "first and `exec python /path/train.py`, so SIGTERM reaches Python"
    )
    cmd = last_shell_command(script)  # the evidence quotes the line that starts the last command
    return fail(
        facts.subject(),
        [t.evidence(script.split("\n")[cmd.line].strip() if cmd is not None else script[:300])],
        f"`{shell} -c` stays PID 1 and does not pass SIGTERM on: {'; '.join(problems)}",
        "high" if shell in ("sh", "dash") or "<<" in script else "medium",
        fix,
    )


@check("resume-true-hardcoded")
def resume_true(facts: Facts, rule: Rule) -> Result:
    if not _has_text(facts):
        return skip(NO_TEXT)
    hits = find(
        facts.texts,
        r"resume_from_checkpoint\s*(?:=|:)\s*(?:True|true|\"true\"|'true')\b|"
        r"--resume_from_checkpoint(?:=|\s+)(?:True|true)\b",
    )
    if hits:
        return _hit_result(
            facts,
            hits,
            "resume_from_checkpoint is hard-coded true: the first run raises "
            "`No valid checkpoint found in output directory`",
        )
    return ok(reason="resume_from_checkpoint is not hard-coded to true")


@check("llamafactory-overwrite-output-dir")
def lf_overwrite(facts: Facts, rule: Rule) -> Result:
    hits = find(
        facts.texts,
        r"overwrite_output_dir\s*[:=]\s*(?:true|True)\b|--overwrite_output_dir(?:\s+(?:true|True)\b|\s*$|\s+-)",
    )
    evidence = [t.evidence(line_of(t.text, m.start())) for t, m in hits[:1]]
    for r in facts.history.runs:
        ev = r.log.first("overwrite_output") if r.log else None
        if ev is not None and r.log is not None:
            evidence.append(ev.evidence(r.log.ref, r.attempt))
            return fail(
                facts.subject(),
                evidence,
                "LlamaFactory deleted the previous trainer log: overwrite_output_dir is on and auto-resume was skipped",
            )
    if not uses(facts, "llamafactory"):
        return ok(reason="not a LlamaFactory job") if _has_text(facts) else skip(NO_TEXT)
    if hits:
        return _hit_result(facts, hits, "overwrite_output_dir: true turns LlamaFactory's auto-resume off")
    return ok(reason="overwrite_output_dir is not set")


@check("megatron-resume-disabled")
def megatron(facts: Facts, rule: Rule) -> Result:
    if not uses(facts, "megatron"):
        return ok(reason="not a Megatron/MindSpeed job") if _has_text(facts) else skip(NO_TEXT)
    env = facts.spec.env() if facts.spec else {}
    flags = find(
        facts.texts, r"--(?:finetune|no-load-optim|no-load-rng|no-save-optim|no-save-rng)\b", kinds=("argv", "script")
    )
    found = sorted({m.group(0) for _t, m in flags})
    load = find(facts.texts, r"--load[= ](\S+)", kinds=("argv", "script"))
    save = find(facts.texts, r"--save[= ](\S+)", kinds=("argv", "script"))
    evidence = [t.evidence(line_of(t.text, m.start())) for t, m in flags[:2]]
    problems = list(found)
    if load and save:
        lv, sv = expand(load[0][1].group(1), env), expand(save[0][1].group(1), env)
        if lv.strip("\"'") != sv.strip("\"'"):
            problems.append(f"--load {lv} ≠ --save {sv}")
            evidence.append(load[0][0].evidence(line_of(load[0][0].text, load[0][1].start())))
    elif save and not load:
        problems.append("no --load: Megatron never reads what --save wrote")
        t = save[0][0]
        evidence.append(absence("--load", f"{t.object} {t.path}"))
    if problems:
        return fail(
            facts.subject(),
            evidence,
            "Megatron will not really resume: " + ", ".join(problems),
            fix="Use `--load` = `--save` (the PVC directory), drop --finetune/--no-load-optim/--no-load-rng/"
            "--no-save-*, and pass the base weights with --pretrained-checkpoint instead",
        )
    return ok(reason="--load equals --save and no flag disables resume")


@check("training-hub-weights-only")
def training_hub(facts: Facts, rule: Rule) -> Result:
    if not uses(facts, "training-hub"):
        return ok(reason="not a training_hub job") if _has_text(facts) else skip(NO_TEXT)
    on = find(
        facts.texts, r"accelerate_full_state_at_epoch\s*[:=]\s*(?:True|true)\b|--accelerate_full_state_at_epoch\b"
    )
    if on:
        return ok(reason="accelerate_full_state_at_epoch is on")
    off = find(facts.texts, r"accelerate_full_state_at_epoch\s*[:=]\s*(?:False|false)\b")
    if off:
        return _hit_result(
            facts, off, "accelerate_full_state_at_epoch is off: only HF weights are saved, so nothing resumable exists"
        )
    t = facts.texts[0]
    return fail(
        facts.subject(),
        [absence("accelerate_full_state_at_epoch", f"{t.object} {t.path}")],
        "training_hub saves HF weights only unless accelerate_full_state_at_epoch is on",
        "medium",
    )
