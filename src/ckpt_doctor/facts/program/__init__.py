"""The trainer's program as text: argv, the shell script a `-c` runs, mounted configs.

Heuristic rules (LlamaFactory flags, Megatron flags, `exec`, `resume_from_checkpoint=True`)
search these texts; each text carries the evidence of where it came from.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from typing import Any

from ckpt_doctor.scope import Scope
from ckpt_doctor.snapshot import Obj

SHELLS = {"sh", "bash", "dash", "ash", "zsh", "ksh"}
VAR_REF = re.compile(r"\$\(([A-Za-z_][A-Za-z0-9_]*)\)")


@dataclass
class Text:
    kind: str  # argv | script | config
    text: str
    object: str  # the object the text lives in
    path: str  # field path within it
    file: str | None = None  # mount path when it is a mounted file

    def evidence(self, snippet: str | None = None) -> dict[str, Any]:
        return {
            "type": "field",
            "object": self.object,
            "path": self.path,
            "value": (snippet if snippet is not None else self.text)[:400],
        }


@dataclass
class TrainerSpec:
    """The trainer container as it runs (from a pod) or as it would run (runtime + overrides)."""

    pod_spec: dict[str, Any]
    container: dict[str, Any] | None
    object: str  # e.g. Pod/team-a/x or TrainingRuntime/team-a/rt
    base_path: str  # field path of the pod spec inside `object`
    from_pod: bool

    @property
    def container_path(self) -> str:
        if self.container is None:
            return self.base_path + ".containers"
        name = self.container.get("name")
        return f"{self.base_path}.containers[name={name}]"

    def env(self) -> dict[str, str]:
        out: dict[str, str] = {}
        for e in (self.container or {}).get("env") or []:
            if isinstance(e, dict) and e.get("name"):
                if "value" in e:
                    out[str(e["name"])] = str(e.get("value") or "")
                elif isinstance(e.get("valueFrom"), dict):
                    fr = (e["valueFrom"].get("fieldRef") or {}).get("fieldPath")
                    out[str(e["name"])] = f"<fieldRef:{fr}>" if fr else "<valueFrom>"
        return out

    def argv(self) -> list[str]:
        c = self.container or {}
        env = self.env()
        raw = [str(x) for x in (c.get("command") or []) + (c.get("args") or [])]
        return [VAR_REF.sub(lambda m: env.get(m.group(1), m.group(0)), a) for a in raw]


def shell_script(argv: list[str]) -> tuple[str, str] | None:
    """(shell, script) when argv runs `SHELL [-flags]c SCRIPT`."""
    if not argv:
        return None
    shell = argv[0].rsplit("/", 1)[-1]
    if shell not in SHELLS:
        return None
    for i, a in enumerate(argv[1:], start=1):
        if a.startswith("-") and not a.startswith("--") and "c" in a[1:]:
            if i + 1 < len(argv):
                return shell, argv[i + 1]
            return None
        if not a.startswith("-"):
            return None
    return None


def texts(spec: TrainerSpec, scope: Scope) -> list[Text]:
    out: list[Text] = []
    c = spec.container or {}
    argv = spec.argv()
    if argv:
        out.append(
            Text(
                "argv",
                " ".join(shlex.quote(a) for a in argv),
                spec.object,
                spec.container_path + (".args" if c.get("args") else ".command"),
            )
        )
    sh = shell_script(argv)
    if sh is not None:
        where = ".args" if c.get("args") and sh[1] in [str(a) for a in c.get("args") or []] else ".command"
        out.append(Text("script", sh[1], spec.object, spec.container_path + where))
    for cm, mount, key, value in mounted_configmaps(spec, scope):
        out.append(Text("config", value, cm.ref(), f"data[{key}]", file=f"{mount.rstrip('/')}/{key}"))
    return out


def mounted_configmaps(spec: TrainerSpec, scope: Scope) -> list[tuple[Obj, str, str, str]]:
    vols = {v.get("name"): v for v in spec.pod_spec.get("volumes") or [] if isinstance(v, dict)}
    out = []
    for m in (spec.container or {}).get("volumeMounts") or []:
        if not isinstance(m, dict):
            continue
        v = vols.get(m.get("name")) or {}
        cm_name = (v.get("configMap") or {}).get("name")
        cm = scope.configmaps.get(str(cm_name)) if cm_name else None
        if cm is None:
            continue
        for key, value in (cm.raw.get("data") or {}).items():
            if isinstance(value, str):
                if m.get("subPath") and m.get("subPath") != key:
                    continue
                mount = str(m.get("mountPath") or "")
                if m.get("subPath"):
                    out.append((cm, mount.rsplit("/", 1)[0], key, value))
                else:
                    out.append((cm, mount, key, value))
    return out


def find(
    texts_: list[Text], pattern: str, kinds: tuple[str, ...] = ("argv", "script", "config"), flags: int = 0
) -> list[tuple[Text, re.Match[str]]]:
    rx = re.compile(pattern, flags)
    hits = []
    for t in texts_:
        if t.kind not in kinds:
            continue
        for m in rx.finditer(t.text):
            hits.append((t, m))
    return hits


def line_of(text: str, pos: int) -> str:
    start = text.rfind("\n", 0, pos) + 1
    end = text.find("\n", pos)
    return text[start : end if end != -1 else len(text)].strip()


@dataclass(frozen=True)
class ShellCommand:
    """The last top-level command of a `-c` script: where it starts and what it is."""

    line: int  # 0-based line of the script where the command starts
    col: int | None  # column of its first word on that line (None when it starts on a continuation line)
    text: str  # the command, continuations joined, here-document bodies left out
    pipeline: bool  # `a | b`
    background: bool  # `a &`
    heredoc: bool  # it reads a here-document


_HEREDOC = re.compile(r"<<-?\s*(['\"]?)([A-Za-z_][A-Za-z0-9_]*)\1")


def last_shell_command(script: str) -> ShellCommand | None:
    """The last top-level command of a shell script (here-documents and continuations understood)."""
    lines = script.split("\n")
    last: ShellCommand | None = None
    i = 0
    while i < len(lines):
        if not lines[i].strip() or lines[i].lstrip().startswith("#"):
            i += 1
            continue
        start, text, pos = i, "", []  # pos: (line, col) of every character of `text`
        while True:
            raw = lines[i]
            body = raw.rstrip()
            cont = body.endswith("\\") and not body.endswith("\\\\")
            part = body[:-1] if cont else raw
            text += part
            pos += [(i, c) for c in range(len(part))]
            if not cont or i + 1 >= len(lines):
                break
            text += " "
            pos.append((i, len(part)))
            i += 1
        heredoc = False
        for m in _HEREDOC.finditer(text):
            heredoc = True
            i += 1
            while i < len(lines) and lines[i].strip() != m.group(2):
                i += 1
        for off, seg, background in _split_top_level(text):
            lead = len(seg) - len(seg.lstrip())
            at = off + lead
            line, col = pos[at] if at < len(pos) else (start, None)
            last = ShellCommand(
                line, col, seg.strip(), _has_pipe(seg), background, heredoc and bool(_HEREDOC.search(seg))
            )
        i += 1
    return last


def _split_top_level(text: str) -> list[tuple[int, str, bool]]:
    """(offset, segment, backgrounded) split at `;`, `&&`, `||`, `&` outside quotes and `$( )`."""
    out: list[tuple[int, str, bool]] = []
    quote, depth, start, k = "", 0, 0, 0
    while k < len(text):
        ch = text[k]
        if quote:
            if ch == "\\" and quote == '"':
                k += 2
                continue
            if ch == quote:
                quote = ""
        elif ch in "'\"":
            quote = ch
        elif ch == "\\":
            k += 2
            continue
        elif ch == "#" and (k == 0 or text[k - 1].isspace()):
            break
        elif text.startswith("$(", k):
            depth += 1
            k += 2
            continue
        elif ch == ")" and depth:
            depth -= 1
        elif depth == 0 and (text.startswith("&&", k) or text.startswith("||", k)):
            out.append((start, text[start:k], False))
            start = k + 2
            k += 2
            continue
        elif depth == 0 and ch == ";":
            out.append((start, text[start:k], False))
            start = k + 1
        elif depth == 0 and ch == "&" and text[k - 1 : k] not in (">", "<") and not text.startswith("&>", k):
            out.append((start, text[start:k], True))
            start = k + 1
        k += 1
    end = k if k < len(text) else len(text)
    out.append((start, text[start:end], False))
    return [(o, s, b) for o, s, b in out if s.strip()]


def _has_pipe(seg: str) -> bool:
    return bool(re.search(r"(?<![|>])\|(?![|&])", re.sub(r"'[^']*'|\"[^\"]*\"", "", seg)))
