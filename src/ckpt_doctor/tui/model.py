"""What the screens show, computed from a Diagnosis off the UI thread (no Textual here).

Built in the bundle reader process or a live worker thread, these plain records are all the UI
thread copies into widgets, so a 512-pod TrainJob does not stall the screen while it is turned
into rows and tree nodes. Importing this module is cheap: the engine itself is imported by the
functions that need it.
"""

from __future__ import annotations

import pickle
import re
import threading
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from functools import cache
from typing import TYPE_CHECKING, Any

from ckpt_doctor.engine.model import Finding, severity_rank
from ckpt_doctor.simulation import simulated_meta
from ckpt_doctor.snapshot import LogKey, LogRef, Obj

if TYPE_CHECKING:  # the engine loads in the worker thread, after the first frame
    from ckpt_doctor.engine.walk import Diagnosis
    from ckpt_doctor.facts.attempts import Run
    from ckpt_doctor.facts.logs import Signature
    from ckpt_doctor.scope import Scope

STATUS_MARK = {"fail": "✗", "not_evaluated": "?", "pass": "✓"}
HEALTH_MARK = {"bad": "✗", "warn": "▲", "ok": "●", "gone": "○", "info": "·"}
_HEALTH_RANK = {"info": 0, "ok": 1, "gone": 1, "warn": 2, "bad": 3}
JOB_NAME_LABELS = ("batch.kubernetes.io/job-name", "job-name")
COLLAPSE_OVER = 12  # a Job with more pods than this starts collapsed
SMALL_JOB = 4  # with this many pods or fewer, every node starts open (a PVC's volume and class too)


# -- records ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Jump:
    """Where an evidence item points: an object field, an event, or a log line."""

    screen: str  # object | event | log
    ref: str = ""  # Kind/namespace/name (object, event)
    path: str = ""  # field path inside the object
    log: LogKey | None = None
    line: int | None = None  # 1-based log line, when known
    text: str = ""  # the cited text (log line, event message)
    reason: str = ""  # event reason


@dataclass
class EvidenceItem:
    text: str
    jump: Jump | None
    raw: dict[str, Any]


@dataclass
class FindingView:
    id: str
    title: str
    kind: str
    severity: str
    status: str
    subject: str
    detail: str
    explanation: str
    reason: str
    confidence: str
    evidence: list[EvidenceItem]
    fix: str
    docs: list[str]
    graph: list[list[tuple[str, str]]]  # paths in the rule graph: [(rule id, status), ...]

    @property
    def mark(self) -> str:
        return STATUS_MARK[self.status]

    def matches(self, needle: str) -> bool:
        n = needle.lower()
        return any(n in s.lower() for s in (self.id, self.title, self.subject, self.detail, self.reason))


@dataclass
class VerdictView:
    symptom: FindingView
    causes: list[FindingView]
    unexplored: list[str]


@dataclass
class ObjNode:
    """One node of the object tree."""

    kind: str
    name: str
    ref: str | None  # Kind/namespace/name when the object is in the snapshot
    health: str  # ok | warn | bad | gone | info
    note: str = ""
    children: list[ObjNode] = field(default_factory=list)
    expand: bool = True
    findings: list[str] = field(default_factory=list)  # failing rules that cite this object

    @property
    def mark(self) -> str:
        return HEALTH_MARK[self.health]

    def walk(self):
        yield self
        for c in self.children:
            yield from c.walk()


@dataclass
class AttemptView:
    index: int
    how: str
    started: str
    finished: str
    nodes: list[str]
    pods: int
    start_kind: str  # resumed | fresh | unknown
    start_step: int | None
    saves: list[int]
    last_step: int | None
    ended: str
    interrupted: bool
    log: LogKey | None
    t0: float | None = None  # epoch seconds
    t1: float | None = None
    running: bool = False
    # from the timeline fact (facts/timeline.py): the chart and the table draw these
    points: list[tuple[float | None, int, str, bool]] = field(default_factory=list)  # (t, step, kind, estimated)
    inferred: str = ""  # known only by inference (pods gone): what from
    label: str = ""  # a0, a1… (a? for a lost attempt whose number is not known)
    drop: str = ""  # the rewind into this attempt: `↓ 1020 → 950, 70 steps lost`
    lost: int | None = None  # steps lost at its start (None: not known, or no interruption before it)
    behind_save: int | None = None  # how far behind the newest complete save it resumed
    log_line: int | None = None  # the line of its log that says how it began (enter opens it there)
    last_bound: bool = False  # last_step is a lower bound (the attempt was stopped before it printed more)
    log_text: str = ""

    @property
    def start_text(self) -> str:
        if self.start_kind == "resumed":
            return f"resumed@{self.start_step}" if self.start_step is not None else "resumed"
        if self.start_kind == "fresh":
            return "fresh (step 0)"
        if self.start_kind == "pending":
            return "not started"
        return "unknown"


