"""Structured logs: one JSON object per line (time, level, msg, fields), every string redacted."""

from __future__ import annotations

import json
import sys
import threading
from datetime import UTC, datetime
from typing import Any, TextIO

LEVELS = ("debug", "info", "warning", "error")


class JsonLog:
    def __init__(self, stream: TextIO | None = None, level: str = "info") -> None:
        from ckpt_doctor.sources.redact import Redactor

        self.stream = stream if stream is not None else sys.stderr
        self.min = LEVELS.index(level)
        self._lock = threading.Lock()
        self._redactor = Redactor()

    def log(self, level: str, msg: str, **fields: Any) -> None:
        if LEVELS.index(level) < self.min:
            return
        now = datetime.now(UTC)
        rec: dict[str, Any] = {
            "time": now.strftime("%Y-%m-%dT%H:%M:%S.") + f"{now.microsecond // 1000:03d}Z",
            "level": level,
            "msg": self._redactor.text(msg),
        }
        for k, v in fields.items():
            rec[k] = self._redactor.text(v) if isinstance(v, str) else v
        line = json.dumps(rec, ensure_ascii=False, default=str)
        with self._lock:
            try:
                self.stream.write(line + "\n")
                self.stream.flush()
            except (OSError, ValueError):  # stderr closed: logs are not worth dying for
                pass

    def debug(self, msg: str, **fields: Any) -> None:
        self.log("debug", msg, **fields)

    def info(self, msg: str, **fields: Any) -> None:
        self.log("info", msg, **fields)

    def warning(self, msg: str, **fields: Any) -> None:
        self.log("warning", msg, **fields)

    def error(self, msg: str, **fields: Any) -> None:
        self.log("error", msg, **fields)
