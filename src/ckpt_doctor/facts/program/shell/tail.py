"""How the trainer is run: whether bash replaces itself with the last command (exec, PID 1,
pipelines, traps).
"""

from __future__ import annotations

import re
from typing import Any

from ckpt_doctor.facts.program.shell.program import Command, ShellProgram
from ckpt_doctor.facts.program.shell.quoting import _describe_within, _short


class Tail:
    def _tail_analysis(self, root: Any, prog: ShellProgram) -> None:
        """Mark `last`, and say why bash would not replace itself with the last command."""
        kids = root.children
        stmts = [(k, c) for k, c in enumerate(kids) if c.is_named and c.type not in ("comment",)]
        if not stmts:
            return
        k_last, last = stmts[-1]
        problems: list[str] = []
        bg = k_last + 1 < len(kids) and kids[k_last + 1].type == "&"
        node = last
        is_list = False
        if node.type == "list":
            items = self._flatten_list(node)
            node = items[-1][1]
            is_list = True
        negated = False
        if node.type == "negated_command":
            negated = True
            inner = [c for c in node.named_children]
            node = inner[0] if inner else node
        redirected = False
        if node.type == "redirected_statement":
            body = node.child_by_field_name("body")
            if body is not None and body.type == "command":
                redirected = True
                node = body
        cmds: list[Command] = []
        if node.type == "pipeline":
            for ch in node.named_children:
                b = ch.child_by_field_name("body") if ch.type == "redirected_statement" else ch
                if b is not None and b.type == "command":
                    c = self._cmd_for(b)
                    if c is not None:
                        cmds.append(c)
            problems.append("the last command runs in a pipeline (`a | b`), so bash has to stay and wait for it")
        elif node.type == "command":
            c = self._cmd_for(node)
            if c is not None:
                cmds.append(c)
        if not cmds:
            if last.type in ("variable_assignment", "variable_assignments"):
                prog._tail = ["the script ends with an assignment, not the trainer"]
            return
        for c in cmds:
            c.last = True
        tail = cmds[-1]
        prog._tail_cmd = tail
        if bg or tail.background:
            problems.append("the last command runs in the background (&)")
        if negated or tail.negated:
            problems.append("the last command is negated (`! cmd`)")
        if tail.timed:
            problems.append("the last command is timed (`time cmd`)")
        if tail.heredocs:
            problems.append("the trainer reads a here-document (`<<`), a redirection, so bash forks it")
        elif redirected or tail.redirects:
            red = (tail.redirects or ["..."])[0]
            problems.append(f"the last command has a redirection (`{_short(red, 30)}`), so bash forks it")
        if tail.within:
            problems.append(f"the last command runs inside {_describe_within(tail.within[-1])}")
        # traps in effect
        for sig, action, _cond, _line in tail._traps:
            if action == "" or sig in ("DEBUG", "RETURN"):
                continue
            problems.append(f"a trap is set (`trap ... {sig}`), so bash stays to run it")
            break
        # the same-line group: `a; b && T` and `a & T` are not optimised
        k_prev = stmts[-2][0] if len(stmts) > 1 else None
        if k_prev is not None:
            gap_nodes = kids[k_prev + 1 : k_last]
            gap = self.src[kids[k_prev].end_byte : last.start_byte]
            gap_clean = re.sub(r"\\\n", "", gap)
            gap_clean = re.sub(r"#[^\n]*", "", gap_clean)
            same_line = "\n" not in gap_clean
            seps = [g.type for g in gap_nodes if not g.is_named]
            if same_line and "&" in seps:
                problems.append("a command is sent to the background (&) earlier on the same line")
            elif same_line and ";" in seps and is_list:
                problems.append(
                    "it ends a `a; b && c` line: bash only replaces itself with the last command of "
                    "`a; c` or of `b && c`"
                )
        # nothing may follow the trainer's line in the -c string
        rest = self.src[last.end_byte :]
        if self.hd_spans:
            rest_parts = []
            pos = last.end_byte
            for a, b in sorted(self.hd_spans):
                if b <= pos:
                    continue
                a = max(a, pos)
                rest_parts.append(self.src[pos:a])
                pos = b
            rest_parts.append(self.src[pos:])
            rest = "".join(rest_parts)
        rest_c = re.sub(r"\\\n", "", rest)
        if not re.fullmatch(r"[ \t]*(?:[;&][ \t]*)?(?:#[^\n]*)?\n?", rest_c):
            after = rest_c.split("\n", 1)[1] if "\n" in rest_c else rest_c
            if after.strip() == "":
                what = "a blank line"
            elif after.lstrip().startswith("#"):
                what = "a comment line"
            else:
                what = f"`{_short(after.strip(), 30)}`"
            problems.append(
                f"{what} follows the trainer's line: bash replaces itself only when nothing at all is left "
                "of the -c string"
            )
        prog._tail = problems

    def _cmd_for(self, node: Any) -> Command | None:
        direct = self.by_node.get((node.start_byte, node.end_byte))
        if direct is not None:
            return direct
        for (a, b), cmd in self.by_node.items():
            if a <= node.start_byte and node.end_byte <= b and cmd.fields:
                return cmd
        return None
