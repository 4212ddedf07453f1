"""The training step over wall time, per attempt, honestly scaled: a rewind shows as a cliff, labelled.

The x-axis is time. Each column is the largest step any attempt reached in that column's span of time
(an attempt's steps are drawn between the (time, step) points of the timeline fact, interpolated where
its log has no timestamps); the y-axis starts at 0. Idle gaps between attempts (a suspended job, a pod
pending for an hour) longer than a small share of the chart are shortened and marked `⋯` on the time
axis. Where an attempt began below the step the attempt before it reached, the drop is drawn as a red
cliff `│` with its label (`↓ 1020 → 950, 70 steps lost`), and the labels are listed under the axis too.
Attempts known only by inference (their pods are gone) are marked `?`: nothing is drawn for steps no
one can know. Marks under the bars: saves ◆, resume ▲, fresh start ○, interrupted ✕, inferred ?.
Without any time at all, each attempt gets an equal slot (and the axis says so).
"""

from __future__ import annotations

from itertools import pairwise

from textual.content import Content
from textual.widget import Widget

from ckpt_doctor.tui.model import AttemptView, clock

PALETTE = ("$primary", "$accent", "$success", "$primary-lighten-3", "$foreground")
SAVE = "$primary-lighten-2"
REDO = "$text-error"
MUTED = "$foreground-muted"
GAP_SHARE = 0.04  # an idle gap between attempts (suspended, pending) is drawn at most this wide
EIGHTHS = " ▁▂▃▄▅▆▇█"

Cell = tuple[str, str] | str


def attempt_color(index: int) -> str:
    return PALETTE[index % len(PALETTE)]


def _name(a: AttemptView) -> str:
    return a.label or f"a{a.index}"


def _series(a: AttemptView) -> list[tuple[float, int]]:
    """The attempt's (time, step) points that have a time; from its start/last step when it has no points."""
    pts = [(t, s) for t, s, _k, _e in a.points if t is not None]
    if pts:
        return sorted(pts, key=lambda p: (p[1], p[0]))
    last = a.last_step if a.last_step is not None else (max(a.saves) if a.saves else None)
    first = a.start_step if a.start_step is not None else (min(a.saves) if a.saves else last)
    if first is None or last is None or a.t0 is None:
        return []
    t1 = a.t1 if a.t1 is not None and a.t1 > a.t0 else a.t0 + 1
    return [(a.t0, first), (t1, max(first, last))]


