"""Turn each real run of `recordings/` into bundles (contracts.md §2), one per way Kubernetes restarts it.

A run (realruns/, recorded on CPU with the real framework) has per attempt its log, the checkpoint tree
after it and the ground truth. Around it this builds the objects a cluster would hold: the TrainJob, its
runtime (with the ancestor label), the JobSet with a failurePolicy, the Jobs and pods whose container
runs the recorded command and env with the PVC mounted at the checkpoint directory and the recorded
script in a ConfigMap mounted at /workspace, times taken from the recorded attempts, and events.

Restart models:
- in-place: one pod, the container restarted by the kubelet (restartCount, `.previous.log` holds only
  the attempt before the last);
- jobset-kept: a JobSet restart per attempt, every pod kept (a recorder kept them) with its log;
- jobset-gone: a JobSet restart per attempt, the old pods deleted: only the last attempt's pod and log;
- suspend-resume: the TrainJob suspended (SIGTERM to its pod) and resumed with a new pod: the old pod
  and its log gone, its events left.

    python -m tests.recordings.bundles          # rewrites tests/recordings/bundles/ (never edit by hand)
"""

from __future__ import annotations

import math
import shutil
import sys
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml

from ckpt_doctor.data import recordings_dir
from tests.scenario import T0, Attempt, PodSpecKnobs, Scenario

OUT = Path(__file__).resolve().parent / "bundles"
MODELS = ("in-place", "jobset-kept", "jobset-gone", "suspend-resume")
# the package whose version names a framework's row and image tag
FW_PACKAGE = {"hf-trainer": "transformers", "lightning": "lightning", "accelerate": "accelerate",
              "torch-dcp": "torch", "deepspeed": "deepspeed", "orbax": "orbax-checkpoint"}  # fmt: skip


def load_run(run_dir: Path) -> dict[str, Any]:
    run = yaml.safe_load((run_dir / "run.yaml").read_text())
    run["_dir"] = run_dir
    return run


def all_runs(root: Path | None = None) -> list[dict[str, Any]]:
    root = root or recordings_dir()
    return [load_run(d) for d in sorted(root.iterdir()) if (d / "run.yaml").is_file()]


def models_for(run: dict[str, Any]) -> tuple[str, ...]:
    """SIGTERM comes from a suspend (or a preemption); a SIGKILL or a crash from a failure, which the kubelet
    restarts in place or the JobSet restarts."""
    faults = [a["fault"] for a in run["attempts"][:-1]]
    if any(f and f.get("signal") == "SIGTERM" for f in faults):
        return ("suspend-resume", "jobset-kept")
    if len(run["attempts"]) < 2:
        return ("jobset-kept",)
    return ("in-place", "jobset-kept", "jobset-gone")


def bundle_id(run: dict[str, Any], model: str) -> str:
    return f"{run['id']}--{model}"


def epoch(s: str) -> float:
    return datetime.fromisoformat(s.replace("Z", "+00:00")).timestamp()


