"""Findings: failed first, then not evaluated (with why), then passed; the selected one shows its
explanation, its evidence (enter jumps to the field, event or log line), its fix and its place in
the rule graph."""

from __future__ import annotations

from typing import Any

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, VerticalScroll
from textual.content import Content
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from ckpt_doctor.tui.model import STATUS_MARK, FindingView, View
from ckpt_doctor.tui.screens.base import DoctorScreen
from ckpt_doctor.tui.screens.filtering import ListFilter
from ckpt_doctor.tui.widgets.filterbar import FilterBar
from ckpt_doctor.tui.widgets.guard import SafeStatic
from ckpt_doctor.tui.widgets.safelists import SafeOptionList
from ckpt_doctor.tui.widgets.tone import SEVERITY_VAR, STATUS_VAR, var


def object_ref(ref: str, objects: dict[str, Any]) -> str:
    """`ref` as the snapshot keys it (`Kind//name` of a cluster object is `Kind/name`), or ""."""
    if ref in objects:
        return ref
    parts = [p for p in ref.split("/") if p]
    alt = "/".join(parts)
    return alt if alt in objects else ""


GROUPS = (("fail", "FAILED"), ("not_evaluated", "NOT EVALUATED"), ("pass", "PASSED"))
STATUS_WORD = {"fail": "FAIL", "not_evaluated": "NOT EVALUATED", "pass": "PASS"}


