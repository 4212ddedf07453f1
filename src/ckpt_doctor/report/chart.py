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
        [{"value": (_dt(t), step), "label": ""} for t, step, _cause in data.cuts],
        stroke=False,
        show_dots=True,
        dots_size=5,
    )
    cliff: list[Any] = []
    anchors: list[tuple[int, str, int]] = []  # per dot of the rewind series: (its place among the dots, label, rank)
    lift = _ymax(data) * 0.1  # a label near the x-axis would sit on its tick labels
    dots = 0
    for d in data.drops:
        top = d.from_step if d.from_step is not None else d.to_step
        bottom = d.to_step if d.to_step is not None else top
        if top is None or bottom is None:
            continue
        lifted = top < lift or d.from_step is None
        if d.from_step is not None and d.to_step is not None:  # the cliff: from where it got to where it began
            cliff += [{"value": (_dt(d.t), top), "label": ""}]
            if not lifted:
                anchors.append((dots, d.label, 0))
            dots += 1
        cliff += [{"value": (_dt(d.t), bottom), "label": ""}, None]
        if d.to_step is None and not lifted:  # the next attempt has not begun: its one point carries the label
            anchors.append((dots, d.label, 0))
        dots += 1
        if lifted:  # how far the attempt before got is not known, or the label would sit on the axis
            cliff += [{"value": (_dt(d.t), max(top, lift)), "label": "", "node": {"r": 0}}, None]
            anchors.append((dots, d.label, 0))
            dots += 1
    chart.add("rewind", cliff, stroke_style={"width": 3, "dasharray": "6, 3"}, show_dots=True, dots_size=2)
    n = len(data.series)
    labels = [(n + 2, i, text, 0) for i, text, _r in anchors]  # the rewinds first: they carry the figures
    labels += [(n + 1, i, cause, 1) for i, (_t, _s, cause) in enumerate(data.cuts)]
    unplaced: list[str] = []
    chart.add_xml_filter(lambda root: _label_filter(root, labels, unplaced))
    svg = chart.render(is_unicode=True)
    lost = [x for x in unplaced if "→" in x]
    if lost:
        data.notes.append(f"{len(lost)} rewind label(s) left out of the chart for want of room: {'; '.join(lost)}")
    return svg


# -- labels: placed by us, so that none overlaps another or leaves the plot -------------------------------
LABEL_SIZE = 12  # px
CHAR_W = 0.62 * LABEL_SIZE  # DejaVu Sans averages ~0.55 em; the arrows are wider: a width never too small
LINE_H = LABEL_SIZE + 3


def label_box(x: float, y: float, text: str) -> tuple[float, float, float, float]:
    """(left, top, right, bottom) of a label drawn with its baseline at y, starting at x (text-anchor start)."""
    return (x, y - LABEL_SIZE, x + CHAR_W * len(text), y + 3)


def _overlap(a: tuple[float, float, float, float], b: tuple[float, float, float, float], gap: float = 1.0) -> bool:
    return a[0] < b[2] + gap and b[0] < a[2] + gap and a[1] < b[3] + gap and b[1] < a[3] + gap


def place_labels(
    anchors: list[tuple[float, float, str]],
    width: float,
    height: float,
    obstacles: list[tuple[float, float]] = (),  # type: ignore[assignment]
) -> list[tuple[float, float] | None]:
    """Where to draw each label (its start and baseline) near its anchor point, inside width × height, clear
    of every label placed before it and of the chart's dots (`obstacles`); None when there is no such place.
    Tried in order: right of the point, left of it, above, below, then rows further above and below, slid
    along to stay inside."""
    placed: list[tuple[float, float, float, float]] = [(x - 4, y - 4, x + 4, y + 4) for x, y in obstacles]
    out: list[tuple[float, float] | None] = []
    for ax, ay, text in anchors:
        w = CHAR_W * len(text)
        tries = [(ax + 6, ay + 4), (ax - 6 - w, ay + 4), (ax - w / 2, ay - 8), (ax - w / 2, ay + LINE_H + 6)]
        for k in range(1, 12):
            tries += [(ax - w / 2, ay - 8 - k * LINE_H), (ax - w / 2, ay + LINE_H + 6 + k * LINE_H)]
        got = None
        for x, y in tries:
            x = round(min(max(x, 0.0), width - w), 1)  # slid back inside the plot (and as the SVG will say it)
            y = round(y, 1)
            box = label_box(x, y, text)
            if x < 0 or box[1] < 0 or box[3] > height:
                continue
            if not any(_overlap(box, b) for b in placed):
                got = (x, y)
                placed.append(box)
                break
        out.append(got)
    return out


