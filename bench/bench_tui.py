"""Benchmark the Textual app (issue 5), measured side by side in one run.

1. Time to first frame, in a real pseudo-terminal: a bare Textual app that shows one static line,
   `ckpt-doctor tui --bundle …`, and `ckpt-doctor tui NS/NAME` against the fake API server (live
   mode: the kubernetes client must load after the first frame). Goal: at most 1.5× the bare app.
2. Time to findings on a 512-pod bundle: `ckpt-doctor tui --bundle BIG` until the verdict is on
   screen, against `ckpt-doctor diagnose --bundle BIG -o json`. Goal: at most 1.3×.
3. The longest UI stall while that bundle loads (the event loop's timer, ticking every 10 ms, in the
   app itself). Goal: no stall over 100 ms.

Both programs start from bytecode, as pip leaves an installed package: the bare app's Textual
always does, and the checkout's ckpt_doctor is compiled here first (a machine that sets
PYTHONDONTWRITEBYTECODE, as CI machines often do, would otherwise compile it again on every start of an
editable install: about 10 ms of its first frame).

The 512-pod bundle is measured in both layouts users have: `kubectl get -o yaml` dumps (one `kind:
List` document per file) and what `ckpt-doctor collect` writes (one YAML document per object).

    python bench/bench_tui.py                 # 7 rounds of first frames, 3 of findings
    python bench/bench_tui.py --rounds 3 --keep /tmp/bench-tui
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

PODS = 512
EVENTS_PER_POD = 6
BARE = """\
from textual.app import App
from textual.widgets import Static


class Bare(App):
    def compose(self):
        yield Static("bare-textual-ready")


Bare().run()
"""
TUI_ONLY = """\
import argparse
import sys

from ckpt_doctor.commands import tui

parser = argparse.ArgumentParser()
tui.register(parser.add_subparsers())
args = parser.parse_args(["tui", *sys.argv[1:]])
sys.exit(args.func(args))
"""
ESCAPES = re.compile(rb"\x1b\[[0-9;?<>=]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[()][0-9A-Za-z]|\x1b[=>78]")


def program() -> list[str]:
    script = Path(sys.executable).with_name("ckpt-doctor")
    return [str(script)] if script.exists() else [sys.executable, "-m", "ckpt_doctor"]


def in_pty(
    argv: list[str],
    markers: list[str],
    quit_key: bytes,
    env: dict[str, str],
    timeout: float = 120.0,
    size: tuple[int, int] = (80, 24),
) -> dict[str, float]:
    """Run argv on a new pseudo-terminal; seconds from start until each marker is on screen."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", size[1], size[0], 0, 0))
    start = time.perf_counter()
    proc = subprocess.Popen(
        argv, stdin=slave, stdout=slave, stderr=slave, env=env, cwd=ROOT, close_fds=True, start_new_session=True
    )
    os.close(slave)
    found: dict[str, float] = {}
    tail = b""
    try:
        while len(found) < len(markers) and time.perf_counter() - start < timeout and proc.poll() is None:
            ready, _, _ = select.select([master], [], [], 0.02)
            if not ready:
                continue
            try:
                chunk = os.read(master, 1 << 16)
            except OSError:
                break
            now = time.perf_counter() - start
            tail = (tail + chunk)[-4096:]
            text = ESCAPES.sub(b"", tail).decode("utf-8", "replace")
            for m in markers:
                if m not in found and m in text:
                    found[m] = now
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


def build_big(root: Path) -> Path:
    """A 512-pod TrainJob after a JobSet restart (the first attempt's pods are gone), with events."""
    ck = "/mnt/ckpt/big-run"
    s = Scenario(name="big-run", num_nodes=PODS)
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
            pods=PODS,
        ),
        Attempt(1, "gpu-node-b", convention_log(ck, 250, 600), started=60, pods=PODS),
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


def median(xs: list[float]) -> float:
    return statistics.median(xs)


