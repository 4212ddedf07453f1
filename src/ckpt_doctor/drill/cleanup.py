"""Undoing a drill: from the marks on the cluster, never from memory alone, so it can run twice.

In a drill, cleanup undoes what this drill marked (its TrainJob, the objects it created, the node it
cordoned), then reads them back and compares with what preflight saw. `ckpt-doctor drill --cleanup`
finds the marks an interrupted drill left in a namespace and undoes them the same way. Changes here
are shown but not asked for: they only undo what the user already agreed to, and must also run on
the way out of a Ctrl-C or a SIGTERM. A lost connection is retried with back-off (Actions.call).
"""

from __future__ import annotations

from typing import Any

from ckpt_doctor.drill import marks, verify
from ckpt_doctor.drill.actions import CREATABLE, Actions, ClusterLost, Scope
from ckpt_doctor.drill.playbook import Step
from ckpt_doctor.drill.result import Command, StepResult
from ckpt_doctor.drill.runner import Drill, Failed, NotRun, Skip
from ckpt_doctor.sources.live.client import CallError
from ckpt_doctor.sources.live.kinds import NODE, TRAINJOB, Kind

UNCORDON_TRIES = 3


def run_cleanup(d: Drill, st: Step, sr: StepResult) -> None:
    if d.opts.dry_run:
        _plan(d, sr)
        return
    if d.actions is None:
        raise Skip("the cluster was never reached: nothing to undo")
    if getattr(d.opts, "cleanup", False):
        _leftovers(d, st, sr)
        return
    act = d.actions
    before = d.s.before
    done: list[str] = []
    failures: list[str] = []
    refused: list[str] = []

    def each(what: str, fn: Any, *args: Any) -> None:
        """One undo; a failure (or a refusal by the cluster) of one never keeps the others from running."""
        try:
            fn(d, st, sr, act, *args, done)
        except Failed as e:
            failures.append(f"{what}: {e.why}")
        except CallError as e:
            refused.append(f"{what}: the cluster refused ({e.kind}: {e.message})")
        except ClusterLost as e:
            refused.append(f"{what}: the cluster stopped answering ({e})")

    for node in sorted(act.scope.nodes):
        each(f"node {node}", _undo_node, node)
    each(f"TrainJob {act.ns}/{act.name}", _undo_trainjob_now)
    for kind_name, ns, name in sorted(act.scope.created, key=lambda k: -list(CREATABLE).index(k[0])):
        if kind_name != "TrainJob":
            each(f"{kind_name} {name}", _undo_created, CREATABLE[kind_name], ns, name)
    try:
        compared = _compare(d, st, act, before)
    except (CallError, ClusterLost) as e:
        compared = [f"what is left could not be read back ({e})"]
        refused.append(compared[0])
    problems = failures + [r for r in refused if r not in compared] + compared
    if problems:
        d.result.leftovers += problems
        if refused:  # the undo could not be done or checked: an error, and what is left is named
            raise NotRun("not everything could be undone: " + "; ".join(problems))
        raise Failed("not everything is back as it was: " + "; ".join(problems))
    if not act.writes:
        sr.observed = "nothing was changed, nothing to undo"
        return
    sr.observed = ("undone and read back as before: " + ", ".join(done)) if done else "read back as before"


def _plan(d: Drill, sr: StepResult) -> None:
    """The undo of the planned changes, for --dry-run."""
    ns, name = d.ns, d.name
    if d.opts.cross_node == "cordon" and "cross-node" in d.chosen:
        sr.commands.append(Command(f"kubectl uncordon {_node_hint(d)}", "uncordon the node the drill cordoned"))
    if d.opts.submit and not d.opts.keep:
        for obj, _file in reversed(d.s.to_create):
            kind = CREATABLE[obj["kind"]]
            oname = (obj.get("metadata") or {}).get("name")
            where = f" -n {ns}" if kind.namespaced else ""
            sr.commands.append(Command(f"kubectl{where} delete {obj['kind'].lower()} {oname}",
                                       f"delete {obj['kind']} {oname} (the drill created it)"))
    else:
        if d.opts.cross_node == "selector" and "cross-node" in d.chosen:
            sr.commands.append(Command(f"kubectl -n {ns} patch trainjob/{name} --type=json -p '[{{\"op\":\"remove\","
                                       "…the drill's nodeSelector entry…}]'  # while suspended, then resumed",
                                       "remove the drill's nodeSelector"))
        keys = " ".join(f"{k}-" for k in (marks.ID, marks.STARTED, marks.SUSPEND, marks.STEER))
        sr.commands.append(Command(f"kubectl -n {ns} annotate trainjob/{name} {keys}", "remove the drill's marks"))
    sr.notes.append("then every object is read back and compared with what preflight saw")


