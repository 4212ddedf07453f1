"""Which checkpoints on a volume are complete, judged by a framework's `Layout`, and which one its resume picks.

The tree is what a listing showed (`Node`: a directory or file with its size and mtime); small files kept
beside the listing (DeepSpeed's `latest`, Megatron's tracker) are read through `read(rel)`. Everything a
framework knows is data in its module (`Layout`: names, the files a complete checkpoint holds, markers,
pointers, atomicity; `Pick`: how its resume chooses); this module applies that data the same way for every
framework, from the commit signal down:

1. a name that marks a save in progress (Orbax's `.orbax-checkpoint-tmp`) or an *incomplete* marker inside or
   beside it (Red Hat's `checkpoint-is-incomplete.txt.node-N-rank-R`, NeMo's `-unfinished`): incomplete;
2. a pointer written after the data (DeepSpeed `latest`, Megatron `latest_checkpointed_iteration.txt`): what it
   names and older is complete, anything newer did not finish;
3. a *complete* marker (HF `trainer_state.json` and DCP `.metadata`, written last; Orbax
   `_CHECKPOINT_METADATA`): present or not;
4. a file written whole (Lightning's `.ckpt`): present means complete;
5. no commit signal at all (accelerate, torchtune): complete when every file the framework writes is there.

A complete checkpoint may still lack training state (`Layout.parts`): HF's `save_only_model` writes
`trainer_state.json` without `optimizer.pt` and `scheduler.pt`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import cache

from ckpt_doctor.frameworks.spec import CheckpointName, Layout, Marker, Pick, template_regex

Read = Callable[[str], "str | None"]  # a path relative to the listed directory -> the kept file's text
STATE_PARTS = ("optimizer", "scheduler")  # what a resume needs beyond the weights (the step is in `parts` too)
# parts a complete save may leave out (HF's save_only_model skips all of these); a missing `weights` part, or a
# missing file that is no part, is a save that did not finish
SKIPPABLE = ("optimizer", "scheduler", "rng", "scaler")


@dataclass(eq=False, slots=True)
class Node:
    """One entry of a listing: a directory (`d`), a file (`f`), a symlink (`l`) or another kind (`o`)."""

    name: str
    path: str
    kind: str
    size: int | None
    mtime: float | None
    line: int  # its line in the listing (0: implied by a path under it)
    target: str | None = None
    children: dict[str, Node] = field(default_factory=dict)
    _sums: tuple[int | None, float | None] | None = None  # (total size, last write), once asked

    def walk(self) -> Iterator[Node]:
        stack = [self]
        while stack:
            n = stack.pop()
            yield n
            stack.extend(n.children.values())

    def _summed(self) -> tuple[int | None, float | None]:
        if self._sums is None:
            files = [n for n in self.walk() if n.kind == "f"]
            sizes = [n.size for n in files if n.size is not None]
            times = [n.mtime for n in files if n.mtime is not None]
            self._sums = (sum(sizes) if sizes else (self.size if self.kind == "f" else None),
                          max(times) if times else self.mtime)  # fmt: skip
        return self._sums

    def total_size(self) -> int | None:
        """Bytes of the files under it (itself for a file); None when no size is known. (Asked of a finished
        listing: computed once.)"""
        return self._summed()[0]

    def last_write(self) -> float | None:
        """When it was last written: the newest mtime of the files under it (its own mtime for a file or an
        empty directory)."""
        return self._summed()[1]


@dataclass(eq=False)
class Checkpoint:
    """One checkpoint found on the volume and what its framework's layout says of it."""

    node: Node
    framework: str
    name: str
    step: int | None
    order: tuple[int, ...]  # what sorts checkpoints of one directory oldest to newest (step, epoch, counter)
    complete: bool | None  # None: the layout cannot tell from what was listed
    why: str
    holds: tuple[str, ...] = ()  # state parts seen (optimizer, scheduler, step, rng)
    lacks: tuple[str, ...] = ()  # state parts a complete checkpoint does not hold
    by_files: bool = False  # judged by its files alone (a layout with no commit signal)

    @property
    def path(self) -> str:
        return self.node.path

    @property
    def size(self) -> int | None:
        return self.node.total_size()

    @property
    def mtime(self) -> float | None:
        return self.node.last_write()


