"""The sandbox's simulated volumes: what a trainer wrote where, and what `kubectl exec … ls/find/df/cat` answer.

One `Volume` per storage the simulated kubelet mounts: a PVC (shared by every pod that mounts it, surviving
them), an emptyDir or a hostPath (the pod's or the node's), or the container's own filesystem (gone with that
container instance). A trainer's save writes a checkpoint directory into it, file by file; the file a framework
writes last (HF Trainer's `trainer_state.json`) makes the checkpoint complete, so a save cut short leaves a
directory without it, as on a real disk. `answer()` serves the read-only commands ckpt-doctor and a user run
inside a trainer container: the listing formats of contracts.md §2 (`find DIR -maxdepth N -printf '%y %s %T@
%p\\n'`, `ls -laR`), `ls -1`, `df -P [-B1]`, `cat`.
"""

from __future__ import annotations

import posixpath
import re
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime

CKPT = re.compile(r"^(?:checkpoint-|iter_|global_step|step[-_]?|ckpt[-_])(\d+)$")
BLOCK = 4096


@dataclass
class Entry:
    kind: str  # "d" | "f"
    size: int = BLOCK
    mtime: float = field(default_factory=time.time)
    content: bytes | None = None  # small files whose content matters (trainer_state.json, `latest`)