def _node_hint(d: Drill) -> str:
    """The node a cordon would hit: the trainer's, when it runs already."""
    if d.actions is not None and not d.opts.submit:
        pod = verify.rank0(d.actions.pods(), d.s.trainer_jobs)
        if pod is not None and verify.node_of(pod):
            return verify.node_of(pod)
    return "<the node the trainer ran on>"


def _undo_node(d: Drill, st: Step, sr: StepResult, act: Actions, node: str, done: list[str]) -> None:
    obj = act.get(NODE, node)
    if obj is None:
        return
    u = marks.undo_for(obj)
    if u is not None and u.uncordon:
        for _ in range(UNCORDON_TRIES):  # LitmusChaos's lesson: uncordon, then check it took
            cur = act.get(NODE, node) or {}
            if not (cur.get("spec") or {}).get("unschedulable"):
                break
            d.change(st, sr, act.cordon(node, False), ask=False)
        cur = act.get(NODE, node) or {}
        if (cur.get("spec") or {}).get("unschedulable"):
            d.result.leftovers.append(f"node {node} is still cordoned")
        else:
            done.append(f"uncordoned {node}")
    ch = act.unmark(NODE, node, None)
    if ch is not None:
        d.change(st, sr, ch, ask=False)


def _undo_trainjob_now(d: Drill, st: Step, sr: StepResult, act: Actions, done: list[str]) -> None:
    tj = act.trainjob()
    if tj is not None:
        _undo_trainjob(d, st, sr, act, tj, done)


def _undo_trainjob(d: Drill, st: Step, sr: StepResult, act: Actions, tj: dict[str, Any], done: list[str]) -> None:
    u = marks.undo_for(tj, keep=d.opts.keep)
    if u is None:
        return
    ref = f"TrainJob {act.ns}/{act.name}"
    if u.delete:
        d.change(st, sr, act.delete(TRAINJOB, act.name, act.ns), ask=False)
        d.wait(st, f"for {ref} to be deleted", lambda: True if act.trainjob() is None else None)
        done.append(f"deleted {ref}")
        return
    spec = tj.get("spec") or {}
    if marks.has_steer(spec, u.unsteer):
        if not spec.get("suspend"):  # the Trainer lets overrides change only while suspended
            d.change(st, sr, act.patch_trainjob({"spec": {"suspend": True}}, "merge",
                                                "suspend the TrainJob to remove the drill's nodeSelector"),
                     ask=False)
            _wait_inactive(d, st, act)
        cur = act.trainjob() or {}
        ops = marks.steer_remove_patch(cur.get("spec") or {}, u.unsteer)
        if ops:
            d.change(st, sr, act.patch_trainjob(ops, "json", "remove the drill's nodeSelector"), ask=False)
            done.append("removed the drill's nodeSelector")
    cur = act.trainjob() or {}
    want = u.suspend if u.suspend is not None else None
    if want is not None and bool((cur.get("spec") or {}).get("suspend")) != want:
        d.change(st, sr, act.patch_trainjob({"spec": {"suspend": want}}, "merge",
                                            "resume the TrainJob" if not want else "suspend the TrainJob again"),
                 ask=False)
        done.append(f"spec.suspend back to {str(want).lower()}")
    ch = act.unmark(TRAINJOB, act.name, act.ns)
    if ch is not None:
        d.change(st, sr, ch, ask=False)
        done.append(f"unmarked {ref}")


