"""Symptoms: what a user sees. Each judges from attempts, logs, conditions and events."""

from __future__ import annotations

import re
from typing import Any

from ckpt_doctor.engine.checks import absence, check, condition_ev, event_ev, field_ev, text_ev
from ckpt_doctor.engine.model import Result, Rule, fail, ok, skip
from ckpt_doctor.facts.attempts import Run
from ckpt_doctor.facts.context import Facts
from ckpt_doctor.facts.overrides import compare
from ckpt_doctor.scope import REPLICATED_JOB_LABEL, event_fields

WEBHOOK_DENIAL = re.compile(
    r'admission webhook "(?:validator\.trainjob\.trainer\.kubeflow\.org|'
    r'defaulter\.trainjob\.trainer\.kubeflow\.org)" denied the request'
)


def _log_ev(run: Run, ev: Any) -> dict[str, Any]:
    assert run.log is not None
    return ev.evidence(run.log.ref, attempt=run.attempt)


def _gaps(runs: list[Run]) -> str:
    gaps = sorted({r.log_gap for r in runs if r.log_gap})
    return "; ".join(gaps[:3]) + (f" (+{len(gaps) - 3} more)" if len(gaps) > 3 else "")


@check("fresh-start-after-restart")
def fresh_start(facts: Facts, rule: Rule) -> Result:
    h = facts.history
    later = h.later_runs()
    if not later:
        if h.earlier:
            return skip("an earlier attempt happened, but no pod of a later attempt is in the snapshot")
        return ok(reason="no restart, resume or preemption happened: there is no later attempt to judge")
    fresh, resumed = [], []
    for r in later:
        kind, _step, ev = r.start()
        if kind == "fresh":
            fresh.append((r, ev))
        elif kind == "resumed":
            resumed.append((r, ev))
    if fresh:
        earlier_runs = [r for r in h.runs if r.attempt < min(x.attempt for x, _ in fresh) and r.log]
        if earlier_runs and all((r.last_step() or 0) <= 1 and not r.saves() for r in earlier_runs):
            return ok(reason="the earlier attempt never trained past step 1, so starting at step 0 is expected")
        r, ev = fresh[0]
        inferred = ev is not None and ev.kind == "progress"
        evidence = [*h.earlier[:3], _log_ev(r, ev)]
        how = facts.history.attempt(r.attempt).how
        detail = (
            f"attempt {r.attempt} ({how}, pod {r.pod.name}) started training from step 0"
            + (" (judged from its first progress line)" if inferred else "")
            + f"; {len(fresh)} later run(s) started fresh"
        )
        return fail(facts.subject(), evidence, detail, "medium" if inferred else "high")
    if resumed:
        r, ev = resumed[0]
        return ok(reason=f"attempt {r.attempt} resumed ({ev.text[:120]})", evidence=[_log_ev(r, ev)])
    return skip(
        "no log of a later attempt shows a resume or a fresh start" + (f": {_gaps(later)}" if _gaps(later) else "")
    )


def _counted_saves(runs: list[Run]) -> list[tuple[Run, Any]]:
    """Saves that completed: the last save of a run killed right after it may be partial."""
    out = []
    for r in runs:
        saves = r.saves()
        if not saves:
            continue
        last_event = r.log.events[-1] if r.log and r.log.events else None
        for s in saves:
            if s is saves[-1] and r.ended_by_signal() and last_event is s and s.signature.startswith("hf-"):
                continue  # HF logs "Saving" before it writes: a save cut off by SIGKILL is not a save
            out.append((r, s))
    return out


