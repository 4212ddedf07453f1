"""The checkpoints on the volume, from the listings of the snapshot (contracts.md §2 `checkpoints/`).

Each listing of the target's trainer pods is read (facts/listing.py), its checkpoints found and judged by
the layout of the framework that wrote them (frameworks/completeness.py: complete or not, and why, their
sizes and times), and the checkpoint the resume in use would pick is named: the program's own discovery
when the Python reader sees it, else the framework's (`Pick`). A listing is evidence of what existed at its
`at` time, never before or after it: a rule that speaks of an attempt's start uses only a listing taken
between the attempt before it and that start; the newest listing speaks of what the next resume will find.

Unknown is not absent: no listing, a refused exec, a malformed or unreadable listing make `missing()` say
why, and the rules that need a listing are then not evaluated on it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from ckpt_doctor import frameworks
from ckpt_doctor.facts.listing import MAX_LISTING_BYTES, MAX_SMALL_FILE, Listing, epoch_text, parse_df, parse_listing
from ckpt_doctor.frameworks.completeness import Checkpoint, Picked, PickRule, SaveDir, find_save_dirs, pick
from ckpt_doctor.scope import TRAINER_CONTAINER
from ckpt_doctor.snapshot import ListingSource

if TYPE_CHECKING:
    from ckpt_doctor.facts.context import Facts
    from ckpt_doctor.frameworks.spec import Framework

HOW_TO = "collect --inspect-checkpoints, or the commands in docs/bundle.md"
IN_PROGRESS = 300.0  # seconds: a newest checkpoint written this recently while a trainer ran may still be written


@dataclass
class Judged:
    """One listing and what its checkpoints are."""

    listing: Listing
    framework: str  # whose layout judged it ("" when no framework's checkpoints are in it)
    dirs: list[SaveDir]
    rule: PickRule | None  # how the resume in use picks
    rule_from: str  # what says so: the program's code (file:line) or the framework
    picks: list[Picked] = field(default_factory=list)  # per dir

    @property
    def at(self) -> float | None:
        return self.listing.at_epoch

    def label(self) -> str:
        where = f"{self.listing.pod}/{self.listing.container}"
        return f"the listing of {self.listing.dir} in {where}" + (f" at {self.listing.at}" if self.listing.at else "")

    def evidence(self, c: Checkpoint) -> dict[str, Any]:
        """A `checkpoint` evidence item (contracts.md §3): the entry, and the listing it was read from."""
        ev: dict[str, Any] = {"type": "checkpoint", "path": c.path}
        size = c.size
        if size is not None:
            ev["size"] = size
        if c.mtime is not None:
            ev["mtime"] = epoch_text(c.mtime)
        if c.complete is not None:
            ev["complete"] = c.complete
        if c.why:
            ev["why"] = c.why
        lst = self.listing
        ev["pod"], ev["container"] = lst.pod, lst.container
        if lst.at:
            ev["listedAt"] = lst.at
        ev["listing"] = lst.source
        if c.node.line:
            ev["line"] = c.node.line
        return ev

    def save_evidence(self, c: Checkpoint) -> dict[str, Any]:
        """`evidence(c)` cut to what shows a save: the entry, when it was written, whether it is complete, and the
        listing (no size, pod or listing time)."""
        return {k: v for k, v in self.evidence(c).items() if k in ("type", "path", "mtime", "complete", "listing",
                                                                    "line")}  # fmt: skip

    def df_evidence(self) -> dict[str, Any] | None:
        df = self.listing.df
        if df is None:
            return None
        return {"type": "checkpoint", "path": df.mount, "why": f"df: {df.available} bytes available of {df.size}",
                "free": df.available, "capacity": df.size, "pod": self.listing.pod,
                "container": self.listing.container, "listedAt": self.listing.at, "listing": self.listing.source,
                "text": df.line}  # fmt: skip


@dataclass
class Volume:
    """Every listing of the target, read and judged."""

    judged: list[Judged]  # sorted by time (unknown times first)
    problems: list[tuple[str, str]]  # (what, why it is unknown)
    ckpt_dir: str = ""

    @property
    def seen(self) -> bool:
        return bool(self.judged)

    def missing(self) -> str | None:
        """Why there is no listing to judge from, or None."""
        if self.judged:
            return None
        if self.problems:
            return "; ".join(f"{w}: {r}" for w, r in self.problems[:3])
        return f"no checkpoint listing in the snapshot ({HOW_TO})"

    def unknown_note(self) -> str:
        """The listings that could not be read, said once (for reasons beside a judgement)."""
        if not self.problems:
            return ""
        return "; other listings unknown: " + "; ".join(f"{w}: {r}" for w, r in self.problems[:2])

    def latest(self) -> Judged | None:
        """The newest listing (the one taken last; one without a time counts as the oldest)."""
        timed = [j for j in self.judged if j.at is not None]
        return max(timed, key=lambda j: j.at or 0.0) if timed else (self.judged[-1] if self.judged else None)

    def between(self, after: float | None, before: float | None) -> list[Judged]:
        """Listings taken in (after, before]: what a resume that began at `before` found."""
        if before is None:
            return []
        return [j for j in self.judged if j.at is not None and j.at <= before and (after is None or j.at >= after)]

    def complete_saves(self) -> list[tuple[Checkpoint, Judged]]:
        """Every complete checkpoint with a step, once per path (the earliest listing that shows it)."""
        seen: dict[tuple[str, float | None], tuple[Checkpoint, Judged]] = {}
        for j in self.judged:
            for d in j.dirs:
                for c in d.checkpoints:
                    if c.complete and c.step is not None:
                        seen.setdefault((c.path, c.mtime), (c, j))
        return list(seen.values())

    def trained_again(self, t0: float | None, t1: float | None, first: bool = False) -> TrainedAgain | None:
        """A fresh start the listings prove: a checkpoint written inside [t0, t1] (the attempt's run) at a step no
        higher than the lowest one its directory already held before t0. A resume loads one of those and saves
        only above it, so the attempt trained from below every checkpoint it could load: from step 0 (HF
        overwriting `checkpoint-10`, Lightning writing `step=10-v1.ckpt` beside `step=10.ckpt`, DeepSpeed
        rewriting `global_step10`). The job's `first` attempt, whose directory held no checkpoint from before it
        began, had nothing there to load either. None when nothing shows it.

        What was held before t0 is known by a checkpoint's last write, or, when its files were written again
        since (DeepSpeed rewrites `global_step10/*` in place), by its directory's own mtime: an entry was made in
        it then, and rewriting a file in place leaves that time alone. A checkpoint known only so, with none held
        above it, may have been a save cut short that a resume did again (recording deepspeed-0.19-partial-save:
        `global_step30` half-written, then written again by the attempt that resumed from 20): it is not counted.
        For the `first` attempt a directory made while it ran shows it wrote that step too, though its files
        were written again later."""
        if t0 is None or t1 is None:
            return None
        saves = self.complete_saves()
        made = [(c, j, False) for c, j in self.saves_in(t0, t1)]
        if first:
            inside = {id(c) for c, _j, _d in made}
            made += [(c, j, True) for c, j in saves if id(c) not in inside and _dir_made_in(c, j, t0, t1)]
        for c, j, by_dir in sorted(made, key=lambda x: (x[0].step or 0, x[2])):
            home = c.path.rpartition("/")[0]
            held = [(b, k, *h) for b, k in saves if b.path.rpartition("/")[0] == home
                    and (h := _held_before(b, k, t0)) is not None]  # fmt: skip
            # known by its directory alone and none held above it: perhaps a save cut short, done again
            held = [x for x in held if not x[3] or any((o[0].step or 0) > (x[0].step or 0) for o in held)]
            if held:
                b, k, at, held_by_dir = min(held, key=lambda x: (x[0].step or 0, x[0].path != c.path, x[3]))
                if c.step is not None and b.step is not None and c.step <= b.step:
                    return TrainedAgain(c, j, by_dir, b, k, at, held_by_dir)
            elif first:
                return TrainedAgain(c, j, by_dir)
            return None  # only the lowest save inside the window can show it
        return None

    def saves_in(self, t0: float | None, t1: float | None) -> list[tuple[Checkpoint, Judged]]:
        """Complete checkpoints last written inside [t0, t1]: saves of the attempt that ran then."""
        if t0 is None or t1 is None:
            return []
        out = []
        for c, j in self.complete_saves():
            m = c.mtime
            if m is not None and t0 <= m and m + j.listing.precision <= t1 + 1.0:
                out.append((c, j))
        return out


@dataclass(frozen=True)
class TrainedAgain:
    """A fresh start the listings show (`Volume.trained_again`): the checkpoint the attempt wrote, and the one at
    a step no lower that was there before it began (None for the job's first attempt)."""

    saved: Checkpoint
    saved_in: Judged
    saved_by_dir: bool  # known written then by its directory's own mtime (its files were written again since)
    held: Checkpoint | None = None
    held_in: Judged | None = None
    held_at: float | None = None  # when `held` is known to have been there
    held_by_dir: bool = False  # known by its directory's own mtime (its files were written again since)

    def held_text(self) -> str:
        """What was there before the attempt began, said so it reads right when it is the saved one itself."""
        b = self.held
        if b is None:
            return ""
        when = epoch_text(self.held_at)
        same = b.path == self.saved.path
        if self.held_by_dir:
            whose = "its directory" if same else f"the directory of {b.name} (step {b.step})"
            return f"{whose} was already there at {when}, before it began"
        return (f"it was already there, written at {when}" if same
                else f"{b.name} (step {b.step}) was already there, written at {when}")  # fmt: skip

    def text(self) -> str:
        """How the attempt began, as the timeline says it."""
        c = self.saved
        if self.held is None:
            if self.saved_by_dir:
                return (f"the first attempt: an entry was made in {c.name} (step {c.step}), the oldest checkpoint of "
                        "its directory, while it ran (its files were written again since); none was there before it "
                        "began")  # fmt: skip
            return (f"the first attempt: {c.name} (step {c.step}) is the oldest checkpoint of its directory, written "
                    "while it ran; none was there before it began")  # fmt: skip
        again = self.held.path == c.path
        said = (f"{c.name} (step {c.step}) was written again while it ran; {self.held_text()}" if again
                else f"{c.name} (step {c.step}) was written while it ran, though {self.held_text()}")  # fmt: skip
        return said + ": it trained from below every checkpoint it could load"


def _held_before(c: Checkpoint, j: Judged, t0: float) -> tuple[float, bool] | None:
    """When a checkpoint is known to have been there before t0, and whether only by its directory's own mtime
    (an entry made in it then; its files written again since); None when the listing does not show it."""
    p = j.listing.precision
    if c.mtime is not None and c.mtime + p < t0:
        return c.mtime, False
    n = c.node
    if n.kind == "d" and n.mtime is not None and n.mtime + p < t0:
        return n.mtime, True
    return None


def _dir_made_in(c: Checkpoint, j: Judged, t0: float, t1: float) -> bool:
    """Whether an entry was made in a checkpoint's directory inside [t0, t1] (the write of that step began then)."""
    n = c.node
    return n.kind == "d" and n.mtime is not None and t0 <= n.mtime and n.mtime + j.listing.precision <= t1


# -- building it ------------------------------------------------------------------------------------------
def build_volume(facts: Facts) -> Volume:
    sc = facts.scope
    snap = sc.snap
    ref = _epoch(str(snap.meta.get("collectedAt") or ""))
    mine = _belongs(facts)
    judged: list[Judged] = []
    problems: list[tuple[str, str]] = []
    ckdir = (facts.ckpt_dir.path or "") if facts.ckpt_dir is not None else ""
    for (pod, _container), src in sorted(snap.checkpoints.items()):
        if not mine(pod, src):
            continue
        lst = read_source(src, ref)
        if not lst.seen:
            problems.append((src.display, lst.problem))
            continue
        judged.append(judge(facts, lst))
    for g in snap.not_collected:
        if g.what == "checkpoints" or g.what.startswith("checkpoints/"):
            pod = g.what.split("/")[1] if g.what.count("/") >= 1 else ""
            if not pod or mine(pod, None):
                problems.append((g.what, g.reason))
    judged.sort(key=lambda j: (j.at is not None, j.at or 0.0, j.listing.source))
    return Volume(judged, problems, ckdir)


def read_source(src: ListingSource, reference: float | None = None) -> Listing:
    """Read a collected listing (cached on the source: one reading per snapshot)."""
    cached = src.__dict__.get("_listing")
    if cached is not None and cached[0] == reference:
        return cached[1]
    if src.problem:
        lst = Listing(src.pod, src.container, src.display, problem=src.problem)
    else:
        try:
            text = src.read_text(MAX_LISTING_BYTES)
        except (OSError, ValueError) as e:
            lst = Listing(src.pod, src.container, src.display, problem=f"unreadable: {e}")
        else:
            if not text.strip() and src.path is None and src.text is None:
                why = "no listing beside its df or files (checkpoints/<pod>/<container>.txt)"
                lst = Listing(src.pod, src.container, src.display, problem=why)
            else:
                lst = parse_listing(text, src.pod, src.container, src.display, reference)
        if lst.seen:
            df = src.read_df()
            if df is not None:
                lst.df, lst.df_problem = parse_df(df)
            lst.files = src.read_files(MAX_SMALL_FILE)
    src.__dict__["_listing"] = (reference, lst)
    return lst


def _belongs(facts: Facts) -> Any:
    """Which listings speak of the target: its trainer pods' (kept or gone: a pod name of its JobSet's shape), a
    listing whose `# trainjob:` header names it, and in a bundle of one TrainJob every listing."""
    sc = facts.scope
    tj = sc.trainjob
    pods = {p.name for p in sc.trainer_pods()} | {p.name for p in sc.pods}
    only = len(sc.snap.of_kind("TrainJob")) <= 1
    shape = None
    if tj is not None:
        rjobs = "|".join(re.escape(n) for n in sorted(sc.trainer_job_names())) or "[a-z0-9-]+"
        shape = re.compile(rf"^{re.escape(tj.name)}-(?:{rjobs})-\d+-\d+-[a-z0-9]{{5}}$")
    qual = f"{tj.namespace}/{tj.name}" if tj is not None else ""

    def mine(pod: str, src: ListingSource | None) -> bool:
        if pod in pods or (shape is not None and shape.match(pod)):
            return True
        if src is not None and tj is not None and (src.path is not None or src.text):
            if src.path is not None:
                with src.path.open("rb") as f:
                    head = f.read(4096).decode("utf-8", "replace")
            else:
                head = (src.text or "")[:4096]
            m = re.search(r"^#\s*trainjob:\s*(\S+)\s*$", head, re.M)
            if m:
                return m.group(1) in (qual, tj.name)
        return only

    return mine


def judge(facts: Facts, lst: Listing) -> Judged:
    """Find the checkpoints of a listing, judge them by the best-fitting layout, and name the picks."""
    assert lst.root is not None or lst.exists is False
    if lst.root is None:  # the directory does not exist: nothing was saved there
        return Judged(lst, "", [], None, "")

    def read(rel: str) -> str | None:
        return lst.file_text(rel)

    stacks = list(facts.program.stacks) if facts.program is not None else []
    best: tuple[tuple[Any, ...], str, list[SaveDir]] | None = None
    # the program's stacks first: when one of them shows its commit signal, the other layouts are not tried
    order = sorted(frameworks.all_frameworks(), key=lambda f: (f.name not in stacks, f.order))
    for fw in order:
        if best is not None and not best[0][0] and not best[0][1] and not best[0][2] and fw.name not in stacks:
            break
        if fw.layout is None or not fw.layout.names:
            continue
        dirs = _outermost(find_save_dirs(lst.root, fw.layout, fw.name, read))
        if not dirs:
            continue
        count = sum(len(d.checkpoints) for d in dirs)
        signal = any(d.signal_seen for d in dirs)
        generic = fw.name == "hand-rolled"
        score = (not signal, generic, fw.name not in stacks, -count, fw.order)
        if best is None or score < best[0]:
            best = (score, fw.name, dirs)
    if best is None:
        return Judged(lst, "", [], None, "")
    _score, fname, dirs = best
    fw = frameworks.get(fname)
    assert fw is not None
    rule, rule_from = pick_rule(facts, fw)
    j = Judged(lst, fname, dirs, rule, rule_from)
    j.picks = [pick(d, rule) if rule is not None else Picked(None, "", False) for d in dirs]
    return j


def _outermost(dirs: list[SaveDir]) -> list[SaveDir]:
    """Save directories that are not inside a checkpoint of another one (a sub-folder of a checkpoint is no
    save directory of its own)."""
    inner = {id(c.node) for d in dirs for c in d.checkpoints}
    out = []
    for d in dirs:
        if any(id(n) in inner for n in _ancestors(d, dirs)):
            continue
        out.append(d)
    return out


def _ancestors(d: SaveDir, dirs: list[SaveDir]) -> list[Any]:
    nodes = []
    for other in dirs:
        for c in other.checkpoints:
            if d.node.path == c.node.path or d.node.path.startswith(c.node.path.rstrip("/") + "/"):
                nodes.append(c.node)
    return nodes


def pick_rule(facts: Facts, fw: Framework) -> tuple[PickRule | None, str]:
    """How the resume in use picks a checkpoint: the program's own discovery when the Python reader sees one (its
    site), else the framework's `Pick`; None when it cannot be told."""
    prog = facts.program
    found = [(d, f"{p.source.label}:{d.site.line}") for p in prog.pythons for d in p.facts.discovery] if prog else []
    own = [(d, s) for d, s in found if d.kind in ("numeric", "lexical", "mtime", "hf-get-last")]
    framework_picks = [d for d, _s in found if d.kind == "framework"]
    if own:
        d, site = own[0]
        req = f", only those holding {d.requires}" if d.requires else ""
        if d.kind == "hf-get-last":
            hf = frameworks.get("hf-trainer")
            if hf is not None and hf.pick is not None:
                return PickRule.of(hf.pick), f"the program's code ({site})"
        if d.kind == "numeric":
            return PickRule("highest-step", False, f"the program picks the highest number{req} ({site})",
                            requires=d.requires), f"the program's code ({site})"  # fmt: skip
        if d.kind == "lexical":
            return PickRule("lexical", False, f"the program picks the name that sorts last as text{req} ({site})",
                            requires=d.requires), f"the program's code ({site})"  # fmt: skip
        return PickRule("mtime", False, f"the program picks the newest by time{req} ({site})",
                        requires=d.requires), f"the program's code ({site})"  # fmt: skip
    for d in framework_picks:
        owner = _discovery_owner(d.selector)
        if owner is not None and owner.pick is not None and owner.pick.how != "program":
            return PickRule.of(owner.pick), f"{owner.title} ({d.selector})"
    if fw.pick is not None and fw.pick.how != "program":
        return PickRule.of(fw.pick), fw.title
    return None, ""


def _discovery_owner(selector: str) -> Framework | None:
    by = {"fit": "lightning", "load_checkpoint": "deepspeed", "get_last_checkpoint": "hf-trainer",
          "latest_step": "orbax", "load_latest_full_state": "training-hub"}  # fmt: skip
    name = by.get(selector)
    return frameworks.get(name) if name else None


def trainer_running_at(facts: Facts, t: float | None, since: float | None = None) -> bool | None:
    """Whether a trainer container ran at `t` (None: not known); with `since`, one that had surely started before
    then (container start times are whole seconds, rounded down)."""
    if t is None:
        return None
    for r in facts.history.runs:
        t0 = _epoch(r.started)
        if t0 is None or t0 > t or (since is not None and t0 + 1.0 > since):
            continue
        t1 = _epoch(r.finished)
        if t1 is None:
            if r.exit_code is None and not r.not_started and not r.inferred:
                return True
            continue
        if t1 > t + 1.0:  # container times are whole seconds, rounded up at the end
            return True
    return False


def _epoch(s: str | None) -> float | None:
    if not s:
        return None
    try:
        return datetime.fromisoformat(s.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def size_text(n: int | None) -> str:
    if n is None:
        return "size unknown"
    for unit, k in (("GiB", 1024**3), ("MiB", 1024**2), ("KiB", 1024)):
        if n >= k:
            return f"{n / k:.1f} {unit}"
    return f"{n} bytes"


def trainer_container(pod_container: str) -> bool:
    return pod_container == TRAINER_CONTAINER
