"""What each step of the verify drill does (the runner calls one handler per playbook action).

Every handler reads first, builds its changes through drill/actions.py, lets the runner show and
confirm them, waits for what it expects, and verifies through the engine (drill/verify.py). In
--dry-run the same handlers run with every write left out: they record the kubectl lines of the plan,
with placeholders where the cluster state is not known yet.
"""

from __future__ import annotations

import copy
import re
from typing import Any

from ckpt_doctor.drill import marks, verify
from ckpt_doctor.drill.actions import CREATABLE, CREATE_ORDER, Actions, LogFollow, joined
from ckpt_doctor.drill.playbook import Step
from ckpt_doctor.drill.result import Command, StepResult
from ckpt_doctor.drill.runner import Drill, Failed, NotRun, Skip
from ckpt_doctor.errors import InputError
from ckpt_doctor.sources.live.client import Api, CallError
from ckpt_doctor.sources.live.kinds import DEPLOYMENT, TRAINER_DEPLOYMENT

CKPT_NAME = re.compile(r"^(?:checkpoint-\d+|iter_\d+|global_step\d+|step[-_]?\d+|ckpt[-_]\d+|epoch[-_=]?\d+.*)$")
POD = "<trainer pod>"
NODE = "<its node>"
OTHER = "<another node>"


# -- connecting and naming the target ------------------------------------------------------------------


def connect(d: Drill) -> None:
    from ckpt_doctor.sources.live import connect as live_connect
    from ckpt_doctor.sources.live import split_target

    o = d.opts
    tj_obj: dict[str, Any] | None = None
    if o.submit:
        tj_obj = _read_manifests(d)
    try:
        cluster = live_connect(o.namespace, o.context, o.kubeconfig, o.request_timeout)
    except InputError as e:
        if not o.dry_run:
            raise
        cluster = None
        d.result.notes.append(f"cluster not contacted ({e}): the plan shows placeholders for what it would read")
    default_ns = cluster.namespace if cluster is not None else (o.namespace or "default")
    if tj_obj is not None:
        meta = tj_obj.get("metadata") or {}
        ns = o.namespace or meta.get("namespace") or default_ns
        others = {
            (x.get("metadata") or {}).get("namespace")
            for x, _f in d.s.to_create
            if CREATABLE[x["kind"]].namespaced and (x.get("metadata") or {}).get("namespace")
        }
        if others - {ns}:
            raise InputError(f"the manifests name several namespaces ({', '.join(sorted(others | {ns}))}); "
                             "the drill works in one")
        d.ns, d.name = str(ns), str(meta.get("name"))
    else:
        d.ns, d.name = split_target(str(o.target), o.namespace, default_ns)
    d.result.target = {"kind": "TrainJob", "namespace": d.ns, "name": d.name}
    if cluster is not None:
        api = Api(cluster)
        try:  # one request, no retries: a cluster never reached is not a cluster lost
            _seen_cluster(d, cluster.server, api.version())
        except CallError as e:  # an answer, even a refusal, is a cluster: the steps say what they cannot read
            if e.kind in ("unreachable", "timeout") and o.dry_run:
                d.result.notes.append(f"cluster not reached ({e.message}): the plan shows placeholders for what it "
                                      "would read")
                return
            if e.kind in ("unreachable", "timeout"):
                raise InputError(f"cannot reach the cluster at {cluster.server}: {e.message}") from None
        d.s.cluster = cluster
        d.s.api = api
        d.actions = d.make_actions()


def _seen_cluster(d: Drill, server: str, version: str) -> None:
    """What the drill talks to: the sandbox says so in its version (ckpt_doctor.simulation), and every face of the
    drill then says `sandbox (simulated cluster)`."""
    from ckpt_doctor.simulation import simulated

    d.result.cluster = {"server": server, "serverVersion": version, "simulated": simulated(version)}


def connect_cleanup(d: Drill) -> None:
    """`drill --cleanup [[NS/]NAME]`: the namespace (and TrainJob) whose leftovers to undo."""
    from ckpt_doctor.sources.live import connect as live_connect
    from ckpt_doctor.sources.live import split_target

    o = d.opts
    cluster = live_connect(o.namespace, o.context, o.kubeconfig, o.request_timeout)
    if o.target:
        d.ns, d.name = split_target(o.target, o.namespace, cluster.namespace)
        d.result.target = {"kind": "TrainJob", "namespace": d.ns, "name": d.name}
    else:
        d.ns, d.name = o.namespace or cluster.namespace, ""
        d.result.target = {"kind": "Namespace", "namespace": d.ns, "name": d.ns}
    d.s.cluster = cluster
    d.s.api = Api(cluster)
    d.actions = d.make_actions()


def _read_manifests(d: Drill) -> dict[str, Any]:
    from ckpt_doctor.sources.manifests import load_manifests

    mset = load_manifests(list(d.opts.submit))
    d.s.manifests = mset
    objs = [o for o in mset.snapshot.objects if o.kind]
    tjs = [o for o in objs if o.kind == "TrainJob"]
    if len(tjs) != 1:
        found = ", ".join(o.name for o in tjs) or "none"
        raise InputError(f"--submit needs exactly one TrainJob among the manifests (found: {found})")
    unknown = sorted({o.kind for o in objs if o.kind not in CREATABLE})
    if unknown:
        raise InputError(
            f"the drill creates only {', '.join(CREATABLE)} objects; the manifests also hold {', '.join(unknown)}: "
            "apply those yourself first"
        )
    if mset.placeholders and not d.opts.dry_run:
        p = mset.placeholders[0]
        raise InputError(f"fill in the placeholder {p.text} first ({p.file}:{p.line})")
    ordered = sorted(objs, key=lambda o: CREATE_ORDER.index(o.kind))
    d.s.to_create = [(copy.deepcopy(o.raw), o.origin.file if o.origin else "-") for o in ordered]
    return copy.deepcopy(tjs[0].raw)


def _need_api(d: Drill) -> tuple[Api, Actions]:
    if d.s.api is None or d.actions is None:
        raise Skip("no cluster to run against")
    return d.s.api, d.actions


# -- preflight --------------------------------------------------------------------------------------------


def preflight(d: Drill, st: Step, sr: StepResult) -> None:
    problems: list[str] = []
    ok: list[str] = []
    if d.s.api is None:
        _preflight_offline(d, st, sr, problems, ok)
    else:
        _preflight_apis(d, sr, ok)
        tj = _preflight_target(d, sr)
        _preflight_version(d, sr, tj)
        _lint(d, st, sr, problems, ok)
        _preflight_pvc(d, sr, problems, ok)
        _preflight_rbac(d, sr, problems, ok)
        _preflight_nodes(d, sr, ok)
        _remember_before(d, tj)
    d.result.trainer_version = d.s.version
    if d.s.denied:
        raise InputError("; ".join([d.s.denied, *problems]))
    if problems:
        raise Failed("; ".join(problems))
    sr.observed = "; ".join(ok)