@dataclass
class LogEntry:
    key: LogKey
    ref: LogRef
    attempt: int | None
    namespace: str | None

    @property
    def label(self) -> str:
        pod, container, previous = self.key
        att = f"a{self.attempt} " if self.attempt is not None else ""
        return f"{att}{pod}/{container}{' (previous)' if previous else ''}"


@dataclass
class EventRow:
    last: str
    type: str
    reason: str
    object: str
    count: int
    message: str

    def matches(self, needle: str) -> bool:
        n = needle.lower()
        return any(n in s.lower() for s in (self.reason, self.object, self.message, self.type))


@dataclass
class JobRow:
    """A line of the TrainJob picker."""

    namespace: str
    name: str
    state: str
    age: str
    restarts: str
    verdict: str
    health: str

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}" if self.namespace else self.name


class Deferred:
    """A value pickled on its own, unpickled when first used (from any thread, once).

    A bundle's complete View carries its Diagnosis so: a few megabytes that only an export or a
    screenshot needs, whose unpickling would otherwise hold the GIL, and freeze the screen, for
    35-70 ms (512-1,024 pods) just as the complete view arrives.
    """

    __slots__ = ("_lock", "_value", "data")
    _UNSET: Any = object()

    def __init__(self, data: bytes) -> None:
        self.data = data
        self._lock = threading.Lock()
        self._value: Any = Deferred._UNSET

    @classmethod
    def of(cls, value: Any) -> Deferred:
        return cls(pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL))

    def get(self) -> Any:
        with self._lock:
            if self._value is Deferred._UNSET:
                from ckpt_doctor.tui.source import quiet_gc

                with quiet_gc():
                    self._value = pickle.loads(self.data)
                self.data = b""
            return self._value

    def __getstate__(self) -> bytes:
        return pickle.dumps(self._value, protocol=pickle.HIGHEST_PROTOCOL) if not self.data else self.data

    def __setstate__(self, data: bytes) -> None:
        self.__init__(data)  # type: ignore[misc]


class _Unwrapped:
    """A dataclass field whose value may be a `Deferred`: reading it gives the value itself."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.slot = "_" + name

    def __get__(self, obj: Any, owner: type | None = None) -> Any:
        if obj is None:
            return None  # the field's default
        value = obj.__dict__.get(self.slot)
        if isinstance(value, Deferred):
            value = obj.__dict__[self.slot] = value.get()
        return value

    def __set__(self, obj: Any, value: Any) -> None:
        obj.__dict__[self.slot] = value


@dataclass
class View:
    """Everything the diagnosis screens show about one TrainJob."""

    key: str  # namespace/name
    source: str  # bundle | live
    location: str
    collected_at: str
    version: str
    summary: dict[str, Any]
    verdict: list[VerdictView]
    latent: list[FindingView]
    findings: list[FindingView]
    tree: ObjNode
    attempts: list[AttemptView]
    logs: list[LogEntry]
    events: list[EventRow]
    gaps: list[tuple[str, str]]
    objects: dict[str, dict[str, Any]]
    signatures: list[Signature]
    row: JobRow
    diag: Diagnosis | None = _Unwrapped()  # type: ignore[assignment]  # None in a preview; may arrive Deferred
    complete: bool = True  # False: a preview without the objects, events and diagnosis (they follow)
    simulated: bool = False  # collected from the sandbox (ckpt_doctor.simulation): the screens say so

    def preview(self) -> View:
        """What the overview and findings need, small enough to arrive first."""
        return replace(self, objects={}, events=[], diag=None, complete=False)

    @property
    def not_evaluated(self) -> int:
        return int(self.summary.get("notEvaluated") or 0)

    def finding(self, rule_id: str) -> FindingView | None:
        return next((f for f in self.findings if f.id == rule_id), None)

    def log_entry(self, key: LogKey) -> LogEntry | None:
        return next((e for e in self.logs if e.key == key), None)


# -- time ---------------------------------------------------------------------------------------
def parse_time(s: str | None) -> float | None:
    if not s:
        return None
    try:
        dt = datetime.fromisoformat(str(s))
    except ValueError:
        return None
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=UTC)
    return dt.timestamp()


def age(created: str, now: float) -> str:
    """kubectl-style age: 45s, 12m, 3h12m, 4d."""
    t = parse_time(created)
    if t is None:
        return "?"
    s = max(0, int(now - t))
    if s < 120:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m"
    if s < 86400:
        h, m = divmod(s // 60, 60)
        return f"{h}h{m}m" if m and h < 10 else f"{h}h"
    return f"{s // 86400}d"


def clock(s: str) -> str:
    """`2026-11-30T08:00:30Z` → `11-30 08:00:30` (UTC, as the cluster wrote it)."""
    m = re.match(r"\d{4}-(\d\d-\d\d)T(\d\d:\d\d:\d\d)", s or "")
    return f"{m.group(1)} {m.group(2)}" if m else (s or "")


def snapshot_now(meta: dict[str, Any], live: bool) -> float:
    """The moment ages are counted from: the bundle's collectedAt, or now when live."""
    if not live:
        t = parse_time(str(meta.get("collectedAt") or ""))
        if t is not None:
            return t
    return datetime.now(tz=UTC).timestamp()


