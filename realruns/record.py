"""Record real framework runs: run each trainer as a container would, inject its faults, restart it with the
same command, and keep per attempt its log (byte for byte), the checkpoint tree after it and the ground
truth from inside the process (harness/hooks/sitecustomize.py). See recordings/README.md for the format.

    python realruns/record.py                  # every run of realruns/matrix.py whose venv is built
    python realruns/record.py 'hf-4.57-*'      # the runs whose id matches
    python realruns/record.py --jobs 2 ...     # two runs at a time (each under nice -n 10)

Runs with the project's Python (PyYAML); the trainers run with their venv's python (realruns/.venvs).
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
from matrix import RUNS, Fault, Run  # noqa: E402

RECORDINGS = ROOT / "recordings"
WORK = HERE / "work"
VENVS = HERE / ".venvs"
HOOKS = HERE / "harness" / "hooks"
SHIM = HERE / "harness" / "container.py"
SCRIPTS = HERE / "scripts"
WS, CK = "/workspace", "/mnt/checkpoints"
COMPLETENESS = {"trainer_state.json", "latest", "latest_checkpointed_iteration.txt", "training_metadata.json",
                "_CHECKPOINT_METADATA", "commit_success.txt"}  # fmt: skip
ATTEMPT_TIMEOUT = 300.0


def rfc3339(t: float) -> str:
    return datetime.fromtimestamp(t, tz=UTC).strftime("%Y-%m-%dT%H:%M:%S.") + f"{int(t * 1000) % 1000:03d}Z"


def read_events(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    out = []
    for line in path.read_text().splitlines():
        try:
            out.append(json.loads(line))
        except json.JSONDecodeError:
            pass  # a line being written
    return out


def host_pid_of(ns_pid: int, init_host_pid: int) -> int | None:
    """The host pid of the process that is NS_PID inside the container whose PID 1 is INIT_HOST_PID."""
    try:
        ns = os.readlink(f"/proc/{init_host_pid}/ns/pid")
    except OSError:
        return None
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            if os.readlink(d / "ns" / "pid") != ns:
                continue
            for line in (d / "status").read_text().splitlines():
                if line.startswith("NSpid:") and int(line.split()[-1]) == ns_pid:
                    return int(d.name)
        except (OSError, ValueError):
            continue
    return None


def catches(pid: int, sig: int) -> bool | None:
    """Whether the process has a handler for SIG (/proc/PID/status SigCgt), None when it cannot be read."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("SigCgt:"):
                return bool(int(line.split()[1], 16) & (1 << (sig - 1)))
    except OSError:
        return None
    return None


def listing(host_dir: Path, container_dir: str, at: float) -> str:
    """`find DIR -maxdepth 4 -printf '%y %s %T@ %p\\n'` run where DIR has its container path."""
    rel = os.path.relpath(container_dir, CK)
    cmd = f"mount --bind {host_dir} {CK} && cd / && find {CK}/{rel} -maxdepth 4 -printf '%y %s %T@ %p\\n' | sort -k4"
    if rel == ".":
        cmd = cmd.replace(f"{CK}/.", CK)
    got = subprocess.run(["unshare", "-m", "--propagation", "private", "sh", "-c", cmd],
                         capture_output=True, text=True)  # fmt: skip
    body = got.stdout if got.returncode == 0 or got.stdout else ""
    return f"# dir: {container_dir}\n# at: {rfc3339(at)}\n" + body


def keep_completeness_files(host_root: Path, container_dir: str, dest: Path) -> list[str]:
    rel_dir = os.path.relpath(container_dir, CK)
    base = host_root / rel_dir
    kept = []
    if not base.is_dir():
        return kept
    for p in sorted(base.rglob("*")):
        if p.is_file() and p.name in COMPLETENESS and p.stat().st_size <= 65536 and len(p.relative_to(base).parts) <= 4:
            rel = p.relative_to(base)
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(p, dest / rel)
            kept.append(str(rel))
    return kept


