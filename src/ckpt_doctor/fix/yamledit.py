"""Surgical edits of YAML text, guided by ruamel.yaml round-trip positions.

Re-dumping a whole document, even with ruamel.yaml, re-indents sequences, re-wraps long
scalars and moves comments. Here every edit is a splice: the lines of one entry are found from
the parser's positions, and only those lines are inserted, replaced or removed. New content is
rendered by ruamel.yaml in the file's own indentation style (comments carried by moved nodes
come along); every other byte of the file stays as it was.

Each function takes the text and a node of a parse of *that* text, and returns the new text;
callers re-parse between edits.
"""

from __future__ import annotations

import io
import re
from collections import Counter
from dataclasses import dataclass
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq

from ckpt_doctor.sources.manifests import rt_yaml


class NotMechanical(Exception):
    """The fix needs a judgement call; the reason says what to do by hand."""


@dataclass(frozen=True)
class Style:
    mapping: int = 2  # spaces per nesting level
    offset: int = 2  # indentation of `-` under its parent key (0: `key:\n- a`)


def parse(text: str) -> list[Any]:
    """The documents of `text` as round-trip nodes, read the way manifests are (see rt_yaml)."""
    return list(rt_yaml().load_all(text))


def detect_style(docs: list[Any]) -> Style:
    """The indentation most of the file uses."""
    maps: Counter[int] = Counter()
    offs: Counter[int] = Counter()

    def walk(node: Any) -> None:
        if isinstance(node, CommentedMap):
            for k, v in node.items():
                try:
                    kcol = node.lc.key(k)[1]
                except (KeyError, TypeError, AttributeError):
                    kcol = None
                if kcol is not None and isinstance(v, CommentedMap) and len(v) and not v.fa.flow_style():
                    first = next(iter(v))
                    maps[v.lc.key(first)[1] - kcol] += 1
                elif kcol is not None and isinstance(v, CommentedSeq) and len(v) and not v.fa.flow_style():
                    offs[v.lc.col - kcol] += 1
                walk(v)
        elif isinstance(node, CommentedSeq):
            for v in node:
                walk(v)

    for d in docs:
        walk(d)
    m = maps.most_common(1)[0][0] if maps else 2
    o = offs.most_common(1)[0][0] if offs else 2
    return Style(m if m > 0 else 2, o if o >= 0 else 2)


def _yaml(style: Style) -> YAML:
    y = YAML(typ="rt")
    y.indent(mapping=style.mapping, sequence=style.offset + 2, offset=style.offset)
    y.width = 4096
    y.preserve_quotes = True
    return y


def render_entry(key: str, value: Any, style: Style) -> list[str]:
    """`key: value` as block YAML lines (with newlines), starting at column 0."""
    buf = io.StringIO()
    m = CommentedMap()
    m[key] = value
    _yaml(style).dump(m, buf)
    return [ln + "\n" for ln in buf.getvalue().rstrip("\n").split("\n")]


def render_items(items: list[Any], style: Style) -> list[str]:
    """Sequence items as block YAML lines with the dash at column 0."""
    lines = render_entry("x", CommentedSeq(items), style)[1:]
    cut = style.offset
    return [ln[cut:] if ln[:cut].strip() == "" else ln for ln in lines]


def indent_width(line: str) -> int:
    """How many spaces `line` starts with."""
    return len(line) - len(line.lstrip(" "))


def _lines(text: str) -> list[str]:
    out = text.splitlines(keepends=True)
    if out and not out[-1].endswith("\n"):
        out[-1] += "\n"
    return out


def span(lines: list[str], line: int, col: int, dashes_at_col: bool = False) -> tuple[int, int]:
    """[first, end) line indices of the block that starts at `line` with its key/dash at `col`.

    The block ends before the first later line indented at or left of `col` (a line at `col` that
    starts with `-` still belongs to it when `dashes_at_col`: a sequence written `key:\\n- a`).
    Comment lines at or left of `col` that trail the block are left out: they introduce what follows.
    """
    last = line
    i = line + 1
    while i < len(lines):
        s = lines[i]
        st = s.strip()
        if not st:
            i += 1
            continue
        ind = indent_width(s)
        if ind == 0 and (st in ("---", "...") or st.startswith("--- ")):
            break
        if st.startswith("#"):
            if ind > col:
                last = i
            i += 1
            continue
        if ind < col or (ind == col and not (dashes_at_col and st.startswith("-"))):
            break
        last = i
        i += 1
    return line, last + 1


