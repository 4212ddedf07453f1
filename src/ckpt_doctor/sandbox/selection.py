"""Label and field selectors, parsed and evaluated the way the apiserver does.

Label selectors: ``k=v``, ``k==v``, ``k!=v``, ``k in (a,b)``, ``k notin (a,b)``, ``k``, ``!k``;
terms are ANDed with commas. Field selectors: ``path=v``, ``path==v``, ``path!=v`` on dotted paths,
with ``\\,``, ``\\=`` and ``\\\\`` escapes in values.
"""

from __future__ import annotations

import re
from typing import Any, NamedTuple


class SelectorError(ValueError):
    """A selector the apiserver would reject with 400 BadRequest."""


class Requirement(NamedTuple):
    key: str
    op: str  # "=", "!=", "in", "notin", "exists", "!exists"
    values: frozenset[str]


class FieldTerm(NamedTuple):
    field: str
    op: str  # "=" or "!="
    value: str


_KEY = r"[A-Za-z0-9]([-A-Za-z0-9_./]*[A-Za-z0-9])?"
_VALUE = r"([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?"
_SET = re.compile(rf"(?P<key>{_KEY})\s+(?P<op>in|notin)\s*\((?P<values>[^()]*)\)")
_EQ = re.compile(rf"(?P<key>{_KEY})\s*(?P<op>==|!=|=)\s*(?P<value>{_VALUE})")
_EXISTS = re.compile(rf"(?P<neg>!?)\s*(?P<key>{_KEY})")


def _split_terms(text: str) -> list[str]:
    """Split on commas that are not inside parentheses."""
    terms, depth, current = [], 0, []
    for ch in text:
        depth += {"(": 1, ")": -1}.get(ch, 0)
        if ch == "," and depth == 0:
            terms.append("".join(current))
            current = []
        else:
            current.append(ch)
    terms.append("".join(current))
    return [t.strip() for t in terms if t.strip()]


def parse_labels(text: str) -> list[Requirement]:
    """Parse a label selector; the empty selector matches everything."""
    reqs = []
    for term in _split_terms(text):
        if m := _SET.fullmatch(term):
            values = frozenset(v.strip() for v in m["values"].split(",") if v.strip())
            if not values or not all(re.fullmatch(_VALUE, v) for v in values):
                raise SelectorError(f"unable to parse requirement: invalid values in {term!r}")
            reqs.append(Requirement(m["key"], m["op"], values))
        elif m := _EQ.fullmatch(term):
            reqs.append(Requirement(m["key"], "!=" if m["op"] == "!=" else "=", frozenset([m["value"]])))
        elif m := _EXISTS.fullmatch(term):
            reqs.append(Requirement(m["key"], "!exists" if m["neg"] else "exists", frozenset()))
        else:
            raise SelectorError(f"unable to parse requirement: found {term!r}, expected a label requirement")
    return reqs


def match_labels(reqs: list[Requirement], labels: dict[str, str] | None) -> bool:
    """True if ``labels`` satisfies every requirement."""
    labels = labels or {}
    for key, op, values in reqs:
        present, value = key in labels, labels.get(key)
        ok = {
            "=": present and value in values,
            "in": present and value in values,
            "!=": not present or value not in values,
            "notin": not present or value not in values,
            "exists": present,
            "!exists": not present,
        }[op]
        if not ok:
            return False
    return True


def _split_unescaped(text: str, sep: str) -> list[str]:
    parts, current, escaped = [], [], False
    for ch in text:
        if escaped:
            current.append("\\" + ch)
            escaped = False
        elif ch == "\\":
            escaped = True
        elif ch == sep:
            parts.append("".join(current))
            current = []
        else:
            current.append(ch)
    parts.append("".join(current))
    return parts


def _unescape(value: str) -> str:
    return re.sub(r"\\(.)", r"\1", value)


def parse_fields(text: str) -> list[FieldTerm]:
    """Parse a field selector into terms; the empty selector matches everything."""
    terms = []
    for raw in _split_unescaped(text, ","):
        if not raw.strip():
            continue
        m = re.fullmatch(r"\s*([^=!\s]+)\s*(!=|==|=)(.*)", raw)
        if not m:
            raise SelectorError(f"invalid selector: '{text}'; can't understand '{raw}'")
        terms.append(FieldTerm(m[1], "!=" if m[2] == "!=" else "=", _unescape(m[3].strip())))
    return terms


def field_value(obj: dict[str, Any], path: str) -> str:
    """The string form of a dotted path in ``obj``; missing fields read as ``""``."""
    cur: Any = obj
    for part in path.split("."):
        cur = cur.get(part) if isinstance(cur, dict) else None
    if cur is None:
        return ""
    if isinstance(cur, bool):
        return "true" if cur else "false"
    return str(cur)


def match_fields(terms: list[FieldTerm], obj: dict[str, Any], paths: dict[str, str] | None = None) -> bool:
    """True if ``obj`` satisfies every term; ``paths`` maps a field label to its dotted path."""
    paths = paths or {}
    for field, op, value in terms:
        actual = field_value(obj, paths.get(field, field))
        if (actual == value) != (op == "="):
            return False
    return True