# -- TrainJob rows (picker) ---------------------------------------------------------------------
def trainjob_state(raw: dict[str, Any]) -> tuple[str, str]:
    """(state, health) from a TrainJob's conditions, like `kubectl get trainjob` shows it."""
    conds = {c.get("type"): c for c in (raw.get("status") or {}).get("conditions") or [] if isinstance(c, dict)}

    def true(t: str) -> bool:
        return str((conds.get(t) or {}).get("status")) == "True"

    if true("Failed"):
        return "Failed", "bad"
    if true("Complete"):
        return "Complete", "ok"
    if true("Suspended"):
        return "Suspended", "warn"
    jobs = (raw.get("status") or {}).get("jobsStatus") or []
    if any(isinstance(j, dict) and (j.get("active") or j.get("ready")) for j in jobs) or true("Created"):
        return "Running", "ok"
    return "Pending", "info"


def job_row(raw: dict[str, Any], now: float, restarts: str = "…", verdict: str = "…") -> JobRow:
    meta = raw.get("metadata") or {}
    state, health = trainjob_state(raw)
    return JobRow(
        namespace=str(meta.get("namespace") or ""),
        name=str(meta.get("name") or ""),
        state=state,
        age=age(str(meta.get("creationTimestamp") or ""), now),
        restarts=restarts,
        verdict=verdict,
        health=health,
    )


def verdict_line(diag: Diagnosis) -> tuple[str, str]:
    """(one-line verdict, health) for the picker and the title."""
    if diag.verdict:
        e = diag.verdict[0]
        cause = e.causes[0].rule.id if e.causes else "cause not found"
        more = f" (+{len(diag.verdict) - 1})" if len(diag.verdict) > 1 else ""
        return f"✗ {e.symptom.rule.id} ← {cause}{more}", "bad"
    if diag.failed():
        return f"▲ latent: {diag.failed()[0].rule.id}", "warn"
    ne = len(diag.not_evaluated())
    if ne:
        return f"✓ no failure · {ne} not evaluated", "ok"
    return "✓ no failure", "ok"


def restarts_of(diag: Diagnosis) -> int:
    h = diag.facts.history
    return max(len(h.attempts) - 1, h.jobset_restarts, 0)


# -- findings -----------------------------------------------------------------------------------
def _where_jump(where: str) -> Jump | None:
    """An `absence` item's `where`: `log of POD/CONTAINER` or `Kind/ns/name path`."""
    m = re.match(r"(?:previous )?log of ([^/\s]+)/([^\s]+)", where)
    if m:
        return Jump("log", log=(m.group(1), m.group(2), where.startswith("previous")))
    m = re.match(r"([A-Z][A-Za-z]+/[^\s]+)(?:\s+(\S+))?", where)
    if m:
        return Jump("object", ref=m.group(1), path=m.group(2) or "")
    return None


def jump_for(ev: dict[str, Any]) -> Jump | None:
    t = ev.get("type")
    if t == "field":
        return Jump("object", ref=str(ev.get("object") or ""), path=str(ev.get("path") or ""))
    if t == "condition":
        path = f"status.conditions[type={ev.get('conditionType')}]"
        return Jump("object", ref=str(ev.get("object") or ""), path=path)
    if t == "event":
        return Jump(
            "event",
            ref=str(ev.get("object") or ""),
            reason=str(ev.get("reason") or ""),
            text=str(ev.get("message") or ""),
        )
    if t == "log":
        return Jump(
            "log",
            log=(str(ev.get("pod")), str(ev.get("container")), bool(ev.get("previous"))),
            line=ev.get("line") if isinstance(ev.get("line"), int) else None,
            text=str(ev.get("text") or ""),
        )
    if t == "absence" and ev.get("where"):
        return _where_jump(str(ev["where"]))
    return None


