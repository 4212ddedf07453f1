"""`ckpt-doctor rbac`: the least-privilege Roles ckpt-doctor needs, and a check of the current identity.

The diagnosis Roles are built from `sources.live.READS`, the table of what the live collector actually
reads, so they cannot drift from the code. No Secrets, ever: env values from Secrets are not needed.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from ckpt_doctor.cli import add_cluster_flags
from ckpt_doctor.errors import InputError

VERB_ORDER = ("get", "list", "watch", "create", "update", "patch", "delete")


@dataclass(frozen=True)
class Need:
    """One permission: a verb on a resource (optionally a subresource), namespaced or cluster-wide."""

    group: str
    resource: str  # plural, or plural/subresource
    verb: str
    cluster: bool
    why: str
    role: str  # diagnose | inspect | drill
    follow_only: bool = False
    optional: bool = False
    namespace: str | None = None  # a fixed namespace (the Trainer controller's), else the TrainJob's
    when: str = ""  # drill only: the option that needs it (submit, kill, cordon, listing); "" = always


def diagnose_needs() -> list[Need]:
    from ckpt_doctor.sources.live import READS, TRAINER_DEPLOYMENT

    out: list[Need] = []
    for r in READS:
        fixed = TRAINER_DEPLOYMENT[0] if r.kind.kind == "Deployment" else None
        for verbs, follow_only in ((r.verbs, False), (r.follow_only, True)):
            out += [
                Need(
                    r.kind.group,
                    r.resource,
                    v,
                    not r.kind.namespaced,
                    r.why,
                    "diagnose",
                    follow_only=follow_only,
                    optional=r.optional,
                    namespace=fixed,
                )
                for v in verbs
            ]
    return out


# What `ckpt-doctor drill` (playbooks/verify-resume.yaml) does to the cluster, on top of the diagnosis.
# `when` names the drill option that needs it; those are optional for `rbac --check --drill`.
DRILL: tuple[Need, ...] = (
    Need("trainer.kubeflow.org", "trainjobs", "patch", False, "suspend and resume the TrainJob; move it", "drill"),
    Need("", "pods", "delete", False, "crash the trainer: delete its pod", "drill", when="delete"),
    Need(
        "",
        "pods/exec",
        "create",
        False,
        "send SIGTERM to the trainer (--crash=kill)",
        "drill",
        optional=True,
        when="kill",
    ),
    Need("", "pods/exec", "create", False, "list the checkpoint directory", "drill", optional=True, when="listing"),
    Need("", "pods", "get", False, "follow the trainer pod through the drill", "drill"),
    Need("", "pods", "watch", False, "follow the trainer pod through the drill", "drill"),
    Need(
        "trainer.kubeflow.org",
        "trainjobs",
        "create",
        False,
        "submit the manifests",
        "drill",
        optional=True,
        when="submit",
    ),
    Need(
        "trainer.kubeflow.org",
        "trainjobs",
        "delete",
        False,
        "delete what it submitted",
        "drill",
        optional=True,
        when="submit",
    ),
    *(
        Need(g, r, v, False, why, "drill", optional=True, when="submit")
        for g, r in (("trainer.kubeflow.org", "trainingruntimes"), ("", "persistentvolumeclaims"), ("", "configmaps"))
        for v, why in (
            ("create", "submit the manifests"),
            ("delete", "delete what it submitted"),
            ("list", "drill --cleanup: find what an interrupted drill created"),
        )
    ),
    Need(
        "trainer.kubeflow.org",
        "clustertrainingruntimes",
        "create",
        True,
        "submit a ClusterTrainingRuntime",
        "drill",
        optional=True,
        when="submit-cluster",
    ),
    Need(
        "trainer.kubeflow.org",
        "clustertrainingruntimes",
        "delete",
        True,
        "delete the one it submitted",
        "drill",
        optional=True,
        when="submit-cluster",
    ),
    Need(
        "",
        "nodes",
        "patch",
        True,
        "cordon and uncordon the old node (--cross-node=cordon)",
        "drill",
        optional=True,
        when="cordon",
    ),
)


# What `--inspect-checkpoints` (diagnose, collect, report, the app's "Inspect checkpoints") adds: read-only
# commands through exec, and, only after the user confirms, a reader pod (sources/live/inspect.py).
INSPECT: tuple[Need, ...] = (
    Need("", "pods/exec", "create", False, "list the checkpoint directory in a running trainer (find, ls, df, "
         "head -c: read-only)", "inspect", optional=True),
    Need("", "pods", "create", False, "a reader pod that mounts the checkpoint PVC read-only when no trainer runs "
         "(asked first)", "inspect", optional=True),
    Need("", "pods", "get", False, "wait for the reader pod to start", "inspect", optional=True),
    Need("", "pods", "delete", False, "delete the reader pod as soon as the listing is read", "inspect", optional=True),
)


def drill_needs(whens: set[str]) -> list[Need]:
    """What one drill run needs: the diagnosis reads plus the drill needs its options call for (required)."""
    out = [n for n in diagnose_needs() if not n.follow_only]
    for n in DRILL:
        if not n.when or n.when in whens:
            out.append(Need(n.group, n.resource, n.verb, n.cluster, n.why, n.role, False, False, n.namespace, n.when))
    return out


def fleet_needs(emit_events: bool = False) -> list[Need]:
    """What `diagnose -A` and `watch` read, across all namespaces (from sources/live/fleet.py FLEET_READS),
    and with `emit_events` what the watcher's Events need."""
    from ckpt_doctor.sources.live import TRAINER_DEPLOYMENT
    from ckpt_doctor.sources.live.fleet import FLEET_READS

    out: list[Need] = []
    for r in FLEET_READS:
        fixed = TRAINER_DEPLOYMENT[0] if r.kind.kind == "Deployment" else None
        out += [Need(r.kind.group, r.resource, v, fixed is None, r.why, "fleet", optional=r.optional, namespace=fixed)
                for v in r.verbs]  # fmt: skip
    if emit_events:
        out += [Need("", "events", v, True, "watch --emit-events: an Event on a TrainJob whose verdict changed",
                     "fleet-events") for v in ("create",)]  # fmt: skip
    return out