@dataclass(eq=False)
class SaveDir:
    """A directory holding a framework's checkpoints, judged by its layout."""

    node: Node
    framework: str
    layout: Layout
    checkpoints: list[Checkpoint]  # oldest to newest
    signal_seen: bool  # a commit signal of the layout (marker, pointer, whole file) is on the volume
    pointer: tuple[str, str] | None = None  # (file, what it names) when a pointer's content was read

    @property
    def newest(self) -> Checkpoint | None:
        return self.checkpoints[-1] if self.checkpoints else None

    def complete(self) -> list[Checkpoint]:
        return [c for c in self.checkpoints if c.complete]


@dataclass(frozen=True)
class Picked:
    """Which checkpoint a resume would pick, how it picks, and whether that could be told."""

    checkpoint: Checkpoint | None
    how: str  # one sentence: "HF Trainer picks checkpoint-N by its number (get_last_checkpoint)"
    known: bool  # False: the way it picks is not known (a program's own code that cannot be read)
    checks_complete: bool = False


# -- finding checkpoints ------------------------------------------------------------------------------------
@cache
def _rx(template: str) -> re.Pattern[str]:
    return re.compile(template_regex(template))


def _alternatives(spec: str) -> list[str]:
    return [t for t in spec.split("|") if t]


def _has(node: Node, spec: str) -> str | None:
    """The name of a child of `node` matching one of the `|`-separated templates of `spec` (a template may hold
    one `/`: a file in a sub-directory), or None."""
    for t in _alternatives(spec):
        if "/" in t:
            head, rest = t.split("/", 1)
            sub = node.children.get(head)
            if sub is not None and _has(sub, rest):
                return f"{head}/{rest}"
            continue
        if "{" not in t and "*" not in t:
            if t in node.children:
                return t
            continue
        rx = _rx(t)
        for name in node.children:
            if rx.match(name):
                return name
    return None


def _fields(name: str, layout: Layout) -> tuple[CheckpointName, dict[str, str]] | None:
    for cn in layout.names:
        if "/" in cn.template:
            continue
        got = cn.match(name)
        if got is not None:
            return cn, got
    return None


_DIGITS = re.compile(r"(\d+)")


def _generic(template: str) -> bool:
    """A template with no literal text of its own (`*`, `*{step}*`): it matches names the program makes up."""
    return not re.sub(r"\{[^}]*\}|\*", "", template)


def _order(fields: dict[str, str], name: str) -> tuple[int | None, tuple[int, ...]]:
    step = int(fields["step"]) if "step" in fields else None
    if step is None and "_template" in fields:
        nums = _DIGITS.findall(name)
        step = int(nums[-1]) if nums else None
    epoch = int(fields["epoch"]) if "epoch" in fields else -1
    n = int(fields["n"]) if "n" in fields else -1
    key = (step if step is not None else -1, epoch, n)
    return step, key


def find_save_dirs(root: Node, layout: Layout, framework: str, read: Read, depth: int = 3) -> list[SaveDir]:
    """Every directory within `depth` levels of `root` (itself included) that holds checkpoints of `layout`."""
    out: list[SaveDir] = []
    level = [(root, 0, "")]
    while level:
        nxt: list[tuple[Node, int, str]] = []
        for node, d, rel in level:
            if node.kind != "d":
                continue
            found = _candidates(node, layout, framework, read, rel)
            inside: set[int] = set()
            if found is not None and found.checkpoints:
                out.append(found)
                inside = {id(c.node) for c in found.checkpoints}  # a checkpoint's folders are no save directory
            if d < depth:
                nxt.extend((c, d + 1, f"{rel}/{c.name}".lstrip("/")) for c in node.children.values()
                           if c.kind == "d" and id(c) not in inside)  # fmt: skip
        level = nxt
    return out


