"""Frameworks, one module each: what the engine knows of every trainer it reads.

Each module in this package (`hf_trainer.py`, `lightning.py`, `deepspeed.py`, ...) defines
`FRAMEWORK`, a `spec.Framework`: how its launch is recognised (CLI tools, `python -m` modules,
imports, entry scripts, config keys), which signature files in `rules/signatures/` read its log
lines, its checkpoint layout and completeness markers (`Layout`), which checkpoint its own resume
picks (`Pick`), its config keys, its known failure texts, its progress bars and its part of the
Python reader (`PythonHooks`). The generic readers (`facts/program/shell`, `facts/program/python`,
`facts/program/config.py`, `facts/program/model.py`, `facts/logs.py`) ask this registry and name no
framework themselves.

Adding a framework
------------------
1. Write `ckpt_doctor/frameworks/<name>.py` with `FRAMEWORK = Framework(name=..., title=...,
   order=...)` and whatever of `Launch`, `Logs`, `Layout`, `Pick`, `Config`, `Failure`, `Bar` and
   `PythonHooks` it has. The registry finds every module of this package by itself: nothing else is
   edited. (A framework defined elsewhere can be added with `register()`.)
2. Put its log signatures in `rules/signatures/<file>.yaml` (named in `Logs.files`, `framework:`
   one of `Logs.names`) and real lines for each in `tests/corpus/logs/<file>.yaml`.
3. Record real runs of it (`recordings/`, see docs/frameworks.md) and check them in `make test`.

`tests/frameworks/` checks that every module's data is well formed and that each reader finds each
framework through its module, including one registered at test time.
"""

from __future__ import annotations

import importlib
import os
import re
from collections.abc import Callable
from typing import Any, TypeVar

from ckpt_doctor.frameworks.spec import Framework, IORecogniser, Tool

__all__ = ["Framework", "all_frameworks", "get", "register"]

_NOT_FRAMEWORKS = frozenset({"spec", "completeness"})
_extra: list[Framework] = []
_memo: dict[str, Any] = {}
T = TypeVar("T")


def _derived(fn: Callable[[], T]) -> Callable[[], T]:
    """A table computed once from the registry (and again after `register`)."""
    key = fn.__name__

    def get_() -> T:
        try:
            return _memo[key]  # type: ignore[no-any-return]
        except KeyError:
            value = _memo[key] = fn()
            return value

    get_.__name__ = key
    get_.__doc__ = fn.__doc__
    return get_


@_derived
def all_frameworks() -> tuple[Framework, ...]:
    """Every framework: this package's modules and those registered, in `order`."""
    found: dict[str, Framework] = {}
    for name in _module_names():
        mod = importlib.import_module(f"{__name__}.{name}")
        fw = getattr(mod, "FRAMEWORK", None)
        if isinstance(fw, Framework):
            found[fw.name] = fw
    for fw in _extra:
        found[fw.name] = fw
    return tuple(sorted(found.values(), key=lambda f: (f.order, f.name)))


def _module_names() -> list[str]:
    """The modules of this package (a listing: cheaper than pkgutil, which imports importlib.util)."""
    names: set[str] = set()
    for d in __path__:
        try:
            entries = os.listdir(d)
        except OSError:
            continue
        for e in entries:
            stem, ext = os.path.splitext(e)
            if ext == ".py" and stem.isidentifier() and not stem.startswith("_") and stem not in _NOT_FRAMEWORKS:
                names.add(stem)
    return sorted(names)


def register(fw: Framework) -> None:
    """Add (or replace) a framework defined outside this package."""
    _extra[:] = [f for f in _extra if f.name != fw.name] + [fw]
    _memo.clear()


def unregister(name: str) -> None:
    """Remove a framework added with `register` (tests)."""
    _extra[:] = [f for f in _extra if f.name != name]
    _memo.clear()


def get(name: str) -> Framework | None:
    return _by_name().get(name)


@_derived
def _by_name() -> dict[str, Framework]:
    return {f.name: f for f in all_frameworks()}


# -- what the readers ask ------------------------------------------------------------------------
@_derived
def titles() -> dict[str, str]:
    """Stack name -> how a sentence names it."""
    return {f.name: f.title for f in all_frameworks() if f.stack}


@_derived
def tools() -> dict[str, Tool]:
    """Executable name -> the tool (shell reader: the command that starts training)."""
    out: dict[str, Tool] = {}
    for f in all_frameworks():
        for t in f.launch.tools:
            out.setdefault(t.name, t)
    return out


@_derived
def trainer_tools() -> dict[str, str]:
    """Executable name -> the framework whose own trainer it is (`llamafactory-cli`, `tune`)."""
    return {t.name: f.name for f in all_frameworks() for t in f.launch.tools if t.role == "trainer"}


@_derived
def launchers() -> dict[str, Tool]:
    """Executable name -> a launcher that runs the program named after its options."""
    return {t.name: t for f in all_frameworks() for t in f.launch.tools if t.role == "launcher"}


@_derived
def launcher_flags() -> frozenset[str]:
    """Launcher options that take no value (the others take one: `--nproc_per_node 8`)."""
    return frozenset(f for t in launchers().values() for f in t.flags)


@_derived
def python_launchers() -> dict[str, str]:
    """`python -m` module -> the launcher it is (`torch.distributed.run` is torchrun)."""
    return {m: f.name for f in all_frameworks() for m in f.launch.python_launchers}