@check("resumed-older-checkpoint")
def resumed_older(facts: Facts, rule: Rule) -> Result:
    h = facts.history
    resumed = [(r, r.start()[1], r.start()[2]) for r in h.later_runs() if r.start()[0] == "resumed"]
    resumed = [(r, step, ev) for r, step, ev in resumed if step is not None]
    if not resumed:
        return ok(reason="no later attempt resumed from a checkpoint step")
    # a running maximum of the newest completed save, over the attempts before each one
    newest_before: dict[int, tuple[Run, Any] | None] = {}
    running: tuple[Run, Any] | None = None
    for a in h.attempts:
        newest_before[a.index] = running
        saves = _counted_saves(a.runs)
        if saves:
            got = max(saves, key=lambda p: p[1].step or 0)
            if running is None or (got[1].step or 0) > (running[1].step or 0):
                running = got
    judged = False
    for r, step, ev in resumed:
        prior = newest_before.get(r.attempt)
        if prior is None:
            continue
        judged = True
        sr, best = prior
        if (best.step or 0) > step:
            return fail(
                facts.subject(),
                [_log_ev(sr, best), _log_ev(r, ev)],
                f"attempt {r.attempt} resumed from step {step}, but attempt {sr.attempt} had saved step {best.step}",
            )
    if not judged:
        return skip("no log of an earlier attempt shows its saves, so the newest checkpoint is unknown")
    return ok(reason="every resume used the newest checkpoint the earlier attempts saved")


@check("overrides-not-applied")
def overrides_not_applied(facts: Facts, rule: Rule) -> Result:
    tj = facts.scope.trainjob
    assert tj is not None
    want = tj.spec.get("trainer") or {}
    if not want:
        return ok(reason="the TrainJob sets no spec.trainer fields")
    pods = facts.scope.trainer_pods()
    if not pods:
        return skip("no trainer pods to compare spec.trainer against")
    newest = max(p.created for p in pods)
    current = [p for p in pods if p.created == newest] or pods
    evidence: list[dict[str, Any]] = []
    fields: set[str] = set()
    for pod in current:
        for d in compare(tj, pod):
            if d.field in fields:
                continue
            fields.add(d.field)
            evidence.append(field_ev(tj.ref(), d.want_path, d.wanted))
            evidence.append(field_ev(pod.ref(), d.pod_path, d.actual))
    num = want.get("numNodes")
    if isinstance(num, int) and facts.scope.jobs:
        names = facts.scope.trainer_job_names()
        trainer_jobs = [j for j in facts.scope.jobs if j.labels.get(REPLICATED_JOB_LABEL) in names]
        par = sum(int(j.spec.get("parallelism") or 1) for j in trainer_jobs if not j.status.get("failed"))
        latest = [j for j in trainer_jobs if j.created == max((x.created for x in trainer_jobs), default="")]
        par = sum(int(j.spec.get("parallelism") or 1) for j in latest)
        if latest and par != num:
            fields.add("numNodes")
            evidence.append(field_ev(tj.ref(), "spec.trainer.numNodes", num))
            evidence.append(field_ev(latest[0].ref(), "spec.parallelism", par))
    if evidence:
        return fail(
            facts.subject(),
            evidence,
            f"the trainer pods do not carry spec.trainer.{', '.join(sorted(fields))} "
            f"({len(current)} pod(s) of the newest attempt compared)",
        )
    return ok(reason=f"spec.trainer matches the trainer container of {len(current)} pod(s)")


VOLUME_PATTERNS = [
    ("FailedAttachVolume", "Multi-Attach error for volume"),
    ("FailedMount", "Unable to attach or mount volumes"),
    ("FailedMount", "MountVolume."),
    ("FailedScheduling", "unbound immediate PersistentVolumeClaims"),
    ("FailedScheduling", "volume node affinity conflict"),
    ("FailedScheduling", "didn't match PersistentVolume's node affinity"),
    ("FailedScheduling", 'persistentvolumeclaim "'),
    ("FailedScheduling", "ReadWriteOncePod access mode"),
]


def volume_events(facts: Facts) -> list[tuple[dict[str, Any], str]]:
    out = []
    pods = {p.name for p in facts.scope.pods}
    for ev in facts.scope.events:
        f = event_fields(ev)
        if f["involvedKind"] != "Pod" or f["involvedName"] not in pods:
            continue
        for reason, needle in VOLUME_PATTERNS:
            if f["reason"] == reason and needle in f["message"]:
                out.append((f, f["involvedName"]))
                break
    return out


