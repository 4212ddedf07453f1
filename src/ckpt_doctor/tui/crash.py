"""Where an unexpected error goes: a log file with the (redacted) traceback, and one line to say so.

The app never shows a traceback on screen or on exit: the user gets one line that names the error
and the file that holds the details, to attach to a bug report.
"""

from __future__ import annotations

import os
import tempfile
import time
import traceback
from pathlib import Path


def log_dir() -> Path:
    """`$XDG_STATE_HOME/ckpt-doctor` (or `~/.local/state/ckpt-doctor`)."""
    state = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(state) / "ckpt-doctor"


def write(error: BaseException, where: str = "") -> Path | None:
    """Write the traceback of `error` to a new file (mode 0600, never through a symlink); None when
    no directory would take it."""
    from ckpt_doctor.sources.redact import redact_text

    text = "".join(traceback.format_exception(type(error), error, error.__traceback__))
    body = redact_text(f"ckpt-doctor tui: {where or 'unexpected error'}\n\n{text}")
    stamp = time.strftime("%Y%m%d-%H%M%S")
    for folder in (log_dir(), Path(tempfile.gettempdir())):
        try:
            folder.mkdir(parents=True, exist_ok=True, mode=0o700)
            for n in range(100):
                path = folder / f"tui-crash-{stamp}-{os.getpid()}{f'-{n}' if n else ''}.log"
                try:
                    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
                except FileExistsError:
                    continue
                with os.fdopen(fd, "w", encoding="utf-8") as f:
                    f.write(body)
                return path
        except OSError:
            continue
    return None


def one_line(error: BaseException, path: Path | None) -> str:
    """`ckpt-doctor tui: internal error: KeyError: 'x' (details in /path)`, redacted."""
    from ckpt_doctor.sources.redact import redact_text

    what = " ".join(f"{type(error).__name__}: {error}".split())
    if len(what) > 200:
        what = what[:199] + "…"
    where = f"details in {path}" if path else "no log file could be written"
    return f"ckpt-doctor tui: internal error: {redact_text(what)} ({where}; please report it)"