@_derived
def entry_modules() -> tuple[tuple[str, str], ...]:
    """(`python -m` module prefix, framework) for frameworks whose module is their own trainer."""
    return tuple((m, f.name) for f in all_frameworks() for m in f.launch.modules)


@_derived
def import_stacks() -> tuple[tuple[str, str], ...]:
    """(import prefix, stack), in identification order."""
    return tuple((m, f.name) for f in all_frameworks() if f.stack for m in f.launch.imports)


@_derived
def entry_scripts() -> tuple[tuple[re.Pattern[str], str], ...]:
    return tuple((re.compile(f.launch.scripts), f.name) for f in all_frameworks() if f.launch.scripts)


@_derived
def arg_keys() -> tuple[tuple[frozenset[str], str], ...]:
    return tuple((f.launch.arg_keys, f.name) for f in all_frameworks() if f.launch.arg_keys)


@_derived
def framework_calls() -> tuple[str, ...]:
    """`PyFacts.calls` keys that are some framework's trainer (such a program is not hand-rolled)."""
    return tuple(c for f in all_frameworks() for c in f.launch.python_calls)


@_derived
def libraries() -> frozenset[str]:
    return frozenset(f.name for f in all_frameworks() if f.library)


@_derived
def saving_stacks() -> tuple[str, ...]:
    """Stacks that checkpoint without being asked."""
    return tuple(f.name for f in all_frameworks() if f.saves_by_default)


@_derived
def implied() -> tuple[tuple[str, str], ...]:
    """(stack, the stack it runs): LlamaFactory runs HF Trainer."""
    return tuple((f.name, i) for f in all_frameworks() for i in f.implies)


@_derived
def signature_files() -> dict[str, Framework]:
    """Packaged signature file name -> the framework that owns it."""
    return {name: f for f in all_frameworks() for name in f.logs.files}


@_derived
def log_stacks() -> dict[str, str]:
    """A log line's `framework` -> the stack it shows (only frameworks whose lines show one)."""
    return {n: f.name for f in all_frameworks() if f.stack and f.logs.shows_stack for n in f.logs.names}


@_derived
def bars() -> tuple[Any, ...]:
    """The bars the scan classifies by their description (not the generic ones a framework also claims)."""
    return tuple(b for f in all_frameworks() for b in f.bars if not b.generic)


@_derived
def bar_rules() -> tuple[tuple[str, Any], ...]:
    """(framework, bar) of every bar with a rule that gives its global step once the program is known."""
    return tuple((f.name, b) for f in all_frameworks() for b in f.bars if b.step is not None)


@_derived
def log_prefixes() -> tuple[bytes, ...]:
    """Literal line prefixes of frameworks' loggers (`[transformers] `), longest first."""
    got = {p.encode() for f in all_frameworks() for p in f.logs.prefixes}
    return tuple(sorted(got, key=lambda p: (-len(p), p)))


@_derived
def load_frames() -> re.Pattern[str] | None:
    """What a traceback frame (`file:function`) of a framework's checkpoint loading looks like."""
    parts = [p for f in all_frameworks() for p in f.logs.load_frames]
    return re.compile("|".join(f"(?:{p})" for p in parts)) if parts else None


@_derived
def commit_files() -> frozenset[str]:
    """File names whose presence in a checkpoint says it is complete (`.metadata`, `trainer_state.json`, ...)."""
    out = set()
    for f in all_frameworks():
        for m in f.layout.markers if f.layout is not None else ():
            if m.means == "complete" and m.where == "inside" and not set(m.name) & set("{*"):
                out.add(m.name)
    return frozenset(out)


@_derived
def path_step() -> re.Pattern[str]:
    """What reads a step off a checkpoint path in a log line (`checkpoint-N`, `global_stepN`, ...)."""
    parts = [p for f in all_frameworks() for p in f.logs.path_steps]
    return re.compile("(?:" + "|".join(parts) + r")(\d+)", re.I)


@_derived
def config_identifiers() -> tuple[tuple[str, Callable[..., bool]], ...]:
    fws = [f for f in all_frameworks() if f.config is not None and f.config.identify is not None]
    fws.sort(key=lambda f: (f.config.rank, f.order))  # type: ignore[union-attr]
    return tuple((f.name, f.config.identify) for f in fws)  # type: ignore[union-attr,misc]


@_derived
def picks() -> tuple[tuple[str, str], ...]:
    """(stack, how its resume picks the checkpoint) of the stacks whose own trainer picks it (not a
    library the program's code calls, not the program itself), in the order a reason names them."""
    fws = [f for f in all_frameworks() if f.pick is not None and not f.library and f.pick.how != "program"]
    fws.sort(key=lambda f: (f.pick.rank, f.order))  # type: ignore[union-attr]
    return tuple((f.name, f.pick.description) for f in fws)  # type: ignore[union-attr]


@_derived
def python_hooks() -> tuple[Any, ...]:
    """The Python reader's framework hooks (`PythonHooks`), in their rank order."""
    return tuple(sorted((f.python for f in all_frameworks() if f.python is not None), key=lambda h: h.rank))


def io_recognisers(name: str) -> tuple[IORecogniser, ...]:
    """The framework save/load recognisers for calls named `name`, by rank."""
    return _io_by_name().get(name, ())


@_derived
def _io_by_name() -> dict[str, tuple[IORecogniser, ...]]:
    by: dict[str, list[IORecogniser]] = {}
    for h in python_hooks():
        for r in h.io_calls:
            for n in r.names:
                by.setdefault(n, []).append(r)
    return {k: tuple(sorted(v, key=lambda r: r.rank)) for k, v in by.items()}
