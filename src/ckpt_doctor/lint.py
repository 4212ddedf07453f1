"""`ckpt-doctor lint`: judge manifests before they are applied (contracts.md §6, "lint").

Manifests are read into the same Snapshot a bundle gives, and the same catalogue runs over
them in `lint` mode: every cause the manifests can show is judged, symptoms are listed as
`not_evaluated` ("needs cluster evidence"). Each TrainJob is judged with the runtime it
references (merged the way the controller merges them); each runtime that no TrainJob among the
files references is judged on its own. The findings of all of them form one document whose
subjects carry the file and line of the field they are about.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ckpt_doctor.engine.model import Finding, Result, severity_rank
from ckpt_doctor.engine.walk import STATUS_ORDER, Diagnosis, evaluate, strength
from ckpt_doctor.facts.context import Facts
from ckpt_doctor.facts.overrides import find_trainer_job, override_pod_patches
from ckpt_doctor.facts.versions import KNOWN, NEWEST, TrainerVersion, normalise, trainer_version
from ckpt_doctor.scope import ANCESTOR_LABEL, RUNTIME_KINDS, Scope, build_scope, claim_names, runtime_ref, trainjobs
from ckpt_doctor.snapshot import TRAINER_GROUP, Obj, Origin
from ckpt_doctor.sources.manifests import ManifestSet, key_line, load_manifests, resolve_path, snippet_line

# Built-in ClusterTrainingRuntimes whose shape is known well enough to judge a TrainJob that uses
# them without the runtime among the files (trainer-api.md §10): the trainer replicated job
# `node` with the ancestor label and a container `node`, no failurePolicy, no volumes.
BUILTIN_RUNTIMES = ("torch-distributed",)
NOTHING_TO_JUDGE = "no TrainJob, TrainingRuntime or ClusterTrainingRuntime among the files"


@dataclass
class Location:
    obj: Obj
    file: str
    line: int | None


@dataclass
class Unit:
    """One TrainJob with its runtime, or one runtime alone, and what the catalogue said."""

    facts: Facts
    diagnosis: Diagnosis
    builtin: Obj | None = None  # the built-in runtime assumed for it, if any


@dataclass
class LintResult:
    manifests: ManifestSet
    version: TrainerVersion
    units: list[Unit]
    diagnosis: Diagnosis  # all units merged: the document `lint` prints

    def exit_code(self, fail_on: str = "warning", strict: bool = False) -> int:
        return self.diagnosis.exit_code(fail_on, strict)

    def failed(self) -> list[Finding]:
        return self.diagnosis.failed()


def lint_paths(
    paths: Sequence[str | Path], version_flag: str | None = None, stdin_text: str | None = None
) -> LintResult:
    """Read the manifests under `paths` (files, folders, `-`) and lint them."""
    return lint_manifests(load_manifests(paths, stdin_text), version_flag)


# -- the Trainer version ------------------------------------------------------------------------
def choose_version(mset: ManifestSet, flag: str | None = None) -> TrainerVersion:
    """`--trainer-version`, else what the TrainJobs' fields show, else the newest (and say so)."""
    if flag:
        v = normalise(flag)
        if v is None:
            raise ValueError(f"unknown Trainer version {flag!r}; known: {', '.join(KNOWN)}")
        return TrainerVersion(v, "flag", f"--trainer-version {flag}")
    told = (mset.snapshot.meta.get("cluster") or {}).get("trainerVersion")
    if told and normalise(str(told)):  # a bundle's bundle.yaml among the files: what its cluster ran
        return TrainerVersion(normalise(str(told)) or NEWEST, "bundle", f"bundle.yaml says {told}")
    seen: list[tuple[TrainerVersion, Obj]] = []
    for tj in trainjobs(mset.snapshot):
        v = trainer_version(Scope(snap=mset.snapshot, trainjob=tj))
        if v.source == "inferred":
            seen.append((v, tj))
    if not seen:
        return TrainerVersion(
            NEWEST,
            "assumed",
            f"nothing in the files shows the Trainer version; assuming the newest ({NEWEST}), "
            "pass --trainer-version to say which",
        )
    versions = sorted({v.version for v, _ in seen}, key=KNOWN.index)
    newest = versions[-1]
    v, tj = next((v, tj) for v, tj in seen if v.version == newest)
    where = _where(tj)
    if len(versions) == 1:
        return TrainerVersion(newest, "inferred", f"{v.why} in {where}")
    return TrainerVersion(
        newest,
        "inferred",
        f"the files mix Trainer versions ({', '.join(versions)}); judging against the newest, {newest} "
        f"({v.why} in {where}); pass --trainer-version to say which",
    )


