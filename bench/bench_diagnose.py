"""Benchmark `ckpt-doctor diagnose --bundle` on a large incident (issue 2).

512 trainer pods × 3 attempts (1,536 pods, all kept by a recorder), 20,000 events, and N MB of
realistic logs (tqdm bars with carriage returns, loss dicts, saves, a resume line), written
once per size. Reports wall time and peak RSS of the diagnose process for each log size, so
the cost can be compared between 200 MB and 2 GB of logs: past the head and tail windows it
should not grow with log bytes.

    python bench/bench_diagnose.py                  # 200 MB and 2048 MB
    python bench/bench_diagnose.py --sizes 50 --keep /tmp/bench
    python bench/bench_diagnose.py --grep           # 1,024 pods: diagnose against grep, interleaved

`--grep` builds 1,024 trainer pods (512 x 2 attempts, 512 KB of log each), then alternates a
`diagnose` run with what a person would run by hand over the same windows: the first and last
128 KiB of every log (`head -c`, `tail -c`) piped into one `grep -F -i -c -f keywords`, where the
keywords are every signature's literal keywords. It prints both timings and the ratio
diagnose/grep (min, median, max over the pairs).
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.scenario import Attempt, Scenario, tqdm

PODS, ATTEMPTS, EVENTS = 512, 3, 20_000
CK = "/mnt/ckpt/big-run"


def log_body(attempt: int, size: int) -> bytes:
    start = attempt * 300
    head = [f"[checkpoint] resuming from {CK}/checkpoint-{start}" if attempt else
            "[checkpoint] no prior checkpoint, starting fresh", "***** Running training *****"]
    step_line = "".join(tqdm(s, 100_000) for s in range(start, start + 40))
    loss = "{'loss': 1.8421, 'learning_rate': 1.9e-05, 'grad_norm': 0.71, 'epoch': 0.42}\n"
    filler = (step_line + "\n" + loss).encode()
    out = bytearray("\n".join(head).encode() + b"\n")
    save_every = max(1, (size // len(filler)) // 6)
    i = saved = 0
    while len(out) < size - 200:
        out += filler
        i += 1
        if i % save_every == 0 and saved < 5:  # five periodic saves 50 steps apart, whatever the size
            saved += 1
            out += f"[checkpoint] saved {CK}/checkpoint-{start + 50 * saved}\n".encode()
    out += f"[checkpoint] saved {CK}/checkpoint-{start + 300}\nRuntimeError: NCCL error\n".encode()
    return bytes(out)


def build(root: Path, total_log_mb: int) -> Path:
    s = Scenario(name="big-run", num_nodes=PODS)
    s.js_restarts = ATTEMPTS - 1
    s.attempts = [Attempt(a, f"gpu-node-{a}", None, pods=PODS, started=a * 60,
                          phase="Failed" if a < ATTEMPTS - 1 else "Running",
                          exit_code=1 if a < ATTEMPTS - 1 else None) for a in range(ATTEMPTS)]
    per_attempt = EVENTS // ATTEMPTS
    names = s.pod_names()
    for a in range(ATTEMPTS):
        for k in range(per_attempt):
            pod = names[a][k % PODS]
            reason, msg = [("Scheduled", f"Successfully assigned team-a/{pod} to gpu-node-{a}"),
                           ("Pulled", 'Container image "ghcr.io/example-org/sft-trainer:1.4.2" already present'),
                           ("Created", "Created container node"), ("Started", "Started container node"),
                           ("Killing", "Stopping container node")][k % 5]
            s.event("Pod", pod, reason, msg, a * 60 + k / 1000, etype="Normal")
    s.write(root)
    per_log = total_log_mb * 1024 * 1024 // (PODS * ATTEMPTS)
    bodies = [log_body(a, per_log) for a in range(ATTEMPTS)]
    for a in range(ATTEMPTS):
        for pod in names[a]:
            d = root / "logs" / pod
            d.mkdir(parents=True, exist_ok=True)
            (d / "node.log").write_bytes(bodies[a])
    return root


def run_diagnose(bundle: Path) -> tuple[float, float, dict]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    t = time.perf_counter()
    out = subprocess.run([sys.executable, "-m", "ckpt_doctor", "diagnose", "--bundle", str(bundle), "-o", "json"],
                         capture_output=True, text=True)
    wall = time.perf_counter() - t
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    if out.returncode not in (0, 1):
        raise SystemExit(out.stderr)
    return wall, max(peak, before) / 1024, json.loads(out.stdout)


def grep_keywords(path: Path) -> Path:
    from ckpt_doctor.facts.logs import load_signatures

    words = sorted({w for s in load_signatures() for w in (s.keywords or (s.keyword,))})
    path.write_text("\n".join(words) + "\n", encoding="utf-8")
    return path


def run_grep(bundle: Path, keywords: Path, head: int, tail: int) -> float:
    files = bundle / "grep-files.txt"
    if not files.exists():
        files.write_text("\n".join(str(p) for p in sorted((bundle / "logs").rglob("*.log"))) + "\n")
    script = (
        f"xargs -a {files} sh -c 'for f; do head -c {head} \"$f\"; tail -c {tail} \"$f\"; done' sh"
        f" | LC_ALL=C grep -F -i -c -f {keywords}"
    )
    t = time.perf_counter()
    out = subprocess.run(["bash", "-o", "pipefail", "-c", script], capture_output=True, text=True)
    wall = time.perf_counter() - t
    if out.returncode not in (0, 1):
        raise SystemExit(out.stderr)
    return wall


def compare_grep(base: Path, repeat: int, pods: int) -> None:
    global PODS, ATTEMPTS
    from ckpt_doctor.facts.logs import HEAD_BYTES, TAIL_BYTES

    PODS, ATTEMPTS = pods // 2, 2
    d = base / f"grep-{pods}pods"
    if not (d / "bundle.yaml").exists():
        t = time.perf_counter()
        build(d, pods * 512 // 1024)  # 512 KB per log: both windows are read, the middle is not
        print(f"built {d} ({pods} trainer pods) in {time.perf_counter() - t:.1f}s", flush=True)
    kw = grep_keywords(base / "keywords.txt")
    n = len(kw.read_text().split("\n")) - 1
    run_diagnose(d)  # warm the page cache and the interpreter's caches for both
    run_grep(d, kw, HEAD_BYTES, TAIL_BYTES)
    diag, grep = [], []
    for _ in range(repeat):
        diag.append(run_diagnose(d)[0])
        grep.append(run_grep(d, kw, HEAD_BYTES, TAIL_BYTES))
    ratios = [a / b for a, b in zip(diag, grep, strict=True)]

    def stats(xs: list[float], unit: str = "s") -> str:
        return f"min {min(xs):6.2f}{unit}  median {statistics.median(xs):6.2f}{unit}  max {max(xs):6.2f}{unit}"

    print(f"\n{pods} trainer pods, head {HEAD_BYTES // 1024} KiB + tail {TAIL_BYTES // 1024} KiB of each log, "
          f"{n} keywords, {repeat} interleaved pairs")
    print(f"  diagnose       {stats(diag)}")
    print(f"  head|tail|grep {stats(grep)}")
    print(f"  ratio          {stats(ratios, 'x')}   (goal <= 2x)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", type=int, nargs="+", default=[200, 2048], help="total log MB per run")
    ap.add_argument("--keep", type=Path, help="write bundles here and keep them")
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--grep", action="store_true", help="compare diagnose with grep over the same windows")
    ap.add_argument("--pods", type=int, default=1024, help="trainer pods for --grep")
    args = ap.parse_args()
    base = args.keep or Path(tempfile.mkdtemp(prefix="ckpt-bench-"))
    if args.grep:
        try:
            compare_grep(base, max(args.repeat, 5), args.pods)
        finally:
            if not args.keep:
                shutil.rmtree(base, ignore_errors=True)
        return
    rows = []
    try:
        for mb in args.sizes:
            d = base / f"logs-{mb}mb"
            if not (d / "bundle.yaml").exists():
                t = time.perf_counter()
                build(d, mb)
                print(f"built {d} ({mb} MB of logs) in {time.perf_counter() - t:.1f}s", flush=True)
            best = None
            for _ in range(args.repeat):
                wall, rss, doc = run_diagnose(d)
                best = min(best or wall, wall)
            rows.append((mb, best, rss, doc["summary"]))
    finally:
        if not args.keep:
            shutil.rmtree(base, ignore_errors=True)
    print(f"\n{PODS} trainer pods x {ATTEMPTS} attempts, {EVENTS} events")
    print(f"{'logs':>8} {'wall (best)':>12} {'peak RSS':>10}  summary")
    for mb, wall, rss, summ in rows:
        print(f"{mb:>6}MB {wall:>11.2f}s {rss:>8.0f}MB  {summ}")
    if len(rows) >= 2:
        (a_mb, a_w, *_), (b_mb, b_w, *_) = rows[0], rows[-1]
        print(f"\nlog bytes x{b_mb / a_mb:.1f} -> wall time x{b_w / a_w:.2f}")


if __name__ == "__main__":
    main()
