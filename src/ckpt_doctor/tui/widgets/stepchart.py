"""The training step over time, per attempt: a rewind to step 0 or to an older save shows as a drop.

Inside an attempt the step is drawn linearly from where it started (step 0, or the step it resumed
from) to the last step its log shows, over the attempt's start and end times; saves (◆),
resumes (▲), fresh starts (○) and interruptions (✕) are marked under the bars.
"""

from __future__ import annotations

from textual.content import Content
from textual.widget import Widget

from ckpt_doctor.tui.model import AttemptView, clock

PALETTE = ("$primary", "$accent", "$success", "$primary-lighten-3", "$foreground")
SAVE = "$primary-lighten-2"
REDO = "$text-error"
GAP_SHARE = 0.04  # an idle gap between attempts (suspended, pending) is drawn at most this wide
EIGHTHS = " ▁▂▃▄▅▆▇█"


def attempt_color(index: int) -> str:
    return PALETTE[index % len(PALETTE)]


def _span(a: AttemptView) -> tuple[int, int] | None:
    """(first step, last step) of an attempt, or None when its log says nothing about steps."""
    last = a.last_step if a.last_step is not None else (max(a.saves) if a.saves else None)
    first = a.start_step if a.start_step is not None else (min(a.saves) if a.saves else last)
    if first is None or last is None:
        return None
    return first, max(first, last)