class Volume:
    """One filesystem: absolute paths to entries (their parents exist)."""

    def __init__(self, capacity: int = 100 * 1024**3, device: str = "/dev/rbd0") -> None:
        self.capacity = capacity
        self.device = device
        self.entries: dict[str, Entry] = {"/": Entry("d")}

    # -- writing ---------------------------------------------------------------------------------------------
    def mkdir(self, path: str) -> None:
        path = _norm(path)
        parts = path.strip("/").split("/") if path != "/" else []
        cur = ""
        for p in parts:
            cur += "/" + p
            self.entries.setdefault(cur, Entry("d"))

    def write(self, path: str, size: int, content: bytes | None = None) -> None:
        path = _norm(path)
        self.mkdir(posixpath.dirname(path))
        self.entries[path] = Entry("f", len(content) if content is not None else size, time.time(), content)

    def save(self, directory: str, name: str, files: list[tuple[str, int, bytes | None]], upto: int | None = None
             ) -> None:
        """Write checkpoint `name` under `directory`: its files in order, only the first `upto` when a save is
        cut short (the last-written one, the completeness marker, is then missing)."""
        root = posixpath.join(_norm(directory), name)
        self.mkdir(root)
        for rel, size, content in files[:upto]:
            self.write(posixpath.join(root, rel), size, content)

    def remove(self, path: str) -> None:
        path = _norm(path)
        for p in [p for p in self.entries if p == path or p.startswith(path.rstrip("/") + "/")]:
            del self.entries[p]

    # -- reading ---------------------------------------------------------------------------------------------
    def children(self, path: str) -> list[str]:
        path = _norm(path)
        base = path.rstrip("/") + "/"
        return sorted(p[len(base):] for p in self.entries if p.startswith(base) and "/" not in p[len(base):]
                      and p != path)

    def checkpoints(self, directory: str, marker: str) -> dict[int, bool]:
        """The checkpoint directories under `directory` by step, and whether each is complete (has `marker`)."""
        out: dict[int, bool] = {}
        for name in self.children(directory):
            m = CKPT.match(name)
            if m and self.entries[posixpath.join(_norm(directory), name)].kind == "d":
                out[int(m.group(1))] = posixpath.join(_norm(directory), name, marker) in self.entries
        return out

    def used(self) -> int:
        return sum(e.size for e in self.entries.values() if e.kind == "f")

    # -- the commands ----------------------------------------------------------------------------------------
    def answer(self, command: list[str]) -> tuple[int, bytes]:
        """What a read-only command run in a container that mounts this volume prints: (exit code, output)."""
        if not command:
            return 127, b"error: no command\n"
        prog, args = posixpath.basename(command[0]), command[1:]
        if prog == "ls":
            return self._ls(args)
        if prog == "find":
            return self._find(args)
        if prog == "df":
            return self._df(args)
        if prog == "cat":
            return self._cat(args)
        return 127, (f'OCI runtime exec failed: exec failed: unable to start container process: exec: '
                     f'"{command[0]}": executable file not found in $PATH: unknown\n').encode()

    def _missing(self, prog: str, path: str) -> tuple[int, bytes]:
        verb = "cannot access" if prog == "ls" else ""
        if prog == "ls":
            return 2, f"ls: {verb} '{path}': No such file or directory\n".encode()
        return 1, f"{prog}: '{path}': No such file or directory\n".encode()

    def _ls(self, args: list[str]) -> tuple[int, bytes]:
        flags = "".join(a[1:] for a in args if a.startswith("-") and not a.startswith("--"))
        full = any(a.startswith("--time-style=full-iso") for a in args)
        paths = [a for a in args if not a.startswith("-")] or ["."]
        out: list[str] = []
        rc = 0
        for path in paths:
            p = _norm(path)
            if p not in self.entries:
                rc, msg = self._missing("ls", path)
                return rc, msg
            if "R" in flags:
                out += self._ls_recursive(p, full)
            elif "l" in flags:
                out += self._ls_long(p, full, "a" in flags)
            else:
                entry = self.entries[p]
                out += self.children(p) if entry.kind == "d" else [posixpath.basename(p)]
        return rc, ("\n".join(out) + "\n").encode() if out else b""

    def _ls_long(self, path: str, full: bool, dots: bool) -> list[str]:
        names = self.children(path)
        total = sum((self.entries[posixpath.join(path, n)].size + 1023) // 1024 for n in names)
        lines = [f"total {total}"]
        if dots:
            lines += [self._long_line(self.entries[path], ".", full), self._long_line(Entry("d"), "..", full)]
        lines += [self._long_line(self.entries[posixpath.join(path, n)], n, full) for n in names]
        return lines

    def _ls_recursive(self, path: str, full: bool) -> list[str]:
        out: list[str] = []
        stack = [path]
        while stack:
            d = stack.pop(0)
            if out:
                out.append("")
            out.append(f"{d}:")
            out += self._ls_long(d, full, True)
            stack += [posixpath.join(d, n) for n in self.children(d) if self.entries[posixpath.join(d, n)].kind == "d"]
        return out

    @staticmethod
    def _long_line(e: Entry, name: str, full: bool) -> str:
        mode = "drwxr-xr-x" if e.kind == "d" else "-rw-r--r--"
        t = datetime.fromtimestamp(e.mtime, UTC)
        when = t.strftime("%Y-%m-%d %H:%M:%S.%f000 +0000") if full else t.strftime("%b %d %H:%M")
        return f"{mode} 1 1000 1000 {e.size:>10} {when} {name}"

    def _find(self, args: list[str]) -> tuple[int, bytes]:
        if not args:
            return 1, b"find: missing starting point\n"
        start = _norm(args[0])
        depth = 1 << 30
        fmt = None
        i = 1
        while i < len(args):
            if args[i] == "-maxdepth" and i + 1 < len(args):
                try:
                    depth = int(args[i + 1])
                except ValueError:
                    bad = f"find: Expected a positive decimal integer argument to -maxdepth, but got '{args[i + 1]}'\n"
                    return 1, bad.encode()
                i += 2
            elif args[i] == "-printf" and i + 1 < len(args):
                fmt = args[i + 1]
                i += 2
            else:
                i += 1
        if start not in self.entries:
            return 1, f"find: '{args[0]}': No such file or directory\n".encode()
        base = start.rstrip("/")
        out = []
        for p in sorted(x for x in self.entries if x == start or x.startswith(base + "/")):
            rel = p[len(base):].strip("/")
            if rel and rel.count("/") + 1 > depth:
                continue
            e = self.entries[p]
            shown = args[0].rstrip("/") + ("/" + rel if rel else "") if rel else args[0]
            out.append(_printf(fmt, e, shown) if fmt is not None else shown + "\n")
        return 0, "".join(out).encode()

    def _df(self, args: list[str]) -> tuple[int, bytes]:
        paths = [a for a in args if not a.startswith("-")]
        if paths and _norm(paths[0]) not in self.entries:
            return 1, f"df: {paths[0]}: No such file or directory\n".encode()
        unit = 1 if any(a in ("-B1", "--block-size=1") for a in args) else 1024
        head = "1-blocks" if unit == 1 else "1024-blocks"
        used = self.used()
        size, avail = self.capacity, max(0, self.capacity - self.used())
        pct = f"{(used * 100 + size - 1) // size if size else 0}%"
        mount = paths[0] if paths else "/"
        return 0, (f"Filesystem     {head}      Used Available Capacity Mounted on\n"
                   f"{self.device} {size // unit} {used // unit} {avail // unit} {pct} {mount}\n").encode()

    def _cat(self, args: list[str]) -> tuple[int, bytes]:
        out = b""
        for a in args:
            e = self.entries.get(_norm(a))
            if e is None:
                return 1, out + f"cat: {a}: No such file or directory\n".encode()
            if e.kind == "d":
                return 1, out + f"cat: {a}: Is a directory\n".encode()
            out += e.content if e.content is not None else b"\0" * min(e.size, 64)
        return 0, out


def _norm(path: str) -> str:
    return posixpath.normpath("/" + path.lstrip("/")) if path else "/"


def _printf(fmt: str, e: Entry, path: str) -> str:
    """GNU find's -printf for the directives the listings use: %y %s %T@ %p, and \\n \\t."""
    out = []
    i = 0
    while i < len(fmt):
        c = fmt[i]
        if c == "\\" and i + 1 < len(fmt):
            out.append({"n": "\n", "t": "\t", "\\": "\\"}.get(fmt[i + 1], fmt[i + 1]))
            i += 2
        elif c == "%" and fmt.startswith("%T@", i):
            out.append(f"{e.mtime:.10f}")
            i += 3
        elif c == "%" and i + 1 < len(fmt):
            d = fmt[i + 1]
            out.append({"y": e.kind, "s": str(e.size), "p": path, "%": "%"}.get(d, ""))
            i += 2
        else:
            out.append(c)
            i += 1
    return "".join(out)

