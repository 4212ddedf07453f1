"""Causes judged from what attempts logged: saves, fresh starts, incomplete checkpoints."""

from __future__ import annotations

from ckpt_doctor.engine.checks import absence, check
from ckpt_doctor.engine.checks.symptoms import _gaps, all_logs_clear, interrupted_runs
from ckpt_doctor.engine.model import Result, Rule, fail, ok, skip
from ckpt_doctor.facts.attempts import Run
from ckpt_doctor.facts.context import Facts
from ckpt_doctor.facts.logs import LogEvent


@check("ckpt-autodetect-found-nothing")
def autodetect_found_nothing(facts: Facts, rule: Rule) -> Result:
    h = facts.history
    later = h.later_attempts()
    fresh = [a for a in later if h.attempt_start(a)[0] == "fresh"]
    if not fresh:
        unknown = [a.index for a in later if h.attempt_start(a)[0] == "unknown"]
        if unknown:
            return skip(
                f"how attempt(s) {', '.join(map(str, unknown))} began is not shown: "
                + (_gaps([r for a in later for r in a.runs]) or "no resume or fresh-start line")
            )
        if h.earlier and not later:
            return skip("an earlier attempt happened, but no pod of a later attempt is in the snapshot")
        first_fresh = bool(h.attempts) and h.attempt_start(h.attempts[0])[0] in ("fresh", "unknown")
        if h.doubt and (not later or first_fresh):
            return skip("whether an attempt came before the first one seen is unknown: " + "; ".join(h.doubt))
        return ok(reason="no later attempt started fresh")
    a = fresh[0]
    _k, _s, r, fev = h.attempt_start(a)
    assert r is not None and fev is not None and r.log is not None
    earlier = [x for x in h.runs if x.attempt < a.index]
    saves = [(x, e) for x in earlier for e in x.saves()]
    if not saves:
        blind = [x for x in earlier if x.unread]
        if earlier and not blind and not h.unseen:
            return ok(reason="the earlier attempts saved nothing, so there was nothing to find")
        why = "; ".join(x for x in (_gaps(blind), *h.unseen[:2]) if x) or "no earlier attempt's log"
        return skip(f"whether checkpoints existed before attempt {a.index} is unknown: {why}")
    sr, se = saves[-1]
    assert sr.log is not None
    return fail(
        facts.subject(),
        [se.evidence(sr.log.ref, sr.attempt), fev.evidence(r.log.ref, r.attempt)],
        f"attempt {sr.attempt} saved {se.path or f'step {se.step}'}, yet attempt {a.index} found no "
        "checkpoint and started fresh",
        "medium",
    )


@check("partial-latest-checkpoint")
def partial_latest(facts: Facts, rule: Rule) -> Result:
    h = facts.history
    runs = [r for r in h.runs if r.log is not None]
    for r in runs:
        ev = r.log.first("partial_checkpoint") if r.log else None
        if ev is not None and r.log is not None:
            return fail(
                facts.subject(),
                [ev.evidence(r.log.ref, r.attempt)],
                f"attempt {r.attempt} picked an incomplete checkpoint: {ev.text[:160]}",
            )
    for r in runs:
        assert r.log is not None
        for died in r.died_saves():
            nxt = h.next_attempt(r.attempt)
            if nxt is None:
                continue
            kind, step, nr, rev = h.attempt_start(nxt)
            if kind == "resumed" and step == died.step and nr is not None and rev is not None and nr.log is not None:
                return fail(
                    facts.subject(),
                    [
                        died.evidence(r.log.ref, r.attempt),
                        absence(f"a completed save of step {died.step}", r.label),
                        rev.evidence(nr.log.ref, nr.attempt),
                    ],
                    f"attempt {r.attempt} was stopped while saving step {died.step}; "
                    f"attempt {nr.attempt} resumed from that half-written checkpoint",
                )
    unsure = [f"attempt {r.attempt}: {r.log.load_crash_unknown}" for r in runs if r.log and r.log.load_crash_unknown]
    if unsure:
        return skip("; ".join(unsure[:2]))
    return all_logs_clear(facts, runs, "sign of an incomplete checkpoint being loaded")


