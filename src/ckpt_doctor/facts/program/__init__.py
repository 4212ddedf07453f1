"""The trainer's program: the container that runs it, and the readers that understand it.

`TrainerSpec` is the trainer container as it runs (a pod's) or would run (the runtime merged with
the TrainJob's overrides). `model.build_program` reads what that container runs through `shell`
(a real shell parser), `python` (`ast`) and `config` (YAML, JSON, TOML as data) into one Program
the rules question.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

VAR_REF = re.compile(r"\$\(([A-Za-z_][A-Za-z0-9_]*)\)")


@dataclass
class TrainerSpec:
    """The trainer container as it runs (from a pod) or as it would run (runtime + overrides)."""

    pod_spec: dict[str, Any]
    container: dict[str, Any] | None
    object: str  # e.g. Pod/team-a/x or TrainingRuntime/team-a/rt
    base_path: str  # field path of the pod spec inside `object`
    from_pod: bool

    @property
    def container_path(self) -> str:
        if self.container is None:
            return self.base_path + ".containers"
        name = self.container.get("name")
        return f"{self.base_path}.containers[name={name}]"

    def env(self) -> dict[str, str]:
        out: dict[str, str] = {}
        for e in (self.container or {}).get("env") or []:
            if isinstance(e, dict) and e.get("name"):
                if "value" in e:
                    out[str(e["name"])] = str(e.get("value") or "")
                elif isinstance(e.get("valueFrom"), dict):
                    fr = (e["valueFrom"].get("fieldRef") or {}).get("fieldPath")
                    out[str(e["name"])] = f"<fieldRef:{fr}>" if fr else "<valueFrom>"
        return out

    def argv(self) -> list[str]:
        c = self.container or {}
        env = self.env()
        raw = [str(x) for x in (c.get("command") or []) + (c.get("args") or [])]
        return [VAR_REF.sub(lambda m: env.get(m.group(1), m.group(0)), a) for a in raw]
