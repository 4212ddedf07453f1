"""kubelet's `$(VAR)` expansion of a container's command, args and env."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

_K8S_NAME = re.compile(r"[-._a-zA-Z][-._a-zA-Z0-9]*\Z")


def kube_expand(text: str, env: Mapping[str, str]) -> tuple[str, tuple[str, ...]]:
    """kubelet's expansion of command/args/env values: `$(VAR)` -> value when VAR is defined,
    left as written otherwise; `$$` -> `$`. Returns (text, undefined names).

    What cannot be an env var name (`$(date +%s)`) is left alone and not reported; `$(hostname)`
    is reported as the undefined name `hostname`, though the shell will later run it as a command.
    """
    out: list[str] = []
    missing: list[str] = []
    i, n = 0, len(text)
    while i < n:
        j = text.find("$", i)
        if j < 0 or j + 1 >= n:
            out.append(text[i:])
            break
        out.append(text[i:j])
        nxt = text[j + 1]
        if nxt == "$":
            out.append("$")
            i = j + 2
        elif nxt == "(":
            k = text.find(")", j + 2)
            if k < 0:
                out.append("$(")
                i = j + 2
                continue
            name = text[j + 2 : k]
            if name in env:
                out.append(str(env[name]))
            else:
                out.append(text[j : k + 1])
                if _K8S_NAME.match(name) and name not in missing:
                    missing.append(name)
            i = k + 1
        else:
            out.append("$" + nxt)
            i = j + 2
    return "".join(out), tuple(missing)


def kube_env(pairs: Iterable[tuple[str, str]], base: Mapping[str, str] | None = None) -> dict[str, str]:
    """A container's env the way kubelet builds it: each value may use `$(NAME)` of earlier ones."""
    out = dict(base or {})
    for name, value in pairs:
        out[name] = kube_expand(value, out)[0]
    return out
