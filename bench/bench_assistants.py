"""How long the assistant faces take to start (issue 24): `ckpt-doctor mcp` until it answers an MCP `initialize`
(spoken to by hand over its stdin, as a client would), and `ckpt-doctor analyzer` until it says where it serves.

Each round runs the two faces and the reference `python -c "import yaml"` as new processes, interleaved, and
takes for each: wall seconds to ready, and CPU seconds (user + system) of the whole process from start until it
stopped after being ready (the kernel's accounting of the finished child). Printed as min / median / max. The
SDK's own import is timed the same way (`python -c "import mcp.server"`), since it is most of the MCP figure.

    python bench/bench_assistants.py              # 7 rounds
    python bench/bench_assistants.py --rounds 15
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import resource
import signal
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PROGRAM = [sys.executable, "-m", "ckpt_doctor"]
INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "bench", "version": "0"}},
}


def _children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def mcp_start() -> float:
    """Seconds until the server's answer to initialize; the server is then stopped by closing its stdin."""
    t0 = time.monotonic()
    p = subprocess.Popen([*PROGRAM, "mcp"], cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL, text=True)  # fmt: skip
    assert p.stdin is not None and p.stdout is not None
    p.stdin.write(json.dumps(INIT) + "\n")
    p.stdin.flush()
    line = p.stdout.readline()
    ready = time.monotonic() - t0
    assert '"result"' in line, line
    p.stdin.close()
    p.wait(timeout=60)
    return ready


def analyzer_start() -> float:
    """Seconds until the analyzer says where it serves; it is then stopped with SIGTERM."""
    t0 = time.monotonic()
    p = subprocess.Popen([*PROGRAM, "analyzer", "--listen", "127.0.0.1:0", "--kubeconfig", os.devnull], cwd=ROOT,
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)  # fmt: skip
    assert p.stderr is not None
    line = p.stderr.readline()
    ready = time.monotonic() - t0
    assert "serving" in line, line
    p.send_signal(signal.SIGTERM)
    p.stderr.read()
    p.wait(timeout=60)
    return ready


def one_shot(argv: list[str]) -> Callable[[], float]:
    def run() -> float:
        t0 = time.monotonic()
        subprocess.run(argv, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
        return time.monotonic() - t0

    return run


def spread(xs: list[float]) -> str:
    return " / ".join(f"{v:.3f}" for v in (min(xs), statistics.median(xs), max(xs)))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=7)
    args = ap.parse_args()
    compileall.compile_dir(ROOT / "src", quiet=1)
    cases: dict[str, Callable[[], float]] = {
        "reference: python -c 'import yaml'": one_shot([sys.executable, "-c", "import yaml"]),
        "ckpt-doctor --help": one_shot([*PROGRAM, "--help"]),
        "python -c 'import mcp.server' (the SDK)": one_shot([sys.executable, "-c", "import mcp.server"]),
        "ckpt-doctor mcp: initialize answered": mcp_start,
        "ckpt-doctor analyzer: serving": analyzer_start,
    }
    wall: dict[str, list[float]] = {k: [] for k in cases}
    cpu: dict[str, list[float]] = {k: [] for k in cases}
    for _ in range(args.rounds):
        for name, run in cases.items():
            before = _children_cpu()
            wall[name].append(run())
            cpu[name].append(_children_cpu() - before)
    print(f"{args.rounds} rounds, interleaved; seconds as min / median / max")
    print(f"{'':44} {'wall to ready':>24}   {'CPU of the process':>24}")
    for name in cases:
        print(f"{name:44} {spread(wall[name]):>24}   {spread(cpu[name]):>24}")


if __name__ == "__main__":
    main()