def _candidates(sdir: Node, layout: Layout, framework: str, read: Read, rel: str) -> SaveDir | None:
    cps: list[Checkpoint] = []
    name_markers = [m for m in layout.markers if m.where == "name"]
    for child in sdir.children.values():
        base, marker = child.name, None
        for m in name_markers:
            got = _rx(m.name).match(child.name)
            if got is not None and got.groupdict().get("name"):
                base, marker = got.group("name"), m
                break
        ident = _fields(base, layout)
        if ident is None:
            continue
        cn, fields = ident
        if cn.kind == "dir" and child.kind not in ("d", "l"):
            continue
        if cn.kind == "file" and child.kind not in ("f", "l"):
            continue
        if _generic(cn.template):
            # a name the program chooses (DCP's `*`, a loop's `*{step}*`): read the step off the name's last
            # number, and when the layout says what a checkpoint holds, a directory is one only if it holds it
            fields = {**fields, "_template": cn.template}
            if layout.contains and (child.kind != "d" or _has(child, layout.contains) is None):
                continue
        step, key = _order(fields, base)
        cp = Checkpoint(child, framework, child.name, step, key, None, "")
        if marker is not None:
            cp.complete = False
            cp.why = f"named {child.name}: {marker.note or 'a save in progress'}"
        cps.append(cp)
    if not cps:
        return None
    cps.sort(key=lambda c: (c.order, c.complete is not False, c.node.last_write() or 0.0))
    sd = SaveDir(sdir, framework, layout, cps, False)
    _judge(sd, read, rel)
    return sd


# -- judging them -------------------------------------------------------------------------------------------
def _marker_rx(m: Marker, cname: str) -> re.Pattern[str]:
    return _rx(m.name.replace("{name}", cname)) if "{name}" in m.name else _rx(m.name)


def _present(node: Node, m: Marker, cname: str) -> str | None:
    rx = _marker_rx(m, cname)
    return next((n for n in node.children if rx.match(n)), None)


def _judge(sd: SaveDir, read: Read, rel: str) -> None:
    lay = sd.layout
    inside_inc = [m for m in lay.markers if m.where == "inside" and m.means == "incomplete"]
    beside_inc = [m for m in lay.markers if m.where == "beside" and m.means == "incomplete"]
    inside_ok = [m for m in lay.markers if m.where == "inside" and m.means == "complete"]
    # a marker only some saves write counts where a checkpoint of this directory has it
    inside_ok = [m for m in inside_ok if m.always or any(
        c.node.kind == "d" and _present(c.node, m, c.name) for c in sd.checkpoints)]  # fmt: skip
    pointed = _pointer(sd, read, rel)
    for c in sd.checkpoints:
        _parts(c, lay)
        if c.complete is False:  # named as a save in progress
            sd.signal_seen = True
            continue
        node = c.node
        hit = next(((m, f) for m in inside_inc if node.kind == "d" and (f := _present(node, m, c.name))), None)
        if hit is not None:
            c.complete, c.why = False, f"{hit[1]} is in it: {hit[0].note or 'the save marked itself unfinished'}"
            sd.signal_seen = True
            continue
        hit = next(((m, f) for m in beside_inc if (f := _present(sd.node, m, c.name))), None)
        if hit is not None:
            c.complete, c.why = False, f"{hit[1]} is beside it: {hit[0].note or 'the save marked itself unfinished'}"
            sd.signal_seen = True
            continue
        if lay.pointers and pointed is not None:
            _by_pointer(sd, c, pointed)
            sd.signal_seen = True
            if c.complete is not None:
                continue
        if inside_ok and node.kind == "d":
            found = next((f for m in inside_ok if (f := _present(node, m, c.name))), None)
            m0 = inside_ok[0]
            if found is not None:
                missing = _missing(node, lay)
                if "weights" in _missing_parts(missing, lay):
                    c.complete, c.why = False, f"{found} is there, but not {_names(missing)}"
                else:
                    c.complete, c.why = True, f"{found}, written last, is there" if m0.written_last else (
                        f"{found} is there")  # fmt: skip
                sd.signal_seen = True
            else:
                names = _names([m.name for m in inside_ok])
                c.complete, c.why = False, f"no {names}, which is written last: the save did not finish" if (
                    m0.written_last) else f"no {names}"  # fmt: skip
            continue
        if lay.atomic == "file" and node.kind in ("f", "l"):
            if node.kind == "f" and node.size == 0:
                c.complete, c.why = False, "an empty file"
            else:
                c.complete, c.why = True, "a file written whole (the framework writes it in one go)"
            sd.signal_seen = True
            continue
        if lay.pointers and c.complete is None:
            continue  # _by_pointer said why it cannot tell
        if lay.files and node.kind == "d":
            missing = _missing(node, lay)
            c.by_files = True
            if missing:
                c.complete, c.why = False, f"no {_names(missing)}: with no marker, complete means every file is there"
            else:
                c.complete, c.why = True, "every file of a save is there (no marker is written)"
            continue
        c.complete, c.why = None, "its layout has no sign of completeness that a listing shows"
    _weights_only_layout(sd)


