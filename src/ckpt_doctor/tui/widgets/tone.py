"""Colours by meaning (health, severity, status), taken from the current theme.

Every coloured thing also carries a symbol (✗ ▲ ● ○ ✓ ?), so nothing is lost under NO_COLOR.
"""

from __future__ import annotations

from rich.style import Style
from textual.app import App
from textual.color import Color

HEALTH_VAR = {
    "bad": "text-error",
    "warn": "text-warning",
    "ok": "text-success",
    "gone": "foreground-muted",
    "info": "foreground",
}
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
