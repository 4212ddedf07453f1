"""The facts the Python reader finds, as data: sites, values, calls, discoveries, saves and loads.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field


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
    dynamic: str | None = None  # the part of an unknown value that changes on every start (`time.strftime(…)`)


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
    # a file a candidate must hold to be picked (`os.path.exists(os.path.join(d, ".metadata"))` in the code
    # that picks): a framework's commit marker, so a half-written newest checkpoint is skipped
    requires: str = ""


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
class SigtermEnd:
    """How the program ends once its SIGTERM handler ran (issue 21 §6, rule sigterm-exit-zero).

    exit: `zero` (the handler exits 0 itself, or asks training to stop and the program then ends normally),
    `nonzero` (the handler, or the code the stop leads to, exits with another code or dies of the signal),
    `continues` (the handler only prints or sets something nothing reads: training goes on until SIGKILL),
    `unknown`. `stop` is where the stop takes effect (the exit call, the test that reads the handler's flag).
    """

    exit: str
    why: str
    handler: Site
    stop: Site | None = None
    confidence: str = "medium"
    fix: str | None = None  # a fix for this way of ending, when the rule's own does not say it


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
    sigterm_end: SigtermEnd | None = None  # how it ends after that handler ran
    prints: list[Site] = field(default_factory=list)
    options: dict[str, Option] = field(default_factory=dict)
    arg_parsers: dict[str, Site] = field(default_factory=dict)  # HfArgumentParser, TrlParser, argparse
    # names bound to a value that changes on every start (a clock, the host name, a random id):
    # name -> (the part that changes, the line of the binding)
    dynamic_names: dict[str, tuple[str, int]] = field(default_factory=dict)

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
