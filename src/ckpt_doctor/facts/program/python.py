"""A training program written in Python, read through `ast`.

What the checkpoint rules need from a script is not a word somewhere in it but what the code
does: how it picks "the newest checkpoint" (`discovery`), what it saves and loads (`io`), the
keyword calls that configure a framework (`calls`), the environment it reads, whether it
handles SIGTERM, and the lines it prints (to recognise its own log lines).

`read_python` never raises. A program `ast` cannot parse (a syntax error, Python 2, a
template) is searched as text instead, and the result says so (`parsed=False`,
`confidence="low"`).

The analysis is deliberately local and conservative: names are followed through simple
bindings (`x = True; f(resume=x)`), argparse defaults and one level of function calls; anything
it cannot evaluate is reported as unknown rather than guessed.

Cost is one `ast.parse` plus one walk of the tree (the garbage collector is paused meanwhile: it
would otherwise dominate on big inputs); every later question is answered from indexes built by
that walk. At most 400 sort/max/min calls are examined for discovery, so a huge generated file
yields the first 400 picks, not all of them.
"""

from __future__ import annotations

import ast
import bisect
import gc
import re
import textwrap
import warnings
from collections import defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "Call",
    "Discovery",
    "Option",
    "PyFacts",
    "Site",
    "StateIO",
    "Value",
    "read_python",
    "template_regex",
]

# ---------------------------------------------------------------------------------------------
# The facts


@dataclass(frozen=True)
class Site:
    """Where something is: 1-based line and that line's text, stripped (for evidence).

    For `PyFacts.prints` the text is the printed template instead (`[checkpoint] resuming from {resume}`).
    """

    line: int
    text: str


@dataclass(frozen=True)
class Value:
    """An expression and, when it is statically known, its value.

    `origin` says how the value was found: `literal`, `name` (through a simple binding),
    `argparse-default` (the default of the `--option` named in `option`; the command line may
    override it), `env` (read from the environment variable `env`, with `default` when the
    fallback is a literal; such a value is never `known`), or `expr` (not evaluated).
    """

    const: object | None
    known: bool
    source: str
    origin: str = "literal"
    env: str | None = None
    default: object | None = None
    option: str | None = None


@dataclass(frozen=True)
class Call:
    """A keyword call of interest. `args` are the positional arguments; for `trainer.train(x)`
    the first positional argument is also given as `kwargs["resume_from_checkpoint"]`."""

    name: str
    site: Site
    kwargs: dict[str, Value]
    args: tuple[Value, ...] = ()
    qualname: str | None = None


@dataclass(frozen=True)
class Discovery:
    """How the program picks "the newest checkpoint".

    kind: `lexical` (names compared as text), `numeric` (the key parses the number, or the
    names were turned into numbers first, or natsort), `mtime` (modification/creation time),
    `hf-get-last` (transformers' `get_last_checkpoint`, or `train(resume_from_checkpoint=True)`
    which calls it), `framework` (the framework picks: Lightning `ckpt_path="last"`, accelerate
    `load_state()`, DeepSpeed `load_checkpoint` without a tag, DCP, training_hub),
    `unordered` (`glob(...)[-1]` without any sort: file-system order), `unknown`.

    `padded` is True when the names are fixed-width (a `????????` pattern, or the program writes
    them with a zero-padded number), so a text sort happens to be right.
    """

    kind: str
    site: Site
    pattern: str | None
    root: str | None
    padded: bool = False
    selector: str = ""  # sorted | sort | max | min | index | get_last_checkpoint | fit | load_state | …


@dataclass(frozen=True)
class StateIO:
    """One save or load of training state.

    content: `full` (optimizer state with the weights, or implied by the API), `weights` (model
    weights without optimizer state), `state` (optimizer/scheduler/step state without the
    weights, e.g. `torch.save(optimizer.state_dict(), …)`), `unknown`.
    `parts` are the components seen (model, optimizer, scheduler, scaler, rng, step, data);
    `missing` lists which of optimizer, scheduler, step are absent when content is not full.
    """

    op: str
    api: str
    content: str
    keys: tuple[str, ...]
    site: Site
    parts: tuple[str, ...] = ()
    missing: tuple[str, ...] = ()
    path: str | None = None  # the path / directory argument as written
    built: Site | None = None  # where the saved dict was built, when not on the save line


@dataclass(frozen=True)
class Option:
    """An argparse option: `parser.add_argument("--resume", default="")`."""

    dest: str
    flags: tuple[str, ...]
    default: Value
    site: Site
    required: bool = False


@dataclass
class PyFacts:
    parsed: bool
    error: str | None
    confidence: str
    imports: set[str] = field(default_factory=set)
    discovery: list[Discovery] = field(default_factory=list)
    io: list[StateIO] = field(default_factory=list)
    calls: dict[str, list[Call]] = field(default_factory=dict)
    env_reads: dict[str, Site] = field(default_factory=dict)
    sigterm_handler: Site | None = None
    prints: list[Site] = field(default_factory=list)
    options: dict[str, Option] = field(default_factory=dict)
    arg_parsers: dict[str, Site] = field(default_factory=dict)  # HfArgumentParser, TrlParser, argparse

    def first(self, name: str) -> Call | None:
        """The first call recorded under `name` (see `calls`)."""
        got = self.calls.get(name) or []
        return got[0] if got else None

    def kwarg(self, name: str, key: str) -> Value | None:
        """The first `key=` argument given to any call recorded under `name`."""
        for c in self.calls.get(name) or []:
            if key in c.kwargs:
                return c.kwargs[key]
        return None

    def uses(self, module: str) -> bool:
        """The program imports `module` or something under it."""
        return module in self.imports or any(i.startswith(module + ".") for i in self.imports)

    def content(self, op: str) -> str:
        """What the program's saves (`op="save"`) or loads hold together: full | weights | state |
        unknown | none (no such operation)."""
        recs = [r for r in self.io if r.op == op]
        if not recs:
            return "none"
        if any(r.content == "full" for r in recs):
            return "full"
        parts = {p for r in recs for p in r.parts}
        if "model" in parts and "optimizer" in parts:
            return "full"
        if any(r.content == "weights" for r in recs):
            return "weights"
        if any(r.content == "state" for r in recs):
            return "state"
        return "unknown"

    def matching_prints(self, line: str) -> list[Site]:
        """The print/log templates of the program that produce `line`."""
        out = []
        for s in self.prints:
            try:
                if re.search(template_regex(s.text), line):
                    out.append(s)
            except re.error:
                continue
        return out


def template_regex(template: str) -> str:
    """A regular expression matching what a print template (`resuming from {resume}`,
    `loaded %s`) produces."""
    out = []
    for part in re.split(r"(\{[^{}]*\}|%[-+ #0]*\d*(?:\.\d+)?[sdifrxge])", template):
        if not part:
            continue
        if (part.startswith("{") and part.endswith("}")) or (part.startswith("%") and len(part) > 1):
            out.append(".*?")
        else:
            out.append(re.escape(part))
    return "".join(out)


# ---------------------------------------------------------------------------------------------
# Vocabulary

_CKPT_WORDS = re.compile(r"checkpoint|ckpt|iter_|step|epoch|resume|snapshot", re.I)
_NOT_CKPT_EXT = re.compile(
    r"\.(?:json|jsonl|csv|tsv|txt|log|md|parquet|arrow|npz|npy|png|jpe?g|gif|wav|mp3|flac|tfrecords?|sql|"
    r"ya?ml|html|xml|zst|gz|tar|idx|bin_idx)\*?$|(?:^|[/_\-*])(?:shard|part|data|train|val|test|eval)[-_*]",
    re.I,
)
_RESUME_PATH_WORDS = re.compile(r"checkpoint|ckpt|resume|latest|last_|snapshot|step|epoch", re.I)
_SKIP_PRETRAINED = re.compile(r"token|processor|config|feature_extractor|extractor|scheduler", re.I)
_COMPONENTS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("optimizer", re.compile(r"optim|\bopt\b|opt_state|adam|sgd", re.I)),
    ("scheduler", re.compile(r"sched|lr_s|warmup", re.I)),
    ("scaler", re.compile(r"scaler|\bamp\b", re.I)),
    ("rng", re.compile(r"rng|random|seed", re.I)),
    ("data", re.compile(r"sampler|dataloader|data_loader|loader", re.I)),
    ("step", re.compile(r"step|epoch|iter|samples_seen|tokens_seen|progress", re.I)),
    (
        "model",
        re.compile(
            r"model|state_dict|weight|net|module|param|ema|encoder|decoder|generator|discriminator|unet|"
            r"policy|actor|critic|transformer|lora|adapter|backbone|classifier",
            re.I,
        ),
    ),
)
_KEY_PARTS = ("optimizer", "scheduler", "step")

