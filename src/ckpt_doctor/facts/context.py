"""Facts: one object per diagnosis, computed lazily and once, that every check reads."""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any

from ckpt_doctor import frameworks
from ckpt_doctor.coverage import Coverage, Known, Malformed
from ckpt_doctor.facts.attempts import History, build_history
from ckpt_doctor.facts.logs import Signature, load_signatures
from ckpt_doctor.facts.overrides import TrainerJob, find_trainer_job, merged_trainer_pod_spec, pod_container
from ckpt_doctor.facts.program import TrainerSpec
from ckpt_doctor.facts.program.model import Program, add_log_stacks, build_program
from ckpt_doctor.facts.storage import CKPT_ENV, PERSISTENT_SOURCES, CkptDir, checkpoint_dirs, claim_templates
from ckpt_doctor.facts.versions import TrainerVersion, trainer_version
from ckpt_doctor.scope import Scope, runtime_ref
from ckpt_doctor.snapshot import Obj

if TYPE_CHECKING:
    from ckpt_doctor.engine.model import Rule
    from ckpt_doctor.facts.checkpoints import Volume

NEEDS_CLUSTER = "needs cluster evidence (pods, events, logs); lint sees only manifests"
# frameworks that save checkpoints unless told not to (HF Trainer's save_strategy, Lightning's
# ModelCheckpoint, torchtune's epoch saves, training_hub's epoch checkpoints)
WHAT_DIR = "a checkpoint directory (CKPT_DIR, --output_dir, output_dir…)"
CLUSTER_KINDS = ("PersistentVolume", "StorageClass", "Node", "ClusterTrainingRuntime")


