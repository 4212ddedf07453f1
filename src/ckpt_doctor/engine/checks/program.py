"""Causes that live in the training program: its shell, its Python code and its framework's config.

Each check asks the program model (facts/program/model.py), never the raw text: what the shell
runs and whether SIGTERM reaches it, how the code picks the newest checkpoint, what it saves,
which framework runs and what its config says. A rule scoped to a stack judges only that stack;
when another stack is positively identified it passes as not applying, and when the stack or the
code cannot be seen it is `not_evaluated` with the reason. Text search is left only where the
Python reader itself fell back to it (a program `ast` cannot parse), at low confidence.
"""

from __future__ import annotations

import re
from typing import Any

from ckpt_doctor import frameworks
from ckpt_doctor.engine.checks import absence, check, exit_code_ev
from ckpt_doctor.engine.model import Result, Rule, fail, ok, skip
from ckpt_doctor.facts.context import Facts
from ckpt_doctor.facts.exec_advice import exec_fix
from ckpt_doctor.facts.program.config import get
from ckpt_doctor.facts.program.model import ConfigPart, Program, PythonPart

HF_STACKS = ("hf-trainer", "llamafactory")
DISCOVERY_WORDS = {  # how a program's rule for "the newest checkpoint" reads in a sentence
    "numeric": "by the number in its name",
    "mtime": "by modification time",
    "hf-get-last": "with transformers' get_last_checkpoint",
    "framework": "through the framework's own resume",
    "lexical": "by comparing names as text, which their fixed width makes right",
    "unordered": "in the order the file system lists them",
}


def _program(facts: Facts) -> Program | None:
    return facts.program


def _unknown(prog: Program | None, facts: Facts | None = None) -> Result:
    if prog is None:
        return skip(facts.no_spec() if facts is not None else "no trainer container to judge")
    return skip(f"the training program cannot be read: {prog.why_unknown()}")


def _not_this_stack(prog: Program, stacks: tuple[str, ...], what: str) -> Result | None:
    """A pass when another stack is positively identified and the program is seen; not_evaluated when
    which stack runs is unknown; None when one of `stacks` runs (the rule applies)."""
    if any(prog.has(s) for s in stacks):
        return None
    if prog.stacks and (prog.complete or prog.framework_entry):
        ev = next(iter(prog.stacks.values()))[:1]
        return ok(reason=f"does not apply: not {what} ({prog.stack_words()})", evidence=ev)
    return skip(f"whether this is {what} is unknown: {prog.why_unknown() if not prog.complete else 'no stack shown'}")


def _scoped(facts: Facts, stacks: tuple[str, ...], what: str) -> tuple[Program | None, Result | None]:
    """(the program, None) when one of `stacks` runs; (None, the result to give) otherwise."""
    prog = _program(facts)
    if prog is None:
        return None, _unknown(prog, facts)
    not_here = _not_this_stack(prog, stacks, what)
    return (None, not_here) if not_here is not None else (prog, None)


def _site_ev(part: PythonPart, text: str) -> dict[str, Any]:
    return part.source.evidence(text)


def _config_ev(part: ConfigPart, key: str, value: Any) -> dict[str, Any]:
    line = part.doc.line_of(key)
    if line and part.doc.format != "args":
        lines = part.source.text.splitlines()
        text = lines[line - 1].strip() if 0 < line <= len(lines) else f"{key}: {value}"
    else:
        text = f"--{key} {value}" if part.doc.format == "args" else f"{key}: {value}"
    return part.source.evidence(text)


def _kwarg_line(part: PythonPart, start: int, key: str) -> str:
    """The source line, from the call's line on, where `key=` is written (the call line when not found)."""
    lines = part.source.text.splitlines()
    rx = re.compile(rf"\b{re.escape(key)}\s*=")
    for ln in lines[max(0, start - 1) : start + 60]:
        if rx.search(ln):
            return ln.strip()
    return lines[start - 1].strip() if 0 < start <= len(lines) else key


def _settings(prog: Program, key: str) -> list[tuple[Any, dict[str, Any]]]:
    """Every place the program sets `key`: TrainingArguments-like calls, its command line, its configs.
    (value, evidence); a value an expression computes is given as the Value object."""
    out: list[tuple[Any, dict[str, Any]]] = []
    for part in prog.pythons:
        for name in ("TrainingArguments", "sft"):
            for c in part.facts.calls.get(name) or []:
                v = c.kwargs.get(key)
                if v is not None:
                    out.append((v.const if v.known else v, _site_ev(part, _kwarg_line(part, c.site.line, key))))
    for cp in [prog.args, *prog.configs]:
        if cp is None:
            continue
        present, val = get(cp.doc, key)
        if present:
            out.append((val, _config_ev(cp, key, val)))
    return out


