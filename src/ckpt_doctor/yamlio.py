"""Loading Kubernetes documents from YAML or JSON text, defensively.

Bundles come from users and clusters: documents may be malformed, may be a `kind: List`,
may be a multi-document stream, and may contain alias bombs. Everything here either returns
plain dicts or raises InputError naming the file.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from typing import Any

import yaml

from ckpt_doctor.errors import InputError
from ckpt_doctor.yamlblock import read_block_style

# Bulk reading uses libyaml's parser through PyYAML (about 10x faster than a pure-Python parser on a
# 1,500-pod dump); ruamel.yaml stays for round-trip edits and line positions (lint, --fix).
_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _implicit_types() -> dict[str, tuple[re.Pattern[str], list[str]]] | None:
    """The safe loaders' implicit types by a plain scalar's first character: one pattern, its alternatives PyYAML's
    own patterns in PyYAML's order (the first that matches wins, as in Resolver.resolve), and their tags; None if
    some type may start with any character."""
    table = yaml.resolver.Resolver.yaml_implicit_resolvers
    if None in table:
        return None
    out = {}
    for first, types in table.items():
        flags = {rx.flags for _tag, rx in types}
        if len(flags) != 1:
            return None
        pattern = "|".join(f"(?P<t{i}>{rx.pattern})" for i, (_tag, rx) in enumerate(types))
        out[first] = (re.compile(pattern, flags.pop()), [tag for tag, _rx in types])
    return out


_IMPLICIT = _implicit_types()
_RESOLVER = yaml.resolver.Resolver()


def resolve_plain(value: str) -> str:
    """The tag the safe loaders give a plain scalar `value` (what Resolver.resolve gives, faster)."""
    if _IMPLICIT is None:
        return _RESOLVER.resolve(yaml.nodes.ScalarNode, value, (True, False))
    got = _IMPLICIT.get(value[:1])
    if got is None:
        return _STR
    m = got[0].match(value)
    return _STR if m is None else got[1][int(m.lastgroup[1:])]  # type: ignore[index]


# An expanded document larger than this many nodes is refused (an alias bomb expands
# exponentially; a real kubectl dump of 20k events is ~2M nodes).
MAX_EXPANDED_NODES = 20_000_000
# Bounds checked before or while a YAML text is read, so that no input makes the reader allocate without
# limit (issue 22): the nodes of one text, the longest line (a Kubernetes object is at most ~1.5 MiB in etcd,
# so a longer line is no object's: it is a flow-style document built to be expensive), and the time.
MAX_NODES = MAX_EXPANDED_NODES
MAX_LINE = 4 * 1024 * 1024
MAX_DEPTH = 200
SECONDS_BASE, SECONDS_PER_MIB = 60.0, 2.0  # reading a text may take 60 s, plus 2 s per MiB of it
_CHECK_EVERY = 1 << 14  # events between two looks at the clock


def expanded_size(value: Any) -> int:
    """Node count of `value` with shared (aliased) sub-trees counted every time they occur.

    Computed over unique containers only, so a billion-laughs document is measured, not expanded.
    """
    memo: dict[int, int] = {}

    def size(v: Any, depth: int) -> int:
        if depth > MAX_DEPTH:
            raise InputError(f"document nests deeper than {MAX_DEPTH} levels")
        if isinstance(v, dict | list):
            key = id(v)
            if key in memo:
                return memo[key]
            items = v.values() if isinstance(v, dict) else v
            total = 1 + sum(size(i, depth + 1) for i in items)
            memo[key] = total
            return total
        return 1

    return size(value, 0)


def longest_line_over(text: str, limit: int) -> int | None:
    """The length of a line of `text` longer than `limit` characters, or None: found without splitting the text,
    by looking for a newline in each window of limit/2 characters (a longer line holds a whole window)."""
    step = max(1, limit // 2)
    n = len(text)
    i = 0
    while i < n:
        if text.find("\n", i, i + step) >= 0:
            i += step
            continue
        begin = text.rfind("\n", 0, i) + 1  # no newline in this window: measure the line it is part of
        stop = text.find("\n", i)
        end = n if stop < 0 else stop
        if end - begin > limit:
            return end - begin
        i = end + 1
    return None


def iter_documents(text: str, where: str) -> Iterator[Any]:
    """Yield the documents of a YAML stream or a JSON text."""
    stripped = text.lstrip()
    if stripped.startswith(("{", "[")):
        try:
            doc = json.loads(text)
        except json.JSONDecodeError as e:
            if where.endswith(".json"):
                raise InputError(f"malformed JSON at line {e.lineno} column {e.colno}: {e.msg}", where) from None
        except RecursionError:
            raise InputError("JSON nests too deeply to be a Kubernetes object; refusing it", where) from None
        else:  # JSON is fast; a YAML stream of JSON documents falls through to the YAML parser
            yield doc
            return
    long = longest_line_over(text, MAX_LINE)
    if long is not None:
        raise InputError(
            f"a line of {long} characters, longer than any Kubernetes object's ({MAX_LINE // 1024 // 1024} MiB at "
            "most); refusing to parse it as YAML",
            where,
        )
    try:
        docs = list(_Builder(text, where).documents())
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        problem = getattr(e, "problem", None) or str(e).splitlines()[0]
        at = f" at line {mark.line + 1} column {mark.column + 1}" if mark is not None else ""
        raise InputError(f"malformed YAML{at}: {problem}", where) from None
    except (RecursionError, ValueError, TypeError) as e:
        raise InputError(f"unreadable YAML: {e}", where) from None
    yield from (doc for doc in docs if doc is not None)


class _Special:
    """A plain scalar that is not data by itself: the merge key `<<`, or the value key `=`."""

    __slots__ = ("mark", "tag", "value")

    def __init__(self, tag: str, value: str, mark: Any) -> None:
        self.tag, self.value, self.mark = tag, value, mark


_MERGE = "tag:yaml.org,2002:merge"
_VALUE = "tag:yaml.org,2002:value"
_STR = "tag:yaml.org,2002:str"
_MAP = "tag:yaml.org,2002:map"
_SEQ = "tag:yaml.org,2002:seq"
_SET = "tag:yaml.org,2002:set"
_OMAP = ("tag:yaml.org,2002:omap", "tag:yaml.org,2002:pairs")
_MISSING = object()


class _Frame:
    """An open mapping or sequence: what it holds so far, and its expanded size and height."""

    __slots__ = ("anchor", "height", "is_map", "key", "mark", "merges", "obj", "size", "tag")

    def __init__(self, is_map: bool, obj: Any, tag: str | None, anchor: str | None, mark: Any) -> None:
        self.is_map = is_map
        self.obj = obj
        self.tag = tag
        self.anchor = anchor
        self.mark = mark
        self.key: Any = _MISSING
        self.merges: list[dict[Any, Any]] = []
        self.size = 1
        self.height = 0


class _Builder:
    """Documents straight from libyaml's events, as PyYAML's safe loader builds them, without its node graph.

    PyYAML composes a whole document as nodes (each with two marks: about 1.8 KB a node) before it makes a
    single dict; a 60 MB `kind: List` of events took 2.2 GB. Here each event becomes its value at once, and
    the reading is bounded as it goes: nodes (aliases counted expanded, so an alias bomb is refused before it
    is walked), depth, and time. The values are those of `yaml.load(text, CSafeLoader)`: plain scalars are
    resolved by the same resolver and built by the same constructors (remembered per distinct text, so
    repeated words share one string), merge keys, sets, ordered maps and anchors behave alike, and the same
    errors are raised with the same marks.
    """

    def __init__(self, text: str, where: str, max_nodes: int | None = None) -> None:
        self.where = where
        self.text = text
        self.max_nodes = MAX_NODES if max_nodes is None else max_nodes
        self.constructor = yaml.constructor.SafeConstructor()
        self.budget = SECONDS_BASE + SECONDS_PER_MIB * len(text) / (1024 * 1024)
        self.deadline = time.monotonic() + self.budget
        self.words: dict[str, Any] = {}  # plain scalar text -> its value
        self.strings: dict[str, str] = {}  # short quoted text -> one shared string
        self.nodes = 0
        self.aliased = False

    def documents(self) -> Iterator[Any]:
        # the block style kubectl writes is read line by line (several times faster than libyaml's events become
        # objects); anything else, or anything that reader is not sure of, by libyaml with the same values
        docs = read_block_style(self.text, self._plain, self.max_nodes, MAX_DEPTH, self.deadline, self._timeout)
        if docs is not None:
            yield from docs
            return
        self.loader = _Loader(self.text)
        try:
            yield from self._documents()
        finally:
            self.loader.dispose()

    def _timeout(self) -> None:
        raise InputError(f"reading this YAML took longer than {self.budget:.0f} s; refusing it", self.where)

    def _plain(self, value: str) -> Any:
        """The value of a plain scalar (LookupError for the merge and value keys, no values by themselves)."""
        got = self.words.get(value, _MISSING)
        if got is _MISSING:
            tag = resolve_plain(value)
            if tag == _STR:
                got = value
            elif tag in (_MERGE, _VALUE):
                raise LookupError(tag)
            else:
                node = yaml.nodes.ScalarNode(tag, value, None, None, None)
                make = self.constructor.yaml_constructors.get(tag) or self.constructor.yaml_constructors[None]
                got = make(self.constructor, node)
                if got.__class__ is not str and not isinstance(got, int | float | bool | type(None)):
                    return got  # timestamps: a new value each time, as PyYAML gives
            if len(value) <= 256:
                self.words[value] = got
        elif got.__class__ is _Special:
            raise LookupError(got.tag)
        return got

    def _documents(self) -> Iterator[Any]:
        events = yaml.events
        scalar_ev, alias_ev = events.ScalarEvent, events.AliasEvent
        map_start, seq_start = events.MappingStartEvent, events.SequenceStartEvent
        map_end, seq_end = events.MappingEndEvent, events.SequenceEndEvent
        doc_start, doc_end = events.DocumentStartEvent, events.DocumentEndEvent
        get = self.loader.get_event
        words, strings, special, missing = self.words, self.strings, _Special, _MISSING
        max_nodes = self.max_nodes
        nodes = 0
        stack: list[_Frame] = []
        anchors: dict[str, tuple[Any, int, int, Any]] = {}  # anchor -> (value, size, height, mark)
        open_anchors: set[str] = set()
        root: Any = None
        countdown = _CHECK_EVERY
        while True:
            ev = get()
            cls = ev.__class__
            countdown -= 1
            if not countdown:
                countdown = _CHECK_EVERY
                if time.monotonic() > self.deadline:
                    raise InputError(f"reading this YAML took longer than {self.budget:.0f} s; refusing it", self.where)
            if cls is scalar_ev:
                nodes += 1
                if nodes > max_nodes:
                    self._too_many()
                if ev.tag is None and ev.anchor is None and stack:  # the common case, inline
                    value = ev.value
                    if not ev.implicit[0]:
                        got = strings.setdefault(value, value) if len(value) <= 64 else value
                    else:
                        got = words.get(value, missing)
                        if got is missing or got.__class__ is special:
                            got = self._scalar(ev)
                    top = stack[-1]
                    if got.__class__ is special:
                        root = self._add(stack, got, 1, 0, ev.start_mark, root)
                        continue
                    if not top.is_map:
                        top.obj.append(got)
                    elif top.key is missing:
                        if got.__class__ is not str:  # a key of another type: checked for hashing there
                            root = self._add(stack, got, 1, 0, ev.start_mark, root)
                            continue
                        top.key = got
                    elif top.key.__class__ is special:
                        root = self._add(stack, got, 1, 0, ev.start_mark, root)
                        continue
                    else:
                        top.obj[top.key] = got
                        top.key = missing
                    top.size += 1
                    if not top.height:
                        top.height = 1
                    continue
                value = self._scalar(ev)
                if ev.anchor is not None:
                    self._anchor(anchors, ev, (value, 1, 0, ev.start_mark))
                root = self._add(stack, value, 1, 0, ev.start_mark, root)
            elif cls is map_start or cls is seq_start:
                nodes += 1
                if nodes > max_nodes:
                    self._too_many()
                if len(stack) >= MAX_DEPTH:
                    raise InputError(f"document nests deeper than {MAX_DEPTH} levels", self.where)
                is_map = cls is map_start
                tag = ev.tag if ev.tag not in (None, "!") else None
                obj: Any = {} if is_map else []
                frame = _Frame(is_map, obj, tag, ev.anchor, ev.start_mark)
                if ev.anchor is not None:
                    self._anchor(anchors, ev, (obj, 1, 0, ev.start_mark))
                    open_anchors.add(ev.anchor)
                stack.append(frame)
            elif cls is map_end or cls is seq_end:
                frame = stack.pop()
                value = self._finish(frame) if frame.merges or frame.tag is not None else frame.obj
                if frame.anchor is not None:
                    anchors[frame.anchor] = (value, frame.size, frame.height, frame.mark)
                    open_anchors.discard(frame.anchor)
                root = self._add(stack, value, frame.size, frame.height, frame.mark, root)
            elif cls is alias_ev:
                got = anchors.get(ev.anchor)
                if got is None:
                    raise yaml.composer.ComposerError(None, None, "found undefined alias", ev.start_mark)
                if ev.anchor in open_anchors:  # a collection holding itself: its expansion never ends
                    raise InputError(f"document nests deeper than {MAX_DEPTH} levels", self.where)
                value, size, height, _mark = got
                self.aliased = True
                if len(stack) + height > MAX_DEPTH:
                    raise InputError(f"document nests deeper than {MAX_DEPTH} levels", self.where)
                nodes += size
                if nodes > max_nodes:
                    self._too_many()
                root = self._add(stack, value, size, height, ev.start_mark, root)
            elif cls is doc_start:
                anchors.clear()
                open_anchors.clear()
                root = None
            elif cls is doc_end:
                yield root
                root = None
            elif cls is events.StreamEndEvent:
                self.nodes = nodes
                return

    def _too_many(self) -> None:
        if self.aliased:
            raise InputError("YAML aliases expand to an enormous document (alias bomb?); refusing it", self.where)
        raise InputError(f"YAML text of more than {self.max_nodes:,} nodes; refusing it", self.where)

    def _anchor(self, anchors: dict[str, Any], ev: Any, entry: tuple[Any, int, int, Any]) -> None:
        first = anchors.get(ev.anchor)
        if first is not None:
            raise yaml.composer.ComposerError(
                f"found duplicate anchor {ev.anchor!r}; first occurrence", first[3], "second occurrence", ev.start_mark
            )
        anchors[ev.anchor] = entry

    def _scalar(self, ev: Any) -> Any:
        value = ev.value
        tag = ev.tag
        if tag is None or tag == "!":
            if not ev.implicit[0]:  # quoted, literal or folded: a string
                if len(value) <= 64:
                    return self.strings.setdefault(value, value)
                return value
            got = self.words.get(value, _MISSING)
            if got is not _MISSING:
                return got if got.__class__ is not _Special else _Special(got.tag, value, ev.start_mark)
            tag = self.loader.resolve(yaml.nodes.ScalarNode, value, ev.implicit)
            if tag == _STR:
                got = value
            elif tag in (_MERGE, _VALUE):
                self.words[value] = _Special(tag, value, None)
                return _Special(tag, value, ev.start_mark)
            else:
                got = self._construct(tag, value, ev)
                if got.__class__ is not str and not isinstance(got, int | float | bool | type(None)):
                    return got  # timestamps: a new value each time, as PyYAML gives
            if len(value) <= 256:
                self.words[value] = got
            return got
        if tag == _STR:
            return value
        return self._construct(tag, value, ev)

    def _construct(self, tag: str, value: str, ev: Any) -> Any:
        node = yaml.nodes.ScalarNode(tag, value, ev.start_mark, ev.end_mark, ev.style)
        make = self.constructor.yaml_constructors.get(tag) or self.constructor.yaml_constructors[None]
        return make(self.constructor, node)

    def _undefined(self, tag: str, mark: Any) -> yaml.YAMLError:
        return yaml.constructor.ConstructorError(
            None, None, f"could not determine a constructor for the tag {tag!r}", mark
        )

    def _add(self, stack: list[_Frame], value: Any, size: int, height: int, mark: Any, root: Any) -> Any:
        if not stack:
            if value.__class__ is _Special:
                raise self._undefined(value.tag, value.mark)
            return value
        top = stack[-1]
        top.size += size
        if height + 1 > top.height:
            top.height = height + 1
        if not top.is_map:
            if value.__class__ is _Special:
                raise self._undefined(value.tag, value.mark)
            top.obj.append(value)
            return root
        if top.key is _MISSING:
            if value.__class__ is _Special:
                top.key = value if value.tag == _MERGE else value.value  # `=` as a key is the string "="
                return root
            try:
                hash(value)
            except TypeError:
                raise yaml.constructor.ConstructorError(
                    "while constructing a mapping", top.mark, "found unhashable key", mark
                ) from None
            top.key = value
            return root
        if value.__class__ is _Special:
            raise self._undefined(value.tag, value.mark)
        key, top.key = top.key, _MISSING
        if key.__class__ is _Special:  # a merge key: its mapping (or list of mappings) goes under the others
            if isinstance(value, dict):
                top.merges.append(value)
            elif isinstance(value, list):
                for v in value:
                    if not isinstance(v, dict):
                        found = "sequence" if isinstance(v, list) else "scalar"
                        raise yaml.constructor.ConstructorError(
                            "while constructing a mapping", top.mark,
                            f"expected a mapping for merging, but found {found}", mark,
                        )  # fmt: skip
                top.merges.extend(reversed(value))
            else:
                raise yaml.constructor.ConstructorError(
                    "while constructing a mapping", top.mark,
                    "expected a mapping or list of mappings for merging, but found scalar", mark,
                )  # fmt: skip
            return root
        top.obj[key] = value  # the merged keys go first when the mapping ends
        return root

    def _finish(self, frame: _Frame) -> Any:
        tag = frame.tag
        if frame.is_map:
            d = frame.obj
            if frame.merges:  # PyYAML puts the merged pairs first, then the mapping's own, which win
                own = dict(d)
                d.clear()
                for m in frame.merges:
                    d.update(m)
                d.update(own)
            if tag is None or tag == _MAP:
                return d
            if tag == _SET:
                return set(d)
            raise self._undefined(tag, frame.mark)
        seq = frame.obj
        if tag is None or tag == _SEQ:
            return seq
        if tag in _OMAP and all(isinstance(x, dict) and len(x) == 1 for x in seq):
            return [next(iter(x.items())) for x in seq]
        raise self._undefined(tag, frame.mark)


def kube_objects(text: str, where: str, rejects: list[dict[str, Any]] | None = None) -> Iterator[dict[str, Any]]:
    """Yield Kubernetes objects from text, flattening `kind: List` / `*List` wrappers.

    Documents that are not objects (scalars, lists of scalars, dicts without kind) are
    skipped silently: the caller decides whether a file with none is an error. A mapping that has
    the shape of an object (metadata, or a kind or apiVersion) whose kind or apiVersion is not a
    string goes to `rejects`, when given: it is an object that could not be read, not no object.
    """
    for doc in iter_documents(text, where):
        yield from flatten_objects(doc, rejects)


def flatten_objects(doc: Any, rejects: list[dict[str, Any]] | None = None) -> Iterator[dict[str, Any]]:
    """The Kubernetes objects in a document: itself, a list's items, or a `kind: *List`'s items."""
    if isinstance(doc, list):
        for item in doc:
            yield from flatten_objects(item, rejects)
        return
    if not isinstance(doc, dict):
        return
    kind = doc.get("kind")
    if isinstance(kind, str) and kind.endswith("List") and isinstance(doc.get("items"), list):
        item_kind = kind[: -len("List")] if kind != "List" else None
        for item in doc["items"]:
            if isinstance(item, dict):
                if item_kind and "kind" not in item:
                    item = {**item, "kind": item_kind, "apiVersion": doc.get("apiVersion")}
                yield from flatten_objects(item, rejects)
        return
    api = doc.get("apiVersion")
    if isinstance(kind, str) and kind and isinstance(api, str) and api:
        yield doc
    elif rejects is not None and (isinstance(doc.get("metadata"), dict) or "kind" in doc or "apiVersion" in doc):
        rejects.append(doc)
