"""The post-incident report as data: what the Markdown and HTML renderers lay out.

Shaped like a blameless postmortem (Google SRE's, PagerDuty's): a summary (what broke, the cause, the
cost), the impact (steps and GPU-hours lost), the timeline, the root cause with its evidence, the fixes as
patches, what could not be checked and why, and the commands that show the evidence again.

Everything is built as plain strings, lists and dicts, then passed whole through the redactor
(`sources/redact.py`): a report may be pasted into a public issue. The renderers only lay it out and
escape it. Nothing in it depends on the time it is rendered, so the same diagnosis gives the same report.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from ckpt_doctor import __version__
from ckpt_doctor.facts.timeline import AttemptFact, Interruption, Timeline, rfc3339, timeline_of
from ckpt_doctor.report.evidence import describe
from ckpt_doctor.report.units import clock, duration, gpu_hours, when

if TYPE_CHECKING:
    from ckpt_doctor.engine.model import Finding
    from ckpt_doctor.engine.walk import Diagnosis
    from ckpt_doctor.sources.redact import Redactor

ENDING_WORDS = {
    "crash": "crashed",
    "oom-killed": "OOMKilled",
    "evicted": "evicted",
    "node-lost": "lost its node",
    "preempted": "preempted",
    "suspended": "suspended",
    "deadline": "deadline passed",
    "sigterm": "stopped by SIGTERM",
    "killed": "killed (SIGKILL)",
    "completed": "completed",
    "running": "running",
    "pending": "not started",
    "unknown": "unknown",
}
HOW_WORDS = {
    "initial": "first start",
    "jobset-restart": "JobSet restart",
    "container-restart": "container restart",
    "pod-replaced": "pod replaced",
    "resumed": "resume after suspend",
}


def build(diag: Diagnosis, redactor: Redactor) -> dict[str, Any]:
    """The report of one diagnosis, redacted."""
    from ckpt_doctor.report.patches import patches

    facts = diag.facts
    sc = facts.scope
    snap = sc.snap
    tl = timeline_of(facts)
    tgt = sc.target() or {}
    key = "/".join(x for x in (tgt.get("namespace"), tgt.get("name")) if x) or "?"
    doc: dict[str, Any] = {
        "title": f"Post-incident report: TrainJob {key}",
        "target": key,
        "namespace": sc.namespace,
        "name": sc.name,
        "source": _source(diag),
        "collectedAt": when(tl.collected_at) if tl.collected_at else "not recorded",
        "trainer": f"{facts.version.version} ({facts.version.why})",
        "tool": f"ckpt-doctor {__version__}",
        "summary": _summary(diag, tl),
        "impact": _impact(tl),
        "attempts": [_attempt_row(tl, i, a) for i, a in enumerate(tl.attempts)],
        "moments": _moments(tl),
        "rootCause": [_explanation(e.symptom, e.causes, e.unexplored) for e in diag.verdict],
        "latent": [_finding(f) for f in diag.latent],
        "fixes": [_fix(f, p) for f, p in patches(diag, redactor)],
        "notChecked": [{"rule": f.rule.id, "why": f.result.reason or ""} for f in diag.not_evaluated()],
        "notCollected": [{"what": g.what, "why": g.reason} for g in snap.not_collected],
        "unknowns": _unknowns(tl),
        "reproduce": _reproduce(diag, tl),
        "rerun": _rerun(diag),
        "notes": list(snap.notes) + [n for n in tl.notes if "interpolated" not in n],  # that one: by the chart
    }
    before = redactor.count
    doc = redactor.obj(doc)
    doc["redactions"] = redactor.count - before + int(snap.meta.get("redactions") or 0)
    doc["reproduce"] = [{**r, "command": _grep_before_redaction(r["command"])} for r in doc["reproduce"]]
    return doc


def _grep_before_redaction(command: str) -> str:
    """A grep for a line the redactor changed would match nothing: grep for the part before the marker (or
    drop the grep when nothing is left)."""
    import shlex

    from ckpt_doctor.report.reproduce import GREP
    from ckpt_doctor.sources.redact import MARK

    head, sep, quoted = command.partition(GREP)
    if not sep or MARK not in quoted:
        return command
    try:
        [pattern] = shlex.split(quoted)
    except ValueError:
        return head
    kept = pattern.split(MARK, 1)[0]
    return f"{head}{GREP}{shlex.quote(kept)}" if kept.strip() else head


def _source(diag: Diagnosis) -> str:
    snap = diag.facts.scope.snap
    cluster = snap.meta.get("cluster") if isinstance(snap.meta.get("cluster"), dict) else {}
    ctx = f" (context {cluster['context']})" if cluster.get("context") else ""
    from ckpt_doctor.simulation import WORDS, simulated_meta

    if simulated_meta(snap.meta):
        return f"{WORDS}{ctx}" if snap.source == "live" else f"bundle {Path(snap.location).name} from the {WORDS}"
    if snap.source == "live":
        return f"live cluster{ctx}"
    name = Path(snap.location).name if snap.location else "?"
    return f"bundle {name}{ctx}"


# -- summary and impact -----------------------------------------------------------------------------------
def _summary(diag: Diagnosis, tl: Timeline) -> dict[str, Any]:
    broke, cause = [], []
    for e in diag.verdict:
        s = e.symptom
        broke.append(f"{s.rule.title} (`{s.rule.id}`)" + (f": {s.result.detail}" if s.result.detail else ""))
        if e.causes:
            cause += [f"{c.rule.title} (`{c.rule.id}`)" for c in e.causes]
        else:
            more = f"; not evaluated: {', '.join(e.unexplored)}" if e.unexplored else ""
            cause.append(f"no cause found among the rules that could be evaluated for `{s.rule.id}`{more}")
    if not diag.verdict:
        if diag.latent:
            broke.append("no symptom failed: nothing shows that a restart lost work yet")
            cause += [f"latent: {c.rule.title} (`{c.rule.id}`)" for c in diag.latent]
        else:
            broke.append("nothing failed")
    return {"broke": broke, "cause": list(dict.fromkeys(cause)), "cost": cost_sentence(tl)}


def cost_sentence(tl: Timeline) -> str:
    """What the interruptions cost, in one sentence: a figure is exact, or a lower bound with what it leaves out,
    or unknown with why (never `at least 0`)."""
    crash = f"; {crash_loop_text(tl)}" if tl.crash_loop else ""
    if not tl.attempts:
        return "no attempt ran: nothing was lost"
    if not tl.interruptions and tl.count == 1:
        a = tl.attempts[-1]
        if tl.doubt:
            return f"no interruption is seen, but whether one came before {a.label} is unknown ({tl.doubt[0]})."
        if a.start == "pending":
            return "no training step ran yet: nothing was lost, but nothing trained"
        if tl.unseen:
            return f"no interruption is seen, but attempts may be missing ({tl.unseen})."
        return "no attempt was interrupted and resumed: no step was redone"
    lost = tl.steps_lost
    parts = []
    bounds = tl.bounds
    if lost is None:
        why = bounds[0] if bounds else "no interruption's cost could be told"
        parts.append(f"the steps lost are not known: {why}")
    elif tl.lost_complete:
        parts.append(f"{lost} training step{'s' if lost != 1 else ''} redone")
    elif lost == 0:
        parts.append(f"no step redone that the snapshot shows, but that is not all of it: {'; '.join(bounds[:2])}")
    else:
        parts.append(f"at least {lost} training step{'s' if lost != 1 else ''} redone (more is not known: "
                     f"{'; '.join(bounds[:2])})")  # fmt: skip
    if lost is not None:
        extra = []
        redo = [i.redo_seconds for i in tl.interruptions if i.redo_seconds is not None]
        if redo and lost:
            extra.append(f"≈ {duration(sum(redo))} of training")
        gh = tl.gpu_hours_lost
        if gh is not None and lost:
            gpus = sorted({i.gpus for i in tl.interruptions if i.gpus is not None})
            on = f" on {gpus[0]} GPU{'s' if gpus[0] != 1 else ''}" if len(gpus) == 1 else ""
            extra.append(f"{gpu_hours(gh)} GPU-hours{on}" + ("" if tl.gpu_hours_complete else " or more"))
        if extra:
            parts[-1] += f" ({', '.join(extra)})"
    down = tl.downtime_seconds
    if down:
        still = " so far" if any(i.downtime_open for i in tl.interruptions) else ""
        parts.append(f"{duration(down)} without training between attempts{still}")
    return "; ".join(parts) + crash + "."


def crash_loop_text(tl: Timeline) -> str:
    """`crash-looping: …` when the trainer container waits to restart after crashing again and again."""
    return f"crash-looping: {tl.crash_loop}" if tl.crash_loop else ""


def _impact(tl: Timeline) -> list[list[str]]:
    rows: list[list[str]] = []
    inferred = sum(a.span for a in tl.attempts if a.inferred)
    n = tl.interruption_count
    att = f"{tl.count} ({n} interruption{'s' if n != 1 else ''})"
    if inferred:
        gone = "pods or logs gone" if any(a.span > 1 for a in tl.attempts) else "pods gone"
        att += f"; {inferred} known only by inference ({gone})"
    if tl.doubt:
        att += f"; maybe more before: {tl.doubt[0]}"
    rows.append(["Attempts", att])
    lost = tl.steps_lost
    why = "; ".join(tl.bounds)
    if lost is None:
        rows.append(["Steps redone", "unknown: " + (why or "no interruption's cost could be told")])
    elif tl.lost_complete:
        rows.append(["Steps redone", f"{lost}"])
    elif lost == 0:
        rows.append(["Steps redone", f"none that the snapshot shows; not all of it is known ({why})"])
    else:
        rows.append(["Steps redone", f"at least {lost} ({why})"])
    behind = [i for i in tl.interruptions if i.behind_save]
    for i in behind:
        a = tl.attempts[i.after]
        rows.append(["Resumed behind the newest save",
                     f"{a.label} began at step {i.to_step} although step {i.newest_save} was saved: "
                     f"{i.behind_save} steps"])  # fmt: skip
    redo = [i for i in tl.interruptions if i.redo_seconds is not None and i.steps_lost]
    if redo:
        rates = []
        for i in redo:
            a = tl.attempts[i.before]
            if a.rate:
                rates.append(f"{a.label} at {a.rate:.3g} steps/s, from {a.rate_from}")
        rows.append(["Training time redone", f"≈ {duration(sum(i.redo_seconds or 0 for i in redo))} "
                     f"({'; '.join(dict.fromkeys(rates))})"])  # fmt: skip
    gh = tl.gpu_hours_lost
    if gh is not None and tl.interruptions:
        src = sorted({tl.attempts[i.before].gpus_from for i in tl.interruptions if tl.attempts[i.before].gpus_from})
        tail = "" if tl.gpu_hours_complete else " or more (some interruptions' cost is unknown)"
        rows.append(["GPU-hours lost", f"{gpu_hours(gh)}{tail}" + (f" (GPUs from {', '.join(src)})" if src else "")])
    elif tl.interruptions:
        rows.append(["GPU-hours lost", "unknown (the steps lost, the rate or the GPUs are not known)"])
    down = tl.downtime_seconds
    if down is not None and tl.interruptions:
        still = " so far: the next attempt has not started" if any(i.downtime_open for i in tl.interruptions) else ""
        rows.append(["Time without training", f"{duration(down)}{still}"])
    if tl.attempts:
        rows.append(["When the snapshot was taken", snapshot_state(tl)])
    return rows


def ended_words(a: AttemptFact) -> str:
    """How an attempt stands or ended, in a few words (a container waiting to restart says why)."""
    if a.end.kind == "pending" and a.end.reason:
        return f"waiting to start again ({a.end.reason})"
    return ENDING_WORDS.get(a.end.kind, a.end.kind)


def snapshot_state(tl: Timeline) -> str:
    last = tl.attempts[-1]
    state = f"{last.label}: {ended_words(last)}"
    if last.last_step is not None:
        state += f" at step {last.last_step_text}"
    if last.end.then_text:
        state += f"; then {last.end.then_text}"
    if tl.crash_loop:
        state += f"; {crash_loop_text(tl)}"
    return state


# -- timeline ---------------------------------------------------------------------------------------------
def began(a: AttemptFact) -> str:
    if a.start == "resumed":
        step = f"step {a.start_step}" if a.start_step is not None else "a checkpoint"
        failed = ", and failed to load it" if a.resume_failed else ""
        return f"resumed from {step}" + (f" ({a.resumed_from})" if a.resumed_from else "") + failed
    if a.start == "fresh":
        return "fresh start (step 0)"
    if a.start == "pending":
        return "not started yet"
    return "unknown"


def _saves_text(a: AttemptFact) -> str:
    steps = [s.step for s in a.saves]
    if not steps:
        return "none seen" if a.log is not None else "unknown"
    if len(steps) <= 4:
        return ", ".join(map(str, steps))
    return f"{steps[0]}, {steps[1]} … {steps[-1]} ({len(steps)})"


def _attempt_row(tl: Timeline, pos: int, a: AttemptFact) -> dict[str, str]:
    into = tl.interruption_into(pos)
    ended = clock(a.ended) if a.ended else (f"before {clock(a.ended_by)}" if a.ended_by else "")
    if a.running:
        ended = "running"
    end = a.end.text if a.end.kind not in ("running", "pending") else ENDING_WORDS[a.end.kind]
    if a.end.kind == "pending" and a.end.reason:
        end = a.end.text
    if a.end.then_text and a.end.kind != "running":
        end += f" → {a.end.then_text}"
    return {
        "attempt": a.label + (" (inferred)" if a.inferred else ""),
        "how": HOW_WORDS.get(a.how, a.how) + (", then container restarts" if a.span > 1 else ""),
        "inferred": a.inferred,
        "began": began(a),
        "started": clock(a.started) if a.started else "unknown",
        "ended": ended or "unknown",
        "end": end,
        "saves": _saves_text(a),
        "last": a.last_step_text,
        "lost": _lost_text(into) if into is not None else "",
        "nodes": ", ".join(a.nodes) + (f" ({len(a.pods)} pods)" if len(a.pods) > 1 else ""),
        "gpus": str(a.gpus) if a.gpus is not None else "unknown",
    }


def _lost_text(i: Interruption) -> str:
    if i.steps_lost is None:
        return "unknown"
    if i.behind_save:
        return f"{i.steps_lost} ({i.behind_save} behind the newest save)"
    return str(i.steps_lost)


def _moments(tl: Timeline) -> list[dict[str, str]]:
    """The key moments, in time order: starts, last saves, ends, rewinds, the snapshot."""
    out: list[tuple[str, int, str]] = []
    for pos, a in enumerate(tl.attempts):
        into = tl.interruption_into(pos)
        where = f" on {', '.join(a.nodes)}" if a.nodes else ""
        drop = f": {into.label}" if into is not None and into.to_step is not None else ""
        if a.inferred and not a.started:
            at = a.ended_by
            gone = a.inferred.split(";")[0]
            what = f"{a.label} (known only by inference: {gone}) ended" + (f" by {clock(at)}" if at else "")
            out.append((at, 2 * pos, what + (f" → {a.end.then_text}" if a.end.then_text else "")))
            continue
        if a.start == "pending" and not a.started:
            wait = f": {a.end.text}" if a.end.reason else ""
            out.append(("", 2 * pos, f"{a.label} has not started{where}{wait}"))
            continue
        out.append((a.started, 2 * pos, f"{a.label} started ({HOW_WORDS.get(a.how, a.how)}): {began(a)}{where}{drop}"))
        if a.saves and not a.running:
            s = a.saves[-1]
            pt = next((p for p in a.points if p.kind == "save" and p.step == s.step and p.t is not None), None)
            at = rfc3339(pt.t) if pt is not None else ""
            est = " (time interpolated)" if pt is not None and pt.estimated else ""
            out.append((at, 2 * pos, f"{a.label}'s last complete save: step {s.step}{est}"))
        if a.running or a.start == "pending":
            continue
        end = f"{a.label} ended: {a.end.text}"
        if a.last_step is not None:
            end += f" (last step {a.last_step_text})"
        elif a.last_step_unknown:
            end += f" (last step unknown: {a.last_step_unknown})"
        if a.end.then_text:
            end += f" → {a.end.then_text}"
        out.append((a.ended or a.ended_by, 2 * pos + 1, end))
    if tl.collected_at:
        last = tl.attempts[-1] if tl.attempts else None
        state = ""
        if last is not None:
            state = f": {last.label} {ended_words(last)}"
            if last.last_step is not None:
                state += f" at step {last.last_step_text}"
        out.append((tl.collected_at, 1 << 20, f"snapshot taken{state}"))
    # a moment without a time stands where its attempt does: after the moments of the attempts before it
    out.sort(key=lambda m: m[1])
    placed: list[tuple[str, int, str, bool]] = []
    carry = ""
    for t, o, w in out:
        placed.append((t or carry, o, w, not t))
        carry = t or carry
    placed.sort(key=lambda m: (m[0] or "", m[1]))
    return [{"at": clock(t) if t and not guessed else "time unknown", "what": w} for t, _o, w, guessed in placed]


# -- findings ---------------------------------------------------------------------------------------------
def _finding(f: Finding) -> dict[str, Any]:
    return {
        "id": f.rule.id,
        "title": f.rule.title,
        "kind": f.rule.kind,
        "severity": f.rule.severity,
        "confidence": f.result.confidence,
        "detail": f.result.detail or "",
        "explanation": f.rule.explanation.strip(),
        "evidence": [describe(ev) for ev in f.result.evidence],
        "fix": (f.result.fix or f.rule.fix).strip(),
        "docs": list(f.rule.docs),
    }


def _explanation(symptom: Finding, causes: list[Finding], unexplored: list[str]) -> dict[str, Any]:
    return {"symptom": _finding(symptom), "causes": [_finding(c) for c in causes], "unexplored": list(unexplored)}


def _fix(f: Finding, p: Any) -> dict[str, Any]:
    return {
        "id": f.rule.id,
        "title": f.rule.title,
        "fix": (f.result.fix or f.rule.fix).strip(),
        "what": p.what,
        "target": p.target,
        "diff": p.diff,
        "whyNot": p.why_not,
        "docs": list(f.rule.docs),
    }


def _unknowns(tl: Timeline) -> list[str]:
    out = [f"interruption before {tl.attempts[i.after].label}: {i.unknown}" for i in tl.interruptions if i.unknown]
    out += [f"{a.label}: {a.inferred}" for a in tl.attempts if a.inferred]
    return out


def _reproduce(diag: Diagnosis, tl: Timeline) -> list[dict[str, str]]:
    from ckpt_doctor.report.reproduce import commands

    sc = diag.facts.scope
    evidence: list[dict[str, Any]] = []
    for e in diag.verdict:
        evidence += e.symptom.result.evidence
        for c in e.causes:
            evidence += c.result.evidence
    for c in diag.latent:
        evidence += c.result.evidence
    for a in tl.attempts:
        evidence += a.end.evidence
    gone = {str(ev.get("pod")) for ev in evidence if ev.get("type") == "log"} - {p.name for p in sc.pods}
    out = []
    if sc.trainjob is not None:
        out.append({"what": "the TrainJob and its conditions", "command": _cmd_get(sc.trainjob.ref())})
        ns = f" -n {sc.namespace}" if sc.namespace else ""
        sel = f"jobset.sigs.k8s.io/jobset-name={sc.name}"
        out.append({"what": "the trainer pods of every attempt still there",
                    "command": f"kubectl get pods{ns} -l {sel} -o wide"})  # fmt: skip
    out += [{"what": w, "command": c} for w, c in commands(evidence, sc.namespace, gone)]
    seen: set[str] = set()
    return [x for x in out if not (x["command"] in seen or seen.add(x["command"]))]  # type: ignore[func-returns-value]


def _cmd_get(ref: str) -> str:
    from ckpt_doctor.report.reproduce import _get

    return _get(ref)


def _rerun(diag: Diagnosis) -> str:
    sc = diag.facts.scope
    snap = sc.snap
    if snap.source == "live":
        return f"ckpt-doctor report {sc.namespace}/{sc.name} -o markdown" if sc.namespace else "ckpt-doctor report"
    name = Path(snap.location).name if snap.location else "BUNDLE"
    return f"ckpt-doctor report --bundle {name} -o markdown"
