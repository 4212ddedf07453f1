"""Benchmark live `diagnose` against offline `diagnose --bundle` of the same TrainJob: peak RSS and CPU (issue 14).

The job is tests/live/scenario.py's `sft-run` with N pods (default 1,024), each current container log LOG_KB of
realistic training output (tqdm bars redrawn with carriage returns, loss dicts, a save every 100 steps), larger
than the 128 KiB head and tail windows, so every log costs its two windows. It is written once as a bundle
directory; the fake API server (tests/fakeapi, `python -m tests.fakeapi BUNDLE`) serves that same bundle from a
process of its own, so that only the diagnose process is measured:

- live: `ckpt-doctor diagnose team-a/sft-run --kubeconfig KC -q -o json` (the real `kubernetes` client over HTTP);
- offline: `ckpt-doctor diagnose --bundle BUNDLE -o json`.

Each round runs the commands in turn (A B A B ...), each in a fresh process; its peak RSS and its CPU
(user + sys) are the kernel's accounting of that child (`os.wait4`). The table gives min / median / max over the
rounds, and the ratio live CPU / offline CPU pair by pair. Both diagnoses must give the same findings (rule,
status, subject); the bench says so, or stops.

`--before REV` adds live `diagnose` as of git revision REV (`git archive REV src rules`, unpacked in a temporary
directory: the working tree is not touched), interleaved with the others, for before/after figures. `--collect`
adds `ckpt-doctor collect` of the same job to a .tar.gz (and, with --before, REV's collect).

    .venv/bin/python bench/bench_live.py                         # 1,024 pods, 512 KiB logs, 5 rounds
    .venv/bin/python bench/bench_live.py --pods 64,256,1024 --rounds 3
    .venv/bin/python bench/bench_live.py --before HEAD~1 --collect --keep /tmp/bench-live
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.live.scenario import NAME, NS, Scenario, pod_name  # noqa: E402
from tests.scenario import tqdm  # noqa: E402

GOAL_RSS_MB = 250
GOAL_CPU_RATIO = 2.0


def log_body(index: int, size: int) -> bytes:
    """One current container log of about `size` bytes: a fresh start, progress bars, loss lines, saves."""
    out = bytearray(
        f"rank {index} starting\n[checkpoint] no prior checkpoint in /ckpt/{NAME}, starting fresh\n"
        "***** Running training *****\n".encode()
    )
    step = 0
    while len(out) < size:
        step += 1
        out += "".join(tqdm(s, 100_000) for s in range(step * 10 - 9, step * 10 + 1)).encode() + b"\n"
        out += (
            f"{{'loss': {2.0 - step / 1e5:.4f}, 'learning_rate': 1.9e-05, 'grad_norm': 0.71, 'epoch': 0.42}}\n".encode()
        )
        if step % 10 == 0:
            out += f"[checkpoint] saved /ckpt/{NAME}/checkpoint-{step * 10}\n".encode()
    return bytes(out)


def build(root: Path, pods: int, log_kb: int) -> Path:
    sc = Scenario(pods=pods)
    sc.write_bundle(root)
    for i in range(pods):
        (root / "logs" / pod_name(NAME, i, 1) / "node.log").write_bytes(log_body(i, log_kb * 1024))
    return root


class Server:
    """`python -m tests.fakeapi BUNDLE --kubeconfig KC` in a process of its own."""

    def __init__(self, bundle: Path, kubeconfig: Path) -> None:
        env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{ROOT / 'src'}"}
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tests.fakeapi", str(bundle), "--kubeconfig", str(kubeconfig)],
            cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        assert self.proc.stdout is not None
        self.url = self.proc.stdout.readline().strip()  # printed once it listens
        if not self.url.startswith("http"):
            raise SystemExit(
                f"the fake API server did not start: {self.proc.stderr.read() if self.proc.stderr else ''}"
            )

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=30)


def measure(argv: list[str], src: Path, out: Path) -> tuple[float, float, float, float]:
    """(peak RSS MiB, user s, sys s, wall s) of one run of `argv`, its stdout kept in `out`."""
    env = {**os.environ, "PYTHONPATH": str(src), "NO_COLOR": "1"}
    t = time.perf_counter()
    with out.open("wb") as f:
        p = subprocess.Popen(argv, cwd=ROOT, env=env, stdout=f, stderr=subprocess.DEVNULL)
        _, status, ru = os.wait4(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)
    wall = time.perf_counter() - t
    if p.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(argv)} exited {p.returncode}")
    return ru.ru_maxrss / 1024, ru.ru_utime, ru.ru_stime, wall


def findings(path: Path) -> set[tuple[str, str, str, str]]:
    doc = json.loads(path.read_text())
    return {
        (f["rule"], f["status"], str((f.get("subject") or {}).get("kind")), str((f.get("subject") or {}).get("name")))
        for f in doc["findings"]
    }


def stats(xs: list[float], fmt: str) -> str:
    return " / ".join(format(v, fmt) for v in (min(xs), statistics.median(xs), max(xs)))


def checkout(rev: str, into: Path) -> Path:
    """`src/` of git revision `rev` (with the rules it reads), unpacked under `into`; returns that src."""
    into.mkdir(parents=True, exist_ok=True)
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", rev, "src", "rules"], capture_output=True, check=True)
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive.stdout, check=True)
    return into / "src"


def bench(
    pods: int, log_kb: int, rounds: int, before: Path | None, keep: Path | None, collect: bool = False
) -> dict[str, float]:
    work = Path(keep) if keep else Path(tempfile.mkdtemp(prefix="bench-live-"))
    bundle = work / f"bundle-{pods}-{log_kb}"
    if not (bundle / "objects.yaml").exists():
        shutil.rmtree(bundle, ignore_errors=True)
        build(bundle, pods, log_kb)
    kc = work / f"kubeconfig-{pods}"
    server = Server(bundle, kc)
    py = [sys.executable, "-m", "ckpt_doctor", "diagnose"]
    runs: dict[str, tuple[list[str], Path]] = {
        "live": ([*py, f"{NS}/{NAME}", "--kubeconfig", str(kc), "-q", "-o", "json"], ROOT / "src"),
        "offline": ([*py, "--bundle", str(bundle), "--trainjob", f"{NS}/{NAME}", "-o", "json"], ROOT / "src"),
    }
    if before is not None:
        runs["live before"] = (runs["live"][0], before)
    if collect:
        tgz = str(work / "collected.tar.gz")
        runs["collect"] = ([*py[:-1], "collect", f"{NS}/{NAME}", "--kubeconfig", str(kc), "-q", "--force", "-o", tgz],
                           ROOT / "src")  # fmt: skip
        if before is not None:
            runs["collect before"] = (runs["collect"][0], before)
    got: dict[str, list[tuple[float, float, float, float]]] = {k: [] for k in runs}
    try:
        for name, (argv, src) in runs.items():  # warm-up: page cache, .pyc files
            measure(argv, src, work / f"{name.replace(' ', '-')}.json")
        for _ in range(rounds):
            for name, (argv, src) in runs.items():
                got[name].append(measure(argv, src, work / f"{name.replace(' ', '-')}.json"))
    finally:
        server.stop()
    same = findings(work / "live.json") == findings(work / "offline.json")
    print(f"\n{pods} pods, {log_kb} KiB per current log, {rounds} rounds (min / median / max); "
          f"live and offline findings {'agree' if same else 'DIFFER'}")  # fmt: skip
    print(f"{'':14} {'peak RSS MiB':>22} {'CPU s (user+sys)':>22} {'wall s':>22}")
    for name, rs in got.items():
        rss = [r[0] for r in rs]
        cpu = [r[1] + r[2] for r in rs]
        wall = [r[3] for r in rs]
        print(f"{name:14} {stats(rss, '.0f'):>22} {stats(cpu, '.2f'):>22} {stats(wall, '.2f'):>22}")
    ratio = [(a[1] + a[2]) / (b[1] + b[2]) for a, b in zip(got["live"], got["offline"], strict=True)]
    print(f"{'live/offline CPU':14} {stats(ratio, '.2f'):>45}")
    if before is not None:
        r_before = [(a[1] + a[2]) / (b[1] + b[2]) for a, b in zip(got["live before"], got["offline"], strict=True)]
        print(f"{'before/offline':14} {stats(r_before, '.2f'):>45}")
    med_rss = statistics.median(r[0] for r in got["live"])
    print(f"goals: live peak RSS < {GOAL_RSS_MB} MB: {'met' if med_rss * 1.048576 < GOAL_RSS_MB else 'NOT met'} "
          f"(median {med_rss:.0f} MiB = {med_rss * 1.048576:.0f} MB); live CPU within {GOAL_CPU_RATIO:g}x of offline: "
          f"{'met' if statistics.median(ratio) <= GOAL_CPU_RATIO else 'NOT met'}")  # fmt: skip
    if not same:
        raise SystemExit("live and offline diagnoses differ")
    if keep is None:
        shutil.rmtree(work, ignore_errors=True)
    return {"rss": med_rss, "ratio": statistics.median(ratio)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--pods", default="1024", help="comma-separated pod counts (default 1024)")
    ap.add_argument("--log-kb", type=int, default=512, help="KiB of each current container log (default 512)")
    ap.add_argument("--rounds", type=int, default=5, help="interleaved rounds (default 5)")
    ap.add_argument("--before", metavar="REV", help="also run live diagnose (and collect) as of this git revision")
    ap.add_argument("--collect", action="store_true", help="also measure `collect` of the same job to a .tar.gz")
    ap.add_argument("--keep", type=Path, help="keep the bundles (and reuse them) in this directory")
    args = ap.parse_args()
    if args.keep:
        args.keep.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="bench-live-before-") as tmp:
        before = checkout(args.before, Path(tmp)) if args.before else None
        for n in (int(x) for x in args.pods.split(",")):
            bench(n, args.log_kb, args.rounds, before, args.keep, args.collect)


if __name__ == "__main__":
    main()
