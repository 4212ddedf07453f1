"""Assignments, `export`/`declare`/`local`/`readonly` and `unset`."""

from __future__ import annotations

from typing import Any

from ckpt_doctor.facts.program.shell.env import _Env, _Var
from ckpt_doctor.facts.program.shell.expand import _NAME
from ckpt_doctor.facts.program.shell.limits import _MAX_VALUE
from ckpt_doctor.facts.program.shell.program import Word
from ckpt_doctor.facts.program.shell.walk import _Ctx


class Assign:
    def assign(
        self,
        name: str,
        var: _Var,
        off: int,
        record: bool = True,
        word: Word | None = None,
        exported: bool | None = None,
    ) -> None:
        old = self.env.get(name)
        exp = exported if exported is not None else (old.exported if old is not None else False) or self.allexport
        var = _Var(var.value, var.unresolved, exp, var.array, var.assumed, True, var.partial)
        self.env = self.env.set(name, var)
        for t in self.tracking:
            t.add(name)
        if record and not self.dry and word is not None:
            self.assignments.append((name, word, exp, self.pos(off)[0]))

    def _assignment_parts(self, node: Any) -> tuple[str, str | None, bool, Any]:
        """(name, subscript, append, value node) of a variable_assignment node."""
        name_node = node.child_by_field_name("name")
        value = node.child_by_field_name("value")
        sub: str | None = None
        if name_node is not None and name_node.type == "subscript":
            n2 = name_node.child_by_field_name("name")
            idx = name_node.child_by_field_name("index")
            name = self.text(n2) if n2 is not None else self.text(name_node)
            sub = self.text(idx) if idx is not None else ""
        else:
            name = self.text(name_node) if name_node is not None else self.text(node).split("=")[0].rstrip("+")
        append = any(ch.type == "+=" for ch in node.children)
        return name, sub, append, value

    def eval_assignment(self, node: Any, env_for_values: _Env | None = None) -> tuple[str, _Var, Word]:
        name, sub, append, value = self._assignment_parts(node)
        ln, col = self.pos(node.start_byte)
        saved = self.env
        if env_for_values is not None:
            self.env = env_for_values
        try:
            old = self.env.get(name)
            if value is not None and value.type == "array":
                items: list[str] = []
                unres: list[str] = []
                assumed: list[str] = []
                for el in value.named_children:
                    if el.type == "comment":
                        continue
                    w = self.word(el)
                    if w.fields is None:
                        unres += [u for u in w.unresolved if u not in unres]
                    else:
                        items += list(w.fields)
                    assumed += list(w.assumed)
                if append and old is not None:
                    if old.array is None and old.value is None:
                        unres += list(old.unresolved or (name,))
                    items = list(old.array if old.array is not None else ([old.value] if old.value else [])) + items
                raw = self.text(value)
                joined = " ".join(items)
                word = Word(
                    raw,
                    None if unres else joined,
                    tuple(unres),
                    *self.pos(value.start_byte),
                    partial=joined,
                    fields=None if unres else tuple(items),
                    assumed=tuple(assumed),
                )
                var = _Var(
                    None if unres else joined,
                    tuple(unres),
                    array=None if unres else tuple(items),
                    assumed=tuple(assumed),
                )
                return name, var, word
            if value is None:
                word = Word("", "", (), ln, col + len(name) + 1, partial="", fields=("",))
            else:
                word = self.word(value, assign=True)
            val, unres = word.value, word.unresolved
            if append and old is not None:
                if old.array is not None and sub is None:
                    items = [*old.array, val] if val is not None else list(old.array)
                    return name, _Var(" ".join(items), unres, array=tuple(items)), word
                if old.value is None:
                    unres = tuple(dict.fromkeys((*old.unresolved, *unres)))
                    val = None
                elif val is not None:
                    val = old.value + val
            if sub is not None:
                # A[i]=x: keep what is known of the array
                arr = list(old.array) if old is not None and old.array is not None else None
                if arr is not None and val is not None and sub.isdigit() and int(sub) <= len(arr):
                    idx = int(sub)
                    if idx == len(arr):
                        arr.append(val)
                    else:
                        arr[idx] = val
                    return name, _Var(" ".join(arr), (), array=tuple(arr)), word
                if old is None and sub in ("0", "") and val is not None:
                    return name, _Var(val, (), array=(val,)), word
                return name, _Var(None, (name,)), word
            if val is not None and len(val) > _MAX_VALUE:
                return name, _Var(None, (f"{name} (too long)",)), word
            return name, _Var(val, unres, assumed=word.assumed, partial=None if val is not None else word.partial), word
        finally:
            self.env = saved

    def bare_assignments(self, node: Any, ctx: _Ctx) -> None:
        nodes = (
            [node]
            if node.type == "variable_assignment"
            else [ch for ch in node.named_children if ch.type == "variable_assignment"]
        )
        for n in nodes:
            self.substitutions(n, ctx)
            name, var, word = self.eval_assignment(n)
            self.assign(name, var, n.start_byte, word=word)

    def declaration(self, node: Any, ctx: _Ctx) -> None:
        kids = node.children
        keyword = kids[0].type if kids else "export"
        words: list[Word] = []
        export = keyword == "export"
        unexport = False
        array_flag = False
        for ch in kids[1:]:
            if not ch.is_named or ch.type == "comment":
                continue
            if ch.type == "variable_assignment":
                self.substitutions(ch, ctx)
                name, var, word = self.eval_assignment(ch)
                v = word.value
                words.append(
                    Word(
                        self.text(ch),
                        None if v is None else f"{name}={v}",
                        word.unresolved,
                        *self.pos(ch.start_byte),
                        partial=f"{name}={word.text}",
                        fields=None if v is None else (f"{name}={v}",),
                    )
                )
                if keyword == "local" and ctx.function is None:
                    continue
                self.assign(
                    name, var, ch.start_byte, word=word, exported=True if export else (False if unexport else None)
                )
                continue
            w = self.word(ch)
            words.append(w)
            txt = w.text
            if txt.startswith(("-", "+")) and len(txt) > 1 and not _NAME.fullmatch(txt):
                if "x" in txt:
                    export = txt.startswith("-")
                    unexport = txt.startswith("+") or (keyword == "export" and "n" in txt)
                if keyword == "export" and txt == "-n":
                    export, unexport = False, True
                if "a" in txt or "A" in txt:
                    array_flag = True
                continue
            if _NAME.fullmatch(txt):
                old = self.env.get(txt)
                if export or unexport:
                    if old is not None:
                        self.env = self.env.set(
                            txt,
                            _Var(
                                old.value,
                                old.unresolved,
                                export and not unexport,
                                old.array,
                                old.assumed,
                                old.scripted,
                                old.partial,
                            ),
                        )
                    elif export:
                        # `export NAME` of an unknown name: its value is whatever the image has
                        self.env = self.env.set(txt, _Var(None, (txt,), True))
                elif old is None and keyword in ("declare", "typeset", "local", "readonly"):
                    self.env = self.env.set(txt, _Var("", (), False, () if array_flag else None))
        ln, _ = self.pos(node.start_byte)
        argv = [
            Word(keyword, keyword, (), ln, self.pos(node.start_byte)[1], partial=keyword, fields=(keyword,)),
            *words,
        ]
        self.record(node, argv, ctx, [], {}, name=keyword)

    def unset(self, node: Any, ctx: _Ctx) -> None:
        func = False
        words = []
        for ch in node.named_children:
            w = self.word(ch)
            words.append(w)
            if w.text == "-f":
                func = True
                continue
            if w.text.startswith("-"):
                continue
            if func:
                self.functions.pop(w.text, None)
            else:
                self.env = self.env.unset(w.text)
                for t in self.tracking:
                    t.add(w.text)
        ln, col = self.pos(node.start_byte)
        self.record(
            node,
            [Word("unset", "unset", (), ln, col, partial="unset", fields=("unset",)), *words],
            ctx,
            [],
            {},
            name="unset",
        )