def _where(o: Obj) -> str:
    if o.origin is None:
        return o.ref()
    return o.origin.file + (f":{o.origin.line}" if o.origin.line else "")


def _prime_version(facts: Facts, version: TrainerVersion) -> None:
    facts.__dict__["version"] = version  # Facts.version is a cached_property: one version for the whole run


# -- units --------------------------------------------------------------------------------------
def _builtin_runtime(name: str, tj: Obj, mset: ManifestSet) -> Obj:
    raw: dict[str, Any] = {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "ClusterTrainingRuntime",
        "metadata": {"name": name, "labels": {"trainer.kubeflow.org/framework": "torch"}},
        "spec": {
            "mlPolicy": {"numNodes": 1, "torch": {}},
            "template": {
                "spec": {
                    "replicatedJobs": [
                        {
                            "name": "node",
                            "template": {
                                "metadata": {"labels": {ANCESTOR_LABEL: "trainer"}},
                                "spec": {"template": {"spec": {"containers": [{"name": "node"}]}}},
                            },
                        }
                    ]
                }
            },
        },
    }
    node = mset.node_of(tj)
    res = resolve_path(node, "spec.runtimeRef") if node is not None else None
    file = tj.origin.file if tj.origin else "<built-in>"
    return Obj(raw, Origin(file, res.line if res else (tj.origin.line if tj.origin else None)))


def _scopes(mset: ManifestSet) -> list[tuple[Scope, Obj | None]]:
    snap = mset.snapshot
    out: list[tuple[Scope, Obj | None]] = []
    used: set[int] = set()
    for tj in trainjobs(snap):
        sc = build_scope(snap, tj)
        builtin = None
        if sc.runtime is not None:
            used.add(id(sc.runtime))
        else:
            name, kind, _ = runtime_ref(tj)
            where = _ref_line(mset, tj, "spec.runtimeRef")
            same_name = [o for o in snap.of_kind(*RUNTIME_KINDS) if o.name == name]
            if name in BUILTIN_RUNTIMES and kind == "ClusterTrainingRuntime" and not same_name:
                builtin = _builtin_runtime(name, tj, mset)
                sc.runtime, sc.runtime_source, sc.runtime_missing = builtin, "built-in", None
                mset.note(
                    where[0],
                    f"{kind} {name!r} is not among the files: judged as the built-in runtime ships it "
                    "(trainer job `node` with the ancestor label, no failurePolicy, no volumes)",
                    where[1],
                    "assumed",
                )
            elif name and not same_name:
                sc.runtime_missing = (
                    f"{kind} {name!r} is not among the files; assumed to exist on the cluster "
                    "(lint it together with the TrainJob to judge it)"
                )
                mset.note(where[0], sc.runtime_missing, where[1], "assumed")
            elif name:
                sc.runtime_missing = f"spec.runtimeRef does not resolve to {kind} {name!r} among the files"
        out.append((sc, builtin))
    for rt in snap.of_kind(*RUNTIME_KINDS):
        if rt.group == TRAINER_GROUP and id(rt) not in used:
            out.append((build_scope(snap, None, rt), None))
    if not out:
        out.append((build_scope(snap, None, None), None))
    for sc, _b in out:
        owner = sc.trainjob or sc.runtime
        for claim in sorted(claim_names(sc)):
            if claim not in sc.pvcs and owner is not None:
                file, line = _claim_line(mset, sc, claim)
                mset.note(
                    file,
                    f"PersistentVolumeClaim {claim!r} (mounted by {owner.ref()}) is not among the files; "
                    f"assumed to exist in namespace {sc.namespace or '(the TrainJob’s)'}",
                    line,
                    "assumed",
                )
    return out


def _ref_line(mset: ManifestSet, obj: Obj, path: str) -> tuple[str, int | None]:
    node = mset.node_of(obj)
    file = obj.origin.file if obj.origin else obj.ref()
    if node is None:
        return file, obj.origin.line if obj.origin else None
    return file, resolve_path(node, path).line


def _claim_line(mset: ManifestSet, sc: Scope, claim: str) -> tuple[str, int | None]:
    for obj in (sc.trainjob, sc.runtime):
        node = mset.node_of(obj) if obj is not None else None
        if node is None:
            continue
        line = _find_key_value(node, "claimName", claim)
        if line:
            return (obj.origin.file if obj.origin else obj.ref()), line
    owner = sc.trainjob or sc.runtime
    assert owner is not None
    return (owner.origin.file if owner.origin else owner.ref()), owner.origin.line if owner.origin else None