def k8s_time(t: float, up: bool = False) -> str:
    t = math.ceil(t) if up else math.floor(t)
    return datetime.fromtimestamp(t, tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def minutes(t: float) -> float:
    return (t - T0.timestamp()) / 60


@dataclass
class RecAttempt(Attempt):
    t_start: float = 0.0
    t_end: float = 0.0
    truth: dict[str, Any] | None = None
    previous: dict[str, Any] | None = None  # in-place: the instance before this one


class Recorded(Scenario):
    """A Scenario whose pods carry the recorded attempts' exact times, commands and exits."""

    def __init__(self, run: dict[str, Any], model: str) -> None:
        ver = run["versions"].get(FW_PACKAGE.get(run["framework"], ""), run["versions"]["python"])
        knobs = PodSpecKnobs(
            command=list(run["command"]),
            args=[],
            env=[],
            ckpt_volume="pvc",
            mount_path="/mnt/checkpoints",
            grace=int(run.get("grace_seconds") or 30),
            image=f"registry.example.com/ml/{run['framework']}-trainer:{ver}",
            script=(run["_dir"] / run.get("script", "workspace/train.py")).read_text(),
            resources={"limits": {"cpu": "2", "memory": "8Gi"}},
        )
        super().__init__(name=run["trainjob"], knobs=knobs)
        self.run, self.model = run, model
        self.trainer_env = [{"name": k, "value": str(v)} for k, v in run["env"].items()]
        self.pvc_name = "checkpoints"
        self.bundle_meta = {"trainerVersion": "v2.1.0"}
        if model == "in-place":
            self.backoff_limit = 3

    def container(self, with_trainer: bool = False) -> dict[str, Any]:
        c = super().container(with_trainer)
        for m in c.get("volumeMounts", []):
            if m["name"] == "train-script":
                m["mountPath"] = "/workspace"
        c["workingDir"] = "/workspace"
        return c

    def pod(self, a: Attempt, index: int, gen: int) -> dict[str, Any]:
        p = super().pod(a, index, gen)
        if not isinstance(a, RecAttempt) or a.truth is None:
            return p
        t = a.truth
        p["metadata"]["creationTimestamp"] = k8s_time(a.t_start - 3)
        st = p["status"]
        st["startTime"] = k8s_time(a.t_start - 2)
        code = t["exit_code"]
        cs = st["containerStatuses"][0]
        cs["state"] = {"terminated": _terminated(code, a.t_start, a.t_end)}
        cs["ready"] = cs["started"] = False
        if a.previous is not None:
            prev = a.previous
            cs["lastState"] = {"terminated": _terminated(prev["exit_code"], epoch(prev["started"]),
                                                         epoch(prev["ended"]))}  # fmt: skip
            cs["restartCount"] = self._restarts
            st["startTime"] = k8s_time(self._pod_start - 2)
            p["metadata"]["creationTimestamp"] = k8s_time(self._pod_start - 3)
        st["phase"] = "Succeeded" if code == 0 else "Failed"
        st["conditions"] = [{"type": "Ready", "status": "False", "reason": "PodCompleted" if code == 0 else
                             "PodFailed", "lastTransitionTime": k8s_time(a.t_end, up=True)}]  # fmt: skip
        return p

    _restarts = 0
    _pod_start = 0.0


def _terminated(code: int, start: float, end: float) -> dict[str, Any]:
    return {"exitCode": code, "reason": "Completed" if code == 0 else "Error",
            "startedAt": k8s_time(start), "finishedAt": k8s_time(end, up=True)}  # fmt: skip


def build(run: dict[str, Any], model: str) -> tuple[Recorded, dict[str, tuple[str, int]]]:
    """The scenario of one run under one restart model, and which attempt's listing each kept pod shows."""
    s = Recorded(run, model)
    atts = run["attempts"]
    n = len(atts)
    logs = [(run["_dir"] / f"attempt-{a['index']}.log").read_bytes().decode("utf-8", "surrogateescape") for a in atts]

    def rec(i: int, ra: int, kept: bool) -> RecAttempt:
        a = atts[i]
        t0, t1 = epoch(a["started"]), epoch(a["ended"])
        return RecAttempt(restart_attempt=ra, node=f"cpu-node-{'abc'[i % 3]}", log=logs[i], phase="Failed",
                          exit_code=a["exit_code"], started=minutes(t0), kept=kept, t_start=t0, t_end=t1,
                          truth=a)  # fmt: skip

    if model == "in-place":
        last = rec(n - 1, 0, True)
        last.previous = atts[n - 2] if n >= 2 else None
        last.previous_log = logs[n - 2] if n >= 2 else None
        last.node = "cpu-node-a"
        s._restarts = n - 1
        s._pod_start = epoch(atts[0]["started"])
        last.started = minutes(s._pod_start)
        s.attempts = [last]
        listed = {0: n - 1}
    elif model in ("jobset-kept", "jobset-gone"):
        s.attempts = [rec(i, i, model == "jobset-kept" or i == n - 1) for i in range(n)]
        s.js_restarts = n - 1
        listed = {i: i for i in range(n)} if model == "jobset-kept" else {n - 1: n - 1}
    else:  # suspend-resume: a new pod per attempt, the same restart-attempt; old pods deleted
        s.attempts = [rec(i, 0, i == n - 1) for i in range(n)]
        # distinct pod names per attempt (a new pod after each resume)
        for i, a in enumerate(s.attempts):
            a.started = minutes(a.t_start)
            a.node = f"cpu-node-{'abc'[i % 3]}"
        listed = {n - 1: n - 1}
        # the resume creates the new pod: not later than its creation (3 s before its container started)
        resume_t = epoch(atts[-1]["started"]) - 3
        s.tj_conditions = [{"type": "Suspended", "status": "False", "reason": "Resumed",
                            "message": "TrainJob is resumed", "lastTransitionTime": k8s_time(resume_t)}]  # fmt: skip
    if atts[-1]["exit_code"] == 0:
        done = k8s_time(epoch(atts[-1]["ended"]), up=True)
        s.tj_conditions.append({"type": "Complete", "status": "True", "reason": "JobSetCompleted",
                                "message": "JobSet completed", "lastTransitionTime": done})  # fmt: skip
        s.js_conditions = [{"type": "Completed", "status": "True", "reason": "AllJobsCompleted",
                            "message": "jobset completed successfully", "lastTransitionTime": done}]  # fmt: skip
    names = s.pod_names()
    # events: each pod's start, and the stop of a pod whose container was sent SIGTERM
    for i, a in enumerate(s.attempts):
        pname = names[i][0]
        m = minutes(a.t_start - 1)
        s.event("Pod", pname, "Scheduled", f"Successfully assigned {s.ns}/{pname} to {a.node}", m, "Normal")
        s.event("Pod", pname, "Started", f"Started container {s.knobs.container_name}", m, "Normal")
        f = (a.truth or {}).get("fault") or {}
        if f.get("signal") == "SIGTERM" and model != "in-place":
            # the kubelet says Killing when it sends SIGTERM: a grace period before the SIGKILL that ended the
            # attempt, when one did; else (the trainer stopped on its own) just before the container exited
            # (recordings made since the harness kept it: when the signal was sent, `fault.sent_at`)
            at = epoch(f["sent_at"]) if f.get("sent_at") else (
                a.t_end - float(f["grace_seconds"]) if f.get("sigkill_after_grace") else a.t_end - 1)  # fmt: skip
            s.event("Pod", pname, "Killing", f"Stopping container {s.knobs.container_name}", minutes(at), "Normal")
    pod_listing: dict[str, tuple[str, int]] = {}
    for pos, att_index in listed.items():
        pod_listing[names[pos][0]] = (s.knobs.container_name, att_index)
    return s, pod_listing


def write_bundle(run: dict[str, Any], model: str, root: Path) -> Path:
    s, pod_listing = build(run, model)
    d = root / bundle_id(run, model)
    s.write(d)
    meta = yaml.safe_load((d / "bundle.yaml").read_text())
    meta["collectedAt"] = k8s_time(epoch(run["attempts"][-1]["ended"]) + 60, up=True)
    meta["recording"] = {"run": run["id"], "model": model}
    (d / "bundle.yaml").write_text(yaml.safe_dump(meta, sort_keys=False))
    for pod, (container, i) in pod_listing.items():
        src = run["_dir"] / f"attempt-{i}.listing"
        cdir = d / "checkpoints" / pod
        cdir.mkdir(parents=True, exist_ok=True)
        text = src.read_text()
        head, _, rest = text.partition("\n# at:")
        (cdir / f"{container}.txt").write_text(f"{head}\n# at:{rest.split(chr(10), 1)[0]}\n# pod: {pod}\n"
                                                f"# container: {container}\n{rest.split(chr(10), 1)[1]}")  # fmt: skip
        files = run["_dir"] / f"attempt-{i}.files"
        if files.is_dir():
            shutil.copytree(files, cdir / container)
    return d


def write_all(root: Path = OUT, runs: list[dict[str, Any]] | None = None) -> list[Path]:
    if root.exists():
        shutil.rmtree(root)
    root.mkdir(parents=True)
    out = []
    for run in runs if runs is not None else all_runs():
        for model in models_for(run):
            out.append(write_bundle(run, model, root))
    return out


if __name__ == "__main__":
    for p in write_all(Path(sys.argv[1]) if len(sys.argv) > 1 else OUT):
        print(p.name)


def kill_first_container(bundle: Path) -> str:
    """Edit `bundle` so that its first attempt's container was killed (exit 137) rather than exiting on its own;
    returns that pod's name."""
    doc = yaml.safe_load((bundle / "pods.yaml").read_text())
    items = doc.get("items", [doc])
    first = min(items, key=lambda p: p["status"]["startTime"])
    for cs in first["status"]["containerStatuses"]:
        for state in (cs.get("state") or {}, cs.get("lastState") or {}):
            if "terminated" in state:
                state["terminated"].update(exitCode=137, reason="Error")
    (bundle / "pods.yaml").write_text(yaml.safe_dump(doc, sort_keys=False))
    return str(first["metadata"]["name"])