def truth_of(events: list[dict[str, Any]], fault: Fault | None, status: dict[str, Any],
             delivered: bool | None = True) -> dict[str, Any]:  # fmt: skip
    """An attempt's ground truth from the process's own events (never from its log)."""
    main = [e for e in events if e.get("rank") in (None, 0)]
    steps = [e["step"] for e in main if e["event"] == "step"]
    all_ranks = sorted({e.get("rank") for e in events if e["event"] == "step"}, key=lambda r: -1 if r is None else r)
    starts = {}
    for e in main:
        if e["event"] == "save_start":
            starts[(e["step"], e.get("path"))] = e
    done = {(e["step"], e.get("path")) for e in main if e["event"] == "save_end"}
    failed = {(e["step"]) for e in main if e["event"] == "save_error"}
    complete = sorted({s for s, _p in done})
    partial = sorted({s for (s, p) in starts if (s, p) not in done and s not in complete} - failed)
    partial_paths = sorted({p for (s, p) in starts if (s, p) not in done and p})
    reads = [e["path"] for e in main if e["event"] == "read"]
    uncaught = next((e for e in main if e["event"] == "uncaught"), None)
    first = min(steps) if steps else None
    code, sig = status.get("exit_code"), status.get("signal")
    if fault is not None and fault.kind in ("kill", "kill-rank", "term") and sig == "SIGKILL":
        ended_by = "killed"
    elif fault is not None and fault.kind == "term" and delivered is not False:
        ended_by = "terminated"
    elif code == 0:
        ended_by = "completed"
    else:
        ended_by = "crashed"
    resume_path = resumed_path(reads)
    out: dict[str, Any] = {
        "exit_code": code,
        "signal": sig,
        "ended_by": ended_by,
        "steps": {"first": first, "last": max(steps)} if steps else None,
        "saves_complete": complete,
        "saves_partial": partial,
        "resumed_from": (first - 1) if first is not None and first > 1 else None,
        "resume_path": resume_path,
        "crashed_while_loading": bool(resume_path) and not steps and ended_by == "crashed",
        "files_read": reads[:20],
        "uncaught": ({"type": uncaught["type"], "message": uncaught["message"]} if uncaught else None),
        "sigterm_handler": any(e["event"] == "sigterm_handler" for e in events),
        "save_paths": sorted({p for (_s, p) in done if p}),
        "partial_paths": partial_paths,
        "ranks": [r for r in all_ranks if r is not None] or None,
    }
    if failed:
        out["saves_failed"] = sorted(failed)
    return out


POINTERS = {"latest", "latest_checkpointed_iteration.txt"}


def resumed_path(reads: list[str]) -> str | None:
    """What the process resumed from: the one file it read from the checkpoint volume before its first
    step, or the deepest folder holding all of them (pointer files such as DeepSpeed's `latest` aside)."""
    data = [p for p in reads if os.path.basename(p) not in POINTERS] or reads
    if not data:
        return None
    if len(set(data)) == 1:
        return data[0]
    return os.path.commonpath(data)


def verdict(attempts: list[dict[str, Any]], run: Run) -> dict[str, list[str]]:
    """The symptom rules as the truth decides them (contracts.md §4), and the run's causes: `fail` and `pass`, and
    `not_fail`: rules a correct diagnosis must not fail though a bundle may not prove they pass (judged so by
    tests/recordings/judge.py). Computed from the attempts' truth alone: `record.py --verdicts` recomputes it for
    the committed recordings without running any framework."""
    fail: list[str] = []
    ok: list[str] = []
    not_fail: list[str] = []

    def decide(rule: str, failed: bool, known: bool = True) -> None:
        if known:
            (fail if failed else ok).append(rule)

    later = attempts[1:]
    worked = [a for a in attempts if a["steps"]]
    if later and worked:
        ran_before = [any(b["steps"] for b in attempts[:i]) for i in range(len(attempts))]
        fresh = [a for i, a in enumerate(attempts) if i and ran_before[i] and a["steps"] and a["resumed_from"] is None]
        stepped_later = [a for i, a in enumerate(attempts) if i and ran_before[i] and a["steps"]]
        decide("fresh-start-after-restart", bool(fresh), bool(fresh) or bool(stepped_later))
        older = False
        resumed_any = False
        for i, a in enumerate(attempts):
            if a["resumed_from"] is None:
                continue
            resumed_any = True
            best = max((s for b in attempts[:i] for s in b["saves_complete"]), default=None)
            older = older or (best is not None and best > a["resumed_from"])
        decide("resumed-older-checkpoint", older, older or resumed_any)
        crashed = any(a["crashed_while_loading"] for a in attempts)
        decide("resume-crashed", crashed)
        partial_paths = set()
        picked_partial = False
        for a in attempts:
            if a["resume_path"] and any(a["resume_path"] == p or a["resume_path"].startswith(p + "/")
                                        for p in partial_paths):  # fmt: skip
                picked_partial = True
            partial_paths |= set(a.get("partial_paths") or [])
        decide("partial-latest-checkpoint", picked_partial)
        missing = False
        termed = False
        for i, a in enumerate(attempts[:-1]):
            f = a["fault"] or {}
            if f.get("signal") != "SIGTERM" or not a["steps"]:
                continue
            termed = True
            nxt = attempts[i + 1]
            final = a["steps"]["last"] in a["saves_complete"]
            if not final and nxt["resumed_from"] is not None and nxt["resumed_from"] < a["steps"]["last"]:
                missing = True
        decide("final-checkpoint-missing", missing, termed and (missing or any(
            a["resumed_from"] is not None for a in later)))  # fmt: skip
        # an attempt SIGTERM stopped that exited 0 (Kubernetes counts the pod as Succeeded); a non-zero exit here
        # says nothing of the code, which the engine also judges (a handler that would exit 0 given the time)
        if any(a["ended_by"] == "terminated" and a["exit_code"] == 0 for a in attempts[:-1]):
            decide("sigterm-exit-zero", True)
        # an attempt stopped before a later one (a fault, or an end other than completing) that trained: it fails
        # when one had no complete save of its own and the next attempt had nothing to resume from; it passes when
        # each saved (one without a save whose successor resumed from an earlier checkpoint decides neither)
        stopped = [(a, attempts[i + 1]) for i, a in enumerate(attempts[:-1])
                   if a["steps"] and (a["fault"] or a["ended_by"] != "completed")]  # fmt: skip
        unsaved = [(a, nxt) for a, nxt in stopped if not a["saves_complete"]]
        lost = any(not nxt["resumed_from"] for _a, nxt in unsaved)
        decide("no-checkpoint-before-interruption", lost, bool(stopped) and (lost or not unsaved))
    # no attempt was sent SIGTERM (a SIGKILL or a crash ended them): there was no final save to make, so
    # final-checkpoint-missing must not fail, though a bundle may not show every attempt to prove it passes
    if "final-checkpoint-missing" not in fail + ok and not any(
            (a["fault"] or {}).get("signal") == "SIGTERM" for a in attempts):  # fmt: skip
        not_fail.append("final-checkpoint-missing")
    for c in run.causes_fail:
        if c not in fail:
            fail.append(c)
    for c in run.causes_pass:
        if c not in ok:
            ok.append(c)
    return {"fail": fail, "pass": ok, "not_fail": [r for r in not_fail if r not in fail + ok]}


