"""Framework configuration as data: YAML, JSON, TOML and `--key value` command lines.

LlamaFactory and torchtune YAMLs, DeepSpeed JSON, accelerate/TOML configs and HF/Megatron-style
command lines all come down to a mapping of keys; the rules ask for a key (`get(doc,
"checkpointer.output_dir")`) and cite its line. Nothing here raises: an unparseable text gives
`data=None` and an `error` saying where.

YAML is read with YAML 1.1 semantics (libyaml through PyYAML's CSafeLoader), which is what
LlamaFactory (`yaml.safe_load`) and torchtune/OmegaConf see: `overwrite_output_dir: yes` is True.
Line numbers come from the same parse (the composed node tree), so they always match the data.
"""

from __future__ import annotations

import json
import re
import shlex
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import yaml

__all__ = ["ConfigDoc", "args_as_config", "framework", "get", "read_config"]

_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_MAX_DEPTH = 100
_MAX_LINE_KEYS = 200_000


@dataclass
class ConfigDoc:
    format: str  # yaml | json | toml | args
    data: Any  # the parsed data (a dict usually); None when unparseable
    error: str | None
    lines: dict[str, int] = field(default_factory=dict)  # dotted key -> 1-based line (yaml, json, toml)
    positional: list[str] = field(default_factory=list)  # args: the words that are not options
    index: dict[str, int] = field(default_factory=dict)  # args: key -> 0-based position in argv
    documents: int = 1  # yaml: how many documents the stream had (data is the first non-empty one)

    def line_of(self, dotted: str) -> int | None:
        """The line of `dotted` or of its nearest parent that has one."""
        key = _normal(dotted)
        while key:
            if key in self.lines:
                return self.lines[key]
            key = key.rsplit(".", 1)[0] if "." in key else ""
        return None


def read_config(text: str, filename: str = "") -> ConfigDoc:
    """Parse a configuration file; the format comes from the extension, else from the content."""
    try:
        if isinstance(text, bytes):
            text = text.decode("utf-8", "replace")
        if not isinstance(text, str):
            text = str(text)
        text = text.lstrip("\ufeff")
        fmt = _format_of(text, filename)
        if fmt == "json":
            return _read_json(text)
        if fmt == "toml":
            return _read_toml(text)
        if fmt == "args":
            flat = re.sub(r"\\\r?\n", " ", text)  # continuation lines
            try:
                argv = shlex.split(flat, comments=True)
            except ValueError:
                argv = flat.split()
            return args_as_config(argv)
        return _read_yaml(text)
    except Exception as e:  # never raise on user input
        return ConfigDoc("yaml", None, f"unreadable ({type(e).__name__}: {e})")


def _format_of(text: str, filename: str) -> str:
    name = (filename or "").lower()
    for ext, fmt in ((".json", "json"), (".toml", "toml"), (".yaml", "yaml"), (".yml", "yaml")):
        if name.endswith(ext):
            return fmt
    if name.endswith((".args", ".argv")):
        return "args"
    s = text.lstrip()
    if s.startswith("{"):
        return "json"
    if s.startswith("--") or re.match(r"-[A-Za-z]\s", s):
        return "args"
    if s.startswith("["):
        first = s.split("\n", 1)[0].strip()
        if re.fullmatch(r"\[\[?[\w.\-\" ]+\]\]?", first):
            return "toml"
        return "json"
    head = "\n".join(s.splitlines()[:50])
    toml_like = re.search(r"(?m)^\s*[\w\-\".]+\s*=\s*\S", head)
    yaml_like = re.search(r"(?m)^\s*[\w\-\".]+\s*:(\s|$)", head)
    if toml_like and not yaml_like:
        return "toml"
    return "yaml"


# ---------------------------------------------------------------------------------------------
# YAML


