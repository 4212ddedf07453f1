"""The walk over the statement tree: sequences, branches, loops, functions, pipelines, subshells
and substitutions, each with its context.
"""

from __future__ import annotations

import bisect
import posixpath
import re
import sys
from collections.abc import Mapping, Sequence
from typing import Any

from ckpt_doctor.facts.program.shell.env import _Env, _Var
from ckpt_doctor.facts.program.shell.heredoc import _HD, _prescan
from ckpt_doctor.facts.program.shell.limits import _MAX_DEPTH
from ckpt_doctor.facts.program.shell.program import Command, HereDoc, ShellProgram, Trap, Word

_PARSER: Any = None


def _parser() -> Any:
    global _PARSER
    if _PARSER is None:
        import tree_sitter
        import tree_sitter_bash

        _PARSER = tree_sitter.Parser(tree_sitter.Language(tree_sitter_bash.language()))
    return _PARSER


class _Ctx:
    __slots__ = (
        "background",
        "conditional",
        "function",
        "pipeline",
        "redirected",
        "subshell",
        "substitution",
        "within",
    )

    def __init__(self) -> None:
        self.conditional = False
        self.pipeline = False
        self.background = False
        self.subshell = False
        self.substitution = False
        self.redirected = False
        self.function: str | None = None
        self.within: tuple[str, ...] = ()

    def but(self, **kw: Any) -> _Ctx:
        c = _Ctx()
        for k in self.__slots__:
            setattr(c, k, getattr(self, k))
        for k, v in kw.items():
            if k == "within":
                c.within = (*self.within, v)
            else:
                setattr(c, k, v)
        return c


def _key(node: Any) -> tuple[int, int, str]:
    return node.start_byte, node.end_byte, node.type


def _same(a: Any, b: Any) -> bool:
    return a is not None and b is not None and _key(a) == _key(b)


_STATEMENTS = {
    "command",
    "redirected_statement",
    "variable_assignment",
    "variable_assignments",
    "declaration_command",
    "unset_command",
    "pipeline",
    "list",
    "negated_command",
    "subshell",
    "compound_statement",
    "if_statement",
    "while_statement",
    "for_statement",
    "c_style_for_statement",
    "case_statement",
    "function_definition",
    "test_command",
    "ERROR",
    "select_statement",
}