_LISTING_FUNCS = {"glob", "iglob", "listdir", "scandir", "iterdir", "rglob"}
_TRANSPARENT = {"list", "tuple", "reversed", "set", "iter"}
_TRAINER_HF_MODULES = ("transformers", "trl", "peft", "llamafactory", "unsloth", "axolotl", "setfit", "optimum")
_TRL_CONFIGS = {
    "SFTConfig",
    "DPOConfig",
    "GRPOConfig",
    "PPOConfig",
    "ORPOConfig",
    "KTOConfig",
    "CPOConfig",
    "RewardConfig",
    "RLOOConfig",
    "OnlineDPOConfig",
    "BCOConfig",
    "GKDConfig",
    "PRMConfig",
    "XPOConfig",
    "NashMDConfig",
    "AlignPropConfig",
    "DDPOConfig",
    "IterativeSFTConfig",
}
_NOT_TRAINING_CONFIGS = {"ModelConfig", "DatasetMixtureConfig", "ScriptArguments", "ModelArguments"}
_PRINT_LEVELS = {"info", "warning", "warn", "error", "debug", "critical", "exception", "fatal"}
_MAX_DISCOVERY_CANDIDATES = 400
_IO_NAMES = (
    "save",
    "load",
    "async_save",
    "save_state_dict",
    "load_state_dict",
    "save_state",
    "load_state",
    "save_model",
    "save_pretrained",
    "from_pretrained",
    "load_from_checkpoint",
    "save_checkpoint",
    "load_checkpoint",
    "save_file",
    "load_file",
)
_MAX_SCOPE_BINDINGS = 64


# ---------------------------------------------------------------------------------------------
# Entry point


def read_python(source: str, filename: str = "<inline>") -> PyFacts:
    """Facts about a Python training program. Never raises."""
    if isinstance(source, bytes):
        source = source.decode("utf-8", "replace")
    if not isinstance(source, str):
        source = str(source)
    source = source.lstrip("\ufeff")
    tree, text, error = _parse(source, filename)
    if tree is None:
        return _read_text(source, error)
    enabled = gc.isenabled()
    gc.disable()  # ast nodes are many small objects: the collector would dominate the run time
    try:
        return _Reader(text, tree).facts()
    except Exception as e:  # a reader bug must not take the diagnosis down: fall back to text
        facts = _read_text(source, f"analysis failed ({type(e).__name__}: {e})")
        return facts
    finally:
        if enabled:
            gc.enable()


def _parse(source: str, filename: str) -> tuple[ast.Module | None, str, str | None]:
    enabled = gc.isenabled()
    gc.disable()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # "invalid escape sequence" and the like: the user's, not ours
            return _parse_quietly(source, filename)
    finally:
        if enabled:
            gc.enable()


def _parse_quietly(source: str, filename: str) -> tuple[ast.Module | None, str, str | None]:
    try:
        try:
            return ast.parse(source, filename=filename or "<inline>"), source, None
        except (SyntaxError, ValueError) as e:
            first = _describe(e)
        except (RecursionError, MemoryError) as e:
            return None, source, f"too deeply nested to parse ({type(e).__name__})"
        # a here-document body or a YAML block often keeps its indentation
        dedented = textwrap.dedent(source)
        if dedented != source:
            try:
                return ast.parse(dedented, filename=filename or "<inline>"), dedented, None
            except (SyntaxError, ValueError, RecursionError, MemoryError):
                pass
        return None, source, first
    except Exception as e:
        return None, source, f"unparseable ({type(e).__name__})"


def _describe(e: Exception) -> str:
    if isinstance(e, SyntaxError):
        where = f" (line {e.lineno})" if e.lineno else ""
        return f"SyntaxError: {e.msg}{where}"
    return f"{type(e).__name__}: {e}"


# ---------------------------------------------------------------------------------------------
# The ast reader


@dataclass
class _Bind:
    value: ast.AST | None  # None: bound but not to an expression we can follow (a parameter, a loop target)
    stmt: ast.AST
    func: str
    kind: str  # assign | param | for | unpack | with | import


@dataclass
class _List:
    hint: str  # names | ints | natural | unknown
    pattern: str | None = None
    root: str | None = None
    words: list[str] = field(default_factory=list)
    fixed: bool = False  # the pattern matches fixed-width names only
    listing: bool = False  # comes straight from a file-system listing


_FIELDS: dict[type, tuple[str, ...]] = {}


def _fields(t: type) -> tuple[str, ...]:
    """The child fields of an ast node class, without the expression context."""
    got = _FIELDS.get(t)
    if got is None:
        got = _FIELDS[t] = tuple(f for f in getattr(t, "_fields", ()) if f != "ctx")
    return got


_SPLIT_LINES = re.compile(r"\r\n|\r|\n")


def _pos(n: ast.AST) -> tuple[int, int]:
    return (getattr(n, "lineno", 0) or 0, getattr(n, "col_offset", 0) or 0)


def _end(n: ast.AST) -> tuple[int, int]:
    return (getattr(n, "end_lineno", 0) or 0, getattr(n, "end_col_offset", 0) or 0)


def _within(inner: ast.AST, outer: ast.AST) -> bool:
    return _pos(outer) <= _pos(inner) and _end(inner) <= _end(outer)


def _last(func: ast.AST) -> str:
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return ""


def _component(text: str) -> str | None:
    for name, rx in _COMPONENTS:
        if rx.search(text):
            return name
    return None


def _content(parts: set[str]) -> str:
    if "optimizer" in parts and "model" in parts:
        return "full"
    if "model" in parts:
        return "weights"
    if parts:
        return "state"
    return "unknown"


def _missing(parts: Iterable[str], content: str) -> tuple[str, ...]:
    if content in ("full", "unknown"):
        return ()
    have = set(parts)
    return tuple(p for p in _KEY_PARTS if p not in have)


def _int_index(sl: ast.AST) -> bool:
    """`[-1]`, `[0]`, `[:-3]`, `[len(x) - 1]`: one end of the list."""
    if isinstance(sl, ast.Slice):
        return True
    if isinstance(sl, ast.BinOp) and isinstance(sl.op, ast.Sub) and isinstance(sl.left, ast.Call):
        return _last(sl.left.func) == "len"
    if isinstance(sl, ast.Constant) and isinstance(sl.value, int) and not isinstance(sl.value, bool):
        return True
    return (
        isinstance(sl, ast.UnaryOp)
        and isinstance(sl.op, ast.USub)
        and isinstance(sl.operand, ast.Constant)
        and isinstance(sl.operand.value, int)
    )


