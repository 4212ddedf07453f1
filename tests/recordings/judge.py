"""Judge the engine on one recording bundle: its attempts timeline against the ground truth, its findings
against the run's verdict (`fail`, `pass`, and `not_fail`: rules that must not fail though the bundle may not
prove they pass). Returns the classes of miss (empty: the engine got the recording right).

What the bundle cannot show (an attempt whose pod and log are gone, output lost to buffering) may come out
unknown; a number or a verdict that contradicts the truth never may. With every pod and log kept
(jobset-kept) the verdict must be exact.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

from ckpt_doctor.facts.timeline import AttemptFact, timeline_of
from ckpt_doctor.pipeline import diagnose_snapshot
from ckpt_doctor.sources.bundle import open_bundle
from tests.recordings.bundles import epoch, load_run

ROOT = Path(__file__).resolve().parents[2]
RANK = {"fail": 0, "not_evaluated": 1, "pass": 2}
# what each true ending may be called (suspend-resume: the platform's reason is more specific)
ENDINGS = {
    "completed": {"completed"},
    "crashed": {"crash"},
    "killed": {"killed"},
    "terminated": {"sigterm"},
}


# A training step the log itself shows, read without the engine: a bar's rate, a loss, or a step of the
# attempt's own range named as a step (`step 25`, `global step 25`, `"step": 25`, `step=25`), never the bare
# numbers of a timestamp or a path
_RATE = re.compile(rb"it/s|s/it|\bloss\b", re.I)
_STEP = re.compile(rb"\bstep\W{0,3}(\d+)", re.I)


def shows_progress(raw: bytes, steps: dict[str, int]) -> bool:
    """Whether a raw attempt log shows any of the steps the attempt ran (a lower bound's worth of progress)."""
    if _RATE.search(raw):
        return True
    return any(steps["first"] <= int(m.group(1)) <= steps["last"] for m in _STEP.finditer(raw))


def names_step(raw: bytes, step: int) -> bool:
    """Whether a raw log names `step` as a step (`global step 20`, `step=20`, `checkpoint-20`, `step_0020`)."""
    return any(
        int(m.group(1)) == step for m in re.finditer(rb"(?:\bstep\W{0,3}|checkpoint-|step_|iter_)(\d+)", raw, re.I)
    )


def listing_entries(text: str) -> list[tuple[float, str, str]]:
    """(mtime, path, type) of each entry of a recorded listing (contracts.md §2: `%y %s %T@ %p`; type `d` for a
    directory, `f` for a file)."""
    out = []
    for ln in text.splitlines():
        parts = ln.split(" ", 3)
        if ln.startswith("#") or len(parts) < 4:
            continue
        try:
            out.append((float(parts[2]), parts[3], parts[0]))
        except ValueError:
            continue
    return out


def save_shown(step: int, t: dict[str, Any], raw: bytes | None, listings: list[list[tuple[float, str, str]]]) -> bool:
    """Whether a save of `step` by attempt `t` is shown: its log names a save with that number on one line, or a
    listing in the bundle holds an entry whose own name carries the step, written while the attempt ran: a file
    by its own mtime, a directory by the files under it (its own mtime says only when an entry was made in it, the
    start of a write: with its files written again later, the listing does not show that write ever finished)."""
    if raw is not None and re.search(rb"(?i)sav\w*[^\n\r]{0,80}?(?<!\d)0*%d(?!\d)" % step, raw):
        return True
    t0, t1 = epoch(t["started"]), epoch(t["ended"]) + 1.0
    # `20`, `checkpoint-20`, `global_step20`, `step=20.ckpt`, `step_0020.pt` (not a hash's digits)
    tok = re.compile(rf"(?i)(?:.*(?:[-_=]|step|iter|checkpoint|ckpt))?0*{step}(?:\.\w+)?")
    for lst in listings:
        for m, p, kind in lst:
            if not tok.fullmatch(p.rpartition("/")[2]):
                continue
            if kind == "d":
                files = [fm for fm, fp, fk in lst if fk != "d" and fp.startswith(p.rstrip("/") + "/")]
                if not files:
                    continue
                m = max(files)
            if t0 <= m <= t1:
                return True
    return False


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
    listings = [listing_entries(p.read_text()) for p in sorted((bundle / "checkpoints").rglob("*.txt"))]
    eng = tl.attempts
    if len(eng) > n:
        misses.add("phantom-attempt")
    for k in range(1, min(len(eng), n) + 1):
        earlier = {s for a in truth[: n - k] for s in a["saves_complete"]}
        raw = (run["_dir"] / f"attempt-{n - k}.log").read_bytes()
        misses |= judge_attempt(eng[-k], truth[-k], n - k in seen, model, earlier, not raw, raw, listings)
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
    misses |= judge_not_fail(run["verdict"], status)
    return sorted(misses), {"timeline": tl.to_json(), "findings": status}


def judge_not_fail(verdict: dict[str, list[str]], status: dict[str, str]) -> set[str]:
    """The verdict's `not_fail` rules (realruns/record.py `verdict`): a rule the truth says must not fail although a
    bundle may not prove it passes (final-checkpoint-missing where no attempt was sent SIGTERM). Failing it is a
    miss on every bundle model; pass, not_evaluated or absent are all right."""
    rules = verdict.get("not_fail") or []
    return {f"finding:{rule}:fail-must-not-fail" for rule in rules if status.get(rule) == "fail"}


def judge_attempt(
    e: AttemptFact,
    t: dict[str, Any],
    log_seen: bool,
    model: str,
    earlier: set[int],
    empty: bool = False,
    raw: bytes | None = None,
    listings: list[list[tuple[float, str, str]]] | None = None,
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
            # a log that shows no step (rich without a terminal, DeepSpeed at its default log level) may come out
            # unknown, with the engine saying why; one that shows a step must be read
            quiet = raw is not None and not shows_progress(raw, steps)
            if not (quiet and getattr(e, "last_step_unknown", "")):
                out.add("progress-not-read")
        elif t["ended_by"] == "completed" and e.last_step != steps["last"]:
            out.add("last-step-short")
        elif (
            t["ended_by"] in ("killed", "terminated")
            and e.last_step < steps["last"]
            and not getattr(e, "last_step_bound", False)
        ):
            out.add("last-step-not-a-bound")
    if t["crashed_while_loading"]:
        if e.end.kind != "crash":
            out.add("load-crash-not-seen")
    elif t["resumed_from"] is not None:
        # a resume from a checkpoint whose name holds no step (Lightning's last.ckpt), in a log that names none,
        # may come out with its step unknown, the engine saying why
        quiet = raw is not None and not names_step(raw, t["resumed_from"])
        unknown = e.start_step is None and quiet and getattr(e, "start_step_unknown", "")
        if e.start != "resumed" or (e.start_step is None and not unknown):
            out.add("resume-not-read")
    elif steps and e.start not in ("fresh",):
        out.add("fresh-not-read")
    missing = complete - got_saves
    if missing and not (
        getattr(e, "saves_unknown", "") and not any(save_shown(s, t, raw, listings or []) for s in missing)
    ):
        # a save neither the log names nor a listing in the bundle shows (rotated away before it was taken) may be
        # missing, the engine saying why; one they show must be read
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
