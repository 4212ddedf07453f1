"""How much a bundle archive may hold, and the cheap look at a bundle's path: apart from `sources/bundle.py` so
the CLI can set the limits, and the app check its `--bundle`, without importing the YAML readers before the
app's first frame (the bundle's reader process imports them on its own core)."""

from __future__ import annotations

import tarfile
from dataclasses import dataclass
from pathlib import Path

from ckpt_doctor.errors import InputError


@dataclass(frozen=True)
class Limits:
    """How much an archive may hold (docs/security.md: `--max-bundle-bytes`, `--max-bundle-entries`,
    `--max-bundle-ratio`). An archive over any of them is refused before what is over is written to disk."""

    max_bytes: int = 2 * 1024**3  # total extracted size: 2 GiB (a 1,024-pod bundle from `collect` is ~0.6 GiB)
    max_entries: int = 50_000  # members (files, directories)
    max_ratio: int = 200  # extracted bytes per archive byte, once past RATIO_FLOOR (text logs: 5-50)


RATIO_FLOOR = 64 * 1024 * 1024  # any archive may expand to this much, whatever its ratio
DEFAULT_LIMITS = Limits()
_limits = DEFAULT_LIMITS


def set_limits(limits: Limits) -> None:
    """The limits every later archive is read with (the CLI sets them from its flags)."""
    global _limits
    _limits = limits


def current_limits() -> Limits:
    """The limits set last (the defaults until the CLI sets them)."""
    return _limits


def check_bundle_path(path: str | Path) -> None:
    """The cheap part of opening a bundle, for callers that read it later (the app): a directory, or a file
    that opens as a tar archive; else the InputError `diagnose` gives (exit 3)."""
    p = Path(path)
    if not p.exists():
        raise InputError("no such file or directory", str(p))
    if p.is_dir():
        return
    if not p.is_file():
        raise InputError("not a directory or a .tar.gz archive", str(p))
    try:
        with tarfile.open(p, "r:*") as tf:
            tf.next()
    except (tarfile.TarError, OSError, EOFError) as e:
        first = str(e).splitlines()[0].rstrip(":") if str(e) else type(e).__name__
        raise InputError(f"unreadable archive ({first}); expected a directory or a .tar.gz", str(p)) from None
