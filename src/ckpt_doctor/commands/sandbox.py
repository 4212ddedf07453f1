"""`ckpt-doctor sandbox`: a simulated cluster to try every face on (contracts.md §1).

Prints `ready <URL> kubeconfig <FILE>` on stdout once it serves, what it runs on stderr, and serves until
SIGINT or SIGTERM (exit 0 after a clean stop). The kubeconfig it writes is removed on the way out when it chose
the file itself or created the --kubeconfig FILE; a --kubeconfig FILE that exists already is refused unless
--force (it may be someone's real kubeconfig), except one an earlier, killed sandbox left there, which is replaced.
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from pathlib import Path

from ckpt_doctor.errors import InputError, UsageError


def _speed(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not 0 < v <= 1000:
        raise argparse.ArgumentTypeError("must be above 0 and at most 1000")
    return v


def register(sub: argparse._SubParsersAction) -> None:
    from ckpt_doctor.cli import positive_int

    p = sub.add_parser(
        "sandbox",
        help="run a simulated cluster (loopback API, simulated Trainer/JobSet/kubelet) to try ckpt-doctor on",
        description="A local simulated cluster for trying every face of ckpt-doctor without a cluster: a loopback "
        "Kubernetes API and a simulated Kubeflow Trainer, JobSet, Job controller, scheduler and kubelet that run "
        "preloaded TrainJobs (a healthy resumable job, and broken ones). Their trainers replay the logs of recorded "
        "real runs, or speak the checkpointing guide's convention where no recording is installed; their "
        "checkpoints land on simulated volumes that exec ls/find/df read. It writes a kubeconfig, prints "
        "`ready <URL> kubeconfig <FILE>`, and runs until Ctrl-C or SIGTERM. Everything that talks to it says "
        "`sandbox (simulated cluster)`.",
    )
    p.add_argument("--kubeconfig", type=Path, metavar="FILE",
                   help="where to write its kubeconfig (default: a file in a temporary directory, removed on exit)")
    p.add_argument("--force", action="store_true", help="overwrite the --kubeconfig FILE if it exists")
    p.add_argument("--port", type=positive_int, default=None, metavar="N",
                   help="serve on 127.0.0.1:N (default: a free port)")
    p.add_argument("--scenario", nargs="+", default=[], metavar="NAME",
                   help="load only these scenarios (default: all; --list shows them)")
    p.add_argument("--list", action="store_true", help="list the scenarios and exit")
    p.add_argument("--speed", type=_speed, default=0.1, metavar="X",
                   help="how fast the simulated time runs: 1 is the tests' pace (200 training steps a second); "
                   "the default 0.1 is slow enough to watch")
    p.add_argument("--recordings", type=Path, action="append", default=[], metavar="DIR",
                   help="a folder of recordings (recordings/<run-id>/run.yaml …) to look in before the packaged ones")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ckpt_doctor import simulation
    from ckpt_doctor.sandbox.scenarios import SCENARIOS, choose

    if args.list:
        width = max(len(s.name) for s in SCENARIOS)
        for s in SCENARIOS:
            want = "passes" if s.verdict == "passed" else f"fails at {s.failing_step} ({', '.join(s.rules)})"
            print(f"{s.name:<{width}}  {s.title}; the drill {want}")
        return 0
    choose(args.scenario)  # an unknown name: exit 2 before anything is served
    created = False  # --kubeconfig FILE did not exist: this run's to remove on the way out
    if args.kubeconfig is not None:
        from ckpt_doctor.safewrite import check_output

        if args.kubeconfig.is_dir():
            raise UsageError(f"--kubeconfig {args.kubeconfig} is a directory; give a file name")
        stale = _stale_sandbox_kubeconfig(args.kubeconfig)
        if stale:  # left by a sandbox that was killed: nobody else's, replaced without --force
            print(f"ckpt-doctor sandbox: replacing {args.kubeconfig}, left by an earlier sandbox", file=sys.stderr)
        else:
            check_output(args.kubeconfig, force=args.force)
        created = stale or not args.kubeconfig.exists()
    from ckpt_doctor.sandbox.cluster import Sandbox

    roots = list(args.recordings)
    from ckpt_doctor.data import recordings_dir

    try:
        packaged = recordings_dir()
    except FileNotFoundError:  # an installation without recordings: the scenarios speak the guide's convention
        packaged = None
    sb = Sandbox(args.scenario, args.kubeconfig, args.port or 0, args.speed,
                 recordings=roots + ([packaged] if packaged is not None else []))
    stop = threading.Event()
    got: list[str] = []

    def on_signal(signum: int, _frame: object) -> None:
        got.append(signal.Signals(signum).name)
        stop.set()

    from ckpt_doctor.signals import handled

    with handled((signal.SIGINT, signal.SIGTERM), on_signal):
        try:
            try:
                sb.start()
            except OSError as e:
                raise InputError(f"cannot serve on 127.0.0.1:{args.port}: {e.strerror or e}") from None
            err = sys.stderr
            print(f"ckpt-doctor sandbox: {simulation.WORDS} at {sb.url}, Kubernetes {simulation.server_version()}",
                  file=err)
            for spec in sb.specs:
                print(f"  TrainJob {sb.namespace}/{spec.name}: {spec.title} [{sb.spoken[spec.name]}]", file=err)
            for note in sb.notes:
                print(f"  note: {note}", file=err)
            kc = sb.kubeconfig
            print(f"  try: ckpt-doctor --kubeconfig {kc}                      (the app; : → Start the verify drill)",
                  file=err)
            print(f"       ckpt-doctor drill {sb.namespace}/healthy-resume --yes --kubeconfig {kc}", file=err)
            print(f"       ckpt-doctor diagnose -A --kubeconfig {kc}", file=err)
            print(f"       kubectl --kubeconfig {kc} get trainjobs,pods", file=err)
            print("  Ctrl-C stops it.", file=err, flush=True)
            print(f"ready {sb.url} kubeconfig {kc}", flush=True)
            while not stop.wait(0.5):
                problems = sb.errors()
                if problems:
                    raise InputError(f"the simulation hit a bug and stopped: {problems[0].strip().splitlines()[-1]}")
        finally:
            sb.stop()
            if created and args.kubeconfig is not None and _stale_sandbox_kubeconfig(args.kubeconfig):
                args.kubeconfig.unlink(missing_ok=True)  # it points at a server that is gone
    print(f"ckpt-doctor sandbox: stopped by {got[0] if got else 'request'}", file=sys.stderr)
    return 0


def _stale_sandbox_kubeconfig(path: Path) -> bool:
    """Whether `path` is a kubeconfig a sandbox wrote: its only context is the sandbox's and its only server a
    loopback address (a file that is anything else may be someone's real kubeconfig: refused without --force)."""
    import yaml

    from ckpt_doctor.sandbox.cluster import CONTEXT

    try:
        if not path.is_file() or path.is_symlink() or path.stat().st_size > 65536:
            return False
        doc = yaml.safe_load(path.read_text())
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return False
    if not isinstance(doc, dict):
        return False
    contexts = [c.get("name") for c in doc.get("contexts") or [] if isinstance(c, dict)]
    servers = [(c.get("cluster") or {}).get("server", "") for c in doc.get("clusters") or [] if isinstance(c, dict)]
    return contexts == [CONTEXT] and len(servers) == 1 and str(servers[0]).startswith("http://127.0.0.1:")
