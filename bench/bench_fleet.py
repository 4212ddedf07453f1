"""Benchmark the fleet scan (`diagnose -A`) against diagnosing the same TrainJobs one by one.

The fake API server (tests/fakeapi) serves N TrainJobs of the live scenario (tests/live/scenario.py,
8 pods each, one of them restarted in place) spread over a few namespaces, with 20 ms of latency on
every request. Interleaved pairs:

- A: `ckpt-doctor diagnose -A -o json` (one fleet scan, in a process of its own);
- B: `ckpt-doctor diagnose NS/NAME -o json` for a sample of the TrainJobs, one after the other in one
  process (no start-up cost per job), scaled to N: what a script looping over `kubectl get tj` does,
  minus its interpreter start-ups.

The fake server runs in this process, each client in its own, so they do not share an interpreter lock.

Prints min/median/max wall time of each, the requests each made (logs apart: one per container
instance, the same for both), and the ratio. Goal (issue 15): requests of A grow with namespaces and
kinds, not with TrainJobs.

    .venv/bin/python bench/bench_fleet.py [--jobs 500] [--pods 8] [--namespaces 5] [--latency-ms 20]
        [--pairs 3] [--sample 10]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.fakeapi.server import FakeKube  # noqa: E402
from tests.fleet.cluster import crowd  # noqa: E402


def _split(kube: FakeKube) -> tuple[int, int]:
    logs = sum(1 for r in kube.requests if r.path.endswith("/log"))
    return len(kube.requests) - logs, logs


ENV = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "NO_COLOR": "1"}
LOOP = """
import sys, json
from ckpt_doctor.cli import main
kc, targets = sys.argv[1], json.loads(sys.argv[2])
for t in targets:
    rc = main(["diagnose", t, "--kubeconfig", kc, "-o", "json", "-q"])
    assert rc in (0, 1), rc
"""


def fleet(kube: FakeKube, kc: Path) -> tuple[float, int, int, int]:
    kube.reset_requests()
    t = time.perf_counter()
    got = subprocess.run(
        [sys.executable, "-m", "ckpt_doctor", "diagnose", "-A", "--kubeconfig", str(kc), "-o", "json", "-q"],
        capture_output=True, text=True, env=ENV,
    )  # fmt: skip
    dt = time.perf_counter() - t
    assert got.returncode in (0, 1), got.stderr[-2000:]
    n = len(json.loads(got.stdout)["diagnoses"])
    other, logs = _split(kube)
    return dt, other, logs, n


def one_by_one(kube: FakeKube, kc: Path, jobs: list[tuple[str, str]], sample: int) -> tuple[float, int, int]:
    step = max(1, len(jobs) // sample)
    picked = jobs[::step][:sample]
    kube.reset_requests()
    t = time.perf_counter()
    got = subprocess.run(
        [sys.executable, "-c", LOOP, str(kc), json.dumps([f"{ns}/{name}" for ns, name in picked])],
        capture_output=True, text=True, env=ENV,
    )  # fmt: skip
    dt = time.perf_counter() - t
    assert got.returncode == 0, got.stderr[-2000:]
    other, logs = _split(kube)
    scale = len(jobs) / len(picked)
    return dt * scale, int(other * scale), int(logs * scale)


def stats(xs: list[float]) -> str:
    return f"min {min(xs):.2f}  median {statistics.median(xs):.2f}  max {max(xs):.2f}"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--jobs", type=int, default=500)
    ap.add_argument("--pods", type=int, default=8)
    ap.add_argument("--namespaces", type=int, default=5)
    ap.add_argument("--latency-ms", type=int, default=20)
    ap.add_argument("--pairs", type=int, default=3)
    ap.add_argument("--sample", type=int, default=10)
    args = ap.parse_args()
    with FakeKube(latency_ms=args.latency_ms) as kube:
        t = time.perf_counter()
        jobs = crowd(kube, args.jobs, args.namespaces, args.pods)
        print(f"served {len(jobs)} TrainJobs x {args.pods} pods in {args.namespaces} namespaces "
              f"({time.perf_counter() - t:.1f} s to load), latency {args.latency_ms} ms")  # fmt: skip
        kc = kube.kubeconfig(Path(tempfile.mkdtemp()) / "kc", namespace="fleet-0")
        a_times, b_times = [], []
        a_req = b_req = (0, 0)
        diagnosed = 0
        for i in range(args.pairs):
            dt, other, logs, diagnosed = fleet(kube, kc)
            a_times.append(dt)
            a_req = (other, logs)
            bt, bother, blogs = one_by_one(kube, kc, jobs, args.sample)
            b_times.append(bt)
            b_req = (bother, blogs)
            print(f"pair {i + 1}: fleet {dt:.2f} s, one by one {bt:.2f} s (scaled from {args.sample})")
        assert kube.errors == [], kube.errors
    print()
    print(f"A fleet scan (diagnose -A), {diagnosed} TrainJobs diagnosed: {stats(a_times)} s")
    print(f"    requests: {a_req[0]} lists/gets + {a_req[1]} log reads")
    print(f"B diagnose NS/NAME one by one, scaled to {len(jobs)}: {stats(b_times)} s")
    print(f"    requests: ~{b_req[0]} lists/gets + ~{b_req[1]} log reads")
    print(f"A/B median: {statistics.median(a_times) / statistics.median(b_times):.2f}")


if __name__ == "__main__":
    main()
