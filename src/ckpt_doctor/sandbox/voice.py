"""What a simulated trainer prints, and what its saves leave on the volume.

The simulated kubelet (sandbox/controller.py) decides what happens to a trainer: where it resumes from, how far
it gets, when it saves, when SIGTERM or SIGKILL reach it. A voice turns that into a log and a checkpoint tree:

- `RecordingVoice` replays a recording of a real run (sandbox/recordings.py): each line is one the framework
  printed, cut into segments (lines, and the `\\r` updates of a progress bar) and typed by the engine's own log
  reader (facts/logs.py); a segment that carries this step's progress or save is printed with the step this
  simulated attempt really reached, the recording's checkpoint directory replaced by the job's. What a save
  leaves on the volume is the recording's listing of one complete checkpoint, its last-written file the marker
  of completeness.
- `GuideVoice` speaks the checkpointing guide's `[checkpoint]` convention (the trainer script of the guide, with
  an HF tqdm bar); the sandbox falls back to it for a scenario whose recording this installation does not have,
  and says so.
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from ckpt_doctor.facts.logs import LogSummary
    from ckpt_doctor.sandbox.recordings import Attempt, Recording

Files = list[tuple[str, int, bytes | None]]  # (path relative to the checkpoint, bytes, content when it matters)
SEGMENT = re.compile(rb"[^\r\n]*(?:\r\n|\n|\r|$)")
STEP_KINDS = ("progress", "saved", "save_started", "sigterm_flush", "resumed")
END_KINDS = ("sigterm", "sigterm_flush", "finished", "error")


class Voice(Protocol):
    name: str  # what speaks: "recording hf-4.57-..." or "the guide's [checkpoint] convention"
    save_every: int  # steps between two saves
    marker: str  # the file a save writes last: a checkpoint without it is incomplete

    def opening(self, resumed: int | None, path: str | None, total: int, ckpt_dir: str | None) -> str: ...

    def steps(self, first: int, last: int, total: int, saves: Sequence[int], ckpt_dir: str | None) -> str: ...

    def on_sigterm(self, step: int, total: int, ckpt_dir: str | None, final: int | None) -> str: ...

    def checkpoint_name(self, step: int) -> str: ...

    def checkpoint_files(self, step: int) -> Files: ...


# -- the guide's convention ------------------------------------------------------------------------------------


def tqdm(step: int, total: int, rate: float = 1.84) -> str:
    pct = int(step * 100 / total)
    bar = ("█" * (pct // 10)).ljust(10)
    return f"\r{pct:3d}%|{bar}| {step}/{total} [00:{step % 60:02d}<07:40, {rate:.2f}it/s]"


@dataclass
class GuideVoice:
    """The guide's `[checkpoint]` lines around an HF Trainer run; an HF checkpoint layout on the volume."""

    save_every: int = 50
    print_saves: bool = True  # False: the save line is lost (HF's progress bar overwrites it)
    name: str = "the guide's [checkpoint] convention"
    marker: str = "trainer_state.json"

    def opening(self, resumed: int | None, path: str | None, total: int, ckpt_dir: str | None) -> str:
        lines = ["Loading checkpoint shards: 100%|██████████| 2/2 [00:03<00:00,  1.52s/it]"]
        if resumed is not None:
            lines.append(f"[checkpoint] resuming from {path}")
        else:
            lines.append("[checkpoint] no prior checkpoint, starting fresh")
        lines += ["***** Running training *****", "  Num examples = 32,000", f"  Total optimization steps = {total}"]
        return "".join(line + "\n" for line in lines)

    def steps(self, first: int, last: int, total: int, saves: Sequence[int], ckpt_dir: str | None) -> str:
        out = []
        due = set(saves)
        for step in range(first, last + 1):
            if step % 10 == 0:
                out.append(tqdm(step, total))
            if step in due and self.print_saves:
                out.append(f"\n[checkpoint] saved {ckpt_dir}/{self.checkpoint_name(step)}\n")
        return "".join(out)

    def on_sigterm(self, step: int, total: int, ckpt_dir: str | None, final: int | None) -> str:
        text = "\n[checkpoint] SIGTERM: flushing at next step\n"
        if final is not None:
            text += f"[checkpoint] final save {ckpt_dir}/{self.checkpoint_name(final)}\n"
        return text

    def checkpoint_name(self, step: int) -> str:
        return f"checkpoint-{step}"

    def checkpoint_files(self, step: int) -> Files:
        """HF Trainer's files in the order `_save_checkpoint` writes them, `trainer_state.json` last
        (knowledge: platform-signals-and-layouts.md); sizes are nominal, for a small model."""
        state = json.dumps({"global_step": step, "max_steps": 0, "save_steps": self.save_every,
                            "log_history": []}, indent=2).encode()
        return [("config.json", 663, None), ("model.safetensors", 988_097_824, None),
                ("optimizer.pt", 1_976_253_050, None), ("scheduler.pt", 1_064, None),
                ("rng_state.pth", 14_244, None), ("training_args.bin", 5_368, None),
                ("trainer_state.json", len(state), state)]


