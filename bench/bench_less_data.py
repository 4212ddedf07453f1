"""Less data never flips a verdict: every removal offline and every forbidden resource live (run by hand).

`make test` runs every offline removal and a fixed sample of the live ones
(tests/coverage/test_less_data.py); this run takes every kind of every example through the fake
API server too, and prints how many variants ran and which flipped a verdict.

    python bench/bench_less_data.py
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "src")]

from tests.coverage.less_data import diagnose_dir, flips, read_objects, removals, write_without  # noqa: E402
from tests.coverage.test_less_data import RESOURCES, test_forbidding_data_live_never_flips_a_verdict  # noqa: E402
from tests.stories import STORIES  # noqa: E402


def main() -> int:
    examples = ROOT / "examples"
    bad: list[str] = []
    ran = 0
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        for s in STORIES:
            before = diagnose_dir(examples / s.name)
            for i, r in enumerate(removals(examples / s.name)):
                after = diagnose_dir(write_without(examples / s.name, r, Path(tmp) / f"{s.name}-{i}"))
                ran += 1
                bad += [f"offline {s.name} without {r.what}: {x}" for x in flips(before, after)]
            kinds = sorted({o["kind"] for o in read_objects(examples / s.name)} & set(RESOURCES))
            for resource in [RESOURCES[k] for k in kinds] + ["pods/log"]:
                ran += 1
                try:
                    test_forbidding_data_live_never_flips_a_verdict(
                        s.name, resource, Path(tempfile.mkdtemp(dir=tmp))
                    )
                except AssertionError as e:
                    bad.append(f"live {s.name} with {resource} forbidden: {str(e)[:300]}")
    print(f"{ran} variants (offline removals and live faults) in {time.perf_counter() - t0:.0f} s: {len(bad)} flipped")
    for line in bad:
        print("  " + line)
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