class _Reader:
    def __init__(self, source: str, tree: ast.Module) -> None:
        self.src = source
        self.tree = tree
        self.lines = _SPLIT_LINES.split(source)
        self.aliases: dict[str, str] = {}
        self.imports: set[str] = set()
        self.binds: dict[tuple[str, str], list[_Bind]] = defaultdict(list)  # (name, scope) -> bindings
        self.binds_any: dict[str, list[_Bind]] = defaultdict(list)
        self.calls: list[tuple[ast.Call, ast.AST | None, str]] = []  # (call, stmt, func)
        self.by_attr: dict[str, list[tuple[ast.Call, ast.AST | None, str]]] = defaultdict(list)
        self.subs_of: dict[int, ast.Subscript] = {}  # id(value) -> the subscript taking an index of it
        self.sub_info: dict[int, tuple[ast.AST | None, str]] = {}  # id(subscript) -> (statement, scope)
        self.subs_by_name: dict[str, list[tuple[ast.Subscript, str]]] = defaultdict(list)
        self.arg_of: dict[int, ast.Call] = {}  # id(first positional arg) -> the call
        self.attr_sets: dict[str, list[tuple[str, ast.AST, ast.AST]]] = defaultdict(list)  # N.attr = v
        self.key_sets: dict[str, list[tuple[ast.AST, ast.AST]]] = defaultdict(list)  # N[k] = v
        self.uses: dict[int, set[str]] = defaultdict(set)  # id(stmt) -> names it reads
        self.stmt_targets: list[tuple[ast.AST, list[str]]] = []
        self.funcs: dict[str, list[ast.AST]] = defaultdict(list)
        self.func_params: dict[str, list[str]] = {}
        self.classes: dict[str, ast.ClassDef] = {}
        self.ifs: list[ast.If] = []
        self.if_parent: dict[int, ast.If] = {}  # id(statement or if) -> the innermost enclosing if
        self.func_nodes: list[ast.AST] = []
        self._func_starts: list[tuple[int, int]] | None = None
        self._opts: dict[str, Option] = {}
        self._line_text: dict[int, str] = {}
        self.fors: dict[int, ast.AST] = {}  # id(stmt) -> innermost enclosing for loop
        self.padded_templates: list[str] = []
        self.parsed_args: set[str] = set()  # names bound to parse_args()
        self._encoded: dict[int, bytes] = {}
        self._users: dict[str, set[str]] | None = None
        self.alias_of: dict[str, list[str]] = defaultdict(list)  # name -> names assigned from it as a whole

    # -- basic helpers ------------------------------------------------------------------------

    def site(self, node: ast.AST) -> Site:
        line = getattr(node, "lineno", 1) or 1
        text = self._line_text.get(line)
        if text is None:
            raw = self.lines[line - 1] if 0 < line <= len(self.lines) else ""
            text = self._line_text[line] = (raw[:2000].strip() if len(raw) > 2000 else raw.strip())[:300]
        return Site(line, text)

    def seg(self, node: ast.AST | None, limit: int = 400) -> str:
        if node is None:
            return ""
        try:
            l0, c0 = node.lineno, node.col_offset  # type: ignore[attr-defined]
            l1, c1 = node.end_lineno, node.end_col_offset  # type: ignore[attr-defined]
        except AttributeError:
            return ""
        if l1 is None or c1 is None or l0 < 1 or l1 > len(self.lines):
            return ""
        if l1 - l0 > 30:
            l1, c1 = l0 + 30, None
        pieces = []
        for ln in range(l0, l1 + 1):
            line = self.lines[ln - 1]
            start = c0 if ln == l0 else 0
            stop = c1 if ln == l1 else None
            if line.isascii():
                pieces.append(line[start:stop])
            else:
                b = self._encoded.get(ln)
                if b is None:
                    b = self._encoded[ln] = line.encode("utf-8", "replace")
                pieces.append(b[start:stop].decode("utf-8", "replace"))
        s = "\n".join(pieces)
        if len(s) > limit:
            s = s[:limit] + "…"
        return s

    def qual(self, node: ast.AST, _depth: int = 0) -> str | None:
        parts: list[str] = []
        depth = 0
        while isinstance(node, ast.Attribute) and depth < 20:
            parts.append(node.attr)
            node = node.value
            depth += 1
        if isinstance(node, ast.Name):
            parts.append(self.aliases.get(node.id, node.id))
        elif isinstance(node, ast.Call):
            inner = self.qual(node.func, _depth + 1) if _depth < 8 else None
            if inner is None:
                return None
            parts.append(inner + "()")
        else:
            return None
        return ".".join(reversed(parts))

    # -- the walk -----------------------------------------------------------------------------

    def walk(self) -> None:
        """One pass over the tree: statements recursively (they carry the scope, loop and `if`
        context), the expressions inside each statement in a tight loop."""
        self._walk_body(self.tree.body, "", None, None)
        # the walk is in source order but for decorators and defaults (met after the body)
        for lst in self.by_attr.values():
            if len(lst) > 1:
                lst.sort(key=lambda c: (c[0].lineno, c[0].col_offset))
        for subs in self.subs_by_name.values():
            if len(subs) > 1:
                subs.sort(key=lambda x: (x[0].lineno, x[0].col_offset))
        self.func_nodes.sort(key=_pos)
        self.ifs.sort(key=_pos)

    def _walk_body(self, body: list[ast.stmt], func: str, loop: ast.AST | None, cur_if: ast.If | None) -> None:
        for node in body:
            self._walk_stmt(node, func, loop, cur_if)

    def _walk_stmt(self, node: ast.stmt, func: str, loop: ast.AST | None, cur_if: ast.If | None) -> None:
        if cur_if is not None:
            self.if_parent[id(node)] = cur_if
        t = type(node)
        inner_func, inner_loop, inner_if = func, loop, cur_if
        if t is ast.FunctionDef or t is ast.AsyncFunctionDef:
            self._on_funcdef(node, func)  # type: ignore[arg-type]
            inner_func, inner_loop, inner_if = node.name, None, None  # type: ignore[attr-defined]
        else:
            if loop is not None:
                self.fors[id(node)] = loop
            self._on_stmt(node, func)
            if t is ast.For or t is ast.AsyncFor or t is ast.While:
                inner_loop = node
            elif t is ast.If:
                inner_if = node  # type: ignore[assignment]
        exprs: list[ast.AST] = []
        for name in _FIELDS.get(t) or _fields(t):
            v = getattr(node, name, None)
            if type(v) is list:
                for item in v:
                    if isinstance(item, ast.stmt):
                        # decorators and defaults belong to the outer scope, the body to the function
                        self._walk_stmt(item, inner_func, inner_loop, inner_if)
                    elif isinstance(item, ast.AST):
                        exprs.append(item)
            elif isinstance(v, ast.AST):
                exprs.append(v)
        if exprs:
            exprs.reverse()
            outer = t is ast.FunctionDef or t is ast.AsyncFunctionDef
            self._walk_exprs(exprs, node, func if outer else inner_func, inner_loop, inner_if)

    def _walk_exprs(
        self, stack: list[ast.AST], stmt: ast.stmt, func: str, loop: ast.AST | None, cur_if: ast.If | None
    ) -> None:
        pop, push = stack.pop, stack.append
        uses = self.uses[id(stmt)]
        Name, Call, Subscript, Constant, JoinedStr, NamedExpr = (
            ast.Name,
            ast.Call,
            ast.Subscript,
            ast.Constant,
            ast.JoinedStr,
            ast.NamedExpr,
        )
        Load, AST, stmt_t = ast.Load, ast.AST, ast.stmt
        fields = _FIELDS
        padded = self.padded_templates
        padded_rx = re.compile(r"%0\d+d|\{[^{}]*:0\d+d\}")

        def leaf(x: Any, tx: type) -> bool:
            """Handle a Name or Constant child in place (most children are); False for other nodes."""
            if tx is Name:
                if type(x.ctx) is Load:
                    uses.add(x.id)
                return True
            if tx is Constant:
                v = x.value
                if type(v) is str and ("%0" in v or ":0" in v) and padded_rx.search(v):
                    padded.append(v)
                return True
            return False

        for root in list(stack):
            if leaf(root, type(root)):
                stack.remove(root)
        while stack:
            n = pop()
            t = type(n)
            if t is Call:
                self._on_call(n, stmt, func)  # type: ignore[arg-type]
            elif t is Subscript:
                self._on_subscript(n, stmt, func)  # type: ignore[arg-type]
            elif t is JoinedStr:
                self._on_fstring(n)  # type: ignore[arg-type]
            elif t is NamedExpr:
                tg = n.target  # type: ignore[attr-defined]
                if isinstance(tg, Name):
                    self._bind(tg.id, n.value, stmt, func, "assign")  # type: ignore[attr-defined]
                    self.stmt_targets.append((stmt, [tg.id]))
            elif isinstance(n, stmt_t):  # the body of an except handler or a match case
                self._walk_stmt(n, func, loop, cur_if)
                continue
            names = fields.get(t)
            if names is None:
                names = _fields(t)
            # children pushed last-first, so they are popped in source order
            for name in reversed(names):
                v = getattr(n, name, None)
                if type(v) is list:
                    for item in reversed(v):
                        ti = type(item)
                        if ti is Name:
                            if type(item.ctx) is Load:
                                uses.add(item.id)
                        elif ti is Constant:
                            if type(item.value) is str:
                                leaf(item, ti)
                        elif isinstance(item, AST):
                            push(item)
                elif v is not None:
                    tv = type(v)
                    if tv is Name:
                        if type(v.ctx) is Load:
                            uses.add(v.id)
                    elif tv is Constant:
                        if type(v.value) is str:
                            leaf(v, tv)
                    elif isinstance(v, AST):
                        push(v)

    def _bind(self, name: str, value: ast.AST | None, stmt: ast.AST, func: str, kind: str) -> None:
        b = _Bind(value, stmt, func, kind)
        self.binds[(name, func)].append(b)
        self.binds_any[name].append(b)

    def _bind_target(self, target: ast.AST, value: ast.AST | None, stmt: ast.AST, func: str, kind: str) -> list[str]:
        if isinstance(target, ast.Name):
            self._bind(target.id, value, stmt, func, kind)
            return [target.id]
        if isinstance(target, ast.Starred):
            return self._bind_target(target.value, None, stmt, func, "unpack")
        if isinstance(target, ast.Tuple | ast.List):
            names: list[str] = []
            vals = value.elts if isinstance(value, ast.Tuple | ast.List) else None
            for i, el in enumerate(target.elts):
                v = vals[i] if vals is not None and len(vals) == len(target.elts) else None
                names += self._bind_target(el, v, stmt, func, kind if v is not None else "unpack")
            if isinstance(value, ast.Call) and names and _last(value.func) in ("parse_known_args",):
                self.parsed_args.add(names[0])
            return names
        if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and value is not None:
            self.attr_sets[target.value.id].append((target.attr, value, stmt))
        elif isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name) and value is not None:
            self.key_sets[target.value.id].append((target.slice, value))
        return []

    def _on_stmt(self, node: ast.AST, func: str) -> None:
        t = type(node)
        if t is ast.Assign:
            names: list[str] = []
            for tg in node.targets:  # type: ignore[attr-defined]
                names += self._bind_target(tg, node.value, node, func, "assign")  # type: ignore[attr-defined]
            v = node.value  # type: ignore[attr-defined]
            if isinstance(v, ast.Call) and _last(v.func) in ("parse_args", "parse_known_args") and names:
                self.parsed_args.add(names[0])
            elif isinstance(v, ast.Name):
                self.alias_of[v.id] += names
            self.stmt_targets.append((node, names))
        elif t is ast.AnnAssign:
            if node.value is not None:  # type: ignore[attr-defined]
                names = self._bind_target(node.target, node.value, node, func, "assign")  # type: ignore[attr-defined]
                self.stmt_targets.append((node, names))
        elif t is ast.AugAssign:
            tg = node.target  # type: ignore[attr-defined]
            if isinstance(tg, ast.Name):
                self._bind(tg.id, None, node, func, "unpack")
                self.stmt_targets.append((node, [tg.id]))
        elif t is ast.For or t is ast.AsyncFor:
            names = self._bind_target(node.target, None, node, func, "for")  # type: ignore[attr-defined]
            self.stmt_targets.append((node, names))
        elif t is ast.With or t is ast.AsyncWith:
            for item in node.items:  # type: ignore[attr-defined]
                if item.optional_vars is not None:
                    self._bind_target(item.optional_vars, None, node, func, "with")
        elif t is ast.Import:
            for a in node.names:  # type: ignore[attr-defined]
                self._add_import(a.name)
                if a.asname:
                    self.aliases[a.asname] = a.name
                    self._bind(a.asname, None, node, func, "import")
        elif t is ast.ImportFrom:
            mod = node.module or ""  # type: ignore[attr-defined]
            if node.level:  # type: ignore[attr-defined]
                mod = "." * node.level + mod  # type: ignore[attr-defined]
            else:
                self._add_import(mod)
            for a in node.names:  # type: ignore[attr-defined]
                if a.name == "*":
                    continue
                full = f"{mod}.{a.name}" if mod else a.name
                if not node.level:  # type: ignore[attr-defined]
                    self.imports.add(full)
                self.aliases[a.asname or a.name] = full
                self._bind(a.asname or a.name, None, node, func, "import")
        elif t is ast.ClassDef:
            self.classes.setdefault(node.name, node)  # type: ignore[attr-defined]
            self._bind(node.name, None, node, func, "import")  # type: ignore[attr-defined]
        elif t is ast.If:
            self.ifs.append(node)  # type: ignore[arg-type]
        elif t is ast.Return and func:
            self.uses[id(node)].add("")  # placeholder so the return is known to the flow graph
            self.stmt_targets.append((node, [func + "()"]))

    def _add_import(self, mod: str) -> None:
        if not mod:
            return
        parts = mod.split(".")
        for i in range(1, len(parts) + 1):
            self.imports.add(".".join(parts[:i]))

    def _on_funcdef(self, node: ast.FunctionDef | ast.AsyncFunctionDef, outer: str) -> None:
        self.funcs[node.name].append(node)
        self.func_nodes.append(node)
        self._bind(node.name, None, node, outer, "import")
        a = node.args
        params = [p.arg for p in a.posonlyargs + a.args]
        self.func_params.setdefault(node.name, params)
        for p in a.posonlyargs + a.args + a.kwonlyargs:
            self._bind(p.arg, None, node, node.name, "param")
        for p in (a.vararg, a.kwarg):
            if p is not None:
                self._bind(p.arg, None, node, node.name, "param")

    def _on_call(self, node: ast.Call, stmt: ast.AST | None, func: str) -> None:
        self.calls.append((node, stmt, func))
        f = node.func
        name = _last(f)
        if name:
            self.by_attr[name].append((node, stmt, func))
        if isinstance(f, ast.Name) and stmt is not None:
            self.uses[id(stmt)].add(f.id + "()")
        if node.args:
            self.arg_of[id(node.args[0])] = node
        if (
            name in ("__import__", "import_module")
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            self._add_import(node.args[0].value)

    def _on_subscript(self, node: ast.Subscript, stmt: ast.AST | None, func: str) -> None:
        if type(node.ctx) is not ast.Load:
            return
        self.subs_of[id(node.value)] = node
        self.sub_info[id(node)] = (stmt, func)
        if isinstance(node.value, ast.Name):
            self.subs_by_name[node.value.id].append((node, func))

    def _on_fstring(self, node: ast.JoinedStr) -> None:
        for v in node.values:
            if isinstance(v, ast.FormattedValue) and isinstance(v.format_spec, ast.JoinedStr):
                spec = "".join(
                    p.value for p in v.format_spec.values if isinstance(p, ast.Constant) and isinstance(p.value, str)
                )
                if re.fullmatch(r"0\d+d", spec):
                    self.padded_templates.append(self.template(node))
                    return

    # -- names and values ---------------------------------------------------------------------

    def _scope_binds(self, name: str, func: str) -> list[_Bind]:
        return self.binds.get((name, func)) or []

    def _preceding(self, name: str, at: ast.AST | None, func: str) -> tuple[list[_Bind], bool]:
        """Bindings of `name` visible at `at`: (bindings, from_module_scope)."""
        local = self._scope_binds(name, func) if func else []
        if local:
            if at is None:
                return local, False
            p = _pos(at)
            return [b for b in local if _end(b.stmt) <= p or b.kind == "param"], False
        glob = self._scope_binds(name, "")
        if not func and at is not None:
            p = _pos(at)
            glob = [b for b in glob if _end(b.stmt) <= p]
        return glob, True

    def _nearest(self, name: str, at: ast.AST | None, func: str) -> _Bind | None:
        binds, _ = self._preceding(name, at, func)
        if not binds:
            return None
        return max(binds, key=lambda b: _end(b.stmt))

    def func_of(self, node: ast.AST) -> str:
        """The name of the innermost function around `node` ("" at module level)."""
        if self._func_starts is None:
            self._func_starts = [_pos(f) for f in self.func_nodes]
        i = bisect.bisect_right(self._func_starts, _pos(node))
        for f in reversed(self.func_nodes[max(0, i - 64) : i]):  # nearest first; deep nesting is rare
            if _within(node, f):
                return getattr(f, "name", "")
        return ""

    def value(self, node: ast.AST | None, func: str = "", at: ast.AST | None = None) -> Value:
        if node is None:
            return Value(None, False, "", "expr")
        src = self.seg(node)
        try:
            const, known, origin, extra = self._eval(node, func, at if at is not None else node, 0)
        except (RecursionError, ValueError, TypeError, OverflowError, MemoryError, IndexError, KeyError):
            return Value(None, False, src, "expr")
        return Value(const if known else None, known, src, origin, **extra)

    def _eval(self, node: ast.AST, func: str, at: ast.AST, depth: int) -> tuple[Any, bool, str, dict[str, Any]]:
        unknown: tuple[Any, bool, str, dict[str, Any]] = (None, False, "expr", {})
        if depth > 8:
            return unknown
        t = type(node)
        if t is ast.Constant:
            v = node.value  # type: ignore[attr-defined]
            if isinstance(v, str | int | float | bool | bytes) or v is None:
                return v, True, "literal", {}
            return unknown
        if t is ast.Name:
            binds, _ = self._preceding(node.id, at, func)  # type: ignore[attr-defined]
            if not binds or len(binds) > _MAX_SCOPE_BINDINGS:
                return unknown
            results = []
            for b in binds:
                if b.value is None or b.kind != "assign":
                    return unknown
                c, k, o, e = self._eval(b.value, b.func, b.stmt, depth + 1)
                if not k:
                    if len(binds) == 1 and o in ("env", "argparse-default"):
                        return c, k, o, e  # ckpt_dir = os.environ["CKPT_DIR"]; f(output_dir=ckpt_dir)
                    return unknown
                results.append(c)
                if len(binds) == 1 and o == "argparse-default":
                    return c, k, o, e
            first = results[0]
            if all(r == first and type(r) is type(first) for r in results):
                return first, True, "name", {}
            return unknown
        if t is ast.Attribute:
            opt = self._argparse_option(node)  # type: ignore[arg-type]
            if opt is not None:
                d = opt.default
                return d.const, d.known, "argparse-default", {"option": opt.flags[0] if opt.flags else opt.dest}
            return unknown
        if t is ast.Subscript:
            env = self._env_name(node)
            if env is not None:
                return None, False, "env", {"env": env}
            return unknown
        if t is ast.Call:
            env = self._env_name(node)
            if env is not None:
                d = node.args[1] if len(node.args) > 1 else None  # type: ignore[attr-defined]
                dv = self._eval(d, func, at, depth + 1) if d is not None else (None, False, "", {})
                return None, False, "env", {"env": env, "default": dv[0] if dv[1] else None}
            q = self.qual(node.func) or ""  # type: ignore[attr-defined]
            args = [self._eval(a, func, at, depth + 1) for a in node.args[:8]]  # type: ignore[attr-defined]
            if q in ("int", "float", "str", "bool") and len(args) == 1 and args[0][2] == "env":
                return args[0]  # int(os.environ["SAVE_STEPS"]) is still that variable
            if node.keywords or not all(a[1] for a in args):  # type: ignore[attr-defined]
                return unknown
            vals = [a[0] for a in args]
            if q in ("os.path.join", "posixpath.join") and all(isinstance(v, str) for v in vals) and vals:
                out = vals[0]
                for v in vals[1:]:
                    out = v if v.startswith("/") else (out.rstrip("/") + "/" + v if out else v)
                return out, True, "expr", {}
            if q in ("int", "float", "str", "bool") and len(vals) == 1:
                conv = {"int": int, "float": float, "str": str, "bool": bool}[q]
                v0 = vals[0]
                if q in ("int", "float") and isinstance(v0, str) and len(v0) > 40:
                    return unknown
                return conv(v0), True, "expr", {}
            return unknown
        if t is ast.JoinedStr:
            out = []
            for part in node.values:  # type: ignore[attr-defined]
                if isinstance(part, ast.Constant):
                    out.append(str(part.value))
                elif isinstance(part, ast.FormattedValue):
                    if part.format_spec is not None or part.conversion not in (-1, None):
                        return unknown
                    c, k, _o, _e = self._eval(part.value, func, at, depth + 1)
                    if not k:
                        return unknown
                    out.append(str(c))
            return "".join(out), True, "expr", {}
        if t is ast.BinOp and isinstance(node.op, ast.Add):  # type: ignore[attr-defined]
            a = self._eval(node.left, func, at, depth + 1)  # type: ignore[attr-defined]
            b = self._eval(node.right, func, at, depth + 1)  # type: ignore[attr-defined]
            if a[1] and b[1] and type(a[0]) in (str, int, float) and type(a[0]) is type(b[0]):
                if isinstance(a[0], str) and len(a[0]) + len(b[0]) > 10_000:
                    return unknown
                return a[0] + b[0], True, "expr", {}
            return unknown
        if t is ast.UnaryOp:
            a = self._eval(node.operand, func, at, depth + 1)  # type: ignore[attr-defined]
            if not a[1]:
                return unknown
            if isinstance(node.op, ast.Not):  # type: ignore[attr-defined]
                return (not a[0]), True, "expr", {}
            if isinstance(node.op, ast.USub) and isinstance(a[0], int | float) and not isinstance(a[0], bool):  # type: ignore[attr-defined]
                return -a[0], True, "expr", {}
            return unknown
        if t is ast.List or t is ast.Tuple or t is ast.Set:
            elts = node.elts  # type: ignore[attr-defined]
            if len(elts) > 200:
                return unknown
            vals = []
            for e in elts:
                c, k, _o, _e = self._eval(e, func, at, depth + 1)
                if not k:
                    return unknown
                vals.append(c)
            if t is ast.Tuple:
                return tuple(vals), True, "literal", {}
            if t is ast.Set:
                try:
                    return set(vals), True, "literal", {}
                except TypeError:
                    return unknown
            return vals, True, "literal", {}
        if t is ast.Dict:
            if len(node.keys) > 200:  # type: ignore[attr-defined]
                return unknown
            out_d: dict[Any, Any] = {}
            for k, v in zip(node.keys, node.values, strict=False):  # type: ignore[attr-defined]
                if k is None:
                    return unknown
                kc = self._eval(k, func, at, depth + 1)
                vc = self._eval(v, func, at, depth + 1)
                if not (kc[1] and vc[1]):
                    return unknown
                try:
                    out_d[kc[0]] = vc[0]
                except TypeError:
                    return unknown
            return out_d, True, "literal", {}
        return unknown

    def _env_name(self, node: ast.AST) -> str | None:
        if isinstance(node, ast.Subscript):
            if self.qual(node.value) in ("os.environ", "environ"):
                s = node.slice
                if isinstance(s, ast.Constant) and isinstance(s.value, str):
                    return s.value
            return None
        if isinstance(node, ast.Call):
            q = self.qual(node.func) or ""
            if (
                q in ("os.getenv", "os.environ.get", "os.environ.setdefault", "os.environ.pop", "environ.get")
                and node.args
                and isinstance(node.args[0], ast.Constant)
                and isinstance(node.args[0].value, str)
            ):
                return node.args[0].value
        return None

    # -- argparse -------------------------------------------------------------------------------

    def options(self) -> dict[str, Option]:
        out: dict[str, Option] = {}
        for node, _stmt, func in self.by_attr.get("add_argument", ()):
            flags = tuple(a.value for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str))
            if not flags:
                continue
            kw = {k.arg: k.value for k in node.keywords if k.arg}
            dest = None
            if "dest" in kw and isinstance(kw["dest"], ast.Constant) and isinstance(kw["dest"].value, str):
                dest = kw["dest"].value
            if dest is None:
                longs = [f for f in flags if f.startswith("--")]
                pick = longs[0] if longs else flags[0]
                dest = pick.lstrip("-").replace("-", "_")
            required = False
            if "required" in kw and isinstance(kw["required"], ast.Constant):
                required = bool(kw["required"].value)
            action = kw.get("action")
            act = action.value if isinstance(action, ast.Constant) else None
            if "default" in kw:
                default = self.value(kw["default"], func)
                default = Value(default.const, default.known, default.source, "argparse-default")
            elif act == "store_true":
                default = Value(False, True, "", "argparse-default")
            elif act == "store_false":
                default = Value(True, True, "", "argparse-default")
            elif required or not flags[0].startswith("-"):
                default = Value(None, False, "", "argparse-default")
            else:
                default = Value(None, True, "", "argparse-default")
            if required:
                default = Value(None, False, default.source, "argparse-default")
            out.setdefault(dest, Option(dest, flags, default, self.site(node), required))
        return out

    def _argparse_option(self, node: ast.Attribute) -> Option | None:
        opts = self._opts
        if not opts or node.attr not in opts:
            return None
        base = node.value
        name = base.id if isinstance(base, ast.Name) else (base.attr if isinstance(base, ast.Attribute) else "")
        if name in self.parsed_args or name in ("args", "opt", "opts", "flags", "FLAGS", "cfg", "hparams", "a"):
            return opts[node.attr]
        return None

    # -- templates ------------------------------------------------------------------------------

    def template(self, node: ast.AST, depth: int = 0) -> str:
        """A string expression as text with `{expr}` for the parts not known statically."""
        if depth > 6:
            return "{" + self.seg(node, 80) + "}"
        if isinstance(node, ast.Constant):
            return str(node.value) if isinstance(node.value, str) else "{" + self.seg(node, 80) + "}"
        if isinstance(node, ast.JoinedStr):
            out = []
            for v in node.values:
                if isinstance(v, ast.Constant):
                    out.append(str(v.value))
                elif isinstance(v, ast.FormattedValue):
                    out.append("{" + self.seg(v.value, 80) + "}")
            return "".join(out)
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            return self.template(node.left, depth + 1) + self.template(node.right, depth + 1)
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod) and isinstance(node.left, ast.Constant):
            fmt = str(node.left.value)
            args = node.right.elts if isinstance(node.right, ast.Tuple) else [node.right]
            it = iter(args)

            def sub(m: re.Match[str]) -> str:
                if m.group(0) == "%%":
                    return "%"
                a = next(it, None)
                return "{" + (self.seg(a, 80) if a is not None else "") + "}"

            return re.sub(r"%%|%[-+ #0]*\d*(?:\.\d+)?[sdifrxge]", sub, fmt)
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "format"
            and isinstance(node.func.value, ast.Constant)
            and isinstance(node.func.value.value, str)
        ):
            fmt = node.func.value.value
            pos = iter(node.args)
            kws = {k.arg: k.value for k in node.keywords if k.arg}

            def fsub(m: re.Match[str]) -> str:
                inner = m.group(1).split(":", 1)[0].split("!", 1)[0]
                if inner == "" or inner.isdigit():
                    a = next(pos, None)
                elif inner in kws:
                    a = kws[inner]
                else:
                    return "{" + inner + "}"
                return "{" + (self.seg(a, 80) if a is not None else "") + "}"

            return re.sub(r"\{([^{}]*)\}", fsub, fmt)
        if (
            isinstance(node, ast.Call)
            and _last(node.func) == "join"
            and self.qual(node.func)
            in (
                "os.path.join",
                "posixpath.join",
            )
        ):
            return "/".join(self.template(a, depth + 1) for a in node.args)
        if isinstance(node, ast.Name) and depth < 3:
            b = self._nearest(node.id, node, self.func_of(node))
            if b is not None and b.kind == "assign" and isinstance(b.value, ast.Constant | ast.JoinedStr | ast.BinOp):
                t = self.template(b.value, depth + 2)
                if t.count("{") < 3:
                    return t
        return "{" + self.seg(node, 80) + "}"

    # -- flow -----------------------------------------------------------------------------------

    @property
    def users(self) -> dict[str, set[str]]:
        if self._users is None:
            users: dict[str, set[str]] = defaultdict(set)
            for stmt, targets in self.stmt_targets:
                for u in self.uses.get(id(stmt), ()):
                    if u:
                        users[u].update(targets)
            self._users = users
        return self._users

    def reach(self, seeds: Iterable[str], hops: int = 3, limit: int = 200) -> set[str]:
        """The names a value flows into within `hops` assignments (`path = os.path.join(d, latest)`)."""
        seen = set(seeds)
        level = list(seen)
        users = self.users
        for _ in range(hops):
            nxt = []
            for n in level:
                for u in users.get(n, ()):
                    if u not in seen:
                        seen.add(u)
                        nxt.append(u)
            if not nxt or len(seen) >= limit:
                break
            level = nxt
        return seen

    def _aliases_of(self, seeds: set[str]) -> dict[str, bool]:
        """The seeds and the names bound to them as a whole (`xs = ckpts`, `found = find_latest(d)` for a
        `F()` seed): name -> whether it may live in another scope."""
        out = {n: False for n in seeds if not n.endswith("()")}
        for n in seeds:
            if n.endswith("()"):
                for call, stmt, _f in self.by_attr.get(n[:-2], ()):
                    if isinstance(call.func, ast.Name):
                        for t in self._bound_names(call, stmt):
                            out[t] = True
            else:
                for t in self.alias_of.get(n, ()):
                    out.setdefault(t, False)
        return out

    def seeds_of(self, node: ast.AST, stmt: ast.AST | None, func: str) -> set[str]:
        if stmt is None:
            return set()
        if isinstance(stmt, ast.Assign | ast.AnnAssign | ast.AugAssign):
            names: set[str] = set()
            tgs = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            for tg in tgs:
                for n in ast.walk(tg):
                    if isinstance(n, ast.Name):
                        names.add(n.id)
            return names
        if isinstance(stmt, ast.Return) and func:
            return {func + "()"}
        if isinstance(stmt, ast.For):
            return {n.id for n in ast.walk(stmt.target) if isinstance(n, ast.Name)}
        return set()

    # -- facts ------------------------------------------------------------------------------------

    def facts(self) -> PyFacts:
        self.walk()
        self._opts = self.options()
        out = PyFacts(parsed=True, error=None, confidence="high")
        out.imports = set(self.imports)
        out.options = self._opts
        out.arg_parsers = self._arg_parsers()
        out.env_reads = self._env_reads()
        out.sigterm_handler = self._sigterm()
        out.prints = self._prints()
        out.calls = self._calls()
        out.discovery = self._discoveries(out.calls)
        out.io = self._io(out.calls)
        return out

    def _arg_parsers(self) -> dict[str, Site]:
        out: dict[str, Site] = {}
        for name in ("HfArgumentParser", "TrlParser", "ArgumentParser"):
            for node, _s, _f in self.by_attr.get(name, ()):
                out.setdefault("argparse" if name == "ArgumentParser" else name, self.site(node))
        return out

    def _env_reads(self) -> dict[str, Site]:
        found: list[tuple[int, str, ast.AST]] = []
        for attr in ("getenv", "get", "setdefault", "pop"):
            for node, _s, _f in self.by_attr.get(attr, ()):
                name = self._env_name(node)
                if name is not None:
                    found.append((node.lineno, name, node))
        for sub in list(self.subs_of.values()):
            v = sub.value
            if not (
                (isinstance(v, ast.Attribute) and v.attr == "environ")
                or (isinstance(v, ast.Name) and v.id == "environ")
            ):
                continue
            name = self._env_name(sub)
            if name is not None:
                found.append((sub.lineno, name, sub))
        for n in ast.walk(self.tree) if self._has_in_environ() else ():
            if (
                isinstance(n, ast.Compare)
                and len(n.ops) == 1
                and isinstance(n.ops[0], ast.In | ast.NotIn)
                and isinstance(n.left, ast.Constant)
                and isinstance(n.left.value, str)
                and self.qual(n.comparators[0]) in ("os.environ", "environ")
            ):
                found.append((n.lineno, n.left.value, n))
        out: dict[str, Site] = {}
        for _line, name, node in sorted(found, key=lambda x: x[0]):
            out.setdefault(name, self.site(node))
        return out

    def _has_in_environ(self) -> bool:
        return bool(re.search(r"\bin\s+(?:os\.)?environ\b", self.src))

    def _sigterm(self) -> Site | None:
        cands = list(self.by_attr.get("signal", ())) + list(self.by_attr.get("add_signal_handler", ()))
        best: ast.Call | None = None
        for node, _s, func in cands:
            q = self.qual(node.func) or ""
            if _last(node.func) == "signal" and q not in ("signal.signal", "signal"):
                continue
            if len(node.args) < 2:
                continue
            sig, handler = node.args[0], node.args[1]
            hs = self.seg(handler)
            if hs.endswith(("SIG_DFL", "SIG_IGN")):
                continue
            if self._is_sigterm(sig, func) and (best is None or node.lineno < best.lineno):
                best = node
        return self.site(best) if best is not None else None

    def _is_sigterm(self, sig: ast.AST, func: str) -> bool:
        s = self.seg(sig)
        if "SIGTERM" in s:
            return True
        if isinstance(sig, ast.Constant) and sig.value == 15:
            return True
        if isinstance(sig, ast.Name):
            for b in self.binds_any.get(sig.id, ()):
                if b.kind == "for" and isinstance(b.stmt, ast.For) and "SIGTERM" in self.seg(b.stmt.iter):
                    return True
                if b.kind == "assign" and b.value is not None and "SIGTERM" in self.seg(b.value):
                    return True
        return False

    # -- prints -----------------------------------------------------------------------------------

    def _prints(self) -> list[Site]:
        out: list[Site] = []
        seen: set[tuple[int, str]] = set()
        cands = [
            c
            for name, lst in self.by_attr.items()
            if name in _PRINT_LEVELS
            or name in ("log", "write", "echo", "secho")
            or "print" in name.lower()
            or name in ("rank_zero_info", "rank_zero_warn")
            for c in lst
        ]
        for node, _s, _f in cands:
            msgs = self._print_args(node)
            if not msgs:
                continue
            for tpl in self._templates_of(msgs, node):
                if not re.search(r"[A-Za-z]", tpl):
                    continue
                key = (node.lineno, tpl)
                if key not in seen:
                    seen.add(key)
                    out.append(Site(node.lineno, tpl[:400]))
        out.sort(key=lambda s: s.line)
        return out

    def _print_args(self, node: ast.Call) -> list[ast.AST] | None:
        f = node.func
        name = _last(f)
        if isinstance(f, ast.Name):
            if name == "print" or "print" in name.lower() or name in ("rank_zero_info", "rank_zero_warn"):
                return list(node.args)
            if self.aliases.get(name, "").startswith(("logging.", "loguru.")) and name in _PRINT_LEVELS:
                return list(node.args[:1])
            return None
        if not isinstance(f, ast.Attribute):
            return None
        recv = self.seg(f.value, 80)
        if name in _PRINT_LEVELS and (re.search(r"log", recv, re.I) or recv in ("warnings", "logging")):
            return list(node.args[:1])
        if name == "log" and re.search(r"log", recv, re.I) and len(node.args) >= 2:
            return [node.args[1]]
        if name == "print":
            return list(node.args)
        if name == "write" and recv in ("sys.stdout", "sys.stderr", "tqdm"):
            return list(node.args[:1])
        if name in ("echo", "secho") and recv in ("click", "typer"):
            return list(node.args[:1])
        return None

    def _templates_of(self, msgs: list[ast.AST], call: ast.Call) -> list[str]:
        # a conditional message prints either branch
        for i, m in enumerate(msgs):
            if isinstance(m, ast.IfExp):
                return self._templates_of([*msgs[:i], m.body, *msgs[i + 1 :]], call) + self._templates_of(
                    [*msgs[:i], m.orelse, *msgs[i + 1 :]], call
                )
        sep = " "
        for k in call.keywords:
            if k.arg == "sep" and isinstance(k.value, ast.Constant) and isinstance(k.value.value, str):
                sep = k.value.value
        f = call.func
        level_call = isinstance(f, ast.Attribute) and f.attr in _PRINT_LEVELS | {"log"}
        parts = []
        literal = False
        for m in msgs:
            if isinstance(m, ast.Constant | ast.JoinedStr | ast.BinOp) or (
                isinstance(m, ast.Call) and isinstance(m.func, ast.Attribute) and m.func.attr == "format"
            ):
                tpl = self.template(m)
                literal = literal or any(
                    isinstance(x, ast.Constant) and isinstance(x.value, str) and x.value.strip() for x in ast.walk(m)
                )
                parts.append(tpl)
            else:
                parts.append("{" + self.seg(m, 80) + "}")
        if not literal:
            return []
        text = sep.join(parts)
        if level_call and isinstance(msgs[0], ast.Constant) and len(call.args) > 1:
            rest = call.args[1:] if _last(f) != "log" else call.args[2:]
            it = iter(rest)
            text = re.sub(
                r"%[-+ #0]*\d*(?:\.\d+)?[sdifrxge]",
                lambda m: "{" + self.seg(next(it, None), 80) + "}",
                text,
            )
        return [text]

    # -- calls ------------------------------------------------------------------------------------

    def _local_class_bases(self, name: str) -> list[str] | None:
        c = self.classes.get(name)
        if c is None:
            return None
        return [self.qual(b) or self.seg(b) for b in c.bases]

    def _is_hf_module(self, q: str | None) -> bool:
        return bool(q) and q.split(".")[0] in _TRAINER_HF_MODULES  # type: ignore[union-attr]

    def _hf_imported(self) -> bool:
        return any(m in self.imports for m in _TRAINER_HF_MODULES)

    def _classify_trainer(self, node: ast.Call) -> str | None:
        """ "Trainer" (HF-style), "lightning.Trainer" or None."""
        name = _last(node.func)
        if not name.endswith("Trainer"):
            return None
        q = self.qual(node.func) or name
        if q.startswith(("lightning", "pytorch_lightning")):
            return "lightning.Trainer" if name == "Trainer" else None
        bases = self._local_class_bases(name)
        if bases is not None and not any(b.rsplit(".", 1)[-1].endswith("Trainer") for b in bases):
            return None
        return "Trainer"

    def _hf_trainer(self, node: ast.Call) -> bool:
        name = _last(node.func)
        q = self.qual(node.func) or name
        if self._is_hf_module(q):
            return True
        bases = self._local_class_bases(name)
        if bases is not None:
            return any(self._is_hf_module(b) or (b.endswith("Trainer") and self._hf_imported()) for b in bases)
        return "." not in q and self._hf_imported()  # a bare name: HF when transformers/trl are imported

    def _is_training_args(self, node: ast.Call) -> bool:
        name = _last(node.func)
        if name in _NOT_TRAINING_CONFIGS:
            return False
        q = self.qual(node.func) or name
        if name.endswith("TrainingArguments") or name in _TRL_CONFIGS:
            return True
        if q.startswith("trl.") and name.endswith("Config"):
            return True
        bases = self._local_class_bases(name)
        if bases:
            return any(b.rsplit(".", 1)[-1].endswith("TrainingArguments") or b in _TRL_CONFIGS for b in bases)
        return False

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

    def _pl_imported(self) -> bool:
        return "lightning" in self.imports or "pytorch_lightning" in self.imports

    def _is_hf_get_last(self, node: ast.Call) -> bool:
        q = self.qual(node.func) or ""
        if q.startswith("transformers"):
            return True
        return "get_last_checkpoint" not in self.funcs

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

    # -- discovery ----------------------------------------------------------------------------

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
        return Discovery(kind, self.site(node), lst.pattern, lst.root, self._padded(lst), name)

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
        out: list[Discovery] = []
        for node, _s, _f in self.by_attr.get("get_last_checkpoint", ()):
            if self._is_hf_get_last(node):
                a = node.args[0] if node.args else next((k.value for k in node.keywords), None)
                out.append(
                    Discovery(
                        "hf-get-last",
                        self.site(node),
                        "checkpoint-*",
                        self.seg(a) or None,
                        False,
                        "get_last_checkpoint",
                    )
                )
        ta_dir = None
        for c in self.ta_calls:
            if "output_dir" in c.kwargs:
                ta_dir = c.kwargs["output_dir"].source
                break
        for c in calls.get("train", ()):
            v = c.kwargs.get("resume_from_checkpoint")
            if v is not None and v.known and v.const is True:
                out.append(Discovery("hf-get-last", c.site, "checkpoint-*", ta_dir, False, "train"))
        mc_dir = None
        for c in calls.get("ModelCheckpoint", ()):
            if "dirpath" in c.kwargs:
                mc_dir = c.kwargs["dirpath"].source
                break
        for c in calls.get("fit", ()):
            v = c.kwargs.get("ckpt_path")
            if v is not None and v.known and v.const in ("last", "best", "hpc", "registry"):
                pat = "last.ckpt" if v.const == "last" else None
                out.append(Discovery("framework", c.site, pat, mc_dir, False, "fit"))
        for node, _s, _f in self.by_attr.get("load_state", ()):
            if self._is_accelerate(node) and not node.args and not any(k.arg == "input_dir" for k in node.keywords):
                proj = self._accelerate_project_dir(calls)
                out.append(Discovery("framework", self.site(node), "checkpoint_*", proj, False, "load_state"))
        for node, _s, func in self.by_attr.get("load_checkpoint", ()):
            if self._deepspeed_engine(node):
                tag = (
                    node.args[1]
                    if len(node.args) > 1
                    else next((k.value for k in node.keywords if k.arg == "tag"), None)
                )
                tv = self.value(tag, func, node) if tag is not None else None
                if tv is None or (tv.known and tv.const is None):  # no tag: DeepSpeed reads `latest`
                    a = (
                        node.args[0]
                        if node.args
                        else next((k.value for k in node.keywords if k.arg == "load_dir"), None)
                    )
                    out.append(
                        Discovery("framework", self.site(node), "latest", self.seg(a) or None, False, "load_checkpoint")
                    )
        for node, _s, _f in [*self.by_attr.get("load", ()), *self.by_attr.get("load_state_dict", ())]:
            if (self.qual(node.func) or "").startswith("torch.distributed.checkpoint"):
                a = next((k.value for k in node.keywords if k.arg == "checkpoint_id"), None)
                out.append(Discovery("framework", self.site(node), None, self.seg(a) or None, False, "dcp.load"))
        for c in calls.get("sft", ()):
            d = c.kwargs.get("ckpt_output_dir")
            out.append(Discovery("framework", c.site, "full_state/*", d.source if d else None, False, "sft"))
        return out

    def _accelerate_project_dir(self, calls: dict[str, list[Call]]) -> str | None:
        for c in calls.get("Accelerator", ()):
            for k in ("project_dir", "logging_dir"):
                if k in c.kwargs:
                    return c.kwargs[k].source
        return None

    # -- state io ------------------------------------------------------------------------------

    def _is_accelerate(self, node: ast.Call) -> bool:
        f = node.func
        if not isinstance(f, ast.Attribute):
            return False
        recv = self.seg(f.value, 80)
        if re.search(r"accel", recv, re.I):
            return True
        q = self.qual(f) or ""
        if q.startswith("accelerate"):
            return True
        return "accelerate" in self.imports and not re.search(r"trainer|fabric", recv, re.I)

    def _deepspeed_engine(self, node: ast.Call) -> bool:
        f = node.func
        if not isinstance(f, ast.Attribute):
            return False
        recv = self.seg(f.value, 80)
        if re.search(r"trainer", recv, re.I) and self._pl_imported():
            return False
        return "deepspeed" in self.imports or bool(re.search(r"engine|deepspeed|\bds_", recv, re.I))

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

    def _training_args_for(self, trainer: Call) -> Call | None:
        a = trainer.kwargs.get("args")
        if a is not None and a.source in self.ta_by_name:
            return self.ta_by_name[a.source]
        return self._training_args_for_any()

    def _training_args_for_any(self) -> Call | None:
        return self.ta_calls[0] if len(self.ta_calls) == 1 else None


