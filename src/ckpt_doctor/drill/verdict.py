"""The drill's verdict, decided once (contracts.md §5): every face (the terminal, the app, `-o json`, JUnit,
Markdown, the exit code) reads it from the record this module fills in, never from its own reading of the steps.

- `stopped`: Ctrl-C, SIGTERM or an abort ended it (not a failure; the exit code says which signal);
- `error`: a step could not do what it is for (an API error, a denied exec, a timeout before its action, the
  TrainJob gone), the drill could not start, or a required step did not run at all (skipped by the user, not
  chosen with --steps / --skip, or left out because the cluster lacks what it needs); the step and the reason
  are named;
- `failed`: a step's expectation was not met (the engine's diagnosis says why);
- `passed`: every step the playbook requires ran and passed (an optional step may be skipped or degrade with a
  note);
- `planned`: --dry-run printed the plan.

When several apply, the first step in playbook order that failed or erred decides (a failed or erring step
ends the drill, so the later ones did not run); a cleanup that could not undo everything after an earlier
failure adds its leftovers without changing the verdict.
"""

from __future__ import annotations

from dataclasses import dataclass

from ckpt_doctor.drill.result import DrillResult, StepResult

EXIT = {"passed": 0, "planned": 0, "failed": 1, "error": 3}
WORDS = {
    "passed": "every required step ran and passed",
    "failed": "a step's expectation was not met",
    "error": "the drill could not prove anything about one step",
    "stopped": "stopped before the end (not a failure); cleanup ran",
    "planned": "the plan above changes nothing until you run it without --dry-run",
}


@dataclass(frozen=True)
class Verdict:
    verdict: str
    step: str | None  # the step that decided it (failed, error, or a required step that did not run)
    reason: str  # one line: what happened, with the step named


def _why(st: StepResult) -> str:
    return st.observed or st.status.replace("_", " ")


def decide(result: DrillResult, stopped: str | None = None, error: str | None = None) -> Verdict:
    """The verdict of a finished drill. `stopped`: what stopped it (SIGINT, SIGTERM, abort); `error`: an error
    that ended the drill outside any step (the cluster unreachable, the TrainJob not found)."""
    steps = result.steps
    if stopped is not None or any(s.status == "stopped" for s in steps):
        st = next((s for s in steps if s.status == "stopped"), None)
        where = f" during step {st.id}" if st is not None and st.id != (steps[-1].id if steps else None) else ""
        return Verdict("stopped", st.id if st is not None else None, f"stopped by {stopped or 'an abort'}{where}")
    decisive = next((s for s in steps if s.status in ("failed", "error") and s is not steps[-1]), None)
    if decisive is None and steps and steps[-1].status in ("failed", "error"):
        decisive = steps[-1]
    if result.dry_run and error is None and (decisive is None or decisive.status != "error"):
        return Verdict("planned", None, WORDS["planned"])
    if decisive is not None and decisive.status == "error":
        return Verdict("error", decisive.id, f"step {decisive.id} could not run: {_why(decisive)}")
    if error is not None:
        return Verdict("error", None, error)
    if decisive is not None:
        return Verdict("failed", decisive.id, f"step {decisive.id} failed: {_why(decisive)}")
    missing = next((s for s in steps if s.required and s.status != "passed"), None)
    if missing is not None:
        how = {"skipped": "was skipped", "not_run": "did not run"}.get(missing.status, f"is {missing.status}")
        return Verdict("error", missing.id, f"required step {missing.id} {how} ({_why(missing)}): the drill "
                                            "cannot pass without it")
    left = [s.id for s in steps if not s.required and s.status != "passed"]
    more = f" (optional, not passed: {', '.join(left)})" if left else ""
    return Verdict("passed", None, WORDS["passed"] + more)


def apply(result: DrillResult, stopped: str | None = None, error: str | None = None) -> Verdict:
    """Decide and write the verdict into the record (what every face renders)."""
    v = decide(result, stopped, error)
    result.verdict, result.verdict_step, result.verdict_reason = v.verdict, v.step, v.reason
    return v


def exit_code(verdict: str, signal_code: int | None = None) -> int:
    """contracts.md §1: 0 passed (or planned), 1 failed, 3 error; stopped: 130 (Ctrl-C, abort) or 143 (SIGTERM)."""
    if verdict == "stopped":
        return signal_code if signal_code is not None else 130
    return EXIT.get(verdict, 3)