def _find_key_value(node: Any, key: str, value: str) -> int | None:
    if isinstance(node, dict):
        for k, v in node.items():
            if k == key and str(v) == value:
                return key_line(node, k)
            found = _find_key_value(v, key, value)
            if found:
                return found
    elif isinstance(node, list):
        for v in node:
            found = _find_key_value(v, key, value)
            if found:
                return found
    return None


# -- locating evidence --------------------------------------------------------------------------
@dataclass
class _Ctx:
    mset: ManifestSet
    trainjob: Obj | None
    runtime: Obj | None
    builtin: Obj | None


def _candidates(ctx: _Ctx, obj: Obj, path: str) -> list[tuple[Obj, str]]:
    """Where a field of the merged trainer pod may really be written: TrainJob first, like the merge."""
    out: list[tuple[Obj, str]] = []
    tj, rt = ctx.trainjob, ctx.runtime
    if tj is not None and rt is not None and obj is rt:
        job = find_trainer_job(rt)
        base = f"{job.path}.template.spec.template.spec" if job is not None else None
        if job is not None and base is not None and path.startswith(base):
            rel = path[len(base) :].lstrip(".")
            m = re.match(r"containers\[name=node\]\.(env|command|args|image|resources)(.*)$", rel)
            if m and job.has_ancestor_label:
                field = {"resources": "resourcesPerNode"}.get(m.group(1), m.group(1))
                out.append((tj, f"spec.trainer.{field}{m.group(2)}"))
            for opath, _patch in reversed(override_pod_patches(tj, job.name)):
                out.append((tj, f"{opath}.{rel}" if rel else opath))
    if tj is not None and obj is not tj and path and not path.startswith(("spec", "metadata", "data", "kind")):
        out.append((tj, path))  # a relative path (volumeMounts[mountPath=…]) may live in the overrides
    out.append((obj, path))
    return out


def _locate(ctx: _Ctx, ev: dict[str, Any]) -> Location | None:
    """The file and line an evidence item points at, when it names a field of a manifest."""
    t = ev.get("type")
    if t == "field":
        ref, path = str(ev.get("object") or ""), str(ev.get("path") or "")
    elif t == "absence":
        ref, _, path = str(ev.get("where") or "").partition(" ")
        if "/" not in ref:
            return None
    else:
        return None
    obj = ctx.mset.find(ref)
    if obj is None:
        b = ctx.builtin
        if b is not None and b.ref() == ref and b.origin is not None:
            return Location(b, b.origin.file, b.origin.line)
        return None
    patched = ctx.mset.patch_line(obj, path) if path else None
    if patched is not None:  # rendered by Kustomize: the patch that set or removed the field
        return Location(obj, patched[0], patched[1])
    snippet = ev.get("value") if isinstance(ev.get("value"), str) else None
    best: tuple[int, Location] | None = None
    for cobj, cpath in _candidates(ctx, obj, path):
        node = ctx.mset.node_of(cobj)
        if node is None or cobj.origin is None:
            continue
        res = resolve_path(node, cpath)
        line = (snippet_line(res, snippet) if snippet else None) or res.line
        loc = Location(cobj, cobj.origin.file, line)
        if res.complete:
            return loc
        if best is None or res.depth > best[0] or (res.depth == best[0] and cobj is obj):
            best = (res.depth, loc)
    return best[1] if best else None


def _source_line(ctx: _Ctx, file: str, line: int | None) -> str | None:
    if not line:
        return None
    mf = next((f for f in ctx.mset.files if f.display == file), None)
    text = mf.text if mf is not None else ctx.mset.patch_texts.get(file)
    if text is None:
        return None
    lines = text.splitlines()
    return lines[line - 1].strip()[:200] if 0 < line <= len(lines) else None


def _subject_of(obj: Obj, line: int | None, file: str | None = None) -> dict[str, Any]:
    s = obj.subject()
    if file:  # a rendered object's field may be set in another file (a Kustomize patch)
        s["file"] = file
    if line:
        s["line"] = line
    return s


def _placeholder_hit(ctx: _Ctx, res: Result, locs: list[Location]) -> str | None:
    ph = ctx.mset.placeholders
    if not ph:
        return None
    texts = {p.text: p for p in ph}
    for ev in res.evidence:
        for k in ("value", "text", "what"):
            v = ev.get(k)
            s = v if isinstance(v, str) else (repr(v) if v is not None else "")
            for text, p in texts.items():
                if text in s:
                    return f"rests on the placeholder {text} ({p.file}:{p.line}); fill it in and lint again"
    for loc in locs:
        for p in ph:
            if p.file == loc.file and p.line == loc.line:
                return f"rests on the placeholder {p.text} ({p.file}:{p.line}); fill it in and lint again"
    return None


