"""What a framework module declares: the types, as frozen dataclasses.

A framework module (`ckpt_doctor/frameworks/<name>.py`) holds one `FRAMEWORK = Framework(...)`:
how its launch is recognised (`Launch`), which signature files read its log lines (`Logs`),
what its checkpoints look like on disk and what proves one complete (`Layout`), which checkpoint
its own resume picks (`Pick`), its config keys (`Config`), its known failure texts (`Failure`),
its progress bars (`Bar`) and, for frameworks with Python APIs, the Python reader's hooks
(`PythonHooks`). Everything here is data; the readers in `facts/` ask the registry
(`ckpt_doctor.frameworks`) for it. The classes are frozen and compared by identity (`eq=False`:
each value is a module's constant, and generating `__eq__`/`__hash__` for them cost start-up time).

`Layout` is written from the frameworks' sources and, where a recording exists, from what a real
run left on disk (knowledge: platform-signals-and-layouts.md §3). The engine reads the names and
pointers it needs for log paths, and `frameworks/completeness.py` judges the checkpoints of a
listing with all of it (tests/frameworks/test_completeness.py checks it against every recording).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Literal

Kind = Literal["dir", "file"]
Means = Literal["complete", "incomplete"]
Where = Literal["inside", "beside", "name", "save_dir"]
Atomic = Literal["no", "file", "rename", "marker", "pointer"]
Role = Literal["launcher", "trainer", "command"]
PickHow = Literal["highest-step", "pointer", "named", "config", "program"]

_FIELD = re.compile(r"\{(step|epoch|n|rank|node|name|tag)(?::0(\d+)d)?\}")


def template_regex(template: str) -> str:
    """An anchored regular expression for a name template: `checkpoint-{step}`, `iter_{step:07d}`,
    `epoch={epoch}-step={step}.ckpt`, `*` for any text. Fields become named groups of digits
    (`name`/`tag` any text without a slash)."""
    out, at = [], 0
    for m in _FIELD.finditer(template):
        out.append(_literal(template[at : m.start()]))
        name, width = m.group(1), m.group(2)
        if name in ("name", "tag"):
            out.append(f"(?P<{name}>[^/]+?)")
        else:
            out.append(f"(?P<{name}>\\d{{{width}}})" if width else f"(?P<{name}>\\d+)")
        at = m.end()
    out.append(_literal(template[at:]))
    return "^" + "".join(out) + "$"


def _literal(text: str) -> str:
    return ".*?".join(re.escape(p) for p in text.split("*"))


@dataclass(frozen=True, eq=False)
class Tool:
    """An executable that starts training.

    role: `launcher` (it runs the program named after its own options: torchrun, `accelerate
    launch`, deepspeed), `trainer` (the framework's own trainer: what it does is its config:
    `llamafactory-cli train`, `tune run`), `command` (recognised as the command that trains,
    nothing more is read from it).
    """

    name: str
    subcommands: frozenset[str] | None = None  # words after it that start training; None: the tool alone does
    role: Role = "command"
    skip: tuple[str, ...] = ()  # words a launcher takes before its own options (`accelerate launch`)
    flags: frozenset[str] = frozenset()  # a launcher's options that take no value (`--standalone`)


@dataclass(frozen=True, eq=False)
class Launch:
    """How a program shows it runs this framework (each with evidence in `Program.stacks`)."""

    tools: tuple[Tool, ...] = ()
    python_launchers: tuple[str, ...] = ()  # `python -m` modules that are launchers (torch.distributed.run)
    modules: tuple[str, ...] = ()  # `python -m` module prefixes that run the framework's own trainer
    imports: tuple[str, ...] = ()  # import prefixes that show the framework
    scripts: str | None = None  # a regex the entry script's path matches (pretrain_gpt.py)
    arg_keys: frozenset[str] = frozenset()  # keys of the trainer's own command line that show it
    config_files: tuple[str, ...] = ()  # conventional config file names (documentation)
    python_calls: tuple[str, ...] = ()  # `PyFacts.calls` keys that are this framework's trainer


@dataclass(frozen=True, eq=False)
class Logs:
    """The framework's log lines: signature files in `rules/signatures/` (by file name), and the
    `framework:` names those files use. Lines of a name in `shows_stack` are evidence of the stack."""

    files: tuple[str, ...] = ()
    names: tuple[str, ...] = ()
    shows_stack: bool = True
    path_steps: tuple[str, ...] = ()  # regex prefixes before the step number in a checkpoint path
    # literal text the framework's logger puts before each of its lines (transformers 5: `[transformers] `);
    # the log reader peels it off like a logger format, so a signature sees the message
    prefixes: tuple[str, ...] = ()
    # regexes on a traceback frame's `file:function` that load a checkpoint (its resume code): a traceback
    # through one before any training step is a crash while loading (facts/logs.py, `load-crash`)
    load_frames: tuple[str, ...] = ()
    quiet: str = ""  # what its log leaves out of training progress without a terminal (said when no step shows)


@dataclass(frozen=True, eq=False)
class Bar:
    """A progress bar whose description says what it counts (Lightning's `Epoch N`, torchtune's
    `E|S|Loss: x`). Matched with `re.match` on the description; a training bar.

    `step(epoch, count, total, program)` gives the global step a bar line shows once the program is known
    to run this framework (its code read: `Program`), or None when it cannot be told; it runs after the
    log is scanned (`facts.logs.resolve_progress`). `generic`: the description is a generic one too
    (Lightning's `Training`): the scan reads it as any bar, and this framework's `step` replaces that
    reading only in a program that runs the framework."""

    desc: str
    epoch_group: int | None = None
    epoch_offset: int = 0  # added to the epoch read (torchtune counts epochs from 1)
    step_group: int | None = None  # None: the step is not the bar's count
    step_from_postfix: bool = False  # `step=`/`global_step=` in the bar's postfix gives the step
    step: Callable[[int | None, int | None, int | None, Any], int | None] | None = None
    generic: bool = False

    @cached_property
    def rx(self) -> re.Pattern[str]:
        return re.compile(self.desc)


@dataclass(frozen=True, eq=False)
class CheckpointName:
    """One name the framework gives a checkpoint.

    `template` uses `{step}`, `{epoch}`, `{n}` (a counter that is no step), `{tag}`, `{rank}`,
    `{node}` and `*`; a zero-padded field is written `{step:07d}`. `parent` names the framework
    (and template) this checkpoint lives inside, e.g. DeepSpeed's `global_step{step}` inside HF's
    `checkpoint-{step}` when HF Trainer drives DeepSpeed; empty: directly in the save directory.
    """

    template: str
    kind: Kind = "dir"
    parent: str = ""  # "hf-trainer:checkpoint-{step}"
    note: str = ""

    @cached_property
    def regex(self) -> re.Pattern[str]:
        return re.compile(template_regex(self.template))

    def match(self, name: str) -> dict[str, str] | None:
        """The fields of `name` (a base name) when it is such a checkpoint, else None."""
        m = self.regex.match(name)
        return None if m is None else {k: v for k, v in m.groupdict().items() if v is not None}

    def step(self, name: str) -> int | None:
        got = self.match(name)
        return int(got["step"]) if got and "step" in got else None


@dataclass(frozen=True, eq=False)
class Marker:
    """A file whose presence says a checkpoint is complete (or incomplete).

    where: `inside` the checkpoint, `beside` it (its name plus a suffix, NeMo `-unfinished`), in
    its `name` (Orbax `.orbax-checkpoint-tmp-`), or in the `save_dir`.
    """

    name: str  # a template like CheckpointName's; `{name}` is the checkpoint's own name
    means: Means = "complete"
    where: Where = "inside"
    written_last: bool = False  # the writer makes it after everything else (a commit signal)
    note: str = ""
    always: bool = True  # every save of the framework writes it (False: some programs or stores only)

    @cached_property
    def regex(self) -> re.Pattern[str]:
        return re.compile(template_regex(self.name))


@dataclass(frozen=True, eq=False)
class Pointer:
    """A file in the save directory naming the checkpoint to resume from (DeepSpeed `latest`,
    Megatron `latest_checkpointed_iteration.txt`). Written after the checkpoint it names."""

    file: str
    holds: Literal["tag", "step"] = "tag"
    written_last: bool = True
    note: str = ""


@dataclass(frozen=True, eq=False)
class Layout:
    """What a framework's checkpoints look like on disk and what proves one complete."""

    names: tuple[CheckpointName, ...] = ()
    files: tuple[str, ...] = ()  # what a complete checkpoint holds, when no marker says it (templates)
    markers: tuple[Marker, ...] = ()
    pointers: tuple[Pointer, ...] = ()
    atomic: Atomic = "no"  # file: one file written whole; rename: a temporary name renamed; marker/pointer
    note: str = ""
    # which files hold which part of the training state (templates, `|` between alternatives): `weights`,
    # `optimizer`, `scheduler`, `rng`, `scaler`, `step`; a checkpoint without the optimizer's is weights-only
    parts: Mapping[str, str] = field(default_factory=dict)
    # for names the program chooses (`*`): what a directory must hold to be one of this framework's checkpoints
    contains: str = ""

    def identify(self, name: str) -> tuple[CheckpointName, dict[str, str]] | None:
        """Which of the framework's names `name` is, with its fields."""
        for n in self.names:
            got = n.match(name)
            if got is not None:
                return n, got
        return None


@dataclass(frozen=True, eq=False)
class Pick:
    """Which checkpoint the framework's own resume picks.

    how: `highest-step` (the largest number among its names), `pointer` (what a pointer file
    names), `named` (a fixed name such as Lightning's `last.ckpt`), `config` (what the config
    names), `program` (the program decides). `checks_complete` says whether the pick skips an
    incomplete newest checkpoint.
    """

    how: PickHow
    checks_complete: bool
    description: str  # how the engine says it in a finding's reason
    source: str = ""  # the upstream function that picks
    rank: int = 100  # when several stacks are seen, the lowest rank's pick is named
    name: str = ""  # `named`: the checkpoint's name (Lightning's `last.ckpt`)


@dataclass(frozen=True, eq=False)
class Config:
    """The framework's config files and keys.

    `identify(data, keys)` says whether a parsed config (a mapping and its top-level keys) is this
    framework's; configs are tried in `rank` order (the first that claims a config wins).
    `keys` documents the keys that decide checkpointing (key -> what it does).
    """

    identify: Callable[[Mapping[str, Any], set[str]], bool] | None = None
    rank: int = 100
    keys: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, eq=False)