def entry_span(lines: list[str], mapping: CommentedMap, key: Any) -> tuple[int, int]:
    kl, kc = mapping.lc.key(key)
    v = mapping[key]
    dashes = isinstance(v, CommentedSeq) and not v.fa.flow_style() and len(v) > 0 and v.lc.col == kc
    return span(lines, kl, kc, dashes)


def item_span(lines: list[str], seq: CommentedSeq, index: int) -> tuple[int, int]:
    il, ic = seq.lc.item(index)
    dash = lines[il].rfind("-", 0, ic + 1) if il < len(lines) else -1
    if dash < 0 or lines[il][dash] != "-":
        raise NotMechanical("could not find the `-` of a sequence item")
    return span(lines, il, dash)


def _on_dash_line(lines: list[str], line: int, col: int) -> bool:
    return lines[line][:col].strip().startswith("-")


def _comment_lead(lines: list[str], line: int, col: int) -> int:
    """Move `line` up over the comment lines at `col` that introduce it."""
    while line > 0 and lines[line - 1].strip().startswith("#") and indent_width(lines[line - 1]) == col:
        line -= 1
    return line


def _splice(lines: list[str], start: int, end: int, new: list[str]) -> str:
    return "".join(lines[:start] + new + lines[end:])


def _at_col(rendered: list[str], col: int) -> list[str]:
    return [(" " * col + ln) if ln.strip() else ln for ln in rendered]


def insert_entry(
    text: str, mapping: CommentedMap, key: str, value: Any, style: Style, before: str | None = None
) -> str:
    """Add `key: value` to a block mapping (at its end, or before the entry `before`)."""
    lines = _lines(text)
    keys = list(mapping.keys())
    if not keys or mapping.fa.flow_style():
        raise NotMechanical("the mapping is written in flow style ({…})")
    col = mapping.lc.key(keys[0])[1]
    rendered = _at_col(render_entry(key, value, style), col)
    if before is not None and before in mapping:
        bl, bc = mapping.lc.key(before)
        if not _on_dash_line(lines, bl, bc):
            at = _comment_lead(lines, bl, bc)
            return _splice(lines, at, at, rendered)
    _start, end = entry_span(lines, mapping, keys[-1])
    return _splice(lines, end, end, rendered)


def append_items(text: str, seq: CommentedSeq, items: list[Any], style: Style) -> str:
    """Add items at the end of a non-empty block sequence."""
    lines = _lines(text)
    if not len(seq) or seq.fa.flow_style():
        raise NotMechanical("the list is written in flow style ([…])")
    _s, end = item_span(lines, seq, len(seq) - 1)
    dash = seq.lc.col
    return _splice(lines, end, end, _at_col(render_items(items, style), dash))


def remove_entry(text: str, mapping: CommentedMap, key: Any) -> str:
    lines = _lines(text)
    kl, kc = mapping.lc.key(key)
    if _on_dash_line(lines, kl, kc):
        raise NotMechanical(f"{key!r} is the first key of a list item")
    start, end = entry_span(lines, mapping, key)
    return _splice(lines, start, end, [])


def remove_item(text: str, seq: CommentedSeq, index: int) -> str:
    lines = _lines(text)
    start, end = item_span(lines, seq, index)
    return _splice(lines, start, end, [])


def replace_entry(text: str, mapping: CommentedMap, key: Any, new_key: str, value: Any, style: Style) -> str:
    """Replace the whole entry `key` by `new_key: value`, at the same place and column."""
    lines = _lines(text)
    kl, kc = mapping.lc.key(key)
    if _on_dash_line(lines, kl, kc):
        raise NotMechanical(f"{key!r} is the first key of a list item")
    start, end = entry_span(lines, mapping, key)
    return _splice(lines, start, end, _at_col(render_entry(new_key, value, style), kc))


_SCALAR = re.compile(r"""("(?:[^"\\]|\\.)*"|'(?:[^']|'')*'|[^\s#]+)""")


def set_scalar(text: str, mapping: CommentedMap, key: Any, literal: str) -> str:
    """Replace the single-line scalar value of `key` by `literal` (keeps any comment after it)."""
    lines = _lines(text)
    vl, vc = mapping.lc.value(key)
    line = lines[vl]
    m = _SCALAR.match(line, vc)
    if m is None or isinstance(mapping[key], CommentedMap | CommentedSeq):
        raise NotMechanical(f"the value of {key!r} is not a one-line scalar")
    lines[vl] = line[: m.start()] + literal + line[m.end() :]
    return "".join(lines)


def insert_at(text: str, line: int, col: int, fragment: str) -> str:
    lines = _lines(text)
    lines[line] = lines[line][:col] + fragment + lines[line][col:]
    return "".join(lines)


