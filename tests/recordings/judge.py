"""Judge the engine on one recording bundle: its attempts timeline against the ground truth, its findings
against the run's verdict. Returns the classes of miss (empty: the engine got the recording right).

What the bundle cannot show (an attempt whose pod and log are gone, output lost to buffering) may come out
unknown; a number or a verdict that contradicts the truth never may. With every pod and log kept
(jobset-kept) the verdict must be exact.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from ckpt_doctor.facts.timeline import AttemptFact, timeline_of
from ckpt_doctor.pipeline import diagnose_snapshot
from ckpt_doctor.sources.bundle import open_bundle
from tests.recordings.bundles import load_run

ROOT = Path(__file__).resolve().parents[2]
RANK = {"fail": 0, "not_evaluated": 1, "pass": 2}
# what each true ending may be called (suspend-resume: the platform's reason is more specific)
ENDINGS = {
    "completed": {"completed"},
    "crashed": {"crash"},
    "killed": {"killed"},
    "terminated": {"sigterm"},
}


def logs_in_bundle(model: str, n: int) -> set[int]:
    """Which attempts' logs the bundle holds."""
    if model == "jobset-kept":
        return set(range(n))
    if model == "in-place":
        return {n - 1, n - 2} - {-1}
    return {n - 1}


def judge(bundle: Path) -> tuple[list[str], dict[str, Any]]:
    meta = yaml.safe_load((bundle / "bundle.yaml").read_text())["recording"]
    run = load_run(ROOT / "recordings" / meta["run"])
    model = meta["model"]
    with open_bundle(bundle) as snap:
        diag = diagnose_snapshot(snap)
    tl = timeline_of(diag.facts)
    doc = diag.to_json()
    misses: set[str] = set()
    truth = run["attempts"]
    n = len(truth)
    seen = logs_in_bundle(model, n)
    eng = tl.attempts
    if len(eng) > n:
        misses.add("phantom-attempt")
    for k in range(1, min(len(eng), n) + 1):
        earlier = {s for a in truth[: n - k] for s in a["saves_complete"]}
        empty = (run["_dir"] / f"attempt-{n - k}.log").stat().st_size == 0
        misses |= judge_attempt(eng[-k], truth[-k], n - k in seen, model, earlier, empty)
    status: dict[str, str] = {}
    for f in doc["findings"]:
        r = f["rule"]
        if r not in status or RANK[f["status"]] < RANK[status[r]]:
            status[r] = f["status"]
    exact = model == "jobset-kept"
    for rule in run["verdict"]["fail"]:
        got = status.get(rule, "absent")
        if got == "pass" or (exact and got != "fail"):
            misses.add(f"finding:{rule}:{got}-not-fail")
    for rule in run["verdict"]["pass"]:
        got = status.get(rule, "absent")
        if got == "fail" or (exact and got != "pass"):
            misses.add(f"finding:{rule}:{got}-not-pass")
    return sorted(misses), {"timeline": tl.to_json(), "findings": status}


def judge_attempt(
    e: AttemptFact, t: dict[str, Any], log_seen: bool, model: str, earlier: set[int], empty: bool = False
) -> set[str]:
    out: set[str] = set()
    steps = t["steps"]
    # never a wrong number, with or without the log
    if e.last_step is not None:
        # an attempt that loaded a checkpoint and ran no step (already at the end) stands at its step
        at_loaded = not steps and t["resume_path"] and e.last_step in earlier
        if not steps:
            if not at_loaded:
                out.add("phantom-steps")
        elif e.last_step > steps["last"]:
            out.add("last-step-beyond-truth")
    resumed = e.start == "resumed" and e.start_step is not None and t["resumed_from"] is not None
    if resumed and e.start_step != t["resumed_from"]:
        out.add("wrong-resume-step")
    if e.start == "resumed" and t["resumed_from"] is None and steps and not t["crashed_while_loading"]:
        out.add("fresh-called-resumed")
    if e.start == "fresh" and t["resumed_from"] is not None:
        out.add("resume-called-fresh")
    complete = set(t["saves_complete"])
    got_saves = {s.step for s in e.saves}
    if got_saves - complete:
        out.add("partial-save-counted" if got_saves & set(t["saves_partial"]) else "save-not-in-truth")
    if not log_seen:
        return out
    if empty and t["steps"]:
        # an empty log (its output lost to buffering) shows nothing to read: the engine must say so, with why
        if e.last_step is not None or not getattr(e, "last_step_unknown", ""):
            out.add("unknown-not-said")
        return out
    # with its log in the bundle, what the attempt did must be read
    if steps:
        if e.last_step is None:
            out.add("progress-not-read")
        elif t["ended_by"] == "completed" and e.last_step != steps["last"]:
            out.add("last-step-short")
        elif t["ended_by"] in ("killed", "terminated") and e.last_step < steps["last"] and not getattr(
            e, "last_step_bound", False
        ):
            out.add("last-step-not-a-bound")
    if t["crashed_while_loading"]:
        if e.end.kind != "crash":
            out.add("load-crash-not-seen")
    elif t["resumed_from"] is not None:
        if e.start != "resumed" or e.start_step is None:
            out.add("resume-not-read")
    elif steps and e.start not in ("fresh",):
        out.add("fresh-not-read")
    if complete - got_saves:
        out.add("saves-not-read")
    allowed = set(ENDINGS.get(t["ended_by"], ()))
    if model == "suspend-resume" and t["ended_by"] in ("terminated", "killed"):
        allowed |= {"suspended", "preempted"}
    if (t.get("fault") or {}).get("sigkill_after_grace"):
        allowed |= {"sigterm"}
    if e.end.kind not in allowed:
        if t["ended_by"] == "terminated" and e.end.kind == "completed":
            out.add("sigterm-exit-zero")
        else:
            out.add(f"ending-{t['ended_by']}-called-{e.end.kind}")
    return out
