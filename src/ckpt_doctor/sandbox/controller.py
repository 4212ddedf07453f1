"""A simulated Kubeflow Trainer + JobSet + Job controller + scheduler + kubelet over LoopbackApi, for the drill.

One thread follows every change of the fake API server (`LoopbackApi.tap`) and reconciles, the way the real
controllers do (trainer-api.md §4, §6, §9):

- Trainer: a TrainJob becomes a JobSet of the same name (the runtime's template, the overrides by
  replicated-job name, `spec.trainer` only where the Job template carries the ancestor label and only in
  the container `node`); the JobSet is rebuilt while suspended; `spec.suspend` is copied; conditions
  Suspended/Resumed, Failed and Complete are set; a deleted TrainJob takes its JobSet, Jobs and pods.
- JobSet: Jobs `<js>-<rjob>-<i>` labelled with `jobset.sigs.k8s.io/restart-attempt` = status.restarts;
  a failed Job fails the JobSet (no failurePolicy: FailedJobs) or restarts it (new Jobs, restarts + 1) up
  to maxRestarts; suspend suspends the Jobs, resume merges the pod template's nodeSelector back in.
- Job: one pod per completion index; a pod that fails or is deleted counts against backoffLimit (default 6);
  a suspended Job's pods get SIGTERM and, after the grace period, SIGKILL.
- scheduler: the first Ready, schedulable node (by name) that matches the nodeSelector.
- kubelet: volumes (a ReadWriteOnce volume attaches to one node; it stays attached `detach_seconds` after
  its last pod there is gone; a pod elsewhere waits with a `FailedAttachVolume` Multi-Attach event), then the
  trainer process: it reads CKPT_DIR from its env, looks at what is on that volume, and logs in the guide's
  `[checkpoint]` convention. A `Scenario` decides what each start says, keyed on the restart attempt.

Times are real and short (milliseconds); grace periods are scaled by `grace_scale`.
"""

from __future__ import annotations

import copy
import hashlib
import heapq
import itertools
import queue
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from ckpt_doctor.sandbox.apiserver import LoopbackApi
from ckpt_doctor.sandbox.execws import handler as exec_handler
from ckpt_doctor.sandbox.voice import GuideVoice, Voice
from ckpt_doctor.sandbox.volume import Volume

KILL = ({"kill", "1"}, {"kill", "-TERM", "1"}, {"kill", "-15", "1"}, {"kill", "-s", "TERM", "1"})

ANCESTOR = "trainer.kubeflow.org/trainjob-ancestor-step"
JS = "jobset.sigs.k8s.io/"
GPU = "nvidia.com/gpu"
Obj = dict[str, Any]


