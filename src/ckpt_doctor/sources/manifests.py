"""Reading manifests (files, folders, stdin) into a Snapshot whose objects know their file and line.

`lint` reads what a user is about to `kubectl apply`: any mix of TrainJob, (Cluster)TrainingRuntime,
PVC, StorageClass and ConfigMap objects, one per file or several per multi-document file, in
Kustomize-style folders. Each object keeps its round-trip node (ruamel.yaml), so a finding can
name the line of the very field it is about, and `--fix` can edit the file in place.

Bad input is never fatal here: a file that is not YAML, YAML that is not Kubernetes, a Helm
template or a Kustomize patch is skipped with a note; placeholders such as `<your-namespace>`
are recorded so that findings resting on them are not reported as errors. Only a path that
cannot be read at all raises InputError (exit 3).
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.error import YAMLError
from ruamel.yaml.scalarbool import ScalarBoolean
from ruamel.yaml.scalarfloat import ScalarFloat
from ruamel.yaml.scalarint import ScalarInt
from ruamel.yaml.scalarstring import FoldedScalarString, LiteralScalarString

from ckpt_doctor.errors import InputError
from ckpt_doctor.snapshot import Gap, Obj, Origin, Snapshot
from ckpt_doctor.sources.render import (
    KUSTOMIZATION_FILES,
    Patch,
    Rendered,
    RenderFailed,
    find_tool,
    helm_template,
    is_chart,
    kustomization_of,
    kustomize,
)
from ckpt_doctor.yamlio import MAX_EXPANDED_NODES, expanded_size, flatten_objects

SUFFIXES = (".yaml", ".yml", ".json")
MAX_FILE = 64 * 1024 * 1024
STDIN = "-"
STDIN_DISPLAY = "<stdin>"
# `<your-namespace>`, `<PVC_NAME>`, `<bucket name>`: a value the user is meant to fill in.
PLACEHOLDER_RX = re.compile(r"<[A-Za-z][A-Za-z0-9_.-]*(?: [A-Za-z0-9_.-]+){0,3}>")
TEMPLATE_RX = re.compile(r"\{\{-?.*?-?\}\}")


@dataclass(frozen=True)
class Note:
    """Something about an input file the user should know: why it was skipped, a placeholder…"""

    file: str
    message: str
    line: int | None = None
    # skipped | invalid (not YAML) | template | placeholder | duplicate | kustomize | assumed | version | renderer |
    # rendered
    kind: str = "skipped"

    def where(self) -> str:
        return f"{self.file}:{self.line}" if self.line else self.file

    def to_gap(self) -> Gap:
        labels = {"placeholder": "placeholder", "assumed": "assumed", "version": "trainer version"}
        label = labels.get(self.kind, "file")
        return Gap(f"{label} {self.where()}", self.message)


@dataclass(frozen=True)
class Placeholder:
    file: str
    line: int
    text: str  # the placeholder itself, e.g. `<your-namespace>`
    object: str  # Kind/namespace/name
    path: str  # field path inside the object


@dataclass
class ManifestFile:
    display: str  # the path as the user gave it (what findings cite)
    path: Path | None  # None for stdin
    text: str
    objects: list[Obj] = field(default_factory=list)
    utf8: bool = True  # False when bytes had to be replaced to read it (then --fix must not rewrite it)
    rendered_by: str | None = None  # "kubectl kustomize DIR" / "helm template DIR": its objects are as rendered


@dataclass
class ManifestSet:
    """The manifests read for one `lint` run, with their positions."""

    snapshot: Snapshot
    paths: list[str] = field(default_factory=list)  # what the user named
    files: list[ManifestFile] = field(default_factory=list)
    notes: list[Note] = field(default_factory=list)
    placeholders: list[Placeholder] = field(default_factory=list)
    overrides: dict[Path, str] = field(default_factory=dict)
    nodes: dict[int, Any] = field(default_factory=dict)  # id(Obj) -> its round-trip node
    file_of_obj: dict[int, ManifestFile] = field(default_factory=dict)
    patches: dict[int, list[tuple[str, Patch]]] = field(default_factory=dict)  # id(Obj) -> (display, patch)
    patch_texts: dict[str, str] = field(default_factory=dict)  # display -> text of a patch file cited

    def node_of(self, obj: Obj) -> Any:
        return self.nodes.get(id(obj))

    def file_of(self, obj: Obj) -> ManifestFile | None:
        return self.file_of_obj.get(id(obj))

    def find(self, ref: str) -> Obj | None:
        """The object cited as `Kind/namespace/name` (or `Kind/name`)."""
        for o in self.snapshot.objects:
            if o.ref() == ref:
                return o
        kind, _, rest = ref.partition("/")
        name = rest.rpartition("/")[2]
        hits = [o for o in self.snapshot.of_kind(kind) if o.name == name]
        return hits[0] if len(hits) == 1 else None

    def find_subject(self, subject: dict[str, Any] | None) -> Obj | None:
        if not subject:
            return None
        for o in self.snapshot.of_kind(str(subject.get("kind") or "")):
            if o.name == subject.get("name") and o.namespace == subject.get("namespace"):
                return o
        return None

    def rendered_by(self, display: str) -> str | None:
        """How a cited file's objects were rendered (a source or a patch of a rendered folder), if they were."""
        for mf in self.files:
            if mf.display == display and mf.rendered_by:
                return mf.rendered_by
        if display in self.patch_texts:
            return next((mf.rendered_by for mf in self.files if mf.rendered_by), "a renderer")
        return None

    def patch_line(self, obj: Obj, path: str) -> tuple[str, int | None] | None:
        """The patch file (and line) that set or removed field `path` of a rendered object, if one did."""
        for display, patch in self.patches.get(id(obj), []):
            for op_path, line in patch.ops:
                if _related(op_path, path):
                    return display, line
            if patch.node is not None:
                res = resolve_path(patch.node, path)
                if res.complete and res.depth > 2:
                    return display, res.line
        return None

    def note(self, file: str, message: str, line: int | None = None, kind: str = "skipped") -> None:
        n = Note(file, message, line, kind)
        if n not in self.notes:
            self.notes.append(n)


