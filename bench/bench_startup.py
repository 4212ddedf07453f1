"""How long ckpt-doctor takes to start (issue 14, item 6), as CPU seconds of whole processes.

Each command runs as a new process, interleaved with the reference `python -c "import yaml"` (A B
A B …), and the ratio is taken pair by pair, so a machine whose speed drifts still gives a fair
figure: min, median and max of the CPU seconds (user + system, from the kernel's accounting of the
finished child) and of the ratio to the reference. Goals: `--help` and `rules list` load no engine
(tests/test_startup.py proves which modules load), a small `diagnose` under 0.25 s of CPU.

The checkout's sources are compiled to bytecode first, as an installed wheel is: an environment
that sets PYTHONDONTWRITEBYTECODE would otherwise compile them again on every start.

    python bench/bench_startup.py              # 9 pairs per command
    python bench/bench_startup.py --rounds 15
"""

from __future__ import annotations

import argparse
import compileall
import os
import resource
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PROGRAM = [sys.executable, "-m", "ckpt_doctor"]
REFERENCE = [sys.executable, "-c", "import yaml"]
COMMANDS = {
    "--help": ["--help"],
    "rules list": ["rules", "list"],
    "lint (one runtime)": ["lint", "examples/healthy-resume/runtime.yaml", "-o", "json"],
    "diagnose (small bundle)": ["diagnose", "--bundle", "examples/healthy-resume", "-o", "json"],
}


def cpu_of(argv: list[str]) -> float:
    """CPU seconds (user + system) of one finished run of `argv`."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(argv, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def spread(xs: list[float], fmt: str = "{:.3f}") -> str:
    return " / ".join(fmt.format(v) for v in (min(xs), statistics.median(xs), max(xs)))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=9, help="interleaved pairs per command (default 9)")
    args = ap.parse_args()
    compileall.compile_dir(str(ROOT / "src"), quiet=1)
    env_note = " (PYTHONDONTWRITEBYTECODE set: compiled first)" if os.environ.get("PYTHONDONTWRITEBYTECODE") else ""
    print(f"start-up, CPU seconds of a whole process, {args.rounds} interleaved pairs{env_note}")
    print(f"{'command':<26} {'CPU s min / median / max':<28} {'× import yaml min / median / max'}")
    cpu_of(REFERENCE)  # warm the page cache
    every_ref: list[float] = []
    for name, argv in COMMANDS.items():
        cpu_of(PROGRAM + argv)
        ref, got = [], []
        for _ in range(args.rounds):
            ref.append(cpu_of(REFERENCE))
            got.append(cpu_of(PROGRAM + argv))
        every_ref += ref
        ratios = [g / r for g, r in zip(got, ref, strict=True) if r > 0]
        print(f"{name:<26} {spread(got):<28} {spread(ratios, '{:.1f}') if ratios else 'n/a'}")
    label = 'python -c "import yaml"'
    print(f"{label:<26} {spread(every_ref)}")


if __name__ == "__main__":
    main()
