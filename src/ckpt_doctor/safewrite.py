"""Every file ckpt-doctor writes goes through here: `lint --fix`, `collect -o`, the app's exports and screenshots.

The rules (docs/security.md, "Writes"):

- the new content goes to a temporary file made by `mkstemp` in the target's own directory (`O_CREAT|O_EXCL`:
  nothing planted at a temporary name, symlink or not, is ever followed or overwritten), is flushed and fsync'ed,
  and takes the target's place with one `os.replace`: Ctrl-C, a full disk or a crash leave the old file or the
  new one, never half of one, and never a stray temporary file;
- a file that is replaced keeps its permission bits (a 600 file stays 600; set-user-ID and set-group-ID are
  dropped: what is written is not a program) and its owner and group: root replacing a user's file gives the
  new file to that user, as the old one was (`chown` before `chmod`; without root only the group can be kept,
  and the note says so); a new file gets the umask's default, or the mode the caller asks for (bundles: 600);
- an existing output (`collect -o`, `report --out`, the drill's `--report`/`--junit`: `write_output(path, text,
  force=args.force)`, checked up front with `check_output(path, force)`) is refused unless `force`; a read-only
  one too; with `force` a symlink at the output path is replaced itself, never what it points to, and a
  hard-linked file is replaced by a new file (its other names keep the old content);
- an edit in place (`lint --fix`) rewrites the file a symlink points to (the link stays a link; the message says
  which file changed), refuses a read-only file, and refuses a file with several hard links (a replace would
  split them: the other names would silently keep the old text);
- text keeps its line endings (`match_newlines`): a CRLF file stays CRLF after an edit.

Nothing here prints: callers say what was written with `Written.describe()`.
"""

from __future__ import annotations

import os
import stat
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from ckpt_doctor.errors import InputError


class WriteRefused(InputError):
    """A write that the rules above refuse (exit 3, with what to do)."""


class WriteFailed(WriteRefused):
    """The system refused the write (permissions, a full disk); `reason` is its own words."""

    def __init__(self, message: str, where: str | None = None, reason: str = "") -> None:
        super().__init__(message, where)
        self.reason = reason or message


@dataclass(frozen=True)
class Written:
    path: Path  # the file that now holds the content (a symlink's target, for an edit in place)
    size: int
    replaced: bool  # an existing file was replaced
    notes: tuple[str, ...] = field(default_factory=tuple)

    def describe(self) -> str:
        what = "replaced" if self.replaced else "wrote"
        extra = "".join(f"; {n}" for n in self.notes)
        return f"{what} {self.path} ({self.size} bytes){extra}"


def _umask_mode() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return 0o666 & ~mask


def read_only(st: os.stat_result) -> bool:
    """No write permission for the owner (judged on the mode bits, so root is refused too)."""
    return not st.st_mode & stat.S_IWUSR


def check_output(path: str | Path, force: bool = False, directory: bool = False) -> None:
    """Refuse an output path before any work is done (what `write_output` would refuse)."""
    p = Path(path)
    if not os.path.lexists(p):
        parent = p.parent if str(p.parent) else Path(".")
        if not parent.is_dir():
            raise WriteRefused("the directory to write into does not exist", str(parent))
        return
    st = os.lstat(p)
    if stat.S_ISDIR(st.st_mode):
        if directory and not any(p.iterdir()):
            return  # an empty directory may receive a bundle
        if not directory:
            raise WriteRefused("is a directory; give the name of a file to write", str(p))
        raise WriteRefused("exists and is not empty; choose a new directory or a .tar.gz", str(p))
    if directory and not stat.S_ISLNK(st.st_mode) and not force:
        raise WriteRefused("exists and is not a directory; choose a new name or pass --force", str(p))
    if not force:
        what = "a symlink" if stat.S_ISLNK(st.st_mode) else "a file"
        raise WriteRefused(f"exists ({what}); choose a new name or pass --force to replace it", str(p))
    if stat.S_ISREG(st.st_mode) and read_only(st):
        raise WriteRefused("is read-only; make it writable first or choose a new name", str(p))


KEPT_MODE = 0o7777 & ~(stat.S_ISUID | stat.S_ISGID)  # what of a replaced file's mode the new file keeps


def keep_owner(fd: int, st: os.stat_result) -> str | None:
    """Give the file open at `fd` the owner and group of the file it replaces (`st`); a note when only part of it
    could be (a user other than root may not give a file away), else None."""
    uid, gid = st.st_uid, st.st_gid
    if (uid, gid) == (os.geteuid(), os.getegid()):
        return None
    try:
        os.fchown(fd, uid, gid)
        return None
    except PermissionError:
        pass
    try:
        os.fchown(fd, -1, gid)
    except PermissionError:
        return f"it belonged to uid {uid}, gid {gid}: the new file is yours (only root can give it back)"
    return f"it belonged to uid {uid}: the new file is yours, its group kept (only root can give it back)"