def first_frames(
    rounds: int, kubeconfig: Path, env: dict[str, str], bare: Path, tui_only: Path
) -> dict[str, list[float]]:
    runs: dict[str, Callable[[], float]] = {
        "bare Textual app (one static line)": lambda: in_pty(
            [sys.executable, str(bare)], ["bare-textual-ready"], b"\x11", env
        )["bare-textual-ready"],
        "ckpt-doctor tui --bundle (example)": lambda: in_pty(
            [*program(), "tui", "--bundle", "examples/final-checkpoint-missing"], ["ckpt-doctor"], b"q", env
        )["ckpt-doctor"],
        "ckpt-doctor tui NS/NAME (live, fake API)": lambda: in_pty(
            [*program(), "tui", "team-a/sft-resumable", "--kubeconfig", str(kubeconfig)], ["ckpt-doctor"], b"q", env
        )["ckpt-doctor"],
        "  the app alone, bundle (no other verbs)": lambda: in_pty(
            [sys.executable, str(tui_only), "--bundle", "examples/final-checkpoint-missing"], ["ckpt-doctor"], b"q", env
        )["ckpt-doctor"],
        "  the app alone, live (no other verbs)": lambda: in_pty(
            [sys.executable, str(tui_only), "team-a/sft-resumable", "--kubeconfig", str(kubeconfig)],
            ["ckpt-doctor"],
            b"q",
            env,
        )["ckpt-doctor"],
    }
    out: dict[str, list[float]] = {k: [] for k in runs}
    for _ in range(rounds):  # interleaved, so machine noise hits every variant alike
        for name, run in runs.items():
            out[name].append(run())
    return out


def collect_layout(big: Path, out: Path) -> Path:
    """The same bundle as `ckpt-doctor collect` writes it (one YAML document per object)."""
    from ckpt_doctor.sources.bundle import load_bundle
    from ckpt_doctor.sources.bundle_write import write_bundle

    return write_bundle(load_bundle(big), out)


def findings(rounds: int, big: Path, env: dict[str, str]) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {
        "diagnose --bundle BIG -o json": [],
        "tui --bundle BIG (verdict on screen)": [],
        "tui first frame (same runs)": [],
    }
    marker = "Verdict · team-a/big-run"
    for _ in range(rounds):
        t = time.perf_counter()
        done = subprocess.run(
            [*program(), "diagnose", "--bundle", str(big), "-o", "json"],
            cwd=ROOT,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        if done.returncode not in (0, 1):
            raise SystemExit(done.stderr)
        out["diagnose --bundle BIG -o json"].append(time.perf_counter() - t)
        got = in_pty([*program(), "tui", "--bundle", str(big)], ["ckpt-doctor", marker], b"q", env, size=(120, 40))
        out["tui --bundle BIG (verdict on screen)"].append(got[marker])
        out["tui first frame (same runs)"].append(got["ckpt-doctor"])
    return out


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
            while (app.view is None or app.busy) and time.perf_counter() - t0 < 300:
                await asyncio.sleep(0.02)
            await pilot.pause(0.3)
            res["load"] = _max_gap(ticks)
            res["load_seconds"] = time.perf_counter() - t0
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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=7, help="first-frame rounds (default 7)")
    ap.add_argument("--findings-rounds", type=int, default=3, help="time-to-findings rounds (default 3)")
    ap.add_argument("--stall-rounds", type=int, default=3, help="UI-stall rounds per layout (default 3)")
    ap.add_argument("--keep", type=Path, help="write the big bundle here and keep it")
    args = ap.parse_args()
    base = args.keep or Path(tempfile.mkdtemp(prefix="ckpt-bench-tui-"))
    env = {**os.environ, "TERM": "xterm-256color", "COLUMNS": "", "LINES": ""}
    env.pop("NO_COLOR", None)
    kube = FakeKube()
    try:
        base.mkdir(parents=True, exist_ok=True)
        bare = base / "bare_app.py"
        bare.write_text(BARE)
        tui_only = base / "tui_only.py"
        tui_only.write_text(TUI_ONLY)
        big = base / "big-512"
        if not (big / "bundle.yaml").exists():
            t = time.perf_counter()
            build_big(big)
            print(f"built {big} ({PODS} pods) in {time.perf_counter() - t:.1f}s", flush=True)
        layouts = {"kubectl -o yaml layout": big, "collect layout": base / "big-512-collect"}
        if not (layouts["collect layout"] / "bundle.yaml").exists():
            collect_layout(big, layouts["collect layout"])
        kube.load_bundle(ROOT / "examples" / "final-checkpoint-missing")
        kube.start()
        kubeconfig = kube.kubeconfig(base / "kubeconfig", namespace="team-a")
        import ckpt_doctor

        compileall.compile_dir(Path(ckpt_doctor.__file__).parent, quiet=1)  # see the module docstring
        in_pty([sys.executable, str(bare)], ["bare-textual-ready"], b"\x11", env)  # warm the caches once
        ff = first_frames(args.rounds, kubeconfig, env, bare, tui_only)
        tf = {name: findings(args.findings_rounds, path, env) for name, path in layouts.items()}
        st = {name: [stalls(path) for _ in range(args.stall_rounds)] for name, path in layouts.items()}
    finally:
        kube.stop()
        if not args.keep:
            shutil.rmtree(base, ignore_errors=True)

    report(args, layouts, ff, tf, st)