def _read_yaml(text: str) -> ConfigDoc:
    loader = _Loader(text)
    try:
        docs = 0
        data: Any = None
        node: Any = None
        while loader.check_node():
            n = loader.get_node()
            docs += 1
            if node is None and n is not None and not (isinstance(n, yaml.ScalarNode) and n.value == ""):
                node = n
        if node is None:
            return ConfigDoc("yaml", None, None, documents=docs)
        lines: dict[str, int] = {}
        _yaml_lines(node, "", lines, 0, set())
        data = loader.construct_document(node)
        return ConfigDoc("yaml", data, None, lines, documents=max(docs, 1))
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        where = f" at line {mark.line + 1} column {mark.column + 1}" if mark is not None else ""
        return ConfigDoc("yaml", None, f"malformed YAML{where}: {e.problem or e.context}")
    except (yaml.YAMLError, RecursionError, ValueError, TypeError) as e:
        return ConfigDoc("yaml", None, f"malformed YAML: {type(e).__name__}: {e}")
    finally:
        try:
            loader.dispose()
        except Exception:
            pass


def _yaml_lines(node: Any, prefix: str, out: dict[str, int], depth: int, seen: set[int]) -> None:
    """Record the line of every key. Each node is visited once: an aliased node is reported where
    it is first met, so an alias bomb is never expanded."""
    if depth > _MAX_DEPTH or len(out) > _MAX_LINE_KEYS or id(node) in seen:
        return
    if isinstance(node, yaml.MappingNode):
        seen.add(id(node))
        merged: list[Any] = []
        for k, v in node.value:
            if isinstance(k, yaml.ScalarNode) and k.tag == "tag:yaml.org,2002:merge":
                merged.append(v)
                continue
            key = str(k.value) if isinstance(k, yaml.ScalarNode) else "?"
            path = f"{prefix}.{key}" if prefix else key
            out.setdefault(path, k.start_mark.line + 1)
            _yaml_lines(v, path, out, depth + 1, seen)
        for m in merged:  # `<<: *base`: the merged keys (one level), where the anchor defines them
            for sub in m.value if isinstance(m, yaml.SequenceNode) else [m]:
                if isinstance(sub, yaml.MappingNode):
                    for k, _v in sub.value[:10_000]:
                        if isinstance(k, yaml.ScalarNode):
                            path = f"{prefix}.{k.value}" if prefix else str(k.value)
                            out.setdefault(path, k.start_mark.line + 1)
    elif isinstance(node, yaml.SequenceNode):
        seen.add(id(node))
        for i, v in enumerate(node.value):
            path = f"{prefix}.{i}" if prefix else str(i)
            out.setdefault(path, v.start_mark.line + 1)
            _yaml_lines(v, path, out, depth + 1, seen)


# ---------------------------------------------------------------------------------------------
# JSON


def _read_json(text: str) -> ConfigDoc:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        # JSON with comments or trailing commas is common in DeepSpeed configs: YAML may still read it
        y = _read_yaml(text) if "//" not in text else None
        if y is not None and y.data is not None and y.error is None and isinstance(y.data, dict | list):
            return ConfigDoc("json", y.data, None, y.lines)
        return ConfigDoc("json", None, f"malformed JSON at line {e.lineno} column {e.colno}: {e.msg}")
    except (RecursionError, ValueError) as e:
        return ConfigDoc("json", None, f"malformed JSON: {type(e).__name__}")
    lines: dict[str, int] = {}
    if len(text) < 2_000_000:
        try:
            _json_lines(text, lines)
        except Exception:
            lines = {}
    return ConfigDoc("json", data, None, lines)


_JSON_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|[{}\[\]:,]|\n')


def _json_lines(text: str, out: dict[str, int]) -> None:
    """Key lines of a JSON text, from a single scan of its tokens."""
    stack: list[list[Any]] = []  # [kind, path, key or index]
    line = 1
    pending: str | None = None  # the last string seen, a key when ':' follows
    for m in _JSON_TOKEN.finditer(text):
        tok = m.group(0)
        if tok == "\n":
            line += 1
            continue
        if tok.startswith('"'):
            line += tok.count("\n")
            pending = tok
            continue
        if tok == ":" and stack and stack[-1][0] == "{" and pending is not None:
            try:
                key = json.loads(pending)
            except ValueError:
                key = pending.strip('"')
            parent = stack[-1][1]
            path = f"{parent}.{key}" if parent else str(key)
            stack[-1][2] = path
            out.setdefault(path, line)
        elif tok in "{[":
            if stack and stack[-1][0] == "{":
                path = stack[-1][2] or stack[-1][1]
            elif stack:
                idx = stack[-1][2]
                path = f"{stack[-1][1]}.{idx}" if stack[-1][1] else str(idx)
                out.setdefault(path, line)
            else:
                path = ""
            stack.append([tok, path, 0 if tok == "[" else None])
            if len(stack) > _MAX_DEPTH:
                return
        elif tok in "}]":
            if stack:
                stack.pop()
        elif tok == "," and stack and stack[-1][0] == "[":
            stack[-1][2] += 1
        pending = None if tok != ":" else pending
        if len(out) > _MAX_LINE_KEYS:
            return