# -- a recording ------------------------------------------------------------------------------------------------


@dataclass
class Segment:
    raw: bytes  # with its terminator
    kinds: dict[str, int | None] = field(default_factory=dict)  # event kind -> its step (or None)
    total: int | None = None  # a progress bar's total, or the total steps this line announces

    def step_of(self, *kinds: str) -> int | None:
        return next((self.kinds[k] for k in kinds if self.kinds.get(k) is not None), None)


def _summary(raw: bytes) -> LogSummary:
    from ckpt_doctor.facts.logs import load_signatures, scan_log
    from ckpt_doctor.snapshot import LogRef

    return scan_log(LogRef("recording", "node", False, head=raw, size=len(raw)), load_signatures())


def segments(log: bytes) -> list[Segment]:
    """A log cut into lines and progress-bar updates, each typed by the engine's log reader."""
    out = []
    for m in SEGMENT.finditer(log):
        raw = m.group(0)
        if not raw:
            continue
        seg = Segment(raw)
        if raw.strip():
            summary = _summary(raw)
            seg.total = summary.total_steps
            for ev in summary.events:
                if ev.kind == "progress" and ev.bar != "train":
                    continue  # a loading bar, an evaluation bar: not the training steps
                seg.kinds.setdefault(ev.kind, ev.step)
                if ev.kind == "progress" and ev.total:
                    seg.total = ev.total
        out.append(seg)
    return out


@dataclass
class Template:
    """One recorded attempt, cut into its opening, a block of segments per step, and its tail."""

    opening: list[Segment]
    blocks: dict[int, list[Segment]]  # step -> its progress segment and what follows until the next step
    tail: list[Segment]  # from the first line of the end (SIGTERM, finished, an error) on
    total: int | None

    @classmethod
    def of(cls, attempt: Attempt) -> Template:
        segs = segments(attempt.log)
        starts = [i for i, s in enumerate(segs) if s.step_of("progress") is not None]
        first = starts[0] if starts else next((i for i, s in enumerate(segs) if "saved" in s.kinds), len(segs))
        end = next((i for i, s in enumerate(segs) if i >= first and any(k in s.kinds for k in END_KINDS)), len(segs))
        blocks: dict[int, list[Segment]] = {}
        for j, i in enumerate(starts):
            if i >= end:
                break
            stop = min(starts[j + 1] if j + 1 < len(starts) else end, end)
            step = segs[i].step_of("progress")
            assert step is not None
            blocks.setdefault(step, segs[i:stop])
        total = next((s.total for s in segs if s.total), None)
        return cls(segs[:first], blocks, segs[end:], total)


def _swap(raw: bytes, old: int, new: int) -> bytes:
    """`old` as a whole number (not part of a word, another number, a time `00:10` or a decimal `0.20`) replaced
    by `new`; a number that ends a sentence (`checkpoint-20.`) is one."""
    pattern = rb"(?<!\w)(?<!\d[.:])" + str(old).encode() + rb"(?!\w)(?![.:]\d)"
    return re.sub(pattern, str(new).encode(), raw)


