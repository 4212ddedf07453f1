"""A reader for the block-style YAML that `kubectl get -o yaml` writes; None for anything else.

kubectl (through go-yaml) and PyYAML's dumper write one narrow shape of YAML: block mappings and sequences
(a key's sequence at the key's own column or deeper), plain, single- and double-quoted scalars (long plain
and single-quoted ones folded over deeper lines), literal block scalars (`|`, `|-`, `|+`), and `{}` / `[]`
for empty collections. This module reads that shape line by line, several times faster than libyaml's events
can be turned into Python objects, and gives up (returns None) at the first line it is not sure of: comments,
tabs outside literal text, anchors, aliases, tags, flow collections with content, folded block scalars,
directives, a plain value on the line after its key, an indentation it does not expect, or anything PyYAML
might read differently or refuse. The caller then reads the text with the full loader, so the values and
errors are always PyYAML's safe loader's: this reader answers only where the answer is the same. Plain
scalars are resolved by the caller's `plain` function (PyYAML's YAML 1.1 resolver and constructors,
remembered per distinct text), so `0755`, `yes` and `1_000` mean here what they mean to PyYAML.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterator
from typing import Any

from yaml.resolver import Resolver

# libyaml's printable characters (and the tab), less the ones it also reads as line breaks (CR, NEL, LS, PS)
# and the byte-order mark: a text holding any other is not read here
_ODD = re.compile("[^\t\n\x20-\x7e\xa0-\u2027\u202a-\ud7ff\ue000-\ufefe\uff00-\ufffd\U00010000-\U0010ffff]")
# a plain scalar may not start with these (`-` may, before a non-space: `-1`)
_ASCII_TEXT = b"\t\n" + bytes(range(0x20, 0x7F))
_INDICATORS = frozenset("-?:,[]{}#&*!|>'\"%@`")
_SINGLE = re.compile(r"'((?:[^']|'')*)'")  # a single-quoted scalar closed on its line
_SINGLE_END = re.compile(r"((?:[^']|'')*)'")  # the last line of a folded one
_DOUBLE = re.compile(r'"((?:[^"\\]|\\.)*)"')  # a double-quoted scalar closed on its line
_ESCAPE = re.compile(r"\\(x[0-9A-Fa-f]{2}|u[0-9A-Fa-f]{4}|U[0-9A-Fa-f]{8}|[0abtnvfre \"\\/N_LP])")
_ESCAPES = {
    "0": "\0",
    "a": "\x07",
    "b": "\x08",
    "t": "\t",
    "n": "\n",
    "v": "\x0b",
    "f": "\x0c",
    "r": "\r",
    "e": "\x1b",
    " ": " ",
    '"': '"',
    "\\": "\\",
    "/": "/",
    "N": "\x85",
    "_": "\xa0",
    "L": "\u2028",
    "P": "\u2029",
}
_CHECK_EVERY = 1 << 15  # lines between two looks at the clock
_STARTS_KEPT = 1 << 12  # line starts remembered at most
_MAP, _SEQ, _INDENTLESS = 0, 1, 2  # an open collection: a mapping, a sequence, a key's sequence at its column
_LINE, _LITERAL, _QUOTED, _PLAIN = 0, 1, 2, 3  # how the next line is read (see _Reader.scalar)
_MISSING = object()


class _Everything:
    def __contains__(self, item: object) -> bool:
        return True


# what a plain scalar may start with to be a string whatever follows: no indicator, no space, and no first
# character of an implicit type of PyYAML's resolver (digits, `t`, `n`, `~`, ...); when some implicit type may
# start with anything, none
_STARTS = set(Resolver.yaml_implicit_resolvers)
_NOT_BARE: Any = _Everything() if None in _STARTS else frozenset(_INDICATORS | {"", " ", "\t"} | _STARTS)


class _NotOurs(Exception):
    """The text leaves the shape read here: the full loader reads it."""


def read_block_style(
    text: str,
    plain: Callable[[str], Any],
    max_nodes: int,
    max_depth: int,
    deadline: float,
    on_timeout: Callable[[], None],
) -> list[Any] | None:
    """The documents of `text`, or None when it is not (or not surely) in the block style read here.

    `plain(text)` gives a plain scalar's value, or raises LookupError for one that is no value by itself (the
    merge key). A text that may hold more than `max_nodes` nodes or nests deeper than `max_depth` levels gives
    None (the full loader then reads or refuses it in its own words); past `deadline` (of time.monotonic)
    `on_timeout()` is called, and should raise.
    """
    if not text.endswith("\n"):
        return None
    try:
        if time.monotonic() > deadline:
            on_timeout()
        return _Reader(plain, max_nodes, max_depth, deadline, on_timeout).read(_blocks(text))
    except _NotOurs:
        return None


def _blocks(text: str, size: int = 1 << 20) -> Iterator[str]:
    """`text` (which ends with a newline) in blocks of whole lines, without the newline that ends each: split
    into lines a block at a time, never all at once (each line is a string: the lines of a 60 MB text took
    170 MB)."""
    pos, n = 0, len(text)
    while pos < n:
        end = text.find("\n", min(pos + size, n - 1))
        yield text[pos:end]
        pos = end + 1


def _unescape(m: re.Match[str]) -> str:
    code = m.group(1)
    if len(code) == 1:
        return _ESCAPES[code]
    c = int(code[1:], 16)
    if 0xD800 <= c <= 0xDFFF or c > 0x10FFFF:
        raise _NotOurs
    return chr(c)


def _double(inner: str) -> str:
    """The value of a double-quoted scalar's text."""
    if "\\" not in inner:
        return inner
    if "\\" in _ESCAPE.sub("", inner):
        raise _NotOurs  # an escape libyaml may read otherwise, or refuse
    return _ESCAPE.sub(_unescape, inner)