@check("volume-attach-blocked")
def volume_attach_blocked(facts: Facts, rule: Rule) -> list[Result]:
    hits = volume_events(facts)
    if not hits:
        return [ok(reason="no attach, mount or volume-binding event on the trainer pods")]
    by_pod: dict[str, list[dict[str, Any]]] = {}
    for f, pod in hits:
        by_pod.setdefault(pod, []).append(f)
    results = []
    for pod_name, evs in sorted(by_pod.items()):
        pod = next(p for p in facts.scope.pods if p.name == pod_name)
        phase = pod.status.get("phase", "")
        waiting = [
            (cs.get("state") or {}).get("waiting", {}).get("reason")
            for cs in pod.status.get("containerStatuses") or []
            if isinstance(cs, dict)
        ]
        stuck = phase == "Pending" or "ContainerCreating" in waiting
        evidence = [event_ev(f) for f in evs[:3]] + [field_ev(pod.ref(), "status.phase", phase)]
        detail = (
            f"pod {pod_name} {'is stuck' if stuck else 'was held up'} on its volume: "
            f"{evs[0]['reason']}: {evs[0]['message'][:160]}"
        )
        results.append(fail(pod.subject(), evidence, detail, "high" if stuck else "medium"))
    return results


def all_logs_clear(facts: Facts, read: list[Run], what: str) -> Result:
    """A pass needs every log: unread ones make the rule not_evaluated, naming them."""
    unread = [r for r in facts.history.runs if r.log is None]
    if unread:
        return skip(
            f"{len(unread)} of {len(facts.history.runs)} trainer log(s) could not be read, and the "
            f"{len(read)} read show no {what}: {_gaps(unread)}"
        )
    if not read:
        return skip("no trainer log in the snapshot")
    return ok(reason=f"no {what} in {len(read)} log(s)")


def _runs_with_logs(facts: Facts) -> list[Run]:
    return [r for r in facts.history.runs if r.log is not None]


@check("checkpoint-disk-full")
def disk_full(facts: Facts, rule: Rule) -> Result:
    for p in facts.scope.pods:
        msg = str(p.status.get("message") or "")
        if p.status.get("reason") == "Evicted" and ("ephemeral" in msg.lower() or "EmptyDir" in msg):
            return fail(
                facts.subject(),
                [field_ev(p.ref(), "status.message", msg)],
                f"pod {p.name} was evicted for local storage: {msg[:160]}",
            )
    runs = _runs_with_logs(facts)
    for r in runs:
        ev = r.log.first("disk_full") if r.log else None
        if ev is not None:
            return fail(
                facts.subject(),
                [_log_ev(r, ev)],
                f"attempt {r.attempt} ({r.pod.name}) ran out of space: {ev.text[:160]}",
            )
    return all_logs_clear(facts, runs, "out-of-space error")


def interrupted_runs(facts: Facts) -> list[Run]:
    """Runs that ended by SIGTERM: suspend, preemption, eviction, or a JobSet-wide restart."""
    h = facts.history
    out = []
    for a, nxt in zip(h.attempts, h.attempts[1:], strict=False):
        for r in a.runs:
            if r.ended_by_signal() or nxt.how in ("resumed", "pod-replaced"):
                out.append(r)
    return out


@check("final-checkpoint-missing")
def final_checkpoint_missing(facts: Facts, rule: Rule) -> Result:
    h = facts.history
    runs = interrupted_runs(facts)
    if not runs:
        return ok(reason="no attempt in the snapshot ended by SIGTERM (suspend, preemption, eviction)")
    judged = False
    for r in runs:
        if r.log is None:
            continue
        judged = True
        flushed = r.log.last("sigterm_flush") is not None
        sig = r.log.last("sigterm")
        if sig is not None:
            flushed = flushed or any(
                e.kind == "saved" and e.offset >= sig.offset and e.window == sig.window for e in r.log.events
            )
        if flushed:
            continue
        last = r.last_step()
        nxt = [x for x in h.runs if x.attempt == r.attempt + 1 and x.start()[0] == "resumed"]
        if nxt and last is not None:
            _k, step, ev = nxt[0].start()
            if step is not None and step < last:
                evidence = [absence("a final save after SIGTERM", f"log of {r.label}")]
                tail = r.log.last("progress", "saved")
                if tail is not None:
                    evidence.append(_log_ev(r, tail))
                evidence.append(_log_ev(nxt[0], ev))
                return fail(
                    facts.subject(),
                    evidence,
                    f"attempt {r.attempt} reached step {last} and was stopped without a final save; "
                    f"attempt {nxt[0].attempt} resumed from step {step}",
                )
    if not judged:
        return skip("the interrupted attempt's log is not in the snapshot: " + _gaps(runs))
    return ok(reason="every interrupted attempt saved before it stopped, or nothing was lost")


