"""Reading an evidence bundle (contracts.md §2): a folder or a .tar.gz of one."""

from __future__ import annotations

import gc
import os
import re
import signal
import tarfile
import tempfile
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ckpt_doctor.coverage import UNKNOWN, Known, apply_absent_or_log, apply_gap, kind_of_word
from ckpt_doctor.errors import InputError
from ckpt_doctor.signals import handled
from ckpt_doctor.snapshot import Gap, ListingSource, LogRef, Obj, Origin, Snapshot
from ckpt_doctor.sources.archive_limits import (  # noqa: F401 (re-exported: the names bundle readers knew)
    DEFAULT_LIMITS,
    RATIO_FLOOR,
    Limits,
    check_bundle_path,
    current_limits,
    set_limits,
)
from ckpt_doctor.typed import clean_meta, unreadable_object
from ckpt_doctor.yamlio import kube_objects

OBJECT_SUFFIXES = (".yaml", ".yml", ".json")
MAX_OBJECT_FILE = 512 * 1024 * 1024


@contextmanager
def _removed_on_termination() -> Iterator[None]:
    """SIGTERM or SIGHUP while an archive is extracted (or read from its extraction) unwinds like Ctrl-C, so
    the private temp dir is removed: nothing of the bundle is left in /tmp. Main thread only (Python's rule);
    elsewhere the caller's own handling applies."""

    def handler(signum: int, frame: Any) -> None:
        raise SystemExit(128 + signum)

    with handled((signal.SIGTERM, signal.SIGHUP), handler, keep_ignored=True):
        yield


def _extract(tf: tarfile.TarFile, dest: str, archive_size: int, limits: Limits, display: str) -> None:
    """Extract member by member, each checked against the limits before it is written (the data filter
    refuses absolute paths, `..`, links out of the archive and device files)."""
    total = 0
    for entries, member in enumerate(tf, 1):
        if entries > limits.max_entries:
            raise InputError(
                f"archive has more than {limits.max_entries} entries; refused (raise --max-bundle-entries if it "
                "is genuine)",
                display,
            )
        if member.isreg():
            total += member.size
            if total > limits.max_bytes:
                raise InputError(
                    f"archive expands to more than {limits.max_bytes} bytes; refused (raise --max-bundle-bytes if "
                    "it is genuine)",
                    display,
                )
            if total > RATIO_FLOOR and total > limits.max_ratio * max(archive_size, 1):
                raise InputError(
                    f"archive expands more than {limits.max_ratio} times its size ({archive_size} bytes to over "
                    f"{total}): a compression bomb? refused (raise --max-bundle-ratio if it is genuine)",
                    display,
                )
        tf.extract(member, dest, filter="data")


@contextmanager
def bundle_dir(path: str | Path, limits: Limits | None = None) -> Iterator[Path]:
    """Yield a directory holding the bundle; archives are extracted, within `limits`, to a private temp dir
    (0700) that is removed on every way out: the end of the block, an error, Ctrl-C, SIGTERM, SIGHUP."""
    p = Path(path)
    if not p.exists():
        raise InputError("no such file or directory", str(p))
    if p.is_dir():
        yield p
        return
    if not p.is_file():
        raise InputError("not a directory or a .tar.gz archive", str(p))
    lim = limits or current_limits()
    try:
        tf = tarfile.open(p, "r:*")
    except (tarfile.TarError, OSError, EOFError) as e:
        first = str(e).splitlines()[0].rstrip(":") if str(e) else type(e).__name__
        raise InputError(f"unreadable archive ({first}); expected a directory or a .tar.gz", str(p)) from None
    with _removed_on_termination(), tf, tempfile.TemporaryDirectory(prefix="ckpt-doctor-") as tmp:
        try:
            _extract(tf, tmp, p.stat().st_size, lim, str(p))
        except tarfile.FilterError as e:
            raise InputError(f"archive member refused: {e}", str(p)) from None
        except (tarfile.TarError, OSError, EOFError, zlib.error) as e:
            raise InputError(f"broken archive: {e}", str(p)) from None
        root = Path(tmp)
        entries = [e for e in root.iterdir()]
        # A tar of a folder holds one top-level directory: use it as the root.
        if len(entries) == 1 and entries[0].is_dir() and not (root / "bundle.yaml").exists():
            root = entries[0]
        yield root


