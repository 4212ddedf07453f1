"""How far the reader goes: value sizes, nesting depth, nested `bash -c` scripts."""

from __future__ import annotations

_MAX_VALUE = 1 << 20  # a value longer than this is reported unresolvable (`a=$a$a` loops)


_MAX_DEPTH = 150  # nesting depth at which the walker stops descending


_MAX_INNER = 2  # how deep `bash -c '...'` inside a script is read
