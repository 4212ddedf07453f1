"""What the checkpoint listings add to the rules that speak of checkpoints (facts/checkpoints.py).

Each function here takes what a rule's own check found (from logs, the program, the config) and the listings
of the volume, and returns the finding: a listing is direct evidence, so an incomplete checkpoint that the
resume in use picks, a newer complete checkpoint a resume skipped, a checkpoint without optimizer state or a
volume with less room than one more checkpoint fail on it, quoting the entry (`checkpoint` evidence: path,
size, mtime, complete, why, the listing and its time). A listing speaks only of the moment it was taken: a
resume is judged from a listing taken between the attempt before it and its start; the newest listing says
what the next resume will find. Without a listing nothing here changes the check's own answer, and a pass
never rests on a listing that is missing or unknown.
"""

from __future__ import annotations

from collections.abc import Callable
from itertools import pairwise
from typing import Any

from ckpt_doctor.engine.model import Result, Rule, fail, ok, skip
from ckpt_doctor.facts.attempts import Attempt, History
from ckpt_doctor.facts.checkpoints import IN_PROGRESS, Judged, Volume, size_text, trainer_running_at
from ckpt_doctor.facts.context import Facts
from ckpt_doctor.facts.listing import epoch_text
from ckpt_doctor.facts.timeline import epoch
from ckpt_doctor.frameworks.completeness import Checkpoint, Picked, SaveDir

Augment = Callable[[Facts, Rule, Result], Result]
AUGMENTS: dict[str, Augment] = {}
SLACK = 2.0  # seconds a listing taken as an attempt ended may precede its container's rounded finish time


def augments(rule_id: str) -> Callable[[Augment], Augment]:
    def register(fn: Augment) -> Augment:
        AUGMENTS[rule_id] = fn
        return fn

    return register


def wrap(rule_id: str, check: Callable[..., Any]) -> Callable[..., Any]:
    """The rule's check followed by what the listings add (diagnose only: lint and explain-error have none)."""
    aug = AUGMENTS[rule_id]

    def run(facts: Facts, rule: Rule) -> Any:
        out = check(facts, rule)
        if facts.mode != "diagnose" or (not facts.scope.snap.checkpoints and not _gap(facts)):
            return out
        if isinstance(out, list):
            return [aug(facts, rule, r) for r in out] if out else out
        return aug(facts, rule, out)

    run.__name__ = getattr(check, "__name__", rule_id)
    run.__doc__ = check.__doc__
    return run


def _gap(facts: Facts) -> bool:
    return any(g.what == "checkpoints" or g.what.startswith("checkpoints/") for g in facts.scope.snap.not_collected)


# -- helpers ------------------------------------------------------------------------------------------------
def _with(base: Result, evidence: list[dict[str, Any]], note: str) -> Result:
    """A failed finding with the listing's evidence and sentence added."""
    base.evidence = base.evidence + [e for e in evidence if e not in base.evidence]
    if note:
        base.detail = f"{base.detail}; {note}" if base.detail else note
    return base


def _note(base: Result, note: str) -> Result:
    """A pass or not_evaluated finding whose reason also says what the listing showed."""
    if note:
        base.reason = f"{base.reason}; {note}" if base.reason else note
    return base


def _window(a: Attempt) -> tuple[float | None, float | None]:
    starts = [t for t in (epoch(r.started or r.pod.created) for r in a.runs) if t is not None]
    ends = [t for t in (epoch(r.finished) for r in a.runs) if t is not None]
    return (min(starts) if starts else None), (max(ends) if ends and len(ends) == len(a.runs) else None)


def _before(h: History, a: Attempt) -> tuple[float | None, bool]:
    """When the attempt before `a` ended (None: not known), and whether that attempt is seen at all."""
    prev = h.numbered(a.index - 1)
    if prev is None:
        return None, False
    return _window(prev)[1], True