def _write_temp(directory: Path, name: str, data: bytes, mode: int, owner: os.stat_result | None = None) -> str:
    fd, tmp = tempfile.mkstemp(prefix=f".{name}.", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            if owner is not None:
                keep_owner(f.fileno(), owner)  # before the mode: a chown clears set-ID bits
            os.fsync(f.fileno())
        os.chmod(tmp, mode)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return tmp


def _as_bytes(data: bytes | str, encoding: str) -> bytes:
    return data.encode(encoding) if isinstance(data, str) else data


class Output:
    """What `output_stream` yields: the temporary file to write to; `written` is set once it took its place."""

    def __init__(self, file: BinaryIO) -> None:
        self.file = file
        self.written: Written | None = None


@contextmanager
def output_stream(path: str | Path, force: bool = False, new_mode: int | None = None) -> Iterator[Output]:
    """Stream a new output file (a bundle archive) into place: refused when it exists, unless `force`.

    The content goes to a temporary file beside `path`; when the block ends without an exception it is fsync'ed,
    given its mode and moved over `path`; on any exception (Ctrl-C included) the temporary file is removed.
    """
    p = Path(path)
    check_output(p, force)
    notes: list[str] = []
    mode = _umask_mode() if new_mode is None else new_mode
    replaced = os.path.lexists(p)
    owner: os.stat_result | None = None
    if replaced:
        st = os.lstat(p)
        if stat.S_ISLNK(st.st_mode):
            notes.append("it was a symlink: the link was replaced, not the file it pointed to")
        elif stat.S_ISREG(st.st_mode):
            mode = stat.S_IMODE(st.st_mode) & KEPT_MODE
            owner = st
            if st.st_nlink > 1:
                notes.append(f"it had {st.st_nlink} hard links: the other names keep the old content")
    parent = p.parent if str(p.parent) else Path(".")
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{p.name}.", suffix=".tmp", dir=parent)
    except OSError as e:
        raise WriteFailed(f"cannot write: {e.strerror or e}", str(p), str(e.strerror or e)) from None
    try:
        with os.fdopen(fd, "wb") as f:
            out = Output(f)
            yield out
            f.flush()
            if owner is not None:
                note = keep_owner(f.fileno(), owner)  # before the mode: a chown clears set-ID bits
                notes += [note] if note else []
            os.fsync(f.fileno())
            size = f.tell()
        os.chmod(tmp, mode)
        os.replace(tmp, p)
    except OSError as e:
        Path(tmp).unlink(missing_ok=True)
        raise WriteFailed(f"cannot write: {e.strerror or e}", str(p), str(e.strerror or e)) from None
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    out.written = Written(p, size, replaced, tuple(notes))


def write_output(
    path: str | Path, data: bytes | str, force: bool = False, new_mode: int | None = None, encoding: str = "utf-8"
) -> Written:
    """Write a new output file (an export, a report): refused when it exists, unless `force`."""
    blob = _as_bytes(data, encoding)
    with output_stream(path, force, new_mode) as out:
        out.file.write(blob)
    assert out.written is not None
    return out.written


def edit_in_place(path: str | Path, data: bytes | str, encoding: str = "utf-8") -> Written:
    """Replace an existing file the user asked to have edited (`lint --fix`), keeping its mode.

    A symlink is followed to the file it names (which is edited; the link stays); a read-only file and a file
    with several hard links are refused.
    """
    p = Path(path)
    try:
        real = Path(os.path.realpath(p))
        st = os.stat(real)
    except OSError as e:
        raise WriteRefused(f"cannot edit: {e.strerror or e}", str(p)) from None
    if not stat.S_ISREG(st.st_mode):
        raise WriteRefused("is not a regular file; not edited", str(p))
    if read_only(st):
        raise WriteRefused("is read-only; not edited (make it writable to let --fix change it)", str(p))
    if st.st_nlink > 1:
        raise WriteRefused(
            f"has {st.st_nlink} hard links; not edited, because replacing it would leave the other names with the "
            "old text (copy it to a file of its own first, or apply the diff from --dry-run)",
            str(p),
        )
    notes = [f"{p} is a symlink: the file it points to was edited"] if p.is_symlink() else []
    blob = _as_bytes(data, encoding)
    try:
        tmp = _write_temp(real.parent, real.name, blob, stat.S_IMODE(st.st_mode) & KEPT_MODE, owner=st)
        try:
            os.replace(tmp, real)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
    except OSError as e:
        why = str(e.strerror or e)
        raise WriteFailed(f"cannot write the edited file: {why}", str(p), why) from None
    return Written(real, len(blob), True, tuple(notes))


def replace_dir(tmp: Path, out: Path, force: bool = False) -> None:
    """Move a directory filled under a temporary name to `out` (an absent path, an empty directory, or with
    `force` a symlink or a file, which is replaced itself)."""
    check_output(out, force, directory=True)
    if os.path.lexists(out):
        st = os.lstat(out)
        if not stat.S_ISLNK(st.st_mode):
            _give_tree(tmp, st)  # root filling a user's (empty) folder leaves the bundle to that user
        if out.is_symlink() or not out.is_dir():
            out.unlink()  # with --force (check_output refused it otherwise)
        else:
            out.rmdir()  # empty: checked above
    os.replace(tmp, out)


def _give_tree(root: Path, st: os.stat_result) -> None:
    """Give every file and folder under `root` the owner and group of what it replaces (only root can)."""
    if (st.st_uid, st.st_gid) == (os.geteuid(), os.getegid()) or os.geteuid() != 0:
        return
    for path in [root, *root.rglob("*")]:
        os.lchown(path, st.st_uid, st.st_gid)


def match_newlines(old: str, new: str) -> str:
    """`new` with the line endings `old` uses: a CRLF file stays CRLF when an edit inserts `\\n` lines."""
    crlf = old.count("\r\n")
    if not crlf or crlf < old.count("\n") - crlf:
        return new
    return new.replace("\r\n", "\n").replace("\n", "\r\n")


def fresh_path(path: str | Path) -> Path:
    """`path`, or `name-2.ext`, `name-3.ext`… when it exists (the app never overwrites an earlier export)."""
    p = Path(path)
    if not os.path.lexists(p):
        return p
    stem, suffix = p.stem, p.suffix
    for i in range(2, 10_000):
        cand = p.with_name(f"{stem}-{i}{suffix}")
        if not os.path.lexists(cand):
            return cand
    raise WriteRefused("too many earlier exports with this name; move some away", str(p))
