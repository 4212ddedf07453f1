"""The `:` command palette: jump to a screen, a failing finding or another TrainJob; export a
report or a screenshot; refresh; switch the theme; start the drill when the drill exists.

Words a k9s user types (`pods`, `events`, `logs`, `yaml`, `q`, …, with or without the leading `:`)
are commands: typed whole, or as the start of one, they come first, before any fuzzy match.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

from textual.command import DiscoveryHit, Hit, Hits, Provider
from textual.content import Content

from ckpt_doctor.tui.widgets.navbar import TABS

# (words, what it does): the callbacks are looked up on the app by `_word_commands`
WORDS: list[tuple[tuple[str, ...], str]] = [
    (("pods", "pod", "po"), "the pods, in the Overview tree"),
    (("overview", "ov"), "the verdict and the objects (key 1)"),
    (("findings", "finding", "fi"), "every rule's finding (key 2)"),
    (("timeline", "tl"), "the steps of each attempt over time (key 3)"),
    (("logs", "log"), "the container logs (key 4)"),
    (("events", "event", "ev"), "the events of the TrainJob's objects (key 5)"),
    (("yaml",), "the YAML of the selected object (else the TrainJob)"),
    (("describe", "desc"), "the selected object as kubectl describe shows it (key d)"),
    (("trainjobs", "trainjob", "tj"), "pick another TrainJob (key 0)"),
    (("q", "quit", "q!"), "quit ckpt-doctor"),
]
EXACT, PREFIX = 1e9, 1e8  # above any fuzzy score (Textual's are not bounded by 1): commands come first


class DoctorCommands(Provider):
    def _word_commands(self) -> list[tuple[tuple[str, ...], str, Callable[[], Any]]]:
        app: Any = self.app
        actions: dict[str, Callable[[], Any]] = {
            "pods": app.action_pods,
            "overview": partial(app.action_goto, "overview"),
            "findings": partial(app.action_goto, "findings"),
            "timeline": partial(app.action_goto, "timeline"),
            "logs": partial(app.action_goto, "logs"),
            "events": partial(app.action_goto, "events"),
            "yaml": app.action_yaml,
            "describe": app.action_describe,
            "trainjobs": partial(app.action_goto, "picker"),
            "q": app.action_quit,
        }
        return [(words, help, actions[words[0]]) for words, help in WORDS]

    def _commands(self) -> list[tuple[str, Callable[[], Any], str]]:
        app: Any = self.app
        out: list[tuple[str, Callable[[], Any], str]] = [
            (f"Go to {label}", partial(app.action_goto, name), f"key {key}") for key, name, label in TABS
        ]
        out.append(("Go to TrainJobs", partial(app.action_goto, "picker"), "key 0: pick another TrainJob"))
        out += [
            ("Refresh", app.action_refresh, "key r: collect (live) or re-read (bundle) and diagnose again"),
            ("Toggle auto-refresh", app.action_toggle_auto, "refresh every --refresh seconds (30 s by default)"),
            (
                "Export report (Markdown)",
                app.action_export_report,
                "write the post-incident report, as `ckpt-doctor report -o markdown --out FILE`, with its step chart",
            ),
            ("Save screenshot (SVG)", app.action_screenshot, "save what the screen shows as an SVG file"),
            (
                "Inspect checkpoints",
                app.action_inspect_checkpoints,
                "list the checkpoint directory through read-only exec in a running trainer (find, df, head -c)",
            ),
            ("Toggle light/dark theme", app.action_toggle_theme, "key ctrl+t"),
        ]
        if app.drill_available():
            out.append(
                (
                    "Start the verify drill",
                    app.action_drill,
                    "crash, suspend/resume and move this TrainJob, asking before each change (y / s / a)",
                )
            )
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
        word = query.strip().lstrip(":").strip().lower()
        if word:
            for words, help, callback in self._word_commands():
                score = EXACT if word in words else (PREFIX if any(w.startswith(word) for w in words) else 0.0)
                if score:
                    shown = Content.assemble((f":{words[0]}", "bold"), f"  {help}")
                    yield Hit(score, shown, callback, text=f":{words[0]}", help=None)
        matcher = self.matcher(query)
        for name, callback, help in self._commands():
            score = matcher.match(name)
            if score > 0:
                yield Hit(score, matcher.highlight(name), callback, help=help)
