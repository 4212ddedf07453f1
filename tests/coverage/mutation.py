"""Single-field mutations of a bundle: one field the rules read gets a value of another type.

Shared by the hypothesis sweep in `make test` (a bounded sample) and `bench/bench_mutations.py` (every
field of every example).
"""

from __future__ import annotations

import copy
import json
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from ckpt_doctor.typed import BUNDLE_META, schema_for
from tests.coverage.less_data import read_objects

# values of every JSON type; a mutation takes one whose type differs from the field's
VALUES: tuple[Any, ...] = (True, 7, -1, 1.5, "2", "", [], ["a"], {}, {"x": 1}, [7, {"y": None}])


def type_name(v: Any) -> str:
    if isinstance(v, bool):
        return "bool"
    if isinstance(v, int | float):
        return "number"
    return type(v).__name__


Path_ = tuple[str | int, ...]


def field_paths(value: Any, schema: Any, at: Path_ = ()) -> Iterator[Path_]:
    """Paths of the fields of `value` that `schema` (typed.py's notation) describes."""
    if value is None:
        return
    if at:
        yield at
    if isinstance(schema, list) and isinstance(value, list):
        for i, item in enumerate(value):
            yield from field_paths(item, schema[0], (*at, i))
    elif isinstance(schema, tuple) and isinstance(value, dict):
        for k, item in value.items():
            yield from field_paths(item, schema[1], (*at, k))
    elif isinstance(schema, dict) and isinstance(value, dict):
        for k, sub in schema.items():
            if k in value:
                yield from field_paths(value[k], sub, (*at, k))


def dotted(path: Path_) -> str:
    out = ""
    for p in path:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else str(p))
    return out


def get(obj: Any, path: Path_) -> Any:
    for p in path:
        obj = obj[p]
    return obj


def put(obj: Any, path: Path_, value: Any) -> None:
    for p in path[:-1]:
        obj = obj[p]
    obj[path[-1]] = value


@dataclass(frozen=True)
class Mutation:
    target: int  # index of the object in read_objects(), or -1 for bundle.yaml
    path: Path_
    value: Any

    def describe(self, objs: list[dict[str, Any]]) -> str:
        where = "bundle.yaml" if self.target < 0 else f"{objs[self.target]['kind']} #{self.target}"
        return f"{where} {dotted(self.path)} = {self.value!r}"


def sites(bundle: Path) -> list[tuple[int, Path_]]:
    """Every (object, field path) a mutation may hit in `bundle`."""
    objs = read_objects(bundle)
    out = [(i, p) for i, o in enumerate(objs) for p in field_paths(o, schema_for(str(o.get("kind"))))]
    meta = bundle / "bundle.yaml"
    if meta.exists():
        out += [(-1, p) for p in field_paths(yaml.safe_load(meta.read_text()), BUNDLE_META)]
    return out


def other_values(current: Any) -> list[Any]:
    return [v for v in VALUES if type_name(v) != type_name(current)]


def write_mutated(bundle: Path, m: Mutation, out: Path) -> Path:
    out.mkdir(parents=True)
    objs = copy.deepcopy(read_objects(bundle))
    meta = yaml.safe_load((bundle / "bundle.yaml").read_text()) if (bundle / "bundle.yaml").exists() else None
    if m.target < 0:
        assert meta is not None
        put(meta, m.path, m.value)
    else:
        put(objs[m.target], m.path, m.value)
    (out / "objects.json").write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": objs}))
    if meta is not None:
        (out / "bundle.yaml").write_text(yaml.safe_dump(meta))
    if (bundle / "logs").is_dir():
        shutil.copytree(bundle / "logs", out / "logs")
    return out


def current(bundle: Path, target: int, path: Path_) -> Any:
    if target < 0:
        return get(yaml.safe_load((bundle / "bundle.yaml").read_text()), path)
    return get(read_objects(bundle)[target], path)
