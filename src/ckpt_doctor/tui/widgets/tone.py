"""Colours by meaning (health, severity, status), taken from the current theme.

Every coloured thing also carries a symbol (✗ ▲ ● ○ ✓ ?), so nothing is lost under NO_COLOR.
"""

from __future__ import annotations

from rich.style import Style
from textual.app import App
from textual.color import Color

# every health an object can have (model.HEALTH_MARK has a mark for each): ok | warn | bad | gone | info
HEALTH_VAR = {
    "bad": "text-error",
    "warn": "text-warning",
    "ok": "text-success",
    "gone": "foreground-muted",
    "info": "foreground",
}
HEALTH_TEXT_STYLE = {"bad": "bold", "gone": "italic"}
STATUS_VAR = {"fail": "text-error", "not_evaluated": "text-warning", "pass": "text-success"}
SEVERITY_VAR = {"critical": "text-error", "error": "text-error", "warning": "text-warning", "info": "text-primary"}


def var(name: str) -> str:
    """A Content style for a theme variable (`$error`)."""
    return f"${name}"


def rich(app: App, name: str, bold: bool = False, dim: bool = False) -> Style:
    """A Rich style with the theme's colour `name`, for widgets that draw Rich Text (tables, trees)."""
    value = app.theme_variables.get(name)
    if not value:
        return Style(bold=bold, dim=dim)
    color = Color.parse(value)
    if color.a < 1:  # translucent theme colours (foreground-muted): blend onto the background
        color = Color.parse(app.theme_variables.get("background", "black")) + color
    return Style(color=color.rich_color, bold=bold, dim=dim)


READABLE = 4.5  # WCAG AA contrast for body text


def _luminance(c: Color) -> float:
    def channel(v: int) -> float:
        x = v / 255
        return x / 12.92 if x <= 0.03928 else ((x + 0.055) / 1.055) ** 2.4

    return 0.2126 * channel(c.r) + 0.7152 * channel(c.g) + 0.0722 * channel(c.b)


def contrast(a: Color, b: Color) -> float:
    """The WCAG contrast ratio of two opaque colours (1 to 21)."""
    hi, lo = sorted((_luminance(a), _luminance(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


def readable_background(fg: Color, bg: Color, under: Color, target: float = READABLE) -> Color:
    """`bg` (drawn over `under` when translucent), darkened or lightened just enough for `fg` to
    read on it: the theme's hue stays, the cursor stops being pale text on a mid-tone."""
    bg = under + bg if bg.a < 1 else bg
    fg = bg + fg if fg.a < 1 else fg
    if contrast(fg, bg) >= target:
        return bg
    towards_dark = _luminance(fg) > _luminance(bg)
    for step in range(1, 21):
        cand = bg.darken(step * 0.05) if towards_dark else bg.lighten(step * 0.05)
        if contrast(fg, cand) >= target:
            return cand
    return Color(0, 0, 0) if towards_dark else Color(255, 255, 255)


def readable_text(bg: Color, under: Color) -> Color:
    """Black or white, whichever reads better on `bg` (a highlight's own text colour)."""
    bg = under + bg if bg.a < 1 else bg
    black, white = Color(0, 0, 0), Color(255, 255, 255)
    return black if contrast(black, bg) >= contrast(white, bg) else white


def _text_on(value: str, bg: Color) -> Color:
    """A text colour as CSS gives it; `auto 87%` is the contrasting text Textual picks for `bg`."""
    parts = value.split()
    if parts and parts[0] == "auto":
        alpha = float(parts[1].rstrip("%")) / 100 if len(parts) > 1 else 1.0
        return bg + bg.get_contrast_text(alpha)
    return Color.parse(value)


def readable_variables(variables: dict[str, str]) -> dict[str, str]:
    """The theme's variables with its cursors made readable (see `readable_background`)."""
    out = dict(variables)
    under = Color.parse(out.get("surface") or out.get("background") or "black")
    for fg_name, bg_name in (
        ("block-cursor-foreground", "block-cursor-background"),
        ("block-cursor-blurred-foreground", "block-cursor-blurred-background"),
    ):
        try:
            bg = Color.parse(out[bg_name])
            fg = _text_on(out[fg_name], under + bg if bg.a < 1 else bg)
        except Exception:  # ansi_default and the like (ANSI themes): the terminal's colours
            continue
        fixed = readable_background(fg, bg, under)
        if fixed != bg:
            out[bg_name] = fixed.hex
    return out
