"""The keyword calls that configure a framework (`TrainingArguments(...)`, `trainer.train(...)`),
found by the framework modules' hooks.
"""

from __future__ import annotations

import ast
from collections import defaultdict

from ckpt_doctor.facts.program.python.facts import (
    Call,
    Value,
)
from ckpt_doctor.facts.program.python.tree import (
    _last,
    _pos,
)


class Calls:
    def _local_class_bases(self, name: str) -> list[str] | None:
        c = self.classes.get(name)
        if c is None:
            return None
        return [self.qual(b) or self.seg(b) for b in c.bases]

    def _make_call(self, node: ast.Call, func: str, label: str | None = None) -> Call:
        kwargs: dict[str, Value] = {}
        for k in node.keywords:
            if k.arg is not None:
                kwargs[k.arg] = self.value(k.value, func, node)
                continue
            # **mapping: expand a literal dict or a name bound to one
            d = k.value
            if isinstance(d, ast.Name):
                b = self._nearest(d.id, node, func)
                d = b.value if b is not None and b.kind == "assign" and b.value is not None else d
            if isinstance(d, ast.Dict) and all(isinstance(x, ast.Constant) for x in d.keys):
                for kk, vv in zip(d.keys, d.values, strict=False):
                    if isinstance(kk, ast.Constant) and isinstance(kk.value, str):
                        kwargs.setdefault(kk.value, self.value(vv, func, node))
            elif isinstance(d, ast.Call) and _last(d.func) == "dict" and not d.args:
                for kk in d.keywords:
                    if kk.arg:
                        kwargs.setdefault(kk.arg, self.value(kk.value, func, node))
            else:
                kwargs["**"] = self.value(k.value, func, node)
        args = tuple(self.value(a, func, node) for a in node.args[:6])
        return Call(label or _last(node.func), self.site(node), kwargs, args, self.qual(node.func))

    def _bound_names(self, node: ast.Call, stmt: ast.AST | None) -> list[str]:
        if isinstance(stmt, ast.Assign) and stmt.value is node:
            return [t.id for t in stmt.targets if isinstance(t, ast.Name)]
        if isinstance(stmt, ast.AnnAssign) and stmt.value is node and isinstance(stmt.target, ast.Name):
            return [stmt.target.id]
        return []

    def _calls(self) -> dict[str, list[Call]]:
        out: dict[str, list[Call]] = defaultdict(list)
        self.hf_trainer_names: set[str] = set()
        self.pl_trainer_names: set[str] = set()
        self.ta_by_name: dict[str, Call] = {}
        self.ta_calls: list[Call] = []
        self.hf_trainers: list[tuple[ast.Call, Call, str]] = []
        trainer_nodes: set[int] = set()
        pl_nodes: set[int] = set()
        for node, stmt, func in self.calls:
            name = _last(node.func)
            if not name:
                continue
            if name.endswith(("Arguments", "Config")) and self._is_training_args(node):
                c = self._make_call(node, func)
                names = self._bound_names(node, stmt)
                c = self._with_attr_sets(c, names, func)
                out["TrainingArguments"].append(c)
                self.ta_calls.append(c)
                for n in names:
                    self.ta_by_name[n] = c
            elif name.endswith("Trainer"):
                kind = self._classify_trainer(node)
                if kind is None:
                    continue
                c = self._make_call(node, func)
                out[kind].append(c)
                names = self._bound_names(node, stmt)
                if kind == "lightning.Trainer":
                    self.pl_trainer_names.update(names)
                    pl_nodes.add(id(node))
                elif self._hf_trainer(node):
                    self.hf_trainer_names.update(names)
                    trainer_nodes.add(id(node))
                    self.hf_trainers.append((node, c, func))
            elif name == "ModelCheckpoint":
                out["ModelCheckpoint"].append(self._make_call(node, func))
            elif name == "sft" and (
                (self.qual(node.func) or "").startswith("training_hub")
                or any(k.arg == "ckpt_output_dir" for k in node.keywords)
            ):
                out["sft"].append(self._make_call(node, func))
            elif name == "get_last_checkpoint" and self._is_hf_get_last(node):
                out["get_last_checkpoint"].append(self._make_call(node, func))
            elif name == "Accelerator":
                out["Accelerator"].append(self._make_call(node, func))
            elif name == "initialize" and (self.qual(node.func) or "").startswith("deepspeed"):
                out["deepspeed.initialize"].append(self._make_call(node, func))
            elif name == "run_exp" and node.args and isinstance(node.args[0], ast.Dict):
                c = self._make_call(node, func)
                d = node.args[0]
                kw = dict(c.kwargs)
                for kk, vv in zip(d.keys, d.values, strict=False):
                    if isinstance(kk, ast.Constant) and isinstance(kk.value, str):
                        kw[kk.value] = self.value(vv, func, node)
                out["run_exp"].append(Call(c.name, c.site, kw, c.args, c.qualname))
        # second pass: method calls on the trainers found above
        for node, _stmt, func in list(self.by_attr.get("train", ())) + list(self.by_attr.get("fit", ())):
            f = node.func
            if not isinstance(f, ast.Attribute):
                continue
            recv = f.value
            recv_name = (
                recv.id if isinstance(recv, ast.Name) else (recv.attr if isinstance(recv, ast.Attribute) else "")
            )
            kws = {k.arg for k in node.keywords}
            if f.attr == "train":
                hf = (
                    recv_name in self.hf_trainer_names
                    or (isinstance(recv, ast.Call) and id(recv) in trainer_nodes)
                    or (
                        "trainer" in recv_name.lower()
                        and recv_name not in self.pl_trainer_names
                        and (trainer_nodes or self._hf_imported())
                        and "Trainer" not in self.classes
                    )
                )
                if not hf and "resume_from_checkpoint" not in kws:
                    continue
                c = self._make_call(node, func, "train")
                if hf and node.args and "resume_from_checkpoint" not in c.kwargs:
                    kw = dict(c.kwargs)
                    kw["resume_from_checkpoint"] = c.args[0]
                    c = Call(c.name, c.site, kw, c.args, c.qualname)
                out["train"].append(c)
            else:
                pl = (
                    recv_name in self.pl_trainer_names
                    or (isinstance(recv, ast.Call) and id(recv) in pl_nodes)
                    or "ckpt_path" in kws
                    or ("trainer" in recv_name.lower() and self._pl_imported())
                )
                if pl:
                    out["fit"].append(self._make_call(node, func, "fit"))
        for v in out.values():
            v.sort(key=lambda c: c.site.line)
        return dict(out)

    def _with_attr_sets(self, c: Call, names: list[str], func: str) -> Call:
        """`args = TrainingArguments(...); args.save_only_model = True` counts as a keyword."""
        extra: dict[str, Value] = {}
        for n in names:
            for attr, value, stmt in self.attr_sets.get(n, ()):
                if _pos(stmt) > (c.site.line, 0) and attr not in c.kwargs:
                    extra[attr] = self.value(value, func, stmt)
        if not extra:
            return c
        kw = dict(c.kwargs)
        kw.update(extra)
        return Call(c.name, c.site, kw, c.args, c.qualname)
