"""Causes read from the runtime and the TrainJob manifest (judged in diagnose and lint)."""

from __future__ import annotations

import math
import re
from typing import Any

from ckpt_doctor.engine.checks import absence, check, field_ev, text_ev
from ckpt_doctor.engine.model import Result, Rule, fail, ok, skip
from ckpt_doctor.facts.context import Facts
from ckpt_doctor.facts.overrides import compare, trainer_rjob_index
from ckpt_doctor.facts.timeline import epoch, timeline_of
from ckpt_doctor.scope import ANCESTOR_LABEL, RUNTIME_KINDS, TRAINER_CONTAINER, replicated_jobs, runtime_ref
from ckpt_doctor.snapshot import TRAINER_GROUP

RESERVED = ("node", "dataset-initializer", "model-initializer")
ENV_DENIAL = "must not have envs for the dataset-initializer, model-initializer, node containers"


@check("missing-ancestor-label")
def missing_ancestor_label(facts: Facts, rule: Rule) -> Result:
    rt = facts.scope.runtime
    assert rt is not None
    rjs = replicated_jobs(rt)
    if not rjs:
        return skip("the runtime has no spec.template.spec.replicatedJobs")
    tj = facts.trainer_job
    if tj is not None and tj.has_ancestor_label:
        return ok(facts.runtime_subject(), f"replicated job {tj.name!r} carries {ANCESTOR_LABEL}: trainer")
    assert tj is not None
    labels = ((rjs[tj.index or 0].get("template") or {}).get("metadata") or {}).get("labels") or {}
    ev = [field_ev(rt.ref(), f"{tj.path}.template.metadata.labels", labels)]
    detail = f"no replicated job carries {ANCESTOR_LABEL}: trainer on its Job template"
    if tj.label_on_pod_template:
        ev.append(field_ev(rt.ref(), f"{tj.path}.template.spec.template.metadata.labels", {ANCESTOR_LABEL: "trainer"}))
        detail += " (it is on the pod template, where the controller does not look)"
    fix = (
        f"Add `{ANCESTOR_LABEL}: trainer` under {tj.path}.template.metadata.labels "
        f"(the Job template of replicated job {tj.name!r}), then recreate the TrainJob"
    )
    return fail(facts.runtime_subject(), ev, detail, fix=fix)


@check("trainer-container-not-node")
def trainer_container_not_node(facts: Facts, rule: Rule) -> Result:
    tj = facts.trainer_job
    if tj is None:
        return skip("the runtime has no replicated jobs")
    rt = facts.scope.runtime
    assert rt is not None
    if TRAINER_CONTAINER in tj.container_names:
        return ok(facts.runtime_subject(), f"replicated job {tj.name!r} has a container named node")
    return fail(
        facts.runtime_subject(),
        [field_ev(rt.ref(), f"{tj.path}.template.spec.template.spec.containers[*].name", tj.container_names)],
        f"the trainer job {tj.name!r} has containers {tj.container_names}, none named `node`",
        fix=f"Rename the training container of replicated job {tj.name!r} to `node`",
    )


def _env_overrides(spec: dict[str, Any]) -> list[tuple[str, str]]:
    """(field path, container) for env set on a reserved container through overrides."""
    out = []
    for i, ov in enumerate(spec.get("podSpecOverrides") or []):
        for kind in ("containers", "initContainers"):
            for j, c in enumerate((ov or {}).get(kind) or []):
                if isinstance(c, dict) and c.get("env") and c.get("name") in RESERVED:
                    out.append((f"spec.podSpecOverrides[{i}].{kind}[{j}].env", str(c["name"])))
    for i, ov in enumerate(spec.get("podTemplateOverrides") or []):
        for kind in ("containers", "initContainers"):
            for j, c in enumerate(((ov or {}).get("spec") or {}).get(kind) or []):
                if isinstance(c, dict) and c.get("env") and c.get("name") in RESERVED:
                    out.append((f"spec.podTemplateOverrides[{i}].spec.{kind}[{j}].env", str(c["name"])))
    for i, p in enumerate(spec.get("runtimePatches") or []):
        tmpl = (((p or {}).get("trainingRuntimeSpec") or {}).get("template") or {}).get("spec") or {}
        for k, rj in enumerate(tmpl.get("replicatedJobs") or []):
            pod = ((((rj or {}).get("template") or {}).get("spec") or {}).get("template") or {}).get("spec") or {}
            for kind in ("containers", "initContainers"):
                for j, c in enumerate(pod.get(kind) or []):
                    if isinstance(c, dict) and c.get("env") and c.get("name") in RESERVED:
                        out.append(
                            (
                                f"spec.runtimePatches[{i}].trainingRuntimeSpec.template.spec.replicatedJobs[{k}]"
                                f".template.spec.template.spec.{kind}[{j}].env",
                                str(c["name"]),
                            )
                        )
    return out


