"""`ckpt-doctor report`: put the post-incident report together and write it safely.

One diagnosis → the report document (postmortem.build, redacted) → Markdown or HTML, with the step chart:
inline SVG in HTML; beside a Markdown file written with `--out report.md`, as `report-chart.svg` and
`report-chart.png`. The app's "Export report" calls the same `render_report` and `write_files`, so both
write the same bytes.

Files are written through `safewrite` (a temporary file from mkstemp in the target directory, fsync,
os.replace; never through a symlink; an existing file is refused unless `force`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ckpt_doctor.engine.walk import Diagnosis
    from ckpt_doctor.safewrite import Written
    from ckpt_doctor.sources.redact import Redactor

FORMATS = ("markdown", "html")
NO_OUT_CHART = (
    "The chart is drawn inline by `-o html`, and beside the report by `--out FILE.md` "
    "(FILE-chart.svg and FILE-chart.png)."
)


@dataclass
class Rendered:
    text: str  # the report itself
    beside: dict[str, bytes] = field(default_factory=dict)  # file name (next to the report) -> content
    notes: list[str] = field(default_factory=list)  # what the user should know (a PNG that was not made…)


def chart_names(out: Path) -> tuple[str, str]:
    """`report.md` → (`report-chart.svg`, `report-chart.png`)."""
    return f"{out.stem}-chart.svg", f"{out.stem}-chart.png"


def render_report(diag: Diagnosis, fmt: str, out: Path | None = None, redactor: Redactor | None = None) -> Rendered:
    from ckpt_doctor.facts.timeline import timeline_of
    from ckpt_doctor.report import postmortem
    from ckpt_doctor.report.chart import chart_data, render_png, render_svg
    from ckpt_doctor.sources.redact import Redactor

    if fmt not in FORMATS:
        raise ValueError(f"unknown report format {fmt}")
    red = redactor or Redactor()
    doc = postmortem.build(diag, red)
    data = chart_data(timeline_of(diag.facts))
    notes = [*data.notes]
    svg = None if data.empty else render_svg(data)
    if svg is None:
        why = "; ".join(data.notes) or "the TrainJob has no attempt with a known step"
        note = f"No step chart: no attempt's steps could be placed in time ({why})."
    else:
        note = " ".join(n[0].upper() + n[1:] + "." for n in data.notes)
    if fmt == "html":
        from ckpt_doctor.report import html

        return Rendered(html.render(doc, svg, note.strip()), {}, notes)
    from ckpt_doctor.report import postmortem_md

    if out is None or svg is None:
        text = postmortem_md.render(doc, None, (note + " " + NO_OUT_CHART).strip() if svg is not None else note)
        return Rendered(text, {}, notes)
    svg_name, png_name = chart_names(out)
    beside = {svg_name: svg.encode("utf-8")}
    png, why = render_png(svg)
    link = svg_name
    if png is not None:
        beside[png_name] = png
        link = png_name
        note = (note + f" The same chart as SVG: {svg_name}.").strip()
    else:
        notes.append(f"no PNG of the chart: {why}")
        note = (note + f" (no PNG: {why}).").strip()
    return Rendered(postmortem_md.render(doc, link, note), beside, notes)


def write_files(out: Path, rendered: Rendered, force: bool = False) -> list[Written]:
    """Write the report and the files beside it (safewrite: temporary file, fsync, os.replace, no symlink
    followed); every target is checked before any is written, and an existing one is refused unless `force`."""
    from ckpt_doctor.safewrite import check_output, write_output

    targets = [(out, rendered.text.encode("utf-8"))] + [(out.with_name(n), b) for n, b in rendered.beside.items()]
    for path, _data in targets:
        check_output(path, force)
    return [write_output(path, data, force) for path, data in targets]
