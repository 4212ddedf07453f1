"""The findings document of contracts.md §3, with the attempts timeline under `timeline` (diagnose only)."""

from __future__ import annotations

import json
from typing import Any

from ckpt_doctor.engine.walk import Diagnosis


def render(diag: Diagnosis) -> str:
    return json.dumps(document(diag), indent=2, ensure_ascii=False, default=str) + "\n"


def document(diag: Diagnosis) -> dict[str, Any]:
    """The document `render` prints, before it is printed (not yet plain JSON: `default=str` is still to apply)."""
    doc = diag.to_json()
    if diag.facts.mode == "diagnose":
        from ckpt_doctor.facts.timeline import timeline_of
        from ckpt_doctor.sources.redact import Redactor

        doc["timeline"] = Redactor().obj(timeline_of(diag.facts).to_json())  # log lines leave with it
    return doc
