"""The trainer's program as one model: what the container runs, read through the shell, Python and
config readers, with what could not be seen and which framework it is.

From the trainer container (a pod's, or the runtime's merged with the TrainJob's overrides):

1. argv = command + args after kubelet's `$(VAR)` expansion;
2. a shell `-c` script is read by the shell reader, which finds the command that starts training,
   its resolved words, its working directory and the environment it sees;
3. what that command runs is found: a `.py` file (resolved against its working directory), a
   `python -c` program, a `python -` here-document, a module, or a tool (`llamafactory-cli`, `tune`);
   the config files named on its command line, and its own `--key value` arguments as a config;
4. files are looked up among the ConfigMaps the container mounts (and the files the script writes
   with `cat > f <<EOF`); a file that is not there is *unseen*, with why: in the image, or in a
   ConfigMap that was not collected;
5. Python is read with `ast`, configs as data; the stack is identified from imports, entrypoints,
   config keys and (added by the caller) log lines, each with its evidence.

Rules ask questions of this model; none greps the raw text.
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ckpt_doctor import frameworks
from ckpt_doctor.facts.program.config import ConfigDoc, args_as_config, read_config
from ckpt_doctor.facts.program.config import framework as config_framework

if TYPE_CHECKING:
    from ckpt_doctor.facts.program import TrainerSpec
    from ckpt_doctor.facts.program.python import PyFacts
    from ckpt_doctor.facts.program.shell import Command, ShellProgram
    from ckpt_doctor.scope import Scope

PY_SUFFIX = (".py",)
CONFIG_SUFFIX = (".yaml", ".yml", ".json", ".toml")
# options whose value is a config file, for the launchers and tools that take one
CONFIG_FLAGS = ("--config", "--config_file", "--config-file", "--deepspeed", "--deepspeed_config", "-c")



@dataclass
class Source:
    """A piece of the program that can be read, and where it lives (for evidence)."""

    kind: str  # python | config | shell
    text: str
    object: str  # Kind/ns/name of the object holding it
    path: str  # field path within that object
    file: str | None = None  # its path in the container (a mounted or written file), None for inline code
    how: str = ""  # "the -c script", "a here-document", "mounted from ConfigMap x", "the command line"
    entry: bool = False  # what the trainer command runs (not a helper file beside it)

    def evidence(self, snippet: str | None = None) -> dict[str, Any]:
        return {
            "type": "field",
            "object": self.object,
            "path": self.path,
            "value": (snippet if snippet is not None else self.text)[:400],
        }

    @property
    def label(self) -> str:
        return self.file or self.how or self.path


@dataclass
class PythonPart:
    source: Source
    facts: PyFacts


@dataclass
class ConfigPart:
    source: Source
    doc: ConfigDoc


@dataclass
class Entry:
    """What the trainer command runs."""

    kind: str  # file | module | inline | stdin | tool | none
    value: str = ""  # the file path, module name, code, or tool name
    args: list[str] = field(default_factory=list)  # the program's own arguments
    configs: list[str] = field(default_factory=list)  # config files named on the command line


@dataclass
class Program:
    spec: TrainerSpec
    argv: list[str]  # container command + args after kubelet's expansion
    kube_unresolved: tuple[str, ...]  # $(VAR) names kubelet cannot expand
    shell: ShellProgram | None  # when the container runs `SHELL -c SCRIPT`
    script_source: Source | None  # where that script lives
    trainer: Command | None  # the shell command that starts training
    trainer_argv: list[str] | None  # the argv that starts training (resolved as far as possible)
    cwd: str | None  # the trainer's working directory
    env: dict[str, str]  # the environment the trainer sees (resolved values only)
    entry: Entry
    pythons: list[PythonPart] = field(default_factory=list)
    configs: list[ConfigPart] = field(default_factory=list)
    args: ConfigPart | None = None  # the trainer program's own command-line arguments, as a config
    unseen: list[str] = field(default_factory=list)  # code that runs but cannot be read, and why
    stacks: dict[str, list[dict[str, Any]]] = field(default_factory=dict)  # stack -> evidence

    # -- questions --------------------------------------------------------------------------------
    @property
    def visible(self) -> bool:
        """Some of the trainer's program can be read."""
        return bool(self.pythons or self.configs or (self.args and self.args.doc.data))

    @property
    def complete(self) -> bool:
        """Everything that decides how the trainer checkpoints can be read: its entry code is visible
        (or it is a framework's own entry point driven by visible config) and nothing it runs is unseen."""
        if self.unseen or self.entry.kind == "none":
            return False
        if self.entry.kind in ("file", "inline", "stdin"):
            return any(p.source.entry for p in self.pythons)
        if self.entry.kind in ("tool", "module"):
            return self.framework_entry is not None
        return False

    @property
    def framework_entry(self) -> str | None:
        """The stack whose own entry point runs (llamafactory-cli, tune, `-m llamafactory`…), if any."""
        if self.entry.kind == "tool":
            return frameworks.trainer_tools().get(self.entry.value)
        if self.entry.kind == "module":
            return next((s for m, s in frameworks.entry_modules() if self.entry.value.startswith(m)), None)
        return None

    def has(self, stack: str) -> bool:
        return stack in self.stacks

    def stack_words(self) -> str:
        if not self.stacks:
            return "no framework identified"
        names = frameworks.titles()
        return ", ".join(names.get(s, s) for s in self.stacks)

    def stack_evidence(self, stack: str) -> list[dict[str, Any]]:
        return self.stacks.get(stack, [])

    def why_unknown(self) -> str:
        """Why the program cannot be judged in full (for not_evaluated reasons)."""
        if self.unseen:
            return "; ".join(self.unseen[:2])
        if self.entry.kind == "none":
            if not self.argv:
                return "the container sets no command or args: the image's entrypoint runs, and it is not visible"
            return "no command that starts training was found in the container's command"
        if self.entry.kind == "module":
            return f"the trainer runs the module {self.entry.value}, which is in the image"
        return "the training code is not visible"

    def python_with(self, pred: Any) -> list[PythonPart]:
        return [p for p in self.pythons if pred(p.facts)]