# ---------------------------------------------------------------------------------------------
# TOML


def _read_toml(text: str) -> ConfigDoc:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        return ConfigDoc("toml", None, f"malformed TOML: {e}")
    except (RecursionError, ValueError, TypeError) as e:
        return ConfigDoc("toml", None, f"malformed TOML: {type(e).__name__}")
    lines: dict[str, int] = {}
    table = ""
    arrays: dict[str, int] = {}
    for n, raw in enumerate(text.splitlines()[:100_000], start=1):
        s = raw.strip()
        if not s or s.startswith("#"):
            continue
        m = re.fullmatch(r"\[\[\s*([^\]]+?)\s*\]\]\s*(?:#.*)?", s)
        if m:
            name = _toml_key(m.group(1))
            idx = arrays.get(name, -1) + 1
            arrays[name] = idx
            table = f"{name}.{idx}"
            lines.setdefault(name, n)
            lines.setdefault(table, n)
            continue
        m = re.fullmatch(r"\[\s*([^\]]+?)\s*\]\s*(?:#.*)?", s)
        if m:
            table = _toml_key(m.group(1))
            lines.setdefault(table, n)
            continue
        m = re.match(r"((?:[\w\-]+|\"[^\"]*\"|'[^']*')(?:\s*\.\s*(?:[\w\-]+|\"[^\"]*\"|'[^']*'))*)\s*=", s)
        if m:
            key = _toml_key(m.group(1))
            lines.setdefault(f"{table}.{key}" if table else key, n)
    return ConfigDoc("toml", data, None, lines)


def _toml_key(k: str) -> str:
    parts = re.findall(r"\"([^\"]*)\"|'([^']*)'|([\w\-]+)", k)
    return ".".join(a or b or c for a, b, c in parts)


# ---------------------------------------------------------------------------------------------
# Command lines

_DOTLIST = re.compile(r"^([A-Za-z_][\w\-]*(?:\.[\w\-]+)*)=(.*)$", re.S)
_NUMBER = re.compile(r"^-?(?:\d+|\d*\.\d+|\d+\.\d*)(?:[eE][-+]?\d+)?$")


def args_as_config(argv: Sequence[str]) -> ConfigDoc:
    """HF / LlamaFactory / Megatron style arguments as a mapping.

    `--key value` and `--key=value` give `key: value`; a `--flag` with no value is True; the
    strings true/false (any case) become booleans and plain integers/floats become numbers
    (`"001"` stays a string). `key=value` words (LlamaFactory, torchtune and OmegaConf
    overrides) are read as YAML scalars, so `resume_from_checkpoint=null` is None. Keys are kept
    as written (`no-load-optim`, `output_dir`, `checkpointer.output_dir`); `get` also tries the
    other spelling of `-`/`_` for args. Other words are `positional`; after `--` everything is.
    """
    try:
        return _args(list(argv) if argv is not None else [])
    except Exception as e:
        return ConfigDoc("args", None, f"unreadable arguments ({type(e).__name__})")