@check("env-in-pod-template-overrides")
def env_in_overrides(facts: Facts, rule: Rule) -> Result:
    if facts.mode == "explain-error":
        text = facts.error_text or ""
        i = text.find(ENV_DENIAL)
        if i != -1:
            return fail(
                None,
                [text_ev(text, i, i + len(ENV_DENIAL))],
                "env on the node container was set through overrides",
            )
        return ok(reason="not this denial")
    tj = facts.scope.trainjob
    assert tj is not None
    hits = _env_overrides(tj.spec)
    if not hits:
        return ok(reason="no override sets env on a reserved container")
    path, cname = hits[0]
    value = _get_path(tj.raw, path)
    return fail(
        tj.subject(),
        [field_ev(tj.ref(), p, _get_path(tj.raw, p)) for p, _c in hits],
        f"{path} sets env on the reserved container {cname!r}; the webhook rejects this "
        f"({len(value) if isinstance(value, list) else 0} variable(s))",
    )


def _get_path(obj: Any, path: str) -> Any:
    cur = obj
    for part in re.findall(r"[^.\[\]]+|\[\d+\]", path):
        if part.startswith("["):
            idx = int(part[1:-1])
            cur = cur[idx] if isinstance(cur, list) and idx < len(cur) else None
        else:
            cur = cur.get(part) if isinstance(cur, dict) else None
    return cur


# field -> (first version that has it, last version that has it)
FIELD_VERSIONS = {
    "podSpecOverrides": ("v2.0", "v2.0"),
    "podTemplateOverrides": ("v2.1", "v2.1"),
    "runtimePatches": ("v2.2", None),
    "activeDeadlineSeconds": ("v2.2", None),
    "labels": ("v2.0", "v2.1"),
    "annotations": ("v2.0", "v2.1"),
}


def _vkey(v: str) -> tuple[int, int]:
    a, b = v.lstrip("v").split(".")
    return int(a), int(b)


def has_field(field: str, version: str) -> bool:
    """Whether a TrainJob of Trainer `version` has spec.`field` (FIELD_VERSIONS)."""
    lo, hi = FIELD_VERSIONS[field]
    return _vkey(lo) <= _vkey(version) and (hi is None or _vkey(version) <= _vkey(hi))


