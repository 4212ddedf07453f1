"""What a Snapshot knows, and what it does not: every kind, object and log is *seen*, *seen absent*
or *unknown* (contracts.md §6, "Unknown is not absent").

- *seen*: the object or log is in the snapshot.
- *absent*: something proves it does not exist: the API answered 404, a collector listed that kind
  and the list did not hold it, an event says it was "not found".
- *unknown*: not collected, forbidden, timed out, unreadable, malformed, or simply not in a hand-made
  bundle. A rule never passes, and never fails, on an unknown.

Sources fill the coverage: `bundle.yaml` (`notCollected`, `listed`, `absent`), the live collector's
gaps and listings, and for a hand-made bundle the objects it holds: a kind with at least one object
is *partial* (its objects are seen, the absence of another one is unknown), a kind with none is
unknown.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

SEEN = "seen"
ABSENT = "absent"
UNKNOWN = "unknown"

# kind coverage
LISTED = "listed"  # a complete listing (in the target's namespace for namespaced kinds)
PARTIAL = "partial"  # some objects of the kind are there; whether others exist is unknown
NONE = "none"  # no object of the kind and no listing: unknown

# The kinds the rules read and the names gaps and bundle.yaml use for them (`what:`), plural first.
KIND_WORDS: dict[str, tuple[str, ...]] = {
    "TrainJob": ("trainjobs", "trainjob"),
    "TrainingRuntime": ("trainingruntimes", "trainingruntime", "runtime", "runtimes"),
    "ClusterTrainingRuntime": ("clustertrainingruntimes", "clustertrainingruntime", "runtime", "runtimes"),
    "JobSet": ("jobsets", "jobset"),
    "Job": ("jobs", "job"),
    "Pod": ("pods", "pod"),
    "Event": ("events", "event"),
    "PersistentVolumeClaim": ("persistentvolumeclaims", "persistentvolumeclaim", "pvcs", "pvc"),
    "PersistentVolume": ("persistentvolumes", "persistentvolume", "pvs", "pv"),
    "StorageClass": ("storageclasses", "storageclass"),
    "Node": ("nodes", "node"),
    "ConfigMap": ("configmaps", "configmap"),
    "Workload": ("workloads", "workload"),
}
RULE_KINDS = tuple(KIND_WORDS)
IDENTITY = ("metadata", "involvedObject", "regarding")  # fields that decide which TrainJob an object belongs to
_WORD_KIND = {w: k for k, words in KIND_WORDS.items() for w in words if w not in ("runtime", "runtimes")}


def kind_of_word(word: str) -> str | None:
    """`pods` -> Pod, `persistentvolumeclaims` -> PersistentVolumeClaim, `events.k8s.io` plural too."""
    w = word.strip().lower().split(".", 1)[0]
    return _WORD_KIND.get(w)


def plural(kind: str) -> str:
    return KIND_WORDS.get(kind, (kind.lower() + "s",))[0]


@dataclass(frozen=True)
class Known:
    """The coverage of one thing: its state, why, and (for *absent*) what proves it."""

    state: str
    reason: str = ""
    evidence: dict[str, Any] | None = None

    @property
    def seen(self) -> bool:
        return self.state == SEEN

    @property
    def absent(self) -> bool:
        return self.state == ABSENT

    @property
    def unknown(self) -> bool:
        return self.state == UNKNOWN


@dataclass(frozen=True)
class Malformed:
    """A field of the wrong type: that fact is unknown (typed reading at the Snapshot's edge)."""

    object: str  # Kind/namespace/name (or a file for bundle.yaml)
    kind: str
    namespace: str | None
    path: str  # field path as written, e.g. spec.volumes or spec.containers[0].env
    found: str  # the type found: "a boolean", "a string"…
    expected: str  # "a list", "an integer"…

    @property
    def reason(self) -> str:
        return f"{self.object} {self.path} is {self.found}, expected {self.expected}"


@dataclass
class KindCoverage:
    state: str  # LISTED | PARTIAL | NONE
    reason: str = ""  # why it is unknown, when it is


@dataclass
class Coverage:
    kinds: dict[str, KindCoverage] = field(default_factory=dict)
    objects: dict[tuple[str, str, str], Known] = field(default_factory=dict)  # (kind, ns, name): explicit
    logs: dict[tuple[str, str, bool], Known] = field(default_factory=dict)  # (pod, container, previous)
    malformed: list[Malformed] = field(default_factory=list)
    unknown_kinds: dict[str, str] = field(default_factory=dict)  # kind -> reason (gap): overrides presence

    # -- filling --------------------------------------------------------------------------------
    def listed(self, kind: str) -> None:
        if kind not in self.unknown_kinds:
            self.kinds[kind] = KindCoverage(LISTED)

    def unknown_kind(self, kind: str, reason: str) -> None:
        self.unknown_kinds.setdefault(kind, reason)

    def object_known(self, kind: str, name: str, namespace: str | None, known: Known) -> None:
        key = (kind, namespace or "", name)
        if key not in self.objects or known.absent:  # proof of absence wins over an earlier unknown
            self.objects[key] = known

    def log_known(self, pod: str, container: str, previous: bool, known: Known) -> None:
        self.logs.setdefault((pod, container, previous), known)

    def presence(self, kinds_with_objects: Iterable[str], where: str = "snapshot") -> None:
        """Kinds that hold at least one object are at least PARTIAL; the others NONE (unknown)."""
        have = set(kinds_with_objects)
        for k in RULE_KINDS:
            if k in self.kinds:
                continue
            if k in have:
                self.kinds[k] = KindCoverage(PARTIAL)
            else:
                self.kinds[k] = KindCoverage(NONE, f"the {where} holds no {plural(kind=k)}: not collected")

    # -- asking ---------------------------------------------------------------------------------
    def kind(self, kind: str) -> Known:
        """Were objects of `kind` collected? SEEN (listed or some present) or UNKNOWN with the reason."""
        if kind in self.unknown_kinds:
            return Known(UNKNOWN, self.unknown_kinds[kind])
        kc = self.kinds.get(kind)
        if kc is None or kc.state == NONE:
            return Known(UNKNOWN, kc.reason if kc and kc.reason else f"no {plural(kind)} in the snapshot")
        return Known(SEEN, "listed" if kc.state == LISTED else "some present")

    def is_listed(self, kind: str) -> bool:
        kc = self.kinds.get(kind)
        return kc is not None and kc.state == LISTED and kind not in self.unknown_kinds

    def object(self, kind: str, name: str, namespace: str | None, present: bool) -> Known:
        """The coverage of one object; `present`: the snapshot holds it."""
        if present:
            return Known(SEEN)
        explicit = self.objects.get((kind, namespace or "", name)) or self.objects.get((kind, "", name))
        if explicit is not None:
            return explicit
        if kind in self.unknown_kinds:
            return Known(UNKNOWN, f"{plural(kind)} not collected: {self.unknown_kinds[kind]}")
        if self.is_listed(kind):
            where = f" in namespace {namespace}" if namespace else ""
            return Known(ABSENT, f"the list of {plural(kind)}{where} does not hold {name}")
        return Known(UNKNOWN, f"{kind} {name} is not in the snapshot (not collected)")

    def log(self, pod: str, container: str, previous: bool, present: bool) -> Known:
        if present:
            return Known(SEEN)
        k = self.logs.get((pod, container, previous)) or self.objects.get(("logs-of-pod", "", pod))
        if k is not None:
            return k
        if "logs" in self.unknown_kinds:
            return Known(UNKNOWN, f"logs not collected: {self.unknown_kinds['logs']}")
        what = f"{'previous ' if previous else ''}log of {pod}/{container}"
        return Known(UNKNOWN, f"{what} not in the snapshot")

    def malformed_in(
        self, refs: set[str], prefixes: Iterable[tuple[str, str]], namespace: str | None
    ) -> list[Malformed]:
        """Malformed fields under one of `prefixes` ((kind, path prefix); '' is the whole object) of the
        objects `refs`, and of any object of those kinds in `namespace` whose identity (metadata, an
        event's involved object) is malformed: such an object may well belong to the target."""
        pre = list(prefixes)
        kinds = {k for k, _ in pre}
        out = []
        for m in self.malformed:
            if m.kind == "*":  # an object whose kind could not be read: it may be any of them
                if m.namespace is None or namespace is None or m.namespace == namespace:
                    out.append(m)
                continue
            if m.object not in refs:
                maybe = (
                    m.kind in kinds
                    and m.path.startswith(IDENTITY)
                    and (m.namespace is None or namespace is None or m.namespace == namespace)
                )
                if maybe:
                    out.append(m)
                continue
            for kind, p in pre:
                if kind == m.kind and (not p or m.path == p or m.path.startswith((p + ".", p + "["))):
                    out.append(m)
                    break
        return out


def apply_gap(cov: Coverage, what: str, reason: str) -> bool:
    """Record one `notCollected` entry; False when `what` names nothing the coverage knows (a note)."""
    w = what.strip()
    if w == "logs":
        cov.unknown_kind("logs", reason)
        return True
    if w.startswith("logs/"):
        parts = w[len("logs/") :].split("/")
        if len(parts) == 1:
            cov.objects.setdefault(("logs-of-pod", "", parts[0]), Known(UNKNOWN, reason))
            return True
        pod, cont = parts[0], "/".join(parts[1:])
        prev = cont.endswith(".previous")
        cov.log_known(pod, cont[: -len(".previous")] if prev else cont, prev, Known(UNKNOWN, reason))
        return True
    head, _, name = w.partition("/")
    if head in ("runtime", "runtimes"):
        for k in ("TrainingRuntime", "ClusterTrainingRuntime"):
            _gap_kind(cov, k, name, reason)
        return True
    kind = kind_of_word(head)
    if kind is None:
        return False
    _gap_kind(cov, kind, name, reason)
    return True


def _gap_kind(cov: Coverage, kind: str, name: str, reason: str) -> None:
    if name:
        cov.object_known(kind, name, None, Known(UNKNOWN, reason))
    else:
        cov.unknown_kind(kind, reason)


def apply_absent(cov: Coverage, what: str, reason: str) -> None:
    """Record an `absent:` entry of bundle.yaml: `persistentvolumeclaims/ckpt` proven not to exist."""
    head, _, name = what.strip().partition("/")
    kind = kind_of_word(head)
    if kind and name:
        ns, _, nm = name.rpartition("/")
        cov.object_known(kind, nm, ns or None, Known(ABSENT, reason))


def apply_absent_or_log(cov: Coverage, what: str, reason: str) -> None:
    """An `absent:` entry: an object (`kind/[ns/]name`) or a log (`logs/<pod>/<container>[.previous]`)."""
    if what.startswith("logs/"):
        parts = what[len("logs/") :].split("/", 1)
        if len(parts) == 2:
            cont = parts[1]
            prev = cont.endswith(".previous")
            cov.log_known(parts[0], cont[: -len(".previous")] if prev else cont, prev, Known(ABSENT, reason))
        return
    apply_absent(cov, what, reason)
