"""From a container's argv to the shell script it runs (`bash -c SCRIPT`, behind `env`, `tini`,
`mpirun` ...).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

SHELLS = frozenset({"sh", "bash", "dash", "ash", "zsh", "ksh", "mksh", "busybox"})


_INITS = {"tini", "tini-static", "dumb-init", "catatonit"}


_LAUNCHERS = {"mpirun", "mpiexec", "orterun", "srun"}


_SHELL_LONG_WITH_ARG = {"--rcfile", "--init-file"}



@dataclass(frozen=True)
class ShellInvocation:
    """How a container argv starts a shell."""

    shell: str  # basename: bash, sh, dash, ...
    script: str
    args: list[str]  # what follows the script: [$0, $1, ...]
    options: tuple[str, ...] = ()  # e, x, u, pipefail, login, ...
    init: str | None = None  # tini / dumb-init when one is PID 1
    init_group: bool = False  # the init signals the whole process group (tini -g, dumb-init default)
    launcher: str | None = None  # mpirun / srun that starts the shell
    wrappers: tuple[str, ...] = ()  # every program before the shell, in order
    env: dict[str, str] = field(default_factory=dict)  # `env VAR=x bash -c`
    index: int = 0  # position of the script in argv

    @property
    def pid1(self) -> str:
        """Who is PID 1: the init, the launcher, or the shell."""
        return self.init or self.launcher or self.shell


def _base(arg: str) -> str:
    return arg.rsplit("/", 1)[-1]


def shell_invocation(argv: Sequence[str]) -> ShellInvocation | None:
    """The shell a container argv starts with `-c SCRIPT`, and what runs before it."""
    argv = [str(a) for a in argv]
    i = 0
    init: str | None = None
    group = False
    launcher: str | None = None
    wrappers: list[str] = []
    env: dict[str, str] = {}
    while i < len(argv):
        name = _base(argv[i])
        if name == "env":
            wrappers.append(name)
            i += 1
            while i < len(argv):
                a = argv[i]
                if a in ("-i", "--ignore-environment", "-0", "--null", "-v", "--debug"):
                    i += 1
                elif a in ("-u", "--unset", "-C", "--chdir", "-S", "--split-string"):
                    i += 2
                elif a == "--":
                    i += 1
                    break
                elif a.startswith("-") and len(a) > 1:
                    i += 1
                elif "=" in a and re.match(r"[A-Za-z_][A-Za-z0-9_]*=", a):
                    k, _, v = a.partition("=")
                    env[k] = v
                    i += 1
                else:
                    break
            continue
        if name in _INITS:
            wrappers.append(name)
            init = "tini" if name.startswith("tini") else name
            group = name == "dumb-init"
            i += 1
            while i < len(argv):
                a = argv[i]
                if a == "--":
                    i += 1
                    break
                if name.startswith("tini") and a.startswith("-") and not a.startswith("--"):
                    if "g" in a[1:]:
                        group = True
                    # -p SIG, -e CODE take a value
                    i += 2 if a[-1] in "pe" else 1
                    continue
                if name == "dumb-init" and a.startswith("-"):
                    if a in ("-c", "--single-child"):
                        group = False
                    i += 2 if a in ("-r", "--rewrite") else 1
                    continue
                if a.startswith("-"):
                    i += 1
                    continue
                break
            continue
        if name in _LAUNCHERS:
            wrappers.append(name)
            launcher = name
            i = _skip_launcher_opts(argv, i + 1)
            continue
        if name in SHELLS or name == "busybox":
            break
        return None
    if i >= len(argv):
        return None
    shell = _base(argv[i])
    if shell == "busybox":
        i += 1
        if i >= len(argv) or _base(argv[i]) not in ("sh", "ash"):
            return None
        shell = "ash"
    if shell not in SHELLS:
        return None
    options: list[str] = []
    has_c = False
    j = i + 1
    while j < len(argv):
        a = argv[j]
        if a == "--" or a == "-":
            j += 1
            break
        if a.startswith("--"):
            if a in _SHELL_LONG_WITH_ARG:
                j += 2
            else:
                options.append(a[2:])
                j += 1
            continue
        if len(a) > 1 and a[0] in "-+":
            letters = a[1:]
            takes = 0
            for ch in letters:
                if ch == "c":
                    has_c = True
                elif ch in "oO":
                    takes += 1
                else:
                    options.append({"l": "login", "i": "interactive"}.get(ch, ch))
            for k in range(takes):
                if j + 1 + k < len(argv):
                    options.append(argv[j + 1 + k])
            j += 1 + takes
            continue
        break
    if not has_c or j >= len(argv):
        return None
    return ShellInvocation(
        shell=shell,
        script=argv[j],
        args=argv[j + 1 :],
        options=tuple(options),
        init=init,
        init_group=group,
        launcher=launcher,
        wrappers=tuple(wrappers),
        env=env,
        index=j,
    )


def split_shell_argv(argv: Sequence[str]) -> tuple[str, str, list[str]] | None:
    """(shell name, script, positional args) when argv runs `SHELL [-flags] -c SCRIPT [arg0 args...]`.

    Understands `-ec`, `-euxo pipefail -c`, `-lc`, `-c` after other flags, `--login`, and what may run
    before the shell: `env [VAR=x]`, `tini [--]`, `dumb-init [--]`, `mpirun ...`
    (see `shell_invocation` for who is PID 1). The positional list is [$0, $1, ...].
    """
    inv = shell_invocation(argv)
    if inv is None:
        return None
    return inv.shell, inv.script, list(inv.args)


def _skip_launcher_opts(argv: list[str], i: int) -> int:
    two = {"--mca", "-mca", "-gmca", "--gmca", "-genv", "-env"}
    one = {
        "-np",
        "-n",
        "-N",
        "-c",
        "-H",
        "--host",
        "-host",
        "--hostfile",
        "-hostfile",
        "--machinefile",
        "-machinefile",
        "-x",
        "--bind-to",
        "-bind-to",
        "--map-by",
        "-map-by",
        "--rank-by",
        "-npernode",
        "--npernode",
        "-ppn",
        "-wdir",
        "--wdir",
        "-output-filename",
        "--output-filename",
        "-f",
        "--prefix",
        "-p",
        "-w",
        "-t",
        "-J",
        "-A",
        "-G",
        "-o",
        "-e",
        "--nodes",
        "--ntasks",
        "--gpus",
        "-u",
    }
    while i < len(argv):
        a = argv[i]
        if a == "--":
            return i + 1
        if a in two:
            i += 3
        elif a in one:
            i += 2
        elif a.startswith("-"):
            i += 1
        else:
            return i
    return i
