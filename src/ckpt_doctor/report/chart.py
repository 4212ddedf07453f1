"""The step chart of a report: training step over wall time, one series per attempt, drawn by pygal.

`chart_data` turns the timeline into what is drawn (and what tests check): each attempt's (time, step)
points, its complete saves, where it was interrupted, and each rewind as a cliff from the step the
attempt before reached down to the step the next one began at, labelled `↓ 1020 → 950, 70 steps lost`.
`render_svg` draws it with pygal as a self-contained SVG: pygal's tooltip script is switched off
(`js=[]`), its inline config script and comments are removed with an XML filter, and the chart's id is
fixed, so the same timeline gives the same bytes and the file makes no request of any kind.
`render_png` rasterises that SVG with resvg (no system library needed); it needs a font on the machine.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from ckpt_doctor.facts.timeline import Timeline

CHART_ID = "ckpt-doctor-steps"
WIDTH, HEIGHT = 900, 420
PALETTE = ("#1f6feb", "#8250df", "#1a7f37", "#bf8700", "#0a7ea4", "#6e7781")
SAVE_COLOR = "#57606a"
CUT_COLOR = "#cf222e"
FONT = "DejaVu Sans, Helvetica, Arial, sans-serif"


@dataclass
class Series:
    name: str
    attempt: int | None
    points: list[tuple[float, int]]  # (epoch seconds, step)
    estimated: bool  # some of its times are interpolated


@dataclass
class Drop:
    """A rewind: at time `t`, from the step the attempt before reached down to where the next began."""

    t: float
    from_step: int | None
    to_step: int | None
    lost: int | None
    label: str
    cause: str


@dataclass
class ChartData:
    title: str
    series: list[Series]
    saves: list[tuple[float, int, int | None]]  # (t, step, attempt)
    cuts: list[tuple[float, int, str]]  # where an attempt was interrupted: (t, last step, what ended it)
    drops: list[Drop]
    notes: list[str] = field(default_factory=list)

    @property
    def empty(self) -> bool:
        return not any(s.points for s in self.series)

    def to_json(self) -> dict[str, Any]:
        return {
            "series": [{"name": s.name, "points": s.points, "estimated": s.estimated} for s in self.series],
            "saves": self.saves,
            "drops": [d.__dict__ for d in self.drops],
        }


def chart_data(tl: Timeline, title: str = "Training step over time") -> ChartData:
    series: list[Series] = []
    saves: list[tuple[float, int, int | None]] = []
    cuts: list[tuple[float, int, str]] = []
    drops: list[Drop] = []
    notes: list[str] = []
    for a in tl.attempts:
        pts = [(p.t, p.step) for p in a.points if p.t is not None]
        if not pts:
            why = "its pods and logs are gone" if a.index is None or (a.inferred and not a.pods) else (
                "it has not started" if a.start == "pending" else "no step of it could be placed in time")
            notes.append(f"{a.label}: not drawn ({why})")
            continue
        name = f"attempt {a.index}" if a.index is not None else "earlier attempt"
        if a.inferred:
            name += " (pods gone)"
        series.append(Series(name, a.index, sorted(pts), any(p.estimated for p in a.points)))  # type: ignore[arg-type]
        saves += [(p.t, p.step, a.index) for p in a.points if p.kind == "save" and p.t is not None]
        if not a.running and a.end.kind not in ("completed", "pending", "running") and pts:
            t, s = max(pts)
            cuts.append((t, s, a.end.kind))
    for i in tl.interruptions:
        before, after = tl.attempts[i.before], tl.attempts[i.after]
        t = next((p.t for p in after.points if p.t is not None), None)
        if t is None:
            t = next((p.t for p in reversed(before.points) if p.t is not None), None)
        if t is None:
            continue
        drops.append(Drop(t, i.from_step, i.to_step, i.steps_lost, i.label, i.cause))
    if any(s.estimated for s in series):
        notes.append(
            "where a log line has no usable timestamp, its step is placed by interpolation between the "
            "attempt's start and end"
        )
    return ChartData(title, series, sorted(saves), sorted(cuts), drops, notes)


def _ticks(t0: float, t1: float, n: int = 7) -> list[float]:
    """Round wall-clock times to label the x-axis with."""
    span = max(t1 - t0, 60.0)
    steps = [60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400, 172800, 604800]
    step = next((s for s in steps if span / s <= n), steps[-1])
    first = math.ceil(t0 / step) * step
    return [first + k * step for k in range(int((t1 - first) // step) + 1)]


def _dt(t: float) -> datetime:
    return datetime.fromtimestamp(t, tz=UTC)


def _clock(t: float, span: float) -> str:
    d = _dt(t)
    return d.strftime("%m-%d %H:%M" if span > 86400 else "%H:%M")


def render_svg(data: ChartData) -> str:
    """The chart as an SVG document (UTF-8 text), byte-stable for the same data."""
    import pygal
    from pygal.etree import etree
    from pygal.style import Style

    etree.to_etree()  # the standard library's ElementTree: the same bytes whether lxml is installed or not
    colors = [PALETTE[(s.attempt or 0) % len(PALETTE)] for s in data.series]
    style = Style(
        background="#ffffff",
        plot_background="#ffffff",
        foreground="#24292f",
        foreground_strong="#24292f",
        foreground_subtle="#8c959f",
        colors=(*colors, SAVE_COLOR, CUT_COLOR, CUT_COLOR),
        font_family=FONT,
        label_font_family=FONT,
        major_label_font_family=FONT,
        value_font_family=FONT,
        value_label_font_family=FONT,
        title_font_family=FONT,
        legend_font_family=FONT,
        tooltip_font_family=FONT,
        value_label_font_size=12,
        legend_font_size=12,
        label_font_size=11,
        title_font_size=15,
    )
    times = [t for s in data.series for t, _ in s.points] + [d.t for d in data.drops]
    t0, t1 = (min(times), max(times)) if times else (0.0, 60.0)
    span = t1 - t0
    chart = pygal.DateTimeLine(
        js=[],  # no external tooltip script: the file makes no request
        style=style,
        width=WIDTH,
        height=HEIGHT,
        explicit_size=True,
        disable_xml_declaration=True,
        show_dots=False,
        print_labels=True,
        allow_interruptions=True,
        legend_at_bottom=True,
        legend_at_bottom_columns=5,
        margin_bottom=28,
        truncate_legend=-1,
        truncate_label=-1,
        x_title="time (UTC)",
        y_title="training step",
        x_value_formatter=lambda d: _clock(d.timestamp(), span),
        range=(0, _ymax(data)),
        include_x_axis=True,
        stroke_style={"width": 2},
    )
    chart.uuid = CHART_ID
    chart.title = data.title
    chart.x_labels = [_dt(t) for t in _ticks(t0, t1)]
    chart.add_xml_filter(_strip_scripts_and_comments)
    for s in data.series:
        chart.add(s.name, [(_dt(t), step) for t, step in s.points], dots_size=1.5)
    chart.add(
        "complete save",
        [(_dt(t), step) for t, step, _a in data.saves],
        stroke=False,
        show_dots=True,
        dots_size=2.5,
    )
    chart.add(
        "interrupted",
        [{"value": (_dt(t), step), "label": cause} for t, step, cause in data.cuts],
        stroke=False,
        show_dots=True,
        dots_size=5,
    )
    cliff: list[Any] = []
    lift = _ymax(data) * 0.1  # a label near the x-axis would sit on its tick labels
    for d in data.drops:
        top = d.from_step if d.from_step is not None else d.to_step
        bottom = d.to_step if d.to_step is not None else top
        if top is None or bottom is None:
            continue
        lifted = top < lift or d.from_step is None
        if d.from_step is not None and d.to_step is not None:  # the cliff: from where it got to where it began
            cliff += [{"value": (_dt(d.t), top), "label": "" if lifted else d.label}]
        cliff += [{"value": (_dt(d.t), bottom), "label": ""}, None]
        if lifted:  # how far the attempt before got is not known, or the label would sit on the axis
            cliff += [{"value": (_dt(d.t), max(top, lift)), "label": d.label, "node": {"r": 0}}, None]
    chart.add("rewind", cliff, stroke_style={"width": 3, "dasharray": "6, 3"}, show_dots=True, dots_size=2)
    return chart.render(is_unicode=True)


def _ymax(data: ChartData) -> int:
    top = max([s for ser in data.series for _t, s in ser.points] + [d.from_step or 0 for d in data.drops] + [1])
    return math.ceil(top * 1.08)


def _strip_scripts_and_comments(root: Any) -> Any:
    """pygal writes an inline config script and comments naming its site and today's date: drop them."""
    for parent in list(root.iter()):
        for child in list(parent):
            tag = child.tag if isinstance(child.tag, str) else ""
            if tag.endswith("script") or not isinstance(child.tag, str):
                parent.remove(child)
    return root


def render_png(svg: str) -> tuple[bytes | None, str]:
    """(PNG bytes, "") or (None, why not)."""
    try:
        import resvg_py
    except ImportError:
        return None, "resvg-py is not installed (pip install resvg-py)"
    try:
        png = resvg_py.svg_to_bytes(
            svg_string=svg,
            background="#ffffff",
            font_family="DejaVu Sans",
            sans_serif_family="DejaVu Sans",
            zoom=2.0,
        )
    except (ValueError, OSError) as e:
        return None, f"resvg could not draw it: {e}"
    return bytes(png), ""