def _names(items: list[str]) -> str:
    """File templates in a sentence: the first of each set of alternatives, a field shown as `*`."""
    shown = [re.sub(r"\{[^}]*\}", "*", i.split("|", 1)[0]) for i in items[:3]]
    more = f" (+{len(items) - 3} more)" if len(items) > 3 else ""
    return (", ".join(shown[:-1]) + " or " + shown[-1] if len(shown) > 1 else shown[0]) + more


def _missing(node: Node, lay: Layout) -> list[str]:
    return [spec for spec in lay.files if _has(node, spec) is None]


def _missing_parts(missing: list[str], lay: Layout) -> list[str]:
    """Which parts of a checkpoint the missing file templates are (`other` for a file that is no part)."""
    out = []
    for spec in missing:
        part = next((p for p, s in lay.parts.items() if set(_alternatives(s)) & set(_alternatives(spec))), "other")
        out.append(part)
    return out


def _parts(c: Checkpoint, lay: Layout) -> None:
    if not lay.parts or c.node.kind != "d":
        return
    c.holds = tuple(p for p, spec in lay.parts.items() if _has(c.node, spec) is not None)


def _weights_only_layout(sd: SaveDir) -> None:
    """A complete checkpoint without optimizer or scheduler state lacks them. In a layout without a marker, a
    checkpoint missing only state files is a complete weights-only save when no checkpoint of the directory holds
    them (the program saves weights only); when others do, it is a save that did not finish."""
    lay = sd.layout
    if not lay.parts:
        return
    wanted = [p for p in STATE_PARTS if p in lay.parts]
    anyone_has = {p for c in sd.checkpoints for p in c.holds}
    for c in sd.checkpoints:
        if c.node.kind != "d":
            continue
        lacks = tuple(p for p in wanted if p not in c.holds)
        if c.complete:
            c.lacks = lacks
        elif c.complete is False and lacks and c.by_files:
            missing = _missing(c.node, lay)
            if set(_missing_parts(missing, lay)) <= set(SKIPPABLE) and not (set(lacks) & anyone_has):
                c.complete, c.lacks = True, lacks
                c.why = f"every file but {_names(missing)}, which no checkpoint here holds: a weights-only save"