@check("override-field-unsupported")
def override_field_unsupported(facts: Facts, rule: Rule) -> Result:
    if facts.mode == "explain-error":
        text = facts.error_text or ""
        m = re.search(
            rf'unknown field "(spec\.(?:{"|".join(FIELD_VERSIONS)})[^"]*)"',
            text,
        )
        if m:
            return fail(
                None,
                [{"type": "text", "text": m.group(0)}],
                f"{m.group(1)} does not exist in this cluster's Trainer version",
            )
        return ok(reason="not an unknown-field error")
    tj = facts.scope.trainjob
    assert tj is not None
    v = facts.version
    bad = []
    for fname, (lo, hi) in FIELD_VERSIONS.items():
        if fname not in tj.spec:
            continue
        if not has_field(fname, v.version):
            span = f"{lo}" + (f"–{hi}" if hi and hi != lo else ("+" if hi is None else ""))
            bad.append((fname, span))
    for i, p in enumerate(tj.spec.get("runtimePatches") or []):
        spec_ = (((p or {}).get("trainingRuntimeSpec") or {}).get("template") or {}).get("spec") or {}
        for j, rj in enumerate(spec_.get("replicatedJobs") or []):
            pod = ((((rj or {}).get("template") or {}).get("spec") or {}).get("template") or {}).get("spec") or {}
            if "terminationGracePeriodSeconds" in pod and not v.at_least("v2.3"):
                bad.append((f"runtimePatches[{i}]...replicatedJobs[{j}]...terminationGracePeriodSeconds", "v2.3+"))
    if not bad:
        return ok(reason=f"every override field exists in Trainer {v.version} ({v.why})")
    ev = [field_ev(tj.ref(), f"spec.{f}", f"exists in {span}") for f, span in bad]
    ev.append({"type": "field", "object": "cluster", "path": "trainerVersion", "value": f"{v.version} ({v.why})"})
    hint = ""
    if any(f == "podTemplateOverrides" for f, _ in bad) and v.at_least("v2.2"):
        hint = "; move the volumes and mounts into spec.runtimePatches"
    return fail(
        tj.subject(),
        ev,
        f"Trainer {v.version} does not have spec.{', spec.'.join(f for f, _ in bad)}{hint}",
        "high" if v.source in ("bundle", "flag") else "medium",
    )


def _trainer_update_times(tj: Any) -> list[str]:
    out = []
    for mf in tj.meta.get("managedFields") or []:
        fields = (mf or {}).get("fieldsV1") or {}
        spec = fields.get("f:spec") or {}
        if "f:trainer" in spec and (mf or {}).get("operation") == "Update":
            out.append(str(mf.get("time") or ""))
    return out


@check("trainer-edited-while-running")
def trainer_edited_while_running(facts: Facts, rule: Rule) -> Result:
    v = facts.version
    if v.at_least("v2.2"):
        return ok(reason=f"spec.trainer is immutable on Trainer {v.version}; an edit would be rejected")
    tj, js = facts.scope.trainjob, facts.scope.jobset
    assert tj is not None
    if js is None:
        return skip("the JobSet is not in the snapshot, so when it was created is unknown")
    times = [t for t in _trainer_update_times(tj) if t and t > js.created]
    pods = facts.scope.trainer_pods()
    diffs = [d for p in pods for d in compare(tj, p)] if pods else []
    gen = tj.meta.get("generation")
    if times or (
        diffs and isinstance(gen, int) and gen > 1 and (facts.trainer_job and facts.trainer_job.has_ancestor_label)
    ):
        ev: list[dict[str, Any]] = [field_ev(js.ref(), "metadata.creationTimestamp", js.created)]
        if times:
            ev.append(field_ev(tj.ref(), "metadata.managedFields[f:spec.f:trainer].time", times[-1]))
        else:
            ev.append(field_ev(tj.ref(), "metadata.generation", gen))
        if diffs:
            ev.append(field_ev(tj.ref(), diffs[0].want_path, diffs[0].wanted))
        return fail(
            tj.subject(),
            ev,
            f"spec.trainer changed after the JobSet was created; Trainer {v.version} accepts the edit "
            "but never applies it to the running JobSet",
            "high" if times else "medium",
        )
    return ok(reason="no sign that spec.trainer changed after the JobSet was created")


def jobset_spec(facts: Facts) -> tuple[Any, dict[str, Any], str] | None:
    """(object, JobSet spec, its field path): the live JobSet when there is one, else the runtime's template."""
    js, rt = facts.scope.jobset, facts.scope.runtime
    if js is not None:
        return js, js.spec, "spec"
    if rt is not None:
        return rt, (rt.spec.get("template") or {}).get("spec") or {}, "spec.template.spec"
    return None


def _restart_is_moot(facts: Facts) -> str | None:
    """lint: a TrainJob that does not checkpoint at all would only start again from step 0 after a
    restart, so whether it restarts is moot (not-set-up-for-resume says what matters)."""
    if facts.mode != "lint":
        return None
    return facts.missing("checkpointing")


