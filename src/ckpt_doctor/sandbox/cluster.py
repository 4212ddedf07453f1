"""The sandbox started as one thing: the loopback API, the simulated controllers, the platform and the scenarios.

The Python API (tests, and the faces that want a cluster to talk to, such as the MCP server's tests):

    from ckpt_doctor.sandbox.cluster import Sandbox

    with Sandbox(scenarios=["healthy-resume"], speed=10) as sb:
        sb.url            # http://127.0.0.1:PORT
        sb.kubeconfig     # a kubeconfig whose context talks to it, namespace `sandbox`
        sb.api            # the LoopbackApi (its request log, faults: `sb.api.fault("create", "pods/exec", status=403)`)
        sb.sim            # the Simulator (what each trainer did: `sb.sim.starts`)

`ckpt-doctor sandbox` runs the same until it is stopped. Every face knows it is talking to a simulation from
the version the API reports (ckpt_doctor.simulation).
"""

from __future__ import annotations

import os
import tempfile
import threading
from pathlib import Path
from typing import Any

from ckpt_doctor import simulation
from ckpt_doctor.sandbox.apiserver import LoopbackApi
from ckpt_doctor.sandbox.controller import Scenario, Simulator
from ckpt_doctor.sandbox.discovery import ResourceType
from ckpt_doctor.sandbox.scenarios import NAMESPACE, ScenarioSpec, choose, platform
from ckpt_doctor.sandbox.voice import Voice

CONTEXT = "ckpt-doctor-sandbox"
NODES = ("gpu-node-a", "gpu-node-b", "gpu-node-c")  # 8 GPUs each: room for every scenario and for a move
BASE_TICK = 0.01  # seconds between two trainer ticks at speed 1 (two steps a tick)
BASE_GRACE = 0.01  # a grace period of N seconds lasts N * BASE_GRACE seconds at speed 1


class Sandbox:
    """One simulated cluster. `speed` divides every simulated duration: 1 is the tests' pace (200 steps a
    second, a 120 s grace period over in 1.2 s); the command line runs at 0.1, slow enough to watch."""

    def __init__(
        self,
        scenarios: list[str] | tuple[str, ...] | None = None,
        kubeconfig: str | Path | None = None,
        port: int = 0,
        speed: float = 1.0,
        recordings: list[Path] | None = None,
        voices: dict[str, Voice] | None = None,
        trainer_version: str = "v2.1",
    ) -> None:
        self.specs: list[ScenarioSpec] = choose(scenarios)
        self.speed = speed
        self.port = port
        self.recording_roots = recordings
        self.voices = dict(voices or {})  # scenario name -> a voice to speak with instead (tests)
        self.trainer_version = trainer_version
        self.namespace = NAMESPACE
        self._kubeconfig = Path(kubeconfig) if kubeconfig is not None else None
        self._tmp: Path | None = None
        self.kubeconfig: Path = Path()
        self.api = LoopbackApi(port=port, server_version=simulation.server_version())
        self.api.register(ResourceType("apps", "v1", "deployments", "Deployment", short_names=("deploy",)))
        self.sim: Simulator | None = None
        self.spoken: dict[str, str] = {}  # scenario -> what its trainer speaks (a recording, or the convention)
        self.notes: list[str] = []
        self.stopped = threading.Event()

    # -- lifecycle -------------------------------------------------------------------------------------------
    def start(self) -> Sandbox:
        self.api.start()
        try:
            self._load()
        except BaseException:
            self.stop()
            raise
        return self

    def _load(self) -> None:
        self.api.add_many(platform(self.trainer_version))
        sim = Simulator(self.api, Scenario(), nodes=NODES, detach_seconds=1.0 / self.speed,
                        grace_scale=BASE_GRACE / self.speed, clocks_behind=0.0)
        for spec in self.specs:
            program = spec.make_program(tick=BASE_TICK / self.speed)
            voice = self._voice(spec, program)
            sim.assign(self.namespace, spec.name, Scenario(program, voice))
            self.spoken[spec.name] = voice.name if voice is not None else "the guide's [checkpoint] convention"
        sim.detach_seconds = max((s.detach_seconds for s in self.specs), default=1.0) / self.speed
        sim.start()
        self.sim = sim
        for spec in self.specs:
            self.api.add_many(spec.manifests())
        if self._kubeconfig is None:
            self._tmp = Path(tempfile.mkdtemp(prefix="ckpt-doctor-sandbox-"))
            self.kubeconfig = self._tmp / "kubeconfig"
        else:
            self.kubeconfig = self._kubeconfig
        self.api.kubeconfig(self.kubeconfig, namespace=self.namespace, context=CONTEXT)
        os.chmod(self.kubeconfig, 0o600)

    def _voice(self, spec: ScenarioSpec, program: Any) -> Voice | None:
        if spec.name in self.voices:
            return self.voices[spec.name]
        from ckpt_doctor.sandbox.recordings import find_recording
        from ckpt_doctor.sandbox.voice import RecordingVoice

        for rid in spec.recordings:
            rec = find_recording(rid, self.recording_roots)
            if rec is not None:
                return RecordingVoice(rec)
        if spec.recordings:
            self.notes.append(f"{spec.name}: none of its recordings ({', '.join(spec.recordings)}) is installed; its "
                              "trainer speaks the guide's [checkpoint] convention")
        return None

    def stop(self) -> None:
        if self.sim is not None:
            self.sim.stop()
        self.api.stop()
        if self._tmp is not None:
            for p in self._tmp.iterdir():
                p.unlink(missing_ok=True)
            self._tmp.rmdir()
            self._tmp = None
        self.stopped.set()

    def __enter__(self) -> Sandbox:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- what it holds ---------------------------------------------------------------------------------------
    @property
    def url(self) -> str:
        return self.api.url

    def trainjobs(self) -> list[str]:
        return [f"{self.namespace}/{s.name}" for s in self.specs]

    def errors(self) -> list[str]:
        """Tracebacks of bugs in the simulation itself (answered as 500 by the API, or caught in the controllers)."""
        return list(self.api.errors) + (list(self.sim.errors) if self.sim is not None else [])