@cache
def _rule_links() -> tuple[dict[str, str], dict[str, list[str]], dict[str, list[str]]]:
    """The default catalogue's rule graph as plain lists: each rule's kind, and the rules it
    explains (successors) and that explain it (predecessors), in the order networkx would hold
    them (engine/graph.py builds the same graph, edge cause → symptom, and validates it). Without
    networkx: its import alone was a tenth of a 512-pod view's time to the screen."""
    from ckpt_doctor.engine.catalogue import default_rules

    rules = default_rules()
    kind = {r.id: r.kind for r in rules}
    succ: dict[str, dict[str, None]] = {r.id: {} for r in rules}
    pred: dict[str, dict[str, None]] = {r.id: {} for r in rules}
    for r in rules:
        for target in r.explains:
            if target in succ:
                succ[r.id].setdefault(target)
                pred[target].setdefault(r.id)
    return kind, {k: list(v) for k, v in succ.items()}, {k: list(v) for k, v in pred.items()}


def _reach(links: dict[str, list[str]], start: str) -> set[str]:
    seen: set[str] = set()
    todo = [start]
    while todo:
        for n in links[todo.pop()]:
            if n not in seen:
                seen.add(n)
                todo.append(n)
    seen.discard(start)
    return seen


def _shortest_path(succ: dict[str, list[str]], pred: dict[str, list[str]], source: str, target: str) -> list[str]:
    """networkx's `shortest_path` of an unweighted graph (a BFS from both ends that meets in the
    middle), step for step, so that of several shortest paths the same one is chosen."""
    if source == target:
        return [source]
    back: dict[str, str | None] = {source: None}
    ahead: dict[str, str | None] = {target: None}
    forward, reverse = [source], [target]
    meet: str | None = None
    while forward and reverse and meet is None:
        if len(forward) <= len(reverse):
            level, forward = forward, []
            for v in level:
                for w in succ[v]:
                    if w not in back:
                        forward.append(w)
                        back[w] = v
                    if w in ahead:
                        meet = w
                        break
                if meet is not None:
                    break
        else:
            level, reverse = reverse, []
            for v in level:
                for w in pred[v]:
                    if w not in ahead:
                        ahead[w] = v
                        reverse.append(w)
                    if w in back:
                        meet = w
                        break
                if meet is not None:
                    break
    if meet is None:
        raise ValueError(f"no path from {source} to {target}")
    path: list[str] = []
    node: str | None = meet
    while node is not None:
        path.append(node)
        node = back[node]
    path.reverse()
    node = ahead[path[-1]]
    while node is not None:
        path.append(node)
        node = ahead[node]
    return path


def _rule_status(diag: Diagnosis) -> dict[str, str]:
    from ckpt_doctor.engine.walk import STATUS_ORDER as order

    out: dict[str, str] = {}
    for f in diag.findings:
        cur = out.get(f.rule.id)
        if cur is None or order[f.status] < order[cur]:
            out[f.rule.id] = f.status
    return out


def graph_paths(rule_id: str, kind: str, status: dict[str, str]) -> list[list[tuple[str, str]]]:
    """Paths cause → … → symptom through this rule, failing ones first."""
    from ckpt_doctor.engine.walk import STATUS_ORDER as rank

    kinds, succ, pred = _rule_links()
    if rule_id not in kinds:
        return []
    paths = []
    others = _reach(pred, rule_id) if kind == "symptom" else _reach(succ, rule_id)
    for other in sorted(others):
        if kind == "symptom" and kinds[other] != "cause":
            continue
        src, dst = (other, rule_id) if kind == "symptom" else (rule_id, other)
        path = _shortest_path(succ, pred, src, dst)
        paths.append([(n, status.get(n, "not_evaluated")) for n in path])
    paths.sort(key=lambda p: (max(rank[s] for _, s in p), [rank[s] for _, s in p], [n for n, _ in p]))
    return paths


def _subject_text(s: dict[str, Any] | None) -> str:
    if not s:
        return ""
    parts = [str(s.get("kind") or ""), str(s.get("namespace") or ""), str(s.get("name") or "")]
    return "/".join(p for p in parts if p)


