"""Benchmark the Textual app on big jobs (issues 5 and 13), as interleaved A/B pairs.

Every figure is a ratio taken pair by pair: the programs of one round run one after the other, in
an order that turns every round (A B, then B A, ...), and each ratio is computed from the runs of
its own round. The machine's speed drifts between rounds (other jobs, frequency, caches); within a
round it mostly does not. The report gives each ratio's minimum, median and maximum over the rounds,
with the medians of the absolute times beside them. A wide spread says the machine was noisy:
quote the median, and run more rounds.

1. First frame, in a real pseudo-terminal: a bare Textual app that shows one static line, against
   `ckpt-doctor tui --bundle EXAMPLE` and `ckpt-doctor tui NS/NAME` on the fake API server (live
   mode). Goal: at most 1.3x the bare app in both modes (issue 23; it was 1.5x).
2. Time to findings on big bundles (512 pods by default; `--pods 512 1024`), in both layouts users
   have: `kubectl get -o yaml` dumps (one `kind: List` document per file) and what `ckpt-doctor
   collect` writes (one YAML document per object): `ckpt-doctor tui --bundle BIG` until the verdict
   is on screen, against `ckpt-doctor diagnose --bundle BIG -o json`. Goals: at most 1.3x at 512
   pods, 1.5x at 1,024. The same rounds run the bare app too, for the big bundle's first frame.
3. The longest UI stall while a big bundle loads (until the complete diagnosis is on screen) and
   while each screen opens: the event loop's timer ticks every 10 ms inside the app (headless, in
   this process). Goal: no stall over 100 ms.

The programs start from bytecode, as pip leaves an installed package: the bare app's Textual
always does, and the checkout's ckpt_doctor is compiled here first (a machine that sets
PYTHONDONTWRITEBYTECODE, as CI machines often do, would otherwise compile it again on every start
of an editable install).

    python bench/bench_tui.py                     # 9 first-frame rounds; 5 findings rounds at 512 pods
    python bench/bench_tui.py --pods 512 1024 --keep /tmp/bench-tui
    python bench/bench_tui.py --only findings --pods 1024 --findings-rounds 7
    python bench/bench_tui.py --baseline /tmp/old/src   # also runs another checkout's app, in the same rounds

`--baseline SRC` puts another copy of the project (SRC is its `src/`, with its `rules/` beside it)
first on PYTHONPATH for a second set of runs of `ckpt-doctor tui` in the same rounds, and prints the
ratios of this checkout's app to that one's, pair by pair: before/after figures from one run.
"""

from __future__ import annotations

import argparse
import asyncio
import compileall
import fcntl
import itertools
import os
import pty
import re
import resource
import select
import shutil
import signal
import statistics
import struct
import subprocess
import sys
import tempfile
import termios
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.fakeapi import FakeKube  # noqa: E402
from tests.scenario import Attempt, Scenario, convention_log  # noqa: E402

EVENTS_PER_POD = 6
GOAL_FIRST_FRAME = 1.3  # issue 23 (issue 13 had 1.5)
GOAL_FINDINGS = {512: 1.3, 1024: 1.5}  # pods → the most the app may take, against `diagnose -o json`
GOAL_STALL = 0.1
BARE = """\
from textual.app import App
from textual.widgets import Static


class Bare(App):
    def compose(self):
        yield Static("bare-textual-ready")


Bare().run()
"""
BARE_READY = "bare-textual-ready"
FIRST_FRAME = "ckpt-doctor"  # the header's title
VERDICT = "Verdict · team-a/big-run"
EXAMPLE = "examples/final-checkpoint-missing"
ESCAPES = re.compile(rb"\x1b\[[0-9;?<>=]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[()][0-9A-Za-z]|\x1b[=>78]")


def program() -> list[str]:
    script = Path(sys.executable).with_name("ckpt-doctor")
    return [str(script)] if script.exists() else [sys.executable, "-m", "ckpt_doctor"]


def _cpu_seconds(pids: set[int]) -> float:
    """User + system CPU seconds the processes have used so far (Linux /proc; 0 elsewhere)."""
    total = 0.0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return total


def _children(pid: int) -> set[int]:
    out: set[int] = set()
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            out |= {int(x) for x in (task / "children").read_text().split()}
        except (OSError, ValueError):
            pass
    return out


