"""Benchmark what the bundle's format and its unrelated objects cost `diagnose --bundle` (issue 23).

Four bundles of one TrainJob (8 trainer pods, one JobSet restart, a log per pod), interleaved in rounds
whose order turns every round:

- `json`: 80,000 events about its pods as `kubectl get events -o json` writes them (`events.json`);
- `yaml`: the same events as `kubectl get events -o yaml` (`events.yaml`, one `kind: List` document);
- `small`: no events file at all;
- `configmaps`: `small` plus a namespace dump of 40,000 ConfigMaps that no pod mounts (`configmaps-all.yaml`).

Printed per bundle: wall and CPU seconds and the peak RSS of the diagnose process (min / median / max), then
the ratios taken round by round: yaml / json (goal <= 2x, and the yaml peak <= 400 MiB) and configmaps - small
in seconds (goal: the 40k ConfigMaps add <= 1 s).

    python bench/bench_formats.py [--rounds 5] [--events 80000] [--configmaps 40000] [--keep DIR]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import multiprocessing
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.scenario import Attempt, Scenario

PODS = 8
NAMES = ("json", "yaml", "small", "configmaps")


def _event(k: int, pod: str) -> dict:
    reason, msg = [("Scheduled", f"Successfully assigned team-a/{pod} to gpu-node-1"),
                   ("Pulled", 'Container image "ghcr.io/example-org/sft-trainer:1.4.2" already present on machine'),
                   ("Created", "Created container node"), ("Started", "Started container node"),
                   ("Killing", "Stopping container node")][k % 5]  # fmt: skip
    t = f"2026-11-30T{8 + (k // 3600) % 12:02d}:{(k // 60) % 60:02d}:{k % 60:02d}Z"
    uid = hashlib.md5(pod.encode()).hexdigest()
    return {
        "apiVersion": "v1", "count": 1, "eventTime": None, "firstTimestamp": t, "kind": "Event",
        "involvedObject": {"apiVersion": "v1", "fieldPath": "spec.containers{node}", "kind": "Pod", "name": pod,
                           "namespace": "team-a", "resourceVersion": str(1000 + k), "uid": uid},
        "lastTimestamp": t, "message": msg,
        "metadata": {"creationTimestamp": t, "name": f"{pod}.{k:016x}", "namespace": "team-a",
                     "resourceVersion": str(5000 + k), "uid": hashlib.md5(str(k).encode()).hexdigest()},
        "reason": reason, "reportingComponent": "kubelet", "reportingInstance": "gpu-node-1",
        "source": {"component": "kubelet", "host": "gpu-node-1"}, "type": "Normal",
    }  # fmt: skip


def _configmap(k: int) -> dict:
    return {
        "apiVersion": "v1", "kind": "ConfigMap",
        "data": {"app.properties": f"service.name=svc-{k}\nservice.port={8000 + k % 1000}\nlog.level=info\n",
                 "owner": f"team-{k % 40}"},
        "metadata": {"creationTimestamp": "2026-11-29T10:00:00Z", "name": f"unrelated-{k:05d}",
                     "namespace": "team-a", "resourceVersion": str(90000 + k),
                     "uid": hashlib.md5(f"cm{k}".encode()).hexdigest()},
    }  # fmt: skip


def _list(items: list[dict]) -> dict:
    return {"apiVersion": "v1", "items": items, "kind": "List", "metadata": {"resourceVersion": ""}}


def _dump_yaml(path: Path, doc: dict) -> None:
    import yaml  # PyYAML's block style is the shape `kubectl -o yaml` writes

    with path.open("w") as f:
        yaml.dump(doc, f, Dumper=getattr(yaml, "CSafeDumper", yaml.SafeDumper), default_flow_style=False, width=4096)


def build(base: Path, events: int, configmaps: int) -> None:
    s = Scenario(name="big-run", num_nodes=PODS)
    s.js_restarts = 1
    s.attempts = [Attempt(0, "gpu-node-0", None, pods=PODS, started=0, phase="Failed", exit_code=1),
                  Attempt(1, "gpu-node-1", None, pods=PODS, started=60)]  # fmt: skip
    small = base / "small"
    s.write(small)
    (small / "events.json").unlink(missing_ok=True)
    names = [p for ps in s.pod_names() for p in ps]
    for pod in names:
        (small / "logs" / pod).mkdir(parents=True, exist_ok=True)
        (small / "logs" / pod / "node.log").write_text(
            "[checkpoint] no prior checkpoint, starting fresh\n 10%|#| 10/100 [00:10<01:30, 1.0it/s]\n"
        )
    evs = _list([_event(k, names[k % len(names)]) for k in range(events)])
    for name in ("json", "yaml", "configmaps"):
        shutil.copytree(small, base / name)
    (base / "json" / "events.json").write_text(json.dumps(evs, indent=4) + "\n")
    _dump_yaml(base / "yaml" / "events.yaml", evs)
    _dump_yaml(base / "configmaps" / "configmaps-all.yaml", _list([_configmap(k) for k in range(configmaps)]))


def run(bundle: Path) -> tuple[float, float, float, dict]:
    """Wall s, CPU s, peak RSS MiB and the summary of one `diagnose -o json`."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        t = time.perf_counter()
        proc = subprocess.Popen([sys.executable, "-m", "ckpt_doctor", "diagnose", "--bundle", str(bundle), "-o",
                                 "json"], stdout=out, stderr=err)  # fmt: skip
        _, status, ru = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t
        if os.waitstatus_to_exitcode(status) not in (0, 1):
            err.seek(0)
            raise SystemExit(err.read().decode(errors="replace"))
        out.seek(0)
        return wall, ru.ru_utime + ru.ru_stime, ru.ru_maxrss / 1024, json.loads(out.read())["summary"]