def finding_view(
    f: Finding, graph: list[list[tuple[str, str]]], objects: dict[str, Any], logs: set[LogKey]
) -> FindingView:
    """One finding for the screens; `graph` is its rule's paths in the rule graph (see graph_paths)."""
    from ckpt_doctor.report.evidence import describe

    items = []
    for ev in f.result.evidence:
        j = jump_for(ev)
        if j is not None and j.screen == "object" and j.ref not in objects:
            j = None
        if j is not None and j.screen == "log" and j.log not in logs:
            j = None
        items.append(EvidenceItem(describe(ev), j, ev))
    return FindingView(
        id=f.rule.id,
        title=f.rule.title,
        kind=f.rule.kind,
        severity=f.rule.severity,
        status=f.status,
        subject=_subject_text(f.result.subject),
        detail=f.result.detail or "",
        explanation=f.rule.explanation.strip(),
        reason=f.result.reason or "",
        confidence=f.result.confidence,
        evidence=items,
        fix=(f.result.fix or f.rule.fix).strip(),
        docs=list(f.rule.docs),
        graph=graph,
    )


# -- the object tree ----------------------------------------------------------------------------
def _worse(a: str, b: str) -> str:
    return a if _HEALTH_RANK[a] >= _HEALTH_RANK[b] else b


def _cond_true(o: Obj, t: str) -> bool:
    c = o.condition(t)
    return c is not None and str(c.get("status")) == "True"


def _cited(diag: Diagnosis, ns: str | None) -> dict[str, list[tuple[str, str]]]:
    """Object ref → [(rule id, severity)] of the failing findings that name or cite it."""
    out: dict[str, list[tuple[str, str]]] = {}

    def add(ref: str, f: Finding) -> None:
        lst = out.setdefault(ref, [])
        if (f.rule.id, f.rule.severity) not in lst:
            lst.append((f.rule.id, f.rule.severity))

    for f in diag.failed():
        subj = _subject_text(f.result.subject)
        if subj:
            add(subj, f)
        for ev in f.result.evidence:
            if ev.get("object"):
                add(str(ev["object"]), f)
            elif ev.get("type") == "log" and ev.get("pod"):
                add(f"Pod/{ns}/{ev['pod']}" if ns else f"Pod/{ev['pod']}", f)
    return out


def _mark_cited(node: ObjNode, cited: dict[str, list[tuple[str, str]]]) -> None:
    hits = cited.get(node.ref or "", [])
    if hits:
        node.findings = [r for r, _ in hits]
        worst = max((s for _, s in hits), key=severity_rank)
        node.health = _worse(node.health, "bad" if severity_rank(worst) >= severity_rank("error") else "warn")


def _pod_health(p: Obj) -> tuple[str, str]:
    phase = str(p.status.get("phase") or "Unknown")
    reason = str(p.status.get("reason") or "")
    restarts = 0
    waiting = ""
    for cs in p.status.get("containerStatuses") or []:
        if isinstance(cs, dict):
            restarts += int(cs.get("restartCount") or 0)
            w = (cs.get("state") or {}).get("waiting") if isinstance(cs.get("state"), dict) else None
            if isinstance(w, dict) and w.get("reason"):
                waiting = str(w["reason"])
    text = waiting or reason or phase
    if phase == "Failed" or reason in ("Evicted", "Preempted"):
        health = "bad"
    elif phase == "Pending" or waiting or restarts:
        health = "warn"
    else:
        health = "ok"
    if restarts:
        text += f" · {restarts} restart{'s' if restarts != 1 else ''}"
    return health, text


def _pvc_node(sc: Scope, claim: str) -> ObjNode:
    pvc = sc.pvcs.get(claim)
    if pvc is None:
        return ObjNode("PersistentVolumeClaim", claim, None, "gone", "not in the snapshot")
    phase = str(pvc.status.get("phase") or "Unknown")
    modes = ",".join(str(m) for m in pvc.spec.get("accessModes") or [])
    cls = str(pvc.spec.get("storageClassName") or "")
    node = ObjNode(
        "PersistentVolumeClaim",
        pvc.name,
        pvc.ref(),
        "ok" if phase == "Bound" else "bad",
        " · ".join(x for x in (phase, modes, cls) if x),
    )
    pv = sc.pvs.get(claim)
    if pv is not None:
        src = next((k for k in ("local", "hostPath", "csi", "nfs", "rbd") if k in pv.spec), "")
        node.children.append(ObjNode("PersistentVolume", pv.name, pv.ref(), "ok", src))
    sco = sc.storageclasses.get(cls) if cls else None
    if sco is not None:
        node.children.append(ObjNode("StorageClass", sco.name, sco.ref(), "ok", str(sco.raw.get("provisioner") or "")))
    node.expand = node.health != "ok"  # a broken claim shows its volume and class at once
    return node


