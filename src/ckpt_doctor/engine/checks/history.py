"""Causes judged from what attempts logged: saves, fresh starts, incomplete checkpoints."""

from __future__ import annotations

from ckpt_doctor.engine.checks import absence, check
from ckpt_doctor.engine.checks.symptoms import all_logs_clear, interrupted_runs
from ckpt_doctor.engine.model import Result, Rule, fail, ok, skip
from ckpt_doctor.facts.context import Facts


@check("ckpt-autodetect-found-nothing")
def autodetect_found_nothing(facts: Facts, rule: Rule) -> Result:
    h = facts.history
    fresh = [r for r in h.later_runs() if r.start()[0] == "fresh"]
    if not fresh:
        return ok(reason="no later attempt started fresh")
    r = fresh[0]
    earlier = [x for x in h.runs if x.attempt < r.attempt]
    saves = [(x, e) for x in earlier for e in x.saves()]
    if not saves:
        if any(x.log for x in earlier):
            return ok(reason="the earlier attempts saved nothing, so there was nothing to find")
        return skip("the earlier attempts' logs are not in the snapshot, so whether checkpoints existed is unknown")
    sr, se = saves[-1]
    _k, _s, fev = r.start()
    assert sr.log is not None and r.log is not None and fev is not None
    return fail(
        facts.subject(),
        [se.evidence(sr.log.ref, sr.attempt), fev.evidence(r.log.ref, r.attempt)],
        f"attempt {sr.attempt} saved {se.path or f'step {se.step}'}, yet attempt {r.attempt} found no "
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
        started = r.log.last("save_started")
        if started is None or started.step is None:
            continue
        done = any(e.kind == "saved" and e.step == started.step for e in r.log.events)
        if done:
            continue
        nxt = [x for x in h.runs if x.attempt == r.attempt + 1 and x.start()[0] == "resumed"]
        if nxt and nxt[0].start()[1] == started.step and nxt[0].log is not None:
            _k, _s, rev = nxt[0].start()
            assert rev is not None
            return fail(
                facts.subject(),
                [
                    started.evidence(r.log.ref, r.attempt),
                    absence(f"a completed save of step {started.step}", r.label),
                    rev.evidence(nxt[0].log.ref, nxt[0].attempt),
                ],
                f"attempt {r.attempt} was stopped while saving step {started.step}; "
                f"attempt {nxt[0].attempt} resumed from that half-written checkpoint",
            )
    return all_logs_clear(facts, runs, "sign of an incomplete checkpoint being loaded")


@check("no-checkpoint-before-interruption")
def no_checkpoint_before_interruption(facts: Facts, rule: Rule) -> Result:
    h = facts.history
    ended = interrupted_runs(facts) + [r for a in h.attempts[:-1] for r in a.runs if r.exit_code not in (None, 0)]
    if not ended:
        return ok(reason="no attempt was interrupted before a later one")
    judged = False
    for r in ended:
        if r.log is None:
            continue
        judged = True
        if r.saves():
            continue
        last = r.last_step()
        if last is None or last <= 1:
            continue
        return fail(
            facts.subject(),
            [absence("a checkpoint save", f"log of {r.label}"), r.log.last("progress").evidence(r.log.ref, r.attempt)],  # type: ignore[union-attr]
            f"attempt {r.attempt} trained to step {last} and was interrupted before its first save: "
            "the save interval is longer than the time to failure",
            "medium",
        )
    if not judged:
        return skip("the interrupted attempt's log is not in the snapshot")
    return ok(reason="every interrupted attempt had saved at least once")
