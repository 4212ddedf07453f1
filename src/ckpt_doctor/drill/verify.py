"""How the drill reads what happened, through the engine's own readers.

- the trainer pod of the current attempt (rank 0: it is the one that prints how it began);
- its log through the log reader (`facts/logs.py`) and the attempt model (`facts/attempts.py`):
  the complete saves (a save that died half-way does not count), how the run began, its last step;
- after an interruption, a fresh live collection diagnosed by the engine (`pipeline.diagnose_snapshot`),
  with the logs of the pods the drill deleted added back (as a recorder would keep them), and
  `History.attempt_start` of the newest attempt: what it resumed from.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ckpt_doctor.facts.attempts import COMPLETION_INDEX, Run, trainer_container_name
from ckpt_doctor.facts.logs import LogEvent, Signature, scan_log
from ckpt_doctor.scope import REPLICATED_JOB_LABEL, RESTART_ATTEMPT
from ckpt_doctor.snapshot import LogRef, Obj

if TYPE_CHECKING:
    from ckpt_doctor.engine.walk import Diagnosis


def _int(v: Any, default: int = 0) -> int:
    try:
        return int(v)
    except (TypeError, ValueError):
        return default


def labels(pod: dict[str, Any]) -> dict[str, str]:
    return dict(((pod.get("metadata") or {}).get("labels")) or {})


def restart_attempt(pod: dict[str, Any]) -> int:
    meta = pod.get("metadata") or {}
    return _int(labels(pod).get(RESTART_ATTEMPT, (meta.get("annotations") or {}).get(RESTART_ATTEMPT)))


def completion_index(pod: dict[str, Any]) -> int:
    meta = pod.get("metadata") or {}
    return _int(labels(pod).get(COMPLETION_INDEX, (meta.get("annotations") or {}).get(COMPLETION_INDEX)))


def container(pod: dict[str, Any]) -> str:
    return trainer_container_name(Obj(pod))


def container_status(pod: dict[str, Any], name: str | None = None) -> dict[str, Any]:
    name = name or container(pod)
    for cs in (pod.get("status") or {}).get("containerStatuses") or []:
        if isinstance(cs, dict) and cs.get("name") == name:
            return cs
    return {}


def terminating(pod: dict[str, Any]) -> bool:
    return bool((pod.get("metadata") or {}).get("deletionTimestamp"))


def running(pod: dict[str, Any]) -> bool:
    state = container_status(pod).get("state") or {}
    return (pod.get("status") or {}).get("phase") == "Running" and bool(state.get("running")) and not terminating(pod)


def restarts(pod: dict[str, Any]) -> int:
    return _int(container_status(pod).get("restartCount"))


def node_of(pod: dict[str, Any]) -> str:
    return str((pod.get("spec") or {}).get("nodeName") or "")


def exit_code(pod: dict[str, Any]) -> int | None:
    """The exit code of the trainer container's current instance, once it has terminated."""
    term = (container_status(pod).get("state") or {}).get("terminated") or {}
    code = term.get("exitCode")
    return int(code) if isinstance(code, int) else None


def trainer_pods(pods: Sequence[dict[str, Any]], jobs: set[str]) -> list[dict[str, Any]]:
    labelled = [p for p in pods if labels(p).get(REPLICATED_JOB_LABEL)]
    if not labelled:
        return list(pods)
    return [p for p in labelled if labels(p).get(REPLICATED_JOB_LABEL) in jobs]


def rank0(pods: Sequence[dict[str, Any]], jobs: set[str]) -> dict[str, Any] | None:
    """The trainer pod that prints how the current attempt began: completion index 0 of the newest attempt."""
    live = [p for p in trainer_pods(pods, jobs) if not terminating(p)]
    if not live:
        return None
    top = max(restart_attempt(p) for p in live)
    cands = [p for p in live if restart_attempt(p) == top]
    zero = [p for p in cands if completion_index(p) == 0]
    if zero:
        return max(zero, key=lambda p: str((p.get("metadata") or {}).get("creationTimestamp") or ""))
    return min(cands, key=completion_index)


def uid(pod: dict[str, Any] | None) -> str:
    return str(((pod or {}).get("metadata") or {}).get("uid") or "")


def pod_name(pod: dict[str, Any] | None) -> str:
    return str(((pod or {}).get("metadata") or {}).get("name") or "")


# -- one log, read as the engine reads it -----------------------------------------------------------


@dataclass
class Reading:
    """One container log, scanned: the engine's Run for it."""

    pod: dict[str, Any]
    content: bytes
    run: Run
    ref: LogRef

    @property
    def saves(self) -> list[LogEvent]:
        return self.run.saves()

    @property
    def last_save(self) -> LogEvent | None:
        saves = [e for e in self.saves if e.step is not None]
        return max(saves, key=lambda e: (e.step or 0, e.offset)) if saves else None

    @property
    def last_step(self) -> int | None:
        return self.run.last_step()

    def began(self) -> tuple[str, int | None, LogEvent | None]:
        """('resumed', step, event) | ('fresh', 0, event) | ('unknown', None, None)."""
        return self.run.start()

    def evidence(self, ev: LogEvent) -> dict[str, Any]:
        return ev.evidence(self.ref, restart_attempt(self.pod))

    def tail(self, n: int = 8) -> list[str]:
        text = self.content.decode("utf-8", "replace").replace("\r", "\n")
        return [line for line in text.splitlines() if line.strip()][-n:]