def _failed_condition(facts: Facts) -> tuple[str, dict[str, Any]] | None:
    for obj in (facts.scope.trainjob, facts.scope.jobset):
        if obj is None:
            continue
        c = obj.condition("Failed")
        if c is not None and str(c.get("status")) == "True":
            return obj.ref(), c
    return None


@check("job-failed-without-restart")
def failed_without_restart(facts: Facts, rule: Rule) -> Result:
    got = _failed_condition(facts)
    if got is None:
        if facts.scope.jobset is None and facts.scope.trainjob is not None and not facts.scope.trainjob.status:
            return skip("neither the TrainJob status nor the JobSet is in the snapshot")
        return ok(reason="the TrainJob has not failed")
    ref, c = got
    if c.get("reason") == "FailedJobs" and facts.history.jobset_restarts == 0:
        ev = [condition_ev(ref, c)]
        if facts.scope.jobset is not None:
            ev.append(
                field_ev(facts.scope.jobset.ref(), "status.restarts", facts.scope.jobset.status.get("restarts", 0))
            )
        return fail(facts.subject(), ev, f"the job failed on its first Job failure ({c.get('message', '')[:160]})")
    return ok(reason=f"the failure reason is {c.get('reason')}, not a failure without restart")


@check("restarts-exhausted")
def restarts_exhausted(facts: Facts, rule: Rule) -> Result:
    got = _failed_condition(facts)
    if got is None:
        return ok(reason="the TrainJob has not failed")
    ref, c = got
    if c.get("reason") == "ReachedMaxRestarts":
        ev = [condition_ev(ref, c)]
        if facts.scope.jobset is not None:
            ev.append(field_ev(facts.scope.jobset.ref(), "status.restarts", facts.history.jobset_restarts))
        return fail(
            facts.subject(), ev, f"the JobSet used all its restarts ({facts.history.jobset_restarts}) and failed"
        )
    return ok(reason=f"the failure reason is {c.get('reason')}")


@check("resume-crashed")
def resume_crashed(facts: Facts, rule: Rule) -> Result:
    runs = _runs_with_logs(facts)
    for r in runs:
        ev = r.log.first("resume_error", "partial_checkpoint") if r.log else None
        if ev is not None:
            return fail(
                facts.subject(),
                [_log_ev(r, ev)],
                f"attempt {r.attempt} ({r.pod.name}) crashed while loading its checkpoint: {ev.text[:160]}",
            )
    return all_logs_clear(facts, runs, "checkpoint-loading error")


@check("trainjob-rejected")
def trainjob_rejected(facts: Facts, rule: Rule) -> Result:
    if facts.mode == "explain-error":
        text = facts.error_text or ""
        m = WEBHOOK_DENIAL.search(text) or re.search(r"denied the request|is invalid", text)
        if m:
            return fail(
                None,
                [text_ev(text, m.start(), m.end())],
                "the API server refused the TrainJob",
            )
        return ok(reason="the text is not an admission denial")
    for ev in facts.scope.events:
        f = event_fields(ev)
        if f["type"] == "Warning" and (
            f["reason"] == "TrainJobResourcesCreationFailed" or WEBHOOK_DENIAL.search(f["message"])
        ):
            return fail(facts.subject(), [event_ev(f)], f"{f['reason']}: {f['message'][:200]}")
    return ok(reason="no Warning event shows a rejected TrainJob or failed reconciliation")