def _ckpt_vars_expected(prog: Program | None) -> str | None:
    """A checkpoint variable (CKPT_DIR, OUTPUT_DIR…) the trainer reads but the runtime does not set:
    the runtime leaves the directory to its TrainJobs (spec.trainer.env)."""
    if prog is None:
        return None
    names: list[str] = list(prog.kube_unresolved)
    if prog.shell is not None:
        for c in prog.shell.commands:
            names += c.unresolved
        names += [u for _n, w, _e, _l in prog.shell.assignments for u in w.unresolved]
    for part in prog.pythons:
        names += [n for n in part.facts.env_reads if n not in prog.env]
    return next((f"${n}" for n in names if n in CKPT_ENV), None)


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
        if need == "checkpointing":
            state, why, _ev = self.checkpointing
            return f"not set up for resume: {why} (see not-set-up-for-resume)" if state == "absent" else None
        return None

    @cached_property
    def checkpointing(self) -> tuple[str, str, list[dict[str, Any]]]:
        """Does the job checkpoint at all? ('present' | 'absent' | 'unknown', why, evidence).

        Absent means positive evidence of no checkpointing: the whole trainer side is seen (the
        runtime, or the built-in as it ships) and it names no checkpoint directory, mounts no
        persistent volume, runs no framework that checkpoints by default, its visible code saves
        nothing, and (with logs) no attempt logged a save. A restart of such a job can only start
        again from step 0."""
        spec, sc = self.spec, self.scope
        if spec is None or sc.runtime is None:
            return "unknown", "the trainer's runtime is not known", []
        if self.trainer_job is None or spec.container is None:
            return "unknown", "the runtime has no trainer job with a container to judge", []
        if self.ckpt_dirs:
            return "present", f"it writes checkpoints to {self.ckpt_dirs[0].raw} ({self.ckpt_dirs[0].source})", []
        vols = [v for v in spec.pod_spec.get("volumes") or [] if isinstance(v, dict)]
        mounted = {str(m.get("name")) for m in (spec.container or {}).get("volumeMounts") or [] if isinstance(m, dict)}
        durable = [v for v in vols if str(v.get("name")) in mounted and any(k in v for k in PERSISTENT_SOURCES)]
        templates = set(claim_templates(sc)) & mounted
        if durable or templates:
            name = durable[0].get("name") if durable else sorted(templates)[0]
            return "present", f"it mounts the persistent volume {name!r}", []
        prog = self.program
        if prog is not None:
            saving = [s for s in prog.stacks if s in frameworks.saving_stacks()]
            if saving:
                return "present", f"{saving[0]} checkpoints by default", []
            if any(io.op == "save" for p in prog.pythons for io in p.facts.io):
                return "present", "its code saves state", []
        if self.mode == "diagnose" and any(r.saves() for r in self.history.runs):
            return "present", "an attempt logged a save", []
        where = f"{spec.object} {spec.container_path}"
        tj = sc.trainjob
        if tj is None:  # lint, a runtime on its own: what it shows as written; its TrainJobs may add the rest
            per_tj = "judged per TrainJob: the runtime's trainer"
            wanted = _ckpt_vars_expected(prog)
            if wanted:
                return "unknown", f"{per_tj} reads {wanted}, which its TrainJobs set", []
            if prog is not None and prog.entry.kind != "none" and not prog.complete:
                unseen = "; ".join(prog.unseen[:1]) or "its code is not among the files"
                return "unknown", f"{per_tj} runs code that cannot be read ({unseen})", []
            evidence = [
                {"type": "absence", "what": WHAT_DIR, "where": where},
                {"type": "absence", "what": "a persistent volume mounted by the trainer", "where": where},
            ]
            return "absent", "the runtime shows no checkpoint directory and no persistent volume", evidence
        # a TrainJob names its checkpoint directory in spec.trainer (the runtime's container otherwise)
        dir_at = f"{tj.ref()} spec.trainer" if tj is not None and isinstance(tj.spec.get("trainer"), dict) else where
        evidence = [
            {"type": "absence", "what": WHAT_DIR, "where": dir_at},
            {"type": "absence", "what": "a persistent volume mounted by the trainer", "where": where},
        ]
        return "absent", "no checkpoint directory and no persistent volume", evidence

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
        return build_history(self.scope, self.sigs, program=self._code_program if self.mode == "diagnose" else None)

    @cached_property
    def volume(self) -> Volume:
        """The checkpoints on the volume, from the snapshot's listings (facts/checkpoints.py)."""
        from ckpt_doctor.facts.checkpoints import build_volume

        return build_volume(self)

    @cached_property
    def trainer_job(self) -> TrainerJob | None:
        return find_trainer_job(self.scope.runtime)

    @cached_property
    def intended(self) -> TrainerSpec | None:
        """The trainer container the runtime and the TrainJob's overrides describe."""
        rt = self.scope.runtime
        if rt is None or self.trainer_job is None:  # no runtime, or one without a replicated job to run
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
    def _code_program(self) -> Program | None:
        """The program as its code shows it, before the logs add their stacks (the history reads it to know
        what a framework's progress bar counts)."""
        return build_program(self.spec, self.scope) if self.spec is not None else None

    @cached_property
    def program(self) -> Program | None:
        """The trainer's program read through the shell, Python and config readers, its stacks from the
        code and (in diagnose) from what the logs show."""
        prog = self._code_program
        if prog is not None and self.mode == "diagnose":
            add_log_stacks(prog, self.history)
        return prog

    def program_of(self, spec: TrainerSpec) -> Program:
        """The program of another trainer pod; pods made from one template share one reading."""
        if spec is self.spec and self.program is not None:
            return self.program
        key = _spec_key(spec)
        cache: dict[str, Program] = self.__dict__.setdefault("_programs", {})
        if key not in cache:
            cache[key] = build_program(spec, self.scope)
        return cache[key]

    def ckpt_dirs_of(self, spec: TrainerSpec) -> list[CkptDir]:
        """The checkpoint directories of another trainer pod (shared between identical pod specs)."""
        if spec is self.spec:
            return self.ckpt_dirs
        key = _spec_key(spec)
        cache: dict[str, list[CkptDir]] = self.__dict__.setdefault("_dirs", {})
        if key not in cache:
            cache[key] = checkpoint_dirs(spec, self.program_of(spec), self.scope)
        return cache[key]

    @cached_property
    def ckpt_dirs(self) -> list[CkptDir]:
        if self.spec is None or self.program is None:
            return []
        return checkpoint_dirs(self.spec, self.program, self.scope)

    @property
    def ckpt_dir(self) -> CkptDir | None:
        return self.ckpt_dirs[0] if self.ckpt_dirs else None

    def no_spec(self) -> str:
        """Why there is no trainer container to judge (for not_evaluated reasons)."""
        if self.scope.runtime is not None and not self.scope.pods:
            rt = self.scope.runtime.ref()
            return f"{rt} has no replicated job that runs a trainer (spec.template.spec.replicatedJobs)"
        return "neither a trainer pod nor a runtime is in the snapshot"

    def param(self, rule: Rule, name: str, default: Any) -> Any:
        """A rule parameter: the caller's override, else the catalogue's value, else `default`."""
        return self.params.get(rule.id, {}).get(name, rule.params.get(name, default))

    # -- subjects -------------------------------------------------------------------------------
    def subject(self) -> dict[str, Any] | None:
        obj: Obj | None = self.scope.trainjob or self.scope.runtime
        return obj.subject() if obj is not None else None

    def runtime_subject(self) -> dict[str, Any] | None:
        return self.scope.runtime.subject() if self.scope.runtime is not None else self.subject()


def _spec_key(spec: TrainerSpec) -> str:
    """What a program reading depends on: the container and the volumes (not the pod's name or status)."""
    import json

    return json.dumps([spec.container, spec.pod_spec.get("volumes"), spec.object.split("/")[0]], sort_keys=True,
                      default=str)  # fmt: skip
