"""Here-documents, pre-scanned the way bash reads them (tree-sitter-bash gets several forms wrong).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any


@dataclass
class _HD:
    op: int  # offset of `<<`
    op_end: int
    delim: str
    quoted: bool
    strip: bool
    body_start: int = -1
    body_end: int = -1  # end of the body text (start of the delimiter line)
    end: int = -1  # end of the delimiter line (exclusive, before its newline)
    terminated: bool = True


_META = set(" \t\n;&|()<>")


def _read_delim(s: str, i: int) -> tuple[str, bool, int]:
    n = len(s)
    out: list[str] = []
    quoted = False
    while i < n and s[i] not in _META:
        c = s[i]
        if c == "'":
            j = s.find("'", i + 1)
            j = n if j < 0 else j
            out.append(s[i + 1 : j])
            quoted = True
            i = j + 1
        elif c == '"':
            j = i + 1
            buf = []
            while j < n and s[j] != '"':
                if s[j] == "\\" and j + 1 < n and s[j + 1] in '"\\$`':
                    buf.append(s[j + 1])
                    j += 2
                    continue
                buf.append(s[j])
                j += 1
            out.append("".join(buf))
            quoted = True
            i = j + 1
        elif c == "\\" and i + 1 < n:
            out.append(s[i + 1])
            quoted = True
            i += 2
        elif c == "$" and i + 1 < n and s[i + 1] in "'\"":
            i += 1  # $'...' / $"..." as a delimiter: treat like plain quotes
        else:
            out.append(c)
            i += 1
    return "".join(out), quoted, min(i, n)


def _prescan(s: str) -> tuple[str, list[_HD], list[str]]:
    n = len(s)
    hds: list[_HD] = []
    errors: list[str] = []
    pending: list[_HD] = []
    # context stack: ("c", depth) code, ("d",) double quotes, ("b",) backticks, ("p", depth) ${...},
    # ("a", depth) arithmetic
    stack: list[list[Any]] = [["c", 0]]
    i = 0
    word_start = True
    while i < n:
        top = stack[-1]
        kind = top[0]
        c = s[i]
        if kind == "c":
            if c == "\\":
                i += 2
                word_start = False
                continue
            if c == "#" and word_start:
                j = s.find("\n", i)
                i = n if j < 0 else j
                continue
            if c == "'":
                j = s.find("'", i + 1)
                i = n if j < 0 else j + 1
                word_start = False
                continue
            if c == '"':
                stack.append(["d"])
                i += 1
                word_start = False
                continue
            if c == "`":
                stack.append(["b"])
                i += 1
                word_start = False
                continue
            if c == "$" and i + 1 < n:
                nx = s[i + 1]
                if nx == "'":
                    j = i + 2
                    while j < n and s[j] != "'":
                        j += 2 if s[j] == "\\" else 1
                    i = j + 1
                    word_start = False
                    continue
                if s.startswith("((", i + 1):
                    stack.append(["a", 0])
                    i += 3
                    continue
                if nx == "(":
                    stack.append(["c", 0, "$("])
                    i += 2
                    word_start = True
                    continue
                if nx == "{":
                    stack.append(["p", 0])
                    i += 2
                    continue
                i += 1
                word_start = False
                continue
            if c == "(" and word_start and s.startswith("((", i):
                stack.append(["a", 0])
                i += 2
                continue
            if c == "(":
                top[1] += 1
                i += 1
                word_start = True
                continue
            if c == ")":
                if top[1] == 0 and len(top) > 2 and len(stack) > 1:
                    stack.pop()
                else:
                    top[1] = max(0, top[1] - 1)
                i += 1
                word_start = True
                continue
            if c == "<" and s.startswith("<<", i):
                if s.startswith("<<<", i):
                    i += 3
                    word_start = True
                    continue
                strip = s.startswith("<<-", i)
                j = i + (3 if strip else 2)
                while j < n and s[j] in " \t":
                    j += 1
                delim, quoted, end = _read_delim(s, j)
                if not delim and not quoted:
                    errors.append(f"line {s.count(chr(10), 0, i) + 1}: syntax error: `<<` without a delimiter")
                    i = j
                    continue
                hd = _HD(i, end, delim, quoted, strip)
                pending.append(hd)
                hds.append(hd)
                i = end
                word_start = True
                continue
            if c == "\n":
                i += 1
                word_start = True
                if pending:
                    i = _read_bodies(s, i, pending, errors)
                    pending = []
                continue
            word_start = c in " \t;&|<>"
            i += 1
            continue
        if kind == "d":
            if c == '"':
                stack.pop()
                i += 1
                continue
            if c == "\\":
                i += 2
                continue
            if c == "`":
                stack.append(["b"])
                i += 1
                continue
            if c == "$" and s.startswith("$((", i):
                stack.append(["a", 0])
                i += 3
                continue
            if c == "$" and s.startswith("$(", i):
                stack.append(["c", 0, "$("])
                i += 2
                word_start = True
                continue
            if c == "$" and s.startswith("${", i):
                stack.append(["p", 0])
                i += 2
                continue
            i += 1
            continue
        if kind == "b":
            if c == "\\":
                i += 2
                continue
            if c == "`":
                stack.pop()
            i += 1
            continue
        if kind == "p":
            if c == "\\":
                i += 2
                continue
            if c == "'":
                j = s.find("'", i + 1)
                i = n if j < 0 else j + 1
                continue
            if c == '"':
                stack.append(["d"])
                i += 1
                continue
            if c == "{":
                top[1] += 1
            elif c == "}":
                if top[1] == 0:
                    stack.pop()
                else:
                    top[1] -= 1
            elif c == "$" and s.startswith("$(", i) and not s.startswith("$((", i):
                stack.append(["c", 0, "$("])
                i += 2
                continue
            i += 1
            continue
        # arithmetic
        if c == "(":
            top[1] += 1
        elif c == ")":
            if top[1] == 0:
                stack.pop()
                i += 2 if s.startswith("))", i) else 1
                continue
            top[1] -= 1
        i += 1
    if pending:
        for hd in pending:
            hd.body_start = hd.body_end = hd.end = n
            hd.terminated = False
            errors.append(
                f"line {s.count(chr(10), 0, hd.op) + 1}: here-document delimited by end-of-file (wanted `{hd.delim}`)"
            )
    # the text tree-sitter sees
    parts: list[str] = []
    pos = 0
    for hd in sorted(hds, key=lambda h: h.op):
        if "\n" in s[hd.op : hd.op_end] or hd.op < pos:
            continue
        parts.append(s[pos : hd.op])
        parts.append("<" + "H" * (hd.op_end - hd.op - 1))
        pos = hd.op_end
    parts.append(s[pos:])
    mod = "".join(parts)
    spans = sorted((hd.body_start, hd.end) for hd in hds if hd.body_start >= 0 and hd.end > hd.body_start)
    if spans:
        parts = []
        pos = 0
        for a, b in spans:
            if a < pos:
                a = pos
            if b <= a:
                continue
            parts.append(mod[pos:a])
            parts.append(re.sub(r"[^\n]", " ", mod[a:b]))
            pos = b
        parts.append(mod[pos:])
        mod = "".join(parts)
    if not mod.isascii():
        mod = re.sub(r"[^\x00-\x7f]", "H", mod)
    if "\x00" in mod:
        mod = mod.replace("\x00", " ")
    return mod, hds, errors


def _read_bodies(s: str, p: int, pending: list[_HD], errors: list[str]) -> int:
    n = len(s)
    for hd in pending:
        hd.body_start = p
        while True:
            if p >= n:
                hd.body_end = hd.end = n
                hd.terminated = False
                errors.append(
                    f"line {s.count(chr(10), 0, hd.op) + 1}: here-document delimited by end-of-file "
                    f"(wanted `{hd.delim}`)"
                )
                break
            e = s.find("\n", p)
            line_end = n if e < 0 else e
            line = s[p:line_end]
            if (line.lstrip("\t") if hd.strip else line) == hd.delim:
                hd.body_end = p
                hd.end = line_end
                p = n if e < 0 else e + 1
                break
            p = n if e < 0 else e + 1
    return p