def _args_hidden(prog: Program, part: PythonPart | None = None) -> str | None:
    """Why settings may hide where the reader cannot see them: TrainingArguments built from the command
    line or a config file the trainer's argv does not show in full, an unresolved word in its argv."""
    own = set(prog.entry.args)  # the program's own arguments (a launcher's options do not set these)
    unresolved = [w for w in (prog.trainer.fields if prog.trainer is not None else []) if w.value is None]
    unresolved = [w for w in unresolved if w.partial in own]
    if unresolved:
        return f"its command line has words that cannot be resolved ({unresolved[0].partial})"
    if prog.unseen:
        return prog.unseen[0]
    for p in prog.pythons if part is None else [part]:
        for c in p.facts.calls.get("TrainingArguments") or []:
            if "**" in c.kwargs:
                return f"TrainingArguments take **{c.kwargs['**'].source} ({p.source.label}:{c.site.line})"
    return None


def _parts_with(prog: Program, call: str) -> list[PythonPart]:
    return [p for p in prog.pythons if p.facts.calls.get(call)]


# -- lexical-checkpoint-sort ---------------------------------------------------------------------------
@check("lexical-checkpoint-sort")
def lexical_sort(facts: Facts, rule: Rule) -> Result:
    h = facts.history
    # from the attempts: a resume that went back to the checkpoint whose name sorts last as text
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
    for a in h.later_attempts():
        kind, step, r, ev = h.attempt_start(a)
        prior = before.get(a.index)
        if kind != "resumed" or step is None or prior is None or r is None or ev is None or r.log is None:
            continue
        # only a resume that went *back* is a symptom of text sorting; a newer one was simply unseen
        if step < prior[0] and f"checkpoint-{step}" >= prior[1]:
            return fail(
                facts.subject(),
                [prior[2], ev.evidence(r.log.ref, r.attempt)],
                f"resumed checkpoint-{step} although checkpoint-{prior[0]} existed: "
                f"`checkpoint-{step}` sorts last as text",
            )
    prog = _program(facts)
    if prog is None:
        return _unknown(prog, facts)
    for part in prog.pythons:
        for d in part.facts.discovery:
            if d.kind == "lexical" and not d.padded:
                return fail(
                    facts.subject(),
                    [_site_ev(part, d.site.text)],
                    "the newest checkpoint is picked by sorting names as text (`checkpoint-9` sorts after "
                    f"`checkpoint-100`): {part.source.label}:{d.site.line}",
                    "high" if part.facts.confidence == "high" else "low",
                )
    hit = _shell_lexical_pick(prog)
    if hit is not None:
        return fail(
            facts.subject(),
            [prog.script_source.evidence(hit)] if prog.script_source else [],
            "`ls … | tail` picks the lexically last checkpoint, not the newest",
            "medium",
        )
    found = [(p, d) for p in prog.pythons for d in p.facts.discovery if d.kind != "unknown"]
    if found:
        p, d = found[0]
        how = DISCOVERY_WORDS.get(d.kind, f"its {d.kind} rule")
        return ok(reason=f"the program picks the newest checkpoint {how} ({p.source.label}:{d.site.line})")
    picks = frameworks.picks()  # the stacks whose own trainer picks the checkpoint, and how
    fw = next((d for s, d in picks if prog.has(s) and (prog.complete or prog.framework_entry)), None)
    if fw is not None and not any(p.facts.discovery for p in prog.pythons):
        return ok(reason=fw)
    if prog.complete:
        return ok(reason="the visible program picks no checkpoint by its name")
    return _unknown(prog, facts)


_LS_TAIL = re.compile(r"\bls\b[^|]*\|\s*(?:sort(?P<opts>(?:\s+-\w+)*)\s*\|\s*)?tail\b")


def _shell_lexical_pick(prog: Program) -> str | None:
    """`ls DIR/checkpoint-* | tail -1` (or `| sort | tail`) in the script: a text-order pick."""
    if prog.shell is None:
        return None
    for line in prog.shell.script.splitlines():
        m = _LS_TAIL.search(line)
        if m and re.search(r"checkpoint|ckpt|iter_|step", line, re.I):
            opts = m.group("opts") or ""
            if not re.search(r"-\w*[Vn]", opts):
                return line.strip()
    return None