class RecordingVoice:
    """A recorded run's own lines, replayed at the steps the simulated attempt reaches."""

    def __init__(self, rec: Recording) -> None:
        self.rec = rec
        self.name = f"recording {rec.id}"
        fresh, resumed, term = rec.fresh(), rec.resumed(), rec.terminated()
        base = fresh or resumed or rec.attempts[0]
        self.fresh = Template.of(fresh) if fresh is not None else None
        self.resumed = Template.of(resumed) if resumed is not None else None
        self.resumed_attempt = resumed
        self.term = Template.of(term) if term is not None else None
        self.term_attempt = term
        self.body = self.fresh or self.resumed or Template.of(base)
        self._ckpt_prefix: str | None = None
        saves = sorted({s for a in rec.attempts for s in a.saves_complete})
        gaps = [b - a for a, b in itertools.pairwise(saves) if b > a]
        self.save_every = min(gaps) if gaps else (saves[0] if saves else 0) or 10
        self.anchor = next((s for s in saves if all(s + i in self.body.blocks for i in range(self.save_every))),
                           min(self.body.blocks, default=0))
        self.layout, self.marker, self.layout_step = self._layout(saves)

    # -- the checkpoint on the volume -------------------------------------------------------------------------
    def _layout(self, saves: list[int]) -> tuple[Files, str, int | None]:
        """The files of one complete checkpoint as a listing shows them, in the order they were written."""
        from ckpt_doctor.sandbox.volume import CKPT

        root = self.rec.checkpoint_dir.rstrip("/")
        for a in reversed(self.rec.attempts):
            for step in reversed(a.saves_complete):
                prefix = None
                for item in a.listing:
                    parts = item.path[len(root):].strip("/").split("/") if item.path.startswith(root) else []
                    if parts and (m := CKPT.match(parts[0])) and int(m.group(1)) == step:
                        prefix = f"{root}/{parts[0]}/"
                        break
                if prefix is None:
                    continue
                items = sorted((i for i in a.listing if i.kind == "f" and i.path.startswith(prefix)),
                               key=lambda i: (i.mtime, i.path))
                if not items:
                    continue
                files: Files = []
                for i in items:
                    rel = i.path[len(prefix):]
                    content = a.files.get(prefix[len(root) + 1:] + rel) or a.files.get(rel)
                    files.append((rel, i.size, content))
                self._ckpt_prefix = prefix[len(root) + 1:].rstrip("/")
                return files, files[-1][0], step
        return [], "", None

    def checkpoint_name(self, step: int) -> str:
        if self.layout_step is not None and self._ckpt_prefix:
            return _swap(self._ckpt_prefix.encode(), self.layout_step, step).decode()
        return f"checkpoint-{step}"

    def checkpoint_files(self, step: int) -> Files:
        if self.layout_step is None:
            return []
        return [(rel, size, _swap(content, self.layout_step, step) if content is not None else None)
                for rel, size, content in self.layout]

    # -- the log ------------------------------------------------------------------------------------------------
    def _render(self, seg: Segment, old: int | None, new: int | None, total: int | None, tmpl_total: int | None,
                ckpt_dir: str | None) -> bytes:
        raw = seg.raw
        if self.rec.checkpoint_dir and ckpt_dir:
            raw = raw.replace(self.rec.checkpoint_dir.rstrip("/").encode(), ckpt_dir.rstrip("/").encode())
        if old is not None and new is not None and old != new and any(k in seg.kinds for k in STEP_KINDS):
            raw = _swap(raw, old, new)
        if tmpl_total and total and tmpl_total != total:
            if "progress" in seg.kinds:  # "10/33 [" -> "10/T [", and the bar's percentage
                raw = re.sub(rb"(?<=/)" + str(tmpl_total).encode() + rb"(?![\w.])", str(total).encode(), raw)
                if new is not None:
                    pct = f"{min(100, int(new * 100 / total)):3d}%".encode()
                    raw = re.sub(rb"(?<!\d)\d{1,3}%", pct, raw, count=1)
            elif seg.total:  # "Total optimization steps = 33"
                raw = _swap(raw, tmpl_total, total)
        return raw

    def opening(self, resumed: int | None, path: str | None, total: int, ckpt_dir: str | None) -> str:
        tmpl = self.resumed if resumed is not None and self.resumed is not None else self.fresh or self.body
        old_step = self.resumed_attempt.resumed_from if tmpl is self.resumed and self.resumed_attempt else None
        out = []
        for seg in tmpl.opening:
            raw = self._render(seg, old_step, resumed, total, tmpl.total, ckpt_dir)
            if "resumed" in seg.kinds and path and self.resumed_attempt and self.resumed_attempt.resume_path:
                old_path = self.resumed_attempt.resume_path
                if self.rec.checkpoint_dir and ckpt_dir:
                    old_path = old_path.replace(self.rec.checkpoint_dir.rstrip("/"), ckpt_dir.rstrip("/"))
                raw = raw.replace(_swap(old_path.encode(), old_step or 0, resumed or 0), path.encode())
            out.append(raw)
        return b"".join(out).decode("utf-8", "replace")

    def steps(self, first: int, last: int, total: int, saves: Sequence[int], ckpt_dir: str | None) -> str:
        blocks = self.body.blocks
        if not blocks:
            return ""
        out = []
        period = self.save_every or len(blocks)
        for t in range(first, last + 1):
            k = self.anchor + (t - self.anchor) % period
            for seg in blocks.get(k, ()):
                out.append(self._render(seg, k, t, total, self.body.total, ckpt_dir))
        return b"".join(out).decode("utf-8", "replace")

    def on_sigterm(self, step: int, total: int, ckpt_dir: str | None, final: int | None) -> str:
        if self.term is None:
            return ""
        last = self.term_attempt.last_step if self.term_attempt is not None else None
        last = last if last is not None else max(self.term.blocks, default=None)
        out = [self._render(seg, last, final if final is not None else step, total, self.term.total, ckpt_dir)
               for seg in self.term.tail]
        return b"".join(out).decode("utf-8", "replace")