def _related(a: str, b: str) -> bool:
    """One field path is the other, or inside it (`x.labels` and `x.labels[k]`)."""
    short, long = sorted((a, b), key=len)
    return a == b or (len(long) > len(short) and long.startswith(short) and long[len(short)] in ".[")


def rt_yaml() -> YAML:
    y = YAML(typ="rt")
    y.allow_duplicate_keys = True
    y.preserve_quotes = True
    return y


def plain(node: Any) -> Any:
    """A round-trip node as plain Python data (dict, list, str, int, float, bool, None)."""
    if isinstance(node, dict):
        return {(str(k) if isinstance(k, str) else k): plain(v) for k, v in node.items()}
    if isinstance(node, list):
        return [plain(v) for v in node]
    if isinstance(node, ScalarBoolean):
        return bool(node)
    if isinstance(node, bool):
        return node
    if isinstance(node, ScalarInt):
        return int(node)
    if isinstance(node, ScalarFloat):
        return float(node)
    if isinstance(node, str):
        return str(node)
    if hasattr(node, "value") and node.__class__.__name__ == "TaggedScalar":
        return str(node.value)
    return node


def is_block_scalar(value: Any) -> bool:
    return isinstance(value, LiteralScalarString | FoldedScalarString)


def key_line(parent: Any, key: Any) -> int | None:
    """1-based line of `key` in a round-trip mapping, or of item `key` in a sequence."""
    try:
        if isinstance(parent, CommentedMap):
            return int(parent.lc.key(key)[0]) + 1
        if isinstance(parent, CommentedSeq):
            return int(parent.lc.item(key)[0]) + 1
    except (KeyError, IndexError, TypeError, AttributeError):
        return None
    return None


