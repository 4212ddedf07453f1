"""The optional Kubernetes Event the watcher writes on a TrainJob when its verdict changes (`--emit-events`).

Off by default: the watcher is read-only unless told. The first verdict of a TrainJob that existed when
the watcher started is a baseline (no Event: restarting the watcher does not repeat them); a TrainJob
created later gets one when its first verdict fails. The message names the worst finding, its cause
and the steps lost, and passes through the redactor.
"""

from __future__ import annotations

import socket
import uuid
from datetime import UTC, datetime
from typing import Any

from ckpt_doctor.engine.model import severity_rank
from ckpt_doctor.sources.live.client import Api
from ckpt_doctor.sources.live.kinds import EVENT
from ckpt_doctor.watch.routing import OWN_COMPONENT
from ckpt_doctor.watch.state import Figures

REASON = "CheckpointVerdictChanged"


def should_emit(before: Figures | None, after: Figures, initial: bool) -> bool:
    if before is None:
        return not initial and bool(after.failed)
    return before.verdict != after.verdict


def message(ns: str, name: str, f: Figures) -> str:
    if f.worst is None:
        text = f"ckpt-doctor: nothing fails now (resume status {f.resume_status})"
    else:
        text = f"ckpt-doctor: {f.worst}" + (f" because {f.cause}" if f.cause else "")
        text += f"; resume status {f.resume_status}"
    if f.lost_steps:
        text += f"; {f.lost_steps}{'' if f.lost_complete else '+'} steps lost to restarts"
    return text + f". See: ckpt-doctor diagnose {ns}/{name}"


WARN_AT = "warning"  # a finding failed at this severity or above makes the Event a Warning (as --fail-on)


def event_body(ns: str, name: str, uid: str, f: Figures) -> dict[str, Any]:
    from ckpt_doctor.sources.redact import redact_text

    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    worst = max((sev for _rule, sev in f.failed), key=severity_rank, default=None)
    warn = worst is not None and severity_rank(worst) >= severity_rank(WARN_AT)
    host = socket.gethostname()
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": f"{name}.{uuid.uuid4().hex[:16]}", "namespace": ns},
        "involvedObject": {
            "apiVersion": "trainer.kubeflow.org/v1alpha1",
            "kind": "TrainJob",
            "namespace": ns,
            "name": name,
            **({"uid": uid} if uid else {}),
        },
        "reason": REASON,
        "message": redact_text(message(ns, name, f))[:1024],
        "type": "Warning" if warn else "Normal",
        "count": 1,
        "firstTimestamp": now,
        "lastTimestamp": now,
        "source": {"component": OWN_COMPONENT, "host": host},
        "reportingComponent": OWN_COMPONENT,
        "reportingInstance": host,
        "action": "Diagnosed",
    }


def write_event(api: Api, ns: str, name: str, uid: str, f: Figures) -> None:
    api.create(EVENT, ns, event_body(ns, name, uid, f))