@check("no-failure-policy")
def no_failure_policy(facts: Facts, rule: Rule) -> Result:
    moot = _restart_is_moot(facts)
    if moot:
        return skip(moot)
    got = jobset_spec(facts)
    if got is None:
        return skip("neither the JobSet nor the runtime is in the snapshot")
    if facts.mode == "lint" and facts.trainer_job is None:
        return skip("the runtime has no replicated job with a trainer container, so there is nothing to restart")
    obj, spec, base = got
    rt = facts.scope.runtime
    fp = spec.get("failurePolicy")
    subj = facts.runtime_subject() if obj is rt else facts.subject()
    if not isinstance(fp, dict):
        return fail(
            subj,
            [absence("failurePolicy", f"{obj.ref()} {base}")],
            f"{obj.ref()} has no failurePolicy: the first Job failure fails the whole TrainJob",
        )
    minimum = int(facts.param(rule, "minMaxRestarts", 1))
    mr = fp.get("maxRestarts")
    if not isinstance(mr, int) or mr < minimum:
        return fail(
            subj,
            [field_ev(obj.ref(), f"{base}.failurePolicy.maxRestarts", mr)],
            f"failurePolicy.maxRestarts is {mr!r}: nothing restarts the job after a failure",
        )
    return ok(subj, f"failurePolicy.maxRestarts is {mr}")


@check("grace-period-too-short")
def grace_period(facts: Facts, rule: Rule) -> Result:
    spec = facts.spec
    if spec is None:
        return skip(facts.no_spec())
    if facts.mode == "lint" and facts.scope.trainjob is None:
        return skip(
            "judged per TrainJob: the trainer it runs (spec.trainer.command) decides whether a final save needs "
            "the time, and on v2.3 its runtimePatches can set terminationGracePeriodSeconds"
        )
    minimum = int(facts.param(rule, "minSeconds", 60))
    value = spec.pod_spec.get("terminationGracePeriodSeconds")
    path = f"{spec.base_path}.terminationGracePeriodSeconds"
    grace = 30 if value is None else int(value)
    saves = _save_times(facts) if facts.mode == "diagnose" else []
    longest = max(saves, key=lambda p: p[1].seconds, default=None)
    took = ""
    save_ev: list[dict[str, Any]] = []
    outlived = False
    if longest is not None:
        r, t = longest
        done = _finished_after_all(facts, r, t) if t.at_least else None
        took = _took(t, grace, done)
        if r.log is not None:
            save_ev = [t.start.evidence(r.log.ref, r.attempt)] + (
                [t.end.evidence(r.log.ref, r.attempt)] if t.end is not None else [])  # fmt: skip
        if done is not None:
            save_ev.append(done[0].evidence)
        # a save still running at SIGKILL outlived the grace period; one the listing shows finished did so only
        # when it took the grace period or longer (the process may then be killed in its teardown)
        outlived = t.seconds >= grace if not t.at_least else (done is None or done[1] >= grace)
    subject = facts.runtime_subject() if not spec.from_pod else facts.subject()
    if value is None:
        return fail(
            subject,
            [absence("terminationGracePeriodSeconds", f"{spec.object} {spec.base_path}"), *save_ev],
            f"terminationGracePeriodSeconds is not set, so Kubernetes gives 30 s (< {minimum} s) "
            "to flush a final checkpoint" + (f"; {took}" if took else ""),
            "high" if outlived else "medium",
        )
    if grace < minimum or outlived:
        why = f"below {minimum} s" if grace < minimum else f"at or above the {minimum} s minimum, yet too short here"
        return fail(subject, [field_ev(spec.object, path, value), *save_ev],
                    f"terminationGracePeriodSeconds is {value} s, {why}" + (f"; {took}" if took else ""))  # fmt: skip
    if took:
        return ok(reason=f"terminationGracePeriodSeconds is {value} s; {took}")
    return ok(reason=f"terminationGracePeriodSeconds is {value} s")


def _save_times(facts: Facts) -> list[tuple[Any, Any]]:
    """Every save duration the attempts' logs show (facts/attempts.py `Run.save_times`), with its run; a save cut
    short after SIGTERM is timed from the kubelet's Killing event when the run's own line has no clock."""
    out = []
    for r in facts.history.runs:
        kill = next((epoch(e.get("lastTimestamp")) for e in r.sigterm if e.get("type") == "event"), None)
        out += [(r, t) for t in r.save_times(kill)]
    return out


