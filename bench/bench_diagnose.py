"""Benchmark `ckpt-doctor diagnose --bundle` against the size of the incident (issues 2 and 14).

Each bundle is a TrainJob after two JobSet restarts: P trainer pods x 3 attempts (all kept by a
recorder), 20,000 events, and M MB of realistic logs in all (tqdm bars with carriage returns, loss
dicts, saves, a resume line). The default points are 256, 512 and 1,024 pods with 100, 200 and 400
MB of logs (as many bytes per pod), and 512 pods with 2,048 MB: the first three say how the time
grows with pods, the two at 512 pods how it grows with log bytes (it should not: past the head and
tail windows no byte is read).

The runs are interleaved: each round runs every point once, in an order that turns every round, and
each point's time is divided by the first point's time of the same round. Printed per point: wall
seconds and that ratio as min / median / max over the rounds, and the median peak RSS of the
diagnose process (its own, from wait4).

    python bench/bench_diagnose.py                            # the default points, 5 rounds
    python bench/bench_diagnose.py --points 512:200 512:2048 --rounds 3 --keep /tmp/bench
    python bench/bench_diagnose.py --grep                     # 1,024 pods: diagnose against grep
    python bench/bench_diagnose.py --points 1024:400 4096:1600 --rounds 3   # 4,096 pods per attempt
    python bench/bench_diagnose.py --crashloop 100 400        # a crash loop of 400 attempts

`--grep` builds 1,024 trainer pods (512 x 2 attempts, 512 KB of log each), then alternates a
`diagnose` run with what a person would run by hand over the same windows: the first and last
128 KiB of every log (`head -c`, `tail -c`) piped into one `grep -F -i -c -f keywords`, where the
keywords are every signature's literal keywords; and the floor of that work in one process (the same
windows read by one Python process and run through the same re2 keyword Set the scanner uses: no process
start-up per log, which is most of what `head | tail | grep` spends). It prints the three timings and the
ratios of diagnose to each (min, median, max over the rounds).
"""

from __future__ import annotations

import argparse
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


def build_crashloop(root: Path, attempts: int) -> Path:
    """A crash loop: the JobSet restarted `attempts - 1` times, one trainer pod each; the pods of the earlier
    attempts are gone but a recorder kept their logs (each resumes from the last save and crashes)."""
    s = Scenario(name="crash-loop", num_nodes=1)
    s.js_restarts = attempts - 1
    s.attempts = [Attempt(a, f"gpu-node-{a % 7}", None, pods=1, started=a * 3, kept=a == attempts - 1,
                          phase="Running" if a == attempts - 1 else "Failed",
                          exit_code=None if a == attempts - 1 else 1) for a in range(attempts)]  # fmt: skip
    s.write(root)
    for a, names in enumerate(s.pod_names()):
        d = root / "logs" / names[0]
        d.mkdir(parents=True, exist_ok=True)
        (d / "node.log").write_bytes(log_body(a, 64 * 1024))
    return root


def compare_crashloop(base: Path, counts: list[int], rounds: int) -> None:
    """Attempts x4 should cost about x4: the timeline and the rules look attempts up in an index."""
    bundles = []
    for n in counts:
        d = base / f"crashloop-{n}"
        if not (d / "bundle.yaml").exists():
            build_crashloop(d, n)
        bundles.append(d)
        run_diagnose(d)
    wall: list[list[float]] = [[] for _ in counts]
    for r in range(rounds):
        order = list(range(len(counts)))
        order = order[r % len(order):] + order[: r % len(order)]
        for i in order:
            wall[i].append(run_diagnose(bundles[i])[0])
    ratio = [[w / w0 for w, w0 in zip(wall[i], wall[0], strict=True)] for i in range(len(counts))]

    def spread(xs: list[float]) -> str:
        return " / ".join(f"{x:.2f}" for x in (min(xs), statistics.median(xs), max(xs)))

    print(f"\ndiagnose --bundle, a crash loop of N attempts (one pod each), {rounds} interleaved rounds")
    for i, n in enumerate(counts):
        print(f"{n:>6} attempts   wall {spread(wall[i])} s   x the first {spread(ratio[i])}")