def spread(xs: list[float], fmt: str = "{:.2f}") -> str:
    return " / ".join(fmt.format(x) for x in (min(xs), statistics.median(xs), max(xs)))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--events", type=int, default=80_000)
    ap.add_argument("--configmaps", type=int, default=40_000)
    ap.add_argument("--keep", type=Path, help="write the bundles here and keep them (built once)")
    args = ap.parse_args()
    base = args.keep or Path(tempfile.mkdtemp(prefix="ckpt-bench-formats-"))
    try:
        if not (base / "configmaps").exists():
            t = time.perf_counter()
            # in a process of its own, so this one stays small (a child's peak RSS counts what it forked from)
            p = multiprocessing.get_context("spawn").Process(target=build, args=(base, args.events, args.configmaps))
            p.start()
            p.join()
            if p.exitcode:
                raise SystemExit("building the bundles failed")
            print(f"built {base} in {time.perf_counter() - t:.0f} s", flush=True)
        for name in NAMES:
            run(base / name)  # warm the page cache
        got: dict[str, list[tuple[float, float, float]]] = {n: [] for n in NAMES}
        summary: dict[str, dict] = {}
        for r in range(args.rounds):
            order = NAMES[r % len(NAMES):] + NAMES[: r % len(NAMES)]
            for name in order:
                wall, cpu, rss, summary[name] = run(base / name)
                got[name].append((wall, cpu, rss))
            line = ", ".join(f"{n} {got[n][-1][0]:.2f}s" for n in order)
            print(f"  round {r + 1}/{args.rounds}: {line}", flush=True)
        print(f"\ndiagnose --bundle, {args.rounds} interleaved rounds (min / median / max)")
        print(f"{'bundle':<11} {'wall s':<20} {'CPU s':<20} {'peak RSS MiB':<20} summary")
        for name in NAMES:
            w, c, m = zip(*got[name], strict=True)
            print(f"{name:<11} {spread(list(w)):<20} {spread(list(c)):<20} {spread(list(m), '{:.0f}'):<20} "
                  f"{summary[name]}")  # fmt: skip
        ratio = [y[0] / j[0] for y, j in zip(got["yaml"], got["json"], strict=True)]
        cpu_ratio = [y[1] / j[1] for y, j in zip(got["yaml"], got["json"], strict=True)]
        added = [c[0] - s[0] for c, s in zip(got["configmaps"], got["small"], strict=True)]
        print(f"\n{args.events} events, yaml / json: wall {spread(ratio)}x, CPU {spread(cpu_ratio)}x (goal <= 2x)")
        print(f"{args.configmaps} unrelated ConfigMaps add {spread(added)} s of wall time (goal <= 1 s)")
    finally:
        if not args.keep:
            shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
