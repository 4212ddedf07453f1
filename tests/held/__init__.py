"""Held-in incident bundles: the shapes issue 22 found the faces disagreeing on (tests/held/bundles/).

Each builder returns a Scenario; `python -m tests.held` rewrites tests/held/bundles/ (never edit by hand).
Every bundle here goes through every face in tests/report/test_agreement.py, with examples/ and the
recordings' bundles.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.scenario import Attempt, PodSpecKnobs, Scenario, convention_log, hf_log, resumed_condition, ts

OUT = Path(__file__).resolve().parent / "bundles"
CK = "/mnt/ckpt/sft-resumable"


def partial_newest_save() -> Scenario:
    """Attempt 0 printed `saved checkpoint-300` and was killed; attempts 1 and 2 resumed from it, found it
    half-written and crashed while loading it (no step trained)."""
    s = Scenario()
    first = convention_log(CK, 0, 300, save_every=100, crash="Killed")
    crash = f"FileNotFoundError: [Errno 2] No such file or directory: '{CK}/checkpoint-300/trainer_state.json'"
    again = (
        f"[checkpoint] resuming from {CK}/checkpoint-300\nTraceback (most recent call last):\n"
        f'  File "/opt/train/train.py", line 18, in <module>\n{crash}\n'
    )
    s.js_restarts = 2
    s.attempts = [
        Attempt(0, "gpu-node-a", first, phase="Failed", exit_code=137, reason="Error", started=0),
        Attempt(1, "gpu-node-b", again, phase="Failed", exit_code=1, reason="Error", started=40),
        Attempt(2, "gpu-node-c", again, phase="Failed", exit_code=1, reason="Error", started=80),
    ]
    why = f"applying RestartJobSet failure policy action (first failed job: {s.name}-node-0)"
    for minute in (39, 79):
        s.event("JobSet", s.name, "RestartJobSetFailurePolicyAction", why, minute)
    return s


def crash_loop() -> Scenario:
    """One pod, its container crashing at start-up again and again: CrashLoopBackOff after 5 restarts."""
    s = Scenario()
    crash = "RuntimeError: CUDA error: an illegal memory access was encountered"
    log = convention_log(CK, 0, 3, crash=crash)
    s.attempts = [Attempt(0, "gpu-node-a", log, previous_log=log, phase="Running", started=0)]

    def backoff(objs: list[dict[str, Any]]) -> None:
        for o in objs:
            if o["kind"] != "Pod":
                continue
            cs = o["status"]["containerStatuses"][0]
            cs.update(ready=False, started=False, restartCount=5)
            cs["state"] = {"waiting": {"reason": "CrashLoopBackOff",
                                       "message": "back-off 2m40s restarting failed container=node"}}  # fmt: skip
            cs["lastState"] = {"terminated": {"exitCode": 1, "reason": "Error", "startedAt": ts(9.0),
                                              "finishedAt": ts(9.5)}}  # fmt: skip

    s.post = backoff
    s.event("Pod", s.pod_names()[0][0], "BackOff", "Back-off restarting failed container node in pod", 9.6, count=12)
    return s


def storageclass_missing() -> Scenario:
    """The PVC names a StorageClass that does not exist: Pending, ProvisioningFailed ×150, the pod Pending."""
    s = Scenario()
    s.storage_class = "fast-ssd"
    s.pvc_phase = "Pending"
    s.attempts = [Attempt(0, "gpu-node-a", None, phase="Pending", started=0)]
    s.listed = [*(s.listed or []), "storageclasses", "persistentvolumes"]

    def other_classes(objs: list[dict[str, Any]]) -> None:
        objs[:] = [o for o in objs if o["kind"] != "StorageClass"]
        for name, prov in (("standard", "pd.csi.storage.gke.io"), ("premium-rwo", "pd.csi.storage.gke.io")):
            objs.append({"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": name},
                         "provisioner": prov, "reclaimPolicy": "Delete",
                         "volumeBindingMode": "WaitForFirstConsumer"})  # fmt: skip

    s.post = other_classes
    s.event("PersistentVolumeClaim", s.pvc_name, "ProvisioningFailed",
            'storageclass.storage.k8s.io "fast-ssd" not found', 0.5, count=150)  # fmt: skip
    s.event("Pod", s.pod_names()[0][0], "FailedScheduling",
            '0/4 nodes are available: pod has unbound immediate PersistentVolumeClaims. preemption: 0/4 nodes are '
            "available: 4 Preemption is not helpful for scheduling.", 0.6, count=40)  # fmt: skip
    return s


def tee_pipeline() -> Scenario:
    """The trainer runs in a pipeline into tee under bash -c: bash stays PID 1 and SIGTERM never reaches it."""
    knobs = PodSpecKnobs(command=["bash", "-c"],
                         args=["cd /opt/train && python train.py 2>&1 | tee /mnt/ckpt/train.log"])  # fmt: skip
    s = Scenario(knobs=knobs)
    s.tj_conditions = [resumed_condition(60)]
    s.attempts = [
        Attempt(0, "gpu-node-a", convention_log(CK, 0, 230, sigterm_at=None), phase="Failed", exit_code=137,
                reason="Error", started=0),
        Attempt(0, "gpu-node-b", convention_log(CK, 200, 300), started=61),
    ]  # fmt: skip
    return s


def dense_restarts() -> Scenario:
    """Six JobSet restarts a few minutes apart, every pod kept: the chart's rewinds crowd each other."""
    s = Scenario()
    s.js_restarts = 6
    s.attempts = []
    for ra in range(7):
        start = 15 * ra
        first = max(0, 50 * ra - 10)
        last = first + 60
        log = convention_log(CK, first, last, save_every=50, resumed=ra > 0,
                             crash=None if ra == 6 else "RuntimeError: NCCL error: remote process exited")  # fmt: skip
        s.attempts.append(Attempt(ra, f"gpu-node-{'abc'[ra % 3]}", log, phase="Running" if ra == 6 else "Failed",
                                  exit_code=None if ra == 6 else 1, reason="" if ra == 6 else "Error",
                                  started=start))  # fmt: skip
        if ra:
            s.event("JobSet", s.name, "RestartJobSetFailurePolicyAction",
                    f"applying RestartJobSet failure policy action (first failed job: {s.name}-node-0)",
                    start - 1 + ra / 100)  # fmt: skip
    return s


