"""python -m tests.held [DIR]: rewrite the held-in bundles (tests/held/bundles/ by default)."""

from __future__ import annotations

import sys
from pathlib import Path

from tests.held import OUT, write_all

for d in write_all(Path(sys.argv[1]) if len(sys.argv) > 1 else OUT):
    print(d)