# -- weights-only-checkpoint ----------------------------------------------------------------------------
@check("weights-only-checkpoint")
def weights_only(facts: Facts, rule: Rule) -> Result:
    prog = _program(facts)
    if prog is None:
        return _unknown(prog, facts)
    if prog.has("hf-trainer"):
        for val, ev in _settings(prog, "save_only_model"):
            if val is True or (isinstance(val, str) and val.lower() == "true"):
                return fail(
                    facts.subject(),
                    [ev],
                    "save_only_model is on: checkpoints hold weights without optimizer, scheduler or step, so a "
                    "resume restarts the schedule",
                )
    for part in prog.pythons:
        for io in part.facts.io:
            if io.api == "training_hub":
                continue  # training-hub-weights-only judges training_hub's own checkpoints
            if io.op == "save" and io.content == "weights" and part.facts.content("save") == "weights":
                missing = ", ".join(io.missing) or "optimizer, scheduler, step"
                return fail(
                    facts.subject(),
                    [_site_ev(part, io.site.text)],
                    f"the checkpoint holds model weights only ({io.api}; no {missing}): "
                    f"{part.source.label}:{io.site.line}",
                    "high" if part.facts.confidence == "high" else "low",
                )
            if io.op == "load" and io.content == "weights" and io.api in ("from_pretrained", "hf-resume"):
                return fail(
                    facts.subject(),
                    [_site_ev(part, io.site.text)],
                    "the script resumes with from_pretrained(checkpoint), which loads weights only: "
                    f"{part.source.label}:{io.site.line}",
                    "medium",
                )
    saves = [(p, io) for p in prog.pythons for io in p.facts.io if io.op == "save" and io.api != "training_hub"]
    full = [(p, io) for p, io in saves if io.content == "full"]
    if full:
        p, io = full[0]
        return ok(reason=f"the checkpoint holds the full training state ({io.api}, {p.source.label}:{io.site.line})")
    if prog.has("hf-trainer") and (prog.complete or prog.framework_entry):
        hidden = _args_hidden(prog)
        if hidden is None:
            return ok(reason="HF Trainer checkpoints hold optimizer, scheduler and step state (save_only_model is off)")
        return skip(f"HF Trainer saves full state unless save_only_model is on, and {hidden}")
    if prog.has("megatron") and not prog.pythons:
        return skip("Megatron's saves are judged by megatron-resume-disabled (--no-save-optim, --no-save-rng)")
    if prog.has("training-hub"):
        full = [v for v, _e in _settings(prog, "accelerate_full_state_at_epoch") if _is_true(v)]
        if full:
            return ok(reason="training_hub saves its full state (accelerate_full_state_at_epoch is on)")
        return skip("training_hub's checkpoints are judged by training-hub-weights-only")
    if prog.complete and not saves:
        return ok(reason="the visible program saves no checkpoint of its own")
    return _unknown(prog, facts)


# -- save-total-limit-unset -----------------------------------------------------------------------------
@check("save-total-limit-unset")
def save_total_limit(facts: Facts, rule: Rule) -> Result:
    prog, outcome = _scoped(
        facts, HF_STACKS, "an HF Trainer-based stack (the limit applies to HF Trainer and LlamaFactory)"
    )
    if prog is None:
        assert outcome is not None
        return outcome
    got = _settings(prog, "save_total_limit")
    for val, ev in got:
        if isinstance(val, int) and not isinstance(val, bool) and val > 0:
            return ok(reason=f"save_total_limit is {val}", evidence=[ev])
        if val is None or val == 0:
            continue
        return ok(reason="save_total_limit is set (by an expression)", evidence=[ev])
    hidden = _args_hidden(prog)
    if hidden is not None:
        return skip(f"save_total_limit is not set where it can be seen, but {hidden}")
    if not (prog.complete or prog.framework_entry):
        return _unknown(prog, facts)
    where = _where_trainer_is_configured(prog)
    return fail(
        facts.subject(),
        [absence("save_total_limit", where)],
        "checkpoints accumulate without save_total_limit until the PVC fills up",
        "medium",
    )


def _where_trainer_is_configured(prog: Program) -> str:
    for part in prog.pythons:
        c = part.facts.first("TrainingArguments")
        if c is not None:
            return f"{part.source.object} {part.source.path} (line {c.site.line})"
    for cp in prog.configs:
        return f"{cp.source.object} {cp.source.path}"
    if prog.args is not None:
        return f"{prog.args.source.object} {prog.args.source.path}"
    src = prog.pythons[0].source if prog.pythons else prog.script_source
    return f"{src.object} {src.path}" if src else "the training config"