def in_pty(
    argv: list[str],
    markers: list[str],
    quit_key: bytes,
    env: dict[str, str],
    timeout: float = 300.0,
    size: tuple[int, int] = (80, 24),
) -> dict[str, float]:
    """Run argv on a new pseudo-terminal; seconds from start until each marker is on screen, and
    under "cpu" the CPU seconds the program and its child processes had used when the last one
    came (where /proc tells)."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", size[1], size[0], 0, 0))
    start = time.perf_counter()
    proc = subprocess.Popen(
        argv, stdin=slave, stdout=slave, stderr=slave, env=env, cwd=ROOT, close_fds=True, start_new_session=True
    )
    os.close(slave)
    found: dict[str, float] = {}
    tail = b""
    family = {proc.pid}
    try:
        while len(found) < len(markers) and time.perf_counter() - start < timeout and proc.poll() is None:
            family |= _children(proc.pid)  # the bundle reader, forked as the program starts
            ready, _, _ = select.select([master], [], [], 0.02)
            if not ready:
                continue
            try:
                chunk = os.read(master, 1 << 16)
            except OSError:
                break
            now = time.perf_counter() - start
            seen = tail + chunk  # the whole chunk: a big frame comes in chunks of 64 KiB
            tail = seen[-4096:]  # a marker may straddle two chunks
            text = ESCAPES.sub(b"", seen).decode("utf-8", "replace")
            for m in markers:
                if m not in found and m in text:
                    found[m] = now
        found["cpu"] = _cpu_seconds(family)
        os.write(master, quit_key)
        end = time.monotonic() + 10
        while proc.poll() is None and time.monotonic() < end:  # keep draining, or the child blocks on output
            if select.select([master], [], [], 0.05)[0]:
                try:
                    os.read(master, 1 << 16)
                except OSError:
                    break
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        os.close(master)
    missing = [m for m in markers if m not in found]
    if missing:
        raise SystemExit(f"{' '.join(argv)}: never showed {missing}")
    return found


def timed(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Wall seconds and CPU seconds (user + system) of one whole run of argv (its output thrown away)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    done = subprocess.run(argv, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    took = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode not in (0, 1):  # 1: findings failed, as they do in these bundles
        raise SystemExit(f"{' '.join(argv)}: exit {done.returncode}: {done.stderr.strip()}")
    return took, after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime


def build_big(root: Path, pods: int) -> Path:
    """A TrainJob of `pods` pods after a JobSet restart (the first attempt's pods are gone), with events."""
    ck = "/mnt/ckpt/big-run"
    s = Scenario(name="big-run", num_nodes=pods)
    s.js_restarts = 1
    s.attempts = [
        Attempt(
            0,
            "gpu-node-a",
            convention_log(ck, 0, 300),
            phase="Failed",
            exit_code=1,
            reason="Error",
            started=0,
            kept=False,
            pods=pods,
        ),
        Attempt(1, "gpu-node-b", convention_log(ck, 250, 600), started=60, pods=pods),
    ]
    names = s.pod_names()[1]
    for k, pod in enumerate(names):
        for j, (reason, msg) in enumerate(
            [
                ("Scheduled", f"Successfully assigned team-a/{pod} to gpu-node-{k % 64}"),
                ("Pulled", 'Container image "ghcr.io/example-org/sft-trainer:1.4.2" already present on machine'),
                ("Created", "Created container node"),
                ("Started", "Started container node"),
                ("SuccessfulAttachVolume", 'AttachVolume.Attach succeeded for volume "pvc-ckpt"'),
                ("Pulling", 'Pulling image "ghcr.io/example-org/sft-trainer:1.4.2"'),
            ][:EVENTS_PER_POD]
        ):
            s.event("Pod", pod, reason, msg, 60 + k / 100 + j / 1000, etype="Normal")
    s.event("JobSet", s.name, "RestartJobSetFailurePolicyAction", "applying RestartJobSet failure policy", 59)
    return s.write(root)


def collect_layout(big: Path, out: Path) -> Path:
    """The same bundle as `ckpt-doctor collect` writes it (one YAML document per object)."""
    from ckpt_doctor.sources.bundle import load_bundle
    from ckpt_doctor.sources.bundle_write import write_bundle

    return write_bundle(load_bundle(big), out)


def big_bundles(base: Path, pods: list[int]) -> dict[tuple[int, str], Path]:
    """(pods, layout) → bundle directory, built once per size (kept with --keep)."""
    out: dict[tuple[int, str], Path] = {}
    for n in pods:
        kubectl, collect = base / f"big-{n}", base / f"big-{n}-collect"
        if not (kubectl / "bundle.yaml").exists():
            t = time.perf_counter()
            build_big(kubectl, n)
            print(f"built {kubectl} ({n} pods) in {time.perf_counter() - t:.1f}s", flush=True)
        if not (collect / "bundle.yaml").exists():
            collect_layout(kubectl, collect)
        out[(n, "kubectl -o yaml")] = kubectl
        out[(n, "collect")] = collect
    return out


def interleaved(runs: dict[str, Callable[[], dict[str, float]]], rounds: int) -> list[dict[str, float]]:
    """`rounds` rounds of every run, the order turned by one each round; one dict of figures per round."""
    names = list(runs)
    out = []
    for i in range(rounds):
        order = names[i % len(names) :] + names[: i % len(names)]
        got: dict[str, float] = {}
        for name in order:
            got.update(runs[name]())
        out.append(got)
        print(f"  round {i + 1}/{rounds}: " + ", ".join(f"{k} {v:.2f}s" for k, v in got.items()), flush=True)
    return out


def first_frames(rounds: int, kubeconfig: Path, envs: dict[str, dict[str, str]], bare: Path) -> list[dict[str, float]]:
    """`envs`: "" → this checkout's environment, "baseline" → the other checkout's (when given)."""
    env = envs[""]
    runs: dict[str, Callable[[], dict[str, float]]] = {
        "bare": lambda: {"bare": in_pty([sys.executable, str(bare)], [BARE_READY], b"\x11", env)[BARE_READY]}
    }
    for tag, e in envs.items():
        name = f" {tag}" if tag else ""
        runs["bundle" + name] = lambda name=name, e=e: {
            "bundle" + name: in_pty([*program(), "tui", "--bundle", EXAMPLE], [FIRST_FRAME], b"q", e)[FIRST_FRAME]
        }
        runs["live" + name] = lambda name=name, e=e: {
            "live" + name: in_pty(
                [*program(), "tui", "team-a/sft-resumable", "--kubeconfig", str(kubeconfig)], [FIRST_FRAME], b"q", e
            )[FIRST_FRAME]
        }
    return interleaved(runs, rounds)


def findings(rounds: int, big: Path, envs: dict[str, dict[str, str]], bare: Path) -> list[dict[str, float]]:
    env = envs[""]

    def tui(tag: str, e: dict[str, str]) -> dict[str, float]:
        got = in_pty([*program(), "tui", "--bundle", str(big)], [FIRST_FRAME, VERDICT], b"q", e, size=(120, 40))
        name = f" {tag}" if tag else ""
        return {"tui" + name: got[VERDICT], "tui first frame" + name: got[FIRST_FRAME], "tui cpu" + name: got["cpu"]}

    def diagnose() -> dict[str, float]:
        wall, cpu = timed([*program(), "diagnose", "--bundle", str(big), "-o", "json"], env)
        return {"diagnose": wall, "diagnose cpu": cpu}

    runs: dict[str, Callable[[], dict[str, float]]] = {
        "diagnose": diagnose,
        "bare": lambda: {"bare": in_pty([sys.executable, str(bare)], [BARE_READY], b"\x11", env)[BARE_READY]},
    }
    for tag, e in envs.items():
        runs["tui" + (f" {tag}" if tag else "")] = lambda tag=tag, e=e: tui(tag, e)
    return interleaved(runs, rounds)


def stalls(big: Path) -> dict[str, float]:
    """The event loop's longest pause while the big bundle loads, then while each screen opens."""
    from ckpt_doctor.tui.app import DoctorApp
    from ckpt_doctor.tui.target import Target

    ticks: list[float] = []

    class Probe(DoctorApp):
        def on_mount(self) -> None:
            self.set_interval(0.01, lambda: ticks.append(time.perf_counter()))
            super().on_mount()

    async def drive() -> dict[str, float]:
        app = Probe(Target(bundle=big))
        res: dict[str, float] = {}
        async with app.run_test(size=(120, 40)) as pilot:
            t0 = time.perf_counter()
            while (app.view is None or not app.view.complete or app.busy) and time.perf_counter() - t0 < 300:
                await asyncio.sleep(0.02)
            await pilot.pause(0.3)
            res["load"] = _max_gap(ticks)
            res["load seconds"] = time.perf_counter() - t0
            for key, name in (("2", "findings"), ("3", "timeline"), ("4", "logs"), ("5", "events"), ("1", "overview")):
                ticks.clear()
                await pilot.press(key)
                await pilot.pause(0.3)
                res[name] = _max_gap(ticks)
        return res

    return asyncio.run(drive())


def _max_gap(ts: list[float]) -> float:
    gaps = [b - a for a, b in itertools.pairwise(ts)]
    return max(gaps, default=0.0) - 0.01


def spread(xs: list[float], fmt: str = "{:.2f}", unit: str = "") -> str:
    """`min / median / max` of xs."""
    return " / ".join(fmt.format(x) + unit for x in (min(xs), statistics.median(xs), max(xs)))


def ratio_row(label: str, rounds: list[dict[str, float]], a: str, b: str, goal: float | None) -> tuple[str, str]:
    """A printed row of the ratio a/b, pair by pair, and a line for the goals."""
    rs = [r[a] / r[b] for r in rounds]
    med_a, med_b = statistics.median(r[a] for r in rounds), statistics.median(r[b] for r in rounds)
    row = f"  {label:52} {spread(rs, unit='×'):>24}   ({med_a:.2f}s vs {med_b:.2f}s)"
    verdict = ""
    if goal is not None:
        med = statistics.median(rs)
        verdict = f"{label}: median {med:.2f}× (max {max(rs):.2f}×), goal ≤ {goal}× {'ok' if med <= goal else 'MISSED'}"
    return row, verdict


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=9, help="first-frame rounds (default 9)")
    ap.add_argument("--findings-rounds", type=int, default=5, help="time-to-findings rounds per bundle (default 5)")
    ap.add_argument("--stall-rounds", type=int, default=3, help="UI-stall rounds per bundle (default 3)")
    ap.add_argument("--pods", type=int, nargs="+", default=[512], help="sizes of the big bundles (default 512)")
    ap.add_argument(
        "--only", choices=("first-frame", "findings", "stalls"), action="append", help="run only these parts"
    )
    ap.add_argument("--keep", type=Path, help="write the big bundles here and keep them")
    ap.add_argument("--baseline", type=Path, metavar="SRC", help="also run the app of another checkout's src/")
    args = ap.parse_args()
    parts = set(args.only or ("first-frame", "findings", "stalls"))
    base = args.keep or Path(tempfile.mkdtemp(prefix="ckpt-bench-tui-"))
    env = {**os.environ, "TERM": "xterm-256color", "COLUMNS": "", "LINES": ""}
    env.pop("NO_COLOR", None)
    envs = {"": env}
    if args.baseline:
        if not (args.baseline.resolve().parent / "rules").is_dir():
            raise SystemExit(f"{args.baseline}: no rules/ beside it (the app could not diagnose)")
        envs["baseline"] = {**env, "PYTHONPATH": str(args.baseline.resolve())}
    kube = FakeKube()
    ff: list[dict[str, float]] = []
    tf: dict[tuple[int, str], list[dict[str, float]]] = {}
    st: dict[tuple[int, str], list[dict[str, float]]] = {}
    try:
        base.mkdir(parents=True, exist_ok=True)
        bare = base / "bare_app.py"
        bare.write_text(BARE)
        bundles = big_bundles(base, args.pods) if parts & {"findings", "stalls"} else {}
        import ckpt_doctor

        compileall.compile_dir(Path(ckpt_doctor.__file__).parent, quiet=1)  # see the module docstring
        in_pty([sys.executable, str(bare)], [BARE_READY], b"\x11", env)  # warm the caches once
        if "first-frame" in parts:
            kube.load_bundle(ROOT / "examples" / "final-checkpoint-missing")
            kube.start()
            kubeconfig = kube.kubeconfig(base / "kubeconfig", namespace="team-a")
            print(f"first frame, {args.rounds} rounds (and one not counted)", flush=True)
            first_frames(1, kubeconfig, envs, bare)
            ff = first_frames(args.rounds, kubeconfig, envs, bare)
        if "findings" in parts:
            for key, path in bundles.items():
                print(f"time to findings, {key[0]} pods, {key[1]} layout, {args.findings_rounds} rounds", flush=True)
                timed([*program(), "diagnose", "--bundle", str(path), "-o", "json"], env)  # warm the page cache
                tf[key] = findings(args.findings_rounds, path, envs, bare)
        if "stalls" in parts:
            for key, path in bundles.items():
                print(f"UI stalls, {key[0]} pods, {key[1]} layout, {args.stall_rounds} rounds", flush=True)
                st[key] = [stalls(path) for _ in range(args.stall_rounds)]
    finally:
        kube.stop()
        if not args.keep:
            shutil.rmtree(base, ignore_errors=True)
    report(ff, tf, st)