class FindingsScreen(ListFilter, DoctorScreen):
    TAB = "findings"
    BINDINGS = [
        *ListFilter.KEYS,
        Binding("c", "copy_fix", "Copy fix"),
        Binding("e", "evidence", "Evidence"),
        Binding("d", "describe", "Describe"),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.wanted: str | None = None  # a finding to select once the view is shown
        self.shown: list[FindingView] = []
        self.current: FindingView | None = None

    def body(self) -> ComposeResult:
        with Horizontal(id="findings-body"):
            yield SafeOptionList(id="finding-list")
            with VerticalScroll(id="finding-detail"):
                yield SafeStatic(id="finding-head")
                yield SafeStatic("Evidence", classes="section", id="evidence-title")
                yield SafeOptionList(id="evidence")
                yield SafeStatic(id="finding-fix")
                yield SafeStatic(id="finding-graph")
        yield FilterBar("filter findings (rule, title, subject)…", id="filter")

    def show_view(self, view: View) -> None:
        super().show_view(view)
        keep = self.wanted or (self.current.id if self.current else None)
        self._fill(view, keep)
        self.wanted = None

    # -- the list -------------------------------------------------------------------------------
    def _fill(self, view: View, keep: str | None) -> None:
        needle = self.query_one("#filter", FilterBar).value.strip()
        items = [f for f in view.findings if not needle or f.matches(needle)]
        counts: dict[str, int] = {}
        for f in view.findings:
            counts[f.id] = counts.get(f.id, 0) + 1
        ol = self.query_one("#finding-list", OptionList)
        ol.clear_options()
        self.shown = []
        first_index = None
        keep_index = None
        opts: list[Option | None] = []
        for status, title in GROUPS:
            group = [f for f in items if f.status == status]
            if not group:
                continue
            if opts:
                opts.append(None)
            opts.append(
                Option(Content.styled(f"{title} ({len(group)})", f"bold {var(STATUS_VAR[status])}"), disabled=True)
            )
            for f in group:
                idx = len(self.shown)
                self.shown.append(f)
                label = f.id + (f" · {f.subject.rsplit('/', 1)[-1]}" if counts[f.id] > 1 else "")
                prompt = Content.assemble(
                    (f"{f.mark} ", var(STATUS_VAR[f.status])), (label, "bold" if f.status == "fail" else "")
                )
                opts.append(Option(prompt, id=f"f{idx}"))
                if first_index is None:
                    first_index = len(opts) - 1
                if keep_index is None and f.id == keep:
                    keep_index = len(opts) - 1
        if not self.shown:
            opts.append(Option(Content.styled("no finding matches the filter", var("foreground-muted")), disabled=True))
        ol.add_options(opts)
        target = keep_index if keep_index is not None else first_index
        if target is not None:
            ol.highlighted = target
            self._show(self.shown[int(ol.get_option_at_index(target).id[1:])])  # type: ignore[index]
        else:
            self._show(None)

    def on_option_list_option_highlighted(self, event: OptionList.OptionHighlighted) -> None:
        if event.option_list.id == "finding-list" and event.option.id:
            self._show(self.shown[int(event.option.id[1:])])

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        if event.option_list.id == "finding-list":
            self.action_evidence()
        elif event.option_list.id == "evidence" and self.current is not None and event.option.id:
            item = self.current.evidence[int(event.option.id[1:])]
            if item.jump is None:
                self.notify(
                    "Nothing to open for this evidence: it names no object, event or log line in the snapshot.",
                    severity="warning",
                )
            else:
                self.doctor.jump(item.jump)

    # -- the selected finding -------------------------------------------------------------------
    def _show(self, f: FindingView | None) -> None:
        self.current = f
        head = self.query_one("#finding-head", Static)
        ev = self.query_one("#evidence", OptionList)
        ev.clear_options()
        fix = self.query_one("#finding-fix", Static)
        graph = self.query_one("#finding-graph", Static)
        if f is None:
            head.update("")
            fix.update("")
            graph.update("")
            return
        sv = var(STATUS_VAR[f.status])
        parts: list[Any] = [
            (f"{f.mark} {STATUS_WORD[f.status]}", f"bold {sv}"),
            f" · {f.kind} · ",
            (f.severity, var(SEVERITY_VAR[f.severity])),
        ]
        if f.status == "fail" and f.confidence != "high":
            parts.append(f" · {f.confidence} confidence")
        parts += ["\n", (f.title, "bold"), "\n", (f.id, var("foreground-muted"))]
        if f.subject:
            parts += [("  on ", var("foreground-muted")), f.subject]
        if f.detail:
            parts += ["\n\n", f.detail]
        if f.status == "not_evaluated":
            parts += ["\n\n", ("Why not evaluated: ", f"bold {var('text-warning')}"), f.reason or "unknown"]
        elif f.status == "pass" and f.reason:
            parts += ["\n\n", ("Why it passes: ", f"bold {var('text-success')}"), f.reason]
        parts += ["\n\n", (f.explanation, var("foreground-muted"))]
        head.update(Content.assemble(*parts))
        title = self.query_one("#evidence-title", Static)
        title.update(
            Content.assemble(
                ("Evidence", "bold"), ("  enter opens the cited field, event or log line", var("foreground-muted"))
            )
            if f.evidence
            else Content.styled("No evidence recorded", var("foreground-muted"))
        )
        ev.display = bool(f.evidence)
        ev.add_options(
            [
                Option(Content.assemble(("→ " if item.jump else "  ", var("text-accent")), item.text), id=f"e{i}")
                for i, item in enumerate(f.evidence)
            ]
        )
        fparts: list[Any] = [
            ("⚒ Fix", f"bold {var('text-success')}"),
            ("  c copies it", var("foreground-muted")),
            "\n",
            f.fix,
        ]
        for d in f.docs:
            fparts += ["\n", ("docs: ", var("foreground-muted")), (d, f"underline link {d}")]
        fix.update(Content.assemble(*fparts))
        gparts: list[Any] = [("Rule graph", "bold"), ("  cause ──► symptom it explains", var("foreground-muted"))]
        if not f.graph:
            gparts += ["\n", ("no edges: this rule stands alone", var("foreground-muted"))]
        for path in f.graph[:12]:
            gparts.append("\n  ")
            for n, (rid, status) in enumerate(path):
                if n:
                    gparts.append((" ──► ", var("foreground-muted")))
                mark = STATUS_MARK.get(status, "?")
                style = f"{var(STATUS_VAR[status])} {'bold' if rid == f.id else ''}"
                gparts += [
                    (f"{mark} ", var(STATUS_VAR[status])),
                    (rid, style + f" @click=screen.open_finding('{rid}')"),
                ]
        if len(f.graph) > 12:
            gparts += ["\n", (f"  … {len(f.graph) - 12} more", var("foreground-muted"))]
        graph.update(Content.assemble(*gparts))
        self.query_one("#finding-detail", VerticalScroll).scroll_home(animate=False)

    def action_open_finding(self, rule_id: str) -> None:
        self.select(rule_id)

    def select(self, rule_id: str) -> None:
        view = self.doctor.view
        if view is None or not self.ready:  # shown first, then selected (setup)
            self.wanted = rule_id
            return
        bar = self.query_one("#filter", FilterBar)
        if bar.value and not any(f.id == rule_id for f in self.shown):
            bar.value = ""
        self._fill(view, rule_id)
        self.focus_now(self.query_one("#finding-list", OptionList))

    # -- keys ------------------------------------------------------------------------------------
    def action_evidence(self) -> None:
        ev = self.query_one("#evidence", OptionList)
        if ev.option_count:
            self.focus_now(ev)
            if ev.highlighted is None:
                ev.highlighted = 0

    def action_describe(self) -> None:
        """The object the highlighted evidence cites (an event's object too), else the finding's subject."""
        view = self.doctor.view
        if self.current is None or view is None:
            return
        ref = ""
        ev = self.query_one("#evidence", OptionList)
        if ev.has_focus and ev.highlighted is not None:
            opt = ev.get_option_at_index(ev.highlighted)
            item = self.current.evidence[int(opt.id[1:])] if opt.id else None
            if item is not None and item.jump is not None:
                ref = item.jump.ref or (f"Pod/{view.key.split('/')[0]}/{item.jump.log[0]}" if item.jump.log else "")
        ref = object_ref(ref or self.current.subject, view.objects)
        if ref:
            self.doctor.open_describe(ref)
        else:
            self.notify("This names no object of the snapshot to describe.", severity="warning")

    def selected_ref(self) -> str:
        view = self.doctor.view
        return object_ref(self.current.subject, view.objects) if self.current is not None and view is not None else ""

    def action_copy_fix(self) -> None:
        if self.current is not None:
            self.app.copy_to_clipboard(self.current.fix)
            self.notify(f"Fix of {self.current.id} copied to the clipboard.")

    def refilter(self) -> None:
        if self.doctor.view is not None:
            self._fill(self.doctor.view, self.current.id if self.current else None)

    def focus_list(self) -> None:
        self.focus_now(self.query_one("#finding-list", OptionList))
