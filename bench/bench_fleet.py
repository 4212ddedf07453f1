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

The latency floor (issue 23): the same requests, nothing else. `--serve DIR` serves the cluster in the
foreground (DIR/kc its kubeconfig), runs one fleet scan and writes the requests it made to DIR/requests.json;
`--floor DIR` is one process that makes exactly those requests over keep-alive connections, `--in-flight`
(16, the scan's limit: 2 × `--concurrency` 8 log reads at once) at a time, reading every body. Time the two whole
processes in interleaved pairs with any A/B timer (e.g. hyperfine, or `/usr/bin/time -v` in turns):

    .venv/bin/python bench/bench_fleet.py --serve /tmp/fleet &   # wait for /tmp/fleet/requests.json
    ckpt-doctor diagnose -A --kubeconfig /tmp/fleet/kc -o json -q      # A
    .venv/bin/python bench/bench_fleet.py --floor /tmp/fleet            # B, the floor
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


def serve(kube: FakeKube, out: Path) -> None:
    """Write DIR/kc, make one fleet scan, keep its requests in DIR/requests.json, then serve until killed."""
    out.mkdir(parents=True, exist_ok=True)
    kc = kube.kubeconfig(out / "kc", namespace="fleet-0")
    fleet(kube, kc)
    reqs = [[r.method, r.path, r.query] for r in kube.requests]
    (out / "requests.tmp").write_text(json.dumps(reqs))
    os.replace(out / "requests.tmp", out / "requests.json")
    print(f"serving at {kube.url}: {len(reqs)} requests in {out / 'requests.json'}", flush=True)
    while True:
        time.sleep(3600)


def floor(where: Path, in_flight: int) -> None:
    """Make the requests of DIR/requests.json, `in_flight` at a time, each connection kept alive."""
    import http.client
    import threading
    from urllib.parse import urlencode, urlsplit

    reqs = json.loads((where / "requests.json").read_text())
    server = next(line.split("server:", 1)[1].strip() for line in (where / "kc").read_text().splitlines()
                  if "server:" in line)  # fmt: skip
    host = urlsplit(server)
    todo = iter(reqs)
    lock = threading.Lock()
    got = [0]

    def worker() -> None:
        conn = http.client.HTTPConnection(host.hostname, host.port)
        while True:
            with lock:
                r = next(todo, None)
            if r is None:
                break
            method, path, query = r
            conn.request(method, path + ("?" + urlencode(query) if query else ""),
                         headers={"Authorization": "Bearer fake-token", "Accept": "application/json"})  # fmt: skip
            n = len(conn.getresponse().read())
            with lock:
                got[0] += n
        conn.close()

    threads = [threading.Thread(target=worker) for _ in range(in_flight)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    print(f"{len(reqs)} requests, {got[0]} bytes")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--serve", type=Path, metavar="DIR", help="serve the cluster; write DIR/kc and DIR/requests.json")
    ap.add_argument("--floor", type=Path, metavar="DIR", help="make the requests of DIR/requests.json and exit")
    ap.add_argument("--in-flight", type=int, default=16, help="requests in flight for --floor (default 16)")
    ap.add_argument("--jobs", type=int, default=500)
    ap.add_argument("--pods", type=int, default=8)
    ap.add_argument("--namespaces", type=int, default=5)
    ap.add_argument("--latency-ms", type=int, default=20)
    ap.add_argument("--pairs", type=int, default=3)
    ap.add_argument("--sample", type=int, default=10)
    args = ap.parse_args()
    if args.floor:
        floor(args.floor, args.in_flight)
        return
    with FakeKube(latency_ms=args.latency_ms) as kube:
        t = time.perf_counter()
        jobs = crowd(kube, args.jobs, args.namespaces, args.pods)
        print(f"served {len(jobs)} TrainJobs x {args.pods} pods in {args.namespaces} namespaces "
              f"({time.perf_counter() - t:.1f} s to load), latency {args.latency_ms} ms")  # fmt: skip
        if args.serve:
            serve(kube, args.serve)
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
