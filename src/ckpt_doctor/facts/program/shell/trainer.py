"""Which command starts training: python, a launcher, a framework's own CLI (asked of the framework
modules), a script.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ckpt_doctor import frameworks
from ckpt_doctor.facts.program.shell.invocation import _LAUNCHERS, _base, _skip_launcher_opts

_PY = re.compile(r"(?:python|pypy)(?:\d+(?:\.\d+)*)?[mtd]?\Z")


_NOT_TRAINER_MODULES = {
    "pip",
    "pip3",
    "ensurepip",
    "venv",
    "virtualenv",
    "site",
    "http.server",
    "json.tool",
    "uv",
    "pytest",
    "compileall",
    "py_compile",
    "pydoc",
    "timeit",
    "zipfile",
    "tarfile",
    "sysconfig",
    "platform",
    "torch.utils.collect_env",
    "huggingface_hub",
    "pip._internal",
    "wheel",
    "build",
    "twine",
}


_WRAPPERS = {
    "env",
    "nohup",
    "stdbuf",
    "nice",
    "ionice",
    "taskset",
    "numactl",
    "timeout",
    "setsid",
    "chrt",
    "gosu",
    "su-exec",
    "sudo",
    "command",
    "builtin",
    "exec",
    "time",
    "xargs",
    "catchsegv",
    "unbuffer",
}


_WRAPPER_ARG = {"timeout": 1, "gosu": 1, "su-exec": 1, "taskset": 1, "chrt": 1}


def trainer_kind(values: Sequence[str]) -> str | None:
    """What kind of training launcher this argv is, or None."""
    return _kind(list(values), 0)


def _kind(v: list[str], depth: int) -> str | None:
    if not v or depth > 6:
        return None
    name = _base(v[0])
    rest = v[1:]
    if name in _WRAPPERS:
        i = 0
        if name == "env":
            while i < len(rest) and (rest[i].startswith("-") or re.match(r"[A-Za-z_][A-Za-z0-9_]*=", rest[i])):
                i += 1
        else:
            while i < len(rest) and rest[i].startswith("-"):
                i += 2 if name in ("nice", "ionice", "stdbuf") and len(rest[i]) == 2 else 1
            i += _WRAPPER_ARG.get(name, 0)
        return _kind(rest[i:], depth + 1)
    if name in ("uv", "poetry", "pipenv", "conda", "micromamba", "mamba", "pixi") and rest[:1] == ["run"]:
        i = 1
        while i < len(rest) and rest[i].startswith("-"):
            i += 2 if rest[i] in ("-n", "--name", "-p", "--prefix", "-e", "--environment", "--with") else 1
        return _kind(rest[i:], depth + 1)
    if name in _LAUNCHERS:
        inner = rest[_skip_launcher_opts(rest, 0) :]
        k = _kind(inner, depth + 1)
        return f"{name} {k}" if k else None
    if _PY.match(name):
        return _python_kind(rest)
    tool = frameworks.tools().get(name)  # torchrun, `accelerate launch`, `llamafactory-cli train`, ...
    if tool is not None:
        subs = tool.subcommands
        if subs is None:
            return name
        sub = next((a for a in rest if not a.startswith("-")), None)
        if sub is None or sub in subs or "$" in sub:
            return name
        return None
    if name in ("bash", "sh", "dash", "zsh", "ksh", "ash"):
        script = next((a for a in rest if not a.startswith("-")), None)
        if script is not None and "-c" not in rest and re.search(r"\.(?:sh|bash)\Z", script):
            return "script"
        return None
    if re.search(r"\.(?:sh|bash|py)\Z", v[0]) and ("/" in v[0] or name == v[0]):
        return "script"
    return None


def _python_kind(rest: list[str]) -> str | None:
    i = 0
    while i < len(rest):
        a = rest[i]
        if a in ("-V", "--version", "-h", "--help"):
            return None
        if a == "-m":
            mod = rest[i + 1] if i + 1 < len(rest) else ""
            launcher = frameworks.python_launchers().get(mod)  # torch.distributed.run is torchrun
            if launcher is not None:
                return launcher
            if mod in _NOT_TRAINER_MODULES or mod.split(".")[0] in ("pip", "ensurepip", "venv"):
                return None
            return "python"
        if a.startswith("-m") and len(a) > 2:
            return _python_kind(["-m", a[2:], *rest[i + 1 :]])
        if a == "-c":
            code = rest[i + 1] if i + 1 < len(rest) else ""
            return None if _is_probe(code) else "python"
        if a in ("-W", "-X", "-Q"):
            i += 2
            continue
        if a.startswith("-") and a != "-":
            i += 1
            continue
        return "python"  # a script path, or `-` (reads stdin)
    return "python" if not rest else None


_PROBE_STMT = re.compile(r"\s*(?:import\s+[\w., ]+|from\s+[\w.]+\s+import\s+[\w., *]+|print\(.*\)|pass)\s*\Z")


def _is_probe(code: str) -> bool:
    """A one-line `python -c` that only imports and prints (a version check)."""
    code = code.strip()
    if "\n" in code or not code:
        return not code
    return all(_PROBE_STMT.match(part) for part in code.split(";") if part.strip())


def _is_shell_script(values: Sequence[str]) -> bool:
    if not values:
        return False
    name = _base(values[0])
    if name in ("bash", "sh", "dash", "zsh", "ksh", "ash"):
        return True
    return bool(re.search(r"\.(?:sh|bash)\Z", values[0]))