def _found_before(vol: Volume, h: History, a: Attempt) -> list[Judged]:
    """The listings taken after the attempt before `a` ended and before `a` began: what its resume found."""
    start, _ = _window(a)
    prev_end, seen = _before(h, a)
    if start is None or not seen or prev_end is None:
        return []
    return vol.between(prev_end - SLACK, start + 1.0)  # container times are whole seconds, rounded down at start


def _picked_bad(j: Judged, facts: Facts) -> list[tuple[SaveDir, Picked, Checkpoint]]:
    out = []
    for d, p in zip(j.dirs, j.picks, strict=False):
        c = p.checkpoint
        if p.known and c is not None and c.complete is False and not _in_progress(facts, j, c):
            out.append((d, p, c))
    return out


def _first_after(facts: Facts, t: float | None) -> Attempt | None:
    """The first attempt that began after `t` (container start times are whole seconds, rounded down)."""
    if t is None:
        return None
    for a in facts.history.attempts:
        start = _window(a)[0]
        if start is not None and start + 1.0 >= t:
            return a
    return None


def _in_progress(facts: Facts, j: Judged, c: Checkpoint) -> bool:
    """A newest checkpoint written moments before the listing while a trainer ran may still be being written."""
    at, m = j.at, c.mtime
    if at is None or m is None:
        return bool(trainer_running_at(facts, at))
    return bool(trainer_running_at(facts, at, since=m)) and at - m < IN_PROGRESS


def _pick_words(d: SaveDir, p: Picked, j: Judged) -> str:
    return p.how


# -- partial-latest-checkpoint ------------------------------------------------------------------------------
@augments("partial-latest-checkpoint")
def partial_latest(facts: Facts, rule: Rule, base: Result) -> Result:
    vol = facts.volume
    if not vol.seen:
        return _note(base, f"no listing shows the checkpoints themselves: {vol.missing()}") if base.status != "fail" \
            else base
    bad = [(j, d, p, c) for j in vol.judged for d, p, c in _picked_bad(j, facts)]
    if bad:
        # the first listing an attempt began after (its resume found what the listing shows), else the newest
        followed = [(b, a) for b in bad if (a := _first_after(facts, b[0].at)) is not None]
        (j, d, p, c), nxt = followed[0] if followed else (bad[-1], None)
        good = next((x for x in reversed(d.checkpoints) if x.complete), None)
        ev = [j.evidence(c)] + ([j.evidence(good)] if good is not None else [])
        then = (f"; attempt {nxt.index} began after this listing, so its resume picked it" if nxt is not None
                else ": the next resume loads it")  # fmt: skip
        where = j.label()
        note = (f"{where}: the newest checkpoint {c.name} is incomplete ({c.why}) and {_pick_words(d, p, j)}{then}"
                if c is d.newest else f"{where}: {c.name}, which {_pick_words(d, p, j)}, is incomplete ({c.why})")
        if base.status == "fail":
            return _with(base, ev, note)
        return fail(base.subject, ev, note, "high" if "program" not in j.rule_from else "medium")
    unknown = []
    for j in vol.judged:
        for d, p in zip(j.dirs, j.picks, strict=False):
            n = d.newest
            if n is not None and n.complete is False and not p.known and not _in_progress(facts, j, n):
                unknown.append(f"{j.label()}: the newest checkpoint {n.name} is incomplete ({n.why}) and how the "
                               f"resume picks is not known ({p.how or 'the program picks it'})")  # fmt: skip
    if base.status == "fail":
        return base
    if unknown:
        return skip("; ".join(unknown[:2]), base.subject) if base.status == "not_evaluated" else _note(
            base, unknown[0])
    shown = _listing_pass(facts, vol)
    if shown is None:
        latest = vol.latest()
        words = _latest_words(latest) if latest is not None else ""
        return _note(base, words + vol.unknown_note())
    if base.status == "pass":
        return _note(base, shown)
    return ok(base.subject, reason=shown, evidence=_latest_evidence(vol))


def _latest_words(j: Judged) -> str:
    for p in j.picks:
        if p.known and p.checkpoint is not None:
            c = p.checkpoint
            state = "complete" if c.complete else ("incomplete" if c.complete is False else "of unknown state")
            return f"{j.label()}: the resume picks {c.name}, {state} ({c.why})"
    if j.listing.exists is False:
        return f"{j.label()}: the directory does not exist"
    return f"{j.label()}: no checkpoint of a known layout in it" if not j.dirs else ""