def _finished_after_all(facts: Facts, r: Any, t: Any) -> tuple[Any, float] | None:
    """A save the log shows cut short by SIGKILL (`SaveTime.at_least`) that the checkpoint listing shows finished
    before the run ended (facts/timeline.py: the file it wrote, complete, last written after its start line and
    inside the attempt): (the timeline's save, at most how many seconds it took from its start), or None."""
    fact = timeline_of(facts).attempt(r.attempt)
    step = t.step
    if step is None and r.log is not None and t.start.line is not None:  # a SIGTERM line that names its save's step
        step = next((e.step for e in r.log.events if e.line == t.start.line and e.kind in ("save_started", "saved")
                     and e.step is not None), None)  # fmt: skip
    end = epoch(r.finished)
    if fact is None or step is None or end is None:
        return None
    began = end - t.seconds  # the earliest it began: its line's time or SIGTERM's, to the second
    for s in fact.saves:
        at = epoch(s.at)
        if s.step == step and s.source == "listing" and at is not None and began <= at <= end:
            return s, at - began
    return None


def _took(t: Any, grace: int, done: tuple[Any, float] | None = None) -> str:
    """How long the save took, in the finding's words (`done`: the listing shows the save cut short finished)."""
    what = f"the save of step {t.step}" if t.step is not None else "a save"
    if done is not None:
        s, secs = done
        what = f"the save of step {s.step}"
        name = s.name or "its checkpoint"
        within = (f"inside the {grace} s grace period" if secs < grace
                  else f"no sooner than the end of the {grace} s grace period")  # fmt: skip
        return (f"{what} began after SIGTERM and finished within {math.ceil(secs)} s of it, {within} (the "
                f"checkpoint listing shows {name} complete, written at {s.at}), yet the process was still running "
                "when SIGKILL came at the end of the grace period (killed after the save, in its teardown)")
    if t.at_least:
        return (f"{what} began after SIGTERM and was still running when SIGKILL came at the end of the {grace} s "
                f"grace period: a final save here takes more than {grace} s")  # fmt: skip
    return f"{what} took {t.seconds:.0f} s in this job's logs (from its start line to its completion)"


@check("backoff-limit-fights-restarts")
def backoff_limit_fights_restarts(facts: Facts, rule: Rule) -> Result:
    moot = _restart_is_moot(facts)
    if moot:
        return skip(moot)
    got = jobset_spec(facts)
    if got is None:
        return skip("neither the JobSet nor the runtime is in the snapshot")
    obj, spec, base = got
    rt = facts.scope.runtime
    mr = (spec.get("failurePolicy") or {}).get("maxRestarts") if isinstance(spec.get("failurePolicy"), dict) else None
    if not isinstance(mr, int) or mr < 1:
        return ok(reason="no JobSet restarts are configured (see no-failure-policy)")
    rjobs = spec.get("replicatedJobs") or []
    hit = trainer_rjob_index(rjobs)
    if hit is None:
        return skip("no trainer replicated job found")
    i, rj = hit[0], rjobs[hit[0]]
    job_path = f"{base}.replicatedJobs[{i}].template.spec"
    limit = int(facts.param(rule, "maxBackoffLimit", 0))
    bl = ((rj.get("template") or {}).get("spec") or {}).get("backoffLimit")
    subj = facts.runtime_subject() if obj is rt else facts.subject()
    if bl is None:
        return fail(
            subj,
            [absence("backoffLimit (Kubernetes defaults to 6)", f"{obj.ref()} {job_path}")],
            f"the trainer job {rj.get('name')!r} has no backoffLimit, so Kubernetes retries the pod 6 times in "
            f"place before failurePolicy.maxRestarts ({mr}) can restart the JobSet",
            "medium",
        )
    if isinstance(bl, int) and bl > limit:
        return fail(
            subj,
            [field_ev(obj.ref(), f"{job_path}.backoffLimit", bl)],
            f"backoffLimit {bl} on the trainer job {rj.get('name')!r} retries the pod in place before "
            f"failurePolicy.maxRestarts ({mr}) can restart the JobSet",
        )
    return ok(subj, f"backoffLimit is {bl}: failures go straight to the JobSet restart")


