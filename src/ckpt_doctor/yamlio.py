"""Loading Kubernetes documents from YAML or JSON text, defensively.

Bundles come from users and clusters: documents may be malformed, may be a `kind: List`,
may be a multi-document stream, and may contain alias bombs. Everything here either returns
plain dicts or raises InputError naming the file.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import yaml

from ckpt_doctor.errors import InputError

# Bulk reading uses libyaml through PyYAML (about 10x faster than a pure-Python parser on a
# 1,500-pod dump); ruamel.yaml stays for round-trip edits and line positions (lint, --fix).
_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

# An expanded document larger than this many nodes is refused (an alias bomb expands
# exponentially; a real kubectl dump of 20k events is ~2M nodes).
MAX_EXPANDED_NODES = 20_000_000


def expanded_size(value: Any) -> int:
    """Node count of `value` with shared (aliased) sub-trees counted every time they occur.

    Computed over unique containers only, so a billion-laughs document is measured, not expanded.
    """
    memo: dict[int, int] = {}

    def size(v: Any, depth: int) -> int:
        if depth > 200:
            raise InputError("document nests deeper than 200 levels")
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
    try:
        docs = list(yaml.load_all(text, Loader=_Loader))  # a safe (C) loader
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        problem = getattr(e, "problem", None) or str(e).splitlines()[0]
        at = f" at line {mark.line + 1} column {mark.column + 1}" if mark is not None else ""
        raise InputError(f"malformed YAML{at}: {problem}", where) from None
    except (RecursionError, ValueError, TypeError) as e:
        raise InputError(f"unreadable YAML: {e}", where) from None
    for doc in docs:
        if doc is None:
            continue
        if expanded_size(doc) > MAX_EXPANDED_NODES:
            raise InputError("YAML aliases expand to an enormous document (alias bomb?); refusing it", where)
        yield doc


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