def files_under(root: Path, notes: list[str]) -> list[Path]:
    """Every regular file under `root`, sorted, never outside it: a symlink that points out of the bundle (a
    file or a folder) is skipped with a note, one inside it is read where it points."""
    top = Path(os.path.realpath(root))
    out: list[Path] = []
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        for name in sorted(dirnames):
            d = Path(dirpath, name)
            if d.is_symlink() and not Path(os.path.realpath(d)).is_relative_to(top):
                notes.append(f"{d.relative_to(root)}: a symlink to a folder outside the bundle; skipped")
        for name in filenames:
            f = Path(dirpath, name)
            if f.is_symlink():
                real = Path(os.path.realpath(f))
                if not real.is_relative_to(top):
                    notes.append(f"{f.relative_to(root)}: a symlink to a file outside the bundle; not read")
                    continue
                if not real.is_file():
                    continue
            elif not f.is_file():
                continue  # FIFOs, sockets, devices
            out.append(f)
    return sorted(out)


def _log_key(rel: Path) -> tuple[str, str, bool] | None:
    """Map a path under logs/ to (pod, container, previous) per the bundle layout."""
    parts = rel.parts
    name = parts[-1]
    if not name.endswith(".log"):
        return None
    stem = name[: -len(".log")]
    previous = stem.endswith(".previous")
    if previous:
        stem = stem[: -len(".previous")]
    if len(parts) == 1:
        return (stem, "node", previous)
    if len(parts) == 2:
        return (parts[0], stem, previous)
    return None


# A namespace dump (`kubectl get configmaps -o yaml`) may hold tens of thousands of ConfigMaps that nothing of the
# TrainJob mounts. In a kubectl-shaped YAML list they are set aside as text, unparsed, and read only when an object
# of the bundle names them (a volume, a projected source, envFrom, an env value); the rest are counted.
_ITEMS = re.compile(r"^items:[ \t]*\n(?=- )", re.M)
_ITEMS_END = re.compile(r"^(?!- |[ \t#]|$)", re.M)  # the first line after the items that is not an item's
_ROOT_KEYS = ("\nkind:", "\nmetadata:", "\napiVersion:", "\n---", "\n...")
_ANCHOR = re.compile(r"(?:^|[\s\[{,])&[^\s,\]}]")
_CM_KIND = re.compile(r"^  kind: ConfigMap[ \t]*$", re.M)
_META_END = re.compile(r"\n(?!    |\n)")  # the end of the metadata block: a line indented less than its keys
_CREDENTIAL_HINTS = ("pass", "secret", "token", "key", "cred", "auth", "pwd", "priv", "sign", "cert", "session",
                     "cookie", "bearer")  # fmt: skip
_DNS_NAME = re.compile(r"[a-z0-9]([-a-z0-9.]*[a-z0-9])?")  # a plain name, nothing YAML would read otherwise


@dataclass
class _SetAside:
    """ConfigMaps of one file kept as text: (name, the item's text)."""

    display: str
    configmaps: list[tuple[str, str]]
    path: Path | None = None


def _set_aside_configmaps(text: str, display: str) -> tuple[str, _SetAside | None]:
    """Split a kubectl-shaped `items:` list: the ConfigMap items go aside as text (not parsed), the others stay.

    Only items whose shape is unmistakable are set aside (a top-level `kind: ConfigMap`, one top-level kind, a
    plain name under metadata); anything else stays in the text and is parsed as before. A file with an anchor is
    not split (items could share nodes); without anchors, what fails to parse in a part fails in the whole, and
    the whole file is then read to report the error as it always was."""
    m = _ITEMS.search(text)
    if m is not None and _has_anchor(text):
        return text, None  # anchors: items may share nodes, keep the file whole
    if m is None or _configmap_items(text, m.end(), 2) < 2:
        return text, None
    start = m.end()
    end = _items_end(text, start)
    aside: list[tuple[str, str]] = []
    kept: list[str] = [text[:start]]
    pos = start
    while pos < end:
        nxt = text.find("\n- ", pos, end)
        stop = end if nxt < 0 else nxt + 1
        item = text[pos:stop]
        name = _configmap_name(item)
        if not item.endswith("\n"):
            item += "\n"
        if name is None:
            kept.append(item)
        else:
            aside.append((name, item))
        pos = stop
    if not aside:
        return text, None
    kept.append(text[end:])
    if len(kept) == 2:  # nothing but ConfigMaps: an empty list keeps the document's shape
        kept[0] = text[: m.start()] + "items: []\n"
    return "".join(kept), _SetAside(display, aside)


def _has_anchor(text: str) -> bool:
    """Whether `text` has what _ANCHOR finds (an `&` after a space, `[`, `{` or `,`, before a character none of
    these): each `&` looked at in turn, where the pattern took 1.1 s over a 61 MB list."""
    i = text.find("&")
    while i >= 0:
        if (i == 0 or text[i - 1].isspace() or text[i - 1] in "[{,") and i + 1 < len(text):
            after = text[i + 1]
            if not after.isspace() and after not in ",]}":
                return True
        i = text.find("&", i + 1)
    return False


