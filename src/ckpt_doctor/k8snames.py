"""What Kubernetes accepts as a namespace and as an object's name: a name it would refuse cannot exist, so a
target that spells one is a typo to report as such (exit 2), not a TrainJob to look for and call not found."""

from __future__ import annotations

import re

_LABEL = r"[a-z0-9](?:[-a-z0-9]*[a-z0-9])?"
_NAMESPACE = re.compile(_LABEL)
_SUBDOMAIN = re.compile(rf"{_LABEL}(?:\.{_LABEL})*")


def namespace_problem(ns: str) -> str | None:
    """Why `ns` cannot be a namespace (an RFC 1123 label: at most 63 lowercase letters, digits and '-', starting
    and ending with a letter or digit), or None."""
    if len(ns) <= 63 and _NAMESPACE.fullmatch(ns):
        return None
    return (
        f"{ns!r} is not a valid namespace name: at most 63 lowercase letters, digits and '-', starting and ending "
        "with a letter or digit"
    )


def name_problem(name: str) -> str | None:
    """Why `name` cannot be an object's name (an RFC 1123 subdomain: at most 253 lowercase letters, digits, '-'
    and '.', each dot-separated part starting and ending with a letter or digit), or None."""
    if len(name) <= 253 and _SUBDOMAIN.fullmatch(name):
        return None
    return (
        f"{name!r} is not a valid TrainJob name: lowercase letters, digits, '-' and '.', starting and ending with a "
        "letter or digit"
    )


def target_problem(target: str) -> str | None:
    """Why `[NAMESPACE/]NAME` cannot name a TrainJob (its shape, or a part Kubernetes would refuse), or None."""
    ns, sep, name = target.strip().rpartition("/")
    if not name or (sep and not ns) or "/" in ns:
        return f"TrainJob {target!r}: expected NAME or NAMESPACE/NAME"
    bad = (namespace_problem(ns) if sep else None) or name_problem(name)
    return f"TrainJob {target!r}: {bad}" if bad else None
