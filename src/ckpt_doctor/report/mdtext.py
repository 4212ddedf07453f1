"""Text into Markdown, escaped for the place it goes: one source for every Markdown face.

A quote (a log line, a field's value, a command) goes into a code span and keeps its characters exactly:
runs of spaces stay (CommonMark keeps a code span's interior spaces), a span that starts and ends with a
space gets one more on each side (CommonMark strips one), and line breaks, which a one-line span cannot
hold, show as ` ⏎ `. Inside a table cell a `|` is escaped, code spans included (GFM splits cells first);
outside a table it is not (there a `\\|` in a code span would show its backslash). Prose goes in as text
with Markdown's own characters escaped, our backtick spans kept as code, and `<`, `>`, `&` as entities
(GitHub would read `<redacted:env>` as a tag and hide it).

Renderers tested against: markdown-it-py's GFM preset (tests/report/test_agreement.py).
"""

from __future__ import annotations

import re

_RUN = re.compile(r"`+")
NEWLINE = " ⏎ "
# Markdown's characters that can start or end an inline construct where they stand: a backslash, `*`, `~`
# anywhere; `_` at the edge of a word (inside one, as in `iter_N`, it is literal); `[…](` a link. The backtick
# is handled apart, `#` only starts a heading at the start of a line.
_SPECIAL = re.compile(r"([\\*~])|(?<![0-9A-Za-z])_|_(?![0-9A-Za-z])|\[(?=[^\]]*\]\()")


def one_line(s: str) -> str:
    """A quote on one line: each line break (`\\r\\n`, `\\n`, a lone `\\r`) shown as ` ⏎ `."""
    return re.sub(r"\r\n|\r|\n", NEWLINE, str(s))


def code(s: str) -> str:
    """An inline code span that shows `s` exactly (backticks included), on one line."""
    s = one_line(s)
    if not s:
        return ""
    longest = max((len(m) for m in _RUN.findall(s)), default=0)
    fence = "`" * (longest + 1)
    pad = ""
    if s.startswith("`") or s.endswith("`") or (s.startswith(" ") and s.endswith(" ") and s.strip(" ")):
        pad = " "  # CommonMark strips one space from each side of a span that has one on both
    return f"{fence}{pad}{s}{pad}{fence}"


def cell_code(s: str) -> str:
    """A code span inside a GFM table cell: its pipes escaped (GFM removes the backslash there)."""
    return code(s).replace("|", "\\|")


def _escape_plain(s: str) -> str:
    s = _SPECIAL.sub(lambda m: "\\" + m.group(0), s)
    return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def text(s: str) -> str:
    """Prose on one line: Markdown's characters escaped, backtick-quoted parts kept as code spans, `<`, `>`
    and `&` as entities; interior spaces kept, the ends trimmed (leading spaces would start a code block)."""
    s = one_line(s).strip()
    parts = s.split("`")
    if len(parts) % 2 == 0:  # an unpaired backtick: all of it is text
        out = _escape_plain(s).replace("`", "\\`")
    else:
        out = "".join(code(p) if i % 2 else _escape_plain(p) for i, p in enumerate(parts))
    return "\\" + out if out.startswith("#") else out


def cell(s: str) -> str:
    """Prose inside a GFM table cell."""
    return text(s).replace("|", "\\|")


def fenced(body: str, lang: str = "") -> list[str]:
    """A fenced block that holds `body` whatever it contains (a longer fence than any inside)."""
    longest = max((len(m) for m in re.findall(r"^\s*(`{3,})", body, re.M)), default=2)
    fence = "`" * max(3, longest + 1)
    return [f"{fence}{lang}", body.rstrip("\n"), fence]