def _place(ctx: _Ctx, f: Finding, default: dict[str, Any] | None) -> Finding:
    """Give a finding's subject its file and line; failures point at the field they are about."""
    res = replace(f.result, evidence=[dict(e) for e in f.result.evidence])
    subject = dict(res.subject) if res.subject else (dict(default) if default else None)
    if res.status != "fail":
        res.subject = _complete_subject(ctx, subject)
        return Finding(f.rule, res)
    locs = [loc for loc in (_locate(ctx, ev) for ev in res.evidence) if loc is not None]
    why = _placeholder_hit(ctx, res, locs)
    if why:
        res = Result("not_evaluated", _complete_subject(ctx, subject), [], None, why)
        return Finding(f.rule, res)
    subj_obj = ctx.mset.find_subject(subject) or _builtin_if(ctx, subject)
    chosen = next((loc for loc in locs if subj_obj is not None and loc.obj is subj_obj), None)
    if chosen is None and locs:
        chosen = locs[0]
    if chosen is not None:
        res.subject = _subject_of(chosen.obj, chosen.line, chosen.file)
    else:
        res.subject = _complete_subject(ctx, subject)
    seen: set[tuple[str, int | None]] = set()
    for loc in locs:
        if (loc.file, loc.line) in seen:
            continue
        seen.add((loc.file, loc.line))
        fev: dict[str, Any] = {"type": "file", "path": loc.file, "line": loc.line}
        text = _source_line(ctx, loc.file, loc.line)
        if text:
            fev["text"] = text
        res.evidence.append(fev)
    return Finding(f.rule, res)


def _builtin_if(ctx: _Ctx, subject: dict[str, Any] | None) -> Obj | None:
    b = ctx.builtin
    if b is not None and subject and subject.get("kind") == b.kind and subject.get("name") == b.name:
        return b
    return None


def _complete_subject(ctx: _Ctx, subject: dict[str, Any] | None) -> dict[str, Any] | None:
    if subject is None:
        return None
    if subject.get("file"):
        return subject
    obj = ctx.mset.find_subject(subject) or _builtin_if(ctx, subject)
    if obj is not None:
        return _subject_of(obj, obj.origin.line if obj.origin else None)
    return subject


# -- the run ------------------------------------------------------------------------------------
def lint_manifests(mset: ManifestSet, version_flag: str | None = None) -> LintResult:
    """Lint what `load_manifests` read: one document for all TrainJobs and runtimes in it."""
    version = choose_version(mset, version_flag)
    units: list[Unit] = []
    for sc, builtin in _scopes(mset):
        facts = Facts(sc, mode="lint", version_flag=version_flag)
        _prime_version(facts, version)
        units.append(Unit(facts, evaluate(facts), builtin))
    snap = mset.snapshot
    if version.source == "assumed":
        mset.note(snap.location or "manifests", version.why, kind="version")
    snap.not_collected = [n.to_gap() for n in mset.notes]
    merged: dict[tuple[Any, ...], Finding] = {}
    order: list[tuple[Any, ...]] = []
    for unit in units:
        ctx = _Ctx(mset, unit.facts.scope.trainjob, unit.facts.scope.runtime, unit.builtin)
        default = unit.facts.subject()
        empty = unit.facts.scope.trainjob is None and unit.facts.scope.runtime is None
        for f in unit.diagnosis.findings:
            if empty:  # nothing to judge: no pass may look like an all-clear
                f = Finding(f.rule, Result("not_evaluated", None, [], None, NOTHING_TO_JUDGE))
            placed = _place(ctx, f, default)
            s = placed.result.subject or {}
            key = (f.rule.id, s.get("kind"), s.get("namespace"), s.get("name"), s.get("file"))
            if key not in merged:
                order.append(key)
                merged[key] = placed
            elif STATUS_ORDER[placed.status] < STATUS_ORDER[merged[key].status]:
                merged[key] = placed
    findings = [merged[k] for k in order]
    findings.sort(key=_sort_key)
    summary = Facts(Scope(snap=snap, trainjob=None), mode="lint", version_flag=version_flag)
    _prime_version(summary, version)
    latent = sorted(
        (f for f in findings if f.rule.kind == "cause" and f.status == "fail"),
        key=strength,
        reverse=True,
    )
    diag = Diagnosis(summary, findings, [], latent)
    return LintResult(mset, version, units, diag)


def _sort_key(f: Finding) -> tuple[Any, ...]:
    s = f.result.subject or {}
    return (
        STATUS_ORDER[f.status],
        -severity_rank(f.rule.severity),
        0 if f.rule.kind == "symptom" else 1,
        f.rule.id,
        str(s.get("file") or ""),
        int(s.get("line") or 0),
    )
