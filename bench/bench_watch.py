"""Memory of `ckpt-doctor watch` over a long run: 1,000 TrainJobs that keep changing.

The fake API server (tests/fakeapi, in this process) serves N TrainJobs of the live scenario (2 pods each)
over 10 namespaces. `ckpt-doctor watch -A` runs as a subprocess. A changer thread touches a random
TrainJob's pod (a new annotation: a MODIFIED pod event) or its events (a repeated event's count goes up)
CHANGES times a second; every few minutes the server forgets its watch history and ends every watch
(the watcher must list again on 410). Every 10 s the watcher's resident memory (VmRSS of /proc) is
sampled with what it reports on /metrics (TrainJobs diagnosed, pending, relists).

Prints the samples, then min/median/max RSS for each fifth of the run (after the first diagnosis of every
TrainJob) and the spread over its second half: flat memory means no growth there beyond noise (the heap
grows during the first minutes, to the working set of the largest re-diagnosis storm, then stays).

    .venv/bin/python bench/bench_watch.py [--jobs 1000] [--minutes 10] [--changes 20] [--compact-every 180]
"""

from __future__ import annotations

import argparse
import os
import random
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.fakeapi.server import FakeKube  # noqa: E402
from tests.fleet.cluster import crowd  # noqa: E402
from tests.live.scenario import pod_name  # noqa: E402


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def scrape(port: int) -> dict[str, float]:
    from prometheus_client.parser import text_string_to_metric_families

    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as r:
        text = r.read().decode()
    out: dict[str, float] = {}
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            if s.name in ("ckpt_doctor_scans_total", "ckpt_doctor_pending_trainjobs", "ckpt_doctor_trainjobs"):
                out[s.name] = s.value
            elif s.name == "ckpt_doctor_watch_relists_total":
                out["relists"] = out.get("relists", 0) + s.value
            elif s.name == "ckpt_doctor_trainjob_attempt":
                out["diagnosed"] = out.get("diagnosed", 0) + 1
    return out


def changer(kube: FakeKube, jobs: list[tuple[str, str]], rate: float, stop: threading.Event) -> list[int]:
    done = [0]

    def run() -> None:
        rng = random.Random(15)
        tick = 0
        while not stop.is_set():
            ns, name = rng.choice(jobs)
            tick += 1
            if rng.random() < 0.6:
                pod = kube.get("pods", ns, pod_name(name, rng.randrange(2), 1))
                if pod is not None:
                    pod["metadata"].setdefault("annotations", {})["bench/tick"] = str(tick)
                    kube.update(pod)
            else:
                ev = kube.get("events", ns, f"{pod_name(name, 0, 1)}.started")
                if ev is not None:
                    ev["count"] = int(ev.get("count") or 1) + 1
                    kube.update(ev)
            done[0] += 1
            stop.wait(1.0 / rate)

    threading.Thread(target=run, daemon=True, name="bench-changer").start()
    return done


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--jobs", type=int, default=1000)
    ap.add_argument("--namespaces", type=int, default=10)
    ap.add_argument("--minutes", type=float, default=10)
    ap.add_argument("--changes", type=float, default=20, help="changes per second")
    ap.add_argument("--compact-every", type=float, default=180, help="seconds between forced 410s")
    ap.add_argument("--every", type=float, default=10, help="seconds between samples")
    args = ap.parse_args()
    with FakeKube() as kube:
        t = time.perf_counter()
        jobs = [j for j in crowd(kube, args.jobs, args.namespaces, pods=2)]
        print(f"served {len(jobs)} TrainJobs (+{args.namespaces} neighbours) in {args.namespaces} namespaces "
              f"({time.perf_counter() - t:.1f} s to load)", flush=True)  # fmt: skip
        kc = kube.kubeconfig(Path(tempfile.mkdtemp()) / "kc", namespace="fleet-0")
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
        log = open(Path(tempfile.mkdtemp()) / "watch.jsonl", "w")
        proc = subprocess.Popen(
            [sys.executable, "-m", "ckpt_doctor", "watch", "-A", "--listen", f"127.0.0.1:{port}", "--kubeconfig",
             str(kc), "--debounce", "5", "--max-delay", "60", "--log-level", "warning"],
            env=env, stdout=subprocess.DEVNULL, stderr=log,
        )  # fmt: skip
        stop = threading.Event()
        samples: list[tuple[float, float, dict[str, float]]] = []
        try:
            start = time.monotonic()
            while True:  # the first diagnosis of every TrainJob
                time.sleep(2)
                try:
                    m = scrape(port)
                except OSError:
                    continue
                if m.get("diagnosed", 0) >= m.get("ckpt_doctor_trainjobs", 1e9):
                    break
            warm = time.monotonic() - start
            print(f"every TrainJob diagnosed once after {warm:.0f} s; RSS {rss_mib(proc.pid):.0f} MiB; "
                  f"now {args.changes:g} changes/s for {args.minutes:g} min", flush=True)  # fmt: skip
            done = changer(kube, jobs, args.changes, stop)
            t0 = last_compact = time.monotonic()
            while (now := time.monotonic()) - t0 < args.minutes * 60:
                time.sleep(args.every)
                if args.compact_every and now - last_compact >= args.compact_every:
                    kube.compact()
                    kube.end_watches()
                    last_compact = now
                m = scrape(port)
                rss = rss_mib(proc.pid)
                samples.append((now - t0, rss, m))
                print(f"t={now - t0:6.0f}s rss={rss:7.1f} MiB scans={m.get('ckpt_doctor_scans_total', 0):7.0f} "
                      f"pending={m.get('ckpt_doctor_pending_trainjobs', 0):5.0f} relists={m.get('relists', 0):3.0f} "
                      f"changes={done[0]}", flush=True)  # fmt: skip
        finally:
            stop.set()
            proc.send_signal(signal.SIGTERM)
            rc = proc.wait(timeout=60)
            log.close()
        print(f"watcher exit code {rc}; fake server errors: {len(kube.errors)}")
    n = max(1, len(samples) // 5)
    fifths = [samples[i * n : (i + 1) * n] or samples[-1:] for i in range(5)]
    for i, part in enumerate(fifths):
        rss = [r for _, r, _ in part]
        print(f"RSS {i * 20:3d}-{(i + 1) * 20:3d}% of the run: min {min(rss):.1f} median {statistics.median(rss):.1f} "
              f"max {max(rss):.1f} MiB")  # fmt: skip
    half = [r for _, r, _ in samples[len(samples) // 2 :]]
    print(f"second half: {min(half):.1f} to {max(half):.1f} MiB ({max(half) - min(half):+.1f}); whole run "
          f"{min(r for _, r, _ in samples):.1f} to {max(r for _, r, _ in samples):.1f} MiB over "
          f"{samples[-1][0] / 60:.1f} min; scans {samples[-1][2].get('ckpt_doctor_scans_total', 0):.0f}")  # fmt: skip

if __name__ == "__main__":
    main()