@check("runtime-ref-unresolved")
def runtime_ref_unresolved(facts: Facts, rule: Rule) -> Result:
    sc = facts.scope
    tj = sc.trainjob
    if tj is None:
        return skip("no TrainJob in the input")
    if sc.runtime is not None:
        return ok(reason=f"spec.runtimeRef resolves to {sc.runtime.ref()} ({sc.runtime_source})")
    name, kind, ref = runtime_ref(tj)
    group = ref.get("apiGroup")
    if not name:
        return fail(tj.subject(), [absence("spec.runtimeRef.name", tj.ref())], "the TrainJob names no runtime")
    if kind not in RUNTIME_KINDS or (group and group != TRAINER_GROUP):
        return fail(
            tj.subject(),
            [field_ev(tj.ref(), "spec.runtimeRef", ref)],
            f"runtimeRef {group or TRAINER_GROUP}/{kind} is not a Trainer runtime kind: "
            "the webhook answers `unsupported runtime`",
            fix="Set spec.runtimeRef.apiGroup: trainer.kubeflow.org and kind: TrainingRuntime or "
            "ClusterTrainingRuntime",
        )
    for o in sc.snap.of_kind(*RUNTIME_KINDS):
        if o.name != name:
            continue
        if o.kind != kind:
            why = " (kind defaults to ClusterTrainingRuntime)" if not ref.get("kind") else ""
            return fail(
                tj.subject(),
                [field_ev(tj.ref(), "spec.runtimeRef.kind", ref.get("kind")), field_ev(o.ref(), "kind", o.kind)],
                f"runtimeRef asks for a {kind} named {name!r}{why}, but {name!r} is a {o.kind}",
                fix=f"Set spec.runtimeRef.kind: {o.kind}",
            )
        if kind == "TrainingRuntime" and o.namespace and tj.namespace and o.namespace != tj.namespace:
            return fail(
                tj.subject(),
                [
                    field_ev(tj.ref(), "metadata.namespace", tj.namespace),
                    field_ev(o.ref(), "metadata.namespace", o.namespace),
                ],
                f"TrainingRuntime {name!r} is in namespace {o.namespace}, the TrainJob in {tj.namespace}: "
                "a TrainingRuntime serves only its own namespace",
                fix="Create the TrainingRuntime in the TrainJob's namespace, or use a ClusterTrainingRuntime",
            )
    k = facts.runtime_known()
    if k is not None and k.absent:
        return fail(
            tj.subject(),
            [field_ev(tj.ref(), "spec.runtimeRef", ref), absence(f"{kind} {name}", k.reason)],
            f"spec.runtimeRef names {kind} {name!r}, which does not exist ({k.reason}): the TrainJob cannot start",
            fix=f"Create the {kind} {name!r}"
            + (" in the TrainJob's namespace" if kind == "TrainingRuntime" else "")
            + ", or point spec.runtimeRef at one that exists",
        )
    return skip(sc.runtime_missing or f"{kind} {name!r} is not in the input")


@check("not-set-up-for-resume")
def not_set_up_for_resume(facts: Facts, rule: Rule) -> Result:
    state, why, evidence = facts.checkpointing
    if state == "unknown":
        return skip(f"whether the job checkpoints is unknown: {why}")
    if state == "present":
        return ok(reason=f"the job checkpoints: {why}")
    rt = facts.scope.runtime
    fp = (jobset_spec(facts) or (None, {}, ""))[1].get("failurePolicy")
    extra = "" if isinstance(fp, dict) else ", no failurePolicy"
    if rt is not None and not isinstance(fp, dict):
        evidence = [*evidence, absence("failurePolicy", rt.ref())]
    after = (
        "a TrainJob that uses it as written starts again from step 0 after a restart "
        "(a TrainJob can add the directory in spec.trainer.env and the volume through its overrides)"
        if facts.scope.trainjob is None
        else "a restart starts again from step 0"
    )
    return fail(facts.subject(), evidence, f"not set up for resume: {why}{extra}; {after}", "high")