def _configmap_items(text: str, start: int, enough: int) -> int:
    """How many lines after `start` _CM_KIND matches (`  kind: ConfigMap`), up to `enough`: found by searching for
    the text, not by trying the pattern on every line (0.26 s over a 61 MB list of events)."""
    found = 0
    i = text.find("\n  kind: ConfigMap", start - 1)
    while i >= 0 and found < enough:
        found += _CM_KIND.match(text, i + 1) is not None
        i = text.find("\n  kind: ConfigMap", i + 1)
    return found


def _items_end(text: str, start: int) -> int:
    """Where the block of items that starts at `start` ends: the first line at column 0 that is no item's.

    kubectl writes `kind:` and `metadata:` after `items:`; the first of the root keys found is checked by
    counting (every line of the block must start with `- `, a blank, a `#`, or be empty), else searched for."""
    found = [i for i in (text.find(k, start - 1) for k in _ROOT_KEYS) if i >= 0]
    cand = min(found) + 1 if found else len(text)
    region = text[start - 1 : cand]
    lines = region.count("\n") - (1 if region.endswith("\n") else 0)
    ok = sum(region.count(p) for p in ("\n- ", "\n ", "\n\t", "\n#", "\n\n")) >= lines
    if ok:
        return cand
    end_m = _ITEMS_END.search(text, start)
    return end_m.start() if end_m else len(text)


def _configmap_name(item: str) -> str | None:
    """The name of an item that is a ConfigMap in kubectl's shape (one top-level kind, a plain name), else None.

    An item with a word that may name a credential is read as before, whatever it holds: the redactor learns
    the credentials of the objects it reads (by their names) and replaces them wherever they appear."""
    if not item.startswith("- ") or item.count("\n  kind:") != 1 or "\n  kind: ConfigMap\n" not in item:
        return None
    low = item.lower()
    if any(w in low for w in _CREDENTIAL_HINTS):
        return None
    i = item.find("\n  metadata:\n")
    if i < 0:
        return None
    end_m = _META_END.search(item, i + 1)
    end = end_m.start() if end_m else len(item)
    if item.count("\n    name: ", i, end) != 1:
        return None
    j = item.find("\n    name: ", i, end) + len("\n    name: ")
    value = item[j : item.find("\n", j)].rstrip(" \t")
    return value if _DNS_NAME.fullmatch(value) else None


def _named_configmaps(snap: Snapshot) -> set[str]:
    """Every ConfigMap name an object of the bundle gives: volumes, projected sources, envFrom, env values (keys
    `configMap`, `configMapRef`, `configMapKeyRef` anywhere), and each TrainJob's runtime snapshot."""
    names: set[str] = set()
    stack: list[Any] = [o.raw for o in snap.objects if o.kind != "Event"]
    names.update(f"{o.name}-runtime-snapshot" for o in snap.of_kind("TrainJob"))
    while stack:
        v = stack.pop()
        if isinstance(v, dict):
            for k, x in v.items():
                if k in ("configMap", "configMapRef", "configMapKeyRef") and isinstance(x, dict) and x.get("name"):
                    names.add(str(x["name"]))
                if isinstance(x, dict | list):
                    stack.append(x)
        elif isinstance(v, list):
            stack.extend(x for x in v if isinstance(x, dict | list))
    return names


def _read_set_aside(snap: Snapshot, aside: list[_SetAside]) -> None:
    """The set-aside ConfigMaps the bundle names are parsed and added; the others are counted, and known to be in
    the bundle (unread), never absent."""
    named = _named_configmaps(snap)
    for part in aside:
        wanted = [item for name, item in part.configmaps if name in named]
        if wanted:
            text = "apiVersion: v1\nitems:\n" + "".join(wanted) + "kind: List\n"
            try:
                objs = _objects(text, part.display, snap)
            except InputError:
                if part.path is not None:  # the whole file, to report its error as it always was
                    _objects(part.path.read_text(encoding="utf-8", errors="replace"), part.display, snap)
                raise
            for o in objs:
                snap.add(o, dedupe=True)
        for name, _item in part.configmaps:
            if name not in named:
                why = f"in {part.display}, not read: no object of the bundle mounts or names it"
                snap.coverage.object_known("ConfigMap", name, None, Known(UNKNOWN, why))
        left = sum(1 for name, _ in part.configmaps if name not in named)
        if left:
            snap.notes.append(
                f"{part.display}: {left} ConfigMap(s) that no object of the bundle mounts or names were counted, "
                "not read"
            )