@check("no-checkpoint-before-interruption")
def no_checkpoint_before_interruption(facts: Facts, rule: Rule) -> Result:
    """An interrupted attempt that trained and saved nothing first. Its saves are the ones the timeline knows: the
    lines its log prints, and the complete checkpoints the listings show written while it ran (Lightning, Orbax
    and DeepSpeed at its default log level save without a word). A log that prints no save shows none was made
    only for a program seen printing its saves while it trains (in any attempt's log); else it is unknown."""
    h = facts.history
    ended = interrupted_runs(facts) + [r for a in h.attempts[:-1] for r in a.runs if r.exit_code not in (None, 0)]
    if not ended:
        if h.unseen and h.earlier:
            return skip(
                "an earlier attempt was interrupted, but its pods and logs are gone: " + "; ".join(h.unseen[:2])
            )
        if h.doubt:
            return skip("whether an attempt came before the first one seen is unknown: " + "; ".join(h.doubt))
        return ok(reason="no attempt was interrupted before a later one")
    from ckpt_doctor.facts.timeline import timeline_of

    tl = timeline_of(facts)
    unknown: list[str] = []
    listed: list[str] = []
    printer = _prints_saves(h.runs)
    for r in {id(x): x for x in ended}.values():
        nxt = h.next_attempt(r.attempt)
        kind, step, _nr, _ev = h.attempt_start(nxt) if nxt is not None else ("unknown", None, None, None)
        if kind == "resumed" and step:
            continue  # the next attempt resumed from a saved step: a checkpoint existed before the interruption
        fact = tl.attempt(r.attempt)
        if fact is not None and fact.saves:
            if not any(s.source == "log" for s in fact.saves):
                first = fact.saves[0]
                name = first.name or "a checkpoint"
                listed.append(f"attempt {r.attempt} wrote {name} (step {first.step}, complete) at {first.at}, as "
                              "the checkpoint listing shows")  # fmt: skip
            continue
        if r.log is None:
            if r.unread:
                unknown.append(r.log_gap or f"log of {r.label} not read")
            continue
        if r.saves():
            continue
        last = r.last_step()
        if last is None:
            unknown.append(f"attempt {r.attempt}: no line shows how far it trained")
            continue
        if last <= 1:
            continue
        if printer is None:
            why = (fact.saves_unknown if fact is not None and fact.saves_unknown
                   else "its log prints no save, and the program is not seen printing its saves")  # fmt: skip
            unknown.append(f"whether attempt {r.attempt} saved before it was interrupted at step {last} or later is "
                           f"unknown: {why}; no log of this job prints a save while training")  # fmt: skip
            continue
        tail = r.last_step_event()
        evidence = [absence("a checkpoint save", f"log of {r.label}")]
        if tail is not None:
            evidence.append(tail.evidence(r.log.ref, r.attempt))
        pr, pe = printer
        if pr.log is not None:
            evidence.append(pe.evidence(pr.log.ref, pr.attempt))  # the program prints its saves
        return fail(
            facts.subject(),
            evidence,
            f"attempt {r.attempt} trained to step {last} and was interrupted before its first save: "
            "the save interval is longer than the time to failure",
            "medium",
        )
    if unknown:
        return skip("; ".join(sorted(set(unknown))[:3]))
    return ok(reason="every interrupted attempt had saved at least once" + (f" ({'; '.join(listed[:2])})"
                                                                            if listed else ""))  # fmt: skip


def _prints_saves(runs: list[Run]) -> tuple[Run, LogEvent] | None:
    """A save line some log of the job printed while training (before any SIGTERM line: a handler that announces
    its one save on SIGTERM says nothing of the saves in between), which shows the program prints its saves."""
    from ckpt_doctor.facts.attempts import _before

    for r in runs:
        if r.log is None:
            continue
        sig = next((e for e in r.log.events if e.kind in ("sigterm", "sigterm_flush")), None)
        for e, _ok in r.save_outcomes():
            if e.kind != "sigterm_flush" and (sig is None or (e.line != sig.line and _before(e, sig))):
                return r, e
    return None
