"""Build realistic TrainJob incidents: objects shaped like `kubectl get -o yaml`, logs like `kubectl logs`.

One Scenario is one TrainJob with its runtime, JobSet, Jobs, pods per attempt, events, PVC and
logs. Tests, examples (`python -m tests.make_examples`) and benchmarks all build from here,
so every fixture has the shape a real cluster gives.
"""

from __future__ import annotations

import copy
import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML

ANCESTOR = "trainer.kubeflow.org/trainjob-ancestor-step"
T0 = datetime(2026, 11, 30, 8, 0, 0, tzinfo=UTC)

HEALTHY_SCRIPT = """\
import glob, os, signal, sys
from transformers import Trainer, TrainingArguments

CKPT_DIR = os.environ["CKPT_DIR"]
stop = {"now": False}
signal.signal(signal.SIGTERM, lambda *_: (print("[checkpoint] SIGTERM: flushing at next step", flush=True),
                                          stop.update(now=True)))

def newest_checkpoint(root):
    ckpts = glob.glob(os.path.join(root, "checkpoint-*"))
    ckpts = [c for c in ckpts if os.path.exists(os.path.join(c, "trainer_state.json"))]
    return max(ckpts, key=lambda p: int(p.rsplit("-", 1)[1]), default=None)

last = newest_checkpoint(CKPT_DIR)
print(f"[checkpoint] resuming from {last}" if last else "[checkpoint] no prior checkpoint, starting fresh",
      flush=True)
args = TrainingArguments(output_dir=CKPT_DIR, save_strategy="steps", save_steps=50, save_total_limit=3,
                         max_steps=1000, logging_steps=10)
trainer = Trainer(model=build_model(), args=args, train_dataset=load_data())
trainer.train(resume_from_checkpoint=last)
print("[checkpoint] done", flush=True)
"""


def ts(minutes: float) -> str:
    return (T0 + timedelta(minutes=minutes)).strftime("%Y-%m-%dT%H:%M:%SZ")


def resumed_condition(minutes: float) -> dict[str, Any]:
    """The TrainJob condition Kueue leaves when it resumes (admits) a suspended TrainJob, at T0 + MINUTES."""
    return {
        "type": "Suspended",
        "status": "False",
        "reason": "Resumed",
        "message": "TrainJob is resumed",
        "lastTransitionTime": ts(minutes),
    }


def uid(*parts: Any) -> str:
    h = hashlib.sha1("/".join(map(str, parts)).encode()).hexdigest()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:32]}"


def suffix(*parts: Any) -> str:
    alphabet = "bcdfghjklmnpqrstvwxz2456789"
    h = int(hashlib.sha1("/".join(map(str, parts)).encode()).hexdigest(), 16)
    out = ""
    for _ in range(5):
        h, r = divmod(h, len(alphabet))
        out += alphabet[r]
    return out


