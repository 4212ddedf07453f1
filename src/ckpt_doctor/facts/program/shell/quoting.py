"""Small text helpers: ANSI-C quoting, shell quoting for messages, short descriptions."""

from __future__ import annotations

import re


def _ansi_c(s: str) -> str:
    out = []
    i = 0
    simple = {
        "n": "\n",
        "t": "\t",
        "r": "\r",
        "a": "\a",
        "b": "\b",
        "f": "\f",
        "v": "\v",
        "e": "\x1b",
        "E": "\x1b",
        "\\": "\\",
        "'": "'",
        '"': '"',
        "?": "?",
    }
    while i < len(s):
        c = s[i]
        if c == "\\" and i + 1 < len(s):
            nx = s[i + 1]
            if nx in simple:
                out.append(simple[nx])
                i += 2
                continue
            if nx == "x":
                m = re.match(r"[0-9a-fA-F]{1,2}", s[i + 2 :])
                if m:
                    out.append(chr(int(m.group(0), 16)))
                    i += 2 + m.end()
                    continue
            m = re.match(r"[0-7]{1,3}", s[i + 1 :])
            if m:
                out.append(chr(int(m.group(0), 8) & 0xFF))
                i += 1 + m.end()
                continue
            out.append("\\" + nx)
            i += 2
            continue
        out.append(c)
        i += 1
    return "".join(out)


def _quote(text: str) -> str:
    return "'" + text.replace("'", "'\\''") + "'"


def _short(text: str, n: int = 60) -> str:
    text = " ".join(text.split())
    return text if len(text) <= n else text[: n - 1] + "…"


def _describe_within(w: str) -> str:
    if w.startswith("function "):
        return f"the function `{w[9:]}`"
    return {
        "if": "an `if` block",
        "for": "a `for` loop",
        "while": "a `while` loop",
        "select": "a `select` loop",
        "case": "a `case` block",
        "subshell": "a `( ... )` subshell",
        "group": "a `{ ...; }` group",
        "!": "a negated command",
        "$(...)": "a command substitution",
        "<(...)": "a process substitution",
    }.get(w, w)