def _latest_evidence(vol: Volume) -> list[dict[str, Any]]:
    j = vol.latest()
    if j is None:
        return []
    return [j.evidence(p.checkpoint) for p in j.picks if p.checkpoint is not None][:1]


def _listing_pass(facts: Facts, vol: Volume) -> str | None:
    """Why no resume picked an incomplete checkpoint, from listings alone: every later attempt has a listing
    taken just before it began whose pick is complete, and the newest listing's pick is complete too."""
    h = facts.history
    if h.unseen:
        return None
    said = []
    for a in h.later_attempts():
        found = _found_before(vol, h, a)
        picks = [(j, p) for j in found for p in j.picks if p.known]
        if not picks or any(p.checkpoint is not None and p.checkpoint.complete is not True for _j, p in picks):
            return None
        j, p = picks[-1]
        said.append(f"attempt {a.index} found {p.checkpoint.name if p.checkpoint else 'no checkpoint'} "
                    f"({j.listing.at})")  # fmt: skip
    latest = vol.latest()
    if latest is None or latest.at is None:
        return None
    if any(not p.known or (p.checkpoint is not None and p.checkpoint.complete is not True) for p in latest.picks):
        return None
    if not latest.picks and latest.listing.exists is not False:
        return None
    if h.later_attempts() and not said:
        return None
    head = "the listings taken before each resume show a complete pick: " + ", ".join(said) if said else ""
    tail = _latest_words(latest)
    return "; ".join(x for x in (head, tail) if x)


# -- resumed-older-checkpoint -------------------------------------------------------------------------------
@augments("resumed-older-checkpoint")
def resumed_older(facts: Facts, rule: Rule, base: Result) -> Result:
    vol = facts.volume
    if not vol.seen or base.status == "fail":
        return base
    h = facts.history
    saves = vol.complete_saves()
    covered: list[str] = []
    uncovered = False
    for a in h.later_attempts():
        kind, step, r, ev = h.attempt_start(a)
        if kind == "resumed" and step is None and ev is not None and ev.path:
            said = _newest_written(_found_before(vol, h, a), ev.path)
            if said:
                covered.append(f"attempt {a.index} resumed from {said}")
            else:
                uncovered = True
            continue
        if kind != "resumed" or step is None:
            uncovered = uncovered or kind not in ("fresh", "pending")
            continue
        start, _ = _window(a)
        if start is None:
            uncovered = True
            continue
        newer = [(c, j) for c, j in saves if c.step is not None and c.step > step and c.mtime is not None
                 and c.mtime + j.listing.precision <= start]  # fmt: skip
        if newer:
            c, j = max(newer, key=lambda x: x[0].step or 0)
            evid = [j.evidence(c)]
            if r is not None and ev is not None and r.log is not None:
                evid.append(ev.evidence(r.log.ref, r.attempt))
            return fail(base.subject, evid,
                        f"attempt {a.index} resumed from step {step}, but {c.name} (step {c.step}, complete: "
                        f"{c.why}) was written at {epoch_text(c.mtime)}, before it began, and {j.label()} "
                        "still shows it")  # fmt: skip
        found = _found_before(vol, h, a)
        tops = [max((c.step for d in j.dirs for c in d.complete() if c.step is not None), default=None) for j in found]
        if found and all(t is not None and t <= step for t in tops):
            covered.append(f"attempt {a.index} resumed from step {step}, the newest complete checkpoint "
                           f"{found[-1].label()} shows")  # fmt: skip
        else:
            uncovered = True
    if covered and not uncovered and base.status == "not_evaluated":
        return ok(base.subject, reason="; ".join(covered))
    if covered and base.status == "pass":
        return _note(base, "; ".join(covered))
    return base