def kept_log_of_a_gone_pod() -> Scenario:
    """A JobSet restart deleted attempt 0's pod; a recorder kept its log in the bundle."""
    s = Scenario()
    s.js_restarts = 1
    s.attempts = [
        Attempt(0, "gpu-node-a", convention_log(CK, 0, 180, crash="RuntimeError: NCCL error"), phase="Failed",
                exit_code=1, reason="Error", started=0),
        Attempt(1, "gpu-node-b", convention_log(CK, 150, 400), started=40),
    ]  # fmt: skip
    gone = s.pod_names()[0][0]

    def drop(objs: list[dict[str, Any]]) -> None:
        objs[:] = [o for o in objs if not (o["kind"] == "Pod" and o["metadata"]["name"] == gone)]

    s.post = drop
    s.event("JobSet", s.name, "RestartJobSetFailurePolicyAction",
            f"applying RestartJobSet failure policy action (first failed job: {s.name}-node-0)", 39)  # fmt: skip
    return s


def kueue_first_run() -> Scenario:
    """Created suspended and resumed a minute later; no Workload, no queue label: a first run, nothing more known."""
    s = Scenario()
    s.tj_conditions = [resumed_condition(-1)]
    s.attempts = [Attempt(0, "gpu-node-a", convention_log(CK, 0, 90))]
    return s


