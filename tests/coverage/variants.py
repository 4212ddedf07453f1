"""Metamorphic variants of a bundle: the same incident with another surface (issue 10).

Each variant rewrites how the evidence looks, not what it says: log prefixes and encodings, how the
objects are laid out in files, how the shell script is written. A diagnosis must not notice.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from tests.coverage.less_data import read_objects

Logs = dict[str, bytes]  # path under the bundle -> content
Objs = list[dict[str, Any]]


@dataclass(frozen=True)
class Variant:
    name: str
    logs: Callable[[bytes], bytes] | None = None  # rewrites each log
    objects: Callable[[Objs], Objs] | None = None  # rewrites the objects
    layout: str = "list-json"  # list-json | yaml-stream | nested | kinds


# -- log surfaces --------------------------------------------------------------------------------------
def _lines(data: bytes, fn: Callable[[str, int], str]) -> bytes:
    text = data.decode("utf-8", errors="surrogateescape")
    out = [fn(line, i) for i, line in enumerate(text.split("\n"))]
    return "\n".join(out).encode("utf-8", errors="surrogateescape")


def ansi(data: bytes) -> bytes:
    return _lines(data, lambda ln, i: f"\x1b[32m{ln}\x1b[0m" if ln.strip() and "\r" not in ln else ln)


def crlf(data: bytes) -> bytes:
    return data.replace(b"\r\n", b"\n").replace(b"\n", b"\r\n")


def _stamp(i: int) -> str:
    return f"2026-11-30T08:{(i // 60) % 60:02d}:{i % 60:02d}.{i * 7919 % 10**9:09d}Z"


def kubectl_timestamps(data: bytes) -> bytes:
    return _lines(data, lambda ln, i: f"{_stamp(i)} {ln}" if ln else ln)


def rank_prefix(data: bytes) -> bytes:
    return _lines(data, lambda ln, i: f"[rank0]:{ln}" if ln else ln)


def json_records(data: bytes) -> bytes:
    """A structured logger: every message a JSON record; a tqdm bar (its carriage returns) stays raw."""

    def one(ln: str, i: int) -> str:
        if not ln.strip() or "\r" in ln or "it/s]" in ln or "s/it]" in ln:
            return ln
        return json.dumps({"time": _stamp(i), "level": "INFO", "logger": "train", "message": ln})

    return _lines(data, one)


_TQDM = re.compile(r"(\d+(?:\.\d+)?(?:it/s|s/it))\]")


def tqdm_postfix(data: bytes) -> bytes:
    text = data.decode("utf-8", errors="surrogateescape")
    return _TQDM.sub(r"\1, loss=1.234, v_num=0]", text).encode("utf-8", errors="surrogateescape")


# -- object surfaces -----------------------------------------------------------------------------------
def _containers(obj: Any) -> Iterator[dict[str, Any]]:
    if isinstance(obj, dict):
        for k, v in obj.items():
            if k in ("containers", "initContainers") and isinstance(v, list):
                yield from (c for c in v if isinstance(c, dict))
            else:
                yield from _containers(v)
    elif isinstance(obj, list):
        for v in obj:
            yield from _containers(v)


def _rewrite_scripts(objs: Objs, fn: Callable[[str, dict[str, Any]], str]) -> Objs:
    out = copy.deepcopy(objs)
    for o in out:
        for c in _containers(o):
            for key in ("command", "args"):
                seq = c.get(key)
                if isinstance(seq, list):
                    c[key] = [fn(a, c) if isinstance(a, str) and ("\n" in a or " " in a) else a for a in seq]
    return out


TRAIN = "/opt/train/train.py"


def quoting(objs: Objs) -> Objs:
    """`python /opt/train/train.py` written with quotes: `"python" '/opt/train/train.py'`."""
    return _rewrite_scripts(objs, lambda s, _c: re.sub(r"\bpython (/opt/train/train\.py)", "\"python\" '\\1'", s))


def variable_earlier(objs: Objs) -> Objs:
    """The script directory assigned to a variable at the top and used through it."""

    def fn(s: str, _c: dict[str, Any]) -> str:
        if TRAIN not in s:
            return s
        return "TRAIN_DIR=/opt/train\n" + s.replace(TRAIN, "${TRAIN_DIR}/train.py")

    return _rewrite_scripts(objs, fn)


def working_dir(objs: Objs) -> Objs:
    """workingDir: /opt/train and the script named relative to it."""
    out = copy.deepcopy(objs)
    for o in out:
        for c in _containers(o):
            args = [a for a in (c.get("command") or []) + (c.get("args") or []) if isinstance(a, str)]
            if any(TRAIN in a for a in args):
                c["workingDir"] = "/opt/train"
                for key in ("command", "args"):
                    if isinstance(c.get(key), list):
                        c[key] = [a.replace(TRAIN, "train.py") if isinstance(a, str) else a for a in c[key]]
    return out


def deleted_pods_logs_kept(objs: Objs) -> Objs:
    """The pods of earlier attempts are gone (a JobSet restart deleted them), but their logs were kept."""
    pods = [o for o in objs if o.get("kind") == "Pod"]
    ra = "jobset.sigs.k8s.io/restart-attempt"
    newest = max((int(p["metadata"].get("labels", {}).get(ra, 0)) for p in pods), default=0)
    return [o for o in objs if o.get("kind") != "Pod" or int(o["metadata"].get("labels", {}).get(ra, 0)) == newest]


VARIANTS = [
    Variant("ansi-colours", logs=ansi),
    Variant("crlf", logs=crlf),
    Variant("kubectl-timestamps", logs=kubectl_timestamps),
    Variant("rank-prefix", logs=rank_prefix),
    Variant("json-records", logs=json_records),
    Variant("tqdm-postfix", logs=tqdm_postfix),
    Variant("yaml-stream", layout="yaml-stream"),
    Variant("nested-folders", layout="nested"),
    Variant("file-per-kind", layout="kinds"),
    Variant("shell-quoting", objects=quoting),
    Variant("variable-assigned-earlier", objects=variable_earlier),
    Variant("relative-path-and-workingdir", objects=working_dir),
    Variant("deleted-pods-logs-kept", objects=deleted_pods_logs_kept),
]


def write_variant(bundle: Path, v: Variant, out: Path) -> Path:
    out.mkdir(parents=True)
    objs = read_objects(bundle)
    if v.objects is not None:
        objs = v.objects(objs)
    if v.layout == "list-json":
        (out / "objects.json").write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": objs}))
    elif v.layout == "yaml-stream":
        (out / "all.yaml").write_text(yaml.safe_dump_all(objs, sort_keys=False))
    elif v.layout == "nested":
        for i, o in enumerate(objs):
            d = out / "dump" / str(o.get("kind", "x")).lower()
            d.mkdir(parents=True, exist_ok=True)
            (d / f"{i:03d}-{o['metadata'].get('name', 'x')[:60]}.yaml").write_text(yaml.safe_dump(o, sort_keys=False))
    else:
        by: dict[str, Objs] = {}
        for o in objs:
            by.setdefault(str(o.get("kind")), []).append(o)
        for kind, items in by.items():
            (out / f"{kind.lower()}.json").write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
    if (bundle / "bundle.yaml").exists():
        (out / "bundle.yaml").write_bytes((bundle / "bundle.yaml").read_bytes())
    logs = bundle / "logs"
    if logs.is_dir():
        for f in sorted(logs.rglob("*.log")):
            dest = out / f.relative_to(bundle)
            dest.parent.mkdir(parents=True, exist_ok=True)
            data = f.read_bytes()
            dest.write_bytes(v.logs(data) if v.logs else data)
    return out
