"""Which Trainer version the cluster runs (contracts.md §6, "Trainer version")."""

from __future__ import annotations

import re
from dataclasses import dataclass

from ckpt_doctor.scope import Scope

KNOWN = ("v2.0", "v2.1", "v2.2", "v2.3")
NEWEST = "v2.3"


@dataclass(frozen=True)
class TrainerVersion:
    version: str  # v2.0 | v2.1 | v2.2 | v2.3
    source: str  # bundle | flag | inferred | assumed
    why: str
    candidates: tuple[str, ...] = ()  # every version the evidence still allows (version-dependent rules)

    def __post_init__(self) -> None:
        if not self.candidates:
            object.__setattr__(self, "candidates", KNOWN if self.source == "assumed" else (self.version,))

    def at_least(self, v: str) -> bool:
        return _key(self.version) >= _key(v)


def _key(v: str) -> tuple[int, int]:
    m = re.match(r"v?(\d+)\.(\d+)", v)
    return (int(m.group(1)), int(m.group(2))) if m else (0, 0)


def normalise(v: str) -> str | None:
    m = re.match(r"^v?(\d+)\.(\d+)", str(v).strip())
    if not m:
        return None
    short = f"v{m.group(1)}.{m.group(2)}"
    if short in KNOWN:
        return short
    return NEWEST if _key(short) > _key(NEWEST) else None


def trainer_version(scope: Scope, flag: str | None = None) -> TrainerVersion:
    meta_v = ((scope.snap.meta.get("cluster") or {}).get("trainerVersion")) if scope.snap.meta else None
    if meta_v and normalise(str(meta_v)):
        why = f"the cluster reports {meta_v}" if scope.snap.source == "live" else f"bundle.yaml says {meta_v}"
        if flag and normalise(flag) and normalise(flag) != normalise(str(meta_v)):
            why += f"; --trainer-version {flag} not used: what the cluster reported wins"
        source = "cluster" if scope.snap.source == "live" else "bundle"  # what -o json's trainerVersionSource says
        return TrainerVersion(normalise(str(meta_v)) or NEWEST, source, why)
    if flag:
        n = normalise(flag)
        if n:
            return TrainerVersion(n, "flag", f"--trainer-version {flag}")
    tj = scope.trainjob
    if tj is not None:
        cm = scope.snap.get("ConfigMap", f"{tj.name}-runtime-snapshot", tj.namespace)
        if cm is not None:
            return TrainerVersion("v2.3", "inferred", f"ConfigMap {cm.name} exists (runtime snapshots are v2.3+)")
        spec = tj.spec
        if "runtimePatches" in spec:
            grace = "terminationGracePeriodSeconds" in str(spec)
            return TrainerVersion(
                "v2.3" if grace else "v2.2",
                "inferred",
                "the TrainJob uses spec.runtimePatches (v2.2+)",
                ("v2.3",) if grace else ("v2.2", "v2.3"),
            )
        if "podTemplateOverrides" in spec:
            return TrainerVersion("v2.1", "inferred", "the TrainJob uses spec.podTemplateOverrides (v2.1)")
        if "podSpecOverrides" in spec:
            return TrainerVersion("v2.0", "inferred", "the TrainJob uses spec.podSpecOverrides (v2.0)")
        if "activeDeadlineSeconds" in spec:
            return TrainerVersion(
                "v2.2", "inferred", "the TrainJob uses spec.activeDeadlineSeconds (v2.2+)", ("v2.2", "v2.3")
            )
    return TrainerVersion(NEWEST, "assumed", f"nothing shows the version; assuming the newest ({NEWEST})")
