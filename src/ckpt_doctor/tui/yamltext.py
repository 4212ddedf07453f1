"""A Kubernetes object as `kubectl get -o yaml` would print it, and the line of each field.

Evidence cites fields by path (`spec.containers[name=node].args`,
`metadata.labels[jobset.sigs.k8s.io/restart-attempt]`, `status.conditions[type=Suspended]`);
`locate` turns such a path into the line to jump to. No Textual here.
"""

from __future__ import annotations

import json
import re
from typing import Any

Key = tuple[Any, ...]
_PLAIN = re.compile(r"^[A-Za-z0-9_./$(<][^\x00-\x1f#]*$")
_SPECIAL = {"", "true", "false", "yes", "no", "on", "off", "null", "~", "y", "n"}


def _scalar(v: Any) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int | float):
        return str(v)
    s = str(v)
    return json.dumps(s, ensure_ascii=False) if _needs_quotes(s) else s


def _needs_quotes(s: str) -> bool:
    return (
        s.lower() in _SPECIAL
        or not _PLAIN.match(s)
        or s != s.strip()
        or s[0].isdigit()
        or _looks_numeric(s)
        or ": " in s
        or s.endswith(":")
    )


def _block_ok(s: str) -> bool:
    """A literal block (`|`) shows the text exactly only without these edge cases."""
    lines = s.rstrip("\n").split("\n")
    return (
        not lines[0].startswith((" ", "\t"))
        and not s.endswith("\n\n")
        and all(ln == ln.rstrip(" \t") and "\r" not in ln for ln in lines)
    )


def _looks_numeric(s: str) -> bool:
    try:
        float(s)
    except ValueError:
        return False
    return True


def _key(k: Any) -> str:
    s = str(k)
    return json.dumps(s) if _needs_quotes(s) else s


def to_yaml(obj: Any) -> tuple[list[str], dict[Key, int]]:
    """(lines, {path as a tuple of keys and indexes: 0-based line})."""
    lines: list[str] = []
    where: dict[Key, int] = {}

    def value(v: Any, path: Key, indent: int, head: str, dash: bool = False) -> None:
        """Emit `head` (`key:` or `-`), after a `- ` when `dash`, with value v."""
        where[path] = len(lines)
        pad = " " * indent + ("- " if dash else "")
        inner = indent + (2 if dash else 0)
        if isinstance(v, dict) and v:
            lines.append(pad + head)
            mapping(v, path, inner + 2)
        elif isinstance(v, list) and v:
            lines.append(pad + head)
            sequence(v, path, inner)
        elif isinstance(v, str) and "\n" in v and _block_ok(v):
            lines.append(pad + head + " |" + ("-" if not v.endswith("\n") else ""))
            for ln in v.rstrip("\n").split("\n"):
                lines.append(" " * (inner + 2) + ln if ln else "")
        else:
            empty = "{}" if isinstance(v, dict) else "[]" if isinstance(v, list) else _scalar(v)
            lines.append(f"{pad}{head} {empty}")

    def mapping(m: dict[str, Any], path: Key, indent: int) -> None:
        for k, v in m.items():
            value(v, (*path, k), indent, f"{_key(k)}:")

    def sequence(seq: list[Any], path: Key, indent: int) -> None:
        pad = " " * indent
        for i, item in enumerate(seq):
            p = (*path, i)
            if isinstance(item, dict) and item:
                where[p] = len(lines)
                for n, (k, v) in enumerate(item.items()):
                    value(v, (*p, k), indent + (2 if n else 0), f"{_key(k)}:", dash=n == 0)
                where[p] = where[(*p, next(iter(item)))]
            elif isinstance(item, list) and item:
                where[p] = len(lines)
                lines.append(pad + "-")
                sequence(item, p, indent + 2)
            else:
                value(item, p, indent, "-")

    if isinstance(obj, dict):
        mapping(obj, (), 0)
    else:
        value(obj, (), 0, "-")
    return lines, where


def _tokens(path: str) -> list[str]:
    """`a.b[x.y/z].c[0]` → ['a', 'b', '[x.y/z]', 'c', '[0]']."""
    out: list[str] = []
    cur = ""
    i = 0
    while i < len(path):
        ch = path[i]
        if ch == "[":
            if cur:
                out.append(cur)
                cur = ""
            j = path.find("]", i)
            j = len(path) if j == -1 else j
            out.append(path[i : j + 1])
            i = j + 1
            continue
        if ch == ".":
            if cur:
                out.append(cur)
            cur = ""
        else:
            cur += ch
        i += 1
    if cur:
        out.append(cur)
    return out


def _find_key(node: Any, key: str, path: Key) -> Key | None:
    """Breadth-first: the path of the first mapping that holds `key` (for relative paths)."""
    queue: list[tuple[Any, Key]] = [(node, path)]
    while queue:
        cur, p = queue.pop(0)
        if isinstance(cur, dict):
            if key in cur:
                return (*p, key)
            queue += [(v, (*p, k)) for k, v in cur.items()]
        elif isinstance(cur, list):
            queue += [(v, (*p, i)) for i, v in enumerate(cur)]
    return None


def resolve(obj: Any, path: str) -> tuple[Key, bool]:
    """The concrete key path of `path` in `obj`, and whether all of it was found."""
    cur, got = obj, ()
    for tok in _tokens(path):
        if tok.startswith("["):
            inner = tok[1:-1]
            nxt: Key | None = None
            if isinstance(cur, list):
                if inner.isdigit() and int(inner) < len(cur):
                    nxt = (int(inner),)
                elif "=" in inner:
                    k, _, v = inner.partition("=")
                    nxt = next(((i,) for i, it in enumerate(cur) if isinstance(it, dict) and str(it.get(k)) == v), None)
            elif isinstance(cur, dict) and inner in cur:
                nxt = (inner,)
            if nxt is None:
                return got, False
            cur, got = cur[nxt[0]], (*got, nxt[0])
            continue
        if isinstance(cur, dict) and tok in cur:
            cur, got = cur[tok], (*got, tok)
            continue
        found = _find_key(cur, tok, got)
        if found is None:
            return got, False
        for k in found[len(got) :]:
            cur = cur[k]
        got = found
    return got, True


def locate(obj: Any, where: dict[Key, int], path: str) -> int | None:
    """The 0-based line of `path` (or of the deepest part of it that exists)."""
    key, _ = resolve(obj, path)
    while key and key not in where:
        key = key[:-1]
    return where.get(key) if key else None
