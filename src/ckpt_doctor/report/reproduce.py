"""The kubectl commands that show a report's evidence again, one per piece of evidence it cites.

Each evidence type maps to the read-only command that shows it: a field or a condition to `kubectl get …
-o yaml` of its object (the path in a comment), an event to `kubectl get events` with a field selector, a
log line to `kubectl logs` piped into a fixed-string grep. Every argument is shell-quoted.
"""

from __future__ import annotations

import shlex
from typing import Any

# kubectl resource names that need no API discovery
RESOURCE = {
    "TrainJob": "trainjobs.trainer.kubeflow.org",
    "TrainingRuntime": "trainingruntimes.trainer.kubeflow.org",
    "ClusterTrainingRuntime": "clustertrainingruntimes.trainer.kubeflow.org",
    "JobSet": "jobsets.jobset.x-k8s.io",
    "Workload": "workloads.kueue.x-k8s.io",
    "Job": "jobs.batch",
    "Pod": "pod",
    "PersistentVolumeClaim": "pvc",
    "PersistentVolume": "pv",
    "StorageClass": "storageclass",
    "Node": "node",
    "ConfigMap": "configmap",
    "Event": "event",
}
GREP_MAX = 60  # characters of a cited log line to grep for
GREP = " | grep -n -F -- "


def _q(s: str) -> str:
    return shlex.quote(s)


def _split(ref: str) -> tuple[str, str | None, str]:
    parts = ref.split("/")
    if len(parts) >= 3:
        return parts[0], parts[1] or None, "/".join(parts[2:])
    if len(parts) == 2:
        return parts[0], None, parts[1]
    return ref, None, ""


def _get(ref: str, fmt: str = "yaml") -> str:
    kind, ns, name = _split(ref)
    res = RESOURCE.get(kind, kind.lower())
    scope = f" -n {_q(ns)}" if ns else ""
    return f"kubectl get {res} {_q(name)}{scope} -o {fmt}"


def grep_text(text: str) -> str:
    """What to grep for: the cited line's own characters (runs of spaces kept: a fixed-string grep of a
    collapsed line matches nothing), its first physical line, at most GREP_MAX characters of it."""
    t = text.split("\n", 1)[0].rstrip("\r")
    t = t.rsplit("\r", 1)[-1] if t.strip("\r") else t  # a progress bar redrawn with \r: its last drawing
    t = t[:GREP_MAX]
    return t if t.strip() else ""


def command_for(ev: dict[str, Any], namespace: str | None, gone: set[str]) -> tuple[str, str] | None:
    """(what it shows, the command) for one evidence item; None for evidence no command shows."""
    t = ev.get("type")
    if t in ("field", "condition") and ev.get("object"):
        ref = str(ev["object"])
        what = ev.get("path") if t == "field" else f"status.conditions[type={ev.get('conditionType')}]"
        return f"{ref}: {what}", _get(ref)
    if t == "event" and ev.get("object"):
        kind, ns, name = _split(str(ev["object"]))
        sel = f"involvedObject.kind={kind},involvedObject.name={name}"
        if ev.get("reason"):
            sel += f",reason={ev['reason']}"
        scope = f" -n {_q(ns or namespace or '')}" if (ns or namespace) else ""
        return f"event {ev.get('reason')} on {ev['object']}", f"kubectl get events{scope} --field-selector {_q(sel)}"
    if t == "log" and ev.get("pod"):
        pod, container = str(ev["pod"]), str(ev.get("container") or "node")
        prev = " --previous" if ev.get("previous") else ""
        scope = f" -n {_q(namespace)}" if namespace else ""
        pattern = grep_text(str(ev.get("text") or ""))
        grep = f"{GREP}{_q(pattern)}" if pattern else ""
        note = " (the pod is gone: read the log the bundle kept)" if pod in gone else ""
        return (
            f"log {pod}/{container}{' (previous)' if prev else ''}{note}",
            f"kubectl logs {_q(pod)} -c {_q(container)}{scope}{prev}{grep}",
        )
    return None


def commands(
    evidence: list[dict[str, Any]], namespace: str | None, gone: set[str], limit: int = 24
) -> list[tuple[str, str]]:
    """The commands for a list of evidence items, each once, in the order first cited."""
    out: list[tuple[str, str]] = []
    seen: set[str] = set()
    for ev in evidence:
        got = command_for(ev, namespace, gone)
        if got is None or got[1] in seen:
            continue
        seen.add(got[1])
        out.append(got)
        if len(out) >= limit:
            break
    return out
