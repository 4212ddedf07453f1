"""Symptoms: what a user sees. Each judges from attempts, logs, conditions and events."""

from __future__ import annotations

import re
from itertools import pairwise
from typing import TYPE_CHECKING, Any

from ckpt_doctor.engine.checks import absence, check, condition_ev, event_ev, exit_code_ev, field_ev, text_ev
from ckpt_doctor.engine.model import Result, Rule, fail, ok, skip
from ckpt_doctor.facts.attempts import SIGKILL_EXIT, SIGTERM_EXIT, Attempt, History, Run
from ckpt_doctor.facts.context import Facts
from ckpt_doctor.facts.listing import epoch_text
from ckpt_doctor.facts.overrides import compare
from ckpt_doctor.scope import REPLICATED_JOB_LABEL, event_fields

if TYPE_CHECKING:
    from ckpt_doctor.facts.checkpoints import Judged
    from ckpt_doctor.frameworks.completeness import Checkpoint

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


def _unknown_starts(h: History, attempts: list[Attempt]) -> list[str]:
    """Why the start of some later attempts cannot be told: their logs, or the attempts themselves, are gone."""
    out = []
    for a in attempts:
        if h.attempt_start(a)[0] == "unknown":
            gaps = _gaps(a.runs)
            out.append(f"attempt {a.index}: " + (gaps or "no line shows how it began"))
    return out


@check("fresh-start-after-restart")
def fresh_start(facts: Facts, rule: Rule) -> Result:
    h = facts.history
    later = h.later_attempts()
    if not later:
        if h.earlier:
            return skip("an earlier attempt happened, but no pod of a later attempt is in the snapshot")
        if h.doubt:
            return skip("whether the first attempt seen was the first start is unknown: " + "; ".join(h.doubt))
        return ok(reason="no restart, resume or preemption happened: there is no later attempt to judge")
    fresh = [(a, *h.attempt_start(a)[2:]) for a in later if h.attempt_start(a)[0] == "fresh"]
    if fresh:
        a, r, ev = fresh[0]
        earlier_runs = [x for x in h.runs if x.attempt < a.index]
        if (
            earlier_runs
            and not h.unseen
            and all(x.log is not None and x.last_step() is not None and x.last_step() <= 1 for x in earlier_runs)
            and not any(x.saves() for x in earlier_runs)
        ):
            return ok(reason="the earlier attempts never trained past step 1, so starting at step 0 is expected")
        inferred = ev is not None and ev.kind == "progress"
        evidence = [*h.earlier[:3], _log_ev(r, ev)]
        detail = (
            f"attempt {a.index} ({a.how}, pod {r.pod.name}) started training from step 0"
            + (" (judged from its first progress line)" if inferred else "")
            + f"; {len(fresh)} later attempt(s) started fresh"
        )
        return fail(facts.subject(), evidence, detail, "medium" if inferred else "high")
    unknown = _unknown_starts(h, later) + [u for u in h.unseen if "gone" in u and h.attempts]
    unknown += h.doubt  # attempts may have come before the first one seen: any of them may have started fresh
    if unknown:
        drop = _progress_drop(facts)
        if drop is not None:
            return fail(facts.subject(), [*h.earlier[:2], drop[1]], drop[0], "medium")
        return skip("how some later attempts began cannot be told: " + "; ".join(unknown[:3]))
    started = [a for a in later if h.attempt_start(a)[0] == "resumed"]
    if not started:
        return ok(reason=f"the later attempt {later[0].index} has not started its trainer yet: nothing trained again")
    a = started[0]
    _k, _step, r, ev = h.attempt_start(a)
    assert r is not None and ev is not None
    return ok(reason=f"every later attempt resumed; attempt {a.index}: {ev.text[:120]}", evidence=[_log_ev(r, ev)])