# ---------------------------------------------------------------------------------------------
# The text fallback (syntax errors, Python 2, templates): conservative, low confidence

_T_IMPORT = re.compile(r"^[ \t]*(?:from[ \t]+([\w.]+)[ \t]+import[ \t]+([\w, \t()]+)|import[ \t]+([\w., \t]+))", re.M)
_T_SELECT = re.compile(r"\b(sorted|max|min|natsorted)\s*\(")
_T_SORT = re.compile(r"\b(\w+)\.sort\(([^)\n]*)\)")
_T_LISTING = re.compile(r"\b(?:glob|iglob|listdir|scandir|iterdir|rglob)\s*\(")
_T_ENV = re.compile(r"""os\.(?:environ\[\s*|environ\.get\(\s*|getenv\(\s*)["'](\w+)["']""")
_T_PRINT = re.compile(
    r"""\b(?:print|info|warning|warn|error|debug)\s*\(?\s*[fFrRbBuU]{0,2}(["'])((?:\\.|(?!\1).){1,300}?)\1"""
)
_T_CALL = re.compile(
    r"\b(\w*TrainingArguments|SFTConfig|GRPOConfig|DPOConfig|\w*Trainer|ModelCheckpoint|sft|get_last_checkpoint)\s*\("
    r"|\.(train|fit)\s*\("
)
_T_IO: tuple[tuple[re.Pattern[str], str, str], ...] = (
    (re.compile(r"\btorch\.save\s*\("), "save", "torch.save"),
    (re.compile(r"\btorch\.load\s*\("), "load", "torch.load"),
    (re.compile(r"\.save_pretrained\s*\("), "save", "save_pretrained"),
    (re.compile(r"\.save_state\s*\("), "save", "accelerate.save_state"),
    (re.compile(r"\.load_state\s*\("), "load", "accelerate.load_state"),
    (re.compile(r"\.save_checkpoint\s*\("), "save", "deepspeed.save_checkpoint"),
    (re.compile(r"\.load_checkpoint\s*\("), "load", "deepspeed.load_checkpoint"),
    (re.compile(r"\bdcp\.save\s*\("), "save", "dcp.save"),
    (re.compile(r"\bdcp\.load\s*\("), "load", "dcp.load"),
    (re.compile(r"\.load_state_dict\s*\("), "load", "load_state_dict"),
    (re.compile(r"\.save_model\s*\("), "save", "trainer.save_model"),
)