def _preflight_offline(d: Drill, st: Step, sr: StepResult, problems: list[str], ok: list[str]) -> None:
    if d.s.manifests is None:
        raise Skip("no cluster: nothing can be checked")
    _lint(d, st, sr, problems, ok)
    d.s.version = d.s.version or _version_from_manifests(d)
    sr.notes.append("RBAC, the PVC and the nodes are checked against the cluster, which was not contacted")


def _preflight_apis(d: Drill, sr: StepResult, ok: list[str]) -> None:
    api = d.s.api
    for group, version, plural, what in (
        ("trainer.kubeflow.org", "v1alpha1", "trainjobs", "Kubeflow Trainer"),
        ("jobset.x-k8s.io", "v1alpha2", "jobsets", "JobSet"),
    ):
        try:
            served = d.actions.call(f"discover {group}", lambda g=group, v=version: api.served(g, v))  # type: ignore[union-attr,misc]
        except CallError as e:
            if e.kind == "notfound":
                raise InputError(f"the cluster at {d.s.cluster.server} does not serve {group}/{version}: is {what} "
                                 "installed?") from None
            raise InputError(f"cannot read the {group} API: {e.kind}: {e.message}") from None
        if plural not in served:
            raise InputError(f"the cluster serves {group}/{version} but not {plural}: is {what} installed?")
        sr.evidence.append({"type": "field", "object": f"APIGroup/{group}", "path": f"{version}.resources",
                            "value": sorted(x for x in served if "/" not in x)})
    ok.append("the Trainer and JobSet APIs are served")


def _preflight_target(d: Drill, sr: StepResult) -> dict[str, Any] | None:
    _, act = _need_api(d)
    tj = act.trainjob()
    ref = f"TrainJob {d.ns}/{d.name}"
    if d.opts.submit:
        if tj is not None:
            raise InputError(f"{ref} already exists: attach to it (`ckpt-doctor drill {d.ns}/{d.name}`) or delete it "
                             "before submitting it again")
        return None
    if tj is None:
        raise InputError(f"{ref} not found; give NAMESPACE/NAME, or --submit the manifests")
    other = marks.drill_id(tj)
    if other:
        raise InputError(f"{ref} carries the marks of drill {other}, which did not finish: run "
                         f"`ckpt-doctor drill --cleanup -n {d.ns}` first")
    for c in (tj.get("status") or {}).get("conditions") or []:
        if c.get("type") in ("Complete", "Failed") and c.get("status") == "True":
            raise InputError(f"{ref} has finished ({c.get('type')}: {c.get('reason')}); the drill needs a running "
                             "TrainJob: --submit a new one")
    if (tj.get("spec") or {}).get("suspend"):
        raise InputError(f"{ref} is suspended; resume it first, the drill needs its trainer running")
    sr.evidence.append({"type": "field", "object": f"TrainJob/{d.ns}/{d.name}", "path": "spec.suspend",
                        "value": False})
    return tj


def _preflight_version(d: Drill, sr: StepResult, tj: dict[str, Any] | None) -> None:
    from ckpt_doctor.sources.live.collector import _image_version

    tag = ""
    if d.actions is not None:  # what the cluster reports wins over --trainer-version (contracts.md), as in diagnose
        try:
            dep = d.actions.get(DEPLOYMENT, TRAINER_DEPLOYMENT[1], TRAINER_DEPLOYMENT[0])
        except CallError:
            dep = None
        tag = _image_version(dep) if dep else ""
    d.s.version = _version_from_manifests(d, tj, tag)
    sr.evidence.append({"type": "field", "object": "Trainer", "path": "version", "value": d.s.version})
    if d.s.version_why:
        sr.notes.append(f"Trainer {d.s.version}: {d.s.version_why}")


def _version_from_manifests(d: Drill, tj: dict[str, Any] | None = None, cluster_tag: str = "") -> str:
    """The Trainer version by the one precedence (facts.versions.trainer_version): the controller's image tag
    (the cluster's record), else --trainer-version, else what the TrainJob's fields show, else the newest."""
    from ckpt_doctor.facts.versions import trainer_version
    from ckpt_doctor.scope import Scope
    from ckpt_doctor.snapshot import Obj, Snapshot

    raw = tj
    if raw is None and d.s.to_create:
        raw = next((x for x, _ in d.s.to_create if x.get("kind") == "TrainJob"), None)
    snap = Snapshot(source="live", meta={"cluster": {"trainerVersion": cluster_tag}} if cluster_tag else {})
    v = trainer_version(Scope(snap=snap, trainjob=Obj(raw) if raw else None), d.opts.trainer_version)
    d.s.version_why = v.why
    return v.version


def _lint(d: Drill, st: Step, sr: StepResult, problems: list[str], ok: list[str]) -> None:
    """The preflight rules over the manifests (submit) or the live TrainJob (attach)."""
    if d.s.manifests is not None:
        from ckpt_doctor.lint import lint_manifests

        mset = d.s.manifests
        _add_cluster_runtime(d)
        res = lint_manifests(mset, d.opts.trainer_version or d.s.version)
        findings = res.diagnosis.findings
        unit = next((u for u in res.units if u.facts.scope.trainjob is not None), None)
        if unit is not None:
            facts = unit.facts
            _learn_trainer(d, facts)
        where = "the manifests"
    else:
        diag = d.diagnose()
        findings = diag.findings
        _learn_trainer(d, diag.facts)
        if not d.opts.trainer_version and d.s.version is None:
            d.s.version = diag.facts.version.version
        where = f"TrainJob {d.ns}/{d.name}"
    rules = set(st.on_fail)
    failing = [f for f in findings if f.status == "fail" and f.rule.id in rules]
    for f in failing:
        sr.evidence.append({"type": "text", "text": f"{f.rule.id}: {f.result.detail or f.rule.title}"})
        sr.evidence += f.result.evidence[:2]
    if failing:
        ids = ", ".join(dict.fromkeys(f.rule.id for f in failing))
        problems.append(f"{where} fail rules that predict a failed resume: {ids}")
        sr.diagnosis = {
            "verdict": [],
            "findings": [{"rule": f.rule.id, "kind": f.rule.kind, "severity": f.rule.severity, "title": f.rule.title,
                          **({"detail": f.result.detail} if f.result.detail else {}), "fix": f.result.fix or f.rule.fix}
                         for f in failing],
        }
        d.console.diagnosis(st, verify.summary_lines(sr.diagnosis))
    else:
        judged = sum(1 for f in findings if f.rule.id in rules and f.status == "pass")
        ok.append(f"{where}: the {judged} resume rules that could be judged pass")


