"""How the program picks "the newest checkpoint": sorts, max/min and indexes over listings of
checkpoint-like names, followed through nested calls, in-place sorts and lists built first; and
what the frameworks' own resume APIs pick.
"""

from __future__ import annotations

import ast
import re
from collections import defaultdict

from ckpt_doctor import frameworks
from ckpt_doctor.facts.program.python.facts import (
    Call,
    Discovery,
)
from ckpt_doctor.facts.program.python.tree import (
    _Bind,
    _int_index,
    _last,
    _List,
    _pos,
    _within,
)
from ckpt_doctor.facts.program.python.vocabulary import (
    _CKPT_WORDS,
    _LISTING_FUNCS,
    _MAX_DISCOVERY_CANDIDATES,
    _NOT_CKPT_EXT,
    _TRANSPARENT,
)


class Discoveries:
    _LOAD_ATTRS = (
        "load",
        "load_state",
        "load_checkpoint",
        "from_pretrained",
        "load_from_checkpoint",
        "load_state_dict",
        "load_file",
        "train",
        "fit",
        "resume",
    )

    def _discoveries(self, calls: dict[str, list[Call]]) -> list[Discovery]:
        found: list[Discovery] = []
        budget = _MAX_DISCOVERY_CANDIDATES
        for name in ("sorted", "max", "min", "natsorted", "sort"):
            for node, stmt, func in self.by_attr.get(name, ()):
                if budget <= 0:
                    break
                if name == "sort" and not isinstance(node.func, ast.Attribute):
                    continue
                if name != "sort" and not isinstance(node.func, ast.Name) and name != "natsorted":
                    continue
                budget -= 1
                d = self._selection(node, stmt, func, name)
                if d is not None:
                    found.append(d)
        found += self._unordered(budget)
        found += self._framework_discoveries(calls)
        seen: set[tuple[int, str, str]] = set()
        out = []
        for d in sorted(found, key=lambda d: (d.site.line, d.kind)):
            key = (d.site.line, d.kind, d.selector)
            if key not in seen:
                seen.add(key)
                out.append(d)
        return out

    def _wrapper_top(self, node: ast.AST) -> ast.AST:
        top = node
        for _ in range(6):
            c = self.arg_of.get(id(top))
            if c is not None and _last(c.func) in _TRANSPARENT and isinstance(c.func, ast.Name):
                top = c
            else:
                break
        return top

    def _selection(self, node: ast.Call, stmt: ast.AST | None, func: str, name: str) -> Discovery | None:
        keynode = next((k.value for k in node.keywords if k.arg == "key"), None)
        if name == "sort":
            recv = node.func.value  # type: ignore[attr-defined]
            if not isinstance(recv, ast.Name):
                return None
            lst = self.resolve(recv, func, node, 0)
            seeds = {recv.id}
            selected = self._selected_later(seeds, node, func)
        else:
            if not node.args:
                return None
            if name in ("max", "min") and len(node.args) != 1:
                return None
            outer = self.arg_of.get(id(self._wrapper_top(node)))
            if name in ("sorted", "natsorted") and outer is not None and _last(outer.func) in ("max", "min"):
                return None  # the max/min around it is the selection
            lst = self.resolve(node.args[0], func, node, 0)
            if name == "natsorted":
                lst.hint = "natural"
            top = self._wrapper_top(node)
            if name in ("max", "min") or (id(top) in self.subs_of and _int_index(self.subs_of[id(top)].slice)):
                selected = True
            else:
                selected = self._selected_later(self.seeds_of(node, stmt, func), node, func) or self._in_sink(
                    node, stmt
                )
        if not selected:
            return None
        seeds = self.seeds_of(node, stmt, func) | ({node.func.value.id} if name == "sort" else set())  # type: ignore[attr-defined]
        if not lst.listing and lst.hint not in ("ints", "natural"):
            # not a file-system listing we can see: only a list whose name says checkpoint, or one loaded
            strong = [w for w in lst.words + sorted(seeds) if re.search(r"checkpoint|ckpt|snapshot", w, re.I)]
            if not strong and not (self._flows_to_load(self.reach(seeds)) or self._in_sink(node, stmt)):
                return None
        kind = self._kind(lst, keynode)
        if not self._checkpoint_like(lst, node, stmt, func, seeds):
            return None
        return Discovery(kind, self.site(node), lst.pattern, lst.root, self._padded(lst), name,
                         self._requires(node, stmt, func))  # fmt: skip

    def _requires(self, node: ast.AST, stmt: ast.AST | None, func: str) -> str:
        """The commit marker the code around a selection checks for (`os.path.exists(join(d, ".metadata"))`,
        `(p / "trainer_state.json").is_file()`): the pick then skips checkpoints without it."""
        scope: ast.AST | None = next((f for f in self.funcs.get(func, ()) if _within(node, f)), None) if func else None
        scope = scope or stmt
        if scope is None:
            return ""
        markers = frameworks.commit_files()
        for sub in ast.walk(scope):
            if isinstance(sub, ast.Call) and _last(sub.func) in ("exists", "isfile", "is_file", "isdir", "is_dir"):
                for c in ast.walk(sub):
                    if isinstance(c, ast.Constant) and isinstance(c.value, str) and c.value.strip("/") in markers:
                        return c.value.strip("/")
        return ""

    def _selected_later(self, seeds: set[str], after: ast.AST, func: str) -> bool:
        """A sorted list is a selection when one element of it is taken: `xs[-1]`, `xs[0]`, `xs[:-k]`,
        `xs.pop()`, `max(xs)` — on the list itself or on a name bound to it as a whole. Iterating over it
        (`for f in xs`) takes every element: not a pick."""
        if not seeds:
            return False
        p = _pos(after)
        names = self._aliases_of(seeds)
        for n, anywhere in names.items():
            for sub, f in self.subs_by_name.get(n, ()):
                if (anywhere or f == func or not func or not f) and _pos(sub) > p and _int_index(sub.slice):
                    return True
        for n in seeds:  # find_latest(d)[-1]
            if n.endswith("()"):
                for call, _s, _f in self.by_attr.get(n[:-2], ()):
                    sub = self.subs_of.get(id(call))
                    if isinstance(call.func, ast.Name) and sub is not None and _int_index(sub.slice):
                        return True
        for node, _s, f in self.by_attr.get("pop", ()):
            fn = node.func
            if (
                isinstance(fn, ast.Attribute)
                and isinstance(fn.value, ast.Name)
                and fn.value.id in names
                and (names[fn.value.id] or f == func)
                and _pos(node) > p
            ):
                return True
        for name in ("max", "min"):
            for node, _s, _f in self.by_attr.get(name, ()):
                if (
                    len(node.args) == 1
                    and isinstance(node.args[0], ast.Name)
                    and node.args[0].id in names
                    and _pos(node) > p
                ):
                    return True
        return False

    def _sinks(self) -> list[tuple[ast.Call, ast.AST | None]]:
        """The calls that load or resume from a path."""
        cached = getattr(self, "_sink_cache", None)
        if cached is not None:
            return cached
        out: list[tuple[ast.Call, ast.AST | None]] = []
        for attr in self._LOAD_ATTRS:
            for node, stmt, _f in self.by_attr.get(attr, ()):
                if attr == "load" and not self._is_state_load(node):
                    continue
                if attr in ("train", "fit") and not any(
                    k.arg in ("resume_from_checkpoint", "ckpt_path") for k in node.keywords
                ):
                    continue
                out.append((node, stmt))
        for node, stmt, _f in self.calls:
            if any(k.arg in ("resume_from_checkpoint", "ckpt_path", "resume", "checkpoint_id") for k in node.keywords):
                out.append((node, stmt))
        self._sink_cache = out
        self._sink_names: set[str] = set()
        self._sink_stmts: dict[int, list[ast.Call]] = defaultdict(list)
        for node, stmt in out:
            if stmt is not None:
                self._sink_names |= self.uses.get(id(stmt), set())
                self._sink_stmts[id(stmt)].append(node)
        return out

    def _is_state_load(self, node: ast.Call) -> bool:
        q = self.qual(node.func) or ""
        return (
            q in ("torch.load",)
            or q.startswith("torch.distributed.checkpoint")
            or ("fabric" in self.seg(node.func, 60).lower())
        )

    def _flows_to_load(self, reached: set[str]) -> bool:
        if not reached:
            return False
        self._sinks()
        return bool(self._sink_names & reached)

    def _in_sink(self, node: ast.AST, stmt: ast.AST | None) -> bool:
        if stmt is None:
            return False
        self._sinks()
        return any(s is not node and _within(node, s) for s in self._sink_stmts.get(id(stmt), ()))

    def _kind(self, lst: _List, keynode: ast.AST | None) -> str:
        if lst.hint in ("ints", "natural"):
            return "numeric"
        k = self._classify_key(keynode) if keynode is not None else None
        if k is not None:
            return k
        return "lexical" if lst.hint == "names" else "unknown"

    def _classify_key(self, key: ast.AST, depth: int = 0) -> str:
        if isinstance(key, ast.Lambda):
            return self._classify_expr(key.body)
        if isinstance(key, ast.Name | ast.Attribute):
            q = self.qual(key) or ""
            last = _last(key)
            if last in ("getmtime", "getctime", "getatime", "stat", "lstat"):
                return "mtime"
            if last in ("int", "float", "len", "Decimal"):
                return "numeric"
            if "natsort" in q or "natural" in last.lower() or last.startswith("nat"):
                return "numeric"
            if last in ("str", "lower", "casefold", "basename", "upper"):
                return "lexical"
            if isinstance(key, ast.Name) and key.id in self.funcs and depth < 3:
                fn = self.funcs[key.id][0]
                return self._classify_expr(fn)
            return "unknown"
        if isinstance(key, ast.Call):
            q = self.qual(key.func) or ""
            if "natsort" in q or "natural" in q.lower():
                return "numeric"
            if _last(key.func) in ("cmp_to_key", "partial") and key.args and depth < 3:
                return self._classify_key(key.args[0], depth + 1)
            return "unknown"
        return "unknown"

    def _classify_expr(self, expr: ast.AST) -> str:
        numeric = mtime = stringy = False
        for n, sub in enumerate(ast.walk(expr)):
            if n > 800:
                break
            if isinstance(sub, ast.Call):
                last = _last(sub.func)
                if last in ("getmtime", "getctime", "getatime", "stat", "lstat"):
                    mtime = True
                elif last in ("int", "float", "len", "Decimal", "literal_eval") or "natsort" in (
                    self.qual(sub.func) or ""
                ):
                    numeric = True
                elif last in (
                    "split",
                    "rsplit",
                    "replace",
                    "strip",
                    "rstrip",
                    "lstrip",
                    "basename",
                    "splitext",
                    "lower",
                    "removeprefix",
                    "removesuffix",
                    "partition",
                    "rpartition",
                    "str",
                    "join",
                ):
                    stringy = True
            elif isinstance(sub, ast.Attribute):
                if sub.attr in ("st_mtime", "st_ctime", "st_mtime_ns", "st_ctime_ns"):
                    mtime = True
                elif sub.attr in ("name", "stem", "path", "parts", "suffix"):
                    stringy = True
        if mtime:
            return "mtime"
        if numeric:
            return "numeric"
        if stringy:
            return "lexical"
        return "unknown"

    def _padded(self, lst: _List) -> bool:
        if lst.fixed:
            return True
        prefix = None
        if lst.pattern:
            prefix = re.split(r"[*?\[{]", lst.pattern, maxsplit=1)[0]
        for tpl in self.padded_templates:
            if prefix and prefix in tpl:
                return True
            if not prefix and _CKPT_WORDS.search(tpl):
                return True
        return False

    def _checkpoint_like(self, lst: _List, node: ast.AST, stmt: ast.AST | None, func: str, seeds: set[str]) -> bool:
        """The names being picked from are checkpoints: the pattern or the names around say so, or the
        pick is loaded / resumed from. Data shards and other files are not."""
        if lst.pattern and _CKPT_WORDS.search(lst.pattern):
            return True
        if lst.pattern and _NOT_CKPT_EXT.search(lst.pattern):
            return False
        reached = self.reach(seeds) if seeds else set()
        if self._flows_to_load(reached) or self._in_sink(node, stmt):
            return True
        words = list(lst.words) + list(seeds)
        if lst.root:
            words.append(lst.root)
        if func:
            words.append(func)
        if any(_CKPT_WORDS.search(w) for w in words if w):
            return True
        cur = self.if_parent.get(id(stmt)) if stmt is not None else None
        for _ in range(4):
            if cur is None:
                break
            if _CKPT_WORDS.search(self.seg(cur.test, 200)):
                return True
            cur = self.if_parent.get(id(cur))
        return False

    def resolve(self, node: ast.AST, func: str, at: ast.AST, depth: int) -> _List:
        """What a list-valued expression holds (names from a listing, numbers, unknown)."""
        if depth > 6:
            return _List("unknown")
        if isinstance(node, ast.Call):
            name = _last(node.func)
            q = self.qual(node.func) or ""
            if name in _TRANSPARENT | {"sorted"} and isinstance(node.func, ast.Name) and node.args:
                return self.resolve(node.args[0], func, at, depth + 1)
            if name == "natsorted" and node.args:
                r = self.resolve(node.args[0], func, at, depth + 1)
                r.hint = "natural"
                return r
            if name == "filter" and len(node.args) == 2:
                r = self.resolve(node.args[1], func, at, depth + 1)
                if r.pattern is None and isinstance(node.args[0], ast.Lambda):
                    r.pattern = self._pattern_from_test(node.args[0].body)
                return r
            if name in _LISTING_FUNCS:
                return self._listing(node, name, q)
            if name in self.funcs and depth < 4:
                for fn in self.funcs[name][:1]:
                    for sub in ast.walk(fn):
                        if isinstance(sub, ast.Return) and sub.value is not None:
                            r = self.resolve(sub.value, getattr(fn, "name", ""), sub, depth + 2)
                            if r.hint != "unknown" or r.listing:
                                r.words.append(name)
                                return r
            return _List("unknown", words=[name])
        if isinstance(node, ast.ListComp | ast.GeneratorExp | ast.SetComp):
            gen = node.generators[0]
            r = self.resolve(gen.iter, func, at, depth + 1)
            if self._has_number_call(node.elt):
                r.hint = "ints"
            elif r.hint == "unknown" and r.listing:
                r.hint = "names"
            if r.pattern is None:
                for test in gen.ifs:
                    p = self._pattern_from_test(test)
                    if p:
                        r.pattern = p
                        break
            r.words += [n.id for n in ast.walk(gen.target) if isinstance(n, ast.Name)]
            return r
        if isinstance(node, ast.Name):
            b = self._nearest(node.id, at, func)
            if b is None or b.value is None or b.kind != "assign":
                return _List("unknown", words=[node.id])
            if isinstance(b.value, ast.List) and not b.value.elts:
                r = self._appended(node.id, b, func, depth)
            else:
                r = self.resolve(b.value, b.func, b.stmt, depth + 1)
            r.words.append(node.id)
            return r
        if isinstance(node, ast.Attribute):
            return _List("unknown", words=[node.attr])
        if isinstance(node, ast.IfExp):
            r = self.resolve(node.body, func, at, depth + 1)
            if r.hint == "unknown":
                r = self.resolve(node.orelse, func, at, depth + 1)
            return r
        return _List("unknown")

    def _has_number_call(self, node: ast.AST) -> bool:
        for sub in ast.walk(node):
            if isinstance(sub, ast.Call) and _last(sub.func) in ("int", "float", "Decimal"):
                return True
        return False

    def _appended(self, name: str, bind: _Bind, func: str, depth: int) -> _List:
        """`ckpts = []` then `for x in os.listdir(d): if ...: ckpts.append(...)`."""
        for node, stmt, f in [*self.by_attr.get("append", ()), *self.by_attr.get("extend", ())]:
            fn = node.func
            if not (isinstance(fn, ast.Attribute) and isinstance(fn.value, ast.Name) and fn.value.id == name):
                continue
            if f != func or not node.args:
                continue
            loop = self.fors.get(id(stmt)) if stmt is not None else None
            if _last(fn) == "extend":
                r = self.resolve(node.args[0], func, node, depth + 1)
                return r
            if loop is None or not isinstance(loop, ast.For):
                continue
            r = self.resolve(loop.iter, func, loop, depth + 1)
            if self._has_number_call(node.args[0]):
                r.hint = "ints"
            elif r.listing:
                r.hint = "names"
            if r.pattern is None:
                for i in self.ifs:
                    if _within(node, i) and _within(i, loop):
                        p = self._pattern_from_test(i.test)
                        if p:
                            r.pattern = p
                            break
            r.words += [n.id for n in ast.walk(loop.target) if isinstance(n, ast.Name)]
            return r
        return _List("unknown")

    def _listing(self, node: ast.Call, name: str, q: str) -> _List:
        f = node.func
        arg = (
            node.args[0]
            if node.args
            else next((k.value for k in node.keywords if k.arg in ("pathname", "pattern")), None)
        )
        module_glob = q in ("glob.glob", "glob.iglob", "glob") or q.endswith(("gfile.glob", ".glob.glob"))
        if name in ("glob", "iglob", "rglob") and not module_glob and isinstance(f, ast.Attribute):
            # pathlib / fsspec: receiver.glob(pattern)
            recv = f.value
            root = (
                self.seg(recv.args[0])
                if isinstance(recv, ast.Call)
                and recv.args
                and _last(recv.func)
                in (
                    "Path",
                    "PurePath",
                    "UPath",
                )
                else self.seg(recv)
            )
            pat = self.template(arg) if arg is not None else None
            return self._listed(pat, root)
        if name in ("glob", "iglob") and arg is not None:
            pat, root = self._split_pattern(arg, 0)
            return self._listed(pat, root)
        if name in ("listdir", "scandir", "iterdir"):
            if name == "iterdir" and isinstance(f, ast.Attribute):
                recv = f.value
                root = self.seg(recv.args[0]) if isinstance(recv, ast.Call) and recv.args else self.seg(recv)
            else:
                root = self.seg(arg) if arg is not None else "."
            return _List("names", None, root, [root], False, True)
        return _List("unknown")

    def _listed(self, pat: str | None, root: str | None) -> _List:
        words = [w for w in (pat, root) if w]
        fixed = bool(pat and re.search(r"\?\?|\[0-9\]\[0-9\]", pat))
        pattern = pat if pat and "{" not in pat else None
        return _List("names", pattern, root, words, fixed, True)

    def _split_pattern(self, node: ast.AST, depth: int) -> tuple[str | None, str | None]:
        """(pattern, root) of a glob argument: `os.path.join(d, "checkpoint-*")` -> ("checkpoint-*", "d")."""
        if depth > 4:
            return None, self.seg(node)
        if (
            isinstance(node, ast.Call)
            and _last(node.func) == "join"
            and self.qual(node.func)
            in (
                "os.path.join",
                "posixpath.join",
            )
        ):
            if not node.args:
                return None, None
            last = node.args[-1]
            pat = self.template(last)
            head = node.args[:-1]
            if not head:
                return pat, None
            root = self.seg(head[0]) if len(head) == 1 else "/".join(self.template(a) for a in head)
            return pat, root
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
            return self.template(node.right), self.seg(node.left)
        if isinstance(node, ast.Name):
            b = self._nearest(node.id, node, self.func_of(node))
            if b is not None and b.kind == "assign" and b.value is not None:
                return self._split_pattern(b.value, depth + 1)
            return None, None
        tpl = self.template(node)
        if "/" in tpl:
            root, pat = tpl.rsplit("/", 1)
            m = re.fullmatch(r"\{([^{}]+)\}", root)
            return pat, (m.group(1) if m else root)
        return tpl, None

    def _pattern_from_test(self, test: ast.AST) -> str | None:
        if isinstance(test, ast.BoolOp):
            for v in test.values:
                p = self._pattern_from_test(v)
                if p:
                    return p
            return None
        if isinstance(test, ast.Call):
            last = _last(test.func)
            consts = [a.value for a in test.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
            if last == "startswith" and consts:
                return consts[0] + "*"
            if last == "startswith" and test.args and isinstance(test.args[0], ast.Tuple):
                vals = [e.value for e in test.args[0].elts if isinstance(e, ast.Constant)]
                return f"{vals[0]}*" if vals else None
            if last == "endswith" and consts:
                return "*" + consts[0]
            if last in ("match", "fullmatch", "search"):
                if consts:
                    return consts[0]
                recv = test.func.value if isinstance(test.func, ast.Attribute) else None
                if isinstance(recv, ast.Name):
                    b = self._nearest(recv.id, test, self.func_of(test))
                    if b is not None and isinstance(b.value, ast.Call) and b.value.args:
                        a0 = b.value.args[0]
                        if isinstance(a0, ast.Constant) and isinstance(a0.value, str):
                            return a0.value
            if last in ("fnmatch", "fnmatchcase") and len(consts) >= 1:
                return consts[-1]
            return None
        if (
            isinstance(test, ast.Compare)
            and len(test.ops) == 1
            and isinstance(test.ops[0], ast.In)
            and isinstance(test.left, ast.Constant)
            and isinstance(test.left.value, str)
        ):
            return f"*{test.left.value}*"
        return None

    def _unordered(self, budget: int) -> list[Discovery]:
        """`glob(...)[-1]` or `os.listdir(d)[0]` with no sort at all: whatever the file system returns."""
        out = []
        for sub in list(self.subs_of.values()):
            if budget <= 0:
                break
            if not _int_index(sub.slice) or isinstance(sub.slice, ast.Slice):
                continue
            v = sub.value
            target: ast.AST | None = None
            stmt, func = self.sub_info.get(id(sub), (None, ""))
            if isinstance(v, ast.Call) and _last(v.func) in _LISTING_FUNCS:
                target = v
            elif isinstance(v, ast.Name):
                b = self._nearest(v.id, sub, func)
                if (
                    b is not None
                    and isinstance(b.value, ast.Call)
                    and _last(b.value.func) in _LISTING_FUNCS
                    and not any(
                        isinstance(n.func, ast.Attribute)
                        and isinstance(n.func.value, ast.Name)
                        and n.func.value.id == v.id
                        for n, _s, _f in self.by_attr.get("sort", ())
                    )
                ):
                    target = b.value
            if target is None:
                continue
            budget -= 1
            lst = self._listing(target, _last(target.func), self.qual(target.func) or "")  # type: ignore[union-attr]
            seeds = self.seeds_of(sub, stmt, func)
            if isinstance(v, ast.Name):
                seeds.add(v.id)
            if self._checkpoint_like(lst, sub, stmt, func, seeds):
                out.append(Discovery("unordered", self.site(sub), lst.pattern, lst.root, self._padded(lst), "index"))
        return out

    def _framework_discoveries(self, calls: dict[str, list[Call]]) -> list[Discovery]:
        """What the frameworks' own resume APIs pick (`get_last_checkpoint`, `fit(ckpt_path="last")`,
        `load_state()`, DeepSpeed's `latest`, ...): each framework module's hook."""
        out: list[Discovery] = []
        for h in frameworks.python_hooks():
            if h.discoveries is not None:
                out += h.discoveries(self, calls)
        return out