# -- building ---------------------------------------------------------------------------------------


def _base(s: str) -> str:
    return s.rsplit("/", 1)[-1]


_WRAPPERS = {"env", "nice", "ionice", "stdbuf", "time", "timeout", "taskset", "numactl", "chrt", "setsid", "nohup"}
_MPI = {"mpirun", "mpiexec", "srun"}  # generic launchers; the frameworks' own come from their modules
_PY = re.compile(r"^python(?:\d+(?:\.\d+)?)?$")
# MPI's options that take no value; the frameworks' launchers' come from their modules
_MPI_FLAGS = frozenset({"--allow-run-as-root", "--oversubscribe", "-l", "--label"})


def find_entry(values: list[str]) -> Entry:
    """What an argv that starts training runs (see the module docstring)."""
    v = list(values)
    i = 0
    while i < len(v):  # wrappers before the real command
        name = _base(v[i])
        if name in _WRAPPERS:
            i += 1
            while i < len(v) and (v[i].startswith("-") or re.match(r"[A-Za-z_][A-Za-z0-9_]*=", v[i])):
                i += 1
            if name == "timeout" and i < len(v):
                i += 1
            continue
        break
    v = v[i:]
    if not v:
        return Entry("none")
    name = _base(v[0])
    configs = _config_args(v)
    if name in frameworks.trainer_tools():
        return Entry("tool", name, v[1:], configs)
    if _PY.match(name):
        return _python_entry(v[1:], configs)
    launcher = frameworks.launchers().get(name)
    if launcher is not None or name in _MPI:
        rest = v[1:]
        skip = launcher.skip if launcher is not None else ()
        if skip and rest[: len(skip)] == list(skip):
            rest = rest[len(skip) :]
        return _launcher_entry(rest, configs)
    if v[0].endswith(PY_SUFFIX):
        return Entry("file", v[0], v[1:], configs)
    return Entry("none", v[0], v[1:], configs)