class _Text:
    def __init__(self, source: str) -> None:
        self.src = source
        self.starts = [0] + [m.end() for m in re.finditer(r"\r\n|\r|\n", source)]
        self.lines = _SPLIT_LINES.split(source)

    def line_no(self, pos: int) -> int:
        return bisect.bisect_right(self.starts, pos)

    def site(self, pos: int) -> Site:
        n = self.line_no(pos)
        return Site(n, self.lines[n - 1].strip()[:300] if 0 < n <= len(self.lines) else "")

    def balanced(self, open_pos: int, limit: int = 3000) -> str:
        """The text inside the parenthesis opening at `open_pos` (bounded)."""
        depth = 0
        quote = ""
        i = open_pos
        end = min(len(self.src), open_pos + limit)
        while i < end:
            ch = self.src[i]
            if quote:
                if ch == "\\":
                    i += 2
                    continue
                if ch == quote:
                    quote = ""
            elif ch in "\"'":
                quote = ch
            elif ch in "([{":
                depth += 1
            elif ch in ")]}":
                depth -= 1
                if depth == 0:
                    return self.src[open_pos + 1 : i]
            elif ch == "\n" and depth == 0:
                break
            i += 1
        return self.src[open_pos + 1 : end]


def _split_top(args: str) -> list[str]:
    out, depth, quote, cur = [], 0, "", []
    i = 0
    while i < len(args):
        ch = args[i]
        if quote:
            cur.append(ch)
            if ch == "\\" and i + 1 < len(args):
                cur.append(args[i + 1])
                i += 2
                continue
            if ch == quote:
                quote = ""
        elif ch in "\"'":
            quote = ch
            cur.append(ch)
        elif ch in "([{":
            depth += 1
            cur.append(ch)
        elif ch in ")]}":
            depth -= 1
            cur.append(ch)
        elif ch == "," and depth == 0:
            out.append("".join(cur).strip())
            cur = []
        else:
            cur.append(ch)
        i += 1
    if "".join(cur).strip():
        out.append("".join(cur).strip())
    return out