def _claims(p: Obj) -> list[str]:
    out = []
    for v in p.spec.get("volumes") or []:
        if isinstance(v, dict):
            c = (v.get("persistentVolumeClaim") or {}).get("claimName")
            if c:
                out.append(str(c))
    return out


def _run_note(runs: list[Run]) -> str:
    """`a1 resumed@400→520` for the runs of one pod (oldest instance first)."""
    parts = []
    for r in runs:
        kind, step, _ = r.start()
        last = r.last_step()
        start = f"resumed@{step}" if kind == "resumed" else ("fresh" if kind == "fresh" else "")
        span = f"{start}→{last}" if start and last is not None else start or (f"→{last}" if last is not None else "")
        parts.append(f"a{r.attempt}{' prev' if r.previous else ''} {span}".strip())
    return ", ".join(parts)


def _owner_job(p: Obj, jobs: list[Obj]) -> Obj | None:
    from ckpt_doctor.scope import RESTART_ATTEMPT

    for ref in p.meta.get("ownerReferences") or []:
        if isinstance(ref, dict) and ref.get("kind") == "Job":
            for j in jobs:
                if j.name == ref.get("name") and (not ref.get("uid") or not j.uid or j.uid == ref.get("uid")):
                    return j
            return None
    name = next((p.labels.get(k) for k in JOB_NAME_LABELS if p.labels.get(k)), None)
    ra = p.labels.get(RESTART_ATTEMPT)
    for j in jobs:
        if j.name == name and (ra is None or j.labels.get(RESTART_ATTEMPT) in (None, ra)):
            return j
    return None


def build_tree(diag: Diagnosis) -> ObjNode:
    from ckpt_doctor.scope import RESTART_ATTEMPT

    sc = diag.facts.scope
    h = diag.facts.history
    ns = sc.namespace
    cited = _cited(diag, ns)
    tj = sc.trainjob
    if tj is None:
        return ObjNode("TrainJob", "?", None, "gone", "no TrainJob")
    state, health = trainjob_state(tj.raw)
    root = ObjNode("TrainJob", tj.name, tj.ref(), health, state)
    if sc.runtime is not None:
        kind = sc.runtime.kind + (" (runtime snapshot)" if sc.runtime_source == "runtime-snapshot" else "")
        root.children.append(ObjNode(kind, sc.runtime.name, sc.runtime.ref(), "ok"))
    else:
        root.children.append(ObjNode("Runtime", "?", None, "bad", sc.runtime_missing or "not in the snapshot"))
    runs_by_pod: dict[str, list[Run]] = {}
    for r in h.runs:
        runs_by_pod.setdefault(r.pod.name, []).append(r)
    js = sc.jobset
    if js is not None:
        restarts = int(js.status.get("restarts") or 0)
        jhealth = "bad" if _cond_true(js, "Failed") else ("warn" if restarts else "ok")
        cond = next((c.get("type") for c in js.conditions() if str(c.get("status")) == "True"), "")
        max_r = (js.spec.get("failurePolicy") or {}).get("maxRestarts")
        note = " · ".join(
            x for x in (str(cond or ""), f"restarts {restarts}" + (f"/{max_r}" if max_r is not None else "")) if x
        )
        jsnode = ObjNode("JobSet", js.name, js.ref(), jhealth, note)
    else:
        jsnode = ObjNode("JobSet", sc.name, None, "gone", "not in the snapshot")
    root.children.append(jsnode)
    groups: dict[str, ObjNode] = {}
    for j in sorted(sc.jobs, key=lambda j: (j.labels.get(RESTART_ATTEMPT, ""), j.name)):
        failed, done = _cond_true(j, "Failed"), _cond_true(j, "Complete")
        st = j.status
        counts = " ".join(f"{k} {st[k]}" for k in ("active", "succeeded", "failed") if st.get(k))
        ra = j.labels.get(RESTART_ATTEMPT)
        note = " · ".join(
            x
            for x in (
                (f"restart-attempt {ra}" if ra is not None else ""),
                "Failed" if failed else ("Complete" if done else ""),
                counts,
            )
            if x
        )
        node = ObjNode("Job", j.name, j.ref(), "bad" if failed else "ok", note)
        groups[j.ref()] = node
        jsnode.children.append(node)
    pods = sorted(sc.pods, key=lambda p: (min((r.attempt for r in runs_by_pod.get(p.name, [])), default=0), p.name))
    for p in pods:
        phealth, text = _pod_health(p)
        runs = sorted(runs_by_pod.get(p.name, []), key=lambda r: (r.attempt, not r.previous))
        extra = [x for x in (text, str(p.spec.get("nodeName") or ""), _run_note(runs)) if x]
        pnode = ObjNode("Pod", p.name, p.ref(), phealth, " · ".join(extra))
        pnode.children = [_pvc_node(sc, c) for c in _claims(p)]
        job = _owner_job(p, sc.jobs)
        if job is not None:
            parent = groups[job.ref()]
        else:
            ra = p.labels.get(RESTART_ATTEMPT, "?")
            gkey = f"orphan/{ra}"
            if gkey not in groups:
                groups[gkey] = ObjNode("Job", f"(restart-attempt {ra})", None, "gone", "Job not in the snapshot")
                jsnode.children.append(groups[gkey])
            parent = groups[gkey]
        parent.children.append(pnode)
    small = len(sc.pods) <= SMALL_JOB
    for g in groups.values():
        g.expand = len(g.children) <= COLLAPSE_OVER
        for pnode in g.children:
            pnode.expand = g.expand  # a pod shows its claims unless its group is large
            for claim in pnode.children:
                claim.expand = claim.expand or small
    lost = len(h.later_runs()) == len(h.runs) if h.attempts else bool(h.earlier)
    if lost:
        from ckpt_doctor.report.evidence import describe

        what = ", ".join(describe(e) for e in h.earlier[:2])
        jsnode.children.insert(
            0,
            ObjNode(
                "Attempt",
                "earlier attempt",
                None,
                "gone",
                f"pods not in the snapshot; known from {what}" if what else "pods not in the snapshot",
            ),
        )
    if not sc.pods:
        jsnode.children.append(ObjNode("Pod", "(none)", None, "gone", "no pods of this TrainJob in the snapshot"))
    claimed = {c for p in sc.pods for c in _claims(p)}
    for claim in sorted(set(sc.pvcs) - claimed):
        root.children.append(_pvc_node(sc, claim))
    for node in root.walk():
        _mark_cited(node, cited)
        if node.kind == "PersistentVolumeClaim" and node.health != "ok":
            node.expand = True  # cited or unbound: its volume and class in view
    if root.findings:
        root.note += f" · {len(root.findings)} failing rule{'s' if len(root.findings) != 1 else ''}"
    return root