class Walk:
    def __init__(
        self,
        script: str,
        shell: str,
        env: Mapping[str, str] | None,
        cwd: str | None,
        args: Sequence[str] | None,
        depth: int,
    ) -> None:
        self.src = script
        self.shell = shell
        self.depth_inner = depth
        base: dict[str, _Var] = {}
        for k, v in (env or {}).items():
            base[str(k)] = _Var(str(v), exported=True)
        self.env = _Env(base)
        self.cwd = posixpath.normpath(cwd) if cwd and cwd.startswith("/") else None
        self.oldpwd: str | None = None
        self.dirstack: list[str | None] = []
        self.args: list[str] | None = list(args) if args is not None else None
        self.allexport = False
        self.commands: list[Command] = []
        self.assignments: list[tuple[str, Word, bool, int]] = []
        self.traps: list[Trap] = []
        self.trap_state: tuple[tuple[str, str, bool, int], ...] = ()
        self.errors: list[str] = []
        self.files: dict[str, str | None] = {}
        self.functions: dict[str, Any] = {}  # name -> body node
        self.function_lines: dict[str, int] = {}
        self.fn_cmds: dict[str, set[str]] = {}
        self.tracking: list[set[str]] = []
        self.dry = 0
        self.depth = 0
        self.calls = 0
        self.by_node: dict[tuple[int, int], Command] = {}
        self.hd_by_op: dict[int, _HD] = {}
        self.hd_made: dict[int, HereDoc] = {}
        self.heredocs: list[HereDoc] = []
        self.hd_spans: list[tuple[int, int]] = []
        self.line_starts: list[int] = [0]
        for m in re.finditer("\n", script):
            self.line_starts.append(m.end())
        self.cur_fn_cmds: set[str] | None = None

    def pos(self, off: int) -> tuple[int, int]:
        ln = bisect.bisect_right(self.line_starts, off) - 1
        return ln, off - self.line_starts[ln]

    def text(self, node: Any) -> str:
        return self.src[node.start_byte : node.end_byte]

    def run(self) -> ShellProgram:
        mod, hds, errs = _prescan(self.src)
        self.errors += errs
        for hd in hds:
            self.hd_by_op[hd.op] = hd
            if hd.body_start >= 0:
                stop = hd.end + 1 if self.src[hd.end : hd.end + 1] == "\n" else hd.end
                self.hd_spans.append((hd.body_start, stop))
        tree = _parser().parse(mod.encode("ascii", "replace"))
        root = tree.root_node
        if root.has_error:
            self._collect_errors(root)
        self.walk_seq(root, _Ctx())
        self.commands.sort(key=lambda c: c._start)
        prog = ShellProgram(
            shell=self.shell,
            script=self.src,
            commands=self.commands,
            assignments=self.assignments,
            traps=self.traps,
            errors=self.errors,
            heredocs=self.heredocs,
            files=self.files,
            functions=dict(self.function_lines),
        )
        prog._fn_cmds = self.fn_cmds
        self._tail_analysis(root, prog)
        return prog

    def _collect_errors(self, root: Any) -> None:
        stack = [root]
        seen = 0
        while stack and seen < 20:
            n = stack.pop()
            if n.is_missing:
                ln, _ = self.pos(n.start_byte)
                self.errors.append(f"line {ln + 1}: syntax error: missing `{n.type}`")
                seen += 1
                continue
            if n.type == "ERROR":
                ln, _ = self.pos(n.start_byte)
                snippet = self.src[n.start_byte : n.end_byte].strip().split("\n")[0][:40]
                self.errors.append(f"line {ln + 1}: syntax error near `{snippet}`")
                seen += 1
            if n.has_error:
                stack.extend(reversed(n.children))

    def walk_seq(self, node: Any, ctx: _Ctx) -> None:
        """Walk the statements that are children of node (program, compound, do_group, ERROR...)."""
        kids = node.children
        for k, child in enumerate(kids):
            if not child.is_named or child.type == "comment":
                continue
            bg = k + 1 < len(kids) and kids[k + 1].type == "&"
            c = ctx.but(background=True) if bg else ctx
            self.guarded(child, c)

    def guarded(self, node: Any, ctx: _Ctx) -> None:
        if sys.modules[__package__]._STRICT:  # type: ignore[attr-defined]
            self.stmt(node, ctx)
            return
        try:
            self.stmt(node, ctx)
        except RecursionError:
            self.errors.append(f"line {self.pos(node.start_byte)[0] + 1}: nesting too deep to read")
        except Exception as exc:  # never let a strange script break the caller
            self.errors.append(f"line {self.pos(node.start_byte)[0] + 1}: could not read ({type(exc).__name__})")

    def stmt(self, node: Any, ctx: _Ctx) -> None:
        self.depth += 1
        try:
            if self.depth > _MAX_DEPTH:
                if self.depth == _MAX_DEPTH + 1:
                    self.errors.append(f"line {self.pos(node.start_byte)[0] + 1}: nesting too deep to read")
                return
            self._stmt(node, ctx)
        finally:
            self.depth -= 1

    def _stmt(self, node: Any, ctx: _Ctx) -> None:
        t = node.type
        if t == "command":
            self.simple(node, ctx, [])
        elif t == "redirected_statement":
            self.redirected(node, ctx)
        elif t in ("variable_assignment", "variable_assignments"):
            self.bare_assignments(node, ctx)
        elif t == "declaration_command":
            self.declaration(node, ctx)
        elif t == "unset_command":
            self.unset(node, ctx)
        elif t == "pipeline":
            self.pipeline(node, ctx)
        elif t == "list":
            self.list_(node, ctx)
        elif t == "negated_command":
            for ch in node.named_children:
                before = len(self.commands)
                self.stmt(ch, ctx.but(within="!") if ch.type not in ("command", "redirected_statement") else ctx)
                for cmd in self.commands[before:]:
                    if not cmd.substitution:
                        cmd.negated = True
        elif t == "subshell":
            self.isolated(lambda: self.walk_seq(node, ctx.but(conditional=True, subshell=True, within="subshell")))
        elif t == "compound_statement":
            self.walk_seq(node, ctx.but(conditional=True, within="group"))
        elif t == "if_statement":
            self.if_(node, ctx)
        elif t in ("while_statement", "for_statement", "c_style_for_statement", "select_statement"):
            self.loop(node, ctx)
        elif t == "case_statement":
            self.case(node, ctx)
        elif t == "function_definition":
            self.function(node, ctx)
        elif t in ("test_command", "arithmetic_expansion", "binary_expression", "unary_expression"):
            self.substitutions(node, ctx)
        elif t == "ERROR":
            self.walk_seq(node, ctx)
        elif t in ("heredoc_body", "heredoc_redirect", "file_redirect", "herestring_redirect"):
            pass
        else:
            # words and other odd statements (a lone `$(cmd)`, `((...))`...)
            self.substitutions(node, ctx)
            for ch in node.named_children:
                if ch.type in _STATEMENTS:
                    self.stmt(ch, ctx)

    def isolated(self, fn: Any) -> None:
        """Run fn in a subshell: its assignments, cd and traps do not survive it."""
        env, cwd, traps, args = self.env, self.cwd, self.trap_state, self.args
        oldpwd, stack, allexport = self.oldpwd, list(self.dirstack), self.allexport
        try:
            fn()  # files it writes stay written
        finally:
            self.env, self.cwd, self.trap_state, self.args = env, cwd, traps, args
            self.oldpwd, self.dirstack, self.allexport = oldpwd, stack, allexport

    def branches(self, runs: list[Any], fallthrough: bool) -> None:
        """Run each branch from the same state; afterwards a variable differing between them is ambiguous."""
        env0, cwd0, traps0 = self.env, self.cwd, self.trap_state
        results = []
        assigned: set[str] = set()
        for run in runs:
            self.env, self.cwd, self.trap_state = env0, cwd0, traps0
            track: set[str] = set()
            self.tracking.append(track)
            try:
                run()
            finally:
                self.tracking.pop()
            assigned |= track
            results.append((self.env, self.cwd, self.trap_state))
        if fallthrough:
            results.append((env0, cwd0, traps0))
        env = env0
        for name in assigned:
            vals = [r[0].get(name) for r in results]
            first = vals[0]
            if all(v == first for v in vals):
                env = env.set(name, first) if first is not None else env.unset(name)
            else:
                exported = any(v is not None and v.exported for v in vals)
                env = env.set(name, _Var(None, (name,), exported))
        self.env = env
        cwds = {r[1] for r in results}
        self.cwd = cwds.pop() if len(cwds) == 1 else None
        trap_sets = {r[2] for r in results}
        if len(trap_sets) == 1:
            self.trap_state = trap_sets.pop()
        else:
            merged: dict[str, tuple[str, str, bool, int]] = {}
            for ts in trap_sets:
                for tr in ts:
                    merged.setdefault(tr[0], (tr[0], tr[1], True, tr[3]))
            self.trap_state = tuple(merged.values())
        for track in self.tracking:
            track |= assigned

    def redirected(self, node: Any, ctx: _Ctx) -> None:
        body = node.child_by_field_name("body")
        redirects = [ch for ch in node.children if ch.type.endswith("_redirect")]
        if body is None:
            # `> file` alone, or a body tree-sitter lost
            for ch in node.named_children:
                if ch.type in _STATEMENTS:
                    self.stmt(ch, ctx)
            return
        if body.type == "command":
            self.simple(body, ctx, redirects, outer=node)
            return
        c = ctx.but(redirected=True)
        self.stmt(body, c)
        for r in redirects:
            self.substitutions(r, ctx)

    def pipeline(self, node: Any, ctx: _Ctx) -> None:
        kids = node.children
        for k, ch in enumerate(kids):
            if not ch.is_named:
                continue
            both = k + 1 < len(kids) and kids[k + 1].type == "|&"
            c = ctx.but(pipeline=True)
            if both:
                c = c.but(redirected=True)
            self.isolated(lambda ch=ch, c=c: self.stmt(ch, c))

    def _flatten_list(self, node: Any) -> list[tuple[str, Any]]:
        out: list[tuple[str, Any]] = []
        stack: list[tuple[str, Any]] = [("", node)]
        while stack:
            op, n = stack.pop()
            if n.type == "list":
                kids = n.children
                named = [c for c in kids if c.is_named]
                ops = [c.type for c in kids if not c.is_named]
                if len(named) == 2 and ops:
                    stack.append((ops[0], named[1]))
                    stack.append((op, named[0]))
                    continue
            out.append((op, n))
        return out

    def list_(self, node: Any, ctx: _Ctx) -> None:
        items = self._flatten_list(node)
        if not items:
            return
        first = items[0][1]
        self.stmt(first, ctx)
        rest = items[1:]
        if not rest:
            return

        def run() -> None:
            for _op, n in rest:
                self.stmt(n, ctx.but(conditional=True))

        self.branches([run], fallthrough=True)

    def if_(self, node: Any, ctx: _Ctx) -> None:
        c = ctx.but(conditional=True, within="if")
        branches: list[list[Any]] = [[]]
        has_else = False
        phase = "cond"
        for ch in node.children:
            t = ch.type
            if t == "then":
                phase = "body"
                continue
            if t in ("if", "fi", ";", "&"):
                continue
            if t == "elif_clause":
                branches.append([ch])
                continue
            if t == "else_clause":
                has_else = True
                branches.append([ch])
                continue
            if not ch.is_named or t == "comment":
                continue
            if phase == "cond":
                self.stmt(ch, c)
            else:
                branches[0].append(ch)

        def runner(nodes: list[Any]) -> Any:
            def run() -> None:
                for n in nodes:
                    if n.type == "elif_clause":
                        self.if_(n, ctx)
                    elif n.type == "else_clause":
                        self.walk_seq(n, c)
                    else:
                        self.stmt(n, c)

            return run

        self.branches([runner(b) for b in branches], fallthrough=not has_else)

    def loop(self, node: Any, ctx: _Ctx) -> None:
        kind = {
            "while_statement": "while",
            "for_statement": "for",
            "c_style_for_statement": "for",
            "select_statement": "select",
        }[node.type]
        c = ctx.but(conditional=True, within=kind)
        body = node.child_by_field_name("body")
        var = node.child_by_field_name("variable")
        words: list[Word] = []
        for ch in node.children:
            if _same(ch, body) or _same(ch, var) or not ch.is_named or ch.type == "comment":
                continue
            if node.type == "for_statement":
                if ch.type not in ("variable_name",):
                    words.append(self.word(ch))
                    self.substitutions(ch, ctx)
            elif node.type == "while_statement":
                self.stmt(ch, c)

        def run() -> None:
            if var is not None:
                name = self.text(var)
                vals = [f for w in words for f in (w.fields or ())]
                if len(vals) == 1 and all(w.value is not None for w in words):
                    self.assign(name, _Var(vals[0]), var.start_byte, record=False)
                else:
                    self.assign(name, _Var(None, (name,)), var.start_byte, record=False)
            if body is not None:
                self.walk_seq(body, c)

        self.branches([run], fallthrough=True)

    def case(self, node: Any, ctx: _Ctx) -> None:
        c = ctx.but(conditional=True, within="case")
        items = [ch for ch in node.named_children if ch.type == "case_item"]
        for ch in node.named_children:
            if ch.type != "case_item":
                self.substitutions(ch, ctx)

        def runner(item: Any) -> Any:
            def run() -> None:
                value_nodes = {_key(v) for v in item.children_by_field_name("value")}
                for ch in item.named_children:
                    if _key(ch) in value_nodes or ch.type == "comment":
                        continue
                    self.stmt(ch, c)

            return run

        self.branches([runner(i) for i in items], fallthrough=True)

    def function(self, node: Any, ctx: _Ctx) -> None:
        name_node = node.child_by_field_name("name")
        body = node.child_by_field_name("body")
        name = self.text(name_node) if name_node is not None else "?"
        self.functions[name] = body
        self.function_lines[name] = self.pos(node.start_byte)[0]
        if body is None:
            return
        saved = self.cur_fn_cmds
        self.cur_fn_cmds = set()
        c = ctx.but(conditional=True, function=name, within=f"function {name}")
        args = self.args
        self.args = None  # positional parameters are the function's own
        try:
            self.isolated(lambda: self.stmt(body, c) if body.type != "compound_statement" else self.walk_seq(body, c))
        finally:
            self.args = args
            self.fn_cmds[name] = self.cur_fn_cmds
            self.cur_fn_cmds = saved

    def call_function(self, name: str, ctx: _Ctx) -> None:
        """A call: run the body again, recording nothing, so its assignments and cd take effect."""
        body = self.functions.get(name)
        if body is None or self.dry > 4 or self.calls > 2000:
            return
        self.calls += 1
        self.dry += 1
        args = self.args
        self.args = None
        try:
            if body.type == "compound_statement":
                self.walk_seq(body, ctx.but(function=name))
            else:
                self.stmt(body, ctx.but(function=name))
        finally:
            self.args = args
            self.dry -= 1

    def substitutions(self, node: Any, ctx: _Ctx) -> None:
        """Record the commands inside $(...), `...` and <(...) found under node."""
        stack = [node]
        root = True
        while stack:
            n = stack.pop()
            if n.type in ("command_substitution", "process_substitution"):
                what = "$(...)" if n.type == "command_substitution" else "<(...)"
                c = ctx.but(substitution=True, within=what)
                self.isolated(lambda n=n, c=c: self.walk_seq(n, c))
                continue
            if root or n.type in (
                "string",
                "concatenation",
                "expansion",
                "arithmetic_expansion",
                "word",
                "array",
                "test_command",
                "binary_expression",
                "unary_expression",
                "parenthesized_expression",
                "file_redirect",
                "herestring_redirect",
                "command_name",
                "subscript",
                "translated_string",
                "variable_assignment",
                "simple_expansion",
                "ternary_expression",
                "postfix_expression",
                "heredoc_body",
                "redirected_statement",
                "negated_command",
                "case_item",
                "number",
                "command",
                "declaration_command",
                "unset_command",
                "ansi_c_string",
                "raw_string",
                "variable_assignments",
                "extglob_pattern",
                "regex",
            ):
                stack.extend(reversed(n.named_children))
            root = False