def _literal(text: str) -> Value:
    try:
        v = ast.literal_eval(text.strip())
        if isinstance(v, str | int | float | bool) or v is None:
            return Value(v, True, text.strip()[:400])
    except Exception:
        pass
    if text.strip() in ("true", "false"):
        return Value(text.strip() == "true", True, text.strip())
    return Value(None, False, text.strip()[:400], "expr")


def _read_text(source: str, error: str | None) -> PyFacts:
    out = PyFacts(parsed=False, error=error, confidence="low")
    try:
        _fill_text(out, source)
    except Exception as e:  # the fallback must never raise either
        out.error = f"{error}; text search failed ({type(e).__name__})"
    return out


_T_MAX_MATCHES = 2000  # per construct: a huge unparseable file is searched, not exhausted
_T_INDEXED = re.compile(r"\b(\w+)\s*\[\s*(?:-?\d+|:)")
_T_ASSIGN = re.compile(r"^[ \t]*(\w+)[ \t]*=(?!=)[ \t]*([^\n]*)", re.M)


def _fill_text(out: PyFacts, source: str) -> None:
    t = _Text(source)
    for m in _T_IMPORT.finditer(source):
        if m.group(1):
            mod = m.group(1)
            parts = mod.split(".")
            out.imports.update(".".join(parts[:i]) for i in range(1, len(parts) + 1))
            for name in re.split(r"[\s,()]+", m.group(2)):
                if name and name != "as" and re.fullmatch(r"\w+", name):
                    out.imports.add(f"{mod}.{name}")
        else:
            for mod in re.split(r"\s*,\s*", m.group(3).strip()):
                mod = mod.split(" as ")[0].strip()
                if mod:
                    parts = mod.split(".")
                    out.imports.update(".".join(parts[:i]) for i in range(1, len(parts) + 1))
    indexed = {m.group(1) for m in _T_INDEXED.finditer(source)}  # names used as xs[-1], xs[0], xs[:…]
    assigned: dict[str, list[tuple[int, str]]] = defaultdict(list)  # name -> (offset, right-hand side)
    for m in _T_ASSIGN.finditer(source):
        assigned[m.group(1)].append((m.start(), m.group(2)[:400]))
    # discovery
    for n, m in enumerate(_T_SELECT.finditer(source)):
        if n >= _T_MAX_MATCHES:
            break
        inner = t.balanced(m.end() - 1, 800)
        if not _T_LISTING.search(inner) and m.group(1) != "natsorted":
            continue
        line_text = t.site(m.start()).text
        close = m.end() + len(inner)
        after = source[close : close + 8]
        if m.group(1) in ("sorted", "natsorted") and not re.match(r"\s*\)*\s*\[", after):
            am = re.search(r"(\w+)\s*=\s*$", source[max(0, m.start() - 80) : m.start()])
            if not am or am.group(1) not in indexed:
                continue
        if not (_CKPT_WORDS.search(inner) or _CKPT_WORDS.search(line_text) or re.search(r"load|resume", line_text)):
            continue
        top = _split_top(inner)
        key = next((a.split("=", 1)[1] for a in top if re.match(r"key\s*=", a)), None)
        if m.group(1) == "natsorted":
            kind = "numeric"
        elif key is None:
            kind = "lexical"
        elif re.search(r"getmtime|getctime|\bstat\b|st_mtime", key):
            kind = "mtime"
        elif re.search(r"\bint\s*\(|\bfloat\s*\(|\blen\b|natsort|natural", key):
            kind = "numeric"
        else:
            kind = "unknown"
        pm = re.search(r"""["']([^"']*[*?][^"']*)["']""", inner)
        pattern = pm.group(1).rsplit("/", 1)[-1] if pm else None
        out.discovery.append(Discovery(kind, t.site(m.start()), pattern, None, False, m.group(1)))
    for n, m in enumerate(_T_SORT.finditer(source)):
        if n >= _T_MAX_MATCHES:
            break
        name = m.group(1)
        if name not in indexed:
            continue
        binds = [rhs for pos, rhs in assigned.get(name, ()) if pos < m.start()]
        rhs = binds[-1] if binds else ""
        if not _T_LISTING.search(rhs) or not (_CKPT_WORDS.search(rhs) or _CKPT_WORDS.search(name)):
            continue
        key = re.search(r"key\s*=(.*)", m.group(2))
        kind = "lexical"
        if key:
            k = key.group(1)
            if re.search(r"getmtime|getctime|stat", k):
                kind = "mtime"
            elif re.search(r"\bint\s*\(|\blen\b|natsort", k):
                kind = "numeric"
            else:
                kind = "unknown"
        out.discovery.append(Discovery(kind, t.site(m.start()), None, None, False, "sort"))
    for n, m in enumerate(re.finditer(r"\bget_last_checkpoint\s*\(", source)):
        if n >= _T_MAX_MATCHES:
            break
        out.discovery.append(
            Discovery("hf-get-last", t.site(m.start()), "checkpoint-*", None, False, "get_last_checkpoint")
        )
    # io
    for rx, op, api in _T_IO:
        for n, m in enumerate(rx.finditer(source)):
            if n >= _T_MAX_MATCHES:
                break
            inner = t.balanced(m.end() - 1, 800)
            content, keys, parts = "unknown", (), ()
            if api == "torch.save":
                arg0 = (_split_top(inner) or [""])[0]
                if arg0.startswith("{"):
                    keys = tuple(re.findall(r"""["'](\w+)["']\s*:""", arg0))
                    ps = {c for k in keys if (c := _component(k))}
                    content, parts = _content(ps), tuple(sorted(ps))
                elif re.match(r"[\w.]+\.state_dict\(\)$", arg0):
                    c = _component(arg0.rsplit(".state_dict", 1)[0]) or "model"
                    content, parts = _content({c}), (c,)
            elif api.startswith(("accelerate.", "deepspeed.")):
                content, parts = "full", ("model", "optimizer", "scheduler")
            elif api in ("save_pretrained", "trainer.save_model"):
                if api == "save_pretrained" and _SKIP_PRETRAINED.search(source[max(0, m.start() - 40) : m.start()]):
                    continue
                content, parts = "weights", ("model",)
            elif api == "load_state_dict":
                recv = re.search(r"([\w.]+)\s*$", source[max(0, m.start() - 60) : m.start()])
                c = (_component(recv.group(1)) if recv else None) or "model"
                content, parts = _content({c}), (c,)
            out.io.append(StateIO(op, api, content, keys, t.site(m.start()), parts, _missing(parts, content)))
    out.io.sort(key=lambda r: r.site.line)
    # calls
    calls: dict[str, list[Call]] = defaultdict(list)
    for n, m in enumerate(_T_CALL.finditer(source)):
        if n >= _T_MAX_MATCHES:
            break
        name = m.group(1) or m.group(2)
        if re.search(r"\b(?:class|def)\s+$", source[max(0, m.start() - 10) : m.start()]):
            continue  # a definition, not a call
        inner = t.balanced(m.end() - 1, 1500)
        kwargs: dict[str, Value] = {}
        args: list[Value] = []
        for a in _split_top(inner):
            km = re.match(r"(\w+)\s*=(?!=)(.*)", a, re.S)
            if km:
                kwargs[km.group(1)] = _literal(km.group(2))
            elif a:
                args.append(_literal(a))
        before = source[max(0, m.start() - 40) : m.start()]
        if name.endswith(("Arguments", "Config")):
            label = "TrainingArguments"
        elif name == "Trainer" and re.search(r"\b(?:pl|L|lightning)\.$", before):
            label = "lightning.Trainer"
        elif name.endswith("Trainer"):
            label = "Trainer"
        else:
            label = name
        if label == "train" and "resume_from_checkpoint" not in kwargs and not re.search(r"trainer$", before, re.I):
            continue
        if label == "fit" and "ckpt_path" not in kwargs and not re.search(r"trainer$", before, re.I):
            continue
        calls[label].append(Call(name, t.site(m.start()), kwargs, tuple(args)))
    out.calls = dict(calls)
    for m in _T_ENV.finditer(source):
        out.env_reads.setdefault(m.group(1), t.site(m.start()))
    sm = re.search(r"\bsignal\s*\(\s*(?:signal\.)?SIGTERM\s*,\s*(?!(?:signal\.)?SIG_(?:DFL|IGN)\b)", source)
    if sm:
        out.sigterm_handler = t.site(sm.start())
    for n, m in enumerate(_T_PRINT.finditer(source)):
        if n >= _T_MAX_MATCHES:
            break
        text = m.group(2)
        if re.search(r"[A-Za-z]", text):
            out.prints.append(Site(t.line_no(m.start()), text[:400]))


def iter_sites(facts: PyFacts) -> Iterator[Site]:
    """Every site the facts cite (for callers that map lines back to a file)."""
    for d in facts.discovery:
        yield d.site
    for r in facts.io:
        yield r.site
    for cs in facts.calls.values():
        for c in cs:
            yield c.site
    yield from facts.env_reads.values()
    if facts.sigterm_handler is not None:
        yield facts.sigterm_handler
    yield from facts.prints