def _args(argv: list[str]) -> ConfigDoc:
    data: dict[str, Any] = {}
    index: dict[str, int] = {}
    positional: list[str] = []
    i = 0
    rest = False
    while i < len(argv):
        tok = str(argv[i])
        if rest:
            positional.append(tok)
            i += 1
            continue
        if tok == "--":
            rest = True
            i += 1
            continue
        if tok.startswith("-") and len(tok) > 1 and not _NUMBER.match(tok):
            body = tok.lstrip("-")
            if not body:
                positional.append(tok)
                i += 1
                continue
            if "=" in body:
                key, raw = body.split("=", 1)
                data[key] = _arg_value(raw)
                index[key] = i
                i += 1
                continue
            nxt = str(argv[i + 1]) if i + 1 < len(argv) else None
            if nxt is not None and (not nxt.startswith("-") or _NUMBER.match(nxt) or nxt == "-"):
                data[body] = _arg_value(nxt)
                index[body] = i
                i += 2
            else:
                data[body] = True
                index[body] = i
                i += 1
            continue
        m = _DOTLIST.match(tok)
        if m:
            data[m.group(1)] = _dotlist_value(m.group(2))
            index[m.group(1)] = i
        else:
            positional.append(tok)
        i += 1
    return ConfigDoc("args", data, None, {}, positional, index)


def _arg_value(raw: str) -> Any:
    low = raw.lower()
    if low == "true":
        return True
    if low == "false":
        return False
    if _NUMBER.match(raw):
        try:
            if re.fullmatch(r"-?\d+", raw):
                v = int(raw)
                return v if str(v) == raw else raw
            f = float(raw)
            return f
        except (ValueError, OverflowError):
            return raw
    return raw


def _dotlist_value(raw: str) -> Any:
    if raw == "":
        return ""
    if len(raw) > 10_000:
        return raw
    try:
        v = yaml.load(raw, Loader=_Loader)  # a safe loader
    except yaml.YAMLError:
        return raw
    if isinstance(v, str | int | float | bool | list | dict) or v is None:
        if isinstance(v, int) and not isinstance(v, bool) and str(v) != raw.strip():
            return raw  # 001, 0x10, 1_000: keep what was written
        return v
    return raw


# ---------------------------------------------------------------------------------------------
# Lookup


def _normal(dotted: str) -> str:
    return re.sub(r"\[(\d+)\]", r".\1", dotted or "").strip(".")


def get(doc: ConfigDoc, dotted: str) -> tuple[bool, Any]:
    """(present, value) of a dotted key (`a.b.0.c`, or `a.b[0].c`). Keys are case-sensitive; a key
    that itself contains dots (`checkpointer.output_dir` as a command-line override) is found too."""
    try:
        if doc is None or doc.data is None:
            return False, None
        path = _normal(dotted)
        if not path:
            return True, doc.data
        parts = path.split(".")
        found = _get(doc.data, parts, 0)
        if found[0] or doc.format != "args":
            return found
        for alt in {path.replace("-", "_"), path.replace("_", "-")} - {path}:
            found = _get(doc.data, alt.split("."), 0)
            if found[0]:
                return found
        return False, None
    except Exception:
        return False, None


def _get(cur: Any, parts: list[str], depth: int) -> tuple[bool, Any]:
    if not parts:
        return True, cur
    if depth > _MAX_DEPTH:
        return False, None
    if isinstance(cur, dict):
        # the longest literal key first: {"checkpointer.output_dir": …} before {"checkpointer": {…}}
        for n in range(len(parts), 0, -1):
            key = ".".join(parts[:n])
            if key in cur:
                got = _get(cur[key], parts[n:], depth + 1)
                if got[0]:
                    return got
            else:
                for k in cur:
                    if not isinstance(k, str) and str(k) == key:
                        got = _get(cur[k], parts[n:], depth + 1)
                        if got[0]:
                            return got
        return False, None
    if isinstance(cur, list | tuple):
        head = parts[0]
        if re.fullmatch(r"-?\d+", head):
            i = int(head)
            if -len(cur) <= i < len(cur):
                return _get(cur[i], parts[1:], depth + 1)
        return False, None
    return False, None


def framework(doc: ConfigDoc) -> str | None:
    """Which framework a config belongs to, from its keys (each framework module's `Config.identify`,
    tried in rank order: LlamaFactory, torchtune, DeepSpeed, accelerate, Lightning, Megatron, HF
    Trainer), or None."""
    from ckpt_doctor import frameworks

    d = doc.data if doc is not None else None
    if not isinstance(d, dict):
        return None
    keys = {str(k) for k in d}
    for name, identify in frameworks.config_identifiers():
        if identify(d, keys):
            return name
    return None