def _add_cluster_runtime(d: Drill) -> None:
    """A TrainJob among the manifests whose runtime is not: lint it with the cluster's runtime."""
    from ckpt_doctor.scope import runtime_ref
    from ckpt_doctor.snapshot import Obj, Origin
    from ckpt_doctor.sources.live.kinds import runtime_kind

    mset = d.s.manifests
    if mset is None or d.actions is None:
        return
    tj = next(o for o in mset.snapshot.objects if o.kind == "TrainJob")
    name, kind, _ = runtime_ref(tj)
    if not name or mset.snapshot.get(kind, name) is not None:
        return
    try:
        rt = d.actions.get(runtime_kind(kind), name, d.ns)
    except CallError:
        rt = None
    if rt is not None:
        mset.snapshot.add(Obj(rt, Origin(f"cluster {kind}/{name}")))


def _learn_trainer(d: Drill, facts: Any) -> None:
    tjob = facts.trainer_job
    if tjob is not None and tjob.name:
        d.s.rjob = tjob.name
    d.s.trainer_jobs = {*facts.scope.trainer_job_names(), d.s.rjob}
    if facts.ckpt_dir is not None and facts.ckpt_dir.path:
        d.s.ckpt_dir = facts.ckpt_dir.path
    trainer = ((facts.scope.trainjob.spec if facts.scope.trainjob is not None else {}).get("trainer")) or {}
    try:
        d.s.num_nodes = max(1, int(trainer.get("numNodes") or 1))
    except (TypeError, ValueError):
        d.s.num_nodes = 1


def _pvc_claims(d: Drill) -> list[str]:
    from ckpt_doctor.facts.overrides import find_trainer_job
    from ckpt_doctor.snapshot import Obj

    claims: list[str] = []
    runtime = None
    if d.s.manifests is not None:
        runtime = next((o for o in d.s.manifests.snapshot.objects if o.kind in ("TrainingRuntime",
                                                                                 "ClusterTrainingRuntime")), None)
    elif d.s.diag is not None:
        runtime = d.s.diag.facts.scope.runtime
    tjob = find_trainer_job(runtime if isinstance(runtime, Obj) else None)
    specs = [tjob.pod_spec] if tjob is not None else []
    tj = None
    if d.s.manifests is not None:
        tj = next((o.raw for o in d.s.manifests.snapshot.objects if o.kind == "TrainJob"), None)
    elif d.s.diag is not None and d.s.diag.facts.scope.trainjob is not None:
        tj = d.s.diag.facts.scope.trainjob.raw
    for field in marks.OVERRIDE_FIELDS:
        for ov in ((tj or {}).get("spec") or {}).get(field) or []:
            specs.append(_override_pod(ov) if isinstance(ov, dict) else {})
    for spec in specs:
        for v in spec.get("volumes") or []:
            claim = ((v or {}).get("persistentVolumeClaim") or {}).get("claimName")
            if claim and claim not in claims:
                claims.append(str(claim))
    return claims


def _override_pod(ov: dict[str, Any]) -> dict[str, Any]:
    if "trainingRuntimeSpec" in ov:
        rjs = ((((ov.get("trainingRuntimeSpec") or {}).get("template") or {}).get("spec")) or {}).get("replicatedJobs")
        vols: list[Any] = []
        for rj in rjs or []:
            pod = ((((rj or {}).get("template") or {}).get("spec") or {}).get("template") or {}).get("spec") or {}
            vols += pod.get("volumes") or []
        return {"volumes": vols}
    if "spec" in ov:
        return ov.get("spec") or {}
    return ov


def _preflight_pvc(d: Drill, sr: StepResult, problems: list[str], ok: list[str]) -> None:
    from ckpt_doctor.sources.live.kinds import PVC

    claims = _pvc_claims(d)
    if not claims:
        sr.notes.append("the trainer mounts no PVC (the rules above judge whether that loses its checkpoints)")
        return
    in_files = {str((x.get("metadata") or {}).get("name")) for x, _ in d.s.to_create if x["kind"] ==
                "PersistentVolumeClaim"}
    for claim in claims:
        pvc = d.actions.get(PVC, claim, d.ns)  # type: ignore[union-attr]
        if pvc is None:
            if claim in in_files:
                sr.notes.append(f"PVC {claim} is among the manifests: submit creates it")
                continue
            problems.append(f"PVC {claim} does not exist in {d.ns}")
            sr.evidence.append({"type": "absence", "what": f"PersistentVolumeClaim {claim}", "where": d.ns})
            continue
        phase = (pvc.get("status") or {}).get("phase")
        modes = list((pvc.get("spec") or {}).get("accessModes") or [])
        sr.evidence.append({"type": "field", "object": f"PersistentVolumeClaim/{d.ns}/{claim}", "path": "status.phase",
                            "value": phase})
        if phase != "Bound":
            problems.append(f"PVC {claim} is {phase or 'not Bound'}")
        if d.s.num_nodes > 1 and "ReadWriteMany" not in modes:
            problems.append(f"PVC {claim} is {'/'.join(modes) or 'without access modes'} but numNodes is "
                            f"{d.s.num_nodes}: several nodes need ReadWriteMany")
        elif phase == "Bound":
            ok.append(f"PVC {claim} is Bound ({'/'.join(modes)}, numNodes {d.s.num_nodes})")


def _whens(d: Drill) -> set[str]:
    w = {"delete"} if d.opts.crash == "delete" else {"kill"}
    if d.opts.submit:
        w.add("submit")
        if any(x["kind"] == "ClusterTrainingRuntime" for x, _ in d.s.to_create):
            w.add("submit-cluster")
    if d.opts.cross_node == "cordon" and "cross-node" in d.chosen:
        w.add("cordon")
    return w


def _preflight_rbac(d: Drill, sr: StepResult, problems: list[str], ok: list[str]) -> None:
    from ckpt_doctor.commands.rbac import drill_needs, review

    needs = drill_needs(_whens(d))
    if d.opts.dry_run:
        rows = sorted({f"{n.verb} {n.resource}" for n in needs if n.role == "drill"})
        sr.notes.append("--dry-run does not ask the cluster about permissions (it takes a POST); the drill would "
                        f"check: {', '.join(rows)}")
        return
    answers = review(d.s.api, needs, d.ns)
    for n, a in answers:
        d.s.allowed[f"{n.verb} {n.resource}"] = a
    missing = [n for n, a in answers if a is not True and not n.optional]
    listing = review(d.s.api, [n for n in _listing_need()], d.ns)
    for n, a in listing:
        d.s.allowed[f"{n.verb} {n.resource}"] = a
    if missing:  # the drill cannot run: an error before any change, not a verdict on the job
        rows = ", ".join(f"{n.verb} {n.resource}" for n in missing)
        sr.evidence += [{"type": "absence", "what": f"permission to {n.verb} {n.resource}", "where": d.ns}
                        for n in missing]
        d.s.denied = f"the identity may not: {rows} (`ckpt-doctor rbac --drill` prints the Roles)"
    else:
        ok.append(f"all {len(answers)} permissions the drill needs are allowed")


def _listing_need() -> list[Any]:
    from ckpt_doctor.commands.rbac import DRILL

    return [n for n in DRILL if n.when == "listing"]