class Failure:
    """A failure text the framework prints, what it means, and the signature that reads it."""

    text: str
    means: str
    signature: str = ""


@dataclass(frozen=True, eq=False)
class IORecogniser:
    """One save or load API for the Python reader: `fn(reader, node, stmt, func, name)` returns a
    `StateIO` or None for calls named one of `names`; recognisers of a name are tried by `rank`."""

    names: tuple[str, ...]
    rank: int
    fn: Callable[..., Any]


@dataclass(frozen=True, eq=False)
class PythonHooks:
    """The framework's part of the Python reader (`facts/program/python/`).

    `calls(reader, node, stmt, func, name, out)` records a call of interest and returns True when
    it claimed it; `methods(reader, out)` reads method calls on what `calls` found (a trainer's
    `.train()`); `discoveries(reader, calls)` and `io(reader, calls)` add what the framework's own
    APIs pick, save and load; `io_calls` recognise save/load calls one by one; `evidence(facts)`
    names the stack from a file's facts beyond its imports. Hooks run in `rank` order (the order
    the frameworks' discoveries are listed in when several sit on one line).
    """

    rank: int = 100
    calls: Callable[..., bool] | None = None
    methods: Callable[..., None] | None = None
    discoveries: Callable[..., list[Any]] | None = None
    io: Callable[..., list[Any]] | None = None
    io_calls: tuple[IORecogniser, ...] = ()
    evidence: Callable[[Any], str | None] | None = None


@dataclass(frozen=True, eq=False)
class Framework:
    """Everything the engine knows of one framework (or launcher, or family of log lines).

    `name` is the engine's name: a stack in `Program.stacks`, the `framework:` of its signature
    files, `framework` in recordings' run.yaml. `order` is the order stacks are identified and
    listed in. `library`: the program's own loop drives it (accelerate, DeepSpeed, DCP), so it
    is no trainer of its own. `stack`: False for modules that name no stack (torchrun, generic
    log lines, other launchers). `implies`: stacks it runs (LlamaFactory runs HF Trainer).
    `saves_by_default`: it checkpoints without being asked.
    """

    name: str
    title: str
    order: int
    summary: str = ""
    launch: Launch = field(default_factory=Launch)
    logs: Logs = field(default_factory=Logs)
    layout: Layout | None = None
    pick: Pick | None = None
    config: Config | None = None
    failures: tuple[Failure, ...] = ()
    bars: tuple[Bar, ...] = ()
    python: PythonHooks | None = None
    stack: bool = True
    library: bool = False
    implies: tuple[str, ...] = ()
    saves_by_default: bool = False
