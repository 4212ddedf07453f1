"""The verdict at the top of the overview: symptom → cause → fix, each linking to its finding.

One line per part (cut with … on narrow terminals, the fix may take two), so the verdict stays
readable at 80×24 and leaves room for the object tree below it.
"""

from __future__ import annotations

from typing import Any

from textual.containers import Vertical
from textual.content import Content

from ckpt_doctor.tui.widgets.guard import SafeStatic
from ckpt_doctor.tui.widgets.tone import SEVERITY_VAR, var


def _link(rule_id: str) -> str:
    return f"@click=screen.open_finding('{rule_id}')"


class VerdictPanel(Vertical):
    DEFAULT_CSS = """
    VerdictPanel {
        height: auto;
        max-height: 10;
        padding: 0 1;
        border: round $primary 60%;
        border-title-color: $text;
        border-title-style: bold;
        &.-bad { border: round $error; }
        &.-warn { border: round $warning; }
        &.-ok { border: round $success; }
        & > Static { height: auto; text-wrap: nowrap; text-overflow: ellipsis; }
        & > Static.-wrap { text-wrap: wrap; max-height: 2; }
        & > Static.-more { color: $foreground-muted; }
    }
    """

    def _lines(self, view: Any) -> tuple[str, list[tuple[Content, str]]]:
        out: list[tuple[Content, str]] = []
        if view.verdict:
            for n, e in enumerate(view.verdict[:2]):
                s = e.symptom
                sid = (s.id, f"bold {var('text-error')} {_link(s.id)}")
                out.append((Content.assemble(("✗ ", var("text-error")), sid, "  ", (s.title, "bold")), ""))
                if s.detail and n == 0:
                    out.append((Content.assemble("  ", (s.detail, var("foreground-muted"))), ""))
                if e.causes:
                    c = e.causes[0]
                    out.append(
                        (
                            Content.assemble(
                                ("  ← ", var("foreground-muted")),
                                (c.id, f"bold {var(SEVERITY_VAR[c.severity])} {_link(c.id)}"),
                                "  ",
                                c.title,
                            ),
                            "",
                        )
                    )
                    if n == 0:
                        out.append((Content.assemble(("  ⚒ fix: ", f"bold {var('text-success')}"), c.fix), "-wrap"))
                    if len(e.causes) > 1:
                        out.append((Content(f"    + {len(e.causes) - 1} more cause(s): 2 Findings"), "-more"))
                else:
                    more = f"; not evaluated: {', '.join(e.unexplored)}" if e.unexplored else ""
                    out.append(
                        (
                            Content.styled(
                                f"  ? cause not found among the rules that could be evaluated{more}",
                                var("text-warning"),
                            ),
                            "",
                        )
                    )
            if len(view.verdict) > 2:
                out.append((Content(f"+ {len(view.verdict) - 2} more symptom(s): 2 Findings"), "-more"))
            return "bad", out
        if view.latent:
            c = view.latent[0]
            out.append(
                (
                    Content.assemble(
                        ("▲ no symptom yet · latent risk ", f"bold {var('text-warning')}"),
                        (c.id, f"bold {_link(c.id)}"),
                        "  ",
                        c.title,
                    ),
                    "",
                )
            )
            out.append((Content.assemble(("  ⚒ fix: ", f"bold {var('text-success')}"), c.fix), "-wrap"))
            return "warn", out
        line = Content.assemble(("✓ ", var("text-success")), ("No failing symptom or cause.", "bold"))
        out.append((line, ""))
        if view.not_evaluated:
            out.append(
                (
                    Content.styled(
                        f"  {view.not_evaluated} rule(s) could not be evaluated: not an all-clear "
                        "for them (2 Findings shows why).",
                        var("text-warning"),
                    ),
                    "-wrap",
                )
            )
        return "ok", out

    def show(self, view: Any) -> None:
        """Fill from a ckpt_doctor.tui.model.View."""
        health, lines = self._lines(view)
        s = view.summary
        self.border_title = f"Verdict · {view.key}"
        self.border_subtitle = f"✗ {s['fail']} failed · ? {s['notEvaluated']} not evaluated · ✓ {s['pass']} passed"
        for h in ("bad", "warn", "ok"):
            self.set_class(h == health, f"-{h}")
        self.remove_children()
        self.mount_all([SafeStatic(c, classes=cls) for c, cls in lines])

    def message(self, content: Content) -> None:
        """A single line instead of a verdict (loading, errors)."""
        self.remove_children()
        self.mount(SafeStatic(content, classes="-wrap"))