def _python_entry(rest: list[str], configs: list[str]) -> Entry:
    i = 0
    while i < len(rest):
        a = rest[i]
        if a == "-m" and i + 1 < len(rest):
            mod = rest[i + 1]
            if mod in frameworks.python_launchers():
                return _launcher_entry(rest[i + 2 :], configs)
            return Entry("module", mod, rest[i + 2 :], configs)
        if a == "-c" and i + 1 < len(rest):
            return Entry("inline", rest[i + 1], rest[i + 2 :], configs)
        if a == "-":
            return Entry("stdin", "-", rest[i + 1 :], configs)
        if a in ("-W", "-X"):
            i += 2
            continue
        if a.startswith("-"):
            i += 1
            continue
        return Entry("file", a, rest[i + 1 :], configs)
    return Entry("stdin", "-", [], configs)  # `python` alone reads its program from stdin


def _launcher_entry(rest: list[str], configs: list[str]) -> Entry:
    module = False
    i = 0
    while i < len(rest):
        a = rest[i]
        if a in ("-m", "--module"):
            module = True
            i += 1
            continue
        if a.startswith("$"):  # an unresolved word ($DISTRIBUTED_ARGS): options, most likely
            i += 1
            continue
        if a.startswith("-"):
            i += 1 if ("=" in a or a in _MPI_FLAGS or a in frameworks.launcher_flags()) else 2
            continue
        if module:
            return Entry("module", a, rest[i + 1 :], configs)
        if _PY.match(_base(a)):  # `mpirun … python train.py`
            return _python_entry(rest[i + 1 :], configs)
        if a.endswith(PY_SUFFIX) or "/" in a:
            return Entry("file", a, rest[i + 1 :], configs)
        return find_entry(rest[i:])
    return Entry("none")


def _config_args(v: list[str]) -> list[str]:
    out = []
    python_opts = False  # among the options of a python interpreter, where `-c` is the program, not a config
    code_at = -1
    for j, a in enumerate(v):
        if _PY.match(_base(a)):
            python_opts = True
            continue
        if python_opts and a == "-c":
            code_at, python_opts = j + 1, False
            continue
        python_opts = python_opts and a.startswith("-")
        if j == code_at:
            continue
        if a.startswith("-") and "=" in a and a.split("=", 1)[0] in CONFIG_FLAGS:
            out.append(a.split("=", 1)[1])
        elif a in CONFIG_FLAGS and j + 1 < len(v):
            out.append(v[j + 1])
        elif not a.startswith("-") and a.endswith(CONFIG_SUFFIX) and j > 0:
            out.append(a)
    return list(dict.fromkeys(out))


@dataclass
class MountedFile:
    path: str  # in the container
    text: str | None  # None when the ConfigMap behind it is not in the snapshot
    object: str  # ConfigMap/ns/name, or the object whose script writes the file
    field: str  # where the text lives in that object: data[key], or the script's field
    how: str = ""


def mounted(spec: TrainerSpec, scope: Scope) -> tuple[dict[str, MountedFile], dict[str, str]]:
    """(files by container path, mount path -> why its ConfigMap is unknown) of the ConfigMap volumes
    the trainer container mounts."""
    vols = {v.get("name"): v for v in spec.pod_spec.get("volumes") or [] if isinstance(v, dict)}
    files: dict[str, MountedFile] = {}
    blind: dict[str, str] = {}
    for m in (spec.container or {}).get("volumeMounts") or []:
        if not isinstance(m, dict):
            continue
        vol = vols.get(m.get("name")) or {}
        src = vol.get("configMap") if isinstance(vol.get("configMap"), dict) else None
        if src is None or not src.get("name"):
            continue
        mount = str(m.get("mountPath") or "").rstrip("/") or "/"
        name = str(src["name"])
        cm = scope.configmaps.get(name)
        items = {str(i.get("key")): str(i.get("path")) for i in src.get("items") or [] if isinstance(i, dict)}
        sub = m.get("subPath")
        if cm is None:
            k = scope.snap.coverage.object("ConfigMap", name, scope.namespace, False)
            blind[mount] = f"ConfigMap {name} (mounted at {mount}) is not in the snapshot ({k.reason})"
            continue
        data = cm.raw.get("data") if isinstance(cm.raw.get("data"), dict) else {}
        for key, value in data.items():
            if not isinstance(value, str):
                continue
            if sub:
                if sub != key:
                    continue
                path = mount
            elif items:
                if key not in items:
                    continue
                path = posixpath.join(mount, items[key])
            else:
                path = posixpath.join(mount, key)
            files[path] = MountedFile(path, value, cm.ref(), f"data[{key}]", f"mounted from {cm.ref()}")
    return files, blind


