"""Overview: the verdict on top, the TrainJob's objects below, each coloured by health."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, VerticalScroll
from textual.content import Content
from textual.widgets import Static, Tree

from ckpt_doctor.tui.screens.base import DoctorScreen
from ckpt_doctor.tui.widgets.guard import SafeStatic
from ckpt_doctor.tui.widgets.objtree import ObjectTree
from ckpt_doctor.tui.widgets.tone import HEALTH_VAR, var
from ckpt_doctor.tui.widgets.verdict import VerdictPanel

if TYPE_CHECKING:
    from ckpt_doctor.tui.model import ObjNode, View


class OverviewScreen(DoctorScreen):
    TAB = "overview"
    BINDINGS = [
        Binding("y", "yaml", "YAML"),
        Binding("d", "describe", "Describe"),
        Binding("L", "logs", "Pod log", key_display="L"),
        Binding("v", "open_verdict", "Verdict"),
    ]

    wanted_kind = ""  # select the first node of this kind once the tree is shown

    def body(self) -> ComposeResult:
        yield VerdictPanel(id="verdict")
        with Horizontal(id="overview-body"):
            yield ObjectTree(id="tree")
            with VerticalScroll(id="detail"):
                yield SafeStatic(id="detail-text")

    def show_loading(self) -> None:
        self.query_one("#verdict", VerdictPanel).message(
            Content.styled(f"⟳ Diagnosing {self.doctor.current or ''}…", "$foreground-muted")
        )

    def show_failed(self, why: str) -> None:
        super().show_failed(why)
        self.query_one("#verdict", VerdictPanel).message(Content.styled(f"✗ {why}", "$text-error"))

    def show_view(self, view: View) -> None:
        super().show_view(view)
        self.query_one("#verdict", VerdictPanel).show(view)
        tree = self.query_one("#tree", ObjectTree)
        tree.auto_expand = False
        tree.show(view.tree)
        self._detail(view.tree)
        if self.wanted_kind:
            self.select_kind(self.wanted_kind)

    def select_kind(self, kind: str) -> None:
        """Put the cursor on the first object of `kind` (opening the nodes above it)."""
        view = self.doctor.view
        if not self.ready or view is None:
            self.wanted_kind = kind
            return
        self.wanted_kind = ""
        first = next((n for n in view.tree.walk() if n.kind == kind and n.ref), None)
        tree = self.query_one("#tree", ObjectTree)
        node = tree.find_ref(first.ref) if first is not None and first.ref else None
        if node is None:
            self.notify(f"No {kind} of this TrainJob in the snapshot.", severity="warning")
            return
        tree.move_cursor(node)
        self.focus_now(tree)

    def selected_ref(self) -> str:
        n = self._selected()
        return n.ref or "" if n is not None else ""

    def _selected(self) -> ObjNode | None:
        node = self.query_one("#tree", ObjectTree).cursor_node
        return node.data if node is not None else None

    def on_tree_node_highlighted(self, event: Tree.NodeHighlighted[ObjNode]) -> None:
        if event.node.data is not None:
            self._detail(event.node.data)

    def on_tree_node_selected(self, event: Tree.NodeSelected[ObjNode]) -> None:
        data = event.node.data
        if data is not None and data.ref:
            self.doctor.open_object(data.ref, "")

    def _detail(self, n: ObjNode) -> None:
        view = self.doctor.view
        parts: list[Any] = [(f"{n.mark} ", var(HEALTH_VAR[n.health])), (f"{n.kind} {n.name}", "bold")]
        if n.note:
            parts += ["\n", (n.note, var("foreground-muted"))]
        if n.findings:
            parts += ["\n\nFailing rules that cite it:"]
            for rid in n.findings:
                parts += ["\n  ", ("✗ ", var("text-error")), (rid, f"underline @click=screen.open_finding('{rid}')")]
        raw = view.objects.get(n.ref or "") if view is not None else None
        if raw:
            conds = (raw.get("status") or {}).get("conditions") or []
            if conds:
                parts += ["\n\nConditions:"]
                for c in conds[:8]:
                    if isinstance(c, dict):
                        ok = str(c.get("status")) == "True"
                        parts += [
                            "\n  ",
                            (f"{c.get('type')}={c.get('status')}", "bold" if ok else ""),
                            (f" {c.get('reason') or ''}", var("foreground-muted")),
                        ]
            parts += [
                ("\n\nenter/y: YAML   d: describe" + ("   L: log" if n.kind == "Pod" else ""), var("foreground-muted"))
            ]
        self.query_one("#detail-text", Static).update(Content.assemble(*parts))

    def action_yaml(self) -> None:
        n = self._selected()
        if n is not None and n.ref:
            self.doctor.open_object(n.ref, "")
        else:
            self.notify("This node is not an object in the snapshot.", severity="warning")

    def action_describe(self) -> None:
        n = self._selected()
        if n is not None and n.ref:
            self.doctor.open_describe(n.ref)
        else:
            self.notify("This node is not an object in the snapshot.", severity="warning")

    def action_logs(self) -> None:
        n = self._selected()
        view = self.doctor.view
        if n is None or n.kind != "Pod" or view is None:
            self.notify("Select a pod to see its logs.", severity="warning")
            return
        entry = next((e for e in view.logs if e.key[0] == n.name), None)
        if entry is None:
            self.notify(f"No log of {n.name} in the snapshot.", severity="warning")
            return
        self.doctor.open_log(entry.key)

    def action_open_verdict(self) -> None:
        view = self.doctor.view
        if view is not None and view.verdict:
            self.action_open_finding(view.verdict[0].symptom.id)

    def action_open_finding(self, rule_id: str) -> None:
        self.doctor.open_finding(rule_id)