def _progress_drop(facts: Facts) -> tuple[str, dict[str, Any]] | None:
    """The TrainJob's own progress report (status.trainerStatus, or RHOAI's annotation), made after the last
    attempt began, below every checkpoint an earlier attempt completed: that attempt resumed from none of them.
    (detail, evidence) or None."""
    from ckpt_doctor.facts.platform import platform_of, progress_below
    from ckpt_doctor.facts.timeline import _total, timeline_of

    tl = timeline_of(facts)
    if len(tl.attempts) < 2 or tl.attempts[-1].start in ("resumed", "fresh"):
        return None
    last = tl.attempts[-1]
    saved = [s.step for a in tl.attempts[:-1] for s in a.saves]
    plat = platform_of(facts)
    why = progress_below(plat, last.started, _total(facts.history), saved)
    if why is None:
        return None
    sig = plat.get("trainerStatus") if plat.trainer_status and plat.trainer_status.source != "annotation" else None
    sig = sig or plat.get("rhoaiTrainerStatus")
    assert sig is not None
    return f"{last.label}: {why}, so it resumed from none of them", sig.evidence()


@check("resumed-older-checkpoint")
def resumed_older(facts: Facts, rule: Rule) -> Result:
    h = facts.history
    later = h.later_attempts()
    if not later:
        if h.earlier:
            return skip("an earlier attempt happened, but no pod of a later attempt is in the snapshot")
        if h.doubt:
            return skip("whether an attempt saved anything before the first one seen is unknown: " + "; ".join(h.doubt))
        return ok(reason="no later attempt: nothing resumed")
    # a running maximum of the newest completed save, over the attempts before each one
    newest_before: dict[int, tuple[Run, Any] | None] = {}
    running: tuple[Run, Any] | None = None
    for a in h.attempts:
        newest_before[a.index] = running
        saves = [(r, e) for r in a.runs for e in r.saves()]
        if saves:
            got = max(saves, key=lambda p: p[1].step or 0)
            if running is None or (got[1].step or 0) > (running[1].step or 0):
                running = got
    unknown: list[str] = []
    for a in later:
        kind, step, r, ev = h.attempt_start(a)
        if kind in ("fresh", "pending"):
            continue  # a fresh start is fresh-start-after-restart's to judge; a pending one has not begun
        if kind == "unknown" or step is None:
            unknown.append(f"attempt {a.index}: how it began is not shown ({_gaps(a.runs) or 'no resume line'})")
            continue
        assert r is not None and ev is not None
        prior = newest_before.get(a.index)
        if prior is not None and (prior[1].step or 0) > step:
            sr, best = prior
            return fail(
                facts.subject(),
                [_log_ev(sr, best), _log_ev(r, ev)],
                f"attempt {a.index} resumed from step {step}, but attempt {sr.attempt} had saved step {best.step}",
            )
        earlier = [x for x in h.runs if x.attempt < a.index]
        if not earlier or any(x.unread for x in earlier) or h.unseen:
            why = "; ".join([_gaps(earlier), *h.unseen]).strip("; ") or "no earlier attempt is in the snapshot"
            unknown.append(f"attempt {a.index} resumed from step {step}, but the saves before it are unknown ({why})")
    if unknown:
        return skip("; ".join(unknown[:3]))
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
    """Attach, mount and volume-binding trouble on the trainer pods: their events, and the pods' own
    PodScheduled condition (which says it even when the events have expired or were not collected)."""
    out = []
    pods = {p.name for p in facts.scope.pods}
    for p in facts.scope.pods:
        c = p.condition("PodScheduled")
        if c is None or str(c.get("status")) != "False":
            continue
        msg = str(c.get("message") or "")
        if any(needle in msg for reason, needle in VOLUME_PATTERNS if reason == "FailedScheduling"):
            f = {
                "reason": "FailedScheduling",
                "message": msg,
                "type": "Warning",
                "count": 1,
                "lastTimestamp": str(c.get("lastTransitionTime") or ""),
                "object": p.ref(),
                "involvedKind": "Pod",
                "involvedName": p.name,
                "condition": c,
            }
            out.append((f, p.name))
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
        why = facts.missing("events")
        if why:
            return [skip(f"no pod condition shows volume trouble, and {why}")]
        return [ok(reason="no attach, mount or volume-binding event or condition on the trainer pods")]
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
        evidence = [condition_ev(pod.ref(), f["condition"]) if "condition" in f else event_ev(f) for f in evs[:3]]
        evidence.append(field_ev(pod.ref(), "status.phase", phase))
        detail = (
            f"pod {pod_name} {'is stuck' if stuck else 'was held up'} on its volume: "
            f"{evs[0]['reason']}: {evs[0]['message'][:160]}"
        )
        results.append(fail(pod.subject(), evidence, detail, "high" if stuck else "medium"))
    return results