def _norm(path: str, cwd: str | None) -> str:
    if not path.startswith("/"):
        path = posixpath.join(cwd or "/", path)
    return posixpath.normpath(path)


def build_program(spec: TrainerSpec, scope: Scope) -> Program:
    from ckpt_doctor.facts.program.python import read_python
    from ckpt_doctor.facts.program.shell import kube_env, kube_expand, parse_argv, shell_invocation

    c = spec.container or {}
    # the container's env as kubelet hands it over: $(VAR) in a value refers to an earlier variable
    env = {k: v for k, v in kube_env(spec.env().items()).items() if not v.startswith("<") and "<fieldRef:" not in v}
    raw = [str(x) for x in (c.get("command") or []) + (c.get("args") or [])]
    argv, unresolved = [], []
    for a in raw:
        val, missing = kube_expand(a, env)
        argv.append(val)
        unresolved += list(missing)
    cwd0 = str(c.get("workingDir") or "") or None
    files, blind = mounted(spec, scope)
    prog = Program(spec, argv, tuple(dict.fromkeys(unresolved)), None, None, None, None, cwd0, env, Entry("none"))
    inv = shell_invocation(argv) if argv else None
    trainer_argv = argv
    stdin: str | None = None
    if inv is not None:
        sh = parse_argv(argv, env, cwd0)
        prog.shell = sh
        where = ".args" if c.get("args") and inv.script in [str(a) for a in c.get("args") or []] else ".command"
        prog.script_source = Source("shell", inv.script, spec.object, spec.container_path + where, how="the -c script")
        if sh is not None:
            for path, text in sh.files.items():
                if text is not None:
                    mf = MountedFile(path, text, spec.object, prog.script_source.path, "written by the script")
                    files.setdefault(_norm(path, cwd0), mf)
            t = sh.trainer()
            prog.trainer = t
            if t is not None:
                trainer_argv = t.values
                prog.cwd = t.cwd
                prog.env = {**env, **{k: v for k, v in t.process_env.items() if v is not None}}
                stdin = t.stdin
            else:
                trainer_argv = []
    prog.trainer_argv = trainer_argv
    entry = find_entry(trainer_argv) if trainer_argv else Entry("none")
    prog.entry = entry
    src = prog.script_source
    if entry.kind == "inline":
        s = Source("python", entry.value, spec.object, src.path if src else spec.container_path + ".args",
                   how="the python -c program", entry=True)  # fmt: skip
        prog.pythons.append(PythonPart(s, read_python(entry.value, "<-c>")))
    elif entry.kind == "stdin":
        if stdin is not None and src is not None:
            s = Source("python", stdin, src.object, src.path, how="a here-document", entry=True)
            prog.pythons.append(PythonPart(s, read_python(stdin, "<stdin>")))
        else:
            prog.unseen.append("the trainer reads its Python program from standard input, which is not visible")
    elif entry.kind == "file":
        _add_file(prog, files, blind, entry.value, entry=True)
    # every other mounted Python file: helpers beside the entry script
    for path, mf in sorted(files.items()):
        if path.endswith(PY_SUFFIX) and not any(p.source.file == path for p in prog.pythons) and mf.text is not None:
            s = Source("python", mf.text, mf.object, mf.field, path, mf.how)
            prog.pythons.append(PythonPart(s, read_python(mf.text, path)))
    for name in entry.configs:
        _add_file(prog, files, blind, name, entry=False, config=True)
    for path, mf in sorted(files.items()):
        if path.endswith(CONFIG_SUFFIX) and not any(p.source.file == path for p in prog.configs) and mf.text:
            s = Source("config", mf.text, mf.object, mf.field, path, mf.how)
            prog.configs.append(ConfigPart(s, read_config(mf.text, path)))
    if entry.args:
        where = prog.trainer is not None and src is not None
        s = Source(
            "config",
            " ".join(entry.args),
            src.object if where and src else spec.object,
            src.path if where and src else spec.container_path + (".args" if c.get("args") else ".command"),
            how="the command line",
        )
        prog.args = ConfigPart(s, args_as_config(entry.args))
    _identify(prog)
    return prog


