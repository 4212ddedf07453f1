"""How readable a drawn row is: the WCAG contrast ratio of its text against its background, taken
from the segments Textual renders (so it measures what the terminal is sent)."""

from __future__ import annotations

from textual.geometry import Region
from textual.widget import Widget

# box drawing, block elements and geometric fillers: decoration (tree guides, scrollbars, borders)
DECORATION = {chr(c) for c in range(0x2500, 0x25A0)} | set("▁▂▃▄▅▆▇█▏▎▍▌▋▊▉▔▕ ")


def luminance(rgb: tuple[int, int, int]) -> float:
    def channel(v: int) -> float:
        x = v / 255
        return x / 12.92 if x <= 0.03928 else ((x + 0.055) / 1.055) ** 2.4

    r, g, b = rgb
    return 0.2126 * channel(r) + 0.7152 * channel(g) + 0.0722 * channel(b)


def ratio(a: tuple[int, int, int], b: tuple[int, int, int]) -> float:
    hi, lo = sorted((luminance(a), luminance(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


def row_contrast(widget: Widget, y: int) -> tuple[float, str]:
    """The lowest contrast of any text on row `y` of `widget` (widget coordinates), and that text."""
    strip = widget.render_lines(Region(0, y, widget.size.width, 1))[0]
    worst, what = 99.0, ""
    for seg in strip:
        text = "".join(ch for ch in seg.text if ch not in DECORATION)
        style = seg.style
        if not text or style is None or style.color is None or style.bgcolor is None:
            continue
        fg, bg = style.color.get_truecolor(), style.bgcolor.get_truecolor()
        if style.reverse:
            fg, bg = bg, fg
        r = ratio(tuple(fg), tuple(bg))
        if r < worst:
            worst, what = r, text
    return worst, what