def read_objects_file(
    path: Path, display: str, snap: Snapshot | None = None, aside: list[_SetAside] | None = None
) -> list[Obj]:
    try:
        if path.stat().st_size > MAX_OBJECT_FILE:
            raise InputError("object file larger than 512 MiB; split it", display)
        data = path.read_bytes()
    except OSError as e:
        raise InputError(f"unreadable: {e.strerror}", display) from None
    if b"\x00" in data[:8192]:
        raise InputError("binary file where Kubernetes YAML/JSON was expected", display)
    text = data.decode("utf-8", errors="replace")
    if aside is not None and not text.lstrip().startswith(("{", "[")):
        rest, part = _set_aside_configmaps(text, display)
        if part is not None:
            part.path = path
            try:
                objs = _objects(rest, display, snap)
            except InputError:
                return _objects(text, display, snap)  # the whole file, to report its error as it always was
            aside.append(part)
            return objs
    return _objects(text, display, snap)


def _objects(text: str, display: str, snap: Snapshot | None) -> list[Obj]:
    rejects: list[dict[str, Any]] = []
    objs = [Obj(raw, Origin(display)) for raw in kube_objects(text, display, rejects)]
    if snap is not None:
        for raw in rejects:
            snap.coverage.malformed.append(unreadable_object(raw, display))
    return objs


_LIST_KIND = re.compile(rb'^kind:\s*["\']?(?:StorageClass)?List["\']?\s*$|"kind"\s*:\s*"(?:StorageClass)?List"', re.M)


def _whole_class_list(f: Path, objs: list[Obj]) -> bool:
    """A file that is `kubectl get storageclass -o yaml|json` (a List of StorageClasses and nothing else) lists
    every class of the cluster (they are cluster-wide): a class not in it does not exist (seen absent)."""
    if not all(o.kind == "StorageClass" for o in objs):
        return False
    try:
        with f.open("rb") as fh:
            head = fh.read(1 << 16)
    except OSError:
        return False
    return _LIST_KIND.search(head) is not None


def load_bundle(path: str | Path, keep_dir: Path | None = None) -> Snapshot:
    """Read a bundle into a Snapshot.

    Logs are referenced by path and read lazily, so for an archive the extracted folder must
    outlive the Snapshot: `open_bundle` handles that.
    """
    with _collector_paused():
        return _load_bundle(path, keep_dir)