def _wait_inactive(d: Drill, st: Step, act: Actions) -> None:
    def idle() -> bool | None:
        live = [p for p in act.pods() if (p.get("status") or {}).get("phase") not in ("Succeeded", "Failed")
                or verify.terminating(p)]
        if live:
            return None
        js = act.jobset() or {}
        active = sum(int((r or {}).get("active") or 0) for r in (js.get("status") or {}).get("replicatedJobsStatus")
                     or [])
        return True if active == 0 else None

    d.wait(st, "for the TrainJob's pods to go", idle)


def _undo_created(d: Drill, st: Step, sr: StepResult, act: Actions, kind: Kind, ns: str | None, name: str,
                  done: list[str]) -> None:
    obj = act.get(kind, name, ns)
    if obj is None or marks.drill_id(obj) != act.drill_id or marks.marks_of(obj).get(marks.CREATED) != "true":
        return
    if d.opts.keep:
        ch = act.unmark(kind, name, ns)
        if ch is not None:
            d.change(st, sr, ch, ask=False)
            done.append(f"kept {kind.kind} {name} (--keep), unmarked")
        return
    d.change(st, sr, act.delete(kind, name, ns), ask=False)
    d.wait(st, f"for {kind.kind} {name} to be deleted", lambda: True if act.get(kind, name, ns) is None else None)
    done.append(f"deleted {kind.kind} {name}")


def _compare(d: Drill, st: Step, act: Actions, before: dict[str, Any]) -> list[str]:
    """Read everything back: what differs from before the drill, or still carries a mark."""
    problems: list[str] = []
    tj = act.trainjob()
    created_tj = ("TrainJob", act.ns, act.name) in act.scope.created
    if tj is not None:
        if created_tj and not d.opts.keep and marks.drill_id(tj) == act.drill_id:
            problems.append(f"TrainJob {act.ns}/{act.name} (created by the drill) still exists")
        b = before.get("trainjob")
        if b is not None:
            spec, was = _comparable(tj.get("spec") or {}), _comparable(b["spec"])
            diff = sorted(k for k in set(spec) | set(was) if spec.get(k) != was.get(k))
            if diff:
                problems.append(f"TrainJob {act.ns}/{act.name}: spec.{', spec.'.join(diff)} differ from before")
            if marks.annotations(tj) != b["annotations"]:
                problems.append(f"TrainJob {act.ns}/{act.name}: its annotations differ from before")
        elif marks.marks_of(tj) and marks.drill_id(tj) == act.drill_id:
            problems.append(f"TrainJob {act.ns}/{act.name} still carries the drill's marks")
    nodes_before = before.get("nodes") or {}
    for node in sorted(act.scope.nodes):
        cur = act.get(NODE, node)
        if cur is None:
            continue
        was = nodes_before.get(node)
        now_uns = bool((cur.get("spec") or {}).get("unschedulable"))
        if was is not None and now_uns != was["unschedulable"]:
            problems.append(f"node {node}: spec.unschedulable is {str(now_uns).lower()}, was "
                            f"{str(was['unschedulable']).lower()}")
        if was is not None and marks.annotations(cur) != was["annotations"]:
            problems.append(f"node {node}: its annotations differ from before")
    for kind_name, ns, name in sorted(act.scope.created):
        if kind_name == "TrainJob":
            continue
        obj = act.get(CREATABLE[kind_name], name, ns)
        if obj is not None and marks.drill_id(obj) == act.drill_id:
            problems.append(f"{kind_name} {name} still carries the drill's marks"
                            if d.opts.keep else f"{kind_name} {name} (created by the drill) still exists")
    return problems


def _comparable(spec: dict[str, Any]) -> dict[str, Any]:
    """A TrainJob spec without what the Trainer's mutating webhook restamps on every update (v2.2+:
    runtimePatches[].time), so an untouched patch of someone else's does not read as changed."""
    patches = spec.get("runtimePatches")
    if not isinstance(patches, list):
        return spec
    return {**spec, "runtimePatches": [{k: v for k, v in p.items() if k != "time"} if isinstance(p, dict) else p
                                       for p in patches]}


# -- `drill --cleanup`: what an interrupted drill left ----------------------------------------------------