def _listed_last(found: list[Judged], path: str) -> tuple[Judged, SaveDir, Checkpoint] | None:
    """The checkpoint named `path` in the latest of `found` listings that shows it, with its listing and dir."""
    for j in reversed(found):
        for d in j.dirs:
            mine = [c for c in d.checkpoints if c.path == path or path.endswith("/" + c.name)]
            if mine:
                return j, d, mine[0]
    return None


def _written_last(d: SaveDir, c: Checkpoint) -> bool:
    """`c` is complete and was written after every other checkpoint of its directory."""
    return bool(c.complete) and c.mtime is not None and all(
        o.mtime <= c.mtime for o in d.checkpoints if o is not c and o.mtime is not None)  # fmt: skip


def _newest_written(found: list[Judged], path: str) -> str:
    """A resume that names a checkpoint without a step in its name (Lightning's `last.ckpt`, rewritten at every
    save): the listing taken last before the attempt began shows it complete and written after every other
    checkpoint of its directory, so no newer one was there to take. "" when no such listing shows it."""
    got = _listed_last(found, path)
    if got is None or not _written_last(got[1], got[2]):
        return ""
    j, _d, c = got
    return (f"{c.name}, the newest checkpoint written before it began: {j.label()} shows it complete, "
            f"written at {epoch_text(c.mtime)}, after every other one")  # type: ignore[arg-type]  # fmt: skip


def stepless_resume_step(facts: Facts, a: Attempt, path: str) -> tuple[int, str, list[dict[str, Any]]] | None:
    """The step of a checkpoint whose name holds none (Lightning's `last.ckpt`, rewritten at every save) that
    attempt `a` resumed from: the listing taken last before `a` began shows it complete, the newest of its
    directory, and written right after the newest step-named checkpoint, within less than half the interval
    between two step-named saves (a later save whose own file a top-k rotation removed would have come a whole
    interval later). (step, sentence, evidence), or None when the listings do not show it."""
    vol = facts.volume
    if not vol.seen:
        return None
    got = _listed_last(_found_before(vol, facts.history, a), path)
    if got is None:
        return None
    j, d, c = got
    named = sorted((o for o in d.checkpoints if o is not c and o.step is not None and o.mtime is not None
                    and o.complete), key=lambda o: o.mtime)  # type: ignore[arg-type,return-value]  # fmt: skip
    if c.step is not None or len(named) < 2 or not _written_last(d, c):
        return None
    gaps = [b.mtime - x.mtime for x, b in pairwise(named)]  # type: ignore[operator]
    newest = named[-1]
    lag = c.mtime - newest.mtime  # type: ignore[operator]
    if min(gaps) <= 0 or lag >= min(gaps) / 2:
        return None
    said = (f"{c.name}, written {lag:.2f} s after {newest.name} in the same save ({j.label()}; the saves "
            f"before came {min(gaps):.1f} s or more apart)")  # fmt: skip
    return newest.step, said, [j.evidence(newest), j.evidence(c)]  # type: ignore[return-value]


# -- fresh-start-after-restart -------------------------------------------------------------------------------
@augments("fresh-start-after-restart")
def fresh_start(facts: Facts, rule: Rule, base: Result) -> Result:
    """A later attempt whose log does not say how it began (DeepSpeed at its default log level, Lightning's rich
    bar without a terminal) wrote a checkpoint at a step no higher than the lowest one already in its directory:
    it started from step 0 again (`Volume.trained_again`)."""
    vol = facts.volume
    if not vol.seen or base.status != "not_evaluated":
        return base
    h = facts.history
    for a in h.later_attempts():
        if h.attempt_start(a)[0] != "unknown":
            continue
        start, end = _window(a)
        if end is None:
            end = max((j.at for j in vol.judged if j.at is not None), default=None)
        again = vol.trained_again(start, None if end is None else end + 1.0)
        if again is None:
            continue
        b, k, c, j = again.held, again.held_in, again.saved, again.saved_in
        if b is None or k is None:
            continue
        held = k.evidence(b)
        if again.held_by_dir:  # the directory's own time is what shows it was there
            held.update(mtime=epoch_text(again.held_at), why=f"its directory's own mtime ({b.name}'s files were "
                        "written again since)")  # fmt: skip
        return fail(base.subject, [held, j.evidence(c)],
                    f"attempt {a.index} wrote {c.name} (step {c.step}) at {epoch_text(c.mtime)}, though "
                    f"{again.held_text()} ({k.label()}): it trained from below every checkpoint it could load, so "
                    "it started from step 0", "medium")  # fmt: skip
    return base