def run_diagnose(bundle: Path) -> tuple[float, float, dict]:
    """Wall seconds, peak RSS in MiB and the JSON report of one `diagnose` (the peak is the run's own as long
    as this process is smaller: Linux keeps a forked child's maximum across exec)."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        t = time.perf_counter()
        proc = subprocess.Popen(
            [sys.executable, "-m", "ckpt_doctor", "diagnose", "--bundle", str(bundle), "-o", "json"],
            stdout=out, stderr=err,
        )
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t
        proc.returncode = os.waitstatus_to_exitcode(status)
        if proc.returncode not in (0, 1):
            err.seek(0)
            raise SystemExit(err.read().decode(errors="replace"))
        out.seek(0)
        return wall, usage.ru_maxrss / 1024, json.loads(out.read())


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


# The physical floor of diagnose's log work, in one process: read the same head and tail windows of every log
# and run the same keyword set over them (one re2 Set, case-insensitive, block by block as the scanner does),
# counting the blocks with a hit. No process start-up per log, no parsing of the lines that hit.
FLOOR = r"""
import sys, re2
files, keywords, head, tail, block = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
opts = re2.Options()
opts.case_sensitive = False
kset = re2.Set.SearchSet(opts)
words = [w for w in open(keywords, encoding="utf-8").read().split("\n") if w]
for w in words:
    kset.Add(re2.escape(w))
kset.Compile()
over = max(len(w) for w in words) - 1
hits = 0
for path in open(files).read().split("\n"):
    if not path:
        continue
    with open(path, "rb") as f:
        windows = [f.read(head)]
        end = f.seek(0, 2)
        if end > head:
            f.seek(max(head, end - tail))
            windows.append(f.read(tail))
    for raw in windows:
        for a in range(0, max(len(raw), 1), block):
            if kset.Match(raw[a : a + block + over]):
                hits += 1