def report(
    ff: list[dict[str, float]],
    tf: dict[tuple[int, str], list[dict[str, float]]],
    st: dict[tuple[int, str], list[dict[str, float]]],
) -> None:
    goals: list[str] = []
    print(f"\n{'':54} {'min / median / max':>24}   (medians)")
    if ff:
        print(f"First frame, pseudo-terminal 80×24, {len(ff)} interleaved rounds: ratio to the bare Textual app")
        for label, key in (("tui --bundle EXAMPLE / bare", "bundle"), ("tui NS/NAME (live, fake API) / bare", "live")):
            row, goal = ratio_row(label, ff, key, "bare", GOAL_FIRST_FRAME)
            print(row)
            goals.append("first frame, " + goal)
            if f"{key} baseline" in ff[0]:
                print(ratio_row("  the baseline's app / bare", ff, f"{key} baseline", "bare", None)[0])
                print(ratio_row("  this app / the baseline's", ff, key, f"{key} baseline", None)[0])
    for (pods, layout), rounds in tf.items():
        print(f"Big bundle, {pods} pods, {layout} layout, {len(rounds)} interleaved rounds")
        limit = GOAL_FINDINGS.get(pods)
        row, goal = ratio_row("tui until the verdict / diagnose -o json", rounds, "tui", "diagnose", limit)
        print(row)
        if goal:
            goals.append(f"findings, {pods} pods, {layout}: " + goal)
        if "tui baseline" in rounds[0]:
            print(ratio_row("  the baseline's app / diagnose -o json", rounds, "tui baseline", "diagnose", None)[0])
            print(ratio_row("  this app / the baseline's", rounds, "tui", "tui baseline", None)[0])
        if rounds[0].get("tui cpu"):
            row, _ = ratio_row(
                "CPU until the verdict (app + reader) / diagnose's", rounds, "tui cpu", "diagnose cpu", None
            )
            print(row)
        row, _ = ratio_row("tui first frame (big bundle) / bare", rounds, "tui first frame", "bare", None)
        print(row)
        if "tui baseline" in rounds[0]:
            print(ratio_row("  the baseline's app / bare", rounds, "tui first frame baseline", "bare", None)[0])
    for (pods, layout), runs in st.items():
        print(f"UI stalls, {pods} pods, {layout} layout, {len(runs)} runs: longest pause (min / median / max)")
        load = [r["load"] for r in runs]
        secs = statistics.median(r["load seconds"] for r in runs)
        label = f"while loading ({secs:.1f}s to the complete view)"
        print(f"  {label:52} {spread([x * 1000 for x in load], '{:.0f}', 'ms'):>24}")
        for name in ("findings", "timeline", "logs", "events", "overview"):
            print(f"  {'opening ' + name:52} {spread([r[name] * 1000 for r in runs], '{:.0f}', 'ms'):>24}")
        med = statistics.median(load)
        goals.append(
            f"stall while loading, {pods} pods, {layout}: median {med * 1000:.0f}ms (max {max(load) * 1000:.0f}ms), "
            f"goal ≤ {GOAL_STALL * 1000:.0f}ms {'ok' if med <= GOAL_STALL else 'MISSED'}"
        )
    print("\nGoals (on the median ratio; the max shows the spread)")
    for g in goals:
        print(f"  {g}")


if __name__ == "__main__":
    main()
