"""Write a Snapshot as an evidence bundle (contracts.md §2): a directory or a .tar.gz of one.

```
<name>/bundle.yaml                        collectedAt, target, cluster, notCollected, redactions
<name>/objects/<kind>.yaml                the objects of each kind, one YAML document each
<name>/logs/<pod>/<container>.log         current container log (head and tail windows)
<name>/logs/<pod>/<container>.previous.log
<name>/checkpoints/<pod>/<container>.txt  the checkpoint directory's listing (collect --inspect-checkpoints)
<name>/checkpoints/<pod>/<container>.df   df -P -B1 of it
<name>/checkpoints/<pod>/<container>/<relative path>   small files beside it (DeepSpeed's latest, …)
<name>/<extra files>                      e.g. the recorder's older container instances
```

Writing is atomic and safe (safewrite): an archive is streamed to a temporary file from mkstemp beside it and
moved into place; a directory is filled under a private temporary name (0700) and renamed. An existing output
is replaced only with `force`. Nothing here redacts: the caller passes a redacted Snapshot.

Files are made one at a time as they are written (`bundle_entries`): a log's bytes are read from where the
Snapshot keeps them (a live collection spools them to disk as it reads them, `snapshot.LogSpool`) just before
they go into the bundle, so writing holds one log in memory, not all of them.
"""

from __future__ import annotations

import io
import re
import shutil
import tarfile
import tempfile
import time
from collections.abc import Callable, Iterable, Mapping
from functools import partial
from pathlib import Path
from typing import Any

from ckpt_doctor.errors import InputError
from ckpt_doctor.safewrite import check_output, output_stream, replace_dir
from ckpt_doctor.snapshot import LogRef, Snapshot

ARCHIVE_SUFFIXES = (".tar.gz", ".tgz")
FILE_NAMES = {
    "TrainJob": "trainjobs",
    "TrainingRuntime": "trainingruntimes",
    "ClusterTrainingRuntime": "clustertrainingruntimes",
    "ConfigMap": "configmaps",
    "JobSet": "jobsets",
    "Job": "jobs",
    "Pod": "pods",
    "Event": "events",
    "PersistentVolumeClaim": "persistentvolumeclaims",
    "PersistentVolume": "persistentvolumes",
    "StorageClass": "storageclasses",
    "Node": "nodes",
    "Workload": "workloads",
}
_SAFE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,252}$")
WINDOW = 1 << 20  # a log without a known size (never from live collection): its first and last MiB


def is_archive(path: str | Path) -> bool:
    return str(path).endswith(ARCHIVE_SUFFIXES)


# Strings a YAML 1.2 reader (the bundle reader) would take for a number, bool or null, that a YAML 1.1
# writer would leave plain: "1e-4", "0o17", "0x1F", ".5", "+12", "True" and friends are always quoted.
_AMBIGUOUS = re.compile(
    r"^(?:[-+]?(?:\.[0-9]+|[0-9][0-9_]*(?:\.[0-9_]*)?)(?:[eE][-+]?[0-9]+)?|0o[0-7]+|0x[0-9a-fA-F]+|"
    r"[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN)|true|True|TRUE|false|False|FALSE|null|Null|NULL|~|"
    r"y|Y|yes|Yes|YES|n|N|no|No|NO|on|On|ON|off|Off|OFF|=|<<)$"
)


def _yaml_docs(objs: Iterable[dict[str, Any]]) -> bytes:
    """A multi-document YAML stream, written by PyYAML (a dependency of `kubernetes`) through libyaml if present.

    Strings a YAML reader could take for another type are double-quoted; multi-line strings are blocks.
    """
    import yaml

    class Dumper(getattr(yaml, "CSafeDumper", yaml.SafeDumper)):  # type: ignore[misc]
        pass

    def represent_str(d: Any, data: str) -> Any:
        if _AMBIGUOUS.match(data):
            return d.represent_scalar("tag:yaml.org,2002:str", data, style='"')
        if "\n" in data.rstrip("\n") and not data.startswith((" ", "\t")):
            return d.represent_scalar("tag:yaml.org,2002:str", data, style="|")
        return d.represent_scalar("tag:yaml.org,2002:str", data)

    Dumper.add_representer(str, represent_str)
    text = yaml.dump_all(
        list(objs), Dumper=Dumper, default_flow_style=False, allow_unicode=True, sort_keys=False, width=1 << 16
    )
    return text.encode("utf-8")


def _safe(part: str, what: str) -> str:
    if not _SAFE.match(part) or part in (".", ".."):
        raise InputError(f"refusing to write a bundle path from {what} {part!r}")
    return part


def log_bytes(ref: LogRef) -> bytes:
    """The bytes of a log as the bundle stores it (in-memory windows, or a file's head and tail)."""
    from ckpt_doctor.sources.live import skipped_marker, window_content

    size = ref.size
    if size is not None and (ref.path is None or size <= 2 * WINDOW):
        return ref.read_head(size)
    head = ref.read_head(WINDOW)
    if ref.is_whole(WINDOW):
        return head
    tail = ref.read_tail(WINDOW)
    return window_content(head, tail, WINDOW) if tail else head + skipped_marker(len(head), 0)


