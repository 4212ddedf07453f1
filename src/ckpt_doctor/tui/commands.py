"""The `:` command palette: jump to a screen, a failing finding or another TrainJob; export a
report or a screenshot; refresh; switch the theme; start the drill when the drill exists."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

from textual.command import DiscoveryHit, Hit, Hits, Provider

from ckpt_doctor.tui.widgets.navbar import TABS


class DoctorCommands(Provider):
    def _commands(self) -> list[tuple[str, Callable[[], Any], str]]:
        app: Any = self.app
        out: list[tuple[str, Callable[[], Any], str]] = [
            (f"Go to {label}", partial(app.action_goto, name), f"key {key}") for key, name, label in TABS
        ]
        out.append(("Go to TrainJobs", partial(app.action_goto, "picker"), "key 0: pick another TrainJob"))
        out += [
            ("Refresh", app.action_refresh, "key r: collect (live) or re-read (bundle) and diagnose again"),
            ("Toggle auto-refresh", app.action_toggle_auto, "refresh every --refresh seconds (30 s by default)"),
            ("Export report (Markdown)", app.action_export_report, "write the diagnosis as Markdown to a file"),
            ("Save screenshot (SVG)", app.action_screenshot, "save what the screen shows as an SVG file"),
            ("Toggle light/dark theme", app.action_toggle_theme, "key ctrl+t"),
        ]
        if app.drill_available():
            out.append(("Start the verify drill", app.action_drill, "run `ckpt-doctor drill` on this TrainJob"))
        view = app.view
        if view is not None:
            for f in view.findings:
                if f.status == "fail":
                    out.append((f"Finding {f.id}", partial(app.open_finding, f.id), f.title))
        for row in app.rows or []:
            if row.key != app.current:
                out.append(
                    (f"Switch TrainJob {row.key}", partial(app.open_trainjob, row.key), f"{row.state} · {row.verdict}")
                )
        return out

    async def discover(self) -> Hits:
        for name, callback, help in self._commands():
            yield DiscoveryHit(name, callback, help=help)

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for name, callback, help in self._commands():
            score = matcher.match(name)
            if score > 0:
                yield Hit(score, matcher.highlight(name), callback, help=help)
