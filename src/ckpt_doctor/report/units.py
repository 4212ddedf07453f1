"""Durations, GPU-hours and times, written the same way in the report, the app and the text output."""

from __future__ import annotations

import re


def duration(seconds: float) -> str:
    """`38 s`, `10 min 30 s`, `1 h 5 min`, `2 d 3 h` (rounded to what matters at that size)."""
    s = round(max(0.0, seconds))
    if s < 60:
        return f"{s} s"
    if s < 3600:
        m, r = divmod(s, 60)
        return f"{m} min {r} s" if r else f"{m} min"
    if s < 86400:
        h, r = divmod(s, 3600)
        m = r // 60
        return f"{h} h {m} min" if m else f"{h} h"
    d, r = divmod(s, 86400)
    h = r // 3600
    return f"{d} d {h} h" if h else f"{d} d"


def gpu_hours(v: float) -> str:
    """Two significant digits below 10, whole numbers above (`0.011`, `0.27`, `3.4`, `128`)."""
    if v == 0:
        return "0"
    if v >= 10:
        return f"{v:.0f}"
    if v >= 1:
        return f"{v:.1f}"
    digits = 2
    x = v
    while x < 0.1 and digits < 6:
        x *= 10
        digits += 1
    return f"{v:.{digits}f}".rstrip("0").rstrip(".") or "0"


_RFC = re.compile(r"(\d{4}-\d\d-\d\d)T(\d\d:\d\d:\d\d)")


def clock(s: str) -> str:
    """`2026-11-30T08:00:30Z` → `2026-11-30 08:00:30` (UTC, as the cluster wrote it)."""
    m = _RFC.match(s or "")
    return f"{m.group(1)} {m.group(2)}" if m else (s or "")


def when(s: str) -> str:
    return f"{clock(s)} UTC" if _RFC.match(s or "") else s