Entries = dict[str, Callable[[], bytes]]  # relative path -> what makes its content, called once when it is written


def bundle_entries(snap: Snapshot, extra_files: Mapping[str, bytes] | None = None) -> Entries:
    """Relative path → a function making the content of every file of the bundle (each file made when written)."""
    files: Entries = {}
    meta: dict[str, Any] = {"apiVersion": "ckpt-doctor/v1", "kind": "Bundle"}
    meta.update({k: v for k, v in (snap.meta or {}).items() if k not in ("apiVersion", "kind", "notCollected")})
    meta["notCollected"] = [g.to_json() for g in snap.not_collected]
    meta.setdefault("redactions", 0)
    files["bundle.yaml"] = partial(_yaml_docs, [meta])
    by_kind: dict[str, list[dict[str, Any]]] = {}
    for o in snap.objects:
        by_kind.setdefault(o.kind or "Unknown", []).append(o.raw)
    for kind, objs in by_kind.items():
        name = FILE_NAMES.get(kind) or re.sub(r"[^a-z0-9]+", "-", kind.lower()) or "objects"
        files[f"objects/{name}.yaml"] = partial(_yaml_docs, objs)
    for (pod, container, previous), ref in sorted(snap.logs.items()):
        rel = f"logs/{_safe(pod, 'pod name')}/{_safe(container, 'container name')}{'.previous' if previous else ''}.log"
        files[rel] = partial(log_bytes, ref)
    for (pod, container), src in sorted(snap.checkpoints.items()):
        if src.problem:
            continue  # unknown: its reason is in notCollected
        base = f"checkpoints/{_safe(pod, 'pod name')}/{_safe(container, 'container name')}"
        files[f"{base}.txt"] = partial(_listing_text, src)
        if src.df_text is not None or src.df_path is not None:
            files[f"{base}.df"] = partial(lambda s: (s.read_df() or "").encode(), src)
        for rel, data in sorted(src.read_files(1 << 16).items()):
            parts = rel.split("/")
            if any(not _SAFE.match(p) or p in (".", "..") for p in parts):
                continue  # a name no bundle path may carry: left out (the listing still names it)
            files[f"{base}/{rel}"] = partial(bytes, data)
    for rel, data in (extra_files or {}).items():
        parts = rel.split("/")
        if parts[0] in ("logs", "objects", "checkpoints", "bundle.yaml") or any(not _SAFE.match(p) for p in parts):
            raise InputError(f"refusing extra bundle file {rel!r}")
        files[rel] = partial(bytes, data)
    return files


def _listing_text(src: Any) -> bytes:
    from ckpt_doctor.facts.listing import MAX_LISTING_BYTES

    return src.read_text(MAX_LISTING_BYTES).encode("utf-8", "surrogateescape")


def bundle_files(snap: Snapshot, extra_files: Mapping[str, bytes] | None = None) -> dict[str, bytes]:
    """Relative path → content of every file of the bundle (all in memory: `bundle_entries` makes them one by one)."""
    return {rel: make() for rel, make in bundle_entries(snap, extra_files).items()}


def write_bundle(
    snap: Snapshot, out: str | Path, extra_files: Mapping[str, bytes] | None = None, force: bool = False
) -> Path:
    """Write `snap` to `out` (`.tar.gz`/`.tgz`: an archive; anything else: a new directory).

    Through safewrite: an existing archive is replaced only with `force` (a symlink there is replaced itself,
    never followed); a directory must be new or empty (with `force`, a symlink there is replaced).
    """
    out = Path(out)
    check_output(out, force, directory=not is_archive(out))  # before the bundle is built
    files = bundle_entries(snap, extra_files)
    if is_archive(out):
        _write_archive(files, out, _root_name(out), force)
    else:
        _write_dir(files, out, force)
    return out


def _root_name(out: Path) -> str:
    base = out.name
    for suf in ARCHIVE_SUFFIXES:
        if base.endswith(suf):
            base = base[: -len(suf)]
    return base if _SAFE.match(base) else "bundle"


def _write_archive(files: Entries, out: Path, root: str, force: bool = False) -> None:
    now = time.time()
    with output_stream(out, force, new_mode=0o600) as stream, tarfile.open(
        fileobj=stream.file, mode="w:gz", compresslevel=6
    ) as tar:
        dirs: set[str] = set()
        for rel in sorted(files):
            parts = rel.split("/")
            for i in range(len(parts)):
                d = "/".join([root, *parts[:i]])
                if d not in dirs:
                    dirs.add(d)
                    info = tarfile.TarInfo(d)
                    info.type, info.mode, info.mtime = tarfile.DIRTYPE, 0o755, int(now)
                    tar.addfile(info)
            data = files[rel]()
            info = tarfile.TarInfo(f"{root}/{rel}")
            info.size, info.mode, info.mtime = len(data), 0o644, int(now)
            tar.addfile(info, io.BytesIO(data))


def _write_dir(files: Entries, out: Path, force: bool = False) -> None:
    parent = out.parent if str(out.parent) else Path(".")
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=parent))  # 0700: private until it is complete
    try:
        for rel, make in files.items():
            p = tmp / rel
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_bytes(make())
        replace_dir(tmp, out, force)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