def ensure_path(
    text: str, root: CommentedMap, path: list[str], value: Any, style: Style, before: dict[str, str] | None = None
) -> str | None:
    """Make `root[path...]` exist with `value` at its end, creating the missing mappings.

    Returns None when the full path already exists (nothing to insert).
    `before` says, per missing key, which sibling it goes in front of (metadata before spec…).
    """
    cur = root
    for i, key in enumerate(path):
        last = i == len(path) - 1
        if isinstance(cur, CommentedMap) and key in cur and not last:
            nxt = cur[key]
            if nxt is None or (isinstance(nxt, CommentedMap) and not len(nxt)):
                return replace_entry(text, cur, key, key, _nest(path[i + 1 :], value), style)
            if not isinstance(nxt, CommentedMap):
                raise NotMechanical(f"{'.'.join(path[: i + 1])} is not a mapping")
            cur = nxt
            continue
        if isinstance(cur, CommentedMap) and key in cur and last:
            return None
        return insert_entry(text, cur, key, _nest(path[i + 1 :], value), style, (before or {}).get(key))
    return None


def _nest(keys: list[str], value: Any) -> Any:
    """`value` under the mapping keys `keys` (outermost first): a.b → {a: {b: value}}."""
    for k in reversed(keys):
        wrap = CommentedMap()
        wrap[k] = value
        value = wrap
    return value


def seq_block(text: str, mapping: CommentedMap, key: Any) -> tuple[list[str], int]:
    """The lines of the block sequence under `key` (comments included) and the column of its dashes."""
    lines = _lines(text)
    seq = mapping.get(key)
    if not isinstance(seq, CommentedSeq) or not len(seq) or seq.fa.flow_style():
        raise NotMechanical(f"{key!r} is not a block list")
    kl, _kc = mapping.lc.key(key)
    if seq.lc.line <= kl:
        raise NotMechanical(f"{key!r} starts on its key's line")
    _s, end = entry_span(lines, mapping, key)
    return lines[kl + 1 : end], seq.lc.col


def shift(block: list[str], delta: int) -> list[str]:
    """Move every line of a block `delta` columns (blank lines stay blank)."""
    out = []
    for ln in block:
        if not ln.strip():
            out.append(ln)
        elif delta >= 0:
            out.append(" " * delta + ln)
        else:
            if indent_width(ln) < -delta:
                raise NotMechanical("the block cannot be moved left that far")
            out.append(ln[-delta:])
    return out


def insert_seq_block(
    text: str,
    root: CommentedMap,
    path: list[str],
    block: list[str],
    src_col: int,
    style: Style,
    before: str | None = None,
) -> str:
    """Append the list items in `block` (dashes at `src_col`) to the list at `root[path]`,
    creating the missing keys of `path` as block mappings."""
    lines = _lines(text)
    cur: Any = root
    for depth, key in enumerate(path):
        nxt = cur.get(key) if isinstance(cur, CommentedMap) else None
        last = depth == len(path) - 1
        if key in cur and nxt is not None and not last and isinstance(nxt, CommentedMap) and len(nxt):
            if nxt.fa.flow_style():
                raise NotMechanical(f"{key!r} is written in flow style")
            cur = nxt
            continue
        if key in cur and last:
            if not isinstance(nxt, CommentedSeq) or not len(nxt) or nxt.fa.flow_style():
                raise NotMechanical(f"{key!r} is not a block list")
            _s, end = item_span(lines, nxt, len(nxt) - 1)
            return _splice(lines, end, end, shift(block, nxt.lc.col - src_col))
        if key in cur:
            raise NotMechanical(f"{key!r} is empty or not a mapping")
        if not len(cur) or cur.fa.flow_style():
            raise NotMechanical("the parent mapping is empty or in flow style")
        col = cur.lc.key(next(iter(cur)))[1]
        missing = path[depth:]
        header = [" " * (col + i * style.mapping) + f"{k}:\n" for i, k in enumerate(missing)]
        dash_col = col + (len(missing) - 1) * style.mapping + style.offset
        new = header + shift(block, dash_col - src_col)
        if before is not None and before in cur and depth == 0:
            bl, bc = cur.lc.key(before)
            if not _on_dash_line(lines, bl, bc):
                at = _comment_lead(lines, bl, bc)
                return _splice(lines, at, at, new)
        _s, end = entry_span(lines, cur, list(cur.keys())[-1])
        return _splice(lines, end, end, new)
    raise NotMechanical("empty path")