# -- resume-crashed -------------------------------------------------------------------------------------------
@augments("resume-crashed")
def resume_crashed(facts: Facts, rule: Rule, base: Result) -> Result:
    """Only unread logs kept the rule from passing (output lost to buffering: recordings *-buffered), and each of
    their attempts wrote a complete checkpoint while it ran, which the listings show: it trained past loading, so
    it did not crash while loading."""
    vol = facts.volume
    h = facts.history
    if not vol.seen or base.status != "not_evaluated" or h.unseen:
        return base
    unread = [r for r in h.runs if r.unread]
    read = [r for r in h.runs if r.log is not None]
    if not unread or any(r.log.first("resume_error", "partial_checkpoint") or r.log.load_crash_unknown for r in read):
        return base  # what the read logs show decides
    said = []
    for a in {r.attempt: h.numbered(r.attempt) for r in unread}.values():
        start, end = _window(a) if a is not None else (None, None)
        saved = vol.saves_in(start, end)
        if a is None or not saved:
            return base
        c, j = max(saved, key=lambda x: x[0].mtime or 0.0)
        said.append(f"attempt {a.index}'s log is not there, but {j.label()} shows {c.name} written complete while "
                    f"it ran ({epoch_text(c.mtime)}): it trained past loading")  # fmt: skip
    return ok(base.subject, reason=f"no checkpoint-loading error in {len(read)} log(s); " + "; ".join(said))


# -- weights-only-checkpoint ---------------------------------------------------------------------------------
@augments("weights-only-checkpoint")
def weights_only(facts: Facts, rule: Rule, base: Result) -> Result:
    vol = facts.volume
    latest = vol.latest()
    if latest is None or base.status == "fail":
        return base
    for d in latest.dirs:
        if not d.layout.parts or not any(p in d.layout.parts for p in ("optimizer", "scheduler")):
            continue
        done = d.complete()
        if not done:
            continue
        c = done[-1]
        if c.lacks:
            lacks = " or ".join(f"{p} state" for p in c.lacks)
            return fail(base.subject, [latest.evidence(c)],
                        f"{latest.label()}: the newest complete checkpoint {c.name} holds no {lacks} "
                        f"({', '.join(sorted(c.node.children))[:160]}): a resume restarts the optimizer and the "
                        "schedule", "high")  # fmt: skip
        if base.status == "not_evaluated" and {"optimizer", "scheduler"} <= set(c.holds):
            return ok(base.subject, reason=f"{latest.label()}: the newest complete checkpoint {c.name} holds the "
                      "optimizer and scheduler state", evidence=[latest.evidence(c)])  # fmt: skip
    return base


# -- save-total-limit-unset ---------------------------------------------------------------------------------
@augments("save-total-limit-unset")
def save_total_limit(facts: Facts, rule: Rule, base: Result) -> Result:
    latest = facts.volume.latest()
    if latest is None or base.status == "pass":
        return base
    words, ev = _accumulation(latest)
    if not words:
        return base
    if base.status == "fail":
        return _with(base, ev, words)
    return _note(base, words)