def value_line(parent: Any, key: Any) -> int | None:
    """1-based line where the value of `key` (or item `key`) starts (`|` for block scalars)."""
    try:
        if isinstance(parent, CommentedMap):
            return int(parent.lc.value(key)[0]) + 1
        if isinstance(parent, CommentedSeq):
            return int(parent.lc.item(key)[0]) + 1
    except (KeyError, IndexError, TypeError, AttributeError):
        return None
    return None


def node_line(node: Any) -> int | None:
    try:
        return int(node.lc.line) + 1
    except AttributeError:
        return None


# -- reading ------------------------------------------------------------------------------------
def load_manifests(
    paths: Sequence[str | Path], stdin_text: str | None = None, overrides: dict[Path, str] | None = None
) -> ManifestSet:
    """Read files, folders (recursively) and `-` (stdin) into a ManifestSet.

    `overrides` maps resolved file paths to text to use instead of the file's (what --fix would
    write). Raises InputError only for a path that does not exist or cannot be read.
    """
    mset = ManifestSet(Snapshot(source="manifests", location=", ".join(str(p) for p in paths)), [str(p) for p in paths])
    mset.overrides = {k.resolve(): v for k, v in (overrides or {}).items()}
    seen: set[Path] = set()
    for arg in paths:
        if str(arg) == STDIN:
            text = stdin_text if stdin_text is not None else sys.stdin.read()
            _read_text(mset, ManifestFile(STDIN_DISPLAY, None, text))
            continue
        p = Path(arg)
        if not p.exists():
            raise InputError("no such file or directory", str(arg))
        if p.is_dir():
            if _render_folder(mset, p, str(arg)):
                continue
            for f, display in _walk(mset, p, str(arg)):
                if f.resolve() not in seen:
                    seen.add(f.resolve())
                    _read_file(mset, f, display)
        else:
            if p.resolve() not in seen:
                seen.add(p.resolve())
                _read_file(mset, p, str(arg), explicit=True)
    return mset


def _render_folder(mset: ManifestSet, folder: Path, display: str) -> bool:
    """Lint a Kustomize folder or a Helm chart as it will be applied, when its renderer is on PATH.

    False when the folder is neither, or cannot be rendered (then it is read as written, and a
    note says why)."""
    kfile = kustomization_of(folder)
    chart = kfile is None and is_chart(folder)
    if kfile is None and not chart:
        return False
    tool = "kubectl" if kfile is not None else "helm"
    how = f"kubectl kustomize {display}" if kfile is not None else f"helm template {display}"
    exe = find_tool(tool)
    if exe is None:
        what = (
            "the Kustomize folder is linted as written: its patches, name prefixes and generators are not applied"
            if kfile is not None
            else "the Helm chart is not rendered, and its templates are skipped"
        )
        mset.note(
            display,
            f"renderer missing: {tool} is not on PATH, so {what} "
            f"(install {tool}, or pipe `{how} | ckpt-doctor lint -`)",
            kind="renderer",
        )
        return False
    try:
        rendered = kustomize(exe, folder) if kfile is not None else helm_template(exe, folder)
    except RenderFailed as e:
        mset.note(display, f"{how} failed ({e}); linted as written instead", kind="renderer")
        return False
    root = folder.resolve()
    files: dict[Path, ManifestFile] = {}
    for r in rendered:
        mf, node = _source_of(mset, r, root, display, files, how)
        obj = _add_object(mset, mf, r.node, node, r.template_line)
        if obj is not None and r.patches:
            mset.patches[id(obj)] = [(_shown(p.file, root, display), p) for p in r.patches]
            for p in r.patches:
                mset.patch_texts.setdefault(_shown(p.file, root, display), p.text)
    mset.files += [mf for mf in files.values() if mf.objects]
    count = sum(len(mf.objects) for mf in files.values())
    mset.note(display, f"rendered with {how}: {count} object(s), cited in the files they come from", kind="rendered")
    return True


