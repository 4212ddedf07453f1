"""What each save and load holds (full state, weights only, optimizer state only), from what is
saved.
"""

from __future__ import annotations

import ast
import re

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
    _SKIP_PRETRAINED,
)


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
        f = node.func
        q = self.qual(f) or ""
        if name == "save" and (
            q in ("torch.save", "torch_xla.core.xla_model.save")
            or (isinstance(f, ast.Attribute) and re.search(r"accel", self.seg(f.value, 60), re.I))
        ):
            api = "torch.save" if q.startswith("torch") else "accelerate.save"
            obj = node.args[0] if node.args else next((k.value for k in node.keywords if k.arg == "obj"), None)
            path = node.args[1] if len(node.args) > 1 else next((k.value for k in node.keywords if k.arg == "f"), None)
            parts, keys, built = self._saved(obj, func, node, 0)
            content = _content(parts)
            return StateIO(
                "save",
                api,
                content,
                keys,
                self.site(node),
                tuple(sorted(parts)),
                _missing(parts, content),
                self.seg(path) or None,
                built,
            )
        if name == "load" and q == "torch.load":
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
        if q.startswith("torch.distributed.checkpoint") and name in (
            "save",
            "async_save",
            "save_state_dict",
            "load",
            "load_state_dict",
        ):
            op = "save" if "save" in name else "load"
            sd = node.args[0] if node.args else next((k.value for k in node.keywords if k.arg == "state_dict"), None)
            parts, keys, built = self._saved(sd, func, node, 0)
            content = _content(parts)
            cid = next((k.value for k in node.keywords if k.arg == "checkpoint_id"), None)
            return StateIO(
                op,
                f"dcp.{op}",
                content,
                keys,
                self.site(node),
                tuple(sorted(parts)),
                _missing(parts, content),
                self.seg(cid) or None,
                built,
            )
        if name == "load_state_dict" and isinstance(f, ast.Attribute):
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
        if name in ("save_state", "load_state") and isinstance(f, ast.Attribute) and self._is_accelerate(node):
            op = "save" if name == "save_state" else "load"
            a = (
                node.args[0]
                if node.args
                else next((k.value for k in node.keywords if k.arg in ("output_dir", "input_dir")), None)
            )
            return StateIO(
                op,
                f"accelerate.{name}",
                "full",
                (),
                self.site(node),
                ("model", "optimizer", "rng", "scheduler"),
                (),
                self.seg(a) or None,
            )
        if name == "save_model" and isinstance(f, ast.Attribute):
            recv = self.seg(f.value, 80)
            if re.search(r"accel", recv, re.I):
                a = node.args[1] if len(node.args) > 1 else None
                return StateIO(
                    "save",
                    "accelerate.save_model",
                    "weights",
                    (),
                    self.site(node),
                    ("model",),
                    _KEY_PARTS,
                    self.seg(a) or None,
                )
            if re.search(r"trainer", recv, re.I) or recv in self.hf_trainer_names:
                a = node.args[0] if node.args else next((k.value for k in node.keywords if k.arg == "output_dir"), None)
                return StateIO(
                    "save",
                    "trainer.save_model",
                    "weights",
                    (),
                    self.site(node),
                    ("model",),
                    _KEY_PARTS,
                    self.seg(a) or None,
                )
        if name == "save_pretrained" and isinstance(f, ast.Attribute):
            recv = self.seg(f.value, 80)
            if _SKIP_PRETRAINED.search(recv):
                return None
            a = node.args[0] if node.args else next((k.value for k in node.keywords if k.arg == "save_directory"), None)
            return StateIO(
                "save", "save_pretrained", "weights", (), self.site(node), ("model",), _KEY_PARTS, self.seg(a) or None
            )
        if name == "from_pretrained" and isinstance(f, ast.Attribute):
            cls = self.seg(f.value, 80)
            if _SKIP_PRETRAINED.search(cls):
                return None
            cands = list(node.args[:2]) + [
                k.value for k in node.keywords if k.arg in ("pretrained_model_name_or_path", "model_id")
            ]
            for a in cands:
                if self._resume_path(a, func):
                    return StateIO(
                        "load",
                        "from_pretrained",
                        "weights",
                        (),
                        self.site(node),
                        ("model",),
                        _KEY_PARTS,
                        self.seg(a) or None,
                    )
            return None
        if name == "load_from_checkpoint" and isinstance(f, ast.Attribute):
            a = (
                node.args[0]
                if node.args
                else next((k.value for k in node.keywords if k.arg == "checkpoint_path"), None)
            )
            return StateIO(
                "load", "lightning", "weights", (), self.site(node), ("model",), _KEY_PARTS, self.seg(a) or None
            )
        if name in ("save_checkpoint", "load_checkpoint") and isinstance(f, ast.Attribute):
            recv = self.seg(f.value, 80)
            op = "save" if name == "save_checkpoint" else "load"
            kw = {k.arg: k.value for k in node.keywords if k.arg}
            a = node.args[0] if node.args else next(iter(kw.values()), None)
            if re.search(r"trainer", recv, re.I) and self._pl_imported():
                wo = kw.get("weights_only")
                weights = isinstance(wo, ast.Constant) and wo.value is True
                return StateIO(
                    op,
                    "lightning",
                    "weights" if weights else "full",
                    (),
                    self.site(node),
                    ("model",) if weights else ("model", "optimizer", "scheduler", "step"),
                    _KEY_PARTS if weights else (),
                    self.seg(a) or None,
                )
            if self._deepspeed_engine(node):
                weights = False
                if op == "load":
                    for k in ("load_optimizer_states", "load_lr_scheduler_states"):
                        v = kw.get(k)
                        if isinstance(v, ast.Constant) and v.value is False:
                            weights = True
                    v = kw.get("load_module_only")
                    if isinstance(v, ast.Constant) and v.value is True:
                        weights = True
                keys: tuple[str, ...] = ()
                cs = kw.get("client_state") or kw.get("client_sd")
                if cs is not None:
                    _p, keys, _b = self._saved(cs, func, node, 0)
                parts = ("model",) if weights else ("model", "optimizer", "scheduler")
                return StateIO(
                    op,
                    f"deepspeed.{name}",
                    "weights" if weights else "full",
                    keys,
                    self.site(node),
                    parts,
                    _KEY_PARTS if weights else (),
                    self.seg(a) or None,
                )
        if name in ("save", "load") and isinstance(f, ast.Attribute) and "fabric" in self.seg(f.value, 60).lower():
            op = name
            st = (
                node.args[1] if len(node.args) > 1 else next((k.value for k in node.keywords if k.arg == "state"), None)
            )
            parts, keys, built = self._saved(st, func, node, 0)
            content = _content(parts)
            return StateIO(
                op,
                f"fabric.{op}",
                content,
                keys,
                self.site(node),
                tuple(sorted(parts)),
                _missing(parts, content),
                self.seg(node.args[0]) if node.args else None,
                built,
            )
        if name in ("save_file", "load_file") and q.startswith("safetensors"):
            op = "save" if name == "save_file" else "load"
            a = node.args[1] if op == "save" and len(node.args) > 1 else (node.args[0] if node.args else None)
            return StateIO(
                op, "safetensors", "weights", (), self.site(node), ("model",), _KEY_PARTS, self.seg(a) or None
            )
        return None

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
        out: list[StateIO] = []
        # HF Trainer writes checkpoint-N/ itself: full unless save_only_model
        for _node, c, _func in self.hf_trainers:
            ta = self._training_args_for(c)
            strategy = ta.kwargs.get("save_strategy") if ta else None
            if strategy is not None and strategy.known and strategy.const == "no":
                continue
            only = ta.kwargs.get("save_only_model") if ta else None
            content = "full"
            if only is not None:
                content = ("weights" if only.const else "full") if only.known else "unknown"
            d = ta.kwargs.get("output_dir") if ta else None
            parts = ("model",) if content == "weights" else ("model", "optimizer", "rng", "scheduler", "step")
            out.append(
                StateIO(
                    "save",
                    "hf-trainer",
                    content,
                    (),
                    c.site,
                    parts if content != "unknown" else (),
                    _KEY_PARTS if content == "weights" else (),
                    d.source if d else None,
                )
            )
        for c in calls.get("train", ()):
            v = c.kwargs.get("resume_from_checkpoint")
            if v is None or (v.known and (v.const is None or v.const is False or v.const == "")):
                continue
            ta = self._training_args_for_any()
            only = ta.kwargs.get("save_only_model") if ta else None
            content = "full"
            if only is not None and only.known and only.const:
                content = "weights"
            parts = ("model",) if content == "weights" else ("model", "optimizer", "rng", "scheduler", "step")
            out.append(
                StateIO(
                    "load",
                    "hf-resume",
                    content,
                    (),
                    c.site,
                    parts,
                    _KEY_PARTS if content == "weights" else (),
                    v.source or None,
                )
            )
        for c in calls.get("ModelCheckpoint", ()):
            wo = c.kwargs.get("save_weights_only")
            weights = wo is not None and wo.known and bool(wo.const)
            d = c.kwargs.get("dirpath")
            out.append(
                StateIO(
                    "save",
                    "lightning",
                    "weights" if weights else "full",
                    (),
                    c.site,
                    ("model",) if weights else ("model", "optimizer", "scheduler", "step"),
                    _KEY_PARTS if weights else (),
                    d.source if d else None,
                )
            )
        for c in calls.get("fit", ()):
            v = c.kwargs.get("ckpt_path")
            if v is None or (v.known and v.const is None):
                continue
            out.append(
                StateIO(
                    "load",
                    "lightning",
                    "full",
                    (),
                    c.site,
                    ("model", "optimizer", "scheduler", "step"),
                    (),
                    v.source or None,
                )
            )
        for c in calls.get("sft", ()):
            v = c.kwargs.get("accelerate_full_state_at_epoch")
            d = c.kwargs.get("ckpt_output_dir")
            # absent: the backend default differs between instructlab.training versions
            content = ("full" if v.const else "weights") if v is not None and v.known else "unknown"
            parts = {"full": ("model", "optimizer", "scheduler", "step"), "weights": ("model",)}.get(content, ())
            out.append(
                StateIO(
                    "save",
                    "training_hub",
                    content,
                    (),
                    c.site,
                    parts,
                    _KEY_PARTS if content == "weights" else (),
                    d.source if d else None,
                )
            )
        return out
