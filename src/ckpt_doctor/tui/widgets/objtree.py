"""The objects of one TrainJob as a tree, each node marked and coloured by its health.

Children are added when a node is first expanded, so a JobSet with hundreds of pods costs
nothing until someone opens it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.style import Style
from rich.text import Text
from textual.binding import Binding
from textual.widgets import Tree
from textual.widgets.tree import TreeNode

from ckpt_doctor.tui.widgets.guard import Guarded
from ckpt_doctor.tui.widgets.tone import HEALTH_TEXT_STYLE, HEALTH_VAR

if TYPE_CHECKING:
    from ckpt_doctor.tui.model import ObjNode


def _health_css() -> str:
    rules = [
        f"& > .objtree--{h} {{ color: ${v};"
        + (f" text-style: {HEALTH_TEXT_STYLE[h]};" if h in HEALTH_TEXT_STYLE else "")
        + " }"
        for h, v in HEALTH_VAR.items()
    ]
    return "ObjectTree {\n" + "\n".join(rules) + "\n& > .objtree--note { color: $foreground-muted; }\n}"


class ObjectTree(Guarded, Tree["ObjNode"]):
    # one class per health (a TrainJob without status is `info`); a health without one is drawn plain
    COMPONENT_CLASSES = {f"objtree--{h}" for h in HEALTH_VAR} | {"objtree--note"}
    DEFAULT_CSS = _health_css()

    BINDINGS = [
        Binding("j", "cursor_down", "Down", show=False),
        Binding("k", "cursor_up", "Up", show=False),
        Binding("g", "scroll_home", "Top", show=False),
        Binding("G", "scroll_end", "Bottom", show=False),
        Binding("right,l", "open", "Expand", show=False),
        Binding("left,h", "fold", "Fold", show=False),
    ]

    def __init__(self, id: str | None = None) -> None:
        super().__init__("TrainJob", id=id)
        self.show_root = True
        self.guide_depth = 3

    def show(self, root: ObjNode) -> None:
        """Show a (new) tree; after a refresh the same objects stay open and selected."""
        shown = [n for n in self._walk(self.root) if n.data is not None and n.data.ref]
        opened = {n.data.ref for n in shown if n.is_expanded}  # type: ignore[union-attr]
        closed = {n.data.ref for n in shown if not n.is_expanded and n.allow_expand}  # type: ignore[union-attr]
        cursor = self.cursor_node.data.ref if self.cursor_node is not None and self.cursor_node.data else None
        self.clear()
        self.root.set_label(self._label(root))
        self.root.data = root
        self._fill(self.root, root)
        self.root.expand()
        self._open(self.root, opened, closed)
        if cursor:
            node = self.find_ref(cursor)
            if node is not None:
                self.move_cursor(node)

    def _walk(self, node: TreeNode[ObjNode]):
        yield node
        for child in node.children:
            yield from self._walk(child)

    def _label(self, n: ObjNode) -> Text:
        return Text(f"{n.mark} {n.kind} {n.name}" + (f"  {n.note}" if n.note else ""), no_wrap=True, end="")

    def _fill(self, node: TreeNode[ObjNode], data: ObjNode) -> None:
        for child in data.children:
            t = node.add(self._label(child), data=child, allow_expand=bool(child.children))
            t._filled = False  # type: ignore[attr-defined]
        node._filled = True  # type: ignore[attr-defined]

    def _open(self, node: TreeNode[ObjNode], opened: set[str], closed: set[str]) -> None:
        for child in node.children:
            d = child.data
            if d is None or not d.children:
                continue
            if (d.expand and d.ref not in closed) or d.ref in opened:
                self._fill(child, d)
                child.expand()
                self._open(child, opened, closed)

    def action_open(self) -> None:
        """→ / l: expand a folded node; on an open one, go to its first child."""
        node = self.cursor_node
        if node is None:
            return
        if node.allow_expand and not node.is_expanded:
            node.expand()
        elif node.children:
            self.move_cursor(node.children[0])

    def action_fold(self) -> None:
        """← / h: fold an open node; on a folded one (or a leaf), go to its parent."""
        node = self.cursor_node
        if node is None:
            return
        if node.is_expanded and node.children and node is not self.root:
            node.collapse()
        elif node.parent is not None:
            self.move_cursor(node.parent)

    def on_tree_node_expanded(self, event: Tree.NodeExpanded[ObjNode]) -> None:
        node = event.node
        if node.data is not None and not getattr(node, "_filled", True):
            self._fill(node, node.data)

    def render_label(self, node: TreeNode[ObjNode], base_style: Style, style: Style) -> Text:
        # also called while the tree measures its lines, outside of drawing: guarded here too
        if self.broken is None:
            try:
                return self._styled_label(node, base_style, style)
            except Exception as e:
                self._fail(e)
        return Text(str(node.label), no_wrap=True, end="")

    def _styled_label(self, node: TreeNode[ObjNode], base_style: Style, style: Style) -> Text:
        text = super().render_label(node, base_style, style)
        data = node.data
        if data is None or (node._line != -1 and node._line == self.cursor_line):
            return text  # the cursor row keeps the cursor's colours (health ones on it would not read)
        prefix = len(text) - len(node._label)
        head = len(data.mark) + len(data.kind) + len(data.name) + 2
        if data.health in HEALTH_VAR:
            text.stylize(
                self.get_component_rich_style(f"objtree--{data.health}", partial=True),
                prefix,
                prefix + (len(data.mark) if data.health == "ok" else head),
            )
        if data.note:
            text.stylize(self.get_component_rich_style("objtree--note", partial=True), prefix + head)
        return text

    def find_ref(self, ref: str) -> TreeNode[ObjNode] | None:
        """The node of object `ref`, expanding its ancestors on the way."""

        def walk(node: TreeNode[ObjNode]) -> TreeNode[ObjNode] | None:
            if node.data is not None and node.data.ref == ref:
                return node
            if node.data is not None and not getattr(node, "_filled", True):
                if not any(d.ref == ref for d in node.data.walk()):
                    return None
                self._fill(node, node.data)
            for child in node.children:
                hit = walk(child)
                if hit is not None:
                    node.expand()
                    return hit
            return None

        return walk(self.root)