def recompute_verdicts(root: Path = RECORDINGS) -> list[str]:
    """Rewrite the `verdict` of every recording under `root` from its committed truth (`attempts`) and its run's
    causes in matrix.py (a second take's from its first take's run): no framework runs. The rest of each run.yaml
    is written back as it was. Returns the ids whose verdict changed."""
    by_id = {r.id: r for r in RUNS}
    changed = []
    for p in sorted(root.glob("*/run.yaml")):
        doc = yaml.safe_load(p.read_text())
        run = by_id.get(doc["id"]) or by_id.get(doc.get("first_take") or "")
        if run is None:
            raise SystemExit(f"{p}: no run {doc['id']!r} in realruns/matrix.py")
        new = verdict(doc["attempts"], run)
        if new != doc.get("verdict"):
            doc["verdict"] = new
            p.write_text(yaml.safe_dump(doc, sort_keys=False, allow_unicode=True, width=110))
            changed.append(doc["id"])
    return changed


class Recorder:
    def __init__(self, run: Run) -> None:
        self.run = run
        self.out = RECORDINGS / run.id
        self.work = WORK / run.id
        self.python = VENVS / run.venv / "bin"

    def env(self, truth: Path, attempt: int) -> dict[str, str]:
        env = {
            "PATH": "/opt/venv/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
            "HOME": "/root",
            "HOSTNAME": f"{self.run.trainjob}-node-0-0",  # JobSet sets the pod's hostname; stable over restarts
            "LANG": "C.UTF-8",
            **self.run.env,
            # the harness's own (not the container's): side channel, pacing, no hub
            "PYTHONPATH": str(HOOKS),
            "REALRUNS_TRUTH": str(truth),
            "REALRUNS_STEP_DELAY": str(self.run.step_delay),
            "HF_HUB_OFFLINE": "1",
            "HF_DATASETS_OFFLINE": "1",
            "TRANSFORMERS_OFFLINE": "1",
        }
        fault = self.run.faults[attempt] if attempt < len(self.run.faults) else None
        if fault is not None and fault.slow_save:
            env["REALRUNS_SLOW_SAVE"] = str(fault.slow_save)
        return env

    def record(self) -> dict[str, Any]:
        r = self.run
        for d in (self.out, self.work):
            if d.exists():
                shutil.rmtree(d)
        (self.work / "ws").mkdir(parents=True)
        (self.work / "ck").mkdir(parents=True)
        self.out.mkdir(parents=True)
        script = (SCRIPTS / r.script).read_text()
        (self.work / "ws" / "train.py").write_text(script)
        (self.out / "workspace").mkdir()
        (self.out / "workspace" / "train.py").write_text(script)
        for name, text in r.files.items():
            (self.work / "ws" / name).write_text(text)
            (self.out / "workspace" / name).write_text(text)
        attempts = []
        for i in range(len(r.faults)):
            attempts.append(self.attempt(i))
            log = (self.out / f"attempt-{i}.log").read_bytes()
            if b"sitecustomize" in log or b"realruns" in log:
                raise RuntimeError(f"the harness shows in {r.id}/attempt-{i}.log: a recording must not")
        doc = {
            "id": r.id,
            "framework": r.framework,
            "versions": self.versions(),
            "scenario": r.scenario,
            "description": r.description,
            "image_path_of_script": f"{WS}/train.py",
            "script": "workspace/train.py",
            "command": r.command,
            "env": dict(r.env),
            "checkpoint_dir": r.checkpoint_dir,
            "trainjob": r.trainjob,
            "ranks": r.ranks,
            "grace_seconds": r.grace,
            "harness": {"venv": r.venv, "step_delay": r.step_delay, "container": "own PID and mount namespaces; "
                        "the trainer is PID 1; stdout+stderr to one file; no TTY; stdin /dev/null"},
            "attempts": attempts,
            "verdict": verdict(attempts, r),
            "notes": list(r.notes),
        }
        (self.out / "run.yaml").write_text(yaml.safe_dump(doc, sort_keys=False, allow_unicode=True, width=110))
        shutil.rmtree(self.work, ignore_errors=True)
        return doc

    def versions(self) -> dict[str, str]:
        code = ("import importlib.metadata as m, platform, json; out={'python': platform.python_version()}\n"
                f"for p in {self.run.packages!r}:\n"
                "    try: out[p]=m.version(p)\n    except m.PackageNotFoundError: pass\n"
                "print(json.dumps(out))")  # fmt: skip
        got = subprocess.run([str(self.python / "python"), "-c", code], capture_output=True, text=True, check=True)
        return json.loads(got.stdout)

    def attempt(self, i: int) -> dict[str, Any]:
        r = self.run
        fault = r.faults[i]
        truth = self.work / f"attempt-{i}.truth.jsonl"
        status_file = self.work / f"attempt-{i}.status.jsonl"
        log_path = self.out / f"attempt-{i}.log"
        # the venv at the image's path (its console scripts point there: build_envs.as_opt_venv)
        mounts = [f"{self.work / 'ws'}:{WS}", f"{self.work / 'ck'}:{CK}", f"{VENVS / r.venv}:/opt/venv"]
        cmd = ["nice", "-n", "10", sys.executable, str(SHIM), str(status_file), r.workdir, *mounts, "--", *r.command]
        started = time.time()
        with log_path.open("wb") as log:
            p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                 env=self.env(truth, i), start_new_session=True, cwd="/")  # fmt: skip
            what = self.drive(p, fault, truth, status_file)
        ended = time.time()
        if what.get("when") == "harness timeout":
            raise RuntimeError(f"{r.id} attempt {i} ran past {ATTEMPT_TIMEOUT:.0f} s (a hang?): not recorded")
        status = next((e for e in read_events(status_file) if e["event"] == "container_exit"), {})
        events = read_events(truth)
        (self.out / f"attempt-{i}.listing").write_text(listing(self.work / "ck", r.checkpoint_dir, ended))
        files = self.out / f"attempt-{i}.files"
        kept = keep_completeness_files(self.work / "ck", r.checkpoint_dir, files)
        if not kept and files.exists():
            shutil.rmtree(files)
        t = truth_of(events, fault if fault.kind else None, status, what.get("sigterm_caught_by_pid1"))
        fault_doc = None
        if fault.kind:
            fault_doc = {"signal": "SIGTERM" if fault.kind == "term" else "SIGKILL", "target": fault.target(),
                         "when": what.get("when", fault.describe())}  # fmt: skip
            if fault.kind == "term":
                fault_doc["grace_seconds"] = fault.grace
                fault_doc["sigkill_after_grace"] = what.get("sigkill_after_grace", False)
                fault_doc["caught_by_pid1"] = what.get("sigterm_caught_by_pid1")
                if what.get("sent_at"):
                    fault_doc["sent_at"] = what["sent_at"]
            if fault.slow_save:
                fault_doc["slow_storage_seconds_per_file"] = fault.slow_save
        return {"index": i, "started": rfc3339(started), "ended": rfc3339(ended), "fault": fault_doc, **t,
                "files": kept}  # fmt: skip

    def drive(self, p: subprocess.Popen, fault: Fault, truth: Path, status_file: Path) -> dict[str, Any]:
        """Wait for the attempt to end, injecting its fault at its moment."""
        init = None
        t0 = time.monotonic()
        fired = False
        term_at = None
        seen_save: dict[str, Any] | None = None
        what: dict[str, Any] = {}
        while p.poll() is None:
            time.sleep(0.02)
            if init is None:
                st = next((e for e in read_events(status_file) if e["event"] == "container_start"), None)
                init = st["host_pid"] if st else None
                if init is None:
                    continue
            if time.monotonic() - t0 > ATTEMPT_TIMEOUT:
                os.kill(init, signal.SIGKILL)
                what["when"] = "harness timeout"
                break
            if not fault.kind:
                continue
            events = read_events(truth)
            main = [e for e in events if e.get("rank") in (None, 0) or e["event"] != "step"]
            step = max((e["step"] for e in main if e["event"] == "step"), default=0)
            if not fired:
                hit = False
                if fault.during_save is not None:
                    for e in events:
                        if e["event"] == "save_start" and e.get("step") == fault.during_save:
                            seen_save = e
                        if seen_save is not None and e["event"] == "save_file" and e["t"] >= seen_save["t"]:
                            hit = True
                            what["when"] = (f"during the save of step {fault.during_save}, after it wrote "
                                            f"{os.path.basename(str(e['path']))}")  # fmt: skip
                            break
                elif fault.during_final_save:
                    hit = term_at is not None
                elif fault.at_step is not None and step >= fault.at_step:
                    hit = True
                    what["when"] = f"at step {step}"
                if fault.kind == "term" and fault.at_step is not None and step >= fault.at_step:
                    hit = True
                    what["when"] = f"at step {step}"
                if hit:
                    fired = True
                    if fault.kind == "term":
                        # PID 1 gets a signal from outside its namespace only if it catches it (SigCgt)
                        what["sigterm_caught_by_pid1"] = catches(init, signal.SIGTERM)
                        what["sent_at"] = rfc3339(time.time())  # when the kubelet would say Killing
                        os.kill(init, signal.SIGTERM)
                        term_at = time.monotonic()
                    elif fault.kind == "kill-rank":
                        ns_pid = next((e["pid"] for e in events if e["event"] == "proc_start"
                                       and e.get("rank") == fault.rank), None)  # fmt: skip
                        hp = host_pid_of(ns_pid, init) if ns_pid is not None else None
                        if hp is not None:
                            os.kill(hp, signal.SIGKILL)
                            what["when"] += f" (rank {fault.rank})"
                    else:
                        os.kill(init, signal.SIGKILL)
            elif term_at is not None and time.monotonic() - term_at > fault.grace:
                os.kill(init, signal.SIGKILL)
                what["sigkill_after_grace"] = True
                term_at = None
        p.wait()
        return what


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("patterns", nargs="*")
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--verdicts", action="store_true",
                    help="recompute the verdict of every committed recordings/*/run.yaml from its truth; runs nothing")
    ns = ap.parse_args()
    if ns.verdicts:
        changed = recompute_verdicts()
        print(f"verdicts recomputed: {len(changed)} changed" + (f" ({', '.join(changed)})" if changed else ""))
        return 0
    runs = [r for r in RUNS if not ns.patterns or any(fnmatch.fnmatch(r.id, p) for p in ns.patterns)]
    if ns.list:
        for r in runs:
            print(r.id)
        return 0
    ready = [r for r in runs if (VENVS / r.venv / "bin" / "python").exists()]
    for r in runs:
        if r not in ready:
            print(f"skip {r.id}: venv {r.venv} not built (python realruns/build_envs.py {r.venv})", flush=True)
    t0 = time.monotonic()

    def one(r: Run) -> str:
        t = time.monotonic()
        try:
            doc = Recorder(r).record()
        except Exception as e:  # one run's failure must not stop the others
            return f"{r.id}: FAILED {type(e).__name__}: {e}"
        ends = ", ".join(f"{a['ended_by']}({a['exit_code']})" for a in doc["attempts"])
        return f"{r.id}: {time.monotonic() - t:.0f} s: {ends}"

    with ThreadPoolExecutor(max_workers=ns.jobs) as pool:
        for line in pool.map(one, ready):
            print(line, flush=True)
    print(f"recorded {len(ready)} runs in {time.monotonic() - t0:.0f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
