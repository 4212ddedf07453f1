"""Benchmark the redactor (sources/redact.py) before and after it moved to RE2, on crafted and realistic text.

Before: the redactor of commit `--old` (default 34d1ef5, Python `re` with backtracking patterns), read from git.
After: the working tree's (google-re2 over bytes, widened by kind). Each measurement is an interleaved A/B pair
(old, new, old, new...) repeated `--repeat` times; the table gives min / median / max seconds for each.

1. Crafted lines (tests/security/test_linear.py builds them, one per pattern): the URL-credentials line that took
   22 s at 120 KB grows quadratically with the old redactor, linearly with the new one. The old redactor is run
   on shorter versions (`--sizes`, default 8 KB, 16 KB, 32 KB) so that the bench ends; `--full` adds 120 KB.
2. A realistic 128 KiB training-log window (tqdm bars, loss dicts, saves, a few credentials), and a
   Kubernetes pod object: what `collect` redacts once per window and per object.

    python bench/bench_redact.py
    python bench/bench_redact.py --full --repeat 3

3. `--workload SRC [--n N]`: one process that redacts what `collect` redacts for the planted-secret corpus
   (tests/security/corpus.py: its objects, logs and kubeconfig) plus the realistic window and pod object, N times,
   with the redactor of SRC (a `src/` directory). Time two of them, interleaved, with any whole-process timer
   (`/usr/bin/time -v`, hyperfine): the working tree against a checkout of the commit before a change.

    python bench/bench_redact.py --workload src --n 5
    python bench/bench_redact.py --workload /tmp/before/src --n 5
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
# `--workload SRC`: the redactor of another checkout's src/ (a whole-process A/B, see `workload`)
_SRC = sys.argv[sys.argv.index("--workload") + 1] if "--workload" in sys.argv[:-1] else str(ROOT / "src")
sys.path.insert(0, _SRC)

from ckpt_doctor.sources.redact import Redactor  # noqa: E402
from tests.scenario import tqdm  # noqa: E402
from tests.security.test_linear import crafted  # noqa: E402


def old_module(commit: str) -> Any:
    src = subprocess.run(
        ["git", "-C", str(ROOT), "show", f"{commit}:src/ckpt_doctor/sources/redact.py"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    path = Path(tempfile.mkdtemp()) / "redact_before.py"
    path.write_text(src)
    spec = importlib.util.spec_from_file_location("redact_before", path)
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    sys.modules["redact_before"] = mod  # dataclasses look their module up
    spec.loader.exec_module(mod)
    return mod


def realistic_window(size: int = 128 * 1024) -> str:
    bar = "".join(tqdm(s, 100_000) for s in range(300, 340))
    loss = "{'loss': 1.8421, 'learning_rate': 1.9e-05, 'grad_norm': 0.71, 'epoch': 0.42}\n"
    out = "[checkpoint] resuming from /mnt/ckpt/big-run/checkpoint-300\n***** Running training *****\n"
    out += "wandb: Currently logged in as: team (use `wandb login --relogin` to force relogin)\n"
    i = 0
    while len(out) < size:
        out += bar + "\n" + loss
        i += 1
        if i % 20 == 0:
            out += f"[checkpoint] saved /mnt/ckpt/big-run/checkpoint-{300 + i}\n"
        if i % 97 == 0:
            out += "uploading to https://bot:Pl4ntedPw0rd@artifacts.internal/x with Authorization: Bearer abc123\n"
    return out[:size]


def pod_object() -> dict[str, Any]:
    env = [{"name": f"VAR_{i}", "value": f"/mnt/data/{i}"} for i in range(30)]
    env += [{"name": "HF_TOKEN", "value": "hf_" + "a1" * 20}, {"name": "DB_PASSWORD", "value": "s3cr3t-Planted"}]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "sft-node-0-0-abcde",
            "labels": {f"label-{i}": f"value-{i}" for i in range(12)},
            "annotations": {"kubectl.kubernetes.io/last-applied-configuration": json.dumps({"spec": {"env": env}})},
        },
        "spec": {
            "containers": [
                {
                    "name": "node",
                    "image": "ghcr.io/example-org/sft-trainer:1.4.2",
                    "command": ["bash", "-ec"],
                    "args": ["nvidia-smi -L || true\nexec python /opt/train/train.py --output_dir /ckpt"],
                    "env": env,
                }
            ]
        },
        "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"} for _ in range(4)]},
    }


def once(fn: Any) -> float:
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def pair(old: Any, new: Any, repeat: int) -> tuple[list[float], list[float]]:
    a: list[float] = []
    b: list[float] = []
    for _ in range(repeat):
        a.append(once(old))
        b.append(once(new))
    return a, b


def fmt(xs: list[float]) -> str:
    return f"{min(xs):9.4f} {statistics.median(xs):9.4f} {max(xs):9.4f}"


def workload(n: int) -> int:
    """What `collect` redacts for the planted corpus, and the realistic window and pod object, `n` times."""
    from tests.security.corpus import build

    corpus = build()
    objs, logs = corpus.scenario.objects()
    texts = [log.encode() for log in logs.values()] + [realistic_window().encode()]
    pod = pod_object()
    count = 0
    for _ in range(n):
        r = Redactor()
        for o in objs:
            r.learn(o)
        red = [r.obj(o) for o in objs] + [r.obj(pod) for _ in range(20)]
        out = [r.bytes(t) for t in texts]
        count += r.count + len(red) + len(out)
    print(f"{count} redactions and values")
    return 0


def main() -> int:
    if "--workload" in sys.argv:
        w = argparse.ArgumentParser()
        w.add_argument("--workload", metavar="SRC")
        w.add_argument("--n", type=int, default=5)
        return workload(w.parse_args().n)
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--old", default="34d1ef5", help="the commit whose redactor is 'before' (default: 34d1ef5)")
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--sizes", default="8000,16000,32000", help="crafted-line sizes for the old redactor (bytes)")
    p.add_argument("--full", action="store_true", help="also run the old redactor on the 120 KB lines (slow)")
    args = p.parse_args()
    old = old_module(args.old)
    sizes = [int(x) for x in args.sizes.split(",")] + ([120_000] if args.full else [])
    print(f"before: {args.old} (Python re) · after: working tree (RE2) · {args.repeat} interleaved A/B pairs")
    print(f"{'input':52} {'bytes':>7}  {'before min/median/max (s)':>29}  {'after min/median/max (s)':>29}")
    lines = crafted()
    for name in ("url: scheme-like run, userinfo, no @ (the 22 s line)", "flags without values", "dashes"):
        for size in sizes:
            line = crafted(size)[name]
            before, after = (lambda line=line: old.Redactor().text(line)), (lambda line=line: Redactor().text(line))
            a, b = pair(before, after, args.repeat)
            print(f"{name[:52]:52} {size:7}  {fmt(a)}  {fmt(b)}")
    print("\nafter, every crafted line at 120 KB:")
    for name, line in lines.items():
        b = [once(lambda line=line: Redactor().text(line)) for _ in range(args.repeat)]
        print(f"  {name[:50]:50} {len(line):7}  {fmt(b)}")
    window = realistic_window()
    a, b = pair(lambda: old.Redactor().text(window), lambda: Redactor().text(window), args.repeat)
    print(f"\n{'realistic 128 KiB log window':52} {len(window):7}  {fmt(a)}  {fmt(b)}")
    pod = pod_object()
    a, b = pair(
        lambda: [old.Redactor().obj(pod) for _ in range(100)], lambda: [Redactor().obj(pod) for _ in range(100)], 3
    )
    print(f"{'a pod object, x100':52} {'':7}  {fmt(a)}  {fmt(b)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