# ---------------------------------------------------------------------------------------------
# logs
# ---------------------------------------------------------------------------------------------
def tqdm(step: int, total: int, rate: float = 1.84) -> str:
    pct = int(step * 100 / total)
    bar = ("█" * (pct // 10)).ljust(10)
    return f"\r{pct:3d}%|{bar}| {step}/{total} [00:{step % 60:02d}<07:40, {rate:.2f}it/s]"


def convention_log(
    ckpt_dir: str,
    start: int,
    end: int,
    total: int = 1000,
    save_every: int = 50,
    resumed: bool | None = None,
    sigterm_at: int | None = None,
    final_save: bool = False,
    lexical_resume: int | None = None,
    crash: str | None = None,
) -> str:
    """A training log in the guide's `[checkpoint]` convention with an HF tqdm bar."""
    lines = ["Loading checkpoint shards: 100%|██████████| 2/2 [00:03<00:00,  1.52s/it]"]
    if resumed is None:
        resumed = start > 0
    if resumed:
        lines.append(f"[checkpoint] resuming from {ckpt_dir}/checkpoint-{lexical_resume or start}")
    else:
        lines.append("[checkpoint] no prior checkpoint, starting fresh")
    lines.append("***** Running training *****")
    lines.append("  Num examples = 32,000")
    lines.append(f"  Total optimization steps = {total}")
    bar = ""
    first = (lexical_resume or start) if resumed else 0
    for step in range(first, end + 1):
        bar += tqdm(step, total)
        if step % 10 == 0 and step:
            bar += f"\n{{'loss': {2.3 - step / 1000:.4f}, 'learning_rate': 1.9e-05, 'epoch': {step / 500:.2f}}}"
        if step and step % save_every == 0 and step != first:
            lines.append(bar.lstrip("\n"))
            bar = ""
            lines.append(f"[checkpoint] saved {ckpt_dir}/checkpoint-{step}")
        if sigterm_at is not None and step == sigterm_at:
            lines.append(bar.lstrip("\n"))
            bar = ""
            lines.append("[checkpoint] SIGTERM: flushing at next step")
            if final_save:
                lines.append(f"[checkpoint] final save {ckpt_dir}/checkpoint-{step + 1}")
            break
    if bar:
        lines.append(bar.lstrip("\n"))
    if crash:
        lines += ["Traceback (most recent call last):", '  File "/opt/train/train.py", line 42, in <module>', crash]
    return "\n".join(lines) + "\n"


def hf_log(
    output_dir: str,
    start: int,
    end: int,
    total: int = 1000,
    save_every: int = 100,
    resume_from: int | None = None,
    prefix: str = "",
    crash: str | None = None,
    extra_head: list[str] | None = None,
) -> str:
    """An HF Trainer log at INFO level (LlamaFactory-style prefixes when `prefix` is set)."""

    def info(msg: str, src: str = "trainer.py:2515") -> str:
        return f"[INFO|{src}] 2026-11-30 08:0{start % 10}:26,646 >> {msg}" if prefix else msg

    lines = list(extra_head or [])
    if resume_from:
        lines.append(info(f"Loading model from {output_dir}/checkpoint-{resume_from}."))
    lines.append(info("***** Running training *****", "trainer.py:2243"))
    lines.append(info("  Num examples = 32,000", "trainer.py:2244"))
    lines.append(info(f"  Total optimization steps = {total}", "trainer.py:2248"))
    if resume_from:
        lines.append(info("  Continuing training from checkpoint, will skip to saved global_step", "trainer.py:2300"))
        lines.append(info(f"  Continuing training from global step {resume_from}", "trainer.py:2302"))
    bar = ""
    first = resume_from or 0
    for step in range(first, end + 1):
        bar += tqdm(step, total)
        if step and step % save_every == 0 and step != first:
            lines.append(bar.lstrip("\n"))
            bar = ""
            lines.append(info(f"Saving model checkpoint to {output_dir}/checkpoint-{step}", "trainer.py:3705"))
    if bar:
        lines.append(bar)
    if crash:
        lines += ["Traceback (most recent call last):", '  File "/app/train.py", line 88, in <module>', crash]
    return "\n".join(lines) + "\n"


def megatron_log(
    load: str,
    save: str,
    start_iter: int,
    end_iter: int,
    total: int = 2000,
    save_interval: int = 500,
    loaded_iter: int | None = None,
) -> str:
    lines = ["using world size: 8, data-parallel size: 2, tensor-model-parallel size: 4"]
    if loaded_iter is not None:
        lines.append(f" loading checkpoint from {load} at iteration {loaded_iter}")
        lines.append(f"  successfully loaded checkpoint from {load} [ t 0/4, p 0/1 ] at iteration {loaded_iter}")
    else:
        lines.append(f"WARNING: could not find the metadata file {load}/latest_checkpointed_iteration.txt")
        lines.append("    will not load any checkpoints and will start from random")
    for it in range(start_iter + 1, end_iter + 1):
        if it % 10 == 0 or it == start_iter + 1:
            lines.append(
                f" [2026-11-30 08:{it % 60:02d}:00] iteration {it:8d}/{total:8d} | consumed samples: "
                f"{it * 64:12d} | elapsed time per iteration (ms): 812.4 | learning rate: 1.000E-05 |"
            )
        if it % save_interval == 0:
            lines.append(
                f"[2026-11-30 08:{it % 60:02d}:01] saving checkpoint at iteration {it:7d} to {save} "
                "in torch_dist format"
            )
            lines.append(
                f"  [2026-11-30 08:{it % 60:02d}:09] successfully saved checkpoint from iteration {it:7d} "
                f"to {save} [ t 1/4, p 1/1 ]"
            )
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------------------------
# objects
# ---------------------------------------------------------------------------------------------
@dataclass
class PodSpecKnobs:
    command: list[str] = field(default_factory=lambda: ["bash", "-ec"])
    args: list[str] = field(default_factory=lambda: ["nvidia-smi -L || true\nexec python /opt/train/train.py"])
    env: list[dict[str, Any]] = field(default_factory=lambda: [{"name": "CKPT_DIR", "value": "/mnt/ckpt/default"}])
    ckpt_volume: str | None = "pvc"  # pvc | emptyDir | hostPath | None
    mount_path: str = "/mnt/ckpt"
    grace: int | None = 120
    container_name: str = "node"
    image: str = "ghcr.io/example-org/sft-trainer:1.4.2"
    script: str | None = HEALTHY_SCRIPT  # mounted as ConfigMap <name>-script at /opt/train/train.py
    config: dict[str, str] | None = None  # extra ConfigMap files mounted at /opt/train/
    resources: dict[str, Any] = field(default_factory=lambda: {"limits": {"nvidia.com/gpu": 1}})


@dataclass
class Attempt:
    """One start of the trainer: its pods, and how it ended."""

    restart_attempt: int = 0
    node: str = "gpu-node-a"
    log: str | None = None
    previous_log: str | None = None  # an in-place container restart before this instance
    prev_exit: int = 1
    prev_reason: str = "Error"
    phase: str = "Running"
    exit_code: int | None = None  # set when the current instance terminated
    reason: str = ""
    started: float = 0.0  # minutes after T0
    kept: bool = True  # False: pods deleted by a JobSet restart / suspend (not in the bundle)
    waiting: str | None = None  # e.g. ContainerCreating
    pods: int = 1


class Scenario:
    def __init__(
        self,
        name: str = "sft-resumable",
        namespace: str = "team-a",
        version: str = "v2.1",
        runtime_name: str = "checkpoint-runtime",
        num_nodes: int = 1,
        knobs: PodSpecKnobs | None = None,
    ):
        self.name, self.ns, self.version = name, namespace, version
        self.runtime_name = runtime_name
        self.num_nodes = num_nodes
        self.knobs = knobs or PodSpecKnobs()
        self.ancestor_label = True
        self.label_on_pod_template = False
        self.failure_policy: dict[str, Any] | None = {"maxRestarts": 3}
        self.backoff_limit: int | None = 0
        self.trainer_env: list[dict[str, Any]] = [{"name": "CKPT_DIR", "value": f"/mnt/ckpt/{name}"}]
        self.trainer_extra: dict[str, Any] = {}
        self.trainjob_spec_extra: dict[str, Any] = {}
        self.pvc_name = "ckpt-pvc"
        self.pvc_modes = ["ReadWriteOnce"]
        self.pvc_phase = "Bound"
        self.storage_class = "ceph-rbd"
        self.provisioner = "rbd.csi.ceph.com"
        self.pv_local = False
        self.include_pvc = True
        self.attempts: list[Attempt] = []
        self.events: list[dict[str, Any]] = []
        self.tj_conditions: list[dict[str, Any]] = []
        self.js_conditions: list[dict[str, Any]] = []
        self.js_restarts = 0
        self.labels: dict[str, str] = {}
        self.workload: dict[str, Any] | None = None
        self.extra_objects: list[dict[str, Any]] = []
        self.bundle_meta: dict[str, Any] | None = {"trainerVersion": f"{version}.0"}
        self.not_collected: list[dict[str, str]] = []
        # what a collector listed whole (bundle.yaml `listed`), as `collect` records it; None: a hand-made bundle
        self.listed: list[str] | None = ["jobs", "pods", "events", "persistentvolumeclaims", "workloads"]
        self.drop_kinds: set[str] = set()
        self.post: Callable[[list[dict[str, Any]]], None] | None = None  # last-minute edits to the objects

    # -- building blocks ------------------------------------------------------------------
    def container(self, with_trainer: bool = False) -> dict[str, Any]:
        k = self.knobs
        c: dict[str, Any] = {
            "name": k.container_name,
            "image": k.image,
            "command": list(k.command),
            "args": list(k.args),
            "env": copy.deepcopy(k.env),
            "resources": {},
        }
        mounts = []
        if k.ckpt_volume:
            mounts.append({"name": "ckpt", "mountPath": k.mount_path})
        if k.script is not None or k.config:
            mounts.append({"name": "train-script", "mountPath": "/opt/train"})
        c["volumeMounts"] = mounts
        if with_trainer:
            by_name = {e["name"]: e for e in c["env"]}
            for e in self.trainer_env:
                by_name[e["name"]] = copy.deepcopy(e)
            c["env"] = list(by_name.values())
            c["resources"] = copy.deepcopy(k.resources)
            for f in ("image", "command", "args"):
                if f in self.trainer_extra:
                    c[f] = copy.deepcopy(self.trainer_extra[f])
        return c

    def volumes(self) -> list[dict[str, Any]]:
        k = self.knobs
        vols: list[dict[str, Any]] = []
        if k.ckpt_volume == "pvc":
            vols.append({"name": "ckpt", "persistentVolumeClaim": {"claimName": self.pvc_name}})
        elif k.ckpt_volume == "emptyDir":
            vols.append({"name": "ckpt", "emptyDir": {}})
        elif k.ckpt_volume == "hostPath":
            vols.append({"name": "ckpt", "hostPath": {"path": "/data/ckpt", "type": "DirectoryOrCreate"}})
        if k.script is not None or k.config:
            vols.append({"name": "train-script", "configMap": {"name": f"{self.name}-script"}})
        return vols

    def pod_spec(self, with_trainer: bool) -> dict[str, Any]:
        spec: dict[str, Any] = {"containers": [self.container(with_trainer)], "volumes": self.volumes()}
        if self.knobs.grace is not None:
            spec["terminationGracePeriodSeconds"] = self.knobs.grace
        return spec

    def runtime(self) -> dict[str, Any]:
        job_labels = {ANCESTOR: "trainer"} if self.ancestor_label else {}
        pod_meta: dict[str, Any] = {}
        if self.label_on_pod_template:
            pod_meta = {"labels": {ANCESTOR: "trainer"}}
        job_spec: dict[str, Any] = {"template": {"spec": self.pod_spec(False)}}
        if pod_meta:
            job_spec["template"]["metadata"] = pod_meta
        if self.backoff_limit is not None:
            job_spec = {"backoffLimit": self.backoff_limit, **job_spec}
        js_spec: dict[str, Any] = {
            "replicatedJobs": [{"name": "node", "template": {"metadata": {"labels": job_labels}, "spec": job_spec}}]
        }
        if self.failure_policy is not None:
            js_spec = {"failurePolicy": copy.deepcopy(self.failure_policy), **js_spec}
        return {
            "apiVersion": "trainer.kubeflow.org/v1alpha1",
            "kind": "TrainingRuntime",
            "metadata": {
                "name": self.runtime_name,
                "namespace": self.ns,
                "uid": uid("rt", self.runtime_name),
                "resourceVersion": "41872",
                "generation": 1,
                "creationTimestamp": ts(-1440),
                "labels": {"trainer.kubeflow.org/framework": "torch"},
            },
            "spec": {"mlPolicy": {"numNodes": 1, "torch": {"numProcPerNode": "auto"}}, "template": {"spec": js_spec}},
        }

    def trainjob(self) -> dict[str, Any]:
        trainer: dict[str, Any] = {"numNodes": self.num_nodes, "resourcesPerNode": copy.deepcopy(self.knobs.resources)}
        if self.trainer_env:
            trainer["env"] = copy.deepcopy(self.trainer_env)
        trainer.update(copy.deepcopy(self.trainer_extra))
        spec: dict[str, Any] = {
            "runtimeRef": {"apiGroup": "trainer.kubeflow.org", "kind": "TrainingRuntime", "name": self.runtime_name},
            "trainer": trainer,
        }
        spec.update(copy.deepcopy(self.trainjob_spec_extra))
        spec.setdefault("suspend", False)
        status: dict[str, Any] = {}
        if self.tj_conditions:
            status["conditions"] = copy.deepcopy(self.tj_conditions)
        if self.version != "v2.0":
            status["jobsStatus"] = [
                {
                    "name": "node",
                    "active": 1 if self._running() else 0,
                    "ready": 0,
                    "succeeded": 0,
                    "failed": 0,
                    "suspended": 0,
                }
            ]
        meta = {
            "name": self.name,
            "namespace": self.ns,
            "uid": uid("tj", self.name),
            "resourceVersion": "52311",
            "generation": 1,
            "creationTimestamp": ts(-2),
        }
        if self.labels:
            meta["labels"] = dict(self.labels)
        return {
            "apiVersion": "trainer.kubeflow.org/v1alpha1",
            "kind": "TrainJob",
            "metadata": meta,
            "spec": spec,
            "status": status,
        }

    def _running(self) -> bool:
        return bool(self.attempts) and self.attempts[-1].phase in ("Running", "Pending")

    def jobset(self) -> dict[str, Any]:
        rt = self.runtime()
        spec = copy.deepcopy(rt["spec"]["template"]["spec"])
        rj = spec["replicatedJobs"][0]
        rj["replicas"] = 1
        rj["template"]["spec"]["parallelism"] = self.num_nodes
        rj["template"]["spec"]["completions"] = self.num_nodes
        rj["template"]["spec"]["completionMode"] = "Indexed"
        rj["template"]["spec"]["template"]["spec"] = self.pod_spec(self.ancestor_label)
        rj["template"]["spec"]["template"]["spec"]["restartPolicy"] = "OnFailure"
        spec["suspend"] = False
        spec["network"] = {"enableDNSHostnames": True, "publishNotReadyAddresses": True, "subdomain": self.name}
        spec["successPolicy"] = {"operator": "All"}
        status: dict[str, Any] = {
            "restarts": self.js_restarts,
            "restartsCountTowardsMax": self.js_restarts,
            "replicatedJobsStatus": [
                {
                    "name": "node",
                    "active": 1 if self._running() else 0,
                    "ready": 0,
                    "succeeded": 0,
                    "failed": 0,
                    "suspended": 0,
                }
            ],
        }
        if self.js_conditions:
            status["conditions"] = copy.deepcopy(self.js_conditions)
        return {
            "apiVersion": "jobset.x-k8s.io/v1alpha2",
            "kind": "JobSet",
            "metadata": {
                "name": self.name,
                "namespace": self.ns,
                "uid": uid("js", self.name),
                "resourceVersion": "52390",
                "generation": 1,
                "creationTimestamp": ts(-2),
                "labels": {},
                "ownerReferences": [
                    {
                        "apiVersion": "trainer.kubeflow.org/v1alpha1",
                        "kind": "TrainJob",
                        "name": self.name,
                        "uid": uid("tj", self.name),
                        "controller": True,
                        "blockOwnerDeletion": True,
                    }
                ],
            },
            "spec": spec,
            "status": status,
        }

    def _js_labels(self, restart: int) -> dict[str, str]:
        return {
            "jobset.sigs.k8s.io/jobset-name": self.name,
            "jobset.sigs.k8s.io/jobset-uid": uid("js", self.name),
            "jobset.sigs.k8s.io/replicatedjob-name": "node",
            "jobset.sigs.k8s.io/replicatedjob-replicas": "1",
            "jobset.sigs.k8s.io/restart-attempt": str(restart),
            "jobset.sigs.k8s.io/job-index": "0",
            "jobset.sigs.k8s.io/job-global-index": "0",
            "jobset.sigs.k8s.io/global-replicas": "1",
        }

    def job(self, restart: int, started: float, failed: bool = False) -> dict[str, Any]:
        jname = f"{self.name}-node-0"
        labels = {**self._js_labels(restart), **({ANCESTOR: "trainer"} if self.ancestor_label else {})}
        status: dict[str, Any] = {"active": 0 if failed else self.num_nodes, "startTime": ts(started)}
        if failed:
            status["failed"] = 1
            status["conditions"] = [
                {
                    "type": "Failed",
                    "status": "True",
                    "reason": "BackoffLimitExceeded",
                    "message": "Job has reached the specified backoff limit",
                    "lastTransitionTime": ts(started + 30),
                }
            ]
        return {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {
                "name": jname,
                "namespace": self.ns,
                "uid": uid("job", jname, restart),
                "creationTimestamp": ts(started),
                "labels": labels,
                "annotations": dict(labels),
            },
            "spec": {
                "parallelism": self.num_nodes,
                "completions": self.num_nodes,
                "completionMode": "Indexed",
                "backoffLimit": self.backoff_limit if self.backoff_limit is not None else 6,
                "template": {"spec": self.pod_spec(self.ancestor_label)},
            },
            "status": status,
        }

    def pod(self, a: Attempt, index: int, gen: int) -> dict[str, Any]:
        pname = f"{self.name}-node-0-{index}-{suffix(self.name, a.restart_attempt, index, gen, a.started)}"
        labels = {
            **self._js_labels(a.restart_attempt),
            "batch.kubernetes.io/job-completion-index": str(index),
            "batch.kubernetes.io/job-name": f"{self.name}-node-0",
            "job-name": f"{self.name}-node-0",
            "batch.kubernetes.io/controller-uid": uid("job", self.name, a.restart_attempt),
        }
        spec = self.pod_spec(self.ancestor_label)
        spec["restartPolicy"] = "OnFailure"
        spec["hostname"] = f"{self.name}-node-0-{index}"
        spec["subdomain"] = self.name
        if a.phase != "Pending" or a.waiting:
            spec["nodeName"] = a.node if index == 0 else f"{a.node}-{index}"
        cname = self.knobs.container_name
        restarts = 1 if a.previous_log is not None else 0
        cs: dict[str, Any] = {
            "name": cname,
            "image": self.knobs.image,
            "imageID": "",
            "ready": a.phase == "Running",
            "restartCount": restarts,
            "started": a.phase == "Running",
        }
        if a.waiting:
            cs["state"] = {"waiting": {"reason": a.waiting}}
        elif a.exit_code is not None:
            cs["state"] = {
                "terminated": {
                    "exitCode": a.exit_code,
                    "reason": a.reason or "Error",
                    "startedAt": ts(a.started + 0.5),
                    "finishedAt": ts(a.started + 30),
                }
            }
        elif a.phase == "Running":
            cs["state"] = {"running": {"startedAt": ts(a.started + (6 if restarts else 0.5))}}
        else:
            cs["state"] = {"waiting": {"reason": "ContainerCreating"}}
        if restarts:
            cs["lastState"] = {
                "terminated": {
                    "exitCode": a.prev_exit,
                    "reason": a.prev_reason,
                    "startedAt": ts(a.started + 0.5),
                    "finishedAt": ts(a.started + 5),
                }
            }
        status: dict[str, Any] = {"phase": a.phase, "containerStatuses": [cs], "startTime": ts(a.started)}
        if a.reason == "Evicted":
            status["reason"] = "Evicted"
        return {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": pname,
                "namespace": self.ns,
                "uid": uid("pod", pname),
                "creationTimestamp": ts(a.started),
                "labels": labels,
                "annotations": {
                    "batch.kubernetes.io/job-completion-index": str(index),
                    "jobset.sigs.k8s.io/restart-attempt": str(a.restart_attempt),
                },
                "ownerReferences": [
                    {
                        "apiVersion": "batch/v1",
                        "kind": "Job",
                        "name": f"{self.name}-node-0",
                        "controller": True,
                        "uid": uid("job", f"{self.name}-node-0", a.restart_attempt),
                    }
                ],
            },
            "spec": spec,
            "status": status,
        }

    def pvc(self) -> dict[str, Any]:
        return {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": {
                "name": self.pvc_name,
                "namespace": self.ns,
                "uid": uid("pvc", self.pvc_name),
                "creationTimestamp": ts(-1500),
            },
            "spec": {
                "accessModes": list(self.pvc_modes),
                "resources": {"requests": {"storage": "500Gi"}},
                "storageClassName": self.storage_class,
                "volumeMode": "Filesystem",
                **({"volumeName": f"pvc-{uid('pvc', self.pvc_name)}"} if self.pvc_phase == "Bound" else {}),
            },
            "status": {
                "phase": self.pvc_phase,
                **(
                    {"accessModes": list(self.pvc_modes), "capacity": {"storage": "500Gi"}}
                    if self.pvc_phase == "Bound"
                    else {}
                ),
            },
        }

    def pv(self) -> dict[str, Any]:
        spec: dict[str, Any] = {
            "accessModes": list(self.pvc_modes),
            "capacity": {"storage": "500Gi"},
            "storageClassName": self.storage_class,
            "claimRef": {"kind": "PersistentVolumeClaim", "name": self.pvc_name, "namespace": self.ns},
            "persistentVolumeReclaimPolicy": "Delete",
        }
        if self.pv_local:
            spec["local"] = {"path": "/mnt/disks/ssd0"}
            spec["nodeAffinity"] = {
                "required": {
                    "nodeSelectorTerms": [
                        {
                            "matchExpressions": [
                                {"key": "kubernetes.io/hostname", "operator": "In", "values": ["gpu-node-a"]}
                            ]
                        }
                    ]
                }
            }
        else:
            spec["csi"] = {"driver": self.provisioner, "volumeHandle": f"0001-0009-{uid('vol', self.pvc_name)}"}
        return {
            "apiVersion": "v1",
            "kind": "PersistentVolume",
            "metadata": {"name": f"pvc-{uid('pvc', self.pvc_name)}", "creationTimestamp": ts(-1500)},
            "spec": spec,
            "status": {"phase": "Bound"},
        }

    def storageclass(self) -> dict[str, Any]:
        return {
            "apiVersion": "storage.k8s.io/v1",
            "kind": "StorageClass",
            "metadata": {"name": self.storage_class},
            "provisioner": self.provisioner,
            "reclaimPolicy": "Delete",
            "volumeBindingMode": "Immediate",
        }

    def script_configmap(self) -> dict[str, Any] | None:
        data: dict[str, str] = {}
        if self.knobs.script is not None:
            data["train.py"] = self.knobs.script
        data.update(self.knobs.config or {})
        if not data:
            return None
        return {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": f"{self.name}-script", "namespace": self.ns, "creationTimestamp": ts(-30)},
            "data": data,
        }

    def event(
        self,
        kind: str,
        name: str,
        reason: str,
        message: str,
        minute: float,
        etype: str = "Warning",
        count: int = 1,
        api: str = "core",
    ) -> None:
        obj_uid = None
        if kind == "Pod":
            obj_uid = uid("pod", name)
        elif kind == "TrainJob":
            obj_uid = uid("tj", name)
        elif kind == "JobSet":
            obj_uid = uid("js", name)
        inv = {"kind": kind, "namespace": self.ns, "name": name, **({"uid": obj_uid} if obj_uid else {})}
        ename = f"{name}.{hashlib.sha1(f'{reason}{minute}'.encode()).hexdigest()[:16]}"
        if api == "events.k8s.io":
            self.events.append(
                {
                    "apiVersion": "events.k8s.io/v1",
                    "kind": "Event",
                    "metadata": {"name": ename, "namespace": self.ns, "creationTimestamp": ts(minute)},
                    "regarding": inv,
                    "reason": reason,
                    "note": message,
                    "type": etype,
                    "action": "Reconciling",
                    "eventTime": ts(minute).replace("Z", ".000000Z"),
                    "reportingController": "trainer",
                    "reportingInstance": "trainer-controller",
                }
            )
            return
        self.events.append(
            {
                "apiVersion": "v1",
                "kind": "Event",
                "metadata": {"name": ename, "namespace": self.ns, "creationTimestamp": ts(minute)},
                "involvedObject": inv,
                "reason": reason,
                "message": message,
                "type": etype,
                "count": count,
                "firstTimestamp": ts(minute),
                "lastTimestamp": ts(minute),
                "source": {"component": "kubelet" if kind == "Pod" else "jobset"},
            }
        )

    def pod_names(self) -> list[list[str]]:
        out = []
        gens: dict[int, int] = {}
        for a in self.attempts:
            gen = gens.get(a.restart_attempt, 0)
            gens[a.restart_attempt] = gen + 1
            out.append([self.pod(a, i, gen)["metadata"]["name"] for i in range(a.pods)])
        return out

    # -- assembling -----------------------------------------------------------------------
    def objects(self) -> tuple[list[dict[str, Any]], dict[tuple[str, str, bool], str]]:
        objs: list[dict[str, Any]] = [self.trainjob(), self.runtime()]
        if self.attempts:
            objs.append(self.jobset())
        logs: dict[tuple[str, str, bool], str] = {}
        gens: dict[int, int] = {}
        seen_jobs: set[int] = set()
        for a in self.attempts:
            gen = gens.get(a.restart_attempt, 0)
            gens[a.restart_attempt] = gen + 1
            if a.restart_attempt not in seen_jobs and (a.kept or a is self.attempts[-1]):
                objs.append(self.job(a.restart_attempt, a.started, failed=a.exit_code not in (None, 0)))
                seen_jobs.add(a.restart_attempt)
            if not a.kept:
                continue
            for i in range(a.pods):
                p = self.pod(a, i, gen)
                objs.append(p)
                pname = p["metadata"]["name"]
                if a.log is not None and (i == 0 or a.pods <= 4):
                    logs[(pname, self.knobs.container_name, False)] = a.log if i == 0 else _rank_log(a.log)
                if a.previous_log is not None:
                    logs[(pname, self.knobs.container_name, True)] = a.previous_log
        if self.include_pvc and self.knobs.ckpt_volume == "pvc":
            objs.append(self.pvc())
            if self.pvc_phase == "Bound":
                objs.append(self.pv())
            objs.append(self.storageclass())
        cm = self.script_configmap()
        if cm:
            objs.append(cm)
        if self.workload:
            objs.append(self.workload)
        objs += self.extra_objects
        objs += self.events
        objs = [o for o in objs if o["kind"] not in self.drop_kinds]
        if self.post is not None:
            self.post(objs)
        return objs, logs

    def write(self, root: Path, layout: str = "kubectl") -> Path:
        """Write the bundle the way an engineer would assemble it from kubectl output."""
        root.mkdir(parents=True, exist_ok=True)
        objs, logs = self.objects()
        yaml = YAML()
        yaml.default_flow_style = False
        yaml.width = 4096

        def dump(path: Path, data: Any) -> None:
            with path.open("w") as f:
                yaml.dump(data, f)

        if self.bundle_meta is not None or self.not_collected:
            meta: dict[str, Any] = {
                "apiVersion": "ckpt-doctor/v1",
                "kind": "Bundle",
                "collectedAt": ts(120),
                "target": {"namespace": self.ns, "name": self.name},
            }
            if self.bundle_meta:
                meta["cluster"] = {"context": "prod-gpu", "serverVersion": "v1.31.2", **self.bundle_meta}
            if self.not_collected:
                meta["notCollected"] = self.not_collected
            if self.listed is not None and self.bundle_meta is not None:
                dropped = {f"{k.lower()}s" for k in self.drop_kinds}
                meta["listed"] = [k for k in self.listed if k not in dropped]
            dump(root / "bundle.yaml", meta)
        groups: dict[str, list[dict[str, Any]]] = {}
        for o in objs:
            groups.setdefault(o["kind"], []).append(o)
        for kind, items in groups.items():
            fname = {
                "TrainJob": "trainjob.yaml",
                "TrainingRuntime": "runtime.yaml",
                "JobSet": "jobset.yaml",
                "Event": "events.json",
            }.get(kind, f"{kind.lower()}{'es' if kind.endswith('s') else 's'}.yaml")  # storageclasses.yaml
            if kind == "Event":  # `kubectl get events -o json`
                (root / fname).write_text(
                    json.dumps(
                        {"apiVersion": "v1", "kind": "List", "items": items, "metadata": {"resourceVersion": ""}},
                        indent=4,
                    )
                    + "\n"
                )
            elif len(items) == 1 and kind in ("TrainJob", "TrainingRuntime", "JobSet"):
                dump(root / fname, items[0])
            else:
                dump(
                    root / fname,
                    {"apiVersion": "v1", "kind": "List", "items": items, "metadata": {"resourceVersion": ""}},
                )
        for (pod, container, previous), text in logs.items():
            d = root / "logs" / pod
            d.mkdir(parents=True, exist_ok=True)
            (d / f"{container}{'.previous' if previous else ''}.log").write_text(text)
        return root


def _rank_log(text: str) -> str:
    """Non-zero ranks print only the progress bar (HF logs on the main process)."""
    return "\n".join(line for line in text.splitlines() if "it/s]" in line) + "\n"
