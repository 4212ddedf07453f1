"""Every single-field mutation of every example bundle (run by hand: `python bench/bench_mutations.py`).

`make test` samples these with hypothesis (tests/coverage/test_mutations.py); this run takes each
field the rules read, in every example, and gives it every value of another type. It prints how many
mutations ran and how many crashed, exited outside {0, 1, 3, 4}, or hid a critical finding.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "src")]

from tests.coverage.mutation import Mutation, current, other_values, sites  # noqa: E402
from tests.coverage.test_mutations import check_mutation  # noqa: E402
from tests.stories import STORIES  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--examples", nargs="*", help="only these examples")
    ap.add_argument("--limit", type=int, default=0, help="stop after N mutations (0: all)")
    args = ap.parse_args()
    names = args.examples or [s.name for s in STORIES]
    ran, bad = 0, []
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        for name in names:
            bundle = ROOT / "examples" / name
            for target, path in sites(bundle):
                for value in other_values(current(bundle, target, path)):
                    m = Mutation(target, path, value)
                    try:
                        check_mutation(name, m, Path(tmp) / f"m{ran}")
                    except AssertionError as e:
                        bad.append(f"{name}: {str(e)[:300]}")
                    ran += 1
                    if args.limit and ran >= args.limit:
                        break
    dt = time.perf_counter() - t0
    print(f"{ran} mutations of {len(names)} example(s) in {dt:.0f} s: {len(bad)} broke the invariant")
    for line in bad[:40]:
        print("  " + line)
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