def _shown(f: Path, root: Path, display: str) -> str:
    try:
        return _display(display, root, f)
    except ValueError:
        return os.path.normpath(os.path.join(display, os.path.relpath(f, root)))


def _source_of(
    mset: ManifestSet, r: Rendered, root: Path, display: str, files: dict[Path, ManifestFile], how: str
) -> tuple[ManifestFile, Any]:
    """The ManifestFile a rendered object is cited in, and the document in it that declared the object."""
    src = r.source
    key = src if src is not None else root
    mf = files.get(key)
    if mf is None:
        text = ""
        if src is not None:
            try:
                text = src.read_text(encoding="utf-8", errors="replace")
            except OSError:
                text = ""
        mf = ManifestFile(_shown(src, root, display) if src is not None else display, src, text, rendered_by=how)
        files[key] = mf
    if src is None or src.suffix.lower() not in SUFFIXES or not mf.text or TEMPLATE_RX.search(mf.text):
        return mf, None
    try:
        docs = [d for d in rt_yaml().load_all(mf.text) if isinstance(d, dict)]
    except (YAMLError, RecursionError, ValueError, TypeError):
        return mf, None
    kind = str(r.node.get("kind") or "")
    name = str((r.node.get("metadata") or {}).get("name") or "")
    same = [d for node in docs for d in flatten_objects(node) if isinstance(d, dict) and d.get("kind") == kind]
    if len(same) == 1:
        return mf, same[0]
    named = [d for d in same if str((d.get("metadata") or {}).get("name") or "") in name]
    return mf, max(named, key=lambda d: len(str((d.get("metadata") or {}).get("name") or "")), default=None)


def _display(root_display: str, root: Path, f: Path) -> str:
    rel = f.relative_to(root).as_posix()
    if root_display in (".", "./"):
        return rel
    return f"{root_display.rstrip('/')}/{rel}"


def _walk(mset: ManifestSet, root: Path, root_display: str) -> Iterator[tuple[Path, str]]:
    """Manifest files under `root`, following Kustomize `resources` that point outside it."""
    try:
        files = sorted(
            f
            for f in root.rglob("*")
            if f.is_file() and not any(part.startswith(".") for part in f.relative_to(root).parts)
        )
    except OSError as e:
        raise InputError(f"unreadable folder: {e.strerror}", root_display) from None
    patches: set[Path] = set()
    extra: list[tuple[Path, str]] = []
    for f in files:
        if f.name in KUSTOMIZATION_FILES:
            p, ex = _kustomization(mset, f, _display(root_display, root, f), root)
            patches |= p
            extra += ex
    for f in files:
        if f.suffix.lower() not in SUFFIXES or f.name in KUSTOMIZATION_FILES:
            continue
        display = _display(root_display, root, f)
        if f.resolve() in patches:
            mset.note(
                display,
                "a Kustomize patch listed in kustomization.yaml: not linted on its own "
                "(lint the rendered result: kubectl kustomize DIR | ckpt-doctor lint -)",
                kind="kustomize",
            )
            continue
        yield f, display
    for f, display in extra:
        if f.is_dir():
            yield from _walk(mset, f, display)
        elif f.suffix.lower() in SUFFIXES:
            yield f, display