# -- sigterm-not-forwarded -----------------------------------------------------------------------------
@check("sigterm-not-forwarded")
def sigterm_not_forwarded(facts: Facts, rule: Rule) -> Result:
    prog = _program(facts)
    spec = facts.spec
    if prog is None or spec is None:
        return _unknown(prog, facts)
    if facts.mode == "lint" and facts.scope.trainjob is None:
        return skip("judged per TrainJob: its spec.trainer.command and args replace the runtime's")
    rt = facts.scope.runtime
    if rt is not None and isinstance((rt.spec.get("mlPolicy") or {}).get("flux"), dict):
        return skip("mlPolicy.flux: the Trainer's flux plugin runs the command through its own entrypoint script")
    if not prog.argv:
        return skip("no container command or args: the image's entrypoint is unknown")
    if prog.shell is None:
        first = prog.argv[0].rsplit("/", 1)[-1]
        if first in ("bash", "sh", "dash", "ash", "zsh", "ksh") or prog.argv[0].endswith((".sh", ".bash")):
            return skip(f"the container runs a shell script file ({' '.join(prog.argv[:2])}): whether it execs the "
                        "trainer depends on that file, which is not read")  # fmt: skip
        return ok(reason=f"the trainer is PID 1 itself ({first})")
    answer, reasons = prog.shell.pid1()
    if answer is None:
        return skip("whether SIGTERM reaches the trainer cannot be told: " + "; ".join(reasons[:2]))
    if answer:
        return ok(reason="; ".join(reasons[:2]))
    src = prog.script_source
    assert src is not None
    t = prog.trainer
    line = t.text.splitlines()[0].strip() if t is not None and t.text else src.text.strip().splitlines()[0]
    script = src.text.splitlines()
    if t is not None and 0 <= t.line < len(script) and line in script[t.line]:
        line = script[t.line].strip()  # the whole line: a pipeline's `| tee …` is what keeps the shell there
    shell = prog.shell.shell
    strict = shell in ("sh", "dash") or (t is not None and bool(t.heredocs))
    return fail(
        facts.subject(),
        [src.evidence(line)],
        "; ".join(reasons[:3]) or f"`{shell} -c` stays PID 1 and does not pass SIGTERM on",
        "high" if strict else "medium",
        exec_fix(t),
    )


# -- resume-true-hardcoded ------------------------------------------------------------------------------
def _is_true(v: Any) -> bool:
    return v is True or (isinstance(v, str) and v.strip().lower() == "true")


@check("resume-true-hardcoded")
def resume_true(facts: Facts, rule: Rule) -> Result:
    prog = _program(facts)
    if prog is None:
        return _unknown(prog, facts)
    for part in prog.pythons:
        for c in part.facts.calls.get("train") or []:
            v = c.kwargs.get("resume_from_checkpoint")
            if v is not None and v.known and _is_true(v.const):
                return fail(
                    facts.subject(),
                    [_site_ev(part, c.site.text)],
                    "resume_from_checkpoint is hard-coded true: the first run raises `No valid checkpoint found "
                    f"in output directory` ({part.source.label}:{c.site.line})",
                    "high" if v.origin in ("literal", "name") else "medium",
                )
    for cp in [prog.args, *prog.configs]:
        if cp is None:
            continue
        present, val = get(cp.doc, "resume_from_checkpoint")
        if present and _is_true(val) and (prog.has("hf-trainer") or prog.has("llamafactory") or prog.has("torchtune")):
            return fail(
                facts.subject(),
                [_config_ev(cp, "resume_from_checkpoint", val)],
                "resume_from_checkpoint is hard-coded true: the first run raises `No valid checkpoint found in "
                "output directory`",
            )
    if prog.complete and _args_hidden(prog) is None:
        return ok(reason="resume_from_checkpoint is not hard-coded to true")
    return _unknown(prog, facts) if not prog.complete else skip(f"resume_from_checkpoint may be set where it cannot be "
                                                        f"seen: {_args_hidden(prog)}")  # fmt: skip