def _merge_repeats(wanted: list[tuple[float, float, str, int]]) -> list[tuple[float, float, str, int]]:
    """The same label at points a few pixels apart (a crash loop's rewinds, its `crash` marks) is said once,
    with how many times: `↓ 402 → 400, 2 steps lost ×3`."""
    out: list[tuple[float, float, str, int]] = []
    counts: list[int] = []
    for x, y, text, rank in wanted:
        near = next((k for k, (ox, oy, ot, _r) in enumerate(out) if ot == text and abs(ox - x) < 40 and
                     abs(oy - y) < 8), None)  # fmt: skip
        if near is None:
            out.append((x, y, text, rank))
            counts.append(1)
        else:
            counts[near] += 1
    return [(x, y, f"{t} ×{n}" if n > 1 else t, r) for (x, y, t, r), n in zip(out, counts, strict=True)]


def _label_filter(root: Any, labels: list[tuple[int, int, str, int]], unplaced: list[str]) -> Any:
    """Draw `labels` ((series index, dot index in it, text, rank)) at the dots pygal drew, placed by
    `place_labels` in the plot's own coordinates."""
    from pygal.etree import etree

    def cls(el: Any) -> list[str]:
        return str(el.get("class") or "").split()

    plot = next((g for g in root.iter() if str(g.tag).endswith("g") and cls(g) == ["plot"]), None)
    if plot is None:
        unplaced += [t for _s, _i, t, _r in labels]
        return root
    bg = next((r for r in plot.iter() if str(r.tag).endswith("rect") and "background" in cls(r)), None)
    width = float(bg.get("width")) if bg is not None else WIDTH
    height = float(bg.get("height")) if bg is not None else HEIGHT
    dots: dict[int, list[tuple[float, float]]] = {}
    for g in root.iter():
        c = cls(g)
        if not str(g.tag).endswith("g") or "series" not in c:
            continue
        idx = next((int(x.split("-")[1]) for x in c if x.startswith("serie-")), None)
        if idx is None:
            continue
        for circle in g.iter():
            if str(circle.tag).endswith("circle"):
                dots.setdefault(idx, []).append((float(circle.get("cx")), float(circle.get("cy"))))
    wanted = []
    for series, i, text, rank in sorted(labels, key=lambda x: (x[3], x[0], x[1])):
        pts = dots.get(series, [])
        if text and i < len(pts):
            wanted.append((pts[i][0], pts[i][1], text, rank))
    wanted = _merge_repeats(wanted)
    every_dot = [pt for pts in dots.values() for pt in pts]
    where = place_labels([(x, y, t) for x, y, t, _r in wanted], width, height, every_dot)
    layer = etree.SubElement(root, "g", {"transform": plot.get("transform") or "", "class": "plot labels"})
    for (_x, _y, text, rank), got in zip(wanted, where, strict=True):
        if got is None:
            unplaced.append(text)
            continue
        el = etree.SubElement(layer, "text", {
            "x": f"{got[0]:.1f}", "y": f"{got[1]:.1f}", "class": "label",
            "style": f"font-size:{LABEL_SIZE}px;font-family:{FONT};fill:{CUT_COLOR if rank == 0 else SAVE_COLOR};"
                     "paint-order:stroke;stroke:#ffffff;stroke-width:3px;stroke-linejoin:round",
        })  # fmt: skip
        el.text = text
    return root


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