class _Reader:
    def __init__(
        self,
        plain: Callable[[str], Any],
        max_nodes: int,
        max_depth: int,
        deadline: float,
        on_timeout: Callable[[], None],
    ) -> None:
        self.plain = plain
        self.max_nodes = max_nodes
        self.max_depth = max_depth
        self.deadline = deadline
        self.on_timeout = on_timeout
        self.keys: dict[str, Any] = {}  # a plain key's text -> its value, checked once
        self.words: dict[str, Any] = {}  # a plain value's text -> its value
        self.raw = ""  # the text of the plain scalar that scalar() set last
        # a scalar read over the next lines: where it goes, the column of its collection, and its lines so far
        self.holder: Any = None
        self.key_: Any = None
        self.col = 0
        self.parts: list[str] = []
        self.head = ""  # a literal's header (`|`, `|-`, `|+`)
        self.indent = 0  # a literal's indentation, once its first line with text is read
        self.pad = ""
        self.most = 0  # the longest empty line before that one
        self.breaks = 0  # empty lines in a single-quoted scalar since its last line with text

    def word(self, t: str) -> Any:
        got = self.words.get(t, _MISSING)
        if got is _MISSING:
            try:
                got = self.plain(t)
            except Exception:  # no value by itself (LookupError), or one PyYAML refuses: its words, not ours
                raise _NotOurs from None
            if len(t) <= 256:
                self.words[t] = got
        return got

    def key(self, kt: str) -> Any:
        if not kt or kt[0] in _INDICATORS or kt[-1] == " " or " #" in kt or len(kt) > 1000:
            raise _NotOurs
        try:  # (not through self.word: a key's text may end in `:`, a value's may not)
            got = self.plain(kt)
        except Exception:
            raise _NotOurs from None
        if len(kt) <= 256:
            self.keys[kt] = got
        return got

    def read(self, blocks: Iterator[str]) -> list[Any]:  # one loop, kept whole for speed
        indicators = _INDICATORS
        keys, words = self.keys, self.words
        word, missing = self.word, _MISSING
        lines_read = 0
        not_bare = _NOT_BARE
        max_depth = self.max_depth
        docs: list[Any] = []
        countdown = _CHECK_EVERY
        objs: list[Any] = []  # the open collections, innermost last
        cols: list[int] = [-1]  # their columns, after a sentinel
        kinds: list[int] = []
        root: Any = None
        begun = False  # a document has begun (content, or a `---`)
        # a key or an entry whose value is still open (null, unless the next line starts a collection)
        open_holder: Any = None
        open_key: Any = None
        open_col = -1
        open_map = False
        # the plain scalar just set, which deeper lines may continue (folded)
        cont_holder: Any = None
        cont_key: Any = None
        cont_raw = ""
        # the innermost collection when it is a mapping with no value open (else hot_col is -2): most lines are
        # `key: value` in it, and are read first, inline
        top: Any = None
        hot_col = -2
        mode = _LINE  # or inside a literal or a folded single-quoted scalar
        # the start of a line read inline -> [that start, column, key, its length, the next line's, whether alone]
        starts: dict[str, list[Any]] = {}
        prev: list[Any] | None = None  # the start of the line before, if it was read inline
        pred: list[Any] | None = None  # and the start of the line that followed it last time
        for block in blocks:
            # a character libyaml would refuse, or read as a line break: not read here
            if block.encode().translate(None, _ASCII_TEXT) if block.isascii() else _ODD.search(block):
                raise _NotOurs
            tabs = "\t" in block
            fast_keys = keys if not tabs else {}  # (in a block with a tab, each line goes the long way)
            if tabs:
                prev = pred = None
            lines = block.split("\n")
            lines_read += len(lines)
            # a line makes at most three nodes (`- key: value`), four on a document's first: a text that might make
            # more than max_nodes is left to the full loader, which counts them one by one
            if 4 * lines_read > self.max_nodes:
                raise _NotOurs
            for line in lines:
                if mode:
                    if mode == _QUOTED:
                        self.quoted_line(line)
                        mode = _LINE if self.holder is None else _QUOTED
                        continue
                    if self.literal_line(line):
                        continue
                    mode = _LINE  # the literal ended before this line
                # a line `key: value` or `key:` with a plain key seen before, in a mapping, is read here, inline.
                # Its start (indentation, key, `: `) is remembered with the start of the line that followed it, and
                # lines that start as predicted (the items of a list are alike) skip the work of splitting them.
                info = pred
                if info is not None and line.startswith(info[0]) and (len(line) == info[3] or not info[5]):
                    s = None
                    col, k, v = info[1], info[2], line[info[3] :]
                else:
                    s = line.lstrip(" ")
                    col = len(line) - len(s)
                    j = s.find(": ")
                    if j > 0:
                        k = fast_keys.get(s[:j], missing)
                        v = s[j + 2 :]
                        size = col + j + 2
                    elif s[-1:] == ":":
                        k = fast_keys.get(s[:-1], missing)
                        v = ""
                        size = len(line)
                    else:
                        k = missing
                    info = None
                    if k is not missing:
                        start = line[:size]
                        info = starts.get(start)
                        if info is None and len(starts) < _STARTS_KEPT:
                            info = starts[start] = [start, col, k, size, None, not v]
                        if prev is not None:
                            prev[4] = info
                if k is not missing:
                    if col != hot_col:
                        if open_holder is not None:
                            if col > open_col:  # the first key of the open value's mapping
                                top = {}
                                open_holder[open_key] = top
                                objs.append(top)
                                cols.append(col)
                                kinds.append(_MAP)
                                hot_col = col
                                if len(objs) >= max_depth:
                                    raise _NotOurs
                            open_holder = None
                        if col < hot_col or (hot_col == -2 and objs):  # a key of a mapping further out
                            while col < cols[-1]:
                                objs.pop()
                                cols.pop()
                                kinds.pop()
                            if col == cols[-1] and kinds[-1] == _INDENTLESS:
                                objs.pop()
                                cols.pop()
                                kinds.pop()
                            if col == cols[-1] and kinds[-1] == _MAP:
                                top = objs[-1]
                                hot_col = col
                    if col == hot_col:
                        if not v:  # `key:`: null, or a collection on the next lines
                            top[k] = None
                            open_holder, open_key, open_col, open_map = top, k, col, True
                            hot_col = -2
                            cont_holder = None
                            prev = info
                            pred = info[4] if info is not None else None
                            continue
                        c = v[0]
                        if c not in not_bare:
                            if ": " not in v and " #" not in v and v[-1] != " " and v[-1] != ":":
                                # a plain scalar that no implicit type starts with: a string
                                top[k] = v
                                cont_holder, cont_key, cont_raw = top, k, v
                                prev = info
                                pred = info[4] if info is not None else None
                                continue
                        elif c == "'":
                            if len(v) > 1 and v[-1] == "'" and v.find("'", 1) == len(v) - 1:
                                top[k] = v[1:-1]
                                cont_holder = None
                                prev = info
                                pred = info[4] if info is not None else None
                                continue
                        elif c == '"':
                            if len(v) > 1 and v[-1] == '"' and v.find('"', 1) == len(v) - 1 and "\\" not in v:
                                top[k] = v[1:-1]
                                cont_holder = None
                                prev = info
                                pred = info[4] if info is not None else None
                                continue
                        else:
                            value = words.get(v, missing)
                            if value is not missing:  # a plain scalar read before (a number, a boolean, ...)
                                top[k] = value
                                cont_holder, cont_key, cont_raw = top, k, v
                                prev = info
                                pred = info[4] if info is not None else None
                                continue
                # every other line
                prev = pred = None
                if s is None:
                    s = line.lstrip(" ")
                countdown -= 1
                if not countdown:
                    countdown = _CHECK_EVERY
                    if time.monotonic() > self.deadline:
                        self.on_timeout()
                if not s:
                    cont_holder = None  # an empty line inside a folded scalar is a newline: not read here
                    continue
                c = s[0]
                if col == 0 and (c == "-" or c == ".") and s[:3] in ("---", "..."):
                    if s != "---":
                        raise _NotOurs
                    if begun:
                        docs.append(root)
                    root, begun = None, True
                    objs.clear()
                    kinds.clear()
                    cols[:] = [-1]
                    open_holder = cont_holder = top = None
                    hot_col = -2
                    continue
                if c == "#" or (tabs and "\t" in s):
                    raise _NotOurs
                dash = c == "-" and (len(s) == 1 or s[1] == " ")
                # where this line goes: into the open value, a continuation, or an open collection
                if open_holder is not None:
                    if col > open_col or (col == open_col and dash and open_map):
                        if dash:
                            new: Any = []
                            kind = _SEQ if col > open_col else _INDENTLESS
                        else:
                            new, kind = {}, _MAP
                        open_holder[open_key] = new
                        open_holder = None
                        objs.append(new)
                        cols.append(col)
                        kinds.append(kind)
                        if len(objs) >= max_depth:
                            raise _NotOurs
                    else:
                        open_holder = None  # it stays null
                elif not objs:  # the document's root
                    if col:
                        raise _NotOurs
                    root, kind = ([], _SEQ) if dash else ({}, _MAP)
                    begun = True
                    objs.append(root)
                    cols.append(0)
                    kinds.append(kind)
                elif col > cols[-1]:  # a plain scalar folded onto this line
                    if cont_holder is None or cont_raw is None or c in indicators:
                        raise _NotOurs
                    t = s.rstrip(" ")
                    if ": " in t or " #" in t or t[-1] == ":":
                        raise _NotOurs
                    cont_raw = cont_raw + " " + t
                    cont_holder[cont_key] = word(cont_raw)
                    continue
                cont_holder = None
                while col < cols[-1]:
                    objs.pop()
                    cols.pop()
                    kinds.pop()
                if col != cols[-1]:
                    raise _NotOurs
                kind = kinds[-1]
                if dash:
                    if kind == _MAP:
                        raise _NotOurs
                    seq = objs[-1]
                    rest = s[1:]
                    v = rest.lstrip(" ")
                    hot_col = -2
                    if not v:  # `-` alone: null, or a collection on the next lines
                        seq.append(None)
                        open_holder, open_key, open_col, open_map = seq, len(seq) - 1, col, False
                        continue
                    c = v[0]
                    if c == "-" and (len(v) == 1 or v[1] == " "):
                        raise _NotOurs
                    k, val = self.split(v)
                    if k is missing:  # a scalar entry
                        seq.append(None)
                        mode = self.scalar(seq, len(seq) - 1, v, col)
                        if mode == _PLAIN:  # it may go on, folded
                            mode = _LINE
                            cont_holder, cont_key, cont_raw = seq, len(seq) - 1, self.raw
                        continue
                    m: Any = {}
                    seq.append(m)
                    col += len(s) - len(v)
                    objs.append(m)
                    cols.append(col)
                    kinds.append(_MAP)
                    if len(objs) >= max_depth:
                        raise _NotOurs
                else:
                    if kind != _MAP:
                        if kind == _SEQ:
                            raise _NotOurs
                        objs.pop()  # a key's sequence at its column ends at the next key
                        cols.pop()
                        kinds.pop()
                    m = objs[-1]
                    k, val = self.split(s)
                    if k is missing:
                        raise _NotOurs
                # a key and what follows it, in the mapping m at col
                if val is None:  # `key:`: null, or a collection on the next lines
                    m[k] = None
                    open_holder, open_key, open_col, open_map = m, k, col, True
                    hot_col = -2
                    continue
                m[k] = None
                mode = self.scalar(m, k, val, col)
                if mode == _PLAIN:
                    mode = _LINE
                    cont_holder, cont_key, cont_raw = m, k, self.raw
                top, hot_col = m, col
        if mode == _LITERAL:
            self.literal_line(None)
        elif mode:
            raise _NotOurs  # a quoted scalar left open
        if time.monotonic() > self.deadline:
            self.on_timeout()
        if begun:
            docs.append(root)
        return docs

    def split(self, s: str) -> tuple[Any, str | None]:
        """(key, the value's text or None) of a mapping entry's line `s`, or (_MISSING, None) if it is none."""
        c = s[0]
        if c == "'" or c == '"':
            m = (_SINGLE if c == "'" else _DOUBLE).match(s)
            if m is None:
                return _MISSING, None
            end = m.end()
            if s[end : end + 1] != ":":
                return _MISSING, None
            key: Any = m.group(1).replace("''", "'") if c == "'" else _double(m.group(1))
            rest = s[end + 1 :]
        else:
            j = s.find(": ")
            if j < 0:
                if s[-1] != ":":
                    return _MISSING, None
                j = len(s) - 1
            key = self.keys.get(s[:j], _MISSING)
            if key is _MISSING:
                key = self.key(s[:j])
            rest = s[j + 1 :]
        v = rest.lstrip(" ")
        if not v:
            return key, None
        if rest[0] != " ":
            raise _NotOurs
        return key, v

    def scalar(self, holder: Any, k: Any, v: str, col: int) -> int:
        """holder[k] = the scalar (or empty flow collection) written `v` in a collection at `col`. Returns how the
        next lines are read: as lines (_LINE), as lines that may fold the plain scalar just read (_PLAIN, its text
        in self.raw), or as the rest of a literal (_LITERAL) or single-quoted (_QUOTED) scalar begun here."""
        c = v[0]
        if c == "'" or c == '"':
            m = (_SINGLE if c == "'" else _DOUBLE).match(v)
            if m is not None:
                if v[m.end() :].strip(" "):
                    raise _NotOurs
                s = m.group(1).replace("''", "'") if c == "'" else _double(m.group(1))
                holder[k] = s
                return _LINE
            if c == '"' or "\t" in v:
                raise _NotOurs
            # a single-quoted scalar folded over the next lines, each deeper than `col`
            self.holder, self.key_, self.col = holder, k, col
            self.parts = [v[1:].rstrip(" ")]
            self.breaks = 0
            return _QUOTED
        if c == "{" or c == "[":
            t = v.rstrip(" ")
            if t == "{}":
                holder[k] = {}
            elif t == "[]":
                holder[k] = []
            else:
                raise _NotOurs
            return _LINE
        if c == "|":
            head = v.rstrip(" ")
            if head not in ("|", "|-", "|+"):
                raise _NotOurs  # an indentation indicator, or a comment
            self.holder, self.key_, self.col = holder, k, col
            self.head, self.indent, self.most, self.parts = head, 0, 0, []
            return _LITERAL
        if (c in _INDICATORS and (c != "-" or len(v) == 1 or v[1] == " ")) or ": " in v or " #" in v:
            raise _NotOurs
        t = v.rstrip(" ")
        if t[-1] == ":":
            raise _NotOurs
        holder[k] = self.word(t)
        self.raw = t
        return _PLAIN

    def quoted_line(self, line: str) -> None:
        """A line of the single-quoted scalar begun before; self.holder is None once it is closed."""
        t = line.lstrip(" ")
        if not t:  # an empty line: a newline in the value
            self.breaks += 1
            return
        if len(line) - len(t) <= self.col or "\t" in t:
            raise _NotOurs  # a line the scalar's collection does not hold
        sep = "\n" * self.breaks if self.breaks else " "  # a line break alone folds into a space
        self.breaks = 0
        m = _SINGLE_END.match(t)
        if m is None:
            self.parts.append(sep + t.rstrip(" "))
            return
        if t[m.end() :].strip(" "):
            raise _NotOurs
        self.parts.append(sep + m.group(1))
        self.holder[self.key_] = "".join(self.parts).replace("''", "'")
        self.holder = None

    def literal_line(self, line: str | None) -> bool:
        """Whether `line` is part of the literal scalar begun before; if not (or at the end, None), that scalar is
        set, its empty lines at the end kept as its header says."""
        text = self.parts
        if line is not None:
            if not self.indent:  # empty lines, then the first with text sets the indentation
                t = line.lstrip(" ")
                if not t:
                    self.most = max(self.most, len(line))
                    text.append("")
                    return True
                indent = len(line) - len(t)
                if indent <= self.col or self.most > indent or t[0] == "\t":
                    raise _NotOurs  # an empty literal, or empty lines deeper than its text
                self.indent, self.pad = indent, " " * indent
                text.append(line[indent:])
                return True
            if line.startswith(self.pad):
                text.append(line[self.indent :])
                return True
            if not line.strip(" "):
                text.append("")
                return True
        if not self.indent:
            raise _NotOurs
        end = len(text)  # the empty lines at the end are the chomping's
        while not text[end - 1]:
            end -= 1
        body = "\n".join(text[:end])
        if self.head == "|":
            self.holder[self.key_] = body + "\n"
        elif self.head == "|-":
            self.holder[self.key_] = body
        else:
            self.holder[self.key_] = body + "\n" * (len(text) - end + 1)
        return False