def _add_file(
    prog: Program,
    files: dict[str, MountedFile],
    blind: dict[str, str],
    name: str,
    *,
    entry: bool,
    config: bool = False,
) -> None:
    from ckpt_doctor.facts.program.python import read_python

    if "$" in name:
        prog.unseen.append(f"the trainer runs {name!r}, whose path cannot be resolved")
        return
    path = _norm(name, prog.cwd)
    mf = files.get(path)
    if mf is not None and mf.text is not None:
        s = Source("config" if config else "python", mf.text, mf.object, mf.field, path, mf.how, entry=entry)
        if config:
            prog.configs.append(ConfigPart(s, read_config(mf.text, path)))
        else:
            prog.pythons.append(PythonPart(s, read_python(mf.text, path)))
        return
    mount = max((m for m in blind if path == m or path.startswith(m.rstrip("/") + "/")), key=len, default=None)
    what = "config" if config else "script"
    if mount is not None:
        prog.unseen.append(f"the trainer's {what} {path}: {blind[mount]}")
    else:
        prog.unseen.append(f"the trainer's {what} {path} is in the image (no mounted ConfigMap holds it)")


def _identify(prog: Program) -> None:
    """Which stacks the program positively shows, each with the evidence that shows it."""

    def add(stack: str, ev: dict[str, Any]) -> None:
        prog.stacks.setdefault(stack, [])
        if len(prog.stacks[stack]) < 3:
            prog.stacks[stack].append(ev)

    fw = prog.framework_entry
    where = prog.script_source or Source("argv", " ".join(prog.argv), prog.spec.object, prog.spec.container_path)
    if fw:
        add(fw, where.evidence(" ".join(prog.trainer_argv or [])[:200]))
    hooks = [(f.name, f.python.evidence) for f in frameworks.all_frameworks() if f.python and f.python.evidence]
    for part in prog.pythons:
        pf = part.facts
        for prefix, stack in frameworks.import_stacks():
            if pf.uses(prefix):
                add(stack, part.source.evidence(f"import {prefix} ({part.source.label})"))
        for stack, evidence in hooks:
            what = evidence(pf)
            if what:
                add(stack, part.source.evidence(f"{what} ({part.source.label})"))
    for part in prog.configs:
        f = config_framework(part.doc)
        if f:
            add(f, part.source.evidence(f"{f} config keys ({part.source.label})"))
    if prog.entry.kind == "file":
        for rx, stack in frameworks.entry_scripts():
            if rx.search(prog.entry.value):
                add(stack, where.evidence(prog.entry.value))
    if prog.args is not None:
        keys = set(prog.args.doc.data or {}) if isinstance(prog.args.doc.data, dict) else set()
        for known, stack in frameworks.arg_keys():
            if keys & known:
                add(stack, prog.args.source.evidence(" ".join(sorted(keys)[:6])))
    for stack, runs in frameworks.implied():  # LlamaFactory runs HF's Trainer
        if stack in prog.stacks:
            prog.stacks.setdefault(runs, list(prog.stacks[stack]))
    framework_stacks = set(prog.stacks) - frameworks.libraries()
    if not framework_stacks and any(p.source.entry and p.facts.parsed for p in prog.pythons):
        entry = next(p for p in prog.pythons if p.source.entry)
        # a framework's calls without its import (a snippet) leave the stack unknown, not hand-rolled
        framework_calls = any(entry.facts.calls.get(k) for k in frameworks.framework_calls())
        if (entry.facts.io or entry.facts.discovery) and not framework_calls:
            add("hand-rolled", entry.source.evidence(f"its own save/load code ({entry.source.label})"))

def add_log_stacks(prog: Program, history: Any) -> None:
    """What the logs show of the stack: a framework's own lines are evidence of it."""
    log_stacks = frameworks.log_stacks()
    for r in history.runs:
        if r.log is None:
            continue
        for e in r.log.events:
            stack = log_stacks.get(e.framework)
            if stack is None:
                continue
            prog.stacks.setdefault(stack, [])
            if not prog.stacks[stack]:
                prog.stacks[stack].append(e.evidence(r.log.ref, r.attempt))
    for stack, runs in frameworks.implied():
        if stack in prog.stacks and runs not in prog.stacks:
            prog.stacks[runs] = list(prog.stacks[stack])