# -- llamafactory-overwrite-output-dir ------------------------------------------------------------------
@check("llamafactory-overwrite-output-dir")
def lf_overwrite(facts: Facts, rule: Rule) -> Result:
    prog = _program(facts)
    for r in facts.history.runs:
        ev = r.log.first("overwrite_output") if r.log else None
        if ev is not None and r.log is not None:
            evidence = [ev.evidence(r.log.ref, r.attempt)]
            if prog is not None:
                evidence = [e for _v, e in _settings(prog, "overwrite_output_dir")[:1]] + evidence
            return fail(
                facts.subject(),
                evidence,
                "LlamaFactory deleted the previous trainer log: overwrite_output_dir is on and auto-resume was skipped",
            )
    prog, outcome = _scoped(facts, ("llamafactory",), "a LlamaFactory job")
    if prog is None:
        assert outcome is not None
        return outcome
    for val, ev in _settings(prog, "overwrite_output_dir"):
        if _is_true(val):
            return fail(facts.subject(), [ev], "overwrite_output_dir: true turns LlamaFactory's auto-resume off")
        if val is False or (isinstance(val, str) and val.lower() == "false"):
            return ok(reason="overwrite_output_dir is false", evidence=[ev])
    hidden = _args_hidden(prog)
    if hidden is not None or not prog.configs:
        return skip(f"LlamaFactory's config is not visible in full: {hidden or 'no config file is readable'}")
    return ok(reason="overwrite_output_dir is not set")


# -- megatron-resume-disabled ---------------------------------------------------------------------------
MEGATRON_FLAGS = ("finetune", "no-load-optim", "no-load-rng", "no-save-optim", "no-save-rng")


@check("megatron-resume-disabled")
def megatron(facts: Facts, rule: Rule) -> Result:
    prog, outcome = _scoped(facts, ("megatron",), "a Megatron/MindSpeed job")
    if prog is None:
        assert outcome is not None
        return outcome
    args = prog.args
    if args is None or not isinstance(args.doc.data, dict):
        return skip("Megatron's command line is not visible: " + prog.why_unknown())
    data = args.doc.data
    found = [f for f in MEGATRON_FLAGS if data.get(f) is True or data.get(f.replace("-", "_")) is True]
    evidence = [_config_ev(args, f, "") for f in found[:2]]
    problems = [f"--{f}" for f in found]
    load = data.get("load")
    save = data.get("save")
    if isinstance(load, str) and isinstance(save, str):
        if load.rstrip("/") != save.rstrip("/"):
            problems.append(f"--load {load} ≠ --save {save}")
            evidence.append(_config_ev(args, "load", load))
    elif isinstance(save, str) and load is None:
        problems.append("no --load: Megatron never reads what --save wrote")
        evidence.append(absence("--load", f"{args.source.object} {args.source.path}"))
    if problems:
        return fail(
            facts.subject(),
            evidence,
            "Megatron will not really resume: " + ", ".join(problems),
            fix="Use `--load` = `--save` (the PVC directory), drop --finetune/--no-load-optim/--no-load-rng/"
            "--no-save-*, and pass the base weights with --pretrained-checkpoint instead",
        )
    hidden = _args_hidden(prog) if prog.trainer is not None else None
    if hidden is not None and "image" not in hidden:
        return skip(f"no flag that disables resume is visible, but {hidden}")
    return ok(reason="--load equals --save and no flag disables resume")


# -- training-hub-weights-only --------------------------------------------------------------------------
@check("training-hub-weights-only")
def training_hub(facts: Facts, rule: Rule) -> Result:
    prog, outcome = _scoped(facts, ("training-hub",), "a training_hub job")
    if prog is None:
        assert outcome is not None
        return outcome
    got = _settings(prog, "accelerate_full_state_at_epoch")
    for val, ev in got:
        if _is_true(val):
            return ok(reason="accelerate_full_state_at_epoch is on", evidence=[ev])
        if val is False or (isinstance(val, str) and val.lower() == "false"):
            return fail(
                facts.subject(),
                [ev],
                "accelerate_full_state_at_epoch is off: only HF weights are saved, so nothing resumable exists",
            )
        return skip("accelerate_full_state_at_epoch is set by an expression whose value is not known")
    return skip(
        "accelerate_full_state_at_epoch is not set: whether full state is saved then depends on the training "
        "backend's default, which differs between instructlab.training versions; set it to true"
    )


# -- sigterm-exit-zero ----------------------------------------------------------------------------------
# launchers whose own process turns a SIGTERM into a non-zero exit whatever the workers return: torchrun's
# agent raises SignalException and exits 1 (recordings dcp-1rank-sigterm-handler, deepspeed-0.19-sigterm-handler)
_AGENTS = ("torchrun", "torch.distributed.run", "torch.distributed.launch")