def read(pod: dict[str, Any], content: bytes, sigs: list[Signature], namespace: str) -> Reading:
    name = container(pod)
    ref = LogRef(pod_name(pod), name, False, head=content, size=len(content), namespace=namespace)
    run = Run(Obj(pod), name, False, restart_attempt(pod), restarts(pod))
    run.log = scan_log(ref, sigs) if content else None
    return Reading(pod, content, run, ref)


# -- after an interruption: the engine's verdict ------------------------------------------------------


@dataclass
class Verdict:
    """How the newest attempt began, according to the engine's History, and the diagnosis behind it."""

    kind: str  # resumed | fresh | pending | unknown
    step: int | None
    event: dict[str, Any] | None  # the log line that says it (evidence)
    attempt: int | None
    diagnosis: Diagnosis
    attempts: int


def diagnose(
    target: str,
    namespace: str | None,
    context: str | None,
    kubeconfig: str | None,
    timeout: float,
    recorded: dict[str, tuple[dict[str, Any], bytes]],
    version_flag: str | None = None,
    signature_dirs: Sequence[Path] = (),
) -> Diagnosis:
    """A fresh live collection of the TrainJob, diagnosed, with the pods the drill deleted added back as a
    recorder (`collect --follow`) keeps them: their last state and their log."""
    from ckpt_doctor.pipeline import diagnose_snapshot
    from ckpt_doctor.sources.live import collect_live
    from ckpt_doctor.sources.live.inspect import Inspect
    from ckpt_doctor.sources.redact import Redactor

    # the drill already needs exec: the fresh diagnosis lists the checkpoint directory too (never a reader pod)
    snap = collect_live(target, namespace, context, kubeconfig, timeout, quiet=True, inspect=Inspect())
    ns = target.partition("/")[0]
    redactor = Redactor()
    present = {o.name for o in snap.of_kind("Pod")}
    for pname, (pod, content) in recorded.items():
        key = (pname, container(pod), False)
        if pname in present:
            continue
        snap.add(Obj(redactor.obj({"apiVersion": "v1", "kind": "Pod", **pod})))
        if content and key not in snap.logs:
            ref = LogRef(pname, key[1], False, head=content, size=len(content), namespace=ns)
            snap.logs[key] = redactor.log(ref)
    return diagnose_snapshot(snap, target, version_flag, list(signature_dirs))


def newest_attempt(diag: Diagnosis, pod: str | None = None) -> Verdict:
    """How the attempt that `pod` (the new trainer, rank 0) belongs to began; else the newest attempt's."""
    h = diag.facts.history
    if not h.attempts:
        return Verdict("unknown", None, None, None, diag, 0)
    a = next((x for x in reversed(h.attempts) if any(r.pod.name == pod and not r.previous for r in x.runs)),
             h.attempts[-1])
    kind, step, run, ev = h.attempt_start(a)
    evidence = None
    if ev is not None and run is not None and run.log is not None:
        evidence = ev.evidence(run.log.ref, a.index)
    return Verdict(kind, step, evidence, a.index, diag, len(h.attempts))


def diagnosis_summary(diag: Diagnosis, rules: Sequence[str]) -> dict[str, Any]:
    """What the engine says, for a step that failed: its verdict and the failing findings of the step's rules."""
    wanted = set(rules)
    failing = [f for f in diag.findings if f.status == "fail" and (f.rule.id in wanted or f.rule.kind == "symptom")]
    return {
        "verdict": [
            {"symptom": e.symptom.rule.id, "title": e.symptom.rule.title, "causes": [c.rule.id for c in e.causes]}
            for e in diag.verdict
        ],
        "findings": [
            {
                "rule": f.rule.id,
                "kind": f.rule.kind,
                "severity": f.rule.severity,
                "title": f.rule.title,
                **({"detail": f.result.detail} if f.result.detail else {}),
                "fix": f.result.fix or f.rule.fix,
            }
            for f in failing
        ],
    }


def summary_lines(summary: dict[str, Any]) -> list[str]:
    """The diagnosis in a few lines, for the screen."""
    out = []
    for v in summary.get("verdict") or []:
        causes = ", ".join(v["causes"]) or "no cause found among the evaluated rules"
        out.append(f"{v['symptom']} ({v['title']}) ← {causes}")
    shown = {c for v in summary.get("verdict") or [] for c in v["causes"]} | {
        v["symptom"] for v in summary.get("verdict") or []
    }
    for f in summary.get("findings") or []:
        if f["rule"] not in shown:
            out.append(f"{f['rule']}: {f.get('detail') or f['title']}")
    for f in summary.get("findings") or []:
        if f["kind"] == "cause":
            out.append(f"fix ({f['rule']}): {f['fix']}")
    return out