def _preflight_nodes(d: Drill, sr: StepResult, ok: list[str]) -> None:
    act = d.actions
    try:
        nodes = act.nodes()  # type: ignore[union-attr]
    except CallError as e:
        sr.notes.append(f"cannot list nodes ({e.kind}): the cross-node step will pick its node when it runs")
        return
    mine = [n for n in nodes if (marks.annotations(n).get(marks.FOR) == f"{d.ns}/{d.name}")]
    if mine:
        names = ", ".join(str(n["metadata"]["name"]) for n in mine)
        raise InputError(f"node(s) {names} carry the marks of an earlier drill of {d.ns}/{d.name}: run "
                         f"`ckpt-doctor drill --cleanup -n {d.ns}` first")
    d.s.before["nodes"] = {
        str(n["metadata"]["name"]): {"unschedulable": bool((n.get("spec") or {}).get("unschedulable")),
                                     "annotations": marks.annotations(n)}
        for n in nodes
    }
    template = _trainer_template(d)
    d.s.node_pool = [n for n in nodes if fits(n, template)]
    if "cross-node" not in d.chosen:
        return
    if len(d.s.node_pool) >= 2:
        ok.append(f"{len(d.s.node_pool)} schedulable nodes fit the trainer")
    else:
        sr.notes.append(f"{len(d.s.node_pool)} schedulable node(s) fit the trainer: the cross-node step needs another "
                        "and will be skipped")


def _trainer_template(d: Drill) -> dict[str, Any]:
    """The trainer's pod spec: the running pod's, else the runtime's."""
    if d.s.api is not None and not d.opts.submit:
        pod = verify.rank0(d.actions.pods(), d.s.trainer_jobs)  # type: ignore[union-attr]
        if pod is not None:
            return pod.get("spec") or {}
    if d.s.diag is not None and d.s.diag.facts.intended is not None:
        return d.s.diag.facts.intended.pod_spec
    if d.s.manifests is not None:
        from ckpt_doctor.facts.overrides import find_trainer_job

        rt = next((o for o in d.s.manifests.snapshot.objects if o.kind.endswith("TrainingRuntime")), None)
        tjob = find_trainer_job(rt)
        if tjob is not None:
            return tjob.pod_spec
    return {}


def _gpu_requests(spec: dict[str, Any]) -> dict[str, float]:
    out: dict[str, float] = {}
    for c in spec.get("containers") or []:
        res = (c or {}).get("resources") or {}
        for k, v in {**(res.get("limits") or {}), **(res.get("requests") or {})}.items():
            if "/" in k:
                try:
                    out[k] = out.get(k, 0) + float(v)
                except (TypeError, ValueError):
                    continue
    return out


def fits(node: dict[str, Any], spec: dict[str, Any]) -> bool:
    """Schedulable, Ready, matching the trainer's nodeSelector, tolerating its taints, with its extended resources."""
    nspec, status = node.get("spec") or {}, node.get("status") or {}
    if nspec.get("unschedulable"):
        return False
    ready = next((c for c in status.get("conditions") or [] if (c or {}).get("type") == "Ready"), None)
    if ready is None or ready.get("status") != "True":
        return False
    labels = ((node.get("metadata") or {}).get("labels")) or {}
    sel = {k: v for k, v in (spec.get("nodeSelector") or {}).items() if k != marks.HOSTNAME}
    if any(labels.get(k) != v for k, v in sel.items()):
        return False
    tolerations = spec.get("tolerations") or []
    for t in nspec.get("taints") or []:
        if (t or {}).get("effect") not in ("NoSchedule", "NoExecute"):
            continue
        if not any(_tolerates(tol or {}, t) for tol in tolerations):
            return False
    alloc = status.get("allocatable") or {}
    for k, need in _gpu_requests(spec).items():
        try:
            if float(alloc.get(k, 0)) < need:
                return False
        except (TypeError, ValueError):
            return False
    return True


def _tolerates(tol: dict[str, Any], taint: dict[str, Any]) -> bool:
    if tol.get("effect") and tol.get("effect") != taint.get("effect"):
        return False
    if tol.get("operator") == "Exists":
        return not tol.get("key") or tol.get("key") == taint.get("key")
    return tol.get("key") == taint.get("key") and tol.get("value") == taint.get("value")


def _remember_before(d: Drill, tj: dict[str, Any] | None) -> None:
    if tj is not None:
        d.s.before["trainjob"] = {"spec": copy.deepcopy(tj.get("spec") or {}), "annotations": marks.annotations(tj)}


# -- submit / attach ----------------------------------------------------------------------------------------


def submit(d: Drill, st: Step, sr: StepResult) -> None:
    if d.opts.submit:
        _create(d, st, sr)
    if d.opts.dry_run:
        sr.commands.append(Command(f"kubectl -n {d.ns} get pods -l jobset.sigs.k8s.io/jobset-name={d.name} -w",
                                   "read: wait for the trainer pod to run"))
        return
    act = d.actions
    assert act is not None
    pod = d.wait(st, "for the trainer pod to run", lambda: _running_trainer(d, sr))
    sr.evidence.append(_pod_ev(pod, "status.phase", "Running"))
    d.s.resumed_from = None
    diag = d.diagnose()
    _learn_trainer(d, diag.facts)
    if d.s.version is None:
        d.s.version = diag.facts.version.version
        d.s.version_why = diag.facts.version.why
    d.result.trainer_version = d.s.version
    f = next((x for x in diag.findings if x.rule.id == "overrides-not-applied"), None)
    where = f"{verify.pod_name(pod)} on node {verify.node_of(pod)}"
    if f is not None and f.status == "fail":
        raise Failed(f"the trainer pod does not run what spec.trainer asks: {f.result.detail or f.rule.title}",
                     f.result.evidence)
    if f is not None and f.status == "not_evaluated":
        sr.notes.append(f"overrides not compared: {f.result.reason}")
    verb = "submitted" if d.opts.submit else "attached to"
    sr.observed = f"{verb} TrainJob {d.ns}/{d.name}: its trainer {where} runs what spec.trainer asks"


def _create(d: Drill, st: Step, sr: StepResult) -> None:
    act = d.actions
    for obj, file in d.s.to_create:
        kind = CREATABLE[obj["kind"]]
        name = str((obj.get("metadata") or {}).get("name"))
        if act is not None and obj["kind"] != "TrainJob":
            existing = act.get(kind, name, d.ns if kind.namespaced else None)
            if existing is not None:
                sr.notes.append(f"{obj['kind']} {name} exists already: left as it is (not created, not deleted)")
                continue
        if act is None:
            line = f"kubectl{'' if not kind.namespaced else f' -n {d.ns}'} create -f {file}"
            sr.commands.append(Command(f"{line}  # {obj['kind']} {name}", f"create {obj['kind']} {name}"))
            continue
        ch = act.create(obj, file)
        try:
            d.change(st, sr, ch)
        except CallError as e:
            if obj["kind"] == "TrainJob" and (e.kind == "bad" or "admission webhook" in e.message):
                raise Failed(f"the API server rejected the TrainJob: {e.message} (`ckpt-doctor explain-error` "
                             "matches it to a rule)", [{"type": "text", "text": e.message}]) from None
            raise


