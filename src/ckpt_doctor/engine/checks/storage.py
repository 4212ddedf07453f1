"""Causes about where checkpoints live: volumes, PVCs, access modes, node pinning."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ckpt_doctor.engine.checks import absence, check, event_ev, field_ev
from ckpt_doctor.engine.checks.symptoms import volume_events
from ckpt_doctor.engine.model import Result, Rule, fail, ok, skip
from ckpt_doctor.facts.context import Facts
from ckpt_doctor.facts.storage import PERSISTENT_SOURCES, CkptDir, node_local, save_into
from ckpt_doctor.scope import claim_names

if TYPE_CHECKING:
    from ckpt_doctor.facts.attempts import Run
    from ckpt_doctor.facts.logs import LogEvent

RWO = {"ReadWriteOnce", "ReadWriteOncePod"}


def _dir_ev(cd: CkptDir) -> list[dict[str, Any]]:
    ev = [cd.evidence]
    if cd.mount_path:
        ev.append(
            {
                "type": "field",
                "object": cd.evidence.get("object", ""),
                "path": f"volumeMounts[mountPath={cd.mount_path}]",
                "value": cd.volume_name,
            }
        )
    return ev




@check("ckpt-dir-not-persistent")
def ckpt_dir_not_persistent(facts: Facts, rule: Rule) -> Result:
    spec = facts.spec
    if spec is None:
        return skip(facts.no_spec())
    vols = [v for v in spec.pod_spec.get("volumes") or [] if isinstance(v, dict)]
    durable = [v for v in vols if any(k in v for k in PERSISTENT_SOURCES)]
    cd = facts.ckpt_dir
    if facts.mode == "lint" and facts.scope.trainjob is None and (cd is None or cd.volume_kind == "container-fs"):
        # a runtime linted on its own: TrainJobs may add the volume (overrides) and the directory (env)
        return skip("judged per TrainJob: its overrides and spec.trainer.env may add the checkpoint volume")
    if cd is None:
        if not durable:
            return fail(
                facts.subject(),
                [
                    absence(
                        "a persistentVolumeClaim (or other network) volume", f"{spec.object} {spec.base_path}.volumes"
                    )
                ],
                "the trainer mounts no PersistentVolumeClaim, so no checkpoint survives the pod",
                "medium",
            )
        return skip("no checkpoint directory found in env (CKPT_DIR, OUTPUT_DIR…), args or mounted config")
    if cd.path is None:
        return skip(
            f"the checkpoint directory {cd.raw!r} ({cd.source}) cannot be resolved: "
            + "; ".join(cd.notes or ["it uses a value that is not known"])
        )
    where = {
        "emptyDir": "an emptyDir, which dies with the pod",
        "container-fs": "no volume: the container filesystem, lost on every restart",
        "hostPath": "a hostPath on one node",
        "ephemeral": "a generic ephemeral volume, deleted with the pod",
        "configMap": "a read-only ConfigMap/Secret volume",
    }.get(cd.volume_kind)
    if where is None and cd.node_local:
        where = f"node-local storage ({cd.node_local})"
    if where is None:
        if cd.volume_kind == "unknown":
            return skip(f"{cd.path} is on volume {cd.volume_name!r}, which the pod spec does not define")
        if cd.volume_kind == "pvc" and facts.mode != "lint":
            # in lint the claim and its class are cluster-side: node-pinned-storage judges them on the cluster
            unknown = _storage_unknown(facts, cd)
            if unknown:
                return skip(f"{cd.path} ({cd.source}) is on PVC {cd.claim}, but {unknown}")
        return ok(reason=f"{cd.path} ({cd.source}) is on {_volume_words(cd)}", evidence=_dir_ev(cd))
    ev = _dir_ev(cd)
    if cd.volume_kind == "container-fs":
        ev.append(absence(f"a volumeMount covering {cd.path}", f"{spec.object} {spec.container_path}.volumeMounts"))
    detail = f"the checkpoint directory {cd.path} ({cd.source}) is on {where}"
    if cd.notes:
        detail += f" [{'; '.join(cd.notes)}]"
    return fail(facts.subject(), ev, detail, "medium" if cd.notes else "high")


def _volume_words(cd: CkptDir) -> str:
    if cd.volume_kind == "pvc":
        return f"PVC {cd.claim or cd.volume_name}"
    return f"the network volume {cd.volume_name!r}"


def _storage_unknown(facts: Facts, cd: CkptDir) -> str | None:
    """Why whether a claim's storage is node-local cannot be told (None when it can).

    It can when the bound PV or its StorageClass is seen (both say it), or when the class name alone
    says node-local; it cannot when neither the PV nor the StorageClass was collected."""
    if cd.node_local:
        return None
    if cd.claim and cd.pvc is None:
        k = facts.known("PersistentVolumeClaim", cd.claim)
        return f"the claim itself is {'missing' if k.absent else 'unknown'} ({k.reason})"
    if cd.pv is not None or cd.storageclass is not None:
        return None
    cls = cd.pvc.spec.get("storageClassName") if cd.pvc is not None else None
    if cd.pvc is not None and not cls and not cd.pvc.spec.get("volumeName"):
        return "it names no StorageClass and no volume"
    parts = []
    vol = cd.pvc.spec.get("volumeName") if cd.pvc is not None else None
    if vol:
        parts.append(f"PersistentVolume {vol} ({facts.known('PersistentVolume', str(vol)).reason or 'not seen'})")
    if cls:
        parts.append(f"StorageClass {cls} ({facts.known('StorageClass', str(cls)).reason or 'not seen'})")
    return "whether its storage is node-local is unknown: " + ", ".join(parts) if parts else None


@check("ckpt-dir-changed")
def ckpt_dir_changed(facts: Facts, rule: Rule) -> Result:
    cd = facts.ckpt_dir
    dyn = next((d for d in facts.ckpt_dirs if d.dynamic), None)
    if dyn is not None:
        if dyn.unresolved is not None:  # computed by the script: name the part that changes
            detail = (f"the script builds the checkpoint directory ({dyn.source}: {dyn.unresolved}) from "
                      f"{dyn.dynamic}, which changes on every start: each restart saves into, and looks in, a new "
                      "directory")  # fmt: skip
        else:
            detail = f"the checkpoint directory {dyn.raw!r} contains {dyn.dynamic!r}, which changes on every pod or run"
        return fail(facts.subject(), [dyn.evidence], detail)
    # across attempts: the same directory on every trainer pod spec
    per_pod: dict[str, tuple[str, dict[str, Any]]] = {}
    for spec in facts.pod_specs:
        dirs = facts.ckpt_dirs_of(spec)
        if dirs and dirs[0].path:
            per_pod[spec.object] = (dirs[0].path, dirs[0].evidence)
    paths = {p for p, _ in per_pod.values()}
    if len(paths) > 1:
        items = sorted(per_pod.items())
        return fail(
            facts.subject(),
            [ev for _o, (_p, ev) in items[:4]],
            f"trainer pods use different checkpoint directories: {', '.join(sorted(paths))}",
        )
    # from logs: attempts saving into different directories (the directory a checkpoint was saved into, by the
    # framework's layout: a file is saved into its directory, a tag into the checkpoint it sits in)
    h = facts.history
    stacks = tuple(facts.program.stacks) if facts.program is not None else ()
    first: tuple[str, Run, LogEvent] | None = None
    last: tuple[Run, LogEvent] | None = None  # a save of a later attempt into the same directory
    for r in h.runs:
        for e in r.saves():
            d = save_into(e.path, e.step, stacks)
            if d is None or r.log is None:
                continue
            if first is None:
                first = (d, r, e)
            elif d != first[0] and first[1].attempt < r.attempt:
                d0, sr, se = first
                assert sr.log is not None
                return fail(
                    facts.subject(),
                    [se.evidence(sr.log.ref, sr.attempt), e.evidence(r.log.ref, r.attempt)],
                    f"attempt {sr.attempt} saved into {d0}, attempt {r.attempt} into {d}",
                )
            elif first[1].attempt < r.attempt:
                last = (r, e)
    looked = _looked_in_changed(h, stacks)
    if looked is not None:
        return looked(facts)
    listed = _listing_shows_change(facts)
    if listed is not None:
        return listed
    if first is not None and last is not None:
        d0, sr, se = first
        lr, le = last
        assert sr.log is not None and lr.log is not None
        return ok(
            reason=f"attempts {sr.attempt} and {lr.attempt} saved into the same directory, {d0}",
            evidence=[se.evidence(sr.log.ref, sr.attempt), le.evidence(lr.log.ref, lr.attempt)],
        )
    if cd is None and not per_pod:
        return skip("no checkpoint directory found in env, args or config")
    if cd is not None and cd.path is None:
        return skip(f"the checkpoint directory {cd.raw!r} ({cd.source}) cannot be resolved: " + "; ".join(cd.notes))
    return ok(reason="the checkpoint directory is fixed and the same for every attempt in the snapshot")


def _looked_in(path: str | None, step: int | None, stacks: tuple[str, ...]) -> str | None:
    """The directory a resume or fresh-start line says the attempt looked in: a pointer file's directory
    (DeepSpeed's `latest`, Megatron's `latest_checkpointed_iteration.txt`), the directory a checkpoint it names
    was saved into, else the directory it names."""
    from ckpt_doctor import frameworks

    if not path or not path.startswith("/"):
        return None
    base = path.rstrip("/").rsplit("/", 1)[-1]
    pointers = {p.file for f in frameworks.all_frameworks() if f.layout is not None for p in f.layout.pointers}
    if base in pointers:
        return path.rstrip("/").rsplit("/", 1)[0] or "/"
    return save_into(path, step, stacks)


def _looked_in_changed(h: Any, stacks: tuple[str, ...]) -> Any:
    """Two attempts whose lines of the same kind (`Unable to find latest file at …/latest`) name different
    directories they looked in: a failing result maker, or None."""
    seen: dict[str, tuple[str, Run, LogEvent]] = {}  # signature -> the first directory looked in
    for a in h.attempts:
        _k, _s, r, ev = h.attempt_start(a)
        if r is None or ev is None or r.log is None or ev.kind not in ("resumed", "fresh_start"):
            continue
        d = _looked_in(ev.path, ev.step, stacks)
        if d is None:
            continue
        prev = seen.get(ev.signature)
        if prev is None:
            seen[ev.signature] = (d, r, ev)
        elif prev[0] != d and prev[1].attempt < r.attempt:
            d0, pr, pe = prev
            assert pr.log is not None

            def result(facts: Facts, d0: str = d0, pr: Run = pr, pe: LogEvent = pe, r: Run = r, ev: LogEvent = ev,
                       d: str = d) -> Result:  # fmt: skip
                assert pr.log is not None and r.log is not None
                return fail(
                    facts.subject(),
                    [pe.evidence(pr.log.ref, pr.attempt), ev.evidence(r.log.ref, r.attempt)],
                    f"attempt {pr.attempt} looked for its checkpoint in {d0}, attempt {r.attempt} in {d}",
                )

            return result
    return None


def _listing_shows_change(facts: Facts) -> Result | None:
    """A listing with two directories of one framework's checkpoints, one written only before an attempt began
    and one only after: that attempt saved into a new directory (the listing is the framework's layout read on the
    volume: facts/checkpoints.py)."""
    from ckpt_doctor.facts.timeline import epoch

    vol = facts.volume
    latest = vol.latest()
    if latest is None:
        return None
    dirs = [d for d in latest.dirs if d.checkpoints and all(c.mtime is not None for c in d.checkpoints)]
    if len(dirs) < 2:
        return None
    for a in facts.history.attempts:
        t = epoch(a.started)
        if t is None:
            continue
        t += 1.0  # a container's startedAt is whole seconds: it began within the second after
        before = [d for d in dirs if max(c.mtime or 0.0 for c in d.checkpoints) < t]
        after = [d for d in dirs if min(c.mtime or 0.0 for c in d.checkpoints) >= t]
        for old in before:
            new = next((d for d in after if d.framework == old.framework and d.node.path != old.node.path), None)
            if new is None:
                continue
            return fail(
                facts.subject(),
                [latest.evidence(old.checkpoints[-1]), latest.evidence(new.checkpoints[0])],
                f"the listing shows {old.framework} checkpoints in {old.node.path}, all written before attempt "
                f"{a.index} began ({a.started}), and in {new.node.path}, all written after: attempt {a.index} saved "
                "into a new directory",
            )
    return None


def _claim(facts: Facts) -> tuple[str | None, Any]:
    cd = facts.ckpt_dir
    if cd is not None and cd.claim:
        return cd.claim, facts.scope.pvcs.get(cd.claim)
    names = sorted(claim_names(facts.scope))
    if len(names) == 1:
        return names[0], facts.scope.pvcs.get(names[0])
    return None, None


def _template_of(facts: Facts, claim: str) -> dict[str, Any] | None:
    """The volumeClaimPolicies template JobSet makes `claim` from, when it is one of its PVCs."""
    from ckpt_doctor.facts.storage import claim_template, claim_templates

    for name, t in claim_templates(facts.scope).items():
        if claim_template(facts.scope, name) == claim:
            return t
    return None


def num_nodes(facts: Facts) -> tuple[int | None, dict[str, Any]]:
    """numNodes and the field that says it: spec.trainer, else the runtime's mlPolicy (default 1 when
    the runtime is seen without one); None when neither the TrainJob nor a seen runtime says."""
    tj, rt = facts.scope.trainjob, facts.scope.runtime
    if tj is not None:
        n = (tj.spec.get("trainer") or {}).get("numNodes")
        if isinstance(n, int):
            return n, field_ev(tj.ref(), "spec.trainer.numNodes", n)
    if rt is not None:
        n = (rt.spec.get("mlPolicy") or {}).get("numNodes")
        if isinstance(n, int):
            return n, field_ev(rt.ref(), "spec.mlPolicy.numNodes", n)
        return 1, absence("numNodes (neither spec.trainer nor the runtime's mlPolicy sets it: defaults to 1)")
    return None, absence("numNodes (the runtime is not in the snapshot)")


@check("rwo-multi-node")
def rwo_multi_node(facts: Facts, rule: Rule) -> Result:
    n, n_ev = num_nodes(facts)
    if n is None:
        return skip(
            "how many nodes the job runs on is unknown: spec.trainer.numNodes is unset and the runtime "
            "is not in the snapshot"
        )
    if n <= 1:
        return ok(reason="single node: a ReadWriteOnce volume is enough")
    claim, pvc = _claim(facts)
    if claim is None:
        return skip("no checkpoint PVC found to read access modes from")
    template = _template_of(facts, claim)
    if pvc is None and template is None:
        return skip(f"PVC {claim} is not in the snapshot, so its access modes are unknown")
    spec = pvc.spec if pvc is not None else ((template or {}).get("spec") or {})
    modes = list(spec.get("accessModes") or [])
    if not modes:
        return skip(f"PVC {claim} shows no spec.accessModes")
    if set(modes) <= RWO:
        where = pvc.ref() if pvc is not None else f"{facts.scope.runtime.ref() if facts.scope.runtime else 'runtime'}"
        path = "spec.accessModes" if pvc is not None else "spec.template.spec.volumeClaimPolicies"
        return fail(
            pvc.subject() if pvc is not None else facts.runtime_subject(),
            [n_ev, field_ev(where, path, modes)],
            f"{n} nodes share PVC {claim}, which is {'/'.join(modes)}: pods on a second node cannot attach it",
        )
    return ok(reason=f"PVC {claim} is {'/'.join(modes)}")


@check("rwo-still-attached")
def rwo_still_attached(facts: Facts, rule: Rule) -> Result:
    n, _ = num_nodes(facts)
    hits = [(f, p) for f, p in volume_events(facts) if "Multi-Attach error" in f["message"]]
    if not hits:
        return ok(reason="no Multi-Attach event on the trainer pods")
    if n is None:
        return skip("a Multi-Attach event, but whether the job is single-node is unknown (runtime not in the snapshot)")
    if n > 1:
        return ok(reason="multi-node job: see rwo-multi-node")
    f, pod = hits[0]
    claim, pvc = _claim(facts)
    ev = [event_ev(f)]
    if pvc is not None:
        ev.append(field_ev(pvc.ref(), "spec.accessModes", pvc.spec.get("accessModes")))
    return fail(
        facts.subject(), ev, f"pod {pod} waited for volume {claim or ''} to detach from the old node (Multi-Attach)"
    )


@check("node-pinned-storage")
def node_pinned_storage(facts: Facts, rule: Rule) -> Result:
    cd = facts.ckpt_dir
    claim, pvc = _claim(facts)
    found = (cd.node_local, cd.node_local_ev) if cd is not None and cd.volume_kind == "pvc" else (None, None)
    pv = facts.scope.pvs.get(claim) if claim else None
    cls = pvc.spec.get("storageClassName") if pvc is not None else None
    sc = facts.scope.storageclasses.get(str(cls)) if cls else None
    if found[0] is None and claim:
        claim_ref = f"PersistentVolumeClaim/{facts.scope.namespace}/{claim}"
        found = node_local(pv, sc, str(cls) if cls else None, claim_ref) or (None, None)
    reason, shown = found
    if reason is None:
        if not claim:
            if cd is not None and cd.volume_kind == "hostPath":
                return skip("the checkpoint directory is a hostPath: see ckpt-dir-not-persistent")
            return ok(reason="the checkpoint directory is not on a PVC (see ckpt-dir-not-persistent)")
        if pvc is None:
            return skip(f"PVC {claim} is not in the snapshot ({facts.known('PersistentVolumeClaim', claim).reason})")
        if pv is None and sc is None:
            k = facts.known("StorageClass", str(cls)) if cls else None
            if k is not None and k.absent:
                return skip(f"PVC {claim} has no PersistentVolume yet and its StorageClass {cls} does not exist "
                            f"({k.reason}): where its volume will live is unknown")  # fmt: skip
            return skip(
                f"PVC {claim}: neither its PersistentVolume nor its StorageClass is in the snapshot, "
                "so whether it is node-local is unknown"
            )
        seen = " and ".join(x for x in (pv and f"PV {pv.name}", sc and f"StorageClass {sc.name}") if x)
        return ok(reason=f"the checkpoint storage is not node-local ({seen})")
    assert shown is not None  # node_local gives a reason and its field together
    evidence: list[dict[str, Any]] = [shown]
    conflicts = [(f, p) for f, p in volume_events(facts) if "node affinity" in f["message"]]
    if conflicts:
        evidence.append(event_ev(conflicts[0][0]))
        return fail(facts.subject(), evidence, f"the new pod cannot reach node-local storage ({reason})")
    nodes = {}
    for r in facts.history.runs:
        if r.node:
            nodes.setdefault(r.node, r)
    if len(nodes) > 1:
        for node, r in list(nodes.items())[:2]:
            evidence.append(field_ev(r.pod.ref(), "spec.nodeName", node))
        return fail(
            facts.subject(), evidence, f"attempts ran on {len(nodes)} nodes but the checkpoints live on one ({reason})"
        )
    if not facts.history.runs:
        return skip("node-local storage: whether a new pod lands elsewhere needs cluster evidence")
    if facts.history.unseen:
        return skip(
            f"node-local storage ({reason}); where the earlier attempts ran is unknown: "
            + "; ".join(facts.history.unseen[:2])
        )
    return ok(reason=f"node-local storage, but every attempt so far ran on {next(iter(nodes), 'one node')}")


@check("pvc-unbound")
def pvc_unbound(facts: Facts, rule: Rule) -> list[Result]:
    names = sorted(claim_names(facts.scope))
    if not names:
        return [ok(reason="the trainer mounts no PVC (see ckpt-dir-not-persistent)")]
    results: list[Result] = []
    for name in names:
        pvc = facts.scope.pvcs.get(name)
        ref = f"PersistentVolumeClaim/{facts.scope.namespace}/{name}"
        subject = {"kind": "PersistentVolumeClaim", "namespace": facts.scope.namespace, "name": name}
        running = _running_with(facts, name)
        if pvc is None:
            if running is not None:
                results.append(
                    ok(
                        subject,
                        f"pod {running.name} is Running with PVC {name} mounted, so it was bound when the pod "
                        "started (the PVC object itself is not in the snapshot)",
                    )
                )
                continue
            k = facts.known("PersistentVolumeClaim", name)
            if not k.absent:
                results.append(skip(f"PVC {name}: {k.reason}", subject))
                continue
            ev = [absence(f"PersistentVolumeClaim {name}", f"namespace {facts.scope.namespace}: {k.reason}")]
            if k.evidence:
                ev.append(k.evidence)
            results.append(fail(subject, ev, f"the pods mount PVC {name}, which does not exist ({k.reason})"))
            continue
        phase = pvc.status.get("phase")
        if phase == "Bound":
            results.append(ok(pvc.subject(), f"PVC {name} is Bound"))
            continue
        if not phase:
            if running is not None:
                results.append(ok(pvc.subject(), f"pod {running.name} is Running with PVC {name} mounted"))
            else:
                results.append(skip(f"PVC {name} shows no status.phase", pvc.subject()))
            continue
        evidence = [field_ev(ref, "status.phase", phase)]
        detail = f"PVC {name} is {phase or 'not Bound'}"
        decisive = _claim_events(facts, name)
        if decisive:  # what the provisioner or the binder said, most repeated first: the cause in its own words
            f = decisive[0]
            times = f" ×{f['count']}" if f["count"] > 1 else ""
            detail += f": {f['reason']}{times}: {f['message'][:200]}"
            evidence = [event_ev(x) for x in decisive[:2]] + evidence
        cls = str(pvc.spec.get("storageClassName") or "")
        if cls and cls not in facts.scope.storageclasses:
            k = facts.known("StorageClass", cls)
            if k.absent:
                evidence.append(absence(f"StorageClass {cls}", "the list of storageclasses"))
                if not decisive:
                    detail += f"; its StorageClass {cls} does not exist ({k.reason})"
        results.append(fail(pvc.subject(), evidence, detail))
    return results


def _claim_events(facts: Facts, claim: str) -> list[dict[str, Any]]:
    """The Warning events of a PVC (ProvisioningFailed, FailedBinding…), the most repeated first."""
    from ckpt_doctor.scope import event_fields

    got = []
    for ev in facts.scope.events:
        f = event_fields(ev)
        if f["involvedKind"] == "PersistentVolumeClaim" and f["involvedName"] == claim and f["type"] == "Warning":
            got.append(f)
    return sorted(got, key=lambda f: (-f["count"], f["lastTimestamp"]), reverse=False)


def _running_with(facts: Facts, claim: str) -> Any:
    """A trainer pod that is Running with `claim` mounted: proof the claim was bound when it started."""
    for p in facts.scope.pods:
        if p.status.get("phase") != "Running":
            continue
        for v in p.spec.get("volumes") or []:
            if isinstance(v, dict) and (v.get("persistentVolumeClaim") or {}).get("claimName") == claim:
                return p
    return None