def _kustomization(mset: ManifestSet, f: Path, display: str, root: Path) -> tuple[set[Path], list[tuple[Path, str]]]:
    patches: set[Path] = set()
    extra: list[tuple[Path, str]] = []
    try:
        doc = rt_yaml().load(f.read_text(encoding="utf-8", errors="replace"))
    except (YAMLError, OSError, ValueError):
        mset.note(display, "unreadable kustomization; its patches and resources are not followed", kind="kustomize")
        return patches, extra
    if not isinstance(doc, dict):
        return patches, extra
    base = f.parent
    for key in ("patchesStrategicMerge", "patches", "patchesJson6902"):
        for item in doc.get(key) or []:
            rel = item.get("path") if isinstance(item, dict) else item
            if isinstance(rel, str) and "\n" not in rel:
                patches.add((base / rel).resolve())
    for rel in list(doc.get("resources") or []) + list(doc.get("bases") or []) + list(doc.get("components") or []):
        if not isinstance(rel, str) or "://" in rel or rel.startswith("github.com/"):
            continue
        target = (base / rel).resolve()
        try:
            target.relative_to(root.resolve())
            continue  # inside the folder being walked: read anyway
        except ValueError:
            pass
        if target.exists():
            extra.append((target, str(Path(display).parent / rel)))
        else:
            mset.note(display, f"Kustomize resource {rel!r} does not exist", kind="kustomize")
    generated = bool(doc.get("configMapGenerator") or doc.get("secretGenerator"))
    mset.note(
        display,
        "Kustomize folder: its files are linted as written; patches, name prefixes"
        + (" and generators" if generated else "")
        + " are not applied (for the rendered result: kubectl kustomize DIR | ckpt-doctor lint -)",
        kind="kustomize",
    )
    return patches, extra


def _read_file(mset: ManifestSet, path: Path, display: str, explicit: bool = False) -> None:
    override = mset.overrides.get(path.resolve())
    if override is not None:
        _read_text(mset, ManifestFile(display, path, override))
        return
    try:
        size = path.stat().st_size
        if size > MAX_FILE:
            mset.note(display, "larger than 64 MiB; not a manifest, skipped")
            return
        data = path.read_bytes()
    except OSError as e:
        raise InputError(f"unreadable: {e.strerror}", display) from None
    if b"\x00" in data[:8192]:
        mset.note(display, "a binary file, not YAML; skipped")
        return
    if explicit and path.name in KUSTOMIZATION_FILES:
        mset.note(display, "a kustomization file: lint its folder instead", kind="kustomize")
        return
    try:
        mf = ManifestFile(display, path, data.decode("utf-8"))
    except UnicodeDecodeError:
        mf = ManifestFile(display, path, data.decode("utf-8", errors="replace"), utf8=False)
    _read_text(mset, mf)


def _template_line(text: str) -> int | None:
    for i, line in enumerate(text.splitlines(), 1):
        if line.lstrip().startswith("#"):
            continue
        if TEMPLATE_RX.search(line):
            return i
    return None


def _read_text(mset: ManifestSet, mf: ManifestFile) -> None:
    tline = _template_line(mf.text)
    if tline is not None:
        mset.note(
            mf.display,
            "a Helm/Go template (`{{ … }}`), not a manifest: render it first "
            "(helm template … | ckpt-doctor lint -); skipped",
            tline,
            kind="template",
        )
        return
    try:
        docs = list(rt_yaml().load_all(mf.text))
    except YAMLError as e:
        mark = getattr(e, "problem_mark", None) or getattr(e, "context_mark", None)
        problem = getattr(e, "problem", None) or str(e).splitlines()[0]
        mset.note(mf.display, f"not valid YAML ({problem}); skipped", mark.line + 1 if mark is not None else None,
                  kind="invalid")
        return
    except (RecursionError, ValueError, TypeError) as e:
        mset.note(mf.display, f"unreadable YAML ({e}); skipped", kind="invalid")
        return
    objects: list[tuple[Any, Any]] = []
    others = 0
    for doc in docs:
        if doc is None:
            continue
        try:
            too_big = expanded_size(doc) > MAX_EXPANDED_NODES
        except InputError:
            too_big = True
        if too_big:
            mset.note(mf.display, "YAML aliases expand to an enormous document (alias bomb?); skipped", node_line(doc))
            continue
        found = list(flatten_objects(doc))
        if not found:
            others += 1
        objects += found
    if not objects:
        what = "no Kubernetes object (apiVersion and kind) in this file" if others or docs else "an empty file"
        mset.note(mf.display, f"{what}; skipped")
        return
    if others:
        mset.note(mf.display, f"{others} document(s) that are not Kubernetes objects; skipped")
    mset.files.append(mf)
    for node in objects:
        _add_object(mset, mf, node)