print(hits)
"""


def run_floor(bundle: Path, keywords: Path, head: int, tail: int) -> float:
    from ckpt_doctor.facts.logs import BLOCK

    files = bundle / "grep-files.txt"
    if not files.exists():
        files.write_text("\n".join(str(p) for p in sorted((bundle / "logs").rglob("*.log"))) + "\n")
    t = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", FLOOR, str(files), str(keywords), str(head), str(tail), str(BLOCK)],
                         capture_output=True, text=True)  # fmt: skip
    wall = time.perf_counter() - t
    if out.returncode:
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
    run_diagnose(d)  # warm the page cache and the interpreter's caches for all three
    run_grep(d, kw, HEAD_BYTES, TAIL_BYTES)
    run_floor(d, kw, HEAD_BYTES, TAIL_BYTES)
    diag, grep, floor = [], [], []
    for r in range(repeat):  # the order turns every round
        runs = [lambda: diag.append(run_diagnose(d)[0]), lambda: grep.append(run_grep(d, kw, HEAD_BYTES, TAIL_BYTES)),
                lambda: floor.append(run_floor(d, kw, HEAD_BYTES, TAIL_BYTES))]  # fmt: skip
        for go in runs[r % 3 :] + runs[: r % 3]:
            go()
    ratios = [a / b for a, b in zip(diag, grep, strict=True)]
    to_floor = [a / b for a, b in zip(diag, floor, strict=True)]

    def stats(xs: list[float], unit: str = "s") -> str:
        return f"min {min(xs):6.2f}{unit}  median {statistics.median(xs):6.2f}{unit}  max {max(xs):6.2f}{unit}"

    print(f"\n{pods} trainer pods, head {HEAD_BYTES // 1024} KiB + tail {TAIL_BYTES // 1024} KiB of each log, "
          f"{n} keywords, {repeat} interleaved pairs")
    print(f"  diagnose       {stats(diag)}")
    print(f"  head|tail|grep {stats(grep)}")
    print(f"  one process    {stats(floor)}   (the same windows, the same keyword set: the floor)")
    print(f"  ÷ grep         {stats(ratios, 'x')}")
    print(f"  ÷ one process  {stats(to_floor, 'x')}   (goal <= 4x)")


def _build_points(d: Path, pods: int, mb: int) -> None:
    global PODS
    PODS = pods
    build(d, mb)


def compare_sizes(base: Path, points: list[tuple[int, int]], rounds: int) -> None:
    bundles = []
    for pods, mb in points:
        d = base / f"{pods}pods-{mb}mb"
        if not (d / "bundle.yaml").exists():
            t = time.perf_counter()
            # in a process of its own: on Linux a child's peak RSS counts what it was forked from, so this
            # process must stay small for the diagnose runs' figures to be their own
            builder = multiprocessing.get_context("spawn").Process(target=_build_points, args=(d, pods, mb))
            builder.start()
            builder.join()
            if builder.exitcode:
                raise SystemExit(f"building {d} failed")
            took = time.perf_counter() - t
            print(f"built {d} ({pods} x {ATTEMPTS} pods, {mb} MB of logs) in {took:.1f}s", flush=True)
        bundles.append(d)
    for d in bundles:  # warm the page cache and the interpreter's caches
        run_diagnose(d)
    wall: list[list[float]] = [[] for _ in points]
    rss: list[list[float]] = [[] for _ in points]
    ratio: list[list[float]] = [[] for _ in points]
    summary: list[dict] = [{} for _ in points]
    for r in range(rounds):
        order = list(range(len(points)))
        order = order[r % len(order):] + order[: r % len(order)]  # each round starts one further
        this: dict[int, float] = {}
        for i in order:
            w, m, doc = run_diagnose(bundles[i])
            this[i] = w
            wall[i].append(w)
            rss[i].append(m)
            summary[i] = doc["summary"]
        for i in this:
            ratio[i].append(this[i] / this[0])
        print(f"  round {r + 1}/{rounds}: " + ", ".join(f"{points[i][0]}:{points[i][1]} {this[i]:.2f}s" for i in order),
              flush=True)

    def spread(xs: list[float], fmt: str) -> str:
        return " / ".join(fmt.format(x) for x in (min(xs), statistics.median(xs), max(xs)))

    p0, m0 = points[0]
    print(f"\ndiagnose --bundle, {ATTEMPTS} attempts of P trainer pods, {EVENTS} events, {rounds} interleaved rounds")
    head = f"x ({p0} pods, {m0} MB)"
    print(f"{'pods':>6} {'logs':>8}   {'wall s min / median / max':<26} {head:<22} {'peak RSS':>9}  summary")
    for i, (pods, mb) in enumerate(points):
        print(f"{pods:>6} {mb:>6}MB   {spread(wall[i], '{:.2f}'):<26} {spread(ratio[i], '{:.2f}'):<22} "
              f"{statistics.median(rss[i]):>6.0f} MiB  {summary[i]}")
    for i, (pods, mb) in enumerate(points):  # the same pods, more log bytes: the ratio of the two, round by round
        for j, (pods2, mb2) in enumerate(points):
            if pods2 == pods and mb2 > mb:
                by = [b / a for a, b in zip(ratio[i], ratio[j], strict=True)]
                print(f"log bytes x{mb2 / mb:.1f} at {pods} pods -> wall x{spread(by, '{:.2f}')} (min / median / max)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--points", nargs="+", default=["256:100", "512:200", "1024:400", "512:2048"],
                    metavar="PODS:MB", help="trainer pods per attempt and total log MB of each bundle")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--keep", type=Path, help="write bundles here and keep them")
    ap.add_argument("--grep", action="store_true", help="compare diagnose with grep over the same windows")
    ap.add_argument("--pods", type=int, default=1024, help="trainer pods for --grep")
    ap.add_argument("--crashloop", type=int, nargs="+", metavar="ATTEMPTS",
                    help="compare crash loops of these many attempts instead (e.g. 100 400)")  # fmt: skip
    args = ap.parse_args()
    try:
        points = [(int(p), int(m)) for p, m in (x.split(":") for x in args.points)]
    except ValueError:
        ap.error("--points takes PODS:MB, as 512:200")
    base = args.keep or Path(tempfile.mkdtemp(prefix="ckpt-bench-"))
    try:
        if args.crashloop:
            compare_crashloop(base, args.crashloop, args.rounds)
        elif args.grep:
            compare_grep(base, max(args.rounds, 5), args.pods)
        else:
            compare_sizes(base, points, args.rounds)
    finally:
        if not args.keep:
            shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