def render_fleet(needs: list[Need], prefix: str = "ckpt-doctor") -> str:
    """The ClusterRole of the fleet scan and the watcher (read-only), the optional Trainer-version Role, and
    (with --emit-events) the ClusterRole that lets the watcher write Events."""
    docs = [
        _doc(
            "ClusterRole",
            f"{prefix}-fleet",
            None,
            [n for n in needs if n.role == "fleet" and n.namespace is None],
            "ckpt-doctor diagnose -A / watch: read-only, every namespace; no Secrets",
        )
    ]
    fixed = [n for n in needs if n.namespace]
    docs += _trainer_version_roles(fixed, prefix)
    events = [n for n in needs if n.role == "fleet-events"]
    if events:
        docs.append(
            _doc(
                "ClusterRole",
                f"{prefix}-watch-events",
                None,
                events,
                "ckpt-doctor watch --emit-events: WRITES Events on TrainJobs; bind it only with that flag",
            )
        )
    bind = (
        f"# Bind, e.g.: kubectl create clusterrolebinding {prefix}-fleet --clusterrole={prefix}-fleet "
        "--serviceaccount=NAMESPACE:NAME (deploy/ does this for the watcher)\n"
    )
    return bind + "---\n" + "---\n".join(docs)


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "rbac",
        help="print the least-privilege Roles, or check the current identity against them",
        description="Print the Role and ClusterRole ckpt-doctor needs to diagnose and collect (read-only: get, "
        "list and watch on exactly what it reads, pods/log, never Secrets), and with --drill the separate Role "
        "the verify drill needs, and with --inspect the one --inspect-checkpoints needs. --check asks the cluster "
        "(SelfSubjectAccessReview) which of them the current "
        "identity has and lists what is missing (exit 1 when something required is missing).",
    )
    p.add_argument("--drill", action="store_true", help="also print (or check) the Role the drill needs")
    p.add_argument(
        "--inspect",
        action="store_true",
        help="also print (or check) the Role of --inspect-checkpoints: create on pods/exec (read-only commands), and "
        "create, get and delete on pods (the reader pod, made only after you confirm)",
    )
    p.add_argument(
        "--fleet",
        action="store_true",
        help="the ClusterRole of `diagnose -A` and `watch` instead (lists and watches across namespaces)",
    )
    p.add_argument("--emit-events", action="store_true", help="with --fleet: also what `watch --emit-events` writes")
    p.add_argument("--check", action="store_true", help="check the current identity instead of printing Roles")
    p.add_argument("--name-prefix", default="ckpt-doctor", metavar="PREFIX", help="prefix of the Role names")
    add_cluster_flags(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if getattr(args, "fleet", False):
        fleet = fleet_needs(args.emit_events)
        if args.check:
            return check(args, fleet)
        sys.stdout.write(render_fleet(fleet, args.name_prefix))
        return 0
    needs = diagnose_needs() + (list(INSPECT) if args.inspect else []) + (list(DRILL) if args.drill else [])
    if args.check:
        return check(args, needs)
    sys.stdout.write(render(needs, args.namespace, args.name_prefix))
    return 0


# -- printing ---------------------------------------------------------------------------------------


def _rules(needs: Iterable[Need]) -> list[tuple[str, str, list[str], str]]:
    """(group, resource, verbs, comment) merged per group and resource, in first-seen order."""
    merged: dict[tuple[str, str], list[Need]] = {}
    for n in needs:
        merged.setdefault((n.group, n.resource), []).append(n)
    out = []
    for (group, resource), ns in merged.items():
        verbs = sorted({n.verb for n in ns}, key=lambda x: VERB_ORDER.index(x) if x in VERB_ORDER else 99)
        note = "; ".join(dict.fromkeys(n.why for n in ns))
        follow = [v for v in verbs if all(n.follow_only for n in ns if n.verb == v)]
        if follow:
            note += f" [{', '.join(follow)}: only collect --follow]"
        if all(n.optional for n in ns):
            note += " [optional]"
        out.append((group, resource, verbs, note))
    return out


def _doc(kind: str, name: str, namespace: str | None, needs: list[Need], header: str) -> str:
    lines = [f"# {header}", "apiVersion: rbac.authorization.k8s.io/v1", f"kind: {kind}", "metadata:"]
    lines.append(f"  name: {name}")
    if namespace:
        lines.append(f"  namespace: {namespace}")
    lines.append("rules:")
    for group, resource, verbs, note in _rules(needs):
        lines.append(f"  # {note}")
        lines.append(f'  - apiGroups: ["{group}"]')
        lines.append(f"    resources: [{resource}]")
        lines.append(f"    verbs: [{', '.join(verbs)}]")
    return "\n".join(lines) + "\n"


def _trainer_version_roles(fixed: list[Need], prefix: str) -> list[str]:
    """A Role per namespace of the reads pinned to one namespace (the Trainer controller's)."""
    return [
        _doc(
            "Role",
            f"{prefix}-trainer-version",
            ns,
            [n for n in fixed if n.namespace == ns],
            "optional: lets ckpt-doctor read the Trainer version from its controller's image tag",
        )
        for ns in sorted({str(n.namespace) for n in fixed})
    ]


def render(needs: list[Need], namespace: str | None, prefix: str = "ckpt-doctor") -> str:
    """The Roles as a multi-document YAML stream (with comments saying why each rule is there)."""
    docs: list[str] = []
    diag = [n for n in needs if n.role == "diagnose"]
    ns_hint = f"namespace {namespace}" if namespace else "the TrainJob's namespace (kubectl apply -n NAMESPACE)"
    docs.append(
        _doc(
            "Role",
            f"{prefix}-diagnose",
            namespace,
            [n for n in diag if not n.cluster and n.namespace is None],
            f"ckpt-doctor diagnose / collect / tui: read-only, in {ns_hint}; no Secrets",
        )
    )
    docs.append(
        _doc(
            "ClusterRole",
            f"{prefix}-diagnose-cluster",
            None,
            [n for n in diag if n.cluster],
            "ckpt-doctor diagnose: the cluster-scoped objects it reads (bind with a ClusterRoleBinding)",
        )
    )
    fixed = [n for n in diag if n.namespace]
    docs += _trainer_version_roles(fixed, prefix)
    inspect = [n for n in needs if n.role == "inspect"]
    if inspect:
        docs.append(
            _doc(
                "Role",
                f"{prefix}-inspect",
                namespace,
                inspect,
                "optional: --inspect-checkpoints (diagnose, collect, report; the app's Inspect checkpoints): "
                "read-only commands through exec, and a short-lived reader pod only after you confirm",
            )
        )
    drill = [n for n in needs if n.role == "drill"]
    if [n for n in drill if n.cluster]:
        docs.append(
            _doc(
                "ClusterRole",
                f"{prefix}-drill-cluster",
                None,
                [n for n in drill if n.cluster],
                "ckpt-doctor drill, optional: cordon a node (--cross-node=cordon), submit a ClusterTrainingRuntime",
            )
        )
    if drill:
        docs.append(
            _doc(
                "Role",
                f"{prefix}-drill",
                namespace,
                [n for n in drill if not n.cluster],
                "ckpt-doctor drill: CHANGES the cluster (suspends, deletes pods); bind it only for the drill",
            )
        )
    bind = (
        f"# Bind, e.g.: kubectl create rolebinding {prefix}-diagnose --role={prefix}-diagnose --user=NAME "
        f"-n NAMESPACE\n#   kubectl create clusterrolebinding {prefix}-diagnose-cluster "
        f"--clusterrole={prefix}-diagnose-cluster --user=NAME\n"
    )
    return bind + "---\n" + "---\n".join(docs)


# -- checking ---------------------------------------------------------------------------------------


def review(api: Any, needs: list[Need], namespace: str) -> list[tuple[Need, bool | str]]:
    """Ask the cluster (SelfSubjectAccessReview) about every need: True, False, or why it could not tell."""
    from concurrent.futures import ThreadPoolExecutor

    from ckpt_doctor.sources.live import CallError, Kind

    def ask(n: Need) -> tuple[Need, bool | str]:
        plural, _, sub = n.resource.partition("/")
        kind = Kind("", n.group, "", plural, namespaced=not n.cluster)
        try:
            return n, api.access_review(n.verb, kind, n.namespace or namespace, sub or None)
        except CallError as e:
            return n, f"{e.kind}: {e.message}"

    with ThreadPoolExecutor(max_workers=8) as pool:
        return list(pool.map(ask, needs))


def check(args: argparse.Namespace, needs: list[Need]) -> int:
    from ckpt_doctor.sources.live import Api, connect

    cluster = connect(args.namespace, args.context, args.kubeconfig, args.request_timeout)
    api = Api(cluster)
    ns = cluster.namespace
    answers = review(api, needs, ns)
    errors = [a for _, a in answers if isinstance(a, str)]
    if errors and len(errors) == len(answers):
        raise InputError(f"cannot check access on {cluster.server} (context {cluster.context}): {errors[0]}")
    missing = [n for n, a in answers if a is not True]
    print(f"ckpt-doctor rbac --check: context {cluster.context}, namespace {ns}, server {cluster.server}")
    for n, a in answers:
        where = "cluster" if n.cluster else (n.namespace or ns)
        mark = "ok" if a is True else ("MISSING" if a is False else f"UNKNOWN ({a})")
        extra = " (only collect --follow)" if n.follow_only else (" (optional)" if n.optional else "")
        print(f"  {mark:8} {n.verb:6} {n.resource:32} {where:16} {n.role}{extra}")
    required = [n for n in missing if not n.optional]
    if not missing:
        print("everything ckpt-doctor needs is allowed")
        return 0
    print(f"{len(missing)} missing ({len(required)} required); `ckpt-doctor rbac` prints the Roles that grant them")
    return 1 if required else 0