def _running_trainer(d: Drill, sr: StepResult) -> dict[str, Any] | None:
    act = d.actions
    assert act is not None
    tj = act.trainjob()
    if tj is None:
        raise NotRun(f"TrainJob {d.ns}/{d.name} is gone (deleted during the drill?)")
    _fail_if_finished(d, tj)
    pods = act.pods()
    pod = verify.rank0(pods, d.s.trainer_jobs)
    if pod is not None and verify.running(pod):
        return pod
    return None


def _fail_if_finished(d: Drill, tj: dict[str, Any]) -> None:
    for c in (tj.get("status") or {}).get("conditions") or []:
        if c.get("type") in ("Failed", "Complete") and c.get("status") == "True":
            ev = {"type": "condition", "object": f"TrainJob/{d.ns}/{d.name}", "conditionType": c.get("type"),
                  "status": "True", "reason": c.get("reason", ""), "message": c.get("message", "")}
            raise Failed(f"the TrainJob is {c.get('type')} ({c.get('reason')}: {c.get('message')})", [ev])


def _pod_ev(pod: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    meta = pod.get("metadata") or {}
    return {"type": "field", "object": f"Pod/{meta.get('namespace')}/{meta.get('name')}", "path": path,
            "value": value}


# -- first checkpoint ---------------------------------------------------------------------------------------


def _sigs(d: Drill) -> list[Any]:
    from ckpt_doctor.facts.logs import load_signatures

    if not hasattr(d, "_sigs"):
        d._sigs = load_signatures(list(d.opts.signatures))  # type: ignore[attr-defined]
    return d._sigs  # type: ignore[attr-defined]


def read_trainer(d: Drill, pod: dict[str, Any]) -> verify.Reading:
    """The trainer's current log, read as the engine reads it. A log that cannot be read is not an empty one:
    the wait that depends on it then ends as NotRun, not as a failure (`State.blocked`)."""
    act = d.actions
    assert act is not None
    res = act.log_result(verify.pod_name(pod), verify.container(pod))
    if res.content is None and res.gap:
        d.s.blocked = f"the trainer's log could not be read ({res.gap})"
    elif res.content is not None:
        d.s.blocked = None
    return verify.read(pod, res.content or b"", _sigs(d), d.ns)


def first_checkpoint(d: Drill, st: Step, sr: StepResult) -> None:
    if d.opts.dry_run:
        sr.commands.append(Command(f"kubectl -n {d.ns} logs -f {_pod_hint(d)} -c node", "read: watch for a save line"))
        if st.param("listDirectory", True):
            sr.commands.append(Command(f"kubectl -n {d.ns} exec {_pod_hint(d)} -c node -- ls -1 "
                                       f"{d.s.ckpt_dir or '<checkpoint dir>'}", "read: list the checkpoint directory"))
        return
    # the listing is optional: unknown permission (no preflight) is tried, and a refusal costs a note; but when
    # the log shows no save either, a step that could look at only one of its two sources proves nothing
    wanted = bool(st.param("listDirectory", True))
    if wanted and d.s.allowed.get("create pods/exec") is False:
        sr.notes.append("the checkpoint directory is not listed: the identity may not exec into the trainer pod")
    polls = {"n": 0}

    def saved() -> tuple[dict[str, Any], verify.Reading, list[str]] | None:
        pod = _running_trainer(d, sr)
        if pod is None:
            return None
        reading = read_trainer(d, pod)
        d.console.log_tail(st, reading.tail())
        if reading.last_save is not None:
            return pod, reading, []
        listing = wanted and d.s.allowed.get("create pods/exec") is not False
        polls["n"] += 1
        if listing and d.s.ckpt_dir and polls["n"] % 5 == 1:
            names = _list_dir(d, pod, d.s.ckpt_dir, sr)
            if names:
                return pod, reading, names
        if wanted and d.s.blocked is None and d.s.allowed.get("create pods/exec") is False:
            d.s.blocked = ("no save line in the trainer's log, and the checkpoint directory could not be listed "
                           f"({d.s.exec_refused or 'exec into the trainer pod is not allowed'})")
        elif wanted and d.s.blocked is None and not d.s.ckpt_dir:
            d.s.blocked = "no save line in the trainer's log, and its checkpoint directory is not known"
        return None

    pod, reading, names = d.wait(st, "for the first complete save", saved)
    save = reading.last_save
    if save is not None:
        d.s.floor = save.step
        sr.evidence.append(reading.evidence(save))
        sr.observed = f"step {save.step} saved completely ({save.text.strip()[:120]})"
    else:
        d.s.floor = max((_step_of(n) or 0) for n in names) or None
        sr.observed = f"no save line, but {d.s.ckpt_dir} holds {', '.join(names[-3:])}"
    if wanted and d.s.allowed.get("create pods/exec") is not False and d.s.ckpt_dir and not names:
        names = _list_dir(d, pod, d.s.ckpt_dir, sr)
    if names:
        sr.evidence.append({"type": "field", "object": f"Pod/{d.ns}/{verify.pod_name(pod)}",
                            "path": f"ls {d.s.ckpt_dir}", "value": names[-10:]})
        sr.commands.append(Command(f"kubectl -n {d.ns} exec {verify.pod_name(pod)} -c {verify.container(pod)} -- "
                                   f"ls -1 {d.s.ckpt_dir}", "read: list the checkpoint directory", "done"))


def _step_of(name: str) -> int | None:
    m = re.search(r"(\d+)", name)
    return int(m.group(1)) if m else None


def _list_dir(d: Drill, pod: dict[str, Any], path: str, sr: StepResult) -> list[str]:
    act = d.actions
    assert act is not None
    try:
        rc, out = act.exec(pod, verify.container(pod), ["ls", "-1", path], 20)
    except CallError as e:
        sr.notes.append(f"could not list {path} ({e.kind}: {e.message})")
        if e.kind in ("forbidden", "notfound", "unauthorized", "bad"):  # refused: not asked again
            d.s.allowed["create pods/exec"] = False
            d.s.exec_refused = f"{e.kind}: {e.message}"
        return []
    if rc is None:
        sr.notes.append(f"listing {path} did not finish within 20 s")
        return []
    if rc != 0:
        return []
    names = [n.strip() for n in out.splitlines() if CKPT_NAME.match(n.strip())]
    return sorted(names, key=lambda n: (_step_of(n) or 0, n))


def _pod_hint(d: Drill) -> str:
    if d.s.api is not None and d.actions is not None and not d.opts.submit:
        pod = verify.rank0(d.actions.pods(), d.s.trainer_jobs)
        if pod is not None:
            return verify.pod_name(pod)
    return POD


# -- the interruptions ---------------------------------------------------------------------------------------


def _before_interruption(d: Drill, st: Step, sr: StepResult) -> tuple[dict[str, Any], verify.Reading]:
    """The running trainer, after a complete save newer than where its attempt began: a save line in its log, or
    (HF Trainer logs none by default) two checkpoint directories newer than that in its checkpoint directory,
    the newest of which may still be being written."""
    after = d.s.resumed_from if d.s.resumed_from is not None else -1
    polls = {"n": 0}
    listed: dict[str, Any] = {}

    def fresh() -> tuple[dict[str, Any], verify.Reading] | None:
        pod = _running_trainer(d, sr)
        if pod is None:
            return None
        reading = read_trainer(d, pod)
        d.console.log_tail(st, reading.tail())
        save = reading.last_save
        if not st.param("freshSave", True) or (save is not None and (save.step or 0) > after):
            return pod, reading
        polls["n"] += 1
        if d.s.ckpt_dir and d.s.allowed.get("create pods/exec") is not False and polls["n"] % 5 == 1:
            steps = sorted(s for s in (_step_of(n) for n in _list_dir(d, pod, d.s.ckpt_dir, sr)) if s is not None)
            if len(steps) >= 2 and steps[-2] > after:
                listed.update(step=steps[-2], names=steps[-3:], pod=pod)
                return pod, reading
        return None

    what = "for the trainer to run" if not st.param("freshSave", True) else (
        "for a complete save newer than the one this attempt resumed from")
    try:
        pod, reading = d.wait(st, what, fresh)
    except Failed as e:  # nothing was interrupted yet: the step could not run, the job did not fail it
        raise NotRun(f"{e.why}, before interrupting anything") from None
    save = reading.last_save
    if save is not None and (save.step or 0) > after:
        d.s.floor = max(d.s.floor or 0, save.step or 0)
        sr.evidence.append(reading.evidence(save))
    elif listed:
        d.s.floor = max(d.s.floor or 0, listed["step"])
        sr.evidence.append({"type": "field", "object": f"Pod/{d.ns}/{verify.pod_name(pod)}",
                            "path": f"ls {d.s.ckpt_dir}", "value": [f"…{n}" for n in listed["names"]]})
    _record(d, pod, reading.content)
    return pod, reading


def _record(d: Drill, pod: dict[str, Any], content: bytes) -> None:
    if content:
        d.s.recorded[verify.pod_name(pod)] = (pod, content)


def _attempt_line(floor: int | None) -> str:
    return f"the last complete save before it was step {floor}" if floor is not None else "no save was seen before it"


def verify_resume(d: Drill, st: Step, sr: StepResult, what: str, pod: dict[str, Any]) -> verify.Verdict:
    """The engine's reading of the new trainer's attempt, judged against the last complete save (the floor)."""
    diag = d.diagnose()
    v = verify.newest_attempt(diag, verify.pod_name(pod))
    floor = d.s.floor
    if v.event is not None:
        sr.evidence.append(v.event)
    n = v.attempt if v.attempt is not None else "?"
    if v.kind == "fresh":
        raise Failed(f"attempt {n} started from step 0 after the {what}; {_attempt_line(floor)}")
    if v.kind != "resumed":
        gaps = [g for g in diag.facts.scope.snap.not_collected if "log" in g.what or "pod" in g.what]
        if gaps:  # the engine could not read how it began: unknown, not a failure of the job
            raise NotRun(f"attempt {n} after the {what}: how it began could not be read ({gaps[0].what}: "
                         f"{gaps[0].reason})")
        raise Failed(f"attempt {n} after the {what}: its log does not say how it began ({v.kind})")
    if v.step is None:
        raise Failed(f"attempt {n} resumed after the {what}, but its log does not say from which step; "
                     f"{_attempt_line(floor)}")
    if floor is not None and v.step < floor:
        raise Failed(f"attempt {n} resumed from step {v.step} after the {what}, older than the last complete save, "
                     f"step {floor}")
    d.s.resumed_from = v.step
    d.s.floor = v.step
    return v


def _new_attempt(d: Drill, sr: StepResult, old: dict[str, Any], in_place_ok: bool) -> dict[str, Any] | None:
    act = d.actions
    assert act is not None
    tj = act.trainjob()
    if tj is None:
        raise NotRun(f"TrainJob {d.ns}/{d.name} is gone (deleted during the drill?)")
    _fail_if_finished(d, tj)
    pod = verify.rank0(act.pods(), d.s.trainer_jobs)
    if pod is None or not verify.running(pod):
        return None
    if verify.uid(pod) != verify.uid(old) or (in_place_ok and verify.restarts(pod) > verify.restarts(old)):
        return pod
    return None


def _began(d: Drill, st: Step, pod: dict[str, Any]) -> verify.Reading | None:
    reading = read_trainer(d, pod)
    d.console.log_tail(st, reading.tail())
    return reading if reading.began()[0] != "unknown" else None


def crash(d: Drill, st: Step, sr: StepResult) -> None:
    if d.opts.dry_run:
        pod = _pod_hint(d)
        if d.opts.crash == "kill":
            line = f"kubectl -n {d.ns} exec {pod} -c node -- kill 1"
        else:
            line = f"kubectl -n {d.ns} delete pod {pod}"
        sr.commands.append(Command(line, "crash the trainer"))
        sr.commands.append(Command(f"kubectl -n {d.ns} get jobset {d.name} -o jsonpath='{{.status.restarts}}'",
                                   "read: watch the JobSet restart it"))
        return
    act = d.actions
    assert act is not None
    pod, reading = _before_interruption(d, st, sr)
    js = act.jobset() or {}
    restarts_before = int((js.get("status") or {}).get("restarts") or 0)
    if d.opts.crash == "kill":
        ch = act.kill_pid1(pod, verify.container(pod))
        d.change(st, sr, ch)
        rc, out = ch.result
        if rc not in (0, None):
            raise NotRun(f"`kill 1` in {verify.pod_name(pod)} failed (exit {rc}): {out.strip()[:200]}")
    else:
        d.change(st, sr, act.delete_pod(pod))
    grace = int((pod.get("spec") or {}).get("terminationGracePeriodSeconds") or 30)
    limit = d.clock.monotonic() + grace + 30 if d.opts.crash == "kill" else None

    def new() -> dict[str, Any] | None:
        got = _new_attempt(d, sr, pod, in_place_ok=True)
        if got is None and d.opts.crash == "kill":
            fresh_old = next((p for p in act.pods() if verify.uid(p) == verify.uid(pod)), None)
            if fresh_old is not None:
                _record(d, fresh_old, read_trainer(d, fresh_old).content)
        return got

    try:
        newpod = d.wait(st, "for the next attempt to start", new, until=limit)
    except Failed:
        if d.opts.crash == "kill":
            raise Failed(f"PID 1 in {verify.pod_name(pod)} did not exit on SIGTERM within {grace + 30} s: a shell as "
                         "PID 1 ignores it and never passes it on") from None
        raise
    d.wait(st, "for the new attempt to log how it began", lambda: _began(d, st, newpod))
    js = act.jobset() or {}
    restarts = int((js.get("status") or {}).get("restarts") or 0)
    sr.evidence.append({"type": "field", "object": f"JobSet/{d.ns}/{d.name}", "path": "status.restarts",
                        "value": restarts})
    v = verify_resume(d, st, sr, "crash", newpod)
    if restarts > restarts_before:
        how = f"the JobSet restarted it ({restarts_before} → {restarts})"
    elif verify.uid(newpod) == verify.uid(pod):
        how = "its container restarted in place"
    else:
        how = "a new pod replaced it"
    last = reading.last_save.step if reading.last_save else (d.s.floor if d.s.floor is not None else "?")
    sr.observed = f"{how}; attempt {v.attempt} resumed from step {v.step} (the last complete save was step {last})"


def _exit_codes() -> tuple[dict[str, int], Any]:
    """Exit codes by pod name, and the watch callback that fills them (drill/actions.PodWatch)."""
    codes: dict[str, int] = {}

    def see(p: dict[str, Any]) -> None:
        code = verify.exit_code(p)
        if code is not None:
            codes[verify.pod_name(p)] = code

    return codes, see


def _wait_gone(d: Drill, st: Step, sr: StepResult, old: dict[str, Any], codes: dict[str, int],
               follow: LogFollow | None = None, base: bytes = b"") -> dict[str, Any]:
    """Wait until the TrainJob's pods are gone; keep the old trainer's log meanwhile (`base`, read once, continued
    by `follow`; polled when following failed). Returns what was seen; `codes` are the exit codes a pod watch saw
    (both were started before the change that stops the pods)."""
    act = d.actions
    assert act is not None
    seen: dict[str, Any] = {"codes": codes, "start": d.clock.monotonic()}

    def gone() -> bool | None:
        pods = act.pods()
        for p in pods:
            code = verify.exit_code(p)
            if code is not None:
                seen["codes"][verify.pod_name(p)] = code
            if verify.uid(p) == verify.uid(old) and (follow is None or follow.error is not None):
                content = act.log(verify.pod_name(p), verify.container(p)) or b""
                kept = d.s.recorded.get(verify.pod_name(p), ({}, b""))[1]
                _record(d, p, content if len(content) >= len(kept) else kept)
        if any(not _is_suspended_leftover(p) for p in pods):
            return None
        js = act.jobset() or {}
        active = sum(int((r or {}).get("active") or 0) for r in (js.get("status") or {}).get("replicatedJobsStatus")
                     or [])
        return True if active == 0 else None

    d.wait(st, "for the TrainJob's pods to go", gone)
    seen["seconds"] = d.clock.monotonic() - seen["start"]
    if follow is not None and follow.error is None:
        follow.done.wait(max(0.0, min(5.0, d.deadline - d.clock.monotonic())))  # its last lines, then it ends
        kept = d.s.recorded.get(verify.pod_name(old), ({}, b""))[1]
        merged = joined(base, bytes(follow.data))
        _record(d, old, merged if len(merged) >= len(kept) else kept)
    sr.evidence.append({"type": "field", "object": f"TrainJob/{d.ns}/{d.name}", "path": "pods gone after (s)",
                        "value": round(seen["seconds"], 2)})
    rec = d.s.recorded.get(verify.pod_name(old))
    if rec is not None:
        reading = verify.read(rec[0], rec[1], _sigs(d), d.ns)
        if reading.last_save is not None and (reading.last_save.step or 0) > (d.s.floor or -1):
            d.s.floor = reading.last_save.step
            sr.evidence.append(reading.evidence(reading.last_save))
        flush = reading.run.log.of("sigterm_flush") if reading.run.log is not None else []
        seen["flush"] = flush[-1] if flush else None
    return seen


def _is_suspended_leftover(p: dict[str, Any]) -> bool:
    """A finished pod (a completed initializer's): suspending leaves it, and it runs nothing."""
    phase = (p.get("status") or {}).get("phase")
    return phase in ("Succeeded", "Failed") and not verify.terminating(p)


def _sigkill_check(d: Drill, sr: StepResult, old: dict[str, Any], seen: dict[str, Any]) -> str | None:
    code = seen["codes"].get(verify.pod_name(old))
    grace = (old.get("spec") or {}).get("terminationGracePeriodSeconds")
    if code == 137:
        sr.evidence.append(_pod_ev(old, f"status.containerStatuses[name={verify.container(old)}].state.terminated"
                                        ".exitCode", 137))
        return (f"the trainer was SIGKILLed (exit 137) at the end of its grace period ({grace} s) instead of "
                "exiting on SIGTERM: no final save")
    if code is None:
        sr.notes.append("how the old trainer container ended was not seen (its pod went before its status said)")
    return None


def suspend_resume(d: Drill, st: Step, sr: StepResult) -> None:
    act = d.actions
    if d.opts.dry_run or act is None:
        _plan_suspend(d, sr, True)
        sr.commands.append(Command(f"kubectl -n {d.ns} get pods -l jobset.sigs.k8s.io/jobset-name={d.name} -w",
                                   "read: wait until the pods are gone"))
        _plan_suspend(d, sr, False)
        return
    pod, _ = _before_interruption(d, st, sr)
    codes, see = _exit_codes()
    with act.watch_pods(see) as watch, act.follow_log(pod, verify.container(pod)) as follow:
        base = act.log(verify.pod_name(pod), verify.container(pod)) or b""
        d.change(st, sr, act.suspend(True))
        seen = _wait_gone(d, st, sr, pod, codes, follow, base)
    if watch.note:
        sr.notes.append(watch.note)
    killed = _sigkill_check(d, sr, pod, seen)
    d.change(st, sr, act.suspend(False))
    newpod = d.wait(st, "for the resumed trainer to run", lambda: _new_attempt(d, sr, pod, in_place_ok=False))
    d.wait(st, "for the new attempt to log how it began", lambda: _began(d, st, newpod))
    v = verify_resume(d, st, sr, "suspend and resume", newpod)
    if killed:
        raise Failed(f"{killed}; attempt {v.attempt} then resumed from step {v.step}")
    final = " after a final save on SIGTERM" if seen.get("flush") is not None else ""
    sr.observed = (f"the pods went in {seen['seconds']:.1f} s{final}; attempt {v.attempt} resumed from step {v.step}"
                   f" on {verify.node_of(newpod)}")


def _plan_suspend(d: Drill, sr: StepResult, value: bool) -> None:
    if d.actions is not None:
        ch = d.actions.suspend(value)
        sr.commands += [Command(line, ch.does) for line in ch.kubectl]
        return
    sr.commands.append(Command(f"kubectl -n {d.ns} patch trainjob/{d.name} --type=merge -p "
                               f"'{{\"spec\":{{\"suspend\":{str(value).lower()}}}}}'",
                               "suspend the TrainJob" if value else "resume the TrainJob"))


def _target_node(d: Drill, old_node: str) -> dict[str, Any] | None:
    pool = d.s.node_pool
    if d.actions is not None and not d.opts.dry_run:
        nodes = d.actions.nodes()
        template = _trainer_template(d)
        pool = [n for n in nodes if fits(n, template)]
    others = [n for n in pool if str(n["metadata"]["name"]) != old_node]
    return others[0] if others else None


def cross_node(d: Drill, st: Step, sr: StepResult) -> None:
    from ckpt_doctor.sources.live.kinds import TRAINJOB as TJ

    act = d.actions
    version = d.s.version or "v2.3"
    field = marks.steer_field(version)
    if d.opts.dry_run or act is None:
        pod = _pod_hint(d)
        old = NODE
        if d.s.api is not None and act is not None and pod != POD:
            live = verify.rank0(act.pods(), d.s.trainer_jobs)
            old = verify.node_of(live) if live else NODE
        target = _target_node(d, old) if d.s.api is not None else None
        tname = str(target["metadata"]["name"]) if target else OTHER
        host = str(((target or {}).get("metadata") or {}).get("labels", {}).get(marks.HOSTNAME, tname))
        if d.opts.cross_node == "cordon":
            sr.commands.append(Command(f"kubectl cordon {old}", f"cordon node {old}"))
            _plan_suspend(d, sr, True)
        else:
            _plan_suspend(d, sr, True)
            entry = marks.steer_entry(field, d.s.rjob, host, d.drill_id)
            from ckpt_doctor.drill.actions import compact, q

            live = act.trainjob() if act is not None and not d.opts.submit else None
            planned = next((x for x, _ in d.s.to_create if x.get("kind") == "TrainJob"), None)
            ops = marks.steer_add_patch(((live or planned or {}).get("spec")) or {}, field, entry)
            sr.commands.append(Command(f"kubectl -n {d.ns} patch trainjob/{d.name} --type=json -p {q(compact(ops))}",
                                       f"steer the trainer to node {tname} ({field} nodeSelector)"))
        _plan_suspend(d, sr, False)
        if target is None and d.s.api is not None and len(d.s.node_pool) < 2:
            sr.notes.append("no other schedulable node fits the trainer now: this step would be skipped")
        return
    pod, _ = _before_interruption(d, st, sr)
    old_node = verify.node_of(pod)
    target = _target_node(d, old_node)
    if target is None:
        raise NotRun(f"no schedulable node other than {old_node} fits the trainer (Ready, its nodeSelector, taints, "
                   "GPUs)")
    tname = str(target["metadata"]["name"])
    host = str(((target.get("metadata") or {}).get("labels") or {}).get(marks.HOSTNAME) or tname)
    codes, see = _exit_codes()
    with act.watch_pods(see) as watch, act.follow_log(pod, verify.container(pod)) as follow:
        base = act.log(verify.pod_name(pod), verify.container(pod)) or b""
        if d.opts.cross_node == "cordon":
            d.change(st, sr, act.cordon(old_node, True))
        d.change(st, sr, act.suspend(True))
        seen = _wait_gone(d, st, sr, pod, codes, follow, base)
    if watch.note:
        sr.notes.append(watch.note)
    if d.opts.cross_node != "cordon":
        d.change(st, sr, act.steer(field, d.s.rjob, host, tname))
        tj = act.get(TJ, d.name, d.ns) or {}
        if not marks.has_steer(tj.get("spec") or {}, host):
            raise InputError(f"the API server dropped spec.{field} from the TrainJob: this Trainer version does not "
                             f"have it (assumed {version}: {d.s.version_why}); pass --trainer-version")
    killed = _sigkill_check(d, sr, pod, seen)
    d.change(st, sr, act.suspend(False))
    times: dict[str, float] = {}

    def moved() -> dict[str, Any] | None:
        p = verify.rank0(act.pods(), d.s.trainer_jobs)
        if p is None or verify.uid(p) == verify.uid(pod):
            return None
        t = d.clock.monotonic()
        times.setdefault("created", t)
        if not verify.node_of(p) and t - times["created"] > 2 * d.pb.poll:
            unsched = [e for e in act.events_of("Pod", verify.pod_name(p)) if e.get("reason") == "FailedScheduling"]
            if unsched:  # no room where it was steered: the move could not be tried, the job is not at fault
                raise NotRun(f"the new pod {verify.pod_name(p)} could not be scheduled: {unsched[-1].get('message')}")
        if verify.node_of(p):
            times.setdefault("scheduled", t)
            if verify.node_of(p) == old_node:
                raise Failed(f"the new pod {verify.pod_name(p)} was scheduled on the old node {old_node} again",
                             [_pod_ev(p, "spec.nodeName", old_node)])
        if verify.running(p):
            times.setdefault("running", t)
            return p
        return None

    newpod = d.wait(st, f"for the trainer to run on another node than {old_node}", moved)
    attach = times["running"] - times.get("scheduled", times["running"])
    events = act.events_of("Pod", verify.pod_name(newpod))
    multi = [e for e in events if e.get("reason") == "FailedAttachVolume" and "Multi-Attach" in str(e.get("message"))]
    for e in multi[:1]:
        sr.evidence.append({"type": "event", "object": f"Pod/{d.ns}/{verify.pod_name(newpod)}",
                            "reason": e.get("reason"), "message": e.get("message"), "count": e.get("count", 1),
                            "lastTimestamp": e.get("lastTimestamp") or e.get("eventTime")})
    sr.evidence.append(_pod_ev(newpod, "spec.nodeName", verify.node_of(newpod)))
    sr.evidence.append({"type": "field", "object": f"Pod/{d.ns}/{verify.pod_name(newpod)}",
                        "path": "volume attach and start (s)", "value": round(attach, 2)})
    d.wait(st, "for the new attempt to log how it began", lambda: _began(d, st, newpod))
    v = verify_resume(d, st, sr, "move to another node", newpod)
    if killed:
        raise Failed(f"{killed}; attempt {v.attempt} then resumed from step {v.step}")
    wait = f", after a Multi-Attach wait for the volume to leave {old_node}" if multi else ""
    means = "cordon" if d.opts.cross_node == "cordon" else f"{field} nodeSelector"
    sr.observed = (f"moved from {old_node} to {verify.node_of(newpod)} ({means}); the pod ran {attach:.1f} s after it "
                   f"was scheduled{wait}; attempt {v.attempt} resumed from step {v.step}")


HANDLERS = {
    "preflight": preflight,
    "submit": submit,
    "wait-for-checkpoint": first_checkpoint,
    "crash": crash,
    "suspend-resume": suspend_resume,
    "cross-node": cross_node,
}
