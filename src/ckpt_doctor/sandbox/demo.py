"""`make demo` (`python -m ckpt_doctor.sandbox.demo`): the main job of ckpt-doctor, on the sandbox.

In a terminal it starts the sandbox and opens the app on it: the TrainJobs listed live; pick one, then `:` →
"Start the verify drill" runs the drill end to end (crash → restart → resume, suspend and resume, another node),
and a broken scenario fails the step that finds its fault. Without a terminal it runs the drill unattended on the
healthy job and on a broken one, diagnoses another broken one, and prints what to type to open the app.

The other faces run as `ckpt-doctor` subprocesses, as a user would type them (no face imports another).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import IO

from ckpt_doctor.simulation import WORDS

HEALTHY = "healthy-resume"
BROKEN_DRILL = "checkpoint-on-emptydir"
BROKEN_DIAGNOSE = "rwo-on-two-nodes"


def _cli(*args: str, kubeconfig: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "NO_COLOR": "1"}
    return subprocess.run([sys.executable, "-m", "ckpt_doctor", *args, "--kubeconfig", str(kubeconfig)],
                          capture_output=True, text=True, env=env, timeout=1800)


def _drill(out: IO[str], job: str, kubeconfig: Path, playbook: Path | None) -> None:
    extra = ["--playbook", str(playbook)] if playbook is not None else []
    print(f"== ckpt-doctor drill sandbox/{job} --yes", file=out)
    got = _cli("drill", f"sandbox/{job}", "--yes", "-o", "json", *extra, kubeconfig=kubeconfig)
    try:
        doc = json.loads(got.stdout)
    except ValueError:
        print(got.stderr.strip() or f"(the drill printed no record; exit {got.returncode})", file=out)
        return
    for st in doc["steps"]:
        print(f"  {st['id']:<17} {st['status']}", file=out)
    print(f"verdict: {doc['verdict']} (exit {got.returncode}): {_stable(doc)}", file=out)


def _stable(doc: dict) -> str:
    """The verdict's reason without what changes run to run (steps, seconds, pod names)."""
    if doc["verdict"] == "passed":
        return "the crash, the suspend and resume, and the move to another node each resumed from the last save"
    step = next((s for s in doc["steps"] if s["id"] == doc.get("failedStep")), None)
    rules = [f["rule"] for f in ((step or {}).get("diagnosis") or {}).get("findings") or []]
    return f"step {doc.get('failedStep')} found {', '.join(rules) or 'the fault'}"


def unattended(out: IO[str], kubeconfig: Path, playbook: Path | None = None) -> None:
    """What `make demo` prints without a terminal (README's quick start shows it)."""
    print(f"== ckpt-doctor sandbox: a {WORDS} running six TrainJobs (ckpt-doctor sandbox --list)", file=out)
    _drill(out, HEALTHY, kubeconfig, playbook)
    _drill(out, BROKEN_DRILL, kubeconfig, playbook)
    print(f"== ckpt-doctor diagnose sandbox/{BROKEN_DIAGNOSE}", file=out)
    got = _cli("diagnose", f"sandbox/{BROKEN_DIAGNOSE}", kubeconfig=kubeconfig)
    out.write(got.stdout)


def how_to_open(out: IO[str]) -> None:
    print("\nTo open the app on the sandbox yourself, in two terminals:\n"
          "  .venv/bin/ckpt-doctor sandbox --kubeconfig sandbox.kubeconfig\n"
          "  .venv/bin/ckpt-doctor --kubeconfig sandbox.kubeconfig\n"
          "then pick a TrainJob and press : → \"Start the verify drill\".", file=out)


def main(argv: list[str] | None = None) -> int:
    from ckpt_doctor.sandbox.cluster import Sandbox

    args = sys.argv[1:] if argv is None else argv
    tty = sys.stdin.isatty() and sys.stdout.isatty() and "--no-app" not in args
    with Sandbox(speed=0.2 if tty else 1.0) as sb:
        if not tty:
            unattended(sys.stdout, sb.kubeconfig)
            how_to_open(sys.stdout)
            return 0
        print(f"ckpt-doctor sandbox: a {WORDS} at {sb.url}; opening the app on it.\n"
              "Pick a TrainJob (healthy-resume passes the drill, the others are broken), then press : and choose "
              "\"Start the verify drill\". q quits the app and stops the sandbox.", flush=True)
        app = subprocess.run([sys.executable, "-m", "ckpt_doctor", "--kubeconfig", str(sb.kubeconfig)], check=False)
        return app.returncode


if __name__ == "__main__":
    sys.exit(main())