def all_logs_clear(facts: Facts, read: list[Run], what: str) -> Result:
    """A pass needs every attempt's log: unread logs and attempts whose pods are gone make the rule
    not_evaluated, naming them."""
    h = facts.history
    unread = [r for r in h.runs if r.unread]
    if unread or h.unseen:
        told = "; ".join(x for x in (_gaps(unread), *h.unseen[:2]) if x)
        return skip(
            f"{len(unread) + len(h.unseen)} trainer log(s) or attempt(s) could not be read, and the "
            f"{len(read)} read show no {what}: {told}"
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


def _sigterm_shown(h: History, r: Run) -> bool:
    """Something positive shows SIGTERM reached the run before it ended: the kubelet's Killing event, a
    DisruptionTarget, the trainer's or torchrun's own line (`Run.sigterm`), exit 143, an eviction or preemption
    as the pod's reason, or a suspend/preemption the next attempt resumed after (`Attempt.how` "resumed").
    Exit 137 alone is no such thing: a SIGKILL with no SIGTERM before it (a node lost, `kill -9`, an OOM kill)
    gives no chance to save, and the events that would show a SIGTERM expire after an hour."""
    if r.sigterm or r.exit_code == SIGTERM_EXIT or r.reason in ("Evicted", "Preempted"):
        return True
    nxt = h.next_attempt(r.attempt)
    return nxt is not None and nxt.how == "resumed"


def _no_sigterm_shown(r: Run) -> str:
    code = f"exit {r.exit_code}" if r.exit_code is not None else "an exit code not shown"
    return (
        f"attempt {r.attempt} ({r.pod.name}) ended with {code} and nothing shows SIGTERM came first (no Killing "
        "event, eviction, preemption, suspend, DisruptionTarget or signal line; events expire after an hour): a "
        "SIGKILL alone (a node lost, kill -9, an OOM kill) leaves no chance for a final save"
    )


@check("final-checkpoint-missing")
def final_checkpoint_missing(facts: Facts, rule: Rule) -> Result:
    h = facts.history
    runs = interrupted_runs(facts)
    if not runs:
        if h.interruptions and h.unseen:
            return skip("an attempt was interrupted, but its pods and logs are gone: " + "; ".join(h.unseen[:2]))
        if h.doubt:
            return skip("an attempt may have been suspended before the first one seen: " + "; ".join(h.doubt))
        return ok(reason="no attempt in the snapshot ended by SIGTERM (suspend, preemption, eviction)")
    unknown: list[str] = []
    flushed_by_listing: list[str] = []
    for r in runs:
        if r.log is None:
            got = _lost_after_last_save(facts, r) if r.unread else None
            if got is not None:
                return fail(facts.subject(), got[1], got[0], "medium")
            if r.unread:
                unknown.append(r.log_gap or f"log of {r.label} not read")
            continue
        flushed = r.log.last("sigterm_flush") is not None
        sig = r.log.last("sigterm")
        if sig is not None:
            flushed = flushed or any(
                e.kind in ("saved", "save_started") and e.offset >= sig.offset and e.window == sig.window
                for e in r.saves()  # completed saves only: one announced before its write counts once it went on
            )
        if flushed:
            continue
        last = r.last_step()
        nxt = h.next_attempt(r.attempt)
        kind, step, nr, ev = h.attempt_start(nxt) if nxt is not None else ("unknown", None, None, None)
        final = _final_save_listed(facts, r, last, ev.path if kind == "resumed" and ev is not None else None)
        if final is not None:
            flushed_by_listing.append(final)
            continue
        if kind == "fresh":
            continue  # a fresh start is another symptom
        listed: tuple[int, str, list[dict[str, Any]]] | None = None
        if kind == "resumed" and step is None and nxt is not None and ev is not None and ev.path:
            # a resume from a file whose name holds no step (Lightning's last.ckpt): the listings may place it
            from ckpt_doctor.engine.checks.volume import stepless_resume_step

            listed = stepless_resume_step(facts, nxt, ev.path)
            if listed is not None:
                step = listed[0]
        if kind == "resumed" and step is not None and last is not None and step >= last and _trained_to_end(r, last):
            # its log shows training ended at `last` (a SIGKILL in teardown after it changes nothing; recording
            # hf-5.24-sigterm-no-handler-take2: PID 1 ignored SIGTERM, training finished at 40, saved, and was
            # killed on its way out): the next attempt resumed at or past every step it trained, nothing was lost
            continue
        if not _sigterm_shown(h, r):
            # nothing above shows nothing was lost, and a SIGKILL with no SIGTERM first is no missing final save
            unknown.append(_no_sigterm_shown(r))
            continue
        if kind == "resumed" and step is not None and (last is None or step >= last):
            # a run stopped from outside may have trained past the last step it printed (issue 19: a lower bound;
            # recordings dcp-1rank-sigterm-no-handler: `step 20/40` printed, step 25 reached, resumed from 20),
            # and DeepSpeed prints no step at all: the listing's times may show steps ran after the last save
            got = _lost_after_last_save(facts, r, step)
            if got is not None:
                return fail(facts.subject(), got[1], got[0], "medium")
            seen = f"at step {last} or later (the last step it printed is a lower bound)" if last is not None else (
                "(its log shows no step)")  # fmt: skip
            unknown.append(f"attempt {r.attempt} stopped without a final save {seen}, and attempt "
                           f"{nxt.index if nxt else '?'} resumed from step {step}: whether steps were lost is not "
                           "shown")  # fmt: skip
            continue
        if kind != "resumed" or step is None or last is None or nr is None or ev is None:
            unknown.append(
                f"attempt {r.attempt} stopped without a final save, and what the next one resumed from is not shown"
            )
            continue
        evidence = [absence("a final save after SIGTERM", f"log of {r.label}")]
        tail = r.last_step_event()
        if tail is not None:
            evidence.append(_log_ev(r, tail))
        evidence.append(_log_ev(nr, ev))
        if listed is not None:
            return fail(
                facts.subject(),
                evidence + listed[2],
                f"attempt {r.attempt} reached step {last} at least and was stopped without a final save; "
                f"attempt {nr.attempt} resumed from step {step}: {listed[1]}",
                "medium",
            )
        return fail(
            facts.subject(),
            evidence,
            f"attempt {r.attempt} reached step {last} and was stopped without a final save; "
            f"attempt {nr.attempt} resumed from step {step}",
        )
    if unknown:
        return skip("; ".join(sorted(set(unknown))[:3]))
    why = "every interrupted attempt saved before it stopped, or nothing was lost"
    return ok(reason=why + (": " + "; ".join(flushed_by_listing[:2]) if flushed_by_listing else ""))


def _trained_to_end(r: Run, last: int) -> bool:
    """The run's log shows its training ended at step `last` (so `last` is no lower bound)."""
    from ckpt_doctor.facts.timeline import shows_end

    return r.log is not None and shows_end(r.log, last)


# the least time between the newest save and SIGTERM that says training went on after the save: the kubelet's
# clock (the event) and the volume's (the mtime) may disagree by a little
MIN_LOST_GAP = 1.0


def _step_period(saves: list[tuple[Checkpoint, Judged]], c: Checkpoint) -> tuple[float, Checkpoint] | None:
    """Seconds per step from two consecutive saves of one run in `c`'s directory (the pair ending at `c` when
    there is one): the interval holds a save too, so it over-estimates a step. (seconds, the earlier save)."""
    home = c.path.rpartition("/")[0]
    mine = sorted({x.step: (x, j) for x, j in saves if x.path.rpartition("/")[0] == home}.items())
    pairs = [(a, b) for (_s, a), (_t, b) in pairwise(mine)]
    pairs.sort(key=lambda p: p[1][0] is not c)  # the pair ending at `c` first
    for (a, ja), (b, _jb) in pairs:
        d = (b.mtime or 0.0) + ja.listing.precision - (a.mtime or 0.0)
        if d > 0 and b.step and a.step is not None and b.step > a.step:
            return d / (b.step - a.step), a
    return None


def _lost_after_last_save(facts: Facts, r: Run, step: int | None = None) -> tuple[str, list[dict[str, Any]]] | None:
    """A run stopped by SIGTERM that the checkpoint listings show trained on after its newest save: a listing
    taken after it ended shows no complete checkpoint written after SIGTERM reached it, the newest one it wrote
    came at least MIN_LOST_GAP seconds and one step period (from two of its saves) before the signal, and the
    next attempt resumed from that checkpoint (`step`, or its log when None): the steps trained in between were
    lost. SIGTERM's time is the trainer's own signal line's, else the event's second (a lower bound): so is the
    gap.
    With its log gone, only a run SIGKILLed at the end of its grace period is judged: one that exited on its own
    may have saved, and its log is what would say so.
    (detail, evidence) or None when the listings do not show it."""
    from ckpt_doctor.facts.timeline import epoch, sigterm_time

    vol = facts.volume
    sig_at, t0, end = sigterm_time(r), epoch(r.started), epoch(r.finished)
    if not vol.seen or sig_at is None or t0 is None or end is None:
        return None
    t_sig = sig_at[0]
    if r.log is None and r.exit_code != SIGKILL_EXIT:
        return None
    if not any(j.at is not None and j.at >= end for j in vol.judged):
        return None  # no listing taken after the run ended: a final save may have come later
    saves = [(c, j) for c, j in vol.saves_in(t0, end + 1.0) if c.mtime is not None and c.step is not None]
    if any(c.mtime >= t_sig for c, _j in saves):  # type: ignore[operator]
        return None
    before = [(c, j) for c, j in saves if c.mtime < t_sig]  # type: ignore[operator]
    if not before:
        return None
    c, j = max(before, key=lambda p: p[0].step or 0)
    h = facts.history
    nxt = h.next_attempt(r.attempt)
    if nxt is None:
        return None
    kind, resumed, nr, ev = h.attempt_start(nxt)
    resumed = step if step is not None else resumed
    gap = t_sig - c.mtime - j.listing.precision  # type: ignore[operator]
    per = _step_period(saves, c)
    if kind != "resumed" or resumed is None or nr is None or ev is None or resumed != c.step or per is None:
        return None
    period, prev = per
    if gap < max(MIN_LOST_GAP, period):
        return None
    listed = j.save_evidence(c)
    earlier = {k: v for k, v in j.evidence(prev).items() if k in ("type", "path", "mtime", "listing", "line")}
    gone = "; its log is gone" if r.log is None else ""
    detail = (
        f"attempt {r.attempt} ({r.pod.name}) was sent SIGTERM {gap:.1f} s or more after its newest checkpoint "
        f"(step {c.step}, written at {epoch_text(c.mtime)}) and wrote none after it (the listing{gone}); its saves "
        f"of steps {prev.step} and {c.step} put a step at {period:.2f} s or less, so about {int(gap // period)} "
        f"more step(s) ran (an estimate); attempt {nr.attempt} resumed from step {resumed}, and they were lost"
    )
    return detail, [*r.sigterm[:2], earlier, listed, _log_ev(nr, ev)]


def _final_save_listed(facts: Facts, r: Run, last: int | None, resume_path: str | None) -> str | None:
    """A final save whose end the log does not show, shown by a listing: the log announces a save after SIGTERM (at its
    last step or later) and prints no completion, and a listing shows that checkpoint complete, written after
    SIGTERM reached the run (after the time its evidence gives, to its precision) and before the run ended and the
    next attempt began: the announced step, or, for a name that holds no step (Lightning's last.ckpt), the
    checkpoint the next attempt resumed from (recording lightning-2.6-slow-save-grace: `[checkpoint] SIGTERM: saving
    at step 25`, no completion line, last.ckpt written 2 s later, before the SIGKILL). A listing alone cannot tell a
    final save from a periodic one the trainer went on after (a PID 1 that ignores SIGTERM:
    hf-5.24-sigterm-no-handler), so an unannounced save never counts. A sentence saying so, or None."""
    from ckpt_doctor.facts.timeline import epoch, sigterm_time

    vol = facts.volume
    sig_at, end = sigterm_time(r), epoch(r.finished)
    sig = r.log.last("sigterm") if r.log is not None else None
    if not vol.seen or sig_at is None or end is None or r.log is None or sig is None:
        return None
    t_sig, t_prec = sig_at
    announced = {e.step for e in r.log.of("save_started") if e.offset >= sig.offset and e.window == sig.window
                 and (e.step is None or last is None or e.step >= last)}  # fmt: skip
    if not announced:
        return None
    nxt = facts.history.next_attempt(r.attempt)
    t_next = epoch(nxt.started) if nxt is not None else None
    hi = min(end, t_next) if t_next is not None else end + 1.0
    for j in vol.judged:
        for d in j.dirs:
            for c in d.checkpoints:
                m = c.mtime
                if not c.complete or m is None or not (t_sig + t_prec <= m and m + j.listing.precision < hi):
                    continue
                named = c.step is not None and c.step in announced
                resumed = c.step is None and resume_path is not None and (
                    resume_path == c.path or resume_path.endswith("/" + c.name))  # fmt: skip
                if named or resumed:
                    return (f"attempt {r.attempt} ({r.pod.name}) announced a save after SIGTERM and wrote {c.name} "
                            f"then (complete, written at {epoch_text(m)}; {j.label()})")  # fmt: skip
    return None


def _failed_condition(facts: Facts) -> tuple[str, dict[str, Any]] | None:
    for obj in (facts.scope.trainjob, facts.scope.jobset):
        if obj is None:
            continue
        c = obj.condition("Failed")
        if c is not None and str(c.get("status")) == "True":
            return obj.ref(), c
    return None


def _not_failed(facts: Facts) -> Result:
    """No Failed condition: a pass only when some status was seen that would carry one."""
    tj, js = facts.scope.trainjob, facts.scope.jobset
    if js is None and (tj is None or not tj.conditions()):
        why = facts.missing("jobset") or "the JobSet is not in the snapshot"
        return skip(f"the TrainJob has no status conditions and {why}")
    return ok(reason="the TrainJob has not failed")


@check("job-failed-without-restart")
def failed_without_restart(facts: Facts, rule: Rule) -> Result:
    got = _failed_condition(facts)
    if got is None:
        return _not_failed(facts)
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
        return _not_failed(facts)
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
    unsure = [f"attempt {r.attempt}: {r.log.load_crash_unknown}" for r in runs if r.log and r.log.load_crash_unknown]
    if unsure:
        return skip("; ".join(unsure[:2]))
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


# -- trainjob-completed-early ---------------------------------------------------------------------------
def _complete_condition(facts: Facts) -> tuple[str, dict[str, Any]] | None:
    """The TrainJob's Complete or the JobSet's Completed condition, when True."""
    for obj, kind in ((facts.scope.trainjob, "Complete"), (facts.scope.jobset, "Completed")):
        if obj is None:
            continue
        c = obj.condition(kind)
        if c is not None and str(c.get("status")) == "True":
            return obj.ref(), c
    return None


@check("trainjob-completed-early")
def trainjob_completed_early(facts: Facts, rule: Rule) -> Result:
    from ckpt_doctor.facts.attempts import training_total

    done = _complete_condition(facts)
    if done is None:
        if facts.scope.trainjob is None and facts.scope.jobset is None:
            return skip("neither the TrainJob nor its JobSet is in the snapshot")
        return ok(reason="neither the TrainJob nor its JobSet reports Complete")
    ref, cond = done
    h = facts.history
    if not h.attempts:
        why = facts.missing("pods") or "no pod of its last attempt is in the snapshot"
        return skip(f"{ref} reports {cond.get('type')}, but how its last attempt ended is unknown: {why}")
    last = h.attempts[-1]
    for r in last.runs:
        if r.exited_after_sigterm and r.exit_code == 0:
            ev = [condition_ev(ref, cond), *r.sigterm[:2], exit_code_ev(r)]
            step = r.last_step()
            total = training_total(r.log)
            where = f" at step {step}" + (f" of {total}" if total else "") if step is not None else ""
            return fail(
                facts.subject(),
                ev,
                f"{ref} reports {cond.get('type')}, but attempt {r.attempt} ({r.pod.name}) was stopped by SIGTERM"
                f"{where} and exited 0",
            )
    for r in last.runs:
        total, step = training_total(r.log), r.last_step()
        if total is not None and step is not None and step >= total:
            return ok(reason=f"attempt {r.attempt} reached step {step} of {total}")
    clean = [r for r in last.runs if r.exit_code == 0 and not r.sigterm and r.log is not None]
    if clean and len(clean) == len(last.runs):
        return ok(reason=f"attempt {last.index} finished on its own: exit 0 with no SIGTERM seen")
    gaps = _gaps(last.runs)
    return skip(f"{ref} reports {cond.get('type')}; whether its last attempt finished training is not shown"
                + (f": {gaps}" if gaps else ""))  # fmt: skip
