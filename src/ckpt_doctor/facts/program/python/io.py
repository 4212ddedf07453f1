"""What each save and load holds (full state, weights only, optimizer state only), from what is
saved.
"""

from __future__ import annotations

import ast
import re
from typing import Any

from ckpt_doctor import frameworks
from ckpt_doctor.facts.program.python.facts import (
    Call,
    Site,
    StateIO,
)
from ckpt_doctor.facts.program.python.parts import _KEY_PARTS, _component, _content, _missing
from ckpt_doctor.facts.program.python.tree import (
    _last,
    _List,
    _pos,
)
from ckpt_doctor.facts.program.python.vocabulary import (
    _IO_NAMES,
    _RESUME_PATH_WORDS,
)
from ckpt_doctor.frameworks.spec import IORecogniser


class SavesAndLoads:
    def _io(self, calls: dict[str, list[Call]]) -> list[StateIO]:
        out: list[StateIO] = []
        for name in _IO_NAMES:
            for node, stmt, func in self.by_attr.get(name, ()):
                rec = self._io_of(node, stmt, func, name)
                if rec is not None:
                    out.append(rec)
        out += self._framework_io(calls)
        out.sort(key=lambda r: (r.site.line, r.op, r.api))
        return out

    def _io_of(self, node: ast.Call, stmt: ast.AST | None, func: str, name: str) -> StateIO | None:
        """The first recogniser of calls named `name` (generic ones here, the frameworks' in their
        modules, tried by rank) that reads this call as a save or load."""
        for r in _recognisers(name):
            rec = r.fn(self, node, stmt, func, name)
            if rec is not None:
                return rec  # type: ignore[no-any-return]
        return None

    # -- the generic APIs: torch.save / torch.load, load_state_dict, safetensors --------------------
    def _torch_save(self, node: ast.Call, stmt: ast.AST | None, func: str, name: str) -> StateIO | None:
        q = self.qual(node.func) or ""
        if q not in ("torch.save", "torch_xla.core.xla_model.save"):
            return None
        return self.saved_object(node, func, "torch.save")

    def saved_object(self, node: ast.Call, func: str, api: str) -> StateIO:
        """A `save(obj, f)` call: what `obj` holds (used by accelerate's `accelerator.save` too)."""
        obj = node.args[0] if node.args else next((k.value for k in node.keywords if k.arg == "obj"), None)
        path = node.args[1] if len(node.args) > 1 else next((k.value for k in node.keywords if k.arg == "f"), None)
        return self.state_of("save", api, node, obj, path, func)

    def state_of(
        self, op: str, api: str, node: ast.Call, obj: ast.AST | None, path: ast.AST | None, func: str
    ) -> StateIO:
        """A save or load of a state object (torch.save, DCP, Fabric): what `obj` holds decides."""
        parts, keys, built = self._saved(obj, func, node, 0)
        content = _content(parts)
        return StateIO(
            op,
            api,
            content,
            keys,
            self.site(node),
            tuple(sorted(parts)),
            _missing(parts, content),
            self.seg(path) or None,
            built,
        )

    def _torch_load(self, node: ast.Call, stmt: ast.AST | None, func: str, name: str) -> StateIO | None:
        if self.qual(node.func) != "torch.load":
            return None
        path = node.args[0] if node.args else next((k.value for k in node.keywords if k.arg == "f"), None)
        parts, keys = self._loaded(node, stmt, func)
        content = _content(parts)
        return StateIO(
            "load",
            "torch.load",
            content,
            keys,
            self.site(node),
            tuple(sorted(parts)),
            _missing(parts, content),
            self.seg(path) or None,
        )

    def _load_state_dict(self, node: ast.Call, stmt: ast.AST | None, func: str, name: str) -> StateIO | None:
        f = node.func
        if not isinstance(f, ast.Attribute):
            return None
        comp = _component(self.seg(f.value, 80)) or "model"
        parts = {comp}
        content = _content(parts)
        return StateIO(
            "load",
            "load_state_dict",
            content,
            (),
            self.site(node),
            (comp,),
            _missing(parts, content),
            self.seg(node.args[0]) if node.args else None,
        )

    def _safetensors(self, node: ast.Call, stmt: ast.AST | None, func: str, name: str) -> StateIO | None:
        if not (self.qual(node.func) or "").startswith("safetensors"):
            return None
        op = "save" if name == "save_file" else "load"
        a = node.args[1] if op == "save" and len(node.args) > 1 else (node.args[0] if node.args else None)
        return StateIO(op, "safetensors", "weights", (), self.site(node), ("model",), _KEY_PARTS, self.seg(a) or None)

    def _resume_path(self, a: ast.AST, func: str) -> bool:
        s = self.seg(a, 200)
        if re.search(r"model_name_or_path|pretrained_model|base_model", s):
            return False
        if _RESUME_PATH_WORDS.search(s):
            return True
        names = {n.id for n in ast.walk(a) if isinstance(n, ast.Name)}
        return bool(names & self._tainted())

    def _tainted(self) -> set[str]:
        cached = getattr(self, "_taint_cache", None)
        if cached is not None:
            return cached
        seeds: set[str] = set()
        for attr in ("get_last_checkpoint", "sorted", "max", "min"):
            for node, stmt, func in self.by_attr.get(attr, ()):
                if attr != "get_last_checkpoint":
                    lst = self.resolve(node.args[0], func, node, 0) if node.args else _List("unknown")
                    if not lst.listing:
                        continue
                seeds |= self.seeds_of(node, stmt, func)
        self._taint_cache = self.reach(seeds) if seeds else set()
        return self._taint_cache

    def _saved(
        self, obj: ast.AST | None, func: str, at: ast.AST, depth: int
    ) -> tuple[set[str], tuple[str, ...], Site | None]:
        """(components, dict keys, where the dict was built) of a saved object."""
        if obj is None or depth > 4:
            return set(), (), None
        if isinstance(obj, ast.Dict):
            parts: set[str] = set()
            keys: list[str] = []
            for k, v in zip(obj.keys, obj.values, strict=False):
                if k is None:
                    p2, k2, _b = self._saved(v, func, at, depth + 1)
                    parts |= p2
                    keys += k2
                    continue
                ks = k.value if isinstance(k, ast.Constant) and isinstance(k.value, str) else None
                if ks is not None:
                    keys.append(ks)
                parts |= self._entry_parts(ks, v)
            return parts, tuple(keys), (self.site(obj) if obj.lineno != getattr(at, "lineno", 0) else None)
        if isinstance(obj, ast.Call):
            name = _last(obj.func)
            if name == "dict" and not obj.args:
                parts = set()
                keys = []
                for k in obj.keywords:
                    if k.arg:
                        keys.append(k.arg)
                        parts |= self._entry_parts(k.arg, k.value)
                return parts, tuple(keys), (self.site(obj) if obj.lineno != getattr(at, "lineno", 0) else None)
            comp = self._value_component(obj)
            if name == "state_dict" and comp:
                return {comp}, (), None
            # AppState(model, optimizer), get_state_dict(model, optimizer), …: the parts of its arguments
            parts = set()
            for a in list(obj.args) + [k.value for k in obj.keywords]:
                c = _component(self.seg(a, 80))
                if c:
                    parts.add(c)
            if name in self.classes:
                parts |= self._class_state_parts(name)
            return parts, (), None
        if isinstance(obj, ast.Name):
            b = self._nearest(obj.id, at, func)
            parts, keys_t, built = set(), (), None
            if b is not None and b.kind == "assign" and b.value is not None:
                parts, keys_t, built = self._saved(b.value, b.func, b.stmt, depth + 1)
                if built is None and isinstance(b.value, ast.Dict | ast.Call):
                    built = self.site(b.value)
                keys = list(keys_t)
                # later additions: state["scheduler"] = …, state.update(...)
                for k, v in self.key_sets.get(obj.id, ()):
                    if isinstance(k, ast.Constant) and isinstance(k.value, str) and _pos(k) < _pos(at):
                        if k.value not in keys:
                            keys.append(k.value)
                        parts |= self._entry_parts(k.value, v)
                for node, _s, _f in self.by_attr.get("update", ()):
                    fn = node.func
                    if (
                        isinstance(fn, ast.Attribute)
                        and isinstance(fn.value, ast.Name)
                        and fn.value.id == obj.id
                        and _pos(node) < _pos(at)
                    ):
                        for a in node.args:
                            p2, k2, _b = self._saved(a, func, at, depth + 1)
                            parts |= p2
                            keys += [x for x in k2 if x not in keys]
                        for kw in node.keywords:
                            if kw.arg:
                                keys.append(kw.arg)
                                parts |= self._entry_parts(kw.arg, kw.value)
                return parts, tuple(keys), built
            if b is not None and b.kind == "param" and func:
                return self._saved_through_callers(obj.id, func, depth)
            return set(), (), None
        if isinstance(obj, ast.Attribute):
            c = _component(obj.attr)
            return ({c} if c else set()), (), None
        return set(), (), None

    def _entry_parts(self, key: str | None, v: ast.AST) -> set[str]:
        """The components one `key: value` of a saved dict holds."""
        comp = _component(key) if key else None
        if comp is not None and comp != "model":
            return {comp}
        if isinstance(v, ast.Call) and not (_last(v.func) == "state_dict" and isinstance(v.func, ast.Attribute)):
            # AppState(model, optimizer), get_state_dict(model, optimizer), …
            got = {c for a in [*v.args, *(k.value for k in v.keywords)] if (c := _component(self.seg(a, 80)))}
            if _last(v.func) in self.classes:
                got |= self._class_state_parts(_last(v.func))
            if got:
                return got
        vc = self._value_component(v)
        if vc is not None:
            return {vc}
        return {comp} if comp else set()

    def _value_component(self, v: ast.AST) -> str | None:
        if isinstance(v, ast.Call) and _last(v.func) == "state_dict" and isinstance(v.func, ast.Attribute):
            return _component(self.seg(v.func.value, 80)) or "model"
        if isinstance(v, ast.Call) and _last(v.func) in ("get_rng_state", "get_state", "getstate", "get_rng_state_all"):
            return "rng"
        if isinstance(v, ast.Name | ast.Attribute):
            return _component(self.seg(v, 80))
        if isinstance(v, ast.Call):
            return _component(self.seg(v, 120))
        return None

    def _class_state_parts(self, name: str) -> set[str]:
        c = self.classes.get(name)
        parts: set[str] = set()
        if c is None:
            return parts
        for sub in ast.walk(c):
            if isinstance(sub, ast.Attribute) and isinstance(sub.value, ast.Name) and sub.value.id == "self":
                comp = _component(sub.attr)
                if comp:
                    parts.add(comp)
        return parts

    def _saved_through_callers(
        self, param: str, func: str, depth: int
    ) -> tuple[set[str], tuple[str, ...], Site | None]:
        params = self.func_params.get(func) or []
        if param not in params:
            return set(), (), None
        idx = params.index(param)
        is_method = bool(params) and params[0] in ("self", "cls")
        parts: set[str] = set()
        keys: list[str] = []
        built = None
        for node, _stmt, f in self.by_attr.get(func, ()):
            if f == func:
                continue
            pos = idx - (1 if is_method and isinstance(node.func, ast.Attribute) else 0)
            arg = None
            if 0 <= pos < len(node.args):
                arg = node.args[pos]
            else:
                arg = next((k.value for k in node.keywords if k.arg == param), None)
            if arg is None:
                continue
            p2, k2, b2 = self._saved(arg, f, node, depth + 1)
            parts |= p2
            keys += [k for k in k2 if k not in keys]
            if built is None:
                built = b2 or (self.site(arg) if isinstance(arg, ast.Dict) else None)
        return parts, tuple(keys), built

    def _loaded(self, node: ast.Call, stmt: ast.AST | None, func: str) -> tuple[set[str], tuple[str, ...]]:
        """What the program takes out of `torch.load(...)`: the keys it reads and who consumes it."""
        parts: set[str] = set()
        keys: list[str] = []

        def key(k: str) -> None:
            if k not in keys:
                keys.append(k)
            c = _component(k)
            if c:
                parts.add(c)

        holder: ast.AST = node
        sub = self.subs_of.get(id(node))  # torch.load(p)["generator"]
        if sub is not None and isinstance(sub.slice, ast.Constant) and isinstance(sub.slice.value, str):
            key(sub.slice.value)
            holder = sub
        consumer = self.arg_of.get(id(holder))
        if (
            consumer is not None
            and _last(consumer.func) == "load_state_dict"
            and isinstance(consumer.func, ast.Attribute)
        ):
            parts.add(_component(self.seg(consumer.func.value, 80)) or "model")
        names = self._bound_names(node, stmt) if stmt is not None else []
        if isinstance(stmt, ast.Return) and func:
            # def load_checkpoint(path): return torch.load(path)  ->  the callers' names
            for n2, s2, _f in self.by_attr.get(func, ()):
                names += self._bound_names(n2, s2)
        after = _pos(node)
        wanted = set(names)
        if not wanted:
            return parts, tuple(keys)
        for n in names:
            for s, _f in self.subs_by_name.get(n, ()):
                if _pos(s) > after and isinstance(s.slice, ast.Constant) and isinstance(s.slice.value, str):
                    key(s.slice.value)
        for g, _s, _f in self.by_attr.get("get", ()):
            fn = g.func
            if isinstance(fn, ast.Attribute) and isinstance(fn.value, ast.Name) and fn.value.id in wanted and g.args:
                a = g.args[0]
                if isinstance(a, ast.Constant) and isinstance(a.value, str) and _pos(g) > after:
                    key(a.value)
        for ls, _s, _f in self.by_attr.get("load_state_dict", ()):
            if not (ls.args and isinstance(ls.func, ast.Attribute)) or _pos(ls) < after:
                continue
            a = ls.args[0]
            base = a.value if isinstance(a, ast.Subscript) else a
            if isinstance(base, ast.Name) and base.id in wanted:
                parts.add(_component(self.seg(ls.func.value, 80)) or "model")
        return parts, tuple(keys)

    def _framework_io(self, calls: dict[str, list[Call]]) -> list[StateIO]:
        """What the frameworks save and load on their own (HF Trainer's checkpoint-N, Lightning's
        ModelCheckpoint, training_hub's full state): each framework module's hook."""
        out: list[StateIO] = []
        for h in frameworks.python_hooks():
            if h.io is not None:
                out += h.io(self, calls)
        return out


# generic recognisers, ranked among the frameworks' (see `IORecogniser`): the order they were tried in
GENERIC = (
    IORecogniser(("save",), 10, SavesAndLoads._torch_save),
    IORecogniser(("load",), 20, SavesAndLoads._torch_load),
    IORecogniser(("load_state_dict",), 40, SavesAndLoads._load_state_dict),
    IORecogniser(("save_file", "load_file"), 120, SavesAndLoads._safetensors),
)
_cache: list[Any] = [None, {}]  # (the registry's hooks it was built for, name -> recognisers)


def _recognisers(name: str) -> tuple[IORecogniser, ...]:
    hooks = frameworks.python_hooks()
    if _cache[0] is not hooks:
        _cache[:] = [hooks, {}]
    got: tuple[IORecogniser, ...] | None = _cache[1].get(name)
    if got is None:
        mine = tuple(r for r in GENERIC if name in r.names)
        got = _cache[1][name] = tuple(sorted(mine + frameworks.io_recognisers(name), key=lambda r: r.rank))
    return got