class StepChart(Widget):
    DEFAULT_CSS = """
    StepChart { height: 13; min-height: 8; }
    """

    def __init__(self, attempts: list[AttemptView] | None = None, id: str | None = None) -> None:
        super().__init__(id=id)
        self.attempts: list[AttemptView] = attempts or []

    def set_attempts(self, attempts: list[AttemptView]) -> None:
        self.attempts = attempts
        self.refresh()

    # -- the time axis -----------------------------------------------------------------------------------
    def _layout(self) -> tuple[list[list[tuple[float, int]]], list[float], bool, dict[int, tuple[float, float]]]:
        """Each attempt's points on the drawn axis (gaps shortened), where gaps were cut, whether the axis is
        real time (False: one slot per attempt, no times known), and the spans of attempts that have no step
        to draw (pending: from its pod's creation to now; lost: a short reserved span before the next one)."""
        real = [_series(a) for a in self.attempts]
        if not any(real):
            slots: list[list[tuple[float, int]]] = []
            k = 0
            for a in self.attempts:
                last = a.last_step if a.last_step is not None else (max(a.saves) if a.saves else None)
                first = a.start_step if a.start_step is not None else last
                if first is None or last is None:
                    slots.append([])
                    continue
                slots.append([(float(k), first), (k + 0.999, max(first, last))])
                k += 1
            return slots, [], False, {}
        spans: list[tuple[float, float, int]] = []
        for i, (a, p) in enumerate(zip(self.attempts, real, strict=True)):
            if p:
                spans.append((min(t for t, _ in p), max(t for t, _ in p), i))
            elif a.t0 is not None and a.t1 is not None and a.t1 > a.t0:
                spans.append((a.t0, a.t1, i))  # a pending attempt: the time it waits is shown
        spans.sort()
        active = sum(max(t1 - t0, 1.0) for t0, t1, _ in spans)
        cap = GAP_SHARE * active
        shift: dict[int, float] = {}
        cuts: list[float] = []
        moved = 0.0
        end = spans[0][0]
        for t0, t1, i in spans:
            gap = t0 - end
            if gap > cap > 0:
                moved += gap - cap
                cuts.append(t0 - moved - cap / 2)
            shift[i] = moved
            end = max(end, t1)
        out = [[(t - shift.get(i, 0.0), s) for t, s in p] for i, p in enumerate(real)]
        empty: dict[int, tuple[float, float]] = {}
        for t0, t1, i in spans:
            if not real[i]:
                empty[i] = (t0 - shift[i], t1 - shift[i])
        # attempts with no time at all (pods gone): a short span just before the next attempt that has one
        placed = {i: (t0 - shift[i]) for t0, _t1, i in spans}
        for j in range(len(self.attempts)):
            if j in placed:
                continue
            nxt = next((placed[k] for k in range(j + 1, len(self.attempts)) if k in placed), None)
            base = nxt if nxt is not None else max(t for t, _ in (q for p in out for q in p))
            lost_before = [
                k
                for k in range(j, len(self.attempts))
                if k not in placed
                and (nxt is None or k < next(kk for kk in range(j + 1, len(self.attempts)) if kk in placed))
            ]
            width = max(cap, active * 0.02) / max(1, len(lost_before))
            empty[j] = (base - width * len(lost_before), base - width * (len(lost_before) - 1))
        return out, cuts, True, empty

    # -- drawing -----------------------------------------------------------------------------------------
    def render(self) -> Content:
        width, height = self.size.width, self.size.height
        if not self.attempts:
            return Content.from_markup("[$foreground-muted]No attempts: the TrainJob has no trainer pods yet.")
        series, cuts, timed, empty = self._layout()
        steps = [s for p in series for _t, s in p] + [a.last_step for a in self.attempts if a.last_step is not None]
        if not steps:
            return self._no_steps(width)
        ymax = max(max(steps), 1)
        label_w = len(str(ymax)) + 1
        cols = max(8, width - label_w - 1)
        has_drops = any(a.drop for a in self.attempts)
        rows = max(2, height - (4 if has_drops else 3))
        xs = [t for p in series for t, _ in p] + [t for span in empty.values() for t in span]
        xmin, xmax = min(xs), max(xs)
        scale = (xmax - xmin) or 1.0

        def col_of(t: float) -> int:
            return max(0, min(cols - 1, int((t - xmin) / scale * cols)))

        def level(step: float) -> float:
            return step / ymax * rows  # in rows, from the bottom

        # each column: the largest step reached in its span, and by which attempt
        bars: list[tuple[int, float] | None] = [None] * cols
        for c in range(cols):
            c0, c1 = xmin + c / cols * scale, xmin + (c + 1) / cols * scale
            for i, p in enumerate(series):
                if not p or p[-1][0] < c0 or (p[0][0] >= c1 and c != col_of(p[0][0])):
                    continue
                v = _value_at(p, min(c1, p[-1][0]))
                if v is not None and (bars[c] is None or v > bars[c][1]):  # type: ignore[index]
                    bars[c] = (self.attempts[i].index, v)
        grid: list[list[Cell]] = [[" "] * cols for _ in range(rows)]
        for c, bar in enumerate(bars):
            if bar is None:
                continue
            index, v = bar
            eighths = max(1, round(level(v) * 8))
            full, part = divmod(eighths, 8)
            for lv in range(1, rows + 1):
                r = rows - lv
                if lv <= full:
                    grid[r][c] = ("█", attempt_color(index))
                elif lv == full + 1 and part:
                    grid[r][c] = (EIGHTHS[part], attempt_color(index))
        for j, (e0, e1) in empty.items():
            a = self.attempts[j]
            ch, style = ("┄", "$text-warning") if a.start_kind == "pending" else ("?", MUTED)
            for c in range(col_of(e0), col_of(e1) + 1):
                if grid[rows - 1][c] == " ":
                    grid[rows - 1][c] = (ch, style)
        # the cliffs: where an attempt began below the step the attempt before reached
        drops: list[str] = []
        for j, a in enumerate(self.attempts):
            if not a.drop:
                continue
            drops.append(f"{_name(a)}: {a.drop}")
            prev = next((k for k in range(j - 1, -1, -1) if series[k]), None)
            if not series[j]:
                continue
            cj = col_of(series[j][0][0])
            top = series[prev][-1][1] if prev is not None else None
            bottom = a.start_step if a.start_step is not None else series[j][0][1]
            if prev is None or top is None or top <= bottom:
                if a.start_step is not None and prev is None and a.drop.startswith("↓ ?"):
                    self._label(grid, rows - 1, cj + 1, "↓ ? (pods gone)", rows)
                continue
            ci = col_of(series[prev][-1][0])
            cc = cj - 1 if cj - 1 > ci else cj
            lo, hi = level(bottom), level(top)
            for lv in range(1, rows + 1):
                r = rows - lv
                if lo < lv - 0.5 <= hi or (lv == max(1, round(hi)) and hi - lo < 1):
                    grid[r][cc] = ("│", REDO) if grid[r][cc] == " " or cc != cj else grid[r][cc]
            r_top = rows - max(1, min(rows, round(hi)))
            short = a.drop.split(",")[0] + (f" −{a.lost}" if a.lost else "")
            self._label(grid, max(0, r_top - 1) if r_top > 0 else r_top, cc + 1, short, rows)
        lines: list[Content] = []
        for r in range(rows):
            lv = rows - r
            if r == 0:
                label = str(ymax)
            elif r == rows - 1:
                label = "0"
            elif r == rows // 2:
                label = str(round(ymax * (lv - 0.5) / rows))
            else:
                label = ""
            axis = f"{label:>{label_w - 1}}┤" if label else " " * (label_w - 1) + "│"
            lines.append(Content.assemble((axis, MUTED), *grid[r]))
        lines.append(Content.assemble(" " * label_w, *self._marks(series, empty, col_of, cols)))
        axis = self._axis(series, empty, cuts, col_of, cols, timed)
        lines.append(Content.assemble((" " * label_w + axis, MUTED)))
        if drops:
            lines.append(Content.assemble(("  ".join(drops), REDO)).truncate(width, ellipsis=True))
        lines.append(self._legend(series).truncate(width, ellipsis=True))
        return Content("\n").join(lines)

    def _label(self, grid: list[list[Cell]], r: int, c: int, text: str, rows: int) -> None:
        """Write `text` into the plot from column `c` on row `r`, over blank cells only."""
        cols = len(grid[0]) if grid else 0
        if not (0 <= r < rows) or c + len(text) > cols:
            c = max(0, cols - len(text))
        if any(grid[r][x] != " " for x in range(c, min(cols, c + len(text)))):
            return  # no room: the line under the axis says it anyway
        for k, ch in enumerate(text[: cols - c]):
            grid[r][c + k] = (ch, REDO)

    def _marks(self, series: list[list[tuple[float, int]]], empty: dict[int, tuple[float, float]], col_of,  # type: ignore[no-untyped-def]
               cols: int) -> list[Cell]:  # fmt: skip
        marks: list[tuple[str, str] | None] = [None] * cols
        rank = {"◆": 0, "○": 1, "▲": 1, "…": 1, "?": 2, "✕": 3}

        def mark(c: int, ch: str, style: str) -> None:
            cur = marks[c]
            if cur is None or rank[ch] >= rank[cur[0]]:
                marks[c] = (ch, style)

        for j, a in enumerate(self.attempts):
            p = series[j]
            if not p:
                if j in empty:
                    e0, e1 = empty[j]
                    if a.start_kind == "pending":
                        mark(col_of(e0), "…", "$text-warning")
                    else:
                        mark(col_of((e0 + e1) / 2), "?", MUTED)
                continue
            for t, s, kind, _e in a.points:
                if kind == "save" and t is not None:
                    c = _col_for_step(p, s, col_of)
                    if c is not None:
                        mark(c, "◆", SAVE)
            if not a.points:
                for s in a.saves:
                    c = _col_for_step(p, s, col_of)
                    if c is not None:
                        mark(c, "◆", SAVE)
            c0 = col_of(p[0][0])
            if a.start_kind == "resumed":
                mark(c0, "▲", "$text-success")
            elif a.start_kind == "fresh":
                mark(c0, "○", "$text-warning")
            if a.inferred:
                mark(c0, "?", MUTED)
            if a.interrupted and not a.running:
                mark(col_of(p[-1][0]), "✕", "$text-error")
        return [m if m else " " for m in marks]

    def _axis(self, series: list[list[tuple[float, int]]], empty: dict[int, tuple[float, float]], cuts: list[float],  # type: ignore[no-untyped-def]
              col_of, cols: int, timed: bool) -> str:  # fmt: skip
        axis = [" "] * cols
        for t in cuts:
            axis[col_of(t)] = "⋯"
        for j, a in enumerate(self.attempts):
            p = series[j]
            if not p and j not in empty:
                continue
            text = clock(a.started)[-8:-3] if (timed and a.started) else _name(a)
            c = col_of(p[0][0] if p else empty[j][0])
            if all(ch == " " for ch in axis[max(0, c - 1) : c + len(text) + 1]) and c + len(text) <= cols:
                axis[c : c + len(text)] = list(text)
        out = "".join(axis)
        if not timed:
            note = " (no times known: one slot per attempt)"
            out = out.rstrip()[: cols - len(note)] + note
        return out

    def _legend(self, series: list[list[tuple[float, int]]]) -> Content:
        parts: list[str | tuple[str, str]] = []
        for j, a in enumerate(self.attempts):
            p = series[j]
            if a.inferred and not p:
                parts += [("?", MUTED), f" {_name(a)} pods gone", "  "]
                continue
            first = a.start_step if a.start_step is not None else (p[0][1] if p else None)
            rng = f"{first}→{a.last_step}" if first is not None and a.last_step is not None else "steps unknown"
            if a.start_kind == "pending":
                rng = "not started"
            parts += [("■", attempt_color(a.index)), f" {_name(a)} {a.how} {rng}", "  "]
        parts += [("│", REDO), " rewind ", ("◆", SAVE), " save ", ("▲", "$text-success"), " resume ",
                  ("○", "$text-warning"), " fresh ", ("✕", "$text-error"), " interrupted ", ("?", MUTED),
                  " inferred"]  # fmt: skip
        return Content.assemble(*parts)

    def _no_steps(self, width: int) -> Content:
        lines = [Content.from_markup("[$foreground-muted]No training step is known for any attempt:")]
        for a in self.attempts:
            why = (
                "its pods and logs are gone"
                if a.inferred
                else ("not started yet" if a.start_kind == "pending" else "its log shows no step")
            )
            lines.append(Content.assemble("  ", ("■", attempt_color(a.index)), f" {_name(a)} {a.how}: {why}"))
        return Content("\n").join(lines)


def _value_at(p: list[tuple[float, int]], t: float) -> float | None:
    """The step of a series at time `t` (linear between its points; before its start: None)."""
    if t < p[0][0]:
        return None
    best = None
    for (t0, s0), (t1, s1) in pairwise(p):
        if t0 <= t <= t1:
            v = s0 if t1 == t0 else s0 + (s1 - s0) * (t - t0) / (t1 - t0)
            best = v if best is None else max(best, v)
    if best is None:
        best = max(s for tt, s in p if tt <= t)
    return best


def _col_for_step(p: list[tuple[float, int]], step: int, col_of) -> int | None:  # type: ignore[no-untyped-def]
    for (t0, s0), (t1, s1) in pairwise(p):
        if s0 <= step <= s1:
            t = t0 if s1 == s0 else t0 + (step - s0) / (s1 - s0) * (t1 - t0)
            return int(col_of(t))
    return None
