"""The step chart: a rewind is there, sized right, in the chart's data and in the SVG pygal draws from it."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

from ckpt_doctor.facts.timeline import timeline_of
from ckpt_doctor.report.chart import chart_data, render_png, render_svg
from tests.report.conftest import ROOT, diagnosis

SVG = "{http://www.w3.org/2000/svg}"
README_CHART = ROOT / "docs" / "img" / "report-step-chart.svg"


def _y_scale(root: ET.Element) -> tuple[float, float]:
    """(pixel y of step 0, pixels per step) from the y-axis guides pygal drew."""
    ys: dict[int, float] = {}
    for g in root.iter(f"{SVG}g"):
        if g.get("class") != "guides":
            continue
        path, text = g.find(f"{SVG}path"), g.find(f"{SVG}text")
        if path is None or text is None or not (text.text or "").isdigit():
            continue
        m = re.match(r"M0\.0+ ([\d.]+) h", path.get("d", ""))
        if m:
            ys[int(text.text or "")] = float(m.group(1))
    lo, hi = min(ys), max(ys)
    return ys[lo] + lo * (ys[hi] - ys[lo]) / (hi - lo), (ys[lo] - ys[hi]) / (hi - lo)


def _series_paths(root: ET.Element) -> list[list[tuple[float, float]]]:
    out = []
    for g in root.iter(f"{SVG}g"):
        if not (g.get("class") or "").startswith("series"):
            continue
        for p in g.findall(f"{SVG}path"):
            nums = [float(x) for x in re.findall(r"-?[\d.]+", p.get("d", ""))]
            out.append(list(zip(nums[::2], nums[1::2], strict=False)))
    return out


def test_the_rewind_of_lexical_sort_older_is_drawn_and_sized() -> None:
    data = chart_data(timeline_of(diagnosis("lexical-sort-older").facts))
    assert [s.name for s in data.series] == ["attempt 0", "attempt 1"]
    assert max(s for _t, s in data.series[0].points) == 1020
    assert min(s for _t, s in data.series[1].points) == 950
    [drop] = data.drops
    assert (drop.from_step, drop.to_step, drop.lost) == (1020, 950, 70)
    assert drop.label == "↓ ≥ 1020 → 950, ≥ 70 steps lost"
    assert data.saves and {s for _t, s, _a in data.saves} >= {950, 1000, 1050, 1100}
    assert data.cuts == [(data.series[0].points[-1][0], 1020, "crash")]
    # the SVG: the label is printed, and the cliff is a vertical segment 70 steps tall
    svg = render_svg(data)
    root = ET.fromstring(svg)
    labels = [t.text for t in root.iter(f"{SVG}text") if t.get("class") == "label"]
    assert "↓ ≥ 1020 → 950, ≥ 70 steps lost" in labels
    zero, per_step = _y_scale(root)
    cliffs = [p for p in _series_paths(root) if len(p) == 2 and abs(p[0][0] - p[1][0]) < 1e-6]
    assert len(cliffs) == 1
    (_x, y_top), (_x2, y_bottom) = cliffs[0]
    assert round((zero - y_top) / per_step) == 1020
    assert round((zero - y_bottom) / per_step) == 950
    assert round((y_bottom - y_top) / per_step) == 70
    # the attempt before ends where the cliff starts: the drop is from its own top
    a0 = max(_series_paths(root), key=lambda p: len(p))
    assert round((zero - min(y for _x, y in a0)) / per_step) == 1020


def test_the_chart_is_byte_stable_and_offline() -> None:
    data = chart_data(timeline_of(diagnosis("lexical-sort-older").facts))
    a, b = render_svg(data), render_svg(data)
    assert a == b
    assert "<script" not in a and "http" not in a.replace("http://www.w3.org/2000/svg", "")


def test_an_unknown_rewind_is_marked_not_invented() -> None:
    data = chart_data(timeline_of(diagnosis("emptydir-fresh-start").facts))
    assert [s.name for s in data.series] == ["attempt 1"]
    [drop] = data.drops
    assert drop.from_step is None and drop.lost is None and drop.to_step == 0
    assert "steps lost unknown" in drop.label
    assert any("attempt 0: not drawn (its pods and logs are gone)" in n for n in data.notes)


def test_png_is_made_without_a_system_library() -> None:
    png, why = render_png(render_svg(chart_data(timeline_of(diagnosis("lexical-sort-older").facts))))
    assert why == "" and png is not None and png[:8] == b"\x89PNG\r\n\x1a\n"


def test_the_readme_chart_is_current() -> None:
    """docs/img/report-step-chart.svg is the chart of lexical-sort-older (the README shows it)."""
    svg = render_svg(chart_data(timeline_of(diagnosis("lexical-sort-older").facts)))
    if not README_CHART.exists():
        README_CHART.write_text(svg)
    assert README_CHART.read_text() == svg, "regenerate docs/img/report-step-chart.svg (delete it and rerun)"


def test_no_chart_when_nothing_can_be_placed() -> None:
    data = chart_data(timeline_of(diagnosis("resume-true-hardcoded").facts))
    assert data.empty and data.series == []
