"""Benchmark the log reader (facts/logs.py) on realistic and crafted windows.

1. The keyword pass: a google-re2 `Set` (what the scanner uses) against a pyahocorasick 2.3
   automaton over the same windows, both asked "which keywords occur here", the automaton also
   giving positions. Figures are microseconds per 128 KiB window and MB/s.
2. `scan_log` on: a realistic HF-style log (resume line, tqdm bars, loss dicts, saves), a crafted
   120 KB line full of keywords, the 128 KiB head window of a one-megabyte line, a crash loop's
   tracebacks one after another (the typed traceback reader), and JSON records between the frames
   of a bar redrawn every step (the structured records and the stepless-bar probing).
3. With `--old`, the same logs scanned by the previous implementation (read from git HEAD~ or
   the commit given), to show what changed.

    python bench/bench_logs.py
    python bench/bench_logs.py --old HEAD
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "src"))

import re2  # noqa: E402

from ckpt_doctor.facts import logs  # noqa: E402
from ckpt_doctor.snapshot import LogRef  # noqa: E402
from tests.scenario import tqdm  # noqa: E402


def realistic_window(size: int = logs.HEAD_BYTES) -> bytes:
    bar = "".join(tqdm(s, 100_000) for s in range(300, 340))
    loss = "{'loss': 1.8421, 'learning_rate': 1.9e-05, 'grad_norm': 0.71, 'epoch': 0.42}\n"
    out = "[checkpoint] resuming from /mnt/ckpt/big-run/checkpoint-300\n***** Running training *****\n"
    i = 0
    while len(out) < size:
        out += bar + "\n" + loss
        i += 1
        if i % 20 == 0:
            out += f"[checkpoint] saved /mnt/ckpt/big-run/checkpoint-{300 + i}\n"
    return out.encode()[:size]


def crafted_line() -> bytes:
    # what made the previous reader take tens of seconds: a keyword every few bytes, each hit
    # re-running a backtracking pattern over the 2,000 characters around it
    return b"No such file or directory: trainer_state.json checkpoint from " * 2000 + b"\n"


def megabyte_line() -> bytes:
    return b"[checkpoint] resuming from /x/checkpoint-5 " + b"1it/s] SIGTERM loaded " * (1024 * 1024 // 22) + b"\n"


def traceback_window(size: int = logs.HEAD_BYTES) -> bytes:
    # a crash loop's log: tracebacks (through a library and the program) one after another
    tb = (b"Traceback (most recent call last):\n"
          b'  File "/workspace/train.py", line 46, in main\n    accelerator.load_state(path)\n'
          b'  File "/opt/venv/lib/python3.11/site-packages/torch/serialization.py", line 776, in __init__\n'
          b"    super().__init__(open(name, mode))\n"
          b"FileNotFoundError: [Errno 2] No such file or directory: '/ckpt/step_30/optimizer.bin'\n")  # fmt: skip
    return (b"Resuming from checkpoint /ckpt/step_30 (step 30)\n" + tb * (size // len(tb) + 1))[:size]


def json_window(size: int = logs.HEAD_BYTES) -> bytes:
    # a structured logger: every line a JSON record, a tqdm bar redrawn every step in between
    out = bytearray()
    i = 0
    while len(out) < size:
        i += 1
        out += b"Epoch 0:  50%%|#####     | %d/100000 [00:01<00:01, 9.0it/s]\r" % i
        if i % 5 == 0:
            out += b'{"time": "2026-12-02T02:05:07Z", "msg": "train", "step": %d, "loss": 4.88}\n' % i
        if i % 50 == 0:
            out += b'{"time": "2026-12-02T02:05:08Z", "msg": "saved checkpoint", "step": %d}\n' % i
    return bytes(out[:size])


def timeit(fn, repeat: int) -> list[float]:
    out = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t)
    return out


def fmt(xs: list[float], per: int = 1) -> str:
    xs = [x / per * 1e6 for x in xs]
    return f"min {min(xs):9.1f} us  median {statistics.median(xs):9.1f} us  max {max(xs):9.1f} us"


def keyword_pass(windows: dict[str, bytes], repeat: int) -> None:
    import ahocorasick

    sigs = logs.load_signatures()
    words = sorted({w.encode().lower() for s in sigs for w in (s.keywords or (s.keyword,))})
    opts = re2.Options()
    opts.case_sensitive = False
    kset = re2.Set.SearchSet(opts)
    for w in words:
        kset.Add(re2.escape(w))
    kset.Compile()
    auto = ahocorasick.Automaton()
    for i, w in enumerate(words):
        auto.add_word(w.decode("latin-1"), i)
    auto.make_automaton()

    def aho(raw: bytes) -> set[int]:  # lower-case once (ASCII, same length), then every hit
        return {v for _end, v in auto.iter(raw.lower().decode("latin-1"))}

    print(f"keyword pass: {len(words)} keywords, ASCII case ignored")
    for name, raw in windows.items():
        a = timeit(lambda raw=raw: kset.Match(raw), repeat)
        b = timeit(lambda raw=raw: aho(raw), repeat)
        mb = len(raw) / 1e6
        print(f"  {name:<26} re2.Set  {fmt(a)}  ({mb / min(a):7.0f} MB/s)")
        print(f"  {'':<26} aho      {fmt(b)}  ({mb / min(b):7.0f} MB/s)  re2.Set x{min(b) / min(a):.1f} faster")
        assert set(kset.Match(raw) or []) == aho(raw)


def scans(windows: dict[str, bytes], repeat: int, old: object | None) -> None:
    sigs = logs.load_signatures()
    print("\nscan_log (head + tail windows)")
    with tempfile.TemporaryDirectory() as d:
        for name, raw in windows.items():
            p = Path(d) / f"{name}.log"
            p.write_bytes(raw)
            ref = LogRef("p", "node", False, path=p)
            t = timeit(lambda ref=ref: logs.scan_log(ref, sigs), repeat)
            s = logs.scan_log(ref, sigs)
            print(f"  {name:<26} {fmt(t)}  events={len(s.events)}")
            if old is not None:
                osigs = old.load_signatures()  # type: ignore[attr-defined]
                t0 = time.perf_counter()
                old.scan_log(ref, osigs)  # type: ignore[attr-defined]
                print(f"  {'':<26} previous implementation: {time.perf_counter() - t0:.3f} s (one run)")


def load_old(rev: str) -> object | None:
    try:
        src = subprocess.run(["git", "-C", str(ROOT), "show", f"{rev}:src/ckpt_doctor/facts/logs.py"],
                             capture_output=True, text=True, check=True).stdout
        rules = tempfile.mkdtemp(prefix="old-sigs-")
        names = subprocess.run(["git", "-C", str(ROOT), "ls-tree", "--name-only", f"{rev}:rules/signatures"],
                               capture_output=True, text=True, check=True).stdout.split()
        for n in names:
            body = subprocess.run(["git", "-C", str(ROOT), "show", f"{rev}:rules/signatures/{n}"],
                                  capture_output=True, text=True, check=True).stdout
            Path(rules, n).write_text(body)
    except (subprocess.CalledProcessError, FileNotFoundError):
        return None
    path = Path(tempfile.mkdtemp()) / "old_logs.py"
    path.write_text(src)
    spec = importlib.util.spec_from_file_location("old_logs", path)
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    sys.modules["old_logs"] = mod
    spec.loader.exec_module(mod)
    mod.rules_dir = lambda: Path(rules).parent  # type: ignore[attr-defined]
    mod._packaged_signatures = lambda: tuple(mod._read_dir(Path(rules)))  # type: ignore[attr-defined]
    return mod


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=50)
    ap.add_argument("--old", metavar="REV", help="also time the implementation at this git revision")
    args = ap.parse_args()
    real = realistic_window()
    windows = {
        "realistic 128 KiB window": real,
        "crafted 120 KB line": crafted_line(),
        "1 MB line (head window)": megabyte_line()[: logs.HEAD_BYTES],
        "tracebacks 128 KiB": traceback_window(),
        "JSON records 128 KiB": json_window(),
    }
    keyword_pass(windows, args.repeat)
    logs_ = {
        "realistic log (512 KB)": realistic_window(512 * 1024),
        "crafted 120 KB line": crafted_line(),
        "1 MB line": megabyte_line(),
        "tracebacks (512 KB)": traceback_window(512 * 1024),
        "JSON records (512 KB)": json_window(512 * 1024),
    }
    scans(logs_, max(5, args.repeat // 5), load_old(args.old) if args.old else None)


if __name__ == "__main__":
    main()