# -- attempts -----------------------------------------------------------------------------------
def build_attempts(diag: Diagnosis, now: float) -> list[AttemptView]:
    """The attempts as the Timeline screen shows them, from the one timeline fact the report uses too."""
    from ckpt_doctor.facts.timeline import epoch, timeline_of

    tl = timeline_of(diag.facts)
    out = []
    for pos, a in enumerate(tl.attempts):
        into = tl.interruption_into(pos)
        t0 = epoch(a.started)
        t1 = epoch(a.ended) or (now if a.running or a.start == "pending" else None) or epoch(a.ended_by)
        ended = a.end.text if a.end.kind not in ("running", "pending") else ("running" if a.running else "not started")
        if a.end.kind == "pending" and a.end.reason:  # waiting to start again: CrashLoopBackOff and its back-off
            ended = a.end.text
        index = a.index if a.index is not None else -1 - pos  # a lost attempt without a number
        out.append(
            AttemptView(
                index=index,
                how=a.how,
                started=a.started,
                finished=a.ended or (a.ended_by and f"by {a.ended_by}") or "",
                nodes=list(a.nodes),
                pods=len(a.pods),
                start_kind=a.start,
                start_step=a.start_step,
                saves=[s.step for s in a.saves],
                last_step=a.last_step,
                last_bound=a.last_step_bound,
                ended=ended,
                interrupted=a.end.kind not in ("running", "pending", "completed", "unknown"),
                log=a.start_log or a.log,
                t0=t0,
                t1=t1,
                running=a.running,
                points=[(p.t, p.step, p.kind, p.estimated) for p in a.points],
                inferred=a.inferred,
                label=a.short,
                drop=into.label if into is not None else "",
                lost=into.steps_lost if into is not None else None,
                behind_save=into.behind_save if into is not None else None,
                log_line=a.start_line if a.start_log else None,
                log_text=a.start_text if a.start_log else "",
            )
        )
    return out


