"""Facts: one object per diagnosis, computed lazily and once, that every check reads."""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any

from ckpt_doctor.coverage import Coverage, Known, Malformed
from ckpt_doctor.facts.attempts import History, build_history
from ckpt_doctor.facts.logs import Signature, load_signatures
from ckpt_doctor.facts.overrides import TrainerJob, find_trainer_job, merged_trainer_pod_spec, pod_container
from ckpt_doctor.facts.program import TrainerSpec
from ckpt_doctor.facts.program.model import Program, add_log_stacks, build_program
from ckpt_doctor.facts.storage import CkptDir, checkpoint_dirs
from ckpt_doctor.facts.versions import TrainerVersion, trainer_version
from ckpt_doctor.scope import Scope, runtime_ref
from ckpt_doctor.snapshot import Obj

if TYPE_CHECKING:
    from ckpt_doctor.engine.model import Rule

NEEDS_CLUSTER = "needs cluster evidence (pods, events, logs); lint sees only manifests"
CLUSTER_KINDS = ("PersistentVolume", "StorageClass", "Node", "ClusterTrainingRuntime")


@dataclass
class Facts:
    scope: Scope
    mode: str = "diagnose"  # diagnose | lint | explain-error
    version_flag: str | None = None
    signatures: list[Signature] | None = None
    error_text: str | None = None
    params: dict[str, dict[str, Any]] = field(default_factory=dict)  # rule id -> param overrides

    # -- inputs ---------------------------------------------------------------------------------
    @property
    def coverage(self) -> Coverage:
        return self.scope.snap.coverage

    def missing(self, need: str) -> str | None:
        """Why input `need` is unknown, or None when it was seen (contracts.md §6: unknown is not absent)."""
        sc, snap, cov = self.scope, self.scope.snap, self.scope.snap.coverage
        cluster_only = need in ("jobset", "pods", "events", "logs")
        if self.mode == "lint" and cluster_only:
            return NEEDS_CLUSTER
        if need == "error-text":
            return None if self.error_text else "no error text given"
        if self.mode == "explain-error":
            return "explain-error reads only the error text"
        if need == "trainjob":
            return None if sc.trainjob is not None else "no TrainJob in the input"
        if need == "runtime":
            if sc.runtime is not None:
                return None
            k = self.runtime_known()
            if k is not None and k.absent:
                return f"the runtime does not exist: {k.reason}"
            gap = snap.gap_for("trainingruntimes", "clustertrainingruntimes", "runtime")
            return gap.reason if gap else (sc.runtime_missing or "no runtime in the input")
        if need == "jobset":
            if sc.jobset is not None:
                return None
            k = self.known("JobSet", sc.name)
            if k.absent:
                return f"the JobSet does not exist (not created yet, or deleted): {k.reason}"
            return f"the JobSet is unknown: {k.reason}"
        if need == "pods":
            k = cov.kind("Pod")
            if k.unknown:
                return f"pods not collected: {k.reason}"
            return None if sc.pods else "no pods of this TrainJob in the snapshot"
        if need == "events":
            k = cov.kind("Event")
            return None if k.seen else f"events not collected: {k.reason}"
        if need == "logs":
            # only a gap for *all* logs disables a rule; a gap for one log (logs/<pod>/<container>)
            # affects just the runs that needed it, and the checks say so
            if "logs" in cov.unknown_kinds:
                return f"logs not collected: {cov.unknown_kinds['logs']}"
            return None
        if need == "pvcs":
            gap = snap.gap_for("persistentvolumeclaims", "pvcs")
            return f"PVCs not collected: {gap.reason}" if gap else None
        return None

    def known(self, kind: str, name: str) -> Known:
        """The coverage of one object the target refers to: seen, absent (and what proves it) or unknown."""
        sc = self.scope
        ns = sc.namespace if kind not in CLUSTER_KINDS else None
        present = sc.snap.get(kind, name, ns) is not None
        k = sc.snap.coverage.object(kind, name, ns, present)
        if k.unknown and kind == "PersistentVolumeClaim":
            proof = sc.absence_proof(kind, name)
            if proof is not None:
                return proof
        return k

    def runtime_known(self) -> Known | None:
        """The coverage of the runtime the TrainJob references (None without a TrainJob or a runtimeRef)."""
        tj = self.scope.trainjob
        if tj is None:
            return None
        name, kind, _ = runtime_ref(tj)
        if not name or kind not in ("TrainingRuntime", "ClusterTrainingRuntime"):
            return None
        return self.known(kind, name)

    def malformed_for(self, rule: Rule) -> list[Malformed]:
        """Malformed fields of the target's objects that `rule` reads."""
        if not rule.reads:
            return []
        return self.coverage.malformed_in(self.scope.refs(), rule.reads, self.scope.namespace)

    def with_version(self, version: TrainerVersion) -> Facts:
        """These facts judged against another Trainer version (the other derived facts are shared)."""
        other = copy.copy(self)
        other.__dict__["version"] = version
        return other

    # -- derived facts --------------------------------------------------------------------------
    @cached_property
    def version(self) -> TrainerVersion:
        return trainer_version(self.scope, self.version_flag)

    @cached_property
    def sigs(self) -> list[Signature]:
        return self.signatures if self.signatures is not None else load_signatures()

    @cached_property
    def history(self) -> History:
        return build_history(self.scope, self.sigs)

    @cached_property
    def trainer_job(self) -> TrainerJob | None:
        return find_trainer_job(self.scope.runtime)

    @cached_property
    def intended(self) -> TrainerSpec | None:
        """The trainer container the runtime and the TrainJob's overrides describe."""
        rt = self.scope.runtime
        if rt is None:
            return None
        pod_spec, node = merged_trainer_pod_spec(self.scope, self.version)
        tj = self.trainer_job
        if node is None and tj is not None and tj.pod_spec.get("containers"):
            node = next(iter(c for c in pod_spec.get("containers") or [] if isinstance(c, dict)), None)
        base = f"{tj.path}.template.spec.template.spec" if tj is not None else "spec.template"
        return TrainerSpec(pod_spec, node, rt.ref(), base, from_pod=False)

    @cached_property
    def pod_specs(self) -> list[TrainerSpec]:
        """The trainer container of every trainer pod, newest attempt first."""
        out = []
        for pod in sorted(self.scope.trainer_pods(), key=lambda p: p.created, reverse=True):
            c = pod_container(pod) or next(iter(pod.spec.get("containers") or []), None)
            out.append(TrainerSpec(pod.spec, c, pod.ref(), "spec", from_pod=True))
        return out

    @cached_property
    def spec(self) -> TrainerSpec | None:
        """What the trainer actually runs: the newest pod, else the intended spec."""
        return self.pod_specs[0] if self.pod_specs else self.intended

    @cached_property
    def program(self) -> Program | None:
        """The trainer's program read through the shell, Python and config readers, its stacks from the
        code and (in diagnose) from what the logs show."""
        if self.spec is None:
            return None
        prog = build_program(self.spec, self.scope)
        if self.mode == "diagnose":
            add_log_stacks(prog, self.history)
        return prog

    def program_of(self, spec: TrainerSpec) -> Program:
        return self.program if spec is self.spec and self.program is not None else build_program(spec, self.scope)

    @cached_property
    def ckpt_dirs(self) -> list[CkptDir]:
        if self.spec is None or self.program is None:
            return []
        return checkpoint_dirs(self.spec, self.program, self.scope)

    @property
    def ckpt_dir(self) -> CkptDir | None:
        return self.ckpt_dirs[0] if self.ckpt_dirs else None

    def param(self, rule: Rule, name: str, default: Any) -> Any:
        """A rule parameter: the caller's override, else the catalogue's value, else `default`."""
        return self.params.get(rule.id, {}).get(name, rule.params.get(name, default))

    # -- subjects -------------------------------------------------------------------------------
    def subject(self) -> dict[str, Any] | None:
        obj: Obj | None = self.scope.trainjob or self.scope.runtime
        return obj.subject() if obj is not None else None

    def runtime_subject(self) -> dict[str, Any] | None:
        return self.scope.runtime.subject() if self.scope.runtime is not None else self.subject()
