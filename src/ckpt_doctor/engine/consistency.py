"""After the checks: the failing findings must agree with each other and with the attempts timeline.

A contradiction (a failure that the timeline rules out, two findings that cannot both hold) is a bug
in a check, not a fact about the TrainJob. Tests run this over every fixture, example and variant
and expect nothing; in a run it becomes a note asking for a report (with CKPT_DOCTOR_DEBUG set,
an error), never a silent extra finding.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ckpt_doctor.engine.walk import Diagnosis
    from ckpt_doctor.facts.attempts import History

Rule = Callable[["Diagnosis", dict[str, str], "History"], str | None]
RULES: list[Rule] = []


def rule(fn: Rule) -> Rule:
    RULES.append(fn)
    return fn


def _starts(h: History) -> list[tuple[int, str, int | None]]:
    return [(a.index, *h.attempt_start(a)[:2]) for a in h.later_attempts()]


@rule
def _fresh_needs_a_fresh_attempt(d: Diagnosis, st: dict[str, str], h: History) -> str | None:
    if st.get("fresh-start-after-restart") == "fail" and not any(k == "fresh" for _i, k, _s in _starts(h)):
        from ckpt_doctor.engine.checks.symptoms import _progress_drop
        from ckpt_doctor.facts.timeline import timeline_of  # the listings may show what the logs do not

        if any(k == "unknown" for _i, k, _s in _starts(h)) and _progress_drop(d.facts) is not None:
            return None  # the TrainJob's own progress report shows it (its log is gone)
        if not any(a.start == "fresh" for a in timeline_of(d.facts).attempts[1:]):
            return "fresh-start-after-restart fails, yet no later attempt started fresh"
    return None


@rule
def _older_needs_a_resume(d: Diagnosis, st: dict[str, str], h: History) -> str | None:
    if st.get("resumed-older-checkpoint") == "fail" and not any(k == "resumed" for _i, k, _s in _starts(h)):
        return "resumed-older-checkpoint fails, yet no later attempt resumed"
    return None


@rule
def _autodetect_is_a_fresh_start(d: Diagnosis, st: dict[str, str], h: History) -> str | None:
    if st.get("ckpt-autodetect-found-nothing") == "fail" and st.get("fresh-start-after-restart") == "pass":
        return "ckpt-autodetect-found-nothing fails while fresh-start-after-restart passes"
    return None


@rule
def _no_checkpoint_contradicts_a_resume(d: Diagnosis, st: dict[str, str], h: History) -> str | None:
    if st.get("no-checkpoint-before-interruption") != "fail":
        return None
    f = next(x for x in d.findings if x.rule.id == "no-checkpoint-before-interruption" and x.status == "fail")
    detail = f.result.detail or ""
    for a in h.attempts:
        if detail.startswith(f"attempt {a.index} "):
            nxt = h.next_attempt(a.index)
            if nxt is not None:
                kind, step, _r, _e = h.attempt_start(nxt)
                if kind == "resumed" and step:
                    return (
                        f"no-checkpoint-before-interruption says attempt {a.index} never saved, yet attempt "
                        f"{a.index + 1} resumed from step {step}"
                    )
    return None


@rule
def _lexical_needs_code_or_a_rewind(d: Diagnosis, st: dict[str, str], h: History) -> str | None:
    if st.get("lexical-checkpoint-sort") != "fail":
        return None
    f = next(x for x in d.findings if x.rule.id == "lexical-checkpoint-sort" and x.status == "fail")
    from_code = any(e.get("type") == "field" for e in f.result.evidence)
    from_logs = sum(1 for e in f.result.evidence if e.get("type") == "log") >= 2
    if not (from_code or from_logs):
        return "lexical-checkpoint-sort fails with neither the selection code nor two saves that contradict"
    return None


@rule
def _final_save_needs_a_resume(d: Diagnosis, st: dict[str, str], h: History) -> str | None:
    if st.get("final-checkpoint-missing") == "fail" and not any(k == "resumed" for _i, k, _s in _starts(h)):
        return "final-checkpoint-missing fails, yet no later attempt resumed"
    return None


@rule
def _one_way_to_fail(d: Diagnosis, st: dict[str, str], h: History) -> str | None:
    if st.get("job-failed-without-restart") == "fail" and st.get("restarts-exhausted") == "fail":
        return "the TrainJob cannot both fail without a restart and run out of restarts"
    return None


def contradictions(diag: Diagnosis) -> list[str]:
    """What the failing findings say that cannot all be true (empty when they agree)."""
    if diag.facts.mode != "diagnose":
        return []
    worst: dict[str, str] = {}
    order = {"fail": 0, "not_evaluated": 1, "pass": 2}
    for f in diag.findings:
        if f.rule.id not in worst or order[f.status] < order[worst[f.rule.id]]:
            worst[f.rule.id] = f.status
    h = diag.facts.history
    return [msg for r in RULES if (msg := r(diag, worst, h))]