# -- logs and events ----------------------------------------------------------------------------
def build_logs(diag: Diagnosis) -> list[LogEntry]:
    from ckpt_doctor.facts.attempts import trainer_container_name

    sc = diag.facts.scope
    attempt: dict[LogKey, int] = {}
    for r in diag.facts.history.runs:
        attempt[r.log_key or (r.pod.name, r.container, r.previous)] = r.attempt
    names = {p.name: p for p in sc.pods}
    gone = {r.pod.name for r in diag.facts.history.runs if r.inferred}  # pods deleted, their logs kept: the
    entries = []  # diagnosis reads and cites them, so the app opens them too
    for key, ref in sc.snap.logs.items():
        pod = names.get(key[0])
        if pod is None and key[0] not in gone:
            continue
        entries.append(LogEntry(key, ref, attempt.get(key), pod.namespace if pod is not None else sc.namespace))

    def trainer(e: LogEntry) -> bool:
        pod = names.get(e.key[0])
        return e.key[1] == (trainer_container_name(pod) if pod is not None else e.key[1])

    # the trainer container first, then by attempt, pod, previous before current
    entries.sort(
        key=lambda e: (
            e.attempt if e.attempt is not None else 1 << 30,
            not trainer(e),
            e.key[0],
            e.key[1],
            not e.key[2],
        )
    )
    return entries


def build_events(sc: Scope) -> list[EventRow]:
    from ckpt_doctor.scope import event_fields

    rows = []
    for ev in sc.events:
        f = event_fields(ev)
        rows.append(EventRow(f["lastTimestamp"], f["type"], f["reason"], f["object"], f["count"], f["message"]))
    rows.sort(key=lambda r: (r.last, r.reason, r.object), reverse=True)
    return rows


def scope_objects(sc: Scope) -> dict[str, dict[str, Any]]:
    objs: dict[str, dict[str, Any]] = {o.ref(): o.raw for o in sc.snap.objects}
    for o in [
        sc.trainjob,
        sc.runtime,
        sc.jobset,
        *sc.jobs,
        *sc.pods,
        *sc.pvcs.values(),
        *sc.pvs.values(),
        *sc.storageclasses.values(),
        *sc.nodes.values(),
        *sc.workloads,
    ]:
        if o is not None:
            objs[o.ref()] = o.raw
    return objs


# -- the whole view -----------------------------------------------------------------------------
def build_view(diag: Diagnosis, now: float | None = None) -> View:
    """Everything about one TrainJob; `build_preview` then `complete_view` give the same in two steps."""
    return complete_view(build_preview(diag, now), diag)


def complete_view(preview: View, diag: Diagnosis) -> View:
    """A view from `build_preview` with what the preview leaves out: the events and the Diagnosis."""
    return replace(preview, events=build_events(diag.facts.scope), diag=diag, complete=True)


def build_preview(diag: Diagnosis, now: float | None = None) -> View:
    """All but the events and the Diagnosis (`complete` False): what the first screens show. Its
    `objects` are there (the evidence's jumps are checked against them); `View.preview` drops them."""
    facts = diag.facts
    sc = facts.scope
    snap = sc.snap
    live = snap.source == "live"
    if now is None:
        now = snapshot_now(snap.meta, live)
    objects = scope_objects(sc)
    logs = build_logs(diag)
    log_keys = {e.key for e in logs}
    status = _rule_status(diag)
    views: dict[int, FindingView] = {}
    findings = []
    paths: dict[str, list[list[tuple[str, str]]]] = {}  # per rule: a rule with many subjects is searched once
    for f in diag.findings:
        if f.rule.id not in paths:
            paths[f.rule.id] = graph_paths(f.rule.id, f.rule.kind, status)
        v = finding_view(f, paths[f.rule.id], objects, log_keys)
        views[id(f)] = v
        findings.append(v)
    verdict = [
        VerdictView(views[id(e.symptom)], [views[id(c)] for c in e.causes], list(e.unexplored)) for e in diag.verdict
    ]
    text, health = verdict_line(diag)
    row = job_row(sc.trainjob.raw if sc.trainjob else {}, now, str(restarts_of(diag)), text)
    row.health = _worse(row.health, health) if health != "ok" else row.health
    return View(
        key=row.key,
        source=snap.source,
        simulated=simulated_meta(snap.meta),
        location=snap.location,
        collected_at=str(snap.meta.get("collectedAt") or ""),
        version=f"{facts.version.version} ({facts.version.why})",
        summary=diag.summary(),
        verdict=verdict,
        latent=[views[id(f)] for f in diag.latent],
        findings=findings,
        tree=build_tree(diag),
        attempts=build_attempts(diag, now),
        logs=logs,
        events=[],
        gaps=[(g.what, g.reason) for g in snap.not_collected],
        objects=objects,
        signatures=list(facts.sigs),
        row=row,
        diag=None,
        complete=False,
    )