def report(
    args: argparse.Namespace,
    layouts: dict[str, Path],
    ff: dict[str, list[float]],
    tf: dict[str, dict[str, list[float]]],
    st: dict[str, list[dict[str, float]]],
) -> None:
    """Print the figures; ratios on medians and on minimums (the least disturbed runs)."""
    bare = ff["bare Textual app (one static line)"]
    print(f"\nTime to first frame (pseudo-terminal 80×24, {args.rounds} interleaved rounds)")
    print(f"  {'':44} {'median':>8} {'min':>8} {'× bare (median, min)':>22}")
    for name, xs in ff.items():
        print(
            f"  {name:44} {median(xs) * 1000:6.0f}ms {min(xs) * 1000:6.0f}ms "
            f"{median(xs) / median(bare):9.2f}× {min(xs) / min(bare):6.2f}×"
        )
    goals = []
    for name in (
        "ckpt-doctor tui --bundle (example)",
        "ckpt-doctor tui NS/NAME (live, fake API)",
        "  the app alone, bundle (no other verbs)",
        "  the app alone, live (no other verbs)",
    ):
        r = (median(ff[name]) / median(bare), min(ff[name]) / min(bare))
        goals.append(f"first frame {name.strip()}: {r[0]:.2f}×/{r[1]:.2f}× {_ok(max(r) <= 1.5)}")
    for layout in layouts:
        rows = tf[layout]
        diag = rows["diagnose --bundle BIG -o json"]
        print(f"\nTime to findings, {PODS}-pod bundle, {layout} ({args.findings_rounds} rounds)")
        for name, xs in rows.items():
            print(
                f"  {name:44} {median(xs):6.2f}s  {min(xs):6.2f}s  "
                f"{median(xs) / median(diag):9.2f}× {min(xs) / min(diag):6.2f}×"
            )
        tui = rows["tui --bundle BIG (verdict on screen)"]
        r = (median(tui) / median(diag), min(tui) / min(diag))
        goals.append(f"findings, {layout}: {r[0]:.2f}×/{r[1]:.2f}× diagnose {_ok(max(r) <= 1.3)}")
        runs = st[layout]

        def ms(key: str, runs: list[dict[str, float]] = runs) -> str:
            xs = [r[key] for r in runs]
            return f"{median(xs) * 1000:.0f}ms (worst {max(xs) * 1000:.0f}ms)"

        secs = median([r["load_seconds"] for r in runs])
        print(f"  longest UI stall while loading ({secs:.1f}s), median of {len(runs)}: {ms('load')}")
        print(
            "  longest UI stall opening "
            + ", ".join(f"{n} {ms(n)}" for n in ("findings", "timeline", "logs", "events", "overview"))
        )
        load = median([r["load"] for r in runs])
        goals.append(f"stall while loading, {layout}: {ms('load')} {_ok(load <= 0.1)}")
    print("\nGoals (median/min ratios): first frame ≤ 1.5× bare, findings ≤ 1.3× diagnose, stall ≤ 100 ms")
    for g in goals:
        print(f"  {g}")


def _ok(good: bool) -> str:
    return "ok" if good else "MISSED"


if __name__ == "__main__":
    main()
