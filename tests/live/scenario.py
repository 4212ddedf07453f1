"""A TrainJob incident built in code, for the live tests: any number of pods, secrets planted on request.

Story: `sft-run` (namespace `team-a`) checkpoints to a PVC; its JobSet restarted once, the attempt-0 pods
were deleted (only their events are left), pod 0 of attempt 1 also restarted its container in place. The
previous instance had saved checkpoint-200; the current instances start from scratch. Another TrainJob
(`other-run`) lives in the same namespace and must never leak into `sft-run`'s evidence.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML

NS = "team-a"
NAME = "sft-run"
TJ_UID = "6a1c9a52-0d7e-4c1b-9a55-000000000001"
JS_UID = "6a1c9a52-0d7e-4c1b-9a55-000000000002"
SUFFIXES = "bcdfghjklmnpqrstvwxz"
T0 = "2026-11-30T09:00:00Z"
T1 = "2026-11-30T09:40:00Z"
LogKey = tuple[str, str, str, bool]  # namespace, pod, container, previous


def pod_name(job: str, index: int, attempt: int = 1) -> str:
    s = "".join(SUFFIXES[(index * 7 + attempt * 3 + k) % len(SUFFIXES)] for k in range(5))
    return f"{job}-node-0-{index}-{s}"


def _labels(job: str, index: int, attempt: int) -> dict[str, str]:
    return {
        "jobset.sigs.k8s.io/jobset-name": job,
        "jobset.sigs.k8s.io/replicatedjob-name": "node",
        "jobset.sigs.k8s.io/restart-attempt": str(attempt),
        "jobset.sigs.k8s.io/job-index": "0",
        "batch.kubernetes.io/job-completion-index": str(index),
        "trainer.kubeflow.org/trainjob-ancestor-step": "trainer",
    }


def event(
    name: str,
    kind: str,
    obj: str,
    reason: str,
    message: str,
    uid: str | None = None,
    etype: str = "Normal",
    ts: str = T1,
) -> dict[str, Any]:
    inv: dict[str, Any] = {"kind": kind, "name": obj, "namespace": NS}
    if uid:
        inv["uid"] = uid
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": name, "namespace": NS, "creationTimestamp": ts},
        "involvedObject": inv,
        "reason": reason,
        "message": message,
        "type": etype,
        "count": 1,
        "firstTimestamp": ts,
        "lastTimestamp": ts,
    }


@dataclass
class Scenario:
    pods: int = 2
    secrets: dict[str, str] = field(default_factory=dict)  # env name -> planted value
    args: list[str] = field(default_factory=list)  # extra trainer args (planted flags)
    config_text: str = ""  # a mounted training config (planted assignments)
    log_lines: list[str] = field(default_factory=list)  # planted lines in every current log
    namespace: str = NS
    name: str = NAME
    node_count: int = 4  # pods are spread over this many nodes

    # -- objects ------------------------------------------------------------------------------------
    def env(self) -> list[dict[str, Any]]:
        env = [
            {"name": "CKPT_DIR", "value": f"/ckpt/{self.name}"},
            {"name": "TOKENIZERS_PARALLELISM", "value": "false"},
        ]
        env += [{"name": k, "value": v} for k, v in self.secrets.items()]
        return env

    def container(self) -> dict[str, Any]:
        mounts = [{"name": "ckpt", "mountPath": "/ckpt"}]
        if self.config_text:
            mounts.append({"name": "train-config", "mountPath": "/etc/train"})
        return {
            "name": "node",
            "image": "ghcr.io/example/sft:1.4",
            "command": ["torchrun", "--nproc-per-node=8", "train.py"],
            "args": ["--output_dir", f"/ckpt/{self.name}", "--save_steps", "100", *self.args],
            "env": self.env(),
            "volumeMounts": mounts,
        }

    def volumes(self) -> list[dict[str, Any]]:
        vols: list[dict[str, Any]] = [{"name": "ckpt", "persistentVolumeClaim": {"claimName": "ckpt-sft"}}]
        if self.config_text:
            vols.append({"name": "train-config", "configMap": {"name": "sft-config"}})
        return vols

    def trainjob(self) -> dict[str, Any]:
        return {
            "apiVersion": "trainer.kubeflow.org/v1alpha1",
            "kind": "TrainJob",
            "metadata": {
                "name": self.name,
                "namespace": self.namespace,
                "uid": TJ_UID,
                "generation": 1,
                "creationTimestamp": T0,
            },
            "spec": {
                "runtimeRef": {
                    "name": "torch-ckpt",
                    "kind": "ClusterTrainingRuntime",
                    "apiGroup": "trainer.kubeflow.org",
                },
                "trainer": {"numNodes": self.pods, "env": self.env()},
            },
            "status": {
                "conditions": [
                    {
                        "type": "Created",
                        "status": "True",
                        "reason": "JobSetCreated",
                        "message": "JobSet created",
                        "lastTransitionTime": T0,
                    }
                ]
            },
        }

    def runtime(self) -> dict[str, Any]:
        c = self.container()
        return {
            "apiVersion": "trainer.kubeflow.org/v1alpha1",
            "kind": "ClusterTrainingRuntime",
            "metadata": {"name": "torch-ckpt", "creationTimestamp": T0},
            "spec": {
                "mlPolicy": {"numNodes": 1, "torch": {"numProcPerNode": "auto"}},
                "template": {
                    "spec": {
                        "failurePolicy": {"maxRestarts": 3},
                        "replicatedJobs": [
                            {
                                "name": "node",
                                "template": {
                                    "metadata": {"labels": {"trainer.kubeflow.org/trainjob-ancestor-step": "trainer"}},
                                    "spec": {
                                        "template": {
                                            "spec": {
                                                "terminationGracePeriodSeconds": 300,
                                                "containers": [
                                                    {
                                                        k: c[k]
                                                        for k in ("name", "image", "command", "args", "volumeMounts")
                                                    }
                                                ],
                                                "volumes": self.volumes(),
                                            }
                                        }
                                    },
                                },
                            }
                        ],
                    }
                },
            },
        }

    def jobset(self) -> dict[str, Any]:
        return {
            "apiVersion": "jobset.x-k8s.io/v1alpha2",
            "kind": "JobSet",
            "metadata": {
                "name": self.name,
                "namespace": self.namespace,
                "uid": JS_UID,
                "creationTimestamp": T0,
                "ownerReferences": [
                    {
                        "apiVersion": "trainer.kubeflow.org/v1alpha1",
                        "kind": "TrainJob",
                        "name": self.name,
                        "uid": TJ_UID,
                        "controller": True,
                    }
                ],
            },
            "spec": {"failurePolicy": {"maxRestarts": 3}, "replicatedJobs": [{"name": "node", "replicas": 1}]},
            "status": {"restarts": 1},
        }

    def job(self) -> dict[str, Any]:
        return {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {
                "name": f"{self.name}-node-0",
                "namespace": self.namespace,
                "creationTimestamp": T1,
                "labels": {k: v for k, v in _labels(self.name, 0, 1).items() if not k.startswith("batch.")},
            },
            "spec": {"completions": self.pods, "parallelism": self.pods, "completionMode": "Indexed"},
            "status": {"active": self.pods},
        }

    def pod(self, i: int, attempt: int = 1, job: str | None = None) -> dict[str, Any]:
        job = job or self.name
        restarted = job == self.name and i == 0
        status: dict[str, Any] = {
            "name": "node",
            "ready": True,
            "restartCount": 1 if restarted else 0,
            "image": "ghcr.io/example/sft:1.4",
            "containerID": f"containerd://{job}{i}{attempt}b",
            "state": {"running": {"startedAt": "2026-11-30T09:45:00Z" if restarted else T1}},
        }
        if restarted:
            status["lastState"] = {
                "terminated": {
                    "exitCode": 1,
                    "reason": "Error",
                    "startedAt": T1,
                    "finishedAt": "2026-11-30T09:44:00Z",
                    "containerID": f"containerd://{job}{i}{attempt}a",
                }
            }
        return {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": pod_name(job, i, attempt),
                "namespace": self.namespace,
                "uid": f"pod-{job}-{i}-{attempt}",
                "creationTimestamp": T1,
                "labels": _labels(job, i, attempt),
                "annotations": {"jobset.sigs.k8s.io/restart-attempt": str(attempt)},
            },
            "spec": {
                "nodeName": f"gpu-{i % self.node_count}",
                "restartPolicy": "OnFailure",
                "containers": [self.container()],
                "volumes": self.volumes(),
                "terminationGracePeriodSeconds": 300,
            },
            "status": {"phase": "Running", "startTime": T1, "containerStatuses": [status]},
        }

    def storage(self) -> list[dict[str, Any]]:
        return [
            {
                "apiVersion": "v1",
                "kind": "PersistentVolumeClaim",
                "metadata": {"name": "ckpt-sft", "namespace": self.namespace, "uid": "pvc-1"},
                "spec": {
                    "accessModes": ["ReadWriteMany"],
                    "storageClassName": "filestore",
                    "volumeName": "pv-ckpt-sft",
                    "resources": {"requests": {"storage": "1Ti"}},
                },
                "status": {"phase": "Bound", "accessModes": ["ReadWriteMany"]},
            },
            {
                "apiVersion": "v1",
                "kind": "PersistentVolumeClaim",
                "metadata": {"name": "unrelated-data", "namespace": self.namespace},
                "spec": {"accessModes": ["ReadWriteOnce"]},
                "status": {"phase": "Pending"},
            },
            {
                "apiVersion": "v1",
                "kind": "PersistentVolume",
                "metadata": {"name": "pv-ckpt-sft"},
                "spec": {
                    "accessModes": ["ReadWriteMany"],
                    "storageClassName": "filestore",
                    "capacity": {"storage": "1Ti"},
                    "csi": {"driver": "filestore.csi.storage.gke.io", "volumeHandle": "fs-1"},
                    "claimRef": {"name": "ckpt-sft", "namespace": self.namespace},
                },
                "status": {"phase": "Bound"},
            },
            {
                "apiVersion": "storage.k8s.io/v1",
                "kind": "StorageClass",
                "metadata": {"name": "filestore"},
                "provisioner": "filestore.csi.storage.gke.io",
                "reclaimPolicy": "Retain",
            },
        ]

    def nodes(self) -> list[dict[str, Any]]:
        return [
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {
                    "name": f"gpu-{i}",
                    "labels": {"kubernetes.io/hostname": f"gpu-{i}", "topology.kubernetes.io/zone": "zone-a"},
                },
                "status": {"conditions": [{"type": "Ready", "status": "True"}]},
            }
            for i in range(min(self.node_count, max(1, self.pods)))
        ]

    def events(self) -> list[dict[str, Any]]:
        evs = [
            event(
                "sft-run.restart",
                "JobSet",
                self.name,
                "RestartJobSetFailurePolicyAction",
                "restarting the JobSet (attempt 1)",
                JS_UID,
                "Warning",
            ),
            event("sft-run.created", "TrainJob", self.name, "JobSetCreated", "JobSet created", TJ_UID, ts=T0),
            event(
                "sft-run.stale",
                "TrainJob",
                self.name,
                "JobSetCreated",
                "a deleted TrainJob of the same name",
                "0000-old-uid",
                ts="2026-11-01T00:00:00Z",
            ),
            event(
                "sft-run.old-pod",
                "Pod",
                pod_name(self.name, 0, 0),
                "Killing",
                "Stopping container node",
                "pod-gone",
                ts=T1,
            ),
            event("other.pod", "Pod", pod_name("other-run", 0, 0), "Pulled", "image pulled"),
        ]
        for i in range(self.pods):
            p = pod_name(self.name, i, 1)
            evs.append(event(f"{p}.started", "Pod", p, "Started", "Started container node", f"pod-{self.name}-{i}-1"))
        return evs

    def other(self) -> list[dict[str, Any]]:
        tj = self.trainjob()
        tj["metadata"] = {"name": "other-run", "namespace": self.namespace, "uid": "other-uid"}
        return [tj, self.pod(0, 0, job="other-run")]

    def objects(self) -> list[dict[str, Any]]:
        objs = [
            self.trainjob(),
            self.runtime(),
            self.jobset(),
            self.job(),
            *(self.pod(i) for i in range(self.pods)),
            *self.storage(),
            *self.nodes(),
            *self.events(),
            *self.other(),
        ]
        if self.config_text:
            objs.append(
                {
                    "apiVersion": "v1",
                    "kind": "ConfigMap",
                    "metadata": {"name": "sft-config", "namespace": self.namespace},
                    "data": {"train.yaml": self.config_text},
                }
            )
        return objs

    # -- logs ---------------------------------------------------------------------------------------
    def logs(self) -> dict[LogKey, bytes]:
        out: dict[LogKey, bytes] = {}
        planted = "".join(f"{line}\n" for line in self.log_lines)
        for i in range(self.pods):
            p = pod_name(self.name, i, 1)
            out[(self.namespace, p, "node", False)] = (
                f"rank {i} starting\n{planted}[checkpoint] no prior checkpoint in /ckpt/{self.name}, starting fresh\n"
                + "".join(f"step {s} loss {2.0 - s / 1000:.3f}\n" for s in range(1, 40))
            ).encode()
        p0 = pod_name(self.name, 0, 1)
        out[(self.namespace, p0, "node", True)] = (
            f"rank 0 starting\n[checkpoint] no prior checkpoint in /ckpt/{self.name}, starting fresh\n"
            f"step 100 loss 1.2\n[checkpoint] saved /ckpt/{self.name}/checkpoint-100\n"
            f"step 200 loss 1.1\n[checkpoint] saved /ckpt/{self.name}/checkpoint-200\n"
            "RuntimeError: NCCL communicator was aborted\n"
        ).encode()
        return out

    # -- serving and writing ------------------------------------------------------------------------
    def load(self, kube: Any) -> None:
        kube.add_many(self.objects())
        for (ns, pod, container, previous), data in self.logs().items():
            kube.set_log(ns, pod, container, data, previous=previous)

    def write_bundle(self, root: Path) -> Path:
        """The same incident as a hand-made bundle directory (what `diagnose --bundle` reads)."""
        root.mkdir(parents=True, exist_ok=True)
        y = YAML(typ="safe", pure=True)
        y.default_flow_style = False
        with (root / "objects.yaml").open("w") as f:
            y.dump_all([o for o in self.objects() if o["kind"] != "Event"], f)
        with (root / "events.yaml").open("w") as f:
            y.dump(
                {"apiVersion": "v1", "kind": "List", "items": [o for o in self.objects() if o["kind"] == "Event"]}, f
            )
        for (_ns, pod, container, previous), data in self.logs().items():
            d = root / "logs" / pod
            d.mkdir(parents=True, exist_ok=True)
            (d / f"{container}{'.previous' if previous else ''}.log").write_bytes(data)
        return root
