"""The severities of rules, lowest first: in a module of their own, so the command line can offer
them (`--fail-on`) without loading the engine."""

from __future__ import annotations

SEVERITIES = ("info", "warning", "error", "critical")


def severity_rank(s: str | None) -> int:
    return SEVERITIES.index(s) if s in SEVERITIES else -1