def _accumulation(j: Judged) -> tuple[str, list[dict[str, Any]]]:
    """How many checkpoints the newest listing holds, their size, how fast they came, and when the volume fills."""
    for d in j.dirs:
        done = d.complete()
        if len(done) < 2:
            continue
        sizes = [c.size for c in done if c.size is not None]
        total = sum(sizes)
        times = sorted(c.mtime for c in done if c.mtime is not None)
        words = f"{j.label()}: {len(done)} complete checkpoints ({done[0].name} … {done[-1].name}), " \
                f"{size_text(total)} in all"
        ev = [j.evidence(done[0]), j.evidence(done[-1])]
        if len(times) >= 2 and times[-1] > times[0]:
            per_hour = (len(times) - 1) / ((times[-1] - times[0]) / 3600)
            each = total / len(sizes) if sizes else 0
            words += f", about {per_hour:.1f} per hour ({size_text(int(each * per_hour))} per hour)"
            df = j.listing.df
            if df is not None and each > 0:
                hours = df.available / (each * per_hour)
                words += f"; {size_text(df.available)} free: full in about {hours:.1f} hours"
                dfe = j.df_evidence()
                if dfe is not None:
                    ev.append(dfe)
        return words, ev
    return "", []


# -- checkpoint-disk-full -----------------------------------------------------------------------------------
@augments("checkpoint-disk-full")
def disk_full(facts: Facts, rule: Rule, base: Result) -> Result:
    latest = facts.volume.latest()
    if latest is None or base.status == "fail":
        return base
    df = latest.listing.df
    if df is None:
        why = latest.listing.df_problem or "no df of the volume beside the listing"
        return _note(base, f"free space unknown ({why})")
    last = None
    for d in latest.dirs:
        done = [c for c in d.complete() if c.size]
        if done:
            c = max(done, key=lambda x: x.mtime or 0.0)
            if last is None or (c.mtime or 0) > (last[0].mtime or 0):
                last = (c, d)
    if last is None:
        return _note(base, f"{size_text(df.available)} free on {df.mount} ({latest.listing.at or 'time unknown'})")
    c = last[0]
    size = c.size or 0
    if df.available < size:
        ev = [latest.evidence(c)]
        dfe = latest.df_evidence()
        if dfe is not None:
            ev.append(dfe)
        return fail(base.subject, ev,
                    f"{latest.label()}: free space ({size_text(df.available)}) is less than the last checkpoint "
                    f"{c.name} ({size_text(size)}): the next save fails", "medium")  # fmt: skip
    return _note(base, f"{size_text(df.available)} free on {df.mount}, {df.available / max(size, 1):.1f} times the "
                 f"last checkpoint {c.name} ({latest.listing.at or 'time unknown'})")  # fmt: skip


# -- lexical-checkpoint-sort --------------------------------------------------------------------------------
@augments("lexical-checkpoint-sort")
def lexical_sort(facts: Facts, rule: Rule, base: Result) -> Result:
    vol = facts.volume
    if not vol.seen:
        return base
    h = facts.history
    if base.status != "fail":
        for a in h.later_attempts():
            kind, step, r, ev = h.attempt_start(a)
            if kind != "resumed" or step is None:
                continue
            for j in _found_before(vol, h, a):
                for d in j.dirs:
                    done = [c for c in d.complete() if c.step is not None]
                    if len(done) < 2:
                        continue
                    text_last = max(done, key=lambda c: c.name)
                    top = max(done, key=lambda c: c.step or 0)
                    if text_last.step == step and (top.step or 0) > step:
                        evid = [j.evidence(text_last), j.evidence(top)]
                        if r is not None and ev is not None and r.log is not None:
                            evid.append(ev.evidence(r.log.ref, r.attempt))
                        return fail(base.subject, evid,
                                    f"attempt {a.index} resumed from {text_last.name}, the name that sorts last as "
                                    f"text among those {j.label()} shows, although {top.name} was newer", "high")
        return base
    latest = vol.latest()
    if latest is None:
        return base
    for d in latest.dirs:
        done = [c for c in d.complete() if c.step is not None]
        if len(done) < 2:
            continue
        text_last = max(done, key=lambda c: c.name)
        top = max(done, key=lambda c: c.step or 0)
        if text_last is not top:
            return _with(base, [latest.evidence(text_last), latest.evidence(top)],
                         f"{latest.label()}: a text sort of the names there picks {text_last.name} over {top.name}")
        return _with(base, [], f"{latest.label()}: the names there ({done[0].name} … {top.name}) still sort the "
                     "same as text, until the step gains a digit")  # fmt: skip
    return base