def _pointer(sd: SaveDir, read: Read, rel: str) -> tuple[str, str, str] | None:
    """(pointer file, what it holds, its content) for the first pointer of the layout in the directory."""
    for p in sd.layout.pointers:
        if p.file not in sd.node.children:
            continue
        text = read(f"{rel}/{p.file}".lstrip("/"))
        if text is None:
            return (p.file, p.holds, "")
        value = text.strip().splitlines()[0].strip() if text.strip() else ""
        sd.pointer = (p.file, value)
        return (p.file, p.holds, value)
    return None


def _by_pointer(sd: SaveDir, c: Checkpoint, pointed: tuple[str, str, str]) -> None:
    file, holds, value = pointed
    if not value:
        # the pointer's content was not kept: only its time can be compared
        pnode = sd.node.children[file]
        last = c.node.last_write()
        if pnode.mtime is not None and last is not None and last > pnode.mtime:
            c.complete, c.why = None, f"written after {file} was last written, and {file}'s content was not kept"
        else:
            c.complete, c.why = None, f"{file}'s content was not kept, so what it names is unknown"
        return
    target_step: int | None = None
    if holds == "step":
        target_step = int(value) if value.isdigit() else None
        if target_step is None:
            c.complete, c.why = None, f"{file} says {value!r}, not a step"
            return
        is_target = c.step == target_step
    else:
        is_target = c.name == value
        tgt = next((x for x in sd.checkpoints if x.name == value), None)
        target_step = tgt.step if tgt is not None else None
        if tgt is None:
            m = _DIGITS.findall(value)
            target_step = int(m[-1]) if m else None
    if is_target:
        c.complete, c.why = True, f"{file} names it ({value}); it is written after every rank's files"
    elif c.step is not None and target_step is not None and c.step > target_step:
        c.complete, c.why = False, (f"newer than {value}, which {file} names: {file} is written after every "
                                    "rank's files, so this save did not finish")  # fmt: skip
    elif c.step is not None and target_step is not None:
        c.complete, c.why = True, f"older than {value}, which {file} names"
    else:
        c.complete, c.why = None, f"{file} names {value}; how this one compares is unknown"


# -- which one a resume picks -------------------------------------------------------------------------------
@dataclass(frozen=True)
class PickRule:
    """How a resume chooses among a directory's checkpoints (from the framework's `Pick`, or the program's own
    code): `highest-step`, `pointer`, `named`, `lexical`, `mtime`; `checks_complete` when it skips an incomplete
    one, `requires` when it keeps only checkpoints holding that file."""

    how: str
    checks_complete: bool
    description: str
    name: str = ""
    requires: str = ""
    known: bool = True

    @classmethod
    def of(cls, pick: Pick) -> PickRule:
        return cls(pick.how, pick.checks_complete, pick.description, pick.name, known=pick.how != "program")


def pick(sd: SaveDir, rule: PickRule) -> Picked:
    cps = sd.checkpoints
    if not rule.known:
        return Picked(None, rule.description, False)
    pool = cps
    if rule.requires:
        pool = [c for c in cps if c.node.kind == "d" and _has(c.node, rule.requires) is not None]
    if rule.checks_complete:
        pool = [c for c in pool if c.complete is not False]
    if rule.how in ("highest-step", "program"):
        pool = [c for c in pool if c.order[0] >= 0 or c.order[2] >= 0]
        got = max(pool, key=lambda c: c.order, default=None)
    elif rule.how == "lexical":
        got = max(pool, key=lambda c: c.name, default=None)
    elif rule.how == "mtime":
        got = max(pool, key=lambda c: c.node.last_write() or 0.0, default=None)
    elif rule.how == "named":
        got = next((c for c in pool if c.name == rule.name), None)
    elif rule.how == "pointer":
        if sd.pointer is None:
            return Picked(None, rule.description + " (its pointer's content was not kept)", False)
        value = sd.pointer[1]
        got = next((c for c in pool if c.name == value or (value.isdigit() and c.step == int(value))), None)
    else:
        return Picked(None, rule.description, False)
    return Picked(got, rule.description, True, rule.checks_complete or bool(rule.requires))