@contextmanager
def _collector_paused() -> Iterator[None]:
    """Python's cyclic garbage collector paused: reading a bundle makes millions of objects that all live on (its
    collections walked them over and over: diagnose on 80,000 events took 0.90x the CPU paused, YAML and JSON
    alike); whatever cycles it leaves are collected once it runs again."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def _several_bundles(root: Path) -> list[str]:
    """The folders directly under `root` that are bundles of their own (each with its bundle.yaml), when `root`
    is not one: a folder of bundles, which read as one would merge unrelated incidents into one diagnosis."""
    if (root / "bundle.yaml").is_file():
        return []
    try:
        return sorted(d.name for d in root.iterdir() if d.is_dir() and (d / "bundle.yaml").is_file())
    except OSError:
        return []


def _load_bundle(path: str | Path, keep_dir: Path | None) -> Snapshot:
    root = Path(path) if keep_dir is None else keep_dir
    several = _several_bundles(root)
    if len(several) > 1:
        shown = ", ".join(several[:3]) + (f", … ({len(several)} in all)" if len(several) > 3 else "")
        raise InputError(f"{path} holds several bundles ({shown}), each with its own bundle.yaml: give one of them, "
                         f"e.g. --bundle {Path(str(path)) / several[0]}")  # fmt: skip
    snap = Snapshot(source="bundle", location=str(path))
    aside: list[_SetAside] = []
    for f in files_under(root, snap.notes):
        rel = f.relative_to(root)
        if "checkpoints" in rel.parts[:-1] and ("logs" not in rel.parts or rel.parts.index("checkpoints") <
                                                rel.parts.index("logs")):  # fmt: skip
            _checkpoint_file(snap, rel, f)
            continue
        if "logs" in rel.parts[:-1]:  # logs/ at the root, or in a sub-bundle merged by hand
            at = rel.parts.index("logs")
            key = _log_key(Path(*rel.parts[at + 1 :]))
            if key is not None:
                snap.logs[key] = LogRef(key[0], key[1], key[2], path=f)
            elif f.suffix.lower() in OBJECT_SUFFIXES:  # contracts.md §2: no objects under logs/; say so
                snap.notes.append(f"{rel}: under logs/, so not read as objects (logs/ holds logs only)")
            continue
        if f.suffix.lower() not in OBJECT_SUFFIXES:
            continue
        display = str(rel)
        objs = read_objects_file(f, display, snap, aside)
        for o in objs:
            if o.kind == "Bundle" and o.api_version.startswith("ckpt-doctor/"):
                _apply_meta(snap, o.raw, display)
            else:
                snap.add(o, dedupe=True)
        if rel == Path("bundle.yaml") and not objs:
            _read_plain_meta(snap, f, display)
        if objs and _whole_class_list(f, objs):
            snap.coverage.listed("StorageClass")
    if aside:
        _read_set_aside(snap, aside)
    for pod in snap.of_kind("Pod"):
        for ref in snap.logs_of(pod.name):
            ref.namespace = pod.namespace
    kinds = {o.kind for o in snap.objects} | ({"ConfigMap"} if aside else set())  # counted ones were collected
    snap.coverage.presence(kinds, "bundle")
    return snap


def _checkpoint_file(snap: Snapshot, rel: Path, f: Path) -> None:
    """A file under checkpoints/ (contracts.md §2): `<pod>/<container>.txt` a listing, `<pod>/<container>.df` the
    volume's df, `<pod>/<container>/<relative path>` a small file kept beside the listing. Nothing there is read
    as Kubernetes objects."""
    at = rel.parts.index("checkpoints")
    parts = rel.parts[at + 1 :]
    if len(parts) == 2 and parts[1].endswith((".txt", ".df")):
        pod, name = parts
        container, ext = name.rsplit(".", 1)
        src = _listing(snap, pod, container, Path(*rel.parts[: at + 1], pod, container + ".txt").as_posix())
        if ext == "txt":
            src.path = f
        else:
            src.df_path = f
        return
    if len(parts) >= 3:
        pod, container = parts[0], parts[1]
        src = _listing(snap, pod, container, Path(*rel.parts[: at + 1], pod, container + ".txt").as_posix())
        src.files["/".join(parts[2:])] = f
        return
    snap.notes.append(f"{rel}: under checkpoints/ but not <pod>/<container>.txt, .df or <pod>/<container>/<file>; "
                      "not read")  # fmt: skip


def _listing(snap: Snapshot, pod: str, container: str, display: str) -> ListingSource:
    src = snap.checkpoints.get((pod, container))
    if src is None:
        src = snap.checkpoints[(pod, container)] = ListingSource(pod, container, display)
    return src


def _read_plain_meta(snap: Snapshot, f: Path, display: str) -> None:
    """bundle.yaml written by hand without apiVersion/kind is still metadata."""
    from ckpt_doctor.yamlio import iter_documents

    for doc in iter_documents(f.read_text(errors="replace"), display):
        if isinstance(doc, dict):
            _apply_meta(snap, doc, display)


def _apply_meta(snap: Snapshot, raw: dict[str, Any], display: str) -> None:
    """bundle.yaml: its fields checked like any object's; a malformed one is ignored with a note."""
    meta, bad = clean_meta(raw, display)
    for m in bad:
        snap.notes.append(f"{display}: {m.path} is {m.found}, expected {m.expected}; ignored")
    snap.meta = meta
    cov = snap.coverage
    for g in meta.get("notCollected") or []:
        if isinstance(g, dict) and g.get("what"):
            gap = Gap(str(g["what"]), str(g.get("reason") or "not collected"))
            snap.not_collected.append(gap)
            apply_gap(cov, gap.what, gap.reason)
    for word in meta.get("listed") or []:
        kind = kind_of_word(str(word))
        if kind:
            cov.listed(kind)
    for a in meta.get("absent") or []:
        if isinstance(a, dict) and a.get("what"):
            apply_absent_or_log(cov, str(a["what"]), str(a.get("reason") or "not found"))


class OpenBundle:
    """Context manager: `with open_bundle(p) as snap:` keeps an extracted archive alive."""

    def __init__(self, path: str | Path, limits: Limits | None = None) -> None:
        self.path = path
        self.limits = limits
        self._cm: Any = None

    def __enter__(self) -> Snapshot:
        self._cm = bundle_dir(self.path, self.limits)
        root = self._cm.__enter__()
        try:
            return load_bundle(self.path, keep_dir=root)
        except BaseException:
            self._cm.__exit__(None, None, None)
            raise

    def __exit__(self, *exc: object) -> None:
        if self._cm is not None:
            self._cm.__exit__(*exc)


def open_bundle(path: str | Path, limits: Limits | None = None) -> OpenBundle:
    return OpenBundle(path, limits)
