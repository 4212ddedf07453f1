"""TrainJobs that change while the watcher looks: one state of a story after another, served by FakeKube.

`Job.show(kube, scenario)` serves a scenario (tests/scenario.py) in the job's namespace: objects that
are new are added, changed ones updated, gone ones deleted, and an object whose uid changed (a Job a
JobSet restart recreated) is deleted and created again, as the controllers would do it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tests.fakeapi.server import FakeKube
from tests.fleet.cluster import _relocate
from tests.scenario import Attempt, PodSpecKnobs, Scenario, convention_log

CK = "/mnt/ckpt/sft-resumable"


def running_first_attempt(knobs: PodSpecKnobs | None = None) -> Scenario:
    """Attempt 0 training, saving every 50 steps, at step 120."""
    s = Scenario(knobs=knobs)
    s.attempts = [Attempt(0, "gpu-node-a", convention_log(CK, 0, 120), started=0)]
    return s


def restarted(resume: bool, knobs: PodSpecKnobs | None = None) -> Scenario:
    """Attempt 0 crashed at step 180 (its pods deleted by the JobSet restart); attempt 1 resumed from the
    newest checkpoint (150) or started again from step 0."""
    s = Scenario(knobs=knobs)
    s.js_restarts = 1
    first = convention_log(CK, 0, 180, crash="RuntimeError: NCCL error: unhandled system error")
    second = convention_log(CK, 150, 260) if resume else convention_log(CK, 0, 60, resumed=False)
    s.attempts = [
        Attempt(0, "gpu-node-a", first, phase="Failed", exit_code=1, reason="Error", started=0, kept=False),
        Attempt(1, "gpu-node-b", second, started=40),
    ]
    s.event("JobSet", s.name, "RestartJobSetFailurePolicyAction",
            f"applying RestartJobSet failure policy action (first failed job: {s.name}-node-0)", 39)  # fmt: skip
    return s


def _key(o: dict[str, Any]) -> tuple[str, str]:
    return str(o["kind"]), str(o["metadata"]["name"])


@dataclass
class Job:
    namespace: str
    name: str = "sft-resumable"
    shown: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)

    def show(self, kube: FakeKube, sc: Scenario) -> None:
        objs, logs = sc.objects()
        objs = _relocate(objs, self.namespace)
        new = {_key(o): o for o in objs}
        for key in set(self.shown) - set(new):
            self._delete(kube, key, self.shown[key])
        for key, o in new.items():
            old = self.shown.get(key)
            if old is not None and old["metadata"].get("uid") != o["metadata"].get("uid"):
                self._delete(kube, key, old)
            kube.add(o)
        for (pod, container, previous), text in logs.items():
            kube.set_log(self.namespace, pod, container, text, previous=previous)
        self.shown = new

    def _delete(self, kube: FakeKube, key: tuple[str, str], o: dict[str, Any]) -> None:
        if key[0] == "StorageClass":  # shared by every job's PVs
            return
        ns = o["metadata"].get("namespace")
        try:
            kube.delete(key[0], ns, key[1])
        except KeyError:
            pass

    def delete(self, kube: FakeKube) -> None:
        """The TrainJob is deleted (and, with it, everything it owned)."""
        for key, o in list(self.shown.items()):
            self._delete(kube, key, o)
        self.shown = {}