class StepChart(Widget):
    DEFAULT_CSS = """
    StepChart { height: 12; min-height: 7; }
    """

    def __init__(self, attempts: list[AttemptView] | None = None, id: str | None = None) -> None:
        super().__init__(id=id)
        self.attempts: list[AttemptView] = attempts or []

    def set_attempts(self, attempts: list[AttemptView]) -> None:
        self.attempts = attempts
        self.refresh()

    def _times(self) -> tuple[list[tuple[float, float]], list[float]]:
        """(start, end) of each attempt on one axis, and where long idle gaps were shortened.

        Long gaps between attempts (a suspended job, a pod pending for an hour) are shortened to a
        few columns so the attempts themselves keep the width; without timestamps every attempt
        gets an equal slot."""
        if not all(a.t0 is not None and a.t1 is not None for a in self.attempts):
            return [(float(i), float(i + 1)) for i in range(len(self.attempts))], []
        real = [(float(a.t0), float(max(a.t1, a.t0 + 1))) for a in self.attempts]  # type: ignore[arg-type]
        cap = GAP_SHARE * sum(t1 - t0 for t0, t1 in real)
        out: list[tuple[float, float]] = []
        cuts: list[float] = []
        shift = 0.0
        end = real[0][0]
        for t0, t1 in real:
            gap = t0 - end
            if gap > cap > 0:
                shift += gap - cap
                cuts.append(t0 - shift - cap / 2)
            out.append((t0 - shift, t1 - shift))
            end = max(end, t1)
        return out, cuts

    def render(self) -> Content:
        width, height = self.size.width, self.size.height
        if not self.attempts:
            return Content.from_markup("[$foreground-muted]No attempts: the TrainJob has no trainer pods yet.")
        spans = [_span(a) for a in self.attempts]
        ymax = max([s[1] for s in spans if s] + [max(a.saves) for a in self.attempts if a.saves] + [1])
        label_w = len(str(ymax)) + 1
        cols = max(8, width - label_w - 1)
        rows = max(2, height - 3)
        times, cuts = self._times()
        tmin = min(t0 for t0, _ in times)
        tmax = max(t1 for _, t1 in times)
        scale = (tmax - tmin) or 1.0

        def col_of(t: float) -> int:
            return max(0, min(cols - 1, int((t - tmin) / scale * cols)))

        # the furthest step any earlier attempt reached: below it, an attempt is redoing work
        reached: list[int | None] = []
        best: int | None = None
        for sp in spans:
            reached.append(best)
            if sp is not None:
                best = max(best or 0, sp[1])
        # one bar per column: (attempt index, height in eighths of a row, rows of redone work above it)
        bars: list[tuple[int, int, int] | None] = [None] * cols
        for c in range(cols):
            t = tmin + (c + 0.5) / cols * scale
            for i, (t0, t1) in enumerate(times):
                if t0 <= t < t1 and spans[i] is not None:
                    s0, s1 = spans[i]  # type: ignore[misc]
                    v = s0 + (s1 - s0) * (t - t0) / ((t1 - t0) or 1.0)
                    redo = reached[i]
                    bars[c] = (
                        self.attempts[i].index,  # the attempt's number, as the legend colours it
                        max(1, round(v / ymax * rows * 8)),
                        round(redo / ymax * rows) if redo is not None and redo > v else 0,
                    )
        marks: list[tuple[str, str] | None] = [None] * cols

        rank = {"◆": 0, "○": 1, "▲": 1, "✕": 2}

        def mark(c: int, ch: str, style: str) -> None:
            cur = marks[c]
            if cur is None or rank[ch] >= rank[cur[0]]:
                marks[c] = (ch, style)

        for i, a in enumerate(self.attempts):
            t0, t1 = times[i]
            sp = spans[i]
            for s in a.saves:
                if sp is not None and sp[1] > sp[0]:
                    frac = (s - sp[0]) / (sp[1] - sp[0])
                    if 0 <= frac <= 1:
                        mark(col_of(t0 + frac * (t1 - t0)), "◆", SAVE)
            mark(
                col_of(t0),
                "▲" if a.start_kind == "resumed" else "○",
                "$text-success" if a.start_kind == "resumed" else "$text-warning",
            )
            if a.interrupted:
                mark(col_of(t1 - 1e-6 * scale), "✕", "$text-error")
        lines: list[Content] = []
        for r in range(rows):
            level = rows - r  # 1-based from the bottom
            label = str(ymax) if r == 0 else ("0" if r == rows - 1 else ("" if r != rows // 2 else str(ymax // 2)))
            parts: list[str | tuple[str, str]] = [
                (f"{label:>{label_w - 1}}┤" if label else " " * (label_w - 1) + "│", "$foreground-muted")
            ]
            for c in range(cols):
                bar = bars[c]
                if bar is None:
                    parts.append(" ")
                    continue
                index, eighths, redo = bar
                full = eighths // 8
                if level <= full or (level == full + 1 and eighths % 8):
                    parts.append(("█" if level <= full else EIGHTHS[eighths % 8], attempt_color(index)))
                elif level <= redo:
                    parts.append(("░", REDO))
                else:
                    parts.append(" ")
            lines.append(Content.assemble(*parts))
        lane: list[str | tuple[str, str]] = [" " * label_w]
        for m in marks:
            lane.append(m if m else " ")
        lines.append(Content.assemble(*lane))
        axis = [" "] * cols
        for t in cuts:
            axis[col_of(t)] = "⋯"
        for i, (t0, _) in enumerate(times):
            a = self.attempts[i]
            text = clock(a.started)[-8:-3] if a.t0 is not None else f"a{a.index}"
            c = col_of(t0)
            if all(ch == " " for ch in axis[c : c + len(text) + 1]) and c + len(text) <= cols:
                axis[c : c + len(text)] = list(text)
        lines.append(Content.assemble((" " * label_w + "".join(axis), "$foreground-muted")))
        legend: list[str | tuple[str, str]] = []
        for a in self.attempts:
            sp = _span(a)
            rng = f"{sp[0]}→{sp[1]}" if sp else "steps unknown"
            legend += [("■", attempt_color(a.index)), f" a{a.index} {a.how} {rng}", "  "]
        legend += [
            ("░", REDO),
            " redone ",
            ("◆", SAVE),
            " save ",
            ("▲", "$text-success"),
            " resume ",
            ("○", "$text-warning"),
            " fresh ",
            ("✕", "$text-error"),
            " interrupted",
        ]
        lines.append(Content.assemble(*legend).truncate(width, ellipsis=True))
        return Content("\n").join(lines)