class VirtualClock:
    """Timestamps that move on at least a second per event: API times have whole seconds, and the simulated
    cluster lives through many events in one real second; the engine orders attempts by these times.

    `behind` starts the clock that many seconds in the past (the sandbox's jobs "started a while ago"), so that
    a burst of events does not push times ahead of the real clock that ages and staleness are read against."""

    def __init__(self, behind: float = 0.0) -> None:
        self.t = datetime.now(UTC).timestamp() - behind
        self.lock = threading.Lock()

    def __call__(self) -> str:
        with self.lock:
            self.t = max(self.t + 1, datetime.now(UTC).timestamp())
            return datetime.fromtimestamp(self.t, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


stamp = VirtualClock()


def _meta(o: Obj) -> Obj:
    return o.setdefault("metadata", {})


def _ann(o: Obj) -> dict[str, str]:
    return dict((o.get("metadata") or {}).get("annotations") or {})


def _labels(o: Obj) -> dict[str, str]:
    return dict((o.get("metadata") or {}).get("labels") or {})


def _gpus(pod: Obj) -> float:
    total = 0.0
    for c in (pod.get("spec") or {}).get("containers") or []:
        res = c.get("resources") or {}
        v = (res.get("limits") or {}).get(GPU, (res.get("requests") or {}).get(GPU, 0))
        try:
            total += float(v or 0)
        except (TypeError, ValueError):
            continue
    return total


def _node_container(spec: Obj) -> Obj:
    """The trainer container: `node`, else the first."""
    containers = spec.get("containers") or [{}]
    return next((c for c in containers if c.get("name") == "node"), containers[0])


def _merge(base: Any, patch: Any, key: str | None = None) -> Any:
    """Strategic merge as the Trainer applies overrides: maps merge, lists of named items merge by name."""
    keys = {"containers": "name", "initContainers": "name", "volumes": "name", "env": "name",
            "volumeMounts": "mountPath", "replicatedJobs": "name"}
    if isinstance(base, dict) and isinstance(patch, dict):
        out = dict(base)
        for k, v in patch.items():
            out[k] = _merge(out[k], v, k) if k in out else copy.deepcopy(v)
        return out
    if isinstance(base, list) and isinstance(patch, list) and key in keys:
        mk, out_l = keys[key], [copy.deepcopy(x) for x in base]
        for item in patch:
            hit = next((i for i, b in enumerate(out_l) if isinstance(b, dict) and isinstance(item, dict)
                        and b.get(mk) == item.get(mk)), None)
            if hit is None:
                out_l.append(copy.deepcopy(item))
            else:
                out_l[hit] = _merge(out_l[hit], item)
        return out_l
    return copy.deepcopy(patch)


# -- what the trainer does -------------------------------------------------------------------------------


@dataclass
class Program:
    """The simulated trainer's knobs (one scenario's)."""

    save_every: int = 50
    burst_saves: int | None = 1  # saves made at once right after a start, then only progress (None: keep saving)
    steps_per_tick: int = 2
    tick: float = 0.01  # seconds between two ticks
    total: int = 100_000
    sort: str = "numeric"  # numeric | lexical: how it picks the newest checkpoint-N on start
    pid1: str = "python"  # python (SIGTERM reaches its handler) | shell (a shell as PID 1 ignores SIGTERM)
    flush_on_sigterm: bool = True  # the handler writes a final checkpoint
    print_saves: bool = True  # False: saves leave no line (HF's save line lost under its progress bar)
    keep: int | None = None  # save_total_limit: after a save, only the newest `keep` checkpoints stay


@dataclass
class Start:
    """How one trainer start begins: resume from `step` (in `path`) or start fresh."""

    step: int | None
    path: str | None
    lines: list[str] = field(default_factory=list)  # extra lines after the first one (a scenario's)
    node: str = ""  # where it ran (the simulator's record, for tests that check what really happened)


@dataclass
class StartContext:
    restart_attempt: int
    instance: int  # container restart count in this pod
    pod: Obj
    ckpt_dir: str | None
    on_volume: list[int]  # complete checkpoint steps visible in ckpt_dir


class Scenario:
    """What one TrainJob's trainer does: its program's knobs, and its voice (what it prints and saves, from a
    recording of a real run or the guide's convention). `start` decides where each start resumes from, reading
    the volume as the program would."""

    def __init__(self, program: Program | None = None, voice: Voice | None = None) -> None:
        self.program = program or Program()
        self.voice: Voice = voice or GuideVoice(save_every=self.program.save_every,
                                                print_saves=self.program.print_saves)

    def start(self, ctx: StartContext) -> Start:
        steps = ctx.on_volume
        if not steps or not ctx.ckpt_dir:
            return Start(None, None)
        names = {self.voice.checkpoint_name(s): s for s in steps}
        step = names[max(names)] if self.program.sort == "lexical" else max(steps)
        return Start(step, f"{ctx.ckpt_dir.rstrip('/')}/{self.voice.checkpoint_name(step)}")


@dataclass
class Proc:
    ns: str
    pod: str
    uid: str
    node: str
    instance: int
    ckpt_dir: str | None
    volume: tuple[str, ...] | None
    step: int = 0
    saves_left: int | None = None
    next_tick: float = 0.0
    text: list[str] = field(default_factory=list)
    sigterm_at: float | None = None
    kill_at: float | None = None  # SIGKILL at the end of the grace period
    exited: int | None = None
    scenario: Scenario | None = None
    container: str = "node"


@dataclass
class Attachment:
    node: str
    pods: set[str] = field(default_factory=set)
    release_at: float | None = None


class Simulator:
    """The controllers of one fake cluster. `with Simulator(kube, scenario): …` runs them in a thread."""

    def __init__(self, kube: LoopbackApi, scenario: Scenario | None = None, *, nodes: tuple[str, ...] = (
            "gpu-node-a", "gpu-node-b"), detach_seconds: float = 0.0, grace_scale: float = 0.01,
                 gpus: int = 8, clocks_behind: float | None = None) -> None:
        self.kube = kube
        # one clock per TrainJob (its objects' times are ordered; others' events do not push them ahead), or the
        # module's one clock when clocks_behind is None (the tests' simulators: one TrainJob each)
        self.clocks_behind = clocks_behind
        self.clocks: dict[tuple[str, str], VirtualClock] = {}
        self.scenario = scenario or Scenario()
        self.detach_seconds = detach_seconds
        self.grace_scale = grace_scale
        self.node_names = nodes
        self.gpus = gpus
        self.mu = threading.RLock()
        self.volumes: dict[tuple[str, ...], Volume] = {}  # ("pvc", ns, claim) | ("emptydir", uid, name) | ...
        self.assigned: dict[tuple[str, str], Scenario] = {}  # (namespace, TrainJob) -> its own scenario
        self.procs: dict[str, Proc] = {}  # by pod uid
        self.attach: dict[tuple[str, str], Attachment] = {}
        self.mine: set[str] = set()  # uids of pods this simulator deletes itself
        self.counted: set[str] = set()  # uids of pods deleted by someone else, counted as failures
        self.seen_pods: dict[str, Obj] = {}  # the last copy of every pod, by uid (to notice deletions)
        self.holds: set[str] = set()  # "saves": no saves; "start": no container starts
        self.errors: list[str] = []
        self.starts: list[tuple[str, int, Start]] = []  # (pod, restart attempt, how it began)
        self._reported: set[tuple[str, str]] = set()
        self._timers: list[tuple[float, int, Callable[[], None]]] = []
        self._seq = itertools.count()
        self._stop = threading.Event()
        self._tap: queue.Queue[Any] | None = None
        self._thread: threading.Thread | None = None
        self._pod_seq: dict[tuple[str, str], int] = {}
        self._last_suspend: dict[tuple[str, str], bool] = {}

    def _clk(self, ns: str, trainjob: str) -> str:
        """Now, for an object of TrainJob `trainjob`: one second after the last time stamped for that TrainJob."""
        if self.clocks_behind is None:
            return stamp()
        clock = self.clocks.get((ns, trainjob))
        if clock is None:
            clock = self.clocks[(ns, trainjob)] = VirtualClock(self.clocks_behind)
        return clock()

    def _pod_now(self, pod: Obj) -> str:
        meta = pod["metadata"]
        return self._clk(meta["namespace"], _labels(pod).get(JS + "jobset-name", meta["name"]))

    def _owner(self, kind: str, ns: str, name: str) -> str:
        if kind == "Pod":
            pod = self.kube.get("pods", ns, name) or {}
            return _labels(pod).get(JS + "jobset-name", name)
        return name

    def assign(self, namespace: str, trainjob: str, scenario: Scenario) -> None:
        """Give one TrainJob its own scenario (the others get the simulator's default)."""
        with self.mu:
            self.assigned[(namespace, trainjob)] = scenario

    def scenario_of(self, pod: Obj) -> Scenario:
        key = (pod["metadata"]["namespace"], _labels(pod).get(JS + "jobset-name", ""))
        return self.assigned.get(key, self.scenario)

    def volume(self, key: tuple[str, ...]) -> Volume:
        vol = self.volumes.get(key)
        if vol is None:
            vol = self.volumes[key] = Volume(device="/dev/rbd0" if key[0] == "pvc" else "overlay")
        return vol

    def checkpoints(self, key: tuple[str, ...] | None, directory: str | None, voice: Voice) -> dict[int, bool]:
        """The checkpoints a trainer with this voice finds in `directory` of a volume: step -> complete."""
        if key is None or not directory or key not in self.volumes:
            return {}
        return self.volumes[key].checkpoints(directory, voice.marker)

    # -- lifecycle ---------------------------------------------------------------------------------------
    def __enter__(self) -> Simulator:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> None:
        for n in self.node_names:
            if self.kube.get("nodes", None, n) is None:
                self.kube.add(self.node(n))
        self.kube.upgrade = exec_handler(self.kube, self.exec)
        self._tap = self.kube.tap()
        self._thread = threading.Thread(target=self._loop, name="sim-controllers", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)
        if self._tap is not None:
            self.kube.untap(self._tap)
        self.kube.upgrade = None

    def node(self, name: str) -> Obj:
        return {
            "apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, "nvidia.com/gpu.present": "true"}},
            "spec": {},
            "status": {"conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady"}],
                       "allocatable": {"cpu": "64", "memory": "512Gi", "nvidia.com/gpu": str(self.gpus)},
                       "capacity": {"cpu": "64", "memory": "512Gi", "nvidia.com/gpu": str(self.gpus)}},
        }

    # -- the loop ----------------------------------------------------------------------------------------
    def _loop(self) -> None:
        assert self._tap is not None
        while not self._stop.is_set():
            wait = 0.01
            if self._timers:
                wait = max(0.0, min(wait, self._timers[0][0] - time.monotonic()))
            changes = []
            try:
                changes.append(self._tap.get(timeout=wait))
                while True:
                    changes.append(self._tap.get_nowait())
            except queue.Empty:
                pass
            try:
                with self.mu:
                    for c in changes:
                        if c.type == "DELETED":
                            self._deleted(c.store, c.old or c.new)
                    now = time.monotonic()
                    while self._timers and self._timers[0][0] <= now:
                        _, _, fn = heapq.heappop(self._timers)
                        fn()
                    self.reconcile()
                    self._tick_procs()
            except Exception:
                self.errors.append(traceback.format_exc())
                time.sleep(0.05)

    def later(self, seconds: float, fn: Callable[[], None]) -> None:
        heapq.heappush(self._timers, (time.monotonic() + seconds, next(self._seq), fn))

    # -- store helpers -----------------------------------------------------------------------------------
    def _write(self, resource: str, ns: str | None, name: str, edit: Callable[[Obj], bool | None]) -> Obj | None:
        """Read-modify-write under the fake's lock (so an API request cannot land in between)."""
        with self.kube._lock:
            cur = self.kube.get(resource, ns, name)
            if cur is None:
                return None
            before = copy.deepcopy(cur)
            if edit(cur) is False or cur == before:
                return cur
            return self.kube.update(cur)

    def event(self, kind: str, ns: str, name: str, reason: str, message: str, etype: str = "Warning",
              uid: str | None = None, component: str = "") -> None:
        key = (f"{kind}/{ns}/{name}", reason)
        if key in self._reported:
            return
        self._reported.add(key)
        ts = self._clk(ns, self._owner(kind, ns, name))
        h = hashlib.sha1(f"{name}{reason}{ts}{next(self._seq)}".encode()).hexdigest()[:16]
        inv = {"kind": kind, "namespace": ns, "name": name, **({"uid": uid} if uid else {})}
        self.kube.add({"apiVersion": "v1", "kind": "Event",
                       "metadata": {"name": f"{name}.{h}", "namespace": ns, "creationTimestamp": ts},
                       "involvedObject": inv, "reason": reason, "message": message, "type": etype, "count": 1,
                       "firstTimestamp": ts, "lastTimestamp": ts, "source": {"component": component}})

    def _delete(self, resource: str, ns: str | None, name: str) -> None:
        try:
            gone = self.kube.delete(resource, ns, name)
        except KeyError:
            return
        if resource == "pods":
            self.mine.add(str(gone["metadata"]["uid"]))
            self._pod_gone(gone, by_us=True)

    # -- reconcile ----------------------------------------------------------------------------------------
    def reconcile(self) -> None:
        self._bind_pvcs()
        tjs = {(t["metadata"]["namespace"], t["metadata"]["name"]): t for t in self.kube.objects("trainjobs")}
        for js in self.kube.objects("jobsets"):
            key = (js["metadata"]["namespace"], js["metadata"]["name"])
            if key not in tjs and any(r.get("kind") == "TrainJob" for r in js["metadata"].get("ownerReferences") or []):
                self._gc_jobset(js)
        for tj in tjs.values():
            self._trainer(tj)
        for js in self.kube.objects("jobsets"):
            self._jobset(js)
        for job in self.kube.objects("jobs"):
            self._job(job)
        for pod in self.kube.objects("pods"):
            self._kubelet(pod)

    def _bind_pvcs(self) -> None:
        for pvc in self.kube.objects("persistentvolumeclaims"):
            if (pvc.get("status") or {}).get("phase") == "Bound":
                continue
            ns, name = pvc["metadata"]["namespace"], pvc["metadata"]["name"]
            vol = f"pvc-{hashlib.sha1(f'{ns}/{name}'.encode()).hexdigest()[:12]}"
            modes = list((pvc.get("spec") or {}).get("accessModes") or ["ReadWriteOnce"])
            cls = (pvc.get("spec") or {}).get("storageClassName") or "standard"
            if self.kube.get("persistentvolumes", None, vol) is None:
                self.kube.add({"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": vol},
                               "spec": {"accessModes": modes, "capacity": {"storage": "100Gi"},
                                        "storageClassName": cls, "persistentVolumeReclaimPolicy": "Delete",
                                        "claimRef": {"kind": "PersistentVolumeClaim", "namespace": ns, "name": name},
                                        "csi": {"driver": "rbd.csi.ceph.com", "volumeHandle": vol}},
                               "status": {"phase": "Bound"}})

            def bind(o: Obj, vol: str = vol, modes: list[str] = modes) -> None:
                o.setdefault("spec", {})["volumeName"] = vol
                o["status"] = {"phase": "Bound", "accessModes": modes, "capacity": {"storage": "100Gi"}}

            self._write("persistentvolumeclaims", ns, name, bind)

    # -- Trainer ------------------------------------------------------------------------------------------
    def _runtime(self, tj: Obj) -> Obj | None:
        ref = (tj.get("spec") or {}).get("runtimeRef") or {}
        if ref.get("kind") == "TrainingRuntime":
            return self.kube.get("trainingruntimes", tj["metadata"]["namespace"], ref.get("name", ""))
        return self.kube.get("clustertrainingruntimes", None, ref.get("name", ""))

    def _finished(self, o: Obj) -> bool:
        return any(c.get("type") in ("Complete", "Failed") and c.get("status") == "True"
                   for c in (o.get("status") or {}).get("conditions") or [])

    def build_jobset(self, tj: Obj, rt: Obj) -> Obj:
        spec = copy.deepcopy(((rt.get("spec") or {}).get("template") or {}).get("spec") or {})
        tspec = tj.get("spec") or {}
        trainer = tspec.get("trainer") or {}
        num = trainer.get("numNodes") or ((rt.get("spec") or {}).get("mlPolicy") or {}).get("numNodes") or 1
        for rj in spec.get("replicatedJobs") or []:
            jt = rj.setdefault("template", {})
            jspec = jt.setdefault("spec", {})
            pod = jspec.setdefault("template", {}).setdefault("spec", {})
            name = rj.get("name")
            for ov in tspec.get("podSpecOverrides") or []:
                if any(t.get("name") == name for t in ov.get("targetJobs") or []):
                    pod = _merge(pod, {k: v for k, v in ov.items() if k != "targetJobs"})
            for ov in tspec.get("podTemplateOverrides") or []:
                if any(t.get("name") == name for t in ov.get("targetJobs") or []):
                    pod = _merge(pod, ov.get("spec") or {})
                    meta = jspec["template"].setdefault("metadata", {})
                    for k in ("labels", "annotations"):
                        if (ov.get("metadata") or {}).get(k):
                            meta[k] = {**(meta.get(k) or {}), **ov["metadata"][k]}
            for p in tspec.get("runtimePatches") or []:
                for prj in ((((p.get("trainingRuntimeSpec") or {}).get("template") or {}).get("spec") or {})
                            .get("replicatedJobs")) or []:
                    if prj.get("name") == name:
                        pod = _merge(pod, (((prj.get("template") or {}).get("spec") or {}).get("template") or {})
                                     .get("spec") or {})
            if ((jt.get("metadata") or {}).get("labels") or {}).get(ANCESTOR) == "trainer":
                for c in pod.get("containers") or []:
                    if c.get("name") != "node":
                        continue
                    for f in ("image", "command", "args"):
                        if trainer.get(f) is not None:
                            c[f] = copy.deepcopy(trainer[f])
                    if trainer.get("env"):
                        c["env"] = _merge(c.get("env") or [], trainer["env"], "env")
                    if trainer.get("resourcesPerNode") is not None:
                        c["resources"] = copy.deepcopy(trainer["resourcesPerNode"])
                jspec["parallelism"] = jspec["completions"] = int(num)
            pod.setdefault("restartPolicy", "OnFailure")
            jspec["template"]["spec"] = pod
            jspec.setdefault("completionMode", "Indexed")
            rj.setdefault("replicas", 1)
        spec["suspend"] = bool(tspec.get("suspend"))
        ns, name = tj["metadata"]["namespace"], tj["metadata"]["name"]
        labels = (((rt.get("spec") or {}).get("template") or {}).get("metadata") or {}).get("labels") or {}
        return {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
                "metadata": {"name": name, "namespace": ns, "labels": dict(labels),
                             "creationTimestamp": self._clk(ns, name),
                             "ownerReferences": [{"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
                                                  "name": name, "uid": tj["metadata"]["uid"], "controller": True,
                                                  "blockOwnerDeletion": True}]},
                "spec": spec, "status": {"restarts": 0, "restartsCountTowardsMax": 0}}

    def _trainer(self, tj: Obj) -> None:
        ns, name = tj["metadata"]["namespace"], tj["metadata"]["name"]
        if self._finished(tj):
            return
        rt = self._runtime(tj)
        if rt is None:
            return
        suspend = bool((tj.get("spec") or {}).get("suspend"))
        js = self.kube.get("jobsets", ns, name)
        if js is None:
            self.kube.add(self.build_jobset(tj, rt))
        elif suspend or (js.get("spec") or {}).get("suspend"):
            built = self.build_jobset(tj, rt)

            def rebuild(o: Obj) -> None:
                o["spec"] = {**built["spec"], "suspend": suspend}

            self._write("jobsets", ns, name, rebuild)
            js = self.kube.get("jobsets", ns, name) or js
        was = self._last_suspend.get((ns, name))
        self._last_suspend[(ns, name)] = suspend
        js_status = (js or {}).get("status") or {}
        js_failed = next((c for c in js_status.get("conditions") or [] if c.get("type") == "Failed"
                          and c.get("status") == "True"), None)

        def status(o: Obj) -> None:
            st = o.setdefault("status", {})
            conds = [c for c in st.get("conditions") or [] if c.get("type") != "Suspended"]
            old = next((c for c in st.get("conditions") or [] if c.get("type") == "Suspended"), None)
            if suspend:
                conds.append({"type": "Suspended", "status": "True", "reason": "Suspended",
                              "message": "TrainJob is suspended",
                              "lastTransitionTime": old["lastTransitionTime"] if old and old["status"] == "True"
                              else self._clk(ns, name)})
            elif old is not None or was:
                conds.append({"type": "Suspended", "status": "False", "reason": "Resumed",
                              "message": "TrainJob is resumed",
                              "lastTransitionTime": old["lastTransitionTime"] if old and old["status"] == "False"
                              else self._clk(ns, name)})
            if js_failed is not None and not any(c.get("type") == "Failed" for c in conds):
                conds.append({**js_failed})
            st["conditions"] = conds
            st["jobsStatus"] = [{"name": r.get("name"), "active": r.get("active", 0), "ready": 0, "succeeded": 0,
                                 "failed": r.get("failed", 0), "suspended": r.get("suspended", 0)}
                                for r in js_status.get("replicatedJobsStatus") or []]

        self._write("trainjobs", ns, name, status)

    def _gc_jobset(self, js: Obj) -> None:
        ns, name = js["metadata"]["namespace"], js["metadata"]["name"]
        for job in self.kube.objects("jobs", ns):
            if _labels(job).get(JS + "jobset-name") == name:
                self._delete_job(job)
        self._delete("jobsets", ns, name)

    # -- JobSet -------------------------------------------------------------------------------------------
    def _jobset(self, js: Obj) -> None:
        ns, name = js["metadata"]["namespace"], js["metadata"]["name"]
        st = js.get("status") or {}
        if self._finished(js):
            return
        restarts = int(st.get("restarts") or 0)
        suspend = bool((js.get("spec") or {}).get("suspend"))
        jobs = {j["metadata"]["name"]: j for j in self.kube.objects("jobs", ns)
                if _labels(j).get(JS + "jobset-name") == name}
        failed = [j for j in jobs.values() if self._finished(j) and any(
            c.get("type") == "Failed" for c in (j.get("status") or {}).get("conditions") or [])]
        if failed:
            self._job_failed(js, failed[0], jobs)
            return
        rstatus = []
        for rj in (js.get("spec") or {}).get("replicatedJobs") or []:
            active = 0
            for i in range(int(rj.get("replicas") or 1)):
                jname = f"{name}-{rj['name']}-{i}"
                job = jobs.get(jname)
                if job is None:
                    self.kube.add(self._new_job(js, rj, i, restarts, suspend))
                    continue
                if bool((job.get("spec") or {}).get("suspend")) != suspend:
                    tmpl = rj["template"]["spec"]["template"]

                    def flip(o: Obj, tmpl: Obj = tmpl) -> None:
                        o["spec"]["suspend"] = suspend
                        if not suspend:  # resume: JobSet merges the pod template's scheduling fields back in
                            pt = o["spec"]["template"]
                            for k in ("nodeSelector", "tolerations", "schedulingGates"):
                                if (tmpl.get("spec") or {}).get(k) is not None:
                                    pt["spec"][k] = copy.deepcopy(tmpl["spec"][k])
                                else:
                                    pt["spec"].pop(k, None)
                            for k in ("labels", "annotations"):
                                pt.setdefault("metadata", {})[k] = {**((pt.get("metadata") or {}).get(k) or {}),
                                                                    **((tmpl.get("metadata") or {}).get(k) or {})}
                            o.setdefault("status", {}).pop("startTime", None)

                    self._write("jobs", ns, jname, flip)
                active += int((job.get("status") or {}).get("active") or 0)
            rstatus.append({"name": rj["name"], "active": active, "ready": 0, "succeeded": 0, "failed": 0,
                            "suspended": int(rj.get("replicas") or 1) if suspend else 0})

        def status(o: Obj) -> None:
            s = o.setdefault("status", {})
            s["replicatedJobsStatus"] = rstatus
            conds = [c for c in s.get("conditions") or [] if c.get("type") != "Suspended"]
            if suspend:
                conds.append({"type": "Suspended", "status": "True", "reason": "SuspendedJobs",
                              "message": "jobset is suspended"})
            elif any(c.get("type") == "Suspended" for c in s.get("conditions") or []):
                conds.append({"type": "Suspended", "status": "False", "reason": "ResumeJobs",
                              "message": "jobset is resumed"})
            s["conditions"] = conds

        self._write("jobsets", ns, name, status)

    def _new_job(self, js: Obj, rj: Obj, i: int, restarts: int, suspend: bool) -> Obj:
        ns, name = js["metadata"]["namespace"], js["metadata"]["name"]
        jname = f"{name}-{rj['name']}-{i}"
        tmpl = copy.deepcopy(rj["template"])
        keys = {JS + "jobset-name": name, JS + "jobset-uid": js["metadata"]["uid"],
                JS + "replicatedjob-name": rj["name"], JS + "restart-attempt": str(restarts),
                JS + "job-index": str(i), JS + "replicatedjob-replicas": str(rj.get("replicas") or 1)}
        meta = tmpl.setdefault("metadata", {})
        meta["labels"] = {**(meta.get("labels") or {}), **keys}
        meta["annotations"] = {**(meta.get("annotations") or {}), **keys}
        pt = tmpl["spec"].setdefault("template", {})
        pmeta = pt.setdefault("metadata", {})
        pmeta["labels"] = {**(pmeta.get("labels") or {}), **keys}
        pmeta["annotations"] = {**(pmeta.get("annotations") or {}), **keys}
        spec = {**tmpl["spec"], "suspend": suspend}
        spec.setdefault("backoffLimit", 6)
        return {"apiVersion": "batch/v1", "kind": "Job",
                "metadata": {"name": jname, "namespace": ns, "labels": meta["labels"],
                             "annotations": meta["annotations"], "creationTimestamp": self._clk(ns, name),
                             "ownerReferences": [{"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
                                                  "name": name, "uid": js["metadata"]["uid"], "controller": True}]},
                "spec": spec, "status": {"active": 0, "failed": 0}}

    def _job_failed(self, js: Obj, job: Obj, jobs: dict[str, Obj]) -> None:
        ns, name = js["metadata"]["namespace"], js["metadata"]["name"]
        policy = (js.get("spec") or {}).get("failurePolicy")
        st = js.get("status") or {}
        first = job["metadata"]["name"]
        if policy is None or int(st.get("restartsCountTowardsMax") or 0) >= int(policy.get("maxRestarts") or 0):
            reason = "FailedJobs" if policy is None else "ReachedMaxRestarts"
            msg = (f"jobset failed due to one or more job failures (first failed job: {first})" if policy is None
                   else f"jobset failed due to reaching max number of restarts (first failed job: {first})")

            def failed(o: Obj) -> None:
                s = o.setdefault("status", {})
                cond = {"type": "Failed", "status": "True", "reason": reason, "message": msg,
                        "lastTransitionTime": self._clk(ns, name)}
                s["conditions"] = [*(s.get("conditions") or []), cond]
                s["terminalState"] = "Failed"

            self._write("jobsets", ns, name, failed)
            self.event("JobSet", ns, name, reason, msg, component="jobset")
            for j in jobs.values():
                self._delete_pods_of(j)
            return
        self.event("JobSet", ns, name, "RestartJobSetFailurePolicyAction",
                   f"applying RestartJobSet failure policy action (first failed job: {first})", component="jobset")
        self._reported.discard((f"JobSet/{ns}/{name}", "RestartJobSetFailurePolicyAction"))

        def bump(o: Obj) -> None:
            s = o.setdefault("status", {})
            s["restarts"] = int(s.get("restarts") or 0) + 1
            s["restartsCountTowardsMax"] = int(s.get("restartsCountTowardsMax") or 0) + 1

        self._write("jobsets", ns, name, bump)
        for j in jobs.values():
            self._delete_job(j)

    def _delete_job(self, job: Obj) -> None:
        self._delete_pods_of(job)
        self._delete("jobs", job["metadata"]["namespace"], job["metadata"]["name"])

    def _pods_of(self, job: Obj) -> list[Obj]:
        ns = job["metadata"]["namespace"]
        uid = job["metadata"]["uid"]
        return [p for p in self.kube.objects("pods", ns)
                if any(r.get("uid") == uid for r in p["metadata"].get("ownerReferences") or [])]

    def _delete_pods_of(self, job: Obj) -> None:
        for p in self._pods_of(job):
            self._delete("pods", p["metadata"]["namespace"], p["metadata"]["name"])

    # -- Job -----------------------------------------------------------------------------------------------
    def _job(self, job: Obj) -> None:
        ns, jname = job["metadata"]["namespace"], job["metadata"]["name"]
        if self._finished(job):
            return
        pods = self._pods_of(job)
        present = {p["metadata"]["uid"] for p in pods}
        for uid, p in list(self.seen_pods.items()):  # a pod deleted since the last pass, not by us: a failure
            owners = {r.get("uid") for r in p["metadata"].get("ownerReferences") or []}
            if job["metadata"]["uid"] in owners and uid not in present:
                self.seen_pods.pop(uid)
                if uid not in self.mine and uid not in self.counted:
                    self.counted.add(uid)
                    self._pod_gone(p, by_us=False)
        job = self.kube.get("jobs", ns, jname) or job
        spec = job.get("spec") or {}
        failed = int((job.get("status") or {}).get("failed") or 0)
        restarts = sum(int(cs.get("restartCount") or 0) for p in pods
                       for cs in (p.get("status") or {}).get("containerStatuses") or [])
        if failed + restarts > int(spec.get("backoffLimit", 6)):
            def fail(o: Obj) -> None:
                s = o.setdefault("status", {})
                s["conditions"] = [{"type": "Failed", "status": "True", "reason": "BackoffLimitExceeded",
                                    "message": "Job has reached the specified backoff limit",
                                    "lastTransitionTime": self._clk(ns, _labels(job).get(JS + "jobset-name", jname))}]
                s["active"] = 0

            self._write("jobs", ns, jname, fail)
            for p in pods:
                self._delete("pods", ns, p["metadata"]["name"])
            return
        if spec.get("suspend"):
            for p in pods:
                self._terminate(p)
            live = [p for p in pods if not (p["metadata"].get("deletionTimestamp"))]
            self._write("jobs", ns, jname, lambda o: o.setdefault("status", {}).update({"active": len(live)}))
            return
        have = {str(_ann(p).get("batch.kubernetes.io/job-completion-index")): p for p in pods}
        for idx in range(int(spec.get("parallelism") or 1)):
            if str(idx) not in have:
                self.kube.add(self._new_pod(job, idx))
        active = sum(1 for p in self._pods_of(job) if (p.get("status") or {}).get("phase") in ("Pending", "Running"))
        self._write("jobs", ns, jname, lambda o: o.setdefault("status", {}).update({"active": active}))

    def _new_pod(self, job: Obj, idx: int) -> Obj:
        ns, jname = job["metadata"]["namespace"], job["metadata"]["name"]
        tmpl = copy.deepcopy(job["spec"]["template"])
        seq = self._pod_seq[(ns, jname)] = self._pod_seq.get((ns, jname), 0) + 1  # names repeat run to run
        suffix = hashlib.sha1(f"{ns}/{jname}/{idx}/{seq}".encode()).hexdigest()
        alphabet = "bcdfghjklmnpqrstvwxz2456789"
        tail = "".join(alphabet[int(suffix[i:i + 2], 16) % len(alphabet)] for i in range(0, 10, 2))
        meta = tmpl.get("metadata") or {}
        labels = {**(meta.get("labels") or {}), "batch.kubernetes.io/job-name": jname, "job-name": jname,
                  "batch.kubernetes.io/controller-uid": job["metadata"]["uid"],
                  "batch.kubernetes.io/job-completion-index": str(idx)}
        ann = {**(meta.get("annotations") or {}), "batch.kubernetes.io/job-completion-index": str(idx)}
        spec = tmpl.get("spec") or {}
        js = _labels(job).get(JS + "jobset-name", "")
        spec["hostname"] = f"{jname}-{idx}"
        spec["subdomain"] = js
        return {"apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": f"{jname}-{idx}-{tail}", "namespace": ns, "labels": labels, "annotations": ann,
                             "creationTimestamp": self._clk(ns, js),
                             "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": jname,
                                                  "uid": job["metadata"]["uid"], "controller": True}]},
                "spec": spec, "status": {"phase": "Pending"}}

    def _terminate(self, pod: Obj) -> None:
        """Graceful deletion by the Job controller: SIGTERM now, SIGKILL when the grace period ends."""
        uid = pod["metadata"]["uid"]
        if pod["metadata"].get("deletionTimestamp"):
            return
        ns, name = pod["metadata"]["namespace"], pod["metadata"]["name"]
        self._write("pods", ns, name, lambda o: o["metadata"].update({"deletionTimestamp": self._pod_now(pod)}))
        proc = self.procs.get(uid)
        if proc is None or proc.exited is not None:
            self._delete("pods", ns, name)
            return
        grace = float((pod.get("spec") or {}).get("terminationGracePeriodSeconds") or 30)
        proc.sigterm_at = time.monotonic()
        proc.kill_at = time.monotonic() + grace * self.grace_scale

    # -- scheduler and kubelet ----------------------------------------------------------------------------
    def _schedule(self, pod: Obj) -> str | None:
        """A schedulable node that matches the nodeSelector and has the GPUs left; of those the least allocated
        (kube-scheduler's default scoring spreads pods), then by name."""
        sel = (pod.get("spec") or {}).get("nodeSelector") or {}
        want = _gpus(pod)
        used: dict[str, float] = {}
        for other in self.kube.objects("pods"):
            node = (other.get("spec") or {}).get("nodeName")
            if node and (other.get("status") or {}).get("phase") not in ("Succeeded", "Failed"):
                used[node] = used.get(node, 0.0) + _gpus(other)
        best: tuple[float, str] | None = None
        for n in self.kube.objects("nodes"):
            name = str(n["metadata"]["name"])
            if (n.get("spec") or {}).get("unschedulable"):
                continue
            if any(_labels(n).get(k) != v for k, v in sel.items()):
                continue
            free = float(((n.get("status") or {}).get("allocatable") or {}).get(GPU, 0) or 0) - used.get(name, 0.0)
            if want and want > free:
                continue
            if best is None or (-free, name) < (-best[0], best[1]):
                best = (free, name)
        return best[1] if best is not None else None

    def _unschedulable(self, pod: Obj) -> str:
        """The scheduler's message: why no node takes the pod, counted per reason as kube-scheduler words it."""
        nodes = self.kube.objects("nodes")
        sel = (pod.get("spec") or {}).get("nodeSelector") or {}
        reasons: dict[str, int] = {}
        for n in nodes:
            if (n.get("spec") or {}).get("unschedulable"):
                why = "node(s) were unschedulable"
            elif any(_labels(n).get(k) != v for k, v in sel.items()):
                why = "node(s) didn't match Pod's node affinity/selector"
            else:
                why = f"Insufficient {GPU}"
            reasons[why] = reasons.get(why, 0) + 1
        said = ", ".join(f"{v} {k}" for k, v in sorted(reasons.items()))
        return f"0/{len(nodes)} nodes are available: {said}."

    def _kubelet(self, pod: Obj) -> None:
        ns, name, uid = pod["metadata"]["namespace"], pod["metadata"]["name"], pod["metadata"]["uid"]
        self.seen_pods[uid] = pod
        spec = pod.get("spec") or {}
        if pod["metadata"].get("deletionTimestamp"):
            return
        node = spec.get("nodeName")
        if not node:
            node = self._schedule(pod)
            if node is None:
                self.event("Pod", ns, name, "FailedScheduling", self._unschedulable(pod), uid=uid,
                           component="default-scheduler")
                return
            self._write("pods", ns, name, lambda o: o["spec"].update({"nodeName": node}))
            return
        if uid in self.procs:
            return
        phase = (pod.get("status") or {}).get("phase")
        if phase not in ("Pending", None):
            return
        if not self._volumes_ready(pod, node):
            if not (pod.get("status") or {}).get("containerStatuses"):
                cname = ((spec.get("containers") or [{}])[0]).get("name", "node")

                def waiting(o: Obj) -> None:
                    o["status"] = {"phase": "Pending", "containerStatuses": [
                        {"name": cname, "ready": False, "restartCount": 0, "image": "",
                         "state": {"waiting": {"reason": "ContainerCreating"}}}]}

                self._write("pods", ns, name, waiting)
            return
        if "start" in self.holds:
            return
        self._start(pod, node, instance=0)

    def _claims(self, pod: Obj) -> list[str]:
        return [str(v["persistentVolumeClaim"]["claimName"]) for v in (pod.get("spec") or {}).get("volumes") or []
                if (v or {}).get("persistentVolumeClaim", {}).get("claimName")]

    def _volumes_ready(self, pod: Obj, node: str) -> bool:
        ns, name, uid = pod["metadata"]["namespace"], pod["metadata"]["name"], pod["metadata"]["uid"]
        for claim in self._claims(pod):
            pvc = self.kube.get("persistentvolumeclaims", ns, claim)
            if pvc is None or (pvc.get("status") or {}).get("phase") != "Bound":
                return False
            modes = (pvc.get("spec") or {}).get("accessModes") or []
            if "ReadWriteMany" in modes:
                continue
            key = (ns, claim)
            att = self.attach.get(key)
            if att is not None and att.release_at is not None and att.release_at <= time.monotonic() and not att.pods:
                del self.attach[key]
                att = None
            if att is not None and att.node != node:
                vol = (pvc.get("spec") or {}).get("volumeName") or claim
                self.event("Pod", ns, name, "FailedAttachVolume",
                           f'Multi-Attach error for volume "{vol}" Volume is already exclusively attached to one '
                           "node and can't be attached to another", uid=uid, component="attachdetach-controller")
                if att.release_at is not None:
                    self.later(max(0.0, att.release_at - time.monotonic()) + 0.001, lambda: None)
                return False
        for claim in self._claims(pod):
            pvc = self.kube.get("persistentvolumeclaims", ns, claim) or {}
            if "ReadWriteMany" in ((pvc.get("spec") or {}).get("accessModes") or []):
                continue
            att = self.attach.setdefault((ns, claim), Attachment(node))
            att.pods.add(uid)
            att.release_at = None
        return True

    def _release(self, pod: Obj) -> None:
        ns, uid = pod["metadata"]["namespace"], pod["metadata"]["uid"]
        for claim in self._claims(pod):
            att = self.attach.get((ns, claim))
            if att is None or uid not in att.pods:
                continue
            att.pods.discard(uid)
            if not att.pods:
                att.release_at = time.monotonic() + self.detach_seconds
                self.later(self.detach_seconds + 0.001, lambda: None)

    def _volume_of(self, pod: Obj, path: str | None, instance: int) -> tuple[str, ...] | None:
        if not path:
            return None
        spec = pod.get("spec") or {}
        c = _node_container(spec)
        mounts = sorted((m for m in c.get("volumeMounts") or [] if path == m["mountPath"] or path.startswith(
            m["mountPath"].rstrip("/") + "/")), key=lambda m: -len(m["mountPath"]))
        uid = pod["metadata"]["uid"]
        if not mounts:
            return ("container", uid, str(instance))
        vol = next((v for v in spec.get("volumes") or [] if v.get("name") == mounts[0]["name"]), {})
        if "persistentVolumeClaim" in vol:
            return ("pvc", pod["metadata"]["namespace"], vol["persistentVolumeClaim"]["claimName"])
        if "hostPath" in vol:
            return ("host", spec.get("nodeName", ""), vol["hostPath"].get("path", ""))
        return ("emptydir", uid, mounts[0]["name"])

    def _start(self, pod: Obj, node: str, instance: int) -> None:
        ns, name, uid = pod["metadata"]["namespace"], pod["metadata"]["name"], pod["metadata"]["uid"]
        spec = pod.get("spec") or {}
        c = _node_container(spec)
        env = {e["name"]: e.get("value") for e in c.get("env") or [] if "name" in e}
        ckpt = env.get("CKPT_DIR")
        vol = self._volume_of(pod, ckpt, instance)
        sc = self.scenario_of(pod)
        on_volume = sorted(s for s, ok in self.checkpoints(vol, ckpt, sc.voice).items() if ok)
        ra = int(_labels(pod).get(JS + "restart-attempt", 0))
        how = sc.start(StartContext(ra, instance, pod, ckpt, on_volume))
        prog = sc.program
        proc = Proc(ns, name, uid, node, instance, ckpt, vol, saves_left=prog.burst_saves, scenario=sc,
                    container=c.get("name", "node"))
        if how.step is not None:
            proc.step = how.step
        text = sc.voice.opening(how.step, how.path, prog.total, ckpt) + "".join(line + "\n" for line in how.lines)
        how.node = node
        self.starts.append((name, ra, how))
        proc.text = [text]
        self.kube.append_log(ns, name, proc.container, text)
        proc.next_tick = time.monotonic()
        self.procs[uid] = proc
        restarts = instance

        def running(o: Obj) -> None:
            cs = {"name": c.get("name", "node"), "ready": True, "started": True, "restartCount": restarts,
                  "image": c.get("image", ""), "state": {"running": {"startedAt": self._pod_now(pod)}}}
            old = next((x for x in (o.get("status") or {}).get("containerStatuses") or []), {})
            if old.get("lastState"):
                cs["lastState"] = old["lastState"]
            started = (o.get("status") or {}).get("startTime") or self._pod_now(pod)
            o["status"] = {"phase": "Running", "startTime": started,
                           "podIP": "10.0.0.1", "containerStatuses": [cs],
                           "conditions": [{"type": "Ready", "status": "True"}]}

        self._write("pods", ns, name, running)
        if prog.burst_saves:
            self._advance(proc, burst=True)

    # -- the trainer process ------------------------------------------------------------------------------
    def _sc(self, proc: Proc) -> Scenario:
        return proc.scenario or self.scenario

    def _save(self, proc: Proc, step: int) -> None:
        """The trainer writes checkpoint `step` into its checkpoint directory, file by file (the voice's layout)."""
        if proc.volume is None or not proc.ckpt_dir:
            return
        sc = self._sc(proc)
        voice, vol = sc.voice, self.volume(proc.volume)
        vol.save(proc.ckpt_dir, voice.checkpoint_name(step), voice.checkpoint_files(step))
        keep = sc.program.keep
        if keep:  # the framework's rotation (HF: save_total_limit) deletes the oldest, by step
            old = sorted(vol.checkpoints(proc.ckpt_dir, voice.marker))[:-keep]
            for s in old:
                vol.remove(f"{proc.ckpt_dir.rstrip('/')}/{voice.checkpoint_name(s)}")

    def _emit(self, proc: Proc, text: str) -> None:
        if not text:
            return
        proc.text.append(text)
        if self.kube.get("pods", proc.ns, proc.pod) is not None:
            self.kube.append_log(proc.ns, proc.pod, proc.container, text)

    def _advance(self, proc: Proc, burst: bool = False) -> None:
        sc = self._sc(proc)
        prog, voice = sc.program, sc.voice
        every = voice.save_every or prog.save_every
        n = prog.steps_per_tick
        if burst:  # every save of the burst in one write: the drill sees all of them or none
            n = every * (prog.burst_saves or 1) - proc.step % every
        first = proc.step + 1
        saves = []
        for _ in range(n):
            proc.step += 1
            save_due = proc.step % every == 0 and "saves" not in self.holds
            if save_due and (proc.saves_left is None or proc.saves_left > 0):
                self._save(proc, proc.step)
                saves.append(proc.step)
                if proc.saves_left is not None:
                    proc.saves_left -= 1
        self._emit(proc, voice.steps(first, proc.step, prog.total, saves, proc.ckpt_dir))

    def _tick_procs(self) -> None:
        now = time.monotonic()
        for proc in list(self.procs.values()):
            if proc.exited is not None:
                continue
            if proc.sigterm_at is not None:
                self._on_sigterm(proc, now)
                continue
            if now >= proc.next_tick:
                proc.next_tick = now + self._sc(proc).program.tick
                self._advance(proc)

    def _on_sigterm(self, proc: Proc, now: float) -> None:
        sc = self._sc(proc)
        prog = sc.program
        if prog.pid1 == "python":
            final = None
            if prog.flush_on_sigterm:
                proc.step += 1
                self._save(proc, proc.step)
                final = proc.step
            self._emit(proc, sc.voice.on_sigterm(proc.step, prog.total, proc.ckpt_dir, final))
            self._exit(proc, 143)
        elif proc.kill_at is not None and now >= proc.kill_at:
            self._exit(proc, 137)
        else:  # a shell as PID 1 ignores SIGTERM: the trainer under it goes on until SIGKILL (or for ever)
            if proc.kill_at is None:
                proc.sigterm_at = None
            if now >= proc.next_tick:
                proc.next_tick = now + prog.tick
                self._advance(proc)

    def _exit(self, proc: Proc, code: int) -> None:
        proc.exited = code
        pod = self.kube.get("pods", proc.ns, proc.pod)
        if pod is None:
            return
        cname = ((pod.get("spec") or {}).get("containers") or [{}])[0].get("name", "node")

        def terminated(o: Obj) -> None:
            for cs in (o.get("status") or {}).get("containerStatuses") or []:
                cs["state"] = {"terminated": {"exitCode": code, "reason": "Error" if code else "Completed",
                                              "finishedAt": self._pod_now(pod)}}
                cs["ready"] = False

        self._write("pods", proc.ns, proc.pod, terminated)
        if pod["metadata"].get("deletionTimestamp"):
            self.later(0.02, lambda: self._delete("pods", proc.ns, proc.pod))
            return
        # not being deleted: the container exited on its own (kill 1); restartPolicy OnFailure restarts it
        self.procs.pop(proc.uid, None)
        self.kube.set_log(proc.ns, proc.pod, cname, "".join(proc.text), previous=True)
        self.kube.set_log(proc.ns, proc.pod, cname, "")

        def restarted(o: Obj) -> None:
            for cs in (o.get("status") or {}).get("containerStatuses") or []:
                ended = self._pod_now(pod)
                cs["lastState"] = {"terminated": {"exitCode": code, "reason": "Error", "finishedAt": ended}}
                cs["restartCount"] = int(cs.get("restartCount") or 0) + 1
                cs["state"] = {"waiting": {"reason": "CrashLoopBackOff"}}
            o["status"]["phase"] = "Running"

        self._write("pods", proc.ns, proc.pod, restarted)
        self.later(0.02, lambda: self._restart_in_place(proc.ns, proc.pod, proc.instance + 1))

    def _restart_in_place(self, ns: str, name: str, instance: int) -> None:
        pod = self.kube.get("pods", ns, name)
        if pod is None or pod["metadata"].get("deletionTimestamp"):
            return
        job = next((j for j in self.kube.objects("jobs", ns)
                    if any(r.get("uid") == j["metadata"]["uid"] for r in pod["metadata"].get("ownerReferences") or [])),
                   None)
        if job is None or self._finished(job):
            return
        statuses = (pod.get("status") or {}).get("containerStatuses") or []
        restarts = sum(int(cs.get("restartCount") or 0) for cs in statuses)
        if restarts > int((job.get("spec") or {}).get("backoffLimit", 6)):
            return  # the Job controller fails the Job on its next pass
        self._start(pod, pod["spec"]["nodeName"], instance)

    def _deleted(self, store: str, obj: Obj) -> None:
        if store != "pods":
            return
        uid = str(obj["metadata"]["uid"])
        self.seen_pods.pop(uid, None)
        if uid in self.mine or uid in self.counted:
            return
        self.counted.add(uid)
        self._pod_gone(obj, by_us=False)

    def _pod_gone(self, pod: Obj, by_us: bool) -> None:
        """A pod left the API: its process dies (SIGTERM first, as kubectl delete does), its volumes detach."""
        uid = str(pod["metadata"]["uid"])
        proc = self.procs.pop(uid, None)
        if proc is not None and proc.exited is None:
            prog = self._sc(proc).program
            if prog.pid1 == "python" and prog.flush_on_sigterm and proc.sigterm_at is None:
                proc.step += 1
                self._save(proc, proc.step)
            proc.exited = 143 if prog.pid1 == "python" else 137
        self._release(pod)
        if by_us:
            return
        for r in pod["metadata"].get("ownerReferences") or []:  # deleted by someone else: the Job counts a failure
            if r.get("kind") == "Job":
                ns = pod["metadata"]["namespace"]
                self._write("jobs", ns, r["name"], lambda o: o.setdefault("status", {}).update(
                    {"failed": int((o.get("status") or {}).get("failed") or 0) + 1}))

    # -- exec ------------------------------------------------------------------------------------------------
    def exec(self, ns: str, pod: str, container: str, command: list[str]) -> tuple[int, bytes]:
        """`kubectl exec` into a running trainer: `kill 1` signals PID 1; read-only commands (ls, find, df, cat)
        answer from the volume their path is on (sandbox/volume.py)."""
        obj = self.kube.get("pods", ns, pod)
        with self.mu:
            proc = next((p for p in self.procs.values() if p.ns == ns and p.pod == pod and p.exited is None), None)
            if obj is None or proc is None:
                return 1, b"error: container not running\n"
            if set(command) in KILL and command[-1] == "1":
                proc.sigterm_at = time.monotonic()
                return 0, b""
            path = next((a for a in command[1:] if a.startswith("/")), proc.ckpt_dir or "/")
            key = self._volume_of(obj, path, proc.instance) or ("container", proc.uid, str(proc.instance))
            return self.volume(key).answer(command)