def _add_object(
    mset: ManifestSet, mf: ManifestFile, node: Any, source: Any = "same", line: int | None = None
) -> Obj | None:
    """Add the object of round-trip `node`; `source` is the node in mf whose lines it is cited at
    (a rendered object: the document that declared it, or None when there is none to point into)."""
    raw = plain(node)
    src = node if source == "same" else source
    obj = Obj(raw, Origin(mf.display, node_line(src) if src is not None else line))
    if obj.kind == "Kustomization" or obj.api_version.startswith("kustomize.config.k8s.io"):
        mset.note(mf.display, "a Kustomize file, not a cluster object; skipped", obj.origin.line, kind="kustomize")
        return None
    if obj.kind == "Bundle" and obj.api_version == "ckpt-doctor/v1":
        # a bundle's own metadata (bundle.yaml, contracts.md §2): not an object to lint, but it says which Trainer
        # version the cluster ran, as it does for `diagnose --bundle` (the first bundle.yaml read wins)
        cluster = raw.get("cluster")
        if isinstance(cluster, dict) and cluster.get("trainerVersion") and "cluster" not in mset.snapshot.meta:
            mset.snapshot.meta["cluster"] = {"trainerVersion": str(cluster["trainerVersion"])}
        return None
    if not obj.name and not obj.meta.get("generateName"):
        mset.note(mf.display, f"{obj.kind} without metadata.name; skipped", obj.origin.line)
        return None
    dup = next(
        (o for o in mset.snapshot.of_kind(obj.kind) if o.name == obj.name and o.namespace == obj.namespace), None
    )
    if dup is not None:
        first = f"{dup.origin.file}:{dup.origin.line}" if dup.origin else dup.ref()
        mset.note(mf.display, f"{obj.ref()} is defined twice; using the first ({first})", obj.origin.line, "duplicate")
        return None
    mset.snapshot.add(obj)
    if src is not None:
        mset.nodes[id(obj)] = src
    mset.file_of_obj[id(obj)] = mf
    mf.objects.append(obj)
    for line, text, path in _placeholders(src if src is not None else {}):
        mset.placeholders.append(Placeholder(mf.display, line, text, obj.ref(), path))
        mset.note(
            mf.display,
            f"placeholder {text} in {obj.ref()} {path}: fill it in before applying; "
            "findings that rest on it are not evaluated",
            line,
            kind="placeholder",
        )
    return obj


def _placeholders(node: Any, path: str = "") -> Iterator[tuple[int, str, str]]:
    if isinstance(node, CommentedMap):
        for k, v in node.items():
            sub = f"{path}.{k}" if path else str(k)
            if isinstance(v, str):
                yield from _scalar_placeholders(v, value_line(node, k), sub)
            else:
                yield from _placeholders(v, sub)
    elif isinstance(node, CommentedSeq):
        for i, v in enumerate(node):
            sub = f"{path}[{i}]"
            if isinstance(v, str):
                yield from _scalar_placeholders(v, value_line(node, i), sub)
            else:
                yield from _placeholders(v, sub)


def _scalar_placeholders(value: str, line: int | None, path: str) -> Iterator[tuple[int, str, str]]:
    for m in PLACEHOLDER_RX.finditer(value):
        offset = value.count("\n", 0, m.start()) + (1 if is_block_scalar(value) else 0)
        yield (line or 0) + offset, m.group(0), path