def _agent(prog: Program) -> str | None:
    for w in (prog.trainer_argv or [])[:4]:
        name = w.rsplit("/", 1)[-1]
        if name in _AGENTS:
            return name
    return None


@check("sigterm-exit-zero")
def sigterm_exit_zero(facts: Facts, rule: Rule) -> Result:
    seen_nonzero = None
    if facts.mode != "lint":
        h = facts.history
        for r in h.runs:
            if r.exited_after_sigterm and r.exit_code == 0:
                ev = [*r.sigterm[:2], exit_code_ev(r)]
                if str(r.pod.status.get("phase") or "") == "Succeeded":
                    ev.append({"type": "field", "object": r.pod.ref(), "path": "status.phase", "value": "Succeeded"})
                return fail(
                    facts.subject(),
                    ev,
                    f"attempt {r.attempt} ({r.pod.name}) was stopped by SIGTERM and exited 0: Kubernetes counts such a "
                    "pod as Succeeded, and its Job as complete once every index is",
                    "high",
                )
        # 137 is SIGKILL at the end of the grace period: the program had not ended yet, and says nothing of the code
        # it would have exited with in time (recordings lightning-*-sigterm-no-handler: 137, then 0 in the second
        # takes); only an exit of its own after SIGTERM shows it
        stopped = [r for r in h.runs if r.sigterm and r.exit_code not in (None, 0, 137)]
        if stopped:
            r = stopped[0]
            seen_nonzero = ok(
                reason=f"attempt {r.attempt} ({r.pod.name}) was stopped by SIGTERM and exited {r.exit_code}",
                evidence=[*r.sigterm[:1], exit_code_ev(r)],
            )
    got = _from_program(facts)
    if got.status == "fail" or seen_nonzero is None:
        return got
    return seen_nonzero


def _from_program(facts: Facts) -> Result:
    """What the program does once SIGTERM reached it: exit 0 after a stop fails (the next eviction or drain may
    complete the TrainJob); exiting non-zero, dying of the signal, or not stopping at all passes."""
    prog = _program(facts)
    if prog is None:
        return _unknown(prog, facts)
    agent = _agent(prog)
    if agent is not None:
        return ok(reason=f"{agent}'s agent exits 1 when SIGTERM reaches it, whatever its workers return")
    ends = [(p, p.facts.sigterm_end) for p in prog.pythons if p.facts.sigterm_end is not None]
    zero = [(p, e) for p, e in ends if e.exit == "zero"]
    if zero:
        part, end = zero[0]
        ev = [_site_ev(part, end.handler.text)]
        if end.stop is not None and end.stop != end.handler:
            ev.append(_site_ev(part, end.stop.text))
        return fail(
            facts.subject(),
            ev,
            f"{part.source.label}: {end.why}; an eviction, drain or preemption then leaves a Succeeded pod",
            end.confidence,
            end.fix,
        )
    unknown = [(p, e) for p, e in ends if e.exit == "unknown"]
    if unknown:
        part, end = unknown[0]
        return skip(f"how {part.source.label} exits after SIGTERM cannot be told: {end.why}")
    if ends:
        part, end = ends[0]
        why = "exits non-zero" if end.exit == "nonzero" else "does not stop on it (SIGKILL ends it: exit 137)"
        ev = [_site_ev(part, end.handler.text)]
        return ok(reason=f"after SIGTERM {part.source.label} {why}: {end.why}", evidence=ev)
    if not prog.complete:
        return skip(f"whether the program handles SIGTERM cannot be told: {prog.why_unknown()}")
    if prog.framework_entry is not None:
        return skip(f"{prog.framework_entry}'s own entry point runs: how it exits after SIGTERM is not known here")
    if prog.has("lightning"):
        # Lightning without a fit() call read (a LightningCLI, a fit made elsewhere): its own handler exits 0 up to
        # 2.6.6 (recordings lightning-*-sigterm-no-handler-take2), 143 with upstream #21623; which one runs here
        # and whether the program catches SIGTERMException is not seen
        return skip(
            "Lightning handles SIGTERM itself (SIGTERMException: exit 0 up to Lightning 2.6.6); where this program's "
            "training starts is not read, so its exit code after one is not known"
        )
    # as the container's first process (PID 1) the kernel does not apply SIGTERM's default action: training goes
    # on until SIGKILL (recordings hf-*-sigterm-no-handler: exit 137)
    return ok(
        reason="the program installs no SIGTERM handler: the signal ends it (exit 143), or, where it is the "
        "container's first process, is ignored until SIGKILL ends it (exit 137)"
    )