def pod_without_status() -> Scenario:
    """A hand-made bundle: the pod written without its status, the previous instance's log kept (disk full)."""
    s = Scenario()
    crash = "OSError: [Errno 28] No space left on device: '/mnt/ckpt/sft-resumable/checkpoint-700'"
    full = hf_log(CK, 0, 700, save_every=100, crash=crash)
    s.attempts = [Attempt(0, "gpu-node-a", convention_log(CK, 600, 650), previous_log=full, started=0)]

    def strip(objs: list[dict[str, Any]]) -> None:
        for o in objs:
            if o["kind"] == "Pod":
                o.pop("status", None)

    s.post = strip
    return s


def spaced_crash_line() -> Scenario:
    """The line that ends an attempt has runs of spaces, a pipe and a backtick: quotes must keep them."""
    s = Scenario()
    crash = "OSError: [Errno 28] No space left on device:   '/mnt/ckpt/run  a/opt|rank`0`.pt'  (shard  3 | 8)"
    s.js_restarts = 1
    s.attempts = [
        Attempt(0, "gpu-node-a", convention_log(CK, 0, 120, crash=crash), phase="Failed", exit_code=1,
                reason="Error", started=0),
        Attempt(1, "gpu-node-b", convention_log(CK, 0, 40, resumed=False), started=30),
    ]  # fmt: skip
    s.event("JobSet", s.name, "RestartJobSetFailurePolicyAction",
            f"applying RestartJobSet failure policy action (first failed job: {s.name}-node-0)", 29)  # fmt: skip
    return s


def crash_loop_after_a_long_run() -> Scenario:
    """Ninety minutes of training, then four JobSet restarts within two minutes, each crashing at start-up:
    their rewinds all fall at the right edge of the chart."""
    s = Scenario()
    s.js_restarts = 4
    crash = "RuntimeError: CUDA error: uncorrectable ECC error encountered"
    s.attempts = [Attempt(0, "gpu-node-a", convention_log(CK, 0, 480, save_every=100, crash=crash), phase="Failed",
                          exit_code=1, reason="Error", started=0)]  # fmt: skip
    for ra in range(1, 5):
        last = ra == 4
        log = convention_log(CK, 400, 402, save_every=100, crash=None if last else crash)
        s.attempts.append(Attempt(ra, "gpu-node-a", log, phase="Running" if last else "Failed",
                                  exit_code=None if last else 1, reason="" if last else "Error",
                                  started=90 + 0.5 * ra))  # fmt: skip
        s.event("JobSet", s.name, "RestartJobSetFailurePolicyAction",
                f"applying RestartJobSet failure policy action (first failed job: {s.name}-node-0)",
                90 + 0.5 * ra - 0.1)  # fmt: skip

    def short_lives(objs: list[dict[str, Any]]) -> None:
        """Each restarted attempt crashes 20 s after its start (the scenario's default is half an hour)."""
        for o in objs:
            if o["kind"] != "Pod" or o["metadata"]["labels"]["jobset.sigs.k8s.io/restart-attempt"] == "0":
                continue
            term = o["status"]["containerStatuses"][0]["state"].get("terminated")
            if term:
                term["finishedAt"] = ts(float(o["metadata"]["labels"]["jobset.sigs.k8s.io/restart-attempt"]) * 0.5
                                        + 90.5 + 20 / 60)  # fmt: skip

    s.post = short_lives
    return s


HELD: dict[str, Callable[[], Scenario]] = {
    "crash-loop-after-a-long-run": crash_loop_after_a_long_run,
    "partial-newest-save": partial_newest_save,
    "crash-loop": crash_loop,
    "storageclass-missing": storageclass_missing,
    "tee-pipeline": tee_pipeline,
    "dense-restarts": dense_restarts,
    "kept-log-of-a-gone-pod": kept_log_of_a_gone_pod,
    "kueue-first-run": kueue_first_run,
    "pod-without-status": pod_without_status,
    "spaced-crash-line": spaced_crash_line,
}


def write_all(root: Path = OUT) -> list[Path]:
    out = []
    for name, build in HELD.items():
        d = root / name
        if d.exists():
            shutil.rmtree(d)
        build().write(d)
        out.append(d)
    return out