# -- field paths → lines ------------------------------------------------------------------------
_TOKEN = re.compile(r"\[([^\]]*)\]|(\.\.\.)|([^.\[\]]+)")


@dataclass
class Resolved:
    """How far a field path got inside a round-trip node, and the line it ended on."""

    line: int | None  # 1-based line of the deepest step found
    complete: bool  # every step was found
    value: Any = None  # the node at the deepest step
    parent: Any = None
    key: Any = None
    depth: int = 0  # steps found


def _tokens(path: str) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    for m in _TOKEN.finditer(path):
        if m.group(1) is not None:
            out.append(("sel", m.group(1)))
        elif m.group(2):
            out.append(("descend", ""))
        else:
            out.append(("key", m.group(3)))
    return out


def _descendant(node: Any, key: str, limit: int = 12) -> tuple[Any, Any] | None:
    """The nearest (parent, value) below `node` whose mapping has `key` (breadth first)."""
    queue: list[tuple[Any, int]] = [(node, 0)]
    while queue:
        cur, depth = queue.pop(0)
        if isinstance(cur, dict):
            if key in cur:
                return cur, key
            if depth < limit:
                queue += [(v, depth + 1) for v in cur.values() if isinstance(v, dict | list)]
        elif isinstance(cur, list) and depth < limit:
            queue += [(v, depth + 1) for v in cur if isinstance(v, dict | list)]
    return None


def resolve_path(node: Any, path: str) -> Resolved:
    """Follow a field path as evidence writes it (`a.b[0].c[name=node].env[name=X]`, `data[key]`).

    A path that does not start at the root (`volumeMounts[mountPath=/x]`) or that skips levels
    (`a[0]...c`) is found by searching below the current node.
    """
    cur: Any = node
    res = Resolved(node_line(node), True, node)
    toks = _tokens(path)
    descend = False
    for i, (kind, tok) in enumerate(toks):
        if kind == "descend":
            descend = True
            continue
        nxt = None
        if kind == "key":
            if isinstance(cur, dict) and tok in cur:
                nxt = (cur, tok)
            elif isinstance(cur, dict) and (descend or i == 0):
                nxt = _descendant(cur, tok)
        else:
            nxt = _select(cur, tok)
        descend = False
        if nxt is None:
            res.complete = False
            return res
        parent, key = nxt
        cur = parent[key]
        res = Resolved(key_line(parent, key) or res.line, True, cur, parent, key, res.depth + 1)
    return res


def _select(cur: Any, sel: str) -> tuple[Any, Any] | None:
    if isinstance(cur, list):
        if sel.isdigit():
            i = int(sel)
            return (cur, i) if i < len(cur) else None
        if sel == "*":
            return None
        k, eq, v = sel.partition("=")
        if eq:
            for i, item in enumerate(cur):
                if isinstance(item, dict) and str(item.get(k)) == v:
                    return cur, i
        return None
    if isinstance(cur, dict) and sel in cur:
        return cur, sel
    return None


def snippet_line(res: Resolved, snippet: str) -> int | None:
    """The line of `snippet` inside the string (or list of strings) a path resolved to."""
    snippet = snippet.strip()
    if not snippet or res.value is None:
        return None
    if isinstance(res.value, str):
        return _line_in_scalar(res.parent, res.key, res.value, snippet)
    if isinstance(res.value, list):
        for i, item in enumerate(res.value):
            if isinstance(item, str) and snippet in item:
                return _line_in_scalar(res.value, i, item, snippet)
    return None


def _line_in_scalar(parent: Any, key: Any, value: str, snippet: str) -> int | None:
    pos = value.find(snippet)
    if pos < 0:
        first = snippet.splitlines()[0] if snippet else ""
        pos = value.find(first) if first else -1
    start = value_line(parent, key)
    if start is None or pos < 0:
        return start
    if is_block_scalar(value):
        return start + 1 + value.count("\n", 0, pos)
    return start