def find_leftovers(act: Actions, namespace: str, name: str | None) -> dict[str, Any]:
    """Marked TrainJobs, created objects and cordoned nodes of drills in `namespace` (of TrainJob `name`)."""
    from ckpt_doctor.sources.live.kinds import CLUSTERTRAININGRUNTIME

    found: dict[str, Any] = {"trainjobs": [], "created": [], "nodes": [], "notes": []}
    for tj in act.list(TRAINJOB, namespace):
        if marks.drill_id(tj) and (name is None or tj["metadata"]["name"] == name):
            found["trainjobs"].append(tj)
    for kind in CREATABLE.values():
        if kind is TRAINJOB:
            continue
        try:
            items = act.list(kind, namespace if kind.namespaced else None)
        except CallError as e:
            if kind is not CLUSTERTRAININGRUNTIME:
                found["notes"].append(f"cannot list {kind.plural} ({e.kind}): objects a drill created there are not "
                                      "found")
            continue
        for o in items:
            m = marks.marks_of(o)
            if m.get(marks.CREATED) == "true" and m.get(marks.ID):
                found["created"].append(o)
    try:
        for n in act.nodes():
            m = marks.marks_of(n)
            owner = m.get(marks.FOR, "")
            if m.get(marks.ID) and owner.partition("/")[0] == namespace and (name is None or owner == f"{namespace}/"
                                                                             f"{name}"):
                found["nodes"].append(n)
    except CallError as e:
        found["notes"].append(f"cannot list nodes ({e.kind}): a node a drill cordoned is not found")
    return found


def _leftovers(d: Drill, st: Step, sr: StepResult) -> None:
    base = d.actions
    assert base is not None
    name = d.name or None
    found = find_leftovers(base, d.ns, name)
    sr.notes += found["notes"]
    done: list[str] = []
    owners: dict[str, Actions] = {}

    def actions_for(tj_name: str, did: str) -> Actions:
        if tj_name not in owners:
            a = Actions(base.api, Scope(d.ns, tj_name), did, base.started, retries=base.retries,
                        backoff=base.backoff, sleep=base.sleep, on_retry=base.on_retry)
            owners[tj_name] = a
        return owners[tj_name]

    for n in found["nodes"]:
        m = marks.marks_of(n)
        act = actions_for(m.get(marks.FOR, "/").partition("/")[2], m[marks.ID])
        act.scope.nodes.add(str(n["metadata"]["name"]))
        _undo_node(d, st, sr, act, str(n["metadata"]["name"]), done)
    for tj in found["trainjobs"]:
        act = actions_for(str(tj["metadata"]["name"]), str(marks.drill_id(tj)))
        if marks.marks_of(tj).get(marks.CREATED) == "true":
            act.scope.created.add(("TrainJob", d.ns, act.name))
        _undo_trainjob(d, st, sr, act, tj, done)
    for o in found["created"]:
        kind = CREATABLE[str(o["kind"])]
        oname = str(o["metadata"]["name"])
        ns = d.ns if kind.namespaced else None
        act = Actions(base.api, Scope(d.ns, ""), str(marks.drill_id(o)), base.started, retries=base.retries,
                      backoff=base.backoff, sleep=base.sleep, on_retry=base.on_retry)
        act.scope.created.add((kind.kind, ns, oname))
        _undo_created(d, st, sr, act, kind, ns, oname, done)
    again = find_leftovers(base, d.ns, name)
    still = [f"{o.get('kind', 'Node')} {o['metadata']['name']}" for k in ("trainjobs", "created", "nodes")
             for o in again[k]]
    cordoned = [str(n["metadata"]["name"]) for n in found["nodes"]
                if ((base.get(NODE, str(n["metadata"]["name"])) or {}).get("spec") or {}).get("unschedulable")]
    if still or cordoned:
        d.result.leftovers += [f"{x} still carries a drill's marks" for x in still]
        d.result.leftovers += [f"node {n} is still cordoned" for n in cordoned]
        raise Failed("some leftovers could not be undone: " + "; ".join(still + cordoned))
    total = len(found["trainjobs"]) + len(found["created"]) + len(found["nodes"])
    sr.observed = (f"undid {total} leftover(s): " + ", ".join(done)) if total else f"no drill leftovers in {d.ns}"
